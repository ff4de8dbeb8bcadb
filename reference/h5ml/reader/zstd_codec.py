"""Decoding one stored chunk of the HDF5 zstd filter (id 32015) off the GIL: :func:`decompress` (§3.5).

The HDF5 zstd filter (``zstd_h5plugin.c`` of HDF5Plugin-Zstandard, the one
``hdf5plugin`` ships and registers as 32015) stores each chunk as one plain
zstd frame made by ``ZSTD_compress`` at the dataset's level (its one filter
parameter): the frame starts with the zstd magic ``28 b5 2f fd`` and records
the decoded size, and the filter decodes it with ``ZSTD_decompress``. No
header of HDF5's own comes before it. So a stored chunk read with
``read_direct_chunk`` (or at its offset in the file) decodes with any zstd
library; this module uses the ``zstandard`` package, which releases the GIL
while it decodes, so that a thread pool decodes chunks in parallel. A chunk
whose pipeline has HDF5's byte shuffle before zstd is still shuffled after
this: undoing it is the caller's.

``zstandard`` is imported when this module is (it is imported lazily by the
chunk-decoding engine, for filter id 32015 only).
"""

from __future__ import annotations

import threading
from typing import Final

import zstandard

__all__ = ["ZSTD_MAGIC", "decompress"]

#: The first four bytes of every zstd frame (RFC 8878, magic number 0xFD2FB528, little-endian).
ZSTD_MAGIC: Final = b"\x28\xb5\x2f\xfd"

#: One ``zstandard.ZstdDecompressor`` per thread: a decompressor shared by two threads of the decode pool
#: crashed the process here (SIGSEGV in ``ZstdDecompressor.decompress``), its context is not safe for
#: concurrent use.
_LOCAL: Final = threading.local()


def _decompressor() -> zstandard.ZstdDecompressor:
    found: zstandard.ZstdDecompressor | None = getattr(_LOCAL, "decompressor", None)
    if found is None:
        found = _LOCAL.decompressor = zstandard.ZstdDecompressor()
    return found


def decompress(data: bytes | memoryview, nbytes: int) -> bytes:
    """Decode one stored chunk of the HDF5 zstd filter (a plain zstd frame) into its ``nbytes`` bytes (§3.5).

    Thread-safe (each thread decodes with a decompressor of its own) and off
    the GIL while it decodes, so that chunks decode in parallel.

    Parameters
    ----------
    data
        The chunk's stored bytes, exactly as the filter wrote them (filter
        mask 0: zstd applied), for example from
        ``h5py.Dataset.id.read_direct_chunk``.
    nbytes
        The size of the decoded chunk in bytes: the chunk's elements times
        the item size (a whole chunk, edge chunks included, as HDF5 stores
        them).

    Returns
    -------
    bytes
        The ``nbytes`` decoded bytes (still byte-shuffled when HDF5's shuffle
        filter came before zstd).

    Raises
    ------
    ValueError
        If ``data`` is not a zstd frame, is corrupt or truncated, or decodes to
        a size other than ``nbytes`` (never more than ``nbytes`` is decoded).
    """
    view = memoryview(data)
    if bytes(view[:4]) != ZSTD_MAGIC:
        raise ValueError(
            f"a chunk of the HDF5 zstd filter (32015) starts with {bytes(view[:4]).hex(' ')}, not the zstd frame "
            "magic 28 b5 2f fd: the chunk is corrupt or was stored by another filter"
        )
    try:
        declared = zstandard.frame_content_size(view)  # -1 when the frame does not record it
        if declared not in (-1, nbytes):  # checked first: a hostile frame could declare any size (§10.4)
            raise ValueError(
                f"a chunk of the HDF5 zstd filter (32015) declares {declared} decoded bytes, not the {nbytes} bytes "
                "of the chunk: the chunk is corrupt or the dataset's chunk shape or type is not the one it was "
                "written with"
            )
        out = _decompressor().decompress(view, max_output_size=nbytes)
    except zstandard.ZstdError as exc:
        raise ValueError(f"a chunk of the HDF5 zstd filter (32015) does not decode: {exc}") from None
    if len(out) != nbytes:
        raise ValueError(
            f"a chunk of the HDF5 zstd filter (32015) decodes to {len(out)} bytes, not the {nbytes} bytes of the "
            "chunk: the chunk is corrupt or the dataset's chunk shape or type is not the one it was written with"
        )
    return out
