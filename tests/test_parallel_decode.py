"""Compressed chunks decoded by h5ml (reader/codecs.py, compressed.py, decoded_cache.py), §3.5, §7.3, §10.3.

Real HDF5 files in tmp_path; every value is compared with h5py's own read of
the same file, and the decodes are counted by the real counter of the file's
cache of decoded chunks (``Dataset.file_map().decoded``).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import h5py
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import h5ml
from _files import Dense, write_file
from h5ml.errors import InvalidFileError
from h5ml.reader.codecs import DEFLATE, SHUFFLE, ZSTD, decodable, decode_chunk, unshuffle
from h5ml.reader.column import Column
from h5ml.reader.compressed import READ_AHEAD, CompressedRows
from h5ml.reader.file_map import open_file_map
from h5ml.reader.read_stats import ReadStats
from h5ml.sampling.orders import Sampler

DTYPES = ["i1", "u1", "<i2", ">i2", "<u2", "<i4", ">u4", "<i8", ">i8", "<u8", "<f2", ">f2", "<f4", ">f4", "<f8", ">f8"]


def _values(dtype: str, shape: tuple[int, ...], seed: int) -> np.ndarray:
    """Compressible but varied values of ``dtype`` (a smooth ramp plus noise, as in real data)."""
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape))
    base = np.cumsum(rng.integers(-3, 4, n)).astype(np.float64)
    dt = np.dtype(dtype)
    if dt.kind == "f":
        return (base / 7.0).astype(dt).reshape(shape)
    info = np.iinfo(dt)
    return np.clip(base, info.min, info.max).astype(dt).reshape(shape)


def _column(f: h5py.File, name: str) -> Column:
    node = f[name]
    file_map = open_file_map(f)
    dtype = node.dtype.newbyteorder("=")
    return Column(name, node, dtype, None, f.filename, ReadStats(), maps=lambda: file_map)


@given(
    dtype=st.sampled_from(DTYPES),
    rows=st.integers(1, 60),
    inner=st.sampled_from([(), (3,), (2, 5)]),
    chunk_rows=st.integers(1, 17),
    level=st.integers(0, 9),
    shuffle=st.booleans(),
    picks=st.lists(st.integers(0, 10_000), min_size=1, max_size=40),
    seed=st.integers(0, 3),
)
def test_decoded_reads_are_byte_identical_to_h5py(
    tmp_path_factory: pytest.TempPathFactory,
    dtype: str,
    rows: int,
    inner: tuple[int, ...],
    chunk_rows: int,
    level: int,
    shuffle: bool,
    picks: list[int],
    seed: int,
) -> None:
    """§3.5, §7.3: gzip 0-9, shuffle on/off, every integer and float dtype of §3.2 in both byte orders, partial
    edge chunks, random batches with duplicates: h5ml's own decode returns exactly h5py's values and bytes."""
    path = tmp_path_factory.mktemp("p") / "d.h5"
    values = _values(dtype, (rows, *inner), seed)
    with h5py.File(path, "w") as f:
        f.create_dataset(
            "x",
            data=values,
            chunks=(chunk_rows, *inner),
            maxshape=(None, *inner),  # chunks may be longer than the data: one partial chunk
            compression="gzip",
            compression_opts=level,
            shuffle=shuffle,
        )
    indices = np.array([p % rows for p in picks], dtype=np.int64)
    with h5py.File(path, "r") as f:
        column = _column(f, "x")
        assert column.decoded_rows() is not None  # the test is about h5ml's decode, not h5py's
        expected = f["x"][()]
        got, scalar = column.take(indices)
        want = expected[indices]
        assert not scalar and got.dtype == want.dtype.newbyteorder("=") and got.dtype.isnative
        assert got.shape == want.shape and got.tobytes() == want.astype(got.dtype).tobytes()
        start, stop = sorted((int(indices[0]), int(indices[-1]) + 1))
        assert column.read(start, stop).tobytes() == expected[start:stop].astype(got.dtype).tobytes()
        assert np.array_equal(column.sample(int(indices[0])), expected[int(indices[0])])


def test_zstd_is_decodable_only_with_its_codec_module() -> None:
    """§3.5: filter 32015 is one entry of the codec table; without h5ml.reader.zstd_codec it falls back to h5py."""
    present = importlib.util.find_spec("h5ml.reader.zstd_codec") is not None
    assert decodable([ZSTD]) is present and decodable([SHUFFLE, ZSTD]) is present
    assert decodable([SHUFFLE, DEFLATE]) and decodable([DEFLATE])
    assert not decodable([]) and not decodable([3, DEFLATE]) and not decodable([DEFLATE, 3])  # fletcher32


def test_unshuffle_undoes_hdf5_shuffle_and_keeps_trailing_bytes() -> None:
    """§3.5: byte planes back into values; bytes past the last whole value stay where they are, as in HDF5."""
    values = np.arange(6, dtype="<u4")
    planes = values.view(np.uint8).reshape(6, 4).T.tobytes()
    assert bytes(unshuffle(planes, 4)) == values.tobytes()
    assert bytes(unshuffle(planes + b"xy", 4)) == values.tobytes() + b"xy"


def test_a_stream_of_the_wrong_size_is_refused(tmp_path: Path) -> None:
    """§10.4: stored bytes that inflate to more or fewer bytes than one chunk are damaged, never padded or cut."""
    import zlib

    with pytest.raises(ValueError, match="inflate"):
        decode_chunk(zlib.compress(bytes(100)), (DEFLATE,), 0, 99, 1)
    with pytest.raises(ValueError, match="101"):
        decode_chunk(zlib.compress(bytes(100)), (DEFLATE,), 0, 101, 1)
    assert bytes(decode_chunk(bytes(8), (DEFLATE,), 1, 8, 1)) == bytes(8)  # mask bit: deflate was not applied


def _gzip_file(path: Path, n: int = 400) -> np.ndarray:
    """An h5ml file whose feature x (n, 6) float32 is stored in gzip chunks of 16 rows."""
    x = _values("<f4", (n, 6), 1)
    write_file(path, {"train": {"x": Dense(x, chunks=(16, 6), compression="gzip")}})
    return x


def test_each_chunk_is_decoded_once_per_batch_and_cached(tmp_path: Path) -> None:
    """§7.3: a batch in any order with duplicates decodes each chunk it touches once; the next batch over the
    same chunks decodes nothing (the cache); with chunk_cache_bytes=0 each batch decodes its chunks once."""
    x = _gzip_file(tmp_path / "g.h5")
    rows = np.array([150, 3, 40, 3, 47, 399, 33, 64, 17, 150], dtype=np.int64)
    chunks = len({int(r) // 16 for r in rows})
    with h5ml.open(tmp_path / "g.h5") as ds:
        cache = ds.file_map().decoded
        assert np.array_equal(ds["train"]["x"][rows], x[rows])
        assert cache.decodes == chunks == 6
        assert np.array_equal(ds["train"]["x"][rows[::-1]], x[rows[::-1]])
        assert cache.decodes == chunks and cache.hits >= chunks
    with h5ml.open(tmp_path / "g.h5", chunk_cache_bytes=0) as ds:
        cache = ds.file_map().decoded
        for k in range(3):
            assert np.array_equal(ds["train"]["x"][rows], x[rows])
            assert cache.decodes == chunks * (k + 1) and len(cache) == 0


@pytest.mark.parametrize("shuffle", ["chunk", "full"])
def test_an_epoch_decodes_each_chunk_once(tmp_path: Path, shuffle: str) -> None:
    """§7.3: with `chunk` shuffle each chunk is decoded once per window with a cache that holds one window; with
    `full` shuffle, once per epoch when the dataset fits the cache (chunk_cache_bytes)."""
    x = _gzip_file(tmp_path / "g.h5", n=800)
    num_chunks = 800 // 16
    chunk_bytes = 16 * 6 * 4
    capacity = 4 + READ_AHEAD + 1 if shuffle == "chunk" else num_chunks  # chunks the cache holds
    sampler = Sampler(800, 20, shuffle=shuffle, seed=5, chunk_rows=16, window_chunks=4)  # type: ignore[arg-type]
    with h5ml.open(tmp_path / "g.h5", chunk_cache_bytes=capacity * chunk_bytes) as ds:
        feature, cache = ds["train"]["x"], ds.file_map().decoded
        for batch in sampler.epoch_batches(0):
            assert np.array_equal(feature[batch], x[batch])
        assert cache.decodes == num_chunks  # each chunk once in the epoch
        for batch in sampler.epoch_batches(1):
            assert np.array_equal(feature[batch], x[batch])
        if shuffle == "full":
            assert cache.decodes == num_chunks  # all cached: none decoded again
        else:  # once per window: the chunks still cached from the last window of epoch 0 are not decoded again
            assert 2 * num_chunks - capacity <= cache.decodes <= 2 * num_chunks


def test_prefetch_decodes_the_next_batch_in_the_pool(tmp_path: Path) -> None:
    """§7.3: Column.prefetch starts the decodes of a batch's chunks; its read then decodes nothing more."""
    x = _gzip_file(tmp_path / "g.h5")
    rows = np.array([5, 100, 250, 399], dtype=np.int64)
    with h5ml.open(tmp_path / "g.h5") as ds:
        feature, cache = ds["train"]["x"], ds.file_map().decoded
        column = feature._column()
        assert column.prefetch(rows) == 4 and column.prefetch(rows) == 0  # in flight or cached: not started again
        assert np.array_equal(feature[rows], x[rows])
        assert cache.decodes == 4
    with h5ml.open(tmp_path / "g.h5", chunk_cache_bytes=0) as ds:
        assert ds["train"]["x"]._column().prefetch(rows) == 0  # nothing could keep them


def test_sequential_reads_decode_ahead(tmp_path: Path) -> None:
    """§7.3: a read that follows the last one starts decoding the next chunks; every chunk is still decoded once."""
    x = _gzip_file(tmp_path / "g.h5", n=800)
    with h5ml.open(tmp_path / "g.h5") as ds:
        feature, cache = ds["train"]["x"], ds.file_map().decoded
        assert np.array_equal(feature[0:24], x[0:24])  # chunks 0 and 1; then READ_AHEAD chunks are started
        decoded = feature._column().decoded_rows()
        assert decoded is not None and decoded.prefetch_chunks(list(range(2, 2 + READ_AHEAD))) == 0
        assert decoded.prefetch_chunks([2 + READ_AHEAD]) == 1  # the one after them was not
        for start in range(24, 800, 24):  # a batch of rows, as split.read(range) asks: the same read-ahead
            rows = np.arange(start, min(800, start + 24))
            assert np.array_equal(feature[rows], x[rows])
        assert cache.decodes == 50


def test_pipelines_h5ml_does_not_decode_are_read_by_h5py(tmp_path: Path) -> None:
    """§3.5: fletcher32 (or direct=False) keeps the h5py path, with the same values; nothing is decoded by h5ml."""
    x = _values("<i4", (100, 3), 2)
    with h5py.File(tmp_path / "f.h5", "w") as f:
        f.create_dataset("x", data=x, chunks=(7, 3), compression="gzip", fletcher32=True)
        f.create_dataset("y", data=x, chunks=(7, 3), compression="gzip")
    with h5py.File(tmp_path / "f.h5", "r") as f:
        column = _column(f, "x")
        assert column.decoded_rows() is None
        assert np.array_equal(column.take([5, 99, 5, 0])[0], x[[5, 99, 5, 0]])
        plain = Column("y", f["y"], np.dtype("=i4"), None, f.filename, ReadStats(), maps=None)
        assert plain.decoded_rows() is None
        assert np.array_equal(plain.take([50, 3, 3, 60])[0], x[[50, 3, 3, 60]])


def test_gapped_spans_through_h5py_return_the_requested_rows(tmp_path: Path) -> None:
    """§7.3: rows with short gaps become one span read by h5py; only the requested rows come back, in order."""
    x = _gzip_file(tmp_path / "g.h5")
    rows = [40, 33, 17, 47, 3, 33]
    with h5ml.open(tmp_path / "g.h5", direct=False) as ds, ds.read_stats.record() as reads:
        assert np.array_equal(ds["train"]["x"][rows], x[rows])
    assert [(r.start, r.stop) for r in reads] == [(3, 48)]


def test_a_damaged_chunk_names_the_file_the_dataset_and_the_chunk(tmp_path: Path) -> None:
    """§10.3: stored bytes that do not inflate raise InvalidFileError with the chunk and its rows, no values."""
    _gzip_file(tmp_path / "g.h5")
    with h5py.File(tmp_path / "g.h5", "r") as f:
        info = f["train/x"].id.get_chunk_info(2)
    with open(tmp_path / "g.h5", "r+b") as raw:
        raw.seek(info.byte_offset + 2)
        raw.write(b"\xff" * 16)
    with h5ml.open(tmp_path / "g.h5") as ds:
        assert ds["train"]["x"]._column().decoded_rows() is not None
        with pytest.raises(InvalidFileError, match=r"g\.h5: /train/x: chunk 2 \(rows \[32, 48\)\)"):
            ds["train"]["x"][[40, 1]]
        assert np.array_equal(ds["train"]["x"][[1]], _values("<f4", (400, 6), 1)[[1]])


def test_a_file_truncated_while_open_is_refused_not_crashed(tmp_path: Path) -> None:
    """§10.3: the file's size is checked before the map is read: InvalidFileError, not SIGBUS."""
    _gzip_file(tmp_path / "g.h5")
    size = (tmp_path / "g.h5").stat().st_size
    with h5ml.open(tmp_path / "g.h5") as ds:
        feature = ds["train"]["x"]
        feature[[0]]
        with open(tmp_path / "g.h5", "r+b") as raw:
            raw.truncate(size // 2)
        with pytest.raises(InvalidFileError, match="truncated"):
            feature[[399]]


def test_chunk_cache_bytes_is_checked() -> None:
    """h5ml.open: chunk_cache_bytes must be a byte count >= 0; the message names the parameter."""
    with pytest.raises(ValueError, match="chunk_cache_bytes must be an integer >= 0"):
        h5ml.open("missing.h5", chunk_cache_bytes=-1)


def test_verified_decoded_reads_check_the_stored_bytes_before_decoding(tmp_path: Path) -> None:
    """SPEC §8.4-R4 on the decoded path: verify=True hashes a chunk's stored bytes before h5ml inflates it; a damaged
    chunk raises ChecksumError and is never decoded, the other chunks read (shuffle + gzip, as h5ml.write stores)."""
    x = _values("<f4", (20000, 32), 3)  # 2.5 MB: chunks of about 1 MiB
    h5ml.write(tmp_path / "v.h5", {"train": {"x": x}}, compression="gzip")
    with h5py.File(tmp_path / "v.h5", "r") as f:
        dset = f["train/x"]
        assert dset.shuffle and dset.compression == "gzip"
        chunk_rows = int(dset.chunks[0])
        info = dset.id.get_chunk_info(1)
    with open(tmp_path / "v.h5", "r+b") as raw:
        raw.seek(info.byte_offset + info.size // 2)
        raw.write(b"\x00\x01\x02\x03")
    with h5ml.open(tmp_path / "v.h5", verify=True) as ds:
        feature, cache = ds["train"]["x"], ds.file_map().decoded
        assert feature._column().decoded_rows() is not None
        with pytest.raises(h5ml.ChecksumError, match="chunk 1"):
            feature[[chunk_rows + 1, 0]]
        assert cache.decodes == 0  # refused before any decode
        assert np.array_equal(feature[[0, 1]], x[[0, 1]])
        # The read of chunk 0 may start decoding the chunks after it ahead (READ_AHEAD), in the pool: chunk 0 is
        # decoded and kept, the damaged chunk 1 never is, however far the read-ahead has got.
        assert cache.decodes >= 1 and cache.cached(("/train/x", 0)) and not cache.cached(("/train/x", 1))
        with pytest.raises(h5ml.ChecksumError, match="chunk 1"):
            feature[[chunk_rows + 1]]
        assert not cache.cached(("/train/x", 1))


def test_zstd_chunks_decode_in_the_pool(tmp_path: Path) -> None:
    """§3.5: with the zstd codec installed, zstd chunks (filter 32015) are decoded by h5ml in the pool, many chunks
    of one batch at once (which crashed a shared zstandard decompressor), and return the values stored.

    The chunks are written as the HDF5 zstd filter stores them (one zstd frame of the whole chunk, edge chunks
    full-size) with zstandard and ``write_direct_chunk``, so that hdf5plugin is never imported here (it would
    register filters that tests of a missing filter rely on being absent).
    """
    pytest.importorskip("h5ml.reader.zstd_codec")
    zstandard = pytest.importorskip("zstandard")
    x = _values("<f4", (4000, 64), 4)
    chunk_rows = 256  # 16 chunks, the last one partial
    with h5py.File(tmp_path / "z.h5", "w") as f:
        dset = f.create_dataset(
            "x", shape=x.shape, dtype=x.dtype, chunks=(chunk_rows, 64), compression=32015, allow_unknown_filter=True
        )
        for start in range(0, 4000, chunk_rows):
            block = np.zeros((chunk_rows, 64), x.dtype)
            part = x[start : start + chunk_rows]
            block[: part.shape[0]] = part
            dset.id.write_direct_chunk((start, 0), zstandard.ZstdCompressor(level=3).compress(block.tobytes()))
    rows = np.random.default_rng(1).integers(0, 4000, 300)
    with h5py.File(tmp_path / "z.h5", "r") as f:
        column = _column(f, "x")
        decoded = column.decoded_rows()
        assert decoded is not None and decoded.filters == (32015,)
        for _ in range(5):
            decoded.cache.clear()
            assert np.array_equal(column.take(rows)[0], x[rows])


@pytest.mark.parametrize("level", [0, 4])
def test_a_sequential_batch_is_read_without_a_plan_with_the_plans_values_and_counts(
    tmp_path: Path, level: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """§7.3: a batch of consecutive rows (a sequential sampler's) skips the read plan: h5py's bytes, one read
    counted over the span the plan would read, each chunk decoded once, and the read-ahead started once per chunk."""
    path = tmp_path / "s.h5"
    values = _values("<f4", (300, 5), 1)
    with h5py.File(path, "w") as f:
        f.create_dataset("x", data=values, chunks=(32, 5), compression="gzip", compression_opts=level, shuffle=True)
    with h5py.File(path, "r") as f:
        column = _column(f, "x")
        decoded = column.decoded_rows()
        assert decoded is not None
        started: list[list[int]] = []
        prefetch = CompressedRows.prefetch_chunks
        monkeypatch.setattr(
            CompressedRows, "prefetch_chunks", lambda self, ks: started.append(ks) or prefetch(self, ks)
        )
        for start in range(0, 300, 20):
            rows = np.arange(start, min(300, start + 20), dtype=np.int64)
            plan = column.plan(rows)
            with column.stats.record() as events:
                got, scalar = column.take(rows)
            assert not scalar and got.tobytes() == values[start : start + 20].tobytes()
            assert [(e.start, e.stop, e.rows) for e in events] == [(a, b, b - a) for a, b in plan.spans]
        assert column.decoded_rows().cache.decodes == 10  # type: ignore[union-attr]
        assert [ks[0] for ks in started] == list(range(1, 11))  # one read-ahead per last chunk, not per batch


def test_a_look_ahead_asks_for_at_most_half_the_cache(tmp_path: Path) -> None:
    """§7.3: Column.prefetch starts at most half the decoded cache's budget, the chunks of the first rows first,
    so that decoding ahead never evicts the chunks being read; the rest is decoded when read, each once."""
    x = _gzip_file(tmp_path / "g.h5", n=800)
    chunk_bytes = 16 * 6 * 4
    rows = np.arange(799, 0, -16, dtype=np.int64)  # chunks 49, 48, ... in that order
    with h5ml.open(tmp_path / "g.h5", chunk_cache_bytes=6 * chunk_bytes) as ds:
        feature, cache = ds["train"]["x"], ds.file_map().decoded
        assert feature._column().prefetch(rows) == 3
        np.testing.assert_array_equal(feature[rows[:3]], x[rows[:3]])
        assert cache.decodes == 3 and cache.nbytes <= cache.budget
        assert ds["train"]["x"]._column().prefetch(rows[:3]) == 0  # the first rows' chunks were the ones started
