"""Collate h5ml samples into batch tensors; ragged features are padded, with lengths and a mask (§6.3, C05).

=============  =============================================================
encoding       in the batch dict
=============  =============================================================
dense          tensor ``(R, *sample_shape)``, the stored dtype
categorical    int64 tensor ``(R,)`` of codes (-1 = missing)
string         ``list`` of R ``str``
ragged         tensor ``(R, L, ...)`` padded with ``pad_value`` to the longest
               sample L, plus ``<name>_lengths`` (int64 ``(R,)``) and
               ``<name>_mask`` (bool ``(R, L)``, True on real rows)
bytes          ``list`` of R ``bytes``
image          (``bytes`` decoded with ``decode_images``) uint8 tensor
               ``(R, H, W, C)``; images of several sizes are padded, with
               ``<name>_lengths`` (int64 ``(R, 3)`` shapes) and ``<name>_mask``
=============  =============================================================

A ragged feature whose samples differ in more than their first axis (one
with ``shapes``) is padded on every axis; then ``<name>_lengths`` is int64
``(R, ndim)`` (each sample's shape) and ``<name>_mask`` has the padded shape.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch

from h5ml.sampling import padding
from h5ml_torch.dataset import SampleBatch, to_torch

__all__ = ["Collate", "collate", "pad_collate", "pad_ragged"]

LENGTHS_SUFFIX = padding.LENGTHS_SUFFIX
MASK_SUFFIX = padding.MASK_SUFFIX


def pad_ragged(samples: Sequence[Any], pad_value: float = 0) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Pad variable-length samples to the longest one (§6.3).

    Parameters
    ----------
    samples
        R arrays or tensors of the same dtype and number of dimensions
        (at least 1), differing in their lengths.
    pad_value
        Value written in the padding.

    Returns
    -------
    padded : torch.Tensor
        ``(R, *max_shape)``, the samples' dtype.
    lengths : torch.Tensor
        int64 ``(R,)`` first-axis lengths when only the first axis varies,
        else int64 ``(R, ndim)`` shapes.
    mask : torch.Tensor
        bool, ``(R, L)`` (or the padded shape when more axes vary): True
        where a value is real.

    Raises
    ------
    ValueError
        If the samples have different numbers of dimensions or are 0-d.
    """
    arrays = [s.detach().cpu().numpy() if isinstance(s, torch.Tensor) else s for s in samples]
    padded, lengths, mask = padding.pad_ragged(arrays, pad_value)
    return torch.from_numpy(padded), torch.from_numpy(lengths), torch.from_numpy(mask)


def _column(name: str, encoding: str | None, values: Sequence[Any], pad_value: float, out: dict[str, Any]) -> None:
    """Put the batch form of one feature's R values in ``out``."""
    first = values[0] if len(values) else None
    if encoding in ("string", "bytes") or isinstance(first, (str, bytes)):
        out[name] = [v for v in values]
        return
    if encoding == "ragged":
        out[name], out[name + LENGTHS_SUFFIX], out[name + MASK_SUFFIX] = pad_ragged(values, pad_value)
        return
    if encoding == "image":  # decoded images: one array when they share a size, else padded
        arrays = [v.detach().cpu().numpy() if isinstance(v, torch.Tensor) else v for v in values]
        batch, lengths, mask = padding.stack_or_pad(arrays, pad_value)
        out[name] = torch.from_numpy(batch)
        if lengths is not None and mask is not None:
            out[name + LENGTHS_SUFFIX], out[name + MASK_SUFFIX] = torch.from_numpy(lengths), torch.from_numpy(mask)
        return
    if isinstance(values, np.ndarray):  # a whole dense or categorical column read at once
        out[name] = to_torch(values)
        return
    tensors = [v if isinstance(v, torch.Tensor) else to_torch(v) for v in values]
    if encoding is None and len({tuple(t.shape) for t in tensors}) > 1:
        out[name], out[name + LENGTHS_SUFFIX], out[name + MASK_SUFFIX] = pad_ragged(tensors, pad_value)
        return
    out[name] = torch.stack(tensors) if tensors else torch.empty(0)


def collate(batch: Sequence[dict[str, Any]], pad_value: float = 0) -> dict[str, Any]:
    """Collate samples of an :class:`~h5ml_torch.dataset.H5MLDataset` into one batch dict.

    Parameters
    ----------
    batch
        A :class:`~h5ml_torch.dataset.SampleBatch` (what the dataset's
        ``__getitems__`` returns: its columns are converted whole, without
        per-sample copies), or any sequence of sample dicts with the same
        keys (then a feature whose samples differ in shape is padded as
        ragged).
    pad_value
        Value written in the padding of ragged features.

    Returns
    -------
    dict
        See the module docstring: tensors for dense, categorical and ragged
        features (plus ``<name>_lengths`` and ``<name>_mask``), lists for
        string and bytes features.

    Raises
    ------
    ValueError
        If ragged samples of one feature differ in their number of dimensions.
    """
    out: dict[str, Any] = {}
    if isinstance(batch, SampleBatch) and batch.columns is not None:
        for name, values in batch.columns.items():
            _column(name, batch.encodings.get(name), values, pad_value, out)
        return out
    encodings = batch.encodings if isinstance(batch, SampleBatch) else {}
    samples = list(batch)
    if not samples:
        return out
    for name in samples[0]:
        _column(name, encodings.get(name), [s[name] for s in samples], pad_value, out)
    return out


#: The padding collate (same function as :func:`collate`).
pad_collate = collate


class Collate:
    """A picklable collate with a padding value and an optional per-batch transform.

    Parameters
    ----------
    pad_value
        Value written in the padding of ragged features.
    transform
        Optional callable ``dict -> dict`` applied to each collated batch (in
        the worker). It must pickle for spawn/forkserver workers.
    """

    def __init__(
        self, pad_value: float = 0, transform: Callable[[dict[str, Any]], dict[str, Any]] | None = None
    ) -> None:
        self.pad_value = pad_value
        self.transform = transform

    def __call__(self, batch: Sequence[dict[str, Any]]) -> dict[str, Any]:
        """Collate ``batch`` with :func:`collate`, then apply the transform."""
        out = collate(batch, self.pad_value)
        return out if self.transform is None else self.transform(out)
