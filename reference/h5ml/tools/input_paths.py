"""The arguments that name a command's input: they must exist, and one message says so when they do not.

Every command that reads a file, folder or index the user names gives its
argument the type :data:`INPUT_PATH` (``@click.argument("file",
type=INPUT_PATH)``); ``h5ml convert``, whose last path is its output, checks
its sources with :func:`require_inputs`. A local path that does not exist is
then a click usage error that names the argument, in one pattern for every
command: ``h5ml: error: Invalid value for 'FILE': 'PATH' does not exist;
check the path (see 'h5ml inspect --help')``, exit code 2
(:mod:`h5ml.tools.cli`). A URL (:func:`h5ml.model.remote.is_url`) is let
through, for the reader to open, by the commands that read URLs
(:data:`INPUT_OR_URL`), and refused as a URL by the others. What an existing path holds (a directory
where a file is needed, a FIFO, not HDF5) is left to the command
(:func:`h5ml.tools.console.require_file` and the readers), which says what to
give instead. Outputs never take this type.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any, Final

import click

from h5ml.model.remote import is_url, local_file_path

__all__ = ["INPUT_OR_URL", "INPUT_PATH", "InputPath", "require_inputs"]


class InputPath(click.Path):
    """The type of every argument that names an input (a file, a folder, an index): it must exist (module docstring).

    Parameters
    ----------
    urls
        Whether the command reads URLs (``h5ml inspect``, ``h5ml validate``); the others take a ``file://``
        URL as the local path it names and refuse any other URL, saying which commands read them, instead of
        taking it for a local path that does not exist.
    """

    def __init__(self, *, urls: bool = False) -> None:
        super().__init__(readable=False, path_type=str)
        self.urls = urls

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
            ``value``; for a command of local paths only, the local path of a ``file://`` URL.

        Raises
        ------
        click.BadParameter
            If ``value`` is a local path and nothing is there (or a symbolic link to nothing).
        """
        local = None if self.urls else local_file_path(value)
        if local is not None:  # a file:// URL of this machine: the local path it names (h5ml.model.remote)
            value = local
        if is_url(value) and not self.urls:
            command = ctx.command_path if ctx is not None else "this command"
            self.fail(
                f"'{value}' is a URL, and {command} reads local paths only: download it first, or give its local "
                "path (h5ml inspect and h5ml validate read URLs)",
                param,
                ctx,
            )
        if not is_url(value) and not os.path.exists(value):
            problem = "is a symbolic link to nothing" if os.path.lexists(value) else "does not exist"
            self.fail(f"'{value}' {problem}; check the path", param, ctx)
        return super().convert(value, param, ctx)


#: The :class:`InputPath` of the commands that read local paths only (``@click.argument("file", type=INPUT_PATH)``).
INPUT_PATH: Final = InputPath()
#: The :class:`InputPath` of the commands that read URLs too (``h5ml inspect``, ``h5ml validate``).
INPUT_OR_URL: Final = InputPath(urls=True)


def require_inputs(values: Sequence[str], hint: str, ctx: click.Context | None = None) -> list[str]:
    """Refuse, as :class:`InputPath` does, the first of ``values`` that does not exist; return them as it would.

    For an argument whose values are not all inputs (``h5ml convert SOURCES... OUTPUT``).

    Parameters
    ----------
    values
        The input paths.
    hint
        The argument the message names, as click writes it (``"'SOURCES'"``).
    ctx
        The command's context, for the pointer to its ``--help``; default: the current one.

    Returns
    -------
    list of str
        ``values``, a ``file://`` URL as the local path it names.

    Raises
    ------
    click.BadParameter
        For the first path that does not exist, or that is a URL.
    """
    context = ctx if ctx is not None else click.get_current_context(silent=True)
    checked = []
    for value in values:
        try:
            checked.append(INPUT_PATH.convert(value, None, context))
        except click.BadParameter as exc:
            exc.param_hint = hint
            raise
    return checked
