"""Opening the shards of a split: each a plain :class:`~h5ml.writer.streaming.Writer` on one file (SPEC §12.2, §12.4).

:class:`ShardOpener` makes the writer of a split's next shard in the
staging folder (:class:`~h5ml.writer.shard_folder.ShardFolder`): the same
root metadata, compression and checksums as every other shard, the split
(its description, and an ``expected_samples`` no larger than the shard
needs), and, after the first shard, every feature declared as the first
shard stores it (:func:`~h5ml.writer.shard_split.feature_declarations`), so
that all shards of a split agree (§12.2). It also rolls a split over (closes
the open shard, opens the next) and reopens a first shard that has no sample
yet, when the ``features=`` keys it was given must change.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from h5ml.writer.shard_folder import ShardFolder
from h5ml.writer.shard_naming import shard_path
from h5ml.writer.shard_split import SplitShards
from h5ml.writer.streaming import Writer

__all__ = ["ShardOpener", "split_features"]


def split_features(features: Mapping[str, Any], split: str, names: Sequence[str] | None) -> dict[str, Any]:
    """The ``features=`` keys a shard of ``split`` takes: its own, and the general ones of the features it stores.

    A shard's writer refuses a key that applies to none of its features, so a key of another split
    (``"<other>/<name>"``) never goes to it, and a general key (``"<name>"``) only when ``names`` holds it
    (``names`` None, not known yet: every general key). Used by :class:`ShardOpener` and by the shards
    written on Dask (:mod:`h5ml.ingest.dask.convert`), so that both give a shard the same keys.

    Parameters
    ----------
    features
        ``features=`` options by key, for every split (:class:`h5ml.Writer`).
    split
        The one split of the shard.
    names
        The features the shard's split stores, or None.

    Returns
    -------
    dict
        The keys a writer of that one split does not refuse as naming no feature it creates.
    """
    return {
        key: value
        for key, value in features.items()
        if key.startswith(f"{split}/") or ("/" not in key and (names is None or key in names))
    }


class ShardOpener:
    """Makes the writers of the shards of a sharded dataset (see the module docstring).

    Parameters
    ----------
    folder
        The dataset's folder being written (the shards go to its staging folder).
    metadata
        The root metadata every shard gets; the sharded writer updates this mapping in place.
    options
        ``compression``, ``compression_opts``, ``checksums`` and ``page_size`` of every shard's writer.
    features
        The sharded writer's ``features=`` options, by key.
    samples_per_shard
        The samples a shard holds at most, or None.
    """

    def __init__(
        self,
        folder: ShardFolder,
        metadata: Mapping[str, Any],
        options: Mapping[str, Any],
        features: Mapping[str, Any],
        samples_per_shard: int | None,
    ) -> None:
        self._folder = folder
        self._metadata = metadata
        self._options = options
        self._features = features
        self._samples_per_shard = samples_per_shard

    def table(self, split: str, names: Sequence[str] | None) -> dict[str, Any]:
        """The ``features=`` keys a shard of ``split`` takes: its own, and the general ones of its features.

        A shard's writer refuses a key that applies to none of its features, so a general key (``"label"``)
        goes only to the shards of the splits that have that feature; ``names`` None (not known yet): all
        (:func:`split_features`).
        """
        return split_features(self._features, split, names)

    def open(self, state: SplitShards, names: Sequence[str] | None = None) -> Writer:
        """Open the next shard of a split: its writer, its split, and (after the first) its features."""
        rel = shard_path(state.name, len(state.paths))
        if names is None and state.declarations is not None:
            names = list(state.declarations)
        writer = Writer(
            self._folder.staged(rel), self._metadata, features=self.table(state.name, names), **self._options
        )
        try:
            writer.add_split(
                state.name, state.description, expected_samples=state.shard_expected(self._samples_per_shard)
            )
            for name, kwargs in (state.declarations or {}).items():
                writer.add_feature(state.name, name, **kwargs)
        except BaseException:
            writer.close(abort=True)
            raise
        state.paths.append(rel)
        state.writer = writer
        state.in_shard, state.counted, state.stored, state.since_measured = 0, 0.0, 0, 0
        return writer

    def settle(self, state: SplitShards, names: Sequence[str]) -> None:
        """Before a split's first samples (its features now ``names``): reopen its first shard if a general
        ``features=`` key names a feature the split lacks (see :meth:`table`)."""
        general = [key for key in self._features if "/" not in key]
        if state.declarations is None and not state.total and not all(key in names for key in general):
            self.reopen(state, names)

    def reopen(self, state: SplitShards, names: Sequence[str] | None) -> None:
        """Discard the first shard of a split (it has no samples) and open it again with its declarations."""
        state.open_writer().close(abort=True)
        state.paths.pop()
        state.declarations = state.layouts = None
        writer = self.open(state, names)
        for method, args, kwargs in state.calls:
            getattr(writer, method)(*args, **kwargs)

    def roll(self, state: SplitShards) -> Writer:
        """Close the open shard of a split and open the next (§12.4)."""
        writer = state.open_writer()
        if state.declarations is None:
            state.learn_features(writer)
        writer.close()
        if state.stored and state.compressed:
            state.measure(writer.target_path)  # the finished shard's size: the ratio the next one starts with
        return self.open(state)
