"""The thread pool that decodes compressed chunks, one per process, sized to the cores (§7.3).

The decoders of :mod:`h5ml.reader.codecs` release Python's lock, so threads
of one process decode several chunks at once: :func:`decode_pool` is the
process's pool of :data:`DECODE_THREADS` threads, made on first use and
shared by every open dataset. A forked child never uses its parent's pool
(its threads do not exist in the child): the first call in the child makes a
new one.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Final

__all__ = ["DECODE_THREADS", "decode_pool"]


def _cores() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # not Linux
        return max(1, os.cpu_count() or 1)


#: Threads of the decode pool: the cores this process may run on.
DECODE_THREADS: Final = _cores()

_lock = threading.Lock()
_pool: ThreadPoolExecutor | None = None
_pid: int | None = None


def decode_pool() -> ThreadPoolExecutor:
    """The decode pool of this process (:data:`DECODE_THREADS` threads named ``h5ml-decode``), made on first use."""
    global _pool, _pid
    pool, pid = _pool, os.getpid()
    if pool is not None and _pid == pid:
        return pool
    with _lock:
        if _pool is None or _pid != pid:
            _pool = ThreadPoolExecutor(max_workers=DECODE_THREADS, thread_name_prefix="h5ml-decode")
            _pid = pid
        return _pool


def _forget_after_fork() -> None:
    """In a forked child: the parent's pool and lock are not usable (their threads are not here)."""
    global _pool, _pid, _lock
    _pool, _pid, _lock = None, None, threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_after_fork)
