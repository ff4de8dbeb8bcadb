"""MkDocs hook: nested lists indented by two spaces render nested, as on GitHub.

SPEC.md and README.md are written for GitHub, where a list item indented by
two spaces under another is nested. Python-Markdown, which MkDocs uses,
nests only at four spaces and renders such items as siblings of their
parent (the change log of SPEC.md §11 lost its structure). This hook adds
a Markdown preprocessor that doubles the indentation of list-item lines
indented by two spaces per level under a list, outside code fences. It runs
after pymdownx.snippets (priority 32) has included SPEC.md and README.md,
so it sees their text; the sources stay as they are.
"""

from __future__ import annotations

import re
from typing import Any

from markdown import Extension, Markdown
from markdown.preprocessors import Preprocessor

__all__ = ["FourSpaceLists", "four_space_lists", "on_config"]

#: After pymdownx.snippets (32) and whitespace normalisation (30), before HTML blocks are stashed (20).
PRIORITY = 25

_ITEM = re.compile(r"^(?P<indent>(?:  )+)(?P<marker>[-*+] |\d+\. )")
_TOP_ITEM = re.compile(r"^([-*+] |\d+\. )")


def four_space_lists(markdown: str) -> str:
    """``markdown`` with each two-space nested list item indented by four spaces per level.

    Parameters
    ----------
    markdown
        A page's Markdown.

    Returns
    -------
    str
        The same text, but the indentation of the list-item lines that sit inside a list (after a top-level
        item, with no blank-line-separated paragraph in between) doubled; fenced code is left as it is.
    """
    out: list[str] = []
    fence = False
    in_list = False
    for line in markdown.split("\n"):
        if line.lstrip().startswith(("```", "~~~")):
            fence = not fence
        if fence:
            out.append(line)
            continue
        if _TOP_ITEM.match(line):
            in_list = True
        elif line and not line.startswith(" "):
            in_list = False
        match = _ITEM.match(line) if in_list else None
        if match is not None and len(match.group("indent")) % 4 != 0:
            line = match.group("indent") * 2 + line[len(match.group("indent")) :]
        out.append(line)
    return "\n".join(out)


class _Preprocessor(Preprocessor):
    def run(self, lines: list[str]) -> list[str]:
        return four_space_lists("\n".join(lines)).split("\n")


class FourSpaceLists(Extension):
    """The Markdown extension that applies :func:`four_space_lists` to every page, includes expanded."""

    def extendMarkdown(self, md: Markdown) -> None:  # Python-Markdown names it
        """Register the preprocessor."""
        md.preprocessors.register(_Preprocessor(md), "h5ml_four_space_lists", PRIORITY)


def on_config(config: Any, **kwargs: Any) -> Any:
    """Add :class:`FourSpaceLists` to the site's Markdown extensions."""
    config.markdown_extensions.append(FourSpaceLists())
    return config
