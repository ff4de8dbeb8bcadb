"""Read plans (h5ml.reader.plan): unique sorted rows, the inverse permutation and the spans to read (case C01, §7)."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from h5ml.reader.plan import ReadPlan, check_index, merge_ranges, normalize_indices, plan_reads, run_span


def _execute(plan: ReadPlan, source: np.ndarray) -> Any:
    """Serve the plan from an in-memory array the way a reader does: one slice per span, then gather."""
    block = np.empty((plan.rows.shape[0], *source.shape[1:]), dtype=source.dtype)
    for start, stop, lo, hi in plan.iter_spans():
        data = source[start:stop]
        block[lo:hi] = data[plan.rows[lo:hi] - start]
    return plan.gather(block)


@st.composite
def _requests(draw: st.DrawFn) -> tuple[int, list[int], int, bool, int, int | None]:
    n = draw(st.integers(1, 300))
    indices = draw(st.lists(st.integers(-n, n - 1), max_size=60))
    chunk_rows = draw(st.integers(1, 40))
    compressed = draw(st.booleans())
    max_gap = draw(st.integers(0, 6))
    cap = draw(st.none() | st.integers(1, 64))
    return n, indices, chunk_rows, compressed, max_gap, cap


@given(_requests())
def test_plan_covers_every_row_with_sorted_disjoint_spans(
    req: tuple[int, list[int], int, bool, int, int | None],
) -> None:
    """C01/§7: spans are sorted, disjoint, in range, and every requested row lies in exactly one of them."""
    n, indices, chunk_rows, compressed, max_gap, cap = req
    plan = plan_reads(indices, n, chunk_rows, compressed, max_gap=max_gap, max_span_rows=cap)
    normalized = np.array([i % n for i in indices], dtype=np.int64)
    assert np.array_equal(plan.rows, np.unique(normalized))
    assert np.array_equal(plan.rows[plan.inverse], normalized)
    starts = [a for a, _ in plan.spans]
    assert starts == sorted(starts)
    for (_, b), (a2, _) in zip(plan.spans, plan.spans[1:], strict=False):
        assert b <= a2
    assert all(0 <= a < b <= n for a, b in plan.spans)
    for start, stop, lo, hi in plan.iter_spans():
        inside = plan.rows[lo:hi]
        assert inside.size > 0 and np.all((inside >= start) & (inside < stop))
    assert int(plan.bounds[-1]) == plan.rows.shape[0]
    for row in plan.rows.tolist():
        assert sum(a <= row < b for a, b in plan.spans) == 1


@given(_requests())
def test_gather_equals_numpy_fancy_indexing(req: tuple[int, list[int], int, bool, int, int | None]) -> None:
    """C01: rows come back in the order asked, duplicates repeated, equal to numpy indexing of the source."""
    n, indices, chunk_rows, compressed, max_gap, cap = req
    source = np.arange(n * 3, dtype=np.int64).reshape(n, 3) * 7 - 5
    plan = plan_reads(indices, n, chunk_rows, compressed, max_gap=max_gap, max_span_rows=cap)
    got = _execute(plan, source)
    assert got.shape == (len(indices), 3)
    assert np.array_equal(got, source[np.asarray(indices, dtype=np.int64)])


@given(_requests())
def test_compressed_spans_are_whole_chunks_each_read_once(
    req: tuple[int, list[int], int, bool, int, int | None],
) -> None:
    """§7 reader side: compressed spans are whole chunks; each needed chunk is in one span, no other chunk is read."""
    n, indices, chunk_rows, _, _, cap = req
    plan = plan_reads(indices, n, chunk_rows, True, max_span_rows=cap)
    read_chunks: list[int] = []
    for a, b in plan.spans:
        assert a % chunk_rows == 0
        assert b % chunk_rows == 0 or b == n
        read_chunks.extend(range(a // chunk_rows, -(-b // chunk_rows)))
    needed = sorted({i % n // chunk_rows for i in indices})
    assert read_chunks == needed  # sorted, each needed chunk exactly once, nothing else
    if cap is not None:
        step = max(chunk_rows, cap // chunk_rows * chunk_rows)
        assert all(b - a <= step for a, b in plan.spans)


@given(_requests())
def test_uncompressed_spans_read_only_small_gaps(req: tuple[int, list[int], int, bool, int, int | None]) -> None:
    """Uncompressed spans merge runs of rows; rows read but not needed come in gaps of at most max_gap."""
    n, indices, chunk_rows, _, max_gap, cap = req
    plan = plan_reads(indices, n, chunk_rows, False, max_gap=max_gap, max_span_rows=cap)
    for start, stop, lo, hi in plan.iter_spans():
        inside = plan.rows[lo:hi].tolist()
        assert inside[0] == start and inside[-1] == stop - 1
        gaps = [b - a - 1 for a, b in itertools.pairwise(inside)]
        assert all(g <= max_gap for g in gaps)
        if cap is not None:
            assert stop - start <= cap
    if max_gap == 0 and cap is None:
        # runs of consecutive rows, and no two spans that touch
        assert all(b < a2 for (_, b), (a2, _) in zip(plan.spans, plan.spans[1:], strict=False))


@pytest.mark.parametrize(
    ("indices", "spans_uncompressed", "spans_compressed"),
    [
        ([5, 2, 9], [(2, 3), (5, 6), (9, 10)], [(0, 10)]),
        ([2, 5, 5, 9], [(2, 3), (5, 6), (9, 10)], [(0, 10)]),
        (np.array([3, 1]), [(1, 2), (3, 4)], [(0, 10)]),
        ([95, 3, 14, 15, 16, -1], [(3, 4), (14, 17), (95, 96), (99, 100)], [(0, 20), (90, 100)]),
    ],
    ids=["C01-unsorted", "C01-duplicates", "C01-numpy", "negative-and-runs"],
)
def test_c01_requests(
    indices: Any, spans_uncompressed: list[tuple[int, int]], spans_compressed: list[tuple[int, int]]
) -> None:
    """C01: the requests of the case, on (100, 4) with chunks of 10 rows, planned as runs or whole chunks."""
    source = np.arange(400, dtype=np.float32).reshape(100, 4)
    plain = plan_reads(indices, 100, chunk_rows=10)
    packed = plan_reads(indices, 100, chunk_rows=10, compressed=True)
    assert list(plain.spans) == spans_uncompressed
    assert list(packed.spans) == spans_compressed
    for plan in (plain, packed):
        assert np.array_equal(_execute(plan, source), source[np.asarray(indices)])


def test_duplicates_share_one_read_and_repeat_in_the_result() -> None:
    """C01: a duplicated row is read once and returned at every position asked."""
    plan = plan_reads([2, 5, 5, 9, 2], 100)
    assert plan.rows.tolist() == [2, 5, 9]
    assert plan.inverse.tolist() == [0, 1, 1, 2, 0]
    assert not plan.identity


def test_scalar_index_returns_one_sample() -> None:
    """An int index plans one row and gathers one sample, not a batch; negative counts from the end."""
    source = np.arange(30).reshape(10, 3)
    plan = plan_reads(-3, 10, chunk_rows=4, compressed=True)
    assert plan.scalar and plan.rows.tolist() == [7] and list(plan.spans) == [(4, 8)]
    assert np.array_equal(_execute(plan, source), source[7])
    plan = plan_reads(np.int16(2), 10)
    assert plan.scalar and np.array_equal(_execute(plan, source), source[2])


@given(st.integers(0, 120).flatmap(lambda n: st.tuples(st.just(n), st.slices(n))))
def test_slices_match_numpy(arg: tuple[int, slice]) -> None:
    """Slices with any start, stop and step (negative too) give numpy's rows in numpy's order."""
    n, sl = arg
    source = np.arange(n * 2).reshape(n, 2)
    plan = plan_reads(sl, n, chunk_rows=8, compressed=True)
    assert np.array_equal(_execute(plan, source), source[sl])
    if sl.step is None or sl.step > 0:
        assert plan.identity


def test_boolean_mask_selects_true_rows() -> None:
    """A boolean mask of length N selects its True rows, like numpy."""
    mask = np.zeros(12, dtype=bool)
    mask[[1, 4, 5, 11]] = True
    rows, scalar = normalize_indices(mask, 12)
    assert rows.tolist() == [1, 4, 5, 11] and not scalar


def test_empty_request_reads_nothing() -> None:
    """An empty request plans no span and gathers an empty batch."""
    empties: list[Any] = [[], np.array([], dtype=np.int64), slice(5, 5)]
    for empty in empties:
        plan = plan_reads(empty, 50, chunk_rows=10, compressed=True)
        assert plan.spans == () and plan.rows.shape == (0,)
        assert _execute(plan, np.zeros((50, 2))).shape == (0, 2)


@pytest.mark.parametrize(
    ("indices", "bad"), [([1, 10], "10"), ([-11], "-11"), (10, "10"), (np.array([3, 99], dtype=np.uint8), "99")]
)
def test_out_of_range_names_the_index_and_the_length(indices: Any, bad: str) -> None:
    """IndexError names the offending index and the number of samples."""
    with pytest.raises(IndexError, match=rf"index {bad} is out of range for 10 samples"):
        plan_reads(indices, 10)


@pytest.mark.parametrize(
    "indices", [True, np.array([1.0, 2.0]), np.zeros((2, 2), dtype=int), np.ones(3, dtype=bool), "3"]
)
def test_invalid_index_types_are_refused(indices: Any) -> None:
    """Booleans, floats, 2-D arrays, masks of the wrong length and strings are not sample indices."""
    with pytest.raises(TypeError):
        plan_reads(indices, 10)


def test_compressed_without_chunk_rows_is_refused() -> None:
    """Compressed data is chunked: a plan for it needs the chunk rows."""
    with pytest.raises(ValueError, match="chunk_rows"):
        plan_reads([1], 10, compressed=True)


@given(
    st.lists(st.integers(0, 30), min_size=1, max_size=40),
    st.integers(1, 16),
    st.booleans(),
    st.integers(0, 4),
)
def test_merge_ranges_keeps_each_range_inside_one_span(
    lengths: list[int], chunk: int, compressed: bool, gap: int
) -> None:
    """Ragged values (§6.3): without a span cap, every sample's value range lies inside exactly one span."""
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    total = int(offsets[-1])
    rng = np.random.default_rng(len(lengths) * 31 + chunk)
    rows = np.unique(rng.integers(0, len(lengths), size=max(1, len(lengths) // 2)))
    starts, stops = offsets[rows], offsets[rows + 1]
    spans = merge_ranges(starts, stops, total=total, chunk_rows=chunk, compressed=compressed, max_gap=gap)
    for a, b in zip(starts.tolist(), stops.tolist(), strict=True):
        if b > a:
            assert sum(s <= a and b <= e for s, e in spans) == 1
    for (_, e), (s2, _) in itertools.pairwise(spans):
        assert e < s2  # touching spans are merged
    assert all(0 <= s < e <= total for s, e in spans)


def test_merge_ranges_drops_empty_ranges_and_checks_bounds() -> None:
    """Empty ranges need no read; ranges outside the dataset are refused."""
    assert merge_ranges([3, 5], [3, 5], total=10) == []
    assert merge_ranges([0, 4], [2, 6], total=10, max_gap=2) == [(0, 6)]
    assert merge_ranges([0, 4], [2, 6], total=10, max_gap=1) == [(0, 2), (4, 6)]
    with pytest.raises(ValueError, match="outside"):
        merge_ranges([8], [12], total=10)


def _reference_plan(
    indices: list[int], n: int, chunk_rows: int, compressed: bool, max_gap: int, cap: int | None
) -> tuple[list[int], list[tuple[int, int]], list[int]]:
    """Rows, spans and bounds by definition: merge_ranges over each unique row, then search the rows in each span."""
    rows = np.unique(np.asarray([i % n for i in indices], dtype=np.int64))
    spans = merge_ranges(
        rows, rows + 1, total=n, chunk_rows=chunk_rows, compressed=compressed, max_gap=max_gap, max_span_rows=cap
    )
    kept = [(a, b) for a, b in spans if np.any((rows >= a) & (rows < b))]
    bounds = [int(np.searchsorted(rows, a)) for a, _ in kept] + [rows.shape[0]]
    return rows.tolist(), kept, bounds


@given(_requests())
def test_plan_equals_merge_ranges_of_each_row(req: tuple[int, list[int], int, bool, int, int | None]) -> None:
    """§7/C01: the planner's vectorised span search gives exactly merge_ranges' spans of the unique rows."""
    n, indices, chunk_rows, compressed, max_gap, cap = req
    plan = plan_reads(indices, n, chunk_rows, compressed, max_gap=max_gap, max_span_rows=cap)
    rows, spans, bounds = _reference_plan(indices, n, chunk_rows, compressed, max_gap, cap)
    assert plan.rows.tolist() == rows
    assert list(plan.spans) == spans
    assert plan.bounds.tolist() == (bounds if rows else [0])
    assert plan.identity == all(a < b for a, b in itertools.pairwise(np.mod(indices, n)))


def test_normalize_never_changes_the_callers_array() -> None:
    """Negative indices are turned into rows in a copy: the caller's int64 array and list stay as they were."""
    arr = np.array([-1, 2, -10], dtype=np.int64)
    rows, scalar = normalize_indices(arr, 10)
    assert rows.tolist() == [9, 2, 0] and not scalar
    assert arr.tolist() == [-1, 2, -10]
    view = np.array([5, -3, -3, 7], dtype=np.int64)[1:3]
    assert normalize_indices(view, 10)[0].tolist() == [7, 7] and view.tolist() == [-3, -3]
    listed = [-2, 0]
    assert normalize_indices(listed, 4)[0].tolist() == [2, 0] and listed == [-2, 0]


@pytest.mark.parametrize(("index", "row"), [(0, 0), (9, 9), (-1, 9), (-10, 0), (np.int64(-3), 7), (np.uint8(4), 4)])
def test_check_index_counts_negative_indices_from_the_end(index: Any, row: int) -> None:
    """The single-sample path: one integer in [-N, N) becomes a row in [0, N), as a Python int."""
    got = check_index(index, 10)
    assert type(got) is int and got == row


@pytest.mark.parametrize("index", [10, -11, 2**63 - 1])
def test_check_index_refuses_out_of_range(index: int) -> None:
    """An index outside [-N, N) raises IndexError naming it and N, like a batch would."""
    with pytest.raises(IndexError, match=rf"index {index} is out of range for 10 samples"):
        check_index(index, 10)
    with pytest.raises(IndexError, match="there are no samples"):
        check_index(0, 0)


def test_cut_spans_without_needed_rows_are_dropped() -> None:
    """Uncompressed: a gap-merged span cut by max_span_rows keeps only the pieces that hold a requested row."""
    plan = plan_reads([9, 0], 20, max_gap=10, max_span_rows=3)
    assert list(plan.spans) == [(0, 3), (9, 10)]
    assert plan.bounds.tolist() == [0, 1, 2] and plan.inverse.tolist() == [1, 0]
    assert list(plan.iter_spans()) == [(0, 3, 0, 1), (9, 10, 1, 2)]


def test_negative_max_gap_means_no_gap() -> None:
    """A negative max_gap is taken as 0: runs of consecutive rows still form one span."""
    assert list(plan_reads([1, 2, 3, 7], 10, max_gap=-5).spans) == [(1, 4), (7, 8)]


@given(
    n=st.integers(1, 300),
    start=st.integers(-5, 300),
    count=st.integers(0, 80),
    chunk_rows=st.integers(1, 40),
    compressed=st.booleans(),
    cap=st.none() | st.integers(1, 64),
    broken=st.booleans(),
)
def test_run_span_is_the_one_span_of_the_plan(
    n: int, start: int, count: int, chunk_rows: int, compressed: bool, cap: int | None, broken: bool
) -> None:
    """§7: for one ascending run of rows, run_span gives exactly the single span plan_reads makes; otherwise None."""
    rows = np.arange(start, start + count, dtype=np.int64)
    if broken and count >= 3:
        rows[count // 2], rows[count // 2 + 1] = rows[count // 2 + 1], rows[count // 2]  # not a run any more
    span = run_span(rows, n, chunk_rows, compressed, cap)
    if count == 0 or start < 0 or start + count > n:
        assert span is None
        return
    plan = plan_reads(rows, n, chunk_rows, compressed, max_gap=3, max_span_rows=cap)
    if broken and count >= 3:
        assert span is None
    elif span is None:  # only a run that max_span_rows cuts into several spans
        assert len(plan.spans) > 1
    else:
        assert plan.spans == (span,) and plan.identity
