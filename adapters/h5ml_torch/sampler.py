"""A batch sampler for ``DataLoader(batch_sampler=...)`` over :class:`h5ml.sampling.Sampler`.

Orders, shuffle modes, shards and resume states all come from
:mod:`h5ml.sampling` (shared with the Keras adapter); this module only adds
what PyTorch needs: the ``torch.distributed`` rank and world size, the
``set_epoch`` convention, and iteration that starts where a loaded resume
state left off.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import numpy.typing as npt
import torch.distributed as dist
from torch.utils.data import Sampler as TorchSampler

from h5ml.sampling import Sampler, ShuffleMode
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


class H5MLBatchSampler(TorchSampler[list[int]]):
    """This rank's batches of sample indices, one list per batch, for ``DataLoader(batch_sampler=...)``.

    Parameters
    ----------
    source
        An :class:`~h5ml_torch.dataset.H5MLDataset` (its length, the
        ``chunk_rows`` of its first dense feature, §7.1, and the file's
        fingerprint, §8.3, are used) or a sample count N.
    batch_size
        Samples per batch on each rank, >= 1.
    shuffle
        ``"none"`` (file order), ``"chunk"`` (chunks in random order, samples
        permuted within windows of ``window_chunks`` chunks: near-sequential
        reads) or ``"full"`` (a uniform permutation: the best shuffle, random
        reads). See :mod:`h5ml.sampling`.
    seed
        Seed of the shuffles; the order of an epoch depends only on
        ``(seed, epoch)`` and the settings.
    drop_last
        Drop the incomplete last global step instead of padding it with
        repeated samples; either way every rank gets the same number of
        batches (see :mod:`h5ml.sampling`).
    rank, world_size
        This process's rank and the number of ranks; when None, read from
        ``torch.distributed`` if it is initialised, else 0 and 1.
    chunk_rows
        Samples per chunk for ``"chunk"`` mode; default: from ``source``.
    window_chunks
        Chunks per shuffle window in ``"chunk"`` mode.
    fingerprint
        The file's fingerprint, when ``source`` is a count (checked on resume).
    bucket_by
        Name of a ragged or bytes feature of ``source``: batches hold samples
        of similar length, read from its offsets alone (no payload, §6.3),
        so that :func:`~h5ml_torch.collate.collate` pads little. See
        ``lengths`` in :class:`h5ml.sampling.Sampler`.
    lengths
        Per-sample lengths (N,) to bucket by, when ``source`` is a count.
    pool_batches
        Global steps per bucketing pool (with ``bucket_by`` or ``lengths``).

    Raises
    ------
    ValueError, TypeError
        As :class:`h5ml.sampling.Sampler` (bad counts, unknown mode, rank out
        of range, ``"chunk"`` without chunk rows).

    Notes
    -----
    Call :meth:`set_epoch` before each epoch (as with
    ``DistributedSampler``). To resume mid-epoch, the state must count the
    batches handed to the training loop, which a sampler cannot see (the
    ``DataLoader`` prefetches): use :class:`h5ml_torch.loader.H5MLLoader`,
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
        if isinstance(source, H5MLDataset):
            num_samples = len(source)
            if chunk_rows is None:
                chunk_rows = source.chunk_rows()
            fingerprint = source.fingerprint
            if bucket_by is not None:
                lengths = source.lengths(bucket_by)
        else:
            num_samples = source
            if bucket_by is not None:
                raise TypeError(f"bucket_by={bucket_by!r} needs an H5MLDataset source; pass lengths= with a count")
        rank, world_size = distributed_rank(rank, world_size)
        self.sampler = Sampler(
            num_samples,
            batch_size,
            shuffle=shuffle,
            seed=seed,
            chunk_rows=chunk_rows,
            window_chunks=window_chunks,
            rank=rank,
            world_size=world_size,
            drop_last=drop_last,
            fingerprint=fingerprint,
            lengths=lengths,
            pool_batches=pool_batches,
        )
        self.epoch = 0
        self._skip = 0  # batches of self.epoch already handed out (set by load_state_dict)

    def __repr__(self) -> str:
        return f"H5MLBatchSampler({self.sampler!r}, epoch={self.epoch})"

    def set_epoch(self, epoch: int) -> None:
        """Select the epoch whose order the next iteration yields (>= 0); forgets a loaded resume point."""
        if epoch < 0:
            raise ValueError(f"epoch must be >= 0, got {epoch}")
        self.epoch = int(epoch)
        self._skip = 0

    @property
    def resume_from(self) -> int:
        """Batches of the current epoch the next iteration skips (non-zero only after a resume)."""
        return self._skip

    def __len__(self) -> int:
        """Batches the next iteration yields: all of an epoch, or those left after a resume."""
        return self.sampler.num_batches - self._skip

    def __iter__(self) -> Iterator[list[int]]:
        """Yield this rank's batches of the current epoch, from the resume point after a load (until :meth:`set_epoch`)."""
        # The resume point stays until set_epoch: a DataLoader with workers calls iter() twice per epoch.
        batches = self.sampler.batches(self.epoch)[self._skip :]
        return iter([b.tolist() for b in batches])

    def state_dict(self, batches_done: int) -> dict[str, Any]:
        """Return the resume state after ``batches_done`` batches of the current epoch reached the training loop.

        Parameters
        ----------
        batches_done
            Batches of the current epoch handed to the training loop, counted
            from the start of the epoch (not from a resume point), in
            ``[0, num_batches]``.

        Returns
        -------
        dict
            :meth:`h5ml.sampling.Sampler.state_dict`: plain values with the
            seed, epoch, ``batches_done``, settings and file fingerprint.

        Raises
        ------
        ValueError
            If ``batches_done`` is out of range.
        """
        return self.sampler.state_dict(self.epoch, batches_done)

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Resume: iterations yield the state's epoch from its first batch not handed out, until :meth:`set_epoch`.

        Raises
        ------
        ValueError
            If the state was taken on another file (fingerprint, §8.3) or
            with other settings (see :meth:`h5ml.sampling.Sampler.load_state_dict`).
        """
        point = self.sampler.load_state_dict(state)
        self.epoch, self._skip = point.epoch, point.batches_done
