"""The open shards of a sharded dataset in one process: :class:`ShardCache`, least recently read closed first (§12.5).

A :class:`~h5ml.reader.sharded.ShardedDataset` keeps at most
``max_open_shards`` shards open (each an HDF5 handle, and a memory map with
``direct=True``). A shard being read is held (:meth:`ShardCache.reading`)
and never closed to make room for another, so threads reading other shards
at the same time (the read-ahead threads of the adapters) cannot close it
under a read; the cache then closes the least recently read shard that no
thread holds, and may hold more than ``max_open_shards`` while more are held.
In a forked child (:data:`h5ml.reader.handle.FORK_GENERATION`) the cache
drops the parent's shards, unused, and opens its own.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from h5ml.reader.dataset import Dataset
from h5ml.reader.handle import FORK_GENERATION

__all__ = ["ShardCache", "ShardKey"]

#: A shard: ``(split, position)``, its position in the split's list from 0.
ShardKey = tuple[str, int]


class ShardCache:
    """The shards open in this process, LRU, each opened by ``opener`` on first use (see the module docstring).

    Parameters
    ----------
    capacity
        Shards kept open when none is held, >= 1 (``max_open_shards``).
    opener
        Opens and checks one shard (:meth:`h5ml.reader.sharded.ShardedDataset._open_shard`).
    """

    def __init__(self, capacity: int, opener: Callable[[str, int], Dataset]) -> None:
        self.capacity = capacity
        self._opener = opener
        self._shards: OrderedDict[ShardKey, Dataset] = OrderedDict()
        self._busy: dict[ShardKey, int] = {}  # shards held by readers now: key -> holders
        self._lock = threading.RLock()
        self._generation = FORK_GENERATION[0]
        self._opens = 0

    @property
    def opens(self) -> int:
        """How many times a shard was opened in this process."""
        self._forget_inherited()
        return self._opens

    @property
    def keys(self) -> tuple[ShardKey, ...]:
        """The shards open now, least recently read first."""
        self._forget_inherited()
        return tuple(self._shards)

    @contextmanager
    def reading(self, split: str, position: int) -> Iterator[Dataset]:
        """Hold one shard open, opened on first use, while the ``with`` block reads it.

        Raises
        ------
        ShardIndexError, FileNotFoundError, h5ml.H5MLError
            As the opener, when the shard is opened.
        """
        key = (split, position)
        self._forget_inherited()
        with self._lock:
            dataset = self._shards.get(key)
            if dataset is None:
                dataset = self._opener(split, position)
                self._opens += 1
                self._shards[key] = dataset
            else:
                self._shards.move_to_end(key)
            self._busy[key] = self._busy.get(key, 0) + 1
            self._trim()
        try:
            yield dataset
        finally:
            with self._lock:
                left = self._busy.pop(key, 1) - 1
                if left:
                    self._busy[key] = left
                self._trim()

    def _trim(self) -> None:
        """Close least recently read shards that no thread holds, down to the capacity (holding the lock)."""
        while len(self._shards) > self.capacity:
            idle = next((key for key in self._shards if key not in self._busy), None)
            if idle is None:
                return
            self._shards.pop(idle).close()

    def _forget_inherited(self) -> None:
        """In a forked child, drop the parent's open shards (each unmapped, never used)."""
        if self._generation == FORK_GENERATION[0]:
            return
        inherited = list(self._shards.values())
        self._shards, self._busy, self._lock = OrderedDict(), {}, threading.RLock()
        self._generation, self._opens = FORK_GENERATION[0], 0
        for dataset in inherited:
            dataset.close()  # a Dataset knows it was inherited: it closes nothing of the parent's

    def close(self) -> None:
        """Close every open shard (in this process)."""
        self._forget_inherited()
        with self._lock:
            shards, self._shards, self._busy = list(self._shards.values()), OrderedDict(), {}
        for dataset in shards:
            dataset.close()
