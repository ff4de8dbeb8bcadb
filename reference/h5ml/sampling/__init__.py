"""Framework-free sampling: epoch orders, shuffle modes, shards across ranks, resume state, length buckets, padding.

Both framework adapters take their batches from here, so that the same
settings give the same batches in PyTorch and in Keras. It imports nothing of
h5ml but :mod:`h5ml.errors`. The package namespace is :mod:`h5ml.sampling.orders`;
padding of ragged batches is :mod:`h5ml.sampling.padding`.
"""

from h5ml.sampling.orders import *  # noqa: F403
from h5ml.sampling.orders import __all__ as __all__
