"""``to_h5ml``: a Dask collection written as a sharded h5ml dataset, one shard per partition, in parallel (§12.4).

The rules, as the docstring of :func:`to_h5ml` states them:

- shard ``i`` holds partition ``i`` and is named ``<split>/<split>-NNNNN.h5``
  (NNNNN = ``i`` in 5 digits); the index lists the shards in partition order,
  so the dataset (every sample, every fingerprint, the index fingerprint) is
  the same whatever the number of workers and the order tasks finish in;
- a partition without rows writes no shard and is left out of the index (its
  number is skipped in the names); a collection whose every partition is
  empty is refused;
- every shard carries the same card (``metadata``, ``name`` defaulting to the
  folder's name);
- the features are inferred from each partition unless ``features=`` gives
  them; a partition whose inferred encoding, dtype or sample shape differs
  from the first non-empty partition's is refused, naming it (never cast);
- the index is written last, atomically, only after every task succeeded.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from h5ml.errors import ParameterError
from h5ml.ingest.dask.clusters import current_client
from h5ml.ingest.dask.outdir import check_target
from h5ml.ingest.dask.partitions import partition_tasks
from h5ml.ingest.dask.run import write_on_dask
from h5ml.ingest.dask.tasks import ShardJob
from h5ml.model.shard_index import ShardIndex, load_index
from h5ml.model.values import FeatureSpec
from h5ml.writer.arguments import check_name

__all__ = ["dataset_card", "to_h5ml"]


def dataset_card(outdir: Path, metadata: Mapping[str, Any] | None) -> dict[str, Any]:
    """The root metadata every shard gets: ``metadata`` over ``name`` = the folder's name (§4.2, §12.2).

    Raises
    ------
    h5ml.errors.ParameterError
        If ``metadata`` is not a dict or None.
    """
    if metadata is not None and not isinstance(metadata, Mapping):
        raise ParameterError(f"metadata must be a dict or None, got a {type(metadata).__name__} (parameter metadata)")
    return {"name": outdir.resolve().name, **(metadata or {})}


def to_h5ml(
    collection: Any,
    outdir: str | os.PathLike[str],
    *,
    split: str = "train",
    metadata: Mapping[str, Any] | None = None,
    features: Mapping[str, FeatureSpec | Mapping[str, Any]] | None = None,
    compression: str | None = None,
    level: int | None = None,
    overwrite: bool = False,
    client: Any = None,
    retries: int = 0,
) -> ShardIndex:
    """Write a Dask collection as a sharded h5ml dataset: one shard per partition, in parallel, then the index (§12.4).

    Each partition is written by one task on the cluster with h5ml's writer
    into the folder's staging folder (built under a temporary name, renamed
    onto ``<split>/<split>-NNNNN.h5`` when complete); once every task has
    succeeded the shards are moved into place and the index
    ``OUTDIR/index.json`` is written last, atomically: a failed or retried task
    never leaves an index that lists an incomplete shard.

    Parameters
    ----------
    collection
        A ``dask.bag.Bag`` of sample dicts ``{feature: value}`` (values as
        :meth:`h5ml.Writer.append_sample` takes them), a ``dask.dataframe.DataFrame``
        (one feature per column: numeric, boolean, string, categorical, or object
        columns of arrays or bytes; no missing values, no named index), or a dict
        ``{feature: dask.array.Array}`` whose arrays have the same length N along
        axis 0 (one sample per row; rechunked to the first array's row chunks).
    outdir
        The dataset's folder: created if missing; if it exists it must be empty, or hold a sharded dataset (its
        ``index.json``), replaced with ``overwrite`` (its shards that the new index does not list are removed;
        other files are left alone).
    split
        The split the samples go to (§5.1.1).
    metadata
        The dataset card (§4.2), the same in every shard; ``name`` defaults to the folder's name.
    features
        Feature specs (:class:`h5ml.FeatureSpec` or dicts) by name; None infers them from each partition.
    compression, level
        As :class:`h5ml.Writer`: ``"gzip"`` (level 0-9), ``"zstd"`` (needs hdf5plugin) or None.
    overwrite
        Replace the sharded dataset already in ``outdir``; if the job fails, it is left as it was.
    client
        The ``distributed.Client`` to run on; None uses the current one.
    retries
        How many times a failed task is run again (``Client.compute(retries=)``); a rerun task replaces its own
        shard.

    Returns
    -------
    ShardIndex
        The index written to ``outdir/index.json`` (its ``fingerprint`` is the index fingerprint, §12.3).

    Raises
    ------
    h5ml.errors.ParameterError
        For another kind of collection, arrays that are not aligned, a wrong ``split`` or ``metadata``, or no
        client to run on.
    h5ml.IngestError
        If a partition fails after its retries (named, with its shard; nothing is written), its samples give
        other features than a sample before, its features differ from the first non-empty partition's, or every
        partition is empty.
    FileExistsError, NotADirectoryError, FileNotFoundError
        As :class:`h5ml.writer.shard_folder.ShardFolder` (a folder of other files, a dataset without
        ``overwrite``, a file); nothing is written then.
    h5ml.WriterError, h5ml.EncodingError, h5ml.MetadataError
        Raised in a task by the writer, inside the IngestError that names the partition.

    Notes
    -----
    Dask's ``dataframe.convert-string`` option (on by default) turns object
    columns into strings when the dataframe is made, arrays and bytes
    included (an array becomes its ``str()``, ``'[0. 1.]'``); h5ml can no
    longer tell them from text then. Make a dataframe with such columns
    under ``dask.config.set({"dataframe.convert-string": False})``.

    The shard order is the partition order: sample ``j`` of partition ``i``
    is global sample ``j + (samples of the non-empty partitions before i)``
    of ``split``, whatever the number of workers.
    """
    if not isinstance(retries, int) or isinstance(retries, bool) or retries < 0:
        raise ParameterError(f"retries must be an integer >= 0, got {retries!r} (parameter retries)")
    if not isinstance(overwrite, bool):
        raise ParameterError(f"overwrite must be True or False, got {overwrite!r} (parameter overwrite)")
    check_name(split, "split", os.fspath(outdir), "/")
    client = current_client(client)
    out = check_target(outdir)
    card = dataset_card(out, metadata)

    def make_tasks(staging: str) -> tuple[list[Any], list[tuple[str, int]]]:
        tasks = partition_tasks(collection, ShardJob(staging, split, card, features, compression, level))
        return tasks, [(split, number) for number in range(len(tasks))]

    path, _ = write_on_dask(out, overwrite, client, make_tasks, retries)
    return load_index(path)[0]
