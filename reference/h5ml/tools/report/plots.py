"""The plots of ``h5ml report``: matplotlib figures, drawn with the Agg canvas, as embedded SVG data URIs.

Each function draws one small figure and returns it as a ``data:image/svg+xml``
URI for an ``<img>`` (an SVG in an ``<img>`` runs no script and loads
nothing, so the page stays self-contained). Figures are made with
:class:`matplotlib.figure.Figure` on a :class:`~matplotlib.backends.backend_agg.FigureCanvasAgg`,
never through :mod:`matplotlib.pyplot`: no display, no global backend
switched, nothing left open. Text is drawn as paths (no font needed to view
it), and the SVG carries no date, so one file gives the same page twice.

It implements no SPEC clause: it draws what :mod:`h5ml.tools.report.collect` gathered.
"""

from __future__ import annotations

import base64
import io
import math
from collections.abc import Sequence
from typing import Final

import numpy as np
import numpy.typing as npt
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

__all__ = [
    "MAX_CLASSES_PLOTTED",
    "amplitude_range",
    "class_histogram",
    "classes_drawn",
    "duration",
    "figure_uri",
    "histogram_edges",
    "length_histogram",
    "value_histogram",
    "waveform",
    "waveform_figure",
]

#: Classes drawn in a class histogram; with more, the most frequent ones (the page says so).
MAX_CLASSES_PLOTTED: Final = 40
#: Bins of a length or value histogram.
_BINS: Final = 40
#: Points of a waveform thumbnail (the samples are reduced to a min/max envelope of this many bins).
_WAVE_POINTS: Final = 600
_COLOR: Final = "#3b6ea8"


def _figure(width: float, height: float) -> Figure:
    fig = Figure(figsize=(width, height), dpi=100, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _literal(fig: Figure) -> None:
    """Draw every text of ``fig`` as written: a ``$`` in a file's name is a dollar sign, never mathtext."""
    from matplotlib.text import Text

    for text in fig.findobj(Text):
        text.set_parse_math(False)


def figure_uri(fig: Figure) -> str:
    """The figure as a ``data:image/svg+xml;base64,...`` URI (text as paths, no date).

    Parameters
    ----------
    fig
        A figure of this module.

    Returns
    -------
    str
        The URI, for the ``src`` of an ``<img>``.
    """
    _literal(fig)
    buffer = io.BytesIO()
    import matplotlib

    with matplotlib.rc_context({"svg.fonttype": "path", "svg.hashsalt": "h5ml-report"}):
        fig.savefig(buffer, format="svg", metadata={"Date": None})
    return "data:image/svg+xml;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def classes_drawn(counts: Sequence[int]) -> list[int]:
    """The codes of the classes a class histogram draws: all, or the :data:`MAX_CLASSES_PLOTTED` most frequent.

    Parameters
    ----------
    counts
        The samples of each class, in class-code order.

    Returns
    -------
    list of int
        Class codes, increasing; with more classes than :data:`MAX_CLASSES_PLOTTED`, the most frequent
        (ties: the lower code).
    """
    if len(counts) <= MAX_CLASSES_PLOTTED:
        return list(range(len(counts)))
    return sorted(int(i) for i in np.argsort(-np.asarray(counts), kind="stable")[:MAX_CLASSES_PLOTTED])


def class_histogram(names: Sequence[str], counts: Sequence[int], title: str) -> str:
    """A bar chart of the samples of each class (horizontal bars, class names on the axis).

    Parameters
    ----------
    names, counts
        The class names (§6.5) and the samples of each, in class-code order.
    title
        The figure's title.

    Returns
    -------
    str
        An SVG data URI; at most :data:`MAX_CLASSES_PLOTTED` classes, the most frequent, in code order.
    """
    order = classes_drawn(counts)
    shown_names = [_short(names[i]) for i in order]
    shown_counts = [int(counts[i]) for i in order]
    fig = _figure(6.0, 0.9 + 0.22 * len(order))
    ax = fig.add_subplot()
    ax.barh(range(len(order)), shown_counts, color=_COLOR)
    ax.set_yticks(range(len(order)), shown_names, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("samples")
    ax.set_title(title, fontsize=10)
    return figure_uri(fig)


def _short(name: str, limit: int = 30) -> str:
    return name if len(name) <= limit else name[: limit - 1] + "\u2026"


def _display_scale(low: float, high: float) -> int:
    """The power of ten the axis of a histogram over ``low..high`` is drawn in: 0 for magnitudes matplotlib draws.

    Values beyond 1e100 (up to the largest float64, 1.8e308) or below 1e-100 (down to the subnormals) would
    overflow or underflow in the axis' own arithmetic; they are drawn divided by 10**exponent, the axis says so.
    """
    peak = max(abs(low), abs(high))
    if peak == 0 or 1e-100 <= peak <= 1e100:
        return 0
    return math.floor(math.log10(peak))


def _divided(values: npt.NDArray[np.float64], exponent: int) -> npt.NDArray[np.float64]:
    """``values / 10**exponent``, in two steps so that neither power of ten overflows or underflows to 0."""
    half = exponent // 2
    return values / 10.0**half / 10.0 ** (exponent - half)


def histogram_edges(values: npt.NDArray[np.float64], integer: bool = False) -> npt.NDArray[np.float64]:
    """The bin edges of a histogram of finite values: strictly increasing, finite, covering every value.

    Parameters
    ----------
    values
        Finite float64 values, at least one.
    integer
        The values are integers (lengths): one bin per integer when they span fewer than the bins.

    Returns
    -------
    numpy.ndarray
        :data:`_BINS` equal bins from the smallest to the largest value, computed as
        ``low * (1 - t) + high * t``, which cannot overflow whatever the range; one bin around them all when
        their range is zero or too narrow to be split in float64 (one value, or neighbouring floats).
    """
    low, high = float(values.min()), float(values.max())
    if integer and high - low < _BINS:  # one bar per length
        return np.arange(low - 0.5, high + 1.5)
    t = np.linspace(0.0, 1.0, _BINS + 1)
    edges = np.clip(low * (1.0 - t) + high * t, low, high)
    if np.unique(edges).size == edges.size:
        return edges
    margin = max(abs(low), abs(high)) * 2.0**-10 or 0.5
    widest = float(np.finfo(np.float64).max)
    return np.array([max(low - margin, -widest), min(high + margin, widest)])


def _histogram(values: npt.NDArray[np.float64], title: str, xlabel: str, integer: bool) -> str:
    fig = _figure(6.0, 2.4)
    ax = fig.add_subplot()
    values = np.asarray(values, dtype=np.float64)  # float16 or float32 too: edges and bins in float64
    values = values[np.isfinite(values)]
    if values.size:
        exponent = _display_scale(float(values.min()), float(values.max()))
        if exponent:
            values = _divided(values, exponent)
            xlabel += f" (\u00d7 1e{exponent})"
        ax.hist(values, bins=histogram_edges(values, integer and not exponent).tolist(), color=_COLOR)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("count")
    ax.set_title(title, fontsize=10)
    return figure_uri(fig)


def length_histogram(lengths: npt.NDArray[np.int64], title: str, unit: str) -> str:
    """A histogram of the per-sample lengths of a ragged or bytes feature.

    Parameters
    ----------
    lengths
        Every sample's length, int64.
    title
        The figure's title.
    unit
        What a length counts (``"values"``, ``"bytes"``, ``"frames"``), for the axis label.

    Returns
    -------
    str
        An SVG data URI.
    """
    return _histogram(np.asarray(lengths, dtype=np.float64), title, f"length ({unit})", integer=True)


def value_histogram(values: npt.NDArray[np.float64], title: str) -> str:
    """A histogram of sampled numeric values (the finite ones), whatever their magnitude.

    Parameters
    ----------
    values
        The values (:attr:`h5ml.tools.report.sample.ValueStats.values`), any float dtype; bins are computed in
        float64 (:func:`histogram_edges`), and values beyond 1e100 or below 1e-100 in magnitude are drawn on an
        axis in a power of ten, which its label names (``value (× 1e308)``).
    title
        The figure's title.

    Returns
    -------
    str
        An SVG data URI.
    """
    return _histogram(values, title, "value", integer=False)


def amplitude_range(dtype: str, low: float | None = None, high: float | None = None) -> tuple[float, float]:
    """The one amplitude axis every waveform of an audio-like feature is drawn on, so loudness and clipping show.

    Parameters
    ----------
    dtype
        The feature's logical dtype (``"float32"``, ``"int16"``, ...).
    low, high
        The feature's smallest and largest values (its stored statistics, §6.7, else the sampled rows'), or None.

    Returns
    -------
    (float, float)
        Integer audio: the dtype's range (int16: -32768..32767), full scale whatever the values. Float audio:
        -1..1 (full scale), widened to ``low``..``high`` where the values exceed it (the page's player then
        scales the clip to its peak); non-finite values are ignored.
    """
    kind = np.dtype(dtype).kind if dtype not in ("str", "bytes") else "f"
    if kind in "iu":
        info = np.iinfo(np.dtype(dtype))
        return float(info.min), float(info.max)
    bottom, top = -1.0, 1.0
    if low is not None and np.isfinite(low):
        bottom = min(bottom, float(low))
    if high is not None and np.isfinite(high):
        top = max(top, float(high))
    return bottom, top


def duration(frames: int, sample_rate: float) -> float | None:
    """The seconds ``frames`` last at ``sample_rate``, or None when the rate gives no time.

    Parameters
    ----------
    frames
        Frames of one sample (its length along the first axis).
    sample_rate
        The feature's ``sample_rate`` (Hz, §6.1), as stored: it may be 0, negative, NaN or infinite in a file
        the validator fails.

    Returns
    -------
    float or None
        ``frames / sample_rate``; None when the rate is not a positive finite number or the duration is not
        finite (a rate of 1e-320 Hz).
    """
    if not (math.isfinite(sample_rate) and sample_rate > 0):
        return None
    seconds = frames / sample_rate
    return seconds if math.isfinite(seconds) else None


def waveform_figure(samples: npt.NDArray[np.float64], sample_rate: float, limits: tuple[float, float]) -> Figure:
    """The waveform thumbnail's figure: the min/max envelope of the (mono-mixed) signal on a fixed amplitude axis.

    Parameters
    ----------
    samples
        One sample of an audio-like feature, float64 in its stored units, shape (frames,) or (frames,
        channels): channels are averaged.
    sample_rate
        Frames per second (Hz, the feature's ``sample_rate``, §6.1). When it gives no time (:func:`duration`:
        0, negative, NaN), the x axis counts frames instead of seconds, and says so.
    limits
        The amplitude axis (:func:`amplitude_range`), the same for every clip of the feature: a quiet clip
        looks quiet, a clipped one touches the edges. Ticks at both limits and 0, labelled.

    Returns
    -------
    matplotlib.figure.Figure
        One axes: x in seconds (or frames), y from ``limits[0]`` to ``limits[1]``.
    """
    mono = samples.mean(axis=1) if samples.ndim == 2 else samples.ravel()
    fig = _figure(3.2, 1.2)
    ax = fig.add_subplot()
    timed = duration(mono.size, sample_rate) is not None
    exponent = _display_scale(*limits)  # amplitudes near 1.8e308 are drawn in a power of ten, labelled as they are
    if mono.size:
        bins = min(_WAVE_POINTS, mono.size)
        edges = np.linspace(0, mono.size, bins + 1).astype(np.int64)
        low = _divided(np.minimum.reduceat(mono, edges[:-1]), exponent)
        high = _divided(np.maximum.reduceat(mono, edges[:-1]), exponent)
        t = edges[:-1] / sample_rate if timed else edges[:-1].astype(np.float64)
        ax.fill_between(t, low, high, color=_COLOR, linewidth=0.5)
        ax.set_xlim(0, mono.size / sample_rate if timed else mono.size)
    ticks = sorted({limits[0], 0.0, limits[1]})
    ax.set_ylim(*(float(v) for v in _divided(np.array(limits, dtype=np.float64), exponent)))
    ax.set_yticks(_divided(np.array(ticks), exponent).tolist(), [f"{t:g}" for t in ticks])
    ax.axhline(0.0, color="#999", linewidth=0.4)
    ax.tick_params(labelsize=7)
    ax.set_xlabel("s" if timed else "frames", fontsize=7, labelpad=0)
    return fig


def waveform(samples: npt.NDArray[np.float64], sample_rate: float, limits: tuple[float, float]) -> str:
    """A small waveform thumbnail (:func:`waveform_figure`) as an SVG data URI.

    Parameters
    ----------
    samples, sample_rate, limits
        As :func:`waveform_figure`.

    Returns
    -------
    str
        An SVG data URI.
    """
    return figure_uri(waveform_figure(samples, sample_rate, limits))
