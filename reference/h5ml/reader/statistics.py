"""The statistics a feature stores, as binary64 numbers: :class:`Statistics` (§6.7).

``stats_count``, ``stats_min``, ``stats_max``, ``stats_mean`` and
``stats_std`` may be stored as binary16, binary32 or binary64 in either byte
order, or (as version 1.0 accepted them) as integers (SPEC §6.7-R2). The
reader returns every one of the four real numbers as a Python ``float``
(binary64): floats widened exactly, integers converted to the nearest
binary64 value, ties to even (SPEC §6.7-R4); ``stats_count`` as a Python
``int``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

__all__ = ["STATISTICS_FIELDS", "Statistics", "TypedAttribute", "read_statistics"]

#: Reads one feature attribute checked against types (``Feature._typed_attr``): (name, types, kind, clause) -> value.
TypedAttribute = Callable[[str, tuple[type, ...], str, str], Any]

#: Field of :class:`Statistics` -> the feature attribute that holds it (§6.7).
STATISTICS_FIELDS: Final = {
    "count": "stats_count",
    "min": "stats_min",
    "max": "stats_max",
    "mean": "stats_mean",
    "std": "stats_std",
}


@dataclass(frozen=True)
class Statistics:
    """Summary statistics of a numeric feature, read from its ``stats_*`` attributes (§6.7).

    Obtain it as ``feature.statistics``. Each field is None when the file
    does not store that statistic (a writer leaves out an undefined one,
    and every one of them on a feature it computed none for).

    Attributes
    ----------
    count : int or None
        ``stats_count``: the number of values counted (NaN values left out), >= 0.
    min, max, mean, std : float or None
        ``stats_min``, ``stats_max``, ``stats_mean``, ``stats_std`` (the
        population standard deviation) as binary64 (Python ``float``),
        whatever type the file stores them in: binary16 and binary32 widened
        exactly, integers rounded to the nearest binary64, ties to even
        (SPEC §6.7-R4). Units: those of the feature's values (``units``).
    """

    count: int | None = None
    min: float | None = None
    max: float | None = None
    mean: float | None = None
    std: float | None = None

    def attributes(self) -> dict[str, int | float]:
        """The statistics the file stores, by attribute name (``{"stats_count": 6, "stats_min": 1.0, ...}``).

        Returns
        -------
        dict
            Attribute name (§6.7) -> value, in the order of
            :data:`STATISTICS_FIELDS`; a statistic the file does not store is
            not a key.
        """
        values = {attr: getattr(self, name) for name, attr in STATISTICS_FIELDS.items()}
        return {attr: value for attr, value in values.items() if value is not None}


def read_statistics(typed_attr: TypedAttribute) -> Statistics:
    """Read a feature's ``stats_*`` attributes as :class:`Statistics` (§6.7).

    Parameters
    ----------
    typed_attr
        Reads one attribute of the feature, raising
        :class:`~h5ml.errors.InvalidFileError` naming it when it has none of
        the types given (:meth:`h5ml.reader.feature.Feature._typed_attr`).

    Returns
    -------
    Statistics
        ``count`` as int, ``min``, ``max``, ``mean``, ``std`` as Python
        floats, whatever type the file stores them in (SPEC §6.7-R4:
        integers and binary16/32 read as binary64); None for each one the
        file does not store.

    Raises
    ------
    InvalidFileError
        If one is not a number, or ``stats_count`` not an integer >= 0
        (E117, §6.7); the samples are not affected.
    """
    count = typed_attr("stats_count", (int,), "an integer >= 0", "§6.7")
    if count is not None and count < 0:
        typed_attr("stats_count", (), "an integer >= 0", "§6.7")  # no type fits: raises, naming the attribute
    real: list[float | None] = []
    for attr in list(STATISTICS_FIELDS.values())[1:]:  # stats_min, stats_max, stats_mean, stats_std
        value = typed_attr(attr, (int, float), "a number", "§6.7")
        # SPEC §6.7-R4: binary64 whatever the stored type (float() of an int rounds to nearest, ties to even)
        real.append(None if value is None else float(value))
    return Statistics(count, *real)
