"""The ``bytes`` encoding: ``values`` uint8 (M,) sliced by ``offsets`` (N+1,), one encoded file per sample (§6.6).

A sample is one ``bytes`` object, returned as stored and never deserialised
(SPEC §10.2-R1: a pickle or YAML stream stays bytes), an encoded file of the feature's
``media_type``, decoded by the caller for example with
:func:`h5ml.reader.imagecodec.decode_image`). The offsets and value spans are
read by :class:`h5ml.reader.offsets.OffsetFeature`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from h5ml.reader.offsets import OffsetFeature
from h5ml.reader.plan import Indices, check_index, plan_reads

__all__ = ["BytesFeature"]


class BytesFeature(OffsetFeature):
    """A ``bytes`` feature: ``values`` uint8 (M,) sliced by ``offsets`` (N+1,) (§6.6).

    A batch is a list of R ``bytes`` objects (one encoded file each, of type
    :attr:`media_type`); an int index returns one ``bytes``.
    """

    encoding = "bytes"

    @property
    def dtype(self) -> np.dtype[Any]:
        """``uint8``: the stored byte values."""
        return np.dtype(np.uint8)

    @property
    def sample_shape(self) -> tuple[int | None, ...]:
        """``(None,)``: a sample is a byte string of varying length."""
        return (None,)

    def _read_one(self, index: int | np.integer[Any]) -> Any:
        start, stop = self._bounds(check_index(index, self._count()))
        return self._column("values").read(start, stop).tobytes()

    def _read_range(self, start: int, stop: int) -> Any:
        return [seg.tobytes() for seg in self._range_segments(start, stop)]

    def _read(self, indices: Indices) -> Any:
        plan = plan_reads(indices, self._count())
        segments, _, _ = self._segments(plan.rows)
        return plan.gather([seg.tobytes() for seg in segments])
