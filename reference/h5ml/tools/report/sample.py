"""The bounded sample of ``h5ml report``: which rows it reads, and the figures it takes from them.

The report reads metadata and a bounded part of the data, whatever the size
of the file (issue 17): the first :data:`PREVIEW_SAMPLES` samples of each
feature for the previews, and for statistics and value histograms at most
:data:`SAMPLE_ROWS` rows taken as :data:`SAMPLE_RUNS` runs of consecutive
rows spread evenly over the split (runs rather than single rows, so that a
compressed file decodes a few chunks, not one chunk per row), fewer when the
rows are large (:data:`SAMPLE_BYTES`). The rows are fixed by the split's size
alone: two reports of one file read the same rows. The page says which rows
and how many (:meth:`SampleRows.describe`).

It implements no SPEC clause; it reads through the reader (§6), and its
figures are computed over the values it reads, never over fill values of
storage that was never written (the summary's ``never_written``, §3.5.1).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

import numpy as np
import numpy.typing as npt

__all__ = [
    "PREVIEW_SAMPLES",
    "SAMPLE_BYTES",
    "SAMPLE_ROWS",
    "SAMPLE_RUNS",
    "SampleRows",
    "ValueStats",
    "sample_rows",
    "value_stats",
]

#: Samples of each feature shown as previews (the first ones of the split).
PREVIEW_SAMPLES: Final = 8
#: Rows read at most for the statistics and value histograms of one feature.
SAMPLE_ROWS: Final = 512
#: Runs of consecutive rows those rows are taken in, spread evenly over the split.
SAMPLE_RUNS: Final = 16
#: Bytes of values read at most for the statistics of one feature (fewer rows when rows are large).
SAMPLE_BYTES: Final = 32 << 20


@dataclass(frozen=True)
class SampleRows:
    """The rows of a split that the statistics are computed over.

    Attributes
    ----------
    rows
        The row indices, increasing, int64.
    runs
        How many runs of consecutive rows they form.
    total
        The split's number of samples.
    """

    rows: npt.NDArray[np.int64]
    runs: int
    total: int

    @property
    def everything(self) -> bool:
        """Whether the sample is every row of the split."""
        return int(self.rows.size) == self.total

    def describe(self) -> str:
        """The sample in words, for the page: ``"all 40 samples"`` or ``"512 of 1000000 samples (16 runs ...)"``."""
        if self.everything:
            return f"all {self.total} samples"
        return (
            f"{self.rows.size} of {self.total} samples, in {self.runs} runs of consecutive rows spread evenly "
            "over the split"
        )


def sample_rows(total: int, row_bytes: float, max_rows: int = SAMPLE_ROWS, runs: int = SAMPLE_RUNS) -> SampleRows:
    """The rows to read for statistics: at most ``max_rows`` in ``runs`` evenly spread runs, within :data:`SAMPLE_BYTES`.

    Parameters
    ----------
    total
        The split's number of samples (>= 0).
    row_bytes
        Bytes of values in one row (the mean for a ragged feature); rows are
        dropped so that the sample reads at most :data:`SAMPLE_BYTES` (one row at least).
    max_rows, runs
        The most rows, and the runs they are taken in.

    Returns
    -------
    SampleRows
        Every row when the split has no more than the rows allowed.
    """
    allowed = max_rows
    if row_bytes > 0:
        allowed = max(1, min(allowed, int(SAMPLE_BYTES // row_bytes)))
    if total <= allowed:
        return SampleRows(np.arange(total, dtype=np.int64), 1 if total else 0, total)
    count = min(runs, allowed)
    length = allowed // count
    starts = np.linspace(0, total - length, count).round().astype(np.int64)
    rows = np.unique((starts[:, None] + np.arange(length, dtype=np.int64)[None, :]).ravel())
    return SampleRows(rows, count, total)


@dataclass(frozen=True)
class ValueStats:
    """Figures of the numeric values of a sample of rows.

    Attributes
    ----------
    count
        Values counted (every element of every row read, NaN excluded).
    nan_count
        NaN values among the elements read (floating-point features).
    minimum, maximum, mean, std
        Over the finite values counted; None when there are none.
    values
        The values, float64 and flattened, for the value histogram (at most
        :data:`SAMPLE_BYTES` / 8 of them, evenly strided when there are more).
    """

    count: int
    nan_count: int
    minimum: float | None
    maximum: float | None
    mean: float | None
    std: float | None
    values: npt.NDArray[np.float64]


def value_stats(rows: Sequence[Any] | npt.NDArray[Any]) -> ValueStats:
    """Count, min, max, mean and std of the numeric values of some rows (a dense batch, or a list of ragged rows).

    Parameters
    ----------
    rows
        What the reader returned for the sampled rows: an array (R, ...) or a list of arrays.

    Returns
    -------
    ValueStats
        Booleans count as 0 and 1; NaN is counted apart and left out of the figures.
    """
    parts = [np.asarray(rows).ravel()] if isinstance(rows, np.ndarray) else [np.asarray(r).ravel() for r in rows]
    flat = np.concatenate(parts).astype(np.float64) if parts else np.zeros(0, dtype=np.float64)
    nan = np.isnan(flat)
    nan_count = int(np.count_nonzero(nan))
    kept = flat[~nan]
    finite = kept[np.isfinite(kept)]
    cap = SAMPLE_BYTES // 8
    shown = finite if finite.size <= cap else finite[:: -(-finite.size // cap)]
    if not finite.size:
        return ValueStats(int(kept.size), nan_count, None, None, None, None, shown)
    return ValueStats(
        count=int(kept.size),
        nan_count=nan_count,
        minimum=float(finite.min()),
        maximum=float(finite.max()),
        mean=float(finite.mean()),
        std=float(finite.std()),
        values=shown,
    )
