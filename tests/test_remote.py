"""Files at URLs: h5ml.open, validate and inspect of objects on a real S3 server (moto) on loopback.

Every test talks to moto's S3 server, started once for this module on a free
loopback port (:mod:`s3_server`), through a counting proxy: the request
bounds are counted on the wire, never by a mock of fsspec or s3fs.
"""

from __future__ import annotations

import gc
import io
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import pytest

import h5ml
from h5ml.model.remote import COALESCE_GAP_BYTES, RemoteFile, coalesce, collection_paused, is_url
from h5ml.model.shard_index import SplitEntry, index_fingerprint, is_index_path, load_index, shard_location
from h5ml.reader.direct import chunk_index
from h5ml.tools import cli
from s3_server import S3Server, time_limit

pytest.importorskip("s3fs")
pytest.importorskip("moto.server")


@pytest.fixture(autouse=True)
def _bounded() -> Iterator[None]:
    """Every test here ends within 300 s, even if a request to the server never returns."""
    with time_limit(300):
        yield


@pytest.fixture(scope="module")
def server() -> Iterator[S3Server]:
    with S3Server() as running:
        yield running


@pytest.fixture
def bucket(server: S3Server) -> str:
    return server.bucket()


def _tiles(n: int, seed: int = 0) -> np.ndarray:
    """Smooth, compressible 32x32x3 uint8 tiles (gradients and a few edges, like photographs; never noise)."""
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:32, 0:32]
    out = np.empty((n, 32, 32, 3), np.uint8)
    for i in range(n):
        a, b, c = rng.integers(0, 8, 3)
        base = (yy * a + xx * b + c * 16) % 256
        out[i] = np.stack([base, (base + 40) % 256, (255 - base)], axis=-1).astype(np.uint8)
    return out


def _write(path: Path, compression: str | None, n: int = 600, **options: Any) -> Path:
    rng = np.random.default_rng(3)
    lengths = rng.integers(0, 40, n)
    h5ml.write(
        path,
        {
            "train": {
                "image": _tiles(n),
                "score": rng.normal(size=(n, 3)).astype(np.float32),
                "wave": [np.arange(k, dtype=np.float32) * 0.5 for k in lengths],
                "text": [f"sample {i} " + "x" * int(i % 7) for i in range(n)],
                "label": h5ml.Categorical(rng.integers(0, 4, n), ["cat", "dog", "eel", "fox"]),
                "blob": [bytes([i % 251]) * int(i % 13) for i in range(n)],
            },
            "test": {"image": _tiles(50, 1), "score": rng.normal(size=(50, 3)).astype(np.float32)},
        },
        metadata={"name": "remote-test", "license": "CC0-1.0"},
        compression=compression,
        **options,
    )
    return path


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, np.ndarray) and a.dtype == object:
        return isinstance(b, np.ndarray) and b.dtype == object and _same(a.tolist(), b.tolist())
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
    return bool(a == b) and type(a) is type(b)


def _run(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = cli.run(list(args), out, err)
    return code, out.getvalue(), err.getvalue()


def _flags(server: S3Server, key: str | None = None) -> list[str]:
    key = server.KEY if key is None else key
    pairs = [f"key={key}", f"secret={server.SECRET}", f"endpoint_url={server.endpoint}"]
    return [arg for pair in pairs for arg in ("--storage-option", pair)]


def test_is_url_tells_urls_from_paths() -> None:
    assert is_url("s3://b/k.h5") and is_url("memory://x.h5") and is_url("https://h/x.h5")
    assert not is_url("/tmp/x.h5") and not is_url("x.h5") and not is_url("C://x.h5") and not is_url(Path("/a"))


def test_coalesce_merges_neighbours_within_the_gap() -> None:
    assert coalesce([(100, 200), (0, 50), (240, 300)], 40) == [(0, 50), (100, 300)]
    assert coalesce([(0, 10), (5, 8), (30, 40)], 0) == [(0, 10), (30, 40)]


@pytest.mark.parametrize("compression", [None, "gzip"])
def test_every_split_reads_as_the_local_file(
    server: S3Server, bucket: str, tmp_path: Path, compression: str | None
) -> None:
    """Dense, ragged, string, categorical and bytes features, uncompressed and gzip: byte-identical to local reads."""
    local = _write(tmp_path / "ds.h5", compression)
    url = server.upload(local, f"s3://{bucket}/ds.h5")
    order = np.random.default_rng(5).permutation(600)[:97]
    with h5ml.open(local) as near, h5ml.open(url, storage_options=server.storage_options) as far:
        assert list(far.splits) == list(near.splits) and far.attrs == near.attrs
        assert far.fingerprint == near.fingerprint and far.path == url
        for name in near.splits:
            assert far[name].num_samples == near[name].num_samples
            assert _same(far[name].read(slice(None)), near[name].read(slice(None)))
        assert _same(far["train"].read(order), near["train"].read(order))
        assert _same(far["train"].read(int(order[0])), near["train"].read(int(order[0])))
        assert far.transfer_stats.requests > 0 and far.transfer_stats.bytes > 0


def _runs(local: Path, dataset: str, rows: np.ndarray) -> tuple[int, int, int]:
    """(coalesced runs, bytes of the runs, stored bytes of the needed chunks) of ``rows``, from the local file."""
    with h5py.File(local, "r") as f:
        node = f[dataset]
        chunk_rows = int(node.chunks[0])
        index = chunk_index(node.id, int(node.shape[0]), chunk_rows)
    assert index is not None
    needed = sorted({int(r) // chunk_rows for r in rows})
    ranges = [(index[k][0], index[k][0] + index[k][1]) for k in needed]
    merged = coalesce(ranges, COALESCE_GAP_BYTES)
    return len(merged), sum(b - a for a, b in merged), sum(b - a for a, b in ranges)


@pytest.mark.parametrize("compression", [None, "gzip"])
def test_a_shuffled_batch_fetches_only_its_chunks(
    server: S3Server, bucket: str, tmp_path: Path, compression: str | None
) -> None:
    """At most one range request per run of coalesced chunks, and no byte beyond those runs (counted on the wire)."""
    local = _write(tmp_path / "big.h5", compression, n=6000)
    url = server.upload(local, f"s3://{bucket}/big.h5")
    with h5py.File(local, "r") as f:
        per = int(f["train/image"].chunks[0])
    count = -(-6000 // per)
    rng = np.random.default_rng(11)
    chunks = [1, 2, count // 3, 2 * count // 3, count - 2]  # 1 and 2 are neighbours: one run at least
    rows = rng.permutation(np.concatenate([k * per + rng.integers(0, per, 12) for k in chunks]))
    with h5ml.open(url, storage_options=server.storage_options) as far, h5ml.open(local) as near:
        far["train"].read(0, ["image"])  # opens the dataset: its metadata and chunk index, chunk 0
        with server.counting() as log:
            batch = far["train"].read(rows, ["image"])
        assert _same(batch, near["train"].read(rows, ["image"]))
    runs, run_bytes, needed_bytes = _runs(local, "train/image", rows)
    assert runs < len(chunks)  # the test means something: neighbours were coalesced
    ranges = log.ranges()  # a read botocore retried (a timeout on a loaded machine) is one range, counted once
    assert len(ranges) <= runs, log.requests
    assert needed_bytes <= sum(ranges.values()) <= run_bytes
    assert all(r.range.startswith("bytes=") for r in log.gets())  # range requests, never the whole object


def test_a_sequential_epoch_fetches_each_chunk_once(server: S3Server, bucket: str, tmp_path: Path) -> None:
    """An epoch in batches of 64 fetches every stored chunk once: no byte of image data twice, no read-ahead waste."""
    local = _write(tmp_path / "seq.h5", "gzip", n=3000)
    url = server.upload(local, f"s3://{bucket}/seq.h5")
    with h5py.File(local, "r") as f:
        node = f["train/image"]
        index = chunk_index(node.id, int(node.shape[0]), int(node.chunks[0]))
    assert index is not None
    stored = sum(size for _, size, _ in index)
    with h5ml.open(url, storage_options=server.storage_options) as far:
        split = far["train"]
        split.read(0, ["image"])
        far.transfer_stats.reset()
        for start in range(0, split.num_samples, 64):
            split.read(slice(start, start + 64), ["image"])
        fetched = far.transfer_stats
    assert fetched.metadata_requests == 0
    assert stored - index[0][1] <= fetched.bytes <= stored  # chunk 0 came with the first row


def test_no_garbage_collection_while_a_request_is_in_flight(
    server: S3Server, bucket: str, tmp_path: Path, monkeypatch: Any
) -> None:
    """Python's collector is held back during every request, under h5py's lock (open, metadata) and off it (chunks).

    A collection on fsspec's event-loop thread that frees an h5py object waits for h5py's lock, which the
    thread waiting for that request holds: a deadlock (h5py issue 2019), which hung a CI run after a Keras fit.
    """
    local = _write(tmp_path / "gc.h5", "gzip", n=3000)
    url = server.upload(local, f"s3://{bucket}/gc.h5")
    seen: list[tuple[bool, int]] = []  # (collector enabled, ranges) at each request
    real = RemoteFile._get

    def spy(self: RemoteFile, ranges: Any, metadata: bool) -> list[bytes]:
        fs = self.fs
        cat_ranges = fs.cat_ranges

        def watched(*args: Any, **kwargs: Any) -> Any:
            seen.append((gc.isenabled(), len(args[1])))
            return cat_ranges(*args, **kwargs)

        monkeypatch.setattr(fs, "cat_ranges", watched)
        try:
            return real(self, ranges, metadata)
        finally:
            monkeypatch.setattr(fs, "cat_ranges", cat_ranges)

    monkeypatch.setattr(RemoteFile, "_get", spy)
    assert gc.isenabled()
    with h5ml.open(url, storage_options=server.storage_options) as far, h5ml.open(local) as near:
        rows = np.random.default_rng(2).permutation(3000)[:200]
        assert _same(far["train"].read(rows, ["image", "wave"]), near["train"].read(rows, ["image", "wave"]))
    assert len(seen) >= 2  # the open (under h5py's lock) and the chunk fetches
    assert not any(enabled for enabled, _ in seen), seen
    assert gc.isenabled()  # given back after the last request


def test_collection_paused_nests_across_threads_and_keeps_a_disabled_collector() -> None:
    """The collector comes back when the last of several overlapping pauses ends, and only if it was enabled."""
    import threading

    inside, release = threading.Event(), threading.Event()

    def hold() -> None:
        with collection_paused():
            inside.set()
            release.wait(10)

    worker = threading.Thread(target=hold)
    with collection_paused():
        worker.start()
        assert inside.wait(10) and not gc.isenabled()
    assert not gc.isenabled()  # the other thread's request is still in flight
    release.set()
    worker.join(10)
    assert gc.isenabled()
    gc.disable()
    try:
        with collection_paused():
            pass
        assert not gc.isenabled()  # disabled before: stays disabled
    finally:
        gc.enable()


def test_opening_a_paged_file_takes_few_requests(server: S3Server, bucket: str, tmp_path: Path) -> None:
    """Paged aggregation (page_size=4 MiB) keeps the metadata in a few pages: h5ml.open makes at most 2 requests."""
    plain = _write(tmp_path / "plain.h5", "gzip", n=6000)
    paged = _write(tmp_path / "paged.h5", "gzip", n=6000, page_size=4 << 20)
    counts = {}
    for local in (plain, paged):
        url = server.upload(local, f"s3://{bucket}/{local.name}")
        with server.counting() as log, h5ml.open(url, storage_options=server.storage_options) as far:
            assert far["train"].num_samples == 6000
        counts[local.name] = len(log.gets())
    # measured: 2 requests for the paged file (its first 1 MiB, then one block of its second metadata page),
    # 4 for the same data without paging (2.3 MB: its metadata is spread between the chunks)
    assert counts["paged.h5"] <= 2
    assert counts["paged.h5"] <= counts["plain.h5"]


def test_paged_files_are_valid_and_read_by_hdf5_1_10(tmp_path: Path) -> None:
    """SPEC §3.1: a file written with page_size opens in the h5dump of HDF5 1.10 (Debian's 1.10.8) and validates."""
    import shutil
    import subprocess

    path = _write(tmp_path / "paged.h5", "gzip", n=200, page_size=1 << 20)
    with h5py.File(path, "r") as f:
        assert f.id.get_create_plist().get_file_space_strategy()[0] == h5py.h5f.FSPACE_STRATEGY_PAGE
        assert f.id.get_create_plist().get_file_space_page_size() == 1 << 20
    assert h5ml.validate(path).valid
    h5dump = shutil.which("h5dump")
    if h5dump is None:
        pytest.skip("h5dump is not installed")
    done = subprocess.run([h5dump, "-H", str(path)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("page_size", [0, 1000, 2048, True, "1MiB"])
def test_a_bad_page_size_is_refused(tmp_path: Path, page_size: Any) -> None:
    with pytest.raises(h5ml.WriterError, match="page_size must be None or a power of two"):
        h5ml.write(tmp_path / "x.h5", {"train": {"x": np.zeros((4, 2), np.float32)}}, page_size=page_size)
    assert not (tmp_path / "x.h5").exists()


def test_validate_and_inspect_a_url(server: S3Server, bucket: str, tmp_path: Path) -> None:
    local = _write(tmp_path / "ds.h5", "gzip")
    url = server.upload(local, f"s3://{bucket}/ds.h5")
    code, out, err = _run("validate", "--deep", "--format", "json", url, *_flags(server))
    assert code == 0, (out, err)
    assert '"valid": true' in out
    code, out, err = _run("inspect", "--format", "json", url, *_flags(server))
    assert code == 0 and err == ""
    assert '"num_samples": 600' in out and f'"file_bytes": {os.path.getsize(local)}' in out
    report = h5ml.validate(url, deep=True, timeout=120, storage_options=server.storage_options)
    assert report.valid and report.readable


def test_validate_finds_a_damaged_chunk_at_a_url(server: S3Server, bucket: str, tmp_path: Path) -> None:
    """Deep validation compares a URL's stored chunks with their checksums (E162), by range requests."""
    local = _write(tmp_path / "ds.h5", "gzip")
    with h5py.File(local, "r") as f:
        node = f["train/image"]
        offset, size, _ = chunk_index(node.id, int(node.shape[0]), int(node.chunks[0]))[1]  # type: ignore[index]
    data = bytearray(local.read_bytes())
    data[offset + size // 2] ^= 0xFF
    local.write_bytes(bytes(data))
    url = server.upload(local, f"s3://{bucket}/bad.h5")
    report = h5ml.validate(url, deep=True, storage_options=server.storage_options)
    assert "E162" in {issue.code for issue in report.issues}
    assert not report.valid


def test_credentials_from_the_environment(server: S3Server, bucket: str, tmp_path: Path, monkeypatch: Any) -> None:
    url = server.upload(_write(tmp_path / "ds.h5", None, n=50), f"s3://{bucket}/env.h5")
    for key, value in server.environment.items():
        monkeypatch.setenv(key, value)
    code, out, err = _run("validate", "-q", url)
    assert code == 0, (out, err)
    with h5ml.open(url) as far:
        assert far["train"].num_samples == 50


def test_a_missing_object_is_a_clear_error(server: S3Server, bucket: str) -> None:
    url = f"s3://{bucket}/nothing-here.h5"
    with pytest.raises(FileNotFoundError, match="no such object; check the bucket and key"):
        h5ml.open(url, storage_options=server.storage_options)
    code, out, err = _run("inspect", url, *_flags(server))
    assert code == 2 and "Traceback" not in err
    assert err.startswith(f"h5ml: error: {url}: no such object")
    code, out, err = _run("validate", "-q", url, *_flags(server))
    assert code == 2 and "E100" not in err and "UNREADABLE" in out


def test_refused_credentials_say_how_to_give_them(server: S3Server, bucket: str, tmp_path: Path) -> None:
    url = server.upload(_write(tmp_path / "ds.h5", None, n=20), f"s3://{bucket}/locked.h5")
    wrong = {**server.storage_options, "key": "not-the-key"}
    with pytest.raises(PermissionError, match=r"refused access .* storage_options=\(key, secret"):
        h5ml.open(url, storage_options=wrong)
    code, _out, err = _run("inspect", url, *_flags(server, key="not-the-key"))
    assert code == 2 and "Traceback" not in err
    assert "refused access" in err and "--storage-option KEY=VALUE" in err and "storage_options=" not in err


def test_storage_options_need_a_url(tmp_path: Path) -> None:
    local = _write(tmp_path / "ds.h5", None, n=10)
    with pytest.raises(ValueError, match="storage_options are for URLs"):
        h5ml.open(local, storage_options={"anon": True})
    code, _out, err = _run("inspect", str(local), "--storage-option", "anon=true")
    assert code == 2 and "--storage-option is for URLs" in err
    code, _out, err = _run("inspect", "s3://b/x.h5", "--storage-option", "novalue")
    assert code == 2 and "--storage-option takes KEY=VALUE" in err


def test_verify_and_zero_copy_are_refused_for_urls() -> None:
    with pytest.raises(ValueError, match="verify=True is not available for a file at a URL"):
        h5ml.open("memory://x.h5", verify=True)
    with pytest.raises(ValueError, match="zero_copy=True"):
        h5ml.open("memory://x.h5", zero_copy=True)


def test_memory_and_file_urls(tmp_path: Path) -> None:
    """Any fsspec URL: memory:// and file:// read as the local file does."""
    import fsspec

    local = _write(tmp_path / "ds.h5", "gzip", n=80)
    with fsspec.open("memory://h5ml-test/ds.h5", "wb") as out:
        out.write(local.read_bytes())
    with h5ml.open(local) as near:
        expected = near["train"].read(slice(None))
    for url in ("memory://h5ml-test/ds.h5", local.resolve().as_uri()):
        with h5ml.open(url) as far:
            assert _same(far["train"].read(slice(None)), expected)


def test_not_hdf5_at_a_url(server: S3Server, bucket: str, tmp_path: Path) -> None:
    text = tmp_path / "notes.h5"
    text.write_bytes(b"just text, not HDF5\n" * 100)
    url = server.upload(text, f"s3://{bucket}/notes.h5")
    with pytest.raises(h5ml.NotH5MLError, match="not an HDF5 file"):
        h5ml.open(url, storage_options=server.storage_options)
    report = h5ml.validate(url, storage_options=server.storage_options)
    assert [issue.code for issue in report.issues] == ["E100"] and "not an HDF5 file" in report.issues[0].message


def test_an_index_at_a_url(server: S3Server, bucket: str) -> None:
    """load_index reads an index through fsspec; shard locations are joined to its URL prefix (§12.1)."""
    index = {
        "format": "h5ml-index",
        "format_version": "1.1",
        "metadata": {"name": "x"},
        "splits": {
            "train": {
                "num_samples": 2,
                "features": {"x": {"encoding": "dense", "dtype": "<f4", "sample_shape": [2]}},
                "shards": [
                    {
                        "path": "train/train-00000.h5",
                        "num_samples": 2,
                        "fingerprint": "sha256:" + "0" * 64,
                        "size_bytes": 1,
                    }
                ],
            }
        },
    }
    index["fingerprint"] = index_fingerprint({"train": SplitEntry.model_validate(index["splits"]["train"])})
    fs = server.filesystem(counted=False)
    fs.pipe(f"{bucket}/ds/index.json", json.dumps(index).encode())
    assert is_index_path(f"s3://{bucket}/ds/index.json") and is_index_path(f"s3://{bucket}/ds/")
    assert not is_index_path(f"s3://{bucket}/ds/train/train-00000.h5")
    for where in (f"s3://{bucket}/ds/index.json", f"s3://{bucket}/ds/"):
        loaded, at = load_index(where, server.storage_options)
        assert at == f"s3://{bucket}/ds/index.json" and loaded.splits["train"].num_samples == 2
        assert shard_location(at, "train/train-00000.h5") == f"s3://{bucket}/ds/train/train-00000.h5"
    with pytest.raises(FileNotFoundError, match="no such object"):
        load_index(f"s3://{bucket}/none/index.json", server.storage_options)


def test_a_dataloader_with_two_workers_reads_a_url(
    server: S3Server, bucket: str, tmp_path: Path, monkeypatch: Any
) -> None:
    """Each DataLoader worker opens its own fsspec file (credentials from the environment); the same samples."""
    torch = pytest.importorskip("torch")
    from h5ml_torch import H5MLDataset

    local = _write(tmp_path / "ds.h5", "gzip", n=256)
    url = server.upload(local, f"s3://{bucket}/loader.h5")
    for key, value in server.environment.items():
        monkeypatch.setenv(key, value)
    dataset = H5MLDataset(url, "train", ["image", "score"])
    loader = torch.utils.data.DataLoader(dataset, batch_size=32, num_workers=2, timeout=120)
    images = torch.cat([batch["image"] for batch in loader]).numpy()
    with h5ml.open(local) as near:
        assert images.tobytes() == near["train"]["image"].read(slice(None)).tobytes()


def test_a_sharded_dataset_at_a_url(server: S3Server, bucket: str, tmp_path: Path) -> None:
    """h5ml.open(s3://.../ds/) reads the index and each shard through fsspec: the samples of the local copy (§12.5)."""
    from _shards import columns, write_sharded

    cols = columns(130)
    index = write_sharded(tmp_path / "ds", cols, [50, 50, 30])
    fs = server.filesystem(counted=False)
    fs.put(str(index.parent), f"{bucket}/ds", recursive=True)
    order = np.random.default_rng(2).permutation(130)
    with h5ml.open(index) as near, h5ml.open(f"s3://{bucket}/ds/", storage_options=server.storage_options) as far:
        assert far.fingerprint == near.fingerprint and far["train"].num_samples == 130
        assert _same(far["train"].read(order), near["train"].read(order))
    fs.rm(f"{bucket}/ds/train/train-00001.h5")
    with h5ml.open(f"s3://{bucket}/ds/index.json", storage_options=server.storage_options) as far:
        far["train"].read(0)
        with pytest.raises(h5ml.ShardIndexError, match=r"shard 1 of split 'train' .* is missing"):
            far["train"].read(60)
