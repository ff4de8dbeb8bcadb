"""Throughput of ``h5ml.verify`` (every fingerprint recomputed, §8) with 1 thread and with N, side by side.

The workload: one split of float32 rows (1 KiB each: a smooth signal plus a
little noise, so that gzip shrinks it about 2x as it would real measurements)
and int64 labels, written by ``h5ml.write`` uncompressed and with gzip
(shuffle + deflate level 4, the writer's default). Each file is verified with
``--jobs`` 1, 2 and N (the CPU count) in turn, for ``--rounds`` rounds (so a
busy machine slows them alike); the best round counts. Results: decoded MB/s
(the bytes the fingerprints hash) and stored MB/s (the bytes read from the
file), and each speed-up over 1 job. Every run must give the same
fingerprints as the writer stored (``report.ok``) and the same report for
every ``jobs``: the benchmark stops otherwise. The file is in the page cache
after its first round: this measures decoding and hashing, not the disk.
Run::

    python benchmarks/bench_fingerprint.py            # 256 MiB of rows, 3 rounds
    python benchmarks/bench_fingerprint.py --smoke    # tiny, for CI: checks it runs
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

import h5ml

ROW = 256  # float32 values per row: 1 KiB


def _build(path: Path, rows: int, compression: str | None, seed: int) -> None:
    rng = np.random.default_rng(seed)
    t = np.linspace(0, 40 * np.pi, ROW, dtype=np.float32)
    signal = np.empty((rows, ROW), dtype=np.float32)
    for start in range(0, rows, 8192):
        stop = min(rows, start + 8192)
        phase = rng.uniform(0, 2 * np.pi, (stop - start, 1)).astype(np.float32)
        noise = rng.normal(0, 1e-3, (stop - start, ROW)).astype(np.float32)
        signal[start:stop] = np.round(np.sin(t + phase) + noise, 3)
    labels = rng.integers(0, 10, rows).astype(np.int64)
    h5ml.write(path, {"train": {"x": signal, "y": labels}}, metadata={"name": "bench"}, compression=compression)


def _signature(report: h5ml.VerifyReport) -> Any:
    return [(c.hdf5_path, c.status, c.actual) for c in report.features], report.file_actual


def run(rows: int, rounds: int, jobs_list: list[int], seed: int) -> dict[str, Any]:
    """Verify each file with each ``jobs`` for ``rounds`` rounds; return the best MB/s per storage and jobs."""
    results: dict[str, Any] = {}
    decoded = rows * (ROW * 4 + 8)
    with tempfile.TemporaryDirectory() as tmp:
        for compression in (None, "gzip"):
            name = "uncompressed" if compression is None else "gzip"
            path = Path(tmp) / f"{name}.h5"
            _build(path, rows, compression, seed)
            best: dict[int, float] = dict.fromkeys(jobs_list, float("inf"))
            signature = None
            stored = 0
            for _ in range(rounds):
                for jobs in jobs_list:
                    start = time.perf_counter()
                    report = h5ml.verify(path, jobs=jobs)
                    best[jobs] = min(best[jobs], time.perf_counter() - start)
                    if not report.ok:
                        raise SystemExit(f"{path}: verify did not agree with the writer's fingerprints (jobs={jobs})")
                    if signature is None:
                        signature, stored = _signature(report), report.stored_bytes
                    elif _signature(report) != signature:
                        raise SystemExit(f"{path}: jobs={jobs} gave another report than jobs={jobs_list[0]}")
            results[name] = {
                "stored_bytes": stored,
                "decoded_bytes": decoded,
                "jobs": {
                    str(j): {"seconds": s, "decoded_MB_s": decoded / s / 1e6, "stored_MB_s": stored / s / 1e6}
                    for j, s in best.items()
                },
            }
    return results


def main() -> None:
    """Parse the command line, run the benchmark and print MB/s per jobs with the speed-up over 1 job."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mib", type=int, default=256, help="MiB of float32 rows in the file")
    parser.add_argument("--rounds", type=int, default=3, help="turns per jobs value (the best counts)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="N, the jobs compared with 1 and 2")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--smoke", action="store_true", help="tiny sizes: checks the benchmark runs, measures nothing")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    args = parser.parse_args()
    mib, rounds = (2, 1) if args.smoke else (args.mib, args.rounds)
    jobs_list = sorted({1, 2, max(1, args.jobs)})
    results = run(mib * (1 << 20) // (ROW * 4), rounds, jobs_list, args.seed)
    if args.json:
        print(json.dumps(results, indent=2))
        return
    print(f"h5ml.verify of {mib} MiB of float32 rows + int64 labels (best of {rounds}; {os.cpu_count()} CPUs)")
    for storage, row in results.items():
        print(f"{storage} ({row['stored_bytes'] / 1e6:,.1f} MB stored, {row['decoded_bytes'] / 1e6:,.1f} MB decoded):")
        one = row["jobs"]["1"]["seconds"]
        for jobs, figures in row["jobs"].items():
            print(
                f"  jobs={jobs:>3}  {figures['decoded_MB_s']:8,.0f} MB/s decoded  {figures['stored_MB_s']:8,.0f} MB/s "
                f"stored  x{one / figures['seconds']:.2f} vs 1 job"
            )


if __name__ == "__main__":
    main()
