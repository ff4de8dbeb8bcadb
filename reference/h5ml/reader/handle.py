"""The read-only HDF5 file handle of a dataset: opening it, and knowing when a process inherited it (§7.3, §10.4.1).

:func:`open_h5file` opens a file read-only with the chunk cache of
:mod:`h5ml.reader.chunk_cache` and turns HDF5's failures into errors that say
what to do (a lock held by a writer, a missing file, a file that is not
HDF5). :data:`FORK_GENERATION` tells a :class:`h5ml.reader.dataset.Dataset`
that it runs in a forked child, whose copy of the parent's handle (and memory
map) it must not use.
"""

from __future__ import annotations

import os
from typing import Any, Final

import h5py

from h5ml.model.failures import LIBRARY_ERRORS, is_library_failure, is_lock_failure
from h5ml.model.hdf5 import unopenable_file
from h5ml.reader.chunk_cache import file_cache_settings

__all__ = ["FORK_GENERATION", "open_h5file"]

#: How many times this process's line has forked: a child's count differs from its parent's, so a
#: file handle opened under another count was inherited (a cheaper test than ``os.getpid()``, a system
#: call, on the per-sample path).
FORK_GENERATION: Final = [0]


def _count_fork() -> None:
    FORK_GENERATION[0] += 1


os.register_at_fork(after_in_child=_count_fork)


def open_h5file(path: str, locking: bool | None, cache_bytes: int) -> h5py.File:
    """Open ``path`` read-only with ``cache_bytes`` of chunk cache per dataset (§7.3); errors that say what to do.

    Parameters
    ----------
    path
        The file (absolute path).
    locking
        HDF5 file locking: None keeps HDF5's default, False or True sets it (§10.4.1).
    cache_bytes
        Chunk-cache bytes of each dataset, set on the file access property list.

    Returns
    -------
    h5py.File
        The file, opened read-only.

    Raises
    ------
    FileNotFoundError, PermissionError
        As the operating system says.
    OSError
        If HDF5 cannot lock the file (another process writes it).
    NotH5MLError
        If HDF5 cannot open it (not HDF5, or damaged).
    """
    kwargs: dict[str, Any] = file_cache_settings(cache_bytes)
    if locking is not None:
        kwargs["locking"] = locking
    if not os.path.lexists(path):
        raise FileNotFoundError(2, f"{path}: no such file")
    if os.path.isdir(path):
        raise IsADirectoryError(21, f"{path} is a directory; give the path of an h5ml file")
    try:
        return h5py.File(path, "r", **kwargs)
    except (FileNotFoundError, PermissionError):
        raise
    except LIBRARY_ERRORS as exc:
        if not is_library_failure(exc):
            raise
        text = " ".join(str(exc).split())
        if is_lock_failure(exc):
            raise OSError(
                getattr(exc, "errno", None),
                f"{path}: HDF5 could not lock the file for reading ({text}); another process has it "
                "open for writing, or this process opened it with other locking settings. Wait for the writer to "
                "finish, or pass locking=False on read-only media or NFS",
            ) from exc
        if not os.path.exists(path):
            raise FileNotFoundError(2, f"{path}: no such file") from exc
        raise unopenable_file(path, exc) from exc
