"""Length buckets: batches of samples of similar length, from the lengths alone (§6.3).

Padding a ragged batch to its longest sample (:mod:`h5ml.sampling.padding`)
wastes little when the batch's samples have similar lengths. The lengths
come from a ragged or bytes feature's offsets alone (``Feature.lengths()``,
no payload read). :func:`bucket_by_length` gives such batches for one process;
:class:`h5ml.sampling.Sampler` with ``lengths`` and ``pool_batches`` builds
its epoch orders with :func:`bucketed`, so that bucketing works with shards,
equal batch counts and resume.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from h5ml.sampling.counts import count
from h5ml.sampling.seeds import epoch_rng

__all__ = ["bucket_by_length", "bucketed"]

IndexArray = npt.NDArray[np.int64]


def bucket_by_length(
    lengths: npt.ArrayLike,
    batch_size: int,
    seed: int,
    epoch: int,
    *,
    pool_batches: int = 32,
) -> list[IndexArray]:
    """Group samples of similar length into batches, from the lengths alone (§6.3).

    The samples are shuffled, cut into pools of ``pool_batches * batch_size``
    samples, each pool is sorted by length (stable) and cut into batches, and
    the order of all batches is shuffled. Within a pool the batches hold
    consecutive lengths, so padding to the longest sample of a batch wastes
    little; the pools keep the epochs random. It does not shard: give each
    rank its own share of the samples first, or use it with one rank.

    Parameters
    ----------
    lengths
        Integer array of shape ``(N,)``, the length of each sample
        (``numpy.diff(offsets)`` of a ragged feature, no payload read).
    batch_size
        Samples per batch, >= 1; the last batch of each pool may be shorter.
    seed, epoch
        Select the random generator (:func:`h5ml.sampling.epoch_rng`), both >= 0.
    pool_batches
        Batches per pool, >= 1. ``pool_batches >= ceil(N / batch_size)`` sorts
        the whole epoch at once (tightest buckets).

    Returns
    -------
    list of numpy.ndarray
        int64 index arrays; each sample appears in exactly one of them.

    Raises
    ------
    ValueError
        If ``lengths`` is not one-dimensional, or a count is out of range.
    """
    sizes = np.asarray(lengths)
    if sizes.ndim != 1:
        raise ValueError(f"lengths must be a 1-D array of per-sample lengths, got shape {sizes.shape}")
    batch_size = count(batch_size, "batch_size", 1)
    pool_batches = count(pool_batches, "pool_batches", 1)
    rng = epoch_rng(seed, epoch)
    order = rng.permutation(len(sizes)).astype(np.int64, copy=False)
    out: list[IndexArray] = []
    pool = pool_batches * batch_size
    for start in range(0, len(order), pool):  # pools sorted one by one, so each last batch stays in its pool
        members = bucketed(order[start : start + pool], sizes, batch_size, pool_batches, None)
        out.extend(members[i : i + batch_size] for i in range(0, len(members), batch_size))
    return [out[i] for i in rng.permutation(len(out))]


def bucketed(
    order: IndexArray, lengths: npt.NDArray[Any], step: int, pool_batches: int, rng: np.random.Generator | None
) -> IndexArray:
    """Reorder an epoch so that each step of ``step`` samples holds samples of similar length.

    ``order`` is cut into pools of ``pool_batches * step`` samples; each pool
    is sorted by length (stable, so ties keep the shuffled order) and cut into
    steps. With ``rng``, the whole steps are then shuffled (a shorter last step
    stays last, so sharding and padding are unchanged); without, they stay in
    pool order.

    Parameters
    ----------
    order
        int64 ``(N,)``: the epoch order before bucketing.
    lengths
        Integer ``(N,)``: each sample's length, indexed by sample.
    step
        Samples per step (``batch_size * world_size``), >= 1.
    pool_batches
        Steps per pool, >= 1.
    rng
        Generator that shuffles the whole steps, or None to keep them in pool order.

    Returns
    -------
    numpy.ndarray
        int64 ``(N,)``: a permutation of ``order``.
    """
    pool = pool_batches * step
    parts = [order[i : i + pool] for i in range(0, len(order), pool)]
    ordered = np.concatenate([p[np.argsort(lengths[p], kind="stable")] for p in parts]) if parts else order
    whole = len(ordered) // step
    if rng is None or whole < 2:
        return ordered
    steps = ordered[: whole * step].reshape(whole, step)[rng.permutation(whole)]
    return np.concatenate([steps.reshape(-1), ordered[whole * step :]])
