"""The storage check of every HDF5 file h5ml did not write: no external link, external raw storage or virtual dataset (§3.6, §10.1).

The one exception is a view file of a sharded dataset (§12.6), read by
:func:`h5ml.open`: :func:`check_storage` with ``views=True`` accepts its
virtual datasets when :func:`h5ml.model.view_files.mapping_problems` finds
their mapping to be exactly the concatenation of the shards the index lists,
inside the dataset's folder, and refuses the view otherwise.

Such storage makes a program return (or copy) the bytes of other files: any
local file a hostile file names. This module is the one place that refuses
it, with one error (:class:`~h5ml.errors.ForbiddenStorageError`) and one
message form, for every path that opens an HDF5 file as input:
:func:`h5ml.open` (and through it ``subset``, ``merge``, ``export``,
``dump``, ``inspect``), the conversion of HDF5 sources
(:mod:`h5ml.ingest.hdf5`, whose walk calls :func:`check_link` and
:func:`check_dataset_storage` for each object it lists, and whose later
reads call :func:`check_path`), and ``Writer(mode="a")``, which refuses it
always (a file it extends must be one the reader reads). Python callers opt
in with ``allow_external=True``; the command line never reads other files.

:func:`check_storage` walks every object of the file once, before any split
is listed; :func:`check_path` checks only the links on the way to one
object and that object's storage (a walk limited to what is read, for a
source reopened after it was walked).
"""

from __future__ import annotations

import os
from collections import deque
from typing import Any

import h5py

from h5ml.errors import ForbiddenStorageError, H5MLError
from h5ml.model.failures import LIBRARY_ERRORS, damaged_file, is_library_failure
from h5ml.model.hdf5 import group_links
from h5ml.model.view_files import VDS_PREFIX_ENV, ViewContext, mapping_problems, view_context

__all__ = ["check_dataset_storage", "check_link", "check_path", "check_storage", "forbidden_storage"]

#: The remedy every refusal gives: the Python opt-in, which the command line never offers.
_REMEDY = (
    "Open it in Python with h5ml.open(..., allow_external=True), or pass allow_external=True to the h5ml.ingest "
    "function that reads it, only if you trust it (the command line never reads other files: copy the data into the "
    "file, e.g. with h5repack, and use the copy)"
)


def check_storage(f: h5py.File, path: str, *, views: bool = False) -> None:
    """Refuse external links, external raw storage and virtual datasets (§3.6, §10.1; SPEC §10.1-R1).

    Runs at open, before any split is listed or any sample read, and examines every link of every group
    and the layout of every dataset, not only the paths the caller asks for (SPEC §10.1-R2).

    Walks every group breadth first with HDF5's link iteration (names stay
    bytes, so a name that is not UTF-8 cannot stop the walk; links are never
    followed), each object once: an object linked under several names, or a
    link back to a group above, cannot make the walk loop.

    Parameters
    ----------
    f
        The file, open read-only.
    path
        Its path, for messages.
    views
        Accept the virtual datasets of a view file (§12.6) whose mapping
        passes :func:`h5ml.model.view_files.mapping_problems` (the reader);
        False refuses every virtual dataset (``Writer(mode="a")``).

    Raises
    ------
    ForbiddenStorageError
        For the first external link, virtual dataset or dataset with external
        raw storage met; with ``views``, for a view file whose marker or index
        is wrong, a virtual dataset whose mapping is not the view's (a source
        outside the folder, not listed, missing), or the environment variable
        ``HDF5_VDS_PREFIX`` set (HDF5 would look for the sources there first).
    InvalidFileError
        If the HDF5 library fails while listing or opening an object (a damaged file).
    """
    view = view_context(f, path) if views else None
    seen: set[tuple[int, int]] = set()
    groups: deque[tuple[str, Any]] = deque([("/", f.id)])
    while groups:
        parent, gid = groups.popleft()
        for raw, kind in group_links(gid, path, parent):
            where = f"{parent.rstrip('/')}/{raw.decode('utf-8', 'replace')}"
            check_link(gid, raw, kind, path, where)
            if kind != h5py.h5l.TYPE_HARD:
                continue  # soft and user-defined links stay inside the file; readers ignore them (§3.6)
            try:
                oid = h5py.h5o.open(gid, raw)
                info = h5py.h5o.get_info(oid)
                key = (int(info.fileno), int(info.addr))
                if key in seen:
                    continue
                seen.add(key)
                if isinstance(oid, h5py.h5g.GroupID):
                    groups.append((where, oid))
                elif isinstance(oid, h5py.h5d.DatasetID):
                    if view is not None and oid.get_create_plist().get_layout() == h5py.h5d.VIRTUAL:
                        _check_view_dataset(oid, path, where, view)
                    else:
                        check_dataset_storage(oid, path, where)
            except H5MLError:
                raise
            except LIBRARY_ERRORS as exc:
                if not is_library_failure(exc):
                    raise
                raise damaged_file(path, where, "opening", exc) from exc


def _check_view_dataset(oid: Any, path: str, where: str, view: ViewContext) -> None:
    """Refuse a virtual dataset of a view file unless its mapping is the view's (§12.6, §10.1)."""
    # SPEC §10.1-R4: a reader follows the mapping of a view file only once every source passed the checks of §12.6
    problems = mapping_problems(oid.get_create_plist(), oid.get_type(), tuple(oid.shape), where, view)
    if problems:
        raise _view_refusal(path, where, "; ".join(message for *_, message in problems))
    prefix = os.environ.get(VDS_PREFIX_ENV)
    if prefix:
        raise _view_refusal(
            path,
            where,
            f"the environment variable {VDS_PREFIX_ENV} is set to {prefix!r}: HDF5 would look for the sources of "
            f"{where} there before the view's folder; unset it to read the view",
        )


def _view_refusal(path: str, where: str, what: str) -> ForbiddenStorageError:
    """The refusal of a view file whose virtual dataset ``where`` h5ml does not follow (§12.6, §10.1)."""
    return ForbiddenStorageError(
        f"{path}: this view file is not read (§12.6, §10.1): {what}. h5ml follows the virtual datasets of a view "
        "only when they map, in order, the shards its index lists inside its folder: write the view again "
        "(h5ml view INDEX OUT.h5 on the command line, h5ml.ingest.view.write_view in Python), or open the index",
        path=path,
        hdf5_path=where,
    )


def check_path(f: h5py.File, path: str, hdf5_path: str) -> None:
    """Refuse an external link on the way to ``hdf5_path``, or external raw storage or a virtual dataset there (§3.6, §10.1).

    The walk limited to what is read: each link from the root to the object
    is looked at without being followed (HDF5's link info), and the object's
    storage when it is a dataset. A source reopened after it was walked whole
    (a conversion's worker processes, the proposal's reads of class names and
    scalars) runs this before each dataset it reads, so that a file replaced
    in between cannot make it read another file. Soft links on the way are
    the caller's rule (a conversion refuses them when it walks the source);
    this check follows them as HDF5 does and checks where they lead.

    Parameters
    ----------
    f
        The file, open read-only.
    path
        Its path, for messages.
    hdf5_path
        The object about to be read (``/train/x``).

    Raises
    ------
    ForbiddenStorageError
        For an external link on the way, or a virtual dataset or a dataset with external raw storage at the end.
    InvalidFileError
        If the HDF5 library fails while looking at a link or the object (a damaged file).
    KeyError
        If the object does not exist (as ``f[hdf5_path]`` would).
    """
    where = ""
    gid: Any = f.id
    parts = [part for part in hdf5_path.split("/") if part]
    try:
        for number, part in enumerate(parts):
            where = f"{where}/{part}"
            raw = part.encode("utf-8")
            if not gid.links.exists(raw):
                raise KeyError(f"{path}: no object {where}")
            check_link(gid, raw, gid.links.get_info(raw).type, path, where)
            oid = h5py.h5o.open(gid, raw)
            if number < len(parts) - 1:
                gid = oid
            elif isinstance(oid, h5py.h5d.DatasetID):
                check_dataset_storage(oid, path, where)
    except (H5MLError, KeyError):
        raise
    except LIBRARY_ERRORS as exc:
        if not is_library_failure(exc):
            raise
        raise damaged_file(path, where or "/", "opening", exc) from exc


def check_link(gid: Any, raw: bytes, kind: int, path: str, where: str) -> None:
    """Refuse the link ``raw`` of group ``gid`` if it is an external link (§3.6, §10.1).

    Parameters
    ----------
    gid
        The group's low-level id.
    raw
        The link's name, as bytes.
    kind
        Its ``h5py.h5l`` link type.
    path, where
        The file and the link's HDF5 path, for messages.

    Raises
    ------
    ForbiddenStorageError
        If the link is external, naming its target file and path.
    InvalidFileError
        If the HDF5 library cannot read the link's value (a damaged file).
    """
    if kind != h5py.h5l.TYPE_EXTERNAL:
        return
    try:
        target_file, target = (part.decode("utf-8", "replace") for part in gid.links.get_val(raw))
    except LIBRARY_ERRORS as exc:
        if not is_library_failure(exc):
            raise
        raise damaged_file(path, where, "reading the external link", exc) from exc
    raise forbidden_storage(path, where, f"is an external link to {target_file}:{target}")


def check_dataset_storage(oid: Any, path: str, where: str) -> None:
    """Refuse a virtual dataset or one with external raw storage (§3.6, §10.1).

    Parameters
    ----------
    oid
        The dataset's low-level id (``dataset.id``).
    path, where
        The file and the dataset's HDF5 path, for messages.

    Raises
    ------
    ForbiddenStorageError
        If the dataset is virtual or stores its raw data in external files.
    """
    dcpl = oid.get_create_plist()
    if dcpl.get_layout() == h5py.h5d.VIRTUAL:
        raise forbidden_storage(path, where, "is a virtual dataset; its data may come from other files")
    if dcpl.get_external_count() > 0:
        target = dcpl.get_external(0)[0]
        label = target.decode("utf-8", "replace") if isinstance(target, bytes) else str(target)
        raise forbidden_storage(path, where, f"stores its data in the external file {label!r}")


def forbidden_storage(path: str, where: str, what: str) -> ForbiddenStorageError:
    """The one refusal of storage in other files: what was found, where, and what to do (§3.6, §10.1).

    Parameters
    ----------
    path
        The file.
    where
        The HDF5 path of the link or dataset.
    what
        What it is, after its path (``"is a virtual dataset; ..."``).

    Returns
    -------
    ForbiddenStorageError
        To be raised; its ``path`` and ``hdf5_path`` are set.
    """
    return ForbiddenStorageError(
        f"{path}: {where} {what} (§3.6, §10.1); h5ml never reads other files through a file it did not write. "
        + _REMEDY,
        path=path,
        hdf5_path=where,
    )
