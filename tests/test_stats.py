"""Streaming statistics (h5ml.model.stats, §6.7): directly, and as the writer records them on features.

The direct tests compare :class:`StreamingStats` with exact statistics (or
numpy's, for large arrays) over the same values; the file tests read the
``stats_*`` attributes back with plain h5py.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction
from pathlib import Path

import h5py
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from h5ml.model.stats import INT_SUM_BLOCK, STATS_BLOCK, StreamingStats
from h5ml.writer.writer import Writer, write

SEED = 1234


def stats_of(*batches: np.ndarray) -> dict[str, int | float]:
    """The attributes StreamingStats gives after the batches, in order."""
    stats = StreamingStats()
    for batch in batches:
        stats.update(batch)
    return stats.attrs()


def reference(values: np.ndarray) -> tuple[int, float, float, float, float]:
    """count, min, max, mean and population std of the non-NaN values: exact (fractions) for small arrays, else numpy."""
    v = values.astype(np.float64).reshape(-1)
    v = v[~np.isnan(v)]
    if v.size > 20_000:
        return v.size, float(v.min()), float(v.max()), float(v.mean()), float(v.std())
    exact = [Fraction(float(x)) for x in v]
    mean = sum(exact, Fraction(0)) / len(exact)
    variance = sum(((x - mean) ** 2 for x in exact), Fraction(0)) / len(exact)
    # The variance of values near 1.7e308 exceeds the float64 range: its square root is taken scaled by 2**-1400.
    std = math.sqrt(float(variance / 2**1400)) * 2.0**700 if variance > 2**1000 else math.sqrt(float(variance))
    return v.size, float(min(exact)), float(max(exact)), float(mean), std


def assert_matches(got: dict[str, int | float], values: np.ndarray, rel: float = 1e-12) -> None:
    """count, min and max exactly; mean and std to ``rel`` (and float64 rounding of the largest magnitude)."""
    count, lo, hi, mean, std = reference(values)
    rounding = 1e-13 * float(np.nanmax(np.abs(values.astype(np.float64))))
    assert (got["stats_count"], got["stats_min"], got["stats_max"]) == (count, lo, hi)
    assert got["stats_mean"] == pytest.approx(mean, rel=rel, abs=rounding)
    assert got["stats_std"] == pytest.approx(std, rel=rel, abs=rounding)


# -- direct ------------------------------------------------------------------------------------


FINITE = st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False, width=64)
WITH_NAN = st.one_of(FINITE, st.just(float("nan")))


@given(hnp.arrays(np.float64, st.integers(1, 60), elements=WITH_NAN), st.lists(st.integers(0, 60), max_size=5))
def test_batches_give_the_statistics_of_all_values(values: np.ndarray, cuts: list[int]) -> None:
    """§6.7: however the values are cut into batches, the statistics are those of the non-NaN values."""
    bounds = [0, *sorted(c % (values.size + 1) for c in cuts), values.size]
    batches = [values[a:b] for a, b in itertools.pairwise(bounds)]
    got = stats_of(*batches)
    if np.isnan(values).all():
        assert got == {"stats_count": 0}
    else:
        assert_matches(got, values, rel=1e-9)


SMALL_INTS = {"uint8": (0, 256), "int8": (-128, 128), "bool": (0, 2), "int16": (-(2**15), 2**15), "uint16": (0, 2**16)}


@pytest.mark.parametrize("dtype", sorted(SMALL_INTS))
def test_small_integers_across_sum_blocks(dtype: str) -> None:
    """§6.7: one- and two-byte integers (summed exactly) give numpy's statistics, also past a block of sums."""
    rng = np.random.default_rng(SEED)
    n = 2 * INT_SUM_BLOCK + 17
    lo, hi = SMALL_INTS[dtype]
    x = rng.integers(lo, hi, n).astype(dtype)
    got = stats_of(x[:1000].reshape(10, 100), x[1000:])
    assert_matches(got, x)
    assert isinstance(got["stats_count"], int) and all(isinstance(got[k], float) for k in got if k != "stats_count")


def exact_moments(values: np.ndarray) -> tuple[float, float]:
    """The mean and the population std of integers, from exact rational arithmetic (each rounded once)."""
    v = [int(x) for x in values.reshape(-1)]
    mean = Fraction(sum(v), len(v))
    variance = Fraction(sum(x * x for x in v), len(v)) - mean * mean
    return float(mean), math.sqrt(float(variance))


@pytest.mark.parametrize("dtype", sorted(SMALL_INTS))
def test_one_batch_of_small_integers_is_exact(dtype: str) -> None:
    """§6.7: the mean and std of one batch of small integers are the exact ones, rounded (extremes included)."""
    rng = np.random.default_rng(SEED)
    lo, hi = SMALL_INTS[dtype]
    x = rng.integers(lo, hi, 5001).astype(dtype)
    x[:2] = (lo, hi - 1)  # the squares of the extremes must not overflow
    got = stats_of(x)
    mean, std = exact_moments(x)
    assert (got["stats_count"], got["stats_min"], got["stats_max"]) == (x.size, float(lo), float(hi - 1))
    assert got["stats_mean"] == mean
    assert got["stats_std"] == pytest.approx(std, rel=1e-15)  # M2 / count and the square root round again


@pytest.mark.parametrize("dtype", ["int8", "int16"])
def test_constant_small_integers_have_zero_std(dtype: str) -> None:
    """§6.7: a constant batch (the most negative value) has std exactly 0, not a rounding residue."""
    x = np.full(INT_SUM_BLOCK + 3, np.iinfo(dtype).min, dtype=dtype)
    got = stats_of(x)
    assert got["stats_mean"] == float(np.iinfo(dtype).min) and got["stats_std"] == 0.0


@pytest.mark.parametrize("dtype", sorted(SMALL_INTS))
@pytest.mark.parametrize("end", ["min", "max"])
def test_full_blocks_of_extremes_do_not_overflow(dtype: str, end: str) -> None:
    """§6.7: whole sum blocks of the largest magnitude (the worst case of each block's sums) stay exact."""
    lo, hi = SMALL_INTS[dtype]
    x = np.full(2 * INT_SUM_BLOCK + 5, lo if end == "min" else hi - 1, dtype=np.int64).astype(dtype)
    x[-1] = hi - 1 if end == "min" else lo  # one value of the other end: std > 0
    got = stats_of(x)
    mean, std = exact_moments(x)
    assert got["stats_mean"] == mean
    assert got["stats_std"] == pytest.approx(std, rel=1e-12)


def test_int8_extremes_are_signed() -> None:
    """§6.7: int8 values are read as signed, so -128 is the minimum, not 128."""
    got = stats_of(np.array([-128, 127, -1], dtype=np.int8))
    assert (got["stats_min"], got["stats_max"], got["stats_count"]) == (-128.0, 127.0, 3)
    assert got["stats_mean"] == pytest.approx(-2 / 3, rel=1e-15)


def test_floats_across_a_stats_block() -> None:
    """§6.7: more values than one float64 block (NaN among them) still give numpy's statistics."""
    rng = np.random.default_rng(SEED)
    x = rng.standard_normal(STATS_BLOCK + 1001).astype(np.float32)
    x[rng.integers(0, x.size, 500)] = np.nan
    assert_matches(stats_of(x), x, rel=1e-6)


def test_large_integers_and_float16() -> None:
    """§6.7: int64 values far from zero and float16 values are summarised in float64."""
    rng = np.random.default_rng(SEED)
    big = rng.integers(2**40, 2**40 + 1000, 5000, dtype=np.int64)
    assert_matches(stats_of(big[:123], big[123:]), big)
    half = rng.standard_normal((50, 3)).astype(np.float16)
    assert_matches(stats_of(half), half)


def test_empty_batches_change_nothing() -> None:
    """§6.7: an empty or all-NaN batch leaves the statistics as they were; with no values only the count (0) remains."""
    x = np.array([3.0, 1.0, 2.0])
    assert stats_of(np.empty(0), np.full(4, np.nan)) == {"stats_count": 0}
    assert stats_of(x, np.empty((0, 3)), np.full(2, np.nan)) == stats_of(x)
    assert stats_of(np.empty(0, np.uint8)) == {"stats_count": 0}


def test_infinities_count_and_nan_results_are_left_out() -> None:
    """§6.7: infinities count and may be the min or max; a mean or std that is NaN is not given."""
    assert stats_of(np.array([2.0]), np.array([1.0, np.inf])) == {
        "stats_count": 3,
        "stats_min": 1.0,
        "stats_max": np.inf,
        "stats_mean": np.inf,
    }
    assert stats_of(np.array([-np.inf]), np.array([np.inf])) == {
        "stats_count": 2,
        "stats_min": -np.inf,
        "stats_max": np.inf,
    }


# -- as the writer records them ----------------------------------------------------------------


def test_statistics_exclude_nan_and_merge_batches(tmp_path: Path) -> None:
    """§6.7: count, min, max, mean, std over all values with NaN excluded, equal when streamed in batches."""
    rng = np.random.default_rng(SEED)
    x = (rng.standard_normal((1000, 3)) * 1e3 + 1e6).astype(np.float64)
    x[rng.random(x.shape) < 0.1] = np.nan
    rag = [rng.integers(-50, 50, int(k)).astype(np.int32) for k in rng.integers(0, 20, 200)]
    target = tmp_path / "st.h5"
    with Writer(target) as w:
        for a in range(0, 1000, 137):
            w.append("train", {"x": x[a : a + 137]})
        for a in range(0, 200, 33):
            w.append("test", {"r": rag[a : a + 33]})
    finite = x[~np.isnan(x)]
    flat = np.concatenate(rag)
    with h5py.File(target, "r") as f:
        a, b = f["train/x"].attrs, f["test/r"].attrs
        assert a["stats_count"] == finite.size
        assert (a["stats_min"], a["stats_max"]) == (finite.min(), finite.max())
        assert a["stats_mean"] == pytest.approx(finite.mean(), rel=1e-12)
        assert a["stats_std"] == pytest.approx(finite.std(), rel=1e-9)
        assert b["stats_count"] == flat.size and b["stats_mean"] == pytest.approx(flat.mean(), rel=1e-12)
        assert b["stats_std"] == pytest.approx(flat.std(), rel=1e-12)
        assert all(f["train/x"].attrs[k].dtype == np.float64 for k in ("stats_min", "stats_mean", "stats_std"))


@pytest.mark.parametrize("dtype", ["uint8", "int8", "bool", "int16", "float16"])
def test_statistics_per_dtype(tmp_path: Path, dtype: str) -> None:
    """§6.7: statistics of small integer, boolean and half-precision features equal numpy's over the same values."""
    rng = np.random.default_rng(SEED)
    x = rng.integers(-128 if dtype == "int8" else 0, 128, (300, 4)).astype(dtype)
    with Writer(tmp_path / "d.h5") as w:
        for a in range(0, 300, 71):
            w.append("train", {"x": x[a : a + 71]})
    v = x.astype(np.float64)
    with h5py.File(tmp_path / "d.h5", "r") as f:
        a = f["train/x"].attrs
        assert (a["stats_count"], a["stats_min"], a["stats_max"]) == (v.size, v.min(), v.max())
        assert a["stats_mean"] == pytest.approx(v.mean(), rel=1e-12)
        assert a["stats_std"] == pytest.approx(v.std(), rel=1e-12)


def test_all_nan_feature_has_count_zero_only(tmp_path: Path) -> None:
    """§6.7: with no value to summarise only stats_count (0) is written."""
    target = write(tmp_path / "nan.h5", {"train": {"x": np.full(4, np.nan)}})
    with h5py.File(target, "r") as f:
        assert f["train/x"].attrs["stats_count"] == 0
        assert not {"stats_min", "stats_max", "stats_mean", "stats_std"} & set(f["train/x"].attrs)


def test_statistics_with_infinities(tmp_path: Path) -> None:
    """§6.7: infinities count; a statistic that comes out NaN is left out instead of written as NaN."""
    splits = {"train": {"a": np.array([1.0, np.inf, 2.0])}, "test": {"b": np.array([np.inf, -np.inf])}}
    target = write(tmp_path / "inf.h5", splits)
    with h5py.File(target, "r") as f:
        a, b = f["train/a"].attrs, f["test/b"].attrs
        assert (a["stats_count"], a["stats_min"], a["stats_max"], a["stats_mean"]) == (3, 1.0, np.inf, np.inf)
        assert "stats_std" not in a
        assert (b["stats_count"], b["stats_min"], b["stats_max"]) == (2, -np.inf, np.inf)
        assert "stats_mean" not in b and "stats_std" not in b


@pytest.mark.parametrize(
    "batches",
    [[[1.0, np.inf], [2.0]], [[1.0, np.inf, 2.0]], [[2.0], [np.inf], [1.0]], [[np.inf], [1.0, 2.0]]],
    ids=["inf-first-batch", "one-batch", "inf-middle", "inf-alone-first"],
)
def test_infinities_do_not_depend_on_batch_order(batches: list[list[float]]) -> None:
    """§6.7: the same values give the same statistics however they are cut into batches."""
    stats = StreamingStats()
    for batch in batches:
        stats.update(np.array(batch, dtype=np.float64))
    assert stats.attrs() == {"stats_count": 3, "stats_min": 1.0, "stats_max": math.inf, "stats_mean": math.inf}


def test_both_infinities_leave_mean_and_std_out() -> None:
    """§6.7: a mean of +inf and -inf is undefined and is left out."""
    stats = StreamingStats()
    stats.update(np.array([1.0, -np.inf]))
    stats.update(np.array([np.inf, 3.0]))
    assert stats.attrs() == {"stats_count": 4, "stats_min": -math.inf, "stats_max": math.inf}
    finite = StreamingStats()
    finite.update(np.array([1.0, 3.0]))
    assert finite.attrs()["stats_mean"] == 2.0 and finite.attrs()["stats_std"] == 1.0


HUGE_FLOATS = st.floats(-1.7e308, 1.7e308, allow_nan=False, allow_infinity=False, width=64)


@pytest.mark.parametrize(
    "batches",
    [
        [[1.6e308, -1.6e308, 1.0e308, -1.7e308]],
        [[0.5, 2.0], [1.6e308, -1.6e308], [3.0]],
        [[1.7e308], [1.7e308], [-1.7e308]],
        [[1e200, -1e200, 3e200]],
    ],
    ids=["one-batch", "small-then-huge", "one-value-batches", "below-the-scaling"],
)
def test_values_near_the_float64_limit_give_finite_exact_statistics(batches: list[list[float]]) -> None:
    """§6.7: finite values up to 1.7e308 give the exact (rounded) mean and std, never an infinity from overflow."""
    got = stats_of(*(np.array(b, dtype=np.float64) for b in batches))
    values = np.array([x for b in batches for x in b])
    assert math.isfinite(got["stats_mean"]) and math.isfinite(got["stats_std"])
    assert_matches(got, values, rel=1e-12)


@given(st.lists(HUGE_FLOATS, min_size=1, max_size=40), st.lists(st.integers(0, 40), max_size=4))
def test_huge_floats_in_any_batches_match_exact_statistics(values: list[float], cuts: list[int]) -> None:
    """§6.7: however huge finite values are cut into batches, mean and std match exact arithmetic."""
    x = np.array(values, dtype=np.float64)
    edges = sorted({0, len(values), *(c for c in cuts if c <= len(values))})
    got = stats_of(*(x[a:b] for a, b in itertools.pairwise(edges)))
    assert_matches(got, x, rel=1e-9)


@pytest.mark.parametrize(
    ("batches", "mean", "std"),
    [
        ([[1.7e308, -1.7e308] + [1.0] * 62], 62 / 64, None),
        ([[1.7e308] * 64], 1.7e308, 0.0),
        ([[1.7e308] * 32, [-1.7e308] * 32], 0.0, 1.7e308),
    ],
    ids=["small-beside-huge", "constant-huge", "two-constant-batches"],
)
def test_huge_values_beside_small_ones_keep_the_small_ones(
    batches: list[list[float]], mean: float, std: float | None
) -> None:
    """§6.7: a block holding values near 1.7e308 is summed exactly: the ones beside them count, a constant has std 0."""
    got = stats_of(*(np.array(b, dtype=np.float64) for b in batches))
    values = np.array([x for b in batches for x in b])
    assert got["stats_mean"] == mean
    assert got["stats_std"] == (reference(values)[4] if std is None else std)


def test_a_written_feature_of_huge_values_records_its_true_mean(tmp_path: Path) -> None:
    """§6.7 on file: a float64 feature spread over +-1.6e308 records mean 0 and std 1.6e308 (the mean was -inf)."""
    x = np.array([1.6e308, -1.6e308] * 4)
    target = write(tmp_path / "huge.h5", {"train": {"x": x}})
    with h5py.File(target, "r") as f:
        attrs = f["train/x"].attrs
        assert (attrs["stats_mean"], attrs["stats_std"]) == (0.0, 1.6e308)
