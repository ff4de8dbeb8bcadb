"""``h5ml validate --format sarif|junit`` and ``--output``: the reports CI services read (issue 17).

Every file is real (written by ``h5ml.write``, damaged with h5py), every run
is the real command line (``h5ml.tools.cli.run``, with its child processes).
Every SARIF report is validated against the official SARIF 2.1.0 JSON Schema,
which the npm package ``@microsoft/jest-sarif`` ships
(``lib/schemas/sarif-2.1.0-rtm.5.json``, JSON Schema draft-04 as it
declares): ``npm ci`` installs the version pinned by
``tests/sarif/package-lock.json`` into a cache folder once
(``$XDG_CACHE_HOME/h5ml-tests``, or ``~/.cache/h5ml-tests``; a few seconds).
Without npm the schema tests are skipped, except in CI (``CI`` set), where
they fail. Every JUnit report is read back with ``junitparser``.

Time: about 20 s on an idle 2-core machine, most of it the validator's child
processes.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import h5py
import jsonschema
import numpy as np
import pytest
from filelock import FileLock
from junitparser import Error, Failure, JUnitXml, TestSuite

import h5ml
from _npm import NPM, npm_ci
from _shards import columns, write_sharded
from h5ml.ingest.options import cli_words
from h5ml.spec.codes import CODES
from h5ml.tools import cli
from h5ml.tools.formats.shown import artifact_uri
from h5ml.tools.formats.spec_links import CLAUSE_ANCHORS, SPEC_URI, clause_uri

ROOT = Path(__file__).resolve().parent.parent
SARIF_PACKAGE = Path(__file__).resolve().parent / "sarif"
SCHEMA_IN_PACKAGE = Path("node_modules/@microsoft/jest-sarif/lib/schemas/sarif-2.1.0-rtm.5.json")
NPM_TIMEOUT = 300  # seconds for npm ci (21 small packages; about 4 s here)
LEVELS = {"error": "error", "warning": "warning", "info": "note"}


def run_cli(*args: str) -> tuple[int, str, str]:
    """Run the command line in this process; return (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    code = cli.run(list(args), out, err)
    return code, out.getvalue(), err.getvalue()


# --------------------------------------------------------------------------- files


def _write(path: Path, **meta: Any) -> Path:
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    h5ml.write(path, {"train": {"x": x, "y": np.arange(4) % 2}}, metadata={"name": "toy", **meta})
    return path


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """good.h5 (W204, I303), bad.h5 (E106, W203, W204, I303), links.h5 (5 x E110), broken.h5 (not HDF5), sharded/."""
    folder = tmp_path_factory.mktemp("formats")
    _write(folder / "good.h5", license="CC0-1.0")
    with h5py.File(_write(folder / "bad.h5"), "r+") as f:
        del f.attrs["complete"]  # E106: the writer did not finish
    with h5py.File(_write(folder / "links.h5", license="CC0-1.0"), "r+") as f:
        group = f.create_group("_links")
        for i in range(5):
            group[f"l{i}"] = h5py.ExternalLink("elsewhere.h5", "/x")  # E110, five times
    (folder / "broken.h5").write_bytes(b"not an HDF5 file at all\n")
    write_sharded(folder / "sharded", columns(6), (4, 2))
    with h5py.File(folder / "sharded" / "train" / "train-00001.h5", "r+") as f:
        del f.attrs["complete"]  # the second shard is invalid: E106 in its report, E174 in the index's
    return folder


@pytest.fixture
def here(files: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Run in the files' folder, so that the reports name them relative to it, as CI runs from the checkout."""
    monkeypatch.chdir(files)
    return files


# --------------------------------------------------------------------------- the SARIF schema


def _cache() -> Path:
    lock = hashlib.sha256((SARIF_PACKAGE / "package-lock.json").read_bytes()).hexdigest()[:16]
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "h5ml-tests" / f"sarif-schema-{lock}"


@pytest.fixture(scope="module")
def sarif_schema() -> jsonschema.protocols.Validator:
    """The SARIF 2.1.0 JSON Schema of @microsoft/jest-sarif, installed by ``npm ci`` into the cache once."""
    folder = _cache()
    schema_path = folder / SCHEMA_IN_PACKAGE
    folder.parent.mkdir(parents=True, exist_ok=True)
    # One process at a time (two pytest-xdist workers, or two runs) installs; the others wait, then find it there.
    with FileLock(folder.with_name(folder.name + ".lock"), timeout=NPM_TIMEOUT + 60):
        if not schema_path.is_file():
            if NPM is None:
                if os.environ.get("CI"):
                    pytest.fail("npm is not on PATH: CI installs it (scripts/test.sh) to fetch the SARIF schema")
                pytest.skip("npm is not on PATH; install Node.js and npm to check the SARIF reports against the schema")
            staging = folder.with_name(folder.name + f".{os.getpid()}")
            shutil.rmtree(staging, ignore_errors=True)
            staging.mkdir(parents=True)
            for name in ("package.json", "package-lock.json"):
                shutil.copy(SARIF_PACKAGE / name, staging / name)
            npm_ci(staging, "--ignore-scripts", timeout=NPM_TIMEOUT, what=f"npm ci of tests/sarif in {staging}")
            shutil.rmtree(folder, ignore_errors=True)
            staging.rename(folder)
    schema = json.loads(schema_path.read_text(encoding="utf-8"))
    assert schema["$schema"] == "http://json-schema.org/draft-04/schema#"
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


def _sarif(schema: jsonschema.protocols.Validator, *args: str) -> tuple[int, dict[str, Any]]:
    """Run ``validate --format sarif``; check the log against the schema; return (exit code, log)."""
    code, out, err = run_cli("validate", "--format", "sarif", *args)
    assert not err, err
    log = json.loads(out)
    errors = [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in schema.iter_errors(log)]
    assert errors == [], errors
    return code, log


def _json_issues(*args: str) -> list[dict[str, Any]]:
    """The issues of ``validate --format json`` of each file, in the order of the SARIF results (shards after their index)."""
    _, out, _ = run_cli("validate", "--format", "json", *args)

    def walk(entries: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        for entry in entries:
            yield from ({**issue, "file": entry["path"]} for issue in entry["issues"])
            yield from walk(entry.get("shards", []))

    return list(walk(json.loads(out)["files"]))


# --------------------------------------------------------------------------- SARIF


def test_sarif_of_one_file_names_each_issue_its_rule_file_and_hdf5_path(
    here: Path, sarif_schema: jsonschema.protocols.Validator
) -> None:
    """bad.h5: one run; a rule per code used; each result's level, message, file and HDF5 path; exit 1 as text."""
    code, log = _sarif(sarif_schema, "bad.h5")
    text_code, _, _ = run_cli("validate", "bad.h5")
    assert code == text_code == 1
    assert log["version"] == "2.1.0" and len(log["runs"]) == 1
    run = log["runs"][0]
    driver = run["tool"]["driver"]
    assert driver["name"] == "h5ml" and driver["version"] == h5ml.__version__
    assert driver["informationUri"].startswith("https://")
    assert [r["id"] for r in driver["rules"]] == ["E106", "I303", "W203", "W204"]
    for rule in driver["rules"]:
        entry = CODES[rule["id"]]
        assert rule["name"] == entry.name and rule["shortDescription"]["text"] == entry.summary
        assert rule["helpUri"] == clause_uri(entry.clause) == f"{SPEC_URI}#{CLAUSE_ANCHORS[entry.clause]}"
        assert rule["defaultConfiguration"]["level"] == LEVELS[entry.severity.value]
        assert rule["properties"]["clause"] == entry.clause
    expected = _json_issues("bad.h5")
    results = run["results"]
    assert [r["ruleId"] for r in results] == [i["code"] for i in expected] == ["E106", "W203", "W204", "I303"]
    for result, issue in zip(results, expected, strict=True):
        assert result["level"] == LEVELS[issue["severity"]]
        assert result["message"]["text"] == cli_words(issue["message"])
        assert driver["rules"][result["ruleIndex"]]["id"] == issue["code"]
        (location,) = result["locations"]
        assert location["physicalLocation"]["artifactLocation"] == {"uri": "bad.h5", "index": 0}
        assert location["logicalLocations"][0]["fullyQualifiedName"] == issue["path"]
        assert result["properties"]["clause"] == issue["clause"]
    assert results[0]["message"]["text"].startswith("bad.h5 has no completion marker")
    assert len({r["partialFingerprints"]["h5mlIssue/v1"] for r in results}) == len(results)
    (artifact,) = run["artifacts"]
    assert artifact["location"]["uri"] == "bad.h5"
    assert artifact["properties"]["valid"] is False and artifact["properties"]["counts"]["error"] == 1
    assert run["invocations"][0]["exitCode"] == 1 and run["invocations"][0]["executionSuccessful"] is True
    _, again = _sarif(sarif_schema, "bad.h5")
    assert again == log  # deterministic: the same file, the same report
    wrong = json.loads(json.dumps(log))
    wrong["runs"][0]["results"][3]["level"] = "info"  # SARIF calls it "note": the schema check must see that
    assert [e.message for e in sarif_schema.iter_errors(wrong)] != []


def test_sarif_of_several_files_has_the_text_reports_exit_status(
    here: Path, sarif_schema: jsonschema.protocols.Validator
) -> None:
    """good (0), good+bad (1), good+bad+broken (2: E100 in the report), good --strict (1: W204); as the text report."""
    for args, expected in (
        (("good.h5",), 0),
        (("good.h5", "bad.h5"), 1),
        (("good.h5", "bad.h5", "broken.h5"), 2),
        (("--strict", "good.h5"), 1),
    ):
        code, log = _sarif(sarif_schema, *args)
        assert code == run_cli("validate", *args)[0] == expected, args
        run = log["runs"][0]
        assert run["invocations"][0]["exitCode"] == expected
        assert run["invocations"][0]["executionSuccessful"] is (expected != 2)
        assert [a["location"]["uri"] for a in run["artifacts"]] == [a for a in args if a.endswith(".h5")]
    broken = [r for r in log_results(sarif_schema, "good.h5", "bad.h5", "broken.h5") if r["ruleId"] == "E100"]
    assert [r["locations"][0]["physicalLocation"]["artifactLocation"] for r in broken] == [
        {"uri": "broken.h5", "index": 2}
    ]


def log_results(schema: jsonschema.protocols.Validator, *args: str) -> list[dict[str, Any]]:
    """The results of ``validate --format sarif ARGS``."""
    results: list[dict[str, Any]] = _sarif(schema, *args)[1]["runs"][0]["results"]
    return results


def test_sarif_of_a_sharded_index_has_the_index_and_each_shard(
    here: Path, sarif_schema: jsonschema.protocols.Validator
) -> None:
    """The index's E174 at its JSON pointer, the invalid shard's own E106 at its path; exit 1 as the text report."""
    code, log = _sarif(sarif_schema, "sharded/index.json")
    assert code == run_cli("validate", "sharded/index.json")[0] == 1
    run = log["runs"][0]
    uris = [a["location"]["uri"] for a in run["artifacts"]]
    assert uris[0] == "sharded/index.json"
    assert sorted(uris[1:]) == ["sharded/train/train-00000.h5", "sharded/train/train-00001.h5"]
    assert [a["properties"]["kind"] for a in run["artifacts"]] == ["index", "shard", "shard"]
    by_rule = {
        (r["ruleId"], r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]): r for r in run["results"]
    }
    e174 = by_rule["E174", "sharded/index.json"]
    logical = e174["locations"][0]["logicalLocations"][0]
    assert logical["fullyQualifiedName"].startswith("/splits/train")
    assert logical["properties"]["pathKind"] == "json-pointer"
    e106 = by_rule["E106", "sharded/train/train-00001.h5"]
    assert e106["locations"][0]["logicalLocations"][0] == {
        "fullyQualifiedName": "/",
        "properties": {"pathKind": "hdf5"},
    }
    assert ("E106", "sharded/train/train-00000.h5") not in by_rule
    assert {r["ruleId"] for r in run["results"]} == {r["id"] for r in run["tool"]["driver"]["rules"]}


def test_min_severity_trims_sarif_results_and_rules_not_the_exit_status(
    here: Path, sarif_schema: jsonschema.protocols.Validator
) -> None:
    """--min-severity warning leaves out I303, error leaves only E106; the exit status stays 1."""
    for least, codes in (
        ("info", ["E106", "W203", "W204", "I303"]),
        ("warning", ["E106", "W203", "W204"]),
        ("error", ["E106"]),
    ):
        code, log = _sarif(sarif_schema, "--min-severity", least, "bad.h5")
        run = log["runs"][0]
        assert code == 1
        assert [r["ruleId"] for r in run["results"]] == codes
        assert [r["id"] for r in run["tool"]["driver"]["rules"]] == sorted(codes)
        assert run["artifacts"][0]["properties"]["counts"] == {"error": 1, "warning": 2, "info": 1}  # counts all


def test_sarif_counts_the_issues_past_max_issues_per_code(
    here: Path, sarif_schema: jsonschema.protocols.Validator
) -> None:
    """links.h5 breaks E110 five times: --max-issues-per-code 2 lists 2 results and says 3 more were counted."""
    code, log = _sarif(sarif_schema, "--max-issues-per-code", "2", "links.h5")
    run = log["runs"][0]
    assert code == 1
    assert [r["ruleId"] for r in run["results"]].count("E110") == 2
    assert run["artifacts"][0]["properties"]["issueTotals"]["E110"] == 5
    assert run["artifacts"][0]["properties"]["omitted"] == {"E110": 3}
    (note,) = run["invocations"][0]["toolExecutionNotifications"]
    assert note["descriptor"] == {"id": "E110"}
    assert note["message"]["text"].startswith("3 more E110 issues of links.h5 were counted, not listed")
    paths = [
        r["locations"][0]["logicalLocations"][0]["fullyQualifiedName"] for r in run["results"] if r["ruleId"] == "E110"
    ]
    assert paths == ["/_links/l0", "/_links/l1"]


# --------------------------------------------------------------------------- JUnit


def _junit(*args: str) -> tuple[int, JUnitXml]:
    code, out, err = run_cli("validate", "--format", "junit", *args)
    assert not err, err
    assert out.startswith("<?xml version='1.0' encoding='utf-8'?>")
    return code, JUnitXml.fromstring(out.encode("utf-8"))


def _cases(suite: TestSuite) -> dict[str, Any]:
    return {case.name: case for case in suite}


def test_junit_has_a_suite_per_file_and_a_case_per_code(here: Path) -> None:
    """good+bad+broken: three suites; E106 fails with its message, warnings pass, E100 is an error; exit 2."""
    code, xml = _junit("good.h5", "bad.h5", "broken.h5")
    assert code == run_cli("validate", "good.h5", "bad.h5", "broken.h5")[0] == 2
    suites = list(xml)
    assert [s.name for s in suites] == ["good.h5", "bad.h5", "broken.h5"]
    good, bad, broken = (_cases(s) for s in suites)
    assert list(good) == ["W204 description_missing", "I303 not_shuffled"]
    assert all(case.is_passed for case in good.values())
    assert "add the root attribute 'description'" in good["W204 description_missing"].system_out
    assert list(bad) == ["E106 incomplete", "W203 license_missing", "W204 description_missing", "I303 not_shuffled"]
    (failure,) = bad["E106 incomplete"].result
    assert isinstance(failure, Failure) and failure.type == "E106"
    assert failure.message.startswith("bad.h5 has no completion marker")
    assert failure.text.startswith("/: bad.h5 has no completion marker")
    assert bad["W203 license_missing"].is_passed
    (error,) = broken["E100 not_hdf5"].result
    assert isinstance(error, Error) and error.type == "E100"
    assert [(s.tests, s.failures, s.errors) for s in suites] == [(2, 0, 0), (4, 1, 0), (1, 0, 1)]
    assert (xml.tests, xml.failures, xml.errors) == (7, 1, 1)
    properties = {p.name: p.value for p in suites[1].properties()}
    assert properties["valid"] == "false" and properties["errors"] == "1" and properties["warnings"] == "2"
    assert {case.classname for case in bad.values()} == {"bad.h5"}


def test_junit_strict_fails_the_warnings_and_min_severity_keeps_a_passing_case(here: Path) -> None:
    """--strict makes W204 a failure (exit 1); --min-severity error leaves good.h5 the one passing case 'valid'."""
    code, xml = _junit("--strict", "good.h5")
    assert code == 1
    cases = _cases(next(iter(xml)))
    (failure,) = cases["W204 description_missing"].result
    assert isinstance(failure, Failure) and failure.type == "W204"
    assert cases["I303 not_shuffled"].is_passed  # info never fails
    code, xml = _junit("--min-severity", "error", "good.h5")
    assert code == 0
    (suite,) = list(xml)
    assert [(c.name, c.is_passed) for c in suite] == [("valid", True)]
    assert (suite.tests, suite.failures, suite.errors) == (1, 0, 0)
    code, xml = _junit("--min-severity", "warning", "bad.h5")
    assert code == 1 and list(_cases(next(iter(xml)))) == [
        "E106 incomplete",
        "W203 license_missing",
        "W204 description_missing",
    ]


def test_junit_of_a_sharded_index_has_a_suite_for_the_index_and_each_shard(here: Path) -> None:
    """The index's suite fails on E174, the second shard's on E106, the first shard's passes; exit 1."""
    code, xml = _junit("sharded/index.json")
    assert code == 1
    suites = {s.name: _cases(s) for s in xml}
    assert list(suites) == ["sharded/index.json", *sorted(n for n in suites if n.endswith(".h5"))]
    index = suites["sharded/index.json"]
    assert any(name.startswith("E174 ") and not case.is_passed for name, case in index.items())
    shards = {Path(name).name: cases for name, cases in suites.items() if name.endswith(".h5")}
    assert not shards["train-00001.h5"]["E106 incomplete"].is_passed
    assert all(case.is_passed for case in shards["train-00000.h5"].values())


def test_junit_escapes_what_xml_cannot_hold(files: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A file named with ESC: the XML still parses, the name shows the escape, never the raw character (§10.2)."""
    shutil.copy(files / "bad.h5", tmp_path / "bad\x1b.h5")
    monkeypatch.chdir(tmp_path)
    code, xml = _junit("bad\x1b.h5")
    assert code == 1
    (suite,) = list(xml)
    assert suite.name == "bad\\x1b.h5"
    assert "\x1b" not in run_cli("validate", "--format", "junit", "bad\x1b.h5")[1]


# --------------------------------------------------------------------------- options


@pytest.mark.parametrize("fmt", ["sarif", "junit"])
def test_options_the_report_cannot_honour_are_refused_before_any_check(here: Path, fmt: str) -> None:
    """--quiet, and --strict with --min-severity error (the failing warnings would be left out): usage errors, exit 2."""
    code, out, err = run_cli("validate", "--format", fmt, "--quiet", "bad.h5")
    assert code == 2 and out == ""
    assert err.startswith("h5ml: error: --quiet prints the verdict lines of the text report") and "Traceback" not in err
    code, out, err = run_cli("validate", "--format", fmt, "--strict", "--min-severity", "error", "bad.h5")
    assert code == 2 and out == ""
    assert "--strict fails on warnings, and --min-severity error leaves them out" in err
    assert "--min-severity warning" in err and "Traceback" not in err


def test_output_writes_the_report_to_a_file_and_refuses_to_replace_without_overwrite(
    here: Path, tmp_path: Path
) -> None:
    """--output FILE: the report there, nothing on stdout; an existing FILE only with --overwrite; never an input."""
    report = tmp_path / "h5ml.sarif"
    code, out, err = run_cli("validate", "--format", "sarif", "--output", str(report), "bad.h5")
    assert (code, out, err) == (1, "", "")
    first = json.loads(report.read_text(encoding="utf-8"))
    assert [r["ruleId"] for r in first["runs"][0]["results"]] == ["E106", "W203", "W204", "I303"]
    report.write_text("an earlier report", encoding="utf-8")
    code, out, err = run_cli("validate", "--format", "sarif", "--output", str(report), "good.h5")
    assert code == 2 and out == ""
    assert (
        err
        == f"h5ml: error: --output {report} exists: give another path, or pass --overwrite to replace it (see 'h5ml validate --help')\n"
    )
    assert report.read_text(encoding="utf-8") == "an earlier report"
    code, _, err = run_cli("validate", "--format", "junit", "-o", str(report), "--overwrite", "good.h5")
    assert code == 0 and err == ""
    assert next(iter(JUnitXml.fromfile(str(report)))).name == "good.h5"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["h5ml.sarif"]  # no temporary file left beside it
    before = (here / "good.h5").read_bytes()
    code, _, err = run_cli("validate", "--format", "sarif", "--output", "good.h5", "--overwrite", "good.h5")
    assert code == 2 and "--output good.h5 is one of the FILEs checked" in err
    shard = here / "sharded" / "train" / "train-00000.h5"
    shard_bytes = shard.read_bytes()
    code, _, err = run_cli("validate", "-o", str(shard), "--overwrite", "sharded/index.json")  # a shard of it
    assert code == 2 and f"--output {shard} is an HDF5 file (a dataset?), which a report never replaces" in err
    assert (here / "good.h5").read_bytes() == before and shard.read_bytes() == shard_bytes
    code, _, err = run_cli("validate", "--output", str(tmp_path / "missing" / "r.txt"), "good.h5")
    assert code == 2 and "does not exist; create it first" in err
    code, out, _ = run_cli("validate", "--output", str(tmp_path / "report.txt"), "bad.h5")
    text = (tmp_path / "report.txt").read_text(encoding="utf-8")
    assert code == 1 and out == "" and "bad.h5: INVALID (1 error, 2 warnings, 1 info)" in text and "\x1b[" not in text
    code, out, _ = run_cli("validate", "--format", "junit", "--output", "-", "good.h5")
    assert code == 0 and out.startswith("<?xml")


# --------------------------------------------------------------------------- links and URIs


def test_every_clause_of_the_registry_links_to_its_heading_in_spec_md() -> None:
    """CLAUSE_ANCHORS agrees with SPEC.md's headings (GitHub's and MkDocs' anchors), for every clause a code names."""
    anchors = {}
    for line in (ROOT / "SPEC.md").read_text(encoding="utf-8").splitlines():
        heading = re.match(r"^#{2,3} (§[\d.]+) (.+)$", line)
        if heading:
            text = f"{heading[1]} {heading[2]}".replace("`", "").lower()
            anchors[heading[1]] = re.sub(r"[^\w\- ]", "", text).strip().replace(" ", "-")
    assert {clause: CLAUSE_ANCHORS[clause] for clause in anchors if clause in CLAUSE_ANCHORS} == {
        clause: anchors[clause] for clause in anchors if clause in CLAUSE_ANCHORS
    }
    for entry in CODES.values():
        assert entry.clause in CLAUSE_ANCHORS and entry.clause in anchors, entry
    assert CLAUSE_ANCHORS["§9.2"] == "92-issue-code-registry"
    assert clause_uri("§9.3.2") == clause_uri("§9.3") == f"{SPEC_URI}#93-report"
    assert clause_uri("§99.1") == SPEC_URI


def test_artifact_uri_is_relative_below_the_current_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Below cwd: a relative URI, percent-encoded; elsewhere: a file:// URI; a URL unchanged."""
    (tmp_path / "data set").mkdir()
    inside = tmp_path / "data set" / "a#1.h5"
    assert artifact_uri(str(inside), cwd=str(tmp_path)) == "data%20set/a%231.h5"
    monkeypatch.chdir(tmp_path)
    assert artifact_uri("data set/a#1.h5") == artifact_uri("./data set/../data set/a#1.h5") == "data%20set/a%231.h5"
    assert artifact_uri(str(inside), cwd=str(tmp_path / "data set" / "sub")) == inside.as_uri()
    assert artifact_uri("s3://bucket/ds.h5") == "s3://bucket/ds.h5"


# --------------------------------------------------------------------------- the documented workflow

WORKFLOW = ROOT / "docs" / "guides" / "validate-workflow.yml"
GUIDE = ROOT / "docs" / "guides" / "validation-in-ci.md"
#: How the guide installs h5ml, which is not on PyPI: <owner> and <rev> are placeholders the guide explains.
INSTALL = 'pip install "h5ml @ git+https://github.com/<owner>/h5ml@<rev>"'


def _steps() -> list[dict[str, Any]]:
    import yaml

    workflow = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    triggers = workflow.get("on", workflow.get(True))  # YAML 1.1 reads the key `on` as true
    assert set(triggers) == {"push", "pull_request"}
    assert workflow["permissions"] == {"contents": "read", "security-events": "write"}
    steps: list[dict[str, Any]] = workflow["jobs"]["validate"]["steps"]
    return steps


def test_the_documented_workflow_checks_out_installs_validates_and_uploads() -> None:
    """docs/guides/validate-workflow.yml parses, its steps in order; the guide includes that file, not a copy."""
    steps = _steps()
    uses = [step.get("uses", "").split("@")[0] for step in steps]
    assert uses == ["actions/checkout", "actions/setup-python", "", "", "github/codeql-action/upload-sarif"]
    assert steps[2]["run"] == INSTALL  # h5ml is not on PyPI: its repository, at a revision
    assert "h5ml validate --format sarif --output h5ml.sarif data/**/*.h5" in steps[3]["run"]
    assert steps[3]["shell"] == "bash" and "shopt -s globstar" in steps[3]["run"]
    assert steps[4]["with"]["sarif_file"] == "h5ml.sarif"
    assert "!cancelled()" in steps[4]["if"]  # the report is uploaded when validation fails too
    guide = GUIDE.read_text(encoding="utf-8")
    assert '--8<-- "docs/guides/validate-workflow.yml"' in guide
    assert "upload-sarif" not in guide.split("```yaml\n--8<--")[0].split("## GitHub Actions")[1]


def test_the_documented_validation_step_runs_and_writes_a_valid_sarif_report(
    files: Path, tmp_path: Path, sarif_schema: jsonschema.protocols.Validator
) -> None:
    """The workflow's Validate step, run with bash in a checkout holding data/good.h5 and data/deep/er/bad.h5."""
    bash = shutil.which("bash")
    script = shutil.which("h5ml", path=str(Path(sys.executable).parent)) or shutil.which("h5ml")
    if bash is None or script is None:
        pytest.fail("bash and the h5ml console script (pip install -e .) are needed to run the workflow's step")
    (tmp_path / "data" / "deep" / "er").mkdir(parents=True)
    shutil.copy(files / "good.h5", tmp_path / "data" / "good.h5")
    shutil.copy(files / "bad.h5", tmp_path / "data" / "deep" / "er" / "bad.h5")
    env = {**os.environ, "PATH": os.pathsep.join([str(Path(script).parent), os.environ.get("PATH", "")])}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "reference"), os.environ.get("PYTHONPATH", "")])
    proc = subprocess.run(
        [bash, "-e", "-c", _steps()[3]["run"]],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 1, proc.stderr  # bad.h5 is invalid: the step fails, the upload step still runs
    log = json.loads((tmp_path / "h5ml.sarif").read_text(encoding="utf-8"))
    assert list(sarif_schema.iter_errors(log)) == []
    uris = sorted(a["location"]["uri"] for a in log["runs"][0]["artifacts"])
    assert uris == ["data/deep/er/bad.h5", "data/good.h5"]


def test_the_guides_pre_commit_snippet_names_the_hook_of_this_repository() -> None:
    """The .pre-commit-config.yaml of the guide uses the id that .pre-commit-hooks.yaml defines."""
    import yaml

    guide = GUIDE.read_text(encoding="utf-8")
    snippet = next(block for block in re.findall(r"```yaml\n(.*?)```", guide, re.S) if "repos:" in block)
    (repo,) = yaml.safe_load(snippet)["repos"]
    hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
    assert {h["id"] for h in repo["hooks"]} <= {h["id"] for h in hooks}
    assert (repo["repo"], repo["rev"]) == ("https://github.com/<owner>/h5ml", "<rev>")  # the install's placeholders


def test_the_guide_installs_from_git_explains_the_placeholders_and_the_rules_links() -> None:
    """No `pip install h5ml` (not on PyPI); <owner> and <rev> explained; helpUri's namespace, with a real link."""
    guide = GUIDE.read_text(encoding="utf-8")
    assert "pip install h5ml\n" not in guide and "pip install h5ml " not in guide
    assert guide.count(INSTALL) == 2  # the install section and the GitLab job
    placeholders = guide.split("## Installing h5ml")[1].split("\n## ")[0]
    assert "- `<owner>`: the GitHub user or organisation" in placeholders and "- `<rev>`: a tag" in placeholders
    e106 = _rule_of("E106")
    assert e106["helpUri"] == f"{SPEC_URI}#44-completion-marker" and f"`{e106['helpUri']}`" in guide
    assert f"`{SPEC_URI}#<anchor>`" in guide and "https://github.com/<owner>/h5ml/blob/<rev>/SPEC.md#44-" in guide


def _rule_of(code: str) -> dict[str, Any]:
    from h5ml.tools.formats.sarif import sarif_report
    from h5ml.validator.checks import Issue
    from h5ml.validator.report import FileReport

    log = sarif_report([FileReport("x.h5", (Issue.of(code, "/", "m"),))], strict=False, exit_code=1)
    (rule,) = log["runs"][0]["tool"]["driver"]["rules"]
    return dict(rule)
