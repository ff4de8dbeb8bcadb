"""The base of the feature readers: :class:`Feature`, and what it needs from its file (§5.2, §6.1).

A :class:`Feature` reads the samples of one feature of one split, in any order,
with duplicates (case C01), returning plain Python and numpy values; each
encoding of §6 is a subclass (:mod:`h5ml.reader.dense`, :mod:`~h5ml.reader.strings`,
:mod:`~h5ml.reader.categorical`, :mod:`~h5ml.reader.ragged`,
:mod:`~h5ml.reader.bytes`; :data:`h5ml.reader.structure.FEATURE_CLASSES` maps
each encoding to its class):

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
``dataset[i]`` costs). Unfiltered numeric data wholly stored in the file
(contiguous, or in allocated chunks of whole rows) is copied out of a memory
map of the file (:mod:`h5ml.reader.direct`): a batch in any order is one copy,
without a read plan and without a call into HDF5. Every other request follows
:mod:`h5ml.reader.plan`: the unique rows are read with one hyperslab read per
span (never h5py fancy indexing) and put back in request order. Each needed
chunk of filtered (compressed or checksummed) data is decoded once: when the
chunk cache holds a chunk (the reader sizes it so, §7.3), spans are runs of the
requested rows and HDF5 decodes each chunk once into its cache; otherwise
spans are whole chunks, each decoded by one read. Unfiltered data that cannot
be mapped is read with no chunk cache (the reader opens it so, §7.3): spans
are runs of the requested rows, read straight from the file. Ragged and bytes
features read their ``offsets`` first (kept in memory when they take less
than :data:`h5ml.reader.offsets.OFFSETS_CACHE_BYTES`), then the value spans
the rows need. Every path returns the same values and types: numbers in
native byte order; ``logical_dtype = "bool"`` and HDF5 enum booleans as numpy
``bool``; strings always as ``str`` (§3.4, C06). Every read is counted in the
dataset's :attr:`~h5ml.reader.dataset.Dataset.read_stats`.

What a feature holds: its source (a :class:`h5ml.reader.dataset.Dataset`),
the split and feature names, and, once read, one
:class:`~h5ml.reader.column.Column` per HDF5 dataset: the h5py dataset
object, the rows, chunk rows, filters, dtypes, HDF5 dataspaces and types, and
for unfiltered data a reader of the file's memory map. Those belong to the
file handle of one process: a feature asks its source for the h5py object on
each read and rebuilds the column when the source hands out a new one (the
file was reopened in a forked child, or after an unpickle). A feature pickles
by its source, split and name; the memory maps are the source's, released by
``Dataset.close()``.

Invalid and damaged files (§9, §10): a feature either returns the stored
values or raises an :class:`h5ml.H5MLError` that names the file, the HDF5
object and what to do. :func:`h5ml.reader.structure.open_feature` checks the
structure of the encoding (ranks, datatypes, one sample per ``num_samples``)
before any read; a failure of the HDF5 library while reading (a corrupt or
checksum-failing chunk, a damaged object header) becomes
:class:`~h5ml.errors.InvalidFileError` naming the dataset and the rows; a read
that would allocate more than :data:`h5ml.reader.column.TRUSTED_READ_BYTES` is
first compared with the data the dataset really stores, so a small file that
merely declares a huge dataset is refused instead of exhausting memory
(§10.4). Attributes are read one at a time, when asked for: an optional
attribute that is not UTF-8 raises :class:`~h5ml.errors.EncodingError` when
that attribute is asked for and never makes the samples unreadable (values are
not "repaired" with replacement characters: a reader returns what is stored or
says why it cannot).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar, Final, Protocol

import h5py
import numpy as np
import numpy.typing as npt

from h5ml import spec
from h5ml.errors import H5MLError, InvalidFileError
from h5ml.model.booleans import bool_enum_base, refuse_non_members
from h5ml.model.failures import LIBRARY_ERRORS, damaged_file, is_library_failure, validate_advice
from h5ml.model.hdf5 import read_attribute, read_attributes
from h5ml.reader.column import Column, numeric_dtype
from h5ml.reader.file_map import FileMap
from h5ml.reader.filters import check_filters
from h5ml.reader.plan import Indices
from h5ml.reader.read_stats import ReadStats
from h5ml.reader.statistics import Statistics, read_statistics
from h5ml.spec.chunks import VLEN_ELEMENT_BYTES

__all__ = ["Feature", "FeatureObject", "NodeSource"]

#: Names of the HDF5 compression filters h5py knows, and of zstd, which the writer stores (HDF5 filter ids).
_COMPRESSION_NAMES: Final = {1: "gzip", 4: "szip", 32000: "lzf", 32015: "zstd"}
#: Core filters that do not compress: shuffle and fletcher32 (§3.5).
_NOT_COMPRESSION: Final = frozenset(fid for fid, name in spec.CORE_FILTERS.items() if name != "deflate")


class NodeSource(Protocol):
    """What a feature needs from its file: the path, its HDF5 objects, its memory map, and where reads are counted.

    :class:`h5ml.reader.dataset.Dataset` is the source of every feature the
    reader opens.
    """

    @property
    def path(self) -> str:
        """The file path."""
        ...

    @property
    def read_stats(self) -> ReadStats:
        """Where the feature's reads are counted (§7.3)."""
        ...

    def h5_node(self, hdf5_path: str) -> Any:
        """Return the h5py group or dataset at ``hdf5_path`` (raises KeyError if absent)."""
        ...

    def file_map(self) -> FileMap | None:
        """The memory map of the file in this process, or None to read through h5py only (§7.3)."""
        ...

    @property
    def verify(self) -> bool:
        """Whether every chunk is checked against its checksum before its rows are returned (§8.4)."""
        ...

    def check_file_size(self, where: str, rows: str) -> None:
        """Raise InvalidFileError when the file shrank since it was opened (rows read through HDF5 may be zeros)."""
        ...


def _verify(source: NodeSource) -> bool:
    """Whether ``source`` asks for verified reads (a source without ``verify``, such as a test's, does not)."""
    return bool(getattr(source, "verify", False))


class FeatureObject:
    """What a feature is in its file: its names, HDF5 objects, columns and attributes (§5.2, §6.1).

    The base of :class:`Feature`, which adds the reads (see there for the
    parameters); it holds what stays fixed while the file is open.
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
        self._bool_enum = False  # the values dataset is the boolean enumeration (set with _logical_bool)
        self._columns: dict[str, Column] = {}

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

    def _column(self, member: str = "") -> Column:
        """The cached :class:`~h5ml.reader.column.Column` of ``member`` ("" for the feature dataset), rebuilt after a reopen."""
        column = self._columns.get(member)
        if column is not None and column.node is self._source.h5_node(column.path):
            return column
        path = f"{self.hdf5_path}/{member}" if member else self.hdf5_path
        column = self._columns[member] = self._make_column(member, path, self._source.h5_node(path))
        return column

    def _make_column(self, member: str, path: str, node: h5py.Dataset) -> Column:
        """Index datasets come back as int64; values in their own numeric type (native order)."""
        if member in ("offsets", "shapes", "codes"):
            return self._new_column(path, node, np.dtype(np.int64))
        return self._new_column(path, node, numeric_dtype(node, self.path))

    def _new_column(self, path: str, node: h5py.Dataset, dtype: np.dtype[Any], row_nbytes: int | None = None) -> Column:
        """A column of ``node`` read as ``dtype``, counted in the source's stats and mapped through its file map."""
        s = self._source
        return Column(path, node, dtype, row_nbytes, self.path, s.read_stats, s.file_map, s.check_file_size, _verify(s))

    def _string_column(self, path: str, node: h5py.Dataset) -> Column:
        """A column of strings, read in the dataset's own type (16 stored bytes per variable-length string)."""
        return self._new_column(path, node, node.dtype, VLEN_ELEMENT_BYTES if node.dtype.kind == "O" else None)

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
        """One attribute, read when first asked for (a bad attribute never blocks the others, §6.1).

        Decoding asks for the attributes of §6.1 by name only, so user
        attributes never take part in it (SPEC §4.7-R1), nor attributes of a
        higher encoding MINOR (SPEC §6.1-R6).
        """
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
        return None if value is None else float(value)  # SPEC §6.7-R4: binary64, whatever the stored type

    @property
    def statistics(self) -> Statistics:
        """The summary statistics the feature stores (§6.7), as binary64 numbers (SPEC §6.7-R4).

        See :func:`h5ml.reader.statistics.read_statistics` (returns, raises).
        """
        return read_statistics(self._typed_attr)

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


class Feature(FeatureObject):
    """Base class of the feature readers (§6.1).

    Parameters
    ----------
    source
        The open dataset the feature belongs to (a :class:`NodeSource`;
        normally a :class:`h5ml.reader.dataset.Dataset`).
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

    def _is_logical_bool(self) -> bool:
        """Whether the values are booleans: ``logical_dtype = "bool"`` (SPEC §3.3-R3) or the boolean enumeration."""
        if self._logical_bool is None:
            self._bool_enum = bool_enum_base(self._main().id.get_type()) is not None  # read as its base integers
            self._logical_bool = bool(self._bool_enum or self._attr("logical_dtype") == "bool")
        return self._logical_bool

    def _booleans(self, values: Any) -> Any:
        """Stored integers (an array or a numpy scalar) as numpy bool, after checking that each is 0 or 1.

        Raises
        ------
        InvalidFileError
            If a stored value is neither 0 nor 1, in a uint8 feature with
            ``logical_dtype = "bool"`` or in the boolean enumeration (E142,
            SPEC §3.3-R5: never returned as true).
        """
        member = self._main_member
        refuse_non_members(values, self.path, f"{self.hdf5_path}/{member}" if member else self.hdf5_path)
        return values != 0

    def _values_dtype(self) -> np.dtype[Any]:
        """The main dataset's numeric dtype in native order, or bool for booleans (§3.2, §3.3)."""
        if self._is_logical_bool():
            return np.dtype(bool)
        return numeric_dtype(self._main(), self.path)

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

        ``"gzip"`` (deflate), ``"zstd"``, ``"lzf"``, ``"szip"``, or ``"filter <id>"`` for
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
        # The cached column's rows (no HDF5 call; the column is rebuilt after a reopen or a fork): the count the
        # reads check their indices against. The reader opens files read-only, so it never changes while open.
        return self._count()

    # -- reading ------------------------------------------------------------
    def _prepare(self) -> None:
        """Check, once, that every dataset of the feature can be decoded (§3.5)."""
        if self._filters_checked:
            return
        node = self._node()
        if isinstance(node, h5py.Dataset):
            check_filters(node, self.path)
        else:
            for member in self._members:
                if member in node:
                    child = self._node(member)
                    if isinstance(child, h5py.Dataset):
                        check_filters(child, self.path)
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
        return self._guarded(self._dispatch, indices)

    def _dispatch(self, indices: Indices) -> Any:
        """:meth:`read` once the filters are checked: one sample, a range of step 1, or any other request."""
        if type(indices) is int or isinstance(indices, np.integer):  # not bool: type(True) is bool
            return self._read_one(indices)
        if isinstance(indices, slice):
            start, stop, step = indices.indices(self._count())
            if step == 1:
                return self._read_range(start, max(start, stop))
        return self._read(indices)

    def read_checked(self, rows: npt.NDArray[np.int64]) -> Any:
        """Read a batch of rows already checked against this feature's samples: :meth:`read` without a second check.

        The path of :meth:`h5ml.reader.split.Split.read`, which checks a
        request once, against the split's ``num_samples`` (every feature
        holds that many samples, §5.3), for all the features it reads.

        Parameters
        ----------
        rows
            A 1-D int64 array of rows, each in ``[0, N)``, in request order
            (duplicates allowed), as :func:`h5ml.reader.plan.normalize_indices`
            returns them; never changed.

        Returns
        -------
        Any
            What :meth:`read` returns for that array (see the module docstring).

        Raises
        ------
        UnsupportedFilterError, InvalidFileError, EncodingError
            As :meth:`read`.
        """
        return self._guarded(self._read_rows, rows)

    def _guarded(self, read: Callable[[Any], Any], request: Any) -> Any:
        """``read(request)`` once the filters are checked; a library failure outside a data read is a damaged file."""
        try:
            if not self._filters_checked:
                self._prepare()
            return read(request)
        except H5MLError:
            raise
        except LIBRARY_ERRORS as exc:  # a failure of the library outside a data read
            if not is_library_failure(exc):
                raise
            raise self._damaged(exc) from exc

    def _read_rows(self, rows: npt.NDArray[np.int64]) -> Any:
        """Read checked rows (:meth:`read_checked`); unless an encoding does better, as any request (:meth:`_read`)."""
        return self._read(rows)

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
