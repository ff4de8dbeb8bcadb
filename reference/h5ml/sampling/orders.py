"""Epoch orders for one rank: shuffle modes, shards across ranks, equal batch counts (:class:`Sampler`).

The PyTorch and Keras adapters share this module, so both give the same
batches for the same settings. It only computes sample indices; reading them
is the reader's job (it groups a batch's rows by chunk itself, see
:mod:`h5ml.reader.plan`).

Shuffle modes
-------------
``"none"``
    File order, ``0, 1, ..., N-1``. Sequential reads; use it for evaluation
    or for files already shuffled on write (§7.6).
``"chunk"``
    The chunks of the file (``chunk_rows`` samples each, §7.1; the last one may
    be short) are put in a random order; the shuffled chunk sequence is cut
    into windows of ``window_chunks`` chunks, and the samples of each window
    are permuted. The epoch order is the windows one after the other, so a
    batch only reads the chunks of one or two neighbouring windows: nearly
    sequential speed, with a shuffle that is local (a sample only moves
    within its window).
``"full"``
    A uniform random permutation of all samples. Every chunk may be read for
    every batch; the best statistical shuffle, the slowest reads. Above
    :data:`~h5ml.sampling.permutation.PERMUTATION_ARRAY_LIMIT` samples (2**26)
    without length buckets, the permutation is a seeded bijection computed per
    batch (:class:`~h5ml.sampling.permutation.FeistelPermutation`), so that no
    array of N entries is built; up to the limit it is ``rng.permutation(N)``.

Every mode gives each sample exactly once per epoch (before padding, see
below), and its order depends only on ``(seed, epoch)`` and the plan's
settings: the random generator of an epoch is
``numpy.random.default_rng(numpy.random.SeedSequence((seed, epoch)))``
(:func:`h5ml.sampling.seeds.epoch_rng`).

Shards and equal batch counts
-----------------------------
With ``world_size`` ranks and batch size ``B``, the epoch order is cut into
global steps of ``S = B * world_size`` samples; in each step rank ``r``
takes the contiguous slice ``[r*B, (r+1)*B)``. So every batch is a contiguous
piece of the epoch order (which keeps the chunk mode's locality), and the
ranks' shares are disjoint.

- ``drop_last=False``: ``ceil(N / S)`` batches per rank. The last step holds
  ``t = N - (num_batches - 1) * S`` samples; it is padded to
  ``world_size * ceil(t / world_size)`` samples by repeating the first samples
  of the epoch order (cyclically when ``N < world_size``), and each rank's
  last batch gets ``ceil(t / world_size)`` of them. Fewer than ``world_size``
  samples are repeated per epoch (none when ``world_size == 1`` or when
  ``world_size`` divides ``t``); the unpadded samples appear exactly once
  across ranks.
- ``drop_last=True``: ``N // S`` batches per rank, all of ``B`` samples; the
  ``N mod S`` samples at the end of the epoch order (different ones every
  shuffled epoch) are left out, and no sample is repeated.

Memory
------
:meth:`Sampler.epoch_batches` computes each batch when asked for
(:class:`~h5ml.sampling.epoch_batches.EpochBatches`), so iterating an epoch
holds one batch and at most one order array of N int64 entries: none in
``"none"`` mode, none in ``"full"`` mode above the limit. ``"chunk"`` mode
computes its array window by window (temporaries of about 2**20 samples);
length buckets need the lengths and a few arrays of N entries while the
order is computed. :meth:`Sampler.batches` and
:meth:`Sampler.epoch_order` return lists and arrays of the whole epoch:
O(N) memory in every mode.

Sharded splits
--------------
``Sampler(..., shard_sizes=split.shard_sizes)`` orders the samples of a
sharded split (SPEC §12.5) so that a reader touches ``shards_in_flight``
shards at a time in ``"chunk"`` mode, and gives each rank a contiguous piece
of the epoch order with the same batch counts and padding rules as above:
:mod:`h5ml.sampling.shard_orders`.

Resume and ragged features
--------------------------
:meth:`Sampler.state_dict` and :meth:`Sampler.load_state_dict` save and check
where an epoch stands (:mod:`h5ml.sampling.resume`).
``Sampler(..., lengths=feature.lengths(), pool_batches=32)`` groups samples
of similar length (from the offsets alone, §6.3) into the same global steps,
so that padding a batch to its longest sample wastes little, on every rank
and with resume (:mod:`h5ml.sampling.buckets`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final, Literal, cast

import numpy as np
import numpy.typing as npt

from h5ml.sampling.buckets import bucketed
from h5ml.sampling.counts import count
from h5ml.sampling.epoch_batches import ArrayOrder, EpochBatches, EpochOrder, IdentityOrder
from h5ml.sampling.permutation import PERMUTATION_ARRAY_LIMIT, FeistelPermutation
from h5ml.sampling.resume import ResumePoint, check_state, make_state
from h5ml.sampling.seeds import epoch_rng
from h5ml.sampling.shard_orders import (
    DEFAULT_SHARDS_IN_FLIGHT,
    ShardedEpochBatches,
    check_shard_sizes,
    shard_chunk_order,
)

__all__ = ["SHUFFLE_MODES", "Sampler", "ShuffleMode"]

#: The shuffle modes, see the module docstring.
ShuffleMode = Literal["none", "chunk", "full"]
SHUFFLE_MODES: Final[tuple[ShuffleMode, ...]] = ("none", "chunk", "full")

IndexArray = npt.NDArray[np.int64]
#: Orders computed as arrays are filled about this many samples at a time (a bound on temporaries, 2**20):
#: ``"chunk"`` mode by whole windows, a Feistel order asked for whole (:meth:`Sampler.epoch_order`) by ranges.
_CHUNK_BLOCK_SAMPLES: Final = 1 << 20


class Sampler:
    """The batches of every epoch for one rank: order, shuffle, shard and resume.

    Parameters
    ----------
    num_samples
        N, the samples of the split (§5.3), >= 0.
    batch_size
        B, samples per batch on each rank, >= 1.
    shuffle
        ``"none"``, ``"chunk"`` or ``"full"`` (see the module docstring).
    seed
        Seed of the shuffles, >= 0. Ignored by ``"none"``.
    chunk_rows
        Samples per chunk of the file (the reader's ``chunk_rows`` of the
        feature that dominates reading, §7.1). Required by ``"chunk"``; the
        other modes ignore it (their resume states record None).
    window_chunks
        ``"chunk"`` mode: consecutive chunks (in the shuffled chunk order)
        whose samples are permuted together, >= 1. Larger windows shuffle
        better and read less sequentially. Ignored by the other modes.
    rank, world_size
        This process's rank in ``[0, world_size)`` and the number of ranks.
    drop_last
        Drop the incomplete last global step instead of padding it (see the
        module docstring).
    fingerprint
        The file's fingerprint (§8.3), recorded in resume states and checked
        when resuming; ``None`` when the file has none (then states from any
        file without one are accepted).
    lengths
        Optional integer array (N,): each sample's length, from a ragged
        feature's offsets alone (``Feature.lengths()``, §6.3). Bucketing: the
        epoch order is cut into pools of ``pool_batches`` global steps, each
        pool sorted by length and cut into steps, and the whole steps shuffled
        (not with ``"none"``), so every batch on every rank holds samples of
        similar length and padding wastes little. Sharding, padding,
        ``drop_last`` and resume work as without it.
    pool_batches
        Global steps per bucketing pool, >= 1 (used only with ``lengths``).
        Larger pools pad less and shuffle less.
    shard_sizes
        The samples of each shard of a sharded split, in listed order
        (``ShardedSplit.shard_sizes``, summing to N); None for one file.
        Shard-aware orders and rank shares: :mod:`h5ml.sampling.shard_orders`.
    shards_in_flight
        With ``shard_sizes`` in ``"chunk"`` mode: shards whose samples are
        mixed at a time, >= 1 (default 2).

    Raises
    ------
    ValueError
        If a count is out of range, ``shuffle`` is not a known mode,
        ``rank`` is not below ``world_size``, ``"chunk"`` is chosen
        without ``chunk_rows``, ``lengths`` does not hold one integer per
        sample, or ``shard_sizes`` does not add up to N.
    TypeError
        If a count is not an integer.
    """

    def __init__(
        self,
        num_samples: int,
        batch_size: int,
        *,
        shuffle: ShuffleMode = "none",
        seed: int = 0,
        chunk_rows: int | None = None,
        window_chunks: int = 8,
        rank: int = 0,
        world_size: int = 1,
        drop_last: bool = False,
        fingerprint: str | None = None,
        lengths: npt.ArrayLike | None = None,
        pool_batches: int = 32,
        shard_sizes: Sequence[int] | None = None,
        shards_in_flight: int = DEFAULT_SHARDS_IN_FLIGHT,
    ) -> None:
        if shuffle not in SHUFFLE_MODES:
            raise ValueError(f"shuffle must be one of {', '.join(SHUFFLE_MODES)}; got {shuffle!r}")
        self.num_samples = count(num_samples, "num_samples", 0)
        self.batch_size = count(batch_size, "batch_size", 1)
        self.shuffle: ShuffleMode = shuffle
        self.seed = count(seed, "seed", 0)
        self.chunk_rows = None if chunk_rows is None else count(chunk_rows, "chunk_rows", 1)
        if shuffle == "chunk" and self.chunk_rows is None:
            raise ValueError(
                "shuffle='chunk' needs chunk_rows, the samples per chunk of the file; "
                "pass the feature's chunk_rows from the reader, or choose shuffle='full'"
            )
        self.window_chunks = count(window_chunks, "window_chunks", 1)
        self.world_size = count(world_size, "world_size", 1)
        self.rank = count(rank, "rank", 0)
        if self.rank >= self.world_size:
            raise ValueError(f"rank must lie in [0, world_size={self.world_size}); got {self.rank}")
        self.drop_last = bool(drop_last)
        self.fingerprint = fingerprint
        self.lengths: IndexArray | None = None
        #: Global steps per bucketing pool, or None without ``lengths`` (recorded in resume states).
        self.pool_batches: int | None = None
        if lengths is not None:
            sizes = np.asarray(lengths)
            if sizes.ndim != 1 or sizes.shape[0] != self.num_samples or (sizes.size and sizes.dtype.kind not in "iu"):
                raise ValueError(
                    f"lengths must be an integer array of shape ({self.num_samples},), one length per sample "
                    f"(a ragged feature's lengths(), §6.3); got {sizes.dtype} {sizes.shape}"
                )
            self.lengths = sizes.astype(np.int64)
            self.pool_batches = count(pool_batches, "pool_batches", 1)
        #: The shards' sample counts of a sharded split, their number and the shards in flight (None for a file).
        self.shard_sizes = None if shard_sizes is None else check_shard_sizes(shard_sizes, self.num_samples)
        self.shard_count = None if self.shard_sizes is None else len(self.shard_sizes)
        in_flight = count(shards_in_flight, "shards_in_flight", 1)
        self.shards_in_flight = None if self.shard_sizes is None else in_flight

    def __repr__(self) -> str:
        return (
            f"Sampler(num_samples={self.num_samples}, batch_size={self.batch_size}, shuffle={self.shuffle!r}, "
            f"seed={self.seed}, chunk_rows={self.chunk_rows}, window_chunks={self.window_chunks}, "
            f"rank={self.rank}, world_size={self.world_size}, drop_last={self.drop_last}, "
            f"pool_batches={self.pool_batches}, shard_count={self.shard_count}, "
            f"shards_in_flight={self.shards_in_flight})"
        )

    # -- sizes ---------------------------------------------------------------------------------

    @property
    def step_size(self) -> int:
        """Samples of one global step, ``batch_size * world_size``."""
        return self.batch_size * self.world_size

    @property
    def num_batches(self) -> int:
        """Batches per epoch on every rank: ``ceil(N / S)``, or ``N // S`` with ``drop_last``."""
        if self.drop_last:
            return self.num_samples // self.step_size
        return -(-self.num_samples // self.step_size)

    def __len__(self) -> int:
        return self.num_batches

    @property
    def padding(self) -> int:
        """Repeated samples per epoch (all ranks together), ``< world_size``; 0 with ``drop_last``."""
        if self.drop_last or self.num_samples == 0:
            return 0
        tail = self.num_samples - (self.num_batches - 1) * self.step_size
        return self._last_batch_size(tail) * self.world_size - tail

    def _last_batch_size(self, tail: int) -> int:
        return -(-tail // self.world_size)

    # -- orders --------------------------------------------------------------------------------

    @property
    def full_order(self) -> str | None:
        """``"feistel"`` when the ``"full"`` order is a :class:`~h5ml.sampling.permutation.FeistelPermutation`, else None.

        That is ``shuffle="full"`` without ``lengths`` and with more than
        :data:`~h5ml.sampling.permutation.PERMUTATION_ARRAY_LIMIT` samples; a
        resume state records it, so that a state is never resumed with the
        other kind of order.
        """
        big = self.num_samples > PERMUTATION_ARRAY_LIMIT
        return "feistel" if self.shuffle == "full" and self.lengths is None and big else None

    def order(self, epoch: int) -> EpochOrder:
        """Return the order of one epoch in the form that needs least memory (:mod:`h5ml.sampling.epoch_batches`).

        Parameters
        ----------
        epoch
            The epoch number, >= 0.

        Returns
        -------
        EpochOrder
            The same samples at the same positions as :meth:`epoch_order`:
            no array in ``"none"`` mode (without ``lengths``) and in
            ``"full"`` mode when :attr:`full_order` is ``"feistel"``, an
            array of N entries otherwise.

        Raises
        ------
        ValueError
            If ``epoch`` is negative.
        """
        if self.lengths is None and self.shuffle == "none":
            count(epoch, "epoch", 0)
            return IdentityOrder(self.num_samples)
        if self.full_order == "feistel":
            return FeistelPermutation(self.num_samples, epoch_rng(self.seed, epoch))
        return ArrayOrder(self.epoch_order(epoch))

    def epoch_order(self, epoch: int) -> IndexArray:
        """Return the order of all samples in one epoch, before sharding and padding.

        Parameters
        ----------
        epoch
            The epoch number, >= 0.

        Returns
        -------
        numpy.ndarray
            int64, shape ``(num_samples,)``: a permutation of ``0..N-1``,
            deterministic given ``(seed, epoch)`` and the settings. It takes
            8 bytes a sample; :meth:`epoch_batches` does not build it where
            :meth:`order` needs no array.

        Raises
        ------
        ValueError
            If ``epoch`` is negative.
        """
        rng = epoch_rng(self.seed, epoch)
        n = self.num_samples
        if self.shuffle == "none":
            order = np.arange(n, dtype=np.int64)
        elif self.full_order == "feistel":
            perm, order = FeistelPermutation(n, rng), np.empty(n, dtype=np.int64)
            for start in range(0, n, _CHUNK_BLOCK_SAMPLES):  # one array of N entries, small temporaries
                order[start : start + _CHUNK_BLOCK_SAMPLES] = perm.span(start, start + _CHUNK_BLOCK_SAMPLES)
        elif self.shuffle == "full":
            order = rng.permutation(n).astype(np.int64, copy=False)
        else:
            order = self._chunk_order(rng)
        if self.lengths is None or self.pool_batches is None:
            return order
        return bucketed(order, self.lengths, self.step_size, self.pool_batches, rng if self.shuffle != "none" else None)

    def _chunk_order(self, rng: np.random.Generator) -> IndexArray:
        rows, windows = cast(int, self.chunk_rows), self.window_chunks
        if self.shard_sizes is not None:
            return shard_chunk_order(self.shard_sizes, rows, windows, cast(int, self.shards_in_flight), rng)
        n = self.num_samples
        num_chunks = -(-n // rows)
        chunk_order = rng.permutation(num_chunks).astype(np.int64, copy=False)
        order = np.empty(n, dtype=np.int64)
        # Whole windows at a time, about _CHUNK_BLOCK_SAMPLES samples each, so that the temporaries stay small and
        # the epoch takes one array of N entries. The generator draws the same doubles in pieces as at once, so
        # the order is the one the whole-epoch computation gave.
        per_block = max(1, _CHUNK_BLOCK_SAMPLES // (rows * windows)) * windows
        done = 0
        for first_chunk in range(0, num_chunks, per_block):
            block = chunk_order[first_chunk : first_chunk + per_block]
            starts = block * rows
            sizes = np.minimum(rows, n - starts)
            m = int(sizes.sum())
            # Samples chunk after chunk in the shuffled chunk order, then a stable sort by
            # (window, random key) permutes the samples within each window only.
            first = np.cumsum(sizes) - sizes
            by_chunk = np.repeat(starts - first, sizes) + np.arange(m, dtype=np.int64)
            window = np.repeat(np.arange(len(block), dtype=np.int64) // windows, sizes)
            keys = rng.random(m)
            order[done : done + m] = by_chunk[np.lexsort((keys, window))]
            done += m
        return order

    def epoch_batches(self, epoch: int) -> EpochBatches:
        """Return this rank's batches of one epoch as a sequence that computes each batch when asked for.

        Parameters
        ----------
        epoch
            The epoch number, >= 0.

        Returns
        -------
        EpochBatches
            ``num_batches`` batches, equal to those of :meth:`batches`;
            iterating it holds one batch at a time and the epoch's
            :meth:`order` (no array of N entries in ``"none"`` mode, nor in
            ``"full"`` mode above the limit).

        Raises
        ------
        ValueError
            If ``epoch`` is negative.
        """
        order = self.order(epoch)
        kind = EpochBatches if self.shard_sizes is None or self.lengths is not None else ShardedEpochBatches
        return kind(order, self.batch_size, self.rank, self.world_size, self.drop_last, self.num_batches)

    def batches(self, epoch: int) -> list[IndexArray]:
        """Return this rank's batches of one epoch.

        Parameters
        ----------
        epoch
            The epoch number, >= 0.

        Returns
        -------
        list of numpy.ndarray
            ``num_batches`` int64 index arrays of shape ``(batch_size,)``,
            except that with ``drop_last=False`` the last one has
            ``ceil(t / world_size)`` samples (``t`` the samples of the last
            global step). Each is a contiguous piece of the padded epoch order
            (see the module docstring); the reader may get them in any order
            and groups the reads by chunk itself. The list holds the whole
            epoch (O(N) memory): iterate :meth:`epoch_batches` instead to hold
            one batch at a time.

        Raises
        ------
        ValueError
            If ``epoch`` is negative.
        """
        return list(self.epoch_batches(epoch))

    # -- resume (h5ml.sampling.resume) ---------------------------------------------------------

    def state_dict(self, epoch: int, batches_done: int) -> dict[str, Any]:
        """Return the resume state after ``batches_done`` batches of ``epoch`` were handed out.

        Count only the batches given to the training loop, not those that
        workers prefetched.

        Parameters
        ----------
        epoch
            The current epoch, >= 0.
        batches_done
            Batches of this epoch handed to the training loop, in
            ``[0, num_batches]``.

        Returns
        -------
        dict
            Plain ``int``/``str``/``bool``/``None`` values (JSON- and
            pickle-friendly): ``version``, ``fingerprint``, ``seed``,
            ``epoch``, ``batches_done`` and the settings (``num_samples``,
            ``batch_size``, ``shuffle``, ``world_size``, ``drop_last``,
            ``chunk_rows``, ``window_chunks``, ``pool_batches``); those that
            do not decide the order in this shuffle mode (``chunk_rows`` and
            ``window_chunks`` outside ``"chunk"``) are None, so that equal
            orders give equal states (:mod:`h5ml.sampling.resume`); and
            ``full_order`` (:attr:`full_order`).

        Raises
        ------
        ValueError
            If ``epoch`` is negative or ``batches_done`` is out of range.
        """
        return make_state(self, epoch, batches_done)

    def load_state_dict(self, state: Mapping[str, Any]) -> ResumePoint:
        """Check a resume state against this sampler and return where to resume.

        The sampler's ``seed`` is set to the state's, so later epochs continue
        the interrupted run's orders.

        Parameters
        ----------
        state
            A mapping made by :meth:`state_dict` (possibly on another rank, in
            another process, or by the other framework adapter).

        Returns
        -------
        ResumePoint
            The state's epoch and the batches of it already handed out.

        Raises
        ------
        ValueError
            If a key is missing, the version is unknown, the fingerprint
            differs (a state taken on another file or shard index), or a setting
            that decides the order in this sampler's mode differs from this
            sampler's: batch size, shuffle mode, world size, sample count,
            drop_last, pool_batches and shard_count always, chunk_rows,
            window_chunks and shards_in_flight in ``"chunk"`` mode
            (:func:`h5ml.sampling.resume.order_settings`).
        """
        seed, point = check_state(self, state)
        self.seed = seed
        return point

    def remaining_batches(self, state: Mapping[str, Any]) -> list[IndexArray]:
        """Return this rank's batches of the state's epoch that had not been handed out.

        Parameters
        ----------
        state
            A mapping made by :meth:`state_dict`.

        Returns
        -------
        list of numpy.ndarray
            ``batches(epoch)[batches_done:]``: concatenated after the batches
            already handed out they equal an uninterrupted epoch.

        Raises
        ------
        ValueError
            As :meth:`load_state_dict`.
        """
        point = self.load_state_dict(state)
        return self.epoch_batches(point.epoch)[point.batches_done :]
