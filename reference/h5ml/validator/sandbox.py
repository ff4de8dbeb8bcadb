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

A warm child for many calls
---------------------------
Starting a child interpreter and importing the validator costs a few
tenths of a second, more than checking a small file. :class:`WarmChild`
keeps one child that runs call after call (the same bootstrap: the child
serves requests until its request pipe closes): each call has the same time
limit and the same protection, and a child that crashed, hung past its
limit or was left in the middle of a call is stopped and reaped, so that the
next call starts a fresh one.

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

__all__ = ["ChildDiedError", "WarmChild", "run_with_timeout", "stream_with_timeout"]

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
    """The child's side: read requests on stdin, run each, send its outcome on the original stdout.

    The first message is the parent's ``sys.path``; then each request is
    ``(func, args, stream)``, served in turn until the parent closes the
    request pipe (a one-shot call closes it after its request, a
    :class:`WarmChild` when it is done). Messages are ``(kind, payload,
    traceback_text)``: ``_ITEM`` for each value a streamed generator yields,
    then ``_OK`` with the result, or ``_ERROR`` with the exception raised.
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
        except (EOFError, KeyboardInterrupt):
            return
        while True:
            try:
                func, args, stream = request.recv()
            except (EOFError, KeyboardInterrupt):  # Ctrl-C between two calls: end quietly, never a traceback
                return  # the parent has no more requests
            try:
                result = func(*args)
                if stream and inspect.isgenerator(result):
                    result = _send_items(conn, result)
                message: tuple[str, Any, str] = (_OK, result, "")
            except BaseException as exc:  # everything goes back to the parent, which decides
                message = (_ERROR, exc, traceback.format_exc())
            _send(conn, message)
    finally:
        request.close()
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


def _receive(
    proc: subprocess.Popen[bytes], receiver: Connection, name: object, timeout: float | None, deadline: float | None
) -> Generator[Any, None, tuple[str, Any, str]]:
    """Yield the items of one call as the child sends them; return its final message.

    When the limit passes or the child dies first, the child is stopped and
    reaped and :class:`ValidationTimeoutError` or :class:`ChildDiedError` is raised.
    """
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
            return kind, payload, remote_tb
        yield payload


def _outcome(kind: str, payload: Any, remote_tb: str) -> Any:
    """The result of a call from its final message, or its exception raised (with the child's traceback)."""
    if kind == _OK:
        return payload
    if isinstance(payload, BaseException):
        if remote_tb:
            payload.add_note(f"raised in the child process:\n{remote_tb}")
        raise payload
    raise H5MLError(f"the child process sent an unexpected message {kind!r}")  # pragma: no cover - protocol guard


def _check_limit(timeout: float | None) -> float | None:
    """The deadline (``time.monotonic()``) of a call with this limit; raises ValueError for a negative one."""
    if timeout is not None and timeout < 0:
        raise ValueError(f"timeout must be >= 0 seconds or None, got {timeout}")
    return None if timeout is None else time.monotonic() + timeout


def _messages(
    func: Callable[..., Any], args: tuple[Any, ...], timeout: float | None, stream: bool
) -> Generator[Any, None, Any]:
    """Run ``func(*args)`` in a child; yield the items it streams; return its result or raise its exception."""
    deadline = _check_limit(timeout)
    name = getattr(func, "__qualname__", func)
    proc, request, receiver = _start()
    try:
        try:
            request.send(list(sys.path))
            request.send((func, args, stream))
        except (BrokenPipeError, ConnectionResetError):
            pass  # the child died at once: the end of its messages below says how
        finally:
            request.close()  # the child's only request: it exits once it has answered
        final = yield from _receive(proc, receiver, name, timeout, deadline)
        try:
            proc.wait(_GRACE_S)
        except subprocess.TimeoutExpired:
            pass
    finally:
        receiver.close()
        _stop(proc)
    return _outcome(*final)


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


class WarmChild:
    """One child interpreter that runs call after call, with the protection of :func:`stream_with_timeout` (§10.3).

    Each call has its own time limit, counted from when it is sent (plus the
    start of the interpreter when a fresh one is started for it). A child that
    crashes, passes a call's limit, or is abandoned in the middle of a call
    (the caller stopped reading its stream) is stopped and reaped, and the next
    call starts a fresh one. Use from one thread at a time; :meth:`close` (or
    the ``with`` block) ends the child.

    Attributes
    ----------
    starts
        How many child interpreters were started (1 after the first call,
        one more after each crash or time limit).

    Examples
    --------
    >>> with WarmChild() as child:  # doctest: +SKIP
    ...     items = list(child.stream(check_file, ("a.h5",), timeout=60))
    """

    def __init__(self) -> None:
        self.starts = 0
        self._proc: subprocess.Popen[bytes] | None = None
        self._request: Connection | None = None
        self._receiver: Connection | None = None

    @property
    def pid(self) -> int | None:
        """The process id of the live child, or None when none is running."""
        return self._proc.pid if self._proc is not None and self._proc.poll() is None else None

    def _ready(self) -> tuple[subprocess.Popen[bytes], Connection, Connection]:
        """The live child and its pipes, started (and sent ``sys.path``) if there is none."""
        if self._proc is None or self._proc.poll() is not None or self._request is None or self._receiver is None:
            self._discard()
            self._proc, self._request, self._receiver = _start()
            self.starts += 1
            try:
                self._request.send(list(sys.path))
            except (BrokenPipeError, ConnectionResetError):
                pass  # the child died at once: the call's messages say how
        return self._proc, self._request, self._receiver

    def stream(
        self, func: Callable[..., Iterator[Any]], args: tuple[Any, ...] = (), timeout: float | None = None
    ) -> Generator[Any, None, Any]:
        """Run the generator function ``func(*args)`` in the child, yielding its items as they come.

        Parameters, yields, returns and raises as :func:`stream_with_timeout`; after a
        :class:`ValidationTimeoutError` or a :class:`ChildDiedError` the child is gone, and the next call
        starts a fresh one.
        """
        return (yield from self._call(func, args, timeout, stream=True))

    def run(self, func: Callable[..., T], args: tuple[Any, ...] = (), timeout: float | None = None) -> T:
        """Call ``func(*args)`` in the child and return its result (see :func:`run_with_timeout`)."""
        messages = self._call(func, args, timeout, stream=False)
        while True:
            try:
                next(messages)
            except StopIteration as stop:
                result: T = stop.value
                return result

    def _call(
        self, func: Callable[..., Any], args: tuple[Any, ...], timeout: float | None, stream: bool
    ) -> Generator[Any, None, Any]:
        deadline = _check_limit(timeout)
        name = getattr(func, "__qualname__", func)
        proc, request, receiver = self._ready()
        answered = False
        try:
            try:
                request.send((func, args, stream))
            except (BrokenPipeError, ConnectionResetError):
                pass  # the child is gone: the end of its messages says how
            final = yield from _receive(proc, receiver, name, timeout, deadline)
            answered = True
        finally:
            if not answered:  # stopped, dead, or left in the middle of a call: never reused
                self._discard()
        return _outcome(*final)

    def _discard(self) -> None:
        """Close the pipes and stop and reap the child, if any."""
        proc, request, receiver = self._proc, self._request, self._receiver
        self._proc = self._request = self._receiver = None
        for conn in (request, receiver):
            if conn is not None:
                conn.close()
        if proc is not None:
            _stop(proc)

    def close(self) -> None:
        """End the child: its request pipe is closed, so it exits; it is reaped (killed after a grace time)."""
        proc, request = self._proc, self._request
        if request is not None:
            request.close()
            self._request = None
        if proc is not None:
            try:
                proc.wait(_GRACE_S)
            except subprocess.TimeoutExpired:
                pass
        self._discard()

    def __enter__(self) -> WarmChild:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
