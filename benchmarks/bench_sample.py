"""Per-sample random reads of the reference reader beside plain h5py.

A PyTorch ``DataLoader`` with its default sampler calls ``dataset[i]`` once per
sample, so the fixed cost of one single-sample read decides its speed. The
workload: N images of 28x28x1 float32 (MNIST-like) and int64 labels, written by
``h5ml.write`` uncompressed and with gzip, read one random sample at a time:

- ``h5ml split[i]``: ``split[i]`` (every feature: image and label);
- ``h5ml split["x"][i]``: one feature, ``feature[i]``;
- ``h5py x[i], y[i]``: plain h5py, both datasets (what ``split[i]`` returns);
- ``h5py x[i]``: plain h5py, the image only.

h5py runs twice: with the chunk cache a plain ``h5py.File(path)`` gets
(HDF5's default, printed: 8 MiB per dataset with HDF5 2.0) and with the chunk
cache h5ml opens files with, which isolates the per-call cost from the cache
policy. Each reader opens the file
itself, one after the other, never two at once: HDF5 shares one open file (and
its chunk caches) between the handles of a process, which would flatter the
second reader. Every reader warms up on the same indices before it is timed,
then reads the same random indices. Readers take turns for ``--rounds``
rounds (so that a busy machine slows them alike); the best turn counts.

Results are samples/s and ratios to the h5py reader that reads the same
features (the goal is a ratio of at least 0.67: within 1.5x of h5py). Run::

    python benchmarks/bench_sample.py            # 10000 samples, 5 rounds of 0.5 s per reader
    python benchmarks/bench_sample.py --smoke    # tiny, for CI: checks it runs
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import h5py
import numpy as np

import h5ml
from h5ml.reader import DEFAULT_CACHE_BYTES

SAMPLE_SHAPE = (28, 28, 1)


def _build(path: Path, n: int, compression: str | None, seed: int) -> None:
    rng = np.random.default_rng(seed)
    images = rng.standard_normal((n, *SAMPLE_SHAPE)).astype(np.float32)
    labels = rng.integers(0, 10, size=n).astype(np.int64)
    h5ml.write(path, {"train": {"x": images, "y": labels}}, metadata={"name": "bench"}, compression=compression)


def _rate(read: Callable[[int], object], indices: list[int], budget_s: float) -> float:
    """Samples/s of ``read`` over ``indices`` (in order, wrapping around) for about ``budget_s`` seconds."""
    done = 0
    start = time.perf_counter()
    while True:
        for i in indices[done % len(indices) : done % len(indices) + 256]:
            read(i)
            done += 1
        elapsed = time.perf_counter() - start
        if elapsed >= budget_s:
            return done / elapsed


@contextmanager
def _h5py_file(path: Path, same_cache: bool) -> Iterator[h5py.File]:
    kwargs: dict[str, Any] = {}
    if same_cache:
        with h5ml.open(path) as probe:
            _, nslots, nbytes, w0 = probe.h5file.id.get_access_plist().get_cache()
        kwargs = {"rdcc_nbytes": nbytes, "rdcc_nslots": nslots, "rdcc_w0": w0}
    with h5py.File(path, "r", **kwargs) as f:
        yield f


@contextmanager
def _reader(path: Path, name: str) -> Iterator[Callable[[int], object]]:
    """Open the file for one reader and yield its per-sample read function."""
    if name.startswith("h5ml"):
        with h5ml.open(path) as ds:
            split = ds["train"]
            yield split.__getitem__ if name == "h5ml split[i]" else split["x"].__getitem__
        return
    with _h5py_file(path, same_cache="h5ml's cache" in name) as f:
        x, y = f["train/x"], f["train/y"]
        if name.startswith("h5py x[i], y[i]"):

            def both(i: int) -> object:
                return {"x": x[i], "y": y[i]}

            yield both
        else:
            yield x.__getitem__


READERS = (
    "h5ml split[i]",
    'h5ml split["x"][i]',
    "h5py x[i], y[i] (default cache)",
    "h5py x[i] (default cache)",
    "h5py x[i], y[i] (h5ml's cache)",
    "h5py x[i] (h5ml's cache)",
)


def run(n: int, reads: int, rounds: int, budget_s: float, seed: int) -> dict[str, dict[str, float]]:
    """Measure every reader on an uncompressed and a gzip file; return the best samples/s per storage and reader.

    Readers take turns, round after round, so that a busy machine slows them
    alike; in every turn a reader opens the file, warms its chunk cache on the
    indices for up to ``budget_s`` and then reads for ``budget_s``.
    """
    rng = np.random.default_rng(seed)
    indices = rng.integers(0, n, size=reads).tolist()
    results: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for compression in (None, "gzip"):
            path = Path(tmp) / f"bench-{compression}.h5"
            _build(path, n, compression, seed)
            best = dict.fromkeys(READERS, 0.0)
            for _ in range(rounds):
                for name in READERS:
                    with _reader(path, name) as read:
                        _rate(read, indices, budget_s)  # warm-up
                        best[name] = max(best[name], _rate(read, indices, budget_s))
            results["uncompressed" if compression is None else "gzip"] = best
    return results


def main() -> None:
    """Parse the command line, run the benchmark and print samples/s with ratios to h5py."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--samples", type=int, default=10_000, help="samples in the file (N)")
    parser.add_argument("--reads", type=int, default=20_000, help="random indices (read in turn, wrapping around)")
    parser.add_argument("--rounds", type=int, default=5, help="turns per reader (the best counts)")
    parser.add_argument("--seconds", type=float, default=0.5, help="seconds of reads per turn (and of warm-up)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--smoke", action="store_true", help="tiny sizes: checks the benchmark runs, measures nothing")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    args = parser.parse_args()
    if args.smoke:
        n, reads, rounds, seconds = 300, 200, 1, 0.02
    else:
        n, reads, rounds, seconds = args.samples, args.reads, args.rounds, args.seconds
    results = run(n, reads, rounds, seconds, args.seed)
    if args.json:
        print(json.dumps(results, indent=2))
        return
    mib = DEFAULT_CACHE_BYTES >> 20
    default_mib = h5py.h5p.create(h5py.h5p.FILE_ACCESS).get_cache()[2] / (1 << 20)
    print(f"random single-sample reads from {n} samples of {SAMPLE_SHAPE} float32 + int64 label (best of {rounds})")
    print(
        f"chunk cache per dataset: h5ml {mib} MiB, h5py default {default_mib:g} MiB. "
        "Ratio = h5ml / h5py reading the same features."
    )
    for storage, row in results.items():
        print(f"{storage}:")
        for name, rate in row.items():
            print(f"  {name:38s} {rate:10,.0f} samples/s")
        for h5ml_name, h5py_name in (("h5ml split[i]", "h5py x[i], y[i]"), ('h5ml split["x"][i]', "h5py x[i]")):
            ratios = ", ".join(
                f"{row[h5ml_name] / row[f'{h5py_name} ({label})']:.2f} vs {label}"
                for label in ("default cache", "h5ml's cache")
            )
            print(f"  ratio {h5ml_name:32s} {ratios}")


if __name__ == "__main__":
    main()
