"""Temporary files that killed writers leave behind (issue 14, item 3; SPEC §4.4).

Real writers in child interpreters are killed with SIGKILL while they hold a
temporary file; the next write to the same target removes that stale file
and never the temporary of a writer that is still running; ``h5ml
temporaries`` lists both and ``--clean`` removes only the stale one.
"""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import h5ml
from h5ml.tools import cli
from h5ml.writer.temporaries import machine_tag, remove_stale, temporaries

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL and os.kill(pid, 0) are POSIX")

HOLDER = """
import sys, time
import numpy as np
import h5ml
w = h5ml.Writer(sys.argv[1], metadata={"name": "held"})
w.append("train", {"x": np.arange(1000, dtype=np.float32)})
print("holding", flush=True)
time.sleep(120)
"""


def _holder(tmp_path: Path, target: Path) -> subprocess.Popen[str]:
    """A child interpreter with an open Writer on ``target``, once its temporary file exists."""
    script = tmp_path / "holder.py"
    script.write_text(HOLDER, encoding="utf-8")
    proc = subprocess.Popen([sys.executable, str(script), str(target)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    deadline = time.monotonic() + 60
    line = ""
    while time.monotonic() < deadline and "holding" not in line:
        line = proc.stdout.readline()
    assert "holding" in line, "the writer did not start"
    return proc


def _kill(proc: subprocess.Popen[str]) -> None:
    """SIGKILL the child, wait for it and close its pipe."""
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    if proc.stdout is not None:
        proc.stdout.close()


def _run_cli(*args: str) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    code = cli.run(list(args), out, err)
    return code, out.getvalue() + err.getvalue()


def test_the_next_write_removes_a_killed_writers_temporary_and_keeps_a_live_one(tmp_path: Path) -> None:
    """A SIGKILLed writer's temporary is stale and goes at the next write; a running writer's stays live."""
    target = tmp_path / "data.h5"
    killed = _holder(tmp_path, target)
    _kill(killed)
    [stale] = temporaries(tmp_path, target.name)
    assert (stale.pid, stale.state) == (killed.pid, "stale") and stale.size > 0
    running = _holder(tmp_path, target)  # the next writer to the target: it removes the stale temporary
    try:
        assert not stale.path.exists()
        [live] = temporaries(tmp_path, target.name)
        assert (live.pid, live.state) == (running.pid, "live")
        h5ml.write(target, {"train": {"x": np.arange(4)}}, {"name": "t"})  # and the one after it keeps the live one
        assert [(t.pid, t.state) for t in temporaries(tmp_path, target.name)] == [(running.pid, "live")]
        assert live.path.exists()
        with h5ml.open(target) as ds:
            assert ds["train"]["x"][:].tolist() == [0, 1, 2, 3]
    finally:
        _kill(running)


def test_the_command_lists_and_cleans_only_stale_temporaries(tmp_path: Path) -> None:
    """``h5ml temporaries`` shows state, size and owner; ``--clean`` removes the stale file and keeps the rest."""
    target = tmp_path / "data.h5"
    killed = _holder(tmp_path, target)
    _kill(killed)
    older = tmp_path / f".{target.name}.h5ml-tmp-0123456789abcdef"  # a writer before pids were recorded
    older.write_bytes(b"x" * 10)
    elsewhere = tmp_path / f".{target.name}.h5ml-tmp-{killed.pid}-000000000000-0123456789abcdef"  # other machine
    elsewhere.write_bytes(b"y" * 20)
    code, out = _run_cli("temporaries", str(tmp_path))
    assert code == 0
    lines = out.splitlines()
    assert len(lines) == 4, out
    assert any(line.startswith("stale") and f"(process {killed.pid}; its writer is gone)" in line for line in lines)
    assert any(line.startswith("live ") and "an older writer (no process id in the name)" in line for line in lines)
    assert f"h5ml temporaries {tmp_path} --clean" in lines[-1]
    code, out = _run_cli("temporaries", str(target), "--clean")
    assert code == 0 and f"removed 1 stale temporary file(s) of {target}" in out
    assert sorted(p.name for p in tmp_path.glob(".data.h5.h5ml-tmp-*")) == sorted([older.name, elsewhere.name])
    code, out = _run_cli("temporaries", str(tmp_path / "other.h5"))
    assert (code, out.strip()) == (0, f"no temporary files of {tmp_path / 'other.h5'}")


def test_what_cannot_be_known_dead_is_never_removed(tmp_path: Path) -> None:
    """Another machine's tag, no pid in the name, this very process, a process that exists: all live, all kept."""
    tag = machine_tag()
    names = [
        ".t.h5.h5ml-tmp-0123456789abcdef",
        f".t.h5.h5ml-tmp-{os.getpid()}-{tag}-0123456789abcdef",
        f".t.h5.h5ml-tmp-1-{tag}-0123456789abcdef",  # pid 1 always exists
        ".t.h5.h5ml-tmp-999999-ffffffffffff-0123456789abcdef",
        ".t.h5.h5ml-tmp-extra-0123456789abcdef",  # not a writer's name: not listed at all
    ]
    for name in names:
        (tmp_path / name).write_bytes(b"")
    assert remove_stale(tmp_path) == []
    assert [t.state for t in temporaries(tmp_path)] == ["live"] * 4
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(names)


def test_the_missing_folder_is_an_error_in_the_commands_words(tmp_path: Path) -> None:
    """A PATH in a folder that does not exist: exit 2 and one line, no traceback."""
    code, out = _run_cli("temporaries", str(tmp_path / "no" / "x.h5"))
    assert code == 2 and "Traceback" not in out and "does not exist" in out
