"""Opening h5ml files for reading: :func:`open`, :class:`Dataset` and :class:`Split`.

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
first read (§3.5).

The file is opened read-only. A dataset, its splits and its features pickle by
path and options; the copy opens the file again on first use (DataLoader
workers under ``spawn``/``forkserver``, case C02). After ``fork`` the child
notices the new process id and opens its own handle.

Chunk caches (§7.3, case C11): each filtered (compressed or checksummed)
chunked dataset gets a cache that holds several of its chunks, so that a chunk
is decoded once however its rows are asked for. Unfiltered chunked datasets
are read with no chunk cache: HDF5 then reads the requested rows straight from
the file, where a cache only adds a copy, and a cache smaller than the data
made random reads much slower (12 KiB rows: about 6.7 us per sample without a
cache, 89 us with a 64 MiB cache once the data outgrew it; 64-row slices were
not slower). Contiguous datasets never use a chunk cache.

Invalid and damaged files (§9, §10): opening and reading either succeed with
the stored values or raise an :class:`h5ml.H5MLError` that says what is wrong,
where (file and HDF5 path) and what to do; never a bare error of h5py or
numpy. Names are listed with HDF5's link iteration, which keeps them as bytes,
so a name that is not UTF-8 cannot stop the listing (such members cannot be
splits or features, §5.1, and are left out). A split or a feature whose HDF5
objects are broken is left out of :attr:`Dataset.splits` or
:attr:`Split.features`, and asking for it by name raises the reason. Optional
attributes are read when asked for: one that cannot be decoded raises then,
and never makes samples unreadable. See :mod:`h5ml.reader.features` for reads.
"""

from __future__ import annotations

import math
import os
import threading
from collections import deque
from collections.abc import Iterable, Iterator, Mapping
from types import MappingProxyType, TracebackType
from typing import TYPE_CHECKING, Any, Final

import h5py
import numpy as np

from h5ml import spec
from h5ml.errors import (
    FeatureNotFoundError,
    ForbiddenStorageError,
    H5MLError,
    InvalidFileError,
    NotH5MLError,
    SplitNotFoundError,
)
from h5ml.model.failures import LIBRARY_ERRORS, damaged_file, is_library_failure, validate_advice
from h5ml.model.hdf5 import group_links, member_names, read_attribute, read_attributes
from h5ml.model.header import check_header
from h5ml.reader.features import Feature, open_feature
from h5ml.reader.plan import Indices, check_index, normalize_indices
from h5ml.spec.chunks import cache_bytes_for

if TYPE_CHECKING:  # pragma: no cover
    from h5ml.model.metadata import RootMetadata

__all__ = ["DEFAULT_CACHE_BYTES", "Dataset", "Split", "open"]

#: §7.3 the chunk cache of each filtered dataset when ``cache_bytes`` is not given (64 MiB):
#: ``chunks.cache_bytes_for`` of a chunk no larger than 8 MiB. Unfiltered datasets get no cache.
DEFAULT_CACHE_BYTES: Final = cache_bytes_for(0)
#: HDF5 advises about 100 hash slots per chunk that fits in the cache.
_SLOTS_PER_CHUNK: Final = 100
#: The chunk cache's preemption weight: HDF5's default. At 1.0 (evict fully read chunks first) HDF5 2.0 never
#: evicts a partly read chunk, so random single-row reads grew an 8 MiB cache to every chunk touched (188 MB
#: of decoded gzip chunks here); at 0.75 or 0.99 it stayed within its size.
_CACHE_W0: Final = 0.75
#: How many times this process's line has forked: a child's count differs from its parent's, so a
#: file handle opened under another count was inherited (a cheaper test than ``os.getpid()``, a system
#: call, on the per-sample path).
_FORK_GENERATION: Final = [0]


def _count_fork() -> None:
    _FORK_GENERATION[0] += 1


os.register_at_fork(after_in_child=_count_fork)


def _next_prime(n: int) -> int:
    candidate = max(2, n)
    while any(candidate % d == 0 for d in range(2, math.isqrt(candidate) + 1)):
        candidate += 1
    return candidate


def _cache_slots(cache_bytes: int, chunk_nbytes: int = spec.TARGET_CHUNK_BYTES) -> int:
    """Hash slots of a chunk cache: a prime about 100 times the chunks that fit (HDF5's advice)."""
    return _next_prime(_SLOTS_PER_CHUNK * max(1, cache_bytes // max(1, chunk_nbytes)))


def open(
    path: str | os.PathLike[str],
    *,
    locking: bool | None = None,
    allow_external: bool = False,
    cache_bytes: int | None = None,
) -> Dataset:
    """Open an h5ml file for reading (§1.3-§1.5, §3.5, §3.6, §4.4).

    Parameters
    ----------
    path
        The file.
    locking
        HDF5 file locking. None keeps HDF5's default (and the
        ``HDF5_USE_FILE_LOCKING`` environment variable); False turns locking
        off, for read-only media and network file systems (NFS) where locks
        fail; True forces it on.
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

    Returns
    -------
    Dataset
        The open dataset (use it as a context manager, or call ``close()``).

    Raises
    ------
    FileNotFoundError
        If ``path`` does not exist.
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
    OSError
        If HDF5 cannot lock the file (another process writes it).
    """
    dataset = Dataset(path, locking=locking, allow_external=allow_external, cache_bytes=cache_bytes)
    dataset.h5file  # noqa: B018 - open now so that every check above raises here
    return dataset


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
    ) -> None:
        if cache_bytes is not None and cache_bytes < 0:
            raise ValueError(f"cache_bytes must be >= 0, got {cache_bytes}")
        self._path = os.path.abspath(os.fspath(path))
        self._locking = locking
        self._allow_external = bool(allow_external)
        self._cache_bytes = cache_bytes
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

    def __getstate__(self) -> dict[str, Any]:
        return {
            "path": self._path,
            "locking": self._locking,
            "allow_external": self._allow_external,
            "cache_bytes": self._cache_bytes,
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._path = state["path"]
        self._locking = state["locking"]
        self._allow_external = state["allow_external"]
        self._cache_bytes = state["cache_bytes"]
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
                handle = self._open_file()
                try:
                    self._check(handle)
                except BaseException:
                    handle.close()
                    raise
                self._file, self._pid, self._generation = handle, pid, _FORK_GENERATION[0]
            return self._file

    def _forget_inherited(self) -> None:
        inherited, self._file = self._file, None
        self._nodes = {}
        if inherited is not None:
            try:  # closes this process's copy only; the parent keeps its own
                inherited.close()
            except Exception:  # a stale handle may already be invalid here
                pass

    def _open_file(self) -> h5py.File:
        nbytes = self.file_cache_bytes
        kwargs: dict[str, Any] = {"rdcc_nbytes": nbytes, "rdcc_nslots": _cache_slots(nbytes), "rdcc_w0": _CACHE_W0}
        if self._locking is not None:
            kwargs["locking"] = self._locking
        try:
            return h5py.File(self._path, "r", **kwargs)
        except (FileNotFoundError, PermissionError):
            raise
        except LIBRARY_ERRORS as exc:
            if not is_library_failure(exc):
                raise
            text = str(exc)
            if "unable to lock file" in text.lower():
                raise OSError(
                    getattr(exc, "errno", None),
                    f"{self._path}: HDF5 could not lock the file for reading ({text}); another process has it "
                    "open for writing. Wait for it to finish, or pass locking=False on read-only media or NFS",
                ) from exc
            if not os.path.exists(self._path):
                raise FileNotFoundError(2, f"{self._path}: no such file") from exc
            raise NotH5MLError(
                f"{self._path}: cannot be opened as HDF5 ({text}); it is not an h5ml file or it is damaged; "
                f"{validate_advice(self._path)}",
                path=self._path,
            ) from exc

    def _check(self, f: h5py.File) -> None:
        """Refuse what a reader must refuse at open (§1.3, §1.5, §3.6, §4.1, §4.4)."""
        version = check_header(f, self._path, "read")
        if not self._allow_external:
            _check_storage(f, self._path)
        self._version = version

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
        if node is not None and self._generation == _FORK_GENERATION[0]:
            return node  # the per-sample path: opened in this process (close() and a reopen clear the cache)
        f = self.h5file
        node = self._nodes.get(hdf5_path)
        if node is not None:
            return node
        node = f[hdf5_path]
        if isinstance(node, h5py.Dataset) and node.chunks is not None:
            cache = self._chunk_cache(node)
            if cache is not None:
                # HDF5 shares one open dataset between handles: close the probe so
                # that the new cache settings are applied, not the first open's.
                node.id.close()
                dapl = h5py.h5p.create(h5py.h5p.DATASET_ACCESS)
                dapl.set_chunk_cache(*cache, _CACHE_W0)
                # readonly=True, as f[path] does for a read-only file: h5py then keeps its per-dataset reader
                # and selector instead of rebuilding them on every read (measured: 27 us per row read instead
                # of 6 us).
                node = h5py.Dataset(h5py.h5d.open(f.id, hdf5_path.encode("utf-8"), dapl=dapl), readonly=True)
        self._nodes[hdf5_path] = node
        return node

    def _chunk_cache(self, node: h5py.Dataset) -> tuple[int, int] | None:
        """``(slots, bytes)`` of the chunk cache a chunked dataset needs, or None for the file's (§7.3)."""
        if node.id.get_create_plist().get_nfilters() == 0:
            return 0, 0  # unfiltered: read straight from the file
        chunk_nbytes = math.prod(node.chunks) * node.dtype.itemsize
        need = cache_bytes_for(chunk_nbytes) if self._cache_bytes is None else max(self._cache_bytes, chunk_nbytes)
        if need > self.file_cache_bytes:
            return _cache_slots(need, chunk_nbytes), need
        return None

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
            If the HDF5 library cannot read them (a damaged file).
        """
        if self._metadata is None:
            from h5ml.model.metadata import RootMetadata

            f = self.h5file
            try:
                self._metadata = RootMetadata.from_file(f)
            except H5MLError:
                raise
            except LIBRARY_ERRORS as exc:
                if not is_library_failure(exc):
                    raise
                raise damaged_file(self._path, "/", "reading the root attributes", exc) from exc
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
        value = read_attribute(self.h5file, "fingerprint", self._path, "/")
        if value is None or isinstance(value, str):
            return value
        raise InvalidFileError(
            f"{self._path}: the root attribute 'fingerprint' is {value!r:.80}, not a string (§8.3); "
            f"{validate_advice(self._path)}",
            path=self._path,
            hdf5_path="/",
        )

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
            f = self.h5file
            found: dict[str, Split] = {}
            broken: dict[str, H5MLError] = {}
            for name in member_names(f, self._path, "/", external=self._allow_external):
                if name.startswith(spec.RESERVED_PREFIX):
                    continue
                try:
                    node = self.h5_node("/" + name)
                except LIBRARY_ERRORS as exc:
                    if not is_library_failure(exc):
                        raise
                    broken[name] = damaged_file(self._path, "/" + name, "opening this root object", exc)
                    continue
                if isinstance(node, h5py.Group):
                    found[name] = Split(self, name)
            self._splits, self._broken_splits = found, broken
        return MappingProxyType(self._splits)

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
        """Close the file. Further use raises ValueError; pickled copies are not affected."""
        if self._file is not None and self._pid == os.getpid():
            self._file.close()
        self._file = None
        self._nodes = {}
        self._splits = None
        self._closed = True

    def __enter__(self) -> Dataset:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        if self._closed:
            return f"<h5ml.Dataset {self._path!r} (closed)>"
        if self._file is None or self._pid != os.getpid():
            return f"<h5ml.Dataset {self._path!r} (not open in this process)>"
        major, minor = self._version
        try:
            parts = ", ".join(f"{name}: {split.num_samples}" for name, split in self.splits.items())
        except H5MLError:
            parts = "invalid: run `h5ml validate --deep` on the file"
        return f"<h5ml.Dataset {self._path!r} h5ml {major}.{minor}, splits {{{parts}}}>"


def _check_storage(f: h5py.File, path: str) -> None:
    """Refuse external links, external raw storage and virtual datasets (§3.6, §10.1).

    Walks every group breadth first with HDF5's link iteration (names stay
    bytes, so a name that is not UTF-8 cannot stop the walk; links are never
    followed), each object once: an object linked under several names, or a
    link back to a group above, cannot make the walk loop.

    Raises
    ------
    ForbiddenStorageError
        For the first external link, virtual dataset or dataset with external
        raw storage met.
    InvalidFileError
        If the HDF5 library fails while listing or opening an object (a damaged file).
    """
    seen: set[tuple[int, int]] = set()
    groups: deque[tuple[str, Any]] = deque([("/", f.id)])
    while groups:
        parent, gid = groups.popleft()
        for raw, kind in group_links(gid, path, parent):
            where = f"{parent.rstrip('/')}/{raw.decode('utf-8', 'replace')}"
            if kind == h5py.h5l.TYPE_EXTERNAL:
                _refuse_external_link(gid, raw, path, where)
            if kind != h5py.h5l.TYPE_HARD:
                continue  # soft and user-defined links stay inside the file; readers ignore them (§3.6)
            try:
                oid = h5py.h5o.open(gid, raw)
                info = h5py.h5o.get_info(oid)
                key = (int(info.fileno), int(info.addr))
                if key in seen:
                    continue
                seen.add(key)
                if isinstance(oid, h5py.h5g.GroupID):
                    groups.append((where, oid))
                elif isinstance(oid, h5py.h5d.DatasetID):
                    _check_dataset_storage(oid, path, where)
            except H5MLError:
                raise
            except LIBRARY_ERRORS as exc:
                if not is_library_failure(exc):
                    raise
                raise damaged_file(path, where, "opening", exc) from exc


def _refuse_external_link(gid: Any, raw: bytes, path: str, where: str) -> None:
    """Raise ForbiddenStorageError for the external link ``raw`` of group ``gid`` (§3.6, §10.1)."""
    try:
        target_file, target = (part.decode("utf-8", "replace") for part in gid.links.get_val(raw))
    except LIBRARY_ERRORS as exc:
        if not is_library_failure(exc):
            raise
        raise damaged_file(path, where, "reading the external link", exc) from exc
    raise ForbiddenStorageError(
        f"{path}: {where} is an external link to {target_file}:{target} (§3.6, §10.1); an h5ml file "
        "must not read other files. Open it with allow_external=True only if you trust it",
        path=path,
        hdf5_path=where,
    )


def _check_dataset_storage(oid: Any, path: str, where: str) -> None:
    """Refuse a virtual dataset or one with external raw storage (§3.6, §10.1)."""
    dcpl = oid.get_create_plist()
    if dcpl.get_layout() == h5py.h5d.VIRTUAL:
        raise ForbiddenStorageError(
            f"{path}: {where} is a virtual dataset (§3.6, §10.1); its data may come from other files. Open "
            "the file with allow_external=True only if you trust it",
            path=path,
            hdf5_path=where,
        )
    if dcpl.get_external_count() > 0:
        target = dcpl.get_external(0)[0]
        label = target.decode("utf-8", "replace") if isinstance(target, bytes) else str(target)
        raise ForbiddenStorageError(
            f"{path}: {where} stores its data in the external file {label!r} (§3.6, §10.1). Open the file "
            "with allow_external=True only if you trust it",
            path=path,
            hdf5_path=where,
        )


class Split:
    """One split of a dataset: features with the same number of samples (§5).

    Obtain it as ``dataset["train"]``. ``split["image"]`` returns a
    :class:`h5ml.reader.features.Feature`; ``split[idx]`` and :meth:`read` return a
    dict feature name -> values (see :mod:`h5ml.reader.features` for value types).
    Iterating yields one dict per sample. Pickles by path (C02).
    """

    def __init__(self, dataset: Dataset, name: str) -> None:
        self._dataset = dataset
        self._name = name
        self._reset()

    def _reset(self) -> None:
        self._features: dict[str, Feature] | None = None
        self._all: tuple[tuple[str, Feature], ...] | None = None
        self._skipped: dict[str, H5MLError] = {}
        self._damaged = False  # a feature failed to open because the file is damaged
        self._attrs: dict[str, Any] | None = None
        self._attr_values: dict[str, Any] = {}
        self._num_samples: int | None = None

    def __getstate__(self) -> dict[str, Any]:
        return {"dataset": self._dataset, "name": self._name}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._dataset = state["dataset"]
        self._name = state["name"]
        self._reset()

    @property
    def name(self) -> str:
        """The split name (§5.1)."""
        return self._name

    @property
    def dataset(self) -> Dataset:
        """The dataset that holds the split."""
        return self._dataset

    def _group(self) -> h5py.Group:
        return self._dataset.h5_node("/" + self._name)

    @property
    def attrs(self) -> dict[str, Any]:
        """Every split attribute as Python values (§5.3), read once.

        Raises
        ------
        EncodingError
            If an attribute holds a string that is not UTF-8 (§3.4).
        InvalidFileError
            If the HDF5 library cannot read an attribute (a damaged file).
        """
        if self._attrs is None:
            self._attrs = read_attributes(self._group(), self._dataset.path, "/" + self._name)
        return dict(self._attrs)

    def _attr(self, name: str, types: tuple[type, ...], kind: str) -> Any:
        """Attribute ``name`` if it is one of ``types`` (never bool), None when absent; read when first asked for.

        Raises
        ------
        EncodingError
            If it is a string that is not UTF-8 (§3.4).
        InvalidFileError
            If it has another type (§5.3), or the HDF5 library cannot read it.
        """
        if name in self._attr_values:
            value = self._attr_values[name]
        else:
            path = self._dataset.path
            value = self._attr_values[name] = read_attribute(self._group(), name, path, "/" + self._name)
        if value is None or (isinstance(value, types) and not isinstance(value, bool)):
            return value
        path = self._dataset.path
        raise InvalidFileError(
            f"{path}: attribute {name!r} of split /{self._name} is {value!r:.80}, not {kind} (§5.3); "
            f"{validate_advice(path)}",
            path=path,
            hdf5_path="/" + self._name,
        )

    @property
    def num_samples(self) -> int:
        """The split's ``num_samples`` attribute (§5.3): every feature holds that many samples.

        Raises
        ------
        InvalidFileError
            If the attribute is missing or not a non-negative integer.
        """
        if self._num_samples is not None:
            return self._num_samples
        value = self._attr("num_samples", (int,), "an integer >= 0")
        if value is None or value < 0:
            path = self._dataset.path
            raise InvalidFileError(
                f"{path}: split /{self._name} has num_samples = {value!r}; it must be an integer >= 0 (§5.3); "
                f"{validate_advice(path)}",
                path=path,
                hdf5_path="/" + self._name,
            )
        self._num_samples = int(value)
        return self._num_samples

    @property
    def description(self) -> str | None:
        """The split description (§5.3), or None.

        Raises
        ------
        EncodingError
            If it is not valid UTF-8 (§3.4): raised here only, the samples stay readable.
        InvalidFileError
            If it is not a string (§5.3).
        """
        value: str | None = self._attr("description", (str,), "a string")
        return value

    @property
    def shuffle_seed(self) -> int | None:
        """The seed the writer shuffled the samples with (§5.3, §7.6), or None.

        Raises
        ------
        InvalidFileError
            If it is not an integer (§5.3).
        """
        value = self._attr("shuffle_seed", (int,), "an integer")
        return None if value is None else int(value)

    def __len__(self) -> int:
        return self.num_samples

    @property
    def features(self) -> Mapping[str, Feature]:
        """The readable features, in the file's order (§5.2): name -> :class:`Feature`.

        Members whose names start with ``"_"``, are not UTF-8 or are soft
        links, and objects without an ``encoding`` attribute are ignored
        (§5.1, §5.4, §5.5). A feature of an encoding this reader does not
        implement, with a broken structure, with a number of samples other
        than :attr:`num_samples` (§5.3), or whose HDF5 objects the library
        cannot open is left out, and asking for it by name raises the reason.

        Raises
        ------
        InvalidFileError
            If :attr:`num_samples` is invalid (no feature can be checked
            against it), or the HDF5 library cannot list the split's members.
        """
        if self._features is None:
            path = self._dataset.path
            count = self.num_samples
            group = self._group()
            found: dict[str, Feature] = {}
            skipped: dict[str, H5MLError] = {}
            for name in member_names(group, path, "/" + self._name, external=self._dataset.allow_external):
                if name.startswith(spec.RESERVED_PREFIX):
                    continue
                where = f"/{self._name}/{name}"
                try:
                    feature = open_feature(self._dataset, self._name, name, self._dataset.h5_node(where), count)
                except H5MLError as exc:
                    skipped[name] = exc
                    continue
                except LIBRARY_ERRORS as exc:
                    if not is_library_failure(exc):
                        raise
                    skipped[name] = damaged_file(path, where, "opening this object", exc)
                    continue
                if feature is not None:
                    found[name] = feature
            self._features, self._skipped = found, skipped
            self._damaged = any(isinstance(e, InvalidFileError) for e in skipped.values())
            self._all = tuple(found.items())
        return MappingProxyType(self._features)

    def feature(self, name: str) -> Feature:
        """Return the feature ``name`` (§5.2).

        Raises
        ------
        FeatureNotFoundError
            If the split has no such feature (the message lists the available ones).
        EncodingError, InvalidFileError
            If the feature exists but this reader cannot read it.
        """
        features = self.features
        if name in features:
            return features[name]
        if name in self._skipped:
            raise self._skipped[name]
        path = self._dataset.path
        available = ", ".join(repr(n) for n in features) or "none"
        raise FeatureNotFoundError(
            f"{path}: split {self._name!r} has no feature {name!r}; available features: {available}",
            path=path,
            hdf5_path=f"/{self._name}/{name}",
        )

    def __getitem__(self, key: str | Indices) -> Any:
        """``split["name"]`` -> :class:`Feature`; ``split[idx]`` -> :meth:`read` of every feature."""
        if type(key) is int and self._all is not None and self._num_samples is not None and not self._damaged:
            check_index(key, self._num_samples)  # the per-sample path of a DataLoader, as read(key)
            return {name: feature.read(key) for name, feature in self._all}
        if isinstance(key, str):
            return self.feature(key)
        return self.read(key)

    def __contains__(self, name: object) -> bool:
        return name in self.features

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for i in range(self.num_samples):
            yield self.read(i)

    def read(self, indices: Indices, features: Iterable[str] | str | None = None) -> dict[str, Any]:
        """Read samples of several features (§5, §6).

        Parameters
        ----------
        indices
            An int (one sample per feature), a slice, a sequence or 1-D integer
            array in any order with duplicates and negative indices, or a mask.
        features
            Feature names to read; None for every readable feature.

        Returns
        -------
        dict
            Feature name -> values, in the order of ``features`` (see
            :mod:`h5ml.reader.features` for the value types).

        Raises
        ------
        IndexError
            If an index is outside ``[-num_samples, num_samples)``.
        FeatureNotFoundError
            If a requested feature does not exist.
        InvalidFileError
            If ``features`` is None and a feature of the split is damaged
            (broken structure, wrong number of samples): name the readable
            features explicitly to read them anyway. Features of an encoding
            this reader does not know (a newer MINOR, §1.4) are left out.

        Notes
        -----
        An int (the per-sample path of a PyTorch ``DataLoader``) costs about
        the sum of one single-sample read per feature: no read plan is made.
        """
        if features is None:
            chosen = self._all
            if chosen is None:
                self.features  # noqa: B018 - finds the features and fills self._all
                chosen = self._all or ()
        else:
            names = [features] if isinstance(features, str) else list(features)
            chosen = tuple((n, self.feature(n)) for n in names)
        # One clear IndexError, against the split's num_samples, before any read.
        count = self._num_samples if self._num_samples is not None else self.num_samples
        request: Indices = indices
        if type(indices) is int or isinstance(indices, np.integer):  # not bool: type(True) is bool
            check_index(indices, count)
        elif not isinstance(indices, slice):
            rows, scalar = normalize_indices(indices, count)
            if not scalar:
                request = rows  # each feature gets the checked int64 rows, not the list again
        if features is None and self._damaged:
            for error in self._skipped.values():
                if isinstance(error, InvalidFileError):  # a damaged feature is never silently left out
                    raise error
        return {name: feature.read(request) for name, feature in chosen}

    def __repr__(self) -> str:
        try:
            feats = ", ".join(f"{n} ({f.encoding})" for n, f in self.features.items())
            return f"<h5ml.Split {self._name!r} of {self._dataset.path!r}: {self.num_samples} samples; {feats}>"
        except H5MLError as exc:
            return f"<h5ml.Split {self._name!r} of {self._dataset.path!r} (invalid: {exc})>"
