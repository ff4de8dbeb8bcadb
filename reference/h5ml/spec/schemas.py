"""Finding, loading and applying the JSON Schemas of the specification (§4.6, §9.3).

The schemas have a single copy, in the ``schema/`` folder at the top of the
source checkout. A built wheel carries that folder inside the package as
``h5ml/_schema`` (``pyproject.toml`` force-includes it); an editable install has
no such folder and reads the checkout's. :func:`schema_dir` tries both, in that
order.

Schema names: ``"root"`` is the root-attribute schema
(``h5ml-root-1.0.schema.json``, §4.6) and ``"report"`` the validator report
schema (``h5ml-report-1.0.schema.json``, §9.3), ``"manifest"`` the conformance
manifest's, and ``"source-splits"`` the converters' root user attribute
``h5ml-ingest:source-splits`` (``h5ml-source-splits-1.0.schema.json``, §4.7,
:mod:`h5ml.ingest.provenance`); the full file names work too.
"""

from __future__ import annotations

import copy
import functools
import json
import re
from pathlib import Path
from typing import Any, Final

from jsonschema import Draft202012Validator, FormatChecker

__all__ = ["SCHEMA_FILES", "format_checker", "load_schema", "schema_dir", "schema_path", "validator_for"]

#: Short schema names and the file each one names.
SCHEMA_FILES: Final[dict[str, str]] = {
    "root": "h5ml-root-1.0.schema.json",
    "report": "h5ml-report-1.0.schema.json",
    "manifest": "h5ml-manifest-1.0.schema.json",
    "source-splits": "h5ml-source-splits-1.0.schema.json",
    "convert-plan": "h5ml-convert-plan-1.0.schema.json",
    "verify": "h5ml-verify-1.0.schema.json",
    "index": "h5ml-index-1.0.schema.json",
}

# RFC 3339 §5.6 date-time; the calendar and clock ranges are checked in code.
_DATE_TIME: Final = re.compile(
    r"([0-9]{4})-([0-9]{2})-([0-9]{2})[Tt]([0-9]{2}):([0-9]{2}):([0-9]{2})(?:\.[0-9]+)?(?:[Zz]|[+-]([0-9]{2}):([0-9]{2}))"
)
_DAYS_IN_MONTH: Final = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def _candidate_dirs() -> tuple[Path, Path]:
    """Return where the schemas may be: inside the installed package, then in the checkout."""
    package = Path(__file__).resolve().parents[1]  # h5ml/ (this module is h5ml/spec/schemas.py)
    return package / "_schema", package.parents[1] / "schema"


def schema_dir() -> Path:
    """Return the folder that holds the h5ml JSON Schemas (§4.6, §9.3).

    Looks first for ``h5ml/_schema`` beside this module (an installed wheel),
    then for ``schema/`` at the top of the source checkout (an editable install).
    A folder counts only when it holds the root schema.

    Returns
    -------
    pathlib.Path
        The absolute path of the folder.

    Raises
    ------
    FileNotFoundError
        If neither place holds the schemas; the message names both places.
    """
    installed, checkout = _candidate_dirs()
    for candidate in (installed, checkout):
        if (candidate / SCHEMA_FILES["root"]).is_file():
            return candidate
    raise FileNotFoundError(
        f"the h5ml JSON Schemas were not found: looked for {SCHEMA_FILES['root']} in {installed} "
        f"(installed wheel) and in {checkout} (source checkout). Reinstall h5ml, or restore the schema/ "
        "folder of the checkout."
    )


def _file_name(name: str) -> str:
    if name in SCHEMA_FILES:
        return SCHEMA_FILES[name]
    if name in SCHEMA_FILES.values():
        return name
    known = ", ".join(f"{short!r} ({file})" for short, file in SCHEMA_FILES.items())
    raise ValueError(f"unknown h5ml schema {name!r}: use one of {known}")


def schema_path(name: str) -> Path:
    """Return the path of one schema file (§4.6, §9.3).

    Parameters
    ----------
    name
        ``"root"``, ``"report"``, or a full file name from :data:`SCHEMA_FILES`.

    Returns
    -------
    pathlib.Path
        The absolute path of the schema file.

    Raises
    ------
    ValueError
        If ``name`` names no h5ml schema.
    FileNotFoundError
        If the schema folder or the file in it is missing.
    """
    file_name = _file_name(name)
    path = schema_dir() / file_name
    if not path.is_file():
        raise FileNotFoundError(f"the h5ml schema file {path} is missing; reinstall h5ml or restore it in the checkout")
    return path


@functools.cache
def _load(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as fh:
            schema = json.load(fh)
    except json.JSONDecodeError as exc:
        raise ValueError(f"the h5ml schema file {path} is not valid JSON ({exc}); restore it from the release") from exc
    if not isinstance(schema, dict):
        raise ValueError(f"the h5ml schema file {path} does not hold a JSON object; restore it from the release")
    Draft202012Validator.check_schema(schema)
    return schema


def load_schema(name: str) -> dict[str, Any]:
    """Load one schema as a dict (§4.6, §9.3).

    The file is read once per process; each call returns a fresh deep copy, so a
    caller may change the result without affecting other callers.

    Parameters
    ----------
    name
        ``"root"``, ``"report"``, or a full file name from :data:`SCHEMA_FILES`.

    Returns
    -------
    dict
        The parsed JSON Schema (draft 2020-12).

    Raises
    ------
    ValueError
        If ``name`` names no h5ml schema or the file is not a JSON object.
    FileNotFoundError
        If the schema file cannot be found.
    jsonschema.exceptions.SchemaError
        If the file is not a valid draft 2020-12 schema.
    """
    return copy.deepcopy(_load(schema_path(name)))


def _days_in_month(year: int, month: int) -> int:
    leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    return 29 if month == 2 and leap else _DAYS_IN_MONTH[month - 1]


def _is_date_time(value: object) -> bool:
    if not isinstance(value, str):
        return True  # a format constrains strings only; "type" rejects the rest
    m = _DATE_TIME.fullmatch(value)
    if m is None:
        return False
    year, month, day, hour, minute, second = (int(g) for g in m.groups()[:6])
    if not 1 <= month <= 12 or not 1 <= day <= _days_in_month(year, month):
        return False
    if hour > 23 or minute > 59 or second > 60:  # RFC 3339 allows a leap second
        return False
    off_hour, off_minute = m.group(7), m.group(8)
    return off_hour is None or (int(off_hour) <= 23 and int(off_minute) <= 59)


@functools.cache
def format_checker() -> FormatChecker:
    """Return the format checker h5ml validates with (§4.6).

    It asserts only formats it checks with the standard library, so validation
    gives the same answer wherever it runs: ``date-time`` (RFC 3339 §5.6, with
    real calendar dates). Other formats are annotations.

    Returns
    -------
    jsonschema.FormatChecker
        A checker shared by every validator from :func:`validator_for`.
    """
    checker = FormatChecker(formats=())
    checker.checks("date-time")(_is_date_time)
    return checker


@functools.cache
def _validator(path: Path) -> Draft202012Validator:
    return Draft202012Validator(_load(path), format_checker=format_checker())


def validator_for(name: str) -> Draft202012Validator:
    """Return a draft 2020-12 validator for one schema, with format checking (§4.6, §9.3).

    Parameters
    ----------
    name
        ``"root"``, ``"report"``, or a full file name from :data:`SCHEMA_FILES`.

    Returns
    -------
    jsonschema.Draft202012Validator
        A validator (one per schema per process) whose ``format`` keyword is
        checked by :func:`format_checker`. Use ``iter_errors(doc)`` to list
        every problem of a JSON document.

    Raises
    ------
    ValueError
        If ``name`` names no h5ml schema.
    FileNotFoundError
        If the schema file cannot be found.
    """
    return _validator(schema_path(name))
