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

import math
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
        Finite values counted (every finite element of every row read): the figures are over these.
    nan_count, posinf_count, neginf_count
        NaN, +inf and -inf values among the elements read (floating-point features), counted apart.
    minimum, maximum, mean, std
        Over the finite values; None when there are none. The mean and the (population) std never overflow
        (float values near the largest float64) and integer means are exact but for the final rounding to
        float64 (int64 and uint64 values near 2**63 or 2**64).
    values
        The finite values, float64 and flattened, for the value histogram (at most
        :data:`SAMPLE_BYTES` / 8 of them, evenly strided when there are more).
    """

    count: int
    nan_count: int
    minimum: float | None
    maximum: float | None
    mean: float | None
    std: float | None
    values: npt.NDArray[np.float64]
    posinf_count: int = 0
    neginf_count: int = 0

    def not_finite_text(self) -> str:
        """The values left out of the figures, in words (``"1 NaN, 2 +inf"``); ``""`` when there are none."""
        counts = ((self.nan_count, "NaN"), (self.posinf_count, "+inf"), (self.neginf_count, "-inf"))
        return ", ".join(f"{n} {word}" for n, word in counts if n)


def _float_mean_std(finite: npt.NDArray[np.float64]) -> tuple[float, float]:
    """Mean and population std of finite float64 values, computed on values scaled by a power of two.

    The scale brings the largest magnitude into [0.5, 1): the sums cannot overflow (values near 1.7e308), and,
    a power of two being exact, the figures equal the unscaled ones wherever those do not overflow.
    """
    peak = float(np.abs(finite).max())
    exponent = math.frexp(peak)[1] if peak > 0 else 0
    scaled = np.ldexp(finite, -exponent)
    mean = float(scaled.mean())
    std = float(np.sqrt(np.mean(np.square(scaled - mean))))
    return math.ldexp(mean, exponent), math.ldexp(std, exponent)


def _int_mean_std(values: npt.NDArray[Any]) -> tuple[float, float]:
    """Mean and population std of integers (int64 or uint64 at most), exact but for the last rounding to float.

    Each value is split into its high and low 32 bits, whose sums cannot overflow int64; the exact sum is then a
    Python integer, and the mean its correctly rounded quotient. The std is over the deviations from the mean
    rounded to an integer, taken exactly in two parts before they become float64 (values near 2**63 keep their
    spread, which float64 values would round away).
    """
    n = int(values.size)
    if values.dtype.kind == "u":
        high = (values >> np.uint64(32)).astype(np.int64)
        low = (values & np.uint64(0xFFFFFFFF)).astype(np.int64)
    else:
        wide = values.astype(np.int64)
        high, low = wide >> 32, wide & 0xFFFFFFFF
    total = (int(high.sum(dtype=np.int64)) << 32) + int(low.sum(dtype=np.int64))
    nearest = (2 * total + n) // (2 * n)  # the mean rounded to an integer, within the values' range
    deviation = (high - (nearest >> 32)).astype(np.float64) * 2.0**32 + (low - (nearest & 0xFFFFFFFF))
    rest = (total - nearest * n) / n  # the mean of the deviations, |rest| <= 1/2
    std = float(np.sqrt(np.mean(np.square(deviation - rest))))
    return total / n, std


def value_stats(rows: Sequence[Any] | npt.NDArray[Any]) -> ValueStats:
    """Count, min, max, mean and std of the numeric values of some rows (a dense batch, or a list of ragged rows).

    Parameters
    ----------
    rows
        What the reader returned for the sampled rows: an array (R, ...) or a list of arrays.

    Returns
    -------
    ValueStats
        Booleans count as 0 and 1; NaN, +inf and -inf are counted apart and left out of the figures, which are
        over the finite values only.
    """
    parts = [np.asarray(rows).ravel()] if isinstance(rows, np.ndarray) else [np.asarray(r).ravel() for r in rows]
    raw = np.concatenate(parts) if parts else np.zeros(0, dtype=np.float64)
    if raw.dtype.kind == "b":
        raw = raw.astype(np.int64)
    flat = raw.astype(np.float64)
    cap = SAMPLE_BYTES // 8
    if raw.dtype.kind in "iu":
        nan_count = posinf = neginf = 0
        finite = flat
    else:
        nan_count = int(np.count_nonzero(np.isnan(flat)))
        posinf = int(np.count_nonzero(np.isposinf(flat)))
        neginf = int(np.count_nonzero(np.isneginf(flat)))
        finite = flat[np.isfinite(flat)]
    shown = finite if finite.size <= cap else finite[:: -(-finite.size // cap)]
    if not finite.size:
        return ValueStats(0, nan_count, None, None, None, None, shown, posinf, neginf)
    if raw.dtype.kind in "iu":
        mean, std = _int_mean_std(raw)
        low, high = float(int(raw.min())), float(int(raw.max()))
    else:
        mean, std = _float_mean_std(finite)
        low, high = float(finite.min()), float(finite.max())
    return ValueStats(
        count=int(finite.size),
        nan_count=nan_count,
        minimum=low,
        maximum=high,
        mean=mean,
        std=std,
        values=shown,
        posinf_count=posinf,
        neginf_count=neginf,
    )
