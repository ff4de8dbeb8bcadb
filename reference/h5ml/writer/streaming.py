"""The streaming :class:`Writer`: an h5ml file written batch by batch, atomically (§4.4, §5, §6, §7, §8).

The writer is the public face of its collaborators, each in its own module:

- :class:`~h5ml.writer.atomic.AtomicFile`: the target, the temporary file
  beside it, its discarding on failure and the final ``os.replace`` (§4.4);
- :func:`~h5ml.writer.root.write_root`, :func:`~h5ml.writer.root.update_root`:
  the root attributes (§4.2);
- :func:`~h5ml.writer.existing.start_file`, :func:`~h5ml.writer.existing.load_existing`:
  a new root, or (append mode) the splits and features of the file being extended;
- :class:`~h5ml.writer.registry.SplitRegistry`: the splits and features,
  declared, inferred, and every batch checked against them (§5, §6);
- :class:`~h5ml.writer.feeder.Feeder`: fingerprints (§8.2) and statistics
  (§6.7) fed, samples buffered and stored (§7);
- :func:`~h5ml.writer.finish.finish_file`: ``num_samples``, fingerprints,
  statistics, the file fingerprint (§8.3) and ``complete`` (§4.4).

The writer itself checks its options and, when storing samples fails,
has the file discarded (every later call then raises).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from h5ml.model.values import FeatureSpec, SpecTable
from h5ml.writer.arguments import check_options
from h5ml.writer.atomic import AtomicFile
from h5ml.writer.existing import start_file
from h5ml.writer.feeder import Feeder
from h5ml.writer.finish import finish_file
from h5ml.writer.registry import SplitRegistry
from h5ml.writer.root import check_metadata, update_root
from h5ml.writer.writer_factory import WriterFactory

__all__ = ["Writer", "one_sample_batch"]


def one_sample_batch(sample: Mapping[str, Any]) -> dict[str, Any]:
    """The batch of one sample, as :meth:`Writer.append_sample` appends it: arrays get a first axis, others a list."""
    batch: dict[str, Any] = {}
    for key, value in sample.items():
        if isinstance(value, np.ndarray) and value.dtype.kind in "biuf":
            batch[key] = value[np.newaxis]
        else:
            batch[key] = [value]
    return batch


class Writer(WriterFactory):
    """Write an h5ml file batch by batch, atomically (§4.4, §5, §6, §7, §8).

    Parameters
    ----------
    path
        The target file: a regular file, a symbolic link to one (written
        through), or nothing yet. It is built in ``.<name>.h5ml-tmp-<pid>-<machine>-<random>``
        beside it and moved over it on close (see :mod:`h5ml.writer.writer`).
    metadata
        Root metadata (§4.2): ``name`` (default: the target's stem), and
        optional ``description``, ``license``, ``version``, ... checked by
        :func:`h5ml.model.new_root.new_root_metadata` (which refuses the attributes
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
        ``"gzip"`` (deflate, a core filter, §3.5) or ``"zstd"`` (opt-in, see
        :func:`~h5ml.writer.compress.dataset_filters`), with the byte-shuffle filter for multi-byte types, or
        ``None``. Strings are never compressed (HDF5 does not compress
        variable-length data).
    compression_opts
        The level: gzip 0-9 (default 4), zstd 1-22 (default 3).
    features
        Per-feature options: ``{"label": {"role": "target"}, "train/label":
        FeatureSpec(...)}`` (:class:`h5ml.model.values.SpecTable`), for the
        features this writer creates, inferred or declared with
        :meth:`add_feature` (a field both give with different values is
        refused). A key that applies to no feature is an error, when its split
        gets its first samples or when the writer closes.
    checksums
        Write the CRC32C of every stored chunk beside its dataset (SPEC §8.4; ``verify=True`` reads check it); in
        mode ``"a"`` untouched chunks keep theirs. ``False``: none (mode ``"a"`` removes the file's, none stale).
    shard_size, samples_per_shard
        Write a sharded dataset instead (SPEC §12.4): ``Writer(OUTDIR, ..., shard_size="1GiB")`` returns a
        :class:`~h5ml.writer.sharded.ShardedWriter` (:class:`~h5ml.writer.writer_factory.WriterFactory`).

    Raises
    ------
    WriterError
        If the options are wrong, the target's directory does not exist, the
        target is not a regular file (see ``path``), or (mode ``"a"``) the
        existing file is not HDF5 or one of its splits cannot be extended.
    NotH5MLError, InvalidFileError, UnsupportedVersionError, UnknownExtensionError, IncompleteFileError
        (mode ``"a"``) The existing file is refused as :func:`h5ml.open`
        refuses it, with the same errors (:func:`h5ml.model.header.check_header`).
    MetadataError
        If the metadata is invalid or cannot be stored (see
        :func:`h5ml.model.new_root.new_root_metadata`).

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
    Samples are buffered (up to :data:`~h5ml.writer.feeder.WRITE_BUFFER_BYTES`
    per split) before they reach HDF5; :meth:`flush` writes them. Values are copied when they
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
        checksums: bool = True,
        shard_size: int | str | None = None,
        samples_per_shard: int | None = None,
    ) -> None:
        self.path = Path(path)
        where = str(self.path)
        compression = check_options(mode, compression, compression_opts, where)
        specs = SpecTable(features)
        check_metadata(metadata, where)
        self._atomic = atomic = AtomicFile(self.path)
        self.target_path, self.temp_path = atomic.target_path, atomic.temp_path
        self._feeder = Feeder(compression_opts)
        append = mode == "a" and self.target_path.exists()
        self._file = atomic.open(self, append, self._feeder.abort)
        try:
            existing = start_file(self._file, append, metadata, self.path.stem, where)
            self._splits = SplitRegistry(self._file, where, compression, specs, existing, checksums)
        except BaseException:
            self.close(abort=True)
            raise

    def drop_shuffle_seed(self, split: str) -> None:
        """Record no ``shuffle_seed`` for ``split``: its samples are not in the order the seed gives (§7.6).

        For a converter that stored a split's source samples shuffled but left
        some out (``on_error="skip"``): the others' order is no longer
        ``h5ml.sampling.seeds.write_order(n, seed)`` of the ``n`` stored.

        Raises
        ------
        WriterError
            If the writer is closed or has no split ``split``.
        """
        self._atomic.check_open()
        self._splits.drop_shuffle_seed(split)

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
        self._atomic.check_open()
        update_root(self._file, metadata, self.path.stem, str(self.path))

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
        self._atomic.check_open()
        self._splits.add_split(name, description, shuffle_seed, expected_samples)

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
            ``"gzip"``, ``"zstd"`` or ``False`` to override the writer's compression.

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
        self._atomic.check_open()
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
        self._splits.add_feature(split, name, encoding, sample_shape, declared)

    def infer_features(self, split: str, columns: Mapping[str, Any]) -> None:
        """Declare a split's features from whole columns of their values, before its first batch (§6).

        Each feature's stored form is inferred from all its values, as
        :meth:`append` infers it from a first batch, so that the values can
        then be appended in batches of any size (a ragged feature stays
        ragged, a categorical one gets every class of its column). The
        writer's ``features=`` options apply. Nothing is appended.

        Parameters
        ----------
        split
            The split (created if needed).
        columns
            ``{feature: values}``, each as :meth:`append` takes it (array
            ``(N, ...)``, list of str, bytes or arrays,
            :class:`~h5ml.model.values.Categorical`).

        Raises
        ------
        WriterError
            If the writer is closed, ``columns`` is not a mapping, a name is
            invalid or taken, or the split already has its features (it has
            samples, or is a split of the file). Nothing is declared then.
        EncodingError
            If a column has no encoding or does not fit its options.
        """
        self._atomic.check_open()
        self._splits.infer_features(split, columns)

    def append(self, split: str, batch: Mapping[str, Any]) -> None:
        """Append samples to every feature of a split (§5.3).

        Parameters
        ----------
        split
            The split (created if needed).
        batch
            ``{feature: values}`` with the same number of samples n for every
            feature; each value as :func:`~h5ml.writer.inmemory.write` takes
            it (array ``(n, ...)``, list of str/bytes/arrays,
            :class:`~h5ml.model.values.Categorical`, codes). Features not
            declared with :meth:`add_feature` are inferred from the first
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
        self._atomic.check_open()
        admitted = self._splits.admit(split, batch)
        # Everything is checked: from here on the append takes effect.
        state = self._splits.take(admitted)
        with self._atomic.storing():  # if it fails, the samples are half stored: the file cannot be finished
            self._feeder.add(state, admitted.parts, admitted.n)

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
        self.append(split, one_sample_batch(sample))

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
        self._atomic.check_open()
        with self._atomic.storing():
            self._feeder.flush(self._splits.splits())
            self._file.flush()

    def _finish(self) -> None:
        self._splits.check_specs_used()
        finish_file(self._file, self._splits.splits(), self._feeder, str(self.path), self._splits.checksums)

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
        self._atomic.close(self._finish, abort)

    def __enter__(self) -> Writer:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close(abort=exc_type is not None)
