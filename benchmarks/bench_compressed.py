"""Compressed (gzip) reads: h5ml's own parallel decode beside plain h5py, uncompressed h5ml and a numpy memmap.

Workload: tiles of 64x64x3 uint8 cut from the photographs bundled with
scikit-learn (``load_sample_images``) and scikit-image (``skimage.data``),
windows at a stride of 16 pixels, in a seeded random order (so that
neighbouring tiles of a chunk are not overlapping copies that gzip would
find), plus int64 labels; 20000 tiles by default. Real, compressible content
only: random bytes do not compress. Stored by ``h5ml.write(...,
compression="gzip")`` (gzip level 4; the writer adds the byte shuffle for
types wider than one byte, so these uint8 tiles are gzip only), and the same
arrays uncompressed, and as a ``.npy`` file.

Readers, side by side in one process, batches of 64, each checked against
the source arrays before it is timed:

- ``h5ml gzip``: ``split.read(batch)`` of a dataset opened for the
  repetition (its cache of decoded chunks starts empty: a first epoch);
- ``h5ml gzip warm``: the same, on one dataset kept open over the
  repetitions (a later epoch of a training run: chunks the cache holds are
  not decoded again);
- ``h5py gzip``: plain h5py on the gzip file: a slice per batch in file
  order, else a sorted fancy index and the inverse permutation;
- ``h5ml plain``: h5ml on the uncompressed file;
- ``memmap``: ``numpy.load(mmap_mode="r")``, a fancy index per batch (the bound).

Orders: ``sequential`` (file order), ``chunk`` and ``full``
(:class:`h5ml.sampling.orders.Sampler`, ``window_chunks=8``). In each
repetition every (order, reader) cell runs once, in a seeded random order,
for at most ``--seconds``; the medians of the repetitions are reported in
samples/s (and per second of the process's CPU time, which the load of other
processes disturbs less) and as ratios, with the load average of the machine beside them (a
shared machine makes every figure noisy). ``--profile`` prints where the
time of ``h5ml gzip`` goes (cProfile, cumulative). Run::

    python benchmarks/bench_compressed.py            # 20000 tiles
    python benchmarks/bench_compressed.py --smoke    # tiny, for CI: checks it runs
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import numpy.typing as npt

import h5ml
from h5ml.sampling.orders import Sampler

BATCH = 64
ORDERS = ("sequential", "chunk", "full")
READERS = ("h5ml gzip", "h5ml gzip warm", "h5py gzip", "h5ml plain", "memmap")


def photo_tiles(n: int, seed: int) -> npt.NDArray[np.uint8]:
    """``n`` tiles of 64x64x3 from the bundled photographs, in a seeded random order (repeated when n is larger)."""
    from sklearn.datasets import load_sample_images

    photos = list(load_sample_images().images)
    try:
        import skimage.data as data

        names = ("astronaut", "chelsea", "coffee", "rocket", "hubble_deep_field", "immunohistochemistry", "retina")
        photos += [getattr(data, name)() for name in names]
    except ImportError:  # scikit-learn's two photographs only: fewer distinct tiles
        pass
    windows = [
        np.lib.stride_tricks.sliding_window_view(p, (64, 64, 3))[::16, ::16, 0].reshape(-1, 64, 64, 3) for p in photos
    ]
    every = np.concatenate(windows)
    order = np.resize(np.random.default_rng(seed).permutation(every.shape[0]), n)
    return np.ascontiguousarray(every[order])


def _build(folder: Path, n: int, seed: int) -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.int64]]:
    images = photo_tiles(n, seed)
    labels = np.random.default_rng(seed).integers(0, 10, n).astype(np.int64)
    arrays = {"train": {"image": images, "label": labels}}
    h5ml.write(folder / "gzip.h5", arrays, metadata={"name": "bench"}, compression="gzip")
    h5ml.write(folder / "plain.h5", arrays, metadata={"name": "bench"})
    np.save(folder / "image.npy", images)
    np.save(folder / "label.npy", labels)
    return images, labels


Reader = Callable[[npt.NDArray[np.int64]], tuple[Any, Any]]


def _h5py_reader(f: h5py.File) -> Reader:
    image, label = f["train/image"], f["train/label"]

    def read(idx: npt.NDArray[np.int64]) -> tuple[Any, Any]:
        if idx.shape[0] and int(idx[-1]) - int(idx[0]) == idx.shape[0] - 1 and bool((np.diff(idx) == 1).all()):
            return image[int(idx[0]) : int(idx[-1]) + 1], label[int(idx[0]) : int(idx[-1]) + 1]
        order = np.argsort(idx)
        inverse = np.empty_like(order)
        inverse[order] = np.arange(order.shape[0])
        rows = idx[order]
        if bool((rows[1:] == rows[:-1]).any()):  # h5py refuses repeated indices
            rows, inverse = np.unique(idx, return_inverse=True)
        return image[rows][inverse], label[rows][inverse]

    return read


def _h5ml_reader(ds: h5ml.Dataset) -> Reader:
    split = ds["train"]

    def read(idx: npt.NDArray[np.int64]) -> tuple[Any, Any]:
        out = split.read(idx)
        return out["image"], out["label"]

    return read


def _memmap_reader(folder: Path) -> Reader:
    image = np.load(folder / "image.npy", mmap_mode="r")
    label = np.load(folder / "label.npy", mmap_mode="r")
    return lambda idx: (image[idx], label[idx])


def _batches(order: str, n: int, chunk_rows: int, epoch: int) -> list[npt.NDArray[np.int64]]:
    if order == "sequential":
        return [np.arange(i, min(n, i + BATCH), dtype=np.int64) for i in range(0, n, BATCH)]
    sampler = Sampler(n, BATCH, shuffle=order, seed=0, chunk_rows=chunk_rows, window_chunks=8)  # type: ignore[arg-type]
    return [np.asarray(b, dtype=np.int64) for b in sampler.epoch_batches(epoch)]


def _timed(read: Reader, batches: list[npt.NDArray[np.int64]], seconds: float) -> tuple[float, float]:
    """Samples per second of wall time and per second of this process's CPU time (all its threads)."""
    done, start, cpu = 0, time.perf_counter(), time.process_time()
    for idx in batches:
        read(idx)
        done += idx.shape[0]
        if time.perf_counter() - start > seconds:
            break
    return done / (time.perf_counter() - start), done / max(1e-9, time.process_time() - cpu)


def _check(read: Reader, batches: list[npt.NDArray[np.int64]], images: Any, labels: Any, name: str) -> None:
    """Every reader returns the source values (dtype, shape, every value of 3 batches), or the run stops."""
    for idx in (batches[0], batches[len(batches) // 2], batches[-1]):
        got_image, got_label = read(idx)
        if not (np.array_equal(got_image, images[idx]) and np.array_equal(got_label, labels[idx])):
            raise AssertionError(f"{name} returned wrong values")


def run(n: int, reps: int, seconds: float, seed: int, profile: bool) -> dict[str, Any]:
    """Build the files, time every cell ``reps`` times interleaved, and return the medians and ratios."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        images, labels = _build(folder, n, seed)
        with h5py.File(folder / "gzip.h5", "r") as f:
            dset = f["train/image"]
            chunk_rows = int(dset.chunks[0])
            storage = {
                "chunks": list(dset.chunks),
                "filters": {"gzip": dset.compression_opts, "shuffle": bool(dset.shuffle)},
                "ratio": round(dset.id.get_storage_size() / images.nbytes, 3),
            }
        rates: dict[tuple[str, str], list[float]] = {(o, r): [] for o in ORDERS for r in READERS}
        cpu_rates: dict[tuple[str, str], list[float]] = {(o, r): [] for o in ORDERS for r in READERS}
        rng = np.random.default_rng(seed)
        warm = h5ml.open(folder / "gzip.h5")
        plain = h5ml.open(folder / "plain.h5")
        h5f = h5py.File(folder / "gzip.h5", "r")
        loads = []
        try:
            for rep in range(reps):
                cells = [(o, r) for o in ORDERS for r in READERS]
                for k in rng.permutation(len(cells)).tolist():
                    order, reader = cells[k]
                    batches = _batches(order, n, chunk_rows, rep)
                    fresh = h5ml.open(folder / "gzip.h5") if reader == "h5ml gzip" else None
                    if fresh is not None:
                        read = _h5ml_reader(fresh)
                    elif reader == "h5py gzip":
                        read = _h5py_reader(h5f)
                    elif reader == "memmap":
                        read = _memmap_reader(folder)
                    else:
                        read = _h5ml_reader(warm if reader == "h5ml gzip warm" else plain)
                    if rep == 0:
                        _check(read, batches, images, labels, reader)
                    wall, cpu = _timed(read, batches, seconds)
                    rates[(order, reader)].append(wall)
                    cpu_rates[(order, reader)].append(cpu)
                    if fresh is not None:
                        fresh.close()
                loads.append(os.getloadavg()[0])
            profiled = _profile(folder, n, chunk_rows) if profile else None
        finally:
            warm.close()
            plain.close()
            h5f.close()
    medians = {o: {r: round(statistics.median(rates[(o, r)])) for r in READERS} for o in ORDERS}
    per_cpu = {o: {r: round(statistics.median(cpu_rates[(o, r)])) for r in READERS} for o in ORDERS}
    seq = medians["sequential"]["h5ml gzip"]
    ratios = {
        o: {
            "h5ml gzip / h5py gzip": round(medians[o]["h5ml gzip"] / medians[o]["h5py gzip"], 2),
            "h5ml gzip warm / h5py gzip": round(medians[o]["h5ml gzip warm"] / medians[o]["h5py gzip"], 2),
            "h5ml gzip / h5ml gzip sequential": round(medians[o]["h5ml gzip"] / seq, 2),
            "h5ml gzip / memmap": round(medians[o]["h5ml gzip"] / medians[o]["memmap"], 3),
        }
        for o in ORDERS
    }
    goals = {
        "sequential >= 4x plain h5py": ratios["sequential"]["h5ml gzip / h5py gzip"] >= 4,
        "chunk >= 0.8x h5ml's own sequential": ratios["chunk"]["h5ml gzip / h5ml gzip sequential"] >= 0.8,
        "full >= 10x plain h5py fancy indexing": ratios["full"]["h5ml gzip / h5py gzip"] >= 10,
    }
    return {
        "samples": n,
        "batch": BATCH,
        "repetitions": reps,
        "seconds_per_cell": seconds,
        "cores": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "load_average_1min": loads,
        "storage": storage,
        "samples_per_s": medians,
        "samples_per_cpu_s": per_cpu,
        "ratios": ratios,
        "goals_met": goals,
        "profile": profiled,
    }


def _profile(folder: Path, n: int, chunk_rows: int) -> dict[str, str]:
    """cProfile of one pass of ``h5ml gzip`` per order (fresh dataset), the top 12 entries by cumulative time."""
    out = {}
    for order in ORDERS:
        batches = _batches(order, n, chunk_rows, 0)
        with h5ml.open(folder / "gzip.h5") as ds:
            read = _h5ml_reader(ds)
            prof = cProfile.Profile()
            prof.enable()
            for idx in batches:
                read(idx)
            prof.disable()
        text = io.StringIO()
        pstats.Stats(prof, stream=text).sort_stats("cumulative").print_stats(12)
        out[order] = text.getvalue()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--samples", type=int, default=20000)
    parser.add_argument("--reps", type=int, default=3, help="interleaved repetitions (medians are reported)")
    parser.add_argument("--seconds", type=float, default=4.0, help="time cap of one cell")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--profile", action="store_true", help="add a cProfile of h5ml gzip per order")
    parser.add_argument("--smoke", action="store_true", help="tiny sizes: checks the benchmark runs, measures nothing")
    args = parser.parse_args()
    if args.smoke:
        result = run(640, 1, 0.2, args.seed, False)
    else:
        result = run(args.samples, args.reps, args.seconds, args.seed, args.profile)
    profile = result.pop("profile")
    print(json.dumps(result, indent=2))
    if profile:
        for order, text in profile.items():
            print(f"--- profile: h5ml gzip, {order} ---\n{text}")


if __name__ == "__main__":
    main()
