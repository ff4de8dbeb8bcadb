"""The driver of a sharded write on Dask: run one task per partition, check the shards agree, write the index (§12.2-§12.4).

:func:`run_shards` submits the tasks (one per partition, each writing one
shard: :mod:`h5ml.ingest.dask.tasks`) to a ``dask.distributed`` client with
the given ``retries``, and waits for all of them. If a partition fails for
good (after its retries), an :class:`h5ml.IngestError` names it and its
shard once every other task has ended too (a task cannot be stopped
half-way, and none may still write into the folder when the error is
raised); no index is written, so no reader takes the
folder for a dataset (the shards already written stay, without an index;
``overwrite=True`` replaces them). When every task succeeded, the shards are
ordered by partition number (shard order = partition order, whatever the
number of workers or the order they finished in, so the index fingerprint is
the same for every cluster), the partitions without rows are left out, each
shard's features and dataset card are compared with the first's (a partition
whose inferred dtype, shape or encoding differs is refused, never cast), and
the index is written atomically (:func:`h5ml.model.shard_index.write_index`),
last.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from h5ml.errors import IngestError
from h5ml.ingest.dask.outdir import remove_leftovers, shard_name
from h5ml.model.shard_files import ShardDescription
from h5ml.model.shard_index import ShardIndex, SplitEntry, index_fingerprint, write_index

__all__ = ["INDEX_VERSION", "finish", "index_of", "run_shards"]

#: The SPEC version an index written here follows: §12 (sharded datasets) is new in 1.2.
INDEX_VERSION: Final = "1.2"


def _failure(outdir: Path, split: str, number: int, exc: BaseException, others: int) -> IngestError:
    reason = str(exc).strip() or type(exc).__name__
    more = f" ({others} other partition(s) failed too)" if others else ""
    return IngestError(
        f"partition {number} of split {split!r} (shard {shard_name(split, number)}) failed{more}: "
        f"{type(exc).__name__}: {reason}. No index was written to {outdir}, so it is not a dataset; fix the cause and "
        "run again with overwrite=True (--overwrite), which replaces the shards written so far",
        path=str(outdir),
    )


def run_shards(
    client: Any, tasks: Sequence[Any], labels: Sequence[tuple[str, int]], outdir: Path, *, retries: int = 0
) -> list[ShardDescription | None]:
    """Compute one task per partition on ``client``; return their shard descriptions in the order of ``tasks``.

    Parameters
    ----------
    client
        A ``distributed.Client``.
    tasks
        One ``dask.delayed`` per partition, each computing a
        :class:`~h5ml.model.shard_files.ShardDescription` (None, or ``[]``, for a partition without rows).
    labels
        ``(split, partition number)`` of each task, for messages.
    outdir
        The dataset's folder, for messages.
    retries
        How many times the scheduler reruns a failed task (``Client.compute(retries=)``).

    Returns
    -------
    list
        The description of each task's shard, None for a partition without rows.

    Raises
    ------
    IngestError
        If a partition failed after its retries: the message names the first that failed (in the order of
        ``tasks``), its shard and the reason, and how many others failed; no index is written. It is raised
        once every task has ended, so no task still writes into the folder then.
    """
    from distributed import wait

    futures = client.compute(list(tasks), retries=retries)
    wait(futures)  # type: ignore[no-untyped-call]  # every task ends (written, or failed after its retries) before this returns or raises
    failed = [i for i, future in enumerate(futures) if future.status == "error"]
    if failed:
        exc = futures[failed[0]].exception()
        split, number = labels[failed[0]]
        raise _failure(outdir, split, number, exc, len(failed) - 1) from exc
    results: list[ShardDescription | None] = []
    for future in futures:
        value = future.result()
        results.append((value[0] if value else None) if isinstance(value, list) else value)
    return results


def _check_agree(split: str, shards: Sequence[tuple[int, ShardDescription]]) -> None:
    """Refuse shards whose features or dataset card differ from the first shard's, naming the partitions (§12.2)."""
    first_number, first = shards[0]
    for number, shard in shards[1:]:
        if shard.features != first.features:
            problems = []
            for name in sorted(set(first.features) | set(shard.features)):
                want, got = first.features.get(name), shard.features.get(name)
                if want != got:
                    problems.append(f"{name!r}: {got!r} where partition {first_number} has {want!r}")
            raise IngestError(
                f"partition {number} of split {split!r} stores other features than partition {first_number} "
                f"({'; '.join(problems)}): every shard of a split must store each feature alike (§12.2). Make the "
                "partitions' values agree (dtype, sample shape; ragged lengths need a ragged feature) or declare "
                "the features with features={name: {'encoding': ..., 'dtype': ...}}; nothing is cast"
            )
        if dict(shard.card) != dict(first.card):
            differ = sorted(k for k in set(shard.card) | set(first.card) if shard.card.get(k) != first.card.get(k))
            raise IngestError(
                f"partition {number} of split {split!r} has another dataset card than partition {first_number} "
                f"(root attributes {differ}): every shard must share the card (§12.2)"
            )


def index_of(splits: Mapping[str, Sequence[ShardDescription | None]]) -> ShardIndex:
    """The index of each split's shards in partition order, partitions without rows left out (§12.1-§12.3).

    Parameters
    ----------
    splits
        Split name -> partition number -> the description of its shard (None: no rows, no shard).

    Raises
    ------
    IngestError
        If every partition of a split is empty (there is no sample to write, no feature to describe), or the
        shards disagree: other features within a split, another dataset card anywhere (§12.2).
    """
    entries: dict[str, SplitEntry] = {}
    first: tuple[str, int, ShardDescription] | None = None
    for split, descriptions in splits.items():
        shards = [(number, d) for number, d in enumerate(descriptions) if d is not None]
        if not shards:
            raise IngestError(
                f"every one of the {len(descriptions)} partition(s) of split {split!r} is empty: there is no "
                "sample to write, and no feature to describe; give a collection with samples"
            )
        _check_agree(split, shards)
        if first is None:
            first = (split, *shards[0])
        elif dict(shards[0][1].card) != dict(first[2].card):
            raise IngestError(
                f"the shards of split {split!r} have another dataset card than those of split {first[0]!r}: every "
                "shard must share the card (§12.2)"
            )
        listed = tuple(d.entry(shard_name(split, number)) for number, d in shards)
        entries[split] = shards[0][1].split_entry(listed)
    assert first is not None, "index_of needs at least one split"
    return ShardIndex(
        format_version=INDEX_VERSION,
        metadata=dict(first[2].card),
        splits=entries,
        fingerprint=index_fingerprint(entries),
    )


def finish(outdir: Path, index: ShardIndex) -> Path:
    """Remove a killed worker's temporaries, then write the index atomically, last (§12.4); return its path."""
    remove_leftovers(outdir)
    return write_index(index, outdir)
