"""The ``h5ml`` command line: validate, verify, inspect, dump, convert, export, subset, merge, shard, unshard, demo, report.

``main()`` (the console script; ``python -m h5ml`` and ``python -m
h5ml.tools.cli`` run the same entry point) only calls :func:`run`, which takes the
arguments and the two output streams and returns the exit code, so the whole
command line is tested in-process. Each command lives in its own module of
:mod:`h5ml.tools.commands`; this module holds the group and the error contract.

Errors: an error of h5ml (:class:`h5ml.H5MLError`: a wrong file, a wrong
option, a source that does not convert), of the file system (``OSError``), a
missing optional package (``ImportError``) or of the command line itself
(click's usage errors) ends as one line ``h5ml: error: ...`` on standard error
and exit code 2, in the command line's words (:func:`h5ml.ingest.options.cli_words`:
``--overwrite``, never ``overwrite=True``; no ``[Errno N]``). Anything else is a defect of h5ml, not of the input: it ends
as ``h5ml: internal error: ...`` with a pointer to ``--debug``, exit code 2.
``--debug`` (before the command) or the environment variable ``H5ML_DEBUG=1``
adds the traceback to either.

Exit codes: 0 success; 1 ``validate`` found an invalid file (with
``--strict``: a warning too), or ``verify`` a fingerprint that differs; 2 a file could not be read at all, a usage
error, or any other failure; 130 interrupted.
"""

from __future__ import annotations

import contextlib
import importlib
import itertools
import os
import signal
import sys
import traceback
from collections.abc import Sequence
from typing import Any, Final, TextIO

import click

from h5ml import spec
from h5ml._version import __version__
from h5ml.errors import H5MLError
from h5ml.tools.console import EXIT_ERROR, EXIT_INTERRUPTED, EXIT_INVALID, EXIT_OK, Streams, safe_text

__all__ = ["DEBUG_ENV", "EXIT_ERROR", "EXIT_INTERRUPTED", "EXIT_INVALID", "EXIT_OK", "app", "main", "run"]

#: Environment variable that turns on tracebacks for errors (``H5ML_DEBUG=1``).
DEBUG_ENV: Final = "H5ML_DEBUG"


#: Each command's module and object (:mod:`h5ml.tools.commands`), imported when the command runs (or ``--help``
#: lists them): importing every command (the writer, the reader, the converters) cost each ``h5ml validate``
#: about 0.35 s before it did anything (issue 15).
_COMMANDS: Final = {
    "validate": ("h5ml.tools.commands.validate", "validate_command"),
    "verify": ("h5ml.tools.commands.verify", "verify_command"),
    "inspect": ("h5ml.tools.commands.inspect", "inspect_command"),
    "dump": ("h5ml.tools.commands.dump", "dump_command"),
    "convert": ("h5ml.tools.commands.convert", "convert_command"),
    "export": ("h5ml.tools.commands.edit", "export_command"),
    "subset": ("h5ml.tools.commands.edit", "subset_command"),
    "merge": ("h5ml.tools.commands.edit", "merge_command"),
    "shard": ("h5ml.tools.commands.shard", "shard_command"),
    "unshard": ("h5ml.tools.commands.shard", "unshard_command"),
    "temporaries": ("h5ml.tools.commands.temporaries", "temporaries_command"),
    "demo": ("h5ml.tools.commands.demo", "demo_command"),
    "view": ("h5ml.tools.commands.view", "view_command"),
    "report": ("h5ml.tools.commands.report", "report_command"),
}


class _LazyGroup(click.Group):
    """A click group whose commands are imported on first use (:data:`_COMMANDS`), listed in sorted order."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*_COMMANDS, *self.commands})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in _COMMANDS:
            module, attr = _COMMANDS[cmd_name]
            self.add_command(getattr(importlib.import_module(module), attr), cmd_name)
        return self.commands.get(cmd_name)


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(
    __version__,
    "--version",
    "-V",
    prog_name="h5ml",
    message=f"%(prog)s %(version)s (format {spec.FORMAT_VERSION_STRING})",
)
@click.option("--debug", is_flag=True, help=f"Show the traceback of an error (or set {DEBUG_ENV}=1).")
def app(debug: bool) -> None:
    """h5ml: check, inspect, dump and create h5ml files (machine-learning datasets in HDF5)."""


# ---------------------------------------------------------------------------
# entry points
# ---------------------------------------------------------------------------


def _one_line(text: str) -> str:
    """``text`` on one line, its control characters escaped: an error may quote a file's names (§10.2)."""
    return safe_text(" ".join(text.split()))


def _error_line(exc: BaseException) -> str:
    if isinstance(exc, click.ClickException):
        message = exc.format_message().rstrip(".")
        if isinstance(exc, click.UsageError) and exc.ctx is not None:
            message += f" (see '{exc.ctx.command_path} --help')"
        return _one_line(message)
    from h5ml.ingest.options import cli_words  # imported here: h5ml.ingest is slow to import

    return _one_line(cli_words(_message(exc))) or type(exc).__name__


def _message(exc: BaseException) -> str:
    """What ``exc`` says, without Python's ``[Errno N]`` prefix of an ``OSError`` (the words, and the file named)."""
    if isinstance(exc, OSError) and exc.errno is not None and exc.strerror:
        text = str(exc.strerror)
        filename = exc.filename
        if filename is not None and str(filename) not in text:
            text = f"{filename}: {text}"
        return text
    return str(exc)


def _is_input_error(exc: BaseException) -> bool:
    """Whether ``exc`` says what is wrong with the user's input (else it is a defect of h5ml)."""
    return isinstance(exc, (click.ClickException, H5MLError, OSError, ImportError))


def run(argv: Sequence[str] | None = None, stdout: TextIO | None = None, stderr: TextIO | None = None) -> int:
    """Run the ``h5ml`` command line and return its exit code.

    Parameters
    ----------
    argv
        The arguments after the program name; ``None`` uses ``sys.argv[1:]``.
    stdout, stderr
        Where output and errors go; ``None`` uses ``sys.stdout``/``sys.stderr``.

    Returns
    -------
    int
        0 success; 1 an invalid file (``validate``); 2 an unreadable file, a
        usage error or any other failure (reported as one line
        ``h5ml: error: ...`` on ``stderr``, with the traceback when
        ``--debug`` is given or ``H5ML_DEBUG=1``); 130 interrupted.

    Notes
    -----
    Never raises; implements no SPEC clause itself: it calls the validator
    (§9), the reader and the writer.
    """
    args = list(sys.argv[1:] if argv is None else argv)
    out = sys.stdout if stdout is None else stdout
    err = sys.stderr if stderr is None else stderr
    leading = list(itertools.takewhile(lambda arg: arg.startswith("-"), args))  # options before the command
    debug = os.environ.get(DEBUG_ENV, "") not in ("", "0") or "--debug" in leading
    streams = Streams(out, err)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            result = app.main(args=args, prog_name="h5ml", standalone_mode=False, obj=streams)
    except click.exceptions.NoArgsIsHelpError as exc:
        out.write(exc.format_message() + "\n")
        return EXIT_ERROR
    except (BrokenPipeError, SystemExit):
        # The reader of our output went away (``h5ml dump f | head``); click turns that into sys.exit(1).
        # Nothing can be reported on a closed pipe: end quietly with the failure code.
        return EXIT_ERROR
    except (click.exceptions.Abort, KeyboardInterrupt):
        err.write("h5ml: interrupted\n")
        return EXIT_INTERRUPTED
    except Exception as exc:
        if debug:
            err.write(traceback.format_exc())
        if _is_input_error(exc):
            err.write(f"h5ml: error: {_error_line(exc)}\n")
        else:
            hint = "" if debug else "; run it again with --debug before the command to see the traceback, and report it"
            err.write(
                f"h5ml: internal error: {type(exc).__name__}: {_one_line(str(exc))} (a defect of h5ml, not of "
                f"your input{hint})\n"
            )
        return EXIT_ERROR
    return result if isinstance(result, int) else EXIT_OK


def _terminated(signum: int, frame: Any) -> None:
    """SIGTERM: stop as Ctrl-C does, so that a writer discards its temporary file and worker processes end."""
    raise KeyboardInterrupt(f"signal {signum}")


def main() -> None:
    """Console-script entry point ``h5ml``: exit with the code :func:`run` returns (SIGTERM stops it as SIGINT does)."""
    signal.signal(signal.SIGTERM, _terminated)
    code = run(sys.argv[1:], sys.stdout, sys.stderr)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # the work is done: a late SIGTERM just ends the process
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        # Python flushes stdout again at exit; point it at /dev/null so that this does not fail too.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    sys.exit(code)


if __name__ == "__main__":
    # ``python -m h5ml.tools.cli ...``: the same entry point as the ``h5ml`` console script (and ``python -m h5ml``),
    # so that this form validates, exits 1 for an invalid file and 2 for an unreadable one, instead of doing nothing
    from h5ml.tools.entry import main as entry_main

    entry_main()
