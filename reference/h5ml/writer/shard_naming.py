"""How writers name the shards of a sharded dataset, and the one parser of shard sizes (SPEC §12.4).

Every writer of sharded datasets (:class:`h5ml.writer.sharded.ShardedWriter`,
``h5ml convert --shard-size``, ``h5ml shard``, the Dask writer) names shard
``n`` of split ``<split>`` ``<split>/<split>-NNNNN.h5`` relative to the
folder of the index (:func:`shard_path`: ``n`` in at least 5 decimal digits,
from ``00000``), and reads a shard size given as bytes or as text such as
``"512MiB"`` with :func:`parse_shard_size`. A reader never relies on these
names: the index lists every shard's path in sample order (§12.1); the names
only make a dataset's folder readable and let a writer recognise the shards
of an older dataset it replaces (:func:`parse_shard_path`).
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation
from typing import Final

from h5ml.errors import ParameterError
from h5ml.model.shard_index import INDEX_FILE_NAME

__all__ = [
    "SHARD_DIGITS",
    "SHARD_SUFFIX",
    "SIZE_UNITS",
    "check_shard_split_name",
    "parse_samples_per_shard",
    "parse_shard_path",
    "parse_shard_size",
    "shard_path",
]

#: The least number of decimal digits of a shard's number in its name (``train-00000.h5``).
SHARD_DIGITS: Final = 5
#: The file name suffix of a shard.
SHARD_SUFFIX: Final = ".h5"

#: The units :func:`parse_shard_size` accepts, and their size in bytes: decimal (SI, powers of 1000) and binary
#: (IEC, powers of 1024). A bare prefix (``"1G"``) is refused: it could mean either.
SIZE_UNITS: Final = {
    "B": 1,
    "kB": 1000,
    "KB": 1000,
    "MB": 1000**2,
    "GB": 1000**3,
    "TB": 1000**4,
    "KiB": 1024,
    "MiB": 1024**2,
    "GiB": 1024**3,
    "TiB": 1024**4,
}
_SIZE_TEXT = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([A-Za-z]*)\s*$")
# Characters a split name may not hold to become a folder and a file name on every common file system
# (those Windows refuses, the backslash the index schema refuses, and control characters).
_UNSAFE = re.compile(r'[\\:*?"<>|\x00-\x1f\x7f]')
_NAME_MAX = 255  # bytes of one path component on common file systems


def parse_shard_size(value: object, name: str = "shard_size") -> int:
    """Read a shard size: an int of bytes, or text of a number and a unit, ``"512MiB"``, ``"1GiB"``, ``"100MB"``.

    Parameters
    ----------
    value
        A positive ``int`` (bytes), or a ``str``: digits (bytes), or a number (decimals allowed,
        ``"1.5GiB"``) followed by one of :data:`SIZE_UNITS` (case as written there; a space between
        is allowed). The result must be a whole number of bytes, at least 1.
    name
        The parameter's name in the interface the user used, for the message: ``"shard_size"`` in
        Python, ``"--shard-size"`` on the command line.

    Returns
    -------
    int
        The size in bytes.

    Raises
    ------
    ParameterError
        For anything else (a bool, a float, zero or less, an unknown unit such as ``"1G"`` or ``"1Gb"``,
        a fraction of a byte); the message names ``name`` and the accepted forms.
    """
    accepted = "a positive number of bytes, or a number and a unit (" + ", ".join(SIZE_UNITS) + "), as '512MiB'"
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise ParameterError(f"{name} must be {accepted}, not {value!r}")
    if isinstance(value, int):
        if value < 1:
            raise ParameterError(f"{name} must be at least 1 byte, not {value}")
        return value
    match = _SIZE_TEXT.match(value)
    unit = match.group(2) if match else ""
    if match is None or (unit and unit not in SIZE_UNITS):
        hint = ""
        if match is not None and unit[:1].upper() in ("K", "M", "G", "T"):
            prefix = unit[0].upper()
            hint = f"; for {unit!r} write {prefix}B (powers of 1000) or {prefix}iB (powers of 1024)"
        raise ParameterError(f"{name} must be {accepted}, not {value!r}{hint}")
    try:
        size = Decimal(match.group(1)) * SIZE_UNITS[unit or "B"]
    except InvalidOperation as exc:  # pragma: no cover - the pattern admits only decimal numbers
        raise ParameterError(f"{name} must be {accepted}, not {value!r}") from exc
    if size != size.to_integral_value():
        raise ParameterError(f"{name} {value!r} is not a whole number of bytes ({size}); give a whole number of bytes")
    if size < 1:
        raise ParameterError(f"{name} must be at least 1 byte, not {value!r}")
    return int(size)


def parse_samples_per_shard(value: object, name: str = "samples_per_shard") -> int:
    """Check a number of samples per shard: a positive ``int`` (not a bool).

    Parameters
    ----------
    value
        The number given.
    name
        The parameter's name in the interface the user used (``"--samples-per-shard"`` on the command line).

    Returns
    -------
    int

    Raises
    ------
    ParameterError
        If ``value`` is not an int of at least 1.
    """
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ParameterError(f"{name} must be a whole number of samples, at least 1, not {value!r}")
    return value


def check_shard_split_name(split: str) -> str:
    """Refuse a split name that cannot name a shard's folder and file on common file systems (§12.4).

    Split names already follow §5.1.1 (no ``/``, no leading ``.``); a shard's name adds that the name holds
    none of ``\\ : * ? " < > |`` nor a control character, and that ``<split>-NNNNN.h5`` fits in 255 bytes.

    Raises
    ------
    ParameterError
        Naming the split and what to do.
    """
    if split.lower() == INDEX_FILE_NAME:
        raise ParameterError(
            f"split {split!r} cannot name a shard folder: its folder would take the place of the dataset's "
            f"{INDEX_FILE_NAME} (§12.1); rename the split"
        )
    bad = _UNSAFE.search(split)
    if bad is not None:
        raise ParameterError(
            f"split {split!r} cannot name a shard file: it holds {bad.group()!r}, which file systems or the "
            "index (§12.1) refuse in a path; rename the split (letters, digits, '-', '_')"
        )
    if len(shard_path(split, 0, check=False).rsplit("/", 1)[1].encode()) > _NAME_MAX:
        raise ParameterError(
            f"split {split[:40]!r}... is too long to name a shard file ({_NAME_MAX} bytes at most); rename it"
        )
    return split


def shard_path(split: str, number: int, *, check: bool = True) -> str:
    """The path of shard ``number`` of ``split``, relative to the index: ``"<split>/<split>-NNNNN.h5"`` (§12.4).

    Parameters
    ----------
    split
        The split's name (§5.1.1).
    number
        The shard's position in its split, from 0; written in at least :data:`SHARD_DIGITS` digits
        (shard 100000 and later take more; the index, not the name, gives the order).
    check
        Check the split name first (:func:`check_shard_split_name`).

    Returns
    -------
    str
        A '/'-separated relative path, as the index lists it.

    Raises
    ------
    ParameterError
        If ``number`` is negative, or (with ``check``) the split name cannot name a file.
    """
    if isinstance(number, bool) or not isinstance(number, int) or number < 0:
        raise ParameterError(f"a shard number is an int from 0, not {number!r}")
    if check:
        check_shard_split_name(split)
    return f"{split}/{split}-{number:0{SHARD_DIGITS}d}{SHARD_SUFFIX}"


def parse_shard_path(path: str) -> tuple[str, int] | None:
    """The split and number of a path that :func:`shard_path` could have made, or None.

    Parameters
    ----------
    path
        A '/'-separated path relative to the folder of the index.

    Returns
    -------
    (str, int) or None
        ``("train", 3)`` for ``"train/train-00003.h5"``; None for any other path.
    """
    folder, _, name = path.partition("/")
    if not folder or "/" in name or not name.startswith(folder + "-") or not name.endswith(SHARD_SUFFIX):
        return None
    digits = name[len(folder) + 1 : -len(SHARD_SUFFIX)]
    if len(digits) < SHARD_DIGITS or not digits.isascii() or not digits.isdigit():
        return None
    number = int(digits)
    return (folder, number) if shard_path(folder, number, check=False) == path else None
