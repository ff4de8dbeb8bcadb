"""Collate h5ml samples into batch tensors: the core's numpy batch (§6.3, C05), converted.

The batch arrays are :func:`h5ml.sampling.batch_arrays`' (the same as the
Keras adapter's, see :mod:`h5ml.sampling.batches`): ragged features padded
with ``pad_value``, plus ``<name>_lengths`` and ``<name>_mask``; decoded
images stacked, or padded when their sizes differ. Arrays become tensors of
the same dtype; strings and bytes become lists of R ``str`` and ``bytes``.
With ``pad=False`` a ragged feature is a list of R tensors, unpadded.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from h5ml.reader.source import BatchTransform
from h5ml.sampling import ColumnBatch, column_arrays, padding, ragged_values
from h5ml_torch.dataset import to_torch

__all__ = ["Collate", "collate", "pad_collate", "pad_ragged"]


def pad_ragged(samples: Sequence[Any], pad_value: float = 0) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Pad variable-length samples (arrays or tensors) to the longest one: :func:`h5ml.sampling.pad_ragged` as tensors.

    Returns
    -------
    padded, lengths, mask : torch.Tensor
        As :func:`h5ml.sampling.pad_ragged`: ``(R, *max_shape)``, int64
        lengths ``(R,)`` (or shapes), bool ``(R, L)``, True on real values.

    Raises
    ------
    ValueError
        If the samples have different numbers of dimensions or are 0-d.
    """
    arrays = [s.detach().cpu().numpy() if isinstance(s, torch.Tensor) else s for s in samples]
    padded, lengths, mask = padding.pad_ragged(arrays, pad_value)
    return torch.from_numpy(padded), torch.from_numpy(lengths), torch.from_numpy(mask)


def collate(batch: Sequence[dict[str, Any]], pad_value: float = 0, *, pad: bool = True) -> dict[str, Any]:
    """Collate samples of an :class:`~h5ml_torch.dataset.H5MLDataset` into one batch dict.

    Parameters
    ----------
    batch
        A :class:`~h5ml_torch.dataset.SampleBatch` (its columns are converted
        whole), or any sequence of sample dicts with the same keys (then a key
        whose samples differ in shape is padded as ragged).
    pad_value
        Value written in the padding of ragged features.
    pad
        False: each ragged feature (or, in sample dicts, key of several
        shapes) as R unpadded, disjoint, writable views of one tensor (:func:`h5ml.sampling.ragged_values`).

    Returns
    -------
    dict
        Key -> tensor (with ``<name>_lengths`` and ``<name>_mask`` of padded
        features), or list (string, bytes, ragged with ``pad=False``).

    Raises
    ------
    ValueError
        If ragged samples of one feature differ in their number of dimensions
        (``pad=True``) or in dtype (``pad=False``).
    """
    if not isinstance(batch, ColumnBatch):
        batch = ColumnBatch(None, {}, list(batch), len(batch))
    out: dict[str, Any] = {}
    for name, values in batch.by_key().items():
        encoding = batch.encodings.get(name)
        if not pad and (encoding == "ragged" or (encoding is None and len({np.shape(v) for v in values}) > 1)):
            arrays = [np.asarray(v.detach().cpu().numpy() if isinstance(v, torch.Tensor) else v) for v in values]
            whole, at = ragged_values(arrays)  # views of one tensor: a worker sends the batch as one storage
            tensor, cuts = torch.from_numpy(whole), at.tolist()
            out[name] = [tensor[a:b].view(x.shape) for x, a, b in zip(arrays, cuts[:-1], cuts[1:], strict=True)]
            continue
        tensors = [v for v in values if isinstance(v, torch.Tensor)] if isinstance(values, list) else []
        if tensors and len(tensors) == len(values) and encoding != "ragged" and len({t.shape for t in tensors}) == 1:
            out[name] = torch.stack(tensors)  # the samples' tensors (a per-sample transform's dtype kept)
            continue
        for key, array in column_arrays(name, encoding, values, pad_value).items():
            out[key] = array.tolist() if array.dtype.kind in "UO" else to_torch(array)
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
    pad
        As :func:`collate`.
    """

    def __init__(self, pad_value: float = 0, transform: BatchTransform | None = None, *, pad: bool = True) -> None:
        self.pad_value, self.transform, self.pad = pad_value, transform, bool(pad)

    def __call__(self, batch: Sequence[dict[str, Any]]) -> dict[str, Any]:
        """Collate ``batch`` with :func:`collate`, then apply the transform."""
        out = collate(batch, self.pad_value, pad=self.pad)
        return out if self.transform is None else self.transform(out)
