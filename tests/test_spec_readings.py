"""The SPEC 1.1 answers to issue 13's reading questions, on real files: storage never written (§3.5.1,
E146), the scope of §4.3, the boolean enumeration (§3.3.1), unknown values in a newer MINOR (§1.4.1),
``encoding_version`` (§6.1, I304), codes that could overlap (§9.2.1), E103 alone (§9.1.2), the
header-message size of an attribute (§4.5.1) and the extents and sizes of §7.

Each test builds its file with the reference writer and changes one thing with h5py, or reads the
conformance fixture of the decision, and checks the validator, the reader and the command line together.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import pytest
from h5py import h5d, h5s, h5t

import h5ml
from _files import codes_at, run_cli
from h5ml.errors import InvalidFileError
from h5ml.validator.runner import validate

FIXTURES = Path(__file__).resolve().parents[1] / "conformance_tests" / "fixtures"
META = {"name": "r", "license": "CC0-1.0", "description": "d"}


def _written(path: Path, data: dict[str, Any]) -> Path:
    # the tests replace datasets: no checksums to go stale (SPEC §8.4)
    h5ml.write(path, {"train": data}, metadata=META, shuffle=True, seed=1, checksums=False)
    return path


def _replace(f: h5py.File, hdf5_path: str, **create: Any) -> h5py.Dataset:
    """Replace a dataset by ``create_dataset(**create)``, keeping its attributes but its fingerprint."""
    old = f[hdf5_path]
    attrs = {k: old.attrs[k] for k in old.attrs if k != "fingerprint"}
    del f[hdf5_path]
    if "fingerprint" in f.attrs:
        del f.attrs["fingerprint"]
    new = f.create_dataset(hdf5_path, **create)
    for key, value in attrs.items():
        new.attrs[key] = value
    return new


# --------------------------------------------------------------------------- §3.5.1: storage never written


def test_one_missing_chunk_of_many_is_e146_in_both_modes(tmp_path: Path) -> None:
    """SPEC §3.5.1-R1, §3.5.1-R2: 4999 of 5000 one-row chunks written: E146 from the chunk index, shallow and deep
    alike, naming the missing chunk; never E145; the CLI says so without a traceback."""
    path = _written(tmp_path / "m.h5", {"x": np.arange(5000, dtype=np.uint8)})
    with h5py.File(path, "r+") as f:
        dset = _replace(f, "train/x", shape=(5000,), dtype=np.uint8, chunks=(1,), maxshape=(None,))
        dset[:2500] = 1
        dset[2501:] = 1
    shallow, deep = validate(path), validate(path, deep=True)
    assert codes_at(shallow) == {("E146", "/train/x"), ("W202", "/train/x"), ("W202", "/")}
    assert deep.issues == shallow.issues
    (issue,) = [i for i in deep.issues if i.code == "E146"]
    assert "in 5000 chunks of (1,) but only 4999 were ever written" in issue.message
    assert "(the first missing one starts at element (2500,))" in issue.message
    assert str(path) in issue.message
    code, out, err = run_cli("validate", "--deep", str(path))
    assert code == 1 and "E146" in out and "Traceback" not in out + err


def test_missing_chunk_among_many_is_counted_and_located(tmp_path: Path) -> None:
    """SPEC §3.5.1-R2: with 65543 of 65544 chunks written the missing one is counted and named (8 bytes a chunk
    kept during the walk, whose length the file bounds)."""
    n = (1 << 16) + 8
    path = _written(tmp_path / "b.h5", {"x": np.zeros(n, dtype=np.uint8)})
    with h5py.File(path, "r+") as f:
        dset = _replace(f, "train/x", shape=(n,), dtype=np.uint8, chunks=(1,), maxshape=(None,))
        dset[: n - 1] = 0
    (issue,) = [i for i in validate(path).issues if i.code == "E146"]
    assert f"but only {n - 1} were ever written (the first missing one starts at element ({n - 1},))" in issue.message


def test_contiguous_storage_never_allocated_is_e146_and_its_counterpart_valid(tmp_path: Path) -> None:
    """SPEC §3.5.1-R1: a contiguous dataset with elements and no storage is E146; written, it is valid."""
    path = _written(tmp_path / "c.h5", {"x": np.arange(6, dtype=np.float32).reshape(2, 3)})
    assert validate(path, deep=True).issues == ()
    with h5py.File(path, "r+") as f:
        _replace(f, "train/x", shape=(2, 3), dtype=np.float32)
    assert codes_at(validate(path)) == {("E146", "/train/x"), ("W202", "/train/x"), ("W202", "/")}
    assert validate(path, deep=True).issues == validate(path).issues
    assert "E146" not in validate(FIXTURES / "valid-every-chunk-written.h5", deep=True).codes


def test_class_names_never_written_are_e146_not_e134() -> None:
    """SPEC §3.5.1-R1: class names never written are their own cause, E146; not E134 for the empty names."""
    report = validate(FIXTURES / "e146-class-names-never-written.h5", deep=True)
    assert ("E146", "/train/label/class_names") in codes_at(report)
    assert not {"E134", "E145"} & set(report.codes)


def test_reader_refuses_never_written_data(tmp_path: Path) -> None:
    """SPEC §3.5.1-S1: the reader refuses a feature with a never-written chunk, naming it, instead of returning
    fill values; ``h5ml dump`` exits 2 with the message and no traceback."""
    path = FIXTURES / "e146-chunk-never-written.h5"
    with h5ml.open(path) as ds, pytest.raises(InvalidFileError, match=r"only 1 were ever written") as err:
        ds["train"]["x"][0]
    assert err.value.hdf5_path == "/train/x" and "E146" in str(err.value)
    code, out, err_text = run_cli("dump", "--format", "json", str(path))
    assert code == 2 and out == "" and "/train/x" in err_text and "Traceback" not in err_text


# --------------------------------------------------------------------------- §4.3: scope of the writer rule


def test_writer_writes_split_and_feature_attributes_as_section_4_3_says(tmp_path: Path) -> None:
    """SPEC §4.3-R1: split and feature attributes too: strings scalar variable-length UTF-8, integers scalar
    int64, real numbers (statistics, sample_rate) scalar float64."""
    path = tmp_path / "w.h5"
    h5ml.write(path, {"train": {"x": np.arange(4, dtype=np.float32)}}, metadata=META, shuffle=True, seed=3)
    with h5py.File(path) as f:
        for obj, names in [(f["train"], ("num_samples", "shuffle_seed")), (f["train/x"], ("stats_count",))]:
            for name in names:
                tid = obj.attrs.get_id(name).get_type()
                assert (tid.get_class(), tid.get_size(), tid.get_sign()) == (h5t.INTEGER, 8, h5t.SGN_2)
                assert obj.attrs.get_id(name).get_space().get_simple_extent_type() == h5s.SCALAR
        for name in ("encoding", "encoding_version", "fingerprint"):
            tid = f["train/x"].attrs.get_id(name).get_type()
            assert tid.is_variable_str() and tid.get_cset() == h5t.CSET_UTF8
        for name in ("stats_min", "stats_max", "stats_mean", "stats_std"):
            tid = f["train/x"].attrs.get_id(name).get_type()
            assert (tid.get_class(), tid.get_size()) == (h5t.FLOAT, 8)


# --------------------------------------------------------------------------- §3.3.1: the boolean enumeration


def _enum_flag(path: Path, base: Any, members: list[tuple[bytes, int]]) -> Path:
    _written(path, {"x": np.arange(2, dtype=np.float32)})
    with h5py.File(path, "r+") as f:
        tid = h5t.enum_create(base)
        for name, value in members:
            tid.enum_insert(name, value)
        h5d.create(f["train"].id, b"flag", tid, h5s.create_simple((2,)))
        f["train/flag"][...] = np.array([True, False])
        f["train/flag"].attrs["encoding"] = "dense"
        f["train/flag"].attrs["encoding_version"] = "1.0"
    return path


@pytest.mark.parametrize(
    ("base", "members", "code"),
    [
        (h5t.STD_U8LE, [(b"FALSE", 0), (b"TRUE", 1)], "W208"),
        (h5t.STD_I8LE, [(b"TRUE", 1), (b"FALSE", 0)], "W208"),
        (h5t.STD_I16LE, [(b"FALSE", 0), (b"TRUE", 1)], "E113"),
    ],
    ids=["uint8", "int8-reversed", "int16"],
)
def test_boolean_enumeration_bases(tmp_path: Path, base: Any, members: list[tuple[bytes, int]], code: str) -> None:
    """SPEC §3.3.1-R1: over int8 or uint8, members in either order, the enumeration is W208 and reads as
    booleans; over int16 it is another enumeration, E113."""
    path = _enum_flag(tmp_path / "e.h5", base, members)
    codes = {c for c, p in codes_at(validate(path)) if p == "/train/flag"}
    assert code in codes and ({"W208", "E113"} - {code}).isdisjoint(codes)
    if code == "W208":
        with h5ml.open(path) as ds:
            got = ds["train"]["flag"][:]
        assert got.dtype == np.dtype(bool) and got.tolist() == [True, False]


def test_uint8_enumeration_fixture_dumps_booleans() -> None:
    """SPEC §3.3.1-R1: the fixture ``w208-bool-enum-uint8`` decodes to true, false with dtype "bool"."""
    code, out, _ = run_cli("dump", "--format", "json", str(FIXTURES / "w208-bool-enum-uint8.h5"))
    flag = json.loads(out)["splits"]["train"]["features"]["flag"]
    assert code == 0 and (flag["dtype"], flag["values"]) == ("bool", [True, False])
    assert codes_at(validate(FIXTURES / "w208-bool-enum-uint8.h5", deep=True)) == {("W208", "/train/flag")}


# --------------------------------------------------------------------------- §1.4.1: values of a newer MINOR


@pytest.mark.parametrize(("version", "code"), [("1.7", "I300"), ("1.0", "E117")])
def test_undefined_values_are_info_in_a_newer_minor_only(tmp_path: Path, version: str, code: str) -> None:
    """SPEC §1.4.1-R3: role, logical_dtype and media_type with undefined string values are I300 in a file of
    a newer MINOR (and the attribute is ignored), E117 otherwise; the reader decodes the features either way."""
    path = tmp_path / "n.h5"
    h5ml.write(path, {"train": {"x": np.array([1, 2], np.uint16), "photo": [b"ab", b""]}}, metadata=META)
    with h5py.File(path, "r+") as f:
        f.attrs["format_version"] = version
        f["train/x"].attrs["role"] = "auxiliary"
        f["train/x"].attrs["logical_dtype"] = "bfloat16"
        f["train/photo"].attrs["media_type"] = "image/*"
    report = validate(path, deep=True)
    found = [(i.code, i.path) for i in report.issues if i.code in ("I300", "E117")]
    assert sorted(found) == sorted([(code, "/train/x")] * 2 + [(code, "/train/photo")])
    assert report.valid is (code == "I300")
    with h5ml.open(path) as ds:
        assert ds["train"]["x"][:].tolist() == [1, 2]  # not booleans: the unknown logical_dtype is ignored
        assert ds["train"]["photo"][0] == b"ab"


# --------------------------------------------------------------------------- §6.1: encoding_version


@pytest.mark.parametrize(
    ("version", "codes", "valid"),
    [("v1.0", {"E117"}, False), ("1", {"E117"}, False), ("2.0", {"E132"}, False), ("1.3", {"I304"}, True)],
)
def test_encoding_version_forms(tmp_path: Path, version: str, codes: set[str], valid: bool) -> None:
    """SPEC §6.1-R4, §6.1-S1: a malformed encoding_version is E117 (never E132), another MAJOR E132, a newer
    MINOR I304 and valid (read as 1.0)."""
    path = _written(tmp_path / "v.h5", {"x": np.arange(4, dtype=np.float32)})
    with h5py.File(path, "r+") as f:
        f["train/x"].attrs["encoding_version"] = version
    for deep in (False, True):
        report = validate(path, deep=deep)
        assert {c for c, p in codes_at(report) if p == "/train/x"} == codes
        assert report.valid is valid
    if valid:
        with h5ml.open(path) as ds:
            assert ds["train"]["x"][:].tolist() == [0.0, 1.0, 2.0, 3.0]


# --------------------------------------------------------------------------- §9.2.1, §9.1.2: which code


@pytest.mark.parametrize(
    ("names", "codes"),
    [([""], ["E107"]), (["acme:x", "acme:x"], ["E107", "E105"]), (["acme:x", "acme:y"], ["E105"])],
)
def test_must_understand_codes(tmp_path: Path, names: list[str], codes: list[str]) -> None:
    """SPEC §9.2.1-R1: an empty or repeated name is E107, a non-empty unknown name E105 once, so an empty
    string is E107 alone."""
    path = _written(tmp_path / "m.h5", {"x": np.arange(2, dtype=np.float32)})
    with h5py.File(path, "r+") as f:
        f.attrs["must_understand"] = np.array(names, dtype=h5py.string_dtype())
    report = validate(path)
    assert [i.code for i in report.issues if i.code in ("E105", "E107")] == codes
    e105 = [i.message for i in report.issues if i.code == "E105"]
    assert all(m.count("'acme:x'") == 1 for m in e105)


def test_wrong_length_is_e122_and_a_scalar_e133_alone(tmp_path: Path) -> None:
    """SPEC §9.2.1-R1: a wrong first axis is E122 and no E133; a dataset without a first axis is E133 and no
    E122; a corrupt chunk is E145, never E101."""
    path = _written(tmp_path / "l.h5", {"x": np.arange(2, dtype=np.float32)})
    with h5py.File(path, "r+") as f:
        f["train"].attrs["num_samples"] = np.int64(3)
    assert {c for c, _ in codes_at(validate(path, deep=True)) if c.startswith("E")} == {"E122"}
    scalar = validate(FIXTURES / "e133-not-e122-scalar.h5", deep=True)
    assert "E133" in scalar.codes and "E122" not in scalar.codes
    corrupt = validate(FIXTURES / "e145-not-e101-corrupt-chunk.h5", deep=True)
    assert ("E145", "/train/gzip9") in codes_at(corrupt) and "E101" not in corrupt.codes


def test_e103_is_reported_alone() -> None:
    """SPEC §9.1.2-R2: after E103 nothing else is checked (the file also lacks 'name' and 'complete')."""
    for deep in (False, True):
        report = validate(FIXTURES / "e103-alone.h5", deep=deep)
        assert [i.code for i in report.issues] == ["E103"]
    code, out, _ = run_cli("validate", "--format", "json", str(FIXTURES / "e103-alone.h5"))
    assert code == 1 and [i["code"] for i in json.loads(out)["files"][0]["issues"]] == ["E103"]


# --------------------------------------------------------------------------- §4.5.1: header-message size


def _pad8(n: int) -> int:
    return -(-n // 8) * 8


def _message_size(name: str, datatype: int, rank: int, element: int, count: int) -> int:
    """§4.5.1: 8 + pad8(name + 1) + pad8(T) + pad8(D) + E x n, D = 8 + 16 r (8 for a scalar)."""
    return 8 + _pad8(len(name.encode()) + 1) + _pad8(datatype) + _pad8(8 + 16 * rank) + element * count


def _writes(name: str, value: Any, dtype: Any = None) -> bool:
    with h5py.File(io.BytesIO(), "w", libver=("earliest", "v110")) as f:
        try:
            f.attrs.create(name, value, dtype=dtype)
        except (ValueError, RuntimeError, OSError):
            return False
    return True


@pytest.mark.parametrize(
    ("name", "datatype", "element", "make", "dtype"),
    [
        ("keywords", 20, 16, lambda n: np.array(["k"] * n, dtype=object), h5py.string_dtype()),
        ("x", 12, 8, lambda n: np.zeros(n, np.int64), None),
        ("abcdefghi", 20, 8, lambda n: np.zeros(n, np.float64), None),
        ("x", 12, 1, lambda n: np.zeros(n, np.uint8), None),
        ("x", 38, 1, lambda n: np.zeros(n, bool), None),
    ],
    ids=["keywords-vlen", "int64", "float64-long-name", "uint8", "bool-enum"],
)
def test_header_message_size_formula_is_hdf5s_limit(
    name: str, datatype: int, element: int, make: Any, dtype: Any
) -> None:
    """SPEC §4.5-R1, §4.5.1: the largest array whose computed size is at most 65535 bytes is exactly the
    largest that HDF5 writes with the bounds of §3.1; one element more fails (4091 keywords, 8184 int64)."""
    largest = (65535 - _message_size(name, datatype, 1, element, 0)) // element
    assert (
        _message_size(name, datatype, 1, element, largest)
        <= 65535
        < _message_size(name, datatype, 1, element, largest + 1)
    )
    assert _writes(name, make(largest), dtype) and not _writes(name, make(largest + 1), dtype)
    if name == "keywords":
        assert largest == 4091
    if (name, element) == ("x", 8):
        assert largest == 8184


def test_header_message_size_of_a_scalar_fixed_length_string() -> None:
    """SPEC §4.5.1: a scalar fixed-length string named 'x' has size 8 + 8 + 8 + 8 + length."""
    assert _writes("x", np.bytes_(b"a" * (65535 - 32))) and not _writes("x", np.bytes_(b"a" * (65535 - 31)))


# --------------------------------------------------------------------------- §7: extents and sizes


def test_chunk_rules_use_current_extents_and_logical_sizes(tmp_path: Path) -> None:
    """SPEC §7 (1.1): a chunk equal to the current extent on a growable axis holds whole rows (no E150); an
    8 MiB chunk of two rows is W201 though gzip stores it in a few kB."""
    path = _written(tmp_path / "k.h5", {"x": np.zeros((2, 5), np.float32)})
    with h5py.File(path, "r+") as f:
        dset = _replace(f, "train/x", shape=(2, 5), dtype=np.float32, chunks=(2, 5), maxshape=(None, None))
        dset[...] = 0
        assert dset.maxshape == (None, None)
    assert "E150" not in validate(path).codes
    with h5py.File(path, "r+") as f:
        dset = _replace(f, "train/x", shape=(2, 1 << 20), dtype=np.float32, chunks=(2, 1 << 20), compression="gzip")
        dset[...] = 0
        assert dset.id.get_storage_size() < 1 << 20
    assert ("W201", "/train/x") in codes_at(validate(path))
