"""Griffe extension for the API pages: the docstrings' Sphinx roles shown as code.

The docstrings are numpydoc, read by Sphinx-aware tools and by people, and
name other objects with Sphinx roles (``:func:`h5ml.write```,
``:class:`~h5ml.errors.ChecksumError```). mkdocstrings renders Markdown, where
a role would appear as its raw text; this extension (``extensions:`` of the
python handler in ``mkdocs.yml``) rewrites each role as inline code of its
target, the last name only for a target written with ``~``, as Sphinx shows it.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

__all__ = ["SphinxRoles", "plain_roles"]

_ROLE = re.compile(r":(?:py:)?(?:attr|class|data|exc|func|meth|mod|obj|const):`(?P<tilde>~?)(?P<target>[^`]+)`")


def plain_roles(text: str) -> str:
    """``text`` with every Sphinx cross-reference role replaced by inline code of its target.

    Parameters
    ----------
    text
        A docstring.

    Returns
    -------
    str
        The docstring, ``:func:`h5ml.write``` as ```h5ml.write``` and ``:class:`~h5ml.errors.ChecksumError```
        as ```ChecksumError```.
    """

    def code(match: re.Match[str]) -> str:
        target = match.group("target")
        return "`" + (target.rsplit(".", 1)[-1] if match.group("tilde") else target) + "`"

    return _ROLE.sub(code, text)


class SphinxRoles(griffe.Extension):
    """Rewrite the Sphinx roles of every loaded object's docstring (:func:`plain_roles`)."""

    def on_object(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        """Rewrite ``obj``'s docstring, once it is loaded."""
        if obj.docstring is not None:
            obj.docstring.value = plain_roles(obj.docstring.value)
