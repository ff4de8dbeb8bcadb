"""One split of a sharded dataset: :class:`ShardedSplit`, its shards concatenated in listed order (SPEC §12.1, §12.5).

Sample ``i`` of a sharded split is sample ``i - start`` of the shard whose
samples start at ``start`` (:meth:`h5ml.model.shard_index.SplitEntry.starts`).
:meth:`ShardedSplit.read` takes GLOBAL indices, as :meth:`h5ml.Split.read`
does (an int, a slice, a sequence or integer array in any order with
duplicates and negative indices, a mask), finds each index's shard with
``numpy.searchsorted`` over the starts, reads each shard's rows with one
:meth:`h5ml.Split.read` call (whose read plan groups them by chunk), and puts
the values back in request order: arrays for dense, categorical and string
features (the stored dtype; strings of different widths widened), lists for
ragged and bytes features, exactly as one file holding the concatenation
returns them.

Shards are read in the order their first sample appears in the request, each
held open while it is read (:meth:`h5ml.reader.sharded.ShardedDataset.reading`):
so that a reader taking the batches of an epoch order in turn (a contiguous
piece of it each) closes only shards of earlier groups of the order, whose
samples are all read (:mod:`h5ml.sampling.shard_orders`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from h5ml.errors import FeatureNotFoundError, H5MLError
from h5ml.model.shard_index import SplitEntry
from h5ml.reader.plan import Indices, check_index, normalize_indices
from h5ml.reader.sharded_feature import ShardedFeature, empty_values
from h5ml.reader.split import Split

if TYPE_CHECKING:  # pragma: no cover
    from h5ml.reader.sharded import ShardedDataset

__all__ = ["ShardedSplit"]


class ShardedSplit:
    """One split of a sharded dataset: the samples of its shards, one after the other (§12.1, §12.5).

    Obtain it as ``dataset["train"]``. ``split["image"]`` returns a
    :class:`~h5ml.reader.sharded_feature.ShardedFeature`; ``split[idx]`` and
    :meth:`read` return a dict feature name -> values, as :class:`h5ml.Split`.
    Iterating yields one dict per sample, shard after shard. The features are
    those the index lists (§12.2), known without opening a shard.
    """

    def __init__(self, dataset: ShardedDataset, name: str, entry: SplitEntry) -> None:
        self._dataset = dataset
        self._name = name
        self._entry = entry
        self._starts = np.asarray(entry.starts(), dtype=np.int64)
        self._features = {feature: ShardedFeature(self, feature, fe) for feature, fe in entry.features.items()}

    # -- what the index says ------------------------------------------------
    @property
    def name(self) -> str:
        """The split's name (§5.1)."""
        return self._name

    @property
    def dataset(self) -> ShardedDataset:
        """The sharded dataset this split belongs to."""
        return self._dataset

    @property
    def entry(self) -> SplitEntry:
        """The split's entry in the index (:class:`h5ml.model.shard_index.SplitEntry`)."""
        return self._entry

    @property
    def num_samples(self) -> int:
        """The split's sample count: the sum of its shards' (§12.1)."""
        return self._entry.num_samples

    def __len__(self) -> int:
        return self._entry.num_samples

    @property
    def shard_sizes(self) -> tuple[int, ...]:
        """The samples of each shard, in listed order (what the sampler's shard-aware orders take, §12.5)."""
        return tuple(shard.num_samples for shard in self._entry.shards)

    @property
    def starts(self) -> npt.NDArray[np.int64]:
        """The global index of each shard's first sample, then :attr:`num_samples` (``len(shards) + 1`` int64)."""
        return self._starts.copy()

    def shard_of(self, rows: npt.ArrayLike) -> npt.NDArray[np.int64]:
        """The position of the shard that holds each global row in ``[0, num_samples)`` (empty shards never)."""
        return np.searchsorted(self._starts, np.asarray(rows, dtype=np.int64), side="right").astype(np.int64) - 1

    @property
    def features(self) -> Mapping[str, ShardedFeature]:
        """The features the index lists, in its order: name -> :class:`ShardedFeature` (§12.2)."""
        return MappingProxyType(self._features)

    @property
    def unreadable(self) -> Mapping[str, H5MLError]:
        """Always empty: a feature of a shard that cannot be read raises when that shard is read."""
        return MappingProxyType({})

    def every_feature(self) -> tuple[str, ...]:
        """The names of every feature the index lists, in its order."""
        return tuple(self._features)

    def feature(self, name: str) -> ShardedFeature:
        """Return the feature ``name`` (§5.2).

        Raises
        ------
        FeatureNotFoundError
            If the index lists no such feature for this split (the message lists those it does).
        """
        if name in self._features:
            return self._features[name]
        available = ", ".join(repr(n) for n in self._features) or "none"
        raise FeatureNotFoundError(
            f"{self._dataset.path}: split {self._name!r} has no feature {name!r}; available features: {available}",
            path=self._dataset.path,
            hdf5_path=f"/{self._name}/{name}",
        )

    def __contains__(self, name: object) -> bool:
        return name in self._features

    def shard_split(self, position: int) -> Split:
        """The split of the shard at ``position``, opened and checked on first use (as ``ShardedDataset.shard``)."""
        return self._dataset.shard(self._name, position)[self._name]

    # -- reads --------------------------------------------------------------
    def __getitem__(self, key: str | Indices) -> Any:
        """``split["name"]`` -> :class:`ShardedFeature`; ``split[idx]`` -> :meth:`read` of every feature."""
        if isinstance(key, str):
            return self.feature(key)
        return self.read(key)

    def read(self, indices: Indices, features: Iterable[str] | str | None = None) -> dict[str, Any]:
        """Read samples of several features by GLOBAL indices (§12.5), as :meth:`h5ml.Split.read` does.

        Parameters
        ----------
        indices
            An int (one sample per feature), a slice, a sequence or 1-D integer
            array in any order with duplicates and negative indices, or a mask,
            over ``[0, num_samples)`` of the whole split.
        features
            Feature names to read; None for every feature the index lists.

        Returns
        -------
        dict
            Feature name -> values, in the order of ``features``: what one
            file holding the shards' concatenation returns (arrays for dense,
            categorical and string features, lists for ragged and bytes).

        Raises
        ------
        IndexError
            If an index is outside ``[-num_samples, num_samples)``.
        FeatureNotFoundError
            If a requested feature is not in the index.
        ShardIndexError
            If a shard read is missing or disagrees with the index (§12.5),
            before any of its samples is returned.
        FileNotFoundError, h5ml.H5MLError
            As :meth:`h5ml.Split.read` on a shard.
        """
        names = self._names(features)
        count = self.num_samples
        if isinstance(indices, (int, np.integer)) and not isinstance(indices, (bool, np.bool_)):
            row = check_index(indices, count)
            position = int(self.shard_of([row])[0])
            with self._dataset.reading(self._name, position) as shard:
                return shard[self._name].read(row - int(self._starts[position]), names)
        if isinstance(indices, slice):
            start, stop, step = indices.indices(count)
            if step == 1:
                return self._read_range(start, max(start, stop), names)
        rows, _ = normalize_indices(indices, count)
        return self._read_rows(rows, names)

    def _names(self, features: Iterable[str] | str | None) -> list[str]:
        if features is None:
            return list(self._features)
        names = [features] if isinstance(features, str) else list(features)
        for name in names:
            self.feature(name)  # raises for a name the index does not list
        return names

    def _read_range(self, start: int, stop: int, names: list[str]) -> dict[str, Any]:
        """Rows ``[start, stop)``: one slice of each shard they cover, concatenated."""
        if start == stop:
            return self._read_rows(np.empty(0, dtype=np.int64), names)
        first, last = (int(p) for p in self.shard_of([start, stop - 1]))
        pieces = []
        for position in range(first, last + 1):
            base, end = int(self._starts[position]), int(self._starts[position + 1])
            if end == base:
                continue
            local = slice(max(start, base) - base, min(stop, end) - base)
            with self._dataset.reading(self._name, position) as shard:
                pieces.append(shard[self._name].read(local, names))
        if len(pieces) == 1:
            return pieces[0]
        return {name: _concatenate([piece[name] for piece in pieces]) for name in names}

    def _read_rows(self, rows: npt.NDArray[np.int64], names: list[str]) -> dict[str, Any]:
        """Rows in request order: grouped by shard, each shard read once, the values put back in request order."""
        if rows.size == 0:
            nonempty = [p for p, size in enumerate(self.shard_sizes) if size] or list(range(len(self.shard_sizes)))
            if not nonempty:
                return {name: empty_values(self._entry.features[name]) for name in names}
            with self._dataset.reading(self._name, nonempty[0]) as shard:
                return shard[self._name].read(rows, names)
        positions = self.shard_of(rows)
        order = np.argsort(positions, kind="stable")
        cuts = np.flatnonzero(np.diff(positions[order])) + 1
        groups = sorted(np.split(order, cuts), key=lambda members: int(members[0]))  # by first appearance
        if len(groups) == 1:
            position = int(positions[0])
            with self._dataset.reading(self._name, position) as shard:
                return shard[self._name].read(rows - self._starts[position], names)
        pieces: list[tuple[npt.NDArray[np.intp], dict[str, Any]]] = []
        for members in groups:
            position = int(positions[members[0]])
            with self._dataset.reading(self._name, position) as shard:
                pieces.append((members, shard[self._name].read(rows[members] - self._starts[position], names)))
        return {name: _scatter(len(rows), [(m, values[name]) for m, values in pieces]) for name in names}

    def __iter__(self) -> Iterator[dict[str, Any]]:
        """Yield every sample as ``{feature: value}``, shard after shard (each shard's own iteration, §12.1)."""
        for position, size in enumerate(self.shard_sizes):
            if size:
                with self._dataset.reading(self._name, position) as shard:
                    yield from shard[self._name]

    def __repr__(self) -> str:
        feats = ", ".join(f"{n} ({f.encoding})" for n, f in self._features.items())
        return (
            f"<h5ml.ShardedSplit {self._name!r} of {self._dataset.path!r}: {self.num_samples} samples in "
            f"{len(self._entry.shards)} shards; {feats}>"
        )


def _concatenate(pieces: Sequence[Any]) -> Any:
    """The values of consecutive pieces as one: arrays concatenated (dtypes promoted), lists joined."""
    if all(isinstance(piece, np.ndarray) for piece in pieces):
        return np.concatenate(pieces)
    return [value for piece in pieces for value in piece]


def _scatter(count: int, pieces: Sequence[tuple[npt.NDArray[np.intp], Any]]) -> Any:
    """``count`` values put back in request order: piece ``values[j]`` goes to position ``members[j]``."""
    if all(isinstance(values, np.ndarray) for _, values in pieces):
        arrays = [values for _, values in pieces]
        dtype = np.result_type(*arrays)  # strings of several widths: the widest
        out = np.empty((count, *arrays[0].shape[1:]), dtype=dtype)
        for members, values in pieces:
            out[members] = values
        return out
    found: list[Any] = [None] * count
    for members, values in pieces:
        for position, value in zip(members.tolist(), values, strict=True):
            found[position] = value
    return found
