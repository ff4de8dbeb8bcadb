"""Names in the sources and what they become: splits, features, sample order and class counts (§5.1, §5.2, §6.5).

Every converter maps the split names it meets (folder names, array
suffixes, a table's split column, a Hugging Face split) with
:func:`standard_split_name`, orders splits with :func:`split_order` and ids
with :func:`natural_key`, refuses names that break §5.1.1 with
:func:`name_problem`, and reads the tutorials' number of classes (an .npz
scalar, an HDF5 root attribute) with :func:`class_count`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

import numpy as np

from h5ml import spec
from h5ml.errors import IngestError
from h5ml.ingest.options import parameter_error

__all__ = [
    "CLASS_COUNT_NAMES",
    "DEFAULT_SPLIT",
    "NAMING_RULE",
    "SPLIT_SUFFIXES",
    "class_count",
    "name_list",
    "name_problem",
    "natural_key",
    "split_array_name",
    "split_feature_suffix",
    "split_order",
    "standard_split_name",
]

#: Split names (and array-name suffixes, :func:`split_array_name`) recognised in sources, and the standard
#: split each maps to (§5.1): the standard names, the aliases of §5.1, and ``training``/``testing``.
SPLIT_SUFFIXES: Final[Mapping[str, str]] = {
    **{name: name for name in spec.STANDARD_SPLITS},
    **spec.SPLIT_ALIASES,
    "training": "train",
    "testing": "test",
}
#: The split of samples whose source names none (an array without a split suffix, a table without a split column).
DEFAULT_SPLIT: Final = "train"
#: Names under which the tutorials store a number of classes: a scalar array of an .npz, a root attribute of
#: an HDF5 file. With a number K, ``y`` becomes categorical with class names "0" .. "K-1" (§6.5).
CLASS_COUNT_NAMES: Final = ("nb_classes", "num_classes", "n_classes")
#: The naming rule of splits and features, as the messages quote it (§5.1.1).
NAMING_RULE: Final = (
    "§5.1.1: no '/', no leading '.', '_' or whitespace, no trailing whitespace, at most 255 UTF-8 bytes"
)

_NAME_RE: Final = re.compile(r"^(?P<feature>.+)_(?P<split>" + "|".join(SPLIT_SUFFIXES) + r")$")


def natural_key(text: str) -> tuple[tuple[int, int | str], ...]:
    """Sort key that orders digit runs by value: ``"2" < "10"``, ``"a2" < "a10"`` (ids sorted naturally).

    Parameters
    ----------
    text
        An id, a file name.

    Returns
    -------
    tuple
        ``(0, number)`` for each digit run and ``(1, char)`` for each other character.
    """
    key: list[tuple[int, int | str]] = []
    number = ""
    for char in text:
        if char.isdigit():
            number += char
            continue
        if number:
            key.append((0, int(number)))
            number = ""
        key.append((1, char))
    if number:
        key.append((0, int(number)))
    return tuple(key)


def standard_split_name(name: str) -> str:
    """The standard name of a source split (§5.1): ``valid``/``val``/``dev`` -> ``validation``, ...

    Parameters
    ----------
    name
        A split name of the source.

    Returns
    -------
    str
        ``train``, ``validation`` or ``test`` for their aliases (``training``,
        ``valid``, ``val``, ``dev``, ``eval``, ``testing``); ``name`` otherwise.
    """
    return SPLIT_SUFFIXES.get(name, name)


def split_order(name: str) -> tuple[int, str]:
    """Sort key of split names: the standard splits first, in train/validation/test order, then the others by name.

    Parameters
    ----------
    name
        A split name (already standard, :func:`standard_split_name`).

    Returns
    -------
    tuple
        ``(position among the standard splits or 3, name)``.
    """
    standard = spec.STANDARD_SPLITS
    return (standard.index(name), "") if name in standard else (len(standard), name)


def split_array_name(name: str) -> tuple[str, str]:
    """Map an array name (``.npz``, HDF5 root dataset) to ``(split, feature)``.

    Parameters
    ----------
    name
        The array name, for example ``"x_valid"``.

    Returns
    -------
    tuple of str
        ``(split, feature)``: ``("validation", "x")`` for ``"x_valid"``; names
        without a recognised suffix (see :data:`SPLIT_SUFFIXES`) give
        ``("train", name)``.
    """
    match = _NAME_RE.match(name)
    if match is None:
        return DEFAULT_SPLIT, name
    return SPLIT_SUFFIXES[match.group("split")], match.group("feature")


def split_feature_suffix(name: str) -> tuple[str, str] | None:
    """``(split, feature)`` when ``name`` ends in a split suffix, else None (:func:`split_array_name` without its default).

    Parameters
    ----------
    name
        An array name, such as ``"label_test"``.

    Returns
    -------
    tuple of str or None
        ``("test", "label")``; None for ``"images"``.
    """
    match = _NAME_RE.match(name)
    return None if match is None else (SPLIT_SUFFIXES[match.group("split")], match.group("feature"))


def name_problem(kind: str, name: Any) -> str | None:
    """Why ``name`` cannot name a split or a feature (§5.1.1), or None when it can.

    Parameters
    ----------
    kind
        ``"split"`` or ``"feature"``, for the message.
    name
        The name met in the source.

    Returns
    -------
    str or None
        ``"the <kind> name <name> breaks the naming rule (§5.1.1: ...)"``; the
        caller adds where the name comes from and what to rename.
    """
    if isinstance(name, str) and spec.is_valid_name(name):
        return None
    return f"the {kind} name {name!r} breaks the naming rule ({NAMING_RULE})"


def name_list(parameter: str, value: Any, option: str | None = None) -> list[str] | None:
    """A parameter that lists names (columns, splits, features), checked; None stays None ("all").

    Parameters
    ----------
    parameter
        The parameter, for the message (``"columns"``).
    value
        What was given: a list (or any iterable) of ``str``, or None.
    option
        Its command-line option, when not the parameter's own spelling (see
        :func:`h5ml.ingest.options.parameter_error`).

    Returns
    -------
    list of str or None
        The names, in order.

    Raises
    ------
    h5ml.errors.ParameterError
        If ``value`` is a string (it would be read letter by letter), not
        iterable, or holds something else than strings.
    """
    if value is None:
        return None
    names = None if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__") else list(value)
    if names is None or not all(isinstance(n, str) for n in names):
        hint = f"; write [{value!r}]" if isinstance(value, str) else ""
        raise parameter_error(parameter, f"{parameter} must be a list of names, got {value!r}{hint}", option=option)
    return names


def class_count(
    values: Mapping[str, Any], where: str, what: str, advice: str = "", hdf5_path: str | None = None
) -> tuple[str, int] | None:
    """The tutorials' number of classes K, from values named as in :data:`CLASS_COUNT_NAMES` (§6.5).

    Parameters
    ----------
    values
        Name -> value of the candidates found (the .npz's scalar arrays, the
        HDF5 file's root attributes of those names).
    where
        The source, first in messages (``"data.npz"``, ``"data.h5"``).
    what
        What holds them, for messages (``"the scalar"``, ``"the root attribute"``).
    advice
        Added to the message of a wrong value (what happens without it).
    hdf5_path
        The HDF5 object holding them, for the error (``"/"`` for root attributes).

    Returns
    -------
    tuple or None
        ``(name, K)`` of the first value given, or None when none is.

    Raises
    ------
    h5ml.IngestError
        If a value is not a whole number >= 1 (a 0-d integer or whole float),
        or two values disagree.
    """
    found: dict[str, int] = {}
    for name, value in values.items():
        number = np.asarray(value)
        whole = number.shape == () and number.dtype.kind in "iuf" and bool(number == np.floor(number))
        if not whole or number < 1:
            shown = value.item() if isinstance(value, np.ndarray) and value.ndim == 0 else value
            raise IngestError(
                f"{where}: {what} {name!r} = {shown!r} is not a whole number of classes >= 1; fix it or remove it"
                + (f" ({advice})" if advice else ""),
                path=where,
                hdf5_path=hdf5_path,
            )
        found[name] = int(number)
    if len(set(found.values())) > 1:
        raise IngestError(
            f"{where}: {what}s {found} disagree on the number of classes; keep one", path=where, hdf5_path=hdf5_path
        )
    return next(iter(found.items()), None)
