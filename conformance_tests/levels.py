"""The validator conformance levels and the comparison of one report entry with its case, level by level.

The levels are those of CONTRACT.md §8 (manifest format 1.1,
``validator_levels``): ``errors`` (every MUST of SPEC.md: every error the case
expects, no other error, the entry's ``valid``, ``readable`` and
``format_version``, the exit status of SPEC §9.3.2, the report format of
§9.3), ``warnings`` (and every expected warning), ``info`` (and every expected
info). Each level holds the one before it. An expected issue belongs to the
level the manifest gives it (its ``level``), or, in a manifest of format 1.0,
to the level of its code's severity (SPEC §9.2). The rules that forbid a code
(``absent``, and the codes an ``exclusive`` case does not list, SPEC §9.1.2)
belong to the level of the forbidden code's severity.

:func:`compare_report` returns the reasons of a failure by level;
:func:`first_failure` names the first level that failed. ``run.py`` imports
this module; like it, it needs only the standard library.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

__all__ = [
    "ERRORS",
    "LEVELS",
    "by_level",
    "compare_report",
    "expected_exit_status",
    "first_failure",
    "level_of_code",
]

#: The validator levels, in order: each holds the one before it (CONTRACT.md §8).
LEVELS: tuple[str, ...] = ("errors", "warnings", "info")
#: The first level, which holds every check that is not about one issue code.
ERRORS = LEVELS[0]
_LEVEL_OF_LETTER = {"E": "errors", "W": "warnings", "I": "info"}


def level_of_code(code: str) -> str:
    """The level of an issue code, by the severity its letter gives (SPEC §9.2: E error, W warning, I info).

    Parameters
    ----------
    code : str
        An issue code such as ``"W207"``.

    Returns
    -------
    str
        ``"errors"``, ``"warnings"`` or ``"info"``; ``"errors"`` for a malformed code, which breaks the
        report format (a check of the errors level anyway).
    """
    return _LEVEL_OF_LETTER.get(code[:1], ERRORS)


def by_level(reasons: dict[str, list[str]], level: str, reason: str) -> None:
    """Add ``reason`` to the reasons of ``level`` (a key of :data:`LEVELS`)."""
    reasons.setdefault(level, []).append(reason)


def _paths(expected: Any) -> list[str] | None:
    """The HDF5 paths an expected issue accepts (None: any path)."""
    if expected is None:
        return None
    return [expected] if isinstance(expected, str) else list(expected)


def _registry_reasons(
    issues: Sequence[dict[str, Any]], registry: dict[str, Any], reasons: dict[str, list[str]]
) -> None:
    """Issues whose code is not in the registry of SPEC §9.2, or whose name, severity or clause differ from it."""
    for issue in issues:
        known = registry.get(str(issue.get("code")))
        if known is None:
            by_level(reasons, ERRORS, f"reports {issue.get('code')}, which is not in the registry of SPEC §9.2")
            continue
        for key in ("name", "severity", "clause"):
            if issue.get(key) != known[key]:
                why = f"issue {issue['code']} has {key} {issue.get(key)!r}, the registry says {known[key]!r}"
                by_level(reasons, ERRORS, why)


def compare_report(case: dict[str, Any], entry: dict[str, Any], registry: dict[str, Any]) -> dict[str, list[str]]:
    """Every way a report's entry for one file departs from what the case expects, by level.

    Parameters
    ----------
    case : dict
        The manifest's entry of the case (schema/h5ml-manifest-1.0.schema.json, format 1.0 or 1.1).
    entry : dict
        The report's ``files`` entry for the case's file (SPEC §9.3).
    registry : dict
        The manifest's issue registry (SPEC §9.2): code -> name, severity, clause.

    Returns
    -------
    dict of str to list of str
        Level name (of :data:`LEVELS`) -> the reasons that level fails; levels without a failure are absent.
    """
    reasons: dict[str, list[str]] = {}
    issues = [i for i in entry.get("issues", []) if isinstance(i, dict)]
    _registry_reasons(issues, registry, reasons)
    expected = sorted(case.get("issues", []), key=lambda e: len(_paths(e.get("path")) or ["", "", "", "", ""]))
    pool = list(issues)
    for want in expected:
        accepted = _paths(want.get("path"))
        match = next(
            (i for i in pool if i.get("code") == want["code"] and (accepted is None or i.get("path") in accepted)),
            None,
        )
        if match is None:
            where = "" if accepted is None else f" at {' or '.join(accepted)}"
            found = sorted({f"{i.get('code')} {i.get('path')}" for i in issues if i.get("code") == want["code"]})
            level = want.get("level") or level_of_code(want["code"])
            by_level(
                reasons, level, f"missing {want['code']}{where}" + (f" (found {', '.join(found)})" if found else "")
            )
        else:
            pool.remove(match)
    codes = {str(i.get("code")) for i in issues}
    permitted = {e["code"] for e in case.get("issues", [])} | set(case.get("allowed", []))
    extra_errors = sorted(c for c in codes if c.startswith("E") and c not in permitted)
    if extra_errors:
        paths = sorted({f"{i['code']} {i.get('path')}" for i in issues if i.get("code") in extra_errors})
        by_level(reasons, ERRORS, f"reports errors the file does not have: {', '.join(paths)}")
    for code in case.get("absent", []):
        if code in codes:
            by_level(reasons, level_of_code(code), f"reports {code}, which the case forbids")
    if case.get("exclusive"):
        others = sorted(c for c in codes if c not in permitted and c not in extra_errors)
        for level in LEVELS:
            mine = [c for c in others if level_of_code(c) == level]
            if mine:
                alone = ", ".join(sorted(permitted))
                by_level(reasons, level, f"must report {alone} alone, also reports {', '.join(mine)}")
    for key in ("valid", "readable", "format_version"):
        if key in case and entry.get(key) != case[key]:
            by_level(reasons, ERRORS, f"{key} is {json.dumps(entry.get(key))}, expected {json.dumps(case[key])}")
    return reasons


def first_failure(reasons: dict[str, list[str]], up_to: str) -> tuple[str | None, list[str]]:
    """The first level, up to ``up_to`` included, that has a reason, and every reason of the levels checked.

    Parameters
    ----------
    reasons : dict of str to list of str
        Level -> reasons, as :func:`compare_report` returns them.
    up_to : str
        The highest level checked (``run.py --level``).

    Returns
    -------
    tuple of (str or None, list of str)
        The level that failed first (None: the case passes at ``up_to``), and the reasons of every level
        checked, in level order, each prefixed ``level NAME: ``.
    """
    checked = LEVELS[: LEVELS.index(up_to) + 1]
    failed = next((level for level in checked if reasons.get(level)), None)
    return failed, [f"level {level}: {reason}" for level in checked for reason in reasons.get(level, [])]


def expected_exit_status(cases: Sequence[dict[str, Any]]) -> int:
    """SPEC §9.3.2: 2 when any file is unreadable, else 1 when any is not valid, else 0."""
    if any(not c["readable"] for c in cases):
        return 2
    return 1 if any(not c["valid"] for c in cases) else 0
