"""How ``h5ml report`` turns an image feature's values into displayed pixels: exact, or scaled from one range.

A preview shows the stored pixels exactly when they are uint8 values that
use the display's range: a uint8 feature whose largest value is at least
:data:`UINT8_EXACT_FROM` (128, half of 0..255) is drawn unscaled, value v as
grey level v. Every other image-like feature is scaled linearly from one
range ``[low, high]`` to 0..255, ``round((v - low) * 255 / (high - low))``
(ties to even), and the page says so ("shown scaled from 0..16 to
0..255"):

- a uint8 feature whose values stay below 128, such as scikit-learn's digits
  (0..16), which drawn on 0..255 would look black;
- float, integer and boolean features of image shape (:func:`image_like`).

The range is the feature's, never one image's, so that the previews stay
comparable with each other: its stored statistics ``stats_min`` and
``stats_max`` (§6.7, over every value, merged over the shards of a sharded
dataset) when both are stored and finite; else the values of the bounded
sample of rows (:mod:`h5ml.tools.report.sample`) together with those of the
previews (so no preview is clipped); the page names which. A feature whose
values are all one value (``high == low``) is drawn black and the page says
so. Values that are not finite are drawn as NaN black, +inf white and -inf
black, and the page counts them.

It implements no SPEC clause; it reads the statistics of §6.7 and the samples the reader returned (§6).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

import numpy as np
import numpy.typing as npt

from h5ml.tools.report.sample import BLOCK_VALUES, value_blocks
from h5ml.tools.report.stored_stats import stored_range

if TYPE_CHECKING:  # pragma: no cover
    from h5ml.tools.report.sample import ValueStats

__all__ = ["MIN_IMAGE_SIDE", "UINT8_EXACT_FROM", "DisplayRange", "display_pixels", "display_range", "image_like"]

#: A uint8 feature whose largest value is at least this is drawn unscaled (its values are the grey levels).
UINT8_EXACT_FROM: Final = 128
#: The smallest height and width of a non-uint8 feature previewed as an image (a smaller one is a matrix).
MIN_IMAGE_SIDE: Final = 4


def image_like(encoding: str, dtype: str, sample_shape: tuple[int | None, ...]) -> bool:
    """Whether a feature's samples are previewed as images.

    Parameters
    ----------
    encoding, dtype
        The feature's encoding (§6.1) and logical dtype (``"uint8"``, ``"float32"``, ...).
    sample_shape
        The shape of one sample, None for a varying axis.

    Returns
    -------
    bool
        uint8 ``dense`` or ``ragged`` samples of shape (H, W) or (H, W, C) with C 1, 3 or 4; and ``dense``
        float, integer or boolean samples of those shapes with H and W at least :data:`MIN_IMAGE_SIDE`.
    """
    if encoding not in ("dense", "ragged") or len(sample_shape) not in (2, 3):
        return False
    if len(sample_shape) == 3 and sample_shape[2] not in (1, 3, 4):
        return False
    if dtype == "uint8":
        return True
    try:
        kind = np.dtype(dtype).kind
    except TypeError:
        return False
    sides = sample_shape[:2]
    return encoding == "dense" and kind in "biuf" and all(d is not None and d >= MIN_IMAGE_SIDE for d in sides)


@dataclass(frozen=True)
class DisplayRange:
    """The values drawn as black (``low``) and white (``high``) in a feature's image previews.

    Attributes
    ----------
    low, high
        The range; 0 and 255 for unscaled uint8.
    scaled
        Whether the pixels are scaled from it (False: uint8 drawn as stored).
    source
        Where the range comes from, in words (``"the feature's stored statistics (§6.7)"``); ``""`` unscaled.
    """

    low: float
    high: float
    scaled: bool
    source: str = ""

    def describe(self) -> str:
        """The range in words for the page; ``""`` when the pixels are drawn as stored."""
        if not self.scaled:
            return ""
        if self.high <= self.low:
            return f"shown black: every value is {self.low:.6g} ({self.source})"
        return f"shown scaled from {self.low:.6g}..{self.high:.6g} to 0..255 ({self.source})"


def _finite_range(values: Sequence[npt.NDArray[Any]]) -> tuple[float, float] | None:
    """The smallest and largest finite values, widened to float64 one block at a time (never a whole image)."""
    lows, highs = [], []
    for block in value_blocks([np.asarray(value) for value in values]):
        flat = block.astype(np.float64)
        flat = flat[np.isfinite(flat)]
        if flat.size:
            lows.append(float(flat.min()))
            highs.append(float(flat.max()))
    return (min(lows), max(highs)) if lows else None


def display_range(
    dtype: str, stored: Mapping[str, Any], sampled: ValueStats | None, previews: Sequence[npt.NDArray[Any]]
) -> DisplayRange:
    """The range a feature's image previews are drawn from (see the module docstring).

    Parameters
    ----------
    dtype
        The feature's logical dtype.
    stored
        Its stored statistics (:attr:`h5ml.tools.summary.FeatureSummary.stats`, ``stats_min`` ...).
    sampled
        The figures of the bounded sample of rows, or None.
    previews
        The previewed samples.

    Returns
    -------
    DisplayRange
        Unscaled 0..255 for uint8 values reaching :data:`UINT8_EXACT_FROM`; else the scaled range.
    """
    found = stored_range(stored)
    if found is not None:
        source = "one range for the whole feature: its stored statistics, §6.7"
    else:
        parts = list(previews)
        if sampled is not None and sampled.minimum is not None and sampled.maximum is not None:
            parts.append(np.array([sampled.minimum, sampled.maximum]))
        found = _finite_range(parts)
        source = "one range for the whole feature: the values of the sampled rows and of these previews"
    if found is None:  # no finite value at all: nothing to scale from
        return DisplayRange(0.0, 0.0, True, "no finite value")
    if dtype == "uint8" and found[1] >= UINT8_EXACT_FROM:
        return DisplayRange(0.0, 255.0, False)
    return DisplayRange(found[0], found[1], True, source)


def display_pixels(sample: npt.NDArray[Any], shown: DisplayRange) -> tuple[npt.NDArray[np.uint8], int]:
    """One sample as the uint8 pixels drawn.

    Parameters
    ----------
    sample
        The image as the reader returned it, (H, W) or (H, W, C).
    shown
        The feature's :class:`DisplayRange`.

    Returns
    -------
    (numpy.ndarray, int)
        The pixels, uint8 of the sample's shape: the stored values when ``shown`` is unscaled, else
        ``round((v - low) * 255 / (high - low))`` clipped to 0..255 (0 when ``high == low``); and how many
        values were not finite (drawn NaN and -inf black, +inf white).
    """
    image = np.asarray(sample)
    if not shown.scaled:
        return np.ascontiguousarray(image, dtype=np.uint8), 0
    # Band by band of rows: what is widened to float64 at a time is about BLOCK_VALUES values, not the image
    # (a 3000 x 5000 x 3 image would be 360 MB of float64 per temporary); the pixels are the same.
    pixels = np.empty(image.shape, dtype=np.uint8)
    row_values = max(1, int(np.prod(image.shape[1:], dtype=np.int64)))
    band = max(1, BLOCK_VALUES // row_values)
    bad = 0
    for start in range(0, image.shape[0], band):
        pixels[start : start + band], count = _scaled_pixels(image[start : start + band], shown)
        bad += count
    return pixels, bad


def _scaled_pixels(values: npt.NDArray[Any], shown: DisplayRange) -> tuple[npt.NDArray[np.uint8], int]:
    """``round((v - low) * 255 / (high - low))`` clipped to 0..255 (see :func:`display_pixels`), and the count of
    values that are not finite."""
    values = values.astype(np.float64)
    bad = ~np.isfinite(values)
    # Scaled by a power of two that brings the range within +-1: exact, so the pixels are those of the formula,
    # and no difference overflows (-1.7e308..1.7e308 spans twice the largest float64). A value far outside the
    # range may still overflow to +-inf, which the clip below makes white or black, as it is.
    exponent = max(math.frexp(shown.low)[1], math.frexp(shown.high)[1])
    low, high = math.ldexp(shown.low, -exponent), math.ldexp(shown.high, -exponent)
    with np.errstate(over="ignore", invalid="ignore"):
        scaled = (np.ldexp(values, -exponent) - low) * 255 / (high - low) if high > low else np.zeros_like(values)
    scaled = np.where(np.isposinf(values), 255.0, np.where(bad, 0.0, scaled))
    return np.rint(np.clip(scaled, 0, 255)).astype(np.uint8), int(np.count_nonzero(bad))
