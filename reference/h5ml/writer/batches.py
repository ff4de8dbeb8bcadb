"""One batch of a feature in stored form: :class:`Batch`, built from user values by :func:`normalize` (§6).

The writer turns every batch it is given into the arrays it will write (cast
to the stored dtype, strings checked, class names turned into codes, ragged
samples concatenated with their lengths), checks them against the feature's
:class:`~h5ml.model.layout.Layout`, feeds them to the fingerprint and the statistics,
and buffers them until they are written.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from h5ml.errors import EncodingError
from h5ml.model.layout import Layout
from h5ml.model.values import Categorical, as_categorical, dense_array, is_bytes, text_problem, to_list, utf8_nbytes
from h5ml.spec.chunks import VLEN_ELEMENT_BYTES

__all__ = ["Batch", "concat", "normalize", "runs"]


@dataclass
class Batch:
    """A feature's values for ``n`` samples, in stored form.

    Attributes
    ----------
    n
        The number of samples.
    data
        dense: the values ``(n, *sample_shape)``; string: a ``list[str]`` of
        length n; categorical: the codes ``(n,)``; ragged and bytes: the
        concatenated values (``(rows, *row_shape)`` or 1-D with ``shapes``).
        Arrays have the feature's stored dtype.
    lengths
        ragged and bytes: int64 ``(n,)``, the rows (or elements) of each
        sample; else ``None``.
    shapes
        ragged samples varying in several axes: int64 ``(n, D)``; else ``None``.
    borrowed
        ``data`` may share memory with the caller's array.
    """

    n: int
    data: Any
    lengths: np.ndarray | None = None
    shapes: np.ndarray | None = None
    borrowed: bool = False

    @property
    def nbytes(self) -> int:
        """Bytes the batch holds in memory (strings: their UTF-8 bytes plus HDF5's per-element overhead)."""
        if isinstance(self.data, np.ndarray):
            return int(self.data.nbytes) + (0 if self.lengths is None else int(self.lengths.nbytes) * 2)
        return sum(utf8_nbytes(s) + VLEN_ELEMENT_BYTES for s in self.data)

    def owned(self) -> Batch:
        """This batch, or a copy of it whose ``data`` no longer shares the caller's memory."""
        if not self.borrowed:
            return self
        return dataclasses.replace(self, data=np.array(self.data, copy=True), borrowed=False)


def concat(layout: Layout, batches: list[Batch]) -> Batch:
    """Join consecutive batches of one feature into one (the first one itself if there is one).

    Parameters
    ----------
    layout
        The feature's layout.
    batches
        At least one batch, in sample order.
    """
    if len(batches) == 1:
        return batches[0]
    n = sum(p.n for p in batches)
    if layout.encoding == "string":
        return Batch(n, [s for p in batches for s in p.data])
    lengths = (
        None if batches[0].lengths is None else np.concatenate([p.lengths for p in batches if p.lengths is not None])
    )
    shapes = None if batches[0].shapes is None else np.concatenate([p.shapes for p in batches if p.shapes is not None])
    return Batch(n, np.concatenate([p.data for p in batches]), lengths, shapes)


def runs(batches: Sequence[Batch], min_n: int | None) -> list[list[Batch]]:
    """Cut consecutive batches of one feature into runs, each to be joined with :func:`concat` and written at once.

    Large batches are written as they are, without the copy a join makes;
    small ones are joined with their small neighbours, so that the writer
    does not call HDF5 once per tiny batch and a run of small batches can
    still fill whole chunks (§7).

    Parameters
    ----------
    batches
        The batches, in sample order.
    min_n
        A batch of at least ``min_n`` samples is a run of its own; the
        batches between two such batches form one run. ``None``: all the
        batches form one run.

    Returns
    -------
    list of list of Batch
        The runs in order; together they hold ``batches`` exactly, in order.

    Examples
    --------
    >>> sizes = [[p.n for p in run] for run in runs([Batch(n, None) for n in (1, 2, 8, 9, 1, 1)], 8)]
    >>> sizes
    [[1, 2], [8], [9], [1, 1]]
    """
    if min_n is None:
        return [list(batches)] if batches else []
    out: list[list[Batch]] = []
    small: list[Batch] = []
    for batch in batches:
        if batch.n < min_n:
            small.append(batch)
            continue
        if small:
            out.append(small)
            small = []
        out.append([batch])
    if small:
        out.append(small)
    return out


# --------------------------------------------------------------------------
# normalisation


def normalize(layout: Layout, value: Any, where: str) -> Batch:
    """Turn one batch of a feature into its stored form, checking it (§6).

    Parameters
    ----------
    layout
        The feature's layout.
    value
        The batch as :meth:`h5ml.writer.streaming.Writer.append` takes it: an array
        ``(n, ...)``, a list of samples (arrays, ``str``, ``bytes``, class
        names or ``None``), a :class:`~h5ml.model.values.Categorical` (or a
        pandas-like categorical) or integer codes.
    where
        ``"<file>:<hdf5 path>"``, used in error messages.

    Returns
    -------
    Batch
        The values cast to the stored dtype. ``data`` may be the caller's
        array (``borrowed``) when no cast was needed.

    Raises
    ------
    EncodingError
        If the values do not fit the layout: a scalar, a wrong sample or row
        shape, a dtype that cannot be cast without overflow (floats into
        integers, integers out of range, finite values that would become
        infinite in a narrower float dtype, §3.2; rounding into a float dtype
        is allowed, as in numpy), bool values that are not
        0/1 (§3.3), strings that are not valid UTF-8 or hold NUL (§3.4),
        unknown class names or codes outside ``[-1, K)`` (§6.5), or bytes
        features given other values (§6.6): values this format cannot hold
        raise instead of being written (SPEC §2.2-R1).
    """
    value = as_categorical(value)
    if isinstance(value, (str, bytes)) or not hasattr(value, "__len__"):
        raise EncodingError(f"{where}: expected an array or a list of samples, got {type(value).__name__}")
    enc = layout.encoding
    if enc == "dense":
        arr = dense_array(value, where)
        if arr.shape[1:] != layout.sample_shape:
            raise EncodingError(
                f"{where}: samples have shape {arr.shape[1:]}, but the feature is dense with sample shape "
                f"{layout.sample_shape} (given, or inferred from its first batch); if its samples vary in size, "
                "declare it ragged before the first append: Writer(..., features={name: {'encoding': 'ragged'}}) "
                "or writer.add_feature(split, name, encoding='ragged', dtype=...) (§6.3)"
            )
        out = np.ascontiguousarray(_numeric(arr, layout, where))
        borrowed = isinstance(value, np.ndarray) and np.may_share_memory(out, value)
        return Batch(arr.shape[0], out, borrowed=borrowed)
    if enc == "string":
        return Batch(len(value), _strings(value, where))
    if enc == "categorical":
        codes = _codes(layout, value, where)
        return Batch(
            codes.shape[0], codes, borrowed=isinstance(value, np.ndarray) and np.may_share_memory(codes, value)
        )
    if enc == "bytes":
        return _bytes(value, where)
    return _ragged(layout, value, where)


def _cast(arr: np.ndarray, dtype: np.dtype[Any], where: str) -> np.ndarray:
    """Cast numeric values to the stored dtype without silent overflow (§3.2).

    Into a float dtype, values are rounded to the nearest representable one,
    as numpy's ``astype`` does: precision is lost without an error (an
    integer above 2**53 into float64, a float64 into float16), but a finite
    value beyond the dtype's largest finite one, which would become
    infinite, is refused. Into an integer dtype, floats are refused and
    integers must lie in the dtype's range.
    """
    if arr.dtype == dtype:
        return arr
    if arr.size == 0:
        return arr.astype(dtype)
    if arr.dtype.kind not in "biuf":
        raise EncodingError(f"{where}: values of dtype {arr.dtype} cannot be stored as {dtype}")
    if np.can_cast(arr.dtype, dtype, "safe"):
        return arr.astype(dtype)
    if dtype.kind == "f":
        with np.errstate(over="ignore", invalid="ignore"):
            out = arr.astype(dtype)
        overflow = np.isinf(out) & ~np.isinf(arr)
        if overflow.any():
            i = int(np.flatnonzero(overflow.reshape(-1))[0])
            value = arr.reshape(-1)[i].item()
            big = float(np.finfo(dtype).max)
            raise EncodingError(
                f"{where}: value {value!r} (element {i} of the batch, in C order) does not fit the feature's dtype "
                f"{dtype} (largest finite value {big:g}) and would be stored as infinity; declare a wider dtype "
                "(features={name: {'dtype': 'float32'}}) or scale the values (§3.2)"
            )
        return out
    if arr.dtype.kind == "f":
        raise EncodingError(f"{where}: float values cannot be stored in the feature's integer dtype {dtype}")
    info = np.iinfo(dtype)
    lo, hi = int(arr.min()), int(arr.max())
    if lo < info.min or hi > info.max:
        raise EncodingError(
            f"{where}: values in [{lo}, {hi}] do not fit the feature's dtype {dtype} [{info.min}, {info.max}]"
        )
    return arr.astype(dtype)


def _numeric(arr: np.ndarray, layout: Layout, where: str) -> np.ndarray:
    """Numbers of a dense or ragged feature in the stored dtype; logical bools become uint8 0/1 (§3.3)."""
    assert layout.dtype is not None
    # SPEC §3.3-R1: booleans are stored as uint8 0/1 (the layout adds logical_dtype 'bool')
    if layout.logical_bool:
        if arr.dtype.kind == "b":
            return arr.view(np.uint8) if arr.flags.c_contiguous else arr.astype(np.uint8)
        if arr.size and (arr.dtype.kind not in "iu" or not np.isin(arr, (0, 1)).all()):
            raise EncodingError(f"{where}: a bool feature takes bool values or integers 0/1 (§3.3)")
    return _cast(arr, layout.dtype, where)


def _strings(value: Any, where: str) -> list[str]:
    """Strings of a string feature (§3.4, §6.4); bytes values are decoded as UTF-8."""
    if isinstance(value, np.ndarray) and value.dtype.kind == "S":
        items: list[Any] = [bytes(v) for v in value.ravel()]
    else:
        items = to_list(value)
    out: list[str] = []
    for i, v in enumerate(items):
        if isinstance(v, (bytes, np.bytes_)):
            try:
                v = bytes(v).decode("utf-8")
            except UnicodeDecodeError:
                raise EncodingError(f"{where}: value {i} is bytes that are not UTF-8 (§3.4)") from None
        if not isinstance(v, str):
            raise EncodingError(f"{where}: value {i} is a {type(v).__name__}, a string feature takes str values")
        # SPEC §3.4-R5: a sample string holding U+0000 is refused, never stored truncated
        problem = text_problem(v)
        if problem:
            raise EncodingError(f"{where}: value {i} {problem} (§3.4)")
        out.append(str(v))
    return out


def _codes(layout: Layout, value: Any, where: str) -> np.ndarray:
    """Codes of a categorical feature from a Categorical, integer codes, or class names and ``None`` (§6.5)."""
    assert layout.class_names is not None and layout.dtype is not None
    names = layout.class_names
    if isinstance(value, Categorical):
        if value.class_names != names:
            raise EncodingError(
                f"{where}: Categorical class names {list(value.class_names)[:5]}... differ from the feature's"
            )
        raw = value.codes
    elif isinstance(value, np.ndarray) and value.dtype.kind in "iu":
        raw = value
    else:
        seq = to_list(value)
        if all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in seq):
            raw = np.asarray(seq, dtype=np.int64)
        else:
            index = {n: i for i, n in enumerate(names)}
            unknown = sorted({str(v) for v in seq if v is not None and v not in index})
            if unknown:
                raise EncodingError(f"{where}: values {unknown[:10]} are not among the class names (§6.5)")
            raw = np.fromiter((-1 if v is None else index[v] for v in seq), dtype=np.int64, count=len(seq))
    if raw.ndim != 1:
        raise EncodingError(f"{where}: categorical codes must be 1-D, got shape {raw.shape}")
    if raw.size:
        bad = np.flatnonzero((raw < -1) | (raw >= len(names)))
        if bad.size:
            i = int(bad[0])
            raise EncodingError(
                f"{where}: code {int(raw[i])} at sample {i} is outside [-1, {len(names)}) "
                f"for {len(names)} class names (§6.5)"
            )
    return _cast(raw, layout.dtype, where)


def _bytes(value: Any, where: str) -> Batch:
    """Concatenated uint8 values and lengths of a bytes feature (§6.6)."""
    items = to_list(value)
    bad = [type(v).__name__ for v in items if not is_bytes(v)]
    if bad:
        raise EncodingError(f"{where}: a bytes feature takes bytes values, got {sorted(set(bad))}")
    blobs = [bytes(v) for v in items]
    lengths = np.fromiter((len(b) for b in blobs), dtype=np.int64, count=len(blobs))
    return Batch(len(blobs), np.frombuffer(b"".join(blobs), dtype=np.uint8).copy(), lengths)


def _ragged(layout: Layout, value: Any, where: str) -> Batch:
    """Concatenated values, lengths and (samples varying in several axes) shapes of a ragged feature (§6.3)."""
    assert layout.dtype is not None
    arrays = [np.asarray(v) for v in to_list(value)] if not isinstance(value, np.ndarray) else list(value)
    n = len(arrays)
    if layout.shapes_ndim is None:
        for i, a in enumerate(arrays):
            if a.ndim < 1 or a.shape[1:] != layout.sample_shape:
                raise EncodingError(
                    f"{where}: sample {i} has shape {a.shape}; rows of this ragged feature have shape "
                    f"{layout.sample_shape} (samples that vary in several axes need sample_ndim, §6.3)"
                )
        lengths = np.fromiter((a.shape[0] for a in arrays), dtype=np.int64, count=n)
        cast = [_numeric(a, layout, where) for a in arrays]
        values = np.concatenate(cast) if cast else np.empty((0, *layout.sample_shape), layout.dtype)
        return Batch(n, values.astype(layout.dtype, copy=False), lengths)
    for i, a in enumerate(arrays):
        if a.ndim != layout.shapes_ndim:
            raise EncodingError(
                f"{where}: sample {i} has {a.ndim} axes; this ragged feature's samples have {layout.shapes_ndim}"
            )
    shapes = np.array([a.shape for a in arrays], dtype=np.int64).reshape(n, layout.shapes_ndim)
    lengths = np.fromiter((a.size for a in arrays), dtype=np.int64, count=n)
    flat = [_numeric(a, layout, where).reshape(-1) for a in arrays]
    values = np.concatenate(flat) if flat else np.empty((0,), layout.dtype)
    return Batch(n, values.astype(layout.dtype, copy=False), lengths, shapes)
