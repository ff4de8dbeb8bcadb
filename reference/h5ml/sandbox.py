"""Run a function in a child process with a time limit (SPEC.md §10.3).

A damaged HDF5 file can make the HDF5 library loop forever or crash the
process that opens it. Code that opens untrusted files (the validator, the
CLI) calls :func:`run_with_timeout`: the work runs in a fresh child process,
its result comes back through a pipe, and the parent gives up when the time
limit passes (the child is terminated, then killed) or when the child dies.

The child inherits the parent's standard error, so whatever the HDF5 library
prints there is seen and never fills a pipe. Every child is joined before
:func:`run_with_timeout` returns or raises: no zombie is left behind.

:class:`~h5ml.errors.ChildDiedError`, raised when the child dies without a
result, is defined in :mod:`h5ml.errors` and importable from here too.
"""

from __future__ import annotations

import multiprocessing
import signal
import traceback
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any, Final, Literal, TypeVar

from h5ml.errors import ChildDiedError, H5MLError, ValidationTimeoutError

__all__ = ["ChildDiedError", "run_with_timeout"]

T = TypeVar("T")


#: Seconds a child gets to exit after SIGTERM, and to finish after sending its result, before SIGKILL.
_GRACE_S: Final = 2.0

_OK: Final = "ok"
_ERROR: Final = "error"


def _child_main(conn: Connection, func: Callable[..., Any], args: tuple[Any, ...]) -> None:
    """Run ``func(*args)`` and send ``(status, payload, traceback_text)`` to the parent."""
    try:
        message: tuple[str, Any, str] = (_OK, func(*args), "")
    except BaseException as exc:  # everything goes back to the parent, which decides
        message = (_ERROR, exc, traceback.format_exc())
    try:
        conn.send(message)
    except Exception as exc:  # the result or the exception does not pickle
        text = f"{message[1]!r} could not be sent back to the parent process: {exc!r}\n{message[2]}"
        conn.send((_ERROR, H5MLError(f"the child process's outcome cannot be pickled: {text}"), ""))
    finally:
        conn.close()


def _stop(proc: multiprocessing.process.BaseProcess) -> None:
    """Terminate ``proc``, kill it if it does not exit within the grace time, and reap it."""
    if proc.is_alive():
        proc.terminate()
        proc.join(_GRACE_S)
    if proc.is_alive():
        proc.kill()
    proc.join()


def _describe_exit(exitcode: int | None) -> str:
    if exitcode is None:
        return "did not exit"
    if exitcode < 0:
        try:
            return f"was killed by signal {signal.Signals(-exitcode).name}"
        except ValueError:
            return f"was killed by signal {-exitcode}"
    return f"exited with code {exitcode}"


def run_with_timeout(
    func: Callable[..., T],
    args: tuple[Any, ...] = (),
    timeout: float | None = None,
    *,
    context: Literal["spawn", "forkserver"] = "spawn",
) -> T:
    """Call ``func(*args)`` in a child process and return its result (§10.3).

    Parameters
    ----------
    func
        A picklable top-level function (the child imports it by module and name).
    args
        Picklable positional arguments.
    timeout
        Time limit in seconds, counted from the start of the child (interpreter
        start-up included); ``None`` waits without limit.
    context
        The :mod:`multiprocessing` start method. ``"fork"`` is not offered: a
        forked child would share the parent's HDF5 state.

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
    BaseException
        Whatever ``func`` raised in the child, re-raised in the parent with the
        child's traceback added as a note.
    ValueError
        If ``timeout`` is negative or ``context`` is not offered.
    """
    if timeout is not None and timeout < 0:
        raise ValueError(f"timeout must be >= 0 seconds or None, got {timeout}")
    if context not in ("spawn", "forkserver"):
        raise ValueError(f"context must be 'spawn' or 'forkserver', got {context!r}")
    ctx = multiprocessing.get_context("spawn") if context == "spawn" else multiprocessing.get_context("forkserver")
    receiver, sender = ctx.Pipe(duplex=False)
    proc = ctx.Process(
        target=_child_main, args=(sender, func, args), name=f"h5ml-sandbox-{getattr(func, '__name__', 'func')}"
    )
    try:
        proc.start()
        sender.close()  # the child holds the only sending end: its death shows as EOF here
        if not receiver.poll(timeout):
            _stop(proc)
            raise ValidationTimeoutError(
                f"{getattr(func, '__qualname__', func)!r} did not finish within {timeout} s and was stopped "
                "(§10.3); the input may make the HDF5 library loop: raise the time limit only for trusted files"
            )
        try:
            status, payload, remote_tb = receiver.recv()
        except EOFError:
            proc.join(_GRACE_S)
            _stop(proc)
            raise ChildDiedError(
                f"the child process running {getattr(func, '__qualname__', func)!r} {_describe_exit(proc.exitcode)} "
                "before returning a result (§10.3); the input may crash the HDF5 library",
                exitcode=proc.exitcode,
            ) from None
        proc.join(_GRACE_S)
        _stop(proc)
    finally:
        receiver.close()
        sender.close()
        if proc.pid is not None:
            _stop(proc)
        proc.close()
    if status == _OK:
        result: T = payload
        return result
    if isinstance(payload, BaseException):
        if remote_tb:
            payload.add_note(f"raised in the child process:\n{remote_tb}")
        raise payload
    raise H5MLError(f"the child process sent an unexpected message {status!r}")  # pragma: no cover - protocol guard
