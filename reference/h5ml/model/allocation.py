"""Storage never written: chunks or contiguous blocks that HDF5 never allocated (§3.5.1, §10.4).

HDF5 returns the fill value for data that was never written and cannot tell
it from data, so a file can declare a dataset of any shape while holding
almost nothing. :func:`unallocated_storage` tells, from the chunk index and
the allocated storage size alone (no data is read), whether every value a
dataset declares was written: the validator reports what it finds as E146
(shallow and deep validation alike), and the reader refuses to read such a
dataset instead of returning fill values as samples.
"""

from __future__ import annotations

import math
from typing import Final

import h5py
from h5py import h5d

__all__ = ["unallocated_storage"]

#: The most written chunks :func:`unallocated_storage` walks to name the first missing one (a time bound, §10.4).
_LOCATE_CHUNKS: Final = 1 << 16


def unallocated_storage(dset: h5py.Dataset) -> str | None:
    """Tell whether part of a dataset's declared data was never written to the file (§3.5.1, E146).

    A chunked dataset must have every chunk within its current extent
    allocated, and a contiguous dataset with at least one element must have
    its storage allocated; HDF5 would return the fill value for anything
    else. Only the chunk index and the storage size are consulted, never the
    data. The time this takes is bounded by the file, not by the declared
    shape (§10.4): HDF5 counts the chunks that are in the index (each takes
    room in the file), and the first missing chunk is located only when at
    most :data:`_LOCATE_CHUNKS` chunks were written.

    Parameters
    ----------
    dset
        Any dataset.

    Returns
    -------
    str or None
        None when every declared value is stored (or nothing is declared;
        compact data lives in the object header; external and virtual data
        is outside the file); otherwise what is missing:
        chunks never written (how many, and the first one when located) or a
        contiguous block never allocated.
    """
    shape = dset.shape
    if not shape or math.prod(shape) == 0:
        return None
    plist = dset.id.get_create_plist()
    layout = plist.get_layout()
    if layout == h5d.VIRTUAL or plist.get_external_count() > 0:
        return None  # its data lives in other files (§3.6, §10.1): not this rule's concern
    if layout == h5d.CHUNKED:
        grid = tuple(-(-s // c) for s, c in zip(shape, dset.chunks, strict=True))
        expected = math.prod(grid)
        # SPEC §3.5.1-R1: every chunk within the current extent is allocated; the index holds no chunk outside it
        written = int(dset.id.get_num_chunks())
        if written >= expected:
            return None
        first = _first_missing_chunk(dset, grid, written)
        where = "" if first is None else f" (the first missing one starts at element {first})"
        return (
            f"{dset.name} declares shape {shape} in {expected} chunks of {dset.chunks} but only {written} "
            f"were ever written{where}"
        )
    if layout != h5d.COMPACT and int(dset.id.get_storage_size()) == 0:
        # SPEC §3.5.1-R1: a contiguous dataset with at least one element has its storage allocated
        return f"{dset.name} declares shape {shape} but its data was never written (no storage allocated)"
    return None


def _first_missing_chunk(dset: h5py.Dataset, grid: tuple[int, ...], written: int) -> tuple[int, ...] | None:
    """The element offset of the first chunk, in C order of the chunk grid, that is not in the index.

    With ``written`` chunks in the index, one of the first ``written + 1`` grid
    positions is missing, so at most that many positions are looked at.
    """
    if written > _LOCATE_CHUNKS:
        return None
    stored: set[tuple[int, ...]] = set()
    dset.id.chunk_iter(lambda info: stored.add(tuple(info.chunk_offset)))
    for i in range(written + 1):
        offset = tuple(int(k) * c for k, c in zip(_unravel(i, grid), dset.chunks, strict=True))
        if offset not in stored:
            return offset
    return None  # pragma: no cover - the pigeonhole above always finds one


def _unravel(i: int, grid: tuple[int, ...]) -> tuple[int, ...]:
    """The chunk-grid coordinates of the ``i``-th chunk in C order (last axis fastest)."""
    coords = []
    for extent in reversed(grid):
        i, k = divmod(i, extent)
        coords.append(k)
    return tuple(reversed(coords))
