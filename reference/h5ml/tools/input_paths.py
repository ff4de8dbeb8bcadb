"""The arguments that name a command's input: they must exist, and one message says so when they do not.

Every command that reads a file, folder or index the user names gives its
argument the type :data:`INPUT_PATH` (``@click.argument("file",
type=INPUT_PATH)``); ``h5ml convert``, whose last path is its output, checks
its sources with :func:`require_inputs`. A local path that does not exist is
then a click usage error that names the argument, in one pattern for every
command: ``h5ml: error: Invalid value for 'FILE': 'PATH' does not exist;
check the path (see 'h5ml inspect --help')``, exit code 2
(:mod:`h5ml.tools.cli`). A URL (:func:`h5ml.model.remote.is_url`) is let
through, for the reader to open. What an existing path holds (a directory
where a file is needed, a FIFO, not HDF5) is left to the command
(:func:`h5ml.tools.console.require_file` and the readers), which says what to
give instead. Outputs never take this type.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any, Final

import click

from h5ml.model.remote import is_url

__all__ = ["INPUT_PATH", "InputPath", "require_inputs"]


class InputPath(click.Path):
    """The type of every argument that names an input (a file, a folder, an index): it must exist (module docstring)."""

    def __init__(self) -> None:
        super().__init__(readable=False, path_type=str)

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        """Return ``value`` unchanged after refusing a local path that does not exist.

        Parameters
        ----------
        value
            The argument as given.
        param, ctx
            The click parameter and context, named in the message.

        Returns
        -------
        str
            ``value``.

        Raises
        ------
        click.BadParameter
            If ``value`` is a local path and nothing is there (or a symbolic link to nothing).
        """
        if not is_url(value) and not os.path.exists(value):
            problem = "is a symbolic link to nothing" if os.path.lexists(value) else "does not exist"
            self.fail(f"'{value}' {problem}; check the path", param, ctx)
        return super().convert(value, param, ctx)


#: The one :class:`InputPath` the commands share (``@click.argument("file", type=INPUT_PATH)``).
INPUT_PATH: Final = InputPath()


def require_inputs(values: Sequence[str], hint: str, ctx: click.Context | None = None) -> None:
    """Refuse, as :class:`InputPath` does, the first of ``values`` that does not exist.

    For an argument whose values are not all inputs (``h5ml convert SOURCES... OUTPUT``).

    Parameters
    ----------
    values
        The input paths (or URLs).
    hint
        The argument the message names, as click writes it (``"'SOURCES'"``).
    ctx
        The command's context, for the pointer to its ``--help``; default: the current one.

    Raises
    ------
    click.BadParameter
        For the first path that does not exist.
    """
    context = ctx if ctx is not None else click.get_current_context(silent=True)
    for value in values:
        try:
            INPUT_PATH.convert(value, None, context)
        except click.BadParameter as exc:
            exc.param_hint = hint
            raise
