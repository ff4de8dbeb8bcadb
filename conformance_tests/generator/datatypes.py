"""The HDF5 datatypes a recipe names (README.md, "Datatypes"): :class:`HType` and :func:`parse_type`.

Each datatype carries the numpy dtype of its memory buffer and builds its own
HDF5 type id, so that a fixture holds exactly the datatype its recipe names:
byte order, string padding and character set (SPEC §3.4), integer precision,
compound, enum, opaque, array, variable-length and reference types.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

import h5py
import numpy as np
from h5py import h5t

from conformance_tests.generator.errors import RecipeError
from conformance_tests.generator.values import flatten, nested_map, numeric_array, scalar, shape_of, string_leaves

__all__ = ["HType", "parse_type"]


@dataclass(frozen=True)
class HType:
    """An HDF5 datatype a recipe names, with the numpy dtype of its memory buffer.

    ``kind`` is one of ``num`` (integer or IEEE float in either byte order),
    ``bool-enum`` (h5py's boolean, or with ``unsigned`` the same members over
    uint8, SPEC §3.3.1), ``vlen-str``, ``fixed-str``, ``custom-int``
    (an integer with fewer bits of precision than its size), ``array``,
    ``vlen-seq``, ``ref`` (object reference) and ``h5py`` (compound, enum and
    opaque types, built by h5py from their numpy dtype).
    """

    kind: str
    np_dtype: np.dtype[Any]
    label: str
    cset: int = h5t.CSET_UTF8
    length: int = 0
    nullterm: bool = False
    spacepad: bool = False
    precision: int = 0
    offset: int = 0
    subshape: tuple[int, ...] = ()
    unsigned: bool = False

    @property
    def is_string(self) -> bool:
        """Whether values of this type are strings."""
        return self.kind in ("vlen-str", "fixed-str")

    def unpad(self, raw: bytes) -> bytes:
        """The bytes of one stored string without the padding its datatype declares (SPEC §3.4).

        NUL bytes are removed from the end of NULLTERM and NULLPAD strings,
        spaces (0x20) from the end of SPACEPAD strings; variable-length strings
        are returned unchanged.
        """
        if self.kind != "fixed-str":
            return raw
        return raw.rstrip(b" ") if self.spacepad else raw.rstrip(b"\x00")

    def tid(self) -> h5t.TypeID:
        """A new HDF5 type id for this datatype."""
        if self.kind == "bool-enum" and self.unsigned:
            tid = h5t.enum_create(h5t.STD_U8LE)
            tid.enum_insert(b"FALSE", 0)
            tid.enum_insert(b"TRUE", 1)
            return tid
        if self.kind in ("num", "bool-enum"):
            return h5t.py_create(self.np_dtype).copy()
        if self.kind == "vlen-str":
            tid = h5t.C_S1.copy()
            tid.set_size(h5t.VARIABLE)
            tid.set_cset(self.cset)
            tid.set_strpad(h5t.STR_NULLTERM)
            return tid
        if self.kind == "fixed-str":
            tid = h5t.C_S1.copy()
            tid.set_size(self.length)
            tid.set_cset(self.cset)
            if self.spacepad:
                tid.set_strpad(h5t.STR_SPACEPAD)
            else:
                tid.set_strpad(h5t.STR_NULLTERM if self.nullterm else h5t.STR_NULLPAD)
            return tid
        if self.kind == "custom-int":
            tid = h5t.py_create(self.np_dtype).copy()
            tid.set_precision(self.precision)
            tid.set_offset(self.offset)
            return tid
        if self.kind == "array":
            return h5t.array_create(h5t.py_create(self.np_dtype), self.subshape)
        return h5t.py_create(self.np_dtype, logical=True)

    def buffer(self, value: Any, shape: tuple[int, ...], f: h5py.File | None = None) -> np.ndarray:
        """The memory buffer holding ``value`` (a recipe value spec) in a dataspace of ``shape``."""
        if self.kind in ("num", "custom-int"):
            arr = numeric_array(value, self.np_dtype)
        elif self.kind == "bool-enum":
            # booleans, or integers: the enumeration's raw base values, such as a 5 that is no member (SPEC §3.3-R2)
            base = np.dtype(np.uint8 if self.unsigned else np.int8)
            raw = nested_map(value, lambda v: v if isinstance(v, bool) else scalar(v, base.kind))
            arr = np.array(raw, dtype=base).view(bool)
        elif self.kind == "fixed-str":
            leaves = string_leaves(value)
            for leaf in flatten(leaves):
                if len(leaf) > self.length:
                    raise RecipeError(f"{leaf!r} does not fit a fixed-length string of {self.length} bytes")
            if self.spacepad:  # HDF5 SPACEPAD: the stored bytes are padded with U+0020
                leaves = nested_map(leaves, lambda leaf: leaf.ljust(self.length, b" "))
            arr = np.array(leaves, dtype=self.np_dtype)
        elif self.kind == "vlen-str":
            leaves = string_leaves(value)
            arr = np.empty(shape_of(leaves), dtype=object)
            for index, leaf in zip(np.ndindex(arr.shape), flatten(leaves), strict=True):
                arr[index] = leaf
        elif self.kind == "array":
            arr = numeric_array(value, self.np_dtype)
            return arr.reshape(shape + self.subshape)
        elif self.kind == "vlen-seq":
            base = self.np_dtype.metadata["vlen"]  # type: ignore[index]
            arr = np.empty(len(value), dtype=object)
            for i, item in enumerate(value):
                arr[i] = numeric_array(item, np.dtype(base))
        elif self.kind == "ref":
            if f is None:
                raise RecipeError("an object reference needs the open file")
            arr = np.array([f[path].ref for path in flatten(value)], dtype=h5py.ref_dtype)
        elif self.np_dtype.kind == "V" and self.np_dtype.names is None:  # opaque
            raw = b"".join(bytes.fromhex(v) for v in flatten(value))
            arr = np.frombuffer(raw, dtype=self.np_dtype).copy()
        elif self.np_dtype.names is not None:  # compound
            arr = np.array([tuple(row) for row in _flatten_rows(value)], dtype=self.np_dtype)
        else:  # enum: the integer values
            arr = np.array(value, dtype=self.np_dtype)
        return arr.reshape(shape)


def _flatten_rows(value: Any) -> list[Any]:
    """The records of a compound value: a list of rows (lists), possibly nested in lists."""
    if isinstance(value, list) and value and not isinstance(value[0], list):
        return [value]
    return [row for item in value for row in _flatten_rows(item)] if isinstance(value, list) else [value]


_STRING_TYPE = re.compile(r"^(vlen)-(utf8|ascii)$|^fixed-(utf8|ascii)(-nullterm|-spacepad)?:([1-9][0-9]*)$")


def parse_type(spec: Any) -> HType:
    """Parse a recipe's datatype spec (see README.md, "Datatypes")."""
    if isinstance(spec, str):
        m = _STRING_TYPE.match(spec)
        if m:
            if m.group(1):
                cset = h5t.CSET_UTF8 if m.group(2) == "utf8" else h5t.CSET_ASCII
                return HType("vlen-str", np.dtype(object), spec, cset=cset)
            cset = h5t.CSET_UTF8 if m.group(3) == "utf8" else h5t.CSET_ASCII
            length = int(m.group(5))
            pad = m.group(4) or ""
            return HType(
                "fixed-str",
                np.dtype(f"S{length}"),
                spec,
                cset=cset,
                length=length,
                nullterm=pad == "-nullterm",
                spacepad=pad == "-spacepad",
            )
        if spec in ("bool-enum", "bool-enum-u8"):
            return HType("bool-enum", np.dtype(bool), spec, unsigned=spec == "bool-enum-u8")
        if spec == "ref":
            return HType("ref", h5py.ref_dtype, spec)
        try:
            dtype = np.dtype(spec)
        except TypeError as exc:
            raise RecipeError(f"unknown datatype {spec!r}") from exc
        if dtype.kind not in "iuf" or dtype.itemsize not in (1, 2, 4, 8, 16):
            raise RecipeError(f"unsupported numeric datatype {spec!r}")
        return HType("num", dtype, spec)
    if isinstance(spec, dict) and len(spec) == 1:
        ((key, arg),) = spec.items()
        label = json.dumps(spec, sort_keys=True)
        if key == "int":
            base = np.dtype(arg["base"])
            return HType("custom-int", base, label, precision=int(arg["precision"]), offset=int(arg.get("offset", 0)))
        if key == "compound":
            return HType("h5py", np.dtype([(name, np.dtype(t)) for name, t in arg]), label)
        if key == "enum":
            return HType("h5py", h5py.enum_dtype(dict(arg["members"]), basetype=np.dtype(arg["base"])), label)
        if key == "opaque":
            return HType("h5py", np.dtype(f"V{int(arg)}"), label)
        if key == "array":
            return HType("array", np.dtype(arg["base"]), label, subshape=tuple(arg["shape"]))
        if key == "vlen":
            return HType("vlen-seq", h5py.vlen_dtype(np.dtype(arg)), label)
    raise RecipeError(f"unknown datatype {spec!r}")
