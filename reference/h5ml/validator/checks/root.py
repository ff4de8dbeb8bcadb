"""Checks of the root attributes: E102-E108, W202-W204, I302 (§1.2-§1.5, §3.7, §4, §8.1).

:func:`check_root` decides whether the file is an h5ml file this validator
can check at all (``format``, then ``format_version``), then checks the other
root attributes against §4.2 and the root metadata schema
(:func:`h5ml.model.metadata.validate_root`), reporting at most one issue per
attribute. It records on the :class:`~h5ml.validator.checks.state.FileState` the file's
version and the filters it declares, which later checks need.
"""

from __future__ import annotations

from collections.abc import Generator, Iterator
from typing import Any, Final

import h5py

from h5ml import spec
from h5ml.model.failures import LIBRARY_ERRORS, is_library_failure
from h5ml.model.problems import validate_root
from h5ml.model.view_files import VIEW_OF
from h5ml.spec.attrs import MISSING, to_json_value
from h5ml.validator.checks.attributes import (
    UNREADABLE,
    check_attributes,
    check_fingerprint_attr,
    is_int,
    is_version,
    read_value,
)
from h5ml.validator.checks.issue import Issue
from h5ml.validator.checks.state import FileState
from h5ml.validator.checks.storage import classify

__all__ = ["check_root"]

#: The kinds of :func:`~h5ml.validator.checks.storage.classify` each element type of an array root attribute accepts (§4.2).
_ELEMENT_KINDS: Final = {"string": ("string",), "integer": ("int", "uint")}


def check_root(state: FileState, f: h5py.File) -> Generator[Issue, None, bool]:
    """Check the root attributes (§1.2-§1.5, §3.7, §4, §8.1).

    Parameters
    ----------
    state
        The file's state; gets ``format_version``, ``newer_minor`` and ``required_filters``.
    f
        The open file.

    Yields
    ------
    Issue
        E102 (not h5ml), E103 (bad version), E104 (other MAJOR), I302 (newer
        MINOR), I300/E116 per attribute, E108 (required attribute missing),
        E106 (marker missing or an integer other than 1), E107 (schema, a
        marker that is not an integer), E105 (unknown extension), W203 (no
        license), W204 (no description, or an empty or whitespace-only one), W202/E161 (file fingerprint).

    Returns
    -------
    bool
        False when the file is not an h5ml file this validator can check (E102,
        E103, E104): the other checks are skipped.
    """
    fmt = read_value(f, "format") if "format" in f.attrs else MISSING
    # SPEC §4.1-R1: the root carries format = "h5ml" (E102); a missing or wrong one is E102 alone
    # (SPEC §4.2-R1 and §4.2-R2 give E102, not E108 or E107, for 'format')
    if fmt != spec.FORMAT_NAME:
        found = _found(fmt)
        yield Issue.of(
            "E102",
            "/",
            f"{state.path} is an HDF5 file but not an h5ml file: the root attribute 'format' {found}, "
            f"not {spec.FORMAT_NAME!r}; convert it with 'h5ml convert' or h5ml.write",
        )
        return False
    fv = read_value(f, "format_version") if "format_version" in f.attrs else MISSING
    if isinstance(fv, str):
        state.format_version = fv  # §9.3: the report gives the stored string, whatever its form
    # SPEC §4.2-R1 and §4.2-R2: a missing or malformed format_version is E103, not E108 or E107
    # SPEC §1.2-R1: format_version is a MAJOR.MINOR string (E103); nothing else is checked without it
    if fv is MISSING or not is_version(fv):
        # SPEC §9.1.2-R2: without a MAJOR.MINOR the rules to check against are unknown: E103 alone
        found = _found(fv)
        yield Issue.of(
            "E103",
            "/",
            f"the root attribute 'format_version' {found}; it must be a MAJOR.MINOR string "
            f"such as {spec.FORMAT_VERSION_STRING!r}",
        )
        return False
    major, minor = spec.parse_version(fv)
    state.format_version = fv
    # SPEC §1.3-R1, §1.3-R3: another MAJOR is E104, and the file is not checked further against 1.x
    if major != spec.FORMAT_VERSION[0]:
        advice = "use a newer h5ml to validate it" if major > spec.FORMAT_VERSION[0] else "rewrite it with h5ml.write"
        yield Issue.of(
            "E104",
            "/",
            f"the file's format_version is {fv!r} but this validator implements {spec.FORMAT_VERSION[0]}.x "
            f"(up to {spec.FORMAT_VERSION_STRING}); {advice}",
        )
        return False
    # SPEC §1.4-R2, §1.4-R3: a newer MINOR is checked by this version's rules and reported as I302
    state.newer_minor = minor > spec.FORMAT_VERSION[1]
    if state.newer_minor:
        yield Issue.of(
            "I302",
            "/",
            f"the file's format_version is {fv!r}, newer than {spec.FORMAT_VERSION_STRING}: "
            "what this validator does not know is reported as info; upgrade h5ml for a full check",
        )
    singles = [a for a in spec.ROOT_ATTRS if a not in spec.ROOT_ARRAY_ATTRS]
    # SPEC §4.2-R2: every root attribute of the table has its HDF5 type (single values scalar, E116 otherwise)
    values = yield from check_attributes(f, "/", spec.ROOT_ATTRS, singles, type_code="E107")
    handled = {"format", "format_version", "complete", "fingerprint"}
    handled.update(a for a in spec.ROOT_ATTRS if a in f.attrs and a not in values)  # non-scalar: E116
    for name, issue in _check_arrays(f):
        handled.add(name)
        values.pop(name, None)
        yield issue
    for name in spec.ROOT_REQUIRED_ATTRS:  # SPEC §4.2-R1: every required root attribute is present (E108)
        if name not in f.attrs and name not in handled:
            handled.add(name)
            yield Issue.of(
                "E108",
                "/",
                f"the required root attribute {name!r} is missing; add it (SPEC §4.2 lists every required attribute)",
            )
    if "complete" not in f.attrs:  # SPEC §4.4-R1: a valid file carries complete = 1 (E106)
        yield Issue.of(
            "E106",
            "/",
            f"{state.path} has no completion marker (root attribute 'complete' = 1): its writer "
            "did not finish, so data may be missing; write the file again",
        )
    elif "complete" in values:
        yield from _check_marker(f, values["complete"])
    doc: dict[str, Any] = {}
    attrs = f.attrs  # once: each access of File.attrs reopens the root group
    for name in attrs:
        try:
            doc[name] = to_json_value(attrs[name])
        except LIBRARY_ERRORS as exc:  # our decoding's TypeError or ValueError too: a type outside the profile
            if isinstance(exc, KeyError) and not is_library_failure(exc):
                raise
            if name in spec.ROOT_ATTRS and name not in handled:
                handled.add(name)
                yield Issue.of(
                    "E107", "/", f"the root attribute {name!r} cannot be read ({exc}); store it as SPEC §4.2 says"
                )
    # SPEC §4.6-R1: the root attributes, mapped to JSON as §4.6 says, satisfy the root schema (E107, E108);
    # SPEC §4.2-R2: the schema holds the values of the table (patterns, ranges, non-empty strings);
    # SPEC §1.5-R5: the schema refuses an empty or repeated extension name (E107);
    # SPEC §3.4-R2: a root string that is not UTF-8 reaches the schema as bytes, not a string (E107)
    for problem in validate_root(doc):
        if problem.attribute in handled:
            continue
        if problem.attribute is not None:
            handled.add(problem.attribute)  # one issue per attribute: the schema may find several problems
        yield Issue.of("E107", "/", problem.message)
    # SPEC §1.5-R2, §1.5-R3: each name of must_understand that this version does not define is E105
    must = values.get("must_understand")
    if isinstance(must, list):
        # SPEC §9.2.1-R1: E105 names each unknown non-empty name once; an empty or repeated name is E107 only
        unknown = list(dict.fromkeys(m for m in must if isinstance(m, str) and m and m not in spec.KNOWN_EXTENSIONS))
        if unknown:
            yield Issue.of(
                "E105",
                "/",
                f"'must_understand' lists extensions this implementation does not know: {unknown}; "
                "readers refuse the file; use a reader that implements them",
            )
    filters = values.get("required_filters")
    if isinstance(filters, list):
        state.required_filters = frozenset(x for x in filters if is_int(x))
    if "license" not in f.attrs:
        yield Issue.of(
            "W203", "/", "the file states no license: add the root attribute 'license' (SPDX, e.g. 'CC-BY-4.0')"
        )
    if "description" not in f.attrs:
        yield Issue.of("W204", "/", "the file has no description: add the root attribute 'description'")
    elif _is_blank(values.get("description")):
        # §4.2 (1.1): an empty or whitespace-only description is no description; a warning, never an error
        yield Issue.of(
            "W204",
            "/",
            "the root attribute 'description' is empty or only whitespace: write what the data is, how it was "
            "collected and its known limits",
        )
    state.view = VIEW_OF in f.attrs  # a view file (§12.6): its marker and mapping are checked with its storage
    yield from check_fingerprint_attr(
        "/",
        values,
        "file",
        "'h5ml.write' writes it, §8.3 says how to compute it",
        present="fingerprint" in f.attrs,
        view=state.view,
    )
    return True


def _is_blank(value: Any) -> bool:
    """True for a string that is empty or holds only the whitespace of §5.1.1 (:data:`spec.WHITESPACE`)."""
    return isinstance(value, str) and all(c in spec.WHITESPACE for c in value)


def _check_marker(f: h5py.File, value: Any) -> Iterator[Issue]:
    """E106 for a scalar completion marker that is an integer other than 1, E107 for one that is no integer (§4.4).

    The marker's type belongs to the metadata schema of §4.2 (``complete`` is
    an integer), its value to the completeness check of §4.4: a float 1.0 or a
    string ``"1"`` is E107 alone, an integer 0 or 2 is E106 alone (§4.4 says
    so). A datatype outside the storage profile is left to E113. SPEC §4.4-R1
    (E106) and SPEC §4.2-R2 (E107).
    """
    if is_int(value):
        if value != 1:
            yield Issue.of(
                "E106",
                "/",
                f"the completion marker 'complete' is {value!r}, not 1: the file is not marked complete, so its "
                "writer may not have finished it; write the file again",
            )
        return
    kind, detail = classify(f.attrs.get_id("complete").get_type())
    if kind == "forbidden":
        return
    found = "cannot be decoded" if value is UNREADABLE else f"is {value!r}"
    yield Issue.of(
        "E107",
        "/",
        f"the completion marker 'complete' {found}, stored as {detail}: §4.2 gives 'complete' an integer type, "
        "so this is not the marker of §4.4; store the integer 1 as a scalar of an integer type (h5ml.write "
        "writes int64)",
    )


def _found(value: Any) -> str:
    """Describe a root attribute's value for a message: missing, without a value, or its value."""
    if value is MISSING:
        return "is missing"
    if isinstance(value, h5py.Empty):
        return "holds no value (a null dataspace)"
    return f"is {value!r}"


def _check_arrays(f: h5py.File) -> Iterator[tuple[str, Issue]]:
    """E107 for each array root attribute not stored as a 1-D array of its element type (§3.7, §4.2).

    The JSON mapping of §4.6 cannot see these mistakes (an empty 2-D array and
    an empty integer array both map to ``[]``), so the HDF5 dataspace and
    datatype are checked themselves. A datatype outside the storage profile is
    left to E113 (SPEC §4.2-R2).
    """
    for name, element in spec.ROOT_ARRAY_ELEMENTS.items():
        if name not in f.attrs:
            continue
        aid = f.attrs.get_id(name)
        shape = aid.shape
        kind, detail = classify(aid.get_type())
        expected = f"a one-dimensional array of {element}s (possibly empty)"
        # SPEC §3.7-R2: a 1-D dataspace, possibly of length 0 (E107); SPEC §3.7-R3: a null dataspace is E107 here
        if shape is None or len(shape) != 1:
            found = "a null dataspace" if shape is None else ("a scalar" if shape == () else f"shape {shape}")
            yield (
                name,
                Issue.of(
                    "E107", "/", f"the root attribute {name!r} is stored as {found}; store it as {expected} (§3.7)"
                ),
            )
        elif kind != "forbidden" and kind not in _ELEMENT_KINDS[element]:
            yield name, Issue.of("E107", "/", f"the root attribute {name!r} holds {detail}; store it as {expected}")
