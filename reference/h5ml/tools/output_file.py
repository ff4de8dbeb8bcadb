"""Where a command's report goes: standard output, or a file written atomically (``--output FILE``).

CI workflows upload a report file (``h5ml validate --format sarif --output
h5ml.sarif``). The file is written beside its final path under a temporary
name and moved there with ``os.replace`` only when the report is complete, so
that a run that fails or is interrupted leaves no half report (and an earlier
one stays whole). ``-`` means standard output.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Sequence
from typing import TextIO

import click

from h5ml.model.text_files import atomic_text_file
from h5ml.spec.constants import superblock_version

__all__ = ["STDOUT", "check_output_file", "output_stream"]

#: The ``--output`` value that means standard output.
STDOUT = "-"


def check_output_file(output: str, overwrite: bool, inputs: Sequence[str]) -> None:
    """Refuse an ``--output`` path before any work: one that exists (without ``--overwrite``), an input, an HDF5 file.

    Parameters
    ----------
    output
        The path given to ``--output``; :data:`STDOUT` is always accepted.
    overwrite
        ``--overwrite``: an existing file may be replaced.
    inputs
        The files the command reads: none of them may be replaced by its report, ``--overwrite`` or not.

    Raises
    ------
    click.UsageError
        If ``output`` is one of ``inputs``, is an HDF5 file (a dataset, or the shard of an index checked: a report
        never replaces one, ``--overwrite`` or not), exists without ``overwrite``, is a directory, or its folder
        is missing.
    """
    if output == STDOUT:
        return
    for given in inputs:
        if os.path.abspath(given) == os.path.abspath(output) or (
            os.path.exists(given) and os.path.exists(output) and os.path.samefile(given, output)
        ):
            raise click.UsageError(
                f"--output {output} is one of the FILEs checked: the report would replace it; give another path"
            )
    if os.path.isdir(output):
        raise click.UsageError(f"--output {output} is a directory: give the path of the report file")
    if os.path.isfile(output) and _is_hdf5(output):
        raise click.UsageError(
            f"--output {output} is an HDF5 file (a dataset?), which a report never replaces, --overwrite or not: "
            "give the path of the report file"
        )
    if os.path.lexists(output) and not overwrite:
        raise click.UsageError(f"--output {output} exists: give another path, or pass --overwrite to replace it")
    folder = os.path.dirname(os.path.abspath(output))
    if not os.path.isdir(folder):
        raise click.UsageError(f"--output {output}: the folder {folder} does not exist; create it first")


def _is_hdf5(path: str) -> bool:
    """Whether the file at ``path`` starts with an HDF5 signature (at offset 0, 512, 1024, ..., §3.1)."""
    try:
        with open(path, "rb") as stream:
            return superblock_version(stream) is not None
    except OSError:
        return False


@contextlib.contextmanager
def output_stream(output: str, stdout: TextIO) -> Iterator[TextIO]:
    """A text stream for a report: ``stdout`` for :data:`STDOUT`, else a temporary file moved to ``output`` at the end.

    Parameters
    ----------
    output
        The ``--output`` path (checked first with :func:`check_output_file`), or :data:`STDOUT`.
    stdout
        The command's standard output.

    Yields
    ------
    TextIO
        Where to write the report (UTF-8 text). When the ``with`` block raises, the temporary file is removed
        and ``output`` is left as it was.
    """
    if output == STDOUT:
        yield stdout
        return
    with atomic_text_file(os.path.abspath(output)) as handle:
        yield handle
