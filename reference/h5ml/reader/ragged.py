"""The ``ragged`` encoding: ``values`` (M, ...) sliced by ``offsets`` (N+1,), optionally reshaped by ``shapes`` (§6.3).

A sample is a numpy array of its own length (the values of its rows), reshaped
in C order to ``shapes[i]`` when the feature has ``shapes``, bool for
``logical_dtype = "bool"`` (§3.3). The offsets and value spans are read by
:class:`h5ml.reader.offsets.OffsetFeature`: a batch is one read of ``values``
per contiguous run of the requested samples, and its samples are read-only
views into the buffer of that run (no copy per sample, as zero-copy Arrow
readers return), so that padding them (:func:`h5ml.sampling.pad_ragged`)
copies each value once.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from h5ml.reader.column import Column
from h5ml.reader.offsets import OffsetFeature
from h5ml.reader.plan import Indices, check_index, plan_reads

__all__ = ["RaggedFeature"]


class RaggedFeature(OffsetFeature):
    """A ``ragged`` feature: ``values`` (M, ...) sliced by ``offsets`` (N+1,) (§6.3).

    A batch (a slice, a sequence, an array or a mask of indices) is a list of
    R numpy arrays; sample i is ``values[offsets[i]:offsets[i + 1]]``, of
    shape ``(offsets[i + 1] - offsets[i], *values.shape[1:])``, or reshaped
    in C order to ``shapes[i]`` when the feature has ``shapes``; of
    :attr:`dtype` (the values' dtype in native byte order, bool for
    ``logical_dtype = "bool"``).

    The arrays of a batch are views into one buffer per contiguous run of
    the requested samples' values (read with one call: out of the file's
    memory map for unfiltered values, one copy), not copies of their own.
    They are read-only (``flags.writeable`` is False): samples share that
    buffer, so an edit in place of one could change another. A duplicated
    index gives the same array twice. Call ``sample.copy()`` for a writable
    array of its own (a view also keeps its whole buffer in memory: copy a
    sample kept long after its batch). An int index returns one writable
    array of its own. :meth:`lengths` reads only the offsets.

    With ``h5ml.open(..., zero_copy=True)``, the buffer of a run (and the
    array of an int index) is a read-only view of the file's memory map
    itself when the values are unfiltered, native-order, aligned and
    contiguous in the file, else a copy as above (what a view trades: SIGBUS
    if the file is truncated while it is alive; see :mod:`h5ml.reader.direct`).
    """

    encoding = "ragged"
    _members: ClassVar[tuple[str, ...]] = ("values", "offsets", "shapes")

    def _reset(self) -> None:
        super()._reset()
        self._with_shapes: bool | None = None

    def _has_shapes(self) -> bool:
        if self._with_shapes is None:
            self._with_shapes = "shapes" in self._node()
        return self._with_shapes

    def _shapes_column(self) -> Column | None:
        """The ``shapes`` column, checked against ``values`` (§6.3); None when the feature has none."""
        if not self._has_shapes():
            return None
        shapes = self._column("shapes")
        if len(shapes.inner) != 1 or self._column("values").inner:
            raise self._invalid("a ragged feature with shapes has 1-D values and shapes of shape (N, D) (§6.3)")
        return shapes

    def _reshaped(self, row: int, values: npt.NDArray[Any], shape: list[int]) -> npt.NDArray[Any]:
        """``values`` in C order to ``shape`` (``shapes[row]``), after checking the counts agree (§6.3)."""
        if math.prod(shape) != values.shape[0] or min(shape, default=0) < 0:
            raise self._invalid(
                f"sample {row} has shape {tuple(shape)} but {values.shape[0]} values (§6.3)",
                "shapes",
            )
        return values.reshape(shape)

    @property
    def dtype(self) -> np.dtype[Any]:
        """The values' dtype in native order, or bool for ``logical_dtype = "bool"``."""
        return self._values_dtype()

    @property
    def sample_shape(self) -> tuple[int | None, ...]:
        """``(None, *values.shape[1:])``, or D times None when ``shapes`` is (N, D)."""
        if self._has_shapes():
            return (None,) * int(self._node("shapes").shape[1])
        return (None, *(int(d) for d in self._main().shape[1:]))

    def _read_one(self, index: int | np.integer[Any]) -> Any:
        row = check_index(index, self._count())
        shapes = self._shapes_column()
        start, stop = self._bounds(row)
        sample = self._column("values").read_shared(start, stop)
        if self._is_logical_bool():
            sample = self._booleans(sample)
        if shapes is not None:
            sample = self._reshaped(row, sample, shapes.sample(row).tolist())
        return sample

    def _read_range(self, start: int, stop: int) -> Any:
        shapes = self._shapes_column()
        samples = self._range_segments(start, stop, as_bool=self._is_logical_bool())
        if shapes is not None and samples:
            for j, shape in enumerate(shapes.read(start, stop).tolist()):
                samples[j] = self._reshaped(start + j, samples[j], shape)
        return samples

    def _read(self, indices: Indices) -> Any:
        plan = plan_reads(indices, self._count())
        shapes = self._shapes_column()
        unique, _, _ = self._segments(plan.rows, as_bool=self._is_logical_bool())
        if shapes is not None:
            shapes_plan = shapes.plan(plan.rows)
            for j, shape in enumerate(shapes.read_rows(shapes_plan).tolist()):
                unique[j] = self._reshaped(int(plan.rows[j]), unique[j], shape)
        return plan.gather(unique)
