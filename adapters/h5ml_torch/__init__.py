"""PyTorch adapter for h5ml files (``pip install "h5ml[torch]"``): the core's batches as tensors.

The only package of the project that imports torch. Everything but the
tensors comes from the core: the shuffle modes, shards, length buckets,
epoch cursor and resume states from :mod:`h5ml.sampling`; the batch arrays
(ragged features padded, with ``<name>_lengths`` and ``<name>_mask``) from
:mod:`h5ml.sampling.batches`; the reader opened once per process, and image
decoding, from :class:`h5ml.reader.source.SplitSource`.

The fast path
-------------
Give the ``DataLoader`` a *batch sampler*: each worker then reads a whole
batch with one reader call (``__getitems__``; the reader groups the rows by
chunk), instead of one HDF5 read per sample::

    from torch.utils.data import DataLoader
    from h5ml_torch import H5MLDataset, H5MLBatchSampler, H5MLLoader, collate

    data = H5MLDataset("digits.h5ml", "train")            # holds the path only
    sampler = H5MLBatchSampler(data, batch_size=64, shuffle="chunk", seed=0)
    loader = DataLoader(data, batch_sampler=sampler, collate_fn=collate, num_workers=2)
    for epoch in range(10):
        sampler.set_epoch(epoch)
        for batch in loader:              # {"image": uint8 (64, 8, 8), "label": int64 (64,)}
            ...

``H5MLLoader(data, sampler, num_workers=2)`` builds that same ``DataLoader``
(``threads=2`` reads in 2 threads of this process instead, no batch pickled:
the fast path) and counts the batches handed to the training loop, so that
``loader.state_dict()`` / ``loader.load_state_dict(state)`` resume mid-epoch
exactly (also with other workers or threads, or in the Keras adapter; refused
on another file, §8.3). ``H5MLBatchSampler`` reads the ranks from ``torch.distributed``.
"""

from __future__ import annotations

from h5ml_torch.collate import Collate, collate, pad_collate, pad_ragged
from h5ml_torch.dataset import H5MLDataset, SampleBatch, to_torch
from h5ml_torch.loader import H5MLLoader
from h5ml_torch.sampler import H5MLBatchSampler, distributed_rank

__all__ = [
    "Collate",
    "H5MLBatchSampler",
    "H5MLDataset",
    "H5MLLoader",
    "SampleBatch",
    "collate",
    "distributed_rank",
    "pad_collate",
    "pad_ragged",
    "to_torch",
]
