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

__all__ = ["HUGE", "INT_SUM_BLOCK", "SCALE_EXPONENT", "STATS_BLOCK", "StreamingStats"]

#: Values turned into float64 at a time (bounds the temporary copy to 32 MiB).
STATS_BLOCK: Final = 1 << 22
#: Above this magnitude (2**400) a block's values are scaled by 2**-SCALE_EXPONENT before their moments are
#: taken: their sum and squares would overflow float64 (values near 1.7e308 gave a stats_mean of -inf).
HUGE: Final = 2.0**400  # (2 * 2**400)**2 * 2**63 values stay below the float64 limit
#: The power of two the moments of huge values are scaled down by (exact: a power of two).
SCALE_EXPONENT: Final = 600
#: Small integers squared at a time in an integer type twice as wide (bounds the
#: temporary copy to 256 KiB, which stays in the CPU cache).
INT_SUM_BLOCK: Final = 1 << 16


class StreamingStats:
    """count, min, max, mean and population std over all values seen, NaN excluded (§6.7).

    Feed batches with :meth:`update` in any number and size; :meth:`attrs`
    gives the attributes to write. Batches merge with Chan, Golub and
    LeVeque's pairwise update of (count, mean, M2) in float64, so the result
    does not depend on how the values were cut into batches (up to rounding).
    Once a value above :data:`HUGE` in magnitude is seen, the moments are kept
    scaled by ``2**-SCALE_EXPONENT`` (an exact power of two), so finite values
    up to the float64 limit never overflow the mean or std to infinity.
    Integers of one or two bytes (bool, int8, uint8, int16, uint16: images,
    audio) are summed exactly in integers (values and squares), so the count,
    mean and M2 of each batch are exact up to one final rounding.

    Infinite values count but are kept apart from the running moments, so the
    result does not depend on batch order: min/max may be infinite; the mean is
    +inf or -inf when only infinities of one sign were seen; a mean with both
    infinities, and the std of any values holding an infinity, are undefined
    and left out of :meth:`attrs` (§6.7).

    Attributes
    ----------
    count
        Values seen, NaN excluded (infinities included).
    mean
        The mean of the finite values (float64 arithmetic).
    m2
        The finite values' sum of squared deviations from their mean, times ``scale**2``.
    scale
        1.0, or ``2**-SCALE_EXPONENT`` once a huge value was seen (the unit of ``m2``).
    pos_inf, neg_inf
        How many +inf and -inf values were seen.
    min, max
        Their extremes (``inf`` and ``-inf`` before any value).
    """

    def __init__(self) -> None:
        self.count = 0
        self.pos_inf = 0
        self.neg_inf = 0
        self.mean = 0.0
        self.m2 = 0.0
        self.scale = 1.0
        self.min = math.inf
        self.max = -math.inf

    def update(self, values: np.ndarray) -> None:
        """Add every element of ``values`` (any shape; a numeric or bool dtype) to the statistics.

        NaN elements are skipped. Nothing is raised: infinities and overflow
        to infinity produce infinite or NaN statistics instead of warnings.
        """
        flat = values.reshape(-1)
        if flat.dtype.kind in "biu" and flat.dtype.itemsize <= 2:
            self._update_small_ints(flat)
            return
        # One float64 buffer for every block: a fresh 32 MiB array per block cost its page faults each time.
        buf = np.empty(min(flat.size, STATS_BLOCK), dtype=np.float64)
        for start in range(0, flat.size, STATS_BLOCK):
            x = flat[start : start + STATS_BLOCK]
            if not x.size:
                continue
            with np.errstate(invalid="ignore"):
                lo, hi = float(x.min()), float(x.max())
            if x.dtype.kind == "f":
                # Masks are taken only when a NaN or an infinity is there (min and max are NaN when a NaN
                # is): compacting a block that has none (the usual case) cost more than the rest of the
                # update (issue 15: 1.4 s of 1.6 s for 240 MB of float32 audio). The values and their
                # order are the same either way, so are the results.
                if math.isnan(lo) or math.isnan(hi):
                    x = x[~np.isnan(x)]
                    if not x.size:
                        continue
                    lo, hi = float(x.min()), float(x.max())
                if lo == -math.inf or hi == math.inf:
                    pos, neg = int(np.count_nonzero(x == math.inf)), int(np.count_nonzero(x == -math.inf))
                    self.pos_inf += pos
                    self.neg_inf += neg
                    self.count += pos + neg
                    self.min, self.max = min(self.min, lo), max(self.max, hi)
                    x = x[np.isfinite(x)]
                    if not x.size:
                        continue
                    lo, hi = float(x.min()), float(x.max())
            xf = buf[: x.size]
            np.copyto(xf, x)
            if self.scale == 1.0 and max(abs(lo), abs(hi)) > HUGE:
                self.scale = 2.0**-SCALE_EXPONENT  # from now on m2 is in scaled units (exact powers of two)
                self.m2 = self.m2 * self.scale * self.scale
            if self.scale != 1.0:
                xf *= self.scale
            if max(abs(lo), abs(hi)) > HUGE:
                # Values this large beside small ones lose the small ones in a float sum (numpy's pairwise sum
                # of [1.7e308, -1.7e308, 1, 1, ...] drops ones): such rare blocks are summed exactly (fsum).
                mean_b = math.fsum(xf) / xf.size
                xf -= mean_b
                np.multiply(xf, xf, out=xf)
                m2_b = math.fsum(xf)
            else:
                mean_b = float(xf.mean())  # scaled: |x| <= 2**424, so neither the sum nor the squares overflow
                xf -= mean_b
                m2_b = float(np.dot(xf, xf))
            self._merge(int(xf.size), mean_b / self.scale, m2_b, lo, hi)

    def _update_small_ints(self, flat: np.ndarray) -> None:
        """Integers of one or two bytes (bool, int8, uint8, int16, uint16): exact integer sums.

        Each block is copied to an integer type twice as wide (bool as
        uint8 into uint16, int8 into int16, int16 into int32, ...), in which
        every square fits: ``255**2 < 2**16``, ``(-128)**2 < 2**15``,
        ``(-32768)**2 = 2**30 < 2**31``, ``65535**2 < 2**32``. Each block's sums
        are taken in 32-bit (one-byte values) or 64-bit integers, which cannot
        overflow for a block of :data:`INT_SUM_BLOCK` values, then added up in
        Python integers, so ``sum(x)`` and
        ``sum(x**2)`` are exact; the batch's mean and M2
        (``(n * sum(x**2) - sum(x)**2) / n``) are each rounded once to float64.
        """
        n_b = int(flat.size)
        if not n_b:
            return
        if flat.dtype.kind == "b":
            flat = flat.view(np.uint8)
        unsigned = flat.dtype.kind == "u"
        wide = np.dtype(f"{'u' if unsigned else 'i'}{2 * flat.dtype.itemsize}")
        # Per block of 2**16 values, one-byte values and their squares sum exactly in 32 bits
        # (2**16 * 255**2 < 2**32, 2**16 * 128 < 2**31); two-byte ones need 64.
        bits = 4 if flat.dtype.itemsize == 1 else 8
        acc1, acc2 = np.dtype(f"{'u' if unsigned else 'i'}{bits}"), np.dtype(f"u{bits}")  # squares are >= 0
        s1 = 0
        s2 = 0
        buf = np.empty(min(n_b, INT_SUM_BLOCK), dtype=wide)
        for start in range(0, n_b, INT_SUM_BLOCK):
            block = flat[start : start + INT_SUM_BLOCK]
            sq = buf[: block.size]
            np.copyto(sq, block)
            s1 += int(sq.sum(dtype=acc1))
            np.multiply(sq, sq, out=sq)
            s2 += int(sq.sum(dtype=acc2))
        mean_b = s1 / n_b  # int / int: correctly rounded
        m2_b = (n_b * s2 - s1 * s1) / n_b * self.scale * self.scale  # exact numerator, one rounding; m2's unit
        self._merge(n_b, mean_b, m2_b, float(flat.min()), float(flat.max()))

    def _merge(self, n_b: int, mean_b: float, m2_b: float, lo: float, hi: float) -> None:
        """Chan et al.'s update of (count, mean, M2) with a batch's (``m2_b`` in units of ``scale**2``)."""
        n_a = self.count - self.pos_inf - self.neg_inf  # finite values merged so far
        n = n_a + n_b
        s = self.scale
        delta = mean_b * s - self.mean * s  # scaled: the difference of two huge means does not overflow
        self.mean = (self.mean * s + delta * n_b / n) / s  # between the two means: finite
        self.m2 += m2_b + delta * delta * n_a * n_b / n
        self.count += n_b
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
            if self.pos_inf and self.neg_inf:
                mean, std = math.nan, math.nan
            elif self.pos_inf or self.neg_inf:
                mean, std = (math.inf if self.pos_inf else -math.inf), math.nan
            else:
                mean = self.mean
                std = math.sqrt(self.m2 / self.count) / self.scale if self.m2 >= 0 else math.nan
            candidates = {"stats_min": self.min, "stats_max": self.max, "stats_mean": mean, "stats_std": std}
            out.update({k: v for k, v in candidates.items() if not math.isnan(v)})  # NaN has no JSON form (§4.6)
        return out
