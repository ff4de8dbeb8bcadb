"""Feature readers (h5ml.reader.feature and one module per encoding): the fast paths against the planned path (§6, C01).

An integer index and a slice with step 1 are read without a read plan (one
read per dataset); everything else goes through :func:`h5ml.reader.plan.plan_reads`,
or, for unfiltered numbers, one copy out of the file's memory map. These tests
check that every path returns the same values with the same types and dtypes
for every encoding, storage variant and index kind, plain and gzip, with the
memory map and without it (``direct=False``), and that the fast path costs one
read per dataset (:attr:`h5ml.Dataset.read_stats`).
"""

from __future__ import annotations

import multiprocessing
import pickle
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import pytest

import h5ml
from _files import Bytes, Categorical, Dense, Ragged, String, write_file
from h5ml.reader import Dataset, ReadEvent
from h5ml.reader import offsets as offsets_module
from h5ml.reader.column import Column

N = 60
#: Every feature of the test file; the planned path and the fast path must agree on each.
NAMES = (
    "x",
    "n",
    "flag",
    "mask",
    "enum",
    "be",
    "half",
    "text",
    "ascii",
    "fixed",
    "label",
    "ragged",
    "image",
    "rbool",
    "blob",
)
INTS: list[Any] = [0, 5, N - 1, -1, -N, np.int64(7), np.uint8(3), np.int16(-2)]
STEP1_SLICES = [
    slice(None),
    slice(3, 17),
    slice(-10, None),
    slice(5, 5),
    slice(10, 2),
    slice(50, 1000),
    slice(0, N, 1),
    slice(-1000, 4),
]
OTHER_REQUESTS: list[Any] = [
    slice(None, None, 2),
    slice(40, 3, -3),
    slice(None, None, -1),
    [5, 2, 9, 2],
    np.array([N - 1, 0, -3]),
    np.arange(N) % 7 == 3,
    [],
]


def _source() -> dict[str, Any]:
    """Deterministic content of every feature, N samples each."""
    rng = np.random.default_rng(20240611)
    lengths = rng.integers(0, 5, size=N)
    lengths[[0, 4, N - 1]] = 0
    return {
        "x": rng.standard_normal((N, 3, 2)).astype(np.float32),
        "n": rng.integers(-(2**40), 2**40, size=N).astype(np.int64),
        "flag": rng.integers(0, 2, size=N).astype(np.uint8),  # 0 and 1 only: a 2 is refused (SPEC §3.3-R5)
        "mask": rng.integers(0, 2, size=(N, 4)).astype(np.uint8),
        "enum": rng.integers(0, 2, size=N).astype(bool),
        "be": rng.integers(-1000, 1000, size=(N, 2)).astype(">i4"),
        "half": rng.standard_normal(N).astype(np.float16),
        "text": [f"s{i} é{'𝄞' * (i % 3)}" if i % 5 else "" for i in range(N)],
        "ascii": [f"row {i}" for i in range(N)],
        "fixed": [f"f{i}ü" * (i % 4) for i in range(N)],
        "codes": rng.integers(-1, 4, size=N).astype(np.int16),
        "ragged": [rng.integers(-9, 9, size=(int(k), 2)).astype(np.int32) for k in lengths],
        "image": [rng.integers(0, 255, size=(int(k % 3) + 1, int(k))).astype(np.uint8) for k in lengths],
        "rbool": [rng.integers(0, 2, size=int(k)).astype(np.uint8) for k in lengths],
        "blob": [bytes(rng.integers(0, 256, size=int(k) * 5, dtype=np.uint8)) for k in lengths],
    }


def _write(path: Path, compression: str | None) -> dict[str, Any]:
    src = _source()
    c = compression
    write_file(
        path,
        {
            "train": {
                "x": Dense(src["x"], chunks=(7, 3, 2), compression=c),
                "n": Dense(src["n"], chunks=(16,), compression=c),
                "flag": Dense(src["flag"], chunks=(8,), compression=c, logical_bool=True),
                "mask": Dense(src["mask"], chunks=(8, 4), compression=c, logical_bool=True),
                "enum": Dense(src["enum"], chunks=(8,), compression=c),
                "be": Dense(src["be"], chunks=(9, 2), compression=c),
                "half": Dense(src["half"], chunks=(32,), compression=c),
                "text": String(src["text"], chunks=(8,), compression=c),
                "ascii": String(src["ascii"], kind="ascii", chunks=(8,), compression=c),
                "fixed": String(src["fixed"], kind="fixed", chunks=(8,), compression=c),
                "label": Categorical(src["codes"], ["a", "b", "c", "d"]),
                "ragged": Ragged(src["ragged"], chunk_rows=5, compression=c),
                "image": Ragged(src["image"], with_shapes=True, chunk_rows=16, compression=c),
                "rbool": Ragged(src["rbool"], chunk_rows=4, compression=c, attrs={"logical_dtype": "bool"}),
                "blob": Bytes(src["blob"], chunk_rows=32, compression=c),
            }
        },
    )
    return src


@pytest.fixture(params=[None, "gzip"], ids=["plain", "gzip"])
def opened(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Dataset, dict[str, Any]]]:
    src = _write(tmp_path / "f.h5", request.param)
    with h5ml.open(tmp_path / "f.h5") as ds:
        yield ds, src


def _one(src: dict[str, Any], name: str, row: int) -> Any:
    """The value a reader must return for sample ``row`` of feature ``name``, with its exact type."""
    if name in ("flag", "mask"):
        return src[name][row] != 0
    if name == "be":
        return src["be"][row].astype(np.int32)
    if name in ("x", "n", "enum", "half"):
        return src[name][row]
    if name in ("text", "ascii", "fixed"):
        return src[name][row]
    if name == "label":
        return int(src["codes"][row])
    if name == "rbool":
        return src["rbool"][row] != 0
    return src[name][row]


def _batch(src: dict[str, Any], name: str, rows: np.ndarray) -> Any:
    """The value a reader must return for the batch ``rows`` of feature ``name``."""
    items = [_one(src, name, int(r)) for r in rows.tolist()]
    if name in ("ragged", "image", "rbool", "blob"):
        return items
    if name in ("text", "ascii", "fixed"):
        out = np.empty(len(items), dtype=object)
        out[:] = items
        return out
    if name == "label":
        return np.asarray(items, dtype=np.int64)
    template = _one(src, name, 0)
    return np.asarray(items, dtype=np.asarray(template).dtype).reshape(len(items), *np.shape(template))


def _assert_same(got: Any, want: Any) -> None:
    """Equal values with the same types, dtypes and shapes (recursively for lists and object arrays)."""
    if isinstance(want, np.ndarray):
        assert isinstance(got, np.ndarray), f"{type(got)} is not an array"
        assert got.dtype == want.dtype and got.shape == want.shape, (
            f"{got.dtype}{got.shape} != {want.dtype}{want.shape}"
        )
        assert got.dtype.isnative
        if want.dtype == object:
            for g, w in zip(got.tolist(), want.tolist(), strict=True):
                assert type(g) is type(w) and g == w
        else:
            assert np.array_equal(got, want)
    elif isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            _assert_same(g, w)
    else:
        assert type(got) is type(want), f"{type(got)} is not {type(want)}"
        assert got == want


def _rows(request: Any) -> np.ndarray:
    """The rows numpy indexing of N rows selects (a slice, a mask, or integers)."""
    if isinstance(request, slice):
        return np.arange(N)[request]
    arr = np.asarray(request)
    if arr.dtype == bool:
        return np.flatnonzero(arr)
    return np.arange(N)[arr.astype(np.int64)]


# -- values: fast path == planned path == source ----------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
def test_single_index_equals_planned_path_and_source(opened: tuple[Dataset, dict[str, Any]], name: str) -> None:
    """C01/§6: an int (negative and numpy ints too) returns the planned path's sample, same type and dtype."""
    ds, src = opened
    feat = ds["train"][name]
    for index in INTS:
        want = _one(src, name, int(index) % N)
        fast = feat[index]
        _assert_same(fast, want)
        _assert_same(feat._read(index), want)  # the planned path, as before the fast path existed
        if isinstance(fast, np.ndarray) and fast.size:
            assert fast.flags.writeable


@pytest.mark.parametrize("name", NAMES)
def test_step_one_slices_equal_planned_path_and_source(opened: tuple[Dataset, dict[str, Any]], name: str) -> None:
    """C01/§6: slices with step 1 (clipped, empty, negative bounds) return what the planned path returns."""
    ds, src = opened
    feat = ds["train"][name]
    for sl in STEP1_SLICES:
        want = _batch(src, name, _rows(sl))
        _assert_same(feat[sl], want)
        _assert_same(feat._read(sl), want)


@pytest.mark.parametrize("name", NAMES)
def test_other_requests_still_follow_the_plan(opened: tuple[Dataset, dict[str, Any]], name: str) -> None:
    """C01: step slices, lists with duplicates, negative arrays, masks and empty lists give the source's rows."""
    ds, src = opened
    feat = ds["train"][name]
    for request in OTHER_REQUESTS:
        _assert_same(feat[request], _batch(src, name, _rows(request)))


def test_split_single_sample_equals_each_feature(opened: tuple[Dataset, dict[str, Any]]) -> None:
    """§5: split[i] and split.read(i, features) return each feature's single sample; out of range raises."""
    ds, src = opened
    split = ds["train"]
    for index in (0, 17, -1, np.int32(3)):
        sample = split[index]
        assert list(sample) == list(split.features) and set(sample) == set(NAMES)
        for name in NAMES:
            _assert_same(sample[name], _one(src, name, int(index) % N))
    assert list(split.read(4, features=["blob", "x"])) == ["blob", "x"]
    _assert_same(split.read(4, features="label")["label"], _one(src, "label", 4))
    with pytest.raises(IndexError, match=f"index {N} is out of range for {N} samples"):
        split[N]
    with pytest.raises(IndexError, match=f"index {-N - 1} is out of range"):
        ds["train"]["blob"][-N - 1]
    with pytest.raises(TypeError):
        split[True]


def test_uncached_offsets_read_only_the_rows_needed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """§6.3: with offsets too large to keep (large files), ints and slices read them per request, same values."""
    src = _write(tmp_path / "f.h5", "gzip")
    monkeypatch.setattr(offsets_module, "OFFSETS_CACHE_BYTES", 0)
    with h5ml.open(tmp_path / "f.h5") as ds:
        for name in ("ragged", "image", "rbool", "blob"):
            feat = ds["train"][name]
            for index in INTS:
                _assert_same(feat[index], _one(src, name, int(index) % N))
            for sl in STEP1_SLICES:
                _assert_same(feat[sl], _batch(src, name, _rows(sl)))
            with ds.read_stats.record() as reads:
                feat[7]
                feat[7]
            offsets = [(r.start, r.stop) for r in reads if r.hdf5_path.endswith("/offsets")]
            assert offsets == [(7, 9), (7, 9)]  # nothing was kept: each read asks for the 2 offsets it needs
        assert ds["train"]["ragged"].lengths(-1) == len(src["ragged"][-1])


# -- cost: one read per dataset (Dataset.read_stats) ---------------------------------------------------------

#: The datasets one sample (or one step-1 slice) of each feature reads, once its offsets are in memory.
_DATASETS_READ = {
    "label": ["/train/label/codes"],
    "ragged": ["/train/ragged/values"],
    "image": ["/train/image/values", "/train/image/shapes"],
    "rbool": ["/train/rbool/values"],
    "blob": ["/train/blob/values"],
}


def _datasets(reads: list[ReadEvent]) -> list[str]:
    return [r.hdf5_path for r in reads]


@pytest.mark.parametrize("uncached", [False, True], ids=["cached-offsets", "uncached-offsets"])
def test_ints_and_step_one_slices_cost_one_read_per_dataset(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, uncached: bool
) -> None:
    """An int or a step-1 slice reads each dataset of the feature once (offsets too, when not kept in memory).

    Measured with Dataset.read_stats on gzip data (chunks are never copied out of the memory map): split[i]
    costs the sum of the features' single reads, a slice within one chunk one read per dataset.
    """
    src = _write(tmp_path / "f.h5", "gzip")
    if uncached:
        monkeypatch.setattr(offsets_module, "OFFSETS_CACHE_BYTES", 0)
    with h5ml.open(tmp_path / "f.h5") as ds:
        split = ds["train"]
        split[0]  # reads and keeps the offsets of ragged and bytes features (unless uncached)

        def want(name: str) -> list[str]:
            paths = _DATASETS_READ.get(name, [f"/train/{name}"])
            if uncached and name in ("ragged", "image", "rbool", "blob"):
                return [f"/train/{name}/offsets", *paths]
            return paths

        for index in (3, -2, np.int64(9)):
            with ds.read_stats.record() as reads:
                sample = split[index]
            for name in NAMES:
                _assert_same(sample[name], _one(src, name, int(index) % N))
            assert sorted(_datasets(reads)) == sorted(p for name in NAMES for p in want(name))
            assert all(not r.gather and r.stop - r.start == r.rows for r in reads)  # runs of rows, no gather
        for name in NAMES:
            with ds.read_stats.record() as reads:
                got = split[name][slice(2, 7)]
            _assert_same(got, _batch(src, name, np.arange(2, 7)))
            assert _datasets(reads) == want(name), name
        with ds.read_stats.record() as reads:
            assert split["blob"].lengths(7) == len(src["blob"][7])
        assert [(r.hdf5_path, r.start, r.stop) for r in reads] == ([("/train/blob/offsets", 7, 9)] if uncached else [])


def test_one_sample_is_one_read_per_dataset(tmp_path: Path) -> None:
    """A ragged sample with shapes reads one slice of values and one row of shapes; offsets once, then kept."""
    src = _write(tmp_path / "f.h5", None)
    with h5ml.open(tmp_path / "f.h5") as ds:
        feat = ds["train"]["image"]
        with ds.read_stats.record() as reads:
            _assert_same(feat[10], src["image"][10])
        assert _datasets(reads) == ["/train/image/offsets", "/train/image/values", "/train/image/shapes"]
        row = next(i for i in range(11, N) if src["image"][i].size)  # a sample with values
        with ds.read_stats.record() as reads:
            _assert_same(feat[row], src["image"][row])
        start, stop = (int(v) for v in np.cumsum([0] + [a.size for a in src["image"]])[[row, row + 1]])
        # Unfiltered values come out of the memory map; so does the shapes row (int64, native: DirectRows.sample).
        assert reads == [
            ReadEvent("/train/image/values", "map", start, stop, stop - start),
            ReadEvent("/train/image/shapes", "map", row, row + 1, 1),
        ]
        with ds.read_stats.record() as reads:
            _assert_same(ds["train"]["x"][-1], src["x"][-1])
        assert reads == [ReadEvent("/train/x", "map", N - 1, N, 1)]  # one row copied out of the map, no HDF5 call
        with ds.read_stats.record() as reads:
            _assert_same(ds["train"]["x"][[2, 1]], _batch(src, "x", np.array([2, 1])))
        assert reads == [ReadEvent("/train/x", "map", 1, 3, 2, gather=True)]  # unfiltered numbers: one copy


def _read_everything(ds: Dataset) -> list[Any]:
    """Every feature under every index kind, and whole-split reads, in one fixed order."""
    split = ds["train"]
    out: list[Any] = []
    for name in NAMES:
        feat = split[name]
        out.extend(feat[request] for request in [*INTS, *STEP1_SLICES, *OTHER_REQUESTS])
    out.extend(split[request] for request in (4, slice(3, 9), [7, 1, 7]))
    out.append(split["ragged"].lengths([5, 2, 5]))
    return out


@pytest.mark.parametrize("compression", [None, "gzip"], ids=["plain", "gzip"])
def test_direct_false_reads_the_same_values_through_h5py(tmp_path: Path, compression: str | None) -> None:
    """§7.3: ``direct=False`` (h5ml.open and Dataset, kept by pickle) returns identical values, all through HDF5."""
    path = tmp_path / "f.h5"
    _write(path, compression)
    with h5ml.open(path) as mapped:
        want = _read_everything(mapped)
        copies = mapped.read_stats.direct_copies
    assert copies > 0  # the default really read through the map (gzip files too: their offsets and codes are plain)
    opened = h5ml.open(path, direct=False)
    made = Dataset(path, direct=False)
    copy = pickle.loads(pickle.dumps(made))
    for ds in (opened, made, copy):
        with ds:
            assert ds.direct is False and ds.file_map() is None
            got = _read_everything(ds)
            assert len(got) == len(want)
            for g, w in zip(got, want, strict=True):
                if isinstance(w, dict):
                    assert list(g) == list(w)
                    for name in w:
                        _assert_same(g[name], w[name])
                else:
                    _assert_same(g, w)
            assert ds.read_stats.direct_copies == 0 and ds.read_stats.hdf5_reads > 0
    with h5ml.open(path) as ds:
        assert ds.direct is True and ds.file_map() is not None


def test_read_buffer_of_the_wrong_size_is_refused(opened: tuple[Dataset, dict[str, Any]]) -> None:
    """The one low-level read refuses a buffer that does not hold exactly the rows asked (no write past it)."""
    ds, src = opened
    node = ds.h5_node("/train/be")
    column = Column("/train/be", node, np.dtype(np.int32), filename=ds.path, maps=ds.file_map)
    out = np.empty((2, 2), dtype=np.int32)
    column.read_into(out, 4, 6)
    assert np.array_equal(out, src["be"][4:6])
    for bad in (np.empty((1, 2), np.int32), np.empty((2, 2), np.int16), np.empty((3, 2), np.int32)):
        with pytest.raises(ValueError, match="buffer of shape"):
            column.read_into(bad, 4, 6)


# -- lifetime: threads, fork, pickle, close -----------------------------------------------------------------


def test_threads_read_single_samples_concurrently(opened: tuple[Dataset, dict[str, Any]]) -> None:
    """Each thread uses its own file dataspace: concurrent single reads of one feature return the right rows."""
    ds, src = opened
    order = np.random.default_rng(5).permutation(np.tile(np.arange(N), 20)).tolist()
    for name in ("be", "text", "x", "image"):
        feat = ds["train"][name]
        read: Callable[[int], Any] = feat.__getitem__
        with ThreadPoolExecutor(max_workers=4) as pool:
            got = list(pool.map(read, order, chunksize=7))
        for row, value in zip(order, got, strict=True):
            _assert_same(value, _one(src, name, row))


def _single_read_in_child(ds: Dataset, handle: h5py.File, queue: Any) -> None:
    """Read one sample through the per-sample path; report it and whether the read itself reopened the file."""
    sample = ds["train"][8]
    queue.put((sample, ds._file is not None and ds._file is not handle))


def test_fork_child_rebuilds_cached_columns(opened: tuple[Dataset, dict[str, Any]]) -> None:
    """C02: after fork the per-sample path notices the inherited handle, reopens, and reads the same values."""
    ds, src = opened
    handle = ds.h5file
    assert ds["train"][5]["label"] == int(src["codes"][5])  # fills every cache of the fast path
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    child = ctx.Process(target=_single_read_in_child, args=(ds, handle, queue))
    child.start()
    sample, replaced = queue.get(timeout=120)
    child.join(timeout=120)
    assert child.exitcode == 0 and replaced
    for name in NAMES:
        _assert_same(sample[name], _one(src, name, 8))
    assert ds.h5file is handle
    _assert_same(ds["train"]["image"][8], src["image"][8])


def test_pickled_feature_and_closed_dataset(opened: tuple[Dataset, dict[str, Any]]) -> None:
    """C02: a pickled feature reopens the file and reads single samples; a closed dataset refuses them."""
    ds, src = opened
    feat = ds["train"]["ragged"]
    _assert_same(feat[9], src["ragged"][9])
    copy = pickle.loads(pickle.dumps(feat))
    _assert_same(copy[9], src["ragged"][9])
    _assert_same(copy[2:5], src["ragged"][2:5])
    ds.close()
    with pytest.raises(ValueError, match="closed"):
        feat[9]
    with pytest.raises(ValueError, match="closed"):
        ds["train"]
