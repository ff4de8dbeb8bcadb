"""The partitions of a Dask collection as shard-writing tasks: a bag, a dataframe, or a dict of arrays (§12.4).

:func:`partition_tasks` turns the collection :func:`h5ml.dask.to_h5ml` is
given into one ``dask.delayed`` per partition, in partition order, each
writing its partition as one shard (:mod:`h5ml.ingest.dask.tasks`):

- a ``dask.bag.Bag`` of sample dicts: partition ``i`` of the bag (the
  writing is fused with the bag's own tasks, so a partition goes from its
  source to its shard on one worker);
- a ``dask.dataframe.DataFrame``: partition ``i`` of the frame, one feature
  per column;
- a dict of ``dask.array.Array`` (``{feature: array (N, ...)}``): rows
  aligned, so every array must have the same known length ``N``; all are
  rechunked to the row chunks of the first array (and to one chunk along
  their other axes), and row block ``i`` of every array is partition ``i``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from h5ml.errors import ParameterError
from h5ml.ingest.dask.tasks import ShardJob, write_array_partition, write_bag_partition, write_frame_partition

__all__ = ["partition_tasks"]


def _bag_tasks(bag: Any, job: ShardJob) -> list[Any]:
    import dask.bag

    numbers = dask.bag.from_sequence(range(bag.npartitions), npartitions=bag.npartitions)  # type: ignore[no-untyped-call]
    written = bag.map_partitions(write_bag_partition, numbers, job=job)
    return list(written.to_delayed())


def _frame_tasks(frame: Any, job: ShardJob) -> list[Any]:
    from dask.delayed import delayed

    write = delayed(write_frame_partition, pure=False)
    return [write(part, number, job) for number, part in enumerate(frame.to_delayed())]


def _array_tasks(arrays: Mapping[Any, Any], job: ShardJob) -> list[Any]:
    import dask.array
    from dask.delayed import delayed

    if not arrays:
        raise ParameterError(
            "the dict of dask arrays is empty: give {feature: dask.array.Array} (parameter collection)"
        )
    lengths: dict[str, float] = {}
    for name, array in arrays.items():
        if not isinstance(name, str):
            raise ParameterError(f"feature names must be str, got {name!r} (parameter collection)")
        if not isinstance(array, dask.array.Array):
            raise ParameterError(
                f"feature {name!r} is a {type(array).__name__}, not a dask array; wrap it with "
                "dask.array.from_array(value, chunks=...) (parameter collection)"
            )
        if array.ndim == 0 or math.isnan(array.shape[0]):
            raise ParameterError(
                f"feature {name!r} has no known length (shape {array.shape}): call compute_chunk_sizes() on it "
                "first, or give arrays of one sample per row (parameter collection)"
            )
        lengths[name] = array.shape[0]
    if len(set(lengths.values())) != 1:
        shown = ", ".join(f"{name}: {int(n)}" for name, n in lengths.items())
        raise ParameterError(
            f"the arrays' rows are samples, so they must all have the same length; got {shown} (parameter collection)"
        )
    first = next(iter(arrays.values()))
    rows = first.chunks[0]
    blocks = {
        name: list(array.rechunk({0: rows, **{axis: -1 for axis in range(1, array.ndim)}}).to_delayed().ravel())
        for name, array in arrays.items()
    }
    write = delayed(write_array_partition, pure=False)
    return [write({name: blocks[name][n] for name in arrays}, n, job) for n in range(len(rows))]


def partition_tasks(collection: Any, job: ShardJob) -> list[Any]:
    """One ``dask.delayed`` per partition of ``collection``, in partition order, each writing one shard of ``job``.

    Parameters
    ----------
    collection
        A ``dask.bag.Bag`` of ``{feature: value}`` dicts, a ``dask.dataframe.DataFrame``, or a dict
        ``{feature: dask.array.Array}`` whose arrays share their length (see the module docstring).
    job
        Where and how the shards are written.

    Returns
    -------
    list
        The tasks; each computes the shard's :class:`~h5ml.model.shard_files.ShardDescription`, or None
        (``[]`` for a bag) for a partition without rows.

    Raises
    ------
    h5ml.errors.ParameterError
        For another kind of collection (a dask Series, a list, numpy arrays), or arrays that are not aligned.
    """
    import dask.bag

    if isinstance(collection, dask.bag.Bag):
        return _bag_tasks(collection, job)
    if isinstance(collection, Mapping):
        return _array_tasks(collection, job)
    kind = type(collection).__module__.split(".")[0] + "." + type(collection).__name__
    if kind.startswith("dask"):
        import dask.dataframe

        if isinstance(collection, dask.dataframe.DataFrame):
            return _frame_tasks(collection, job)
        if isinstance(collection, dask.dataframe.Series):
            raise ParameterError(
                "a dask Series is one column without a name for its feature; give series.to_frame(name) "
                "(parameter collection)"
            )
    raise ParameterError(
        f"collection must be a dask.bag of sample dicts, a dask.dataframe, or a dict of dask arrays, got {kind} "
        "(parameter collection)"
    )
