"""Write throughput of the reference writer beside raw chunked h5py with the same guarantees (issue 15).

Two workloads of real, compressible content, built once per run (seeded):

- ``images``: N tiles of 64x64x3 uint8 cut at seeded positions from the
  photographs bundled with scikit-learn (``load_sample_images``) and
  scikit-image (``skimage.data``), plus int64 labels (dense encoding);
- ``audio``: M float32 speech clips of 16000-64000 samples, cut at seeded
  positions from speech that ``espeak-ng`` synthesises (several sentences,
  concatenated and repeated), stored ragged (``values`` + ``offsets``).

Writers, run side by side in one process, each once per repetition in a
seeded random order (interleaved, after one untimed warm-up round), medians
reported:

- ``h5ml.write``: the in-memory writer;
- ``h5ml.Writer``: the streaming writer, ``append`` of batches of 256 samples
  (the path the converters use);
- ``raw h5py``: the same chunk shapes (:func:`h5ml.spec.chunks.chunk_shape`)
  and resizable first axis, written with plain h5py (ragged: ``values`` and ``offsets`` datasets), then
  ``os.fsync`` and one ``hashlib.sha256`` pass over the same bytes, so that it
  gives what h5ml gives: a durable file and a content fingerprint.

The uncompressed table is the goal (h5ml at least 0.8x raw); the gzip table
(level 4, h5ml's parallel gzip against HDF5's own filter) is the second one.
The machine's cores may be shared: the load average is printed beside the
numbers, which are noisy when it is high. Run::

    python benchmarks/bench_writer.py            # 20000 tiles, 3000 clips
    python benchmarks/bench_writer.py --smoke    # tiny, seconds, for CI
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import tempfile
import time
import wave
from collections.abc import Callable
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import numpy.typing as npt

import h5ml
from h5ml.spec.chunks import chunk_shape

TILE = 64
STREAM_BATCH = 256
SENTENCES = (
    "The quick brown fox jumps over the lazy dog while the river runs to the sea.",
    "Machine learning datasets are stored in hierarchical files with chunks and checksums.",
    "Every sample is written once, hashed once, and moved into place when the file is complete.",
    "Seven silver swans swam silently seaward, singing songs of summer evenings.",
)


def photo_tiles(n: int, seed: int) -> npt.NDArray[np.uint8]:
    """``n`` tiles ``(64, 64, 3)`` uint8 cut at seeded positions from bundled photographs."""
    import skimage.data
    from sklearn.datasets import load_sample_images

    photos = [np.asarray(p, dtype=np.uint8) for p in load_sample_images().images]
    for name in ("astronaut", "coffee", "chelsea", "rocket", "hubble_deep_field", "immunohistochemistry"):
        photos.append(np.asarray(getattr(skimage.data, name)(), dtype=np.uint8)[..., :3])
    rng = np.random.default_rng(seed)
    out = np.empty((n, TILE, TILE, 3), dtype=np.uint8)
    which = rng.integers(0, len(photos), size=n)
    for i, k in enumerate(which):
        p = photos[k]
        y = int(rng.integers(0, p.shape[0] - TILE + 1))
        x = int(rng.integers(0, p.shape[1] - TILE + 1))
        out[i] = p[y : y + TILE, x : x + TILE]
    return out


def speech(workdir: Path) -> npt.NDArray[np.float32]:
    """Speech synthesised by espeak-ng (float32 in [-1, 1]), the sentences concatenated."""
    parts = []
    for i, text in enumerate(SENTENCES):
        wav = workdir / f"s{i}.wav"
        subprocess.run(["espeak-ng", "-w", str(wav), text], check=True, capture_output=True)
        with wave.open(str(wav), "rb") as w:
            frames = np.frombuffer(w.readframes(w.getnframes()), dtype="<i2")
        parts.append(frames.astype(np.float32) / 32768.0)
    return np.concatenate(parts)


def speech_clips(voice: npt.NDArray[np.float32], m: int, seed: int) -> list[npt.NDArray[np.float32]]:
    """``m`` float32 clips of 16000-64000 samples cut at seeded positions from ``voice`` repeated."""
    rng = np.random.default_rng(seed)
    reps = -(-64000 // voice.shape[0]) + 1
    long = np.tile(voice, reps)
    clips = []
    for _ in range(m):
        length = int(rng.integers(16000, 64001))
        start = int(rng.integers(0, long.shape[0] - length + 1))
        clips.append(long[start : start + length].copy())
    return clips


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def raw_dense(path: Path, images: np.ndarray, labels: np.ndarray, compression: str | None) -> None:
    """Images and labels as chunked h5py datasets with the writer's chunk shapes; fsync; one SHA-256 pass."""
    digest = hashlib.sha256()
    with h5py.File(path, "w") as f:
        g = f.create_group("train")
        for name, values in (("image", images), ("label", labels)):
            chunks = chunk_shape(values.shape[1:], values.dtype.itemsize, len(values))
            options: dict[str, Any] = {}
            if compression:
                options = {"compression": compression, "compression_opts": 4, "shuffle": values.dtype.itemsize > 1}
            g.create_dataset(name, data=values, chunks=chunks, maxshape=(None, *values.shape[1:]), **options)
            digest.update(memoryview(np.ascontiguousarray(values)).cast("B"))
    _fsync(path)


def raw_ragged(path: Path, clips: list[np.ndarray], compression: str | None) -> None:
    """Clips as ``values`` + ``offsets`` chunked h5py datasets; fsync; one SHA-256 pass."""
    digest = hashlib.sha256()
    values = np.concatenate(clips)
    offsets = np.zeros(len(clips) + 1, dtype=np.int64)
    np.cumsum([c.shape[0] for c in clips], out=offsets[1:])
    with h5py.File(path, "w") as f:
        g = f.create_group("train").create_group("audio")
        for name, arr in (("values", values), ("offsets", offsets)):
            chunks = chunk_shape(arr.shape[1:], arr.dtype.itemsize, len(arr))
            options: dict[str, Any] = {}
            if compression:
                options = {"compression": compression, "compression_opts": 4, "shuffle": True}
            g.create_dataset(name, data=arr, chunks=chunks, maxshape=(None, *arr.shape[1:]), **options)
            digest.update(memoryview(arr).cast("B"))
    _fsync(path)


def h5ml_write(path: Path, columns: dict[str, Any], compression: str | None) -> None:
    """:func:`h5ml.write` of one split."""
    h5ml.write(path, {"train": columns}, {"name": "bench"}, compression=compression, compression_opts=4)


def h5ml_stream(path: Path, columns: dict[str, Any], compression: str | None) -> None:
    """:class:`h5ml.Writer`: ``append`` of batches of :data:`STREAM_BATCH` samples."""
    n = len(next(iter(columns.values())))
    specs = {k: {"encoding": "ragged"} for k, v in columns.items() if isinstance(v, list)}
    with h5ml.Writer(path, {"name": "bench"}, compression=compression, compression_opts=4, features=specs) as w:
        for start in range(0, n, STREAM_BATCH):
            w.append("train", {k: v[start : start + STREAM_BATCH] for k, v in columns.items()})


Side = Callable[[Path], None]


def race(sides: dict[str, Side], workdir: Path, repeats: int, seed: int) -> dict[str, Any]:
    """Every side once per repetition in a seeded random order; median seconds, ratios to raw h5py."""
    rng = np.random.default_rng(seed)
    times: dict[str, list[float]] = {name: [] for name in sides}
    sizes: dict[str, int] = {}
    names = list(sides)
    for rep in range(-1, repeats):  # repetition -1 warms every side up (first imports, HDF5's first calls), untimed
        for k in rng.permutation(len(names)):
            name = names[int(k)]
            out = workdir / f"{name.replace(' ', '_').replace('.', '_')}.h5"
            out.unlink(missing_ok=True)
            start = time.perf_counter()
            sides[name](out)
            if rep >= 0:
                times[name].append(time.perf_counter() - start)
            sizes[name] = out.stat().st_size
            out.unlink()
    median = {name: statistics.median(t) for name, t in times.items()}
    raw = median["raw h5py+fsync+sha256"]
    return {
        "median_s": {k: round(v, 4) for k, v in median.items()},
        "ratio_to_raw": {k: round(raw / v, 3) for k, v in median.items()},
        "file_mb": {k: round(v / 1e6, 2) for k, v in sizes.items()},
    }


def run(n_images: int, n_clips: int, repeats: int, seed: int) -> dict[str, Any]:
    """Both workloads, uncompressed then gzip-4; return the results as a JSON-ready dict."""
    workdir = Path(tempfile.mkdtemp(prefix="bench_writer_", dir=os.environ.get("BENCH_DIR")))
    try:
        images = photo_tiles(n_images, seed)
        labels = np.random.default_rng(seed + 1).integers(0, 10, size=n_images).astype(np.int64)
        clips = speech_clips(speech(workdir), n_clips, seed + 2)
        image_cols = {"image": images, "label": labels}
        audio_cols: dict[str, Any] = {"audio": clips}
        out: dict[str, Any] = {
            "images": {"n": n_images, "mb": round((images.nbytes + labels.nbytes) / 1e6, 1)},
            "audio": {"n": n_clips, "mb": round(sum(c.nbytes for c in clips) / 1e6, 1)},
        }
        for compression in (None, "gzip"):
            table = "uncompressed" if compression is None else "gzip-4"

            def img_raw(p: Path, c: str | None = compression) -> None:
                raw_dense(p, images, labels, c)

            def aud_raw(p: Path, c: str | None = compression) -> None:
                raw_ragged(p, clips, c)

            img = {
                "raw h5py+fsync+sha256": img_raw,
                "h5ml.write": lambda p, c=compression: h5ml_write(p, image_cols, c),
                "h5ml.Writer": lambda p, c=compression: h5ml_stream(p, image_cols, c),
            }
            aud = {
                "raw h5py+fsync+sha256": aud_raw,
                "h5ml.write": lambda p, c=compression: h5ml_write(p, audio_cols, c),
                "h5ml.Writer": lambda p, c=compression: h5ml_stream(p, audio_cols, c),
            }
            out["images"][table] = race(img, workdir, repeats, seed)
            out["audio"][table] = race(aud, workdir, repeats, seed)
        out["loadavg"] = [round(x, 2) for x in os.getloadavg()]
        out["cores"] = os.cpu_count()
        out["versions"] = {"h5ml": h5ml.__version__, "h5py": h5py.__version__, "hdf5": h5py.version.hdf5_version}
        return out
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    """Parse the options, run, print JSON."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--images", type=int, default=20000)
    ap.add_argument("--clips", type=int, default=3000)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--seed", type=int, default=15)
    ap.add_argument("--smoke", action="store_true", help="tiny sizes, one repetition (CI)")
    args = ap.parse_args(argv)
    if args.smoke:
        args.images, args.clips, args.repeats = 300, 20, 1
    print(json.dumps(run(args.images, args.clips, args.repeats, args.seed), indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
