"""Text documents written atomically: an index (§12.4-R1), a validation report, a Croissant document, a report page.

Every JSON, XML or HTML document h5ml writes beside the data goes through
:func:`atomic_text_file`: the text is written to a hidden temporary file in the
target's folder, flushed and fsynced, moved over the target with
``os.replace``, and the folder is fsynced; on any exception the temporary file
is removed and the target is as it was. The one place for that sequence (the
HDF5 files have theirs in :mod:`h5ml.writer.atomic`).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO

__all__ = ["atomic_text_file"]


@contextlib.contextmanager
def atomic_text_file(path: str | os.PathLike[str]) -> Iterator[TextIO]:
    """Open a text file that appears at ``path``, whole, only when the ``with`` block ends without an exception.

    Parameters
    ----------
    path
        The file to write (its folder must exist). It is replaced if it exists; the callers check first
        whether it may be.

    Yields
    ------
    TextIO
        The temporary file, UTF-8, ``"\\n"`` line ends. Its mode is ``0o666`` less the umask, as a file made
        by ``open`` would have (``mkstemp`` makes ``0o600``).

    Raises
    ------
    OSError
        If the folder does not exist or is not writable, or the disk is full; ``path`` is left as it was and
        no temporary file remains.

    Notes
    -----
    SPEC §12.4-R1 (an index is written last and atomically) is implemented through this function.
    """
    target = Path(path)
    fd, temp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            umask = os.umask(0)
            os.umask(umask)
            os.fchmod(handle.fileno(), 0o666 & ~umask)
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)
        raise
    folder = os.open(target.parent, os.O_RDONLY)
    try:
        os.fsync(folder)
    finally:
        os.close(folder)
