"""Conversion of the datasets people have into h5ml files, and back out (``h5ml convert``, ``export``, ...).

Every converter takes its source's own options and the options all share
(:class:`ConvertOptions`: metadata, features, compression and level, shuffle
on write and its seed, workers and processes, on_error, progress,
overwrite), and returns an :class:`IngestReport`. :mod:`h5ml.ingest.pipeline`
holds what the file-based sources share (parallel decoding, ordered writing,
progress, stop-or-skip on bad files); each source has its own package,
imported on first use of its function here (so that its decoders, such as
soundfile or Pillow, are needed only by its users)::

    from h5ml.ingest import convert_audio_folder
    report = convert_audio_folder("wavs/", "speech.h5", sample_rate=16000, workers=2)
    print(report.summary())

=======================  ===================================================
package / module         holds
=======================  ===================================================
``npz``                  ``.npz``/``.npy`` files: :func:`convert_npz`, :func:`convert_npy`
``audio``                audio folders: :func:`convert_audio_folder`
``images``               image folders: :func:`convert_image_folder`
``hdf5``                 HDF5 and MATLAB v7.3 files through a plan: :func:`convert_hdf5`, :func:`plan_hdf5`
``tables``               CSV and Parquet tables: :func:`convert_table`
``hf``                   Hugging Face datasets: :func:`convert_huggingface`
``croissant``            MLCommons Croissant datasets (read by mlcroissant): :func:`convert_croissant`
``samples``              any iterable of samples: :func:`convert_samples`
``in_memory``            arrays in memory: :func:`convert_arrays`
``export``               back out: :func:`export_npz`, :func:`export_parquet`; :func:`export_croissant`
``edit``                 :func:`subset`, :func:`merge`
``dispatch``             which converter a source needs (``h5ml convert``)
``options``,             the shared options, checked once, and their
``docstrings``           numpydoc paragraphs, written once
``naming``, ``features`` split and feature names, class counts, roles
``report``, ``output``   what a conversion reports; its output's checks and metadata
``provenance``           where each split came from (``h5ml-ingest:source-splits``)
``pipeline``,            decode in parallel, write in order
``parallel``
``splitting``,           split ratios (their own seeded cut); shuffle on write
``shuffling``            of streamed sources
=======================  ===================================================
"""

from __future__ import annotations

import importlib
from typing import Any

from h5ml.ingest.naming import natural_key
from h5ml.ingest.options import ConvertOptions, OnError
from h5ml.ingest.output import check_output, conversion_metadata
from h5ml.ingest.parallel import ordered_map
from h5ml.ingest.pipeline import ingest
from h5ml.ingest.progress import progress_bar
from h5ml.ingest.report import ID_FEATURE, SKIPPED_ATTR, DecodeError, IngestReport, Skipped, SourceItem

#: Public functions of the source modules, imported on first use.
_LAZY = {
    "convert_audio_folder": "h5ml.ingest.audio",
    "convert_image_folder": "h5ml.ingest.images",
    "convert_hdf5": "h5ml.ingest.hdf5",
    "plan_hdf5": "h5ml.ingest.hdf5",
    "convert_table": "h5ml.ingest.tables",
    "convert_samples": "h5ml.ingest.samples",
    "convert_arrays": "h5ml.ingest.in_memory",
    "convert_npz": "h5ml.ingest.npz",
    "convert_npy": "h5ml.ingest.npz",
    "convert_huggingface": "h5ml.ingest.hf",
    "convert_croissant": "h5ml.ingest.croissant",
    "export_croissant": "h5ml.ingest.export",
    "export_npz": "h5ml.ingest.export",
    "export_parquet": "h5ml.ingest.export",
    "subset": "h5ml.ingest.edit",
    "merge": "h5ml.ingest.edit",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'h5ml.ingest' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


__all__ = [
    "ID_FEATURE",
    "SKIPPED_ATTR",
    "ConvertOptions",
    "DecodeError",
    "IngestReport",
    "OnError",
    "Skipped",
    "SourceItem",
    "check_output",
    "conversion_metadata",
    "ingest",
    "natural_key",
    "ordered_map",
    "progress_bar",
    *_LAZY,
]
