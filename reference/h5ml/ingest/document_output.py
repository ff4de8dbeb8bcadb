"""The file a text document is written to (a validation report, a report page, a Croissant document): one check.

``h5ml validate -o``, ``h5ml report -o`` and ``h5ml croissant -o`` (and their
Python functions) write one text file beside the data, atomically
(:func:`h5ml.model.text_files.atomic_text_file`). Before any work, the path
is checked here, by :func:`output_problem`, the one place for these rules:

- never, even with ``overwrite``: one of the inputs (the same path, the same
  file through a symbolic or hard link); the index of a sharded input, a
  shard it lists, or a path with a shard's name (``.h5``, ``.hdf5``,
  ``.he5``) inside its folder (SPEC §12.1: it would be taken for an unlisted
  shard); other documents beside the index (``metadata.json``,
  ``report.html``) are written as anywhere else; an existing
  file that is not a regular file (a FIFO, a device such as ``/dev/null``, a
  socket), which is never opened here; a directory (or a path ending in
  ``/``); an HDF5 file (a dataset, found by its signature, §3.1); any h5ml
  shard index (a JSON object of ``"format": "h5ml-index"``, §12.1), whoever's;
  a ``file://`` source counts as the local path it names;
- without ``overwrite``: an existing path;
- always: a path whose folder does not exist.

:func:`check_document_output` words a refusal for Python callers (parameter
names); ``h5ml.tools.output_file`` words the same refusals for the command
line (``--output``, ``--overwrite``).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from h5ml.errors import H5MLError
from h5ml.model.remote import is_url, local_file_path
from h5ml.model.shard_index import INDEX_FILE_NAME, declares_index, is_index_path, load_index, shard_location
from h5ml.spec.constants import superblock_version
from h5ml.validator.shards import SHARD_SUFFIXES
from h5ml.writer.atomic import file_kind

__all__ = ["OutputProblem", "check_document_output", "is_hdf5_file", "output_problem", "same_file"]

#: What is wrong with an output path (:attr:`OutputProblem.kind`).
ProblemKind = Literal["input", "directory", "special", "hdf5", "dataset", "exists", "no_folder"]


@dataclass(frozen=True)
class OutputProblem:
    """Why a document may not be written to a path (:func:`output_problem`), in words of neither interface.

    Attributes
    ----------
    kind
        ``"input"``: the path is one of the inputs; ``"directory"``: an existing directory; ``"special"``: an
        existing file that is not a regular file; ``"hdf5"``: an existing HDF5 file (a shard included);
        ``"dataset"``: the index of a sharded input, one of its shards, or a shard's name inside its folder;
        ``"exists"``: an existing path, and ``overwrite`` is false; ``"no_folder"``: the path's folder does not
        exist. Checked in this order.
    output
        The output path as given.
    detail
        What the path is: ``"data.h5"`` (the input), ``"data.h5, through a symbolic link"``, ``"a FIFO (named
        pipe)"``, ``"the shard train/train-00000.h5 of the sharded dataset ds"``, the missing folder, ...
    """

    kind: ProblemKind
    output: Path
    detail: str


def is_hdf5_file(path: str | os.PathLike[str]) -> bool:
    """Whether the regular file at ``path`` starts with an HDF5 signature (at offset 0, 512, 1024, ..., §3.1).

    Parameters
    ----------
    path
        A path already known to be a regular file (a FIFO would block the read).

    Returns
    -------
    bool
        True for an HDF5 file; False otherwise, or when the file cannot be read.
    """
    try:
        with open(path, "rb") as stream:
            return superblock_version(stream) is not None
    except OSError:
        return False


def same_file(first: str | os.PathLike[str], second: str | os.PathLike[str]) -> bool:
    """Whether two paths name one file: the same absolute path, the same real path, or one file (a hard link).

    Parameters
    ----------
    first, second
        Local paths; neither needs to exist.

    Returns
    -------
    bool
        True when writing ``first`` would replace ``second``.
    """
    if os.path.abspath(first) == os.path.abspath(second) or os.path.realpath(first) == os.path.realpath(second):
        return True
    try:
        return os.path.samefile(first, second)
    except OSError:  # one of them does not exist
        return False


def _existing_problem(out: Path, given: str) -> OutputProblem | None:
    """The problem of an output that exists (symbolic links followed) as no regular file, or as an HDF5 file."""
    if given.endswith(("/", os.sep)) and not os.path.isdir(out):
        return OutputProblem("directory", out, "a folder's path (it ends with a slash), and no folder")
    try:
        mode = os.stat(out).st_mode
    except OSError:  # nothing there, or a symbolic link to nothing
        return None
    if stat.S_ISDIR(mode):
        return OutputProblem("directory", out, "a directory")
    if not stat.S_ISREG(mode):
        return OutputProblem("special", out, f"a {file_kind(mode)}")
    if is_hdf5_file(out):
        return OutputProblem("hdf5", out, "an HDF5 file")
    return None


def _dataset_problem(out: Path, source: str) -> OutputProblem | None:
    """The problem of an output that belongs to the sharded dataset ``source`` (its index or folder), if it is one."""
    if not (source.lower().endswith(".json") or os.path.isdir(source)) or not is_index_path(source):
        return None
    index_file = os.path.join(source, INDEX_FILE_NAME) if os.path.isdir(source) else source
    if not os.path.isfile(index_file):  # no index there: nothing of a dataset to lose
        return None
    if same_file(out, index_file):
        return OutputProblem("dataset", out, f"the index of the sharded dataset {source}")
    try:
        index, _ = load_index(index_file, check_links=False)
    except (OSError, ValueError, H5MLError):  # not readable as an index: its folder is refused below all the same
        index = None
    if index is not None:
        for name in sorted(index.splits):
            for shard in index.splits[name].shards:
                if same_file(out, shard_location(index_file, shard.path)):
                    return OutputProblem("dataset", out, f"the shard {shard.path} of the sharded dataset {source}")
    folder = os.path.realpath(os.path.dirname(os.path.abspath(index_file)))
    inside = os.path.commonpath([folder, os.path.realpath(out)]) == folder
    if inside and out.name.lower().endswith(SHARD_SUFFIXES):
        # A document named like a shard inside the dataset's folder would be taken for an unlisted shard (W210).
        return OutputProblem(
            "dataset", out, f"a shard's name inside the folder {folder} of the sharded dataset {source}"
        )
    return None


def output_problem(
    output: str | os.PathLike[str], overwrite: bool, sources: Iterable[str | os.PathLike[str]] = ()
) -> OutputProblem | None:
    """Why a text document may not be written to ``output`` (see the module docstring), or None when it may.

    Parameters
    ----------
    output
        The document's path.
    overwrite
        Whether an existing regular file that is none of the others may be replaced.
    sources
        What the command reads: files, sharded datasets (an index, or the folder holding ``index.json``; its
        shards are read from the index), URLs (never local files, so never in the way).

    Returns
    -------
    OutputProblem or None
        The first problem found, in the order of :data:`ProblemKind`'s values. Nothing is opened but a regular
        file (its signature) and the indexes of sharded sources.
    """
    out = Path(output)
    # A file:// URL names a local file (h5ml.model.remote.local_file_path), which is as much in the way as its path.
    named = [local_file_path(os.fspath(source)) or os.fspath(source) for source in sources]
    local = [source for source in named if not is_url(source)]
    for source in local:
        if same_file(out, source):
            through = ", through a symbolic link" if out.is_symlink() and not Path(source).is_symlink() else ""
            return OutputProblem("input", out, source + through)
    problem = _existing_problem(out, os.fspath(output))
    if problem is not None:
        return problem
    for source in local:
        problem = _dataset_problem(out, source)
        if problem is not None:
            return problem
    # The index of any sharded dataset, an input or not (§12.1); a report that quotes its format is none.
    if os.path.isfile(out) and declares_index(out, in_doubt=False):
        return OutputProblem("dataset", out, "the index of a sharded h5ml dataset")
    if os.path.lexists(out) and not overwrite:
        return OutputProblem("exists", out, "an existing file")
    folder = os.path.dirname(os.path.abspath(out))
    if not os.path.isdir(folder):
        return OutputProblem("no_folder", out, folder)
    return None


def check_document_output(
    output: str | os.PathLike[str], overwrite: bool, sources: Iterable[str | os.PathLike[str]] = ()
) -> Path:
    """Return the path of a text document to write after refusing one that would lose data (:func:`output_problem`).

    Parameters
    ----------
    output
        The document's path (the ``output`` parameter of the caller).
    overwrite
        Whether an existing document may be replaced.
    sources
        What the caller reads: none of them, nor any file of a sharded one, is replaced, ``overwrite`` or not.

    Returns
    -------
    pathlib.Path
        ``output`` as a path.

    Raises
    ------
    FileExistsError
        If ``output`` is a source, a file or path of a sharded source, an HDF5 file, or exists and ``overwrite``
        is False.
    IsADirectoryError
        If ``output`` is a directory.
    OSError
        If ``output`` is a FIFO, a device or a socket.
    FileNotFoundError
        If the folder of ``output`` does not exist.
    """
    problem = output_problem(output, overwrite, sources)
    if problem is None:
        return Path(output)
    out, detail = problem.output, problem.detail
    never = "even with overwrite=True (--overwrite)"
    if problem.kind == "input":
        raise FileExistsError(
            f"output {out} is the source itself ({detail}); write to another path, the source would be lost ({never})"
        )
    if problem.kind == "dataset":
        raise FileExistsError(
            f"output {out} is {detail}, whose files a document never replaces ({never}); write it outside the "
            "dataset's folder"
        )
    if problem.kind == "special":
        raise OSError(
            f"output {out} is {detail}, not a regular file, which a document is never written to ({never}); "
            "give the path of a regular file"
        )
    if problem.kind == "directory":
        raise IsADirectoryError(f"output {out} is a directory; give the path of a file (in it, or elsewhere)")
    if problem.kind == "hdf5":
        raise FileExistsError(
            f"output {out} is an HDF5 file (a dataset?), which a document never replaces ({never}); give another path"
        )
    if problem.kind == "exists":
        raise FileExistsError(f"output {out} exists; choose another path, or pass overwrite=True (--overwrite)")
    raise FileNotFoundError(f"output {out}: the directory {detail!r} does not exist; create it first")
