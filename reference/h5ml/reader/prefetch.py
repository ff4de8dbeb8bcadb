"""Read batches ahead in worker threads or processes, and hand them out by key, in any order (:class:`BatchFeed`).

A training loop asks for batch ``(epoch, i)``; :class:`Prefetcher` has
already submitted the next few batches of the epoch's order to a pool, so the
reads overlap the training step. Results are kept by key, never by arrival
order: a batch is never served in another batch's place, whatever order the
loop asks in, and batches of another epoch are dropped. Worker processes
(:func:`h5ml.reader.pools.process_pool`: ``forkserver`` where available, else
``spawn``; a script that uses them needs the ``if __name__ == "__main__":``
guard) read with their own reader:
they open each file once (a :class:`h5ml.reader.source.SplitSource` per process),
never an inherited or pickled handle, and hand their batches back through
shared memory (:mod:`h5ml.reader.shared_batches`), not pickled through a pipe. :class:`BatchFeed` serves the batches
of an epoch cursor (:class:`h5ml.sampling.EpochCursor`) this way, or reads
them in the calling thread when there are no workers. Framework-free: the
Keras adapter uses it, any numpy-fed loop can.
"""

from __future__ import annotations

import os
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from typing import Any

import numpy as np

from h5ml.reader.pools import process_pool, stop_pool, submit
from h5ml.reader.shared_batches import SHARED, SharedBatch, from_shared, remove_segments, segment_prefix, to_shared
from h5ml.reader.source import BatchTransform, SplitSource, prefetch
from h5ml.sampling import EpochCursor

__all__ = ["BatchFeed", "Prefetcher", "read_arrays", "read_shared"]

#: This process's open sources, by their settings: a worker opens each file once. Each is kept with the identity
#: of the file it opened (device, inode, size, modification time), so that a file replaced at its path is opened
#: again instead of being read through a reader of the file that was there before.
_SOURCES: dict[tuple[Any, ...], tuple[tuple[int, ...], SplitSource]] = {}


def _identity(path: str) -> tuple[int, ...]:
    """What tells one file at ``path`` from another put there later (``os.replace``, a rewrite)."""
    st = os.stat(path)
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def read_arrays(
    source: SplitSource,
    indices: Sequence[int] | np.ndarray,
    pad_value: float = 0,
    transform: BatchTransform | None = None,
) -> dict[str, Any]:
    """Read one batch as numpy arrays with this process's reader of ``source`` (:meth:`SplitSource.read_arrays`).

    A worker process receives a fresh copy of ``source`` with every task;
    the first copy per file and settings is kept and reused, so the file is
    opened once per process, for as long as the same file is at that path
    (a file replaced there is opened anew). ``transform`` (``dict -> dict``)
    runs here, in the worker.

    Raises
    ------
    FileNotFoundError
        If no file is at the source's path any more.
    """
    state = source.__getstate__()
    key = tuple((name, state[name]) for name in sorted(state))
    identity = _identity(source.path)
    kept = _SOURCES.get(key)
    if kept is None or kept[0] != identity:
        if kept is not None:
            kept[1].close()
        _SOURCES[key] = kept = (identity, source)
    return kept[1].read_arrays(indices, pad_value, transform)


def read_shared(
    source: SplitSource,
    indices: Sequence[int] | np.ndarray,
    pad_value: float,
    transform: BatchTransform | None,
    prefix: str,
) -> dict[str, Any] | SharedBatch:
    """:func:`read_arrays` in a worker process, the arrays written to a shared-memory segment (:func:`to_shared`)."""
    return to_shared(read_arrays(source, indices, pad_value, transform), prefix)


def _mapped(inner: Future[Any]) -> Future[dict[str, Any]]:
    """A future of the batch that ``inner`` (a worker's :class:`SharedBatch`) describes, mapped as soon as it arrives.

    The segment's name is removed when the worker's result arrives, whether
    or not the batch is still wanted (:func:`from_shared`): a dropped batch
    leaves nothing in shared memory.
    """
    out: Future[dict[str, Any]] = Future()

    def done(f: Future[Any]) -> None:
        if f.cancelled():
            out.cancel()
        elif f.exception() is not None:
            out.set_exception(f.exception())
        else:
            try:
                out.set_result(from_shared(f.result()))
            except BaseException as exc:  # e.g. the segment could not be mapped: raised where the batch is asked
                out.set_exception(exc)

    inner.add_done_callback(done)
    return out


def _stop(pool: Executor, prefix: str | None) -> None:
    """Stop the pool, then remove the segments its workers made and nobody received (:func:`remove_segments`)."""
    stop_pool(pool)
    if prefix is not None:
        remove_segments(prefix)


class Prefetcher:
    """Batches read ahead by a pool, served by key (see the module docstring).

    Parameters
    ----------
    workers
        Threads or processes reading at once, >= 1.
    processes
        Worker processes instead of threads (each opens its own reader; their
        batches come back through shared memory where the platform has it).
    depth
        Batches submitted ahead of the one asked for, >= 1 (bounds memory).
    """

    def __init__(self, workers: int, processes: bool, depth: int) -> None:
        if workers < 1 or depth < 1:
            raise ValueError(f"workers and depth must be >= 1, got {workers} and {depth}")
        self.workers = workers
        self.processes = processes
        self.depth = depth
        self._pool: Executor | None = None
        #: key -> (the pool's future, the future of the batch: the same one, or its shared memory mapped).
        self._pending: OrderedDict[Hashable, tuple[Future[Any], Future[dict[str, Any]]]] = OrderedDict()
        #: The names of this prefetcher's shared-memory segments begin with it (None: batches are pickled).
        self._prefix = segment_prefix() if processes and SHARED else None

    def _executor(self) -> Executor:
        if self._pool is None:
            if self.processes:
                self._pool = process_pool(self.workers)  # forkserver or spawn, never fork (h5ml.reader.pools)
            else:
                self._pool = ThreadPoolExecutor(self.workers, thread_name_prefix="h5ml-prefetch")
            self._finalizer = weakref.finalize(self, _stop, self._pool, self._prefix)
            # Run it when the interpreter starts to exit, before concurrent.futures and multiprocessing join
            # the workers (their exit hooks run after this one).
            threading._register_atexit(self._finalizer)  # type: ignore[attr-defined]
        return self._pool

    def get(self, key: Hashable, ahead: Sequence[tuple[Hashable, Callable[[], tuple[Any, ...]]]]) -> dict[str, Any]:
        """Return the batch of ``key``, after submitting the batches of ``ahead`` not yet submitted.

        Parameters
        ----------
        key
            The batch wanted, e.g. ``(epoch, i)``; it must be the first entry of ``ahead``.
        ahead
            ``(key, arguments)`` for the wanted batch and the next ones in the
            expected order (at most ``depth`` are used); ``arguments()`` gives
            the arguments of :func:`read_arrays` for that batch.

        Raises
        ------
        Exception
            Whatever :func:`read_arrays` raised for that batch.
        """
        pool = self._executor()
        for k, arguments in ahead[: self.depth + 1]:
            if k not in self._pending:
                inner: Future[Any]
                if self._prefix is None:
                    inner = submit(pool, read_arrays, *arguments())
                    self._pending[k] = (inner, inner)
                else:
                    inner = submit(pool, read_shared, *arguments(), self._prefix)
                    self._pending[k] = (inner, _mapped(inner))
        _, future = self._pending.pop(key)
        while len(self._pending) > 2 * self.depth:  # asked out of order: forget the oldest guesses
            _, (stale, _) = self._pending.popitem(last=False)
            stale.cancel()
        return future.result()

    def forget(self, keep: Callable[[Hashable], bool]) -> None:
        """Cancel and drop the pending batches whose key ``keep`` rejects (e.g. another epoch's)."""
        for k in [k for k in self._pending if not keep(k)]:
            self._pending.pop(k)[0].cancel()

    def close(self) -> None:
        """Stop the pool (pending batches are cancelled); a later :meth:`get` starts a new one."""
        for future, _ in self._pending.values():
            future.cancel()
        self._pending.clear()
        if self._pool is not None:
            self._finalizer()  # runs _stop once; later calls (at exit) do nothing
            self._pool = None


class BatchFeed:
    """The batches of an epoch cursor as numpy arrays: read in the calling thread, or ahead by a pool.

    Parameters
    ----------
    source
        The split to read (only its settings travel to worker processes).
    pad_value, transform
        As :meth:`h5ml.reader.source.SplitSource.read_arrays`: the padding
        value, and a ``dict -> dict`` run on each batch's arrays where the
        batch is read (in the worker; it must pickle for worker processes:
        a module-level function).
    workers, processes
        Read with ``workers`` threads, or that many processes with
        ``processes=True``; one thread and no processes read in the calling
        thread, without a pool.
    depth
        Batches read ahead of the one asked for, >= 1.

    Raises
    ------
    ValueError
        If ``workers`` or ``depth`` is below 1.
    """

    def __init__(
        self,
        source: SplitSource,
        *,
        pad_value: float = 0,
        transform: BatchTransform | None = None,
        workers: int = 1,
        processes: bool = False,
        depth: int = 10,
    ) -> None:
        if workers < 1 or depth < 1:
            raise ValueError(f"workers and depth must be >= 1, got {workers} and {depth}")
        self.source = source
        self.pad_value = pad_value
        self.transform = transform
        self.workers = int(workers)
        self.processes = bool(processes)
        self.depth = int(depth)
        self._prefetcher: Prefetcher | None = None

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_prefetcher": None}  # a pool is never copied

    def read(self, indices: Sequence[int] | np.ndarray) -> dict[str, Any]:
        """Read samples ``indices`` in the calling thread: their batch arrays, transformed."""
        return self.source.read_arrays(indices, self.pad_value, self.transform)

    def batch(self, cursor: EpochCursor, index: int) -> dict[str, Any]:
        """Return batch ``index`` of those left in the cursor's epoch, and record it as handed out.

        With workers, the next ``depth`` batches of the epoch are submitted
        too. Results are kept by (epoch, seed, position in the epoch), so a
        batch is never served in another's place, whatever order they are
        asked in; pending batches of another epoch or order are dropped.

        Raises
        ------
        IndexError
            If ``index`` is outside ``[0, cursor.num_batches)``.
        Exception
            Whatever reading the batch raised.
        """
        indices = cursor.batch(index)
        if self.workers == 1 and not self.processes:
            arrays = self.read(indices)
            self._decode_ahead(cursor, index)
        else:
            if self._prefetcher is None:
                self._prefetcher = Prefetcher(self.workers, self.processes, self.depth)
            order = (cursor.epoch, cursor.sampler.seed)
            self._prefetcher.forget(lambda key: isinstance(key, tuple) and key[:2] == order)
            ahead = [
                ((*order, cursor.resume_from + j), self._arguments(cursor.batch(j)))
                for j in range(index, min(cursor.num_batches, index + self.depth + 1))
            ]
            arrays = self._prefetcher.get(ahead[0][0], ahead)
        cursor.hand_out(index)
        return arrays

    def _decode_ahead(self, cursor: EpochCursor, index: int) -> None:
        """Start decoding the chunks of the next ``depth`` batches in the decode pool while the caller uses this one.

        The reads of the calling thread then find them decoded: a ``chunk``-shuffled epoch's next window is
        decoded during the current window's batches, as a sequential read decodes ahead
        (:func:`h5ml.reader.source.prefetch`; chunks cached or in flight are not started again).
        """
        upto = min(cursor.num_batches, index + 1 + self.depth)
        if upto > index + 1:
            prefetch(self.source, np.concatenate([cursor.batch(j) for j in range(index + 1, upto)]))

    def _arguments(self, indices: np.ndarray) -> Callable[[], tuple[Any, ...]]:
        return lambda: (self.source, indices, self.pad_value, self.transform)

    def close(self) -> None:
        """Stop the pool (it restarts on the next batch) and close this process's reader."""
        if self._prefetcher is not None:
            self._prefetcher.close()
            self._prefetcher = None
        self.source.close()
