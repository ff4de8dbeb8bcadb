"""Whole gzip chunks compressed in threads and stored directly (h5ml.writer.compress.ChunkPool; §3.5, §6.7, §7, §8).

The writer byte-shuffles and deflates itself the chunks that one write fills
completely, in a pool of threads, and stores them with ``H5Dwrite_chunk``;
the rows around them go through HDF5. Files are read back with plain h5py,
zlib and Debian's h5dump, and compared with files that HDF5's own filters
wrote from the same values. Which chunks took the direct path is recorded by
wrapping :meth:`ChunkPool.write_chunks` (the wrapper calls it unchanged).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import subprocess
import sys
import threading
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import pytest

import h5ml
from h5ml.errors import WriterError
from h5ml.model.layout import infer_layout
from h5ml.model.values import FeatureSpec
from h5ml.writer.batches import Batch
from h5ml.writer.compress import ChunkPool, Deflate
from h5ml.writer.sinks import FeatureSink
from h5ml.writer.writer import Writer, write

SEED = 2024
H5DUMP = Path("/usr/bin/h5dump")
CHILD_TIMEOUT_S = 120
#: A row of 256 KiB: the writer gives such a dense feature 4 rows per 1 MiB chunk (§7.3).
ROW_BYTES = 256 << 10
CHUNK_ROWS = 4
DTYPES = ["uint8", "int16", "float32", "float64"]
GZIP: dict[str, Any] = {"compression": "gzip", "shuffle": True}

Calls = list[tuple[str, int, int]]
Rows = list[tuple[str, int, int]]


@pytest.fixture
def direct(monkeypatch: pytest.MonkeyPatch) -> Calls:
    """``(dataset, first row, rows)`` of every run of whole chunks the writer stores directly, in order."""
    calls: Calls = []
    original = ChunkPool.write_chunks

    def recorded(self: ChunkPool, ds: h5py.Dataset, first: int, data: np.ndarray, deflate: Deflate) -> None:
        calls.append((ds.name, first, int(data.shape[0])))
        original(self, ds, first, data, deflate)

    monkeypatch.setattr(ChunkPool, "write_chunks", recorded)
    return calls


@pytest.fixture
def through_hdf5(monkeypatch: pytest.MonkeyPatch) -> Rows:
    """``(dataset, first row, rows)`` of every write of gzip rows that HDF5's own filters compress."""
    calls: Rows = []
    original = h5py.Dataset.__setitem__

    def recorded(self: h5py.Dataset, key: Any, value: Any) -> None:
        if self.compression == "gzip" and isinstance(key, slice) and self.name.endswith(("/x", "/values")):
            calls.append((self.name, int(key.start), int(key.stop) - int(key.start)))
        original(self, key, value)

    monkeypatch.setattr(h5py.Dataset, "__setitem__", recorded)
    return calls


def rows(dtype: str, n: int, seed: int = SEED) -> np.ndarray:
    """``n`` rows of 256 KiB, shape ``(n, 64, k)``, that deflate compresses (and, for floats, NaN and -0.0)."""
    rng = np.random.default_rng(seed)
    k = ROW_BYTES // np.dtype(dtype).itemsize // 64
    if np.dtype(dtype).kind == "f":
        x = np.round(rng.standard_normal((n, 64, k)), 2).astype(dtype)
        x[0, 0, :3] = (np.nan, -0.0, np.inf)
        return x
    info = np.iinfo(dtype)
    walk = np.cumsum(rng.integers(-3, 4, (n, 64, k)), axis=2)  # smooth, like images and audio
    return np.clip(walk, info.min, info.max).astype(dtype)


def stored_chunks(ds: h5py.Dataset) -> dict[tuple[int, ...], tuple[int, bytes]]:
    """``{chunk offset: (filter mask, stored bytes)}`` of every chunk of ``ds``."""
    out = {}
    for i in range(ds.id.get_num_chunks()):
        offset = ds.id.get_chunk_info(i).chunk_offset
        out[offset] = ds.id.read_direct_chunk(offset)
    return out


def unfiltered(stored: bytes, itemsize: int, shuffled: bool) -> bytes:
    """The bytes of a chunk's elements: inflate with zlib, then undo HDF5's byte shuffle."""
    raw = np.frombuffer(zlib.decompress(stored), dtype=np.uint8)
    if shuffled and itemsize > 1:
        raw = raw.reshape(itemsize, -1).T.reshape(-1)  # shuffled: byte 0 of every element, then byte 1, ...
    return raw.tobytes()


def hdf5_reference(path: Path, values: np.ndarray, like: h5py.Dataset) -> Path:
    """``values`` written by HDF5's own filters, with the chunk shape, shuffle and level of ``like``."""
    with h5py.File(path, "w") as f:
        f.create_dataset(
            "x",
            data=values,
            chunks=like.chunks,
            compression="gzip",
            compression_opts=like.compression_opts,
            shuffle=like.shuffle,
        )
    return path


def assert_same_as_hdf5s(ours: h5py.Dataset, values: np.ndarray, tmp_path: Path) -> None:
    """Decoded values equal byte for byte; every chunk of ours inflates to the bytes of HDF5's chunk."""
    with h5py.File(hdf5_reference(tmp_path / f"ref{ours.name.replace('/', '-')}.h5", values, ours), "r") as f:
        ref = f["x"]
        assert ours[...].tobytes() == ref[...].tobytes() == values.tobytes()
        mine, theirs = stored_chunks(ours), stored_chunks(ref)
        assert mine.keys() == theirs.keys()
        for offset, (mask, data) in mine.items():
            assert mask == 0 and theirs[offset][0] == 0
            assert zlib.decompress(data) == zlib.decompress(theirs[offset][1])


def assert_valid(path: Path) -> None:
    """The deep validator finds no error and no warning (§9)."""
    report = h5ml.validate(path, deep=True)
    assert [(i.code, i.message) for i in report.issues if i.severity.value in ("error", "warning")] == []


METADATA = {"name": "gz", "license": "CC0-1.0", "description": "direct gzip chunks"}


# -- the chunks ------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
def test_direct_chunks_decode_as_hdf5s_own(tmp_path: Path, direct: Calls, dtype: str) -> None:
    """§3.5: whole chunks stored directly decode to the values, and inflate to the bytes HDF5's filters store."""
    x = rows(dtype, 5 * CHUNK_ROWS + 2)
    target = write(tmp_path / "d.h5", {"train": {"x": x}}, METADATA, compression="gzip")
    assert direct == [("/train/x", 0, 5 * CHUNK_ROWS)]  # the last 2 rows go through HDF5
    with h5py.File(target, "r") as f:
        ds = f["train/x"]
        assert ds.chunks == (CHUNK_ROWS, *x.shape[1:]) and ds.compression == "gzip"
        assert ds.shuffle == (x.dtype.itemsize > 1)
        assert_same_as_hdf5s(ds, x, tmp_path)
    assert_valid(target)


@pytest.mark.parametrize("dtype", DTYPES)
def test_stored_chunks_are_the_shuffled_and_deflated_rows(tmp_path: Path, dtype: str) -> None:
    """§3.5: each stored chunk, inflated with zlib and unshuffled, is the C-order bytes of its rows."""
    x = rows(dtype, 3 * CHUNK_ROWS)
    target = write(tmp_path / "d.h5", {"train": {"x": x}}, compression="gzip", compression_opts=7)
    with h5py.File(target, "r") as f:
        ds = f["train/x"]
        assert ds.compression_opts == 7
        chunks = stored_chunks(ds)
        assert sorted(chunks) == [(r, 0, 0) for r in range(0, 3 * CHUNK_ROWS, CHUNK_ROWS)]
        for (r, _, _), (mask, data) in chunks.items():
            assert mask == 0
            assert unfiltered(data, x.dtype.itemsize, ds.shuffle) == x[r : r + CHUNK_ROWS].tobytes()


def test_ragged_values_decode_as_hdf5s_own(tmp_path: Path, direct: Calls) -> None:
    """§3.5, §6.3: the values and offsets of ragged features (rows, and 1-D with shapes) take the direct path too."""
    rng = np.random.default_rng(SEED)
    wide = [np.round(rng.standard_normal((int(k), 1024)), 1).astype(np.float32) for k in rng.integers(0, 40, 60)]
    audio = [np.cumsum(rng.integers(-5, 6, int(k))).astype(np.int16) for k in rng.integers(20_000, 60_000, 40)]
    grids = [rng.integers(0, 9, (int(a), int(b))).astype(np.float64) for a, b in rng.integers(1, 200, (40, 2))]
    splits = {"train": {"wide": wide}, "test": {"audio": audio, "grid": grids}}
    target = write(tmp_path / "r.h5", splits, METADATA, compression="gzip")
    assert {name for name, _, _ in direct} == {"/train/wide/values", "/test/audio/values", "/test/grid/values"}
    with h5py.File(target, "r") as f:
        for split, name, samples in (("train", "wide", wide), ("test", "audio", audio), ("test", "grid", grids)):
            group = f[f"{split}/{name}"]
            flat = np.concatenate([s.reshape(-1, *group["values"].shape[1:]) for s in samples])
            assert_same_as_hdf5s(group["values"], flat, tmp_path)
            lengths = [s.shape[0] if name != "grid" else s.size for s in samples]
            assert group["offsets"][...].tolist() == np.concatenate([[0], np.cumsum(lengths)]).tolist()
        assert f["test/grid/shapes"][...].tolist() == [list(g.shape) for g in grids]
    assert_valid(target)


# -- chunk boundaries ------------------------------------------------------------------------


def test_batches_that_start_and_end_mid_chunk(tmp_path: Path, direct: Calls) -> None:
    """§7: only the chunks a write fills completely are stored directly; the rows around them go through HDF5."""
    x = rows("int16", 32)
    cuts = [0, 3, 13, 14, 21, 30, 32]
    target = tmp_path / "m.h5"
    with Writer(target, METADATA, compression="gzip") as w:
        for a, b in itertools.pairwise(cuts):
            w.append("train", {"x": x[a:b]})
            w.flush()  # each batch is one write: [0,3) [3,13) [13,14) [14,21) [21,30) [30,32)
    assert direct == [("/train/x", 4, 8), ("/train/x", 16, 4), ("/train/x", 24, 4)]
    with h5py.File(target, "r") as f:
        assert f["train/x"].chunks[0] == CHUNK_ROWS
        assert_same_as_hdf5s(f["train/x"], x, tmp_path)
    assert_valid(target)


def test_many_small_appends_are_joined_into_whole_chunks(tmp_path: Path, direct: Calls) -> None:
    """§7: one-sample appends buffered together fill whole chunks, stored directly, between explicit flushes."""
    x = rows("float32", 30)
    target = tmp_path / "s.h5"
    with Writer(target, compression="gzip") as w:
        for i in range(30):
            w.append_sample("train", {"x": x[i]})
            if i % 7 == 6:
                w.flush()  # writes [0,7) [7,14) [14,21) [21,28); close writes [28,30)
    assert direct == [("/train/x", 0, 4), ("/train/x", 8, 4), ("/train/x", 16, 4), ("/train/x", 24, 4)]
    with h5py.File(target, "r") as f:
        assert_same_as_hdf5s(f["train/x"], x, tmp_path)


def test_large_batches_are_written_as_they_are_small_ones_joined(tmp_path: Path, direct: Calls) -> None:
    """§7: batches of a whole chunk or more are written alone, the small ones between them together."""
    x = rows("uint8", 13)
    target = tmp_path / "j.h5"
    with Writer(target, compression="gzip") as w:
        for a, b in [(0, 5), (5, 6), (6, 7), (7, 13)]:
            w.append("train", {"x": x[a:b]})
    # one flush at close: [0,5) alone, [5,7) joined, [7,13) alone (final chunks: 4 rows, §7.3); row 4 waits
    # for rows 5-11 to fill chunk [4,8) and the next one, and row 12 goes through HDF5 when the file is finished
    assert direct == [("/train/x", 0, 4), ("/train/x", 4, 8)]
    with h5py.File(target, "r") as f:
        assert_same_as_hdf5s(f["train/x"], x, tmp_path)


def test_a_stream_of_small_batches_is_compressed_in_whole_chunks(
    tmp_path: Path, direct: Calls, through_hdf5: Rows
) -> None:
    """§7: between flushes the rows that do not fill a chunk wait for the next ones; only the file's last go to HDF5."""
    x = rows("int16", 4 * CHUNK_ROWS + 3)
    expected = x.copy()
    target = tmp_path / "stream.h5"
    with Writer(target, METADATA, compression="gzip") as w:
        w.add_split("train", expected_samples=len(x))  # chunk shapes settled: a flush every 4 MiB (16 rows)
        for a, b in itertools.pairwise([0, 3, 9, 10, 17, len(x)]):
            w.append("train", {"x": x[a:b]})
            x[a:b] = -1  # the writer copied what it keeps: changing the caller's array changes nothing
    # the flush at row 17 stores chunks [0,8) and [8,16) directly; row 16 waits, joins rows 17-18 at close, and
    # goes through HDF5 with them, since the file ends in the middle of that chunk
    assert direct == [("/train/x", 0, 8), ("/train/x", 8, 8)]
    assert through_hdf5 == [("/train/x", 16, 3)]
    with h5py.File(target, "r") as f:
        assert_same_as_hdf5s(f["train/x"], expected, tmp_path)
    assert_valid(target)


def test_appending_to_a_gzip_file_stores_whole_chunks_directly(tmp_path: Path, direct: Calls) -> None:
    """§3.5: in append mode the stored dataset's own filters decide; the result equals writing it all at once."""
    x = rows("float64", 19)
    target = write(tmp_path / "a.h5", {"train": {"x": x[:6]}}, METADATA, compression="gzip", compression_opts=2)
    direct.clear()
    with Writer(target, mode="a") as w:  # no compression argument: the file's datasets keep theirs
        w.append("train", {"x": x[6:]})
    assert direct == [("/train/x", 8, 8)]  # rows 6-7 complete chunk [4,8) through HDF5; 16-18 are a partial chunk
    once = write(tmp_path / "once.h5", {"train": {"x": x}}, METADATA)
    with h5py.File(target, "r") as f, h5py.File(once, "r") as g:
        assert f["train/x"].compression_opts == 2
        assert_same_as_hdf5s(f["train/x"], x, tmp_path)
        assert f["train/x"].attrs["fingerprint"] == g["train/x"].attrs["fingerprint"]
        assert f.attrs["fingerprint"] == g.attrs["fingerprint"]
    assert_valid(target)


def test_the_dataset_byte_order_is_kept(tmp_path: Path) -> None:
    """§3.5: chunks of a big-endian dataset are stored big-endian (values are converted before shuffling)."""
    x = np.arange(8 * 3 * 5, dtype="<i4").reshape(8 * 3, 5) * 1001 - 7
    with h5py.File(tmp_path / "b.h5", "w") as f:
        ds = f.create_dataset(
            "x", shape=(0, 5), maxshape=(None, 5), chunks=(8, 5), dtype=">i4", compression="gzip", shuffle=True
        )
        sink = FeatureSink("train", "x", infer_layout(x, FeatureSpec(), "x"), {}, "gzip", obj=ds)
        with ChunkPool(2) as pool:
            sink.write(Batch(x.shape[0], x), pool)
        assert ds[...].tolist() == x.tolist()
        for (r, _), (_, data) in stored_chunks(ds).items():
            assert unfiltered(data, 4, shuffled=True) == x[r : r + 8].astype(">i4").tobytes()


def test_deflate_applies_to_plain_shuffle_deflate_pipelines_only(tmp_path: Path) -> None:
    """§3.5: the writer compresses only [shuffle,] deflate chunks of whole rows; HDF5 writes every other dataset."""
    with h5py.File(tmp_path / "f.h5", "w") as f:

        def ds(name: str, dtype: Any = "<i2", shape: tuple[int, ...] = (0, 8), **kw: Any) -> h5py.Dataset:
            return f.create_dataset(name, shape=shape, maxshape=(None, *shape[1:]), dtype=dtype, **kw)

        chunks = {"chunks": (4, 8)}
        assert Deflate.of(ds("a", compression="gzip", shuffle=True, **chunks)) == Deflate(4, True)
        assert Deflate.of(ds("b", "u1", compression="gzip", compression_opts=9, **chunks)) == Deflate(9, False)
        assert Deflate.of(ds("c", "<f8", compression="gzip", compression_opts=1, **chunks)) == Deflate(1, False)
        assert Deflate.of(ds("plain", **chunks)) is None
        assert Deflate.of(ds("fletcher", compression="gzip", fletcher32=True, **chunks)) is None
        assert Deflate.of(ds("lzf", compression="lzf", **chunks)) is None
        assert Deflate.of(ds("shuffle-only", shuffle=True, **chunks)) is None
        assert Deflate.of(ds("split-rows", compression="gzip", chunks=(1, 4))) is None  # a chunk holds half a row
        enum = h5py.enum_dtype({"a": 0, "b": 1}, basetype="i1")
        assert Deflate.of(ds("enum", enum, compression="gzip", **chunks)) is None
        text = h5py.string_dtype("utf-8")
        assert Deflate.of(ds("text", text, shape=(0,), compression="gzip", chunks=(4,))) is None


# -- what does not depend on it ---------------------------------------------------------------


def test_fingerprints_and_statistics_do_not_depend_on_compression(tmp_path: Path) -> None:
    """§8.2, §6.7: gzip (chunks stored directly) and no compression give the same fingerprints and statistics."""
    rng = np.random.default_rng(SEED)
    splits = {
        "train": {
            "image": rows("uint8", 9),
            "wave": rows("int16", 9, seed=1),
            "z": rows("float64", 9, seed=2),
            "label": rng.integers(0, 10, 9),
        },
        "test": {"clip": [rng.integers(-99, 99, int(k)).astype(np.int16) for k in rng.integers(1, 400_000, 6)]},
    }
    gz = write(tmp_path / "gz.h5", splits, METADATA, compression="gzip")
    plain = write(tmp_path / "plain.h5", splits, METADATA)
    names = [("train", "image"), ("train", "wave"), ("train", "z"), ("train", "label"), ("test", "clip")]
    with h5py.File(gz, "r") as f, h5py.File(plain, "r") as g:
        assert f["train/image"].compression == "gzip" and g["train/image"].compression is None
        assert f.attrs["fingerprint"] == g.attrs["fingerprint"]
        for split, name in names:
            a, b = dict(f[split][name].attrs), dict(g[split][name].attrs)
            assert a == b, (split, name)
        # §8.2 by hand: sha256(header + "\n" + sha256(values little-endian, C order))
        wave = splits["train"]["wave"]
        header = {"dtype": "<i2", "encoding": "dense", "num_samples": 9, "sample_shape": list(wave.shape[1:])}
        head = json.dumps(header, sort_keys=True, separators=(",", ":")).encode()
        digest = hashlib.sha256(wave.astype("<i2").tobytes()).digest()
        assert f["train/wave"].attrs["fingerprint"] == "sha256:" + hashlib.sha256(head + b"\n" + digest).hexdigest()
        # §6.7: small integers give the exact statistics
        image = splits["train"]["image"].astype(np.int64)
        stats = f["train/image"].attrs
        assert (stats["stats_count"], stats["stats_min"], stats["stats_max"]) == (image.size, image.min(), image.max())
        assert stats["stats_mean"] == int(image.sum()) / image.size


def test_h5dump_reads_direct_chunks(tmp_path: Path) -> None:
    """§3.1, §3.5: Debian's h5dump (HDF5 1.10) decodes the chunks the writer stored directly."""
    if not H5DUMP.exists():
        if os.environ.get("CI"):
            pytest.fail("Debian's h5dump is missing in CI: scripts/test.sh installs hdf5-tools")
        pytest.skip("Debian's h5dump is not installed here (scripts/test.sh installs hdf5-tools)")
    x, z = rows("int16", 10), rows("float64", 10)
    target = write(tmp_path / "d.h5", {"train": {"x": x, "z": z}}, compression="gzip")
    for name, values in (("x", x), ("z", z)):
        out = tmp_path / f"{name}.bin"
        cmd = [str(H5DUMP), "-d", f"/train/{name}", "-b", "LE", "-o", str(out), str(target)]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=CHILD_TIMEOUT_S)
        assert done.returncode == 0, done.stderr
        assert out.read_bytes() == values.astype(values.dtype.newbyteorder("<")).tobytes()


# -- failures and threads ---------------------------------------------------------------------


def deflate_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("h5ml-deflate")]


@pytest.fixture
def no_stray_threads() -> Iterator[None]:
    assert deflate_threads() == []
    yield
    assert deflate_threads() == []


def test_a_failed_chunk_leaves_no_file_and_no_threads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_stray_threads: None
) -> None:
    """§4.4: if compressing a chunk fails, the error propagates, the target is untouched and the threads stop."""
    target = tmp_path / "t.h5"
    target.write_bytes(b"previous")
    original = Deflate.encode
    seen: list[int] = []
    lock = threading.Lock()

    def fail_third(self: Deflate, values: np.ndarray, dtype: np.dtype[Any]) -> bytes:
        with lock:
            seen.append(len(seen))
            if len(seen) == 3:
                raise MemoryError("no memory for chunk 3")
        return original(self, values, dtype)

    monkeypatch.setattr(Deflate, "encode", fail_third)
    with pytest.raises(MemoryError, match="chunk 3"):
        write(target, {"train": {"x": rows("int16", 6 * CHUNK_ROWS)}}, compression="gzip")
    assert target.read_bytes() == b"previous"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.h5"]


def test_a_given_pool_serves_every_flush_until_closed(tmp_path: Path, no_stray_threads: None) -> None:
    """A pool given to the sinks keeps its threads between writes; close() stops them, and a pool can restart."""
    x = rows("int16", 3 * CHUNK_ROWS)
    pool = ChunkPool(2)
    with h5py.File(tmp_path / "p.h5", "w") as f:
        ds = f.create_dataset(
            "x", shape=(0, *x.shape[1:]), maxshape=(None, *x.shape[1:]), chunks=(4, *x.shape[1:]), dtype="<i2"
        )
        sink = FeatureSink("train", "x", infer_layout(x, FeatureSpec(), "x"), {}, None, obj=ds)
        sink.write(Batch(4, x[:4]), pool)  # no filters: HDF5 writes it, no thread starts
        assert deflate_threads() == []
        gz = f.create_dataset("y", shape=ds.shape, maxshape=ds.maxshape, chunks=ds.chunks, dtype="<i2", **GZIP)
        sink = FeatureSink("train", "y", sink.layout, {}, "gzip", obj=gz)
        sink.write(Batch(8, x[:8]), pool)
        assert 1 <= len(deflate_threads()) <= 2
        pool.close()
        assert deflate_threads() == []
        sink.write(Batch(4, x[8:]), pool)  # used again: new threads
        pool.close()
        assert gz[...].tobytes() == x.tobytes()
    with pytest.raises(ValueError, match="threads"):
        ChunkPool(0)


def test_chunks_are_deflated_by_zlib_ng_and_the_standard_zlib_is_the_fallback(monkeypatch: pytest.MonkeyPatch) -> None:
    """§3.5: zlib-ng (a dependency) compresses the chunks; without it the standard library's zlib does, same format."""
    import h5ml.writer.compress as chunk_compression

    assert chunk_compression.DEFLATE_IMPLEMENTATION == "zlib-ng"
    x = rows("int16", CHUNK_ROWS)
    ours = Deflate(4, True).encode(x, x.dtype)
    monkeypatch.setitem(sys.modules, "zlib_ng", None)  # import zlib_ng now fails
    compress, name = chunk_compression._compressor()
    assert (compress, name) == (zlib.compress, "zlib")
    assert unfiltered(ours, 2, shuffled=True) == x.tobytes()
    assert zlib.decompress(compress(x.tobytes(), 4)) == x.tobytes()


def test_a_chunk_that_cannot_be_stored_discards_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_stray_threads: None
) -> None:
    """§4.4: storing a chunk fails (a full disk) in the background: that append or a later one raises, the writer
    discards the file, and every later call, close included, raises instead of finishing a file that lacks samples."""
    target = tmp_path / "full.h5"
    target.write_bytes(b"previous")
    original = ChunkPool._store_oldest
    stored = [0]

    def disk_full_at_third(self: ChunkPool) -> None:
        stored[0] += 1
        if stored[0] == 3:
            raise OSError(28, "No space left on device (injected)")
        original(self)

    monkeypatch.setattr(ChunkPool, "_store_oldest", disk_full_at_third)
    rng = np.random.default_rng(SEED)
    failures: list[tuple[int, str, str]] = []
    with pytest.raises(WriterError, match=r"writing samples failed earlier .*No space left.*target is unchanged"):
        with Writer(target, METADATA, compression="gzip") as w:
            w.add_split("train", expected_samples=40_000)
            for i in range(10):  # 4 MiB a batch: each is written at once (1 MiB chunks)
                try:
                    w.append("train", {"x": np.round(rng.standard_normal((4000, 256)), 1).astype("f4")})
                except (OSError, WriterError) as exc:  # the caller goes on as if only this batch was lost
                    failures.append((i, type(exc).__name__, str(exc)))
            first = failures[0][0]
            assert failures[0][1:] == ("OSError", "[Errno 28] No space left on device (injected)")
            assert [(i, kind) for i, kind, _ in failures[1:]] == [(i, "WriterError") for i in range(first + 1, 10)]
        # leaving the block closes the writer: it refuses to finish the file
    assert target.read_bytes() == b"previous"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["full.h5"]
