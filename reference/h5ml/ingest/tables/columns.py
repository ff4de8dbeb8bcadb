"""The columns of a table: how each is typed, stored and converted chunk by chunk (§3.3, §6.2, §6.4, §6.5).

A CSV column is typed from counts over every cell (:class:`TextStats`,
:func:`csv_kind`); a Parquet column from its Arrow type (:func:`parquet_kind`);
either way the options decide categorical and text columns
(:func:`stored_column`). :func:`convert_chunk` turns one chunk of a column
into the writer's values and the mask of its bad rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from h5ml.errors import IngestError
from h5ml.ingest.naming import name_problem, natural_key
from h5ml.ingest.report import Skipped
from h5ml.ingest.tables.arrow import ArrayLayout
from h5ml.ingest.tables.read import as_text
from h5ml.model.values import Categorical, FeatureSpec

__all__ = [
    "MAX_LABEL_CLASSES",
    "Column",
    "Plan",
    "TextStats",
    "Uniques",
    "check_columns",
    "convert_chunk",
    "count_text",
    "csv_kind",
    "parquet_kind",
    "stored_column",
    "take_rows",
]

#: A label column with more distinct values than this is refused as categorical unless listed in ``categorical``.
MAX_LABEL_CLASSES: Final = 65536

_BOOL_TEXT: Final = {"true": True, "false": False}
_INT_RE: Final = r"[+-]?\d{1,18}"  # fits int64 whatever the digits


@dataclass
class TextStats:
    """Pass-1 counts of one CSV column (cells read as text)."""

    missing: int = 0
    present: int = 0
    numbers: int = 0
    integers: int = 0
    booleans: int = 0


@dataclass
class Column:
    """How one column is stored."""

    name: str
    kind: str  # "int", "float", "bool", "bool-float", "string", "categorical"; Parquet: "array", "ragged", "bytes"
    dtype: np.dtype[Any] | None = None
    class_names: list[str] | None = None
    role: str | None = "input"
    #: Parquet arrays: the sample shape (array) or row shape (ragged), and the nested list levels (ragged).
    layout: ArrayLayout | None = None
    #: Attributes recorded by an export (description, units, sample rate, media type), over the ones above.
    extra: FeatureSpec | None = None
    #: Class names recorded by an export: every value must be one of them (none is read as missing).
    recorded_names: list[str] | None = None

    def spec(self) -> FeatureSpec:
        """The writer's options for this column's feature."""
        if self.kind == "categorical":
            fspec = FeatureSpec(encoding="categorical", class_names=self.class_names, role=self.role)
        elif self.kind == "string":
            fspec = FeatureSpec(encoding="string", role=self.role)
        elif self.kind == "bytes":
            fspec = FeatureSpec(encoding="bytes", role=self.role)
        elif self.kind == "ragged":
            depth = 0 if self.layout is None else self.layout.depth
            fspec = FeatureSpec(
                encoding="ragged", dtype=self.dtype, role=self.role, sample_ndim=depth if depth > 1 else None
            )
        else:
            fspec = FeatureSpec(encoding="dense", dtype=self.dtype, role=self.role)
        return fspec if self.extra is None else fspec.merged(self.extra)


@dataclass
class Plan:
    """What pass 1 found: the stored columns, the row count, the split of each row or the split column."""

    columns: list[Column]
    rows: int = 0
    split_counts: dict[str, int] = field(default_factory=dict)
    assigned: npt.NDArray[np.int8] | None = None  # split index of each row (split_ratios)
    split_names: list[str] = field(default_factory=list)
    skipped_lines: list[Skipped] = field(default_factory=list)
    source_splits: dict[str, list[str]] = field(default_factory=dict)  # split -> its names in the split column
    recorded_split: str | None = None  # the split a Parquet export recorded: every row's, without options

    @property
    def default_split(self) -> str:
        """Every row's split without a split column or ratios: the split an export recorded, else ``train``."""
        return self.recorded_split or "train"


class Uniques:
    """Distinct text values of a column, with an optional cap; also the class id of each row (for stratifying)."""

    def __init__(self, cap: int | None, keep_rows: bool) -> None:
        self.cap = cap
        self.ids: dict[str, int] = {}
        self.over = False
        self.rows: list[npt.NDArray[np.int32]] | None = [] if keep_rows else None

    def add(self, text: Any) -> None:
        """Add one chunk's values (a pandas Series of str with NaN for missing)."""
        if self.over:
            return
        for value in text.dropna().unique().tolist():
            if value not in self.ids:
                self.ids[value] = len(self.ids)
        if self.cap is not None and len(self.ids) > self.cap:
            self.over, self.ids, self.rows = True, {}, None
            return
        if self.rows is not None:
            self.rows.append(text.map(self.ids).fillna(-1).to_numpy(dtype=np.int32))

    def sorted_names(self) -> list[str]:
        """The distinct values in natural order (``"2"`` before ``"10"``)."""
        return sorted(self.ids, key=natural_key)

    def row_ids(self) -> npt.NDArray[np.int32] | None:
        """The class id of every row read (-1: missing), or None when rows were not kept."""
        return None if self.rows is None else np.concatenate(self.rows) if self.rows else np.zeros(0, np.int32)


def check_columns(
    source: Path, names: Sequence[Any], wanted: Sequence[str] | None, required: Sequence[str], reserved: Sequence[str]
) -> None:
    """Refuse duplicate columns, column names that are not feature names (§5.1.1), and named columns that are missing.

    ``wanted``: the columns to store (None: all); ``required``: the columns the options name (label,
    categorical, split column); ``reserved``: the split column (read, not stored).

    Raises
    ------
    h5ml.IngestError
        Naming the columns at fault and the table's columns.
    """
    present = [str(n) for n in names]
    if len(set(present)) != len(present):
        dup = sorted({n for n in present if present.count(n) > 1})
        raise IngestError(f"{source}: the columns {dup} appear more than once; rename them", path=str(source))
    missing = sorted({c for c in [*(wanted or ()), *required] if c not in present})
    if missing:
        raise IngestError(f"{source}: no column named {missing}; the columns are {present}", path=str(source))
    for name in wanted if wanted is not None else present:
        problem = name_problem("feature", name)
        if name not in reserved and problem is not None:
            raise IngestError(
                f"{source}: a column cannot be stored: {problem}; rename the column or leave it out with columns=[...]",
                path=str(source),
            )


def count_text(stats: TextStats, text: Any) -> None:
    """Count one chunk of a CSV column (a Series of str, NaN for missing)."""
    import pandas as pd

    present = text.notna()
    stats.present += int(present.sum())
    stats.missing += int((~present).sum())
    numbers = pd.to_numeric(text, errors="coerce").notna()
    stats.numbers += int(numbers.sum())
    stats.integers += int(text.str.fullmatch(_INT_RE).fillna(False).astype(bool).sum())
    stats.booleans += int(text.str.lower().isin(list(_BOOL_TEXT)).sum())


def csv_kind(stats: TextStats) -> tuple[str, np.dtype[Any] | None, bool]:
    """``(kind, dtype, integral)`` of a CSV column from its counts; ``integral``: whole numbers only."""
    if stats.present == 0:
        return "float", np.dtype(np.float64), False
    if stats.booleans == stats.present:
        return ("bool", np.dtype(bool), True) if stats.missing == 0 else ("bool-float", np.dtype(np.float64), True)
    if 2 * stats.numbers > stats.present:
        integral = stats.integers == stats.numbers
        if integral and stats.missing == 0:
            return "int", np.dtype(np.int64), True
        return "float", np.dtype(np.float64), integral
    return "string", None, False


def parquet_kind(source: Path, name: str, arrow_type: Any, nulls: int) -> tuple[str, np.dtype[Any] | None, bool]:
    """``(kind, dtype, integral)`` of a Parquet column from its Arrow type and null count.

    Raises
    ------
    h5ml.IngestError
        If the type has no h5ml feature (timestamps, structs, ...).
    """
    import pyarrow as pa

    t = arrow_type
    if pa.types.is_dictionary(t):
        return "categorical", None, True
    if pa.types.is_boolean(t):
        return ("bool", np.dtype(bool), True) if nulls == 0 else ("bool-float", np.dtype(np.float64), True)
    if pa.types.is_integer(t):
        return ("int", np.dtype(t.to_pandas_dtype()), True) if nulls == 0 else ("float", np.dtype(np.float64), True)
    if pa.types.is_floating(t):
        return "float", np.dtype(t.to_pandas_dtype()), False
    if pa.types.is_string(t) or pa.types.is_large_string(t) or getattr(pa.types, "is_string_view", bool)(t):
        return "string", None, False
    raise IngestError(
        f"{source}: column {name!r} has the Parquet type {t}, which has no h5ml feature (numbers, booleans, "
        "strings, dictionaries of strings); cast it (e.g. timestamps to int64 or strings) or leave it out with "
        "columns=[...]",
        path=str(source),
    )


def stored_column(
    name: str,
    kind: str,
    dtype: np.dtype[Any] | None,
    integral: bool,
    label: str | None,
    categorical: Sequence[str],
    strings: Sequence[str],
) -> Column:
    """The stored form of a column: categorical when listed, or the label unless fractional; text when listed."""
    role = "target" if name == label else "input"
    if name in categorical or kind == "categorical" or (name == label and (integral or kind == "string")):
        return Column(name, "categorical", role=role)
    if name in strings:
        return Column(name, "string", role=role)
    return Column(name, kind, dtype, role=role)


def convert_chunk(column: Column, values: Any, csv: bool) -> tuple[Any, npt.NDArray[np.bool_] | None]:
    """One chunk of a column -> (the writer's values, bad-row mask or None)."""
    import pandas as pd

    if column.kind == "categorical":
        assert column.class_names is not None
        codes = {name: code for code, name in enumerate(column.class_names)}
        mapped = as_text(values).map(codes).fillna(-1).to_numpy(dtype=np.int64)
        return Categorical(mapped, column.class_names), None
    if column.kind == "string":
        text = as_text(values)
        return [str(v) for v in text.where(text.notna(), "").tolist()], None
    if column.kind in ("ragged", "bytes"):  # the samples of a Parquet column of arrays (tables.arrow)
        return list(values), None
    if column.kind == "array":
        assert column.layout is not None and column.dtype is not None
        rows = list(values)
        return (np.stack(rows) if rows else np.empty((0, *column.layout.dims), column.dtype)), None
    if not csv:
        if column.kind == "bool-float":
            return values.map({True: 1.0, False: 0.0}).to_numpy(dtype=np.float64, na_value=np.nan), None
        assert column.dtype is not None
        if column.dtype.kind == "f":
            return values.to_numpy(dtype=column.dtype, na_value=np.nan), None
        return values.to_numpy(dtype=column.dtype), None
    present = values.notna().to_numpy()
    if column.kind in ("bool", "bool-float"):
        mapped = values.str.lower().map(_BOOL_TEXT)
        bad = present & mapped.isna().to_numpy()
        if column.kind == "bool":
            return mapped.fillna(False).to_numpy(dtype=bool), bad
        return mapped.map({True: 1.0, False: 0.0}).to_numpy(dtype=np.float64, na_value=np.nan), bad
    numbers = pd.to_numeric(values, errors="coerce")
    if column.kind == "int":
        bad = present & ~values.str.fullmatch(_INT_RE).fillna(False).to_numpy(dtype=bool)
        good = values.where(~pd.Series(bad, index=values.index), "0").fillna("0")
        return good.astype(np.int64).to_numpy(), bad
    bad = present & numbers.isna().to_numpy()
    return numbers.to_numpy(dtype=np.float64, na_value=np.nan), bad


def take_rows(values: Any, rows: npt.NDArray[np.intp]) -> Any:
    """The rows ``rows`` of a converted chunk (a :class:`h5ml.Categorical`, an array or a list)."""
    if isinstance(values, Categorical):
        return Categorical(values.codes[rows], values.class_names)
    if isinstance(values, np.ndarray):
        return values[rows]
    return [values[i] for i in rows.tolist()]
