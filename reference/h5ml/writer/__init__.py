"""The writer: :func:`write` and the streaming :class:`Writer`, atomic and conforming (§4-§8).

Writing never imports the reader or the validator. See ``docs/architecture.md``
for the modules of this package.
"""

from h5ml.model.values import Categorical, FeatureSpec
from h5ml.writer.writer import WRITE_BUFFER_BYTES, Writer, write

__all__ = ["WRITE_BUFFER_BYTES", "Categorical", "FeatureSpec", "Writer", "write"]
