"""``h5ml convert A.h5 B.h5 ... OUTDIR --dask ADDRESS``: HDF5 files converted to shards on a Dask cluster (§12.4).

The one-process HDF5 converter (:func:`h5ml.ingest.hdf5.convert_hdf5`) runs
in the driver as it always does: it walks every source, proposes or loads
the plan, checks it against the sources (counts, paths, files that must
agree: an ambiguous plan or disagreeing files are refused there, with the
message of the one-process conversion, before any task starts) and hands
:func:`h5ml.ingest.pipeline.ingest` each split's samples in order (one item
per row, or per record) and its per-sample decoder. With
:data:`~h5ml.ingest.pipeline.PLAN_RUNNER` set, that plan comes to
:func:`h5ml.ingest.dask.convert.convert_on_dask`, which cuts each split's
samples into partitions of ``samples_per_shard`` in the split's order, the
rows of the first source, then of the next (:func:`hdf5_plan` prepares the
decoder and the task). Sample ``i`` of a split is so sample ``i`` of the
file ``h5ml convert`` writes in one process, and partition ``k`` is shard
``k`` of ``h5ml convert ... OUTDIR --samples-per-shard N`` (the same shard
and index fingerprints, §12.3): a partition is a range of rows of the split,
which may end in one source file and go on in the next, as the one-process
sharded writer rolls over by samples, not by file.

Each task (:func:`write_hdf5_partition`) opens the source files itself, by
path (an h5py file does not pickle, and no array goes through the
scheduler), reads its rows in blocks of whole HDF5 chunks, and writes its
shard. The paths it opens are those the driver resolved (absolute): a
worker started in another folder reads the files the client planned from,
never a file of the same relative name in its own folder.

The workers must see the client's files at the same paths (one machine, or
a shared file system mounted at the same place). Before reading, each task
compares every source of its split with the size and modification time the
driver saw (:class:`SourceStamp`): a file the worker cannot find, or finds
with another size or time (another copy, or a file changed since the plan),
fails the task with a :class:`h5ml.IngestError` naming the file and the
worker's host, and no index is written. (A copy with the same size and time
but other bytes is not told apart: share the files, don't copy them.) Each
task closes the sources and forgets their cached blocks when the last HDF5
task running in its worker process ends, so that a long-lived worker never
reuses a handle or a block of a file of an earlier job.
"""

from __future__ import annotations

import functools
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from h5ml.errors import IngestError
from h5ml.ingest.dask.tasks import ShardJob, write_items_partition
from h5ml.ingest.hdf5.handles import close_sources
from h5ml.ingest.hdf5.run import RunSpec, decode_sample
from h5ml.ingest.options import ConvertOptions
from h5ml.ingest.report import SourceItem
from h5ml.model.shard_files import ShardDescription

__all__ = ["SourceStamp", "hdf5_plan", "write_hdf5_partition"]

#: HDF5 tasks running in this (worker) process; the last one to end closes the sources.
_RUNNING = [0]
_LOCK = threading.Lock()


@dataclass(frozen=True)
class SourceStamp:
    """A source file as the driver saw it when the plan was made: where, how large, when modified.

    Attributes
    ----------
    path
        The file, absolute (as the driver resolved it).
    size
        Its size in bytes.
    mtime_ns
        Its modification time, in nanoseconds since the epoch.
    """

    path: str
    size: int
    mtime_ns: int

    @classmethod
    def of(cls, path: str) -> SourceStamp:
        """The stamp of ``path`` now (in the driver). Raises FileNotFoundError if it is gone."""
        info = os.stat(path)
        return cls(path, info.st_size, info.st_mtime_ns)

    def check(self) -> None:
        """Refuse the file a worker sees at :attr:`path` unless it has the size and time the driver saw.

        Raises
        ------
        h5ml.IngestError
            If the file is missing on this worker, or has another size or modification time; the message
            names the file, the worker's host and what to do.
        """
        host = socket.gethostname()
        try:
            info = os.stat(self.path)
        except OSError as exc:
            raise IngestError(
                f"{self.path}: the Dask worker on host {host} cannot open this source ({exc.strerror or exc}), "
                "which the client read there. The workers must see the client's files at the same paths (the "
                "same machine, or a shared file system mounted at the same place); or convert without dask=... "
                "(--dask ...) in one process",
                path=self.path,
            ) from None
        if (info.st_size, info.st_mtime_ns) != (self.size, self.mtime_ns):
            raise IngestError(
                f"{self.path}: the Dask worker on host {host} sees {info.st_size} bytes modified "
                f"{_when(info.st_mtime_ns)}, where the client planned from {self.size} bytes modified "
                f"{_when(self.mtime_ns)}: the file changed since (convert again, leaving the sources as they are), "
                "or this worker sees another copy at that path (give the workers the client's files on a shared "
                "file system)",
                path=self.path,
            )


def _when(mtime_ns: int) -> str:
    seconds, rest = divmod(mtime_ns, 1_000_000_000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{rest:09d}Z"


@contextmanager
def _sources_open() -> Iterator[None]:
    """Within a task: the sources this process opens are closed, their blocks forgotten, when the last task ends.

    A task starting where no other HDF5 task runs also drops what an earlier job may have left open.
    """
    with _LOCK:
        if _RUNNING[0] == 0:
            close_sources()
        _RUNNING[0] += 1
    try:
        yield
    finally:
        with _LOCK:
            _RUNNING[0] -= 1
            if _RUNNING[0] == 0:
                close_sources()


def write_hdf5_partition(
    items: Sequence[SourceItem],
    number: int,
    job: ShardJob,
    decode: Callable[[SourceItem], Mapping[str, Any]],
    options: ConvertOptions,
    *,
    sources: Mapping[str, Sequence[SourceStamp]],
) -> ShardDescription:
    """Check the split's sources, then read and write one partition of HDF5 rows as one shard (runs on a worker).

    Parameters
    ----------
    items
        The partition's samples, in the split's order (rows, or record ids).
    number
        The partition number (the shard's NNNNN).
    job
        Where and how the shard is written.
    decode
        The plan's decoder, reading the sources at their absolute paths (:func:`hdf5_plan`).
    options
        The conversion's options (``workers`` threads decode within the task).
    sources
        Split -> the stamps of the sources its features read.

    Returns
    -------
    ShardDescription
        The shard written.

    Raises
    ------
    h5ml.IngestError
        As :meth:`SourceStamp.check` (a source this worker does not see as the driver did), or for the first
        sample that does not read or convert: the message names the file and the HDF5 path.
    """
    for stamp in sources.get(job.split, ()):
        stamp.check()
    with _sources_open():
        return write_items_partition(items, number, job, decode, options)


def hdf5_plan(decode: Callable[[SourceItem], Mapping[str, Any]]) -> tuple[Callable[..., Any], Callable[..., Any]]:
    """The decoder and the task of an HDF5 plan on Dask: the sources at their absolute paths, stamped now.

    Parameters
    ----------
    decode
        The decoder :func:`h5ml.ingest.hdf5.run.run_plan` hands over (``decode_sample`` bound to its spec).

    Returns
    -------
    (callable, callable)
        The decoder reading every source at the path the driver resolves it to, and the task function
        (:func:`write_hdf5_partition` with the stamps of each split's sources bound).

    Raises
    ------
    h5ml.IngestError
        If ``decode`` is not the HDF5 plan's decoder (a defect), or a source is gone since it was walked.
    """
    spec = decode.args[0] if isinstance(decode, functools.partial) and decode.args else None
    if not (isinstance(decode, functools.partial) and decode.func is decode_sample and isinstance(spec, RunSpec)):
        raise IngestError(f"the HDF5 converter handed over another decoder ({decode!r}); nothing was written")
    absolute = {source: os.path.abspath(source) for source in spec.sources()}
    try:
        stamps = {path: SourceStamp.of(path) for path in absolute.values()}
    except FileNotFoundError as exc:
        raise IngestError(f"{exc.filename}: the source is gone since it was read; nothing was written") from None
    splits = {split for split, _ in spec.features}
    sources = {split: [stamps[absolute[s]] for s in spec.sources(split)] for split in sorted(splits)}
    moved = functools.partial(decode_sample, spec.reading_from(absolute))
    return moved, functools.partial(write_hdf5_partition, sources=sources)
