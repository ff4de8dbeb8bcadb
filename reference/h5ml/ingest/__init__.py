"""Conversion of the datasets people have into h5ml files, and back out (``h5ml convert``, ``export``, ...).

:mod:`h5ml.ingest.pipeline` holds what every source shares (parallel
decoding, ordered writing, progress, stop-or-skip on bad files); each source
has its own module, imported on first use of its function here (so that its
decoders, such as soundfile or Pillow, are needed only by its users)::

    from h5ml.ingest import convert_audio_folder
    report = convert_audio_folder("wavs/", "speech.h5", sample_rate=16000, workers=2)
    print(report.summary())
"""

from __future__ import annotations

import importlib
from typing import Any

from h5ml.ingest.pipeline import (
    SKIPPED_ATTR,
    DecodeError,
    IngestReport,
    OnError,
    Skipped,
    SourceItem,
    check_output,
    conversion_metadata,
    ingest,
    natural_key,
    ordered_map,
    progress_bar,
)

#: Public functions of the source modules, imported on first use.
_LAZY = {
    "convert_audio_folder": "h5ml.ingest.audio",
    "convert_image_folder": "h5ml.ingest.images",
    "convert_hdf5": "h5ml.ingest.legacy",
    "convert_table": "h5ml.ingest.tables",
    "convert_samples": "h5ml.ingest.samples",
    "convert_arrays": "h5ml.ingest.samples",
    "convert_huggingface": "h5ml.ingest.hf",
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
    "SKIPPED_ATTR",
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
