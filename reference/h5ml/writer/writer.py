"""The reference writer: in-memory :func:`write` and streaming :class:`Writer`.

Files are built in a temporary file beside the target and moved over it with
``os.replace`` only once they are complete (§4.4), so the target path always
holds either nothing, the previous complete file, or the new complete file:

1. the temporary file ``.<name>.h5ml-tmp-<random>`` is created in the target's
   directory with libver bounds ``spec.LIBVER_BOUNDS`` (§3.1);
2. samples are appended batch by batch; fingerprints (§8) and statistics
   (§6.7) are computed from each batch as it arrives;
3. on close: ``num_samples`` (§5.3), feature fingerprints and statistics, the
   file fingerprint (§8.3), then ``complete = 1`` last (§4.4); flush, fsync,
   close, ``os.replace(temp, target)`` and fsync of the directory.

If anything fails (or the ``with`` block raises, or :meth:`Writer.close` is
called with ``abort=True``), the temporary file is deleted and the target is
untouched. The target must be a regular file or not exist; a symbolic link to
a regular file is written through (the file it resolves to is replaced, the
link is kept); anything else (a FIFO, a device, a directory, a dangling link)
is refused, when the writer starts and again just before ``os.replace``. The writer never opens the target for writing, so readers that have
it open never meet a lock (they keep reading the file they opened).

Encodings (§6) are inferred from the Python values unless given:

================================================  ===========================
value                                             encoding
================================================  ===========================
numeric numpy array ``(N, ...)``                  dense (bool: uint8 + ``logical_dtype="bool"``)
numpy str array, list of ``str``                  string
:class:`Categorical`, pandas-like categorical     categorical
list of arrays differing in their first axis      ragged (``values`` + ``offsets``)
list of arrays differing in more than one axis    ragged with ``shapes``
list of ``bytes``                                 bytes
================================================  ===========================

This module holds the public API and the file's life cycle; the parts it
builds on each have their own module:

- :mod:`h5ml.model.values`: the value types :class:`Categorical` and
  :class:`FeatureSpec` (re-exported here) and the ``features=`` table;
- :mod:`h5ml.model.layout`: a feature's stored form, declared, inferred from values
  (the table above) or read from a file, and its §6.1 attributes;
- :mod:`h5ml.writer.batches`: a batch of values checked and cast to its stored form;
- :mod:`h5ml.model.stats`: the streaming statistics (§6.7);
- :mod:`h5ml.writer.sinks`: per feature and per split, the HDF5 objects, buffers,
  fingerprint and statistics while the file is written;
- :mod:`h5ml.writer.compress`: whole gzip chunks compressed in threads and
  stored with ``H5Dwrite_chunk`` (§3.5, §7).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import stat
import weakref
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from pathlib import Path
from types import TracebackType
from typing import Any, Final, Literal

import h5py
import numpy as np
import numpy.typing as npt

from h5ml import spec
from h5ml.errors import (
    EncodingError,
    H5MLError,
    MetadataError,
    WriterError,
)
from h5ml.model.fingerprint import FINGERPRINT_PATTERN, file_fingerprint
from h5ml.model.hdf5 import member_names
from h5ml.model.header import check_header
from h5ml.model.layout import Layout, declared_layout, feature_attrs, infer_layout, stored_spec
from h5ml.model.new_root import INT64_MAX, new_root_metadata
from h5ml.model.values import (
    Categorical,
    FeatureSpec,
    SpecTable,
    as_categorical,
    column_length,
    column_nbytes,
    take,
    text_problem,
)
from h5ml.sampling.seeds import draw_seed, write_order
from h5ml.spec.attrs import read_attr, write_attr
from h5ml.spec.chunks import SPLIT_SAMPLE_BYTES
from h5ml.writer.batches import Batch, normalize
from h5ml.writer.compress import ChunkPool
from h5ml.writer.sinks import BLOCK_BYTES, FeatureSink, SplitSink

__all__ = ["WRITE_BUFFER_BYTES", "Categorical", "FeatureSpec", "Writer", "write"]

#: Bytes of samples a split buffers in memory before they are written to HDF5.
#: Buffering makes ``append_sample`` cheap and lets small splits get chunks sized
#: to their final length (§7.3).
WRITE_BUFFER_BYTES: Final = 32 << 20
#: Bytes a split buffers once its chunk shapes are settled (its datasets exist,
#: or ``expected_samples`` was given): smaller writes keep the compression
#: threads busy while the caller prepares the next samples.
STREAM_BUFFER_BYTES: Final = 4 << 20
#: A batch of a feature at least this large has its fingerprint and statistics
#: computed in two threads while the writer stores samples (hashlib and numpy
#: release the GIL); smaller ones are computed in the caller's thread.
_FEED_THREAD_BYTES: Final = 1 << 20
#: The chunk cache of the file being written holds the largest chunk the
#: writer creates (§7.1), so partly filled chunks are not re-read.
_WRITE_CACHE_BYTES: Final = SPLIT_SAMPLE_BYTES
#: Root attributes that only a finished file carries (§4.4, §8.3).
_FINISH_ATTRS: Final = ("complete", "fingerprint")
_STATS_ATTRS: Final = spec.STATS_ATTRS


# --------------------------------------------------------------------------
# helpers


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _discard(h5file: h5py.File, temp: Path, pool: ChunkPool, feeder: ThreadPoolExecutor) -> None:
    """Stop the writer's threads, close and delete an unfinished temporary file (also the finalizer).

    Errors while cleaning up are dropped: the file is being discarded because
    something else failed (a full disk makes closing it fail too), and that
    first error is the one the caller must see.
    """
    try:
        with contextlib.suppress(Exception):
            pool.close(abort=True)
        with contextlib.suppress(Exception):
            feeder.shutdown(wait=True, cancel_futures=True)
        with contextlib.suppress(Exception):
            if h5file.id.valid:
                h5file.close()
    finally:
        temp.unlink(missing_ok=True)


@contextlib.contextmanager
def _located(path: str, hdf5_path: str) -> Iterator[None]:
    """Attach the file and HDF5 path to an h5ml error raised inside (the message already names them)."""
    try:
        yield
    except H5MLError as exc:
        exc.path = exc.path or path
        exc.hdf5_path = exc.hdf5_path or hdf5_path
        raise


def _check_name(name: Any, kind: str, path: str, parent: str) -> None:
    """Refuse a split or feature name that breaks §5.1.1 or that HDF5 cannot store (NUL, lone surrogates).

    ``parent`` is the HDF5 path of the group the name goes in (``/`` or
    ``/split``): the name itself appears in the message only as its ``repr``,
    which stays printable whatever it holds.
    """
    where = f"{parent.rstrip('/')}/{name}" if isinstance(name, str) else parent
    if not isinstance(name, str):
        raise WriterError(
            f"{path}: {kind} name {name!r} in {parent} is a {type(name).__name__}; names are str (§5.1.1)",
            path=path,
            hdf5_path=parent,
        )
    problem = text_problem(name)
    if problem:
        raise WriterError(
            f"{path}: {kind} name {name!r} in {parent} {problem}; rename it (§5.1.1)", path=path, hdf5_path=parent
        )
    if not spec.is_valid_name(name):
        raise WriterError(
            f"{path}: {kind} name {name!r} at {where} is invalid (§5.1, §5.2): a name is non-empty, has no "
            "'/', does not start with '.', '_' or whitespace nor end with whitespace, and is at most 255 UTF-8 bytes",
            path=path,
            hdf5_path=where,
        )


def _check_text(value: Any, what: str, path: str, hdf5_path: str) -> str:
    """A description given to the writer: a str that HDF5 can store (§3.4)."""
    if not isinstance(value, str):
        raise WriterError(f"{path}: {what} must be a str, got a {type(value).__name__}", path=path, hdf5_path=hdf5_path)
    problem = text_problem(value)
    if problem:
        raise WriterError(f"{path}: {what} {value!r} {problem} (§3.4)", path=path, hdf5_path=hdf5_path)
    return value


def _check_seed(seed: Any, what: str, path: str, hdf5_path: str | None = None) -> int:
    """A shuffle seed: an integer in [0, 2**63) (§5.3, §7.6; stored as a signed 64-bit integer, §4.3)."""
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)) or not 0 <= seed <= INT64_MAX:
        raise WriterError(
            f"{path}: {what} must be an integer in [0, 2**63) (a non-negative int64, §5.3), got {seed!r}",
            path=path,
            hdf5_path=hdf5_path,
        )
    return int(seed)


_KINDS: Final = (
    (stat.S_ISDIR, "directory"),
    (stat.S_ISFIFO, "FIFO (named pipe)"),
    (stat.S_ISCHR, "character device"),
    (stat.S_ISBLK, "block device"),
    (stat.S_ISSOCK, "socket"),
    (stat.S_ISLNK, "symbolic link"),
)


def _file_kind(mode: int) -> str:
    """What a non-regular file is, in words."""
    return next((name for test, name in _KINDS if test(mode)), "special file")


def _resolve_target(path: Path) -> Path:
    """The regular file the writer replaces for ``path``: ``path`` itself, or where its symbolic link points.

    Parameters
    ----------
    path
        The target as given.

    Returns
    -------
    pathlib.Path
        ``path`` when it does not exist or is a regular file; for a symbolic
        link to a regular file, the link's resolved path
        (``os.path.realpath``), so the link is kept and the file it points to
        is replaced.

    Raises
    ------
    WriterError
        If ``path`` exists and is not a regular file (a directory, a FIFO, a
        device, a socket), or is a symbolic link that dangles (or loops) or
        points to something that is not a regular file.
    """
    where = str(path)
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return path
    except OSError as exc:
        raise WriterError(f"{where}: cannot inspect the target ({exc.strerror})", path=where) from None
    if stat.S_ISREG(mode):
        return path
    if not stat.S_ISLNK(mode):
        kind = _file_kind(mode)
        raise WriterError(
            f"{where} is a {kind}, not a regular file; the writer replaces its target with a new file and refuses "
            f"to replace a {kind}: give the path of a regular file or of a file that does not exist yet",
            path=where,
        )
    real = Path(os.path.realpath(path))
    try:
        mode = os.stat(real).st_mode
    except OSError as exc:
        raise WriterError(
            f"{where} is a symbolic link to {str(real)!r}, which cannot be reached ({exc.strerror}); the writer "
            "writes through a link only to an existing regular file: remove the link or give another path",
            path=where,
        ) from None
    if not stat.S_ISREG(mode):
        raise WriterError(
            f"{where} is a symbolic link to {str(real)!r}, a {_file_kind(mode)}, not a regular file; the writer "
            "refuses to replace it: give the path of a regular file",
            path=where,
        )
    return real


class Writer:
    """Write an h5ml file batch by batch, atomically (§4.4, §5, §6, §7, §8).

    Parameters
    ----------
    path
        The target file. It is not opened for writing: the file is built in
        ``.<name>.h5ml-tmp-<random>`` beside it and moved over it on close.
        The target must be a regular file or not exist; a symbolic link to a
        regular file is written through: the file it resolves to
        (``os.path.realpath``) is replaced and the link is kept. Anything else
        (a directory, a FIFO, a device, a socket, a dangling link, a link to
        one of those) is refused, when the writer is created and again just
        before the final ``os.replace``.
    metadata
        Root metadata (§4.2): ``name`` (default: the target's stem), and
        optional ``description``, ``license``, ``version``, ... checked by
        :func:`h5ml.model.metadata.new_root_metadata` (which refuses the attributes
        the writer sets: ``format``, ``format_version``, ``complete``,
        ``fingerprint``). In mode ``"a"``
        the given fields replace the file's (the others are kept).
    mode
        ``"w"``: create (replacing the target on close); ``"a"``: add samples
        or splits to the existing complete file (created if absent). Append
        mode copies the whole file once and re-reads every feature it extends
        once (to continue its fingerprint and statistics), plus every feature
        that has no fingerprint yet (for the file fingerprint). A split that
        gets samples loses its ``shuffle_seed``: the seed no longer describes
        the stored order (§7.6).
    compression
        ``"gzip"`` (deflate, a core filter, §3.5, with the byte-shuffle filter
        for multi-byte types) or ``None``. Strings are never compressed (HDF5
        does not compress variable-length data).
    compression_opts
        The gzip level 0-9 (default 4).
    features
        Per-feature options: ``{"label": {"role": "target"}, "train/label":
        FeatureSpec(...)}`` (a ``"split/feature"`` key overrides the general
        one field by field). They apply to the features this writer creates,
        whether inferred from their first batch or declared with
        :meth:`add_feature` (whose arguments are merged with them; a field
        both give with different values is refused). A key that applies to
        no feature is an error: a ``"split/feature"`` key is checked when that
        split gets its first samples (its features are then fixed), every key
        again when the writer closes (the file is then not written).

    Raises
    ------
    WriterError
        If the options are wrong, the target's directory does not exist, the
        target is not a regular file (see ``path``), or (mode ``"a"``) the
        existing file is not HDF5 or one of its splits cannot be extended.
    NotH5MLError, InvalidFileError, UnsupportedVersionError, UnknownExtensionError, IncompleteFileError
        (mode ``"a"``) The existing file is refused as :func:`h5ml.open`
        refuses it, with the same errors (:func:`h5ml.model.header.check_header`):
        not an h5ml file, a malformed header, another MAJOR version, an
        extension this writer does not understand, no completion marker.
    MetadataError
        If the metadata is invalid or cannot be stored (see
        :func:`h5ml.model.metadata.new_root_metadata`).

    Attributes
    ----------
    path
        The target as given.
    target_path
        The file that is replaced on close: ``path``, or where its symbolic
        link points.
    temp_path
        The temporary file being written, beside ``target_path``.

    Notes
    -----
    Samples are buffered (up to :data:`WRITE_BUFFER_BYTES` per split) before
    they reach HDF5; :meth:`flush` writes them. Values are copied when they
    are buffered, so callers may reuse their arrays after :meth:`append`.
    Concurrent writers of one target: the last to close wins.
    An unclosed writer that is garbage-collected deletes its temporary file.

    Examples
    --------
    >>> with Writer(tmp / "d.h5", {"name": "d"}) as w:  # doctest: +SKIP
    ...     w.append("train", {"x": np.zeros((4, 3), "f4"), "y": ["a", "b", "c", "d"]})
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        metadata: Mapping[str, Any] | None = None,
        *,
        mode: Literal["w", "a"] = "w",
        compression: str | None = None,
        compression_opts: int | None = None,
        features: Mapping[str, FeatureSpec | Mapping[str, Any]] | None = None,
    ) -> None:
        self.path = Path(path)
        where = str(self.path)
        if mode not in ("w", "a"):
            raise WriterError(f"{where}: mode must be 'w' or 'a', got {mode!r}", path=where)
        self._compression = self._check_compression(compression, where)
        if compression_opts is not None and (not isinstance(compression_opts, int) or not 0 <= compression_opts <= 9):
            raise WriterError(f"{where}: compression_opts is the gzip level 0-9, got {compression_opts!r}", path=where)
        self._compression_opts = compression_opts
        self._specs = SpecTable(features)
        if metadata is not None and not isinstance(metadata, Mapping):
            raise MetadataError(
                f"{where}: metadata must be a dict of root attributes (§4.2), got a {type(metadata).__name__}",
                path=where,
                hdf5_path="/",
            )
        parent = self.path.parent
        if not parent.is_dir():
            raise WriterError(f"{where}: the directory {str(parent)!r} does not exist; create it first", path=where)
        self.target_path = _resolve_target(self.path)
        self.temp_path = self.target_path.parent / f".{self.target_path.name}.h5ml-tmp-{secrets.token_hex(8)}"
        self._splits: dict[str, SplitSink] = {}
        #: Append mode: the options of the file's features by name, for the same feature of a new split.
        self._inherited: dict[str, FeatureSpec] = {}
        self._closed = False
        #: What made storing samples fail: the file is discarded and every later call raises.
        self._failure: BaseException | None = None
        append = mode == "a" and self.target_path.exists()
        try:
            if append:
                shutil.copyfile(self.target_path, self.temp_path)
            h5mode = "r+" if append else "w-"
            self._file = h5py.File(self.temp_path, h5mode, libver=spec.LIBVER_BOUNDS, rdcc_nbytes=_WRITE_CACHE_BYTES)
        except OSError as exc:
            self.temp_path.unlink(missing_ok=True)
            if not append or isinstance(exc, (FileNotFoundError, PermissionError, IsADirectoryError)):
                raise
            raise WriterError(
                f"{where}: HDF5 cannot open it to append ({exc}); it is not an HDF5 file, or it is damaged. "
                "Check it with 'h5ml validate', or write a new file with mode='w'",
                path=where,
            ) from exc
        except BaseException:
            self.temp_path.unlink(missing_ok=True)
            raise
        self._pool = ChunkPool()
        self._feeder = ThreadPoolExecutor(2, thread_name_prefix="h5ml-feed")
        self._finalizer = weakref.finalize(self, _discard, self._file, self.temp_path, self._pool, self._feeder)
        try:
            if append:
                self._load_existing(metadata)
            else:
                self._write_root(metadata)
        except BaseException:
            self.close(abort=True)
            raise

    # -- setup -----------------------------------------------------------

    @staticmethod
    def _check_compression(compression: Any, where: str) -> str | None:
        if compression not in (None, "gzip"):
            raise WriterError(
                f"{where}: compression must be 'gzip' or None, got {compression!r}; other filters make files that "
                "HDF5 builds without plugins cannot read (§3.5)",
                path=where,
            )
        return compression  # type: ignore[no-any-return]

    def _checked_root(self, metadata: Mapping[str, Any], default_name: str) -> tuple[dict[str, Any], list[str]]:
        """Check root metadata with :func:`new_root_metadata`; return it and the keys the caller gave (§4.2)."""
        where = str(self.path)
        bad = [key for key in metadata if not isinstance(key, str)]
        if bad:
            raise MetadataError(
                f"{where}: root attribute names must be str, got {bad[:5]!r}",
                problems=[f"attribute name {key!r} is not a str" for key in bad],
                path=where,
                hdf5_path="/",
            )
        fields = dict(metadata)
        name = fields.pop("name", default_name)
        checked = new_root_metadata(name, **fields)
        return checked, ["name", *fields]

    def _store_root_attr(self, key: str, value: Any) -> None:
        """Write one checked root attribute; an error HDF5 still raises becomes a MetadataError (§4.3, §4.5)."""
        where = str(self.path)
        try:
            write_attr(self._file, key, value)
        except (OSError, ValueError, TypeError, OverflowError) as exc:
            raise MetadataError(
                f"{where}: root attribute {key!r} cannot be stored in HDF5 ({exc}); change or remove it",
                problems=[f"/{key}: {exc}"],
                path=where,
                hdf5_path="/",
            ) from None

    def _write_root(self, metadata: Mapping[str, Any] | None) -> None:
        checked, _ = self._checked_root(metadata or {}, self.path.stem)
        for key, value in checked.items():
            if value is not None:
                self._store_root_attr(key, value)

    def _load_existing(self, metadata: Mapping[str, Any] | None) -> None:
        f, where = self._file, str(self.path)
        check_header(f, where, "append to")  # the reader's checks and errors (§1.3, §1.5, §4.1, §4.4)
        # From here on the copy is unfinished: it must not look complete (§4.4).
        for key in _FINISH_ATTRS:
            if key in f.attrs:
                del f.attrs[key]
        f.flush()
        if metadata:
            checked, given = self._checked_root(metadata, read_attr(f, "name", self.path.stem))
            for key in given:
                if key in checked:
                    self._store_root_attr(key, checked[key])
        for split_name in member_names(f, where, "/"):
            group = f[split_name]
            if split_name.startswith(spec.RESERVED_PREFIX) or not isinstance(group, h5py.Group):
                continue
            num = read_attr(group, "num_samples", None)
            if not isinstance(num, int) or num < 0:
                raise WriterError(
                    f"{where}: /{split_name} has no valid num_samples (§5.3)", path=where, hdf5_path=f"/{split_name}"
                )
            names = member_names(group, where, f"/{split_name}")
            stored = {k: group[k] for k in names if not k.startswith(spec.RESERVED_PREFIX)}
            self._splits[split_name] = SplitSink(
                split_name, group, num_samples=num, frozen=bool(stored), stored=stored, from_file=True
            )
            for name, obj in stored.items():
                encoding = read_attr(obj, "encoding", None)
                if name in self._inherited or encoding not in spec.ENCODINGS:
                    continue
                with contextlib.suppress(EncodingError, KeyError, TypeError, ValueError):
                    self._inherited[name] = stored_spec(encoding, obj)

    def update_metadata(self, metadata: Mapping[str, Any]) -> None:
        """Set or replace root attributes before the file is finished (§4.2, §4.7).

        For what is only known at the end of a conversion, such as the
        files it skipped. The keys are checked as the constructor's
        ``metadata`` (defined attributes by the root schema; other keys become
        user attributes); the keys not given keep their values.

        Raises
        ------
        WriterError
            If the writer is closed.
        MetadataError
            If the metadata is invalid or cannot be stored; nothing is changed then.
        """
        self._check_open()
        checked, given = self._checked_root(metadata, read_attr(self._file, "name", self.path.stem))
        for key in given:
            if key in checked and checked[key] is not None:
                self._store_root_attr(key, checked[key])

    # -- building ----------------------------------------------------------

    def _check_open(self) -> None:
        if self._failure is not None:
            raise self._failed_error()
        if self._closed:
            raise WriterError(f"{self.path}: the writer is closed", path=str(self.path))

    def _failed_error(self) -> WriterError:
        failure = self._failure
        return WriterError(
            f"{self.path}: writing samples failed earlier ({type(failure).__name__}: {failure}); the file cannot be "
            "finished, so the writer discarded it and the target is unchanged. Write the file again",
            path=str(self.path),
        )

    def _fail(self, exc: BaseException) -> None:
        """Samples could not be stored (a full disk, a failed chunk, ...): discard the file; every later call fails."""
        self._failure = exc
        self._closed = True
        self._finalizer()

    def add_split(
        self,
        name: str,
        description: str | None = None,
        *,
        shuffle_seed: int | None = None,
        expected_samples: int | None = None,
    ) -> None:
        """Create a split (§5.1, §5.3).

        Parameters
        ----------
        name
            The split name (§5.1), e.g. ``"train"``.
        description
            Stored as the split attribute ``description``.
        shuffle_seed
            Recorded as ``shuffle_seed`` when the caller stored the samples in
            a seeded random order (§7.6): an integer in [0, 2**63) (§5.3).
        expected_samples
            The number of samples the split will get (an int >= 0), when
            known: small splits then get chunks no larger than they need (§7.3).

        Raises
        ------
        WriterError
            If the writer is closed, the name is invalid or already used, the
            description is not a str HDF5 can store (no NUL, no lone
            surrogate, §3.4), ``shuffle_seed`` is not an integer in
            [0, 2**63), or ``expected_samples`` is not an integer >= 0.
            Nothing is created then.
        """
        self._check_open()
        where = str(self.path)
        _check_name(name, "split", where, "/")
        hdf5_path = f"/{name}"
        if name in self._splits:
            raise WriterError(f"{where}: split {hdf5_path} already exists", path=where, hdf5_path=hdf5_path)
        if description is not None:
            _check_text(description, f"the description of {hdf5_path}", where, hdf5_path)
        seed = None if shuffle_seed is None else _check_seed(shuffle_seed, f"shuffle_seed of {hdf5_path}", where)
        if expected_samples is not None and (
            isinstance(expected_samples, (bool, np.bool_))
            or not isinstance(expected_samples, (int, np.integer))
            or expected_samples < 0
        ):
            raise WriterError(
                f"{where}: expected_samples of {hdf5_path} must be an integer >= 0 (or None), got {expected_samples!r}",
                path=where,
                hdf5_path=hdf5_path,
            )
        group = self._file.create_group(name)
        if description is not None:
            write_attr(group, "description", description)
        if seed is not None:
            write_attr(group, "shuffle_seed", seed)
        expected = None if expected_samples is None else int(expected_samples)
        self._splits[name] = SplitSink(name, group, expected_samples=expected)

    def _split(self, name: str) -> SplitSink:
        if name not in self._splits:
            self.add_split(name)
        return self._splits[name]

    def add_feature(
        self,
        split: str,
        name: str,
        *,
        encoding: str,
        dtype: npt.DTypeLike | None = None,
        sample_shape: Sequence[int] = (),
        sample_ndim: int | None = None,
        class_names: Sequence[str] | None = None,
        role: str | None = None,
        description: str | None = None,
        units: str | None = None,
        sample_rate: float | None = None,
        media_type: str | None = None,
        compression: str | Literal[False] | None = None,
    ) -> None:
        """Declare a feature before its first batch (§6).

        Parameters
        ----------
        split
            The split (created if needed).
        name
            The feature name (§5.2).
        encoding
            ``"dense"``, ``"string"``, ``"categorical"``, ``"ragged"`` or ``"bytes"``.
        dtype
            dense/ragged: the numeric dtype of the values (``bool`` is stored
            as uint8 with ``logical_dtype="bool"``, §3.3); categorical: the
            signed code dtype (default: the smallest that holds K - 1).
        sample_shape
            dense: the shape of one sample; ragged: the shape of one value row
            (samples are ``(length, *sample_shape)``).
        sample_ndim
            ragged samples that vary in more than their first axis: their
            number of axes D (the feature stores ``shapes`` ``(N, D)``, §6.3).
        class_names
            categorical: the K class names (unique, non-empty).
        role, description, units, sample_rate, media_type
            §6.1 attributes (``media_type`` for bytes features, §6.6).
        compression
            ``"gzip"``/``False`` to override the writer's compression.

        Notes
        -----
        Options given for the feature in the writer's ``features=`` are
        merged with these arguments (a ``dtype`` or ``role`` given only there
        applies); a field given in both with different values is refused.

        Raises
        ------
        WriterError
            If the name is invalid or taken, the split already has samples
            (or, in append mode, is a split of the file: it has its features),
            or the arguments contradict the writer's ``features=`` options.
            Nothing is created then.
        EncodingError
            If the options do not describe a valid feature.
        """
        self._check_open()
        path = str(self.path)
        _check_name(split, "split", path, "/")
        _check_name(name, "feature", path, f"/{split}")
        hdf5_path = f"/{split}/{name}"
        where = f"{path}:{hdf5_path}"
        declared = FeatureSpec(
            encoding=encoding,
            dtype=dtype,
            role=role,
            description=description,
            units=units,
            sample_rate=sample_rate,
            media_type=media_type,
            class_names=class_names,
            compression=compression,
            sample_ndim=sample_ndim,
        )
        configured = self._specs.get(split, name)
        conflicts = configured.conflicts(declared)
        if conflicts:
            raise WriterError(
                f"{where}: add_feature and the writer's features= option disagree on {conflicts}; give each option "
                "in one place, or the same value in both",
                path=path,
                hdf5_path=hdf5_path,
            )
        fspec = self._inherited_spec(name, configured.merged(declared))
        with _located(path, hdf5_path):
            layout = declared_layout(
                encoding,
                dtype=fspec.dtype,
                sample_shape=sample_shape,
                sample_ndim=fspec.sample_ndim,
                class_names=fspec.class_names,
                where=where,
            )
            feature = self._new_feature(split, self._splits.get(split), name, layout, fspec)
        self._split(split).features[name] = feature
        self._specs.mark_used(split, name)

    def _inherited_spec(self, name: str, given: FeatureSpec) -> FeatureSpec:
        """``given`` over the options of the file's feature ``name`` (append mode; the first split's that has it).

        A new split's feature gets the encoding, dtype, class names and
        attributes of the feature of that name the file already has (§6.1),
        whatever its first batch looks like; ``features=`` and
        :meth:`add_feature` (``given``) override them field by field. When
        ``given`` names another encoding, only the descriptive attributes
        (role, description, units, sample rate) are taken from the file.
        """
        inherited = self._inherited.get(name)
        if inherited is None:
            return given
        if given.encoding is not None and given.encoding != inherited.encoding:
            inherited = FeatureSpec(
                role=inherited.role,
                description=inherited.description,
                units=inherited.units,
                sample_rate=inherited.sample_rate,
            )
        return inherited.merged(given)

    def _new_feature(
        self, split: str, state: SplitSink | None, name: str, layout: Layout, fspec: FeatureSpec
    ) -> FeatureSink:
        """Check and build a new feature of a split that has no samples yet (§5.3, §6.1); nothing is registered.

        ``state`` is the split, or ``None`` if it does not exist yet.
        """
        hdf5_path = f"/{split}/{name}"
        where = str(self.path)
        _check_name(name, "feature", where, f"/{split}")
        if state is not None and state.frozen:
            raise WriterError(
                f"{where}: cannot add feature {hdf5_path}: split /{split} already has its features "
                f"{state.feature_names} (every feature of a split has num_samples samples, §5.3)",
                path=where,
                hdf5_path=hdf5_path,
            )
        if state is not None and name in state.features:
            raise WriterError(f"{where}: feature {hdf5_path} already exists", path=where, hdf5_path=hdf5_path)
        compression = self._compression if fspec.compression is None else fspec.compression or None
        self._check_compression(compression, where)
        attrs = feature_attrs(layout, fspec, f"{where}:{hdf5_path}")
        feature = FeatureSink(split, name, layout, attrs, compression)
        feature.reset_fingerprint_and_stats()
        return feature

    def append(self, split: str, batch: Mapping[str, Any]) -> None:
        """Append samples to every feature of a split (§5.3).

        Parameters
        ----------
        split
            The split (created if needed).
        batch
            ``{feature: values}`` with the same number of samples n for every
            feature; each value as :func:`write` takes it (array ``(n, ...)``,
            list of str/bytes/arrays, :class:`Categorical`, codes). Features
            not declared with :meth:`add_feature` are inferred from the first
            batch. Every later batch names exactly the split's features.

        Raises
        ------
        WriterError
            If the writer is closed, ``batch`` is not a mapping, a name is
            invalid, the batch misses or adds features, its features have
            different numbers of samples (the message lists them), or (first
            batch of a split) a ``"split/feature"`` key of ``features=`` names
            none of the split's features.
        EncodingError
            If a value does not fit its feature (shape, dtype, code range, ...).

        Notes
        -----
        A failed append changes nothing: no split, feature or sample is
        added, so it can be retried with other values or other features.
        The exception is a failure to store samples (a full disk, an error
        while compressing a chunk, an interrupt), raised by this or a later
        append: the writer then discards the file, the target stays as it
        was, and every later call (``close`` included) raises
        :class:`WriterError`.
        """
        self._check_open()
        where = str(self.path)
        _check_name(split, "split", where, "/")
        if not isinstance(batch, Mapping):
            raise WriterError(
                f"{where}: a batch of /{split} must be a dict {{feature: values}}, got a {type(batch).__name__}",
                path=where,
                hdf5_path=f"/{split}",
            )
        for key in batch:
            _check_name(key, "feature", where, f"/{split}")
        state = self._splits.get(split)
        if state is not None and state.stored:
            state.load_stored(where)
        declared: dict[str, FeatureSink] = {} if state is None else state.features
        frozen = state is not None and state.frozen
        names = set(batch)
        if frozen and names != set(declared):
            missing, extra = sorted(set(declared) - names), sorted(names - set(declared))
            raise WriterError(
                f"{where}: a batch of /{split} must hold exactly its features {sorted(declared)}; "
                f"missing {missing}, unexpected {extra}",
                path=where,
                hdf5_path=f"/{split}",
            )
        missing = sorted(set(declared) - names)
        if missing:
            raise WriterError(
                f"{where}: the batch of /{split} lacks declared features {missing}", path=where, hdf5_path=f"/{split}"
            )
        new: dict[str, FeatureSink] = {}
        for name in sorted(names - set(declared)):
            fspec = self._inherited_spec(name, self._specs.get(split, name))
            with _located(where, f"/{split}/{name}"):
                layout = infer_layout(batch[name], fspec, f"{where}:/{split}/{name}")
                new[name] = self._new_feature(split, state, name, layout, fspec)
        parts: dict[str, Batch] = {}
        for name in sorted(names):
            layout = (declared.get(name) or new[name]).layout
            with _located(where, f"/{split}/{name}"):
                parts[name] = normalize(layout, batch[name], f"{where}:/{split}/{name}")
        counts = {name: p.n for name, p in parts.items()}
        if len(set(counts.values())) > 1:
            listed = ", ".join(f"{k}: {v}" for k, v in counts.items())
            raise WriterError(
                f"{where}: the features of a batch of /{split} have different numbers of samples ({listed}); "
                "every feature of a split grows together (§5.3)",
                path=where,
                hdf5_path=f"/{split}",
            )
        if parts and not frozen:
            self._check_split_specs(split, sorted(names))
        # Everything is checked: from here on the append takes effect.
        if state is None:
            self.add_split(split)
            state = self._splits[split]
        for name, feature in new.items():
            state.features[name] = feature
            self._specs.mark_used(split, name)
        state.frozen = state.frozen or bool(parts)
        n = next(iter(counts.values()), 0)
        if n:
            state.drop_shuffle_seed()
        feeds: list[Future[None]] = []
        try:
            for name, part in parts.items():
                feature = state.features[name]
                if isinstance(part.data, np.ndarray) and part.data.nbytes >= _FEED_THREAD_BYTES:
                    feeds.append(self._feeder.submit(feature.feed_fingerprint, part))
                    feeds.append(self._feeder.submit(feature.feed_stats, part))
                else:
                    feature.feed(part)
                feature.pending.append(part)
                state.pending_bytes += part.nbytes
            state.num_samples += n
            settled = state.expected_samples is not None or state.created
            if state.pending_bytes >= (STREAM_BUFFER_BYTES if settled else WRITE_BUFFER_BYTES):
                state.flush(final=False, compression_opts=self._compression_opts, pool=self._pool)
            else:
                for feature in state.features.values():
                    if feature.pending:
                        feature.pending[-1] = feature.pending[-1].owned()
            wait(feeds)  # the caller may change its arrays once append returns
            for feed in feeds:
                feed.result()
        except BaseException as exc:  # the samples are half stored: the file cannot be finished
            wait(feeds)
            self._fail(exc)
            raise

    def _check_split_specs(self, split: str, features: list[str]) -> None:
        """Refuse ``"split/feature"`` keys of ``features=`` that name none of a split's (now fixed) features."""
        unused = [key for key in self._specs.unused(split) if key.partition("/")[2] not in features]
        if unused:
            where = str(self.path)
            raise WriterError(
                f"{where}: features= names {unused}, but the features of /{split} are {features}; fix the key(s) "
                "(a split's features are fixed by its first batch)",
                path=where,
                hdf5_path=f"/{split}",
            )

    def append_sample(self, split: str, sample: Mapping[str, Any]) -> None:
        """Append one sample: ``append(split, {k: [v] for k, v in sample.items()})``.

        Parameters
        ----------
        split
            The split.
        sample
            ``{feature: value of one sample}`` (an array, a str, bytes, a code
            or a class name). A feature inferred from a single sample is dense
            unless it is a str or bytes: declare ragged features first.

        Raises
        ------
        WriterError, EncodingError
            As :meth:`append`.
        """
        batch: dict[str, Any] = {}
        for key, value in sample.items():
            if isinstance(value, np.ndarray) and value.dtype.kind in "biuf":
                batch[key] = value[np.newaxis]
            else:
                batch[key] = [value]
        self.append(split, batch)

    # -- finishing -----------------------------------------------------------

    def flush(self) -> None:
        """Write every buffered sample to the temporary file and flush HDF5.

        The target path is not touched: a crash after a flush leaves an
        incomplete temporary file (no ``complete`` attribute, §4.4) and the
        target as it was.

        Raises
        ------
        WriterError
            If the writer is closed, or storing samples failed earlier.
        OSError
            If storing samples fails now (a full disk): the writer then
            discards the file (see :meth:`append`).
        """
        self._check_open()
        try:
            for split in self._splits.values():
                if any(f.pending for f in split.features.values()):
                    split.flush(final=False, compression_opts=self._compression_opts, pool=self._pool)
            self._pool.finish()
            self._file.flush()
        except BaseException as exc:
            self._fail(exc)
            raise

    def _write_fingerprints(self) -> dict[tuple[str, str], str]:
        """Write the fingerprints and statistics of new and extended features (and fingerprints that are missing).

        Returns
        -------
        dict
            ``{(split, feature): fingerprint}`` for every feature of the file.
        """
        out: dict[tuple[str, str], str] = {}
        for split in self._splits.values():
            for feature in split.features.values():
                obj, hasher = feature.obj, feature.hasher
                assert obj is not None and hasher is not None
                out[(split.name, feature.name)] = fp = hasher.fingerprint()
                write_attr(obj, "fingerprint", fp)
                for key in _STATS_ATTRS:
                    if key in obj.attrs:
                        del obj.attrs[key]
                if feature.stats is not None:
                    for key, value in feature.stats.attrs().items():
                        write_attr(obj, key, value)
            for name, obj in split.stored.items():  # untouched features of the existing file
                fp = read_attr(obj, "fingerprint", None)
                if not isinstance(fp, str) or not FINGERPRINT_PATTERN.match(fp):
                    feature = FeatureSink.from_stored(split.name, name, obj, split.num_samples, str(self.path))
                    feature.rehash()
                    assert feature.hasher is not None
                    fp = feature.hasher.fingerprint()
                    write_attr(obj, "fingerprint", fp)
                out[(split.name, name)] = fp
        return out

    def _check_specs_used(self) -> None:
        """Refuse ``features=`` keys that applied to no feature this writer created."""
        unused = self._specs.unused()
        if unused:
            where = str(self.path)
            created = sorted(f"{s.name}/{f}" for s in self._splits.values() for f in s.features if f not in s.stored)
            raise WriterError(
                f"{where}: features= names {unused}, which match no feature this writer created ({created}); "
                "options apply to new features (inferred from their first batch or declared with add_feature), "
                "not to features already in the file. The file was not written: fix the keys",
                path=where,
            )

    def _finish(self) -> None:
        self._check_specs_used()
        for split in self._splits.values():
            split.flush(final=True, compression_opts=self._compression_opts, pool=self._pool)
            if not split.stored:  # new, or loaded to be extended
                write_attr(split.group, "num_samples", split.num_samples)
        self._pool.close()
        self._feeder.shutdown()
        write_attr(self._file, "fingerprint", file_fingerprint(self._write_fingerprints()))
        write_attr(self._file, "complete", 1)  # last (§4.4)
        self._file.flush()
        self._file.close()
        _fsync(self.temp_path)
        if _resolve_target(self.path) != self.target_path:  # raises if it became a FIFO, a device, ...
            raise WriterError(
                f"{self.path}: the target changed while the file was written (it now leads to "
                f"{str(_resolve_target(self.path))!r}, not {str(self.target_path)!r}); the file was not written",
                path=str(self.path),
            )
        os.replace(self.temp_path, self.target_path)
        if os.name == "posix":
            _fsync(self.target_path.parent)

    def close(self, abort: bool = False) -> None:
        """Finish the file and move it to the target, or abort (§4.4).

        Parameters
        ----------
        abort
            Delete the temporary file instead; the target stays as it was.

        Raises
        ------
        OSError, WriterError, EncodingError
            If finishing fails: the temporary file is deleted, the target is
            untouched and the error propagates. Closing twice does nothing.
        WriterError
            If storing samples failed earlier (see :meth:`append`): the file
            was discarded.
        """
        if self._failure is not None and not abort:
            raise self._failed_error()
        if self._closed:
            return
        self._closed = True
        if abort:
            self._finalizer()
            return
        try:
            self._finish()
        except BaseException:
            self._finalizer()
            raise
        self._finalizer.detach()

    def __enter__(self) -> Writer:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close(abort=exc_type is not None)


# --------------------------------------------------------------------------
# in-memory writing


def write(
    path: str | os.PathLike[str],
    splits: Mapping[str, Mapping[str, Any]],
    metadata: Mapping[str, Any] | None = None,
    *,
    compression: str | None = None,
    compression_opts: int | None = None,
    shuffle: bool = False,
    seed: int | None = None,
    features: Mapping[str, FeatureSpec | Mapping[str, Any]] | None = None,
) -> Path:
    """Write in-memory data as an h5ml file, atomically (§4, §5, §6, §7, §8).

    Parameters
    ----------
    path
        The target file (replaced on success; untouched on failure).
    splits
        ``{split: {feature: values}}``. Values: numeric array ``(N, ...)``
        (dense; bool stored as uint8 0/1, §3.3), numpy str array or list of
        ``str`` (string), :class:`Categorical` or a pandas-like categorical
        (categorical), list of arrays differing in their first axis (ragged)
        or in more axes (ragged with ``shapes``), list of ``bytes`` (bytes).
        Every feature of a split has the same number of samples N.
    metadata
        Root metadata (§4.2); see :class:`Writer`.
    compression, compression_opts
        ``"gzip"`` or ``None``, and the gzip level; see :class:`Writer`.
    shuffle
        Store each split's samples in a random order (§7.6): the stored sample
        ``i`` is the source sample ``p[i]`` with
        ``p = numpy.random.default_rng(shuffle_seed).permutation(N)``, the same
        for every feature of the split; ``shuffle_seed`` is recorded on the split.
    seed
        The shuffle seed, an integer in [0, 2**63) (recorded as a signed
        64-bit ``shuffle_seed``, §5.3). With ``shuffle=True`` and no seed one
        is drawn from ``numpy.random.SeedSequence`` and recorded.
    features
        Options per feature: ``{"label": {"role": "target"}}`` applies to the
        feature of every split; ``"split/feature"`` keys apply to one split and
        override the general ones field by field. Values are
        :class:`FeatureSpec` or dicts of its fields.

    Returns
    -------
    pathlib.Path
        The target path.

    Raises
    ------
    WriterError
        If ``splits`` is not a dict of dicts, names are invalid (§5.1.1, or
        hold a NUL character or a lone surrogate), a split's features have
        different lengths (all are listed), ``features=`` names an unknown
        feature, ``seed`` is given without ``shuffle`` or is not in
        [0, 2**63), or the target is not a regular file (see :class:`Writer`).
    EncodingError
        If a value has no encoding or breaks its encoding's rules (the message
        names the file and the HDF5 path), or does not fit its dtype (see
        :func:`h5ml.writer.batches.normalize`: a value that would overflow to
        infinity is refused; rounding into a float dtype is allowed).
    MetadataError
        If the metadata is invalid or cannot be stored (see
        :func:`h5ml.model.metadata.new_root_metadata`).

    Notes
    -----
    On any error the target is left as it was and no temporary file remains.
    """
    where = str(path)
    if seed is not None and not shuffle:
        raise WriterError(
            f"{where}: seed={seed} was given but shuffle is False; pass shuffle=True or no seed", path=where
        )
    if shuffle:
        seed = draw_seed() if seed is None else _check_seed(seed, "seed", where)
    if not isinstance(splits, Mapping):
        raise WriterError(
            f"{where}: splits must be a dict {{split: {{feature: values}}}}, got a {type(splits).__name__}", path=where
        )
    for split, columns in splits.items():
        _check_name(split, "split", where, "/")
        if not isinstance(columns, Mapping):
            raise WriterError(
                f"{where}: split /{split} must be given as a dict {{feature: values}}, got a "
                f"{type(columns).__name__}; e.g. {{'{split}': {{'x': array}}}}",
                path=where,
                hdf5_path=f"/{split}",
            )
        for name in columns:
            _check_name(name, "feature", where, f"/{split}")
    specs = SpecTable(features)
    specs.check_used(splits)
    columns_by_split = {s: {f: as_categorical(v) for f, v in cols.items()} for s, cols in splits.items()}
    for split, columns in columns_by_split.items():
        lengths = {f: column_length(c) for f, c in columns.items()}
        for name, length in lengths.items():
            if length is None:
                kind = type(columns[name]).__name__
                raise EncodingError(
                    f"{where}:/{split}/{name}: expected an array or a list of samples, got a {kind}",
                    path=where,
                    hdf5_path=f"/{split}/{name}",
                )
        if len(set(lengths.values())) > 1:
            listed = ", ".join(f"{f}: {n}" for f, n in lengths.items())
            raise WriterError(
                f"{where}: the features of split /{split} have different numbers of samples ({listed}); every "
                "feature of a split has num_samples samples (§5.3)",
                path=where,
                hdf5_path=f"/{split}",
            )
    with Writer(path, metadata, compression=compression, compression_opts=compression_opts) as w:
        for split, columns in columns_by_split.items():
            n = next(iter(len(c) for c in columns.values()), 0)  # all equal, checked above
            w.add_split(split, shuffle_seed=seed if shuffle else None, expected_samples=n)
            state = w._splits[split]
            for name, column in columns.items():
                fspec = specs.get(split, name)
                with _located(where, f"/{split}/{name}"):
                    layout = infer_layout(column, fspec, f"{where}:/{split}/{name}")
                    state.features[name] = w._new_feature(split, state, name, layout, fspec)
            order = write_order(n, seed) if shuffle and seed is not None else None
            sample_bytes = max(1, sum(column_nbytes(c) for c in columns.values()) // max(1, n))
            step = max(1, BLOCK_BYTES // sample_bytes)
            for start in range(0, n, step):
                index: slice | np.ndarray = slice(start, start + step) if order is None else order[start : start + step]
                w.append(split, {name: take(column, index) for name, column in columns.items()})
    return Path(path)
