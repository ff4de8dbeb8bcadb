"""Reading the values a plan's parts name: blocks of rows, records, attributes, MATLAB cells (§6).

:func:`read_rows` reads rows ``[a, b)`` of a ``rows`` part with the sample
axis first, whatever the dataset's axis order (MATLAB's column-major
variables are reversed, §3 of the plan's ``transpose``); :func:`read_record`
reads one record's value. Both decode what the source stores specially:
MATLAB ``char`` and ``cell`` variables, variable-length rows reshaped by a
``shapes`` dataset (Fuel), strings (UTF-8, or Latin-1 bytes refused).
:func:`finish_value` applies a feature's ``squeeze`` and ``one_hot``.
"""

from __future__ import annotations

from typing import Any

import h5py
import numpy as np

from h5ml.ingest.hdf5.handles import checked_object
from h5ml.ingest.hdf5.labels import one_hot_codes
from h5ml.ingest.hdf5.matlab import cell_values, char_strings, decode_matlab
from h5ml.ingest.hdf5.plan import Feature, Part

__all__ = ["finish_value", "part_rows", "read_record", "read_rows"]


def part_rows(part: Part, node_shape: tuple[int, ...]) -> tuple[int, int]:
    """``(start, stop)`` of a rows part in its dataset (the sample axis counted in the part's axis order).

    Parameters
    ----------
    part
        A rows part.
    node_shape
        Its dataset's HDF5 shape.

    Returns
    -------
    tuple of int
    """
    shape = tuple(reversed(node_shape)) if part.transpose else node_shape
    n = shape[part.sample_axis] if shape else 0
    start = 0 if part.start is None else part.start
    stop = n if part.stop is None else part.stop
    return start, stop


def _hdf5_axis(part: Part, ndim: int) -> int:
    return ndim - 1 - part.sample_axis if part.transpose else part.sample_axis


def read_rows(
    f: h5py.File, part: Part, a: int, b: int, where: str, *, allow_external: bool = False
) -> list[Any] | np.ndarray:
    """Rows ``[a, b)`` of a rows part (absolute rows of the dataset), sample axis first.

    Parameters
    ----------
    f
        The open source.
    part
        A ``rows`` part.
    a, b
        The rows, as row numbers of the dataset (the part's ``start`` included).
    where
        ``file:/path`` for messages.
    allow_external
        The source was walked with ``allow_external=True`` (else each dataset's storage is checked first, §10.1).

    Returns
    -------
    numpy.ndarray or list
        ``(b - a, ...)`` numbers; a list of str for strings and MATLAB
        char/cell variables; a list of arrays for variable-length rows.

    Raises
    ------
    h5ml.ForbiddenStorageError
        If the dataset (or its ``shapes``, or a cell's target) stores its data in other files (§3.6, §10.1).
    """
    dataset = checked_object(f, part.source, part.path, allow_external)
    axis = _hdf5_axis(part, dataset.ndim)
    index = tuple(slice(a, b) if i == axis else slice(None) for i in range(dataset.ndim))
    if h5py.check_string_dtype(dataset.dtype) is not None:
        strings = np.asarray(dataset.asstr()[index], dtype=object)
        if part.transpose:
            strings = strings.transpose()
        strings = np.moveaxis(strings, part.sample_axis, 0)
        if strings.ndim != 1:
            raise ValueError(f"strings of shape {dataset.shape}: a string feature takes one string per sample")
        return [str(v) for v in strings]
    block = np.asarray(dataset[index])
    if part.transpose:
        block = block.transpose()
    if part.sample_axis:
        block = np.moveaxis(block, part.sample_axis, 0)
    if part.matlab_class == "char":
        return char_strings(block)
    if part.matlab_class == "cell":
        values = cell_values(f, block, where, allow_external=allow_external)
        if not all(isinstance(v, str) for v in values):
            raise ValueError("a cell that holds numbers, not a string: h5ml reads cell arrays of strings")
        return values
    if h5py.check_vlen_dtype(dataset.dtype) is not None:
        rows = [np.asarray(v) for v in block]
        if part.shapes is not None:
            shapes = np.asarray(checked_object(f, part.source, part.shapes, allow_external)[a:b])
            rows = [r.reshape(tuple(int(n) for n in s)) for r, s in zip(rows, shapes, strict=True)]
        return rows
    return decode_matlab(np.asarray(block), part.matlab_class) if part.transpose else np.asarray(block)


def read_record(f: h5py.File, part: Part, record: str, *, allow_external: bool = False) -> Any:
    """The value of one record (its HDF5 path ``record``) for a records part.

    Parameters
    ----------
    f
        The open source.
    part
        A records part.
    record
        The record's HDF5 path.
    allow_external
        The source was walked with ``allow_external=True`` (else the record's storage is checked first, §10.1).

    Returns
    -------
    str, number, or numpy.ndarray

    Raises
    ------
    KeyError
        If the record has no such member or attribute (the caller names the sample).
    h5ml.ForbiddenStorageError
        If the record stores its data in other files, or is reached through an external link (§3.6, §10.1).
    """
    obj = checked_object(f, part.source, record if part.member is None else f"{record}/{part.member}", allow_external)
    if part.attribute is not None:
        if part.attribute not in obj.attrs:
            raise KeyError(f"{obj.name}@{part.attribute}")
        value = obj.attrs[part.attribute]
        if isinstance(value, bytes):
            return value.decode("utf-8")
        return value.item() if isinstance(value, np.generic) else value
    if not isinstance(obj, h5py.Dataset):
        raise KeyError(f"{obj.name} is a group, not a dataset")
    if h5py.check_string_dtype(obj.dtype) is not None:
        if obj.shape != ():
            raise ValueError(
                f"{obj.name} holds strings of shape {obj.shape}; a string feature takes one string per sample"
            )
        return str(obj.asstr()[()])
    return np.asarray(obj[()])


def finish_value(feature: Feature, value: Any, where: str) -> Any:
    """A sample's value after the feature's ``squeeze`` and ``one_hot``.

    Parameters
    ----------
    feature
        The plan feature.
    value
        The value as read.
    where
        ``file:/path[row]``, for messages.

    Returns
    -------
    numpy.ndarray, numpy.int64, or the value as given

    Raises
    ------
    ValueError
        If a one-hot row is not one-hot, or a squeezed value had an axis longer than 1.
    """
    if feature.squeeze:
        array = np.asarray(value)
        if array.size != 1:
            raise ValueError(f"{where}: squeeze expects one value per sample, got shape {array.shape}")
        value = array.reshape(())
    if feature.one_hot:
        codes, bad = one_hot_codes(np.asarray(value).reshape(1, -1))
        if bad:
            raise ValueError(f"{where}: {np.asarray(value).tolist()} is not one-hot (exactly one 1, the rest 0)")
        value = np.int64(codes[0])
    return value
