"""The path of a file to read: one check, before HDF5 sees it, that it is a regular file (§3.1).

A directory, a missing path or a special file (a FIFO, a device) given where
an h5ml file is read is refused here with a message that says what the path
is and what to give, by every program that reads a file the user named: the
reader (:func:`h5ml.reader.handle.open_h5file`), the editors and exporters of
:mod:`h5ml.ingest`, and ``h5ml inspect`` and ``dump``. The validator reports
the same cases as E100 issues instead (:mod:`h5ml.validator.checks.file`).
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

__all__ = ["require_regular_file"]


def require_regular_file(path: str | os.PathLike[str], what: str = "an h5ml file") -> Path:
    """Return ``path`` as a :class:`~pathlib.Path` after refusing one that is not a regular file (§3.1).

    Parameters
    ----------
    path
        The file the user named.
    what
        What the path should be, for the message (``"an h5ml file"``).

    Returns
    -------
    pathlib.Path
        ``path``.

    Raises
    ------
    FileNotFoundError
        If nothing is at ``path`` (``errno`` ENOENT, ``filename`` the path).
    IsADirectoryError
        If ``path`` is a directory (``errno`` EISDIR): the message says so and what to give.
    OSError
        If ``path`` is not a regular file (a FIFO or a device would block or stream forever).
    """
    where = Path(path)
    if not os.path.lexists(where):
        raise FileNotFoundError(errno.ENOENT, f"{where}: no such file")
    if not os.path.exists(where):
        raise FileNotFoundError(errno.ENOENT, f"{where} is a symbolic link to nothing; give the path of {what}")
    if where.is_dir():
        raise IsADirectoryError(
            errno.EISDIR, f"{where} is a directory, not a file; give the path of {what} (a file inside it)"
        )
    if not where.is_file():
        raise OSError(f"{where} is not a regular file (a pipe or a device?); give the path of {what}")
    return where
