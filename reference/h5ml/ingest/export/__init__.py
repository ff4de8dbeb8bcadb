"""Export h5ml files to NumPy ``.npz`` archives and Parquet files (``h5ml export``), and their Croissant JSON-LD.

Both read the source in batches of samples (:class:`h5ml.ingest.edit.SampleBatches`)
and write as they read, so memory stays bounded by a batch (about 64 MiB;
in ``.npz``, string batches are sized by the longest string, and ragged
features with ``shapes`` keep their shapes, 8 bytes per axis and sample,
until they are written). Each output
file is written beside its target under a temporary name and renamed when
complete: a failed export leaves the output path as it was.

:func:`export_npz` (:mod:`~h5ml.ingest.export.npz`) writes one ``.npz``
archive that :func:`h5ml.ingest.convert_npz` reads back;
:func:`export_parquet` (:mod:`~h5ml.ingest.export.parquet`) one Parquet file
per split, one row per sample. :func:`export_croissant`
(:mod:`~h5ml.ingest.export.croissant`, ``h5ml croissant``) writes the MLCommons
Croissant metadata of a file or sharded index, which describes the data where
it is rather than copying it.
"""

from h5ml.ingest.export.common import OFFSETS_WINDOW
from h5ml.ingest.export.croissant import croissant_metadata, croissant_text, export_croissant
from h5ml.ingest.export.npz import export_npz, npz_array_names
from h5ml.ingest.export.parquet import export_parquet

__all__ = [
    "OFFSETS_WINDOW",
    "croissant_metadata",
    "croissant_text",
    "export_croissant",
    "export_npz",
    "export_parquet",
    "npz_array_names",
]
