"""The output of a conversion: the checks before writing, its root metadata, temporary files beside it (§4.2, §4.4).

Every converter, ``subset``, ``merge`` and the exports refuse, before reading
anything, an output that would lose data (:func:`check_output`), and give a
converted file the root metadata that makes it pass ``validate --strict``
(:func:`conversion_metadata`). Files written in two steps (a staging file
copied shuffled, an export renamed when complete) live beside their target
under a hidden name (:func:`temp_beside`) and are removed on failure.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from h5ml.ingest.options import parameter_error
from h5ml.writer.shard_folder import check_outdir, file_name_problem

__all__ = ["check_output", "conversion_metadata", "source_problem", "temp_beside"]


def source_problem(out: Path, source: Path, *, sharded: bool) -> str | None:
    """Why writing ``out`` would lose the source ``source`` (paths resolved, symbolic links followed), or None.

    The output may not be the source itself; a sharded output folder (SPEC §12.4) may not hold the
    source (its shards would replace it, ``overwrite`` or not) nor lie inside a source folder. The one
    check of the one-process conversions (:func:`check_output`) and of Dask
    (:func:`h5ml.ingest.dask.outdir.check_target`).
    """
    if not (out.exists() and source.exists()) and not (sharded and source.exists()):
        return None
    target, read = out.resolve(), source.resolve()
    if out.exists() and target == read:
        return f"{out}: the output is the source itself; write to another path (the source would be lost)"
    if sharded and out.exists() and read.is_relative_to(target):
        return f"{out}: the output folder holds the source {source}; write to another folder"
    if sharded and read.is_dir() and target.is_relative_to(read):
        return f"{out}: the output folder is inside the source folder {source}; write the shards to another folder"
    return None


def check_output(
    output: str | os.PathLike[str], overwrite: bool, sources: Iterable[Path] = (), *, sharded: bool = False
) -> Path:
    """Return the output path after refusing one that would lose data.

    Parameters
    ----------
    output
        The file to write.
    overwrite
        Whether an existing output may be replaced.
    sources
        The files (or folders) read: the output may be none of them, even with ``overwrite``.
    sharded
        The output is the folder of a sharded dataset (SPEC §12.4), checked as
        :func:`h5ml.writer.shard_folder.check_outdir` checks it (an index there needs ``overwrite``; a
        non-empty folder without one is refused).

    Returns
    -------
    pathlib.Path
        ``output`` as a path.

    Raises
    ------
    FileExistsError
        If the output is one of ``sources``, or exists and ``overwrite`` is False.
    IsADirectoryError
        If the output is a directory (and not ``sharded``).
    NotADirectoryError
        If ``sharded`` and the output is a file.
    FileNotFoundError
        If the output's directory does not exist.
    h5ml.errors.ParameterError
        If ``sharded`` and the output is named like an HDF5 file (``out.h5``) and is no folder: a sharded
        dataset is a folder.
    """
    out = Path(output)
    for source in sources:
        problem = source_problem(out, source, sharded=sharded)
        if problem is not None:
            raise FileExistsError(problem)
    if sharded:
        named_as_file = file_name_problem(out)
        if named_as_file is not None:  # a file name with a shard option: refused before a folder is made
            raise parameter_error("output", named_as_file, option="OUTPUT")
        return check_outdir(out, overwrite)
    if out.is_dir():
        raise IsADirectoryError(f"{out}: the output path is a directory; give a file path such as {out / 'data.h5'}")
    if out.exists() and not overwrite:
        raise FileExistsError(
            f"{out}: the output file exists; choose another path or pass overwrite=True (--overwrite)"
        )
    if not out.parent.is_dir():
        raise FileNotFoundError(f"{out}: the directory {str(out.parent)!r} does not exist; create it first")
    return out


def conversion_metadata(
    kind: str,
    source: str | os.PathLike[str] | None,
    given: Mapping[str, Any] | None,
    output: str | os.PathLike[str] | None = None,
) -> dict[str, Any]:
    """Root metadata of a converted file: the user's, over defaults that make it pass ``validate --strict`` (§4.2).

    Parameters
    ----------
    kind
        What was converted, for the description: ``"audio folder"``, ``"Python samples"``, ...
    source
        The source path or name, recorded as ``source``; None records none
        (samples of a Python iterable come from nowhere a reader can find).
    given
        The user's ``metadata``; its fields win.
    output
        The file written: ``name`` defaults to its stem (the writer's default,
        given here so that a staging file does not lend its own).

    Returns
    -------
    dict
        ``source``, ``description`` ("Converted from <kind> <source> by h5ml
        <version>."), ``license`` ``"NOASSERTION"`` (the SPDX value for "no
        license stated": the converter cannot know it), ``name``, then ``given``.
    """
    from h5ml._version import __version__

    where = "" if source is None else " " + os.fspath(source)
    out: dict[str, Any] = {} if source is None else {"source": os.fspath(source)}
    out["description"] = f"Converted from {kind}{where} by h5ml {__version__}."
    out["license"] = "NOASSERTION"
    if output is not None:
        out["name"] = Path(output).stem
    out.update(given or {})
    return out


def temp_beside(path: Path, purpose: str) -> Path:
    """A hidden file name beside ``path`` for a file written in two steps: ``.<name>.h5ml-<purpose>-<random>``.

    Parameters
    ----------
    path
        The final file.
    purpose
        What the temporary file is (``"stage"``, ``"export"``).

    Returns
    -------
    pathlib.Path
        A path in the same folder (so that renaming it onto ``path`` is atomic) that does not exist yet.
    """
    return path.parent / f".{path.name}.h5ml-{purpose}-{secrets.token_hex(8)}"
