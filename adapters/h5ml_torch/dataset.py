"""A map-style PyTorch dataset over one split of an h5ml file, worker-safe by holding only the path.

Each process (the main one, every ``DataLoader`` worker under fork, spawn or
forkserver, persistent or not) opens its own reader the first time it needs
one: the dataset pickles as ``(path, split, features, decode_images, color,
transform)`` and a reader inherited through ``fork`` is replaced (case C02).
All of that is :class:`h5ml.reader.source.SplitSource`; this module adds the
tensors.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import torch
from torch.utils.data import Dataset

from h5ml.model.remote import absolute_location, is_url
from h5ml.reader.source import SampleTransform, SplitSource
from h5ml.sampling import ColumnBatch

__all__ = ["H5MLDataset", "SampleBatch", "to_torch"]


def to_torch(value: Any) -> Any:
    """Convert one value returned by the reader to its PyTorch form.

    Parameters
    ----------
    value
        A numpy array or scalar, a ``str``, ``bytes``, or a Python ``int`` (a categorical code).

    Returns
    -------
    torch.Tensor or str or bytes
        A tensor of the same dtype (``int`` -> int64), sharing memory when the
        array is writeable; ``str`` and ``bytes`` unchanged (§6.4, §6.6).
    """
    if isinstance(value, (str, bytes)):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return torch.tensor(value, dtype=torch.int64)
    array = np.asarray(value)
    if not array.flags.writeable:  # torch.from_numpy warns on read-only memory
        array = array.copy()
    return torch.from_numpy(array)


class SampleBatch(ColumnBatch):
    """A batch from :meth:`H5MLDataset.__getitems__`: a :class:`h5ml.sampling.ColumnBatch` whose samples hold tensors.

    ``torch.utils.data.default_collate`` takes its per-sample dicts;
    :func:`h5ml_torch.collate.collate` builds the batch from its whole columns.
    """

    def convert(self, value: Any) -> Any:
        """Return one sample's value as a tensor (:func:`to_torch`)."""
        return to_torch(value)


class H5MLDataset(SplitSource, Dataset[dict[str, Any]]):
    """One split of an h5ml file as a map-style ``torch.utils.data.Dataset`` (§5, §6).

    Parameters
    ----------
    path, split, features
        The h5ml file (only its path is stored; each process opens its own
        reader when it first reads, C02), the split name (§5.1) and the
        features to read (None: every readable one).
    transform
        Optional per-sample callable ``dict -> dict`` applied to each sample
        after conversion to tensors (it must pickle for spawn/forkserver
        workers: a module-level function, not a lambda).
    decode_images, color
        ``bytes`` features holding encoded images (PNG, JPEG, ...) to decode
        into uint8 ``(H, W, C)`` tensors in the workers (a list of names, or
        True for every ``image/...`` media type), and their channels; see
        :class:`h5ml.reader.source.SplitSource`.
    **options
        ``verify=True``: verified reads, here and in every worker (SPEC §8.4): a damaged chunk raises
        :class:`h5ml.ChecksumError` (file, dataset, chunk, both CRC32C) instead of giving wrong samples, a file
        without checksums :class:`h5ml.ChecksumsMissingError`; ``storage_options``: for a URL, fsspec's options,
        pickled into every worker (None: credentials from the environment); ``zero_copy``: as SplitSource,
        default True for a local file, False for a URL (see Notes).

    Notes
    -----
    ``dataset[i]`` is sample ``i`` as ``{feature: value}``: dense -> tensor
    of shape ``sample_shape`` and the stored dtype; categorical -> 0-d int64
    tensor (-1 = missing); string -> ``str``; ragged -> tensor of that
    sample; bytes -> ``bytes``. ``DataLoader`` calls ``__getitems__`` with a
    whole batch: one ``Split.read`` call, indices in any order.

    A local file is read with ``zero_copy=True`` by default: every tensor
    handed out is a copy anyway (:func:`to_torch`, the collate), so views of
    the memory map are copied once instead of twice. Only the raw columns of
    a :class:`SampleBatch` (``batch.columns``) are then read-only views.

    Raises
    ------
    FileNotFoundError, h5ml.H5MLError, h5ml.SplitNotFoundError
        As :class:`h5ml.reader.source.SplitSource`, when the file is first
        opened in a process (a wrong split: a ``KeyError`` naming the file,
        the split and the file's splits).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        split: str,
        features: Sequence[str] | None = None,
        transform: SampleTransform | None = None,
        *,
        decode_images: bool | Sequence[str] = False,
        color: str = "RGB",
        **options: Any,
    ) -> None:
        options.setdefault("zero_copy", not is_url(absolute_location(path)))  # views are copied once, see Notes
        SplitSource.__init__(self, path, split, features, decode_images=decode_images, color=color, **options)
        self.transform = transform

    def __len__(self) -> int:
        return self.reader().num_samples

    def __getitem__(self, index: int) -> dict[str, Any]:
        out = {name: to_torch(value) for name, value in self.read_sample(index).items()}
        return out if self.transform is None else self.transform(out)

    def __getitems__(self, indices: Sequence[int] | npt.NDArray[np.int64]) -> SampleBatch:
        """One ``Split.read`` call (:meth:`~h5ml.reader.source.SplitSource.read_batch`): a :class:`SampleBatch`.

        R per-sample dicts (transformed when a transform is set) and the columns read; indices in any
        order, as a sequence or an int64 array; IndexError if one is outside ``[-N, N)``.
        """
        return self.read_batch(indices, SampleBatch, self.transform)
