"""Batches handed from a worker process to its parent through POSIX shared memory, not pickled through a pipe.

A worker process of :class:`h5ml.reader.prefetch.Prefetcher` (Keras'
``use_multiprocessing=True``) reads a batch, writes its numeric arrays into
one new shared-memory segment (:func:`to_shared`) and returns only their
layout; the parent maps the segment, removes its name at once and builds the
arrays on the mapping (:func:`from_shared`): one copy in the worker, none in
the parent, where pickling copies each batch into the pipe, out of it and into
new arrays (``benchmarks/bench_loaders.py`` times the fits). Arrays of Python
objects (bytes samples) and batches under :data:`SHARED_MIN_BYTES` travel
pickled as before.

No segment outlives its batch:

- the parent removes a segment's name as soon as the worker's result arrives
  (:func:`from_shared`), before the batch is asked for; its memory is freed
  when the last array on it is garbage collected;
- a result that arrives for a batch no longer wanted is mapped and dropped
  just the same;
- a worker stopped while it writes (a fit interrupted, the pool terminated)
  leaves a segment nobody returned: every segment's name starts with its
  feed's prefix (:func:`segment_prefix`), and :func:`remove_segments` removes
  those left, when the feed closes and at exit.

A process killed with SIGKILL cannot clean up: its segments stay in
``/dev/shm`` until the machine restarts (``h5ml-<pid>-...``; remove them by
hand). Where POSIX shared memory is missing (Windows), batches are pickled.
Framework-free; no SPEC clause (it moves §6 batch arrays between processes).
"""

from __future__ import annotations

import mmap
import os
import secrets
from dataclasses import dataclass
from typing import Any

import numpy as np

try:
    import _posixshmem  # type: ignore[import-not-found]  # CPython's POSIX shared memory (multiprocessing's)
except ImportError:  # pragma: no cover - Windows
    _posixshmem = None

__all__ = ["SHARED", "SHARED_MIN_BYTES", "SharedBatch", "from_shared", "remove_segments", "segment_prefix", "to_shared"]

#: Whether this platform has POSIX shared memory (else batches are pickled).
SHARED = _posixshmem is not None
#: Batches whose numeric arrays hold fewer bytes travel pickled: a segment costs about 3 system calls each side.
SHARED_MIN_BYTES = 64 * 1024
#: Where Linux lists the segments (to remove those a stopped worker left).
_SHM_DIR = "/dev/shm"
#: Arrays are laid out at this alignment in a segment.
_ALIGN = 64


@dataclass(frozen=True)
class SharedBatch:
    """A batch whose numeric arrays lie in a shared-memory segment: what a worker returns instead of them.

    Attributes
    ----------
    name
        The segment's name (``h5ml-<parent pid>-<feed>-<batch>``).
    size
        Its bytes.
    layout
        ``(key, dtype string, shape, offset)`` of each array in it.
    others
        The batch's other values (object arrays, non-arrays), pickled with this.
    """

    name: str
    size: int
    layout: tuple[tuple[str, str, tuple[int, ...], int], ...]
    others: dict[str, Any]


def segment_prefix() -> str:
    """A new feed's prefix for its segments' names: this process's id and a random token."""
    return f"h5ml-{os.getpid()}-{secrets.token_hex(4)}-"


def _shareable(value: Any) -> bool:
    return isinstance(value, np.ndarray) and not value.dtype.hasobject


def to_shared(arrays: dict[str, Any], prefix: str) -> dict[str, Any] | SharedBatch:
    """Write a batch's numeric arrays into a new segment named ``prefix + token`` (in the worker).

    Parameters
    ----------
    arrays
        Key -> batch array (or any value a transform returned).
    prefix
        The feed's :func:`segment_prefix`.

    Returns
    -------
    dict or SharedBatch
        ``arrays`` itself when shared memory is missing or the arrays are
        small (:data:`SHARED_MIN_BYTES`), else the segment's description.

    Raises
    ------
    OSError
        If the segment cannot be made (``/dev/shm`` full: the message says so).
    """
    shared = {key: value for key, value in arrays.items() if _shareable(value)}
    total = sum(value.nbytes for value in shared.values())
    if _posixshmem is None or total < SHARED_MIN_BYTES:
        return arrays
    layout, offset = [], 0
    for key, value in shared.items():
        layout.append((key, value.dtype.str, tuple(value.shape), offset))
        offset += -(-value.nbytes // _ALIGN) * _ALIGN
    size = max(offset, 1)
    name = prefix + secrets.token_hex(6)
    try:
        fd = _posixshmem.shm_open("/" + name, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600)
    except OSError as exc:
        raise OSError(exc.errno, f"cannot make a shared-memory segment of {size} bytes for a batch ({exc.strerror}); "
                      f"free space in {_SHM_DIR}, or pass use_multiprocessing=False (threads)") from exc  # fmt: skip
    try:
        os.ftruncate(fd, size)
        with mmap.mmap(fd, size) as segment:
            for key, dtype, shape, start in layout:
                view = np.ndarray(shape, dtype=np.dtype(dtype), buffer=segment, offset=start)
                view[...] = shared[key]
                del view  # the map closes only once no array is on it
    except BaseException:
        _posixshmem.shm_unlink("/" + name)
        raise
    finally:
        os.close(fd)
    others = {key: value for key, value in arrays.items() if key not in shared}
    return SharedBatch(name, size, tuple(layout), others)


def from_shared(batch: dict[str, Any] | SharedBatch) -> dict[str, Any]:
    """Map a worker's segment, remove its name, and return the batch with its arrays on the mapping (in the parent).

    Returns
    -------
    dict
        Key -> array, in the worker's order: writeable arrays on the
        segment's memory (freed when the last of them is collected), and the
        values that travelled pickled.
    """
    if not isinstance(batch, SharedBatch):
        return batch
    assert _posixshmem is not None
    fd = _posixshmem.shm_open("/" + batch.name, os.O_RDWR, 0o600)
    try:
        segment = mmap.mmap(fd, batch.size)
    finally:
        os.close(fd)
        _posixshmem.shm_unlink("/" + batch.name)  # the name goes now; the memory stays while it is mapped
    out = {key: np.ndarray(shape, np.dtype(dtype), segment, start) for key, dtype, shape, start in batch.layout}
    return {**out, **batch.others}


def remove_segments(prefix: str) -> int:
    """Remove the segments whose names start with ``prefix`` (a stopped worker's); return how many.

    Only where the segments are listed (``/dev/shm``, Linux); elsewhere nothing is removed.
    """
    if _posixshmem is None or not os.path.isdir(_SHM_DIR):
        return 0
    removed = 0
    for name in os.listdir(_SHM_DIR):
        if name.startswith(prefix):
            try:
                _posixshmem.shm_unlink("/" + name)
                removed += 1
            except FileNotFoundError:  # removed meanwhile by from_shared
                pass
    return removed
