"""MkDocs hook: pages quote sections of README.md, which stays their one source.

A line ``<!-- readme: Try it -->`` in a page is replaced by the body of the
README section of that title (the text under its heading, up to the next
heading of any level). A title the README does not have fails the build,
so a renamed section cannot leave a page quoting nothing.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from mkdocs.exceptions import PluginError

__all__ = ["on_page_markdown", "readme_section"]

ROOT = Path(__file__).resolve().parents[2]
_MARKER = re.compile(r"^<!-- readme: (?P<title>.+?) -->$", re.MULTILINE)
_HEADING = re.compile(r"^#{1,6} ")


def readme_section(title: str, text: str) -> str:
    """The body of the README section headed ``title``.

    Parameters
    ----------
    title
        The heading's text, without the ``#`` marks (``Try it``).
    text
        The README's text.

    Returns
    -------
    str
        The lines under the heading, up to the next heading of any level (code fences skipped).

    Raises
    ------
    mkdocs.exceptions.PluginError
        When the README has no heading ``title``.
    """
    lines = text.splitlines()
    fence = False
    start: int | None = None
    body: list[str] = []
    for line in lines:
        if line.startswith("```"):
            fence = not fence
        heading = not fence and _HEADING.match(line) is not None
        if start is None:
            if heading and line.lstrip("#").strip() == title:
                start = 0
            continue
        if heading:
            break
        body.append(line)
    if start is None:
        raise PluginError(f"README.md has no section headed {title!r}: fix the '<!-- readme: {title} -->' marker")
    return "\n".join(body).strip() + "\n"


def on_page_markdown(markdown: str, **kwargs: Any) -> str:
    """Replace each ``<!-- readme: TITLE -->`` marker by that README section."""
    if "<!-- readme: " not in markdown:
        return markdown
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    return _MARKER.sub(lambda match: readme_section(match.group("title"), text), markdown)
