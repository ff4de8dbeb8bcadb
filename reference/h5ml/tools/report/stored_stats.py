"""The stored statistics (§6.7) in ``h5ml report``: merged over the shards of a sharded dataset, and as a table cell.

Each shard of a sharded dataset (§12) stores the statistics of its own
values. :func:`merge_stored_stats` merges them into the statistics of the
whole split wherever the stored values allow it exactly:

- ``stats_count``: the sum of the shards' counts;
- ``stats_min`` and ``stats_max``: the smallest and largest over the shards
  that counted a value;
- ``stats_mean``: the count-weighted mean of the shards' means;
- ``stats_std``: by the parallel-variance formula, the population variance
  (§6.7 divides by the count) being
  ``sum(c_i * (s_i**2 + (m_i - mean)**2)) / sum(c_i)``, a sum of
  non-negative terms with no cancellation: computed in binary64 from binary64
  statistics it agrees with the statistics of the whole to about 1e-15
  relative, so it is shown as merged.

A statistic is not merged, and the page says which and why
(:attr:`MergedStats.note`), when a shard that counted values does not store
it (it is undefined there, such as the mean of values holding both +inf and
-inf, §6.7-S1), when a stored mean or std is not finite, or when a shard
stores no ``stats_count`` at all: a merged figure that left a shard out would
be wrong, and an empty cell would say nothing.

:func:`stored_stats_text` is the text of the "stored statistics (§6.7)"
cell, of a file's feature and of a sharded dataset's merged one alike.

It implements no SPEC clause: it reads the statistics of §6.7 as the reader returns them (§6.7-R4).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from h5ml.tools.report.markup import number

__all__ = ["STATS_KEYS", "MergedStats", "merge_stored_stats", "stored_range", "stored_stats_text"]

#: The attributes of §6.7, key -> the word shown on the page, in the order shown.
STATS_KEYS: Final = {
    "stats_count": "count",
    "stats_min": "min",
    "stats_max": "max",
    "stats_mean": "mean",
    "stats_std": "std",
}


@dataclass(frozen=True)
class MergedStats:
    """The statistics of a split merged over its shards.

    Attributes
    ----------
    stats
        The statistics merged exactly, keyed as §6.7 (``stats_count``, ...), JSON values (int count, floats).
    note
        What was not merged and why, for the page (``"std not merged: shard 1 stores none"``); ``""`` when all was.
    """

    stats: dict[str, Any] = field(default_factory=dict)
    note: str = ""


def _finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and math.isfinite(float(value))


def stored_range(stats: Mapping[str, Any]) -> tuple[float, float] | None:
    """A feature's stored ``stats_min`` and ``stats_max`` (§6.7) when both are stored as finite numbers.

    Parameters
    ----------
    stats
        The stored statistics as JSON values (:attr:`h5ml.tools.summary.FeatureSummary.stats`): a value that is
        not finite is the string ``"Infinity"``, ``"-Infinity"`` or ``"NaN"`` there.

    Returns
    -------
    (float, float) or None
        The two as floats; None when either is missing or not a finite number.
    """
    low: Any = stats.get("stats_min")
    high: Any = stats.get("stats_max")
    if _finite(low) and _finite(high):
        return float(low), float(high)
    return None


def merge_stored_stats(parts: Sequence[Mapping[str, Any]]) -> MergedStats:
    """Merge one feature's stored statistics (§6.7) over its shards (see the module docstring).

    Parameters
    ----------
    parts
        Each shard's statistics, in shard order (:attr:`h5ml.tools.summary.FeatureSummary.stats`: the count an
        int, the others binary64 floats).

    Returns
    -------
    MergedStats
        Empty, with no note, when no shard stores statistics (a feature that carries none, such as a
        categorical one); else those merged exactly and a note naming each one that was not.
    """
    if not parts or not any(parts):
        return MergedStats()
    missing = [i for i, p in enumerate(parts) if "stats_count" not in p]
    if missing:
        return MergedStats(note=f"not merged: {_shards(missing)} no stats_count")
    counts = [int(p["stats_count"]) for p in parts]
    total = sum(counts)
    stats: dict[str, Any] = {"stats_count": total}
    counted = [(c, p) for c, p in zip(counts, parts, strict=True) if c > 0]
    if not counted:
        return MergedStats(stats)  # no value anywhere: the other four are undefined (§6.7-S1), as in one file
    notes = []
    for key, pick in (("stats_min", min), ("stats_max", max)):
        lacking = [i for i, (c, p) in enumerate(zip(counts, parts, strict=True)) if c > 0 and key not in p]
        if lacking:
            notes.append(f"{STATS_KEYS[key]} not merged: {_shards(lacking)} none")
        else:
            stats[key] = float(pick(float(p[key]) for _, p in counted))
    unusable = {
        key: [i for i, (c, p) in enumerate(zip(counts, parts, strict=True)) if c > 0 and not _finite(p.get(key))]
        for key in ("stats_mean", "stats_std")
    }
    if unusable["stats_mean"]:
        notes.append(f"mean and std not merged: {_shards(unusable['stats_mean'])} no finite mean")
        return MergedStats(stats, "; ".join(notes))
    mean = sum(c * float(p["stats_mean"]) for c, p in counted) / total
    stats["stats_mean"] = mean
    if unusable["stats_std"]:
        notes.append(f"std not merged: {_shards(unusable['stats_std'])} no finite std")
    else:
        # SPEC §6.7: the population variance; the parallel formula over the shards' counts, means and stds
        squares = sum(c * (float(p["stats_std"]) ** 2 + (float(p["stats_mean"]) - mean) ** 2) for c, p in counted)
        stats["stats_std"] = math.sqrt(squares / total)
    return MergedStats(stats, "; ".join(notes))


def _shards(positions: Sequence[int]) -> str:
    """The shards and their verb: ``"shard 1 stores"``, ``"shards 1, 3 store"`` (0-based, as the Shards table)."""
    one = len(positions) == 1
    return ("shard " if one else "shards ") + ", ".join(str(i) for i in positions) + (" stores" if one else " store")


def stored_stats_text(stats: Mapping[str, Any], note: str = "", shards: int = 0, *, integer: bool = False) -> str:
    """The "stored statistics (§6.7)" cell of a feature.

    Parameters
    ----------
    stats
        The statistics, keyed as §6.7 (those present).
    note
        What was not merged (:attr:`MergedStats.note`), shown after them.
    shards
        For a sharded dataset, the number of shards merged (the cell says so); 0 for one file.
    integer
        The feature's values are integers: its min and max are shown with every digit
        (:func:`h5ml.tools.report.markup.number`, ``exact``).

    Returns
    -------
    str
        ``"count 64, min 0, max 16, mean 7.99, std 5"`` (6 significant digits, but every digit of the min and
        max of an integer feature), then ``"(merged over 3 shards)"``
        and the note; ``""`` when there is nothing to show.
    """
    exact = ("stats_min", "stats_max") if integer else ()
    parts = [f"{word} {number(stats[key], exact=key in exact)}" for key, word in STATS_KEYS.items() if key in stats]
    text = ", ".join(parts)
    if shards and parts:
        text += f" (merged over {shards} shard{'s' if shards != 1 else ''})"
    if note:
        text = f"{text}; {note}" if text else note
    return text
