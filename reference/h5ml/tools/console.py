"""What every command shares: the output streams, JSON output, file checks and the exit codes.

Commands write through a :class:`Streams` (the caller's stdout and stderr,
with rich consoles over them), so that :func:`h5ml.tools.cli.run` runs the
whole command line in-process, with any streams (tests pass ``io.StringIO``).

Terminals: every console of the command line comes from
:func:`terminal_console`. On a stream that is not a terminal (a pipe, a file,
a CI log) it writes plain text, 120 columns, without a single escape
sequence: no colour, no style, no cursor control, and no progress bar is
started there. On a terminal it styles the text (bold names, red for what
cannot be read), unless the environment variable ``NO_COLOR`` is set to a
non-empty value (https://no-color.org): then it writes no colour and no style
at all, only the text (a progress bar, asked for on a terminal, still moves
the cursor to redraw itself).
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final, TextIO

from rich.console import Console

from h5ml.model.paths import require_regular_file

__all__ = [
    "EXIT_ERROR",
    "EXIT_INTERRUPTED",
    "EXIT_INVALID",
    "EXIT_OK",
    "NO_COLOR_ENV",
    "Streams",
    "no_color",
    "plural",
    "print_json",
    "require_file",
    "safe_copy",
    "safe_text",
    "size_text",
    "terminal_console",
    "tuple_text",
]

#: Exit code: every file valid, or the command succeeded.
EXIT_OK: Final = 0
#: Exit code: ``validate`` found an invalid file (with ``--strict``: a warning too).
EXIT_INVALID: Final = 1
#: Exit code: a file could not be read at all, a usage error, or another failure.
EXIT_ERROR: Final = 2
#: Exit code: interrupted (Ctrl-C, SIGTERM).
EXIT_INTERRUPTED: Final = 130

#: Rendering width when the output is not a terminal (files, pipes, tests).
_PLAIN_WIDTH: Final = 120
#: The environment variable that turns colour and styles off when it is set and not empty (https://no-color.org).
NO_COLOR_ENV: Final = "NO_COLOR"


def no_color() -> bool:
    """Whether ``NO_COLOR`` is set to a non-empty value: then no console writes colour or style (an empty value does not count)."""
    return os.environ.get(NO_COLOR_ENV, "") != ""


def terminal_console(stream: TextIO, *, force_terminal: bool | None = None) -> Console:
    """A rich console over ``stream``: styled on a terminal unless ``NO_COLOR``; plain text, 120 columns, elsewhere.

    Parameters
    ----------
    stream
        Where to write.
    force_terminal
        True: treat ``stream`` as a terminal (``--progress`` asked on a pipe); False: never; None: when
        ``stream.isatty()``. ``FORCE_COLOR`` in the environment is not followed: output that is not a terminal
        stays plain.

    Returns
    -------
    rich.console.Console
        Without markup, highlighting or emoji (a file's names are shown as they are, §10.2); with
        ``color_system=None`` (no escape sequence of colour or style) when :func:`no_color`.
    """
    is_tty = bool(getattr(stream, "isatty", lambda: False)()) if force_terminal is None else force_terminal
    return Console(
        file=stream,
        highlight=False,
        markup=False,
        emoji=False,
        width=None if is_tty else _PLAIN_WIDTH,
        force_terminal=is_tty,
        color_system=None if no_color() else "auto",
    )


@dataclass
class Streams:
    """Where a command writes: the caller's stdout and stderr, with rich consoles over them."""

    stdout: TextIO
    stderr: TextIO

    def console(self) -> Console:
        """A rich console over stdout (:func:`terminal_console`): plain text, 120 columns, when it is not a terminal."""
        return terminal_console(self.stdout)


def safe_text(text: str, *, lines: bool = False) -> str:
    """``text`` with every control character escaped, so that a file's text cannot drive the terminal (§10.2).

    C0 and C1 control characters and DEL (ESC starts the sequences that set a
    window title or clear the screen) become ``\\xNN`` / ``\\uNNNN``
    escapes, as Python writes them; with ``lines``, line feeds and tabs
    are kept (a description's paragraphs).
    """
    keep = "\n\t" if lines else ""
    if all(c.isprintable() or c in keep for c in text):
        return text
    return "".join(c if c.isprintable() or c in keep or not _is_control(c) else repr(c)[1:-1] for c in text)


def _is_control(char: str) -> bool:
    code = ord(char)
    return code < 0x20 or 0x7F <= code < 0xA0


def safe_copy(value: Any) -> Any:
    """A copy of ``value`` (dataclasses, lists, tuples, dicts, strings) with every string passed through :func:`safe_text`.

    Long text (a ``description``) keeps its line feeds and tabs; names and
    other strings lose them too.
    """
    if isinstance(value, str):
        return safe_text(value, lines="\n" in value and len(value) > 80)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        changes = {f.name: safe_copy(getattr(value, f.name)) for f in dataclasses.fields(value)}
        return dataclasses.replace(value, **changes)
    if isinstance(value, list):
        return [safe_copy(v) for v in value]
    if isinstance(value, tuple):
        return tuple(safe_copy(v) for v in value)
    if isinstance(value, dict):
        return {safe_copy(k): safe_copy(v) for k, v in value.items()}
    return value


def size_text(nbytes: int | None) -> str:
    """A byte count for people: ``"512 B"``, ``"1.9 GB"`` (powers of 1000), ``"?"`` for None."""
    if nbytes is None:
        return "?"
    value = float(nbytes)
    for unit in ("B", "kB", "MB", "GB", "TB"):
        if value < 1000 or unit == "TB":
            return f"{int(value)} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1000
    return f"{nbytes} B"  # pragma: no cover - the loop always returns


def print_json(streams: Streams, document: Any, indent: int | None = 2) -> None:
    """Write ``document`` to stdout as JSON (UTF-8 text, no NaN), then a newline."""
    streams.stdout.write(json.dumps(document, indent=indent, ensure_ascii=False, allow_nan=False))
    streams.stdout.write("\n")


def require_file(path: str) -> None:
    """Refuse a missing path, a directory or a special file with a one-line message before HDF5 sees it.

    Raises
    ------
    FileNotFoundError, IsADirectoryError, OSError
        If ``path`` is missing, a directory, or not a regular file (a FIFO or a device would block).
    """
    require_regular_file(path)


def plural(count: int, word: str) -> str:
    """``"1 error"``, ``"2 errors"``; ``"info"`` has no plural."""
    return f"{count} {word}" if count == 1 or word == "info" else f"{count} {word}s"


def tuple_text(items: Sequence[object]) -> str:
    """A shape as Python writes a tuple: ``(3, 4)``, ``(5,)``, ``()``."""
    return "(" + ", ".join(str(d) for d in items) + ("," if len(items) == 1 else "") + ")"
