"""What ``ragged`` and ``bytes`` share: ``values`` sliced by ``offsets`` (§6.3, §6.6, §10.4).

Sample i is ``values[offsets[i]:offsets[i + 1]]``. :class:`OffsetFeature`
reads the offsets (kept in memory when smaller than
:data:`OFFSETS_CACHE_BYTES`), checks that each range lies inside ``values``
and does not decrease (§6.3), and reads the values each request needs: one
read per span of ``values``, each span the union of the rows' ranges
(:func:`h5ml.reader.plan.merge_ranges`). :meth:`OffsetFeature.lengths` reads
the offsets only.

The samples of a batch are views into a buffer (no copy per sample), marked
read-only (``flags.writeable = False``) because several samples share that
buffer: an edit in place of one could change another. An unfiltered
``values`` dataset is copied straight out of the file's memory map into one
buffer for the whole batch (one copy per span,
:meth:`h5ml.reader.direct.DirectRows.copy_spans`); other data is read into
one buffer per span (:meth:`h5ml.reader.column.Column.read`);
the buffer is never the map itself, so that a file truncated while a sample is
held cannot crash the process (§10.3), and the map can be closed. With
``h5ml.open(..., zero_copy=True)`` a span whose values are native, aligned and
contiguous in the file is a view of the map itself instead
(:meth:`h5ml.reader.column.Column.read_shared`; what that trades:
:mod:`h5ml.reader.direct`).

:func:`sample_chunk_rows` gives the samples per chunk that ``"chunk"`` shuffle
takes for a feature (§7.1): for ragged and bytes features, the number of
samples whose values fill about one chunk of ``values``.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any, ClassVar, Final

import numpy as np
import numpy.typing as npt

from h5ml.errors import H5MLError
from h5ml.model.failures import LIBRARY_ERRORS, is_library_failure
from h5ml.reader.column import Column
from h5ml.reader.column_checks import TRUSTED_READ_BYTES
from h5ml.reader.feature import Feature
from h5ml.reader.plan import Indices, check_index, merge_ranges, plan_reads

__all__ = ["OFFSETS_CACHE_BYTES", "OffsetFeature", "sample_chunk_rows"]

#: Ragged/bytes ``offsets`` smaller than this (8 bytes per sample: 8M samples)
#: are read whole once and kept in memory; larger ones are read per request.
OFFSETS_CACHE_BYTES: Final = 64 << 20
#: Values copied out of the memory map: a gap of at most this many bytes between two samples' values is copied
#: with them rather than starting a new span. A span out of the map costs a few microseconds of calls (a buffer,
#: the file-size check, the copy), about what copying 4 KiB costs, while the HDF5 path pays tens of microseconds
#: per call and merges gaps up to the column's ``max_gap`` (64 KiB); a larger gap copied through would cost more
#: than the span it saves, and keep unrequested values alive with the batch.
_MAP_GAP_BYTES: Final = 4 << 10


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

    def _range_segments(self, start: int, stop: int, as_bool: bool = False) -> list[npt.NDArray[Any]]:
        """The values of samples ``[start, stop)``: one read of ``offsets`` (unless cached) and one of ``values``.

        One array per sample: read-only views of one buffer (the span of the
        samples' values, read with one call).
        """
        if stop <= start:
            return []
        offsets = self._cached_offsets()
        bounds = offsets[start : stop + 1] if offsets is not None else self._column("offsets").read(start, stop + 1)
        self._check_ranges(np.arange(start, stop, dtype=np.int64), bounds[:-1], bounds[1:])
        first = int(bounds[0])
        buf = _shared(self._column("values").read_shared(first, int(bounds[-1])), as_bool, self)
        cuts = (bounds - first).tolist()
        return [buf[a:b] for a, b in itertools.pairwise(cuts)]

    def _segments(
        self, rows: npt.NDArray[np.int64], as_bool: bool = False
    ) -> tuple[list[npt.NDArray[Any]], npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """Read the values of the sorted unique ``rows``: one read-only view per row into its span's buffer.

        Each span of ``values`` is read once, into one buffer; every row's
        range lies inside one span (spans are unions of the rows' ranges, with
        gaps of at most ``max_gap`` rows merged, or of :data:`_MAP_GAP_BYTES`
        when the values are copied out of the memory map (not when they are
        views of it, ``zero_copy=True``: a gap costs nothing there), widened to whole
        chunks when the values are compressed and a chunk does not fit the
        chunk cache).
        An empty sample is a read-only empty array of its own.
        """
        values = self._column("values")
        starts, stops = self._ranges(rows)
        fast = values.fast_rows()
        mapped = fast is not None and not fast.file_map.zero_copy  # views (zero_copy) cost nothing per gap byte
        spans = merge_ranges(
            starts,
            stops,
            total=values.rows,
            chunk_rows=values.chunk_rows,
            compressed=values.whole_chunks,
            max_gap=min(values.max_gap, _MAP_GAP_BYTES // max(1, values.row_nbytes)) if mapped else values.max_gap,
        )
        empty = np.empty((0, *values.inner), dtype=bool if as_bool else values.dtype)
        empty.flags.writeable = False
        out: list[npt.NDArray[Any]] = [empty] * rows.shape[0]
        needed = np.flatnonzero(stops > starts)
        if spans:
            span_starts = np.asarray([a for a, _ in spans], dtype=np.int64)
            owner = np.searchsorted(span_starts, starts[needed], side="right") - 1
            order = np.argsort(owner, kind="stable")
            needed, owner = needed[order], owner[order]
            cuts = np.searchsorted(owner, np.arange(len(spans) + 1))
            begins, ends = starts.tolist(), stops.tolist()
            _decode_ahead(values, spans)
            bufs: Sequence[npt.NDArray[Any] | None] | None
            bufs = _copied_spans(values, spans) if mapped else _viewed_spans(values, spans)
            for k, (a, b) in enumerate(spans):
                got = None if bufs is None else bufs[k]
                buf = _shared(values.read_shared(a, b) if got is None else got, as_bool, self)
                for j in needed[cuts[k] : cuts[k + 1]].tolist():
                    out[j] = buf[begins[j] - a : ends[j] - a]
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


def _copied_spans(values: Column, spans: list[tuple[int, int]]) -> list[npt.NDArray[Any]] | None:
    """The spans of a batch copied out of the memory map of ``values`` into one buffer, or None: one read each.

    Spans are sorted and within the dataset (:func:`~h5ml.reader.plan.merge_ranges`). The checks are those of a
    read of each span (:meth:`Column.read_shared`): storage written (§3.5.1) once before the first read, the file
    still holding the rows (§10.3). With ``verify=True``, or a span over the size a read checks first (§10.4),
    each span is read on its own instead.
    """
    fast = values.fast_rows()
    if fast is None or values.verifier is not None:
        return None
    if max(b - a for a, b in spans) * values.check_row_nbytes > TRUSTED_READ_BYTES:
        return None
    values.check_written()
    return fast.copy_spans(spans)


def _viewed_spans(values: Column, spans: list[tuple[int, int]]) -> list[npt.NDArray[Any] | None] | None:
    """The spans of a batch as views of the memory map of ``values`` (``zero_copy=True``), or None: one read each.

    The checks are those of :meth:`Column.read_shared` on each span: storage written (§3.5.1) once before the
    first read, the file still holding the rows (§10.3); with ``verify=True`` each span is read on its own, so
    that its chunks' checksums are checked first (§8.4). A span the map cannot give as a view is None (read on
    its own).
    """
    fast = values.fast_rows()
    if fast is None or not fast.file_map.zero_copy or values.verifier is not None:
        return None
    values.check_written()
    return fast.view_spans(spans)


def _decode_ahead(values: Column, spans: list[tuple[int, int]]) -> None:
    """Start decoding, in the pool, every compressed chunk of ``values`` that the spans of a batch touch (§7.3).

    The spans are then read one after the other; without this, each waited for its own chunks to be decoded
    in the caller's thread, so a shuffled batch of ragged samples on gzip data decoded one chunk at a time
    (about a fifth of the speed of sequential reads, which decode ahead). Chunks already cached or being
    decoded are not started again.
    """
    decoded = values.decoded_rows() if len(spans) > 1 else None
    if decoded is None:
        return
    per = decoded.chunk_rows
    chunks = sorted({k for a, b in spans for k in range(a // per, (b - 1) // per + 1)})
    decoded.prefetch_chunks(chunks)


def _shared(buf: npt.NDArray[Any], as_bool: bool, feature: Feature) -> npt.NDArray[Any]:
    """A span's buffer, as booleans when ``as_bool`` (§3.3), made read-only: the samples' views share it."""
    if as_bool:
        buf = feature._booleans(buf)
    if buf.flags.writeable:  # a view of the memory map (zero_copy=True) is read-only already
        buf.flags.writeable = False
    return buf


def sample_chunk_rows(feature: Feature) -> int | None:
    """Samples per chunk of ``feature`` for ``"chunk"`` shuffle (§7.1); None when its data is not chunked.

    For a dense, categorical or string feature, the rows per chunk of its
    dataset (a row is a sample). For a ragged or bytes feature, what a read
    pays for is chunks of ``values``, whose rows are values, not samples:
    the number of samples whose values fill about one chunk of ``values``,
    ``round(c0 * N / M)`` for ``N`` samples over ``M`` rows of values with
    ``c0`` rows per chunk (at least 1, at most ``N``), from the shapes alone
    (no data is read). With unchunked (contiguous) ``values``, or no values
    at all (every sample empty: only ``offsets`` is read), the rows per chunk
    of ``offsets`` (one row per sample, plus one).

    Parameters
    ----------
    feature
        A feature reader of a split.

    Returns
    -------
    int or None
        Samples per chunk, at least 1; None when neither ``values`` nor
        ``offsets`` (or the feature's dataset) is chunked.
    """
    if not isinstance(feature, OffsetFeature):
        return feature.chunk_rows
    values = feature._node("values")
    offsets = feature._node("offsets")
    count = max(0, int(offsets.shape[0]) - 1)
    total = int(values.shape[0])
    if values.chunks is not None and total > 0 and count > 0:
        per = round(int(values.chunks[0]) * count / total)
        return max(1, min(count, per))
    if offsets.chunks is not None:
        return int(offsets.chunks[0])
    return None
