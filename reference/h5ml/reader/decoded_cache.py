"""The cache of decoded chunks of one open file, bounded in bytes, least recently used first out (§7.3).

HDF5's chunk cache (:mod:`h5ml.reader.chunk_cache`) serves reads through h5py.
Chunks decoded by h5ml itself (:mod:`h5ml.reader.compressed`) are kept here
instead: one :class:`DecodedChunks` per open file and process, created with
the file's memory map, whose budget is ``chunk_cache_bytes`` of
:func:`h5ml.open` (default :data:`DEFAULT_DECODED_BYTES`, 256 MiB). A
``full`` shuffle of a dataset whose decoded size fits the budget then decodes
each chunk once per epoch, and a ``chunk`` shuffle decodes each chunk of a
window once per window.

A chunk is decoded at most once at a time: a reader that needs a chunk that
another thread (or a prefetch) is decoding waits for that decode instead of
starting its own. :attr:`DecodedChunks.decodes` counts the decodes made
(a real counter, for tests and benchmarks) and :attr:`DecodedChunks.hits` the
chunks served from the cache. Cached chunks are read-only arrays; readers
copy rows out of them, never hand them out.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from concurrent.futures import Executor, Future
from functools import partial
from typing import Any, Final

import numpy.typing as npt

__all__ = ["DEFAULT_DECODED_BYTES", "DecodedChunks", "decoded_budget"]

#: ``chunk_cache_bytes`` of :func:`h5ml.open` when not given: decoded chunks kept per open file and process.
#: The 20000 photo tiles of 64x64x3 of ``benchmarks/bench_compressed.py`` (234 MiB decoded) fit it.
DEFAULT_DECODED_BYTES: Final = 256 << 20

Chunk = npt.NDArray[Any]


def decoded_budget(chunk_cache_bytes: Any, cache_bytes: int | None) -> int:
    """The budget of decoded chunks for ``chunk_cache_bytes`` of :func:`h5ml.open` (bytes, >= 0).

    None: ``cache_bytes`` (HDF5's chunk cache per dataset) when that was given,
    so that a reader that asked for small caches gets a small one here too;
    else :data:`DEFAULT_DECODED_BYTES`.

    Raises
    ------
    ValueError
        If ``chunk_cache_bytes`` is not an integer >= 0 (a bool is not one).
    """
    if chunk_cache_bytes is None:
        return DEFAULT_DECODED_BYTES if cache_bytes is None else int(cache_bytes)
    if isinstance(chunk_cache_bytes, bool) or not isinstance(chunk_cache_bytes, int) or chunk_cache_bytes < 0:
        raise ValueError(
            f"chunk_cache_bytes must be an integer >= 0 (bytes of decoded chunks kept), got {chunk_cache_bytes!r}; "
            "pass for example chunk_cache_bytes=256 << 20, or 0 to keep none"
        )
    return int(chunk_cache_bytes)


class DecodedChunks:
    """Decoded chunks by key (dataset path, chunk number), within a budget of bytes, LRU (§7.3).

    Parameters
    ----------
    budget
        Bytes of decoded chunks kept, >= 0; 0 keeps none (each batch still
        decodes each chunk it needs once).

    Attributes
    ----------
    decodes : int
        Chunks decoded through this cache, since it was made.
    hits : int
        Chunks served without decoding (cached, or waited for while another thread decoded them).
    """

    __slots__ = ("_entries", "_lock", "_pending", "budget", "decodes", "hits", "nbytes")

    def __init__(self, budget: int) -> None:
        if budget < 0:
            raise ValueError(f"chunk_cache_bytes must be >= 0, got {budget}")
        self.budget = int(budget)
        self.nbytes = 0
        self.decodes = 0
        self.hits = 0
        self._entries: OrderedDict[Hashable, Chunk] = OrderedDict()
        self._pending: dict[Hashable, Future[Chunk]] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        """Drop every cached chunk (decodes in flight finish, and are not kept)."""
        with self._lock:
            self._entries.clear()
            self.nbytes = 0

    def _keep(self, key: Hashable, chunk: Chunk) -> None:
        """Cache ``chunk`` under ``key``, evicting the least recently used; called with the lock held."""
        size = chunk.nbytes
        if size > self.budget:
            return
        while self.nbytes + size > self.budget and self._entries:
            _, old = self._entries.popitem(last=False)
            self.nbytes -= old.nbytes
        self._entries[key] = chunk
        self.nbytes += size

    def _run(self, key: Hashable, decode: Callable[[], Chunk], future: Future[Chunk]) -> None:
        """Decode one chunk into ``future`` (in a pool thread or the caller's), cache it, and stop pending it."""
        if not future.set_running_or_notify_cancel():
            return
        try:
            chunk = decode()
            chunk.setflags(write=False)
        except BaseException as exc:
            with self._lock:
                self._pending.pop(key, None)
            future.set_exception(exc)
            return
        with self._lock:
            self.decodes += 1
            self._pending.pop(key, None)
            self._keep(key, chunk)
        future.set_result(chunk)

    def _claim(
        self, keys: Sequence[Hashable]
    ) -> tuple[dict[Hashable, Chunk], dict[Hashable, Future[Chunk]], list[Hashable]]:
        """Split ``keys`` into cached chunks, decodes in flight, and keys nobody decodes (now claimed by the caller)."""
        found: dict[Hashable, Chunk] = {}
        waiting: dict[Hashable, Future[Chunk]] = {}
        todo: list[Hashable] = []
        with self._lock:
            for key in keys:
                if key in found or key in waiting:
                    continue
                chunk = self._entries.get(key)
                if chunk is not None:
                    self._entries.move_to_end(key)
                    found[key] = chunk
                    self.hits += 1
                    continue
                pending = self._pending.get(key)
                if pending is not None:
                    waiting[key] = pending
                    self.hits += 1
                    continue
                waiting[key] = self._pending[key] = Future()
                todo.append(key)
        return found, waiting, todo

    def get(
        self, keys: Sequence[Hashable], decode: Callable[[Hashable], Chunk], pool: Executor | None
    ) -> dict[Hashable, Chunk]:
        """Return the decoded chunk of every key, decoding each missing one once, in ``pool`` when several.

        Parameters
        ----------
        keys
            The chunks needed (repeats allowed).
        decode
            ``decode(key)`` returns the decoded chunk (a new array); it raises for a damaged chunk.
        pool
            Where missing chunks are decoded, all but one (the caller decodes that one itself
            rather than wait); None decodes all in the caller.

        Returns
        -------
        dict
            key -> decoded chunk (read-only).

        Raises
        ------
        Exception
            What ``decode`` raised for a needed chunk (the first in ``keys`` order).
        """
        found, waiting, todo = self._claim(keys)
        if todo:
            mine, others = todo[-1], todo[:-1]
            for key in others:
                if pool is None:
                    self._run(key, partial(decode, key), waiting[key])
                else:
                    pool.submit(self._run, key, partial(decode, key), waiting[key])
            self._run(mine, partial(decode, mine), waiting[mine])
        for key, future in waiting.items():
            found[key] = future.result()
        return found

    def prefetch(self, keys: Sequence[Hashable], decode: Callable[[Hashable], Chunk], pool: Executor) -> int:
        """Start decoding, in ``pool``, every key neither cached nor being decoded; return without waiting.

        Nothing is started for chunks the budget cannot keep (their decode would be thrown away).
        A failed decode is not reported here: the read that needs the chunk decodes it again and raises.

        Returns
        -------
        int
            The decodes started.
        """
        if self.budget <= 0:
            return 0
        _, waiting, todo = self._claim(keys)
        for key in todo:
            pool.submit(self._run, key, partial(decode, key), waiting[key])
        return len(todo)

    def peek(self, key: Hashable) -> Chunk | None:
        """The cached chunk of ``key`` (counted as a hit, made the most recent), or None: the per-sample path.

        One lookup under the lock, without the dictionaries of :meth:`get`; a
        miss (or a decode in flight) is left to :meth:`get`.
        """
        with self._lock:
            chunk = self._entries.get(key)
            if chunk is not None:
                self._entries.move_to_end(key)
                self.hits += 1
            return chunk

    def cached(self, key: Hashable) -> bool:
        """Whether ``key``'s chunk is in the cache now."""
        with self._lock:
            return key in self._entries
