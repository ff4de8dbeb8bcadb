"""Batches of samples for copying: :class:`SampleBatches` cuts a split's rows into batches of about :data:`BATCH_BYTES`.

``subset``, ``merge`` and the exports read and write a batch at a time, so
memory stays bounded whatever the files' sizes; a batch's size is known from
the features' layouts before its values are read (§6.2-§6.6).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from h5ml.model.values import utf8_nbytes
from h5ml.reader import Feature

__all__ = ["BATCH_BYTES", "SampleBatches"]

#: Bytes of samples read and written at once (the memory bound of copying).
BATCH_BYTES: Final = 64 << 20
#: Rows whose per-sample sizes are looked up at once when planning batches (and ids read at once by merge).
WINDOW: Final = 65536
#: Bytes assumed per string sample until strings have been read.
_STRING_GUESS: Final = 256


class SampleBatches:
    """Cut the requested samples of a split into batches of about ``target_bytes`` each.

    Sizes come from the features' layouts: dense and categorical samples have
    one size; ragged and bytes samples are sized from their ``offsets`` only
    (read a window of :data:`WINDOW` samples at a time, values untouched);
    strings are guessed (256 bytes) until :meth:`observe` reports the real
    average. A sample larger than ``target_bytes`` is a batch of its own.

    Parameters
    ----------
    features
        The features that will be read (of one split).
    rows
        The samples to read, in order: a ``range`` with step 1 (batches are
        then slices) or an int64 array of rows in ``[0, N)`` (batches are
        then arrays).
    target_bytes
        The bytes of one batch, > 0; default :data:`BATCH_BYTES` (read when
        the batches are made).

    Examples
    --------
    >>> batches = SampleBatches(list(split.features.values()), range(len(split)))  # doctest: +SKIP
    >>> for index in batches:  # doctest: +SKIP
    ...     values = split.read(index)
    ...     batches.observe(values)
    """

    def __init__(
        self,
        features: Sequence[Feature],
        rows: range | npt.NDArray[np.int64],
        target_bytes: int | None = None,
    ) -> None:
        target_bytes = BATCH_BYTES if target_bytes is None else target_bytes
        if target_bytes <= 0:
            raise ValueError(f"target_bytes must be > 0, got {target_bytes}")  # a defect of the caller
        if isinstance(rows, range) and rows.step != 1:
            rows = np.arange(rows.start, rows.stop, rows.step, dtype=np.int64)
        self._rows = rows
        self._target = target_bytes
        self._fixed = 0
        self._offset_features: list[tuple[Feature, int]] = []
        self._strings: list[str] = []
        self._string_bytes = float(_STRING_GUESS)
        self._seen_strings = 0
        for feature in features:
            itemsize = np.dtype(feature.dtype).itemsize if feature.encoding != "string" else 0
            shape = feature.sample_shape
            if feature.encoding in ("dense",):
                self._fixed += itemsize * math.prod(int(d or 0) for d in shape)
            elif feature.encoding == "categorical":
                self._fixed += 8
            elif feature.encoding == "string":
                self._strings.append(feature.name)
            else:  # ragged, bytes: a length counts rows of values (elements when the feature has shapes)
                with_shapes = len(shape) > 1 and all(d is None for d in shape)
                row = 1 if with_shapes else math.prod(int(d or 0) for d in shape[1:])
                self._offset_features.append((feature, itemsize * row))
        self._cache_start = 0
        self._cache: npt.NDArray[np.float64] = np.zeros(0)

    def __len__(self) -> int:
        return len(self._rows)

    def _index(self, start: int, stop: int) -> slice | npt.NDArray[np.int64]:
        if isinstance(self._rows, range):
            return slice(self._rows.start + start, self._rows.start + stop)
        return self._rows[start:stop]

    def _variable(self, pos: int) -> npt.NDArray[np.float64]:
        """Bytes of each sample's ragged and bytes values from ``pos`` on (a cached window)."""
        end = self._cache_start + self._cache.shape[0]
        if not (self._cache_start <= pos < end):
            stop = min(len(self._rows), pos + WINDOW)
            sizes = np.zeros(stop - pos, dtype=np.float64)
            for feature, row_bytes in self._offset_features:
                lengths = feature.lengths(self._index(pos, stop))  # type: ignore[attr-defined]
                sizes += np.asarray(lengths, dtype=np.float64) * row_bytes
            self._cache_start, self._cache = pos, sizes
        return self._cache[pos - self._cache_start :]

    def __iter__(self) -> Iterator[slice | npt.NDArray[np.int64]]:
        """Yield the index of each batch, in order: a slice or an int64 array of rows."""
        pos, total = 0, len(self._rows)
        while pos < total:
            per_sample = self._fixed + self._string_bytes * len(self._strings)
            if self._offset_features:
                sizes = np.cumsum(self._variable(pos) + per_sample)
                count = int(np.searchsorted(sizes, self._target, side="right"))
                count = max(1, count)
            else:
                count = max(1, int(self._target // max(1.0, per_sample)))
            stop = min(total, pos + count, pos + WINDOW)
            yield self._index(pos, stop)
            pos = stop

    def observe(self, values: Mapping[str, Any]) -> None:
        """Learn the size of string samples from a batch just read (``Split.read``'s result)."""
        for name in self._strings:
            items = values.get(name)
            if items is None or len(items) == 0:
                continue
            total = sum(utf8_nbytes(s) for s in items)
            self._string_bytes = (self._string_bytes * self._seen_strings + total) / (self._seen_strings + len(items))
            self._seen_strings += len(items)
