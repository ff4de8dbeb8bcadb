"""The table converter: :func:`convert_table` (§5, §6, §7.6).

Checks the options into a :class:`h5ml.ingest.tables.read.TableRequest`,
types the columns in a first pass (:mod:`h5ml.ingest.tables.plan`), writes
the rows in a second (:mod:`h5ml.ingest.tables.write`), through a staging
file when shuffling on write (:class:`h5ml.ingest.shuffling.ShuffleStage`).
With :data:`TABLE_RUNNER` set (``h5ml convert TABLE OUTDIR --dask ...``),
the whole-table decisions of pass 1 (:class:`TableConversion`) go to it
instead of pass 2, so that the partitions of a Dask job write what one
process writes (:mod:`h5ml.ingest.dask.tables`, §12.4).
"""

from __future__ import annotations

import codecs
import os
import time
from collections.abc import Callable, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from h5ml import spec
from h5ml.errors import IngestError
from h5ml.ingest.docstrings import SPLIT_SEED_NOTE, shared_doc
from h5ml.ingest.features import with_user_features
from h5ml.ingest.naming import name_list
from h5ml.ingest.options import SHARD_OPTIONS, SHARED_OPTIONS, ConvertOptions, OnError, parameter_error
from h5ml.ingest.output import check_output, conversion_metadata
from h5ml.ingest.progress import ProgressBars
from h5ml.ingest.provenance import Entry, record, source_split
from h5ml.ingest.report import IngestReport
from h5ml.ingest.shuffling import ShuffleStage
from h5ml.ingest.splitting import check_ratios, split_seed
from h5ml.ingest.tables.columns import Plan
from h5ml.ingest.tables.delimiters import check_delimiter
from h5ml.ingest.tables.plan import plan_table
from h5ml.ingest.tables.read import DEFAULT_ROWS_PER_READ, TableFormat, TableRequest, format_of
from h5ml.ingest.tables.write import write_table
from h5ml.model.values import FeatureSpec

__all__ = ["TABLE_RUNNER", "TableConversion", "convert_table"]


@dataclass(frozen=True)
class TableConversion:
    """The decisions :func:`convert_table` makes from the whole table, before any row is written (pickled to workers).

    Attributes
    ----------
    request
        The checked options: what to read and how.
    plan
        Pass 1: the stored columns (types, class names), the row count, the split of each row (ratios) or the
        rows of each split.
    meta
        The root metadata (the dataset card, with the record of source splits: §4.2).
    features
        The writer's ``features=`` table: each column's spec, the user's ``features`` over it.
    options
        The shared conversion options (compression, ``on_error``, ...).
    """

    request: TableRequest
    plan: Plan
    meta: Mapping[str, Any]
    features: Mapping[str, Any]
    options: ConvertOptions


#: When set, :func:`convert_table` hands its :class:`TableConversion` to this function and returns its report
#: instead of writing the rows itself (as :data:`h5ml.ingest.pipeline.PLAN_RUNNER` does for folders).
TABLE_RUNNER: ContextVar[Callable[[TableConversion], IngestReport] | None] = ContextVar("TABLE_RUNNER", default=None)

_NOT_USED = "Not used: pandas and pyarrow parse the table in this process."


def _delimiter(delimiter: str | None, sep: str | None) -> str | None:
    """``delimiter``, or ``sep`` (its former name) when only that is given."""
    if sep is not None and delimiter is not None and sep != delimiter:
        raise parameter_error("delimiter", f"sep is the former name of delimiter; give one, not sep={sep!r} too")
    return delimiter if delimiter is not None else sep


def _origins(src: Path, request: TableRequest, plan: Plan) -> dict[str, list[Entry]]:
    """Each split's record of source splits (:mod:`h5ml.ingest.provenance`): the column's names, ratios, or train."""
    if request.split_ratios is not None:
        return {name: [source_split(src, None, "option")] for name in plan.split_names}
    if request.split_column is None and plan.recorded_split is not None:  # an h5ml export's split, as HF splits
        return {plan.recorded_split: [source_split(src, plan.recorded_split, "group")]}
    if request.split_column is None:
        return {name: [source_split(src, None, "default")] for name in plan.split_counts}
    return {  # names that break §5.1.1 stop the conversion or skip their rows: they name no split
        name: [source_split(src, found, "column") for found in names]
        for name, names in plan.source_splits.items()
        if spec.is_valid_name(name)
    }


def _request(
    src: Path,
    kind: TableFormat,
    options: ConvertOptions,
    *,
    label: str | None,
    categorical: Sequence[str],
    strings: Sequence[str],
    split_column: str | None,
    split_ratios: Mapping[str, float] | None,
    columns: Sequence[str] | None,
    delimiter: str | None,
    header: bool,
    text_encoding: str,
    rows_per_read: int,
) -> TableRequest:
    """The checked request of one conversion (the columns to read, the options that name columns)."""
    if split_column is not None and split_ratios is not None:
        raise parameter_error("split_ratios", "give split_column or split_ratios, not both")
    if not isinstance(header, bool):
        raise parameter_error("header", f"header must be True or False, got {header!r}")
    if kind == "parquet" and (delimiter is not None or not header):
        given = "delimiter" if delimiter is not None else "header=False"
        raise parameter_error(
            "delimiter" if delimiter is not None else "header",
            f"{given} applies to CSV files; {src} is Parquet, whose columns are named and typed by its schema",
        )
    if isinstance(rows_per_read, bool) or not isinstance(rows_per_read, int) or rows_per_read < 1:
        raise parameter_error("rows_per_read", f"rows_per_read must be an integer >= 1, got {rows_per_read!r}")
    try:
        codecs.lookup(text_encoding)
    except (LookupError, TypeError):
        raise parameter_error("text_encoding", f"text_encoding {text_encoding!r} is not a codec Python knows") from None
    categorical, strings = (
        tuple(name_list("categorical", categorical) or ()),
        tuple(name_list("strings", strings) or ()),
    )
    listed = name_list("columns", columns)
    wanted = None if listed is None else [c for c in listed if c != split_column]
    for name in [*([] if label is None else [label]), *categorical, *strings]:
        if wanted is not None and name not in wanted:
            wanted.append(name)
    return TableRequest(
        source=src,
        format=kind,
        delimiter=check_delimiter(delimiter)
        if delimiter is not None
        else "\t"
        if src.suffix.lower() == ".tsv"
        else ",",
        delimiter_given=delimiter is not None,
        header=header,
        text_encoding=text_encoding,
        rows_per_read=rows_per_read,
        on_error=options.on_error,
        wanted=None if wanted is None else tuple(wanted),
        reserved=() if split_column is None else (split_column,),
        label=label,
        categorical=categorical,
        strings=strings,
        split_column=split_column,
        split_ratios=None if split_ratios is None else check_ratios(split_ratios),
        split_seed=split_seed(options.seed),  # the seed given, not one drawn to shuffle
    )


@shared_doc(
    (*SHARED_OPTIONS, *SHARD_OPTIONS),
    notes={
        "seed": SPLIT_SEED_NOTE,
        "shuffle": (
            "The rows are first written to a staging file beside ``output`` (as much disk again), then copied in "
            "that order by :func:`h5ml.ingest.shuffling.copy_shuffled`."
        ),
        "workers": _NOT_USED,
        "processes": _NOT_USED,
        "on_error": (
            "A bad row is one with more fields than the header, a cell that is not a number in a numeric column, "
            "or no split; it is recorded as ``<file>:line <l>`` (too many fields) or ``<file>:row <i>`` (data "
            "rows counted from 1 after the header, not counting the rows left out for too many fields)."
        ),
    },
)
def convert_table(
    source: str | os.PathLike[str],
    output: str | os.PathLike[str],
    *,
    label: str | None = None,
    categorical: Sequence[str] = (),
    strings: Sequence[str] = (),
    split_column: str | None = None,
    split_ratios: Mapping[str, float] | None = None,
    columns: Sequence[str] | None = None,
    format: TableFormat | None = None,
    delimiter: str | None = None,
    header: bool = True,
    sep: str | None = None,
    text_encoding: str = "utf-8",
    rows_per_read: int = DEFAULT_ROWS_PER_READ,
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
    """Convert a CSV or Parquet table to an h5ml file, one feature per column (§5, §6).

    See :mod:`h5ml.ingest.tables` for how columns are typed and stored, the
    splits, and what is held in memory.

    Parameters
    ----------
    source
        The ``.csv``/``.tsv`` or ``.parquet`` file (see ``format``). CSV files
        have a header row unless ``header=False``. A Parquet file written by
        ``h5ml export`` converts back with its split, encodings and attributes
        (see :mod:`h5ml.ingest.tables`).
    output
        The h5ml file to write.
    label
        The column to predict: role ``target``; categorical (§6.5) unless it
        holds fractional numbers; the stratum of ``split_ratios``.
    categorical
        Columns to store categorical (any type; class names are the values as
        text, sorted; missing values code -1).
    strings
        Columns to store as text whatever they hold (codes such as ``"00123"``
        that look like numbers), missing values ``""``.
    split_column
        A column naming each row's split (``train``, ``valid``, ``test``, or
        any valid split name); not stored. A row with no split is an error
        (skipped with ``on_error="skip"``).
    split_ratios
        ``{"train": 0.8, "test": 0.2}``: give rows splits at random with
        these shares, stratified on a categorical ``label``, deterministically
        for ``seed`` (0 when None). Not with ``split_column``. With neither,
        every row goes to ``train``.
    columns
        The columns to convert (default: all); ``split_column`` is read either way.
    format
        ``"csv"`` or ``"parquet"``; None: from the suffix (:data:`h5ml.ingest.tables.TABLE_FORMATS`).
    delimiter
        The CSV field delimiter, one character (``";"``, ``"|"``, ``" "``,
        ``"\\t"``); default ``","`` (``"\\t"`` for ``.tsv``). A table that
        parses as one column whose values all hold a space, tab, ``;`` or
        ``|`` the same number of times (in the first ``rows_per_read`` rows,
        and in the header) is refused unless ``delimiter`` is given: give the
        delimiter it has (or ``","`` to keep the one column).
    header
        Whether the CSV's first line names the columns (default True). With
        False every line is data and the columns are named ``c0``, ``c1``, ...
        (what ``label``, ``columns`` and the other options name).
    sep
        The former name of ``delimiter``, still accepted (not with a different ``delimiter``).
    text_encoding
        The CSV text codec (``"utf-8"``, ``"latin-1"``, ... as Python names them).
    rows_per_read
        CSV rows read at a time (a pandas chunk; at most this many per Parquet
        batch); memory grows with it.
    {shared_parameters}

    Returns
    -------
    IngestReport
        Rows written per split, skipped rows, time taken.

    Raises
    ------
    FileNotFoundError
        If ``source`` does not exist.
    IngestError
        If the file cannot be read as CSV/Parquet, a named column does not
        exist, a column name is not a valid feature name, a Parquet type has
        no feature, a sample of a Parquet column of arrays is null, a value
        is not among the class names a Parquet file records, the label has more than :data:`h5ml.ingest.tables.MAX_LABEL_CLASSES`
        classes (list it in ``categorical`` to allow it), the table has no
        rows, a CSV read as one column seems to have another delimiter (see
        ``delimiter``), or (``on_error="stop"``) a row is bad.
    {shared_raises}
    h5ml.errors.ParameterError
        Also if options contradict (``split_column`` with ``split_ratios``),
        the ratios are invalid, ``rows_per_read < 1``, the codec is unknown,
        ``delimiter`` is not one character (or is given with ``sep``, or
        with ``header=False``, for a Parquet file),
        or ``categorical``, ``strings`` or ``columns`` is not a list of names.
    """
    options = ConvertOptions.pick(locals())
    start = time.perf_counter()
    src = Path(source)
    if not src.exists():
        raise FileNotFoundError(f"{src}: no such file")
    request = _request(
        src,
        format_of(src, format),
        options,
        label=label,
        categorical=categorical,
        strings=strings,
        split_column=split_column,
        split_ratios=split_ratios,
        columns=columns,
        delimiter=_delimiter(delimiter, sep),
        header=header,
        text_encoding=text_encoding,
        rows_per_read=rows_per_read,
    )
    out = check_output(output, options.overwrite, [src], sharded=options.sharded)
    with ProgressBars(options.progress, 1) as bars:
        plan = plan_table(request, bars)
        if plan.rows == 0:
            raise IngestError(f"{src}: the table has no rows; nothing to convert", path=str(src))
        meta = record(
            conversion_metadata(f"{request.format.upper()} table", src, options.metadata, out),
            _origins(src, request, plan),
        )
        table = with_user_features({c.name: c.spec() for c in plan.columns}, options.features)
        runner = TABLE_RUNNER.get()
        if runner is not None:
            return runner(TableConversion(request, plan, meta, table, options))
        report = IngestReport(out, skipped=list(plan.skipped_lines))
        with ShuffleStage(out, options.seeded()) as stage:
            write_table(request, stage.target, plan, meta, table, stage.writer_options(), report, bars)
            stage.finish(report)
    report.seconds = time.perf_counter() - start
    return report
