"""Tests of h5ml.validator.runner: every registry code from a real file (SPEC §9), and the validator's guarantees."""

from __future__ import annotations

import json
import math
import os
import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import pytest

from badfiles import (
    CASES,
    Case,
    add_large_split,
    add_slow_split,
    corrupt_chunk,
    default_splits,
    minimal_valid,
    not_h5ml,
    overwrite_raw_data,
    replace_dataset,
    write_h5ml,
    write_then_die,
)
from h5ml import spec
from h5ml.model.fingerprint import file_fingerprint
from h5ml.spec import schemas
from h5ml.spec.attrs import read_attr, write_attr
from h5ml.spec.codes import CODES, Severity
from h5ml.validator.checks.storage import unwritten_storage
from h5ml.validator.runner import FileReport, Issue, Report, iter_issues, validate, validate_many
from h5ml.validator.sandbox import ChildDiedError, run_with_timeout

#: Seconds a sandboxed validation of a small file may take (generous: it is a hang guard, not a speed goal).
LIMIT = 120.0


def _codes_at(report: FileReport) -> set[tuple[str, str]]:
    return {(i.code, i.path) for i in report.issues}


def _edited(tmp_path: Path, mutate: Callable[[h5py.File], Any], name: str = "edited.h5") -> Path:
    path = minimal_valid(tmp_path / name)
    with h5py.File(path, "r+") as f:
        mutate(f)
    return path


# --------------------------------------------------------------------------- the registry table


@pytest.mark.parametrize("case", CASES, ids=[c.code for c in CASES])
def test_registry_code_is_reported(case: Case, tmp_path: Path) -> None:
    """§9.2: each registry code comes from a file with that defect, at the right HDF5 path, with its clause."""
    # One real defective file per code; among them the file requirements SPEC §4.1-R1 (E102), §4.2-R1 (E108),
    # §4.4-R1 (E106), §5.1-R1 (E123), §5.1-R2 (E120, a split name), §5.3-R1 (E121), §5.3-R2 (E122),
    # §6.1-R1 (E130), §6.1-R2 (E131), §6.1-R3 (E132), §6.1-R8 (E133), §6.5-R1 (E134), §6.3-R1 (E140),
    # §6.5-R2 (E141) and §6.3-R2 (E143); SPEC §4.6-R1 through the root schema (E107 for created, E108).
    path = tmp_path / "bad.h5"
    case.build(path)
    report = validate(path, deep=case.deep)
    entry = CODES[case.code]
    found = [i for i in report.issues if i.code == case.code and i.path == case.hdf5_path]
    assert found, [str(i) for i in report.issues]
    for issue in found:
        assert (issue.name, issue.severity, issue.clause) == (entry.name, entry.severity, entry.clause)
        assert issue.message
    assert {i.code for i in report.issues} == {case.code, *case.also}
    has_error = any(CODES[c].severity is Severity.ERROR for c in {case.code, *case.also})
    assert report.valid is not has_error
    assert report.valid_strict is (entry.severity is Severity.INFO)
    if case.deep:
        assert case.code not in validate(path).codes  # a metadata-only validation reads no sample data


def test_table_covers_every_registry_code() -> None:
    """§9.2: a code added to the registry without a bad file here fails this test (E101 is tested below; the
    codes of a shard index, §12, in tests/test_validate_shards.py, W211 in tests/test_shard_staging.py; those of a
    view file, §12.6, are file codes here)."""
    codes = [c.code for c in CASES]
    assert len(codes) == len(set(codes))
    index_codes = {c for c, entry in CODES.items() if entry.clause.startswith("§12") and entry.clause != "§12.6"}
    assert index_codes == {"E170", "E171", "E172", "E173", "E174", "W210", "W211"}
    assert set(codes) == set(CODES) - {"E101"} - index_codes
    assert all(c.deep == CODES[c.code].deep for c in CASES)


@pytest.mark.parametrize("compression", [None, "gzip"])
@pytest.mark.parametrize("deep", [False, True], ids=["shallow", "deep"])
def test_minimal_valid_file_has_no_issue(tmp_path: Path, compression: str | None, deep: bool) -> None:
    """§9.1: a file that follows the spec in every point gives no error, warning or info (SPEC §9.1.1-R3)."""
    report = validate(minimal_valid(tmp_path / "ok.h5", compression=compression), deep=deep)
    assert report.issues == ()
    assert (report.valid, report.valid_strict, report.readable) == (True, True, True)
    assert report.format_version == spec.FORMAT_VERSION_STRING


def test_writer_output_is_valid(tmp_path: Path) -> None:
    """§9.1: what the reference writer writes validates without error or warning, deep included."""
    import h5ml

    rng = np.random.default_rng(3)
    path = tmp_path / "written.h5"
    h5ml.write(
        path,
        {
            "train": {
                "x": rng.normal(size=(50, 3)).astype(np.float32),
                "ok": rng.integers(0, 2, size=50).astype(bool),
                "words": [f"w{i}" for i in range(50)],
                "clip": [rng.normal(size=int(k)) for k in rng.integers(0, 6, size=50)],
            }
        },
        metadata={"name": "written", "license": "MIT", "description": "writer output"},
        shuffle=True,
        seed=1,
    )
    report = validate(path, deep=True)
    assert [i for i in report.issues if i.severity is not Severity.INFO] == []


# --------------------------------------------------------------------------- more shapes of some codes


def _array_type_dataset(f: h5py.File) -> None:
    tid = h5py.h5t.array_create(h5py.h5t.STD_I32LE, (2,))
    h5py.h5d.create(f["train"].id, b"pairs", tid, h5py.h5s.create_simple((6,)))


def _bitfield_dataset(f: h5py.File) -> None:
    h5py.h5d.create(f["train"].id, b"bits", h5py.h5t.STD_B8LE, h5py.h5s.create_simple((6,)))


@pytest.mark.parametrize(
    ("mutate", "path"),
    [
        (lambda f: f["train"].create_dataset("o", data=np.zeros(6, dtype="V4")), "/train/o"),
        (lambda f: f["train"].create_dataset("r", shape=(6,), dtype=h5py.ref_dtype), "/train/r"),
        (lambda f: f["train"].create_dataset("v", shape=(6,), dtype=h5py.vlen_dtype(np.int32)), "/train/v"),
        (
            lambda f: f["train"].create_dataset(
                "e", data=np.zeros(6, np.int8), dtype=h5py.enum_dtype({"A": 0, "B": 1, "C": 2}, basetype="i1")
            ),
            "/train/e",
        ),
        (lambda f: f["train"].create_dataset("q", data=np.zeros(6, dtype=np.longdouble)), "/train/q"),
        (_array_type_dataset, "/train/pairs"),
        (_bitfield_dataset, "/train/bits"),
        (
            lambda f: f["train/image"].attrs.create("pair", np.zeros((), dtype=[("a", "<i4"), ("b", "<i4")])),
            "/train/image",
        ),
    ],
    ids=["opaque", "reference", "vlen", "enum", "long-double", "array", "bitfield", "compound-attribute"],
)
def test_forbidden_types(tmp_path: Path, mutate: Callable[[h5py.File], Any], path: str) -> None:
    """§3.2: every datatype outside the profile is E113, on datasets and on attributes."""
    # SPEC §3.2-R1
    report = validate(_edited(tmp_path, mutate))
    assert ("E113", path) in _codes_at(report)
    assert not report.valid


def test_declared_filter_is_accepted(tmp_path: Path) -> None:
    """§3.5: a non-core filter listed in required_filters is not E114."""

    def mutate(f: h5py.File) -> None:
        data = f["train/image"][...]
        replace_dataset(f, "train/image", data=data, chunks=(8, 4, 3), maxshape=(None, 4, 3), compression="lzf")
        write_attr(f, "required_filters", [32000])

    report = validate(_edited(tmp_path, mutate), deep=True)
    assert report.issues == ()


@pytest.mark.parametrize(
    ("obj", "name", "value", "code"),
    [
        ("/train", "num_samples", -1, "E121"),
        ("/train", "num_samples", 6.0, "E121"),
        ("/train", "shuffle_seed", "abc", "E117"),
        ("/train", "shuffle_seed", -1, "E117"),
        ("/train/clip", "sample_rate", float("inf"), "E117"),
        ("/train", "description", 5, "E117"),
        ("/train/clip", "sample_rate", -16000.0, "E117"),
        ("/train/flag", "logical_dtype", "int", "E117"),
        ("/train/image", "stats_count", 1.5, "E117"),
        ("/train/image", "stats_mean", "high", "E117"),
        ("/train/blob", "media_type", "png", "E117"),
        ("/train/image", "encoding_version", "one", "E117"),
        ("/train/image", "units", 3, "E117"),
        ("/train/image", "encoding", 3, "E131"),
        ("/", "complete", 0, "E106"),
        ("/", "fingerprint", "sha256:XYZ", "E161"),
        ("/", "homepage", "not a url", "E107"),
        ("/", "must_understand", "zstd", "E107"),
    ],
)
def test_attribute_values(tmp_path: Path, obj: str, name: str, value: Any, code: str) -> None:
    """§4.2, §4.4, §5.3, §6.1, §8.1: a spec attribute with a wrong type or value gives its code, once.

    SPEC §8.1-R1: a root fingerprint that is not 'sha256:' and 64 lowercase hex digits is E161.
    """
    # SPEC §4.2-R2 (root, E107), §5.3-R3 (split description and shuffle_seed), §6.1-R4 (feature attributes),
    # §6.7-R2 (sample_rate, stats_mean), §6.7-R5 (stats_count), §6.6-R1 (media_type): E117;
    # SPEC §4.6-R1: a homepage the root schema refuses is E107
    report = validate(_edited(tmp_path, lambda f: write_attr(f[obj], name, value)))
    assert [(i.code, i.path) for i in report.issues if i.severity is Severity.ERROR] == [(code, obj)]


@pytest.mark.parametrize(
    ("obj", "name", "value"),
    [
        ("/train/image", "logical_dtype", "bool"),
        ("/train/label", "logical_dtype", "bool"),
        ("/train/text", "stats_count", 3),
        ("/train/blob", "stats_mean", 0.5),
        ("/train/image", "media_type", "image/png"),
    ],
    ids=["bool-on-float", "bool-on-categorical", "stats-on-string", "stats-on-bytes", "media-type-on-dense"],
)
def test_attribute_placement(tmp_path: Path, obj: str, name: str, value: Any) -> None:
    """§3.3, §6.6, §6.7: logical_dtype only on uint8 dense/ragged values, statistics only on dense/ragged,
    media_type only on bytes (E117): SPEC §6.7-R1, SPEC §6.1-R5."""
    report = validate(_edited(tmp_path, lambda f: write_attr(f[obj], name, value)))
    assert [(i.code, i.path) for i in report.issues] == [("E117", obj)]


@pytest.mark.parametrize(
    "media",
    [
        "audio/L16; rate=16000",
        'text/plain;charset="utf-8"',
        "image",
        "image/",
        "a b/c",
        "image/png;",
        "image/png; charset",
        "image/png ",
    ],
)
def test_media_type_agrees_with_writer(tmp_path: Path, media: str) -> None:
    """§6.6, SPEC §6.6-R1: the validator reports E117 for a media_type exactly when the reference writer refuses it (one
    grammar, :func:`h5ml.spec.media_type_problem`): the same string is given to the writer, then stored with
    plain h5py in an otherwise valid file and validated."""
    from h5ml.errors import WriterError
    from h5ml.writer.writer import write

    try:
        write(tmp_path / "w.h5", {"train": {"blob": [b"ab", b""]}}, features={"blob": {"media_type": media}})
    except WriterError as err:
        assert "media_type" in str(err) and "(§6.6)" in str(err)
        refused = True
    else:
        assert [i.code for i in validate(tmp_path / "w.h5").issues if i.severity is Severity.ERROR] == []
        refused = False
    assert refused == (media not in ("audio/L16; rate=16000", 'text/plain;charset="utf-8"'))
    report = validate(_edited(tmp_path, lambda f: write_attr(f["/train/blob"], "media_type", media)))
    assert [(i.code, i.path) for i in report.issues] == ([("E117", "/train/blob")] if refused else [])
    if refused:
        assert f"attribute 'media_type' of /train/blob is {media!r}" in report.issues[0].message
        assert "(RFC 6838, §6.6)" in report.issues[0].message


def test_newer_minor_unknown_encoding_and_role(tmp_path: Path) -> None:
    """§1.4.1: in a newer-MINOR file an unknown encoding is I301 and an unknown role I300; in a 1.0 file, errors."""
    # SPEC §1.4-R2, §1.4-R3, §1.4.1-R2

    def mutate(f: h5py.File) -> None:
        write_attr(f["train/image"], "encoding", "sparse")
        write_attr(f["train/label"], "role", "weight")

    path = _edited(tmp_path, mutate)
    assert _codes_at(validate(path)) == {("E131", "/train/image"), ("E117", "/train/label")}
    with h5py.File(path, "r+") as f:
        write_attr(f, "format_version", "1.3")
    report = validate(path, deep=True)
    assert _codes_at(report) == {("I302", "/"), ("I301", "/train/image"), ("I300", "/train/label")}
    assert report.valid
    (ignored,) = [i for i in report.issues if i.code == "I301"]
    assert "the file fingerprint cannot be recomputed without it, so it is not checked" in ignored.message


@pytest.mark.parametrize("version", ["0.9", "2.0"])
def test_other_major_is_e104(tmp_path: Path, version: str) -> None:
    """§1.3: MAJOR 0 and MAJOR 2 are both refused with E104 alone."""
    # SPEC §1.3-R1, §1.3-R3: another MAJOR is E104 and nothing else
    report = validate(_edited(tmp_path, lambda f: write_attr(f, "format_version", version)))
    assert report.codes == ["E104"]


def _odd_integer(f: h5py.File) -> None:
    tid = h5py.h5t.STD_I32LE.copy()
    tid.set_precision(20)
    h5py.h5d.create(f.require_group("_extra").id, b"odd", tid, h5py.h5s.create_simple((6,)))


def _yes_no_enum(f: h5py.File) -> None:
    enum = h5py.enum_dtype({"NO": 0, "YES": 1}, basetype="i1")
    f.require_group("_extra").create_dataset("yn", data=np.zeros(6, np.int8), dtype=enum)


def _committed_type(f: h5py.File) -> None:
    f["kind"] = np.dtype("<f4")


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        (_odd_integer, {("I301", "/_extra"), ("E113", "/_extra/odd")}),
        (_yes_no_enum, {("I301", "/_extra"), ("E113", "/_extra/yn")}),
        (_committed_type, {("I301", "/kind")}),
    ],
    ids=["20-bit-integer", "yes-no-enum", "committed-datatype"],
)
def test_profile_edge_cases(tmp_path: Path, mutate: Callable[[h5py.File], Any], expected: set[tuple[str, str]]) -> None:
    """§3.2: integers with padding bits and enums other than FALSE/TRUE are E113, even inside unknown objects;
    §5.5: a committed datatype at the root is an unknown object (I301), not a split."""
    assert _codes_at(validate(_edited(tmp_path, mutate))) == expected


@pytest.mark.parametrize(
    ("shape", "chunks", "expected"),
    [
        ((6, 0), (8, 4), set()),
        ((2, 64, 4096, 1024), (1, 1, 64, 1024), set()),
        ((2, 64, 4096, 1024), (1, 2, 64, 1024), {"E150"}),
        ((2, 4096, 2048), (2, 128, 2048), {"E150"}),
        ((6, 1536, 1024), (8, 1536, 1024), {"W201"}),
        ((6, 1536, 1024), (1, 1536, 1024), set()),
        ((12, 8192), (6, 8192), {"W200"}),
        ((6, 8192), (6, 8192), set()),  # §7.2: one chunk holds every row, no W200
        ((6, 8192), (1, 1024), {"E150", "W201"}),  # a row of 32 KiB: the slab form is only for rows over 16 MiB
        ((2, 2, 4194320), (1, 1, 4194320), {"E150", "W201"}),  # a slab of 16 MiB + 64 bytes: over 16 MiB
    ],
    ids=[
        "zero-extent",
        "slab-axis-2",
        "not-a-slab",
        "slab-of-two-rows",
        "big-chunk",
        "one-row-6-MiB",
        "six-rows",
        "six-rows-one-chunk",
        "slab-of-a-small-row",
        "slab-over-16-MiB",
    ],
)
def test_chunk_shapes(tmp_path: Path, shape: tuple[int, ...], chunks: tuple[int, ...], expected: set[str]) -> None:
    """§7.1, §7.1.1, §7.3: whole rows, one-row slabs for rows over 16 MiB, and the W201 byte rule.

    SPEC §7.1-R1 (whole rows; an axis of extent 0 is whole), SPEC §7.1.1-R1 (a C-order slab of one row of
    at most 16 MiB, and only for rows over 16 MiB), SPEC §7.2-R1 (no W200 when one chunk holds every row).
    """

    def mutate(f: h5py.File) -> None:
        write_attr(f["train"], "num_samples", shape[0])
        for name in list(f["train"]):
            if name != "image":
                del f["train"][name]
        replace_dataset(f, "train/image", shape=shape, dtype=np.float32, chunks=chunks, maxshape=(None,) * len(shape))

    report = validate(_edited(tmp_path, mutate))
    # The datasets are declared, never written (up to 2 GiB): E146 since SPEC 1.1 (§3.5.1), beside the chunk codes.
    unwritten = {"E146"} if math.prod(shape) else set()
    assert {i.code for i in report.issues} == expected | unwritten


@pytest.mark.parametrize(
    ("obj", "name"), [("/train", "num_samples"), ("/train/image", "role"), ("/", "complete"), ("/", "created")]
)
def test_single_values_must_be_scalar(tmp_path: Path, obj: str, name: str) -> None:
    """§3.7: a single-valued attribute stored as a 1-element array is E116 (and only E116)."""
    # SPEC §3.7-R1

    def mutate(f: h5py.File) -> None:
        value = f[obj].attrs[name]
        f[obj].attrs.create(name, np.array([value]), dtype=f[obj].attrs.get_id(name).dtype)

    report = validate(_edited(tmp_path, mutate))
    assert [(i.code, i.path) for i in report.issues if i.severity is Severity.ERROR] == [("E116", obj)]


@pytest.mark.parametrize(
    ("mutate", "path"),
    [
        (
            lambda f: replace_dataset(
                f, "train/image", data=np.array(["a"] * 6, dtype=object), dtype=h5py.string_dtype()
            ),
            "/train/image",
        ),
        (lambda f: replace_dataset(f, "train/text", data=np.zeros((6, 2), np.float32)), "/train/text"),
        (
            lambda f: replace_dataset(
                f, "train/text", data=np.array([["a", "b"]] * 6, dtype=object), dtype=h5py.string_dtype()
            ),
            "/train/text",
        ),
        (
            lambda f: replace_dataset(f, "train/label/codes", data=f["train/label/codes"][...].astype(np.uint16)),
            "/train/label/codes",
        ),
        (
            lambda f: replace_dataset(f, "train/clip/offsets", data=f["train/clip/offsets"][...].astype(np.float64)),
            "/train/clip/offsets",
        ),
        (
            lambda f: replace_dataset(f, "train/clip/offsets", data=f["train/clip/offsets"][...].astype(np.int32)),
            "/train/clip/offsets",
        ),
        (
            lambda f: replace_dataset(f, "train/blob/values", data=f["train/blob/values"][...].astype(np.int16)),
            "/train/blob/values",
        ),
        (
            lambda f: replace_dataset(f, "train/volume/values", data=np.zeros((4, 2), np.float32)),
            "/train/volume/values",
        ),
        (lambda f: replace_dataset(f, "train/volume/shapes", data=np.zeros(6, np.int64)), "/train/volume/shapes"),
        (lambda f: replace_dataset(f, "train/volume/shapes", data=np.zeros((6, 0), np.int64)), "/train/volume/shapes"),
        (lambda f: replace_dataset(f, "train/clip/offsets", data=np.zeros(0, np.int64)), "/train/clip/offsets"),
        (lambda f: write_attr(f["train/label"], "encoding", "dense"), "/train/label"),
        (
            lambda f: f["train/clip"].move("values", "values_old") or f["train/clip"].create_group("values"),
            "/train/clip/values",
        ),
    ],
    ids=[
        "dense-strings",
        "string-numbers",
        "string-2d",
        "codes-unsigned",
        "offsets-float",
        "offsets-int32",
        "bytes-int16",
        "shapes-with-2d-values",
        "shapes-1d",
        "shapes-d0",
        "offsets-empty",
        "group-for-dataset-encoding",
        "member-is-group",
    ],
)
def test_encoding_structure(tmp_path: Path, mutate: Callable[[h5py.File], Any], path: str) -> None:
    """§6, SPEC §6.1-R8: objects that do not have the structure of their encoding give E133 at the object concerned."""
    report = validate(_edited(tmp_path, mutate))
    assert ("E133", path) in _codes_at(report), [str(i) for i in report.issues]


@pytest.mark.parametrize(
    ("names", "message"), [(["cat", "", "bird"], "empty"), (["cat", "dog", "cat"], "repeat")], ids=["empty", "repeat"]
)
def test_class_names(tmp_path: Path, names: list[str], message: str) -> None:
    """§6.5, SPEC §6.5-R1: class names are unique and non-empty."""
    splits = default_splits()
    splits["train"]["label"].arrays["class_names"] = names
    report = validate(write_h5ml(tmp_path / "c.h5", splits))
    (issue,) = report.issues
    assert (issue.code, issue.path) == ("E134", "/train/label/class_names")
    assert message in issue.message


@pytest.mark.parametrize("deep", [False, True], ids=["shallow", "deep"])
def test_class_names_not_utf8_are_e134_not_e144(tmp_path: Path, deep: bool) -> None:
    """§3.4, §6.5: a class name whose bytes are not UTF-8 is E134, found with the feature's structure (so in
    shallow validation too), and never E144, which is for sample data."""
    splits = default_splits()
    splits["train"]["label"].arrays["class_names"] = ["cat", b"d\xf6g", "bird"]  # Latin-1, not UTF-8
    report = validate(write_h5ml(tmp_path / "c.h5", splits), deep=deep)
    errors = [i for i in report.issues if i.severity is Severity.ERROR]
    assert [(i.code, i.path) for i in errors] == [("E134", "/train/label/class_names")]
    assert errors[0].message == "class name 1 of /train/label/class_names is not valid UTF-8: b'd\\xf6g'"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param(1.0, ("E107", "is 1.0, stored as float64"), id="float64-one"),
        pytest.param(np.float32(0.0), ("E107", "is 0.0, stored as float32"), id="float32-zero"),
        pytest.param("1", ("E107", "is '1', stored as a string"), id="string-one"),
        pytest.param(np.bool_(True), ("E107", "is True, stored as an HDF5 enum boolean"), id="boolean"),
        pytest.param(np.int8(0), ("E106", "is 0, not 1"), id="int8-zero"),
        pytest.param(np.uint16(1), None, id="uint16-one"),
    ],
)
def test_completion_marker_type_is_e107_and_value_e106(
    tmp_path: Path, value: Any, expected: tuple[str, str] | None
) -> None:
    """§4.2, §4.4: a marker that is not an integer breaks the type §4.2 gives it (E107, not E106, even a float 1.0);
    an integer other than 1 is an incomplete file (E106, not E107); 1 of any integer type is the marker.
    SPEC §4.4-R1 and SPEC §4.2-R2."""

    def mutate(f: h5py.File) -> None:
        del f.attrs["complete"]
        f.attrs["complete"] = value

    report = validate(_edited(tmp_path, mutate))
    errors = [i for i in report.issues if i.severity is Severity.ERROR]
    if expected is None:
        assert report.issues == ()
        return
    code, words = expected
    assert [(i.code, i.path) for i in errors] == [(code, "/")], [str(i) for i in report.issues]
    assert f"the completion marker 'complete' {words}" in errors[0].message


def test_unknown_things_are_info(tmp_path: Path) -> None:
    """§1.4, §5.5: unknown attributes and objects at every level are info, never errors (SPEC §5.5-R2: I301)."""
    # SPEC §1.4-R3: unknown attributes are I300, unknown objects I301

    def mutate(f: h5py.File) -> None:
        write_attr(f["train"], "curator", "me")
        write_attr(f["train/label"], "colour", "red")
        write_attr(f["train/label/codes"], "note", "x")
        f["train/label/extra"] = np.arange(3)
        f["train"].create_group("_cache")

    report = validate(_edited(tmp_path, mutate))
    assert _codes_at(report) == {
        ("I300", "/train"),
        ("I300", "/train/label"),
        ("I300", "/train/label/codes"),
        ("I301", "/train/label/extra"),
        ("I301", "/train/_cache"),
    }
    assert report.valid_strict


def test_feature_name_rule(tmp_path: Path) -> None:
    """§5.1.1, SPEC §5.2-R1: a feature name starting with '.' is E120 at the feature; a '.' inside is allowed."""
    report = validate(_edited(tmp_path, lambda f: f["train"].move("image", ".image")))
    assert [(i.code, i.path) for i in report.issues] == [("E120", "/train/.image")]
    dotted = validate(_edited(tmp_path, lambda f: f["train"].move("image", "im.age"), "dotted.h5"))
    assert dotted.issues == ()  # §5.1.1: '.' is allowed after the first character


def test_chunk_rules(tmp_path: Path) -> None:
    """§7.1, §7.3: rows over 16 MiB may be split in one-row slabs; tiny chunks of a large dataset are W201.

    SPEC §7.1.1-R1: the slab (1, 128, 2048) of a 32 MiB row is allowed; SPEC §7.1-R1: (8, 8) of 8 KiB rows is not.
    """

    def mutate(f: h5py.File) -> None:
        # 32 MiB per sample, chunks of 1 MiB that split the sample: the §7.1 exception, no E150 nor W201.
        replace_dataset(f, "train/image", shape=(6, 4096, 2048), dtype=np.float32, chunks=(1, 128, 2048))
        # 6 x 8 KiB of data in chunks of 64 bytes: W201 (too small).
        replace_dataset(f, "train/flag", shape=(6, 8192), dtype=np.uint8, chunks=(8, 8), maxshape=(None, 8192))

    report = validate(_edited(tmp_path, mutate))
    assert {(i.code, i.path) for i in report.issues if i.code in ("E150", "W200", "W201")} == {
        ("E150", "/train/flag"),
        ("W201", "/train/flag"),
    }


@pytest.mark.parametrize("layout", ["contiguous", "compact"])
def test_chunk_rules_skip_unchunked_datasets(tmp_path: Path, layout: str) -> None:
    """SPEC §7.4-R1: E150, W200 and W201 concern chunks only: none for a contiguous or compact dataset.

    The same data chunked as one block of 3 rows (48 MiB, or 3 rows of 3 values) is W201 or E150, so the rules
    would fire if the validator took the whole dataset for one chunk.
    """
    shape, chunked = ((3, 4096, 1024), (3, 4096, 1024)) if layout == "contiguous" else ((3, 3), (3, 1))

    def mutate(f: h5py.File, chunks: tuple[int, ...] | None) -> None:
        write_attr(f["train"], "num_samples", shape[0])
        for name in list(f["train"]):
            if name != "image":
                del f["train"][name]
        if chunks is not None:
            replace_dataset(f, "train/image", shape=shape, dtype=np.float32, chunks=chunks)
            return
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_layout(h5py.h5d.COMPACT if layout == "compact" else h5py.h5d.CONTIGUOUS)
        attrs = {k: f["train/image"].attrs[k] for k in f["train/image"].attrs}
        del f["train/image"]
        space = h5py.h5s.create_simple(shape)
        h5py.h5d.create(f["train"].id, b"image", h5py.h5t.IEEE_F32LE, space, dcpl=dcpl)
        f["train/image"][...] = 0  # written: storage never written is E146 (SPEC §3.5.1-R1)
        for key, value in attrs.items():
            f["train/image"].attrs[key] = value

    unchunked = validate(_edited(tmp_path, lambda f: mutate(f, None), "unchunked.h5"))
    with h5py.File(tmp_path / "unchunked.h5") as f:
        assert f["train/image"].id.get_create_plist().get_layout() == (
            h5py.h5d.COMPACT if layout == "compact" else h5py.h5d.CONTIGUOUS
        )
    assert not {"E150", "W200", "W201"} & set(unchunked.codes), [str(i) for i in unchunked.issues]
    assert unchunked.valid, [str(i) for i in unchunked.issues]
    as_chunks = validate(_edited(tmp_path, lambda f: mutate(f, chunked), "chunked.h5"))
    assert {"E150", "W201"} & set(as_chunks.codes) == ({"W201"} if layout == "contiguous" else {"E150"})


def test_num_samples_mismatch_for_group_encodings(tmp_path: Path) -> None:
    """§5.3: offsets hold N + 1 entries, codes and shapes N; a mismatch is E122 at the dataset."""
    report = validate(_edited(tmp_path, lambda f: write_attr(f["test"], "num_samples", 2)))
    assert {p for c, p in _codes_at(report) if c == "E122"} == {
        f"/test/{name}"
        for name in (
            "image",
            "flag",
            "text",
            "label/codes",
            "clip/offsets",
            "volume/offsets",
            "volume/shapes",
            "blob/offsets",
        )
    }


def test_stop_after_unsupported_major(tmp_path: Path) -> None:
    """§1.3: a newer MAJOR stops the check: nothing else is reported."""
    # SPEC §1.3-R3: no further check against 1.x; SPEC §9.1.2-R3: E104 alone

    def mutate(f: h5py.File) -> None:
        write_attr(f, "format_version", "2.3")
        del f.attrs["name"]
        del f["train/image"].attrs["encoding"]

    report = validate(_edited(tmp_path, mutate))
    assert report.codes == ["E104"]
    assert report.format_version == "2.3"


# --------------------------------------------------------------------------- deep checks


@pytest.mark.parametrize(
    ("feature", "member"),
    [
        ("image", ""),
        ("flag", ""),
        ("text", ""),
        ("label", "codes"),
        ("clip", "values"),
        ("volume", "values"),
        ("volume", "shapes"),
        ("blob", "values"),
    ],
)
def test_deep_fingerprint_per_encoding(tmp_path: Path, feature: str, member: str) -> None:
    """§8.1, §8.2: a changed value in any component of any encoding is E160 at the feature and at the file.

    SPEC §8.1-R2 for the feature's fingerprint and §8.1-R3 for the root's.
    """

    def mutate(f: h5py.File) -> None:
        dset = f[f"train/{feature}/{member}".rstrip("/")]
        data = dset[...]
        flat = data.reshape(-1)
        if data.dtype.kind == "O":
            flat[0] = flat[0] + b"!"
        elif member == "shapes":
            data[:, [0, 1]] = data[:, [1, 0]]  # swap axes: same sizes, other shapes
        elif member == "codes":
            flat[0] = 0 if flat[0] == -1 else -1  # stays in [-1, K)
        else:
            flat[0] = flat[0] ^ 1 if data.dtype.kind in "iu" else flat[0] + 1  # 0 <-> 1 keeps booleans valid
        assert not np.array_equal(data, dset[...])
        dset[...] = data

    path = _edited(tmp_path, mutate)
    assert validate(path).issues == ()
    report = validate(path, deep=True)
    assert _codes_at(report) == {("E160", f"/train/{feature}"), ("E160", "/")}


@pytest.mark.parametrize("obj", ["/", "/train/image"])
@pytest.mark.parametrize(
    "value",
    [
        "sha256:" + "A" * 64,
        "sha256:" + "a" * 64 + "\n",
        "sha256:" + "a" * 63,
        "md5:" + "a" * 32,
        "SHA256:" + "a" * 64,
        7,
    ],
    ids=["uppercase", "final-newline", "63-digits", "md5", "uppercase-prefix", "integer"],
)
def test_fingerprint_form_on_the_root_and_on_a_feature(tmp_path: Path, obj: str, value: Any) -> None:
    """SPEC §8.1-R1: on the root and on a feature alike, a fingerprint that is not the string 'sha256:' and 64
    lowercase hex digits is E161 at that object, in shallow validation, and nothing else is reported."""
    report = validate(_edited(tmp_path, lambda f: write_attr(f[obj], "fingerprint", value)))
    assert [(i.code, i.path) for i in report.issues] == [("E161", obj)]


def test_deep_file_fingerprint(tmp_path: Path) -> None:
    """§8.3: a file fingerprint that does not match the features is E160 at '/', deep only (SPEC §8.1-R3)."""
    path = _edited(tmp_path, lambda f: write_attr(f, "fingerprint", "sha256:" + "0" * 64))
    assert validate(path).issues == ()
    assert _codes_at(validate(path, deep=True)) == {("E160", "/")}


def test_metadata_only_reads_no_sample_data(tmp_path: Path) -> None:
    """§9: without deep, no sample byte is read: garbage in the data goes unseen; deep finds it."""
    # SPEC §3.5-R2: a corrupt gzip chunk is E145 in deep validation
    path = minimal_valid(tmp_path / "ok.h5")
    rng = np.random.default_rng(11)
    assert overwrite_raw_data(path, "train/image", rng.bytes(64)) == 8 * 4 * 3 * 4  # one chunk of 8 float32 rows
    assert validate(path).issues == ()
    assert ("E160", "/train/image") in _codes_at(validate(path, deep=True))

    gz = minimal_valid(tmp_path / "gz.h5", compression="gzip")
    corrupt_chunk(gz, "train/image")
    assert validate(gz).issues == ()
    assert _codes_at(validate(gz, deep=True)) == {("E145", "/train/image")}


def test_metadata_only_never_reads_a_dataset(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """§9: the shallow validation calls no dataset read but the class names (the mechanism, not a time)."""
    path = minimal_valid(tmp_path / "ok.h5")
    real = h5py.Dataset.__getitem__
    read: list[str] = []

    def guarded(self: h5py.Dataset, key: Any) -> Any:
        read.append(self.name)
        if not self.name.endswith("/class_names"):
            raise AssertionError(f"sample data of {self.name} was read")
        return real(self, key)

    monkeypatch.setattr(h5py.Dataset, "__getitem__", guarded)
    monkeypatch.setattr(h5py.Dataset, "read_direct", guarded)
    monkeypatch.setattr(h5py.Dataset, "__array__", guarded)
    assert validate(path).issues == ()
    assert sorted(read) == ["/test/label/class_names", "/train/label/class_names"]
    with pytest.raises(AssertionError, match="sample data"):
        validate(path, deep=True)


# --------------------------------------------------------------------------- C08, C10, unreadable inputs, E101


def test_c08_killed_writer_is_incomplete(tmp_path: Path) -> None:
    """§4.4, case C08: a writer SIGKILLed after a flush, before the marker, leaves a file reported E106.

    SPEC §4.4-R2: the writer writes complete last, so every earlier state of its file is incomplete."""
    path = tmp_path / "killed.h5"
    with pytest.raises(ChildDiedError, match="SIGKILL"):
        run_with_timeout(write_then_die, (str(path),), LIMIT)
    report = validate(path, timeout=LIMIT)
    assert report.readable
    assert ("E106", "/") in _codes_at(report)
    assert [i.code for i in report.issues if i.severity is Severity.ERROR] == ["E106"]
    assert validate(str(path) + ".ref").issues == ()


def test_c10_external_data_is_reported_and_never_read(tmp_path: Path) -> None:
    """§3.6, §10.1, case C10: external raw storage and an external link are E111 and E110; neither is followed.

    SPEC §10.1-R3.
    Both point at named pipes: reading either would block, and the time limit would turn it into E101.
    """
    # SPEC §3.6-R1, §3.6-R3
    os.mkfifo(tmp_path / "raw.bin")
    os.mkfifo(tmp_path / "other.h5")

    def mutate(f: h5py.File) -> None:
        replace_dataset(f, "train/image", shape=(6, 4, 3), dtype=np.float32, external=[("raw.bin", 0, 288)])
        f["train/linked"] = h5py.ExternalLink("other.h5", "/x")
        f["test/image"].attrs["note"] = "x"

    path = _edited(tmp_path, mutate, "c10.h5")
    report = validate(path, deep=True, timeout=30)
    assert report.readable
    assert {(i.code, i.path) for i in report.issues if i.severity is Severity.ERROR} == {
        ("E111", "/train/image"),
        ("E110", "/train/linked"),
    }


def _truncated(fraction: float) -> Callable[[Path], None]:
    """A builder of the minimal valid file cut after ``fraction`` of its bytes."""

    def make(path: Path) -> None:
        data = minimal_valid(path.with_suffix(".full")).read_bytes()
        path.write_bytes(data[: int(fraction * len(data))])

    return make


@pytest.mark.parametrize(
    "make",
    [
        lambda p: p.write_bytes(b""),
        lambda p: p.write_bytes(np.random.default_rng(5).bytes(4096)),
        lambda p: p.write_text("x_train,y_train\n1,2\n", encoding="utf-8"),
        lambda p: p.mkdir(),
        lambda p: None,
        *(_truncated(frac) for frac in (0.001, 0.01, 0.3, 0.7, 0.999)),
    ],
    ids=[
        "empty",
        "random-bytes",
        "text",
        "directory",
        "missing",
        "cut-0.1%",
        "cut-1%",
        "cut-30%",
        "cut-70%",
        "cut-99.9%",
    ],
)
def test_unreadable_inputs(tmp_path: Path, make: Callable[[Path], Any]) -> None:
    """§3.1: what is not an HDF5 file gives E100 and readable=False, never an exception."""
    # SPEC §3.1-R1; SPEC §9.1.2-R3: E100 alone
    path = tmp_path / "input.h5"
    make(path)
    report = validate(path, timeout=LIMIT)  # a damaged file may make HDF5 loop: child process (§10.3)
    assert report.codes == ["E100"]
    assert (report.readable, report.valid, report.format_version) == (False, False, None)


def test_not_an_h5ml_file(tmp_path: Path) -> None:
    """§4.1: a plain HDF5 file (the tutorial's x_train/y_train) is E102 and nothing else (SPEC §9.1.2-R3)."""
    report = validate(not_h5ml(tmp_path / "plain.h5"))
    assert report.codes == ["E102"]
    assert report.readable


def test_user_block_is_searched(tmp_path: Path) -> None:
    """§3.1: the superblock may follow a user block (offset 512, 1024, ...); its version byte is checked there."""
    # SPEC §3.1-R2: superblock version 4 is E109
    path = tmp_path / "ub.h5"
    with h5py.File(path, "w", userblock_size=1024, libver=spec.LIBVER_BOUNDS) as f:
        f["x"] = np.arange(3)
    assert validate(path).codes == ["E102"]
    with open(path, "r+b") as fh:
        fh.seek(1024 + 8)
        fh.write(bytes([4]))
    report = validate(path)
    assert report.codes == ["E109", "E100"]
    # no HDF5 opens it: the advice is that of a damaged byte, not "rewrite with libver bounds" alone
    (e109,) = [i for i in report.issues if i.code == "E109"]
    assert "cannot open it either, so the superblock is most likely damaged (restore the file from a good copy)" in (
        e109.message
    )


def _socket(path: Path) -> None:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(str(path))
    sock.close()  # the socket file stays


@pytest.mark.parametrize(
    ("make", "words"),
    [
        (lambda p: os.mkfifo(p), "named pipe (FIFO), not a regular file"),
        (_socket, "a socket, not a regular file"),
        (lambda p: p.symlink_to(os.devnull), "a character device, not a regular file"),
        (lambda p: (os.mkfifo(p.with_suffix(".pipe")), p.symlink_to(p.with_suffix(".pipe"))), "named pipe (FIFO)"),
        (lambda p: (p.symlink_to(p.with_suffix(".b")), p.with_suffix(".b").symlink_to(p)), "loop of links"),
        (lambda p: p.symlink_to(p.with_suffix(".nothing")), "does not exist"),
        (lambda p: p.mkdir(), "a directory, not a regular file"),
    ],
    ids=["fifo", "socket", "char-device", "link-to-fifo", "link-loop", "dangling-link", "directory"],
)
def test_non_regular_files_are_e100(tmp_path: Path, make: Callable[[Path], Any], words: str) -> None:
    """§3.1: what is not a regular file (after following links) is E100 at once, before HDF5 or open(2) sees it.

    A FIFO would block the open forever: the time limit is the guard of this test (it would give E101),
    not the behaviour checked.
    """
    path = tmp_path / "input.h5"
    make(path)
    report = validate(path, timeout=LIMIT)
    assert report.codes == ["E100"]
    assert words in report.issues[0].message
    assert (report.readable, report.valid) == (False, False)


def test_deep_time_limit_keeps_the_metadata_issues(tmp_path: Path) -> None:
    """§10.3, §9.3: a deep validation stopped by its time limit keeps every metadata issue, then E101.

    The file's slow split holds 16 GiB of gzip-compressed zeros in a 17 MB file: its metadata is checked in
    a moment, its data cannot be inflated and hashed within the 5 s limit. The report is the metadata
    report (a W202 and an E117 here) followed by E101, and counts as unreadable (the schema ties
    readable = false to E101).
    """

    def mutate(f: h5py.File) -> None:
        add_slow_split(f)
        write_attr(f["train/image"], "role", "label")

    path = _edited(tmp_path, mutate, "slow.h5")
    shallow = validate(path, timeout=LIMIT)
    assert _codes_at(shallow) == {("W202", "/big/x"), ("E117", "/train/image")}
    report = validate(path, deep=True, timeout=5)
    assert report.issues[:-1] == shallow.issues
    last = report.issues[-1]
    assert (last.code, last.path) == ("E101", "/")
    assert "did not finish within 5 s" in last.message
    assert "metadata checks had finished" in last.message
    assert (report.readable, report.valid, report.format_version) == (False, False, "1.2")
    doc = Report((report,)).to_json()
    assert [e.message for e in schemas.validator_for("report").iter_errors(doc)] == []


# --------------------------------------------------------------------------- API and report format


def test_iterator_and_validate_agree(tmp_path: Path) -> None:
    """§9: validate() collects exactly what iter_issues() yields, in process and in a child process."""
    for index, case in enumerate(CASES):
        path = tmp_path / f"{index}.h5"
        case.build(path)
        issues = tuple(iter_issues(path, deep=case.deep))
        assert issues == validate(path, deep=case.deep).issues
        if case.code in ("E100", "E116", "E160"):
            assert issues == validate(path, deep=case.deep, timeout=LIMIT).issues


def test_report_json_follows_the_schema(tmp_path: Path) -> None:
    """§9.3: Report.to_json() validates against schema/h5ml-report-1.0.schema.json, with right counts (SPEC §9.3-R1)."""
    good = minimal_valid(tmp_path / "good.h5")
    bad = _edited(tmp_path, lambda f: f["train"].attrs.__delitem__("num_samples"), "bad.h5")
    unreadable = tmp_path / "empty.h5"
    unreadable.write_bytes(b"")
    warned = _edited(tmp_path, lambda f: f.attrs.__delitem__("license"), "warned.h5")
    paths = [good, bad, unreadable, warned]
    report = validate_many(paths)
    doc = report.to_json()
    errors = [e.message for e in schemas.validator_for("report").iter_errors(doc)]
    assert errors == []
    assert doc["summary"] == {"files": 4, "valid": 2, "invalid": 2, "unreadable": 1}
    assert [f["path"] for f in doc["files"]] == [str(p) for p in paths]
    assert [f["valid"] for f in doc["files"]] == [True, False, False, True]
    assert [f["valid_strict"] for f in doc["files"]] == [True, False, False, False]
    assert doc["tool"]["name"] == "h5ml"
    assert (report.valid, report.valid_strict) == (False, False)
    parallel = validate_many(paths, jobs=2, timeout=LIMIT)
    assert parallel.to_json() == doc
    strict = report.to_json(strict=True)  # §9.3: "valid" in the validator's mode
    assert [f["valid"] for f in strict["files"]] == [True, False, False, False]
    assert strict["summary"] == {"files": 4, "valid": 1, "invalid": 3, "unreadable": 1}


def test_issue_json_and_text() -> None:
    """§9.3: an issue maps to the six fields of the report format; its text names code, path and clause."""
    issue = Issue.of("E106", "/", "no marker")
    assert issue.to_json() == {
        "code": "E106",
        "name": "incomplete",
        "severity": "error",
        "path": "/",
        "message": "no marker",
        "clause": "§4.4",
    }
    assert str(issue) == "E106 error /: no marker (§4.4)"


def test_arguments_are_checked(tmp_path: Path) -> None:
    """A negative time limit or a job count below 1 is refused."""
    path = minimal_valid(tmp_path / "ok.h5")
    with pytest.raises(ValueError, match="timeout"):
        validate(path, timeout=-1)
    with pytest.raises(ValueError, match="jobs"):
        validate_many([path], jobs=0)
    assert Report().to_json()["summary"] == {"files": 0, "valid": 0, "invalid": 0, "unreadable": 0}


def test_child_crash_is_e101(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """§10.3: when the child process dies (the HDF5 library crashed), the issues it sent are kept, then E101."""
    import h5ml.validator.runner

    found = Issue.of("W203", "/", "no license")

    def crash(*args: Any, **kwargs: Any) -> Any:
        yield found, "1.0"
        raise ChildDiedError("the child process was killed by signal SIGSEGV", exitcode=-11)

    monkeypatch.setattr(h5ml.validator.runner, "stream_with_timeout", crash)
    report = validate(minimal_valid(tmp_path / "ok.h5"), timeout=LIMIT)
    assert report.codes == ["W203", "E101"]
    assert report.issues[0] == found
    assert "SIGSEGV" in report.issues[1].message
    assert "the 1 issue(s) before this one" in report.issues[1].message
    assert (report.readable, report.format_version) == (False, "1.0")


def test_names_that_are_not_utf8(tmp_path: Path) -> None:
    """§5.1.1, §3.4: split, feature and attribute names that are not UTF-8 are reported, never a crash."""

    def mutate(f: h5py.File) -> None:
        f.move("test", b"te\xffst")
        f["train"].move("image", b"im\xfeage")
        f["train/label"].attrs.create(b"n\xffte", 1)

    report = validate(_edited(tmp_path, mutate))
    assert _codes_at(report) == {
        ("E120", "/te\ufffdst"),
        ("E120", "/train/im\ufffdage"),
        ("I300", "/train/label"),
    }


@pytest.mark.slow
def test_damaged_files_never_raise(tmp_path: Path) -> None:
    """§10.3, §9.3: files with random bytes overwritten (seeded) give a schema-valid report, whatever they hold.

    SPEC §10.3-R1: what HDF5 cannot read is E101 (or E100), never an exception; SPEC §9.3-R1: the report.
    """
    base = minimal_valid(tmp_path / "base.h5").read_bytes()
    paths = []
    for seed in range(66, 78):
        rng = np.random.default_rng(seed)
        data = bytearray(base)
        for pos in rng.integers(0, len(data), size=int(rng.integers(1, 8))):
            data[pos] = int(rng.integers(0, 256))
        path = tmp_path / f"damaged-{seed}.h5"
        path.write_bytes(bytes(data))
        paths.append(path)
    report = validate_many(paths, deep=True, timeout=30, jobs=2)
    assert [e.message for e in schemas.validator_for("report").iter_errors(report.to_json())] == []
    assert [f.path for f in report.files] == [str(p) for p in paths]
    assert not report.valid  # a dozen damaged files: at least one damage is found


# --------------------------------------------------------------------------- objects under several names (§3.6)


def _damage_train(f: h5py.File) -> None:
    """E130 at /train/image, E117 at /train/label, and (deep) E142 and E160 at /train/flag."""
    del f["train/image"].attrs["encoding"]
    write_attr(f["train/label"], "role", "label")
    flag = f["train/flag"]
    data = flag[...]
    data[1] = 7
    flag[...] = data


def test_split_aliased_under_a_reserved_name_is_checked_in_full(tmp_path: Path) -> None:
    """§3.6, §5.4: /_h5ml hard-linked to the group of /train hides nothing: /train is checked under its own name.

    HDF5's link visit meets each object once, and '_h5ml' sorts before 'train': a walk that records only
    the links it visits would see no member of /train. The aliased file gives the issues of the same file
    without the alias, plus the I301 of the reserved name, shallow and deep.
    """
    plain = _edited(tmp_path, _damage_train, "plain.h5")

    def aliased(f: h5py.File) -> None:
        _damage_train(f)
        f["_h5ml"] = f["train"]

    both = _edited(tmp_path, aliased, "aliased.h5")
    for deep in (False, True):
        expected = validate(plain, deep=deep).issues
        report = validate(both, deep=deep)
        assert report.issues[0].code == "I301" and report.issues[0].path == "/_h5ml"
        assert report.issues[1:] == expected
    assert {("E130", "/train/image"), ("E117", "/train/label")} <= _codes_at(validate(both))
    assert {("E142", "/train/flag"), ("E160", "/train/flag")} <= _codes_at(validate(both, deep=True))


def test_storage_issues_take_the_feature_path_over_a_reserved_alias(tmp_path: Path) -> None:
    """§3.2, §3.6: an object reachable as /train/image and as /_stuff (walked first, by name order and depth)
    is reported under its feature path; the reserved name itself is I301."""

    def mutate(f: h5py.File) -> None:
        f["train/image"].attrs.create("pair", np.zeros((), dtype=[("a", "<i4"), ("b", "<i4")]))
        f["_stuff"] = f["train/image"]

    report = validate(_edited(tmp_path, mutate))
    assert _codes_at(report) == {("I301", "/_stuff"), ("E113", "/train/image"), ("I300", "/train/image")}


def test_split_under_a_second_name_counts_in_the_file_fingerprint(tmp_path: Path) -> None:
    """§3.6, §8.3: /again hard-linked to /train is a split of its own: its lines belong in the file fingerprint.

    The stored fingerprint was computed without them (E160 at '/', deep only); once it includes them the
    file is valid, every feature of /again being checked and fingerprinted under its own path.
    """
    path = _edited(tmp_path, lambda f: f.__setitem__("again", f["train"]))
    assert validate(path).issues == ()
    assert _codes_at(validate(path, deep=True)) == {("E160", "/")}
    with h5py.File(path, "r+") as f:
        lines = {(split, name): read_attr(f[split][name], "fingerprint") for split in f for name in f[split]}
        assert {split for split, _ in lines} == {"again", "test", "train"}
        write_attr(f, "fingerprint", file_fingerprint(lines))
    assert validate(path, deep=True).issues == ()


@pytest.mark.parametrize(
    ("parent", "name", "target", "checked"),
    [
        ("/", "linked", "/test", False),
        ("/", "_linked", "/test", True),
        ("/train", "linked", "/train/image", False),
        ("/train", "_linked", "/train/image", True),
    ],
    ids=["root", "root-reserved", "split", "split-reserved"],
)
def test_soft_links_and_the_file_fingerprint(
    tmp_path: Path, parent: str, name: str, target: str, checked: bool
) -> None:
    """§3.6, §8.3: a soft link where a split or feature would be hides data the file fingerprint may cover, at
    the root as in a split: the fingerprint is then not checked; under a reserved name it hides nothing."""
    # SPEC §3.6-R2

    def mutate(f: h5py.File) -> None:
        f[parent][name] = h5py.SoftLink(target)
        write_attr(f, "fingerprint", "sha256:" + "0" * 64)

    report = validate(_edited(tmp_path, mutate), deep=True)
    link = f"{parent.rstrip('/')}/{name}"
    assert _codes_at(report) == {("E115", link)} | ({("E160", "/")} if checked else set())


# --------------------------------------------------------------------------- root arrays (§3.7, §4.2)


@pytest.mark.parametrize(
    ("name", "value", "words"),
    [
        ("must_understand", np.zeros((0, 0), dtype=object), "shape (0, 0)"),
        ("must_understand", np.array([], np.int64), "holds int64"),
        ("must_understand", h5py.Empty(h5py.string_dtype()), "null dataspace"),
        ("keywords", np.array([["a", "b"]], dtype=object), "shape (1, 2)"),
        ("required_filters", np.array([], np.float64), "holds float64"),
        ("required_filters", np.array(["32000"], dtype=object), "holds a string"),
    ],
    ids=["2d-empty", "int-empty", "null", "keywords-2d", "filters-float", "filters-string"],
)
def test_array_root_attributes(tmp_path: Path, name: str, value: Any, words: str) -> None:
    """§3.7, §4.2 (SPEC §4.2-R2): must_understand, keywords and required_filters are 1-D arrays of their element type (E107),
    which the JSON mapping alone cannot see (an empty 2-D or integer array maps to [])."""
    # SPEC §3.7-R2; the null case: SPEC §3.7-R3 (E107 at the root)

    def mutate(f: h5py.File) -> None:
        if name in f.attrs:
            del f.attrs[name]
        if isinstance(value, np.ndarray) and value.dtype == object:
            f.attrs.create(name, value, dtype=h5py.string_dtype())
        else:
            f.attrs[name] = value

    report = validate(_edited(tmp_path, mutate))
    errors = [i for i in report.issues if i.severity is Severity.ERROR]
    assert [(i.code, i.path) for i in errors] == [("E107", "/")]
    assert repr(name) in errors[0].message and words in errors[0].message


def test_array_root_attributes_of_other_widths_are_valid(tmp_path: Path) -> None:
    """§4.2: required_filters may be any integer type of §3.2 (here uint16) and must_understand may be empty."""

    def mutate(f: h5py.File) -> None:
        f.attrs["required_filters"] = np.array([32000], np.uint16)
        f.attrs.create("must_understand", np.array([], dtype=object), dtype=h5py.string_dtype())

    assert validate(_edited(tmp_path, mutate)).issues == ()


# --------------------------------------------------------------------------- structure first, then data (§6, §10.4)


def _short_shapes(f: h5py.File) -> None:
    replace_dataset(f, "train/volume/shapes", data=f["train/volume/shapes"][:-1])


def _long_offsets(f: h5py.File) -> None:
    offsets = f["train/volume/offsets"][...]
    replace_dataset(f, "train/volume/offsets", data=np.concatenate((offsets, offsets[-1:])))


def _short_shapes_no_count(f: h5py.File) -> None:
    _short_shapes(f)
    del f["train"].attrs["num_samples"]


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        (_short_shapes, {("E122", "/train/volume/shapes")}),
        (_long_offsets, {("E122", "/train/volume/offsets")}),
        (_short_shapes_no_count, {("E121", "/train"), ("E133", "/train/volume/shapes")}),
    ],
    ids=["shapes-N-1", "offsets-N+2", "shapes-N-1-without-num-samples"],
)
def test_data_of_inconsistent_features_is_not_read(
    tmp_path: Path, mutate: Callable[[h5py.File], Any], expected: set[tuple[str, str]]
) -> None:
    """§5.3, §6.3: a ragged feature whose components disagree on the number of samples is reported by the
    metadata checks (E122, or E133 when num_samples is missing), and a deep validation reads none of its data:
    it reports the same issues, never an exception."""
    path = _edited(tmp_path, mutate)
    shallow = validate(path)
    assert _codes_at(shallow) == expected
    assert validate(path, deep=True).issues == shallow.issues


def test_declared_data_that_was_never_written(tmp_path: Path) -> None:
    """§10.4: a few-kB file may declare 10^10 class names, 10^11 bytes or 10^12 rows that were never written.

    Nothing is allocated for them: each is E146 (SPEC §3.5.1-R2, 1.1; 1.0 gave E134 for the class names and E145
    in deep validation for sample data), found from the chunk index in shallow and deep validation alike,
    without reading anything; a feature with a wrong sample count is never read; no MemoryError.
    """
    strings = h5py.string_dtype()

    def mutate(f: h5py.File) -> None:
        del f["test/label/class_names"]
        f["test/label"].create_dataset("class_names", shape=(10**10,), dtype=strings, chunks=(1024,))
        blob = f["test/blob"]
        del blob["values"], blob["offsets"]
        blob.create_dataset("values", shape=(10**11,), dtype=np.uint8, chunks=(1 << 20,))
        blob.create_dataset("offsets", data=np.array([0, 10**11, 10**11, 10**11], np.int64), chunks=(4,))
        huge = f.create_group("huge")
        write_attr(huge, "num_samples", 10**12)
        write_attr(huge, "shuffle_seed", 1)
        x = huge.create_dataset("x", shape=(10**12, 3), dtype=np.float32, chunks=(1 << 14, 3))
        write_attr(x, "encoding", "dense")
        write_attr(x, "encoding_version", "1.0")
        replace_dataset(f, "train/image", shape=(10**12, 4, 3), dtype=np.float32, chunks=(1024, 4, 3))

    path = _edited(tmp_path, mutate)
    shallow = validate(path, timeout=LIMIT)
    assert _codes_at(shallow) == {
        ("E146", "/test/label/class_names"),
        ("E146", "/test/blob/values"),
        ("E146", "/huge/x"),
        ("E146", "/train/image"),
        ("W202", "/huge/x"),
        ("E122", "/train/image"),
    }
    (names,) = [i for i in shallow.issues if i.code == "E146" and i.path == "/test/label/class_names"]
    assert "9765625 chunks" in names.message and "only 0 were ever written" in names.message
    assert "(the first missing one starts at element (0,))" in names.message
    deep = validate(path, deep=True, timeout=LIMIT)
    assert deep.issues == shallow.issues


def test_rows_and_samples_over_the_read_bound_are_not_read(tmp_path: Path) -> None:
    """§10.4: a dense row or a ragged sample over 1 GiB is never read whole (no MemoryError): the feature's
    data is not checked and its fingerprint not recomputed (the wrong stored fingerprints give no E160), and
    the file fingerprint is then not checked either."""
    path = _edited(tmp_path, add_large_split)
    assert validate(path, timeout=LIMIT).issues == ()
    assert validate(path, deep=True, timeout=LIMIT).issues == ()


def test_unwritten_storage_compares_stored_bytes_with_the_file(tmp_path: Path) -> None:
    """§10.4: uncompressed data cannot hold more bytes than its file; unallocated data is never written."""
    with h5py.File(tmp_path / "s.h5", "w") as f:
        written = f.create_dataset("written", data=np.zeros(1000, np.float64))
        empty = f.create_dataset("empty", shape=(1000,), dtype=np.float64)
        nothing = f.create_dataset("nothing", shape=(0,), dtype=np.float64)
        assert unwritten_storage(written, 1 << 20) is None
        assert unwritten_storage(nothing, 1 << 20) is None
        assert "never written" in (unwritten_storage(empty, 1 << 20) or "")
        assert "declares 8000 bytes of uncompressed data but the file holds only 100 bytes" in (
            unwritten_storage(written, 100) or ""
        )


# --------------------------------------------------------------------------- opening (§3.1, §10.3, §10.4.1)


def test_a_file_open_elsewhere_is_validated(tmp_path: Path) -> None:
    """§10.4.1: a file this process has open (h5ml.open, or h5py without locking) is validated; so is a complete
    file that another process holds open for writing (SPEC §10.4.1-S3: read past the lock, as the reader does)."""
    import h5ml

    path = minimal_valid(tmp_path / "ok.h5")
    with h5ml.open(path) as dataset:
        assert dataset.h5file.id.valid
        assert validate(path).issues == ()
    with h5py.File(path, "r", locking=False):
        assert validate(path).issues == ()
    code = "import h5py, sys; f = h5py.File(sys.argv[1], 'r+'); print('open', flush=True); sys.stdin.read()"
    holder = subprocess.Popen(
        [sys.executable, "-c", code, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "open\n"
        with pytest.raises(OSError, match="unable to lock file"):
            h5py.File(path, "r")  # the lock is real: HDF5's default open fails on it
        report = validate(path, timeout=LIMIT)
        assert report.issues == () and report.readable and report.valid
    finally:
        assert holder.stdin is not None and holder.stdout is not None
        holder.stdin.close()
        holder.wait(LIMIT)
        holder.stdout.close()


def test_hdf5_refusal_says_what_hdf5_said(tmp_path: Path) -> None:
    """§3.1: a file with the HDF5 signature that HDF5 refuses is E100 with HDF5's own words."""
    data = minimal_valid(tmp_path / "full.h5").read_bytes()
    cut = tmp_path / "cut.h5"
    cut.write_bytes(data[: len(data) * 7 // 10])
    report = validate(cut, timeout=LIMIT)
    assert report.codes == ["E100"]
    message = report.issues[0].message
    assert message.startswith(f"HDF5 cannot open {cut}: ")
    assert "truncated file: eof" in message  # what HDF5 said
    assert "locked" not in message


def test_validate_from_a_script_read_on_stdin(tmp_path: Path) -> None:
    """§10.3: validate(..., timeout=...) works when the calling program was read from standard input
    (``python -``): the child process never imports the caller's __main__."""
    path = minimal_valid(tmp_path / "ok.h5")
    script = f"import json, h5ml\nprint(json.dumps(h5ml.validate({str(path)!r}, timeout={LIMIT}).codes))\n"
    done = subprocess.run(
        [sys.executable, "-"], input=script, capture_output=True, text=True, timeout=2 * LIMIT, check=False
    )
    assert (done.returncode, done.stdout) == (0, "[]\n"), done.stderr


# --------------------------------------------------------------------------- messages and report order (§8.1, §9.3)


def test_messages_of_missing_format_and_shuffle_seed(tmp_path: Path) -> None:
    """§4.1, §7.6: E102 says that 'format' is missing; I303 names both ways to record a shuffle seed."""

    def mutate(f: h5py.File) -> None:
        del f.attrs["format"]

    (issue,) = validate(_edited(tmp_path, mutate, "noformat.h5")).issues
    assert issue.code == "E102" and "the root attribute 'format' is missing" in issue.message
    assert "None" not in issue.message
    (issue,) = validate(_edited(tmp_path, lambda f: f["train"].attrs.__delitem__("shuffle_seed"))).issues
    assert issue.code == "I303"
    assert "h5ml.write(..., shuffle=True, seed=...)" in issue.message
    assert "Writer.add_split(name, shuffle_seed=...)" in issue.message


@pytest.mark.parametrize("obj", ["/", "/train/image"])
def test_fingerprint_of_the_wrong_shape_is_only_e116(tmp_path: Path, obj: str) -> None:
    """§3.7, §8.1: a fingerprint stored as an array is E116, and not also W202 ("carries no fingerprint")."""

    def mutate(f: h5py.File) -> None:
        fp = read_attr(f[obj], "fingerprint")
        f[obj].attrs.create("fingerprint", np.array([fp, fp], dtype=object), dtype=h5py.string_dtype())

    report = validate(_edited(tmp_path, mutate))
    assert [(i.code, i.path) for i in report.issues] == [("E116", obj)]


def test_issue_order_does_not_depend_on_hash_seeds(tmp_path: Path) -> None:
    """§9.3: the same files give the same report, issue for issue, in processes with different hash seeds."""
    paths = []
    for index, case in enumerate(CASES):
        path = tmp_path / f"{index}.h5"
        case.build(path)
        paths.append(str(path))
    paths.append(str(_edited(tmp_path, lambda f: (_damage_train(f), f.__setitem__("_h5ml", f["train"])), "a.h5")))
    code = (
        "import json, sys\n"
        "from h5ml.validator.runner import validate_many\n"
        "print(json.dumps(validate_many(sys.argv[1:], deep=True).to_json()))\n"
    )
    outputs = [
        subprocess.run(
            [sys.executable, "-c", code, *paths],
            env={**os.environ, "PYTHONHASHSEED": seed},
            capture_output=True,
            text=True,
            timeout=10 * LIMIT,
            check=True,
        ).stdout
        for seed in ("0", "4242")
    ]
    assert outputs[0] == outputs[1]
    doc = json.loads(outputs[0])
    assert doc["summary"]["files"] == len(paths)
    assert sum(len(f["issues"]) for f in doc["files"]) > len(paths)


def test_a_damaged_group_is_one_e101_however_many_checks_meet_it() -> None:
    """§10.3: the split whose local heap is damaged fails in the layout and the storage checks: E101 once.

    SPEC §10.3-R1: a group HDF5 cannot read is E101, and the file counts as unreadable.
    """
    fixture = Path(__file__).parent.parent / "conformance_tests" / "fixtures" / "e101-damaged-group.h5"
    report = validate(fixture, deep=True)
    assert [(i.code, i.path) for i in report.issues] == [("E101", "/train-b")]
    assert not report.readable
    # what was wrong, where, and what to do (found by a new-user helper: the advice was missing)
    (issue,) = report.issues
    assert issue.message.startswith("the HDF5 library failed while ")
    assert issue.message.endswith("; the file is damaged: restore it from a good copy, or write it again")
