"""A batch sampler for ``DataLoader(batch_sampler=...)``: an :class:`h5ml.sampling.EpochCursor` over this rank's batches.

Orders, shuffle modes, shards, the epoch cursor and resume states come from
:mod:`h5ml.sampling` (shared with the Keras adapter: a state saved by one
resumes in the other); this module adds the ``torch.distributed`` rank and
world size, and iteration as lists of indices, one batch at a time.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy.typing as npt
import torch.distributed as dist
from torch.utils.data import Sampler as TorchSampler

from h5ml.reader.source import sampler_of
from h5ml.sampling import EpochCursor, ShuffleMode
from h5ml_torch.dataset import H5MLDataset

__all__ = ["H5MLBatchSampler", "distributed_rank"]


def distributed_rank(rank: int | None, world_size: int | None) -> tuple[int, int]:
    """Return ``(rank, world_size)``: each given value, else ``torch.distributed``'s, else 0 and 1.

    Parameters
    ----------
    rank, world_size
        Explicit values, or None to read them from an initialised
        ``torch.distributed`` process group (0 and 1 without one).

    Returns
    -------
    tuple of int
        ``(rank, world_size)``; their range is checked by :class:`h5ml.sampling.Sampler`.
    """
    initialised = dist.is_available() and dist.is_initialized()
    if rank is None:
        rank = dist.get_rank() if initialised else 0
    if world_size is None:
        world_size = dist.get_world_size() if initialised else 1
    return rank, world_size


class H5MLBatchSampler(EpochCursor, TorchSampler[list[int]]):
    """This rank's batches of sample indices, one list per batch, for ``DataLoader(batch_sampler=...)``.

    Parameters
    ----------
    source
        An :class:`~h5ml_torch.dataset.H5MLDataset` (the file gives the
        sample count, chunk rows, fingerprint and lengths:
        :meth:`h5ml.reader.source.SplitSource.sampler`) or a sample count N.
    batch_size, shuffle, seed, drop_last, chunk_rows, window_chunks, pool_batches
        As :class:`h5ml.sampling.Sampler` (``chunk_rows`` by default from ``source``).
    rank, world_size
        This process's rank and the number of ranks; when None, read from
        ``torch.distributed`` if it is initialised, else 0 and 1.
    fingerprint, lengths
        When ``source`` is a count: the file's fingerprint (checked on
        resume) and per-sample lengths (N,) to bucket by.
    bucket_by
        Name of a ragged or bytes feature of ``source``: batches hold samples
        of similar length, from its offsets alone (§6.3).

    Raises
    ------
    ValueError, TypeError
        As :class:`h5ml.sampling.Sampler`; TypeError for ``bucket_by`` with a count.

    Notes
    -----
    An :class:`h5ml.sampling.EpochCursor`: call :meth:`set_epoch` before each
    epoch (as with ``DistributedSampler``). The ``DataLoader`` prefetches, so
    count the batches the loop received with :class:`h5ml_torch.loader.H5MLLoader`,
    or count them yourself and call ``state_dict(batches_done=k)``.
    """

    def __init__(
        self,
        source: H5MLDataset | int,
        batch_size: int,
        *,
        shuffle: ShuffleMode = "none",
        seed: int = 0,
        drop_last: bool = False,
        rank: int | None = None,
        world_size: int | None = None,
        chunk_rows: int | None = None,
        window_chunks: int = 8,
        fingerprint: str | None = None,
        bucket_by: str | None = None,
        lengths: npt.ArrayLike | None = None,
        pool_batches: int = 32,
    ) -> None:
        rank, world_size = distributed_rank(rank, world_size)
        settings: dict[str, Any] = {"shuffle": shuffle, "seed": seed, "drop_last": drop_last, "rank": rank}
        settings |= {"world_size": world_size, "chunk_rows": chunk_rows, "window_chunks": window_chunks}
        settings |= {"fingerprint": fingerprint, "bucket_by": bucket_by, "lengths": lengths}
        sampler = sampler_of(source, batch_size, pool_batches=pool_batches, split_kind="an H5MLDataset", **settings)
        EpochCursor.__init__(self, sampler)

    def __iter__(self) -> Iterator[list[int]]:
        """This rank's batches left in the epoch (from the resume point), each computed when asked (one in memory)."""
        # The resume point stays until set_epoch: a DataLoader with workers calls iter() twice per epoch.
        return (batch.tolist() for batch in self.iter_batches())
