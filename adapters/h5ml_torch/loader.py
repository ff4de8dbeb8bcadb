"""The fast ``DataLoader`` set-up, plus a count of the batches handed to the training loop for resume.

A ``DataLoader`` prefetches batches in its workers, so neither the dataset
nor the sampler knows how many batches the training loop has received:
:class:`H5MLLoader` records what it yields on the sampler's epoch cursor
(:class:`h5ml.sampling.EpochCursor`), whose state is then exact.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from torch.utils.data import DataLoader

from h5ml_torch.collate import collate
from h5ml_torch.dataset import H5MLDataset
from h5ml_torch.sampler import H5MLBatchSampler

__all__ = ["H5MLLoader"]


class H5MLLoader:
    """``DataLoader(dataset, batch_sampler=sampler, collate_fn=collate)`` that records the batches handed out.

    Parameters
    ----------
    dataset
        The dataset to read.
    sampler
        Its batch sampler (this rank's batches).
    collate_fn
        Default :func:`h5ml_torch.collate.collate`.
    **loader_options
        Passed to ``torch.utils.data.DataLoader`` (``num_workers``,
        ``persistent_workers``, ``pin_memory`` ...); not ``batch_size``,
        ``shuffle``, ``sampler`` or ``drop_last``, which the sampler owns.

    Notes
    -----
    Resume, after the training step on the last batch counted::

        state = loader.state_dict()       # after k batches reached the loop
        ...                               # new process, any num_workers
        loader.load_state_dict(state)
        for batch in loader: ...          # the batches not handed out before
    """

    def __init__(
        self,
        dataset: H5MLDataset,
        sampler: H5MLBatchSampler,
        collate_fn: Callable[[Sequence[dict[str, Any]]], Any] = collate,
        **loader_options: Any,
    ) -> None:
        self.dataset = dataset
        self.sampler = sampler
        self.dataloader: DataLoader[dict[str, Any]] = DataLoader(
            dataset, batch_sampler=sampler, collate_fn=collate_fn, **loader_options
        )

    def __len__(self) -> int:
        return len(self.dataloader)

    def __iter__(self) -> Iterator[Any]:
        """Yield the collated batches of the sampler's current epoch, recording each one handed out."""
        return self.sampler.hand_out_each(self.dataloader)

    @property
    def batches_done(self) -> int:
        """Batches of the current epoch handed to the training loop (:attr:`h5ml.sampling.EpochCursor.batches_done`)."""
        return self.sampler.batches_done

    def set_epoch(self, epoch: int) -> None:
        """Select the epoch of the next iteration (:meth:`h5ml.sampling.EpochCursor.set_epoch`)."""
        self.sampler.set_epoch(epoch)

    def state_dict(self) -> dict[str, Any]:
        """Return the resume state after :attr:`batches_done` batches (:meth:`h5ml.sampling.EpochCursor.state_dict`)."""
        return self.sampler.state_dict(self.batches_done)

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Resume from ``state`` (of either adapter): the next iteration yields the batches not handed out.

        Raises
        ------
        ValueError
            If the state belongs to another file or other settings
            (:meth:`h5ml.sampling.EpochCursor.load_state_dict`).
        """
        self.sampler.load_state_dict(state)
