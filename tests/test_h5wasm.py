"""The valid conformance fixtures read by h5wasm, an HDF5 reader that is not ours (conformance_tests/h5wasm).

``node check.mjs`` opens every valid decode case of the manifest with h5wasm's
Node API, builds the Appendix B document from what h5wasm returns and compares
it with ``expected/<case>.json``. These tests run it in a subprocess with a
time limit and hold it to its contract: every case that
``unsupported.json`` does not list passes, every listed case still fails, a
wrong expected value is reported, and the suite's README lists exactly what
``unsupported.json`` lists.

``npm ci`` runs once per session when ``node_modules`` is missing or does not
match ``package-lock.json``, under a file lock, so that two pytest-xdist workers
never install into the folder at once. Without ``node`` or ``npm`` on PATH the tests that
need them are skipped (CI installs both); the README test needs neither.

Time: about 1 s for the checker over the 36 cases, plus ``npm ci`` (a few
seconds, from npm's cache) when node_modules must be installed.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from filelock import FileLock

from _npm import NPM, npm_ci

ROOT = Path(__file__).resolve().parent.parent
SUITE = ROOT / "conformance_tests"
CHECKER = SUITE / "h5wasm"
NODE = shutil.which("node")

NPM_TIMEOUT = 600  # seconds for npm ci, which may download h5wasm (about 5 MB)
CHECK_TIMEOUT = 180  # seconds for one run of check.mjs (about 1 s in practice)
STATUSES = ("PASS", "FAIL", "UNSUPPORTED", "UNEXPECTED PASS")
SUMMARY = re.compile(
    r"^h5wasm (?P<version>\S+): (?P<cases>\d+) cases: (?P<passed>\d+) passed, (?P<failed>\d+) failed, "
    r"(?P<unsupported>\d+) unsupported, (?P<unexpected>\d+) unexpected passes",
    re.MULTILINE,
)

needs_node = pytest.mark.skipif(
    (NODE is None or NPM is None) and not os.environ.get("CI"),  # in CI they must be there: the tests then fail
    reason="node and npm are not on PATH; install Node.js 18 or later to run the h5wasm reader checks",
)


def _load(path: Path) -> Any:
    """Parse a JSON file of the suite."""
    return json.loads(path.read_text(encoding="utf-8"))


def _decode_cases() -> list[dict[str, Any]]:
    """The manifest's valid cases whose reader expectation is to decode the file, as check.mjs selects them."""
    cases: list[dict[str, Any]] = _load(SUITE / "manifest.json")["cases"]
    return [
        case
        for case in cases
        if case.get("valid") is True
        and case.get("reader", {}).get("expect") == "decode"
        and "expected" in case["reader"]
        and "dataset" not in case  # a sharded case (a folder, SPEC §12) is not one file for h5wasm
    ]


def _unsupported() -> dict[str, str]:
    """unsupported.json: case id to the reason h5wasm cannot read it."""
    listed: dict[str, str] = _load(CHECKER / "unsupported.json")
    return listed


def _locked_packages(lockfile: Path) -> dict[str, tuple[str, str]]:
    """Version and integrity of every installed package a lock file names (the root entry "" left out)."""
    packages: dict[str, dict[str, Any]] = _load(lockfile)["packages"]
    return {name: (entry.get("version", ""), entry.get("integrity", "")) for name, entry in packages.items() if name}


def _install_is_current() -> bool:
    """Whether node_modules holds exactly what package-lock.json pins (npm records it in node_modules/.package-lock.json)."""
    installed = CHECKER / "node_modules" / ".package-lock.json"
    if not installed.is_file() or not (CHECKER / "node_modules" / "h5wasm" / "package.json").is_file():
        return False
    return _locked_packages(installed) == _locked_packages(CHECKER / "package-lock.json")


@pytest.fixture(scope="module")
def checker(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The checker's folder with its pinned dependencies installed (``npm ci`` once, only when needed).

    The lock lives in the run's shared temporary root (the parent of each xdist
    worker's own), so one worker installs while the others wait and then find
    the install current.
    """
    with FileLock(tmp_path_factory.getbasetemp().parent / "h5wasm-npm-ci.lock", timeout=NPM_TIMEOUT + 60):
        if not _install_is_current():
            npm_ci(CHECKER, timeout=NPM_TIMEOUT, what=f"npm ci in {CHECKER}")
            assert _install_is_current(), "npm ci finished but node_modules does not match package-lock.json"
    return CHECKER


def _check(*args: str) -> subprocess.CompletedProcess[str]:
    """Run ``node check.mjs <args>`` in the checker's folder with a time limit; output captured as text."""
    assert NODE is not None
    return subprocess.run(
        [NODE, "check.mjs", *args],
        cwd=CHECKER,
        capture_output=True,
        text=True,
        timeout=CHECK_TIMEOUT,
        check=False,
    )


def _outcomes(stdout: str) -> dict[str, str]:
    """Case id to status, from the checker's one line per case."""
    outcomes: dict[str, str] = {}
    for line in stdout.splitlines():
        for status in sorted(STATUSES, key=len, reverse=True):
            if line.startswith(status + " "):
                case_id = line[len(status) + 1 :].split(":", 1)[0]
                assert case_id not in outcomes, f"{case_id} reported twice"
                outcomes[case_id] = status
                break
    return outcomes


@pytest.fixture(scope="module")
def full_run(checker: Path) -> subprocess.CompletedProcess[str]:
    """One run of the checker over every valid decode case, shared by the tests that read its output."""
    return _check()


@needs_node
def test_h5wasm_reads_every_valid_fixture_it_supports(full_run: subprocess.CompletedProcess[str]) -> None:
    """Every valid decode case passes, except those unsupported.json lists, which still fail."""
    output = full_run.stdout + full_run.stderr
    assert full_run.returncode == 0, output
    decode_ids = {case["id"] for case in _decode_cases()}
    unsupported = set(_unsupported())
    assert unsupported <= decode_ids

    outcomes = _outcomes(full_run.stdout)
    assert set(outcomes) == decode_ids, output
    assert {case_id for case_id, status in outcomes.items() if status == "PASS"} == decode_ids - unsupported
    assert {case_id for case_id, status in outcomes.items() if status == "UNSUPPORTED"} == unsupported

    summary = SUMMARY.search(full_run.stdout)
    assert summary is not None, output
    installed = _load(CHECKER / "node_modules" / "h5wasm" / "package.json")["version"]
    assert summary["version"] == installed
    assert int(summary["cases"]) == len(decode_ids)
    assert int(summary["passed"]) >= len(decode_ids) - len(unsupported)
    assert int(summary["unsupported"]) == len(unsupported)
    assert (int(summary["failed"]), int(summary["unexpected"])) == (0, 0)


@needs_node
def test_h5wasm_unsupported_cases_fail_for_their_reason(full_run: subprocess.CompletedProcess[str]) -> None:
    """A listed case is printed with its reason and with what h5wasm actually did."""
    lines = full_run.stdout.splitlines()
    for case_id, reason in _unsupported().items():
        line = next(line for line in lines if line.startswith(f"UNSUPPORTED {case_id}: "))
        assert line.startswith(f"UNSUPPORTED {case_id}: {reason} [observed: ")


@needs_node
def test_h5wasm_returns_wrong_lzf_values_without_raising(full_run: subprocess.CompletedProcess[str]) -> None:
    """SPEC §3.5 note: on LZF chunks h5wasm 0.10.3 gives numbers, not an error, and they are not the data (every
    chunk of valid-lzf-declared is LZF-compressed: generate.py --check verifies its filter masks)."""
    line = next(line for line in full_run.stdout.splitlines() if line.startswith("UNSUPPORTED valid-lzf-declared: "))
    observed = line.rsplit("[observed: ", 1)[1]
    assert "h5wasm raised" not in observed
    assert re.match(
        r"/splits/train/features/x/values\[\d+\]\[\d+\]: \S+, expected -?\d+\.\d+ \(\+\d+ more\)\]$", observed
    )
    assert "is not registered" in full_run.stderr  # HDF5 inside h5wasm knew that the read failed


def _set(path: list[str | int], value: Any) -> Callable[[Any], None]:
    """An edit of an expected document: put ``value`` at ``path``."""

    def edit(document: Any) -> None:
        target = document
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value

    return edit


def _suite_with(tmp_path: Path, case_id: str, edit: Callable[[Any], None]) -> Path:
    """A one-case copy of the suite (manifest, fixture, expected document), with the expected document edited."""
    case = next(case for case in _decode_cases() if case["id"] == case_id)
    (tmp_path / "fixtures").mkdir()
    (tmp_path / "expected").mkdir()
    shutil.copyfile(SUITE / case["file"], tmp_path / case["file"])
    document = _load(SUITE / case["reader"]["expected"])
    edit(document)
    (tmp_path / case["reader"]["expected"]).write_text(json.dumps(document, ensure_ascii=False), encoding="utf-8")
    (tmp_path / "manifest.json").write_text(json.dumps({"cases": [case]}), encoding="utf-8")
    (tmp_path / "unsupported.json").write_text("{}", encoding="utf-8")
    return tmp_path


B_FEATURES = ["splits", "train", "features"]


@needs_node
@pytest.mark.parametrize(
    ("edit", "difference"),
    [
        pytest.param(
            _set([*B_FEATURES, "id", "values", 0], "9007199254740992"),
            '/splits/train/features/id/values[0]: "9007199254740993", expected "9007199254740992"',
            id="int64-one-off-beyond-2**53",
        ),
        pytest.param(
            _set([*B_FEATURES, "x", "values", 0, 0], 0.1),
            "/splits/train/features/x/values[0][0]: 0.10000000149011612, expected 0.1",
            id="float32-not-widened-exactly",
        ),
        pytest.param(
            _set([*B_FEATURES, "flag", "values", 0], 1),
            "/splits/train/features/flag/values[0]: true, expected 1",
            id="boolean-as-integer",
        ),
        pytest.param(
            _set([*B_FEATURES, "photo", "values", 0], "iVBORx=="),
            '/splits/train/features/photo/values[0]: "iVBORw==", expected "iVBORx=="',
            id="bytes-base64",
        ),
        pytest.param(
            _set([*B_FEATURES, "label", "class_names", 1], "cow"),
            '/splits/train/features/label/class_names[1]: "dog", expected "cow"',
            id="class-name",
        ),
        pytest.param(
            _set(["metadata", "complete"], True),
            "/metadata/complete: 1, expected true",
            id="complete-as-boolean",
        ),
        pytest.param(
            lambda document: document["splits"]["train"]["features"].pop("mask"),
            "/splits/train/features/mask: not expected",
            id="feature-not-expected",
        ),
    ],
)
def test_h5wasm_checker_reports_a_wrong_expectation(
    checker: Path, tmp_path: Path, edit: Callable[[Any], None], difference: str
) -> None:
    """The checker compares values, not only structure: one wrong expected value in Appendix B's file fails its case."""
    suite = _suite_with(tmp_path, "valid-appendix-b", edit)
    proc = _check("--suite", str(suite), "--unsupported", str(suite / "unsupported.json"))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert f"FAIL valid-appendix-b: {difference}\n" in proc.stdout


@needs_node
def test_h5wasm_checker_numbers_compare_by_value(checker: Path, tmp_path: Path) -> None:
    """1.0 equals 1 and -0.0 equals 0.0, as the suite's runner compares them: the edited document still passes."""

    def edit(document: Any) -> None:
        _set(["metadata", "complete"], 1.0)(document)
        _set([*B_FEATURES, "mask", "values", 0, 0, 0], -0.0)(document)

    suite = _suite_with(tmp_path, "valid-appendix-b", edit)
    proc = _check("--suite", str(suite), "--unsupported", str(suite / "unsupported.json"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "PASS valid-appendix-b\n" in proc.stdout


@needs_node
@pytest.mark.parametrize(
    ("listed", "returncode", "message"),
    [
        pytest.param(
            {"valid-appendix-a": "pretended limitation"},
            1,
            'UNEXPECTED PASS valid-appendix-a: listed in unsupported.json ("pretended limitation")',
            id="listed-case-passes",
        ),
        pytest.param({"no-such-case": "a reason"}, 2, "no-such-case", id="unknown-case-listed"),
        pytest.param({"valid-appendix-a": ""}, 2, "must be a non-empty string", id="empty-reason"),
    ],
)
def test_h5wasm_checker_keeps_the_unsupported_list_honest(
    checker: Path, tmp_path: Path, listed: dict[str, str], returncode: int, message: str
) -> None:
    """A listed case that passes fails the run; a list naming an unknown case or giving no reason is refused."""
    unsupported = tmp_path / "unsupported.json"
    unsupported.write_text(json.dumps(listed), encoding="utf-8")
    proc = _check("--case", "valid-appendix-?", "--unsupported", str(unsupported))
    assert proc.returncode == returncode, proc.stdout + proc.stderr
    assert message in proc.stdout + proc.stderr


def test_h5wasm_readme_lists_every_unsupported_case() -> None:
    """The README's generated table names each case of unsupported.json with its reason, and nothing else."""
    readme = (CHECKER / "README.md").read_text(encoding="utf-8")
    begin = readme.index("<!-- unsupported:begin")
    end = readme.index("<!-- unsupported:end -->")
    rows = re.findall(r"^\| `([^`]+)` \| (.*) \|$", readme[begin:end], re.MULTILINE)
    table = {case_id: reason.replace("\\|", "|") for case_id, reason in rows}
    unsupported = _unsupported()
    assert table == unsupported
    assert set(unsupported) <= {case["id"] for case in _decode_cases()}
