"""Checked integer arguments of the sampling functions: counts, seeds, epochs, ranks.

Every function of :mod:`h5ml.sampling` that takes a count checks it here, so
that a wrong value fails at once with its name, before any order is built.
"""

from __future__ import annotations

import operator
from typing import Any

__all__ = ["count"]


def count(value: Any, name: str, minimum: int) -> int:
    """Return ``value`` as an ``int`` at least ``minimum``.

    Parameters
    ----------
    value
        An integer (a Python ``int`` or a numpy integer; not a ``bool``).
    name
        The argument's name, for the message.
    minimum
        The smallest value accepted.

    Returns
    -------
    int
        ``value`` as a Python ``int``.

    Raises
    ------
    TypeError
        If ``value`` is not an integer, or is a ``bool``.
    ValueError
        If ``value`` is below ``minimum``.
    """
    if isinstance(value, bool):
        raise TypeError(f"{name} must be an integer, got the bool {value!r}")
    try:
        number = operator.index(value)
    except TypeError:
        raise TypeError(f"{name} must be an integer, got {type(value).__name__} {value!r}") from None
    if number < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {number}")
    return number
