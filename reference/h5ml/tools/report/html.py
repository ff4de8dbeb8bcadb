"""The page of ``h5ml report``: one self-contained HTML document built from :class:`~h5ml.tools.report.collect.ReportFacts`.

The page holds everything it shows: its style in a ``<style>`` element
(:data:`h5ml.tools.report.markup.STYLE`),
plots and images as ``data:`` URIs (:mod:`h5ml.tools.report.plots`,
:mod:`h5ml.tools.report.previews`), audio as WAV ``data:`` URIs. It has no
script, no link to a stylesheet and no URL of any other scheme than ``data:``;
its Content-Security-Policy (``default-src 'none'``) makes a browser refuse
anything else, so it views offline and cannot reach the network. Every text
of the file (names, descriptions, class names, strings, issue messages) is
data, never markup (§10.2): it goes through
:func:`h5ml.tools.report.markup.escape`, quotes included, so a description
holding ``<script>`` shows as that text. Every table scrolls inside its own
box (:func:`h5ml.tools.report.markup.table`), so the page itself never
scrolls sideways. Paths of shards are shown relative to the sharded
dataset's folder everywhere on the page, as its index names them (§12.1).
The compression ratio is that of ``h5ml inspect``: ``ratio stored / raw``
as a percentage (:attr:`h5ml.tools.summary.FeatureSummary.stored_share`).
The previews are built by :mod:`h5ml.tools.report.preview_sections`.

It implements no SPEC clause: it renders the card (§4.2), the validation
report (§9.3) and the figures of each split and feature (§5, §6).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import numpy as np

from h5ml.tools.console import plural, size_text, tuple_text
from h5ml.tools.report import plots, previews
from h5ml.tools.report.markup import STYLE, escape, number, table
from h5ml.tools.report.preview_sections import audio_section, images_section, rows_section
from h5ml.tools.report.sample import PREVIEW_SAMPLES
from h5ml.tools.report.stored_stats import stored_stats_text
from h5ml.tools.summary import CARD_FIELDS, RATIO_WORDS, card_text, share_text

if TYPE_CHECKING:  # pragma: no cover
    from h5ml.tools.report.collect import FeatureFacts, ReportFacts, SplitFacts
    from h5ml.tools.summary import FeatureSummary

__all__ = ["CONTENT_POLICY", "render_page"]

#: The page's Content-Security-Policy: nothing but ``data:`` images and audio and its own style.
CONTENT_POLICY: Final = "default-src 'none'; img-src data:; media-src data:; style-src 'unsafe-inline'"


def _card(facts: ReportFacts) -> str:
    rows = []
    for key in CARD_FIELDS:
        value = facts.format_version if key == "format_version" else facts.card.get(key)
        if value is None:
            continue
        rows.append(f'<tr><th>{escape(key)}</th><td class="pre">{escape(card_text(value))}</td></tr>')
    return f'<h2>Dataset card</h2><div class="wide"><table class="card"><tbody>{"".join(rows)}</tbody></table></div>'


def _verdict(facts: ReportFacts) -> str:
    reports = list(facts.validation.each())
    valid = facts.valid
    counts = {k: sum(r.counts[k] for r in reports) for k in ("error", "warning", "info")}
    words = ", ".join(plural(counts[k], k) for k in ("error", "warning", "info"))
    what = "VALID" if valid else "INVALID"
    klass = "valid" if valid else "invalid"
    return f'<p><span class="{klass}" id="verdict">{what}</span> ({escape(words)})</p>'


def _validation(facts: ReportFacts) -> str:
    report = facts.validation
    rows = []
    for each in report.each():
        where = "" if each is report else _relative(each.path, facts)
        for issue in each.issues:
            rows.append((issue.code, issue.severity.value, where, issue.path, issue.message, issue.clause))
        for code, n in each.omitted.items():
            if n:
                rows.append((code, "", where, "", f"... and {n} more {code} issues, not listed", ""))
    scope = "the index, every shard as a file, and their agreement (SPEC §12.1-R7)" if facts.sharded else "the file"
    text = [f"<h2>Validation</h2><p>The validator's metadata checks (§9; no sample data read) of {escape(scope)}.</p>"]
    text.append(_verdict(facts))
    if rows:
        text.append(
            table(("code", "severity", "shard", "path", "message", "clause"), rows, "issues")
            if facts.sharded
            else table(("code", "severity", "path", "message", "clause"), [r[:2] + r[3:] for r in rows], "issues")
        )
    else:
        text.append("<p>No issues.</p>")
    return "".join(text)


def _relative(path: str, facts: ReportFacts) -> str:
    """A shard's path as the index and the Shards table name it: relative to the sharded dataset's folder (§12.1)."""
    if "://" in path:  # a URL stays whole
        return path
    folder = Path(facts.path).absolute().parent
    return Path(os.path.relpath(Path(path).absolute(), folder)).as_posix()


def _what_was_read(facts: ReportFacts) -> str:
    samples = "; ".join(f"{s.name}: {s.sample.describe()}" for s in facts.splits) or "no split"
    return (
        '<h2>What this page read</h2><p class="note" id="sample-note">'
        "The metadata of every split and feature; the class codes and the offsets (lengths) of every sample, "
        "so class counts and lengths are exact. "
        f"Previews: the first {PREVIEW_SAMPLES} samples of each split. "
        f"Value statistics and value histograms: a bounded sample of rows ({escape(samples)}), not every value. "
        + (
            "The statistics the shards store (§6.7), where they store them, are shown merged over the shards "
            "where they merge exactly (count, min, max, the count-weighted mean, the pooled std).</p>"
            if facts.sharded
            else "The statistics the file stores (§6.7), where it stores them, are shown as stored.</p>"
        )
    )


def _refusal(facts: ReportFacts) -> str:
    """The reader's refusal of a file the validator failed: the page shows no figure of a part of it."""
    return (
        '<h2>Not read</h2><p class="invalid" id="refused">The reader refused this dataset, so this page shows its '
        f"card and validation only: {escape(facts.refused)}</p>"
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
    # the last column is left out when every shard was read
    return f"<h2>Shards</h2>{table(headers, rows, 'shards', numeric=(1, 3), drop_empty=True)}"


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
    """Stored / raw of a compressed feature as ``h5ml inspect`` shows it (``"42%"``); ``""`` for an uncompressed one."""
    share = feature.summary.stored_share
    return "" if share is None else share_text(share)


def _stored_stats(feature: FeatureFacts) -> str:
    """The stored statistics (§6.7); for a sharded dataset merged over its shards, with what was not merged."""
    integer = _integer(feature)
    return stored_stats_text(feature.summary.stats, feature.stats_note, feature.stats_shards, integer=integer)


def _integer(feature: FeatureFacts) -> bool:
    """Whether the feature's values are integers (or booleans), whose min and max the page shows with every digit."""
    try:
        return np.dtype(feature.summary.dtype).kind in "biu"
    except TypeError:  # "str", "bytes" and the like: no statistics of values
        return False


def _sampled_stats(feature: FeatureFacts) -> str:
    stats = feature.stats
    if stats is None:
        return ""
    exact = _integer(feature)
    extremes = (("min", stats.minimum), ("max", stats.maximum))
    parts = [f"{label} {number(v, exact=exact)}" for label, v in extremes if v is not None]
    parts += [f"{label} {number(v)}" for label, v in (("mean", stats.mean), ("std", stats.std)) if v is not None]
    parts.append(f"over {stats.count} finite values")
    left_out = stats.not_finite_text()
    if left_out:
        parts.append(f"not counted: {left_out}")
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
        RATIO_WORDS,
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
    return table(headers, rows, "features", drop_empty=True)


def _plot(kind: str, feature: str, uri: str, data: Any, caption: str = "") -> str:
    payload = escape(json.dumps(data, allow_nan=False))
    below = f"<figcaption>{escape(caption)}</figcaption>" if caption else ""
    return (
        f'<figure class="plot" data-plot="{escape(kind)}" data-feature="{escape(feature)}" data-values="{payload}">'
        f'<img alt="{escape(kind)} of {escape(feature)}" src="{uri}">{below}</figure>'
    )


def _class_plot(split: SplitFacts, s: FeatureSummary) -> str:
    """The class histogram of a categorical feature; its data name the classes drawn, never more.

    With more than :data:`~h5ml.tools.report.plots.MAX_CLASSES_PLOTTED` classes, the plot and its data are
    the most frequent ones, and the caption says how many classes there are in all: a feature of a million
    class names gives a figure of 40.
    """
    names, counts = s.class_names or [], s.class_counts or []
    title = f"{split.name} / {s.name}: samples per class"
    caption = ""
    drawn = plots.classes_drawn(counts)
    if len(drawn) < len(counts):
        title += f" (the {len(drawn)} most frequent)"
        caption = f"{len(counts)} classes in all; the plot and its data show the {len(drawn)} most frequent."
    data: dict[str, Any] = {names[i]: counts[i] for i in drawn}
    return _plot("class-histogram", s.name, plots.class_histogram(names, counts, title), data, caption)


def _plots(split: SplitFacts) -> str:
    out = []
    for feature in split.features:
        s = feature.summary
        if s.class_names is not None and s.class_counts is not None:
            out.append(_class_plot(split, s))
        if feature.lengths is not None and feature.lengths.size:
            unit = "bytes" if s.encoding == "bytes" else ("frames" if s.sample_rate is not None else "rows")
            uri = plots.length_histogram(feature.lengths, f"{split.name} / {s.name}: lengths (every sample)", unit)
            data: dict[str, Any] = {"min": s.length_min, "median": feature.length_median, "max": s.length_max}
            out.append(_plot("length-histogram", s.name, uri, data))
        if feature.stats is not None and feature.stats.values.size:
            uri = plots.value_histogram(feature.stats.values, f"{split.name} / {s.name}: values (sampled rows)")
            data = {"count": feature.stats.count, "min": feature.stats.minimum, "max": feature.stats.maximum}
            out.append(_plot("value-histogram", s.name, uri, data))
    return f'<div class="plots">{"".join(out)}</div>' if out else ""


def _split(split: SplitFacts, budget: previews.PreviewBudget) -> str:
    parts = [f'<section class="split" data-split="{escape(split.name)}">']
    parts.append(f"<h2>Split {escape(split.name)}: {escape(plural(split.num_samples, 'sample'))}</h2>")
    if split.description:
        parts.append(f'<p class="pre">{escape(split.description)}</p>')
    if split.shards_unread:
        parts.append(
            f'<p class="invalid">{escape(plural(split.shards_unread, "shard"))} of this split could not be read: '
            "its figures leave them out (see Shards and Validation).</p>"
        )
    parts.append(_features_table(split))
    for name, reason in split.unreadable.items():  # SPEC §6.1-R7: named, never left out silently
        parts.append(f'<p class="invalid">Feature {escape(name)} cannot be read: {escape(reason)}</p>')
    parts.append(f"<h3>Plots</h3>{_plots(split) or '<p>No plot: no class, length or numeric feature.</p>'}")
    shown = [images_section(split, f, budget) for f in split.features if f.kind == "image" and f.previews]
    shown += [audio_section(split, f, budget) for f in split.features if f.kind == "audio" and f.previews]
    shown.append(rows_section(split))
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
    budget = previews.PreviewBudget(previews.MAX_PREVIEW_BYTES)  # one for the page: every split's previews
    kind = "sharded dataset" if facts.sharded else "file"
    body = [
        f"<h1>{escape(name)}</h1>",
        f"<p>{escape(facts.path)}: h5ml {kind}, format {escape(facts.format_version)}, {escape(size_text(facts.size_bytes))}, "
        f"{escape(plural(len(facts.splits), 'split'))}.</p>",
        _card(facts),
        _validation(facts),
        _refusal(facts) if facts.refused else _what_was_read(facts),
        _shards(facts),
        *(_split(split, budget) for split in facts.splits),
    ]
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{escape(CONTENT_POLICY)}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape(name)}: h5ml report</title><style>{STYLE}</style></head>"
        f"<body>{''.join(body)}</body></html>\n"
    )
