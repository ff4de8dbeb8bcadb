"""The dtypes audio files are stored in, from their libsndfile subtypes (§3.2, §6.3).

The rules are the table "Stored dtype" of :mod:`h5ml.ingest.audio`: a file
is decoded to the dtype that holds soundfile's decoding exactly, and the
files of one feature share the narrowest dtype that holds all of theirs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

__all__ = ["common_dtype", "full_scale", "subtype_dtype"]

_INT16_SUBTYPES: Final = frozenset({"PCM_S8", "PCM_U8", "PCM_16", "ULAW", "ALAW"})
_INT32_SUBTYPES: Final = frozenset({"PCM_24", "PCM_32"})
_FULL_SCALE: Final = {"int16": "full scale 32768", "int32": "full scale 2**31"}


def subtype_dtype(subtype: str) -> str:
    """The dtype a file of this libsndfile subtype is decoded to (:mod:`h5ml.ingest.audio`, "Stored dtype").

    Parameters
    ----------
    subtype
        ``soundfile.info(path).subtype``, e.g. ``"PCM_16"``, ``"FLOAT"``, ``"VORBIS"``.

    Returns
    -------
    str
        ``"int16"``, ``"int32"``, ``"float32"`` or ``"float64"``: the ``dtype``
        given to ``soundfile.read`` so that the stored values are exactly
        its decoding (lossy and compressed subtypes give ``"float32"``).
    """
    if subtype in _INT16_SUBTYPES:
        return "int16"
    if subtype in _INT32_SUBTYPES:
        return "int32"
    if subtype == "DOUBLE":
        return "float64"
    return "float32"


def common_dtype(dtypes: Sequence[str]) -> str:
    """One dtype that holds soundfile's decoding of every file of a feature exactly.

    Parameters
    ----------
    dtypes
        The :func:`subtype_dtype` of each file (at least one).

    Returns
    -------
    str
        The dtype when all agree; ``"int32"`` for int16 with int32;
        ``"float32"`` for int16 with float32; ``"float64"`` for any other mix.

    Raises
    ------
    ValueError
        If ``dtypes`` is empty (a defect of the caller).
    """
    kinds = set(dtypes)
    if not kinds:
        raise ValueError("common_dtype needs at least one dtype")
    if len(kinds) == 1:
        return kinds.pop()
    if kinds == {"int16", "int32"}:
        return "int32"
    if kinds == {"int16", "float32"}:
        return "float32"
    return "float64"


def full_scale(dtype: str) -> str:
    """The full scale of samples of ``dtype`` as soundfile decodes them, for descriptions (``"full scale 32768"``)."""
    return _FULL_SCALE.get(dtype, "full scale 1.0")
