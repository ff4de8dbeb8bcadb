"""The tree of any HDF5 file, as plain data: every path with its kind, shape, type, storage and attributes.

:func:`walk_tree` lists what an HDF5 file holds, as ``h5ls -r`` does, for a
file that is not an h5ml file (``h5ml inspect`` shows it, and the conversion
plan of ``h5ml convert`` starts from it). It reads metadata only: link
kinds, shapes, datatypes, chunk shapes, filter pipelines and attributes,
never a dataset's values. It never follows a soft or an external link (they
are listed as links with their target, §3.6) and never reads a dataset with
external raw storage or a virtual dataset (they are listed with their
layout, §10.1). An object reached by a second hard link is listed once
more with the path where it was first seen, and not walked again (a group
linked into itself would otherwise loop).

The result is a :class:`TreeWalk`: a list of :class:`TreeNode`, in walk
order (a group's members sorted by name right after it), at most ``max_objects``
of them, and how many more the file holds (counted up to a bound, so that
a file of millions of objects is not walked whole to say so).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Final

import h5py
import numpy as np

from h5ml import spec
from h5ml.model.failures import LIBRARY_ERRORS
from h5ml.model.locking import open_foreign, open_read_only
from h5ml.spec.attrs import read_attr

__all__ = [
    "DEFAULT_MAX_OBJECTS",
    "FilterInfo",
    "TreeNode",
    "TreeWalk",
    "dataset_filters",
    "foreign_reason",
    "walk_tree",
]

#: Objects listed by default.
DEFAULT_MAX_OBJECTS: Final = 200
#: Objects counted beyond the listed ones before the count stops (then "more than N" are not listed).
_COUNT_LIMIT: Final = 100_000
#: Characters of an attribute's value shown (longer values end with "...").
_VALUE_CHARS: Final = 60
#: Elements of an array attribute shown.
_VALUE_ITEMS: Final = 6
#: HDF5's identifier of the deflate (gzip) filter, whose first parameter is the level (§3.5).
_DEFLATE_ID: Final = 1


@dataclass(frozen=True)
class FilterInfo:
    """One HDF5 filter of a dataset's pipeline (§3.5).

    Attributes
    ----------
    id
        The HDF5 filter identifier (1 deflate, 2 shuffle, 3 fletcher32, 32015 zstd, ...).
    name
        ``spec.CORE_FILTERS`` name for core filters, else the name HDF5 records (or ``"filter <id>"``).
    level
        The deflate level 0-9; None for other filters.
    """

    id: int
    name: str
    level: int | None = None

    def label(self) -> str:
        """``name`` with the level in parentheses when there is one, e.g. ``deflate(4)``."""
        return self.name if self.level is None else f"{self.name}({self.level})"


@dataclass(frozen=True)
class TreeNode:
    """One path of an HDF5 file.

    Attributes
    ----------
    path
        The HDF5 path (``/data/images``).
    kind
        ``"group"``, ``"dataset"``, ``"datatype"`` (a named datatype),
        ``"soft link"`` or ``"external link"``.
    target
        A link's target (``/x``, or ``file.h5:/x`` for an external link);
        for an object already listed under another path, that path.
    shape
        A dataset's shape (``[]`` for a scalar); None for a null dataspace and other kinds.
    dtype
        A dataset's or named datatype's type, as numpy names it (``float32``,
        ``|S10``, ``object`` for variable-length strings).
    chunks
        A chunked dataset's chunk shape; None when contiguous or compact.
    layout
        ``"contiguous"``, ``"chunked"``, ``"compact"``, ``"virtual"`` or
        ``"external"`` (raw data in other files) for a dataset; None otherwise.
    filters
        The filter pipeline of a chunked dataset, in order.
    attributes
        ``(name, short value)`` of each attribute, in the file's order.
    """

    path: str
    kind: str
    target: str | None = None
    shape: list[int] | None = None
    dtype: str | None = None
    chunks: list[int] | None = None
    layout: str | None = None
    filters: list[FilterInfo] = field(default_factory=list)
    attributes: list[tuple[str, str]] = field(default_factory=list)


@dataclass(frozen=True)
class TreeWalk:
    """What :func:`walk_tree` found.

    Attributes
    ----------
    path
        The file.
    nodes
        The paths listed, the root group first.
    not_shown
        Objects of the file beyond ``nodes`` (at least this many when ``count_complete`` is False).
    count_complete
        Whether ``not_shown`` counts every object left (False when the count stopped at its bound).
    """

    path: str
    nodes: list[TreeNode]
    not_shown: int = 0
    count_complete: bool = True


def dataset_filters(dset: h5py.Dataset) -> list[FilterInfo]:
    """The filter pipeline of a dataset, in order; ``[]`` when it is not chunked (§3.5).

    Parameters
    ----------
    dset
        An open dataset.

    Returns
    -------
    list of FilterInfo
        One per filter, with the deflate level.
    """
    if dset.chunks is None:
        return []
    dcpl = dset.id.get_create_plist()
    found = []
    for i in range(dcpl.get_nfilters()):
        filter_id, _flags, values, raw_name = dcpl.get_filter(i)
        name = spec.CORE_FILTERS.get(filter_id)
        if name is None:
            text = raw_name.decode("utf-8", "replace") if isinstance(raw_name, bytes) else str(raw_name)
            name = text or f"filter {filter_id}"
        level = int(values[0]) if filter_id == _DEFLATE_ID and len(values) else None
        found.append(FilterInfo(int(filter_id), name, level))
    return found


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _VALUE_CHARS else text[: _VALUE_CHARS - 3] + "..."


def _value_text(value: Any) -> str:
    """A short text of an attribute's value: strings quoted, arrays as their first items and shape."""
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    if isinstance(value, str):
        return _short(repr(value))
    if isinstance(value, h5py.Empty):
        return "(empty)"
    if isinstance(value, np.ndarray):
        if value.ndim == 0:
            return _value_text(value[()])
        items = [_value_text(v) for v in value.reshape(-1)[:_VALUE_ITEMS]]
        more = ", ..." if value.size > _VALUE_ITEMS else ""
        return _short(f"[{', '.join(items)}{more}]") + f" shape {tuple(value.shape)} {value.dtype}"
    if isinstance(value, np.generic):
        value = value.item()
    return _short(repr(value))


def _attributes(obj: Any) -> list[tuple[str, str]]:
    shown = []
    try:
        names = list(obj.attrs)
    except LIBRARY_ERRORS as exc:
        return [("(attributes)", f"unreadable: {_short(str(exc))}")]
    for name in names:
        try:
            text = _value_text(obj.attrs[name])
        except LIBRARY_ERRORS as exc:  # a type h5py cannot map, a damaged attribute
            text = f"unreadable: {_short(str(exc))}"
        shown.append((name, text))
    return shown


def _layout(dset: h5py.Dataset) -> str:
    if dset.is_virtual:
        return "virtual"
    dcpl = dset.id.get_create_plist()
    if dcpl.get_external_count():
        return "external"
    return {h5py.h5d.CHUNKED: "chunked", h5py.h5d.COMPACT: "compact"}.get(dcpl.get_layout(), "contiguous")


def _dataset(path: str, dset: h5py.Dataset) -> TreeNode:
    shape = None if dset.shape is None else [int(d) for d in dset.shape]
    return TreeNode(
        path,
        "dataset",
        shape=shape,
        dtype=str(dset.dtype),
        chunks=None if dset.chunks is None else [int(c) for c in dset.chunks],
        layout=_layout(dset),
        filters=dataset_filters(dset),
        attributes=_attributes(dset),
    )


def _link_node(path: str, link: Any) -> TreeNode | None:
    if isinstance(link, h5py.SoftLink):
        return TreeNode(path, "soft link", target=link.path)
    if isinstance(link, h5py.ExternalLink):
        return TreeNode(path, "external link", target=f"{link.filename}:{link.path}")
    return None


def _identity(obj: Any) -> tuple[int, int]:
    """Which object ``obj`` is, whatever link reached it: its file number and header address."""
    info = h5py.h5o.get_info(obj.id)
    return int(info.fileno), int(info.addr)


def _join(parent: str, name: str) -> str:
    return f"/{name}" if parent == "/" else f"{parent}/{name}"


def foreign_reason(path: str | os.PathLike[str]) -> str | None:
    """Why an HDF5 file is not an h5ml file (its root attribute ``format``, §4.1), or None.

    Parameters
    ----------
    path
        A file.

    Returns
    -------
    str or None
        ``"the root attribute 'format' is missing"`` (or holds another value)
        for an HDF5 file that is not an h5ml file; None for an h5ml file (even
        a broken one: the reader and the validator say what is wrong with
        it), and for a file HDF5 cannot open.
    """
    try:
        with open_read_only(os.fspath(path)) as f:  # one attribute: past a lock, as the reader (§10.4.1)
            value = read_attr(f, "format", None)
    except (*LIBRARY_ERRORS, UnicodeDecodeError) as exc:
        if isinstance(exc, OSError) and not isinstance(exc, UnicodeDecodeError) and not h5py.is_hdf5(path):
            return None  # not HDF5 at all, or HDF5 cannot open it: the reader's error says why
        return None if isinstance(exc, OSError) else "the root attribute 'format' cannot be read as text"
    if value == spec.FORMAT_NAME:
        return None
    said = "is missing" if value is None else f"is {_short(repr(value))}, not {spec.FORMAT_NAME!r}"
    return f"the root attribute 'format' {said}"


def walk_tree(path: str | os.PathLike[str], max_objects: int = DEFAULT_MAX_OBJECTS) -> TreeWalk:
    """List the groups, datasets, named datatypes and links of an HDF5 file, without reading data.

    Parameters
    ----------
    path
        An HDF5 file (any layout; an h5ml file too).
    max_objects
        The most paths listed (>= 1); the others are counted in ``not_shown``.

    Returns
    -------
    TreeWalk
        The root group first, then each group's members sorted by name, each
        group's own members right after it (depth first, as ``h5ls -r``).

    Raises
    ------
    ValueError
        If ``max_objects`` < 1.
    OSError
        If HDF5 cannot open the file (the caller says why it is not HDF5).
    """
    if max_objects < 1:
        raise ValueError(f"max_objects must be >= 1, got {max_objects}")
    nodes: list[TreeNode] = []
    seen: dict[Any, str] = {}
    left = 0
    with open_foreign(path, "inspect it again") as f:
        seen[_identity(f)] = "/"
        nodes.append(TreeNode("/", "group", attributes=_attributes(f)))
        stack: list[tuple[str, h5py.Group]] = [("/", f)]
        pending: list[Iterator[str]] = [iter(sorted(f))]
        while pending:
            name = next(pending[-1], None)
            if name is None:
                pending.pop()
                stack.pop()
                continue
            if len(nodes) >= max_objects and left >= _COUNT_LIMIT:
                return TreeWalk(os.fspath(path), nodes, left, count_complete=False)
            parent, group = stack[-1]
            child = _join(parent, name)
            listed = len(nodes) < max_objects
            node = _link_node(child, group.get(name, getlink=True))
            if node is None:
                node, opened = _object_node(group, name, child, seen, listed)
                if opened is not None:  # a group not seen before: walk it next (depth first, as h5ls -r)
                    stack.append((child, opened))
                    pending.append(iter(sorted(opened)))
            if listed:
                nodes.append(node)
            else:
                left += 1
    return TreeWalk(os.fspath(path), nodes, left)


def _object_node(
    group: h5py.Group, name: str, path: str, seen: dict[Any, str], detail: bool
) -> tuple[TreeNode, h5py.Group | None]:
    """The node of a hard link's object, and the group to walk when it is one not seen before.

    Without ``detail`` (an object only counted) the node holds the kind alone.
    """
    try:
        obj = group[name]
        token = _identity(obj)
    except LIBRARY_ERRORS as exc:  # a damaged object header, a link to a missing object
        return TreeNode(path, "unreadable", target=_short(str(exc))), None
    first = seen.get(token)
    kind = "group" if isinstance(obj, h5py.Group) else "dataset" if isinstance(obj, h5py.Dataset) else "datatype"
    if first is not None:
        return TreeNode(path, kind, target=first), None
    seen[token] = path
    if isinstance(obj, h5py.Group):
        return TreeNode(path, "group", attributes=_attributes(obj) if detail else []), obj
    if not detail:
        return TreeNode(path, kind), None
    if isinstance(obj, h5py.Dataset):
        return _dataset(path, obj), None
    return TreeNode(path, "datatype", dtype=str(obj.dtype), attributes=_attributes(obj)), None
