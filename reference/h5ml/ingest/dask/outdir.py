"""The output folder of a sharded write on Dask: its checks, the shard names, and what a failed job leaves (§12.1, §12.4).

A Dask job writes a sharded dataset into ``OUTDIR``: ``index.json`` and the
shards ``<split>/<split>-NNNNN.h5`` (NNNNN: the partition number, 5 digits
from 00000). :func:`prepare_folder` refuses, before any task runs, a folder
that would lose data: one that exists and is not empty, unless
``overwrite=True``, and then only when everything in it is what such a job
writes (an index, shard folders of shard files, the writers' hidden
temporaries, :mod:`h5ml.writer.temporaries`) and no writer may still be
writing there; those are removed, the index first, so that no index ever
lists a shard of an earlier job. :func:`remove_leftovers` deletes the stale
temporary files that a worker killed mid-write on this machine left behind
(a retried task's writer already removes those of its own shard).
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path
from typing import Final

from h5ml.ingest.options import parameter_error
from h5ml.model.shard_index import INDEX_FILE_NAME
from h5ml.writer.temporaries import Temporary, remove_stale, temporaries

__all__ = ["SHARD_DIGITS", "prepare_folder", "remove_leftovers", "shard_name"]

#: Digits of the partition number in a shard's name (§12.4): ``train/train-00000.h5``.
SHARD_DIGITS: Final = 5
#: Suffixes of an HDF5 file: an output folder named so is a mistaken file name (refused).
_FILE_SUFFIXES: Final = frozenset({".h5", ".hdf5", ".hdf", ".he5", ".h5ml"})
#: The hidden temporary file of :func:`h5ml.model.shard_index.write_index`: ``.index.json.<random>.tmp``.
_INDEX_TEMPORARY: Final = re.compile(rf"^\.{re.escape(INDEX_FILE_NAME)}\..+\.tmp$")


def shard_name(split: str, number: int) -> str:
    """The path of a shard relative to the index: ``<split>/<split>-NNNNN.h5`` (§12.4).

    Parameters
    ----------
    split
        The split's name (§5.1.1: a valid HDF5 link name, no ``/``).
    number
        The partition number, 0-based.

    Returns
    -------
    str
        ``"train/train-00003.h5"``; the number takes more digits past 99999.

    Notes
    -----
    A private copy of the sharded writer's naming rule until its module
    (engineer ``writer``, issue 16) is on main; the lead unifies them.
    """
    return f"{split}/{split}-{number:0{SHARD_DIGITS}d}.h5"


def _ours(entry: Path, temps: set[Path]) -> bool:
    """Whether a top-level entry of OUTDIR is something a sharded write made (index, temporaries, shard folders)."""
    if entry.is_symlink():
        return False
    if entry.is_file():
        return entry.name == INDEX_FILE_NAME or bool(_INDEX_TEMPORARY.match(entry.name)) or entry in temps
    if not entry.is_dir():
        return False
    shard = re.compile(rf"^{re.escape(entry.name)}-\d{{{SHARD_DIGITS},}}\.h5$")
    return all(
        not child.is_symlink() and child.is_file() and (bool(shard.match(child.name)) or child in temps)
        for child in entry.iterdir()
    )


def _temporaries(out: Path) -> list[Temporary]:
    """The writers' temporaries in ``out`` and its shard folders (one level down)."""
    folders = [out, *(entry for entry in sorted(out.iterdir()) if entry.is_dir() and not entry.is_symlink())]
    return [temp for folder in folders for temp in temporaries(folder)]


def prepare_folder(outdir: str | os.PathLike[str], overwrite: bool, sources: tuple[Path, ...] = ()) -> Path:
    """Check (and with ``overwrite`` empty) the folder a sharded write goes to; create it if needed (§12.4).

    Parameters
    ----------
    outdir
        The dataset's folder.
    overwrite
        Whether an earlier sharded dataset in it may be replaced.
    sources
        The files or folders the job reads: the output may be none of them nor inside one.

    Returns
    -------
    pathlib.Path
        The folder, which exists and is empty.

    Raises
    ------
    h5ml.errors.ParameterError
        If ``outdir`` ends in ``.h5`` (or another HDF5 suffix) and is not a folder: a file name given by mistake.
    FileExistsError
        If the folder is a source, lies inside one, or is not empty and ``overwrite`` is False; or if it holds
        anything a sharded write does not make (even with ``overwrite``: it is never deleted).
    NotADirectoryError
        If ``outdir`` is a file.
    FileNotFoundError
        If its parent folder does not exist.
    """
    out = Path(outdir)
    if out.suffix.lower() in _FILE_SUFFIXES and not out.is_dir():
        raise parameter_error(
            "outdir",
            f"{out} names a file ({out.suffix}), but a sharded dataset is a folder (index.json and the shards); "
            f"give a folder such as {out.with_suffix('')}",
            option="OUTPUT",
        )
    for source in sources:
        if source.exists() and (out.resolve() == source.resolve() or source.resolve() in out.resolve().parents):
            raise FileExistsError(
                f"{out}: the output folder is the source {source} or inside it; write the shards to another folder"
            )
    if out.exists() and not out.is_dir():
        raise NotADirectoryError(
            f"{out}: a sharded dataset is a folder (index.json and the shard files) and this is a file; give the "
            "path of a folder that does not exist yet"
        )
    if not out.exists():
        if not out.parent.is_dir():
            raise FileNotFoundError(f"{out}: the folder {str(out.parent)!r} does not exist; create it first")
        out.mkdir()
        return out
    entries = sorted(out.iterdir())
    if not entries:
        return out
    if not overwrite:
        raise FileExistsError(
            f"{out}: the output folder is not empty ({len(entries)} entries, e.g. {entries[0].name!r}); choose a new "
            "folder or pass overwrite=True (--overwrite) to replace the sharded dataset in it"
        )
    temps = _temporaries(out)
    live = [temp.path for temp in temps if temp.state == "live"]
    if live:
        raise FileExistsError(
            f"{out}: a writer may still be writing {live[0]} (its process runs, or it was made on another machine); "
            "overwrite=True (--overwrite) replaces a finished dataset only: wait for that job to end, or delete the "
            "file if you know its writer is gone (nothing was deleted)"
        )
    foreign = [entry.name for entry in entries if not _ours(entry, {temp.path for temp in temps})]
    if foreign:
        raise FileExistsError(
            f"{out}: overwrite=True (--overwrite) replaces only a sharded h5ml dataset, and this folder also holds "
            f"{', '.join(repr(name) for name in foreign[:3])}{' and more' if len(foreign) > 3 else ''}; move those "
            "away or choose a new folder (nothing was deleted)"
        )
    (out / INDEX_FILE_NAME).unlink(missing_ok=True)  # first: no moment where an index lists a removed shard
    for entry in entries:
        if entry.is_dir():
            shutil.rmtree(entry)
        else:
            entry.unlink(missing_ok=True)
    return out


def remove_leftovers(outdir: Path) -> list[Path]:
    """Delete the stale writer temporaries under ``outdir`` (a killed worker's unfinished shard); return them.

    Only those :func:`h5ml.writer.temporaries.remove_stale` may remove: made on this machine by a process that is
    gone. A temporary of another machine stays (nobody here can tell that its writer is dead); it is hidden, and
    no index lists it.
    """
    removed = remove_stale(outdir)
    for entry in sorted(outdir.iterdir()):
        if entry.is_dir() and not entry.is_symlink():
            removed.extend(remove_stale(entry))
    return [temp.path for temp in removed]
