"""MATLAB v7.3 MAT-files: HDF5 with a 512-byte user block, column-major arrays, cell arrays and ``#refs#``.

MATLAB writes a variable of size ``(N, 784)`` as an HDF5 dataset of shape
``(784, N)``: HDF5 lists axes in C order, MATLAB in Fortran order. A plan
part of a MAT-file sets ``transpose`` (the axes are reversed back to
MATLAB's order, which the plan states) and names the sample axis in that
order. Each variable carries ``MATLAB_class``: ``char`` variables are
UTF-16 code units (``uint16``), ``logical`` ones are ``uint8`` 0/1, and
``cell`` ones are arrays of object references to the cells' values, stored
under the group ``/#refs#``. :func:`cell_values` follows such references,
only to datasets of the same file (an HDF5 object reference cannot leave
its file; a reference to a group, a null reference or a non-dataset is
refused), so §3.6 and §10.1 still hold. ``#refs#`` and ``#subsystem#``
are MATLAB's bookkeeping: the proposal lists them as left out.
"""

from __future__ import annotations

from typing import Any, Final

import h5py
import numpy as np

from h5ml.errors import IngestError
from h5ml.model.locking import open_foreign
from h5ml.model.storage import check_dataset_storage, check_path

__all__ = ["MATLAB_GROUPS", "cell_classes", "cell_values", "char_strings", "decode_matlab", "matlab_order"]

#: Groups of a MAT-file that hold MATLAB's bookkeeping, not variables.
MATLAB_GROUPS: Final = ("/#refs#", "/#subsystem#")


def matlab_order(array: np.ndarray) -> np.ndarray:
    """A MATLAB variable's values in MATLAB's axis order (the HDF5 axes reversed); a view, no copy.

    Parameters
    ----------
    array
        Values as HDF5 stores them, shape ``(d_k, ..., d_1)``.

    Returns
    -------
    numpy.ndarray
        Shape ``(d_1, ..., d_k)``, MATLAB's size.
    """
    return np.asarray(array).transpose()


def char_strings(codes: np.ndarray) -> list[str]:
    """The strings of a MATLAB ``char`` array, in MATLAB's axis order: one per row (``cellstr``), trailing blanks dropped.

    Parameters
    ----------
    codes
        ``uint16`` UTF-16 code units, already in MATLAB order (:func:`matlab_order`):
        ``(1, L)`` for one string, ``(n, L)`` for a char matrix of n rows.

    Returns
    -------
    list of str
        As MATLAB's ``cellstr`` gives them: each row decoded, trailing spaces
        removed (MATLAB pads the rows of a char matrix with spaces).
    """
    rows = np.atleast_2d(np.asarray(codes))
    if rows.ndim != 2:
        raise ValueError(f"a char array of {rows.ndim} axes holds no strings per row")
    out = []
    for row in rows.astype("<u2"):
        out.append(row.tobytes().decode("utf-16-le", "surrogatepass").rstrip(" "))
    return out


def decode_matlab(value: np.ndarray, matlab_class: str | None) -> Any:
    """One value of a MATLAB variable (MATLAB order) as h5ml stores it: chars -> str, logical -> bool, else as is.

    Parameters
    ----------
    value
        The values, in MATLAB order.
    matlab_class
        The variable's ``MATLAB_class``.

    Returns
    -------
    str, list of str, numpy.ndarray
        A string (or one per row) for ``char``, bool values for ``logical``, else ``value``.
    """
    if matlab_class == "char":
        strings = char_strings(value)
        return strings[0] if len(strings) == 1 else strings
    if matlab_class == "logical":
        return np.asarray(value).astype(bool)
    return value


def cell_values(f: h5py.File, refs: np.ndarray, where: str, *, allow_external: bool = False) -> list[Any]:
    """The values a MATLAB cell array's references point to, each decoded (:func:`decode_matlab`).

    Parameters
    ----------
    f
        The open MAT-file.
    refs
        The cell array's object references (any shape; taken in C order of the given array).
    where
        ``file:/hdf5/path`` of the cell array, for messages.
    allow_external
        The source was walked with ``allow_external=True``: a cell's dataset
        may store its data in other files (§10.1). Otherwise it is checked
        before it is read: a reference may point to a dataset no link names,
        which the walk of the source never met.

    Returns
    -------
    list
        One decoded value per reference.

    Raises
    ------
    h5ml.ForbiddenStorageError
        If a cell's dataset is virtual or stores its data in external files (§3.6, §10.1).
    h5ml.IngestError
        For a null reference, or one that points to a group (a nested
        struct or cell: convert that variable with a hand-written plan) or
        to nothing this file holds.
    """
    out: list[Any] = []
    for index, ref in enumerate(np.asarray(refs).ravel().tolist()):
        if not isinstance(ref, h5py.Reference) or not ref:
            raise IngestError(f"{where}: cell {index} holds no object reference; a cell array is expected")
        try:
            target = f[ref]
        except (KeyError, ValueError, OSError) as exc:
            raise IngestError(f"{where}: cell {index} points to nothing in this file ({exc})") from None
        if not isinstance(target, h5py.Dataset):
            raise IngestError(
                f"{where}: cell {index} points to the group {target.name} (a struct or cell inside a cell); "
                "h5ml reads cells of arrays and strings only: leave this variable out, or save it in MATLAB as "
                "separate arrays"
            )
        if target.file.filename != f.filename:
            raise IngestError(
                f"{where}: cell {index} points into another file ({target.file.filename}); refused (§3.6)"
            )
        if not allow_external:  # SPEC §10.1-R1: as h5ml.open refuses it
            check_dataset_storage(target.id, f.filename, f"{target.name} (cell {index} of {where})")
        cls = target.attrs.get("MATLAB_class")
        cls = cls.decode() if isinstance(cls, bytes) else cls
        if target.attrs.get("MATLAB_empty", 0):
            out.append("" if cls == "char" else np.zeros((0,)))
            continue
        out.append(decode_matlab(matlab_order(target[()]), cls))
    return out


def cell_classes(source: str, path: str, limit: int = 256, *, allow_external: bool = False) -> set[str | None]:
    """The MATLAB classes of the values the first ``limit`` cells of a cell array point to (``{"char"}``: strings).

    A reference that does not point to a dataset of this file counts as None.

    Parameters
    ----------
    source
        The MAT-file.
    path
        The cell array's HDF5 path.
    limit
        Cells looked at, at most.
    allow_external
        The source was walked with ``allow_external=True`` (else the cell array's storage is checked first, §10.1).

    Returns
    -------
    set
        The ``MATLAB_class`` values met (str), None for a reference to no dataset.

    Raises
    ------
    h5ml.ForbiddenStorageError
        If the cell array stores its data in other files (§3.6, §10.1).
    """
    out: set[str | None] = set()
    with open_foreign(source, "convert it again") as f:
        if not allow_external:  # SPEC §10.1-R1: the walk limited to what is read
            check_path(f, source, path)
        refs = np.asarray(f[path][()]).ravel()[:limit]
        for ref in refs.tolist():
            try:
                target = f[ref] if isinstance(ref, h5py.Reference) and ref else None
            except (KeyError, ValueError, OSError):
                target = None
            if not isinstance(target, h5py.Dataset):
                out.add(None)
                continue
            cls = target.attrs.get("MATLAB_class")
            out.add(cls.decode() if isinstance(cls, bytes) else cls)
    return out
