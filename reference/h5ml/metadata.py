"""Typed access to the root attributes of an h5ml file (§4.2, §4.6).

The JSON Schema ``schema/h5ml-root-1.0.schema.json`` is the authority on which
root attribute documents are valid. This module offers three functions over a
document (the root attributes mapped to JSON as §4.6 says, see
:func:`h5ml.attrs.attrs_json`):

* :func:`validate_root` lists every problem the schema finds,
* :func:`is_valid_root` tells whether there is none,
* :func:`parse_root` returns a typed :class:`RootMetadata` or raises
  :class:`~h5ml.errors.MetadataError` listing every problem;

and :func:`new_root_metadata`, which builds the root attributes a writer stores.

:class:`RootMetadata` is a pydantic model whose checks are read from the same
schema (patterns, lengths, bounds, constants and formats), so it accepts and
rejects exactly the documents the schema does (tested).
"""

from __future__ import annotations

import datetime
import functools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Final, NoReturn

import h5py
import jsonschema
from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, ValidationError, field_validator

from h5ml import spec
from h5ml._version import __version__
from h5ml.attrs import attrs_json
from h5ml.errors import MetadataError
from h5ml.schemas import format_checker, load_schema, validator_for

__all__ = [
    "WRITER_SET_ATTRS",
    "Problem",
    "RootMetadata",
    "is_valid_root",
    "new_root_metadata",
    "parse_root",
    "validate_root",
]

#: Root attributes the writer itself sets; :func:`new_root_metadata` refuses them.
WRITER_SET_ATTRS: Final = ("format", "format_version", "complete", "fingerprint")

# The JSON Schema keywords RootMetadata knows how to apply. A root schema
# property that uses any other keyword makes the model refuse to work, so the
# model can never silently disagree with the schema.
_SUPPORTED_KEYWORDS: Final = frozenset(
    {
        "title",
        "description",
        "$comment",
        "type",
        "const",
        "minLength",
        "pattern",
        "format",
        "items",
        "uniqueItems",
        "minimum",
        "maximum",
    }
)


@dataclass(frozen=True)
class Problem:
    """One way in which a root attribute document breaks the schema (§4.2, §4.6).

    Attributes
    ----------
    path
        A JSON pointer to the offending value: ``"/created"``, ``"/keywords/2"``
        for an item, ``"/name"`` for a missing attribute, ``""`` for the whole
        document.
    message
        What is wrong and what is expected.
    attribute
        The root attribute concerned, or None when the whole document is wrong.
    keyword
        The JSON Schema keyword that failed (``"required"``, ``"type"``,
        ``"pattern"``, ...), or ``"writer"`` for an attribute that only the
        writer may set; lets a validator choose its issue code.
    """

    path: str
    message: str
    attribute: str | None = None
    keyword: str = ""

    def __str__(self) -> str:
        return f"{self.path or '(document)'}: {self.message}"


# -- the schema's rules, applied to values pydantic has type-checked ----------


@functools.cache
def _root_properties() -> dict[str, dict[str, Any]]:
    properties: dict[str, dict[str, Any]] = load_schema("root")["properties"]
    for attr, rules in properties.items():
        for subschema in (rules, rules.get("items", {})):
            unknown = set(subschema) - _SUPPORTED_KEYWORDS
            if unknown:
                raise RuntimeError(
                    f"the root schema uses JSON Schema keyword(s) {sorted(unknown)} for attribute {attr!r}, which "
                    "h5ml.metadata.RootMetadata does not apply; teach h5ml/metadata.py those keywords"
                )
    return properties


def _rule_failures(rules: Mapping[str, Any], value: Any) -> list[str]:
    """Apply the value keywords of one subschema to a value of the right JSON type."""
    failures: list[str] = []
    if "const" in rules and value != rules["const"]:
        failures.append(f"must be {rules['const']!r}")
    if isinstance(value, str):
        if len(value) < rules.get("minLength", 0):
            failures.append(f"must have at least {rules['minLength']} character(s)")
        if "pattern" in rules and re.search(rules["pattern"], value) is None:
            failures.append("does not have the required form")
        if "format" in rules and not format_checker().conforms(value, rules["format"]):
            failures.append(f"is not a valid {rules['format']}")
    elif isinstance(value, int):
        if "minimum" in rules and value < rules["minimum"]:
            failures.append(f"must be at least {rules['minimum']}")
        if "maximum" in rules and value > rules["maximum"]:
            failures.append(f"must be at most {rules['maximum']}")
    elif isinstance(value, list):
        items = rules.get("items", {})
        for index, item in enumerate(value):
            failures.extend(f"item {index} {failure}" for failure in _rule_failures(items, item))
        if rules.get("uniqueItems", False) and len(set(value)) != len(value):
            failures.append("must not repeat an item")
    return failures


def _check_against_schema(attr: str, value: Any) -> Any:
    failures = _rule_failures(_root_properties()[attr], value)
    if failures:
        raise ValueError("; ".join(failures))
    return value


def _rules(attr: str) -> AfterValidator:
    return AfterValidator(functools.partial(_check_against_schema, attr))


def _json_integer(value: Any) -> Any:
    """Turn an integral float into an int: JSON Schema counts 1.0 as the integer 1."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


_JsonInt = Annotated[int, BeforeValidator(_json_integer)]


class RootMetadata(BaseModel):
    """The root attributes of an h5ml file, typed (§4.2).

    Build one with :func:`parse_root` or :meth:`from_file`; it is immutable.
    Attributes the specification does not define (user attributes, §4.7) are
    kept as they are, in :attr:`extra`. Optional attributes that are absent
    are None.

    Attributes
    ----------
    format
        Always ``"h5ml"`` (§4.1).
    format_version
        ``"MAJOR.MINOR"`` (§1.2); :attr:`format_version_tuple` gives the numbers.
    name
        Name of the dataset, non-empty.
    created
        UTC time of writing, ISO 8601 ending in ``Z``; :attr:`created_at` gives a datetime.
    writer
        The software that wrote the file, for example ``"h5ml 0.1.0"``.
    must_understand
        Extension names a reader must implement (§1.5), unique and non-empty.
    complete
        Always 1: the completion marker (§4.4).
    version, description, license, citation, creator, homepage, source
        Optional strings; ``version`` and ``license`` non-empty (``license``
        should be an SPDX expression), ``homepage`` an http(s) URL.
    keywords
        Optional list of non-empty strings.
    required_filters
        Optional list of unique HDF5 filter ids in [1, 65535] (§3.5).
    fingerprint
        Optional ``"sha256:"`` + 64 lowercase hex digits (§8.3).
    """

    model_config = ConfigDict(strict=True, extra="allow", frozen=True)

    format: Annotated[str, _rules("format")]
    format_version: Annotated[str, _rules("format_version")]
    name: Annotated[str, _rules("name")]
    created: Annotated[str, _rules("created")]
    writer: Annotated[str, _rules("writer")]
    must_understand: Annotated[list[str], _rules("must_understand")]
    complete: Annotated[_JsonInt, _rules("complete")]
    version: Annotated[str, _rules("version")] | None = None
    description: Annotated[str, _rules("description")] | None = None
    license: Annotated[str, _rules("license")] | None = None
    citation: Annotated[str, _rules("citation")] | None = None
    creator: Annotated[str, _rules("creator")] | None = None
    homepage: Annotated[str, _rules("homepage")] | None = None
    keywords: Annotated[list[str], _rules("keywords")] | None = None
    source: Annotated[str, _rules("source")] | None = None
    required_filters: Annotated[list[_JsonInt], _rules("required_filters")] | None = None
    fingerprint: Annotated[str, _rules("fingerprint")] | None = None

    @field_validator(*spec.ROOT_OPTIONAL_ATTRS, mode="before")
    @classmethod
    def _not_null(cls, value: Any) -> Any:
        if value is None:
            raise ValueError("must not be null: leave the attribute out instead")
        return value

    @property
    def extra(self) -> dict[str, Any]:
        """User attributes (§4.7): every attribute the specification does not define, by name."""
        return dict(self.model_extra or {})

    @property
    def format_version_tuple(self) -> tuple[int, int]:
        """``format_version`` as ``(major, minor)`` integers (§1.2)."""
        return spec.parse_version(self.format_version)

    @property
    def created_at(self) -> datetime.datetime:
        """``created`` as a timezone-aware UTC datetime (fractions beyond microseconds are cut)."""
        stamp = datetime.datetime.strptime(self.created[:19], "%Y-%m-%dT%H:%M:%S")
        fraction = self.created[20:-1] if self.created[19] == "." else ""
        micro = int((fraction + "000000")[:6])
        return stamp.replace(microsecond=micro, tzinfo=datetime.UTC)

    def to_json(self) -> dict[str, Any]:
        """Return the root attributes as a JSON document (§4.6).

        Returns
        -------
        dict
            The attributes present (absent optional ones left out), specified
            attributes first in §4.2 order, then user attributes.
        """
        dumped = self.model_dump()
        result = {key: dumped[key] for key in type(self).model_fields if dumped[key] is not None}
        result.update((key, dumped[key]) for key in self.extra)
        return result

    @classmethod
    def from_file(cls, file: h5py.File) -> RootMetadata:
        """Read and check the root attributes of an open h5ml file (§4.2, §4.6).

        Strings come back as ``str`` whatever string type the file stores
        (fixed- or variable-length, ASCII or UTF-8, §3.4).

        Parameters
        ----------
        file
            An h5py file open for reading.

        Returns
        -------
        RootMetadata
            The typed root attributes.

        Raises
        ------
        MetadataError
            If the attributes break the schema; ``problems`` lists every problem
            and ``path`` names the file.
        """
        return parse_root(attrs_json(file), path=file.filename)


# -- the three functions over a document --------------------------------------


def _pointer(parts: Sequence[str | int]) -> str:
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)


def _short(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


_JSON_TYPE_NAMES: Final = {
    bool: "a boolean",
    int: "an integer",
    float: "a number",
    str: "a string",
    list: "an array",
    dict: "an object",
    type(None): "null",
}


def _type_name(value: Any) -> str:
    """Name the JSON type of a value, with its article ("an array"), or its Python type when it has none."""
    for kind, name in _JSON_TYPE_NAMES.items():
        if type(value) is kind:
            return name
    return f"a Python {type(value).__name__}"


def _with_article(json_type: Any) -> str:
    text = str(json_type)
    return ("an " if text[:1] in "aeiou" else "a ") + text


def _reason(error: jsonschema.ValidationError) -> str:
    value, rule = error.instance, error.validator_value
    shown = _short(value)
    match error.validator:
        case "type":
            return f"{shown} is {_type_name(value)}, not {_with_article(rule)}"
        case "const":
            return f"{shown} is not {rule!r}"
        case "pattern":
            return f"{shown} does not have the required form"
        case "format":
            return f"{shown} is not a valid {rule}"
        case "minLength":
            return "it is empty" if value == "" else f"{shown} is shorter than {rule} characters"
        case "uniqueItems":
            return f"{shown} repeats an item"
        case "minimum":
            return f"{shown} is below the minimum {rule}"
        case "maximum":
            return f"{shown} is above the maximum {rule}"
        case _:
            return str(error.message)


def _problem(error: jsonschema.ValidationError, doc: Any) -> Problem:
    properties = _root_properties()
    parts = list(error.absolute_path)
    if error.validator == "required":
        required = error.validator_value if isinstance(error.validator_value, list) else []
        missing = [str(n) for n in required if n not in doc]
        name = next((n for n in missing if error.message.startswith(repr(n))), missing[0])
        expected = properties[name]["description"]
        return Problem(
            path=_pointer([name]),
            message=f"the required root attribute {name!r} is missing; add {expected}",
            attribute=name,
            keyword="required",
        )
    if not parts:
        return Problem(
            path="",
            message=f"the root attributes must form a JSON object of names and values, not {_type_name(doc)}",
            keyword=str(error.validator),
        )
    attr = str(parts[0])
    where = repr(attr) if len(parts) == 1 else f"{attr!r} (item {parts[1]})"
    return Problem(
        path=_pointer(parts),
        message=f"root attribute {where} is invalid: {_reason(error)}; expected {properties[attr]['description']}",
        attribute=attr,
        keyword=str(error.validator),
    )


def validate_root(doc: Mapping[str, Any]) -> list[Problem]:
    """List every way a root attribute document breaks the schema (§4.2, §4.6).

    Parameters
    ----------
    doc
        The root attributes mapped to JSON (§4.6), for example from
        :func:`h5ml.attrs.attrs_json`: attribute names to ``str``, ``int``,
        ``float`` or lists of those.

    Returns
    -------
    list of Problem
        Empty when the document is valid; otherwise one problem per failed
        rule (a value that misses its pattern is not also reported as a bad
        format), sorted by path.
    """
    instance = dict(doc) if isinstance(doc, Mapping) else doc
    errors = list(validator_for("root").iter_errors(instance))
    # A value that misses its pattern is not also reported as a bad format: one problem says it.
    misshapen = {tuple(e.absolute_path) for e in errors if e.validator == "pattern"}
    problems = [
        _problem(error, instance)
        for error in errors
        if not (error.validator == "format" and tuple(error.absolute_path) in misshapen)
    ]
    return sorted(problems, key=lambda p: (p.path, p.message))


def is_valid_root(doc: Mapping[str, Any]) -> bool:
    """Tell whether a root attribute document satisfies the schema (§4.2, §4.6).

    Parameters
    ----------
    doc
        The root attributes mapped to JSON (§4.6).

    Returns
    -------
    bool
        True when :func:`validate_root` would find no problem.
    """
    return bool(validator_for("root").is_valid(dict(doc) if isinstance(doc, Mapping) else doc))


def _raise(problems: Sequence[Problem], what: str, path: str | None) -> NoReturn:
    where = f" in {path} (HDF5 path /)" if path else ""
    lines = "".join(f"\n  - {p}" for p in problems)
    raise MetadataError(
        f"{what}{where}: {len(problems)} problem(s):{lines}",
        problems=[str(p) for p in problems],
        path=path,
        hdf5_path="/" if path else None,
    )


def parse_root(doc: Mapping[str, Any], *, path: str | None = None) -> RootMetadata:
    """Check a root attribute document and return it typed (§4.2, §4.6).

    Parameters
    ----------
    doc
        The root attributes mapped to JSON (§4.6).
    path
        The file the attributes come from, named in the error message.

    Returns
    -------
    RootMetadata
        The typed attributes; user attributes are in ``extra``.

    Raises
    ------
    MetadataError
        If the document breaks the schema. ``problems`` holds every problem
        (as ``"<JSON pointer>: <message>"`` strings) and the message lists them.
    """
    problems = validate_root(doc)
    if problems:
        _raise(problems, "invalid h5ml root attributes", path)
    try:
        return RootMetadata.model_validate(dict(doc))
    except ValidationError as exc:  # pragma: no cover - the model and the schema agree (tested)
        found = [Problem(_pointer(e["loc"]), e["msg"], str(e["loc"][0]) if e["loc"] else None) for e in exc.errors()]
        _raise(found, "invalid h5ml root attributes", path)


def _storable(value: Any) -> bool:
    """Tell whether a user attribute value can be stored by h5ml.attrs.write_attr and read back unchanged."""
    if isinstance(value, bool):
        return False
    if isinstance(value, (str, int, float)):
        return True
    if isinstance(value, list):
        return all(isinstance(v, str) for v in value) or all(
            isinstance(v, int) and not isinstance(v, bool) for v in value
        )
    return False


def _now_utc() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def new_root_metadata(name: str, **fields: Any) -> dict[str, Any]:
    """Build the root attributes a writer stores, with defaults, and check them (§4.2, §4.7).

    Parameters
    ----------
    name
        The dataset name (non-empty).
    **fields
        Optional attributes of §4.2 (``description``, ``license``, ``version``,
        ``keywords``, ``required_filters``, ...), overrides of the defaults of
        ``created``, ``writer`` and ``must_understand``, and user attributes
        (§4.7: ``str``, ``int``, ``float``, or a list of only ``str`` or only
        ``int``). A tuple is taken as a list; a value of None is left out.

    Returns
    -------
    dict
        Attribute name to JSON value: ``format`` = ``"h5ml"``, ``format_version``
        = the version this package writes, ``name``, ``created`` = now in UTC
        (``YYYY-MM-DDTHH:MM:SSZ``), ``writer`` = ``"h5ml <version>"``,
        ``must_understand`` = ``[]``, then the given fields; specified
        attributes first in §4.2 order. ``complete`` and ``fingerprint`` are
        not included: the writer adds them when it finishes (§4.4, §8.3).

    Raises
    ------
    MetadataError
        If any field breaks the schema, is one the writer sets itself
        (:data:`WRITER_SET_ATTRS`), or is a user attribute that cannot be
        stored; ``problems`` lists every one.
    """
    problems: list[Problem] = [
        Problem(
            path=_pointer([key]),
            message=f"root attribute {key!r} is set by the writer; remove it from the metadata",
            attribute=key,
            keyword="writer",
        )
        for key in WRITER_SET_ATTRS
        if key in fields
    ]
    given = {
        key: list(value) if isinstance(value, tuple) else value
        for key, value in fields.items()
        if value is not None and key not in WRITER_SET_ATTRS
    }
    problems.extend(
        Problem(
            path=_pointer([key]),
            message=(
                f"user attribute {key!r} = {_short(value)} cannot be stored as an HDF5 attribute; "
                "use a str, int, float, or a list of only str or only int"
            ),
            attribute=key,
            keyword="type",
        )
        for key, value in given.items()
        if key not in spec.ROOT_ATTRS and not _storable(value)
    )
    doc: dict[str, Any] = {
        "format": spec.FORMAT_NAME,
        "format_version": spec.FORMAT_VERSION_STRING,
        "name": name,
        "created": _now_utc(),
        "writer": f"h5ml {__version__}",
        "must_understand": [],
        **given,
    }
    problems.extend(validate_root({**doc, "complete": 1}))
    if problems:
        _raise(problems, "cannot build the h5ml root attributes", None)
    ordered: dict[str, Any] = {key: doc[key] for key in spec.ROOT_ATTRS if key in doc}
    ordered.update((key, value) for key, value in doc.items() if key not in ordered)
    return ordered
