"""The root attributes a writer stores: defaults, the schema's checks, and what HDF5 can hold (§4.2-§4.7).

:func:`new_root_metadata` fills in what every file carries (``format``,
``format_version``, ``created``, ``writer``, ``must_understand``), checks the
given fields against the root schema (:func:`h5ml.model.problems.validate_root`)
and against what an HDF5 attribute can hold: UTF-8 text without NUL (§3.4),
signed 64-bit integers (§4.3), lists that fit an object header message
(§4.5, :func:`max_list_items`), no reserved names (§5.4), no extension this
writer does not implement (§1.5).
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, Final

from h5ml import spec
from h5ml._version import __version__
from h5ml.model.problems import Problem, pointer, raise_problems, short, validate_root
from h5ml.model.values import text_problem
from h5ml.spec.chunks import VLEN_ELEMENT_BYTES

__all__ = [
    "ATTR_MESSAGE_OVERHEAD",
    "HEADER_MESSAGE_BYTES",
    "INT64_MAX",
    "INT64_MIN",
    "WRITER_SET_ATTRS",
    "max_list_items",
    "new_root_metadata",
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
        problems.append(Problem(path=pointer(parts), message=message, attribute=attribute, keyword=keyword))

    for key, value in fields.items():
        reason = "is empty" if not key else text_problem(key)
        if reason:
            add([key], f"root attribute name {key!r} {reason}; rename it", key, "storable")
            continue
        if key.startswith(spec.RESERVED_PREFIX):  # SPEC §5.4-R1: no attribute name starting with "_"
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
                add(parts, f"root attribute {key!r} = {short(item)} {reason} (§3.4)", key, "storable")
            elif isinstance(item, int) and not isinstance(item, bool) and not INT64_MIN <= item <= INT64_MAX:
                add(
                    parts,
                    f"root attribute {key!r} = {short(item)} does not fit a signed 64-bit integer (§4.3); "
                    "store it as a str or a float",
                    key,
                    "storable",
                )
        # SPEC §4.5-R1: no attribute whose header message exceeds 65535 bytes (long lists are refused);
        # SPEC §4.5-R2: long text is fine, as write_attr stores it as a variable-length string
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
        # SPEC §1.5-R4, §1.5.1-R1: a writer lists only extensions it implements (none in 1.x), of either name form
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
            path=pointer([key]),
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
            path=pointer([key]),
            message=(
                f"user attribute {key!r} = {short(value)} cannot be stored as an HDF5 attribute; "
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
        # SPEC §1.2-R2: the version this package implements and writes
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
        raise_problems(problems, "cannot build the h5ml root attributes", None)
    ordered: dict[str, Any] = {key: doc[key] for key in spec.ROOT_ATTRS if key in doc}
    ordered.update((key, value) for key, value in doc.items() if key not in ordered)
    return ordered
