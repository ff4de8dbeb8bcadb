"""Tests of h5ml.spec.schemas and of the JSON Schema files in schema/ (SPEC §4.6, §9.3)."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

import h5ml
from h5ml import spec
from h5ml.spec import schemas
from h5ml.spec.codes import CODES

REPO = Path(__file__).resolve().parents[1]
SCHEMA_DIR = REPO / "schema"
DRAFT_2020_12 = "https://json-schema.org/draft/2020-12/schema"


@pytest.mark.parametrize("name", sorted(schemas.SCHEMA_FILES))
def test_schema_is_a_valid_draft_2020_12_schema(name: str) -> None:
    """§4.6/§9.3: each schema file is a draft 2020-12 schema that the meta-schema accepts."""
    schema = schemas.load_schema(name)
    assert schema["$schema"] == DRAFT_2020_12
    Draft202012Validator.check_schema(schema)


@pytest.mark.parametrize(("name", "file_name"), sorted(schemas.SCHEMA_FILES.items()))
def test_schema_id_matches_its_file_name(name: str, file_name: str) -> None:
    """§4.6/§9.3: the ``$id`` of each schema ends in its own file name."""
    schema = schemas.load_schema(name)
    assert schema["$id"] == f"https://h5ml.org/schema/{file_name}"
    assert schemas.schema_path(name).name == file_name


def test_every_schema_file_in_the_folder_is_known() -> None:
    """§4.6: the schema folder holds exactly the schemas h5ml.spec.schemas names."""
    on_disk = sorted(p.name for p in SCHEMA_DIR.glob("*.json"))
    assert on_disk == sorted(schemas.SCHEMA_FILES.values())


def test_schema_dir_in_the_editable_install_is_the_checkout() -> None:
    """§4.6: an editable install reads the one copy of the schemas, in the checkout's schema/."""
    assert Path(h5ml.__file__).resolve().is_relative_to(REPO / "reference")
    assert schemas.schema_dir() == SCHEMA_DIR
    assert schemas.schema_path("root") == SCHEMA_DIR / "h5ml-root-1.0.schema.json"
    assert schemas.schema_path("report") == SCHEMA_DIR / "h5ml-report-1.0.schema.json"


@pytest.mark.parametrize("name", sorted(schemas.SCHEMA_FILES))
def test_full_file_name_and_short_name_load_the_same_schema(name: str) -> None:
    """§4.6: ``load_schema`` accepts the short name and the file name, and returns the file's content."""
    file_name = schemas.SCHEMA_FILES[name]
    on_disk = json.loads((SCHEMA_DIR / file_name).read_text(encoding="utf-8"))
    assert schemas.load_schema(name) == on_disk
    assert schemas.load_schema(file_name) == on_disk
    assert schemas.schema_path(file_name) == schemas.schema_path(name)


def test_unknown_schema_name_is_refused_with_the_known_names() -> None:
    """§4.6: a name that is no schema raises ValueError naming the accepted ones."""
    with pytest.raises(ValueError, match="unknown h5ml schema 'dataset'") as info:
        schemas.schema_path("dataset")
    assert "'root'" in str(info.value)
    assert "h5ml-report-1.0.schema.json" in str(info.value)


def test_load_schema_returns_copies_that_callers_may_change() -> None:
    """§4.6: changing a loaded schema does not change what the next caller or the validator sees."""
    first = schemas.load_schema("root")
    first["properties"]["format"]["const"] = "changed"
    second = schemas.load_schema("root")
    assert second["properties"]["format"]["const"] == spec.FORMAT_NAME
    assert not schemas.validator_for("root").is_valid({"format": "changed"})


def test_missing_schemas_raise_file_not_found_naming_both_places(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """§4.6: without the wheel's h5ml/_schema and the checkout's schema/, the error names both places."""
    installed, checkout = tmp_path / "site" / "h5ml" / "_schema", tmp_path / "checkout" / "schema"
    monkeypatch.setattr(schemas, "_candidate_dirs", lambda: (installed, checkout))
    with pytest.raises(FileNotFoundError) as info:
        schemas.schema_dir()
    assert str(installed) in str(info.value)
    assert str(checkout) in str(info.value)
    with pytest.raises(FileNotFoundError):
        schemas.load_schema("root")


def test_installed_location_wins_over_the_checkout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """§4.6: when both places hold the schemas, the copy inside the package is used."""
    installed, checkout = tmp_path / "_schema", tmp_path / "schema"
    shutil.copytree(SCHEMA_DIR, installed)
    shutil.copytree(SCHEMA_DIR, checkout)
    monkeypatch.setattr(schemas, "_candidate_dirs", lambda: (installed, checkout))
    assert schemas.schema_dir() == installed
    shutil.rmtree(installed)
    assert schemas.schema_dir() == checkout


def test_root_schema_follows_the_spec_constants() -> None:
    """§4.2: the root schema requires exactly ROOT_REQUIRED_ATTRS and defines exactly ROOT_ATTRS."""
    schema = schemas.load_schema("root")
    assert schema["required"] == list(spec.ROOT_REQUIRED_ATTRS)
    assert list(schema["properties"]) == list(spec.ROOT_ATTRS)
    assert schema["properties"]["format"]["const"] == spec.FORMAT_NAME
    assert schema["properties"]["fingerprint"]["pattern"].startswith(f"^{spec.FINGERPRINT_ALGORITHM}:")
    assert schema.get("additionalProperties", True) is True  # §4.7 user attributes are allowed


@pytest.mark.parametrize(
    "text",
    ["0.0", "1.0", "1.10", "12.345", "01.0", "1.01", "1", "1.", ".1", "1.0.0", "a.b", " 1.0", "1.0 ", "-1.0", ""],
)
def test_format_version_pattern_agrees_with_spec_parse_version(text: str) -> None:
    """§1.2: the schema's MAJOR.MINOR rule and spec.parse_version accept the same strings."""
    base = {
        "format": "h5ml",
        "format_version": text,
        "name": "n",
        "created": "2026-11-30T09:30:00Z",
        "writer": "h5ml 0.1.0",
        "must_understand": [],
        "complete": 1,
    }
    try:
        spec.parse_version(text)
        parsed = True
    except ValueError:
        parsed = False
    assert schemas.validator_for("root").is_valid(base) is parsed


@pytest.mark.parametrize(
    ("text", "ok"),
    [
        ("2026-11-30T09:30:00Z", True),
        ("2028-02-29T23:59:59.123456Z", True),
        ("2000-02-29T00:00:00Z", True),
        ("2026-11-30T09:30:00+01:00", True),
        ("2026-11-30t09:30:00z", True),
        ("2016-12-31T23:59:60Z", True),
        ("2026-02-29T00:00:00Z", False),
        ("1900-02-29T00:00:00Z", False),
        ("2026-04-31T00:00:00Z", False),
        ("2026-13-01T00:00:00Z", False),
        ("2026-11-30T24:00:00Z", False),
        ("2026-11-30T09:60:00Z", False),
        ("2026-11-30T09:30:00+24:00", False),
        ("2026-11-30 09:30:00Z", False),
        ("2026-11-30T09:30:00", False),
        ("2026-11-30", False),
    ],
)
def test_date_time_format_is_checked(text: str, ok: bool) -> None:
    """§4.2: the validators assert the RFC 3339 date-time format, real calendar dates included."""
    assert schemas.format_checker().conforms(text, "date-time") is ok
    assert Draft202012Validator({"format": "date-time"}, format_checker=schemas.format_checker()).is_valid(text) is ok


def test_date_time_format_ignores_non_strings() -> None:
    """§4.2: a format constrains strings only; other types are left to the "type" keyword."""
    assert schemas.format_checker().conforms(20261130, "date-time") is True


def test_validator_for_is_shared_and_checks_formats() -> None:
    """§4.6: one validator per schema per process, which asserts the date-time format of ``created``."""
    validator = schemas.validator_for("root")
    assert schemas.validator_for("h5ml-root-1.0.schema.json") is validator
    assert isinstance(validator, Draft202012Validator)
    doc = {
        "format": "h5ml",
        "format_version": "1.0",
        "name": "n",
        "created": "2026-02-30T00:00:00Z",
        "writer": "h5ml 0.1.0",
        "must_understand": [],
        "complete": 1,
    }
    assert [e.validator for e in validator.iter_errors(doc)] == ["format"]


# -- the report schema (§9.3) -------------------------------------------------


def _issue(code: str, path: str = "/") -> dict[str, Any]:
    entry = CODES[code]
    return {
        "code": entry.code,
        "name": entry.name,
        "severity": entry.severity.value,
        "path": path,
        "message": f"{entry.summary} (test)",
        "clause": entry.clause,
    }


def _report() -> dict[str, Any]:
    return {
        "report_version": "1.0",
        "tool": {"name": "h5ml", "version": h5ml.__version__},
        "files": [
            {
                "path": "good.h5",
                "readable": True,
                "valid": True,
                "format_version": "1.0",
                "issues": [_issue("W203"), _issue("I303", "/train")],
            },
            {
                "path": "bad.h5",
                "readable": True,
                "valid": False,
                "format_version": "1.0",
                "issues": [_issue("E106"), _issue("E122", "/train/label")],
            },
            {"path": "junk.bin", "readable": False, "valid": False, "format_version": None, "issues": [_issue("E100")]},
        ],
        "summary": {"files": 3, "valid": 1, "invalid": 2, "unreadable": 1},
    }


def test_report_schema_accepts_a_full_report() -> None:
    """§9.3: a report with valid, invalid and unreadable files passes the report schema."""
    assert list(schemas.validator_for("report").iter_errors(_report())) == []


def test_report_schema_accepts_strict_mode_and_any_format_version_string() -> None:
    """§9.3: in strict mode a file with only warnings is not valid; format_version is reported as found."""
    report = _report()
    good = report["files"][0]
    good["valid"] = False
    good["format_version"] = "one point oh"
    assert list(schemas.validator_for("report").iter_errors(report)) == []


def test_report_schema_accepts_an_issue_for_every_registry_code() -> None:
    """§9.2/§9.3: every code of the registry, with its name, severity and clause, fits the issue schema."""
    validator = schemas.validator_for("report")
    report_schema = schemas.load_schema("report")
    issue_schema = {"$schema": report_schema["$schema"], "$defs": report_schema["$defs"], "$ref": "#/$defs/issue"}
    issue_validator = Draft202012Validator(issue_schema)
    for code in CODES:
        errors = [e.message for e in issue_validator.iter_errors(_issue(code, "/train/x"))]
        assert errors == [], (code, errors)
    assert validator.is_valid(_report())


def _broken(change: str) -> dict[str, Any]:
    report = _report()
    good, bad, junk = report["files"]
    match change:
        case "report_version":
            report["report_version"] = "2.0"
        case "tool_without_version":
            del report["tool"]["version"]
        case "code_pattern":
            good["issues"][0]["code"] = "W2030"
        case "code_letter":
            good["issues"][0]["code"] = "X203"
        case "severity_mismatch":
            good["issues"][0]["severity"] = "error"
        case "severity_unknown":
            bad["issues"][0]["severity"] = "fatal"
        case "issue_extra_field":
            good["issues"][0]["hint"] = "add a license"
        case "issue_missing_clause":
            del good["issues"][0]["clause"]
        case "clause_pattern":
            good["issues"][0]["clause"] = "4.2"
        case "path_relative":
            good["issues"][1]["path"] = "train"
        case "empty_message":
            good["issues"][1]["message"] = ""
        case "name_not_snake_case":
            good["issues"][1]["name"] = "Not-Shuffled"
        case "valid_with_error":
            good["issues"].append(_issue("E160", "/train/x"))
        case "invalid_with_only_info":
            bad["issues"] = [_issue("I303", "/train")]
        case "unreadable_but_valid":
            junk["valid"] = True
            junk["issues"] = []
        case "unreadable_without_e100_or_e101":
            junk["issues"] = [_issue("E102")]
        case "format_version_number":
            good["format_version"] = 1.0
        case "file_without_issues":
            del good["issues"]
        case "summary_negative":
            report["summary"]["unreadable"] = -1
        case "summary_incomplete":
            del report["summary"]["invalid"]
        case _:
            raise AssertionError(change)
    return report


@pytest.mark.parametrize(
    "change",
    [
        "report_version",
        "tool_without_version",
        "code_pattern",
        "code_letter",
        "severity_mismatch",
        "severity_unknown",
        "issue_extra_field",
        "issue_missing_clause",
        "clause_pattern",
        "path_relative",
        "empty_message",
        "name_not_snake_case",
        "valid_with_error",
        "invalid_with_only_info",
        "unreadable_but_valid",
        "unreadable_without_e100_or_e101",
        "format_version_number",
        "file_without_issues",
        "summary_negative",
        "summary_incomplete",
    ],
)
def test_report_schema_rejects_each_broken_rule(change: str) -> None:
    """§9.3: breaking any one rule of the report schema makes the report invalid."""
    report = _broken(change)
    assert report != _report()
    assert not schemas.validator_for("report").is_valid(report)


def test_report_schema_describes_the_shards_given_beside_their_index() -> None:
    """§9.3, §12: an index's given_shards, each a path as given and its shard's path; nothing else in an item."""
    report = _report()
    report["files"].append(
        {
            "path": "ds/index.json",
            "readable": True,
            "valid": True,
            "format_version": "1.2",
            "issues": [],
            "kind": "index",
            "shards": [],
            "given_shards": [{"path": "./ds/train/a.h5", "shard": "/data/ds/train/a.h5"}],
        }
    )
    validator = schemas.validator_for("report")
    assert list(validator.iter_errors(report)) == []
    given = report["files"][-1]["given_shards"]
    for broken in ({"path": "./ds/train/a.h5"}, {**given[0], "index": "ds/index.json"}, {**given[0], "shard": 1}):
        report["files"][-1]["given_shards"] = [broken]
        assert not validator.is_valid(report), broken
    report["files"][-1]["given_shards"] = "./ds/train/a.h5"
    assert not validator.is_valid(report)


def test_report_schema_rejects_a_trailing_newline_in_a_code() -> None:
    """§9.3: patterns anchor at the very end of the string, also under Python's re."""
    report = _report()
    report["files"][0]["issues"][0]["code"] = "W203\n"
    assert not schemas.validator_for("report").is_valid(report)


# -- the schemas inside a built wheel ------------------------------------------


def _ignore_for_copy(folder: str, names: list[str]) -> set[str]:
    skip = {".git", ".venv", "venv", "build", "dist", "__pycache__", ".hypothesis", ".mypy_cache", ".pytest_cache"}
    skip.add(".ruff_cache")
    return {n for n in names if n in skip or n.endswith(".egg-info")}


def _run_isolated(code: str, python_path: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run ``python -S -P -c code`` seeing only ``python_path`` and the third-party packages.

    ``-S`` skips the site module, so the ``.pth`` file of the editable install is
    not processed and the checkout's h5ml is not importable; the environment's
    site-packages folders are added after the unpacked wheel for numpy, h5py,
    jsonschema and pydantic. ``-P`` keeps the working folder off ``sys.path``.
    """
    site_dirs = dict.fromkeys([sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]])
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env["PYTHONPATH"] = os.pathsep.join([str(python_path), *site_dirs])
    return subprocess.run(
        [sys.executable, "-S", "-P", "-c", code],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


_PROBE = """
import json, h5ml, h5ml.spec.schemas as s
from h5ml.model.new_root import new_root_metadata
from h5ml.model.problems import is_valid_root
doc = new_root_metadata("probe", license="MIT")
doc["complete"] = 1
print(json.dumps({"module": h5ml.__file__, "dir": str(s.schema_dir()), "valid": is_valid_root(doc),
                  "ids": [s.load_schema(n)["$id"] for n in s.SCHEMA_FILES]}))
"""


@pytest.mark.slow
def test_built_wheel_carries_and_finds_the_schemas(tmp_path: Path) -> None:
    """§4.6: the wheel holds schema/ as h5ml/_schema, and an install of it finds the schemas there."""
    source = tmp_path / "src"
    shutil.copytree(REPO, source, ignore=_ignore_for_copy)
    out = tmp_path / "dist"
    # Build with the installed hatchling when there is one (fast, offline); else let build fetch it.
    isolation = [] if importlib.util.find_spec("hatchling") is None else ["--no-isolation"]
    build = subprocess.run(
        [sys.executable, "-m", "build", "--wheel", *isolation, "--outdir", str(out), str(source)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert build.returncode == 0, build.stdout + build.stderr
    (wheel,) = out.glob("h5ml-*.whl")

    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        for file_name in schemas.SCHEMA_FILES.values():
            assert f"h5ml/_schema/{file_name}" in names
            assert zf.read(f"h5ml/_schema/{file_name}") == (SCHEMA_DIR / file_name).read_bytes()
        zf.extractall(tmp_path / "wheel")
    unpacked = tmp_path / "wheel"
    work = tmp_path / "work"
    work.mkdir()

    probe = _run_isolated(_PROBE, unpacked, work)
    assert probe.returncode == 0, probe.stderr
    found = json.loads(probe.stdout)
    assert Path(found["module"]).resolve() == (unpacked / "h5ml" / "__init__.py").resolve()
    assert Path(found["dir"]) == (unpacked / "h5ml" / "_schema").resolve()
    assert found["valid"] is True
    assert found["ids"] == [f"https://h5ml.org/schema/{n}" for n in schemas.SCHEMA_FILES.values()]

    # Without its _schema folder the installed package says where it looked.
    shutil.rmtree(unpacked / "h5ml" / "_schema")
    missing = _run_isolated("import h5ml.spec.schemas as s; s.schema_dir()", unpacked, work)
    assert missing.returncode != 0
    assert "FileNotFoundError" in missing.stderr
    assert str((unpacked / "h5ml" / "_schema").resolve()) in missing.stderr
    assert str((tmp_path / "schema").resolve()) in missing.stderr


def test_schema_files_are_formatted_json_objects() -> None:
    """§4.6: the schema files parse as JSON objects and end with a newline (kept readable for other tools)."""
    for file_name in schemas.SCHEMA_FILES.values():
        text = (SCHEMA_DIR / file_name).read_text(encoding="utf-8")
        assert text.endswith("\n")
        assert isinstance(json.loads(text), dict)
        assert json.loads(text) == schemas.load_schema(file_name)
