"""Parquet columns that hold arrays, and the h5ml attributes an export records in a Parquet schema (§6.2, §6.3, §6.6).

:func:`h5ml.ingest.export.export_parquet` writes dense samples of shape
``(d1, ..., dk)`` as nested ``fixed_size_list`` columns, ragged samples as
``list`` columns (of fixed-size lists when their rows have a shape; D nested
lists when they vary in D axes) and bytes as ``binary``, with each field's
h5ml attributes as JSON under ``b"h5ml"`` in its metadata and the split in
the schema's. This module reads them back:

- :func:`array_layout` tells what an Arrow type holds (:class:`ArrayLayout`);
- :func:`arrow_samples` turns one batch of such a column into the writer's
  samples (an array ``(n, d1, ..., dk)``, a list of arrays, a list of bytes);
- :func:`field_info` and :func:`schema_split` read the recorded attributes.

A null sample, or a null inside one, has no h5ml value: it is refused.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from h5ml import spec
from h5ml.errors import IngestError

__all__ = ["ArrayLayout", "array_layout", "arrow_samples", "field_info", "schema_split"]


@dataclass(frozen=True)
class ArrayLayout:
    """What an Arrow column of arrays holds.

    Attributes
    ----------
    kind
        ``"array"`` (dense samples of shape ``dims``), ``"ragged"`` (rows of
        shape ``dims``, or samples of ``depth`` axes that vary) or ``"bytes"``.
    dtype
        The numpy dtype of the values (None for bytes).
    dims
        The fixed sizes: the sample shape (``array``) or the row shape (``ragged``).
    depth
        The variable-length list levels of a ragged column (1; D > 1 for samples that vary in D axes).
    """

    kind: str
    dtype: np.dtype[Any] | None = None
    dims: tuple[int, ...] = ()
    depth: int = 0


def _is_list(pa: Any, t: Any) -> bool:
    return bool(pa.types.is_list(t) or pa.types.is_large_list(t))


def array_layout(source: Path, name: str, arrow_type: Any) -> ArrayLayout | None:
    """The layout of a column of arrays, or None when the Arrow type is a scalar one.

    Raises
    ------
    h5ml.IngestError
        If the lists hold something other than numbers or booleans, or mix
        variable-length lists inside fixed-size ones.
    """
    import pyarrow as pa

    t = arrow_type
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return ArrayLayout("bytes")
    if not (_is_list(pa, t) or pa.types.is_fixed_size_list(t)):
        return None
    depth = 0
    while _is_list(pa, t):
        depth, t = depth + 1, t.value_type
    dims: list[int] = []
    while pa.types.is_fixed_size_list(t):
        dims.append(int(t.list_size))
        t = t.value_type
    if depth > 1 and dims:
        t = None  # lists of lists of fixed-size lists: no h5ml layout
    if t is None or not (pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t)):
        raise IngestError(
            f"{source}: column {name!r} has the Parquet type {arrow_type}, which has no h5ml feature: list columns "
            "hold numbers or booleans, as fixed-size lists (dense samples), lists of them (ragged samples), or "
            "nested lists (samples that vary in several axes); leave it out with columns=[...]",
            path=str(source),
        )
    dtype = np.dtype(bool) if pa.types.is_boolean(t) else np.dtype(t.to_pandas_dtype())
    if depth == 0:
        return ArrayLayout("array", dtype, tuple(dims))
    return ArrayLayout("ragged", dtype, tuple(dims), depth)


def _refuse_nulls(source: Path, name: str, array: Any, what: str) -> None:
    if array.null_count:
        raise IngestError(
            f"{source}: column {name!r} holds {array.null_count} null {what}; an h5ml sample of an array or bytes "
            "feature has no missing value (§6). Fill or drop those rows, or leave the column out with columns=[...]",
            path=str(source),
        )


def _values(source: Path, name: str, array: Any, dims: tuple[int, ...], dtype: np.dtype[Any]) -> Any:
    """The numbers under ``len(dims)`` fixed-size list levels, as an array ``(rows, *dims)``."""
    for _ in dims:
        _refuse_nulls(source, name, array, "lists inside samples")
        array = array.flatten()
    _refuse_nulls(source, name, array, "values inside samples")
    flat = np.asarray(array.to_numpy(zero_copy_only=False), dtype=dtype)
    return flat.reshape(-1, *dims)


def _varying(source: Path, name: str, array: Any, layout: ArrayLayout) -> list[Any]:
    """Samples of ``layout.depth`` nested variable-length lists, each a C-order array of that many axes."""
    assert layout.dtype is not None
    lengths = []
    level = array
    for _ in range(layout.depth):
        _refuse_nulls(source, name, level, "lists")
        lengths.append(np.asarray(level.value_lengths().to_numpy(zero_copy_only=False), dtype=np.int64))
        level = level.flatten()
    flat = _values(source, name, level, (), layout.dtype).reshape(-1)
    samples, at, start = [], [0] * layout.depth, 0
    for i in range(len(array)):
        shape, count = [], 1
        for k in range(layout.depth):
            sizes = lengths[k][at[k] : at[k] + count]
            at[k] += count
            if count and bool((sizes != sizes[0]).any()):
                raise IngestError(
                    f"{source}: column {name!r}, sample {i}: its lists at depth {k + 1} have different lengths "
                    f"{sorted(set(sizes.tolist()))}; a sample is a rectangular array (§6.3)",
                    path=str(source),
                )
            size = int(sizes[0]) if count else 0  # the sizes under an empty axis are unknown: zero
            shape.append(size)
            count *= size
        samples.append(flat[start : start + count].reshape(shape))
        start += count
    return samples


def arrow_samples(source: Path, name: str, array: Any, layout: ArrayLayout) -> Any:
    """One batch of a column of arrays as the writer's samples.

    Parameters
    ----------
    source, name
        The file and the column, for messages.
    array
        The column's Arrow array (one batch, possibly a slice).
    layout
        Its :func:`array_layout`.

    Returns
    -------
    numpy.ndarray or list
        ``array``: an array ``(n, *dims)``; ``ragged``: n arrays of shape
        ``(L, *dims)`` (or of ``depth`` axes); ``bytes``: n ``bytes``.

    Raises
    ------
    h5ml.IngestError
        If a sample is null or holds a null, or a sample of nested lists is not rectangular.
    """
    _refuse_nulls(source, name, array, "samples")
    if layout.kind == "bytes":
        return [bytes(v) for v in array.to_pylist()]
    assert layout.dtype is not None
    if layout.kind == "array":
        return _values(source, name, array, layout.dims, layout.dtype)
    if layout.depth > 1:
        return _varying(source, name, array, layout)
    ends = np.cumsum(np.asarray(array.value_lengths().to_numpy(zero_copy_only=False), dtype=np.int64))
    rows = _values(source, name, array.flatten(), layout.dims, layout.dtype)
    return list(np.split(rows, ends[:-1])) if len(ends) else []


def field_info(source: Path, field: Any) -> dict[str, Any] | None:
    """The h5ml attributes an export recorded in a Parquet field's metadata (``b"h5ml"``), or None.

    Raises
    ------
    h5ml.IngestError
        If the metadata is not a JSON object, or its class names are not a list of strings.
    """
    raw = (field.metadata or {}).get(b"h5ml")
    if raw is None:
        return None
    try:
        info = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise IngestError(
            f"{source}: the h5ml metadata of column {field.name!r} is not JSON ({exc})", path=str(source)
        ) from None
    names = info.get("class_names") if isinstance(info, dict) else None
    if not isinstance(info, dict) or (
        names is not None and (not isinstance(names, list) or not all(isinstance(n, str) for n in names))
    ):
        raise IngestError(
            f"{source}: the h5ml metadata of column {field.name!r} should be a JSON object whose class_names are "
            f"strings, got {raw[:200]!r}",
            path=str(source),
        )
    return info


def schema_split(schema: Any) -> str | None:
    """The split an export recorded in the schema's metadata (``b"h5ml"``), when it is a valid split name (§5.1)."""
    raw = (schema.metadata or {}).get(b"h5ml")
    try:
        info = json.loads(raw) if raw is not None else None
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None
    split = info.get("split") if isinstance(info, dict) else None
    return split if isinstance(split, str) and spec.is_valid_name(split) else None
