"""The values a user hands to the writer: :class:`Categorical`, :class:`FeatureSpec` and in-memory columns.

Booleans (§3.3), strings (§3.4), categorical codes and class names (§6.5) and
the options of a feature (§6.1) are recognised and checked here.

This module holds the user-facing value types of :mod:`h5ml.writer.writer` (which
re-exports them) and the small tests that recognise what kind of Python value a
feature was given. Turning values into a feature's stored layout is
:mod:`h5ml.model.layout`'s job; turning a batch into its stored form is
:mod:`h5ml.writer.batches`'.

Terms used throughout the writer modules:

- a *column* is a feature's values for every sample of a split, as given to
  :func:`h5ml.write` (:func:`h5ml.writer.inmemory.write`);
- a *batch* is a feature's values for some samples, as given to
  :meth:`h5ml.Writer.append` (:class:`h5ml.writer.streaming.Writer`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from h5ml.errors import EncodingError, WriterError

__all__ = [
    "Categorical",
    "FeatureSpec",
    "SpecTable",
    "as_categorical",
    "column_length",
    "column_nbytes",
    "dense_array",
    "is_bytes",
    "is_text",
    "take",
    "text_problem",
    "to_list",
    "utf8_nbytes",
]


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
        ``"gzip"``, ``"zstd"`` or ``False`` to override the writer's
        compression for this feature; ``None`` uses the writer's.
    sample_ndim
        A ragged feature whose samples vary in more than their first axis
        (images of different heights and widths): their number of axes D
        (>= 1). The feature stores ``shapes`` (N, D) (§6.3) whatever its
        first batch looks like; without it a first batch whose samples
        differ only in their first axis fixes the row shape, and a later
        sample of another row shape is refused.
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
    sample_ndim: int | None = None
    attrs: Mapping[str, Any] | None = None

    def merged(self, other: FeatureSpec) -> FeatureSpec:
        """Return this spec with every field that ``other`` gives replaced."""
        given = {
            f.name: getattr(other, f.name) for f in dataclasses.fields(other) if getattr(other, f.name) is not None
        }
        return dataclasses.replace(self, **given)

    def conflicts(self, other: FeatureSpec) -> list[str]:
        """Name the fields that both specs give with different values (dtypes and class names compared by value).

        Parameters
        ----------
        other
            Another spec of the same feature.

        Returns
        -------
        list of str
            ``"field: <this value> vs <other value>"`` for each such field, in
            field order; empty when :meth:`merged` loses nothing.
        """
        out: list[str] = []
        for field in dataclasses.fields(self):
            a, b = getattr(self, field.name), getattr(other, field.name)
            if a is not None and b is not None and not _same_option(field.name, a, b):
                out.append(f"{field.name}: {a!r} vs {b!r}")
        return out


def _same_option(name: str, a: Any, b: Any) -> bool:
    if name == "dtype":
        try:
            return bool(np.dtype(a) == np.dtype(b))
        except TypeError:
            return bool(a == b)
    if name == "class_names":
        return tuple(a) == tuple(b)
    return bool(a == b)


def _as_spec(value: FeatureSpec | Mapping[str, Any], key: str) -> FeatureSpec:
    if isinstance(value, FeatureSpec):
        return value
    if not isinstance(value, Mapping):
        raise WriterError(
            f"features[{key!r}] must be a FeatureSpec or a dict of its fields, got a {type(value).__name__}"
        )
    names = {f.name for f in dataclasses.fields(FeatureSpec)}
    unknown = sorted(set(value) - names, key=str)
    if unknown:
        raise WriterError(f"features[{key!r}] has unknown option(s) {unknown}; the options are {sorted(names)}")
    return FeatureSpec(**value)


class SpecTable:
    """The writer's ``features=`` option: a :class:`FeatureSpec` per feature (§6.1).

    Parameters
    ----------
    features
        ``{key: FeatureSpec or dict of its fields}``. A key ``"feature"``
        applies to the feature of that name in every split; a key
        ``"split/feature"`` applies to one split and overrides the general
        key field by field.

    Attributes
    ----------
    specs
        The options by key.
    used
        The keys applied to a feature so far (:meth:`mark_used`).

    Raises
    ------
    WriterError
        If ``features`` is not a mapping, a key is not a string, or a value
        is neither a :class:`FeatureSpec` nor a dict of its fields.
    """

    def __init__(self, features: Mapping[str, FeatureSpec | Mapping[str, Any]] | None) -> None:
        if features is not None and not isinstance(features, Mapping):
            raise WriterError(
                f"features= must be a dict {{feature or 'split/feature': options}}, got a {type(features).__name__}"
            )
        bad = [key for key in (features or {}) if not isinstance(key, str)]
        if bad:
            raise WriterError(f"features= keys must be 'feature' or 'split/feature' strings, got {bad[:5]!r}")
        self.specs = {key: _as_spec(value, key) for key, value in (features or {}).items()}
        self.used: set[str] = set()

    def get(self, split: str, feature: str) -> FeatureSpec:
        """Return the options of ``feature`` in ``split`` (an empty spec if none are given)."""
        general = self.specs.get(feature, FeatureSpec())
        specific = self.specs.get(f"{split}/{feature}")
        return general if specific is None else general.merged(specific)

    def mark_used(self, split: str, feature: str) -> None:
        """Record that the options of ``feature`` in ``split`` were applied to a feature (see :meth:`unused`)."""
        self.used.update(key for key in (feature, f"{split}/{feature}") if key in self.specs)

    def unused(self, split: str | None = None) -> list[str]:
        """The keys never marked used, sorted; with ``split``, only the ``"split/feature"`` keys of that split."""
        keys = set(self.specs) - self.used
        if split is not None:
            keys = {key for key in keys if key.startswith(f"{split}/")}
        return sorted(keys)

    def check_used(self, splits: Mapping[str, Mapping[str, Any]]) -> None:
        """Check that every key names a feature of ``splits`` (``{split: {feature: values}}``).

        Raises
        ------
        WriterError
            If a key matches no feature; the message lists the known keys.
        """
        known = {f for cols in splits.values() for f in cols} | {f"{s}/{f}" for s, cols in splits.items() for f in cols}
        unused = sorted(set(self.specs) - known)
        if unused:
            raise WriterError(
                f"features= names {unused}, which match no feature of the splits written ({sorted(known)})"
            )


# --------------------------------------------------------------------------
# text


def text_problem(text: str) -> str | None:
    """Say why HDF5 cannot store ``text`` as a UTF-8 string, or return ``None`` if it can (§3.4).

    HDF5 ends a string (a value, an attribute or an object name) at its first
    NUL byte, and a Python ``str`` holding a lone surrogate (from
    ``os.fsdecode`` of undecodable bytes, say) has no UTF-8 form.

    Parameters
    ----------
    text
        The string to store.

    Returns
    -------
    str or None
        ``"contains a NUL character (U+0000), which HDF5 cannot store"`` or
        ``"contains a lone surrogate (U+D800-U+DFFF), which has no UTF-8 form"``;
        ``None`` when the text can be stored unchanged.
    """
    # SPEC §3.4-R5: HDF5 would cut the string at its first NUL: callers raise instead of storing it
    if "\x00" in text:
        return "contains a NUL character (U+0000), which HDF5 cannot store"
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            return "contains a lone surrogate (U+D800-U+DFFF), which has no UTF-8 form"
    return None


def utf8_nbytes(text: str) -> int:
    """Bytes of ``text`` in UTF-8 (lone surrogates count 3 bytes, as they would if encoded with ``surrogatepass``)."""
    if text.isascii():  # O(1) in CPython: the length is the byte count
        return len(text)
    return len(text.encode("utf-8", "surrogatepass"))


# --------------------------------------------------------------------------
# recognising values


def _pandas_like(value: Any) -> bool:
    return hasattr(value, "codes") and hasattr(value, "categories") and not isinstance(value, np.ndarray)


def as_categorical(value: Any) -> Any:
    """Turn a pandas-like categorical (``.codes``, ``.categories``) into :class:`Categorical` (§6.5).

    Parameters
    ----------
    value
        Any value; only objects with ``codes`` and ``categories`` attributes
        that are not numpy arrays (and not already :class:`Categorical`) are
        converted, each category becoming its ``str``.

    Returns
    -------
    Any
        The converted :class:`Categorical`, or ``value`` unchanged.

    Raises
    ------
    EncodingError
        If the object's codes are not a 1-D integer array.
    """
    if _pandas_like(value) and not isinstance(value, Categorical):
        return Categorical(np.asarray(value.codes), [str(c) for c in value.categories])
    return value


def is_text(v: Any) -> bool:
    """Whether ``v`` is one string value (``str`` or ``numpy.str_``)."""
    return isinstance(v, (str, np.str_))


def is_bytes(v: Any) -> bool:
    """Whether ``v`` is one bytes value (``bytes``, ``bytearray``, ``memoryview``, ``numpy.bytes_``)."""
    return isinstance(v, (bytes, bytearray, memoryview, np.bytes_))


def to_list(items: Any) -> list[Any]:
    """The samples of ``items`` as a list (``ndarray.tolist`` for arrays, so numpy scalars become Python ones)."""
    return items.tolist() if isinstance(items, np.ndarray) else list(items)


def dense_array(items: Any, where: str) -> np.ndarray:
    """Stack the samples of a dense feature into one array ``(n, *sample_shape)`` (§6.2).

    Parameters
    ----------
    items
        An array or a sequence of samples of one shape.
    where
        ``"<file>:<hdf5 path>"``, used in error messages.

    Returns
    -------
    numpy.ndarray
        ``numpy.asarray(items)`` (no copy when ``items`` is already an array).

    Raises
    ------
    EncodingError
        If the samples have different shapes, or ``items`` is a scalar.
    """
    try:
        arr = np.asarray(items)
    except ValueError as exc:
        raise EncodingError(
            f"{where}: samples of a dense feature have different shapes ({exc}); store samples that vary in size "
            "with the ragged encoding: features={name: {'encoding': 'ragged'}} (§6.3)"
        ) from None
    if arr.ndim < 1:
        raise EncodingError(f"{where}: dense values need a sample axis, got a scalar")
    return arr


# --------------------------------------------------------------------------
# in-memory columns (write())


def column_length(column: Any) -> int | None:
    """Number of samples of an in-memory column, or ``None`` if it is not a sequence of samples.

    Parameters
    ----------
    column
        An array ``(N, ...)``, a :class:`Categorical` or a sequence of samples.
        A 0-d array, a ``str``, ``bytes`` or a non-sequence gives ``None``.
    """
    if isinstance(column, np.ndarray):
        return int(column.shape[0]) if column.ndim else None
    if isinstance(column, (str, bytes)) or not hasattr(column, "__len__"):
        return None
    return len(column)


def column_nbytes(column: Any) -> int:
    """Approximate bytes of an in-memory column: array bytes, UTF-8 bytes of str samples, length of bytes samples.

    Used to size the blocks :func:`h5ml.writer.inmemory.write` feeds to the writer;
    the column must be a sequence of samples (see :func:`column_length`).
    """
    if isinstance(column, np.ndarray):
        return int(column.nbytes)
    if isinstance(column, Categorical):
        return int(column.codes.nbytes)
    total = 0
    for v in column:
        if isinstance(v, str):
            total += utf8_nbytes(v)
        else:
            total += len(v) if isinstance(v, (bytes, bytearray)) else int(np.asarray(v).nbytes)
    return total


def take(column: Any, index: slice | np.ndarray) -> Any:
    """The samples ``index`` (a slice, or an integer array in any order) of an in-memory column.

    Returns
    -------
    Any
        Of the column's kind: an array, a :class:`Categorical` with the same
        class names, or a list.
    """
    if isinstance(column, np.ndarray):
        return column[index]
    if isinstance(column, Categorical):
        return Categorical(column.codes[index], column.class_names)
    if isinstance(index, slice):
        return column[index]
    return [column[int(i)] for i in index]
