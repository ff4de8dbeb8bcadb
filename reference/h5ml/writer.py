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
untouched. The writer never opens the target for writing, so readers that have
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

- :mod:`h5ml.values`: the value types :class:`Categorical` and
  :class:`FeatureSpec` (re-exported here) and the ``features=`` table;
- :mod:`h5ml.layout`: a feature's stored form, declared, inferred from values
  (the table above) or read from a file, and its §6.1 attributes;
- :mod:`h5ml.batches`: a batch of values checked and cast to its stored form;
- :mod:`h5ml.stats`: the streaming statistics (§6.7);
- :mod:`h5ml.sinks`: per feature and per split, the HDF5 objects, buffers,
  fingerprint and statistics while the file is written.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import weakref
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Final, Literal

import h5py
import numpy as np
import numpy.typing as npt

from h5ml import spec
from h5ml.attrs import read_attr, write_attr
from h5ml.batches import Batch, normalize
from h5ml.chunks import SPLIT_SAMPLE_BYTES
from h5ml.errors import EncodingError, H5MLError, UnknownExtensionError, UnsupportedVersionError, WriterError
from h5ml.fingerprint import FINGERPRINT_PATTERN, file_fingerprint
from h5ml.layout import Layout, declared_layout, feature_attrs, infer_layout
from h5ml.metadata import new_root_metadata
from h5ml.sinks import BLOCK_BYTES, FeatureSink, SplitSink
from h5ml.values import Categorical, FeatureSpec, SpecTable, as_categorical, column_length, column_nbytes, take

__all__ = ["WRITE_BUFFER_BYTES", "Categorical", "FeatureSpec", "Writer", "write"]

#: Bytes of samples a split buffers in memory before they are written to HDF5.
#: Buffering makes ``append_sample`` cheap and lets small splits get chunks sized
#: to their final length (§7.3).
WRITE_BUFFER_BYTES: Final = 32 << 20
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


def _discard(h5file: h5py.File, temp: Path) -> None:
    """Close and delete an unfinished temporary file (also the finalizer)."""
    try:
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


def _check_name(name: Any, kind: str, path: str, hdf5_path: str) -> None:
    if not isinstance(name, str) or not spec.is_valid_name(name):
        raise WriterError(
            f"{path}: {kind} name {name!r} at {hdf5_path} is invalid (§5.1, §5.2): a name is non-empty, has no "
            "'/', does not start with '.', '_' or whitespace nor end with whitespace, and is at most 255 UTF-8 bytes",
            path=path,
            hdf5_path=hdf5_path,
        )


class Writer:
    """Write an h5ml file batch by batch, atomically (§4.4, §5, §6, §7, §8).

    Parameters
    ----------
    path
        The target file. It is not opened for writing: the file is built in
        ``.<name>.h5ml-tmp-<random>`` beside it and moved over it on close.
    metadata
        Root metadata (§4.2): ``name`` (default: the target's stem), and
        optional ``description``, ``license``, ``version``, ... checked by
        :func:`h5ml.metadata.new_root_metadata` (which refuses the attributes
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
        Per-feature options used when a feature is inferred from its first
        batch: ``{"label": {"role": "target"}, "train/label": FeatureSpec(...)}``.

    Raises
    ------
    WriterError
        If the options are wrong, the target's directory does not exist, or
        (mode ``"a"``) the existing file is not a complete h5ml file or cannot
        be extended.
    UnsupportedVersionError, UnknownExtensionError
        (mode ``"a"``) The existing file has a newer MAJOR version or an
        extension this writer does not understand.
    MetadataError
        If the metadata is invalid.

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
        parent = self.path.parent
        if not parent.is_dir():
            raise WriterError(f"{where}: the directory {str(parent)!r} does not exist; create it first", path=where)
        if self.path.is_dir():
            raise WriterError(f"{where} is a directory; give a file path", path=where)
        self.temp_path = parent / f".{self.path.name}.h5ml-tmp-{secrets.token_hex(8)}"
        self._splits: dict[str, SplitSink] = {}
        self._closed = False
        append = mode == "a" and self.path.exists()
        try:
            if append:
                shutil.copyfile(self.path, self.temp_path)
            h5mode = "r+" if append else "w-"
            self._file = h5py.File(self.temp_path, h5mode, libver=spec.LIBVER_BOUNDS, rdcc_nbytes=_WRITE_CACHE_BYTES)
        except BaseException:
            self.temp_path.unlink(missing_ok=True)
            raise
        self._finalizer = weakref.finalize(self, _discard, self._file, self.temp_path)
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

    def _write_root(self, metadata: Mapping[str, Any] | None) -> None:
        fields = dict(metadata or {})
        name = fields.pop("name", self.path.stem)
        for key, value in new_root_metadata(name, **fields).items():
            if value is not None:
                write_attr(self._file, key, value)

    def _load_existing(self, metadata: Mapping[str, Any] | None) -> None:
        f, where = self._file, str(self.path)
        if read_attr(f, "format", None) != spec.FORMAT_NAME:
            raise WriterError(
                f"{where} is not an h5ml file (root attribute 'format' is not 'h5ml'); cannot append", path=where
            )
        version = read_attr(f, "format_version", None)
        try:
            major, _ = spec.parse_version(version)
        except ValueError:
            raise WriterError(
                f"{where}: format_version {version!r} is invalid (§1.2); cannot append", path=where
            ) from None
        if major != spec.FORMAT_VERSION[0]:
            raise UnsupportedVersionError(
                f"{where} has format_version {version}; this writer writes {spec.FORMAT_VERSION_STRING} "
                "and cannot append to it",
                path=where,
            )
        unknown = sorted(set(read_attr(f, "must_understand", [])) - spec.KNOWN_EXTENSIONS)
        if unknown:
            raise UnknownExtensionError(
                f"{where} needs extensions {unknown} that this writer does not understand (§1.5)", path=where
            )
        if read_attr(f, "complete", None) != 1:
            raise WriterError(
                f"{where} is incomplete (no 'complete' = 1, §4.4); append refuses to extend it", path=where
            )
        # From here on the copy is unfinished: it must not look complete (§4.4).
        for key in _FINISH_ATTRS:
            if key in f.attrs:
                del f.attrs[key]
        f.flush()
        if metadata:
            fields = dict(metadata)
            name = fields.pop("name", read_attr(f, "name", self.path.stem))
            checked = new_root_metadata(name, **fields)
            for key in ("name", *fields):
                if key in checked:
                    write_attr(f, key, checked[key])
        for split_name, group in f.items():
            if split_name.startswith(spec.RESERVED_PREFIX) or not isinstance(group, h5py.Group):
                continue
            num = read_attr(group, "num_samples", None)
            if not isinstance(num, int) or num < 0:
                raise WriterError(
                    f"{where}: /{split_name} has no valid num_samples (§5.3)", path=where, hdf5_path=f"/{split_name}"
                )
            stored = {k: obj for k, obj in group.items() if not k.startswith(spec.RESERVED_PREFIX)}
            self._splits[split_name] = SplitSink(split_name, group, num_samples=num, frozen=bool(stored), stored=stored)

    # -- building ----------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise WriterError(f"{self.path}: the writer is closed", path=str(self.path))

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
            a seeded random order (§7.6).
        expected_samples
            The number of samples the split will get, when known: small splits
            then get chunks no larger than they need (§7.3).

        Raises
        ------
        WriterError
            If the writer is closed, the name is invalid or already used.
        """
        self._check_open()
        where = str(self.path)
        _check_name(name, "split", where, f"/{name}")
        if name in self._splits:
            raise WriterError(f"{where}: split /{name} already exists", path=where, hdf5_path=f"/{name}")
        if shuffle_seed is not None and (
            not isinstance(shuffle_seed, (int, np.integer)) or isinstance(shuffle_seed, bool)
        ):
            raise WriterError(f"{where}: shuffle_seed of /{name} must be an integer, got {shuffle_seed!r}", path=where)
        group = self._file.create_group(name)
        if description is not None:
            write_attr(group, "description", description)
        if shuffle_seed is not None:
            write_attr(group, "shuffle_seed", int(shuffle_seed))
        self._splits[name] = SplitSink(name, group, expected_samples=expected_samples)

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

        Raises
        ------
        WriterError
            If the name is invalid or taken, or the split already has samples.
        EncodingError
            If the options do not describe a valid feature.
        """
        self._check_open()
        where = f"{self.path}:/{split}/{name}"
        fspec = FeatureSpec(
            encoding=encoding,
            dtype=dtype,
            role=role,
            description=description,
            units=units,
            sample_rate=sample_rate,
            media_type=media_type,
            class_names=class_names,
            compression=compression,
        )
        with _located(str(self.path), f"/{split}/{name}"):
            layout = declared_layout(
                encoding,
                dtype=dtype,
                sample_shape=sample_shape,
                sample_ndim=sample_ndim,
                class_names=class_names,
                where=where,
            )
            self._add_feature(self._split(split), name, layout, fspec)

    def _add_feature(self, split: SplitSink, name: str, layout: Layout, fspec: FeatureSpec) -> None:
        """Add a new feature to a split that has no samples yet (§5.3, §6.1)."""
        hdf5_path = f"/{split.name}/{name}"
        where = str(self.path)
        _check_name(name, "feature", where, hdf5_path)
        if split.frozen:
            raise WriterError(
                f"{where}: cannot add feature {hdf5_path}: split /{split.name} already has its features "
                f"{sorted(split.features)} (every feature of a split has num_samples samples, §5.3)",
                path=where,
                hdf5_path=hdf5_path,
            )
        if name in split.features:
            raise WriterError(f"{where}: feature {hdf5_path} already exists", path=where, hdf5_path=hdf5_path)
        compression = self._compression if fspec.compression is None else fspec.compression or None
        self._check_compression(compression, where)
        attrs = feature_attrs(layout, fspec, f"{where}:{hdf5_path}")
        feature = FeatureSink(split.name, name, layout, attrs, compression)
        feature.reset_fingerprint_and_stats()
        split.features[name] = feature

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
            If the writer is closed, the batch misses or adds features, or its
            features have different numbers of samples (the message lists them).
        EncodingError
            If a value does not fit its feature (shape, dtype, code range, ...).
        """
        self._check_open()
        state = self._split(split)
        if state.stored:
            state.load_stored(str(self.path))
        where = str(self.path)
        names = set(batch)
        if state.frozen and names != set(state.features):
            missing, extra = sorted(set(state.features) - names), sorted(names - set(state.features))
            raise WriterError(
                f"{where}: a batch of /{split} must hold exactly its features {sorted(state.features)}; "
                f"missing {missing}, unexpected {extra}",
                path=where,
                hdf5_path=f"/{split}",
            )
        missing = sorted(set(state.features) - names)
        if missing:
            raise WriterError(
                f"{where}: the batch of /{split} lacks declared features {missing}", path=where, hdf5_path=f"/{split}"
            )
        for name in sorted(names - set(state.features)):
            with _located(where, f"/{split}/{name}"):
                layout = infer_layout(batch[name], self._specs.get(split, name), f"{where}:/{split}/{name}")
                self._add_feature(state, name, layout, self._specs.get(split, name))
        parts: dict[str, Batch] = {}
        for name in sorted(names):
            with _located(where, f"/{split}/{name}"):
                parts[name] = normalize(state.features[name].layout, batch[name], f"{where}:/{split}/{name}")
        counts = {name: p.n for name, p in parts.items()}
        if len(set(counts.values())) > 1:
            listed = ", ".join(f"{k}: {v}" for k, v in counts.items())
            raise WriterError(
                f"{where}: the features of a batch of /{split} have different numbers of samples ({listed}); "
                "every feature of a split grows together (§5.3)",
                path=where,
                hdf5_path=f"/{split}",
            )
        state.frozen = state.frozen or bool(parts)
        for name, part in parts.items():
            feature = state.features[name]
            feature.feed(part)
            feature.pending.append(part)
            state.pending_bytes += part.nbytes
        state.num_samples += next(iter(counts.values()), 0)
        if state.pending_bytes >= WRITE_BUFFER_BYTES:
            state.flush(final=False, compression_opts=self._compression_opts)
        else:
            for feature in state.features.values():
                if feature.pending:
                    feature.pending[-1] = feature.pending[-1].owned()

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
            If the writer is closed.
        """
        self._check_open()
        for split in self._splits.values():
            if any(f.pending for f in split.features.values()):
                split.flush(final=False, compression_opts=self._compression_opts)
        self._file.flush()

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

    def _finish(self) -> None:
        for split in self._splits.values():
            split.flush(final=True, compression_opts=self._compression_opts)
            if not split.stored:  # new, or loaded to be extended
                write_attr(split.group, "num_samples", split.num_samples)
        write_attr(self._file, "fingerprint", file_fingerprint(self._write_fingerprints()))
        write_attr(self._file, "complete", 1)  # last (§4.4)
        self._file.flush()
        self._file.close()
        _fsync(self.temp_path)
        os.replace(self.temp_path, self.path)
        if os.name == "posix":
            _fsync(self.path.parent)

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
        """
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


def _draw_seed() -> int:
    """A fresh non-negative 63-bit seed (it is recorded as an int64 attribute)."""
    return int(np.random.SeedSequence().generate_state(1, dtype=np.uint64)[0] >> np.uint64(1))


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
        The shuffle seed (an int >= 0). With ``shuffle=True`` and no seed one
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
        If names are invalid, a split's features have different lengths (all
        are listed), ``features=`` names an unknown feature, or ``seed`` is
        given without ``shuffle``.
    EncodingError
        If a value has no encoding or breaks its encoding's rules (the message
        names the file and the HDF5 path).
    MetadataError
        If the metadata is invalid.
    """
    where = str(path)
    if seed is not None and not shuffle:
        raise WriterError(
            f"{where}: seed={seed} was given but shuffle is False; pass shuffle=True or no seed", path=where
        )
    if shuffle:
        seed = _draw_seed() if seed is None else seed
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
            raise WriterError(f"{where}: seed must be an integer >= 0, got {seed!r}", path=where)
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
                    w._add_feature(state, name, infer_layout(column, fspec, f"{where}:/{split}/{name}"), fspec)
            order = np.random.default_rng(seed).permutation(n) if shuffle else None
            sample_bytes = max(1, sum(column_nbytes(c) for c in columns.values()) // max(1, n))
            step = max(1, BLOCK_BYTES // sample_bytes)
            for start in range(0, n, step):
                index: slice | np.ndarray = slice(start, start + step) if order is None else order[start : start + step]
                w.append(split, {name: take(column, index) for name, column in columns.items()})
    return Path(path)
