"""The storage walk at open: no external link, external raw storage or virtual dataset (§3.6, §10.1).

Such storage makes a program return (or copy) the bytes of other files: any
local file a hostile h5ml file names. :func:`h5ml.open` refuses it unless
``allow_external=True``, and ``Writer(mode="a")`` refuses it always (a file
it extends must be one the reader reads): :func:`check_storage` walks every
object of the file once, before any split is listed.
"""

from __future__ import annotations

from collections import deque
from typing import Any

import h5py

from h5ml.errors import ForbiddenStorageError, H5MLError
from h5ml.model.failures import LIBRARY_ERRORS, damaged_file, is_library_failure
from h5ml.model.hdf5 import group_links

__all__ = ["check_storage"]


def check_storage(f: h5py.File, path: str) -> None:
    """Refuse external links, external raw storage and virtual datasets (§3.6, §10.1; SPEC §10.1-R1).

    Runs at open, before any split is listed or any sample read, and examines every link of every group
    and the layout of every dataset, not only the paths the caller asks for (SPEC §10.1-R2).

    Walks every group breadth first with HDF5's link iteration (names stay
    bytes, so a name that is not UTF-8 cannot stop the walk; links are never
    followed), each object once: an object linked under several names, or a
    link back to a group above, cannot make the walk loop.

    Raises
    ------
    ForbiddenStorageError
        For the first external link, virtual dataset or dataset with external
        raw storage met.
    InvalidFileError
        If the HDF5 library fails while listing or opening an object (a damaged file).
    """
    seen: set[tuple[int, int]] = set()
    groups: deque[tuple[str, Any]] = deque([("/", f.id)])
    while groups:
        parent, gid = groups.popleft()
        for raw, kind in group_links(gid, path, parent):
            where = f"{parent.rstrip('/')}/{raw.decode('utf-8', 'replace')}"
            if kind == h5py.h5l.TYPE_EXTERNAL:
                _refuse_external_link(gid, raw, path, where)
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
                    _check_dataset_storage(oid, path, where)
            except H5MLError:
                raise
            except LIBRARY_ERRORS as exc:
                if not is_library_failure(exc):
                    raise
                raise damaged_file(path, where, "opening", exc) from exc


def _refuse_external_link(gid: Any, raw: bytes, path: str, where: str) -> None:
    """Raise ForbiddenStorageError for the external link ``raw`` of group ``gid`` (§3.6, §10.1)."""
    try:
        target_file, target = (part.decode("utf-8", "replace") for part in gid.links.get_val(raw))
    except LIBRARY_ERRORS as exc:
        if not is_library_failure(exc):
            raise
        raise damaged_file(path, where, "reading the external link", exc) from exc
    raise ForbiddenStorageError(
        f"{path}: {where} is an external link to {target_file}:{target} (§3.6, §10.1); an h5ml file "
        "must not read other files. Open it in Python with h5ml.open(..., allow_external=True) only if you trust it (the command line never reads other files)",
        path=path,
        hdf5_path=where,
    )


def _check_dataset_storage(oid: Any, path: str, where: str) -> None:
    """Refuse a virtual dataset or one with external raw storage (§3.6, §10.1)."""
    dcpl = oid.get_create_plist()
    if dcpl.get_layout() == h5py.h5d.VIRTUAL:
        raise ForbiddenStorageError(
            f"{path}: {where} is a virtual dataset (§3.6, §10.1); its data may come from other files. Open "
            "the file in Python with h5ml.open(..., allow_external=True) only if you trust it (the command line never reads other files)",
            path=path,
            hdf5_path=where,
        )
    if dcpl.get_external_count() > 0:
        target = dcpl.get_external(0)[0]
        label = target.decode("utf-8", "replace") if isinstance(target, bytes) else str(target)
        raise ForbiddenStorageError(
            f"{path}: {where} stores its data in the external file {label!r} (§3.6, §10.1). Open the file "
            "in Python with h5ml.open(..., allow_external=True) only if you trust it (the command line never reads other files)",
            path=path,
            hdf5_path=where,
        )
