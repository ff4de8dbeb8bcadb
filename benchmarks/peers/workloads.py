"""The benchmark's workloads: real, compressible content as in-memory arrays (issue 15, "Benchmark suite").

Three workloads, every one seeded, every one with labels ``y`` (int64):

- ``images``: uint8 tiles of 64x64x3 cut at seeded positions (with seeded
  horizontal flips) from the colour photographs bundled with scikit-learn
  (``load_sample_images``: china, flower) and scikit-image (``skimage.data``:
  astronaut, coffee, chelsea, rocket, hubble_deep_field, immunohistochemistry,
  retina, colorwheel, stereo_motorcycle); ``y`` is the source photograph.
  Photographs, not random bytes: gzip and zstd compress them as they would a
  real image dataset.
- ``speech``: ragged float32 clips of 16000-64000 samples cut at seeded
  positions and lengths from speech that ``espeak-ng`` synthesises from a
  fixed text (22050 Hz, int16 scaled to [-1, 1)); ``y`` is the sentence the
  clip starts in. The clips share one synthesised signal, so the values are
  speech, not noise.
- ``tabular``: float32 rows of 32 columns: the 30 features of scikit-learn's
  bundled breast-cancer table (the California housing and covtype tables are
  not bundled offline), its target and the source row, resampled to N rows in
  seeded order with a seeded 0.1% multiplicative jitter (so rows are not
  byte-identical repeats); ``y`` is the target.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import wave
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

__all__ = ["SKIMAGE_PHOTOS", "Workload", "image_tiles", "photographs", "speech_clips", "tabular_rows"]

#: Colour photographs of ``skimage.data`` that ship with scikit-image (no download).
SKIMAGE_PHOTOS = (
    "astronaut",
    "coffee",
    "chelsea",
    "rocket",
    "hubble_deep_field",
    "immunohistochemistry",
    "retina",
    "colorwheel",
    "stereo_motorcycle",
)
TILE = 64
SENTENCES = (
    "The quick brown fox jumps over the lazy dog while the farmer watches from the gate.",
    "Hierarchical data formats keep many arrays in one file, with their names and attributes.",
    "A shuffled epoch reads its samples in a new order every time the model sees the data.",
    "Compressed chunks are smaller on disk, but every read must inflate them again.",
    "Seven silver swans swam silently seaward, under a sky the colour of slate.",
    "Please call Stella and ask her to bring these things with her from the store.",
    "The benchmark validates every batch, so that no reader wins by returning wrong data.",
    "Speech clips of different lengths are stored as one long array of values and their offsets.",
)


@dataclass
class Workload:
    """One workload's arrays.

    Attributes
    ----------
    name
        ``"images"``, ``"speech"`` or ``"tabular"``.
    x
        Dense ``numpy.ndarray`` (N, ...) or, for ragged data, a list of N 1-D arrays.
    y
        int64 labels (N,).
    """

    name: str
    x: npt.NDArray[np.generic] | list[npt.NDArray[np.float32]]
    y: npt.NDArray[np.int64]

    @property
    def ragged(self) -> bool:
        """True when ``x`` is a list of arrays of different lengths."""
        return isinstance(self.x, list)

    def __len__(self) -> int:
        return len(self.y)

    @property
    def nbytes(self) -> int:
        """Bytes of ``x`` and ``y`` in memory."""
        xs = sum(a.nbytes for a in self.x) if isinstance(self.x, list) else self.x.nbytes
        return int(xs + self.y.nbytes)


def photographs() -> list[npt.NDArray[np.uint8]]:
    """Return the bundled colour photographs (H, W, 3) uint8, in a fixed order."""
    from skimage import data
    from sklearn.datasets import load_sample_images

    photos = [np.ascontiguousarray(p[..., :3]) for p in load_sample_images().images]
    for name in SKIMAGE_PHOTOS:
        img = getattr(data, name)()
        img = img[0] if isinstance(img, tuple) else img  # stereo_motorcycle: (left, right, disparity)
        photos.append(np.ascontiguousarray(img[..., :3]))
    return photos


def image_tiles(n: int, seed: int) -> Workload:
    """Return ``n`` seeded 64x64x3 uint8 tiles of the photographs, labelled by photograph.

    Parameters
    ----------
    n
        Number of tiles.
    seed
        Seed of the positions, photographs and flips.
    """
    photos = photographs()
    rng = np.random.default_rng(seed)
    which = rng.integers(0, len(photos), size=n)
    x = np.empty((n, TILE, TILE, 3), dtype=np.uint8)
    for p, photo in enumerate(photos):
        rows = np.flatnonzero(which == p)
        tops = rng.integers(0, photo.shape[0] - TILE + 1, size=len(rows))
        lefts = rng.integers(0, photo.shape[1] - TILE + 1, size=len(rows))
        flips = rng.random(len(rows)) < 0.5
        for r, t, left, f in zip(rows, tops, lefts, flips, strict=True):
            tile = photo[t : t + TILE, left : left + TILE]
            x[r] = tile[:, ::-1] if f else tile
    return Workload("images", x, which.astype(np.int64))


def _speak(text: str, folder: Path) -> npt.NDArray[np.float32]:
    out = folder / "speech.wav"
    subprocess.run(["espeak-ng", "-w", str(out), text], check=True, capture_output=True, timeout=60)
    with wave.open(str(out)) as w:
        frames = w.readframes(w.getnframes())
    return (np.frombuffer(frames, dtype="<i2").astype(np.float32) / 32768.0).astype(np.float32)


def speech_clips(n: int, seed: int, min_len: int = 16000, max_len: int = 64000) -> Workload:
    """Return ``n`` ragged float32 speech clips of ``min_len``..``max_len`` samples from espeak-ng.

    Raises
    ------
    RuntimeError
        If ``espeak-ng`` is not on PATH (install the Debian package ``espeak-ng``).
    """
    if shutil.which("espeak-ng") is None:
        raise RuntimeError("the speech workload needs espeak-ng on PATH: apt-get install espeak-ng")
    with tempfile.TemporaryDirectory() as tmp:
        parts = [_speak(s, Path(tmp)) for s in SENTENCES]
    starts = np.cumsum([0] + [len(p) for p in parts])
    signal = np.concatenate(parts)
    while len(signal) < 4 * max_len:  # a short synthesis is repeated, never padded with silence
        signal = np.concatenate([signal, signal])
    rng = np.random.default_rng(seed)
    lengths = rng.integers(min_len, max_len + 1, size=n)
    begins = rng.integers(0, len(signal) - max_len, size=n)
    x = [signal[b : b + m].copy() for b, m in zip(begins, lengths, strict=True)]
    y = (np.searchsorted(starts, begins % starts[-1], side="right") - 1).astype(np.int64)
    return Workload("speech", x, y)


def tabular_rows(n: int, seed: int, columns: int = 32) -> Workload:
    """Return ``n`` float32 rows of ``columns`` columns resampled from the breast-cancer table (see module)."""
    from sklearn.datasets import load_breast_cancer

    table = load_breast_cancer()
    src = np.column_stack([table.data, table.target, np.arange(len(table.target))]).astype(np.float64)
    src = src[:, :columns] if src.shape[1] >= columns else np.pad(src, ((0, 0), (0, columns - src.shape[1])))
    rng = np.random.default_rng(seed)
    rows = rng.integers(0, len(src), size=n)
    x = (src[rows] * (1.0 + 1e-3 * rng.standard_normal((n, columns)))).astype(np.float32)
    return Workload("tabular", x, table.target[rows].astype(np.int64))
