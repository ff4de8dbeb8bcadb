"""Tests of h5ml.reader.direct: memory-mapped reads of unfiltered numeric datasets (§7.3, §6.2, §6.3, §6.6, case C01/C02)."""

from __future__ import annotations

import multiprocessing
import pickle
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import pytest

import h5ml
from _files import Bytes, Dense, Ragged, write_file
from h5ml.reader.direct import DirectRows, direct_rows

N = 50
#: Every index pattern of a batch read: ints, slices, unsorted arrays with duplicates, the last (partial) chunk.
PATTERNS: list[Any] = [
    0,
    N - 1,
    -3,
    np.int64(17),
    slice(None),
    slice(3, 19),
    slice(45, N),
    slice(None, None, 3),
    slice(40, 2, -4),
    [5, 2, 9, 2, 49, 0, 49],
    np.array([N - 1, 0, -3, 8, 7, 8]),
    np.arange(N) % 7 == 3,
    list(range(N - 1, -1, -1)),
    [],
]


def _source() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(20261130)
    return {
        "f": rng.standard_normal((N, 3, 4)).astype(np.float32),
        "i": rng.integers(-(2**40), 2**40, size=N).astype(np.int64),
        "be": rng.integers(-1000, 1000, size=(N, 2)).astype(">i4"),
        "bef": rng.standard_normal((N, 5)).astype(">f8"),
        "u8": rng.integers(0, 256, size=(N, 7)).astype(np.uint8),
    }


def _write(path: Path, chunked: bool, compression: str | None = None) -> dict[str, np.ndarray]:
    """Write every array of :func:`_source` as a dense feature: chunks of 8 rows (the last partial), or contiguous."""
    src = _source()
    feats = {
        name: Dense(values, chunks=(8, *values.shape[1:]) if chunked else None, compression=compression)
        for name, values in src.items()
    }
    write_file(path, {"train": feats})
    return src


def _expected(path: Path, name: str, index: Any) -> Any:
    """What plain h5py returns for ``index`` of ``/train/name``, in native byte order."""
    with h5py.File(path, "r") as f:
        stored = f[f"train/{name}"][()]
    values = stored.astype(stored.dtype.newbyteorder("="))
    return values[index]


def _same(got: Any, want: Any) -> None:
    assert type(got) is type(want)
    got_a, want_a = np.asarray(got), np.asarray(want)
    assert got_a.dtype == want_a.dtype and got_a.dtype.isnative
    assert got_a.shape == want_a.shape
    assert np.array_equal(got_a, want_a)


@pytest.mark.parametrize("layout", ["contiguous", "chunked", "gzip"])
@pytest.mark.parametrize("index", PATTERNS, ids=repr)
def test_values_equal_plain_h5py(tmp_path: Path, layout: str, index: Any) -> None:
    """§6.2/C01: every index pattern returns what plain h5py returns, native order, for each storage."""
    path = tmp_path / "f.h5"
    _write(path, layout != "contiguous", "gzip" if layout == "gzip" else None)
    with h5ml.open(path) as ds:
        for name in _source():
            got = ds["train"][name][index]
            _same(got, _expected(path, name, index))


def test_direct_path_is_used_for_unfiltered_data_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """§7.3: unfiltered chunked and contiguous rows come from the memory map (HDF5 is never asked); gzip never does."""
    for layout, compression in (("chunked", None), ("contiguous", None), ("gzip", "gzip")):
        path = tmp_path / f"{layout}.h5"
        src = _write(path, layout != "contiguous", compression)
        calls: list[tuple[int, int]] = []
        original = DirectRows.read_into

        def spy(self: DirectRows, out: np.ndarray, start: int, stop: int, log: list[Any] = calls) -> None:
            log.append((start, stop))
            original(self, out, start, stop)  # noqa: B023 (called before the loop moves on)

        monkeypatch.setattr(DirectRows, "read_into", spy)
        with h5ml.open(path) as ds:
            feat = ds["train"]["be"]
            column = feat._column()
            fast = column.fast_rows()
            assert (fast is None) == (compression is not None)
            if fast is not None:

                class NoHDF5:
                    def __getattr__(self, name: str) -> Any:
                        raise AssertionError(f"HDF5 was asked for {name}")

                column.dsid = NoHDF5()  # any h5py read of this column now fails
            got = feat[[9, 3, 3, 49, 16]]
            assert np.array_equal(got, src["be"][[9, 3, 3, 49, 16]]) and got.dtype == np.dtype("=i4")
            assert np.array_equal(feat[10:20], src["be"][10:20])
            if compression is None:
                assert calls and (10, 20) in calls
            else:
                assert calls == []
        monkeypatch.undo()


def test_runs_within_one_chunk_are_one_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """§7.3: a span crossing chunk boundaries becomes one slice copy per chunk it touches."""
    path = tmp_path / "f.h5"
    src = _write(path, True)
    with h5ml.open(path) as ds:
        column = ds["train"]["f"]._column()
        fast = column.fast_rows()
        assert fast is not None and fast.block_rows == 8 and len(fast.blocks) == 7
        out = np.empty((N - 5, 3, 4), dtype=np.float32)
        fast.read_into(out, 5, N)
        assert np.array_equal(out, src["f"][5:])


def test_unallocated_chunks_fall_back_and_read_fill_values(tmp_path: Path) -> None:
    """§7.3: chunks never written are not in the file: h5py reads them (fill value), the map is not built."""
    path = tmp_path / "f.h5"
    src = _write(path, True)

    def rewrite(f: h5py.File) -> None:
        old = f["train/i"]
        attrs = dict(old.attrs)
        del f["train/i"]
        new = f.create_dataset("train/i", shape=(N,), dtype=np.int64, chunks=(8,), fillvalue=-7)
        new[0:8] = src["i"][0:8]
        new[24:32] = src["i"][24:32]
        for key, value in attrs.items():
            new.attrs[key] = value

    with h5py.File(path, "r+") as f:
        rewrite(f)
    want = np.full(N, -7, dtype=np.int64)
    want[0:8] = src["i"][0:8]
    want[24:32] = src["i"][24:32]
    with h5ml.open(path) as ds:
        feat = ds["train"]["i"]
        assert feat._column().fast_rows() is None
        assert np.array_equal(feat[:], want)
        assert np.array_equal(feat[[30, 9, 0, 49]], want[[30, 9, 0, 49]])
        assert feat[40] == -7


def test_storage_that_is_not_plain_bytes_in_the_file_is_refused(tmp_path: Path) -> None:
    """§10.1/§7.3: external storage, a file opened for writing, and partial-row chunks are never mapped."""
    raw = tmp_path / "raw.bin"
    values = np.arange(40, dtype=np.int32).reshape(10, 4)
    raw.write_bytes(values.tobytes())
    path = tmp_path / "ext.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("ext", shape=(10, 4), dtype=np.int32, external=[(str(raw), 0, values.nbytes)])
        f.create_dataset("cols", data=values, chunks=(5, 2))
        f.create_dataset("plain", data=values)
    with h5py.File(path, "r") as f:
        assert f["ext"].id.get_offset() is None
        assert direct_rows(f["ext"], np.dtype(np.int32)) is None
        assert direct_rows(f["cols"], np.dtype(np.int32)) is None
        fast = direct_rows(f["plain"], np.dtype(np.int32))
        assert fast is not None
        out = np.empty((3, 4), dtype=np.int32)
        fast.read_into(out, 6, 9)
        assert np.array_equal(out, values[6:9])
        assert direct_rows(f["plain"], np.dtype(np.int64)) is None  # not the stored type
    with h5py.File(path, "r+") as f:  # the map made above holds no lock: the file opens for writing
        assert direct_rows(f["plain"], np.dtype(np.int32)) is None
    assert np.array_equal(fast.data[fast.blocks[0] : fast.blocks[0] + values.nbytes].view(np.int32), values.ravel())


def test_ragged_and_bytes_values_read_through_the_map(tmp_path: Path) -> None:
    """§6.3/§6.6: unfiltered ragged and bytes values (and their offsets) come back as h5py stores them."""
    rng = np.random.default_rng(7)
    lengths = rng.integers(0, 6, size=N)
    ragged = [rng.integers(-9, 9, size=(int(k), 3)).astype(np.int16) for k in lengths]
    blobs = [bytes(rng.integers(0, 256, size=int(k) * 3, dtype=np.uint8)) for k in lengths]
    path = tmp_path / "f.h5"
    write_file(path, {"train": {"r": Ragged(ragged, chunk_rows=16), "b": Bytes(blobs, chunk_rows=16)}})
    with h5ml.open(path) as ds:
        feat_r, feat_b = ds["train"]["r"], ds["train"]["b"]
        got = feat_r[[4, 1, 4, 49]]
        for g, j in zip(got, [4, 1, 4, 49], strict=True):
            assert g.dtype == np.int16 and np.array_equal(g, ragged[j])
        assert feat_b[[7, 0, 7]] == [blobs[7], blobs[0], blobs[7]]
        assert feat_b[3:9] == blobs[3:9]
        assert feat_r._column("values").fast_rows() is not None
        assert feat_b._column("values").fast_rows() is not None


def _read_in_child(feature: Any, queue: Any) -> None:
    queue.put(feature[[9, 2, 2, 48]])


def test_fork_and_pickle_read_the_same_values(tmp_path: Path) -> None:
    """C02: a forked child and an unpickled copy rebuild the map and read the same values."""
    path = tmp_path / "f.h5"
    src = _write(path, True)
    with h5ml.open(path) as ds:
        feat = ds["train"]["f"]
        assert np.array_equal(feat[[1, 2]], src["f"][[1, 2]])  # builds the map in the parent
        assert feat._column().fast_rows() is not None
        ctx = multiprocessing.get_context("fork")
        queue = ctx.Queue()
        child = ctx.Process(target=_read_in_child, args=(feat, queue))
        child.start()
        got = queue.get(timeout=120)
        child.join(timeout=120)
        assert child.exitcode == 0
        assert np.array_equal(got, src["f"][[9, 2, 2, 48]])
        copy = pickle.loads(pickle.dumps(feat))
        assert np.array_equal(copy[[9, 2, 2, 48]], src["f"][[9, 2, 2, 48]])
        assert copy._column().fast_rows() is not None
        assert np.array_equal(feat[5:7], src["f"][5:7])


def test_take_copies_any_rows_in_any_order(tmp_path: Path) -> None:
    """§7.3/C01: rows in any order, with duplicates, across chunk boundaries, big-endian, land where asked."""
    path = tmp_path / "f.h5"
    src = _write(path, True)
    rows = np.array([49, 0, 1, 2, 8, 7, 7, 15, 16, 48, 47], dtype=np.int64)
    with h5ml.open(path) as ds:
        for name in ("be", "bef", "u8"):
            fast = ds["train"][name]._column().fast_rows()
            assert fast is not None
            out = fast.take(rows)
            assert out.dtype == src[name].dtype.newbyteorder("=") and out.dtype.isnative
            assert out.shape == (rows.shape[0], *src[name].shape[1:]) and out.flags.c_contiguous and out.flags.writeable
            assert np.array_equal(out, src[name][rows])
            assert fast.take(rows[:0]).shape == (0, *src[name].shape[1:])
