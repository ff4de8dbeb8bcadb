"""h5ml beside every peer, in one run: the published benchmark of issue 15.

Workloads (real, compressible content, :mod:`peers.workloads`): photo tiles
(64x64x3 uint8), espeak-ng speech clips (ragged float32, 16000-64000
samples) and tabular rows (float32, 32 columns); stored uncompressed, gzip
and zstd. Orders ``sequential``, ``chunk``, ``full`` (h5ml's sampler, batch
64), raw batch reads and through the PyTorch DataLoader (0 and 2 workers,
h5ml's threads). Peers, each in its native format written from the same
arrays (:mod:`peers`): numpy memmap (the bound), plain h5py, Hugging Face
datasets, zarr v3, h5torch, WebDataset, MosaicML Streaming, LitData, and
the two tutorials' approaches. Every batch is validated against the source.
A peer whose package is missing is reported "not installed".

Run the full benchmark in the peers' environment (``benchmarks/peers_env.sh``
builds it; see benchmarks/README.md)::

    bash benchmarks/peers_env.sh
    PYTHONPATH=reference:adapters benchmarks/.venv-peers/bin/python benchmarks/bench_peers.py
    python benchmarks/bench_peers.py --smoke     # CI: tiny, seconds, test venv

Writes ``results.json``, ``results.md`` and ``results.png`` to ``--out``
(default ``benchmarks/results/``) and prints a JSON summary.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from peers import READERS
from peers.array_readers import MemmapReader
from peers.base import package_version
from peers.goals import compute_goals
from peers.growth import run_growth
from peers.hdf5_readers import H5MLReader, H5pyReader
from peers.loaders import LOADER_CONFIGS
from peers.raw import run_raw
from peers.report import write_json, write_markdown, write_plot
from peers.timing import load_average
from peers.workloads import image_tiles, speech_clips, tabular_rows

__all__ = ["main"]

FULL = {"images": 20000, "speech": 3000, "tabular": 100000, "growth": (2000, 20000, 200000)}
SMOKE = {"images": 256, "speech": 130, "tabular": 2000, "growth": (256,)}
PACKAGES = (
    "h5ml",
    "numpy",
    "h5py",
    "torch",
    "datasets",
    "zarr",
    "h5torch",
    "webdataset",
    "mosaicml-streaming",
    "litdata",
    "hdf5plugin",
    "deflate",
    "isal",
    "zstandard",
    "keras",
    "matplotlib",
)


def _versions() -> dict[str, Any]:
    out: dict[str, Any] = {p: package_version(p) for p in PACKAGES}
    out["python"] = platform.python_version()
    try:
        import h5py

        out["hdf5"] = h5py.version.hdf5_version
    except ImportError:
        pass
    return out


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Run every workload, storage and reader; write the outputs; return the summary."""
    sizes = SMOKE if args.smoke else FULL
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    meta: dict[str, Any] = {
        "mode": "smoke" if args.smoke else "full",
        "cpus": os.cpu_count(),
        "load_before": load_average(),
        "repetitions": args.repetitions,
        "cell_seconds": args.cell_seconds,
        "seed": args.seed,
        "sizes": {k: v for k, v in sizes.items()},
        "versions": _versions(),
        "executable": sys.executable,
    }
    print(f"bench_peers: load {meta['load_before']}, versions {json.dumps(meta['versions'])}", file=sys.stderr)
    cells: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="bench_peers-", dir=args.work_dir) as tmp:
        work = Path(tmp)
        plan = [
            ("images", lambda: image_tiles(sizes["images"], args.seed), (None, "gzip", "zstd")),
            ("speech", lambda: speech_clips(sizes["speech"], args.seed), (None, "gzip")),
            ("tabular", lambda: tabular_rows(sizes["tabular"], args.seed), (None, "gzip")),
        ]
        for name, make, storages in plan:
            if args.workloads and name not in args.workloads:
                continue
            try:
                workload = make()
            except RuntimeError as exc:  # espeak-ng missing: the workload is reported, the run goes on
                print(f"bench_peers: {name} skipped: {exc}", file=sys.stderr)
                cells += [
                    {"workload": name, "storage": s or "none", "order": o, "path": "raw", "reader": "h5ml"}
                    | {"status": f"n/a: {exc}", "samples_per_s": None}
                    for s in storages
                    for o in ("sequential", "chunk", "full")
                ]
                continue
            for storage in storages:
                wanted = not args.no_loaders and (storage is None or name == "images") and name != "tabular"
                wanted = wanted and storage in (None, "gzip")
                # Smoke: no worker processes (their start-up alone takes seconds).
                loaders = [c for c in LOADER_CONFIGS if not (args.smoke and c[1])] if wanted else []
                print(f"bench_peers: {name} / {storage or 'none'} (load {load_average()})", file=sys.stderr)
                cells += run_raw(
                    READERS,
                    workload,
                    storage,
                    work / f"{name}-{storage}",
                    args.repetitions,
                    args.cell_seconds,
                    args.seed,
                    loaders=loaders,
                )
                write_json(out / "results.json", meta | {"partial": True}, cells, [])  # kept if the run stops
            del workload
        if not args.no_growth:
            print(f"bench_peers: cost growth (load {load_average()})", file=sys.stderr)
            growth_readers = (MemmapReader, H5MLReader, H5pyReader)
            cells += run_growth(growth_readers, sizes["growth"], work, args.repetitions, args.cell_seconds, args.seed)
    goals = compute_goals(cells)
    meta["load_after"] = load_average()
    meta["wall_seconds"] = round(time.perf_counter() - started, 1)
    meta["finished"] = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    write_json(out / "results.json", meta, cells, goals)
    write_markdown(out / "results.md", meta, cells, goals)
    note = write_plot(out / "results.png", cells)
    wrong = [c for c in cells if str(c["status"]).startswith(("wrong data", "error"))]
    return {
        "out": str(out),
        "mode": meta["mode"],
        "wall_seconds": meta["wall_seconds"],
        "load_before": meta["load_before"],
        "load_after": meta["load_after"],
        "plot": note or str(out / "results.png"),
        "goals": [{"goal": g["goal"], "value": g["value"], "met": g["met"]} for g in goals],
        "failed_cells": [
            f"{c['workload']}/{c['storage']}/{c['path']}/{c['reader']}/{c.get('order')}: {c['status']}" for c in wrong
        ],
    }


def rewrite(path: Path) -> int:
    """Recompute the goals and rewrite ``results.md`` and ``results.png`` beside a ``results.json``."""
    data = json.loads(path.read_text())
    goals = compute_goals(data["cells"])
    write_json(path, data["meta"], data["cells"], goals)
    write_markdown(path.with_suffix(".md"), data["meta"], data["cells"], goals)
    note = write_plot(path.with_suffix(".png"), data["cells"])
    print(json.dumps({"out": str(path.parent), "plot": note or str(path.with_suffix(".png"))}))
    return 0


def main(argv: list[str] | None = None) -> int:
    """Parse the options, run, print the JSON summary; exit 0 (failed cells are reported, not fatal)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="tiny sizes, one repetition (CI; seconds)")
    parser.add_argument("--out", default=str(Path(__file__).resolve().parent / "results"), help="output folder")
    parser.add_argument("--cell-seconds", type=float, default=None, help="time cap of one run of one cell")
    parser.add_argument("--repetitions", type=int, default=None, help="interleaved repetitions (median)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workloads", nargs="*", choices=("images", "speech", "tabular"), help="only these")
    parser.add_argument("--no-loaders", action="store_true", help="skip the DataLoader paths")
    parser.add_argument("--no-growth", action="store_true", help="skip the cost-growth sizes")
    parser.add_argument("--work-dir", default=None, help="where the stored copies are written (deleted after)")
    parser.add_argument("--report", metavar="JSON", help="only rewrite the Markdown and plot of a results.json")
    args = parser.parse_args(argv)
    if args.report:
        return rewrite(Path(args.report))
    if args.cell_seconds is None:
        args.cell_seconds = 0.2 if args.smoke else 1.5
    if args.repetitions is None:
        args.repetitions = 1 if args.smoke else 3
    if args.smoke and args.out == parser.get_default("out"):
        args.out = str(Path(tempfile.gettempdir()) / "bench_peers-smoke")
    summary = run(args)
    print(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
