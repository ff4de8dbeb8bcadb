"""One split of an h5ml file as a ``keras.utils.PyDataset`` for ``model.fit`` on any Keras 3 backend.

The dataset holds a :class:`h5ml.reader.source.SplitSource` (the file's path, opened
lazily in each process, never an inherited or pickled handle) and an
:class:`h5ml.sampling.Sampler` (the same orders, shuffle modes, shards and
resume states as the PyTorch adapter). Each ``dataset[i]`` reads batch ``i``
of the current epoch with one reader call and returns numpy arrays; it
imports no backend, so it runs under TensorFlow, JAX and PyTorch alike.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import keras

from h5ml.reader.dataset import Dataset as H5Dataset
from h5ml.reader.prefetch import Prefetcher
from h5ml.reader.source import SplitSource
from h5ml.sampling import Sampler, ShuffleMode
from h5ml.sampling.padding import LENGTHS_SUFFIX, MASK_SUFFIX

__all__ = ["BatchTransform", "H5MLPyDataset", "Selection"]

#: Which batch arrays go where: one key, a tuple of keys, or {model input or output name: key}.
Selection = str | Sequence[str] | Mapping[str, str]
#: Per-batch transform: takes and returns the dict of batch arrays (feature name -> array), in the workers.
BatchTransform = Callable[[dict[str, Any]], dict[str, Any]]


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


class H5MLPyDataset(keras.utils.PyDataset):  # type: ignore[misc]
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
    shuffle
        ``"none"`` (file order), ``"chunk"`` (chunks in random order, samples
        permuted within windows of ``window_chunks`` chunks) or ``"full"``
        (a uniform permutation); see :mod:`h5ml.sampling`. The order is
        deterministic given ``(seed, epoch)``; the epoch advances in
        :meth:`on_epoch_end`. Pass ``shuffle=False`` to ``model.fit``: Keras
        would otherwise permute the batches again with an unseeded generator
        (each sample is still seen once per epoch, but not reproducibly).
    seed
        Seed of the shuffles, >= 0.
    drop_last
        Drop the incomplete last batch (of the last global step) instead of
        returning a shorter one (see :mod:`h5ml.sampling`).
    rank, world_size
        This process's share, for several training processes (default 0, 1).
    window_chunks
        Chunks per shuffle window in ``"chunk"`` mode.
    bucket_by, pool_batches
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
    workers, use_multiprocessing, max_queue_size
        As ``keras.utils.PyDataset``: read with ``workers`` threads, or
        processes with ``use_multiprocessing=True`` (each opens its own
        reader), up to ``max_queue_size`` batches ahead. The dataset reads
        ahead itself (:class:`h5ml.reader.prefetch.Prefetcher`) and tells Keras it
        has one worker: batches are kept by (epoch, index), so none is served
        in another's place (Keras' own queue can serve batches prefetched
        before a model was built at the start of the first epoch).

    Raises
    ------
    FileNotFoundError, h5ml.H5MLError
        As :func:`h5ml.open` (the file is opened once here, to learn its
        sample count, roles and chunking, then closed).
    KeyError
        For an unknown split.
    ValueError
        If no inputs are given and no feature has ``role = "input"``, a key
        names no feature, or a sampling setting is out of range.

    Notes
    -----
    Batch arrays by encoding (§6): dense -> the stored dtype ``(R,
    *sample_shape)``; categorical -> int64 codes ``(R,)`` (-1 missing; see
    :meth:`class_names` and :meth:`num_classes`); string -> numpy array of
    ``str``; ragged -> padded ``(R, L, ...)`` of the stored dtype plus
    ``<name>_lengths`` (int64) and ``<name>_mask`` (bool); bytes -> object
    array of ``bytes``. ``len(dataset)`` is the number of batches of an
    epoch: ``ceil(N / batch_size)``, or ``N // batch_size`` with
    ``drop_last`` (one rank).
    """

    def __init__(
        self,
        source: str | os.PathLike[str] | H5Dataset,
        split: str,
        batch_size: int = 32,
        *,
        inputs: Selection | None = None,
        targets: Selection | None = None,
        sample_weight: str | None = None,
        shuffle: ShuffleMode = "none",
        seed: int = 0,
        drop_last: bool = False,
        rank: int = 0,
        world_size: int = 1,
        window_chunks: int = 8,
        bucket_by: str | None = None,
        pool_batches: int = 32,
        pad_value: float = 0,
        transform: BatchTransform | None = None,
        decode_images: bool | Sequence[str] = False,
        color: str = "RGB",
        workers: int = 1,
        use_multiprocessing: bool = False,
        max_queue_size: int = 10,
    ) -> None:
        # Keras gets one worker: the dataset reads ahead itself (Prefetcher), so that batches are served by
        # (epoch, index) and never from a queue filled for another epoch or another order.
        super().__init__(workers=1, use_multiprocessing=False, max_queue_size=max_queue_size)
        if workers < 1:
            raise ValueError(f"workers must be >= 1, got {workers}")
        self.read_workers = int(workers)
        self.read_processes = bool(use_multiprocessing)
        self._prefetcher: Prefetcher | None = None
        path = source.path if isinstance(source, H5Dataset) else source
        probe = SplitSource(path, split, decode_images=decode_images, color=color)
        try:
            roles = probe.roles()
            encodings = probe.encodings
            if inputs is None:
                inputs = self._by_role(roles, "input", probe)
            if targets is None:
                found = [name for name, role in roles.items() if role == "target"]
                targets = None if not found else found[0] if len(found) == 1 else tuple(found)
            wanted = _keys(inputs) + _keys(targets) + ([sample_weight] if sample_weight else [])
            features: list[str] = []
            for key in wanted:
                base = self._feature_of(key, encodings, probe)
                if base not in features:
                    features.append(base)
            self.sampler = Sampler(
                probe.num_samples,
                batch_size,
                shuffle=shuffle,
                seed=seed,
                chunk_rows=probe.chunk_rows() if shuffle == "chunk" else None,
                window_chunks=window_chunks,
                rank=rank,
                world_size=world_size,
                drop_last=drop_last,
                fingerprint=probe.fingerprint,
                lengths=None if bucket_by is None else probe.lengths(bucket_by),
                pool_batches=pool_batches,
            )
            self._class_names = {n: probe.class_names(n) for n, e in encodings.items() if e == "categorical"}
        finally:
            probe.close()  # no open handle is left for a forked worker to inherit
        self.source = SplitSource(path, split, features, decode_images=decode_images, color=color)
        self.inputs: Selection = inputs
        self.targets: Selection | None = targets
        self.sample_weight = sample_weight
        self.pad_value = pad_value
        self.transform = transform
        self.epoch = 0
        self._skip = 0
        self._served: set[int] = set()
        self._batches: tuple[int, list[Any]] | None = None

    @staticmethod
    def _by_role(roles: Mapping[str, str | None], role: str, probe: SplitSource) -> Selection:
        found = [name for name, value in roles.items() if value == role]
        if not found:
            raise ValueError(
                f"{probe.path}: no feature of split {probe.split!r} has role = {role!r} (§6.1); name the "
                f"model's inputs, e.g. inputs={next(iter(roles), 'image')!r} (features: {', '.join(roles)})"
            )
        return found[0] if len(found) == 1 else tuple(found)

    @staticmethod
    def _feature_of(key: str, encodings: Mapping[str, str], probe: SplitSource) -> str:
        if key in encodings:
            return key
        for suffix in (LENGTHS_SUFFIX, MASK_SUFFIX):
            base = key[: -len(suffix)]
            if key.endswith(suffix) and encodings.get(base) in ("ragged", "image"):
                return base
        raise ValueError(
            f"{probe.path}: split {probe.split!r} has no feature {key!r} (and it is not the _lengths or _mask "
            f"of a ragged feature); features: {', '.join(encodings)}"
        )

    # -- what Keras asks for -----------------------------------------------------------------

    @property
    def num_batches(self) -> int:
        """Batches of the current epoch (those left after :meth:`load_state_dict`)."""
        return self.sampler.num_batches - self._skip

    def __len__(self) -> int:
        return self.num_batches

    def __getitem__(self, index: int) -> tuple[Any, ...]:
        """Return batch ``index`` of the current epoch: ``(x,)``, ``(x, y)`` or ``(x, y, sample_weight)``.

        With ``workers > 1`` or ``use_multiprocessing``, the next
        ``max_queue_size`` batches of the epoch's order are read ahead by a
        :class:`h5ml.reader.prefetch.Prefetcher` while the model trains.

        Raises
        ------
        IndexError
            If ``index`` is outside ``[0, len(self))``.
        """
        batches = self._epoch_batches()
        count = len(batches) - self._skip
        if not 0 <= index < count:
            raise IndexError(f"batch {index} is outside the {count} batches of this epoch")
        if self.read_workers > 1 or self.read_processes:
            arrays = self._prefetched(index, batches)
        else:
            arrays = self.read_batch(batches[self._skip + index])
        self._served.add(index)
        x = _pick(arrays, self.inputs)
        if self.targets is None:
            return (x,)
        y = _pick(arrays, self.targets)
        if self.sample_weight is None:
            return (x, y)
        return (x, y, arrays[self.sample_weight])

    def _prefetched(self, index: int, batches: list[Any]) -> dict[str, Any]:
        if self._prefetcher is None:
            self._prefetcher = Prefetcher(self.read_workers, self.read_processes, max(1, self.max_queue_size))
        epoch, skip, count = self.epoch, self._skip, len(batches) - self._skip
        self._prefetcher.forget(lambda key: isinstance(key, tuple) and key[0] == epoch)

        def arguments(j: int) -> Any:
            return lambda: (self.source, batches[skip + j], self.pad_value, self.transform)

        ahead = [((epoch, j), arguments(j)) for j in range(index, min(count, index + self._prefetcher.depth + 1))]
        return self._prefetcher.get((epoch, index), ahead)

    def on_epoch_end(self) -> None:
        """Advance to the next epoch once every batch of this one was served; forget a resume point.

        Keras also calls it before the first epoch of ``fit``, ``evaluate``
        and ``predict``, and after each ``steps_per_epoch`` steps: the order
        changes only after a whole pass over the data, so those calls change
        nothing, and a loaded resume point survives until its epoch is done.
        """
        if len(self._served) >= self.num_batches:
            self.set_epoch(self.epoch + 1)

    # -- reading -----------------------------------------------------------------------------

    def _epoch_batches(self) -> list[Any]:
        if self._batches is None or self._batches[0] != self.epoch:
            self._batches = (self.epoch, self.sampler.batches(self.epoch))
        return self._batches[1]

    def read_batch(self, indices: Any) -> dict[str, Any]:
        """Read samples ``indices`` with one reader call and return their batch arrays (transformed).

        Parameters
        ----------
        indices
            Sample indices in any order, duplicates allowed.

        Returns
        -------
        dict
            Key -> numpy array, as in the class notes (ragged features add
            ``<name>_lengths`` and ``<name>_mask``), after :attr:`transform`.
        """
        arrays = self.source.read_arrays(indices, self.pad_value)
        return arrays if self.transform is None else self.transform(arrays)

    # -- epochs and resume -------------------------------------------------------------------

    def set_epoch(self, epoch: int) -> None:
        """Select the epoch whose order the next batches follow (>= 0), e.g. ``fit(initial_epoch=...)``."""
        if epoch < 0:
            raise ValueError(f"epoch must be >= 0, got {epoch}")
        self.epoch = int(epoch)
        self._skip = 0
        self._served = set()

    def state_dict(self, batches_done: int) -> dict[str, Any]:
        """Return the resume state after ``batches_done`` batches of the current epoch were trained on.

        The same state as :meth:`h5ml.sampling.Sampler.state_dict` (and the
        PyTorch adapter's): seed, epoch, batches done, the order's settings,
        the file's fingerprint (§8.3).
        """
        return self.sampler.state_dict(self.epoch, batches_done)

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Resume: the dataset yields the rest of the state's epoch (``len()`` shrinks), until :meth:`on_epoch_end`.

        Fit that rest with ``model.fit(dataset, epochs=1, shuffle=False)``, then
        continue with ``initial_epoch``: Keras takes ``len()`` once per fit.

        Raises
        ------
        ValueError
            If the state was taken on another file or with other settings.
        """
        point = self.sampler.load_state_dict(state)
        self.epoch, self._skip, self._served = point.epoch, point.batches_done, set()

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

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_batches"] = None  # recomputed from (seed, epoch)
        state["_prefetcher"] = None  # a pool is never copied
        return state

    def close(self) -> None:
        """Stop the read-ahead workers and close this process's reader (both restart on the next batch)."""
        if self._prefetcher is not None:
            self._prefetcher.close()
            self._prefetcher = None
        self.source.close()

    def __repr__(self) -> str:
        return (
            f"H5MLPyDataset({self.source.path!r}, {self.source.split!r}, batch_size={self.sampler.batch_size}, "
            f"shuffle={self.sampler.shuffle!r}, epoch={self.epoch}, inputs={self.inputs!r}, targets={self.targets!r})"
        )
