"""One split of an h5ml file as a ``keras.utils.PyDataset`` for ``model.fit`` on any Keras 3 backend.

The dataset is an :class:`h5ml.sampling.EpochCursor` (the same orders,
shuffle modes, shards, epochs and resume states as the PyTorch adapter's: a
state saved by one resumes in the other) that reads each batch through a
:class:`h5ml.reader.prefetch.BatchFeed` over a
:class:`h5ml.reader.source.SplitSource` (the file's path, opened lazily in
each process, never an inherited or pickled handle). Each ``dataset[i]`` is
batch ``i`` of the current epoch as numpy arrays, read with one reader call;
it imports no backend, so it runs under TensorFlow, JAX and PyTorch alike.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import keras
import numpy as np

import h5ml
from h5ml.reader.prefetch import BatchFeed
from h5ml.reader.remote import RemoteDataset
from h5ml.reader.source import BatchTransform, SplitSource
from h5ml.sampling import EpochCursor, ShuffleMode, features_of

__all__ = ["BatchTransform", "H5MLPyDataset", "Selection"]

#: Which batch arrays go where: one key, a tuple of keys, or {model input or output name: key}.
Selection = str | Sequence[str] | Mapping[str, str]


def _keys(selection: Selection | None) -> list[str]:
    if selection is None:
        return []
    if isinstance(selection, str):
        return [selection]
    if isinstance(selection, Mapping):
        return list(selection.values())
    return list(selection)


def _pick(arrays: Mapping[str, Any], selection: Selection) -> Any:
    """The batch arrays named by ``selection``, in its shape (one array, a tuple, or a dict)."""
    if isinstance(selection, str):
        return arrays[selection]
    if isinstance(selection, Mapping):
        return {name: arrays[key] for name, key in selection.items()}
    return tuple(arrays[key] for key in selection)


class H5MLPyDataset(EpochCursor, keras.utils.PyDataset):  # type: ignore[misc]
    """Batches of one split of an h5ml file for ``model.fit`` / ``evaluate`` / ``predict`` (§5, §6).

    Parameters
    ----------
    source
        The h5ml file: a path, or an opened :class:`h5ml.Dataset` (only its
        path is kept; each process opens its own reader).
    split
        The split name (§5.1), e.g. ``"train"``.
    batch_size
        Samples per batch, >= 1.
    inputs, targets
        Which batch arrays make ``x`` and ``y``: a key (one array), a tuple of
        keys (a list of model inputs or outputs, in order) or a dict
        ``{model input or output name: key}``. A key is a feature name, or
        ``<ragged>_lengths`` / ``<ragged>_mask`` for a padded ragged feature.
        Default: the features whose ``role`` attribute (§6.1) is ``input``,
        respectively ``target`` (one name, or a tuple of several in file
        order). Without targets the batches are ``(x,)`` (for ``predict``).
    sample_weight
        Key of a per-sample weight feature (a float array ``(R,)``): batches
        become ``(x, y, sample_weight)``.
    missing_labels
        What to do with missing labels, code ``-1`` in a categorical target
        (§6.5), which a Keras loss cannot take: None (default) passes the
        codes as stored; ``"weight"`` gives those samples sample weight 0
        (times the ``sample_weight`` feature, if any) and code 0 in their
        place, so that they add nothing to the loss or its gradient, as Keras
        masks samples. Batches become ``(x, y, sample_weight)`` (one weight
        array per target, in the targets' structure, when there are several).
        Compile metrics that should skip them as ``weighted_metrics``.
    shuffle, seed, drop_last, window_chunks, pool_batches
        As :class:`h5ml.sampling.Sampler`: ``"none"``, ``"chunk"`` or
        ``"full"``, deterministic given ``(seed, epoch)``; the epoch advances
        in :meth:`on_epoch_end`. Pass ``shuffle=False`` to ``model.fit``:
        Keras would otherwise permute the batches again with an unseeded
        generator (each sample is still seen once per epoch, but not
        reproducibly).
    rank, world_size
        This process's share, for several training processes; None stands
        for 0 and 1 (Keras has no process group to read them from).
    bucket_by
        Name of a ragged or bytes feature: batches of similar length, from
        its offsets alone (§6.3), so that padding wastes little.
    pad_value
        Value written in the padding of ragged features.
    transform
        Optional callable ``dict -> dict`` applied to each batch's arrays (by
        key) before ``inputs``/``targets`` pick from them, in the worker that
        read the batch: augmentation. It must pickle when the workers are
        processes started by spawn (a module-level function).
    decode_images, color
        ``bytes`` features holding encoded images to decode into uint8
        ``(B, H, W, C)`` arrays in the workers (names, or True for every
        ``image/...`` media type; see :class:`h5ml.reader.source.SplitSource`);
        images of several sizes are padded, with ``<name>_lengths`` and
        ``<name>_mask``.
    verify
        Verified reads in every worker (SPEC §8.4): each chunk read is checked
        against its CRC32C first; a damaged one raises
        :class:`h5ml.ChecksumError` instead of giving wrong batches, a file
        without checksums :class:`h5ml.ChecksumsMissingError`. True also when
        ``source`` is an :class:`h5ml.Dataset` opened with ``verify=True``.
    zero_copy
        Ragged values read as read-only views of the file's memory map before
        padding (``zero_copy=True`` of :func:`h5ml.open`: one copy fewer; what
        it trades is said there). True also when ``source`` was opened with it.
    storage_options
        For a URL: fsspec's options (credentials, endpoint), passed to every reader; None: those ``source`` was
        opened with when it is an open file at a URL, else the environment's credentials (SplitSource).
    workers, use_multiprocessing, max_queue_size
        As ``keras.utils.PyDataset``: read with ``workers`` threads, or
        processes with ``use_multiprocessing=True`` (each opens its own
        reader), up to ``max_queue_size`` batches ahead. The dataset reads
        ahead itself (:class:`h5ml.reader.prefetch.BatchFeed`) and tells Keras it
        has one worker: batches are kept by their place in the epoch, so none
        is served in another's place (Keras' own queue can serve batches
        prefetched before a model was built at the start of the first epoch).
        Threads (``workers=2``) are the fast path: no batch crosses a process.
        Worker processes are for heavy Python transforms; their batches come
        back through shared memory (:mod:`h5ml.reader.shared_batches`), none pickled.

    Raises
    ------
    FileNotFoundError, h5ml.H5MLError
        As :func:`h5ml.open` (the file is opened here, to learn its sample
        count, roles and chunking, then closed).
    h5ml.SplitNotFoundError
        For an unknown split (a ``KeyError`` naming the file, the split and the file's splits).
    ValueError
        If no inputs are given and no feature has ``role = "input"``, a key
        names no feature, or a sampling setting is out of range.

    Notes
    -----
    Batch arrays by encoding: see :mod:`h5ml.sampling.batches` (categorical
    codes are int64, -1 missing: see :meth:`class_names` and
    :meth:`num_classes`). ``len(dataset)`` is the number of batches of an
    epoch: ``ceil(N / batch_size)``, or ``N // batch_size`` with
    ``drop_last`` (one rank). Epochs, resume points and states are those of
    :class:`h5ml.sampling.EpochCursor`.
    """

    def __init__(
        self,
        source: str | os.PathLike[str] | h5ml.Dataset,
        split: str,
        batch_size: int = 32,
        *,
        inputs: Selection | None = None,
        targets: Selection | None = None,
        sample_weight: str | None = None,
        missing_labels: Literal["weight"] | None = None,
        shuffle: ShuffleMode = "none",
        seed: int = 0,
        drop_last: bool = False,
        rank: int | None = None,
        world_size: int | None = None,
        window_chunks: int = 8,
        bucket_by: str | None = None,
        pool_batches: int = 32,
        pad_value: float = 0,
        transform: BatchTransform | None = None,
        decode_images: bool | Sequence[str] = False,
        color: str = "RGB",
        verify: bool = False,
        zero_copy: bool = False,
        storage_options: Mapping[str, Any] | None = None,
        workers: int = 1,
        use_multiprocessing: bool = False,
        max_queue_size: int = 10,
    ) -> None:
        # Keras gets one worker: the dataset reads ahead itself (BatchFeed), so that batches are served by
        # their place in the epoch and never from a queue filled for another epoch or another order.
        keras.utils.PyDataset.__init__(self, workers=1, use_multiprocessing=False, max_queue_size=max_queue_size)
        path = source.path if isinstance(source, h5ml.Dataset) else source
        verify = bool(verify) or (isinstance(source, h5ml.Dataset) and source.verify)
        zero_copy = bool(zero_copy) or (isinstance(source, h5ml.Dataset) and source.zero_copy)
        if isinstance(source, RemoteDataset) and storage_options is None:
            storage_options = source.storage_options  # the options the given file was opened with
        remote: dict[str, Any] = {"verify": verify, "storage_options": storage_options}
        probe = SplitSource(path, split, decode_images=decode_images, color=color, **remote)
        try:
            roles = probe.roles()
            if inputs is None:
                inputs = self._by_role(roles, "input", probe)
            if targets is None:
                found = [name for name, role in roles.items() if role == "target"]
                targets = None if not found else found[0] if len(found) == 1 else tuple(found)
            wanted = _keys(inputs) + _keys(targets) + ([sample_weight] if sample_weight else [])
            features = features_of(wanted, probe.encodings, f"{probe.path}: split {probe.split!r}")
            categorical = [name for name, encoding in probe.encodings.items() if encoding == "categorical"]
            self._class_names = {name: probe.class_names(name) for name in categorical}
        finally:
            probe.close()  # no open handle is left for a forked worker to inherit
        self.source = SplitSource(
            path, split, features, decode_images=decode_images, color=color, zero_copy=zero_copy, **remote
        )
        try:  # chunk rows from the features read, as the PyTorch adapter's: the same settings, the same states
            sampler = self.source.sampler(
                batch_size,
                shuffle=shuffle,
                seed=seed,
                drop_last=drop_last,
                rank=rank,
                world_size=world_size,
                window_chunks=window_chunks,
                bucket_by=bucket_by,
                pool_batches=pool_batches,
            )
        finally:
            self.source.close()
        EpochCursor.__init__(self, sampler)
        self.feed = BatchFeed(
            self.source,
            pad_value=pad_value,
            transform=transform,
            workers=workers,
            processes=use_multiprocessing,
            depth=max(1, max_queue_size),
        )
        self.inputs: Selection = inputs
        self.targets: Selection | None = targets
        self.sample_weight = sample_weight
        self.missing_labels = missing_labels
        if missing_labels is not None and (missing_labels != "weight" or not self._masked()):
            raise ValueError(
                f"{self.source.path}: missing_labels={missing_labels!r}: give 'weight' (or None) with a categorical "
                f"target; the targets are {targets!r}, the categorical features {sorted(self._class_names)}"
            )

    @staticmethod
    def _by_role(roles: Mapping[str, str | None], role: str, probe: SplitSource) -> Selection:
        found = [name for name, value in roles.items() if value == role]
        if not found:
            example = next((n for n, r in roles.items() if r != "metadata"), next(iter(roles), "image"))  # no ids
            raise ValueError(
                f"{probe.path}: no feature of split {probe.split!r} has role = {role!r} (§6.1); name the "
                f"model's inputs, e.g. inputs={example!r} (features: {', '.join(roles)})"
            )
        return found[0] if len(found) == 1 else tuple(found)

    # -- what Keras asks for -----------------------------------------------------------------

    def __getitem__(self, index: int) -> tuple[Any, ...]:
        """Return batch ``index`` of the current epoch: ``(x,)``, ``(x, y)`` or ``(x, y, sample_weight)``.

        With ``workers > 1`` or ``use_multiprocessing``, the next
        ``max_queue_size`` batches of the epoch's order are read ahead
        (:meth:`h5ml.reader.prefetch.BatchFeed.batch`) while the model trains.

        Raises
        ------
        IndexError
            If ``index`` is outside ``[0, len(self))``.
        """
        arrays = self.feed.batch(self, index)
        x = _pick(arrays, self.inputs)
        if self.targets is None:
            return (x,)
        if self.missing_labels == "weight":
            return (x, *self._weighted(arrays))
        y = _pick(arrays, self.targets)
        if self.sample_weight is None:
            return (x, y)
        return (x, y, arrays[self.sample_weight])

    def _masked(self) -> list[str]:
        """The categorical targets, whose missing labels ``missing_labels="weight"`` masks."""
        return [key for key in _keys(self.targets) if key in self._class_names]

    def _weighted(self, arrays: Mapping[str, Any]) -> tuple[Any, Any]:
        """``(y, sample_weight)`` with weight 0 and code 0 for the samples whose categorical target is -1."""
        base = np.ones(len(arrays[_keys(self.targets)[0]]), dtype=np.float32)
        if self.sample_weight is not None:
            base = base * np.asarray(arrays[self.sample_weight], dtype=np.float32)
        picked, weights = dict(arrays), {}
        for key in _keys(self.targets):
            codes = np.asarray(arrays[key])
            missing = codes < 0 if key in self._class_names else np.zeros(len(codes), dtype=bool)
            picked[key] = np.where(missing, 0, codes) if missing.any() else codes
            weights[key] = np.where(missing, np.float32(0), base)
        assert self.targets is not None
        return _pick(picked, self.targets), _pick(weights, self.targets)

    def on_epoch_end(self) -> None:
        """Advance to the next epoch once every batch of this one was served (:meth:`h5ml.sampling.EpochCursor.advance`).

        Keras also calls it before the first epoch of ``fit``, ``evaluate``
        and ``predict``, and after each ``steps_per_epoch`` steps: the order
        changes only after a whole pass over the data, so those calls change
        nothing, and a loaded resume point survives until its epoch is done.
        """
        self.advance()

    def read_batch(self, indices: Any) -> dict[str, Any]:
        """Read samples ``indices`` with one reader call and return their batch arrays, transformed.

        Parameters
        ----------
        indices
            Sample indices in any order, duplicates allowed.

        Returns
        -------
        dict
            Key -> numpy array (:meth:`h5ml.reader.source.SplitSource.read_arrays`),
            after the transform.
        """
        return self.feed.read(indices)

    # -- about the data ----------------------------------------------------------------------

    def class_names(self, feature: str) -> list[str]:
        """Class names of a categorical feature (§6.5): code ``k`` is ``class_names[k]``.

        Raises
        ------
        KeyError
            If ``feature`` is not a categorical feature of the split.
        """
        if feature not in self._class_names:
            raise KeyError(
                f"{self.source.path}: no categorical feature {feature!r}; those are: {list(self._class_names)}"
            )
        return list(self._class_names[feature])

    def num_classes(self, feature: str) -> int:
        """The number of classes of a categorical feature: the size of the model's output layer."""
        return len(self.class_names(feature))

    def close(self) -> None:
        """Stop the read-ahead workers and close this process's reader (both restart on the next batch)."""
        self.feed.close()

    def __repr__(self) -> str:
        return (
            f"H5MLPyDataset({self.source.path!r}, {self.source.split!r}, batch_size={self.sampler.batch_size}, "
            f"shuffle={self.sampler.shuffle!r}, epoch={self.epoch}, inputs={self.inputs!r}, targets={self.targets!r})"
        )
