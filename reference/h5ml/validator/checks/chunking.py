"""Chunk and layout rules of feature datasets: E150, W200, W201, W209 (§7.1-§7.5).

Chunk sizes are counted the way HDF5 stores them: a variable-length string
takes :data:`h5ml.spec.chunks.VLEN_ELEMENT_BYTES` in a chunk, whatever its length.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from typing import Any

import h5py
from h5py import h5d, h5t

from h5ml import spec
from h5ml.spec.chunks import VLEN_ELEMENT_BYTES
from h5ml.validator.checks.issue import Issue

__all__ = ["check_chunks", "check_contiguous", "row_bytes"]


def _itemsize_in_chunk(tid: Any) -> int:
    if tid.get_class() == h5t.STRING and tid.is_variable_str():
        return VLEN_ELEMENT_BYTES
    return int(tid.get_size())


def _whole_rows(shape: Sequence[int], chunks: Sequence[int]) -> bool:
    """§7.1: every axis after the first is whole (an axis of extent 0 counts as whole) (SPEC §7.1-R1)."""
    return all(s == 0 or c == s for s, c in zip(shape[1:], chunks[1:], strict=True))


def _row_slab(shape: Sequence[int], chunks: Sequence[int], itemsize: int) -> bool:
    """§7.1.1: a C-order slab of one row of at most LARGE_SAMPLE_BYTES (SPEC §7.1.1-R1).

    ``c0 = 1`` and for some axis ``j >= 1``: ``ci = 1`` before ``j``, ``1 <= cj <= sj``, ``ci = si`` after ``j``.
    """
    if chunks[0] != 1 or itemsize * math.prod(chunks) > spec.LARGE_SAMPLE_BYTES:
        return False
    for j in range(1, len(shape)):
        if (
            all(c == 1 for c in chunks[1:j])
            and 1 <= chunks[j] <= max(1, shape[j])
            and _whole_rows(shape[j:], chunks[j:])
        ):
            return True
    return False


def _is_power_of_two(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def row_bytes(dset: h5py.Dataset) -> int:
    """Return the bytes one row (one entry along the first axis) of ``dset`` takes in a chunk (§7.1).

    Parameters
    ----------
    dset
        A dataset of rank >= 1.

    Returns
    -------
    int
        Item size (:data:`h5ml.spec.chunks.VLEN_ELEMENT_BYTES` for variable-length
        strings) times the number of items in a row, in bytes.
    """
    return _itemsize_in_chunk(dset.id.get_type()) * int(math.prod(dset.shape[1:]))


def check_chunks(dset: h5py.Dataset, path: str, *, rows_are_samples: bool) -> Iterator[Issue]:
    """E150, W200, W201 for a chunked feature dataset (§7.1-§7.3, §7.5).

    Parameters
    ----------
    dset
        A feature dataset of rank >= 1; a contiguous one gives nothing.
    path
        Its HDF5 path.
    rows_are_samples
        True when one row is one sample (W200 asks for a power of two of them per chunk).

    Yields
    ------
    Issue
        E150 when chunks do not hold whole rows (nor a one-row slab of a large
        row), W200 for a sample count per chunk that is not a power of two
        when the dataset has more rows than one chunk holds,
        W201 for chunks outside [MIN_CHUNK_BYTES, MAX_CHUNK_BYTES].
    """
    chunks = dset.chunks
    if chunks is None:
        # SPEC §7.4-R1: contiguous and compact datasets have no chunks, so E150, W200, W201 never apply to them
        return
    shape = dset.shape
    itemsize = _itemsize_in_chunk(dset.id.get_type())
    chunk_bytes = itemsize * math.prod(chunks)
    one_row = itemsize * math.prod(shape[1:])
    # SPEC §7.1-R1: whole rows; SPEC §7.1.1-R1: or, only for a row over 16 MiB, a C-order slab of that row
    if not _whole_rows(shape, chunks) and not (
        one_row > spec.LARGE_SAMPLE_BYTES and _row_slab(shape, chunks, itemsize)
    ):
        whole = ", ".join(str(d) for d in shape[1:])
        yield Issue.of(
            "E150",
            path,
            f"{path} has chunks {chunks} for shape {shape}: a chunk must hold whole rows, chunk shape "
            f"(r, {whole}), or for rows over {spec.LARGE_SAMPLE_BYTES} bytes a one-row slab (§7.1.1); "
            "rewrite it with h5ml.write",
        )
    # SPEC §7.2-R1: one chunk along the first axis that holds every row (c0 >= n) needs no power of two
    if rows_are_samples and chunks[0] < shape[0] and not _is_power_of_two(chunks[0]):
        yield Issue.of(
            "W200",
            path,
            f"{path} has {chunks[0]} samples per chunk, not a power of two; rewrite it with h5ml.write",
        )
    data_bytes = itemsize * math.prod(shape)
    if (chunks[0] > 1 and chunk_bytes > spec.MAX_CHUNK_BYTES) or chunk_bytes > spec.LARGE_SAMPLE_BYTES:
        yield Issue.of(
            "W201",
            path,
            f"chunks of {path} hold {chunk_bytes} bytes, more than {spec.MAX_CHUNK_BYTES}: reading one row "
            "reads and decompresses a whole chunk; rewrite it with h5ml.write",
        )
    elif chunk_bytes < spec.MIN_CHUNK_BYTES and data_bytes >= spec.MIN_CHUNK_BYTES:
        yield Issue.of(
            "W201",
            path,
            f"chunks of {path} hold {chunk_bytes} bytes, fewer than {spec.MIN_CHUNK_BYTES}: many small chunks "
            "slow reading and bloat the chunk index; rewrite it with h5ml.write",
        )


def check_contiguous(dset: h5py.Dataset, path: str) -> Iterator[Issue]:
    """W209 for the dataset of a dense feature stored contiguous and larger than 1 GiB (§7.4).

    Parameters
    ----------
    dset
        The dataset of a dense feature, of rank >= 1.
    path
        Its HDF5 path.

    Yields
    ------
    Issue
        W209 when the layout is contiguous and the data holds more than
        :data:`h5ml.spec.LARGE_CONTIGUOUS_BYTES` bytes.
    """
    plist = dset.id.get_create_plist()
    if plist.get_layout() == h5d.CONTIGUOUS:
        nbytes = _itemsize_in_chunk(dset.id.get_type()) * math.prod(dset.shape)
        if nbytes > spec.LARGE_CONTIGUOUS_BYTES:
            yield Issue.of(
                "W209",
                path,
                f"dense feature {path} is stored contiguous and holds {nbytes} bytes; a feature "
                f"this large should be chunked (§7.1) so it can be compressed and grown",
            )
