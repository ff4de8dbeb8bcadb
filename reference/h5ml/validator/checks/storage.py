"""Links and the storage profile of every object: E110-E115, E118, E119, W205, W206, W208; storage never written (§3.2-§3.6, §10.1, §10.4, §12.6).

:func:`check_links` walks every group breadth first, by name, without ever
following an external or soft link; it reports those links and records on the
:class:`~h5ml.validator.checks.state.FileState` every object reached by hard links,
each object once (a group reachable under several names is walked once, and
an object that links back to a group above it cannot make the walk loop).
Hard links with reserved names (``_...``) are entered last, so an object that
is also reachable under a reserved alias is reported under its split or
feature name. :func:`check_storage` then checks the datatype of every
attribute and dataset so recorded, and the storage of every dataset: external
raw storage, virtual layout, filters. A virtual dataset is E112 unless the
file is a view file of a sharded dataset (§12.6); there its mapping is
checked by :func:`h5ml.model.view_files.mapping_problems` (E118 for a source
outside the dataset's folder, E119 for a mapping that is not the
concatenation, or for a split or feature of the index that the view leaves
out), and only a mapping that passes is read by deep validation. :func:`classify` sorts a datatype into
the storage profile, for the encoding checks too; :func:`unwritten_storage`
tells whether a dataset's declared data was ever written
(:func:`h5ml.model.allocation.unallocated_storage`, E146) or is larger than
the file can hold (E145), for the checks that read data.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Iterator
from typing import Any, Final

import h5py
from h5py import h5d, h5g, h5l, h5o, h5t

from h5ml import spec
from h5ml.model.allocation import unallocated_storage
from h5ml.model.booleans import bool_enum_base
from h5ml.model.failures import LIBRARY_ERRORS
from h5ml.model.filters import filter_available
from h5ml.model.view_files import ViewContext, mapping_problems, stored_problem, view_context
from h5ml.validator.checks.issue import Issue, damaged
from h5ml.validator.checks.state import FileState, Member, address, hdf5_path, text

__all__ = ["NUMERIC", "check_links", "check_storage", "classify", "unwritten_storage"]

#: §3.2 (exponent bits, mantissa bits) of the IEEE binary16/32/64 formats, by size in bytes.
_IEEE_FLOATS: Final = {2: (5, 10), 4: (8, 23), 8: (11, 52)}

#: The kinds of :func:`classify` that hold numbers (§3.2, §3.3).
NUMERIC: Final = frozenset({"int", "uint", "float", "bool_enum"})


def classify(tid: Any) -> tuple[str, str]:
    """Sort an HDF5 datatype into the storage profile (§3.2).

    Parameters
    ----------
    tid
        An h5py low-level datatype (``h5py.h5t.TypeID``).

    Returns
    -------
    tuple of str
        ``(kind, detail)``: kind is ``"int"``, ``"uint"``, ``"float"``,
        ``"string"``, ``"bool_enum"`` or ``"forbidden"``; detail describes the type.
    """
    cls = tid.get_class()
    size = tid.get_size()
    if cls == h5t.INTEGER:
        signed = tid.get_sign() != h5t.SGN_NONE
        kind = "int" if signed else "uint"
        if size not in (1, 2, 4, 8):
            return "forbidden", f"a {8 * size}-bit integer"
        if tid.get_precision() != 8 * size or tid.get_offset() != 0:
            return "forbidden", f"an integer of {tid.get_precision()} bits at bit offset {tid.get_offset()}"
        return kind, f"{'' if signed else 'u'}int{8 * size}"
    if cls == h5t.FLOAT:
        _spos, _epos, esize, _mpos, msize = tid.get_fields()
        if _IEEE_FLOATS.get(size) == (esize, msize):
            return "float", f"float{8 * size}"
        return "forbidden", f"a {8 * size}-bit float that is not IEEE binary16/32/64"
    if cls == h5t.STRING:
        return "string", "a string"
    if cls == h5t.ENUM:
        base = bool_enum_base(tid)
        # SPEC §3.3.1-R1: over int8 or uint8, FALSE = 0 and TRUE = 1 in either order; any other enum is E113
        if base is not None:
            signed = "int8, h5py's default for numpy bool" if base.kind == "i" else "uint8"
            return "bool_enum", f"an HDF5 enum boolean (over {signed})"
        return "forbidden", "an enum other than the boolean FALSE = 0, TRUE = 1 over an 8-bit integer"
    names = {
        h5t.COMPOUND: "a compound type",
        h5t.OPAQUE: "an opaque type",
        h5t.REFERENCE: "a reference type",
        h5t.ARRAY: "an array type",
        h5t.VLEN: "a variable-length sequence of non-strings",
        h5t.BITFIELD: "a bitfield",
        h5t.TIME: "a time type",
    }
    return "forbidden", names.get(cls, f"an HDF5 type of class {cls}")


def check_links(state: FileState, f: h5py.File) -> Iterator[Issue]:
    """E110/E115 for every external, soft or user-defined link; records every object reached by hard links (§3.6).

    Walks the groups breadth first with HDF5's link iteration, which keeps names
    as bytes (a name that is not UTF-8 cannot stop the walk) and never follows a
    link. Each object is recorded once, under the first name met; hard links
    with reserved names are entered only once every object reachable without
    them has been recorded, so an object is recorded under a split or feature
    path whenever it has one.

    Parameters
    ----------
    state
        The file's state; gets ``objects``.
    f
        The open file.

    Yields
    ------
    Issue
        E110 per external link, E115 per soft or user-defined link, E101 for a
        group or object the library cannot read (the walk goes on elsewhere).
    """
    seen = {address(f)}
    # (path, index of the group in state.objects (-1: the root), group id); the path is dropped with the entry
    groups: deque[tuple[str, int, Any]] = deque([("/", -1, f.id)])
    reserved: deque[tuple[str, int, Any, bytes]] = deque()  # (parent path, parent index, parent id, name)
    reserved_prefix = spec.RESERVED_PREFIX.encode()
    while groups or reserved:
        if not groups:
            yield from _enter(state, seen, groups, *reserved.popleft())
            continue
        parent, index, gid = groups.popleft()
        try:
            links = _links(gid)
        except LIBRARY_ERRORS as exc:  # h5py raises KeyError for some damaged headers
            yield damaged(exc, parent, "listing the members of")
            continue
        for raw, kind in links:
            if kind == h5l.TYPE_HARD:
                if raw.startswith(reserved_prefix):
                    reserved.append((parent, index, gid, raw))
                else:
                    yield from _enter(state, seen, groups, parent, index, gid, raw)
                continue
            path = hdf5_path(parent, text(raw))
            # SPEC §3.6-R1: no external links (E110)
            if kind == h5l.TYPE_EXTERNAL:
                # SPEC §10.1-R3: reported from the link's value; the link is never followed
                target_file, target = (text(part) for part in gid.links.get_val(raw))
                yield Issue.of(
                    "E110",
                    path,
                    f"{path} is an external link to {target!r} in file {target_file!r}; it was not "
                    "followed: copy the data into this file (readers refuse external data, §10.1)",
                )
            else:  # SPEC §3.6-R2: no soft or user-defined links (E115)
                what = "a soft link" if kind == h5l.TYPE_SOFT else f"a user-defined link (type {kind})"
                yield Issue.of(
                    "E115", path, f"{path} is {what}; store the object under one hard link only, without aliases"
                )


def _enter(
    state: FileState,
    seen: set[tuple[int, int]],
    groups: deque[tuple[str, int, Any]],
    parent: str,
    index: int,
    gid: Any,
    raw: bytes,
) -> Iterator[Issue]:
    """Record the object of the hard link ``raw`` of group ``gid`` unless seen, and queue it if it is a group."""
    try:
        oid = h5o.open(gid, raw)
        key = address(oid)
    except LIBRARY_ERRORS as exc:  # h5py raises KeyError for some damaged headers
        yield damaged(exc, hdf5_path(parent, text(raw)), "opening")
        return
    if key in seen:
        return  # another name of an object already recorded (§3.6 allows it)
    seen.add(key)
    state.objects.append(Member(index, raw))
    if isinstance(oid, h5g.GroupID):
        groups.append((hdf5_path(parent, text(raw)), len(state.objects) - 1, oid))


def _links(gid: Any) -> list[tuple[bytes, int]]:
    """The ``(name, link type)`` of every link of a group, in byte order of the names."""
    links: list[tuple[bytes, int]] = []
    gid.links.iterate(lambda name, info: links.append((name, info.type)), info=True)
    return sorted(links)


def check_storage(state: FileState, f: h5py.File) -> Iterator[Issue]:
    """Datatypes, filters, external storage and virtual datasets of every object (§3.2-§3.6).

    Parameters
    ----------
    state
        The file's state, after :func:`check_links`; gets ``external``.
    f
        The open file.

    Yields
    ------
    Issue
        E113, W205, W206, W208 per datatype; E111, E112, E114 per dataset;
        E118, E119 per virtual dataset of a view file (E119 once at ``/`` for
        a view whose marker or index is wrong, and at ``/<split>`` for each
        split or feature of the index that the view leaves out); E101 for an object the
        library cannot read. Each object is checked once, under the path
        :func:`check_links` recorded for it.
    """
    views = _Views(view_context(f, state.path))
    for path, obj in _recorded(state, f):
        try:
            if isinstance(obj, BaseException):
                raise obj
            attrs = obj.attrs
            for name in attrs:
                yield from _check_type(attrs.get_id(name).get_type(), path, f"attribute {name!r} of {path}")
            if isinstance(obj, h5py.Dataset):
                yield from _check_type(obj.id.get_type(), path, f"dataset {path}")
                yield from _check_dataset_storage(state, obj, path, views)
        except LIBRARY_ERRORS as exc:
            yield damaged(exc, path, "reading")
    if views.context is not None and views.context.problem is None:
        yield from _check_view_members(f, views.context)


def _check_view_members(f: h5py.File, context: ViewContext) -> Iterator[Issue]:
    """E119 for each split, and each feature of a split, that the index lists and the view leaves out (§12.6-R4)."""
    assert context.index is not None
    for split_name, split in context.index.splits.items():
        group = f.get(split_name)
        if not isinstance(group, h5py.Group):
            missing = [f"split {split_name!r} (its {len(split.features)} feature(s))"]
        else:
            missing = [f"feature {name!r} of split {split_name!r}" for name in split.features if name not in group]
        for what in missing:
            # SPEC §12.6-R4: a view holds every split and feature its index lists (E119)
            yield Issue.of(
                "E119",
                f"/{split_name}",
                f"{context.path} leaves out {what}, which its index lists: a program reading the view would not "
                "see it; write the view again with h5ml view INDEX OUT.h5 (§12.6)",
            )


def _recorded(state: FileState, f: h5py.File) -> Iterator[tuple[str, Any]]:
    """The root group, then every object :func:`check_links` recorded: its HDF5 path and the open object.

    Each object is opened by name from its parent group, which is kept open
    only until its last recorded member is reached: time and memory grow with
    the number of objects, not with the depth of the groups (opening a member
    by its full path makes HDF5 walk every group above it: time d**2 for a
    chain of d groups). A member of a group that could not be opened is opened
    by its full path from the root. In place of an object that cannot be
    opened it gives the library's exception, for the caller to report.
    """
    last: dict[int, int] = {}
    for i, member in enumerate(state.objects):
        last[member.parent] = i
    # index -> (path, path as bytes, the open group or None when it could not be opened)
    groups: dict[int, tuple[str, bytes, h5py.Group | None]] = {-1: ("/", b"/", f)}
    yield "/", f
    for i, member in enumerate(state.objects):
        parent_path, parent_raw, parent = groups[member.parent]
        if last[member.parent] == i:
            del groups[member.parent]
        path = hdf5_path(parent_path, text(member.name))
        raw = parent_raw.rstrip(b"/") + b"/" + member.name
        obj: Any
        try:
            obj = f[raw] if parent is None else parent[member.name]
        except LIBRARY_ERRORS as exc:  # reported by check_storage, for this object alone
            obj = exc
        yield path, obj
        if i in last:  # a group with recorded members
            groups[i] = (path, raw, obj if isinstance(obj, h5py.Group) else None)


def unwritten_storage(dset: h5py.Dataset, file_size: int) -> str | None:
    """Tell whether the data a dataset declares is missing from the file (§3.5, §10.4).

    HDF5 returns the fill value for data that was never written, so a small
    file can declare a dataset of any size: reading it would take as long, and
    as much memory, as the declared size. This looks only at storage
    properties: no data is read.

    Parameters
    ----------
    dset
        A dataset of rank >= 1 that is neither external nor virtual.
    file_size
        The file's size in bytes.

    Returns
    -------
    str or None
        None when every declared value is stored (or nothing is declared);
        otherwise what is missing: what :func:`unallocated_storage` says (E146),
        or more stored bytes than an uncompressed dataset can have in a file of
        ``file_size`` bytes (E145).
    """
    missing = unallocated_storage(dset)
    if missing is not None:
        return missing.what
    if not dset.shape or math.prod(dset.shape) == 0:
        return None
    plist = dset.id.get_create_plist()
    stored = int(dset.id.get_storage_size())
    if plist.get_layout() != h5d.COMPACT and plist.get_nfilters() == 0 and stored > file_size:
        return (
            f"{dset.name} declares {stored} bytes of uncompressed data but the file holds only {file_size} bytes: "
            "it is truncated or damaged"
        )
    return None


def _check_type(tid: Any, path: str, what: str) -> Iterator[Issue]:
    """E113, W208, W205, W206 for one datatype (§3.2-§3.4)."""
    kind, detail = classify(tid)
    # SPEC §3.2-R1: every dataset and attribute has a datatype of the profile (E113)
    if kind == "forbidden":
        yield Issue.of(
            "E113",
            path,
            f"{what} has {detail}, which the storage profile forbids; use integers, IEEE floats "
            "or variable-length UTF-8 strings",
        )
    elif kind == "bool_enum":
        yield Issue.of("W208", path, f"{what} is {detail}; store booleans as uint8 0/1 with logical_dtype 'bool'")
    elif kind == "string":
        if not tid.is_variable_str():
            yield Issue.of("W205", path, f"{what} holds fixed-length strings; write variable-length UTF-8 strings")
        if tid.get_cset() == h5t.CSET_ASCII:
            yield Issue.of("W206", path, f"{what} holds strings with the ASCII character set; write UTF-8")


class _Views:
    """The view context of the file being checked, and whether its problem was reported (once, at ``/``)."""

    def __init__(self, context: ViewContext | None) -> None:
        self.context = context
        self.reported = False


def _check_view_dataset(views: _Views, found: list[tuple[str, str, str]]) -> Iterator[Issue]:
    """E118, E119 for one virtual dataset of a view file; E119 at ``/`` once for a view whose marker is wrong."""
    # SPEC §12.6-R1: a view file names its index in its folder, with that index's fingerprint (E119)
    # SPEC §12.6-R2: every source of a view stays inside the dataset's folder and is a listed, present shard (E118)
    # SPEC §12.6-R3: the mapping is exactly the concatenation of the split's shards in the index's order (E119)
    for code, where, message in found:
        if where == "/":
            if views.reported:
                continue
            views.reported = True
        yield Issue.of(code, where, message + "; write the view again with h5ml view INDEX OUT.h5 (§12.6)")


def _check_dataset_storage(state: FileState, dset: h5py.Dataset, path: str, views: _Views) -> Iterator[Issue]:
    """E111, E112, E114, E118, E119 for one dataset (§3.5, §3.6, §12.6)."""
    plist = dset.id.get_create_plist()
    virtual = plist.get_layout() == h5d.VIRTUAL
    if virtual and views.context is not None:
        found = mapping_problems(plist, dset.id.get_type(), dset.shape, path, views.context)
        yield from _check_view_dataset(views, found)
        if found:
            state.external.add(address(dset))  # SPEC §10.1-R3: a mapping that failed is never followed
        virtual = False  # a view's virtual dataset is not E112
    elif views.context is not None and views.context.problem is None and plist.get_external_count() == 0:
        stored = stored_problem(dset, path, views.context)
        if stored is not None:
            # SPEC §12.6-R3: a view stores only copies of the shards' class names and shifted offsets (E119)
            yield Issue.of("E119", path, stored + "; write the view again with h5ml view INDEX OUT.h5 (§12.6)")
    if plist.get_external_count() > 0 or virtual:
        # SPEC §10.1-R3: reported from the creation properties; its data is never read (state.external)
        state.external.add(address(dset))
    # SPEC §3.6-R3: no external raw storage (E111)
    if plist.get_external_count() > 0:
        files = sorted({plist.get_external(i)[0].decode("utf-8", "replace") for i in range(plist.get_external_count())})
        yield Issue.of(
            "E111",
            path,
            f"dataset {path} keeps its raw data in external file(s) {files}; it was not read: "
            "store the data inside the file (readers refuse external data, §10.1)",
        )
    # SPEC §3.6-R4: no virtual datasets, except in a view file (E112)
    if virtual:
        yield Issue.of(
            "E112",
            path,
            f"dataset {path} is a virtual dataset (its data lives in other datasets or files) in a file that is not "
            "a view file of a sharded dataset (§12.6); store the data itself",
        )
    # SPEC §3.5-R1: a filter that is not core is listed in required_filters (E114)
    for i in range(plist.get_nfilters()):
        filter_id, _flags, _values, filter_name = plist.get_filter(i)
        if filter_id not in spec.CORE_FILTERS:
            filter_available(filter_id)  # loads hdf5plugin for zstd (32015), so that deep validation decodes it
        if filter_id not in spec.CORE_FILTERS and filter_id not in state.required_filters:
            label = filter_name.decode("utf-8", "replace") if isinstance(filter_name, bytes) else str(filter_name)
            yield Issue.of(
                "E114",
                path,
                f"dataset {path} uses HDF5 filter {filter_id} ({label}), which is not a core filter "
                f"({', '.join(spec.CORE_FILTERS.values())}) and is not listed in the root attribute "
                "'required_filters'; declare it there or rewrite the data with gzip",
            )
