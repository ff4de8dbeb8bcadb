"""Writing a planned file as HDF5 with h5py's low-level API: exactly the datatypes, dataspaces and layouts planned.

Time stamps are never stored, and objects are created in the plan's order,
so that the same recipe gives the same bytes with the same HDF5 build. The
root's fingerprint and completion marker are written last, after a flush,
then the edits a recipe makes to the finished file.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

import h5py
import numpy as np
from h5py import h5a, h5d, h5p, h5s

from conformance_tests.generator.checksums import add_checksums
from conformance_tests.generator.errors import RecipeError
from conformance_tests.generator.filters import set_filters
from conformance_tests.generator.plans import AttrPlan, FilePlan, NodePlan, parse_attr
from conformance_tests.generator.values import numeric_array

__all__ = ["apply_edit", "parent_and_name", "write_attr", "write_node", "write_plan"]


def _space(shape: tuple[int, ...] | None, maxshape: tuple[int | None, ...] | None = None) -> h5s.SpaceID:
    if shape is None:
        return h5s.create(h5s.NULL)
    if shape == ():
        return h5s.create(h5s.SCALAR)
    if maxshape is None:
        return h5s.create_simple(shape)
    return h5s.create_simple(shape, tuple(h5s.UNLIMITED if m is None else m for m in maxshape))


def write_attr(obj: Any, attr: AttrPlan, f: h5py.File) -> None:
    """Create one attribute exactly as planned (datatype, dataspace, value)."""
    tid = attr.htype.tid()
    aid = h5a.create(obj.id, attr.name.encode("utf-8"), tid, _space(attr.shape))
    if attr.shape is None:
        return
    buf = attr.htype.buffer(attr.value, attr.shape, f)
    if attr.htype.kind in ("fixed-str", "custom-int", "array"):
        aid.write(np.ascontiguousarray(buf), mtype=tid)
    else:
        aid.write(np.ascontiguousarray(buf))


def _dcpl(node: NodePlan) -> h5p.PropDCID:
    storage = node.storage
    dcpl = h5p.create(h5p.DATASET_CREATE)
    dcpl.set_obj_track_times(False)
    layout = storage.get("layout", "chunked")
    if layout == "contiguous":
        dcpl.set_layout(h5d.CONTIGUOUS)
    elif layout == "compact":
        dcpl.set_layout(h5d.COMPACT)
    elif layout == "chunked":
        dcpl.set_chunk(tuple(storage["chunks"]))
    else:
        raise RecipeError(f"{node.path}: unknown layout {layout!r}")
    set_filters(dcpl, node)
    for ext in storage.get("external", []):
        dcpl.set_external(ext["file"].encode(), int(ext["offset"]), int(ext["size"]))
    return dcpl


def parent_and_name(f: h5py.File, path: str) -> tuple[Any, bytes]:
    """The parent group of ``path`` and its link name as bytes (``\\x<hex>`` names a link that is not UTF-8)."""
    parent, _, name = path.rstrip("/").rpartition("/")
    return f[parent or "/"], name.encode("utf-8") if not name.startswith("\\x") else bytes.fromhex(name[2:])


def write_node(f: h5py.File, node: NodePlan) -> None:
    """Create one planned object in the open file."""
    parent, name = parent_and_name(f, node.path)
    if node.kind == "group":
        gcpl = h5p.create(h5p.GROUP_CREATE)
        gcpl.set_obj_track_times(False)
        gid = h5py.h5g.create(parent.id, name, gcpl=gcpl)
        obj: Any = h5py.Group(gid)
    elif node.kind == "soft":
        parent.id.links.create_soft(name, node.target.encode("utf-8"))
        return
    elif node.kind == "external":
        parent.id.links.create_external(name, node.target_file.encode("utf-8"), node.target.encode("utf-8"))
        return
    elif node.kind == "hard":
        parent.id.links.create_hard(name, f.id, node.target.encode("utf-8"))
        return
    elif node.kind == "datatype":
        assert node.htype is not None
        node.htype.tid().commit(parent.id, name)
        obj = f[node.path]
    elif node.kind == "virtual":
        assert node.htype is not None and node.shape is not None
        dcpl = h5p.create(h5p.DATASET_CREATE)
        dcpl.set_obj_track_times(False)  # no time stamps: the same recipe gives the same bytes
        space = _space(node.shape)
        dcpl.set_virtual(space, node.target_file.encode("utf-8"), node.target.encode("utf-8"), _space(node.shape))
        obj = h5py.Dataset(h5d.create(parent.id, name, node.htype.tid(), space, dcpl=dcpl))
    else:
        assert node.htype is not None
        tid = node.htype.tid()
        dsid = h5d.create(parent.id, name, tid, _space(node.shape, node.maxshape), dcpl=_dcpl(node))
        obj = h5py.Dataset(dsid)
        data = node.data
        if node.htype.kind == "ref" and data is not None:
            data = node.htype.buffer(data, node.shape or (), f)
        if data is not None and (node.shape is None or math.prod(node.shape) > 0):
            rows = node.written
            if node.htype.kind in ("fixed-str", "custom-int", "array", "bool-enum"):  # raw bytes, no conversion
                dsid.write(h5s.ALL, h5s.ALL, np.ascontiguousarray(data), mtype=tid)
            elif rows is not None:
                if rows[1] > rows[0]:
                    obj[rows[0] : rows[1]] = data[rows[0] : rows[1]]
            elif node.htype.kind in ("vlen-str", "vlen-seq", "ref"):
                obj[...] = data
            else:
                dsid.write(h5s.ALL, h5s.ALL, np.ascontiguousarray(data))
    for attr in node.attrs:
        write_attr(obj, attr, f)


def apply_edit(f: h5py.File, edit: dict[str, Any]) -> None:
    """One change made after the file was finished (its fingerprints and marker already written)."""
    op = edit["op"]
    path = edit.get("path", "/")
    if op == "set_attr":
        obj = f[path]
        if edit["name"] in obj.attrs:
            del obj.attrs[edit["name"]]
        write_attr(obj, parse_attr(edit["name"], edit["value"]), f)
    elif op == "delete_attr":
        del f[path].attrs[edit["name"]]
    elif op == "write":
        dset = f[path]
        index = tuple(edit["index"])
        dset[index] = numeric_array(edit["value"], dset.dtype)
    elif op == "delete":
        del f[path]
    elif op == "checksums":  # SPEC §8.4: the checksum dataset of a feature dataset
        add_checksums(f, edit)
    else:
        raise RecipeError(f"unknown edit {op!r}")


def write_plan(plan: FilePlan, target: Path) -> None:
    """Write a planned HDF5 file at ``target``."""
    kwargs: dict[str, Any] = {"libver": plan.libver, "track_order": False}
    if plan.userblock_size:
        kwargs["userblock_size"] = plan.userblock_size
    if plan.driver == "family":
        kwargs.update(driver="family", memb_size=4096)
    elif plan.driver == "split":
        kwargs.update(driver="split")
    elif plan.driver:
        raise RecipeError(f"unknown driver {plan.driver!r}")
    path = (
        str(target)
        if not plan.driver
        else str(target.with_name(target.stem + ("%d.h5" if plan.driver == "family" else "")))
    )
    with h5py.File(path, "w", **kwargs) as f:
        for attr in plan.root_attrs:
            write_attr(f, attr, f)
        for node in plan.nodes:
            try:
                write_node(f, node)
            except (OSError, RuntimeError, ValueError, TypeError) as exc:
                raise RecipeError(f"cannot create {node.path}: {exc}") from exc
        for attr in plan.final_attrs:
            f.flush()
            write_attr(f, attr, f)
        for edit in plan.edits:
            apply_edit(f, edit)
    if plan.driver == "family":
        os.replace(target.with_name(target.stem + "0.h5"), target)
        for extra in target.parent.glob(target.stem + "[0-9]*.h5"):
            extra.unlink()
    elif plan.driver == "split":
        os.replace(target.with_name(target.stem + "-m.h5"), target)
        target.with_name(target.stem + "-r.h5").unlink()
    if plan.userblock_text:
        text = plan.userblock_text.encode("utf-8")
        if len(text) > plan.userblock_size:
            raise RecipeError("the user block text does not fit the user block")
        with open(target, "r+b") as fh:
            fh.write(text)
