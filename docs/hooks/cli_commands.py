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
and each help text is written as Markdown that shows it as is.
mkdocs-click 0.9 marks a required option ``_required`` (an emphasis left
open, shown as is); the page shows *required*.

mkdocs-click passes the help texts into the page's Markdown unchanged, so
``<feature>_<split>`` in ``h5ml convert``'s help reached the HTML as a tag
(the browser hid it), a ``|`` in an option's help (``--delimiter``: "e.g.
';' or '|'") ended its cell of the table, and the aligned list of a ``\\b``
paragraph (click's "keep these lines as they are") ran into one paragraph.
Here every command's help and option's help is rewritten once, from its
original text (kept on the object, so a rebuild of ``mkdocs serve`` does not
escape twice): ``&``, ``<``, ``>`` become HTML entities and Markdown's
marks are backslash-escaped (:func:`markdown_text`); a ``\\b`` paragraph of
a command becomes a ``text`` code block, as ``--help`` prints it
(:func:`command_markdown`); an option's help is one table cell, its
``\\b`` lines joined by ``<br>`` (:func:`option_markdown`).
"""

from __future__ import annotations

import html
import inspect
import re
from typing import Any

import click
import click.core

__all__ = ["command_markdown", "markdown_text", "on_config", "on_page_content", "option_markdown", "shown_default"]

#: Click's marker of an option declared without a default (click 8.3 and later; absent before).
_UNSET = getattr(click.core, "UNSET", object())
#: The attribute that keeps a command's or option's own help once this hook has rewritten it.
_ORIGINAL = "_h5ml_docs_original_help"
#: Markdown's inline marks (with the tables extension's ``|``), shown as themselves once backslash-escaped.
_INLINE_MARKS = re.compile(r"([\\`*_{}\[\]|!])")
#: What makes a paragraph's start a heading or a list item in Markdown (``>`` is an entity by then).
_BLOCK_START = re.compile(r"^(\d*)([#+.)-])")


def markdown_text(text: str) -> str:
    """``text`` as Markdown that shows it as is, on one line.

    Parameters
    ----------
    text
        Plain text (a help text's paragraph): its whitespace runs become one space.

    Returns
    -------
    str
        ``&``, ``<``, ``>`` as HTML entities; Markdown's inline marks (`` ` * _ [ ] { } | ! \\``)
        backslash-escaped; a leading ``#``, ``-``, ``+`` or the ``.`` of ``1.`` escaped so that it starts no block.
    """
    escaped = _INLINE_MARKS.sub(r"\\\1", html.escape(" ".join(text.split()), quote=False))
    return _BLOCK_START.sub(r"\1\\\2", escaped)


def _paragraphs(help_text: str) -> list[tuple[bool, list[str]]]:
    """``(kept, lines)`` of each paragraph of a help text, as click reads it (``\\b``: lines kept as they are)."""
    text = help_text.split("\f", 1)[0]  # click shows nothing after a form feed
    lines = inspect.cleandoc(text).splitlines()
    paragraphs: list[tuple[bool, list[str]]] = []
    current: list[str] = []
    for line in [*lines, ""]:
        if line.strip():
            current.append(line)
            continue
        if current:
            kept = current[0].strip() == "\b"
            paragraphs.append((kept, current[1:] if kept else current))
        current = []
    return paragraphs


def command_markdown(help_text: str) -> str:
    """A command's help as Markdown: a paragraph each, a ``\\b`` paragraph as a ``text`` code block.

    Parameters
    ----------
    help_text
        ``command.help``, as declared (indented docstring lines are dedented as click does).

    Returns
    -------
    str
        Its paragraphs, separated by blank lines; the first on one line (mkdocs-click's list of
        subcommands shows a command's first line).
    """
    blocks: list[str] = []
    for kept, lines in _paragraphs(help_text):
        if kept:
            body = "\n".join(line.rstrip() for line in inspect.cleandoc("\n".join(["", *lines])).splitlines())
            blocks.append(f"```text\n{body}\n```")
        else:
            blocks.append(markdown_text(" ".join(lines)))
    return "\n\n".join(blocks)


def option_markdown(help_text: str) -> str:
    """An option's help as Markdown on one line (its table cell); ``\\b`` lines and paragraphs joined by ``<br>``.

    Parameters
    ----------
    help_text
        ``option.help``, as declared.

    Returns
    -------
    str
        One line of Markdown that shows the help as is.
    """
    parts: list[str] = []
    for kept, lines in _paragraphs(help_text):
        if kept:
            parts.extend(markdown_text(line) for line in lines)
        else:
            parts.append(markdown_text(" ".join(lines)))
    return " <br>".join(parts)


def _rewrite_help(item: click.Command | click.Option, render: Any) -> None:
    """Set ``item.help`` to ``render`` of its original help (kept on ``item``: a rebuild starts from it)."""
    if not hasattr(item, _ORIGINAL):
        setattr(item, _ORIGINAL, item.help)
    original = getattr(item, _ORIGINAL)
    if original:
        item.help = render(original)


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
    """Import every command of the ``h5ml`` group; give options without a default their real one; escape help."""
    from h5ml.tools.cli import app

    ctx = click.Context(app, info_name="h5ml")
    commands: list[click.Command] = [app]
    for name in app.list_commands(ctx):
        command = app.get_command(ctx, name)
        if command is not None:
            commands.append(command)
    for command in commands:
        _rewrite_help(command, command_markdown)
        for param in command.get_params(ctx):  # the help option too
            if not isinstance(param, click.Option):
                continue
            if param.default is _UNSET:
                param.default = shown_default(param, ctx)
            _rewrite_help(param, option_markdown)
    return config


def on_page_content(html: str, **kwargs: Any) -> str:
    """Show mkdocs-click's ``_required`` default cell as *required*."""
    return html.replace("<td>_required</td>", "<td><em>required</em></td>")
