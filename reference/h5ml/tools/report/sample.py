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
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Final

import numpy as np
import numpy.typing as npt

__all__ = [
    "BLOCK_VALUES",
    "PREVIEW_SAMPLES",
    "SAMPLE_BYTES",
    "SAMPLE_ROWS",
    "SAMPLE_RUNS",
    "SampleRows",
    "ValueStats",
    "sample_rows",
    "value_blocks",
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
#: Values widened to float64 at a time for the figures and the image previews (8 MiB of float64 temporaries).
BLOCK_VALUES: Final = 1 << 20


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
        Over the finite values; None when there are none. The minimum and maximum of integer (and boolean)
        values are Python ints, exact (int64 and uint64 values near 2**63 or 2**64 keep every digit). The
        mean and the (population) std never overflow
        (float values near the largest float64) and integer means are exact but for the final rounding to
        float64 (int64 and uint64 values near 2**63 or 2**64).
    values
        The finite values, float64 and flattened, for the value histogram (at most
        :data:`SAMPLE_BYTES` / 8 of them, evenly strided when there are more).
    """

    count: int
    nan_count: int
    minimum: float | int | None
    maximum: float | int | None
    mean: float | None
    std: float | None
    values: npt.NDArray[np.float64]
    posinf_count: int = 0
    neginf_count: int = 0

    def not_finite_text(self) -> str:
        """The values left out of the figures, in words (``"1 NaN, 2 +inf"``); ``""`` when there are none."""
        counts = ((self.nan_count, "NaN"), (self.posinf_count, "+inf"), (self.neginf_count, "-inf"))
        return ", ".join(f"{n} {word}" for n, word in counts if n)


def value_blocks(parts: Sequence[npt.NDArray[Any]], size: int = BLOCK_VALUES) -> Iterator[npt.NDArray[Any]]:
    """The values of ``parts``, each flattened, in consecutive blocks of at most ``size`` values.

    The figures of a large sample (one row of a 3000 x 5000 x 3 image is 45 million values) are taken block
    by block, so that what is widened to float64 at a time is one block (:data:`BLOCK_VALUES`), never the
    whole sample: the memory a report needs stays a small multiple of the values it read.

    Parameters
    ----------
    parts
        Arrays of any shape (a dense batch, or the rows of a ragged feature).
    size
        The most values in one block.

    Yields
    ------
    numpy.ndarray
        1-D views of the values (a part that is not contiguous is first copied in its own dtype).
    """
    for part in parts:
        flat = part.reshape(-1)
        for start in range(0, int(flat.size), size):
            yield flat[start : start + size]


def _split_bits(block: npt.NDArray[Any]) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Integers (int64 or uint64 at most) as their high and low 32 bits, each int64."""
    if block.dtype.kind == "u":
        high = (block.astype(np.uint64) >> np.uint64(32)).astype(np.int64)
        low = (block.astype(np.uint64) & np.uint64(0xFFFFFFFF)).astype(np.int64)
        return high, low
    wide = block.astype(np.int64)
    return wide >> 32, wide & 0xFFFFFFFF


def _int_figures(parts: Sequence[npt.NDArray[Any]], n: int) -> tuple[int, int, float, float]:
    """Min, max (Python ints), mean and population std of ``n`` > 0 integers, exact but for the last rounding.

    Each value is split into its high and low 32 bits, whose sums over a block cannot overflow int64; the exact
    sum is then a Python integer, and the mean its correctly rounded quotient. The std is over the deviations
    from the mean rounded to an integer, taken exactly in two parts before they become float64 (values near
    2**63 keep their spread, which float64 values would round away). Two passes over the blocks.
    """
    total, low, high = 0, None, None
    for block in value_blocks(parts):
        if not block.size:
            continue
        top, bottom = _split_bits(block)
        total += (int(top.sum(dtype=np.int64)) << 32) + int(bottom.sum(dtype=np.int64))
        least, most = int(block.min()), int(block.max())
        low = least if low is None else min(low, least)
        high = most if high is None else max(high, most)
    assert low is not None and high is not None  # n > 0 values
    nearest = (2 * total + n) // (2 * n)  # the mean rounded to an integer, within the values' range
    rest = (total - nearest * n) / n  # the mean of the deviations, |rest| <= 1/2
    squares = 0.0
    for block in value_blocks(parts):
        top, bottom = _split_bits(block)
        deviation = (top - (nearest >> 32)).astype(np.float64) * 2.0**32 + (bottom - (nearest & 0xFFFFFFFF))
        squares += float(np.sum(np.square(deviation - rest)))
    return low, high, total / n, math.sqrt(squares / n)


def _finite_blocks(parts: Sequence[npt.NDArray[Any]]) -> Iterator[npt.NDArray[np.float64]]:
    """The finite values of ``parts``, float64, block by block (:func:`value_blocks`)."""
    for block in value_blocks(parts):
        wide = block.astype(np.float64)
        yield wide[np.isfinite(wide)]


def _float_figures(parts: Sequence[npt.NDArray[Any]], low: float, high: float, n: int) -> tuple[float, float]:
    """Mean and population std of the ``n`` > 0 finite values of ``parts`` (between ``low`` and ``high``).

    They are computed on values scaled by a power of two that brings the largest magnitude into [0.5, 1): the
    sums cannot overflow (values near 1.7e308), and, a power of two being exact, the figures equal the unscaled
    ones wherever those do not overflow. Two passes over the blocks.
    """
    peak = max(abs(low), abs(high))
    exponent = math.frexp(peak)[1] if peak > 0 else 0
    total = 0.0
    for finite in _finite_blocks(parts):
        total += float(np.sum(np.ldexp(finite, -exponent)))
    mean = total / n
    squares = 0.0
    for finite in _finite_blocks(parts):
        squares += float(np.sum(np.square(np.ldexp(finite, -exponent) - mean)))
    return math.ldexp(mean, exponent), math.ldexp(math.sqrt(squares / n), exponent)


def _every_kth(blocks: Iterator[npt.NDArray[Any]], step: int) -> npt.NDArray[np.float64]:
    """Every ``step``-th value of the blocks taken as one sequence, the first included, as one float64 array."""
    kept, seen = [], 0
    for block in blocks:
        kept.append(np.asarray(block[(-seen) % step :: step], dtype=np.float64))
        seen += int(block.size)
    return np.concatenate(kept) if kept else np.zeros(0, dtype=np.float64)


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
        over the finite values only. The values are read block by block (:func:`value_blocks`): besides
        ``rows``, the memory used is a few blocks and the values kept for the histogram.
    """
    parts = [np.asarray(rows)] if isinstance(rows, np.ndarray) else [np.asarray(r) for r in rows]
    kind = np.result_type(*parts).kind if parts else "f"  # each block is widened in its turn, never the parts
    cap = SAMPLE_BYTES // 8
    if kind in "biu":  # booleans count as 0 and 1
        count = sum(int(part.size) for part in parts)
        step = -(-count // cap) if count > cap else 1
        shown = _every_kth(value_blocks(parts), step)
        if not count:
            return ValueStats(0, 0, None, None, None, None, shown)
        least, most, mean, std = _int_figures(parts, count)  # Python ints: every digit of int64 and uint64 kept
        return ValueStats(count, 0, least, most, mean, std, shown)
    count = nan_count = posinf = neginf = 0
    low, high = math.inf, -math.inf
    for block in value_blocks(parts):
        wide = block.astype(np.float64)
        nan_count += int(np.count_nonzero(np.isnan(wide)))
        posinf += int(np.count_nonzero(np.isposinf(wide)))
        neginf += int(np.count_nonzero(np.isneginf(wide)))
        finite = wide[np.isfinite(wide)]
        if finite.size:
            count += int(finite.size)
            low, high = min(low, float(finite.min())), max(high, float(finite.max()))
    step = -(-count // cap) if count > cap else 1
    shown = _every_kth(_finite_blocks(parts), step)
    if not count:
        return ValueStats(0, nan_count, None, None, None, None, shown, posinf, neginf)
    mean, std = _float_figures(parts, low, high, count)
    return ValueStats(count, nan_count, low, high, mean, std, shown, posinf, neginf)
