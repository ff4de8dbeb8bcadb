"""The reader: :func:`open`, :class:`Dataset`, :class:`Split` and the per-encoding features (§1, §3-§7, §10).

Reading never imports the writer or the validator. See ``docs/architecture.md``
for the modules of this package.
"""

from h5ml.reader.dataset import DEFAULT_CACHE_BYTES, Dataset, Split, open
from h5ml.reader.features import Feature

__all__ = ["DEFAULT_CACHE_BYTES", "Dataset", "Feature", "Split", "open"]
