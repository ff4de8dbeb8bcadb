"""Edit h5ml files into new ones: :func:`subset` (``h5ml subset``) and :func:`merge` (``h5ml merge``).

Both read the sources through :func:`h5ml.open` and write a new conforming
file through :class:`h5ml.Writer`, in batches of about
:data:`BATCH_BYTES` of samples (:class:`SampleBatches`), so memory stays
bounded whatever the files' sizes. The sources are never modified; the
output appears only when it is complete (the writer builds it in a temporary
file), so a failure leaves the output path as it was.

What the new file keeps
-----------------------
- Root metadata (§4.2): the source's attributes (``name``, ``description``,
  ``license``, ``version``, ``citation``, ``creator``, ``homepage``,
  ``keywords``, ``source`` and user attributes, §4.7), under what
  ``metadata`` gives. ``created``, ``writer`` and the fingerprint are the new
  file's own; ``required_filters`` is dropped (the writer uses core filters
  only, §3.5). :func:`merge` keeps the first file's, with ``source`` set to
  the JSON list of the input paths as given.
- Split attributes (§5.3): ``description``; ``shuffle_seed`` only when the
  split's samples keep the stored order whole (a subset of all samples of
  the split, in order; a merged split that comes from one file), since the
  seed describes that order (§7.6).
- Features (§6): encoding, dtype (booleans stay ``logical_dtype="bool"``),
  sample shape, class names, and the attributes ``role``, ``description``,
  ``units``, ``sample_rate`` and ``media_type``. Fingerprints and
  statistics are computed again. Compression follows ``compression``:
  ``"keep"`` (default) gives each feature gzip when its source was compressed
  (any filter, §3.5) and none otherwise.

Sample ids
----------
The converters of :mod:`h5ml.ingest` store each sample's id (its source file)
in the string feature ``id`` (:data:`h5ml.ingest.pipeline.ID_FEATURE`).
:func:`merge` refuses files whose splits of the same name hold the same id,
since the merged split would then hold two samples that claim to be one; it
names both files, the split, the feature and an example id. Ids are compared
by 64-bit keys (an integer id itself, a string's hash), kept in memory with
their file and row (20 bytes per id, under 100 while a file's ids are sorted
in), and a match is confirmed by reading both ids back. ``allow_duplicate_ids=True`` merges such files anyway.
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal, TypeAlias

import numpy as np
import numpy.typing as npt

from h5ml.ingest.pipeline import ID_FEATURE, IngestReport, check_output, progress_bar
from h5ml.model.values import utf8_nbytes
from h5ml.reader.dataset import Dataset, Split
from h5ml.reader.dataset import open as open_dataset
from h5ml.reader.features import Feature
from h5ml.reader.plan import normalize_indices
from h5ml.writer.writer import Writer

__all__ = [
    "BATCH_BYTES",
    "Compression",
    "SampleBatches",
    "SampleSelection",
    "feature_signature",
    "merge",
    "parse_samples",
    "subset",
]

#: Bytes of samples read and written at once (the memory bound of copying).
BATCH_BYTES: Final = 64 << 20
#: Compression of the new file's features: as in the source, gzip, or none.
Compression = Literal["keep", "gzip"] | None
#: Samples of one split: a slice, ``"start:stop[:step]"``, integer indices (any order) or a boolean mask.
SampleSelection: TypeAlias = slice | str | Sequence[int] | npt.NDArray[np.integer[Any]] | npt.NDArray[np.bool_]
#: Rows whose per-sample sizes are looked up at once when planning batches (and ids read at once by merge).
_WINDOW: Final = 65536
#: Bytes assumed per string sample until strings have been read.
_STRING_GUESS: Final = 256
#: Root attributes the new file gets from its writer, never from the source (§4.2, §4.4, §8.3, §3.5).
_NOT_COPIED: Final = frozenset(
    {"format", "format_version", "created", "writer", "must_understand", "complete", "fingerprint", "required_filters"}
)


# --------------------------------------------------------------------------
# batches of samples


class SampleBatches:
    """Cut the requested samples of a split into batches of about ``target_bytes`` each.

    Sizes come from the features' layouts: dense and categorical samples have
    one size; ragged and bytes samples are sized from their ``offsets`` only
    (read a window of :data:`_WINDOW` samples at a time, values untouched);
    strings are guessed (256 bytes) until :meth:`observe` reports the real
    average. A sample larger than ``target_bytes`` is a batch of its own.

    Parameters
    ----------
    features
        The features that will be read (of one split).
    rows
        The samples to read, in order: a ``range`` with step 1 (batches are
        then slices) or an int64 array of rows in ``[0, N)`` (batches are
        then arrays).
    target_bytes
        The bytes of one batch, > 0; default :data:`BATCH_BYTES` (read when
        the batches are made).

    Examples
    --------
    >>> batches = SampleBatches(list(split.features.values()), range(len(split)))  # doctest: +SKIP
    >>> for index in batches:  # doctest: +SKIP
    ...     values = split.read(index)
    ...     batches.observe(values)
    """

    def __init__(
        self,
        features: Sequence[Feature],
        rows: range | npt.NDArray[np.int64],
        target_bytes: int | None = None,
    ) -> None:
        target_bytes = BATCH_BYTES if target_bytes is None else target_bytes
        if target_bytes <= 0:
            raise ValueError(f"target_bytes must be > 0, got {target_bytes}")
        if isinstance(rows, range) and rows.step != 1:
            rows = np.arange(rows.start, rows.stop, rows.step, dtype=np.int64)
        self._rows = rows
        self._target = target_bytes
        self._fixed = 0
        self._offset_features: list[tuple[Feature, int]] = []
        self._strings: list[str] = []
        self._string_bytes = float(_STRING_GUESS)
        self._seen_strings = 0
        for feature in features:
            itemsize = np.dtype(feature.dtype).itemsize if feature.encoding != "string" else 0
            shape = feature.sample_shape
            if feature.encoding in ("dense",):
                self._fixed += itemsize * math.prod(int(d or 0) for d in shape)
            elif feature.encoding == "categorical":
                self._fixed += 8
            elif feature.encoding == "string":
                self._strings.append(feature.name)
            else:  # ragged, bytes: a length counts rows of values (elements when the feature has shapes)
                with_shapes = len(shape) > 1 and all(d is None for d in shape)
                row = 1 if with_shapes else math.prod(int(d or 0) for d in shape[1:])
                self._offset_features.append((feature, itemsize * row))
        self._cache_start = 0
        self._cache: npt.NDArray[np.float64] = np.zeros(0)

    def __len__(self) -> int:
        return len(self._rows)

    def _index(self, start: int, stop: int) -> slice | npt.NDArray[np.int64]:
        if isinstance(self._rows, range):
            return slice(self._rows.start + start, self._rows.start + stop)
        return self._rows[start:stop]

    def _variable(self, pos: int) -> npt.NDArray[np.float64]:
        """Bytes of each sample's ragged and bytes values from ``pos`` on (a cached window)."""
        end = self._cache_start + self._cache.shape[0]
        if not (self._cache_start <= pos < end):
            stop = min(len(self._rows), pos + _WINDOW)
            sizes = np.zeros(stop - pos, dtype=np.float64)
            for feature, row_bytes in self._offset_features:
                lengths = feature.lengths(self._index(pos, stop))  # type: ignore[attr-defined]
                sizes += np.asarray(lengths, dtype=np.float64) * row_bytes
            self._cache_start, self._cache = pos, sizes
        return self._cache[pos - self._cache_start :]

    def __iter__(self) -> Iterator[slice | npt.NDArray[np.int64]]:
        """Yield the index of each batch, in order: a slice or an int64 array of rows."""
        pos, total = 0, len(self._rows)
        while pos < total:
            per_sample = self._fixed + self._string_bytes * len(self._strings)
            if self._offset_features:
                sizes = np.cumsum(self._variable(pos) + per_sample)
                count = int(np.searchsorted(sizes, self._target, side="right"))
                count = max(1, count)
            else:
                count = max(1, int(self._target // max(1.0, per_sample)))
            stop = min(total, pos + count, pos + _WINDOW)
            yield self._index(pos, stop)
            pos = stop

    def observe(self, values: Mapping[str, Any]) -> None:
        """Learn the size of string samples from a batch just read (``Split.read``'s result)."""
        for name in self._strings:
            items = values.get(name)
            if items is None or len(items) == 0:
                continue
            total = sum(utf8_nbytes(s) for s in items)
            self._string_bytes = (self._string_bytes * self._seen_strings + total) / (self._seen_strings + len(items))
            self._seen_strings += len(items)


# --------------------------------------------------------------------------
# selections


def parse_samples(selection: SampleSelection | None, count: int, where: str = "") -> range | npt.NDArray[np.int64]:
    """Turn a sample selection into the rows to copy, in order.

    Parameters
    ----------
    selection
        None (every sample), a ``slice``, a string ``"start:stop"`` or
        ``"start:stop:step"`` (each part optional, negative counts from the
        end, as Python slices), a sequence or 1-D array of integer indices
        (any order, duplicates allowed, negative from the end), or a boolean
        mask of length ``count``.
    count
        The number of samples N of the split.
    where
        Names the split in error messages.

    Returns
    -------
    range or numpy.ndarray of int64
        A ``range`` with step 1 for contiguous selections, else the rows.

    Raises
    ------
    ValueError
        If a string is not a slice (``"10:20"``), or a slice step is 0.
    IndexError
        If an index is outside ``[-N, N)``.
    TypeError
        If the selection is of another type, or a mask has the wrong length.
    """
    prefix = f"{where}: " if where else ""
    if selection is None:
        return range(count)
    if isinstance(selection, str):
        parts = selection.split(":")
        try:
            if len(parts) not in (2, 3):
                raise ValueError
            numbers = [int(p) if p.strip() else None for p in parts]
        except ValueError:
            raise ValueError(
                f"{prefix}samples {selection!r} is not a slice 'start:stop' or 'start:stop:step' (e.g. '0:1000', "
                "':500', '::10')"
            ) from None
        selection = slice(*numbers)
    if isinstance(selection, slice):
        if selection.step == 0:
            raise ValueError(f"{prefix}samples {selection} has step 0")
        start, stop, step = selection.indices(count)
        if step == 1:
            return range(start, max(start, stop))
        return np.arange(start, stop, step, dtype=np.int64)
    if isinstance(selection, (int, np.integer)):
        raise TypeError(f"{prefix}samples must be a slice, a 'start:stop' string or a list of indices, got an int")
    try:
        rows, _ = normalize_indices(selection, count)
    except IndexError as exc:
        raise IndexError(f"{prefix}{exc}") from None
    except TypeError as exc:
        raise TypeError(f"{prefix}samples: {exc}") from None
    return rows


# --------------------------------------------------------------------------
# features


@dataclass(frozen=True)
class _Signature:
    """What makes two features interchangeable (merge) and how to declare one (subset, merge)."""

    encoding: str
    dtype: str
    sample_shape: tuple[int | None, ...]
    class_names: tuple[str, ...] | None
    media_type: str | None
    sample_rate: float | None
    units: str | None

    def describe(self) -> str:
        text = f"{self.encoding} {self.dtype}"
        if self.encoding in ("dense", "ragged"):
            text += f" sample shape {self.sample_shape}"
        if self.class_names is not None:
            shown = list(self.class_names[:8])
            text += f" class names {shown}{'...' if len(self.class_names) > 8 else ''}"
        for label, value in (("media_type", self.media_type), ("sample_rate", self.sample_rate), ("units", self.units)):
            if value is not None:
                text += f" {label} {value!r}"
        return text


def feature_signature(feature: Feature) -> _Signature:
    """The properties that must agree for two features to be merged (§6): encoding, dtype, sample shape, ...

    Parameters
    ----------
    feature
        A feature of an open file.

    Returns
    -------
    _Signature
        Encoding, dtype name (``bool`` for ``logical_dtype="bool"``, ``str``
        for strings), sample shape (None for axes that vary), class names,
        media type, sample rate (Hz) and units.
    """
    dtype = "str" if feature.encoding == "string" else np.dtype(feature.dtype).name
    return _Signature(
        encoding=feature.encoding,
        dtype=dtype,
        sample_shape=tuple(feature.sample_shape),
        class_names=tuple(feature.class_names) if feature.class_names is not None else None,
        media_type=feature.media_type if feature.encoding == "bytes" else None,
        sample_rate=feature.sample_rate,
        units=feature.units,
    )


def _declaration(feature: Feature, compression: Compression) -> dict[str, Any]:
    """Keyword arguments of :meth:`h5ml.Writer.add_feature` that recreate ``feature`` (§6)."""
    encoding = feature.encoding
    shape = tuple(feature.sample_shape)
    args: dict[str, Any] = {"encoding": encoding}
    if encoding in ("dense", "ragged"):
        args["dtype"] = np.dtype(feature.dtype)
    if encoding == "dense":
        args["sample_shape"] = tuple(int(d or 0) for d in shape)
    elif encoding == "ragged":
        if len(shape) > 1 and all(d is None for d in shape):
            args["sample_ndim"] = len(shape)
        else:
            args["sample_shape"] = tuple(int(d or 0) for d in shape[1:])
    elif encoding == "categorical":
        args["class_names"] = feature.class_names
    elif encoding == "bytes":
        args["media_type"] = feature.media_type
    for key in ("role", "description", "units", "sample_rate"):
        value = getattr(feature, key)
        if value is not None:
            args[key] = value
    if compression == "keep":
        args["compression"] = "gzip" if feature.compression is not None and encoding != "string" else False
    else:
        args["compression"] = compression or False
    return args


def _root_metadata(dataset: Dataset, given: Mapping[str, Any] | None) -> dict[str, Any]:
    """The source's root attributes a new file keeps (see the module docstring), under ``given``."""
    kept = {k: v for k, v in dataset.metadata.to_json().items() if k not in _NOT_COPIED}
    kept.update(given or {})
    return kept


def _check_compression(compression: Any) -> None:
    if compression not in ("keep", "gzip", None):
        raise ValueError(f"compression must be 'keep', 'gzip' or None, got {compression!r}")


# --------------------------------------------------------------------------
# copying


def _copy(
    writer: Writer,
    target: str,
    split: Split,
    names: Sequence[str],
    rows: range | npt.NDArray[np.int64],
    bar: Any,
    task: Any,
) -> int:
    """Append the samples ``rows`` of ``names`` of ``split`` to split ``target``, batch by batch."""
    features = [split.feature(n) for n in names]
    batches = SampleBatches(features, rows)
    copied = 0
    for index in batches:
        values = split.read(index, features=names)
        batches.observe(values)
        count = (index.stop - index.start) if isinstance(index, slice) else int(index.shape[0])
        if names:
            writer.append(target, values)
        copied += count
        if bar is not None:
            bar.advance(task, count)
    return copied


def subset(
    source: str | os.PathLike[str],
    output: str | os.PathLike[str],
    *,
    splits: Sequence[str] | None = None,
    features: Sequence[str] | None = None,
    samples: SampleSelection | Mapping[str, SampleSelection] | None = None,
    metadata: Mapping[str, Any] | None = None,
    compression: Compression = "keep",
    progress: bool | None = None,
    overwrite: bool = False,
) -> IngestReport:
    """Write some splits, features and samples of an h5ml file to a new file (§4-§8).

    Parameters
    ----------
    source
        The h5ml file to read.
    output
        The new file (see :func:`h5ml.ingest.check_output`; never the source).
    splits
        The splits to keep, in this order; default every split.
    features
        The features to keep, in every kept split; default every feature.
    samples
        The samples to keep: one selection for every split, or a mapping
        split -> selection (splits it does not name are kept whole). A
        selection is a slice, ``"start:stop[:step]"``, integer indices (any
        order, duplicates allowed, negative from the end) or a boolean mask
        (see :func:`parse_samples`); the samples are written in that order.
    metadata
        Root attributes (§4.2) over the source's (see the module docstring).
    compression
        ``"keep"`` (each feature as in the source), ``"gzip"`` or None.
    progress
        Show a progress bar on stderr: True, False, or None for "when stderr is a terminal".
    overwrite
        Replace an existing output.

    Returns
    -------
    IngestReport
        The output, the samples written per split and the time taken (no skipped files).

    Raises
    ------
    FileNotFoundError
        If the source does not exist.
    FileExistsError, IsADirectoryError
        As :func:`h5ml.ingest.check_output` (also when ``output`` is ``source``).
    h5ml.SplitNotFoundError, h5ml.FeatureNotFoundError
        If a split or a feature to keep does not exist (in a kept split).
    ValueError, IndexError, TypeError
        If ``samples`` is invalid for a split (the message names it),
        ``splits`` or ``features`` is empty or a string, or ``compression``
        is not one of the values above.
    h5ml.H5MLError
        If the source cannot be read (as :func:`h5ml.open`); the output is unchanged.
    """
    _check_compression(compression)
    for label, value in (("splits", splits), ("features", features)):
        if isinstance(value, str):
            raise TypeError(f"{label} must be a list of names, got the string {value!r}; write [{value!r}]")
        if value is not None and not list(value):
            raise ValueError(f"{label}=[] keeps nothing; give at least one name, or None for all")
    start = time.perf_counter()
    source_path = Path(source)
    if not source_path.is_file():
        raise FileNotFoundError(f"{source_path}: no such file")
    out = check_output(output, overwrite, [source_path])
    with open_dataset(source_path) as dataset:
        names = list(dataset.splits) if splits is None else list(splits)
        if isinstance(samples, Mapping):
            unknown = sorted(set(samples) - set(names))
            if unknown:
                raise ValueError(f"{source_path}: samples= names split(s) {unknown}, which are not kept ({names})")
        plan: list[tuple[Split, list[str], range | npt.NDArray[np.int64]]] = []
        for name in names:
            split = dataset[name]
            chosen = list(split.features) if features is None else list(features)
            for feature in chosen:
                split.feature(feature)  # raises FeatureNotFoundError naming the split and the available features
            selection = samples.get(name) if isinstance(samples, Mapping) else samples
            plan.append((split, chosen, parse_samples(selection, split.num_samples, f"{source_path}: split {name!r}")))
        root = _root_metadata(dataset, metadata)
        report = IngestReport(out)
        bar = progress_bar(progress, sum(len(rows) for _, _, rows in plan))
        try:
            with Writer(out, root) as writer:
                for split, chosen, rows in plan:
                    whole = isinstance(rows, range) and rows == range(split.num_samples)
                    seed = split.shuffle_seed if whole else None
                    writer.add_split(split.name, split.description, shuffle_seed=seed, expected_samples=len(rows))
                    for feature in chosen:
                        writer.add_feature(split.name, feature, **_declaration(split.feature(feature), compression))
                    task = None if bar is None else bar.add_task(f"{out.name}: {split.name}", total=len(rows))
                    report.samples[split.name] = _copy(writer, split.name, split, chosen, rows, bar, task)
        finally:
            if bar is not None:
                bar.stop()
    report.seconds = time.perf_counter() - start
    return report


def merge(
    sources: Sequence[str | os.PathLike[str]],
    output: str | os.PathLike[str],
    *,
    metadata: Mapping[str, Any] | None = None,
    compression: Compression = "keep",
    progress: bool | None = None,
    overwrite: bool = False,
    id_feature: str | None = ID_FEATURE,
    allow_duplicate_ids: bool = False,
) -> IngestReport:
    """Join h5ml files with equal features into one file (§4-§8).

    A split present in several files gets their samples concatenated in file
    order; its features must be equal in those files: the same names, and
    each the same encoding, dtype, sample shape, class names, media type,
    sample rate and units (:func:`feature_signature`). Splits appear in the
    order they are first met. Root metadata is the
    first file's, with ``source`` set to the JSON list of the inputs as given;
    feature attributes (role, description) are the first file's. Two files
    whose splits of the same name share a sample id (the feature
    ``id_feature``) are refused unless ``allow_duplicate_ids`` (see the
    module docstring); this is checked before anything is written.

    Parameters
    ----------
    sources
        The files to join, at least one, each once.
    output
        The new file (see :func:`h5ml.ingest.check_output`; none of the sources).
    metadata
        Root attributes (§4.2) over the first file's.
    compression
        ``"keep"`` (each feature as in the first file that has it), ``"gzip"`` or None.
    progress
        Show a progress bar on stderr: True, False, or None for "when stderr is a terminal".
    overwrite
        Replace an existing output.
    id_feature
        The feature that holds each sample's id: checked in every split that
        several files hold and that has it as a ``string`` feature or a
        ``dense`` feature of integer scalars. Default ``"id"``, the name the
        converters use, checked where such a feature exists; any other name
        must be such a feature in every split merged (else ValueError). None
        checks nothing.
    allow_duplicate_ids
        Merge files whose splits share sample ids (the merged split then
        holds each such id more than once).

    Returns
    -------
    IngestReport
        The output, the samples written per split and the time taken.

    Raises
    ------
    ValueError
        If no source is given, a source is given twice, ``compression`` is
        invalid, the files' features differ (the message names both files,
        the split and the feature, and what differs), or two files hold the
        same sample id in one split and ``allow_duplicate_ids`` is False (the
        message names both files, the split, the id feature, an example id
        and its rows).
    FileNotFoundError
        If a source does not exist.
    FileExistsError, IsADirectoryError
        As :func:`h5ml.ingest.check_output` (also when ``output`` is a source).
    h5ml.H5MLError
        If a source cannot be read (as :func:`h5ml.open`); the output is unchanged.
    """
    _check_compression(compression)
    start = time.perf_counter()
    paths = [Path(s) for s in sources] if not isinstance(sources, (str, os.PathLike)) else []
    if not paths:
        raise ValueError("merge needs a list of at least one h5ml file (sources=[a, b, ...])")
    for path in paths:
        if not path.is_file():
            raise FileNotFoundError(f"{path}: no such file")
    seen: dict[Path, Path] = {}
    for path in paths:
        key = path.resolve()
        if key in seen:
            raise ValueError(f"{path} is given twice (also as {seen[key]}); each file is merged once")
        seen[key] = path
    out = check_output(output, overwrite, paths)
    datasets = [open_dataset(path) for path in paths]
    try:
        order = _merge_plan(paths, datasets)
        if id_feature is not None and not allow_duplicate_ids:
            for name, members in order.items():
                _check_ids(name, members, id_feature)
        root = _root_metadata(datasets[0], {"source": json.dumps([os.fspath(s) for s in sources]), **(metadata or {})})
        report = IngestReport(out)
        total = sum(ds[name].num_samples for name, members in order.items() for _, ds in members)
        bar = progress_bar(progress, total)
        try:
            with Writer(out, root) as writer:
                for name, members in order.items():
                    first = members[0][1][name]
                    count = sum(ds[name].num_samples for _, ds in members)
                    seed = first.shuffle_seed if len(members) == 1 else None
                    writer.add_split(name, first.description, shuffle_seed=seed, expected_samples=count)
                    names = list(first.features)
                    for feature in names:
                        writer.add_feature(name, feature, **_declaration(first.feature(feature), compression))
                    task = None if bar is None else bar.add_task(f"{out.name}: {name}", total=count)
                    report.samples[name] = 0
                    for _, ds in members:
                        split = ds[name]
                        report.samples[name] += _copy(writer, name, split, names, range(split.num_samples), bar, task)
        finally:
            if bar is not None:
                bar.stop()
    finally:
        for ds in datasets:
            ds.close()
    report.seconds = time.perf_counter() - start
    return report


def _merge_plan(paths: Sequence[Path], datasets: Sequence[Dataset]) -> dict[str, list[tuple[Path, Dataset]]]:
    """Split -> the files (path as given, open file) that hold it, in file order, after checking that their
    features agree split by split.

    The first file that holds a split is the reference of that split: every
    other file's split of that name must have the same feature names, each
    with the same :func:`feature_signature`.
    """
    reference: dict[str, tuple[Path, dict[str, _Signature]]] = {}
    order: dict[str, list[tuple[Path, Dataset]]] = {}
    for path, ds in zip(paths, datasets, strict=True):
        for split in ds.splits.values():
            found = {name: feature_signature(feature) for name, feature in split.features.items()}
            if split.name not in reference:
                reference[split.name] = (path, found)
                order[split.name] = [(path, ds)]
                continue
            where, expected = reference[split.name]
            missing = [name for name in expected if name not in found]
            extra = [name for name in found if name not in expected]
            if missing or extra:
                name, holder, other = (missing[0], where, path) if missing else (extra[0], path, where)
                raise ValueError(
                    f"cannot merge {where} and {path}: feature {name!r} of split {split.name!r} is in {holder} but "
                    f"not in {other} (only in {where}: {missing}; only in {path}: {extra}); merge joins files whose "
                    "splits have the same features: drop features first (h5ml subset --feature)"
                )
            for name, signature in found.items():
                if signature != expected[name]:
                    raise ValueError(
                        f"cannot merge {where} and {path}: feature {name!r} of split {split.name!r} is "
                        f"{expected[name].describe()} in {where} but {signature.describe()} in {path}; merge joins "
                        "files whose features have the same encoding, dtype, sample shape, class names, media type, "
                        "sample rate and units: convert one of them first"
                    )
            order[split.name].append((path, ds))
    return order


def _id_keys(feature: Feature) -> npt.NDArray[np.int64]:
    """A 64-bit key of every sample id of ``feature``, in row order, read :data:`_WINDOW` rows at a time.

    Integer ids are their own key (unsigned ones reinterpreted, so that keys
    are equal only when ids are); a string's key is its ``hash``, equal for
    different strings only by a 64-bit accident, which :func:`_check_ids`
    rules out by comparing the ids themselves.
    """
    count = feature.num_samples
    keys = np.empty(count, dtype=np.int64)
    for start in range(0, count, _WINDOW):
        stop = min(count, start + _WINDOW)
        values = feature[start:stop]
        if feature.encoding == "string":
            keys[start:stop] = np.fromiter(map(hash, values.tolist()), dtype=np.int64, count=stop - start)
        else:
            wide = np.uint64 if np.dtype(feature.dtype).kind == "u" else np.int64
            keys[start:stop] = np.asarray(values, dtype=wide).view(np.int64)
    return keys


def _id_at(feature: Feature, row: int) -> Any:
    """The id of one row as a Python ``str`` or ``int`` (for comparing, and for messages)."""
    return feature[row : row + 1].tolist()[0]


def _is_id_feature(feature: Feature) -> bool:
    """Whether ``feature`` can hold sample ids: ``string``, or ``dense`` integer scalars (§6.2, §6.4)."""
    if feature.encoding == "string":
        return True
    return (
        feature.encoding == "dense" and tuple(feature.sample_shape) == () and np.issubdtype(feature.dtype, np.integer)
    )


def _check_ids(name: str, members: Sequence[tuple[Path, Dataset]], id_feature: str) -> None:
    """Refuse files that hold the same sample id in split ``name`` (see the module docstring).

    Parameters
    ----------
    name
        The split.
    members
        The files (path as given, open file) that hold it, in merge order;
        their features agree (:func:`_merge_plan`).
    id_feature
        The feature holding the ids. A split without it, or where it is not
        an id feature (:func:`_is_id_feature`), is not checked when it is the
        default :data:`ID_FEATURE`, and refused for any other name.

    Raises
    ------
    ValueError
        At the first row (in merge order) whose id an earlier file holds: the
        message names both files, the split, the feature, the id and both rows;
        or if ``id_feature`` is not :data:`ID_FEATURE` and cannot be checked.
    """
    first = members[0][1][name]
    usable = id_feature in first.features and _is_id_feature(first.feature(id_feature))
    if not usable and id_feature != ID_FEATURE:  # a name given on purpose must be checkable
        what = "has no feature" if id_feature not in first.features else "has no string or integer-scalar feature"
        raise ValueError(
            f"{members[0][0]}: split {name!r} {what} {id_feature!r} to check sample ids with; name a string or "
            "integer id feature (id_feature=, --id-feature), or allow duplicates (allow_duplicate_ids=True, "
            "--allow-duplicate-ids)"
        )
    if len(members) < 2 or not usable:
        return
    # Every id met so far, sorted by key (stable: equal keys keep merge order): key, file, row.
    known = np.zeros(0, dtype=np.int64)
    known_file = np.zeros(0, dtype=np.int32)
    known_row = np.zeros(0, dtype=np.int64)
    for index, (path, ds) in enumerate(members):
        feature = ds[name].feature(id_feature)
        keys = _id_keys(feature)
        if known.size:
            pos = np.searchsorted(known, keys)
            hit = known[np.minimum(pos, known.size - 1)] == keys
            for row in np.flatnonzero(hit).tolist():
                value = _id_at(feature, row)
                p = int(pos[row])
                while p < known.size and known[p] == keys[row]:
                    earlier_path, earlier = members[int(known_file[p])]
                    earlier_row = int(known_row[p])
                    if _id_at(earlier[name].feature(id_feature), earlier_row) == value:
                        raise ValueError(
                            f"cannot merge {earlier_path} and {path}: split {name!r} holds the sample id {value!r} "
                            f"(feature {id_feature!r}) in both, at row {earlier_row} of {earlier_path} and row {row} "
                            f"of {path}; {int(hit.sum())} sample(s) of {path} have ids that earlier files hold. "
                            "Merged, the split would hold two samples with one id: drop the repeated samples from "
                            "one file first (h5ml subset --samples), or merge anyway with --allow-duplicate-ids "
                            "(allow_duplicate_ids=True)"
                        )
                    p += 1
        known = np.concatenate([known, keys])
        known_file = np.concatenate([known_file, np.full(keys.size, index, dtype=np.int32)])
        known_row = np.concatenate([known_row, np.arange(keys.size, dtype=np.int64)])
        ordered = np.argsort(known, kind="stable")
        known, known_file, known_row = known[ordered], known_file[ordered], known_row[ordered]
