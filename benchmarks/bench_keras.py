"""Epoch throughput of ``model.fit`` on the Keras adapter beside in-memory numpy arrays and the tutorial's Sequence.

Workload (issue 4, the image workload of ``bench_torch.py``): N uint8 images
of 64x64x3 plus int64 labels (10 classes), batch 64, all files in a temporary
folder (warm page cache after writing). One trivial model (global average
pooling and a 10-way softmax, ``sparse_categorical_crossentropy``), compiled
once on one Keras backend (``KERAS_BACKEND``, torch unless set), is fitted
for one epoch at a time (``verbose=0``, ``shuffle=False``) on three pipelines;
the model is as cheap as Keras allows, so that the data path shows:

- ``h5ml``: :class:`h5ml_keras.H5MLPyDataset` on a file written uncompressed
  by :func:`h5ml.write` (``image`` with role input, ``label`` with role
  target), in the shuffle modes ``none``, ``chunk`` and ``full``;
- ``numpy``: the same arrays in memory, ``model.fit(x, y, batch_size=64,
  shuffle=False)`` (the baseline: Keras' own array adapter, file order);
- ``tutorial``: the tutorials' Keras Sequence, a ``keras.utils.PyDataset``
  over a plain h5py file with datasets ``x_train`` and ``y_train`` that
  reopens the file with ``h5py.File(path, "r")`` in every ``__getitem__`` and
  reads batch ``i`` as the slice ``[i * 64:(i + 1) * 64]``.

The two PyDataset pipelines get the same ``workers`` / ``use_multiprocessing``
/ ``max_queue_size``: the adapter reads ahead with its own pool (and tells
Keras it has one worker), the tutorial's Sequence goes through Keras' queue;
the numpy pipeline has no workers (Keras slices the arrays in the training
loop). The model's step is warmed up by a short fit on the arrays and each
PyDataset by reading a few batches; then each ``fit`` of one epoch is timed
from ``on_epoch_begin`` to ``on_epoch_end`` (starting and stopping Keras'
workers is inside, ``fit``'s own set-up is not), best of ``--repeats``. The ``h5ml`` run of a mode,
``numpy`` and ``tutorial`` alternate, so that they share the machine's state;
``numpy`` and ``tutorial`` keep their best over all modes (a stricter
baseline). Each fit trains on an epoch's whole order, so ``chunk`` and
``full`` read a new order every time. Goals (issue 4): ``none`` and
``chunk`` at least 0.8x the numpy pipeline; ``full`` and the ratios over
``tutorial`` are recorded only. One h5ml reader is open at a time (HDF5
shares the handles of one file within a process).

On a small or shared machine the torch backend's intra-op threads (as many
as cores) make epochs of any pipeline many times slower whenever another
process takes a core; ``--torch-threads 1`` gives steadier numbers (and
about the same ratios). Run::

    python benchmarks/bench_keras.py                    # 20000 samples, workers=1 (in the training thread)
    python benchmarks/bench_keras.py --workers 4        # 4 threads read ahead, for both PyDatasets
    python benchmarks/bench_keras.py --torch-threads 1  # steadier on a busy machine
    python benchmarks/bench_keras.py --workers 2 --processes   # 2 processes instead
    KERAS_BACKEND=jax python benchmarks/bench_keras.py  # another backend
    python benchmarks/bench_keras.py --smoke            # tiny sizes, for CI (measures nothing)
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("KERAS_BACKEND", "torch")  # before keras is imported: it reads the backend then

import h5py
import keras
import numpy as np
import numpy.typing as npt

import h5ml
from h5ml.sampling import ShuffleMode
from h5ml_keras import H5MLPyDataset
from peers.workloads import image_tiles

__all__ = ["TutorialSequence", "main", "run"]

BATCH = 64
IMAGE_SHAPE = (64, 64, 3)
NUM_CLASSES = 10
MODES: tuple[ShuffleMode, ...] = ("none", "chunk", "full")
#: Issue 4's goal: adapter ``none``/``chunk`` over in-memory numpy arrays.
GOAL_VS_NUMPY = 0.8


class TutorialSequence(keras.utils.PyDataset):  # type: ignore[misc]
    """The tutorials' Keras Sequence: reopen a plain h5py file for every batch and slice it (the slow baseline).

    Parameters
    ----------
    path
        A plain h5py file with ``x_train`` (uint8 ``(N, 64, 64, 3)``) and
        ``y_train`` (int64 ``(N,)``).
    batch_size
        Samples per batch.
    **kwargs
        ``workers``, ``use_multiprocessing``, ``max_queue_size``, as
        ``keras.utils.PyDataset``.

    Notes
    -----
    ``__getitem__(i)`` opens the file, reads ``x_train[i * b:(i + 1) * b]``
    and the same slice of ``y_train``, and closes it: what the tutorial does,
    and what makes it safe in threads and processes.
    """

    def __init__(self, path: Path, batch_size: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.path = path
        self.batch_size = batch_size
        with h5py.File(path, "r") as f:
            self.num_samples = int(f["y_train"].shape[0])

    def __len__(self) -> int:
        return -(-self.num_samples // self.batch_size)

    def __getitem__(self, index: int) -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.int64]]:
        start, stop = index * self.batch_size, (index + 1) * self.batch_size
        with h5py.File(self.path, "r") as f:
            return f["x_train"][start:stop], f["y_train"][start:stop]


def _build(folder: Path, n: int, seed: int) -> tuple[dict[str, Path], npt.NDArray[np.uint8], npt.NDArray[np.int64]]:
    """Write the same arrays as an h5ml file and as a plain h5py file; return the paths and the arrays."""
    tiles = image_tiles(n, seed)  # real photographs (labelled by photograph), as every image benchmark here
    images, labels = tiles.x, tiles.y % NUM_CLASSES
    paths = {"h5ml": folder / "bench.h5ml", "tutorial": folder / "tutorial.h5"}
    h5ml.write(
        paths["h5ml"],
        {"train": {"image": images, "label": labels}},
        metadata={"name": "bench-keras"},
        features={"image": {"role": "input"}, "label": {"role": "target"}},
    )
    with h5py.File(paths["tutorial"], "w") as f:
        f.create_dataset("x_train", data=images)
        f.create_dataset("y_train", data=labels)
    return paths, images, labels


def _model(seed: int) -> keras.Model:
    """The trivial model every pipeline trains: pooling and a softmax, so that the data path dominates."""
    keras.utils.set_random_seed(seed)
    model = keras.Sequential(
        [
            keras.Input(IMAGE_SHAPE),
            keras.layers.GlobalAveragePooling2D(),
            keras.layers.Dense(NUM_CLASSES, activation="softmax"),
        ]
    )
    model.compile(optimizer="sgd", loss="sparse_categorical_crossentropy")
    return model


class _EpochClock(keras.callbacks.Callback):  # type: ignore[misc]
    """Time the epoch of one ``fit`` (from ``on_epoch_begin`` to ``on_epoch_end``) and count its batches.

    The epoch's time includes starting and stopping the PyDataset's workers
    (Keras does both inside the epoch) but not ``fit``'s own set-up and
    tear-down, which a run of many epochs pays once.
    """

    def __init__(self) -> None:
        super().__init__()
        self.batches = 0
        self.seconds = 0.0
        self._start = 0.0

    def on_epoch_begin(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
        self._start = time.perf_counter()

    def on_train_batch_end(self, batch: int, logs: dict[str, Any] | None = None) -> None:
        self.batches += 1

    def on_epoch_end(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
        self.seconds = time.perf_counter() - self._start


class _Fits:
    """Fit the shared model for one epoch on each pipeline and keep every pipeline's best samples/s."""

    def __init__(
        self,
        model: keras.Model,
        images: npt.NDArray[np.uint8],
        labels: npt.NDArray[np.int64],
    ) -> None:
        self.model = model
        self.images = images
        self.labels = labels
        self.n = int(labels.shape[0])
        self.best: dict[str, float] = {}

    def fit(self, name: str, data: keras.utils.PyDataset | None, steps: int | None = None) -> float:
        """One ``fit`` of one epoch (of ``steps`` batches when given); return the epoch's seconds.

        ``data`` None fits the in-memory arrays (the numpy pipeline).

        Raises
        ------
        RuntimeError
            If the fit trained on another number of batches than an epoch's, or the loss is not finite.
        """
        count = _EpochClock()
        if data is None:
            x, y = self.images, self.labels
            if steps is not None:
                x, y = x[: steps * BATCH], y[: steps * BATCH]
            history = self.model.fit(x, y, batch_size=BATCH, epochs=1, shuffle=False, verbose=0, callbacks=[count])
        else:
            history = self.model.fit(data, epochs=1, steps_per_epoch=steps, shuffle=False, verbose=0, callbacks=[count])
        expected = -(-self.n // BATCH) if steps is None else steps
        if count.batches != expected:
            raise RuntimeError(f"{name}: one fit trained on {count.batches} batches, expected {expected}")
        if not np.isfinite(history.history["loss"][-1]):
            raise RuntimeError(f"{name}: the loss is not finite")
        return count.seconds

    def timed(self, name: str, data: keras.utils.PyDataset | None) -> None:
        """Fit one whole epoch and record the samples/s when it is the best so far."""
        rate = self.n / self.fit(name, data)
        self.best[name] = max(self.best.get(name, 0.0), rate)


def _read_ahead(data: keras.utils.PyDataset, batches: int) -> None:
    """Warm a PyDataset up in this process: read its first ``batches`` batches (opening its file).

    Read directly rather than by a short ``fit``, which leaves neither a
    partial epoch in the adapter nor batches in Keras' queue.
    """
    for i in range(min(batches, len(data))):
        data[i]


def _torch_threads(threads: int | None) -> int | None:
    """Set the torch backend's intra-op threads when ``threads`` is given; return them (None off torch).

    Raises
    ------
    ValueError
        If ``threads`` is given and the backend is not torch, or is < 1.
    """
    if keras.backend.backend() != "torch":
        if threads is not None:
            raise ValueError(f"torch threads apply to the torch backend only, not {keras.backend.backend()!r}")
        return None
    import torch

    if threads is not None:
        if threads < 1:
            raise ValueError(f"torch threads must be >= 1, got {threads}")
        torch.set_num_threads(threads)
    return int(torch.get_num_threads())


def run(
    n: int,
    workers: int,
    processes: bool,
    warmup: int,
    repeats: int,
    seed: int,
    max_queue_size: int = 10,
    torch_threads: int | None = None,
) -> dict[str, Any]:
    """Build the files for ``n`` samples and measure every pipeline.

    Parameters
    ----------
    n
        Samples (images).
    workers, processes
        ``workers`` and ``use_multiprocessing`` of both PyDataset pipelines.
    warmup
        Batches of the warm-up: fitted on the arrays (the model's step), read from each PyDataset.
    repeats
        Timed epochs per pipeline and mode (the best is kept).
    seed
        Seed of the data, the model's initial weights and the adapter's shuffles.
    max_queue_size
        ``max_queue_size`` of both PyDataset pipelines.
    torch_threads
        Intra-op threads of the torch backend (None: torch's default).

    Returns
    -------
    dict
        ``config``; ``samples_per_s`` (``h5ml <mode>``, ``numpy``,
        ``tutorial``); ``ratios`` (adapter over numpy, adapter over
        tutorial); ``goals_met`` for ``none`` and ``chunk``; ``seconds``
        (build and measure times).
    """
    threads = _torch_threads(torch_threads)
    t0 = time.perf_counter()
    loading = {"workers": workers, "use_multiprocessing": processes, "max_queue_size": max_queue_size}
    with tempfile.TemporaryDirectory(prefix="bench-keras-") as tmp:
        paths, images, labels = _build(Path(tmp), n, seed)
        t_build = time.perf_counter() - t0
        fits = _Fits(_model(seed), images, labels)
        tutorial = TutorialSequence(paths["tutorial"], BATCH, **loading)
        fits.fit("numpy", None, steps=max(1, warmup))  # warms the model's step up
        _read_ahead(tutorial, warmup)
        for mode in MODES:
            data = H5MLPyDataset(paths["h5ml"], "train", BATCH, shuffle=mode, seed=seed, **loading)
            try:
                _read_ahead(data, warmup)
                data.set_epoch(1)  # the timed epochs are 1, 2, ... as in bench_torch
                for _ in range(repeats):
                    fits.timed(f"h5ml {mode}", data)
                    fits.timed("numpy", None)
                    fits.timed("tutorial", tutorial)
            finally:
                data.close()  # its read-ahead workers and its reader
    rates = {f"h5ml {mode}": fits.best[f"h5ml {mode}"] for mode in MODES}
    rates["numpy"] = fits.best["numpy"]
    rates["tutorial"] = fits.best["tutorial"]
    ratios: dict[str, float] = {}
    for mode in MODES:
        ratios[f"h5ml {mode} / numpy"] = rates[f"h5ml {mode}"] / rates["numpy"]
        ratios[f"h5ml {mode} / tutorial"] = rates[f"h5ml {mode}"] / rates["tutorial"]
    goals = {
        f"{mode} vs >= {GOAL_VS_NUMPY}x numpy": ratios[f"h5ml {mode} / numpy"] >= GOAL_VS_NUMPY for mode in MODES[:2]
    }
    return {
        "config": {
            "samples": n,
            "image_shape": list(IMAGE_SHAPE),
            "batch": BATCH,
            "workers": workers,
            "use_multiprocessing": processes,
            "max_queue_size": max_queue_size,
            "warmup_batches": warmup,
            "repeats": repeats,
            "seed": seed,
            "backend": keras.backend.backend(),
            "torch_threads": threads,
            "keras": keras.__version__,
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
    parser.add_argument(
        "--workers", type=int, default=1, help="PyDataset workers (1: read in the training thread, Keras' default)"
    )
    parser.add_argument("--processes", action="store_true", help="use_multiprocessing=True (worker processes)")
    parser.add_argument("--max-queue-size", type=int, default=10, help="PyDataset max_queue_size")
    parser.add_argument(
        "--torch-threads", type=int, default=None, help="intra-op threads of the torch backend (default: torch's)"
    )
    parser.add_argument("--warmup", type=int, default=20, help="warm-up batches of each pipeline")
    parser.add_argument("--repeats", type=int, default=3, help="timed epochs per mode (the best is kept)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--smoke", action="store_true", help="tiny sizes: checks the benchmark runs, measures nothing")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    args = parser.parse_args()
    if args.smoke:
        sizes = {"n": 512, "warmup": 2, "repeats": 1}
    else:
        sizes = {"n": args.samples, "warmup": args.warmup, "repeats": args.repeats}
    if args.torch_threads is not None and (keras.backend.backend() != "torch" or args.torch_threads < 1):
        parser.error(f"--torch-threads needs the torch backend (not {keras.backend.backend()}) and a count >= 1")
    results = run(
        workers=args.workers,
        processes=args.processes,
        seed=args.seed,
        max_queue_size=args.max_queue_size,
        torch_threads=args.torch_threads,
        **sizes,
    )
    if args.json:
        print(json.dumps(results, indent=2))
        return
    cfg = results["config"]
    threads = "" if cfg["torch_threads"] is None else f", {cfg['torch_threads']} torch threads"
    print(
        f"one epoch of model.fit on {cfg['samples']} images {'x'.join(map(str, cfg['image_shape']))} uint8 + int64 "
        f"labels, batch {cfg['batch']}, backend {cfg['backend']} (keras {cfg['keras']}{threads}), PyDataset "
        f"workers={cfg['workers']} use_multiprocessing={cfg['use_multiprocessing']} "
        f"(samples/s, best of {cfg['repeats']})"
    )
    for name, rate in results["samples_per_s"].items():
        print(f"  {name:14s} {rate:12,.0f}")
    print("ratios")
    for name, ratio in results["ratios"].items():
        print(f"  {name:30s} {ratio:8.2f}x")
    print("goals (issue 4)")
    for name, met in results["goals_met"].items():
        print(f"  {name:34s} {'met' if met else 'NOT met'}")
    secs = results["seconds"]
    print(f"build {secs['build']:.1f} s, total {secs['total']:.1f} s")


if __name__ == "__main__":
    main()
