"""The folder of a sharded dataset while it is written: staging, the final moves, the index last (SPEC §12.4).

A sharded writer (:class:`h5ml.writer.sharded.ShardedWriter`, ``h5ml shard``,
``h5ml convert --shard-size``) writes every shard into a hidden staging folder
inside the dataset's folder, ``OUTDIR/.h5ml-shards-<pid>-<machine>-<random>/``
(:mod:`h5ml.model.staging_names`), named
as its final path there (``<split>/<split>-NNNNN.h5``,
:mod:`h5ml.writer.shard_naming`). :class:`ShardFolder` then:

- before anything is written, refuses a folder that holds an index unless
  ``overwrite=True`` (``--overwrite``), and a non-empty folder that holds no
  index (it is not a sharded dataset: nothing in it is replaced);
- on :meth:`ShardFolder.finish`: describes every staged shard
  (:func:`h5ml.model.shard_files.describe_shard`), checks that every shard
  agrees with the first of its split and that all share one card
  (:func:`h5ml.model.shard_files.disagreements`, §12.2), moves the shards to
  their final paths, and only then writes ``index.json``
  (:func:`h5ml.model.shard_index.write_index`: atomic, §12.4); with
  ``overwrite``, the shards the old index listed that the new one does not
  are removed after the new index is in place;
- on :meth:`ShardFolder.abort` (``close(abort=True)``, an exception inside
  ``with``, Ctrl-C): removes the staging folder; no index is written and a
  previous dataset in the folder is left as it was.

A process killed outright (SIGKILL, power loss) leaves its staging folder
behind: a hidden ``.h5ml-shards-*`` folder that no index lists, safe to
delete. The validator reports it (W211, §12.1-S2); ``h5ml temporaries
OUTDIR`` lists it and ``--clean`` removes it once its writer is gone
(:mod:`h5ml.writer.temporaries`), as the next writer of the folder does.

One window remains when a dataset is replaced (``overwrite``): the final
moves replace old shards of the same name just before the new index is
written; a crash between the two leaves the old index listing shards whose
fingerprints changed, which readers and the validator refuse (§12.2), never
a dataset that reads wrong. Two writers of one folder at a time are not
supported (the last index written wins).
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Final

from h5ml import spec
from h5ml.errors import ShardIndexError, WriterError
from h5ml.model.shard_files import ShardDescription, describe_shard, disagreements
from h5ml.model.shard_index import INDEX_FILE_NAME, ShardIndex, SplitEntry, index_fingerprint, load_index, write_index
from h5ml.model.staging_names import STAGING_PREFIX, staging_folder_name
from h5ml.writer.temporaries import machine_tag, remove_stale

__all__ = ["STAGING_PREFIX", "ShardFolder", "build_index", "check_outdir", "file_name_problem"]


#: Suffixes of an HDF5 file: an output folder named so is a mistaken file name (refused).
_FILE_SUFFIXES: Final = frozenset({".h5", ".hdf5", ".hdf", ".he5", ".h5ml"})


def file_name_problem(outdir: str | os.PathLike[str]) -> str | None:
    """Why ``outdir`` cannot be the folder of a sharded dataset: it is named like an HDF5 file (§12.1).

    Parameters
    ----------
    outdir
        The dataset's folder as given.

    Returns
    -------
    str or None
        None for an acceptable name, or an existing folder (whatever its name); otherwise the message, without
        the parameter's name, for the caller to raise in the words of its interface (``path=`` in Python,
        ``OUTPUT`` on the command line).
    """
    out = Path(outdir)
    if out.suffix.lower() not in _FILE_SUFFIXES or out.is_dir():
        return None
    return (
        f"{out} names a file ({out.suffix}), but a sharded dataset is a folder (index.json and the shards); "
        f"give a folder such as {out.with_suffix('')}"
    )


def _fsync_folder(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def check_outdir(
    outdir: str | os.PathLike[str], overwrite: bool, overwrite_words: str = "overwrite=True (--overwrite)"
) -> Path:
    """Refuse a dataset folder that a sharded writer must not write into; nothing is created (§12.4).

    Parameters
    ----------
    outdir
        The dataset's folder.
    overwrite
        Whether the sharded dataset it holds may be replaced.
    overwrite_words
        How the interface the user used spells ``overwrite``, for messages.

    Returns
    -------
    pathlib.Path
        ``outdir`` as a path.

    Raises
    ------
    FileExistsError
        If the folder holds an index and ``overwrite`` is false, or holds other files and no index (it is not
        a sharded dataset: nothing in it is replaced); leftover staging folders do not count.
    NotADirectoryError
        If ``outdir`` is a file.
    FileNotFoundError
        If its parent folder does not exist.
    """
    out = Path(outdir)
    if out.exists() and not out.is_dir():
        raise NotADirectoryError(
            f"{out}: the output of a sharded dataset is a folder, and this is a file; give a folder path"
        )
    if not out.parent.is_dir():
        raise FileNotFoundError(f"{out}: the folder {str(out.parent)!r} does not exist; create it first")
    if (out / INDEX_FILE_NAME).exists():
        if not overwrite:
            raise FileExistsError(
                f"{out}: the folder holds a sharded dataset ({INDEX_FILE_NAME}); choose another folder or "
                f"pass {overwrite_words} to replace it"
            )
    elif out.is_dir():
        others = sorted(p.name for p in out.iterdir() if not p.name.startswith(STAGING_PREFIX))
        if others:
            raise FileExistsError(
                f"{out}: the folder is not empty ({', '.join(others[:5])}) and holds no {INDEX_FILE_NAME}, so "
                "it is not a sharded h5ml dataset that could be replaced; give a new or empty folder"
            )
    return out


def build_index(shards: Mapping[str, Sequence[tuple[str, ShardDescription]]], where: str) -> ShardIndex:
    """The index of complete shards: every shard checked against the first of its split (§12.1, §12.2).

    Parameters
    ----------
    shards
        Split name -> its shards in sample order, each ``(path relative to the index, description)``.
        A split needs at least one shard.
    where
        The dataset's folder, for messages.

    Returns
    -------
    ShardIndex
        With the card the shards share, the splits in the given order and the index fingerprint (§12.3).

    Raises
    ------
    WriterError
        If a shard disagrees with the first shard of its split, or two shards have different cards: the
        shards are not one dataset (a defect of the writer that made them, never written as an index).
    """
    splits: dict[str, SplitEntry] = {}
    card = None
    for split, listed in shards.items():
        first = listed[0][1]
        entry = first.split_entry(tuple(description.entry(path) for path, description in listed))
        for (path, description), shard in zip(listed, entry.shards, strict=True):
            problems = disagreements(split, entry, shard, description)
            if card is None:
                card = dict(description.card)
            elif dict(description.card) != card:
                problems.append("has other root attributes than the dataset's first shard (§12.2)")
            if problems:
                raise WriterError(
                    f"{where}: shard {path} {'; '.join(problems)}: the shards are not one dataset, no index was "
                    "written (a defect of the writer; report it)",
                    path=where,
                )
        splits[split] = entry
    return ShardIndex(
        format_version=spec.FORMAT_VERSION_STRING,
        metadata=card or {},
        splits=splits,
        fingerprint=index_fingerprint(splits),
    )


class ShardFolder:
    """The folder of a sharded dataset being written, and its staging folder (see the module docstring).

    Parameters
    ----------
    outdir
        The dataset's folder: it need not exist (its parent must), may be empty, or may hold a sharded
        dataset (its ``index.json``) to be replaced with ``overwrite``.
    overwrite
        Replace the dataset the folder holds.
    overwrite_words
        How the interface the user used spells ``overwrite``, for messages: ``"overwrite=True (--overwrite)"``.

    Attributes
    ----------
    outdir
        The dataset's folder.
    staging
        The hidden staging folder inside it.

    Raises
    ------
    FileExistsError
        If the folder holds an index and ``overwrite`` is false, or holds other files and no index.
    NotADirectoryError
        If ``outdir`` is a file.
    FileNotFoundError
        If the parent folder does not exist.
    """

    def __init__(
        self,
        outdir: str | os.PathLike[str],
        overwrite: bool,
        overwrite_words: str = "overwrite=True (--overwrite)",
    ) -> None:
        self.outdir = out = check_outdir(outdir, overwrite, overwrite_words)
        self._overwrite_words = overwrite_words
        self._created = not out.exists()
        out.mkdir(exist_ok=True)
        remove_stale(out)  # the staging folders (and temporaries) of writers of this folder that were killed
        self.staging = out / staging_folder_name(os.getpid(), machine_tag())
        self.staging.mkdir()
        self._done = False

    @property
    def index_path(self) -> Path:
        """``OUTDIR/index.json``."""
        return self.outdir / INDEX_FILE_NAME

    def staged(self, rel_path: str) -> Path:
        """The staging path of the shard whose final path is ``rel_path`` (its folder created)."""
        path = self.staging.joinpath(*rel_path.split("/"))
        path.parent.mkdir(parents=True, exist_ok=True)
        return path

    def finish(self, shards: Mapping[str, Sequence[str]], overwrite: bool) -> Path:
        """Check the staged shards, move them into place, then write the index (§12.4).

        Parameters
        ----------
        shards
            Split name -> the final paths of its shards (relative to the folder), in sample order; every
            one complete and closed in the staging folder.
        overwrite
            Replace an index written since the writer started (else it is refused, as at the start).

        Returns
        -------
        pathlib.Path
            The index written.

        Raises
        ------
        WriterError
            If the shards are not one dataset (:func:`build_index`); nothing is moved then.
        FileExistsError
            If an index appeared since the writer started and ``overwrite`` is false.
        """
        where = str(self.outdir)
        described = {
            split: [(path, describe_shard(self.staged(path))) for path in paths] for split, paths in shards.items()
        }
        index = build_index(described, where)
        if self.index_path.exists() and not overwrite:  # an index written by another writer meanwhile
            check_outdir(self.outdir, overwrite, self._overwrite_words)
        old = self._old_shards()
        moved: list[str] = []
        try:
            for paths in shards.values():
                for path in paths:
                    final = self.outdir.joinpath(*path.split("/"))
                    final.parent.mkdir(exist_ok=True)
                    os.replace(self.staged(path), final)
                    moved.append(path)
            for folder in {self.outdir.joinpath(*p.split("/")).parent for ps in shards.values() for p in ps}:
                _fsync_folder(folder)
            written = write_index(index, self.index_path)
        except BaseException:
            self._remove(set(moved) - old)  # no index lists them; those that replaced old shards cannot go back
            raise
        self._done = True
        listed = {p for paths in shards.values() for p in paths}
        self._remove(old - listed)
        shutil.rmtree(self.staging, ignore_errors=True)
        return written

    def _old_shards(self) -> set[str]:
        """The shard paths the folder's current index lists (none when it has none, or one that does not parse)."""
        if not self.index_path.exists():
            return set()
        try:
            index, _ = load_index(self.index_path)
        except (ShardIndexError, OSError, UnicodeDecodeError):
            return set()  # not ours to guess which files were its shards: they are left in place
        return {shard.path for split in index.splits.values() for shard in split.shards}

    def _remove(self, stale: set[str]) -> None:
        """Remove the stale shards of the replaced dataset, and their folders once empty."""
        folders = set()
        for path in sorted(stale):
            target = self.outdir.joinpath(*path.split("/"))
            with contextlib.suppress(FileNotFoundError):
                target.unlink()
            folders.add(target.parent)
        for folder in sorted(folders, key=lambda p: len(p.parts), reverse=True):
            if folder != self.outdir:
                with contextlib.suppress(OSError):
                    folder.rmdir()  # only when empty

    def abort(self) -> None:
        """Remove the staging folder and every shard in it; no index is written (the folder is as it was)."""
        if not self._done:
            shutil.rmtree(self.staging, ignore_errors=True)
            self._done = True
            if self._created:
                with contextlib.suppress(OSError):
                    self.outdir.rmdir()  # the folder this writer made, if nothing else came into it
