"""What the machine-readable reports of ``h5ml validate`` share: the issues shown, the file's URI, the messages.

``--min-severity`` trims the issues every report lists (:func:`shown_issues`),
never the verdict or the exit status, which count every issue found (§9.1,
§9.3-R2). A file is named by a URI relative to the current directory where it
lies below it (:func:`artifact_uri`), as CI services expect paths relative to
the checkout; the text and JUnit reports show a shard by its path in its
index, below the index as given (:func:`shard_name`). Messages are in the
command line's words, their control characters escaped (:func:`issue_text`,
§10.2).
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

__all__ = ["SEVERITIES", "artifact_uri", "every_report", "issue_text", "named_reports", "shard_name", "shown_issues"]

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


def named_reports(files: Sequence[FileReport]) -> Iterator[tuple[FileReport, str]]:
    """:func:`every_report`, each with the name a report shows for it: a shard's is :func:`shard_name`."""
    for file_report in files:
        yield file_report, file_report.path
        for shard in file_report.shards:
            yield shard, shard_name(file_report, shard)


def shard_name(index_report: FileReport, shard: FileReport) -> str:
    """The name shown for a shard of an index: its path in the index, below the index's folder as it was given.

    The validator opens a shard at its absolute path (``/home/me/repo/data/ds/train/train-00000.h5``); the
    text and JUnit reports show it as the index names it, from where the index was given:
    ``data/ds/train/train-00000.h5`` for the index ``data/ds/index.json`` or the folder ``data/ds``.

    Parameters
    ----------
    index_report
        The index's report (``kind="index"``): its path as given, a file or the dataset's folder.
    shard
        One of its :attr:`~h5ml.validator.report.FileReport.shards`.

    Returns
    -------
    str
        The shard's name relative to the index as given; a shard at a URL keeps its URL.
    """
    if is_url(shard.path) or is_url(index_report.path):
        return shard.path
    given = index_report.path
    folder = given if os.path.isdir(given) else os.path.dirname(given)
    relative = os.path.relpath(shard.path, os.path.abspath(folder or os.curdir))
    return os.path.join(folder, relative)


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
