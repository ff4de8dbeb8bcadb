"""What a conversion reads and what it reports: source items, decode errors, skipped files, the report (§4.7).

A source lists its samples as :class:`SourceItem` values; a decode function
raises :class:`DecodeError` for a file it cannot use; a file left out with
``on_error="skip"`` is a :class:`Skipped`, recorded in the output's root
attribute :data:`SKIPPED_ATTR` (:func:`record_skipped`) and in the
:class:`IngestReport` every converter returns.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

__all__ = [
    "ID_FEATURE",
    "SKIPPED_ATTR",
    "DecodeError",
    "IngestReport",
    "Skipped",
    "SourceItem",
    "quote_skipped",
    "record_skipped",
]

#: The string feature in which the converters keep each sample's source id (file stem, dataset name), so that
#: a sample can be traced back to where it came from; ``h5ml merge`` checks it for duplicates.
ID_FEATURE: Final = "id"
#: Root user attribute (§4.7) listing the skipped source files: JSON ``[{"path": ..., "reason": ...}, ...]``.
SKIPPED_ATTR: Final = "h5ml-ingest:skipped"


class DecodeError(Exception):
    """Raised by a decode function: ``path`` could not be used, for ``reason`` (a sentence, no traceback).

    Parameters
    ----------
    path
        The file (or ``file:/hdf5/path``) at fault.
    reason
        Why, as a sentence.
    """

    def __init__(self, path: str | os.PathLike[str], reason: str) -> None:
        super().__init__(f"{os.fspath(path)}: {reason}")
        self.path = os.fspath(path)
        self.reason = reason

    def __reduce__(self) -> tuple[Any, ...]:
        return (DecodeError, (self.path, self.reason))


@dataclass(frozen=True)
class Skipped:
    """A source file left out of the output (``on_error="skip"``), and why.

    Attributes
    ----------
    path
        The file (or ``file:/hdf5/path``, ``sample <index>``) left out.
    reason
        Why, as a sentence.
    split
        The split its sample was to go to, when known (not stored: it counts
        a split's skipped files, :func:`h5ml.ingest.pipeline.ingest`).
    """

    path: str
    reason: str
    split: str | None = None

    def to_json(self) -> dict[str, str]:
        """``{"path": ..., "reason": ...}``, the form stored in :data:`SKIPPED_ATTR`."""
        return {"path": self.path, "reason": self.reason}


@dataclass(frozen=True)
class SourceItem:
    """One sample to decode.

    Attributes
    ----------
    split
        The split it goes to (§5.1).
    sample_id
        Its id in the source (a file stem, a dataset name, a row number).
    parts
        ``(feature, location)`` pairs: where each feature's value comes from
        (a file path, an HDF5 path, ...), as the source's decode function reads them.
    """

    split: str
    sample_id: str
    parts: tuple[tuple[str, str], ...]

    @property
    def first_path(self) -> str:
        """The location of the first part (named in errors that no part claimed)."""
        return self.parts[0][1] if self.parts else self.sample_id


@dataclass
class IngestReport:
    """What a conversion did.

    Attributes
    ----------
    output
        The file written.
    samples
        Split -> samples written.
    skipped
        Source files left out, in the order met.
    seconds
        Wall-clock time, in seconds.
    notes
        More lines for the summary (what a conversion left out of its sources, ...).
    merged_from
        ``h5ml merge``: split -> the input splits that went in, as text
        (``"a.h5:train (source split train)"``), in file order; empty otherwise.
    """

    output: Path
    samples: dict[str, int] = field(default_factory=dict)
    skipped: list[Skipped] = field(default_factory=list)
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)
    merged_from: dict[str, list[str]] = field(default_factory=dict)

    @property
    def total(self) -> int:
        """Samples written, all splits together."""
        return sum(self.samples.values())

    def count(self, split: str, samples: int) -> None:
        """Add ``samples`` written to ``split``."""
        self.samples[split] = self.samples.get(split, 0) + samples

    def summary(self) -> str:
        """One paragraph for the terminal: samples per split, speed, the inputs of merged splits, skipped files."""
        rate = self.total / self.seconds if self.seconds > 0 else 0.0
        splits = ", ".join(f"{name} {count}" for name, count in self.samples.items()) or "no samples"
        lines = [f"wrote {self.output}: {splits} ({self.total} samples in {self.seconds:.1f} s, {rate:,.0f}/s)"]
        lines += [f"{name} <- {', '.join(inputs)}" for name, inputs in self.merged_from.items()]
        if self.skipped:
            lines.append(
                f"skipped {len(self.skipped)} source file(s), row(s) or record(s) (recorded in the attribute {SKIPPED_ATTR}):"
            )
            lines += [f"  {s.path}: {s.reason}" for s in self.skipped]
        lines += self.notes
        return "\n".join(lines)


def record_skipped(writer: Any, report: IngestReport) -> None:
    """Store the report's skipped files in the root attribute :data:`SKIPPED_ATTR` (§4.7), when there are any.

    Parameters
    ----------
    writer
        The open :class:`h5ml.Writer` of the output.
    report
        The conversion's report.
    """
    if report.skipped:
        writer.update_metadata({SKIPPED_ATTR: json.dumps([s.to_json() for s in report.skipped])})


def quote_skipped(skipped: Sequence[Skipped], most: int) -> str:
    """The first ``most`` files with their reasons, for a message: ``"a.png: why; b.png: why; and 3 more"``.

    Parameters
    ----------
    skipped
        The files, in the order met.
    most
        How many to quote (>= 1).

    Returns
    -------
    str
        ``"<path>: <reason>"`` of each, joined by ``"; "``, then ``"; and N more"`` for the others.
    """
    quoted = "; ".join(f"{s.path}: {s.reason}" for s in skipped[:most])
    return quoted + (f"; and {len(skipped) - most} more" if len(skipped) > most else "")
