"""Conversion of the datasets people have into h5ml files, and back out (``h5ml convert``, ``export``, ...).

:mod:`h5ml.ingest.pipeline` holds what every source shares (parallel
decoding, ordered writing, progress, stop-or-skip on bad files); each source
has its own module.
"""

from __future__ import annotations

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
]
