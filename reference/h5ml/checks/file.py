"""The file as a whole: opening it, its superblock, and the order of the checks (§3.1, §9, §10.3).

:func:`check_path` is where a validation starts: it refuses what is not an
HDF5 file (E100) before HDF5 sees it, reads the superblock version (E109),
opens the file read-only without file locking, and runs the checks in this
order: the root attributes (:mod:`~h5ml.checks.root`), the links and the
storage profile (:mod:`~h5ml.checks.storage`), then each split and feature
(:mod:`~h5ml.checks.splits`). A library failure on the way becomes E101.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any, Final

import h5py

from h5ml import spec
from h5ml.checks.issue import Issue
from h5ml.checks.root import check_root
from h5ml.checks.splits import check_splits
from h5ml.checks.state import LIBRARY_ERRORS, FileState
from h5ml.checks.storage import check_links, check_storage

__all__ = ["check_path"]

#: The 8-byte signature that starts an HDF5 superblock (at 0, 512, 1024, 2048, ...).
_HDF5_SIGNATURE: Final = b"\x89HDF\r\n\x1a\n"


def _superblock_version(fh: Any) -> int | None:
    """Return the superblock version byte of an open binary file, None if no HDF5 signature (§3.1)."""
    offset = 0
    while True:
        fh.seek(offset)
        head = fh.read(len(_HDF5_SIGNATURE) + 1)
        if len(head) < len(_HDF5_SIGNATURE) + 1:
            return None
        if head.startswith(_HDF5_SIGNATURE):
            return int(head[-1])
        offset = 512 if offset == 0 else offset * 2


def check_path(state: FileState) -> Iterator[Issue]:
    """Yield every issue of the file at ``state.path`` (§9).

    Parameters
    ----------
    state
        A fresh state for the file; the checks fill it in as they run.

    Yields
    ------
    Issue
        One per broken rule, in check order: the file (E100, E109), the root
        attributes, links, the storage profile, then each split and feature.
        A file that cannot be read gives E100 or E101; nothing is raised on purpose.
    """
    path = state.path
    if os.path.isdir(path):
        yield Issue.of("E100", "/", f"{path} is a directory, not an HDF5 file; give the path of an h5ml file")
        return
    try:
        with open(path, "rb") as fh:
            if not fh.read(1):
                yield Issue.of(
                    "E100",
                    "/",
                    f"{path} is empty (0 bytes): its writer stopped before writing anything; rewrite it",
                )
                return
            version = _superblock_version(fh)
    except OSError as exc:
        yield Issue.of("E100", "/", f"{path} cannot be read: {exc.strerror or exc}; check the path and permissions")
        return
    if version is None:
        yield Issue.of(
            "E100",
            "/",
            f"{path} is not an HDF5 file (no HDF5 signature at offset 0, 512, 1024, ...); "
            "convert it to h5ml first (see 'h5ml convert')",
        )
        return
    if version > spec.MAX_SUPERBLOCK_VERSION:
        yield Issue.of(
            "E109",
            "/",
            f"{path} has superblock version {version}; HDF5 1.10 reads versions up to "
            f"{spec.MAX_SUPERBLOCK_VERSION}: rewrite the file with libver bounds {spec.LIBVER_BOUNDS}",
        )
    try:
        f = h5py.File(path, "r", locking=False)
    except LIBRARY_ERRORS as exc:
        yield Issue.of(
            "E100", "/", f"HDF5 cannot open {path}: {exc}; the file is truncated or damaged: restore or rewrite it"
        )
        return
    with f:
        try:
            yield from _check_file(state, f)
        except LIBRARY_ERRORS as exc:
            yield Issue.of("E101", "/", f"the HDF5 library failed while reading {path}: {exc}; the file is damaged")


def _check_file(state: FileState, f: h5py.File) -> Iterator[Issue]:
    """Run the checks of an open file in order; nothing after the root when it is not a checkable h5ml file."""
    if not (yield from check_root(state, f)):
        return
    yield from check_links(state, f)
    yield from check_storage(state, f)
    yield from check_splits(state, f)
