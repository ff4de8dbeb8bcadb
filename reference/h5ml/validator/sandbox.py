"""Run a function in a child process with a time limit (SPEC.md §10.3).

A damaged HDF5 file can make the HDF5 library loop forever or crash the
process that opens it. Code that opens untrusted files (the validator, the
CLI) calls :func:`run_with_timeout` or :func:`stream_with_timeout`: the work
runs in a fresh child Python interpreter, its result comes back through a
pipe, and the parent gives up when the time limit passes (the child is
terminated, then killed) or when the child dies.

How the child is started
------------------------
The child is a new interpreter, ``sys.executable -c <bootstrap>``, started
with :mod:`subprocess`; it never imports the parent's ``__main__``, so it
works whatever the parent is: a script, ``python -c``, an interactive
session, or a program read from standard input (``python - < script.py``),
where :mod:`multiprocessing`'s "spawn" and "forkserver" start methods fail
because they re-import ``__main__`` from its file. The parent sends the
child its ``sys.path``, then the function and its arguments (pickled: the
function must be importable by module and name, which excludes functions
defined in ``__main__``), through the child's standard input; the child
sends its messages back through its standard output. The child's standard
error is the parent's, so whatever the HDF5 library prints there is seen and
never fills a pipe; whatever the child prints on standard output goes to the
parent's standard error, never into the parent's own output (the CLI's JSON
report, for one). Every child is reaped before the call returns or raises:
no zombie is left behind.

:class:`~h5ml.errors.ChildDiedError`, raised when the child dies without a
result, is defined in :mod:`h5ml.errors` and importable from here too.
"""

from __future__ import annotations

import inspect
import os
import signal
import subprocess
import sys
import time
import traceback
from collections.abc import Callable, Generator, Iterator
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any, Final, TypeVar

from h5ml.errors import ChildDiedError, H5MLError, ValidationTimeoutError

__all__ = ["ChildDiedError", "run_with_timeout", "stream_with_timeout"]

T = TypeVar("T")

#: Seconds a child gets to exit after SIGTERM, and to finish after sending its result, before SIGKILL.
_GRACE_S: Final = 2.0

#: Message kinds of the child: one item of a stream, the final result, an exception.
_ITEM: Final = "item"
_OK: Final = "ok"
_ERROR: Final = "error"

#: The folder that holds the ``h5ml`` package, put first on the child's path so that it imports this h5ml.
_PACKAGE_ROOT: Final = str(Path(__file__).resolve().parents[2])  # this module is <root>/h5ml/validator/sandbox.py

#: The child's program: find this h5ml, then serve one request (:func:`_child_main`).
_BOOTSTRAP: Final = (
    "import sys; sys.path.insert(0, sys.argv[1]); from h5ml.validator.sandbox import _child_main; _child_main()"
)


def _child_main() -> None:
    """The child's side: read the request on stdin, run it, send its outcome on the original stdout.

    Messages are ``(kind, payload, traceback_text)``: ``_ITEM`` for each value a
    streamed generator yields, then ``_OK`` with the result, or ``_ERROR`` with
    the exception raised.
    """
    request = Connection(os.dup(0), writable=False)
    conn = Connection(os.dup(1), readable=False)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    os.dup2(2, 1)  # what the function prints goes to stderr, never into the message pipe
    try:
        try:
            sys.path[:] = request.recv()
            func, args, stream = request.recv()
            request.close()
            result = func(*args)
            if stream and inspect.isgenerator(result):
                result = _send_items(conn, result)
            message: tuple[str, Any, str] = (_OK, result, "")
        except BaseException as exc:  # everything goes back to the parent, which decides
            message = (_ERROR, exc, traceback.format_exc())
        _send(conn, message)
    finally:
        conn.close()


def _send_items(conn: Connection, gen: Generator[Any, Any, Any]) -> Any:
    """Send each item ``gen`` yields as an ``_ITEM`` message; return what it returns (child side)."""
    while True:
        try:
            item = next(gen)
        except StopIteration as stop:
            return stop.value
        conn.send((_ITEM, item, ""))


def _send(conn: Connection, message: tuple[str, Any, str]) -> None:
    """Send the final message, or an error saying why it does not pickle."""
    try:
        conn.send(message)
    except Exception as exc:  # the result or the exception does not pickle
        text = f"{message[1]!r} could not be sent back to the parent process: {exc!r}\n{message[2]}"
        conn.send((_ERROR, H5MLError(f"the child process's outcome cannot be pickled: {text}"), ""))


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """Terminate ``proc``, kill it if it does not exit within the grace time, and reap it."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(_GRACE_S)
        except subprocess.TimeoutExpired:
            proc.kill()
    proc.wait()


def _describe_exit(exitcode: int | None) -> str:
    if exitcode is None:
        return "did not exit"
    if exitcode < 0:
        try:
            return f"was killed by signal {signal.Signals(-exitcode).name}"
        except ValueError:
            return f"was killed by signal {-exitcode}"
    return f"exited with code {exitcode}"


def _start() -> tuple[subprocess.Popen[bytes], Connection, Connection]:
    """Start a child interpreter; return it, the pipe to send it the request and the pipe of its messages."""
    if not sys.executable:
        raise H5MLError("cannot start a child Python interpreter: sys.executable is empty in this process (§10.3)")
    request_r, request_w = os.pipe()
    result_r, result_w = os.pipe()
    try:
        proc = subprocess.Popen(
            [sys.executable, "-c", _BOOTSTRAP, _PACKAGE_ROOT], stdin=request_r, stdout=result_w, close_fds=True
        )
    except OSError as exc:
        os.close(request_w)
        os.close(result_r)
        raise H5MLError(f"cannot start a child Python interpreter ({sys.executable}): {exc} (§10.3)") from exc
    finally:
        os.close(request_r)
        os.close(result_w)  # the child holds the only sending end: its death shows as EOF here
    return proc, Connection(request_w, readable=False), Connection(result_r, writable=False)


def _messages(
    func: Callable[..., Any], args: tuple[Any, ...], timeout: float | None, stream: bool
) -> Generator[Any, None, Any]:
    """Run ``func(*args)`` in a child; yield the items it streams; return its result or raise its exception."""
    if timeout is not None and timeout < 0:
        raise ValueError(f"timeout must be >= 0 seconds or None, got {timeout}")
    name = getattr(func, "__qualname__", func)
    deadline = None if timeout is None else time.monotonic() + timeout
    proc, request, receiver = _start()
    try:
        try:
            request.send(list(sys.path))
            request.send((func, args, stream))
        except (BrokenPipeError, ConnectionResetError):
            pass  # the child died at once: the end of its messages below says how
        finally:
            request.close()
        while True:
            remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
            if not receiver.poll(remaining):
                _stop(proc)
                raise ValidationTimeoutError(
                    f"{name!r} did not finish within {timeout} s and was stopped (§10.3); the input may make the "
                    "HDF5 library loop: raise the time limit only for trusted files"
                )
            try:
                kind, payload, remote_tb = receiver.recv()
            except EOFError:
                try:
                    proc.wait(_GRACE_S)
                except subprocess.TimeoutExpired:
                    pass
                _stop(proc)
                raise ChildDiedError(
                    f"the child process running {name!r} {_describe_exit(proc.returncode)} before returning a "
                    "result (§10.3); the input may crash the HDF5 library",
                    exitcode=proc.returncode,
                ) from None
            if kind != _ITEM:
                break
            yield payload
        try:
            proc.wait(_GRACE_S)
        except subprocess.TimeoutExpired:
            pass
    finally:
        receiver.close()
        _stop(proc)
    if kind == _OK:
        return payload
    if isinstance(payload, BaseException):
        if remote_tb:
            payload.add_note(f"raised in the child process:\n{remote_tb}")
        raise payload
    raise H5MLError(f"the child process sent an unexpected message {kind!r}")  # pragma: no cover - protocol guard


def run_with_timeout(func: Callable[..., T], args: tuple[Any, ...] = (), timeout: float | None = None) -> T:
    """Call ``func(*args)`` in a child process and return its result (§10.3).

    Parameters
    ----------
    func
        A picklable top-level function: the child imports it by module and
        name, with the parent's ``sys.path`` (a function defined in
        ``__main__`` cannot be used).
    args
        Picklable positional arguments.
    timeout
        Time limit in seconds, counted from the start of the child (interpreter
        start-up included); ``None`` waits without limit.

    Returns
    -------
    object
        What ``func`` returned (it must pickle).

    Raises
    ------
    ValidationTimeoutError
        If the time limit passed; the child has been terminated (SIGTERM, then
        SIGKILL after a grace time) and reaped.
    ChildDiedError
        (an :class:`~h5ml.errors.H5MLError`) if the child died without sending
        a result (a crash, ``os._exit``, a signal); the message gives the exit
        code or the signal's name, ``exitcode`` the number.
    H5MLError
        If no child interpreter can be started, or the outcome does not pickle.
    BaseException
        Whatever ``func`` raised in the child, re-raised in the parent with the
        child's traceback added as a note.
    ValueError
        If ``timeout`` is negative.
    """
    messages = _messages(func, args, timeout, stream=False)
    while True:
        try:
            next(messages)
        except StopIteration as stop:
            result: T = stop.value
            return result


def stream_with_timeout(
    func: Callable[..., Iterator[Any]], args: tuple[Any, ...] = (), timeout: float | None = None
) -> Generator[Any, None, Any]:
    """Run the generator function ``func(*args)`` in a child process, yielding its items as they come (§10.3).

    Each item the child's generator yields is sent to the parent at once, so a
    caller that collects them keeps what was found before the time limit
    passed or the child died.

    Parameters
    ----------
    func
        A picklable top-level generator function (see :func:`run_with_timeout`).
    args
        Picklable positional arguments.
    timeout
        Time limit in seconds for the whole run, counted from the start of the
        child; ``None`` waits without limit.

    Yields
    ------
    object
        Each item the child's generator yields (each must pickle), in order.

    Returns
    -------
    object
        What the child's generator returned (``StopIteration.value``).

    Raises
    ------
    ValidationTimeoutError, ChildDiedError, H5MLError, BaseException, ValueError
        As :func:`run_with_timeout`, at the point of the stream where it happened.
    """
    return (yield from _messages(func, args, timeout, stream=True))
