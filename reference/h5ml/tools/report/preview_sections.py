"""The Previews of each split on the ``h5ml report`` page: image grids, audio clips, the first rows.

:func:`images_section` draws a feature's first images in a grid, each
captioned with its index and class name; its heading says how the pixels
are drawn (:mod:`h5ml.tools.report.image_scale`: uint8 values as stored, or
every image of the feature scaled from one range, "shown scaled from 0..16 to
0..255"). :func:`audio_section` gives each first clip a waveform on the
feature's one amplitude axis (:func:`h5ml.tools.report.plots.amplitude_range`,
so that loudness and clipping compare across clips) and a WAV player.
:func:`rows_section` tabulates the first rows of string, categorical and
scalar features.

What the page embeds is bounded: images larger than
:data:`~h5ml.tools.report.previews.MAX_THUMBNAIL_SIDE` pixels on a side are
shown as thumbnails; one :class:`~h5ml.tools.report.previews.PreviewBudget`
for the whole page bounds the bytes of all its images and WAV players, the
ones past it are left out; a ``sample_rate`` no WAV file holds gets no
player. Each section says under its previews what was reduced or left out,
and why.

It implements no SPEC clause: it renders samples the reader returned (§6).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from h5ml.tools.console import size_text
from h5ml.tools.report import plots, previews
from h5ml.tools.report.image_scale import display_pixels, display_range
from h5ml.tools.report.markup import escape, table
from h5ml.tools.report.stored_stats import stored_range

if TYPE_CHECKING:  # pragma: no cover
    from h5ml.tools.report.collect import FeatureFacts, SplitFacts

__all__ = ["audio_limits", "audio_section", "images_section", "rows_section"]


def _caption(split: SplitFacts, i: int) -> str:
    label = split.preview_labels[i] if i < len(split.preview_labels) else ""
    return f"#{i}" + (f" {label}" if label else "")


def images_section(split: SplitFacts, feature: FeatureFacts, budget: previews.PreviewBudget) -> str:
    """The grid of a feature's first images, with how their pixels are drawn.

    Parameters
    ----------
    split, feature
        The split, and one of its features whose preview kind is ``image``.
    budget
        The page's budget of preview bytes: an image that does not fit is left out.

    Returns
    -------
    str
        A heading, then ``<div class="grid" data-feature=...>`` of ``<figure class="preview-image">`` (PNG data
        URIs: stored images of a bytes feature unchanged, arrays drawn by
        :func:`~h5ml.tools.report.image_scale.display_pixels` and reduced to at most
        :data:`~h5ml.tools.report.previews.MAX_THUMBNAIL_SIDE` px on their longest side), then notes: what was
        reduced, what was not embedded or left out, and why.
    """
    summary = feature.summary
    shown = None
    if summary.encoding != "bytes":
        arrays = [np.asarray(sample) for sample in feature.previews]
        shown = display_range(summary.dtype, summary.stats, feature.stats, arrays)
    cells = []
    skipped = not_finite = left_out = 0
    reduced: list[tuple[int, int]] = []
    for i, sample in enumerate(feature.previews):
        if shown is None:
            uri = previews.encoded_image_uri(sample, summary.media_type or "")
        else:
            pixels, bad = display_pixels(np.asarray(sample), shown)
            not_finite += bad
            uri, smaller = previews.image_uri(pixels)
            if smaller:
                reduced.append(pixels.shape[:2])
        if uri is None:
            skipped += 1
            continue
        if not budget.take(uri):
            left_out += 1
            continue
        caption = _caption(split, i)
        cells.append(
            f'<figure class="preview-image"><img alt="{escape(caption)}" src="{uri}"><figcaption>'
            f"{escape(caption)}</figcaption></figure>"
        )
    notes = []
    if reduced:
        height, width = max(reduced, key=lambda hw: hw[0] * hw[1])
        notes.append(
            f"{len(reduced)} of these images are shown reduced to {previews.MAX_THUMBNAIL_SIDE} px on their longest "
            f"side (the largest is {height} x {width} px as stored)."
        )
    if skipped:
        notes.append(f"{skipped} stored images over {size_text(previews.MAX_IMAGE_BYTES)} are not embedded.")
    if left_out:
        notes.append(budget.spent_text(left_out, "images are"))
    if not_finite:
        notes.append(f"{not_finite} values of these images are not finite: NaN and -inf drawn black, +inf white.")
    labelled = f", labelled with {split.label}" if split.label and split.preview_labels else ""
    how = f"; {shown.describe()}" if shown is not None and shown.describe() else ""
    scale = f' data-scale="{shown.low:.17g}..{shown.high:.17g}"' if shown is not None and shown.scaled else ""
    return (
        f'<h4 class="preview-heading"{scale}>{escape(summary.name)}: the first {len(feature.previews)} images'
        f"{escape(labelled)}{escape(how)}</h4>"
        f'<div class="grid" data-feature="{escape(summary.name)}">{"".join(cells)}</div>'
        + "".join(f'<p class="note">{escape(n)}</p>' for n in notes)
    )


def audio_limits(feature: FeatureFacts) -> tuple[float, float]:
    """The amplitude axis of a feature's waveforms (:func:`h5ml.tools.report.plots.amplitude_range`).

    Parameters
    ----------
    feature
        An audio-like feature: its range is that of its stored statistics (§6.7), else of its sampled rows.

    Returns
    -------
    (float, float)
        The axis, the same for every clip of the feature.
    """
    stored = stored_range(feature.summary.stats)
    low, high = stored if stored is not None else (None, None)
    if stored is None and feature.stats is not None:
        low, high = feature.stats.minimum, feature.stats.maximum
    return plots.amplitude_range(feature.summary.dtype, low, high)


def audio_section(split: SplitFacts, feature: FeatureFacts, budget: previews.PreviewBudget) -> str:
    """A feature's first clips: a waveform on the feature's amplitude axis and a WAV player each.

    Parameters
    ----------
    split, feature
        The split, and one of its features whose preview kind is ``audio``.
    budget
        The page's budget of preview bytes: a player whose WAV does not fit is left out (its waveform stays).

    Returns
    -------
    str
        A heading, then one ``<div class="clip preview-audio">`` per clip. A ``sample_rate`` no WAV file holds
        for the clip's channels (:func:`~h5ml.tools.report.previews.wav_rate_problem`: 0, negative, NaN, a byte
        rate above 2**32 - 1, so above 2**31 - 1 Hz for mono) gets no player, and a note under the clips says
        why; its waveforms are drawn all the same (against frames when the rate gives no time).
    """
    rate = float(feature.summary.sample_rate or 0.0)
    limits = audio_limits(feature)
    problems: dict[str, None] = {}  # why clips get no player, in the order first met
    clips = []
    left_out = 0
    for i, sample in enumerate(feature.previews):
        frames = np.asarray(sample)
        problem = previews.wav_rate_problem(rate, int(frames.shape[1]) if frames.ndim == 2 else 1)
        if problem:
            problems[problem] = None
        wave_uri = plots.waveform(frames.astype(np.float64), rate, limits)
        seconds = plots.duration(frames.shape[0], rate)
        words = [f"#{i}", f"{frames.shape[0]} frames" if seconds is None else f"{seconds:.2f} s"]
        if i < len(split.preview_labels):
            words.append(split.preview_labels[i])
        player = ""
        if not problem:
            pcm, cut, scaled = previews.pcm16(frames, rate)
            if cut:
                words.append(f"first {previews.MAX_AUDIO_SECONDS:g} s in the player")
            if scaled:
                words.append("scaled to its peak")
            uri = previews.wav_uri(pcm, rate)
            if budget.take(uri):
                player = f'<audio controls preload="metadata" src="{uri}"></audio>'
            else:
                left_out += 1
                words.append("no player (the page's preview budget is spent)")
        caption = ", ".join(words)
        clips.append(
            f'<div class="clip preview-audio"><img alt="waveform {escape(caption)}" src="{wave_uri}">'
            f"{player}<div>{escape(caption)}</div></div>"
        )
    axis = f"waveforms on one amplitude axis, {limits[0]:g} to {limits[1]:g}"
    notes = [f"No audio player: {problem}; the waveforms are shown." for problem in problems]
    if left_out:
        notes.append(budget.spent_text(left_out, "audio players are") + " Their waveforms are shown.")
    note = "".join(f'<p class="note">{escape(n)}</p>' for n in notes)
    return (
        f"<h4>{escape(feature.summary.name)}: the first {len(clips)} samples at {rate:g} Hz ({escape(axis)})</h4>"
        + "".join(clips)
        + note
    )


def rows_section(split: SplitFacts) -> str:
    """The first rows of a split's string, categorical and scalar features, as one table.

    Parameters
    ----------
    split
        The split.

    Returns
    -------
    str
        A heading and the table; ``""`` when the split has no such feature.
    """
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
    return f"<h4>The first {count} rows</h4>{table(headers, rows, 'preview-rows', numeric=(0,))}"
