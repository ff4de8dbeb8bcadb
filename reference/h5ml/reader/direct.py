"""Direct reads of unfiltered numeric datasets from a memory map of their file (§7.3, §10.3).

An unfiltered dataset stores its rows as plain bytes in the file: contiguous
data in one block (``H5Dget_offset``), chunked data in one block per chunk
(the chunk index, walked once with ``H5Dchunk_iter``). When every row lies in
such a block that the file really holds, :class:`DirectRows` copies rows out
of a read-only memory map of the file (:class:`~h5ml.reader.file_map.FileMap`), with no call into
HDF5: about 20x faster than any h5py read of random rows of a few KiB.

:func:`direct_rows` returns None, so that the caller keeps reading through
h5py, whenever anything is unusual: filters, an HDF5 type that is not a plain
integer or float, a storage other than contiguous or chunked (compact, virtual,
external files), chunks that do not span whole rows, a chunk never written
(HDF5 returns the fill value for it), a block outside the file, or a chunked
dataset on an HDF5 build without ``H5Dchunk_iter`` (HDF5 older than 1.12.3 or
1.10.10: :data:`CHUNK_ITER` is false; contiguous data is still mapped).
:func:`~h5ml.reader.file_map.open_file_map` returns None for a file opened for writing, with a user
block, or through another file driver than ``sec2``.

Safety (§10.3): a memory map of a file that shrinks under it turns a read of
the lost pages into SIGBUS, which kills the process. Before each read, the
file's size is taken again (``fstat`` of the map's own descriptor) and a read
of rows the file no longer holds raises :class:`~h5ml.errors.InvalidFileError`
naming the file, the dataset and the rows. (A file truncated during the copy
itself, after that check, can still crash the process: never truncate or
rewrite a file that is being read.) The maps belong to one
:class:`h5ml.reader.dataset.Dataset` in one process and are unmapped by its
``close()`` (:meth:`~h5ml.reader.file_map.FileMap.close`).

Zero-copy reads (``h5ml.open(..., zero_copy=True)``, :attr:`~h5ml.reader.file_map.FileMap.zero_copy`):
:meth:`DirectRows.view` hands out read-only views of the map itself, as
Hugging Face datasets does with its memory-mapped Arrow files, for runs of
rows whose bytes are native-order, aligned and contiguous in the file (one
block, or adjacent blocks). The file's size is checked when the view is made,
never again: a file truncated while a view is alive turns a later access to
the view into SIGBUS (the process dies), and a file rewritten in place changes
the view's values. A view keeps the map alive: closing the dataset does not
unmap the pages a view still uses (they are unmapped when the last view is
freed). h5ml's own writer never rewrites a file in place (it writes a
temporary file and renames it), so this only matters for other programs.
"""

from __future__ import annotations

import math
from typing import Any, Final

import h5py
import numpy as np
import numpy.typing as npt

from h5ml.errors import InvalidFileError
from h5ml.model.failures import validate_advice
from h5ml.reader.file_map import FileMap
from h5ml.reader.read_stats import ReadEvent, ReadStats

__all__ = ["CHUNK_ITER", "DirectRows", "chunk_index", "direct_rows", "plain_number"]

#: Whether this HDF5 build lists a chunk index in one call (``H5Dchunk_iter``: HDF5 >= 1.12.3, or 1.10.10 and
#: later 1.10 releases; h5py >= 3.8 exposes it). Without it, chunked datasets are read through h5py (one
#: ``H5Dget_chunk_info`` per chunk walks the index from its start: quadratic in the number of chunks).
CHUNK_ITER: Final = hasattr(h5py.h5d.DatasetID, "chunk_iter") and hasattr(h5py.h5d.DatasetID, "get_num_chunks")
#: The largest numpy item (bytes): larger rows are copied one by one.
_MAX_ITEM: Final = 2**31 - 1


class DirectRows:
    """Rows of one unfiltered dataset, read from a memory map of its file (§7.3).

    Parameters
    ----------
    file_map
        The map of the whole file.
    hdf5_path
        The dataset's HDF5 path, for messages and :class:`ReadStats`.
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
    stats
        Where copies are counted (:attr:`h5ml.reader.dataset.Dataset.read_stats`); None counts nowhere.
    """

    __slots__ = (
        "__weakref__",
        "_runs",
        "block_rows",
        "blocks",
        "data",
        "end",
        "file_dtype",
        "file_map",
        "hdf5_path",
        "inner",
        "offsets",
        "row_nbytes",
        "rows",
        "rows_view",
        "stats",
        "swap",
        "table",
    )

    def __init__(
        self,
        file_map: FileMap,
        hdf5_path: str,
        blocks: list[int],
        block_rows: int,
        rows: int,
        inner: tuple[int, ...],
        file_dtype: np.dtype[Any],
        stats: ReadStats | None = None,
    ) -> None:
        data = file_map.data
        if data is None:
            raise ValueError(f"{file_map.filename}: the memory map of this file was closed")
        self.file_map = file_map
        self.hdf5_path = hdf5_path
        self.data: npt.NDArray[np.uint8] | None = data
        self.blocks = blocks
        self.offsets = np.asarray(blocks, dtype=np.int64)
        self.block_rows = block_rows
        self.rows = rows
        self.inner = inner
        self.file_dtype = file_dtype
        self.row_nbytes = int(file_dtype.itemsize * math.prod(inner))
        #: One past the last file byte of the dataset's rows: the file must be at least this long to be read.
        self.end = max(blocks, default=0) + block_rows * self.row_nbytes
        self.swap = not file_dtype.isnative
        self.stats = stats
        self._runs: npt.NDArray[np.int64] | None = None  # built by view_spans, on its first call
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
        #: The rows as one array (rows, *inner) of ``file_dtype``, a view of the file, when its blocks follow one
        #: another (contiguous data, chunks stored in row order): a batch is one ``take`` (no offsets computed).
        self.table: npt.NDArray[Any] | None = None
        nbytes, first = rows * self.row_nbytes, blocks[0] if blocks else -1
        steps = first + block_rows * self.row_nbytes * np.arange(len(blocks), dtype=np.int64)
        if 0 <= first and 0 < nbytes and first + nbytes <= data.shape[0] and np.array_equal(self.offsets, steps):
            self.table = data[first : first + nbytes].view(file_dtype).reshape(rows, *inner)
        file_map.attach(self)

    def release(self) -> None:
        """Drop the views of the map (its dataset was closed); later reads raise ValueError."""
        self.data = None
        self.rows_view = self.table = None

    def _check_file(self, start: int, stop: int, rows: npt.NDArray[np.int64] | None = None) -> npt.NDArray[np.uint8]:
        """The map, after checking that the file still holds every row of the dataset (§10.3).

        ``[start, stop)`` (or ``rows``, for a gather) names the rows asked, in the message.

        Raises
        ------
        InvalidFileError
            If the file is now shorter than the end of the dataset's rows (it
            was truncated while open): a copy would crash the process (SIGBUS).
        ValueError
            If the map was closed.
        """
        data = self.data
        if data is None:
            raise ValueError(f"{self.file_map.filename}: {self.hdf5_path}: the dataset was closed")
        size = self.file_map.size()
        if size < self.end:
            name = self.file_map.filename
            if rows is not None:
                what = f"{rows.shape[0]} rows from row {int(rows.min())} to row {int(rows.max())}"
            else:
                what = f"row {start}" if stop - start == 1 else f"rows [{start}, {stop})"
            raise InvalidFileError(
                f"{name}: {self.hdf5_path}: cannot read {what}: the file is now {size} bytes, but this dataset's "
                f"rows are stored up to byte {self.end}; the file was truncated or overwritten while it was open "
                f"(a read of the lost bytes would crash the process, so none was made); the file is damaged: "
                f"copy or re-create it, and {validate_advice(name)}",
                path=name,
                hdf5_path=self.hdf5_path,
            )
        return data

    def read_into(self, out: npt.NDArray[Any], start: int, stop: int) -> None:
        """Copy rows ``[start, stop)`` into ``out``, a C-contiguous array (stop - start, *inner) in native order.

        The caller checks the bounds (``0 <= start <= stop <= rows``) and the
        size of ``out``; a run of rows within one block is one copy.

        Raises
        ------
        InvalidFileError
            If the file no longer holds the dataset's rows (truncated while open).
        """
        self._copy(self._check_file(start, stop), out, start, stop)

    def copy_spans(self, spans: list[tuple[int, int]]) -> list[npt.NDArray[Any]]:
        """Rows ``[a, b)`` of each span, copied into one new buffer for all: a view of it (b - a, *inner) per span.

        A batch of ragged samples read from the map (:mod:`h5ml.reader.offsets`): the same copies as one
        :meth:`read_into` per span, with one file-size check and one allocation for the batch. Measured on
        3,000 clips of 16,000-64,000 float32 in batches of 64: one buffer per span made the allocator return
        and fault in each clip's pages again in about half the runs (112,000 page faults and 0.4 s an epoch
        on this machine, against 200 faults and 0.07 s); one buffer per batch never did. The caller gives
        spans sorted, within ``[0, rows)``, and has checked the storage (§3.5.1). Native byte order, read-only.

        Raises
        ------
        InvalidFileError
            If the file no longer holds the dataset's rows (truncated while open).
        """
        if not spans:
            return []
        data = self._check_file(spans[0][0], spans[-1][1])
        dtype, inner = self.file_dtype.newbyteorder("="), self.inner
        whole = np.empty((sum(b - a for a, b in spans), *inner), dtype=dtype)
        out = []
        at = 0
        for a, b in spans:
            rows = whole[at : at + b - a]  # rows of a C-contiguous buffer: contiguous, as _copy needs
            self._copy(data, rows, a, b)
            out.append(rows)
            at += b - a
        whole.flags.writeable = False  # the spans share it: an edit of one could reach another's rows
        for rows in out:
            rows.flags.writeable = False
        return out

    def view_spans(self, spans: list[tuple[int, int]]) -> list[npt.NDArray[Any] | None] | None:
        """Rows ``[a, b)`` of each span as a read-only view of the map, with one file-size check for the batch.

        :meth:`view` for many spans at once (a batch of ragged samples, :mod:`h5ml.reader.offsets`), under its
        conditions (``zero_copy``, native byte order, the span's first row aligned, its blocks stored one after
        the other), checked for all spans with numpy instead of once per span (about 5 us a span). An item is
        None for a span that fails them (the caller reads that span otherwise); the whole result is None when
        no span may be a view. The caller gives spans sorted, within ``[0, rows)``, and has checked the
        storage (§3.5.1).

        Raises
        ------
        InvalidFileError
            If the file no longer holds the dataset's rows (truncated while open).
        """
        if not spans or not self.file_map.zero_copy or self.swap or self.row_nbytes <= 0:
            return None
        size, per = self.row_nbytes, self.block_rows
        bounds = np.asarray(spans, dtype=np.int64)
        first, last = bounds[:, 0] // per, (bounds[:, 1] - 1) // per
        runs = self._runs
        if runs is None:  # runs[k]: how many block boundaries before block k are not back to back in the file
            gaps = np.diff(self.offsets) != per * size
            runs = self._runs = np.concatenate([[0], np.cumsum(gaps, dtype=np.int64)])
        begins = self.offsets[first] + (bounds[:, 0] - first * per) * size
        ok = (runs[last] == runs[first]) & (begins % self.file_dtype.alignment == 0)
        if not bool(ok.any()):
            return None
        data = self._check_file(spans[0][0], spans[-1][1])
        stats = self.stats
        if stats is not None:
            stats.direct_views += int(ok.sum())
            if stats.events is not None:
                viewed = [span for span, v in zip(spans, ok.tolist(), strict=True) if v]
                stats.events.extend(ReadEvent(self.hdf5_path, "view", a, b, b - a) for a, b in viewed)
        dtype, inner = self.file_dtype, self.inner
        ends = begins + (bounds[:, 1] - bounds[:, 0]) * size
        return [
            data[a:b].view(dtype).reshape(-1, *inner) if v else None
            for a, b, v in zip(begins.tolist(), ends.tolist(), ok.tolist(), strict=True)
        ]

    def _copy(self, data: npt.NDArray[np.uint8], out: npt.NDArray[Any], start: int, stop: int) -> None:
        """Copy rows ``[start, stop)`` of the checked map ``data`` into ``out``: one copy per block, made native."""
        flat = out.reshape(-1).view(np.uint8)
        size = self.row_nbytes
        per = self.block_rows
        stats = self.stats
        row = start
        while row < stop:
            block, first = divmod(row, per)
            last = min(stop, (block + 1) * per)
            begin = self.blocks[block] + first * size
            pos = (row - start) * size
            flat[pos : pos + (last - row) * size] = data[begin : begin + (last - row) * size]
            if stats is not None:
                stats.direct_copies += 1
                if stats.events is not None:
                    stats.events.append(ReadEvent(self.hdf5_path, "map", row, last, last - row))
            row = last
        if self.swap:
            out.byteswap(inplace=True)  # the stored bytes were copied as they are: make them native

    def sample(self, row: int) -> Any:
        """Return row ``row`` (``0 <= row < rows``, checked by the caller) without its first axis, as a copy.

        The per-sample path (``feature[i]``, a ``DataLoader``'s default): one
        file-size check (:meth:`~h5ml.reader.file_map.FileMap.size`, about 0.7 us), one copy of the
        row's bytes, no call into HDF5. An array of shape :attr:`inner` in
        native byte order, writable; a numpy scalar for a 1-D dataset, as
        h5py's ``dataset[i]`` returns.

        Raises
        ------
        InvalidFileError
            If the file no longer holds the dataset's rows (truncated while open).
        """
        data = self._check_file(row, row + 1)
        size = self.row_nbytes
        block, first = divmod(row, self.block_rows)
        begin = self.blocks[block] + first * size
        stats = self.stats
        if stats is not None:
            stats.direct_copies += 1
            if stats.events is not None:
                stats.events.append(ReadEvent(self.hdf5_path, "map", row, row + 1, 1))
        raw = data[begin : begin + size].view(self.file_dtype)
        if not self.inner:
            return raw[0].astype(self.file_dtype.newbyteorder("=")) if self.swap else raw[0]
        out = raw.astype(self.file_dtype.newbyteorder("="))  # a copy, made native
        return out.reshape(self.inner)

    def take(self, rows: npt.NDArray[np.int64]) -> npt.NDArray[Any]:
        """Return rows ``rows`` (int64, each in ``[0, rows)``, any order, duplicates) as a new array (R, *inner).

        One copy, in request order: ``numpy.take`` of :attr:`table`, or else
        fancy indexing of a view of the file in which every byte offset starts
        a row (``row_nbytes``-byte items, a stride of one byte) at the rows'
        offsets. Native byte order, C-contiguous, writable. Measured, 64 random
        rows of 128 bytes: 0.7 us by ``take``, 6 us by offsets, as ``memmap[rows]``.

        Raises
        ------
        InvalidFileError
            If the file no longer holds the dataset's rows (truncated while open).
        """
        count = int(rows.shape[0])
        table = self.table
        if table is not None and count:
            self._check_file(0, 0, rows)
            out = table.take(rows, axis=0)  # numpy's take: one copy of each row (checks bounds too)
        elif self.rows_view is None or count == 0:
            out = np.empty((count, *self.inner), dtype=self.file_dtype.newbyteorder("="))
            for i, row in enumerate(rows.tolist()):
                self.read_into(out[i : i + 1], row, row + 1)
            return out
        else:
            self._check_file(0, 0, rows)
            block = rows // self.block_rows
            starts = self.offsets[block] + (rows - block * self.block_rows) * self.row_nbytes
            out = self.rows_view[starts].view(self.file_dtype).reshape(count, *self.inner)
        stats = self.stats
        if stats is not None:
            stats.direct_copies += 1
            if stats.events is not None:
                stats.events.append(ReadEvent(self.hdf5_path, "map", int(rows.min()), int(rows.max()) + 1, count, True))
        if self.swap:
            out = out.byteswap(inplace=True).view(out.dtype.newbyteorder("="))
        return out

    def view(self, start: int, stop: int) -> npt.NDArray[Any] | None:
        """Rows ``[start, stop)`` as a read-only view of the map (stop - start, *inner), or None: copy them instead.

        Only with :attr:`~h5ml.reader.file_map.FileMap.zero_copy` (see the module docstring for
        what a view trades), and only when the stored bytes can be used as
        they are: native byte order, the first row's file offset a multiple
        of the dtype's alignment, and the rows contiguous in the file (one
        block, or blocks stored one after the other). The caller checks the
        bounds (``0 <= start < stop <= rows``). The view shares memory with
        :attr:`~h5ml.reader.file_map.FileMap.data` and keeps the map alive after the dataset is
        closed.

        Raises
        ------
        InvalidFileError
            If the file no longer holds the dataset's rows (truncated while open), checked once, now.
        """
        views = self.view_spans([(start, stop)])  # the conditions live there once, for one span or a batch
        return None if views is None else views[0]


def plain_number(dsid: Any, file_dtype: np.dtype[Any]) -> bool:
    """Whether the HDF5 type is exactly the plain integer or float that ``file_dtype`` names."""
    if file_dtype.kind not in "iuf":
        return False
    htype = dsid.get_type()
    if htype.get_class() not in (h5py.h5t.INTEGER, h5py.h5t.FLOAT):
        return False
    return bool(htype == h5py.h5t.py_create(file_dtype))


def direct_rows(
    node: h5py.Dataset, dtype: np.dtype[Any], file_map: FileMap | None, stats: ReadStats | None = None
) -> DirectRows | None:
    """Return a :class:`DirectRows` for ``node`` when its rows can be read from the file's bytes, else None (§7.3).

    Parameters
    ----------
    node
        The h5py dataset, of shape (N, *inner), in a file opened read-only.
    dtype
        The dtype rows are wanted in: the stored numeric dtype in native byte order.
    file_map
        The map of ``node``'s file (:func:`~h5ml.reader.file_map.open_file_map`); None reads nothing directly.
    stats
        Where the copies are counted (:class:`h5ml.reader.read_stats.ReadStats`), or None.

    Returns
    -------
    DirectRows or None
        None whenever the dataset is not plain unfiltered data wholly stored
        in its file (see the module docstring); the caller then reads through h5py.
    """
    if file_map is None or file_map.closed:
        return None
    try:
        found = _blocks(node, dtype)
        if found is None:
            return None
        blocks, block_rows, block_nbytes = found
        data = file_map.data
        if data is None:
            return None
        size = int(data.shape[0])
        if any(b < 0 or b + block_nbytes > size for b in blocks):
            return None
        shape = node.shape
        inner = tuple(int(d) for d in shape[1:])
        return DirectRows(file_map, node.name, blocks, block_rows, int(shape[0]), inner, node.dtype, stats)
    except (OSError, RuntimeError, ValueError, TypeError, KeyError, ImportError, OverflowError):
        return None


def _blocks(node: h5py.Dataset, dtype: np.dtype[Any]) -> tuple[list[int], int, int] | None:
    """``(file offset of each block, rows per block, bytes per block)`` of ``node``'s rows, or None (see above)."""
    shape = node.shape
    if shape is None or len(shape) < 1 or int(shape[0]) <= 0:
        return None
    file_dtype: np.dtype[Any] = node.dtype
    if file_dtype.newbyteorder("=") != dtype or dtype.newbyteorder("=") != dtype:
        return None
    dsid = node.id
    plist = dsid.get_create_plist()
    if plist.get_nfilters() > 0 or plist.get_external_count() > 0:
        return None
    if not plain_number(dsid, file_dtype):
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
        return [int(offset)], rows, rows * row_nbytes
    if layout != h5py.h5d.CHUNKED or not CHUNK_ITER:
        return None
    chunks = node.chunks
    if chunks is None or tuple(int(c) for c in chunks[1:]) != inner:
        return None
    block_rows = int(chunks[0])
    block_nbytes = block_rows * row_nbytes
    index = chunk_index(dsid, rows, block_rows)
    if index is None or any(mask != 0 or size != block_nbytes for _, size, mask in index):
        return None
    return [offset for offset, _, _ in index], block_rows, block_nbytes


def chunk_index(dsid: h5py.h5d.DatasetID, rows: int, chunk_rows: int) -> list[tuple[int, int, int]] | None:
    """``(file offset, stored bytes, filter mask)`` of each chunk of a dataset chunked by whole rows, in row order (§7.3).

    One walk of the chunk index (``H5Dchunk_iter``; the caller has checked :data:`CHUNK_ITER` and that the chunk
    shape is ``(chunk_rows, *inner)``). Entry ``k`` holds rows ``[k * chunk_rows, (k + 1) * chunk_rows)``. None
    when a chunk was never written, is listed twice or off the row grid, or has no file offset: read through h5py.
    """
    count = -(-rows // chunk_rows)
    if int(dsid.get_num_chunks()) != count:
        return None
    infos: list[Any] = []
    dsid.chunk_iter(infos.append)
    found: list[tuple[int, int, int] | None] = [None] * count
    tail = (0,) * (len(infos[0].chunk_offset) - 1) if infos else ()
    for info in infos:  # h5py gives Python ints: compared as they are (about 1 us a chunk)
        offset = info.chunk_offset
        first = offset[0]
        if info.byte_offset is None or first % chunk_rows or offset[1:] != tail:
            return None
        index = first // chunk_rows
        if not 0 <= index < count or found[index] is not None:
            return None
        found[index] = (info.byte_offset, info.size, info.filter_mask)
    if None in found:
        return None
    return found  # type: ignore[return-value]  # no None left
