"""The numeric datatypes a column reads, native byte order, and whether a dataset is filtered (§3.2, §3.3.1, §3.5).

The storage profile's numbers (§3.2: integers, IEEE floats, binary16) and the
boolean enumeration (§3.3.1), which is read as its base integer; any other
enumeration is refused (E113). Moved here from :mod:`h5ml.reader.column`,
which still exports these names.
"""

from __future__ import annotations

from typing import Any

import h5py
import numpy as np

from h5ml.errors import EncodingError
from h5ml.model.booleans import bool_enum_base, is_enum
from h5ml.model.failures import validate_advice

__all__ = ["has_filters", "native", "numeric_dtype"]


def native(dtype: np.dtype[Any]) -> np.dtype[Any]:
    """``dtype`` in native byte order (strings and other unordered types as they are)."""
    return dtype.newbyteorder("=") if dtype.byteorder == ">" or dtype.byteorder == "<" else dtype


def has_filters(dset: h5py.Dataset) -> bool:
    """Whether the dataset is chunked with at least one filter (compression, shuffle or a checksum, §3.5)."""
    return bool(dset.chunks is not None and dset.id.get_create_plist().get_nfilters() > 0)


def numeric_dtype(dset: h5py.Dataset, filename: str, dtype: np.dtype[Any] | None = None) -> np.dtype[Any]:
    """The dtype the dataset's numbers are read in, native byte order; EncodingError for any other type (§3.2).

    The boolean enumeration (SPEC §3.3.1) is read as its base integer (int8 or
    uint8), never through h5py's numpy ``bool`` view of it: the feature checks
    those integers are 0 or 1 before it turns them into booleans (SPEC §3.3-R5).

    Raises
    ------
    EncodingError
        If the dataset's type is not an integer or IEEE float of the storage
        profile, or is an enumeration other than the boolean one (E113,
        SPEC §3.3.1-R2): never read as booleans nor as its base integers.
    """
    tid = dset.id.get_type()
    if is_enum(tid):
        base = bool_enum_base(tid)
        if base is not None:
            return base  # SPEC §3.3-R4, §3.3.1-R1: the boolean enumeration, read as booleans
        # SPEC §3.3.1-R2: any other enumeration is refused, neither booleans nor raw integers
        members = ", ".join(
            f"{tid.get_member_name(i).decode('utf-8', 'backslashreplace')} = {tid.get_member_value(i)}"
            for i in range(tid.get_nmembers())
        )
        raise EncodingError(
            f"{filename}: dataset {dset.name} is an HDF5 enumeration over a {8 * tid.get_super().get_size()}-bit "
            f"integer with members {members}, which is not the boolean enumeration (FALSE = 0, TRUE = 1 over an "
            "8-bit integer) and is forbidden (§3.2, §3.3.1, E113); the reader reads it neither as booleans nor as "
            "integers: re-create the feature as uint8 0/1 with logical_dtype 'bool', or as integers; "
            f"{validate_advice(filename)}",
            path=filename,
            hdf5_path=dset.name,
        )
    dtype = dset.dtype if dtype is None else dtype
    if dtype.kind not in "iuf":
        raise EncodingError(
            f"{filename}: dataset {dset.name} has dtype {dtype}, which is not a numeric type of the storage profile "
            f"(§3.2); the file is not a valid h5ml file; {validate_advice(filename)}",
            path=filename,
            hdf5_path=dset.name,
        )
    # SPEC §3.2-R2: this reader implements binary16 (the optional level float16): "f" of 2 bytes reads as float16
    return native(dtype)
