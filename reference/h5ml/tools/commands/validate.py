"""``h5ml validate``: check files against the specification and report their issues (§9).

The report is a table per file (code, severity, path, message, clause) and a
verdict line, or the JSON report of ``schema/h5ml-report-1.0.schema.json``
(``--format json``). The exit code says the worst outcome over the files.

``--min-severity`` (and ``--quiet``, which shows the verdict lines alone)
trims what the text report shows; the verdict counts every issue, and the
JSON report is complete. The messages are shown in the command line's words
(:func:`h5ml.ingest.options.cli_words`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Final

import click
from rich.console import Console
from rich.table import Table
from rich.text import Text

from h5ml.tools.console import EXIT_ERROR, EXIT_INVALID, EXIT_OK, Streams, plural, print_json

if TYPE_CHECKING:  # pragma: no cover
    from h5ml.validator.runner import FileReport, Issue

__all__ = ["SEVERITIES", "exit_code", "render_file_report", "validate_command"]


def _severity(issue: Issue) -> str:
    return str(issue.severity.value)


def _verdict(file_report: FileReport, strict: bool) -> tuple[str, str]:
    """Return (verdict word, counts) for one file of a report (§9.1)."""
    counts = {"error": 0, "warning": 0, "info": 0}
    for issue in file_report.issues:
        counts[_severity(issue)] = counts.get(_severity(issue), 0) + 1
    text = ", ".join(plural(counts[k], k) for k in ("error", "warning", "info"))
    if file_report.timed_out:
        return "NOT FINISHED (the --timeout limit was reached; the file was not fully checked)", text
    if not file_report.readable:
        return "UNREADABLE", text
    if not file_report.valid:
        return "INVALID", text
    if strict and counts["warning"]:
        return "INVALID (--strict: warnings fail)", text
    return "VALID", text


def exit_code(files: Sequence[FileReport], strict: bool) -> int:
    """The exit code of a validation (§9.1): 2 when a file is unreadable, 1 when one is invalid, else 0 (SPEC §9.3.2-R1).

    Parameters
    ----------
    files
        The reports of the files checked.
    strict
        Count warnings as failures (``--strict``).
    """
    if any(not f.readable for f in files):
        return EXIT_ERROR
    if any(not (f.valid_strict if strict else f.valid) for f in files):
        return EXIT_INVALID
    return EXIT_OK


#: The severities in increasing order, as ``--min-severity`` names them.
SEVERITIES: Final = ("info", "warning", "error")


def _issue_table(issues: Sequence[Issue]) -> Table:
    from h5ml.ingest.options import cli_words  # imported here: h5ml.ingest is slow to import

    table = Table(show_lines=False, expand=False)
    for column in ("code", "severity", "path", "message", "clause"):
        table.add_column(column, overflow="fold")
    for issue in issues:
        table.add_row(
            Text(issue.code),
            Text(_severity(issue)),
            Text(issue.path),
            Text(cli_words(issue.message)),
            Text(issue.clause),
        )
    return table


def render_file_report(
    console: Console, file_report: FileReport, strict: bool, min_severity: str = "info", quiet: bool = False
) -> None:
    """Print a file's issues as a table (code, severity, path, message, clause), then its verdict line (§9.3).

    Parameters
    ----------
    console
        Where to print.
    file_report
        One file's report.
    strict
        Whether warnings make the verdict INVALID (``--strict``).
    min_severity
        The least severity shown in the table: ``"info"`` (every issue), ``"warning"`` or ``"error"``.
    quiet
        Print the verdict line alone.
    """
    least = SEVERITIES.index(min_severity)
    shown = [issue for issue in file_report.issues if SEVERITIES.index(_severity(issue)) >= least]
    if shown and not quiet:
        console.print(Text(str(file_report.path), style="bold"))
        console.print(_issue_table(shown))
    verdict, counts = _verdict(file_report, strict)
    console.print(Text(f"{file_report.path}: {verdict} ({counts})"))


@click.command("validate")
@click.argument("files", nargs=-1, required=True)
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--strict", is_flag=True, help="Count warnings as failures (exit 1).")
@click.option("--deep", is_flag=True, help="Also read every sample (offsets, codes, fingerprints).")
@click.option(
    "--timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    help="Seconds allowed per file; each file is checked in a child process that is stopped after it (E101). "
    "Default: 60 s plus 1 s per GB of the file, or with --deep plus 1 s per 10 MB (a 1 GB file: 61 s, 160 s "
    "with --deep).",
)
@click.option("--jobs", type=click.IntRange(min=1), default=1, show_default=True, help="Files checked in parallel.")
@click.option(
    "--min-severity",
    type=click.Choice(SEVERITIES),
    default="info",
    show_default=True,
    help="The least severity the text report lists (warning: no info notes); the verdict counts every issue.",
)
@click.option("--quiet", "-q", is_flag=True, help="Print only the verdict line of each file (text report).")
@click.pass_obj
def validate_command(
    streams: Streams,
    files: tuple[str, ...],
    fmt: str,
    strict: bool,
    deep: bool,
    timeout: float | None,
    jobs: int,
    min_severity: str,
    quiet: bool,
) -> int:
    """Check FILE... against the h5ml specification.

    Exit 0 when every file is valid, 1 when one is invalid (with --strict:
    also when one has a warning), 2 when one cannot be read at all (not HDF5,
    a directory, missing, open for writing in another process, or it did not
    finish within --timeout).
    """
    from h5ml.validator.runner import AUTO, validate_many

    report = validate_many(list(files), deep=deep, timeout=AUTO if timeout is None else timeout, jobs=jobs)
    if fmt == "json":
        print_json(streams, report.to_json(strict=strict))
    else:
        console = streams.console()
        for file_report in report.files:
            render_file_report(console, file_report, strict, min_severity, quiet)
        if len(report.files) > 1:
            failed = sum(1 for f in report.files if not f.readable or not (f.valid_strict if strict else f.valid))
            console.print(Text(f"{len(report.files)} files checked, {failed} failed"))
    return exit_code(report.files, strict)
