"""Random-access read throughput of the reference reader beside plain h5py.

Workload (FACTS.md's image workload): N uint8 images of 64x64x3 plus int64
labels, read in batches of 64 random, unsorted indices, as a shuffled epoch
does. Four readers run side by side in one process on the same file:

- ``h5ml``: ``split.read(indices)`` (planned reads: unique rows, merged runs or
  whole chunks read once, returned in the order asked);
- ``h5py fancy``: what a careful h5py user writes: sort the indices, one fancy
  read, undo the sort (h5py refuses unsorted indices);
- ``h5py per row``: one ``dset[i]`` call per index;

Results are ratios to ``h5py fancy`` measured in the same run. Run::

    python benchmarks/bench_reader.py            # 20000 samples
    python benchmarks/bench_reader.py --smoke    # tiny, for CI
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import h5py
import numpy as np

import h5ml
from peers.workloads import image_tiles

BATCH = 64


def _build(path: Path, n: int, compression: str | None, seed: int) -> None:
    tiles = image_tiles(n, seed)  # real photographs: random bytes would not compress, and overstate gzip reads
    images, labels = tiles.x, tiles.y
    h5ml.write(path, {"train": {"image": images, "label": labels}}, metadata={"name": "bench"}, compression=compression)


def _time(fn: Callable[[np.ndarray], object], batches: list[np.ndarray], budget_s: float) -> float:
    """Return samples/s of ``fn`` over ``batches``, stopping after ``budget_s``."""
    done = 0
    start = time.perf_counter()
    for idx in batches:
        fn(idx)
        done += len(idx)
        if time.perf_counter() - start > budget_s:
            break
    return done / (time.perf_counter() - start)


def run(n: int, epochs_s: float, seed: int) -> dict[str, dict[str, float]]:
    """Measure every reader on an uncompressed and a gzip file; return samples/s."""
    rng = np.random.default_rng(seed)
    perm = rng.permutation(n)
    batches = [perm[i : i + BATCH] for i in range(0, n, BATCH)]
    results: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for compression in (None, "gzip"):
            path = Path(tmp) / f"bench-{compression}.h5"
            _build(path, n, compression, seed)
            row: dict[str, float] = {}
            # One reader at a time: HDF5 shares an open file (and its chunk
            # cache) between handles of one process, which would flatter h5py.
            with h5ml.open(path) as ds:
                split = ds["train"]
                row["h5ml"] = _time(lambda idx, split=split: split.read(idx, features=["image"]), batches, epochs_s)
            with h5py.File(path, "r") as f:
                dset = f["train/image"]

                def fancy(idx: np.ndarray, dset: h5py.Dataset = dset) -> np.ndarray:
                    order = np.argsort(idx)
                    out = dset[np.sort(idx)]
                    back = np.empty_like(out)
                    back[order] = out
                    return back

                row["h5py fancy"] = _time(fancy, batches, epochs_s)
            with h5py.File(path, "r") as f:
                dset = f["train/image"]
                row["h5py per row"] = _time(
                    lambda idx, dset=dset: np.stack([dset[int(i)] for i in idx]), batches, epochs_s
                )
            results["uncompressed" if compression is None else "gzip"] = row
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--samples", type=int, default=20000)
    parser.add_argument("--seconds", type=float, default=5.0, help="time budget per reader and file")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--smoke", action="store_true", help="tiny sizes: checks the benchmark runs, measures nothing")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    args = parser.parse_args()
    n, seconds = (512, 0.2) if args.smoke else (args.samples, args.seconds)
    results = run(n, seconds, args.seed)
    if args.json:
        print(json.dumps(results, indent=2))
        return
    print(f"random batches of {BATCH} from {n} images 64x64x3 uint8 (samples/s, ratio to h5py fancy)")
    for storage, row in results.items():
        base = row["h5py fancy"]
        for name, rate in row.items():
            print(f"  {storage:13s} {name:13s} {rate:12,.0f}  {rate / base:6.2f}x")


if __name__ == "__main__":
    main()
