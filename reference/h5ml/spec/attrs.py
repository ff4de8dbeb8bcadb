"""Reading and writing HDF5 attributes the way SPEC.md §3.4, §3.7 and §4.6 say.

Readers see ``str`` wherever a string was stored, whatever string type its
writer chose (variable- or fixed-length, UTF-8 or ASCII); numbers come back as
Python ``int``/``float``; 1-D arrays as lists. Writers store strings as scalar
variable-length UTF-8 and single values in a scalar dataspace.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Final

import h5py
import numpy as np

__all__ = ["MISSING", "attrs_json", "decode_str", "read_attr", "to_json_value", "write_attr"]


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


#: Sentinel for "no default": :func:`read_attr` raises KeyError instead.
MISSING: Final[Any] = _Missing()

_STR_DTYPE: Final = h5py.string_dtype("utf-8")


def decode_str(value: Any) -> str:
    """Return ``value`` as ``str`` (§3.4).

    Parameters
    ----------
    value
        ``str``, ``bytes`` or ``numpy.bytes_`` (UTF-8; ASCII is a subset), or a
        numpy 0-d array holding one of those.

    Returns
    -------
    str
        The decoded text, as data: nothing in it is evaluated or deserialised (SPEC §10.2-R1).
        Trailing NUL bytes of fixed-length strings are removed.

    Raises
    ------
    UnicodeDecodeError
        If bytes are not valid UTF-8.
    TypeError
        If ``value`` is not a string.
    """
    if isinstance(value, np.ndarray) and value.shape == ():
        value = value[()]
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:  # h5py decodes bytes that are not UTF-8 with surrogate escapes
            raw = value.encode("utf-8", "surrogateescape")
            raise UnicodeDecodeError("utf-8", raw, exc.start, exc.end, "invalid UTF-8 (§3.4)") from None
        return value
    if isinstance(value, (bytes, np.bytes_)):
        # SPEC §3.4-R4: HDF5 converts a fixed-length string's padding to NUL padding when it reads it into numpy's type (NULLTERM: cut at the first NUL; SPACEPAD: trailing spaces dropped; measured with h5py 3.16 / HDF5 2.0.0), so the trailing NULs are all that is left to remove
        return bytes(value).rstrip(b"\x00").decode("utf-8")
    raise TypeError(f"expected a string, got {type(value).__name__}")


#: Kinds of numpy arrays an attribute of the storage profile can hold (§3.2): numbers, booleans, strings.
_PROFILE_KINDS: Final = frozenset("biufSOU")


def _to_python(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        if value.shape == ():
            return _to_python(value[()])
        if value.dtype.kind not in _PROFILE_KINDS:
            raise TypeError(f"an array of {value.dtype} is outside the storage profile (§3.2)")
        return [_to_python(v) for v in value.tolist()] if value.dtype.kind in "SOU" else value.tolist()
    if isinstance(value, (bytes, np.bytes_, str)):
        return decode_str(value)
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return float(value)
    # opaque and compound values (numpy void), complex numbers, object references, null dataspaces (h5py Empty)
    raise TypeError(f"a value of type {type(value).__name__} is outside the storage profile (§3.2)")


def read_attr(obj: h5py.HLObject, name: str, default: Any = MISSING) -> Any:
    """Read one attribute as a plain Python value (§4.6).

    Parameters
    ----------
    obj
        An h5py file, group or dataset.
    name
        The attribute name.
    default
        Returned when the attribute is absent; without it a KeyError is raised.

    Returns
    -------
    str, int, float, bool or list
        Strings as ``str`` (never bytes), numpy scalars as Python numbers, arrays
        as lists (of ``str`` for string arrays).

    Raises
    ------
    KeyError
        If the attribute is absent and no default is given.
    UnicodeDecodeError
        If a string attribute holds bytes that are not UTF-8.
    TypeError
        If the value is of a type outside the storage profile (§3.2): opaque
        or compound (numpy void), complex, an object reference, a null
        dataspace (which holds no value: a defined attribute read on its own
        is refused, §3.7; :func:`to_json_value` maps the whole set, §4.6).
    """
    if name not in obj.attrs:
        if default is MISSING:
            raise KeyError(f"attribute {name!r} not found on {obj.name!r} in {obj.file.filename!r}")
        return default
    return _to_python(obj.attrs[name])


def write_attr(obj: h5py.HLObject, name: str, value: Any) -> None:
    """Write one attribute in the storage profile's form (§3.4, §3.7, §4.3; SPEC §4.3-R1, SPEC §6.7-R3).

    Single strings become scalar variable-length UTF-8 strings, whatever their
    length, so long text lives in the global heap (SPEC §4.5-R2); single
    integers scalar int64; single real numbers scalar float64.

    Parameters
    ----------
    obj
        An h5py file, group or dataset open for writing.
    name
        The attribute name.
    value
        ``str`` (scalar variable-length UTF-8), ``bool``/``int`` (scalar int64),
        ``float`` (scalar float64), a sequence of ``str`` (1-D variable-length
        UTF-8 array, possibly empty) or a sequence of ints (1-D int64 array).

    Raises
    ------
    TypeError
        For any other type (for example a dict, or a mixed list).
    """
    # SPEC §3.4-R1: string attributes are variable-length UTF-8, scalars and 1-D arrays alike
    if isinstance(value, str):
        obj.attrs.create(name, value, dtype=_STR_DTYPE)
    elif isinstance(value, (bool, np.bool_, int, np.integer)):
        obj.attrs.create(name, np.int64(value))
    elif isinstance(value, (float, np.floating)):
        obj.attrs.create(name, np.float64(value))
    elif isinstance(value, Sequence) or isinstance(value, np.ndarray):
        items = list(value)
        if all(isinstance(v, str) for v in items):
            obj.attrs.create(name, np.array(items, dtype=_STR_DTYPE), dtype=_STR_DTYPE)
        elif all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in items):
            obj.attrs.create(name, np.array(items, dtype=np.int64))
        else:
            raise TypeError(f"attribute {name!r}: a list must hold only str or only int values")
    else:
        raise TypeError(f"attribute {name!r}: cannot store a {type(value).__name__} (use str, int, float or a list)")


def to_json_value(value: Any) -> Any:
    """Map an attribute value to JSON as §4.6 says (used before schema validation).

    Parameters
    ----------
    value
        A raw value from ``obj.attrs[...]`` or from :func:`read_attr`.

    Returns
    -------
    JSON-compatible value
        bytes -> str, numpy scalars -> numbers (NaN, +inf, -inf -> the strings
        "NaN", "Infinity", "-Infinity"), arrays -> (nested) lists, a null
        dataspace -> None (JSON null); a non-UTF-8 byte
        string is kept as the Python ``bytes`` object so that the schema rejects it.
    """
    if isinstance(value, h5py.Empty):  # a null dataspace holds no value: JSON null (§4.6, §4.7)
        return None
    try:
        return _json_floats(_to_python(value))
    except UnicodeDecodeError:
        return value.encode("utf-8", "surrogateescape") if isinstance(value, str) else value


def _json_floats(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, list):
        return [_json_floats(v) for v in value]
    return value


def attrs_json(obj: h5py.HLObject) -> Mapping[str, Any]:
    """Map every attribute of ``obj`` to JSON with :func:`to_json_value` (§4.6)."""
    return {name: to_json_value(obj.attrs[name]) for name in obj.attrs}
