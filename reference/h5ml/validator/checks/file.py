"""The file as a whole: opening it, its superblock, and the order of the checks (§3.1, §9, §10.3).

:func:`check_events` is where a validation starts: it refuses what is not a
regular HDF5 file (E100) before HDF5 sees it: a path that does not resolve
(missing, a symbolic-link loop), a directory, a FIFO, a socket or a device,
an empty file, a file without the HDF5 signature. It then reads the
superblock version (E109), opens the file read-only as :func:`h5ml.open` does
(:func:`h5ml.model.locking.open_read_only`: with HDF5's default file locking,
and without it when the lock cannot be taken: another handle of this process
holds the file with other locking settings, or another process holds its lock,
SPEC §10.4.1-S3; an unfinished file is then told by its missing completion
marker, §4.4), and runs the checks in this order: the root attributes
(:mod:`~h5ml.validator.checks.root`), the links and the storage profile
(:mod:`~h5ml.validator.checks.storage`), each split and feature
(:mod:`~h5ml.validator.checks.splits`), then, in a deep validation, the data of every
sound feature (:mod:`~h5ml.validator.checks.deep`). Between the metadata checks and the
data checks it yields :data:`METADATA_DONE`, so that a caller that streams the
issues (the validator's child process) can tell how far the checks went. A
library failure on the way becomes E101. :func:`check_path` yields the issues
alone. A URL is opened through fsspec instead (:mod:`~h5ml.validator.checks.url`).
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator
from typing import Final

import h5py

from h5ml import spec
from h5ml.errors import FileLockedError
from h5ml.model.failures import LIBRARY_ERRORS, is_library_failure
from h5ml.model.locking import open_read_only
from h5ml.model.remote import is_url, local_file_path
from h5ml.validator.checks.deep import check_data
from h5ml.validator.checks.issue import Issue, damaged
from h5ml.validator.checks.root import check_root
from h5ml.validator.checks.splits import check_splits
from h5ml.validator.checks.state import FileState
from h5ml.validator.checks.storage import check_links, check_storage
from h5ml.validator.checks.url import open_url

__all__ = ["METADATA_DONE", "check_events", "check_path"]

#: The event :func:`check_events` yields once every metadata check is done, before the data checks.
METADATA_DONE: Final = "metadata checks done"

#: What a file that is not regular is, by the test of :mod:`stat` that recognises it.
_FILE_KINDS: Final = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a named pipe (FIFO)"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


def _not_regular(path: str, mode: int) -> str | None:
    """The message of E100 for a file that is not a regular file, None for a regular file."""
    if stat.S_ISREG(mode):
        return None
    kind = next((what for test, what in _FILE_KINDS if test(mode)), "not a regular file")
    return f"{path} is {kind}, not a regular file, so it cannot be an HDF5 file; give the path of an h5ml file"


def _stat(path: str) -> tuple[os.stat_result | None, str | None]:
    """``os.stat`` (following symbolic links) of ``path``, or the message of E100 when it fails."""
    try:
        return os.stat(path), None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return None, f"{path} is a symbolic link that never resolves (a loop of links); give the path of a file"
        if exc.errno == errno.ENOENT:
            return None, f"{path} does not exist (or is a symbolic link to nothing); check the path"
        return None, f"{path} cannot be read: {exc.strerror or exc}; check the path and permissions"


def _read_head(state: FileState) -> tuple[int | None, str | None]:
    """The superblock version of a regular, non-empty file, or the message of E100 (§3.1).

    The file is opened without blocking and checked again once open, so that a
    path replaced by a FIFO or a device in the meantime is refused too.
    """
    path = state.path
    st, problem = _stat(path)
    if st is None:
        return None, problem
    problem = _not_regular(path, st.st_mode)
    if problem is not None:
        return None, problem
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        return None, f"{path} cannot be read: {exc.strerror or exc}; check the path and permissions"
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fh.fileno())
        problem = _not_regular(path, st.st_mode)
        if problem is not None:
            return None, problem
        state.file_size = st.st_size
        if st.st_size == 0:
            return None, f"{path} is empty (0 bytes): its writer stopped before writing anything; rewrite it"
        version = spec.superblock_version(fh)
    if version is None:
        return None, (
            f"{path} is not an HDF5 file (no HDF5 signature at offset 0, 512, 1024, ...); "
            "convert it to h5ml first (see 'h5ml convert')"
        )
    return version, None


def _open(path: str) -> tuple[h5py.File | None, str]:
    """Open ``path`` read-only as the reader does: past a lock HDF5 cannot take (SPEC §10.4.1-S3).

    Returns the file, or None and the message of E100 (what HDF5 said, and what may cause it).
    """
    try:
        # SPEC §9.1.1-R4: read-only, always; the validator never writes to the file it checks
        return open_read_only(path, action="validate it again"), ""
    except FileLockedError as exc:  # the environment forces a lock that another process holds
        return None, str(exc)
    except LIBRARY_ERRORS as exc:
        if not is_library_failure(exc):
            raise
        return None, (
            f"HDF5 cannot open {path}: {exc}; the file starts like an HDF5 file but HDF5 refuses it, as its message "
            "says (a file cut short or damaged is the usual cause): restore or rewrite it"
        )


def check_path(state: FileState) -> Iterator[Issue]:
    """Yield every issue of the file at ``state.path`` (§9).

    Parameters
    ----------
    state
        A fresh state for the file; the checks fill it in as they run.

    Yields
    ------
    Issue
        The issues of :func:`check_events`, without its progress events.
    """
    for event in check_events(state):
        if isinstance(event, Issue):
            yield event


def check_events(state: FileState) -> Iterator[Issue | str]:
    """Yield every issue of the file at ``state.path``, and :data:`METADATA_DONE` after the metadata checks (§9).

    Parameters
    ----------
    state
        A fresh state for the file; the checks fill it in as they run.

    Yields
    ------
    Issue or str
        One issue per broken rule, in check order: the file (E100, E109), the
        root attributes, links, the storage profile, then each split and
        feature; then :data:`METADATA_DONE`; then, in a deep validation, the
        issues of the data. A file that cannot be read gives E100 or E101
        (and no :data:`METADATA_DONE`); nothing is raised on purpose.
    """
    # SPEC §3.1-R1: a single HDF5 file that HDF5 1.10 opens, else E100
    f: h5py.File | None = None
    state.path = local_file_path(state.path, state.storage_options) or state.path  # file:// is its local path
    if is_url(state.path):  # through fsspec, as h5ml.open opens it
        version, f, problem = open_url(state)
    else:
        version, problem = _read_head(state)
    if problem is not None:
        yield Issue.of("E100", "/", problem)
        return
    assert version is not None
    path = state.path
    refused = ""
    if f is None:
        f, refused = _open(path)
    # SPEC §3.1-R2: superblock version at most 3 (E109)
    if version > spec.MAX_SUPERBLOCK_VERSION:
        # a version the installed HDF5 cannot open either is far more often a damaged byte than a newer library
        advice = (
            f"rewrite the file with libver bounds {spec.LIBVER_BOUNDS}"
            if f is not None
            else f"the installed HDF5 {h5py.version.hdf5_version} cannot open it either, so the superblock is most "
            "likely damaged (restore the file from a good copy); if a newer HDF5 library wrote it, rewrite it with "
            f"that library and libver bounds {spec.LIBVER_BOUNDS}"
        )
        yield Issue.of(
            "E109",
            "/",
            f"{path} has superblock version {version}; HDF5 1.10 reads versions up to "
            f"{spec.MAX_SUPERBLOCK_VERSION}: {advice}",
        )
    if f is None:
        yield Issue.of("E100", "/", refused)
        return
    with f:
        try:
            failed: set[str] = set()  # the paths already reported as E101: another check meets the same failure
            for event in _check_file(state, f):
                if isinstance(event, Issue) and event.code == "E101":
                    if event.path in failed:
                        continue
                    failed.add(event.path)
                yield event
        except LIBRARY_ERRORS as exc:  # KeyError too: h5py's error for some damaged object headers
            yield damaged(exc, "/", "reading", what=path)


def _check_file(state: FileState, f: h5py.File) -> Iterator[Issue | str]:
    """Run the checks of an open file in order; nothing after the root when it is not a checkable h5ml file.

    Every check yields every issue it finds and the next check runs after it, whatever was found before, as
    far as the file can be read (SPEC §9.1.2-R1); a file that is not h5ml (E102) or has another MAJOR (E104)
    stops after the root, and its issue stands alone (SPEC §9.1.2-R3, as E100 and E103 do). Every check runs in a shallow validation
    (SPEC §9.1.1-R2); a deep one adds the checks of the data, the registry's deep codes (SPEC §9.1.1-R1).
    """
    if not (yield from check_root(state, f)):
        yield METADATA_DONE
        return
    yield from check_links(state, f)
    yield from check_storage(state, f)
    yield from check_splits(state, f)
    yield METADATA_DONE
    if state.deep:
        yield from check_data(state, f)
