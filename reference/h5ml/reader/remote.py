"""Reading an h5ml file at a URL: :class:`RemoteDataset` and :func:`open_location` (§1.3-§1.5, §3.6, §4.4, §10.1).

``h5ml.open("s3://bucket/ds.h5", storage_options={...})`` (and any fsspec URL:
``gs://``, ``az://``, ``https://``, ``memory://``, ``file://``) opens the object
through fsspec (:func:`h5ml.model.remote.open_remote`) as a file object that
h5py opens with its ``fileobj`` driver, and makes every check a local file
gets at open: the header (§1.3-§1.5, §4.1), the filters (§3.5), the storage
walk (§3.6, §10.1) and the completion marker (§4.4). The memory map does not
exist for a remote file: chunked numeric data is fetched by chunk
(:mod:`h5ml.reader.remote_rows`), anything else through h5py on the file
object. What a dataset cost on the wire is :attr:`RemoteDataset.transfer_stats`.

A remote dataset pickles by URL and options (credentials included: they go to
the processes it is sent to, DataLoader workers among them); each process
opens its own fsspec file on first use, a forked child too.

:func:`open_location` is the one opener of a location that may be a URL or a
local path: the sharded reader opens each shard through it (§12.5).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, BinaryIO, cast

import h5py

from h5ml.model.failures import LIBRARY_ERRORS, is_library_failure
from h5ml.model.hdf5 import unopenable_file
from h5ml.model.remote import RemoteFile, TransferStats, is_url, local_file_path, open_remote
from h5ml.reader.chunk_cache import file_cache_settings
from h5ml.reader.dataset import Dataset
from h5ml.reader.file_map import FileMap
from h5ml.reader.remote_rows import RemoteMap

__all__ = ["RemoteDataset", "open_location"]


class RemoteDataset(Dataset):
    """An h5ml file at a URL, open for reading (see the module docstring); create it with :func:`h5ml.open`.

    Parameters
    ----------
    url
        The file's URL.
    storage_options
        The fsspec file system's options (credentials, endpoint); None: its defaults (the environment).
    **options
        ``allow_external``, ``cache_bytes``, ``direct``, ``chunk_cache_bytes`` of :func:`h5ml.open`.
        ``direct=False`` reads everything through h5py on the file object.

    Raises
    ------
    ValueError
        For ``verify=True`` (verified reads of remote chunks are not implemented: open a local copy) and
        ``zero_copy=True`` (there is no memory map to view).
    """

    def __init__(
        self,
        url: str,
        storage_options: Mapping[str, Any] | None = None,
        **options: Any,
    ) -> None:
        if options.get("verify"):
            raise ValueError(
                f"{url}: verify=True is not available for a file at a URL yet (its chunks' checksums are checked "
                "against a local file's bytes); copy the file to local storage and open that with verify=True, "
                "or open the URL without verify"
            )
        if options.get("zero_copy"):
            raise ValueError(
                f"{url}: zero_copy=True returns views of a local file's memory map; a file at a URL has none: "
                "open it without zero_copy"
            )
        options.pop("locking", None)  # no HDF5 file lock on an object read through fsspec
        super().__init__(url, **options)
        self._path = url
        self._storage_options: dict[str, Any] = dict(storage_options or {})

    def _init_runtime(self) -> None:
        super()._init_runtime()
        self._remote: RemoteFile | None = None
        self._remote_map: RemoteMap | None = None
        self._opener = self._open_remote

    def __getstate__(self) -> dict[str, Any]:
        return {**super().__getstate__(), "storage_options": self._storage_options}

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)
        self._storage_options = dict(state.get("storage_options") or {})

    @property
    def url(self) -> str:
        """The URL of the file (also :attr:`path`)."""
        return self._path

    @property
    def storage_options(self) -> Mapping[str, Any]:
        """The fsspec options the file was opened with."""
        return dict(self._storage_options)

    @property
    def size_bytes(self) -> int:
        """The object's size in bytes, as the store gave it at open."""
        self.h5file  # noqa: B018 - opens the file in this process if needed
        return 0 if self._remote is None else self._remote.size

    @property
    def transfer_stats(self) -> TransferStats:
        """Requests and bytes fetched from the store by this process's open file (zeros before it is opened).

        Metadata and h5py's reads (the block cache) and the chunk ranges of
        :mod:`h5ml.reader.remote_rows`; ``transfer_stats.reset()`` starts again.
        """
        self.h5file  # noqa: B018 - opens the file in this process if needed
        remote = self._remote
        return TransferStats() if remote is None else remote.stats

    def _open_remote(self) -> h5py.File:
        """Open the object through fsspec and hand it to h5py's ``fileobj`` driver (read-only)."""
        url = self._path
        remote = open_remote(url, self._storage_options)
        try:
            handle = h5py.File(remote, "r", **file_cache_settings(self.file_cache_bytes))
        except LIBRARY_ERRORS as exc:
            if not is_library_failure(exc):
                remote.close()
                raise
            remote.seek(0)
            error = unopenable_file(url, exc, cast(BinaryIO, remote))
            remote.close()
            raise error from exc
        except BaseException:
            remote.close()
            raise
        self._remote, self._remote_map = remote, RemoteMap(remote, self._chunk_cache_bytes)
        return handle

    def file_map(self) -> FileMap | None:
        """The :class:`~h5ml.reader.remote_rows.RemoteMap` of the open file (None with ``direct=False``).

        It stands where a local file's memory map stands: the columns fetch chunks through it.
        """
        if not self._direct:
            return None
        self.h5file  # noqa: B018 - opens (or, in a forked child, reopens) the file and its map
        return self._remote_map

    def check_file_size(self, where: str, rows: str) -> None:
        """Nothing to check: an object in a store is replaced whole, never truncated in place."""

    def close(self) -> None:
        """Close the file and the fsspec object (§7.3); further use raises ValueError."""
        remote, self._remote, self._remote_map = self._remote, None, None
        super().close()
        if remote is not None:
            remote.close()


def open_location(
    location: str | os.PathLike[str], storage_options: Mapping[str, Any] | None = None, **open_options: Any
) -> Dataset:
    """Open the h5ml file at ``location``, a URL or a local path, and check it (as :func:`h5ml.open` does).

    The one opener of a shard (§12.5): the sharded reader passes each
    :func:`h5ml.model.shard_index.shard_location` here.

    Parameters
    ----------
    location
        A URL (:func:`h5ml.model.remote.is_url`) or a local path.
    storage_options
        The fsspec options of a URL; must be None or empty for a local path.
    **open_options
        The other keyword arguments of :func:`h5ml.open`.

    Returns
    -------
    Dataset
        A :class:`RemoteDataset` for a URL.

    Raises
    ------
    ValueError
        If ``storage_options`` are given with a local path (they would be ignored).
    FileNotFoundError, PermissionError, h5ml.H5MLError
        As :func:`h5ml.open`.
    """
    text = local_file_path(location, storage_options) or os.fspath(location)  # file:// is its local path
    if is_url(text):
        dataset: Dataset = RemoteDataset(text, storage_options, **open_options)
    else:
        if storage_options:
            raise ValueError(
                f"{text}: storage_options are for URLs (s3://, gs://, https://, ...), and this is a local path; "
                "drop storage_options, or give the file's URL"
            )
        dataset = Dataset(text, **open_options)
    dataset.h5file  # noqa: B018 - open now so that every check raises here
    return dataset
