"""The driver of a sharded write on Dask: run one task per partition, check the shards agree, write the index (§12.2-§12.4).

:func:`write_on_dask` opens the dataset's folder as the sharded writer does
(:class:`h5ml.writer.shard_folder.ShardFolder`: refused if it holds files
that are not a sharded dataset, or a dataset without ``overwrite``), submits
the tasks (one per partition, each writing one shard into the folder's
staging folder: :mod:`h5ml.ingest.dask.tasks`) to a ``dask.distributed``
client with the given ``retries``, and waits for all of them
(:func:`run_shards`). If a partition fails for good (after its retries), an
:class:`h5ml.IngestError` names it and its shard once every other task has
ended too (a task cannot be stopped half-way, and none may still write into
the folder when the error is raised); the staging folder is removed, so the
folder is as it was. When every task succeeded, the shards are ordered by
partition number (shard order = partition order, whatever the number of
workers or the order they finished in, so the index fingerprint is the same
for every cluster), the partitions without rows are left out, each shard's
features and dataset card are compared with the first's (a partition whose
inferred dtype, shape or encoding differs is refused, naming it, never
cast: :func:`listed_shards`), and the folder's ``finish`` moves the shards
into place and writes the index atomically, last.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from h5ml.errors import IngestError
from h5ml.ingest.report import IngestReport, Skipped
from h5ml.model.shard_files import ShardDescription
from h5ml.writer.shard_folder import ShardFolder
from h5ml.writer.shard_naming import shard_path

__all__ = ["listed_shards", "run_shards", "shards_report", "write_on_dask"]


def _failure(outdir: Path, split: str, number: int, exc: BaseException, others: int) -> IngestError:
    reason = str(exc).strip() or type(exc).__name__
    more = f" ({others} other partition(s) failed too)" if others else ""
    return IngestError(
        f"partition {number} of split {split!r} (shard {shard_path(split, number, check=False)}) failed{more}: "
        f"{type(exc).__name__}: {reason}. Nothing was written to {outdir} (a dataset it held is unchanged); fix the "
        "cause and run again",
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
        ``tasks``), its shard and the reason, and how many others failed. It is raised once every task has
        ended, so no task still writes into the folder then.
    """
    from distributed import wait

    futures = client.compute(list(tasks), retries=retries)
    # distributed.wait looks for the default client; the command line's own client is not one (set_as_default=False)
    with client.as_current():
        wait(futures)  # type: ignore[no-untyped-call]  # every task ends (written, or failed after its retries)
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


def listed_shards(splits: Mapping[str, Sequence[ShardDescription | None]]) -> dict[str, list[str]]:
    """The shards each split's index entry lists, in partition order, partitions without rows left out (§12.1).

    Parameters
    ----------
    splits
        Split name -> partition number -> the description of its shard (None: no rows, no shard).

    Returns
    -------
    dict
        Split name -> the shards' paths relative to the folder (``<split>/<split>-NNNNN.h5``, NNNNN the
        partition number: a partition without rows leaves its number out).

    Raises
    ------
    IngestError
        If every partition of a split is empty (there is no sample to write, no feature to describe), or the
        shards disagree: other features within a split, another dataset card anywhere (§12.2).
    """
    listed: dict[str, list[str]] = {}
    first: tuple[str, ShardDescription] | None = None
    for split, descriptions in splits.items():
        shards = [(number, d) for number, d in enumerate(descriptions) if d is not None]
        if not shards:
            raise IngestError(
                f"every one of the {len(descriptions)} partition(s) of split {split!r} is empty: there is no "
                "sample to write, and no feature to describe; give a collection with samples"
            )
        _check_agree(split, shards)
        if first is None:
            first = (split, shards[0][1])
        elif dict(shards[0][1].card) != dict(first[1].card):
            raise IngestError(
                f"the shards of split {split!r} have another dataset card than those of split {first[0]!r}: every "
                "shard must share the card (§12.2)"
            )
        listed[split] = [shard_path(split, number) for number, _ in shards]
    return listed


def write_on_dask(
    outdir: str | os.PathLike[str],
    overwrite: bool,
    client: Any,
    make_tasks: Callable[[str], tuple[list[Any], list[tuple[str, int]]]],
    retries: int,
) -> tuple[Path, dict[str, list[ShardDescription | None]]]:
    """Write a sharded dataset on Dask: the folder opened, the tasks run, the shards checked, moved, the index last.

    Parameters
    ----------
    outdir, overwrite
        The dataset's folder, and whether the dataset it holds may be replaced
        (:class:`~h5ml.writer.shard_folder.ShardFolder`).
    client
        A ``distributed.Client``.
    make_tasks
        ``staging folder -> (tasks, labels)``: one task per partition writing its shard there, and the
        ``(split, partition number)`` of each, in partition order within each split.
    retries
        How many times a failed task is run again.

    Returns
    -------
    (pathlib.Path, dict)
        The index written, and split -> the descriptions of its partitions' shards (None: no rows).

    Raises
    ------
    IngestError
        As :func:`run_shards` and :func:`listed_shards`; the folder is then as it was.
    FileExistsError, NotADirectoryError, FileNotFoundError
        As :class:`~h5ml.writer.shard_folder.ShardFolder`; nothing is written then.
    """
    folder = ShardFolder(outdir, overwrite)
    try:
        tasks, labels = make_tasks(str(folder.staging.resolve()))
        descriptions = run_shards(client, tasks, labels, folder.outdir, retries=retries)
        by_split: dict[str, list[ShardDescription | None]] = {}
        for (split, _number), description in zip(labels, descriptions, strict=True):
            by_split.setdefault(split, []).append(description)
        index = folder.finish(listed_shards(by_split), overwrite)
    except BaseException:
        folder.abort()
        raise
    return index, by_split


def shards_report(
    index: Path, by_split: Mapping[str, Sequence[ShardDescription | None]], seconds: float, skipped: Sequence[Skipped]
) -> IngestReport:
    """The report of a conversion on Dask: the index written, the samples of each split's shards, the time taken.

    Parameters
    ----------
    index, by_split
        As :func:`write_on_dask` returns them.
    seconds
        The time the conversion took.
    skipped
        What was left out while scanning the source (the same in every shard's card).

    Returns
    -------
    IngestReport
        Its ``output`` is ``index``.
    """
    report = IngestReport(index, skipped=list(skipped))
    for split, shards in by_split.items():
        report.samples[split] = sum(d.num_samples for d in shards if d is not None)
    report.seconds = seconds
    return report
