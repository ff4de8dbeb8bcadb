"""``h5ml validate --format sarif``: the report as one SARIF 2.1.0 run, for code scanning (§9.2, §9.3).

SARIF (OASIS Static Analysis Results Interchange Format 2.1.0) is what
GitHub code scanning (``github/codeql-action/upload-sarif``) and other CI
services read. The document holds one run:

- ``tool.driver``: name ``h5ml``, its version, ``informationUri``, and
  ``rules``: one reporting descriptor per issue code the results use, in code
  order: ``id`` the code (``E106``), ``name`` its registry name
  (``incomplete``), ``shortDescription`` the registry's summary, ``helpUri``
  the clause in SPEC.md (:func:`h5ml.tools.formats.spec_links.clause_uri`),
  ``defaultConfiguration.level`` from its severity, ``properties.clause``.
- ``artifacts``: each file checked (an index's shards after it), its
  ``location.uri`` relative to the current directory where it lies below it,
  and in ``properties`` what the JSON report says of it (kind, readable,
  valid, counts, totals and omitted issues per code; for an index,
  ``givenShards``: the FILEs given beside it that are its shards, each
  checked once, as that shard).
- ``results``: one per issue listed at ``--min-severity`` or above (at most
  ``--max-issues-per-code`` of each code): ``ruleId``, ``level`` (error,
  warning, note for info), ``message`` in the command line's words,
  ``locations`` (the file as ``physicalLocation.artifactLocation``, the HDF5
  path, or an index's JSON pointer, as a ``logicalLocation``'s
  ``fullyQualifiedName``), ``partialFingerprints`` (stable across runs: code,
  file, path and the issue's rank among those of the same code and path; never
  the message, whose text is not stable, §9.3.1) and ``properties.clause``.
  Binary files have no lines, so results carry no ``region``: a SARIF viewer
  shows them at file level.
- ``invocations``: the exit status (the same as the text report's, §9.3.2),
  whether every file could be checked (``executionSuccessful``: false when one
  was unreadable or not finished, exit 2), the options that change the verdict,
  and one notification per code whose issues were counted and not listed.

The document is deterministic: the same files give the same bytes (no time
stamps, no absolute paths for files below the current directory).
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final

from h5ml._version import __version__
from h5ml.spec.codes import CODES
from h5ml.tools.console import EXIT_ERROR, safe_text
from h5ml.tools.formats.shown import SEVERITIES, artifact_uri, issue_text, named_reports, shown_issues
from h5ml.tools.formats.spec_links import H5ML_URI, clause_uri

if TYPE_CHECKING:  # pragma: no cover
    from h5ml.validator.checks import Issue
    from h5ml.validator.report import FileReport

__all__ = ["SARIF_SCHEMA", "SARIF_VERSION", "sarif_report"]

#: The SARIF version written.
SARIF_VERSION: Final = "2.1.0"
#: The ``$schema`` of the document: the OASIS JSON Schema of SARIF 2.1.0.
SARIF_SCHEMA: Final = "https://json.schemastore.org/sarif-2.1.0.json"
#: Severity -> SARIF level.
_LEVELS: Final = {"error": "error", "warning": "warning", "info": "note"}
#: The key of each result's partial fingerprint (versioned: a new recipe would take a new key).
_FINGERPRINT: Final = "h5mlIssue/v1"


def _level(severity: object) -> str:
    return _LEVELS[str(getattr(severity, "value", severity))]


def _rule(code: str) -> dict[str, Any]:
    """The reporting descriptor of one issue code (§9.2)."""
    entry = CODES[code]
    return {
        "id": code,
        "name": entry.name,
        "shortDescription": {"text": entry.summary},
        "helpUri": clause_uri(entry.clause),
        "defaultConfiguration": {"level": _level(entry.severity)},
        "properties": {"clause": entry.clause, "severity": str(entry.severity.value), "deep": entry.deep},
    }


def _artifact(file_report: FileReport, shown_as: str, uri: str, strict: bool) -> dict[str, Any]:
    artifact: dict[str, Any] = {
        "location": {"uri": uri},
        "roles": ["analysisTarget"],
        "properties": {
            "path": safe_text(shown_as),
            "kind": file_report.kind,
            "readable": file_report.readable,
            "valid": file_report.valid_strict if strict else file_report.valid,
            "validStrict": file_report.valid_strict,
            "formatVersion": file_report.format_version,
            "counts": file_report.counts,
            "issueTotals": file_report.totals,
            "omitted": {code: n for code, n in file_report.omitted.items() if n},
        },
    }
    if file_report.given_shards:  # the FILEs given beside this index that are its shards, checked as those
        artifact["properties"]["givenShards"] = [safe_text(given) for given, _ in file_report.given_shards]
    return artifact


def _result(issue: Issue, uri: str, index: int, rule_index: int, rank: int, pointer: bool) -> dict[str, Any]:
    """One issue as a SARIF result; ``rank`` tells apart the issues of one code at one path."""
    path = safe_text(issue.path)
    digest = hashlib.sha256("\0".join((issue.code, uri, issue.path, str(rank))).encode("utf-8", "surrogateescape"))
    return {
        "ruleId": issue.code,
        "ruleIndex": rule_index,
        "level": _level(issue.severity),
        "message": {"text": issue_text(issue.message)},
        "locations": [
            {
                "physicalLocation": {"artifactLocation": {"uri": uri, "index": index}},
                "logicalLocations": [
                    {
                        "fullyQualifiedName": path,
                        "properties": {"pathKind": "json-pointer" if pointer else "hdf5"},
                    }
                ],
            }
        ],
        "partialFingerprints": {_FINGERPRINT: digest.hexdigest()},
        "properties": {"clause": issue.clause, "name": issue.name},
    }


def _omitted_notes(file_report: FileReport, uri: str, index: int, least: Sequence[str]) -> list[dict[str, Any]]:
    """A notification for each code of a file whose issues past ``--max-issues-per-code`` were only counted."""
    notes = []
    for code, n in file_report.omitted.items():
        if n and str(CODES[code].severity.value) in least:
            notes.append(
                {
                    "level": "note",
                    "message": {
                        "text": f"{n:,} more {code} {'issue' if n == 1 else 'issues'} of {safe_text(file_report.path)} "
                        f"were counted, not listed: at most {file_report.max_issues_per_code} of each code are "
                        "(--max-issues-per-code N lists N, 0 all); the exit status counts them"
                    },
                    "descriptor": {"id": code},
                    "locations": [{"physicalLocation": {"artifactLocation": {"uri": uri, "index": index}}}],
                }
            )
    return notes


def sarif_report(
    files: Sequence[FileReport],
    *,
    strict: bool,
    exit_code: int,
    min_severity: str = "info",
    cwd: str | None = None,
) -> dict[str, Any]:
    """The SARIF 2.1.0 document of a validation: one run, every file's issues as results (§9.2, §9.3).

    Parameters
    ----------
    files
        The reports of the files checked, in the order given; an index's shards are included after it (§12).
    strict
        ``--strict``: warnings make a file not valid (recorded in the artifacts and the invocation).
    exit_code
        The command's exit status (:func:`h5ml.tools.commands.validate.exit_code`, §9.3.2).
    min_severity
        The least severity listed as a result: ``"info"``, ``"warning"`` or ``"error"``; the verdicts and the
        exit status count every issue.
    cwd
        The folder the artifacts' URIs are relative to; None: the current directory.

    Returns
    -------
    dict
        The SARIF log: ``$schema``, ``version`` ``"2.1.0"`` and ``runs`` (one run), ready for ``json.dumps``.
    """
    named = list(named_reports(files))
    reports = [r for r, _ in named]
    uris = [artifact_uri(r.path, cwd) for r in reports]
    shown = [shown_issues(r, min_severity) for r in reports]
    codes = sorted({issue.code for issues in shown for issue in issues})
    rule_index = {code: i for i, code in enumerate(codes)}
    results: list[dict[str, Any]] = []
    notes: list[dict[str, Any]] = []
    least = SEVERITIES[SEVERITIES.index(min_severity) :]
    for index, (file_report, uri, issues) in enumerate(zip(reports, uris, shown, strict=True)):
        ranks: Counter[tuple[str, str]] = Counter()
        for issue in issues:
            rank = ranks[issue.code, issue.path]
            ranks[issue.code, issue.path] += 1
            results.append(_result(issue, uri, index, rule_index[issue.code], rank, file_report.kind == "index"))
        notes.extend(_omitted_notes(file_report, uri, index, least))
    invocation: dict[str, Any] = {
        "executionSuccessful": exit_code != EXIT_ERROR,
        "exitCode": exit_code,
        "properties": {"strict": strict, "minSeverity": min_severity},
    }
    if notes:
        invocation["toolExecutionNotifications"] = notes
    run = {
        "tool": {
            "driver": {
                "name": "h5ml",
                "version": __version__,
                "informationUri": H5ML_URI,
                "rules": [_rule(code) for code in codes],
            }
        },
        "invocations": [invocation],
        "artifacts": [_artifact(r, name, uri, strict) for (r, name), uri in zip(named, uris, strict=True)],
        "results": results,
    }
    return {"$schema": SARIF_SCHEMA, "version": SARIF_VERSION, "runs": [run]}
