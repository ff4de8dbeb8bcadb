"""The facts of ``h5ml report``: the card, the validation, and per split and feature what the page shows.

:func:`collect` gathers everything the page shows, and nothing else reads
the file: the storage figures of ``h5ml inspect``
(:func:`h5ml.tools.summary.summarize`: encodings, dtypes, shapes, chunks,
compression, stored sizes, ratios, class counts, lengths; for a sharded
dataset per shard, merged by :mod:`h5ml.tools.report.shards`), the report of
the validator (:func:`h5ml.validator.validate`, metadata checks only, §9; for
an index that of the sharded datasets' validator, §12.1-R7), the lengths of
ragged and bytes features (their offsets, for the median and the length
histogram), and a bounded sample of the data (:mod:`h5ml.tools.report.sample`):
the first samples for previews, and evenly spread runs of rows for value
statistics. Class counts and lengths cover every sample (they come from codes
and offsets, small beside the data); value statistics cover the sample only,
and the page says so.

What kind of preview a feature gets (:func:`preview_kind`): ``audio`` when it
carries ``sample_rate`` (§6.1); ``image`` for samples of image shape
(:func:`h5ml.tools.report.image_scale.image_like`: uint8, and float, integer
or boolean (H, W) or (H, W, C) with C 1, 3 or 4), and bytes features whose
``media_type`` is a raster image type (§6.6); ``text`` for strings; ``table`` for scalar numbers
and categorical codes; else none.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import numpy as np
import numpy.typing as npt

from h5ml.errors import H5MLError, NotH5MLError
from h5ml.model.shard_index import is_index_path
from h5ml.tools.report.image_scale import image_like
from h5ml.tools.report.previews import cell_text
from h5ml.tools.report.sample import PREVIEW_SAMPLES, SampleRows, ValueStats, sample_rows, value_stats
from h5ml.tools.report.shards import ShardRow, SplitShards, shard_summaries

if TYPE_CHECKING:  # pragma: no cover
    from h5ml.tools.summary import FeatureSummary
    from h5ml.validator.runner import FileReport

__all__ = ["IMAGE_MEDIA_TYPES", "FeatureFacts", "ReportFacts", "SplitFacts", "collect", "preview_kind"]

#: ``media_type`` values of bytes features shown as images: raster types every browser decodes in an ``<img>``.
IMAGE_MEDIA_TYPES: Final = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp", "image/bmp"})


@dataclass(frozen=True)
class FeatureFacts:
    """What the page shows of one feature of one split.

    Attributes
    ----------
    summary
        The figures of ``h5ml inspect`` (:class:`h5ml.tools.summary.FeatureSummary`), over every shard for an index.
    kind
        The preview it gets (:func:`preview_kind`): ``image``, ``audio``, ``text``, ``table`` or ``""``.
    sample_shape
        The reader's shape of one sample (None for an axis whose length varies).
    lengths
        Ragged and bytes: every sample's length (elements along the varying axis, bytes), int64; else None.
    length_median
        The median of ``lengths``, None without lengths.
    stats
        Numeric dense and ragged features: the figures of the sampled rows (:class:`ValueStats`); else None.
    previews
        The first samples as the reader returns them (at most :data:`~h5ml.tools.report.sample.PREVIEW_SAMPLES`).
    stats_shards
        For a sharded dataset, the number of shards the stored statistics (``summary.stats``) are merged over;
        0 for one file.
    stats_note
        What of the stored statistics was not merged over the shards, and why; ``""`` when all was.
    """

    summary: FeatureSummary
    kind: str
    sample_shape: tuple[int | None, ...]
    lengths: npt.NDArray[np.int64] | None = None
    length_median: float | None = None
    stats: ValueStats | None = None
    previews: list[Any] = field(default_factory=list)
    stats_shards: int = 0
    stats_note: str = ""


@dataclass(frozen=True)
class SplitFacts:
    """One split: its features, the label of its previews, and the rows sampled.

    Attributes
    ----------
    name, num_samples, description
        The split (§5.1, §5.3).
    features
        Its features, in file order.
    label
        The categorical feature whose class names label the previews (role ``target`` first), or None.
    preview_labels
        The class names of the first samples under ``label`` (``"(missing)"`` for code -1), each at most
        :data:`~h5ml.tools.report.previews.MAX_CELL_CHARS` characters (a longer one ends with an ellipsis).
    sample
        The rows the value statistics are over (the same for every feature of the split).
    unreadable
        Features the reader cannot read, name -> why (listed, never left out).
    shards_unread
        For an index: the split's shards that could not be summarized (its figures leave them out).
    """

    name: str
    num_samples: int
    description: str | None
    features: list[FeatureFacts]
    label: str | None
    preview_labels: list[str]
    sample: SampleRows
    unreadable: dict[str, str] = field(default_factory=dict)
    shards_unread: int = 0


@dataclass(frozen=True)
class ReportFacts:
    """Everything the page shows.

    Attributes
    ----------
    path
        The file or index as given.
    sharded
        Whether it is a sharded dataset (§12).
    size_bytes
        The file's size; for an index the sum of its shards' sizes as the index gives them.
    format_version
        The file's (or the index's) ``format_version``.
    card
        The root attributes (§4.2) as JSON values; for an index its card (§12.1) with the first shard's
        ``created`` and ``writer``.
    validation
        The validator's report (metadata checks, §9).
    splits
        One :class:`SplitFacts` per split, in order.
    shards
        For an index: one row per shard.
    refused
        Why the reader refused a file the validator found errors in (``splits`` is then empty); None when it read it.
    """

    path: str
    sharded: bool
    size_bytes: int
    format_version: str
    card: dict[str, Any]
    validation: FileReport
    splits: list[SplitFacts]
    shards: list[ShardRow] = field(default_factory=list)
    refused: str | None = None

    @property
    def valid(self) -> bool:
        """Whether the validator found no error in the file, or in the index and every shard (§9.1, §12.1-R7)."""
        return all(r.readable and r.valid for r in self.validation.each())


def preview_kind(summary: FeatureSummary, sample_shape: tuple[int | None, ...]) -> str:
    """The preview a feature gets on the page (see the module docstring).

    Parameters
    ----------
    summary
        Its summary (encoding, dtype, ``sample_rate``, ``media_type``).
    sample_shape
        The shape of one sample, None for a varying axis.

    Returns
    -------
    str
        ``"audio"``, ``"image"``, ``"text"``, ``"table"`` or ``""`` (no preview).
    """
    numeric = summary.encoding in ("dense", "ragged")
    if numeric and summary.sample_rate is not None:
        return "audio"
    if summary.encoding == "bytes":
        return "image" if summary.media_type in IMAGE_MEDIA_TYPES else ""
    if image_like(summary.encoding, summary.dtype, sample_shape):
        return "image"
    if summary.encoding == "string":
        return "text"
    if summary.encoding == "categorical" or (summary.encoding == "dense" and sample_shape == ()):
        return "table"
    return ""


def _row_bytes(summary: FeatureSummary) -> float:
    if summary.logical_bytes is None or not summary.num_samples:
        return 0.0
    return summary.logical_bytes / summary.num_samples


def _feature_facts(feature: Any, summary: FeatureSummary, rows: SampleRows, shards: SplitShards | None) -> FeatureFacts:
    shape = tuple(feature.sample_shape)
    kind = preview_kind(summary, shape)
    n = summary.num_samples
    lengths = median = None
    if summary.encoding in ("ragged", "bytes") and not summary.never_written:
        lengths = np.asarray(feature.lengths(), dtype=np.int64)
        median = float(np.median(lengths)) if lengths.size else None
    stats = None
    numeric = summary.encoding in ("dense", "ragged") and summary.dtype not in ("str", "bytes")
    if numeric and n and not summary.never_written:
        stats = value_stats(feature.read(rows.rows))
    previews: list[Any] = []
    if kind and n and not summary.never_written:
        first = feature.read(slice(0, min(PREVIEW_SAMPLES, n)))
        previews = list(first)
    if shards is None:
        return FeatureFacts(summary, kind, shape, lengths, median, stats, previews)
    note = shards.stats_notes.get(summary.name, "")
    return FeatureFacts(summary, kind, shape, lengths, median, stats, previews, shards.read, note)


def _label(split: Any, summaries: list[FeatureSummary]) -> str | None:
    categorical = [s for s in summaries if s.encoding == "categorical" and s.class_names is not None]
    targets = [s for s in categorical if s.role == "target"]
    chosen = targets or categorical
    return chosen[0].name if chosen else None


def _split_facts(split: Any, summaries: list[FeatureSummary], shards: SplitShards | None = None) -> SplitFacts:
    n = int(split.num_samples)
    widest = max((_row_bytes(s) for s in summaries if s.encoding in ("dense", "ragged")), default=0.0)
    rows = sample_rows(n, widest)
    features = [_feature_facts(split.features[s.name], s, rows, shards) for s in summaries if s.name in split.features]
    label = _label(split, summaries)
    labels: list[str] = []
    if label is not None:
        names = split.features[label].class_names or []
        codes = split.features[label].read(slice(0, min(PREVIEW_SAMPLES, n)))
        labels = [cell_text(c, names) for c in codes]  # a name cut to MAX_CELL_CHARS, as in the rows table
    description = getattr(split, "description", None)
    return SplitFacts(
        name=split.name,
        num_samples=n,
        description=None if description is None else str(description),
        features=features,
        label=label,
        preview_labels=labels,
        sample=rows,
        unreadable={name: str(error) for name, error in split.unreadable.items()},
        shards_unread=0 if shards is None else shards.unread,
    )


def collect(path: str | os.PathLike[str]) -> ReportFacts:
    """Gather the facts of the report of a file or a sharded dataset.

    Parameters
    ----------
    path
        An h5ml file; or the index of a sharded dataset (a ``.json`` file, or a folder holding ``index.json``).

    Returns
    -------
    ReportFacts
        See the module docstring for what is read: metadata, codes, offsets and a bounded sample. When the
        validator found errors and the reader then refuses the file (an attribute of the wrong type, a missing
        shard), the facts hold the card and the validation, no split, and the reader's message in ``refused``:
        the page shows why, never figures of a part of the file.

    Raises
    ------
    FileNotFoundError
        If ``path`` does not exist.
    H5MLError
        If it is not an h5ml file (:class:`h5ml.errors.NotH5MLError`) or index, or the reader refuses a file the
        validator found no error in.
    """
    from h5ml.validator import validate

    text = os.fspath(path)
    if is_index_path(text):
        return _collect_index(text)
    from h5ml.tools.console import require_file
    from h5ml.tools.summary import summarize

    require_file(text)
    validation = validate(text)
    try:
        summary = summarize(text)
        with h5ml_open(text) as ds:
            splits = [_split_facts(ds.splits[s.name], s.features) for s in summary.splits if s.name in ds.splits]
    except NotH5MLError:
        raise
    except H5MLError as exc:
        if validation.valid or not validation.readable:  # nothing the page could show instead
            raise
        size = Path(text).stat().st_size
        version = validation.format_version or "?"
        return ReportFacts(text, False, size, version, _root_card(text), validation, [], refused=str(exc))
    return ReportFacts(text, False, summary.file_bytes, summary.format_version, summary.metadata, validation, splits)


def h5ml_open(path: str) -> Any:
    """:func:`h5ml.open` (imported when a report runs: the reader is not needed to import this module)."""
    import h5ml

    return h5ml.open(path)


def _root_card(path: str) -> dict[str, Any]:
    """The root attributes of a file the reader refused, as JSON values, for the card; ``{}`` when unreadable."""
    import h5py

    from h5ml.tools.dump import attribute_json

    try:
        with h5py.File(path, "r") as f:
            return {key: attribute_json(f.attrs[key]) for key in f.attrs}
    except (OSError, ValueError, TypeError, KeyError):
        return {}


def _collect_index(text: str) -> ReportFacts:
    from h5ml.model.shard_index import load_index
    from h5ml.validator import validate

    index, where = load_index(text)
    validation = validate(text)
    merged, rows = shard_summaries(index, where)
    size = sum(r.size_bytes for r in rows)
    card: dict[str, Any] = dict(index.metadata)
    try:
        with h5ml_open(text) as ds:
            with contextlib.suppress(H5MLError):  # the first shard's created and writer too (ShardedDataset.attrs)
                card = dict(ds.attrs)
            splits = [
                _split_facts(ds.splits[name], merged[name].features, merged[name])
                for name in index.splits
                if name in ds.splits
            ]
    except (H5MLError, OSError) as exc:
        if validation.valid and all(r.valid for r in validation.each()):
            raise
        version = index.format_version
        return ReportFacts(str(where), True, size, version, card, validation, [], rows, refused=str(exc))
    return ReportFacts(str(Path(where)), True, size, index.format_version, card, validation, splits, rows)
