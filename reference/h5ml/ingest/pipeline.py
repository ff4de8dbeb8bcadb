"""The conversion pipeline every source shares: decode in parallel, write in order, stop or skip on bad input.

A source (audio folders, image folders, ...) lists its samples as
:class:`SourceItem` values, checks what it can before decoding (sample rates,
matching ids), and hands :func:`ingest` a picklable ``decode`` function that
turns one item into a dict of feature values. :func:`ingest` then:

- orders each split's items (shuffled with a seeded permutation when asked,
  the seed recorded as the split's ``shuffle_seed``, §7.6);
- decodes them in a pool of ``workers`` threads (or processes, see
  :func:`ordered_map`; ``workers <= 1`` decodes in this thread) with a
  bounded number in flight, so memory stays bounded
  whatever the dataset's size, and hands the results to one
  :class:`h5ml.Writer` in order, in batches;
- shows a progress bar (samples, samples/s, time left) on a terminal;
- on a file that fails: by default stops with an :class:`h5ml.IngestError`
  naming the file and the reason, and the output is left as it was (the
  writer builds a temporary file and renames it only at the end); with
  ``on_error="skip"`` goes on, and records every skipped file with its reason
  in the output's user attribute :data:`SKIPPED_ATTR` (a JSON list, §4.7) and
  in the returned :class:`IngestReport`.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Executor, Future, ProcessPoolExecutor, ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal, TypeVar

import numpy as np

from h5ml.errors import IngestError
from h5ml.ingest.progress import progress_bar
from h5ml.model.values import FeatureSpec
from h5ml.reader.prefetch import stop_pool
from h5ml.sampling.seeds import draw_seed, write_order
from h5ml.writer.writer import Writer

__all__ = [
    "ID_FEATURE",
    "SKIPPED_ATTR",
    "DecodeError",
    "IngestReport",
    "OnError",
    "Skipped",
    "SourceItem",
    "check_output",
    "conversion_metadata",
    "ingest",
    "natural_key",
    "ordered_map",
    "progress_bar",
]

_T = TypeVar("_T")
_R = TypeVar("_R")

#: What to do with a source file that fails: stop (the default) or skip it and record why.
OnError = Literal["stop", "skip"]
#: The string feature in which the converters keep each sample's source id (file stem, dataset name), so that
#: a sample can be traced back to where it came from; ``h5ml merge`` checks it for duplicates.
ID_FEATURE: Final = "id"
#: Root user attribute (§4.7) listing the skipped source files: JSON ``[{"path": ..., "reason": ...}, ...]``.
SKIPPED_ATTR: Final = "h5ml-ingest:skipped"
#: Samples handed to the writer at once.
_BATCH_SAMPLES: Final = 64
#: Decoded samples in flight per worker (bounds memory).
_IN_FLIGHT_PER_WORKER: Final = 4


class DecodeError(Exception):
    """Raised by a decode function: ``path`` could not be used, for ``reason`` (a sentence, no traceback)."""

    def __init__(self, path: str | os.PathLike[str], reason: str) -> None:
        super().__init__(f"{os.fspath(path)}: {reason}")
        self.path = os.fspath(path)
        self.reason = reason

    def __reduce__(self) -> tuple[Any, ...]:
        return (DecodeError, (self.path, self.reason))


@dataclass(frozen=True)
class Skipped:
    """A source file left out of the output (``on_error="skip"``), and why."""

    path: str
    reason: str

    def to_json(self) -> dict[str, str]:
        """``{"path": ..., "reason": ...}``, the form stored in :data:`SKIPPED_ATTR`."""
        return {"path": self.path, "reason": self.reason}


@dataclass(frozen=True)
class SourceItem:
    """One sample to decode.

    Attributes
    ----------
    split
        The split it goes to (§5.1).
    sample_id
        Its id in the source (a file stem, a dataset name, a row number).
    parts
        ``(feature, location)`` pairs: where each feature's value comes from
        (a file path, an HDF5 path, ...), as the source's decode function reads them.
    """

    split: str
    sample_id: str
    parts: tuple[tuple[str, str], ...]

    @property
    def first_path(self) -> str:
        """The location of the first part (named in errors that no part claimed)."""
        return self.parts[0][1] if self.parts else self.sample_id


@dataclass
class IngestReport:
    """What a conversion did.

    Attributes
    ----------
    output
        The file written.
    samples
        Split -> samples written.
    skipped
        Source files left out, in the order met.
    seconds
        Wall-clock time, in seconds.
    """

    output: Path
    samples: dict[str, int] = field(default_factory=dict)
    skipped: list[Skipped] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def total(self) -> int:
        """Samples written, all splits together."""
        return sum(self.samples.values())

    def summary(self) -> str:
        """One paragraph for the terminal: samples per split, speed, skipped files with their reasons."""
        rate = self.total / self.seconds if self.seconds > 0 else 0.0
        splits = ", ".join(f"{name} {count}" for name, count in self.samples.items()) or "no samples"
        lines = [f"wrote {self.output}: {splits} ({self.total} samples in {self.seconds:.1f} s, {rate:,.0f}/s)"]
        if self.skipped:
            lines.append(f"skipped {len(self.skipped)} source file(s) (recorded in the attribute {SKIPPED_ATTR}):")
            lines += [f"  {s.path}: {s.reason}" for s in self.skipped]
        return "\n".join(lines)


def natural_key(text: str) -> tuple[tuple[int, int | str], ...]:
    """Sort key that orders digit runs by value: ``"2" < "10"``, ``"a2" < "a10"`` (ids sorted naturally)."""
    key: list[tuple[int, int | str]] = []
    number = ""
    for char in text:
        if char.isdigit():
            number += char
            continue
        if number:
            key.append((0, int(number)))
            number = ""
        key.append((1, char))
    if number:
        key.append((0, int(number)))
    return tuple(key)


def check_output(output: str | os.PathLike[str], overwrite: bool, sources: Iterable[Path] = ()) -> Path:
    """Return the output path after refusing one that would lose data.

    Raises
    ------
    FileExistsError
        If the output exists and ``overwrite`` is False, or is one of ``sources``.
    IsADirectoryError
        If the output is a directory.
    FileNotFoundError
        If the output's directory does not exist.
    """
    out = Path(output)
    for source in sources:
        if out.exists() and source.exists() and out.resolve() == source.resolve():
            raise FileExistsError(f"{out}: the output is the source itself; write to another path")
    if out.is_dir():
        raise IsADirectoryError(f"{out}: the output path is a directory; give a file path such as {out / 'data.h5'}")
    if out.exists() and not overwrite:
        raise FileExistsError(
            f"{out}: the output file exists; choose another path or pass overwrite=True (--overwrite)"
        )
    if not out.parent.is_dir():
        raise FileNotFoundError(f"{out}: the directory {str(out.parent)!r} does not exist; create it first")
    return out


def conversion_metadata(kind: str, source: str | os.PathLike[str], given: Mapping[str, Any] | None) -> dict[str, Any]:
    """Root metadata of a converted file: the user's, over defaults that make it pass ``validate --strict`` (§4.2).

    Defaults: ``source`` (the source path or name), ``description``
    ("Converted from <kind> <source> by h5ml <version>.") and ``license``
    ``"NOASSERTION"`` (the SPDX value for "no license stated": the converter
    cannot know it; pass the real one).
    """
    from h5ml._version import __version__

    where = os.fspath(source)
    out: dict[str, Any] = {
        "source": where,
        "description": f"Converted from {kind} {where} by h5ml {__version__}.",
        "license": "NOASSERTION",
    }
    out.update(given or {})
    return out


def _pool_context() -> Any:
    methods = multiprocessing.get_all_start_methods()
    return multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")


def ordered_map(
    fn: Callable[[_T], _R], tasks: Iterable[_T], workers: int, *, processes: bool = False
) -> Iterator[tuple[_T, _R | Exception]]:
    """Apply ``fn`` to each task, in parallel when ``workers > 1``; yield ``(task, result or exception)`` in task order.

    Parameters
    ----------
    fn
        The work of one task; an exception it raises is yielded, not raised.
    tasks
        Consumed lazily: at most ``workers * 4`` tasks are in flight, so
        memory is bounded whatever their number.
    workers
        Threads (or processes) at work; ``<= 1`` runs in this thread.
    processes
        Worker processes (``forkserver`` where available, else ``spawn``)
        instead of threads; ``fn`` and the tasks must then pickle. Threads are
        the default: the decoders (libsndfile, libsoxr, Pillow's codecs, zlib,
        HDF5 reads) release Python's lock, and threads pay no process start
        and no copy of the decoded samples through a pipe (measured with 2
        workers on 2 cores: audio folders 0.47x -> 0.83x the one-file-at-a-
        time script, image folders 0.54x -> 1.17x, in ``bench_ingest.py``).
    """
    if workers <= 1:
        for task in tasks:
            try:
                yield task, fn(task)
            except Exception as exc:  # reported to the caller, who stops or skips
                yield task, exc
        return
    pending: deque[tuple[_T, Future[_R]]] = deque()
    limit = workers * _IN_FLIGHT_PER_WORKER
    pool: Executor = (
        ProcessPoolExecutor(max_workers=workers, mp_context=_pool_context())
        if processes
        else ThreadPoolExecutor(max_workers=workers, thread_name_prefix="h5ml-ingest")
    )
    try:
        for task in tasks:
            try:
                pending.append((task, pool.submit(fn, task)))
            except BrokenProcessPool as exc:
                raise _worker_died(task) from exc
            if len(pending) >= limit:
                yield _result(*pending.popleft())
        while pending:
            yield _result(*pending.popleft())
    except BaseException:  # an error, an interrupt (SIGINT, SIGTERM) or the caller stopped: end the workers now
        stop_pool(pool)
        raise
    pool.shutdown(wait=True)


def _worker_died(task: Any) -> IngestError:
    """A worker process ended without a result (killed by a signal, out of memory): no task can go on."""
    where = getattr(task, "first_path", None) or repr(task)
    return IngestError(
        f"a worker process ended abruptly (killed by a signal, or out of memory) while decoding {where} or a "
        "neighbouring file; nothing was written. Convert again, with fewer --workers or without --processes",
        path=str(where),
    )


def _result(task: Any, future: Future[Any]) -> tuple[Any, Any]:
    try:
        return task, future.result()
    except BrokenProcessPool as exc:  # every later task fails too: not one bad file to skip
        raise _worker_died(task) from exc
    except Exception as exc:
        return task, exc


def _describe(item: SourceItem, exc: BaseException) -> Skipped:
    if isinstance(exc, DecodeError):
        return Skipped(exc.path, exc.reason)
    return Skipped(item.first_path, f"{type(exc).__name__}: {exc}")


def ingest(
    output: str | os.PathLike[str],
    splits: Mapping[str, Sequence[SourceItem]],
    decode: Callable[[SourceItem], Mapping[str, Any]],
    *,
    metadata: Mapping[str, Any] | None = None,
    features: Mapping[str, FeatureSpec | Mapping[str, Any]] | None = None,
    compression: str | None = None,
    shuffle: bool = False,
    seed: int | None = None,
    workers: int = 1,
    on_error: OnError = "stop",
    progress: bool | None = None,
    skipped: Sequence[Skipped] = (),
    overwrite: bool = False,
    processes: bool = False,
) -> IngestReport:
    """Decode every item and write the samples to ``output`` in one pass (§4, §5, §6, §7.6).

    Parameters
    ----------
    output
        The h5ml file to write (see :func:`check_output`).
    splits
        Split name -> its items, in the order to store them (unless ``shuffle``).
    decode
        ``item -> {feature: value}``, the values of one sample as
        :meth:`h5ml.Writer.append_sample` takes them. It raises
        :class:`DecodeError` for a file it cannot use (any other exception is
        reported with its type). It must pickle when ``workers > 1``.
    metadata, features, compression
        As :class:`h5ml.Writer`.
    shuffle, seed
        Store each split in the order ``numpy.random.default_rng(seed).permutation(n)``
        and record ``seed`` as its ``shuffle_seed`` (§7.6). A seed is drawn
        (and recorded) when ``shuffle`` is set without one.
    workers
        Decoding threads (processes with ``processes=True``, see
        :func:`ordered_map`); ``<= 1`` decodes in this thread.
    on_error
        ``"stop"``: the first failing item raises :class:`h5ml.IngestError`
        and nothing is written. ``"skip"``: it is left out and recorded.
    progress
        Show a progress bar on stderr: True, False, or None for "when stderr is a terminal".
    skipped
        Files the source already left out (found while scanning), recorded with the others.
    overwrite
        Replace an existing output.
    processes
        Decode in worker processes instead of threads (``decode`` must pickle).

    Returns
    -------
    IngestReport
        Samples written per split, skipped files, time taken.

    Raises
    ------
    IngestError
        With ``on_error="stop"``, for the first item whose decoding failed:
        the message names the file and the reason. The output is unchanged.
    FileExistsError, IsADirectoryError, FileNotFoundError
        As :func:`check_output`.
    h5ml.WriterError, h5ml.MetadataError, h5ml.EncodingError
        If the decoded values cannot be written (for example features that
        differ between samples); the output is unchanged.
    """
    if on_error not in ("stop", "skip"):
        raise ValueError(f"on_error must be 'stop' or 'skip', got {on_error!r}")
    out = check_output(output, overwrite)
    start = time.perf_counter()
    if shuffle and seed is None:
        seed = draw_seed()
    report = IngestReport(out, skipped=list(skipped))
    total = sum(len(items) for items in splits.values())
    bar = progress_bar(progress, total)
    try:
        with Writer(out, metadata, compression=compression, features=features) as writer:
            for name, items in splits.items():
                ordered = list(items)
                if shuffle and seed is not None:  # a seed was drawn above when none was given
                    ordered = [ordered[i] for i in write_order(len(ordered), seed)]
                writer.add_split(name, shuffle_seed=seed if shuffle else None, expected_samples=len(ordered))
                task = None if bar is None else bar.add_task(f"{out.name}: {name}", total=len(ordered))
                report.samples[name] = _write_split(
                    writer, name, ordered, decode, workers, on_error, report, bar, task, processes
                )
            if report.skipped:
                writer.update_metadata({SKIPPED_ATTR: json.dumps([s.to_json() for s in report.skipped])})
    finally:
        if bar is not None:
            bar.stop()
    report.seconds = time.perf_counter() - start
    return report


def _write_split(
    writer: Writer,
    split: str,
    items: Sequence[SourceItem],
    decode: Callable[[SourceItem], Mapping[str, Any]],
    workers: int,
    on_error: OnError,
    report: IngestReport,
    bar: Any,
    task: Any,
    processes: bool = False,
) -> int:
    """Decode and append one split's items in order; return the samples written."""
    batch: dict[str, list[Any]] = {}
    count = 0
    for item, result in ordered_map(decode, items, workers, processes=processes):
        if bar is not None:
            bar.advance(task)
        if isinstance(result, BaseException):
            problem = _describe(item, result)
            if on_error == "stop":
                raise IngestError(
                    f"{problem.path}: {problem.reason} (sample {item.sample_id!r} of split {split!r}); nothing was "
                    f"written to {writer.path}. Fix or remove that file, or skip bad files with on_error='skip' "
                    "(--on-error skip)",
                    path=problem.path,
                ) from result
            report.skipped.append(problem)
            continue
        for key, value in result.items():
            batch.setdefault(key, []).append(value)
        count += 1
        if count % _BATCH_SAMPLES == 0:
            writer.append(split, _columns(batch))
            batch = {}
    if batch:
        writer.append(split, _columns(batch))
    return count


def _columns(batch: Mapping[str, list[Any]]) -> dict[str, Any]:
    """Per-feature lists of sample values -> the writer's batch form (arrays stacked when all share one shape)."""
    out: dict[str, Any] = {}
    for key, values in batch.items():
        first = values[0]
        if isinstance(first, np.ndarray) and all(
            isinstance(v, np.ndarray) and v.shape == first.shape and v.dtype == first.dtype for v in values
        ):
            out[key] = np.stack(values)
        else:
            out[key] = values
    return out
