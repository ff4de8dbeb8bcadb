"""Tests of h5ml.reader.direct: memory-mapped reads of unfiltered numeric datasets (§7.3, §6.2, §6.3, §6.6, §10.3, C01/C02).

Which path a read took is observed through the public read counter
(:attr:`h5ml.Dataset.read_stats`): ``via="map"`` for a copy out of the memory
map, ``via="hdf5"`` for a call into HDF5.
"""

from __future__ import annotations

import multiprocessing
import os
import pickle
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import pytest

import h5ml
from _files import Bytes, Dense, Ragged, write_file
from h5ml.errors import InvalidFileError
from h5ml.reader import ReadEvent
from h5ml.reader import direct as direct_module
from h5ml.reader.direct import direct_rows
from h5ml.reader.file_map import open_file_map

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


def _via(reads: list[ReadEvent], path: str) -> set[str]:
    return {r.via for r in reads if r.hdf5_path == path}


def test_direct_path_is_used_for_unfiltered_data_only(tmp_path: Path) -> None:
    """§7.3: unfiltered chunked and contiguous rows come from the memory map (HDF5 is never asked); gzip never does."""
    for layout, compression in (("chunked", None), ("contiguous", None), ("gzip", "gzip")):
        path = tmp_path / f"{layout}.h5"
        src = _write(path, layout != "contiguous", compression)
        with h5ml.open(path) as ds:
            feat = ds["train"]["be"]
            with ds.read_stats.record() as reads:
                got = feat[[9, 3, 3, 49, 16]]
                assert np.array_equal(got, src["be"][[9, 3, 3, 49, 16]]) and got.dtype == np.dtype("=i4")
                assert np.array_equal(feat[10:20], src["be"][10:20])
            runs = [(r.start, r.stop) for r in reads if not r.gather]
            if layout == "chunked":  # one copy per chunk the slice touches (chunks of 8 rows)
                assert reads[0] == ReadEvent("/train/be", "map", 3, 50, 5, gather=True)
                assert runs == [(10, 16), (16, 20)] and _via(reads, "/train/be") == {"map"}
            elif layout == "contiguous":
                assert runs == [(10, 20)] and _via(reads, "/train/be") == {"map"}
            else:
                assert _via(reads, "/train/be") == {"hdf5"} and (10, 20) in runs
            assert ds.read_stats.hdf5_reads == (0 if compression is None else len(reads))


def test_runs_within_one_chunk_are_one_copy(tmp_path: Path) -> None:
    """§7.3: a span crossing chunk boundaries becomes one slice copy per chunk it touches."""
    path = tmp_path / "f.h5"
    src = _write(path, True)
    with h5ml.open(path) as ds, ds.read_stats.record() as reads:
        assert np.array_equal(ds["train"]["f"][5:N], src["f"][5:])
    assert reads == [
        ReadEvent("/train/f", "map", a, b, b - a) for a, b in [(5, 8), *((k, k + 8) for k in range(8, 48, 8)), (48, 50)]
    ]
    assert ds.read_stats.direct_copies == 7 and ds.read_stats.hdf5_reads == 0


@pytest.mark.parametrize("compression", [None, "gzip"], ids=["plain", "gzip"])
def test_a_batch_of_one_chunk_is_one_read(tmp_path: Path, compression: str | None) -> None:
    """§7.3/C01: 64 rows of one chunk, shuffled, with duplicates: one copy out of the map, or one HDF5 read."""
    x = np.arange(256 * 5, dtype=np.float64).reshape(256, 5)
    write_file(tmp_path / "c.h5", {"train": {"x": Dense(x, chunks=(128, 5), compression=compression)}})
    rows = np.random.default_rng(3).permutation(64) + 128
    rows[[5, 9]] = rows[0]  # duplicates
    for direct in (True, False):
        with h5ml.open(tmp_path / "c.h5", direct=direct) as ds:
            assert np.array_equal(ds["train"]["x"][rows], x[rows])
            stats = ds.read_stats
            mapped = direct and compression is None
            assert (stats.direct_copies, stats.hdf5_reads) == ((1, 0) if mapped else (0, 1))


def test_unallocated_chunks_are_refused_not_read_as_fill_values(tmp_path: Path) -> None:
    """SPEC §3.5.1-S1 (1.1): chunks never written are not in the file: the reader refuses the feature (E146)
    instead of returning HDF5's fill value as samples; the fully written features of the file still read."""
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
    with h5ml.open(path) as ds:
        with pytest.raises(InvalidFileError, match=r"/train/i declares shape .* but only 2 were ever written") as err:
            ds["train"]["i"][0]
        assert "E146" in str(err.value) and "(the first missing one starts at element (8,))" in str(err.value)
        assert err.value.hdf5_path == "/train/i"
        other = next(name for name in src if name != "i")
        assert np.array_equal(ds["train"][other][:], src[other])


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
        file_map = open_file_map(f)
        assert file_map is not None
        assert f["ext"].id.get_offset() is None
        assert direct_rows(f["ext"], np.dtype(np.int32), file_map) is None
        assert direct_rows(f["cols"], np.dtype(np.int32), file_map) is None
        assert direct_rows(f["plain"], np.dtype(np.int32), None) is None  # no map: nothing is read directly
        fast = direct_rows(f["plain"], np.dtype(np.int32), file_map)
        assert fast is not None
        out = np.empty((3, 4), dtype=np.int32)
        fast.read_into(out, 6, 9)
        assert np.array_equal(out, values[6:9])
        assert direct_rows(f["plain"], np.dtype(np.int64), file_map) is None  # not the stored type
    with h5py.File(path, "r+") as f:  # the map made above holds no lock: the file opens for writing
        assert open_file_map(f) is None
    data = file_map.data
    assert data is not None
    assert np.array_equal(data[fast.blocks[0] : fast.blocks[0] + values.nbytes].view(np.int32), values.ravel())
    file_map.close()
    assert file_map.closed and file_map.data is None
    with pytest.raises(ValueError, match="closed"):
        fast.read_into(out, 6, 9)


def test_ragged_and_bytes_values_read_through_the_map(tmp_path: Path) -> None:
    """§6.3/§6.6: unfiltered ragged and bytes values (and their offsets) come back as h5py stores them."""
    rng = np.random.default_rng(7)
    lengths = rng.integers(0, 6, size=N)
    ragged = [rng.integers(-9, 9, size=(int(k), 3)).astype(np.int16) for k in lengths]
    blobs = [bytes(rng.integers(0, 256, size=int(k) * 3, dtype=np.uint8)) for k in lengths]
    path = tmp_path / "f.h5"
    write_file(path, {"train": {"r": Ragged(ragged, chunk_rows=16), "b": Bytes(blobs, chunk_rows=16)}})
    with h5ml.open(path) as ds, ds.read_stats.record() as reads:
        feat_r, feat_b = ds["train"]["r"], ds["train"]["b"]
        got = feat_r[[4, 1, 4, 49]]
        for g, j in zip(got, [4, 1, 4, 49], strict=True):
            assert g.dtype == np.int16 and np.array_equal(g, ragged[j])
        assert feat_b[[7, 0, 7]] == [blobs[7], blobs[0], blobs[7]]
        assert feat_b[3:9] == blobs[3:9]
    assert _via(reads, "/train/r/values") == _via(reads, "/train/b/values") == {"map"}
    assert ds.read_stats.hdf5_reads == 0


def _read_in_child(ds: Any, queue: Any) -> None:
    values = ds["train"]["f"][[9, 2, 2, 48]]  # the feature inherited from the parent, its column built there
    queue.put((values, ds.read_stats.direct_copies, ds.read_stats.hdf5_reads))


def test_fork_and_pickle_read_the_same_values(tmp_path: Path) -> None:
    """C02: a forked child and an unpickled copy map the file again and read the same values through the map."""
    path = tmp_path / "f.h5"
    src = _write(path, True)
    with h5ml.open(path) as ds:
        feat = ds["train"]["f"]
        assert np.array_equal(feat[[1, 2]], src["f"][[1, 2]])  # maps the file in the parent
        assert ds.read_stats.direct_copies == 1
        ctx = multiprocessing.get_context("fork")
        queue = ctx.Queue()
        child = ctx.Process(target=_read_in_child, args=(ds, queue))
        child.start()
        got, copies, reads = queue.get(timeout=120)
        child.join(timeout=120)
        assert child.exitcode == 0
        assert np.array_equal(got, src["f"][[9, 2, 2, 48]])
        assert (copies, reads) == (1, 0)  # the child's own count, from zero: one copy out of its own map
        copy = pickle.loads(pickle.dumps(ds))
        with copy:
            assert np.array_equal(copy["train"]["f"][[9, 2, 2, 48]], src["f"][[9, 2, 2, 48]])
            assert (copy.read_stats.direct_copies, copy.read_stats.hdf5_reads) == (1, 0)
        assert np.array_equal(feat[5:7], src["f"][5:7])
        assert ds.read_stats.direct_copies == 2  # the parent's map still serves it


def test_take_copies_any_rows_in_any_order(tmp_path: Path) -> None:
    """§7.3/C01: rows in any order, with duplicates, across chunk boundaries, big-endian, land where asked."""
    path = tmp_path / "f.h5"
    src = _write(path, True)
    rows = np.array([49, 0, 1, 2, 8, 7, 7, 15, 16, 48, 47], dtype=np.int64)
    with h5py.File(path, "r") as f:
        file_map = open_file_map(f)
        for name in ("be", "bef", "u8"):
            fast = direct_rows(f[f"train/{name}"], src[name].dtype.newbyteorder("="), file_map)
            assert fast is not None
            out = fast.take(rows)
            assert out.dtype == src[name].dtype.newbyteorder("=") and out.dtype.isnative
            assert out.shape == (rows.shape[0], *src[name].shape[1:]) and out.flags.c_contiguous and out.flags.writeable
            assert np.array_equal(out, src[name][rows])
            assert fast.take(rows[:0]).shape == (0, *src[name].shape[1:])
        assert file_map is not None
        file_map.close()


# -- safety on every HDF5 build and every file (§7.3, §10.3) ------------------------------------------------


@pytest.mark.parametrize("chunked", [True, False], ids=["chunked", "contiguous"])
def test_without_chunk_iter_chunked_data_is_read_through_h5py(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunked: bool
) -> None:
    """§7.3: an HDF5 build without H5Dchunk_iter (HDF5 < 1.12.3) reads chunked data through h5py, same values.

    The capability is hidden as such a build has it: ``CHUNK_ITER`` false. Contiguous data needs no chunk
    index and is still mapped.
    """
    path = tmp_path / "f.h5"
    _write(path, chunked)
    patterns = [p for p in PATTERNS if not isinstance(p, int)]
    with h5ml.open(path) as ds:
        want = [[ds["train"][name][index] for index in patterns] for name in _source()]
    monkeypatch.setattr(direct_module, "CHUNK_ITER", False)
    with h5ml.open(path) as ds:
        got = [[ds["train"][name][index] for index in patterns] for name in _source()]
        stats = ds.read_stats
        # chunked: every read through h5py; contiguous: every read (single samples too) out of the map
        assert (stats.direct_copies == 0) == chunked and (stats.hdf5_reads > 0) == chunked
    for values, expected in zip(got, want, strict=True):
        for g, w in zip(values, expected, strict=True):
            _same(g, w)


_TRUNCATE = textwrap.dedent(
    """
    import os, sys
    import h5ml

    path, keep = sys.argv[1], int(sys.argv[2])
    with h5ml.open(path) as ds:
        feat = ds["train"]["f"]
        first = feat[[3, 1, 40]]  # maps the file and reads through the map
        assert ds.read_stats.direct_copies == 1
        os.truncate(path, keep)
        for request in ([3, 1, 40], slice(0, 50)):
            try:
                feat[request]
            except h5ml.InvalidFileError as exc:
                print("InvalidFileError:", exc)
            else:
                print("no error")
    print("alive")
    """
)


def test_a_file_truncated_under_its_map_raises_instead_of_crashing(tmp_path: Path) -> None:
    """§10.3: rows the file lost after it was mapped raise InvalidFileError (file, dataset, rows), not SIGBUS.

    A real file, really truncated (os.truncate) while open and mapped; run in a child process so that a
    regression (SIGBUS kills the process) fails this test instead of the test run.
    """
    path = tmp_path / "f.h5"
    _write(path, True)
    with h5py.File(path, "r") as f:
        first_chunk = min(info.byte_offset for info in _chunk_infos(f["train/f"]))
    keep = first_chunk + 16  # the file keeps its metadata and 16 bytes of the first chunk
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    result = subprocess.run(
        [sys.executable, "-c", _TRUNCATE, str(path), str(keep)], capture_output=True, text=True, env=env, timeout=120
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[-1] == "alive" and len(lines) == 3
    for line, rows in zip(lines[:2], ["3 rows from row 1 to row 40", "rows [0, 50)"], strict=True):
        assert line.startswith("InvalidFileError:"), line
        assert str(path) in line and "/train/f" in line and rows in line and "truncated" in line
        assert f"the file is now {keep} bytes" in line


def _chunk_infos(dset: h5py.Dataset) -> list[Any]:
    return [dset.id.get_chunk_info(i) for i in range(dset.id.get_num_chunks())]


def _mapped(path: Path) -> list[str]:
    """Lines of /proc/self/maps that map ``path`` (Linux): the process's memory maps of that file."""
    target = os.path.realpath(path)
    with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
        return [line for line in maps if line.rstrip("\n").endswith(" " + target)]


def _descriptors(path: Path) -> list[str]:
    """This process's open file descriptors on ``path`` (Linux)."""
    target = os.path.realpath(path)
    found = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{fd}") == target:
                found.append(fd)
        except OSError:
            continue
    return found


def test_close_unmaps_the_file(tmp_path: Path) -> None:
    """§7.3: Dataset.close() unmaps the file and closes the map's descriptor; other datasets of the file keep theirs.

    Observed through the operating system where it shows maps (Linux ``/proc/self/maps`` and
    ``/proc/self/fd``), and everywhere through the public ``Dataset.file_map()`` and ``FileMap.closed``.
    """
    proc = os.path.exists("/proc/self/maps")
    path = tmp_path / "f.h5"
    src = _write(path, True)
    assert not proc or _mapped(path) == []
    first = h5ml.open(path)
    second = h5ml.open(path)
    assert np.array_equal(first["train"]["f"][[3, 1]], src["f"][[3, 1]])
    assert first.read_stats.direct_copies == 1
    assert not proc or len(_mapped(path)) == 1
    assert np.array_equal(second["train"]["i"][[3, 1]], src["i"][[3, 1]])
    assert not proc or len(_mapped(path)) == 2  # each dataset maps the file for itself
    maps = first.file_map(), second.file_map()
    assert maps[0] is not None and maps[1] is not None and maps[0] is not maps[1]
    first.close()
    assert maps[0].closed and not maps[1].closed
    assert not proc or len(_mapped(path)) == 1
    assert np.array_equal(second["train"]["f"][[4, 0]], src["f"][[4, 0]])  # the other map still serves
    second.close()
    assert maps[1].closed
    assert not proc or (_mapped(path) == [] and _descriptors(path) == [])
    with pytest.raises(ValueError, match="closed"):
        first["train"]
    with pytest.raises(ValueError, match="closed"):
        first.file_map()
