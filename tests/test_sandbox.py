"""Tests of h5ml.validator.sandbox: a function in a child process with a time limit (SPEC §10.3)."""

from __future__ import annotations

import os
import pickle
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import h5py
import pytest

from h5ml.errors import H5MLError, ValidationTimeoutError
from h5ml.validator.sandbox import ChildDiedError, run_with_timeout, stream_with_timeout


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


def _print_to_stdout(text: str) -> str:
    print(text, flush=True)
    return text.upper()


def _count(n: int) -> Iterator[int]:
    yield from range(n)
    return f"counted {n}"


def _count_then_hang(n: int, pid_file: str) -> Iterator[int]:
    Path(pid_file).write_text(str(os.getpid()))
    yield from range(n)
    while True:
        time.sleep(0.01)


def _count_then_die(n: int) -> Iterator[int]:
    yield from range(n)
    os._exit(5)


def _pid() -> int:
    return os.getpid()


def _gone(pid: int) -> bool:
    """True when no process (not even a zombie) has this pid: the child was reaped."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def test_returns_the_result() -> None:
    """§10.3: a function that finishes returns its value through the pipe, from another process."""
    assert run_with_timeout(_add, (2, 40), 120) == 42
    assert run_with_timeout(_pid, (), 120) != os.getpid()


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
    """A negative limit is refused, before any child starts."""
    with pytest.raises(ValueError, match="timeout"):
        run_with_timeout(_add, (1, 2), -1)
    with pytest.raises(ValueError, match="timeout"):
        next(stream_with_timeout(_count, (1,), -1))


def test_child_stdout_goes_to_stderr(capfd: pytest.CaptureFixture[str]) -> None:
    """§10.3: what the child prints cannot mix with the parent's own output (a JSON report): it goes to stderr."""
    assert run_with_timeout(_print_to_stdout, ("hello from the child",), 120) == "HELLO FROM THE CHILD"
    out, err = capfd.readouterr()
    assert "hello from the child" not in out
    assert "hello from the child\n" in err


def test_stream_yields_items_and_returns_the_result() -> None:
    """§10.3: a generator in the child sends each item as it is made, then its return value."""
    stream = stream_with_timeout(_count, (5,), 120)
    items = []
    with pytest.raises(StopIteration) as stop:
        while True:
            items.append(next(stream))
    assert items == [0, 1, 2, 3, 4]
    assert stop.value.value == "counted 5"


def test_stream_keeps_the_items_sent_before_the_limit(tmp_path: Path) -> None:
    """§10.3: items sent before the time limit reach the caller; then the limit stops and reaps the child."""
    pid_file = tmp_path / "pid"
    items = []
    with pytest.raises(ValidationTimeoutError, match="did not finish within 3"):
        for item in stream_with_timeout(_count_then_hang, (4, str(pid_file)), 3):
            items.append(item)
    assert items == [0, 1, 2, 3]
    assert _gone(int(pid_file.read_text()))


def test_stream_keeps_the_items_sent_before_a_crash() -> None:
    """§10.3: items sent before the child dies reach the caller; then ChildDiedError names the exit code."""
    items = []
    with pytest.raises(ChildDiedError, match="exited with code 5"):
        for item in stream_with_timeout(_count_then_die, (3,), 120):
            items.append(item)
    assert items == [0, 1, 2]


def test_works_when_the_caller_was_read_from_stdin() -> None:
    """§10.3: the child never imports the caller's __main__, so a program read on stdin (``python -``) works."""
    script = "import operator\nfrom h5ml.validator.sandbox import run_with_timeout\nprint(run_with_timeout(operator.add, (2, 3), 120))\n"
    done = subprocess.run([sys.executable, "-"], input=script, capture_output=True, text=True, timeout=240, check=False)
    assert (done.returncode, done.stdout) == (0, "5\n"), done.stderr


def test_child_died_error_pickles() -> None:
    """Errors cross process boundaries (errors.py contract)."""
    err = ChildDiedError("it died", exitcode=-11)
    back = pickle.loads(pickle.dumps(err))
    assert isinstance(back, ChildDiedError)
    assert (back.message, back.exitcode) == ("it died", -11)
