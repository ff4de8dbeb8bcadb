"""The h5ml validator (SPEC.md §9): every rule of the specification, as issues.

Iteration is the primitive: :func:`iter_issues` opens one file and yields one
:class:`Issue` per broken rule (code, severity and clause from the registry in
:mod:`h5ml.codes`, the HDF5 path of the object concerned, and a message saying
what is wrong, where and what to do). :func:`validate` collects them in a
:class:`FileReport`, optionally in a child process with a time limit (§10.3),
and :func:`validate_many` in a :class:`Report` whose JSON form follows
``schema/h5ml-report-1.0.schema.json`` (§9.3).

What a validation reads
-----------------------
By default (``deep=False``) the validator reads no sample data: only
attributes, link kinds, shapes, datatypes, storage layouts, chunk shapes and
filter pipelines, plus the ``class_names`` of categorical features (metadata,
needed for E134). ``deep=True`` also reads every sample, in batches, to check
offsets, codes, booleans, shapes and UTF-8 and to recompute fingerprints
(the codes marked ``deep`` in the registry).

Paths
-----
``Issue.path`` is the HDF5 path of the object concerned (``"/"`` for the file
and its root group). An issue about an attribute has the path of the object
that carries it and names the attribute in its message.

The validator never follows an external or soft link and never reads a
dataset with external raw storage or a virtual dataset: it reports them
(§3.6, §10.1).
"""

from __future__ import annotations

import math
import os
import re
from collections import Counter
from collections.abc import Callable, Collection, Generator, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Final

import h5py
import numpy as np
import numpy.typing as npt
from h5py import h5d, h5l, h5t

from h5ml import spec
from h5ml._version import __version__
from h5ml.attrs import MISSING, read_attr, to_json_value
from h5ml.chunks import VLEN_ELEMENT_BYTES
from h5ml.codes import CODES, Severity
from h5ml.errors import EncodingError, ValidationTimeoutError
from h5ml.fingerprint import FINGERPRINT_PATTERN, FeatureHasher, file_fingerprint
from h5ml.metadata import validate_root
from h5ml.sandbox import ChildDiedError, run_with_timeout

__all__ = [
    "REPORT_VERSION",
    "FileReport",
    "Issue",
    "Report",
    "iter_issues",
    "validate",
    "validate_many",
]

#: §9.3 the version of the report format :meth:`Report.to_json` writes.
REPORT_VERSION: Final = "1.0"

#: §3.7 root attributes that hold arrays; every other spec attribute is single-valued.
_ROOT_ARRAY_ATTRS: Final = frozenset({"must_understand", "keywords", "required_filters"})
#: §5.1 common aliases of the standard split names (W207).
_SPLIT_ALIASES: Final = {"valid": "validation", "val": "validation", "dev": "validation", "eval": "test"}
#: §3.3 the members of h5ml's tolerated boolean enumeration (h5py's default for numpy bool).
_BOOL_ENUM_MEMBERS: Final = ((b"FALSE", 0), (b"TRUE", 1))
#: §6.7 statistics attributes, allowed on dense and ragged features only.
_STATS_ATTRS: Final = frozenset({"stats_count", "stats_min", "stats_max", "stats_mean", "stats_std"})
#: §7.4 a contiguous dense feature larger than this gets W209.
_LARGE_CONTIGUOUS_BYTES: Final = 1 << 30
#: Bytes of sample data a deep validation reads at once (memory bound, not a spec rule).
_BATCH_BYTES: Final = 16 << 20
#: Offsets entries a deep validation reads at once.
_OFFSETS_BATCH: Final = 1 << 20
#: §3.2 (exponent bits, mantissa bits) of the IEEE binary16/32/64 formats, by size in bytes.
_IEEE_FLOATS: Final = {2: (5, 10), 4: (8, 23), 8: (11, 52)}
#: Codes after which the file counts as unreadable (FileReport.readable).
_UNREADABLE_CODES: Final = frozenset({"E100", "E101"})
#: The 8-byte signature that starts an HDF5 superblock (at 0, 512, 1024, 2048, ...).
_HDF5_SIGNATURE: Final = b"\x89HDF\r\n\x1a\n"
_MEDIA_TYPE: Final = re.compile(r"^[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]*/[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]*(\s*;.*)?$")
#: Errors the HDF5 library raises through h5py on a damaged file.
_LIBRARY_ERRORS: Final = (OSError, RuntimeError)


class _Unreadable:
    """An attribute value that could not be read or decoded."""

    def __repr__(self) -> str:
        return "<unreadable value>"


_UNREADABLE: Final = _Unreadable()


# --------------------------------------------------------------------------- issues and reports


@dataclass(frozen=True)
class Issue:
    """One broken rule found in one file (§9.1, §9.2).

    Attributes
    ----------
    code
        The registry code, such as ``"E106"`` (see :data:`h5ml.codes.CODES`).
    name
        The code's stable snake_case name, such as ``"incomplete"``.
    severity
        error (a MUST broken), warning (a SHOULD) or info.
    path
        HDF5 path of the object concerned; ``"/"`` for the file and its root
        group. Issues about an attribute name it in ``message``.
    message
        What is wrong, where, and what to do.
    clause
        The SPEC clause the code enforces, such as ``"§4.4"``.
    """

    code: str
    name: str
    severity: Severity
    path: str
    message: str
    clause: str

    @classmethod
    def of(cls, code: str, path: str, message: str) -> Issue:
        """Make an issue of a registry code, taking name, severity and clause from the registry (§9.2).

        Parameters
        ----------
        code
            A code of :data:`h5ml.codes.CODES`.
        path
            HDF5 path of the object concerned.
        message
            What is wrong, where, and what to do.

        Returns
        -------
        Issue
            The issue.

        Raises
        ------
        KeyError
            If ``code`` is not in the registry.
        """
        entry = CODES[code]
        return cls(code, entry.name, entry.severity, path, message, entry.clause)

    def to_json(self) -> dict[str, str]:
        """Return the issue as the JSON object of the report format (§9.3).

        Returns
        -------
        dict
            ``code``, ``name``, ``severity``, ``path``, ``message``, ``clause``, all strings.
        """
        return {
            "code": self.code,
            "name": self.name,
            "severity": self.severity.value,
            "path": self.path,
            "message": self.message,
            "clause": self.clause,
        }

    def __str__(self) -> str:
        clause = "" if self.message.endswith(f"({self.clause})") else f" ({self.clause})"
        return f"{self.code} {self.severity.value} {self.path}: {self.message}{clause}"


def _count(issues: Iterable[Issue], severity: Severity) -> int:
    return sum(1 for i in issues if i.severity is severity)


@dataclass(frozen=True)
class FileReport:
    """The outcome of validating one file (§9).

    Attributes
    ----------
    path
        The file's path as the validator was given it.
    issues
        Every issue found, in the order the checks ran.
    format_version
        The file's ``format_version`` when it is a ``MAJOR.MINOR`` string, else None.
    deep
        Whether sample data was read (deep validation).
    """

    path: str
    issues: tuple[Issue, ...] = ()
    format_version: str | None = None
    deep: bool = False

    @property
    def readable(self) -> bool:
        """False when the file could not be opened or read as HDF5 (E100, E101)."""
        return not any(i.code in _UNREADABLE_CODES for i in self.issues)

    @property
    def valid(self) -> bool:
        """True when no issue has the severity error (§9.1)."""
        return _count(self.issues, Severity.ERROR) == 0

    @property
    def valid_strict(self) -> bool:
        """True when no issue is an error or a warning (§9.1)."""
        return self.valid and _count(self.issues, Severity.WARNING) == 0

    @property
    def codes(self) -> list[str]:
        """The codes of the issues, in order (with repeats)."""
        return [i.code for i in self.issues]

    def to_json(self, *, strict: bool = False) -> dict[str, Any]:
        """Return the file's entry of the report format (§9.3).

        Parameters
        ----------
        strict
            Strict mode (§9.1): ``valid`` is :attr:`valid_strict` (warnings fail too).

        Returns
        -------
        dict
            ``path``, ``readable``, ``valid`` (in the mode asked), ``valid_strict``,
            ``deep``, ``format_version`` (str or None), ``issues`` (list of
            :meth:`Issue.to_json`) and ``counts`` (issues per severity).
        """
        return {
            "path": self.path,
            "readable": self.readable,
            "valid": self.valid_strict if strict else self.valid,
            "valid_strict": self.valid_strict,
            "deep": self.deep,
            "format_version": self.format_version,
            "issues": [i.to_json() for i in self.issues],
            "counts": {s.value: _count(self.issues, s) for s in Severity},
        }


@dataclass(frozen=True)
class Report:
    """The outcome of validating several files (§9.3).

    Attributes
    ----------
    files
        One :class:`FileReport` per file, in the order the paths were given.
    """

    files: tuple[FileReport, ...] = field(default_factory=tuple)

    @property
    def valid(self) -> bool:
        """True when every file is valid (§9.1)."""
        return all(f.valid for f in self.files)

    @property
    def valid_strict(self) -> bool:
        """True when no file has an error or a warning (§9.1)."""
        return all(f.valid_strict for f in self.files)

    def to_json(self, *, strict: bool = False) -> dict[str, Any]:
        """Return the report as JSON following ``schema/h5ml-report-1.0.schema.json`` (§9.3).

        Parameters
        ----------
        strict
            Strict mode (§9.1): a file with warnings counts as not valid.

        Returns
        -------
        dict
            ``report_version`` (``"1.0"``), ``tool`` (``name`` ``"h5ml"`` and
            ``version``), ``files`` (:meth:`FileReport.to_json` each) and
            ``summary`` (numbers of ``files``, ``valid``, ``invalid`` and
            ``unreadable`` files).
        """
        valid = sum(1 for f in self.files if (f.valid_strict if strict else f.valid))
        return {
            "report_version": REPORT_VERSION,
            "tool": {"name": "h5ml", "version": __version__},
            "files": [f.to_json(strict=strict) for f in self.files],
            "summary": {
                "files": len(self.files),
                "valid": valid,
                "invalid": len(self.files) - valid,
                "unreadable": sum(1 for f in self.files if not f.readable),
            },
        }


# --------------------------------------------------------------------------- small helpers


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_str(value: Any) -> bool:
    return isinstance(value, str)


def _is_version(value: Any) -> bool:
    try:
        spec.parse_version(value)
    except ValueError:
        return False
    return True


def _is_media_type(value: Any) -> bool:
    return isinstance(value, str) and bool(_MEDIA_TYPE.match(value))


def _is_power_of_two(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


#: §6.1 feature attributes other than encoding/fingerprint: rule and what it expects (E117).
_FEATURE_ATTR_RULES: Final[dict[str, tuple[Callable[[Any], bool], str]]] = {
    "encoding_version": (_is_version, "a MAJOR.MINOR string such as '1.0'"),
    "description": (_is_str, "a string"),
    "units": (_is_str, "a string"),
    "role": (lambda v: isinstance(v, str) and v in spec.ROLES, f"one of {', '.join(spec.ROLES)}"),
    "sample_rate": (lambda v: _is_number(v) and math.isfinite(v) and v > 0, "a positive finite number (Hz)"),
    "logical_dtype": (lambda v: v == "bool", "'bool'"),
    "stats_count": (lambda v: _is_int(v) and v >= 0, "a non-negative integer"),
    "stats_min": (_is_number, "a number"),
    "stats_max": (_is_number, "a number"),
    "stats_mean": (_is_number, "a number"),
    "stats_std": (_is_number, "a number"),
    "media_type": (_is_media_type, "an IANA media type such as 'image/png'"),
}
#: §5.3 split attributes other than num_samples (E117).
_SPLIT_ATTR_RULES: Final[dict[str, tuple[Callable[[Any], bool], str]]] = {
    "description": (_is_str, "a string"),
    "shuffle_seed": (lambda v: _is_int(v) and v >= 0, "a non-negative integer"),
}


def _read_value(obj: Any, name: str) -> Any:
    """Read one attribute with :func:`h5ml.attrs.read_attr`; ``_UNREADABLE`` if it cannot be decoded."""
    try:
        return read_attr(obj, name)
    except (*_LIBRARY_ERRORS, TypeError, ValueError):
        return _UNREADABLE


def _classify(tid: Any) -> tuple[str, str]:
    """Sort an HDF5 datatype into the storage profile (§3.2).

    Returns
    -------
    tuple of str
        ``(kind, detail)``: kind is ``"int"``, ``"uint"``, ``"float"``,
        ``"string"``, ``"bool_enum"`` or ``"forbidden"``; detail describes the type.
    """
    cls = tid.get_class()
    size = tid.get_size()
    if cls == h5t.INTEGER:
        signed = tid.get_sign() != h5t.SGN_NONE
        kind = "int" if signed else "uint"
        if size not in (1, 2, 4, 8):
            return "forbidden", f"a {8 * size}-bit integer"
        if tid.get_precision() != 8 * size or tid.get_offset() != 0:
            return "forbidden", f"an integer of {tid.get_precision()} bits at bit offset {tid.get_offset()}"
        return kind, f"{'' if signed else 'u'}int{8 * size}"
    if cls == h5t.FLOAT:
        _spos, _epos, esize, _mpos, msize = tid.get_fields()
        if _IEEE_FLOATS.get(size) == (esize, msize):
            return "float", f"float{8 * size}"
        return "forbidden", f"a {8 * size}-bit float that is not IEEE binary16/32/64"
    if cls == h5t.STRING:
        return "string", "a string"
    if cls == h5t.ENUM:
        base = tid.get_super()
        members = tuple((tid.get_member_name(i), tid.get_member_value(i)) for i in range(tid.get_nmembers()))
        if base.get_size() == 1 and base.get_sign() != h5t.SGN_NONE and members == _BOOL_ENUM_MEMBERS:
            return "bool_enum", "an HDF5 enum boolean (h5py's default for numpy bool)"
        return "forbidden", "an enum other than the boolean FALSE = 0, TRUE = 1 over int8"
    names = {
        h5t.COMPOUND: "a compound type",
        h5t.OPAQUE: "an opaque type",
        h5t.REFERENCE: "a reference type",
        h5t.ARRAY: "an array type",
        h5t.VLEN: "a variable-length sequence of non-strings",
        h5t.BITFIELD: "a bitfield",
        h5t.TIME: "a time type",
    }
    return "forbidden", names.get(cls, f"an HDF5 type of class {cls}")


_NUMERIC: Final = frozenset({"int", "uint", "float", "bool_enum"})


def _text(name: str | bytes) -> str:
    """A link or attribute name as text: h5py gives bytes for names that are not UTF-8."""
    return name if isinstance(name, str) else name.decode("utf-8", "replace")


def _hdf5_path(parent: str, name: str) -> str:
    return f"{parent.rstrip('/')}/{name}"


def _itemsize_in_chunk(tid: Any) -> int:
    if tid.get_class() == h5t.STRING and tid.is_variable_str():
        return VLEN_ELEMENT_BYTES
    return int(tid.get_size())


def _whole_rows(shape: Sequence[int], chunks: Sequence[int]) -> bool:
    """§7.1: every axis after the first is whole (an axis of extent 0 counts as whole)."""
    return all(s == 0 or c == s for s, c in zip(shape[1:], chunks[1:], strict=True))


def _row_slab(shape: Sequence[int], chunks: Sequence[int], itemsize: int) -> bool:
    """§7.1.1: a C-order slab of one row of at most LARGE_SAMPLE_BYTES.

    ``c0 = 1`` and for some axis ``j >= 1``: ``ci = 1`` before ``j``, ``1 <= cj <= sj``, ``ci = si`` after ``j``.
    """
    if chunks[0] != 1 or itemsize * math.prod(chunks) > spec.LARGE_SAMPLE_BYTES:
        return False
    for j in range(1, len(shape)):
        if (
            all(c == 1 for c in chunks[1:j])
            and 1 <= chunks[j] <= max(1, shape[j])
            and _whole_rows(shape[j:], chunks[j:])
        ):
            return True
    return False


def _row_bytes(dset: h5py.Dataset) -> int:
    return _itemsize_in_chunk(dset.id.get_type()) * int(math.prod(dset.shape[1:]))


@dataclass
class _Feature:
    """What the structural checks learned about a feature, for the deep checks."""

    split: str
    name: str
    path: str
    encoding: str
    obj: Any
    logical_bool: bool
    fingerprint: str | None
    members: dict[str, h5py.Dataset] = field(default_factory=dict)
    class_names: list[str] | None = None


class _ReadError(Exception):
    """Sample data of ``path`` could not be read (E145)."""

    def __init__(self, path: str, cause: BaseException) -> None:
        super().__init__(path, cause)
        self.path = path
        self.cause = cause


def _read(dset: h5py.Dataset, sel: slice) -> Any:
    """Read ``dset[sel]``, turning a library failure into :class:`_ReadError`."""
    try:
        return dset[sel]
    except _LIBRARY_ERRORS as exc:
        raise _ReadError(dset.name, exc) from exc


def _rows_per_batch(dset: h5py.Dataset) -> int:
    rows = max(1, _BATCH_BYTES // max(1, _row_bytes(dset)))
    if dset.chunks is not None:
        step = dset.chunks[0]
        rows = max(step, rows // step * step)
    return rows


def _superblock_version(fh: Any) -> int | None:
    """Return the superblock version byte of an open binary file, None if no HDF5 signature (§3.1)."""
    offset = 0
    while True:
        fh.seek(offset)
        head = fh.read(len(_HDF5_SIGNATURE) + 1)
        if len(head) < len(_HDF5_SIGNATURE) + 1:
            return None
        if head.startswith(_HDF5_SIGNATURE):
            return int(head[-1])
        offset = 512 if offset == 0 else offset * 2


# --------------------------------------------------------------------------- the checks


class _Checker:
    """The checks of one file; :meth:`run` yields the issues (§9)."""

    def __init__(self, path: str, deep: bool) -> None:
        self.path = path
        self.deep = deep
        self.format_version: str | None = None
        self.newer_minor = False  # §1.4.1: unknown encodings and roles are info, not errors
        self.required_filters: frozenset[int] = frozenset()
        self.link_kind: dict[str, str] = {}  # HDF5 path -> "hard" or "other" (external, soft, user-defined)
        self.raw_paths: dict[str, bytes] = {}  # HDF5 path -> the path's bytes, to open names that are not UTF-8
        self.external: set[str] = set()  # datasets whose data lives outside the file (E111, E112)
        self.computed: dict[tuple[str, str], str] = {}
        self.all_fingerprints_computed = True

    # ---- the file ------------------------------------------------------------

    def run(self) -> Iterator[Issue]:
        """Yield every issue of the file."""
        path = self.path
        if os.path.isdir(path):
            yield Issue.of("E100", "/", f"{path} is a directory, not an HDF5 file; give the path of an h5ml file")
            return
        try:
            with open(path, "rb") as fh:
                if not fh.read(1):
                    yield Issue.of(
                        "E100",
                        "/",
                        f"{path} is empty (0 bytes): its writer stopped before writing anything; rewrite it",
                    )
                    return
                version = _superblock_version(fh)
        except OSError as exc:
            yield Issue.of("E100", "/", f"{path} cannot be read: {exc.strerror or exc}; check the path and permissions")
            return
        if version is None:
            yield Issue.of(
                "E100",
                "/",
                f"{path} is not an HDF5 file (no HDF5 signature at offset 0, 512, 1024, ...); "
                "convert it to h5ml first (see 'h5ml convert')",
            )
            return
        if version > spec.MAX_SUPERBLOCK_VERSION:
            yield Issue.of(
                "E109",
                "/",
                f"{path} has superblock version {version}; HDF5 1.10 reads versions up to "
                f"{spec.MAX_SUPERBLOCK_VERSION}: rewrite the file with libver bounds {spec.LIBVER_BOUNDS}",
            )
        try:
            f = h5py.File(path, "r", locking=False)
        except _LIBRARY_ERRORS as exc:
            yield Issue.of(
                "E100", "/", f"HDF5 cannot open {path}: {exc}; the file is truncated or damaged: restore or rewrite it"
            )
            return
        with f:
            try:
                yield from self.check_file(f)
            except _LIBRARY_ERRORS as exc:
                yield Issue.of("E101", "/", f"the HDF5 library failed while reading {path}: {exc}; the file is damaged")

    def check_file(self, f: h5py.File) -> Iterator[Issue]:
        if not (yield from self.check_root(f)):
            return
        yield from self.check_links(f)
        yield from self.check_storage(f)
        yield from self.check_layout(f)

    # ---- root attributes (§1, §4) --------------------------------------------

    def check_root(self, f: h5py.File) -> Generator[Issue, None, bool]:
        """Root attributes; return False when the file is not an h5ml file this validator can check."""
        fmt = _read_value(f, "format") if "format" in f.attrs else MISSING
        if fmt != spec.FORMAT_NAME:
            found = "is missing" if fmt is MISSING else f"is {fmt!r}"
            yield Issue.of(
                "E102",
                "/",
                f"{self.path} is an HDF5 file but not an h5ml file: the root attribute 'format' {found}, "
                f"not {spec.FORMAT_NAME!r}; convert it with 'h5ml convert' or h5ml.write",
            )
            return False
        fv = _read_value(f, "format_version") if "format_version" in f.attrs else MISSING
        if fv is MISSING or not _is_version(fv):
            found = "is missing" if fv is MISSING else f"is {fv!r}"
            yield Issue.of(
                "E103",
                "/",
                f"the root attribute 'format_version' {found}; it must be a MAJOR.MINOR string "
                f"such as {spec.FORMAT_VERSION_STRING!r}",
            )
            return False
        major, minor = spec.parse_version(fv)
        self.format_version = fv
        if major != spec.FORMAT_VERSION[0]:
            advice = (
                "use a newer h5ml to validate it" if major > spec.FORMAT_VERSION[0] else "rewrite it with h5ml.write"
            )
            yield Issue.of(
                "E104",
                "/",
                f"the file's format_version is {fv!r} but this validator implements {spec.FORMAT_VERSION[0]}.x "
                f"(up to {spec.FORMAT_VERSION_STRING}); {advice}",
            )
            return False
        self.newer_minor = minor > spec.FORMAT_VERSION[1]
        if self.newer_minor:
            yield Issue.of(
                "I302",
                "/",
                f"the file's format_version is {fv!r}, newer than {spec.FORMAT_VERSION_STRING}: "
                "what this validator does not know is reported as info; upgrade h5ml for a full check",
            )
        singles = [a for a in spec.ROOT_ATTRS if a not in _ROOT_ARRAY_ATTRS]
        values = yield from self.check_attributes(f, "/", spec.ROOT_ATTRS, singles)
        handled = {"format", "format_version", "complete", "fingerprint"}
        handled.update(a for a in spec.ROOT_ATTRS if a in f.attrs and a not in values)  # non-scalar: E116
        for name in spec.ROOT_REQUIRED_ATTRS:
            if name not in f.attrs and name not in handled:
                handled.add(name)
                yield Issue.of(
                    "E108",
                    "/",
                    f"the required root attribute {name!r} is missing; add it (SPEC §4.2 lists "
                    "every required attribute)",
                )
        if "complete" not in f.attrs:
            yield Issue.of(
                "E106",
                "/",
                f"{self.path} has no completion marker (root attribute 'complete' = 1): its writer "
                "did not finish, so data may be missing; write the file again",
            )
        elif "complete" in values and not (_is_int(values["complete"]) and values["complete"] == 1):
            yield Issue.of(
                "E106",
                "/",
                f"the completion marker 'complete' is {values['complete']!r}, not the integer 1: the "
                "file is not marked complete; write the file again",
            )
        doc: dict[str, Any] = {}
        for name in f.attrs:
            try:
                doc[name] = to_json_value(f.attrs[name])
            except (*_LIBRARY_ERRORS, TypeError, ValueError) as exc:
                if name in spec.ROOT_ATTRS and name not in handled:
                    handled.add(name)
                    yield Issue.of(
                        "E107", "/", f"the root attribute {name!r} cannot be read ({exc}); store it as SPEC §4.2 says"
                    )
        for problem in validate_root(doc):
            if problem.attribute in handled:
                continue
            if problem.attribute is not None:
                handled.add(problem.attribute)  # one issue per attribute: the schema may find several problems
            yield Issue.of("E107", "/", problem.message)
        must = values.get("must_understand")
        if isinstance(must, list):
            unknown = [m for m in must if isinstance(m, str) and m not in spec.KNOWN_EXTENSIONS]
            if unknown:
                yield Issue.of(
                    "E105",
                    "/",
                    f"'must_understand' lists extensions this implementation does not know: {unknown}; "
                    "readers refuse the file; use a reader that implements them",
                )
        filters = values.get("required_filters")
        if isinstance(filters, list):
            self.required_filters = frozenset(x for x in filters if _is_int(x))
        if "license" not in f.attrs:
            yield Issue.of(
                "W203", "/", "the file states no license: add the root attribute 'license' (SPDX, e.g. 'CC-BY-4.0')"
            )
        if "description" not in f.attrs:
            yield Issue.of("W204", "/", "the file has no description: add the root attribute 'description'")
        yield from self.check_fingerprint_attr(
            "/", values, "file", "'h5ml.write' writes it, §8.3 says how to compute it"
        )
        return True

    def check_fingerprint_attr(self, path: str, values: dict[str, Any], what: str, how: str) -> Iterator[Issue]:
        """E161 for a malformed ``fingerprint`` attribute, W202 for a missing one (§8.1)."""
        if "fingerprint" not in values:
            yield Issue.of("W202", path, f"the {what} {path} carries no 'fingerprint' attribute; {how}")
            return
        fp = values["fingerprint"]
        if not (isinstance(fp, str) and FINGERPRINT_PATTERN.match(fp)):
            yield Issue.of(
                "E161",
                path,
                f"the 'fingerprint' of {path} is {fp!r}, not 'sha256:' followed by 64 lowercase hex "
                "digits; recompute it",
            )

    def check_attributes(
        self, obj: Any, path: str, known: Collection[str], singles: Collection[str]
    ) -> Generator[Issue, None, dict[str, Any]]:
        """I300 for unknown attributes, E116 for non-scalar single values (§1.4, §3.7).

        Returns the values of the known attributes that are present and scalar
        (``_UNREADABLE`` for a value that cannot be decoded).
        """
        values: dict[str, Any] = {}
        for name in obj.attrs:
            if name not in known:
                yield Issue.of(
                    "I300",
                    path,
                    f"attribute {name!r} of {path} is not defined by h5ml {spec.FORMAT_VERSION_STRING}; "
                    "readers ignore it",
                )
                continue
            if name in singles and obj.attrs.get_id(name).shape != ():
                shape = obj.attrs.get_id(name).shape
                yield Issue.of(
                    "E116",
                    path,
                    f"attribute {name!r} of {path} holds a single value but is stored with shape "
                    f"{shape if shape is not None else 'null'}; store it in a scalar dataspace",
                )
                continue
            values[name] = _read_value(obj, name)
        return values

    # ---- links and storage profile (§3) --------------------------------------

    def check_links(self, f: h5py.File) -> Iterator[Issue]:
        """E110/E115 for every external, soft or user-defined link; records every link (§3.6, §10.1).

        Uses HDF5's own link visit, which never follows external or soft links, and keeps names as
        bytes, so that a name that is not UTF-8 cannot stop the visit.
        """
        found: list[tuple[bytes, int]] = []
        f.id.links.visit(lambda name, info: found.append((name, info.type)), info=True)
        for raw, kind in found:
            path = "/" + _text(raw)
            self.raw_paths[path] = b"/" + raw
            if kind == h5l.TYPE_HARD:
                self.link_kind[path] = "hard"
                continue
            self.link_kind[path] = "other"
            if kind == h5l.TYPE_EXTERNAL:
                target_file, target = (_text(part) for part in f.id.links.get_val(raw))
                yield Issue.of(
                    "E110",
                    path,
                    f"{path} is an external link to {target!r} in file {target_file!r}; it was not "
                    "followed: copy the data into this file (readers refuse external data, §10.1)",
                )
            else:
                what = "a soft link" if kind == h5l.TYPE_SOFT else f"a user-defined link (type {kind})"
                yield Issue.of(
                    "E115", path, f"{path} is {what}; store the object under one hard link only, without aliases"
                )

    def check_storage(self, f: h5py.File) -> Iterator[Issue]:
        """Datatypes, filters, external storage and virtual datasets of every object (§3.2-§3.6)."""
        paths = ["/", *(p for p, kind in self.link_kind.items() if kind == "hard")]
        for path in paths:
            try:
                obj = f[self.raw_paths.get(path, path)]
                for name in obj.attrs:
                    yield from self.check_type(obj.attrs.get_id(name).get_type(), path, f"attribute {name!r} of {path}")
                if isinstance(obj, h5py.Dataset):
                    yield from self.check_type(obj.id.get_type(), path, f"dataset {path}")
                    yield from self.check_dataset_storage(obj, path)
            except (*_LIBRARY_ERRORS, KeyError) as exc:
                yield Issue.of("E101", path, f"the HDF5 library failed while reading {path}: {exc}")

    def check_type(self, tid: Any, path: str, what: str) -> Iterator[Issue]:
        """E113, W208, W205, W206 for one datatype (§3.2-§3.4)."""
        kind, detail = _classify(tid)
        if kind == "forbidden":
            yield Issue.of(
                "E113",
                path,
                f"{what} has {detail}, which the storage profile forbids; use integers, IEEE floats "
                "or variable-length UTF-8 strings",
            )
        elif kind == "bool_enum":
            yield Issue.of("W208", path, f"{what} is {detail}; store booleans as uint8 0/1 with logical_dtype 'bool'")
        elif kind == "string":
            if not tid.is_variable_str():
                yield Issue.of("W205", path, f"{what} holds fixed-length strings; write variable-length UTF-8 strings")
            if tid.get_cset() == h5t.CSET_ASCII:
                yield Issue.of("W206", path, f"{what} holds strings with the ASCII character set; write UTF-8")

    def check_dataset_storage(self, dset: h5py.Dataset, path: str) -> Iterator[Issue]:
        """E111, E112, E114 for one dataset (§3.5, §3.6)."""
        plist = dset.id.get_create_plist()
        if plist.get_external_count() > 0 or plist.get_layout() == h5d.VIRTUAL:
            self.external.add(path)
        if plist.get_external_count() > 0:
            files = sorted(
                {plist.get_external(i)[0].decode("utf-8", "replace") for i in range(plist.get_external_count())}
            )
            yield Issue.of(
                "E111",
                path,
                f"dataset {path} keeps its raw data in external file(s) {files}; it was not read: "
                "store the data inside the file (readers refuse external data, §10.1)",
            )
        if plist.get_layout() == h5d.VIRTUAL:
            yield Issue.of(
                "E112",
                path,
                f"dataset {path} is a virtual dataset (its data lives in other datasets or files); "
                "store the data itself",
            )
        for i in range(plist.get_nfilters()):
            filter_id, _flags, _values, filter_name = plist.get_filter(i)
            if filter_id not in spec.CORE_FILTERS and filter_id not in self.required_filters:
                label = filter_name.decode("utf-8", "replace") if isinstance(filter_name, bytes) else str(filter_name)
                yield Issue.of(
                    "E114",
                    path,
                    f"dataset {path} uses HDF5 filter {filter_id} ({label}), which is not a core filter "
                    f"({', '.join(spec.CORE_FILTERS.values())}) and is not listed in the root attribute "
                    "'required_filters'; declare it there or rewrite the data with gzip",
                )

    # ---- layout (§5) ---------------------------------------------------------

    def member(self, group: Any, parent: str, name: str | bytes) -> tuple[str, Any]:
        """Return the path and object of a hard-linked member, or (path, None) for another link kind."""
        path = _hdf5_path(parent, _text(name))
        if self.link_kind.get(path) != "hard":
            return path, None
        try:
            return path, group[name]
        except KeyError as exc:  # h5py's error for an object header it cannot read
            raise OSError(f"cannot open {path}: {exc}") from exc

    def check_layout(self, f: h5py.File) -> Iterator[Issue]:
        for name in f:
            path, obj = self.member(f, "/", name)
            if obj is None:
                continue
            if _text(name).startswith(spec.RESERVED_PREFIX):
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
            elif isinstance(obj, h5py.Dataset):
                yield Issue.of(
                    "E123",
                    path,
                    f"{path} is a {type(obj).__name__.lower()}, but every root member whose name does "
                    f"not start with {spec.RESERVED_PREFIX!r} is a split and must be a group; move it into a split",
                )
            else:
                try:
                    yield from self.check_split(obj, path, name)
                except _LIBRARY_ERRORS as exc:
                    self.all_fingerprints_computed = False
                    yield Issue.of("E101", path, f"the HDF5 library failed while reading {path}: {exc}")
        if self.deep:
            yield from self.check_file_fingerprint(f)

    def check_name(self, name: str | bytes, path: str, what: str) -> Iterator[Issue]:
        if isinstance(name, bytes):
            yield Issue.of("E120", path, f"the {what} name {name!r} is not valid UTF-8; rename it")
        elif not spec.is_valid_name(name):
            yield Issue.of(
                "E120",
                path,
                f"the {what} name {name!r} breaks the naming rule of §5.1.1 (not empty, no '/', no leading '.', "
                f"{spec.RESERVED_PREFIX!r} or whitespace, no trailing whitespace, at most 255 UTF-8 bytes); rename it",
            )

    def check_split(self, group: h5py.Group, path: str, name: str | bytes) -> Iterator[Issue]:
        """One split: name, attributes, members (§5.1-§5.3, §7.6)."""
        yield from self.check_name(name, path, "split")
        if isinstance(name, str) and name in _SPLIT_ALIASES:
            yield Issue.of(
                "W207",
                path,
                f"split name {name!r} is an alias; use the standard name {_SPLIT_ALIASES[name]!r}",
            )
        values = yield from self.check_attributes(group, path, spec.SPLIT_ATTRS, spec.SPLIT_ATTRS)
        n: int | None = None
        if "num_samples" not in group.attrs:
            yield Issue.of("E121", path, f"split {path} has no 'num_samples' attribute; add it (an integer >= 0)")
        elif "num_samples" in values:
            value = values["num_samples"]
            if _is_int(value) and value >= 0:
                n = value
            else:
                yield Issue.of("E121", path, f"'num_samples' of split {path} is {value!r}; it must be an integer >= 0")
        yield from self.check_rules(values, path, _SPLIT_ATTR_RULES)
        if "shuffle_seed" not in group.attrs:
            yield Issue.of(
                "I303",
                path,
                f"split {path} records no 'shuffle_seed': its samples may be in source order; "
                "shuffle on write (h5ml.write(..., shuffle=True, seed=...))",
            )
        for member_name in group:
            member_path, obj = self.member(group, path, member_name)
            if obj is None:
                self.all_fingerprints_computed = False
                continue
            if _text(member_name).startswith(spec.RESERVED_PREFIX):
                yield Issue.of("I301", member_path, f"{member_path} has a reserved name; readers ignore it")
                continue
            yield from self.check_name(member_name, member_path, "feature")
            if not isinstance(obj, (h5py.Dataset, h5py.Group)):
                self.all_fingerprints_computed = False
                yield Issue.of(
                    "I301",
                    member_path,
                    f"{member_path} is a {type(obj).__name__}, not a feature (a dataset or a group); readers ignore it",
                )
                continue
            try:
                yield from self.check_feature(obj, member_path, _text(name), _text(member_name), n)
            except _LIBRARY_ERRORS as exc:
                self.all_fingerprints_computed = False
                yield Issue.of("E101", member_path, f"the HDF5 library failed while reading {member_path}: {exc}")

    def check_rules(
        self, values: dict[str, Any], path: str, rules: dict[str, tuple[Callable[[Any], bool], str]]
    ) -> Iterator[Issue]:
        """E117 for every attribute whose value breaks its rule (§5.3, §6.1)."""
        for name, (rule, expected) in rules.items():
            if name in values and not rule(values[name]):
                yield Issue.of("E117", path, f"attribute {name!r} of {path} is {values[name]!r}; it must be {expected}")

    # ---- features (§6) -------------------------------------------------------

    def check_feature_attrs(self, values: dict[str, Any], path: str, encoding: Any) -> Iterator[Issue]:
        """E117 (or I300 for a role of a newer MINOR) for the feature attributes of §6.1, §6.6, §6.7."""
        for name, (rule, expected) in _FEATURE_ATTR_RULES.items():
            if name not in values or rule(values[name]):
                continue
            value = values[name]
            if name == "role" and self.newer_minor and isinstance(value, str):
                yield Issue.of(
                    "I300",
                    path,
                    f"role {value!r} of {path} is not defined by h5ml {spec.FORMAT_VERSION_STRING}; the file's newer "
                    f"version {self.format_version} may define it: readers ignore it",
                )
                continue
            yield Issue.of("E117", path, f"attribute {name!r} of {path} is {value!r}; it must be {expected}")
        if encoding not in spec.ENCODINGS:
            return
        allowed = {
            "logical_dtype": ("dense", "ragged"),
            **dict.fromkeys(_STATS_ATTRS, ("dense", "ragged")),
            "media_type": ("bytes",),
        }
        for name, encodings in allowed.items():
            if name in values and encoding not in encodings:
                yield Issue.of(
                    "E117",
                    path,
                    f"attribute {name!r} of {path} is allowed on {' and '.join(encodings)} features only, not on a "
                    f"{encoding} feature; remove it",
                )

    def check_feature(self, obj: Any, path: str, split: str, name: str, n: int | None) -> Iterator[Issue]:
        values = yield from self.check_attributes(obj, path, spec.FEATURE_COMMON_ATTRS, spec.FEATURE_COMMON_ATTRS)
        for required in ("encoding", "encoding_version"):
            if required not in obj.attrs:
                yield Issue.of(
                    "E130", path, f"feature {path} has no {required!r} attribute; add it (SPEC §6 lists the encodings)"
                )
        encoding = values.get("encoding", MISSING)
        if encoding is not MISSING and encoding not in spec.ENCODINGS:
            self.all_fingerprints_computed = False
            if self.newer_minor and isinstance(encoding, str):
                yield Issue.of(
                    "I301",
                    path,
                    f"feature {path} has encoding {encoding!r}, which h5ml {spec.FORMAT_VERSION_STRING} does not "
                    f"define; the file's newer version {self.format_version} may: readers ignore the feature",
                )
                return
            yield Issue.of(
                "E131",
                path,
                f"feature {path} has encoding {encoding!r}, which h5ml {spec.FORMAT_VERSION_STRING} "
                f"does not define; use one of {', '.join(spec.ENCODINGS)}",
            )
        yield from self.check_feature_attrs(values, path, encoding)
        yield from self.check_fingerprint_attr(path, values, "feature", "'h5ml.write' writes it (§8.2)")
        version = values.get("encoding_version", MISSING)
        usable = encoding in spec.ENCODINGS and _is_version(version)
        if usable and spec.parse_version(version)[0] != spec.parse_version(spec.ENCODING_VERSION)[0]:
            usable = False
            yield Issue.of(
                "E132",
                path,
                f"feature {path} has encoding_version {version!r}; this implementation reads "
                f"major version {spec.parse_version(spec.ENCODING_VERSION)[0]} only: use a newer h5ml",
            )
        if not usable:
            self.all_fingerprints_computed = False
            return
        fp = values.get("fingerprint")
        feature = _Feature(
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
        if actual_kind != expected_kind:
            ok = False
            yield Issue.of(
                "E133",
                path,
                f"feature {path} has encoding {encoding!r}, stored as an HDF5 {expected_kind}, but it "
                f"is a {actual_kind}",
            )
        else:
            check = {
                "dense": self.check_dense,
                "string": self.check_string,
                "categorical": self.check_categorical,
                "ragged": self.check_ragged,
                "bytes": self.check_bytes,
            }[encoding]
            ok = yield from check(feature, n)
        if ok and any(dset.name in self.external for dset in feature.members.values()):
            ok = False  # its data lives elsewhere (E111/E112): never read it (§10.1)
        if not ok:
            self.all_fingerprints_computed = False
        elif self.deep:
            yield from self.deep_feature(feature)

    def check_samples(self, dset: h5py.Dataset, path: str, n: int | None, extra: int = 0) -> Iterator[Issue]:
        """E122 when the first axis of ``dset`` is not ``n + extra`` long (§5.3)."""
        if n is not None and dset.shape[0] != n + extra:
            what = f"{n} + {extra} = {n + extra} entries" if extra else f"{n} samples"
            yield Issue.of(
                "E122",
                path,
                f"{path} has {dset.shape[0]} entries along its first axis but its split's "
                f"num_samples asks for {what}; write every feature with the same number of samples",
            )

    def check_dtype(
        self, dset: h5py.Dataset, path: str, allowed: Collection[str], expected: str
    ) -> Generator[Issue, None, bool]:
        """E133 when the dataset's type is in the profile but not one the encoding allows (§6)."""
        kind, detail = _classify(dset.id.get_type())
        if kind == "forbidden":
            return False  # E113 already reported
        if kind not in allowed:
            yield Issue.of("E133", path, f"{path} holds {detail} but its encoding needs {expected}")
            return False
        return True

    def check_ndim(
        self, dset: h5py.Dataset, path: str, ndims: Collection[int] | None, expected: str
    ) -> Generator[Issue, None, bool]:
        """E133 when the dataset's rank is not in ``ndims`` (None: any rank >= 1) (§6)."""
        ndim = -1 if dset.shape is None else len(dset.shape)
        if (ndim >= 1) if ndims is None else (ndim in ndims):
            return True
        shape = "a null dataspace" if dset.shape is None else f"shape {dset.shape}"
        yield Issue.of("E133", path, f"{path} has {shape} but its encoding needs {expected}")
        return False

    def check_logical_bool(self, feature: _Feature, dset: h5py.Dataset) -> Iterator[Issue]:
        """E117 when ``logical_dtype = "bool"`` is on values that are not uint8 (§3.3)."""
        if not feature.logical_bool:
            return
        kind, detail = _classify(dset.id.get_type())
        if not (kind == "uint" and dset.id.get_type().get_size() == 1):
            yield Issue.of(
                "E117",
                feature.path,
                f"feature {feature.path} has logical_dtype 'bool' but {dset.name} holds {detail}; logical_dtype "
                "'bool' marks uint8 values 0/1 only (§3.3)",
            )

    def check_dense(self, feature: _Feature, n: int | None) -> Generator[Issue, None, bool]:
        dset, path = feature.obj, feature.path
        ok = yield from self.check_dtype(dset, path, _NUMERIC, "a numeric type (use 'string' for text)")
        ok = (yield from self.check_ndim(dset, path, None, "shape (N, ...) with N samples")) and ok
        if dset.shape:
            yield from self.check_samples(dset, path, n)
            yield from self.check_chunks(dset, path, rows_are_samples=True)
            plist = dset.id.get_create_plist()
            if plist.get_layout() == h5d.CONTIGUOUS:
                nbytes = _itemsize_in_chunk(dset.id.get_type()) * math.prod(dset.shape)
                if nbytes > _LARGE_CONTIGUOUS_BYTES:
                    yield Issue.of(
                        "W209",
                        path,
                        f"dense feature {path} is stored contiguous and holds {nbytes} bytes; a feature "
                        f"this large should be chunked (§7.1) so it can be compressed and grown",
                    )
        issues = list(self.check_logical_bool(feature, dset))
        yield from issues
        feature.members[""] = dset
        return ok and not issues

    def check_string(self, feature: _Feature, n: int | None) -> Generator[Issue, None, bool]:
        dset, path = feature.obj, feature.path
        ok = yield from self.check_dtype(dset, path, ("string",), "strings (use 'dense' for numbers)")
        ok = (yield from self.check_ndim(dset, path, (1,), "shape (N,)")) and ok
        if dset.shape and len(dset.shape) == 1:
            yield from self.check_samples(dset, path, n)
            yield from self.check_chunks(dset, path, rows_are_samples=True)
        feature.members[""] = dset
        return ok

    def components(self, feature: _Feature) -> Generator[Issue, None, bool]:
        """Collect the members of a group encoding: E133 for missing ones, I301 for extra ones (§6, §5.5)."""
        group, path = feature.obj, feature.path
        required, optional = spec.ENCODING_COMPONENTS[feature.encoding]
        ok = True
        for name in group:
            member_path, obj = self.member(group, path, name)
            if name not in required and name not in optional:
                yield Issue.of(
                    "I301",
                    member_path,
                    f"{member_path} is not a member of the {feature.encoding!r} encoding; readers ignore it",
                )
            elif obj is None:
                ok = False  # an external or soft link: E110/E115 already reported
            elif not isinstance(obj, h5py.Dataset):
                ok = False
                yield Issue.of("E133", member_path, f"{member_path} must be a dataset, not a {type(obj).__name__}")
            else:
                feature.members[name] = obj
                yield from self.check_attributes(obj, member_path, (), ())  # §5.2: components carry none
        for name in required:
            if name not in group:
                ok = False
                yield Issue.of(
                    "E133",
                    path,
                    f"{feature.encoding} feature {path} lacks its required member {name!r} "
                    f"(it needs {', '.join(required)})",
                )
        return ok

    def check_offsets(self, feature: _Feature, n: int | None) -> Generator[Issue, None, bool]:
        offsets = feature.members["offsets"]
        path = offsets.name
        ok = yield from self.check_dtype(offsets, path, ("int",), "int64 offsets")
        if ok and offsets.id.get_type().get_size() != 8:
            ok = False
            yield Issue.of("E133", path, f"{path} holds {_classify(offsets.id.get_type())[1]}; offsets must be int64")
        ok = (yield from self.check_ndim(offsets, path, (1,), "shape (N + 1,)")) and ok
        if offsets.shape and len(offsets.shape) == 1:
            if offsets.shape[0] == 0:
                ok = False
                yield Issue.of("E133", path, f"{path} is empty; offsets hold N + 1 entries, starting with 0")
            else:
                yield from self.check_samples(offsets, path, n, extra=1)
                yield from self.check_chunks(offsets, path, rows_are_samples=False)
        return ok

    def check_categorical(self, feature: _Feature, n: int | None) -> Generator[Issue, None, bool]:
        ok = yield from self.components(feature)
        if not ok:
            return False
        codes, names = feature.members["codes"], feature.members["class_names"]
        ok = yield from self.check_dtype(codes, codes.name, ("int",), "signed integer codes (-1 = missing)")
        ok = (yield from self.check_ndim(codes, codes.name, (1,), "shape (N,)")) and ok
        if codes.shape and len(codes.shape) == 1:
            yield from self.check_samples(codes, codes.name, n)
            yield from self.check_chunks(codes, codes.name, rows_are_samples=True)
        names_ok = yield from self.check_dtype(names, names.name, ("string",), "variable-length UTF-8 strings")
        names_ok = (yield from self.check_ndim(names, names.name, (1,), "shape (K,)")) and names_ok
        if names.shape and len(names.shape) == 1:
            yield from self.check_chunks(names, names.name, rows_are_samples=False)
        if names_ok:
            yield from self.check_class_names(feature, names)
        return ok and names_ok

    def check_class_names(self, feature: _Feature, dset: h5py.Dataset) -> Iterator[Issue]:
        """E134: class names are unique, non-empty UTF-8 strings (§6.5). Reads the K names."""
        path = dset.name
        try:
            raw = dset[()]
        except _LIBRARY_ERRORS as exc:
            yield Issue.of("E134", path, f"the class names {path} cannot be read: {exc}")
            return
        names: list[str] = []
        for i, value in enumerate(raw.tolist()):
            try:
                names.append(value if isinstance(value, str) else bytes(value).decode("utf-8"))
            except UnicodeDecodeError:
                yield Issue.of("E134", path, f"class name {i} of {path} is not valid UTF-8: {value!r}")
                return
        empty = [i for i, s in enumerate(names) if not s]
        if empty:
            yield Issue.of("E134", path, f"class names of {path} at positions {empty[:10]} are empty; name every class")
        duplicates = sorted(s for s, count in Counter(names).items() if count > 1)
        if duplicates:
            yield Issue.of(
                "E134", path, f"class names of {path} repeat {duplicates[:10]}; each class needs a unique name"
            )
        feature.class_names = names

    def check_values(
        self,
        feature: _Feature,
        allowed: Collection[str],
        expected: str,
        ndims: Collection[int] | None,
        shape_text: str,
    ) -> Generator[Issue, None, bool]:
        """Type, rank, chunks and logical_dtype of the ``values`` of a ragged or bytes feature (§6.3, §6.6)."""
        values = feature.members["values"]
        ok = yield from self.check_dtype(values, values.name, allowed, expected)
        ok = (yield from self.check_ndim(values, values.name, ndims, shape_text)) and ok
        if values.shape:
            yield from self.check_chunks(values, values.name, rows_are_samples=False)
        issues = list(self.check_logical_bool(feature, values))
        yield from issues
        return ok and not issues

    def check_ragged(self, feature: _Feature, n: int | None) -> Generator[Issue, None, bool]:
        ok = yield from self.components(feature)
        if not ok:
            return False
        shapes = feature.members.get("shapes")
        ok = yield from self.check_offsets(feature, n)
        if shapes is None:
            values_ok = yield from self.check_values(feature, _NUMERIC, "a numeric type", None, "shape (M, ...)")
            return ok and values_ok
        values_ok = yield from self.check_values(
            feature, _NUMERIC, "a numeric type", (1,), "shape (M,) (a feature with 'shapes' stores flat values)"
        )
        path = shapes.name
        shapes_ok = yield from self.check_dtype(shapes, path, ("int",), "int64 shapes")
        if shapes_ok and shapes.id.get_type().get_size() != 8:
            shapes_ok = False
            yield Issue.of("E133", path, f"{path} holds {_classify(shapes.id.get_type())[1]}; shapes must be int64")
        shapes_ok = (yield from self.check_ndim(shapes, path, (2,), "shape (N, D)")) and shapes_ok
        if shapes.shape and len(shapes.shape) == 2:
            if shapes.shape[1] == 0:
                shapes_ok = False
                yield Issue.of("E133", path, f"{path} has shape {shapes.shape}; samples need D >= 1 axes, (N, D)")
            yield from self.check_samples(shapes, path, n)
            yield from self.check_chunks(shapes, path, rows_are_samples=True)
        return ok and values_ok and shapes_ok

    def check_bytes(self, feature: _Feature, n: int | None) -> Generator[Issue, None, bool]:
        ok = yield from self.components(feature)
        if not ok:
            return False
        ok = yield from self.check_offsets(feature, n)
        values = feature.members["values"]
        values_ok = yield from self.check_values(feature, ("uint",), "uint8 bytes", (1,), "shape (M,)")
        if values_ok and values.id.get_type().get_size() != 1:
            values_ok = False
            yield Issue.of(
                "E133", values.name, f"{values.name} holds {_classify(values.id.get_type())[1]}; bytes are uint8"
            )
        return ok and values_ok

    # ---- chunks (§7) ---------------------------------------------------------

    def check_chunks(self, dset: h5py.Dataset, path: str, *, rows_are_samples: bool) -> Iterator[Issue]:
        """E150, W200, W201 for a chunked feature dataset (§7.1-§7.3, §7.5)."""
        chunks = dset.chunks
        if chunks is None:
            return
        shape = dset.shape
        itemsize = _itemsize_in_chunk(dset.id.get_type())
        chunk_bytes = itemsize * math.prod(chunks)
        row_bytes = itemsize * math.prod(shape[1:])
        if not _whole_rows(shape, chunks) and not (
            row_bytes > spec.LARGE_SAMPLE_BYTES and _row_slab(shape, chunks, itemsize)
        ):
            whole = ", ".join(str(d) for d in shape[1:])
            yield Issue.of(
                "E150",
                path,
                f"{path} has chunks {chunks} for shape {shape}: a chunk must hold whole rows, chunk shape "
                f"(r, {whole}), or for rows over {spec.LARGE_SAMPLE_BYTES} bytes a one-row slab (§7.1.1); "
                "rewrite it with h5ml.write",
            )
        if rows_are_samples and not _is_power_of_two(chunks[0]):
            yield Issue.of(
                "W200",
                path,
                f"{path} has {chunks[0]} samples per chunk, not a power of two; rewrite it with h5ml.write",
            )
        data_bytes = itemsize * math.prod(shape)
        if (chunks[0] > 1 and chunk_bytes > spec.MAX_CHUNK_BYTES) or chunk_bytes > spec.LARGE_SAMPLE_BYTES:
            yield Issue.of(
                "W201",
                path,
                f"chunks of {path} hold {chunk_bytes} bytes, more than {spec.MAX_CHUNK_BYTES}: reading one row "
                "reads and decompresses a whole chunk; rewrite it with h5ml.write",
            )
        elif chunk_bytes < spec.MIN_CHUNK_BYTES and data_bytes >= spec.MIN_CHUNK_BYTES:
            yield Issue.of(
                "W201",
                path,
                f"chunks of {path} hold {chunk_bytes} bytes, fewer than {spec.MIN_CHUNK_BYTES}: many small chunks "
                "slow reading and bloat the chunk index; rewrite it with h5ml.write",
            )

    # ---- deep checks (read sample data) ---------------------------------------

    def deep_feature(self, feature: _Feature) -> Iterator[Issue]:
        """Read a feature's samples: E140-E145, E160 (§3.3, §3.4, §6, §8)."""
        deep = {
            "dense": self.deep_dense,
            "string": self.deep_string,
            "categorical": self.deep_categorical,
            "ragged": self.deep_ragged,
            "bytes": self.deep_ragged,
        }[feature.encoding]
        try:
            computed = yield from deep(feature)
        except _ReadError as exc:
            computed = None
            yield Issue.of(
                "E145",
                exc.path,
                f"sample data of {exc.path} cannot be read or decoded ({exc.cause}); the file is "
                "damaged: restore it from a good copy",
            )
        if computed is None:
            self.all_fingerprints_computed = False
            return
        self.computed[(feature.split, feature.name)] = computed
        if feature.fingerprint is not None and computed != feature.fingerprint:
            yield Issue.of(
                "E160",
                feature.path,
                f"feature {feature.path} has fingerprint {feature.fingerprint} but its data gives "
                f"{computed}: the data changed after the file was written; restore it from a good copy",
            )

    def check_bool(self, feature: _Feature, values: npt.NDArray[Any], first: int, what: str) -> Iterator[Issue]:
        """E142 for the first value of a logical-bool batch that is neither 0 nor 1 (§3.3)."""
        if not feature.logical_bool or values.dtype == np.dtype(bool) or values.size == 0:
            return
        bad = np.flatnonzero((values != 0) & (values != 1))
        if bad.size:
            yield Issue.of(
                "E142",
                feature.path,
                f"boolean feature {feature.path} holds {values.reshape(-1)[bad[0]]!r} in "
                f"{what} {first + int(bad[0]) // max(1, math.prod(values.shape[1:]))}; booleans are 0 or 1",
            )

    def deep_dense(self, feature: _Feature) -> Generator[Issue, None, str | None]:
        dset: h5py.Dataset = feature.members[""]
        hasher = FeatureHasher("dense", bool if feature.logical_bool else dset.dtype, dset.shape[1:])
        step = _rows_per_batch(dset)
        bad_bool = False
        for start in range(0, dset.shape[0], step):
            batch = _read(dset, slice(start, start + step))
            if not bad_bool:
                issues = list(self.check_bool(feature, batch, start, "sample"))
                bad_bool = bool(issues)
                yield from issues
            hasher.update_dense(batch)
        return hasher.fingerprint()

    def deep_string(self, feature: _Feature) -> Generator[Issue, None, str | None]:
        dset: h5py.Dataset = feature.members[""]
        hasher = FeatureHasher("string")
        step = _rows_per_batch(dset)
        for start in range(0, dset.shape[0], step):
            items = [
                v.encode("utf-8") if isinstance(v, str) else bytes(v) for v in _read(dset, slice(start, start + step))
            ]
            for i, raw in enumerate(items):
                try:
                    raw.decode("utf-8")
                except UnicodeDecodeError as exc:
                    yield Issue.of(
                        "E144",
                        feature.path,
                        f"sample {start + i} of string feature {feature.path} is not valid "
                        f"UTF-8 ({exc.reason} at byte {exc.start}): {raw[:40]!r}; write text as UTF-8",
                    )
                    return None
            hasher.update_strings(items)
        return hasher.fingerprint()

    def deep_categorical(self, feature: _Feature) -> Generator[Issue, None, str | None]:
        codes: h5py.Dataset = feature.members["codes"]
        if feature.class_names is None:
            return None
        k = len(feature.class_names)
        hasher = FeatureHasher("categorical", class_names=feature.class_names)
        step = _rows_per_batch(codes)
        reported = False
        for start in range(0, codes.shape[0], step):
            batch = _read(codes, slice(start, start + step))
            bad = np.flatnonzero((batch < -1) | (batch >= k))
            if bad.size and not reported:
                reported = True
                yield Issue.of(
                    "E141",
                    codes.name,
                    f"sample {start + int(bad[0])} of {codes.name} has code {int(batch[bad[0]])}, "
                    f"outside [-1, {k}) for {k} class names; fix the codes or the class names",
                )
            hasher.update_codes(batch)
        return hasher.fingerprint()

    def check_offsets_values(self, offsets: h5py.Dataset, m: int) -> Iterator[Issue]:
        """E140: offsets start at 0, never decrease and end at the number of value rows (§6.3, §6.6)."""
        path = offsets.name
        total = offsets.shape[0]
        previous: int | None = None
        for start in range(0, total, _OFFSETS_BATCH):
            batch = _read(offsets, slice(start, start + _OFFSETS_BATCH)).astype(np.int64)
            if previous is None and batch[0] != 0:
                yield Issue.of("E140", path, f"{path} starts at {int(batch[0])}, not 0; offsets start at 0")
                return
            joined = batch if previous is None else np.concatenate(([previous], batch))
            drops = np.flatnonzero(np.diff(joined) < 0)
            if drops.size:
                at = start + int(drops[0]) - (0 if previous is None else 1)
                yield Issue.of(
                    "E140",
                    path,
                    f"{path} decreases after entry {at} ({int(joined[drops[0]])} then "
                    f"{int(joined[drops[0] + 1])}); offsets never decrease",
                )
                return
            previous = int(batch[-1])
        if previous != m:
            yield Issue.of(
                "E140",
                path,
                f"{path} ends at {previous}, but the values hold {m} rows; the last offset is the number of value rows",
            )

    def deep_ragged(self, feature: _Feature) -> Generator[Issue, None, str | None]:
        offsets: h5py.Dataset = feature.members["offsets"]
        values: h5py.Dataset = feature.members["values"]
        shapes: h5py.Dataset | None = feature.members.get("shapes")
        broken = list(self.check_offsets_values(offsets, values.shape[0]))
        if broken:
            yield from broken
            return None
        if feature.encoding == "bytes":
            hasher = FeatureHasher("bytes")
        else:
            hasher = FeatureHasher("ragged", bool if feature.logical_bool else values.dtype)
        budget = max(1, _BATCH_BYTES // max(1, _row_bytes(values)))
        n = offsets.shape[0] - 1
        bad_bool = bad_shape = False
        for block in range(0, n, _OFFSETS_BATCH):
            offs = _read(offsets, slice(block, min(n, block + _OFFSETS_BATCH) + 1)).astype(np.int64)
            i = 0
            while i < len(offs) - 1:
                j = int(np.searchsorted(offs, offs[i] + budget, side="right")) - 1
                j = min(max(j, i + 1), len(offs) - 1)
                lengths = np.diff(offs[i : j + 1])
                batch = _read(values, slice(int(offs[i]), int(offs[j])))
                if not bad_bool:
                    issues = list(self.check_bool(feature, batch, int(offs[i]), "value row"))
                    bad_bool = bool(issues)
                    yield from issues
                shp = None
                if shapes is not None:
                    shp = _read(shapes, slice(block + i, block + j)).astype(np.int64)
                    wrong = np.flatnonzero((shp < 0).any(axis=1) | (np.prod(shp, axis=1) != lengths))
                    if wrong.size and not bad_shape:
                        bad_shape = True
                        k = int(wrong[0])
                        yield Issue.of(
                            "E143",
                            shapes.name,
                            f"sample {block + i + k} of {feature.path} has shape "
                            f"{shp[k].tolist()} but {int(lengths[k])} values; the product of a sample's shape is "
                            "its number of values",
                        )
                try:
                    hasher.update_ragged(lengths, batch, shp)
                except EncodingError:
                    return None
                i = j
        return hasher.fingerprint()

    def check_file_fingerprint(self, f: h5py.File) -> Iterator[Issue]:
        """E160 for the file fingerprint, recomputed from the features' data (§8.3)."""
        stored = _read_value(f, "fingerprint") if "fingerprint" in f.attrs else None
        if not (isinstance(stored, str) and FINGERPRINT_PATTERN.match(stored)) or not self.all_fingerprints_computed:
            return
        computed = file_fingerprint(self.computed)
        if computed != stored:
            yield Issue.of(
                "E160",
                "/",
                f"the file fingerprint is {stored} but the features' data gives {computed}: the data or "
                "the set of features changed after the file was written; restore it from a good copy",
            )


# --------------------------------------------------------------------------- entry points


def iter_issues(path: str | os.PathLike[str], *, deep: bool = False) -> Iterator[Issue]:
    """Yield every issue of one file, in this process (§9).

    The file is opened read-only without HDF5 file locking; external and soft
    links are reported, never followed. An untrusted file can make the HDF5
    library loop (§10.3): use :func:`validate` with a ``timeout`` for those.

    Parameters
    ----------
    path
        The file to check.
    deep
        Also read every sample (offsets, codes, booleans, shapes, UTF-8,
        fingerprints: the registry's deep codes). Without it only metadata is
        read (attributes, shapes, datatypes, storage properties, class names).

    Yields
    ------
    Issue
        One per broken rule, in check order: the file (E100, E109), the root
        attributes (E102-E108, W202-W204), links (E110, E115), the storage
        profile (E111-E114, W205, W206, W208), then each split and feature.

    Raises
    ------
    Nothing on purpose: a file that cannot be read gives E100 or E101.
    """
    yield from _Checker(os.fspath(path), deep).run()


def _check(path: str, deep: bool) -> tuple[list[Issue], str | None]:
    """Run every check of one file; top-level so that a child process can run it (§10.3)."""
    checker = _Checker(path, deep)
    issues = list(checker.run())
    return issues, checker.format_version


def _validate(path: str, deep: bool, timeout: float | None, isolated: bool) -> FileReport:
    if not isolated:
        issues, version = _check(path, deep)
        return FileReport(path, tuple(issues), version, deep)
    try:
        issues, version = run_with_timeout(_check, (path, deep), timeout)
    except ValidationTimeoutError:
        message = (
            f"validating {path} did not finish within {timeout} s and was stopped: the HDF5 library may loop on "
            "this file; do not use it, or validate it with a longer time limit if you trust it"
        )
        return FileReport(path, (Issue.of("E101", "/", message),), None, deep)
    except ChildDiedError as exc:
        message = f"the HDF5 library crashed while reading {path} ({exc}); the file is damaged: do not use it"
        return FileReport(path, (Issue.of("E101", "/", message),), None, deep)
    return FileReport(path, tuple(issues), version, deep)


def validate(path: str | os.PathLike[str], *, deep: bool = False, timeout: float | None = None) -> FileReport:
    """Validate one file and collect its issues (§9, §10.3).

    Parameters
    ----------
    path
        The file to check.
    deep
        Also read every sample (see :func:`iter_issues`).
    timeout
        None: check in this process. A number of seconds: check in a child
        process (:func:`h5ml.sandbox.run_with_timeout`); when the limit passes
        or the child crashes, the report holds a single E101 issue and
        ``readable`` is False.

    Returns
    -------
    FileReport
        The issues, in the order :func:`iter_issues` yields them.

    Raises
    ------
    ValueError
        If ``timeout`` is negative.
    """
    if timeout is not None and timeout < 0:
        raise ValueError(f"timeout must be >= 0 seconds or None, got {timeout}")
    return _validate(os.fspath(path), deep, timeout, isolated=timeout is not None)


def validate_many(
    paths: Iterable[str | os.PathLike[str]],
    *,
    deep: bool = False,
    timeout: float | None = None,
    jobs: int = 1,
) -> Report:
    """Validate several files (§9.3).

    Parameters
    ----------
    paths
        The files to check.
    deep
        Also read every sample (see :func:`iter_issues`).
    timeout
        Time limit per file in seconds, or None (see :func:`validate`).
    jobs
        Files checked at once. With ``jobs > 1`` each file is checked in its
        own child process (with ``timeout`` as its limit, possibly None).

    Returns
    -------
    Report
        One :class:`FileReport` per path, in the order given.

    Raises
    ------
    ValueError
        If ``jobs < 1`` or ``timeout`` is negative.
    """
    if jobs < 1:
        raise ValueError(f"jobs must be >= 1, got {jobs}")
    if timeout is not None and timeout < 0:
        raise ValueError(f"timeout must be >= 0 seconds or None, got {timeout}")
    items: Sequence[str] = [os.fspath(p) for p in paths]
    if jobs == 1:
        return Report(tuple(_validate(p, deep, timeout, isolated=timeout is not None) for p in items))
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        return Report(tuple(pool.map(lambda p: _validate(p, deep, timeout, isolated=True), items)))
