"""A file written atomically: :class:`AtomicFile`, the temporary file beside the target that replaces it (§3.1, §4.4).

Files are built in a temporary file beside the target and moved over it with
``os.replace`` only once they are complete (§4.4), so the target path always
holds either nothing, the previous complete file, or the new complete file:

1. :func:`resolve_target` finds the regular file to replace: the target
   itself, or where its symbolic link points; anything else (a FIFO, a
   device, a directory, a dangling link) is refused;
2. :meth:`AtomicFile.open` creates the temporary file
   ``.<name>.h5ml-tmp-<pid>-<machine>-<random>`` in the target's directory (stale ones
   of the same target, whose writer is gone, are removed first: :mod:`h5ml.writer.temporaries`) with libver bounds
   ``spec.LIBVER_BOUNDS`` (§3.1), a copy of the target in append mode;
3. :meth:`AtomicFile.close`, once the caller has finished the file: fsync,
   the target resolved again (it must still lead to the same file),
   ``os.replace(temp, target)`` and fsync of the directory;
4. :func:`discard` instead (an error, an abort, or the writer garbage
   collected unclosed) stops the writer's threads, closes the temporary
   file and deletes it (the target is untouched).

The target is never opened for writing, so readers that have it open never
meet a lock (they keep reading the file they opened).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import weakref
from collections.abc import Callable, Iterator
from pathlib import Path
from types import TracebackType
from typing import Any, Final, Self

import h5py

from h5ml import spec
from h5ml.errors import WriterError
from h5ml.model.hdf5 import unopenable_file
from h5ml.spec.chunks import SPLIT_SAMPLE_BYTES
from h5ml.writer.temporaries import remove_stale, temporary_name

__all__ = ["AtomicFile", "ClosedOnExit", "discard", "file_kind", "fsync_path", "resolve_target"]

#: The chunk cache of the file being written holds the largest chunk the
#: writer creates (§7.1), so partly filled chunks are not re-read.
_WRITE_CACHE_BYTES: Final = SPLIT_SAMPLE_BYTES

_KINDS: Final = (
    (stat.S_ISDIR, "directory"),
    (stat.S_ISFIFO, "FIFO (named pipe)"),
    (stat.S_ISCHR, "character device"),
    (stat.S_ISBLK, "block device"),
    (stat.S_ISSOCK, "socket"),
    (stat.S_ISLNK, "symbolic link"),
)


def file_kind(mode: int) -> str:
    """What a non-regular file is, in words (``st_mode`` of ``os.lstat``), e.g. ``"FIFO (named pipe)"``."""
    return next((name for test, name in _KINDS if test(mode)), "special file")


def fsync_path(path: Path) -> None:
    """Flush a file or a directory (its entries) to the disk with ``os.fsync``."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def resolve_target(path: Path) -> Path:
    """The regular file the writer replaces for ``path``: ``path`` itself, or where its symbolic link points.

    Parameters
    ----------
    path
        The target as given.

    Returns
    -------
    pathlib.Path
        ``path`` when it does not exist or is a regular file; for a symbolic
        link to a regular file, the link's resolved path
        (``os.path.realpath``), so the link is kept and the file it points to
        is replaced.

    Raises
    ------
    WriterError
        If ``path`` exists and is not a regular file (a directory, a FIFO, a
        device, a socket), or is a symbolic link that dangles (or loops) or
        points to something that is not a regular file.
    """
    where = str(path)
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return path
    except OSError as exc:
        raise WriterError(f"{where}: cannot inspect the target ({exc.strerror})", path=where) from None
    if stat.S_ISREG(mode):
        return path
    if not stat.S_ISLNK(mode):
        kind = file_kind(mode)
        raise WriterError(
            f"{where} is a {kind}, not a regular file; the writer replaces its target with a new file and refuses "
            f"to replace a {kind}: give the path of a regular file or of a file that does not exist yet",
            path=where,
        )
    real = Path(os.path.realpath(path))
    try:
        mode = os.stat(real).st_mode
    except OSError as exc:
        raise WriterError(
            f"{where} is a symbolic link to {str(real)!r}, which cannot be reached ({exc.strerror}); the writer "
            "writes through a link only to an existing regular file: remove the link or give another path",
            path=where,
        ) from None
    if not stat.S_ISREG(mode):
        raise WriterError(
            f"{where} is a symbolic link to {str(real)!r}, a {file_kind(mode)}, not a regular file; the writer "
            "refuses to replace it: give the path of a regular file",
            path=where,
        )
    return real


def discard(h5file: h5py.File, temp: Path, stop: Callable[[], None], owner_pid: int | None = None) -> None:
    """Stop the writer's threads, close and delete an unfinished temporary file (also the writer's finalizer).

    Parameters
    ----------
    h5file
        The temporary file, open or closed.
    temp
        Its path.
    stop
        Stops the threads that write to ``h5file`` without storing what they hold.
    owner_pid
        The process that created the writer. In any other process (a child
        forked while the writer was open, whose exit runs the finalizers it
        inherited) nothing is done: the file belongs to the parent, which is
        still writing it, and closing it here would write HDF5 metadata into
        it. None: the current process.

    Notes
    -----
    Errors while cleaning up are dropped: the file is being discarded because
    something else failed (a full disk makes closing it fail too), and that
    first error is the one the caller must see.
    """
    if owner_pid is not None and os.getpid() != owner_pid:
        return
    try:
        with contextlib.suppress(Exception):
            stop()
        with contextlib.suppress(Exception):
            if h5file.id.valid:
                h5file.close()
    finally:
        temp.unlink(missing_ok=True)


class AtomicFile:
    """A file that appears at its target whole or not at all: the temporary file's life cycle (§4.4).

    The temporary file is created by :meth:`open`, then either moved over
    the target by :meth:`close` once the caller has finished it, or deleted
    (:meth:`close` with ``abort``, :meth:`fail`, or the garbage collection of
    the owner given to :meth:`open`). After a failure every
    :meth:`check_open` raises.

    Parameters
    ----------
    path
        The target as given: a regular file, a file that does not exist yet,
        or a symbolic link to a regular file (see :func:`resolve_target`).

    Attributes
    ----------
    path
        The target as given.
    target_path
        The file that is replaced: ``path``, or where its symbolic link points.
    temp_path
        The temporary file, ``.<name>.h5ml-tmp-<pid>-<machine>-<random>`` beside ``target_path``
        (:func:`h5ml.writer.temporaries.temporary_name`).
    closed
        The file was moved over the target or discarded.

    Raises
    ------
    WriterError
        If the target's directory does not exist, or the target is not a
        regular file (see :func:`resolve_target`).
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        where = str(path)
        parent = path.parent
        if not parent.is_dir():
            raise WriterError(f"{where}: the directory {str(parent)!r} does not exist; create it first", path=where)
        self.target_path = resolve_target(path)
        self.temp_path = temporary_name(self.target_path)
        self.closed = False
        #: The process that created the file: only it writes, finishes or discards it (see :func:`discard`).
        self._owner_pid = os.getpid()
        #: What made storing samples fail: the file is discarded and every later call raises.
        self._failure: BaseException | None = None
        self._finalizer: weakref.finalize[Any, Any] | None = None

    def open(self, owner: object, append: bool, stop: Callable[[], None], page_size: int | None = None) -> h5py.File:
        """Create the temporary file and open it for writing with h5py (§3.1).

        Parameters
        ----------
        owner
            The object whose garbage collection discards the file if it is
            not closed by then (the writer).
        append
            Start from a copy of the target (which must exist) instead of an
            empty file.
        stop
            Stops the threads that write to the file, without storing what
            they hold (see :func:`discard`).
        page_size
            A new file's HDF5 paged file-space aggregation (``fs_strategy="page"``) with pages of this many
            bytes, or None for HDF5's default strategy (``page_size=`` of :class:`h5ml.Writer`).

        Returns
        -------
        h5py.File
            The temporary file, open ``"r+"`` (append) or ``"w-"``, with
            libver bounds ``spec.LIBVER_BOUNDS`` and a chunk cache that holds
            the largest chunk the writer creates.

        Raises
        ------
        NotH5MLError
            (append) If HDF5 cannot open the copy: the target is not an HDF5
            file, or it is damaged (the reader's error for the same file).
        OSError
            If the file cannot be created or copied (a missing or unreadable
            target, a full disk). No temporary file remains on any error.
        """
        # issue 14: the temporaries of this target that a killed writer left are removed, never a live one's
        remove_stale(self.target_path.parent, self.target_path.name)
        try:
            if append:
                shutil.copyfile(self.target_path, self.temp_path)
            mode = "r+" if append else "w-"
            # SPEC §3.1-R3: libver bounds (earliest, v110) keep every object format readable by HDF5 1.10
            paged = {} if append or page_size is None else {"fs_strategy": "page", "fs_page_size": page_size}
            h5file = h5py.File(self.temp_path, mode, libver=spec.LIBVER_BOUNDS, rdcc_nbytes=_WRITE_CACHE_BYTES, **paged)
        except OSError as exc:
            self.temp_path.unlink(missing_ok=True)
            if not append or isinstance(exc, (FileNotFoundError, PermissionError, IsADirectoryError)):
                raise
            raise unopenable_file(str(self.path), exc) from exc  # as the reader says it (h5ml.model.hdf5)
        except BaseException:
            self.temp_path.unlink(missing_ok=True)
            raise
        self._finalizer = weakref.finalize(owner, discard, h5file, self.temp_path, stop, os.getpid())
        return h5file

    def check_open(self) -> None:
        """Raise unless the file can still be written.

        Raises
        ------
        WriterError
            If storing samples failed earlier (the file was discarded), the
            file is closed, or this process is not the one that created the
            writer (a forked child).
        """
        if self._failure is not None:
            raise self._failed_error()
        if self.closed:
            raise WriterError(f"{self.path}: the writer is closed", path=str(self.path))
        if os.getpid() != self._owner_pid:
            raise self._other_process_error()

    def _other_process_error(self) -> WriterError:
        return WriterError(
            f"{self.path}: this writer was created by process {self._owner_pid} and this is process {os.getpid()} "
            "(a child forked while the writer was open); only the process that created a writer can write, finish "
            "or discard its file; create a writer in this process instead",
            path=str(self.path),
        )

    def _failed_error(self) -> WriterError:
        failure = self._failure
        return WriterError(
            f"{self.path}: writing samples failed earlier ({type(failure).__name__}: {failure}); the file cannot be "
            "finished, so the writer discarded it and the target is unchanged. Write the file again",
            path=str(self.path),
        )

    def fail(self, exc: BaseException) -> None:
        """Samples could not be stored (a full disk, a failed chunk, ...): discard the file; every later call fails."""
        self._failure = exc
        self.closed = True
        self._discard()

    @contextlib.contextmanager
    def storing(self) -> Iterator[None]:
        """Store samples in the block: if it raises, they are half stored, so the file is discarded (:meth:`fail`)."""
        try:
            yield
        except BaseException as exc:
            self.fail(exc)
            raise

    def _discard(self) -> None:
        if self._finalizer is not None:
            self._finalizer()

    def close(self, finish: Callable[[], None], abort: bool = False) -> None:
        """Finish the file and move it over the target, or discard it (§4.4).

        Parameters
        ----------
        finish
            Writes what the file still lacks and closes it (``complete``
            last); not called with ``abort``.
        abort
            Delete the temporary file instead; the target stays as it was.

        Raises
        ------
        BaseException
            Whatever ``finish`` or :meth:`replace` raises: the temporary file
            is then deleted and the target is untouched. Closing twice does
            nothing.
        WriterError
            If storing samples failed earlier (see :meth:`fail`), unless
            ``abort``; or, unless ``abort`` (which then does nothing), if this
            process is not the one that created the writer (a forked child).
        """
        if self._failure is not None and not abort:
            raise self._failed_error()
        if self.closed:
            return
        if os.getpid() != self._owner_pid:  # a forked child: the file is the parent's, which is still writing it
            if abort:
                return
            raise self._other_process_error()
        self.closed = True
        if abort:
            self._discard()
            return
        try:
            finish()
            self.replace()
        except BaseException:
            self._discard()
            raise
        if self._finalizer is not None:
            self._finalizer.detach()

    def replace(self) -> None:
        """Move the finished, closed temporary file over the target, durably (§4.4).

        The temporary file is fsynced, the target resolved again, the file
        moved with ``os.replace`` and (POSIX) the directory fsynced.

        Raises
        ------
        WriterError
            If the target became something that is not a regular file, or
            now leads to another file than when the writer started.
        OSError
            If syncing or moving fails.
        """
        fsync_path(self.temp_path)
        now = resolve_target(self.path)  # raises if it became a FIFO, a device, ...
        if now != self.target_path:
            raise WriterError(
                f"{self.path}: the target changed while the file was written (it now leads to "
                f"{str(now)!r}, not {str(self.target_path)!r}); the file was not written",
                path=str(self.path),
            )
        os.replace(self.temp_path, self.target_path)
        if os.name == "posix":
            fsync_path(self.target_path.parent)


class ClosedOnExit:
    """A writer as a context manager: leaving the ``with`` block closes it, or aborts it on an exception (§4.4).

    The subclass defines ``close(abort=False)``: an abort discards the temporary file, the target untouched.
    """

    def close(self, abort: bool = False) -> None:  # pragma: no cover - every subclass defines it
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close(abort=exc_type is not None)
