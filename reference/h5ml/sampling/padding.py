"""Padding of ragged samples into one batch array, with lengths and a mask (§6.3, case C05).

A ragged feature's batch is a list of arrays of different lengths (the
reader's batch value of it: read-only views into the buffers the reader read,
see :class:`h5ml.reader.ragged.RaggedFeature`). Training frameworks want one
rectangular array: :func:`pad_ragged` pads every sample to the longest of the
batch and returns what the model needs to ignore the padding. Each sample is
copied once, straight into its row of the padded array (no intermediate
copies, no ``np.stack``); when only the first axis varies, the pad value is
written only after each sample (never under it) and the mask is computed from
the lengths at once. The framework adapters convert the three arrays to their
own tensors without a copy; the logic lives here once, and
:mod:`h5ml.sampling.batches` applies it to each feature of a batch. For
models that take the samples unpadded, :func:`ragged_values` copies a batch's
samples once into one new buffer, with their offsets (§6.3), which an adapter
cuts into writable views.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = ["LENGTHS_SUFFIX", "MASK_SUFFIX", "pad_ragged", "ragged_values", "stack_or_pad"]

#: Suffix of the key holding a padded feature's lengths in a batch dict (``"clip"`` -> ``"clip_lengths"``).
LENGTHS_SUFFIX = "_lengths"
#: Suffix of the key holding a padded feature's mask in a batch dict (``"clip"`` -> ``"clip_mask"``).
MASK_SUFFIX = "_mask"


def pad_ragged(
    samples: Sequence[npt.ArrayLike], pad_value: float = 0
) -> tuple[npt.NDArray[Any], npt.NDArray[np.int64], npt.NDArray[np.bool_]]:
    """Pad variable-length samples to the longest one of the batch (§6.3).

    Parameters
    ----------
    samples
        R arrays of one dtype and one number of dimensions (at least 1),
        differing in their shapes (usually their first axis: time steps,
        tokens); read-only views (a reader's batch) are fine: they are only
        read.
    pad_value
        Value written in the padding (cast to the samples' dtype).

    Returns
    -------
    padded : numpy.ndarray
        ``(R, *max_shape)`` of the samples' dtype (the first sample's),
        C-contiguous, writable and sharing memory with no sample: sample
        ``r`` copied once into the corner ``padded[r, :n0, :n1, ...]``.
    lengths : numpy.ndarray
        int64 ``(R,)`` first-axis lengths when only the first axis varies,
        else int64 ``(R, ndim)``: each sample's shape.
    mask : numpy.ndarray
        bool, ``(R, L)`` when only the first axis varies (else the padded
        shape): True where a value is real, False on padding.

    Raises
    ------
    ValueError
        If the samples are 0-d or differ in their number of dimensions. With
        no samples the three arrays are empty: ``(0,)`` float64, int64, bool.
    """
    arrays = [np.asarray(s) for s in samples]
    ndims = {a.ndim for a in arrays}
    if len(ndims) > 1 or 0 in ndims:
        raise ValueError(
            f"cannot pad samples of dimensions {sorted(ndims)}: ragged samples need the same number of "
            "dimensions, at least 1 (§6.3)"
        )
    if not arrays:
        return np.empty(0), np.empty(0, dtype=np.int64), np.empty(0, dtype=bool)
    shapes = np.array([a.shape for a in arrays], dtype=np.int64)
    max_shape = tuple(int(m) for m in shapes.max(axis=0))
    only_first = bool((shapes[:, 1:] == shapes[0, 1:]).all())
    if only_first:
        lengths = shapes[:, 0].copy()
        padded = np.empty((len(arrays), *max_shape), dtype=arrays[0].dtype)
        for row, (array, n) in enumerate(zip(arrays, lengths.tolist(), strict=True)):
            padded[row, :n] = array  # the sample's one copy
            padded[row, n:] = pad_value  # the padding after it, nothing written twice
        mask = np.arange(max_shape[0]) < lengths[:, None]
        return padded, lengths, mask
    padded = np.full((len(arrays), *max_shape), pad_value, dtype=arrays[0].dtype)
    mask = np.zeros((len(arrays), *max_shape), dtype=bool)
    for row, array in enumerate(arrays):
        region: tuple[int | slice, ...] = (row, *(slice(0, n) for n in array.shape))
        padded[region] = array
        mask[region] = True
    return padded, shapes, mask


def stack_or_pad(
    samples: Sequence[npt.ArrayLike], pad_value: float = 0
) -> tuple[npt.NDArray[Any], npt.NDArray[np.int64] | None, npt.NDArray[np.bool_] | None]:
    """Stack samples of one shape into ``(R, *shape)``; pad samples of several shapes (:func:`pad_ragged`).

    For values whose shape usually does not vary, such as decoded images of
    a dataset stored at one size: the batch is one array, and lengths and a
    mask come only when the shapes differ.

    Returns
    -------
    batch : numpy.ndarray
        ``(R, *shape)``, or ``(R, *max_shape)`` padded with ``pad_value``.
    lengths, mask : numpy.ndarray or None
        As :func:`pad_ragged` when the shapes differ, else None.

    Raises
    ------
    ValueError
        As :func:`pad_ragged`, for samples of different numbers of dimensions.
    """
    arrays = [np.asarray(s) for s in samples]
    if arrays and len({a.shape for a in arrays}) == 1:
        return np.stack(arrays), None, None
    return pad_ragged(arrays, pad_value)


def ragged_values(samples: Sequence[npt.ArrayLike]) -> tuple[npt.NDArray[Any], npt.NDArray[np.int64]]:
    """Concatenate variable-length samples into one new 1-d buffer: the ``values`` and ``offsets`` of §6.3.

    Parameters
    ----------
    samples
        R arrays of one dtype, any shapes (read-only views of a reader's
        ragged batch are fine: they are only read).

    Returns
    -------
    values : numpy.ndarray
        1-d, writable, C-contiguous, of the samples' dtype (float64 when
        there are no samples): every sample's values flattened (C order) and
        put back to back, sharing memory with no sample.
    offsets : numpy.ndarray of int64, shape (R + 1,)
        Sample ``r`` is ``values[offsets[r]:offsets[r + 1]]``, reshaped to its
        shape; ``offsets[0] == 0``.

    Raises
    ------
    ValueError
        If the samples differ in dtype (a concatenation would cast them).
    """
    arrays = [np.asarray(s) for s in samples]
    dtypes = {a.dtype for a in arrays}
    if len(dtypes) > 1:
        raise ValueError(
            f"cannot collate ragged samples of dtypes {sorted(str(d) for d in dtypes)}: "
            "the samples of one feature share a dtype (§6.3)"
        )
    offsets = np.zeros(len(arrays) + 1, dtype=np.int64)
    np.cumsum([a.size for a in arrays], out=offsets[1:])
    if not arrays:
        return np.empty(0), offsets
    return np.concatenate([a.reshape(-1) for a in arrays]), offsets
