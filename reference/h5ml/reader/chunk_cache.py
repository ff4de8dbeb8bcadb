"""The chunk caches of the datasets a reader opens (§7.3, §10.4, case C11).

Each filtered (compressed or checksummed) chunked dataset gets a cache that
holds several of its chunks, so that a chunk is decoded once however its rows
are asked for. Unfiltered chunked datasets are read with no chunk cache
(when HDF5 reads them: single samples through h5py's ``dataset[i]``, data
that cannot be mapped, and everything with ``direct=False``): HDF5 then reads
the requested rows straight from the file, where a cache only adds a copy,
and a cache smaller than the data made random reads much slower (12 KiB rows:
about 6.7 us per sample without a cache, 89 us with a 64 MiB cache once the
data outgrew it; 64-row slices were not slower). Contiguous datasets never use
a chunk cache.

:func:`file_cache_settings` is the cache every dataset of a file gets by
default (the file access property list); :func:`open_chunked` reopens a
chunked dataset with the cache it needs when that differs.
"""

from __future__ import annotations

import math
from typing import Any, Final

import h5py

from h5ml import spec
from h5ml.spec.chunks import cache_bytes_for

__all__ = ["DEFAULT_CACHE_BYTES", "dataset_cache", "file_cache_settings", "open_chunked"]

#: §7.3 the chunk cache of each filtered dataset when ``cache_bytes`` is not given (64 MiB):
#: ``chunks.cache_bytes_for`` of a chunk no larger than 8 MiB. Unfiltered datasets get no cache.
DEFAULT_CACHE_BYTES: Final = cache_bytes_for(0)
#: HDF5 advises about 100 hash slots per chunk that fits in the cache.
_SLOTS_PER_CHUNK: Final = 100
#: The chunk cache's preemption weight: HDF5's default. At 1.0 (evict fully read chunks first) HDF5 2.0 never
#: evicts a partly read chunk, so random single-row reads grew an 8 MiB cache to every chunk touched (188 MB
#: of decoded gzip chunks here); at 0.75 or 0.99 it stayed within its size.
_CACHE_W0: Final = 0.75


def _next_prime(n: int) -> int:
    candidate = max(2, n)
    while any(candidate % d == 0 for d in range(2, math.isqrt(candidate) + 1)):
        candidate += 1
    return candidate


def _cache_slots(cache_bytes: int, chunk_nbytes: int = spec.TARGET_CHUNK_BYTES) -> int:
    """Hash slots of a chunk cache: a prime about 100 times the chunks that fit (HDF5's advice)."""
    return _next_prime(_SLOTS_PER_CHUNK * max(1, cache_bytes // max(1, chunk_nbytes)))


def file_cache_settings(cache_bytes: int) -> dict[str, Any]:
    """The ``h5py.File`` keyword arguments of a file whose datasets get ``cache_bytes`` of chunk cache each (§7.3)."""
    return {"rdcc_nbytes": cache_bytes, "rdcc_nslots": _cache_slots(cache_bytes), "rdcc_w0": _CACHE_W0}


def dataset_cache(node: h5py.Dataset, cache_bytes: int | None, file_cache_bytes: int) -> tuple[int, int] | None:
    """``(slots, bytes)`` of the chunk cache a chunked dataset needs, or None for the file's (§7.3).

    Parameters
    ----------
    node
        A chunked h5py dataset.
    cache_bytes
        The ``cache_bytes`` given to :func:`h5ml.open`, or None.
    file_cache_bytes
        The cache every dataset of the file gets (:func:`file_cache_settings`).

    Returns
    -------
    tuple of int, or None
        ``(0, 0)`` (no cache) for unfiltered data; for filtered data whose chunk
        needs more than the file's cache, ``chunks.cache_bytes_for(chunk)`` (at
        least one chunk when ``cache_bytes`` was given) with its hash slots;
        None otherwise.
    """
    if node.id.get_create_plist().get_nfilters() == 0:
        return 0, 0  # unfiltered: read straight from the file
    chunk_nbytes = math.prod(node.chunks) * node.dtype.itemsize
    need = cache_bytes_for(chunk_nbytes) if cache_bytes is None else max(cache_bytes, chunk_nbytes)
    if need > file_cache_bytes:
        return _cache_slots(need, chunk_nbytes), need
    return None


def open_chunked(f: h5py.File, hdf5_path: str, probe: h5py.Dataset, cache: tuple[int, int]) -> h5py.Dataset:
    """Reopen the chunked dataset ``probe`` (``f[hdf5_path]``) with the chunk cache ``(slots, bytes)`` (§7.3)."""
    # HDF5 shares one open dataset between handles: close the probe so
    # that the new cache settings are applied, not the first open's.
    probe.id.close()
    dapl = h5py.h5p.create(h5py.h5p.DATASET_ACCESS)
    dapl.set_chunk_cache(*cache, _CACHE_W0)
    # readonly=True, as f[path] does for a read-only file: h5py then keeps its per-dataset reader
    # and selector instead of rebuilding them on every read (measured: 27 us per row read instead
    # of 6 us).
    return h5py.Dataset(h5py.h5d.open(f.id, hdf5_path.encode("utf-8"), dapl=dapl), readonly=True)
