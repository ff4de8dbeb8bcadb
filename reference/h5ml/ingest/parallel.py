"""Parallel decoding in order: :func:`ordered_map` over a pool of threads or worker processes, memory bounded.

The converters decode their sources with ``workers`` threads (the default:
the decoders release Python's lock) or, with ``processes``, worker
processes, and write the results in the source order. At most ``workers *
4`` tasks are in flight, so memory stays bounded whatever the dataset's
size. An error, an interrupt or a worker killed by the system ends every
worker at once (:func:`h5ml.reader.pools.stop_pool`); worker processes start as
:func:`h5ml.reader.pools.process_pool` says.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Final, TypeVar

from h5ml.errors import IngestError
from h5ml.reader.pools import process_pool, stop_pool, submit

__all__ = ["IN_FLIGHT_PER_WORKER", "ordered_map"]

_T = TypeVar("_T")
_R = TypeVar("_R")

#: Tasks in flight per worker (bounds memory).
IN_FLIGHT_PER_WORKER: Final = 4


def ordered_map(
    fn: Callable[[_T], _R], tasks: Iterable[_T], workers: int, *, processes: bool = False
) -> Iterator[tuple[_T, _R | Exception]]:
    """Apply ``fn`` to each task, in parallel when ``workers > 1``; yield ``(task, result or exception)`` in task order.

    Parameters
    ----------
    fn
        The work of one task; an exception it raises is yielded, not raised.
    tasks
        Consumed lazily: at most ``workers * 4`` tasks are in flight, so
        memory is bounded whatever their number.
    workers
        Threads (or processes) at work; ``<= 1`` runs in this thread.
    processes
        Worker processes (``forkserver`` where available, else ``spawn``)
        instead of threads; ``fn`` and the tasks must then pickle. Threads are
        the default: the decoders (libsndfile, libsoxr, Pillow's codecs, zlib,
        HDF5 reads) release Python's lock, and threads pay no process start
        and no copy of the decoded samples through a pipe (measured with 2
        workers on 2 cores: audio folders 0.47x -> 0.83x the one-file-at-a-
        time script, image folders 0.54x -> 1.17x, in ``bench_ingest.py``).

    Yields
    ------
    tuple
        ``(task, fn(task))``, or ``(task, the exception fn raised)``, in the order of ``tasks``.

    Raises
    ------
    h5ml.IngestError
        If a worker process ended without a result (killed by a signal, out
        of memory): no later task can run.
    """
    if workers <= 1:
        for task in tasks:
            try:
                yield task, fn(task)
            except Exception as exc:  # reported to the caller, who stops or skips
                yield task, exc
        return
    pending: deque[tuple[_T, Future[_R]]] = deque()
    limit = workers * IN_FLIGHT_PER_WORKER
    pool: Executor = (
        process_pool(workers)
        if processes
        else ThreadPoolExecutor(max_workers=workers, thread_name_prefix="h5ml-ingest")
    )
    try:
        for task in tasks:
            try:
                pending.append((task, submit(pool, fn, task)))
            except BrokenProcessPool as exc:
                raise _worker_died(task) from exc
            if len(pending) >= limit:
                yield _result(*pending.popleft())
        while pending:
            yield _result(*pending.popleft())
    except BaseException:  # an error, an interrupt (SIGINT, SIGTERM) or the caller stopped: end the workers now
        stop_pool(pool)
        raise
    pool.shutdown(wait=True)


def _worker_died(task: Any) -> IngestError:
    """A worker process ended without a result (killed by a signal, out of memory): no task can go on."""
    where = getattr(task, "first_path", None) or repr(task)
    return IngestError(
        f"a worker process ended abruptly (killed by a signal, or out of memory) while decoding {where} or a "
        "neighbouring file; nothing was written. Convert again, with fewer --workers or without --processes",
        path=str(where),
    )


def _result(task: Any, future: Future[Any]) -> tuple[Any, Any]:
    try:
        return task, future.result()
    except BrokenProcessPool as exc:  # every later task fails too: not one bad file to skip
        raise _worker_died(task) from exc
    except Exception as exc:
        return task, exc
