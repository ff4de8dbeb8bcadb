"""Attribute reading and writing as SPEC.md §3.4, §3.7 and §4.6 say."""

from __future__ import annotations

from pathlib import Path

import h5py
import numpy as np
import pytest

from h5ml.spec.attrs import attrs_json, decode_str, read_attr, to_json_value, write_attr


def test_written_values_read_back_as_python_values(tmp_path: Path) -> None:
    """§3.7/§4.3, SPEC §4.3-R1: single values in a scalar dataspace, strings variable-length UTF-8."""
    with h5py.File(tmp_path / "a.h5", "w") as f:
        write_attr(f, "s", "héllo")
        write_attr(f, "i", 7)
        write_attr(f, "b", True)
        write_attr(f, "x", 0.25)
        write_attr(f, "names", ["a", "β"])
        write_attr(f, "ids", [32015, 32000])
        write_attr(f, "empty", [])
        assert f.attrs.get_id("s").shape == ()
        assert f.attrs.get_id("i").shape == ()
        assert h5py.check_string_dtype(f.attrs.get_id("s").dtype).encoding == "utf-8"
        assert {name: read_attr(f, name) for name in f.attrs} == {
            "s": "héllo",
            "i": 7,
            "b": 1,
            "x": 0.25,
            "names": ["a", "β"],
            "ids": [32015, 32000],
            "empty": [],
        }
        assert type(read_attr(f, "i")) is int and type(read_attr(f, "x")) is float


def test_strings_of_other_writers_come_back_as_str(tmp_path: Path) -> None:
    """Case C06, §3.4: fixed-length and ASCII strings written by another tool read as str."""
    # SPEC §3.4-R3
    with h5py.File(tmp_path / "c06.h5", "w") as f:
        f.attrs["fixed"] = np.bytes_(b"cat")
        f.attrs.create("ascii_vlen", "dog", dtype=h5py.string_dtype("ascii"))
        f.attrs["fixed_array"] = np.array([b"a", b"bc"], dtype="S2")
        assert read_attr(f, "fixed") == "cat"
        assert read_attr(f, "ascii_vlen") == "dog"
        assert read_attr(f, "fixed_array") == ["a", "bc"]
        assert all(type(v) is str for v in read_attr(f, "fixed_array"))


def test_large_text_attribute_round_trips(tmp_path: Path) -> None:
    """Case C07, §4.5: a 110 kB description is stored as an attribute and read back equal."""
    text = "données " * 14000
    assert len(text.encode("utf-8")) > 110_000
    with h5py.File(tmp_path / "c07.h5", "w", libver=("earliest", "v110")) as f:
        write_attr(f, "description", text)
    with h5py.File(tmp_path / "c07.h5", "r") as f:
        assert read_attr(f, "description") == text


def test_missing_attribute(tmp_path: Path) -> None:
    with h5py.File(tmp_path / "m.h5", "w") as f:
        assert read_attr(f, "nope", None) is None
        with pytest.raises(KeyError, match="nope"):
            read_attr(f, "nope")


@pytest.mark.parametrize("value", [{"a": 1}, [1, "a"], None, object()])
def test_unsupported_values_are_refused(tmp_path: Path, value: object) -> None:
    with h5py.File(tmp_path / "u.h5", "w") as f, pytest.raises(TypeError, match="attribute 'v'"):
        write_attr(f, "v", value)


def test_json_mapping(tmp_path: Path) -> None:
    """§4.6: bytes to str, numpy scalars to numbers, arrays to lists; bad UTF-8 kept as bytes."""
    assert to_json_value(np.int64(3)) == 3
    assert to_json_value(np.float32(0.5)) == 0.5
    assert to_json_value(np.array([1, 2], dtype=np.int16)) == [1, 2]
    assert to_json_value(b"abc") == "abc"
    assert to_json_value(b"\xff\xfe") == b"\xff\xfe"
    assert decode_str(np.array(b"ok\x00\x00")) == "ok"
    with h5py.File(tmp_path / "j.h5", "w") as f:
        f.attrs["n"] = np.int32(4)
        f.attrs["s"] = np.bytes_(b"x")
        assert dict(attrs_json(f)) == {"n": 4, "s": "x"}


def test_json_mapping_of_non_finite_floats() -> None:
    """§4.6: NaN and infinities become the strings "NaN", "Infinity", "-Infinity"."""
    assert to_json_value(np.float64("nan")) == "NaN"
    assert to_json_value(np.float32("inf")) == "Infinity"
    assert to_json_value(np.array([1.0, -np.inf])) == [1.0, "-Infinity"]
