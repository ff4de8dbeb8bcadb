"""``h5ml convert SOURCE OUTDIR --dask ADDRESS``: a folder, a table or HDF5 files converted to shards on Dask (§12.4).

The folder converters (audio, images) and the HDF5 converter scan and check
their sources as they always do, then hand their plan (every split's items in order, the picklable
per-sample decoder, the features and the card) to
:func:`h5ml.ingest.pipeline.ingest`. :func:`convert_on_dask` runs the
converter with :data:`h5ml.ingest.pipeline.PLAN_RUNNER` set, so that the plan
comes here instead of being written to one file: each split's items are cut
into partitions of ``samples_per_shard`` items (the last may be shorter), each
partition is decoded and written by one task as the shard
``<split>/<split>-NNNNN.h5``, and the index comes last
(:mod:`h5ml.ingest.dask.run`). Sample ``i`` of a split in the shards is sample
``i`` of that split in the file ``h5ml convert`` writes without ``--dask``,
and the values are the same, decoded by the same function; the shards are
those ``h5ml convert --samples-per-shard N`` writes in one process (the same
index fingerprint).

There is no progress bar on Dask (the report comes at the end); ``workers``
decodes with that many threads inside each task, and ``processes`` is
refused (the Dask workers are the processes).

Not on Dask yet (refused with a message): shuffle on write (a recorded
``shuffle_seed`` describes one file's order, §7.6), ``on_error="skip"`` (each
shard would record other skipped files, and the shards must share their card),
splits left empty, HDF5 sources read with ``allow_external=True`` (HDF5
resolves external file names in each process's working folder), and the sources that are neither folders, tables nor HDF5
files (``.npz``/``.npy`` arrays, Hugging Face datasets). A table
(``kind="table"``) is decided whole in the driver and written by one task
per shard: :mod:`h5ml.ingest.dask.tables`. HDF5 files (``kind="hdf5"``, one
or several, a plan given back): their plan is made and checked in the
driver, and each task opens the sources itself at the paths the driver
resolved, after checking that it sees the files the driver saw:
:mod:`h5ml.ingest.dask.hdf5`.
"""

from __future__ import annotations

import functools
import json
import os
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from h5ml.errors import IngestError
from h5ml.ingest.dask.clusters import dask_client, parse_address
from h5ml.ingest.dask.hdf5 import hdf5_plan
from h5ml.ingest.dask.outdir import check_target
from h5ml.ingest.dask.run import shards_report, write_on_dask
from h5ml.ingest.dask.tables import table_runner
from h5ml.ingest.dask.tasks import ShardJob, write_items_partition
from h5ml.ingest.dask.writing import dataset_card
from h5ml.ingest.features import with_user_features
from h5ml.ingest.options import ConvertOptions, parameter_error
from h5ml.ingest.pipeline import PLAN_RUNNER
from h5ml.ingest.report import SKIPPED_ATTR, IngestReport, Skipped, SourceItem
from h5ml.ingest.tables.convert import TABLE_RUNNER
from h5ml.model.values import FeatureSpec
from h5ml.writer.shard_folder import check_outdir
from h5ml.writer.shard_naming import parse_samples_per_shard
from h5ml.writer.shard_opening import split_features

__all__ = ["DASK_KINDS", "SAMPLES_PER_SHARD", "TABLE_ROWS_PER_SHARD", "convert_on_dask"]

#: The kinds of source ``--dask`` converts.
DASK_KINDS: Final = ("audio", "images", "table", "hdf5")
#: Samples per shard when ``samples_per_shard`` is not given: about 100-200 MB of speech clips or 224x224 photos,
#: large enough that opening a shard costs little beside reading it, small enough to spread over the workers.
#: HDF5 rows too (give samples_per_shard for small rows: 1000 MNIST digits are 784 kB).
SAMPLES_PER_SHARD: Final = 1000
#: Rows per shard of a table when ``samples_per_shard`` is not given: each task reads the table from its start
#: to its last row (:mod:`h5ml.ingest.dask.tables`), so a table gets fewer, larger shards (a few MB of numbers).
TABLE_ROWS_PER_SHARD: Final = 100_000


def _check_options(kind: str, options: Mapping[str, Any], samples_per_shard: Any) -> int:
    """Refuse what the Dask path does not do (see the module docstring); return ``samples_per_shard``."""
    if kind not in DASK_KINDS:
        raise parameter_error(
            "dask",
            "dask=... (--dask ...) converts audio and images folders, CSV, TSV and Parquet tables, and HDF5 files; "
            f"a source of kind {kind!r} is converted without it, in one process",
        )
    # a table's seed without shuffle only cuts split_ratios, in the driver (h5ml.ingest.dask.tables)
    if options.get("shuffle") or (options.get("seed") is not None and kind != "table"):
        but = (
            " (a table's split_ratios=... (--split-ratios) take seed=... (--seed N) with shuffle=False (--no-shuffle))"
            if kind == "table"
            else ""
        )
        raise parameter_error(
            "shuffle",
            "shuffle on write (shuffle=True (--shuffle), seed=... (--seed)) is not done on Dask: the recorded seed "
            f"orders one file; convert without dask=... (--dask ...), or shuffle when reading{but}",
        )
    if options.get("on_error") not in (None, "stop"):
        raise parameter_error(
            "on_error",
            "on_error='skip' (--on-error skip) is not done on Dask: the shards would each record other skipped "
            "files; fix or remove the bad files, or convert without dask=... (--dask ...)",
        )
    if options.get("processes"):
        raise parameter_error(
            "processes",
            "processes=True (--processes) does not apply with dask=... (--dask ...): the Dask workers are the "
            "processes (local:N starts N); workers=N (--workers N) still decodes with N threads in each task",
        )
    if options.get("shard_size") is not None:
        raise parameter_error(
            "shard_size",
            "shard_size=... (--shard-size ...) does not apply with dask=... (--dask ...): each task writes one "
            "shard of samples_per_shard=N (--samples-per-shard N) samples",
        )
    if options.get("allow_external"):  # Python only: relative external file names resolve in each worker's folder
        raise parameter_error(
            "allow_external",
            "allow_external=True is not done on Dask: HDF5 finds the bytes of external storage and the sources of "
            "virtual datasets relative to each process's working folder, which the workers do not share with the "
            "client; convert without dask=..., or repack the sources with `h5repack` so that their bytes are in them",
        )
    if samples_per_shard is None:
        return TABLE_ROWS_PER_SHARD if kind == "table" else SAMPLES_PER_SHARD
    return parse_samples_per_shard(samples_per_shard)


def _plan_runner(
    kind: str,
    client: Any,
    outdir: Path,
    overwrite: bool,
    samples_per_shard: int,
    retries: int,
    reports: list[IngestReport],
) -> Callable[..., IngestReport]:
    """The runner :func:`h5ml.ingest.pipeline.ingest` hands the converter's plan to (its arguments, as they are)."""

    def run(
        _output: Any,
        splits: Mapping[str, Sequence[SourceItem]],
        decode: Callable[[SourceItem], Mapping[str, Any]],
        options: ConvertOptions,
        *,
        metadata: Mapping[str, Any],
        features: Mapping[str, FeatureSpec] | None = None,
        skipped: Sequence[Skipped] = (),
    ) -> IngestReport:
        start = time.perf_counter()
        card = dict(metadata)
        if skipped:  # left out while scanning: the same list in every shard, as the one file records it (§4.7)
            card[SKIPPED_ATTR] = json.dumps([s.to_json() for s in skipped])
        table = with_user_features(features or {}, options.features)
        for split, items in splits.items():
            if not items:
                raise IngestError(
                    f"split {split!r} has no samples; a sharded dataset written on Dask holds no empty split: "
                    "convert without dask=... (--dask ...) to write it empty",
                )

        write: Callable[..., Any] = write_items_partition
        read = decode
        if kind == "hdf5":  # each task opens the sources at the driver's absolute paths, checked first
            read, write = hdf5_plan(decode)

        def make_tasks(staging: str) -> tuple[list[Any], list[tuple[str, int]]]:
            tasks, labels = [], []
            for split, items in splits.items():
                keys = split_features(table, split, None)  # a key of another split would be refused by the shard
                job = ShardJob(staging, split, card, keys, options.compression, options.level)
                for number, first in enumerate(range(0, len(items), samples_per_shard)):
                    part = list(items[first : first + samples_per_shard])
                    tasks.append(_delayed(write)(part, number, job, read, options))
                    labels.append((split, number))
            return tasks, labels

        path, by_split = write_on_dask(outdir, overwrite, client, make_tasks, retries)
        report = shards_report(path, by_split, time.perf_counter() - start, skipped)
        reports.append(report)
        return report

    return run


def _delayed(fn: Callable[..., Any]) -> Any:
    from dask.delayed import delayed

    return delayed(fn, pure=False)


def convert_on_dask(
    kind: str,
    source: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    outdir: str | os.PathLike[str],
    *,
    dask: str | None = None,
    client: Any = None,
    samples_per_shard: int | None = None,
    retries: int = 0,
    **options: Any,
) -> IngestReport:
    """Convert a folder, a table or HDF5 files to a sharded dataset in ``outdir``, one task per shard on Dask (§12.4).

    Parameters
    ----------
    kind
        ``"audio"``, ``"images"``, ``"table"`` or ``"hdf5"`` (:func:`h5ml.ingest.dispatch.detect_kinds`).
    source
        The folder, the table (``.csv``, ``.tsv``, ``.parquet``: :mod:`h5ml.ingest.dask.tables`), or the HDF5
        files (one path or a list; empty with ``plan=``: :mod:`h5ml.ingest.dask.hdf5`) to convert. The Dask
        workers must see the HDF5 files at the paths the client resolves them to.
    outdir
        The dataset's folder: new, empty, or holding a sharded dataset to replace with ``overwrite``
        (:class:`h5ml.writer.shard_folder.ShardFolder`); named like an HDF5 file or inside ``source``: refused.
    dask
        ``"tcp://host:port"`` of a running scheduler, or ``"local:N"`` for N local worker processes started and
        closed here (``--dask``); ignored when ``client`` is given.
    client
        A ``distributed.Client`` to run on instead.
    samples_per_shard
        Items per partition, hence samples per shard (the last shard of a split may hold fewer); None:
        :data:`SAMPLES_PER_SHARD` (:data:`TABLE_ROWS_PER_SHARD` for a table).
    retries
        How many times a failed task is run again.
    **options
        The converter's options, as :func:`h5ml.ingest.dispatch.convert` takes them (``overwrite``,
        ``metadata``, ``compression``, ``sample_rate``, ``size``, ``plan``, ``label``, ...), but shuffling,
        ``on_error="skip"``, ``processes``, ``shard_size`` and ``allow_external``.

    Returns
    -------
    IngestReport
        Samples per split; its ``output`` is the index written.

    Raises
    ------
    h5ml.errors.ParameterError
        For a source kind, an option or a ``dask`` address the Dask path does not take (named).
    h5ml.IngestError
        As the converter (nothing is written then: an HDF5 plan to confirm, or files that disagree, are refused
        as without Dask), or if a partition fails (named, and the file and HDF5 path for HDF5 sources; no index
        is written), or a worker does not see an HDF5 source as the client does (named).
    FileExistsError, NotADirectoryError, FileNotFoundError
        As :class:`~h5ml.writer.shard_folder.ShardFolder` and :func:`~h5ml.ingest.dask.outdir.check_target`,
        before the source is scanned.
    OSError
        If the scheduler cannot be reached.
    """
    from h5ml.ingest import dispatch

    per_shard = _check_options(kind, options, samples_per_shard)
    options.pop("shard_size", None)
    if client is None and dask is None:
        raise parameter_error("dask", "give dask='tcp://host:port' or dask='local:N' (--dask), or client=")
    if client is None:
        parse_address(dask)  # before anything is created
    given = [source] if isinstance(source, (str, os.PathLike)) else list(source)
    out = check_target(outdir, tuple(Path(s) for s in given))
    overwrite = bool(options.get("overwrite"))
    check_outdir(out, overwrite)  # before the source is scanned; the runner opens the folder itself
    options["metadata"] = dataset_card(out, options.get("metadata"))
    run = functools.partial(_convert, dispatch.convert, kind, source, options, out, overwrite, per_shard, retries)
    if client is not None:
        return run(client)
    assert dask is not None
    with dask_client(dask) as own:
        return run(own)


def _convert(
    convert: Callable[..., IngestReport],
    kind: str,
    source: Any,
    options: dict[str, Any],
    out: Path,
    overwrite: bool,
    per_shard: int,
    retries: int,
    client: Any,
) -> IngestReport:
    """Run the converter with :data:`~h5ml.ingest.pipeline.PLAN_RUNNER` set: its plan is written on ``client``."""
    placeholder = out.parent / f".{out.name}.h5ml-dask-plan.h5"  # the converter checks an output file; none is made
    reports: list[IngestReport] = []
    if kind == "table":  # the whole-table decisions come here (h5ml.ingest.dask.tables)
        table_token = TABLE_RUNNER.set(table_runner(client, out, overwrite, per_shard, retries, reports))
        try:
            convert(kind, source, placeholder, **options)
        finally:
            TABLE_RUNNER.reset(table_token)
    else:
        token = PLAN_RUNNER.set(_plan_runner(kind, client, out, overwrite, per_shard, retries, reports))
        try:
            convert(kind, source, placeholder, **options)
        finally:
            PLAN_RUNNER.reset(token)
    if len(reports) != 1:  # the converter returned without handing over a plan: a defect
        raise IngestError(f"the {kind} converter wrote no plan for {source}; nothing was written to {out}")
    return reports[0]
