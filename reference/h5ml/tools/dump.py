"""Decoded content of an h5ml file as JSON (SPEC.md Appendix B, ``h5ml dump``).

The document has the form::

    {"format_version": "1.0",
     "metadata": {root attributes, mapped as §4.6 says},
     "splits": {split: {"num_samples": N,   (splits and features sorted by name)
                        "features": {feature: {"encoding": ..., "dtype": ..., "values": [...], ...}}}}}

Each feature carries ``encoding``, ``dtype`` (the numpy name of the logical
type: ``"float32"``, ``"bool"``, ``"str"`` for strings, ``"bytes"`` for
bytes, the stored ``codes`` type for categorical), ``sample_shape`` (dense only),
``values`` (one entry per sample), and ``class_names`` (categorical),
``media_type`` (bytes, when set) or ``shapes`` (ragged with per-sample shapes).

Values map to JSON as follows (Appendix B):

- floats (float16/32/64) as the exact float64 value they widen to, written
  as Python's shortest round-tripping ``repr``; NaN, +inf and -inf as the
  strings ``"NaN"``, ``"Infinity"`` and ``"-Infinity"``;
- 64-bit integers (int64, uint64) as strings of decimal digits, since JSON
  numbers lose precision above 2**53; narrower integers as numbers;
- booleans as ``true``/``false``; strings as JSON strings;
- ``bytes`` samples as standard base64 text with padding;
- dense samples as nested lists of their sample shape; ragged samples as a
  nested list each (reshaped to its own shape when the feature has shapes);
- categorical samples as their integer codes (``-1`` = missing), as numbers.

:func:`from_json_values` inverts the mapping for one feature.
"""

from __future__ import annotations

import base64
import math
from pathlib import Path
from typing import Any, Final

import numpy as np

__all__ = [
    "attribute_json",
    "dtype_name",
    "feature_document",
    "from_json_scalar",
    "from_json_values",
    "json_values",
    "to_json_document",
]

_NON_FINITE: Final = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


def _float_json(value: float) -> float | str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    return value


def _map_nested(obj: Any, func: Any) -> Any:
    if isinstance(obj, list):
        return [_map_nested(item, func) for item in obj]
    return func(obj)


def json_values(array: np.ndarray) -> list[Any] | Any:
    """Map a numeric, boolean or string array to JSON values (Appendix B).

    Parameters
    ----------
    array
        Any shape; dtype a bool, integer, float16/32/64 or string (``str``,
        ``bytes`` holding UTF-8, or object holding ``str``) type.

    Returns
    -------
    list or scalar
        Nested lists of the array's shape (a scalar for a 0-d array): floats
        as Python floats of their exact float64 value or ``"NaN"``,
        ``"Infinity"``, ``"-Infinity"``; 64-bit integers as decimal strings;
        other integers as ``int``; bools as ``bool``; strings as ``str``.

    Raises
    ------
    TypeError
        For complex, structured or other dtypes outside the storage profile (§3.2).
    """
    kind, size = array.dtype.kind, array.dtype.itemsize
    if kind == "b":
        return array.tolist()
    if kind in "iu":
        if size == 8:
            return _map_nested(array.tolist(), str)
        return array.astype(np.int64).tolist()
    if kind == "f":
        widened = array.astype(np.float64)
        values = widened.tolist()
        if np.isfinite(widened).all():
            return values
        return _map_nested(values, _float_json)
    if kind in "USO":
        return _map_nested(array.tolist(), _as_text)
    raise TypeError(f"dtype {array.dtype} has no JSON mapping (Appendix B); it is outside the storage profile (§3.2)")


def _as_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, (bytes, np.bytes_)):
        return bytes(value).decode("utf-8")
    raise TypeError(f"expected a string value, got {type(value).__name__}")


def from_json_scalar(value: Any, dtype: np.dtype[Any]) -> Any:
    """Invert the mapping of :func:`json_values` for one value.

    Parameters
    ----------
    value
        A JSON value as written by :func:`json_values`.
    dtype
        The numpy dtype the value belongs to.

    Returns
    -------
    object
        A value that numpy converts to ``dtype`` exactly: ``float`` (NaN and
        infinities from their strings), ``int`` (64-bit from decimal
        strings), ``bool`` or ``str``.
    """
    if dtype.kind == "f":
        return _NON_FINITE[value] if isinstance(value, str) else float(value)
    if dtype.kind in "iu":
        return int(value)
    if dtype.kind == "b":
        return bool(value)
    return value


def from_json_values(feature: dict[str, Any]) -> np.ndarray | list[Any]:
    """Decode the ``values`` of one feature entry of a dump document (Appendix B).

    Parameters
    ----------
    feature
        One entry of ``document["splits"][split]["features"]``.

    Returns
    -------
    numpy.ndarray or list
        dense: an array of shape ``(N, *sample_shape)`` and the entry's dtype;
        string: an array of ``str`` objects (N,); categorical: int64 codes
        (N,); bytes: a list of ``bytes``; ragged: a list of arrays, one per
        sample, in the entry's dtype, shaped by ``shapes`` when present. Without
        ``shapes`` an empty sample is written ``[]``, which does not say its
        fixed axes: it gets those of the first non-empty sample.

    Raises
    ------
    KeyError, ValueError
        If the entry lacks a member or holds a value of the wrong form.
    """
    encoding = feature["encoding"]
    values = feature["values"]
    if encoding == "bytes":
        return [base64.b64decode(v, validate=True) for v in values]
    if encoding == "string":
        return np.array(values, dtype=object).reshape(len(values))
    if encoding == "categorical":
        return np.array([int(v) for v in values], dtype=np.int64)
    dtype = np.dtype(feature["dtype"])
    if encoding == "dense":
        shape = (len(values), *feature["sample_shape"])
        flat = np.array(values, dtype=object).reshape(-1)
        return np.array([from_json_scalar(v, dtype) for v in flat], dtype=dtype).reshape(shape)
    if encoding == "ragged":
        samples = []
        for sample in values:
            nested = np.array(sample, dtype=object)
            decoded = [from_json_scalar(v, dtype) for v in nested.reshape(-1)]
            samples.append(np.array(decoded, dtype=dtype).reshape(nested.shape))
        if "shapes" in feature:
            return [a.reshape(shape) for a, shape in zip(samples, feature["shapes"], strict=True)]
        inner = next((a.shape[1:] for a in samples if a.size), ())
        return [a if a.size else a.reshape((0, *inner)) for a in samples]
    raise ValueError(f"unknown encoding {encoding!r} (§6)")


def dtype_name(dataset: Any, feature: Any) -> str:
    """Return the ``dtype`` name Appendix B gives a feature.

    Parameters
    ----------
    dataset
        The open :class:`h5ml.reader.dataset.Dataset` that holds the feature.
    feature
        A reader feature (:class:`h5ml.reader.Feature`).

    Returns
    -------
    str
        ``"str"`` for string features, ``"bytes"`` for bytes features, the
        numpy name of the stored ``codes`` type for categorical features (such
        as ``"int8"``), else the numpy name of the values' type (``"float32"``,
        ``"bool"`` for §3.3 booleans).
    """
    if feature.encoding == "string":
        return "str"
    if feature.encoding == "bytes":
        return "bytes"
    if feature.encoding == "categorical":
        return str(dataset.h5_node(f"{feature.hdf5_path}/codes").dtype.name)
    return str(np.dtype(feature.dtype).name)


def attribute_json(value: Any) -> Any:
    """Map an attribute value read by :func:`h5ml.spec.attrs.read_attr` to JSON (§4.6).

    Parameters
    ----------
    value
        ``str``, ``int``, ``float``, ``bool`` or a (nested) list of those.

    Returns
    -------
    object
        The same value with NaN, +inf and -inf replaced by ``"NaN"``,
        ``"Infinity"`` and ``"-Infinity"`` (in lists too), so that strict JSON
        writers accept it.
    """
    if isinstance(value, float):
        return _float_json(value)
    if isinstance(value, list):
        return [attribute_json(v) for v in value]
    return value


def feature_document(dataset: Any, feature: Any, samples: int | None = None) -> dict[str, Any]:
    """Return the Appendix B entry of one feature: its type, its values and its extra members.

    Parameters
    ----------
    dataset
        The open :class:`h5ml.reader.dataset.Dataset` that holds the feature.
    feature
        A reader feature of that dataset.
    samples
        Only the first ``samples`` samples (None: every sample).

    Returns
    -------
    dict
        ``encoding``, ``dtype``, ``sample_shape`` (dense), ``values`` (one per
        sample, or per sample shown), ``class_names`` (categorical), ``media_type`` (bytes, when
        set), ``shapes`` (ragged with shapes).

    Raises
    ------
    H5MLError
        Whatever the reader raises for data it cannot decode.
    """
    encoding = feature.encoding
    entry: dict[str, Any] = {"encoding": encoding, "dtype": dtype_name(dataset, feature)}
    values = feature.read(slice(None, samples))
    if encoding == "dense":
        entry["sample_shape"] = [int(d) for d in feature.sample_shape]
        entry["values"] = json_values(values)
    elif encoding == "string":
        entry["values"] = [_as_text(v) for v in values.tolist()]
    elif encoding == "categorical":
        entry["class_names"] = list(feature.class_names)
        entry["values"] = [int(v) for v in values.tolist()]
    elif encoding == "bytes":
        if feature.media_type is not None:
            entry["media_type"] = feature.media_type
        entry["values"] = [base64.b64encode(v).decode("ascii") for v in values]
    elif encoding == "ragged":
        if "shapes" in dataset.h5_node(feature.hdf5_path):
            entry["shapes"] = [[int(d) for d in sample.shape] for sample in values]
        entry["values"] = [json_values(sample) for sample in values]
    else:  # pragma: no cover - the reader knows no other encoding
        raise ValueError(f"{feature.path}: {feature.hdf5_path} has the unknown encoding {encoding!r} (§6)")
    return entry


def to_json_document(
    path: str | Path, split: str | None = None, feature: str | None = None, samples: int | None = None
) -> dict[str, Any]:
    """Read an h5ml file and return its decoded content as a JSON-able dict (Appendix B).

    Parameters
    ----------
    path
        The h5ml file; it is read through :func:`h5ml.open`.
    split
        Only this split (default: every split, in file order).
    feature
        Only this feature, in each selected split that has it (default: every feature).
    samples
        Only the first ``samples`` samples of each split (default: every
        sample); each split then also has ``samples_shown``, the number of
        values each of its features lists.

    Returns
    -------
    dict
        The document described in the module docstring. ``format_version``
        is the file's; ``metadata`` holds every root attribute (§4.6). It
        holds no NaN or infinite float, so ``json.dumps(..., allow_nan=False)``
        writes it.

    Raises
    ------
    ValueError
        If ``samples`` is negative.
    SplitNotFoundError
        If ``split`` is not in the file.
    FeatureNotFoundError
        If ``feature`` is in none of the selected splits.
    UnsupportedEncodingVersionError
        If a feature to dump has an ``encoding_version`` of another MAJOR
        (SPEC §6.1-R7): without ``feature`` it is refused, never left out.
    H5MLError
        Whatever :func:`h5ml.open` raises for a file it refuses, or the reader
        for data it cannot decode (a damaged feature too, when every feature
        is dumped).
    """
    from h5ml.errors import FeatureNotFoundError
    from h5ml.reader.opening import open_file as open_dataset

    if samples is not None and samples < 0:
        raise ValueError(f"samples must be >= 0 or None, got {samples}")
    with open_dataset(path) as ds:
        chosen = [ds[split]] if split is not None else [ds[name] for name in sorted(ds.every_split())]
        if feature is not None and not any(feature in s.features for s in chosen):
            for s in chosen:
                if split is not None or feature in s.unreadable:
                    s.feature(feature)  # raises the reader's own error for this split (SPEC §6.1-R7 among them)
            listed = ", ".join(repr(s.name) for s in chosen) or "none"
            raise FeatureNotFoundError(
                f"{ds.path}: no split has a feature {feature!r} (splits: {listed})", path=ds.path, hdf5_path="/"
            )
        splits: dict[str, Any] = {}
        for s in chosen:
            # SPEC §6.1-R7: every feature, or a refusal naming the one this reader cannot read; never left out
            names = sorted(s.every_feature()) if feature is None else [n for n in s.features if n == feature]
            if feature is not None and not names:
                continue
            splits[s.name] = {"num_samples": s.num_samples}
            if samples is not None:
                splits[s.name]["samples_shown"] = min(samples, s.num_samples)
            splits[s.name]["features"] = {n: feature_document(ds, s.features[n], samples) for n in names}
        major, minor = ds.format_version
        return {
            "format_version": f"{major}.{minor}",
            "metadata": {k: attribute_json(v) for k, v in sorted(ds.attrs.items())},
            "splits": splits,
        }
