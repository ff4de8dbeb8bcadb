"""Sample selections of ``h5ml subset``: slices, ``"start:stop[:step]"`` strings, indices and masks (§5).

:func:`parse_samples` turns one into the rows to copy, in order.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeAlias

import numpy as np
import numpy.typing as npt

from h5ml.ingest.options import parameter_error
from h5ml.reader.plan import normalize_indices

__all__ = ["SampleSelection", "parse_samples"]

#: Samples of one split: a slice, ``"start:stop[:step]"``, integer indices (any order) or a boolean mask.
SampleSelection: TypeAlias = slice | str | Sequence[int] | npt.NDArray[np.integer[Any]] | npt.NDArray[np.bool_]


def parse_samples(selection: SampleSelection | None, count: int, where: str = "") -> range | npt.NDArray[np.int64]:
    """Turn a sample selection into the rows to copy, in order.

    Parameters
    ----------
    selection
        None (every sample), a ``slice``, a string ``"start:stop"`` or
        ``"start:stop:step"`` (each part optional, negative counts from the
        end, as Python slices), a sequence or 1-D array of integer indices
        (any order, duplicates allowed, negative from the end), or a boolean
        mask of length ``count``.
    count
        The number of samples N of the split.
    where
        Names the split in error messages.

    Returns
    -------
    range or numpy.ndarray of int64
        A ``range`` with step 1 for contiguous selections, else the rows.

    Raises
    ------
    h5ml.errors.ParameterError
        If a string is not a slice (``"10:20"``), a slice step is 0, or a
        slice's start comes after its stop (``"5:2"``: surely a mistake, where
        Python would select nothing).
    IndexError
        If an index is outside ``[-N, N)``.
    TypeError
        If the selection is of another type, or a mask has the wrong length.
    """
    prefix = f"{where}: " if where else ""
    if selection is None:
        return range(count)
    if isinstance(selection, str):
        parts = selection.split(":")
        try:
            if len(parts) not in (2, 3):
                raise ValueError
            numbers = [int(p) if p.strip() else None for p in parts]
        except ValueError:
            raise parameter_error(
                "samples",
                f"{prefix}samples {selection!r} is not a slice 'start:stop' or 'start:stop:step' (e.g. '0:1000', "
                "':500', '::10')",
            ) from None
        selection = slice(*numbers)
    if isinstance(selection, slice):
        if selection.step == 0:
            raise parameter_error("samples", f"{prefix}samples {selection} has step 0")
        if _reversed(selection):
            shown = ":".join("" if v is None else str(v) for v in (selection.start, selection.stop, selection.step))
            raise parameter_error(
                "samples",
                f"{prefix}samples {shown.rstrip(':')!r} selects no sample: its start comes after its stop for its "
                "step; swap them (e.g. '2:5'), or give a negative step to go backwards",
            )
        start, stop, step = selection.indices(count)
        if step == 1:
            return range(start, max(start, stop))
        return np.arange(start, stop, step, dtype=np.int64)
    if isinstance(selection, (int, np.integer)):
        raise TypeError(f"{prefix}samples must be a slice, a 'start:stop' string or a list of indices, got an int")
    try:
        rows, _ = normalize_indices(selection, count)
    except IndexError as exc:
        raise IndexError(f"{prefix}{exc}") from None
    except TypeError as exc:
        raise TypeError(f"{prefix}samples: {exc}") from None
    return rows


def _reversed(selection: slice) -> bool:
    """Whether a slice's given start and stop (of one sign) are in the wrong order for its step."""
    start, stop, step = selection.start, selection.stop, selection.step or 1
    if start is None or stop is None or (start < 0) != (stop < 0):
        return False
    return bool(stop < start if step > 0 else stop > start)
