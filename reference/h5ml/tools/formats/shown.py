"""What the machine-readable reports of ``h5ml validate`` share: the issues shown, the file's URI, the messages.

``--min-severity`` trims the issues every report lists (:func:`shown_issues`),
never the verdict or the exit status, which count every issue found (§9.1,
§9.3-R2). A file is named by a URI relative to the current directory where it
lies below it (:func:`artifact_uri`), as CI services expect paths relative to
the checkout. Messages are in the command line's words, their control
characters escaped (:func:`issue_text`, §10.2).
"""

from __future__ import annotations

import os
import urllib.parse
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Final

from h5ml.model.remote import is_url
from h5ml.tools.console import safe_text

if TYPE_CHECKING:  # pragma: no cover
    from h5ml.validator.checks import Issue
    from h5ml.validator.report import FileReport

__all__ = ["SEVERITIES", "artifact_uri", "every_report", "issue_text", "shown_issues"]

#: The severities in increasing order, as ``--min-severity`` names them.
SEVERITIES: Final = ("info", "warning", "error")


def shown_issues(file_report: FileReport, min_severity: str = "info") -> list[Issue]:
    """The issues of one file that a report lists: those of severity ``min_severity`` or higher, in order (§9.3).

    Parameters
    ----------
    file_report
        One file's report.
    min_severity
        ``"info"`` (every issue), ``"warning"`` or ``"error"``.

    Returns
    -------
    list of Issue
        The issues listed in the report (at most ``max_issues_per_code`` of each code), in the order found.
    """
    least = SEVERITIES.index(min_severity)
    return [issue for issue in file_report.issues if SEVERITIES.index(str(issue.severity.value)) >= least]


def every_report(files: Sequence[FileReport]) -> Iterator[FileReport]:
    """Each file's report, an index's followed by those of its shards (§12), in the order the files were given."""
    for file_report in files:
        yield from file_report.each()


def issue_text(message: str) -> str:
    """An issue's message in the command line's words, its control characters escaped (line feeds kept, §10.2).

    Parameters
    ----------
    message
        The validator's message (:attr:`h5ml.validator.Issue.message`).

    Returns
    -------
    str
        ``"... pass --overwrite"`` rather than ``"... pass overwrite=True (--overwrite)"``.
    """
    from h5ml.ingest.options import cli_words  # imported here: h5ml.ingest is slow to import

    return safe_text(cli_words(message), lines=True)


def artifact_uri(path: str, cwd: str | None = None) -> str:
    """The URI of a checked file, as CI services read it: relative to ``cwd`` where the file lies below it.

    Parameters
    ----------
    path
        The file's path as the validator was given it, or a URL (``s3://bucket/ds.h5``).
    cwd
        The folder relative URIs start from; None: the current directory.

    Returns
    -------
    str
        A URL unchanged; ``data/train.h5`` (percent-encoded, ``/`` separators) for a file below ``cwd``;
        ``file:///abs/path.h5`` for one elsewhere.
    """
    if is_url(path):
        return path
    absolute = os.path.abspath(path)
    try:
        relative = os.path.relpath(absolute, os.path.abspath(cwd or os.getcwd()))
    except ValueError:  # pragma: no cover - Windows: another drive
        relative = os.pardir
    if relative != os.pardir and not relative.startswith(os.pardir + os.sep):
        return urllib.parse.quote(os.fsencode(Path(relative).as_posix()), safe="/")
    return Path(absolute).as_uri()
