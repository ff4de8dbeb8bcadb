"""A sharded dataset open for reading: :class:`ShardedDataset`, what ``h5ml.open(INDEX)`` returns (SPEC §12.1, §12.5).

::

    with h5ml.open("imagenet/index.json") as ds:     # or the folder "imagenet/"
        train = ds["train"]                          # a ShardedSplit: its shards, concatenated
        batch = train[[5, 200_000, 9]]               # global indices, as for one file

A :class:`ShardedDataset` reads the index (:func:`h5ml.model.shard_index.load_index`:
its schema, its sums, its fingerprint, §12.1-§12.3) when it is opened, and
no shard. It behaves like :class:`h5ml.reader.dataset.Dataset` for what users
and the adapters use: :attr:`~ShardedDataset.splits`, ``ds["train"]``,
:attr:`~ShardedDataset.metadata`, :attr:`~ShardedDataset.attrs`,
:attr:`~ShardedDataset.fingerprint` (the index fingerprint, §12.3),
:attr:`~ShardedDataset.format_version`, :attr:`~ShardedDataset.path`,
:meth:`~ShardedDataset.close` and the ``with`` block. Its splits are
:class:`h5ml.reader.sharded_split.ShardedSplit`.

Shards (§12.5). A shard is opened when one of its samples is first read, with
the options of :func:`h5ml.open` (``locking``, ``allow_external``, ``direct``,
``verify``, ``cache_bytes``, ``chunk_cache_bytes``, ``zero_copy``), by the
one method :meth:`ShardedDataset._open_shard`, and is checked against its
index entry before any of its samples is returned
(:func:`h5ml.model.shard_files.describe_shard` and
:func:`~h5ml.model.shard_files.disagreements`: the split it holds, its sample
count, fingerprint, size and features; metadata only, no sample data is
read): a shard that was changed or replaced after the index was written is
refused with :class:`~h5ml.errors.ShardIndexError`, naming the index, the
shard and what differs. At most ``max_open_shards`` shards are held open per
process, least recently read closed first (:mod:`h5ml.reader.sharded_cache`).

Across processes it behaves as a :class:`~h5ml.reader.dataset.Dataset`: it
pickles by path, options and the index fingerprint; the copy reads the index
again on first use and refuses an index that changed meanwhile (its
fingerprint differs). After ``fork`` (:data:`h5ml.reader.handle.FORK_GENERATION`)
the child drops the parent's open shards, unused, and opens and checks its own.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager
from pathlib import Path
from types import MappingProxyType, TracebackType
from typing import TYPE_CHECKING, Any, Final

from h5ml.errors import H5MLError, ShardIndexError, SplitNotFoundError
from h5ml.model.remote import is_url
from h5ml.model.shard_files import describe_shard, disagreements
from h5ml.model.shard_index import INDEX_FILE_NAME, ShardIndex, load_index, shard_location
from h5ml.reader.dataset import Dataset
from h5ml.reader.handle import check_open_options
from h5ml.reader.remote import open_location
from h5ml.reader.sharded_cache import ShardCache
from h5ml.reader.sharded_split import ShardedSplit

if TYPE_CHECKING:  # pragma: no cover
    from h5ml.model.metadata import RootMetadata

__all__ = ["DEFAULT_MAX_OPEN_SHARDS", "ShardedDataset", "index_file_of"]

#: Shards a :class:`ShardedDataset` holds open at once per process by default (``max_open_shards``).
DEFAULT_MAX_OPEN_SHARDS: Final = 8


def index_file_of(path: str | os.PathLike[str]) -> str:
    """The absolute path of the index file named by ``path``: the path itself, or ``index.json`` in a folder (§12.1).

    A URL is kept as it is; one ending in ``/`` (a prefix) means its ``index.json``.
    """
    if is_url(os.fspath(path)):
        text = os.fspath(path)
        return text + INDEX_FILE_NAME if text.endswith("/") else text
    where = os.path.abspath(os.fspath(path))
    return os.path.join(where, INDEX_FILE_NAME) if os.path.isdir(where) else where


class ShardedDataset:
    """A sharded h5ml dataset open for reading: the index and its splits, the shards opened lazily (§12.1, §12.5).

    Create it with :func:`h5ml.open` on an index (a ``.json`` file, or a
    folder holding ``index.json``). Parameters are those of :func:`h5ml.open`,
    for every shard, and ``max_open_shards``.

    Parameters
    ----------
    path
        The index file, or the dataset's folder; or their URL (``s3://bucket/ds/index.json``, ``s3://bucket/ds/``),
        whose shards are then read through fsspec (:func:`h5ml.reader.remote.open_location`).
    max_open_shards
        Shards held open at once in each process, >= 1; the least recently
        read is closed when another must open. Each open shard holds an HDF5
        handle (and a memory map with ``direct=True``). ``"chunk"`` shuffle
        reads at most ``shards_in_flight`` shards at a time
        (:mod:`h5ml.sampling.shard_orders`): with ``max_open_shards`` at least
        that, each shard is opened once per epoch. ``"full"`` shuffle reads
        from every shard in every batch: give it as many as there are shards
        (each open costs an HDF5 open and the metadata check of §12.5), or
        shuffle with ``"chunk"``.
    **options
        ``locking``, ``allow_external``, ``cache_bytes``, ``direct``,
        ``verify``, ``chunk_cache_bytes``, ``zero_copy``, ``storage_options`` (for a URL), as :func:`h5ml.open`.

    Raises
    ------
    FileNotFoundError
        If there is no index at ``path``.
    ShardIndexError
        If the index is not JSON or not a valid index (§12.1-§12.3).
    ValueError
        If ``max_open_shards`` is below 1, or the options contradict each
        other (as :func:`h5ml.open`).
    """

    def __init__(self, path: str | os.PathLike[str], *, max_open_shards: int = DEFAULT_MAX_OPEN_SHARDS, **options: Any):
        self._path = index_file_of(path)
        check_open_options(
            self._path, options.get("cache_bytes"), options.get("direct", True), options.get("zero_copy", False)
        )
        if isinstance(max_open_shards, bool) or not isinstance(max_open_shards, int) or max_open_shards < 1:
            raise ValueError(f"{self._path}: max_open_shards must be an integer >= 1, got {max_open_shards!r}")
        self._max_open = max_open_shards
        self._options = dict(options)
        self._expected: str | None = None  # the index fingerprint a pickled copy must find again
        self._init_runtime()
        self._load()

    def _init_runtime(self) -> None:
        self._index: ShardIndex | None = None
        self._splits: dict[str, ShardedSplit] | None = None
        self._cache = ShardCache(self._max_open, self._open_shard)
        self._closed = False

    def __getstate__(self) -> dict[str, Any]:
        return {
            "path": self._path,
            "options": self._options,
            "max_open_shards": self._max_open,
            "fingerprint": self._expected,
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._path = state["path"]
        self._options = dict(state["options"])
        self._max_open = int(state["max_open_shards"])
        self._expected = state["fingerprint"]
        self._init_runtime()

    # -- the index ----------------------------------------------------------
    def _load(self) -> ShardIndex:
        index, _ = load_index(self._path, self._options.get("storage_options"))
        if self._expected is not None and index.fingerprint != self._expected:
            raise ShardIndexError(
                f"{self._path}: the index changed since the dataset was opened (index fingerprint "
                f"{index.fingerprint}, opened as {self._expected}); open it again with h5ml.open() in this process"
            )
        self._index, self._expected = index, index.fingerprint
        return index

    @property
    def index(self) -> ShardIndex:
        """The index document, typed (:class:`h5ml.model.shard_index.ShardIndex`), read once per process.

        Raises
        ------
        ValueError
            If the dataset was closed.
        ShardIndexError
            In a copy unpickled or forked from another process, if the index
            changed since it was opened there.
        """
        if self._closed:
            raise ValueError(f"{self._path}: the h5ml dataset is closed; open it again with h5ml.open()")
        index = self._index
        return self._load() if index is None else index

    @property
    def path(self) -> str:
        """The absolute path of the index file."""
        return self._path

    @property
    def folder(self) -> str:
        """The folder of the index, which shard paths are relative to (§12.1)."""
        return str(Path(self._path).parent)

    @property
    def allow_external(self) -> bool:
        """Whether shards may hold external links, external storage and virtual datasets (``allow_external``)."""
        return bool(self._options.get("allow_external", False))

    @property
    def direct(self) -> bool:
        """Whether shards are read through their memory maps (``direct`` of :func:`h5ml.open`)."""
        return bool(self._options.get("direct", True))

    @property
    def verify(self) -> bool:
        """Whether reads check every chunk against its checksum first (``verify=True``, §8.4)."""
        return bool(self._options.get("verify", False))

    @property
    def zero_copy(self) -> bool:
        """Whether reads may return views of the shards' memory maps (``zero_copy=True``)."""
        return bool(self._options.get("zero_copy", False))

    @property
    def max_open_shards(self) -> int:
        """Shards held open at once in this process (see the class docstring)."""
        return self._max_open

    @property
    def format_version(self) -> tuple[int, int]:
        """The index's ``format_version`` as ``(major, minor)`` (§1.2, §12.1)."""
        major, minor = self.index.format_version.split(".")
        return int(major), int(minor)

    @property
    def fingerprint(self) -> str:
        """The index fingerprint ``sha256:...`` (§12.3): what resume states of a sharded dataset bind to."""
        return self.index.fingerprint

    @property
    def attrs(self) -> dict[str, Any]:
        """The dataset's root attributes as JSON values (§4.6): those :attr:`metadata` holds.

        The index's card (the attributes every shard shares, §12.2), the
        format fields (``format``, the index's ``format_version``,
        ``complete``, the index fingerprint as ``fingerprint``), and
        ``created``, ``writer`` and ``must_understand`` of the first shard
        listed (the index has none; that shard is opened and checked).

        Raises
        ------
        ShardIndexError
            If the index lists no shard, or the first shard disagrees with it.
        """
        index = self.index
        first = next(((name, 0) for name, split in index.splits.items() if split.shards), None)
        if first is None:
            raise ShardIndexError(f"{self._path}: the index lists no shard, so the dataset has no root metadata")
        shard = self.shard(*first).attrs
        per_file: dict[str, Any] = {key: shard[key] for key in ("created", "writer", "must_understand") if key in shard}
        fixed = {"format": "h5ml", "format_version": index.format_version, "complete": 1}
        return {**index.metadata, **per_file, **fixed, "fingerprint": index.fingerprint}

    @property
    def metadata(self) -> RootMetadata:
        """The root metadata (§4.2) of :attr:`attrs`, as :class:`h5ml.model.metadata.RootMetadata`.

        Raises
        ------
        MetadataError
            If the card of the index breaks the root schema (§4.2).
        ShardIndexError
            As :attr:`attrs`.
        """
        from h5ml.model.metadata import parse_root

        return parse_root(self.attrs, path=self._path)

    # -- splits -------------------------------------------------------------
    @property
    def splits(self) -> Mapping[str, ShardedSplit]:
        """The splits, in the index's order: a read-only mapping name -> :class:`ShardedSplit` (§12.1)."""
        if self._splits is None:
            index = self.index
            self._splits = {name: ShardedSplit(self, name, entry) for name, entry in index.splits.items()}
        return MappingProxyType(self._splits)

    @property
    def unreadable_splits(self) -> Mapping[str, H5MLError]:
        """Always empty: every split the index lists is a split (a shard that cannot be read raises when read)."""
        return MappingProxyType({})

    def every_split(self) -> tuple[str, ...]:
        """The names of every split, in the index's order."""
        return tuple(self.splits)

    def __getitem__(self, name: str) -> ShardedSplit:
        splits = self.splits
        if name not in splits:
            available = ", ".join(repr(s) for s in splits) or "none"
            raise SplitNotFoundError(
                f"{self._path}: the index lists no split {name!r}; available splits: {available}", path=self._path
            )
        return splits[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self.splits)

    def __contains__(self, name: object) -> bool:
        return name in self.splits

    def __len__(self) -> int:
        return len(self.splits)

    # -- shards -------------------------------------------------------------
    @property
    def shard_opens(self) -> int:
        """How many times a shard was opened (and checked) in this process: a measure of the shard cache."""
        return self._cache.opens

    @property
    def open_shards(self) -> tuple[tuple[str, int], ...]:
        """The shards open now in this process, as ``(split, position)``, least recently read first."""
        return self._cache.keys

    def shard(self, split: str, position: int) -> Dataset:
        """The open shard at ``position`` of ``split``, opened and checked on first use (§12.5); LRU-cached.

        Parameters
        ----------
        split
            The split's name.
        position
            The shard's position in the split's list, from 0.

        Returns
        -------
        Dataset
            The shard, open with the options of this dataset. It may be closed
            once :attr:`max_open_shards` other shards were read since: hold it
            with :meth:`reading` to read it while other threads read others.

        Raises
        ------
        ShardIndexError
            If the shard is missing, disagrees with its index entry (changed,
            replaced, another split, other features), or is no complete
            one-split h5ml file with a fingerprint: the message names the
            index, the shard and what differs.
        FileNotFoundError, h5ml.H5MLError
            As :func:`h5ml.open` on the shard file.
        """
        with self.reading(split, position) as dataset:
            return dataset

    def reading(self, split: str, position: int) -> AbstractContextManager[Dataset]:
        """Hold one shard open while the ``with`` block reads it (:meth:`shard`; raises as it does).

        A held shard is never closed to make room for another
        (:class:`~h5ml.reader.sharded_cache.ShardCache`): threads may read
        other shards meanwhile.
        """
        return self._cache.reading(split, position)

    def _open_shard(self, split: str, position: int) -> Dataset:
        """Open one shard with this dataset's options and check it against its index entry (§12.5).

        The one place where a shard is opened: reads from another kind of
        storage replace this method. The check reads metadata only
        (:func:`~h5ml.model.shard_files.describe_shard` on the handle just
        opened), before any sample of the shard is returned.
        """
        index = self.index
        entry = index.splits[split]
        shard = entry.shards[position]
        location = shard_location(self._path, shard.path)
        where = f"{self._path}: shard {position} of split {split!r} ({shard.path})"
        missing = ShardIndexError(
            f"{where} is missing: {location} does not exist; restore the shard, or write the index again",
            path=location,
        )
        if not is_url(location) and not os.path.exists(location):
            raise missing
        options = dict(self._options)
        try:
            opened = open_location(location, options.pop("storage_options", None), **options)
        except FileNotFoundError as exc:  # a URL: the store said so
            raise missing from exc
        try:
            try:
                found = describe_shard(location, opened.h5file)
            except ShardIndexError as exc:
                raise ShardIndexError(f"{where}: {exc.message}", path=location) from exc
            problems = disagreements(split, entry, shard, found, index.metadata)
            if problems:
                # SPEC §12.5-R1: a shard that disagrees with its index entry is refused before any sample is read
                raise ShardIndexError(
                    f"{where} disagrees with the index: " + "; ".join(problems) + ". The shard was changed "
                    "or replaced after the index was written: restore it, or write the dataset again (h5ml shard, "
                    "h5ml.Writer); `h5ml validate` on the index lists every disagreeing shard",
                    path=location,
                )
        except BaseException:
            opened.close()
            raise
        return opened

    # -- lifetime -----------------------------------------------------------
    @property
    def closed(self) -> bool:
        """True after :meth:`close`."""
        return self._closed

    def close(self) -> None:
        """Close every open shard. Further use raises ValueError; pickled copies are not affected."""
        self._cache.close()
        self._splits = None
        self._closed = True

    def __enter__(self) -> ShardedDataset:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        if self._closed:
            return f"<h5ml.ShardedDataset {self._path!r} (closed)>"
        index = self._index
        if index is None:
            return f"<h5ml.ShardedDataset {self._path!r} (not open in this process)>"
        parts = ", ".join(f"{name}: {s.num_samples} in {len(s.shards)} shards" for name, s in index.splits.items())
        return f"<h5ml.ShardedDataset {self._path!r} h5ml {index.format_version}, splits {{{parts}}}>"
