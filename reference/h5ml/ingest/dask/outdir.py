"""The output folder of a sharded write on Dask: what it may be, and its shard names (§12.1, §12.4).

A Dask job writes a sharded dataset into ``OUTDIR`` through the sharded
writer's folder (:class:`h5ml.writer.shard_folder.ShardFolder`): every task
writes its shard into the folder's hidden staging folder, and only when every
task has succeeded are the shards moved to ``<split>/<split>-NNNNN.h5``
(:func:`h5ml.writer.shard_naming.shard_path`, NNNNN = the partition number)
and the index written, last. A failed job removes the staging folder: the
folder is as it was (a dataset it held is unchanged). :func:`check_target`
adds the checks a Dask job needs before the folder is touched.
"""

from __future__ import annotations

import os
from pathlib import Path

from h5ml.ingest.options import parameter_error
from h5ml.ingest.output import source_problem
from h5ml.writer.shard_folder import file_name_problem
from h5ml.writer.shard_naming import shard_path

__all__ = ["check_target", "shard_path", "staged_path"]


def check_target(outdir: str | os.PathLike[str], sources: tuple[Path, ...] = ()) -> Path:
    """Refuse an output folder named like an HDF5 file, or that is (or lies inside) a source (§12.4).

    Parameters
    ----------
    outdir
        The dataset's folder.
    sources
        The files or folders the job reads.

    Returns
    -------
    pathlib.Path
        ``outdir`` as a path; nothing is created.

    Raises
    ------
    h5ml.errors.ParameterError
        If ``outdir`` ends in ``.h5`` (or another HDF5 suffix) and is not a folder: a file name given by mistake.
    FileExistsError
        If the folder is a source, lies inside one or holds one (:func:`h5ml.ingest.output.source_problem`).
    """
    out = Path(outdir)
    named_as_file = file_name_problem(out)
    if named_as_file is not None:
        raise parameter_error("outdir", named_as_file, option="OUTPUT")
    for source in sources:
        problem = source_problem(out, source, sharded=True)
        if problem is not None:
            raise FileExistsError(problem)
    return out


def staged_path(staging: str, split: str, number: int) -> Path:
    """Where partition ``number``'s shard of ``split`` is written in the staging folder (its folder created)."""
    path = Path(staging, *shard_path(split, number).split("/"))
    path.parent.mkdir(parents=True, exist_ok=True)
    return path
