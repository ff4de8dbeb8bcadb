"""Every Python block of the guides runs, so the guides cannot rot.

Each guide's Python blocks run in order as one script, in an empty folder, in
a subprocess with a time limit; a block preceded by the line
``<!-- not-run -->`` (one that needs a cluster or a remote bucket) is only
compiled. The scripts assert what the guides' text says they do.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
GUIDES = ROOT / "docs" / "guides"
#: The guides written with runnable code (the others are written by their features' owners).
RUNNABLE = ["pytorch.md", "keras.md", "converting.md", "sharded.md"]
NOT_RUN = "<!-- not-run -->"
#: Each guide runs in about 2 to 9 s on an idle 2-core machine (imports of torch and keras included).
GUIDE_TIMEOUT_S = 240
_BLOCK = re.compile(r"^(?P<marker><!-- not-run -->\n)?```python\n(?P<code>.*?)^```$", re.MULTILINE | re.DOTALL)


def _blocks(guide: str) -> list[tuple[bool, str]]:
    """``(runs, code)`` of each Python block of ``guide``, in order."""
    text = (GUIDES / guide).read_text(encoding="utf-8")
    return [(match.group("marker") is None, match.group("code")) for match in _BLOCK.finditer(text)]


@pytest.mark.parametrize("guide", RUNNABLE)
def test_every_not_run_marker_sits_before_a_python_block(guide: str) -> None:
    text = (GUIDES / guide).read_text(encoding="utf-8")
    markers = text.count(NOT_RUN)
    assert markers == sum(not runs for runs, _ in _blocks(guide))
    assert text.count("```python") == len(_blocks(guide))


@pytest.mark.parametrize("guide", RUNNABLE)
def test_the_guide_runs(guide: str, tmp_path: Path) -> None:
    blocks = _blocks(guide)
    runnable = [code for runs, code in blocks if runs]
    assert len(runnable) >= 3, f"{guide} has {len(runnable)} runnable Python blocks"
    for runs, code in blocks:
        if not runs:
            compile(code, f"{guide} (not run)", "exec")
    script = tmp_path / "guide.py"
    script.write_text("\n\n".join(runnable), encoding="utf-8")
    work = tmp_path / "work"
    work.mkdir()
    env = dict(os.environ, OMP_NUM_THREADS="1")
    env["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT / "reference"), str(ROOT / "adapters"), *filter(None, [os.environ.get("PYTHONPATH")])]
    )
    result = subprocess.run(
        [sys.executable, str(script)],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=GUIDE_TIMEOUT_S,
        check=False,
    )
    assert result.returncode == 0, f"{guide}:\n{result.stdout}\n{result.stderr}"
    assert any(work.iterdir()), f"{guide} wrote nothing"
