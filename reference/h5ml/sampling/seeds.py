"""Seeds: the shuffle on write (one seed width, one permutation for the writer and every converter, §7.6), and each training epoch's generator.

A writer that shuffles a split stores its samples in a seeded random order and
records the seed as the split's ``shuffle_seed`` (§5.3, §7.6). The order is
``numpy.random.default_rng(seed).permutation(n)``: anyone with numpy can
rebuild it from the attribute. A seed that the user does not give is drawn
from the operating system's entropy, 63 bits wide, so that it fits the int64
attribute; the same width for :func:`h5ml.write` and every converter.

The orders of training epochs (:class:`h5ml.sampling.Sampler`, and
:func:`h5ml.sampling.bucket_by_length`) draw from :func:`epoch_rng`, whose
stream depends only on the run's seed and the epoch number.
"""

from __future__ import annotations

from typing import Final

import numpy as np
import numpy.typing as npt

from h5ml.sampling.counts import count

__all__ = ["SEED_BITS", "draw_seed", "epoch_rng", "write_order"]

#: Bits of a drawn seed: the largest width whose values are all non-negative int64 (``shuffle_seed``, §5.3).
SEED_BITS: Final = 63


def draw_seed() -> int:
    """Return a fresh seed from the operating system's entropy, in ``[0, 2**63)`` (§7.6).

    Returns
    -------
    int
        A non-negative seed that fits the int64 attribute ``shuffle_seed``.
    """
    state = np.random.SeedSequence().generate_state(1, dtype=np.uint64)[0]
    return int(state >> np.uint64(64 - SEED_BITS))


def write_order(n: int, seed: int) -> npt.NDArray[np.int64]:
    """Return the order in which a split of ``n`` samples shuffled with ``seed`` is stored (§7.6).

    Parameters
    ----------
    n
        The number of samples, >= 0.
    seed
        The seed recorded as ``shuffle_seed`` (any non-negative integer numpy accepts).

    Returns
    -------
    numpy.ndarray
        int64 ``(n,)``: ``numpy.random.default_rng(seed).permutation(n)``; stored row ``i`` is source sample
        ``order[i]``.

    Raises
    ------
    ValueError
        If ``n`` or ``seed`` is negative.
    """
    if n < 0:
        raise ValueError(f"a split holds n >= 0 samples, got {n}")
    return np.random.default_rng(seed).permutation(n).astype(np.int64, copy=False)


def epoch_rng(seed: int, epoch: int) -> np.random.Generator:
    """Return the random generator of one epoch.

    Parameters
    ----------
    seed
        The run's seed, an integer >= 0.
    epoch
        The epoch number, an integer >= 0.

    Returns
    -------
    numpy.random.Generator
        ``default_rng(SeedSequence((seed, epoch)))``: the same stream for the
        same pair, independent streams for different pairs.

    Raises
    ------
    ValueError
        If ``seed`` or ``epoch`` is negative.
    TypeError
        If either is not an integer.
    """
    return np.random.default_rng(np.random.SeedSequence((count(seed, "seed", 0), count(epoch, "epoch", 0))))
