"""HDF5 file locks: a complete file is read past a lock that another process holds (issue 14, item 9; SPEC §10.4.1).

Before: with HDF5's default locking, ``h5ml.open`` failed with a bare
``OSError`` when another process held a write lock on a complete file: a
program that opened it with h5py ``"a"``, or a child forked while an
``h5ml.Writer`` was open, which keeps the writer's lock on the finished file
until it exits. Now the reader, the validator and ``inspect``/``dump`` open it
again without locking and check its completion marker; the lock is an error
(:class:`h5ml.errors.FileLockedError`, an ``H5MLError`` and an ``OSError``)
only when it was asked for (``locking=True``, ``HDF5_USE_FILE_LOCKING``), and
for a source to convert that another process is writing (no completion
marker tells whether it is finished).

Every lock here is real: another process holds it (a child interpreter, with
a time limit), and each test first checks that HDF5's own open fails on it.
"""

from __future__ import annotations

import contextlib
import json
import os
import pickle
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np
import pytest

import h5ml
from _files import HOLDER_SCRIPT, held_open, run_cli
from h5ml.errors import FileLockedError, H5MLError, IncompleteFileError

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="HDF5's flock locks and os.fork are POSIX only")

#: Seconds a child interpreter may take.
LIMIT = 120


#: The holder: open the file with h5py in the given mode (HDF5 takes its lock), say so, wait for stdin to close.
def holding(path: Path, mode: str = "a") -> contextlib.AbstractContextManager[None]:
    """Another process holds ``path`` open with h5py in ``mode`` (and HDF5's lock) until the block ends."""
    return held_open(path, mode, timeout=LIMIT)


def lock_is_real(path: Path) -> None:
    """Assert that HDF5's own default open of ``path`` fails on the lock: another process holds it."""
    with pytest.raises(BlockingIOError, match="unable to lock file"):
        h5py.File(path, "r")


def write_file(path: Path) -> Path:
    """A small complete file: ``train/x`` is ``arange(40).reshape(10, 4)`` float32, ``train/y`` is ``arange(10)``."""
    x = np.arange(40, dtype=np.float32).reshape(10, 4)
    h5ml.write(path, {"train": {"x": x, "y": np.arange(10, dtype=np.int64)}}, metadata={"name": "locks"})
    return path


def assert_content(dataset: h5ml.Dataset) -> None:
    np.testing.assert_array_equal(dataset["train"]["x"][:], np.arange(40, dtype=np.float32).reshape(10, 4))
    np.testing.assert_array_equal(dataset["train"]["y"][[9, 0, 3]], [9, 0, 3])


def test_reader_reads_a_complete_file_past_another_process_write_lock(tmp_path: Path) -> None:
    """SPEC §10.4.1-S3: h5ml.open reads a complete file that another process holds open for writing (it raised a
    bare OSError), without the lock; once the lock is gone it takes the lock again."""
    path = write_file(tmp_path / "held.h5")
    with holding(path):
        lock_is_real(path)
        with h5ml.open(path) as dataset:
            assert_content(dataset)
            assert dataset.h5file.id.get_access_plist().get_file_locking()[0] == 0  # opened without the lock
        with h5ml.open(path, locking=False) as dataset:
            assert_content(dataset)
    with h5ml.open(path) as dataset:
        assert dataset.h5file.id.get_access_plist().get_file_locking()[0] == 1  # tried with the lock first
        assert_content(dataset)


def test_locking_true_reports_the_lock_as_file_locked_error(tmp_path: Path) -> None:
    """SPEC §10.4.1-S3: a lock asked for (locking=True) that cannot be taken is FileLockedError, an H5MLError and an
    OSError, naming the file, who holds the lock and what to do in Python's words; it pickles (DataLoader workers)."""
    path = write_file(tmp_path / "held.h5")
    with holding(path), pytest.raises(FileLockedError) as info:
        h5ml.open(path, locking=True)
    err = info.value
    assert isinstance(err, H5MLError) and isinstance(err, OSError) and err.path == str(path)
    message = str(err)
    assert message.startswith(f"{path}: another process holds HDF5's lock on the file")
    assert "locking=True asks for the lock" in message and "locking=None (the default)" in message
    assert "[Errno" not in message and "HDF5_USE_FILE_LOCKING" not in message
    again = pickle.loads(pickle.dumps(err))
    assert type(again) is FileLockedError and str(again) == message and again.path == str(path)


def test_another_handle_of_this_process_with_other_locking_settings(tmp_path: Path) -> None:
    """SPEC §10.4.1-S3: a handle of this process opened without locking no longer makes h5ml.open fail (it raised
    OSError "flag values don't match"); locking=True then says that this process holds the file."""
    path = write_file(tmp_path / "mine.h5")
    with h5py.File(path, "r", locking=False):
        with pytest.raises(OSError, match="locking flag values don't match"):
            h5py.File(path, "r")  # HDF5's own default open fails on it
        with h5ml.open(path) as dataset:
            assert_content(dataset)
        with pytest.raises(FileLockedError, match="this process already has the file open with other locking"):
            h5ml.open(path, locking=True)


def test_an_incomplete_file_held_open_is_incomplete_not_locked(tmp_path: Path) -> None:
    """SPEC §10.4.1-S3, §4.4: past the lock the completion marker decides: a file without it, held open for writing
    by another process, is IncompleteFileError for the reader and E106 for the validator, never read."""
    path = write_file(tmp_path / "unfinished.h5")
    with h5py.File(path, "a") as f:
        del f.attrs["complete"]  # what a writer that changes a file in place does first (§4.4)
    with holding(path):
        lock_is_real(path)
        with pytest.raises(IncompleteFileError, match="complete"):
            h5ml.open(path)
        assert "E106" in h5ml.validate(path).codes
        code, out, err = run_cli("dump", str(path))
        assert code == 2 and out == "" and "complete" in err and "lock" not in err


#: Run in a child interpreter: hold the file as another process would, then report what the reader, the validator
#: and the command line did, with HDF5_USE_FILE_LOCKING as the parent sets it.
_FORCED = """
import io, json, subprocess, sys
import h5ml
from h5ml.errors import FileLockedError
from h5ml.tools import cli

path, holder = sys.argv[1], sys.argv[2]
proc = subprocess.Popen([sys.executable, "-c", holder, path, "a"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                        text=True, env={k: v for k, v in __import__("os").environ.items() if k != "HDF5_USE_FILE_LOCKING"})
assert proc.stdout.readline().strip() == "open"
result = {}
try:
    with h5ml.open(path) as ds:
        result["read"] = ds["train"]["y"][:].tolist()
except FileLockedError as exc:
    result["error"] = str(exc)
for command in ("validate", "inspect"):
    out, err = io.StringIO(), io.StringIO()
    result[command] = [cli.run([command, path], out, err), out.getvalue(), err.getvalue()]
proc.stdin.close()
proc.wait(60)
print(json.dumps(result))
"""


@pytest.mark.parametrize("value", ["TRUE", "FALSE"])
def test_environment_that_forces_locking_is_named(tmp_path: Path, value: str) -> None:
    """SPEC §10.4.1-S3: HDF5_USE_FILE_LOCKING=TRUE makes HDF5 lock whatever h5ml asks: the reader's error and the
    CLI's message name the variable and say to unset it, without a traceback; FALSE reads the file."""
    path = write_file(tmp_path / "held.h5")
    env = dict(os.environ, HDF5_USE_FILE_LOCKING=value)
    done = subprocess.run(
        [sys.executable, "-c", _FORCED, str(path), HOLDER_SCRIPT],
        capture_output=True,
        text=True,
        timeout=LIMIT,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    if value == "FALSE":
        assert result["read"] == list(range(10)) and "error" not in result
        assert result["validate"][0] == 0 and result["inspect"][0] == 0
        return
    assert "read" not in result
    assert "HDF5_USE_FILE_LOCKING=TRUE in the environment makes HDF5 take the lock" in result["error"]
    assert "unset HDF5_USE_FILE_LOCKING (or set HDF5_USE_FILE_LOCKING=FALSE)" in result["error"]
    code, out, _ = result["validate"]
    assert code == 2 and "E100" in out and "HDF5_USE_FILE_LOCKING=TRUE" in " ".join(out.split())
    code, out, err = result["inspect"]
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "HDF5_USE_FILE_LOCKING=TRUE" in err and "Traceback" not in err and "[Errno" not in err


def test_a_source_being_written_is_not_converted(tmp_path: Path) -> None:
    """SPEC §10.4.1-S3 (note): an HDF5 source that another process writes has no completion marker: convert says
    so in the command line's words and writes nothing (it let HDF5's OSError through); once closed it converts."""
    source = tmp_path / "source.h5"
    with h5py.File(source, "w") as f:
        for i in range(3):
            f[f"train/image/{i}"] = np.full((2, 2), i, dtype=np.uint8)
            f[f"train/y/{i}"] = np.int64(i % 2)
    out = tmp_path / "out.h5"
    with holding(source):
        lock_is_real(source)
        code, stdout, err = run_cli("convert", str(source), str(out))
        assert code == 2, stdout + err
        assert f"{source}: another process has the file open for writing" in err
        assert "wait for its writer to close it, then convert it again" in err
        assert "Traceback" not in err and "[Errno" not in err and not out.exists()
        code, stdout, err = run_cli("inspect", str(source))
        assert code == 2 and "another process has the file open for writing" in err and "inspect it again" in err
    code, stdout, err = run_cli("convert", str(source), str(out))
    assert code == 0, stdout + err
    with h5ml.open(out) as dataset:
        np.testing.assert_array_equal(dataset["train"]["image"][:][:, 0, 0], [0, 1, 2])


#: Run in a child interpreter: fork while a Writer is open, finish the file in the parent while the child (which
#: holds the writer's lock through its copy of the handle) still runs, then read, validate and append to it.
_FORKED = """
import json, os, signal, sys
import h5py, numpy as np
import h5ml

path = sys.argv[1]
w = h5ml.Writer(path, metadata={"name": "forked"})
w.append("train", {"x": np.arange(8, dtype=np.float32)})
ready_r, ready_w = os.pipe()
pid = os.fork()
if pid == 0:
    os.close(ready_r)
    os.write(ready_w, b"x")
    signal.pause()
    os._exit(0)
os.close(ready_w)
os.read(ready_r, 1)
w.append("train", {"x": np.arange(8, 16, dtype=np.float32)})
w.close()
result = {}
try:
    h5py.File(path, "r").close()
    result["hdf5"] = "opened"
except OSError as exc:
    result["hdf5"] = type(exc).__name__
with h5ml.open(path) as ds:
    result["read"] = ds["train"]["x"][:].tolist()
report = h5ml.validate(path)
result["valid"], result["codes"] = report.valid, report.codes
with h5ml.Writer(path, mode="a") as more:
    more.append("train", {"x": np.arange(16, 20, dtype=np.float32)})
with h5ml.open(path) as ds:
    result["appended"] = ds["train"]["x"][:].tolist()
os.kill(pid, signal.SIGTERM)
os.waitpid(pid, 0)
print(json.dumps(result))
"""


def test_a_child_forked_while_a_writer_was_open_does_not_lock_readers_out(tmp_path: Path) -> None:
    """SPEC §10.4.1-S3: a child forked while an h5ml.Writer was open keeps HDF5's lock on the finished file until
    it exits; the file is read, validated and appended to (Writer(mode="a")) meanwhile, with the values written."""
    path = tmp_path / "forked.h5"
    script = tmp_path / "forked.py"
    script.write_text(_FORKED, encoding="utf-8")
    done = subprocess.run([sys.executable, str(script), str(path)], capture_output=True, text=True, timeout=LIMIT)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["hdf5"] == "BlockingIOError"  # the inherited lock is real: HDF5's own open fails on it
    assert result["read"] == list(range(16)) and result["valid"] is True
    assert not [code for code in result["codes"] if code.startswith("E")]
    assert result["appended"] == list(range(20))
