"""Pass 2 over a table: convert each chunk and append its rows to their splits (§5.1, §6).

:func:`write_table` follows the :class:`h5ml.ingest.tables.columns.Plan` of
pass 1: each column's chunk is converted (a cell that does not fit its
column makes its row bad), each row goes to its split (assigned by ratios,
or named by the split column), and bad rows stop the conversion or are
recorded as skipped.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from h5ml import spec
from h5ml.errors import EncodingError, IngestError, WriterError
from h5ml.ingest.naming import natural_key
from h5ml.ingest.progress import ProgressBars
from h5ml.ingest.report import IngestReport, Skipped, record_skipped
from h5ml.ingest.tables.columns import Column, Plan, convert_chunk, take_rows
from h5ml.ingest.tables.read import TableRequest, csv_chunks, parquet_chunks, parquet_file, split_text
from h5ml.writer import Writer

__all__ = ["TableChunk", "table_chunks", "write_table"]

#: One converted chunk: its first data row, the columns' values, each row's split, which rows are good.
TableChunk = tuple[int, dict[str, Any], npt.NDArray[Any], npt.NDArray[np.bool_]]


def _bad_cells(column: Column, chunk: Any, wrong: npt.NDArray[np.bool_], bad: npt.NDArray[np.bool_]) -> dict[int, str]:
    """Why each newly bad row of a chunk is bad: the cell of ``column`` that does not fit it."""
    kind = "boolean" if column.kind.startswith("bool") else "number"
    adjective = "boolean" if column.kind.startswith("bool") else "numeric"
    return {
        i: (
            f"column {column.name!r} holds {chunk[column.name].iloc[i]!r}, which is not a {kind}, but the column is "
            f"{adjective} (its other values are)"
        )
        for i in np.flatnonzero(wrong & ~bad).tolist()
    }


def _splits_of(
    request: TableRequest, plan: Plan, chunk: Any, offset: int, bad: npt.NDArray[np.bool_], reasons: dict[int, str]
) -> npt.NDArray[Any]:
    """The split of each row of a chunk; rows whose split column holds no valid split name are made bad."""
    n = len(chunk)
    if plan.assigned is not None:
        assigned: npt.NDArray[Any] = np.asarray(plan.split_names, dtype=object)[plan.assigned[offset : offset + n]]
        return assigned
    if request.split_column is None:
        return np.full(n, plan.default_split, dtype=object)
    split_of: npt.NDArray[Any] = split_text(chunk[request.split_column]).to_numpy(dtype=object)
    for i, split in enumerate(split_of.tolist()):
        if not bad[i] and (not isinstance(split, str) or not spec.is_valid_name(split)):
            what = "no value" if not isinstance(split, str) else f"{split!r}, not a valid split name"
            reasons[i] = f"the split column {request.split_column!r} holds {what} (§5.1.1)"
            bad[i] = True
    return split_of


def table_chunks(request: TableRequest, plan: Plan, report: IngestReport) -> Iterator[TableChunk]:
    """Read the table chunk by chunk, convert each column as ``plan`` types it, and give each row its split.

    The one conversion of a table's rows: :func:`write_table` appends them to one writer, a Dask task
    (:mod:`h5ml.ingest.dask.tables`) keeps those of its shard.

    Parameters
    ----------
    request
        What to read.
    plan
        What pass 1 found (the columns' types and class names, the split of each row or the split column).
    report
        Its ``output`` is named in the error of a bad row; bad rows skipped are recorded in its ``skipped``.

    Yields
    ------
    TableChunk
        ``(offset, values, split_of, good)``: the chunk's first data row (from 0), column name -> converted
        values (n rows), the split of each row (object array of n), and which rows are not bad (bool, n).

    Raises
    ------
    h5ml.IngestError
        With ``on_error="stop"``, for the first bad row (the file, the row and the column).
    """
    source = request.source
    if request.format == "csv":
        chunks = csv_chunks(request, None)
    else:
        names = [c.name for c in plan.columns]
        chunks = parquet_chunks(parquet_file(source), source, [*names, *request.reserved], request.rows_per_read)
    offset = 0
    for chunk in chunks:
        n = len(chunk)
        bad = np.zeros(n, dtype=bool)
        reasons: dict[int, str] = {}
        values: dict[str, Any] = {}
        for column in plan.columns:
            converted, wrong = convert_chunk(column, chunk[column.name], request.format == "csv")
            values[column.name] = converted
            if wrong is not None and wrong.any():
                reasons.update(_bad_cells(column, chunk, wrong, bad))
                bad |= wrong
        split_of = _splits_of(request, plan, chunk, offset, bad, reasons)
        for i in sorted(reasons):
            where = f"{source}:row {offset + i + 1}"
            if request.on_error == "stop":
                raise IngestError(
                    f"{where} (data rows counted from 1 after the header): {reasons[i]}; nothing was written to "
                    f"{report.output}. Fix the row, or skip bad rows with on_error='skip' (--on-error skip)",
                    path=str(source),
                )
            report.skipped.append(Skipped(where, reasons[i]))
        yield offset, values, split_of, ~bad
        offset += n


def write_table(
    request: TableRequest,
    target: Path,
    plan: Plan,
    meta: Mapping[str, Any],
    features: Mapping[str, Any],
    writer_options: Mapping[str, Any],
    report: IngestReport,
    bars: ProgressBars,
) -> None:
    """Pass 2: convert each chunk and append its rows to their splits.

    Parameters
    ----------
    request
        What to read.
    target
        The file to write (the output, or the staging file when shuffling on write).
    plan
        What pass 1 found.
    meta
        The root metadata.
    features
        The ``features=`` table of the writer: each column's spec, with the user's options over it.
    writer_options
        The compression of the writer.
    report
        Counts rows per split and records the skipped rows.
    bars
        The progress bars (a "writing" bar is added).

    Raises
    ------
    h5ml.IngestError
        With ``on_error="stop"``, for the first bad row (the file, the row and
        the column); or when rows cannot be written.
    """
    source = request.source
    names = [c.name for c in plan.columns]
    task = bars.add(f"{target.name}: writing", plan.rows)
    started: set[str] = set()
    with Writer(target, meta, features=features, **writer_options) as writer:
        for offset, values, split_of, good in table_chunks(request, plan, report):
            n = len(split_of)
            for split in sorted({s for s in split_of[good].tolist()}, key=natural_key):
                rows = np.flatnonzero((split_of == split) & good)
                if split not in started:
                    writer.add_split(split, expected_samples=plan.split_counts.get(split))
                    started.add(split)
                try:
                    writer.append(split, {name: take_rows(values[name], rows) for name in names})
                except (WriterError, EncodingError) as exc:
                    raise IngestError(
                        f"{source}: rows {offset + 1}..{offset + n} cannot be written to split {split!r} ({exc})",
                        path=str(source),
                    ) from exc
                report.count(split, int(rows.size))
            bars.advance(task, n)
        record_skipped(writer, report)
