"""MkDocs hook: load every command of ``h5ml.tools.cli`` before mkdocs-click documents the group.

The ``h5ml`` group imports each command on first use (``_LazyGroup``).
mkdocs-click lists a group's ``commands`` when it holds any and asks
``list_commands`` only when it holds none, so a group with some commands
loaded (by an earlier import) would be documented in part. Loading them all
here makes the page list every command ``h5ml --help`` lists.
"""

from __future__ import annotations

from typing import Any

import click

__all__ = ["on_config"]


def on_config(config: Any, **kwargs: Any) -> Any:
    """Import every command of the ``h5ml`` group, so that its ``commands`` mapping is complete."""
    from h5ml.tools.cli import app

    ctx = click.Context(app, info_name="h5ml")
    for name in app.list_commands(ctx):
        app.get_command(ctx, name)
    return config
