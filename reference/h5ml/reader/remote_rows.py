"""Rows of a file at a URL: only the chunks a read needs, neighbours in one range request, decoded in the pool (§7.3).

A file opened from a URL (:mod:`h5ml.reader.remote`) has no memory map. Its
:class:`RemoteMap` stands where the map of a local file stands
(:meth:`h5ml.reader.dataset.Dataset.file_map`), and a
:class:`~h5ml.reader.column.Column` of such a file reads chunked numeric
data through :class:`RemoteRows`, which:

- knows each chunk's file offset and stored size from the chunk index
  (:func:`h5ml.reader.direct.chunk_index`, the walk of the memory-map path:
  on a remote file it costs metadata reads only);
- for a read, takes the chunks that hold its rows and are not decoded yet,
  coalesces neighbouring chunks (gap at most
  :data:`~h5ml.model.remote.COALESCE_GAP_BYTES`) into one range request and
  fetches the ranges concurrently (:meth:`h5ml.model.remote.RemoteFile.fetch`);
- decodes compressed chunks with the codec table of local reads
  (:mod:`h5ml.reader.codecs`), in the decode pool, into the file's cache of
  decoded chunks (:mod:`h5ml.reader.decoded_cache`); an uncompressed chunk's
  stored bytes are its rows;
- copies the rows out as :class:`~h5ml.reader.compressed.CompressedRows`
  does (it is a subclass: one gather for both).

It never reads ahead: a batch fetches the chunks that hold its rows and no
others (a sequential reader's next chunks come with its next batch).
Anything else (a filter h5ml does not decode, contiguous or compact storage,
strings, a chunk never written) is read by h5py through the file object, as
any HDF5 read of a remote file: the values are the same either way.
"""

from __future__ import annotations

import threading
import weakref
from typing import Any

import h5py
import numpy as np
import numpy.typing as npt

from h5ml.model.remote import RemoteFile
from h5ml.reader.compressed import CompressedRows, chunk_layout
from h5ml.reader.decoded_cache import DecodedChunks
from h5ml.reader.direct import CHUNK_ITER
from h5ml.reader.file_map import FileMap

__all__ = ["RemoteMap", "RemoteRows", "remote_rows"]


class RemoteMap(FileMap):
    """What stands for the memory map of a file opened from a URL: the remote file and its decoded chunks.

    :attr:`data` is None, so that the memory-map readers (:func:`h5ml.reader.direct.direct_rows`,
    :func:`h5ml.reader.compressed.compressed_rows`) decline it and the column asks :func:`remote_rows`.

    Parameters
    ----------
    remote
        The open remote file.
    decoded_bytes
        The budget of the cache of decoded chunks (``chunk_cache_bytes`` of :func:`h5ml.open`).
    """

    __slots__ = ("remote",)

    def __init__(self, remote: RemoteFile, decoded_bytes: int) -> None:  # no super().__init__: nothing to map
        self.remote = remote
        self._region = None
        self.filename = remote.url
        self.zero_copy = False
        self.decoded = DecodedChunks(decoded_bytes)
        self.data = None
        self._users = weakref.WeakSet()
        self._lock = threading.Lock()
        self._fd = None  # no descriptor: RemoteRows.decode fetches instead of FileMap.pread
        self._reads = 0

    @property
    def closed(self) -> bool:
        """True once the remote file is closed."""
        return bool(self.remote.closed)

    def size(self) -> int:
        """The object's size in bytes (as the store said at open: objects are replaced whole, never truncated)."""
        return self.remote.size

    def size_now(self) -> int | None:
        """None: a remote object's size is not watched (:class:`h5ml.reader.handle.SizeWatch` skips it)."""
        return None

    def __repr__(self) -> str:
        return f"<h5ml RemoteMap of {self.filename!r}{' (closed)' if self.closed else ''}>"


class RemoteRows(CompressedRows):
    """Rows of one chunked numeric dataset of a remote file, fetched by chunk (see the module docstring).

    Build it with :func:`remote_rows`; the parameters are those of
    :class:`~h5ml.reader.compressed.CompressedRows`, ``file_map`` a :class:`RemoteMap`.
    """

    __slots__ = ("_fetched", "_fetching", "remote")

    def __init__(self, file_map: RemoteMap, *args: Any) -> None:
        super().__init__(file_map, *args)
        self.remote = file_map.remote
        #: Stored bytes fetched for chunks whose decode has not run yet: chunk number -> bytes.
        self._fetched: dict[int, bytes] = {}
        self._fetching = threading.Lock()

    def _check_file(self) -> npt.NDArray[np.uint8]:
        if self.remote.closed:
            raise ValueError(f"{self.remote.url}: {self.hdf5_path}: the dataset was closed")
        return np.empty(0, np.uint8)  # no map: decode() fetches the stored bytes instead

    def _fetch(self, indices: list[int]) -> None:
        """Fetch the stored bytes of the chunks ``indices`` that are neither decoded nor fetched, in few requests."""
        path = self.hdf5_path
        with self._fetching:
            todo = sorted({k for k in indices if k not in self._fetched and not self.cache.cached((path, k))})
            if not todo:
                return
            ranges = [(self.stored[k][0], self.stored[k][0] + self.stored[k][1]) for k in todo]
            for k, data in zip(todo, self.remote.fetch(ranges), strict=True):
                self._fetched[k] = data

    def decode(self, index: int) -> npt.NDArray[Any]:
        """Decode chunk ``index`` from its fetched bytes (fetched now, alone, when a read did not fetch it first).

        Raises
        ------
        InvalidFileError
            If its stored bytes do not decode to one chunk.
        """
        self._check_file()
        with self._fetching:
            stored = self._fetched.pop(index, None)
        if stored is None:
            offset, size, _ = self.stored[index]
            stored = self.remote.fetch([(offset, offset + size)])[0]
        return self.values(index, stored)

    def chunks(self, indices: list[int]) -> dict[int, npt.NDArray[Any]]:
        """The decoded chunks ``indices``: the missing ones fetched together first, then decoded in the pool."""
        self._check_file()
        self._fetch(indices)
        return super().chunks(indices)

    def prefetch_chunks(self, indices: list[int]) -> int:
        """Fetch the chunks ``indices`` (together) and start decoding them in the pool; return the decodes started.

        Nothing is fetched when the decoded cache keeps nothing (``chunk_cache_bytes=0``): the read decodes then.
        """
        todo = [k for k in indices if 0 <= k < len(self.stored)]
        if not todo or self.cache.budget <= 0:
            return 0
        self._fetch(todo)
        return super().prefetch_chunks(todo)

    def _read_ahead(self, start: int, stop: int) -> None:
        """No read-ahead over the network: a read fetches only the chunks that hold its rows."""
        self._next = stop

    def _sample_ahead(self, row: int, k: int) -> None:
        """No read-ahead after a sample either (its chunk's other rows are decoded and cached already)."""
        self._next = row + 1


def remote_rows(node: h5py.Dataset, dtype: np.dtype[Any], file_map: RemoteMap) -> RemoteRows | None:
    """Return a :class:`RemoteRows` for ``node`` when its chunks can be fetched and decoded by h5ml, else None.

    Parameters
    ----------
    node
        The h5py dataset (N, *inner) of a file opened from a URL.
    dtype
        The dtype rows are wanted in: the stored numeric dtype in native byte order.
    file_map
        The dataset's :class:`RemoteMap`.

    Returns
    -------
    RemoteRows or None
        None for anything but plain numbers chunked by whole rows, unfiltered or with filters h5ml decodes
        (:func:`h5ml.reader.compressed.chunk_layout`), every chunk inside the object: read through h5py then.
    """
    if file_map.closed or not CHUNK_ITER:
        return None
    try:
        layout = chunk_layout(node, dtype)
    except (OSError, RuntimeError, ValueError, TypeError, KeyError, OverflowError):
        return None
    if layout is None or not layout.within(file_map.size()):
        return None
    return RemoteRows(file_map, str(node.name), *layout)
