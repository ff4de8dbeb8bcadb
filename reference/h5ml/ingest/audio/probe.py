"""Checks of every audio file before any is decoded: readable, whole, one rate and channel count per feature (§6.1).

``soundfile.info`` reads each file's header (in the workers,
:func:`probe_item`); a truncated WAV or AIFF is told from libsndfile's log
(:func:`truncation`); the files of a feature that differ from its most
common rate or channel count are :class:`h5ml.ingest.audio.tree.Problem`
values (:func:`mismatches`). :func:`raise_problems` stops on them all, every
kind in one message (``on_error="stop"``), :func:`drop` leaves the samples
out and records them.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import soundfile

from h5ml.errors import IngestError
from h5ml.ingest.audio.tree import Problem
from h5ml.ingest.options import parameter_error
from h5ml.ingest.report import Skipped, SourceItem

__all__ = [
    "MAX_RESAMPLE_FACTOR",
    "FileInfo",
    "Probed",
    "check_resampling",
    "drop",
    "mismatches",
    "probe_item",
    "raise_problems",
    "truncation",
]

#: The largest factor by which ``sample_rate`` may raise or lower a file's rate. Beyond it soxr takes
#: seconds per clip (lowering) or does not finish (raising 1 Hz to 1 MHz), and no audio task needs it.
MAX_RESAMPLE_FACTOR: Final = 256


@dataclass(frozen=True)
class FileInfo:
    """What ``soundfile.info`` says about one file."""

    samplerate: int
    channels: int
    subtype: str


#: Feature -> its files that could be read: ``(item, path, info)``.
Probed = dict[str, list[tuple[SourceItem, str, FileInfo]]]

#: A data chunk whose declared size libsndfile corrected: ``data : 12800 (should be 56)``.
_SHORT_CHUNK = re.compile(r"^\s*(data|SSND)\s*:\s*(\d+)\s*\(should be (\d+)\)", re.MULTILINE)
#: Sizes that streaming writers leave in headers they cannot rewind to fill in (not a truncation).
_UNKNOWN_SIZES = frozenset({0, 0xFFFFFFFF, 0x7FFFFFFF})


def probe_item(item: SourceItem) -> dict[str, FileInfo | str]:
    """``{path: info or the reason soundfile cannot open it}`` for each file of one item (runs in workers).

    Parameters
    ----------
    item
        One sample: its parts are ``(feature, file path)``.

    Returns
    -------
    dict
        Path -> :class:`FileInfo`, or the reason (a sentence) it cannot be used.
    """
    out: dict[str, FileInfo | str] = {}
    for _, path in item.parts:
        try:
            info = soundfile.info(path)
        except soundfile.LibsndfileError as exc:
            out[path] = f"soundfile cannot read it: {exc.error_string.strip() or exc}"
        except (RuntimeError, OSError) as exc:
            out[path] = f"soundfile cannot read it: {exc}"
        else:
            truncated = truncation(str(getattr(info, "extra_info", "")))
            out[path] = truncated or FileInfo(int(info.samplerate), int(info.channels), str(info.subtype))
    return out


def truncation(log: str) -> str | None:
    """The reason a file is truncated, from libsndfile's header log (``soundfile.info().extra_info``), or None.

    libsndfile reads what a cut-off WAV or AIFF still holds and says nothing;
    its log shows the data chunk's declared size and the size the file really
    has. A file whose audio data stops before its header says it does lost
    its end (an interrupted copy or download): it is refused, not stored short.

    Parameters
    ----------
    log
        libsndfile's log of the file's header.

    Returns
    -------
    str or None
        The reason, or None when the file is whole (or its sizes are unknown).
    """
    for match in _SHORT_CHUNK.finditer(log):
        declared, actual = int(match.group(2)), int(match.group(3))
        if declared > actual and declared not in _UNKNOWN_SIZES:
            return (
                f"the file is truncated: its header declares {declared} bytes of audio data but only {actual} "
                "are there (an interrupted copy or download?); restore the whole file"
            )
    return None


def check_resampling(infos: Probed, sample_rate: float | None) -> None:
    """Refuse a ``sample_rate`` more than :data:`MAX_RESAMPLE_FACTOR` times above or below a file's rate.

    Parameters
    ----------
    infos
        The files of every feature.
    sample_rate
        The rate asked for in Hz, or None (no resampling).

    Raises
    ------
    h5ml.errors.ParameterError
        Naming the first such file, its rate, and the rates that would do.
    """
    if sample_rate is None:
        return
    rates = [info.samplerate for entries in infos.values() for _, _, info in entries]
    if not rates:
        return
    low, high = max(rates) / MAX_RESAMPLE_FACTOR, min(rates) * MAX_RESAMPLE_FACTOR
    for entries in infos.values():
        for _, path, info in entries:
            if not info.samplerate * MAX_RESAMPLE_FACTOR >= sample_rate >= info.samplerate / MAX_RESAMPLE_FACTOR:
                raise parameter_error(
                    "sample_rate",
                    f"{path}: resampling its {info.samplerate} Hz to sample_rate={sample_rate:g} (--sample-rate {sample_rate:g}) Hz changes "
                    "the rate "
                    f"by more than {MAX_RESAMPLE_FACTOR}x; choose a rate between {low:g} and {high:g} Hz, within "
                    f"{MAX_RESAMPLE_FACTOR}x of every file's rate",
                )


def mismatches(infos: Probed, sample_rate: float | None, mono: bool) -> list[Problem]:
    """Files whose rate or channel count differs from the most common of their feature (when that matters).

    Parameters
    ----------
    infos
        The files of every feature.
    sample_rate
        The rate asked for (rates then need not agree), or None.
    mono
        Whether channels are averaged (channel counts then need not agree).

    Returns
    -------
    list of Problem
        One per file that differs, naming a file that has the usual value.
    """
    problems: list[Problem] = []
    checks: list[tuple[str, str, str, str]] = []
    if sample_rate is None:
        checks.append(("samplerate", "Hz", "resample them all with sample_rate=R (--sample-rate R)", "sample rate"))
    if not mono:
        checks.append(("channels", "channel(s)", "down-mix them all with mono=True (--mono)", "channel count"))
    for attr, unit, advice, kind in checks:
        for feature, files in infos.items():
            counts = Counter(getattr(info, attr) for _, _, info in files)
            if len(counts) < 2:
                continue
            usual = counts.most_common(1)[0][0]
            example = next(path for _, path, info in files if getattr(info, attr) == usual)
            for item, path, info in files:
                value = getattr(info, attr)
                if value != usual:
                    problems.append(
                        Problem(
                            item.split,
                            item.sample_id,
                            path,
                            f"it has {value} {unit} but {example} has {usual} {unit}; the files of feature "
                            f"{feature!r} must agree: {advice}",
                            kind,
                        )
                    )
    return problems


def raise_problems(problems: Sequence[Problem], output: Path) -> None:
    """Stop on the problems found before decoding, every kind in one message (``on_error="stop"``).

    Parameters
    ----------
    problems
        Every problem found: missing counterparts, ids of two files,
        unreadable files, sample rates and channel counts that differ.
    output
        The output, named as not written.

    Raises
    ------
    h5ml.IngestError
        When there is a problem: for each kind (in the order met), how many
        files, the first file with its reason and sample, and up to three
        others by name; then what to do. ``path`` is the first file.
    """
    if not problems:
        return
    kinds: dict[str, list[Problem]] = {}
    for problem in problems:
        kinds.setdefault(problem.kind, []).append(problem)
    parts = []
    for kind, group in kinds.items():
        first = group[0]
        others = [p.path for p in group[1:]]
        shown = ", ".join(others[:3]) + (f" and {len(others) - 3} more" if len(others) > 3 else "")
        more = f" ({len(others)} other file(s) have problems of this kind: {shown})" if others else ""
        parts.append(
            f"{kind}, {len(group)} file(s): {first.path}: {first.reason} (sample {first.sample_id!r} of split "
            f"{first.split!r}){more}"
        )
    heading = f"{len(kinds)} kinds of problem: " if len(kinds) > 1 else ""
    raise IngestError(
        f"{heading}{'; '.join(parts)}; nothing was written to {output}. Fix the files, or leave such samples out "
        "with on_error='skip' (--on-error skip)",
        path=problems[0].path,
    )


def drop(
    splits: Mapping[str, list[SourceItem]], problems: Sequence[Problem], skipped: list[Skipped]
) -> dict[str, list[SourceItem]]:
    """The items without problems; every problem is added to ``skipped``."""
    bad = {(p.split, p.sample_id) for p in problems}
    skipped += [
        Skipped(p.path, f"{p.reason} (sample {p.sample_id!r} of split {p.split!r} left out)", p.split) for p in problems
    ]
    return {name: [i for i in items if (name, i.sample_id) not in bad] for name, items in splits.items()}
