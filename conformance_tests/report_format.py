"""The report format of SPEC §9.3: the check run.py makes of every validator report (CONTRACT.md §3).

:func:`schema_checker` gives a ``jsonschema`` validator for
``schema/h5ml-report-1.0.schema.json`` when jsonschema is installed;
:func:`report_problems` lists where a report breaks the format, with that
validator or, without it, with a built-in structural check (members and
their types, ``report_version`` (1.0 or 1.1), each issue's code matching its severity,
absolute HDF5 paths). Standard library only, like run.py.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

__all__ = ["REPORT_SCHEMA", "report_problems", "schema_checker"]

#: The report schema of SPEC §9.3, in the schema folder beside the suite.
REPORT_SCHEMA = Path(__file__).resolve().parent.parent / "schema" / "h5ml-report-1.0.schema.json"


def schema_checker() -> Any:
    """A ``jsonschema`` validator for the report schema, or None when jsonschema or the schema is unavailable."""
    try:
        import jsonschema
    except ImportError:
        return None
    if not REPORT_SCHEMA.is_file():
        return None
    schema = json.loads(REPORT_SCHEMA.read_text(encoding="utf-8"))
    return jsonschema.Draft202012Validator(schema)


_CODE = re.compile(r"^[EWI][0-9]{3}$")
_SEVERITY = {"E": "error", "W": "warning", "I": "info"}


def report_problems(report: Any, checker: Any) -> list[str]:
    """Where ``report`` breaks the report format of SPEC §9.3 (with jsonschema when available)."""
    if checker is not None:
        return [
            f"report breaks the report schema at /{'/'.join(str(p) for p in e.absolute_path)}: {e.message}"
            for e in sorted(checker.iter_errors(report), key=lambda e: list(map(str, e.absolute_path)))
        ][:5]
    problems: list[str] = []
    if not isinstance(report, dict):
        return ["the report is not a JSON object"]
    if report.get("report_version") not in ("1.0", "1.1"):
        problems.append("report_version is neither '1.0' nor '1.1'")
    tool = report.get("tool")
    if not (isinstance(tool, dict) and isinstance(tool.get("name"), str) and isinstance(tool.get("version"), str)):
        problems.append("tool must hold the strings name and version")
    files = report.get("files")
    if not isinstance(files, list):
        return [*problems, "files is not an array"]
    for i, entry in enumerate(files):
        if not isinstance(entry, dict):
            problems.append(f"files[{i}] is not an object")
            continue
        for key, kinds in (("path", str), ("readable", bool), ("valid", bool), ("issues", list)):
            if not isinstance(entry.get(key), kinds):
                problems.append(f"files[{i}].{key} is missing or of the wrong type")
        if "format_version" not in entry or not isinstance(entry["format_version"], (str, type(None))):
            problems.append(f"files[{i}].format_version must be a string or null")
        for j, issue in enumerate(entry.get("issues") or []):
            where = f"files[{i}].issues[{j}]"
            keys = {"code", "name", "severity", "path", "message", "clause"}
            if not isinstance(issue, dict) or set(issue) != keys or not all(isinstance(v, str) for v in issue.values()):
                problems.append(f"{where} must have exactly the string members {sorted(keys)}")
                continue
            if not _CODE.match(issue["code"]) or _SEVERITY[issue["code"][0]] != issue["severity"]:
                problems.append(f"{where}: code {issue['code']!r} and severity {issue['severity']!r} disagree")
            if not issue["path"].startswith("/"):
                problems.append(f"{where}: path {issue['path']!r} is not absolute")
    return problems
