"""Booleans the reader must not guess, members without encoding, unknown values in copies (SPEC §3.3, §3.3.1, §5.2, §1.4.1).

Each file is written by :func:`h5ml.write` and then changed with plain h5py,
as a hostile or careless writer would: ``logical_dtype = "bool"`` on float64
values (E117), the boolean enumeration holding a base value that is no member
(5 over uint8, -3 over int8: E142), an enumeration that is not the boolean one
(E113), a split member without ``encoding`` (E130), and a valid 1.7 file with
an unknown ``role``. The reader (Python), the command line (``h5ml.tools.cli``)
and the validator are run on the real files.
"""

from __future__ import annotations

from pathlib import Path

import h5py
import numpy as np
import pytest

import h5ml
from _files import run_cli
from h5ml.errors import EncodingError, InvalidFileError
from h5ml.ingest import export_npz, merge, subset


def _base(path: Path, version: str | None = None) -> h5py.File:
    """x (6, 2) float64 and y (6,) int64, fingerprints deleted; open for editing."""
    # the tests replace datasets: no checksums to go stale (SPEC §8.4)
    h5ml.write(path, {"train": {"x": np.arange(12.0).reshape(6, 2), "y": np.arange(6)}}, {"name": "t"}, checksums=False)
    f = h5py.File(path, "r+")
    f.visititems(lambda _n, o: o.attrs.__delitem__("fingerprint") if "fingerprint" in o.attrs else None)
    del f.attrs["fingerprint"]
    if version is not None:
        f.attrs["format_version"] = version
    return f


def _replace_y(f: h5py.File, data: np.ndarray, dtype: np.dtype) -> None:
    """Recreate /train/y with ``data`` stored as ``dtype``, keeping its attributes."""
    attrs = dict(f["train/y"].attrs)
    del f["train/y"]
    dset = f.create_dataset("train/y", shape=data.shape, dtype=dtype, chunks=(8,), maxshape=(None,))
    dset.id.write(h5py.h5s.ALL, h5py.h5s.ALL, np.ascontiguousarray(data), mtype=dset.id.get_type())  # raw bytes
    for key, value in attrs.items():
        dset.attrs[key] = value


def _enum_file(path: Path, base: str, values: list[int], members: dict[str, int] | None = None) -> Path:
    with _base(path) as f:
        dtype = h5py.enum_dtype(members or {"FALSE": 0, "TRUE": 1}, basetype=base)
        _replace_y(f, np.array(values, dtype=base), dtype)
    return path


def _codes(path: Path, deep: bool = True) -> list[str]:
    return [i.code for i in h5ml.validate(path, deep=deep).issues]


# -- finding 2: logical_dtype "bool" on float64 (E117) -------------------------------------------


@pytest.mark.parametrize("version", ["1.1", "1.7"])
def test_logical_bool_on_float64_is_refused_never_cast_spec_3_3_r3(tmp_path: Path, version: str) -> None:
    """SPEC §3.3-R3: the reader refuses logical_dtype 'bool' on float64 in every MINOR; subset writes nothing."""
    path = tmp_path / f"bool_on_float_{version}.h5"
    with _base(path, version) as f:
        f["train/x"].attrs["logical_dtype"] = "bool"
    assert "E117" in _codes(path)
    with h5ml.open(path) as ds:
        split = ds["train"]
        assert list(split.features) == ["y"]
        assert isinstance(split.unreadable["x"], InvalidFileError)
        with pytest.raises(InvalidFileError) as info:
            split.read(slice(None))
        message = str(info.value)
        assert str(path) in message and "/train/x" in message and "§3.3" in message and "uint8" in message
        assert "features=['y']" in message
        with pytest.raises(InvalidFileError):
            split["x"][0:6]
        np.testing.assert_array_equal(split.read(slice(None), features=["y"])["y"], np.arange(6))
    out = tmp_path / "sub.h5"
    code, _, err = run_cli("subset", str(path), str(out))
    assert code != 0 and not out.exists()
    assert "/train/x" in err and "--feature y" in err and "Traceback" not in err
    code, _, err = run_cli("dump", str(path))
    assert code != 0 and "logical_dtype 'bool'" in err


# -- finding 3: the boolean enumeration holding another base value (E142) ------------------------


@pytest.mark.parametrize(("base", "bad"), [("u1", 5), ("i1", -3)])
def test_bool_enum_with_a_non_member_value_is_e142_deep_spec_3_3_r2(tmp_path: Path, base: str, bad: int) -> None:
    """SPEC §3.3-R2: deep validation reads the enumeration's base integers, so 5 and -3 are E142, beside W208."""
    path = _enum_file(tmp_path / f"enum_{base}.h5", base, [0, 1, bad, 0, 1, 0])
    report = h5ml.validate(path, deep=True)
    e142 = [i for i in report.issues if i.code == "E142"]
    assert not report.valid and len(e142) == 1 and e142[0].path == "/train/y"
    assert f"holds {bad} in sample 2" in e142[0].message
    assert "W208" in [i.code for i in report.issues]
    assert "E142" not in _codes(path, deep=False)  # values are read in deep mode only


@pytest.mark.parametrize(("base", "bad"), [("u1", 5), ("i1", -3)])
def test_reader_refuses_a_boolean_value_other_than_0_and_1_spec_3_3_r5(tmp_path: Path, base: str, bad: int) -> None:
    """SPEC §3.3-R5: every read path refuses the stored 5 (or -3), never returns it as True; subset writes nothing."""
    path = _enum_file(tmp_path / f"enum_{base}.h5", base, [0, 1, bad, 0, 1, 0])
    with h5ml.open(path) as ds:
        y = ds["train"]["y"]
        assert y.dtype == np.dtype(bool)
        for request in (2, slice(0, 6), [2, 0], np.arange(6) % 2 == 0):
            with pytest.raises(InvalidFileError) as info:
                y[request]
            assert f"holds the stored value {bad}" in str(info.value) and "/train/y" in str(info.value)
        assert y[0] is np.False_ and y[1] is np.True_  # the samples that are booleans stay readable one by one
        np.testing.assert_array_equal(y[[0, 1, 3]], [False, True, False])
    out = tmp_path / "sub.h5"
    code, _, err = run_cli("subset", str(path), str(out))
    assert code != 0 and not out.exists() and "E142" in err


def test_uint8_logical_bool_holding_2_is_refused_spec_3_3_r5(tmp_path: Path) -> None:
    """SPEC §3.3-R5: a uint8 logical bool holding 2 is E142 for the validator and refused by the reader.

    The samples holding 0 and 1 still read; the one holding 2 is never
    returned as True.
    """
    path = tmp_path / "u8.h5"
    h5ml.write(path, {"train": {"b": np.array([True, False, True])}}, {"name": "t"})
    with h5py.File(path, "r+") as f:
        f["train/b"][0] = 2
    assert "E142" in _codes(path)
    with h5ml.open(path) as ds:
        np.testing.assert_array_equal(ds["train"]["b"][1:3], [False, True])
        with pytest.raises(InvalidFileError, match=r"/train/b: holds the stored value 2 in a boolean feature"):
            ds["train"]["b"][0:3]
        with pytest.raises(InvalidFileError, match="E142"):
            ds["train"]["b"][0]


def test_valid_bool_enumerations_still_read_as_booleans_spec_3_3_1_r1(tmp_path: Path) -> None:
    """SPEC §3.3.1-R1: both tolerated enumerations read as booleans, through every path, as before."""
    for base in ("u1", "i1"):
        path = _enum_file(tmp_path / f"ok_{base}.h5", base, [0, 1, 1, 0, 1, 0])
        with h5ml.open(path) as ds:
            y = ds["train"]["y"]
            want = np.array([False, True, True, False, True, False])
            np.testing.assert_array_equal(y[0:6], want)
            np.testing.assert_array_equal(y[[5, 1, 1]], want[[5, 1, 1]])
            assert y[2] is np.True_
            assert ds["train"].read(slice(None))["y"].dtype == np.dtype(bool)
        assert h5ml.validate(path, deep=True).valid


# -- finding 8: an enumeration that is not the boolean one (E113) -------------------------------


@pytest.mark.parametrize(
    ("base", "members"),
    [
        ("u1", {"FALSE": 1, "TRUE": 0}),
        ("u1", {"false": 0, "true": 1}),
        ("u1", {"FALSE": 0, "TRUE": 1, "MAYBE": 2}),
        ("i1", {"FALSE": 0, "TRUE": -1}),
        ("i2", {"FALSE": 0, "TRUE": 1}),
    ],
)
def test_other_enumerations_are_refused_spec_3_3_1_r2(tmp_path: Path, base: str, members: dict[str, int]) -> None:
    """SPEC §3.3.1-R2: E113 for the validator; the reader reads it neither as booleans nor as integers."""
    path = _enum_file(
        tmp_path / "enum.h5", base, [0, 1, 1, 0, 1, 0] if -1 not in members.values() else [0, -1] * 3, members
    )
    assert "E113" in _codes(path, deep=False)
    with h5ml.open(path) as ds:
        split = ds["train"]
        assert list(split.features) == ["x"]
        assert isinstance(split.unreadable["y"], EncodingError)
        with pytest.raises(EncodingError, match="not the boolean enumeration"):
            split["y"]
        with pytest.raises(EncodingError, match="features=\\['x'\\]"):
            split.read(slice(None))
    out = tmp_path / "sub.h5"
    code, _, err = run_cli("subset", str(path), str(out))
    assert code != 0 and not out.exists() and "E113" in err and "--feature x" in err


# -- finding 4: a split member without encoding (E130) ------------------------------------------


@pytest.mark.parametrize("version", ["1.1", "1.7"])
@pytest.mark.parametrize("kind", ["no-encoding", "no-attributes", "group"])
def test_member_without_encoding_is_refused_never_left_out_spec_5_2_r2(tmp_path: Path, version: str, kind: str) -> None:
    """SPEC §5.2-R2: E130 in every MINOR; every-feature reads, dump, inspect, subset, export, merge refuse it."""
    path = tmp_path / f"{kind}_{version}.h5"
    with _base(path, version) as f:
        if kind == "no-encoding":
            del f["train/x"].attrs["encoding"]
        elif kind == "no-attributes":
            for key in list(f["train/x"].attrs):
                del f["train/x"].attrs[key]
        else:
            del f["train/x"]
            f.create_group("train/x").create_dataset("values", data=np.arange(6))
    report = h5ml.validate(path)
    assert not report.valid and any(i.code == "E130" and i.path == "/train/x" for i in report.issues)
    with h5ml.open(path) as ds:
        split = ds["train"]
        assert list(split.features) == ["y"]
        assert isinstance(split.unreadable["x"], InvalidFileError)
        for call in (split.every_feature, lambda: split.read(slice(None)), lambda: split[0:2]):
            with pytest.raises(InvalidFileError) as info:
                call()
            message = str(info.value)
            assert str(path) in message and "/train/x" in message and "E130" in message
            assert "features=['y']" in message
        np.testing.assert_array_equal(split.read([1], features="y")["y"], [1])
    code, out, _ = run_cli("inspect", str(path))
    assert code == 0 and "x" in out and "cannot be read" in out and "E130" in out
    for args in (
        ("dump", str(path)),
        ("subset", str(path), str(tmp_path / "sub.h5")),
        ("export", str(path), str(tmp_path / "out.npz")),
        ("merge", str(path), "-o", str(tmp_path / "merged.h5")),
    ):
        code, _, err = run_cli(*args)
        assert code != 0 and "/train/x" in err and "--feature y" in err and "Traceback" not in err, args
    for name in ("sub.h5", "out.npz", "merged.h5"):
        assert not (tmp_path / name).exists()
    with pytest.raises(InvalidFileError):
        export_npz(path, tmp_path / "api.npz")


def test_committed_datatype_in_a_split_stays_an_unknown_object_spec_5_5_r1(tmp_path: Path) -> None:
    """SPEC §5.5-R1: an object that is neither a group nor a dataset is still ignored, not refused."""
    path = tmp_path / "datatype.h5"
    with _base(path) as f:
        f["train/kind"] = np.dtype("<i4")
    with h5ml.open(path) as ds:
        split = ds["train"]
        assert list(split.features) == ["x", "y"] and not split.unreadable
        assert set(split.read(slice(None))) == {"x", "y"}


# -- finding 7: an unknown role in a newer-MINOR file -------------------------------------------


def test_subset_and_merge_leave_out_an_unknown_role_of_a_newer_minor_spec_1_4_1_r3(tmp_path: Path) -> None:
    """SPEC §1.4.1-R3: the copy is valid, keeps the samples, has no role, and the summary says what was left out."""
    path = tmp_path / "role_1.7.h5"
    with _base(path, "1.7") as f:
        f["train/x"].attrs["role"] = "teacher"
        f["train/y"].attrs["role"] = "target"
    assert h5ml.validate(path).valid
    out = tmp_path / "sub.h5"
    code, stdout, err = run_cli("subset", str(path), str(out))
    assert code == 0, err
    assert f"{path}: /train/x: left out role 'teacher'" in stdout and "1.7" in stdout
    report = subset(path, tmp_path / "sub2.h5")
    assert any("left out role 'teacher'" in note for note in report.notes)
    merged = merge([path], tmp_path / "merged.h5")
    assert any("left out role 'teacher'" in note for note in merged.notes)
    for copy in (out, tmp_path / "sub2.h5", tmp_path / "merged.h5"):
        assert h5ml.validate(copy, deep=True).valid
        with h5ml.open(copy) as ds:
            assert ds["train"]["x"].role is None and ds["train"]["y"].role == "target"
            np.testing.assert_array_equal(ds["train"]["x"][0:6], np.arange(12.0).reshape(6, 2))


def test_subset_refuses_an_unknown_role_of_a_same_minor_file_naming_the_source(tmp_path: Path) -> None:
    """In a 1.1 file the role 'teacher' is E117: refused, naming the SOURCE file and the HDF5 path, no output."""
    path = tmp_path / "role_1.1.h5"
    with _base(path) as f:
        f["train/x"].attrs["role"] = "teacher"
    assert "E117" in _codes(path, deep=False)
    out = tmp_path / "sub.h5"
    code, _, err = run_cli("subset", str(path), str(out))
    assert code != 0 and not out.exists()
    assert f"{path}: /train/x: role 'teacher'" in err and "sub.h5" not in err
    with pytest.raises(InvalidFileError, match="correct or delete the attribute role"):
        subset(path, tmp_path / "sub2.h5")
