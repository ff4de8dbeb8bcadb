"""``h5ml report``: a self-contained HTML page that shows a dataset (issue 17).

:func:`write_report` gathers the facts (:mod:`~h5ml.tools.report.collect`:
the card, the validation, the figures of ``h5ml inspect``, a bounded sample),
draws the plots (:mod:`~h5ml.tools.report.plots`) and previews
(:mod:`~h5ml.tools.report.previews`), renders the page
(:mod:`~h5ml.tools.report.html`), and writes it through a temporary file
beside the output, renamed when complete, so that a failed report leaves no
half-written page. The report is a tool: it needs matplotlib, and Pillow
(which matplotlib requires) for its image thumbnails (``pip install
"h5ml[report]"``), which nothing below :mod:`h5ml.tools` imports.

Where the page goes by default (:func:`default_output`): beside the file, named
after it, ``data/mnist.h5`` -> ``data/mnist.report.html``; for a sharded
dataset beside its folder, named after the folder, ``data/mnist/index.json``
(or ``data/mnist/``) -> ``data/mnist.report.html``. The folder is found on the
resolved path (symbolic links followed, ``.`` and ``..`` named): ``h5ml report .``
in ``data/mnist`` gives ``../mnist.report.html``, and an index that is a
symbolic link names its target's folder. An existing output is
replaced only with ``overwrite=True`` (``--overwrite``), as ``h5ml convert``
does, and never when it is the input itself. :func:`render_report` gives the
page as text, for ``h5ml report -o -`` (standard output).

:func:`write_report` returns a :class:`WrittenReport`: the page, the reader's
refusal if any, and the validator's verdict, from which ``h5ml report`` takes
its exit status (0 valid, 1 errors found, the page written all the same).
The report is used through the command line; this package is internal.

It implements no SPEC clause; it reads through the reader (§6, §12.5) and the validator (§9, §12.1-R7).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import NamedTuple

__all__ = ["RenderedReport", "WrittenReport", "default_output", "render_report", "write_report"]


class WrittenReport(NamedTuple):
    """What :func:`write_report` wrote, and the verdict the page shows.

    Attributes
    ----------
    page
        The HTML file written.
    refused
        Why the reader refused the dataset when it did (the page then shows its card and validation only), else None.
    valid
        Whether the validator found no error (§9.1; for a sharded dataset in the index and every shard, §12.1-R7).
        ``h5ml report`` exits 1 when it is False, whether or not the reader could read the dataset.
    """

    page: Path
    refused: str | None
    valid: bool


class RenderedReport(NamedTuple):
    """The page of :func:`render_report`, and the verdict it shows (as in :class:`WrittenReport`).

    Attributes
    ----------
    text
        The whole HTML page.
    refused
        Why the reader refused the dataset when it did, else None.
    valid
        Whether the validator found no error.
    """

    text: str
    refused: str | None
    valid: bool


def default_output(path: str | os.PathLike[str]) -> Path:
    """Where the report of ``path`` goes when no output is given (see the module docstring).

    Parameters
    ----------
    path
        An h5ml file, or the index of a sharded dataset (a ``.json`` file or its folder).

    Returns
    -------
    pathlib.Path
        ``<stem>.report.html`` beside the file; or ``<folder name>.report.html`` beside a sharded dataset's
        folder, that of the resolved path (``.``, ``..`` and symbolic links resolved), so that the name is never
        empty nor that of another folder; ``report.html`` inside the folder when it is the file system's root,
        which has no name. Relative to the current directory when ``path`` is relative.
    """
    from h5ml.model.shard_index import is_index_path

    given = Path(path)
    if not is_index_path(given):
        return given.with_name(f"{given.stem}.report.html")
    resolved = Path(os.path.realpath(given))
    folder = resolved if resolved.is_dir() else resolved.parent
    page = folder.parent / f"{folder.name}.report.html" if folder.name else folder / "report.html"
    return page if given.is_absolute() else Path(os.path.relpath(page))


def render_report(path: str | os.PathLike[str]) -> RenderedReport:
    """The HTML report of an h5ml file or a sharded dataset, as text (what :func:`write_report` writes).

    Parameters
    ----------
    path
        An h5ml file; or the index of a sharded dataset (a ``.json`` file, or a folder holding ``index.json``).

    Returns
    -------
    RenderedReport
        The page; why the reader refused the dataset when it did, else None; and the validator's verdict.

    Raises
    ------
    H5MLError
        If ``path`` is not an h5ml file or index, or the reader refuses it.
    ImportError
        If matplotlib is not installed.
    """
    _require_matplotlib()
    from h5ml.tools.report.collect import collect
    from h5ml.tools.report.html import render_page

    facts = collect(path)
    return RenderedReport(render_page(facts), facts.refused, facts.valid)


def _require_matplotlib() -> None:
    try:
        import matplotlib  # noqa: F401  (the plots need it; said here, before any work)
    except ImportError as exc:
        raise ImportError(
            f"the report draws its plots with matplotlib, which is not installed ({exc}); "
            'install it with pip install "h5ml[report]"'
        ) from exc


def write_report(
    path: str | os.PathLike[str], output: str | os.PathLike[str] | None = None, *, overwrite: bool = False
) -> WrittenReport:
    """Write the HTML report of an h5ml file or a sharded dataset.

    Parameters
    ----------
    path
        An h5ml file; or the index of a sharded dataset (a ``.json`` file, or a folder holding ``index.json``).
    output
        The HTML file to write; None: :func:`default_output`.
    overwrite
        Replace an existing ``output``.

    Returns
    -------
    WrittenReport
        The page written; why the reader refused the dataset when it did (the validator found errors in it:
        the page then shows its card and validation only), else None; and whether the validator found it valid.

    Raises
    ------
    FileNotFoundError
        If ``path`` does not exist, or the output's folder does not.
    FileExistsError
        If ``output`` exists and ``overwrite`` is False; or, ``overwrite`` or not, is ``path`` itself, a file or
        path of the sharded dataset ``path`` (its index, a shard, its folder) or an HDF5 file
        (:func:`h5ml.ingest.document_output.check_document_output`).
    IsADirectoryError
        If ``output`` is a directory.
    OSError
        If ``output`` is a FIFO, a device or a socket.
    H5MLError
        If ``path`` is not an h5ml file or index (:class:`h5ml.errors.NotH5MLError`, ...), or the reader refuses it.
    ImportError
        If matplotlib is not installed.
    """
    from h5ml.ingest.document_output import check_document_output
    from h5ml.model.text_files import atomic_text_file

    _require_matplotlib()
    out = check_document_output(default_output(path) if output is None else output, overwrite, [path])
    page = render_report(path)
    with atomic_text_file(out) as handle:
        handle.write(page.text)
    return WrittenReport(out, page.refused, page.valid)
