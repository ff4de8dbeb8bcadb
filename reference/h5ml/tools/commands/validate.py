"""``h5ml validate``: check files against the specification and report their issues (§9).

The report is a table per file (code, severity, path, message, clause) and a
verdict line, the JSON report of ``schema/h5ml-report-1.0.schema.json``
(``--format json``), a SARIF 2.1.0 log for code scanning (``--format sarif``,
:mod:`h5ml.tools.formats.sarif`) or JUnit XML for CI test views
(``--format junit``, :mod:`h5ml.tools.formats.junit`). The exit code says the
worst outcome over the files, whatever the format. ``--output FILE`` writes
the report to FILE, atomically (``-``: standard output, the default); an
existing FILE is replaced only with ``--overwrite``, and never one of the
FILEs checked.

``--min-severity`` (and ``--quiet``, which shows the verdict lines alone)
trims what the text report shows, and ``--min-severity`` what the SARIF and
JUnit reports list; the verdict counts every issue. SARIF and JUnit refuse
``--quiet`` (they have no verdict lines) and ``--strict`` with
``--min-severity error`` (the warnings that fail the run would not be in the
report). The messages are shown in the command line's words
(:func:`h5ml.ingest.options.cli_words`).

``--max-issues-per-code N`` (default 100, 0 for all) lists at most N issues of
each code, in the text and the JSON report alike; the others are counted
("... and 99,900 more E110 issues"; ``issue_totals`` and ``omitted`` in JSON),
and the verdict and exit status count them (SPEC §9.3-R2).

``--timeout`` covers printing too: each file's limit starts when its check
starts, and the text report of a file stops at that limit with a line that
says how many issues were not printed (exit status 2, as for a check that was
stopped). A JSON report is written whole: it is never cut.

A FILE that is the index of a sharded dataset (a ``.json`` file, or a folder
holding ``index.json``) is validated as a dataset (SPEC §12,
:func:`h5ml.validator.shards.validate_index`): the index, then every shard,
``--jobs`` at a time, each with its own ``--timeout``, then their agreement.
The index's issues come first, at the JSON pointers of its members, then the
report of each shard; ``--shallow-shards`` checks only the index and each
shard's metadata. The exit code counts the shards too.

Each file is checked once (:mod:`h5ml.tools.given_files`): a FILE given
again (another spelling, a link) is said on standard error and not checked
again; a FILE that an index given too lists as a shard is checked as that
shard, the index's report records it (``given_shards``) and the text report
says so under the dataset's verdict. ``--skip-other-json`` (the pre-commit
hook's) skips the ``.json`` FILEs that do not say they are h5ml indexes. The
text and JUnit reports name a shard below its index as given
(:func:`h5ml.tools.formats.shown.shard_name`); every name is written with
its control characters and the bytes that are not UTF-8 escaped (§10.2).
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, Final

import click
from rich.console import Console
from rich.table import Table
from rich.text import Text

from h5ml.model.remote import is_url
from h5ml.tools.console import EXIT_ERROR, EXIT_INVALID, EXIT_OK, Streams, plural, print_json, safe_text
from h5ml.tools.formats.shown import SEVERITIES, shard_name, shown_issues
from h5ml.tools.given_files import GivenFiles, sort_out
from h5ml.tools.output_file import STDOUT, check_output_file, output_stream
from h5ml.tools.storage_options import parse_storage_options, storage_option_flag

if TYPE_CHECKING:  # pragma: no cover
    from h5ml.validator.runner import FileReport, Issue, Timeout

__all__ = ["SEVERITIES", "exit_code", "render_file_report", "validate_command"]


def _dataset_line(index_report: FileReport, strict: bool) -> str:
    """The verdict of a whole sharded dataset (§12): the index's own line counts only its own issues."""
    shards = index_report.shards
    failing = [s for s in shards if not s.readable or not (s.valid_strict if strict else s.valid)]
    ok = index_report.readable and (index_report.valid_strict if strict else index_report.valid) and not failing
    totals = {k: sum(s.counts[k] for s in index_report.each()) for k in ("error", "warning", "info")}
    counts = ", ".join(plural(totals[k], k) for k in ("error", "warning", "info"))
    if ok:
        verdict = "VALID"
    elif strict and not any(not s.valid for s in index_report.each()) and index_report.readable:
        verdict = "INVALID (--strict: warnings fail)"
    else:
        verdict = "INVALID"
    return (
        f"{index_report.path}: the sharded dataset is {verdict}: {len(failing)} of "
        f"{plural(len(shards), 'shard')} failed ({counts} in the index and its shards)"
    )


def _severity(issue: Issue) -> str:
    return str(issue.severity.value)


def _verdict(file_report: FileReport, strict: bool) -> tuple[str, str]:
    """Return (verdict word, counts) for one file of a report (§9.1); the counts include the issues not listed."""
    counts = file_report.counts
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
    every = [report for f in files for report in f.each()]  # SPEC §12: the shards of an index count too
    if any(not f.readable for f in every):
        return EXIT_ERROR
    if any(not (f.valid_strict if strict else f.valid) for f in every):
        return EXIT_INVALID
    return EXIT_OK


#: Rows of one printed table: a longer list is printed in several tables, with the time limit checked between
#: (rich takes about 2 ms a row: 0.4 s a table).
_ROWS_PER_TABLE: Final = 200


def _issue_table(issues: Sequence[Issue], header: bool = True) -> Table:
    from h5ml.ingest.options import cli_words  # imported here: h5ml.ingest is slow to import

    table = Table(show_lines=False, expand=False, show_header=header)
    for column in ("code", "severity", "path", "message", "clause"):
        table.add_column(column, overflow="fold")
    for issue in issues:
        table.add_row(
            Text(issue.code),
            Text(_severity(issue)),
            Text(safe_text(issue.path)),  # §10.2: the file's names never drive the terminal
            Text(safe_text(cli_words(issue.message), lines=True)),
            Text(issue.clause),
        )
    return table


def _omitted_lines(file_report: FileReport, least: int) -> Iterator[str]:
    """``... and 99,900 more E110 issues`` for each code shown whose issues past the cap were counted, not listed."""
    from h5ml.spec.codes import CODES

    for code, n in file_report.omitted.items():
        if n and SEVERITIES.index(CODES[code].severity.value) >= least:
            yield (
                f"... and {n:,} more {code} {'issue' if n == 1 else 'issues'} (counted, not listed: at most "
                f"{file_report.max_issues_per_code} of each code are, --max-issues-per-code N lists N, 0 all)"
            )


def render_file_report(
    console: Console,
    file_report: FileReport,
    strict: bool,
    min_severity: str = "info",
    quiet: bool = False,
    deadline: float | None = None,
    name: str | None = None,
) -> bool:
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
    deadline
        ``time.monotonic()`` after which no more issues are printed (the ``--timeout`` limit): the first
        table (at most 200 rows, a fraction of a second) is always printed, so that a check stopped at the
        limit still shows what it found; the rows left are counted in one line instead, and the verdict
        line follows. None: no limit.
    name
        The name the file is shown by (a shard's, :func:`h5ml.tools.formats.shown.shard_name`); None: its
        path. Its control characters and lone surrogates are escaped (§10.2).

    Returns
    -------
    bool
        True when every issue to show was printed, False when the deadline cut the list.
    """
    least = SEVERITIES.index(min_severity)
    shown = shown_issues(file_report, min_severity)
    shown_name = safe_text(file_report.path if name is None else name)
    complete = True
    if shown and not quiet:
        console.print(Text(shown_name, style="bold"), soft_wrap=True)
        for start in range(0, len(shown), _ROWS_PER_TABLE):
            if start and deadline is not None and time.monotonic() >= deadline:
                left = len(shown) - start + sum(file_report.omitted.values())
                console.print(
                    Text(
                        f"... printing stopped at the --timeout limit: {left:,} more issues of {shown_name} "
                        "were found and not printed (the verdict below counts them); give a longer --timeout, "
                        "a smaller --max-issues-per-code, or --format json for the whole list"
                    )
                )
                complete = False
                break
            console.print(_issue_table(shown[start : start + _ROWS_PER_TABLE], header=start == 0))
        if complete:
            for line in _omitted_lines(file_report, least):
                console.print(Text(line))
    verdict, counts = _verdict(file_report, strict)
    what = " (the index itself)" if file_report.kind == "index" else ""  # its dataset's verdict follows (§12)
    # A shallow VALID checked the metadata, not the stored values (§9.1): say which one this was.
    if file_report.kind == "index" or not verdict.startswith("VALID"):
        how = ""
    elif file_report.deep:
        how = "; every sample was read and checked (--deep)"
    else:
        how = "; the samples were not read: --deep reads and checks every one"
    # one line whatever the path's length (a log or grep must find the whole verdict)
    console.print(Text(f"{shown_name}{what}: {verdict} ({counts}){how}"), soft_wrap=True)
    return complete


def _checked(
    given: GivenFiles,
    deep: bool,
    timeout: float | None,
    jobs: int,
    cap: int,
    shallow_shards: bool = False,
    storage_options: dict[str, Any] | None = None,
) -> Iterator[tuple[FileReport, float | None]]:
    """Each file's report, in the order given, with the end of its time limit (None without one).

    The files are checked in ``jobs`` warm child processes, file after file
    (:func:`h5ml.validator.runner.validate_each`): a crash or a time limit
    restarts only the child concerned. A file's limit starts when its check
    starts, so that printing its report falls within it too. An index is
    validated with its shards (:func:`h5ml.validator.shards.validate_index`,
    each shard with its own limit) and printed without a limit of its own; the
    FILEs it covers are recorded in its report, and any it did not check are
    checked last, on their own (:meth:`GivenFiles.with_given_shards`).
    """
    from h5ml.validator.runner import is_index

    files = given.checked
    left: list[str] = []
    start = 0
    while start < len(files):
        if is_index(files[start]):
            from h5ml.validator.shards import validate_index  # h5py in this process: only for an index

            report, not_covered = given.with_given_shards(
                validate_index(
                    files[start],
                    deep=deep,
                    timeout=_limit(timeout),
                    jobs=jobs,
                    max_issues_per_code=cap,
                    shallow_shards=shallow_shards,
                    storage_options=storage_options if is_url(files[start]) else None,
                )
            )
            left.extend(not_covered)
            yield report, None
            start += 1
            continue
        end = start
        while end < len(files) and not is_index(files[end]):
            end += 1
        yield from _files_checked(files[start:end], deep, timeout, jobs, cap, storage_options)
        start = end
    if left:
        yield from _files_checked(left, deep, timeout, jobs, cap, storage_options)


def _limit(timeout: float | None) -> Timeout:
    from h5ml.validator.runner import AUTO

    return AUTO if timeout is None else timeout


def _files_checked(
    files: Sequence[str],
    deep: bool,
    timeout: float | None,
    jobs: int,
    cap: int,
    storage_options: dict[str, Any] | None,
) -> Iterator[tuple[FileReport, float | None]]:
    """The reports of files that are not indexes, each with the end of its time limit."""
    from h5ml.validator.runner import default_timeout, validate_each

    for report, began in validate_each(
        files,
        deep=deep,
        timeout=_limit(timeout),
        jobs=jobs,
        max_issues_per_code=cap,
        storage_options=storage_options,
    ):
        seconds = default_timeout(report.path, deep) if timeout is None else timeout
        yield report, began + seconds


@click.command("validate")
@click.argument("files", nargs=-1, required=True)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json", "sarif", "junit"]),
    default="text",
    show_default=True,
    help="text: a table per file; json: the report of schema/h5ml-report-1.0.schema.json; sarif: SARIF 2.1.0 "
    "for code scanning (github/codeql-action/upload-sarif); junit: JUnit XML, a test suite per file and a test "
    "case per issue code (GitLab, Jenkins). The exit status is the same for every format.",
)
@click.option(
    "--output",
    "-o",
    metavar="FILE",
    default=STDOUT,
    show_default=True,
    help="Write the report to this file, atomically (complete or not at all); - is standard output.",
)
@click.option("--overwrite", is_flag=True, help="Replace the --output file if it exists.")
@click.option("--strict", is_flag=True, help="Count warnings as failures (exit 1).")
@click.option("--deep", is_flag=True, help="Also read every sample (offsets, codes, fingerprints, chunk checksums).")
@click.option(
    "--timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    help="Seconds allowed per file; the files are checked in a child process (one per --jobs) that is stopped "
    "when a file passes the limit (E101) and replaced for the next file. "
    "Default: 60 s plus 1 s per GB of the file, or with --deep plus 1 s per 10 MB (a 1 GB file: 61 s, 160 s "
    "with --deep).",
)
@click.option(
    "--jobs",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Files checked in parallel, each job in its own child process that checks file after file.",
)
@click.option(
    "--min-severity",
    type=click.Choice(SEVERITIES),
    default="info",
    show_default=True,
    help="The least severity the text, SARIF and JUnit reports list (warning: no info notes); the verdict and "
    "the exit status count every issue.",
)
@click.option("--quiet", "-q", is_flag=True, help="Print only the verdict line of each file (text report).")
@click.option(
    "--shallow-shards",
    "shallow_shards",
    is_flag=True,
    help="For the index of a sharded dataset: check only the index and each shard's metadata (no shard "
    "validated as a file, no sample data read, no fingerprint recomputed).",
)
@click.option(
    "--skip-other-json",
    "skip_other_json",
    is_flag=True,
    help="Skip each .json FILE (or folder's index.json) that does not say it is the index of an h5ml dataset "
    '(no "format": "h5ml-index"), with a note on standard error, instead of reporting it (E170): for a pre-commit '
    "hook, which is given every index.json of a repository, other projects' too.",
)
@click.option(
    "--max-issues-per-code",
    "max_issues_per_code",
    type=click.IntRange(min=0),
    default=100,
    show_default=True,
    help="Issues of one code listed per file, in the text and the JSON report; the others are counted "
    "('... and 99,900 more E110 issues'), and the verdict counts them. 0 lists every issue.",
)
@storage_option_flag
@click.pass_obj
def validate_command(
    streams: Streams,
    files: tuple[str, ...],
    fmt: str,
    output: str,
    overwrite: bool,
    strict: bool,
    deep: bool,
    timeout: float | None,
    jobs: int,
    min_severity: str,
    quiet: bool,
    shallow_shards: bool,
    skip_other_json: bool,
    max_issues_per_code: int,
    storage_options: tuple[str, ...] = (),
) -> int:
    """Check FILE... against the h5ml specification; a FILE may be a URL (s3://bucket/ds.h5).

    A FILE may be the index of a sharded dataset (index.json, or the folder
    holding it): the index, every shard (--jobs at a time) and their agreement
    are checked; --shallow-shards checks the index and the shards' metadata only.

    Exit 0 when every file is valid, 1 when one is invalid (with --strict:
    also when one has a warning), 2 when one cannot be read at all (not HDF5,
    a directory, missing, open for writing in another process, or it did not
    finish within --timeout, printing its report included); the shards of an
    index count as files. The exit status is the same for every --format.

    Each file is checked once: a FILE given twice (or through a link) is
    reported once, and a FILE that is a shard of an index given too is
    checked as that shard (the JSON report lists it in the index's
    given_shards).
    """
    from h5ml.validator.runner import is_index

    if shallow_shards and not any(is_index(f) for f in files):
        raise click.UsageError(
            "--shallow-shards applies to the index of a sharded dataset (a .json file, or a folder holding "
            "index.json), and no FILE given is one: leave it out, or give the index"
        )
    _check_format_options(fmt, strict, min_severity, quiet)
    options = parse_storage_options(storage_options, files)
    check_output_file(output, overwrite, files)
    given = sort_out(files, skip_other_json=skip_other_json, shallow_shards=shallow_shards, storage_options=options)
    _notes(streams, given)
    checked = _checked(given, deep, timeout, jobs, max_issues_per_code, shallow_shards, options)
    if fmt != "text":
        reports = [report for report, _ in checked]  # every file checked before a byte is written
        with output_stream(output, streams.stdout) as out:
            return _write_document(Streams(out, streams.stderr), fmt, reports, strict, min_severity)
    with output_stream(output, streams.stdout) as out:
        return _text_report(Streams(out, streams.stderr), checked, strict, min_severity, quiet)


def _notes(streams: Streams, given: GivenFiles) -> None:
    """Say on standard error which FILEs are not checked (again), and why, before any is checked."""
    for path, before in given.repeated:
        streams.stderr.write(
            f"h5ml: note: {safe_text(path)} is the file {safe_text(before)} given before: it is checked once\n"
        )
    for path in given.skipped:
        streams.stderr.write(
            f"h5ml: note: {safe_text(path)} is not the index of an h5ml dataset (it has no "
            '"format": "h5ml-index"): skipped (--skip-other-json)\n'
        )


def _check_format_options(fmt: str, strict: bool, min_severity: str, quiet: bool) -> None:
    """Refuse the options a SARIF or JUnit report cannot honour, before any file is checked."""
    if fmt not in ("sarif", "junit"):
        return
    if quiet:
        raise click.UsageError(
            f"--quiet prints the verdict lines of the text report, and --format {fmt} has none: leave out --quiet "
            "(--min-severity error lists errors only)"
        )
    if strict and min_severity == "error":
        raise click.UsageError(
            f"--strict fails on warnings, and --min-severity error leaves them out of the --format {fmt} report, "
            "which would then not say why the run failed: give --min-severity warning, or leave out --strict"
        )


def _write_document(streams: Streams, fmt: str, reports: Sequence[FileReport], strict: bool, min_severity: str) -> int:
    """Write the JSON, SARIF or JUnit report of the files checked; return the exit status (§9.3.2)."""
    code = exit_code(reports, strict)
    if fmt == "json":
        from h5ml.validator.runner import Report

        print_json(streams, Report(tuple(reports)).to_json(strict=strict))
    elif fmt == "sarif":
        from h5ml.tools.formats.sarif import sarif_report

        print_json(streams, sarif_report(reports, strict=strict, exit_code=code, min_severity=min_severity))
    else:
        from h5ml.tools.formats.junit import junit_report

        streams.stdout.write(junit_report(reports, strict=strict, min_severity=min_severity))
    return code


def _text_report(
    streams: Streams,
    checks: Iterator[tuple[FileReport, float | None]],
    strict: bool,
    min_severity: str,
    quiet: bool,
) -> int:
    """Print each file's table and verdict as its check ends; return the exit status (2 when printing was cut)."""
    console = streams.console()
    checked: list[FileReport] = []
    complete = True
    for file_report, deadline in checks:
        checked.append(file_report)
        for shown in file_report.shards:  # SPEC §12: each shard's own report, then the index's verdict
            name = shard_name(file_report, shown)
            complete = render_file_report(console, shown, strict, min_severity, quiet, name=name) and complete
        complete = render_file_report(console, file_report, strict, min_severity, quiet, deadline) and complete
        if file_report.kind == "index":
            console.print(Text(safe_text(_dataset_line(file_report, strict))), soft_wrap=True)
        for path, shard in file_report.given_shards:
            name = shard_name(file_report, next(s for s in file_report.shards if s.path == shard))
            console.print(
                Text(
                    f"{safe_text(path)}: checked above, as the shard {safe_text(name)} of {safe_text(file_report.path)}"
                ),
                soft_wrap=True,
            )
    if len(checked) > 1:
        failed = sum(1 for f in checked if not f.readable or not (f.valid_strict if strict else f.valid))
        console.print(Text(f"{len(checked)} files checked, {failed} failed"))
    return exit_code(checked, strict) if complete else EXIT_ERROR
