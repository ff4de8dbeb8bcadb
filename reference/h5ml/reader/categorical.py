"""The ``categorical`` encoding: integer ``codes`` (N,) naming ``class_names`` (K,) (§6.5, §3.4).

Codes come back as int64 (-1 meaning missing); the class names are read once,
as ``str``, when asked for, and a class name that is not UTF-8 never makes the
codes unreadable.
"""

from __future__ import annotations

from typing import Any, ClassVar

import h5py
import numpy as np
import numpy.typing as npt

from h5ml.errors import EncodingError, H5MLError
from h5ml.model.failures import LIBRARY_ERRORS, is_library_failure, validate_advice
from h5ml.reader.column import Column
from h5ml.reader.feature import Feature
from h5ml.reader.plan import Indices, check_index
from h5ml.spec.attrs import decode_str

__all__ = ["CategoricalFeature"]


def _is_utf8(raw: bytes) -> bool:
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


class CategoricalFeature(Feature):
    """A ``categorical`` feature: group with ``codes`` (N,) and ``class_names`` (K,) (§6.5).

    A batch is an int64 array (R,) of codes, -1 meaning missing; an int index
    returns one ``int``. :attr:`class_names` maps codes to names.
    """

    encoding = "categorical"
    _members: ClassVar[tuple[str, ...]] = ("codes", "class_names")
    _main_member: ClassVar[str] = "codes"

    def _reset(self) -> None:
        super()._reset()
        self._names: list[str] | None = None

    @property
    def dtype(self) -> np.dtype[Any]:
        """``int64``: codes come back as int64."""
        return np.dtype(np.int64)

    def _make_column(self, member: str, path: str, node: h5py.Dataset) -> Column:
        """``class_names`` in the dataset's own string type; ``codes`` as int64."""
        if member == "class_names":
            return self._string_column(path, node)
        return super()._make_column(member, path, node)

    @property
    def class_names(self) -> list[str]:
        """The class names (§6.5), read once; code k names ``class_names[k]``.

        Raises
        ------
        EncodingError
            If a class name is not UTF-8 (§3.4); the codes stay readable.
        InvalidFileError
            If the HDF5 library cannot read them, or the dataset declares more
            names than the file stores (§10.4).
        """
        if self._names is None:
            try:
                column = self._column("class_names")
                raw = column.read(0, column.rows).tolist()
            except H5MLError:
                raise
            except LIBRARY_ERRORS as exc:
                if not is_library_failure(exc):
                    raise
                raise self._damaged(exc, "class_names") from exc
            try:
                self._names = [decode_str(v) for v in raw]
            except UnicodeDecodeError as exc:
                k = next(i for i, v in enumerate(raw) if isinstance(v, bytes) and not _is_utf8(v))
                raise EncodingError(
                    f"{self.path}: {self.hdf5_path}/class_names: class name {k} is not valid UTF-8 ({exc.reason}); "
                    f"strings must be UTF-8 (§3.4); the codes are not affected; {validate_advice(self.path)}",
                    path=self.path,
                    hdf5_path=f"{self.hdf5_path}/class_names",
                ) from exc
        return list(self._names)

    def _read_one(self, index: int | np.integer[Any]) -> Any:
        column = self._column("codes")
        return int(column.sample(check_index(index, column.rows)))

    def _read_range(self, start: int, stop: int) -> Any:
        return self._column("codes").read(start, stop)

    def _read(self, indices: Indices) -> Any:
        values, scalar = self._column("codes").take(indices)
        return int(values) if scalar else values

    def _read_rows(self, rows: npt.NDArray[np.int64]) -> Any:
        return self._column("codes").take_rows(rows)
