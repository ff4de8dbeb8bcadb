"""One feature of a sharded split: :class:`ShardedFeature` (SPEC §6, §12.2, §12.5).

Its name, encoding and class names are those the index lists (§12.2: every
shard of the split agrees on them, checked when a shard is opened), known
without opening a shard. What only a file knows (the dtype as numpy gives it,
the sample shape, the role, the media type, the samples per chunk) is that of
the first shard holding samples, opened and checked when first asked. Reads
take global indices and go through :meth:`h5ml.reader.sharded_split.ShardedSplit.read`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from h5ml.model.shard_index import FeatureEntry
from h5ml.reader.feature import Feature
from h5ml.reader.offsets import sample_chunk_rows
from h5ml.reader.plan import Indices

if TYPE_CHECKING:  # pragma: no cover
    from h5ml.reader.sharded_split import ShardedSplit

__all__ = ["ShardedFeature", "empty_values"]


def empty_values(entry: FeatureEntry) -> Any:
    """What a read of no sample returns for a feature of a split without shards: an empty array or list (§6)."""
    if entry.encoding == "dense":
        shape = tuple(0 if n is None else n for n in entry.sample_shape)
        return np.empty((0, *shape), dtype=np.dtype(entry.dtype))
    if entry.encoding == "categorical":
        return np.empty(0, dtype=np.int64)
    if entry.encoding == "string":
        return np.empty(0, dtype=object)
    return []


class ShardedFeature:
    """One feature of a :class:`~h5ml.reader.sharded_split.ShardedSplit`, read by global indices (§12.5).

    ``feature[idx]`` and :meth:`read` return what :meth:`h5ml.Feature.read`
    returns on one file holding the shards' concatenation.
    """

    def __init__(self, split: ShardedSplit, name: str, entry: FeatureEntry) -> None:
        self._split = split
        self._name = name
        self._entry = entry

    @property
    def name(self) -> str:
        """The feature's name."""
        return self._name

    @property
    def split(self) -> str:
        """The name of its split."""
        return self._split.name

    @property
    def hdf5_path(self) -> str:
        """Its HDF5 path in every shard, ``/<split>/<name>``."""
        return f"/{self._split.name}/{self._name}"

    @property
    def path(self) -> str:
        """The index file of the dataset."""
        return self._split.dataset.path

    @property
    def entry(self) -> FeatureEntry:
        """The feature's entry in the index (:class:`h5ml.model.shard_index.FeatureEntry`)."""
        return self._entry

    @property
    def encoding(self) -> str:
        """``dense``, ``ragged``, ``string``, ``categorical`` or ``bytes`` (§6), from the index."""
        return self._entry.encoding

    @property
    def class_names(self) -> list[str] | None:
        """The class names of a categorical feature (§6.5), from the index; None for other encodings."""
        names = self._entry.class_names
        return None if names is None else list(names)

    @property
    def num_samples(self) -> int:
        """The split's sample count (§12.1)."""
        return self._split.num_samples

    def __len__(self) -> int:
        return self._split.num_samples

    def first_shard_feature(self) -> Feature:
        """The feature in the first shard that holds samples (the first shard when none does), opened and checked.

        Raises
        ------
        ShardIndexError
            If the split has no shard, or that shard disagrees with the index (§12.5).
        """
        from h5ml.errors import ShardIndexError

        sizes = self._split.shard_sizes
        if not sizes:
            raise ShardIndexError(
                f"{self.path}: split {self.split!r} has no shard, so feature {self._name!r} has no stored form to "
                "describe; it has no samples"
            )
        position = next((p for p, size in enumerate(sizes) if size), 0)
        return self._split.shard_split(position).feature(self._name)

    @property
    def dtype(self) -> np.dtype[Any]:
        """The values' numpy dtype, as the first shard's feature gives it (:attr:`h5ml.Feature.dtype`)."""
        return self.first_shard_feature().dtype

    @property
    def sample_shape(self) -> tuple[int | None, ...]:
        """The shape of one sample, as the first shard's feature gives it (None on varying axes)."""
        return self.first_shard_feature().sample_shape

    @property
    def role(self) -> str | None:
        """The ``role`` attribute (§6.1) of the first shard's feature, or None."""
        return self.first_shard_feature().role

    @property
    def media_type(self) -> str | None:
        """The ``media_type`` attribute (§6.6) of the first shard's feature, or None."""
        return self.first_shard_feature().media_type

    @property
    def chunk_rows(self) -> int | None:
        """Samples per chunk in the first shard (:func:`h5ml.reader.offsets.sample_chunk_rows`, §7.1).

        What ``"chunk"`` shuffle cuts each shard by. Shards written by one
        writer share it; a shard chunked otherwise is still read whole, each
        sample once per epoch, only less in chunk order.
        """
        return sample_chunk_rows(self.first_shard_feature())

    def lengths(self) -> npt.NDArray[np.int64]:
        """Every sample's length of a ragged or bytes feature, shard after shard, from the offsets alone (§6.3).

        Opens (and checks) every shard of the split.

        Raises
        ------
        TypeError
            If the feature is not ragged or bytes.
        """
        if self.encoding not in ("ragged", "bytes"):
            raise TypeError(
                f"{self.path}: {self.hdf5_path}: feature {self._name!r} is {self.encoding}, not ragged or bytes; "
                "it has no per-sample lengths to bucket by"
            )
        parts = [np.zeros(0, dtype=np.int64)]
        for position, size in enumerate(self._split.shard_sizes):
            if size:
                feature = self._split.shard_split(position).feature(self._name)
                parts.append(np.asarray(getattr(feature, "lengths")(), dtype=np.int64))  # noqa: B009 - offset features
        return np.concatenate(parts)

    def read(self, indices: Indices) -> Any:
        """Read samples by global indices, as :meth:`h5ml.Feature.read` (see :meth:`ShardedSplit.read`)."""
        return self._split.read(indices, [self._name])[self._name]

    def __getitem__(self, indices: Indices) -> Any:
        return self.read(indices)

    def __repr__(self) -> str:
        return f"<h5ml.ShardedFeature {self.hdf5_path} ({self.encoding}) of {self.path!r}: {self.num_samples} samples>"
