"""One split of a file, opened lazily in each process: what every framework adapter reads through (§5, §6).

Training frameworks copy their dataset objects into worker processes: by
``fork`` (the child inherits the parent's open HDF5 file, which must not be
used there) or by pickling (``spawn``, ``forkserver``; an h5py object cannot
be pickled, case C02). A :class:`SplitSource` therefore holds the file's path,
the split name, the features to read and how to decode images, and opens its
own reader with :func:`h5ml.open` the first time it is used in each process.
It pickles as those values (``path``, ``split``, ``features``,
``decode_images``, ``color``, ``verify``, ``zero_copy``, ``storage_options``)
and the public attributes a subclass adds
(the PyTorch dataset's ``transform``), never an open handle.

The PyTorch and Keras adapters build on it, so that each rule lives in one
place: the batch as numpy arrays (:meth:`SplitSource.read_arrays`, with
:mod:`h5ml.sampling.batches` and the transform run where the batch is read),
image decoding (``decode_images``), and the sampler of the split
(:meth:`SplitSource.sampler`: the same settings give the same batches and
resume states in both). A sharded dataset (``path`` an index, SPEC §12.5)
is read the same way: its shard sizes reach the sampler here
(:meth:`SplitSource.sampler`), so no adapter has shard logic of its own.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

from h5ml.errors import H5MLError
from h5ml.model.remote import absolute_location
from h5ml.reader import Dataset, Feature, Split, open
from h5ml.reader.dense import DenseFeature
from h5ml.reader.handle import FORK_GENERATION
from h5ml.reader.imagecodec import decode_column, images_to_decode, untyped_features
from h5ml.reader.offsets import sample_chunk_rows
from h5ml.reader.plan import batch_indices, sample_index
from h5ml.reader.sharded import ShardedDataset
from h5ml.reader.sharded_feature import ShardedFeature
from h5ml.reader.sharded_split import ShardedSplit
from h5ml.sampling import Sampler, ShuffleMode
from h5ml.sampling.batches import ColumnBatch, batch_arrays
from h5ml.sampling.shard_orders import DEFAULT_SHARDS_IN_FLIGHT

__all__ = ["BatchTransform", "SampleTransform", "SplitSource", "prefetch", "sampler_of"]

#: Per-batch transform: takes and returns the dict of one batch's arrays (key -> array), run where the batch is read.
BatchTransform = Callable[[dict[str, Any]], dict[str, Any]]
#: Per-sample transform: takes and returns one sample's dict, run where the batch is read.
SampleTransform = Callable[[dict[str, Any]], dict[str, Any]]
#: A :class:`~h5ml.sampling.ColumnBatch`, or a framework adapter's subclass of it.
_Batch = TypeVar("_Batch", bound=ColumnBatch)

#: Held while a source opens its reader, so that threads reading one source at once open it once. A forked
#: child gets a new lock (the parent's may be held by a thread that does not exist in the child).
_OPENING = [threading.Lock()]


def _new_lock_in_child() -> None:
    _OPENING[0] = threading.Lock()


os.register_at_fork(after_in_child=_new_lock_in_child)


class SplitSource:
    """A picklable reference to one split of an h5ml file, opened once per process (§5, C02).

    Parameters
    ----------
    path
        The h5ml file, or the index of a sharded dataset (a ``.json`` file or
        its folder, §12.1), or its URL (:mod:`h5ml.reader.remote`). Only the absolute path (or URL) is stored.
    split
        The split name (§5.1), e.g. ``"train"``.
    features
        Feature names to read, in this order; None for every readable feature.
    decode_images
        ``bytes`` features (§6.6) to decode into uint8 pixel arrays ``(H, W,
        C)`` with :func:`h5ml.reader.imagecodec.decode_image` (Pillow): a list of
        names, or True for every read ``bytes`` feature whose ``media_type``
        is ``image/...``. Their encoding is then reported as ``"image"``.
    color
        Channels of decoded images: ``"RGB"`` (default), ``"RGBA"``, ``"L"``,
        ``"LA"`` or ``"keep"``.
    verify
        Verified reads in every process that opens the file (``verify=True`` of
        :func:`h5ml.open`, SPEC §8.4): a damaged chunk raises
        :class:`h5ml.ChecksumError`, a file without checksums
        :class:`h5ml.ChecksumsMissingError`, instead of returning its values.
    zero_copy
        Uncompressed ragged values as read-only views of the file's memory map
        in every process that opens the file (``zero_copy=True`` of
        :func:`h5ml.open`: what it trades is said there).
    storage_options
        For a URL (a file, or a sharded dataset's index and every shard, SPEC §12.5): the fsspec file
        system's options (credentials, endpoint), pickled into every worker process with the source and
        passed to :func:`h5ml.open` there; None: the file system's defaults, which read credentials from
        the environment of each process (``AWS_ACCESS_KEY_ID``, ...). They appear in no message and
        not in ``repr``.

    Raises
    ------
    FileNotFoundError, h5ml.H5MLError
        As :func:`h5ml.open`, when the file is first opened in a process
        (not at construction); :class:`h5ml.FeatureNotFoundError` for an
        unknown feature.
    h5ml.SplitNotFoundError
        For an unknown split (a ``KeyError``; the message names the file and
        lists its splits), when the file is first opened.
    ValueError
        If ``storage_options`` are given with a local path (they would be ignored), when the file is opened.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        split: str,
        features: Sequence[str] | None = None,
        *,
        decode_images: bool | Sequence[str] = False,
        color: str = "RGB",
        verify: bool = False,
        zero_copy: bool = False,
        storage_options: Mapping[str, Any] | None = None,
    ) -> None:
        self.path = absolute_location(path)  # a URL as it is: opened through fsspec, credentials from the environment
        self.verify = bool(verify)
        self.zero_copy = bool(zero_copy)
        self.split = split
        self.features: tuple[str, ...] | None = None if features is None else tuple(features)
        self.decode_images: bool | tuple[str, ...] = (
            decode_images if isinstance(decode_images, bool) else tuple(decode_images)
        )
        self.color = color
        self.storage_options: dict[str, Any] | None = None if storage_options is None else dict(storage_options)
        self._forget()

    def _forget(self) -> None:
        self._generation = -1  # FORK_GENERATION when this process opened the reader; -1: not open
        self._file: Dataset | ShardedDataset | None = None
        self._split: Split | ShardedSplit | None = None
        self._names: tuple[str, ...] = ()
        self._encodings: dict[str, str] = {}
        self._decoded: frozenset[str] = frozenset()

    def __getstate__(self) -> dict[str, Any]:
        # The public attributes (a subclass's too, such as a transform), never the reader of this process.
        return {name: value for name, value in self.__dict__.items() if not name.startswith("_")}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(
            {"decode_images": False, "color": "RGB", "verify": False, "zero_copy": False, "storage_options": None}
            | state
        )  # older pickles lack the last four
        self._forget()

    def reader(self) -> Split | ShardedSplit:
        """Return this process's open split, opening the file on first use in each process.

        Returns
        -------
        h5ml.Split or h5ml.ShardedSplit
            The split (of shards, for an index), from a reader owned by the calling process (a reader
            inherited through ``fork`` is left to the parent, never used).

        Raises
        ------
        h5ml.SplitNotFoundError
            If the file has no split of that name (a ``KeyError``; the message
            names the file, the split asked and the file's splits).
        FileNotFoundError, h5ml.H5MLError
            As :func:`h5ml.open`.
        """
        split = self._split
        if split is not None and self._generation == FORK_GENERATION[0]:
            return split  # opened in this process: no system call on the per-read path
        with _OPENING[0]:
            if self._split is None or self._generation != FORK_GENERATION[0]:
                self._open()
        assert self._split is not None
        return self._split

    def _open(self) -> None:
        """Open the file and the split, and learn the features' encodings (holding ``_OPENING``)."""
        self._file = None  # never close a handle inherited through fork: the parent owns it
        opened = open(self.path, verify=self.verify, zero_copy=self.zero_copy, storage_options=self.storage_options)
        try:
            split = opened[self.split]  # SplitNotFoundError names the file, the split and the file's splits
        except H5MLError:
            opened.close()
            raise
        # SPEC §6.1-R7: "every feature" refuses a feature it cannot read rather than leaving it out
        names_all = split.every_feature() if self.features is None else self.features
        encodings = {name: split.feature(name).encoding for name in names_all}
        media_types = {name: split.feature(name).media_type for name, e in encodings.items() if e == "bytes"}
        where = f"{self.path}: split {self.split!r}"
        untyped = untyped_features(self.decode_images, media_types) if split.num_samples else []
        first = split.read(0, untyped) if untyped else {}
        self._decoded = images_to_decode(self.decode_images, encodings, media_types, where, first)
        self._encodings = {name: "image" if name in self._decoded else e for name, e in encodings.items()}
        self._names, self._file, self._split = names_all, opened, split
        self._generation = FORK_GENERATION[0]

    @property
    def num_samples(self) -> int:
        """The split's sample count N (§5.3)."""
        return self.reader().num_samples

    @property
    def feature_names(self) -> tuple[str, ...]:
        """The features each sample holds, in order."""
        self.reader()
        return self._names

    @property
    def encodings(self) -> dict[str, str]:
        """Feature name -> encoding (§6): ``dense``, ``string``, ``categorical``, ``ragged`` or ``bytes``."""
        self.reader()
        return dict(self._encodings)

    @property
    def fingerprint(self) -> str | None:
        """The file's fingerprint (§8.3), or None when it has none; for an index, the index fingerprint (§12.3)."""
        return self.reader().dataset.fingerprint

    @property
    def identity(self) -> str:
        """What a resume state records of the data it was taken on: the file's fingerprint (§8.3) and the split.

        ``"sha256:... /train"``; a file without a fingerprint (W202) gives
        ``"no fingerprint /train"``, so that a state of one split never
        resumes another, though two such files cannot be told apart.
        """
        return f"{self.fingerprint or 'no fingerprint'} /{self.split}"

    def roles(self) -> dict[str, str | None]:
        """Feature name -> its ``role`` attribute (§6.1: ``input``, ``target``, ...), None when unset."""
        split = self.reader()
        return {name: split.feature(name).role for name in self._names}

    def chunk_rows(self) -> int | None:
        """Samples per chunk of the split's first dense feature (§7.1), else of its first chunked feature.

        A property of the file, not of the features read: ``"chunk"`` mode
        then gives the same order in every adapter, whatever each reads (a
        resume state of one resumes the other). Samples per chunk of a
        feature are :func:`h5ml.reader.offsets.sample_chunk_rows`: for a
        ragged or bytes feature, the samples whose values fill about one
        chunk of ``values`` (never its rows of values taken as samples).

        Returns
        -------
        int or None
            None when no feature of the split is chunked.
        """
        return _chunk_rows(self.reader())

    def class_names(self, feature: str) -> list[str]:
        """Return the class names of a categorical feature (§6.5): code ``k`` means ``class_names[k]``.

        Raises
        ------
        ValueError
            If the feature is not categorical.
        h5ml.FeatureNotFoundError
            If the split has no such feature.
        """
        feat = self.reader().feature(feature)
        names = feat.class_names
        if names is None:
            raise ValueError(
                f"{self.path}: {feat.hdf5_path}: feature {feature!r} is {feat.encoding}, not categorical; "
                "it has no class names"
            )
        return list(names)

    def lengths(self, feature: str) -> npt.NDArray[np.int64]:
        """Return every sample's length of a ragged or bytes feature, from its offsets alone (§6.3).

        Returns
        -------
        numpy.ndarray
            int64 (N,): rows of ``values`` per sample (elements when the
            feature has ``shapes``; bytes for a bytes feature).

        Raises
        ------
        h5ml.FeatureNotFoundError
            If the split has no feature ``feature``.
        TypeError
            If ``feature`` is not ragged or bytes (it has no lengths).
        """
        return _lengths(self.reader().feature(feature), f"{self.path}: ", feature)

    def sampler(
        self,
        batch_size: int,
        *,
        shuffle: ShuffleMode = "none",
        seed: int = 0,
        drop_last: bool = False,
        rank: int | None = None,
        world_size: int | None = None,
        chunk_rows: int | None = None,
        window_chunks: int = 8,
        bucket_by: str | None = None,
        pool_batches: int = 32,
        shards_in_flight: int = DEFAULT_SHARDS_IN_FLIGHT,
    ) -> Sampler:
        """Return the :class:`h5ml.sampling.Sampler` of this split, as every framework adapter builds it.

        The file gives the sample count (§5.3), the data's :attr:`identity` (its fingerprint, §8.3, and the split), the
        chunk rows of ``"chunk"`` mode (:meth:`chunk_rows`, §7.1) and the
        lengths to bucket by (from the offsets alone, §6.3): the same settings
        give the same batches and the same resume states in every adapter;
        a sharded split its shard sizes too (:mod:`h5ml.sampling.shard_orders`).

        Parameters
        ----------
        batch_size, shuffle, seed, drop_last, window_chunks, pool_batches, shards_in_flight
            As :class:`h5ml.sampling.Sampler` (``shards_in_flight``: sharded splits only).
        rank, world_size
            This process's rank and the number of ranks; None stands for 0
            and 1 (one process).
        chunk_rows
            Samples per chunk for ``"chunk"`` mode; default :meth:`chunk_rows`
            (read from the file in that mode only).
        bucket_by
            Name of a ragged or bytes feature: batches hold samples of
            similar length (``lengths`` of the sampler, :meth:`lengths`).

        Raises
        ------
        ValueError, TypeError
            As :class:`h5ml.sampling.Sampler`; :meth:`lengths` for a
            ``bucket_by`` that is not ragged or bytes.
        """
        if shuffle == "chunk" and chunk_rows is None:
            chunk_rows = self.chunk_rows()
        return Sampler(
            self.num_samples,
            batch_size,
            shuffle=shuffle,
            seed=seed,
            chunk_rows=chunk_rows,
            window_chunks=window_chunks,
            rank=0 if rank is None else rank,
            world_size=1 if world_size is None else world_size,
            drop_last=drop_last,
            fingerprint=self.identity,
            lengths=None if bucket_by is None else self.lengths(bucket_by),
            pool_batches=pool_batches,
            shard_sizes=_shard_sizes(self.reader()),
            shards_in_flight=shards_in_flight,
        )

    def read_sample(self, index: Any) -> dict[str, Any]:
        """:meth:`read` of one integer in ``[-N, N)``; TypeError for a bool or a float (never another sample)."""
        return self.read(sample_index(index))

    def read(self, indices: Any) -> dict[str, Any]:
        """Read samples of the chosen features with one ``Split.read`` call (§6).

        Parameters
        ----------
        indices
            An int, a slice, or sample indices in any order with duplicates.

        Returns
        -------
        dict
            Feature name -> the reader's value (decoded images as uint8 arrays).

        Raises
        ------
        IndexError
            If an index is outside ``[-N, N)``.
        """
        split = self.reader()
        values = split.read(indices, self._names)
        if self._decoded:
            samples = _sample_numbers(indices, split.num_samples)
            for name in self._decoded:
                where = f"{self.path}: split {self.split!r}, feature {name!r} (/{self.split}/{name})"
                values[name] = decode_column(values[name], self.color, where, samples)
        return values

    def read_batch(self, indices: Any, kind: type[_Batch], transform: SampleTransform | None = None) -> _Batch:
        """Read samples with one reader call and return them as a :class:`~h5ml.sampling.ColumnBatch`.

        Parameters
        ----------
        indices
            Sample indices in any order, duplicates allowed (a sequence or 1-D integer array).
        kind
            The batch class: :class:`~h5ml.sampling.ColumnBatch`, or a
            subclass that converts the samples' values (a framework's tensors).
        transform
            Optional callable ``dict -> dict`` applied to each sample (as
            ``kind`` converts it), here: in the worker that reads the batch.

        Returns
        -------
        ColumnBatch
            The columns read and their encodings; with ``transform``, the
            transformed samples instead of the columns.

        Raises
        ------
        IndexError, TypeError
            If an index is outside ``[-N, N)``, or not an integer (a mask too: :func:`~h5ml.reader.plan.batch_indices`).
        """
        rows = batch_indices(indices)
        batch = kind(self.read(rows), dict(self._encodings), None, len(rows))
        if transform is None:
            return batch
        return kind(None, batch.encodings, [transform(sample) for sample in batch], len(rows))

    def read_arrays(
        self, indices: Any, pad_value: float = 0, transform: BatchTransform | None = None
    ) -> dict[str, Any]:
        """Read samples with one reader call and return the batch as numpy arrays, one per key (§6).

        For frameworks fed numpy arrays (Keras, JAX): every value is one array
        whose first axis is the batch.

        Parameters
        ----------
        indices
            Sample indices in any order, duplicates allowed (a sequence or 1-D integer array).
        pad_value
            Value written in the padding of ragged features and images of several sizes.
        transform
            Optional callable ``dict -> dict`` applied to the arrays, here (in
            the worker that reads the batch): augmentation.

        Returns
        -------
        dict
            Key -> numpy array of first axis R (:func:`h5ml.sampling.batches.batch_arrays`):
            dense features in their stored dtype ``(R, *sample_shape)``;
            categorical codes int64 ``(R,)``; strings a ``str`` array ``(R,)``;
            bytes an object array ``(R,)``; ragged features padded ``(R, L, ...)``
            plus ``<name>_lengths`` and ``<name>_mask``; decoded images
            ``(R, H, W, C)`` uint8, padded with lengths and mask when their sizes
            differ. Then what ``transform`` returns.

        Raises
        ------
        IndexError, TypeError
            If an index is outside ``[-N, N)``, or not an integer (a mask too: :func:`~h5ml.reader.plan.batch_indices`).
        """
        columns = self.read(batch_indices(indices))
        arrays = batch_arrays(columns, self._encodings, pad_value)
        return arrays if transform is None else transform(arrays)

    def close(self) -> None:
        """Close this process's reader (it reopens on the next read)."""
        if self._file is not None and self._generation == FORK_GENERATION[0]:
            self._file.close()
        self._forget()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.path!r}, {self.split!r}, features={self.features!r})"


def prefetch(source: SplitSource, indices: Any) -> int:
    """Start decoding, in the decode pool, the compressed chunks that hold ``indices`` of ``source``'s features.

    Returns at once with the decodes started (:meth:`h5ml.reader.column.Column.prefetch`): 0 for
    features h5ml does not decode itself (uncompressed, ragged, strings, a sharded split), for chunks
    cached or in flight, and with ``chunk_cache_bytes=0``. The next :meth:`SplitSource.read` of those
    rows finds them decoded. Raises IndexError for an index outside ``[-N, N)``.
    """
    split = source.reader()
    if not isinstance(split, Split):
        return 0
    rows = batch_indices(indices)
    started = 0
    for name in source.feature_names:
        feature = split.feature(name)
        if isinstance(feature, DenseFeature):
            started += feature.prefetch(rows)
    return started


def _chunk_rows(split: Split | ShardedSplit) -> int | None:
    """:meth:`SplitSource.chunk_rows` of an open split: its first dense feature's, else its first chunked one's."""
    features: list[Feature | ShardedFeature] = list(split.features.values())
    ordered = [f for f in features if f.encoding == "dense"] + [f for f in features if f.encoding != "dense"]
    for feature in ordered:
        per_chunk = feature.chunk_rows if isinstance(feature, ShardedFeature) else sample_chunk_rows(feature)
        if per_chunk is not None:
            return per_chunk
    return None


def _lengths(feat: Feature | ShardedFeature, where: str, feature: str) -> npt.NDArray[np.int64]:
    """:meth:`SplitSource.lengths` of an open feature (``where``: the file, for the message)."""
    lengths = getattr(feat, "lengths", None)
    if lengths is None:
        raise TypeError(
            f"{where}{feat.hdf5_path}: feature {feature!r} is {feat.encoding}, not ragged or bytes; "
            "it has no per-sample lengths to bucket by"
        )
    return np.asarray(lengths(), dtype=np.int64)


def sampler_of(
    source: SplitSource | int,
    batch_size: int,
    *,
    bucket_by: str | None = None,
    fingerprint: str | None = None,
    lengths: npt.ArrayLike | None = None,
    split_kind: str = "a SplitSource",
    **settings: Any,
) -> Sampler:
    """The :class:`h5ml.sampling.Sampler` of a split (:meth:`SplitSource.sampler`) or of a count of samples.

    Parameters
    ----------
    source
        A split, whose file gives the count, identity, chunk rows and lengths;
        or a sample count N, with ``fingerprint`` (checked on resume) and
        ``lengths`` (N,) to bucket by.
    batch_size, bucket_by, **settings
        As :meth:`SplitSource.sampler` (``shuffle``, ``seed``, ``rank`` ...).
    split_kind
        The caller's name for a split source, for the message (``"an H5MLDataset"``).

    Raises
    ------
    TypeError
        If ``bucket_by`` is given with a count (it names a feature of a split).
    ValueError
        As :class:`h5ml.sampling.Sampler`.
    """
    if isinstance(source, SplitSource):
        return source.sampler(batch_size, bucket_by=bucket_by, **settings)
    if bucket_by is not None:
        raise TypeError(f"bucket_by={bucket_by!r} needs {split_kind} source, not a count; pass lengths= with a count")
    return Sampler(source, batch_size, fingerprint=fingerprint, lengths=lengths, **settings)


def _shard_sizes(split: Split | ShardedSplit) -> tuple[int, ...] | None:
    """The samples of each shard of a sharded split (SPEC §12.5); None for a split of one file."""
    return split.shard_sizes if isinstance(split, ShardedSplit) else None


def _sample_numbers(indices: Any, count: int) -> int | list[int]:
    """The sample index (an int) or indices that ``Split.read(indices)`` read, negatives counted from the end."""
    if isinstance(indices, (int, np.integer)):
        return int(indices) % count if count else int(indices)
    return [int(k) for k in np.arange(count)[indices]]
