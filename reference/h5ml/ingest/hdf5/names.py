"""Split and feature names read from the names people give HDF5 files, datasets and groups (§5.1).

- :func:`file_split`: the split a file name names (``train_catvnoncat.h5``
  -> train, ``ply_data_test0.h5`` -> test, ``validation.h5`` ->
  validation), and the ``_x``/``_y`` side of a pair of files
  (PatchCamelyon's ``..._split_train_x.h5``); a name that names two splits
  names none (the proposal then asks).
- :func:`array_split` : the split and feature of a dataset or group name
  (``x_train``, ``X_test``, ``train_set_x``, ``train_data``).
- :func:`is_split_name`, :func:`id_like`: whether names are split names, or
  ids of records (``0``, ``17``, ``gdb11_s01-3``: digits in one skeleton).
- :func:`read_list_file`: the files a shard list (``train_files.txt``) names.

The split names and aliases are those of :data:`h5ml.ingest.naming.SPLIT_SUFFIXES`,
compared without case.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Final

from h5ml.errors import IngestError
from h5ml.ingest.naming import SPLIT_SUFFIXES

__all__ = ["CLASS_NAME_FILES", "array_split", "file_split", "id_like", "is_split_name", "read_list_file"]

#: Text files beside a shard list that hold the class names, one per line (PointNet's ``shape_names.txt``).
CLASS_NAME_FILES: Final = ("shape_names.txt", "class_names.txt", "classes.txt")
#: Tokens that only join a split to a feature in array names (``train_set_x``).
_FILLERS: Final = frozenset({"set"})
_DIGITS_RE: Final = re.compile(r"\d+")


def _split_of(token: str) -> str | None:
    """The standard split a token names (``TRAIN``, ``valid``, ``test0`` -> test), or None."""
    word = token.lower().rstrip("0123456789")
    return SPLIT_SUFFIXES.get(word)


def is_split_name(name: str) -> bool:
    """Whether a group or file-name token names a split (``train``, ``valid``, ``Test``; any case).

    Parameters
    ----------
    name
        A group name or a word of a file name.

    Returns
    -------
    bool
    """
    return name.lower() in SPLIT_SUFFIXES


def file_split(path: str | Path) -> tuple[str | None, str | None, str | None]:
    """The split a file's name gives, the token that gave it, and its ``x``/``y`` side.

    Parameters
    ----------
    path
        A source file or a shard list.

    Returns
    -------
    tuple
        ``(split, token, side)``: the standard split name (None when the
        name names no split, or two different ones), the word of the name
        that named it (``"testing"``), and ``"x"`` or ``"y"`` when the stem
        ends in ``_x``/``_y`` (else None).
    """
    stem = Path(path).name.split(".", 1)[0]
    words = [w for w in re.split(r"[^A-Za-z0-9]+", stem) if w]
    side = words[-1].lower() if len(words) > 1 and words[-1].lower() in ("x", "y") else None
    found: dict[str, str] = {}
    for word in words:
        split = _split_of(word)
        if split is not None:
            found.setdefault(split, word)
    if len(found) != 1:
        return None, None, side
    split, token = next(iter(found.items()))
    return split, token, side


def array_split(name: str) -> tuple[str, str] | None:
    """``(split, feature)`` of a dataset or group name that contains one split word, else None.

    Parameters
    ----------
    name
        ``x_train`` -> (train, x); ``X_test`` -> (test, X); ``train_set_x``
        -> (train, x); ``train_data`` -> (train, data); ``data_valid`` ->
        (validation, data). A name that is only a split (``train``) or has two
        split words gives None.

    Returns
    -------
    tuple of str or None
    """
    words = name.split("_")
    hits = [i for i, w in enumerate(words) if w.lower() in SPLIT_SUFFIXES]
    if len(hits) != 1 or len(words) < 2:
        return None
    split = SPLIT_SUFFIXES[words[hits[0]].lower()]
    rest = [w for i, w in enumerate(words) if i != hits[0]]
    if len(rest) > 1:
        rest = [w for w in rest if w.lower() not in _FILLERS] or rest
    feature = "_".join(rest)
    return (split, feature) if feature else None


def id_like(names: Iterable[str]) -> bool:
    """Whether names look like record ids: each holds digits, and all share one skeleton once digits are masked.

    ``["0", "1", "17"]``, ``["gdb11_s01", "gdb11_s02"]`` and
    ``["mol-3", "mol-12"]`` are ids; ``["data", "target"]`` and ``["cats",
    "dogs"]`` are not.

    Parameters
    ----------
    names
        Group or dataset names.

    Returns
    -------
    bool
        False for no names.
    """
    skeletons = set()
    count = 0
    for name in names:
        if not _DIGITS_RE.search(name):
            return False
        skeletons.add(_DIGITS_RE.sub("#", name))
        count += 1
    return count > 0 and len(skeletons) == 1


def read_list_file(path: Path) -> list[Path]:
    """The files a shard list names, one per line, resolved against the list's folder.

    A line that names no file there but whose file name is in the list's
    folder is that file (PointNet's lists say
    ``data/modelnet40_ply_hdf5_2048/ply_data_train0.h5``, relative to the
    repository that made them); the plan shows each resolved path.

    Raises
    ------
    h5ml.IngestError
        If the list is not UTF-8 text, is empty, or names a file that is in
        neither place (naming the line).
    """
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError:
        raise IngestError(f"{path}: not a UTF-8 text file listing HDF5 files, one per line", path=str(path)) from None
    out: list[Path] = []
    for number, line in enumerate(lines, 1):
        entry = line.strip()
        if not entry or entry.startswith("#"):
            continue
        given = Path(entry)
        candidates = [given] if given.is_absolute() else [path.parent / given, path.parent / given.name]
        candidates = list(dict.fromkeys(candidates))
        found = next((c for c in candidates if c.is_file()), None)
        if found is None:
            folders = [c for c in candidates if c.is_dir()]
            what = (
                f"the directory {folders[0]}, not a file"
                if folders
                else "no file at " + " nor ".join(map(str, candidates))
            )
            raise IngestError(
                f"{path}: line {number} names {entry!r}: {what}; list one HDF5 file per line, or put the file beside "
                "the list",
                path=str(path),
            )
        out.append(found)
    if not out:
        raise IngestError(f"{path}: the list names no file; one HDF5 file per line is expected", path=str(path))
    return out
