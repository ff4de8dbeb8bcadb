"""The fast ``DataLoader`` set-up, plus a count of the batches handed to the training loop for resume.

A ``DataLoader`` prefetches batches in its workers, so neither the dataset
nor the sampler knows how many batches the training loop has received.
:class:`H5MLLoader` iterates the ``DataLoader`` and counts what it yields;
its :meth:`~H5MLLoader.state_dict` is the sampler's state at that count.
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
    """``DataLoader(dataset, batch_sampler=sampler, collate_fn=collate)`` that counts batches handed out.

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
        ``multiprocessing_context``, ``persistent_workers``,
        ``pin_memory``, ``prefetch_factor`` ...); not ``batch_size``,
        ``shuffle``, ``sampler`` or ``drop_last``, which the sampler owns.

    Notes
    -----
    Each worker receives a whole batch of indices and reads it with one
    reader call (``H5MLDataset.__getitems__``). Resume::

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
        self._start = 0
        self._count = 0

    def __len__(self) -> int:
        return len(self.dataloader)

    def __iter__(self) -> Iterator[Any]:
        """Yield the collated batches of the sampler's current epoch, counting each one handed out."""
        self._start, self._count = self.sampler.resume_from, 0
        for batch in self.dataloader:
            self._count += 1
            yield batch

    @property
    def batches_done(self) -> int:
        """Batches of the current epoch handed to the training loop so far (counted from the epoch start).

        A batch counts as soon as it is yielded: take the state after the
        training step on it, so that a resume does not repeat it.
        """
        return self._start + self._count

    def set_epoch(self, epoch: int) -> None:
        """Select the epoch of the next iteration (see :meth:`H5MLBatchSampler.set_epoch`)."""
        self.sampler.set_epoch(epoch)
        self._start = self._count = 0

    def state_dict(self) -> dict[str, Any]:
        """Return the resume state: the current epoch with :attr:`batches_done` batches handed out.

        Returns
        -------
        dict
            See :meth:`h5ml.sampling.Sampler.state_dict`.
        """
        return self.sampler.state_dict(self.batches_done)

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Resume from ``state``: the next iteration yields the batches not handed out.

        Raises
        ------
        ValueError
            If the state belongs to another file or other settings.
        """
        self.sampler.load_state_dict(state)
        self._start, self._count = self.sampler.resume_from, 0
