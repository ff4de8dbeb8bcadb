"""The writer's compressed datasets: their filters, their declaration, gzip chunks compressed in threads (§3.5, §7).

:func:`dataset_filters` gives the filters of a new dataset: ``"gzip"``
(deflate, a core filter) or the opt-in ``"zstd"`` (HDF5 filter 32015 through
``hdf5plugin``), each after HDF5's byte-shuffle filter for multi-byte types.
:func:`declare_filters` lists every non-core filter the file's datasets use in
the root attribute ``required_filters`` before the file is finished (SPEC
§3.5-R1).

Whole chunks of gzip datasets are compressed by a :class:`ChunkPool` of
threads (zlib-ng's ``compress``, or the standard library's ``zlib.compress``
where zlib-ng is not installed; both release the GIL): each chunk's rows are
byte-shuffled as HDF5's shuffle filter does (multi-byte types) and deflated at
the dataset's level (:class:`Deflate`), and the result is stored with
``H5Dwrite_chunk``. Those are the chunks HDF5's own shuffle and deflate
filters would store, and any HDF5 decodes them (§3.5). The pool works in the
background: the writer goes on while chunks compress, and rows that do not
fill their chunk wait for the next rows of their dataset. Every dataset with
other filters goes through HDF5 as usual (:func:`write_rows` chooses).
"""

from __future__ import annotations

import os
import zlib
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Final

import h5py
import numpy as np

from h5ml import spec
from h5ml.model.filters import ZSTD_FILTER, load_hdf5plugin, pipeline
from h5ml.spec.attrs import read_attr, write_attr
from h5ml.writer.arguments import ZSTD_DEFAULT_LEVEL, is_level

__all__ = [
    "COMPRESS_THREADS",
    "DEFLATE_IMPLEMENTATION",
    "ChunkPool",
    "Deflate",
    "dataset_filters",
    "declare_filters",
    "write_rows",
]

#: Threads of a :class:`ChunkPool`: they compress whole chunks of gzip datasets.
COMPRESS_THREADS: Final = min(4, os.cpu_count() or 1)
#: Chunks a :class:`ChunkPool` compresses ahead of the one it stores, per thread
#: (bounds the compressed chunks held in memory).
_CHUNKS_AHEAD_PER_THREAD: Final = 4


def _compressor() -> tuple[Callable[[Any, int], bytes], str]:
    """zlib-ng's ``compress`` when it is installed (a dependency of h5ml), else the standard library's."""
    try:
        from zlib_ng import zlib_ng
    except ImportError:  # a platform without a zlib-ng wheel: the standard library's zlib makes the same format
        return zlib.compress, "zlib"
    return zlib_ng.compress, "zlib-ng"


_compress, DEFLATE_IMPLEMENTATION = _compressor()


def dataset_filters(compression: str | None, level: int | None, itemsize: int) -> dict[str, Any]:
    """The ``h5py`` ``create_dataset`` keywords of a new dataset's filters (§3.5).

    ``"zstd"`` is HDF5 filter 32015 through the ``hdf5plugin`` package
    (``pip install "h5ml[zstd]"``): it decodes 2-4 times faster than gzip,
    but only readers with the plugin can read the data (not h5dump nor
    h5wasm), so it is opt-in and the finished file declares it in
    ``required_filters`` (:func:`declare_filters`).

    Parameters
    ----------
    compression
        ``"gzip"``, ``"zstd"`` (checked by
        :func:`~h5ml.writer.arguments.check_compression`) or None.
    level
        The writer's ``compression_opts``: the level of the writer's
        compression. It applies to a feature whose own compression it is a
        level of (gzip 0-9, zstd 1-22); otherwise, and when None, the
        feature's compression uses its default level (gzip 4, zstd
        :data:`~h5ml.writer.arguments.ZSTD_DEFAULT_LEVEL`).
    itemsize
        Bytes per element of the stored type.

    Returns
    -------
    dict
        Empty without compression; else ``compression``, ``compression_opts``
        and ``shuffle`` (HDF5's byte shuffle first for a type of more than one
        byte: on float32 speech it makes zstd-3 chunks 0.29 of the raw size
        instead of 0.39, and decode about twice as fast; gzip gains as much).
    """
    if compression is None:
        return {}
    if level is not None and not is_level(compression, level):
        level = None
    if compression == "zstd":
        load_hdf5plugin()  # registers filter 32015 with HDF5 (checked by check_compression)
        zstd_level = ZSTD_DEFAULT_LEVEL if level is None else int(level)
        return {"compression": ZSTD_FILTER, "compression_opts": (zstd_level,), "shuffle": itemsize > 1}
    return {"compression": compression, "compression_opts": level, "shuffle": itemsize > 1}


def declare_filters(h5file: h5py.File) -> list[int]:
    """List every non-core filter that a dataset of ``h5file`` uses in the root ``required_filters`` (§3.5-R1).

    The attribute keeps what it already lists (given by the caller, or an
    existing file's) and gains the filters found; it is written only when
    something is missing from it, as a sorted int64 array. Only datasets are
    walked (their creation properties, no data is read).

    Parameters
    ----------
    h5file
        The file being finished, open for writing.

    Returns
    -------
    list of int
        The filter ids added (empty when the file already declared them all).
    """
    used: set[int] = set()

    def visit(_name: str, obj: object) -> None:
        if isinstance(obj, h5py.Dataset):
            used.update(fid for fid in pipeline(obj) if fid not in spec.CORE_FILTERS)

    h5file.visititems(visit)
    listed = read_attr(h5file, "required_filters", None)
    declared = [x for x in listed if isinstance(x, int) and not isinstance(x, bool)] if isinstance(listed, list) else []
    missing = sorted(used - set(declared))
    if missing:
        # SPEC §3.5-R1: a dataset's non-core filter is listed in required_filters
        write_attr(h5file, "required_filters", sorted({*declared, *missing}))
    return missing


@dataclass(frozen=True)
class Deflate:
    """The filter pipeline of a dataset whose chunks the writer compresses itself: [shuffle,] deflate (§3.5).

    Attributes
    ----------
    level
        The deflate level, 0-9.
    shuffle
        HDF5's byte-shuffle filter comes first.
    """

    level: int
    shuffle: bool

    @classmethod
    def of(cls, ds: h5py.Dataset) -> Deflate | None:
        """Return the pipeline of ``ds`` if the writer may store whole chunks of it itself.

        Parameters
        ----------
        ds
            A dataset of the file being written.

        Returns
        -------
        Deflate or None
            The level and shuffle of a chunked dataset of plain integers or
            floats (no enumeration or other special type) whose chunks span
            whole rows (``chunks[1:] == shape[1:]``, §7.1) and whose filters
            are exactly deflate, or shuffle then deflate (§3.5); ``None`` for
            any other dataset (HDF5 writes it).
        """
        chunks = ds.chunks
        dtype = ds.dtype
        if chunks is None or tuple(chunks[1:]) != tuple(ds.shape[1:]) or dtype.kind not in "iuf" or dtype.metadata:
            return None
        plist = ds.id.get_create_plist()
        filters = [plist.get_filter(i) for i in range(plist.get_nfilters())]
        ids = [f[0] for f in filters]
        if ids not in ([h5py.h5z.FILTER_DEFLATE], [h5py.h5z.FILTER_SHUFFLE, h5py.h5z.FILTER_DEFLATE]):
            return None
        values = filters[-1][2]
        if len(values) != 1:  # HDF5 records the level as deflate's one parameter
            return None
        return cls(int(values[0]), len(ids) == 2)

    def encode(self, rows: np.ndarray, dtype: np.dtype[Any]) -> bytes:
        """Return the stored bytes of one whole chunk, as HDF5's filters would make them (§3.5).

        HDF5's shuffle filter writes byte 0 of every element, then byte 1 of
        every element, and so on (a whole chunk holds whole elements); its
        deflate filter stores a zlib stream at the level. The stream is made
        by zlib-ng (:data:`DEFLATE_IMPLEMENTATION`), about twice as fast as
        zlib at the same level with the same ratio; its bytes may differ from
        zlib's, but every inflate (HDF5's deflate filter included) decodes it
        to the same rows. Runs in a worker thread: numpy and the compressor
        only, no HDF5.

        Parameters
        ----------
        rows
            The values of one whole chunk, ``(chunk rows, *row shape)``.
        dtype
            The dataset's dtype (byte order included).

        Returns
        -------
        bytes
            The chunk to store with filter mask 0 (every filter applied).
        """
        raw = np.ascontiguousarray(rows, dtype=dtype).reshape(-1).view(np.uint8)
        if self.shuffle and dtype.itemsize > 1:
            raw = np.ascontiguousarray(raw.reshape(-1, dtype.itemsize).T).reshape(-1)
        return _compress(raw.data, self.level)


class ChunkPool:
    """Threads that compress whole chunks of gzip datasets for the writer, in the background (§3.5, §7).

    :meth:`write_rows` hands the pool rows of a dataset. Every whole chunk
    among them is copied, compressed in a thread and stored with
    ``H5Dwrite_chunk`` later, in order, while the caller goes on (decoding the
    next samples, say). Rows that end a write without filling their chunk are
    kept (a *carry*, less than one chunk per dataset) and joined with the next
    rows of the same dataset, so that a stream of small writes is still
    compressed whole chunks at a time. :meth:`finish` stores everything:
    carries go through HDF5, and the compressed chunks are awaited and stored.

    The threads only run numpy and zlib; HDF5 is called from the caller's
    thread only (in :meth:`write_rows`, :meth:`finish` and :meth:`close`). At
    most a few chunks per thread are held compressed or waiting, so memory
    stays bounded whatever is written. The threads start with the first chunk
    and stop with :meth:`close` (or at the end of a ``with`` block); a closed
    pool starts new threads if it is used again.

    Parameters
    ----------
    threads
        How many threads, >= 1 (default :data:`COMPRESS_THREADS`).

    Raises
    ------
    ValueError
        If ``threads`` is less than 1.
    """

    def __init__(self, threads: int = COMPRESS_THREADS) -> None:
        if threads < 1:
            raise ValueError(f"threads must be >= 1, got {threads}")
        self.threads = threads
        self._executor: ThreadPoolExecutor | None = None
        #: Chunks submitted and not stored yet, oldest first: (dataset, chunk offset, compressed bytes).
        self._window: deque[tuple[h5py.Dataset, tuple[int, ...], Future[bytes]]] = deque()
        #: Rows waiting for the rest of their chunk, by dataset: (dataset, first row, rows).
        self._carry: dict[str, tuple[h5py.Dataset, int, np.ndarray]] = {}

    def write_rows(self, ds: h5py.Dataset, start: int, data: np.ndarray, deflate: Deflate) -> None:
        """Write ``data`` to ``ds`` from row ``start``: whole chunks compressed in the threads, the rest kept or via HDF5.

        Parameters
        ----------
        ds
            A dataset of the pipeline ``deflate`` (:meth:`Deflate.of`),
            already at least ``start + len(data)`` rows long.
        start
            The first row. Rows are written in increasing order per dataset;
            a write that does not continue the dataset's carry first writes
            the carry through HDF5.
        data
            ``(n, *ds.shape[1:])`` values. They are copied before this
            returns, so the caller may reuse the array.

        Notes
        -----
        Rows before the first chunk boundary at or after ``start`` (a chunk
        that already holds rows) go through HDF5 at once; whole chunks go to
        :meth:`write_chunks`; the rows after the last boundary become the
        dataset's carry.
        """
        carry = self._carry.pop(ds.name, None)
        if carry is not None:
            _, c_start, c_rows = carry
            if c_start + c_rows.shape[0] == start:
                data, start = np.concatenate([c_rows, data]), c_start
            else:
                ds[c_start : c_start + c_rows.shape[0]] = c_rows
        n = int(data.shape[0])
        rows = int(ds.chunks[0])
        first = min(start + n, -(-start // rows) * rows)  # the first chunk boundary at or after start
        last = max(first, (start + n) // rows * rows)  # the last chunk boundary at or before the end
        if first > start:
            ds[start:first] = data[: first - start]
        if last > first:
            self.write_chunks(ds, first, data[first - start : last - start], deflate)
        if last < start + n:
            self._carry[ds.name] = (ds, last, np.array(data[last - start :], copy=True))

    def write_chunks(self, ds: h5py.Dataset, first: int, data: np.ndarray, deflate: Deflate) -> None:
        """Compress ``data``, whole chunks of ``ds`` from row ``first``, in the threads; store them in order (§3.5).

        Parameters
        ----------
        ds
            The dataset, already long enough, with the pipeline ``deflate``
            (see :meth:`Deflate.of`).
        first
            A multiple of the chunk rows ``ds.chunks[0]``.
        data
            ``(k * ds.chunks[0], *ds.shape[1:])`` values for ``k`` whole
            chunks; each chunk is copied before it is handed to a thread.

        Notes
        -----
        Chunks already compressed are stored as this goes; when more than
        a few per thread wait, it waits for the oldest. The rest are stored
        by later calls, :meth:`finish` or :meth:`close`. If storing one
        fails, the chunks not started are cancelled and the running ones
        awaited before the error propagates.
        """
        rows = int(ds.chunks[0])
        assert first % rows == 0 and data.shape[0] % rows == 0
        if self._executor is None:
            self._executor = ThreadPoolExecutor(self.threads, thread_name_prefix="h5ml-deflate")
        executor, dtype = self._executor, ds.dtype
        tail = (0,) * (ds.ndim - 1)
        ahead = _CHUNKS_AHEAD_PER_THREAD * self.threads
        try:
            for start in range(0, data.shape[0], rows):
                chunk = np.array(
                    data[start : start + rows], dtype=dtype, order="C"
                )  # a copy: the caller may reuse data
                self._window.append((ds, (first + start, *tail), executor.submit(deflate.encode, chunk, dtype)))
                while self._window and (len(self._window) > ahead or self._window[0][2].done()):
                    self._store_oldest()
        except BaseException:
            self._cancel()
            raise

    def _store_oldest(self) -> None:
        ds, offset, chunk = self._window.popleft()
        ds.id.write_direct_chunk(offset, chunk.result(), filter_mask=0)

    def _cancel(self) -> None:
        """Forget every chunk and carry: cancel the chunks not started, await the running ones."""
        window, self._window = self._window, deque()
        self._carry.clear()
        for _, _, chunk in window:
            chunk.cancel()
        wait([chunk for _, _, chunk in window])

    def finish(self) -> None:
        """Store everything handed to the pool: the carries through HDF5, then every compressed chunk, in order.

        Raises
        ------
        BaseException
            Whatever compressing or storing a chunk raised; the remaining
            chunks and carries are then dropped.
        """
        try:
            while self._carry:
                _, (ds, start, rows) = self._carry.popitem()
                ds[start : start + rows.shape[0]] = rows
            while self._window:
                self._store_oldest()
        except BaseException:
            self._cancel()
            raise

    def close(self, abort: bool = False) -> None:
        """Store everything (:meth:`finish`), unless ``abort``, then stop the threads.

        With ``abort`` (or when finishing fails) the chunks not stored are
        dropped: use it when the file is being discarded. Nothing happens if
        no thread runs and nothing waits.
        """
        try:
            if abort:
                self._cancel()
            else:
                self.finish()
        finally:
            executor, self._executor = self._executor, None
            if executor is not None:
                executor.shutdown(wait=True, cancel_futures=True)

    def __enter__(self) -> ChunkPool:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close(abort=exc_type is not None)


def write_rows(ds: h5py.Dataset, start: int, data: np.ndarray, pool: ChunkPool | None) -> None:
    """``ds[start : start + len(data)] = data`` for a dataset already that long; gzip datasets go through ``pool``.

    When the dataset's pipeline allows it (:meth:`Deflate.of`) the pool
    compresses its whole chunks in threads and keeps the rows of an
    unfinished chunk for the next write (:meth:`ChunkPool.write_rows`); every
    write without a pool or to another kind of dataset goes through HDF5.
    """
    n = int(data.shape[0])
    if not n:
        return
    deflate = None if pool is None else Deflate.of(ds)
    if deflate is None or pool is None:
        ds[start : start + n] = data
        return
    pool.write_rows(ds, start, data, deflate)
