"""Feature readers: one class per encoding of SPEC.md §6.

A :class:`Feature` reads the samples of one feature of one split, in any order,
with duplicates (case C01), returning plain Python and numpy values:

=============  ====================================================  ==================
encoding       a batch (``feature[[5, 2, 9]]``)                      one sample
=============  ====================================================  ==================
dense          ``numpy.ndarray`` of shape (R, *sample_shape)          ``numpy.ndarray``
string         ``numpy.ndarray`` of ``str`` (dtype object), (R,)      ``str``
categorical    ``numpy.ndarray`` of int64 codes (-1 = missing), (R,)  ``int``
ragged         ``list`` of R arrays (reshaped by ``shapes``)          ``numpy.ndarray``
bytes          ``list`` of R ``bytes``                                ``bytes``
=============  ====================================================  ==================

An integer index and a slice with step 1 take a fast path, without a read
plan: one read per dataset of the feature (a ``DataLoader`` calls
``dataset[i]`` once per sample, so this path costs about what plain h5py's
``dataset[i]`` costs). Every other request follows :mod:`h5ml.reader.plan`: the
unique rows are read with one hyperslab read per span (never h5py fancy
indexing) and put back in request order. Each needed chunk of filtered
(compressed or checksummed) data is decoded once: when the chunk cache holds a
chunk (the reader sizes it so, §7.3), spans are runs of the requested rows and
HDF5 decodes each chunk once into its cache; otherwise spans are whole chunks,
each decoded by one read. Unfiltered data is read with no chunk cache (the
reader opens it so, §7.3): spans are runs of the requested rows, read straight
from the file; numeric data stored wholly in the file (contiguous, or in
allocated chunks of whole rows) is copied out of a memory map of the file by
:mod:`h5ml.reader.direct`, without a call into HDF5. Ragged and bytes features read their ``offsets``
first (kept in memory when they take less than :data:`OFFSETS_CACHE_BYTES`),
then the value spans the rows need. Both paths return the same values and
types: numbers in native byte order; ``logical_dtype = "bool"`` and HDF5 enum
booleans as numpy ``bool``; strings always as ``str`` (§3.4, C06).

Features never hold an open file: they ask their source (a
:class:`h5ml.reader.dataset.Dataset`) for HDF5 objects on each use, so they pickle by
path and keep working after a fork. What does not change while a file is open
(rows, chunk rows, filters, dtypes, HDF5 dataspaces and types) is kept per
h5py object and rebuilt when the source hands out a new one.

Invalid and damaged files (§9, §10): a feature either returns the stored
values or raises an :class:`h5ml.H5MLError` that names the file, the HDF5
object and what to do. :func:`open_feature` checks the structure of the
encoding (ranks, datatypes, one sample per ``num_samples``) before any read;
a failure of the HDF5 library while reading (a corrupt or checksum-failing
chunk, a damaged object header) becomes :class:`~h5ml.errors.InvalidFileError`
naming the dataset and the rows; a read that would allocate more than
:data:`TRUSTED_READ_BYTES` is first compared with the data the dataset really
stores, so a small file that merely declares a huge dataset is refused instead
of exhausting memory (§10.4). Attributes are read one at a time, when asked
for: an optional attribute that is not UTF-8 raises
:class:`~h5ml.errors.EncodingError` when that attribute is asked for and never
makes the samples unreadable (values are not "repaired" with replacement
characters: a reader returns what is stored or says why it cannot).
"""

from __future__ import annotations

import itertools
import math
import os
import threading
from typing import Any, ClassVar, Final, Protocol

import h5py
import numpy as np
import numpy.typing as npt

from h5ml import spec
from h5ml.errors import EncodingError, H5MLError, InvalidFileError, UnsupportedFilterError
from h5ml.model.failures import LIBRARY_ERRORS, damaged_file, is_library_failure, validate_advice
from h5ml.model.hdf5 import read_attribute, read_attributes
from h5ml.reader.direct import DirectRows, direct_rows
from h5ml.reader.plan import Indices, ReadPlan, check_index, merge_ranges, normalize_indices, plan_reads
from h5ml.spec.attrs import decode_str
from h5ml.spec.chunks import VLEN_ELEMENT_BYTES

__all__ = [
    "FEATURE_CLASSES",
    "OFFSETS_CACHE_BYTES",
    "TRUSTED_READ_BYTES",
    "BytesFeature",
    "CategoricalFeature",
    "DenseFeature",
    "Feature",
    "NodeSource",
    "RaggedFeature",
    "StringFeature",
    "open_feature",
]

#: Ragged/bytes ``offsets`` smaller than this (8 bytes per sample: 8M samples)
#: are read whole once and kept in memory; larger ones are read per request.
OFFSETS_CACHE_BYTES: Final = 64 << 20
#: Two runs of rows separated by at most this many bytes are read as one span
#: (one library call instead of two); for compressed data, only within a chunk.
_GAP_BYTES: Final = 64 << 10
#: Upper bound of one span's buffer, so that a sparse request over compressed
#: data does not decode the whole dataset into memory at once.
_SPAN_BYTES: Final = 64 << 20
#: Names of the HDF5 compression filters h5py knows (HDF5 filter ids).
_COMPRESSION_NAMES: Final = {1: "gzip", 4: "szip", 32000: "lzf"}
#: Core filters that do not compress: shuffle and fletcher32 (§3.5).
_NOT_COMPRESSION: Final = frozenset(fid for fid, name in spec.CORE_FILTERS.items() if name != "deflate")
#: §10.4: a read whose buffer is larger than this (64 MiB) is first compared with the data its dataset
#: really stores (allocated bytes, or written chunks when filtered); smaller reads are not checked.
TRUSTED_READ_BYTES: Final = 64 << 20


class NodeSource(Protocol):
    """What a feature needs from its file: the file path and its HDF5 objects."""

    @property
    def path(self) -> str:
        """The file path."""
        ...

    def h5_node(self, hdf5_path: str) -> Any:
        """Return the h5py group or dataset at ``hdf5_path`` (raises KeyError if absent)."""
        ...


def _native(dtype: np.dtype[Any]) -> np.dtype[Any]:
    return dtype.newbyteorder("=") if dtype.byteorder == ">" or dtype.byteorder == "<" else dtype


def _has_filters(dset: h5py.Dataset) -> bool:
    return bool(dset.chunks is not None and dset.id.get_create_plist().get_nfilters() > 0)


def _check_filters(dset: h5py.Dataset, filename: str) -> None:
    """Refuse a dataset whose non-core filter this HDF5 build cannot decode (§3.5)."""
    if dset.chunks is None:
        return
    dcpl = dset.id.get_create_plist()
    for i in range(dcpl.get_nfilters()):
        filter_id, _flags, _values, raw_name = dcpl.get_filter(i)
        if filter_id in spec.CORE_FILTERS or h5py.h5z.filter_avail(filter_id):
            continue
        label = raw_name.decode("utf-8", "replace") if isinstance(raw_name, bytes) else str(raw_name)
        named = f" ({label!r})" if label else ""
        raise UnsupportedFilterError(
            f"{filename}: dataset {dset.name} uses HDF5 filter {filter_id}{named}, which this HDF5 build cannot "
            "decode (§3.5); install the plugin that provides it (for example the hdf5plugin package) or point "
            "HDF5_PLUGIN_PATH at it",
            path=filename,
            hdf5_path=dset.name,
        )


def _is_utf8(raw: bytes) -> bool:
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _string_column(path: str, node: h5py.Dataset, filename: str) -> _Column:
    """A column of strings, read in the dataset's own type (16 stored bytes per variable-length string)."""
    return _Column(path, node, node.dtype, VLEN_ELEMENT_BYTES if node.dtype.kind == "O" else None, filename=filename)


def _numeric_dtype(dset: h5py.Dataset, filename: str, dtype: np.dtype[Any] | None = None) -> np.dtype[Any]:
    """The dataset's numeric dtype in native byte order; EncodingError for any other type (§3.2)."""
    dtype = dset.dtype if dtype is None else dtype
    if dtype.kind not in "biuf":
        raise EncodingError(
            f"{filename}: dataset {dset.name} has dtype {dtype}, which is not a numeric type of the storage profile "
            f"(§3.2); the file is not a valid h5ml file; {validate_advice(filename)}",
            path=filename,
            hdf5_path=dset.name,
        )
    return _native(dtype)


class _Column:
    """One HDF5 dataset of a feature, with what stays fixed while its file is open (§7).

    A feature builds it on first use and keeps it until the reader hands out a
    new h5py object for the path (the file was reopened after a fork or an
    unpickle). It holds the rows, the sample axes, the dtype values come back
    in, the chunk rows, whether filters are set, and the span rules that
    follow from the row size, so that no read asks HDF5 for them again.

    Feature data is read by :meth:`read_into` (one hyperslab of whole rows,
    read with h5py's low-level API straight into a buffer, with the memory
    datatype, the one-row memory dataspace and, per thread, the file dataspace
    made once) or, for one sample of a native integer or float dataset, by
    :meth:`sample` (h5py's ``dataset[i]``, which h5py serves from compiled
    code). Measured here, one 3 KiB row from the chunk cache: h5py's
    ``read_direct`` (it builds selections in Python on every call) 60-90 us,
    ``read_into`` 4.7 us (13 us when it asked HDF5 for a new file dataspace on
    each read), ``dataset[i]`` 4.2 us against 4.9 us for ``read_into`` with its
    buffer allocation. For spans of 12 KiB rows into a batch buffer
    (``read_direct`` / ``dataset[a:b]`` and a copy / ``read_into``): 1 row 65 /
    6.5 / 5.7 us, 16 rows 119 / 70 / 52 us, 256 rows 770 / 1150 / 580 us, 1024
    rows 2.4 / 4.4 / 2.3 ms; so spans of every size use ``read_into``.
    (Those figures were taken with the chunk cache; the reader now opens
    unfiltered datasets without one, §7.3.)
    Unfiltered numeric data wholly stored in the file bypasses HDF5: rows are
    copied from a memory map of the file (:meth:`fast_rows`, :mod:`h5ml.reader.direct`),
    about 20x faster than any h5py read for random 12 KiB rows.

    Damaged and hostile files: a buffer larger than :data:`TRUSTED_READ_BYTES`
    is allocated only after :meth:`check_stored` compared it with the data the
    dataset stores (§10.4), and a failure of the HDF5 library during a read
    becomes InvalidFileError naming the dataset and the rows (E145).
    """

    __slots__ = (
        "_fast",
        "_fast_built",
        "_local",
        "_one_row",
        "_one_shape",
        "_origin",
        "_stored",
        "check_row_nbytes",
        "chunk_rows",
        "compressed",
        "direct",
        "dsid",
        "dtype",
        "filename",
        "inner",
        "max_gap",
        "max_span_rows",
        "mtype",
        "node",
        "path",
        "row_nbytes",
        "rows",
        "stored_row_nbytes",
        "whole_chunks",
    )

    def __init__(
        self, path: str, node: h5py.Dataset, dtype: np.dtype[Any], row_nbytes: int | None = None, filename: str = ""
    ) -> None:
        self.path = path
        self.filename = filename
        self.node = node
        self.dsid = node.id
        shape = node.shape
        self.rows = int(shape[0])
        self.inner = tuple(int(d) for d in shape[1:])
        self.dtype = dtype
        self.mtype = h5py.h5t.py_create(dtype)
        #: Bytes of one row in memory (``dtype``), checked against every buffer.
        self.row_nbytes = int(dtype.itemsize * math.prod(self.inner))
        chunks = node.chunks
        self.chunk_rows = None if chunks is None else int(chunks[0])
        self.compressed = _has_filters(node)
        stored = int(node.dtype.itemsize * math.prod(self.inner)) if row_nbytes is None else row_nbytes
        #: Bytes of one row as stored in the file (16 per variable-length string), for §10.4's check.
        self.stored_row_nbytes = stored
        #: The larger of the two: a read whose rows take more than TRUSTED_READ_BYTES is checked (§10.4).
        self.check_row_nbytes = max(self.row_nbytes, stored)
        self._stored: int | None = None
        self.max_gap = _GAP_BYTES // max(1, stored)
        self.max_span_rows = max(1, _SPAN_BYTES // max(1, stored))
        #: Compressed data whose chunk does not fit the dataset's chunk cache is read by whole chunks (each
        #: decoded by one read). When it fits (h5ml.open sizes the cache so, §7.3), HDF5 decodes each chunk
        #: once into the cache, and a request reads only its rows: about 5x faster for batches of 1-512 random
        #: rows from cached gzip chunks of 800 KiB, the same from cold chunks. A gap merged into a span is
        #: then shorter than a chunk, so no chunk without a requested row is decoded.
        self.whole_chunks = False
        if self.compressed and chunks is not None:
            chunk_nbytes = int(self.dsid.get_type().get_size() * math.prod(chunks))  # as stored: 16 B per vlen
            self.whole_chunks = int(self.dsid.get_access_plist().get_chunk_cache()[1]) < chunk_nbytes
            if not self.whole_chunks:
                self.max_gap = min(self.max_gap, int(chunks[0]) - 1)
        self._origin = (0,) * len(self.inner)
        self._one_shape = (1, *self.inner)
        self._one_row = h5py.h5s.create_simple(self._one_shape)
        self._local = threading.local()
        #: ``node[i]`` returns a sample of :attr:`dtype` (a native number type) as is: h5py reads it in compiled code.
        #: Not for rows over TRUSTED_READ_BYTES: those go through :meth:`buffer`'s check (§10.4).
        self.direct = node.dtype == dtype and dtype.kind in "iuf" and self.check_row_nbytes <= TRUSTED_READ_BYTES
        self._fast: DirectRows | None = None
        self._fast_built = False

    def fast_rows(self) -> DirectRows | None:
        """The memory-mapped reader of this unfiltered dataset (:mod:`h5ml.reader.direct`), built on first use; or None.

        None when the dataset is filtered or anything about its storage is
        unusual: its rows are then read through h5py (§7.3).
        """
        if not self._fast_built:
            self._fast = None if self.compressed else direct_rows(self.node, self.dtype)
            self._fast_built = True
        return self._fast

    def stored_nbytes(self) -> int | None:
        """Bytes of data the dataset can deliver: what it stores, not what it declares (§10.4).

        Allocated bytes of an unfiltered dataset (no more than the file's
        size); for a filtered one, the decoded size of the chunks ever
        written. None when the data lives outside the file (external storage
        or a virtual dataset, read only with ``allow_external=True``): nothing
        to compare with. Computed once (HDF5 walks the chunk index).
        """
        if self._stored is None:
            plist = self.dsid.get_create_plist()
            layout = plist.get_layout()
            if plist.get_external_count() > 0 or layout == h5py.h5d.VIRTUAL:
                return None
            declared = self.rows * self.stored_row_nbytes
            if layout == h5py.h5d.COMPACT:
                self._stored = declared  # in the object header: already in memory
            elif layout == h5py.h5d.CHUNKED and plist.get_nfilters() > 0:
                chunk = self.node.chunks
                chunk_nbytes = self.stored_row_nbytes // max(1, math.prod(self.inner)) * math.prod(chunk)
                self._stored = int(self.dsid.get_num_chunks()) * chunk_nbytes
            else:
                size = os.path.getsize(self.filename) if self.filename else declared
                self._stored = min(int(self.dsid.get_storage_size()), size)
        return self._stored

    def check_stored(self, count: int, start: int | None = None) -> None:
        """Refuse a read of ``count`` rows (from ``start``, when contiguous) that needs more data than stored (§10.4).

        Raises
        ------
        InvalidFileError
            If those rows hold more bytes than :meth:`stored_nbytes`: the file
            declares data it does not hold (never written, or truncated).
        """
        need = count * self.stored_row_nbytes
        have = self.stored_nbytes()
        if have is None or need <= have:
            return
        declared = (self.rows, *self.inner)
        what = f"{count} rows" if start is None else f"rows [{start}, {start + count})"
        raise InvalidFileError(
            f"{self.filename}: {self.path}: a read of {what} needs {need} bytes of stored data, but "
            f"this dataset of declared shape {declared} stores only {have} bytes: the file declares data it does not "
            f"hold (it was never written, or the file is truncated), so the read was refused instead of allocating "
            f"memory for it (§10.4); {validate_advice(self.filename)}",
            path=self.filename,
            hdf5_path=self.path,
        )

    def buffer(self, count: int, start: int | None = None) -> npt.NDArray[Any]:
        """A new array (count, *inner) of :attr:`dtype`, checked first when large (§10.4; see :meth:`check_stored`)."""
        if count * self.check_row_nbytes > TRUSTED_READ_BYTES:
            self.check_stored(count, start)
        return np.empty((count, *self.inner), dtype=self.dtype)

    def _failed(self, exc: BaseException, start: int, stop: int) -> InvalidFileError:
        """The error for a read the HDF5 library could not do (E145): names the dataset and the rows."""
        rows = f"row {start}" if stop - start == 1 else f"rows [{start}, {stop})"
        cause = "a chunk is corrupt (a checksum or decompression failure) or the file is damaged"
        return damaged_file(self.filename, self.path, f"reading {rows}", exc, cause)

    def read_into(self, out: npt.NDArray[Any], start: int, stop: int) -> None:
        """Read rows ``[start, stop)`` into ``out``, a C-contiguous array (stop - start, *inner) of :attr:`dtype`.

        Every buffer here is made by this class (a new array, or rows ``lo:hi``
        of one, which are contiguous); the size check keeps a mistake from
        becoming a write past the buffer.

        Raises
        ------
        ValueError
            If ``out`` does not hold exactly those rows (HDF5 would write past it).
        """
        count = stop - start
        if out.nbytes != count * self.row_nbytes:
            raise ValueError(
                f"{self.node.name}: a read of rows [{start}, {stop}) needs a {self.dtype} buffer of shape "
                f"{(count, *self.inner)}, got {out.dtype} {out.shape}"
            )
        if count <= 0 or self.row_nbytes == 0:
            return
        fast = self._fast if self._fast_built else self.fast_rows()
        if fast is not None and 0 <= start and stop <= self.rows and out.flags.c_contiguous:
            fast.read_into(out, start, stop)
            return
        space = getattr(self._local, "space", None)  # this thread's file dataspace: threads never share a selection
        if space is None:
            space = self._local.space = self.dsid.get_space()
        try:
            if count == 1:
                space.select_hyperslab((start, *self._origin), self._one_shape)
                self.dsid.read(self._one_row, space, out, self.mtype)
            else:
                space.select_hyperslab((start, *self._origin), (count, *self.inner))
                self.dsid.read(h5py.h5s.create_simple((count, *self.inner)), space, out, self.mtype)
        except LIBRARY_ERRORS as exc:
            if not is_library_failure(exc):
                raise
            raise self._failed(exc, start, stop) from exc

    def read(self, start: int, stop: int) -> npt.NDArray[Any]:
        """Return rows ``[start, stop)`` as a new array (stop - start, *inner) of :attr:`dtype`.

        Raises
        ------
        InvalidFileError
            If the rows need more data than the dataset stores (§10.4), or the
            HDF5 library fails to read them (a corrupt chunk, E145).
        """
        out = self.buffer(stop - start, start)
        self.read_into(out, start, stop)
        return out

    def read_one(self, row: int) -> npt.NDArray[Any]:
        """Return row ``row`` as a new array (1, *inner) of :attr:`dtype` (errors as :meth:`read`)."""
        out = (
            self.buffer(1, row) if self.check_row_nbytes > TRUSTED_READ_BYTES else np.empty(self._one_shape, self.dtype)
        )
        self.read_into(out, row, row + 1)
        return out

    def sample(self, row: int) -> Any:
        """Return row ``row`` without its first axis: an array ``inner`` of :attr:`dtype`, a numpy scalar if 1-D."""
        if self.direct:
            try:
                return self.node[row]
            except LIBRARY_ERRORS as exc:
                if not is_library_failure(exc):
                    raise
                raise self._failed(exc, row, row + 1) from exc
        return self.read_one(row)[0]

    def plan(self, indices: Indices) -> ReadPlan:
        """Plan reads of ``indices`` along the first axis (chunk- and size-aware, §7, case C01)."""
        return plan_reads(
            indices,
            self.rows,
            self.chunk_rows,
            self.whole_chunks,
            max_gap=self.max_gap,
            max_span_rows=self.max_span_rows,
        )

    def take(self, indices: Indices) -> tuple[npt.NDArray[Any], bool]:
        """Read ``indices`` (any request but an int or a slice of step 1) in request order (§7.3, C01).

        Unfiltered data wholly stored in the file is copied straight from its
        memory map in one copy (:meth:`h5ml.reader.direct.DirectRows.take`); anything
        else follows a read plan (one read per span, then one gather).

        Returns
        -------
        values : numpy.ndarray
            (R, *inner) of :attr:`dtype`, or (*inner) when ``scalar``.
        scalar : bool
            True when ``indices`` was a single integer.
        """
        fast = self._fast if self._fast_built else self.fast_rows()
        if fast is not None:
            rows, scalar = normalize_indices(indices, self.rows)
            values = fast.take(rows)
            return (values[0] if scalar else values), scalar
        plan = self.plan(indices)
        return plan.gather(self.read_rows(plan)), plan.scalar

    def read_rows(self, plan: ReadPlan) -> npt.NDArray[Any]:
        """Read the unique rows of ``plan`` into one array (U, *inner): one read per span."""
        rows = plan.rows
        block = self.buffer(rows.shape[0])
        for start, stop, lo, hi in plan.iter_spans():
            if hi - lo == stop - start:
                self.read_into(block[lo:hi], start, stop)
            else:
                block[lo:hi] = self.read(start, stop)[rows[lo:hi] - start]
        return block


class Feature:
    """Base class of the feature readers (§6.1).

    Parameters
    ----------
    source
        The open dataset the feature belongs to (anything with ``path`` and
        ``h5_node``; normally a :class:`h5ml.reader.dataset.Dataset`).
    split
        The split name.
    name
        The feature name.

    Notes
    -----
    Use ``feature[idx]`` or :meth:`read`. ``idx`` may be an integer (one
    sample), a slice, a list or 1-D integer array in any order with duplicates
    and negative indices, or a boolean mask; out-of-range indices raise
    IndexError. An integer and a slice with step 1 take a fast path: no read
    plan, one read per dataset of the feature. Instances pickle by (file,
    split, feature) and reopen lazily.
    """

    #: The encoding this class reads (§6).
    encoding: ClassVar[str] = ""
    #: Members (datasets) of a group encoding, checked for filters on first read.
    _members: ClassVar[tuple[str, ...]] = ()
    #: The member that holds the samples (or the values); "" for the feature dataset itself.
    _main_member: ClassVar[str] = ""

    def __init__(self, source: NodeSource, split: str, name: str) -> None:
        self._source = source
        self._split = split
        self._name = name
        self._reset()

    def _reset(self) -> None:
        self._attrs: dict[str, Any] | None = None
        self._attr_values: dict[str, Any] = {}
        self._filters_checked = False
        self._logical_bool: bool | None = None
        self._columns: dict[str, _Column] = {}

    def __getstate__(self) -> dict[str, Any]:
        return {"source": self._source, "split": self._split, "name": self._name}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._source = state["source"]
        self._split = state["split"]
        self._name = state["name"]
        self._reset()

    # -- identity ---------------------------------------------------------
    @property
    def name(self) -> str:
        """The feature name (§5.2)."""
        return self._name

    @property
    def split(self) -> str:
        """The name of the split that holds the feature (§5.1)."""
        return self._split

    @property
    def hdf5_path(self) -> str:
        """The HDF5 path of the feature object, for example ``/train/image``."""
        return f"/{self._split}/{self._name}"

    @property
    def path(self) -> str:
        """The file path."""
        return self._source.path

    def _node(self, member: str | None = None) -> Any:
        where = self.hdf5_path if member is None else f"{self.hdf5_path}/{member}"
        try:
            return self._source.h5_node(where)
        except H5MLError:
            raise
        except LIBRARY_ERRORS as exc:  # h5py raises KeyError for some damaged headers
            if not is_library_failure(exc):
                raise
            raise self._damaged(exc, member) from exc

    def _damaged(self, exc: BaseException, member: str | None = None) -> InvalidFileError:
        """The error for a failure of the HDF5 library on this feature's objects (a damaged file, E101/E145)."""
        where = self.hdf5_path if member is None else f"{self.hdf5_path}/{member}"
        return damaged_file(self.path, where, "reading this feature", exc)

    def _main(self) -> h5py.Dataset:
        """The dataset that holds the samples (or the values) of this feature."""
        return self._node(self._main_member or None)

    def _column(self, member: str = "") -> _Column:
        """The cached :class:`_Column` of ``member`` ("" for the feature dataset), rebuilt after a reopen."""
        column = self._columns.get(member)
        if column is not None and column.node is self._source.h5_node(column.path):
            return column
        path = f"{self.hdf5_path}/{member}" if member else self.hdf5_path
        column = self._columns[member] = self._make_column(member, path, self._source.h5_node(path))
        return column

    def _make_column(self, member: str, path: str, node: h5py.Dataset) -> _Column:
        """Index datasets come back as int64; values in their own numeric type (native order)."""
        if member in ("offsets", "shapes", "codes"):
            return _Column(path, node, np.dtype(np.int64), filename=self.path)
        return _Column(path, node, _numeric_dtype(node, self.path), filename=self.path)

    # -- attributes (§6.1) ------------------------------------------------
    @property
    def attrs(self) -> dict[str, Any]:
        """Every attribute of the feature object as Python values (§4.6), read once.

        Raises
        ------
        EncodingError
            If an attribute holds a string that is not UTF-8 (§3.4).
        InvalidFileError
            If the HDF5 library cannot read an attribute.
        """
        if self._attrs is None:
            self._attrs = read_attributes(self._node(), self.path, self.hdf5_path)
        return dict(self._attrs)

    def _attr(self, name: str) -> Any:
        """One attribute, read when first asked for (a bad attribute never blocks the others, §6.1)."""
        try:
            return self._attr_values[name]
        except KeyError:
            value = self._attr_values[name] = read_attribute(self._node(), name, self.path, self.hdf5_path)
            return value

    def _typed_attr(self, name: str, types: tuple[type, ...], kind: str, clause: str) -> Any:
        """Attribute ``name`` when it is one of ``types`` (bool never counts as a number), None when absent.

        Raises
        ------
        InvalidFileError
            If the attribute has another type (E117).
        EncodingError
            If it is a string that is not UTF-8 (§3.4).
        """
        value = self._attr(name)
        if value is None or (isinstance(value, types) and not isinstance(value, bool)):
            return value
        text = repr(value)
        raise InvalidFileError(
            f"{self.path}: attribute {name!r} of {self.hdf5_path} is {text[:80]}{'...' if len(text) > 80 else ''}, "
            f"not {kind} ({clause}); the samples are not affected; {validate_advice(self.path)}",
            path=self.path,
            hdf5_path=self.hdf5_path,
        )

    @property
    def encoding_version(self) -> str:
        """The ``encoding_version`` attribute (§6.1), ``"1.0"`` when absent."""
        value = self._typed_attr("encoding_version", (str,), "a string", "§6.1")
        return spec.ENCODING_VERSION if value is None else str(value)

    @property
    def role(self) -> str | None:
        """``input``, ``target`` or ``metadata`` (§6.1), or None.

        Raises
        ------
        EncodingError, InvalidFileError
            If the attribute is not a UTF-8 string (this and the other
            attribute properties raise only when their attribute is asked for).
        """
        value: str | None = self._typed_attr("role", (str,), "a string", "§6.1")
        return value

    @property
    def description(self) -> str | None:
        """The feature description (§6.1), or None (errors as :attr:`role`)."""
        value: str | None = self._typed_attr("description", (str,), "a string", "§6.1")
        return value

    @property
    def units(self) -> str | None:
        """The physical units of the values (§6.1), or None (errors as :attr:`role`)."""
        value: str | None = self._typed_attr("units", (str,), "a string", "§6.1")
        return value

    @property
    def sample_rate(self) -> float | None:
        """The sampling rate in Hz (§6.1), or None (errors as :attr:`role`; it must be a number)."""
        value = self._typed_attr("sample_rate", (int, float), "a number", "§6.1")
        return None if value is None else float(value)

    @property
    def media_type(self) -> str | None:
        """The IANA media type of bytes samples (§6.6), or None (errors as :attr:`role`)."""
        value: str | None = self._typed_attr("media_type", (str,), "a string", "§6.6")
        return value

    @property
    def fingerprint(self) -> str | None:
        """The stored content fingerprint ``sha256:...`` (§8.1), or None (errors as :attr:`role`)."""
        value: str | None = self._typed_attr("fingerprint", (str,), "a string", "§8.1")
        return value

    @property
    def class_names(self) -> list[str] | None:
        """Class names of a categorical feature (§6.5); None for other encodings."""
        return None

    def _is_logical_bool(self) -> bool:
        """``logical_dtype = "bool"`` (§3.3), looked up once."""
        if self._logical_bool is None:
            self._logical_bool = bool(self._attr("logical_dtype") == "bool")
        return self._logical_bool

    # -- shape and storage --------------------------------------------------
    @property
    def dtype(self) -> np.dtype[Any]:
        """The numpy dtype of the values returned (native byte order)."""
        raise NotImplementedError

    @property
    def sample_shape(self) -> tuple[int | None, ...]:
        """The shape of one sample; None marks an axis whose length varies."""
        return ()

    @property
    def num_samples(self) -> int:
        """The number of samples stored (the first axis, §5.3)."""
        return int(self._main().shape[0])

    @property
    def chunk_rows(self) -> int | None:
        """Rows per chunk of the main dataset along its first axis; None when contiguous (§7)."""
        chunks = self._main().chunks
        return None if chunks is None else int(chunks[0])

    @property
    def compression(self) -> str | None:
        """The compression filter of the main dataset, or None (§3.5).

        ``"gzip"`` (deflate), ``"lzf"``, ``"szip"``, or ``"filter <id>"`` for
        another HDF5 filter; shuffle and fletcher32 are not compression.
        """
        dset = self._main()
        try:
            if dset.chunks is None:
                return None
            dcpl = dset.id.get_create_plist()
            filter_ids = [int(dcpl.get_filter(i)[0]) for i in range(dcpl.get_nfilters())]
        except LIBRARY_ERRORS as exc:
            if not is_library_failure(exc):
                raise
            raise self._damaged(exc, self._main_member or None) from exc
        for filter_id in filter_ids:
            if filter_id not in _NOT_COMPRESSION:
                return _COMPRESSION_NAMES.get(filter_id, f"filter {filter_id}")
        return None

    def __len__(self) -> int:
        return self.num_samples

    # -- reading ------------------------------------------------------------
    def _prepare(self) -> None:
        """Check, once, that every dataset of the feature can be decoded (§3.5)."""
        if self._filters_checked:
            return
        node = self._node()
        if isinstance(node, h5py.Dataset):
            _check_filters(node, self.path)
        else:
            for member in self._members:
                if member in node:
                    child = self._node(member)
                    if isinstance(child, h5py.Dataset):
                        _check_filters(child, self.path)
        self._filters_checked = True

    def read(self, indices: Indices) -> Any:
        """Read samples (§6).

        Parameters
        ----------
        indices
            An int (returns one sample), a slice, a sequence or 1-D integer
            array (any order, duplicates, negative indices), or a boolean mask.
            An int and a slice with step 1 are read without a read plan (one
            read per dataset); everything else follows :mod:`h5ml.reader.plan`.

        Returns
        -------
        Any
            See the table in the module docstring.

        Raises
        ------
        IndexError
            If an index is outside ``[-N, N)``.
        TypeError
            If ``indices`` is not one of the index types above.
        UnsupportedFilterError
            If a dataset of the feature uses a filter this HDF5 build lacks (§3.5).
        InvalidFileError
            If the stored structure is inconsistent (offsets, shapes), the
            HDF5 library fails to read the data (a corrupt chunk or a damaged
            file: the message names the dataset and the rows), or the read
            needs more data than the file stores (§10.4).
        EncodingError
            If stored strings, or the ``logical_dtype`` attribute, are not UTF-8 (§3.4).
        """
        try:
            if not self._filters_checked:
                self._prepare()
            if type(indices) is int or isinstance(indices, np.integer):  # not bool: type(True) is bool
                return self._read_one(indices)
            if isinstance(indices, slice):
                start, stop, step = indices.indices(self._count())
                if step == 1:
                    return self._read_range(start, max(start, stop))
            return self._read(indices)
        except H5MLError:
            raise
        except LIBRARY_ERRORS as exc:  # a failure of the library outside a data read
            if not is_library_failure(exc):
                raise
            raise self._damaged(exc) from exc

    def _count(self) -> int:
        """The number of samples, from the cached column (no HDF5 call)."""
        return self._column(self._main_member).rows

    def _read_one(self, index: int | np.integer[Any]) -> Any:
        """Read sample ``index`` (in ``[-N, N)``, checked with :func:`h5ml.reader.plan.check_index`) without a plan."""
        raise NotImplementedError

    def _read_range(self, start: int, stop: int) -> Any:
        """Read samples ``[start, stop)`` (``0 <= start <= stop <= N``) without a plan."""
        raise NotImplementedError

    def _read(self, indices: Indices) -> Any:
        """Read any other request through a read plan."""
        raise NotImplementedError

    __getitem__ = read

    def __repr__(self) -> str:
        return f"<h5ml {type(self).__name__} {self.hdf5_path!r} of {self.path!r}>"

    def _invalid(self, what: str, member: str | None = None) -> InvalidFileError:
        where = self.hdf5_path if member is None else f"{self.hdf5_path}/{member}"
        return InvalidFileError(
            f"{self.path}: {where}: {what}; the file is not a valid h5ml file: re-create it, and "
            f"{validate_advice(self.path)}",
            path=self.path,
            hdf5_path=where,
        )


class DenseFeature(Feature):
    """A ``dense`` feature: one numeric dataset of shape (N, *sample_shape) (§6.2).

    ``feature[idx]`` returns a numpy array (R, *sample_shape) in native byte
    order, bool for ``logical_dtype = "bool"`` and HDF5 enum booleans (§3.3);
    an int index returns the sample array of shape ``sample_shape`` (a numpy
    scalar when the dataset is 1-D).
    """

    encoding = "dense"

    @property
    def dtype(self) -> np.dtype[Any]:
        """The values' dtype: the stored numeric type in native order, or bool (§3.3)."""
        if self._is_logical_bool():
            return np.dtype(bool)
        return _numeric_dtype(self._main(), self.path)

    @property
    def sample_shape(self) -> tuple[int | None, ...]:
        """The dataset's axes after the first (§6.2)."""
        return tuple(int(d) for d in self._main().shape[1:])

    def _read_one(self, index: int | np.integer[Any]) -> Any:
        column = self._column()
        value = column.sample(check_index(index, column.rows))
        return value != 0 if self._is_logical_bool() else value

    def _read_range(self, start: int, stop: int) -> Any:
        block = self._column().read(start, stop)
        return block != 0 if self._is_logical_bool() else block

    def _read(self, indices: Indices) -> Any:
        values, _ = self._column().take(indices)
        return values != 0 if self._is_logical_bool() else values


class StringFeature(Feature):
    """A ``string`` feature: a dataset (N,) of strings (§6.4).

    Values come back as ``str`` whatever the writer chose: variable- or
    fixed-length, UTF-8 or ASCII (§3.4, case C06). A batch is a numpy object
    array (R,) of ``str``; an int index returns one ``str``.
    """

    encoding = "string"

    @property
    def dtype(self) -> np.dtype[Any]:
        """``object``: batches are object arrays of ``str``."""
        return np.dtype(object)

    def _make_column(self, member: str, path: str, node: h5py.Dataset) -> _Column:
        """Strings are read in the dataset's own type (h5py turns variable-length ones into bytes)."""
        return _string_column(path, node, self.path)

    def _decoded(self, column: _Column, start: int, stop: int) -> list[str]:
        """Rows ``[start, stop)`` as ``str``."""
        return self._decode(column.read(start, stop), start, stop)

    def _decode(self, raw: npt.NDArray[Any], start: int, stop: int) -> list[str]:
        try:
            return [decode_str(v) for v in raw.tolist()]
        except UnicodeDecodeError as exc:
            raise EncodingError(
                f"{self.path}: {self.hdf5_path} holds a string that is not valid UTF-8 in rows {start}..{stop - 1} "
                f"({exc.reason}); strings must be UTF-8 (§3.4)",
                path=self.path,
                hdf5_path=self.hdf5_path,
            ) from exc

    def _read_one(self, index: int | np.integer[Any]) -> Any:
        column = self._column()
        row = check_index(index, column.rows)
        return self._decoded(column, row, row + 1)[0]

    def _read_range(self, start: int, stop: int) -> Any:
        block = np.empty(stop - start, dtype=object)
        block[:] = self._decoded(self._column(), start, stop)
        return block

    def _read(self, indices: Indices) -> Any:
        column = self._column()
        plan = column.plan(indices)
        block = np.empty(plan.rows.shape[0], dtype=object)
        for start, stop, lo, hi in plan.iter_spans():
            raw = column.read(start, stop)
            if hi - lo != stop - start:
                raw = raw[plan.rows[lo:hi] - start]
            block[lo:hi] = self._decode(raw, start, stop)
        return plan.gather(block)


class CategoricalFeature(Feature):
    """A ``categorical`` feature: group with ``codes`` (N,) and ``class_names`` (K,) (§6.5).

    A batch is an int64 array (R,) of codes, -1 meaning missing; an int index
    returns one ``int``. :attr:`class_names` maps codes to names.
    """

    encoding = "categorical"
    _members: ClassVar[tuple[str, ...]] = ("codes", "class_names")
    _main_member: ClassVar[str] = "codes"

    def _reset(self) -> None:
        super()._reset()
        self._names: list[str] | None = None

    @property
    def dtype(self) -> np.dtype[Any]:
        """``int64``: codes come back as int64."""
        return np.dtype(np.int64)

    def _make_column(self, member: str, path: str, node: h5py.Dataset) -> _Column:
        """``class_names`` in the dataset's own string type; ``codes`` as int64."""
        if member == "class_names":
            return _string_column(path, node, self.path)
        return super()._make_column(member, path, node)

    @property
    def class_names(self) -> list[str]:
        """The class names (§6.5), read once; code k names ``class_names[k]``.

        Raises
        ------
        EncodingError
            If a class name is not UTF-8 (§3.4); the codes stay readable.
        InvalidFileError
            If the HDF5 library cannot read them, or the dataset declares more
            names than the file stores (§10.4).
        """
        if self._names is None:
            try:
                column = self._column("class_names")
                raw = column.read(0, column.rows).tolist()
            except H5MLError:
                raise
            except LIBRARY_ERRORS as exc:
                if not is_library_failure(exc):
                    raise
                raise self._damaged(exc, "class_names") from exc
            try:
                self._names = [decode_str(v) for v in raw]
            except UnicodeDecodeError as exc:
                k = next(i for i, v in enumerate(raw) if isinstance(v, bytes) and not _is_utf8(v))
                raise EncodingError(
                    f"{self.path}: {self.hdf5_path}/class_names: class name {k} is not valid UTF-8 ({exc.reason}); "
                    f"strings must be UTF-8 (§3.4); the codes are not affected; {validate_advice(self.path)}",
                    path=self.path,
                    hdf5_path=f"{self.hdf5_path}/class_names",
                ) from exc
        return list(self._names)

    def _read_one(self, index: int | np.integer[Any]) -> Any:
        column = self._column("codes")
        return int(column.sample(check_index(index, column.rows)))

    def _read_range(self, start: int, stop: int) -> Any:
        return self._column("codes").read(start, stop)

    def _read(self, indices: Indices) -> Any:
        values, scalar = self._column("codes").take(indices)
        return int(values) if scalar else values


class _OffsetFeature(Feature):
    """Shared logic of ``ragged`` and ``bytes``: ``values`` sliced by ``offsets`` (§6.3, §6.6)."""

    _members: ClassVar[tuple[str, ...]] = ("values", "offsets")
    _main_member: ClassVar[str] = "values"

    def _reset(self) -> None:
        super()._reset()
        self._offsets: npt.NDArray[np.int64] | None = None

    @property
    def num_samples(self) -> int:
        """The number of samples: ``len(offsets) - 1`` (§6.3)."""
        return max(0, int(self._node("offsets").shape[0]) - 1)

    def _count(self) -> int:
        return max(0, self._column("offsets").rows - 1)

    def _all_offsets(self) -> npt.NDArray[np.int64]:
        if self._offsets is not None:
            return self._offsets
        column = self._column("offsets")
        out = column.read(0, column.rows)
        if out.nbytes < OFFSETS_CACHE_BYTES:
            self._offsets = out
        return out

    def _cached_offsets(self) -> npt.NDArray[np.int64] | None:
        """All offsets when they are (or may be) kept in memory, else None (read them per request)."""
        if self._offsets is None and self._column("offsets").rows * 8 < OFFSETS_CACHE_BYTES:
            self._all_offsets()
        return self._offsets

    def _check_ranges(
        self, rows: npt.NDArray[np.int64], starts: npt.NDArray[np.int64], stops: npt.NDArray[np.int64]
    ) -> None:
        """Refuse value ranges outside ``values`` or decreasing (§6.3)."""
        total = self._column("values").rows
        bad = (starts < 0) | (stops < starts) | (stops > total)
        if bad.any():
            k = int(np.argmax(bad))
            raise self._invalid(
                f"offsets of sample {int(rows[k])} give the range [{int(starts[k])}, {int(stops[k])}), outside the "
                f"{total} values or decreasing (§6.3)",
                "offsets",
            )

    def _bounds(self, row: int) -> tuple[int, int]:
        """The value range ``[start, stop)`` of one sample, checked (§6.3)."""
        offsets = self._cached_offsets()
        pair = offsets[row : row + 2] if offsets is not None else self._column("offsets").read(row, row + 2)
        start, stop = int(pair[0]), int(pair[1])
        if start < 0 or stop < start or stop > self._column("values").rows:
            self._check_ranges(np.array([row]), pair[:1], pair[1:])
        return start, stop

    def _ranges(self, rows: npt.NDArray[np.int64]) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """Return the value ranges ``[starts, stops)`` of the sorted unique ``rows``."""
        offsets = self._cached_offsets()
        if offsets is not None:
            starts, stops = offsets[rows], offsets[rows + 1]
        else:
            column = self._column("offsets")
            plan = column.plan(np.concatenate([rows, rows + 1]))
            values = plan.gather(column.read_rows(plan))
            starts, stops = values[: rows.shape[0]], values[rows.shape[0] :]
        self._check_ranges(rows, starts, stops)
        return starts, stops

    def _range_segments(
        self, start: int, stop: int, as_bool: bool = False, copy: bool = True
    ) -> list[npt.NDArray[Any]]:
        """The values of samples ``[start, stop)``: one read of ``offsets`` (unless cached) and one of ``values``.

        One array per sample, copies unless ``copy`` is false (views of one buffer).
        """
        if stop <= start:
            return []
        offsets = self._cached_offsets()
        bounds = offsets[start : stop + 1] if offsets is not None else self._column("offsets").read(start, stop + 1)
        self._check_ranges(np.arange(start, stop, dtype=np.int64), bounds[:-1], bounds[1:])
        first = int(bounds[0])
        buf = self._column("values").read(first, int(bounds[-1]))
        if as_bool:
            buf = buf != 0
        cuts = (bounds - first).tolist()
        if copy:
            return [buf[a:b].copy() for a, b in itertools.pairwise(cuts)]
        return [buf[a:b] for a, b in itertools.pairwise(cuts)]

    def _segments(
        self, rows: npt.NDArray[np.int64], as_bool: bool = False, copy: bool = True
    ) -> tuple[list[npt.NDArray[Any]], npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """Read the values of the sorted unique ``rows``: one array per row (copies unless ``copy`` is false).

        Each span of ``values`` is read once; every row's range lies inside one
        span (spans are unions of the rows' ranges, widened to whole chunks when
        the values are compressed and a chunk does not fit the chunk cache).
        """
        values = self._column("values")
        starts, stops = self._ranges(rows)
        spans = merge_ranges(
            starts,
            stops,
            total=values.rows,
            chunk_rows=values.chunk_rows,
            compressed=values.whole_chunks,
            max_gap=values.max_gap,
        )
        empty = np.empty((0, *values.inner), dtype=bool if as_bool else values.dtype)
        out: list[npt.NDArray[Any]] = [empty] * rows.shape[0]
        needed = np.flatnonzero(stops > starts)
        if spans:
            span_starts = np.asarray([a for a, _ in spans], dtype=np.int64)
            owner = np.searchsorted(span_starts, starts[needed], side="right") - 1
            order = np.argsort(owner, kind="stable")
            needed, owner = needed[order], owner[order]
            cuts = np.searchsorted(owner, np.arange(len(spans) + 1))
            for k, (a, b) in enumerate(spans):
                buf = values.read(a, b)
                if as_bool:
                    buf = buf != 0
                for j in needed[cuts[k] : cuts[k + 1]].tolist():
                    piece = buf[int(starts[j]) - a : int(stops[j]) - a]
                    out[j] = piece.copy() if copy else piece
        return out, starts, stops

    def lengths(self, indices: Indices | None = None) -> Any:
        """Return sample lengths from ``offsets`` only (no values are read) (§6.3).

        Parameters
        ----------
        indices
            Samples to report (see :meth:`read`); None for every sample.

        Returns
        -------
        numpy.ndarray of int64, shape (R,), or int
            ``offsets[i + 1] - offsets[i]``: the number of rows of ``values`` of
            each sample (its first-axis length; its element count when the
            feature has ``shapes``; its byte count for bytes features).

        Raises
        ------
        IndexError, TypeError
            As :meth:`read`.
        InvalidFileError
            If offsets decrease or point outside ``values`` (§6.3), or the
            HDF5 library fails to read them.
        """
        try:
            if indices is None:
                offsets = self._all_offsets()
                self._check_ranges(np.arange(offsets.shape[0] - 1, dtype=np.int64), offsets[:-1], offsets[1:])
                return np.diff(offsets)
            if isinstance(indices, (int, np.integer)) and not isinstance(indices, bool):
                start, stop = self._bounds(check_index(indices, self._count()))
                return stop - start
            plan = plan_reads(indices, self._count())
            starts, stops = self._ranges(plan.rows)
            result = plan.gather(stops - starts)
            return int(result) if plan.scalar else result
        except H5MLError:
            raise
        except LIBRARY_ERRORS as exc:
            if not is_library_failure(exc):
                raise
            raise self._damaged(exc) from exc

    @staticmethod
    def _finish(plan: ReadPlan, unique: list[Any], copy: bool) -> Any:
        """Request order; duplicates get their own copy so results never alias each other."""
        result = plan.gather(unique)
        if plan.scalar or not isinstance(result, list) or not copy:
            return result
        seen: set[int] = set()
        for pos, j in enumerate(plan.inverse.tolist()):
            if j in seen:
                result[pos] = result[pos].copy()
            seen.add(j)
        return result


class RaggedFeature(_OffsetFeature):
    """A ``ragged`` feature: ``values`` (M, ...) sliced by ``offsets`` (N+1,) (§6.3).

    A batch is a list of R numpy arrays; sample i is
    ``values[offsets[i]:offsets[i + 1]]``, reshaped in C order to
    ``shapes[i]`` when the feature has ``shapes``. An int index returns one
    array. :meth:`lengths` reads only the offsets.
    """

    encoding = "ragged"
    _members: ClassVar[tuple[str, ...]] = ("values", "offsets", "shapes")

    def _reset(self) -> None:
        super()._reset()
        self._with_shapes: bool | None = None

    def _has_shapes(self) -> bool:
        if self._with_shapes is None:
            self._with_shapes = "shapes" in self._node()
        return self._with_shapes

    def _shapes_column(self) -> _Column | None:
        """The ``shapes`` column, checked against ``values`` (§6.3); None when the feature has none."""
        if not self._has_shapes():
            return None
        shapes = self._column("shapes")
        if len(shapes.inner) != 1 or self._column("values").inner:
            raise self._invalid("a ragged feature with shapes has 1-D values and shapes of shape (N, D) (§6.3)")
        return shapes

    def _reshaped(self, row: int, values: npt.NDArray[Any], shape: list[int]) -> npt.NDArray[Any]:
        """``values`` in C order to ``shape`` (``shapes[row]``), after checking the counts agree (§6.3)."""
        if math.prod(shape) != values.shape[0] or min(shape, default=0) < 0:
            raise self._invalid(
                f"sample {row} has shape {tuple(shape)} but {values.shape[0]} values (§6.3)",
                "shapes",
            )
        return values.reshape(shape)

    @property
    def dtype(self) -> np.dtype[Any]:
        """The values' dtype in native order, or bool for ``logical_dtype = "bool"``."""
        if self._is_logical_bool():
            return np.dtype(bool)
        return _numeric_dtype(self._main(), self.path)

    @property
    def sample_shape(self) -> tuple[int | None, ...]:
        """``(None, *values.shape[1:])``, or D times None when ``shapes`` is (N, D)."""
        if self._has_shapes():
            return (None,) * int(self._node("shapes").shape[1])
        return (None, *(int(d) for d in self._main().shape[1:]))

    def _read_one(self, index: int | np.integer[Any]) -> Any:
        row = check_index(index, self._count())
        shapes = self._shapes_column()
        start, stop = self._bounds(row)
        sample = self._column("values").read(start, stop)
        if self._is_logical_bool():
            sample = sample != 0
        if shapes is not None:
            sample = self._reshaped(row, sample, shapes.sample(row).tolist())
        return sample

    def _read_range(self, start: int, stop: int) -> Any:
        shapes = self._shapes_column()
        samples = self._range_segments(start, stop, as_bool=self._is_logical_bool())
        if shapes is not None and samples:
            for j, shape in enumerate(shapes.read(start, stop).tolist()):
                samples[j] = self._reshaped(start + j, samples[j], shape)
        return samples

    def _read(self, indices: Indices) -> Any:
        plan = plan_reads(indices, self._count())
        shapes = self._shapes_column()
        unique, _, _ = self._segments(plan.rows, as_bool=self._is_logical_bool())
        if shapes is not None:
            shapes_plan = shapes.plan(plan.rows)
            for j, shape in enumerate(shapes.read_rows(shapes_plan).tolist()):
                unique[j] = self._reshaped(int(plan.rows[j]), unique[j], shape)
        return self._finish(plan, unique, copy=True)


class BytesFeature(_OffsetFeature):
    """A ``bytes`` feature: ``values`` uint8 (M,) sliced by ``offsets`` (N+1,) (§6.6).

    A batch is a list of R ``bytes`` objects (one encoded file each, of type
    :attr:`media_type`); an int index returns one ``bytes``.
    """

    encoding = "bytes"

    @property
    def dtype(self) -> np.dtype[Any]:
        """``uint8``: the stored byte values."""
        return np.dtype(np.uint8)

    @property
    def sample_shape(self) -> tuple[int | None, ...]:
        """``(None,)``: a sample is a byte string of varying length."""
        return (None,)

    def _read_one(self, index: int | np.integer[Any]) -> Any:
        start, stop = self._bounds(check_index(index, self._count()))
        return self._column("values").read(start, stop).tobytes()

    def _read_range(self, start: int, stop: int) -> Any:
        return [seg.tobytes() for seg in self._range_segments(start, stop, copy=False)]

    def _read(self, indices: Indices) -> Any:
        plan = plan_reads(indices, self._count())
        segments, _, _ = self._segments(plan.rows, copy=False)
        return self._finish(plan, [seg.tobytes() for seg in segments], copy=False)


#: Reader class of each encoding (§6).
FEATURE_CLASSES: Final[dict[str, type[Feature]]] = {
    cls.encoding: cls for cls in (DenseFeature, StringFeature, CategoricalFeature, RaggedFeature, BytesFeature)
}


def open_feature(
    source: NodeSource, split: str, name: str, node: Any, num_samples: int | None = None
) -> Feature | None:
    """Check a split member and return the reader of its encoding (§5.3, §6).

    Only metadata is read (attributes, shapes, datatypes): the structure the
    encoding requires is checked here, once, so that reads never meet a
    dataset of the wrong rank or type.

    Parameters
    ----------
    source
        The open dataset (see :class:`NodeSource`).
    split, name
        The split and the member name.
    node
        The h5py object at ``/split/name``.
    num_samples
        The split's ``num_samples`` (§5.3): the feature must hold exactly that
        many samples. None skips that check.

    Returns
    -------
    Feature or None
        The reader, or None when the member has no ``encoding`` attribute (an
        object of unknown kind, ignored by readers, §5.5).

    Raises
    ------
    EncodingError
        If the encoding is not one this version defines, or its
        ``encoding_version`` has a MAJOR this reader does not implement (§6.1);
        if ``encoding`` is not UTF-8 (§3.4); if a dense or ragged feature's
        values are not numeric (§3.2).
    InvalidFileError
        If the HDF5 objects do not have the structure the encoding requires
        (members, ranks, datatypes, §6), the feature does not hold
        ``num_samples`` samples (§5.3), or the HDF5 library fails on them (a
        damaged file).
    """
    where = f"/{split}/{name}"
    try:
        return _open_feature(source, split, name, node, num_samples)
    except H5MLError:
        raise
    except LIBRARY_ERRORS as exc:
        if not is_library_failure(exc):
            raise
        raise damaged_file(source.path, where, "reading the structure of this feature", exc) from exc


class _Structure:
    """Checks of one feature's HDF5 objects (§6), each failure an InvalidFileError naming the object."""

    def __init__(self, source: NodeSource, where: str, encoding: str) -> None:
        self.source = source
        self.where = where
        self.encoding = encoding

    def invalid(self, what: str, member: str = "") -> InvalidFileError:
        filename = self.source.path
        where = f"{self.where}/{member}" if member else self.where
        return InvalidFileError(
            f"{filename}: {where}: {what}; the reader cannot read this {self.encoding} feature; "
            f"{validate_advice(filename)}",
            path=filename,
            hdf5_path=where,
        )

    def dataset(self, member: str, ranks: tuple[int, ...] | None = None) -> h5py.Dataset:
        """The member dataset ("" for the feature itself), of one of ``ranks`` (any rank >= 1 when None)."""
        node = self.source.h5_node(f"{self.where}/{member}" if member else self.where)
        if not isinstance(node, h5py.Dataset):
            raise self.invalid("is not a dataset", member)
        shape = node.shape
        if shape is None:
            raise self.invalid("has a null dataspace (no shape); it must hold one entry per sample", member)
        if ranks is None and len(shape) < 1:
            raise self.invalid("is a scalar dataset; a feature has a first (sample) axis (§5.3)", member)
        if ranks is not None and len(shape) not in ranks:
            want = " or ".join(f"{r}-D" for r in ranks)
            raise self.invalid(f"has shape {shape}; it must be {want} (§6)", member)
        return node

    def dtype(self, node: h5py.Dataset, member: str) -> np.dtype[Any]:
        try:
            dtype: np.dtype[Any] = node.dtype
        except (TypeError, ValueError) as exc:
            raise self.invalid(f"has an HDF5 datatype outside the storage profile ({exc}) (§3.2)", member) from exc
        return dtype

    def integers(self, node: h5py.Dataset, member: str) -> None:
        if self.dtype(node, member).kind not in "iu":
            raise self.invalid(f"has dtype {node.dtype}; it must hold integers (§6)", member)

    def strings(self, node: h5py.Dataset, member: str) -> None:
        if h5py.check_string_dtype(self.dtype(node, member)) is None:
            raise self.invalid(f"has dtype {node.dtype}; it must hold strings (§3.4)", member)

    def numbers(self, node: h5py.Dataset, member: str) -> None:
        _numeric_dtype(node, self.source.path, self.dtype(node, member))


def _open_feature(source: NodeSource, split: str, name: str, node: Any, num_samples: int | None) -> Feature | None:
    """:func:`open_feature` without the mapping of library errors."""
    where = f"/{split}/{name}"
    filename = source.path
    encoding = read_attribute(node, "encoding", filename, where)
    if encoding is None:
        return None
    version_text = read_attribute(node, "encoding_version", filename, where)
    if not isinstance(encoding, str) or not isinstance(version_text, str | None):
        raise InvalidFileError(
            f"{filename}: {where}: 'encoding' and 'encoding_version' must be strings (§6.1); "
            f"{validate_advice(filename)}",
            path=filename,
            hdf5_path=where,
        )
    cls = FEATURE_CLASSES.get(encoding)
    if cls is None:
        raise EncodingError(
            f"{filename}: {where} uses encoding {encoding!r}, which this reader (h5ml "
            f"{spec.FORMAT_VERSION_STRING}) does not implement; known encodings: {', '.join(spec.ENCODINGS)}; "
            "upgrade h5ml to read it",
            path=filename,
            hdf5_path=where,
        )
    if version_text is not None:
        try:
            major, _minor = spec.parse_version(version_text)
        except ValueError as exc:
            raise InvalidFileError(
                f"{filename}: {where}: encoding_version {version_text!r} is not MAJOR.MINOR (§6.1); "
                f"{validate_advice(filename)}",
                path=filename,
                hdf5_path=where,
            ) from exc
        ours = spec.parse_version(spec.ENCODING_VERSION)[0]
        if major != ours:
            raise EncodingError(
                f"{filename}: {where} is {encoding} encoding {version_text}; this reader implements "
                f"{encoding} {spec.ENCODING_VERSION}; upgrade h5ml",
                path=filename,
                hdf5_path=where,
            )
    kind = spec.ENCODINGS[encoding]
    if (kind == "dataset") != isinstance(node, h5py.Dataset):
        raise InvalidFileError(
            f"{filename}: {where} has encoding {encoding!r}, which is stored as a {kind}, but it is not one (§6); "
            f"{validate_advice(filename)}",
            path=filename,
            hdf5_path=where,
        )
    check = _Structure(source, where, encoding)
    if kind == "group":
        required, _optional = spec.ENCODING_COMPONENTS[encoding]
        missing = [m for m in required if m not in node]
        if missing:
            raise check.invalid(f"lacks the dataset(s) {', '.join(missing)} (§6)")
    count = _sample_count(check, encoding, node)
    if num_samples is not None and count != num_samples:
        raise check.invalid(
            f"holds {count} samples but split /{split} has num_samples = {num_samples}; every feature of a split "
            "holds exactly num_samples samples (§5.3)"
        )
    return cls(source, split, name)


def _sample_count(check: _Structure, encoding: str, node: Any) -> int:
    """Check the ranks and datatypes of the feature's datasets (§6.2-§6.6) and return its number of samples."""
    if encoding == "dense":
        dset = check.dataset("")
        check.numbers(dset, "")
        return int(dset.shape[0])
    if encoding == "string":
        dset = check.dataset("", (1,))
        check.strings(dset, "")
        return int(dset.shape[0])
    if encoding == "categorical":
        codes = check.dataset("codes", (1,))
        check.integers(codes, "codes")
        check.strings(check.dataset("class_names", (1,)), "class_names")
        return int(codes.shape[0])
    offsets = check.dataset("offsets", (1,))
    check.integers(offsets, "offsets")
    if offsets.shape[0] < 1:
        raise check.invalid("is empty; offsets hold num_samples + 1 entries, starting at 0 (§6.3)", "offsets")
    count = int(offsets.shape[0]) - 1
    if encoding == "bytes":
        values = check.dataset("values", (1,))
        if check.dtype(values, "values") != np.dtype(np.uint8):
            raise check.invalid(f"has dtype {values.dtype}; bytes values are uint8 (§6.6)", "values")
        return count
    values = check.dataset("values")
    check.numbers(values, "values")
    if "shapes" in node:
        shapes = check.dataset("shapes", (2,))
        check.integers(shapes, "shapes")
        if int(shapes.shape[0]) != count or len(values.shape) != 1:
            raise check.invalid(
                f"has shape {shapes.shape} beside values of shape {values.shape} and {count + 1} offsets; with "
                "shapes, values are 1-D and shapes is (num_samples, D) (§6.3)",
                "shapes",
            )
    return count
