"""A map-style PyTorch dataset over one split of an h5ml file, worker-safe by holding only the path.

Each process (the main one, every ``DataLoader`` worker under fork, spawn or
forkserver, persistent or not) opens its own reader the first time it needs
one: the dataset pickles as ``(path, split, features, transform)`` and a
reader inherited through ``fork`` is replaced (case C02). Reading goes
through the reference reader's public API only (:func:`h5ml.open`,
:meth:`h5ml.reader.Split.read`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import torch
from torch.utils.data import Dataset

import h5ml
from h5ml.reader import Dataset as H5Dataset
from h5ml.reader import Split

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
        Feature name -> the reader's batch value (see :mod:`h5ml.features`),
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


class H5MLDataset(Dataset[dict[str, Any]]):
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

    Notes
    -----
    ``dataset[i]`` returns ``{feature: value}`` for sample ``i``: dense ->
    tensor of shape ``sample_shape`` and the stored dtype; categorical -> 0-d
    int64 tensor (-1 = missing); string -> ``str``; ragged -> tensor of that
    sample; bytes -> ``bytes``. ``dataset.__getitems__(indices)``, the hook
    ``DataLoader`` calls with a whole batch, reads it with one
    :meth:`h5ml.reader.Split.read` call (indices in any order, duplicates
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
    ) -> None:
        self.path = os.path.abspath(os.fspath(path))
        self.split = split
        self.features: tuple[str, ...] | None = None if features is None else tuple(features)
        self.transform = transform
        self._forget()

    def _forget(self) -> None:
        self._pid: int | None = None
        self._file: H5Dataset | None = None
        self._split: Split | None = None
        self._names: tuple[str, ...] = ()
        self._encodings: dict[str, str] = {}

    def __getstate__(self) -> dict[str, Any]:
        return {"path": self.path, "split": self.split, "features": self.features, "transform": self.transform}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.path = state["path"]
        self.split = state["split"]
        self.features = state["features"]
        self.transform = state["transform"]
        self._forget()

    def reader(self) -> Split:
        """Return this process's open split, opening the file on first use in each process.

        Returns
        -------
        h5ml.reader.Split
            The split, from a reader owned by the calling process.

        Raises
        ------
        KeyError
            If the file has no split of that name (the message lists them).
        FileNotFoundError, h5ml.H5MLError
            As :func:`h5ml.open`.
        """
        pid = os.getpid()
        if self._split is None or self._pid != pid:
            self._file = None  # never close a handle inherited through fork: the parent owns it
            opened = h5ml.open(self.path)
            if self.split not in opened:
                names = ", ".join(repr(s) for s in opened) or "none"
                opened.close()
                raise KeyError(f"{self.path}: no split {self.split!r}; available splits: {names}")
            split = opened[self.split]
            names_all = tuple(split.features) if self.features is None else self.features
            self._encodings = {name: split.feature(name).encoding for name in names_all}
            self._names, self._file, self._split, self._pid = names_all, opened, split, pid
        return self._split

    @property
    def feature_names(self) -> tuple[str, ...]:
        """The features each sample holds, in order."""
        self.reader()
        return self._names

    @property
    def encodings(self) -> dict[str, str]:
        """Feature name -> encoding (§6): ``dense``, ``string``, ``categorical``, ``ragged`` or ``bytes``."""
        self.reader()
        return dict(self._encodings)

    @property
    def fingerprint(self) -> str | None:
        """The file's fingerprint (§8.3), or None when it has none."""
        return self.reader().dataset.fingerprint

    def chunk_rows(self) -> int | None:
        """Samples per chunk of the first dense feature read (§7.1), else of the first chunked feature.

        Returns
        -------
        int or None
            None when no read feature is chunked.
        """
        split = self.reader()
        features = [split.feature(name) for name in self._names]
        ordered = [f for f in features if f.encoding == "dense"] + [f for f in features if f.encoding != "dense"]
        for feature in ordered:
            if feature.chunk_rows is not None:
                return int(feature.chunk_rows)
        return None

    def class_names(self, feature: str) -> list[str]:
        """Return the class names of a categorical feature (§6.5): code ``k`` means ``class_names[k]``.

        Raises
        ------
        ValueError
            If the feature is not categorical.
        h5ml.FeatureNotFoundError
            If the split has no such feature.
        """
        names = self.reader().feature(feature).class_names
        if names is None:
            raise ValueError(
                f"{self.path}: feature {feature!r} of split {self.split!r} is "
                f"{self.reader().feature(feature).encoding}, not categorical; it has no class names"
            )
        return list(names)

    def lengths(self, feature: str) -> npt.NDArray[np.int64]:
        """Return every sample's length of a ragged or bytes feature, from its offsets alone (§6.3).

        Returns
        -------
        numpy.ndarray
            int64 (N,): rows of ``values`` per sample (elements when the
            feature has ``shapes``; bytes for a bytes feature).

        Raises
        ------
        h5ml.errors.FeatureNotFoundError
            If the split has no feature ``feature``.
        TypeError
            If ``feature`` is not ragged or bytes (it has no lengths).
        """
        feat = self.reader().feature(feature)
        lengths = getattr(feat, "lengths", None)
        if lengths is None:
            raise TypeError(
                f"{self.path}: {feat.hdf5_path}: feature {feature!r} is {feat.encoding}, not ragged or bytes; "
                "it has no per-sample lengths to bucket by"
            )
        return np.asarray(lengths(), dtype=np.int64)

    def __len__(self) -> int:
        return self.reader().num_samples

    def __getitem__(self, index: int) -> dict[str, Any]:
        sample = self.reader().read(int(index), self._names)
        out = {name: to_torch(value) for name, value in sample.items()}
        return out if self.transform is None else self.transform(out)

    def __getitems__(self, indices: Sequence[int]) -> SampleBatch:
        """Read a batch with one :meth:`h5ml.reader.Split.read` call.

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
        columns = self.reader().read(rows, self._names)
        if self.transform is None:
            return SampleBatch(columns, dict(self._encodings), None, len(rows))
        plain = SampleBatch(columns, self._encodings, None, len(rows))
        return SampleBatch(None, dict(self._encodings), [self.transform(s) for s in plain], len(rows))

    def close(self) -> None:
        """Close this process's reader (it reopens on the next read)."""
        if self._file is not None and self._pid == os.getpid():
            self._file.close()
        self._forget()

    def __repr__(self) -> str:
        return f"H5MLDataset({self.path!r}, {self.split!r}, features={self.features!r})"
