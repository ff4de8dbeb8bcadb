"""Opening a dataset for reading: :func:`open` (§1.3-§1.5, §3.5, §3.6, §4.4, §10, §12.5).

:func:`open` is the one entry point of the reader (``h5ml.open``): it checks
the file as it opens it and returns a :class:`~h5ml.reader.dataset.Dataset`;
given the index of a sharded dataset (a ``.json`` file, or a folder holding
``index.json``, :func:`h5ml.model.shard_index.is_index_path`), it checks the
index and returns a :class:`~h5ml.reader.sharded.ShardedDataset`, whose
shards open when first read.
"""

from __future__ import annotations

import os
from typing import Any

from h5ml.model.shard_index import is_index_path
from h5ml.reader.dataset import Dataset
from h5ml.reader.sharded import DEFAULT_MAX_OPEN_SHARDS, ShardedDataset

__all__ = ["open", "open_file"]


def open(
    path: str | os.PathLike[str],
    *,
    locking: bool | None = None,
    allow_external: bool = False,
    cache_bytes: int | None = None,
    direct: bool = True,
    verify: bool = False,
    chunk_cache_bytes: int | None = None,
    zero_copy: bool = False,
    max_open_shards: int = DEFAULT_MAX_OPEN_SHARDS,
) -> Dataset | ShardedDataset:
    """Open an h5ml file, or a sharded dataset by its index, for reading (§1.3-§1.5, §3.5, §3.6, §4.4, §12.5).

    Parameters
    ----------
    path
        The file; or the index of a sharded dataset (a ``.json`` file, or the
        dataset's folder holding ``index.json``, §12.1). Every other option
        then applies to each shard as it opens.
    locking
        HDF5 file locking. None keeps HDF5's default (and the
        ``HDF5_USE_FILE_LOCKING`` environment variable); False turns locking
        off, for read-only media and network file systems (NFS) where locks
        fail; True forces it on. With None, a complete file whose lock another
        process holds is read without the lock (§10.4.1-S3).
    allow_external
        Follow external links and read external raw storage and virtual
        datasets (§3.6, §10.1). Off by default: such a file can make the reader
        return the bytes of any other local file. Only for files you trust.
    cache_bytes
        Chunk-cache bytes per filtered (compressed or checksummed) dataset.
        Default :data:`DEFAULT_CACHE_BYTES` (64 MiB). A dataset whose chunk
        needs more gets a larger cache: ``chunks.cache_bytes_for(chunk)`` by
        default, at least one chunk when ``cache_bytes`` is given. Unfiltered
        chunked datasets are read without a chunk cache (§7.3).
    direct
        Copy unfiltered numeric data out of a read-only memory map of the file
        (:mod:`h5ml.reader.direct`, §7.3): about 20x faster than HDF5 for
        random rows of a few KiB. False reads everything through h5py (the
        same values): for files on storage where memory maps misbehave, or
        files that other programs may truncate while they are read.
    verify
        Verified reads (SPEC §8.4): before rows are returned, the stored bytes
        of every chunk that holds them are compared with the chunk's CRC32C,
        recorded beside the dataset by the writer (``checksums=True``, the
        default of :func:`h5ml.write` and :class:`h5ml.Writer`), on every read
        path (h5py, the memory map, batches, prefetching workers). A damaged
        chunk raises :class:`~h5ml.errors.ChecksumError` instead of returning
        wrong values; each chunk is hashed once per open handle
        (:mod:`h5ml.reader.chunk_checks` says why that is sound). A dataset without
        checksums (a file written with ``checksums=False`` or by a writer of
        SPEC 1.0) raises :class:`~h5ml.errors.ChecksumsMissingError` on its
        first read: ``verify=True`` never returns unchecked data.
    chunk_cache_bytes
        Bytes of the chunks h5ml decodes itself (gzip, in parallel:
        :mod:`h5ml.reader.compressed`) kept decoded in this process, LRU. None:
        ``cache_bytes`` when given, else 256 MiB; 0 keeps none.
    zero_copy
        Return uncompressed ragged values (and dense slices of step 1) as
        read-only views of the file's memory map where the stored bytes are
        native, aligned and contiguous (else copies), as Hugging Face datasets
        does. It trades safety: a file truncated while a view is alive crashes
        the process on the next access (SIGBUS), one rewritten in place changes
        the views (h5ml's writer never does: it renames a temporary file); see
        :mod:`h5ml.reader.direct`. Views outlive ``close()``. Needs ``direct=True``.
    max_open_shards
        Sharded datasets only: shards held open at once in each process,
        least recently read closed first (default 8; see
        :class:`~h5ml.reader.sharded.ShardedDataset`). Ignored for one file.

    Returns
    -------
    Dataset or ShardedDataset
        The open dataset (use it as a context manager, or call ``close()``): a
        :class:`~h5ml.reader.sharded.ShardedDataset` for an index, whose
        splits read their shards, concatenated, by global indices.

    Raises
    ------
    FileNotFoundError
        If ``path`` does not exist (for an index: if there is no index there).
    ShardIndexError
        For an index: if it is not JSON, breaks its schema, or its sample
        counts or fingerprint do not add up (§12.1-§12.3). A shard that is
        missing or disagrees with its entry (changed fingerprint, another
        split, other features, §12.5) raises it too, when that shard is first
        read, before any of its samples is returned.
    NotH5MLError
        If the file is not HDF5, or its ``format`` attribute is not ``"h5ml"`` (§4.1).
    UnsupportedVersionError
        If the file's MAJOR version is not this reader's (§1.3).
    InvalidFileError
        If ``format_version`` is missing or malformed (§1.2).
    UnknownExtensionError
        If ``must_understand`` names an extension this reader does not know (§1.5).
    IncompleteFileError
        If the completion marker is missing (§4.4).
    ForbiddenStorageError
        If the file holds external links, external raw storage or virtual
        datasets and ``allow_external`` is false (§3.6).
    InvalidFileError
        Also when the HDF5 library fails on the root attributes or while
        listing the file's objects (a damaged file, §10.3).
    FileLockedError
        Only when ``locking=True`` (or ``HDF5_USE_FILE_LOCKING`` forces
        locking) and another process holds the file's lock (§10.4.1).
    ValueError
        If ``max_open_shards`` is below 1 (for an index), ``cache_bytes`` is
        negative, or ``zero_copy=True`` is given with ``direct=False``.
    """
    options: dict[str, Any] = {
        "locking": locking,
        "allow_external": allow_external,
        "cache_bytes": cache_bytes,
        "direct": direct,
        "verify": verify,
        "chunk_cache_bytes": chunk_cache_bytes,
        "zero_copy": zero_copy,
    }
    if is_index_path(path):
        return ShardedDataset(path, max_open_shards=max_open_shards, **options)
    return open_file(path, **options)


def open_file(
    path: str | os.PathLike[str],
    *,
    locking: bool | None = None,
    allow_external: bool = False,
    cache_bytes: int | None = None,
    direct: bool = True,
    verify: bool = False,
    chunk_cache_bytes: int | None = None,
    zero_copy: bool = False,
) -> Dataset:
    """Open one h5ml file for reading, never an index: :func:`open` without its sharded branch.

    For the code that works on the HDF5 file itself (verification, dumps,
    edits, exports), which a sharded dataset does not have; an index given
    here is refused as :func:`open` refuses a file that is not HDF5.

    Parameters
    ----------
    path, locking, allow_external, cache_bytes, direct, verify, chunk_cache_bytes, zero_copy
        As :func:`open`.

    Returns
    -------
    Dataset
        The open file.

    Raises
    ------
    FileNotFoundError, NotH5MLError, UnsupportedVersionError, InvalidFileError, UnknownExtensionError, \
IncompleteFileError, ForbiddenStorageError, FileLockedError, ValueError
        As :func:`open` for a file.
    """
    dataset = Dataset(
        path,
        locking=locking,
        allow_external=allow_external,
        cache_bytes=cache_bytes,
        direct=direct,
        verify=verify,
        chunk_cache_bytes=chunk_cache_bytes,
        zero_copy=zero_copy,
    )
    dataset.h5file  # noqa: B018 - open now so that every check above raises here
    return dataset
