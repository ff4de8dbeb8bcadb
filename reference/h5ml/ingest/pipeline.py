"""The conversion pipeline the file-based sources share: decode in parallel, write in order, stop or skip (§4-§7).

A source (audio folders, image folders, HDF5 files) lists its samples as
:class:`h5ml.ingest.report.SourceItem` values, checks what it can before
decoding (sample rates, matching ids), and hands :func:`ingest` a picklable
``decode`` function that turns one item into a dict of feature values.
:func:`ingest` then:

- orders each split's items (shuffled on write with the seeded permutation
  of :func:`h5ml.sampling.seeds.write_order` when asked, the seed recorded as
  the split's ``shuffle_seed``, §7.6);
- decodes them with ``workers`` threads or processes
  (:func:`h5ml.ingest.parallel.ordered_map`) with a bounded number in
  flight, so memory stays bounded whatever the dataset's size, and hands the
  results to one :class:`h5ml.Writer` in order, in batches;
- shows a progress bar (samples, samples/s, time left) on a terminal;
- on a file that fails: by default stops with an :class:`h5ml.IngestError`
  naming the file and the reason, and the output is left as it was (the
  writer builds a temporary file and renames it only at the end); with
  ``on_error="skip"`` goes on, and records every skipped file with its reason
  in the output's user attribute :data:`h5ml.ingest.SKIPPED_ATTR` (a JSON
  list, §4.7) and in the returned :class:`h5ml.ingest.IngestReport`;
- refuses a split of which skipping left no sample (all its files bad, or
  left out before decoding: the source passes that split with no items and
  its :class:`h5ml.ingest.Skipped` files tagged with the split), naming the
  split, the files skipped and the first reasons, unless
  ``allow_empty_splits`` asks to write it empty: a split the source has and
  the output lacks is a wrong file, not a detail of the summary.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

import numpy as np

from h5ml.errors import IngestError
from h5ml.ingest.features import with_user_features
from h5ml.ingest.options import ConvertOptions
from h5ml.ingest.output import check_output
from h5ml.ingest.parallel import ordered_map
from h5ml.ingest.progress import ProgressBars
from h5ml.ingest.report import DecodeError, IngestReport, Skipped, SourceItem, quote_skipped, record_skipped
from h5ml.model.values import FeatureSpec
from h5ml.sampling.seeds import write_order
from h5ml.writer import Writer

__all__ = ["BATCH_SAMPLES", "ingest", "stack_columns"]

#: Samples handed to the writer at once.
BATCH_SAMPLES: Final = 64
#: Skipped files whose reasons the message of an empty split quotes.
_QUOTED: Final = 3


def stack_columns(batch: Mapping[str, Sequence[Any]]) -> dict[str, Any]:
    """Per-feature lists of sample values -> the writer's batch form (arrays stacked, scalars made one array).

    Parameters
    ----------
    batch
        Feature -> the values of the batch's samples, in order (at least one).

    Returns
    -------
    dict
        Feature -> one array ``(n, ...)`` when every value is an array of
        one shape and dtype, or a scalar of one type (Python or numpy);
        otherwise the list as it is (strings, ragged samples, bytes), as
        :meth:`h5ml.Writer.append` takes them.
    """
    out: dict[str, Any] = {}
    for key, values in batch.items():
        first = values[0]
        if isinstance(first, np.ndarray) and all(
            isinstance(v, np.ndarray) and v.shape == first.shape and v.dtype == first.dtype for v in values
        ):
            out[key] = np.stack(values)
        elif isinstance(first, (np.generic, int, float, bool)) and all(type(v) is type(first) for v in values):
            out[key] = np.asarray(values)
        else:
            out[key] = list(values)
    return out


def ingest(
    output: str | os.PathLike[str],
    splits: Mapping[str, Sequence[SourceItem]],
    decode: Callable[[SourceItem], Mapping[str, Any]],
    options: ConvertOptions,
    *,
    metadata: Mapping[str, Any],
    features: Mapping[str, FeatureSpec] | None = None,
    skipped: Sequence[Skipped] = (),
) -> IngestReport:
    """Decode every item and write the samples to ``output`` in one pass (§4, §5, §6, §7.6).

    Parameters
    ----------
    output
        The h5ml file to write (see :func:`h5ml.ingest.check_output`), or with ``options.shard_size`` or
        ``options.samples_per_shard`` the folder of a sharded dataset (SPEC §12.4).
    splits
        Split name -> its items, in the order to store them (unless shuffled on write). A split
        whose every file the source left out before decoding is given with no items (and its
        files in ``skipped``, with their ``split``), so that it is refused or written empty.
    decode
        ``item -> {feature: value}``, the values of one sample as
        :meth:`h5ml.Writer.append_sample` takes them. It raises
        :class:`h5ml.ingest.DecodeError` for a file it cannot use (any other
        exception is reported with its type). It must pickle with
        ``options.processes``.
    options
        The shared options (:class:`h5ml.ingest.ConvertOptions`): compression
        and level, shuffle on write and its seed (drawn when not given),
        workers and processes, on_error, progress, overwrite; their
        ``features`` go over ``features``.
    metadata
        The root metadata (§4.2), as :func:`h5ml.ingest.conversion_metadata` makes it.
    features
        What the converter declares of each feature (:class:`h5ml.FeatureSpec` by key).
    skipped
        Files the source already left out (found while scanning), recorded with the others; their
        ``split`` (when set) counts them for the split they were to go to.

    Returns
    -------
    IngestReport
        Samples written per split, skipped files, time taken.

    Raises
    ------
    IngestError
        With ``on_error="stop"``, for the first item whose decoding failed:
        the message names the file and the reason. Without
        ``options.allow_empty_splits``, for a split left with no sample (every
        file skipped): the message names the split, how many files were
        skipped and the first reasons. The output is unchanged.
    FileExistsError, IsADirectoryError, FileNotFoundError
        As :func:`h5ml.ingest.check_output`.
    h5ml.errors.ParameterError
        If ``options.features`` changes what the source fixes (an encoding, class names).
    h5ml.WriterError, h5ml.MetadataError, h5ml.EncodingError
        If the decoded values cannot be written (for example features that
        differ between samples); the output is unchanged.
    """
    out = check_output(output, options.overwrite, sharded=options.sharded)
    start = time.perf_counter()
    options = options.seeded()
    table = with_user_features(features or {}, options.features)
    report = IngestReport(out, skipped=list(skipped))
    total = sum(len(items) for items in splits.values())
    with (
        ProgressBars(options.progress, total) as bars,
        Writer(out, metadata, features=table, **options.writer_options()) as writer,
    ):
        for name, items in splits.items():
            ordered = list(items)
            if options.seed is not None and options.shuffle:
                ordered = [ordered[i] for i in write_order(len(ordered), options.seed)]
            if not ordered:
                _check_not_empty(name, report, options)
            writer.add_split(name, shuffle_seed=options.shuffle_seed, expected_samples=len(ordered))
            task = bars.add(f"{out.name}: {name}", len(ordered))
            report.samples[name] = _write_split(writer, name, ordered, decode, options, report, bars, task)
            if not report.samples[name]:
                _check_not_empty(name, report, options)
            if options.shuffle_seed is not None and report.samples[name] < len(ordered):
                writer.drop_shuffle_seed(name)  # the seed orders the source samples, not the ones kept (§7.6)
        record_skipped(writer, report)
    report.seconds = time.perf_counter() - start
    return report


def _describe(item: SourceItem, exc: BaseException) -> Skipped:
    if isinstance(exc, DecodeError):
        return Skipped(exc.path, exc.reason, item.split)
    return Skipped(item.first_path, f"{type(exc).__name__}: {exc}", item.split)


def _check_not_empty(split: str, report: IngestReport, options: ConvertOptions) -> None:
    """Refuse a split left with no sample, unless ``allow_empty_splits`` (see the module docstring)."""
    if options.allow_empty_splits:
        return
    lost = [s for s in report.skipped if s.split == split]
    raise IngestError(
        f"split {split!r} would be empty: all {len(lost)} of its file(s) were skipped "
        f"({quote_skipped(lost, _QUOTED)}); nothing "
        f"was written to {report.output}. Fix those files, or write the split with no samples with "
        "allow_empty_splits=True (--allow-empty-splits)",
        path=lost[0].path if lost else None,
    )


def _write_split(
    writer: Writer,
    split: str,
    items: Sequence[SourceItem],
    decode: Callable[[SourceItem], Mapping[str, Any]],
    options: ConvertOptions,
    report: IngestReport,
    bars: ProgressBars,
    task: Any,
) -> int:
    """Decode and append one split's items in order; return the samples written."""
    batch: dict[str, list[Any]] = {}
    count = 0
    for item, result in ordered_map(decode, items, options.workers, processes=options.processes):
        bars.advance(task)
        if isinstance(result, BaseException):
            problem = _describe(item, result)
            if options.on_error == "stop":
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
        if count % BATCH_SAMPLES == 0:
            writer.append(split, stack_columns(batch))
            batch = {}
    if batch:
        writer.append(split, stack_columns(batch))
    return count
