"""Recipe values as numpy arrays and bytes: nested lists, generators, strings, deterministic bytes.

A recipe gives values as (nested) JSON lists, scalars or small generator
objects (README.md, "Values"); floats may be "NaN", "Infinity" and
"-Infinity". These helpers turn them into numpy arrays of a given dtype and
strings into their stored bytes.
"""

from __future__ import annotations

import hashlib
import math
import struct
from collections.abc import Callable
from typing import Any

import numpy as np

from conformance_tests.generator.errors import RecipeError

__all__ = [
    "deterministic_bytes",
    "flatten",
    "nested_map",
    "numeric_array",
    "scalar",
    "shape_of",
    "string_leaves",
    "text_bytes",
]

_NONFINITE = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


def nested_map(value: Any, func: Callable[[Any], Any]) -> Any:
    """``func`` applied to every leaf of a (nested) list, keeping its nesting."""
    if isinstance(value, list):
        return [nested_map(v, func) for v in value]
    return func(value)


def scalar(value: Any, kind: str) -> Any:
    """One JSON value as a Python number of the numpy kind ``kind`` (floats accept "NaN", "Infinity", "-Infinity")."""
    if kind == "f":
        if isinstance(value, str):
            if value not in _NONFINITE:
                raise RecipeError(f"{value!r} is not a number")
            return _NONFINITE[value]
        return float(value)
    if kind in "iu":
        if isinstance(value, bool) or not isinstance(value, (int, str)):
            raise RecipeError(f"{value!r} is not an integer")
        return int(value)
    if kind == "b":
        if not isinstance(value, bool):
            raise RecipeError(f"{value!r} is not a boolean")
        return value
    raise RecipeError(f"no JSON form for numpy kind {kind!r}")


def numeric_array(spec: Any, dtype: np.dtype[Any]) -> np.ndarray:
    """The array a recipe's numeric value spec describes, in ``dtype``.

    ``spec`` is a (nested) JSON list, a scalar, or a generator object:
    ``{"fill": v, "shape": [...]}``, ``{"arange": {"start": a, "step": s}, "shape": [...]}``
    (element ``i`` in C order is ``a + i * s``, computed in float64 or int64, then cast) or
    ``{"tile": [v0, v1, ...], "shape": [...]}`` (element ``i`` in C order is ``v[i % len(v)]``:
    data that compresses).
    """
    if isinstance(spec, dict):
        if "shape" not in spec:
            raise RecipeError(f"generator {spec} needs a 'shape'")
        shape = tuple(int(s) for s in spec["shape"])
        if "fill" in spec:
            return np.full(shape, scalar(spec["fill"], dtype.kind), dtype=dtype)
        if "tile" in spec:
            if not isinstance(spec["tile"], list) or not spec["tile"]:
                raise RecipeError(f"generator {spec}: 'tile' is a non-empty list of values")
            pattern = np.array([scalar(v, dtype.kind) for v in spec["tile"]], dtype=dtype)
            return np.resize(pattern, shape)
        if "arange" in spec:
            start, step = spec["arange"].get("start", 0), spec["arange"].get("step", 1)
            count = math.prod(shape)
            if dtype.kind == "f":
                floats = float(start) + np.arange(count, dtype=np.float64) * float(step)
                return floats.astype(dtype).reshape(shape)
            ints = int(start) + np.arange(count, dtype=np.int64) * int(step)
            return ints.astype(dtype).reshape(shape)
        raise RecipeError(f"unknown value generator {spec}")
    return np.array(nested_map(spec, lambda v: scalar(v, dtype.kind)), dtype=dtype)


def text_bytes(spec: Any) -> bytes:
    """The bytes of one string value: a JSON string (UTF-8), ``{"hex": ...}`` or ``{"repeat": s, "times": n}``."""
    if isinstance(spec, str):
        return spec.encode("utf-8")
    if isinstance(spec, dict) and "hex" in spec:
        return bytes.fromhex(spec["hex"])
    if isinstance(spec, dict) and "repeat" in spec:
        return (str(spec["repeat"]) * int(spec["times"])).encode("utf-8")
    raise RecipeError(f"{spec!r} is not a string value")


def string_leaves(spec: Any) -> Any:
    """A (nested) list of string value specs as nested lists of bytes.

    ``{"numbered": prefix, "count": n}`` stands for the list ``[prefix0, ..., prefix{n-1}]``.
    """
    if isinstance(spec, dict) and "numbered" in spec:
        return [f"{spec['numbered']}{i}".encode() for i in range(int(spec["count"]))]
    return nested_map(spec, text_bytes)


def shape_of(nested: Any) -> tuple[int, ...]:
    """The shape of a nested list, read along its first entries (``()`` for a scalar)."""
    shape: list[int] = []
    while isinstance(nested, list):
        shape.append(len(nested))
        nested = nested[0] if nested else None
    return tuple(shape)


def flatten(nested: Any) -> list[Any]:
    """The leaves of a nested list in C order."""
    if isinstance(nested, list):
        return [leaf for item in nested for leaf in flatten(item)]
    return [nested]


def deterministic_bytes(seed: int, size: int) -> bytes:
    """``size`` pseudo-random bytes from SHA-256 in counter mode: the same on every platform and numpy version."""
    out = bytearray()
    counter = 0
    while len(out) < size:
        out += hashlib.sha256(struct.pack("<QQ", seed, counter)).digest()
        counter += 1
    return bytes(out[:size])
