"""Verified reads: each chunk's stored bytes are compared with its CRC32C before its rows are returned (SPEC §8.4).

With ``h5ml.open(path, verify=True)`` every :class:`~h5ml.reader.column.Column`
holds a :class:`ChunkVerifier`. Before a read of rows returns (through h5py,
through the memory map of :mod:`h5ml.reader.direct`, and therefore on the
batch, prefetch and parallel paths, which all read through columns), the
verifier hashes the stored bytes of every chunk (or 1 MiB block of contiguous
storage) that holds those rows and compares them with the dataset's checksum
dataset ``_crc32c.<name>`` (:mod:`h5ml.model.checksums`). The bytes hashed are
those the file holds, read through the memory map when the file has one
(no copy) or with ``os.pread`` on HDF5's own descriptor of the file (the same
inode HDF5 reads), never decoded: a damaged gzip chunk is found before zlib
sees it, and a damaged uncompressed chunk, which HDF5 returns without any
error, is found at all.

Verified once per open handle: a chunk whose bytes matched is marked and not
hashed again by this column, so a sequential epoch hashes each chunk once,
however many batches it holds. This is sound because the bytes do not change
while the file is open: h5ml files are replaced, never rewritten in place
(the writer renames a new file over the old one, and an open handle keeps
reading the old inode), and §10.3 already forbids truncating or rewriting a
file while it is read. A reopened handle (``h5ml.open`` again, a forked or
unpickled reader, every DataLoader worker) starts with no chunk marked.
What is not covered: the text of variable-length strings, which lies in the
global heap outside the chunks (their chunks hold heap references, which are
covered); compact datasets, which have no chunks (a verified read refuses
them: :class:`~h5ml.errors.ChecksumsMissingError`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import h5py
import numpy as np
import numpy.typing as npt

from h5ml.errors import ChecksumError, ChecksumsMissingError, InvalidFileError
from h5ml.model.checksums import (
    StoredLayout,
    checksum_name,
    checksum_of,
    checksum_problem,
    entry_rows,
    fd_reader,
    stored_layout,
)
from h5ml.model.failures import validate_advice
from h5ml.reader.file_map import FileMap

__all__ = ["ChunkVerifier"]


class ChunkVerifier:
    """Checks the chunks of one feature dataset against its checksum dataset as rows are read (SPEC §8.4-R4).

    Built with the column, it loads the checksum dataset and the chunk index
    on the first check; every check after that is a lookup, and a hash of
    each chunk not verified yet.

    Parameters
    ----------
    node
        The h5py dataset whose rows are read.
    filename
        The file path, for messages.
    maps
        Returns the file's memory map (or None): the bytes are hashed there
        without a copy; otherwise they are read with ``os.pread``.
    """

    __slots__ = ("_expected", "_layout", "_maps", "_prefix", "_read", "_verified", "filename", "node", "path")

    def __init__(self, node: h5py.Dataset, filename: str, maps: Callable[[], FileMap | None] | None = None) -> None:
        self.node = node
        self.path = str(node.name)
        self.filename = filename
        self._maps = maps
        self._layout: StoredLayout | None = None
        self._expected: npt.NDArray[np.uint32] | None = None
        self._verified: npt.NDArray[np.bool_] | None = None
        self._read: Callable[[int, int], Any] | None = None
        #: Entries ``[0, _prefix)`` are all verified: a sequential read past them checks nothing else.
        self._prefix = 0

    def _missing(self, why: str) -> ChecksumsMissingError:
        return ChecksumsMissingError(
            f"{self.filename}: {self.path} {why}, so a verified read (verify=True) cannot check its chunks "
            "(SPEC §8.4); write the file again with checksums (h5ml.write and h5ml.Writer write them by default: "
            "checksums=True), or open it with verify=False to read it unchecked",
            path=self.filename,
            hdf5_path=self.path,
        )

    def _load(self) -> StoredLayout:
        """The layout and the recorded checksums, read once (raises when there are none, or malformed ones)."""
        node = self.node
        name = checksum_name(self.path.rsplit("/", 1)[-1])
        link = node.parent.get(name, getlink=True)
        if link is not None and not isinstance(link, h5py.HardLink):  # SPEC §3.6-R2: never followed
            raise InvalidFileError(
                f"{self.filename}: the checksum dataset {name} of {self.path} is a {type(link).__name__}, not a hard "
                f"link (SPEC §3.6, E115); it is not followed: {validate_advice(self.filename)}",
                path=self.filename,
                hdf5_path=self.path,
            )
        stored = node.parent.get(name) if link is not None else None
        if stored is None:
            raise self._missing(f"has no checksum dataset ({name} beside it: the file was written without checksums)")
        layout = stored_layout(node)
        if isinstance(layout, str):
            raise self._missing(f"has no chunks to check: {layout}")
        problem = checksum_problem(stored, layout)
        if problem is not None:
            raise InvalidFileError(
                f"{self.filename}: the checksum dataset {stored.name} of {self.path} {problem} (SPEC §8.4, E163); "
                f"the file is damaged or was written wrongly: write it again; {validate_advice(self.filename)}",
                path=self.filename,
                hdf5_path=stored.name,
            )
        self._expected = np.asarray(stored[()], dtype=np.uint32)
        self._verified = np.zeros(layout.count, dtype=np.bool_)
        file_map = self._maps() if self._maps is not None else None
        if file_map is not None and not file_map.closed:
            self._read = _map_reader(file_map)
        else:
            handle = node.file.id.get_vfd_handle()
            if not isinstance(handle, int) or handle < 0:
                raise self._missing(f"is in a file opened through the {node.file.driver!r} driver")
            self._read = fd_reader(handle)
        self._layout = layout
        return layout

    def check_rows(self, start: int, stop: int) -> None:
        """Verify every chunk that holds rows ``[start, stop)`` (each once per handle).

        Raises
        ------
        ChecksumError
            If a chunk's stored bytes do not have its recorded CRC32C (E162):
            names the file, the dataset, the chunk, its rows and both values.
        ChecksumsMissingError
            If the dataset has no checksum dataset (or is compact).
        InvalidFileError
            If its checksum dataset is malformed (E163), or a chunk cannot be
            read (beyond the end of the file).
        """
        layout = self._layout if self._layout is not None else self._load()
        entries = layout.entries_for_rows(start, stop)
        if entries.stop <= self._prefix:
            return
        verified = self._verified
        assert verified is not None
        if len(entries) == 0 or bool(verified[entries.start : entries.stop].all()):
            return
        for k in entries:
            if not verified[k]:
                self._check_entry(layout, k)
                verified[k] = True
        prefix, count = self._prefix, layout.count
        while prefix < count and verified[prefix]:
            prefix += 1
        self._prefix = prefix

    def check_indices(self, rows: npt.NDArray[np.int64]) -> None:
        """Verify every chunk that holds one of ``rows`` (any order, repeats allowed; errors as :meth:`check_rows`).

        Vectorised: once every chunk the rows touch is verified, a check is
        one numpy lookup (a batch of random rows touches a chunk per row).
        """
        if rows.size == 0:
            return
        layout = self._layout if self._layout is not None else self._load()
        if not layout.chunked:
            self.check_rows(int(rows.min()), int(rows.max()) + 1)
            return
        verified = self._verified
        assert verified is not None
        entries = rows // layout.chunk_rows
        if layout.per_row != 1:
            entries = (entries[:, None] * layout.per_row + np.arange(layout.per_row)).ravel()
        todo = entries[~verified[entries]]
        if todo.size == 0:
            return
        for k in np.unique(todo).tolist():
            self._check_entry(layout, int(k))
            verified[k] = True

    def _check_entry(self, layout: StoredLayout, k: int) -> None:
        piece = layout.pieces.get(k)
        lo, hi = entry_rows(layout, k)
        if piece is None:  # check_written refuses such a dataset first (§3.5.1)
            raise InvalidFileError(
                f"{self.filename}: {self.path}: chunk {k} (rows [{lo}, {hi})) was never written (SPEC §3.5.1, E146); "
                f"{validate_advice(self.filename)}",
                path=self.filename,
                hdf5_path=self.path,
            )
        assert self._read is not None and self._expected is not None
        try:
            actual = checksum_of(self._read(*piece))
        except OSError as exc:
            raise InvalidFileError(
                f"{self.filename}: {self.path}: the stored bytes of chunk {k} (rows [{lo}, {hi})) cannot be read "
                f"({exc}); the file is damaged or truncated; {validate_advice(self.filename)}",
                path=self.filename,
                hdf5_path=self.path,
            ) from exc
        expected = int(self._expected[k])
        if actual != expected:
            # SPEC §8.4-R4: a chunk whose stored bytes differ from its checksum is an error, never returned
            what = "chunk" if layout.chunked else "block of 1 MiB of contiguous storage"
            raise ChecksumError(
                f"{self.filename}: {self.path}: {what} {k} (rows [{lo}, {hi})) is damaged: its stored bytes have "
                f"CRC32C 0x{actual:08x}, but its checksum dataset records 0x{expected:08x} (SPEC §8.4, E162; the chunk or that entry "
                f"changed after writing); no value of it was returned: restore the file from a good copy; {validate_advice(self.filename)}",
                path=self.filename,
                hdf5_path=self.path,
                chunk=k,
                expected=expected,
                actual=actual,
            )


def _map_reader(file_map: FileMap) -> Callable[[int, int], Any]:
    """Reads stored bytes with :meth:`FileMap.pread` (never a view of the map: no SIGBUS if the file shrinks, §10.3)."""

    def read(offset: int, size: int) -> Any:
        try:
            data = file_map.pread(offset, size)
        except ValueError as exc:
            raise OSError("the memory map of the file was closed") from exc
        if len(data) != size:
            raise OSError(f"the file is now shorter than byte {offset + size}: it was truncated while open")
        return data

    return read
