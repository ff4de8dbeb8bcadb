"""The progress bar of conversions: samples, samples per second and time left, on a terminal only.

The one module below :mod:`h5ml.tools` that imports rich (the layering
contract in ``pyproject.toml`` allows exactly this import).
"""

from __future__ import annotations

from typing import Any

__all__ = ["progress_bar"]


def progress_bar(enabled: bool | None, total: int) -> Any:
    """Return a started rich progress bar on stderr (samples, samples/s, time left), or None.

    None when ``enabled`` is False, or None and stderr is not a terminal
    (``--quiet``, pipes, CI logs). Add tasks with ``bar.add_task(description,
    total=n)``, advance them, and ``bar.stop()`` at the end.
    """
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

    console = Console(stderr=True)
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
