"""The page of ``h5ml report``: one self-contained HTML document built from :class:`~h5ml.tools.report.collect.ReportFacts`.

The page holds everything it shows: its style in a ``<style>`` element,
plots and images as ``data:`` URIs (:mod:`h5ml.tools.report.plots`,
:mod:`h5ml.tools.report.previews`), audio as WAV ``data:`` URIs. It has no
script, no link to a stylesheet and no URL of any other scheme than ``data:``;
its Content-Security-Policy (``default-src 'none'``) makes a browser refuse
anything else, so it views offline and cannot reach the network. Every text
of the file (names, descriptions, class names, strings, issue messages) is
data, never markup (§10.2): it goes through :func:`html.escape`, quotes
included, so a description holding ``<script>`` shows as that text.

It implements no SPEC clause: it renders the card (§4.2), the validation
report (§9.3) and the figures of each split and feature (§5, §6).
"""

from __future__ import annotations

import html
import json
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, Final

import numpy as np

from h5ml.tools.console import plural, size_text, tuple_text
from h5ml.tools.report import plots, previews
from h5ml.tools.report.sample import PREVIEW_SAMPLES

if TYPE_CHECKING:  # pragma: no cover
    from h5ml.tools.report.collect import FeatureFacts, ReportFacts, SplitFacts
    from h5ml.validator.runner import FileReport

__all__ = ["CARD_FIELDS", "CONTENT_POLICY", "render_page"]

#: The root attributes of the card (§4.2), in the order shown.
CARD_FIELDS: Final = (
    "name",
    "description",
    "license",
    "citation",
    "creator",
    "created",
    "format_version",
    "writer",
    "fingerprint",
    "version",
    "homepage",
    "source",
    "keywords",
)
#: The page's Content-Security-Policy: nothing but ``data:`` images and audio and its own style.
CONTENT_POLICY: Final = "default-src 'none'; img-src data:; media-src data:; style-src 'unsafe-inline'"

_STYLE: Final = """
body { font-family: system-ui, sans-serif; margin: 1.5em auto; max-width: 72em; color: #1d1d1f; background: #fff; }
h1 { font-size: 1.6em; } h2 { border-bottom: 1px solid #ccd; padding-bottom: .2em; margin-top: 1.6em; }
table { border-collapse: collapse; margin: .6em 0; font-size: .9em; }
th, td { border: 1px solid #d5d8de; padding: .25em .5em; text-align: left; vertical-align: top; }
th { background: #eef1f6; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
.card th { width: 10em; } .pre { white-space: pre-wrap; }
.valid { color: #17692e; font-weight: bold; } .invalid { color: #a3161b; font-weight: bold; }
.note { background: #f6f7f9; border-left: 4px solid #3b6ea8; padding: .5em 1em; }
.plots { display: flex; flex-wrap: wrap; gap: 1em; } .plots img { max-width: 100%; }
.grid { display: flex; flex-wrap: wrap; gap: .8em; }
.grid figure { margin: 0; text-align: center; font-size: .85em; }
.grid img { width: 96px; height: 96px; object-fit: contain; image-rendering: pixelated; border: 1px solid #d5d8de; }
.clip { display: inline-block; margin: .4em; text-align: center; font-size: .85em; }
.clip img { display: block; width: 320px; height: 90px; }
"""


def _e(value: Any) -> str:
    """Any value as escaped text (§10.2: a file's text is data, never markup)."""
    return html.escape(str(value), quote=True)


def _number(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def _table(headers: Sequence[str], rows: Iterable[Sequence[Any]], css: str = "", numeric: Sequence[int] = ()) -> str:
    """A table of escaped cells; the columns in ``numeric`` right-aligned."""
    head = "".join(f"<th>{_e(h)}</th>" for h in headers)
    body = []
    for row in rows:
        cells = "".join(
            f'<td class="num">{_e(cell)}</td>' if i in numeric else f"<td>{_e(cell)}</td>" for i, cell in enumerate(row)
        )
        body.append(f"<tr>{cells}</tr>")
    klass = f' class="{css}"' if css else ""
    return f"<table{klass}><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _card(facts: ReportFacts) -> str:
    rows = []
    for key in CARD_FIELDS:
        value = facts.format_version if key == "format_version" else facts.card.get(key)
        if value is None:
            continue
        text = ", ".join(str(v) for v in value) if isinstance(value, list) else str(value)
        rows.append(f'<tr><th>{_e(key)}</th><td class="pre">{_e(text)}</td></tr>')
    return f'<h2>Dataset card</h2><table class="card"><tbody>{"".join(rows)}</tbody></table>'


def _verdict(report: FileReport) -> str:
    reports = list(report.each())
    valid = all(r.readable and r.valid for r in reports)
    counts = {k: sum(r.counts[k] for r in reports) for k in ("error", "warning", "info")}
    words = ", ".join(plural(counts[k], k) for k in ("error", "warning", "info"))
    what = "VALID" if valid else "INVALID"
    klass = "valid" if valid else "invalid"
    return f'<p><span class="{klass}" id="verdict">{what}</span> ({_e(words)})</p>'


def _validation(facts: ReportFacts) -> str:
    report = facts.validation
    rows = []
    for each in report.each():
        where = "" if each is report else each.path
        for issue in each.issues:
            rows.append((issue.code, issue.severity.value, where, issue.path, issue.message, issue.clause))
        for code, n in each.omitted.items():
            if n:
                rows.append((code, "", where, "", f"... and {n} more {code} issues, not listed", ""))
    scope = "the index, every shard as a file, and their agreement (SPEC §12.1-R7)" if facts.sharded else "the file"
    text = [f"<h2>Validation</h2><p>The validator's metadata checks (§9; no sample data read) of {_e(scope)}.</p>"]
    text.append(_verdict(report))
    if rows:
        text.append(
            _table(("code", "severity", "shard", "path", "message", "clause"), rows, "issues")
            if facts.sharded
            else _table(("code", "severity", "path", "message", "clause"), [r[:2] + r[3:] for r in rows], "issues")
        )
    else:
        text.append("<p>No issues.</p>")
    return "".join(text)


def _what_was_read(facts: ReportFacts) -> str:
    samples = "; ".join(f"{s.name}: {s.sample.describe()}" for s in facts.splits) or "no split"
    return (
        '<h2>What this page read</h2><p class="note" id="sample-note">'
        "The metadata of every split and feature; the class codes and the offsets (lengths) of every sample, "
        "so class counts and lengths are exact. "
        f"Previews: the first {PREVIEW_SAMPLES} samples of each split. "
        f"Value statistics and value histograms: a bounded sample of rows ({_e(samples)}), not every value. "
        "The statistics the file stores (§6.7), where it stores them, are shown as stored.</p>"
    )


def _refusal(facts: ReportFacts) -> str:
    """The reader's refusal of a file the validator failed: the page shows no figure of a part of it."""
    return (
        '<h2>Not read</h2><p class="invalid" id="refused">The reader refused this dataset, so this page shows its '
        f"card and validation only: {_e(facts.refused)}</p>"
    )


def _shards(facts: ReportFacts) -> str:
    if not facts.sharded:
        return ""
    rows = [
        (
            r.split,
            r.position,
            r.path,
            r.num_samples,
            size_text(r.size_bytes),
            "?" if r.stored_bytes is None else size_text(r.stored_bytes),
            r.compression or "none",
            r.fingerprint,
            r.error or "",
        )
        for r in facts.shards
    ]
    headers = ("split", "#", "path", "samples", "size", "stored", "compression", "fingerprint", "could not be read")
    return f"<h2>Shards</h2>{_table(headers, rows, 'shards', numeric=(1, 3))}"


def _shape(feature: FeatureFacts) -> str:
    summary = feature.summary
    if summary.shape is not None:
        return tuple_text(summary.shape)
    axes = ["var" if d is None else str(d) for d in feature.sample_shape]
    return tuple_text([str(summary.num_samples), *axes])


def _lengths(feature: FeatureFacts) -> str:
    summary = feature.summary
    if summary.length_min is None:
        return ""
    median = "" if feature.length_median is None else f"{feature.length_median:g}"
    return f"{summary.length_min} / {median} / {summary.length_max}"


def _ratio(feature: FeatureFacts) -> str:
    """Raw / stored of a compressed feature; none for an uncompressed one (below 1 it is chunk padding, as inspect says)."""
    ratio = feature.summary.compression_ratio
    return "" if not ratio or feature.summary.compression is None else f"{ratio:.2f}x"


def _stored_stats(feature: FeatureFacts) -> str:
    names = {"stats_min": "min", "stats_max": "max", "stats_mean": "mean", "stats_std": "std", "stats_count": "count"}
    return ", ".join(f"{w} {_number(feature.summary.stats[k])}" for k, w in names.items() if k in feature.summary.stats)


def _sampled_stats(feature: FeatureFacts) -> str:
    stats = feature.stats
    if stats is None:
        return ""
    parts = [f"{label} {_number(v)}" for label, v in (("min", stats.minimum), ("max", stats.maximum)) if v is not None]
    parts += [f"{label} {_number(v)}" for label, v in (("mean", stats.mean), ("std", stats.std)) if v is not None]
    parts.append(f"over {stats.count} values")
    if stats.nan_count:
        parts.append(f"{stats.nan_count} NaN")
    return ", ".join(parts)


def _features_table(split: SplitFacts) -> str:
    headers = (
        "feature",
        "encoding",
        "dtype",
        "shape",
        "length min / median / max",
        "chunks",
        "compression",
        "stored",
        "raw",
        "ratio raw / stored",
        "stored statistics (§6.7)",
        "sampled statistics",
    )
    rows = []
    for feature in split.features:
        s = feature.summary
        rows.append(
            (
                s.name,
                s.encoding + (f", {s.sample_rate:g} Hz" if s.sample_rate is not None else ""),
                s.dtype,
                _shape(feature),
                _lengths(feature),
                "contiguous" if s.chunks is None else tuple_text(s.chunks),
                s.compression or "none",
                size_text(s.stored_bytes),
                "" if s.logical_bytes is None else size_text(s.logical_bytes),
                _ratio(feature),
                _stored_stats(feature),
                _sampled_stats(feature),
            )
        )
    return _table(headers, rows, "features")


def _plot(kind: str, feature: str, uri: str, data: Any) -> str:
    payload = _e(json.dumps(data, allow_nan=False))
    return (
        f'<figure class="plot" data-plot="{_e(kind)}" data-feature="{_e(feature)}" data-values="{payload}">'
        f'<img alt="{_e(kind)} of {_e(feature)}" src="{uri}"></figure>'
    )


def _plots(split: SplitFacts) -> str:
    out = []
    for feature in split.features:
        s = feature.summary
        if s.class_names is not None and s.class_counts is not None:
            title = f"{split.name} / {s.name}: samples per class"
            if len(s.class_counts) > plots.MAX_CLASSES_PLOTTED:
                title += f" (the {plots.MAX_CLASSES_PLOTTED} most frequent)"
            data: dict[str, Any] = dict(zip(s.class_names, s.class_counts, strict=True))
            out.append(
                _plot("class-histogram", s.name, plots.class_histogram(s.class_names, s.class_counts, title), data)
            )
        if feature.lengths is not None and feature.lengths.size:
            unit = "bytes" if s.encoding == "bytes" else ("frames" if s.sample_rate is not None else "rows")
            uri = plots.length_histogram(feature.lengths, f"{split.name} / {s.name}: lengths (every sample)", unit)
            data = {"min": s.length_min, "median": feature.length_median, "max": s.length_max}
            out.append(_plot("length-histogram", s.name, uri, data))
        if feature.stats is not None and feature.stats.values.size:
            uri = plots.value_histogram(feature.stats.values, f"{split.name} / {s.name}: values (sampled rows)")
            data = {"count": feature.stats.count, "min": feature.stats.minimum, "max": feature.stats.maximum}
            out.append(_plot("value-histogram", s.name, uri, data))
    return f'<div class="plots">{"".join(out)}</div>' if out else ""


def _images(split: SplitFacts, feature: FeatureFacts) -> str:
    cells = []
    skipped = 0
    for i, sample in enumerate(feature.previews):
        if feature.summary.encoding == "bytes":
            uri = previews.encoded_image_uri(sample, feature.summary.media_type or "")
        else:
            uri = previews.image_uri(np.asarray(sample))
        if uri is None:
            skipped += 1
            continue
        label = split.preview_labels[i] if i < len(split.preview_labels) else ""
        caption = f"#{i}" + (f" {label}" if label else "")
        cells.append(
            f'<figure class="preview-image"><img alt="{_e(caption)}" src="{uri}"><figcaption>{_e(caption)}'
            "</figcaption></figure>"
        )
    note = (
        f"<p>{skipped} stored images over {size_text(previews.MAX_IMAGE_BYTES)} are not embedded.</p>"
        if skipped
        else ""
    )
    labelled = f", labelled with {_e(split.label)}" if split.label and split.preview_labels else ""
    return (
        f"<h4>{_e(feature.summary.name)}: the first {len(feature.previews)} images{labelled}</h4>"
        f'<div class="grid" data-feature="{_e(feature.summary.name)}">{"".join(cells)}</div>{note}'
    )


def _audio(split: SplitFacts, feature: FeatureFacts) -> str:
    rate = float(feature.summary.sample_rate or 0.0)
    clips = []
    for i, sample in enumerate(feature.previews):
        frames, cut, scaled = previews.pcm16(np.asarray(sample), rate)
        wave_uri = plots.waveform(np.asarray(sample, dtype=np.float64), rate)
        seconds = np.asarray(sample).shape[0] / rate
        words = [f"#{i}", f"{seconds:.2f} s"]
        if i < len(split.preview_labels):
            words.append(split.preview_labels[i])
        if cut:
            words.append(f"first {previews.MAX_AUDIO_SECONDS:g} s in the player")
        if scaled:
            words.append("scaled to its peak")
        caption = ", ".join(words)
        clips.append(
            f'<div class="clip preview-audio"><img alt="waveform {_e(caption)}" src="{wave_uri}">'
            f'<audio controls preload="metadata" src="{previews.wav_uri(frames, rate)}"></audio>'
            f"<div>{_e(caption)}</div></div>"
        )
    return f"<h4>{_e(feature.summary.name)}: the first {len(clips)} samples at {rate:g} Hz</h4>{''.join(clips)}"


def _rows(split: SplitFacts) -> str:
    columns = [f for f in split.features if f.kind in ("text", "table") and f.previews]
    if not columns:
        return ""
    count = max(len(f.previews) for f in columns)
    rows = []
    for i in range(count):
        row: list[Any] = [i]
        for f in columns:
            names = f.summary.class_names if f.summary.encoding == "categorical" else None
            row.append(previews.cell_text(f.previews[i], names) if i < len(f.previews) else "")
        rows.append(row)
    headers = ["#", *(f.summary.name for f in columns)]
    return f"<h4>The first {count} rows</h4>{_table(headers, rows, 'preview-rows', numeric=(0,))}"


def _split(split: SplitFacts) -> str:
    parts = [f'<section class="split" data-split="{_e(split.name)}">']
    parts.append(f"<h2>Split {_e(split.name)}: {_e(plural(split.num_samples, 'sample'))}</h2>")
    if split.description:
        parts.append(f'<p class="pre">{_e(split.description)}</p>')
    if split.shards_unread:
        parts.append(
            f'<p class="invalid">{_e(plural(split.shards_unread, "shard"))} of this split could not be read: '
            "its figures leave them out (see Shards and Validation).</p>"
        )
    parts.append(_features_table(split))
    for name, reason in split.unreadable.items():  # SPEC §6.1-R7: named, never left out silently
        parts.append(f'<p class="invalid">Feature {_e(name)} cannot be read: {_e(reason)}</p>')
    parts.append(f"<h3>Plots</h3>{_plots(split) or '<p>No plot: no class, length or numeric feature.</p>'}")
    shown = [_images(split, f) for f in split.features if f.kind == "image" and f.previews]
    shown += [_audio(split, f) for f in split.features if f.kind == "audio" and f.previews]
    shown.append(_rows(split))
    if any(shown):
        parts.append("<h3>Previews</h3>" + "".join(shown))
    parts.append("</section>")
    return "".join(parts)


def render_page(facts: ReportFacts) -> str:
    """The whole report as one HTML document.

    Parameters
    ----------
    facts
        What :func:`h5ml.tools.report.collect.collect` gathered.

    Returns
    -------
    str
        The document (UTF-8 text): card, validation, what was read, shards (an index), then each split.
    """
    name = facts.card.get("name") or facts.path
    kind = "sharded dataset" if facts.sharded else "file"
    body = [
        f"<h1>{_e(name)}</h1>",
        f"<p>{_e(facts.path)}: h5ml {kind}, format {_e(facts.format_version)}, {_e(size_text(facts.size_bytes))}, "
        f"{_e(plural(len(facts.splits), 'split'))}.</p>",
        _card(facts),
        _validation(facts),
        _refusal(facts) if facts.refused else _what_was_read(facts),
        _shards(facts),
        *(_split(split) for split in facts.splits),
    ]
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{_e(CONTENT_POLICY)}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{_e(name)}: h5ml report</title><style>{_STYLE}</style></head>"
        f"<body>{''.join(body)}</body></html>\n"
    )
