"""``h5ml validate --format junit``: the report as JUnit XML, for the test views of GitLab, Jenkins and others (§9).

One ``<testsuite>`` per file checked (named by its path; an index's shards
each have their own, after the index's, named by their path in the index
below the index as given), and in it one ``<testcase>`` per
issue code the file has at ``--min-severity`` or above, named
``"E106 incomplete"`` (code and registry name), its ``classname`` the file's
path. A code is a test case, not each issue: a file that breaks one rule
100,000 times is one failed case whose text lists the issues (at most
``--max-issues-per-code`` of them, and how many more were counted), not
100,000 cases. A file without any issue shown still has one test case,
``"valid"``, which passes.

- An error is a ``<failure>`` (``type`` the code, ``message`` the first
  issue's message, the text every issue listed: ``path: message`` lines);
  E100 and E101 (the file could not be read, or not within ``--timeout``:
  exit 2) are an ``<error>`` instead, as JUnit says of a test that could not
  run.
- A warning is a ``<failure>`` only with ``--strict``; otherwise its case
  passes, with the issues in ``<system-out>``. Info notes always pass, in
  ``<system-out>``.

Each suite's ``<properties>`` say what the JSON report says of the file
(kind, readable, valid, format version, counts; for an index, a
``given_shard`` for each FILE given beside it that is one of its shards). The counts of the root
``<testsuites>`` and of each suite add up; the exit status is the text
report's (§9.3.2). XML cannot hold every character a file's names may hold:
control characters and the others XML 1.0 forbids are written as ``\\xNN``
escapes (§10.2).
"""

from __future__ import annotations

import io
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from typing import TYPE_CHECKING, Final

from h5ml.spec.codes import CODES
from h5ml.tools.console import safe_text
from h5ml.tools.formats.shown import issue_text, named_reports, shown_issues

if TYPE_CHECKING:  # pragma: no cover
    from h5ml.validator.checks import Issue
    from h5ml.validator.report import FileReport

__all__ = ["PASSING_CASE", "junit_report"]

#: The name of the one test case of a file without any issue shown.
PASSING_CASE: Final = "valid"
#: Codes whose case is an ``<error>``: the file could not be checked (exit 2).
_NOT_CHECKED: Final = frozenset({"E100", "E101"})


def _xml_char(char: str) -> bool:
    """Whether XML 1.0 can hold ``char`` (its ``Char`` production)."""
    code = ord(char)
    return code in (0x9, 0xA, 0xD) or 0x20 <= code <= 0xD7FF or 0xE000 <= code <= 0xFFFD or code >= 0x10000


def _xml_text(text: str) -> str:
    """``text`` with every character XML 1.0 cannot hold escaped (``\\xff`` for a byte of a name not UTF-8, §10.2)."""
    text = safe_text(text, lines=True)
    if all(_xml_char(c) for c in text):
        return text
    return "".join(c if _xml_char(c) else repr(c)[1:-1] for c in text)


def _issue_lines(issues: Sequence[Issue], omitted: int, cap: int) -> str:
    lines = [f"{_xml_text(i.path)}: {_xml_text(issue_text(i.message))}" for i in issues]
    if omitted:
        lines.append(
            f"... and {omitted:,} more (counted, not listed: at most {cap} of each code are, "
            "--max-issues-per-code N lists N, 0 all)"
        )
    return "\n".join(lines)


def _outcome(code: str, strict: bool) -> str:
    """``"error"``, ``"failure"`` or ``"pass"``: what a case of issues of ``code`` is."""
    severity = str(CODES[code].severity.value)
    if code in _NOT_CHECKED:
        return "error"
    if severity == "error" or (severity == "warning" and strict):
        return "failure"
    return "pass"


def _suite(file_report: FileReport, shown_as: str, strict: bool, min_severity: str) -> ET.Element:
    """The ``<testsuite>`` of one file, named ``shown_as``: one case per code shown, or the one passing case."""
    name = _xml_text(shown_as)
    suite = ET.Element("testsuite", name=name)
    properties = ET.SubElement(suite, "properties")
    counts = file_report.counts
    facts = {
        "kind": file_report.kind,
        "readable": str(file_report.readable).lower(),
        "valid": str(file_report.valid_strict if strict else file_report.valid).lower(),
        "format_version": _xml_text(file_report.format_version or ""),
        **{f"{severity}s" if severity != "info" else "info": str(n) for severity, n in counts.items()},
    }
    for key, value in facts.items():
        ET.SubElement(properties, "property", name=key, value=value)
    for given, _ in file_report.given_shards:  # a FILE given beside its index, checked as one of its shards
        ET.SubElement(properties, "property", name="given_shard", value=_xml_text(given))
    by_code: dict[str, list[Issue]] = {}
    for issue in shown_issues(file_report, min_severity):
        by_code.setdefault(issue.code, []).append(issue)
    tally = {"failure": 0, "error": 0}
    for code, issues in by_code.items():
        case = ET.SubElement(suite, "testcase", name=f"{code} {CODES[code].name}", classname=name)
        outcome = _outcome(code, strict)
        text = _issue_lines(issues, file_report.omitted.get(code, 0), file_report.max_issues_per_code)
        if outcome == "pass":
            ET.SubElement(case, "system-out").text = text
            continue
        tally[outcome] += 1
        element = ET.SubElement(case, outcome, message=_xml_text(issue_text(issues[0].message)), type=code)
        element.text = text
    if not by_code:
        ET.SubElement(suite, "testcase", name=PASSING_CASE, classname=name)
    suite.set("tests", str(max(len(by_code), 1)))
    suite.set("failures", str(tally["failure"]))
    suite.set("errors", str(tally["error"]))
    suite.set("skipped", "0")
    return suite


def junit_report(files: Sequence[FileReport], *, strict: bool, min_severity: str = "info") -> str:
    """The JUnit XML document of a validation: one test suite per file, one test case per issue code (§9).

    Parameters
    ----------
    files
        The reports of the files checked, in the order given; an index's shards follow it, each its own suite
        (§12).
    strict
        ``--strict``: a warning's case fails.
    min_severity
        The least severity that has a test case: ``"info"``, ``"warning"`` or ``"error"``.

    Returns
    -------
    str
        The document, with its XML declaration (``encoding="utf-8"``), indented, ending in a newline.
    """
    root = ET.Element("testsuites", name="h5ml validate")
    totals = {"tests": 0, "failures": 0, "errors": 0}
    for file_report, shown_as in named_reports(files):
        suite = _suite(file_report, shown_as, strict, min_severity)
        root.append(suite)
        for key in totals:
            totals[key] += int(suite.get(key, "0"))
    for key, n in totals.items():
        root.set(key, str(n))
    ET.indent(root)
    buffer = io.BytesIO()
    ET.ElementTree(root).write(buffer, encoding="utf-8", xml_declaration=True)
    return buffer.getvalue().decode("utf-8") + "\n"
