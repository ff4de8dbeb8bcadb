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

__all__ = ["STDOUT", "check_output_file", "output_stream"]

#: The ``--output`` value that means standard output.
STDOUT = "-"


def check_output_file(
    output: str,
    overwrite: bool,
    inputs: Sequence[str],
    *,
    inputs_are: str = "one of the FILEs checked",
    document: str = "report",
) -> None:
    """Refuse an ``-o/--output`` path before any work, in the command line's words.

    The rules are :func:`h5ml.ingest.document_output.output_problem`'s: never an input, a file or path of a
    sharded input (its index, a shard, its folder), a FIFO or device, a directory or an HDF5 file, even with
    ``--overwrite``; an existing file only with ``--overwrite``; never in a missing folder.

    Parameters
    ----------
    output
        The path given to ``--output``; :data:`STDOUT` is always accepted.
    overwrite
        ``--overwrite``: an existing file may be replaced.
    inputs
        What the command reads (files, sharded datasets, URLs).
    inputs_are
        How the message names the inputs: ``"one of the FILEs checked"``, ``"the source itself (FILE)"``.
    document
        What the command writes, for the messages: ``"report"``, ``"Croissant document"``.

    Raises
    ------
    click.UsageError
        Saying what ``output`` is and what to give instead.
    """
    if output == STDOUT:
        return
    from h5ml.ingest.document_output import output_problem

    problem = output_problem(output, overwrite, inputs)
    if problem is None:
        return
    given, detail = f"--output {output}", problem.detail
    never = "--overwrite or not"
    messages = {
        "input": f"{given} is {inputs_are} ({detail}): the {document} would replace it, {never}; give another path",
        "dataset": f"{given} is {detail}, whose files a {document} never replaces, {never}: give a path outside "
        "the dataset's folder",
        "special": f"{given} is {detail}, not a regular file, which a {document} is never written to, {never}: "
        f"give the path of the {document} file",
        "directory": f"{given} is {detail}: give the path of the {document} file",
        "hdf5": f"{given} is an HDF5 file (a dataset?), which a {document} never replaces, {never}: give the path "
        f"of the {document} file",
        "exists": f"{given} exists: give another path, or pass --overwrite to replace it",
        "no_folder": f"{given}: the folder {detail} does not exist; create it first",
    }
    raise click.UsageError(messages[problem.kind])


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
