"""The batch path of ``Split.read`` (issue 15, uncompressed dense): rows checked once, then one copy per feature.

``Split.read`` of a batch checks and normalises the request once, against the
split's ``num_samples`` (§5.3), and hands the int64 rows to each feature's
:meth:`h5ml.reader.feature.Feature.read_checked`, which does not check them
again (:meth:`h5ml.reader.column.Column.take_rows`). Unfiltered rows whose
blocks follow one another in the file are copied by one ``numpy.take`` of a
typed view of the map (:attr:`h5ml.reader.direct.DirectRows.table`); other
layouts keep the per-row offsets. Every path returns the values h5py returns;
the table is a view of the map, so it is dropped on close and rebuilt after a
fork or an unpickle. Real files written with h5py (tests/_files.py).
"""

from __future__ import annotations

import mmap
import multiprocessing
import pickle
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import pytest

import h5ml
from _files import Categorical, Dense, Ragged, String, write_file
from h5ml.reader import column as column_module
from h5ml.reader.direct import DirectRows, direct_rows
from h5ml.reader.file_map import FileMap, open_file_map

N = 40
#: Batch requests: unsorted with duplicates and negatives, a list, unsigned, a run, a mask, empty, one row.
BATCHES: list[Any] = [
    np.array([7, 3, 3, -1, 0, 39, -40, 12], dtype=np.int64),
    [5, 2, 9, 2, 39, 0],
    np.array([1, 30, 30, 4], dtype=np.uint16),
    np.arange(16, 32),
    np.arange(N) % 3 == 1,
    np.array([], dtype=np.int64),
    np.array([21]),
    np.array([-5], dtype=np.int32),
]


def _source() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(20261203)
    return {
        "img": rng.integers(0, 256, size=(N, 4, 4, 3)).astype(np.uint8),
        "tab": rng.standard_normal((N, 6)).astype(np.float32),
        "be": rng.integers(-1000, 1000, size=(N, 3)).astype(">i4"),
        "y": rng.integers(0, 10, size=N).astype(np.int64),
        "flag": rng.integers(0, 2, size=N).astype(np.uint8),
        "codes": rng.integers(-1, 3, size=N).astype(np.int64),
    }


def _write(path: Path) -> dict[str, np.ndarray]:
    """Contiguous and chunked dense features (one big-endian, one boolean), and a categorical, string, ragged one."""
    src = _source()
    feats: dict[str, Any] = {
        "img": Dense(src["img"], chunks=(8, 4, 4, 3)),
        "tab": Dense(src["tab"]),
        "be": Dense(src["be"], chunks=(16, 3)),
        "y": Dense(src["y"], chunks=(32,)),
        "flag": Dense(src["flag"], logical_bool=True),
        "cat": Categorical(src["codes"], ["a", "b", "c"]),
        "name": String([f"s{i}" for i in range(N)]),
        "clip": Ragged([np.arange(i % 5, dtype=np.float32) for i in range(N)]),
    }
    write_file(path, {"train": feats})
    return src


def _expected(src: dict[str, np.ndarray], name: str, batch: Any) -> Any:
    values = src["codes" if name == "cat" else name]
    values = values.astype(values.dtype.newbyteorder("="))
    return values[batch] != 0 if name == "flag" else values[batch]


def _same(got: Any, want: Any) -> None:
    if isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            _same(g, w)
        return
    assert isinstance(got, np.ndarray) and got.dtype == want.dtype and got.dtype.isnative
    assert got.shape == want.shape and np.array_equal(got, want)


@pytest.mark.parametrize("batch", BATCHES, ids=repr)
def test_split_batches_equal_each_features_own_read(tmp_path: Path, batch: Any) -> None:
    """§5, §6, C01: split.read of a batch gives, for every encoding, what feature.read gives and the stored values."""
    path = tmp_path / "f.h5"
    src = _write(path)
    with h5ml.open(path) as ds:
        split = ds["train"]
        got = split.read(batch)
        assert sorted(got) == ["be", "cat", "clip", "flag", "img", "name", "tab", "y"]
        for name, values in got.items():
            _same(values, split[name].read(batch))
        for name in ("img", "tab", "be", "y", "flag", "cat"):
            _same(got[name], _expected(src, name, batch))
            assert got[name].flags.c_contiguous and got[name].flags.writeable
        rows = np.flatnonzero(batch) if np.asarray(batch).dtype == bool else np.asarray(batch, dtype=np.int64) % N
        assert list(got["name"]) == [f"s{i}" for i in rows]


def test_a_batch_is_checked_once_for_every_feature(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The split normalises a batch once: the columns of dense and categorical features do not normalise it again."""
    path = tmp_path / "f.h5"
    src = _write(path)

    def refuse(*args: Any) -> Any:
        raise AssertionError("a column normalised rows the split had checked")

    monkeypatch.setattr(column_module, "normalize_indices", refuse)
    batch = np.array([9, -2, 9, 0, 17])
    with h5ml.open(path) as ds:
        got = ds["train"].read(batch, features=["img", "tab", "be", "y", "flag", "cat"])
        for name, values in got.items():
            _same(values, _expected(src, name, batch))
        with pytest.raises(AssertionError, match="normalised"):  # a feature's own read still checks its request
            ds["train"]["img"].read(batch)


def test_read_checked_reads_rows_in_request_order(tmp_path: Path) -> None:
    """Feature.read_checked: checked int64 rows (duplicates, any order) read as read() reads them; never changed."""
    path = tmp_path / "f.h5"
    src = _write(path)
    rows = np.array([39, 0, 5, 5, 21, 8], dtype=np.int64)
    with h5ml.open(path) as ds:
        for name in ("img", "tab", "be", "y", "flag", "cat", "name", "clip"):
            feature = ds["train"][name]
            _same(feature.read_checked(rows), feature.read(rows))
            if name not in ("name", "clip"):
                _same(feature.read_checked(rows), _expected(src, name, rows))
        assert rows.tolist() == [39, 0, 5, 5, 21, 8]
        with pytest.raises(IndexError):  # a row outside the stored rows is refused, never read past the data
            ds["train"]["tab"].read_checked(np.array([N], dtype=np.int64))


def _reverse_chunks(path: Path, name: str) -> None:
    """Store /train/name again, its chunks written last to first: their blocks no longer follow one another."""
    with h5py.File(path, "r+") as f:
        old = f[f"train/{name}"]
        values, attrs, chunks = old[()], dict(old.attrs), old.chunks
        del f[f"train/{name}"]
        new = f["train"].create_dataset(name, shape=values.shape, dtype=values.dtype, chunks=chunks)
        for start in reversed(range(0, values.shape[0], chunks[0])):
            new[start : start + chunks[0]] = values[start : start + chunks[0]]
        for key, value in attrs.items():
            new.attrs[key] = value


def test_blocks_in_file_order_are_one_table_others_keep_offsets(tmp_path: Path) -> None:
    """§7.3: a contiguous dataset, or chunks stored in row order, is one table; chunks out of order are not; same values."""
    path = tmp_path / "f.h5"
    src = _write(path)
    _reverse_chunks(path, "be")
    rows = np.array([39, 0, 1, 2, 8, 7, 7, 15, 16, 33, 32], dtype=np.int64)
    with h5py.File(path, "r") as f:
        file_map = open_file_map(f)
        assert file_map is not None
        tables = {}
        for name in ("img", "tab", "be", "y"):
            fast = direct_rows(f[f"train/{name}"], src[name].dtype.newbyteorder("="), file_map)
            assert fast is not None
            tables[name] = fast.table is not None
            out = fast.take(rows)
            assert out.dtype.isnative and out.flags.c_contiguous and out.flags.writeable
            assert np.array_equal(out, src[name][rows]) and out.shape == (len(rows), *src[name].shape[1:])
            assert fast.take(rows[:0]).shape == (0, *src[name].shape[1:])
        assert tables == {"img": True, "tab": True, "be": False, "y": True}
        file_map.close()
        assert fast.table is None and fast.rows_view is None  # released: the map can be unmapped
    with h5ml.open(path) as ds:
        _same(ds["train"].read(rows, features=["be"])["be"], _expected(src, "be", rows))


@pytest.mark.parametrize("dtype", ["<f8", ">f8", "<i2", ">u4"])
def test_a_table_at_an_unaligned_offset_returns_native_values(tmp_path: Path, dtype: str) -> None:
    """A dataset whose bytes start at an odd file offset, in either byte order: take returns native, aligned copies."""
    values = (np.arange(30 * 3) * 7 - 50).reshape(30, 3).astype(dtype)
    path = tmp_path / "raw.bin"
    path.write_bytes(b"\x01\x02\x03" + values.tobytes() + b"\x00" * 5)
    with open(path, "rb") as handle:
        region = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
    file_map = FileMap(region, str(path))
    fast = DirectRows(file_map, "/x", [3], 30, 30, (3,), np.dtype(dtype))
    assert fast.table is not None and not fast.table.flags.aligned  # 3 is no multiple of 2, 4 or 8
    rows = np.array([29, 0, 14, 14, 3], dtype=np.int64)
    out = fast.take(rows)
    assert out.dtype == np.dtype(dtype).newbyteorder("=") and out.flags.aligned and out.flags.writeable
    assert np.array_equal(out, values[rows])
    file_map.close()


def _split_batch_in_child(ds: Any, queue: Any) -> None:
    got = ds["train"].read(np.array([9, 2, 2, 33]), features=["img", "tab"])
    queue.put((got["img"], got["tab"], ds.read_stats.direct_copies))


def test_split_batches_after_fork_unpickle_close_and_reopen(tmp_path: Path) -> None:
    """C02: the table belongs to one open file in one process: a forked child, an unpickled copy and a reopened
    dataset build their own and read the same values; a closed dataset refuses to read."""
    path = tmp_path / "f.h5"
    src = _write(path)
    batch = np.array([9, 2, 2, 33])
    with h5ml.open(path) as ds:
        split = ds["train"]
        first = split.read(batch, features=["img", "tab"])  # the columns and tables made in the parent
        ctx = multiprocessing.get_context("fork")
        queue = ctx.Queue()
        child = ctx.Process(target=_split_batch_in_child, args=(ds, queue))
        child.start()
        img, tab, copies = queue.get(timeout=120)
        child.join(timeout=120)
        assert child.exitcode == 0 and copies == 2  # the child's own map: one copy per feature
        _same(img, src["img"][batch])
        _same(tab, src["tab"][batch])
        with pickle.loads(pickle.dumps(ds)) as copy:
            _same(copy["train"].read(batch, features=["img"])["img"], src["img"][batch])
        _same(split.read(batch, features=["img", "tab"])["tab"], first["tab"])
    with pytest.raises(ValueError, match="closed"):
        split.read(batch, features=["img"])
    with h5ml.open(path) as again:
        _same(again["train"].read(batch, features=["tab"])["tab"], src["tab"][batch])
