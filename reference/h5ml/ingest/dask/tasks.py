"""What one Dask task does: write one partition as one shard with h5ml's writer, and describe it (§12.1, §12.4).

Every function here runs on a worker. Each writes its partition with the
ordinary :class:`h5ml.Writer` to ``<split>/<split>-NNNNN.h5`` in the staging
folder of ``OUTDIR`` (:class:`h5ml.writer.shard_folder.ShardFolder`): the
writer builds the file under a hidden temporary name beside it and renames it
onto that name only once it is complete and fsynced (§4.4), so a failed task
leaves no file at its name, and a retried task replaces its own. It then returns the shard's
:class:`~h5ml.model.shard_files.ShardDescription` (read back from the file)
for the driver, which writes the index once every shard is there. A partition
without rows writes nothing and returns None (see
:mod:`h5ml.ingest.dask.writing`).

The values of a partition reach the writer as they are: the feature specs
are inferred from each partition (or given by ``features=``), never cast to
an earlier partition's; the driver compares them (:mod:`h5ml.ingest.dask.run`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from h5ml.errors import IngestError
from h5ml.ingest.dask.outdir import staged_path
from h5ml.ingest.options import ConvertOptions
from h5ml.ingest.pipeline import BATCH_SAMPLES, stack_columns, write_split
from h5ml.ingest.progress import ProgressBars
from h5ml.ingest.report import IngestReport, SourceItem
from h5ml.model.shard_files import ShardDescription, describe_shard
from h5ml.model.values import FeatureSpec, as_categorical
from h5ml.writer import Writer

__all__ = [
    "ShardJob",
    "frame_columns",
    "write_array_partition",
    "write_bag_partition",
    "write_frame_partition",
    "write_items_partition",
]


@dataclass(frozen=True)
class ShardJob:
    """What every task of one job shares: where and how its shard is written (pickled to the workers).

    Attributes
    ----------
    staging
        The staging folder of the dataset's folder (absolute, as the workers see it:
        :class:`h5ml.writer.shard_folder.ShardFolder`); the driver moves the shards into place.
    split
        The one split of every shard.
    metadata
        The dataset card (§4.2), the same in every shard; its ``name`` is set.
    features
        Feature specs given by the caller (``features=``), or None to infer them from each partition.
    compression, level
        As :class:`h5ml.Writer` takes them.
    """

    staging: str
    split: str
    metadata: Mapping[str, Any]
    features: Mapping[str, FeatureSpec | Mapping[str, Any]] | None
    compression: str | None
    level: int | None

    def target(self, number: int) -> Path:
        """Where partition ``number``'s shard is written: its final name, in the staging folder."""
        return staged_path(self.staging, self.split, number)

    def writer(self, number: int) -> Writer:
        """An h5ml writer of partition ``number``'s shard, at its final name (built under a temporary one)."""
        return Writer(
            self.target(number),
            self.metadata,
            features=self.features,
            compression=self.compression,
            compression_opts=self.level,
        )


def _shard(job: ShardJob, number: int, batches: Iterable[Mapping[str, Any]], rows: int) -> ShardDescription | None:
    """Write ``batches`` (column batches of ``rows`` samples in all) as partition ``number``'s shard; describe it."""
    if rows == 0:
        return None
    with job.writer(number) as writer:
        writer.add_split(job.split, expected_samples=rows)
        for batch in batches:
            writer.append(job.split, batch)
    return describe_shard(job.target(number))


def _sample_batches(samples: Sequence[Any], number: int) -> Iterable[dict[str, Any]]:
    """A bag partition's sample dicts as column batches of :data:`BATCH_SAMPLES`, every sample with the same keys."""
    keys: list[str] | None = None
    for start in range(0, len(samples), BATCH_SAMPLES):
        columns: dict[str, list[Any]] = {}
        for offset, sample in enumerate(samples[start : start + BATCH_SAMPLES]):
            if not isinstance(sample, Mapping):
                raise IngestError(
                    f"sample {start + offset} of partition {number} is a {type(sample).__name__}, not a dict of "
                    "feature values; map the bag to {feature: value} dicts first"
                )
            if keys is None:
                keys = sorted(sample)
            if sorted(sample) != keys:
                raise IngestError(
                    f"sample {start + offset} of partition {number} has the features {sorted(sample)}, the "
                    f"partition's first sample {keys}; every sample must give every feature"
                )
            for key in keys:
                columns.setdefault(key, []).append(sample[key])
        yield stack_columns(columns)


def write_bag_partition(samples: Sequence[Any], numbers: Sequence[int], job: ShardJob) -> list[ShardDescription]:
    """Write one partition of a ``dask.bag`` of sample dicts (``{feature: value}``) as one shard.

    Parameters
    ----------
    samples
        The partition's samples, in order.
    numbers
        ``[partition number]`` (the partition of a bag of the numbers, mapped alongside).
    job
        The job's shared settings.

    Returns
    -------
    list
        ``[ShardDescription]``, or ``[]`` for a partition without samples (no shard).

    Raises
    ------
    IngestError
        If a sample is not a dict, or gives other features than the partition's first.
    h5ml.WriterError, h5ml.EncodingError
        As :class:`h5ml.Writer` (values that differ between samples, say).
    """
    (number,) = numbers
    rows = list(samples)
    description = _shard(job, number, _sample_batches(rows, number), len(rows))
    return [] if description is None else [description]


def frame_columns(frame: Any, number: int) -> dict[str, Any]:
    """A pandas partition as the writer's columns, refusing what would be stored wrong (missing values, dates).

    Numeric and boolean columns become numpy arrays; categorical ones stay
    pandas categoricals (the writer stores their codes and categories);
    string and object columns become lists (strings, bytes, or arrays: stacked
    when they share a shape and dtype, ragged otherwise).

    Raises
    ------
    IngestError
        For a named index (it would be dropped: ``reset_index()`` first), a
        missing value (NaN in a non-float column, None, ``pd.NA``), or a
        column of another dtype (dates, intervals), naming the column and partition.
    """
    import pandas as pd

    if any(name is not None for name in frame.index.names):
        raise IngestError(
            f"partition {number}: the dataframe's index {list(frame.index.names)} would not be stored; make it a "
            "column with reset_index() (or drop it with reset_index(drop=True)) first"
        )
    columns: dict[str, Any] = {}
    for name in frame.columns:
        series = frame[name]
        where = f"column {name!r} of partition {number}"
        if isinstance(series.dtype, pd.CategoricalDtype):
            if bool(series.isna().any()):
                raise IngestError(f"{where} has missing values; a categorical feature stores a class for each row")
            columns[str(name)] = as_categorical(series.array)  # per-partition categories differ: refused later
            continue
        if series.dtype.kind not in "biufOSU" and not pd.api.types.is_string_dtype(series.dtype):
            raise IngestError(f"{where} has dtype {series.dtype}, which h5ml does not store; convert it first")
        if series.dtype.kind in "biuf" and isinstance(series.dtype, np.dtype):
            columns[str(name)] = series.to_numpy()
            continue
        values = series.tolist()
        missing = [i for i, value in enumerate(values) if _is_missing(value)]
        if missing:
            raise IngestError(
                f"{where} has a missing value at row {missing[0]} ({len(missing)} in all); h5ml stores no missing "
                "values: fill or drop them first"
            )
        if series.dtype.kind in "biuf":  # pandas' nullable Int64, boolean, Float64 without missing values
            columns[str(name)] = series.to_numpy(dtype=series.dtype.numpy_dtype)
        else:
            columns[str(name)] = stack_columns({str(name): values})[str(name)] if values else values
    return columns


def _is_missing(value: Any) -> bool:
    import pandas as pd

    return value is None or (np.ndim(value) == 0 and not isinstance(value, (str, bytes)) and bool(pd.isna(value)))


def write_frame_partition(frame: Any, number: int, job: ShardJob) -> ShardDescription | None:
    """Write one partition of a ``dask.dataframe`` (a pandas DataFrame, one feature per column) as one shard.

    Returns None for a partition without rows. Raises as :func:`frame_columns` and :class:`h5ml.Writer`.
    """
    columns = frame_columns(frame, number)
    return _shard(job, number, [columns], len(frame))


def write_array_partition(blocks: Mapping[str, Any], number: int, job: ShardJob) -> ShardDescription | None:
    """Write row block ``number`` of a dict of ``dask.array`` s (``{feature: ndarray (n, ...)}``) as one shard.

    Returns None for a block without rows. Raises as :class:`h5ml.Writer`.
    """
    columns = {name: np.asarray(block) for name, block in blocks.items()}
    rows = {len(block) for block in columns.values()}
    if len(rows) != 1:  # the driver rechunked them alike; a defect if not
        raise IngestError(f"row block {number}: the arrays have {sorted(rows)} rows; they must be aligned")
    return _shard(job, number, [columns], rows.pop())


def write_items_partition(
    items: Sequence[SourceItem],
    number: int,
    job: ShardJob,
    decode: Callable[[SourceItem], Mapping[str, Any]],
    options: ConvertOptions,
) -> ShardDescription:
    """Decode items of a converter's plan (an audio or image folder, HDF5 rows) and write them as one shard (§12.4).

    The decoding and the error messages are those of the single-file path
    (:func:`h5ml.ingest.pipeline.write_split`), ``options.workers`` threads
    (or processes) at a time within the task.

    Raises
    ------
    IngestError
        For the first item that fails to decode (its file named): the Dask path stops on errors.
    """
    report = IngestReport(job.target(number))
    with job.writer(number) as writer, ProgressBars(False, len(items)) as bars:
        writer.add_split(job.split, expected_samples=len(items))
        task = bars.add(job.split, len(items))
        write_split(writer, job.split, items, decode, options, report, bars, task, skippable=False)
    return describe_shard(job.target(number))
