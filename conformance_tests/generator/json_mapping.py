"""Values as JSON: the mapping of SPEC Appendix B (decoded content) and of §4.6 (metadata attributes)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from conformance_tests.generator.datatypes import HType
from conformance_tests.generator.errors import RecipeError
from conformance_tests.generator.values import nested_map

__all__ = ["Unmappable", "numbers_json", "stored_text"]


def _float_json(value: float) -> float | str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    return value


def numbers_json(arr: np.ndarray, *, as_bool: bool = False, wide_as_text: bool = True) -> Any:
    """Appendix B: booleans as true/false, 64-bit integers as decimal strings, floats widened to float64.

    With ``wide_as_text=False`` (SPEC §4.6 metadata) every integer stays a JSON number.
    """
    if as_bool or arr.dtype.kind == "b":
        return arr.astype(bool).tolist()
    if arr.dtype.kind in "iu":
        if arr.dtype.itemsize == 8 and wide_as_text:
            return nested_map(arr.tolist(), str)
        return arr.astype(np.int64).tolist() if arr.dtype.kind == "i" or arr.dtype.itemsize < 8 else arr.tolist()
    if arr.dtype.kind == "f":
        return nested_map(arr.astype(np.float64).tolist(), _float_json)
    raise RecipeError(f"no JSON mapping for dtype {arr.dtype}")


class Unmappable(Exception):
    """A value that SPEC §4.6 gives no JSON form (bytes that are not UTF-8, a null dataspace, a forbidden type)."""


def stored_text(raw: bytes, htype: HType) -> str:
    """The text a reader returns for one stored string: the declared padding of fixed-length strings removed (§3.4)."""
    raw = htype.unpad(raw)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise Unmappable(f"{raw!r} is not UTF-8") from exc
