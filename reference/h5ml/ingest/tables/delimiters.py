"""The CSV field delimiter: checking the one given, and refusing a table that was read with the wrong one.

A file separated by spaces, tabs, semicolons or bars and read with the
default ``","`` parses as one column whose values are whole lines: stored,
it would be one string feature, a silently wrong file. :func:`missed_delimiter`
spots it in the first chunk read: one column, and a likely delimiter
(:data:`LIKELY_DELIMITERS`) that occurs the same number of times (at least
once) in every non-missing value, and in the header's one name when there
is a header. The conversion then stops and asks for ``delimiter``
(``--delimiter``); giving the delimiter, even ``","``, confirms the one
column and turns the check off.
"""

from __future__ import annotations

import re
from typing import Any, Final

from h5ml.ingest.options import parameter_error

__all__ = ["LIKELY_DELIMITERS", "check_delimiter", "describe_delimiter", "missed_delimiter"]

#: Delimiters other than ``","`` that tables use, looked for in a table read as one column.
LIKELY_DELIMITERS: Final = ("\t", ";", "|", " ")
_NAMES: Final = {"\t": "tab", " ": "space", ";": "semicolon", "|": "bar", ",": "comma"}
#: Characters that cannot separate fields: pandas gives them other meanings (quotes, line ends, escapes).
_FORBIDDEN: Final = frozenset({'"', "\n", "\r", "\\"})


def describe_delimiter(delimiter: str) -> str:
    """A delimiter as a message shows it: ``"';' (semicolon)"``, ``"'\\t' (tab)"``."""
    name = _NAMES.get(delimiter)
    return repr(delimiter) + ("" if name is None else f" ({name})")


def check_delimiter(delimiter: Any) -> str:
    """Return ``delimiter`` checked: one character that can separate CSV fields.

    Raises
    ------
    h5ml.errors.ParameterError
        If it is not a string of one character, or is a quote, a line end or a backslash.
    """
    if not isinstance(delimiter, str) or len(delimiter) != 1 or delimiter in _FORBIDDEN:
        raise parameter_error(
            "delimiter",
            f"delimiter must be one character that separates the fields, such as ',', ';', '|', ' ' or a tab "
            f"('\\t'; on the command line --delimiter '\\t' or tab), got {delimiter!r}",
        )
    return delimiter


def missed_delimiter(chunk: Any, header: bool) -> str | None:
    """The likely delimiter of a CSV chunk that parsed as one column, or None.

    Parameters
    ----------
    chunk
        The first chunk read: a pandas DataFrame, every cell text (NaN for missing).
    header
        Whether the file's first line was read as the header (its one name is then checked too).

    Returns
    -------
    str or None
        The first of :data:`LIKELY_DELIMITERS` that occurs the same number of
        times, at least once, in every non-missing value (and in the column's
        name, with a header); None when the chunk has several columns, no
        values, or no such character.
    """
    if len(chunk.columns) != 1:
        return None
    values = chunk.iloc[:, 0].dropna()
    if values.empty:
        return None
    name = str(chunk.columns[0])
    for delimiter in LIKELY_DELIMITERS:
        counts = values.str.count(re.escape(delimiter))
        first = int(counts.iloc[0])
        if first >= 1 and bool((counts == first).all()) and (not header or name.count(delimiter) == first):
            return delimiter
    return None
