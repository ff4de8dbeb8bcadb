"""A map-style PyTorch dataset over one split of an h5ml file, worker-safe by holding only the path.

Each process (the main one, every ``DataLoader`` worker under fork, spawn or
forkserver, persistent or not) opens its own reader the first time it needs
one: the dataset pickles as ``(path, split, features, transform)`` and a
reader inherited through ``fork`` is replaced (case C02). Reading goes
through the reference reader's public API only (:func:`h5ml.open`,
:meth:`h5ml.reader.dataset.Split.read`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np
import torch
from torch.utils.data import Dataset

from h5ml.reader.source import SplitSource

__all__ = ["H5MLDataset", "SampleBatch", "to_torch"]

#: Per-sample transform: takes and returns one sample dict.
Transform = Callable[[dict[str, Any]], dict[str, Any]]


def to_torch(value: Any) -> Any:
    """Convert one value returned by the reader to its PyTorch form.

    Parameters
    ----------
    value
        A numpy array or scalar (dense, categorical, ragged sample), a ``str``,
        ``bytes``, or a Python ``int`` (one categorical code).

    Returns
    -------
    torch.Tensor or str or bytes
        Arrays and numbers become tensors of the same dtype (Python ``int`` ->
        int64, numpy ``bool`` -> torch ``bool``) sharing memory when possible;
        ``str`` and ``bytes`` are returned unchanged (§6.4, §6.6).
    """
    if isinstance(value, (str, bytes)):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return torch.tensor(value, dtype=torch.int64)
    array = np.asarray(value)
    if not array.flags.writeable:  # torch.from_numpy warns on read-only memory
        array = array.copy()
    return torch.from_numpy(array)


class SampleBatch(Sequence[dict[str, Any]]):
    """The samples of one batch as returned by :meth:`H5MLDataset.__getitems__`.

    A sequence of per-sample dicts (so ``torch.utils.data.default_collate``
    accepts it) that also carries the batch as read in one call, so that
    :func:`h5ml_torch.collate.collate` builds tensors from whole columns
    without splitting and restacking samples.

    Parameters
    ----------
    columns
        Feature name -> the reader's batch value (see :mod:`h5ml.reader.features`),
        or None when a transform produced the samples.
    encodings
        Feature name -> encoding (§6): tells the collate which features are
        ragged even when a batch's samples happen to share a length.
    samples
        Per-sample dicts already built (when a transform ran), or None to
        build them from ``columns`` on access.
    size
        Number of samples R.
    """

    def __init__(
        self,
        columns: dict[str, Any] | None,
        encodings: dict[str, str],
        samples: list[dict[str, Any]] | None,
        size: int,
    ) -> None:
        self.columns = columns
        self.encodings = encodings
        self._samples = samples
        self._size = size

    def __len__(self) -> int:
        return self._size

    def _sample(self, i: int) -> dict[str, Any]:
        if self._samples is not None:
            return self._samples[i]
        assert self.columns is not None
        return {name: to_torch(values[i]) for name, values in self.columns.items()}

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return [self._sample(k) for k in range(*i.indices(self._size))]
        k = int(i)
        if not -self._size <= k < self._size:
            raise IndexError(f"sample {k} is outside this batch of {self._size} samples")
        return self._sample(k % self._size)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for i in range(self._size):
            yield self._sample(i)


class H5MLDataset(SplitSource, Dataset[dict[str, Any]]):
    """One split of an h5ml file as a map-style ``torch.utils.data.Dataset`` (§5, §6).

    Parameters
    ----------
    path
        The h5ml file. Only the path is stored; each process opens its own
        reader with :func:`h5ml.open` when it first reads (C02).
    split
        The split name (§5.1), e.g. ``"train"``.
    features
        Feature names to read, in this order; None for every readable feature.
    transform
        Optional per-sample callable ``dict -> dict`` applied to each sample
        after conversion to tensors (it must pickle for spawn/forkserver
        workers: a module-level function, not a lambda).
    decode_images, color
        ``bytes`` features holding encoded images (PNG, JPEG, ...) to decode
        into uint8 ``(H, W, C)`` tensors in the workers (a list of names, or
        True for every ``image/...`` media type), and their channels; see
        :class:`h5ml.reader.source.SplitSource`. A batch of one image size is
        stacked; of several sizes, padded with ``<name>_lengths`` (shapes)
        and ``<name>_mask``.

    Notes
    -----
    ``dataset[i]`` returns ``{feature: value}`` for sample ``i``: dense ->
    tensor of shape ``sample_shape`` and the stored dtype; categorical -> 0-d
    int64 tensor (-1 = missing); string -> ``str``; ragged -> tensor of that
    sample; bytes -> ``bytes``. ``dataset.__getitems__(indices)``, the hook
    ``DataLoader`` calls with a whole batch, reads it with one
    :meth:`h5ml.reader.dataset.Split.read` call (indices in any order, duplicates
    allowed) and returns a :class:`SampleBatch`.

    Raises
    ------
    FileNotFoundError, h5ml.H5MLError
        As :func:`h5ml.open`, when the file is first opened in a process;
        :class:`h5ml.FeatureNotFoundError` for an unknown feature.
    KeyError
        For an unknown split (the message lists the file's splits).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        split: str,
        features: Sequence[str] | None = None,
        transform: Transform | None = None,
        *,
        decode_images: bool | Sequence[str] = False,
        color: str = "RGB",
    ) -> None:
        SplitSource.__init__(self, path, split, features, decode_images=decode_images, color=color)
        self.transform = transform

    def __getstate__(self) -> dict[str, Any]:
        return {**SplitSource.__getstate__(self), "transform": self.transform}

    def __setstate__(self, state: dict[str, Any]) -> None:
        SplitSource.__setstate__(self, state)
        self.transform = state["transform"]

    def __len__(self) -> int:
        return self.reader().num_samples

    def __getitem__(self, index: int) -> dict[str, Any]:
        sample = self.read(int(index))
        out = {name: to_torch(value) for name, value in sample.items()}
        return out if self.transform is None else self.transform(out)

    def __getitems__(self, indices: Sequence[int]) -> SampleBatch:
        """Read a batch with one :meth:`h5ml.reader.dataset.Split.read` call.

        Parameters
        ----------
        indices
            Sample indices in any order, duplicates allowed (a list or 1-D
            integer array).

        Returns
        -------
        SampleBatch
            R per-sample dicts (transformed when a transform is set), plus the
            columns read.

        Raises
        ------
        IndexError
            If an index is outside ``[-N, N)``.
        """
        rows = np.asarray(indices, dtype=np.int64).reshape(-1)
        columns = self.read(rows)
        if self.transform is None:
            return SampleBatch(columns, dict(self._encodings), None, len(rows))
        plain = SampleBatch(columns, self._encodings, None, len(rows))
        return SampleBatch(None, dict(self._encodings), [self.transform(s) for s in plain], len(rows))

    def __repr__(self) -> str:
        return f"H5MLDataset({self.path!r}, {self.split!r}, features={self.features!r})"
