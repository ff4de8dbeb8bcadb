"""The rows of one HDF5 dataset in file order, chunk by chunk, decoded in a thread pool (§3.5, §7, §8, §10.4).

:class:`RowStream` yields a dataset's rows as numpy arrays, one chunk (or,
for a dataset that is not chunked, about :data:`BATCH_BYTES`) at a time, so
that a caller that hashes them (``h5ml verify``, §8.2) holds a bounded number
of chunks in memory however large the dataset is. The chunks are read and
decoded ahead, in the order of the file, by the tasks of a thread pool shared
by every stream, at most ``window`` chunks ahead of the consumer:

- a chunk of plain integers or floats whose rows it spans whole, stored with
  no filter, HDF5's deflate, or shuffle then deflate (§3.5; what the writer
  stores), is read as its stored bytes (``H5Dread_chunk``, under h5py's
  lock: a copy) and inflated and un-shuffled in the task itself
  (:func:`h5ml.reader.codecs.decode_chunk`): the decoders and
  numpy release Python's lock, so two tasks decode two chunks at once;
- every other chunk (strings, other filters, chunks that split rows) is read
  through h5py, which decodes it under its own lock (one at a time);
- a dataset that is not chunked is read in batches through h5py.

Each chunk of a chunked dataset whose chunks span whole rows (every dataset
h5ml writes, §7.1) is handed to ``check_chunk`` first, with its stored bytes
(:class:`StoredChunk`): the step where a per-chunk checksum is checked before
the chunk is decoded; chunks that split rows are read through h5py by bands
of rows, without that step. A chunk that was never written (HDF5
would return fill values), stored bytes that do not inflate to exactly one
chunk, or a failure of the library raise
:class:`~h5ml.errors.InvalidFileError` naming the file, the dataset and the
chunk; nothing is guessed.
"""

from __future__ import annotations

import math
import threading
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Executor, Future
from dataclasses import dataclass
from typing import Any, Final

import h5py
import numpy as np

from h5ml.errors import H5MLError, InvalidFileError
from h5ml.model.failures import LIBRARY_ERRORS, damaged_file, is_library_failure, validate_advice
from h5ml.reader.codecs import MAX_CHUNK_BYTES, ChunkDecodeError, decodable, decode_chunk
from h5ml.reader.direct import CHUNK_ITER

__all__ = ["BATCH_BYTES", "MAX_CHUNK_BYTES", "ChunkCheck", "RowStream", "StoredChunk", "chunk_slots"]

#: Bytes of a dataset that is not chunked read at once.
BATCH_BYTES: Final = 8 << 20


@dataclass(frozen=True)
class StoredChunk:
    """One chunk of a chunked dataset as the file stores it (after its filters), for a per-chunk check.

    Attributes
    ----------
    file
        The file path.
    dataset
        The dataset's HDF5 path (``/train/image/values``).
    index
        The chunk's number along the first axis (0 = rows ``0 .. chunk rows``).
    start, stop
        The dataset rows the chunk holds (``stop`` is clipped to the dataset).
    data
        The stored bytes: what ``H5Dread_chunk`` returns.
    filter_mask
        HDF5's filter mask of the chunk (bit ``i`` set: filter ``i`` was not applied).
    """

    file: str
    dataset: str
    index: int
    start: int
    stop: int
    data: bytes
    filter_mask: int


#: A per-chunk check (a checksum): raises an :class:`h5ml.H5MLError` naming the chunk when it fails.
ChunkCheck = Callable[[StoredChunk], None]


def chunk_slots(jobs: int) -> threading.BoundedSemaphore:
    """The chunks that every stream of one run may hold decoded or decoding at once: ``2 * jobs + 2``."""
    return threading.BoundedSemaphore(2 * jobs + 2)


@dataclass(frozen=True)
class _Plan:
    """How the chunks of one chunked dataset are read: their byte addresses, and whether the task decodes them."""

    chunk_rows: int
    offsets: tuple[tuple[int, ...], ...]  # each chunk's first element, in row order
    stored: tuple[int, ...]  # each chunk's stored size in bytes
    filters: tuple[int, ...]  # the pipeline's filter ids, in the order HDF5 applies them on write
    decode: bool  # the task inflates and un-shuffles the stored bytes itself


class RowStream:
    """The rows of one dataset in file order, read and decoded ahead in a thread pool.

    Parameters
    ----------
    dset
        An h5py dataset of an open file.
    file
        The file path (for messages).
    pool
        The thread pool that reads and decodes chunks (shared by every stream of a run).
    slots
        The run's chunk slots (:func:`chunk_slots`): a chunk takes one from
        its submission until the consumer takes it, bounding the memory of the run.
    check_chunk
        Called in a pool thread with each chunk's stored bytes before it is
        decoded (chunked datasets only); None: no per-chunk check.
    on_bytes
        Called with the stored bytes of each chunk (or batch) as the consumer takes it: progress.
    as_type
        Read the values as this dtype (the boolean enumeration's base integer); None: as stored.

    Raises
    ------
    InvalidFileError
        When iterated: a chunk never written, one larger than :data:`MAX_CHUNK_BYTES`, stored bytes that do not
        decode to one chunk, or a failure of the HDF5 library, with the file, the dataset and the chunk.
    """

    def __init__(
        self,
        dset: h5py.Dataset,
        file: str,
        pool: Executor,
        slots: threading.BoundedSemaphore,
        *,
        check_chunk: ChunkCheck | None = None,
        on_bytes: Callable[[int], None] | None = None,
        as_type: np.dtype[Any] | None = None,
    ) -> None:
        self._dset = dset
        self._file = file
        self._path = str(dset.name)
        self._pool = pool
        self._slots = slots
        self._check = check_chunk
        self._on_bytes = on_bytes or (lambda n: None)
        self._as_type = as_type
        self._rows = int(dset.shape[0]) if dset.shape else 0

    def _damaged(self, what: str, exc: BaseException | None = None) -> InvalidFileError:
        if exc is not None:
            return damaged_file(self._file, self._path, what, exc)
        return InvalidFileError(
            f"{self._file}: {self._path}: {what}; the file is damaged: restore it from a good copy "
            f"({validate_advice(self._file)})",
            path=self._file,
            hdf5_path=self._path,
        )

    def __iter__(self) -> Iterator[np.ndarray]:
        try:
            if self._dset.chunks is None:
                yield from self._batches()
            else:
                yield from self._chunks(self._plan())
        except H5MLError:
            raise
        except LIBRARY_ERRORS as exc:
            if not is_library_failure(exc):
                raise
            raise self._damaged("reading its data", exc) from exc

    # -- not chunked: batches through h5py ------------------------------------------------------
    def _batches(self) -> Iterator[np.ndarray]:
        dset = self._dset
        row = max(1, dset.dtype.itemsize * math.prod(dset.shape[1:]))
        step = max(1, BATCH_BYTES // row)
        storage = int(dset.id.get_storage_size())
        for start in range(0, self._rows, step):
            stop = min(self._rows, start + step)
            yield self._read_rows(start, stop)
            self._on_bytes(storage * (stop - start) // max(1, self._rows))

    def _read_rows(self, start: int, stop: int) -> np.ndarray:
        dset = self._dset if self._as_type is None else self._dset.astype(self._as_type)
        return np.asarray(dset[start:stop])

    # -- chunked: every chunk, in order, read and decoded ahead --------------------------------
    def _plan(self) -> _Plan:
        dset = self._dset
        chunks = tuple(int(c) for c in dset.chunks)
        whole_rows = chunks[1:] == tuple(int(d) for d in dset.shape[1:])
        expected = -(-self._rows // chunks[0]) if whole_rows else 0
        plist = dset.id.get_create_plist()
        filters = tuple(int(plist.get_filter(i)[0]) for i in range(plist.get_nfilters()))
        nbytes = dset.dtype.itemsize * math.prod(chunks)
        if nbytes > MAX_CHUNK_BYTES:
            raise self._damaged(f"one chunk holds {nbytes} bytes, more than the {MAX_CHUNK_BYTES} this reader decodes")
        found: dict[int, tuple[tuple[int, ...], int]] = {}
        if whole_rows and CHUNK_ITER:

            def seen(info: Any) -> None:
                found[int(info.chunk_offset[0]) // chunks[0]] = (tuple(info.chunk_offset), int(info.size))

            dset.id.chunk_iter(seen)
            # SPEC §3.5-R2: data never written reads as fill values; it is refused, never hashed
            if len(found) != expected or any(i not in found for i in range(expected)):
                missing = next(i for i in range(expected) if i not in found)
                raise self._damaged(
                    f"chunk {missing} (rows {missing * chunks[0]}..) was never written ({len(found)} of {expected} "
                    "chunks are stored)"
                )
        elif whole_rows:
            for i in range(expected):
                start = (i * chunks[0],) + (0,) * (len(chunks) - 1)
                info = dset.id.get_chunk_info_by_coord(start)
                if info.byte_offset is None:
                    raise self._damaged(f"chunk {i} (rows {start[0]}..) was never written")
                found[i] = (start, int(info.size))
        plain = self._as_type is not None or (dset.dtype.kind in "iuf" and dset.dtype.metadata is None)
        decode = whole_rows and plain and (filters == () or decodable(filters))
        return _Plan(
            chunk_rows=chunks[0],
            offsets=tuple(found[i][0] for i in range(expected)),
            stored=tuple(found[i][1] for i in range(expected)),
            filters=filters,
            decode=decode,
        )

    def _chunks(self, plan: _Plan) -> Iterator[np.ndarray]:
        if not plan.offsets:  # chunks that split rows: read by bands of chunk rows through h5py
            for start in range(0, self._rows, plan.chunk_rows):
                stop = min(self._rows, start + plan.chunk_rows)
                yield self._read_rows(start, stop)
            self._on_bytes(int(self._dset.id.get_storage_size()))
            return
        pending: deque[tuple[int, Future[np.ndarray]]] = deque()
        next_chunk = 0
        try:
            while next_chunk < len(plan.offsets) or pending:
                while next_chunk < len(plan.offsets) and (not pending or self._slots.acquire(blocking=False)):
                    if not pending:
                        self._slots.acquire()  # the first chunk in flight waits for a slot: no stream starves
                    pending.append((next_chunk, self._pool.submit(self._chunk, plan, next_chunk)))
                    next_chunk += 1
                index, future = pending.popleft()
                try:
                    rows = future.result()
                finally:
                    self._slots.release()
                self._on_bytes(plan.stored[index])
                yield rows
        finally:
            for _, future in pending:
                future.cancel()
            for _, future in pending:
                if not future.cancelled():
                    future.exception()
                self._slots.release()

    def _chunk(self, plan: _Plan, index: int) -> np.ndarray:
        """Read, check and decode chunk ``index`` (in a pool thread)."""
        start = index * plan.chunk_rows
        stop = min(self._rows, start + plan.chunk_rows)
        try:
            data: bytes | None = None
            mask = 0
            if plan.decode or self._check is not None:
                mask, data = self._dset.id.read_direct_chunk(plan.offsets[index])
            if self._check is not None and data is not None:
                self._check(StoredChunk(self._file, self._path, index, start, stop, bytes(data), int(mask)))
            if not plan.decode or data is None:
                return self._read_rows(start, stop)
            return self._decode(plan, index, data, int(mask))[: stop - start]
        except H5MLError:
            raise
        except LIBRARY_ERRORS as exc:
            if not is_library_failure(exc):
                raise
            raise self._damaged(f"reading chunk {index} (rows {start}..{stop})", exc) from exc

    def _decode(self, plan: _Plan, index: int, data: bytes, mask: int) -> np.ndarray:
        """Undo the filters of one chunk's stored bytes (:func:`h5ml.reader.codecs.decode_chunk`, §3.5)."""
        dtype = np.dtype(self._dset.dtype.str) if self._as_type is None else self._as_type
        row_shape = tuple(int(d) for d in self._dset.shape[1:])
        nbytes = dtype.itemsize * plan.chunk_rows * math.prod(row_shape)
        try:
            raw = decode_chunk(data, plan.filters, mask, nbytes, dtype.itemsize)
        except ChunkDecodeError as exc:
            raise self._damaged(f"chunk {index} {exc}") from exc
        return np.frombuffer(raw, dtype).reshape((plan.chunk_rows, *row_shape))
