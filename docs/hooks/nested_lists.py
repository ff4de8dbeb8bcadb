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
    """``markdown`` with the items of each list nested by two spaces per level nested by four.

    Parameters
    ----------
    markdown
        A page's Markdown.

    Returns
    -------
    str
        The same text, but in each list (from a top-level item to the next line that starts at the margin and
        is not an item) that nests an item by two spaces (an indent that is not a multiple of four), the
        indentation of every item line doubled; continuation lines and fenced code are left as they are.
    """
    lines = markdown.split("\n")
    fence = False
    block: list[tuple[int, int]] = []  # (line number, indent) of the nested items of the current list

    def close() -> None:
        if any(indent % 4 for _, indent in block):
            for number, indent in block:
                lines[number] = " " * indent + lines[number]
        block.clear()

    in_list = False
    for number, line in enumerate(lines):
        if line.lstrip().startswith(("```", "~~~")):
            fence = not fence
            if not line.startswith(" "):
                close()
                in_list = False
            continue
        if fence:
            continue
        if _TOP_ITEM.match(line):
            in_list = True
        elif line and not line.startswith(" "):
            close()
            in_list = False
        item = _ITEM.match(line) if in_list else None
        if item is not None:
            block.append((number, len(item.group("indent"))))
    close()
    return "\n".join(lines)


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
