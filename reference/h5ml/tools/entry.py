"""The ``h5ml`` console script: signal handlers first, then the command line (:func:`h5ml.tools.cli.main`).

Importing the command line (click, rich and every command) takes a noticeable
fraction of a second. A Ctrl-C or SIGTERM in that time would print a
``KeyboardInterrupt`` traceback or end the process without a word, so this
module, which imports almost nothing, installs the SIGTERM handler first and
says ``h5ml: interrupted`` (exit 130) for an interrupt that comes before the
command line is ready.
"""

from __future__ import annotations

import signal
import sys
from typing import Any

__all__ = ["main"]

#: Exit code of an interrupted command (as :data:`h5ml.tools.console.EXIT_INTERRUPTED`, without importing it).
_EXIT_INTERRUPTED = 130


def _terminated(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def main() -> None:
    """Console-script entry point ``h5ml``: run :func:`h5ml.tools.cli.main`, interruptible from the first instant."""
    signal.signal(signal.SIGTERM, _terminated)
    try:
        from h5ml.tools.cli import main as cli_main
    except KeyboardInterrupt:
        sys.stderr.write("h5ml: interrupted\n")
        sys.exit(_EXIT_INTERRUPTED)
    cli_main()
