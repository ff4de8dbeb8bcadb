"""Booleans in HDF5: which stored types hold them and which stored values are booleans (SPEC §3.3, §3.3.1).

One place for the rules that the reader and the validator both apply:

- :func:`bool_enum_base`: whether an HDF5 datatype is *the boolean
  enumeration* (an 8-bit integer base, signed or unsigned, members exactly
  ``FALSE`` = 0 and ``TRUE`` = 1, SPEC §3.3.1-R1), and its base integer;
  any other enumeration is forbidden (E113, SPEC §3.2-R1).
- :func:`is_uint8`: whether an HDF5 datatype is the plain unsigned 8-bit
  integer that ``logical_dtype = "bool"`` may mark (SPEC §3.3-R3, E117).
- :func:`first_non_boolean`: the first stored value that is neither 0 nor 1
  (SPEC §3.3-R2, E142), read from the raw integers (never from h5py's numpy
  ``bool`` view of the enumeration, which turns a value such as 5 into an
  arbitrary byte that prints as ``True``); :func:`refuse_non_members`, the
  reader's refusal of such a value (SPEC §3.3-R5).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
from h5py import h5t

from h5ml import spec
from h5ml.errors import InvalidFileError
from h5ml.model.failures import validate_advice

__all__ = ["bool_enum_base", "first_non_boolean", "is_enum", "is_uint8", "refuse_non_members"]


def is_enum(tid: Any) -> bool:
    """Whether the HDF5 datatype ``tid`` (an ``h5py.h5t.TypeID``) is an enumeration (class ``H5T_ENUM``)."""
    return bool(tid.get_class() == h5t.ENUM)


def bool_enum_base(tid: Any) -> np.dtype[Any] | None:
    """The base integer of the boolean enumeration, or None for any other datatype (SPEC §3.3.1-R1).

    Parameters
    ----------
    tid
        An HDF5 datatype (``h5py.h5t.TypeID``).

    Returns
    -------
    numpy.dtype or None
        ``int8`` or ``uint8`` when ``tid`` is an enumeration over an 8-bit
        integer whose members are exactly ``FALSE`` = 0 and ``TRUE`` = 1 (in
        either member order); None for every other type, including every
        other enumeration (swapped values, other names, a third member, a
        wider base: E113, SPEC §3.2-R1).
    """
    if not is_enum(tid):
        return None
    base = tid.get_super()
    members = tuple((tid.get_member_name(i), tid.get_member_value(i)) for i in range(tid.get_nmembers()))
    # SPEC §3.3.1-R1: over int8 or uint8, FALSE = 0 and TRUE = 1 in either order; any other enum is E113
    if base.get_size() != 1 or sorted(members) != sorted(spec.BOOL_ENUM_MEMBERS):
        return None
    return np.dtype(np.int8) if base.get_sign() != h5t.SGN_NONE else np.dtype(np.uint8)


def is_uint8(tid: Any) -> bool:
    """Whether ``tid`` is a plain unsigned 8-bit integer, the only type ``logical_dtype = "bool"`` may mark (SPEC §3.3-R3)."""
    return bool(tid.get_class() == h5t.INTEGER and tid.get_size() == 1 and tid.get_sign() == h5t.SGN_NONE)


def first_non_boolean(values: npt.NDArray[Any]) -> int | None:
    """The flat index of the first value that is neither 0 nor 1, or None when every value is (SPEC §3.3-R2).

    Parameters
    ----------
    values
        Stored values of a boolean feature, as integers (uint8 for
        ``logical_dtype = "bool"``; int8 or uint8, the enumeration's base,
        for the boolean enumeration), any shape.

    Returns
    -------
    int or None
        The index into ``values.reshape(-1)`` of the first value other than
        0 and 1 (E142), None when there is none.
    """
    flat = np.ascontiguousarray(values).reshape(-1)
    if flat.size == 0:
        return None
    if flat.dtype.itemsize == 1 and flat.dtype.kind in "iub":
        raw = flat.view(np.uint8)  # int8 -3 is 253: one comparison finds every value other than 0 and 1
        if int(raw.max()) <= 1:
            return None
        return int(np.flatnonzero(raw > 1)[0])
    bad = np.flatnonzero((flat != 0) & (flat != 1))
    return int(bad[0]) if bad.size else None


def refuse_non_members(values: Any, filename: str, where: str) -> None:
    """Refuse stored booleans that are neither 0 nor 1 (SPEC §3.3-R5, E142).

    Parameters
    ----------
    values
        The stored integers of a boolean feature (uint8 for ``logical_dtype =
        "bool"``; int8 or uint8, the base of the boolean enumeration), an
        array or a numpy scalar.
    filename, where
        The file and the dataset's HDF5 path, for the message.

    Raises
    ------
    InvalidFileError
        If a value is neither 0 nor 1: it has no boolean meaning, so it is
        never returned as true or false.
    """
    stored: npt.NDArray[Any] = np.asarray(values)
    bad = first_non_boolean(stored)
    if bad is None:
        return
    # SPEC §3.3-R5: a stored boolean other than 0 and 1 is refused, never read as true (E142)
    raise InvalidFileError(
        f"{filename}: {where}: holds the stored value {stored.reshape(-1)[bad].item()!r} in a boolean feature, whose "
        "only values are 0 (false) and 1 (true) (§3.3, E142); the reader does not guess what it means; the "
        f"file is not a valid h5ml file: re-create it, and {validate_advice(filename)}",
        path=filename,
        hdf5_path=where,
    )
