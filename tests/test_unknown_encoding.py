"""A feature of an unknown encoding (§1.4.1): unknown as a whole in a newer-MINOR file, E131 otherwise.

Each test writes a file with the reference writer, gives one feature the encoding ``"sparse"`` (which
1.1 does not define) with h5py, and checks the validator, the reader and ``h5ml dump`` together. The
breaker's finding 5: for an integer ``encoding_version`` the validator said valid and the reader refused
the split; for a missing one the validator said E130 and the reader ignored the feature.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import pytest

import h5ml
from h5ml.tools import cli
from h5ml.validator.runner import validate

META = {"name": "t", "license": "CC0-1.0", "description": "d"}
FIXTURES = Path(__file__).resolve().parents[1] / "conformance_tests" / "fixtures"

#: What the test gives the unknown feature besides ``encoding = "sparse"``: the breaker's f5 and f5b, and more.
VERSIONS: dict[str, dict[str, Any]] = {
    "int-version": {"encoding_version": 3},
    "no-version": {},
    "malformed-version": {"encoding_version": "v1.0"},
    "other-major": {"encoding_version": "7.0", "acme:density": 0.5, "role": "teacher"},
}


def _unknown(path: Path, format_version: str, attrs: dict[str, Any]) -> Path:
    """train/x gets ``encoding = "sparse"`` and ``attrs`` in place of its encoding_version; train/y stays dense."""
    h5ml.write(path, {"train": {"x": np.arange(12.0).reshape(6, 2), "y": np.arange(6)}}, metadata=META)
    with h5py.File(path, "r+") as f:
        f.visititems(lambda _n, obj: obj.attrs.__delitem__("fingerprint") if "fingerprint" in obj.attrs else None)
        del f.attrs["fingerprint"]
        f.attrs["format_version"] = format_version
        x = f["train/x"]
        x.attrs["encoding"] = "sparse"
        del x.attrs["encoding_version"]
        for key, value in attrs.items():
            x.attrs[key] = value
    return path


@pytest.mark.parametrize("deep", [False, True], ids=["shallow", "deep"])
@pytest.mark.parametrize("attrs", VERSIONS.values(), ids=VERSIONS.keys())
def test_an_unknown_encoding_in_a_newer_minor_is_unknown_as_a_whole(
    tmp_path: Path, attrs: dict[str, Any], deep: bool
) -> None:
    """SPEC §1.4.1-R2, §1.4.1-R4: I301 alone for the feature; no E130, E117, E132 or I300 for its attributes."""
    path = _unknown(tmp_path / "f5.h5", "1.7", attrs)
    report = validate(path, deep=deep)
    assert report.valid
    at_x = sorted(i.code for i in report.issues if i.path == "/train/x")
    assert at_x == ["I301"]
    assert ("I302", "/") in {(i.code, i.path) for i in report.issues}
    assert not {"E117", "E130", "E131", "E132", "I300"} & set(report.codes)


@pytest.mark.parametrize("attrs", VERSIONS.values(), ids=VERSIONS.keys())
def test_the_reader_ignores_an_unknown_encoding_whatever_its_version(tmp_path: Path, attrs: dict[str, Any]) -> None:
    """SPEC §1.4.1-R1: the whole split reads as y alone, as the validator's verdict says (main refused f5)."""
    path = _unknown(tmp_path / "f5.h5", "1.7", attrs)
    with h5ml.open(path) as ds:
        split = ds["train"]
        assert list(split.features) == ["y"]
        read = split.read(slice(None))
        assert list(read) == ["y"]
        np.testing.assert_array_equal(read["y"], np.arange(6))
        assert "sparse" in str(split.unreadable["x"])  # named, never left out silently
    out, err = io.StringIO(), io.StringIO()
    assert cli.run(["dump", "--format", "json", str(path)], out, err) == 0, err.getvalue()
    features = json.loads(out.getvalue())["splits"]["train"]["features"]
    assert list(features) == ["y"] and [int(v) for v in features["y"]["values"]] == list(range(6))


def test_an_unknown_encoding_in_the_same_minor_is_still_checked(tmp_path: Path) -> None:
    """SPEC §6.1-R2: not a newer MINOR: E131 for the encoding, E117 for the integer version, as before."""
    path = _unknown(tmp_path / "f5_1.1.h5", "1.1", {"encoding_version": 3})
    report = validate(path)
    assert not report.valid
    assert {("E131", "/train/x"), ("E117", "/train/x")} <= {(i.code, i.path) for i in report.issues}
    path = _unknown(tmp_path / "f5b_1.1.h5", "1.1", {})
    assert {("E131", "/train/x"), ("E130", "/train/x")} <= {(i.code, i.path) for i in validate(path).issues}


def test_an_encoding_that_is_not_a_string_is_an_error_in_a_newer_minor(tmp_path: Path) -> None:
    """SPEC §1.4.1: only a string encoding can be unknown; an integer one is E131 in every MINOR, never I301."""
    path = _unknown(tmp_path / "int_encoding.h5", "1.7", {"encoding_version": "1.0"})
    with h5py.File(path, "r+") as f:
        f["train/x"].attrs["encoding"] = 5
    report = validate(path)
    assert not report.valid and ("E131", "/train/x") in {(i.code, i.path) for i in report.issues}
    assert "I301" not in report.codes


@pytest.mark.parametrize("case", ["int-version", "no-version"])
def test_the_conformance_fixtures_of_the_decision(case: str) -> None:
    """SPEC §1.4.1-R4: the suite's fixtures: valid, I302 and I301 at /train/sparse, x read as written."""
    path = FIXTURES / f"valid-newer-minor-unknown-encoding-{case}.h5"
    for deep in (False, True):
        report = validate(path, deep=deep)
        assert report.valid and [i.code for i in report.issues if i.path == "/train/sparse"] == ["I301"]
    with h5ml.open(path) as ds:
        np.testing.assert_array_equal(ds["train"]["x"][:], [[0.5, 1.0, 1.5], [2.0, 2.5, 3.0]])
        assert list(ds["train"].read(slice(None))) == ["x"]
