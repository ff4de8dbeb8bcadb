"""The ``string`` encoding: a dataset (N,) of strings, read as ``str`` (§6.4, §3.4, case C06).

Variable- or fixed-length, UTF-8 or ASCII: every string comes back as ``str``
(a batch is a numpy object array); bytes that are not UTF-8 raise
:class:`~h5ml.errors.EncodingError` naming the rows, never a "repaired"
string. Strings are always read through HDF5 (one read per span of a read
plan), never out of the memory map. The module is named ``strings`` so that it
never shadows the standard library's ``string``.
"""

from __future__ import annotations

from typing import Any

import h5py
import numpy as np
import numpy.typing as npt

from h5ml.errors import EncodingError
from h5ml.reader.column import Column
from h5ml.reader.feature import Feature
from h5ml.reader.plan import Indices, check_index
from h5ml.spec.attrs import decode_str

__all__ = ["StringFeature"]


class StringFeature(Feature):
    """A ``string`` feature: a dataset (N,) of strings (§6.4).

    Values come back as ``str`` whatever the writer chose: variable- or
    fixed-length, UTF-8 or ASCII (§3.4, case C06). A batch is a numpy object
    array (R,) of ``str``; an int index returns one ``str``.
    """

    encoding = "string"

    @property
    def dtype(self) -> np.dtype[Any]:
        """``object``: batches are object arrays of ``str``."""
        return np.dtype(object)

    def _make_column(self, member: str, path: str, node: h5py.Dataset) -> Column:
        """Strings are read in the dataset's own type (h5py turns variable-length ones into bytes)."""
        return self._string_column(path, node)

    def _decoded(self, column: Column, start: int, stop: int) -> list[str]:
        """Rows ``[start, stop)`` as ``str``."""
        return self._decode(column.read(start, stop), start, stop)

    def _decode(self, raw: npt.NDArray[Any], start: int, stop: int) -> list[str]:
        try:
            # SPEC §3.4-R3, §3.4-R4: variable- or fixed-length, UTF-8 or ASCII, any padding: returned as str
            return [decode_str(v) for v in raw.tolist()]
        except UnicodeDecodeError as exc:
            raise EncodingError(
                f"{self.path}: {self.hdf5_path} holds a string that is not valid UTF-8 in rows {start}..{stop - 1} "
                f"({exc.reason}); strings must be UTF-8 (§3.4)",
                path=self.path,
                hdf5_path=self.hdf5_path,
            ) from exc

    def _read_one(self, index: int | np.integer[Any]) -> Any:
        column = self._column()
        row = check_index(index, column.rows)
        return self._decoded(column, row, row + 1)[0]

    def _read_range(self, start: int, stop: int) -> Any:
        block = np.empty(stop - start, dtype=object)
        block[:] = self._decoded(self._column(), start, stop)
        return block

    def _read(self, indices: Indices) -> Any:
        column = self._column()
        plan = column.plan(indices)
        block = np.empty(plan.rows.shape[0], dtype=object)
        for start, stop, lo, hi in plan.iter_spans():
            raw = column.read(start, stop)
            if hi - lo != stop - start:
                raw = raw[plan.rows[lo:hi] - start]
            block[lo:hi] = self._decode(raw, start, stop)
        return plan.gather(block)
