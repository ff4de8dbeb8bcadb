"""conformance_tests/coverage.py: requirement ids (SPEC §1.7.1) and what must name each one.

Each test builds a small specification, manifest, implementation folder and
tests folder in ``tmp_path``, runs the real script on them, and checks its
verdict and the line that explains it; the last tests read the real SPEC.md.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent

# The made-up specification numbers its clause "@1.1" here and "§1.1" once written out, so that
# coverage.py, reading this file, does not take its made-up ids for citations of the real SPEC.md.


def _real(value: Any) -> Any:
    """``value`` with every "@" of its strings turned into "§" (in lists and dicts too)."""
    if isinstance(value, str):
        return value.replace("@", "§")
    if isinstance(value, list):
        return [_real(v) for v in value]
    if isinstance(value, dict):
        return {k: _real(v) for k, v in value.items()}
    return value


COVERAGE = ROOT / "conformance_tests" / "coverage.py"

SPEC = """# h5ml

## §1 Things

### @1.1 One

A file MUST hold a name (E103). [file @1.1-R1] A reader MUST refuse a file
without one. [reader @1.1-R2] A writer SHOULD write it first. [writer @1.1-S1]
"""
CODE = "def check():\n    # SPEC @1.1-R1: the name is there\n    # SPEC @1.1-R2: refused\n    return 1\n"
TEST = 'def test_name():\n    """SPEC @1.1-R1 and @1.1-R2."""\n    assert 1 + 1 == 2\n'
CASE = {
    "id": "e103-no-name",
    "valid": False,
    "clause": "@1.1",
    "requirements": ["@1.1-R1", "@1.1-R2"],
    "issues": [{"code": "E103", "path": "/"}],
    "reader": {"expect": "refuse", "clause": "@1.1"},
}


def _run(
    tmp_path: Path,
    spec: str = SPEC,
    code: str = CODE,
    test: str = TEST,
    cases: list[dict[str, object]] | None = None,
) -> tuple[int, str]:
    """Write the four inputs under ``tmp_path`` and run coverage.py on them; its exit status and output."""
    spec, code, test = _real(spec), _real(code), _real(test)
    (tmp_path / "SPEC.md").write_text(spec, encoding="utf-8")
    manifest = {
        "registry": {"E103": {"name": "x", "severity": "error", "clause": "@1.1"}},
        "cases": _real([CASE] if cases is None else cases),
    }
    (tmp_path / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    (tmp_path / "code").mkdir(exist_ok=True)
    (tmp_path / "code" / "impl.py").write_text(code, encoding="utf-8")
    (tmp_path / "tests").mkdir(exist_ok=True)
    (tmp_path / "tests" / "test_impl.py").write_text(test, encoding="utf-8")
    proc = subprocess.run(
        [
            sys.executable,
            str(COVERAGE),
            "--spec",
            str(tmp_path / "SPEC.md"),
            "--manifest",
            str(tmp_path / "manifest.json"),
            "--tests",
            str(tmp_path / "tests"),
            "--code",
            str(tmp_path / "code"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    return proc.returncode, proc.stdout + proc.stderr


def test_a_requirement_named_by_a_case_the_code_and_a_test_is_covered(tmp_path: Path) -> None:
    """The table lists each id with its counts of cases, code lines and tests; SPEC §1.7.1."""
    status, out = _run(tmp_path)
    assert status == 0, out
    assert re.search(r"^§1\.1-R1 +file +1 +1 +1 ", out, re.MULTILINE), out
    assert re.search(r"^§1\.1-R2 +reader +1 +1 +1 ", out, re.MULTILINE), out
    assert "OK: 2/2 requirements covered" in out
    assert "1 recommendations" in out


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"code": CODE.replace("@1.1-R2", "@1.1")}, "@1.1-R2 +reader +1 +0 +1 .*MISS"),
        ({"code": CODE.replace("@1.1-R2", "@1.1-R22")}, "impl.py names @1.1-R22, which SPEC.md does not define"),
        ({"test": TEST.replace(" and @1.1-R2", "")}, "missing: no test under tests/ names it"),
        ({"spec": SPEC.replace(" @1.1-R2]", "]")}, "a requirement has no id"),
        ({"spec": SPEC.replace("[reader @1.1-R2]", "[reader @1.1-R1]")}, "@1.1-R1 is given twice"),
        ({"spec": SPEC.replace("[reader @1.1-R2]", "[reader @1.2-R2]")}, "@1.2-R2 stands in @1.1"),
        ({"spec": SPEC.replace("[writer @1.1-S1]", "[writer @1.1-R3]")}, "@1.1-R3 stands in @1.1 as a recommendation"),
        ({"cases": [{**CASE, "requirements": ["@1.1-R2"]}]}, "@1.1-R1 .*MISS"),
        ({"cases": [{**CASE, "requirements": ["@1.1-R1", "@1.1-R2", "@1.1-R9"]}]}, "names @1.1-R9, which SPEC"),
        (
            {"cases": [{**CASE, "valid": True, "issues": [], "reader": {"expect": "decode", "expected": "x"}}]},
            "no invalid case names it",
        ),
        ({"cases": [{**CASE, "issues": [{"code": "E104", "path": "/"}]}]}, "no case naming it expects E103"),
        ({"cases": [{k: v for k, v in CASE.items() if k != "reader"}]}, "no case naming it has a reader expectation"),
    ],
)
def test_what_is_missing_fails_and_says_what(tmp_path: Path, change: dict[str, object], message: str) -> None:
    """Each gap in ids or citations makes the script exit 1 with a line that names it."""
    status, out = _run(tmp_path, **change)  # type: ignore[arg-type]
    assert status == 1, out
    assert re.search(_real(message), out), out
    assert "FAILED" in out


def test_the_real_specification_gives_every_tagged_sentence_one_id() -> None:
    """SPEC.md: every requirement and recommendation has its own id, of its clause and kind (SPEC §1.7.1)."""
    sys.path.insert(0, str(ROOT))
    from conformance_tests import coverage

    text = (ROOT / "SPEC.md").read_text(encoding="utf-8")
    musts, shoulds = coverage.requirements(text)
    assert coverage.id_problems([*musts, *shoulds]) == []
    # every tag of the text, but not the example of §1.7 written in backquotes
    tagged = re.findall(r"(?<!`)\[(?:file|writer|reader|validator) (§[0-9.]+-[RS][0-9]+)\](?!`)", text)
    assert sorted(tagged) == sorted(r.rid for r in [*musts, *shoulds])
    assert len(musts) >= 100
    assert {r.rid for r in musts} >= {"§1.2-R1", "§3.4-R3", "§9.1.1-R4"}
    first = musts[0]
    assert (first.rid, first.tags, first.codes) == ("§1.2-R1", ("file",), ("E103",))
