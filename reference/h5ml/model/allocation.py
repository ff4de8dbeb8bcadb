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

:func:`storage_shortfall` is the cheaper test of §10.4-R1, which the reader
makes before the first read of a dataset: it compares the storage size
alone (``H5Dget_storage_size``; no chunk is walked from Python, no data is
read) with the least storage a dataset whose declared extent is all written
needs (:func:`least_storage`): every chunk that covers the extent at its full
size for data without filters, the logical size of a contiguous dataset,
and, with deflate, that size divided by :data:`DEFLATE_RATIO_LIMIT`. Storage
below it proves data missing (it never refuses a file whose data is all
written), so a small file declaring 2**28 samples or a ``(2**40, 1024)``
dataset is refused before the chunk index is walked or any buffer of the
declared size is allocated.
"""

from __future__ import annotations

import math
from array import array
from dataclasses import dataclass
from typing import Final

import h5py
import numpy as np
import numpy.typing as npt
from h5py import h5d

__all__ = [
    "DEFLATE_RATIO_LIMIT",
    "NeverWritten",
    "Shortfall",
    "least_storage",
    "storage_shortfall",
    "storage_verdict",
    "unallocated_components",
    "unallocated_storage",
]

#: The largest ratio deflate reaches (a property of its format: about 1032 bytes out of one byte in); a deflated
#: chunk takes at least its size divided by this (§10.4-R1).
DEFLATE_RATIO_LIMIT: Final = 1032
#: The filters whose effect on a chunk's size is bounded: deflate (1, by DEFLATE_RATIO_LIMIT), shuffle (2, none)
#: and fletcher32 (3, 4 bytes more). With any other filter the storage size decides nothing (§10.4-R1).
_BOUNDED_FILTERS: Final = {1: DEFLATE_RATIO_LIMIT, 2: 1, 3: 1}

#: When the storage size alone proves data missing (§10.4-R1), the chunk index is still walked for the exact
#: message only if it may hold at most this many chunks: the walk of a lying file stays short.
_MESSAGE_WALK_CHUNKS: Final = 1 << 16


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


def _layout_in_file(dset: h5py.Dataset) -> tuple[int, h5py.h5p.PropDCID] | None:
    """The layout and creation properties of a dataset with elements whose data is in this file; else None.

    None for a dataset without elements (nothing declared), and for external
    or virtual data, which lives in other files (§3.6, §10.1): not the
    concern of §3.5.1 or §10.4-R1.
    """
    if not dset.shape or math.prod(dset.shape) == 0:
        return None
    plist = dset.id.get_create_plist()
    layout = int(plist.get_layout())
    if layout == h5d.VIRTUAL or plist.get_external_count() > 0:
        return None
    return layout, plist


def unallocated_storage(dset: h5py.Dataset) -> NeverWritten | None:
    """Tell whether part of a dataset's declared data was never written to the file (§3.5.1, E146).

    A chunked dataset must have every chunk within its current extent
    allocated, and a contiguous dataset with at least one element must have
    its storage allocated; HDF5 would return the fill value for anything
    else. Only the chunk index and the storage size are consulted, never the
    data. The time this takes is bounded by the file, not by the declared
    shape (§10.4): the chunk index is walked once (each chunk in it takes
    room in the file; about a second per million chunks), counting the
    distinct chunk offsets that lie within the current extent (an index entry
    that repeats another's offset counts once: HDF5 would return fill values
    for the chunk it leaves out), and naming the first missing chunk.

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
    found = _layout_in_file(dset)
    if found is None:
        return None
    layout, _ = found
    if layout == h5d.CHUNKED:
        return _missing_chunks(dset, shape, tuple(dset.chunks))
    if layout != h5d.COMPACT and int(dset.id.get_storage_size()) == 0:
        # SPEC §3.5.1-R1: a contiguous dataset with at least one element has its storage allocated
        return NeverWritten(f"{dset.name} declares shape {shape} but its data was never written (no storage allocated)")
    return None


@dataclass(frozen=True)
class Shortfall:
    """A dataset whose storage is smaller than the least its declared extent needs (§10.4-R1).

    Attributes
    ----------
    declared
        Bytes of the declared extent as stored without filters (whole chunks
        for a chunked dataset; 16 bytes per variable-length element).
    least
        The least storage, in bytes, that holds all of it (:func:`least_storage`).
    stored
        The storage the dataset has (``H5Dget_storage_size``, and no more
        than the file's size when that is given).
    chunks_at_most
        For a chunked dataset, the most chunks its storage can hold (within
        the extent or not): walking its chunk index costs about that many
        steps. None for a contiguous dataset.
    what
        A sentence naming the dataset (its HDF5 path), its declared shape
        and, when chunked, the most chunks its storage holds (the sizes are
        the attributes above).
    """

    declared: int
    least: int
    stored: int
    chunks_at_most: int | None
    what: str


def least_storage(dset: h5py.Dataset) -> tuple[int, int, int | None] | None:
    """Return the declared bytes, the least storage that holds them, and the chunks covering the extent (§10.4-R1).

    Parameters
    ----------
    dset
        Any dataset.

    Returns
    -------
    tuple or None
        ``(declared, least, chunks)``: ``declared`` the bytes of the extent
        without filters (whole chunks when chunked), ``least`` the smallest
        storage a dataset with all of them written can have, ``chunks`` the
        number of chunks covering the extent (None when contiguous). None
        when the storage size decides nothing: no element, compact, external
        or virtual data, or a filter whose ratio is unbounded.
    """
    shape = dset.shape
    found = _layout_in_file(dset)
    if found is None or found[0] == h5d.COMPACT:
        return None
    layout, plist = found
    itemsize = int(dset.id.get_type().get_size())
    if layout != h5d.CHUNKED:
        declared = itemsize * math.prod(shape)
        return declared, declared, None
    ratio = 1
    for i in range(plist.get_nfilters()):
        limit = _BOUNDED_FILTERS.get(int(plist.get_filter(i)[0]))
        if limit is None:
            return None  # blosc, zstd, lz4...: no bound on their ratio, so the storage size proves nothing
        ratio = max(ratio, limit)
    chunk_shape = tuple(dset.chunks)
    chunks = math.prod(-(-s // c) for s, c in zip(shape, chunk_shape, strict=True))
    chunk_nbytes = itemsize * math.prod(chunk_shape)
    return chunks * chunk_nbytes, chunks * -(-chunk_nbytes // ratio), chunks


def storage_shortfall(dset: h5py.Dataset, file_size: int | None = None) -> Shortfall | None:
    """Tell, from the storage size alone, whether a dataset stores less than its declared extent needs (§10.4-R1).

    The test never walks the chunk index from Python and reads no data: it
    compares ``H5Dget_storage_size`` (bounded by ``file_size`` when given)
    with :func:`least_storage`. Storage below that least proves data
    missing; storage at or above it proves nothing (a chunk may still be
    missing: :func:`unallocated_storage` walks the index to tell).

    Parameters
    ----------
    dset
        Any dataset.
    file_size
        The file's size in bytes, or None: the file cannot store more than that.

    Returns
    -------
    Shortfall or None
        What is missing, or None when the storage size proves nothing missing.
    """
    need = least_storage(dset)
    if need is None:
        return None
    declared, least, chunks = need
    stored = int(dset.id.get_storage_size())
    if file_size is not None:
        stored = min(stored, file_size)
    if stored >= least:
        return None
    if chunks is None:
        return Shortfall(declared, least, stored, None, f"{dset.name} declares shape {dset.shape}, more than it stores")
    at_most = stored // (least // chunks)
    return Shortfall(
        declared,
        least,
        stored,
        at_most,
        f"{dset.name} declares shape {dset.shape} in {chunks} chunks of {tuple(dset.chunks)}, of which its storage "
        f"holds {at_most} at most",
    )


def storage_verdict(dset: h5py.Dataset, file_size: int | None = None) -> tuple[Shortfall | None, NeverWritten | None]:
    """What a reader checks before the first read of a dataset: the storage size first, the chunk index when cheap.

    :func:`storage_shortfall` decides first, from the storage size alone
    (§10.4-R1). The chunk index is then walked (:func:`unallocated_storage`,
    §3.5.1) for the exact message, unless the storage size already proved
    data missing and the index may hold more than :data:`_MESSAGE_WALK_CHUNKS`
    chunks: so the walk of a lying file stays short, and an honest file pays
    the walk once, at its first read, never at open.

    Parameters
    ----------
    dset
        Any dataset.
    file_size
        The file's size in bytes, or None.

    Returns
    -------
    tuple
        ``(shortfall, missing)``: each None when that test found nothing
        (``missing`` is also None when the walk was skipped).
    """
    short = storage_shortfall(dset, file_size)
    if short is not None and short.chunks_at_most is not None and short.chunks_at_most > _MESSAGE_WALK_CHUNKS:
        return short, None
    return short, unallocated_storage(dset)


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
    """The chunks of one chunk index, walked once: where each lies within the extent, and how many lie outside it.

    A chunk within the extent is kept as its position in C order of the chunk grid (8 bytes each: the index
    holds no more chunks than the file has room for, §10.4), so that an entry repeating another's offset
    counts once (a damaged index can list one chunk twice and leave another out, §3.5.1-R2).
    """

    def __init__(self, shape: tuple[int, ...], chunks: tuple[int, ...]) -> None:
        self.shape = shape
        self.chunks = chunks
        self.grid = tuple(-(-s // c) for s, c in zip(shape, chunks, strict=True))
        self.outside = 0
        self.positions = array("q")

    def __call__(self, info: h5py.h5d.StoreInfo) -> None:
        offset = info.chunk_offset
        if any(o >= s for o, s in zip(offset, self.shape, strict=True)):
            self.outside += 1
            return
        position = 0
        for o, c, g in zip(offset, self.chunks, self.grid, strict=True):
            position = position * g + o // c
        self.positions.append(position)

    def distinct(self) -> npt.NDArray[np.int64]:
        """The grid positions of the chunks within the extent, each once, in C order."""
        return np.unique(np.frombuffer(self.positions, dtype=np.int64))


def _missing_chunks(dset: h5py.Dataset, shape: tuple[int, ...], chunks: tuple[int, ...]) -> NeverWritten | None:
    """What :func:`unallocated_storage` says of a chunked dataset (§3.5.1-R1, §3.5.1-R2)."""
    tally = _ChunkTally(shape, chunks)
    grid = tally.grid
    expected = math.prod(grid)
    # SPEC §3.5.1-R2: count the distinct chunks allocated within the current extent; one outside it does not count
    dset.id.chunk_iter(tally)
    written = tally.distinct()
    inside = int(written.shape[0])
    # SPEC §3.5.1-R1: every chunk within the current extent is allocated
    if inside >= expected:
        return None
    # the first position in C order not written: the first where the sorted positions leave 0, 1, 2, ...
    gaps = np.flatnonzero(written != np.arange(inside, dtype=np.int64))
    first = int(gaps[0]) if gaps.shape[0] else inside
    start = tuple(int(k) * c for k, c in zip(_unravel(first, grid), chunks, strict=True))
    repeated = len(tally.positions) - inside
    beyond = (
        ""
        if tally.outside == 0
        else f"; {tally.outside} more chunk(s) of its index lie outside the current extent and do not count (§3.5.1)"
    )
    twice = (
        ""
        if repeated == 0
        else f"; {repeated} more {'entry of its index repeats' if repeated == 1 else 'entries of its index repeat'} "
        "the offset of a chunk listed before (a damaged chunk index)"
    )
    # The writer stopped early when the written chunks are exactly the first rows of chunks
    per_row = expected // grid[0]
    rows = inside // per_row
    trailing = inside % per_row == 0 and (inside == 0 or int(written[-1]) // per_row + 1 == rows)
    return NeverWritten(
        f"{dset.name} declares shape {shape} in {expected} chunks of {chunks} but only {inside} "
        f"were ever written (the first missing one starts at element {start}){beyond}{twice}",
        rows_written=min(rows * chunks[0], shape[0]) if trailing else None,
    )


def _unravel(i: int, grid: tuple[int, ...]) -> tuple[int, ...]:
    """The chunk-grid coordinates of the ``i``-th chunk in C order (last axis fastest)."""
    coords = []
    for extent in reversed(grid):
        i, k = divmod(i, extent)
        coords.append(k)
    return tuple(reversed(coords))
