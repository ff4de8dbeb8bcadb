"""``h5ml convert TABLE OUTDIR --dask ADDRESS``: a CSV, TSV or Parquet table converted to shards on Dask (§12.4).

The one-process table converter decides from the WHOLE table how every
column is stored (int64 or float64, number or text, the sorted class names of
a categorical column or label) and which split each row goes to
(``split_column``, or ``split_ratios`` stratified on the label): pass 1,
:func:`h5ml.ingest.tables.plan.plan_table`. A partition of the table cannot
decide so. :func:`h5ml.ingest.dask.convert.convert_on_dask` therefore runs
:func:`h5ml.ingest.tables.convert_table` with
:data:`h5ml.ingest.tables.convert.TABLE_RUNNER` set: the converter checks
the options and makes its pass 1 in the driver, as it always does, and hands
its decisions (:class:`~h5ml.ingest.tables.convert.TableConversion`) here.
Each split of ``n`` rows is cut into shards of ``samples_per_shard`` rows in
the split's order (shard ``k`` = rows ``k*N .. (k+1)*N - 1`` of the split, as
the one-process sharded writer cuts them), and one task per shard reads the
table with the same pass-2 conversion
(:func:`h5ml.ingest.tables.write.table_chunks`), keeps the rows of its split
whose rank falls in its range, and writes them with the decided features
(never inferred again). So the shards, and the index fingerprint (§12.3), are
those of ``h5ml convert TABLE OUTDIR --samples-per-shard N``.

Each task reads the table from its start up to its last row (the task of the
last shard of the last split reads it all, so a bad row anywhere stops the
job, as it stops the one-process conversion): the reading is repeated, not
the decisions. Not on Dask (refused by
:func:`h5ml.ingest.dask.convert.convert_on_dask`): shuffle on write and
``on_error="skip"`` (the skipped rows would be recorded by one shard and not
the others, and the card must be shared, §12.2).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from h5ml import spec
from h5ml.errors import IngestError
from h5ml.ingest.dask.run import shards_report, write_on_dask
from h5ml.ingest.dask.tasks import ShardJob
from h5ml.ingest.naming import natural_key
from h5ml.ingest.report import IngestReport
from h5ml.ingest.tables.columns import take_rows
from h5ml.ingest.tables.convert import TableConversion
from h5ml.ingest.tables.write import table_chunks
from h5ml.model.shard_files import ShardDescription, describe_shard

__all__ = ["TablePart", "table_runner", "write_table_partition"]


@dataclass(frozen=True)
class TablePart:
    """The rows of one shard of a table: ranks ``first .. stop - 1`` of its split, in the table's order.

    Attributes
    ----------
    number
        The partition number (the shard's NNNNN).
    first, stop
        The split's rows this shard holds (0-based ranks among the split's rows).
    read_all
        Read the table to its end (the last task), so that every bad row is seen.
    outdir
        The dataset's folder, for messages.
    """

    number: int
    first: int
    stop: int
    read_all: bool
    outdir: str


def write_table_partition(conversion: TableConversion, part: TablePart, job: ShardJob) -> ShardDescription:
    """Write the rows of one shard of a table, converted as one process converts them (runs on a worker; §12.4).

    Parameters
    ----------
    conversion
        The driver's decisions (:class:`~h5ml.ingest.tables.convert.TableConversion`).
    part
        Which rows of ``job.split``.
    job
        Where and how the shard is written; its ``features`` are the decided ones.

    Returns
    -------
    ShardDescription
        The shard written.

    Raises
    ------
    h5ml.IngestError
        For a bad row (as the one-process conversion with ``on_error="stop"``), or if the table holds fewer rows
        of the split than pass 1 counted (it changed since).
    h5ml.WriterError, h5ml.EncodingError
        As :class:`h5ml.Writer`.
    """
    names = [c.name for c in conversion.plan.columns]
    report = IngestReport(Path(part.outdir))
    seen = written = 0  # rows of the split read so far, rows of this shard written
    with job.writer(part.number) as writer:
        writer.add_split(job.split, expected_samples=part.stop - part.first)
        for _offset, values, split_of, good in table_chunks(conversion.request, conversion.plan, report):
            rows = np.flatnonzero((split_of == job.split) & good)
            ranks = seen + np.arange(rows.size)
            seen += int(rows.size)
            keep = rows[(ranks >= part.first) & (ranks < part.stop)]
            if keep.size:
                writer.append(job.split, {name: take_rows(values[name], keep) for name in names})
                written += int(keep.size)
            if seen >= part.stop and not part.read_all:
                break
    if written != part.stop - part.first:
        raise IngestError(
            f"{conversion.request.source}: split {job.split!r} holds {seen} rows now, but {part.stop} or more when "
            "the table was first read; did the file change during the conversion? Run again on a file left as it is",
            path=str(conversion.request.source),
        )
    return describe_shard(job.target(part.number))


def table_runner(
    client: Any, outdir: Path, overwrite: bool, samples_per_shard: int, retries: int, reports: list[IngestReport]
) -> Callable[[TableConversion], IngestReport]:
    """The runner :func:`h5ml.ingest.tables.convert_table` hands its decisions to: one task per shard on ``client``.

    Parameters
    ----------
    client
        A ``distributed.Client``.
    outdir, overwrite
        The dataset's folder, and whether a dataset there may be replaced.
    samples_per_shard
        Rows per shard (the last of a split may hold fewer).
    retries
        How many times a failed task is run again.
    reports
        The report is appended here too (the caller checks that the converter handed its decisions over).

    Returns
    -------
    callable
        ``TableConversion -> IngestReport`` (rows per split; its ``output`` the index written).
    """

    def run(conversion: TableConversion) -> IngestReport:
        start = time.perf_counter()
        counts = {  # the splits as the one-process writer makes them: a name that is no split is a bad row
            split: count
            for split, count in sorted(conversion.plan.split_counts.items(), key=lambda item: natural_key(item[0]))
            if count > 0 and spec.is_valid_name(split)
        }
        if not counts:
            raise IngestError(
                f"{conversion.request.source}: no row of the split column {conversion.request.split_column!r} names "
                "a valid split (§5.1.1); nothing was written. Fix the column's values",
                path=str(conversion.request.source),
            )
        options = conversion.options
        last = next(reversed(counts), None)

        def make_tasks(staging: str) -> tuple[list[Any], list[tuple[str, int]]]:
            from dask.delayed import delayed

            tasks, labels = [], []
            for split, count in counts.items():
                job = ShardJob(staging, split, conversion.meta, conversion.features, options.compression, options.level)
                firsts = range(0, count, samples_per_shard)
                for number, first in enumerate(firsts):
                    every = split == last and number == len(firsts) - 1
                    part = TablePart(number, first, min(count, first + samples_per_shard), every, str(outdir))
                    tasks.append(delayed(write_table_partition, pure=False)(conversion, part, job))
                    labels.append((split, number))
            return tasks, labels

        path, by_split = write_on_dask(outdir, overwrite, client, make_tasks, retries)
        report = shards_report(path, by_split, time.perf_counter() - start, ())
        reports.append(report)
        return report

    return run
