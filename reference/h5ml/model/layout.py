"""What one feature looks like in the file: its :class:`Layout` and attributes (§6).

A layout is the encoding of a feature plus everything that fixes the shape of
its HDF5 objects: the stored dtype, the sample (or value row) shape, whether
the numbers are logically bool, the number of axes of ragged samples that vary
in several axes, and the class names of a categorical feature. The writer gets
a layout in one of three ways:

- :func:`declared_layout`: from explicit options (``Writer.add_feature``);
- :func:`infer_layout`: from the first values of a feature, choosing the
  encoding as the table in :mod:`h5ml.writer.writer` describes;
- :func:`stored_layout`: from a feature already in a file (append mode).

:func:`feature_attrs` gives the §6.1 attributes a new feature is created with.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

import h5py
import numpy as np
import numpy.typing as npt

from h5ml import spec
from h5ml.errors import EncodingError, WriterError
from h5ml.model.allocation import unallocated_components
from h5ml.model.filters import stored_compression
from h5ml.model.fingerprint import FeatureHasher
from h5ml.model.values import (
    Categorical,
    FeatureSpec,
    as_categorical,
    dense_array,
    is_bytes,
    is_text,
    text_problem,
    to_list,
)
from h5ml.spec.attrs import read_attr

__all__ = [
    "DEFAULT_MEDIA_TYPE",
    "Layout",
    "declared_layout",
    "feature_attrs",
    "infer_layout",
    "main_dataset",
    "stored_layout",
    "stored_spec",
]

#: §6.6 the media type of a bytes feature when none is given.
DEFAULT_MEDIA_TYPE: Final = "application/octet-stream"


@dataclass(frozen=True)
class Layout:
    """The stored form of one feature (§6).

    Attributes
    ----------
    encoding
        One of ``spec.ENCODINGS``.
    dtype
        The stored little-endian dtype of dense values, ragged values,
        categorical codes or bytes (uint8); ``None`` for strings.
    sample_shape
        dense: the shape of one sample; ragged without ``shapes``: the shape
        of one value row (samples are ``(length, *sample_shape)``); else ``()``.
    logical_bool
        The values are bool stored as uint8 0/1 (``logical_dtype="bool"``, §3.3).
    shapes_ndim
        ragged samples that vary in more than their first axis: their number
        of axes D (the feature stores ``shapes`` ``(N, D)``); else ``None``.
    class_names
        categorical: the K class names in code order; else ``None``.
    """

    encoding: str
    dtype: np.dtype[Any] | None
    sample_shape: tuple[int, ...] = ()
    logical_bool: bool = False
    shapes_ndim: int | None = None
    class_names: tuple[str, ...] | None = None

    @property
    def hash_dtype(self) -> np.dtype[Any] | None:
        """The dtype the fingerprint names (§8.2): ``bool`` for logical bools, else the stored dtype."""
        return np.dtype(np.bool_) if self.logical_bool else self.dtype

    def new_hasher(self) -> FeatureHasher:
        """A fresh streaming fingerprint (§8.2) for a feature of this layout."""
        return FeatureHasher(self.encoding, self.hash_dtype, self.sample_shape, class_names=self.class_names)

    @property
    def has_stats(self) -> bool:
        """Whether the writer records statistics (§6.7) for this feature: numeric dense and ragged features."""
        return self.encoding in ("dense", "ragged")


# --------------------------------------------------------------------------
# declared layouts


def _storage_dtype(dtype: npt.DTypeLike, where: str) -> tuple[np.dtype[Any], bool]:
    """Return (stored little-endian dtype, is bool) for a numeric dtype (§3.2, §3.3)."""
    dt = np.dtype(dtype)
    # SPEC §3.3-R1: a bool feature is stored as uint8 with logical_dtype 'bool'
    if dt.kind == "b":
        return np.dtype(np.uint8), True
    # SPEC §2.2-R1: a dtype this format cannot hold (complex, structured, datetime, ...) raises, never stored
    if dt.kind not in "iuf" or (dt.kind == "f" and dt.itemsize not in (2, 4, 8)):
        raise EncodingError(
            f"{where}: dtype {dt} is outside the storage profile (§3.2); use bool, int8-64, uint8-64 or float16/32/64"
        )
    return dt.newbyteorder("<"), False


def _check_class_names(names: Sequence[Any], where: str) -> tuple[str, ...]:
    items = tuple(names)
    bad = [n for n in items if not isinstance(n, str) or not n or text_problem(n)]
    if bad:
        raise EncodingError(
            f"{where}: class names must be non-empty strings without NUL characters or lone surrogates, "
            f"got {bad[:5]!r} (§3.4, §6.5)"
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


def declared_layout(
    encoding: str,
    *,
    dtype: npt.DTypeLike | None,
    sample_shape: Sequence[int],
    sample_ndim: int | None,
    class_names: Sequence[str] | None,
    where: str,
) -> Layout:
    """Build and check the layout of a feature from explicit options (§6).

    Parameters
    ----------
    encoding
        One of ``spec.ENCODINGS``.
    dtype
        dense/ragged (required): the numeric dtype of the values (bool is
        stored as uint8, §3.3); categorical: the signed code dtype (default:
        the smallest of int8-64 that holds K - 1); ignored otherwise.
    sample_shape
        dense: one sample's shape; ragged: one value row's shape. Axes >= 0
        (an axis of length 0 is allowed: such samples hold no values, §6.2).
    sample_ndim
        ragged samples that vary in several axes: their number of axes
        (exclusive with ``sample_shape``).
    class_names
        categorical (required): the K class names.
    where
        ``"<file>:<hdf5 path>"``, used in error messages.

    Returns
    -------
    Layout
        The checked layout.

    Raises
    ------
    EncodingError
        If the encoding is unknown, a dtype is outside the storage profile
        (§3.2) or missing, a shape axis is < 0, ``sample_shape``/``sample_ndim``
        do not fit the encoding, or class names are missing, empty, not
        unique or do not fit the code dtype (§6.5).
    """
    if encoding not in spec.ENCODINGS:
        raise EncodingError(f"{where}: unknown encoding {encoding!r}; expected one of {sorted(spec.ENCODINGS)} (§6)")
    shape = tuple(int(d) for d in sample_shape)
    if any(d < 0 for d in shape):
        raise EncodingError(f"{where}: sample shape {shape} has a negative axis; axes must be >= 0")
    if encoding in ("dense", "ragged"):
        if dtype is None:
            raise EncodingError(f"{where}: a {encoding} feature needs a dtype")
        stored, is_bool = _storage_dtype(dtype, where)
        if encoding == "dense":
            return Layout("dense", stored, shape, is_bool)
        if sample_ndim is not None:
            if sample_ndim < 1 or shape:
                raise EncodingError(f"{where}: sample_ndim must be >= 1 and excludes sample_shape (§6.3)")
            return Layout("ragged", stored, (), is_bool, shapes_ndim=int(sample_ndim))
        return Layout("ragged", stored, shape, is_bool)
    if shape or sample_ndim is not None:
        raise EncodingError(f"{where}: sample_shape/sample_ndim apply to dense and ragged features only")
    if encoding == "string":
        return Layout("string", None)
    if encoding == "bytes":
        return Layout("bytes", np.dtype(np.uint8))
    if class_names is None:
        raise EncodingError(f"{where}: a categorical feature needs class_names (§6.5)")
    names = _check_class_names(class_names, where)
    return Layout("categorical", _codes_dtype(len(names), dtype, where), class_names=names)


# --------------------------------------------------------------------------
# inferred layouts


def infer_layout(value: Any, fspec: FeatureSpec, where: str) -> Layout:
    """Choose the encoding and layout of a feature from its first values (§6).

    Parameters
    ----------
    value
        The feature's first batch (or whole column): see the table in
        :mod:`h5ml.writer.writer`.
    fspec
        The feature's options: a given ``encoding``, ``dtype`` or
        ``class_names`` takes precedence over what the values suggest
        (``class_names`` turns strings and integers into a categorical).
    where
        ``"<file>:<hdf5 path>"``, used in error messages.

    Returns
    -------
    Layout
        The checked layout (see :func:`declared_layout`).

    Raises
    ------
    EncodingError
        If the values have no encoding (an empty list, a scalar, a dtype
        outside §3.2, mixed kinds), contradict the given encoding, or the
        resulting layout is invalid.
    """
    value = as_categorical(value)
    encoding = fspec.encoding
    if fspec.sample_ndim is not None:
        if isinstance(value, Categorical) or encoding not in (None, "ragged"):
            kind = "categorical" if isinstance(value, Categorical) else encoding
            raise EncodingError(f"{where}: sample_ndim applies to ragged features only, not {kind!r} (§6.3)")
        encoding = "ragged"
    if isinstance(value, Categorical):
        if encoding not in (None, "categorical"):
            raise EncodingError(f"{where}: Categorical values cannot be stored as {encoding!r}")
        return declared_layout(
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
            strings = [v for v in to_list(items) if v is not None]
            if not all(is_text(v) for v in strings):
                raise EncodingError(f"{where}: integer categorical codes need class_names (§6.5)")
            names = sorted({str(v) for v in strings})
        return declared_layout(
            "categorical", dtype=fspec.dtype, sample_shape=(), sample_ndim=None, class_names=names, where=where
        )
    if encoding == "dense":
        arr = dense_array(items, where)
        dtype = arr.dtype if fspec.dtype is None else fspec.dtype
        return declared_layout(
            "dense", dtype=dtype, sample_shape=arr.shape[1:], sample_ndim=None, class_names=None, where=where
        )
    if encoding == "ragged":
        return _infer_ragged(items, fspec, where)
    return declared_layout(encoding, dtype=None, sample_shape=(), sample_ndim=None, class_names=None, where=where)


def _infer_ragged(items: Sequence[Any], fspec: FeatureSpec, where: str) -> Layout:
    """Ragged samples get ``shapes`` when ``fspec.sample_ndim`` is given or they vary past their first axis (§6.3)."""
    arrays = [np.asarray(v) for v in items]
    if fspec.sample_ndim is not None:
        dtype = fspec.dtype
        if dtype is None and arrays:
            dtype = np.result_type(*{a.dtype for a in arrays})
        return declared_layout(
            "ragged", dtype=dtype, sample_shape=(), sample_ndim=fspec.sample_ndim, class_names=None, where=where
        )
    if not arrays and fspec.dtype is not None:  # no samples: 1-D samples of the given dtype
        return declared_layout(
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
        return declared_layout(
            "ragged", dtype=dtype, sample_shape=trailing.pop(), sample_ndim=None, class_names=None, where=where
        )
    return declared_layout(
        "ragged", dtype=dtype, sample_shape=(), sample_ndim=ndims.pop(), class_names=None, where=where
    )


def _infer_encoding(items: Any, fspec: FeatureSpec, where: str) -> str:
    if isinstance(items, np.ndarray) and items.dtype.kind != "O":
        if items.dtype.kind in "biuf":
            return "categorical" if fspec.class_names is not None else "dense"
        if items.dtype.kind in "US":
            return "categorical" if fspec.class_names is not None else "string"
        raise EncodingError(f"{where}: numpy dtype {items.dtype} has no h5ml encoding (§3.2)")
    seq = to_list(items)
    if not seq:
        raise EncodingError(
            f"{where}: cannot infer an encoding from an empty list; pass features={{...: {{'encoding': ...}}}}"
        )
    if all(is_text(v) for v in seq):
        return "categorical" if fspec.class_names is not None else "string"
    if all(is_bytes(v) for v in seq):
        return "bytes"
    if fspec.class_names is not None:
        return "categorical"
    arrays = [np.asarray(v) for v in seq]
    if any(a.dtype.kind not in "biuf" for a in arrays):
        kinds = sorted({type(v).__name__ for v in seq})
        raise EncodingError(f"{where}: cannot infer an encoding for a list of {kinds}; use arrays, str or bytes")
    return "dense" if len({a.shape for a in arrays}) == 1 else "ragged"


# --------------------------------------------------------------------------
# stored layouts (append mode)


def stored_layout(encoding: str, obj: Any) -> Layout:
    """Read the layout of a feature already in a file, to extend it (§6).

    Parameters
    ----------
    encoding
        The feature's ``encoding`` attribute, one of ``spec.ENCODINGS``
        (checked by the caller, as is the object kind it implies).
    obj
        The feature's ``h5py.Dataset`` (dense, string) or ``h5py.Group``.

    Returns
    -------
    Layout
        The layout new samples must follow.

    Raises
    ------
    EncodingError
        If strings are not variable-length, codes are not signed integers,
        values are outside the storage profile, or a dataset of the feature
        was never written (E146, §3.5.1: its class names or offsets would be
        fill values).
    KeyError, TypeError, ValueError
        If the feature's objects are missing or malformed (h5py's errors).
    """
    never_written = unallocated_components(obj)
    if never_written:
        # SPEC §3.5.1-R1: never-written storage would be read back as fill values (class names, offsets)
        raise EncodingError(
            "; ".join(m.what for m in never_written.values()) + " (E146, SPEC §3.5.1): write the feature again"
        )
    if encoding == "string":
        info = h5py.check_string_dtype(obj.dtype)
        if info is None or info.length is not None:
            raise EncodingError("strings must be variable-length to be extended")
        return Layout("string", None)
    if encoding == "categorical":
        names = [n.decode("utf-8") if isinstance(n, bytes) else str(n) for n in obj["class_names"][()]]
        codes = obj["codes"]
        if codes.dtype.kind != "i":
            raise EncodingError(f"codes have dtype {codes.dtype}, not a signed integer")
        return Layout("categorical", codes.dtype, class_names=tuple(names))
    if encoding == "bytes":
        return Layout("bytes", np.dtype(np.uint8))
    data = obj if encoding == "dense" else obj["values"]
    is_bool = read_attr(obj, "logical_dtype", None) == "bool"
    if data.dtype.kind not in "iuf":
        raise EncodingError(f"values have dtype {data.dtype}, outside the storage profile")
    if encoding == "dense":
        return Layout("dense", data.dtype, tuple(data.shape[1:]), is_bool)
    if "shapes" in obj:
        return Layout("ragged", data.dtype, (), is_bool, shapes_ndim=int(obj["shapes"].shape[1]))
    return Layout("ragged", data.dtype, tuple(data.shape[1:]), is_bool)


def stored_spec(encoding: str, obj: Any) -> FeatureSpec:
    """The options a feature already in a file was written with, for the same feature of a new split (§6.1).

    Parameters
    ----------
    encoding
        The feature's ``encoding`` attribute (checked by the caller).
    obj
        The feature's ``h5py.Dataset`` or ``h5py.Group``.

    Returns
    -------
    FeatureSpec
        Its encoding; dtype (``bool`` for logical booleans; none for
        strings); class names (categorical); number of sample axes (ragged
        with ``shapes``); ``compression="gzip"`` or ``"zstd"`` when its
        main dataset is so compressed; and the ``role``, ``description``, ``units``,
        ``sample_rate`` and ``media_type`` attributes it carries.

    Raises
    ------
    EncodingError, KeyError, TypeError, ValueError
        As :func:`stored_layout`, for a malformed feature.
    """
    layout = stored_layout(encoding, obj)
    text: dict[str, Any] = {}
    for key in ("role", "description", "units", "media_type"):
        value = read_attr(obj, key, None)
        if isinstance(value, str):
            text[key] = value
    rate = read_attr(obj, "sample_rate", None)
    main = main_dataset(layout, obj)
    return FeatureSpec(
        encoding=encoding,
        dtype=None if layout.dtype is None or encoding == "bytes" else layout.hash_dtype,
        class_names=layout.class_names,
        sample_ndim=layout.shapes_ndim,
        sample_rate=float(rate) if isinstance(rate, (int, float)) and not isinstance(rate, bool) else None,
        compression=stored_compression(main),
        **text,
    )


def main_dataset(layout: Layout, obj: Any) -> h5py.Dataset:
    """The dataset holding a feature's samples: the feature itself, its ``codes`` or its ``values`` (§6).

    Parameters
    ----------
    layout
        The feature's layout.
    obj
        The feature's ``h5py.Dataset`` or ``h5py.Group``.
    """
    if layout.encoding in ("dense", "string"):
        return obj
    return obj["codes"] if layout.encoding == "categorical" else obj["values"]


# --------------------------------------------------------------------------
# attributes


def feature_attrs(layout: Layout, fspec: FeatureSpec, where: str) -> dict[str, Any]:
    """The §6.1 attributes a new feature is created with.

    Parameters
    ----------
    layout
        The feature's layout (gives ``encoding`` and ``logical_dtype``).
    fspec
        The feature's options (``role``, ``description``, ``units``,
        ``sample_rate`` in Hz, ``media_type``).
    where
        ``"<file>:<hdf5 path>"``, used in error messages.

    Returns
    -------
    dict
        ``{attribute: value}``: ``encoding``, ``encoding_version`` and the
        options given; a bytes feature always gets a ``media_type`` (default
        :data:`DEFAULT_MEDIA_TYPE`, §6.6); ``sample_rate`` is a float.

    Raises
    ------
    WriterError
        If the role is not one of ``spec.ROLES``, a description or units is
        not a string or holds a NUL character or a lone surrogate (§3.4), the sample rate is not a positive finite number, or the
        media type is malformed or given for a feature that is not bytes.
    """
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
            problem = text_problem(text)
            if problem:
                raise WriterError(f"{where}: {key} {text!r} {problem} (§3.4)")
            attrs[key] = text
    if fspec.sample_rate is not None:
        rate = fspec.sample_rate
        if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not math.isfinite(rate) or rate <= 0:
            raise WriterError(f"{where}: sample_rate must be a positive number of Hz, got {rate!r} (§6.1)")
        attrs["sample_rate"] = float(rate)
    if layout.logical_bool:
        attrs["logical_dtype"] = "bool"
    if layout.encoding == "bytes":
        media = DEFAULT_MEDIA_TYPE if fspec.media_type is None else fspec.media_type
        problem = spec.media_type_problem(media)
        if problem is not None:
            raise WriterError(
                f"{where}: media_type {media!r} {problem}; give an IANA media type with optional "
                "'; name=value' parameters, such as 'image/png' or 'audio/L16; rate=16000' (§6.6)"
            )
        attrs["media_type"] = media
    elif fspec.media_type is not None:
        raise WriterError(f"{where}: media_type applies to bytes features only (§6.6)")
    for key, value in (fspec.attrs or {}).items():
        if not isinstance(key, str) or not key.strip() or key.startswith(spec.RESERVED_PREFIX):
            raise WriterError(
                f"{where}: user attribute name {key!r} is empty or reserved (names starting with '_', §5.4)"
            )
        if key in spec.FEATURE_COMMON_ATTRS or key in attrs:
            raise WriterError(
                f"{where}: user attribute {key!r} is a §6.1 attribute; give it as its own option, or rename it "
                "(a prefix with a colon, such as 'source:units', §4.7)"
            )
        if isinstance(value, str) and text_problem(value):
            raise WriterError(f"{where}: user attribute {key!r} {text_problem(value)} (§3.4)")
        attrs[key] = value
    return attrs
