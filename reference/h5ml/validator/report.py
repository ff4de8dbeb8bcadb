"""The validator's reports: :class:`FileReport` for one file, :class:`Report` for several (§9.1, §9.3).

A report's JSON form (:meth:`Report.to_json`) follows
``schema/h5ml-report-1.0.schema.json``. A file is *readable* unless an issue
says it could not be read at all (E100, E101); *valid* when no issue is an
error, and *valid in strict mode* when no issue is a warning either.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Final

from h5ml._version import __version__
from h5ml.spec.codes import Severity
from h5ml.validator.checks import Issue

__all__ = ["REPORT_VERSION", "FileReport", "Report"]

#: §9.3 the version of the report format :meth:`Report.to_json` writes.
REPORT_VERSION: Final = "1.0"
#: Codes after which the file counts as unreadable (FileReport.readable).
_UNREADABLE_CODES: Final = frozenset({"E100", "E101"})


# --------------------------------------------------------------------------- reports


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
        Every issue found, in the order the checks ran (a deterministic order,
        §9.3); after a time limit or a crash, those found before it and E101.
    format_version
        The file's ``format_version`` when it is a string, whatever its form (§9.3), else None.
    deep
        Whether sample data was read (deep validation).
    timed_out
        Whether the checks were stopped at the time limit (§10.3) before they
        finished: the last issue is then the E101 that says so, and the
        report says nothing against the file beyond the issues before it.
    """

    path: str
    issues: tuple[Issue, ...] = ()
    format_version: str | None = None
    deep: bool = False
    timed_out: bool = False

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
        # SPEC §9.3-R1: one JSON object satisfying schema/h5ml-report-1.0.schema.json
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


# --------------------------------------------------------------------------- entry points
