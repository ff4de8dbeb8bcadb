"""The ``dense`` encoding: one numeric dataset of shape (N, *sample_shape) (§6.2, §3.2, §3.3).

A batch is one numpy array (R, *sample_shape) in native byte order (bool for
``logical_dtype = "bool"`` and HDF5 enum booleans); unfiltered data is copied
out of the file's memory map (:mod:`h5ml.reader.direct`), anything else read
through a read plan by its :class:`~h5ml.reader.column.Column`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from h5ml.reader.feature import Feature
from h5ml.reader.plan import Indices, check_index

__all__ = ["DenseFeature"]


class DenseFeature(Feature):
    """A ``dense`` feature: one numeric dataset of shape (N, *sample_shape) (§6.2).

    ``feature[idx]`` returns a numpy array (R, *sample_shape) in native byte
    order, bool for ``logical_dtype = "bool"`` and HDF5 enum booleans (§3.3);
    an int index returns the sample array of shape ``sample_shape`` (a numpy
    scalar when the dataset is 1-D). With ``h5ml.open(..., zero_copy=True)``,
    a slice of step 1 whose rows are unfiltered, native-order, aligned and
    contiguous in the file is a read-only view of the file's memory map
    (:meth:`h5ml.reader.column.Column.read_shared`), else a copy.
    """

    encoding = "dense"

    @property
    def dtype(self) -> np.dtype[Any]:
        """The values' dtype: the stored numeric type in native order, or bool (§3.3)."""
        return self._values_dtype()

    @property
    def sample_shape(self) -> tuple[int | None, ...]:
        """The dataset's axes after the first (§6.2)."""
        return tuple(int(d) for d in self._main().shape[1:])

    def _read_one(self, index: int | np.integer[Any]) -> Any:
        column = self._column()
        value = column.sample(check_index(index, column.rows))
        return self._booleans(value) if self._is_logical_bool() else value

    def _read_range(self, start: int, stop: int) -> Any:
        block = self._column().read_shared(start, stop)
        return self._booleans(block) if self._is_logical_bool() else block

    def _read(self, indices: Indices) -> Any:
        values, _ = self._column().take(indices)
        return self._booleans(values) if self._is_logical_bool() else values

    def _read_rows(self, rows: npt.NDArray[np.int64]) -> Any:
        values = self._column().take_rows(rows)
        return self._booleans(values) if self._is_logical_bool() else values

    def prefetch(self, indices: Indices) -> int:
        """Start decoding, in the decode pool, the compressed chunks that hold ``indices``; do not wait (§7.3).

        Parameters
        ----------
        indices
            Any request :meth:`read` accepts (ints, a slice, a 1-D integer array).

        Returns
        -------
        int
            The decodes started: 0 for data h5ml does not decode itself (unfiltered data, other filters),
            for chunks already cached or in flight, and with ``chunk_cache_bytes=0``.

        Raises
        ------
        IndexError
            If an index is outside ``[-N, N)``.
        """
        return self._column().prefetch(indices)
