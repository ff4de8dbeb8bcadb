"""An h5ml file open for reading: :class:`Dataset`, which :func:`h5ml.reader.opening.open` returns (§1.3-§1.5, §3.6, §4, §7.3, §10).

::

    with h5ml.open("digits.h5") as ds:
        train = ds["train"]
        batch = train[[5, 2, 9]]          # {"image": array (3, 8, 8), "label": array (3,)}
        image = train["image"][5]         # one sample

A :class:`Dataset` checks the file when it is opened: ``format`` is ``"h5ml"``
(§4.1), the MAJOR version is one this reader implements (§1.3; a newer MINOR
is read, ignoring what it does not know, §1.4), every ``must_understand``
extension is known (§1.5), the completion marker is set (§4.4), and no
external link, external raw storage or virtual dataset is present (§3.6,
§10.1) unless ``allow_external=True``. Filters are checked per feature on its
first read (§3.5). The splits are :class:`h5ml.reader.split.Split`; the
storage walk is :mod:`h5ml.model.storage`.

What a dataset holds, per process: the read-only ``h5py.File`` (opened by
:mod:`h5ml.reader.handle`), the h5py objects it handed out (each chunked
dataset opened with the chunk cache of :mod:`h5ml.reader.chunk_cache`,
§7.3), the memory map of the file that
unfiltered numeric data is copied from (:mod:`h5ml.reader.direct`; none with
``direct=False``), and the count of its reads (:attr:`Dataset.read_stats`).
A dataset, its splits and its features pickle by path and options; the copy
opens the file again on first use (DataLoader workers under
``spawn``/``forkserver``, case C02). After ``fork`` the child notices it
(a fork counter, cheaper than ``os.getpid()`` on the per-sample path), drops
its copies of the parent's handle and map, and opens its own.
:meth:`Dataset.close` closes the file and unmaps it.

Invalid and damaged files (§9, §10): opening and reading either succeed with
the stored values or raise an :class:`h5ml.H5MLError` that says what is wrong,
where (file and HDF5 path) and what to do; never a bare error of h5py or
numpy. Names are listed with HDF5's link iteration, which keeps them as bytes,
so a name that is not UTF-8 cannot stop the listing (such members cannot be
splits or features, §5.1, and are left out). A split or a feature whose HDF5
objects are broken is left out of :attr:`Dataset.splits` or
:attr:`Split.features`, and asking for it by name raises the reason. Optional
attributes are read when asked for: one that cannot be decoded raises then,
and never makes samples unreadable. See :mod:`h5ml.reader.feature` for reads.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator, Mapping
from functools import partial
from types import MappingProxyType, TracebackType
from typing import TYPE_CHECKING, Any

import h5py

from h5ml import spec
from h5ml.errors import H5MLError, SplitNotFoundError
from h5ml.model.hdf5 import read_attributes
from h5ml.model.header import check_header
from h5ml.model.storage import check_storage
from h5ml.reader.chunk_cache import DEFAULT_CACHE_BYTES, dataset_cache, open_chunked
from h5ml.reader.decoded_cache import decoded_budget
from h5ml.reader.file_map import FileMap, open_file_map
from h5ml.reader.filters import check_required_filters
from h5ml.reader.handle import FORK_GENERATION, SizeWatch, check_open_options, open_h5file
from h5ml.reader.read_stats import ReadStats
from h5ml.reader.root_metadata import read_root_fingerprint, read_root_metadata
from h5ml.reader.split import Split, list_splits

if TYPE_CHECKING:  # pragma: no cover
    from h5ml.model.metadata import RootMetadata

__all__ = ["Dataset"]


class Dataset:
    """An h5ml file open for reading: its metadata and its splits (§4, §5).

    Create it with :func:`open`. The HDF5 file is opened on first use (again
    after unpickling, and again in a forked child) and closed by :meth:`close`
    or by leaving a ``with`` block. Parameters are those of :func:`open`.

    Notes
    -----
    ``dataset[name]`` returns a :class:`Split`; iterating yields split names in
    the file's order. Only root groups whose names do not start with ``"_"`` are
    splits (§5.1, §5.4); other root objects are ignored (§5.5).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        locking: bool | None = None,
        allow_external: bool = False,
        cache_bytes: int | None = None,
        direct: bool = True,
        verify: bool = False,
        chunk_cache_bytes: int | None = None,
        zero_copy: bool = False,
    ) -> None:
        check_open_options(os.fspath(path), cache_bytes, direct, zero_copy)
        self._zero_copy = bool(zero_copy)
        self._chunk_cache_bytes = decoded_budget(chunk_cache_bytes, cache_bytes)
        self._path = os.path.abspath(os.fspath(path))
        self._locking = locking
        self._allow_external = bool(allow_external)
        self._cache_bytes = cache_bytes
        self._direct = bool(direct)
        self._verify = bool(verify)
        self._init_runtime()

    def _init_runtime(self) -> None:
        self._file: h5py.File | None = None
        self._pid: int | None = None
        self._generation = -1
        self._lock = threading.Lock()
        self._nodes: dict[str, Any] = {}
        self._splits: dict[str, Split] | None = None
        self._broken_splits: dict[str, H5MLError] = {}
        self._metadata: RootMetadata | None = None
        self._version: tuple[int, int] = spec.FORMAT_VERSION
        self._closed = False
        self._map: FileMap | None = None
        self._map_made = False  # open_file_map was asked in this process (it may have said None)
        self._watch: SizeWatch | None = None  # the size of the file at open, in this process
        self._read_stats = ReadStats()
        self._opener: Callable[[], h5py.File] | None = None  # how a subclass opens its file (a URL: reader.remote)

    def __getstate__(self) -> dict[str, Any]:
        return {
            "path": self._path,
            "locking": self._locking,
            "allow_external": self._allow_external,
            "cache_bytes": self._cache_bytes,
            "direct": self._direct,
            "verify": self._verify,
            "chunk_cache_bytes": self._chunk_cache_bytes,
            "zero_copy": self._zero_copy,
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._path = state["path"]
        self._locking = state["locking"]
        self._allow_external = state["allow_external"]
        self._cache_bytes = state["cache_bytes"]
        self._direct = bool(state.get("direct", True))
        self._verify = bool(state.get("verify", False))
        self._zero_copy = bool(state.get("zero_copy", False))
        self._chunk_cache_bytes = decoded_budget(state.get("chunk_cache_bytes"), self._cache_bytes)
        self._init_runtime()

    # -- the HDF5 file ------------------------------------------------------
    @property
    def path(self) -> str:
        """The absolute path of the file."""
        return self._path

    @property
    def allow_external(self) -> bool:
        """Whether external links, external raw storage and virtual datasets are followed (§3.6, §10.1)."""
        return self._allow_external

    @property
    def direct(self) -> bool:
        """Whether unfiltered numeric data is copied out of a memory map of the file (§7.3; see :func:`open`)."""
        return self._direct

    @property
    def zero_copy(self) -> bool:
        """Whether reads may return read-only views of the file's memory map (``zero_copy=True`` of :func:`open`)."""
        return self._zero_copy

    @property
    def verify(self) -> bool:
        """Whether reads check every chunk against its checksum first (``verify=True`` of :func:`open`, §8.4)."""
        return self._verify

    @property
    def read_stats(self) -> ReadStats:
        """The count of this dataset's reads of feature data in this process (§7.3).

        HDF5 reads and copies out of the memory map, per :class:`h5ml.reader.read_stats.ReadStats`: a public
        measure of what a request cost (``read_stats.record()`` lists each read). It starts at zero when the
        dataset is created, unpickled, or first used in a forked child.
        """
        return self._read_stats

    @property
    def file_cache_bytes(self) -> int:
        """The chunk-cache bytes per dataset set on the file access property list (§7.3).

        Filtered datasets use it (or a larger cache of their own, see
        :meth:`h5_node`); unfiltered chunked datasets are opened with no cache.
        """
        return DEFAULT_CACHE_BYTES if self._cache_bytes is None else self._cache_bytes

    @property
    def h5file(self) -> h5py.File:
        """The underlying read-only ``h5py.File`` (low level), opened or reopened as needed.

        Raises
        ------
        ValueError
            If the dataset was closed.
        """
        if self._closed:
            raise ValueError(f"{self._path}: the h5ml dataset is closed; open it again with h5ml.open()")
        pid = os.getpid()
        current = self._file
        if current is not None and self._pid == pid:
            return current
        if self._pid is not None and self._pid != pid:
            # A forked child: the parent's lock may be held by a thread that does not exist here.
            self._lock = threading.Lock()
        with self._lock:
            if self._file is None or self._pid != pid:
                self._forget_inherited()
                opener = self._opener or partial(open_h5file, self._path, self._locking, self.file_cache_bytes)
                handle = opener()
                try:
                    self._check(handle)
                except BaseException:
                    handle.close()
                    raise
                self._file, self._pid, self._generation = handle, pid, FORK_GENERATION[0]
                self._watch = SizeWatch(handle)
            return self._file

    def _forget_inherited(self) -> None:
        inherited, self._file = self._file, None
        self._nodes = {}
        self._release_map(inherited=inherited is not None)  # a child unmaps its copy; the parent keeps its own
        if inherited is not None:
            self._read_stats.reset()
            try:  # closes this process's copy only; the parent keeps its own
                inherited.close()
            except Exception:  # a stale handle may already be invalid here
                pass

    def _release_map(self, inherited: bool = False) -> None:
        """Unmap the file (every reader of the map is released first); the next :meth:`file_map` maps it again.

        ``inherited``: the map was made by the parent of this forked process.
        """
        file_map, self._map, self._map_made = self._map, None, False
        if file_map is not None:
            file_map.close(inherited=inherited)

    def file_map(self) -> FileMap | None:
        """The read-only memory map of the file in this process, made on first use (low level, §7.3).

        Returns
        -------
        FileMap or None
            None when the dataset was opened with ``direct=False``, or the file
            cannot be mapped safely (see :func:`h5ml.reader.file_map.open_file_map`).

        Raises
        ------
        ValueError
            If the dataset was closed.
        """
        if not self._direct:
            return None
        f = self.h5file  # after a fork: reopens, and drops the parent's map
        with self._lock:
            if not self._map_made:
                self._map, self._map_made = open_file_map(f, self._chunk_cache_bytes, self._zero_copy), True
            return self._map

    def _check(self, f: h5py.File) -> None:
        """Refuse what a reader must refuse at open (§1.3, §1.5, §3.5, §3.6, §4.1, §4.4)."""
        version = check_header(f, self._path, "read")
        check_required_filters(f, self._path)  # SPEC §3.5-R3: before any sample data is read
        if not self._allow_external:
            # SPEC §10.1-R1, SPEC §10.1-R2: refuse external data unless asked, before any sample is read; a view
            # file's virtual datasets only when their mapping passes §12.6 (SPEC §10.1-R4)
            check_storage(f, self._path, views=True)
        self._version = version

    def check_file_size(self, where: str, rows: str) -> None:
        """Refuse rows just read through HDF5 if the file shrank since it was opened (:class:`SizeWatch`, §10.3).

        Raises
        ------
        InvalidFileError
            If the file was truncated while open.
        """
        watch, file_map = self._watch, self._map
        if watch is not None:
            watch.check(where, rows, None if file_map is None else file_map.size_now())

    def h5_node(self, hdf5_path: str) -> Any:
        """Return the h5py group or dataset at ``hdf5_path`` (low level, cached per open file).

        Chunk caches (§7.3): an unfiltered chunked dataset is opened with no
        chunk cache (HDF5 reads its rows straight from the file); a filtered
        one whose chunks need a larger cache than the file's gets its own:
        ``chunks.cache_bytes_for(chunk_nbytes)``, or at least one chunk when
        ``cache_bytes`` was given. Other datasets use the file's cache
        (:attr:`file_cache_bytes`).

        Raises
        ------
        KeyError
            If no object has that path (h5py also raises KeyError, OSError or
            RuntimeError for a damaged object: callers map them to InvalidFileError).
        """
        node = self._nodes.get(hdf5_path)
        if node is not None and self._generation == FORK_GENERATION[0]:
            return node  # the per-sample path: opened in this process (close() and a reopen clear the cache)
        f = self.h5file
        node = self._nodes.get(hdf5_path)
        if node is not None:
            return node
        node = f[hdf5_path]
        if isinstance(node, h5py.Dataset) and node.chunks is not None:
            cache = dataset_cache(node, self._cache_bytes, self.file_cache_bytes)
            if cache is not None:
                node = open_chunked(f, hdf5_path, node, cache)
        self._nodes[hdf5_path] = node
        return node

    # -- metadata -----------------------------------------------------------
    @property
    def format_version(self) -> tuple[int, int]:
        """The file's ``format_version`` as ``(major, minor)`` (§1.2)."""
        self.h5file  # noqa: B018 - the version is read by the checks at open
        return self._version

    @property
    def metadata(self) -> RootMetadata:
        """The root attributes as a :class:`h5ml.model.metadata.RootMetadata` (§4), parsed once.

        Raises
        ------
        MetadataError
            If the root attributes do not satisfy the schema (§4.2).
        InvalidFileError
            If the HDF5 library cannot read them (a damaged file), or one holds
            a value outside the storage profile (opaque, compound, complex, a
            reference: §3.2).
        """
        if self._metadata is None:
            self._metadata = read_root_metadata(self.h5file, self._path)
        return self._metadata

    @property
    def attrs(self) -> dict[str, Any]:
        """Every root attribute as Python values (§4.6), user attributes included.

        Raises
        ------
        EncodingError
            If an attribute holds a string that is not UTF-8 (§3.4).
        InvalidFileError
            If the HDF5 library cannot read an attribute (a damaged file).
        """
        return read_attributes(self.h5file, self._path, "/")

    @property
    def fingerprint(self) -> str | None:
        """The file fingerprint ``sha256:...`` (§8.3), or None when the file has none.

        Raises
        ------
        EncodingError, InvalidFileError
            If the attribute is not a UTF-8 string (§3.4, §8.3).
        """
        return read_root_fingerprint(self.h5file, self._path)

    # -- splits -------------------------------------------------------------
    @property
    def splits(self) -> Mapping[str, Split]:
        """The splits, in the file's order (§5.1): a read-only mapping name -> :class:`Split`.

        Root groups reached by hard links whose names are UTF-8 and do not
        start with ``"_"`` (§5.1, §5.4). A root object the HDF5 library cannot
        open (a damaged file) is left out; asking for it by name raises the
        reason (InvalidFileError).

        Raises
        ------
        InvalidFileError
            If the HDF5 library cannot list the root group's members.
        """
        if self._splits is None:
            self._splits, self._broken_splits = list_splits(self)
        return MappingProxyType(self._splits)

    @property
    def unreadable_splits(self) -> Mapping[str, H5MLError]:
        """The root members :attr:`splits` leaves out because they cannot be read: name -> the reason.

        A root object the HDF5 library cannot open (InvalidFileError, a
        damaged file) and a root member reached through a soft, user-defined
        or (without ``allow_external``) external link (InvalidFileError,
        SPEC §3.6-R2, E115), in the file's order.

        Raises
        ------
        InvalidFileError
            As :attr:`splits`.
        """
        self.splits  # noqa: B018 - lists the root and fills self._broken_splits
        return MappingProxyType(self._broken_splits)

    def every_split(self) -> tuple[str, ...]:
        """The names of every split, for a caller that takes them all: refused if one cannot be read.

        SPEC §3.6-R2: a copy, export or dump of a whole file never leaves out
        a split silently because it is a soft link or damaged.

        Returns
        -------
        tuple of str
            The names of :attr:`splits`, in the file's order.

        Raises
        ------
        InvalidFileError
            For the first root member in :attr:`unreadable_splits`, or as :attr:`splits`.
        """
        for error in self.unreadable_splits.values():
            raise error
        return tuple(self.splits)

    def __getitem__(self, name: str) -> Split:
        splits = self.splits
        if name in self._broken_splits:
            raise self._broken_splits[name]
        if name not in splits:
            available = ", ".join(repr(s) for s in splits) or "none"
            raise SplitNotFoundError(
                f"{self._path}: no split {name!r}; available splits: {available}", path=self._path, hdf5_path="/"
            )
        return splits[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self.splits)

    def __contains__(self, name: object) -> bool:
        return name in self.splits

    def __len__(self) -> int:
        return len(self.splits)

    # -- lifetime -----------------------------------------------------------
    @property
    def closed(self) -> bool:
        """True after :meth:`close`."""
        return self._closed

    def close(self) -> None:
        """Close the file and unmap it (§7.3). Further use raises ValueError; pickled copies are not affected."""
        if self._file is not None and self._pid == os.getpid():
            self._file.close()
        self._file = None
        self._nodes = {}
        self._splits = None
        self._release_map(inherited=self._pid is not None and self._pid != os.getpid())
        self._closed = True

    def __enter__(self) -> Dataset:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return _describe(self)


def _describe(dataset: Dataset) -> str:
    """``repr(dataset)``: the path, the version and each split's sample count, or why they are not shown."""
    if dataset._closed:
        return f"<h5ml.Dataset {dataset._path!r} (closed)>"
    if dataset._file is None or dataset._pid != os.getpid():
        return f"<h5ml.Dataset {dataset._path!r} (not open in this process)>"
    major, minor = dataset._version
    try:
        parts = ", ".join(f"{name}: {split.num_samples}" for name, split in dataset.splits.items())
    except H5MLError:
        parts = "invalid: run `h5ml validate --deep` on the file"
    return f"<h5ml.Dataset {dataset._path!r} h5ml {major}.{minor}, splits {{{parts}}}>"
