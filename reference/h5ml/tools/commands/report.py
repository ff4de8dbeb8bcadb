"""``h5ml report``: write a self-contained HTML page that shows an h5ml file or a sharded dataset.

The page (:func:`h5ml.tools.report.write_report`) holds the dataset card,
the validation result, per split and feature the storage figures and
statistics, plots and previews; it needs no network to view. ``-o`` names
the page; by default it goes beside FILE as ``<stem>.report.html`` (beside
the folder of a sharded dataset, named after it); ``-o -`` writes it to
standard output (UTF-8), as ``h5ml validate -o -`` does. An existing page is
replaced only with ``--overwrite``.

Exit status, for CI: 0 when the validator finds the dataset valid; 1 when it
finds errors (§9.1), and the page is still written: the whole page when the
reader can read the dataset, its card and validation only when the reader
refuses it (an attribute of the wrong type, a missing shard); 2 for unusable
input: a missing file, a file that is not HDF5 or not h5ml ends with one
``h5ml: error:`` line, and no page is written.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TextIO

import click
from rich.text import Text

from h5ml.tools.console import EXIT_INVALID, EXIT_OK, Streams, safe_text
from h5ml.tools.input_paths import INPUT_PATH

if TYPE_CHECKING:  # pragma: no cover
    from h5ml.tools.report import RenderedReport, WrittenReport

__all__ = ["report_command"]


@click.command("report")
@click.argument("file", type=INPUT_PATH)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, allow_dash=True),
    default=None,
    help="The HTML file to write; - is standard output (default: <FILE stem>.report.html beside FILE; for a "
    "sharded dataset <folder>.report.html beside its folder).",
)
@click.option("--overwrite", is_flag=True, help="Replace the output if it exists.")
@click.pass_obj
def report_command(streams: Streams, file: str, output: str | None, overwrite: bool) -> int:
    """Write an HTML report of FILE (an h5ml file, or a sharded dataset's index.json or folder).

    The page shows the dataset card, the validation result, each split's features with their storage and
    statistics, plots and previews; it is one file that needs no network. Large files are read in part:
    metadata, codes and lengths, the first samples and a bounded sample of rows (the page says which).

    Exit status: 0 valid; 1 the validator found errors (the page is still written); 2 unusable input (no such
    file, not HDF5, not h5ml: no page).
    """
    from h5ml.model.shard_index import is_index_path
    from h5ml.tools.console import require_file
    from h5ml.tools.output_file import STDOUT, check_output_file
    from h5ml.tools.report import render_report, write_report

    if not is_index_path(file):
        require_file(file)
    written: WrittenReport | RenderedReport
    if output == STDOUT:
        rendered = render_report(file)
        _write_utf8(streams.stdout, rendered.text)
        written = rendered
    else:
        if output is not None:  # the default page is checked by write_report
            check_output_file(output, overwrite, [file], inputs_are="the source itself (FILE)")
        written = write_report(file, output, overwrite=overwrite)
        streams.console().print(Text(f"wrote {written.page}"), soft_wrap=True)
    if written.refused is not None:
        streams.stderr.write(
            f"h5ml: the dataset is invalid and could not be read ({safe_text(written.refused)}); the page shows "
            f"its card and validation only (h5ml validate {safe_text(file)} lists the same issues)\n"
        )
        return EXIT_INVALID
    if not written.valid:
        streams.stderr.write(
            f"h5ml: the dataset is INVALID: the validator found errors; the page lists them in its Validation "
            f"section (h5ml validate {safe_text(file)} lists the same issues)\n"
        )
        return EXIT_INVALID
    return EXIT_OK


def _write_utf8(stream: TextIO, text: str) -> None:
    """Write ``text`` to ``stream`` as UTF-8, the page's declared charset, whatever the stream's own encoding."""
    binary = getattr(stream, "buffer", None)
    if binary is None:  # a text-only stream (io.StringIO): it holds str, no encoding to choose
        stream.write(text)
        return
    stream.flush()
    binary.write(text.encode("utf-8"))
    binary.flush()
