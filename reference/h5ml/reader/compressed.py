"""Compressed rows decoded by h5ml, off Python's lock and in parallel, from the memory map of the file (§3.5, §7.3, §10.3).

h5py decodes a compressed chunk under its own lock, one chunk at a time (on
shuffled gzip-4 photo tiles: 334 samples/s). For a chunked dataset of plain
integers or floats whose chunks span whole rows and whose filter pipeline
:mod:`h5ml.reader.codecs` decodes (deflate, shuffle then deflate; zstd where
its codec is installed), :class:`CompressedRows` instead:

- takes each chunk's stored bytes from the file's memory map
  (:class:`~h5ml.reader.file_map.FileMap`) at the address the chunk index gives
  (walked once, ``H5Dchunk_iter``);
- decodes every chunk a request needs once, missing ones in the process's
  decode pool (:mod:`h5ml.reader.decode_pool`), and keeps it in the file's
  cache of decoded chunks (:class:`~h5ml.reader.decoded_cache.DecodedChunks`,
  ``chunk_cache_bytes`` of :func:`h5ml.open`);
- copies the requested rows out of the decoded chunks, in one copy per run
  of rows within a chunk.

Partial edge chunks are stored full-size by HDF5 and decoded full-size; only
their rows inside the dataset are read. :func:`compressed_rows` returns None,
so that the caller reads through h5py as before, whenever anything is
unusual: another filter, fletcher32 included; an HDF5 type that is not a plain
integer or float; chunks that split rows; a chunk larger than
:data:`~h5ml.reader.codecs.MAX_CHUNK_BYTES`; a chunk never written (the
column refuses such a dataset before its first read, §3.5.1); a chunk outside
the file; a file that cannot be mapped (``direct=False``). The values are the
bytes HDF5 would return (the property test of ``tests/test_parallel_decode.py``
compares them with h5py's), in native byte order.

Safety (§10.3): as :mod:`h5ml.reader.direct`, the file's size is taken again
before each read and a read of chunks the file no longer holds raises
:class:`~h5ml.errors.InvalidFileError`; stored bytes that do not decode to
one chunk raise it too, naming the file, the dataset, the chunk and its rows.
"""

from __future__ import annotations

import math
from typing import Any, Final, NamedTuple

import h5py
import numpy as np
import numpy.typing as npt

from h5ml.errors import InvalidFileError
from h5ml.model.failures import validate_advice
from h5ml.reader.codecs import MAX_CHUNK_BYTES, ChunkDecodeError, decodable, decode_chunk
from h5ml.reader.decode_pool import DECODE_THREADS, decode_pool
from h5ml.reader.decoded_cache import DecodedChunks
from h5ml.reader.direct import CHUNK_ITER, chunk_index, plain_number
from h5ml.reader.file_map import FileMap

__all__ = ["READ_AHEAD", "ChunkLayout", "CompressedRows", "chunk_layout", "compressed_rows"]

#: Chunks decoded ahead of a sequential reader (one that asks for the rows after its last read), in the pool.
READ_AHEAD: Final = 2 * DECODE_THREADS


class CompressedRows:
    """Rows of one compressed dataset, decoded by h5ml from the memory map of its file (§7.3).

    Build it with :func:`compressed_rows`. Thread-safe: each chunk is decoded
    at most once at a time (:class:`~h5ml.reader.decoded_cache.DecodedChunks`).

    Parameters
    ----------
    file_map
        The map of the whole file; its :attr:`~h5ml.reader.file_map.FileMap.decoded` caches the chunks.
    hdf5_path
        The dataset's HDF5 path (messages, cache keys).
    chunks
        ``(file offset, stored size, filter mask)`` of each chunk, in row order.
    filters
        The pipeline's filter ids, in the order HDF5 applies them on write.
    chunk_rows, rows, inner
        Rows per chunk, rows of the dataset, and its axes after the first.
    file_dtype
        The stored numeric dtype (either byte order).
    """

    __slots__ = (
        "_ahead",
        "_next",
        "cache",
        "chunk_rows",
        "end",
        "file_dtype",
        "file_map",
        "filters",
        "hdf5_path",
        "inner",
        "nbytes",
        "rows",
        "stored",
    )

    def __init__(
        self,
        file_map: FileMap,
        hdf5_path: str,
        chunks: list[tuple[int, int, int]],
        filters: tuple[int, ...],
        chunk_rows: int,
        rows: int,
        inner: tuple[int, ...],
        file_dtype: np.dtype[Any],
    ) -> None:
        self.file_map = file_map
        self.cache: DecodedChunks = file_map.decoded
        self.hdf5_path = hdf5_path
        self.stored = chunks
        self.filters = filters
        self.chunk_rows = chunk_rows
        self.rows = rows
        self.inner = inner
        self.file_dtype = file_dtype
        #: Bytes of one decoded chunk.
        self.nbytes = int(file_dtype.itemsize * chunk_rows * math.prod(inner))
        #: One past the last stored byte of any chunk: the file must be at least this long to be read.
        self.end = max((offset + size for offset, size, _ in chunks), default=0)
        self._next = 0  # the row after the last read (first: the dataset's start): a read from there is sequential
        self._ahead = -1  # the last chunk of the sequential read that last started a read-ahead

    def _damaged(self, what: str) -> InvalidFileError:
        name = self.file_map.filename
        return InvalidFileError(
            f"{name}: {self.hdf5_path}: {what}; the file is damaged: restore it from a good copy, "
            f"and {validate_advice(name)}",
            path=name,
            hdf5_path=self.hdf5_path,
        )

    def _check_file(self) -> npt.NDArray[np.uint8]:
        """The map, after checking that the file still holds every stored chunk (§10.3; see :mod:`h5ml.reader.direct`)."""
        data = self.file_map.data
        if data is None:
            raise ValueError(f"{self.file_map.filename}: {self.hdf5_path}: the dataset was closed")
        size = self.file_map.size()
        if size < self.end:
            raise self._damaged(
                f"the file is now {size} bytes, but this dataset's chunks are stored up to byte {self.end}: it was "
                "truncated or overwritten while open (a read of the lost bytes would crash the process, so none "
                "was made)"
            )
        return data

    def decode(self, index: int) -> npt.NDArray[Any]:
        """Decode chunk ``index`` into a new array (chunk_rows, *inner) in native byte order.

        Raises
        ------
        InvalidFileError
            If its stored bytes do not decode to one chunk, or the file was truncated while open.
        """
        self._check_file()
        offset, size, _ = self.stored[index]
        # Read, not a view of the map: decodes run in the pool at any time (read-ahead), and a view of
        # pages another program has cut off since the check above would crash the process (SIGBUS).
        stored = self.file_map.pread(offset, size)
        if len(stored) != size:
            raise self._damaged(
                f"the file now ends before byte {offset + size}, where chunk {index} is stored: it was truncated "
                "or overwritten while open"
            )
        return self.values(index, stored)

    def values(self, index: int, stored: Any) -> npt.NDArray[Any]:
        """Decode ``stored``, the stored bytes of chunk ``index``, into an array (chunk_rows, *inner), native order.

        Raises
        ------
        InvalidFileError
            If the bytes do not decode to one chunk.
        """
        mask = self.stored[index][2]
        try:
            raw = decode_chunk(stored, self.filters, mask, self.nbytes, self.file_dtype.itemsize)
        except ChunkDecodeError as exc:
            first = index * self.chunk_rows
            last = min(self.rows, first + self.chunk_rows)
            raise self._damaged(f"chunk {index} (rows [{first}, {last})) {exc}") from exc
        values = np.frombuffer(raw, self.file_dtype).reshape(self.chunk_rows, *self.inner)
        if not self.file_dtype.isnative:
            values = values.byteswap().view(self.file_dtype.newbyteorder("="))
        return values

    def _decode_key(self, key: Any) -> npt.NDArray[Any]:
        return self.decode(int(key[1]))

    def chunks(self, indices: list[int]) -> dict[int, npt.NDArray[Any]]:
        """The decoded chunks ``indices`` (read-only), each decoded at most once, missing ones in the pool."""
        self._check_file()
        path = self.hdf5_path
        found = self.cache.get([(path, k) for k in indices], self._decode_key, decode_pool())
        return {int(key[1]): chunk for key, chunk in found.items()}  # type: ignore[index]

    def prefetch_chunks(self, indices: list[int]) -> int:
        """Start decoding chunks ``indices`` in the pool (those not cached nor being decoded); return how many."""
        todo = [(self.hdf5_path, k) for k in indices if 0 <= k < len(self.stored)]
        return self.cache.prefetch(todo, self._decode_key, decode_pool()) if todo else 0

    def prefetch(self, rows: npt.NDArray[np.int64]) -> int:
        """Start decoding the chunks that hold ``rows`` (int64, each in ``[0, rows)``) in the pool; return how many.

        For a reader that knows its next request: the chunks are decoded
        while the caller works on the current batch, and the next read finds
        them in the cache (when its budget holds them; none is started when
        ``chunk_cache_bytes=0``). At most half the cache's budget is asked for
        at once, the chunks of the first rows first, so that a look-ahead never
        evicts the chunks the current batch still reads (they would be decoded twice).
        """
        if rows.size == 0:
            return 0
        owner = rows // self.chunk_rows
        keys, first = np.unique(owner, return_index=True)
        ordered = keys[np.argsort(first, kind="stable")]  # in the order the rows need them
        room = self.cache.budget // 2 // max(1, self.nbytes)
        return self.prefetch_chunks(ordered[:room].tolist())

    def read_into(self, out: npt.NDArray[Any], start: int, stop: int) -> None:
        """Copy rows ``[start, stop)`` into ``out``, a C-contiguous array (stop - start, *inner) in native order.

        The caller checks the bounds and the size of ``out``; one copy per
        chunk the rows touch. A read that starts where the last one stopped
        starts decoding the next :data:`READ_AHEAD` chunks in the pool.

        Raises
        ------
        InvalidFileError
            As :meth:`decode`.
        """
        per = self.chunk_rows
        decoded = self.chunks(list(range(start // per, (stop - 1) // per + 1)))
        row = start
        while row < stop:
            k = row // per
            upto = min(stop, (k + 1) * per)
            out[row - start : upto - start] = decoded[k][row - k * per : upto - k * per]
            row = upto
        self._read_ahead(start, stop)

    def sample(self, row: int) -> Any:
        """Return row ``row`` (``0 <= row < rows``, checked by the caller) without its first axis, as a copy.

        The per-sample path (``feature[i]``): the file-size check, one lookup
        of the row's chunk in the decoded cache (decoded now on a miss), one
        copy of the row. A sequential reader (``row`` right after the last row
        read) starts decoding ahead at the first row of each chunk, as
        :meth:`read_into` does. A numpy scalar for a 1-D dataset.

        Raises
        ------
        InvalidFileError
            As :meth:`decode`.
        """
        per = self.chunk_rows
        k = row // per
        self._check_file()
        chunk = self.cache.peek((self.hdf5_path, k))
        if chunk is None:
            chunk = self.chunks([k])[k]
        self._sample_ahead(row, k)
        value = chunk[row - k * per]
        return value.copy() if isinstance(value, np.ndarray) else value

    def _sample_ahead(self, row: int, k: int) -> None:
        """After :meth:`sample` of ``row`` (in chunk ``k``): at the first row of a chunk, read sequentially, decode ahead."""
        if row == self._next and row % self.chunk_rows == 0:
            self.prefetch_chunks(list(range(k + 1, k + 1 + READ_AHEAD)))
        self._next = row + 1

    def _read_ahead(self, start: int, stop: int) -> None:
        """After a read of rows ``[start, stop)``: when it began where the last one ended, decode ahead."""
        if start == self._next:
            last = (stop - 1) // self.chunk_rows
            if last != self._ahead:  # reads within the same last chunk: the chunks after it were asked for already
                self._ahead = last
                self.prefetch_chunks(list(range(last + 1, last + 1 + READ_AHEAD)))
        else:
            self._ahead = -1
        self._next = stop

    def gather(self, rows: npt.NDArray[np.int64], out: npt.NDArray[Any]) -> None:
        """Copy ``rows`` (sorted, unique, int64) into ``out`` (len(rows), *inner): each chunk decoded once.

        Rows that start where the last read ended (a sequential reader) start decoding the next
        :data:`READ_AHEAD` chunks in the pool, as :meth:`read_into` does.

        Raises
        ------
        InvalidFileError
            As :meth:`decode`.
        """
        if rows.size == 0:
            return
        per = self.chunk_rows
        owner = rows // per
        heads = np.flatnonzero(np.diff(owner)) + 1
        bounds = [0, *heads.tolist(), int(rows.shape[0])]
        keys = owner[bounds[:-1]].tolist()
        decoded = self.chunks(keys)
        local = rows - owner * per
        first, last = local[bounds[:-1]].tolist(), local[np.asarray(bounds[1:]) - 1].tolist()
        for k, lo, hi, a, b in zip(keys, bounds[:-1], bounds[1:], first, last, strict=True):
            if b - a == hi - lo - 1:  # a run (one row, often, in a shuffled batch): one slice copy
                out[lo:hi] = decoded[k][a : b + 1]
            else:
                np.take(decoded[k], local[lo:hi], axis=0, out=out[lo:hi])
        self._read_ahead(int(rows[0]), int(rows[-1]) + 1)


def compressed_rows(node: h5py.Dataset, dtype: np.dtype[Any], file_map: FileMap | None) -> CompressedRows | None:
    """Return a :class:`CompressedRows` for ``node`` when h5ml can decode its chunks itself, else None (§7.3).

    Parameters
    ----------
    node
        The h5py dataset, of shape (N, *inner), in a file opened read-only.
    dtype
        The dtype rows are wanted in: the stored numeric dtype in native byte order.
    file_map
        The map of ``node``'s file; None decodes nothing here.

    Returns
    -------
    CompressedRows or None
        None whenever the dataset is not one this module decodes (see the
        module docstring); the caller then reads through h5py.
    """
    if file_map is None or file_map.closed or file_map.data is None or not CHUNK_ITER:
        return None
    try:
        return _build(node, dtype, file_map)
    except (OSError, RuntimeError, ValueError, TypeError, KeyError, OverflowError):
        return None


def _build(node: h5py.Dataset, dtype: np.dtype[Any], file_map: FileMap) -> CompressedRows | None:
    layout = chunk_layout(node, dtype)
    if layout is None or not layout.filters:
        return None
    if not layout.within(file_map.size()):
        return None
    return CompressedRows(file_map, str(node.name), *layout)


class ChunkLayout(NamedTuple):
    """The stored chunks of a dataset h5ml can read chunk by chunk itself (the arguments of :class:`CompressedRows`)."""

    chunks: list[tuple[int, int, int]]
    filters: tuple[int, ...]
    chunk_rows: int
    rows: int
    inner: tuple[int, ...]
    file_dtype: np.dtype[Any]

    def within(self, size: int) -> bool:
        """Whether every chunk lies inside a file of ``size`` bytes (and none is empty)."""
        return all(offset >= 0 and n > 0 and offset + n <= size for offset, n, _ in self.chunks)


def chunk_layout(node: h5py.Dataset, dtype: np.dtype[Any]) -> ChunkLayout | None:
    """The chunk layout of ``node`` when h5ml can decode its chunks itself, else None (see the module docstring).

    Plain integers or floats chunked by whole rows (at most :data:`~h5ml.reader.codecs.MAX_CHUNK_BYTES` a
    chunk), every chunk written, and a filter pipeline that :mod:`h5ml.reader.codecs` decodes or none at all
    (:func:`compressed_rows` wants filters; the remote chunk path, :mod:`h5ml.reader.remote_rows`, takes both).
    """
    shape, chunks = node.shape, node.chunks
    if shape is None or len(shape) < 1 or int(shape[0]) <= 0 or chunks is None:
        return None
    file_dtype: np.dtype[Any] = node.dtype
    if file_dtype.newbyteorder("=") != dtype or dtype.newbyteorder("=") != dtype:
        return None
    dsid = node.id
    plist = dsid.get_create_plist()
    if plist.get_layout() != h5py.h5d.CHUNKED or plist.get_external_count() > 0:
        return None
    filters = tuple(int(plist.get_filter(i)[0]) for i in range(plist.get_nfilters()))
    if (filters and not decodable(filters)) or not plain_number(dsid, file_dtype):
        return None
    rows = int(shape[0])
    inner = tuple(int(d) for d in shape[1:])
    if tuple(int(c) for c in chunks[1:]) != inner:
        return None
    chunk_rows = int(chunks[0])
    if file_dtype.itemsize * chunk_rows * math.prod(inner) > MAX_CHUNK_BYTES or math.prod(inner) == 0:
        return None
    stored_chunks = chunk_index(dsid, rows, chunk_rows)
    if stored_chunks is None:
        return None
    return ChunkLayout(stored_chunks, filters, chunk_rows, rows, inner, file_dtype)
