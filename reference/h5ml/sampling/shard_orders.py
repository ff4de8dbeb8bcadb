"""Epoch orders and rank shares of a sharded split (SPEC §12.5): shards in flight, contiguous rank pieces.

A :class:`h5ml.sampling.Sampler` given ``shard_sizes`` (the samples of each
shard in listed order, ``ShardedSplit.shard_sizes``; the adapters pass them
through :meth:`h5ml.reader.source.SplitSource.sampler`) orders and shares
the samples so that a reader touches few shards at a time.

``"chunk"`` shuffle over shards (:func:`shard_chunk_order`)
    The shards are put in a random order and taken in groups of
    ``shards_in_flight`` consecutive shards (default 2). Within a group the
    chunks of its shards (``chunk_rows`` samples each, counted from each
    shard's first sample; a shard's last chunk may be short) are put in a
    random order, cut into windows of ``window_chunks`` chunks, and the
    samples of each window permuted, as the file mode does. The groups follow
    one another. So a stretch of the epoch order within one group holds
    samples of at most ``shards_in_flight`` shards, and the shards of a group
    never come back once the next group started. The bound it gives: a reader
    that takes one rank's batches in order (each batch a contiguous piece of
    the order) and holds at least ``shards_in_flight`` shards open
    (``h5ml.open(..., max_open_shards=...)``, default 8) opens each shard once
    per epoch (the few padded samples of the last batch excepted, see below):
    the shards it closes to make room are those of earlier groups.
    (A batch that straddles the end of a group reads the shards of both.)
``"full"``
    A uniform permutation of all samples of the split, as for one file.
``"none"``
    Listed order: shard after shard.

Rank shares (:class:`ShardedEpochBatches`)
    With ``world_size`` ranks the padded epoch order is cut into
    ``world_size`` contiguous pieces, one per rank, and each piece into
    batches of ``batch_size``: a rank reads mostly whole shards, and at most
    the two at the ends of its piece are shared with its neighbours. The
    counts are those of the file sampler, so every rank gets the same number
    of batches of the same sizes: ``ceil(N / S)`` batches per rank
    (``S = batch_size * world_size``), the last one of ``ceil(t / world_size)``
    samples for the ``t`` samples of the last global step; the order is
    padded to ``world_size`` times the samples of one rank by repeating its
    first samples (cyclically when ``N < world_size``): fewer than
    ``world_size`` samples repeated per epoch, the others exactly once across
    ranks. With ``drop_last=True``: ``N // S`` batches of ``batch_size`` per
    rank, and the last ``N mod S`` samples of the epoch order are left out.
    With length buckets (``lengths=``) the ranks take global steps as for a
    file instead, since the buckets decide which samples go together.

Resume states bind to the index fingerprint (the adapters pass it as the
data's identity) and record ``shard_count`` and, in ``"chunk"`` mode,
``shards_in_flight`` (:mod:`h5ml.sampling.resume`): a state saved on one
index is refused on another.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import numpy as np
import numpy.typing as npt

from h5ml.sampling.counts import count
from h5ml.sampling.epoch_batches import EpochBatches

__all__ = ["DEFAULT_SHARDS_IN_FLIGHT", "ShardedEpochBatches", "check_shard_sizes", "shard_chunk_order"]

#: Shards whose samples ``"chunk"`` shuffle mixes at a time, by default.
DEFAULT_SHARDS_IN_FLIGHT: Final = 2
#: A group's chunks are ordered this many samples at a time, at least (a bound on temporaries, 2**20).
_BLOCK_SAMPLES: Final = 1 << 20

IndexArray = npt.NDArray[np.int64]


def check_shard_sizes(shard_sizes: Sequence[int], num_samples: int) -> tuple[int, ...]:
    """Return the shards' sample counts as a tuple of ints, checked against the split's count.

    Raises
    ------
    ValueError
        If a count is negative, or the counts do not add up to ``num_samples``.
    TypeError
        If a count is not an integer.
    """
    sizes = tuple(count(size, "shard_sizes[]", 0) for size in shard_sizes)
    if sum(sizes) != num_samples:
        raise ValueError(
            f"shard_sizes add up to {sum(sizes)} samples, not num_samples={num_samples}; pass the split's "
            "shard_sizes (ShardedSplit.shard_sizes) with its num_samples"
        )
    return sizes


def shard_chunk_order(
    shard_sizes: Sequence[int], chunk_rows: int, window_chunks: int, shards_in_flight: int, rng: np.random.Generator
) -> IndexArray:
    """The ``"chunk"`` epoch order of a sharded split (see the module docstring).

    Parameters
    ----------
    shard_sizes
        Samples of each shard, in listed order (N in all).
    chunk_rows
        Samples per chunk, counted from each shard's first sample, >= 1.
    window_chunks
        Chunks of a group whose samples are permuted together, >= 1.
    shards_in_flight
        Shards per group, >= 1.
    rng
        The epoch's generator (:func:`h5ml.sampling.seeds.epoch_rng`).

    Returns
    -------
    numpy.ndarray
        int64 ``(N,)``: a permutation of ``0..N-1`` (global sample indices).
    """
    sizes = np.asarray(shard_sizes, dtype=np.int64)
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1])) if sizes.size else sizes
    shard_order = rng.permutation(len(sizes)).astype(np.int64, copy=False)
    order = np.empty(int(sizes.sum()), dtype=np.int64)
    done = 0
    # Whole groups at a time, at least _BLOCK_SAMPLES samples per block, so that temporaries stay small.
    block: list[int] = []
    block_samples = 0
    for first in range(0, len(shard_order), shards_in_flight):
        group = shard_order[first : first + shards_in_flight]
        block.append(first)
        block_samples += int(sizes[group].sum())
        if block_samples >= _BLOCK_SAMPLES or first + shards_in_flight >= len(shard_order):
            groups = [shard_order[g : g + shards_in_flight] for g in block]
            piece = _groups_order(groups, sizes, starts, chunk_rows, window_chunks, rng)
            order[done : done + len(piece)] = piece
            done += len(piece)
            block, block_samples = [], 0
    return order


def _groups_order(
    groups: list[IndexArray],
    sizes: IndexArray,
    starts: IndexArray,
    chunk_rows: int,
    window_chunks: int,
    rng: np.random.Generator,
) -> IndexArray:
    """The order of consecutive groups of shards: each group's chunks shuffled, windows of samples permuted."""
    chunk_starts, chunk_sizes, chunk_group = [], [], []
    for number, group in enumerate(groups):
        for shard in group.tolist():
            offsets = np.arange(0, int(sizes[shard]), chunk_rows, dtype=np.int64)
            chunk_starts.append(starts[shard] + offsets)
            chunk_sizes.append(np.minimum(chunk_rows, sizes[shard] - offsets))
            chunk_group.append(np.full(len(offsets), number, dtype=np.int64))
    if not chunk_starts:
        return np.empty(0, dtype=np.int64)
    first, size, group_of = np.concatenate(chunk_starts), np.concatenate(chunk_sizes), np.concatenate(chunk_group)
    # Chunks shuffled within their group (groups keep their order), then numbered in windows per group.
    shuffled = np.lexsort((rng.random(len(first)), group_of))
    first, size, group_of = first[shuffled], size[shuffled], group_of[shuffled]
    group_start = np.searchsorted(group_of, group_of, side="left")
    window = group_of * (1 + len(first) // window_chunks) + (np.arange(len(first)) - group_start) // window_chunks
    m = int(size.sum())
    before = np.cumsum(size) - size
    by_chunk = np.repeat(first - before, size) + np.arange(m, dtype=np.int64)
    sample_window = np.repeat(window, size)
    return by_chunk[np.lexsort((rng.random(m), sample_window))]


class ShardedEpochBatches(EpochBatches):
    """One rank's batches of a sharded split: a contiguous piece of the padded epoch order (see the module docstring).

    Parameters are those of :class:`h5ml.sampling.epoch_batches.EpochBatches`.

    Notes
    -----
    Each rank holds ``L = (num_batches - 1) * B + last`` positions of the
    padded order (``last`` the size of its last batch), rank ``r`` positions
    ``[r L, (r+1) L)``; padded position ``p`` is order position ``p`` for
    ``p < N``, else ``(p - N) mod N``. Batch ``k`` is the ``k``-th run of
    ``B`` positions of the rank's piece.
    """

    def _last(self) -> int:
        """Samples of each rank's last batch."""
        n, step = len(self.order), self.batch_size * self.world_size
        if self.drop_last or self.num_batches == 0:
            return self.batch_size
        tail = n - (self.num_batches - 1) * step
        return -(-tail // self.world_size)

    def batch(self, k: int) -> IndexArray:
        """Return batch ``k`` in ``[0, num_batches)`` (see the class notes)."""
        n, size = len(self.order), self.batch_size
        last = self._last()
        share = (self.num_batches - 1) * size + last
        begin = self.rank * share + k * size
        end = begin + (size if k < self.num_batches - 1 else last)
        if end <= n:
            return np.ascontiguousarray(self.order.span(begin, end), dtype=np.int64)
        where = np.arange(begin, end, dtype=np.int64)
        positions = np.where(where < n, where, (where - n) % n)
        return np.ascontiguousarray(self.order.take(positions), dtype=np.int64)
