"""Direct reads of unfiltered numeric datasets from a memory map of their file (§7.3).

An unfiltered dataset stores its rows as plain bytes in the file: contiguous
data in one block (``H5Dget_offset``), chunked data in one block per chunk
(``H5Dget_chunk_info``). When every row of the dataset lies in such a block
that the file really holds, :class:`DirectRows` copies rows straight out of a
read-only memory map of the file, without a call into the HDF5 library. That is
about 20x faster than any h5py read for random rows of a few KiB, and returns
the same values (converted to native byte order).

:func:`direct_rows` returns None, so that the caller keeps reading through
h5py, whenever anything is unusual: filters, an HDF5 type that is not a plain
integer or float, a storage other than contiguous or chunked (compact, virtual,
external files), chunks that do not span whole rows, a chunk never written
(HDF5 returns the fill value for it), a block outside the file, a file opened
for writing, with a user block, or through another file driver than ``sec2``.
"""

from __future__ import annotations

import math
import mmap
import os
import threading
import weakref
from typing import Any, Final

import h5py
import numpy as np
import numpy.typing as npt

__all__ = ["DirectRows", "direct_rows"]

#: Memory maps of open files, shared by the datasets of one file in one process:
#: keyed by (process id, device, inode, size, modification time); dropped with their last user.
_MAPS: Final[weakref.WeakValueDictionary[tuple[int, ...], Any]] = weakref.WeakValueDictionary()
_MAPS_LOCK: Final = threading.Lock()
#: The largest numpy item (bytes): larger rows are copied one by one.
_MAX_ITEM: Final = 2**31 - 1


class DirectRows:
    """Rows of one unfiltered dataset, read from a memory map of its file (§7.3).

    Parameters
    ----------
    data
        The whole file as a read-only uint8 array (a memory map).
    blocks
        File byte offset of each block of ``block_rows`` rows (one block for a contiguous dataset).
    block_rows
        Rows per block (the chunk rows; the number of rows of a contiguous dataset).
    rows
        Rows of the dataset.
    inner
        The dataset's axes after the first.
    file_dtype
        The stored numeric dtype (either byte order).
    """

    __slots__ = (
        "block_rows",
        "blocks",
        "data",
        "file_dtype",
        "inner",
        "offsets",
        "row_nbytes",
        "rows",
        "rows_view",
        "swap",
    )

    def __init__(
        self,
        data: npt.NDArray[np.uint8],
        blocks: list[int],
        block_rows: int,
        rows: int,
        inner: tuple[int, ...],
        file_dtype: np.dtype[Any],
    ) -> None:
        self.data = data
        self.blocks = blocks
        self.offsets = np.asarray(blocks, dtype=np.int64)
        self.block_rows = block_rows
        self.rows = rows
        self.inner = inner
        self.file_dtype = file_dtype
        self.row_nbytes = int(file_dtype.itemsize * math.prod(inner))
        self.swap = not file_dtype.isnative
        #: The file as overlapping rows: item ``i`` is the ``row_nbytes`` bytes from byte ``i`` (no copy; None
        #: for rows too large for a numpy item, read row by row then).
        self.rows_view: npt.NDArray[np.void] | None = None
        if 0 < self.row_nbytes < _MAX_ITEM and data.shape[0] >= self.row_nbytes:
            self.rows_view = np.ndarray(
                shape=(int(data.shape[0]) - self.row_nbytes + 1,),
                dtype=np.dtype((np.void, self.row_nbytes)),
                buffer=data,
                strides=(1,),
            )

    def read_into(self, out: npt.NDArray[Any], start: int, stop: int) -> None:
        """Copy rows ``[start, stop)`` into ``out``, a C-contiguous array (stop - start, *inner) in native order.

        The caller checks the bounds (``0 <= start <= stop <= rows``) and the
        size of ``out``; a run of rows within one block is one copy.
        """
        flat = out.reshape(-1).view(np.uint8)
        size = self.row_nbytes
        per = self.block_rows
        row = start
        while row < stop:
            block, first = divmod(row, per)
            last = min(stop, (block + 1) * per)
            begin = self.blocks[block] + first * size
            pos = (row - start) * size
            flat[pos : pos + (last - row) * size] = self.data[begin : begin + (last - row) * size]
            row = last
        if self.swap:
            out.byteswap(inplace=True)  # the stored bytes were copied as they are: make them native

    def take(self, rows: npt.NDArray[np.int64]) -> npt.NDArray[Any]:
        """Return rows ``rows`` (int64, each in ``[0, rows)``, any order, duplicates) as a new array (R, *inner).

        One copy, in request order: the byte offset of every row is computed
        at once, and numpy's fancy indexing copies the rows out of a view of
        the file in which every byte offset starts a row (an array of
        ``row_nbytes``-byte items with a stride of one byte). The result is
        in native byte order, C-contiguous and writable. Measured on 12 KiB
        rows, batches of 64: 1.3x faster than ``np.array(memmap[rows])``.
        """
        count = int(rows.shape[0])
        if self.rows_view is None or count == 0:
            out: npt.NDArray[Any] = np.empty((count, *self.inner), dtype=self.file_dtype.newbyteorder("="))
            for i, row in enumerate(rows.tolist()):
                self.read_into(out[i : i + 1], row, row + 1)
            return out
        block = rows // self.block_rows
        starts = self.offsets[block] + (rows - block * self.block_rows) * self.row_nbytes
        raw = self.rows_view[starts]
        out = raw.view(self.file_dtype).reshape(count, *self.inner)
        if self.swap:
            out = out.byteswap(inplace=True).view(out.dtype.newbyteorder("="))
        return out


def _file_map(fid: Any, filename: str) -> npt.NDArray[np.uint8] | None:
    """The read-only memory map of the file HDF5 opened as ``fid`` (shared per process), or None.

    The map is made from a descriptor of our own (the same file: device and
    inode are compared), never from HDF5's: a map holds its descriptor open, and
    HDF5's carries the file lock, which must go when the file is closed.
    """
    handle = fid.get_vfd_handle()
    if not isinstance(handle, int) or handle < 0:
        return None
    st = os.fstat(handle)
    if st.st_size <= 0:
        return None
    key = (os.getpid(), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
    with _MAPS_LOCK:
        data = _MAPS.get(key)
        if data is None:
            own = os.open(filename, os.O_RDONLY)
            try:
                mine = os.fstat(own)
                if (mine.st_dev, mine.st_ino, mine.st_size) != (st.st_dev, st.st_ino, st.st_size):
                    return None
                region = mmap.mmap(own, 0, access=mmap.ACCESS_READ)
            finally:
                os.close(own)
            data = np.frombuffer(region, dtype=np.uint8)
            _MAPS[key] = data
    return data


def _plain_number(dsid: Any, file_dtype: np.dtype[Any]) -> bool:
    """Whether the HDF5 type is exactly the plain integer or float that ``file_dtype`` names."""
    if file_dtype.kind not in "iuf":
        return False
    htype = dsid.get_type()
    if htype.get_class() not in (h5py.h5t.INTEGER, h5py.h5t.FLOAT):
        return False
    return bool(htype == h5py.h5t.py_create(file_dtype))


def direct_rows(node: h5py.Dataset, dtype: np.dtype[Any]) -> DirectRows | None:
    """Return a :class:`DirectRows` for ``node`` when its rows can be read from the file's bytes, else None (§7.3).

    Parameters
    ----------
    node
        The h5py dataset, of shape (N, *inner), in a file opened read-only.
    dtype
        The dtype rows are wanted in: the stored numeric dtype in native byte order.

    Returns
    -------
    DirectRows or None
        None whenever the dataset is not plain unfiltered data wholly stored
        in its file (see the module docstring); the caller then reads through h5py.
    """
    try:
        return _direct_rows(node, dtype)
    except (OSError, RuntimeError, ValueError, TypeError, KeyError, ImportError, OverflowError):
        return None


def _direct_rows(node: h5py.Dataset, dtype: np.dtype[Any]) -> DirectRows | None:
    shape = node.shape
    if shape is None or len(shape) < 1 or int(shape[0]) <= 0:
        return None
    file_dtype: np.dtype[Any] = node.dtype
    if file_dtype.newbyteorder("=") != dtype or dtype.newbyteorder("=") != dtype:
        return None
    h5file = node.file
    if h5file.mode != "r" or h5file.driver != "sec2" or h5file.userblock_size != 0:
        return None
    dsid = node.id
    plist = dsid.get_create_plist()
    if plist.get_nfilters() > 0 or plist.get_external_count() > 0:
        return None
    if not _plain_number(dsid, file_dtype):
        return None
    rows = int(shape[0])
    inner = tuple(int(d) for d in shape[1:])
    row_nbytes = int(file_dtype.itemsize * math.prod(inner))
    if row_nbytes <= 0:
        return None
    layout = plist.get_layout()
    if layout == h5py.h5d.CONTIGUOUS:
        offset = dsid.get_offset()
        if offset is None:
            return None
        blocks, block_rows, block_nbytes = [int(offset)], rows, rows * row_nbytes
    elif layout == h5py.h5d.CHUNKED:
        chunks = node.chunks
        if chunks is None or tuple(int(c) for c in chunks[1:]) != inner:
            return None
        block_rows = int(chunks[0])
        block_nbytes = block_rows * row_nbytes
        count = -(-rows // block_rows)
        if int(dsid.get_num_chunks()) != count:
            return None
        infos: list[Any] = []
        dsid.chunk_iter(infos.append)  # one walk of the chunk index (get_chunk_info(i) walks it per call)
        if len(infos) != count:
            return None
        found: list[int | None] = [None] * count
        for info in infos:
            first = int(info.chunk_offset[0])
            if (
                info.byte_offset is None
                or info.filter_mask != 0
                or int(info.size) != block_nbytes
                or first % block_rows
                or any(int(c) for c in info.chunk_offset[1:])
            ):
                return None
            index = first // block_rows
            if not 0 <= index < count or found[index] is not None:
                return None
            found[index] = int(info.byte_offset)
        if any(b is None for b in found):
            return None
        blocks = [int(b) for b in found if b is not None]
    else:
        return None
    data = _file_map(h5file.id, h5file.filename)
    if data is None:
        return None
    size = int(data.shape[0])
    if any(b < 0 or b + block_nbytes > size for b in blocks):
        return None
    return DirectRows(data, blocks, block_rows, rows, inner, file_dtype)
