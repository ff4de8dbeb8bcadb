"""Streaming statistics of a numeric feature (§6.7): :class:`StreamingStats`.

The writer records ``stats_count``, ``stats_min``, ``stats_max``,
``stats_mean`` and ``stats_std`` on every numeric dense and ragged feature. They
summarise all values of the feature (every element of every sample), NaN
excluded, and are computed batch by batch as samples arrive, so a feature never
has to be held in memory whole.
"""

from __future__ import annotations

import math
from typing import Final

import numpy as np

__all__ = ["HISTOGRAM_BLOCK", "STATS_BLOCK", "StreamingStats"]

#: Values turned into float64 at a time (bounds the temporary copy to 32 MiB).
STATS_BLOCK: Final = 1 << 22
#: One-byte values counted at a time by the histogram (``bincount`` copies them to intp).
HISTOGRAM_BLOCK: Final = 1 << 18


class StreamingStats:
    """count, min, max, mean and population std over all values seen, NaN excluded (§6.7).

    Feed batches with :meth:`update` in any number and size; :meth:`attrs`
    gives the attributes to write. Batches merge with Chan, Golub and
    LeVeque's pairwise update of (count, mean, M2) in float64, so the result
    does not depend on how the values were cut into batches (up to rounding).
    One-byte values (bool, int8, uint8) are counted in a 256-bin histogram,
    which is exact.

    Infinite values count: min/max may be infinite; a mean or std that comes
    out NaN (for example with both infinities) is left out of :meth:`attrs`.

    Attributes
    ----------
    count
        Values seen, NaN excluded.
    mean
        Their mean (float64 arithmetic).
    m2
        Their sum of squared deviations from the mean.
    min, max
        Their extremes (``inf`` and ``-inf`` before any value).
    """

    def __init__(self) -> None:
        self.count = 0
        self.mean = 0.0
        self.m2 = 0.0
        self.min = math.inf
        self.max = -math.inf

    def update(self, values: np.ndarray) -> None:
        """Add every element of ``values`` (any shape; a numeric or bool dtype) to the statistics.

        NaN elements are skipped. Nothing is raised: infinities and overflow
        to infinity produce infinite or NaN statistics instead of warnings.
        """
        flat = values.reshape(-1)
        if flat.dtype.kind in "biu" and flat.dtype.itemsize == 1:
            self._update_bytes(flat)
            return
        for start in range(0, flat.size, STATS_BLOCK):
            x = flat[start : start + STATS_BLOCK]
            if x.dtype.kind == "f":
                x = x[~np.isnan(x)]
            if not x.size:
                continue
            xf = x.astype(np.float64)
            with np.errstate(invalid="ignore", over="ignore"):  # infinities make mean/std inf or NaN
                mean_b = float(xf.mean())
                xf -= mean_b
                self._merge(int(xf.size), mean_b, float(np.dot(xf, xf)), float(x.min()), float(x.max()))

    def _update_bytes(self, flat: np.ndarray) -> None:
        """One-byte values (bool, int8, uint8, e.g. images): exact, from a 256-bin histogram."""
        raw = flat.view(np.uint8)
        counts = np.zeros(256, dtype=np.float64)
        for start in range(0, raw.size, HISTOGRAM_BLOCK):  # bincount copies to intp: keep the copy in cache
            counts += np.bincount(raw[start : start + HISTOGRAM_BLOCK], minlength=256)
        n_b = int(counts.sum())
        if not n_b:
            return
        levels = np.arange(256, dtype=np.uint8)
        levels_f = (levels.view(np.int8) if flat.dtype.kind == "i" else levels).astype(np.float64)
        present = levels_f[counts > 0]
        mean_b = float(np.dot(counts, levels_f)) / n_b
        m2_b = float(np.dot(counts, np.square(levels_f - mean_b)))
        self._merge(n_b, mean_b, m2_b, float(present.min()), float(present.max()))

    def _merge(self, n_b: int, mean_b: float, m2_b: float, lo: float, hi: float) -> None:
        """Chan et al.'s update of (count, mean, M2) with a batch's, plus min and max."""
        n = self.count + n_b
        delta = mean_b - self.mean  # Python floats: infinities give inf or NaN without warnings
        self.mean += delta * n_b / n
        self.m2 += m2_b + delta * delta * self.count * n_b / n
        self.count = n
        self.min = min(self.min, lo)
        self.max = max(self.max, hi)

    def attrs(self) -> dict[str, int | float]:
        """The §6.7 attributes: ``stats_count`` always; min, max, mean, std once a value was seen.

        Returns
        -------
        dict
            ``{"stats_count": int, "stats_min": float, "stats_max": float,
            "stats_mean": float, "stats_std": float}``; a statistic that is
            NaN is left out (NaN has no JSON form, §4.6).
        """
        out: dict[str, int | float] = {"stats_count": self.count}
        if self.count:
            candidates = {
                "stats_min": self.min,
                "stats_max": self.max,
                "stats_mean": self.mean,
                "stats_std": math.sqrt(self.m2 / self.count) if self.m2 >= 0 else math.nan,  # NaN m2 fails >= 0
            }
            out.update({k: v for k, v in candidates.items() if not math.isnan(v)})  # NaN has no JSON form (§4.6)
        return out
