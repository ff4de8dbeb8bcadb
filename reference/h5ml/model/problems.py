"""Every problem of a root attribute document, in words: what is wrong, where (a JSON pointer), what to expect.

The JSON Schema ``schema/h5ml-root-1.0.schema.json`` is the authority on which
root attribute documents are valid (§4.2, §4.6). :func:`validate_root` lists
every way a document breaks it as :class:`Problem` values whose messages name
the attribute and quote the schema's description of what is expected;
:func:`is_valid_root` tells whether there is none; :func:`raise_problems`
turns problems into one :class:`~h5ml.errors.MetadataError`.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, NoReturn

import jsonschema

from h5ml.errors import MetadataError
from h5ml.spec.schemas import load_schema, validator_for

__all__ = ["Problem", "is_valid_root", "pointer", "raise_problems", "root_properties", "short", "validate_root"]

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


@functools.cache
def root_properties() -> dict[str, dict[str, Any]]:
    """The root schema's properties (§4.2), refusing a keyword that :class:`RootMetadata` does not apply."""
    properties: dict[str, dict[str, Any]] = load_schema("root")["properties"]
    for attr, rules in properties.items():
        for subschema in (rules, rules.get("items", {})):
            unknown = set(subschema) - _SUPPORTED_KEYWORDS
            if unknown:
                raise RuntimeError(
                    f"the root schema uses JSON Schema keyword(s) {sorted(unknown)} for attribute {attr!r}, which "
                    "h5ml.model.metadata.RootMetadata does not apply; teach h5ml/model/metadata.py those keywords"
                )
    return properties


def pointer(parts: Sequence[str | int]) -> str:
    """The JSON pointer (RFC 6901) of a path of keys and indices."""
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)


def short(value: Any, limit: int = 60) -> str:
    """``repr(value)``, cut to ``limit`` characters for a message."""
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
    shown = short(value)
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
    properties = root_properties()
    parts = list(error.absolute_path)
    if error.validator == "required":
        required = error.validator_value if isinstance(error.validator_value, list) else []
        missing = [str(n) for n in required if n not in doc]
        name = next((n for n in missing if error.message.startswith(repr(n))), missing[0])
        expected = properties[name]["description"]
        return Problem(
            path=pointer([name]),
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
        path=pointer(parts),
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


def raise_problems(problems: Sequence[Problem], what: str, path: str | None) -> NoReturn:
    """Raise one :class:`~h5ml.errors.MetadataError` listing every problem (``what`` says of what, ``path`` where)."""
    where = f" in {path} (HDF5 path /)" if path else ""
    lines = "".join(f"\n  - {p}" for p in problems)
    raise MetadataError(
        f"{what}{where}: {len(problems)} problem(s):{lines}",
        problems=[str(p) for p in problems],
        path=path,
        hdf5_path="/" if path else None,
    )
