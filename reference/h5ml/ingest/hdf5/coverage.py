"""Every object of the sources accounted for by a plan: used, or left out with a reason (nothing dropped silently).

The objects of a source are its datasets (``/train/x``) and its attributes
(``/train/x@units``, ``/@description`` for the root's). A plan accounts for
an object when:

- a ``rows`` part reads the dataset, or a ``records`` part matches it (the
  record itself, or the member it reads, in every matched record);
- it is where a feature's class names came from (``class_names_from``
  ``file:/path``), or an attribute kept as a feature's user attribute
  (``attrs``), as a feature (a part's ``attribute``) or as root metadata;
- a ``left_out`` entry matches it. Paths in parts and ``left_out`` are
  patterns: ``*`` matches one level (``/*/points``), ``**`` any number of
  levels (``**@MATLAB_class``), ``@name`` an attribute.

:func:`unaccounted` lists what a plan forgets; :func:`h5ml.ingest.hdf5.check.check_plan`
refuses such a plan, and the proposal puts everything it does not use in
``left_out``. Attributes that only describe HDF5's or MATLAB's own
bookkeeping (:data:`BOOKKEEPING_ATTRS`) are left out by one entry each.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping
from typing import Final

from h5ml.ingest.hdf5.inventory import Inventory
from h5ml.ingest.hdf5.plan import Plan

__all__ = ["BOOKKEEPING_ATTRS", "matches", "objects", "unaccounted"]

#: Attributes HDF5 dimension scales, netCDF and MATLAB write to describe storage, not data; read, never kept.
BOOKKEEPING_ATTRS: Final[Mapping[str, str]] = {
    "MATLAB_class": "MATLAB's type tag of the variable (read to decode it)",
    "MATLAB_empty": "MATLAB's mark of an empty array",
    "MATLAB_int_decode": "MATLAB's character-encoding tag (read to decode)",
    "MATLAB_fields": "MATLAB's list of a struct's fields",
    "H5PATH": "MATLAB's record of where a cell's value belongs",
    "DIMENSION_LIST": "HDF5 dimension-scale bookkeeping (references)",
    "REFERENCE_LIST": "HDF5 dimension-scale bookkeeping (references)",
    "DIMENSION_LABELS": "HDF5 dimension labels (axis names)",
    "CLASS": "HDF5 dimension-scale bookkeeping",
    "NAME": "HDF5 dimension-scale name",
    "_Netcdf4Dimid": "netCDF-4 bookkeeping",
    "_Netcdf4Coordinates": "netCDF-4 bookkeeping",
}


@functools.lru_cache(maxsize=4096)
def _regex(pattern: str) -> re.Pattern[str]:
    out = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/@]*")
            i += 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out) + r"\Z")


def matches(pattern: str, key: str) -> bool:
    """Whether an object key (``/a/b`` or ``/a/b@attr``) matches a plan pattern (``*`` one level, ``**`` any).

    Parameters
    ----------
    pattern
        A plan path: ``*`` matches one level, ``**`` any number, ``@name`` an attribute.
    key
        An object key of :func:`objects`.

    Returns
    -------
    bool
    """
    return _regex(pattern).match(key) is not None


def objects(inventory: Inventory) -> list[str]:
    """The keys of every dataset and every attribute of a source, in walk order (``/x``, ``/x@units``, ``/@name``).

    Parameters
    ----------
    inventory
        A walked source.

    Returns
    -------
    list of str
        ``/path`` for each dataset, ``/path@name`` for each attribute (``/@name`` at the root).
    """
    keys: list[str] = []
    for path, node in inventory.nodes.items():
        if node.kind == "dataset":
            keys.append(path)
        base = "" if path == "/" else path
        keys.extend(f"{base or '/'}@{name}" for name in node.attrs)
    return keys


def _used(plan: Plan, source: str) -> list[str]:
    """Patterns of the objects that a plan's features read from ``source`` (datasets and attributes)."""
    used: list[str] = []
    for split in plan.splits:
        for feature in split.features:
            if feature.class_names_from and feature.class_names_from.startswith(source + ":"):
                used.append(feature.class_names_from[len(source) + 1 :])
            kept = [key.removeprefix("source:") for key in feature.attrs]
            for part in feature.parts:
                if part.source != source:
                    continue
                if part.kind == "rows":
                    used.append(part.path)
                    if part.shapes:
                        used.append(part.shapes)
                    used.extend(f"{part.path}@{key}" for key in kept)
                elif part.kind == "records":
                    target = part.path if part.member is None else f"{part.path}/{part.member}"
                    if part.attribute is None:
                        used.append(target)
                        used.extend(f"{target}@{key}" for key in kept)
                    else:
                        used.append(f"{target}@{part.attribute}")
    return used


def _root_keys(plan: Plan, source: str) -> list[str]:
    """Patterns of the root attributes of ``source`` that the plan keeps as root metadata (§4.7 names)."""
    stem = source.rsplit("/", 1)[-1].split(".", 1)[0]
    out = []
    for key in plan.metadata:
        for prefix in (f"{stem}:", "source:", ""):
            if key.startswith(prefix) and key != prefix:
                out.append(f"/@{key[len(prefix) :]}")
    return out


def unaccounted(plan: Plan, inventories: Iterable[Inventory]) -> list[tuple[str, str]]:
    """``(source, object key)`` of every dataset and attribute that the plan neither uses nor leaves out.

    Parameters
    ----------
    plan
        A proposed or edited plan.
    inventories
        The walked sources the plan names.

    Returns
    -------
    list of (str, str)
        In source and walk order; empty when the plan accounts for everything.
    """
    missing: list[tuple[str, str]] = []
    for inventory in inventories:
        source = inventory.source
        left = [item.path for item in plan.left_out if item.source in (source, "*")]
        patterns = _used(plan, source) + left + _root_keys(plan, source)
        patterns += [f"**@{name}" for name in BOOKKEEPING_ATTRS]
        missing.extend((source, key) for key in objects(inventory) if not any(matches(p, key) for p in patterns))
    return missing
