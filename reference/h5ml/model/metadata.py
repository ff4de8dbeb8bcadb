"""Typed access to the root attributes of an h5ml file (§4.2, §4.6).

:func:`parse_root` checks a root attribute document (the root attributes
mapped to JSON as §4.6 says, see :func:`h5ml.spec.attrs.attrs_json`) and
returns a typed :class:`RootMetadata`, or raises
:class:`~h5ml.errors.MetadataError` listing every problem
(:func:`h5ml.model.problems.validate_root`). :class:`RootMetadata` is a
pydantic model whose checks are read from the root JSON Schema (patterns,
lengths, bounds, constants and formats), so it accepts and rejects exactly
the documents the schema does (tested). The attributes a writer stores are
built by :func:`h5ml.model.new_root.new_root_metadata`.
"""

from __future__ import annotations

import datetime
import functools
import re
from collections.abc import Mapping
from typing import Annotated, Any

import h5py
from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, ValidationError, field_validator

from h5ml import spec
from h5ml.model.problems import Problem, pointer, raise_problems, root_properties, validate_root
from h5ml.spec.attrs import attrs_json
from h5ml.spec.schemas import format_checker

__all__ = ["RootMetadata", "parse_root"]


# -- the schema's rules, applied to values pydantic has type-checked ----------


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
    failures = _rule_failures(root_properties()[attr], value)
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
    view_of, view_index_fingerprint
        Only in a view file of a sharded dataset (§12.6): the index it presents, relative to the view's folder,
        and that index's fingerprint (§12.3).
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
    view_of: Annotated[str, _rules("view_of")] | None = None
    view_index_fingerprint: Annotated[str, _rules("view_index_fingerprint")] | None = None

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
        """``created`` as a timezone-aware UTC datetime (fractions beyond microseconds are cut).

        A ``datetime`` has no second 60: a leap second (``23:59:60``, §4.2)
        comes back as ``23:59:59.999999``, the last instant it can hold before
        the next day, whatever fraction follows the 60.
        """
        if self.created[17:19] == "60":  # the schema admits 60 only in 23:59:60
            stamp = datetime.datetime.strptime(self.created[:17] + "59", "%Y-%m-%dT%H:%M:%S")
            return stamp.replace(microsecond=999_999, tzinfo=datetime.UTC)
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
        raise_problems(problems, "invalid h5ml root attributes", path)
    try:
        return RootMetadata.model_validate(dict(doc))
    except ValidationError as exc:  # pragma: no cover - the model and the schema agree (tested)
        found = [Problem(pointer(e["loc"]), e["msg"], str(e["loc"][0]) if e["loc"] else None) for e in exc.errors()]
        raise_problems(found, "invalid h5ml root attributes", path)
