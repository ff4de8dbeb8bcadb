"""Read planning: which rows to read, in which contiguous spans, and how to reorder them.

Readers are asked for samples in any order, with duplicates and negative
indices (case C01). HDF5 (and h5py) reads contiguous slices efficiently but
refuses unsorted or repeated fancy indices and is slow on sorted ones. This
module turns a request into a :class:`ReadPlan`:

- ``rows``: the unique requested rows, sorted;
- ``inverse``: for each requested position, its row's position in ``rows``
  (so ``rows[inverse]`` is the request, normalized);
- ``spans``: sorted, disjoint ``(start, stop)`` row ranges that together cover
  every row, each meant to be read with one slice read.

Span rules (§7, reader side):

- uncompressed data: runs of consecutive rows become one span; two runs are
  also merged when the gap between them is at most ``max_gap`` rows (reading a
  few unneeded rows is cheaper than another library call; the caller chooses
  ``max_gap`` from the sample size, 0 disables it);
- ``compressed=True`` (filtered data read by whole chunks): every span is a
  whole number of chunks (the last chunk of the dataset may be short), spans
  of chunks that touch are merged, so each needed chunk is decoded exactly
  once and unneeded chunks never are. :class:`h5ml.reader.column.Column` asks for this only
  when a chunk does not fit the dataset's chunk cache; when it fits, HDF5
  decodes each chunk once into the cache and the uncompressed rule applies,
  with gaps shorter than a chunk;
- ``max_span_rows`` bounds the rows of one span (rounded down to whole chunks
  for compressed data, never below one chunk) so that a sparse request over
  compressed data does not hold the whole dataset in memory at once.

Unfiltered numeric data that the reader copies out of the file's memory map
needs no plan: :meth:`h5ml.reader.direct.DirectRows.take` gathers any rows,
in request order, in one copy.

The work is vectorised (one sort at most, no Python loop over rows), so a plan
for a small batch costs tens of microseconds. A single integer needs no plan:
readers check it with :func:`check_index` and read the row directly. Nor does
one ascending run of consecutive rows (a sequential batch): :func:`run_span`
gives, in a few microseconds, the one span :func:`plan_reads` would make.

No I/O happens here; :class:`h5ml.reader.column.Column` and the feature readers execute plans.
"""

from __future__ import annotations

import operator
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias, TypeVar, overload

import numpy as np
import numpy.typing as npt

__all__ = [
    "Indices",
    "ReadPlan",
    "batch_indices",
    "check_index",
    "merge_ranges",
    "normalize_indices",
    "plan_reads",
    "run_span",
    "sample_index",
]

#: What a reader accepts as a sample index: one integer, a slice, a sequence of
#: integers, a 1-D numpy integer array, or a 1-D boolean mask over all samples.
Indices: TypeAlias = (
    int | np.integer[Any] | slice | Sequence[int] | npt.NDArray[np.integer[Any]] | npt.NDArray[np.bool_]
)

_T = TypeVar("_T")
_IntArray: TypeAlias = npt.NDArray[np.int64]


def check_index(index: int | np.integer[Any], num_samples: int) -> int:
    """Turn one sample index into a row number, counting negative indices from the end.

    The fast path of single-sample reads (no plan, no array).

    Parameters
    ----------
    index
        An integer (a Python or numpy integer, not a bool), in ``[-N, N)``.
    num_samples
        The number of samples N.

    Returns
    -------
    int
        The row, in ``[0, N)``.

    Raises
    ------
    IndexError
        If ``index`` is outside ``[-N, N)``; the message names the index and N.
    TypeError
        If ``index`` is not an integer.
    """
    i = operator.index(index)
    row = i + num_samples if i < 0 else i
    if row < 0 or row >= num_samples:
        _raise_out_of_range(i, num_samples)
    return row


def normalize_indices(indices: Indices, num_samples: int) -> tuple[_IntArray, bool]:
    """Turn a request into non-negative row numbers, in the order asked.

    Parameters
    ----------
    indices
        An integer (numpy integers too; negative counts from the end), a slice
        (any step), a sequence of integers, a 1-D integer array (any order,
        duplicates allowed), or a 1-D boolean mask of length ``num_samples``.
    num_samples
        The number of samples N the indices refer to.

    Returns
    -------
    rows : numpy.ndarray of int64, shape (R,)
        The requested rows in request order, each in ``[0, N)``; never the
        caller's own array (a copy when ``indices`` is an int64 array).
    scalar : bool
        True when ``indices`` was a single integer (the caller returns one
        sample rather than a batch).

    Raises
    ------
    IndexError
        If an index is outside ``[-N, N)``; the message names the index and N.
    TypeError
        If ``indices`` is a bool, a float, a multi-dimensional array, or a
        boolean mask whose length is not N.
    """
    if isinstance(indices, (bool, np.bool_)):
        raise TypeError("a boolean is not a sample index; pass an integer, a slice, or an integer array")
    if isinstance(indices, (int, np.integer)):
        return np.array([check_index(indices, num_samples)], dtype=np.int64), True
    if isinstance(indices, slice):
        return np.arange(*indices.indices(num_samples), dtype=np.int64), False
    arr = np.asarray(indices)
    if arr.ndim == 0 and arr.dtype.kind in "iu":
        return np.array([check_index(int(arr), num_samples)], dtype=np.int64), True
    if arr.ndim != 1:
        raise TypeError(f"sample indices must be 1-D; got an array of shape {arr.shape}")
    if arr.size == 0:
        return np.empty(0, dtype=np.int64), False
    if arr.dtype.kind == "b":
        if arr.shape[0] != num_samples:
            raise TypeError(f"a boolean mask must have one entry per sample ({num_samples}); got {arr.shape[0]}")
        return np.flatnonzero(arr).astype(np.int64), False
    if arr.dtype.kind not in "iu":
        raise TypeError(f"sample indices must be integers; got dtype {arr.dtype}")
    if arr.dtype.kind == "u" and int(arr.max()) >= num_samples:
        _raise_out_of_range(int(arr.max()), num_samples)
    # Copy unless numpy just built the array from a list: the caller's memory is never changed.
    rows = arr.astype(np.int64, copy=arr is indices or not arr.flags.owndata)
    if int(rows.view(np.uint64).max()) < num_samples:  # one pass: all in [0, N) (as unsigned, a negative is huge)
        return rows, False
    low, high = int(rows.min()), int(rows.max())
    if low < -num_samples or high >= num_samples:
        bad = (rows < -num_samples) | (rows >= num_samples)
        _raise_out_of_range(int(rows[np.argmax(bad)]), num_samples)
    if low < 0:
        rows[rows < 0] += num_samples
    return rows, False


def sample_index(index: Any) -> int:
    """One sample index as a Python int, not yet checked against N (:func:`check_index` does that).

    Raises
    ------
    TypeError
        If ``index`` is a bool, a float or anything else that is not an
        integer (``int(2.7)`` would read sample 2, ``int(True)`` sample 1).
    """
    if isinstance(index, (bool, np.bool_)):
        raise TypeError("a boolean is not a sample index; pass an integer")
    try:
        return operator.index(index)
    except TypeError:
        raise TypeError(f"a sample index must be an integer; got {type(index).__name__} {index!r}") from None


def batch_indices(indices: Any) -> _IntArray:
    """The sample indices of one batch, in order with duplicates, as int64 ``(R,)``; not yet checked against N.

    For the adapters' batch reads, whose batch has one sample per index: an
    integer sequence, a 0-d or 1-D integer array, or an empty sequence.

    Raises
    ------
    TypeError
        If an index is not an integer (a float would be cut to another
        sample) or the indices are a boolean mask (it selects samples, it is
        not R indices: pass ``numpy.flatnonzero(mask)``) or a 2-D array.
    IndexError
        If an unsigned index is too large for int64 (it would wrap to a negative index).
    """
    arr = np.asarray(indices)
    if arr.ndim > 1:
        raise TypeError(f"batch indices must be 1-D; got an array of shape {arr.shape}")
    if arr.size == 0:
        return np.empty(0, dtype=np.int64)
    if arr.dtype.kind == "b":
        raise TypeError("a boolean mask is not a batch of sample indices; pass numpy.flatnonzero(mask)")
    if arr.dtype.kind not in "iu":
        raise TypeError(f"batch indices must be integers; got dtype {arr.dtype}")
    if arr.dtype.kind == "u" and int(arr.max()) > np.iinfo(np.int64).max:
        raise IndexError(f"sample index {int(arr.max())} is out of range")
    return arr.astype(np.int64).reshape(-1)


def _raise_out_of_range(index: int, num_samples: int) -> None:
    valid = f"valid indices are {-num_samples}..{num_samples - 1}" if num_samples else "there are no samples"
    raise IndexError(f"index {index} is out of range for {num_samples} samples ({valid})")


def merge_ranges(
    starts: npt.ArrayLike,
    stops: npt.ArrayLike,
    *,
    total: int,
    chunk_rows: int | None = None,
    compressed: bool = False,
    max_gap: int = 0,
    max_span_rows: int | None = None,
) -> list[tuple[int, int]]:
    """Merge half-open row ranges into the spans to read.

    Parameters
    ----------
    starts, stops
        Integer arrays of shape (K,): range k is ``[starts[k], stops[k])`` along
        the first axis of a dataset. Empty ranges are dropped; order is free.
    total
        The dataset's length along its first axis (spans never pass it).
    chunk_rows
        Rows per chunk along the first axis; required when ``compressed``.
    compressed
        True when the dataset has filters: spans are then widened to whole
        chunks and only touching or overlapping spans merge.
    max_gap
        Uncompressed data only: merge two spans separated by at most this many
        unneeded rows.
    max_span_rows
        Cut spans longer than this into pieces (whole chunks when compressed).
        A cut may split an input range across two spans; pass None when every
        range must lie within one span (ragged values).

    Returns
    -------
    list of (int, int)
        Sorted, disjoint ``(start, stop)`` spans covering every non-empty range.

    Raises
    ------
    ValueError
        If ``compressed`` is true without a positive ``chunk_rows``, or if a range
        lies outside ``[0, total]``.
    """
    a = np.asarray(starts, dtype=np.int64).reshape(-1)
    b = np.asarray(stops, dtype=np.int64).reshape(-1)
    if a.shape != b.shape:
        raise ValueError(f"starts and stops differ in length ({a.shape[0]} and {b.shape[0]})")
    keep = b > a
    a, b = a[keep], b[keep]
    if a.size == 0:
        return []
    if int(a.min()) < 0 or int(b.max()) > total:
        raise ValueError(f"a range lies outside [0, {total}]")
    if compressed:
        if chunk_rows is None or chunk_rows < 1:
            raise ValueError("compressed data is always chunked: pass its rows per chunk as chunk_rows")
        a = (a // chunk_rows) * chunk_rows
        b = np.minimum(-(-b // chunk_rows) * chunk_rows, total)
        max_gap = 0
    order = np.argsort(a, kind="stable")
    a, b = a[order], b[order]
    reach = np.maximum.accumulate(b)
    first = np.ones(a.shape[0], dtype=bool)
    first[1:] = a[1:] > reach[:-1] + max(0, max_gap)
    heads = np.flatnonzero(first)
    span_a = a[heads]
    span_b = np.maximum.reduceat(b, heads)
    if max_span_rows is not None:
        step = max(1, max_span_rows)
        if compressed and chunk_rows is not None:
            step = max(chunk_rows, step // chunk_rows * chunk_rows)
        pieces = -(-(span_b - span_a) // step)
        owner = np.repeat(np.arange(span_a.shape[0]), pieces)
        first_piece = np.repeat(np.cumsum(pieces) - pieces, pieces)
        k = np.arange(owner.shape[0]) - first_piece
        span_a, span_b = span_a[owner] + k * step, np.minimum(span_a[owner] + (k + 1) * step, span_b[owner])
    return list(zip(span_a.tolist(), span_b.tolist(), strict=True))


@dataclass(frozen=True, eq=False)
class ReadPlan:
    """How to serve one request with slice reads (see the module docstring).

    Attributes
    ----------
    rows : numpy.ndarray of int64, shape (U,)
        The unique requested rows, sorted ascending.
    inverse : numpy.ndarray of intp, shape (R,)
        ``rows[inverse]`` is the request in the order asked (R counts duplicates).
    spans : tuple of (int, int)
        Sorted, disjoint half-open ranges to read, one slice read each.
    bounds : numpy.ndarray of intp, shape (len(spans) + 1,)
        The rows of span k are ``rows[bounds[k]:bounds[k + 1]]``.
    scalar : bool
        The request was one integer: :meth:`gather` returns one sample.
    identity : bool
        The request was a batch already sorted and unique: ``inverse`` is
        ``arange(U)`` and :meth:`gather` returns its input unchanged.
    """

    rows: _IntArray
    inverse: npt.NDArray[np.intp]
    spans: tuple[tuple[int, int], ...]
    bounds: npt.NDArray[np.intp]
    scalar: bool
    identity: bool

    def iter_spans(self) -> Iterator[tuple[int, int, int, int]]:
        """Yield ``(start, stop, lo, hi)`` for each span.

        ``[start, stop)`` is the range to read and ``rows[lo:hi]`` the needed
        rows inside it; when ``hi - lo == stop - start`` every row read is needed.
        """
        bounds = self.bounds.tolist()
        for k, (start, stop) in enumerate(self.spans):
            yield start, stop, bounds[k], bounds[k + 1]

    @overload
    def gather(self, block: npt.NDArray[Any]) -> Any: ...
    @overload
    def gather(self, block: list[_T]) -> _T | list[_T]: ...
    def gather(self, block: npt.NDArray[Any] | list[_T]) -> Any:
        """Put the unique rows back in request order.

        Parameters
        ----------
        block
            One entry per unique row, in the order of :attr:`rows` (an array
            whose first axis has length U, or a list of length U).

        Returns
        -------
        numpy.ndarray, list, or one entry
            ``block[inverse]`` (an array of first axis R, or a list of R entries;
            ``block`` itself when :attr:`identity`), or the single entry when
            :attr:`scalar`.
        """
        if self.scalar:
            return block[int(self.inverse[0])]
        if self.identity:
            return block
        if isinstance(block, np.ndarray):
            return block[self.inverse]
        return [block[i] for i in self.inverse.tolist()]


def plan_reads(
    indices: Indices,
    num_samples: int,
    chunk_rows: int | None = None,
    compressed: bool = False,
    *,
    max_gap: int = 0,
    max_span_rows: int | None = None,
) -> ReadPlan:
    """Plan the slice reads that serve a request for samples (§7, case C01).

    Parameters
    ----------
    indices
        See :func:`normalize_indices`: an int, a slice, a sequence or a 1-D
        integer array (any order, duplicates, negative indices), or a mask.
    num_samples
        The number of samples N of the dataset.
    chunk_rows
        Rows per chunk along the first axis (None for contiguous storage).
    compressed
        True when the dataset has filters; spans are then whole chunks.
    max_gap
        Uncompressed data: merge runs separated by at most this many rows.
    max_span_rows
        Upper bound on the rows of one span (see :func:`merge_ranges`).

    Returns
    -------
    ReadPlan
        Unique sorted rows, the inverse permutation and the spans.

    Raises
    ------
    IndexError
        If an index is outside ``[-N, N)``.
    TypeError
        If ``indices`` is not an accepted index type.
    ValueError
        If ``compressed`` is true and ``chunk_rows`` is not given.
    """
    requested, scalar = normalize_indices(indices, num_samples)
    count = requested.shape[0]
    if count == 0:
        return ReadPlan(requested, np.empty(0, dtype=np.intp), (), np.zeros(1, dtype=np.intp), scalar, True)
    if compressed and (chunk_rows is None or chunk_rows < 1):
        raise ValueError("compressed data is always chunked: pass its rows per chunk as chunk_rows")
    identity = count == 1 or bool((requested[1:] > requested[:-1]).all())
    if identity:
        rows = requested
        inverse = np.arange(count, dtype=np.intp)
    else:
        rows, inverse = _unique_inverse(requested)
    if rows.shape[0] == 1:
        spans, bounds = _one_row_span(int(rows[0]), num_samples, chunk_rows if compressed else None)
    else:
        spans, bounds = _row_spans(rows, num_samples, chunk_rows if compressed else None, max_gap, max_span_rows)
    return ReadPlan(rows, inverse, spans, bounds, scalar, identity and not scalar)


def run_span(
    rows: _IntArray,
    num_samples: int,
    chunk_rows: int | None = None,
    compressed: bool = False,
    max_span_rows: int | None = None,
) -> tuple[int, int] | None:
    """The one span :func:`plan_reads` makes for ``rows`` when they are one ascending run of rows, else None.

    A sequential batch needs no plan: the rows are already sorted and unique,
    the request order is the read order, and its only span follows from its
    first and last row. Arguments as :func:`plan_reads` (``max_gap`` changes
    nothing for a run).

    Parameters
    ----------
    rows
        A 1-D int64 array of row numbers (not checked against ``num_samples`` otherwise).

    Returns
    -------
    (start, stop) or None
        The span, as :func:`plan_reads` would give it (whole chunks when
        ``compressed``); None unless ``rows`` is non-empty, each row the one
        before plus one, inside ``[0, num_samples)``, and the span is not one
        that ``max_span_rows`` would cut.
    """
    count = rows.shape[0]
    if count == 0:
        return None
    first, last = int(rows[0]), int(rows[-1])
    if first < 0 or last >= num_samples or last - first != count - 1:
        return None
    if count > 2 and not bool((rows[1:] - rows[:-1] == 1).all()):
        return None
    if not compressed or chunk_rows is None:
        if max_span_rows is not None and count > 1 and count > max(1, max_span_rows):
            return None
        return first, last + 1
    start, stop = first // chunk_rows * chunk_rows, min((last // chunk_rows + 1) * chunk_rows, num_samples)
    if (
        max_span_rows is not None
        and count > 1
        and stop - start > max(chunk_rows, max_span_rows // chunk_rows * chunk_rows)
    ):
        return None
    return start, stop


def _unique_inverse(requested: _IntArray) -> tuple[_IntArray, npt.NDArray[np.intp]]:
    """Sorted unique rows and the inverse map, with one sort (``numpy.unique`` costs more on small arrays)."""
    order = np.argsort(requested, kind="stable")
    ordered = requested[order]
    first = np.empty(ordered.shape[0], dtype=bool)
    first[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=first[1:])
    inverse = np.empty(ordered.shape[0], dtype=np.intp)
    inverse[order] = np.cumsum(first) - 1
    return ordered[first], inverse


def _one_row_span(
    row: int, num_samples: int, chunk_rows: int | None
) -> tuple[tuple[tuple[int, int], ...], npt.NDArray[np.intp]]:
    """The span of a single row: the row itself, or its whole chunk when compressed."""
    bounds = np.array([0, 1], dtype=np.intp)
    if chunk_rows is None:
        return ((row, row + 1),), bounds
    start = row // chunk_rows * chunk_rows
    return ((start, min(start + chunk_rows, num_samples)),), bounds


def _row_spans(
    rows: _IntArray, num_samples: int, chunk_rows: int | None, max_gap: int, max_span_rows: int | None
) -> tuple[tuple[tuple[int, int], ...], npt.NDArray[np.intp]]:
    """Spans and bounds of sorted unique ``rows`` (two or more); ``chunk_rows`` is None unless compressed.

    Same spans as :func:`merge_ranges` of ``(rows, rows + 1)``, found from the
    differences of neighbouring rows (or chunk numbers): the rows are already
    sorted and unique, so no sort and no search is needed unless a span is cut.
    """
    unique = rows.shape[0]
    if chunk_rows is None:
        key = rows
        limit = 1 + max(0, max_gap)
    else:
        key = rows // chunk_rows
        limit = 1
    heads = np.flatnonzero(key[1:] - key[:-1] > limit) + 1
    bounds = np.empty(heads.shape[0] + 2, dtype=np.intp)
    bounds[0] = 0
    bounds[1:-1] = heads
    bounds[-1] = unique
    first, last = key[bounds[:-1]], key[bounds[1:] - 1]
    if chunk_rows is None:
        span_a, span_b = first, last + 1
    else:
        span_a, span_b = first * chunk_rows, np.minimum((last + 1) * chunk_rows, num_samples)
    if max_span_rows is not None:
        step = max(1, max_span_rows)
        if chunk_rows is not None:
            step = max(chunk_rows, step // chunk_rows * chunk_rows)
        if bool(((span_b - span_a) > step).any()):
            pieces = -(-(span_b - span_a) // step)
            owner = np.repeat(np.arange(span_a.shape[0]), pieces)
            k = np.arange(owner.shape[0]) - np.repeat(np.cumsum(pieces) - pieces, pieces)
            span_a, span_b = span_a[owner] + k * step, np.minimum(span_a[owner] + (k + 1) * step, span_b[owner])
            lo = np.searchsorted(rows, span_a, side="left")
            used = np.searchsorted(rows, span_b, side="left") > lo
            span_a, span_b = span_a[used], span_b[used]
            bounds = np.append(lo[used], unique).astype(np.intp)
    return tuple(zip(span_a.tolist(), span_b.tolist(), strict=True)), bounds
