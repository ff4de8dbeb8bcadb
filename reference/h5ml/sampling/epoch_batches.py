"""One rank's batches of one epoch, computed one at a time from the epoch order (:class:`EpochBatches`; issue 14).

:meth:`h5ml.sampling.Sampler.epoch_batches` returns an :class:`EpochBatches`:
a sequence whose batch ``k`` is computed when asked for, as a piece of the
epoch order (the layout of steps, shards and padding is the module docstring
of :mod:`h5ml.sampling.orders`). Iterating it holds one batch at a time, so
a sampler's memory does not grow with the number of batches; the order
itself is one of

- :class:`ArrayOrder`: an int64 array of the N samples (the ``"chunk"`` mode,
  length buckets, and ``"full"`` up to
  :data:`h5ml.sampling.permutation.PERMUTATION_ARRAY_LIMIT` samples): a batch
  is a view of it, exactly the arrays ``Sampler.batches`` always gave;
- :class:`IdentityOrder`: file order (``"none"``), no array at all;
- :class:`h5ml.sampling.permutation.FeistelPermutation`: ``"full"`` above
  the limit, no array of N entries.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Protocol, overload

import numpy as np
import numpy.typing as npt

__all__ = ["ArrayOrder", "EpochBatches", "EpochOrder", "IdentityOrder"]

IndexArray = npt.NDArray[np.int64]


class EpochOrder(Protocol):
    """An epoch order of N samples: the samples at given positions (``take``) or at a range of them (``span``)."""

    def __len__(self) -> int:
        """N, the samples of the epoch."""
        ...

    def take(self, positions: npt.ArrayLike) -> IndexArray:
        """The samples at ``positions`` (int64, the shape of ``positions``)."""
        ...

    def span(self, start: int, stop: int) -> IndexArray:
        """The samples at positions ``[start, stop)``, clipped to ``[0, N)``."""
        ...


class ArrayOrder:
    """An epoch order held as an int64 array ``(N,)``; ``span`` gives views of it.

    Parameters
    ----------
    order
        int64 ``(N,)``, a permutation of ``0..N-1``.
    """

    def __init__(self, order: IndexArray) -> None:
        self.order = order

    def __len__(self) -> int:
        return len(self.order)

    def take(self, positions: npt.ArrayLike) -> IndexArray:
        """The samples at ``positions``."""
        return self.order[np.asarray(positions, dtype=np.int64)]

    def span(self, start: int, stop: int) -> IndexArray:
        """A view of the order at ``[start, stop)``."""
        return self.order[start:stop]


class IdentityOrder:
    """File order ``0, 1, ..., N-1`` without an array: position ``p`` is sample ``p``.

    Parameters
    ----------
    n
        N, the samples of the epoch.
    """

    def __init__(self, n: int) -> None:
        self.n = n

    def __len__(self) -> int:
        return self.n

    def take(self, positions: npt.ArrayLike) -> IndexArray:
        """The samples at ``positions``: the positions themselves."""
        return np.array(positions, dtype=np.int64)

    def span(self, start: int, stop: int) -> IndexArray:
        """``arange(start, stop)``, clipped to ``[0, N)``."""
        return np.arange(max(0, start), min(stop, self.n), dtype=np.int64)


class EpochBatches(Sequence[IndexArray]):
    """This rank's batches of one epoch, each computed from the order when asked for.

    Parameters
    ----------
    order
        The epoch order, before sharding and padding.
    batch_size, rank, world_size, drop_last
        As :class:`h5ml.sampling.Sampler`.
    num_batches
        Batches per rank (``Sampler.num_batches``).

    Notes
    -----
    Batch ``k < num_batches - 1`` is positions ``[k S + r B, k S + (r+1) B)``
    of the order (``S = B * world_size``); the last one is padded as the
    module docstring of :mod:`h5ml.sampling.orders` says. Each is a new or
    a viewed int64 array; nothing is kept between calls.
    """

    def __init__(
        self, order: EpochOrder, batch_size: int, rank: int, world_size: int, drop_last: bool, num_batches: int
    ) -> None:
        self.order = order
        self.batch_size = batch_size
        self.rank = rank
        self.world_size = world_size
        self.drop_last = drop_last
        self.num_batches = num_batches

    def __len__(self) -> int:
        return self.num_batches

    @overload
    def __getitem__(self, index: int) -> IndexArray: ...

    @overload
    def __getitem__(self, index: slice) -> list[IndexArray]: ...

    def __getitem__(self, index: int | slice) -> IndexArray | list[IndexArray]:
        if isinstance(index, slice):
            return [self.batch(k) for k in range(*index.indices(self.num_batches))]
        k = int(index)
        if not -self.num_batches <= k < self.num_batches:
            raise IndexError(f"batch {k} is outside the {self.num_batches} batches of this epoch")
        return self.batch(k % self.num_batches)

    def __iter__(self) -> Iterator[IndexArray]:
        for k in range(self.num_batches):
            yield self.batch(k)

    def batch(self, k: int) -> IndexArray:
        """Return batch ``k`` in ``[0, num_batches)`` (see the class notes)."""
        step, size, n = self.batch_size * self.world_size, self.batch_size, len(self.order)
        start = k * step
        if k < self.num_batches - 1:
            piece = self.order.span(start + self.rank * size, start + (self.rank + 1) * size)
            return np.ascontiguousarray(piece, dtype=np.int64)
        tail = n - start
        if self.drop_last or tail >= step:
            piece = self.order.span(start + self.rank * size, start + (self.rank + 1) * size)
            return np.ascontiguousarray(piece, dtype=np.int64)
        # The last global step, padded to world_size * last samples by repeating the first ones of the order
        # (cyclically when N < world_size): padded position p is order[start + p] for p < tail, then
        # order[(p - tail) % N].
        last = -(-tail // self.world_size)
        where = np.arange(self.rank * last, (self.rank + 1) * last, dtype=np.int64)
        positions = np.where(where < tail, start + where, (where - tail) % n)
        return np.ascontiguousarray(self.order.take(positions), dtype=np.int64)
