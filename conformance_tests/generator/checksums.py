"""Checksum datasets of SPEC §8.4, computed by the suite itself (``crc32c`` and h5py, no implementation).

:func:`add_checksums` writes ``<parent>/_crc32c.<name>`` for one feature
dataset of a finished file: the CRC32C of each chunk's stored bytes, read
from the file at the offsets HDF5's chunk index gives, one entry per chunk in
row-major order over the chunk grid (per 2^20-byte block of contiguous
storage). A recipe edit ``{"op": "checksums", "path": ...}`` calls it, with
``dtype``, ``damage`` (XORed into every entry) and ``extra`` (entries added)
to make the malformed and mismatching cases.
"""

from __future__ import annotations

import math
import os

import crc32c
import h5py
import numpy as np

__all__ = ["BLOCK_BYTES", "add_checksums", "checksum_values", "edit_target"]

#: SPEC §8.4: a contiguous dataset has one entry per block of this many bytes.
BLOCK_BYTES = 1 << 20


def _entries(f: h5py.File, dset: h5py.Dataset) -> list[int]:
    """The CRC32C of each chunk (or block) of ``dset``'s stored bytes, in entry order (§8.4-R1, §8.4-R2)."""
    f.flush()
    fd = os.open(f.filename, os.O_RDONLY)
    try:
        dsid = dset.id
        shape = tuple(int(s) for s in dset.shape)
        if dset.chunks is None:
            total = int(dsid.get_storage_size())
            offset = int(dsid.get_offset())
            return [
                crc32c.crc32c(os.pread(fd, min(BLOCK_BYTES, total - k), offset + k))
                for k in range(0, total, BLOCK_BYTES)
            ]
        chunks = tuple(int(c) for c in dset.chunks)
        grid = [-(-s // c) for s, c in zip(shape, chunks, strict=True)]
        out = [0] * math.prod(grid)
        for i in range(dsid.get_num_chunks()):
            info = dsid.get_chunk_info(i)
            index = 0
            for offset, chunk, count in zip(info.chunk_offset, chunks, grid, strict=True):
                index = index * count + int(offset) // chunk
            out[index] = crc32c.crc32c(os.pread(fd, int(info.size), int(info.byte_offset)))
        return out
    finally:
        os.close(fd)


def edit_target(edit: dict[str, object]) -> str:
    """The path of the checksum dataset a ``checksums`` edit writes."""
    parent, own = str(edit["path"]).rsplit("/", 1)
    return f"{parent or ''}/_crc32c.{edit.get('as') or own}"


def checksum_values(f: h5py.File, path: str, dtype: str = "<u4", damage: int = 0, extra: int = 0) -> np.ndarray:
    """The entries a ``checksums`` edit writes for the dataset at ``path``: CRC32C XOR ``damage``, ``extra`` zeros."""
    values = [v ^ damage for v in _entries(f, f[path])] + [0] * extra
    return np.array(values, dtype=np.uint64).astype(dtype)


def add_checksums(f: h5py.File, edit: dict[str, object]) -> None:
    """Write the checksum dataset that a ``checksums`` edit describes (SPEC §8.4), optionally malformed or wrong.

    The edit's ``path`` names the protected dataset; ``dtype`` (default ``<u4``), ``damage`` (XORed into
    each entry), ``extra`` (zero entries added) and ``as`` (the name of another dataset, which may not exist)
    make the malformed and mismatching cases.
    """
    values = checksum_values(
        f,
        str(edit["path"]),
        str(edit.get("dtype", "<u4")),
        int(str(edit.get("damage", 0))),
        int(str(edit.get("extra", 0))),
    )
    f.create_dataset(edit_target(edit), data=values)
