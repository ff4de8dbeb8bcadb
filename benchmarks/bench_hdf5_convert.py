"""Conversion throughput of HDF5 sources through the plan (``h5ml convert``), beside hand-written h5py scripts.

Workloads (issue 12), in a temporary folder, each pipeline run side by side
in one process, alternating, best of ``--repeats`` runs (a fresh output
each run; the sources are in the page cache after the first):

- ``arrays``: deeplearning.ai's layout at scale, ``train_<stem>.h5`` with
  ``train_set_x`` uint8 ``(N, 64, 64, 3)`` (gzip-4, chunks of 64 rows),
  ``train_set_y`` int64 and ``list_classes``.

  - ``h5ml``: ``convert_hdf5(src, out)``: walks the file, proposes and
    checks the plan, reads the rows in blocks of whole chunks, writes the
    categorical label with its class names, fingerprints, fsyncs, renames;
  - ``script``: what a user writes by hand: ``x = f["train_set_x"][:]``,
    ``y = f["train_set_y"][:]``, then ``h5ml.write(out, {"train": {"x": x,
    "y": Categorical(y, names)}})`` (loads the whole source in memory).

- ``records``: 3D MNIST's layout, ``/<i>/points`` float64 ``(n_i, 3)`` with
  ``n_i`` 100-400, ``/<i>/img`` ``(30, 30)`` and ``@label``, N groups.

  - ``h5ml``: ``convert_hdf5(src, out)`` (records matched by id, natural order);
  - ``script``: a loop over ``sorted(f, key=int)`` reading each group into
    lists, then ``h5ml.write`` of ragged ``points``, dense ``img`` and ``label``.

Samples/s per pipeline and the ratio h5ml / script are printed (and
``--json``). The ratio is the price of the plan: h5ml walks every object's
metadata once (to propose the plan and account for everything), checks
the plan, and streams in bounded memory; the script does none of that,
holds the whole source in memory, and would write a wrong file on a layout
it does not expect. Measured on this 2-core machine (issue 12, idle):
arrays 0.67x (5.8k vs 8.7k images/s), records 0.38x (1.0k vs 2.6k
records/s; half of h5ml's time is the walk of the 9000 objects, half the
per-record reads). Run::

    python benchmarks/bench_hdf5_convert.py            # 4000 images, 3000 records
    python benchmarks/bench_hdf5_convert.py --smoke    # tiny sizes, for CI (measures nothing)
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import h5py
import numpy as np

import h5ml
from h5ml.ingest.hdf5 import convert_hdf5

Pipeline = Callable[[Path], int]


def arrays_source(path: Path, n: int, seed: int) -> None:
    """``train_set_x`` (smooth seeded images plus noise, so that deflate has real work), ``train_set_y``, ``list_classes``."""
    rng = np.random.default_rng(seed)
    with h5py.File(path, "w") as f:
        x = f.create_dataset("train_set_x", (n, 64, 64, 3), np.uint8, chunks=(64, 64, 64, 3), compression="gzip")
        ramp = np.linspace(0, 200, 64, dtype=np.float32)
        for start in range(0, n, 256):
            k = min(256, n - start)
            base = ramp[None, :, None, None] + ramp[None, None, :, None] * rng.random((k, 1, 1, 3))
            x[start : start + k] = np.clip(base * 0.5 + rng.integers(0, 40, (k, 64, 64, 3)), 0, 255).astype(np.uint8)
        f["train_set_y"] = rng.integers(0, 2, n).astype(np.int64)
        f["list_classes"] = np.array([b"non-cat", b"cat"])


def records_source(path: Path, n: int, seed: int) -> None:
    """``/<i>/points``, ``/<i>/img`` and ``@label`` for i in 0..n-1."""
    rng = np.random.default_rng(seed)
    with h5py.File(path, "w") as f:
        for i in range(n):
            g = f.create_group(str(i))
            g["points"] = rng.random((int(rng.integers(100, 400)), 3))
            g["img"] = rng.random((30, 30))
            g.attrs["label"] = int(rng.integers(0, 10))


def arrays_script(src: Path, out: Path) -> int:
    with h5py.File(src, "r") as f:
        x, y = f["train_set_x"][:], f["train_set_y"][:]
        names = [v.decode() for v in f["list_classes"][:]]
    h5ml.write(out, {"train": {"x": x, "y": h5ml.Categorical(y, names)}}, metadata={"name": "bench"})
    return len(y)


def records_script(src: Path, out: Path) -> int:
    points, imgs, labels = [], [], []
    with h5py.File(src, "r") as f:
        for key in sorted(f, key=int):
            points.append(f[key]["points"][()])
            imgs.append(f[key]["img"][()])
            labels.append(int(f[key].attrs["label"]))
    h5ml.write(out, {"train": {"points": points, "img": np.stack(imgs), "label": np.asarray(labels)}})
    return len(labels)


def _best(pipelines: dict[str, Pipeline], folder: Path, repeats: int) -> dict[str, float]:
    best = dict.fromkeys(pipelines, 0.0)
    for _ in range(repeats):
        for name, pipeline in pipelines.items():
            out = folder / f"out-{name}.h5"
            out.unlink(missing_ok=True)
            start = time.perf_counter()
            samples = pipeline(out)
            best[name] = max(best[name], samples / (time.perf_counter() - start))
            out.unlink()
    return best


def run(images: int, records: int, repeats: int, seed: int) -> dict[str, Any]:
    """Build both sources, race each pair of pipelines; samples/s and ratios by workload."""
    results: dict[str, Any] = {"load_before": os.getloadavg()[0]}
    with tempfile.TemporaryDirectory(prefix="bench-hdf5-") as tmp:
        folder = Path(tmp)
        arrays = folder / "train_catvnoncat.h5"
        arrays_source(arrays, images, seed)
        points = folder / "train_point_clouds.h5"
        records_source(points, records, seed)
        for name, src, script in (("arrays", arrays, arrays_script), ("records", points, records_script)):
            rates = _best(
                {
                    "h5ml": lambda out, src=src: convert_hdf5(src, out, progress=False).total,
                    "script": lambda out, src=src, script=script: script(src, out),
                },
                folder,
                repeats,
            )
            results[name] = {"samples_per_s": rates, "ratio": rates["h5ml"] / rates["script"]}
    results["load_after"] = os.getloadavg()[0]
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--images", type=int, default=4000)
    parser.add_argument("--records", type=int, default=3000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--smoke", action="store_true", help="tiny sizes, one run: checks that it runs, measures nothing"
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if args.smoke:
        args.images, args.records, args.repeats = 64, 20, 1
    results = run(args.images, args.records, args.repeats, args.seed)
    if args.json:
        print(json.dumps(results, indent=2))
        return
    for name in ("arrays", "records"):
        rates = results[name]["samples_per_s"]
        print(
            f"{name:8s} h5ml {rates['h5ml']:10,.0f}/s   script {rates['script']:10,.0f}/s   "
            f"ratio {results[name]['ratio']:.2f}x"
        )
    print(f"load average {results['load_before']:.2f} -> {results['load_after']:.2f}")


if __name__ == "__main__":
    main()
