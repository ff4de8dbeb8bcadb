"""The validator conformance levels of run.py (``--level errors|warnings|info``, CONTRACT.md §8) on real commands.

Each fake validator is a small Python script written to ``tmp_path`` and run
by ``conformance_tests/run.py`` as a real command, exactly as a validator in
another language would be: the reference validator with its warnings and
infos filtered out, an oracle that prints the manifest's expected errors and
nothing else, one that always says valid, one that checks only the HDF5
signature, and one that always says invalid. Nothing imports the runner.

Time: the fakes that do not start the reference validator run the whole
suite in a few seconds (``--batch 60``). The filtered reference validator
checks each file in a fresh child interpreter (about 0.4 s of CPU a file), so
it runs a subset chosen to tell the levels apart: cases with errors only,
warnings only, infos only, an error with a warning or an info, a valid file
without issues and an unreadable one.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from test_conformance import H5ML, SUITE, _runner, _statuses

LEVELS = ("errors", "warnings", "info")
MANIFEST: dict[str, Any] = json.loads((SUITE / "manifest.json").read_text(encoding="utf-8"))

#: The subset the filtered reference validator runs, and the level at which each case fails it (None: passes all).
SUBSET: dict[str, str | None] = {
    "e150-chunk-splits-sample": None,  # errors only
    "e100-empty": None,  # unreadable, exit status 2, exclusive
    "valid-userblock": None,  # valid, no issue at all
    "w203-no-license": "warnings",  # a warning only
    "w207-split-aliases": "warnings",  # four warnings of one code
    "e144-fixed-string-not-utf8": "warnings",  # an error (deep) and a warning
    "i303-no-shuffle-seed": "info",  # an info only
    "i301-committed-datatype-at-root": "info",  # an info, and an absent error
    "e113-opaque-attribute": "info",  # an error and an info
}

_REPORT_HEAD = (
    "import json, sys\n"
    "def report(files, status):\n"
    "    print(json.dumps({'report_version': '1.0', 'tool': {'name': 'fake', 'version': '0'}, 'files': files}))\n"
    "    sys.exit(status)\n"
    "REGISTRY = json.load(open(%r, encoding='utf-8'))['registry']\n"
    "def issue(code, path):\n"
    "    known = REGISTRY[code]\n"
    "    return {'code': code, 'name': known['name'], 'severity': known['severity'], 'path': path,\n"
    "            'message': 'fake', 'clause': known['clause']}\n"
)

#: The reference validator (deep) with every warning and info taken out of its report: it reports every error.
ERRORS_ONLY_REFERENCE = (
    "import subprocess\n"
    "proc = subprocess.run([%r, 'validate', '--format', 'json', '--deep', *sys.argv[1:]], capture_output=True,\n"
    "                      text=True, check=False)\n"
    "document = json.loads(proc.stdout)\n"
    "for entry in document['files']:\n"
    "    entry['issues'] = [i for i in entry['issues'] if i['severity'] == 'error']\n"
    "report(document['files'], proc.returncode)\n"
)

#: Prints, for each fixture, the errors the manifest expects of its deep case (first accepted path), nothing else.
#: A sharded dataset's case (SPEC §12) is known by its folder and index, ``<folder>/index.json``.
ERRORS_ORACLE = (
    "import os\n"
    "def key(file, case=None):\n"
    "    parts = file.replace(os.sep, '/').split('/')\n"
    "    return '/'.join(parts[-2:]) if case is None or 'dataset' in case else parts[-1]\n"
    "cases = {key(c['file'], c): c for c in json.load(open(%r, encoding='utf-8'))['cases']\n"
    "         if c['mode'] in ('any', 'deep')}\n"
    "files = []\n"
    "for path in sys.argv[1:]:\n"
    "    case = cases.get(key(path)) or cases[os.path.basename(path)]\n"
    "    found = [issue(e['code'], e['path'] if isinstance(e['path'], str) else (e['path'] or ['/'])[0])\n"
    "             for e in case['issues'] if e['level'] == 'errors']\n"
    "    files.append({'path': path, 'readable': case['readable'], 'valid': case['valid'],\n"
    "                  'format_version': case.get('format_version'), 'issues': found})\n"
    "unreadable = any(not f['readable'] for f in files)\n"
    "report(files, 2 if unreadable else 1 if any(not f['valid'] for f in files) else 0)\n"
)

ALWAYS_VALID = (
    "files = [{'path': p, 'readable': True, 'valid': True, 'format_version': '1.0', 'issues': []}\n"
    "         for p in sys.argv[1:]]\n"
    "report(files, 0)\n"
)

#: Valid when the HDF5 signature is at offset 0, 512, 1024, ... (SPEC §3.1, a user block), else E100.
SIGNATURE_ONLY = (
    "SIGNATURE = bytes([0x89]) + b'HDF' + bytes([13, 10, 26, 10])\n"
    "def has_signature(path):\n"
    "    data = open(path, 'rb').read()\n"
    "    offsets = [0] + [512 * 2 ** k for k in range(20)]\n"
    "    return any(data[o:o + 8] == SIGNATURE for o in offsets if o + 8 <= len(data))\n"
    "files = []\n"
    "for p in sys.argv[1:]:\n"
    "    if has_signature(p):\n"
    "        files.append({'path': p, 'readable': True, 'valid': True, 'format_version': '1.0', 'issues': []})\n"
    "    else:\n"
    "        files.append({'path': p, 'readable': False, 'valid': False, 'format_version': None,\n"
    "                      'issues': [issue('E100', '/')]})\n"
    "report(files, 2 if any(not f['readable'] for f in files) else 0)\n"
)

ALWAYS_INVALID = (
    "files = [{'path': p, 'readable': True, 'valid': False, 'format_version': None, 'issues': [issue('E102', '/')]}\n"
    "         for p in sys.argv[1:]]\n"
    "report(files, 1)\n"
)


def _fake(tmp_path: Path, name: str, body: str) -> list[str]:
    """Write a fake validator script (the report helpers, then ``body``) and return the command that runs it."""
    script = tmp_path / f"{name}.py"
    script.write_text(_REPORT_HEAD % str(SUITE / "manifest.json") + body, encoding="utf-8")
    return [sys.executable, str(script)]


def _run_levels(tmp_path: Path, command: list[str], options: list[str], timeout: float) -> dict[str, dict[str, Any]]:
    """run.py validator at each level (deep, with LZF): level -> exit status, output and results."""
    runs = {}
    for level in LEVELS:
        results = tmp_path / f"{level}.json"
        run = _runner("validator", ["--level", level, *options], command, results, timeout=timeout)
        run["results"] = json.loads(results.read_text(encoding="utf-8"))
        runs[level] = run
    return runs


def _summary(run: dict[str, Any]) -> list[str]:
    """The two summary lines run.py prints last."""
    lines: list[str] = run["stdout"].splitlines()
    return lines[-2:]


def _with_warnings_or_infos(level: str) -> set[str]:
    """The cases run in deep mode (core or LZF) that expect an issue of ``level``."""
    return {
        c["id"] for c in MANIFEST["cases"] if c["mode"] != "shallow" and any(i["level"] == level for i in c["issues"])
    }


def test_reference_without_warnings_and_infos_passes_errors_and_fails_info(tmp_path: Path) -> None:
    """The reference validator, filtered to its errors, passes ``--level errors`` and fails the levels above,
    each case at the level of the first issue it lacks; the FAIL line and the summary name the level."""
    command = _fake(tmp_path, "errors_only_reference", ERRORS_ONLY_REFERENCE % H5ML)
    selection = [arg for case in SUBSET for arg in ("--case", case)]
    runs = _run_levels(tmp_path, command, ["--batch", "10", *selection], timeout=120)
    for level, run in runs.items():
        assert not _statuses(run, "ERROR"), run["stdout"] + run["stderr"]
        checked = LEVELS[: LEVELS.index(level) + 1]
        failing = {case: failed for case, failed in SUBSET.items() if failed in checked}
        assert {c["id"]: c["failed_level"] for c in run["cases"] if c["status"] == "FAIL"} == failing, run["stdout"]
        assert _statuses(run, "PASS") == set(SUBSET) - set(failing)
        assert run["rc"] == (1 if failing else 0), run["stdout"]
    assert "FAIL  w203-no-license: level warnings: missing W203 at /" in runs["warnings"]["stdout"].splitlines()
    assert "FAIL  i303-no-shuffle-seed: level info: missing I303 at /train" in runs["info"]["stdout"].splitlines()
    assert _summary(runs["errors"]) == [
        "validator (deep, level errors): 9 cases: 9 passed, 0 failed, 0 errors, 0 skipped",
        "levels: errors 9/9 passed",
    ]
    assert _summary(runs["info"]) == [
        "validator (deep, level info): 9 cases: 3 passed, 6 failed, 0 errors, 0 skipped",
        "levels: errors 9/9 passed, warnings 6/9 passed, info 3/9 passed",
    ]
    assert runs["info"]["results"]["passed_per_level"] == {"errors": 9, "warnings": 6, "info": 3}


def test_a_validator_reporting_every_error_and_nothing_else_passes_errors_on_the_whole_suite(tmp_path: Path) -> None:
    """A validator that prints exactly the expected errors passes every deep case at ``--level errors``; at
    ``warnings`` exactly the cases expecting a warning fail, at ``info`` also those expecting an info."""
    command = _fake(tmp_path, "errors_oracle", ERRORS_ORACLE % str(SUITE / "manifest.json"))
    runs = _run_levels(
        tmp_path, command, ["--batch", "60", "--feature", "filter-32000", "--feature", "float16"], timeout=300
    )
    warned, informed = _with_warnings_or_infos("warnings"), _with_warnings_or_infos("info")
    # 28 cases of the 1.0 suite failed such a validator before the levels; 1.1's cases add more warnings and infos
    assert len(warned | informed) >= 28 and warned and informed - warned
    assert runs["errors"]["rc"] == 0, runs["errors"]["stdout"][-3000:]
    assert _statuses(runs["errors"], "FAIL") == set()
    assert _statuses(runs["warnings"], "FAIL") == warned
    assert _statuses(runs["info"], "FAIL") == warned | informed
    assert {c["failed_level"] for c in runs["info"]["cases"] if c["id"] in informed - warned} == {"info"}
    ran = len(runs["errors"]["cases"]) - len(_statuses(runs["errors"], "SKIP"))
    assert _summary(runs["info"])[1] == (
        f"levels: errors {ran}/{ran} passed, warnings {ran - len(warned)}/{ran} passed, "
        f"info {ran - len(warned | informed)}/{ran} passed"
    )


@pytest.mark.parametrize(
    ("name", "body"),
    [
        pytest.param("always_valid", ALWAYS_VALID, id="always-valid"),
        pytest.param("signature_only", SIGNATURE_ONLY, id="signature-only"),
        pytest.param("always_invalid", ALWAYS_INVALID, id="always-invalid"),
    ],
)
def test_a_naive_validator_fails_every_level(tmp_path: Path, name: str, body: str) -> None:
    """A validator that always says valid, one that checks only the HDF5 signature, and one that always says
    invalid fail every level on the whole suite, most of their failures already at the level errors."""
    runs = _run_levels(
        tmp_path,
        _fake(tmp_path, name, body),
        ["--batch", "60", "--feature", "filter-32000", "--feature", "float16"],
        300,
    )
    for level, run in runs.items():
        assert run["rc"] == 1, f"{level}: {run['stdout'][-2000:]}{run['stderr'][-2000:]}"
        assert not _statuses(run, "ERROR"), run["stdout"][-3000:]
        failed = [c for c in run["cases"] if c["status"] == "FAIL"]
        assert len(failed) >= 39, f"{level}: {len(failed)} failures"  # every valid or every invalid case at least
        assert all(re.match(r"level (errors|warnings|info): ", r) for c in failed for r in c["reasons"])
    errors_failed = _statuses(runs["errors"], "FAIL")
    assert errors_failed <= _statuses(runs["warnings"], "FAIL") <= _statuses(runs["info"], "FAIL")


#: The errors oracle, plus an info the case forbids (``absent``) and a warning beside E100 (``exclusive``).
FORBIDDEN_EXTRAS = (
    "EXTRA = {'e131-encoding-unknown.h5': issue('I301', '/train/x'), 'e100-empty.h5': issue('W203', '/')}\n"
    "_report = report\n"
    "def report(files, status):\n"
    "    for entry in files:\n"
    "        if os.path.basename(entry['path']) in EXTRA:\n"
    "            entry['issues'].append(EXTRA[os.path.basename(entry['path'])])\n"
    "    _report(files, status)\n"
)


def test_forbidden_codes_count_at_the_level_of_their_severity(tmp_path: Path) -> None:
    """An ``absent`` info and a warning beside E100 in an ``exclusive`` case pass ``--level errors`` and fail the
    level of their own severity (CONTRACT.md §8.2), with the reason named."""
    oracle = ERRORS_ORACLE % str(SUITE / "manifest.json")
    body = oracle.replace("unreadable = any(", FORBIDDEN_EXTRAS + "unreadable = any(")
    command = _fake(tmp_path, "forbidden_extras", body)
    runs = _run_levels(tmp_path, command, ["--case", "e131-encoding-unknown", "--case", "e100-empty"], timeout=60)
    assert runs["errors"]["rc"] == 0, runs["errors"]["stdout"]
    assert {c["id"]: c["failed_level"] for c in runs["warnings"]["cases"]} == {
        "e131-encoding-unknown": None,
        "e100-empty": "warnings",
    }
    assert "FAIL  e100-empty: level warnings: must report E100 alone, also reports W203" in runs["info"]["stdout"]
    assert "FAIL  e131-encoding-unknown: level info: reports I301, which the case forbids" in runs["info"]["stdout"]


def test_a_manifest_of_format_1_0_is_judged_by_the_codes_severity(tmp_path: Path) -> None:
    """A manifest of format 1.0 (no ``validator_levels``, no issue ``level``) still follows the schema, and
    run.py levels its issues by their code's letter: the errors oracle passes ``errors`` and fails ``warnings``
    on a case that expects a warning. An unknown level is a usage error (exit 2)."""
    jsonschema = pytest.importorskip("jsonschema")
    cases = [c for c in MANIFEST["cases"] if c["id"] in ("w203-no-license", "e150-chunk-splits-sample")]
    old = {k: v for k, v in MANIFEST.items() if k != "validator_levels"}
    old["manifest_version"] = "1.0"
    old["cases"] = [{**c, "issues": [{"code": i["code"], "path": i["path"]} for i in c["issues"]]} for c in cases]
    schema = json.loads((SUITE.parent / "schema" / "h5ml-manifest-1.0.schema.json").read_text(encoding="utf-8"))
    assert list(jsonschema.Draft202012Validator(schema).iter_errors(old)) == []
    (tmp_path / "fixtures").mkdir()
    for case in cases:
        shutil.copyfile(SUITE / case["file"], tmp_path / case["file"])
    manifest = tmp_path / "manifest.json"
    manifest.write_text(json.dumps(old), encoding="utf-8")
    command = _fake(tmp_path, "errors_oracle", ERRORS_ORACLE % str(SUITE / "manifest.json"))
    runs = _run_levels(tmp_path, command, ["--manifest", str(manifest)], timeout=60)
    assert runs["errors"]["rc"] == 0, runs["errors"]["stdout"]
    assert {c["id"]: c["failed_level"] for c in runs["warnings"]["cases"]} == {
        "e150-chunk-splits-sample": None,
        "w203-no-license": "warnings",
    }
    wrong = _runner("validator", ["--level", "all"], command, tmp_path / "wrong.json", timeout=60)
    assert wrong["rc"] == 2 and "--level: invalid choice: 'all'" in wrong["stderr"], wrong["stderr"]


def test_a_reader_without_an_optional_feature_must_refuse_its_files(tmp_path: Path) -> None:
    """CONTRACT §10.3, SPEC §3.2-R2 and §3.5-R3: an undeclared feature's decode cases run as refusals.

    A reader that refuses everything passes the float16 and LZF cases when it does not declare those
    features; the reference reader, which decodes them, fails them unless it declares the features,
    and then passes them by their expected documents.
    """
    refuser = _fake(tmp_path, "refuser", "sys.exit(1)\n")  # the report helpers import sys
    cases = ["--case", "valid-dense-float16", "--case", "valid-lzf-declared"]
    run = _runner("reader", cases, refuser, tmp_path / "refuser.json", timeout=120)
    assert _statuses(run, "PASS") == {"valid-dense-float16", "valid-lzf-declared"}, run["stdout"]
    dump = [H5ML, "dump", "--format", "json"]
    undeclared = _runner("reader", cases, dump, tmp_path / "undeclared.json", timeout=120)
    assert _statuses(undeclared, "FAIL") == {"valid-dense-float16", "valid-lzf-declared"}, undeclared["stdout"]
    assert (
        "without the optional feature float16 (not declared with --feature) a reader must refuse"
        in (undeclared["stdout"])
    )
    declared = [*cases, "--feature", "float16", "--feature", "filter-32000"]
    run = _runner("reader", declared, dump, tmp_path / "declared.json", timeout=120)
    assert _statuses(run, "PASS") == {"valid-dense-float16", "valid-lzf-declared"}, run["stdout"]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["reader", "--level", "errors"], "--level: for validators only"),
        (["reader", "--batch", "3"], "--batch: for validators only"),
        (["validator", "--case", "no-such-case-*"], "no case of the manifest matches --case no-such-case-*"),
        (["validator", "--feature", "float17"], "unknown feature(s) ['float17']; the optional features are"),
    ],
)
def test_runner_usage_errors(options: list[str], message: str) -> None:
    """Options that would make a run mean nothing are usage errors (exit 2), not an empty pass."""
    proc = subprocess.run(
        [sys.executable, str(SUITE / "run.py"), *options, "--", "true"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert message in proc.stderr
