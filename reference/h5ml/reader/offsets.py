"""What ``ragged`` and ``bytes`` share: ``values`` sliced by ``offsets`` (§6.3, §6.6, §10.4).

Sample i is ``values[offsets[i]:offsets[i + 1]]``. :class:`OffsetFeature`
reads the offsets (kept in memory when smaller than
:data:`OFFSETS_CACHE_BYTES`), checks that each range lies inside ``values``
and does not decrease (§6.3), and reads the values each request needs: one
read per span of ``values``, each span the union of the rows' ranges
(:func:`h5ml.reader.plan.merge_ranges`). :meth:`OffsetFeature.lengths` reads
the offsets only.
"""

from __future__ import annotations

import itertools
from typing import Any, ClassVar, Final

import numpy as np
import numpy.typing as npt

from h5ml.errors import H5MLError
from h5ml.model.failures import LIBRARY_ERRORS, is_library_failure
from h5ml.reader.feature import Feature
from h5ml.reader.plan import Indices, ReadPlan, check_index, merge_ranges, plan_reads

__all__ = ["OFFSETS_CACHE_BYTES", "OffsetFeature"]

#: Ragged/bytes ``offsets`` smaller than this (8 bytes per sample: 8M samples)
#: are read whole once and kept in memory; larger ones are read per request.
OFFSETS_CACHE_BYTES: Final = 64 << 20


class OffsetFeature(Feature):
    """Shared logic of ``ragged`` and ``bytes``: ``values`` sliced by ``offsets`` (§6.3, §6.6)."""

    _members: ClassVar[tuple[str, ...]] = ("values", "offsets")
    _main_member: ClassVar[str] = "values"

    def _reset(self) -> None:
        super()._reset()
        self._offsets: npt.NDArray[np.int64] | None = None

    @property
    def num_samples(self) -> int:
        """The number of samples: ``len(offsets) - 1`` (§6.3)."""
        return max(0, int(self._node("offsets").shape[0]) - 1)

    def _count(self) -> int:
        return max(0, self._column("offsets").rows - 1)

    def _all_offsets(self) -> npt.NDArray[np.int64]:
        if self._offsets is not None:
            return self._offsets
        column = self._column("offsets")
        out = column.read(0, column.rows)
        if out.nbytes < OFFSETS_CACHE_BYTES:
            self._offsets = out
        return out

    def _cached_offsets(self) -> npt.NDArray[np.int64] | None:
        """All offsets when they are (or may be) kept in memory, else None (read them per request)."""
        if self._offsets is None and self._column("offsets").rows * 8 < OFFSETS_CACHE_BYTES:
            self._all_offsets()
        return self._offsets

    def _check_ranges(
        self, rows: npt.NDArray[np.int64], starts: npt.NDArray[np.int64], stops: npt.NDArray[np.int64]
    ) -> None:
        """Refuse value ranges outside ``values`` or decreasing (§6.3)."""
        total = self._column("values").rows
        bad = (starts < 0) | (stops < starts) | (stops > total)
        if bad.any():
            k = int(np.argmax(bad))
            raise self._invalid(
                f"offsets of sample {int(rows[k])} give the range [{int(starts[k])}, {int(stops[k])}), outside the "
                f"{total} values or decreasing (§6.3)",
                "offsets",
            )

    def _bounds(self, row: int) -> tuple[int, int]:
        """The value range ``[start, stop)`` of one sample, checked (§6.3)."""
        offsets = self._cached_offsets()
        pair = offsets[row : row + 2] if offsets is not None else self._column("offsets").read(row, row + 2)
        start, stop = int(pair[0]), int(pair[1])
        if start < 0 or stop < start or stop > self._column("values").rows:
            self._check_ranges(np.array([row]), pair[:1], pair[1:])
        return start, stop

    def _ranges(self, rows: npt.NDArray[np.int64]) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """Return the value ranges ``[starts, stops)`` of the sorted unique ``rows``."""
        offsets = self._cached_offsets()
        if offsets is not None:
            starts, stops = offsets[rows], offsets[rows + 1]
        else:
            column = self._column("offsets")
            plan = column.plan(np.concatenate([rows, rows + 1]))
            values = plan.gather(column.read_rows(plan))
            starts, stops = values[: rows.shape[0]], values[rows.shape[0] :]
        self._check_ranges(rows, starts, stops)
        return starts, stops

    def _range_segments(
        self, start: int, stop: int, as_bool: bool = False, copy: bool = True
    ) -> list[npt.NDArray[Any]]:
        """The values of samples ``[start, stop)``: one read of ``offsets`` (unless cached) and one of ``values``.

        One array per sample, copies unless ``copy`` is false (views of one buffer).
        """
        if stop <= start:
            return []
        offsets = self._cached_offsets()
        bounds = offsets[start : stop + 1] if offsets is not None else self._column("offsets").read(start, stop + 1)
        self._check_ranges(np.arange(start, stop, dtype=np.int64), bounds[:-1], bounds[1:])
        first = int(bounds[0])
        buf = self._column("values").read(first, int(bounds[-1]))
        if as_bool:
            buf = self._booleans(buf)
        cuts = (bounds - first).tolist()
        if copy:
            return [buf[a:b].copy() for a, b in itertools.pairwise(cuts)]
        return [buf[a:b] for a, b in itertools.pairwise(cuts)]

    def _segments(
        self, rows: npt.NDArray[np.int64], as_bool: bool = False, copy: bool = True
    ) -> tuple[list[npt.NDArray[Any]], npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """Read the values of the sorted unique ``rows``: one array per row (copies unless ``copy`` is false).

        Each span of ``values`` is read once; every row's range lies inside one
        span (spans are unions of the rows' ranges, widened to whole chunks when
        the values are compressed and a chunk does not fit the chunk cache).
        """
        values = self._column("values")
        starts, stops = self._ranges(rows)
        spans = merge_ranges(
            starts,
            stops,
            total=values.rows,
            chunk_rows=values.chunk_rows,
            compressed=values.whole_chunks,
            max_gap=values.max_gap,
        )
        empty = np.empty((0, *values.inner), dtype=bool if as_bool else values.dtype)
        out: list[npt.NDArray[Any]] = [empty] * rows.shape[0]
        needed = np.flatnonzero(stops > starts)
        if spans:
            span_starts = np.asarray([a for a, _ in spans], dtype=np.int64)
            owner = np.searchsorted(span_starts, starts[needed], side="right") - 1
            order = np.argsort(owner, kind="stable")
            needed, owner = needed[order], owner[order]
            cuts = np.searchsorted(owner, np.arange(len(spans) + 1))
            for k, (a, b) in enumerate(spans):
                buf = values.read(a, b)
                if as_bool:
                    buf = self._booleans(buf)
                for j in needed[cuts[k] : cuts[k + 1]].tolist():
                    piece = buf[int(starts[j]) - a : int(stops[j]) - a]
                    out[j] = piece.copy() if copy else piece
        return out, starts, stops

    def lengths(self, indices: Indices | None = None) -> Any:
        """Return sample lengths from ``offsets`` only (no values are read) (§6.3).

        Parameters
        ----------
        indices
            Samples to report (see :meth:`read`); None for every sample.

        Returns
        -------
        numpy.ndarray of int64, shape (R,), or int
            ``offsets[i + 1] - offsets[i]``: the number of rows of ``values`` of
            each sample (its first-axis length; its element count when the
            feature has ``shapes``; its byte count for bytes features).

        Raises
        ------
        IndexError, TypeError
            As :meth:`read`.
        InvalidFileError
            If offsets decrease or point outside ``values`` (§6.3), or the
            HDF5 library fails to read them.
        """
        try:
            if indices is None:
                offsets = self._all_offsets()
                self._check_ranges(np.arange(offsets.shape[0] - 1, dtype=np.int64), offsets[:-1], offsets[1:])
                return np.diff(offsets)
            if isinstance(indices, (int, np.integer)) and not isinstance(indices, bool):
                start, stop = self._bounds(check_index(indices, self._count()))
                return stop - start
            plan = plan_reads(indices, self._count())
            starts, stops = self._ranges(plan.rows)
            result = plan.gather(stops - starts)
            return int(result) if plan.scalar else result
        except H5MLError:
            raise
        except LIBRARY_ERRORS as exc:
            if not is_library_failure(exc):
                raise
            raise self._damaged(exc) from exc

    @staticmethod
    def _finish(plan: ReadPlan, unique: list[Any], copy: bool) -> Any:
        """Request order; duplicates get their own copy so results never alias each other."""
        result = plan.gather(unique)
        if plan.scalar or not isinstance(result, list) or not copy:
            return result
        seen: set[int] = set()
        for pos, j in enumerate(plan.inverse.tolist()):
            if j in seen:
                result[pos] = result[pos].copy()
            seen.add(j)
        return result
