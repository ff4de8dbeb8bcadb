"""The plan of one fixture: the attributes, objects and edits an HDF5 file is built from.

A :class:`FilePlan` lists, in creation order, what the writer creates
(:mod:`~conformance_tests.generator.write`) and what the checker compares a
committed fixture with (:mod:`~conformance_tests.generator.check`). This
module also parses a recipe's attribute specs (:func:`parse_attr`), gives
their §4.6 JSON form (:func:`attr_json`), and applies the attribute edits a
recipe makes after the file was finished (:func:`attrs_after_edits`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from conformance_tests.generator.datatypes import HType, parse_type
from conformance_tests.generator.errors import RecipeError
from conformance_tests.generator.json_mapping import Unmappable, numbers_json, stored_text
from conformance_tests.generator.values import flatten, nested_map, shape_of

__all__ = [
    "LIBVER",
    "AttrPlan",
    "FilePlan",
    "NodePlan",
    "attr_json",
    "attrs_after_edits",
    "attrs_of",
    "parse_attr",
]

#: Library-version bounds of every fixture unless its recipe says otherwise (SPEC §3.1).
LIBVER = ("earliest", "v110")


@dataclass
class AttrPlan:
    """One attribute to create: name, datatype, dataspace (None: null) and value spec."""

    name: str
    htype: HType
    shape: tuple[int, ...] | None
    value: Any


@dataclass
class NodePlan:
    """One HDF5 object (or link) to create at ``path``.

    ``kind`` is ``group``, ``dataset``, ``soft``, ``external`` (link), ``hard``
    (another name for ``target``), ``datatype`` (committed), ``virtual``.
    """

    path: str
    kind: str
    attrs: list[AttrPlan] = field(default_factory=list)
    htype: HType | None = None
    shape: tuple[int, ...] | None = None
    maxshape: tuple[int | None, ...] | None = None
    data: Any = None
    written: tuple[int, int] | None = None
    storage: dict[str, Any] = field(default_factory=dict)
    target: str = ""
    target_file: str = ""


@dataclass
class FilePlan:
    """Everything one HDF5 fixture holds, in creation order, and what a reader must decode from it."""

    libver: tuple[str, str] = LIBVER
    userblock_size: int = 0
    userblock_text: str = ""
    driver: str = ""
    root_attrs: list[AttrPlan] = field(default_factory=list)
    final_attrs: list[AttrPlan] = field(default_factory=list)
    nodes: list[NodePlan] = field(default_factory=list)
    edits: list[dict[str, Any]] = field(default_factory=list)
    document: dict[str, Any] | None = None


def parse_attr(name: str, spec: Any) -> AttrPlan:
    """An attribute from its recipe spec: a bare JSON value, or ``{"dtype", "value", "shape", "null"}``."""
    if isinstance(spec, dict) and "dtype" in spec:
        htype = parse_type(spec["dtype"])
        if spec.get("null"):
            return AttrPlan(name, htype, None, None)
        value = spec["value"]
        if "shape" in spec:
            shape = tuple(int(s) for s in spec["shape"])
        elif htype.kind == "array":
            shape = ()
        elif isinstance(value, dict) and "numbered" in value:
            shape = (int(value["count"]),)
        elif isinstance(value, dict) and "shape" in value:
            shape = tuple(value["shape"])
        else:
            shape = shape_of(value)
        return AttrPlan(name, htype, shape, value)
    if isinstance(spec, bool):
        raise RecipeError(f"attribute {name!r}: give booleans an explicit dtype")
    if isinstance(spec, str) or (isinstance(spec, dict) and ("hex" in spec or "repeat" in spec)):
        return AttrPlan(name, parse_type("vlen-utf8"), (), spec)
    if isinstance(spec, int):
        return AttrPlan(name, parse_type("<i8"), (), spec)
    if isinstance(spec, float):
        return AttrPlan(name, parse_type("<f8"), (), spec)
    if isinstance(spec, list) and spec:
        leaves = flatten(spec)
        if all(isinstance(v, str) for v in leaves):
            return AttrPlan(name, parse_type("vlen-utf8"), shape_of(spec), spec)
        if all(isinstance(v, int) and not isinstance(v, bool) for v in leaves):
            return AttrPlan(name, parse_type("<i8"), shape_of(spec), spec)
        if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in leaves):
            return AttrPlan(name, parse_type("<f8"), shape_of(spec), spec)
    raise RecipeError(f"attribute {name!r}: cannot infer a datatype for {spec!r}; give 'dtype'")


def attr_json(attr: AttrPlan) -> Any:
    """The §4.6 JSON form of an attribute's value (``None``, JSON null, for a null dataspace).

    Raises :class:`Unmappable` when there is none.
    """
    if attr.shape is None:
        return None
    htype = attr.htype
    if htype.is_string:
        buf = htype.buffer(attr.value, attr.shape)
        return nested_map(buf.tolist(), lambda raw: stored_text(bytes(raw), htype))
    if htype.kind == "num":
        return numbers_json(htype.buffer(attr.value, attr.shape), wide_as_text=False)
    raise Unmappable(f"datatype {htype.label}")


def attrs_of(specs: dict[str, Any]) -> list[AttrPlan]:
    """The attributes of a recipe's ``{name: spec}``, in order; a ``null`` spec leaves its attribute out."""
    return [parse_attr(name, spec) for name, spec in specs.items() if spec is not None]


def attrs_after_edits(
    attrs: Sequence[AttrPlan], edits: Sequence[dict[str, Any]], path: str = "/"
) -> dict[str, AttrPlan]:
    """The attributes of the object at ``path`` (name -> plan) once the ``set_attr`` and ``delete_attr`` edits made
    to it after the file was finished are applied, in order."""
    out = {a.name: a for a in attrs}
    for edit in edits:
        if edit.get("path", "/") != path:
            continue
        if edit["op"] == "set_attr":
            out[edit["name"]] = parse_attr(edit["name"], edit["value"])
        elif edit["op"] == "delete_attr":
            out.pop(edit["name"], None)
    return out
