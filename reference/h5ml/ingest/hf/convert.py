"""The Hugging Face converter: :func:`convert_huggingface` (§4, §5, §6, §7.6).

Loads the source (:mod:`h5ml.ingest.hf.source`), plans its columns
(:mod:`h5ml.ingest.hf.columns`), reads what its media columns need
(:mod:`h5ml.ingest.hf.media`), then converts the rows batch by batch
(:mod:`h5ml.ingest.hf.values`, in the workers when a column is decoded) and
writes them in order through one :class:`h5ml.Writer`.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from h5ml.errors import IngestError
from h5ml.ingest.docstrings import SPLIT_SEED_NOTE, shared_doc
from h5ml.ingest.hf.columns import (
    AudioColumns,
    ImageColumns,
    apply_user_specs,
    declare,
    feature_kwargs,
    import_datasets,
    plan_columns,
)
from h5ml.ingest.hf.media import DEFAULT_BATCH_SIZE, MEDIA_BATCH_SIZE, iter_tables, plain_arrays, settle_media
from h5ml.ingest.hf.source import Part, card_metadata, first_info, load_source, target_splits
from h5ml.ingest.hf.values import convert_task
from h5ml.ingest.options import SHARD_OPTIONS, SHARED_OPTIONS, ConvertOptions, OnError, check_choice, parameter_error
from h5ml.ingest.output import check_output, conversion_metadata
from h5ml.ingest.parallel import ordered_map
from h5ml.ingest.progress import ProgressBars
from h5ml.ingest.provenance import Entry, NamedBy, record, source_split
from h5ml.ingest.report import IngestReport, record_skipped
from h5ml.model.values import FeatureSpec
from h5ml.sampling.seeds import write_order
from h5ml.writer import Writer

if TYPE_CHECKING:  # pragma: no cover
    import datasets

__all__ = ["convert_huggingface"]


def _origins(label_text: str, parts: Mapping[str, Part], ratios: Mapping[str, float] | None) -> dict[str, list[Entry]]:
    """Each split's record of source splits (:mod:`h5ml.ingest.provenance`).

    A ``DatasetDict`` key or a ``Dataset``'s own split names its part
    (``"group"``); a ``Dataset`` without a split is cut by ``split_ratios``
    (``"option"``) or the default ratios (``"default"``).
    """
    unnamed: NamedBy = "option" if ratios is not None else "default"
    return {
        name: [source_split(label_text, part.source_split, unnamed if part.source_split is None else "group")]
        for name, part in parts.items()
    }


def _write_split(
    writer: Writer,
    name: str,
    part: Part,
    label: str,
    size: int,
    options: ConvertOptions,
    report: IngestReport,
    bars: ProgressBars,
    task: Any,
) -> int:
    """Convert and append one target split's rows in order; return the samples written."""
    convert = functools.partial(convert_task, part.columns, label, part.source_split)
    names = [c.name for c in part.columns]
    tasks = ((rows, arrays) for rows, table in iter_tables(part, size, names) for arrays in (plain_arrays(table),))
    count = 0
    for _, outcome in ordered_map(convert, tasks, options.workers, processes=options.processes):
        if isinstance(outcome, Exception):
            raise outcome
        result = outcome
        for row, problem in result.problems:
            if options.on_error == "stop":
                raise IngestError(
                    f"{problem.path}: {problem.reason} (row {row}, going to split {name!r}); nothing was written to "
                    f"{writer.path}. Fix or drop that row (Dataset.filter, Dataset.map), or skip bad rows with "
                    "on_error='skip' (--on-error skip)",
                    path=problem.path,
                )
            report.skipped.append(problem)
        if result.count:
            writer.append(name, result.values)
            count += result.count
        bars.advance(task, result.count + len(result.problems))
    return count


@shared_doc(
    (*SHARED_OPTIONS, *SHARD_OPTIONS),
    notes={
        "metadata": "It goes over the dataset card's fields (description, license, citation, homepage, name).",
        "features": (
            "Keys that match no converted column are refused. The dtype, sample rate and media type may be "
            "given; the encoding and the class names follow from the source's feature types."
        ),
        "seed": SPLIT_SEED_NOTE,
        "workers": (
            'They convert batches when a column must be decoded (``images="pixels"``, ``audio="samples"``); '
            "other datasets are converted in this thread, which is faster than sending them."
        ),
    },
)
def convert_huggingface(
    source: datasets.Dataset | datasets.DatasetDict | str | os.PathLike[str],
    output: str | os.PathLike[str],
    *,
    splits: Sequence[str] | Mapping[str, str] | None = None,
    columns: Sequence[str] | None = None,
    images: ImageColumns = "bytes",
    audio: AudioColumns = "samples",
    split_ratios: Mapping[str, float] | None = None,
    label: str | None = None,
    batch_size: int | None = None,
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
    """Convert a Hugging Face dataset to an h5ml file (§4, §5, §6, §7.6).

    The feature types and the encodings they become are in
    :mod:`h5ml.ingest.hf`.

    Parameters
    ----------
    source
        A ``datasets.Dataset``, a ``datasets.DatasetDict``, or the directory
        of one saved with ``save_to_disk``. Streaming (``IterableDataset``)
        sources are refused.
    output
        The h5ml file to write (see :func:`h5ml.ingest.check_output`).
    splits
        Which source splits to convert: a list of their names, or a mapping
        source name -> h5ml split name (renaming). Default: every split, each
        under its standard name (:func:`h5ml.ingest.naming.standard_split_name`).
    columns
        The columns to convert, in this order; default every column.
    images
        ``"bytes"``: store Image columns as the encoded files (bytes, §6.6);
        ``"pixels"``: decode them to uint8 (etc.) arrays ``(H, W[, C])``:
        dense when every image has the same size, else ragged with shapes.
        Pixels mode reads every image's header once before converting.
    audio
        ``"samples"``: decode Audio columns with soundfile to float32 ragged
        samples ``(frames[, channels])`` in [-1, 1] with ``sample_rate`` (Hz);
        ``"bytes"``: store the encoded files.
    split_ratios
        For a ``Dataset`` without a split: split name -> fraction (default
        :data:`h5ml.ingest.hf.DEFAULT_SPLIT_RATIOS`), stratified on ``label``.
        Refused for a ``DatasetDict``.
    label
        The column ``split_ratios`` stratifies on; default (None) the first
        ``ClassLabel`` column (no stratification when there is none).
    batch_size
        Rows read, converted and written at once; default
        :data:`h5ml.ingest.hf.MEDIA_BATCH_SIZE` when the dataset has Image or
        Audio columns, else :data:`h5ml.ingest.hf.DEFAULT_BATCH_SIZE`. Memory
        is about ``batch_size`` rows per batch in flight (``4 * workers``
        batches with workers).
    {shared_parameters}

    Returns
    -------
    IngestReport
        Samples written per split, rows skipped (``path`` is
        ``"<source>:<split>[<row>]"``), time taken.

    Raises
    ------
    ImportError
        If ``datasets`` is not installed (``pip install "h5ml[hf]"``).
    FileNotFoundError
        If ``source`` is a path that does not exist.
    TypeError
        If ``source`` is not one of the kinds above.
    {shared_raises}
    h5ml.errors.ParameterError
        Also if an option is invalid (``images``, ``audio``, ``batch_size``,
        an unknown split or column, ``split_ratios`` with a ``DatasetDict``,
        ``features=`` that changes an encoding or names no column, ...).
    IngestError
        If a column has a feature type h5ml cannot store, names do not fit
        §5.1, two splits map to one name, a saved dataset cannot be loaded, or
        (``on_error="stop"``) a row cannot be converted. The output is unchanged.
    h5ml.WriterError, h5ml.EncodingError, h5ml.MetadataError
        If the values or the metadata cannot be written; the output is unchanged.
    """
    options = ConvertOptions.pick(locals())
    hf = import_datasets()
    check_choice("images", images, ("bytes", "pixels"))
    check_choice("audio", audio, ("samples", "bytes"))
    if batch_size is not None and (isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1):
        raise parameter_error("batch_size", f"batch_size must be an integer >= 1, got {batch_size!r}")
    start = time.perf_counter()
    loaded, label_text, source_path = load_source(hf, source)
    out = check_output(
        output, options.overwrite, [source_path] if source_path is not None else [], sharded=options.sharded
    )
    parts = target_splits(hf, loaded, label_text, splits, split_ratios, label, options.seed)  # the seed given
    for part in parts.values():
        part.columns = plan_columns(part.dataset, columns, images, audio, label_text, part.source_split)
    settle_media(parts, label_text)
    options = options.seeded()
    if options.shuffle and options.seed is not None:  # seeded() drew one when none was given
        for part in parts.values():
            order = write_order(part.count, options.seed)
            part.rows = order.astype(np.int64) if part.rows is None else part.rows[order]
    declarations = {name: {c.name: declare(c) for c in part.columns} for name, part in parts.items()}
    declarations = apply_user_specs(declarations, options.features)
    given = {**card_metadata(first_info(loaded)), **(options.metadata or {})}
    root = record(
        conversion_metadata("Hugging Face dataset", label_text, given, out), _origins(label_text, parts, split_ratios)
    )
    has_media = any(c.kind in ("media_bytes", "pixels", "audio") for p in parts.values() for c in p.columns)
    size = batch_size or (MEDIA_BATCH_SIZE if has_media else DEFAULT_BATCH_SIZE)
    decoding = any(c.kind in ("pixels", "audio") for p in parts.values() for c in p.columns)
    in_flight = options if decoding else dataclasses.replace(options, workers=1, processes=False)
    report = IngestReport(out)
    with (
        ProgressBars(options.progress, sum(p.count for p in parts.values())) as bars,
        Writer(out, root, **options.writer_options()) as writer,
    ):
        for name, part in parts.items():
            writer.add_split(name, shuffle_seed=options.shuffle_seed, expected_samples=part.count)
            for column in part.columns:
                writer.add_feature(name, column.name, **feature_kwargs(declarations[name][column.name]))
            task = bars.add(f"{out.name}: {name}", part.count)
            report.samples[name] = _write_split(writer, name, part, label_text, size, in_flight, report, bars, task)
            if options.shuffle_seed is not None and report.samples[name] < part.count:
                writer.drop_shuffle_seed(name)  # the seed orders the source rows, not the ones kept (§7.6)
        record_skipped(writer, report)
    report.seconds = time.perf_counter() - start
    return report
