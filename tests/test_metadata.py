"""Tests of h5ml.model.metadata: the root-attribute schema and the typed model agree (SPEC §4.2, §4.6, §4.7)."""

from __future__ import annotations

import datetime
import pickle
import re
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

import h5ml
from h5ml import spec
from h5ml.errors import H5MLError, MetadataError
from h5ml.model import problems as problems_module
from h5ml.model.metadata import RootMetadata, parse_root
from h5ml.model.new_root import (
    ATTR_MESSAGE_OVERHEAD,
    HEADER_MESSAGE_BYTES,
    WRITER_SET_ATTRS,
    max_list_items,
    new_root_metadata,
)
from h5ml.model.problems import Problem, is_valid_root, validate_root
from h5ml.spec import schemas
from h5ml.spec.attrs import write_attr

MINIMAL: dict[str, Any] = {
    "format": "h5ml",
    "format_version": "1.0",
    "name": "digits",
    "created": "2026-11-30T09:30:00Z",
    "writer": "h5ml 0.1.0",
    "must_understand": [],
    "complete": 1,
}

FULL: dict[str, Any] = {
    **MINIMAL,
    "version": "2.1",
    "description": "8x8 images of handwritten digits",
    "license": "CC-BY-4.0",
    "citation": "@misc{digits, title={Digits}}",
    "creator": "UCI",
    "homepage": "https://archive.ics.uci.edu/dataset/80",
    "keywords": ["images", "digits"],
    "source": "sklearn.datasets.load_digits",
    "required_filters": [32001, 32008],
    "fingerprint": "sha256:" + "0123456789abcdef" * 4,
}


def _with(**changes: Any) -> dict[str, Any]:
    doc = dict(MINIMAL)
    doc.update(changes)
    return doc


def _without(name: str) -> dict[str, Any]:
    return {k: v for k, v in MINIMAL.items() if k != name}


def _verdicts(doc: Any) -> tuple[bool, set[str | None], bool, set[str | None]]:
    """Return (schema valid, attributes the schema blames, model valid, attributes the model blames)."""
    problems = validate_root(doc)
    schema_ok = schemas.validator_for("root").is_valid(doc)
    assert schema_ok is (not problems)
    assert is_valid_root(doc) is schema_ok
    try:
        RootMetadata.model_validate(doc)
    except ValidationError as exc:
        return schema_ok, {p.attribute for p in problems}, False, {str(e["loc"][0]) for e in exc.errors()}
    return schema_ok, {p.attribute for p in problems}, True, set()


def _assert_agree(doc: Any) -> bool:
    schema_ok, schema_blames, model_ok, model_blames = _verdicts(doc)
    assert model_ok is schema_ok, (doc, validate_root(doc))
    assert model_blames == schema_blames, doc
    return schema_ok


# -- the table: each rule kept and each rule broken once ----------------------

VALID_CASES: list[tuple[str, dict[str, Any]]] = [
    ("minimal", MINIMAL),
    ("full", FULL),
    ("user_attributes_of_any_kind", _with(lab="vision", size=3, ratio=0.5, tags=["a"], nested={"x": [1, None]})),
    ("complete_as_json_float_one", _with(complete=1.0)),
    ("format_version_newer", _with(format_version="12.34")),
    ("format_version_zero", _with(format_version="0.0")),
    ("created_fraction_1", _with(created="2026-01-01T12:30:05.2Z")),
    ("created_fraction_6", _with(created="2026-01-01T12:30:05.123456Z")),
    ("created_leap_day", _with(created="2028-02-29T23:59:59Z")),
    ("name_with_unicode", _with(name="Ziffern – 数字")),
    ("name_with_lone_surrogate", _with(name="x\ud800")),
    ("writer_name_with_spaces", _with(writer="my data tool 2.0-beta")),
    ("must_understand_listed", _with(must_understand=["ext-a", "ext-b"])),
    ("license_any_non_empty", _with(license="see LICENSE.txt")),
    ("license_spdx_compound", _with(license="(MIT OR Apache-2.0) AND CC-BY-4.0")),
    ("homepage_http_with_query", _with(homepage="http://example.org/data?v=2#top")),
    ("keywords_empty", _with(keywords=[])),
    ("keywords_repeated", _with(keywords=["a", "a"])),
    ("required_filters_core_and_bounds", _with(required_filters=[1, 65535])),
    ("required_filters_integral_floats", _with(required_filters=[32001.0, 4])),
    ("description_empty", _with(description="")),
]

INVALID_CASES: list[tuple[str, dict[str, Any] | list[Any], set[str]]] = [
    *[(f"missing_{name}", _without(name), {f"/{name}"}) for name in spec.ROOT_REQUIRED_ATTRS],
    ("format_other", _with(format="hdf5"), {"/format"}),
    ("format_case", _with(format="H5ML"), {"/format"}),
    ("format_version_major_only", _with(format_version="1"), {"/format_version"}),
    ("format_version_leading_zero", _with(format_version="01.0"), {"/format_version"}),
    ("format_version_three_parts", _with(format_version="1.0.0"), {"/format_version"}),
    ("format_version_trailing_newline", _with(format_version="1.0\n"), {"/format_version"}),
    ("format_version_number", _with(format_version=1.0), {"/format_version"}),
    ("name_empty", _with(name=""), {"/name"}),
    ("name_number", _with(name=5), {"/name"}),
    ("name_not_utf8_bytes", _with(name=b"\xff\xfe"), {"/name"}),
    ("created_without_z", _with(created="2026-11-30T09:30:00"), {"/created"}),
    ("created_with_offset", _with(created="2026-11-30T09:30:00+00:00"), {"/created"}),
    ("created_space", _with(created="2026-11-30 09:30:00Z"), {"/created"}),
    ("created_date_only", _with(created="2026-11-30"), {"/created"}),
    ("created_fraction_7", _with(created="2026-11-30T09:30:00.1234567Z"), {"/created"}),
    ("created_not_a_day", _with(created="2026-02-29T09:30:00Z"), {"/created"}),
    ("created_month_13", _with(created="2026-13-01T09:30:00Z"), {"/created"}),
    ("created_hour_24", _with(created="2026-11-30T24:00:00Z"), {"/created"}),
    ("created_trailing_newline", _with(created="2026-11-30T09:30:00Z\n"), {"/created"}),
    ("writer_without_version", _with(writer="h5ml"), {"/writer"}),
    ("writer_empty", _with(writer=""), {"/writer"}),
    ("writer_leading_space", _with(writer=" h5ml 0.1.0"), {"/writer"}),
    ("writer_trailing_space", _with(writer="h5ml 0.1.0 "), {"/writer"}),
    ("must_understand_string", _with(must_understand="ext"), {"/must_understand"}),
    ("must_understand_repeated", _with(must_understand=["a", "a"]), {"/must_understand"}),
    ("must_understand_empty_name", _with(must_understand=[""]), {"/must_understand/0"}),
    ("must_understand_number", _with(must_understand=[1]), {"/must_understand/0"}),
    ("complete_zero", _with(complete=0), {"/complete"}),
    ("complete_true", _with(complete=True), {"/complete"}),
    ("complete_string", _with(complete="1"), {"/complete"}),
    ("complete_two", _with(complete=2), {"/complete"}),
    ("complete_nan", _with(complete=float("nan")), {"/complete"}),
    ("complete_array", _with(complete=[1]), {"/complete"}),
    ("version_empty", _with(version=""), {"/version"}),
    ("description_number", _with(description=5), {"/description"}),
    ("description_null", _with(description=None), {"/description"}),
    ("description_not_utf8_bytes", _with(description=b"\xff"), {"/description"}),
    ("license_empty", _with(license=""), {"/license"}),
    ("citation_array", _with(citation=["a"]), {"/citation"}),
    ("creator_number", _with(creator=1), {"/creator"}),
    ("source_null", _with(source=None), {"/source"}),
    ("homepage_ftp", _with(homepage="ftp://example.org"), {"/homepage"}),
    ("homepage_without_host", _with(homepage="https://"), {"/homepage"}),
    ("homepage_with_space", _with(homepage="https://example.org/a b"), {"/homepage"}),
    ("homepage_relative", _with(homepage="example.org"), {"/homepage"}),
    ("keywords_string", _with(keywords="a"), {"/keywords"}),
    ("keywords_empty_item", _with(keywords=["a", ""]), {"/keywords/1"}),
    ("keywords_number_item", _with(keywords=[1]), {"/keywords/0"}),
    ("required_filters_zero", _with(required_filters=[0]), {"/required_filters/0"}),
    ("required_filters_too_big", _with(required_filters=[65536]), {"/required_filters/0"}),
    ("required_filters_repeated", _with(required_filters=[32001, 32001]), {"/required_filters"}),
    ("required_filters_repeated_as_float", _with(required_filters=[32001, 32001.0]), {"/required_filters"}),
    ("required_filters_fraction", _with(required_filters=[4.5]), {"/required_filters/0"}),
    ("required_filters_string", _with(required_filters=["32001"]), {"/required_filters/0"}),
    ("required_filters_bool", _with(required_filters=[True]), {"/required_filters/0"}),
    ("required_filters_scalar", _with(required_filters=32001), {"/required_filters"}),
    ("fingerprint_uppercase", _with(fingerprint="sha256:" + "A" * 64), {"/fingerprint"}),
    ("fingerprint_short", _with(fingerprint="sha256:" + "0" * 63), {"/fingerprint"}),
    ("fingerprint_other_hash", _with(fingerprint="md5:" + "0" * 32), {"/fingerprint"}),
    ("fingerprint_trailing_newline", _with(fingerprint="sha256:" + "0" * 64 + "\n"), {"/fingerprint"}),
]


@pytest.mark.parametrize(("case", "doc"), VALID_CASES, ids=[c for c, _ in VALID_CASES])
def test_valid_documents_pass_schema_and_model(case: str, doc: dict[str, Any]) -> None:
    """§4.2/§4.6/§4.7: each valid document passes the JSON Schema and the pydantic model alike."""
    assert validate_root(doc) == []
    assert _assert_agree(doc) is True
    assert parse_root(doc).name == doc["name"]


@pytest.mark.parametrize(("case", "doc", "paths"), INVALID_CASES, ids=[c for c, _, _ in INVALID_CASES])
def test_invalid_documents_fail_schema_and_model(case: str, doc: dict[str, Any], paths: set[str]) -> None:
    """§4.2/§4.6: each broken rule fails the JSON Schema and the pydantic model, at the same attribute."""
    problems = validate_root(doc)
    assert {p.path for p in problems} == paths
    assert _assert_agree(doc) is False
    for problem in problems:
        assert problem.attribute is not None
        assert problem.path.startswith(f"/{problem.attribute}")
        assert repr(problem.attribute) in problem.message
        assert "§" in problem.message  # the message says what is expected, with its clause
    with pytest.raises(MetadataError):
        parse_root(doc)


# Values of every JSON type, and near misses of every rule.
PROBE_VALUES: list[Any] = [
    None,
    True,
    False,
    0,
    1,
    1.0,
    1.5,
    -1,
    3,
    4,
    65535,
    65536,
    float("nan"),
    float("inf"),
    "",
    " ",
    "x",
    "h5ml",
    "1.0",
    "2026-11-30T09:30:00Z",
    "h5ml 0.1.0",
    "https://h5ml.org",
    "sha256:" + "ab" * 32,
    b"bytes",
    [],
    [""],
    ["a"],
    ["a", "a"],
    [1],
    [1, 1.0],
    [0],
    [70000],
    [1, "a"],
    [None],
    {},
    {"a": 1},
]


@pytest.mark.parametrize("attribute", spec.ROOT_ATTRS)
def test_every_json_type_gets_the_same_verdict_for_every_attribute(attribute: str) -> None:
    """§4.2/§4.6: for each attribute and each probe value, schema and model agree on validity and blame."""
    verdicts = [_assert_agree(_with(**{attribute: value})) for value in PROBE_VALUES]
    assert True in verdicts and False in verdicts  # the probes reach both sides of every rule


def test_a_document_that_is_not_an_object_is_refused() -> None:
    """§4.6: the root attributes form a JSON object; anything else is one problem at the document."""
    problems = validate_root([MINIMAL])  # type: ignore[arg-type]
    assert [(p.path, p.attribute, p.keyword) for p in problems] == [("", None, "type")]
    assert "JSON object" in problems[0].message
    assert not is_valid_root([MINIMAL])  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        RootMetadata.model_validate([MINIMAL])


def test_model_fields_follow_the_schema_and_the_spec() -> None:
    """§4.2: the model has one field per attribute of the table, required exactly when the schema requires it."""
    schema = schemas.load_schema("root")
    fields = RootMetadata.model_fields
    assert list(fields) == list(schema["properties"]) == list(spec.ROOT_ATTRS)
    assert [n for n, f in fields.items() if f.is_required()] == schema["required"] == list(spec.ROOT_REQUIRED_ATTRS)


def test_model_refuses_to_work_with_a_schema_keyword_it_does_not_apply(monkeypatch: pytest.MonkeyPatch) -> None:
    """§4.6: a new keyword in the root schema cannot be silently ignored by the typed model."""
    original = schemas.load_schema("root")
    changed = schemas.load_schema("root")
    changed["properties"]["name"]["maxLength"] = 8

    def fake_load(name: str) -> dict[str, Any]:
        return changed if name == "root" else original

    monkeypatch.setattr(problems_module, "load_schema", fake_load)
    problems_module.root_properties.cache_clear()
    try:
        with pytest.raises(RuntimeError, match="maxLength"):
            RootMetadata.model_validate(MINIMAL)
    finally:
        monkeypatch.undo()
        problems_module.root_properties.cache_clear()
    assert RootMetadata.model_validate(MINIMAL).name == "digits"


# -- generated documents ------------------------------------------------------

_NON_SPACE = st.characters(exclude_categories=("Z", "C"))
_WORD = st.text(_NON_SPACE, min_size=1, max_size=8)


@st.composite
def _created(draw: st.DrawFn) -> str:
    when = draw(st.datetimes(min_value=datetime.datetime(1, 1, 1), max_value=datetime.datetime(9999, 12, 31)))
    digits = draw(st.integers(0, 6))
    fraction = f".{when.microsecond:06d}"[: digits + 1] if digits else ""
    return (
        f"{when.year:04d}-{when.month:02d}-{when.day:02d}T{when.hour:02d}:{when.minute:02d}:{when.second:02d}"
        f"{fraction}Z"
    )


VALID_VALUES: dict[str, st.SearchStrategy[Any]] = {
    "format": st.just(spec.FORMAT_NAME),
    "format_version": st.builds("{}.{}".format, st.integers(0, 120), st.integers(0, 120)),
    "name": st.text(min_size=1, max_size=12),
    "created": _created(),
    "writer": st.builds("{} {}".format, st.lists(_WORD, min_size=1, max_size=3).map(" ".join), _WORD),
    "must_understand": st.lists(st.text(min_size=1, max_size=6), unique=True, max_size=3),
    "complete": st.sampled_from([1, 1.0]),
    "version": st.text(min_size=1, max_size=6),
    "description": st.text(max_size=30),
    "license": st.sampled_from(["MIT", "CC-BY-4.0", "Apache-2.0 OR MIT", "LicenseRef-own", "NOASSERTION"])
    | st.text(min_size=1, max_size=10),
    "citation": st.text(max_size=12),
    "creator": st.text(max_size=12),
    "homepage": st.builds("{}://{}".format, st.sampled_from(["http", "https"]), _WORD),
    "keywords": st.lists(st.text(min_size=1, max_size=6), max_size=4),
    "source": st.text(max_size=12),
    "required_filters": st.lists(st.integers(1, 65535), unique=True, max_size=4),
    "fingerprint": st.binary(min_size=32, max_size=32).map(lambda b: "sha256:" + b.hex()),
    "view_of": st.text(min_size=1, max_size=12),
    "view_index_fingerprint": st.binary(min_size=32, max_size=32).map(lambda b: "sha256:" + b.hex()),
}

_JSON_LEAF = (
    st.none()
    | st.booleans()
    | st.integers(-3, 70000)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=8)
    | st.sampled_from(PROBE_VALUES)
)
_JSON_ANY = st.recursive(
    _JSON_LEAF,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=2),
    max_leaves=6,
)
_EDIT_CHARS = st.sampled_from([*"\n \t0.1:-+TZzaA/é(", "\u2028", "\x1c"]) | st.characters()


@st.composite
def valid_documents(draw: st.DrawFn) -> dict[str, Any]:
    doc = {name: draw(VALID_VALUES[name]) for name in spec.ROOT_REQUIRED_ATTRS}
    for name in draw(st.lists(st.sampled_from(spec.ROOT_OPTIONAL_ATTRS), unique=True)):
        doc[name] = draw(VALID_VALUES[name])
    user = draw(st.dictionaries(st.text(max_size=6).filter(lambda k: k not in spec.ROOT_ATTRS), _JSON_ANY, max_size=2))
    doc.update(user)
    return doc


def _near_miss(draw: st.DrawFn, value: Any) -> Any:
    """Change a valid value a little: one character of a string, one item of a list, or a neighbouring number."""
    if isinstance(value, str):
        where = draw(st.integers(0, len(value)))
        match draw(st.sampled_from(["insert", "delete", "replace", "swapcase"])):
            case "insert":
                return value[:where] + draw(_EDIT_CHARS) + value[where:]
            case "delete":
                return value[:where] + value[where + 1 :]
            case "replace":
                return value[:where] + draw(_EDIT_CHARS) + value[where + 1 :]
            case _:
                return value.swapcase()
    if isinstance(value, list):
        extra = draw(st.sampled_from([*value, "", 0, 1, 65536, 1.5, None, "x"]) if value else _JSON_LEAF)
        return [*value, extra]
    return draw(st.sampled_from([0, 1, 2, -1, 1.0, 0.5, True]))


@st.composite
def mutated_documents(draw: st.DrawFn) -> dict[str, Any]:
    doc = draw(valid_documents())
    for _ in range(draw(st.integers(1, 3))):
        name = draw(st.sampled_from(sorted(set(spec.ROOT_ATTRS) | set(doc))))
        match draw(st.sampled_from(["delete", "replace", "near_miss", "near_miss"])):
            case "delete":
                doc.pop(name, None)
            case "replace":
                doc[name] = draw(_JSON_ANY)
            case _:
                doc[name] = _near_miss(draw, doc[name] if name in doc else draw(VALID_VALUES.get(name, _JSON_ANY)))
    return doc


@given(valid_documents())
def test_generated_valid_documents_pass_schema_and_model(doc: dict[str, Any]) -> None:
    """§4.2/§4.7: documents built from the rules of §4.2, with user attributes, pass both checks."""
    assert validate_root(doc) == []
    assert _assert_agree(doc) is True
    meta = parse_root(doc)
    assert meta.extra == {k: v for k, v in doc.items() if k not in spec.ROOT_ATTRS}


@settings(max_examples=400)
@given(mutated_documents())
def test_generated_near_misses_get_the_same_verdict_from_schema_and_model(doc: dict[str, Any]) -> None:
    """§4.6: on valid and mutated documents alike, jsonschema and pydantic agree on validity and on blame."""
    _assert_agree(doc)


# -- parse_root, the typed model ----------------------------------------------


def test_parse_root_error_carries_every_problem() -> None:
    """§4.2: one MetadataError lists every problem, in its message and in ``problems``."""
    doc = _with(format_version="1", created="yesterday", license="", keywords=["ok", 3])
    del doc["writer"]
    with pytest.raises(MetadataError) as info:
        parse_root(doc, path="digits.h5")
    err = info.value
    assert isinstance(err, H5MLError) and isinstance(err, ValueError)
    assert len(err.problems) == 5
    for pointer in ("/format_version", "/created", "/license", "/keywords/1", "/writer"):
        assert sum(p.startswith(f"{pointer}: ") for p in err.problems) == 1
        assert f"{pointer}: " in str(err)
    assert "digits.h5" in str(err) and err.path == "digits.h5" and err.hdf5_path == "/"
    assert "5 problem(s)" in str(err)
    restored = pickle.loads(pickle.dumps(err))
    assert restored.problems == err.problems and restored.path == "digits.h5"


def test_problems_are_sorted_and_readable() -> None:
    """§4.2: problems come sorted by JSON pointer; str() gives "pointer: message"."""
    problems = validate_root(_with(name="", complete=0, created="now"))
    assert [p.path for p in problems] == ["/complete", "/created", "/name"]
    assert [p.keyword for p in problems] == ["const", "pattern", "minLength"]
    assert str(problems[2]).startswith("/name: root attribute 'name' is invalid: it is empty; expected")
    missing = validate_root(_without("created"))
    assert missing == [
        Problem(
            path="/created",
            message=missing[0].message,
            attribute="created",
            keyword="required",
        )
    ]
    assert "required root attribute 'created' is missing" in missing[0].message


def test_root_metadata_gives_typed_values() -> None:
    """§4.2: typed access: version tuple, timezone-aware created time, user attributes in ``extra``."""
    doc = {**FULL, "created": "2026-01-01T12:30:05.25Z", "format_version": "2.13", "complete": 1.0, "lab": "x"}
    meta = parse_root(doc)
    assert meta.format_version_tuple == (2, 13)
    assert meta.created_at == datetime.datetime(2026, 1, 1, 12, 30, 5, 250000, tzinfo=datetime.UTC)
    assert meta.complete == 1 and type(meta.complete) is int
    assert meta.required_filters == [32001, 32008]
    assert meta.extra == {"lab": "x"}
    assert meta.to_json() == {**doc, "complete": 1}
    assert list(meta.to_json()) == [*(name for name in spec.ROOT_ATTRS if name in doc), "lab"]
    with pytest.raises(ValidationError):
        meta.name = "other"


def test_optional_attributes_absent_are_none_and_left_out_of_json() -> None:
    """§4.2: an absent optional attribute reads as None and is not invented on output."""
    meta = parse_root(MINIMAL)
    assert all(getattr(meta, name) is None for name in spec.ROOT_OPTIONAL_ATTRS)
    assert meta.to_json() == MINIMAL
    assert meta.created_at == datetime.datetime(2026, 11, 30, 9, 30, tzinfo=datetime.UTC)


# -- new_root_metadata --------------------------------------------------------


def test_new_root_metadata_fills_the_defaults() -> None:
    """§4.2/§4.4: format, version, creation time (UTC, seconds), writer and must_understand; no marker."""
    before = datetime.datetime.now(datetime.UTC).replace(microsecond=0)
    doc = new_root_metadata("digits")
    after = datetime.datetime.now(datetime.UTC)
    assert list(doc) == ["format", "format_version", "name", "created", "writer", "must_understand"]
    assert doc["format"] == spec.FORMAT_NAME
    assert doc["format_version"] == spec.FORMAT_VERSION_STRING
    assert doc["name"] == "digits"
    assert doc["writer"] == f"h5ml {h5ml.__version__}"
    assert doc["must_understand"] == []
    assert re.fullmatch(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z", doc["created"])
    created = parse_root({**doc, "complete": 1}).created_at
    assert before <= created <= after


def test_new_root_metadata_keeps_given_fields_in_spec_order() -> None:
    """§4.2/§4.7: optional attributes in table order, then user attributes; tuples become lists, None is left out."""
    doc = new_root_metadata(
        "digits",
        lab="vision",
        keywords=("a", "b"),
        license="MIT",
        description=None,
        created="2020-01-01T00:00:00Z",
        writer="my tool 1.0",
        must_understand=[],
        required_filters=(32001,),
        counts=[1, 2],
    )
    assert list(doc) == [
        "format",
        "format_version",
        "name",
        "created",
        "writer",
        "must_understand",
        "license",
        "keywords",
        "required_filters",
        "lab",
        "counts",
    ]
    assert doc["keywords"] == ["a", "b"] and doc["required_filters"] == [32001]
    assert doc["created"] == "2020-01-01T00:00:00Z" and doc["writer"] == "my tool 1.0"
    assert is_valid_root({**doc, "complete": 1})


@pytest.mark.parametrize("name", WRITER_SET_ATTRS)
def test_new_root_metadata_refuses_attributes_the_writer_sets(name: str) -> None:
    """§4.4/§8.3: format, format_version, complete and fingerprint are the writer's to set."""
    value = MINIMAL.get(name, "sha256:" + "0" * 64)
    with pytest.raises(MetadataError, match=f"'{name}' is set by the writer") as info:
        new_root_metadata("digits", **{name: value})
    assert info.value.problems == [
        f"/{name}: root attribute '{name}' is set by the writer; remove it from the metadata"
    ]


@pytest.mark.parametrize("value", [{"a": 1}, True, [1, "a"], [1.5], b"raw", 1 + 2j])
def test_new_root_metadata_refuses_user_attributes_hdf5_cannot_hold(value: Any) -> None:
    """§4.3/§4.7: a user attribute must be a str, int, float or a list of only str or only int."""
    with pytest.raises(MetadataError, match="cannot be stored as an HDF5 attribute"):
        new_root_metadata("digits", odd=value)


def test_new_root_metadata_lists_every_problem() -> None:
    """§4.2: every bad field is reported at once."""
    with pytest.raises(MetadataError) as info:
        new_root_metadata("", license="", complete=1, odd={}, homepage="www.example.org")
    assert sorted(p.split(":")[0] for p in info.value.problems) == [
        "/complete",
        "/homepage",
        "/license",
        "/name",
        "/odd",
    ]
    assert info.value.path is None


# -- real files ---------------------------------------------------------------


def _fixed_ascii(text: str) -> np.bytes_:
    return np.bytes_(text.encode("ascii"))


def test_from_file_returns_str_for_fixed_length_ascii_attributes(tmp_path: Path) -> None:
    """C06, §3.4: attributes written fixed-length ASCII by another tool come back as ``str``."""
    path = tmp_path / "other_tool.h5"
    with h5py.File(path, "w", libver=spec.LIBVER_BOUNDS) as f:
        for name in ("format", "format_version", "name", "created", "writer"):
            f.attrs.create(name, _fixed_ascii(MINIMAL[name]))
        f.attrs.create("keywords", np.array([b"cat", b"dog"], dtype="S3"))
        f.attrs.create("must_understand", np.array([], dtype="S1"))
        f.attrs.create("complete", np.uint8(1))
    with h5py.File(path, "r") as f:
        stored = f.attrs.get_id("name").get_type()
        assert isinstance(stored, h5py.h5t.TypeStringID)
        assert not stored.is_variable_str()
        assert stored.get_cset() == h5py.h5t.CSET_ASCII
        meta = RootMetadata.from_file(f)
    assert meta.name == "digits" and type(meta.name) is str
    assert meta.format == "h5ml" and type(meta.format) is str
    assert meta.keywords == ["cat", "dog"] and all(type(k) is str for k in meta.keywords)
    assert meta.must_understand == []
    assert meta.complete == 1
    assert meta.to_json() == {**MINIMAL, "keywords": ["cat", "dog"]}


def test_from_file_reports_bad_attributes_with_the_file_path(tmp_path: Path) -> None:
    """§4.2/§4.6: undecodable bytes and a missing marker are problems; the error names the file."""
    path = tmp_path / "broken.h5"
    with h5py.File(path, "w", libver=spec.LIBVER_BOUNDS) as f:
        for name, value in MINIMAL.items():
            if name != "complete":
                write_attr(f, name, value)
        f.attrs.create("description", np.bytes_(b"caf\xe9"))  # Latin-1, not UTF-8
    with h5py.File(path, "r") as f, pytest.raises(MetadataError) as info:
        RootMetadata.from_file(f)
    assert info.value.path == str(path)
    assert str(path) in str(info.value)
    assert sorted(p.split(":")[0] for p in info.value.problems) == ["/complete", "/description"]


def test_large_description_round_trips_through_a_file(tmp_path: Path) -> None:
    """C07, §4.5: a 110 kB description written as variable-length UTF-8 reads back equal."""
    description = "".join(f"Zeile {i}: Ünïcödé – 数字 {'x' * (i % 7)}\n" for i in range(3500))
    assert len(description.encode("utf-8")) > 110_000
    doc = new_root_metadata("big", description=description, license="CC-BY-4.0", keywords=["a"], shots=12)
    path = tmp_path / "big.h5"
    with h5py.File(path, "w", libver=spec.LIBVER_BOUNDS) as f:
        for name, value in doc.items():
            write_attr(f, name, value)
        write_attr(f, "complete", 1)
    with h5py.File(path, "r") as f:
        assert f.attrs.get_id("description").get_type().is_variable_str()
        meta = RootMetadata.from_file(f)
    assert meta.description == description
    assert meta.extra == {"shots": 12}
    assert meta.to_json() == {**doc, "complete": 1}


# -- what the writer cannot store (new_root_metadata only) -------------------------------------


@pytest.mark.parametrize(
    ("fields", "pointer", "keyword", "match"),
    [
        ({"must_understand": ["foo"]}, "/must_understand", "extension", "does not implement"),
        ({"_private": "a"}, "/_private", "reserved", "reserved for the specification"),
        ({"": "a"}, "/", "storable", "is empty"),
        ({"acme:a\x00b": "a"}, "/acme:a\x00b", "storable", "NUL character"),
        ({"description": "a\x00b"}, "/description", "storable", "NUL character"),
        ({"keywords": ["ok", "b\udc80"]}, "/keywords/1", "storable", "lone surrogate"),
        ({"acme:i": 2**63}, "/acme:i", "storable", "does not fit a signed 64-bit integer"),
        ({"acme:l": [0, -(2**63) - 1]}, "/acme:l/1", "storable", "does not fit a signed 64-bit integer"),
        ({"keywords": ["k"] * 4088}, "/keywords", "storable", "holds 4088 items.*at most 4087 items of 16 bytes"),
        ({"acme:ids": [1] * 8175}, "/acme:ids", "storable", "at most 8174 items of 8 bytes"),
    ],
)
def test_new_root_metadata_refuses_what_the_writer_cannot_store(
    fields: dict[str, Any], pointer: str, keyword: str, match: str
) -> None:
    """§1.5/§3.4/§4.3/§4.5/§5.4: unknown extensions, reserved or unstorable names, NUL and surrogates, integers
    beyond int64 and lists too long for an attribute are refused, each as one problem at its JSON pointer.
    SPEC §5.4-R1 (no reserved name) and SPEC §4.5-R1 (no attribute over 65535 bytes of header message)."""
    with pytest.raises(MetadataError, match=match) as info:
        new_root_metadata("digits", **fields)
    assert [p.split(": ", 1)[0] for p in info.value.problems] == [pointer]


def test_new_root_metadata_refuses_nul_in_the_name() -> None:
    """§3.4: the dataset name is a string like any other: no NUL."""
    with pytest.raises(MetadataError, match="NUL character") as info:
        new_root_metadata("dig\x00its")
    assert info.value.problems[0].startswith("/name: ")


def test_new_root_metadata_accepts_the_limits() -> None:
    """§4.3/§4.5: int64 extremes, the longest lists that fit, an empty must_understand are accepted."""
    doc = new_root_metadata(
        "digits",
        must_understand=[],
        keywords=["k"] * 4087,
        **{"acme:ids": [1] * 8174, "acme:max": 2**63 - 1, "acme:min": -(2**63)},
    )
    assert len(doc["keywords"]) == 4087 and doc["acme:max"] == 2**63 - 1 and doc["must_understand"] == []


def test_max_list_items_fits_hdf5(tmp_path: Path) -> None:
    """§4.5, SPEC §4.5-R1: the item limit holds for HDF5 with the writer's library bounds; the measured limit is only a few
    items higher (the overhead is not grossly over-estimated)."""
    str_dtype = h5py.string_dtype("utf-8")
    with h5py.File(tmp_path / "a.h5", "w", libver=spec.LIBVER_BOUNDS) as f:
        for i, name in enumerate(("keywords", "acme:" + "n" * 200, "é" * 30)):
            for item_bytes, make in ((16, lambda k: np.array(["k"] * k, dtype=str_dtype)), (8, np.arange)):
                limit = max_list_items(name, item_bytes)
                fits, too_big = f.create_group(f"fits{i}-{item_bytes}"), f.create_group(f"big{i}-{item_bytes}")
                fits.attrs.create(name, make(limit))
                assert fits.attrs[name].shape == (limit,)
                with pytest.raises(OSError, match="object header message is too large"):
                    too_big.attrs.create(name, make(limit + ATTR_MESSAGE_OVERHEAD // item_bytes))
    assert HEADER_MESSAGE_BYTES == 65535
