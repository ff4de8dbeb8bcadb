"""Epoch throughput of the PyTorch adapter beside a numpy memmap and the one-dataset-per-sample tutorial.

Workload (issue 3, FACTS.md's image workload): N uint8 images of 64x64x3 plus
int64 labels, batch 64, all files in a temporary folder (warm page cache after
writing). Three pipelines run side by side in one process, each through a
``torch.utils.data.DataLoader`` with the same settings (``num_workers``,
``persistent_workers`` when there are workers, no pinning):

- ``h5ml``: the adapter's fast path on a file written uncompressed by
  :func:`h5ml.write`: ``H5MLLoader(H5MLDataset, H5MLBatchSampler)`` with the
  adapter's ``collate``, in the shuffle modes ``none``, ``chunk`` and ``full``;
- ``memmap``: the same arrays saved as ``.npy`` and opened with
  ``np.load(mmap_mode="r")``; a map-style dataset whose ``__getitems__`` copies
  each batch with ``np.array``, fed the *same* batch order (the same
  ``H5MLBatchSampler`` index lists) through the same ``DataLoader`` settings;
- ``per-sample``: the tutorials' approach, a plain h5py file with group
  ``train`` holding one dataset per sample (``"0"`` .. ``"N-1"``) and a root
  ``labels`` dataset; a ``Dataset`` opening the file lazily and reading one
  sample per ``__getitem__``, behind ``DataLoader(batch_size=64, shuffle=True)``.
  It is slow, so it runs for a time budget instead of a whole epoch.

Each pipeline is warmed up with a few batches of epoch 0, then timed over
epoch 1 (best of ``--repeats`` epochs 1, 2, ...; the ``h5ml`` and ``memmap``
runs of a mode alternate, on identical batch lists). Goals (issue 3): ``none``
and ``chunk`` at least 0.8x the memmap pipeline with the same order, and at
least 50x the per-sample pipeline; ``full`` is recorded only. Each reader has
its own file handle and no two h5py handles of one file are open at once
(HDF5 shares them within a process). Run::

    python benchmarks/bench_torch.py                # 20000 samples, num_workers=0
    python benchmarks/bench_torch.py --workers 2    # the same with 2 workers
    python benchmarks/bench_torch.py --compression gzip   # the shuffle modes on a gzip file
    python benchmarks/bench_torch.py --smoke        # tiny sizes, for CI (measures nothing)
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import numpy.typing as npt
import torch
from torch.utils.data import DataLoader, Dataset

import h5ml
from h5ml.sampling import ShuffleMode
from h5ml_torch import H5MLBatchSampler, H5MLDataset, H5MLLoader
from peers.workloads import image_tiles

__all__ = ["MemmapDataset", "PerSampleDataset", "main", "run"]

BATCH = 64
IMAGE_SHAPE = (64, 64, 3)
MODES: tuple[ShuffleMode, ...] = ("none", "chunk", "full")
#: Issue 3's goals: adapter ``none``/``chunk`` over memmap, and over one dataset per sample.
GOAL_VS_MEMMAP = 0.8
GOAL_VS_PER_SAMPLE = 50.0


class MemmapDataset(Dataset[dict[str, torch.Tensor]]):
    """Images and labels from ``.npy`` files memory-mapped lazily in each process (the baseline).

    Parameters
    ----------
    images_path, labels_path
        ``.npy`` files of uint8 ``(N, 64, 64, 3)`` and int64 ``(N,)``.

    Notes
    -----
    ``__getitems__(indices)`` returns the whole batch as ``{"image": uint8
    (R, 64, 64, 3), "label": int64 (R,)}`` tensors, each copied out of the map
    with one ``np.array`` call (a slice when the indices are one ascending run,
    else one fancy index, which numpy copies once).
    """

    def __init__(self, images_path: Path, labels_path: Path) -> None:
        self.images_path = images_path
        self.labels_path = labels_path
        self._maps: tuple[npt.NDArray[np.uint8], npt.NDArray[np.int64]] | None = None
        self._len = int(np.load(labels_path, mmap_mode="r").shape[0])

    def __getstate__(self) -> dict[str, Any]:
        return {"images_path": self.images_path, "labels_path": self.labels_path, "_maps": None, "_len": self._len}

    def _arrays(self) -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.int64]]:
        if self._maps is None:
            self._maps = (np.load(self.images_path, mmap_mode="r"), np.load(self.labels_path, mmap_mode="r"))
        return self._maps

    def __len__(self) -> int:
        return self._len

    def __getitem__(self, index: int) -> dict[str, torch.Tensor]:
        images, labels = self._arrays()
        return {"image": torch.from_numpy(np.array(images[index])), "label": torch.tensor(int(labels[index]))}

    def __getitems__(self, indices: Sequence[int]) -> dict[str, torch.Tensor]:
        images, labels = self._arrays()
        rows = np.asarray(indices, dtype=np.int64)
        pick: slice | npt.NDArray[np.int64] = rows
        if len(rows) and bool(np.all(np.diff(rows) == 1)):  # one ascending run: a slice, no index array
            pick = slice(int(rows[0]), int(rows[0]) + len(rows))
        return {"image": torch.from_numpy(np.array(images[pick])), "label": torch.from_numpy(np.array(labels[pick]))}


def pass_batch(batch: Any) -> Any:
    """Collate for :class:`MemmapDataset`: its ``__getitems__`` already returns the batch dict."""
    return batch


class PerSampleDataset(Dataset[dict[str, torch.Tensor]]):
    """The tutorials' dataset: one HDF5 dataset per sample, read one by one (the slow baseline).

    Parameters
    ----------
    path
        A plain h5py file with ``train/0`` .. ``train/N-1`` (uint8 images) and
        ``labels`` (int64 ``(N,)``).

    Notes
    -----
    Holds the path only; each process opens the file on its first
    ``__getitem__`` and loads the labels into memory then (kinder to this
    baseline than one more HDF5 read per sample).
    """

    def __init__(self, path: Path, num_samples: int) -> None:
        self.path = path
        self.num_samples = num_samples
        self._file: h5py.File | None = None
        self._pid: int | None = None
        self._labels: npt.NDArray[np.int64] | None = None

    def __getstate__(self) -> dict[str, Any]:
        return {"path": self.path, "num_samples": self.num_samples, "_file": None, "_pid": None, "_labels": None}

    def __len__(self) -> int:
        return self.num_samples

    def __getitem__(self, index: int) -> dict[str, torch.Tensor]:
        if self._file is None or self._pid != os.getpid():
            self._file = h5py.File(self.path, "r")
            self._pid = os.getpid()
            self._labels = self._file["labels"][()]
        assert self._labels is not None
        image = self._file["train"][str(index)][()]
        return {"image": torch.from_numpy(image), "label": torch.tensor(int(self._labels[index]))}

    def close(self) -> None:
        """Close this process's handle."""
        if self._file is not None and self._pid == os.getpid():
            self._file.close()
        self._file = None
        self._pid = None


def _build(folder: Path, n: int, seed: int, compression: str | None = None) -> dict[str, Path]:
    """Write the same arrays as an h5ml file, two ``.npy`` files and a one-dataset-per-sample h5py file.

    ``compression`` applies to the h5ml file only (the others stay uncompressed).
    """
    tiles = image_tiles(n, seed)  # real photographs: random bytes would not compress, and overstate gzip reads
    images, labels = tiles.x, tiles.y % 10
    paths = {
        "h5ml": folder / "bench.h5ml",
        "images": folder / "images.npy",
        "labels": folder / "labels.npy",
        "per_sample": folder / "per_sample.h5",
    }
    h5ml.write(
        paths["h5ml"],
        {"train": {"image": images, "label": labels}},
        metadata={"name": "bench-torch"},
        compression=compression,
    )
    np.save(paths["images"], images)
    np.save(paths["labels"], labels)
    with h5py.File(paths["per_sample"], "w") as f:
        group = f.create_group("train")
        for i in range(n):
            group.create_dataset(str(i), data=images[i])
        f.create_dataset("labels", data=labels)
    return paths


def _consume(batches: Iterable[dict[str, Any]], limit_batches: int | None, budget_s: float | None) -> tuple[int, float]:
    """Iterate ``batches``; return (samples seen, seconds), stopping after ``limit_batches`` or ``budget_s``."""
    seen = 0
    count = 0
    start = time.perf_counter()
    for batch in batches:
        seen += int(batch["label"].shape[0])
        count += 1
        if limit_batches is not None and count >= limit_batches:
            break
        if budget_s is not None and time.perf_counter() - start > budget_s:
            break
    return seen, time.perf_counter() - start


def _loader_options(workers: int) -> dict[str, Any]:
    """The ``DataLoader`` settings every pipeline shares."""
    return {"num_workers": workers, "persistent_workers": workers > 0, "pin_memory": False}


def _epoch_pair(
    paths: dict[str, Path], mode: ShuffleMode, workers: int, warmup: int, repeats: int, seed: int
) -> dict[str, float]:
    """Samples/s of one epoch through the adapter and through memmap, on the same batch lists."""
    data = H5MLDataset(paths["h5ml"], "train", features=["image", "label"])
    sampler = H5MLBatchSampler(data, BATCH, shuffle=mode, seed=seed)
    adapter = H5MLLoader(data, sampler, **_loader_options(workers))
    memmap = DataLoader(
        MemmapDataset(paths["images"], paths["labels"]),
        batch_sampler=sampler,
        collate_fn=pass_batch,
        **_loader_options(workers),
    )
    best = {"h5ml": 0.0, "memmap": 0.0}
    try:
        sampler.set_epoch(0)
        _consume(adapter, warmup, None)
        _consume(memmap, warmup, None)
        for r in range(repeats):
            for name, loader in (("h5ml", adapter), ("memmap", memmap)):
                sampler.set_epoch(1 + r)
                seen, seconds = _consume(loader, None, None)
                if seen < len(data):
                    raise RuntimeError(f"{name} {mode}: one epoch gave {seen} samples, expected {len(data)}")
                best[name] = max(best[name], seen / seconds)
    finally:
        del adapter, memmap  # stop persistent workers before the file handle goes
        data.close()
    return best


def _per_sample(paths: dict[str, Path], n: int, workers: int, warmup: int, budget_s: float, seed: int) -> float:
    """Samples/s of the one-dataset-per-sample pipeline over a time budget."""
    data = PerSampleDataset(paths["per_sample"], n)
    loader = DataLoader(
        data,
        batch_size=BATCH,
        shuffle=True,
        generator=torch.Generator().manual_seed(seed),
        **_loader_options(workers),
    )
    try:
        _consume(loader, warmup, None)
        seen, seconds = _consume(loader, None, budget_s)
    finally:
        del loader
        data.close()
    return seen / seconds


def run(
    n: int, workers: int, warmup: int, repeats: int, budget_s: float, seed: int, compression: str | None = None
) -> dict[str, Any]:
    """Build the files for ``n`` samples and measure every pipeline.

    Returns
    -------
    dict
        ``config``; ``samples_per_s`` (``h5ml <mode>``, ``memmap <mode>``,
        ``per-sample``); ``ratios`` (adapter over memmap with the same order,
        adapter over per-sample); ``goals_met`` for ``none`` and ``chunk``;
        ``seconds`` (build and measure times).
    """
    t0 = time.perf_counter()
    rates: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="bench-torch-") as tmp:
        paths = _build(Path(tmp), n, seed, compression)
        t_build = time.perf_counter() - t0
        for mode in MODES:
            pair = _epoch_pair(paths, mode, workers, warmup, repeats, seed)
            rates[f"h5ml {mode}"] = pair["h5ml"]
            rates[f"memmap {mode}"] = pair["memmap"]
        rates["per-sample"] = _per_sample(paths, n, workers, warmup, budget_s, seed)
    ratios: dict[str, float] = {}
    for mode in MODES:
        ratios[f"h5ml {mode} / memmap {mode}"] = rates[f"h5ml {mode}"] / rates[f"memmap {mode}"]
        ratios[f"h5ml {mode} / per-sample"] = rates[f"h5ml {mode}"] / rates["per-sample"]
    goals = (
        {}
        if compression is not None
        else {
            f"{mode} vs {base}": ratios[f"h5ml {mode} / {key}"] >= goal
            for mode in ("none", "chunk")
            for base, key, goal in (
                (f">= {GOAL_VS_MEMMAP}x memmap", f"memmap {mode}", GOAL_VS_MEMMAP),
                (f">= {GOAL_VS_PER_SAMPLE:g}x per-sample", "per-sample", GOAL_VS_PER_SAMPLE),
            )
        }
    )
    return {
        "config": {
            "samples": n,
            "image_shape": list(IMAGE_SHAPE),
            "batch": BATCH,
            "num_workers": workers,
            "warmup_batches": warmup,
            "repeats": repeats,
            "per_sample_budget_s": budget_s,
            "seed": seed,
            "compression": compression,
            "torch": torch.__version__,
            "h5py": h5py.version.version,
            "hdf5": h5py.version.hdf5_version,
        },
        "samples_per_s": rates,
        "ratios": ratios,
        "goals_met": goals,
        "seconds": {"build": t_build, "total": time.perf_counter() - t0},
    }


def main() -> None:
    """Parse the command line, run the benchmark and print a table (or JSON)."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--samples", type=int, default=20000)
    parser.add_argument("--workers", type=int, default=0, help="DataLoader num_workers for every pipeline")
    parser.add_argument("--warmup", type=int, default=20, help="batches read before timing")
    parser.add_argument("--repeats", type=int, default=3, help="timed epochs per mode (the best is kept)")
    parser.add_argument("--budget", type=float, default=10.0, help="seconds for the per-sample pipeline")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--compression", default=None, help="compress the h5ml file (e.g. gzip): the shuffle modes' trade-off"
    )
    parser.add_argument("--smoke", action="store_true", help="tiny sizes: checks the benchmark runs, measures nothing")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    args = parser.parse_args()
    if args.smoke:
        results = run(512, args.workers, 2, 1, 0.2, args.seed, args.compression)
    else:
        results = run(args.samples, args.workers, args.warmup, args.repeats, args.budget, args.seed, args.compression)
    if args.json:
        print(json.dumps(results, indent=2))
        return
    cfg = results["config"]
    print(
        f"one epoch of {cfg['samples']} images {'x'.join(map(str, cfg['image_shape']))} uint8 + int64 labels, "
        f"batch {cfg['batch']}, num_workers={cfg['num_workers']}, h5ml file compression={cfg['compression']} "
        f"(samples/s, best of {cfg['repeats']})"
    )
    for name, rate in results["samples_per_s"].items():
        print(f"  {name:14s} {rate:12,.0f}")
    print("ratios")
    for name, ratio in results["ratios"].items():
        print(f"  {name:30s} {ratio:8.2f}x")
    print("goals (issue 3)" if cfg["compression"] is None else "goals (issue 3): set for the uncompressed file only")
    for name, met in results["goals_met"].items():
        print(f"  {name:34s} {'met' if met else 'NOT met'}")
    secs = results["seconds"]
    print(f"build {secs['build']:.1f} s, total {secs['total']:.1f} s")


if __name__ == "__main__":
    main()
