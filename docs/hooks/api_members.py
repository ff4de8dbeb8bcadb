"""MkDocs hook: the API pages document what each public module exports (its ``__all__``).

A line ``<!-- api-members: h5ml_torch -->`` in a page becomes one
mkdocstrings directive ``::: h5ml_torch.NAME`` per name of that module's
``__all__`` that the page does not document already with its own
directive, so the pages can group the main names in sections and a name
added to ``__all__`` later is documented without editing the page.
``__all__`` is read from the module's source when it is a literal list
(the adapters: importing torch or keras is not needed to document them)
and from the imported module otherwise (``h5ml``, whose submodules import
lazily).
"""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path
from typing import Any

__all__ = ["on_page_markdown", "public_names"]

ROOT = Path(__file__).resolve().parents[2]
_SOURCES = (ROOT / "reference", ROOT / "adapters")
_MARKER = re.compile(r"^<!-- api-members: (?P<module>[\w.]+) -->$", re.MULTILINE)


def _source(module: str) -> Path | None:
    parts = module.split(".")
    for top in _SOURCES:
        for candidate in (top.joinpath(*parts, "__init__.py"), top.joinpath(*parts[:-1], parts[-1] + ".py")):
            if candidate.is_file():
                return candidate
    return None


def public_names(module: str) -> list[str]:
    """The names ``module`` exports, in the order of its ``__all__``, dunder names left out.

    Parameters
    ----------
    module
        A dotted module name under ``reference/`` or ``adapters/`` (``h5ml``, ``h5ml.dask``, ``h5ml_keras``).

    Returns
    -------
    list of str
        The names of ``__all__`` but ``__version__`` and the like.
    """
    names: list[str] | None = None
    path = _source(module)
    if path is not None:
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__all__" for t in node.targets):
                try:
                    names = list(ast.literal_eval(node.value))
                except ValueError:
                    names = None
    if names is None:
        names = list(importlib.import_module(module).__all__)
    return [name for name in names if not name.startswith("__")]


def on_page_markdown(markdown: str, **kwargs: Any) -> str:
    """Replace each ``<!-- api-members: MODULE -->`` marker by a directive per exported name not yet on the page."""

    def members(match: re.Match[str]) -> str:
        module = match.group("module")
        done = set(re.findall(rf"^::: {re.escape(module)}\.(\w+)\s*$", markdown, re.MULTILINE))
        return "\n\n".join(f"::: {module}.{name}" for name in public_names(module) if name not in done) + "\n"

    return _MARKER.sub(members, markdown)
