"""Write what any Python pipeline produces to an h5ml file: a stream of samples, or in-memory arrays.

:func:`convert_samples` takes an iterable (a generator, a ``torch`` dataset,
a list) of dict-of-values samples and hands them to one :class:`h5ml.Writer`
in batches of about :data:`DEFAULT_BATCH_BYTES`, so memory stays bounded
whatever the number of samples: a generator of a terabyte is written with a
few tens of megabytes of buffers. :func:`convert_arrays` writes arrays
already in memory (``{split: {feature: array}}``) through :func:`h5ml.write`.

Both give the conventional feature names their role (§6.1): ``x``, ``data``,
``input``, ``inputs``, ``features`` -> ``input``; ``y``, ``label``,
``labels``, ``target``, ``targets`` -> ``target``; ``id`` -> ``metadata``
(see :data:`ROLE_NAMES`; a role given in ``features=`` wins).

:func:`copy_shuffled` stores an h5ml file's splits in a seeded random order
(§7.6) reading it in blocks: :func:`convert_samples` and
:func:`h5ml.ingest.tables.convert_table` shuffle streamed sources with it
(they first write a staging file beside the output, then copy it shuffled).
"""

from __future__ import annotations

import itertools
import json
import os
import secrets
import time
from collections.abc import Iterable, Iterator, Mapping, Sized
from pathlib import Path
from typing import Any, Final

import numpy as np

from h5ml.errors import EncodingError, IngestError, WriterError
from h5ml.ingest.arrays import _DEFAULT_ROLES as _CONVERT_ROLES
from h5ml.ingest.pipeline import (
    SKIPPED_ATTR,
    IngestReport,
    OnError,
    Skipped,
    check_output,
    conversion_metadata,
    progress_bar,
)
from h5ml.model.new_root import WRITER_SET_ATTRS
from h5ml.model.values import Categorical, FeatureSpec, SpecTable
from h5ml.sampling.seeds import draw_seed, write_order

__all__ = [
    "DEFAULT_BATCH_BYTES",
    "DEFAULT_BATCH_SAMPLES",
    "ROLE_NAMES",
    "convert_arrays",
    "convert_samples",
    "copy_shuffled",
    "default_roles",
]

#: Bytes of samples gathered before they are handed to the writer (one ``Writer.append``).
DEFAULT_BATCH_BYTES: Final = 8 << 20
#: At most this many samples per ``Writer.append``, however small they are.
DEFAULT_BATCH_SAMPLES: Final = 4096
#: Bytes of samples read at once by :func:`copy_shuffled`.
_SHUFFLE_BLOCK_BYTES: Final = 32 << 20

#: Roles of the conventional feature names (§6.1); the converters of :mod:`h5ml.ingest` share them.
ROLE_NAMES: Final[Mapping[str, str]] = {
    **_CONVERT_ROLES,  # x -> input, y -> target, as h5ml convert gives .npz arrays
    "data": "input",
    "input": "input",
    "inputs": "input",
    "features": "input",
    "label": "target",
    "labels": "target",
    "target": "target",
    "targets": "target",
    "id": "metadata",
}

#: Root attributes a writer sets itself: not copied by :func:`copy_shuffled`.
_NOT_COPIED: Final = (*WRITER_SET_ATTRS, "created", "writer", "must_understand")


def default_roles(
    names: Iterable[str], features: Mapping[str, FeatureSpec | Mapping[str, Any]] | None
) -> dict[str, FeatureSpec | Mapping[str, Any]]:
    """Add the roles of :data:`ROLE_NAMES` to a ``features=`` table for the features that have none.

    Parameters
    ----------
    names
        The feature names met (each at most once is enough).
    features
        The user's ``features=`` option (``{"feature" or "split/feature": FeatureSpec or dict}``), or None.

    Returns
    -------
    dict
        A new table: the user's entries, with ``role`` filled in for the
        conventional names whose general entry gives none.
    """
    table: dict[str, FeatureSpec | Mapping[str, Any]] = dict(features or {})
    for name in names:
        role = ROLE_NAMES.get(name)
        if role is None:
            continue
        given = table.get(name)
        if given is None:
            table[name] = FeatureSpec(role=role)
        elif isinstance(given, FeatureSpec) and given.role is None:
            table[name] = given.merged(FeatureSpec(role=role))
        elif isinstance(given, Mapping) and given.get("role") is None:
            table[name] = {**given, "role": role}
    return table


def _nbytes(value: Any) -> int:
    """Approximate bytes of one sample's value (for batching; exactness does not matter)."""
    if isinstance(value, np.ndarray):
        return int(value.nbytes)
    if isinstance(value, (str, bytes, bytearray)):
        return len(value)
    if isinstance(value, (list, tuple)):
        return 8 * len(value)
    return 8


def _columns(samples: list[tuple[int, dict[str, Any]]]) -> dict[str, Any]:
    """Samples (all with the same keys) -> the writer's batch: arrays stacked when all share shape and dtype."""
    out: dict[str, Any] = {}
    for key in samples[0][1]:
        values = [values[key] for _, values in samples]
        first = values[0]
        if isinstance(first, np.ndarray) and all(
            isinstance(v, np.ndarray) and v.shape == first.shape and v.dtype == first.dtype for v in values
        ):
            out[key] = np.stack(values)
        elif isinstance(first, (np.generic, int, float, bool)) and all(type(v) is type(first) for v in values):
            out[key] = np.asarray(values)
        else:
            out[key] = values
    return out


class _SampleWriter:
    """Batches samples per split and appends them; stops or skips (and records) the samples that fail."""

    def __init__(
        self,
        writer: Any,
        batch_bytes: int,
        on_error: OnError,
        report: IngestReport,
        features: Mapping[str, FeatureSpec | Mapping[str, Any]] | None,
    ) -> None:
        self.writer = writer
        self.batch_bytes = batch_bytes
        self.on_error = on_error
        self.report = report
        self.pending: dict[str, list[tuple[int, dict[str, Any]]]] = {}
        self.pending_bytes: dict[str, int] = {}
        self.keys: dict[str, tuple[str, ...]] = {}
        self.specs = SpecTable(features)
        self.shapes: dict[tuple[str, str], tuple[int, ...] | None] = {}

    def bad(self, index: int, split: str | None, reason: str) -> None:
        """Stop with an :class:`IngestError`, or record the sample as skipped."""
        where = f"sample {index}" + ("" if split is None else f" (split {split!r})")
        if self.on_error == "stop":
            raise IngestError(
                f"{where}: {reason}; nothing was written to {self.writer.path}. Fix the sample source, or skip bad "
                "samples with on_error='skip'"
            )
        self.report.skipped.append(Skipped(f"sample {index}", reason))

    def add(self, index: int, split: str, values: dict[str, Any]) -> None:
        """Queue one sample of ``split``; append the split's batch when it is full."""
        keys = tuple(sorted(values))
        expected = self.keys.setdefault(split, keys)
        if keys != expected:
            missing, extra = sorted(set(expected) - set(keys)), sorted(set(keys) - set(expected))
            self.bad(
                index,
                split,
                f"has the features {list(keys)} but the first sample of the split has {list(expected)} "
                f"(missing {missing}, unexpected {extra}); every sample of a split has the same features (§5.3)",
            )
            return
        for name, value in values.items():
            problem = self._shape_problem(split, name, value)
            if problem is not None:
                self.bad(index, split, problem)
                return
        # Copied now: a generator may refill the same buffer for its next sample.
        owned = {name: value.copy() if isinstance(value, np.ndarray) else value for name, value in values.items()}
        batch = self.pending.setdefault(split, [])
        batch.append((index, owned))
        size = self.pending_bytes.get(split, 0) + sum(_nbytes(v) for v in values.values())
        self.pending_bytes[split] = size
        if size >= self.batch_bytes or len(batch) >= DEFAULT_BATCH_SAMPLES:
            self.flush(split)

    def _shape_problem(self, split: str, name: str, value: Any) -> str | None:
        """Why an array value does not match the first sample's shape, for features not declared with an encoding.

        Undeclared array features are dense (§6.2): every sample has the first
        one's shape. (Without this check, a batch whose samples happen to vary
        would be inferred ragged, and the encoding would depend on batching.)
        """
        key = (split, name)
        if key not in self.shapes:
            declared = self.specs.get(split, name).encoding is not None
            self.shapes[key] = None if declared or not isinstance(value, np.ndarray) else value.shape
        expected = self.shapes[key]
        if expected is None or not isinstance(value, np.ndarray) or value.shape == expected:
            return None
        return (
            f"{name!r} has shape {value.shape} but the first sample's has {expected}; a feature is dense (one shape) "
            f"unless declared ragged: features={{{name!r}: {{'encoding': 'ragged'}}}} (§6.3)"
        )

    def flush(self, split: str) -> None:
        """Append the queued samples of ``split``; on failure find (sample by sample) the one at fault."""
        batch = self.pending.pop(split, [])
        self.pending_bytes[split] = 0
        if not batch:
            return
        try:
            self.writer.append(split, _columns(batch))
        except (WriterError, EncodingError):
            pass  # a failed append changes nothing: retry sample by sample to name the one at fault
        else:
            self.report.samples[split] = self.report.samples.get(split, 0) + len(batch)
            return
        for index, values in batch:
            try:
                self.writer.append(split, _columns([(index, values)]))
            except (WriterError, EncodingError) as exc:
                self.bad(index, split, str(exc))
            else:
                self.report.samples[split] = self.report.samples.get(split, 0) + 1

    def flush_all(self) -> None:
        """Append every queued sample."""
        for split in list(self.pending):
            self.flush(split)


def _enumerate_source(samples: Iterable[Mapping[str, Any]]) -> Iterator[tuple[int, Any]]:
    """Enumerate ``samples``, turning an exception raised by the source into an :class:`IngestError`."""
    try:
        iterator = iter(samples)
    except TypeError as exc:
        raise IngestError(
            f"samples must be an iterable of dicts {{feature: value}}, got a {type(samples).__name__}"
        ) from exc
    index = 0
    while True:
        try:
            sample = next(iterator)
        except StopIteration:
            return
        except Exception as exc:
            raise IngestError(
                f"the sample source raised {type(exc).__name__}: {exc} after {index} sample(s); nothing was written. "
                "Fix the source (the traceback above shows where it failed)"
            ) from exc
        yield index, sample
        index += 1


def convert_samples(
    samples: Iterable[Mapping[str, Any]],
    output: str | os.PathLike[str],
    *,
    split: str = "train",
    split_key: str | None = None,
    features: Mapping[str, FeatureSpec | Mapping[str, Any]] | None = None,
    total: int | None = None,
    batch_bytes: int = DEFAULT_BATCH_BYTES,
    metadata: Mapping[str, Any] | None = None,
    compression: str | None = None,
    shuffle: bool = False,
    seed: int | None = None,
    on_error: OnError = "stop",
    progress: bool | None = None,
    overwrite: bool = False,
) -> IngestReport:
    """Write the samples of any Python iterable to an h5ml file, in bounded memory (§4, §5, §6).

    Parameters
    ----------
    samples
        An iterable (a generator, a list, a map-style dataset) of samples,
        each a mapping ``{feature: value}``: a numpy array (one sample, any
        shape and numeric dtype), a Python or numpy scalar, a ``str``, ``bytes``
        (a bytes feature), or a class name / code of a categorical feature
        declared in ``features``. Every sample of a split has the same
        features. The iterable is consumed once; arrays are copied when
        received, so a generator may reuse its buffers.
    output
        The h5ml file to write.
    split
        The split every sample goes to (§5.1), unless ``split_key`` is given.
    split_key
        A key of each sample whose value (a ``str``) names the sample's split;
        it is not stored as a feature.
    features
        Per-feature options, as :class:`h5ml.Writer` takes them: encodings,
        dtypes, roles, ``sample_rate``, ``media_type``, ``class_names``...
        Features are otherwise inferred from their first samples: an array
        feature is dense, every sample with the first one's shape (a sample
        of another shape is a bad sample); declare ``{"encoding": "ragged"}``
        for samples that vary in shape.
        Roles of :data:`ROLE_NAMES` are added where none is given.
    total
        The number of samples, for the progress bar; ``len(samples)`` when
        the iterable has a length.
    batch_bytes
        Bytes of samples gathered per ``Writer.append`` (at most
        :data:`DEFAULT_BATCH_SAMPLES` samples). Memory held by this function
        is about ``batch_bytes`` plus the writer's buffer (32 MiB per split).
    metadata
        Root metadata (§4.2) over the defaults of
        :func:`h5ml.ingest.conversion_metadata` (description, license
        ``"NOASSERTION"``); give ``source`` to record where the samples came from.
    compression
        ``"gzip"`` or None (the default).
    shuffle, seed
        Store each split in the order ``numpy.random.default_rng(seed).permutation(n)``
        of the samples met, recording ``shuffle_seed`` (§7.6). The samples are
        first written unshuffled to a staging file beside ``output`` (it needs
        as much disk again), then copied in that order by
        :func:`copy_shuffled`. A seed is drawn when none is given.
    on_error
        ``"stop"``: a sample that cannot be written (not a mapping, other
        features than the split's first sample, a value that does not fit its
        feature) raises :class:`h5ml.IngestError` and nothing is written.
        ``"skip"``: it is left out and recorded (``"sample <index>"`` and the
        reason) in :data:`h5ml.ingest.SKIPPED_ATTR` and the report.
    progress
        Show a progress bar on stderr: True, False, or None for "when stderr is a terminal".
    overwrite
        Replace an existing ``output``.

    Returns
    -------
    IngestReport
        Samples written per split, skipped samples, time taken.

    Raises
    ------
    IngestError
        With ``on_error="stop"``, for the first bad sample (its index and why;
        a ``split_key`` value that is not a valid split name makes a sample
        bad too); also when the iterable yields nothing or itself raises (the
        exception is chained). ``output`` is left as it was.
    FileExistsError, IsADirectoryError, FileNotFoundError
        As :func:`h5ml.ingest.check_output`.
    ValueError
        If ``on_error`` or ``batch_bytes`` is invalid.
    h5ml.WriterError, h5ml.MetadataError
        If ``features`` or ``metadata`` is invalid.
    """
    from h5ml.writer.writer import Writer

    if on_error not in ("stop", "skip"):
        raise ValueError(f"on_error must be 'stop' or 'skip', got {on_error!r}")
    if not isinstance(batch_bytes, int) or batch_bytes < 1:
        raise ValueError(f"batch_bytes must be an integer >= 1, got {batch_bytes!r}")
    out = check_output(output, overwrite)
    start = time.perf_counter()
    if total is None and isinstance(samples, Sized):
        total = len(samples)
    meta = _metadata("samples", out, metadata)
    if shuffle and seed is None:
        seed = draw_seed()
    enumerated = _enumerate_source(samples)
    first = next(enumerated, None)  # its features get the default roles
    if first is None:
        raise IngestError(f"{out}: the sample source yielded no samples; nothing to write")
    names = set(first[1]) - {split_key} if isinstance(first[1], Mapping) else set()
    table = default_roles(names, features)
    report = IngestReport(out)
    staging = out.parent / f".{out.name}.h5ml-stage-{secrets.token_hex(8)}"
    target = staging if shuffle else out
    bar = progress_bar(progress, total or 0)
    try:
        task = (
            None
            if bar is None
            else bar.add_task(f"{out.name}: {split if split_key is None else 'samples'}", total=total)
        )
        with Writer(target, meta, compression=None if shuffle else compression, features=table) as writer:
            sink = _SampleWriter(writer, batch_bytes, on_error, report, table)
            for index, sample in itertools.chain([first], enumerated):
                if bar is not None:
                    bar.advance(task)
                if not isinstance(sample, Mapping):
                    sink.bad(index, None, f"is a {type(sample).__name__}, not a dict {{feature: value}}")
                    continue
                values = dict(sample)
                where = split
                if split_key is not None:
                    where = values.pop(split_key, None)
                    if not isinstance(where, str):
                        sink.bad(index, None, f"its split key {split_key!r} holds {where!r}, not a split name (a str)")
                        continue
                sink.add(index, where, values)
            sink.flush_all()
            if report.skipped:
                writer.update_metadata({SKIPPED_ATTR: json.dumps([s.to_json() for s in report.skipped])})
        if shuffle:
            assert seed is not None
            report.samples = copy_shuffled(staging, out, seed=seed, compression=compression, overwrite=True)
    finally:
        if bar is not None:
            bar.stop()
        staging.unlink(missing_ok=True)
    report.seconds = time.perf_counter() - start
    return report


def _metadata(kind: str, output: Path, given: Mapping[str, Any] | None) -> dict[str, Any]:
    """Conversion metadata of Python ``kind`` ("samples", "arrays"): no ``source`` unless given; ``name`` the output's stem."""
    meta = conversion_metadata("Python", kind, given)
    if not (given and "source" in given):
        del meta["source"]
    meta.setdefault("name", output.stem)
    return meta


def convert_arrays(
    arrays: Mapping[str, Mapping[str, Any]] | Mapping[str, Any],
    output: str | os.PathLike[str],
    *,
    split: str = "train",
    features: Mapping[str, FeatureSpec | Mapping[str, Any]] | None = None,
    metadata: Mapping[str, Any] | None = None,
    compression: str | None = None,
    shuffle: bool = False,
    seed: int | None = None,
    overwrite: bool = False,
) -> IngestReport:
    """Write in-memory arrays to an h5ml file (§4, §5, §6).

    Parameters
    ----------
    arrays
        ``{split: {feature: values}}``, or ``{feature: values}`` for one split
        (named by ``split``). Values as :func:`h5ml.write` takes them: a numeric
        array ``(N, ...)`` (dense), a list or numpy array of ``str`` (string),
        :class:`h5ml.Categorical` or a pandas categorical, a list of arrays
        varying in shape (ragged), a list of ``bytes``. Every feature of a
        split has the same N. Arrays are written in blocks of a few MiB
        (``numpy.memmap`` arrays are therefore never loaded whole).
    output
        The h5ml file to write.
    split
        The split of a flat ``{feature: values}`` mapping.
    features
        Per-feature options, as :func:`h5ml.write` takes them; roles of
        :data:`ROLE_NAMES` are added where none is given.
    metadata
        Root metadata (§4.2) over the defaults of :func:`h5ml.ingest.conversion_metadata`.
    compression
        ``"gzip"`` or None.
    shuffle, seed
        Store each split in the order ``numpy.random.default_rng(seed).permutation(N)``
        and record ``shuffle_seed`` (§7.6); a seed is drawn when none is
        given, and ``seed`` is ignored without ``shuffle``.
    overwrite
        Replace an existing ``output``.

    Returns
    -------
    IngestReport
        Samples written per split and the time taken (nothing is ever skipped).

    Raises
    ------
    IngestError
        If ``arrays`` mixes splits (mappings) and features (arrays), or a
        split's features have different numbers of samples (all are listed).
    FileExistsError, IsADirectoryError, FileNotFoundError
        As :func:`h5ml.ingest.check_output`.
    h5ml.WriterError, h5ml.EncodingError, h5ml.MetadataError
        As :func:`h5ml.write` (invalid names, values without an encoding,
        invalid metadata). ``output`` is left as it was.
    """
    from h5ml.model.values import column_length
    from h5ml.writer.writer import write

    out = check_output(output, overwrite)
    start = time.perf_counter()
    if not isinstance(arrays, Mapping) or not arrays:
        raise IngestError(
            f"{out}: arrays must be a non-empty dict {{split: {{feature: array}}}} or {{feature: array}}, "
            f"got {type(arrays).__name__} {arrays!r:.80}"
        )
    nested = [isinstance(v, Mapping) for v in arrays.values()]
    if all(nested):
        splits: dict[str, Mapping[str, Any]] = {str(k): v for k, v in arrays.items()}
    elif not any(nested):
        splits = {split: arrays}
    else:
        kinds = {k: ("dict (a split)" if isinstance(v, Mapping) else type(v).__name__) for k, v in arrays.items()}
        raise IngestError(
            f"{out}: arrays mixes splits (dicts of features) and features (arrays): {kinds}; give "
            "{split: {feature: array}} or {feature: array}"
        )
    samples: dict[str, int] = {}
    for name, columns in splits.items():
        lengths = {feature: column_length(values) for feature, values in columns.items()}
        if len({n for n in lengths.values()}) > 1 or None in lengths.values():
            listed = ", ".join(f"{f}: {'not a sequence' if n is None else n}" for f, n in lengths.items())
            raise IngestError(
                f"{out}: the features of split {name!r} have different numbers of samples or are not arrays "
                f"({listed}); every feature of a split has num_samples samples along its first axis (§5.3)"
            )
        samples[name] = next(iter(lengths.values()), 0) or 0
    table = default_roles({f for columns in splits.values() for f in columns}, features)
    write(
        out,
        splits,
        _metadata("arrays", out, metadata),
        compression=compression,
        shuffle=shuffle,
        seed=seed if shuffle else None,
        features=table,
    )
    return IngestReport(out, samples=samples, seconds=time.perf_counter() - start)


def _stored_spec(feature: Any) -> FeatureSpec:
    """The :class:`FeatureSpec` that writes a feature like ``feature`` (an :class:`h5ml.Feature`)."""
    numeric = feature.encoding in ("dense", "ragged")
    return FeatureSpec(
        encoding=feature.encoding,
        dtype=feature.dtype if numeric else None,
        role=feature.role,
        description=feature.description,
        units=feature.units,
        sample_rate=feature.sample_rate,
        media_type=feature.media_type if feature.encoding == "bytes" else None,
        class_names=feature.class_names if feature.encoding == "categorical" else None,
    )


def _writable(feature: Any, values: Any) -> Any:
    """Values read by :meth:`h5ml.Split.read` -> the form the writer takes for that feature."""
    if feature.encoding == "categorical":
        return Categorical(np.asarray(values, dtype=np.int64), feature.class_names)
    if feature.encoding == "string":
        return [str(v) for v in values]
    return values


def copy_shuffled(
    source: str | os.PathLike[str],
    output: str | os.PathLike[str],
    *,
    seed: int,
    compression: str | None = None,
    block_bytes: int = _SHUFFLE_BLOCK_BYTES,
    overwrite: bool = False,
) -> dict[str, int]:
    """Copy an h5ml file with each split stored in a seeded random order (§7.6).

    Stored sample ``i`` of a split of ``n`` samples is source sample ``p[i]``
    with ``p = numpy.random.default_rng(seed).permutation(n)``, for every
    feature; ``seed`` is recorded as the split's ``shuffle_seed``. The source
    is read in blocks of about ``block_bytes``, so memory stays bounded;
    reading in random order is fastest from an uncompressed source.

    Parameters
    ----------
    source
        A complete h5ml file.
    output
        The file to write (atomically, as :class:`h5ml.Writer`).
    seed
        The permutation seed, an integer in [0, 2**63).
    compression
        ``"gzip"`` or None, for the copy.
    block_bytes
        Bytes of samples read and written at once.
    overwrite
        Replace an existing ``output``.

    Returns
    -------
    dict
        Split -> samples copied. Splits without samples are left out.

    Raises
    ------
    FileExistsError, IsADirectoryError, FileNotFoundError
        As :func:`h5ml.ingest.check_output`.
    h5ml.H5MLError
        If the source cannot be read (as :func:`h5ml.open`).
    """
    from h5ml.reader.dataset import open as open_h5ml
    from h5ml.writer.writer import Writer

    out = check_output(output, overwrite, [Path(source)])
    counts: dict[str, int] = {}
    with open_h5ml(source) as ds:
        meta = {k: v for k, v in ds.attrs.items() if k not in _NOT_COPIED}
        splits = {name: ds[name] for name in ds if ds[name].num_samples > 0}
        specs = {
            f"{name}/{fname}": _stored_spec(feature)
            for name, split in splits.items()
            for fname, feature in split.features.items()
        }
        total_bytes = max(1, Path(source).stat().st_size)
        total_samples = max(1, sum(split.num_samples for split in splits.values()))
        step = max(1, block_bytes // max(1, total_bytes // total_samples))
        with Writer(out, meta, compression=compression, features=specs) as writer:
            for name, split in splits.items():
                n = split.num_samples
                writer.add_split(name, split.description, shuffle_seed=seed, expected_samples=n)
                order = write_order(n, seed)
                feats = split.features
                for begin in range(0, n, step):
                    rows = order[begin : begin + step]
                    values = split.read(rows)
                    writer.append(name, {f: _writable(feats[f], v) for f, v in values.items()})
                counts[name] = n
    return counts
