"""Labels as users have them: class codes, one-hot rows, ``(N, 1)`` columns, class names from datasets and text (§6.5).

- :func:`one_hot_codes`: rows of 0/1 (float, int or bool) with exactly one 1
  -> the index of that 1; a row that is not one-hot is named, never guessed.
- :func:`code_problems`: the rows of a categorical label that are not
  whole numbers in ``[-1, K)`` (``-1`` marks a missing label, §6.5).
- :func:`class_names_file`: class names from a text file, one per line.
- :func:`is_class_names_name`: whether a dataset's name says it holds class
  names (``list_classes``, ``category_names``, ``classes``, ...).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Final

import numpy as np

from h5ml.errors import IngestError

__all__ = ["class_names_file", "code_problems", "is_class_names_name", "one_hot_codes"]

_CLASS_NAMES_RE: Final = re.compile(r"^(list_)?(class|classes|category|categories|label|labels)(_names?|_list)?$", re.I)


def is_class_names_name(name: str) -> bool:
    """Whether a dataset name says "class names": ``list_classes``, ``classes``, ``category_names``, ``label_names``.

    Parameters
    ----------
    name
        A dataset's name.

    Returns
    -------
    bool
    """
    return bool(_CLASS_NAMES_RE.match(name)) and name.lower() not in ("label", "labels", "class", "category")


def one_hot_codes(rows: np.ndarray) -> tuple[np.ndarray, list[int]]:
    """The codes of one-hot rows, and the rows (indices into ``rows``) that are not one-hot.

    Parameters
    ----------
    rows
        ``(n, K)`` values, any numeric or bool dtype.

    Returns
    -------
    tuple
        ``(codes, bad)``: int64 ``(n,)`` codes (the column of each row's one
        1; -1 where the row is bad) and the indices of rows that hold
        anything but exactly one 1 and K-1 zeros (NaN included).
    """
    values = np.asarray(rows)
    if values.ndim != 2:
        raise ValueError(f"one-hot rows have 2 axes (n, K), got shape {values.shape}")
    with np.errstate(invalid="ignore"):
        ones = values == 1
        zeros = values == 0
    good = (ones.sum(axis=1) == 1) & ((ones | zeros).all(axis=1))
    codes = np.where(good, ones.argmax(axis=1), -1).astype(np.int64)
    return codes, np.flatnonzero(~good).tolist()


def code_problems(values: np.ndarray, classes: int) -> list[tuple[int, Any]]:
    """Rows of a label that are not class codes: not whole numbers, or outside ``[-1, classes)``.

    Parameters
    ----------
    values
        ``(n,)`` numbers.
    classes
        The number of class names K.

    Returns
    -------
    list of (int, value)
        Each bad row's index and value.
    """
    flat = np.asarray(values).reshape(len(values), -1)
    if flat.shape[1] != 1:
        return [(0, f"a value of shape {flat.shape[1:]}")]
    column = flat[:, 0]
    if column.dtype.kind == "b":
        column = column.astype(np.int64)
    if column.dtype.kind not in "iuf":
        return [(0, f"values of dtype {column.dtype}")]
    with np.errstate(invalid="ignore"):
        whole = column == np.floor(column) if column.dtype.kind == "f" else np.ones(column.shape, bool)
        wrong = ~whole | (column < -1) | (column >= classes)
    return [(int(i), column[i].item()) for i in np.flatnonzero(wrong)]


def class_names_file(path: str | Path) -> list[str]:
    """Class names from a UTF-8 text file, one per line (blank lines at the end ignored; a tab ends a name).

    PointNet's ``shape_names.txt`` is one name per line; ShapeNet's
    ``synsetoffset2category.txt`` is ``name<TAB>id``: the text before a tab
    is the name.

    Raises
    ------
    FileNotFoundError
        If the file does not exist.
    h5ml.IngestError
        If it is not UTF-8, empty, has a blank line between names, or names a class twice.
    """
    file = Path(path)
    if not file.is_file():
        raise FileNotFoundError(f"{file}: no such class-names file")
    try:
        lines = file.read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError:
        raise IngestError(f"{file}: not UTF-8 text; class names are one per line", path=str(file)) from None
    while lines and not lines[-1].strip():
        lines.pop()
    names = [line.split("\t", 1)[0].strip() for line in lines]
    if not names:
        raise IngestError(f"{file}: no class names (one per line expected)", path=str(file))
    if "" in names:
        raise IngestError(f"{file}: line {names.index('') + 1} is blank; give one class name per line", path=str(file))
    if len(set(names)) != len(names):
        twice = sorted({n for n in names if names.count(n) > 1})
        raise IngestError(f"{file}: class names given twice: {twice}", path=str(file))
    return names
