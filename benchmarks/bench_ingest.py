"""Conversion throughput of the audio and image folder converters, and of the writer, beside plain h5py scripts.

Workloads (issue 5), all files in a temporary folder, every pipeline run side by
side in one process, alternating, best of ``--repeats`` runs each (a fresh
output file each run; the source files are in the page cache after the first):

- ``audio``: ``train/{noisy,clean}/<id>.wav``, N pairs of int16 mono clips at
  16 kHz, 1 to 4 s long (seeded synthetic speech-like signals: a few harmonics
  of a random pitch under a slow envelope; ``noisy`` adds seeded noise).

  - ``h5ml``: ``convert_audio_folder(root, out, compression="gzip",
    workers=W, progress=False)``: checks every file with ``soundfile.info``,
    decodes in W worker threads, writes ragged features ``noisy``,
    ``clean`` and ``id`` (gzip with the byte-shuffle filter) with fingerprints
    and statistics, fsyncs and renames;
  - ``tutorial``: the tutorials' script in this process: for each id,
    ``soundfile.read`` both files and ``create_dataset(id, data=...,
    compression="gzip", chunks=True)`` in the groups ``train_data`` and
    ``train_label``, one dataset per file. It reads ``dtype="int16"`` (the
    values the converter stores; the tutorials' float64 default would give it
    four times the bytes to compress) and does not fsync.

- ``images``: an ImageFolder tree ``train/<class>/<i>.png`` of N RGB images of
  64x64 (10 classes; seeded gradients blended with noise, so that PNG decoding
  and deflate have real work).

  - ``h5ml``: ``convert_image_folder(root, out, mode="dense", size=(64, 64),
    compression="gzip", workers=W, progress=False)``;
  - ``tutorial``: in this process, for each file in sorted order, Pillow
    decodes it (``np.asarray(Image.open(p).convert("RGB"))``) and
    ``create_dataset(i, data=..., compression="gzip", chunks=True)`` stores it,
    one dataset per file; the labels go to one ``labels`` dataset at the end.

- ``writer``: the same kind of images in memory, ``M x 64x64x3`` uint8 plus
  int64 labels, uncompressed and with gzip.

  - ``h5ml``: ``h5ml.write(path, {"train": {"image": x, "label": y}},
    compression=c)``: it also computes each feature's fingerprint and
    statistics, fsyncs the file and its folder and renames it;
  - ``h5py``: ``f.create_dataset(name, data=a, chunks=..., compression=c)``
    for each array, with the writer's chunk shapes
    (:func:`h5ml.spec.chunks.chunk_shape`) and filters (gzip level 4, byte shuffle
    for multi-byte types), no fsync (the goal's baseline);
  - ``h5py+fsync``: the same, then an fsync of the file (for reference: the
    part of the gap that durability explains).

Samples/s counts audio pairs, images, or rows of the writer's arrays. Goals
(issue 5): each converter at least 2x its tutorial script on 2 cores, with
the converters' default W = 1 (decoding in the calling thread; the writer's
compression threads use both cores; ``--workers 2`` adds two decoding threads,
which help slow decoders and cost a little with WAV and small PNG files);
``h5ml.write`` at least 0.8x raw h5py, uncompressed and gzip. The output sizes
are printed too (the two sides should be close: same data, same compression).
The 1-minute load average before and after is recorded: the numbers mean
little on a machine busy with other work.
``--profile`` prints where the h5ml side of each workload spends its time in
this process (cProfile; the converters' worker processes are not profiled).
Run::

    python benchmarks/bench_ingest.py                  # 400 pairs, 1000 images, 20000 rows, workers=1
    python benchmarks/bench_ingest.py --workers 2      # converters with 2 decoding threads
    python benchmarks/bench_ingest.py --only writer    # one workload (audio, images or writer)
    python benchmarks/bench_ingest.py --profile        # also cProfile one h5ml run of each workload
    python benchmarks/bench_ingest.py --smoke          # tiny sizes, for CI (measures nothing)
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import resource
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import numpy.typing as npt
import soundfile
from PIL import Image

import h5ml
from h5ml.ingest.audio import convert_audio_folder
from h5ml.ingest.images import convert_image_folder
from h5ml.spec.chunks import chunk_shape

__all__ = [
    "audio_folder",
    "image_folder",
    "image_pixels",
    "main",
    "run",
    "tutorial_audio",
    "tutorial_images",
]

RATE = 16_000
#: Clip lengths in seconds, drawn uniformly (in frames) from this range.
CLIP_SECONDS = (1.0, 4.0)
IMAGE_SHAPE = (64, 64, 3)
CLASSES = 10
WORKLOADS = ("audio", "images", "writer")
#: Issue 5's goals: each converter over its tutorial script, and the writer over raw h5py.
GOAL_VS_TUTORIAL = 2.0
GOAL_VS_H5PY = 0.8


# --------------------------------------------------------------------------
# source data


def _clip(rng: np.random.Generator, frames: int) -> tuple[npt.NDArray[np.int16], npt.NDArray[np.int16]]:
    """One (noisy, clean) pair of int16 clips of ``frames`` samples: harmonics of a random pitch, plus noise."""
    t = np.arange(frames, dtype=np.float64) / RATE
    pitch = rng.uniform(90.0, 260.0)
    clean = np.zeros(frames)
    for k in range(1, 5):
        clean += rng.uniform(0.2, 1.0) / k * np.sin(2 * np.pi * k * pitch * t + rng.uniform(0, 2 * np.pi))
    envelope = 0.5 + 0.5 * np.sin(2 * np.pi * rng.uniform(0.5, 3.0) * t + rng.uniform(0, 2 * np.pi)) ** 2
    clean *= 0.25 * envelope
    noisy = clean + rng.normal(0.0, rng.uniform(0.01, 0.05), frames)
    scale = 32767.0
    return (
        np.clip(np.round(noisy * scale), -32768, 32767).astype(np.int16),
        np.clip(np.round(clean * scale), -32768, 32767).astype(np.int16),
    )


def audio_folder(root: Path, pairs: int, seed: int) -> int:
    """Write ``root/train/{noisy,clean}/<id>.wav`` (int16 mono, 16 kHz), ``pairs`` pairs; return the bytes written.

    Parameters
    ----------
    root
        The folder to create (its parent must exist).
    pairs
        Number of ids; each has one file in ``noisy`` and one in ``clean``.
    seed
        Seeds the lengths (uniform in :data:`CLIP_SECONDS`) and the signals.
    """
    rng = np.random.default_rng(seed)
    total = 0
    for feature in ("noisy", "clean"):
        (root / "train" / feature).mkdir(parents=True)
    low, high = (int(s * RATE) for s in CLIP_SECONDS)
    for i in range(pairs):
        noisy, clean = _clip(rng, int(rng.integers(low, high + 1)))
        for feature, data in (("noisy", noisy), ("clean", clean)):
            path = root / "train" / feature / f"{i}.wav"
            soundfile.write(path, data, RATE, subtype="PCM_16")
            total += path.stat().st_size
    return total


def image_pixels(rng: np.random.Generator, n: int) -> npt.NDArray[np.uint8]:
    """``n`` uint8 RGB images of :data:`IMAGE_SHAPE`: a random two-colour linear gradient blended with noise.

    Each image gets its own direction, colours and noise weight (0.1 to 0.4),
    so that images neither compress to nothing nor are pure noise.
    """
    h, w, _ = IMAGE_SHAPE
    y, x = np.mgrid[0:h, 0:w].astype(np.float32)
    angle = rng.uniform(0, 2 * np.pi, n).astype(np.float32)
    ramp = np.cos(angle)[:, None, None] * x + np.sin(angle)[:, None, None] * y
    lo = ramp.min(axis=(1, 2), keepdims=True)
    ramp = (ramp - lo) / np.maximum(ramp.max(axis=(1, 2), keepdims=True) - lo, 1e-6)
    start = rng.uniform(0, 255, (n, 1, 1, 3)).astype(np.float32)
    stop = rng.uniform(0, 255, (n, 1, 1, 3)).astype(np.float32)
    base = start + (stop - start) * ramp[..., None]
    noise = rng.uniform(0, 255, (n, *IMAGE_SHAPE)).astype(np.float32)
    weight = rng.uniform(0.1, 0.4, (n, 1, 1, 1)).astype(np.float32)
    pixels: npt.NDArray[np.uint8] = np.clip(np.round((1 - weight) * base + weight * noise), 0, 255).astype(np.uint8)
    return pixels


def image_folder(root: Path, n: int, seed: int) -> int:
    """Write the ImageFolder tree ``root/train/class<k>/<i>.png`` (image i in class i % 10); return the bytes.

    Parameters
    ----------
    root
        The folder to create (its parent must exist).
    n
        Number of images, made by :func:`image_pixels` with ``seed``.
    seed
        Seeds the pixels.
    """
    rng = np.random.default_rng(seed)
    for k in range(CLASSES):
        (root / "train" / f"class{k}").mkdir(parents=True)
    total = 0
    for start in range(0, n, 256):
        block = image_pixels(rng, min(256, n - start))
        for j, pixels in enumerate(block):
            i = start + j
            path = root / "train" / f"class{i % CLASSES}" / f"{i}.png"
            Image.fromarray(pixels, "RGB").save(path, format="PNG")
            total += path.stat().st_size
    return total


# --------------------------------------------------------------------------
# the tutorials' scripts


def tutorial_audio(root: Path, output: Path) -> int:
    """The tutorials' audio script: one gzip dataset per file in ``train_data``/``train_label``; return the pairs.

    Reads ``root/train/noisy/<id>.wav`` (data) and ``root/train/clean/<id>.wav``
    (label) with ``soundfile.read(dtype="int16")``, in sorted id order.
    """
    noisy = root / "train" / "noisy"
    clean = root / "train" / "clean"
    ids = sorted(p.stem for p in noisy.iterdir() if p.suffix == ".wav")
    with h5py.File(output, "w") as f:
        data_group = f.create_group("train_data")
        label_group = f.create_group("train_label")
        for sample_id in ids:
            data, _ = soundfile.read(noisy / f"{sample_id}.wav", dtype="int16")
            label, _ = soundfile.read(clean / f"{sample_id}.wav", dtype="int16")
            data_group.create_dataset(str(sample_id), data=data, compression="gzip", chunks=True)
            label_group.create_dataset(str(sample_id), data=label, compression="gzip", chunks=True)
    return len(ids)


def tutorial_images(root: Path, output: Path) -> int:
    """The tutorials' image script: one gzip dataset per file in ``train``, then ``labels``; return the images.

    Walks ``root/train/<class>/`` in sorted order, decodes each file with
    Pillow to RGB and stores it as ``train/<i>``; the class indices go to one
    int64 dataset ``labels``.
    """
    classes = sorted(p.name for p in (root / "train").iterdir() if p.is_dir())
    labels: list[int] = []
    with h5py.File(output, "w") as f:
        group = f.create_group("train")
        for code, name in enumerate(classes):
            for path in sorted((root / "train" / name).iterdir()):
                with Image.open(path) as image:
                    pixels = np.asarray(image.convert("RGB"))
                group.create_dataset(str(len(labels)), data=pixels, compression="gzip", chunks=True)
                labels.append(code)
        f.create_dataset("labels", data=np.asarray(labels, dtype=np.int64))
    return len(labels)


def _raw_h5py(path: Path, arrays: dict[str, npt.NDArray[Any]], compression: str | None, sync: bool = False) -> int:
    """Write each array as one chunked dataset with the h5ml writer's chunk shape and filters; return the rows.

    The writer's datasets are resizable; these have a fixed shape, so the chunk
    rows are capped at the array's length (HDF5 refuses a longer chunk). With
    ``sync``, the closed file is fsynced (as :func:`h5ml.write` does its own).
    """
    with h5py.File(path, "w") as f:
        for name, values in arrays.items():
            options: dict[str, Any] = {}
            if compression is not None:
                options = {"compression": compression, "shuffle": values.dtype.itemsize > 1}
            chunks = chunk_shape(values.shape[1:], values.dtype.itemsize, len(values))
            chunks = (min(chunks[0], max(1, len(values))), *chunks[1:])  # a fixed shape: no chunk longer than it
            f.create_dataset(name, data=values, chunks=chunks, **options)
    if sync:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    return len(next(iter(arrays.values())))


# --------------------------------------------------------------------------
# measuring


Pipeline = Callable[[Path], int]


def _cpu_seconds() -> float:
    """CPU time (user + system) of this process's threads and of its finished child processes."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _timed(pipeline: Pipeline, output: Path) -> tuple[float, float, int, int]:
    """Run one pipeline into a fresh ``output``: (seconds, CPU seconds, samples it reports, output bytes)."""
    output.unlink(missing_ok=True)
    start, cpu = time.perf_counter(), _cpu_seconds()
    samples = pipeline(output)
    seconds, cpu = time.perf_counter() - start, _cpu_seconds() - cpu
    size = output.stat().st_size
    output.unlink()
    return seconds, cpu, samples, size


def _race(
    pipelines: dict[str, Pipeline], expected: int, folder: Path, repeats: int
) -> tuple[dict[str, float], dict[str, int], dict[str, float]]:
    """Best samples/s of each pipeline over ``repeats`` alternating runs, its output bytes, best samples per CPU-s.

    Samples per CPU-second (all threads and finished child processes) do not
    depend on how many cores the run got: they show the work each pipeline
    does for a sample, when the machine is shared with other work.
    """
    best = dict.fromkeys(pipelines, 0.0)
    per_cpu = dict.fromkeys(pipelines, 0.0)
    sizes: dict[str, int] = {}
    for _ in range(repeats):
        for name, pipeline in pipelines.items():
            seconds, cpu, samples, size = _timed(pipeline, folder / f"out-{name.replace(' ', '-')}.h5")
            if samples != expected:
                raise RuntimeError(f"{name}: wrote {samples} samples, expected {expected}")
            best[name] = max(best[name], samples / seconds)
            per_cpu[name] = max(per_cpu[name], samples / max(cpu, 1e-9))
            sizes[name] = size
    return best, sizes, per_cpu


def _profile(pipeline: Pipeline, output: Path, top: int) -> str:
    """cProfile one run of ``pipeline`` in this process: the ``top`` functions by total and by cumulative time."""
    output.unlink(missing_ok=True)
    profiler = cProfile.Profile()
    profiler.enable()
    pipeline(output)
    profiler.disable()
    output.unlink()
    text = io.StringIO()
    stats = pstats.Stats(profiler, stream=text)
    stats.sort_stats("tottime").print_stats(top)
    stats.sort_stats("cumulative").print_stats(top)
    return text.getvalue()


def _converter_race(
    h5ml_side: Pipeline, tutorial: Pipeline, n: int, folder: Path, repeats: int, source_bytes: int, build: float
) -> dict[str, Any]:
    """Race a converter against its tutorial script: ``rates``, ``sizes``, ``per_cpu``, ``source_bytes``,
    ``build_s`` and ``h5ml`` (the converter's pipeline, to profile)."""
    rates, sizes, per_cpu = _race({"h5ml": h5ml_side, "tutorial": tutorial}, n, folder, repeats)
    return {
        "rates": rates,
        "sizes": sizes,
        "per_cpu": per_cpu,
        "source_bytes": source_bytes,
        "build_s": build,
        "h5ml": h5ml_side,
    }


def _audio(folder: Path, pairs: int, workers: int, repeats: int, seed: int) -> dict[str, Any]:
    """Build the audio folder and race the converter against the tutorial script (see :func:`_converter_race`)."""
    root = folder / "audio"
    start = time.perf_counter()
    source_bytes = audio_folder(root, pairs, seed)
    build = time.perf_counter() - start

    def h5ml_side(out: Path) -> int:
        report = convert_audio_folder(root, out, compression="gzip", workers=workers, progress=False)
        return report.total

    return _converter_race(
        h5ml_side, lambda out: tutorial_audio(root, out), pairs, folder, repeats, source_bytes, build
    )


def _images(folder: Path, n: int, workers: int, repeats: int, seed: int) -> dict[str, Any]:
    """Build the image folder and race the converter against the tutorial script (see :func:`_converter_race`)."""
    root = folder / "images"
    start = time.perf_counter()
    source_bytes = image_folder(root, n, seed)
    build = time.perf_counter() - start
    width, height = IMAGE_SHAPE[1], IMAGE_SHAPE[0]

    def h5ml_side(out: Path) -> int:
        report = convert_image_folder(
            root, out, mode="dense", size=(width, height), compression="gzip", workers=workers, progress=False
        )
        return report.total

    return _converter_race(h5ml_side, lambda out: tutorial_images(root, out), n, folder, repeats, source_bytes, build)


def _writer(folder: Path, rows: int, repeats: int, seed: int) -> dict[str, Any]:
    """Race ``h5ml.write`` against raw h5py (with and without fsync) on the same arrays, uncompressed and gzip.

    Returns as :func:`_converter_race`, with ``h5ml`` a dict ``{"none": pipeline, "gzip": pipeline}``.
    """
    start = time.perf_counter()
    rng = np.random.default_rng(seed)
    images = np.concatenate([image_pixels(rng, min(1024, rows - i)) for i in range(0, rows, 1024)])
    labels = rng.integers(0, CLASSES, size=rows).astype(np.int64)
    arrays = {"image": images, "label": labels}
    build = time.perf_counter() - start
    rates: dict[str, float] = {}
    sizes: dict[str, int] = {}
    per_cpu: dict[str, float] = {}
    profiled: dict[str, Pipeline] = {}
    for compression in (None, "gzip"):
        tag = compression or "none"

        def h5ml_side(out: Path, compression: str | None = compression) -> int:
            h5ml.write(out, {"train": arrays}, metadata={"name": "bench-ingest"}, compression=compression)
            return rows

        def h5py_side(out: Path, compression: str | None = compression) -> int:
            return _raw_h5py(out, arrays, compression)

        def h5py_synced(out: Path, compression: str | None = compression) -> int:
            return _raw_h5py(out, arrays, compression, sync=True)

        pipelines: dict[str, Pipeline] = {
            f"h5ml {tag}": h5ml_side,
            f"h5py {tag}": h5py_side,
            f"h5py+fsync {tag}": h5py_synced,
        }
        best, size, cpu = _race(pipelines, rows, folder, repeats)
        rates.update(best)
        sizes.update(size)
        per_cpu.update(cpu)
        profiled[tag] = h5ml_side
    return {
        "rates": rates,
        "sizes": sizes,
        "per_cpu": per_cpu,
        "source_bytes": images.nbytes + labels.nbytes,
        "build_s": build,
        "h5ml": profiled,
    }


def run(
    pairs: int,
    images: int,
    rows: int,
    workers: int,
    repeats: int,
    seed: int,
    only: Sequence[str] = WORKLOADS,
    profile_top: int = 0,
) -> dict[str, Any]:
    """Build the sources and measure every pipeline of the chosen workloads.

    Parameters
    ----------
    pairs, images, rows
        Audio pairs, image files, and rows of the writer's arrays.
    workers
        Decoding workers of the converters (their ``workers``: threads, as ``h5ml convert --workers N``
        without ``--processes``).
    repeats
        Runs of each pipeline (alternating); the best counts.
    seed
        Seeds every source.
    only
        The workloads to run, among :data:`WORKLOADS`.
    profile_top
        When > 0, also cProfile one h5ml run of each workload (this process
        only) and keep the ``profile_top`` costliest functions.

    Returns
    -------
    dict
        ``config``; ``samples_per_s`` (``audio h5ml``, ``audio tutorial``,
        ``images ...``, ``writer h5ml none``, ``writer h5py none``, ``writer
        h5ml gzip``, ``writer h5py gzip``); ``samples_per_cpu_s`` (the same
        per CPU-second of every thread and finished child process);
        ``output_bytes`` of each; ``ratios``
        (h5ml over its baseline); ``goals_met``; ``source_bytes``;
        ``profiles`` (text, when asked); ``seconds`` (build and total).
    """
    t0 = time.perf_counter()
    load_before = os.getloadavg()
    rates: dict[str, float] = {}
    sizes: dict[str, int] = {}
    per_cpu: dict[str, float] = {}
    source_bytes: dict[str, int] = {}
    builds: dict[str, float] = {}
    profiles: dict[str, str] = {}
    ratios: dict[str, float] = {}
    goals: dict[str, bool] = {}
    with tempfile.TemporaryDirectory(prefix="bench-ingest-") as tmp:
        folder = Path(tmp)
        for workload in only:
            if workload == "audio":
                result = _audio(folder, pairs, workers, repeats, seed)
            elif workload == "images":
                result = _images(folder, images, workers, repeats, seed)
            elif workload == "writer":
                result = _writer(folder, rows, repeats, seed)
            else:
                raise ValueError(f"unknown workload {workload!r}; choose among {list(WORKLOADS)}")
            rates.update({f"{workload} {k}": v for k, v in result["rates"].items()})
            sizes.update({f"{workload} {k}": v for k, v in result["sizes"].items()})
            per_cpu.update({f"{workload} {k}": v for k, v in result["per_cpu"].items()})
            source_bytes[workload] = result["source_bytes"]
            builds[workload] = result["build_s"]
            if workload == "writer":
                for tag in ("none", "gzip"):
                    ratio = rates[f"writer h5ml {tag}"] / rates[f"writer h5py {tag}"]
                    ratios[f"writer h5ml {tag} / h5py {tag}"] = ratio
                    goals[f"writer {tag} >= {GOAL_VS_H5PY}x h5py"] = ratio >= GOAL_VS_H5PY
                    synced = rates[f"writer h5ml {tag}"] / rates[f"writer h5py+fsync {tag}"]
                    ratios[f"writer h5ml {tag} / h5py+fsync {tag}"] = synced
                if profile_top > 0:
                    for tag, side in result["h5ml"].items():
                        profiles[f"writer {tag}"] = _profile(side, folder / "profiled.h5", profile_top)
            else:
                ratio = rates[f"{workload} h5ml"] / rates[f"{workload} tutorial"]
                ratios[f"{workload} h5ml / tutorial"] = ratio
                ratios[f"{workload} h5ml / tutorial per CPU-s"] = (
                    per_cpu[f"{workload} h5ml"] / per_cpu[f"{workload} tutorial"]
                )
                goals[f"{workload} >= {GOAL_VS_TUTORIAL:g}x tutorial"] = ratio >= GOAL_VS_TUTORIAL
                if profile_top > 0:
                    profiles[workload] = _profile(result["h5ml"], folder / "profiled.h5", profile_top)
    return {
        "config": {
            "audio_pairs": pairs,
            "audio_rate": RATE,
            "clip_seconds": list(CLIP_SECONDS),
            "images": images,
            "image_shape": list(IMAGE_SHAPE),
            "writer_rows": rows,
            "workers": workers,
            "repeats": repeats,
            "seed": seed,
            "workloads": list(only),
            "cpus": os.cpu_count(),
            "load_average_before_after": [round(load_before[0], 2), round(os.getloadavg()[0], 2)],
            "h5ml": h5ml.__version__,
            "h5py": h5py.version.version,
            "hdf5": h5py.version.hdf5_version,
        },
        "samples_per_s": rates,
        "samples_per_cpu_s": per_cpu,
        "output_bytes": sizes,
        "ratios": ratios,
        "goals_met": goals,
        "source_bytes": source_bytes,
        "profiles": profiles,
        "seconds": {**{f"build {k}": v for k, v in builds.items()}, "total": time.perf_counter() - t0},
    }


def main() -> None:
    """Parse the command line, run the benchmark and print a table (or JSON)."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=400, help="audio (noisy, clean) pairs")
    parser.add_argument("--images", type=int, default=1000, help="PNG files of the image folder")
    parser.add_argument("--rows", type=int, default=20000, help="rows of the writer's in-memory arrays")
    parser.add_argument(
        "--workers", type=int, default=1, help="decoding threads of the converters (default 1, as h5ml convert)"
    )
    parser.add_argument("--repeats", type=int, default=2, help="runs of each pipeline (the best is kept)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--only", choices=WORKLOADS, action="append", help="run this workload only (repeatable)")
    parser.add_argument(
        "--profile",
        type=int,
        nargs="?",
        const=25,
        default=0,
        metavar="TOP",
        help="cProfile one h5ml run of each workload (this process only); print the TOP costliest functions",
    )
    parser.add_argument("--smoke", action="store_true", help="tiny sizes: checks the benchmark runs, measures nothing")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    args = parser.parse_args()
    only = tuple(args.only) if args.only else WORKLOADS
    if args.smoke:
        results = run(6, 30, 256, args.workers, 1, args.seed, only, min(args.profile, 5))
    else:
        results = run(args.pairs, args.images, args.rows, args.workers, args.repeats, args.seed, only, args.profile)
    if args.json:
        print(json.dumps(results, indent=2))
        return
    cfg = results["config"]
    print(
        f"conversion: {cfg['audio_pairs']} pairs of int16 mono WAV at {cfg['audio_rate']} Hz "
        f"({cfg['clip_seconds'][0]:g}-{cfg['clip_seconds'][1]:g} s), {cfg['images']} PNG images "
        f"{'x'.join(map(str, cfg['image_shape']))}, converters with workers={cfg['workers']}; writer: "
        f"{cfg['writer_rows']} rows of uint8 {'x'.join(map(str, cfg['image_shape']))} + int64; "
        f"{cfg['cpus']} CPUs, load average {cfg['load_average_before_after'][0]:g} -> "
        f"{cfg['load_average_before_after'][1]:g} (samples/s, best of {cfg['repeats']})"
    )
    print(f"  {'pipeline':22s} {'samples/s':>12s} {'per CPU-s':>12s} {'output MB':>10s}")
    for name, rate in results["samples_per_s"].items():
        cpu = results["samples_per_cpu_s"][name]
        print(f"  {name:22s} {rate:12,.0f} {cpu:12,.0f} {results['output_bytes'][name] / 1e6:10.1f}")
    print("ratios")
    for name, ratio in results["ratios"].items():
        print(f"  {name:36s} {ratio:6.2f}x")
    print("goals (issue 5)" + (": smoke run, tiny sizes, nothing measured" if args.smoke else ""))
    for name, met in results["goals_met"].items():
        print(f"  {name:36s} {'met' if met else 'NOT met'}")
    for name, text in results["profiles"].items():
        print(f"\nprofile of h5ml {name} (this process)\n{text}")
    secs = results["seconds"]
    print(", ".join(f"{k} {v:.1f} s" for k, v in secs.items()))


if __name__ == "__main__":
    main()
