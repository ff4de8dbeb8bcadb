"""Storage never written: chunks or contiguous blocks that HDF5 never allocated (§3.5.1, §10.4).

HDF5 returns the fill value for data that was never written and cannot tell
it from data, so a file can declare a dataset of any shape while holding
almost nothing. :func:`unallocated_storage` tells, from the chunk index and
the allocated storage size alone (no data is read), whether every value a
dataset declares was written: the validator reports what it finds as E146
(shallow and deep validation alike), the reader refuses to read such a
dataset instead of returning fill values as samples, and ``h5ml inspect``
marks it "never written" instead of summarising fill values.

Only chunks within the current extent count (SPEC §3.5.1-R2): a chunk index
may hold chunks beyond the extent (a dataspace shrunk without pruning its
chunks), and counting those would hide a chunk missing inside it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Final

import h5py
from h5py import h5d

__all__ = ["NeverWritten", "unallocated_components", "unallocated_storage"]

#: The most chunks within the extent whose offsets are kept to name the first missing one (a memory bound, §10.4).
_LOCATE_CHUNKS: Final = 1 << 16


@dataclass(frozen=True)
class NeverWritten:
    """What part of a dataset's declared data was never written (§3.5.1, E146).

    Attributes
    ----------
    what
        A sentence naming the dataset (its HDF5 path), its declared shape and
        what is missing: chunks never written (how many, and the first one
        when located; chunks outside the extent, which do not count) or a
        contiguous block never allocated.
    rows_written
        When the dataset is chunked and every missing chunk lies after the
        written ones along the first axis (the writer stopped early), the
        number of leading rows that were all written; otherwise None (a
        chunk missing in the middle, or a contiguous block never allocated),
        where shrinking the dataset would not make it whole.
    """

    what: str
    rows_written: int | None = None


def unallocated_storage(dset: h5py.Dataset) -> NeverWritten | None:
    """Tell whether part of a dataset's declared data was never written to the file (§3.5.1, E146).

    A chunked dataset must have every chunk within its current extent
    allocated, and a contiguous dataset with at least one element must have
    its storage allocated; HDF5 would return the fill value for anything
    else. Only the chunk index and the storage size are consulted, never the
    data. The time this takes is bounded by the file, not by the declared
    shape (§10.4): the chunk index is walked once (each chunk in it takes
    room in the file; about a second per million chunks), counting the chunks
    whose offset lies within the current extent, and the first missing chunk
    is located only when at most :data:`_LOCATE_CHUNKS` chunks lie within it.

    Parameters
    ----------
    dset
        Any dataset.

    Returns
    -------
    NeverWritten or None
        None when every declared value is stored (or nothing is declared;
        compact data lives in the object header; external and virtual data
        is outside the file); otherwise what is missing.
    """
    shape = dset.shape
    if not shape or math.prod(shape) == 0:
        return None
    plist = dset.id.get_create_plist()
    layout = plist.get_layout()
    if layout == h5d.VIRTUAL or plist.get_external_count() > 0:
        return None  # its data lives in other files (§3.6, §10.1): not this rule's concern
    if layout == h5d.CHUNKED:
        return _missing_chunks(dset, shape, tuple(dset.chunks))
    if layout != h5d.COMPACT and int(dset.id.get_storage_size()) == 0:
        # SPEC §3.5.1-R1: a contiguous dataset with at least one element has its storage allocated
        return NeverWritten(f"{dset.name} declares shape {shape} but its data was never written (no storage allocated)")
    return None


def unallocated_components(node: h5py.Dataset | h5py.Group) -> dict[str, NeverWritten]:
    """What :func:`unallocated_storage` says of each dataset of a feature that was not all written (§3.5.1, E146).

    Parameters
    ----------
    node
        A feature: its dataset (dense, string) or its group (categorical,
        ragged, bytes), whose member datasets are its components (§6).

    Returns
    -------
    dict
        Component name (``""`` for a dataset feature) -> what is missing, for
        the components whose declared data was not all written; ``{}`` when
        every one was. Members that are not datasets are not looked at.
    """
    if isinstance(node, h5py.Dataset):
        members = {"": node}
    else:
        members = {name: node[name] for name in node if isinstance(node.get(name), h5py.Dataset)}
    found = {name: unallocated_storage(dset) for name, dset in members.items()}
    return {name: missing for name, missing in found.items() if missing is not None}


class _ChunkTally:
    """The chunks of one chunk index, walked once: those within the extent, those outside it, and where they lie."""

    def __init__(self, shape: tuple[int, ...], chunks: tuple[int, ...]) -> None:
        self.shape = shape
        self.chunks = chunks
        self.inside = 0
        self.outside = 0
        self.last_row = -1  # the largest chunk row (offset along the first axis / c0) within the extent
        self.offsets: set[tuple[int, ...]] | None = set()

    def __call__(self, info: h5py.h5d.StoreInfo) -> None:
        offset = tuple(int(k) for k in info.chunk_offset)
        if any(o >= s for o, s in zip(offset, self.shape, strict=True)):
            self.outside += 1
            return
        self.inside += 1
        self.last_row = max(self.last_row, offset[0] // self.chunks[0])
        if self.offsets is not None:
            if len(self.offsets) >= _LOCATE_CHUNKS:
                self.offsets = None  # too many to keep: the first missing chunk goes unnamed
            else:
                self.offsets.add(offset)


def _missing_chunks(dset: h5py.Dataset, shape: tuple[int, ...], chunks: tuple[int, ...]) -> NeverWritten | None:
    """What :func:`unallocated_storage` says of a chunked dataset (§3.5.1-R1, §3.5.1-R2)."""
    grid = tuple(-(-s // c) for s, c in zip(shape, chunks, strict=True))
    expected = math.prod(grid)
    tally = _ChunkTally(shape, chunks)
    # SPEC §3.5.1-R2: count the chunks allocated within the current extent; one outside it does not count
    dset.id.chunk_iter(tally)
    # SPEC §3.5.1-R1: every chunk within the current extent is allocated
    if tally.inside >= expected:
        return None
    first = None if tally.offsets is None else _first_missing_chunk(tally.offsets, grid, chunks)
    where = "" if first is None else f" (the first missing one starts at element {first})"
    beyond = (
        ""
        if tally.outside == 0
        else f"; {tally.outside} more chunk(s) of its index lie outside the current extent and do not count (§3.5.1)"
    )
    # The writer stopped early when the written chunks are exactly the first rows of chunks: a chunk index
    # holds each offset once, so `inside` chunks all in the first `rows` chunk rows fill them
    per_row = expected // grid[0]
    rows = tally.inside // per_row
    trailing = tally.inside % per_row == 0 and tally.last_row + 1 == rows
    return NeverWritten(
        f"{dset.name} declares shape {shape} in {expected} chunks of {chunks} but only {tally.inside} "
        f"were ever written{where}{beyond}",
        rows_written=min(rows * chunks[0], shape[0]) if trailing else None,
    )


def _first_missing_chunk(
    stored: set[tuple[int, ...]], grid: tuple[int, ...], chunks: tuple[int, ...]
) -> tuple[int, ...] | None:
    """The element offset of the first chunk, in C order of the chunk grid, that is not in ``stored``.

    With ``len(stored)`` chunks within the extent, one of the first
    ``len(stored) + 1`` grid positions is missing, so at most that many
    positions are looked at.
    """
    for i in range(len(stored) + 1):
        offset = tuple(int(k) * c for k, c in zip(_unravel(i, grid), chunks, strict=True))
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
