"""Reads from object storage: requests and bytes to open a file and per batch, and epoch throughput (issue 16).

Workload: N photo tiles 64x64x3 uint8 (``peers.workloads.image_tiles``: real
photographs, so gzip compresses them as it would real data) plus int64 labels,
written by h5ml with gzip, and again with paged aggregation
(``page_size=4 MiB``), uploaded to moto's S3 server started on loopback
(``tests/s3_server.py``), whose counting proxy counts every request and byte.

Readers, side by side in one run:

- ``h5ml``: ``h5ml.open(url, storage_options=...)``; a batch fetches only the
  chunks that hold its rows, neighbours coalesced into one range request
  (``h5ml.reader.remote_rows``);
- ``h5py + fsspec default``: ``h5py.File(fs.open(key))`` with s3fs's default file
  settings (readahead cache, 50 MB blocks), batch rows sorted and read as one
  fancy selection;
- ``whole file``: what WebDataset and MosaicML Streaming do: fetch each shard
  whole (one request per file per epoch), then read locally.

Orders (batches of 64): ``sequential``; ``chunk`` (chunks in a random order,
rows shuffled within each chunk); ``full`` (one global permutation). Each
(reader, order) opens the file fresh and reads ``--batches`` batches.

Sharded copy (SPEC §12): the same tiles written by
``h5ml.Writer(OUTDIR, samples_per_shard=N/4, compression="gzip", page_size=1 MiB)``
(4 shards and ``index.json``), uploaded as a folder and read with
``h5ml.open("s3://bucket/sharded/")``: requests and bytes per batch in each
order (the index read and shard 0 opened first; the other shards are opened
as the batches reach them, and those openings are counted in the batches).

Epoch throughput: one full-shuffle epoch of h5ml (opening included) from the
S3 server beside the same from local disk, for the single file and for the
sharded copy, interleaved (``--repeats`` times), medians. The epochs use the
test server's ``storage_options`` without ``skip_instance_cache``, as a user
gives them: with it, each shard opened makes its own s3fs file system (a new
botocore client); measured on 300 tiles in 4 shards, the first full-shuffle
batch (which opens every shard) took 1.6 s with it and 0.43 s without. The machine
is shared, so the load average is printed beside the times: read them as ratios
measured side by side, with that caveat. Loopback S3 has almost no latency;
real object stores add tens of ms per request, which the request counts show.

Run::

    python benchmarks/bench_remote.py            # 8000 tiles, JSON to stdout, Markdown in benchmarks/results/latest/remote.md
    python benchmarks/bench_remote.py --smoke    # tiny, for CI
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import h5py
import numpy as np

import h5ml
from peers.workloads import image_tiles

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from s3_server import S3Server

BATCH = 64
#: Bytes of one sample as stored uncompressed: a 64x64x3 uint8 tile and an int64 label.
SAMPLE_BYTES = 64 * 64 * 3 + 8
RESULTS = Path(__file__).resolve().parent / "results" / "latest" / "remote.md"


def _orders(n: int, chunk_rows: int, seed: int) -> dict[str, list[np.ndarray]]:
    rng = np.random.default_rng(seed)
    sequential = np.arange(n)
    blocks = [np.arange(s, min(n, s + chunk_rows)) for s in range(0, n, chunk_rows)]
    chunked = np.concatenate([rng.permutation(blocks[k]) for k in rng.permutation(len(blocks))])
    full = rng.permutation(n)
    return {
        name: [order[i : i + BATCH] for i in range(0, n, BATCH)]
        for name, order in (("sequential", sequential), ("chunk", chunked), ("full", full))
    }


def _h5py_default(server: S3Server, url: str) -> tuple[Any, Any]:
    fs = server.filesystem()
    handle = fs.open(url.removeprefix("s3://"), "rb")
    return handle, h5py.File(handle, "r")


def _fancy(dset: Any, idx: np.ndarray) -> np.ndarray:
    order = np.argsort(idx)
    out = dset[np.sort(idx)]
    back = np.empty_like(out)
    back[order] = out
    return back


def _opening(server: S3Server, urls: dict[str, str]) -> dict[str, dict[str, int]]:
    """Requests and bytes to open each file and read its first sample."""
    found: dict[str, dict[str, int]] = {}
    for name, url in urls.items():
        with server.counting() as log, h5ml.open(url, storage_options=server.storage_options) as ds:
            ds["train"].read(0)
        found[f"h5ml, {name}"] = {"requests": len(log.gets()), "bytes": log.get_bytes()}
        with server.counting() as log:
            handle, f = _h5py_default(server, url)
            with f:
                f["train/image"][0]
                f["train/label"][0]
            handle.close()
        found[f"h5py + fsspec default, {name}"] = {"requests": len(log.gets()), "bytes": log.get_bytes()}
    return found


def _per_batch(
    server: S3Server, url: str, size: int, orders: dict[str, list[np.ndarray]], batches: int
) -> list[dict[str, Any]]:
    """Requests and bytes per batch of each reader in each order (the file opened fresh for each)."""
    rows: list[dict[str, Any]] = []
    sample_bytes = SAMPLE_BYTES
    for order, chosen in orders.items():
        chosen = chosen[:batches]
        count = len(chosen)
        rows.append(_h5ml_row(server, url, "h5ml", order, chosen))
        handle, f = _h5py_default(server, url)
        with f:
            f["train/image"][0]
            f["train/label"][0]
            with server.counting() as log:
                for idx in chosen:
                    _fancy(f["train/image"], idx)
                    _fancy(f["train/label"], idx)
        handle.close()
        rows.append(_row("h5py + fsspec default", order, log.gets(), count, sample_bytes))
        # whole file, as WebDataset / MosaicML Streaming fetch shards: one request per file per epoch
        epoch = -(-len(np.concatenate(orders[order])) // BATCH)
        rows.append(
            {
                "reader": "whole file",
                "order": order,
                "requests_per_batch": 1 / epoch,
                "bytes_per_batch": size / epoch,
                "sample_bytes_per_batch": BATCH * sample_bytes,
            }
        )
    return rows


def _h5ml_row(server: S3Server, url: str, reader: str, order: str, chosen: list[np.ndarray]) -> dict[str, Any]:
    """Requests and bytes per batch of ``h5ml.open(url)`` (a file, or a sharded dataset's prefix) in one order."""
    with h5ml.open(url, storage_options=server.storage_options) as ds:
        split = ds["train"]
        split.read(0)  # opening costs are the table above (for shards: the index and shard 0)
        with server.counting() as log:
            for idx in chosen:
                split.read(idx)
    return _row(reader, order, log.gets(), len(chosen), SAMPLE_BYTES)


def _row(reader: str, order: str, gets: list[Any], count: int, sample_bytes: int) -> dict[str, Any]:
    return {
        "reader": reader,
        "order": order,
        "requests_per_batch": len(gets) / count,
        "bytes_per_batch": sum(r.nbytes for r in gets) / count,
        "sample_bytes_per_batch": BATCH * sample_bytes,
    }


def _epoch(location: str | Path, options: dict[str, Any] | None, batches: list[np.ndarray]) -> float:
    """Samples/s of opening ``location`` and reading ``batches``: the opening counts, since a sharded dataset
    opens its shards as the batches reach them (lazily), a file before the first batch."""
    start = time.perf_counter()
    with h5ml.open(location, storage_options=options) as ds:
        read: Callable[[np.ndarray], object] = ds["train"].read
        for idx in batches:
            read(idx)
    return sum(len(b) for b in batches) / (time.perf_counter() - start)


def _throughput(
    server: S3Server, copies: dict[str, tuple[str, Path]], batches: list[np.ndarray], repeats: int
) -> dict[str, Any]:
    """Samples/s of one full-shuffle epoch of each copy (name -> (URL, local path)) from S3 and from local disk.

    Every reader once per repetition, in turn (interleaved), medians.
    """
    rates: dict[str, list[float]] = {}
    cached = {k: v for k, v in server.storage_options.items() if k != "skip_instance_cache"}  # as users give them
    for _ in range(repeats):
        for name, (url, local) in copies.items():
            for where, options in ((f"s3 (loopback), {name}", cached), (f"local disk, {name}", None)):
                rates.setdefault(where, []).append(_epoch(url if options else local, options, batches))
    return {name: statistics.median(values) for name, values in rates.items()} | {"load_average": os.getloadavg()}


def _write_sharded(folder: Path, tiles: Any, per_shard: int) -> None:
    """The tiles as a sharded dataset (gzip, 1 MiB pages), appended in batches of 500."""
    with h5ml.Writer(
        folder, {"name": "bench"}, samples_per_shard=per_shard, compression="gzip", page_size=1 << 20
    ) as writer:
        for start in range(0, len(tiles.x), 500):
            writer.append("train", {"image": tiles.x[start : start + 500], "label": tiles.y[start : start + 500]})


def run(n: int, batches: int, repeats: int, seed: int) -> dict[str, Any]:
    """Build the files, start the server, measure; return the results."""
    tiles = image_tiles(n, seed)
    results: dict[str, Any] = {"samples": n, "batch": BATCH, "load_average_start": os.getloadavg()}
    with tempfile.TemporaryDirectory() as tmp, S3Server() as server:
        bucket = server.bucket()
        local = {"gzip": Path(tmp) / "gzip.h5", "gzip, page_size=4 MiB": Path(tmp) / "paged.h5"}
        data = {"train": {"image": tiles.x, "label": tiles.y}}
        h5ml.write(local["gzip"], data, metadata={"name": "bench"}, compression="gzip")
        h5ml.write(
            local["gzip, page_size=4 MiB"], data, metadata={"name": "bench"}, compression="gzip", page_size=4 << 20
        )
        urls = {name: server.upload(path, f"s3://{bucket}/{path.name}") for name, path in local.items()}
        results["file_bytes"] = {name: path.stat().st_size for name, path in local.items()}
        results["open"] = _opening(server, urls)
        with h5py.File(local["gzip"], "r") as f:
            chunk_rows = int(f["train/image"].chunks[0])
        orders = _orders(n, chunk_rows, seed)
        results["chunk_rows"] = chunk_rows
        results["per_batch"] = _per_batch(server, urls["gzip"], local["gzip"].stat().st_size, orders, batches)
        sharded = Path(tmp) / "sharded"
        _write_sharded(sharded, tiles, -(-n // 4))
        server.filesystem(counted=False).put(str(sharded), f"{bucket}/sharded", recursive=True)
        sharded_url = f"s3://{bucket}/sharded/"
        results["sharded_bytes"] = sum(p.stat().st_size for p in sharded.rglob("*") if p.is_file())
        results["per_batch"] += [
            _h5ml_row(server, sharded_url, "h5ml, sharded (4 shards)", order, chosen[:batches])
            for order, chosen in orders.items()
        ]
        copies = {"one file": (urls["gzip"], local["gzip"]), "sharded": (sharded_url, sharded)}
        results["epoch"] = _throughput(server, copies, orders["full"], repeats)
    results["load_average_end"] = os.getloadavg()
    return results


def markdown(results: dict[str, Any]) -> str:
    """The results as Markdown tables."""
    lines = [
        f"# Reads from object storage (moto S3 on loopback), {results['samples']} photo tiles 64x64x3, gzip",
        "",
        f"Load average at start {results['load_average_start']}, at end {results['load_average_end']} (shared machine).",
        "",
        "| open + first sample | requests | bytes |",
        "|---|---:|---:|",
    ]
    lines += [f"| {name} | {v['requests']} | {v['bytes']:,} |" for name, v in results["open"].items()]
    lines += [
        "",
        f"File sizes: {', '.join(f'{k}: {v:,} B' for k, v in results['file_bytes'].items())}; "
        f"sharded copy (4 shards, 1 MiB pages, index): {results['sharded_bytes']:,} B.",
        "",
        f"| per batch of {results['batch']} | order | requests | bytes fetched | bytes of the samples |",
        "|---|---|---:|---:|---:|",
    ]
    lines += [
        f"| {r['reader']} | {r['order']} | {r['requests_per_batch']:.2f} | {r['bytes_per_batch']:,.0f} | "
        f"{r['sample_bytes_per_batch']:,} |"
        for r in results["per_batch"]
    ]
    epoch = results["epoch"]
    lines += [
        "",
        "| epoch, full shuffle (h5ml) | samples/s |",
        "|---|---:|",
        *(f"| {name} | {rate:,.0f} |" for name, rate in epoch.items() if name != "load_average"),
        "",
        f"Load average during the epochs: {epoch['load_average']}.",
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--samples", type=int, default=8000)
    parser.add_argument("--batches", type=int, default=20, help="batches per reader and order")
    parser.add_argument("--repeats", type=int, default=3, help="interleaved epochs per storage")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--smoke", action="store_true", help="tiny sizes: checks the benchmark runs, measures nothing")
    args = parser.parse_args()
    n, batches, repeats = (300, 2, 1) if args.smoke else (args.samples, args.batches, args.repeats)
    results = run(n, batches, repeats, args.seed)
    print(json.dumps(results, indent=2))
    if not args.smoke:
        RESULTS.write_text(markdown(results), encoding="utf-8")


if __name__ == "__main__":
    main()
