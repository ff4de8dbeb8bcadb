"""Files at a URL, read through fsspec: recognising a URL, opening it, and fetching byte ranges (§3.1, §10.1).

An h5ml file or shard index may live in object storage (``s3://``, ``gs://``,
``az://``), behind ``https://``, or in any other fsspec file system
(``memory://``, ``file://``). This module is the one place that knows it:

- :func:`is_url` tells a URL from a local path;
- :func:`open_remote` opens the object read-only as a :class:`RemoteFile`, a
  seekable binary file object that h5py opens with its ``fileobj`` driver
  (``h5py.File(remote, "r")``) and that reads the object through a small
  block cache suited to HDF5 metadata (:data:`BLOCK_BYTES` blocks, the first
  :data:`HEAD_BYTES` at once: the superblock, the root group and, in a file
  written with paged aggregation, the first metadata page);
- :meth:`RemoteFile.fetch` fetches many byte ranges at once, neighbouring
  ranges coalesced into one request (:func:`coalesce`) and the requests made
  concurrently (``fs.cat_ranges``), for the reader's chunk path
  (:mod:`h5ml.reader.remote_rows`);
- :class:`TransferStats` counts the requests and bytes of both, so that a
  caller can state what a read cost on the wire.

Failures say what, where and what to do: a missing object is a
:class:`FileNotFoundError`, refused credentials a :class:`PermissionError`,
a URL whose scheme has no installed fsspec implementation an
:class:`~h5ml.errors.H5MLError`; each message names the URL and how to give
credentials in the project's two forms (``storage_options=`` in Python, then
``--storage-option`` of the command line, which keeps only its own:
:func:`h5ml.ingest.options.cli_words`).

Measured on moto's S3 server on loopback (tests/test_remote.py, benchmarks/bench_remote.py):
opening a 0.4 MB h5ml file and reading one row with h5py on an fsspec file of default settings
(``readahead``, 5 MB blocks) fetches the whole object in one request; with 64 KiB blocks, 7
requests for the same metadata. A whole-object fetch is cheap for a small file and ruinous for
a 1 GB shard, so the cache here fetches :data:`HEAD_BYTES` first and :data:`BLOCK_BYTES` after.
"""

from __future__ import annotations

import bisect
import contextlib
import gc
import io
import os
import re
import threading
import weakref
from collections import OrderedDict
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from h5ml.errors import H5MLError

__all__ = [
    "BLOCK_BYTES",
    "COALESCE_GAP_BYTES",
    "HEAD_BYTES",
    "PYTHON_CREDENTIALS",
    "RemoteFile",
    "TransferStats",
    "absolute_location",
    "coalesce",
    "collection_paused",
    "is_url",
    "list_prefix",
    "local_file_path",
    "open_remote",
    "read_remote_text",
    "remote_of",
]

#: Bytes fetched by the first read of a file: the superblock and the metadata HDF5 reads next (in a file
#: written with ``page_size=1 MiB``, the first metadata page), in one request.
HEAD_BYTES: Final = 1 << 20
#: Bytes of one block of the metadata cache after the first: HDF5 reads object headers and B-tree nodes of
#: a few hundred bytes to a few KiB, scattered in files written without paged aggregation.
BLOCK_BYTES: Final = 256 << 10
#: Blocks kept by one file's cache (LRU): 64 MiB at most with :data:`BLOCK_BYTES`.
CACHE_BLOCKS: Final = 256
#: Two byte ranges closer than this are fetched by one request (the gap fetched and thrown away): on object
#: stores a request costs as much as about 1 MiB of transfer (tens of ms of latency against ~100 MB/s).
COALESCE_GAP_BYTES: Final = 1 << 20
#: How to give credentials, for messages: the Python form, then the command line's (h5ml.ingest.options.cli_words).
PYTHON_CREDENTIALS: Final = (
    "give credentials as storage_options=(key, secret, endpoint_url: s3fs's names) "
    "(--storage-option KEY=VALUE, repeated), or in the environment "
    "(AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_ENDPOINT_URL for s3://)"
)

_URL = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*)://")


def is_url(path: object) -> bool:
    """Whether ``path`` is a URL (``scheme://...``, the scheme at least two characters) rather than a local path.

    A one-letter scheme would be a Windows drive (``C://x``), never a URL.
    """
    if not isinstance(path, str):
        return False
    match = _URL.match(path)
    return match is not None and len(match.group(1)) > 1


def local_file_path(location: str | os.PathLike[str], storage_options: Mapping[str, Any] | None = None) -> str | None:
    """The local path that a ``file://`` URL names, read as that path rather than through fsspec; else None.

    ``file:///data/ds/view.h5`` (or ``file://localhost/...``) names the local file ``/data/ds/view.h5``: the
    URL's path, percent-decoded. Opening it by that path keeps everything that a local file has and a file
    object lacks: HDF5 resolves a view's virtual-dataset sources relative to the file's own folder (§12.6;
    through an fsspec file object HDF5 has no folder to resolve them in, and HDF5 2.0.0 in h5py 3.16 was
    measured to crash with SIGSEGV reading such a virtual dataset), memory maps and file locking.

    Parameters
    ----------
    location
        A path or URL.
    storage_options
        The fsspec options given with it: a ``file://`` URL with options is left to fsspec (None is returned),
        since they would otherwise be ignored.

    Returns
    -------
    str or None
        The local path, or None for anything but a ``file://`` URL of this machine without storage options.
    """
    text = os.fspath(location)
    if storage_options or not text[:7].lower() == "file://":
        return None
    from urllib.parse import urlsplit
    from urllib.request import url2pathname

    parts = urlsplit(text)
    if parts.netloc not in ("", "localhost") or parts.query or parts.fragment:
        return None
    return url2pathname(parts.path)


def absolute_location(location: str | os.PathLike[str]) -> str:
    """A URL as it is, a local path made absolute: a location stored to be opened again in another process."""
    text = os.fspath(location)
    return text if is_url(text) else os.path.abspath(text)


@dataclass
class TransferStats:
    """Requests made and bytes received from the store, since open (or :meth:`reset`).

    Attributes
    ----------
    requests
        Range (or whole-object) GET requests: metadata blocks and chunk ranges.
    bytes
        Bytes received, coalescing gaps included.
    metadata_requests, metadata_bytes
        The part of both made by the block cache (HDF5's own reads: metadata, data read through h5py).
    """

    requests: int = 0
    bytes: int = 0
    metadata_requests: int = 0
    metadata_bytes: int = 0

    def reset(self) -> None:
        """Start counting again from zero."""
        self.requests = self.bytes = self.metadata_requests = self.metadata_bytes = 0

    def as_dict(self) -> dict[str, int]:
        """The counts as a dict (for JSON)."""
        return {
            "requests": self.requests,
            "bytes": self.bytes,
            "metadata_requests": self.metadata_requests,
            "metadata_bytes": self.metadata_bytes,
        }


def coalesce(ranges: Sequence[tuple[int, int]], max_gap: int = COALESCE_GAP_BYTES) -> list[tuple[int, int]]:
    """Merge byte ranges ``(start, end)`` (end exclusive) whose gap is at most ``max_gap`` bytes, in file order.

    Parameters
    ----------
    ranges
        Byte ranges, in any order, possibly overlapping.
    max_gap
        The largest gap (bytes) fetched rather than split into two requests.

    Returns
    -------
    list of (int, int)
        Disjoint ranges sorted by start, covering every given range.
    """
    merged: list[tuple[int, int]] = []
    for start, end in sorted(ranges):
        if merged and start - merged[-1][1] <= max_gap:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


_PAUSE_LOCK = threading.Lock()
_PAUSED = 0  # requests in flight under the pause
_WAS_ENABLED = False


@contextlib.contextmanager
def collection_paused() -> Iterator[None]:
    """Hold back Python's cyclic garbage collector while a request is in flight (any thread, nestable).

    h5py calls :meth:`RemoteFile.readinto` while it holds its global lock, and the request runs on
    fsspec's event-loop thread. A collection that starts on that thread and frees an h5py object
    needs the same lock to release it, and waits for the thread that waits for the request: both
    wait for ever (h5py issue 2019, dask issue 7547; it hung a test of ours after a Keras fit had
    left h5py objects in reference cycles). With the collector held back while any request is in
    flight, no collection starts on that thread then; what it would have freed is freed by the
    next collection after the last request. If the collector was disabled when the first request
    started, it stays disabled.
    """
    global _PAUSED, _WAS_ENABLED
    with _PAUSE_LOCK:
        if _PAUSED == 0:
            _WAS_ENABLED = gc.isenabled()
            gc.disable()
        _PAUSED += 1
    try:
        yield
    finally:
        with _PAUSE_LOCK:
            _PAUSED -= 1
            if _PAUSED == 0 and _WAS_ENABLED:
                gc.enable()


class RemoteFile(io.RawIOBase):
    """One object of an fsspec file system, read-only, with a block cache for HDF5's small reads.

    Create it with :func:`open_remote`. Thread-safe: h5py reads it under its
    own lock while :meth:`fetch` serves the reader's chunk path from other threads.

    Parameters
    ----------
    fs
        The fsspec file system.
    path
        The object's path in ``fs`` (without the scheme).
    url
        The URL as the user gave it (messages).
    size
        The object's size in bytes.
    """

    def __init__(self, fs: Any, path: str, url: str, size: int) -> None:
        super().__init__()
        self.fs = fs
        self.path = path
        self.url = url
        self.size = size
        #: What this file cost on the wire.
        self.stats = TransferStats()
        self._position = 0
        self._blocks: OrderedDict[int, bytes] = OrderedDict()
        self._head: bytes | None = None
        self._lock = threading.Lock()
        _OPEN[repr(self)] = self

    # -- io.RawIOBase -------------------------------------------------------
    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._position

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._position, io.SEEK_END: self.size}[whence]
        self._position = max(0, base + offset)
        return self._position

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        start = self._position
        end = min(self.size, start + len(view))
        if end <= start:
            return 0
        view[: end - start] = self._read(start, end)
        self._position = end
        return end - start

    def read(self, size: int = -1) -> bytes:
        start = self._position
        end = self.size if size is None or size < 0 else min(self.size, start + size)
        if end <= start:
            return b""
        data = self._read(start, end)
        self._position = end
        return data

    def readall(self) -> bytes:
        return self.read(-1)

    def write(self, data: Any) -> int:
        raise io.UnsupportedOperation(f"{self.url} is opened read-only")

    # -- the block cache ----------------------------------------------------
    def _read(self, start: int, end: int) -> bytes:
        """Bytes ``[start, end)`` out of the cache, fetching the missing blocks (one request for adjacent ones)."""
        with self._lock:
            if self._head is None:
                self._head = self._get([(0, min(self.size, HEAD_BYTES))], metadata=True)[0]
            head = self._head
            if end <= len(head):
                return head[start:end]
            first, last = start // BLOCK_BYTES, (end - 1) // BLOCK_BYTES
            missing = [k for k in range(first, last + 1) if k not in self._blocks]
            if missing:
                runs = coalesce([(k * BLOCK_BYTES, min(self.size, (k + 1) * BLOCK_BYTES)) for k in missing], 0)
                for (lo, hi), data in zip(runs, self._get(runs, metadata=True), strict=True):
                    for k in range(lo // BLOCK_BYTES, -(-hi // BLOCK_BYTES)):
                        self._blocks[k] = data[k * BLOCK_BYTES - lo : (k + 1) * BLOCK_BYTES - lo]
            parts = []
            for k in range(first, last + 1):
                self._blocks.move_to_end(k)
                parts.append(self._blocks[k])
            while len(self._blocks) > CACHE_BLOCKS:
                self._blocks.popitem(last=False)
            joined = b"".join(parts)
            return joined[start - first * BLOCK_BYTES : end - first * BLOCK_BYTES]

    def fetch(self, ranges: Sequence[tuple[int, int]], max_gap: int = COALESCE_GAP_BYTES) -> list[bytes]:
        """The bytes of each range ``(start, end)``: neighbours coalesced into one request, requests concurrent.

        Parameters
        ----------
        ranges
            Byte ranges of the object, end exclusive.
        max_gap
            Ranges at most this far apart are fetched by one request (:func:`coalesce`).

        Returns
        -------
        list of bytes
            One per range, in the order given.

        Raises
        ------
        FileNotFoundError, PermissionError, OSError
            As :func:`open_remote` says them (the object vanished, access was revoked, the store failed).
        """
        merged = coalesce(ranges, max_gap)
        fetched = self._get(merged, metadata=False)
        starts = [start for start, _ in merged]
        out = []
        for start, end in ranges:
            k = bisect.bisect_right(starts, start) - 1  # the merged range that holds this one
            base = starts[k]
            out.append(fetched[k][start - base : end - base])
        return out

    def _get(self, ranges: Sequence[tuple[int, int]], metadata: bool) -> list[bytes]:
        """One request per range, made concurrently by the file system (``cat_ranges``), counted."""
        if not ranges:
            return []
        if self.closed:
            raise ValueError(f"{self.url}: the remote file is closed; open it again with h5ml.open()")
        try:
            with collection_paused():
                found = self.fs.cat_ranges([self.path] * len(ranges), [r[0] for r in ranges], [r[1] for r in ranges])
        except Exception as exc:  # the file system's own errors: said in our words
            raise _failure(exc, self.url) from exc
        data = [bytes(part) for part in found]
        for (start, end), part in zip(ranges, data, strict=True):
            if isinstance(part, BaseException) or len(part) != end - start:
                raise OSError(
                    f"{self.url}: the store returned {len(part)} bytes for bytes [{start}, {end}) of a "
                    f"{self.size}-byte object: it changed while it was read; open it again"
                )
        received = sum(len(part) for part in data)
        self.stats.requests += len(ranges)
        self.stats.bytes += received
        if metadata:
            self.stats.metadata_requests += len(ranges)
            self.stats.metadata_bytes += received
        return data

    def read_at(self, offset: int, size: int) -> bytes:
        """Bytes ``[offset, offset + size)`` in one request (a :data:`h5ml.model.checksums.ByteReader`).

        Raises
        ------
        OSError
            If the range lies outside the object (SPEC §10.4: nothing is fetched for bytes it does not hold).
        """
        if offset < 0 or size < 0 or offset + size > self.size:
            raise OSError(
                f"a stored chunk declares bytes {offset}..{offset + size}, beyond the object's end at {self.size}"
            )
        return self.fetch([(offset, offset + size)])[0] if size else b""

    def __repr__(self) -> str:  # h5py names a file object's HDF5 file by this text: unique while it lives
        return f"<h5ml RemoteFile {self.url!r} at 0x{id(self):x}>"


#: The open remote files by their text (``h5file.filename`` of the HDF5 file h5py opened on one).
_OPEN: weakref.WeakValueDictionary[str, RemoteFile] = weakref.WeakValueDictionary()


def remote_of(h5file: Any) -> RemoteFile | None:
    """The :class:`RemoteFile` under an ``h5py.File`` opened on one (``fileobj`` driver), or None."""
    try:
        if h5file.driver != "fileobj":
            return None
        return _OPEN.get(str(h5file.filename))
    except (ValueError, RuntimeError, OSError):
        return None


def _filesystem(url: str, storage_options: Mapping[str, Any] | None) -> tuple[Any, str]:
    """The fsspec file system of ``url`` and the path inside it."""
    try:
        from fsspec.core import url_to_fs  # type: ignore[import-untyped]
    except ImportError as exc:  # pragma: no cover - fsspec is a dependency of the remote extra
        raise H5MLError(f"{url}: reading URLs needs fsspec: pip install 'h5ml[remote]'", path=url) from exc
    try:
        fs, path = url_to_fs(url, **dict(storage_options or {}))
    except (ImportError, ValueError) as exc:
        scheme = url.split("://", 1)[0]
        raise H5MLError(
            f"{url}: no fsspec file system for {scheme}:// is installed or it refused the options ({exc}); "
            f"install its package (s3fs for s3://, gcsfs for gs://, adlfs for az://, aiohttp for https://)",
            path=url,
        ) from exc
    return fs, str(path)


def _failure(exc: BaseException, url: str) -> BaseException:
    """The error a file system raised, as what was wrong, where and what to do."""
    if isinstance(exc, FileNotFoundError):
        return FileNotFoundError(2, f"{url}: no such object; check the bucket and key (and the endpoint)")
    text = " ".join(str(exc).split())
    lowered = text.lower()
    if isinstance(exc, PermissionError) or any(
        word in lowered for word in ("access denied", "forbidden", "invalidaccesskeyid", "signaturedoesnotmatch", "403")
    ):
        return PermissionError(13, f"{url}: the store refused access ({text}); {PYTHON_CREDENTIALS}")
    return OSError(
        f"{url}: reading from the store failed ({type(exc).__name__}: {text}); check the URL and the "
        f"endpoint, and try again"
    )


def open_remote(url: str, storage_options: Mapping[str, Any] | None = None) -> RemoteFile:
    """Open the object at ``url`` read-only through fsspec (one metadata request; no data yet).

    Parameters
    ----------
    url
        ``s3://bucket/key.h5``, ``gs://...``, ``az://...``, ``https://...``, ``memory://...``, ``file://...``.
    storage_options
        The file system's options (credentials, ``client_kwargs={"endpoint_url": ...}`` for s3fs); None: its
        defaults, which read credentials from the environment.

    Returns
    -------
    RemoteFile

    Raises
    ------
    FileNotFoundError
        If there is no object at ``url``.
    PermissionError
        If the store refused the credentials.
    IsADirectoryError
        If ``url`` names a folder (prefix).
    H5MLError
        If no fsspec implementation of the scheme is installed.
    OSError
        If the store failed otherwise.
    """
    fs, path = _filesystem(url, storage_options)
    try:
        info = fs.info(path)
    except Exception as exc:
        raise _failure(exc, url) from exc
    if info.get("type") == "directory":
        prefix = url.rstrip("/") + "/"
        raise IsADirectoryError(
            21,
            f"{url}: is a folder (prefix), not a file; give the URL of an .h5 file, or for a sharded dataset its "
            f"prefix with a final '/' ({prefix}, which means its {prefix}index.json): without the '/' a URL "
            "names a file",
        )
    return RemoteFile(fs, path, url, int(info.get("size") or 0))


def read_remote_text(url: str, storage_options: Mapping[str, Any] | None = None) -> str:
    """The whole object at ``url`` as UTF-8 text (a shard index), in one request.

    Raises
    ------
    FileNotFoundError, PermissionError, H5MLError, OSError
        As :func:`open_remote`.
    UnicodeDecodeError
        If the object is not UTF-8.
    """
    fs, path = _filesystem(url, storage_options)
    try:
        data = fs.cat_file(path)
    except Exception as exc:
        raise _failure(exc, url) from exc
    return bytes(data).decode("utf-8")


def list_prefix(url: str, storage_options: Mapping[str, Any] | None = None) -> set[str]:
    """Every object under the prefix ``url`` (a dataset's folder), as paths relative to it (``train/train-00000.h5``).

    One listing of the store (``fs.find``: S3 lists 1000 keys per request), so that a validator learns which
    shards exist, and which files no index lists, without one request per shard.

    Raises
    ------
    PermissionError, H5MLError, OSError
        As :func:`open_remote` (refused credentials, no fsspec implementation, the store failed).
    """
    fs, path = _filesystem(url, storage_options)
    root = path.rstrip("/")
    try:
        found = fs.find(root)
    except FileNotFoundError:
        return set()  # an empty prefix: nothing under it
    except Exception as exc:
        raise _failure(exc, url) from exc
    return {str(key)[len(root) + 1 :] for key in found if str(key).startswith(root + "/")}
