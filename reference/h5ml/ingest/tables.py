"""Convert CSV and Parquet tables to h5ml files (``h5ml convert``), streaming, through pandas and pyarrow.

Each column becomes one feature of shape ``(N,)`` named after it (§5.2):

==========================================  ====================================================
column                                      feature
==========================================  ====================================================
numbers                                     dense (§6.2): int64 (CSV integers), float64 (CSV
                                            numbers with a fraction, an exponent or a missing
                                            value, NaN = missing); Parquet keeps its type
                                            (int32, float32, ...), integers with nulls become
                                            float64 with NaN
booleans (``True``/``false``, ...)          dense bool (§3.3); with missing values float64
                                            1/0/NaN
text; any column listed in ``strings``      string (§6.4); a missing value is stored as ``""``
listed in ``categorical``                   categorical (§6.5): class names the distinct values
                                            as text, sorted (naturally: ``"2"`` before
                                            ``"10"``), missing values code -1
the ``label`` column                        categorical as above (role ``target``), unless it
                                            holds fractional numbers: then dense (a regression
                                            target)
Parquet dictionary columns                  categorical (pandas ``category`` columns are
                                            written so)
==========================================  ====================================================

The label column gets role ``target``, the others ``input``. Splits (§5.1):
a ``split_column`` whose values name each row's split (``train``, ``test``,
... with the aliases of :data:`h5ml.ingest.arrays.SPLIT_SUFFIXES`: ``valid`` ->
``validation``; the column itself is not stored); or ``split_ratios``
(``{"train": 0.8, "test": 0.2}``), stratified on a categorical label with
:func:`h5ml.ingest.splitting.assign_splits`; or neither: every row in
``train``, in file order.

CSV columns are typed by a first pass over the whole file (every cell is
read as text, so one chunk cannot type a column differently from another):
a column is numeric when more than half of its non-missing cells are
numbers, and then a cell that is not a number is an error (the row is
skipped with ``on_error="skip"``); boolean when every non-missing cell is
``true``/``false`` in any case; text otherwise. A row with more fields than
the header is an error (skipped with ``on_error="skip"``); a row with fewer
fields has missing values at its end (pandas cannot tell them from empty
cells). Missing cells are the pandas defaults (empty, ``NA``, ``NaN``,
``null``, ...).

Memory stays bounded: CSV is read in chunks of ``chunk_rows`` rows (pandas
``chunksize``), Parquet batch by batch within row groups (pyarrow
``iter_batches``). What is held whole: the class names of categorical
columns and, with ``split_ratios``, one byte per row (its split) and, when
stratified, four bytes per row (its class).
"""

from __future__ import annotations

import json
import os
import re
import secrets
import time
import warnings
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal

import numpy as np
import numpy.typing as npt

from h5ml import spec
from h5ml.errors import EncodingError, IngestError, WriterError
from h5ml.ingest.arrays import SPLIT_SUFFIXES
from h5ml.ingest.pipeline import (
    SKIPPED_ATTR,
    IngestReport,
    OnError,
    Skipped,
    check_output,
    conversion_metadata,
    natural_key,
    progress_bar,
)
from h5ml.ingest.samples import copy_shuffled
from h5ml.ingest.splitting import assign_splits
from h5ml.model.values import Categorical, FeatureSpec
from h5ml.sampling.seeds import draw_seed

__all__ = ["DEFAULT_CHUNK_ROWS", "MAX_LABEL_CLASSES", "TABLE_FORMATS", "TableFormat", "convert_table"]

#: The table formats, and the file suffixes that select each.
TableFormat = Literal["csv", "parquet"]
TABLE_FORMATS: Final[Mapping[str, TableFormat]] = {
    ".csv": "csv",
    ".tsv": "csv",
    ".txt": "csv",
    ".parquet": "parquet",
    ".pq": "parquet",
}
#: Rows read at once (a CSV chunk; at most one Parquet batch).
DEFAULT_CHUNK_ROWS: Final = 65536
#: A label column with more distinct values than this is refused as categorical unless listed in ``categorical``.
MAX_LABEL_CLASSES: Final = 65536

_BOOL_TEXT: Final = {"true": True, "false": False}
_INT_RE: Final = r"[+-]?\d{1,18}"  # fits int64 whatever the digits
_LINE_RE: Final = re.compile(r"line (\d+)")


@dataclass
class _TextStats:
    """Pass-1 counts of one CSV column (cells read as text)."""

    missing: int = 0
    present: int = 0
    numbers: int = 0
    integers: int = 0
    booleans: int = 0


@dataclass
class _Column:
    """How one column is stored."""

    name: str
    kind: str  # "int", "float", "bool", "bool-float", "string", "categorical"
    dtype: np.dtype[Any] | None = None
    class_names: list[str] | None = None
    role: str = "input"

    def spec(self) -> FeatureSpec:
        """The writer's options for this column's feature."""
        if self.kind == "categorical":
            return FeatureSpec(encoding="categorical", class_names=self.class_names, role=self.role)
        if self.kind == "string":
            return FeatureSpec(encoding="string", role=self.role)
        return FeatureSpec(encoding="dense", dtype=self.dtype, role=self.role)


@dataclass
class _Plan:
    """What pass 1 found: the stored columns, the row count, the split of each row or the split column."""

    columns: list[_Column]
    rows: int = 0
    split_counts: dict[str, int] = field(default_factory=dict)
    assigned: npt.NDArray[np.int8] | None = None  # split index of each row (split_ratios)
    split_names: list[str] = field(default_factory=list)
    skipped_lines: list[Skipped] = field(default_factory=list)


class _Uniques:
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
        return sorted(self.ids, key=natural_key)

    def row_ids(self) -> npt.NDArray[np.int32] | None:
        return None if self.rows is None else np.concatenate(self.rows) if self.rows else np.zeros(0, np.int32)


# --------------------------------------------------------------------------
# reading


def _format_of(source: Path, given: TableFormat | None) -> TableFormat:
    if given is not None:
        if given not in ("csv", "parquet"):
            raise ValueError(f"format must be 'csv', 'parquet' or None (from the suffix), got {given!r}")
        return given
    found = TABLE_FORMATS.get(source.suffix.lower())
    if found is None:
        raise IngestError(
            f"{source}: cannot tell the table format from the suffix {source.suffix!r}; known suffixes are "
            f"{sorted(TABLE_FORMATS)}: rename the file or pass format='csv' or 'parquet' (--format)",
            path=str(source),
        )
    return found


def _csv_chunks(
    source: Path, sep: str, encoding: str, chunk_rows: int, on_error: OnError, bad_lines: list[Skipped] | None
) -> Iterator[Any]:
    """The CSV's chunks, every cell as text (NaN = missing); rows with too many fields stop or are recorded."""
    import pandas as pd

    try:
        reader = pd.read_csv(
            source,
            sep=sep,
            dtype=str,
            index_col=False,
            chunksize=chunk_rows,
            encoding=encoding,
            on_bad_lines="error" if on_error == "stop" else "warn",
        )
    except pd.errors.EmptyDataError:
        raise IngestError(
            f"{source}: the file is empty (no header row); nothing to convert", path=str(source)
        ) from None
    except (ValueError, OSError, UnicodeDecodeError) as exc:
        raise IngestError(f"{source}: cannot be read as CSV ({exc})", path=str(source)) from None
    with reader:
        while True:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                try:
                    chunk = next(reader)
                except StopIteration:
                    chunk = None
                except pd.errors.ParserError as exc:
                    raise IngestError(
                        f"{source}: a row has more fields than the header ({str(exc).strip()}); nothing was written. Fix the row, "
                        "or skip such rows with on_error='skip' (--on-error skip)",
                        path=str(source),
                    ) from None
                except (ValueError, UnicodeDecodeError) as exc:
                    raise IngestError(
                        f"{source}: cannot be read as {encoding} CSV ({exc}); pass the file's encoding",
                        path=str(source),
                    ) from None
            for warning in caught:
                text = str(warning.message)
                if not issubclass(warning.category, pd.errors.ParserWarning):
                    warnings.warn_explicit(warning.message, warning.category, warning.filename, warning.lineno)
                elif text.startswith("Skipping line"):
                    if bad_lines is not None:
                        match = _LINE_RE.search(text)
                        where = f"{source}:line {match.group(1)}" if match else str(source)
                        bad_lines.append(Skipped(where, f"a row with more fields than the header ({text.strip()})"))
                else:
                    raise IngestError(
                        f"{source}: the rows do not match the header ({text.strip()}); every row needs as many "
                        "fields as the header",
                        path=str(source),
                    )
            if chunk is None:
                return
            yield chunk


def _parquet_file(source: Path) -> Any:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        return pq.ParquetFile(source)
    except (pa.ArrowException, OSError) as exc:
        raise IngestError(f"{source}: cannot be read as Parquet ({exc})", path=str(source)) from None


def _parquet_chunks(pf: Any, source: Path, columns: Sequence[str], chunk_rows: int) -> Iterator[Any]:
    """The Parquet file's batches (within row groups) as pandas DataFrames of ``columns``."""
    import pyarrow as pa

    try:
        for batch in pf.iter_batches(batch_size=chunk_rows, columns=list(columns)):
            yield batch.to_pandas()
    except (pa.ArrowException, OSError) as exc:
        raise IngestError(f"{source}: the Parquet data cannot be read ({exc})", path=str(source)) from None


# --------------------------------------------------------------------------
# typing the columns


def _check_names(
    source: Path, names: Sequence[Any], wanted: Sequence[str] | None, required: Sequence[str], reserved: Sequence[str]
) -> None:
    """Refuse duplicate columns, column names that are not feature names (§5.1.1), and named columns that are missing.

    ``wanted``: the columns to store (None: all); ``required``: the columns the options name (label,
    categorical, split column); ``reserved``: the split column (read, not stored).
    """
    present = [str(n) for n in names]
    if len(set(present)) != len(present):
        dup = sorted({n for n in present if present.count(n) > 1})
        raise IngestError(f"{source}: the columns {dup} appear more than once; rename them", path=str(source))
    missing = sorted({c for c in [*(wanted or ()), *required] if c not in present})
    if missing:
        raise IngestError(f"{source}: no column named {missing}; the columns are {present}", path=str(source))
    for name in wanted if wanted is not None else present:
        if name not in reserved and not spec.is_valid_name(name):
            raise IngestError(
                f"{source}: the column name {name!r} is not a valid feature name (§5.1.1: no '/', no leading '.', "
                "'_' or whitespace, no trailing whitespace); rename the column or leave it out with columns=[...]",
                path=str(source),
            )


def _named(label: str | None, categorical: Sequence[str]) -> list[str]:
    return ([] if label is None else [label]) + list(categorical)


def _text_stats(stats: _TextStats, text: Any) -> None:
    """Count one chunk of a CSV column (a Series of str, NaN for missing)."""
    import pandas as pd

    present = text.notna()
    stats.present += int(present.sum())
    stats.missing += int((~present).sum())
    numbers = pd.to_numeric(text, errors="coerce").notna()
    stats.numbers += int(numbers.sum())
    stats.integers += int(text.str.fullmatch(_INT_RE).fillna(False).astype(bool).sum())
    stats.booleans += int(text.str.lower().isin(list(_BOOL_TEXT)).sum())


def _csv_kind(stats: _TextStats) -> tuple[str, np.dtype[Any] | None, bool]:
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


def _parquet_kind(source: Path, name: str, arrow_type: Any, nulls: int) -> tuple[str, np.dtype[Any] | None, bool]:
    """``(kind, dtype, integral)`` of a Parquet column from its Arrow type and null count."""
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


def _as_text(values: Any) -> Any:
    """A column's values as a Series of text, NaN for missing: bools ``True``/``False``, whole floats as integers."""
    import pandas as pd

    series = values if isinstance(values, pd.Series) else pd.Series(values)
    if isinstance(series.dtype, pd.StringDtype):
        return series

    def text(value: Any) -> Any:
        if value is None or (isinstance(value, float) and np.isnan(value)) or value is pd.NA:
            return np.nan
        if isinstance(value, (bool, np.bool_)):
            return "True" if value else "False"
        if isinstance(value, (float, np.floating)) and float(value).is_integer():
            return str(int(value))
        return str(value)

    return series.astype(object).map(text)


# --------------------------------------------------------------------------
# converting one chunk


def _convert(column: _Column, values: Any, csv: bool) -> tuple[Any, npt.NDArray[np.bool_] | None]:
    """One chunk of a column -> (the writer's values, bad-row mask or None)."""
    import pandas as pd

    if column.kind == "categorical":
        assert column.class_names is not None
        codes = {name: code for code, name in enumerate(column.class_names)}
        mapped = _as_text(values).map(codes).fillna(-1).to_numpy(dtype=np.int64)
        return Categorical(mapped, column.class_names), None
    if column.kind == "string":
        text = _as_text(values)
        return [str(v) for v in text.where(text.notna(), "").tolist()], None
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


def _take(values: Any, rows: npt.NDArray[np.intp]) -> Any:
    if isinstance(values, Categorical):
        return Categorical(values.codes[rows], values.class_names)
    if isinstance(values, np.ndarray):
        return values[rows]
    return [values[i] for i in rows.tolist()]


# --------------------------------------------------------------------------
# the conversion


def convert_table(
    source: str | os.PathLike[str],
    output: str | os.PathLike[str],
    *,
    label: str | None = None,
    categorical: Sequence[str] = (),
    strings: Sequence[str] = (),
    split_column: str | None = None,
    split_ratios: Mapping[str, float] | None = None,
    columns: Sequence[str] | None = None,
    format: TableFormat | None = None,
    sep: str | None = None,
    encoding: str = "utf-8",
    chunk_rows: int = DEFAULT_CHUNK_ROWS,
    metadata: Mapping[str, Any] | None = None,
    compression: str | None = None,
    shuffle: bool = False,
    seed: int | None = None,
    workers: int = 1,
    on_error: OnError = "stop",
    progress: bool | None = None,
    overwrite: bool = False,
) -> IngestReport:
    """Convert a CSV or Parquet table to an h5ml file, one feature per column (§5, §6).

    See the module docstring for how columns are typed and stored, the
    splits, and what is held in memory.

    Parameters
    ----------
    source
        The ``.csv``/``.tsv`` or ``.parquet`` file (see ``format``). CSV files
        have a header row.
    output
        The h5ml file to write.
    label
        The column to predict: role ``target``; categorical (§6.5) unless it
        holds fractional numbers; the stratum of ``split_ratios``.
    categorical
        Columns to store categorical (any type; class names are the values as
        text, sorted; missing values code -1).
    strings
        Columns to store as text whatever they hold (codes such as ``"00123"``
        that look like numbers), missing values ``""``.
    split_column
        A column naming each row's split (``train``, ``valid``, ``test``, or
        any valid split name); not stored. A row with no split is an error
        (skipped with ``on_error="skip"``).
    split_ratios
        ``{"train": 0.8, "test": 0.2}``: give rows splits at random with
        these shares, stratified on a categorical ``label``, deterministically
        for ``seed`` (0 when None). Not with ``split_column``. With neither,
        every row goes to ``train``.
    columns
        The columns to convert (default: all); ``split_column`` is read either way.
    format
        ``"csv"`` or ``"parquet"``; None: from the suffix (:data:`TABLE_FORMATS`).
    sep
        The CSV field separator; default ``","`` (``"\\t"`` for ``.tsv``).
    encoding
        The CSV text encoding.
    chunk_rows
        Rows read at once; memory grows with it.
    metadata
        Root metadata (§4.2) over the defaults of :func:`h5ml.ingest.conversion_metadata`.
    compression
        ``"gzip"`` or None.
    shuffle, seed
        Store each split in a seeded random order (§7.6): the rows are first
        written to a staging file beside ``output`` (as much disk again),
        then copied in the order ``numpy.random.default_rng(seed).permutation(n)``
        by :func:`h5ml.ingest.samples.copy_shuffled`. A seed is drawn when
        None.
    workers
        Not used (tables are parsed by pandas/pyarrow in this process);
        accepted so that every converter takes the same options.
    on_error
        ``"stop"``: a bad row (more fields than the header, a cell that is not
        a number in a numeric column, no split) raises
        :class:`h5ml.IngestError` naming the file, the row (or line) and the
        column; nothing is written. ``"skip"``: the row is left out and
        recorded in :data:`h5ml.ingest.SKIPPED_ATTR` and the report as
        ``<file>:line <l>`` (too many fields) or ``<file>:row <i>`` (data
        rows counted from 1 after the header, not counting the rows left out
        for too many fields).
    progress
        Show a progress bar on stderr (None: when stderr is a terminal).
    overwrite
        Replace an existing ``output``.

    Returns
    -------
    IngestReport
        Rows written per split, skipped rows, time taken.

    Raises
    ------
    FileNotFoundError
        If ``source`` does not exist.
    IngestError
        If the file cannot be read as CSV/Parquet, a named column does not
        exist, a column name is not a valid feature name, a Parquet type has
        no feature, the label has more than :data:`MAX_LABEL_CLASSES` classes
        (list it in ``categorical`` to allow it), the table has no rows, or
        (``on_error="stop"``) a row is bad.
    ValueError
        If options contradict (``split_column`` with ``split_ratios``), the
        ratios are invalid, ``chunk_rows < 1`` or ``on_error`` is unknown.
    FileExistsError, IsADirectoryError
        As :func:`h5ml.ingest.check_output`.
    """
    del workers  # see the docstring
    start = time.perf_counter()
    src = Path(source)
    if not src.exists():
        raise FileNotFoundError(f"{src}: no such file")
    if on_error not in ("stop", "skip"):
        raise ValueError(f"on_error must be 'stop' or 'skip', got {on_error!r}")
    if split_column is not None and split_ratios is not None:
        raise ValueError("give split_column or split_ratios, not both")
    if not isinstance(chunk_rows, int) or chunk_rows < 1:
        raise ValueError(f"chunk_rows must be an integer >= 1, got {chunk_rows!r}")
    if split_ratios is not None:
        assign_splits(0, split_ratios, 0)  # checks the ratios now, not after a pass over the file
        bad_names = [name for name in split_ratios if not spec.is_valid_name(name)]
        if bad_names:
            raise ValueError(f"split_ratios names {bad_names}, which are not valid split names (§5.1.1)")
    for option, value in (("categorical", categorical), ("strings", strings)):
        if isinstance(value, str):
            raise ValueError(f"{option} must be a list of column names, got the string {value!r}")
    out = check_output(output, overwrite, [src])
    kind = _format_of(src, format)
    separator = sep if sep is not None else ("\t" if src.suffix.lower() == ".tsv" else ",")
    reserved = [split_column] if split_column is not None else []
    wanted = None if columns is None else [c for c in columns if c != split_column]
    for name in [*_named(label, categorical), *strings]:
        if wanted is not None and name not in wanted:
            wanted.append(name)
    bar = progress_bar(progress, 1)
    try:
        if kind == "csv":
            plan = _plan_csv(
                src,
                separator,
                encoding,
                chunk_rows,
                on_error,
                wanted,
                reserved,
                label,
                categorical,
                strings,
                split_column,
                split_ratios,
                seed,
                bar,
            )
        else:
            plan = _plan_parquet(
                src, chunk_rows, wanted, reserved, label, categorical, strings, split_column, split_ratios, seed, bar
            )
        if plan.rows == 0:
            raise IngestError(f"{src}: the table has no rows; nothing to convert", path=str(src))
        meta = conversion_metadata(f"{kind.upper()} table", src, metadata)
        meta.setdefault("name", out.stem)
        report = IngestReport(out, skipped=list(plan.skipped_lines))
        if shuffle and seed is None:
            seed = draw_seed()
        staging = out.parent / f".{out.name}.h5ml-stage-{secrets.token_hex(8)}"
        try:
            _write(
                src,
                kind,
                staging if shuffle else out,
                plan,
                separator,
                encoding,
                chunk_rows,
                on_error,
                split_column,
                meta,
                None if shuffle else compression,
                report,
                bar,
            )
            if shuffle:
                assert seed is not None
                report.samples = copy_shuffled(staging, out, seed=seed, compression=compression, overwrite=True)
        finally:
            staging.unlink(missing_ok=True)
    finally:
        if bar is not None:
            bar.stop()
    report.seconds = time.perf_counter() - start
    return report


def _label_column(
    name: str,
    kind: str,
    dtype: np.dtype[Any] | None,
    integral: bool,
    label: str | None,
    categorical: Sequence[str],
    strings: Sequence[str],
) -> _Column:
    """The stored form of a column: categorical when listed, or the label unless fractional; text when listed."""
    role = "target" if name == label else "input"
    if name in categorical or kind == "categorical" or (name == label and (integral or kind == "string")):
        return _Column(name, "categorical", role=role)
    if name in strings:
        return _Column(name, "string", role=role)
    return _Column(name, kind, dtype, role=role)


def _finish_plan(
    source: Path,
    plan: _Plan,
    uniques: Mapping[str, _Uniques],
    label: str | None,
    split_ratios: Mapping[str, float] | None,
    seed: int | None,
    split_counts: Mapping[str, int] | None,
) -> _Plan:
    """Class names of the categorical columns; the split of each row (ratios) or the split counts (column)."""
    for column in plan.columns:
        if column.kind != "categorical":
            continue
        found = uniques[column.name]
        if found.over:
            raise IngestError(
                f"{source}: the label column {column.name!r} has more than {MAX_LABEL_CLASSES} distinct values, too "
                "many for a categorical label; list it in categorical=[...] (--categorical) to store it so anyway",
                path=str(source),
            )
        names = found.sorted_names()
        if not names:  # every value missing: one placeholder class keeps the feature valid (§6.5: K >= 1)
            names = ["missing"]
        column.class_names = names
    if split_ratios is not None:
        strata = None
        if label is not None and any(c.name == label and c.kind == "categorical" for c in plan.columns):
            strata = uniques[label].row_ids()
        chosen = assign_splits(plan.rows, split_ratios, 0 if seed is None else seed, strata)
        plan.split_names = list(split_ratios)
        index = {name: i for i, name in enumerate(plan.split_names)}
        plan.assigned = np.fromiter((index[s] for s in chosen), dtype=np.int8, count=plan.rows)
        plan.split_counts = {name: int((plan.assigned == i).sum()) for name, i in index.items()}
    elif split_counts is not None:
        plan.split_counts = dict(split_counts)
    else:
        plan.split_counts = {"train": plan.rows}
    return plan


def _split_text(values: Any) -> Any:
    """Split-column values -> standard split names (aliases of SPLIT_SUFFIXES mapped), NaN when missing."""
    text = _as_text(values)
    return text.map(lambda v: v if not isinstance(v, str) else SPLIT_SUFFIXES.get(v.strip(), v.strip()))


def _plan_csv(
    source: Path,
    sep: str,
    encoding: str,
    chunk_rows: int,
    on_error: OnError,
    wanted: list[str] | None,
    reserved: list[str],
    label: str | None,
    categorical: Sequence[str],
    strings: Sequence[str],
    split_column: str | None,
    split_ratios: Mapping[str, float] | None,
    seed: int | None,
    bar: Any,
) -> _Plan:
    """Pass 1 over a CSV: type the columns, count rows and splits, collect class names."""
    task = None if bar is None else bar.add_task(f"{source.name}: reading", total=None)
    stats: dict[str, _TextStats] = {}
    uniques: dict[str, _Uniques] = {}
    names: list[str] = []
    counts: dict[str, int] = {}
    bad_lines: list[Skipped] = []
    rows = 0
    for chunk in _csv_chunks(source, sep, encoding, chunk_rows, on_error, bad_lines):
        if not names:
            named = [*_named(label, categorical), *strings, *reserved]
            _check_names(source, list(chunk.columns), wanted, named, reserved)
            names = [str(c) for c in chunk.columns if (wanted is None or c in wanted) and c not in reserved]
            stats = {n: _TextStats() for n in names}
            keep = label is not None and split_ratios is not None
            uniques = {n: _Uniques(None, False) for n in categorical}
            if label is not None and label not in uniques:
                uniques[label] = _Uniques(MAX_LABEL_CLASSES, keep)
            elif label is not None:
                uniques[label] = _Uniques(None, keep)
        for name in names:
            _text_stats(stats[name], chunk[name])
        for name, found in uniques.items():
            found.add(chunk[name])
        if split_column is not None:
            for split, count in _split_text(chunk[split_column]).value_counts().items():
                counts[str(split)] = counts.get(str(split), 0) + int(count)
        rows += len(chunk)
        if bar is not None:
            bar.advance(task, len(chunk))
    columns = []
    for name in names:
        kind, dtype, integral = _csv_kind(stats[name])
        columns.append(_label_column(name, kind, dtype, integral, label, categorical, strings))
    plan = _Plan(columns, rows, skipped_lines=bad_lines)
    return _finish_plan(source, plan, uniques, label, split_ratios, seed, counts if split_column else None)


def _plan_parquet(
    source: Path,
    chunk_rows: int,
    wanted: list[str] | None,
    reserved: list[str],
    label: str | None,
    categorical: Sequence[str],
    strings: Sequence[str],
    split_column: str | None,
    split_ratios: Mapping[str, float] | None,
    seed: int | None,
    bar: Any,
) -> _Plan:
    """Pass 1 over a Parquet file: types from the schema, null counts, class names, split counts."""
    import pyarrow as pa

    pf = _parquet_file(source)
    schema = pf.schema_arrow
    _check_names(source, schema.names, wanted, [*_named(label, categorical), *strings, *reserved], reserved)
    names = [n for n in schema.names if (wanted is None or n in wanted) and n not in reserved]
    nullable = [
        n for n in names if pa.types.is_integer(schema.field(n).type) or pa.types.is_boolean(schema.field(n).type)
    ]
    keep = label is not None and split_ratios is not None
    uniques: dict[str, _Uniques] = {n: _Uniques(None, False) for n in categorical}
    if label is not None:
        uniques[label] = _Uniques(None if label in categorical else MAX_LABEL_CLASSES, keep)
    dictionary = [n for n in names if pa.types.is_dictionary(schema.field(n).type)]
    for name in dictionary:
        uniques.setdefault(name, _Uniques(None, False))
    needed = sorted({*nullable, *uniques, *reserved})
    nulls = dict.fromkeys(nullable, 0)
    counts: dict[str, int] = {}
    rows = int(pf.metadata.num_rows)
    task = None if bar is None else bar.add_task(f"{source.name}: reading", total=rows)
    if needed:
        for chunk in _parquet_chunks(pf, source, needed, chunk_rows):
            for name in nullable:
                nulls[name] += int(chunk[name].isna().sum())
            for name, found in uniques.items():
                found.add(_as_text(chunk[name]))
            if split_column is not None:
                for split, count in _split_text(chunk[split_column]).value_counts().items():
                    counts[str(split)] = counts.get(str(split), 0) + int(count)
            if bar is not None:
                bar.advance(task, len(chunk))
    columns = []
    for name in names:
        if name in strings or name in categorical:  # stored as text: any type will do
            kind, dtype, integral = "string", None, False
        else:
            kind, dtype, integral = _parquet_kind(source, name, schema.field(name).type, nulls.get(name, 0))
        columns.append(_label_column(name, kind, dtype, integral, label, categorical, strings))
    plan = _Plan(columns, rows)
    return _finish_plan(source, plan, uniques, label, split_ratios, seed, counts if split_column else None)


def _write(
    source: Path,
    kind: TableFormat,
    target: Path,
    plan: _Plan,
    sep: str,
    encoding: str,
    chunk_rows: int,
    on_error: OnError,
    split_column: str | None,
    meta: Mapping[str, Any],
    compression: str | None,
    report: IngestReport,
    bar: Any,
) -> None:
    """Pass 2: convert each chunk and append its rows to their splits."""
    from h5ml.writer.writer import Writer

    names = [c.name for c in plan.columns]
    specs = {c.name: c.spec() for c in plan.columns}
    task = None if bar is None else bar.add_task(f"{target.name}: writing", total=plan.rows)
    if kind == "csv":
        chunks = _csv_chunks(source, sep, encoding, chunk_rows, on_error, None)
    else:
        reserved = [split_column] if split_column is not None else []
        chunks = _parquet_chunks(_parquet_file(source), source, [*names, *reserved], chunk_rows)
    offset = 0
    started: set[str] = set()
    with Writer(target, meta, compression=compression, features=specs) as writer:
        for chunk in chunks:
            n = len(chunk)
            bad = np.zeros(n, dtype=bool)
            reasons: dict[int, str] = {}
            values: dict[str, Any] = {}
            for column in plan.columns:
                converted, wrong = _convert(column, chunk[column.name], kind == "csv")
                values[column.name] = converted
                if wrong is not None and wrong.any():
                    for i in np.flatnonzero(wrong & ~bad).tolist():
                        cell = chunk[column.name].iloc[i]
                        reasons[i] = (
                            f"column {column.name!r} holds {cell!r}, which is not a "
                            f"{'boolean' if column.kind.startswith('bool') else 'number'}, but the column is "
                            f"{'boolean' if column.kind.startswith('bool') else 'numeric'} (its other values are)"
                        )
                    bad |= wrong
            if plan.assigned is not None:
                split_of = np.asarray(plan.split_names, dtype=object)[plan.assigned[offset : offset + n]]
            elif split_column is not None:
                split_of = _split_text(chunk[split_column]).to_numpy(dtype=object)
                for i, split in enumerate(split_of.tolist()):
                    if not bad[i] and (not isinstance(split, str) or not spec.is_valid_name(split)):
                        what = "no value" if not isinstance(split, str) else f"{split!r}, not a valid split name"
                        reasons[i] = f"the split column {split_column!r} holds {what} (§5.1.1)"
                        bad[i] = True
            else:
                split_of = np.full(n, "train", dtype=object)
            for i in sorted(reasons):
                where = f"{source}:row {offset + i + 1}"
                if on_error == "stop":
                    raise IngestError(
                        f"{where} (data rows counted from 1 after the header): {reasons[i]}; nothing was written to "
                        f"{report.output}. Fix the row, or skip bad rows with on_error='skip' (--on-error skip)",
                        path=str(source),
                    )
                report.skipped.append(Skipped(where, reasons[i]))
            for split in sorted({s for s in split_of[~bad].tolist()}, key=natural_key):
                rows = np.flatnonzero((split_of == split) & ~bad)
                if split not in started:
                    writer.add_split(split, expected_samples=plan.split_counts.get(split))
                    started.add(split)
                try:
                    writer.append(split, {name: _take(values[name], rows) for name in names})
                except (WriterError, EncodingError) as exc:
                    raise IngestError(
                        f"{source}: rows {offset + 1}..{offset + n} cannot be written to split {split!r} ({exc})",
                        path=str(source),
                    ) from exc
                report.samples[split] = report.samples.get(split, 0) + int(rows.size)
            offset += n
            if bar is not None:
                bar.advance(task, n)
        if report.skipped:
            writer.update_metadata({SKIPPED_ATTR: json.dumps([s.to_json() for s in report.skipped])})
