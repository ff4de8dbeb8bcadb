"""The source files as each worker process reads them: one handle per file and process, one block per part.

Each worker opens a source by path once (:func:`source_file`: a forked
child never uses its parent's handles) and keeps the block of rows it read
last per part (:data:`BLOCKS`), so that consecutive rows cost one HDF5 read
per block; :func:`close_sources` closes them when a conversion ends.
Every object read from a source goes through :func:`checked_object`, which
runs :func:`h5ml.model.storage.check_path` first (§3.6, §10.1): a source
reopened after it was walked (a worker process, a file replaced in
between) cannot make a conversion read another file.
"""

from __future__ import annotations

import os
import threading
from typing import Any

import h5py

from h5ml.model.locking import open_foreign
from h5ml.model.storage import check_path

__all__ = ["BLOCKS", "checked_object", "close_sources", "source_file"]

_HANDLES: dict[tuple[str, int], h5py.File] = {}
_HANDLES_PID: list[int] = [os.getpid()]
#: Guards the caches when the workers are threads.
_LOCK = threading.Lock()
#: (source, dataset path, part start) -> (first row, stop row, the rows) of the block last read.
BLOCKS: dict[tuple[str, str, int], tuple[int, int, Any]] = {}


def source_file(path: str, cache_bytes: int = 0) -> h5py.File:
    """The source opened read-only in this process (opened on first use, kept for the next samples).

    Parameters
    ----------
    path
        The source file.
    cache_bytes
        The HDF5 chunk cache (``rdcc_nbytes``); 0: h5py's default.

    Returns
    -------
    h5py.File
        The open file, shared by this process's threads.
    """
    with _LOCK:
        if _HANDLES_PID[0] != os.getpid():  # a forked child: the parent's handles are not ours to use
            _HANDLES.clear()
            BLOCKS.clear()
            _HANDLES_PID[0] = os.getpid()
        key = (path, cache_bytes)
        f = _HANDLES.get(key)
        if f is None or not f.id.valid:
            f = open_foreign(path, "convert it again", **({"rdcc_nbytes": cache_bytes} if cache_bytes else {}))
            _HANDLES[key] = f
        return f


def checked_object(f: h5py.File, source: str, hdf5_path: str, allow_external: bool) -> Any:
    """``f[hdf5_path]``, after refusing an external link on the way or storage in other files there (§3.6, §10.1).

    Parameters
    ----------
    f
        The open source.
    source
        Its path, for messages.
    hdf5_path
        The object to read.
    allow_external
        The source was walked with ``allow_external=True``: nothing is checked.

    Returns
    -------
    h5py.Dataset or h5py.Group

    Raises
    ------
    h5ml.ForbiddenStorageError
        As :func:`h5ml.model.storage.check_path` (SPEC §10.1-R1).
    KeyError
        If the object does not exist.
    """
    if not allow_external:
        check_path(f, source, hdf5_path)  # SPEC §10.1-R1: the walk limited to what is read
    return f[hdf5_path]


def close_sources() -> None:
    """Close the files this process opened (called when a conversion ends; workers exit with theirs)."""
    with _LOCK:
        for f in _HANDLES.values():
            if f.id.valid:
                f.close()
        _HANDLES.clear()
        BLOCKS.clear()
