"""Framework-free sampling: epoch orders, shuffle modes, shards across ranks, resume states, length buckets, padding.

Both framework adapters take their batches from here, so that the same
settings give the same batches in PyTorch and in Keras. It imports nothing of
h5ml but :mod:`h5ml.errors`. The modules, each re-exported here:

- :mod:`h5ml.sampling.orders`: :class:`Sampler`, the epoch orders of one rank
  (shuffle modes ``"none"``, ``"chunk"``, ``"full"``, shards, equal batch counts);
- :mod:`h5ml.sampling.buckets`: length buckets (:func:`bucket_by_length`, and
  ``Sampler(lengths=..., pool_batches=...)``);
- :mod:`h5ml.sampling.resume`: resume states and :class:`EpochCursor`, the
  epoch, resume point and batches handed out of a training loop;
- :mod:`h5ml.sampling.seeds`: seeds, the shuffle on write and
  :func:`epoch_rng`;
- :mod:`h5ml.sampling.padding` and :mod:`h5ml.sampling.batches`: one batch as
  arrays, ragged features padded with ``<name>_lengths`` and ``<name>_mask``.
"""

from h5ml.sampling.batches import ColumnBatch, batch_arrays, column_arrays, features_of
from h5ml.sampling.buckets import bucket_by_length
from h5ml.sampling.orders import SHUFFLE_MODES, Sampler, ShuffleMode
from h5ml.sampling.padding import LENGTHS_SUFFIX, MASK_SUFFIX, pad_ragged, ragged_values, stack_or_pad
from h5ml.sampling.resume import STATE_VERSION, EpochCursor, ResumePoint
from h5ml.sampling.seeds import epoch_rng

__all__ = [
    "LENGTHS_SUFFIX",
    "MASK_SUFFIX",
    "SHUFFLE_MODES",
    "STATE_VERSION",
    "ColumnBatch",
    "EpochCursor",
    "ResumePoint",
    "Sampler",
    "ShuffleMode",
    "batch_arrays",
    "bucket_by_length",
    "column_arrays",
    "epoch_rng",
    "features_of",
    "pad_ragged",
    "ragged_values",
    "stack_or_pad",
]
