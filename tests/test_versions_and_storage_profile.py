"""SPEC §1 (versions, ``must_understand``) and §3 (the HDF5 storage profile), one test per requirement id.

Each test names the requirement it tests (``SPEC §1.2-R1``) and checks it on
real files: files the reference writer wrote, edited with h5py where a test
needs a defect, then validated, read or inspected at the HDF5 level.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import pytest

import h5ml
from badfiles import minimal_valid, replace_dataset
from h5ml.spec.attrs import write_attr
from h5ml.validator.runner import FileReport, validate

_META = {"name": "profile", "license": "CC0-1.0", "description": "a test file"}


def _edited(tmp_path: Path, mutate: Callable[[h5py.File], Any]) -> Path:
    path = minimal_valid(tmp_path / "edited.h5")
    with h5py.File(path, "r+") as f:
        mutate(f)
    return path


def _errors(report: FileReport) -> set[tuple[str, str]]:
    return {(i.code, i.path) for i in report.issues if i.code.startswith("E")}


# --------------------------------------------------------------------------- §1.2, §1.5: the root's declarations


@pytest.mark.parametrize(
    "value",
    ["1", "1.0.0", "01.0", "1.00", "1.0\n", " 1.0", "v1.0", "", np.int64(1), None],
    ids=[
        "one-number",
        "three-numbers",
        "leading-zero-major",
        "leading-zero-minor",
        "newline",
        "space",
        "prefix",
        "empty",
        "integer",
        "missing",
    ],
)
def test_format_version_must_be_major_minor(tmp_path: Path, value: Any) -> None:
    """SPEC §1.2-R1: a ``format_version`` that is missing or not ``MAJOR.MINOR`` is E103, and nothing else is said."""

    def mutate(f: h5py.File) -> None:
        if value is None:
            del f.attrs["format_version"]
        else:
            write_attr(f, "format_version", value)

    report = validate(_edited(tmp_path, mutate))
    assert report.codes == ["E103"]
    assert "'format_version'" in report.issues[0].message and "MAJOR.MINOR" in report.issues[0].message
    assert not report.valid


def test_writer_writes_format_version_1_0(tmp_path: Path) -> None:
    """SPEC §1.2-R2: the reference writer writes ``format_version = "1.2"``, a scalar variable-length UTF-8 string."""
    path = h5ml.write(tmp_path / "w.h5", {"train": {"x": np.arange(4)}}, metadata=_META)
    with h5py.File(path, "r") as f:
        aid = f.attrs.get_id("format_version")
        assert aid.shape == ()
        assert aid.get_type().is_variable_str() and aid.get_type().get_cset() == h5py.h5t.CSET_UTF8
        assert f.attrs["format_version"] == "1.2"
    assert validate(path).valid


def test_each_unknown_extension_is_e105(tmp_path: Path) -> None:
    """SPEC §1.5-R2, §1.5-R3: 1.0 defines no extension, so every name of ``must_understand`` is E105, named."""
    names = ["zstd-chunks", "org.example:sparse-coo"]
    report = validate(_edited(tmp_path, lambda f: write_attr(f, "must_understand", names)))
    assert report.codes == ["E105"] and not report.valid
    assert all(repr(name) in report.issues[0].message for name in names)
    assert validate(_edited(tmp_path, lambda f: write_attr(f, "must_understand", []))).issues == ()


@pytest.mark.parametrize(
    ("names", "words"), [([""], "it is empty"), (["acme:x", "acme:x"], "repeats an item")], ids=["empty", "repeated"]
)
def test_extension_names_are_non_empty_and_unique(tmp_path: Path, names: list[str], words: str) -> None:
    """SPEC §1.5-R5: an empty name, or a name given twice, in ``must_understand`` is E107; a repeated unknown
    name is also E105, an empty string is not a name and gets E107 alone (SPEC §9.2.1-R1, 1.1)."""
    report = validate(_edited(tmp_path, lambda f: write_attr(f, "must_understand", names)))
    assert _errors(report) == ({("E107", "/")} if names == [""] else {("E107", "/"), ("E105", "/")})
    (e107,) = [i for i in report.issues if i.code == "E107"]
    assert "'must_understand'" in e107.message and words in e107.message


# --------------------------------------------------------------------------- §3.1: readable by HDF5 1.10


def test_written_files_use_hdf5_1_10_object_formats(tmp_path: Path) -> None:
    """SPEC §3.1-R3: the writer's files have superblock version 0 (libver low bound "earliest", high "v110").

    A large attribute and every encoding included; appending (mode "a") keeps the superblock.
    """
    splits = {"train": {"x": np.arange(12.0).reshape(6, 2), "s": ["a", "bé", "", "d", "e", "f"]}}
    path = h5ml.write(tmp_path / "w.h5", splits, metadata={**_META, "description": "x" * 100_000})
    with open(path, "rb") as fh:
        head = fh.read(9)
    assert head[:8] == b"\x89HDF\r\n\x1a\n" and head[8] == 0
    with h5ml.Writer(path, mode="a") as writer:
        writer.append("train", {"x": np.zeros((2, 2)), "s": ["g", "h"]})
    with open(path, "rb") as fh:
        assert fh.read(9)[8] == 0
    report = validate(path)
    assert report.valid and "E109" not in report.codes


# --------------------------------------------------------------------------- §3.3: booleans


def test_logical_bool_values_are_zero_or_one(tmp_path: Path) -> None:
    """SPEC §3.3-R2: a value other than 0 or 1 in a ``logical_dtype = "bool"`` feature is E142 (deep validation)."""

    def mutate(f: h5py.File) -> None:
        f["train/flag"][3] = 2

    path = _edited(tmp_path, mutate)
    deep = validate(path, deep=True)
    (e142,) = [i for i in deep.issues if i.code == "E142"]
    assert e142.path == "/train/flag" and "holds 2 in sample 3" in e142.message
    assert "E142" not in validate(path).codes  # no sample is read without deep


@pytest.mark.parametrize(
    ("feature", "mutate"),
    [
        ("/train/image", lambda f: write_attr(f["train/image"], "logical_dtype", "bool")),  # float32 values
        ("/train/text", lambda f: write_attr(f["train/text"], "logical_dtype", "bool")),  # a string feature
        (
            "/train/flag",
            lambda f: replace_dataset(f, "train/flag", data=np.ones(6, np.int8), chunks=(8,), maxshape=(None,)),
        ),
    ],
    ids=["float32", "string-feature", "int8"],
)
def test_logical_dtype_bool_only_on_uint8_dense_or_ragged(
    tmp_path: Path, feature: str, mutate: Callable[[h5py.File], Any]
) -> None:
    """SPEC §3.3-R3: ``logical_dtype = "bool"`` on values that are not uint8, or on a string feature, is E117."""
    report = validate(_edited(tmp_path, mutate))
    assert _errors(report) == {("E117", feature)}
    assert "logical_dtype" in next(i.message for i in report.issues if i.code == "E117")


# --------------------------------------------------------------------------- §3.4: strings


def _string_types(f: h5py.File) -> list[tuple[str, bool, int]]:
    """(where, variable-length, character set) of every string dataset and string attribute of the file."""
    found: list[tuple[str, bool, int]] = []

    def attrs(name: str, obj: Any) -> None:
        for key in obj.attrs:
            tid = obj.attrs.get_id(key).get_type()
            if isinstance(tid, h5py.h5t.TypeStringID):
                found.append((f"{name}@{key}", tid.is_variable_str(), tid.get_cset()))
        if isinstance(obj, h5py.Dataset) and isinstance(obj.id.get_type(), h5py.h5t.TypeStringID):
            tid = obj.id.get_type()
            found.append((name, tid.is_variable_str(), tid.get_cset()))

    attrs("/", f)
    f.visititems(attrs)
    return found


def test_writer_writes_every_string_as_variable_length_utf8(tmp_path: Path) -> None:
    """SPEC §3.4-R1: string samples, class names and string attributes (scalars and arrays) are vlen UTF-8."""
    splits = {
        "train": {
            "text": ["héllo", "", "日本語"],
            "label": h5ml.Categorical([0, 1, -1], ["cat", "dög"]),
        }
    }
    path = h5ml.write(tmp_path / "s.h5", splits, metadata={**_META, "keywords": ["a", "ü"], "acme:note": "made"})
    with h5py.File(path, "r") as f:
        types = _string_types(f)
    where = {w for w, _, _ in types}
    assert {"train/text", "train/label/class_names", "/@description", "/@keywords", "/@acme:note"} <= where
    assert {"train/text@encoding", "/@format", "/@must_understand"} <= where
    assert [t for t in types if not t[1] or t[2] != h5py.h5t.CSET_UTF8] == []


def _not_utf8_description(f: h5py.File) -> None:
    del f.attrs["description"]
    f.attrs.create("description", np.array(b"Caf\xe9", dtype=object), dtype=h5py.string_dtype("ascii"))


def _not_utf8_feature_description(f: h5py.File) -> None:
    f["train/image"].attrs.create("description", np.array(b"\xff\xfe", dtype=object), dtype=h5py.string_dtype("ascii"))


def _not_utf8_sample(f: h5py.File) -> None:
    dset = replace_dataset(
        f, "train/text", shape=(6,), dtype=h5py.string_dtype("utf-8", 8), chunks=(8,), maxshape=(None,)
    )
    raw = np.array([b"ok", b"caf\xe9", b"", b"x", b"y", b"z"], dtype="S8")
    dset.id.write(h5py.h5s.ALL, h5py.h5s.ALL, raw, mtype=dset.id.get_type())


@pytest.mark.parametrize(
    ("mutate", "error", "deep"),
    [
        (_not_utf8_description, ("E107", "/"), False),
        (_not_utf8_feature_description, ("E117", "/train/image"), False),
        (_not_utf8_sample, ("E144", "/train/text"), True),
    ],
    ids=["root-attribute", "feature-attribute", "sample"],
)
def test_string_bytes_must_be_utf8_whatever_the_declared_set(
    tmp_path: Path, mutate: Callable[[h5py.File], Any], error: tuple[str, str], deep: bool
) -> None:
    """SPEC §3.4-R2: bytes that are not UTF-8, even under the ASCII set, are E107 at the root, E117 on a feature,
    E144 in sample data (deep)."""
    report = validate(_edited(tmp_path, mutate), deep=deep)
    assert error in _errors(report) and not report.valid
    assert _errors(report) <= {error, ("E160", "/train/text")}  # the changed sample also changes its fingerprint


def _fixed_strings(f: h5py.File, pad: int, cset: int, raw: list[bytes]) -> None:
    """Store the train text again as fixed-length 8-byte strings with the given padding, bytes as given."""
    attrs = {k: f["train/text"].attrs[k] for k in f["train/text"].attrs}
    del f["train/text"]
    tid = h5py.h5t.C_S1.copy()
    tid.set_size(8)
    tid.set_strpad(pad)
    tid.set_cset(cset)
    dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
    dcpl.set_chunk((8,))
    space = h5py.h5s.create_simple((len(raw),), (h5py.h5s.UNLIMITED,))
    dset = h5py.h5d.create(f["train"].id, b"text", tid, space, dcpl=dcpl)
    dset.write(h5py.h5s.ALL, h5py.h5s.ALL, np.array(raw, dtype="S8"), mtype=tid)
    for key, value in attrs.items():
        if key != "fingerprint":
            f["train/text"].attrs[key] = value


@pytest.mark.parametrize(
    ("pad", "raw", "text"),
    [
        (
            h5py.h5t.STR_NULLTERM,
            [b"ab\x00junk", b"a b\x00\x00\x00\x00\x00", b"caf\xc3\xa9\x00\x00\x00", b"12345678"],
            ["ab", "a b", "café", "12345678"],
        ),
        (
            h5py.h5t.STR_NULLPAD,
            [b"ab\x00\x00\x00\x00\x00\x00", b"a b ", b"caf\xc3\xa9", b"12345678"],
            ["ab", "a b ", "café", "12345678"],
        ),
        (
            h5py.h5t.STR_SPACEPAD,
            [b"ab      ", b" a b    ", b"caf\xc3\xa9   ", b"12345678"],
            ["ab", " a b", "café", "12345678"],
        ),
    ],
    ids=["nullterm", "nullpad", "spacepad"],
)
@pytest.mark.parametrize("cset", [h5py.h5t.CSET_UTF8, h5py.h5t.CSET_ASCII], ids=["utf8", "ascii"])
def test_fixed_length_padding_is_removed_as_declared(
    tmp_path: Path, pad: int, raw: list[bytes], text: list[str], cset: int
) -> None:
    """SPEC §3.4-R3, §3.4-R4: fixed-length strings of any padding and either set read as text; exactly the declared
    padding is removed (NULLTERM: from the first NUL on; NULLPAD: trailing NULs; SPACEPAD: trailing spaces)."""
    path = h5ml.write(tmp_path / "p.h5", {"train": {"text": ["w", "x", "y", "z"]}}, metadata=_META)
    with h5py.File(path, "r+") as f:
        _fixed_strings(f, pad, cset, raw)
        del f.attrs["fingerprint"]
    with h5ml.open(path) as ds:
        got = ds["train"]["text"][[0, 1, 2, 3]].tolist()
        assert got == text and all(type(v) is str for v in got)
        assert ds["train"]["text"][1] == text[1]


# --------------------------------------------------------------------------- §3.5, §3.6: filters and storage


def test_undeclared_non_core_filter_is_e114(tmp_path: Path) -> None:
    """SPEC §3.5-R1: a dataset with a filter that is not core (LZF, 32000) and not in required_filters is E114."""

    def mutate(f: h5py.File) -> None:
        data = f["train/image"][...]
        replace_dataset(f, "train/image", data=data, chunks=(8, 4, 3), maxshape=(None, 4, 3), compression="lzf")

    report = validate(_edited(tmp_path, mutate))
    assert _errors(report) == {("E114", "/train/image")}
    assert "32000" in report.issues[0].message and "'required_filters'" in report.issues[0].message


def test_virtual_dataset_is_e112(tmp_path: Path) -> None:
    """SPEC §3.6-R4: a virtual dataset, even one whose source is in the same file, is E112."""

    def mutate(f: h5py.File) -> None:
        f["_src"] = np.zeros((6, 4, 3), dtype=np.float32)
        layout = h5py.VirtualLayout(shape=(6, 4, 3), dtype=np.float32)
        layout[:] = h5py.VirtualSource(".", "/_src", shape=(6, 4, 3))
        attrs = {k: f["train/image"].attrs[k] for k in f["train/image"].attrs}
        del f["train/image"]
        vds = f["train"].create_virtual_dataset("image", layout)
        for key, value in attrs.items():
            vds.attrs[key] = value

    report = validate(_edited(tmp_path, mutate))
    assert ("E112", "/train/image") in _errors(report) and not report.valid
    assert "virtual dataset" in next(i.message for i in report.issues if i.code == "E112")
