"""The progress bar of conversions: samples, samples per second and time left, on a terminal only.

The one module below :mod:`h5ml.tools` that imports rich (the layering
contract in ``pyproject.toml`` allows exactly this import).
:class:`ProgressBars` is what the converters use: a bar that may be absent,
stopped when its ``with`` block ends.
"""

from __future__ import annotations

from types import TracebackType
from typing import Any

__all__ = ["ProgressBars", "progress_bar"]


def progress_bar(enabled: bool | None, total: int) -> Any:
    """Return a started rich progress bar on stderr (samples, samples/s, time left), or None.

    None when ``enabled`` is False, or None and stderr is not a terminal
    (``--quiet``, pipes, CI logs). Add tasks with ``bar.add_task(description,
    total=n)``, advance them, and ``bar.stop()`` at the end.

    Whether stderr is a terminal is what ``isatty()`` says: ``FORCE_COLOR``
    in the environment does not make a pipe one (a CI log would get the bar's
    colours and cursor control), and ``NO_COLOR`` (non-empty) takes the colours
    away (rich follows it), as every console of the command line does
    (:mod:`h5ml.tools.console`).
    """
    import sys

    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        ProgressColumn,
        Task,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )
    from rich.text import Text

    class SpeedColumn(ProgressColumn):
        """Samples per second; a dash until rich has measured a speed (``task.speed`` is None at first)."""

        def render(self, task: Task) -> Text:
            speed = task.speed
            return Text(f"{'-' if speed is None else f'{speed:,.0f}':>8} samples/s")

    console = Console(stderr=True, force_terminal=bool(getattr(sys.stderr, "isatty", lambda: False)()))
    if enabled is False or (enabled is None and not console.is_terminal):
        return None
    bar = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        SpeedColumn() if total else TextColumn(""),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=console,
        transient=False,
    )
    bar.start()
    return bar


class ProgressBars:
    """The progress bars of one command, or nothing: ``with ProgressBars(progress, total) as bars: ...``.

    Parameters
    ----------
    enabled
        True, False, or None for "when stderr is a terminal" (:func:`progress_bar`).
    total
        The samples to come, all bars together (0 when unknown).
    """

    def __init__(self, enabled: bool | None, total: int) -> None:
        self._bar = progress_bar(enabled, total)

    def add(self, description: str, total: int | None) -> Any:
        """Start a bar of ``total`` steps (None: unknown) and return its id (None when no bar is shown)."""
        return None if self._bar is None else self._bar.add_task(description, total=total)

    def advance(self, task: Any, steps: int = 1) -> None:
        """Advance bar ``task`` (an id from :meth:`add`) by ``steps``."""
        if self._bar is not None:
            self._bar.advance(task, steps)

    def stop(self) -> None:
        """Stop showing the bars (the terminal keeps their last state)."""
        if self._bar is not None:
            self._bar.stop()

    def __enter__(self) -> ProgressBars:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.stop()
