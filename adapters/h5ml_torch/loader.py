"""The fast ``DataLoader`` set-up, or batches read in threads of this process; a count of the batches handed out.

A ``DataLoader`` prefetches in its workers, so neither the dataset nor the sampler knows how many batches the
training loop received: :class:`H5MLLoader` records what it yields on the sampler's epoch cursor
(:class:`h5ml.reader.readahead.CursorLoader`), whose state is then exact.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import torch
from torch.utils.data import DataLoader
from torch.utils.data._utils.pin_memory import pin_memory

from h5ml.reader.readahead import CursorBatches, CursorLoader
from h5ml_torch.collate import collate
from h5ml_torch.dataset import H5MLDataset
from h5ml_torch.sampler import H5MLBatchSampler

__all__ = ["H5MLLoader"]


class H5MLLoader(CursorLoader):
    """``DataLoader(dataset, batch_sampler=sampler, collate_fn=collate)``, or threads; records the batches handed out.

    Parameters
    ----------
    dataset
        The dataset to read.
    sampler
        Its batch sampler (this rank's batches).
    collate_fn
        Default :func:`h5ml_torch.collate.collate`.
    threads
        0 (default): a ``DataLoader``. N >= 1: read and collate each batch in
        one of N threads of this process, with ``2 * N`` batches read ahead;
        batch ``i`` is the sampler's batch ``i`` whatever thread finished first.
    **loader_options
        Passed to ``torch.utils.data.DataLoader`` (``num_workers``,
        ``persistent_workers``, ``pin_memory`` ...); not ``batch_size``,
        ``shuffle``, ``sampler`` or ``drop_last``, which the sampler owns. With
        ``threads``, only ``pin_memory`` (done in the reading thread; without
        an accelerator it warns and is ignored, as in ``DataLoader``).

    Raises
    ------
    ValueError
        If ``threads`` is negative, or given with a ``DataLoader`` option
        other than ``pin_memory`` (``num_workers`` ...).

    Notes
    -----
    Choose threads when reading and collating is the work (no batch is pickled
    across processes; the reader releases the GIL in its copies and inflation;
    ``benchmarks/bench_loaders.py``), worker processes (``num_workers``) for
    heavy per-sample Python transforms, which hold the GIL. Both give the same
    batches, epochs, ranks and resume states.

    Resume, after the training step on the last batch counted::

        state = loader.state_dict()       # after k batches reached the loop
        ...                               # new process, any num_workers or threads
        loader.load_state_dict(state)
        for batch in loader: ...          # the batches not handed out before
    """

    def __init__(
        self,
        dataset: H5MLDataset,
        sampler: H5MLBatchSampler,
        collate_fn: Callable[[Sequence[dict[str, Any]]], Any] = collate,
        *,
        threads: int = 0,
        **loader_options: Any,
    ) -> None:
        self.pin_memory = self.check_threads(threads, loader_options, "a DataLoader", "num_workers")
        self.dataset, self.sampler, self.collate_fn, self.threads = dataset, sampler, collate_fn, int(threads)
        batches = CursorBatches(sampler)  # arrays of indices, straight to __getitems__
        self.dataloader = None if threads else DataLoader(dataset, batch_sampler=batches, collate_fn=collate_fn, **loader_options)  # type: ignore[arg-type]  # fmt: skip

    def __len__(self) -> int:
        return len(self.sampler)

    def __iter__(self) -> Iterator[Any]:
        """Yield the collated batches of the sampler's current epoch, recording each one handed out."""
        if self.dataloader is not None:
            return self.sampler.hand_out_each(self.dataloader)
        pin = self.pin_memory and torch.accelerator.is_available()
        if self.pin_memory and not pin:  # DataLoader's words, so that one filter silences both
            warnings.warn("'pin_memory' argument is set as true but no accelerator is found, then device pinned "
                          "memory won't be used.", stacklevel=2)  # fmt: skip
        device = torch.accelerator.current_accelerator() if pin else None

        def read(indices: npt.NDArray[np.int64]) -> Any:
            batch = self.collate_fn(self.dataset.__getitems__(indices))
            return batch if device is None else pin_memory(batch, device.type)  # type: ignore[no-untyped-call]

        return self.hand_out_read_ahead(read, self.threads)
