"""The SPEC 1.1 decisions of issue 13, on real files: space-padded strings (§3.4, §8.2.2), real-valued
statistics and sample_rate (§6.1, §6.7), a leap second in ``created`` (§4.2), W200 and one chunk for the
whole dataset (§7.2), null-dataspace attributes (§3.7, §4.6, §4.7), compact layout (§7.4), ``media_type`` on
bytes features only (§6.1), an empty or whitespace-only description (§4.2, W204), core filters in
``required_filters`` (§3.5).

Each test builds its file with the reference writer and changes one thing with h5py, or reads the
conformance fixture of the decision, and checks the validator, the reader and ``h5ml dump`` together.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import pytest
from h5py import h5a, h5d, h5s, h5t

import h5ml
from _files import codes_at, run_cli
from h5ml.model.fingerprint import fingerprint_feature
from h5ml.validator.runner import validate

FIXTURES = Path(__file__).resolve().parents[1] / "conformance_tests" / "fixtures"


def _fixed_string_type(length: int, pad: int) -> h5t.TypeID:
    tid = h5t.C_S1.copy()
    tid.set_size(length)
    tid.set_cset(h5t.CSET_UTF8)
    tid.set_strpad(pad)
    return tid


def _replace_with_fixed_strings(f: h5py.File, hdf5_path: str, stored: list[bytes], pad: int) -> None:
    """Replace a string dataset by fixed-length strings holding exactly the bytes ``stored`` (attributes kept)."""
    old = f[hdf5_path]
    attrs = {k: old.attrs[k] for k in old.attrs}
    del f[hdf5_path]
    length = max(len(s) for s in stored)
    tid = _fixed_string_type(length, pad)
    parent, name = hdf5_path.rsplit("/", 1)
    dsid = h5d.create(f[parent].id, name.encode(), tid, h5s.create_simple((len(stored),)))
    dsid.write(h5s.ALL, h5s.ALL, np.array(stored, dtype=f"S{length}"), mtype=tid)
    for key, value in attrs.items():
        f[hdf5_path].attrs[key] = value


def _strings_file(path: Path, words: list[str]) -> Path:
    meta = {"name": "s", "license": "CC0-1.0", "description": "d"}
    h5ml.write(path, {"train": {"text": words}}, metadata=meta, checksums=False)  # replaced: no checksums (§8.4)
    return path


# --------------------------------------------------------------------------- §3.4, §8.2.2: space padding


def test_spacepad_fixture_decodes_without_its_padding() -> None:
    """§3.4: SPACEPAD strings lose their trailing U+0020 padding and nothing else, in samples and attributes."""
    path = FIXTURES / "valid-spacepad-strings.h5"
    with h5py.File(path) as f:  # the fixture really is space-padded
        assert f["train/text"].id.get_type().get_strpad() == h5t.STR_SPACEPAD
        assert f.attrs.get_id("description").get_type().get_strpad() == h5t.STR_SPACEPAD
        raw = np.empty(5, dtype="S8")
        f["train/text"].id.read(h5s.ALL, h5s.ALL, raw, mtype=f["train/text"].id.get_type())
        assert raw.tolist()[:3] == [b"ab      ", b"c d     ", b"        "]  # the stored bytes hold the spaces
    expected = ["ab", "c d", "", "héllo", "full8chr"]
    with h5ml.open(path) as ds:
        assert list(ds["train"]["text"][:]) == expected
        assert ds.metadata.description == "padded with spaces"
    code, out, _ = run_cli("dump", str(path), "--format", "json")
    doc = json.loads(out)
    assert code == 0
    assert doc["metadata"]["description"] == "padded with spaces"
    assert doc["splits"]["train"]["features"]["text"]["values"] == expected


def test_spacepad_fingerprint_hashes_the_decoded_text(tmp_path: Path) -> None:
    """§8.2.2: the fingerprint of a SPACEPAD string feature is that of its decoded text; one of the padded bytes
    is E160."""
    fixture = FIXTURES / "valid-spacepad-strings.h5"
    decoded = ["ab", "c d", "", "héllo", "full8chr"]
    with h5py.File(fixture) as f:
        assert f["train/text"].attrs["fingerprint"] == fingerprint_feature("string", decoded)
    report = validate(fixture, deep=True)
    assert report.valid and "E160" not in report.codes
    wrong = tmp_path / "padded-hash.h5"
    shutil.copy(fixture, wrong)
    with h5py.File(wrong, "r+") as f:
        f["train/text"].attrs["fingerprint"] = fingerprint_feature("string", [w.ljust(8) for w in decoded])
    assert ("E160", "/train/text") in codes_at(validate(wrong, deep=True))


@pytest.mark.parametrize(
    ("pad", "stored", "decoded"),
    [
        (h5t.STR_SPACEPAD, [b"ab    ", b"c d   ", b"      "], ["ab", "c d", ""]),
        (h5t.STR_NULLPAD, [b"ab  ", b"c d", b" "], ["ab  ", "c d", " "]),  # spaces are text under NUL padding
        (h5t.STR_NULLTERM, [b"ab \x00", b"c d\x00", b"\x00"], ["ab ", "c d", ""]),
    ],
    ids=["spacepad", "nullpad-keeps-spaces", "nullterm-keeps-spaces"],
)
def test_only_the_declared_padding_is_removed(
    tmp_path: Path, pad: int, stored: list[bytes], decoded: list[str]
) -> None:
    """§3.4: a reader removes the padding the datatype declares, and only that: the file written with the decoded
    text as variable-length strings keeps its fingerprints, valid in deep mode, and reads back the same text."""
    path = _strings_file(tmp_path / "s.h5", decoded)
    with h5py.File(path, "r+") as f:
        _replace_with_fixed_strings(f, "/train/text", stored, pad)
    report = validate(path, deep=True)
    assert report.valid, [str(i) for i in report.issues]
    assert {c for c in report.codes if c.startswith("E")} == set() and "W205" in report.codes
    with h5ml.open(path) as ds:
        assert list(ds["train"]["text"][:]) == decoded
    code, out, _ = run_cli("dump", str(path), "--format", "json")
    assert code == 0 and json.loads(out)["splits"]["train"]["features"]["text"]["values"] == decoded


def test_spacepad_root_attribute_reads_as_text(tmp_path: Path) -> None:
    """§3.4, §4.6: a SPACEPAD root attribute maps to its text without the spaces."""
    path = _strings_file(tmp_path / "s.h5", ["a"])
    with h5py.File(path, "r+") as f:
        del f.attrs["license"]
        tid = _fixed_string_type(12, h5t.STR_SPACEPAD)
        aid = h5a.create(f.id, b"license", tid, h5s.create(h5s.SCALAR))
        aid.write(np.array(b"CC0-1.0     ", dtype="S12"), mtype=tid)
    report = validate(path)
    assert report.valid and ("W205", "/") in codes_at(report)
    with h5ml.open(path) as ds:
        assert ds.metadata.license == "CC0-1.0"


# --------------------------------------------------------------------------- §6.1, §6.7: real numbers


def test_float32_statistics_and_sample_rate_are_valid_and_widened() -> None:
    """§6.7: binary32 statistics and sample_rate (either byte order) are valid; readers widen to binary64."""
    path = FIXTURES / "valid-float32-statistics.h5"
    with h5py.File(path) as f:
        attrs = f["train/x"].attrs
        for name in ("sample_rate", "stats_min", "stats_max", "stats_mean", "stats_std"):
            tid = attrs.get_id(name).get_type()
            assert (tid.get_class(), tid.get_size()) == (h5t.FLOAT, 4), name
        assert attrs.get_id("stats_max").get_type().get_order() == h5t.ORDER_BE
    report = validate(path, deep=True)
    assert report.valid and "E117" not in report.codes
    with h5ml.open(path) as ds:
        rate = ds["train"]["x"].sample_rate
        assert isinstance(rate, float) and rate == 22050.0


@pytest.mark.parametrize(
    ("value", "valid"),
    [
        (np.float32(0.1), True),
        (np.dtype(">f4").type(0.1), True),
        (np.float64(0.1), True),
        (np.int32(3), True),  # accepted since 1.0 (§1.6): integers stay valid
        (np.float16(0.5), True),
        (np.bytes_(b"low"), False),
    ],
    ids=["f4", "f4-big-endian", "f8", "i4-from-1.0", "f2-from-1.0", "string"],
)
def test_one_rule_for_statistics_and_sample_rate(tmp_path: Path, value: Any, valid: bool) -> None:
    """§6.7: the same types are accepted for stats_min and for sample_rate (E117 otherwise)."""
    for name in ("stats_min", "sample_rate"):
        path = tmp_path / f"{name}.h5"
        h5ml.write(path, {"train": {"x": np.arange(4, dtype=np.float32)}}, metadata={"name": "r"})
        with h5py.File(path, "r+") as f:
            f["train/x"].attrs[name] = value
        report = validate(path)
        assert (("E117", "/train/x") not in codes_at(report)) is valid, (name, [str(i) for i in report.issues])
    if valid:
        with h5ml.open(tmp_path / "sample_rate.h5") as ds:
            assert ds["train"]["x"].sample_rate == float(value)  # binary32 0.1 -> 0.10000000149011612


# --------------------------------------------------------------------------- §4.2: leap second


@pytest.mark.parametrize(
    ("created", "valid"),
    [
        ("2016-12-31T23:59:60Z", True),
        ("2016-12-31T23:59:60.5Z", True),
        ("2016-12-31T23:58:60Z", False),  # 60 only in 23:59:60
        ("2016-12-31T12:59:60Z", False),
        ("2016-12-31T23:59:61Z", False),
        ("2016-12-31T24:00:00Z", False),
    ],
)
def test_created_allows_the_leap_second_only_at_23_59(tmp_path: Path, created: str, valid: bool) -> None:
    """§4.2: `created` may be 23:59:60 (RFC 3339), and only that second 60 (E107 otherwise)."""
    path = _strings_file(tmp_path / "t.h5", ["a"])
    with h5py.File(path, "r+") as f:
        f.attrs["created"] = created
    report = validate(path)
    assert report.valid is valid, [str(i) for i in report.issues]
    assert (("E107", "/") in codes_at(report)) is not valid
    if valid:
        with h5ml.open(path) as ds:
            assert ds.metadata.created == created
            stamp = ds.metadata.created_at
            assert (stamp.year, stamp.hour, stamp.minute, stamp.second, stamp.microsecond) == (2016, 23, 59, 59, 999999)


def test_leap_second_fixture_is_valid() -> None:
    report = validate(FIXTURES / "valid-created-leap-second.h5", deep=True)
    assert report.valid and "E107" not in report.codes


# --------------------------------------------------------------------------- §7.2: W200


@pytest.mark.parametrize(
    ("n", "rows", "warned"),
    [(6, 6, False), (5, 6, False), (12, 6, True), (7, 3, True), (12, 4, False)],
    ids=["one-chunk-of-n", "chunk-above-n", "two-chunks-of-6", "three-chunks-of-3", "power-of-two"],
)
def test_w200_only_when_the_dataset_needs_more_than_one_chunk(tmp_path: Path, n: int, rows: int, warned: bool) -> None:
    """§7.2: W200 for rows per chunk that are not a power of two, unless one chunk holds every row (c0 >= n).

    SPEC §7.2-R1: no W200 for c0 = n nor c0 > n.
    """
    path = tmp_path / "c.h5"
    x = np.arange(n * 4, dtype=np.float32).reshape(n, 4)
    meta = {"name": "c", "license": "CC0-1.0", "description": "d"}
    h5ml.write(path, {"train": {"x": x}}, metadata=meta, checksums=False)  # replaced: no checksums (§8.4)
    with h5py.File(path, "r+") as f:
        attrs = {k: f["train/x"].attrs[k] for k in f["train/x"].attrs}
        del f["train/x"]
        f["train"].create_dataset("x", data=x, chunks=(rows, 4), maxshape=(None, 4))
        for key, value in attrs.items():
            f["train/x"].attrs[key] = value
    report = validate(path, deep=True)
    assert report.valid
    assert (("W200", "/train/x") in codes_at(report)) is warned


def test_one_chunk_fixture_has_no_w200() -> None:
    report = validate(FIXTURES / "valid-one-chunk-whole-dataset.h5", deep=True)
    assert report.valid and "W200" not in report.codes


# --------------------------------------------------------------------------- §3.7, §4.6, §4.7: null dataspaces


def test_null_dataspace_on_a_defined_feature_attribute_is_e117(tmp_path: Path) -> None:
    """§3.7: a defined attribute has a value: a null `description` of a feature is E117 (and E116, not scalar)."""
    # SPEC §3.7-R3 (E117 on a feature)
    path = _strings_file(tmp_path / "n.h5", ["a"])
    with h5py.File(path, "r+") as f:
        f["train/text"].attrs["description"] = h5py.Empty(h5py.string_dtype())
    report = validate(path)
    assert not report.valid
    assert {("E116", "/train/text"), ("E117", "/train/text")} <= codes_at(report)
    fixture = validate(FIXTURES / "e117-feature-description-null-dataspace.h5")
    assert ("E117", "/train/x") in codes_at(fixture) and not fixture.valid


def test_null_dataspace_on_a_defined_root_attribute_is_e107(tmp_path: Path) -> None:
    path = _strings_file(tmp_path / "n.h5", ["a"])
    with h5py.File(path, "r+") as f:
        f.attrs["description"] = h5py.Empty(h5py.string_dtype())
    report = validate(path)
    assert not report.valid and {("E116", "/"), ("E107", "/")} <= codes_at(report)


def test_null_dataspace_user_attribute_is_reported_and_maps_to_null(tmp_path: Path) -> None:
    """§4.6, §4.7: a user attribute with a null dataspace is I300, the file stays valid, the reader exposes None
    and `h5ml dump` prints null with exit status 0 (SPEC §4.7-R2; the samples decode as ever, SPEC §4.7-R1)."""
    path = _strings_file(tmp_path / "u.h5", ["a", "b"])
    with h5py.File(path, "r+") as f:
        f.attrs["acme:empty"] = h5py.Empty("f8")
        f["train/text"].attrs["acme:void"] = h5py.Empty("i4")
    report = validate(path, deep=True)
    assert report.valid, [str(i) for i in report.issues]
    assert {("I300", "/"), ("I300", "/train/text")} <= codes_at(report)
    with h5ml.open(path) as ds:
        assert ds.metadata.extra == {"acme:empty": None}
        assert "acme:empty" in ds.attrs and ds.attrs["acme:empty"] is None
        assert list(ds["train"]["text"][:]) == ["a", "b"]
    code, out, err = run_cli("dump", str(path), "--format", "json")
    assert code == 0, err
    assert json.loads(out)["metadata"]["acme:empty"] is None
    code, out, _ = run_cli("dump", str(FIXTURES / "valid-user-attribute-null-dataspace.h5"), "--format", "json")
    assert code == 0 and json.loads(out)["metadata"]["acme:empty"] is None


def test_reader_refuses_a_defined_attribute_with_a_null_dataspace(tmp_path: Path) -> None:
    """§3.7: a defined attribute without a value is not read as absent (a null logical_dtype would silently turn
    booleans into uint8): the reader refuses it, naming the attribute, while user attributes map to None."""
    path = tmp_path / "b.h5"
    h5ml.write(path, {"train": {"flag": np.array([True, False])}}, metadata={"name": "b"})
    with h5py.File(path, "r+") as f:
        f["train/flag"].attrs["role"] = h5py.Empty(h5py.string_dtype())
        f["train/flag"].attrs["acme:void"] = h5py.Empty("i4")
    with h5ml.open(path) as ds:
        feature = ds["train"]["flag"]
        assert feature.attrs["acme:void"] is None and feature.attrs["role"] is None
        with pytest.raises(h5ml.H5MLError, match="role"):
            _ = feature.role


# --------------------------------------------------------------------------- §7.4: compact layout


def _make_compact(f: h5py.File, hdf5_path: str) -> None:
    """Rewrite one dataset in HDF5 compact layout (``dcpl.set_layout(h5d.COMPACT)``), same values and attributes."""
    old = f[hdf5_path]
    data, attrs = old[()], {k: old.attrs[k] for k in old.attrs}
    tid = old.id.get_type()
    del f[hdf5_path]
    dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
    dcpl.set_layout(h5d.COMPACT)
    parent, name = hdf5_path.rsplit("/", 1)
    h5d.create(f[parent or "/"].id, name.encode(), tid, h5s.create_simple(data.shape), dcpl=dcpl)
    f[hdf5_path][...] = data
    for key, value in attrs.items():
        f[hdf5_path].attrs[key] = value


def test_compact_fixture_is_valid_without_chunk_issues() -> None:
    """§7.4: the fixture really is compact; compact feature datasets are valid with no issue at all and decode."""
    path = FIXTURES / "valid-compact-layout.h5"
    with h5py.File(path) as f:
        for name in ("train/x", "train/text", "train/clip/values", "train/clip/offsets", "train/label/codes"):
            assert f[name].id.get_create_plist().get_layout() == h5d.COMPACT, name
    report = validate(path, deep=True)
    assert report.valid and not report.issues, [str(i) for i in report.issues]
    with h5ml.open(path) as ds:
        np.testing.assert_array_equal(ds["train"]["x"][:], np.arange(15, dtype=np.float32).reshape(3, 5) * 0.5)
        assert list(ds["train"]["text"][:]) == ["a", "bb", "ccc"]
        assert [list(s) for s in ds["train"]["clip"][:]] == [[1, 2], [], [3]]


def test_compact_feature_datasets_get_no_chunk_rules(tmp_path: Path) -> None:
    """§7.4: a writer-made file whose datasets are rewritten compact stays valid (deep: its fingerprints hold), with
    no E150, W200 or W201, while the same data chunked (5, 3) of 6 rows is W200 (SPEC §7.4-R1)."""
    path = tmp_path / "c.h5"
    data = {"x": np.arange(18, dtype=np.float32).reshape(6, 3), "words": ["a", "b", "c", "d", "e", "f"]}
    meta = {"name": "c", "license": "CC0-1.0", "description": "d"}
    h5ml.write(path, {"train": data}, metadata=meta, checksums=False)  # replaced: no checksums (§8.4)
    with h5py.File(path, "r+") as f:
        _make_compact(f, "/train/x")
        _make_compact(f, "/train/words")
        assert f["train/x"].id.get_create_plist().get_layout() == h5d.COMPACT
    report = validate(path, deep=True)
    assert report.valid and not {"E150", "W200", "W201"} & set(report.codes), [str(i) for i in report.issues]
    with h5ml.open(path) as ds:
        np.testing.assert_array_equal(ds["train"]["x"][:], data["x"])
        assert list(ds["train"]["words"][:]) == data["words"]
    with h5py.File(path, "r+") as f:  # the chunk rules still apply once the dataset is chunked
        attrs = {k: f["train/x"].attrs[k] for k in f["train/x"].attrs}
        del f["train/x"]
        f["train"].create_dataset("x", data=data["x"], chunks=(5, 3), maxshape=(None, 3))
        for key, value in attrs.items():
            f["train/x"].attrs[key] = value
    assert ("W200", "/train/x") in codes_at(validate(path))


# --------------------------------------------------------------------------- §6.1: media_type on bytes only


@pytest.mark.parametrize("feature", ["audio", "caption", "flag", "id", "label", "x"])
def test_media_type_on_a_feature_that_is_not_bytes_is_e117(tmp_path: Path, feature: str) -> None:
    """§6.1: `media_type` on a ragged, string, boolean, dense or categorical feature is E117 at that feature; on
    the bytes feature of the same file it is valid."""
    path = tmp_path / "m.h5"
    shutil.copy(FIXTURES / "valid-appendix-b.h5", path)
    assert validate(path).valid
    with h5py.File(path, "r+") as f:
        assert f["train/photo"].attrs["media_type"] == "image/png"
        f[f"train/{feature}"].attrs["media_type"] = "image/png"
    report = validate(path)
    assert not report.valid
    assert {(i.code, i.path) for i in report.issues if i.code.startswith("E")} == {("E117", f"/train/{feature}")}
    assert any("bytes features only" in i.message for i in report.issues if i.code == "E117")
    fixture = validate(FIXTURES / "e117-media-type-on-dense.h5")
    assert not fixture.valid and ("E117", "/train/x") in codes_at(fixture)


# --------------------------------------------------------------------------- §4.2: W204 for a blank description


@pytest.mark.parametrize(
    ("description", "warned"),
    [
        ("", True),
        (" ", True),
        (" \t\r\n", True),
        ("\u00a0\u3000\u2028", True),  # White_Space code points of §5.1.1
        ("\x1c\x1d", False),  # U+001C-U+001F are not in §5.1.1's list: text, however odd
        ("\u200b", False),  # ZERO WIDTH SPACE is not White_Space
        (" a ", False),
    ],
    ids=["empty", "space", "ascii-whitespace", "unicode-whitespace", "info-separators", "zero-width-space", "text"],
)
def test_blank_description_is_w204_and_never_an_error(tmp_path: Path, description: str, warned: bool) -> None:
    """§4.2: an empty or whitespace-only description is reported as W204 (a warning: the file stays valid)."""
    path = _strings_file(tmp_path / "d.h5", ["a"])
    with h5py.File(path, "r+") as f:
        f.attrs["description"] = description
    report = validate(path, deep=True)
    assert report.valid, [str(i) for i in report.issues]
    assert {c for c in report.codes if c.startswith("E")} == set()
    assert (("W204", "/") in codes_at(report)) is warned
    with h5ml.open(path) as ds:
        assert ds.metadata.description == description  # the reader returns it as stored


def test_blank_description_fixtures_are_w204() -> None:
    for name in ("w204-description-empty", "w204-description-whitespace", "w204-no-description"):
        report = validate(FIXTURES / f"{name}.h5", deep=True)
        assert report.valid and [(i.code, i.path) for i in report.issues] == [("W204", "/")], name


# --------------------------------------------------------------------------- §3.5: core filters in required_filters


@pytest.mark.parametrize("listed", [[1], [1, 2, 3], [2, 32000]])
def test_core_filters_in_required_filters_are_allowed(tmp_path: Path, listed: list[int]) -> None:
    """§3.5: `required_filters` may list a core filter; the entry declares nothing: valid, no issue but I303 (the writer
    did not shuffle), and the reader opens the file (and still refuses the file for a listed filter it cannot decode, when there is one)."""
    path = tmp_path / "r.h5"
    x = np.arange(64, dtype=np.float32).reshape(16, 4)
    h5ml.write(
        path, {"train": {"x": x}}, metadata={"name": "r", "license": "CC0-1.0", "description": "d"}, compression="gzip"
    )
    with h5py.File(path, "r+") as f:
        f.attrs["required_filters"] = np.array(listed, dtype=np.int64)
        assert f["train/x"].compression == "gzip"
    report = validate(path, deep=True)
    assert report.valid and codes_at(report) == {("I303", "/train")}, [str(i) for i in report.issues]  # unshuffled
    if h5py.h5z.filter_avail(32000) or 32000 not in listed:
        with h5ml.open(path) as ds:
            np.testing.assert_array_equal(ds["train"]["x"][:], x)
    fixture = validate(FIXTURES / "valid-required-filters-core.h5", deep=True)
    assert fixture.valid and not fixture.issues
