"""``NO_COLOR`` and output that is not a terminal: what every command writes (issue 17, tools/console.py).

The commands run as real processes (``python -m h5ml``), their stdout and
stderr on a real pseudo-terminal (:func:`pty.openpty`) or on pipes:

- on a terminal, names are bold and what cannot be read is red (the test first
  sees escape sequences there, so that it can fail);
- ``NO_COLOR=1`` on the same terminal: not one escape sequence on standard
  output; a progress bar asked for (``--progress``) still moves the cursor but
  has no colour;
- ``NO_COLOR=`` (empty) counts as not set (https://no-color.org);
- on pipes, with ``FORCE_COLOR=1`` even: no escape sequence at all, no
  progress bar.

Time: about 25 s on a shared machine (13 runs, each a fresh Python process).
"""

from __future__ import annotations

import os
import pty
import re
import select
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import h5ml

ROOT = Path(__file__).resolve().parent.parent
RUN_TIMEOUT = 120  # seconds for one command (a few in practice)
#: An SGR sequence (colour or style): ESC [ params m.
SGR = re.compile(rb"\x1b\[[0-9;]*m")

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="pseudo-terminals are POSIX")


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR", "TERM", "COLUMNS")}
    path = os.pathsep.join([str(ROOT / "reference"), str(ROOT / "adapters"), env.get("PYTHONPATH", "")])
    return {**env, "PYTHONPATH": path, "TERM": "xterm-256color", "COLUMNS": "160", **extra}


def on_terminal(args: list[str], cwd: Path, **env: str) -> tuple[int, bytes]:
    """Run ``python -m h5ml ARGS`` with stdout and stderr on one pseudo-terminal; return (exit code, bytes written)."""
    main, child = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "h5ml", *args],
        stdin=subprocess.DEVNULL,
        stdout=child,
        stderr=child,
        cwd=cwd,
        env=_env(**env),
    )
    os.close(child)
    data = b""
    deadline = time.monotonic() + RUN_TIMEOUT
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([main], [], [], 1.0)
            if ready:
                try:
                    chunk = os.read(main, 65536)
                except OSError:  # the child closed the terminal (EIO on Linux)
                    break
                if not chunk:
                    break
                data += chunk
            elif proc.poll() is not None:
                break
        code = proc.wait(timeout=max(1.0, deadline - time.monotonic()))
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(main)
    return code, data


def on_pipes(args: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess[bytes]:
    """Run ``python -m h5ml ARGS`` with stdout and stderr on pipes."""
    return subprocess.run(
        [sys.executable, "-m", "h5ml", *args],
        cwd=cwd,
        env=_env(**env),
        capture_output=True,
        timeout=RUN_TIMEOUT,
        check=False,
    )


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """good.h5 and table.csv to convert (the table converter shows a progress bar)."""
    where = tmp_path_factory.mktemp("terminal")
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    h5ml.write(where / "good.h5", {"train": {"x": x, "y": np.arange(4) % 2}}, metadata={"name": "toy"})
    rows = "".join(f"{i},{i / 2},{'cat' if i % 2 else 'dog'}\n" for i in range(200))
    (where / "table.csv").write_text("a,b,label\n" + rows, encoding="utf-8")
    return where


@pytest.mark.parametrize("args", [["validate", "good.h5"], ["inspect", "good.h5"]], ids=" ".join)
def test_no_color_on_a_terminal_writes_no_escape_sequence(folder: Path, args: list[str]) -> None:
    """On a terminal the text is styled; NO_COLOR=1 takes every escape sequence away, and only them."""
    code, styled = on_terminal(args, folder)
    no_color_code, plain = on_terminal(args, folder, NO_COLOR="1")
    assert code == no_color_code == 0
    assert b"\x1b[1m" in styled, styled[:400]  # bold names: the check below can fail
    assert b"good.h5" in plain and b"\x1b[" not in plain, plain[:400]
    assert SGR.sub(b"", styled) == plain  # the same text, only the styles gone


def test_an_empty_no_color_counts_as_not_set(folder: Path) -> None:
    """NO_COLOR= (empty): styled as without it (https://no-color.org: set to a non-empty value)."""
    _, empty = on_terminal(["validate", "good.h5"], folder, NO_COLOR="")
    assert b"\x1b[1m" in empty, empty[:400]


def test_no_color_takes_the_colour_out_of_progress_bars(folder: Path) -> None:
    """verify --progress and convert --progress on a terminal: coloured bars, and with NO_COLOR=1 not one colour."""
    for args in (["verify", "--progress", "good.h5"], ["convert", "--progress", "--overwrite", "table.csv", "out.h5"]):
        code, coloured = on_terminal(args, folder)
        assert code == 0, coloured[-600:]
        assert re.search(rb"\x1b\[(?:3\d|9\d|38;)", coloured), coloured[:400]  # the bar is coloured on a terminal
        code, bar = on_terminal(args, folder, NO_COLOR="1")
        assert code == 0, bar[-600:]
        assert b"\x1b[2K" in bar  # the bar is there: it redraws its line
        colours = [m for m in SGR.findall(bar) if re.search(rb"\[(?:.*;)?(?:3\d|4\d|9\d|10\d|38|48)", m)]
        assert colours == [], colours[:5]


def test_output_that_is_not_a_terminal_has_no_escape_sequence(folder: Path) -> None:
    """On pipes, with FORCE_COLOR=1 even: no colour, no cursor control, no progress bar, on stdout or stderr."""
    for args in (
        ["validate", "good.h5", "missing.h5"],
        ["inspect", "good.h5"],
        ["verify", "good.h5"],
        ["convert", "--overwrite", "table.csv", "piped.h5"],
    ):
        proc = on_pipes(args, folder, FORCE_COLOR="1")
        assert proc.stdout, args
        assert b"\x1b" not in proc.stdout and b"\x1b" not in proc.stderr, (args, proc.stdout[:300], proc.stderr[:300])
        assert b"samples/s" not in proc.stderr, args
