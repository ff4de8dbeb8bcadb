"""Work on items in threads, results handed out in the items' order (:func:`read_ahead`), and the loader built on it.

The thread read-ahead of the framework adapters (``H5MLLoader(threads=N)`` in
the PyTorch adapter): batch ``i`` of a sampler is read, collated (and pinned)
by one of N threads of the training process, and handed out as batch ``i``
whatever thread finished first, so the order is that of the items, exact and
deterministic. At most ``depth`` items are in flight, which bounds memory.
:class:`CursorLoader` is what a framework's loader over an epoch cursor
(:class:`h5ml.sampling.EpochCursor`) shares: epochs, the batches handed to the
training loop, resume states, and the cursor's batches read ahead in threads.
Threads share this process's reader (:class:`h5ml.reader.source.SplitSource`
opens it once, under a lock): no batch is pickled across a process boundary.
The reader's copies out of the memory map, zlib/libdeflate inflation and
numpy's copies release the GIL, so threads overlap reads with the training
step. Framework-free (§6 reads, no SPEC clause of its own).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

from h5ml.sampling import EpochCursor

__all__ = ["CursorBatches", "CursorLoader", "read_ahead"]

_T = TypeVar("_T")
_R = TypeVar("_R")


def read_ahead(items: Iterable[_T], work: Callable[[_T], _R], threads: int, depth: int | None = None) -> Iterator[_R]:
    """Yield ``work(item)`` for each item, in the items' order, computed ahead by ``threads`` threads.

    Parameters
    ----------
    items
        The work to do, in the order its results are wanted (e.g. a sampler's
        batches of indices); consumed lazily, at most ``depth`` ahead of the
        result last handed out.
    work
        Called once per item, in a pool thread (it must be thread-safe: the
        reader of :class:`h5ml.reader.source.SplitSource` is).
    threads
        Pool threads, >= 1.
    depth
        Items in flight at most (submitted and not yet handed out), >= 1;
        default ``2 * threads``.

    Yields
    ------
    Any
        ``work(item)``, item after item: result ``i`` is item ``i``'s.

    Raises
    ------
    ValueError
        If ``threads`` or ``depth`` is below 1 (when iteration starts).
    Exception
        Whatever ``work`` raised for an item, when that item's turn comes
        (the items after it are cancelled).

    Notes
    -----
    Closing the iterator early (``break`` in a ``for`` loop, or garbage
    collection) cancels the items not started and does not wait for those
    running; their results are dropped.
    """
    depth = 2 * threads if depth is None else depth
    if threads < 1 or depth < 1:
        raise ValueError(f"threads and depth must be >= 1, got threads={threads}, depth={depth}")
    pool = ThreadPoolExecutor(threads, thread_name_prefix="h5ml-read-ahead")
    pending: deque[Future[_R]] = deque()
    source = iter(items)
    try:
        for item in source:
            pending.append(pool.submit(work, item))
            if len(pending) >= depth:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()
    finally:
        for future in pending:
            future.cancel()
        pool.shutdown(wait=False, cancel_futures=True)


class CursorBatches:
    """The batches left in a cursor's epoch as int64 arrays, with their count: a ``batch_sampler`` of arrays.

    A loader that takes batches of indices (``torch.utils.data.DataLoader``)
    iterates it once per epoch; each batch reaches the dataset's
    ``__getitems__`` as the sampler's array (no list of ints in between).
    """

    def __init__(self, cursor: EpochCursor) -> None:
        self.cursor = cursor

    def __iter__(self) -> Iterator[npt.NDArray[np.int64]]:
        return self.cursor.iter_batches()

    def __len__(self) -> int:
        return self.cursor.num_batches


class CursorLoader:
    """A loader over an epoch cursor: its epochs, the batches handed out, resume states, and thread read-ahead.

    A subclass sets :attr:`sampler` (the cursor) and yields batches through
    :meth:`hand_out_read_ahead` (or the cursor's ``hand_out_each``), so that
    :meth:`state_dict` counts what reached the training loop, not what was
    read ahead.

    Attributes
    ----------
    sampler : h5ml.sampling.EpochCursor
        This rank's batches of every epoch.
    """

    sampler: EpochCursor

    @staticmethod
    def check_threads(threads: int, options: Mapping[str, Any], loader: str, example: str) -> bool:
        """Check ``threads`` and the loader ``options`` given with it; return whether ``pin_memory`` is asked.

        Parameters
        ----------
        threads
            Reading threads, >= 0 (0: the framework's own ``loader``).
        options
            The options meant for that loader; with threads, only ``pin_memory``.
        loader, example
            The loader's name and one of its worker options, for the message.

        Raises
        ------
        ValueError
            If ``threads`` is negative, or given with another option.
        """
        others = sorted(set(options) - {"pin_memory"})
        if threads < 0 or (threads and others):
            raise ValueError(
                f"threads={threads}{''.join(f', {k}=...' for k in others)}: threads must be >= 0, and threads read "
                f"in this process without {loader}: pass threads=0 to use its options such as {example} (worker "
                "processes), or leave those out"
            )
        return bool(options.get("pin_memory", False))

    def hand_out_read_ahead(
        self, read: Callable[[npt.NDArray[np.int64]], _R], threads: int, depth: int | None = None
    ) -> Iterator[_R]:
        """Yield ``read(indices)`` for each batch left in the epoch, read ahead by threads (:func:`read_ahead`).

        Batch ``i`` is the cursor's batch ``i`` (int64 indices, an array: no
        list is made), recorded as handed out when it is yielded.
        """
        return self.sampler.hand_out_each(read_ahead(self.sampler.iter_batches(), read, threads, depth))

    @property
    def batches_done(self) -> int:
        """Batches of the current epoch handed to the training loop (:attr:`h5ml.sampling.EpochCursor.batches_done`)."""
        return self.sampler.batches_done

    def set_epoch(self, epoch: int) -> None:
        """Select the epoch of the next iteration (:meth:`h5ml.sampling.EpochCursor.set_epoch`)."""
        self.sampler.set_epoch(epoch)

    def state_dict(self) -> dict[str, Any]:
        """Return the resume state after :attr:`batches_done` batches (:meth:`h5ml.sampling.EpochCursor.state_dict`)."""
        return self.sampler.state_dict(self.batches_done)

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Resume from ``state`` (of either adapter): the next iteration yields the batches not handed out.

        Raises
        ------
        ValueError
            If the state belongs to another file or other settings
            (:meth:`h5ml.sampling.EpochCursor.load_state_dict`).
        """
        self.sampler.load_state_dict(state)
