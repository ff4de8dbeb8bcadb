"""The HDF5 library failing on a file: one contract for the reader, the writer and the validator (§9, §10.3).

h5py reports a failure of the HDF5 library (a corrupt chunk, a checksum
failure, a damaged object header or B-tree) with builtin exceptions that our
own code can raise too. :data:`LIBRARY_ERRORS` is the one tuple to catch,
:func:`is_library_failure` the one test of whether the library raised it (so
that a defect of our code is never reported as a damaged file), and
:func:`damaged_file` the one :class:`~h5ml.errors.InvalidFileError` that says
so, with the file, the HDF5 path and :func:`validate_advice`::

    try:
        ...  # h5py calls
    except LIBRARY_ERRORS as exc:
        if not is_library_failure(exc):
            raise
        raise damaged_file(path, "/train/image", "reading rows [0, 64) of", exc) from exc

The validator reports the same failures as E101 instead of raising. A lock
HDF5 cannot take is no damage: :mod:`h5ml.model.locking` recognises it.
"""

from __future__ import annotations

import functools
import os
import traceback
from typing import Final

from h5ml.errors import H5MLError, InvalidFileError

__all__ = ["LIBRARY_ERRORS", "damaged_file", "is_library_failure", "unfollowed_link", "validate_advice"]


#: What h5py raises when the HDF5 library fails on a file (a corrupt chunk, a checksum failure, a damaged
#: object header or B-tree): HDF5's error stack becomes ``OSError`` or ``RuntimeError``, ``KeyError`` for an
#: object it cannot open, ``SystemError`` for an exception raised inside a library callback (h5py's lock
#: reports it that way), and ``TypeError`` or ``ValueError`` for a stored datatype or dataspace that h5py
#: cannot map to numpy. Catch these, then ask :func:`is_library_failure` whether the library raised them.
LIBRARY_ERRORS: Final = (OSError, RuntimeError, SystemError, KeyError, TypeError, ValueError)


@functools.cache
def _h5py_dir() -> str:
    """The folder of the installed h5py (imported here, not when h5ml is: ``import h5ml`` stays cheap)."""
    import h5py

    return os.path.dirname(os.path.abspath(str(h5py.__file__)))


def is_library_failure(exc: BaseException) -> bool:
    """Whether ``exc`` is the HDF5 library failing on a file, through h5py, rather than a defect of our code.

    ``OSError``, ``RuntimeError`` and ``SystemError`` are (h5py's
    translations of HDF5's error stack, and the file system failing under it),
    except h5ml's own errors of those types (an :class:`~h5ml.errors.H5MLError`
    such as ``UnsupportedFilterError`` already says what is wrong).
    ``KeyError``, ``TypeError`` and ``ValueError`` are only when h5py raised
    them: the innermost frame of their traceback is h5py's (its Python modules
    or its compiled ``h5py/*.pyx`` code). Anything else is not.

    Parameters
    ----------
    exc
        A caught exception (with its traceback).

    Returns
    -------
    bool
        True when a message "the file is damaged" (:func:`damaged_file`) is the right answer.
    """
    if isinstance(exc, H5MLError):
        return False
    if isinstance(exc, (OSError, RuntimeError, SystemError)):
        return True
    if not isinstance(exc, (KeyError, TypeError, ValueError)) or exc.__traceback__ is None:
        return False
    innermost = traceback.extract_tb(exc.__traceback__)[-1].filename
    return innermost.startswith("h5py/") or os.path.abspath(innermost).startswith(_h5py_dir() + os.sep)


def validate_advice(filename: str) -> str:
    """The advice every message about an invalid or damaged file ends with (§9)."""
    return f"run `h5ml validate --deep {filename}` to list every problem of the file"


def unfollowed_link(filename: str, where: str) -> InvalidFileError:
    """The error for a split or feature reached through a link a reader does not follow (SPEC §3.6-R2, E110, E115).

    Parameters
    ----------
    filename
        The file.
    where
        The HDF5 path of the link (``/train`` or ``/train/image``).
    """
    return InvalidFileError(
        f"{filename}: {where}: is a soft, user-defined or external link; every object of a file is "
        f"reached through hard links (§3.6, E110, E115), so the reader does not follow it; "
        f"{validate_advice(filename)}",
        path=filename,
        hdf5_path=where,
    )


def damaged_file(
    filename: str, where: str, doing: str, exc: BaseException, cause: str = "the file is damaged"
) -> InvalidFileError:
    """The error for the HDF5 library failing on a file: what failed, where, and what to do (§9, §10.3).

    Parameters
    ----------
    filename
        The file.
    where
        The HDF5 path of the object (``/train/image``), ``/`` for the file itself.
    doing
        What was being done, as a phrase after "while" (``"opening"``, ``"reading rows [0, 64) of"``).
    exc
        What h5py raised (see :func:`is_library_failure`).
    cause
        What the failure means, when more is known than "the file is damaged".

    Returns
    -------
    InvalidFileError
        With ``path`` and ``hdf5_path`` set; raise it ``from exc``.
    """
    return InvalidFileError(
        f"{filename}: {where}: the HDF5 library failed while {doing} ({type(exc).__name__}: {exc}); {cause}; "
        f"{validate_advice(filename)}",
        path=filename,
        hdf5_path=where,
    )
