"""Reading ``.npz`` archives and ``.npy`` files safely, and the tutorials' scalar metadata in them (§3.2, §4.2, §10).

Arrays are loaded without pickle support; a member whose header declares
more data than it holds is refused before numpy allocates it (§10.4);
arrays outside the storage profile, scalars and invalid names are refused
with the archive and the array named. The scalars ``description`` and
``nb_classes`` (:data:`h5ml.ingest.naming.CLASS_COUNT_NAMES`) are metadata,
not features.
"""

from __future__ import annotations

import math
import zipfile
from pathlib import Path
from typing import Final

import numpy as np

from h5ml.errors import EncodingError
from h5ml.ingest.naming import CLASS_COUNT_NAMES, name_problem
from h5ml.ingest.naming import class_count as read_class_count

__all__ = ["DESCRIPTION_NAME", "archive_metadata", "check_array", "check_names", "load_npy", "load_npz"]

#: The scalar array of an .npz that holds the dataset's description (§4.2), as the tutorials store it.
DESCRIPTION_NAME: Final = "description"


def _check_declared_sizes(source: Path) -> None:
    """Refuse members whose .npy header declares more data than the member holds (§10.4).

    A crafted header can declare an array of terabytes in a few bytes; numpy
    would try to allocate it before noticing the data is missing.
    """
    with zipfile.ZipFile(source) as zf:
        for info in zf.infolist():
            if not info.filename.endswith(".npy"):
                continue
            with zf.open(info) as member:
                try:
                    version = np.lib.format.read_magic(member)
                    if version == (1, 0):
                        shape, _, dtype = np.lib.format.read_array_header_1_0(member)
                    else:
                        shape, _, dtype = np.lib.format.read_array_header_2_0(member)
                except ValueError as exc:
                    raise EncodingError(
                        f"{source}: member {info.filename!r} is not a valid .npy array ({exc})", path=str(source)
                    ) from None
                header_bytes = member.tell()
            declared = math.prod(shape) * dtype.itemsize
            if not dtype.hasobject and declared > info.file_size - header_bytes:
                raise EncodingError(
                    f"{source}: member {info.filename!r} declares an array of shape {shape} ({declared} bytes) "
                    f"but holds only {info.file_size - header_bytes} bytes of data; the archive is truncated or "
                    "crafted",
                    path=str(source),
                )


def load_npz(source: Path) -> dict[str, np.ndarray]:
    """Every array of an ``.npz`` archive, by name, loaded without pickle support (§10.2, §10.4).

    Parameters
    ----------
    source
        The archive (an existing file).

    Returns
    -------
    dict
        Array name -> array.

    Raises
    ------
    EncodingError
        If the file is not a zip of ``.npy`` members, cannot be read, a member
        declares more data than it holds, or an array holds Python objects.
    """
    if not zipfile.is_zipfile(source):
        raise EncodingError(
            f"{source}: not an .npz archive (a zip file of .npy arrays, as numpy.savez writes)", path=str(source)
        )
    arrays: dict[str, np.ndarray] = {}
    try:
        with np.load(source, allow_pickle=False) as archive:
            _check_declared_sizes(source)
            for array_name in archive.files:
                try:
                    arrays[array_name] = archive[array_name]
                except ValueError as exc:
                    raise EncodingError(
                        f"{source}: array {array_name!r} cannot be loaded without pickle ({exc}); "
                        "object arrays are not converted (§10.2): save it as a numeric or string array",
                        path=str(source),
                    ) from None
    except (zipfile.BadZipFile, OSError, EOFError) as exc:
        if isinstance(exc, FileNotFoundError):
            raise
        raise EncodingError(f"{source}: the .npz archive cannot be read ({exc})", path=str(source)) from None
    return arrays


def load_npy(source: Path) -> np.ndarray:
    """The array of a ``.npy`` file, memory-mapped (``mmap_mode="r"``), never unpickled (§10.2).

    Parameters
    ----------
    source
        The file (an existing file).

    Returns
    -------
    numpy.ndarray
        The array (a read-only memory map).

    Raises
    ------
    EncodingError
        If the file is not a plain ``.npy`` array written by ``numpy.save``
        (object arrays, an archive, other bytes).
    """
    try:
        array = np.load(source, mmap_mode="r", allow_pickle=False)
    except ValueError as exc:
        raise EncodingError(
            f"{source}: array {source.name!r} cannot be read as a plain .npy array ({exc}); object (pickled) "
            "arrays are not converted (§10.2) and the file must be written by numpy.save",
            path=str(source),
        ) from None
    except (OSError, EOFError) as exc:
        raise EncodingError(f"{source}: the .npy file cannot be read ({exc})", path=str(source)) from None
    if not isinstance(array, np.ndarray):
        array.close()
        raise EncodingError(f"{source}: holds an archive, not one array; use convert_npz", path=str(source))
    return array


def check_array(source: Path, array_name: str, array: np.ndarray) -> None:
    """Refuse arrays the storage profile cannot hold (§3.2, §10.2), and scalars (no sample axis, §5.3).

    Parameters
    ----------
    source
        The archive, for messages.
    array_name
        The array's name in it.
    array
        The array.

    Raises
    ------
    EncodingError
        If its dtype holds Python objects or records, is outside §3.2, or it is 0-d.
    """
    if array.dtype.kind in "OV" or array.dtype.hasobject:
        raise EncodingError(
            f"{source}: array {array_name!r} has dtype {array.dtype} (Python objects or structured records), "
            "which h5ml does not store (§3.2, §10.2); convert it to a numeric or string array first",
            path=str(source),
        )
    if array.dtype.kind not in "biufUS":
        raise EncodingError(
            f"{source}: array {array_name!r} has dtype {array.dtype}, outside the storage profile (§3.2); "
            "convert it to integers, floats, booleans or strings first",
            path=str(source),
        )
    if array.ndim == 0:
        raise EncodingError(
            f"{source}: array {array_name!r} is a scalar; every feature needs a first (sample) axis (§5.3). Scalars "
            f"named {DESCRIPTION_NAME!r} or {' / '.join(CLASS_COUNT_NAMES)} are read as the description and the "
            "number of classes; give other metadata with --description, --class-names or h5ml.Writer.update_metadata",
            path=str(source),
        )


def check_names(source: Path, array_name: str, split: str, feature: str) -> None:
    """Refuse an array whose name gives a split or feature name that breaks §5.1.1.

    Raises
    ------
    EncodingError
        Naming the archive, the array and the name.
    """
    for kind, value in (("split", split), ("feature", feature)):
        problem = name_problem(kind, value)
        if problem is not None:
            raise EncodingError(f"{source}: array {array_name!r}: {problem}; rename the array", path=str(source))


def archive_metadata(source: Path, arrays: dict[str, np.ndarray]) -> tuple[str | None, int | None]:
    """Take the tutorials' scalar metadata out of ``arrays``: the description and a number of classes (§4.2, §6.5).

    Parameters
    ----------
    source
        The archive, for messages.
    arrays
        Every array of the archive, by name; the scalars read are removed from it.

    Returns
    -------
    tuple
        The description (a 0-d string array named ``description``) and the
        number of classes (a 0-d whole number >= 1 named one of
        :data:`h5ml.ingest.naming.CLASS_COUNT_NAMES`), each None when absent.

    Raises
    ------
    EncodingError
        If the description scalar is not text.
    h5ml.IngestError
        If a class count is not a whole number >= 1, or two disagree.
    """
    description: str | None = None
    value = arrays.get(DESCRIPTION_NAME)
    if value is not None and value.ndim == 0:
        if value.dtype.kind not in "US":
            raise EncodingError(
                f"{source}: the scalar {DESCRIPTION_NAME!r} is a {value.dtype} number, not text; store a string",
                path=str(source),
            )
        item = value.item()
        description = item.decode("utf-8", "replace") if isinstance(item, bytes) else str(item)
        del arrays[DESCRIPTION_NAME]
    scalars: dict[str, np.ndarray] = {
        name: arrays[name] for name in CLASS_COUNT_NAMES if name in arrays and arrays[name].ndim == 0
    }
    for name in scalars:
        del arrays[name]
    found = read_class_count(scalars, str(source), "the scalar")
    return description, None if found is None else found[1]
