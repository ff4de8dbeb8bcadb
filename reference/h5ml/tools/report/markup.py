"""The HTML pieces every part of the ``h5ml report`` page is built of: escaped text, numbers, tables, the style.

Every text of the file (names, descriptions, class names, strings, issue
messages) is data, never markup (§10.2): :func:`escape` passes it through
:func:`html.escape`, quotes included. :func:`table` builds a table of escaped
cells inside its own scrolling box (``<div class="wide">``, CSS
``overflow-x: auto``), so that a wide table scrolls within the page instead
of making the whole page scroll sideways, and leaves out the columns whose
every cell is empty when asked (the Shards table's "could not be read" when
every shard was read). :data:`STYLE` is the page's style sheet.

It implements no SPEC clause.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence
from typing import Any, Final

__all__ = ["STYLE", "escape", "number", "table"]

#: The page's style (in a ``<style>`` element: the page links to no stylesheet).
STYLE: Final = """
body { font-family: system-ui, sans-serif; margin: 1.5em auto; max-width: 72em; padding: 0 1em; color: #1d1d1f;
  background: #fff; }
p, h1, h2, h3, h4, .pre { overflow-wrap: anywhere; }
h1 { font-size: 1.6em; } h2 { border-bottom: 1px solid #ccd; padding-bottom: .2em; margin-top: 1.6em; }
.wide { overflow-x: auto; max-width: 100%; margin: .6em 0; }
table { border-collapse: collapse; font-size: .9em; }
th, td { border: 1px solid #d5d8de; padding: .25em .5em; text-align: left; vertical-align: top; }
th { background: #eef1f6; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
.card th { width: 10em; } .pre { white-space: pre-wrap; }
.valid { color: #17692e; font-weight: bold; } .invalid { color: #a3161b; font-weight: bold; }
.note { background: #f6f7f9; border-left: 4px solid #3b6ea8; padding: .5em 1em; }
.plots { display: flex; flex-wrap: wrap; gap: 1em; } .plots figure { margin: 0; max-width: 100%; }
.plots img { max-width: 100%; }
.grid { display: flex; flex-wrap: wrap; gap: .8em; }
.grid figure { margin: 0; text-align: center; font-size: .85em; }
.grid img { width: 96px; height: 96px; object-fit: contain; image-rendering: pixelated; border: 1px solid #d5d8de; }
.clip { display: inline-block; margin: .4em; text-align: center; font-size: .85em; max-width: 100%; }
.clip img { display: block; width: 320px; height: 120px; max-width: 100%; }
"""


def escape(value: Any) -> str:
    """Any value as escaped text (§10.2: a file's text is data, never markup).

    Parameters
    ----------
    value
        Anything; ``str(value)`` is escaped, quotes included.

    Returns
    -------
    str
        Text safe in an element and in a quoted attribute.
    """
    return html.escape(str(value), quote=True)


#: Integers up to this magnitude are all binary64 values (2**53): an integral float below it is one exactly.
_EXACT_FLOAT_INTEGERS: Final = 2**53


def number(value: Any, *, exact: bool = False) -> str:
    """A figure as text: floats to 6 significant digits, None as ``""``, anything else (an int) as ``str``.

    Parameters
    ----------
    value
        A number or None.
    exact
        The value is a minimum or maximum of an integer feature, which must show every digit (6 digits would
        hide that 9223372036854775806 and 9223372036854775807 differ): an int is written whole, as always; a
        float (a statistic stored as binary64, §6.7) holding an integer below 2**53 in magnitude is written as
        that integer, any other float as the shortest text that reads back as it (``9.223372036854776e+18``:
        the float that the file holds, not an integer it cannot hold exactly).

    Returns
    -------
    str
        ``"7.99156"``, ``"3200"``, ``"9223372036854775807"`` or ``""``.
    """
    if value is None:
        return ""
    if isinstance(value, float):
        if not exact:
            return f"{value:.6g}"
        if value.is_integer() and abs(value) < _EXACT_FLOAT_INTEGERS:
            return str(int(value))
        return repr(value)
    return str(value)


def table(
    headers: Sequence[str],
    rows: Iterable[Sequence[Any]],
    css: str = "",
    numeric: Sequence[int] = (),
    drop_empty: bool = False,
) -> str:
    """A table of escaped cells in its own horizontally scrolling box.

    Parameters
    ----------
    headers
        The column headers.
    rows
        The cells of each row, one per header (``str(cell)`` is shown; ``""`` is an empty cell).
    css
        The table's class (``"shards"``), or ``""``.
    numeric
        The positions of the columns to right-align (numbers).
    drop_empty
        Leave out the columns whose every cell is ``""`` (a table with no row keeps every column).

    Returns
    -------
    str
        ``<div class="wide"><table ...>...</table></div>``.
    """
    body = [list(row) for row in rows]
    keep = [i for i in range(len(headers)) if not drop_empty or not body or any(str(r[i]) != "" for r in body)]
    head = "".join(f"<th>{escape(headers[i])}</th>" for i in keep)
    lines = []
    for row in body:
        cells = "".join(
            f'<td class="num">{escape(row[i])}</td>' if i in numeric else f"<td>{escape(row[i])}</td>" for i in keep
        )
        lines.append(f"<tr>{cells}</tr>")
    klass = f' class="{css}"' if css else ""
    return (
        f'<div class="wide"><table{klass}><thead><tr>{head}</tr></thead><tbody>{"".join(lines)}</tbody></table></div>'
    )
