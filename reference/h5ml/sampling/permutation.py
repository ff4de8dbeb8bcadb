"""A seeded bijection of ``[0, N)`` computed position by position: the ``"full"`` shuffle of epochs too large for one permutation array (issue 14).

Below :data:`PERMUTATION_ARRAY_LIMIT` samples, a ``"full"`` epoch order is
``rng.permutation(N)`` (:class:`h5ml.sampling.Sampler`): one int64 array of
N entries, 8 bytes a sample. Above it, that array alone would take more than
512 MiB (2 GiB at 2**28 samples), so the order is
:class:`FeistelPermutation` instead: a bijection of ``[0, N)`` that maps the
positions of one batch to their samples without any array of N entries. It
is

- a balanced Feistel network of :data:`ROUNDS` rounds over ``b``-bit words,
  ``b`` the smallest even number of bits with ``2**b >= N`` (at least 2), so
  a permutation of ``[0, 2**b)`` whatever its round function; each round
  function is a 64-bit integer mixer of the right half and a round key,
  masked to ``b/2`` bits;
- restricted to ``[0, N)`` by cycle walking: a value ``>= N`` is encrypted
  again until it falls below N. A permutation of ``[0, 2**b)`` restricted that
  way is a permutation of ``[0, N)`` (each cycle of the big permutation that
  meets ``[0, N)`` keeps its members below N in the same cyclic order), and
  since ``2**b < 4 N`` a position needs fewer than 4 encryptions on average.

The round keys are the first :data:`ROUNDS` 64-bit integers drawn from the
epoch's generator (:func:`h5ml.sampling.seeds.epoch_rng`), so the order
depends only on ``(seed, epoch, N)``: the same in every process, on every
rank and after a resume, and every sample appears exactly once per epoch.
Integer arithmetic only (unsigned 64-bit, wrapping), so every platform gives
the same order.
"""

from __future__ import annotations

from typing import Final

import numpy as np
import numpy.typing as npt

from h5ml.sampling.counts import count

__all__ = ["PERMUTATION_ARRAY_LIMIT", "ROUNDS", "FeistelPermutation"]

#: Samples above which a ``"full"`` epoch order is a :class:`FeistelPermutation`, not an array (2**26: 512 MiB of int64).
PERMUTATION_ARRAY_LIMIT: Final = 1 << 26
#: Rounds of the Feistel network (each with its own 64-bit key).
ROUNDS: Final = 6

IndexArray = npt.NDArray[np.int64]
_WORDS = npt.NDArray[np.uint64]
#: Odd multipliers of the round function's mixer (those of SplitMix64's finaliser).
_MIX1: Final = np.uint64(0xBF58476D1CE4E5B9)
_MIX2: Final = np.uint64(0x94D049BB133111EB)


class FeistelPermutation:
    """A seeded permutation of ``[0, N)``, computed for any positions without an array of N entries.

    Parameters
    ----------
    n
        N, the size of the domain, >= 0.
    rng
        The generator its :data:`ROUNDS` round keys are drawn from (the
        epoch's, :func:`h5ml.sampling.seeds.epoch_rng`); the permutation
        depends only on ``n`` and those keys.

    Notes
    -----
    ``perm.take(positions)`` gives the samples at those positions of the
    order; ``perm.span(start, stop)`` those of ``[start, stop)``. Memory is
    a few arrays of the size of the request (see the module docstring).
    """

    def __init__(self, n: int, rng: np.random.Generator) -> None:
        self.n = count(n, "n", 0)
        bits = max(2, (self.n - 1).bit_length())
        bits += bits & 1
        self._half = np.uint64(bits // 2)
        self._mask = np.uint64((1 << (bits // 2)) - 1)
        self._keys = rng.integers(0, np.iinfo(np.uint64).max, size=ROUNDS, dtype=np.uint64, endpoint=True)

    def __len__(self) -> int:
        return self.n

    def __repr__(self) -> str:
        return f"FeistelPermutation(n={self.n}, bits={2 * int(self._half)})"

    def _round(self, right: _WORDS, key: np.uint64) -> _WORDS:
        x = (right ^ key) * _MIX1
        x ^= x >> np.uint64(30)
        x *= _MIX2
        x ^= x >> np.uint64(31)
        return x & self._mask

    def _encrypt(self, words: _WORDS) -> _WORDS:
        left, right = words >> self._half, words & self._mask
        for key in self._keys:
            left, right = right, left ^ self._round(right, key)
        return (left << self._half) | right

    def take(self, positions: npt.ArrayLike) -> IndexArray:
        """Return the samples at ``positions`` of the order.

        Parameters
        ----------
        positions
            Integer array of positions in ``[0, N)``, any shape.

        Returns
        -------
        numpy.ndarray
            int64 of the shape of ``positions``: distinct positions give
            distinct samples, all in ``[0, N)``.

        Raises
        ------
        IndexError
            If a position lies outside ``[0, N)``.
        """
        where = np.asarray(positions, dtype=np.int64)
        if where.size and (int(where.min()) < 0 or int(where.max()) >= self.n):
            raise IndexError(f"positions must lie in [0, {self.n}); got [{int(where.min())}, {int(where.max())}]")
        words = self._encrypt(where.astype(np.uint64).reshape(-1))
        # Cycle walking: encrypt again what lies outside [0, N) until it lands inside (see the module docstring).
        outside = np.flatnonzero(words >= np.uint64(self.n))
        while outside.size:
            words[outside] = self._encrypt(words[outside])
            outside = outside[words[outside] >= np.uint64(self.n)]
        return words.astype(np.int64).reshape(where.shape)

    def span(self, start: int, stop: int) -> IndexArray:
        """Return the samples at positions ``[start, stop)`` (clipped to ``[0, N)``), as :meth:`take`."""
        return self.take(np.arange(max(0, start), min(stop, self.n), dtype=np.int64))
