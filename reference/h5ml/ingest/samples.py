"""Write what any Python pipeline produces to an h5ml file: a stream of samples (§4, §5, §6).

:func:`convert_samples` takes an iterable (a generator, a ``torch`` dataset,
a list) of dict-of-values samples and hands them to one :class:`h5ml.Writer`
in batches of about :data:`DEFAULT_BATCH_BYTES`, so memory stays bounded
whatever the number of samples: a generator of a terabyte is written with a
few tens of megabytes of buffers. The conventional feature names get their
role (§6.1, :data:`h5ml.ingest.features.ROLE_NAMES`: ``x``, ``data``,
``input`` -> input; ``y``, ``label``, ``target`` -> target; ``id`` ->
metadata; a role given in ``features=`` wins). Shuffled on write, the
samples go through a staging file (:class:`h5ml.ingest.shuffling.ShuffleStage`).
"""

from __future__ import annotations

import itertools
import os
import time
from collections.abc import Iterable, Iterator, Mapping, Sized
from typing import Any, Final

import numpy as np

from h5ml.errors import EncodingError, H5MLError, IngestError, WriterError
from h5ml.ingest.docstrings import shared_doc
from h5ml.ingest.features import default_roles
from h5ml.ingest.options import SHARD_OPTIONS, SHARED_OPTIONS, ConvertOptions, OnError, parameter_error
from h5ml.ingest.output import check_output, conversion_metadata
from h5ml.ingest.pipeline import stack_columns
from h5ml.ingest.progress import ProgressBars
from h5ml.ingest.report import IngestReport, Skipped, record_skipped
from h5ml.ingest.shuffling import ShuffleStage
from h5ml.model.values import FeatureSpec, SpecTable
from h5ml.writer import Writer

__all__ = ["DEFAULT_BATCH_BYTES", "DEFAULT_BATCH_SAMPLES", "convert_samples"]

#: Bytes of samples gathered before they are handed to the writer (one ``Writer.append``).
DEFAULT_BATCH_BYTES: Final = 8 << 20
#: At most this many samples per ``Writer.append``, however small they are.
DEFAULT_BATCH_SAMPLES: Final = 4096


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
    """Samples (all with the same keys) -> the writer's batch (:func:`h5ml.ingest.pipeline.stack_columns`)."""
    return stack_columns({key: [values[key] for _, values in samples] for key in samples[0][1]})


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
            self.report.count(split, len(batch))
            return
        for index, values in batch:
            try:
                self.writer.append(split, _columns([(index, values)]))
            except (WriterError, EncodingError) as exc:
                self.bad(index, split, str(exc))
            else:
                self.report.count(split, 1)

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
        except H5MLError:
            raise  # already says what was wrong and where (a converter's own source, such as Croissant's records)
        except Exception as exc:
            raise IngestError(
                f"the sample source raised {type(exc).__name__}: {exc} after {index} sample(s); nothing was written. "
                "Fix the sample source where it raises that error (the original exception is chained to this one)"
            ) from exc
        yield index, sample
        index += 1


@shared_doc(
    (*SHARED_OPTIONS, *SHARD_OPTIONS),
    notes={
        "metadata": "Samples of an iterable come from nowhere a reader can find: give ``source`` to record it.",
        "features": (
            "Features are otherwise inferred from their first samples: an array feature is dense, every sample "
            'with the first one\'s shape (a sample of another shape is a bad sample); declare ``{"encoding": '
            '"ragged"}`` for samples that vary in shape. Roles of :data:`h5ml.ingest.features.ROLE_NAMES` are '
            "added where none is given."
        ),
        "shuffle": (
            "The samples are first written unshuffled to a staging file beside ``output`` (it needs as much disk "
            "again), then copied in that order by :func:`h5ml.ingest.shuffling.copy_shuffled`."
        ),
        "workers": "Not used: the samples come from one iterator, in this thread.",
        "processes": "Not used (see ``workers``).",
        "on_error": (
            "A bad sample is one that is not a mapping, has other features than the split's first sample, or a "
            'value that does not fit its feature; it is recorded as ``"sample <index>"``.'
        ),
    },
)
def convert_samples(
    samples: Iterable[Mapping[str, Any]],
    output: str | os.PathLike[str],
    *,
    split: str = "train",
    split_key: str | None = None,
    total: int | None = None,
    batch_bytes: int = DEFAULT_BATCH_BYTES,
    metadata: Mapping[str, Any] | None = None,
    features: Mapping[str, FeatureSpec | Mapping[str, Any]] | None = None,
    compression: str | None = None,
    level: int | None = None,
    shuffle: bool = False,
    seed: int | None = None,
    workers: int = 1,
    processes: bool = False,
    on_error: OnError = "stop",
    progress: bool | None = None,
    overwrite: bool = False,
    shard_size: int | str | None = None,
    samples_per_shard: int | None = None,
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
    total
        The number of samples, for the progress bar; ``len(samples)`` when
        the iterable has a length.
    batch_bytes
        Bytes of samples gathered per ``Writer.append`` (at most
        :data:`DEFAULT_BATCH_SAMPLES` samples). Memory held by this function
        is about ``batch_bytes`` plus the writer's buffer (32 MiB per split).
    {shared_parameters}

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
    {shared_raises}
    h5ml.WriterError, h5ml.MetadataError
        If ``features`` or ``metadata`` is invalid.
    """
    options = ConvertOptions.pick(locals()).seeded()
    if isinstance(batch_bytes, bool) or not isinstance(batch_bytes, int) or batch_bytes < 1:
        raise parameter_error("batch_bytes", f"batch_bytes must be an integer >= 1, got {batch_bytes!r}")
    out = check_output(output, options.overwrite, sharded=options.sharded)
    start = time.perf_counter()
    if total is None and isinstance(samples, Sized):
        total = len(samples)
    meta = conversion_metadata("Python samples", None, options.metadata, out)
    enumerated = _enumerate_source(samples)
    first = next(enumerated, None)  # its features get the default roles
    if first is None:
        raise IngestError(f"{out}: the sample source yielded no samples; nothing to write")
    names = set(first[1]) - {split_key} if isinstance(first[1], Mapping) else set()
    table = default_roles(names, options.features)
    report = IngestReport(out)
    with ProgressBars(options.progress, total or 0) as bars, ShuffleStage(out, options) as stage:
        task = bars.add(f"{out.name}: {split if split_key is None else 'samples'}", total)
        with Writer(stage.target, meta, features=table, **stage.writer_options()) as writer:
            sink = _SampleWriter(writer, batch_bytes, options.on_error, report, table)
            for index, sample in itertools.chain([first], enumerated):
                bars.advance(task)
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
            record_skipped(writer, report)
        stage.finish(report)
    report.seconds = time.perf_counter() - start
    return report
