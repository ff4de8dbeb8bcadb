"""The shards of a sharded dataset in ``h5ml report INDEX``: one row per shard, and their summaries merged (§12).

Each shard the index lists is a conforming h5ml file holding one split
(§12.1-R5): :func:`shard_summaries` summarizes each with
:func:`h5ml.tools.summary.summarize` (the figures of ``h5ml inspect``: storage,
chunks, compression, class counts, lengths), and :func:`merge_features` adds
them up per split, so that the report of a sharded dataset shows the same
figures as the report of the one file it was cut from, the statistics each
shard stores (§6.7) merged where they merge exactly
(:func:`h5ml.tools.report.stored_stats.merge_stored_stats`). A shard that cannot be
read is listed with the reason, and the figures of its split say over how many
shards they are (``SplitShards.unread``), never silently short.

No shard is read beyond what :func:`~h5ml.tools.summary.summarize` reads
(metadata, codes, offsets); the samples the report previews and samples are
read through :class:`h5ml.reader.sharded.ShardedDataset`.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from h5ml.errors import H5MLError
from h5ml.model.shard_index import shard_location
from h5ml.tools.report.stored_stats import merge_stored_stats
from h5ml.tools.summary import FeatureSummary, summarize

if TYPE_CHECKING:  # pragma: no cover
    from h5ml.model.shard_index import ShardIndex

__all__ = ["ShardRow", "SplitShards", "merge_features", "shard_summaries"]


@dataclass(frozen=True)
class ShardRow:
    """One shard as the page lists it (§12.1).

    Attributes
    ----------
    split, position
        Its split and its place among the split's shards (0-based, sample order).
    path, num_samples, size_bytes, fingerprint
        What the index says of it.
    stored_bytes
        Bytes its features store (the sum of :attr:`FeatureSummary.stored_bytes`), None when unknown or unread.
    compression
        The compression of its first feature's main dataset (``"deflate(4)"``), None when none or unread.
    error
        Why it could not be summarized (missing, not h5ml, ...), None when it was.
    """

    split: str
    position: int
    path: str
    num_samples: int
    size_bytes: int
    fingerprint: str
    stored_bytes: int | None = None
    compression: str | None = None
    error: str | None = None


@dataclass(frozen=True)
class SplitShards:
    """The merged feature summaries of one split, and how many of its shards they count.

    Attributes
    ----------
    features
        One :class:`FeatureSummary` per feature, over the shards read (:func:`merge_features`).
    read, unread
        The number of shards summarized, and of those that could not be.
    stats_notes
        Feature name -> what of its stored statistics was not merged, and why
        (:attr:`h5ml.tools.report.stored_stats.MergedStats.note`); features merged whole are not in it.
    """

    features: list[FeatureSummary] = field(default_factory=list)
    read: int = 0
    unread: int = 0
    stats_notes: dict[str, str] = field(default_factory=dict)


def shard_summaries(
    index: ShardIndex, index_file: str | os.PathLike[str]
) -> tuple[dict[str, SplitShards], list[ShardRow]]:
    """Summarize every shard of the index and merge the summaries per split.

    Parameters
    ----------
    index
        The loaded index (:func:`h5ml.model.shard_index.load_index`).
    index_file
        Where the index file is: shard paths are relative to its folder (§12.1).

    Returns
    -------
    (dict, list)
        Split name -> :class:`SplitShards`, in index order; and one :class:`ShardRow` per shard, split by split.
    """
    merged: dict[str, SplitShards] = {}
    rows: list[ShardRow] = []
    for split_name, entry in index.splits.items():
        per_shard: list[list[FeatureSummary]] = []
        unread = 0
        for position, shard in enumerate(entry.shards):
            row = ShardRow(split_name, position, shard.path, shard.num_samples, shard.size_bytes, shard.fingerprint)
            try:
                summary = summarize(shard_location(index_file, shard.path))
                split = next(s for s in summary.splits if s.name == split_name)
            except (H5MLError, OSError, StopIteration) as exc:
                reason = str(exc) or f"the shard holds no split {split_name!r}"
                rows.append(dataclasses.replace(row, error=reason))
                unread += 1
                continue
            per_shard.append(split.features)
            stored = [f.stored_bytes for f in split.features]
            rows.append(
                dataclasses.replace(
                    row,
                    stored_bytes=None if None in stored else sum(s or 0 for s in stored),
                    compression=split.features[0].compression if split.features else None,
                )
            )
        groups = [list(group) for group in zip(*per_shard, strict=False)] if per_shard else []
        features = [merge_features(group) for group in groups]
        notes = {group[0].name: merge_stored_stats([p.stats for p in group]).note for group in groups}
        merged[split_name] = SplitShards(features, len(per_shard), unread, {k: v for k, v in notes.items() if v})
    return merged, rows


def _total(values: Sequence[int | None]) -> int | None:
    return None if any(v is None for v in values) else sum(v or 0 for v in values)


def merge_features(parts: list[FeatureSummary]) -> FeatureSummary:
    """One feature's summary over several shards (the same feature of one split in each, §12.2).

    Parameters
    ----------
    parts
        The feature's summary in each shard, in shard order (at least one).

    Returns
    -------
    FeatureSummary
        Sample counts, stored and raw bytes, class counts and missing codes
        added; lengths and sample shapes the smallest and largest over the
        shards; the ratio recomputed from the sums; chunks, filters and the
        attributes those of the first shard. The statistics the shards store
        (§6.7) merged where they merge exactly
        (:func:`~h5ml.tools.report.stored_stats.merge_stored_stats`: what is
        not merged is left out of ``stats``); ``never_written`` names the
        shard of each entry.

    Raises
    ------
    ValueError
        If ``parts`` is empty or its summaries are not of one feature name.
    """
    if not parts or len({p.name for p in parts}) != 1:
        raise ValueError(f"merge_features needs summaries of one feature, got {[p.name for p in parts]}")
    first = parts[0]
    n = sum(p.num_samples for p in parts)
    lengths_min = [p.length_min for p in parts if p.length_min is not None]
    lengths_max = [p.length_max for p in parts if p.length_max is not None]
    shapes_min = [p.shape_min for p in parts if p.shape_min is not None]
    shapes_max = [p.shape_max for p in parts if p.shape_max is not None]
    logical = _total([p.logical_bytes for p in parts])
    # the stored bytes of each shard's fixed-size components (raw / ratio), the ratio's denominator
    fixed = [p.logical_bytes / p.compression_ratio for p in parts if p.compression_ratio and p.logical_bytes]
    ratio = logical / sum(fixed) if logical and len(fixed) == len(parts) else None
    counts = None
    if all(p.class_counts is not None for p in parts):
        counts = [sum(c) for c in zip(*(p.class_counts or [] for p in parts), strict=True)]
    missing = _total([p.missing_count for p in parts])
    return dataclasses.replace(
        first,
        num_samples=n,
        shape=None if first.shape is None else [n, *first.shape[1:]],
        length_min=min(lengths_min) if lengths_min else None,
        length_max=max(lengths_max) if lengths_max else None,
        shape_min=[min(axis) for axis in zip(*shapes_min, strict=True)] if shapes_min else None,
        shape_max=[max(axis) for axis in zip(*shapes_max, strict=True)] if shapes_max else None,
        stored_bytes=_total([p.stored_bytes for p in parts]),
        logical_bytes=logical,
        compression_ratio=ratio,
        stats=merge_stored_stats([p.stats for p in parts]).stats,
        class_counts=counts,
        missing_count=missing,
        never_written={f"shard {i}: {k}": v for i, p in enumerate(parts) for k, v in p.never_written.items()},
    )
