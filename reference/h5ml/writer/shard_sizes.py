"""The bytes each sample of a batch takes in a shard, and how many samples of a batch fit a shard (SPEC §12.4).

A sharded writer rolls over to a new shard when the next samples would make
the current one exceed its ``shard_size`` (:mod:`h5ml.writer.sharded`). What
it counts for one sample is the bytes its values are stored in, summed over
the split's features (:func:`sample_bytes`):

==============  ==============================================================
encoding        bytes of one sample
==============  ==============================================================
dense           ``itemsize * prod(sample_shape)`` of the stored dtype
categorical     the itemsize of the stored code dtype
string          its UTF-8 bytes + 16 (HDF5's length and heap id in the chunk, §7.5)
ragged          its values in the stored dtype + 8 (its offset) + 8 per axis with ``shapes``
bytes           its length + 8 (its offset)
==============  ==============================================================

that is the uncompressed size of what the file stores; HDF5's own metadata
(object headers, chunk indexes, attributes, a few KiB per feature) is not
counted. For a split with compressed features the sharded writer scales these
bytes by the compression ratio it last measured on the shard's file.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from h5ml.model.layout import Layout
from h5ml.model.values import as_categorical, to_list, utf8_nbytes
from h5ml.spec.chunks import VLEN_ELEMENT_BYTES

__all__ = ["OFFSET_BYTES", "batch_bytes", "fitting", "sample_bytes"]

#: Bytes of one offset (and of one axis of ``shapes``) of a ragged or bytes feature: int64 (§6.3, §6.6).
OFFSET_BYTES = 8


def sample_bytes(layout: Layout, column: Any, n: int) -> np.ndarray:
    """The stored bytes of each of the ``n`` samples of one feature's values (see the module docstring).

    Parameters
    ----------
    layout
        The feature's stored form (its dtype and sample shape).
    column
        Its values for the batch, as :meth:`h5ml.Writer.append` takes them.
    n
        The batch's number of samples.

    Returns
    -------
    numpy.ndarray
        int64 ``(n,)``.
    """
    if layout.encoding in ("dense", "categorical"):
        itemsize = 8 if layout.dtype is None else layout.dtype.itemsize
        per = itemsize * int(np.prod(layout.sample_shape)) if layout.encoding == "dense" else itemsize
        return np.full(n, per, dtype=np.int64)
    values = to_list(as_categorical(column)) if not isinstance(column, np.ndarray) else list(column)
    if layout.encoding == "string":
        return np.fromiter((utf8_nbytes(str(v)) + VLEN_ELEMENT_BYTES for v in values), np.int64, count=n)
    if layout.encoding == "bytes":
        return np.fromiter((len(v) + OFFSET_BYTES for v in values), np.int64, count=n)
    itemsize = 8 if layout.dtype is None else layout.dtype.itemsize
    extra = OFFSET_BYTES * (1 + (layout.shapes_ndim or 0))
    return np.fromiter((np.asarray(v).size * itemsize + extra for v in values), np.int64, count=n)


def batch_bytes(layouts: Mapping[str, Layout], batch: Mapping[str, Any], n: int) -> np.ndarray:
    """The stored bytes of each sample of a batch: :func:`sample_bytes` summed over its features.

    Parameters
    ----------
    layouts
        Feature name -> stored form, for every feature of the batch.
    batch
        ``{feature: values}`` of ``n`` samples.
    n
        The batch's number of samples.

    Returns
    -------
    numpy.ndarray
        int64 ``(n,)``.
    """
    total = np.zeros(n, dtype=np.int64)
    for name, values in batch.items():
        total += sample_bytes(layouts[name], values, n)
    return total


def fitting(per_sample: np.ndarray, counted: float, limit: int, empty: bool) -> int:
    """How many leading samples of a batch fit a shard that already counts ``counted`` of its ``limit`` bytes.

    Parameters
    ----------
    per_sample
        The counted bytes of each sample (:func:`batch_bytes`, scaled by a compression ratio).
    counted
        The bytes the shard counts already.
    limit
        The shard size, in bytes.
    empty
        The shard has no sample yet: then at least one sample goes in, so that a sample larger than
        ``limit`` gets a shard of its own instead of no shard at all.

    Returns
    -------
    int
        From 0 to ``len(per_sample)``.
    """
    fits = int(np.searchsorted(np.cumsum(per_sample) + counted, limit, side="right"))
    return max(fits, 1) if empty and len(per_sample) else fits
