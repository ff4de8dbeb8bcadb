"""HDF5 file locks: recognising a lock failure, and opening a file read-only past another process's lock (§10.4.1).

HDF5 takes a lock on every file it opens (``flock``: shared to read,
exclusive to write) and refuses to open a file whose lock it cannot take.
:func:`open_read_only` is the one place where h5ml opens a file for reading
with HDF5 (the reader, the validator, the sources of a conversion): it tries
with the locking asked for, and when the lock cannot be taken:

- for an h5ml file (``retry_without_lock=True``), it opens the file again
  with locking disabled, unless locking was asked for explicitly
  (``locking=True``, or the environment); the caller then checks the file as
  any other, its completion marker first (§4.4). SPEC §10.4.1-S3 says why
  this is safe;
- for a file that is not an h5ml file (``retry_without_lock=False``), a
  lock held by another process is reported as :class:`FileLockedError`: such
  a file has no completion marker, so a file being written cannot be told
  from a finished one. A lock failure of another kind (another handle of this
  process, a file system without locks) is read past as above.

Every lock failure that is reported is a :class:`~h5ml.errors.FileLockedError`
(an ``OSError`` too), never HDF5's bare ``OSError``.
"""

from __future__ import annotations

import errno
import os
import re
from typing import Any, Final

import h5py

from h5ml.errors import FileLockedError
from h5ml.model.failures import LIBRARY_ERRORS

__all__ = [
    "LOCKING_VARIABLE",
    "environment_forces_locking",
    "is_lock_failure",
    "locked_by_writer",
    "open_foreign",
    "open_read_only",
]

#: The environment variable by which HDF5 sets file locking for the whole process.
LOCKING_VARIABLE: Final = "HDF5_USE_FILE_LOCKING"

#: Values of :data:`LOCKING_VARIABLE` that make HDF5 lock whatever a program asks (measured, HDF5 2.0: the variable
#: is read once, when the library starts, and is case-sensitive; ``FALSE`` and ``0`` turn locking off, any other
#: value is ignored).
_FORCING_VALUES: Final = frozenset({"TRUE", "1", "BEST_EFFORT"})

#: HDF5's messages about file locks ("unable to lock file", "file locking flag values don't match"), not "sblock".
_LOCK_PROBLEM: Final = re.compile(r"\block", re.IGNORECASE)

#: The ``errno`` of a lock another process holds (``flock`` with ``LOCK_NB``): EWOULDBLOCK, which is EAGAIN on Linux.
_HELD_ELSEWHERE: Final = frozenset({errno.EAGAIN, errno.EWOULDBLOCK})


def is_lock_failure(exc: BaseException) -> bool:
    """Whether HDF5 refused to open a file because of a lock: another handle or process holds it (§10.4.1).

    Returns
    -------
    bool
        True for HDF5's "unable to lock file" and "file locking flag values don't match" (another handle in this
        process opened the file with other locking settings).
    """
    return isinstance(exc, OSError) and _LOCK_PROBLEM.search(str(exc)) is not None


def locked_by_writer(exc: BaseException) -> bool:
    """Whether HDF5 refused to open a file because another process holds its lock (§4.4, §10.4.1).

    HDF5 takes a shared lock to read and an exclusive one to write, held until
    the writer closes the file; a read that cannot take its shared lock
    (``BlockingIOError``, errno EAGAIN: measured with h5py 3 and HDF5 1.14)
    means that another process has the file open for writing, or inherited
    such a handle when it forked (the lock then stays until it exits). Another
    handle of this process with other locking settings is a different failure
    ("file locking flag values don't match", no errno), and so are locks that
    fail on NFS or read-only media (ENOLCK, ENOSYS).

    Returns
    -------
    bool
        True when another process holds the file's exclusive lock.
    """
    return is_lock_failure(exc) and isinstance(exc, OSError) and exc.errno in _HELD_ELSEWHERE


def environment_forces_locking() -> str | None:
    """``"HDF5_USE_FILE_LOCKING=TRUE"`` (its value) when the environment makes HDF5 lock every file, else None.

    HDF5 reads :data:`LOCKING_VARIABLE` when the library starts and then
    ignores the locking a program asks for (``locking=False`` included): with
    ``TRUE``, ``1`` or ``BEST_EFFORT`` a file cannot be opened without its lock.
    """
    value = os.environ.get(LOCKING_VARIABLE)
    return f"{LOCKING_VARIABLE}={value}" if value in _FORCING_VALUES else None


def open_read_only(
    path: str,
    *,
    locking: bool | None = None,
    retry_without_lock: bool = True,
    action: str = "open it again",
    **kwargs: Any,
) -> h5py.File:
    """Open ``path`` read-only with HDF5; past a lock it cannot take when that is safe (SPEC §10.4.1-S3).

    Parameters
    ----------
    path
        The file.
    locking
        HDF5 file locking: None keeps HDF5's default (locking, unless the
        environment turns it off); False opens without a lock; True asks for
        the lock, and a lock that cannot be taken is then an error.
    retry_without_lock
        True for an h5ml file, whose completion marker the caller checks
        next (§4.4): a lock held by another process is read past. False for a
        file that is not an h5ml file: a lock held by another process is an
        error (the file may be being written).
    action
        What to do again once the lock is gone, as a verb phrase for the
        message (``"open it again"``, ``"convert it again"``).
    **kwargs
        More keyword arguments of ``h5py.File`` (the chunk cache).

    Returns
    -------
    h5py.File
        The file, opened read-only, with its lock or without it.

    Raises
    ------
    FileLockedError
        If HDF5 cannot lock the file and the lock was asked for (``locking=True``
        or :data:`LOCKING_VARIABLE`), or another process has a file open for
        writing that ``retry_without_lock=False`` must not read past.
    OSError, RuntimeError
        Any other failure of HDF5 or of the operating system, as h5py raises it
        (the caller says what it means: a missing file, a damaged one).
    """
    asked = {} if locking is None else {"locking": locking}
    try:
        return h5py.File(path, "r", **asked, **kwargs)
    except LIBRARY_ERRORS as exc:
        if not is_lock_failure(exc):
            raise
        failure = exc
    forced = "locking=True" if locking else environment_forces_locking()
    if forced is None and (retry_without_lock or not locked_by_writer(failure)):
        try:
            # SPEC §10.4.1-S3: a complete file is read without its lock when the lock cannot be taken
            return h5py.File(path, "r", locking=False, **kwargs)
        except LIBRARY_ERRORS as exc:
            if not is_lock_failure(exc):
                raise
            failure = exc
    raise FileLockedError(_message(path, failure, forced, action), path=path) from failure


def _message(path: str, exc: BaseException, forced: str | None, action: str) -> str:
    """What to say when a lock failure is reported: who holds the lock, why it was needed, what to do."""
    if locked_by_writer(exc):
        who = (
            "another process holds HDF5's lock on the file (it has the file open for writing, or inherited such a "
            "handle when it forked)"
        )
    elif not isinstance(exc, OSError) or exc.errno is None:
        who = "this process already has the file open with other locking settings"
    else:
        text = " ".join(str(getattr(exc, "strerror", None) or exc).split())
        who = f"HDF5 could not lock the file ({text}): the file system may not support locks"
    if forced == "locking=True":
        return (
            f"{path}: {who}, and locking=True asks for the lock; open it with locking=None (the default) to read a "
            f"complete h5ml file without the lock (SPEC §10.4.1), or wait until the lock is released, then {action}"
        )
    if forced is not None:
        return (
            f"{path}: {who}, and {forced} in the environment makes HDF5 take the lock whatever h5ml asks; unset "
            f"{LOCKING_VARIABLE} (or set {LOCKING_VARIABLE}=FALSE) to read a complete h5ml file without the lock "
            f"(SPEC §10.4.1), or wait until the lock is released, then {action}"
        )
    if locked_by_writer(exc):
        return (
            f"{path}: another process has the file open for writing (HDF5 could not take its read lock); this is "
            "not an h5ml file, so nothing tells whether it is finished, and a file being written may change while "
            f"it is read: wait for its writer to close it, then {action}"
        )
    return f"{path}: {who}; HDF5 refused to open it even without locking: close the other handle, then {action}"


def open_foreign(path: str | os.PathLike[str], action: str, **kwargs: Any) -> h5py.File:
    """Open an HDF5 file that is not (or not known to be) an h5ml file read-only: a source to convert, a tree to show.

    :func:`open_read_only` with ``retry_without_lock=False``: such a file has
    no completion marker, so one that another process holds open for writing
    is refused (SPEC §10.4.1-S3, note).

    Parameters
    ----------
    path
        The file.
    action
        What to do again once the writer has closed the file (``"convert it again"``).
    **kwargs
        More keyword arguments of ``h5py.File`` (the chunk cache).

    Returns
    -------
    h5py.File
        The file, opened read-only.

    Raises
    ------
    FileLockedError
        If another process has the file open for writing.
    OSError, RuntimeError
        Any other failure, as h5py raises it.
    """
    return open_read_only(os.fspath(path), retry_without_lock=False, action=action, **kwargs)
