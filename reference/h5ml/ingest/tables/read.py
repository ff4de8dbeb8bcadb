"""Reading a CSV or Parquet table in chunks, and what to read: :class:`TableRequest` (§5.1).

CSV is read by pandas ``rows_per_read`` rows at a time with every cell as
text (so that one chunk cannot type a column differently from another);
Parquet by pyarrow, batch by batch within row groups. A row with more fields
than the header stops the conversion or is recorded as skipped; a file that
cannot be read is an :class:`h5ml.IngestError` naming it.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal

import numpy as np

from h5ml.errors import IngestError
from h5ml.ingest.naming import standard_split_name
from h5ml.ingest.options import OnError, check_choice
from h5ml.ingest.report import Skipped

__all__ = [
    "DEFAULT_ROWS_PER_READ",
    "TABLE_FORMATS",
    "TableFormat",
    "TableRequest",
    "as_text",
    "csv_chunks",
    "format_of",
    "parquet_chunks",
    "parquet_file",
    "source_split_text",
    "split_text",
]

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
DEFAULT_ROWS_PER_READ: Final = 65536

_LINE_RE: Final = re.compile(r"line (\d+)")


@dataclass(frozen=True)
class TableRequest:
    """What to read of a table and how (the options of :func:`h5ml.ingest.tables.convert_table`, checked).

    Attributes
    ----------
    source
        The file.
    format
        ``"csv"`` or ``"parquet"``.
    delimiter, text_encoding
        The CSV field delimiter and text codec.
    delimiter_given
        Whether the caller gave the delimiter (then a table read as one column is what was asked for).
    header
        Whether the CSV's first line names the columns; without, they are named ``c0``, ``c1``, ...
    rows_per_read
        Rows read at once.
    on_error
        ``"stop"`` or ``"skip"``.
    wanted
        The columns to store (None: all), with those the options name.
    reserved
        The split column, read and not stored (empty without one).
    label, categorical, strings, split_column, split_ratios
        As the converter takes them.
    split_seed
        The seed of the ``split_ratios`` cut (:func:`h5ml.ingest.splitting.split_seed`).
    """

    source: Path
    format: TableFormat
    delimiter: str
    text_encoding: str
    rows_per_read: int
    on_error: OnError
    wanted: tuple[str, ...] | None
    reserved: tuple[str, ...]
    label: str | None
    categorical: tuple[str, ...]
    strings: tuple[str, ...]
    split_column: str | None
    split_ratios: Mapping[str, float] | None
    split_seed: int
    delimiter_given: bool = False
    header: bool = True

    @property
    def named(self) -> list[str]:
        """The columns the options name as categorical (the label first)."""
        return ([] if self.label is None else [self.label]) + list(self.categorical)


def format_of(source: Path, given: TableFormat | None) -> TableFormat:
    """The table format: ``given``, or from the file's suffix (:data:`TABLE_FORMATS`).

    Raises
    ------
    h5ml.errors.ParameterError
        If ``given`` is not ``"csv"``, ``"parquet"`` or None.
    h5ml.IngestError
        If the suffix does not tell.
    """
    if given is not None:
        check_choice("format", given, ("csv", "parquet"))
        return given
    found = TABLE_FORMATS.get(source.suffix.lower())
    if found is None:
        raise IngestError(
            f"{source}: cannot tell the table format from the suffix {source.suffix!r}; known suffixes are "
            f"{sorted(TABLE_FORMATS)}: rename the file or pass format='csv' or 'parquet'",
            path=str(source),
        )
    return found


def _next_chunk(reader: Any, source: Path, text_encoding: str) -> tuple[Any, list[Any]]:
    """The reader's next chunk (None at the end) and the warnings pandas gave while reading it."""
    import pandas as pd

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            chunk = next(reader)
        except StopIteration:
            chunk = None
        except pd.errors.ParserError as exc:
            raise IngestError(
                f"{source}: a row has more fields than the header ({str(exc).strip()}); nothing was written. Fix "
                "the row, or skip such rows with on_error='skip' (--on-error skip)",
                path=str(source),
            ) from None
        except (ValueError, UnicodeDecodeError) as exc:
            raise IngestError(
                f"{source}: cannot be read as {text_encoding} CSV ({exc}); pass the file's text_encoding",
                path=str(source),
            ) from None
    return chunk, list(caught)


def csv_chunks(request: TableRequest, bad_lines: list[Skipped] | None) -> Iterator[Any]:
    """The CSV's chunks, every cell as text (NaN = missing); rows with too many fields stop or are recorded.

    Parameters
    ----------
    request
        What to read.
    bad_lines
        Where the rows with too many fields are recorded (``on_error="skip"``), or None not to record them.

    Yields
    ------
    pandas.DataFrame
        At most ``request.rows_per_read`` rows, every column a Series of str (NaN for missing).

    Raises
    ------
    h5ml.IngestError
        If the file is empty, cannot be read as CSV in its codec, or (``on_error="stop"``) a row is bad.
    """
    import pandas as pd

    source = request.source
    try:
        reader = pd.read_csv(
            source,
            sep=request.delimiter,
            header=0 if request.header else None,
            dtype=str,
            index_col=False,
            chunksize=request.rows_per_read,
            encoding=request.text_encoding,
            on_bad_lines="error" if request.on_error == "stop" else "warn",
        )
    except pd.errors.EmptyDataError:
        raise IngestError(
            f"{source}: the file is empty (no header row); nothing to convert", path=str(source)
        ) from None
    except (ValueError, OSError, UnicodeDecodeError) as exc:
        raise IngestError(f"{source}: cannot be read as CSV ({exc})", path=str(source)) from None
    with reader:
        while True:
            chunk, caught = _next_chunk(reader, source, request.text_encoding)
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
            if not request.header:  # pandas numbers the columns 0, 1, ...: names that are feature names
                chunk.columns = [f"c{i}" for i in range(len(chunk.columns))]
            yield chunk


def parquet_file(source: Path) -> Any:
    """The file opened with ``pyarrow.parquet.ParquetFile``.

    Raises
    ------
    h5ml.IngestError
        If pyarrow cannot read it as Parquet.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        return pq.ParquetFile(source)
    except (pa.ArrowException, OSError) as exc:
        raise IngestError(f"{source}: cannot be read as Parquet ({exc})", path=str(source)) from None


def parquet_chunks(pf: Any, source: Path, columns: Sequence[str], rows_per_read: int) -> Iterator[Any]:
    """The Parquet file's batches (within row groups) as pandas DataFrames of ``columns``.

    Columns of arrays (:func:`h5ml.ingest.tables.arrow.array_layout`: lists,
    fixed-size lists, binary) are object columns of their samples
    (:func:`h5ml.ingest.tables.arrow.arrow_samples`: one array or ``bytes``
    per row); the others are as ``pyarrow`` converts them to pandas.

    Raises
    ------
    h5ml.IngestError
        If the data cannot be read, or a sample of an array column is null.
    """
    import pandas as pd
    import pyarrow as pa

    from h5ml.ingest.tables.arrow import array_layout, arrow_samples

    schema = pf.schema_arrow
    layouts = {n: array_layout(source, n, schema.field(n).type) for n in columns}
    scalar = [n for n in columns if layouts[n] is None]
    try:
        for batch in pf.iter_batches(batch_size=rows_per_read, columns=list(columns)):
            frame = batch.select(scalar).to_pandas() if scalar else pd.DataFrame(index=pd.RangeIndex(batch.num_rows))
            for name in columns:
                layout = layouts[name]
                if layout is not None:
                    cells = np.empty(batch.num_rows, dtype=object)
                    for i, sample in enumerate(arrow_samples(source, name, batch.column(name), layout)):
                        cells[i] = sample  # one array (or bytes) per cell, whatever their shapes
                    frame[name] = pd.Series(cells, index=frame.index, dtype=object)
            yield frame[list(columns)]
    except (pa.ArrowException, OSError) as exc:
        raise IngestError(f"{source}: the Parquet data cannot be read ({exc})", path=str(source)) from None


def as_text(values: Any) -> Any:
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


def source_split_text(values: Any) -> Any:
    """Split-column values as the table has them (stripped text), NaN when missing."""
    return as_text(values).map(lambda v: v.strip() if isinstance(v, str) else v)


def split_text(values: Any) -> Any:
    """Split-column values -> standard split names (:func:`h5ml.ingest.naming.standard_split_name`), NaN when missing."""
    return source_split_text(values).map(lambda v: standard_split_name(v) if isinstance(v, str) else v)
