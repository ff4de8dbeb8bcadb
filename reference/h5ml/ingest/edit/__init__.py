"""Edit h5ml files into new ones: :func:`subset` (``h5ml subset``) and :func:`merge` (``h5ml merge``).

Both read the sources through :func:`h5ml.open` and write a new conforming
file through :class:`h5ml.Writer`, in batches of about
:data:`BATCH_BYTES` of samples (:class:`h5ml.ingest.edit.batches.SampleBatches`), so memory stays
bounded whatever the files' sizes. The sources are never modified; the
output appears only when it is complete (the writer builds it in a temporary
file), so a failure leaves the output path as it was.

What the new file keeps
-----------------------
- Root metadata (§4.2): the source's attributes (``name``, ``description``,
  ``license``, ``version``, ``citation``, ``creator``, ``homepage``,
  ``keywords``, ``source`` and user attributes, §4.7), under what
  ``metadata`` gives. ``created``, ``writer`` and the fingerprint are the new
  file's own; ``required_filters`` is dropped (the writer declares the
  filters it stores: zstd, §3.5). :func:`merge` keeps the first file's, with ``source`` set to
  the JSON list of the input paths as given.
- The record of source splits (the user attribute
  ``h5ml-ingest:source-splits``, :mod:`h5ml.ingest.provenance`): the entries
  of the kept splits (:func:`subset`); per split, the union of the inputs'
  entries (:func:`merge`, which refuses to join inputs whose splits came from
  differently named source splits unless ``allow_mixed_splits``, see
  :mod:`~h5ml.ingest.edit.source_splits`).
- Split attributes (§5.3): ``description``; ``shuffle_seed`` only when the
  split's samples keep the stored order whole (a subset of all samples of
  the split, in order; a merged split that comes from one file), since the
  seed describes that order (§7.6).
- Features (§6): encoding, dtype (booleans stay ``logical_dtype="bool"``),
  sample shape, class names, and the attributes ``role``, ``description``,
  ``units``, ``sample_rate`` and ``media_type``. Fingerprints and
  statistics are computed again. Compression follows ``compression``:
  ``"keep"`` (default) gives each feature zstd when its source was zstd,
  gzip when it was compressed with another filter (§3.5), and none otherwise.

Sample ids
----------
The converters of :mod:`h5ml.ingest` store each sample's id (its source file)
in the string feature ``id`` (:data:`h5ml.ingest.report.ID_FEATURE`).
:func:`merge` refuses files whose splits of the same name hold the same id,
since the merged split would then hold two samples that claim to be one; it
names both files, the split, the feature and an example id. Ids are compared
by 64-bit keys (an integer id itself, a string's hash), kept in memory with
their file and row (20 bytes per id, under 100 while a file's ids are sorted
in), and a match is confirmed by reading both ids back. ``allow_duplicate_ids=True`` merges such files anyway.

Modules: :mod:`~h5ml.ingest.edit.batches` cuts samples into batches,
:mod:`~h5ml.ingest.edit.selection` reads sample selections,
:mod:`~h5ml.ingest.edit.copying` declares and copies features,
:mod:`~h5ml.ingest.edit.subsetting` is :func:`subset`,
:mod:`~h5ml.ingest.edit.merging` is :func:`merge`,
:mod:`~h5ml.ingest.edit.ids` checks the sample ids of merged files, and
:mod:`~h5ml.ingest.edit.source_splits` their source splits.
"""

from h5ml.ingest.edit.batches import BATCH_BYTES, SampleBatches
from h5ml.ingest.edit.copying import Compression, FeatureSignature, feature_signature
from h5ml.ingest.edit.merging import merge
from h5ml.ingest.edit.selection import SampleSelection, parse_samples
from h5ml.ingest.edit.subsetting import subset

__all__ = [
    "BATCH_BYTES",
    "Compression",
    "FeatureSignature",
    "SampleBatches",
    "SampleSelection",
    "feature_signature",
    "merge",
    "parse_samples",
    "subset",
]
