"""Batch validation: every batch a reader returns is checked against the source arrays.

No reader wins by returning wrong data: :func:`check_batch` compares the
batch's sample count, ``x`` dtype and shape (each clip's length for ragged
data) and labels with the source, and the values of a few sampled rows
byte for byte. A mismatch raises :class:`BatchMismatch`, and the benchmark
records the reader's cell as ``"wrong data: ..."`` instead of a speed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .workloads import Workload

__all__ = ["BatchMismatch", "as_numpy", "check_batch"]

#: Rows per batch whose values are compared byte for byte (besides every label, shape and length).
SAMPLED_ROWS = 3


class BatchMismatch(AssertionError):
    """A reader returned a batch that differs from the source (dtype, shape, labels or values)."""


def as_numpy(value: Any) -> Any:
    """Return ``value`` as numpy: torch tensors and lists of them become arrays (no copy where possible)."""
    if hasattr(value, "numpy") and hasattr(value, "detach"):
        return value.detach().numpy()
    if isinstance(value, (list, tuple)):
        return [as_numpy(v) for v in value]
    return value


def check_batch(
    workload: Workload, indices: Sequence[int] | np.ndarray, x: Any, y: Any, rng: np.random.Generator
) -> None:
    """Check one batch ``(x, y)`` said to hold the source samples ``indices``, in that order.

    Parameters
    ----------
    workload
        The source arrays.
    indices
        Source sample numbers of the batch's rows (R,).
    x
        Dense (R, ...) array or tensor, or for ragged data a sequence of R
        1-D arrays (an object array or a list).
    y
        Labels (R,), any integer dtype.
    rng
        Picks the rows compared value by value.

    Raises
    ------
    BatchMismatch
        On any difference, naming the first one.
    """
    rows = np.asarray(indices, dtype=np.int64)
    x = as_numpy(x)
    labels = np.asarray(as_numpy(y)).reshape(-1)
    if len(labels) != len(rows):
        raise BatchMismatch(f"batch has {len(labels)} labels for {len(rows)} samples")
    if not np.array_equal(labels.astype(np.int64), workload.y[rows]):
        raise BatchMismatch("labels differ from the source")
    if len(rows) == 0:
        return
    picks = rng.choice(len(rows), size=min(SAMPLED_ROWS, len(rows)), replace=False)
    if isinstance(workload.x, list):
        clips = list(x)
        if len(clips) != len(rows):
            raise BatchMismatch(f"batch has {len(clips)} clips for {len(rows)} samples")
        for k, r in enumerate(rows):
            clip = np.asarray(clips[k])
            if clip.shape != workload.x[r].shape:
                raise BatchMismatch(f"clip {k} (sample {r}) has shape {clip.shape}, source {workload.x[r].shape}")
        for k in picks:
            clip = np.asarray(clips[k])
            if clip.dtype != np.float32 or not np.array_equal(clip, workload.x[rows[k]]):
                raise BatchMismatch(f"clip {k} (sample {rows[k]}) differs from the source ({clip.dtype})")
        return
    arr = np.asarray(x)
    want = (len(rows), *workload.x.shape[1:])
    if arr.dtype != workload.x.dtype or arr.shape != want:
        raise BatchMismatch(f"batch is {arr.dtype} {arr.shape}, source {workload.x.dtype} {want}")
    for k in picks:
        if not np.array_equal(arr[k], workload.x[rows[k]]):
            raise BatchMismatch(f"row {k} (sample {rows[k]}) differs from the source")
