"""The data a dataset really stores, compared with a large read before its buffer is allocated (§10.4).

A small file can declare a dataset of any shape. Before a read whose buffer
is larger than :data:`h5ml.reader.column.TRUSTED_READ_BYTES`, a column asks
:func:`check_read_size` whether the dataset stores that much data
(:func:`stored_nbytes`: allocated bytes, or the decoded size of the chunks
ever written), and refuses the read instead of allocating memory for data
the file does not hold. Moved here from :mod:`h5ml.reader.column`.
"""

from __future__ import annotations

import math
import os

import h5py

from h5ml.errors import InvalidFileError
from h5ml.model.failures import validate_advice

__all__ = ["check_read_size", "stored_nbytes"]


def stored_nbytes(node: h5py.Dataset, stored_row_nbytes: int, filename: str) -> int | None:
    """Bytes of data the dataset can deliver: what it stores, not what it declares (§10.4).

    Allocated bytes of an unfiltered dataset (no more than the file's
    size); for a filtered one, the decoded size of the chunks ever
    written. None when the data lives outside the file (external storage
    or a virtual dataset, read only with ``allow_external=True``): nothing
    to compare with. HDF5 walks the chunk index: the caller keeps the result.

    Parameters
    ----------
    node
        The dataset, of shape (N, *inner).
    stored_row_nbytes
        Bytes of one row as stored (16 per variable-length string).
    filename
        The file path (its size bounds an unfiltered dataset's).
    """
    dsid = node.id
    plist = dsid.get_create_plist()
    layout = plist.get_layout()
    if plist.get_external_count() > 0 or layout == h5py.h5d.VIRTUAL:
        return None
    shape = node.shape
    inner = math.prod(int(d) for d in shape[1:])
    declared = int(shape[0]) * stored_row_nbytes
    if layout == h5py.h5d.COMPACT:
        return declared  # in the object header: already in memory
    if layout == h5py.h5d.CHUNKED and plist.get_nfilters() > 0:
        chunk_nbytes = stored_row_nbytes // max(1, inner) * math.prod(node.chunks)
        return int(dsid.get_num_chunks()) * int(chunk_nbytes)
    size = os.path.getsize(filename) if filename else declared
    return min(int(dsid.get_storage_size()), size)


def check_read_size(
    filename: str, hdf5_path: str, shape: tuple[int, ...], need: int, have: int | None, what: str
) -> None:
    """Refuse a read of ``what`` that needs ``need`` bytes of stored data when the dataset stores only ``have``.

    Raises
    ------
    InvalidFileError
        If ``have`` is not None and smaller than ``need``: names the file, the
        dataset, its declared shape and both sizes (§10.4).
    """
    if have is None or need <= have:
        return
    raise InvalidFileError(
        f"{filename}: {hdf5_path}: a read of {what} needs {need} bytes of stored data, but "
        f"this dataset of declared shape {shape} stores only {have} bytes: the file declares data it does not "
        f"hold (it was never written, or the file is truncated), so the read was refused instead of allocating "
        f"memory for it (§10.4); {validate_advice(filename)}",
        path=filename,
        hdf5_path=hdf5_path,
    )
