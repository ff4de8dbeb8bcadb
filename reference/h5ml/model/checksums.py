"""Per-chunk checksums: the CRC32C of each chunk's stored bytes, kept beside each feature dataset (SPEC §8.4).

A feature dataset (a dense or string dataset, or a component of a ragged,
categorical or bytes feature, §7) at ``<parent>/<name>`` may have a checksum
dataset ``<parent>/_crc32c.<name>``: a one-dimensional uint32 dataset with one
entry per chunk of the dataset's chunk grid (row-major, the first axis
outermost), each the CRC32C (Castagnoli) of the chunk's bytes exactly as they
are stored in the file, after the filter pipeline; for a contiguous dataset one
entry per block of :data:`BLOCK_BYTES` of its storage. Checking a chunk needs
no decoding: its stored bytes are hashed as they lie in the file.

This module holds what the writer, the reader, the validator and ``h5ml
verify`` share:

- :func:`checksum_name`, :func:`protected_name`: the name of a checksum
  dataset and the name of the dataset it protects;
- :class:`StoredLayout` (:func:`stored_layout`): where each entry's bytes lie
  in the file and which entries cover a run of rows;
- :func:`compute_checksums`: every entry of a dataset, from its stored bytes;
- :func:`checksum_problem`: what is wrong with a checksum dataset's form
  (E163), for the validator's shallow checks and for verified reads;
- :func:`verify_checksums`: every checksum of an open file, compared with its
  stored bytes (E162), for deep validation and ``h5ml verify``.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Final

import h5py
import numpy as np
import numpy.typing as npt

from h5ml import spec
from h5ml.model.allocation import unallocated_storage
from h5ml.model.remote import remote_of

__all__ = [
    "BLOCK_BYTES",
    "CHECKSUM_PREFIX",
    "ChecksumMismatch",
    "StoredLayout",
    "checksum_dataset",
    "checksum_name",
    "checksum_of",
    "checksum_problem",
    "compute_checksums",
    "entry_rows",
    "fd_reader",
    "feature_datasets",
    "protected_name",
    "stored_layout",
    "verify_checksums",
]

#: The name of a checksum dataset is this prefix and the name of the dataset it protects (SPEC §8.4).
CHECKSUM_PREFIX: Final = "_crc32c."
#: A contiguous dataset has one entry per block of this many bytes of its storage (the last one shorter).
BLOCK_BYTES: Final = 1 << 20

#: Reads ``size`` bytes of the file at ``offset``: a buffer (bytes, or a view of a memory map).
ByteReader = Callable[[int, int], Any]


def checksum_of(data: Any) -> int:
    """The CRC32C (Castagnoli, the iSCSI polynomial 0x1EDC6F41, reflected) of a bytes-like object, as an int."""
    import crc32c  # imported on first use: about 50 ms, which every ``import h5ml`` and command would pay

    return int(crc32c.crc32c(data))


def checksum_name(name: str) -> str:
    """The name of the checksum dataset of the dataset called ``name`` (in the same group, SPEC §8.4-R1)."""
    return CHECKSUM_PREFIX + name


def protected_name(member: str) -> str | None:
    """The name of the dataset that the checksum dataset ``member`` protects, or None if ``member`` is none."""
    if member.startswith(CHECKSUM_PREFIX) and len(member) > len(CHECKSUM_PREFIX):
        return member[len(CHECKSUM_PREFIX) :]
    return None


def fd_reader(fd: int) -> ByteReader:
    """A :data:`ByteReader` over an open file descriptor (``os.pread``: no shared file position)."""

    def read(offset: int, size: int) -> bytes:
        # SPEC §10.4: a chunk index may declare any size; nothing is allocated for bytes the file does not hold
        end = os.fstat(fd).st_size
        if offset < 0 or size < 0 or offset + size > end:
            raise OSError(f"a stored chunk declares bytes {offset}..{offset + size}, beyond the file's end at {end}")
        parts = []
        while size > 0:
            part = os.pread(fd, size, offset)
            if not part:
                raise OSError(f"the file ends before byte {offset + size} (a stored chunk lies beyond its end)")
            parts.append(part)
            offset += len(part)
            size -= len(part)
        return b"".join(parts)

    return read


@dataclass(frozen=True)
class StoredLayout:
    """Where each checksum entry's stored bytes lie in the file (SPEC §8.4).

    Attributes
    ----------
    path
        The dataset's HDF5 path.
    chunked
        True for a chunked dataset (one entry per chunk), False for a
        contiguous one (one entry per :data:`BLOCK_BYTES` of storage).
    pieces
        ``{entry: (file offset, stored size)}`` of the entries whose bytes are
        stored; an entry missing here is a chunk never written (its entry is
        0 and is not compared: E146). A dict, so that its memory follows the
        chunk index (bounded by the file), not the declared shape (§10.4).
    count
        The number of entries the checksum dataset holds: chunks of the grid,
        or blocks of contiguous storage.
    rows
        The dataset's number of rows (first axis).
    chunk_rows
        Rows per chunk along the first axis (chunked), else 0.
    per_row
        Entries per chunk row: the number of chunks along the other axes (chunked).
    row_nbytes
        Stored bytes of one row (contiguous: locates the blocks of a run of rows).
    """

    path: str
    chunked: bool
    pieces: dict[int, tuple[int, int]]
    count: int
    rows: int
    chunk_rows: int
    per_row: int
    row_nbytes: int

    def entries_for_rows(self, start: int, stop: int) -> range:
        """The entries whose bytes hold rows ``[start, stop)`` (empty for no rows)."""
        if stop <= start or not self.count:
            return range(0)
        if self.chunked:
            return range(start // self.chunk_rows * self.per_row, ((stop - 1) // self.chunk_rows + 1) * self.per_row)
        first = start * self.row_nbytes // BLOCK_BYTES
        last = -(-stop * self.row_nbytes // BLOCK_BYTES)
        return range(first, min(last, self.count))


def stored_layout(dset: h5py.Dataset) -> StoredLayout | str:
    """The :class:`StoredLayout` of ``dset``, or a sentence saying why it has no checksums (SPEC §8.4).

    Compact datasets (data in the object header), external storage and
    virtual datasets have no stored chunks to hash: for them the sentence.
    The chunk index is walked once (``H5Dchunk_iter``, or one
    ``H5Dget_chunk_info`` per chunk on builds without it); chunks outside the
    current extent are left out, as §3.5.1 counts them.
    """
    dsid = dset.id
    plist = dsid.get_create_plist()
    layout = plist.get_layout()
    shape = tuple(int(d) for d in (dset.shape or ()))
    rows = shape[0] if shape else 1
    inner = shape[1:]
    elem = int(dsid.get_type().get_size())
    row_nbytes = elem * math.prod(inner)
    if plist.get_external_count() > 0 or layout == h5py.h5d.VIRTUAL:
        return "its data lies outside the file (external storage or a virtual dataset)"
    if layout == h5py.h5d.CONTIGUOUS:
        size = int(dsid.get_storage_size())
        offset = dsid.get_offset()
        total = rows * row_nbytes
        count = -(-total // BLOCK_BYTES)
        pieces: dict[int, tuple[int, int]] = {}
        if offset is not None and size >= total:
            for k in range(count):
                pieces[k] = (int(offset) + k * BLOCK_BYTES, min(BLOCK_BYTES, total - k * BLOCK_BYTES))
        return StoredLayout(dset.name, False, pieces, count, rows, 0, 0, row_nbytes)
    if layout != h5py.h5d.CHUNKED or dset.chunks is None:
        return "it is stored compact (its data is in its object header), which has no chunks to check"
    chunks = tuple(int(c) for c in dset.chunks)
    grid = tuple(-(-s // c) for s, c in zip(shape, chunks, strict=True))
    count = math.prod(grid)
    strides = [math.prod(grid[i + 1 :]) for i in range(len(grid))]
    found: dict[int, tuple[int, int]] = {}
    if count:

        def place(info: Any) -> None:
            offs = tuple(int(o) for o in info.chunk_offset)
            if info.byte_offset is None or any(o >= s for o, s in zip(offs, shape, strict=True)):
                return  # SPEC §3.5.1-R2: a chunk outside the current extent does not count
            index = sum(o // c * st for o, c, st in zip(offs, chunks, strides, strict=True))
            found[index] = (int(info.byte_offset), int(info.size))

        if hasattr(dsid, "chunk_iter"):
            dsid.chunk_iter(place)
        else:  # pragma: no cover - HDF5 builds without H5Dchunk_iter
            for i in range(int(dsid.get_num_chunks())):
                place(dsid.get_chunk_info(i))
    per_row = math.prod(grid[1:]) if len(grid) > 1 else 1
    return StoredLayout(dset.name, True, found, count, rows, chunks[0] if chunks else 1, per_row, row_nbytes)


def compute_checksums(layout: StoredLayout, read: ByteReader, entries: range | None = None) -> npt.NDArray[np.uint32]:
    """The checksum entries of ``layout`` (all, or ``entries``), from the stored bytes ``read`` returns (SPEC §8.4).

    A chunk never written gets 0 (SPEC §8.4-R1). The memory used is one
    chunk (or block) at a time.
    """
    span = range(layout.count) if entries is None else entries
    out = np.zeros(len(span), dtype=np.uint32)
    for k, piece in layout.pieces.items():
        if k in span:
            out[k - span.start] = checksum_of(read(*piece))
    return out


def checksum_problem(checksums: Any, layout: StoredLayout | str) -> str | None:
    """What is wrong with the form of a checksum dataset, in words, or None (SPEC §8.4-R1, E163).

    Parameters
    ----------
    checksums
        The object at ``<parent>/_crc32c.<name>``.
    layout
        The protected dataset's :func:`stored_layout`, or why it has none.
    """
    if not isinstance(checksums, h5py.Dataset):
        return "is not a dataset"
    if isinstance(layout, str):
        return f"protects a dataset that can have no checksums: {layout}"
    dtype = checksums.dtype
    if dtype.kind != "u" or dtype.itemsize != 4:
        return f"has dtype {dtype}, not uint32"
    if checksums.ndim != 1:
        return f"has shape {checksums.shape}, not one-dimensional"
    if checksums.shape[0] != layout.count:
        what = "chunks in its dataset's chunk grid" if layout.chunked else f"blocks of {BLOCK_BYTES} bytes"
        return f"has {checksums.shape[0]} entries, but there are {layout.count} {what}"
    if unallocated_storage(checksums) is not None:
        return "was never written (its storage is not allocated)"
    return None


@dataclass(frozen=True)
class ChecksumMismatch:
    """One entry whose stored bytes do not have the recorded checksum (SPEC §8.4-R2, E162).

    Attributes
    ----------
    path
        The HDF5 path of the protected dataset.
    entry
        The entry (chunk index in row-major order over the chunk grid, or block).
    expected, actual
        The recorded and the computed CRC32C.
    rows
        The rows of the dataset that the entry's bytes hold, ``(start, stop)``.
    """

    path: str
    entry: int
    expected: int
    actual: int
    rows: tuple[int, int]


def entry_rows(layout: StoredLayout, entry: int) -> tuple[int, int]:
    """The rows ``(start, stop)`` that entry ``entry``'s bytes hold (part of a row for partial chunks)."""
    if layout.chunked:
        start = entry // max(1, layout.per_row) * layout.chunk_rows
        return start, min(layout.rows, start + layout.chunk_rows)
    lo = entry * BLOCK_BYTES // max(1, layout.row_nbytes)
    hi = -(-(entry + 1) * BLOCK_BYTES // max(1, layout.row_nbytes))
    return lo, min(layout.rows, hi)


def feature_datasets(h5file: h5py.File) -> Iterator[h5py.Dataset]:
    """Every feature dataset of every split: a dataset feature, or the datasets of a group feature (§5, §7).

    Reserved names (§5.4) and other objects are left out; links are not
    followed beyond what ``h5py`` lists (the validator refuses soft and external links first).
    """
    for split_name in sorted(h5file):
        split = h5file.get(split_name, getlink=True)
        if split_name.startswith(spec.RESERVED_PREFIX) or not isinstance(split, h5py.HardLink):
            continue
        group = h5file[split_name]
        if not isinstance(group, h5py.Group):
            continue
        for name in sorted(group):
            if name.startswith(spec.RESERVED_PREFIX) or not isinstance(group.get(name, getlink=True), h5py.HardLink):
                continue
            obj = group[name]
            if isinstance(obj, h5py.Dataset):
                yield obj
            elif isinstance(obj, h5py.Group):
                for member in sorted(obj):
                    link = obj.get(member, getlink=True)
                    if not member.startswith(spec.RESERVED_PREFIX) and isinstance(link, h5py.HardLink):
                        node = obj[member]
                        if isinstance(node, h5py.Dataset):
                            yield node


def checksum_dataset(dset: h5py.Dataset) -> Any:
    """The object at the checksum path of ``dset`` (``<parent>/_crc32c.<name>``), or None when there is none.

    A dataset whose path is not UTF-8 (h5py gives it as bytes; its name breaks §5.1.1, E120) has none.
    """
    if not isinstance(dset.name, str):
        return None
    name = dset.name.rsplit("/", 1)[-1]
    return dset.parent.get(checksum_name(name))


def verify_checksums(
    h5file: h5py.File, read: ByteReader | None = None, datasets: list[h5py.Dataset] | None = None
) -> tuple[list[ChecksumMismatch], list[str], list[tuple[str, str]]]:
    """Compare every recorded chunk checksum of a file with its stored bytes (SPEC §8.4-R2, E162).

    Parameters
    ----------
    h5file
        The open file (read-only, ``sec2`` driver or a file at a URL, :mod:`h5ml.model.remote`, unless ``read``
        is given).
    read
        Reads stored bytes (:data:`ByteReader`); default: ``os.pread`` on HDF5's own descriptor of the file.
    datasets
        The datasets to check; default: every feature dataset (:func:`feature_datasets`).

    Returns
    -------
    mismatches : list of ChecksumMismatch
        Every entry whose bytes differ, in dataset then entry order.
    unprotected : list of str
        The HDF5 paths of the datasets checked that have no checksum dataset.
    malformed : list of (str, str)
        ``(path of the checksum dataset, what is wrong)`` for each one whose
        form is wrong (E163): its entries are not compared.

    Raises
    ------
    OSError
        If the stored bytes cannot be read (a chunk beyond the end of the file).
    """
    remote = remote_of(h5file) if read is None else None
    if remote is not None:  # a file at a URL (h5ml.model.remote): one range request per chunk
        read = remote.read_at
    if read is None:
        handle = h5file.id.get_vfd_handle()
        if not isinstance(handle, int):
            raise OSError(f"{h5file.filename}: the file was opened through a driver without a file descriptor")
        read = fd_reader(handle)
    mismatches: list[ChecksumMismatch] = []
    unprotected: list[str] = []
    malformed: list[tuple[str, str]] = []
    for dset in feature_datasets(h5file) if datasets is None else datasets:
        stored = checksum_dataset(dset)
        if stored is None:
            unprotected.append(dset.name)
            continue
        layout = stored_layout(dset)
        problem = checksum_problem(stored, layout)
        if problem is not None or isinstance(layout, str):
            malformed.append(
                (f"{dset.parent.name.rstrip('/')}/{checksum_name(dset.name.rsplit('/', 1)[-1])}", str(problem))
            )
            continue
        expected = np.asarray(stored[()], dtype=np.uint32)
        for k, piece in sorted(layout.pieces.items()):
            actual = checksum_of(read(*piece))
            if actual != int(expected[k]):
                mismatches.append(ChecksumMismatch(dset.name, k, int(expected[k]), actual, entry_rows(layout, k)))
    return mismatches, unprotected, malformed
