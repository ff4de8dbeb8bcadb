"""Checks of attributes shared by the root, splits and features (§1.4, §3.7, §5.3, §6.1, §8.1).

- :func:`check_attributes`: I300 for attributes h5ml does not define, E116 for
  single values stored in a non-scalar dataspace; returns the values read.
- :func:`check_rules`: E117 for values that break their rule
  (:data:`SPLIT_ATTR_RULES`, :data:`FEATURE_ATTR_RULES`).
- :func:`check_fingerprint_attr`: E161 for a malformed ``fingerprint``, W202
  for a missing one.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Generator, Iterator
from typing import Any, Final, TypeAlias

from h5ml import spec
from h5ml.model.failures import LIBRARY_ERRORS, is_library_failure
from h5ml.model.fingerprint import FINGERPRINT_PATTERN
from h5ml.spec.attrs import read_attr
from h5ml.validator.checks.issue import Issue

__all__ = [
    "FEATURE_ATTR_RULES",
    "SPLIT_ATTR_RULES",
    "UNREADABLE",
    "Rules",
    "check_attributes",
    "check_fingerprint_attr",
    "check_rules",
    "is_int",
    "is_version",
    "read_value",
]


class _Unreadable:
    """An attribute value that could not be read or decoded."""

    def __repr__(self) -> str:
        return "<unreadable value>"


#: The value :func:`read_value` gives for an attribute that cannot be read or decoded.
UNREADABLE: Final = _Unreadable()


def is_int(value: Any) -> bool:
    """Tell whether ``value`` is an integer and not a bool.

    Parameters
    ----------
    value
        An attribute value as :func:`read_value` gives it.

    Returns
    -------
    bool
        True for an ``int`` that is not a ``bool``.
    """
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    # SPEC §6.7-R2: a real number is a scalar of any numeric type of §3.2 (binary16/32/64 or an integer)
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_str(value: Any) -> bool:
    return isinstance(value, str)


def is_version(value: Any) -> bool:
    """Tell whether ``value`` is a ``MAJOR.MINOR`` version string (§1.2).

    Parameters
    ----------
    value
        An attribute value as :func:`read_value` gives it.

    Returns
    -------
    bool
        True when :func:`h5ml.spec.parse_version` accepts it.
    """
    try:
        spec.parse_version(value)
    except ValueError:
        return False
    return True


def _is_media_type(value: Any) -> bool:
    return spec.media_type_problem(value) is None


#: Attribute name -> (rule its value must pass, what the rule expects, for the message).
Rules: TypeAlias = dict[str, tuple[Callable[[Any], bool], str]]

#: §6.1 feature attributes other than encoding/fingerprint: rule and what it expects (E117).
FEATURE_ATTR_RULES: Final[Rules] = {
    # SPEC §6.1-R4: every attribute of the table has its type and value (E117)
    "encoding_version": (is_version, "a MAJOR.MINOR string such as '1.0'"),
    "description": (_is_str, "a string"),
    "units": (_is_str, "a string"),
    "role": (lambda v: isinstance(v, str) and v in spec.ROLES, f"one of {', '.join(spec.ROLES)}"),
    "sample_rate": (lambda v: _is_number(v) and math.isfinite(v) and v > 0, "a positive finite number (Hz)"),
    "logical_dtype": (lambda v: v == "bool", "'bool'"),
    "stats_count": (lambda v: is_int(v) and v >= 0, "a non-negative integer"),  # SPEC §6.7-R5
    "stats_min": (_is_number, "a number"),  # SPEC §6.7-R2, for the four statistics and sample_rate
    "stats_max": (_is_number, "a number"),
    "stats_mean": (_is_number, "a number"),
    "stats_std": (_is_number, "a number"),
    "media_type": (  # SPEC §6.6-R1
        _is_media_type,
        "an IANA media type type/subtype with optional '; name=value' parameters, such as 'image/png' or "
        "'text/plain; charset=utf-8' (RFC 6838, §6.6)",
    ),
}
#: §5.3 split attributes other than num_samples (E117, SPEC §5.3-R3).
SPLIT_ATTR_RULES: Final[Rules] = {
    "description": (_is_str, "a string"),
    "shuffle_seed": (spec.is_shuffle_seed, "an integer in [0, 2**63)"),
}


def read_value(obj: Any, name: str) -> Any:
    """Read one attribute with :func:`h5ml.spec.attrs.read_attr`, never raising (§3.4).

    Parameters
    ----------
    obj
        The h5py object that carries the attribute.
    name
        The attribute's name.

    Returns
    -------
    object
        The value as :func:`h5ml.spec.attrs.read_attr` decodes it, or :data:`UNREADABLE`
        when the library or the decoding fails.
    """
    try:
        return read_attr(obj, name)
    except LIBRARY_ERRORS as exc:  # our decoding's TypeError or ValueError too: a type outside the profile
        if isinstance(exc, KeyError) and not is_library_failure(exc):
            raise
        # SPEC §3.4-R2: bytes that are not UTF-8 (and types outside the profile) are unreadable: E117 by the caller's rule
        return UNREADABLE


def _unknown_message(name: str, path: str) -> str:
    """The message of I300 for the attribute ``name`` of ``path``: the converters' own record says what it is."""
    if path == "/" and name == spec.SOURCE_SPLITS_ATTR:
        # §4.7: the provenance h5ml's converters record; "ignored" would read as data dropped, and none is
        return (
            f"attribute {name!r} of / is provenance that h5ml's converter recorded: where each split's samples came "
            "from (§4.7); informational only: a user attribute, kept with the file's metadata and not needed to "
            "decode any sample, so nothing is lost"
        )
    return f"attribute {name!r} of {path} is not defined by h5ml {spec.FORMAT_VERSION_STRING}; readers ignore it"


def check_attributes(
    obj: Any, path: str, known: Collection[str], singles: Collection[str], *, type_code: str = "E117"
) -> Generator[Issue, None, dict[str, Any]]:
    """I300 for unknown attributes, E116 for non-scalar single values, a type error for null ones (§1.4, §3.7).

    Parameters
    ----------
    obj
        The h5py object whose attributes are checked.
    path
        Its HDF5 path.
    known
        The attribute names h5ml defines on this object.
    singles
        The known names that hold a single value (stored in a scalar dataspace).
    type_code
        The code of a defined attribute with the wrong type or value on this
        object: ``"E117"`` on splits and features, ``"E107"`` on the root.

    Yields
    ------
    Issue
        I300 per unknown attribute (whatever its dataspace, a null one
        included: §4.7), E116 per single value of another shape, and
        ``type_code`` as well for a single value with a null dataspace, which
        holds no value of any type (§3.7).

    Returns
    -------
    dict
        The values of the known attributes that are present and scalar
        (:data:`UNREADABLE` for a value that cannot be decoded).
    """
    values: dict[str, Any] = {}
    attrs = obj.attrs  # once: h5py makes a new attribute manager (and, on a file, reopens its root) at each access
    for name in attrs:
        # SPEC §1.4-R3: an attribute this version does not define is I300
        if name not in known:
            yield Issue.of("I300", path, _unknown_message(name, path))
            continue
        # SPEC §3.7-R1: a single value is stored in a scalar dataspace (E116)
        if name in singles and attrs.get_id(name).shape != ():
            shape = attrs.get_id(name).shape
            yield Issue.of(
                "E116",
                path,
                f"attribute {name!r} of {path} holds a single value but is stored with shape "
                f"{shape if shape is not None else 'null'}; store it in a scalar dataspace",
            )
            # SPEC §3.7-R3: a null dataspace holds no value of the attribute's type: E117 (or E107 at the root) too
            if shape is None:
                yield Issue.of(
                    type_code,
                    path,
                    f"attribute {name!r} of {path} has a null dataspace and so no value; an attribute h5ml "
                    "defines must hold a value of its type (§3.7): write its value or delete the attribute",
                )
            continue
        values[name] = read_value(obj, name)
    return values


def check_rules(values: dict[str, Any], path: str, rules: Rules) -> Iterator[Issue]:
    """E117 for every attribute whose value breaks its rule (§5.3, §6.1).

    Parameters
    ----------
    values
        Attribute values, as :func:`check_attributes` returns them.
    path
        HDF5 path of the object that carries them.
    rules
        The rule of each attribute name.

    Yields
    ------
    Issue
        E117 per value that breaks its rule, in the order of ``rules``.
    """
    for name, (rule, expected) in rules.items():
        if name in values and not rule(values[name]):
            yield Issue.of("E117", path, f"attribute {name!r} of {path} is {values[name]!r}; it must be {expected}")


def check_fingerprint_attr(
    path: str, values: dict[str, Any], what: str, how: str, *, present: bool, view: bool = False
) -> Iterator[Issue]:
    """E161 for a malformed ``fingerprint`` attribute, W202 for a missing one (§8.1).

    Parameters
    ----------
    path
        HDF5 path of the file's root (``"/"``) or of a feature.
    values
        Its attribute values, as :func:`check_attributes` returns them.
    what
        ``"file"`` or ``"feature"``, for the message.
    how
        Where to learn how to compute it, for the message.
    present
        Whether the object carries a ``fingerprint`` attribute at all; one that
        is present but missing from ``values`` was not a scalar (E116 already
        reported) and gives nothing here.
    view
        The file is a view file (§12.6), which carries no fingerprints: a missing one is no W202.

    Yields
    ------
    Issue
        At most one: W202 or E161.
    """
    if not present:
        if view:  # SPEC §12.6: a view carries no fingerprint; its index fingerprint identifies its samples
            return
        yield Issue.of("W202", path, f"the {what} {path} carries no 'fingerprint' attribute; {how}")
        return
    if "fingerprint" not in values:
        return
    fp = values["fingerprint"]
    # SPEC §8.1-R1: a string "sha256:" and 64 lowercase hex digits, on a feature and on the root alike
    if not (isinstance(fp, str) and FINGERPRINT_PATTERN.match(fp)):
        yield Issue.of(
            "E161",
            path,
            f"the 'fingerprint' of {path} is {fp!r}, not 'sha256:' followed by 64 lowercase hex digits; recompute it",
        )
