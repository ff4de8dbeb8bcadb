"""What every validator owes whatever the file holds (SPEC §9.1.1, §9.1.2): every error in its mode, every
issue after an earlier one, and the file left as it was; real files, real HDF5, the real validator and CLI."""

from __future__ import annotations

import hashlib
import io
import json
import os
from pathlib import Path

import h5py
import numpy as np
import pytest

from badfiles import minimal_valid
from h5ml.spec.attrs import write_attr
from h5ml.spec.codes import CODES, Severity
from h5ml.tools import cli
from h5ml.validator.runner import FileReport, validate

SUITE = Path(__file__).resolve().parent.parent / "conformance_tests"


def _errors(report: FileReport) -> set[tuple[str, str]]:
    return {(i.code, i.path) for i in report.issues if i.severity is Severity.ERROR}


def _defective(path: Path) -> Path:
    """The minimal valid file with one metadata error (E161 at /train/image) and one data error (E141)."""
    minimal_valid(path)
    with h5py.File(path, "r+") as f:
        write_attr(f["train/image"], "fingerprint", "md5:0123")
        codes = f["train/label/codes"]
        codes[0] = np.int16(99)  # three class names: 99 is out of range, which only reading the data shows
    return path


def test_shallow_reports_every_error_not_marked_deep_and_deep_adds_the_deep_ones(tmp_path: Path) -> None:
    """SPEC §9.1.1-R2: shallow validation reports E161 (not deep) and no deep code; SPEC §9.1.1-R1: deep
    validation reports it too, and E141 (deep) for the code read from the data."""
    path = _defective(tmp_path / "two.h5")
    shallow = validate(path)
    assert _errors(shallow) == {("E161", "/train/image")}
    deep = validate(path, deep=True)
    assert {("E161", "/train/image"), ("E141", "/train/label/codes")} <= _errors(deep)
    added = {code for code, _ in _errors(deep) - _errors(shallow)}
    assert added and all(CODES[code].deep for code in added), added


def _state(path: Path) -> tuple[str, int, int]:
    st = os.stat(path)
    return hashlib.sha256(path.read_bytes()).hexdigest(), st.st_size, st.st_mtime_ns


@pytest.mark.parametrize("kind", ["valid", "defective"])
def test_validation_never_modifies_the_file(tmp_path: Path, kind: str) -> None:
    """SPEC §9.1.1-R4: shallow, deep, in a child process with a time limit, and from the command line, the
    file's bytes, size and modification time stay the same."""
    path = minimal_valid(tmp_path / "f.h5") if kind == "valid" else _defective(tmp_path / "f.h5")
    os.utime(path, ns=(1_000_000_000, 1_000_000_000))
    before = _state(path)
    validate(path)
    validate(path, deep=True)
    validate(path, deep=True, timeout=120)
    code = cli.run(["validate", "--deep", "--format", "json", str(path)], io.StringIO(), io.StringIO())
    assert code == (0 if kind == "valid" else 1)
    assert _state(path) == before


@pytest.mark.parametrize("case_id", ["many-defects", "e120-several-names", "e160-feature-data-changed"])
def test_every_issue_is_reported_whatever_was_found_before(case_id: str) -> None:
    """SPEC §9.1.2-R1: each issue the suite expects of a file with several defects is reported, not only the
    first: every bad name, and the unrelated defects of many-defects (E106, W203, E117, E161, W207, E121, E120),
    in the deep mode these cases hold in."""
    manifest = json.loads((SUITE / "manifest.json").read_text(encoding="utf-8"))
    (case,) = [c for c in manifest["cases"] if c["id"] == case_id]
    report = validate(SUITE / case["file"], deep=True)
    expected = [(i["code"], i["path"]) for i in case["issues"]]
    assert len(expected) >= 2
    assert sorted(expected) == sorted((i.code, i.path) for i in report.issues)
