"""The reader's refusals of data a file declares but does not hold: never written (§3.5.1-S1) or less storage than the declared extent needs (§10.4-R1).

HDF5 returns fill values for data that was never written, and a small file can
declare a dataset of any shape. Before the first read of a dataset the reader
asks :func:`refuse_unwritten`, which compares the storage size with the least
a complete dataset of the declared shape takes and then walks the chunk index
(:func:`h5ml.model.allocation.storage_verdict`); a large read asks
:func:`refuse_shortfall` (the storage size only) before it allocates its
buffer. Neither reads data; each error names the file, the dataset and what
to do.
"""

from __future__ import annotations

import os

import h5py

from h5ml.errors import DeclaredSizeError, InvalidFileError
from h5ml.model.allocation import NeverWritten, Shortfall, storage_shortfall, storage_verdict
from h5ml.model.failures import validate_advice

__all__ = ["refuse_shortfall", "refuse_unwritten"]


def _file_size(filename: str) -> int | None:
    try:
        return os.path.getsize(filename) if filename else None
    except OSError:
        return None


def _declared_error(filename: str, hdf5_path: str, short: Shortfall, missing: NeverWritten | None) -> DeclaredSizeError:
    """The error of §10.4-R1: the file, the dataset, what is missing, the declared and the stored bytes."""
    what = short.what if missing is None else missing.what
    # SPEC §10.4-R1: storage below the least a complete dataset takes is refused before any read or buffer
    return DeclaredSizeError(
        f"{filename}: {what}; it stores only {short.stored} bytes of the {short.declared} bytes it declares "
        f"(a complete dataset of that shape "
        f"takes at least {short.least}): the file declares data it does not hold, so this reader refuses to read "
        "it instead of returning fill values or allocating memory for it (SPEC §10.4-R1, §3.5.1, E146); the file "
        f"was not written completely, write it again; {validate_advice(filename)}",
        path=filename,
        hdf5_path=hdf5_path,
    )


def refuse_unwritten(node: h5py.Dataset, filename: str, hdf5_path: str) -> None:
    """Refuse a dataset whose storage is short of its declared extent or was never all written (§10.4-R1, §3.5.1).

    Parameters
    ----------
    node
        The dataset about to be read for the first time.
    filename, hdf5_path
        The file and the dataset's HDF5 path, named in the error.

    Raises
    ------
    DeclaredSizeError
        If the storage is smaller than the least the declared extent needs
        (§10.4-R1): the message names the file, the dataset, its declared
        shape, the declared and the stored bytes.
    InvalidFileError
        If a chunk within the dataset's extent, or its contiguous block, was
        never allocated (E146): HDF5 would return fill values in their place,
        which this reader never returns as samples.
    """
    short, missing = storage_verdict(node, _file_size(filename))
    if short is not None:
        raise _declared_error(filename, hdf5_path, short, missing)
    if missing is not None:
        # SPEC §3.5.1-S1: refuse never-written data rather than return fill values as samples
        raise InvalidFileError(
            f"{filename}: {missing.what}; HDF5 would return fill values in their place, so this reader refuses "
            "to read them as samples (SPEC §3.5.1, E146): the file was not written completely, write it again; "
            f"{validate_advice(filename)}",
            path=filename,
            hdf5_path=hdf5_path,
        )


def refuse_shortfall(node: h5py.Dataset, filename: str, hdf5_path: str) -> None:
    """Refuse a dataset whose storage size alone proves data missing (§10.4-R1); no chunk index walk.

    Raises
    ------
    DeclaredSizeError
        As :func:`refuse_unwritten`.
    """
    short = storage_shortfall(node, _file_size(filename))
    if short is not None:
        raise _declared_error(filename, hdf5_path, short, None)
