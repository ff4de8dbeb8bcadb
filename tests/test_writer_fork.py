"""A process that forks while an ``h5ml.Writer`` is open (issue 14, item 2; SPEC §4.4).

Before: a child that exited normally (``sys.exit``) ran the finalizer it
inherited and deleted the parent's temporary file, so the parent's
``close()`` raised ``FileNotFoundError`` and its samples were lost. Now the
finalizer and every cleanup act only in the process that created the writer,
and a child that tries to use the writer gets an error instead of writing
into the parent's file.

Each test runs a real script in a child interpreter (a real ``os.fork`` and a
real ``sys.exit``), with a time limit, and then reads the file it wrote.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import h5ml

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="os.fork is POSIX only")

SCRIPT = """
import os, sys
import numpy as np
import h5ml
from h5ml.errors import WriterError

path, child = sys.argv[1], sys.argv[2]
w = h5ml.Writer(path, metadata={{"name": "t"}})
w.append("train", {{"x": np.arange(8, dtype=np.float32)}})
pid = os.fork()
if pid == 0:
{child}
_, status = os.waitpid(pid, 0)
print("child status", os.waitstatus_to_exitcode(status), flush=True)
w.append("train", {{"x": np.arange(8, 16, dtype=np.float32)}})
w.close()
"""

CHILDREN = {
    # exits normally: the atexit handlers run, the weakref finalizers among them
    "exits": "    sys.exit(0)",
    # drops its copy of the writer and collects it, then exits normally
    "collects": "    del w\n    import gc; gc.collect()\n    sys.exit(0)",
    # tries to write and to finish the parent's file
    "writes": textwrap.indent(
        textwrap.dedent(
            """
            try:
                w.append("train", {"x": np.zeros(8, dtype=np.float32)})
            except WriterError as exc:
                print("append:", exc, flush=True)
            try:
                w.close()
            except WriterError as exc:
                print("close:", exc, flush=True)
            sys.exit(3)
            """
        ),
        "    ",
    ),
}


def _run(tmp_path: Path, child: str) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "fork.py"
    script.write_text(SCRIPT.format(child=CHILDREN[child]), encoding="utf-8")
    return subprocess.run(
        [sys.executable, str(script), str(tmp_path / "out.h5"), child],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=tmp_path,
    )


@pytest.mark.parametrize("child", ["exits", "collects", "writes"])
def test_a_forked_child_never_touches_the_parents_file(tmp_path: Path, child: str) -> None:
    """The parent finishes its file with all 16 samples whatever the child did; no temporary file remains."""
    proc = _run(tmp_path, child)
    assert proc.returncode == 0, proc.stderr[-3000:]
    with h5ml.open(tmp_path / "out.h5") as ds:
        np.testing.assert_array_equal(ds["train"]["x"][:], np.arange(16, dtype=np.float32))
    assert not list(tmp_path.glob(".out.h5.h5ml-tmp-*"))
    assert h5ml.validate(tmp_path / "out.h5", deep=True).valid


def test_a_forked_child_that_uses_the_writer_gets_an_error_naming_both_processes(tmp_path: Path) -> None:
    """append and close in the child raise WriterError saying which process created the writer and what to do."""
    proc = _run(tmp_path, "writes")
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.splitlines()
    assert "child status 3" in lines
    for call in ("append:", "close:"):
        line = next(line for line in lines if line.startswith(call))
        assert "this writer was created by process" in line and "a child forked while the writer was open" in line
        assert "create a writer in this process instead" in line
