"""Loader throughput side by side: raw reads, the PyTorch adapter with workers or threads, Keras fits (issue 15).

Workload: N tiles of 64x64x3 uint8 cut from the photographs bundled with
scikit-learn (``load_sample_images``) and scikit-image (``skimage.data``:
astronaut, chelsea, coffee, rocket), on grids shifted by 4 pixels so that the
tiles differ, plus int64 labels; stored uncompressed by :func:`h5ml.write`;
batch 64; warm page cache. Every batch's ids are checked against the order
asked for, so no reader wins by returning other data.

Readers, each once per repetition in a seeded random order (interleaved), one
epoch each, medians over the repetitions:

- ``raw``: ``split.read(batch)`` over the sampler's batches (the bound);
- ``torch_w0`` / ``torch_w2``: ``H5MLLoader`` over a ``DataLoader`` with 0
  and 2 worker processes (persistent, forkserver);
- ``torch_t2`` / ``torch_t4``: ``H5MLLoader(threads=2 / 4)``;
- ``keras_numpy``: ``model.fit(x, y)`` from in-memory numpy arrays (a model of
  one Dense layer on the flattened tile, the torch backend);
- ``keras_inline`` / ``keras_threads`` / ``keras_processes``: the same fit on
  ``H5MLPyDataset`` with ``workers=1``, ``workers=2`` threads, and ``workers=2,
  use_multiprocessing=True`` (batches through shared memory).

Worker pools are started before the first repetition (a warm-up epoch) and
kept. The machine's load average is printed beside the figures: on a shared
machine they are noisy, and only the ratios of one run mean anything. Goals
(issue 15): ``torch_t2`` at least 0.8x ``raw`` and ``keras_processes`` at least
0.9x ``keras_numpy``. Run::

    python benchmarks/bench_loaders.py               # 20000 tiles, 5 repetitions
    python benchmarks/bench_loaders.py --smoke       # 512 tiles, no worker processes: for CI, measures nothing
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import tempfile
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

os.environ.setdefault("KERAS_BACKEND", "torch")

import numpy as np
import numpy.typing as npt

import h5ml

__all__ = ["main", "photo_tiles", "run"]

BATCH = 64
TILE = 64
#: Issue 15's goals, as ratios of one run.
GOAL_THREADS_VS_RAW = 0.8
GOAL_KERAS_PROCESSES_VS_NUMPY = 0.9


def photo_tiles(n: int) -> npt.NDArray[np.uint8]:
    """``n`` uint8 tiles (n, 64, 64, 3) of the bundled photographs, on grids shifted by 4 pixels (real content)."""
    import skimage.data
    from sklearn.datasets import load_sample_images

    photos = list(load_sample_images().images)
    photos += [getattr(skimage.data, name)() for name in ("astronaut", "chelsea", "coffee", "rocket")]
    tiles: list[npt.NDArray[np.uint8]] = []
    for shift in range(0, TILE, 4):
        for photo in photos:
            rgb = np.asarray(photo)[shift:, shift:, :3]
            rows, cols = rgb.shape[0] // TILE, rgb.shape[1] // TILE
            grid = rgb[: rows * TILE, : cols * TILE].reshape(rows, TILE, cols, TILE, 3).swapaxes(1, 2)
            tiles.extend(grid.reshape(-1, TILE, TILE, 3))
            if len(tiles) >= n:
                return np.stack(tiles[:n]).astype(np.uint8)
    reps = -(-n // len(tiles))
    return np.concatenate([np.stack(tiles)] * reps)[:n].astype(np.uint8)


def _timed(batches: Iterable[Any], expected: list[npt.NDArray[np.int64]], ids: Callable[[Any], Any]) -> float:
    """Seconds to take every batch, each checked against the expected ids."""
    start = time.perf_counter()
    count = 0
    for batch, want in zip(batches, expected, strict=True):
        got = np.asarray(ids(batch))
        if got.shape != want.shape or not np.array_equal(got, want):
            raise AssertionError(f"batch {count}: other samples than asked for")
        count += 1
    return time.perf_counter() - start


def _torch_readers(
    path: Path, n: int, smoke: bool, order: list[npt.NDArray[np.int64]]
) -> dict[str, Callable[[], float]]:
    from h5ml_torch import H5MLBatchSampler, H5MLDataset, H5MLLoader

    data = H5MLDataset(path, "train", features=["image", "label", "id"])
    split = data.reader()

    def loader(**options: Any) -> H5MLLoader:
        return H5MLLoader(data, H5MLBatchSampler(data, BATCH), **options)

    loaders = {"torch_w0": loader(), "torch_t2": loader(threads=2), "torch_t4": loader(threads=4)}
    if not smoke:
        workers = {"num_workers": 2, "persistent_workers": True, "multiprocessing_context": "forkserver"}
        loaders["torch_w2"] = loader(**workers)
    readers: dict[str, Callable[[], float]] = {
        "raw": lambda: _timed((split.read(b, ("image", "label", "id")) for b in order), order, lambda b: b["id"])
    }
    for name, each in loaders.items():
        readers[name] = lambda each=each: _timed(each, order, lambda b: b["id"].numpy())
    return readers


def _keras_readers(
    path: Path, n: int, smoke: bool, order: list[npt.NDArray[np.int64]]
) -> dict[str, Callable[[], float]]:
    import keras

    from h5ml_keras import H5MLPyDataset

    with h5ml.open(path) as f:
        x, y = f["train"]["image"][:], f["train"]["label"][:]

    def model() -> Any:
        keras.utils.set_random_seed(0)
        m = keras.Sequential([keras.Input((TILE, TILE, 3)), keras.layers.Flatten(), keras.layers.Dense(10)])
        m.compile(optimizer="sgd", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        return m

    def fit(data: Any, **options: Any) -> Callable[[], float]:
        m = model()

        def run() -> float:
            start = time.perf_counter()
            m.fit(data, epochs=1, shuffle=False, verbose=0, **options)
            return time.perf_counter() - start

        return run

    datasets = {"keras_inline": {}, "keras_threads": {"workers": 2}}
    if not smoke:
        datasets["keras_processes"] = {"workers": 2, "use_multiprocessing": True}
    readers = {"keras_numpy": fit(x, y=y, batch_size=BATCH)}
    for name, options in datasets.items():
        ds = H5MLPyDataset(path, "train", BATCH, inputs="image", targets="label", **options)
        readers[name] = fit(ds)
    return readers


def run(n: int, repeats: int, smoke: bool, seed: int = 0, keras_too: bool = True) -> dict[str, Any]:
    """Build the file, time every reader ``repeats`` times interleaved; return medians and ratios."""
    results: dict[str, Any] = {"samples": n, "batch": BATCH, "repeats": repeats, "smoke": smoke}
    with tempfile.TemporaryDirectory(prefix="bench_loaders_") as folder:
        path = Path(folder) / "tiles.h5ml"
        images = photo_tiles(n)
        labels = np.arange(n, dtype=np.int64) % 10
        h5ml.write(path, {"train": {"image": images, "label": labels, "id": np.arange(n, dtype=np.int64)}})
        order = [np.arange(i, min(n, i + BATCH), dtype=np.int64) for i in range(0, n, BATCH)]
        readers = _torch_readers(path, n, smoke, order)
        if keras_too:
            readers |= _keras_readers(path, n, smoke, order)
        for reader in readers.values():  # warm-up: pools started, files mapped, models built
            reader()
        times: dict[str, list[float]] = {name: [] for name in readers}
        load = [os.getloadavg()[0]]
        rng = random.Random(seed)
        for _ in range(repeats):
            names = list(readers)
            rng.shuffle(names)
            for name in names:
                times[name].append(readers[name]())
        load.append(os.getloadavg()[0])
    rate = {name: n / statistics.median(t) for name, t in times.items()}
    results["samples_per_s"] = {name: round(r) for name, r in rate.items()}
    results["load_average_before_after"] = [round(v, 2) for v in load]
    ratios: dict[str, float] = {}
    for name in ("torch_w0", "torch_w2", "torch_t2", "torch_t4"):
        if name in rate:
            ratios[f"{name}/raw"] = rate[name] / rate["raw"]
    if "torch_w2" in rate:
        ratios["torch_t2/torch_w2"] = rate["torch_t2"] / rate["torch_w2"]
    for name in ("keras_inline", "keras_threads", "keras_processes"):
        if name in rate:
            ratios[f"{name}/keras_numpy"] = rate[name] / rate["keras_numpy"]
    results["ratios"] = {k: round(v, 3) for k, v in ratios.items()}
    if not smoke:
        goals = {"torch_t2/raw": GOAL_THREADS_VS_RAW, "keras_processes/keras_numpy": GOAL_KERAS_PROCESSES_VS_NUMPY}
        results["goals"] = {f"{k} >= {goal}": ratios[k] >= goal for k, goal in goals.items() if k in ratios}
    return results


def main(argv: list[str] | None = None) -> None:
    """Parse the options, run, print the JSON result."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=20000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--no-keras", action="store_true", help="time the PyTorch readers only")
    parser.add_argument("--smoke", action="store_true", help="512 tiles, 1 repetition, no worker processes (CI)")
    args = parser.parse_args(argv)
    if args.smoke:
        result = run(512, 1, True, keras_too=not args.no_keras)
    else:
        result = run(args.samples, args.repeats, False, keras_too=not args.no_keras)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
