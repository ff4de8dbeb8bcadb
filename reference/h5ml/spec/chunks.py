"""Chunk shapes and chunk-cache sizes (SPEC.md §7).

The rules live here so that the writer (which chooses chunk shapes), the reader
(which sizes its chunk cache) and the validator (which checks chunk shapes) use
the same numbers.

- §7.1 a chunk of a dense feature spans whole samples: ``(r, *sample_shape)``.
  The only exception is a sample larger than :data:`SPLIT_SAMPLE_BYTES`: then
  ``r = 1`` and the first sample axis whose trailing axes fit the target is
  split, so one chunk holds a slab of one sample.
- §7.2 ``r`` is a power of two.
- §7.3 a chunk holds about :data:`h5ml.spec.TARGET_CHUNK_BYTES` (1 MiB, the size
  of HDF5's default chunk cache, so a reader with default settings still keeps a
  whole chunk in its cache); ``r`` is not larger than the dataset needs.
- §7.5 ragged ``values``, ``offsets``, ``shapes`` and categorical ``codes`` are
  chunked by the same byte rule along their first axis.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Final

from h5ml import spec

__all__ = [
    "READER_CACHE_CHUNKS",
    "READER_CACHE_MIN_BYTES",
    "SPLIT_SAMPLE_BYTES",
    "VLEN_ELEMENT_BYTES",
    "cache_bytes_for",
    "chunk_rows",
    "chunk_shape",
]

#: §7.1.1 a sample larger than this is split across chunks (spec.LARGE_SAMPLE_BYTES, 16 MiB).
SPLIT_SAMPLE_BYTES: Final = spec.LARGE_SAMPLE_BYTES

#: §7.3 the smallest chunk cache, in bytes per dataset, that a reader should use.
READER_CACHE_MIN_BYTES: Final = 64 << 20
#: §7.3 the number of whole chunks a reader's chunk cache should hold at least.
READER_CACHE_CHUNKS: Final = 8

#: §7.5 bytes one variable-length element (a string) takes inside a chunk: HDF5
#: stores a 4-byte length and a 12-byte global-heap id there, not the text.
VLEN_ELEMENT_BYTES: Final = 16


def _next_power_of_two(n: int) -> int:
    return 1 if n <= 1 else 1 << (n - 1).bit_length()


def chunk_rows(sample_nbytes: int, num_samples: int | None = None) -> int:
    """Return the number of samples per chunk (§7.2, §7.3).

    Parameters
    ----------
    sample_nbytes
        Bytes of one sample (``itemsize * prod(sample_shape)``), >= 0. A sample
        of 0 bytes is counted as 1 byte.
    num_samples
        The number of samples the dataset will hold, when known. ``None`` for a
        dataset that grows without a known end.

    Returns
    -------
    int
        The largest power of two ``r`` with ``r * sample_nbytes <= TARGET_CHUNK_BYTES``
        (at least 1), capped at the smallest power of two ``>= num_samples`` (at
        least 1) when ``num_samples`` is given.

    Raises
    ------
    ValueError
        If ``sample_nbytes`` or ``num_samples`` is negative.
    """
    if sample_nbytes < 0:
        raise ValueError(f"sample_nbytes must be >= 0, got {sample_nbytes}")
    if num_samples is not None and num_samples < 0:
        raise ValueError(f"num_samples must be >= 0 or None, got {num_samples}")
    fit = spec.TARGET_CHUNK_BYTES // max(1, sample_nbytes)
    rows = 1 if fit < 1 else 1 << (fit.bit_length() - 1)
    if num_samples is not None:
        rows = min(rows, _next_power_of_two(num_samples))
    return rows


def chunk_shape(sample_shape: Sequence[int], itemsize: int, num_samples: int | None = None) -> tuple[int, ...]:
    """Return the chunk shape of a dataset of samples (§7.1, §7.5).

    Parameters
    ----------
    sample_shape
        Shape of one sample: the dataset's axes after the first (``()`` for a
        1-D dataset).
    itemsize
        Bytes per element (``numpy.dtype.itemsize``; use :data:`VLEN_ELEMENT_BYTES`
        for variable-length strings).
    num_samples
        Length of the first axis when known (caps the rows per chunk).

    Returns
    -------
    tuple of int
        ``(r, *sample_shape)`` with ``r`` from :func:`chunk_rows`. If one
        sample is larger than :data:`SPLIT_SAMPLE_BYTES` (16 MiB): ``r = 1``,
        the sample axes before the split axis are 1, the split axis ``k`` (the
        first one such that the axes after it hold at most
        ``TARGET_CHUNK_BYTES``) holds as many rows as fit in the target, and
        the axes after ``k`` are whole. Axes of length 0 count as 1 (HDF5
        chunk dimensions are positive).

    Raises
    ------
    ValueError
        If ``itemsize`` is not positive or an axis is negative.
    """
    if itemsize <= 0:
        raise ValueError(f"itemsize must be > 0, got {itemsize}")
    if any(int(d) < 0 for d in sample_shape):
        raise ValueError(f"sample_shape must have non-negative axes, got {tuple(sample_shape)}")
    dims = [max(1, int(d)) for d in sample_shape]
    sample_nbytes = itemsize * math.prod(dims)
    if sample_nbytes <= SPLIT_SAMPLE_BYTES:
        return (chunk_rows(sample_nbytes, num_samples), *dims)
    # One sample is too big for one chunk: find the first axis whose trailing
    # axes fit in the target, split it, keep the later axes whole (§7.1).
    for k in range(len(dims)):
        tail = itemsize * math.prod(dims[k + 1 :])
        if tail <= spec.TARGET_CHUNK_BYTES:
            rows_k = min(dims[k], max(1, spec.TARGET_CHUNK_BYTES // tail))
            return (1, *([1] * k), rows_k, *dims[k + 1 :])
    raise AssertionError("unreachable: the last axis always fits")  # pragma: no cover


def cache_bytes_for(chunk_nbytes: int) -> int:
    """Return the chunk-cache size a reader should give one dataset (§7.3).

    Parameters
    ----------
    chunk_nbytes
        Bytes of one (uncompressed) chunk of the dataset.

    Returns
    -------
    int
        ``max(READER_CACHE_MIN_BYTES, READER_CACHE_CHUNKS * chunk_nbytes)``
        bytes: at least 64 MiB and at least 8 whole chunks, so that random
        single-sample reads do not decompress the same chunk again and again.

    Raises
    ------
    ValueError
        If ``chunk_nbytes`` is negative.
    """
    if chunk_nbytes < 0:
        raise ValueError(f"chunk_nbytes must be >= 0, got {chunk_nbytes}")
    return max(READER_CACHE_MIN_BYTES, READER_CACHE_CHUNKS * chunk_nbytes)
