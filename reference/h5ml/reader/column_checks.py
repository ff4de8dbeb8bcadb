"""The checks a :class:`h5ml.reader.column.Column` makes before it reads (§3.5.1, §8.4, §10.4, E145).

:class:`ColumnChecks` is the base of ``Column``: storage never written is
refused before the first read (§3.5.1, §10.4-R1,
:mod:`h5ml.reader.unwritten`); with ``verify=True`` every chunk that holds the
rows is checked against its CRC32C first (§8.4-R4,
:class:`h5ml.reader.chunk_checks.ChunkVerifier`); a buffer larger than
:data:`TRUSTED_READ_BYTES` is allocated only after the rows were compared with
the data the dataset stores (§10.4, :mod:`h5ml.reader.stored_size`); a failure
of the HDF5 library during a read becomes an InvalidFileError naming the
dataset and the rows (E145).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

import h5py
import numpy as np
import numpy.typing as npt

from h5ml.errors import InvalidFileError
from h5ml.model.failures import damaged_file
from h5ml.reader.stored_size import check_read_size, stored_nbytes
from h5ml.reader.unwritten import refuse_shortfall, refuse_unwritten

if TYPE_CHECKING:  # pragma: no cover
    from h5ml.reader.chunk_checks import ChunkVerifier
    from h5ml.reader.compressed import CompressedRows
    from h5ml.reader.direct import DirectRows

__all__ = ["TRUSTED_READ_BYTES", "ColumnChecks"]

#: §10.4: a read whose buffer is larger than this (64 MiB) is first compared with the data its dataset
#: really stores (allocated bytes, or written chunks when filtered); smaller reads are not checked.
TRUSTED_READ_BYTES: Final = 64 << 20


class ColumnChecks:
    """What a column checks before a read (see the module docstring); the attributes are :class:`Column`'s."""

    __slots__ = ("_stored", "_written")

    node: h5py.Dataset
    path: str
    filename: str
    rows: int
    inner: tuple[int, ...]
    dtype: np.dtype[Any]
    stored_row_nbytes: int
    check_row_nbytes: int
    verifier: ChunkVerifier | None
    _stored: int | None
    _written: bool
    _fast: DirectRows | None
    _fast_built: bool
    _decoded: CompressedRows | None
    _decoded_built: bool

    def checked(self, start: int, stop: int) -> None:
        """Before rows ``[start, stop)`` are read: storage written (once, §3.5.1), their chunks' checksums (§8.4).

        Raises
        ------
        InvalidFileError, DeclaredSizeError
            As :meth:`check_written`.
        ChecksumError, ChecksumsMissingError
            With ``verify=True``, for a damaged chunk or a dataset without checksums.
        """
        if not self._written:
            self.check_written()
        if self.verifier is not None:  # SPEC §8.4-R4: before any value of the chunk is returned
            self.verifier.check_rows(start, stop)

    def check_written(self) -> None:
        """Refuse to read a dataset whose storage was never written, once, before its first read (§3.5.1, §10.4-R1).

        The storage size is compared first with the least a complete dataset
        of the declared shape takes, then the chunk index is walked; neither
        reads data (:func:`h5ml.reader.unwritten.refuse_unwritten`). When the
        column's memory-map or decode path already walked the chunk index and
        found every chunk of the extent written once (:meth:`index_complete`),
        that walk is not made again: only the storage size is compared
        (:func:`h5ml.reader.unwritten.refuse_shortfall`).

        Raises
        ------
        DeclaredSizeError
            If the storage is smaller than the least the declared extent needs (§10.4-R1).
        InvalidFileError
            If a chunk within the dataset's extent, or its contiguous block,
            was never allocated (E146): HDF5 would return fill values in their
            place, which this reader never returns as samples.
        """
        if self._written:
            return
        if self.index_complete():
            # SPEC §3.5.1-R1 shown by the walk already made: every chunk within the extent is allocated
            refuse_shortfall(self.node, self.filename, self.path)
        else:
            refuse_unwritten(self.node, self.filename, self.path)
        self._written = True

    def index_complete(self) -> bool:
        """Whether a walk of the chunk index already found every chunk of the extent written (§3.5.1-R1).

        True once the column's memory-map path (:meth:`h5ml.reader.column.Column.fast_rows`) or
        decode path (:meth:`h5ml.reader.column.Column.decoded_rows`) was built: each needs every
        chunk of the row grid written exactly once
        (:func:`h5ml.reader.direct.chunk_index`), or a contiguous block with a
        file offset, so allocated.
        """
        return (self._fast_built and self._fast is not None) or (self._decoded_built and self._decoded is not None)

    def check_stored(self, count: int, start: int | None = None) -> None:
        """Refuse a read of ``count`` rows (from ``start``, when contiguous) that needs more data than stored (§10.4).

        Raises
        ------
        DeclaredSizeError
            Before the first read, if the storage is smaller than the least
            the declared extent needs (§10.4-R1, see :meth:`check_written`).
        InvalidFileError
            If those rows hold more bytes than the dataset stores
            (:func:`h5ml.reader.stored_size.stored_nbytes`, computed once): the
            file declares data it does not hold (never written, or truncated).
        """
        if not self._written:
            refuse_shortfall(self.node, self.filename, self.path)
        what = f"{count} rows" if start is None else f"rows [{start}, {start + count})"
        if self._stored is None:
            self._stored = stored_nbytes(self.node, self.stored_row_nbytes, self.filename)
        need, shape = count * self.stored_row_nbytes, (self.rows, *self.inner)
        check_read_size(self.filename, self.path, shape, need, self._stored, what)

    def buffer(self, count: int, start: int | None = None) -> npt.NDArray[Any]:
        """A new array (count, *inner) of :attr:`dtype`, checked first when large (§10.4; see :meth:`check_stored`)."""
        if count * self.check_row_nbytes > TRUSTED_READ_BYTES:
            self.check_stored(count, start)
        return np.empty((count, *self.inner), dtype=self.dtype)

    def _failed(self, exc: BaseException, start: int, stop: int) -> InvalidFileError:
        """The error for a read the HDF5 library could not do (E145): names the dataset and the rows."""
        rows = f"row {start}" if stop - start == 1 else f"rows [{start}, {stop})"
        cause = "a chunk is corrupt (a checksum or decompression failure) or the file is damaged"
        return damaged_file(self.filename, self.path, f"reading {rows}", exc, cause)
