"""Conversion throughput of ``h5ml convert --dask`` with 1, 2 and 4 workers, beside the one-process conversion (issue 16).

Workload: an ImageFolder tree ``train/<photo>/<n>.png`` of N 64x64x3 PNG tiles
cut from the colour photographs bundled with scikit-learn and scikit-image
(``bench_compressed.photo_tiles``: real, compressible content), one class per
source photograph, converted with ``compression="gzip"``, ``mode="dense"``,
``size=(64, 64)``:

- ``single``: :func:`h5ml.ingest.convert_image_folder` in this process
  (``workers=1``, the default of ``h5ml convert``), one file;
- ``dask N``: :func:`h5ml.dask.convert_on_dask` on a running
  ``LocalCluster`` of N worker processes (one thread each, as ``--dask
  local:N`` starts them), ``samples_per_shard = N_tiles / 8`` (8 shards, so
  that 4 workers have two each). The cluster is started once before the
  runs; its start time is reported apart.

Every cell runs once per repetition, in a seeded random order within each
repetition (interleaved, so that a change in the machine's load hits every
cell alike); the medians are reported. CPU seconds are summed over this
process (``resource.getrusage``: the driver, and the whole conversion for
``single``) and the worker processes (``psutil`` on each worker's pid),
giving samples per CPU-second: the work a conversion costs, which the other
jobs on a shared machine do not change much, unlike its wall time. A
``LocalCluster`` runs its scheduler in this process, so the CPU of this
process includes the three schedulers (and their heartbeats with the idle
workers of the other cells): the Dask cells' CPU-seconds are upper bounds.

Read the figures with the machine in mind: with more worker processes than
cores (4 workers on 2 cores) the workers share the cores, so wall-clock
throughput cannot grow past the 2-worker figure and per-CPU-second figures
show the cost of the extra processes (task scheduling, the shards' fixed
costs). On a machine shared with other work (the 1-minute load average is
printed before and after) the ratios are noisy. The index fingerprint of
every Dask run is checked to be the same whatever the worker count.

Run::

    python benchmarks/bench_dask.py               # 2000 tiles, 3 repetitions; Markdown into results/latest/dask.md
    python benchmarks/bench_dask.py --smoke       # 48 tiles, 1 and 2 workers, 1 repetition (CI: runs, measures nothing)
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import psutil
from PIL import Image

from bench_compressed import photo_tiles
from h5ml.dask import convert_on_dask
from h5ml.ingest import convert_image_folder
from h5ml.ingest.dask.clusters import local_cluster

#: Worker counts of the Dask cells (``--smoke``: the first two).
WORKERS = (1, 2, 4)
#: Modules every worker imports before the first timed run (so that no cell pays the imports).
WARM_MODULES = ("h5ml.ingest.dask.tasks", "h5ml.ingest.images", "h5ml.ingest.images.decode", "PIL.PngImagePlugin")
#: Shards per conversion.
SHARDS = 8
#: Distinct photographs the tiles are labelled with (classes).
CLASSES = 7


def _folder(root: Path, n: int, seed: int) -> int:
    """Write n PNG tiles as ``root/train/photo<k>/<i>.png``; return the bytes written."""
    tiles = photo_tiles(n, seed)
    total = 0
    for i, tile in enumerate(tiles):
        folder = root / "train" / f"photo{i % CLASSES}"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{i:06d}.png"
        Image.fromarray(tile).save(path)
        total += path.stat().st_size
    return total


def _cpu_self() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _cpu_of(pids: list[int]) -> float:
    total = 0.0
    for pid in pids:
        times = psutil.Process(pid).cpu_times()
        total += times.user + times.system
    return total


def _run_cell(cell: str, root: Path, out: Path, clients: dict[str, Any], per_shard: int) -> dict[str, Any]:
    """One conversion: wall seconds, CPU seconds (this process + workers), and the index fingerprint."""
    options: dict[str, Any] = {"compression": "gzip", "mode": "dense", "size": (64, 64), "progress": False}
    client, pids = clients.get(cell, (None, []))
    cpu0, workers0, start = _cpu_self(), _cpu_of(pids), time.perf_counter()
    if client is None:
        report = convert_image_folder(root, out, **options)
        fingerprint = None
    else:
        report = convert_on_dask("images", root, out, client=client, samples_per_shard=per_shard, **options)
        fingerprint = json.loads(Path(report.output).read_text())["fingerprint"]
    seconds = time.perf_counter() - start
    cpu = _cpu_self() - cpu0 + _cpu_of(pids) - workers0
    return {"seconds": seconds, "cpu": cpu, "samples": report.total, "fingerprint": fingerprint}


def _warm(*modules: str) -> None:
    import importlib

    for module in modules:
        importlib.import_module(module)


def run(n: int, repeats: int, seed: int, worker_counts: tuple[int, ...] = WORKERS) -> dict[str, Any]:
    """Build the tile folder, start the clusters, run every cell ``repeats`` times interleaved; return the results."""
    load_before = os.getloadavg()[0]
    clusters, clients, starts = [], {}, {}
    with tempfile.TemporaryDirectory(prefix="h5ml-bench-dask-") as tmp:
        root = Path(tmp) / "tiles"
        source_bytes = _folder(root, n, seed)
        per_shard = max(1, -(-n // SHARDS))
        try:
            from distributed import Client

            for workers in worker_counts:
                begin = time.perf_counter()
                cluster = local_cluster(workers)
                client = Client(cluster, timeout=60)
                clusters.append((client, cluster))
                pids = list(client.run(os.getpid).values())
                client.run(_warm, *WARM_MODULES)
                starts[f"dask {workers}"] = time.perf_counter() - begin
                clients[f"dask {workers}"] = (client, pids)
            cells = ["single", *clients]
            samples: dict[str, list[dict[str, Any]]] = {cell: [] for cell in cells}
            order = random.Random(seed)
            for repeat in range(repeats):
                shuffled = cells[:]
                order.shuffle(shuffled)
                for cell in shuffled:
                    out = Path(tmp) / f"{cell.replace(' ', '-')}-{repeat}" / ("out.h5" if cell == "single" else "")
                    out.parent.mkdir(parents=True, exist_ok=True)
                    samples[cell].append(_run_cell(cell, root, out, clients, per_shard))
        finally:
            for client, cluster in clusters:
                client.close()
                cluster.close()
    fingerprints = {r["fingerprint"] for cell in samples if cell != "single" for r in samples[cell]}
    medians = {cell: statistics.median(r["seconds"] for r in runs) for cell, runs in samples.items()}
    cpu = {cell: statistics.median(r["cpu"] for r in runs) for cell, runs in samples.items()}
    rates = {cell: n / seconds for cell, seconds in medians.items()}
    per_cpu = {cell: n / max(cpu[cell], 1e-9) for cell in samples}
    return {
        "config": {
            "tiles": n,
            "tile_shape": [64, 64, 3],
            "source_png_bytes": source_bytes,
            "compression": "gzip",
            "samples_per_shard": per_shard,
            "shards": -(-n // per_shard),
            "repeats": repeats,
            "cpus": os.cpu_count(),
            "load_average_before_after": [round(load_before, 2), round(os.getloadavg()[0], 2)],
        },
        "median_seconds": {k: round(v, 4) for k, v in medians.items()},
        "samples_per_s": {k: round(v, 1) for k, v in rates.items()},
        "median_cpu_seconds": {k: round(v, 4) for k, v in cpu.items()},
        "samples_per_cpu_s": {k: round(v, 1) for k, v in per_cpu.items()},
        "ratios_to_single": {k: round(rates[k] / rates["single"], 3) for k in rates if k != "single"},
        "ratios_to_dask_1": {k: round(rates[k] / rates["dask 1"], 3) for k in rates if k.startswith("dask")},
        "cluster_start_seconds": {k: round(v, 2) for k, v in starts.items()},
        "same_index_fingerprint_for_every_worker_count": len(fingerprints) == 1,
        "note": (
            f"{os.cpu_count()} CPUs: with more worker processes than cores (4 workers on 2 cores) the workers share "
            "the cores, so samples/s cannot grow past the 2-worker figure; samples per CPU-second (this process "
            "plus every worker process) shows what the extra processes cost; this process's CPU includes the "
            "schedulers of the three LocalClusters, which run in it (and their heartbeats with 7 idle workers), so "
            "the Dask cells' CPU-seconds are upper bounds. Medians of interleaved runs on a shared machine: see the "
            "load average."
        ),
    }


def markdown(results: dict[str, Any]) -> str:
    """The results as a Markdown table, with the configuration and the caveat."""
    cfg = results["config"]
    lines = [
        "# bench_dask: `h5ml convert --dask` throughput (issue 16)",
        "",
        f"{cfg['tiles']} PNG tiles 64x64x3 of the bundled photographs, gzip, {cfg['shards']} shards of "
        f"{cfg['samples_per_shard']}; {cfg['cpus']} CPUs, load average {cfg['load_average_before_after'][0]} -> "
        f"{cfg['load_average_before_after'][1]}; medians of {cfg['repeats']} interleaved runs.",
        "",
        "| conversion | seconds | samples/s | CPU-s | samples per CPU-s | vs single | vs dask 1 |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for cell, seconds in results["median_seconds"].items():
        vs_single = results["ratios_to_single"].get(cell, 1.0)
        vs_one = results["ratios_to_dask_1"].get(cell, "")
        lines.append(
            f"| {cell} | {seconds:.2f} | {results['samples_per_s'][cell]:,.0f} | "
            f"{results['median_cpu_seconds'][cell]:.2f} | {results['samples_per_cpu_s'][cell]:,.0f} | "
            f"{vs_single:.2f}x | {f'{vs_one:.2f}x' if vs_one != '' else ''} |"
        )
    lines += [
        "",
        "Cluster start (not in the figures): "
        + ", ".join(f"{k} {v:.1f} s" for k, v in results["cluster_start_seconds"].items())
        + f". Same index fingerprint for every worker count: {results['same_index_fingerprint_for_every_worker_count']}.",
        "",
        results["note"],
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    """Parse the command line, run, print JSON, and write the Markdown table."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tiles", type=int, default=2000, help="PNG tiles in the folder")
    parser.add_argument("--repeats", type=int, default=3, help="interleaved runs of every cell (medians)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help="folder for dask.md and dask.json (default benchmarks/results/latest; none with --smoke)",
    )
    parser.add_argument("--smoke", action="store_true", help="tiny sizes: checks the benchmark runs, measures nothing")
    args = parser.parse_args()
    results = run(48, 1, args.seed, WORKERS[:2]) if args.smoke else run(args.tiles, args.repeats, args.seed)
    if not results["same_index_fingerprint_for_every_worker_count"]:
        raise SystemExit("the Dask conversions gave different index fingerprints: a defect (shard order?)")
    print(json.dumps(results, indent=2))
    out = args.out if args.out is not None else (None if args.smoke else Path(__file__).parent / "results" / "latest")
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        (out / "dask.md").write_text(markdown(results), encoding="utf-8")
        (out / "dask.json").write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
