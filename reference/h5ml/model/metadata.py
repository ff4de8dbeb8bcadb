"""Typed access to the root attributes of an h5ml file (§4.2, §4.6).

The JSON Schema ``schema/h5ml-root-1.0.schema.json`` is the authority on which
root attribute documents are valid. This module offers three functions over a
document (the root attributes mapped to JSON as §4.6 says, see
:func:`h5ml.spec.attrs.attrs_json`):

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
from h5ml.errors import MetadataError
from h5ml.model.values import text_problem
from h5ml.spec.attrs import attrs_json
from h5ml.spec.chunks import VLEN_ELEMENT_BYTES
from h5ml.spec.schemas import format_checker, load_schema, validator_for

__all__ = [
    "ATTR_MESSAGE_OVERHEAD",
    "HEADER_MESSAGE_BYTES",
    "INT64_MAX",
    "INT64_MIN",
    "WRITER_SET_ATTRS",
    "Problem",
    "RootMetadata",
    "is_valid_root",
    "max_list_items",
    "new_root_metadata",
    "parse_root",
    "validate_root",
]

#: Root attributes the writer itself sets; :func:`new_root_metadata` refuses them.
WRITER_SET_ATTRS: Final = ("format", "format_version", "complete", "fingerprint")
#: §4.5 the most bytes one HDF5 object header message holds (an attribute's
#: data, name, datatype and dataspace together).
HEADER_MESSAGE_BYTES: Final = 0xFFFF
#: Bytes an attribute message needs besides its data and name (its datatype,
#: dataspace and alignment), rounded up: 71 were measured for int64 and
#: variable-length string arrays with libver bounds ("earliest", "v110").
ATTR_MESSAGE_OVERHEAD: Final = 128
#: §4.3 integers are stored as signed 64-bit integers.
INT64_MIN: Final = -(1 << 63)
INT64_MAX: Final = (1 << 63) - 1

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
        ``"pattern"``, ...), or, from :func:`new_root_metadata` only:
        ``"writer"`` for an attribute that only the writer may set,
        ``"reserved"`` for a name starting with "_" (§5.4), ``"extension"``
        for an extension the writer does not implement (§1.5), ``"storable"``
        for a value HDF5 cannot hold; lets a validator choose its issue code.
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
                    "h5ml.model.metadata.RootMetadata does not apply; teach h5ml/metadata.py those keywords"
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
        :func:`h5ml.spec.attrs.attrs_json`: attribute names to ``str``, ``int``,
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
    """Tell whether a user attribute value can be stored by h5ml.spec.attrs.write_attr and read back unchanged."""
    if isinstance(value, bool):
        return False
    if isinstance(value, (str, int, float)):
        return True
    if isinstance(value, list):
        return all(isinstance(v, str) for v in value) or all(
            isinstance(v, int) and not isinstance(v, bool) for v in value
        )
    return False


def max_list_items(name: str, item_bytes: int) -> int:
    """The most items a list attribute named ``name`` may hold (§4.5).

    A list attribute keeps its data in the HDF5 object header, whose messages
    hold at most 65535 bytes (the 64 KiB of §4.5) together with the
    attribute's name, datatype and dataspace. With the reference writer's
    library bounds (§3.1) HDF5 refuses a larger one ("object header message
    is too large").

    Parameters
    ----------
    name
        The attribute name (its UTF-8 bytes count).
    item_bytes
        Bytes one item takes in the header: 8 for int64, and
        :data:`h5ml.spec.chunks.VLEN_ELEMENT_BYTES` (16) for a variable-length
        string, whose text lives in the global heap.

    Returns
    -------
    int
        ``(65535 - ATTR_MESSAGE_OVERHEAD - len(name in UTF-8)) // item_bytes``:
        4087 strings or 8174 integers for ``keywords``.
    """
    room = HEADER_MESSAGE_BYTES - ATTR_MESSAGE_OVERHEAD - len(name.encode("utf-8", "surrogatepass"))
    return max(0, room // item_bytes)


def _unwritable(fields: Mapping[str, Any]) -> list[Problem]:
    """The problems of root attributes that the schema allows but HDF5 or §1.5/§5.4 do not let a writer store."""
    problems: list[Problem] = []

    def add(parts: list[str | int], message: str, attribute: str, keyword: str) -> None:
        problems.append(Problem(path=_pointer(parts), message=message, attribute=attribute, keyword=keyword))

    for key, value in fields.items():
        reason = "is empty" if not key else text_problem(key)
        if reason:
            add([key], f"root attribute name {key!r} {reason}; rename it", key, "storable")
            continue
        if key.startswith(spec.RESERVED_PREFIX):
            add(
                [key],
                f"root attribute name {key!r} starts with '_', which is reserved for the specification (§5.4); "
                "rename it, for example with a prefix and a colon such as 'acme:name' (§4.7)",
                key,
                "reserved",
            )
            continue
        items = value if isinstance(value, list) else [value]
        for index, item in enumerate(items):
            parts: list[str | int] = [key, index] if isinstance(value, list) else [key]
            if isinstance(item, str) and (reason := text_problem(item)):
                add(parts, f"root attribute {key!r} = {_short(item)} {reason} (§3.4)", key, "storable")
            elif isinstance(item, int) and not isinstance(item, bool) and not INT64_MIN <= item <= INT64_MAX:
                add(
                    parts,
                    f"root attribute {key!r} = {_short(item)} does not fit a signed 64-bit integer (§4.3); "
                    "store it as a str or a float",
                    key,
                    "storable",
                )
        if isinstance(value, list) and _storable(value) and value:
            item_bytes = VLEN_ELEMENT_BYTES if isinstance(value[0], str) else 8
            limit = max_list_items(key, item_bytes)
            if len(value) > limit:
                add(
                    [key],
                    f"root attribute {key!r} holds {len(value)} items, but a list attribute lives in the HDF5 "
                    f"object header, whose messages hold at most 64 KiB (§4.5): at most {limit} items of "
                    f"{item_bytes} bytes fit; shorten the list",
                    key,
                    "storable",
                )
        if key == "must_understand" and isinstance(value, list):
            unknown = [n for n in value if isinstance(n, str) and n not in spec.KNOWN_EXTENSIONS]
            if unknown:
                known = sorted(spec.KNOWN_EXTENSIONS)
                add(
                    [key],
                    f"must_understand names {unknown}, extension(s) this writer does not implement (it implements "
                    f"{known or 'none'}); a writer can only declare extensions whose rules it follows (§1.5)",
                    key,
                    "extension",
                )
    return problems


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
        stored; if a name starts with "_" (reserved, §5.4), ``must_understand``
        names an extension this package does not implement (none in 1.0,
        §1.5: a writer cannot write what an extension requires), a string
        holds a NUL character or a lone surrogate (§3.4), an integer does not
        fit a signed 64-bit integer (§4.3), or a list is too long for an
        attribute (:func:`max_list_items`, §4.5). ``problems`` lists every one.
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
    problems.extend(_unwritable({"name": name, **given}))
    problems.extend(validate_root({**doc, "complete": 1}))
    if problems:
        _raise(problems, "cannot build the h5ml root attributes", None)
    ordered: dict[str, Any] = {key: doc[key] for key in spec.ROOT_ATTRS if key in doc}
    ordered.update((key, value) for key, value in doc.items() if key not in ordered)
    return ordered
