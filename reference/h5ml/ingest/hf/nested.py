"""Lists of numbers of a Hugging Face column (``List``, ``Sequence``, ``ArrayND``) as dense or ragged samples (§6.2, §6.3).

:func:`nested` reads a batch of a nested list column through its Arrow
offsets (no Python lists) when it has no nulls, and row by row otherwise;
a row that is not rectangular, does not fit the declared lengths, or holds
a null is a bad row.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from h5ml.ingest.hf.columns import NULL_REASON, Column, Problems, RowProblem, numpy_dtype
from h5ml.ingest.hf.media import pyarrow_module

__all__ = ["nested"]


def _has_nested_nulls(array: Any, levels: int) -> bool:
    current = array
    for _ in range(levels):
        if current.null_count:
            return True
        current = current.flatten()
    return bool(current.null_count)


def _levels(array: Any, levels: int) -> tuple[list[npt.NDArray[np.int64]], npt.NDArray[Any]]:
    """Offsets of each list level (each starting at 0) and the leaf values of a null-free nested list array."""
    pa = pyarrow_module()
    offsets: list[npt.NDArray[np.int64]] = []
    current = array
    for _ in range(levels):
        if pa.types.is_fixed_size_list(current.type):
            offsets.append(np.arange(len(current) + 1, dtype=np.int64) * int(current.type.list_size))
        else:
            raw = np.asarray(current.offsets, dtype=np.int64)
            offsets.append(raw - raw[0])
        current = current.flatten()
    return offsets, current.to_numpy(zero_copy_only=False)


def _row_shape(offsets: Sequence[npt.NDArray[np.int64]], row: int) -> tuple[list[int], int, int] | None:
    """Shape of row ``row`` and its span of leaf values; None when a level is not rectangular."""
    lo, hi = row, row + 1
    shape: list[int] = []
    for level in offsets:
        lengths = level[lo + 1 : hi + 1] - level[lo:hi]
        if lengths.size and (lengths != lengths[0]).any():
            return None
        shape.append(int(lengths[0]) if lengths.size else 0)
        lo, hi = int(level[lo]), int(level[hi])
    return shape, lo, hi


def nested(column: Column, array: Any) -> tuple[Any, Problems]:
    """Lists of numbers -> dense ``(n, *dims)`` or a list of ragged samples (§6.2, §6.3)."""
    dims = column.dims
    dtype = np.dtype(numpy_dtype(column.dtype or "float64"))
    n = len(array)
    problems: Problems = {}
    if _has_nested_nulls(array, len(dims)):
        return _nested_slow(column, array.to_pylist(), dtype)
    offsets, leaf = _levels(array, len(dims))
    leaf = leaf.astype(dtype, copy=False)
    ragged_rows = dims[0] is None and all(d is not None for d in dims[1:])
    if ragged_rows or all(d is not None for d in dims):
        inner = [int(d) for d in dims[1:] if d is not None]
        uniform = all((np.diff(level) == d).all() for level, d in zip(offsets[1:], inner, strict=True))
        if uniform:
            rows = leaf.reshape(-1, *inner)
            first = offsets[0]
            if dims[0] is not None:
                wrong = np.flatnonzero(np.diff(first) != dims[0])
                if wrong.size == 0:
                    return rows.reshape(n, *[int(d) for d in dims if d is not None]), problems
            else:
                return [rows[int(first[i]) : int(first[i + 1])] for i in range(n)], problems
    samples: list[npt.NDArray[Any]] = []
    for i in range(n):
        found = _row_shape(offsets, i)
        problem = _shape_problem(found[0] if found else None, dims)
        if problem or found is None:
            problems[i] = RowProblem(problem or "is not rectangular: its inner lists differ in length")
            samples.append(np.zeros([d or 0 for d in dims], dtype=dtype))
            continue
        shape, lo, hi = found
        samples.append(leaf[lo:hi].reshape(shape))
    return _nested_result(samples, dims), problems


def _shape_problem(shape: list[int] | None, dims: tuple[int | None, ...]) -> str | None:
    if shape is None:
        return "is not rectangular: its inner lists differ in length"
    wrong = [(k, s, d) for k, (s, d) in enumerate(zip(shape, dims, strict=True)) if d is not None and s != d and s]
    if wrong:
        k, s, d = wrong[0]
        return f"has {s} values along axis {k}, where the feature declares {d}"
    return None


def _nested_slow(column: Column, items: list[Any], dtype: np.dtype[Any]) -> tuple[Any, Problems]:
    """The rows of a nested list column with nulls, one by one."""
    dims = column.dims
    problems: Problems = {}
    samples: list[npt.NDArray[Any]] = []
    for i, item in enumerate(items):
        array: npt.NDArray[Any] | None = None
        if item is None or _holds_none(item):
            problems[i] = RowProblem(NULL_REASON)
        else:
            try:
                array = np.asarray(item, dtype=dtype)
            except ValueError:
                problems[i] = RowProblem("is not rectangular: its inner lists differ in length")
        if array is not None and array.ndim != len(dims):
            array = None if array.size else np.zeros([d or 0 for d in dims], dtype=dtype)
            if array is None:
                problems[i] = RowProblem("is not rectangular: its inner lists differ in length")
        if array is not None:
            problem = _shape_problem(list(array.shape), dims)
            if problem:
                problems[i] = RowProblem(problem)
                array = None
        samples.append(np.zeros([d or 0 for d in dims], dtype=dtype) if array is None else array)
    return _nested_result(samples, dims), problems


def _holds_none(item: Any) -> bool:
    if item is None:
        return True
    return isinstance(item, list) and any(_holds_none(x) for x in item)


def _nested_result(samples: list[npt.NDArray[Any]], dims: tuple[int | None, ...]) -> Any:
    if all(d is not None for d in dims):
        shape = tuple(int(d or 0) for d in dims)
        return np.stack(samples) if samples else np.empty((0, *shape))
    return samples
