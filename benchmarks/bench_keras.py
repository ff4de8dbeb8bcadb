"""Epoch throughput of ``model.fit`` on the Keras adapter beside in-memory numpy arrays and the tutorial's Sequence.

Workload (issue 4, the image workload of ``bench_torch.py``): N uint8 images
of 64x64x3 plus int64 labels (10 classes), batch 64, all files in a temporary
folder (warm page cache after writing). One trivial model (global average
pooling and a 10-way softmax, ``sparse_categorical_crossentropy``), compiled
once on one Keras backend (``KERAS_BACKEND``, torch unless set), is fitted
for one epoch at a time (``verbose=0``, ``shuffle=False``) on three pipelines,
so that the data path dominates the step:

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
/ ``max_queue_size``; the numpy pipeline has no workers (Keras slices the
arrays in the training loop). Each pipeline is warmed up with a short fit of
a few batches, then timed over whole ``fit`` calls of one epoch (best of
``--repeats``; the ``h5ml`` run of a mode, ``numpy`` and ``tutorial``
alternate, so that they share the machine's state; ``numpy`` and
``tutorial`` keep their best over all modes). The adapter's epoch advances
after each fit, so ``chunk`` and ``full`` read a new order every time. Goals
(issue 4): ``none`` and ``chunk`` at least 0.8x the numpy pipeline; ``full``
and the ratios over ``tutorial`` are recorded only. One h5ml reader is open
at a time (HDF5 shares the handles of one file within a process). Run::

    python benchmarks/bench_keras.py                    # 20000 samples, workers=1 (in the training thread)
    python benchmarks/bench_keras.py --workers 4        # 4 threads read ahead, for both PyDatasets
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

os.environ.setdefault("KERAS_BACKEND", "torch")

import h5py  # noqa: E402  (keras reads KERAS_BACKEND when imported)
import keras  # noqa: E402
import numpy as np  # noqa: E402
import numpy.typing as npt  # noqa: E402

import h5ml  # noqa: E402
from h5ml.sampling import ShuffleMode  # noqa: E402
from h5ml_keras import H5MLPyDataset  # noqa: E402

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
    rng = np.random.default_rng(seed)
    images = rng.integers(0, 256, size=(n, *IMAGE_SHAPE), dtype=np.uint8)
    labels = rng.integers(0, NUM_CLASSES, size=n).astype(np.int64)
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


class _Fits:
    """Fit the shared model for one epoch on each pipeline and keep every pipeline's best samples/s."""

    def __init__(
        self,
        model: keras.Model,
        n: int,
        images: npt.NDArray[np.uint8],
        labels: npt.NDArray[np.int64],
        tutorial: TutorialSequence,
        warmup: int,
    ) -> None:
        self.model = model
        self.n = n
        self.images = images
        self.labels = labels
        self.tutorial = tutorial
        self.warmup = warmup
        self.best: dict[str, float] = {}

    def fit(self, name: str, data: Any, steps: int | None = None) -> float:
        """One ``fit`` of one epoch (``steps`` batches when given, e.g. a warm-up); return its seconds."""
        start = time.perf_counter()
        if data is None:  # the numpy pipeline
            x, y = self.images, self.labels
            if steps is not None:
                x, y = x[: steps * BATCH], y[: steps * BATCH]
            history = self.model.fit(x, y, batch_size=BATCH, epochs=1, shuffle=False, verbose=0)
        else:
            history = self.model.fit(data, epochs=1, steps_per_epoch=steps, shuffle=False, verbose=0)
        seconds = time.perf_counter() - start
        if not np.isfinite(history.history["loss"][-1]):
            raise RuntimeError(f"{name}: the loss is not finite")
        return seconds

    def timed(self, name: str, data: Any) -> None:
        """Fit one whole epoch and record the samples/s when it is the best so far."""
        rate = self.n / self.fit(name, data)
        self.best[name] = max(self.best.get(name, 0.0), rate)

    def warm(self, name: str, data: Any) -> None:
        """A short fit of ``warmup`` batches (at least one)."""
        self.fit(name, data, steps=max(1, self.warmup))


def run(
    n: int, workers: int, processes: bool, warmup: int, repeats: int, seed: int, max_queue_size: int = 10
) -> dict[str, Any]:
    """Build the files for ``n`` samples and measure every pipeline.

    Parameters
    ----------
    n
        Samples (images).
    workers, processes
        ``workers`` and ``use_multiprocessing`` of both PyDataset pipelines.
    warmup
        Batches of the warm-up fit of each pipeline.
    repeats
        Timed epochs per pipeline and mode (the best is kept).
    seed
        Seed of the data, the model's initial weights and the adapter's shuffles.
    max_queue_size
        ``max_queue_size`` of both PyDataset pipelines.

    Returns
    -------
    dict
        ``config``; ``samples_per_s`` (``h5ml <mode>``, ``numpy``,
        ``tutorial``); ``ratios`` (adapter over numpy, adapter over
        tutorial); ``goals_met`` for ``none`` and ``chunk``; ``seconds``
        (build and measure times).
    """
    t0 = time.perf_counter()
    loading = {"workers": workers, "use_multiprocessing": processes, "max_queue_size": max_queue_size}
    with tempfile.TemporaryDirectory(prefix="bench-keras-") as tmp:
        paths, images, labels = _build(Path(tmp), n, seed)
        t_build = time.perf_counter() - t0
        fits = _Fits(_model(seed), n, images, labels, TutorialSequence(paths["tutorial"], BATCH, **loading), warmup)
        fits.warm("numpy", None)
        fits.warm("tutorial", fits.tutorial)
        for mode in MODES:
            data = H5MLPyDataset(paths["h5ml"], "train", BATCH, shuffle=mode, seed=seed, **loading)
            try:
                fits.warm(f"h5ml {mode}", data)
                data.set_epoch(1)  # the timed epochs are 1, 2, ... as in bench_torch
                for _ in range(repeats):
                    fits.timed(f"h5ml {mode}", data)
                    fits.timed("numpy", None)
                    fits.timed("tutorial", fits.tutorial)
            finally:
                data.source.close()
    rates = {f"h5ml {mode}": fits.best[f"h5ml {mode}"] for mode in MODES}
    rates["numpy"] = fits.best["numpy"]
    rates["tutorial"] = fits.best["tutorial"]
    ratios: dict[str, float] = {}
    for mode in MODES:
        ratios[f"h5ml {mode} / numpy"] = rates[f"h5ml {mode}"] / rates["numpy"]
        ratios[f"h5ml {mode} / tutorial"] = rates[f"h5ml {mode}"] / rates["tutorial"]
    goals = {f"{mode} vs >= {GOAL_VS_NUMPY}x numpy": ratios[f"h5ml {mode} / numpy"] >= GOAL_VS_NUMPY for mode in MODES[:2]}
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
    parser.add_argument("--warmup", type=int, default=20, help="batches of the warm-up fit of each pipeline")
    parser.add_argument("--repeats", type=int, default=3, help="timed epochs per mode (the best is kept)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--smoke", action="store_true", help="tiny sizes: checks the benchmark runs, measures nothing")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    args = parser.parse_args()
    if args.smoke:
        results = run(512, args.workers, args.processes, 2, 1, args.seed, args.max_queue_size)
    else:
        results = run(
            args.samples, args.workers, args.processes, args.warmup, args.repeats, args.seed, args.max_queue_size
        )
    if args.json:
        print(json.dumps(results, indent=2))
        return
    cfg = results["config"]
    print(
        f"one epoch of model.fit on {cfg['samples']} images {'x'.join(map(str, cfg['image_shape']))} uint8 + int64 "
        f"labels, batch {cfg['batch']}, backend {cfg['backend']} (keras {cfg['keras']}), PyDataset "
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
