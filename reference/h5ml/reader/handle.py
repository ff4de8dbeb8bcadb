"""The read-only HDF5 file handle of a dataset: opening it, and knowing when a process inherited it (§7.3, §10.4.1).

:func:`open_h5file` opens a file read-only with the chunk cache of
:mod:`h5ml.reader.chunk_cache`, past a lock held by another process (SPEC
§10.4.1-S3, :mod:`h5ml.model.locking`), and turns HDF5's failures into errors
that say what to do (a missing file, a file that is not HDF5, a lock that was
asked for and cannot be taken). :data:`FORK_GENERATION` tells a :class:`h5ml.reader.dataset.Dataset`
that it runs in a forked child, whose copy of the parent's handle (and memory
map) it must not use.
"""

from __future__ import annotations

import os
from typing import Final

import h5py

from h5ml.errors import InvalidFileError
from h5ml.model.failures import LIBRARY_ERRORS, is_library_failure
from h5ml.model.hdf5 import unopenable_file
from h5ml.model.locking import open_read_only
from h5ml.model.paths import require_regular_file
from h5ml.reader.chunk_cache import file_cache_settings

__all__ = ["FORK_GENERATION", "check_open_options", "open_h5file"]

#: How many times this process's line has forked: a child's count differs from its parent's, so a
#: file handle opened under another count was inherited (a cheaper test than ``os.getpid()``, a system
#: call, on the per-sample path).
FORK_GENERATION: Final = [0]


def _count_fork() -> None:
    FORK_GENERATION[0] += 1


os.register_at_fork(after_in_child=_count_fork)


def check_open_options(path: str, cache_bytes: int | None, direct: bool, zero_copy: bool) -> None:
    """Refuse options of :func:`h5ml.open` that are out of range or contradict each other, before anything opens.

    Raises
    ------
    ValueError
        If ``cache_bytes`` is negative, or ``zero_copy=True`` is given with
        ``direct=False`` (views of the memory map need the map).
    """
    if cache_bytes is not None and cache_bytes < 0:
        raise ValueError(f"cache_bytes must be >= 0, got {cache_bytes}")
    if zero_copy and not direct:
        raise ValueError(
            f"{path}: zero_copy=True returns views of the file's memory map, which direct=False "
            "turns off: pass direct=True (the default) with zero_copy=True, or zero_copy=False"
        )


def open_h5file(path: str, locking: bool | None, cache_bytes: int) -> h5py.File:
    """Open ``path`` read-only with ``cache_bytes`` of chunk cache per dataset (§7.3); errors that say what to do.

    A lock that HDF5 cannot take (another process has the file open for
    writing, or inherited a writer's handle when it forked) is no error:
    the file is opened again without locking and the caller checks its
    completion marker next (SPEC §10.4.1-S3, :func:`h5ml.model.locking.open_read_only`).

    Parameters
    ----------
    path
        The file (absolute path).
    locking
        HDF5 file locking: None keeps HDF5's default and reads past a lock it
        cannot take; False opens without locking; True asks for the lock, and
        a lock that cannot be taken is then an error (§10.4.1).
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
    FileLockedError
        If HDF5 cannot lock the file and the lock was asked for (``locking=True``,
        or ``HDF5_USE_FILE_LOCKING=TRUE`` in the environment).
    NotH5MLError
        If HDF5 cannot open it (not HDF5, or damaged).
    """
    require_regular_file(path)
    try:
        return open_read_only(path, locking=locking, **file_cache_settings(cache_bytes))
    except (FileNotFoundError, PermissionError):
        raise
    except LIBRARY_ERRORS as exc:
        if not is_library_failure(exc):
            raise  # FileLockedError, an H5MLError, says what to do already
        if not os.path.exists(path):
            raise FileNotFoundError(2, f"{path}: no such file") from exc
        raise unopenable_file(path, exc) from exc


class SizeWatch:
    """The size of an open file, watched: a file truncated under its reader is an error, not rows of zeros (§10.3).

    HDF5 reads the part of a dataset that lies past the end of a file as
    zeros, without an error, so rows read from a file that another program
    truncated while it was open would come back as fill values. An h5ml
    file is never changed in place (writers replace it whole, §4.4): a file
    smaller than when it was opened was truncated. :meth:`check` compares
    the file's size now (``fstat`` of HDF5's own descriptor, one system
    call) with its size at open.

    Parameters
    ----------
    h5file
        The ``h5py.File`` just opened. Through another driver than ``sec2``
        (no descriptor to ask) the watch checks nothing.
    """

    __slots__ = ("filename", "handle", "opened_size")

    def __init__(self, h5file: h5py.File) -> None:
        self.filename = str(h5file.filename)
        self.handle: int | None = None
        self.opened_size = 0
        try:
            if h5file.driver == "sec2":
                handle = h5file.id.get_vfd_handle()
                if isinstance(handle, int) and handle >= 0:
                    self.opened_size, self.handle = int(os.fstat(handle).st_size), handle
        except (OSError, ValueError, TypeError, RuntimeError):
            self.handle = None

    def check(self, where: str, rows: str, size: int | None = None) -> None:
        """Raise if the file is smaller now than when it was opened.

        Parameters
        ----------
        where
            The HDF5 path of the dataset just read.
        rows
            The rows just read (``"rows [0, 64)"``), for the message.
        size
            The file's size now when the caller just took it (the memory map's,
            :meth:`h5ml.reader.file_map.FileMap.size_now`: a cheaper call); None
            takes it here (``fstat`` of HDF5's descriptor).

        Raises
        ------
        InvalidFileError
            If the file was truncated while open: the rows may be fill values.
        """
        if self.handle is None:
            return
        try:
            now = os.fstat(self.handle).st_size if size is None else size
        except OSError:
            return  # the handle was closed with its file: the next HDF5 call says so
        if now < self.opened_size:
            raise InvalidFileError(
                f"{self.filename}: {where}: the file was truncated while it was open ({self.opened_size} bytes when "
                f"opened, {now} now), so the {rows} just read may be zeros instead of the stored values; they are "
                "refused. Never truncate or rewrite a file that is being read; open it again once it is whole",
                path=self.filename,
                hdf5_path=where,
            )
