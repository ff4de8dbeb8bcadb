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

Reads follow :mod:`h5ml.plan`: the unique rows are read with one slice read
per span (never h5py fancy indexing; compressed data by whole chunks, so each
chunk is decoded once) and put back in request order. Ragged and bytes
features read their ``offsets`` first (kept in memory when they take less than
:data:`OFFSETS_CACHE_BYTES`), then the value spans the rows need. Numbers come
back in native byte order; ``logical_dtype = "bool"`` and HDF5 enum booleans
come back as numpy ``bool``; strings always come back as ``str`` (§3.4, C06).

Features never hold an open file: they ask their source (a
:class:`h5ml.reader.Dataset`) for HDF5 objects on each use, so they pickle by
path and keep working after a fork.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar, Final, Protocol

import h5py
import numpy as np
import numpy.typing as npt

from h5ml import spec
from h5ml.attrs import decode_str, read_attrs
from h5ml.errors import EncodingError, InvalidFileError, UnsupportedFilterError
from h5ml.plan import Indices, ReadPlan, merge_ranges, plan_reads

__all__ = [
    "FEATURE_CLASSES",
    "OFFSETS_CACHE_BYTES",
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
#: Uncompressed data: two runs of rows separated by at most this many bytes are
#: read as one span (one library call instead of two).
_GAP_BYTES: Final = 64 << 10
#: Upper bound of one span's buffer, so that a sparse request over compressed
#: data does not decode the whole dataset into memory at once.
_SPAN_BYTES: Final = 64 << 20
#: Bytes one variable-length string element takes inside a chunk.
_VLEN_BYTES: Final = 16
#: Names of the HDF5 compression filters h5py knows (HDF5 filter ids).
_COMPRESSION_NAMES: Final = {1: "gzip", 4: "szip", 32000: "lzf"}
#: Core filters that do not compress: shuffle and fletcher32 (§3.5).
_NOT_COMPRESSION: Final = frozenset(fid for fid, name in spec.CORE_FILTERS.items() if name != "deflate")


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


def _row_plan(dset: h5py.Dataset, indices: Indices, row_nbytes: int) -> ReadPlan:
    """Plan reads of ``indices`` along the first axis of ``dset`` (chunk- and size-aware)."""
    row_nbytes = max(1, row_nbytes)
    chunks = dset.chunks
    return plan_reads(
        indices,
        int(dset.shape[0]),
        chunk_rows=int(chunks[0]) if chunks is not None else None,
        compressed=_has_filters(dset),
        max_gap=_GAP_BYTES // row_nbytes,
        max_span_rows=max(1, _SPAN_BYTES // row_nbytes),
    )


def _read_numeric(dset: h5py.Dataset, plan: ReadPlan, dtype: np.dtype[Any]) -> npt.NDArray[Any]:
    """Read the unique rows of ``plan`` from a numeric dataset into one array (U, *dset.shape[1:])."""
    sample_shape = tuple(int(d) for d in dset.shape[1:])
    block = np.empty((plan.rows.shape[0], *sample_shape), dtype=dtype)
    for start, stop, lo, hi in plan.iter_spans():
        if hi - lo == stop - start:
            dset.read_direct(block, np.s_[start:stop], np.s_[lo:hi])
        else:
            buf = np.empty((stop - start, *sample_shape), dtype=dtype)
            dset.read_direct(buf, np.s_[start:stop])
            block[lo:hi] = buf[plan.rows[lo:hi] - start]
    return block


def _numeric_dtype(dset: h5py.Dataset, filename: str) -> np.dtype[Any]:
    dtype = dset.dtype
    if dtype.kind not in "biuf":
        raise EncodingError(
            f"{filename}: dataset {dset.name} has dtype {dtype}, which is not a numeric type of the storage profile "
            "(§3.2); the file is not a valid h5ml file",
            path=filename,
            hdf5_path=dset.name,
        )
    return _native(dtype)


def _rows_nbytes(dset: h5py.Dataset, itemsize: int | None = None) -> int:
    size = dset.dtype.itemsize if itemsize is None else itemsize
    return int(size * math.prod(int(d) for d in dset.shape[1:]))


class Feature:
    """Base class of the feature readers (§6.1).

    Parameters
    ----------
    source
        The open dataset the feature belongs to (anything with ``path`` and
        ``h5_node``; normally a :class:`h5ml.reader.Dataset`).
    split
        The split name.
    name
        The feature name.

    Notes
    -----
    Use ``feature[idx]`` or :meth:`read`. ``idx`` may be an integer (one
    sample), a slice, a list or 1-D integer array in any order with duplicates
    and negative indices, or a boolean mask; out-of-range indices raise
    IndexError. Instances pickle by (file, split, feature) and reopen lazily.
    """

    #: The encoding this class reads (§6).
    encoding: ClassVar[str] = ""
    #: Members (datasets) of a group encoding, checked for filters on first read.
    _members: ClassVar[tuple[str, ...]] = ()

    def __init__(self, source: NodeSource, split: str, name: str) -> None:
        self._source = source
        self._split = split
        self._name = name
        self._reset()

    def _reset(self) -> None:
        self._attrs: dict[str, Any] | None = None
        self._filters_checked = False

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
        return self._source.h5_node(self.hdf5_path if member is None else f"{self.hdf5_path}/{member}")

    def _main(self) -> h5py.Dataset:
        """The dataset that holds the samples (or the values) of this feature."""
        return self._node()

    # -- attributes (§6.1) ------------------------------------------------
    @property
    def attrs(self) -> dict[str, Any]:
        """Every attribute of the feature object as Python values (§4.6), read once."""
        if self._attrs is None:
            self._attrs = read_attrs(self._node())
        return dict(self._attrs)

    def _attr(self, name: str) -> Any:
        if self._attrs is None:
            self._attrs = read_attrs(self._node())
        return self._attrs.get(name)

    @property
    def encoding_version(self) -> str:
        """The ``encoding_version`` attribute (§6.1), ``"1.0"`` when absent."""
        value = self._attr("encoding_version")
        return str(value) if value is not None else spec.ENCODING_VERSION

    @property
    def role(self) -> str | None:
        """``input``, ``target`` or ``metadata`` (§6.1), or None."""
        value = self._attr("role")
        return None if value is None else str(value)

    @property
    def description(self) -> str | None:
        """The feature description (§6.1), or None."""
        value = self._attr("description")
        return None if value is None else str(value)

    @property
    def units(self) -> str | None:
        """The physical units of the values (§6.1), or None."""
        value = self._attr("units")
        return None if value is None else str(value)

    @property
    def sample_rate(self) -> float | None:
        """The sampling rate in Hz (§6.1), or None."""
        value = self._attr("sample_rate")
        return None if value is None else float(value)

    @property
    def media_type(self) -> str | None:
        """The IANA media type of bytes samples (§6.6), or None."""
        value = self._attr("media_type")
        return None if value is None else str(value)

    @property
    def fingerprint(self) -> str | None:
        """The stored content fingerprint ``sha256:...`` (§8.1), or None."""
        value = self._attr("fingerprint")
        return None if value is None else str(value)

    @property
    def class_names(self) -> list[str] | None:
        """Class names of a categorical feature (§6.5); None for other encodings."""
        return None

    def _is_logical_bool(self) -> bool:
        return bool(self._attr("logical_dtype") == "bool")

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
        if dset.chunks is None:
            return None
        dcpl = dset.id.get_create_plist()
        for i in range(dcpl.get_nfilters()):
            filter_id = int(dcpl.get_filter(i)[0])
            if filter_id in _NOT_COMPRESSION:
                continue
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
                child = node.get(member)
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

        Returns
        -------
        Any
            See the table in the module docstring.

        Raises
        ------
        IndexError
            If an index is outside ``[-N, N)``.
        UnsupportedFilterError
            If a dataset of the feature uses a filter this HDF5 build lacks (§3.5).
        InvalidFileError
            If the stored structure is inconsistent (offsets, shapes).
        EncodingError
            If stored strings are not UTF-8 (§3.4).
        """
        self._prepare()
        return self._read(indices)

    def _read(self, indices: Indices) -> Any:
        raise NotImplementedError

    def __getitem__(self, indices: Indices) -> Any:
        return self.read(indices)

    def __repr__(self) -> str:
        return f"<h5ml {type(self).__name__} {self.hdf5_path!r} of {self.path!r}>"

    def _invalid(self, what: str, member: str | None = None) -> InvalidFileError:
        where = self.hdf5_path if member is None else f"{self.hdf5_path}/{member}"
        return InvalidFileError(
            f"{self.path}: {where}: {what}; the file is not a valid h5ml file, re-create it or check it with "
            "`h5ml validate --deep`",
            path=self.path,
            hdf5_path=where,
        )


class DenseFeature(Feature):
    """A ``dense`` feature: one numeric dataset of shape (N, *sample_shape) (§6.2).

    ``feature[idx]`` returns a numpy array (R, *sample_shape) in native byte
    order, bool for ``logical_dtype = "bool"`` and HDF5 enum booleans (§3.3);
    an int index returns the sample array of shape ``sample_shape``.
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

    def _read(self, indices: Indices) -> Any:
        dset = self._main()
        plan = _row_plan(dset, indices, _rows_nbytes(dset))
        block = _read_numeric(dset, plan, _numeric_dtype(dset, self.path))
        if self._is_logical_bool():
            block = block != 0
        return plan.gather(block)


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

    def _read(self, indices: Indices) -> Any:
        dset = self._main()
        plan = _row_plan(dset, indices, _VLEN_BYTES if dset.dtype.kind == "O" else dset.dtype.itemsize)
        block = np.empty(plan.rows.shape[0], dtype=object)
        for start, stop, lo, hi in plan.iter_spans():
            raw = dset[start:stop]
            if hi - lo != stop - start:
                raw = raw[plan.rows[lo:hi] - start]
            try:
                block[lo:hi] = [decode_str(v) for v in raw.tolist()]
            except UnicodeDecodeError as exc:
                raise EncodingError(
                    f"{self.path}: {dset.name} holds a string that is not valid UTF-8 in rows {start}..{stop - 1} "
                    f"({exc.reason}); strings must be UTF-8 (§3.4)",
                    path=self.path,
                    hdf5_path=dset.name,
                ) from exc
        return plan.gather(block)


class CategoricalFeature(Feature):
    """A ``categorical`` feature: group with ``codes`` (N,) and ``class_names`` (K,) (§6.5).

    A batch is an int64 array (R,) of codes, -1 meaning missing; an int index
    returns one ``int``. :attr:`class_names` maps codes to names.
    """

    encoding = "categorical"
    _members: ClassVar[tuple[str, ...]] = ("codes", "class_names")

    def _reset(self) -> None:
        super()._reset()
        self._names: list[str] | None = None

    def _main(self) -> h5py.Dataset:
        return self._node("codes")

    @property
    def dtype(self) -> np.dtype[Any]:
        """``int64``: codes come back as int64."""
        return np.dtype(np.int64)

    @property
    def class_names(self) -> list[str]:
        """The class names (§6.5), read once; code k names ``class_names[k]``."""
        if self._names is None:
            dset = self._node("class_names")
            self._names = [decode_str(v) for v in dset[()].tolist()]
        return list(self._names)

    def _read(self, indices: Indices) -> Any:
        dset = self._main()
        plan = _row_plan(dset, indices, dset.dtype.itemsize)
        block = _read_numeric(dset, plan, np.dtype(np.int64))
        result = plan.gather(block)
        return int(result) if plan.scalar else result


class _OffsetFeature(Feature):
    """Shared logic of ``ragged`` and ``bytes``: ``values`` sliced by ``offsets`` (§6.3, §6.6)."""

    _members: ClassVar[tuple[str, ...]] = ("values", "offsets")

    def _reset(self) -> None:
        super()._reset()
        self._offsets: npt.NDArray[np.int64] | None = None

    def _main(self) -> h5py.Dataset:
        return self._node("values")

    @property
    def num_samples(self) -> int:
        """The number of samples: ``len(offsets) - 1`` (§6.3)."""
        return max(0, int(self._node("offsets").shape[0]) - 1)

    def _all_offsets(self) -> npt.NDArray[np.int64]:
        if self._offsets is not None:
            return self._offsets
        dset = self._node("offsets")
        out = np.empty(dset.shape, dtype=np.int64)
        if out.size:
            dset.read_direct(out)
        if out.nbytes < OFFSETS_CACHE_BYTES:
            self._offsets = out
        return out

    def _ranges(self, rows: npt.NDArray[np.int64]) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """Return the value ranges ``[starts, stops)`` of the sorted unique ``rows``."""
        dset = self._node("offsets")
        if self._offsets is not None or dset.shape[0] * 8 < OFFSETS_CACHE_BYTES:
            offsets = self._all_offsets()
            starts, stops = offsets[rows], offsets[rows + 1]
        else:
            plan = _row_plan(dset, np.concatenate([rows, rows + 1]), 8)
            values = plan.gather(_read_numeric(dset, plan, np.dtype(np.int64)))
            starts, stops = values[: rows.shape[0]], values[rows.shape[0] :]
        total = int(self._node("values").shape[0])
        bad = (starts < 0) | (stops < starts) | (stops > total)
        if bad.any():
            row = int(rows[np.argmax(bad)])
            raise self._invalid(
                f"offsets of sample {row} give the range [{int(starts[np.argmax(bad)])}, "
                f"{int(stops[np.argmax(bad)])}), outside the {total} values or decreasing (§6.3)",
                "offsets",
            )
        return starts, stops

    def _segments(
        self, rows: npt.NDArray[np.int64], as_bool: bool = False
    ) -> tuple[list[npt.NDArray[Any]], npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """Read the values of the sorted unique ``rows``: one array per row (copies, not views).

        Each span of ``values`` is read once; every row's range lies inside one
        span (spans are unions of the rows' ranges, widened to whole chunks when
        the values are compressed).
        """
        values = self._node("values")
        dtype = _numeric_dtype(values, self.path)
        inner = tuple(int(d) for d in values.shape[1:])
        starts, stops = self._ranges(rows)
        chunks = values.chunks
        spans = merge_ranges(
            starts,
            stops,
            total=int(values.shape[0]),
            chunk_rows=int(chunks[0]) if chunks is not None else None,
            compressed=_has_filters(values),
            max_gap=_GAP_BYTES // max(1, _rows_nbytes(values)),
        )
        out: list[npt.NDArray[Any]] = [np.empty((0, *inner), dtype=bool if as_bool else dtype)] * rows.shape[0]
        needed = np.flatnonzero(stops > starts)
        if spans:
            span_starts = np.asarray([a for a, _ in spans], dtype=np.int64)
            owner = np.searchsorted(span_starts, starts[needed], side="right") - 1
            order = np.argsort(owner, kind="stable")
            needed, owner = needed[order], owner[order]
            cuts = np.searchsorted(owner, np.arange(len(spans) + 1))
            for k, (a, b) in enumerate(spans):
                buf = np.empty((b - a, *inner), dtype=dtype)
                values.read_direct(buf, np.s_[a:b])
                if as_bool:
                    buf = buf != 0
                for j in needed[cuts[k] : cuts[k + 1]].tolist():
                    out[j] = buf[int(starts[j]) - a : int(stops[j]) - a].copy()
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
        """
        if indices is None:
            return np.diff(self._all_offsets())
        plan = plan_reads(indices, self.num_samples)
        starts, stops = self._ranges(plan.rows)
        result = plan.gather(stops - starts)
        return int(result) if plan.scalar else result

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

    def _has_shapes(self) -> bool:
        return "shapes" in self._node()

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

    def _read(self, indices: Indices) -> Any:
        plan = plan_reads(indices, self.num_samples)
        unique, starts, stops = self._segments(plan.rows, as_bool=self._is_logical_bool())
        if self._has_shapes():
            shapes_dset = self._node("shapes")
            if len(shapes_dset.shape) != 2 or len(self._main().shape) != 1:
                raise self._invalid("a ragged feature with shapes has 1-D values and shapes of shape (N, D) (§6.3)")
            shapes_plan = _row_plan(shapes_dset, plan.rows, _rows_nbytes(shapes_dset))
            shapes = _read_numeric(shapes_dset, shapes_plan, np.dtype(np.int64))
            for j, shape in enumerate(shapes.tolist()):
                if math.prod(shape) != int(stops[j] - starts[j]) or min(shape, default=0) < 0:
                    raise self._invalid(
                        f"sample {int(plan.rows[j])} has shape {tuple(shape)} but {int(stops[j] - starts[j])} "
                        "values (§6.3)",
                        "shapes",
                    )
                unique[j] = unique[j].reshape(shape)
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

    def _read(self, indices: Indices) -> Any:
        plan = plan_reads(indices, self.num_samples)
        segments, _, _ = self._segments(plan.rows)
        return self._finish(plan, [seg.tobytes() for seg in segments], copy=False)


#: Reader class of each encoding (§6).
FEATURE_CLASSES: Final[dict[str, type[Feature]]] = {
    cls.encoding: cls for cls in (DenseFeature, StringFeature, CategoricalFeature, RaggedFeature, BytesFeature)
}


def open_feature(source: NodeSource, split: str, name: str, node: Any) -> Feature | None:
    """Check a split member and return the reader of its encoding (§6.1).

    Parameters
    ----------
    source
        The open dataset (see :class:`NodeSource`).
    split, name
        The split and the member name.
    node
        The h5py object at ``/split/name``.

    Returns
    -------
    Feature or None
        The reader, or None when the member has no ``encoding`` attribute (an
        object of unknown kind, ignored by readers, §5.5).

    Raises
    ------
    EncodingError
        If the encoding is not one this version defines, or its
        ``encoding_version`` has a MAJOR this reader does not implement (§6.1).
    InvalidFileError
        If the HDF5 objects do not have the structure the encoding requires (§6).
    """
    where = f"/{split}/{name}"
    if "encoding" not in node.attrs:
        return None
    try:
        encoding = decode_str(node.attrs["encoding"])
        version_text = decode_str(node.attrs["encoding_version"]) if "encoding_version" in node.attrs else None
    except (TypeError, UnicodeDecodeError) as exc:
        raise InvalidFileError(
            f"{source.path}: {where}: 'encoding' and 'encoding_version' must be strings (§6.1)",
            path=source.path,
            hdf5_path=where,
        ) from exc
    cls = FEATURE_CLASSES.get(encoding)
    if cls is None:
        raise EncodingError(
            f"{source.path}: {where} uses encoding {encoding!r}, which this reader (h5ml "
            f"{spec.FORMAT_VERSION_STRING}) does not implement; known encodings: {', '.join(spec.ENCODINGS)}; "
            "upgrade h5ml to read it",
            path=source.path,
            hdf5_path=where,
        )
    if version_text is not None:
        try:
            major, _minor = spec.parse_version(version_text)
        except ValueError as exc:
            raise InvalidFileError(
                f"{source.path}: {where}: encoding_version {version_text!r} is not MAJOR.MINOR (§6.1)",
                path=source.path,
                hdf5_path=where,
            ) from exc
        ours = spec.parse_version(spec.ENCODING_VERSION)[0]
        if major != ours:
            raise EncodingError(
                f"{source.path}: {where} is {encoding} encoding {version_text}; this reader implements "
                f"{encoding} {spec.ENCODING_VERSION}; upgrade h5ml",
                path=source.path,
                hdf5_path=where,
            )
    kind = spec.ENCODINGS[encoding]
    if (kind == "dataset") != isinstance(node, h5py.Dataset):
        raise InvalidFileError(
            f"{source.path}: {where} has encoding {encoding!r}, which is stored as a {kind}, but it is not one (§6)",
            path=source.path,
            hdf5_path=where,
        )
    if kind == "dataset" and len(node.shape) < 1:
        raise InvalidFileError(
            f"{source.path}: {where} is a scalar dataset; a feature has a first (sample) axis (§5.3)",
            path=source.path,
            hdf5_path=where,
        )
    if encoding == "string" and len(node.shape) != 1:
        raise InvalidFileError(
            f"{source.path}: {where} is a string feature of shape {node.shape}; it must be 1-D (§6.4)",
            path=source.path,
            hdf5_path=where,
        )
    if kind == "group":
        required, _optional = spec.ENCODING_COMPONENTS[encoding]
        missing = [m for m in required if not isinstance(node.get(m), h5py.Dataset)]
        if missing:
            raise InvalidFileError(
                f"{source.path}: {where} ({encoding}) lacks the dataset(s) {', '.join(missing)} (§6)",
                path=source.path,
                hdf5_path=where,
            )
    return cls(source, split, name)
