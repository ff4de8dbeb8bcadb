"""The writer: :func:`write` and the streaming :class:`Writer`, atomic and conforming (§4-§8).

Writing never imports the reader or the validator. The docstring of
:mod:`h5ml.writer.writer` (the public API this package re-exports) lists the
modules of this package; ``docs/architecture.md`` places them in the layers.
"""

from h5ml.model.values import Categorical, FeatureSpec
from h5ml.writer.writer import WRITE_BUFFER_BYTES, ShardedWriter, Writer, write

__all__ = ["WRITE_BUFFER_BYTES", "Categorical", "FeatureSpec", "ShardedWriter", "Writer", "write"]
