"""The splits and their features: E116, E117, E120-E123, E130-E133, E161, W202, W207, I300, I301, I303, I304 (§5, §6.1).

:func:`check_splits` walks the members of the root group by name (each a
split, or a reserved name), then the members of each split (each a feature):
an object reachable under several names is checked under each of them (§3.6
allows several hard links; every split and feature name is checked by its own
path). For a feature it checks the attributes every feature carries (§6.1) and
hands the feature to its encoding's checks (:mod:`~h5ml.validator.checks.encodings`); a
feature whose structure is sound is queued on
:attr:`FileState.data_checks <h5ml.validator.checks.state.FileState.data_checks>` for
the checks of its data (:mod:`~h5ml.validator.checks.deep`), which run after every
metadata check. Only hard links are walked: other links were reported by
:func:`h5ml.validator.checks.storage.check_links`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Final

import h5py

from h5ml import spec
from h5ml.model.failures import LIBRARY_ERRORS
from h5ml.model.fingerprint import FINGERPRINT_PATTERN
from h5ml.spec.attrs import MISSING
from h5ml.validator.checks.attributes import (
    FEATURE_ATTR_RULES,
    SPLIT_ATTR_RULES,
    check_attributes,
    check_fingerprint_attr,
    check_rules,
    is_int,
    is_version,
    read_value,
)
from h5ml.validator.checks.checksums import check_checksum_member, is_checksum_member
from h5ml.validator.checks.encodings import check_encoding
from h5ml.validator.checks.issue import Issue, damaged
from h5ml.validator.checks.state import CheckedFeature, FileState, address, text

__all__ = ["check_splits"]

#: §1.4.1: the feature attributes whose string values a newer MINOR may extend (I300 there, E117 otherwise).
_OPEN_VALUES: Final = frozenset({"role", "logical_dtype", "media_type"})


def check_splits(state: FileState, f: h5py.File) -> Iterator[Issue]:
    """Check every member of the root group, each split and each feature (§5, §6).

    Parameters
    ----------
    state
        The file's state, after the root, link and storage checks; gets the
        features to read in ``data_checks``.
    f
        The open file.

    Yields
    ------
    Issue
        I301 for reserved names and objects that are neither groups nor
        datasets, E123 for a dataset at the root, the issues of each split and
        feature, E101 for a split the library cannot read.
    """
    for name in f:
        try:
            path, obj = state.member(f, "/", name)
        except LIBRARY_ERRORS as exc:
            state.all_fingerprints_computed = False
            yield damaged(exc, f"/{text(name)}", "opening")
            continue
        if obj is None:
            if not text(name).startswith(spec.RESERVED_PREFIX):
                state.all_fingerprints_computed = False  # a split behind a link that is never followed (E110, E115)
            continue
        # SPEC §1.4-R3 and §5.5-R2: objects this version does not define are I301
        if text(name).startswith(spec.RESERVED_PREFIX):
            yield Issue.of(
                "I301",
                path,
                f"{path} has a reserved name (starting with {spec.RESERVED_PREFIX!r}); "
                "this version defines nothing there and readers ignore it",
            )
        elif not isinstance(obj, (h5py.Group, h5py.Dataset)):
            yield Issue.of(
                "I301",
                path,
                f"{path} is a {type(obj).__name__}, neither a group nor a dataset; readers ignore it",
            )
        elif isinstance(obj, h5py.Dataset):  # SPEC §5.1-R1: a split is a group (E123)
            yield Issue.of(
                "E123",
                path,
                f"{path} is a {type(obj).__name__.lower()}, but every root member whose name does "
                f"not start with {spec.RESERVED_PREFIX!r} is a split and must be a group; move it into a split",
            )
        else:
            try:
                yield from _check_split(state, obj, path, name)
            except LIBRARY_ERRORS as exc:
                state.all_fingerprints_computed = False
                yield damaged(exc, path, "reading")


def _check_name(name: str | bytes, path: str, what: str) -> Iterator[Issue]:
    """E120 for a split or feature name that is not UTF-8 or breaks the naming rule (§5.1.1).

    Splits: SPEC §5.1-R2; features: SPEC §5.2-R1.
    """
    if isinstance(name, bytes):
        yield Issue.of("E120", path, f"the {what} name {name!r} is not valid UTF-8; rename it")
    elif not spec.is_valid_name(name):
        yield Issue.of(
            "E120",
            path,
            f"the {what} name {name!r} breaks the naming rule of §5.1.1 (not empty, no '/', no leading '.', "
            f"{spec.RESERVED_PREFIX!r} or whitespace, no trailing whitespace, at most 255 UTF-8 bytes); rename it",
        )


def _check_split(state: FileState, group: h5py.Group, path: str, name: str | bytes) -> Iterator[Issue]:
    """One split: name, attributes, members (§5.1-§5.3, §7.6)."""
    yield from _check_name(name, path, "split")
    if isinstance(name, str) and name in spec.SPLIT_ALIASES:
        yield Issue.of(
            "W207",
            path,
            f"split name {name!r} is an alias; use the standard name {spec.SPLIT_ALIASES[name]!r}",
        )
    values = yield from check_attributes(group, path, spec.SPLIT_ATTRS, spec.SPLIT_ATTRS)
    n: int | None = None
    # SPEC §5.3-R1: every split carries num_samples, a scalar integer >= 0 (E121; E116 when not scalar)
    if "num_samples" not in group.attrs:
        yield Issue.of("E121", path, f"split {path} has no 'num_samples' attribute; add it (an integer >= 0)")
    elif "num_samples" in values:
        value = values["num_samples"]
        if is_int(value) and value >= 0:
            n = value
        else:
            yield Issue.of("E121", path, f"'num_samples' of split {path} is {value!r}; it must be an integer >= 0")
    yield from check_rules(values, path, SPLIT_ATTR_RULES)  # SPEC §5.3-R3: description and shuffle_seed (E117)
    if "shuffle_seed" not in group.attrs:
        yield Issue.of(
            "I303",
            path,
            f"split {path} records no 'shuffle_seed': its samples may be in source order; "
            "shuffle on write with h5ml.write(..., shuffle=True, seed=...) in Python or 'h5ml convert SOURCE OUTPUT "
            "--shuffle --seed N' on the command line, or, for data streamed in an order already shuffled "
            "upstream, record the seed with Writer.add_split(name, shuffle_seed=...)",
        )
    for member_name in group:
        member_path, obj = state.member(group, path, member_name)
        reserved = text(member_name).startswith(spec.RESERVED_PREFIX)
        if obj is None:
            if not reserved:
                state.all_fingerprints_computed = False  # a feature behind a link that is never followed (E110, E115)
            continue
        if reserved and is_checksum_member(text(member_name)):  # SPEC §8.4-R1: defined by 1.1, not I301
            yield from check_checksum_member(group, member_path, text(member_name), in_feature=False)
            continue
        if reserved:  # SPEC §5.5-R2
            yield Issue.of("I301", member_path, f"{member_path} has a reserved name; readers ignore it")
            continue
        yield from _check_name(member_name, member_path, "feature")
        # not a feature: no line of the file fingerprint; SPEC §5.5-R2: I301
        if not isinstance(obj, (h5py.Dataset, h5py.Group)):
            yield Issue.of(
                "I301",
                member_path,
                f"{member_path} is a {type(obj).__name__}, not a feature (a dataset or a group); readers ignore it",
            )
            continue
        try:
            yield from _check_feature(state, obj, member_path, text(name), text(member_name), n)
        except LIBRARY_ERRORS as exc:
            state.all_fingerprints_computed = False
            yield damaged(exc, member_path, "reading")


def _check_feature_attrs(state: FileState, values: dict[str, Any], path: str, encoding: Any) -> Iterator[Issue]:
    """E117 (or I300 for a value of a newer MINOR) for the feature attributes of §6.1, §6.6, §6.7.

    SPEC §6.1-R4 (types and values of the table), SPEC §6.6-R1 (the form of
    ``media_type``), SPEC §6.7-R2 and SPEC §6.7-R5 (statistics and
    ``sample_rate``), through :data:`FEATURE_ATTR_RULES`; then SPEC §6.1-R5
    (``media_type`` on bytes features only) and SPEC §6.7-R1 (no statistics on
    string, categorical or bytes features). In a file of a newer MINOR, an
    undefined string value of ``role``, ``logical_dtype`` or ``media_type`` is
    I300 and the attribute is ignored (SPEC §1.4.1-R3).
    """
    ignored: set[str] = set()
    for name, (rule, expected) in FEATURE_ATTR_RULES.items():
        if name not in values or rule(values[name]):
            continue
        value = values[name]
        if name in _OPEN_VALUES and state.newer_minor and isinstance(value, str):
            # SPEC §1.4.1-R3: a string value this version does not define, in a newer-MINOR file, is I300 and ignored
            ignored.add(name)
            yield Issue.of(
                "I300",
                path,
                f"{name} {value!r} of {path} is not defined by h5ml {spec.FORMAT_VERSION_STRING}; the file's newer "
                f"version {state.format_version} may define it: readers ignore the attribute",
            )
            continue
        yield Issue.of("E117", path, f"attribute {name!r} of {path} is {value!r}; it must be {expected}")
    if encoding not in spec.ENCODINGS:
        return
    allowed = {
        "logical_dtype": ("dense", "ragged"),  # SPEC §3.3-R3: on dense and ragged features only (E117)
        **dict.fromkeys(spec.STATS_ATTRS, ("dense", "ragged")),  # SPEC §6.7-R1
        "media_type": ("bytes",),  # SPEC §6.1-R5
    }
    for name, encodings in allowed.items():
        if name in values and name not in ignored and encoding not in encodings:
            yield Issue.of(
                "E117",
                path,
                f"attribute {name!r} of {path} is allowed on {' and '.join(encodings)} features only, not on a "
                f"{encoding} feature; remove it",
            )


def _unknown_encoding(obj: Any) -> str | None:
    """The feature's ``encoding`` when it is a single string that this version does not define, else None (§1.4.1).

    Only the attribute ``encoding`` is read, in a scalar dataspace: a malformed one (an array, a number, bytes that
    are not UTF-8) is not an unknown encoding but an error that the common attribute checks report.
    """
    if "encoding" not in obj.attrs or obj.attrs.get_id("encoding").shape != ():
        return None
    encoding = read_value(obj, "encoding")
    return encoding if isinstance(encoding, str) and encoding not in spec.ENCODINGS else None


def _unknown_feature(state: FileState, path: str, encoding: str) -> Iterator[Issue]:
    """I301 for a feature of a newer-MINOR file whose encoding this version does not define (§1.4.1).

    SPEC §1.4.1-R2: I301, not E131. SPEC §1.4.1-R4: the feature is an unknown object as a whole: none of its
    attributes (its ``encoding_version`` included: no E130 when it is missing, no E117 when it is malformed)
    and none of its members is checked.
    """
    state.all_fingerprints_computed = False
    yield Issue.of(
        "I301",
        path,
        f"feature {path} has encoding {encoding!r}, which h5ml {spec.FORMAT_VERSION_STRING} does not "
        f"define; the file's newer version {state.format_version} may: readers ignore the feature"
        + (
            ", and the file fingerprint cannot be recomputed without it, so it is not checked (§8.3)"
            if state.deep
            else ""
        ),
    )


def _check_feature(state: FileState, obj: Any, path: str, split: str, name: str, n: int | None) -> Iterator[Issue]:
    """One feature: common attributes, encoding, then its encoding's checks and its data (§6, §8)."""
    unknown = _unknown_encoding(obj) if state.newer_minor else None
    if unknown is not None:
        yield from _unknown_feature(state, path, unknown)
        return
    values = yield from check_attributes(obj, path, spec.FEATURE_COMMON_ATTRS, spec.FEATURE_COMMON_ATTRS)
    attrs = obj.attrs  # h5py makes a new attribute manager at each ``.attrs``: once per feature
    for required in ("encoding", "encoding_version"):  # SPEC §6.1-R1 (E130)
        if required not in attrs:
            yield Issue.of(
                "E130", path, f"feature {path} has no {required!r} attribute; add it (SPEC §6 lists the encodings)"
            )
    encoding = values.get("encoding", MISSING)
    if encoding is not MISSING and encoding not in spec.ENCODINGS:
        state.all_fingerprints_computed = False
        yield Issue.of(  # SPEC §6.1-R2: an encoding 1.0 does not define, in a file whose MINOR is not newer
            "E131",
            path,
            f"feature {path} has encoding {encoding!r}, which h5ml {spec.FORMAT_VERSION_STRING} "
            f"does not define; use one of {', '.join(spec.ENCODINGS)}",
        )
    yield from _check_feature_attrs(state, values, path, encoding)
    yield from check_fingerprint_attr(
        path, values, "feature", "'h5ml.write' writes it (§8.2)", present="fingerprint" in attrs, view=state.view
    )
    version = values.get("encoding_version", MISSING)
    usable = encoding in spec.ENCODINGS and is_version(version)
    # SPEC §6.1-R3: the MAJOR of encoding_version is 1 (E132); a malformed one is E117 (SPEC §6.1-R4)
    if usable and spec.parse_version(version)[0] != spec.parse_version(spec.ENCODING_VERSION)[0]:
        usable = False
        yield Issue.of(
            "E132",
            path,
            f"feature {path} has encoding_version {version!r}; this implementation reads "
            f"major version {spec.parse_version(spec.ENCODING_VERSION)[0]} only: use a newer h5ml",
        )
    if not usable:
        state.all_fingerprints_computed = False
        return
    if spec.parse_version(version)[1] > spec.parse_version(spec.ENCODING_VERSION)[1]:
        # SPEC §6.1-S1: a newer encoding MINOR is I304; the feature is checked and read as the MINOR known here
        yield Issue.of(
            "I304",
            path,
            f"feature {path} has encoding_version {version!r}, newer than {spec.ENCODING_VERSION!r}: it is "
            f"checked as {encoding} {spec.ENCODING_VERSION}, and what that version does not define is ignored; "
            "upgrade h5ml for a full check",
        )
    fp = values.get("fingerprint")
    feature = CheckedFeature(
        split=split,
        name=name,
        path=path,
        encoding=encoding,
        obj=obj,
        logical_bool=values.get("logical_dtype") == "bool",
        fingerprint=fp if isinstance(fp, str) and FINGERPRINT_PATTERN.match(fp) else None,
    )
    expected_kind = spec.ENCODINGS[encoding]
    actual_kind = "dataset" if isinstance(obj, h5py.Dataset) else "group"
    if actual_kind != expected_kind:  # SPEC §6.1-R8: the object kind the encoding requires (E133)
        ok = False
        yield Issue.of(
            "E133",
            path,
            f"feature {path} has encoding {encoding!r}, stored as an HDF5 {expected_kind}, but it is a {actual_kind}",
        )
    else:
        ok = yield from check_encoding(state, feature, n)
    if ok and any(address(dset) in state.external for dset in feature.members.values()):
        ok = False  # its data lives elsewhere (E111/E112): never read it (§10.1)
    if not ok:
        state.all_fingerprints_computed = False
    elif state.deep:
        state.data_checks.append(feature)
