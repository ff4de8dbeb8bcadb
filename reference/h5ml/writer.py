"""The reference writer: in-memory :func:`write` and streaming :class:`Writer`.

Files are built in a temporary file beside the target and moved over it with
``os.replace`` only once they are complete (§4.4), so the target path always
holds either nothing, the previous complete file, or the new complete file:

1. the temporary file ``.<name>.h5ml-tmp-<random>`` is created in the target's
   directory with libver bounds ``spec.LIBVER_BOUNDS`` (§3.1);
2. samples are appended batch by batch; fingerprints (§8) and statistics
   (§6.7) are computed from each batch as it arrives;
3. on close: ``num_samples`` (§5.3), feature fingerprints and statistics, the
   file fingerprint (§8.3), then ``complete = 1`` last (§4.4); flush, fsync,
   close, ``os.replace(temp, target)`` and fsync of the directory.

If anything fails (or the ``with`` block raises, or :meth:`Writer.close` is
called with ``abort=True``), the temporary file is deleted and the target is
untouched. The writer never opens the target for writing, so readers that have
it open never meet a lock (they keep reading the file they opened).

Encodings (§6) are inferred from the Python values unless given:

================================================  ===========================
value                                             encoding
================================================  ===========================
numeric numpy array ``(N, ...)``                  dense (bool: uint8 + ``logical_dtype="bool"``)
numpy str array, list of ``str``                  string
:class:`Categorical`, pandas-like categorical     categorical
list of arrays differing in their first axis      ragged (``values`` + ``offsets``)
list of arrays differing in more than one axis    ragged with ``shapes``
list of ``bytes``                                 bytes
================================================  ===========================
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import os
import secrets
import shutil
import weakref
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, Final, Literal

import h5py
import numpy as np
import numpy.typing as npt

from h5ml import spec
from h5ml.attrs import read_attr, write_attr
from h5ml.chunks import SPLIT_SAMPLE_BYTES, VLEN_ELEMENT_BYTES, chunk_shape
from h5ml.errors import EncodingError, H5MLError, UnknownExtensionError, UnsupportedVersionError, WriterError
from h5ml.fingerprint import FINGERPRINT_PATTERN, FeatureHasher, file_fingerprint
from h5ml.metadata import new_root_metadata

__all__ = ["WRITE_BUFFER_BYTES", "Categorical", "FeatureSpec", "Writer", "write"]

#: Bytes of samples a split buffers in memory before they are written to HDF5.
#: Buffering makes ``append_sample`` cheap and lets small splits get chunks sized
#: to their final length (§7.3).
WRITE_BUFFER_BYTES: Final = 32 << 20
#: Bytes read (or taken from in-memory arrays) at a time when re-reading a
#: feature in append mode or feeding :func:`write`'s arrays to the writer.
_BLOCK_BYTES: Final = 32 << 20
#: Strings read at a time when re-reading a string feature (their length is unknown).
_STRING_BLOCK: Final = 1 << 16
#: Values turned into float64 at a time by the statistics.
_STATS_BLOCK: Final = 1 << 22
#: One-byte values counted at a time by the statistics' histogram.
_HISTOGRAM_BLOCK: Final = 1 << 18
#: The chunk cache of the file being written holds the largest chunk the
#: writer creates (§7.1), so partly filled chunks are not re-read.
_WRITE_CACHE_BYTES: Final = SPLIT_SAMPLE_BYTES
_STR_DTYPE: Final = h5py.string_dtype("utf-8")
_DEFAULT_MEDIA_TYPE: Final = "application/octet-stream"
#: Root attributes that only a finished file carries (§4.4, §8.3).
_FINISH_ATTRS: Final = ("complete", "fingerprint")
_STATS_ATTRS: Final = ("stats_count", "stats_min", "stats_max", "stats_mean", "stats_std")


# --------------------------------------------------------------------------
# public value types


class Categorical:
    """Categorical values: integer codes and their class names (§6.5).

    Parameters
    ----------
    codes
        Integer array ``(N,)``; ``-1`` marks a missing value, otherwise a code
        indexes ``class_names``.
    class_names
        The K class names: unique, non-empty strings.

    Raises
    ------
    EncodingError
        If codes are not a 1-D integer array. (Class names and the code range
        are checked when the values are written.)
    """

    def __init__(self, codes: npt.ArrayLike, class_names: Sequence[str]) -> None:
        arr = np.asarray(codes)
        if arr.ndim != 1 or (arr.dtype.kind not in "iu" and arr.size):
            raise EncodingError(
                f"categorical codes must be a 1-D integer array, got shape {arr.shape} dtype {arr.dtype}"
            )
        self.codes: np.ndarray = arr
        self.class_names: tuple[str, ...] = tuple(class_names)

    def __len__(self) -> int:
        return int(self.codes.shape[0])

    def __repr__(self) -> str:
        return f"Categorical(<{len(self)} codes>, class_names={list(self.class_names)!r})"


@dataclass(frozen=True)
class FeatureSpec:
    """Options of one feature (§6.1); ``None`` means "not given".

    Attributes
    ----------
    encoding
        Force an encoding instead of inferring it (``"dense"``, ``"string"``,
        ``"categorical"``, ``"ragged"``, ``"bytes"``).
    dtype
        Store numeric values with this dtype (cast; integers are range-checked).
    role
        ``"input"``, ``"target"`` or ``"metadata"``.
    description, units
        Free text attributes.
    sample_rate
        Samples per second (Hz) of a signal feature, > 0.
    media_type
        IANA media type of a bytes feature (default ``application/octet-stream``).
    class_names
        Class names of a categorical feature (string values are looked up in
        them; integer values are codes).
    compression
        ``"gzip"`` or ``False`` to override the writer's compression for this
        feature; ``None`` uses the writer's.
    """

    encoding: str | None = None
    dtype: npt.DTypeLike | None = None
    role: str | None = None
    description: str | None = None
    units: str | None = None
    sample_rate: float | None = None
    media_type: str | None = None
    class_names: Sequence[str] | None = None
    compression: str | Literal[False] | None = None

    def merged(self, other: FeatureSpec) -> FeatureSpec:
        """Return this spec with every field that ``other`` gives replaced."""
        given = {
            f.name: getattr(other, f.name) for f in dataclasses.fields(other) if getattr(other, f.name) is not None
        }
        return dataclasses.replace(self, **given)


def _as_spec(value: FeatureSpec | Mapping[str, Any], key: str) -> FeatureSpec:
    if isinstance(value, FeatureSpec):
        return value
    names = {f.name for f in dataclasses.fields(FeatureSpec)}
    unknown = sorted(set(value) - names)
    if unknown:
        raise WriterError(f"features[{key!r}] has unknown option(s) {unknown}; the options are {sorted(names)}")
    return FeatureSpec(**value)


class _SpecTable:
    """``features=`` option: keys are ``"feature"`` (every split) or ``"split/feature"``."""

    def __init__(self, features: Mapping[str, FeatureSpec | Mapping[str, Any]] | None) -> None:
        self.specs = {key: _as_spec(value, key) for key, value in (features or {}).items()}

    def get(self, split: str, feature: str) -> FeatureSpec:
        general = self.specs.get(feature, FeatureSpec())
        specific = self.specs.get(f"{split}/{feature}")
        return general if specific is None else general.merged(specific)

    def check_used(self, splits: Mapping[str, Mapping[str, Any]]) -> None:
        known = {f for cols in splits.values() for f in cols} | {f"{s}/{f}" for s, cols in splits.items() for f in cols}
        unused = sorted(set(self.specs) - known)
        if unused:
            raise WriterError(
                f"features= names {unused}, which match no feature of the splits written ({sorted(known)})"
            )


# --------------------------------------------------------------------------
# layouts: what one feature looks like in the file


@dataclass(frozen=True)
class _Layout:
    encoding: str
    dtype: np.dtype[Any] | None  # stored dtype of dense values / ragged values / codes / bytes
    sample_shape: tuple[int, ...] = ()  # dense sample; ragged rows (without shapes)
    logical_bool: bool = False
    shapes_ndim: int | None = None  # ragged samples that vary in several axes
    class_names: tuple[str, ...] | None = None

    @property
    def hash_dtype(self) -> np.dtype[Any] | None:
        return np.dtype(np.bool_) if self.logical_bool else self.dtype

    def new_hasher(self) -> FeatureHasher:
        return FeatureHasher(self.encoding, self.hash_dtype, self.sample_shape, class_names=self.class_names)

    @property
    def has_stats(self) -> bool:
        return self.encoding in ("dense", "ragged")


def _storage_dtype(dtype: npt.DTypeLike, where: str) -> tuple[np.dtype[Any], bool]:
    """Return (stored little-endian dtype, is bool) for a numeric dtype (§3.2, §3.3)."""
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return np.dtype(np.uint8), True
    if dt.kind not in "iuf" or (dt.kind == "f" and dt.itemsize not in (2, 4, 8)):
        raise EncodingError(
            f"{where}: dtype {dt} is outside the storage profile (§3.2); use bool, int8-64, uint8-64 or float16/32/64"
        )
    return dt.newbyteorder("<"), False


def _check_class_names(names: Sequence[Any], where: str) -> tuple[str, ...]:
    items = tuple(names)
    bad = [n for n in items if not isinstance(n, str) or not n or "\x00" in n]
    if bad:
        raise EncodingError(
            f"{where}: class names must be non-empty strings without NUL characters, got {bad[:5]!r} (§6.5)"
        )
    dups = sorted(n for n, k in Counter(items).items() if k > 1)
    if dups:
        raise EncodingError(f"{where}: class names must be unique; repeated: {dups[:10]!r} (§6.5)")
    return items


def _codes_dtype(num_classes: int, dtype: npt.DTypeLike | None, where: str) -> np.dtype[Any]:
    if dtype is None:
        for candidate in (np.int8, np.int16, np.int32, np.int64):
            if num_classes - 1 <= np.iinfo(candidate).max:
                return np.dtype(candidate).newbyteorder("<")
    dt = np.dtype(dtype)
    if dt.kind != "i" or num_classes - 1 > np.iinfo(dt).max:
        raise EncodingError(
            f"{where}: categorical codes need a signed integer dtype that holds {num_classes - 1}, got {dt} (§6.5)"
        )
    return dt.newbyteorder("<")


def _declared_layout(
    encoding: str,
    *,
    dtype: npt.DTypeLike | None,
    sample_shape: Sequence[int],
    sample_ndim: int | None,
    class_names: Sequence[str] | None,
    where: str,
) -> _Layout:
    """Build and check the layout of a feature from explicit options (§6)."""
    if encoding not in spec.ENCODINGS:
        raise EncodingError(f"{where}: unknown encoding {encoding!r}; expected one of {sorted(spec.ENCODINGS)} (§6)")
    shape = tuple(int(d) for d in sample_shape)
    if any(d < 1 for d in shape):
        raise EncodingError(f"{where}: sample shape {shape} has an axis of length 0 or less; axes must be >= 1")
    if encoding in ("dense", "ragged"):
        if dtype is None:
            raise EncodingError(f"{where}: a {encoding} feature needs a dtype")
        stored, is_bool = _storage_dtype(dtype, where)
        if encoding == "dense":
            return _Layout("dense", stored, shape, is_bool)
        if sample_ndim is not None:
            if sample_ndim < 1 or shape:
                raise EncodingError(f"{where}: sample_ndim must be >= 1 and excludes sample_shape (§6.3)")
            return _Layout("ragged", stored, (), is_bool, shapes_ndim=int(sample_ndim))
        return _Layout("ragged", stored, shape, is_bool)
    if shape or sample_ndim is not None:
        raise EncodingError(f"{where}: sample_shape/sample_ndim apply to dense and ragged features only")
    if encoding == "string":
        return _Layout("string", None)
    if encoding == "bytes":
        return _Layout("bytes", np.dtype(np.uint8))
    if class_names is None:
        raise EncodingError(f"{where}: a categorical feature needs class_names (§6.5)")
    names = _check_class_names(class_names, where)
    return _Layout("categorical", _codes_dtype(len(names), dtype, where), class_names=names)


def _pandas_like(value: Any) -> bool:
    return hasattr(value, "codes") and hasattr(value, "categories") and not isinstance(value, np.ndarray)


def _as_categorical(value: Any) -> Any:
    """Turn a pandas-like categorical (``.codes``, ``.categories``) into :class:`Categorical`."""
    if _pandas_like(value) and not isinstance(value, Categorical):
        return Categorical(np.asarray(value.codes), [str(c) for c in value.categories])
    return value


def _is_text(v: Any) -> bool:
    return isinstance(v, (str, np.str_))


def _is_bytes(v: Any) -> bool:
    return isinstance(v, (bytes, bytearray, memoryview, np.bytes_))


def _infer_layout(value: Any, fspec: FeatureSpec, where: str) -> _Layout:
    """Choose the encoding and layout of a feature from its values (§6)."""
    value = _as_categorical(value)
    encoding = fspec.encoding
    if isinstance(value, Categorical):
        if encoding not in (None, "categorical"):
            raise EncodingError(f"{where}: Categorical values cannot be stored as {encoding!r}")
        return _declared_layout(
            "categorical",
            dtype=fspec.dtype,
            sample_shape=(),
            sample_ndim=None,
            class_names=value.class_names if fspec.class_names is None else fspec.class_names,
            where=where,
        )
    if isinstance(value, (str, bytes)) or not hasattr(value, "__len__"):
        raise EncodingError(f"{where}: expected an array or a list of samples, got {type(value).__name__}")
    items: Sequence[Any] = value
    if encoding is None:
        encoding = _infer_encoding(items, fspec, where)
    if encoding == "categorical":
        names: Sequence[str] | None = fspec.class_names
        if names is None:
            strings = [v for v in _to_list(items) if v is not None]
            if not all(_is_text(v) for v in strings):
                raise EncodingError(f"{where}: integer categorical codes need class_names (§6.5)")
            names = sorted({str(v) for v in strings})
        return _declared_layout(
            "categorical", dtype=fspec.dtype, sample_shape=(), sample_ndim=None, class_names=names, where=where
        )
    if encoding == "dense":
        arr = _dense_array(items, where)
        dtype = arr.dtype if fspec.dtype is None else fspec.dtype
        return _declared_layout(
            "dense", dtype=dtype, sample_shape=arr.shape[1:], sample_ndim=None, class_names=None, where=where
        )
    if encoding == "ragged":
        arrays = [np.asarray(v) for v in items]
        if not arrays and fspec.dtype is not None:  # no samples: 1-D samples of the given dtype
            return _declared_layout(
                "ragged", dtype=fspec.dtype, sample_shape=(), sample_ndim=None, class_names=None, where=where
            )
        if not arrays:
            raise EncodingError(f"{where}: cannot infer a ragged feature from no samples; give its dtype")
        ndims = {a.ndim for a in arrays}
        if len(ndims) != 1 or 0 in ndims:
            raise EncodingError(
                f"{where}: ragged samples must all have the same number of axes (>= 1), got {sorted(ndims)}"
            )
        dtype = np.result_type(*{a.dtype for a in arrays}) if fspec.dtype is None else fspec.dtype
        trailing = {a.shape[1:] for a in arrays}
        if len(trailing) == 1:
            return _declared_layout(
                "ragged", dtype=dtype, sample_shape=trailing.pop(), sample_ndim=None, class_names=None, where=where
            )
        return _declared_layout(
            "ragged", dtype=dtype, sample_shape=(), sample_ndim=ndims.pop(), class_names=None, where=where
        )
    return _declared_layout(encoding, dtype=None, sample_shape=(), sample_ndim=None, class_names=None, where=where)


def _to_list(items: Any) -> list[Any]:
    return items.tolist() if isinstance(items, np.ndarray) else list(items)


def _infer_encoding(items: Any, fspec: FeatureSpec, where: str) -> str:
    if isinstance(items, np.ndarray) and items.dtype.kind != "O":
        if items.dtype.kind in "biuf":
            return "categorical" if fspec.class_names is not None else "dense"
        if items.dtype.kind in "US":
            return "categorical" if fspec.class_names is not None else "string"
        raise EncodingError(f"{where}: numpy dtype {items.dtype} has no h5ml encoding (§3.2)")
    seq = _to_list(items)
    if not seq:
        raise EncodingError(
            f"{where}: cannot infer an encoding from an empty list; pass features={{...: {{'encoding': ...}}}}"
        )
    if all(_is_text(v) for v in seq):
        return "categorical" if fspec.class_names is not None else "string"
    if all(_is_bytes(v) for v in seq):
        return "bytes"
    if fspec.class_names is not None:
        return "categorical"
    arrays = [np.asarray(v) for v in seq]
    if any(a.dtype.kind not in "biuf" for a in arrays):
        kinds = sorted({type(v).__name__ for v in seq})
        raise EncodingError(f"{where}: cannot infer an encoding for a list of {kinds}; use arrays, str or bytes")
    return "dense" if len({a.shape for a in arrays}) == 1 else "ragged"


def _dense_array(items: Any, where: str) -> np.ndarray:
    try:
        arr = np.asarray(items)
    except ValueError as exc:
        raise EncodingError(f"{where}: samples have different shapes ({exc}); use the ragged encoding") from None
    if arr.ndim < 1:
        raise EncodingError(f"{where}: dense values need a sample axis, got a scalar")
    return arr


# --------------------------------------------------------------------------
# batches: one feature's values for n samples, in stored form


@dataclass
class _Parts:
    n: int
    data: Any  # dense: ndarray; string: list[str]; categorical: codes; ragged/bytes: values
    lengths: np.ndarray | None = None
    shapes: np.ndarray | None = None
    borrowed: bool = False  # data may be the caller's memory

    @property
    def nbytes(self) -> int:
        if isinstance(self.data, np.ndarray):
            return int(self.data.nbytes) + (0 if self.lengths is None else int(self.lengths.nbytes) * 2)
        return sum(len(s) + VLEN_ELEMENT_BYTES for s in self.data)

    def owned(self) -> _Parts:
        if not self.borrowed:
            return self
        return dataclasses.replace(self, data=np.array(self.data, copy=True), borrowed=False)


def _cast(arr: np.ndarray, dtype: np.dtype[Any], where: str) -> np.ndarray:
    """Cast numeric values to the stored dtype without silent overflow (§3.2)."""
    if arr.dtype == dtype:
        return arr
    if arr.size == 0:
        return arr.astype(dtype)
    if arr.dtype.kind not in "biuf":
        raise EncodingError(f"{where}: values of dtype {arr.dtype} cannot be stored as {dtype}")
    if np.can_cast(arr.dtype, dtype, "safe") or dtype.kind == "f":
        return arr.astype(dtype)
    if arr.dtype.kind == "f":
        raise EncodingError(f"{where}: float values cannot be stored in the feature's integer dtype {dtype}")
    info = np.iinfo(dtype)
    lo, hi = int(arr.min()), int(arr.max())
    if lo < info.min or hi > info.max:
        raise EncodingError(
            f"{where}: values in [{lo}, {hi}] do not fit the feature's dtype {dtype} [{info.min}, {info.max}]"
        )
    return arr.astype(dtype)


def _numeric(arr: np.ndarray, layout: _Layout, where: str) -> np.ndarray:
    assert layout.dtype is not None
    if layout.logical_bool:
        if arr.dtype.kind == "b":
            return arr.view(np.uint8) if arr.flags.c_contiguous else arr.astype(np.uint8)
        if arr.size and (arr.dtype.kind not in "iu" or not np.isin(arr, (0, 1)).all()):
            raise EncodingError(f"{where}: a bool feature takes bool values or integers 0/1 (§3.3)")
    return _cast(arr, layout.dtype, where)


def _normalize(layout: _Layout, value: Any, where: str) -> _Parts:
    """Turn one batch of a feature into its stored form, checking it (§6)."""
    value = _as_categorical(value)
    if isinstance(value, (str, bytes)) or not hasattr(value, "__len__"):
        raise EncodingError(f"{where}: expected an array or a list of samples, got {type(value).__name__}")
    enc = layout.encoding
    if enc == "dense":
        arr = _dense_array(value, where)
        if arr.shape[1:] != layout.sample_shape:
            raise EncodingError(
                f"{where}: samples have shape {arr.shape[1:]}, the feature's sample shape is {layout.sample_shape}"
            )
        out = np.ascontiguousarray(_numeric(arr, layout, where))
        borrowed = isinstance(value, np.ndarray) and np.may_share_memory(out, value)
        return _Parts(arr.shape[0], out, borrowed=borrowed)
    if enc == "string":
        return _Parts(len(value), _strings(value, where))
    if enc == "categorical":
        codes = _codes(layout, value, where)
        return _Parts(
            codes.shape[0], codes, borrowed=isinstance(value, np.ndarray) and np.may_share_memory(codes, value)
        )
    if enc == "bytes":
        items = _to_list(value)
        bad = [type(v).__name__ for v in items if not _is_bytes(v)]
        if bad:
            raise EncodingError(f"{where}: a bytes feature takes bytes values, got {sorted(set(bad))}")
        blobs = [bytes(v) for v in items]
        lengths = np.fromiter((len(b) for b in blobs), dtype=np.int64, count=len(blobs))
        return _Parts(len(blobs), np.frombuffer(b"".join(blobs), dtype=np.uint8).copy(), lengths)
    return _ragged(layout, value, where)


def _strings(value: Any, where: str) -> list[str]:
    if isinstance(value, np.ndarray) and value.dtype.kind == "S":
        items: list[Any] = [bytes(v) for v in value.ravel()]
    else:
        items = _to_list(value)
    out: list[str] = []
    for i, v in enumerate(items):
        if isinstance(v, (bytes, np.bytes_)):
            try:
                v = bytes(v).decode("utf-8")
            except UnicodeDecodeError:
                raise EncodingError(f"{where}: value {i} is bytes that are not UTF-8 (§3.4)") from None
        if not isinstance(v, str):
            raise EncodingError(f"{where}: value {i} is a {type(v).__name__}, a string feature takes str values")
        if "\x00" in v:
            raise EncodingError(f"{where}: value {i} contains a NUL character, which HDF5 strings cannot hold (§3.4)")
        try:
            v.encode("utf-8")
        except UnicodeEncodeError:
            raise EncodingError(f"{where}: value {i} cannot be encoded as UTF-8 (lone surrogate) (§3.4)") from None
        out.append(str(v))
    return out


def _codes(layout: _Layout, value: Any, where: str) -> np.ndarray:
    assert layout.class_names is not None and layout.dtype is not None
    names = layout.class_names
    if isinstance(value, Categorical):
        if value.class_names != names:
            raise EncodingError(
                f"{where}: Categorical class names {list(value.class_names)[:5]}... differ from the feature's"
            )
        raw = value.codes
    elif isinstance(value, np.ndarray) and value.dtype.kind in "iu":
        raw = value
    else:
        seq = _to_list(value)
        if all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in seq):
            raw = np.asarray(seq, dtype=np.int64)
        else:
            index = {n: i for i, n in enumerate(names)}
            unknown = sorted({str(v) for v in seq if v is not None and v not in index})
            if unknown:
                raise EncodingError(f"{where}: values {unknown[:10]} are not among the class names (§6.5)")
            raw = np.fromiter((-1 if v is None else index[v] for v in seq), dtype=np.int64, count=len(seq))
    if raw.ndim != 1:
        raise EncodingError(f"{where}: categorical codes must be 1-D, got shape {raw.shape}")
    if raw.size:
        bad = np.flatnonzero((raw < -1) | (raw >= len(names)))
        if bad.size:
            i = int(bad[0])
            raise EncodingError(
                f"{where}: code {int(raw[i])} at sample {i} is outside [-1, {len(names)}) "
                f"for {len(names)} class names (§6.5)"
            )
    return _cast(raw, layout.dtype, where)


def _ragged(layout: _Layout, value: Any, where: str) -> _Parts:
    assert layout.dtype is not None
    arrays = [np.asarray(v) for v in _to_list(value)] if not isinstance(value, np.ndarray) else list(value)
    n = len(arrays)
    if layout.shapes_ndim is None:
        for i, a in enumerate(arrays):
            if a.ndim < 1 or a.shape[1:] != layout.sample_shape:
                raise EncodingError(
                    f"{where}: sample {i} has shape {a.shape}; rows of this ragged feature have shape "
                    f"{layout.sample_shape} (samples that vary in several axes need sample_ndim, §6.3)"
                )
        lengths = np.fromiter((a.shape[0] for a in arrays), dtype=np.int64, count=n)
        cast = [_numeric(a, layout, where) for a in arrays]
        values = np.concatenate(cast) if cast else np.empty((0, *layout.sample_shape), layout.dtype)
        return _Parts(n, values.astype(layout.dtype, copy=False), lengths)
    for i, a in enumerate(arrays):
        if a.ndim != layout.shapes_ndim:
            raise EncodingError(
                f"{where}: sample {i} has {a.ndim} axes; this ragged feature's samples have {layout.shapes_ndim}"
            )
    shapes = np.array([a.shape for a in arrays], dtype=np.int64).reshape(n, layout.shapes_ndim)
    lengths = np.fromiter((a.size for a in arrays), dtype=np.int64, count=n)
    flat = [_numeric(a, layout, where).reshape(-1) for a in arrays]
    values = np.concatenate(flat) if flat else np.empty((0,), layout.dtype)
    return _Parts(n, values.astype(layout.dtype, copy=False), lengths, shapes)


def _concat(layout: _Layout, parts: list[_Parts]) -> _Parts:
    if len(parts) == 1:
        return parts[0]
    n = sum(p.n for p in parts)
    if layout.encoding == "string":
        return _Parts(n, [s for p in parts for s in p.data])
    lengths = None if parts[0].lengths is None else np.concatenate([p.lengths for p in parts if p.lengths is not None])
    shapes = None if parts[0].shapes is None else np.concatenate([p.shapes for p in parts if p.shapes is not None])
    return _Parts(n, np.concatenate([p.data for p in parts]), lengths, shapes)


# --------------------------------------------------------------------------
# statistics (§6.7)


class _Stats:
    """count, min, max, mean, population std over all values, NaN excluded.

    Batches merge with Chan, Golub and LeVeque's pairwise update in float64.
    Infinite values count: min/max may be infinite; a mean or std that comes
    out NaN (for example with both infinities) is not written.
    """

    def __init__(self) -> None:
        self.count = 0
        self.mean = 0.0
        self.m2 = 0.0
        self.min = math.inf
        self.max = -math.inf

    def update(self, values: np.ndarray) -> None:
        flat = values.reshape(-1)
        if flat.dtype.kind in "biu" and flat.dtype.itemsize == 1:
            self._update_bytes(flat)
            return
        for start in range(0, flat.size, _STATS_BLOCK):
            x = flat[start : start + _STATS_BLOCK]
            if x.dtype.kind == "f":
                x = x[~np.isnan(x)]
            if not x.size:
                continue
            xf = x.astype(np.float64)
            with np.errstate(invalid="ignore", over="ignore"):  # infinities make mean/std inf or NaN
                mean_b = float(xf.mean())
                xf -= mean_b
                self._merge(int(xf.size), mean_b, float(np.dot(xf, xf)), float(x.min()), float(x.max()))

    def _update_bytes(self, flat: np.ndarray) -> None:
        """One-byte values (bool, int8, uint8, e.g. images): exact, from a 256-bin histogram."""
        raw = flat.view(np.uint8)
        counts = np.zeros(256, dtype=np.float64)
        for start in range(0, raw.size, _HISTOGRAM_BLOCK):  # bincount copies to intp: keep the copy in cache
            counts += np.bincount(raw[start : start + _HISTOGRAM_BLOCK], minlength=256)
        n_b = int(counts.sum())
        if not n_b:
            return
        levels = np.arange(256, dtype=np.uint8)
        levels_f = (levels.view(np.int8) if flat.dtype.kind == "i" else levels).astype(np.float64)
        present = levels_f[counts > 0]
        mean_b = float(np.dot(counts, levels_f)) / n_b
        m2_b = float(np.dot(counts, np.square(levels_f - mean_b)))
        self._merge(n_b, mean_b, m2_b, float(present.min()), float(present.max()))

    def _merge(self, n_b: int, mean_b: float, m2_b: float, lo: float, hi: float) -> None:
        """Chan et al.'s update of (count, mean, M2) with a batch's, plus min and max."""
        n = self.count + n_b
        delta = mean_b - self.mean  # Python floats: infinities give inf or NaN without warnings
        self.mean += delta * n_b / n
        self.m2 += m2_b + delta * delta * self.count * n_b / n
        self.count = n
        self.min = min(self.min, lo)
        self.max = max(self.max, hi)

    def attrs(self) -> dict[str, int | float]:
        out: dict[str, int | float] = {"stats_count": self.count}
        if self.count:
            candidates = {
                "stats_min": self.min,
                "stats_max": self.max,
                "stats_mean": self.mean,
                "stats_std": math.sqrt(self.m2 / self.count) if self.m2 >= 0 else math.nan,  # NaN m2 fails >= 0
            }
            out.update({k: v for k, v in candidates.items() if not math.isnan(v)})  # NaN has no JSON form (§4.6)
        return out


# --------------------------------------------------------------------------
# writer state


@dataclass
class _Feature:
    split: str
    name: str
    layout: _Layout
    attrs: dict[str, Any]  # §6.1 attributes written when the object is created
    compression: str | None
    obj: h5py.Dataset | h5py.Group | None = None
    hasher: FeatureHasher | None = None
    stats: _Stats | None = None
    pending: list[_Parts] = dataclasses.field(default_factory=list)
    written: int = 0  # samples in the file
    written_rows: int = 0  # ragged/bytes value rows in the file

    @property
    def hdf5_path(self) -> str:
        return f"/{self.split}/{self.name}"

    @property
    def pending_n(self) -> int:
        return sum(p.n for p in self.pending)


@dataclass
class _Split:
    name: str
    group: h5py.Group
    features: dict[str, _Feature] = dataclasses.field(default_factory=dict)
    num_samples: int = 0  # written + pending
    frozen: bool = False  # the feature set is fixed
    expected_samples: int | None = None
    pending_bytes: int = 0
    stored: dict[str, Any] = dataclasses.field(default_factory=dict)  # mode "a": features not yet loaded


def _main_dataset(layout: _Layout, obj: Any) -> h5py.Dataset:
    """The dataset holding a feature's samples (values for ragged/bytes)."""
    if layout.encoding in ("dense", "string"):
        return obj
    return obj["codes"] if layout.encoding == "categorical" else obj["values"]


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _discard(h5file: h5py.File, temp: Path) -> None:
    """Close and delete an unfinished temporary file (also the finalizer)."""
    try:
        if h5file.id.valid:
            h5file.close()
    finally:
        temp.unlink(missing_ok=True)


@contextlib.contextmanager
def _located(path: str, hdf5_path: str) -> Iterator[None]:
    """Attach the file and HDF5 path to an h5ml error raised inside (the message already names them)."""
    try:
        yield
    except H5MLError as exc:
        exc.path = exc.path or path
        exc.hdf5_path = exc.hdf5_path or hdf5_path
        raise


def _check_name(name: Any, kind: str, path: str, hdf5_path: str) -> None:
    if not isinstance(name, str) or not spec.is_valid_name(name):
        raise WriterError(
            f"{path}: {kind} name {name!r} at {hdf5_path} is invalid (§5.1, §5.2): a name is non-empty, has no "
            "'/', does not start with '.', '_' or whitespace nor end with whitespace, and is at most 255 UTF-8 bytes",
            path=path,
            hdf5_path=hdf5_path,
        )


class Writer:
    """Write an h5ml file batch by batch, atomically (§4.4, §5, §6, §7, §8).

    Parameters
    ----------
    path
        The target file. It is not opened for writing: the file is built in
        ``.<name>.h5ml-tmp-<random>`` beside it and moved over it on close.
    metadata
        Root metadata (§4.2): ``name`` (default: the target's stem), and
        optional ``description``, ``license``, ``version``, ... checked by
        :func:`h5ml.metadata.new_root_metadata` (which refuses the attributes
        the writer sets: ``format``, ``format_version``, ``complete``,
        ``fingerprint``). In mode ``"a"``
        the given fields replace the file's (the others are kept).
    mode
        ``"w"``: create (replacing the target on close); ``"a"``: add samples
        or splits to the existing complete file (created if absent). Append
        mode copies the whole file once and re-reads every feature it extends
        once (to continue its fingerprint and statistics), plus every feature
        that has no fingerprint yet (for the file fingerprint). A split that
        gets samples loses its ``shuffle_seed``: the seed no longer describes
        the stored order (§7.6).
    compression
        ``"gzip"`` (deflate, a core filter, §3.5, with the byte-shuffle filter
        for multi-byte types) or ``None``. Strings are never compressed (HDF5
        does not compress variable-length data).
    compression_opts
        The gzip level 0-9 (default 4).
    features
        Per-feature options used when a feature is inferred from its first
        batch: ``{"label": {"role": "target"}, "train/label": FeatureSpec(...)}``.

    Raises
    ------
    WriterError
        If the options are wrong, the target's directory does not exist, or
        (mode ``"a"``) the existing file is not a complete h5ml file or cannot
        be extended.
    UnsupportedVersionError, UnknownExtensionError
        (mode ``"a"``) The existing file has a newer MAJOR version or an
        extension this writer does not understand.
    MetadataError
        If the metadata is invalid.

    Notes
    -----
    Samples are buffered (up to :data:`WRITE_BUFFER_BYTES` per split) before
    they reach HDF5; :meth:`flush` writes them. Values are copied when they
    are buffered, so callers may reuse their arrays after :meth:`append`.
    Concurrent writers of one target: the last to close wins.
    An unclosed writer that is garbage-collected deletes its temporary file.

    Examples
    --------
    >>> with Writer(tmp / "d.h5", {"name": "d"}) as w:  # doctest: +SKIP
    ...     w.append("train", {"x": np.zeros((4, 3), "f4"), "y": ["a", "b", "c", "d"]})
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        metadata: Mapping[str, Any] | None = None,
        *,
        mode: Literal["w", "a"] = "w",
        compression: str | None = None,
        compression_opts: int | None = None,
        features: Mapping[str, FeatureSpec | Mapping[str, Any]] | None = None,
    ) -> None:
        self.path = Path(path)
        where = str(self.path)
        if mode not in ("w", "a"):
            raise WriterError(f"{where}: mode must be 'w' or 'a', got {mode!r}", path=where)
        self._compression = self._check_compression(compression, where)
        if compression_opts is not None and (not isinstance(compression_opts, int) or not 0 <= compression_opts <= 9):
            raise WriterError(f"{where}: compression_opts is the gzip level 0-9, got {compression_opts!r}", path=where)
        self._compression_opts = compression_opts
        self._specs = _SpecTable(features)
        parent = self.path.parent
        if not parent.is_dir():
            raise WriterError(f"{where}: the directory {str(parent)!r} does not exist; create it first", path=where)
        if self.path.is_dir():
            raise WriterError(f"{where} is a directory; give a file path", path=where)
        self.temp_path = parent / f".{self.path.name}.h5ml-tmp-{secrets.token_hex(8)}"
        self._splits: dict[str, _Split] = {}
        self._closed = False
        append = mode == "a" and self.path.exists()
        try:
            if append:
                shutil.copyfile(self.path, self.temp_path)
            h5mode = "r+" if append else "w-"
            self._file = h5py.File(self.temp_path, h5mode, libver=spec.LIBVER_BOUNDS, rdcc_nbytes=_WRITE_CACHE_BYTES)
        except BaseException:
            self.temp_path.unlink(missing_ok=True)
            raise
        self._finalizer = weakref.finalize(self, _discard, self._file, self.temp_path)
        try:
            if append:
                self._load_existing(metadata)
            else:
                self._write_root(metadata)
        except BaseException:
            self.close(abort=True)
            raise

    # -- setup -----------------------------------------------------------

    @staticmethod
    def _check_compression(compression: Any, where: str) -> str | None:
        if compression not in (None, "gzip"):
            raise WriterError(
                f"{where}: compression must be 'gzip' or None, got {compression!r}; other filters make files that "
                "HDF5 builds without plugins cannot read (§3.5)",
                path=where,
            )
        return compression  # type: ignore[no-any-return]

    def _write_root(self, metadata: Mapping[str, Any] | None) -> None:
        fields = dict(metadata or {})
        name = fields.pop("name", self.path.stem)
        for key, value in new_root_metadata(name, **fields).items():
            if value is not None:
                write_attr(self._file, key, value)

    def _load_existing(self, metadata: Mapping[str, Any] | None) -> None:
        f, where = self._file, str(self.path)
        if read_attr(f, "format", None) != spec.FORMAT_NAME:
            raise WriterError(
                f"{where} is not an h5ml file (root attribute 'format' is not 'h5ml'); cannot append", path=where
            )
        version = read_attr(f, "format_version", None)
        try:
            major, _ = spec.parse_version(version)
        except ValueError:
            raise WriterError(
                f"{where}: format_version {version!r} is invalid (§1.2); cannot append", path=where
            ) from None
        if major != spec.FORMAT_VERSION[0]:
            raise UnsupportedVersionError(
                f"{where} has format_version {version}; this writer writes {spec.FORMAT_VERSION_STRING} "
                "and cannot append to it",
                path=where,
            )
        unknown = sorted(set(read_attr(f, "must_understand", [])) - spec.KNOWN_EXTENSIONS)
        if unknown:
            raise UnknownExtensionError(
                f"{where} needs extensions {unknown} that this writer does not understand (§1.5)", path=where
            )
        if read_attr(f, "complete", None) != 1:
            raise WriterError(
                f"{where} is incomplete (no 'complete' = 1, §4.4); append refuses to extend it", path=where
            )
        # From here on the copy is unfinished: it must not look complete (§4.4).
        for key in _FINISH_ATTRS:
            if key in f.attrs:
                del f.attrs[key]
        f.flush()
        if metadata:
            fields = dict(metadata)
            name = fields.pop("name", read_attr(f, "name", self.path.stem))
            checked = new_root_metadata(name, **fields)
            for key in ("name", *fields):
                if key in checked:
                    write_attr(f, key, checked[key])
        for split_name, group in f.items():
            if split_name.startswith(spec.RESERVED_PREFIX) or not isinstance(group, h5py.Group):
                continue
            num = read_attr(group, "num_samples", None)
            if not isinstance(num, int) or num < 0:
                raise WriterError(
                    f"{where}: /{split_name} has no valid num_samples (§5.3)", path=where, hdf5_path=f"/{split_name}"
                )
            stored = {k: obj for k, obj in group.items() if not k.startswith(spec.RESERVED_PREFIX)}
            self._splits[split_name] = _Split(split_name, group, num_samples=num, frozen=bool(stored), stored=stored)

    def _existing_feature(self, split: _Split, name: str, obj: Any) -> _Feature:
        hdf5_path = f"/{split.name}/{name}"
        where = f"{self.path}:{hdf5_path}"

        def fail(msg: str) -> WriterError:
            return WriterError(f"{where}: {msg}; cannot append to this file", path=str(self.path), hdf5_path=hdf5_path)

        encoding = read_attr(obj, "encoding", None)
        if encoding not in spec.ENCODINGS:
            raise fail(f"unknown or missing encoding {encoding!r}")
        if (spec.ENCODINGS[encoding] == "group") != isinstance(obj, h5py.Group):
            raise fail(f"a {encoding} feature must be a {spec.ENCODINGS[encoding]}")
        try:
            layout = self._parse_layout(encoding, obj)
        except (KeyError, EncodingError, TypeError, ValueError) as exc:
            raise fail(f"the {encoding} feature is malformed ({exc})") from None
        if encoding in ("ragged", "bytes"):
            offsets = obj["offsets"]
            count = offsets.shape[0] - 1
            rows = int(offsets[-1]) if count >= 0 else 0
        else:
            count, rows = _main_dataset(layout, obj).shape[0], 0
        if count != split.num_samples:
            raise fail(f"it has {count} samples but /{split.name} has num_samples = {split.num_samples} (§5.3)")
        return _Feature(split.name, name, layout, {}, None, obj=obj, written=count, written_rows=rows)

    @staticmethod
    def _parse_layout(encoding: str, obj: Any) -> _Layout:
        if encoding == "string":
            info = h5py.check_string_dtype(obj.dtype)
            if info is None or info.length is not None:
                raise EncodingError("strings must be variable-length to be extended")
            return _Layout("string", None)
        if encoding == "categorical":
            names = [n.decode("utf-8") if isinstance(n, bytes) else str(n) for n in obj["class_names"][()]]
            codes = obj["codes"]
            if codes.dtype.kind != "i":
                raise EncodingError(f"codes have dtype {codes.dtype}, not a signed integer")
            return _Layout("categorical", codes.dtype, class_names=tuple(names))
        if encoding == "bytes":
            return _Layout("bytes", np.dtype(np.uint8))
        data = obj if encoding == "dense" else obj["values"]
        is_bool = read_attr(obj, "logical_dtype", None) == "bool"
        if data.dtype.kind not in "iuf":
            raise EncodingError(f"values have dtype {data.dtype}, outside the storage profile")
        if encoding == "dense":
            return _Layout("dense", data.dtype, tuple(data.shape[1:]), is_bool)
        if "shapes" in obj:
            return _Layout("ragged", data.dtype, (), is_bool, shapes_ndim=int(obj["shapes"].shape[1]))
        return _Layout("ragged", data.dtype, tuple(data.shape[1:]), is_bool)

    def _load_stored(self, split: _Split) -> None:
        """Load and re-read the features of an existing split before it grows (append mode)."""
        for name, obj in split.stored.items():
            feature = self._existing_feature(split, name, obj)
            growing = self._growing_datasets(feature)
            stuck = [d.name for d in growing if d.maxshape[0] is not None]
            if stuck:
                raise WriterError(
                    f"{self.path}: {stuck} cannot grow (not chunked with an unlimited first axis); rewrite the file "
                    "with the reference writer to extend it",
                    path=str(self.path),
                    hdf5_path=feature.hdf5_path,
                )
            self._rehash(feature)
            split.features[name] = feature
        split.stored = {}
        if "shuffle_seed" in split.group.attrs:  # the seed no longer describes the stored order (§7.6)
            del split.group.attrs["shuffle_seed"]

    @staticmethod
    def _growing_datasets(feature: _Feature) -> list[h5py.Dataset]:
        obj = feature.obj
        assert obj is not None
        if isinstance(obj, h5py.Dataset):
            return [obj]
        return [obj[k] for k in ("codes", "values", "offsets", "shapes") if k in obj]

    def _rehash(self, feature: _Feature) -> None:
        """Feed a feature's stored samples to a new hasher and statistics."""
        layout, obj = feature.layout, feature.obj
        assert obj is not None
        feature.hasher = hasher = layout.new_hasher()
        feature.stats = stats = _Stats() if layout.has_stats else None
        n = feature.written
        main = _main_dataset(layout, obj)
        row_bytes = max(1, main.dtype.itemsize * math.prod(main.shape[1:]))
        if layout.encoding in ("ragged", "bytes"):
            offsets = obj["offsets"]
            step = max(1, _BLOCK_BYTES // max(1, feature.written_rows * row_bytes // max(1, n)))
            for start in range(0, n, step):
                off = offsets[start : min(n, start + step) + 1].astype(np.int64)
                values = obj["values"][int(off[0]) : int(off[-1])]
                shapes = obj["shapes"][start : start + off.shape[0] - 1] if layout.shapes_ndim else None
                hasher.update_ragged(np.diff(off), values, shapes)
                if stats is not None:
                    stats.update(values)
            return
        step = _STRING_BLOCK if layout.encoding == "string" else max(1, _BLOCK_BYTES // row_bytes)
        for start in range(0, n, step):
            block = main[start : start + step]
            if layout.encoding == "dense":
                hasher.update_dense(block)
                if stats is not None:
                    stats.update(block)
            elif layout.encoding == "string":
                hasher.update_strings(block.tolist())
            else:
                hasher.update_codes(block)

    # -- building ----------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise WriterError(f"{self.path}: the writer is closed", path=str(self.path))

    def add_split(
        self,
        name: str,
        description: str | None = None,
        *,
        shuffle_seed: int | None = None,
        expected_samples: int | None = None,
    ) -> None:
        """Create a split (§5.1, §5.3).

        Parameters
        ----------
        name
            The split name (§5.1), e.g. ``"train"``.
        description
            Stored as the split attribute ``description``.
        shuffle_seed
            Recorded as ``shuffle_seed`` when the caller stored the samples in
            a seeded random order (§7.6).
        expected_samples
            The number of samples the split will get, when known: small splits
            then get chunks no larger than they need (§7.3).

        Raises
        ------
        WriterError
            If the writer is closed, the name is invalid or already used.
        """
        self._check_open()
        where = str(self.path)
        _check_name(name, "split", where, f"/{name}")
        if name in self._splits:
            raise WriterError(f"{where}: split /{name} already exists", path=where, hdf5_path=f"/{name}")
        if shuffle_seed is not None and (
            not isinstance(shuffle_seed, (int, np.integer)) or isinstance(shuffle_seed, bool)
        ):
            raise WriterError(f"{where}: shuffle_seed of /{name} must be an integer, got {shuffle_seed!r}", path=where)
        group = self._file.create_group(name)
        if description is not None:
            write_attr(group, "description", description)
        if shuffle_seed is not None:
            write_attr(group, "shuffle_seed", int(shuffle_seed))
        self._splits[name] = _Split(name, group, expected_samples=expected_samples)

    def _split(self, name: str) -> _Split:
        if name not in self._splits:
            self.add_split(name)
        return self._splits[name]

    def add_feature(
        self,
        split: str,
        name: str,
        *,
        encoding: str,
        dtype: npt.DTypeLike | None = None,
        sample_shape: Sequence[int] = (),
        sample_ndim: int | None = None,
        class_names: Sequence[str] | None = None,
        role: str | None = None,
        description: str | None = None,
        units: str | None = None,
        sample_rate: float | None = None,
        media_type: str | None = None,
        compression: str | Literal[False] | None = None,
    ) -> None:
        """Declare a feature before its first batch (§6).

        Parameters
        ----------
        split
            The split (created if needed).
        name
            The feature name (§5.2).
        encoding
            ``"dense"``, ``"string"``, ``"categorical"``, ``"ragged"`` or ``"bytes"``.
        dtype
            dense/ragged: the numeric dtype of the values (``bool`` is stored
            as uint8 with ``logical_dtype="bool"``, §3.3); categorical: the
            signed code dtype (default: the smallest that holds K - 1).
        sample_shape
            dense: the shape of one sample; ragged: the shape of one value row
            (samples are ``(length, *sample_shape)``).
        sample_ndim
            ragged samples that vary in more than their first axis: their
            number of axes D (the feature stores ``shapes`` ``(N, D)``, §6.3).
        class_names
            categorical: the K class names (unique, non-empty).
        role, description, units, sample_rate, media_type
            §6.1 attributes (``media_type`` for bytes features, §6.6).
        compression
            ``"gzip"``/``False`` to override the writer's compression.

        Raises
        ------
        WriterError
            If the name is invalid or taken, or the split already has samples.
        EncodingError
            If the options do not describe a valid feature.
        """
        self._check_open()
        where = f"{self.path}:/{split}/{name}"
        fspec = FeatureSpec(
            encoding=encoding,
            dtype=dtype,
            role=role,
            description=description,
            units=units,
            sample_rate=sample_rate,
            media_type=media_type,
            class_names=class_names,
            compression=compression,
        )
        with _located(str(self.path), f"/{split}/{name}"):
            layout = _declared_layout(
                encoding,
                dtype=dtype,
                sample_shape=sample_shape,
                sample_ndim=sample_ndim,
                class_names=class_names,
                where=where,
            )
            self._add_feature(self._split(split), name, layout, fspec)

    def _add_feature(self, split: _Split, name: str, layout: _Layout, fspec: FeatureSpec) -> None:
        hdf5_path = f"/{split.name}/{name}"
        where = str(self.path)
        _check_name(name, "feature", where, hdf5_path)
        if split.frozen:
            raise WriterError(
                f"{where}: cannot add feature {hdf5_path}: split /{split.name} already has its features "
                f"{sorted(split.features)} (every feature of a split has num_samples samples, §5.3)",
                path=where,
                hdf5_path=hdf5_path,
            )
        if name in split.features:
            raise WriterError(f"{where}: feature {hdf5_path} already exists", path=where, hdf5_path=hdf5_path)
        compression = self._compression if fspec.compression is None else fspec.compression or None
        self._check_compression(compression, where)
        attrs = self._feature_attrs(layout, fspec, f"{where}:{hdf5_path}")
        feature = _Feature(split.name, name, layout, attrs, compression)
        feature.hasher = layout.new_hasher()
        feature.stats = _Stats() if layout.has_stats else None
        split.features[name] = feature

    @staticmethod
    def _feature_attrs(layout: _Layout, fspec: FeatureSpec, where: str) -> dict[str, Any]:
        attrs: dict[str, Any] = {"encoding": layout.encoding, "encoding_version": spec.ENCODING_VERSION}
        if fspec.role is not None:
            if fspec.role not in spec.ROLES:
                raise WriterError(f"{where}: role {fspec.role!r} is not one of {list(spec.ROLES)} (§6.1)")
            attrs["role"] = fspec.role
        for key in ("description", "units"):
            text = getattr(fspec, key)
            if text is not None:
                if not isinstance(text, str):
                    raise WriterError(f"{where}: {key} must be a string, got {type(text).__name__}")
                attrs[key] = text
        if fspec.sample_rate is not None:
            rate = fspec.sample_rate
            if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not math.isfinite(rate) or rate <= 0:
                raise WriterError(f"{where}: sample_rate must be a positive number of Hz, got {rate!r} (§6.1)")
            attrs["sample_rate"] = float(rate)
        if layout.logical_bool:
            attrs["logical_dtype"] = "bool"
        if layout.encoding == "bytes":
            media = fspec.media_type or _DEFAULT_MEDIA_TYPE
            if not isinstance(media, str) or media.count("/") != 1 or any(c.isspace() for c in media):
                raise WriterError(f"{where}: media_type {media!r} is not a type/subtype such as 'image/png' (§6.6)")
            attrs["media_type"] = media
        elif fspec.media_type is not None:
            raise WriterError(f"{where}: media_type applies to bytes features only (§6.6)")
        return attrs

    def append(self, split: str, batch: Mapping[str, Any]) -> None:
        """Append samples to every feature of a split (§5.3).

        Parameters
        ----------
        split
            The split (created if needed).
        batch
            ``{feature: values}`` with the same number of samples n for every
            feature; each value as :func:`write` takes it (array ``(n, ...)``,
            list of str/bytes/arrays, :class:`Categorical`, codes). Features
            not declared with :meth:`add_feature` are inferred from the first
            batch. Every later batch names exactly the split's features.

        Raises
        ------
        WriterError
            If the writer is closed, the batch misses or adds features, or its
            features have different numbers of samples (the message lists them).
        EncodingError
            If a value does not fit its feature (shape, dtype, code range, ...).
        """
        self._check_open()
        state = self._split(split)
        if state.stored:
            self._load_stored(state)
        where = str(self.path)
        names = set(batch)
        if state.frozen and names != set(state.features):
            missing, extra = sorted(set(state.features) - names), sorted(names - set(state.features))
            raise WriterError(
                f"{where}: a batch of /{split} must hold exactly its features {sorted(state.features)}; "
                f"missing {missing}, unexpected {extra}",
                path=where,
                hdf5_path=f"/{split}",
            )
        missing = sorted(set(state.features) - names)
        if missing:
            raise WriterError(
                f"{where}: the batch of /{split} lacks declared features {missing}", path=where, hdf5_path=f"/{split}"
            )
        for name in sorted(names - set(state.features)):
            with _located(where, f"/{split}/{name}"):
                layout = _infer_layout(batch[name], self._specs.get(split, name), f"{where}:/{split}/{name}")
                self._add_feature(state, name, layout, self._specs.get(split, name))
        parts: dict[str, _Parts] = {}
        for name in sorted(names):
            with _located(where, f"/{split}/{name}"):
                parts[name] = _normalize(state.features[name].layout, batch[name], f"{where}:/{split}/{name}")
        counts = {name: p.n for name, p in parts.items()}
        if len(set(counts.values())) > 1:
            listed = ", ".join(f"{k}: {v}" for k, v in counts.items())
            raise WriterError(
                f"{where}: the features of a batch of /{split} have different numbers of samples ({listed}); "
                "every feature of a split grows together (§5.3)",
                path=where,
                hdf5_path=f"/{split}",
            )
        state.frozen = state.frozen or bool(parts)
        for name, part in parts.items():
            feature = state.features[name]
            self._feed(feature, part)
            feature.pending.append(part)
            state.pending_bytes += part.nbytes
        state.num_samples += next(iter(counts.values()), 0)
        if state.pending_bytes >= WRITE_BUFFER_BYTES:
            self._flush_split(state, final=False)
        else:
            for feature in state.features.values():
                if feature.pending:
                    feature.pending[-1] = feature.pending[-1].owned()

    def append_sample(self, split: str, sample: Mapping[str, Any]) -> None:
        """Append one sample: ``append(split, {k: [v] for k, v in sample.items()})``.

        Parameters
        ----------
        split
            The split.
        sample
            ``{feature: value of one sample}`` (an array, a str, bytes, a code
            or a class name). A feature inferred from a single sample is dense
            unless it is a str or bytes: declare ragged features first.

        Raises
        ------
        WriterError, EncodingError
            As :meth:`append`.
        """
        batch: dict[str, Any] = {}
        for key, value in sample.items():
            if isinstance(value, np.ndarray) and value.dtype.kind in "biuf":
                batch[key] = value[np.newaxis]
            else:
                batch[key] = [value]
        self.append(split, batch)

    @staticmethod
    def _feed(feature: _Feature, part: _Parts) -> None:
        """Update the fingerprint (§8.2) and statistics (§6.7) with a batch."""
        hasher = feature.hasher
        assert hasher is not None
        enc = feature.layout.encoding
        if enc == "dense":
            hasher.update_dense(part.data)
        elif enc == "string":
            hasher.update_strings(part.data)
        elif enc == "categorical":
            hasher.update_codes(part.data)
        else:
            assert part.lengths is not None
            hasher.update_ragged(part.lengths, part.data, part.shapes)
        if feature.stats is not None:
            feature.stats.update(part.data)

    # -- HDF5 objects ------------------------------------------------------

    def _dataset(
        self,
        parent: h5py.Group,
        name: str,
        dtype: Any,
        sample_shape: tuple[int, ...],
        itemsize: int,
        hint: int | None,
        compression: str | None,
    ) -> h5py.Dataset:
        """A resizable dataset ``(0, *sample_shape)`` with §7 chunks."""
        options: dict[str, Any] = {}
        if compression is not None:
            options = {"compression": compression, "compression_opts": self._compression_opts, "shuffle": itemsize > 1}
        return parent.create_dataset(
            name,
            shape=(0, *sample_shape),
            maxshape=(None, *sample_shape),
            dtype=dtype,
            chunks=chunk_shape(sample_shape, itemsize, hint),
            **options,
        )

    def _create(self, split: _Split, feature: _Feature, final: bool) -> None:
        """Create a feature's HDF5 objects; chunk rows use the final sizes when known."""
        layout, comp = feature.layout, feature.compression
        n_hint = feature.pending_n if final else split.expected_samples
        rows_hint = sum(int(p.lengths.sum()) for p in feature.pending if p.lengths is not None) if final else None
        enc = layout.encoding
        obj: h5py.Dataset | h5py.Group
        if enc == "dense":
            assert layout.dtype is not None
            obj = self._dataset(
                split.group, feature.name, layout.dtype, layout.sample_shape, layout.dtype.itemsize, n_hint, comp
            )
        elif enc == "string":
            obj = self._dataset(split.group, feature.name, _STR_DTYPE, (), VLEN_ELEMENT_BYTES, n_hint, None)
        else:
            obj = split.group.create_group(feature.name)
            assert layout.dtype is not None
            if enc == "categorical":
                assert layout.class_names is not None
                self._dataset(obj, "codes", layout.dtype, (), layout.dtype.itemsize, n_hint, comp)
                obj.create_dataset("class_names", data=np.array(layout.class_names, dtype=object), dtype=_STR_DTYPE)
            else:
                self._dataset(obj, "values", layout.dtype, layout.sample_shape, layout.dtype.itemsize, rows_hint, comp)
                offsets_hint = None if n_hint is None else n_hint + 1
                offsets = self._dataset(obj, "offsets", np.dtype("<i8"), (), 8, offsets_hint, comp)
                offsets.resize((1,))
                offsets[0] = 0
                if layout.shapes_ndim is not None:
                    d = layout.shapes_ndim
                    self._dataset(obj, "shapes", np.dtype("<i8"), (d,), 8, n_hint, comp)
        for key, value in feature.attrs.items():
            write_attr(obj, key, value)
        feature.obj = obj

    def _flush_split(self, split: _Split, final: bool) -> None:
        """Write a split's buffered samples to HDF5 (creating objects first)."""
        for feature in split.features.values():
            if feature.obj is None:
                self._create(split, feature, final)
            if not feature.pending:
                continue
            self._write_parts(feature, _concat(feature.layout, feature.pending))
            feature.pending = []
        split.pending_bytes = 0

    def _write_parts(self, feature: _Feature, part: _Parts) -> None:
        obj, enc = feature.obj, feature.layout.encoding
        assert obj is not None
        start, stop = feature.written, feature.written + part.n
        if enc in ("dense", "string", "categorical"):
            ds = obj if enc != "categorical" else obj["codes"]
            ds.resize(stop, axis=0)
            if part.n:
                ds[start:stop] = np.array(part.data, dtype=object) if enc == "string" else part.data
        else:
            assert part.lengths is not None
            rows = int(part.data.shape[0])
            values = obj["values"]
            values.resize(feature.written_rows + rows, axis=0)
            if rows:
                values[feature.written_rows :] = part.data
            offsets = obj["offsets"]
            offsets.resize(stop + 1, axis=0)
            if part.n:
                offsets[start + 1 :] = feature.written_rows + np.cumsum(part.lengths, dtype=np.int64)
            if part.shapes is not None:
                shapes = obj["shapes"]
                shapes.resize(stop, axis=0)
                if part.n:
                    shapes[start:stop] = part.shapes
            feature.written_rows += rows
        feature.written = stop

    # -- finishing -----------------------------------------------------------

    def flush(self) -> None:
        """Write every buffered sample to the temporary file and flush HDF5.

        The target path is not touched: a crash after a flush leaves an
        incomplete temporary file (no ``complete`` attribute, §4.4) and the
        target as it was.

        Raises
        ------
        WriterError
            If the writer is closed.
        """
        self._check_open()
        for split in self._splits.values():
            if any(f.pending for f in split.features.values()):
                self._flush_split(split, final=False)
        self._file.flush()

    def _write_fingerprints(self) -> dict[tuple[str, str], str]:
        """Write the fingerprints and statistics of new and extended features (and fingerprints that are missing).

        Returns
        -------
        dict
            ``{(split, feature): fingerprint}`` for every feature of the file.
        """
        out: dict[tuple[str, str], str] = {}
        for split in self._splits.values():
            for feature in split.features.values():
                obj, hasher = feature.obj, feature.hasher
                assert obj is not None and hasher is not None
                out[(split.name, feature.name)] = fp = hasher.fingerprint()
                write_attr(obj, "fingerprint", fp)
                for key in _STATS_ATTRS:
                    if key in obj.attrs:
                        del obj.attrs[key]
                if feature.stats is not None:
                    for key, value in feature.stats.attrs().items():
                        write_attr(obj, key, value)
            for name, obj in split.stored.items():  # untouched features of the existing file
                fp = read_attr(obj, "fingerprint", None)
                if not isinstance(fp, str) or not FINGERPRINT_PATTERN.match(fp):
                    feature = self._existing_feature(split, name, obj)
                    self._rehash(feature)
                    assert feature.hasher is not None
                    fp = feature.hasher.fingerprint()
                    write_attr(obj, "fingerprint", fp)
                out[(split.name, name)] = fp
        return out

    def _finish(self) -> None:
        for split in self._splits.values():
            self._flush_split(split, final=True)
            if not split.stored:  # new, or loaded to be extended
                write_attr(split.group, "num_samples", split.num_samples)
        write_attr(self._file, "fingerprint", file_fingerprint(self._write_fingerprints()))
        write_attr(self._file, "complete", 1)  # last (§4.4)
        self._file.flush()
        self._file.close()
        _fsync(self.temp_path)
        os.replace(self.temp_path, self.path)
        if os.name == "posix":
            _fsync(self.path.parent)

    def close(self, abort: bool = False) -> None:
        """Finish the file and move it to the target, or abort (§4.4).

        Parameters
        ----------
        abort
            Delete the temporary file instead; the target stays as it was.

        Raises
        ------
        OSError, WriterError, EncodingError
            If finishing fails: the temporary file is deleted, the target is
            untouched and the error propagates. Closing twice does nothing.
        """
        if self._closed:
            return
        self._closed = True
        if abort:
            self._finalizer()
            return
        try:
            self._finish()
        except BaseException:
            self._finalizer()
            raise
        self._finalizer.detach()

    def __enter__(self) -> Writer:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close(abort=exc_type is not None)


# --------------------------------------------------------------------------
# in-memory writing


def _draw_seed() -> int:
    """A fresh non-negative 63-bit seed (it is recorded as an int64 attribute)."""
    return int(np.random.SeedSequence().generate_state(1, dtype=np.uint64)[0] >> np.uint64(1))


def _column_length(column: Any) -> int | None:
    """Number of samples of an in-memory column, or None if it is not a sequence of samples."""
    if isinstance(column, np.ndarray):
        return int(column.shape[0]) if column.ndim else None
    if isinstance(column, (str, bytes)) or not hasattr(column, "__len__"):
        return None
    return len(column)


def _column_nbytes(column: Any) -> int:
    if isinstance(column, np.ndarray):
        return int(column.nbytes)
    if isinstance(column, Categorical):
        return int(column.codes.nbytes)
    total = 0
    for v in column:
        total += len(v) if isinstance(v, (str, bytes, bytearray)) else int(np.asarray(v).nbytes)
    return total


def _take(column: Any, index: slice | np.ndarray) -> Any:
    if isinstance(column, np.ndarray):
        return column[index]
    if isinstance(column, Categorical):
        return Categorical(column.codes[index], column.class_names)
    if isinstance(index, slice):
        return column[index]
    return [column[int(i)] for i in index]


def write(
    path: str | os.PathLike[str],
    splits: Mapping[str, Mapping[str, Any]],
    metadata: Mapping[str, Any] | None = None,
    *,
    compression: str | None = None,
    compression_opts: int | None = None,
    shuffle: bool = False,
    seed: int | None = None,
    features: Mapping[str, FeatureSpec | Mapping[str, Any]] | None = None,
) -> Path:
    """Write in-memory data as an h5ml file, atomically (§4, §5, §6, §7, §8).

    Parameters
    ----------
    path
        The target file (replaced on success; untouched on failure).
    splits
        ``{split: {feature: values}}``. Values: numeric array ``(N, ...)``
        (dense; bool stored as uint8 0/1, §3.3), numpy str array or list of
        ``str`` (string), :class:`Categorical` or a pandas-like categorical
        (categorical), list of arrays differing in their first axis (ragged)
        or in more axes (ragged with ``shapes``), list of ``bytes`` (bytes).
        Every feature of a split has the same number of samples N.
    metadata
        Root metadata (§4.2); see :class:`Writer`.
    compression, compression_opts
        ``"gzip"`` or ``None``, and the gzip level; see :class:`Writer`.
    shuffle
        Store each split's samples in a random order (§7.6): the stored sample
        ``i`` is the source sample ``p[i]`` with
        ``p = numpy.random.default_rng(shuffle_seed).permutation(N)``, the same
        for every feature of the split; ``shuffle_seed`` is recorded on the split.
    seed
        The shuffle seed (an int >= 0). With ``shuffle=True`` and no seed one
        is drawn from ``numpy.random.SeedSequence`` and recorded.
    features
        Options per feature: ``{"label": {"role": "target"}}`` applies to the
        feature of every split; ``"split/feature"`` keys apply to one split and
        override the general ones field by field. Values are
        :class:`FeatureSpec` or dicts of its fields.

    Returns
    -------
    pathlib.Path
        The target path.

    Raises
    ------
    WriterError
        If names are invalid, a split's features have different lengths (all
        are listed), ``features=`` names an unknown feature, or ``seed`` is
        given without ``shuffle``.
    EncodingError
        If a value has no encoding or breaks its encoding's rules (the message
        names the file and the HDF5 path).
    MetadataError
        If the metadata is invalid.
    """
    where = str(path)
    if seed is not None and not shuffle:
        raise WriterError(
            f"{where}: seed={seed} was given but shuffle is False; pass shuffle=True or no seed", path=where
        )
    if shuffle:
        seed = _draw_seed() if seed is None else seed
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
            raise WriterError(f"{where}: seed must be an integer >= 0, got {seed!r}", path=where)
    specs = _SpecTable(features)
    specs.check_used(splits)
    columns_by_split = {s: {f: _as_categorical(v) for f, v in cols.items()} for s, cols in splits.items()}
    for split, columns in columns_by_split.items():
        lengths = {f: _column_length(c) for f, c in columns.items()}
        for name, length in lengths.items():
            if length is None:
                kind = type(columns[name]).__name__
                raise EncodingError(
                    f"{where}:/{split}/{name}: expected an array or a list of samples, got a {kind}",
                    path=where,
                    hdf5_path=f"/{split}/{name}",
                )
        if len(set(lengths.values())) > 1:
            listed = ", ".join(f"{f}: {n}" for f, n in lengths.items())
            raise WriterError(
                f"{where}: the features of split /{split} have different numbers of samples ({listed}); every "
                "feature of a split has num_samples samples (§5.3)",
                path=where,
                hdf5_path=f"/{split}",
            )
    with Writer(path, metadata, compression=compression, compression_opts=compression_opts) as w:
        for split, columns in columns_by_split.items():
            n = next(iter(len(c) for c in columns.values()), 0)  # all equal, checked above
            w.add_split(split, shuffle_seed=seed if shuffle else None, expected_samples=n)
            state = w._splits[split]
            for name, column in columns.items():
                fspec = specs.get(split, name)
                with _located(where, f"/{split}/{name}"):
                    w._add_feature(state, name, _infer_layout(column, fspec, f"{where}:/{split}/{name}"), fspec)
            order = np.random.default_rng(seed).permutation(n) if shuffle else None
            sample_bytes = max(1, sum(_column_nbytes(c) for c in columns.values()) // max(1, n))
            step = max(1, _BLOCK_BYTES // sample_bytes)
            for start in range(0, n, step):
                index: slice | np.ndarray = slice(start, start + step) if order is None else order[start : start + step]
                w.append(split, {name: _take(column, index) for name, column in columns.items()})
    return Path(path)
