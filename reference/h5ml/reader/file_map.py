"""The read-only memory map of an open file: :class:`FileMap` and :func:`open_file_map` (§7.3, §10.3).

A :class:`~h5ml.reader.dataset.Dataset` opened read-only through the
``sec2`` driver maps its file once; the direct readers
(:mod:`h5ml.reader.direct`) copy unfiltered rows out of the map, the
compressed readers (:mod:`h5ml.reader.compressed`) keep their decoded chunks
in its cache (:attr:`FileMap.decoded`) and read the stored bytes of chunks
with :meth:`FileMap.pread`, which returns fewer bytes where a read of the map
would crash the process (SIGBUS) if another program truncated the file: the
decode pool reads ahead at any time, after the caller's size check.
"""

from __future__ import annotations

import mmap
import os
import threading
import weakref
from typing import TYPE_CHECKING

import h5py
import numpy as np
import numpy.typing as npt

from h5ml.reader.decoded_cache import DEFAULT_DECODED_BYTES, DecodedChunks

if TYPE_CHECKING:  # pragma: no cover
    from h5ml.reader.direct import DirectRows

__all__ = ["FileMap", "open_file_map"]


class FileMap:
    """The read-only memory map of one open file, owned by one dataset in one process (§7.3).

    Create it with :func:`open_file_map`. Every :class:`DirectRows` built on
    it is registered, so that :meth:`close` can drop their views of the map
    before unmapping it (a map with views cannot be unmapped).

    Parameters
    ----------
    region
        The read-only ``mmap.mmap`` of the whole file.
    filename
        The file path, for messages.
    decoded_bytes
        The budget of :attr:`decoded`, the cache of the chunks h5ml decodes
        itself (:mod:`h5ml.reader.compressed`): ``chunk_cache_bytes`` of :func:`h5ml.open`.
    zero_copy
        Whether readers may hand out read-only views of the map (:meth:`DirectRows.view`;
        ``zero_copy=True`` of :func:`h5ml.open`, see the module docstring for what it trades).
    """

    __slots__ = ("_fd", "_lock", "_reads", "_region", "_users", "data", "decoded", "filename", "zero_copy")

    def __init__(
        self,
        region: mmap.mmap,
        filename: str,
        decoded_bytes: int = DEFAULT_DECODED_BYTES,
        zero_copy: bool = False,
        fd: int | None = None,
    ) -> None:
        self._region: mmap.mmap | None = region
        #: A descriptor of the same file for :meth:`pread` (owned: closed with the map), or None.
        self._fd = fd
        self._reads = 0  # preads in flight: the descriptor is closed after the last one
        self.filename = filename
        self.zero_copy = bool(zero_copy)
        #: The decoded chunks of this file's compressed datasets, kept for this process (§7.3).
        self.decoded = DecodedChunks(decoded_bytes)
        #: The whole file as a read-only uint8 array (a view of the map); None once closed.
        self.data: npt.NDArray[np.uint8] | None = np.frombuffer(region, dtype=np.uint8)
        self._users: weakref.WeakSet[DirectRows] = weakref.WeakSet()
        self._lock = threading.Lock()

    @property
    def closed(self) -> bool:
        """True after :meth:`close`."""
        return self._region is None

    def size(self) -> int:
        """The file's size now, in bytes: ``fstat`` of the map's own descriptor (one system call).

        Raises
        ------
        ValueError
            If the map was closed.
        """
        region = self._region
        if region is None:
            raise ValueError(f"{self.filename}: the memory map of this file was closed (its dataset was closed)")
        return int(region.size())

    def size_now(self) -> int | None:
        """:meth:`size`, or None once the map is closed: for :class:`h5ml.reader.handle.SizeWatch` (§10.3).

        ``mmap.size()`` is one ``fstat`` without building a ``stat_result``:
        about 0.7 us against 2.4 us for ``os.fstat`` here (the same file: its
        device and inode were compared with HDF5's when it was mapped).
        """
        region = self._region
        try:
            return None if region is None else int(region.size())
        except (ValueError, OSError):  # closed by another thread meanwhile
            return None

    def pread(self, offset: int, size: int) -> bytes:
        """The file's bytes ``[offset, offset + size)`` as they are now, read with ``os.pread``: never SIGBUS.

        For reads that run in other threads at any time (the decode pool's
        read-ahead, §10.3): a read of the map after another program truncated
        the file would kill the process, where this one returns fewer bytes.
        The descriptor stays open until the last read in flight has ended,
        even if :meth:`close` runs meanwhile (it is never reused for another file under a read).

        Returns
        -------
        bytes
            At most ``size`` bytes: fewer when the file now ends before ``offset + size``.

        Raises
        ------
        ValueError
            If the map was closed, or has no descriptor of its own.
        OSError
            As ``os.pread``.
        """
        with self._lock:
            fd = self._fd
            if self._region is None or fd is None:
                raise ValueError(f"{self.filename}: the memory map of this file was closed (its dataset was closed)")
            self._reads += 1
        try:
            return os.pread(fd, size, offset)
        finally:
            with self._lock:
                self._reads -= 1
                if self._region is None:
                    self._close_fd()

    def _close_fd(self) -> None:
        """Close the descriptor once the map is closed and no pread is in flight (under the lock)."""
        if self._fd is not None and self._reads == 0:
            fd, self._fd = self._fd, None
            os.close(fd)

    def attach(self, user: DirectRows) -> None:
        """Register ``user`` (it holds views of :attr:`data`) so that :meth:`close` can release it."""
        with self._lock:
            self._users.add(user)

    def close(self, *, inherited: bool = False) -> None:
        """Release every :class:`DirectRows` of this map, then unmap the file and close the map's descriptor.

        A view of the map held elsewhere (handed out only with
        :attr:`zero_copy`: :meth:`DirectRows.view`) keeps the map until that
        view is freed; the map is then unmapped by the garbage collector.

        Parameters
        ----------
        inherited
            True in a forked child closing its copy of the parent's map (the
            parent's is not affected): the lock, which a thread of the parent
            may have held at the fork, is replaced first.
        """
        if inherited:
            self._lock = threading.Lock()
            self._reads = 0  # the parent's reads in flight are not this process's
        with self._lock:
            users, self._users = list(self._users), weakref.WeakSet()
            region, self._region = self._region, None
            self.data = None
            self._close_fd()
        if inherited:  # its lock may be held by a thread of the parent: a new, empty cache instead
            self.decoded = DecodedChunks(self.decoded.budget)
        else:
            self.decoded.clear()
        for user in users:
            user.release()
        del users
        if region is not None:
            try:
                region.close()
            except BufferError:  # a view of the map is still alive: it is unmapped when freed
                pass

    def __repr__(self) -> str:
        return f"<h5ml FileMap of {self.filename!r}{' (closed)' if self.closed else ''}>"


def open_file_map(
    h5file: h5py.File, decoded_bytes: int = DEFAULT_DECODED_BYTES, zero_copy: bool = False
) -> FileMap | None:
    """The read-only memory map of the file HDF5 opened as ``h5file``, or None when it cannot be mapped safely.

    The map is made from a descriptor of our own (the same file: device and
    inode are compared), never from HDF5's: a map holds its descriptor open,
    and HDF5's carries the file lock, which must go when the file is closed.

    Parameters
    ----------
    h5file
        An ``h5py.File`` opened read-only with the ``sec2`` driver and no user block.
    decoded_bytes
        The budget of the map's cache of decoded chunks (:attr:`FileMap.decoded`).
    zero_copy
        :attr:`FileMap.zero_copy`: readers may return views of the map.

    Returns
    -------
    FileMap or None
        None for a file opened for writing, through another driver, with a
        user block, empty, or replaced on disk since HDF5 opened it.
    """
    try:
        if h5file.mode != "r" or h5file.driver != "sec2" or h5file.userblock_size != 0:
            return None
        handle = h5file.id.get_vfd_handle()
        if not isinstance(handle, int) or handle < 0:
            return None
        st = os.fstat(handle)
        if st.st_size <= 0:
            return None
        filename = h5file.filename
        own = os.open(filename, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        try:
            mine = os.fstat(own)
            if (mine.st_dev, mine.st_ino, mine.st_size) != (st.st_dev, st.st_ino, st.st_size):
                os.close(own)
                return None
            region = mmap.mmap(own, 0, access=mmap.ACCESS_READ)  # the map keeps a descriptor of its own
        except BaseException:
            os.close(own)
            raise
    except (OSError, ValueError, TypeError, RuntimeError):
        return None
    return FileMap(region, filename, decoded_bytes, zero_copy, fd=own)  # ``own`` serves FileMap.pread
