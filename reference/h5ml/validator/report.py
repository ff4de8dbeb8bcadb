"""The validator's reports: :class:`FileReport` for one file, :class:`Report` for several (§9.1, §9.3).

A report's JSON form (:meth:`Report.to_json`) follows
``schema/h5ml-report-1.0.schema.json`` (report format 1.1). A file is
*readable* unless an issue says it could not be read at all (E100, E101);
*valid* when no issue is an error, and *valid in strict mode* when no issue is
a warning either.

Repeated issues
---------------
A file can break one rule a hundred thousand times (an attribute or a link
per sample). :class:`IssueCollector` keeps the first
:data:`DEFAULT_MAX_ISSUES_PER_CODE` issues of each code (or the cap given,
0 for none) and counts the others, so that a report's memory and the time to
print it do not grow with them (SPEC §9.3-R2). The counts stay exact: every
count, verdict and exit status is computed from the totals, never from the
issues listed, so the cap never changes whether a file is valid.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from h5ml._version import __version__
from h5ml.spec.codes import CODES, Severity
from h5ml.validator.checks import Issue

__all__ = ["DEFAULT_MAX_ISSUES_PER_CODE", "REPORT_VERSION", "FileReport", "IssueCollector", "Report", "check_cap"]

#: §9.3 the version of the report format :meth:`Report.to_json` writes (1.1: ``issue_totals`` and ``omitted``).
REPORT_VERSION: Final = "1.1"
#: Issues of one code a report lists by default (``max_issues_per_code``, ``--max-issues-per-code``); the
#: others are counted. 0 lists every issue.
DEFAULT_MAX_ISSUES_PER_CODE: Final = 100
#: Codes after which the file counts as unreadable (FileReport.readable).
_UNREADABLE_CODES: Final = frozenset({"E100", "E101"})


# --------------------------------------------------------------------------- reports


def check_cap(max_issues_per_code: int) -> None:
    """Refuse a cap on the issues of one code that is not an integer >= 0 (§9.3).

    Parameters
    ----------
    max_issues_per_code
        The cap: issues listed per code, 0 for no cap.

    Raises
    ------
    ValueError
        If it is negative, a bool or not an integer.
    """
    if isinstance(max_issues_per_code, bool) or not isinstance(max_issues_per_code, int) or max_issues_per_code < 0:
        raise ValueError(
            f"max_issues_per_code must be an integer >= 0 (0 lists every issue), got {max_issues_per_code!r}"
        )


class IssueCollector:
    """The issues of one file as they are found: the first ``cap`` of each code kept, the others counted (§9.3).

    Parameters
    ----------
    cap
        Issues listed per code; 0 keeps every issue.

    Attributes
    ----------
    issues
        The issues kept, in the order found.
    omitted
        Code -> the number of its issues found but not kept.
    """

    def __init__(self, cap: int = DEFAULT_MAX_ISSUES_PER_CODE) -> None:
        check_cap(cap)
        self.cap = cap
        self.issues: list[Issue] = []
        self.omitted: Counter[str] = Counter()
        self._listed: Counter[str] = Counter()

    def add(self, issue: Issue) -> bool:
        """Keep ``issue``, or count it when its code has reached the cap; return whether it was kept.

        Parameters
        ----------
        issue
            The issue found.

        Returns
        -------
        bool
            True when kept, False when only counted.
        """
        # SPEC §9.3-R2: past the cap an issue is counted, never dropped: the totals and the verdict stay exact
        if self.cap and self._listed[issue.code] >= self.cap:
            self.omitted[issue.code] += 1
            return False
        self._listed[issue.code] += 1
        self.issues.append(issue)
        return True

    def count_omitted(self, counts: Mapping[str, int]) -> None:
        """Add issues counted elsewhere (by the child process of a time-limited check) to :attr:`omitted`.

        Parameters
        ----------
        counts
            Code -> issues found and not kept.
        """
        self.omitted.update(counts)


def _totals(issues: Iterable[Issue], omitted: Mapping[str, int]) -> dict[str, int]:
    """Code -> issues found (kept and omitted), in the order the codes were first found."""
    totals: dict[str, int] = dict(Counter(i.code for i in issues))
    for code, n in omitted.items():
        totals[code] = totals.get(code, 0) + n
    return totals


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
    omitted
        Code -> the number of its issues found beyond ``max_issues_per_code``:
        counted, not listed in ``issues`` (§9.3). Empty when none was left out.
    max_issues_per_code
        The cap the issues were collected with (0: none).
    kind
        ``"file"`` for an h5ml file given to the validator, ``"index"`` for the index of a sharded dataset
        (§12.1), ``"shard"`` for a shard checked as part of its index.
    shards
        For an index: the reports of the shards it lists that were validated as files, in index order (split
        names in code-point order, then shard order); empty otherwise. The index's own issues say which shard
        is missing, changed, disagreeing or invalid (E171-E174); a shard's issues stay in its own report.
        The index's ``readable``, ``valid`` and ``valid_strict`` are those of its own issues (so that its JSON
        entry follows the report schema); an invalid shard is an E174 among them, and
        :attr:`Report.valid_strict` and the command line's exit status count each shard's own report too
        (:meth:`each`): an unreadable shard exits 2, a shard's warning fails ``--strict``.
    given_shards
        For an index: (path, shard) for each path given to the validator beside the index that is one of its
        shards: it was checked once, as the shard whose report's path is ``shard`` (``h5ml validate
        data/ds/index.json data/ds/train/train-00000.h5``). Empty otherwise.
    """

    path: str
    issues: tuple[Issue, ...] = ()
    format_version: str | None = None
    deep: bool = False
    timed_out: bool = False
    omitted: Mapping[str, int] = field(default_factory=dict)
    max_issues_per_code: int = 0
    kind: Literal["file", "index", "shard"] = "file"
    shards: tuple[FileReport, ...] = ()
    given_shards: tuple[tuple[str, str], ...] = ()

    def each(self) -> Iterator[FileReport]:
        """This report, then the reports of its shards (an index's), for verdicts over a whole dataset (§12)."""
        yield self
        for shard in self.shards:
            yield from shard.each()

    @property
    def totals(self) -> dict[str, int]:
        """Code -> the number of its issues found, listed or omitted, in the order the codes were first found."""
        return _totals(self.issues, self.omitted)

    @property
    def counts(self) -> dict[str, int]:
        """Severity (``"error"``, ``"warning"``, ``"info"``) -> the number of issues found, omitted ones included."""
        counts = {s.value: 0 for s in Severity}
        for code, n in self.totals.items():
            counts[CODES[code].severity.value] += n
        return counts

    @property
    def readable(self) -> bool:
        """False when the file could not be opened or read as HDF5 (E100, E101)."""
        return not any(code in _UNREADABLE_CODES for code in self.totals)

    @property
    def valid(self) -> bool:
        """True when no issue found has the severity error (§9.1), omitted ones included."""
        return self.counts[Severity.ERROR.value] == 0

    @property
    def valid_strict(self) -> bool:
        """True when no issue found is an error or a warning (§9.1), omitted ones included."""
        return self.valid and self.counts[Severity.WARNING.value] == 0

    @property
    def codes(self) -> list[str]:
        """The codes of the issues listed, in order (with repeats); :attr:`totals` counts the omitted ones too."""
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
            :meth:`Issue.to_json`, at most ``max_issues_per_code`` of each code),
            ``issue_totals`` (code -> issues found), ``omitted`` (code -> issues
            found and not listed, only codes with some), ``max_issues_per_code``
            and ``counts`` (issues found per severity, omitted ones included); for an index or a shard also
            ``kind``, and for an index ``shards`` (the entries of its shards, in index order) and, when some
            were, ``given_shards`` (``path``: a path given beside it, ``shard``: the path of its entry in
            ``shards``).
        """
        # SPEC §9.3-R2: the totals of every code, and how many of each were not listed
        entry: dict[str, Any] = {
            "path": self.path,
            "readable": self.readable,
            "valid": self.valid_strict if strict else self.valid,
            "valid_strict": self.valid_strict,
            "deep": self.deep,
            "format_version": self.format_version,
            "issues": [i.to_json() for i in self.issues],
            "issue_totals": self.totals,
            "omitted": {code: n for code, n in self.omitted.items() if n},
            "max_issues_per_code": self.max_issues_per_code,
            "counts": self.counts,
        }
        if self.kind != "file":
            entry["kind"] = self.kind
        if self.kind == "index":
            entry["shards"] = [s.to_json(strict=strict) for s in self.shards]
            if self.given_shards:
                entry["given_shards"] = [{"path": path, "shard": shard} for path, shard in self.given_shards]
        return entry


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
        """True when no file has an error or a warning (§9.1); the shards of an index count too (§12)."""
        return all(r.valid_strict for f in self.files for r in f.each())

    def to_json(self, *, strict: bool = False) -> dict[str, Any]:
        """Return the report as JSON following ``schema/h5ml-report-1.0.schema.json`` (§9.3).

        Parameters
        ----------
        strict
            Strict mode (§9.1): a file with warnings counts as not valid.

        Returns
        -------
        dict
            ``report_version`` (``"1.1"``), ``tool`` (``name`` ``"h5ml"`` and
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
