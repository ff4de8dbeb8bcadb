"""The cost of verified reads (``h5ml.open(..., verify=True)``, SPEC §8.4) on the reader's workloads.

Workload (as ``bench_reader.py``): N uint8 images of 64x64x3 plus int64
labels, read whole epoch by epoch in batches of 64, on an uncompressed and a
gzip file: sequential batches (``split.read(slice)``) and shuffled ones
(``split.read(indices)`` of a permutation). Each epoch opens a new handle, so
that every chunk is verified in every epoch (a handle verifies a chunk once).
``verify=False`` and ``verify=True`` alternate in one run, each timed several
times, the best kept; the result is the ratio of their times (1.05: verified
reads take 5% longer). The file is in the page cache: this is the CPU cost of
hashing, the worst case; on a cold disk, reading dominates. Run::

    python benchmarks/bench_verify.py            # 8000 samples (about 100 MB per file)
    python benchmarks/bench_verify.py --smoke    # tiny, for CI
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np

import h5ml
from bench_reader import _build  # the same photo-tile file as the reader benchmark

BATCH = 64


def _epoch(path: Path, batches: list[slice] | list[np.ndarray], verify: bool) -> float:
    """Seconds to read every batch with a new handle."""
    start = time.perf_counter()
    with h5ml.open(path, verify=verify) as d:
        split = d["train"]
        for batch in batches:
            split.read(batch)
    return time.perf_counter() - start


def run(n: int, repeats: int, seed: int) -> dict[str, dict[str, float]]:
    """Time verify=False and verify=True on every workload; return seconds per epoch and their ratio."""
    rng = np.random.default_rng(seed)
    perm = rng.permutation(n)
    workloads: dict[str, tuple[str | None, list[slice] | list[np.ndarray]]] = {
        "uncompressed sequential": (None, [slice(i, min(n, i + BATCH)) for i in range(0, n, BATCH)]),
        "uncompressed shuffled": (None, [perm[i : i + BATCH] for i in range(0, n, BATCH)]),
        "gzip sequential": ("gzip", [slice(i, min(n, i + BATCH)) for i in range(0, n, BATCH)]),
        "gzip shuffled": ("gzip", [perm[i : i + BATCH] for i in range(0, n, BATCH)]),
    }
    results: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        files = {c: Path(tmp) / f"{c or 'raw'}.h5" for c in (None, "gzip")}
        for compression, path in files.items():
            _build(path, n, compression, seed)
        for name, (compression, batches) in workloads.items():
            path = files[compression]
            _epoch(path, batches, False)  # warm the page cache
            plain, checked = [], []
            for _ in range(repeats):
                plain.append(_epoch(path, batches, False))
                checked.append(_epoch(path, batches, True))
            best_plain, best_checked = min(plain), min(checked)
            results[name] = {
                "samples_per_s_verify_false": n / best_plain,
                "samples_per_s_verify_true": n / best_checked,
                "time_ratio_verify_true": best_checked / best_plain,
            }
    return results


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print a table (``--json`` for machine-readable output)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("-n", type=int, default=8000, help="samples (default 8000)")
    parser.add_argument("--repeats", type=int, default=5, help="epochs timed per setting (best kept)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--smoke", action="store_true", help="tiny sizes, for CI")
    parser.add_argument("--json", action="store_true", help="print JSON")
    args = parser.parse_args(argv)
    n, repeats = (512, 1) if args.smoke else (args.n, args.repeats)
    results = run(n, repeats, args.seed)
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    print(f"verified reads, {n} images of 64x64x3 uint8 + int64 labels, batches of {BATCH}, best of {repeats}")
    print(f"{'workload':<26}{'verify=False /s':>17}{'verify=True /s':>16}{'time ratio':>12}")
    for name, r in results.items():
        print(
            f"{name:<26}{r['samples_per_s_verify_false']:>17,.0f}{r['samples_per_s_verify_true']:>16,.0f}"
            f"{r['time_ratio_verify_true']:>12.3f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
