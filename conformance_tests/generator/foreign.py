"""Foreign files: HDF5 files of other formats, made once by their own libraries, that the generator only checks.

``foreign/make_foreign.py`` makes them (MATLAB v7.3, AnnData, netCDF-4,
pandas, legacy Keras). A foreign recipe (``raw.foreign``) lists what its file
must hold: the user block, and objects with their datatypes (in the words of
:func:`describe_type`), shapes, values (:func:`foreign_json`) and attributes.
:class:`ForeignChecker` compares a file with that list.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import h5py
import numpy as np
from h5py import h5t

from conformance_tests.generator.errors import RecipeError
from conformance_tests.generator.json_mapping import Unmappable, numbers_json

__all__ = [
    "FOREIGN_HINT",
    "FOREIGN_MAKER",
    "ForeignChecker",
    "describe_type",
    "foreign_json",
    "foreign_spec",
    "is_foreign",
]

#: The dev-only script that makes the foreign fixtures with their own libraries (see its docstring).
FOREIGN_MAKER = "conformance_tests/foreign/make_foreign.py"
#: Members of a foreign recipe's ``raw.foreign``, of its ``expect`` and of one expected object.
_FOREIGN_KEYS = frozenset({"made_by", "expect"})
_EXPECT_KEYS = frozenset({"userblock", "objects"})
_OBJECT_KEYS = frozenset(
    {"path", "kind", "members", "attrs", "attrs_absent", "dtype", "shape", "maxshape", "chunks", "values"}
)
_ATTR_KEYS = frozenset({"dtype", "shape", "value"})


#: What to do when a foreign fixture is missing.
FOREIGN_HINT = (
    f"make it with {FOREIGN_MAKER} in a virtual environment with conformance_tests/foreign/requirements.txt "
    "(see its docstring)"
)


def is_foreign(recipe: dict[str, Any]) -> bool:
    """Whether a recipe describes a foreign file: one another library made, which generate.py only checks."""
    raw = recipe.get("raw")
    return isinstance(raw, dict) and "foreign" in raw


def foreign_spec(recipe: dict[str, Any]) -> dict[str, Any]:
    """The ``raw.foreign`` member of a recipe, checked for form (members, kinds, paths)."""
    rid = recipe["id"]
    spec = recipe["raw"]["foreign"]
    if not isinstance(spec, dict) or set(spec) - _FOREIGN_KEYS:
        raise RecipeError(f"{rid}: raw.foreign holds {sorted(_FOREIGN_KEYS)} only")
    if not isinstance(spec.get("made_by"), str) or not spec["made_by"].strip():
        raise RecipeError(f"{rid}: raw.foreign needs 'made_by', the library and version that made the file")
    expect = spec.get("expect")
    if not isinstance(expect, dict) or set(expect) - _EXPECT_KEYS or not expect.get("objects"):
        raise RecipeError(f"{rid}: raw.foreign.expect needs 'objects' (a list) and may hold 'userblock'")
    block = expect.get("userblock", {})
    if not isinstance(block, dict) or set(block) - {"size", "bytes"}:
        raise RecipeError(f"{rid}: raw.foreign.expect.userblock holds 'size' and 'bytes' only")
    for item in block.get("bytes", []):
        if not isinstance(item, dict) or len({"text", "hex"} & set(item)) != 1 or set(item) - {"offset", "text", "hex"}:
            raise RecipeError(f"{rid}: each user block 'bytes' entry needs 'text' or 'hex', and may give 'offset'")
    for i, obj in enumerate(expect["objects"]):
        if not isinstance(obj, dict) or set(obj) - _OBJECT_KEYS:
            raise RecipeError(f"{rid}: expected object {i} may hold only {sorted(_OBJECT_KEYS)}")
        if not str(obj.get("path", "")).startswith("/") or obj.get("kind") not in ("group", "dataset"):
            raise RecipeError(f"{rid}: expected object {i} needs an absolute 'path' and a 'kind' (group or dataset)")
        for name, attr in obj.get("attrs", {}).items():
            if isinstance(attr, dict) and (not attr or set(attr) - _ATTR_KEYS):
                raise RecipeError(f"{rid}: {obj['path']}@{name}: give a bare value or some of {sorted(_ATTR_KEYS)}")
    return spec


def describe_type(tid: h5t.TypeID) -> Any:
    """An HDF5 datatype in the words of the recipes' datatypes (README.md), for any type a foreign file may hold.

    Numbers are numpy dtype strings (``"<f4"``); strings ``vlen-utf8``,
    ``fixed-ascii:N``, ``fixed-ascii-nullterm:N``, ``fixed-ascii-spacepad:N``;
    h5py's boolean ``bool-enum``; object references ``ref`` (region references
    ``region-ref``); the other classes ``{"compound": [[name, type], ...]}``,
    ``{"enum": {"base", "members"}}``, ``{"array": {"base", "shape"}}``,
    ``{"vlen": type}``, ``{"opaque": size}``, ``{"bitfield": size}``,
    ``{"int": {"base", "precision", "offset"}}`` for an integer with fewer bits
    than its size, and ``{"class": n}`` for anything else.
    """
    cls = tid.get_class()
    if cls == h5t.INTEGER and (tid.get_precision() != 8 * tid.get_size() or tid.get_offset()):
        return {"int": {"base": tid.dtype.str, "precision": tid.get_precision(), "offset": tid.get_offset()}}
    if cls in (h5t.INTEGER, h5t.FLOAT):
        return tid.dtype.str
    if cls == h5t.STRING:
        cset = "utf8" if tid.get_cset() == h5t.CSET_UTF8 else "ascii"
        if tid.is_variable_str():
            return f"vlen-{cset}"
        pad = {h5t.STR_NULLTERM: "-nullterm", h5t.STR_SPACEPAD: "-spacepad"}.get(tid.get_strpad(), "")
        return f"fixed-{cset}{pad}:{tid.get_size()}"
    if cls == h5t.COMPOUND:
        return {
            "compound": [
                [tid.get_member_name(i).decode("utf-8"), describe_type(tid.get_member_type(i))]
                for i in range(tid.get_nmembers())
            ]
        }
    if cls == h5t.ENUM:
        base = describe_type(tid.get_super())
        members = {tid.get_member_name(i).decode("utf-8"): tid.get_member_value(i) for i in range(tid.get_nmembers())}
        if base == "|i1" and members == {"FALSE": 0, "TRUE": 1}:
            return "bool-enum"
        return {"enum": {"base": base, "members": members}}
    if cls == h5t.ARRAY:
        return {"array": {"base": describe_type(tid.get_super()), "shape": list(tid.get_array_dims())}}
    if cls == h5t.VLEN:
        return {"vlen": describe_type(tid.get_super())}
    if cls == h5t.REFERENCE:
        return "region-ref" if tid == h5t.STD_REF_DSETREG else "ref"
    if cls == h5t.OPAQUE:
        return {"opaque": tid.get_size()}
    if cls == h5t.BITFIELD:
        return {"bitfield": tid.get_size()}
    return {"class": int(cls)}


def foreign_json(value: Any) -> Any:
    """A value h5py read from a foreign file as JSON, for comparison with a recipe.

    Numbers as in Appendix B but with every integer a JSON number; strings
    (fixed or variable, bytes or str) as text; arrays and variable-length
    sequences as lists; compound records as lists of their fields; a null
    dataspace as null. Raises :class:`Unmappable` for references and for
    bytes that are not UTF-8.
    """
    if isinstance(value, h5py.Empty):
        return None
    if isinstance(value, np.void) and value.dtype.names is not None:
        return [foreign_json(value[name]) for name in value.dtype.names]
    if isinstance(value, np.ndarray):
        if value.dtype.kind in "biuf":
            return numbers_json(value, wide_as_text=False)
        if value.ndim == 0:
            return foreign_json(value[()])
        return [foreign_json(item) for item in value]
    if isinstance(value, (bool, int, float, np.bool_, np.integer, np.floating)):
        return numbers_json(np.asarray(value), wide_as_text=False)
    if isinstance(value, (bytes, np.bytes_)):
        try:
            return bytes(value).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise Unmappable(f"{bytes(value)!r} is not UTF-8") from exc
    if isinstance(value, str):
        return value
    raise Unmappable(f"a value of type {type(value).__name__}")


def _shape_json(shape: tuple[int | None, ...] | None) -> list[int | None] | None:
    return None if shape is None else list(shape)


def _js(value: Any) -> str:
    """A JSON value as compact text, for messages."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return text if len(text) <= 200 else text[:200] + "..."


def _first_difference(got: Any, want: Any, where: str = "") -> str | None:
    """Where two JSON values first differ (``[2][0]: 1.5, not 1.25``), or None when they are equal.

    Numbers compare by value (``1 == 1.0``), as JSON numbers do.
    """
    if isinstance(got, list) and isinstance(want, list):
        if len(got) != len(want):
            return f"{where or 'the top'}: {len(got)} entries, not {len(want)}"
        for i, (a, b) in enumerate(zip(got, want, strict=True)):
            found = _first_difference(a, b, f"{where}[{i}]")
            if found is not None:
                return found
        return None
    if got == want and isinstance(got, bool) == isinstance(want, bool):
        return None
    return f"{where or 'the top'}: {_js(got)}, not {_js(want)}"


class ForeignChecker:
    """Compares foreign fixtures with what their recipes list, adding each difference to ``problems``."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems

    def fail(self, where: str, message: str) -> None:
        """Record one problem of ``where`` (a recipe id)."""
        self.problems.append(f"{where}: {message}")

    def check_foreign(self, rid: str, spec: dict[str, Any], path: Path) -> None:
        """Compare a foreign file with what its recipe lists: user block, objects, datatypes, shapes, values, attributes.

        Only what the recipe lists is compared (a foreign file holds much that
        no recipe needs to spell out), but a group's ``members``, when given,
        must be exactly its links.
        """
        expect = spec["expect"]
        block = expect.get("userblock", {})
        head = path.read_bytes()[: int(block.get("size", 0))]
        for item in block.get("bytes", []):
            offset = int(item.get("offset", 0))
            want = item["text"].encode("utf-8") if "text" in item else bytes.fromhex(item["hex"])
            if head[offset : offset + len(want)] != want:
                got = head[offset : offset + len(want)]
                self.fail(rid, f"user block bytes at {offset}: {got!r}, not {want!r}")
        with h5py.File(path, "r") as f:
            if f.userblock_size != int(block.get("size", 0)):
                self.fail(rid, f"user block of {f.userblock_size} bytes, not {block.get('size', 0)}")
            for obj in expect["objects"]:
                self._check_foreign_object(rid, f, obj)

    def _check_foreign_object(self, rid: str, f: h5py.File, obj: dict[str, Any]) -> None:
        where = obj["path"]
        if where != "/" and where not in f:
            self.fail(rid, f"{where}: no such object")
            return
        node = f[where]
        if obj["kind"] == "group":
            if not isinstance(node, h5py.Group):
                self.fail(rid, f"{where}: not a group")
                return
            if "members" in obj and sorted(node) != sorted(obj["members"]):
                self.fail(rid, f"{where}: members {sorted(node)}, not {sorted(obj['members'])}")
        else:
            if not isinstance(node, h5py.Dataset):
                self.fail(rid, f"{where}: not a dataset")
                return
            self._check_foreign_dataset(rid, node, obj)
        for name in obj.get("attrs_absent", []):
            if name in node.attrs:
                self.fail(rid, f"{where}@{name}: present, but the recipe says the file has no such attribute")
        for name, want in obj.get("attrs", {}).items():
            if name not in node.attrs:
                self.fail(rid, f"{where}@{name}: missing")
                continue
            aid = node.attrs.get_id(name)
            spec = want if isinstance(want, dict) else {"value": want}
            if "dtype" in spec and describe_type(aid.get_type()) != spec["dtype"]:
                self.fail(
                    rid, f"{where}@{name}: datatype {_js(describe_type(aid.get_type()))}, not {_js(spec['dtype'])}"
                )
            if "shape" in spec and _shape_json(aid.shape) != spec["shape"]:
                self.fail(rid, f"{where}@{name}: dataspace {_js(_shape_json(aid.shape))}, not {_js(spec['shape'])}")
            if "value" in spec:

                def read(name: str = name) -> Any:
                    return node.attrs[name]

                self._compare_value(rid, f"{where}@{name}", read, spec["value"])

    def _check_foreign_dataset(self, rid: str, dset: h5py.Dataset, obj: dict[str, Any]) -> None:
        where = obj["path"]
        if "dtype" in obj and describe_type(dset.id.get_type()) != obj["dtype"]:
            self.fail(rid, f"{where}: datatype {_js(describe_type(dset.id.get_type()))}, not {_js(obj['dtype'])}")
        for key, got in (("shape", dset.shape), ("maxshape", dset.maxshape), ("chunks", dset.chunks)):
            if key in obj and _shape_json(got) != obj[key]:
                self.fail(rid, f"{where}: {key} {_js(_shape_json(got))}, not {_js(obj[key])}")
        if "values" in obj:
            self._compare_value(rid, where, lambda: dset[()], obj["values"])

    def _compare_value(self, rid: str, where: str, read: Callable[[], Any], want: Any) -> None:
        try:
            got = foreign_json(read())
        except Unmappable as exc:
            self.fail(rid, f"{where}: no JSON form to compare with the recipe ({exc}); list its dtype and shape only")
            return
        except (OSError, RuntimeError, TypeError) as exc:
            self.fail(rid, f"{where}: cannot be read ({exc})")
            return
        difference = _first_difference(got, want)
        if difference is not None:
            self.fail(rid, f"{where}: value differs from the recipe at {difference}")
