"""Worker processes that read or decode: started whole before an interrupt is let in, stopped at once.

Converters (:mod:`h5ml.ingest.parallel`) and the read-ahead of the Keras
adapter (:mod:`h5ml.reader.prefetch`) run work in
``concurrent.futures.ProcessPoolExecutor`` pools. Three rules make such a
pool safe to interrupt, in one place:

- Workers start with ``forkserver`` where available, else ``spawn``, never
  ``fork``: a worker forked from a process that runs torch or keras threads
  can hang (measured here: a forked worker never exited). Scripts that start
  worker processes need the usual ``if __name__ == "__main__":`` guard.
- The pool starts a worker inside ``submit``, and the new process then reads
  its start-up data from the parent. A SIGINT or SIGTERM raised in the parent
  at that moment leaves the worker reading a closed pipe, and it prints
  ``EOFError: Ran out of input`` with a traceback on the user's terminal
  (seen under load: about 1 run in 8 of a SIGTERM during a conversion).
  :func:`submit` therefore holds SIGINT and SIGTERM while it runs
  (:func:`interrupts_deferred`) and lets them in as soon as it returns.
- Workers ignore SIGINT: Ctrl-C in a terminal reaches the whole process group,
  and a worker interrupted in its queue would print a traceback too. The
  parent gets the interrupt and ends its workers with :func:`stop_pool`.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import signal
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Executor, Future, ProcessPoolExecutor
from typing import Any, TypeVar

__all__ = ["interrupts_deferred", "process_pool", "stop_pool", "submit"]

_R = TypeVar("_R")

#: The signals an interrupt arrives by: Ctrl-C and ``kill`` (the command line turns SIGTERM into an interrupt).
_INTERRUPTS = (signal.SIGINT, signal.SIGTERM)


@contextlib.contextmanager
def interrupts_deferred() -> Iterator[None]:
    """Hold SIGINT and SIGTERM in this block; deliver each one received as soon as it ends.

    Only the main thread runs signal handlers: elsewhere the block does
    nothing (signals then interrupt the main thread, not this one). The
    handlers in place before the block (the command line's, Python's default
    ``KeyboardInterrupt``, or the default action) get the held signals, in the
    order they came.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held: list[int] = []

    def hold(signum: int, frame: Any) -> None:
        held.append(signum)

    previous = {signum: signal.signal(signum, hold) for signum in _INTERRUPTS}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        for received in held:
            signal.raise_signal(received)


def _ignore_sigint() -> None:
    """A worker's start: Ctrl-C is for the parent, which ends its workers (:func:`stop_pool`)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def process_pool(workers: int) -> ProcessPoolExecutor:
    """Return a pool of ``workers`` processes started by ``forkserver`` (else ``spawn``) that ignore SIGINT.

    Parameters
    ----------
    workers
        Processes at most, >= 1 (started on demand by :func:`submit`).

    Returns
    -------
    concurrent.futures.ProcessPoolExecutor
        Submit to it with :func:`submit`; end it with :func:`stop_pool` after an
        error or an interrupt, or ``shutdown()`` when its work is done.
    """
    methods = multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")
    return ProcessPoolExecutor(max_workers=workers, mp_context=context, initializer=_ignore_sigint)


def submit(pool: Executor, fn: Callable[..., _R], /, *args: Any) -> Future[_R]:
    """``pool.submit(fn, *args)``, with interrupts held while a process pool may start a worker.

    Raises
    ------
    concurrent.futures.process.BrokenProcessPool
        As ``submit``, when a worker of the pool died.
    """
    if not isinstance(pool, ProcessPoolExecutor):
        return pool.submit(fn, *args)
    with interrupts_deferred():
        return pool.submit(fn, *args)


def stop_pool(pool: Executor) -> None:
    """Stop a pool: cancel what is pending and end its worker processes (never wait on one).

    Measured here: a forkserver worker of a process running torch and keras
    sometimes never exits after its last task, and the interpreter's exit then
    waits on it forever. Workers hold nothing to save, so they are terminated.

    A worker terminated while it sends a result leaves half a message in the
    pool's result pipe; the pool's manager thread then waits for the rest,
    which never comes, since this process holds the pipe's write end too, and
    the interpreter's exit waits on that thread forever (seen: 2 Ctrl-C in 10
    during ``h5ml convert --processes`` hung at exit). Once the workers are
    gone, this process's write end is closed, so the manager thread reads the
    end of the pipe, declares the pool broken and ends.
    """
    processes = list((getattr(pool, "_processes", None) or {}).values())
    results = getattr(pool, "_result_queue", None)  # shutdown() forgets it
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        if process.is_alive():
            process.terminate()
    for process in processes:
        process.join(timeout=10)
    writer = getattr(results, "_writer", None)
    if writer is not None and not any(process.is_alive() for process in processes):
        writer.close()
