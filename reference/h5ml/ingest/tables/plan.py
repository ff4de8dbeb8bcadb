"""Pass 1 over a table: type the columns, count the rows and splits, collect class names (§5.1, §6.5).

:func:`plan_table` reads a CSV whole (every cell as text) or a Parquet file's
schema and the columns it must count (null counts, distinct values, split
column), and returns the :class:`h5ml.ingest.tables.columns.Plan` that pass 2
(:mod:`h5ml.ingest.tables.write`) follows.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import numpy as np

from h5ml.errors import IngestError
from h5ml.ingest.attributes import descriptive_spec
from h5ml.ingest.naming import natural_key, standard_split_name
from h5ml.ingest.progress import ProgressBars
from h5ml.ingest.report import Skipped
from h5ml.ingest.splitting import assign_splits
from h5ml.ingest.tables.arrow import ArrayLayout, array_layout, field_info, schema_split
from h5ml.ingest.tables.columns import (
    MAX_LABEL_CLASSES,
    Column,
    Plan,
    TextStats,
    Uniques,
    check_columns,
    count_text,
    csv_kind,
    parquet_kind,
    stored_column,
)
from h5ml.ingest.tables.delimiters import describe_delimiter, missed_delimiter
from h5ml.ingest.tables.read import (
    TableRequest,
    as_text,
    csv_chunks,
    parquet_chunks,
    parquet_file,
    source_split_text,
)

__all__ = ["plan_table"]


def _add_split_counts(counts: dict[str, int], chunk: Any, split_column: str | None) -> None:
    """Count the rows of each split name as the column has it (``valid``, before it becomes ``validation``)."""
    if split_column is not None:
        for split, count in source_split_text(chunk[split_column]).value_counts().items():
            counts[str(split)] = counts.get(str(split), 0) + int(count)


def _finish_plan(
    request: TableRequest, plan: Plan, uniques: Mapping[str, Uniques], split_counts: Mapping[str, int]
) -> Plan:
    """Class names of the categorical columns; the split of each row (ratios) or the split counts (column)."""
    for column in plan.columns:
        if column.kind != "categorical":
            continue
        found = uniques[column.name]
        if found.over:
            raise IngestError(
                f"{request.source}: the label column {column.name!r} has more than {MAX_LABEL_CLASSES} distinct "
                "values, too many for a categorical label; list it in categorical=[...] (--categorical) to store it "
                "so anyway",
                path=str(request.source),
            )
        if column.recorded_names is not None:  # as the export wrote them: the same codes, unused classes kept
            unknown = sorted(set(found.ids) - set(column.recorded_names), key=natural_key)
            if unknown:
                raise IngestError(
                    f"{request.source}: column {column.name!r} holds {unknown[:5]}, which are not among the class "
                    f"names its h5ml metadata records ({column.recorded_names[:10]}); fix the metadata or the values",
                    path=str(request.source),
                )
            column.class_names = list(column.recorded_names)
            continue
        names = found.sorted_names()
        if not names:  # every value missing: one placeholder class keeps the feature valid (§6.5: K >= 1)
            names = ["missing"]
        column.class_names = names
    label, ratios = request.label, request.split_ratios
    if ratios is not None:
        strata = None
        if label is not None and any(c.name == label and c.kind == "categorical" for c in plan.columns):
            strata = uniques[label].row_ids()
        chosen = assign_splits(plan.rows, ratios, request.split_seed, strata)
        plan.split_names = list(ratios)
        index = {name: i for i, name in enumerate(plan.split_names)}
        plan.assigned = np.fromiter((index[s] for s in chosen), dtype=np.int8, count=plan.rows)
        plan.split_counts = {name: int((plan.assigned == i).sum()) for name, i in index.items()}
    elif request.split_column is not None:
        for given, count in split_counts.items():
            name = standard_split_name(given)
            plan.split_counts[name] = plan.split_counts.get(name, 0) + count
            plan.source_splits.setdefault(name, []).append(given)
    else:
        plan.split_counts = {plan.default_split: plan.rows}
    return plan


def _refuse_missed_delimiter(request: TableRequest, chunk: Any) -> None:
    """Stop when a CSV read as one column seems to have another delimiter (:mod:`h5ml.ingest.tables.delimiters`)."""
    found = None if request.delimiter_given else missed_delimiter(chunk, request.header)
    if found is None:
        return
    shown = describe_delimiter(found)
    raise IngestError(
        f"{request.source}: read with the delimiter {describe_delimiter(request.delimiter)}, the table is one column "
        f"({str(chunk.columns[0])[:60]!r}...) whose every value holds {shown} as often: the fields seem to be "
        f"separated by {shown}. Nothing was written. Pass delimiter={found!r} (--delimiter "
        f"{ {chr(9): 'tab', ' ': 'space'}.get(found, repr(found)) }), or delimiter={request.delimiter!r} to keep the one column",
        path=str(request.source),
    )


def _plan_csv(request: TableRequest, bars: ProgressBars) -> Plan:
    """Pass 1 over a CSV: type the columns, count rows and splits, collect class names."""
    source, label = request.source, request.label
    task = bars.add(f"{source.name}: reading", None)
    stats: dict[str, TextStats] = {}
    uniques: dict[str, Uniques] = {}
    names: list[str] = []
    counts: dict[str, int] = {}
    bad_lines: list[Skipped] = []
    rows = 0
    for chunk in csv_chunks(request, bad_lines):
        if not names:
            _refuse_missed_delimiter(request, chunk)
            named = [*request.named, *request.strings, *request.reserved]
            check_columns(source, list(chunk.columns), request.wanted, named, request.reserved)
            wanted = request.wanted
            names = [str(c) for c in chunk.columns if (wanted is None or c in wanted) and c not in request.reserved]
            stats = {n: TextStats() for n in names}
            keep = label is not None and request.split_ratios is not None
            uniques = {n: Uniques(None, False) for n in request.categorical}
            if label is not None and label not in uniques:
                uniques[label] = Uniques(MAX_LABEL_CLASSES, keep)
            elif label is not None:
                uniques[label] = Uniques(None, keep)
        for name in names:
            count_text(stats[name], chunk[name])
        for name, found in uniques.items():
            found.add(chunk[name])
        _add_split_counts(counts, chunk, request.split_column)
        rows += len(chunk)
        bars.advance(task, len(chunk))
    columns: list[Column] = []
    for name in names:
        kind, dtype, integral = csv_kind(stats[name])
        columns.append(stored_column(name, kind, dtype, integral, label, request.categorical, request.strings))
    return _finish_plan(request, Plan(columns, rows, skipped_lines=bad_lines), uniques, counts)


def _plan_parquet(request: TableRequest, bars: ProgressBars) -> Plan:
    """Pass 1 over a Parquet file: types from the schema, null counts, class names, split counts."""
    import pyarrow as pa

    source, label, categorical = request.source, request.label, request.categorical
    pf = parquet_file(source)
    schema = pf.schema_arrow
    named = [*request.named, *request.strings, *request.reserved]
    check_columns(source, schema.names, request.wanted, named, request.reserved)
    wanted = request.wanted
    names = [n for n in schema.names if (wanted is None or n in wanted) and n not in request.reserved]
    nullable = [
        n for n in names if pa.types.is_integer(schema.field(n).type) or pa.types.is_boolean(schema.field(n).type)
    ]
    keep = label is not None and request.split_ratios is not None
    uniques: dict[str, Uniques] = {n: Uniques(None, False) for n in categorical}
    if label is not None:
        uniques[label] = Uniques(None if label in categorical else MAX_LABEL_CLASSES, keep)
    infos = {n: field_info(source, schema.field(n)) for n in names}
    layouts = {n: array_layout(source, n, schema.field(n).type) for n in names}
    recorded = {n: _recorded_names(info) for n, info in infos.items() if layouts[n] is None}
    for name in (n for n in names if pa.types.is_dictionary(schema.field(n).type) or recorded.get(n) is not None):
        uniques.setdefault(name, Uniques(None, False))
    needed = sorted({*nullable, *uniques, *request.reserved})
    nulls = dict.fromkeys(nullable, 0)
    counts: dict[str, int] = {}
    rows = int(pf.metadata.num_rows)
    task = bars.add(f"{source.name}: reading", rows)
    if needed:
        for chunk in parquet_chunks(pf, source, needed, request.rows_per_read):
            for name in nullable:
                nulls[name] += int(chunk[name].isna().sum())
            for name, found in uniques.items():
                found.add(as_text(chunk[name]))
            _add_split_counts(counts, chunk, request.split_column)
            bars.advance(task, len(chunk))
    columns: list[Column] = []
    for name in names:
        layout = layouts[name]
        if layout is not None:
            column = _array_column(request, name, layout)
        else:
            if name in request.strings or name in categorical:  # stored as text: any type will do
                kind, dtype, integral = "string", None, False
            else:
                kind, dtype, integral = parquet_kind(source, name, schema.field(name).type, nulls.get(name, 0))
            column = stored_column(name, kind, dtype, integral, label, categorical, request.strings)
        info = infos[name]
        if info is not None:
            _apply_recorded(request, column, info, recorded.get(name))
        columns.append(column)
    plan = Plan(columns, rows)
    if request.split_column is None and request.split_ratios is None:
        plan.recorded_split = schema_split(schema)  # the split an export wrote, if any
    return _finish_plan(request, plan, uniques, counts)


def _recorded_names(info: Mapping[str, Any] | None) -> list[str] | None:
    """The class names an export recorded of a categorical column, or None."""
    if info is None or info.get("encoding") != "categorical":
        return None
    names = info.get("class_names")
    return None if names is None else list(names)


def _array_column(request: TableRequest, name: str, layout: ArrayLayout) -> Column:
    """The column of a Parquet column of arrays: dense, ragged or bytes (:mod:`h5ml.ingest.tables.arrow`)."""
    for option, listed in (
        ("label", [request.label]),
        ("categorical", request.categorical),
        ("strings", request.strings),
    ):
        if name in listed:
            raise IngestError(
                f"{request.source}: column {name!r} holds arrays (a {layout.kind} feature), which {option}= "
                f"(--{option.replace('_', '-')}) cannot make a {'label' if option == 'label' else option + ' column'}; "
                "name a column of scalars",
                path=str(request.source),
            )
    return Column(name, layout.kind, layout.dtype, role="input", layout=layout)


def _apply_recorded(request: TableRequest, column: Column, info: Mapping[str, Any], names: list[str] | None) -> None:
    """Give a column the attributes an export recorded of it: role, description, units, sample rate, media type,
    and the class names of a categorical column (a string or dictionary column; not one listed in ``strings``)."""
    where = f"the h5ml metadata of column {column.name!r}"
    recorded = descriptive_spec(info, str(request.source), where)
    if column.name != request.label:  # the label is the target, whatever was recorded
        column.role = recorded.role
    media = info.get("media_type")
    column.extra = dataclasses.replace(recorded, role=None, media_type=media if isinstance(media, str) else None)
    if names is not None and column.name not in request.strings and column.kind in ("categorical", "string"):
        column.kind, column.dtype, column.recorded_names = "categorical", None, names


def plan_table(request: TableRequest, bars: ProgressBars) -> Plan:
    """Pass 1 over the table (CSV or Parquet): the columns as they will be stored, the rows, the splits.

    Parameters
    ----------
    request
        What to read.
    bars
        The progress bars (a "reading" bar is added).

    Returns
    -------
    Plan
        The stored columns with their class names, the row count, the split
        of each row (``split_ratios``) or the rows of each split (split column).

    Raises
    ------
    h5ml.IngestError
        If the table cannot be read, a named column is missing, a column name
        is not a feature name, a Parquet type has no feature, or the label has
        more than :data:`h5ml.ingest.tables.MAX_LABEL_CLASSES` classes.
    """
    if request.format == "csv":
        return _plan_csv(request, bars)
    return _plan_parquet(request, bars)
