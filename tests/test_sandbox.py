"""Tests of h5ml.sandbox: a function in a child process with a time limit (SPEC §10.3)."""

from __future__ import annotations

import os
import pickle
import signal
import sys
import time
from pathlib import Path
from typing import Literal

import h5py
import pytest

from h5ml.errors import H5MLError, ValidationTimeoutError
from h5ml.sandbox import ChildDiedError, run_with_timeout

CONTEXTS: list[Literal["spawn", "forkserver"]] = ["spawn", "forkserver"]


# Top-level functions: the child imports them by module and name.
def _add(a: int, b: int) -> int:
    return a + b


def _forever(pid_file: str, ignore_sigterm: bool) -> None:
    if ignore_sigterm:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    Path(pid_file).write_text(str(os.getpid()))
    while True:
        time.sleep(0.01)


def _exit3() -> None:
    os._exit(3)


def _sigkill_self() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def _raise_value_error() -> None:
    raise ValueError("boom in the child")


def _unpicklable() -> object:
    return lambda: None


def _noisy(nbytes: int) -> int:
    sys.stderr.write("x" * nbytes)
    sys.stderr.flush()
    return nbytes


def _open_hdf5(path: str) -> None:
    h5py.File(path, "r").close()


def _gone(pid: int) -> bool:
    """True when no process (not even a zombie) has this pid: the child was reaped."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


@pytest.mark.parametrize("context", CONTEXTS)
def test_returns_the_result(context: Literal["spawn", "forkserver"]) -> None:
    """§10.3: a function that finishes returns its value through the pipe."""
    assert run_with_timeout(_add, (2, 40), 120, context=context) == 42


def test_no_timeout_waits_for_the_result() -> None:
    """§10.3: timeout=None means no limit."""
    assert run_with_timeout(_add, (1, 2), None) == 3


@pytest.mark.parametrize("ignore_sigterm", [False, True], ids=["terminate", "kill"])
def test_a_loop_is_stopped_and_reaped(tmp_path: Path, ignore_sigterm: bool) -> None:
    """§10.3: a child that loops forever is stopped at the limit (SIGTERM, then SIGKILL) and leaves no zombie."""
    pid_file = tmp_path / "pid"
    with pytest.raises(ValidationTimeoutError, match="did not finish within 5"):
        run_with_timeout(_forever, (str(pid_file), ignore_sigterm), 5)
    pid = int(pid_file.read_text())
    assert _gone(pid)


def test_child_exit_code_is_reported() -> None:
    """§10.3: a child that dies without a result gives an H5MLError naming its exit code."""
    with pytest.raises(ChildDiedError, match="exited with code 3") as info:
        run_with_timeout(_exit3, (), 120)
    assert info.value.exitcode == 3
    assert isinstance(info.value, H5MLError)


def test_child_signal_is_reported() -> None:
    """§10.3: a child killed by a signal gives an H5MLError naming the signal."""
    with pytest.raises(ChildDiedError, match="SIGKILL") as info:
        run_with_timeout(_sigkill_self, (), 120)
    assert info.value.exitcode == -signal.SIGKILL


def test_child_exception_is_raised_in_the_parent() -> None:
    """§10.3: an exception of the function reaches the caller, with the child's traceback as a note."""
    with pytest.raises(ValueError, match="boom in the child") as info:
        run_with_timeout(_raise_value_error, (), 120)
    assert any("_raise_value_error" in note for note in info.value.__notes__)


def test_unpicklable_result_is_an_error() -> None:
    """§10.3: a result that cannot come back is reported, not lost."""
    with pytest.raises(H5MLError, match="cannot be pickled"):
        run_with_timeout(_unpicklable, (), 120)


def test_child_writing_to_stderr_does_not_block(capfd: pytest.CaptureFixture[str]) -> None:
    """§10.3: the child inherits stderr, so much output there cannot fill a pipe and stall it."""
    assert run_with_timeout(_noisy, (1 << 20,), 120) == 1 << 20
    assert capfd.readouterr().err.count("x") == 1 << 20


def test_hdf5_open_of_a_fifo_blocks_and_is_stopped(tmp_path: Path) -> None:
    """§10.3: h5py.File on a named pipe blocks forever; the sandbox gives up at the limit."""
    fifo = tmp_path / "pipe.h5"
    os.mkfifo(fifo)
    with pytest.raises(ValidationTimeoutError):
        run_with_timeout(_open_hdf5, (str(fifo),), 3)


def test_arguments_are_checked() -> None:
    """A negative limit and the fork start method are refused."""
    with pytest.raises(ValueError, match="timeout"):
        run_with_timeout(_add, (1, 2), -1)
    with pytest.raises(ValueError, match="context"):
        run_with_timeout(_add, (1, 2), 10, context="fork")  # type: ignore[arg-type]


def test_child_died_error_pickles() -> None:
    """Errors cross process boundaries (errors.py contract)."""
    err = ChildDiedError("it died", exitcode=-11)
    back = pickle.loads(pickle.dumps(err))
    assert isinstance(back, ChildDiedError)
    assert (back.message, back.exitcode) == ("it died", -11)
