"""How long ``h5ml report`` takes as the file grows: it should stay flat (issue 17: a 5 GB file in seconds).

The report reads metadata, the class codes and offsets of every sample, the
first samples for previews and a bounded sample of rows for statistics
(:mod:`h5ml.tools.report.sample`), so its time should hardly depend on the
file's size. Workload: 64x64x3 uint8 tiles cut from the photographs bundled
with scikit-learn and scikit-image (real, compressible content), stored with
gzip as ``h5ml.write`` stores them, with a categorical label of 10 classes;
files of growing size (full run: about 50 MB, 500 MB and 3 GB of raw tiles;
the disk must have room for them, and they are deleted after), written in
batches. Each repetition reports every file once, in a seeded random order
(interleaved, so that the machine's load falls on all sizes alike), and the
median is taken; the JSON gives each size's median seconds, its ratio to the
smallest file's, and the load average beside them. On a shared machine the
seconds are noisy: compare the ratios of one run only.

Run::

    python benchmarks/bench_report.py            # three files up to about 3 GB; several minutes to write them
    python benchmarks/bench_report.py --smoke    # tiny, for CI; prints JSON like the full run
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

import h5ml
from bench_compressed import photo_tiles  # the same tiles as the compressed-read benchmark
from h5ml.tools.report import write_report

TILE_BYTES = 64 * 64 * 3
BATCH = 4096
CLASSES = [f"class {k}" for k in range(10)]


def _write(path: Path, n: int, seed: int) -> None:
    """``n`` photo tiles with labels, written batch by batch (never the whole file in memory)."""
    pool = photo_tiles(min(n, 20_000), seed)
    rng = np.random.default_rng(seed)
    with h5ml.Writer(path, {"name": path.stem, "license": "CC0-1.0", "description": "report benchmark"}) as w:
        w.add_split("train", expected_samples=n)
        w.add_feature("train", "image", encoding="dense", dtype="uint8", sample_shape=(64, 64, 3), compression="gzip")
        w.add_feature("train", "label", encoding="categorical", class_names=CLASSES, role="target")
        for start in range(0, n, BATCH):
            count = min(BATCH, n - start)
            rows = np.arange(start, start + count) % pool.shape[0]
            w.append("train", {"image": pool[rows], "label": rng.integers(0, len(CLASSES), count)})


def _time(path: Path, out: Path) -> float:
    start = time.perf_counter()
    write_report(path, out, overwrite=True)
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Write the files, time the report of each (interleaved repetitions), print and return the JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="tiny files, one repetition (CI)")
    parser.add_argument("--repeat", type=int, default=None, help="repetitions (default 3, smoke 1)")
    parser.add_argument("--dir", default=None, help="where to write the files (default: a temporary folder)")
    args = parser.parse_args(argv)
    sizes = [200, 2_000] if args.smoke else [4_000, 40_000, 250_000]
    repeat = args.repeat or (1 if args.smoke else 3)
    with tempfile.TemporaryDirectory(dir=args.dir, prefix="bench-report-") as tmp:
        folder = Path(tmp)
        files: dict[int, Path] = {}
        write_s: dict[int, float] = {}
        for n in sizes:
            files[n] = folder / f"tiles-{n}.h5"
            start = time.perf_counter()
            _write(files[n], n, seed=n)
            write_s[n] = time.perf_counter() - start
        seconds: dict[int, list[float]] = {n: [] for n in sizes}
        _time(files[sizes[0]], folder / "warmup.html")  # imports matplotlib and the reader once, untimed
        order = random.Random(17)
        for _ in range(repeat):
            for n in order.sample(sizes, len(sizes)):
                seconds[n].append(_time(files[n], folder / f"tiles-{n}.html"))
        rows = []
        smallest = statistics.median(seconds[sizes[0]])
        for n in sizes:
            median = statistics.median(seconds[n])
            rows.append(
                {
                    "samples": n,
                    "raw_bytes": n * TILE_BYTES,
                    "file_bytes": files[n].stat().st_size,
                    "page_bytes": (folder / f"tiles-{n}.html").stat().st_size,
                    "write_s": round(write_s[n], 2),
                    "report_s_median": round(median, 3),
                    "report_s_all": [round(s, 3) for s in seconds[n]],
                    "ratio_to_smallest": round(median / smallest, 2),
                }
            )
    result = {
        "benchmark": "report",
        "smoke": args.smoke,
        "repeat": repeat,
        "load_average": [round(v, 2) for v in os.getloadavg()],
        "files": rows,
        "note": "report seconds per file size; flat when ratio_to_smallest stays near 1 (shared machine: noisy)",
    }
    print(json.dumps(result, indent=2))
    return result


if __name__ == "__main__":
    main()
