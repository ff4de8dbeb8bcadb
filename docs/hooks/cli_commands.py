"""MkDocs hook: load every command of ``h5ml.tools.cli`` before mkdocs-click documents the group.

The ``h5ml`` group imports each command on first use (``_LazyGroup``).
mkdocs-click lists a group's ``commands`` when it holds any and asks
``list_commands`` only when it holds none, so a group with some commands
loaded (by an earlier import) would be documented in part. Loading them all
here makes the page list every command ``h5ml --help`` lists.

Click 8.3 marks an option declared without a default with a sentinel, which
mkdocs-click 0.9 prints as ``Sentinel.UNSET`` in the table's Default column.
In this build process only, each such option is given the default the
command receives (click's ``get_default``: ``False`` for a flag; ``()`` for
a repeatable option; ``None`` otherwise), so the page says that instead,
and a ``|`` in an option's help (``--delimiter``: "e.g. ';' or '|'") is
escaped, which would otherwise end its cell of the table and push the rest
of the help into the Default column. mkdocs-click 0.9 marks a required
option ``_required`` (an emphasis left open, shown as is); the page shows
*required*.
"""

from __future__ import annotations

from typing import Any

import click
import click.core

__all__ = ["on_config", "on_page_content", "shown_default"]

#: Click's marker of an option declared without a default (click 8.3 and later; absent before).
_UNSET = getattr(click.core, "UNSET", object())


def shown_default(option: click.Option, ctx: click.Context) -> Any:
    """The default ``option``'s command receives when the option is not given.

    Parameters
    ----------
    option
        An option of an ``h5ml`` command.
    ctx
        A context of the ``h5ml`` group.

    Returns
    -------
    Any
        ``option.default`` when declared; else click's ``get_default`` (``False`` for a flag), ``()`` for an
        option given ``multiple=True``, or None.
    """
    if option.default is not _UNSET:
        return option.default
    value = option.get_default(ctx)
    if value is not _UNSET:
        return value
    return () if option.multiple else None


def on_config(config: Any, **kwargs: Any) -> Any:
    """Import every command of the ``h5ml`` group; give its options without a default their real one, escape ``|``."""
    from h5ml.tools.cli import app

    ctx = click.Context(app, info_name="h5ml")
    commands: list[click.Command] = [app]
    for name in app.list_commands(ctx):
        command = app.get_command(ctx, name)
        if command is not None:
            commands.append(command)
    for command in commands:
        for param in command.get_params(ctx):  # the help option too
            if not isinstance(param, click.Option):
                continue
            if param.default is _UNSET:
                param.default = shown_default(param, ctx)
            if param.help and "|" in param.help:
                param.help = param.help.replace("|", "\\|")
    return config


def on_page_content(html: str, **kwargs: Any) -> str:
    """Show mkdocs-click's ``_required`` default cell as *required*."""
    return html.replace("<td>_required</td>", "<td><em>required</em></td>")
