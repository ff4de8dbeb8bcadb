"""The tree of an HDF5 file that is not an h5ml file, as ``h5ml inspect`` shows it (text and JSON).

:func:`render_tree` prints a :class:`h5ml.model.tree.TreeWalk` as a tree, one
line per path (kind, shape, type, chunks, filters; a link's target), its
attributes under it, and a last line saying how many objects were not shown;
:func:`tree_json` gives the same as JSON. ``h5ml inspect`` calls them for a
foreign HDF5 file after a line saying that it is not an h5ml file and how to
convert it (:func:`foreign_note`); what the conversion would do can be
printed after the tree.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from rich.console import Console
from rich.text import Text
from rich.tree import Tree

from h5ml.model.tree import TreeNode, TreeWalk
from h5ml.tools.console import tuple_text

__all__ = ["foreign_note", "render_tree", "tree_json"]


def _details(node: TreeNode) -> str:
    """What follows the name on a node's line."""
    if node.kind in ("soft link", "external link"):
        return f"{node.kind} -> {node.target} (not followed)"
    if node.target is not None and node.kind == "unreadable":
        return f"unreadable: {node.target}"
    if node.target is not None:
        return f"{node.kind}, the same object as {node.target} (listed there)"
    parts = [node.kind]
    if node.kind == "dataset":
        parts.append(
            "null dataspace" if node.shape is None else ("scalar" if not node.shape else tuple_text(node.shape))
        )
    if node.dtype is not None:
        parts.append(node.dtype)
    if node.kind == "dataset":
        if node.chunks is not None:
            parts.append("chunks " + tuple_text(node.chunks))
        elif node.layout is not None:
            parts.append(node.layout if node.layout in ("virtual", "external") else f"{node.layout} (not chunked)")
        if node.layout in ("virtual", "external"):
            parts.append("(its data is in other files: not read)")
        if node.filters:
            parts.append("filters " + " + ".join(f.label() for f in node.filters))
    return "  ".join(parts)


def _label(node: TreeNode, name: str) -> Text:
    label = Text(name, style="bold")
    label.append("  " + _details(node))
    for key, value in node.attributes:
        label.append(f"\n@{key} = {value}", style="dim")
    return label


def foreign_note(path: str, reason: str) -> str:
    """The line before the tree of a file that is not an h5ml file: why, and how to convert it (§4.1).

    Parameters
    ----------
    path
        The file.
    reason
        Why it is not an h5ml file (``"the root attribute 'format' is missing"``).
    """
    return (
        f"{path} is an HDF5 file but not an h5ml file ({reason}); convert it with 'h5ml convert {path} OUTPUT.h5'. "
        "What it holds:"
    )


def render_tree(console: Console, walk: TreeWalk, more_hint: str = "--max-objects N") -> None:
    """Print the tree of an HDF5 file: one line per path, its attributes under it, then what was not shown.

    Parameters
    ----------
    console
        Where to print.
    walk
        What :func:`h5ml.model.tree.walk_tree` returned.
    more_hint
        How to show more objects, for the last line (the command line's option).
    """
    root = Tree(_label(walk.nodes[0], walk.path) if walk.nodes else Text(walk.path))
    branches: dict[str, Tree] = {"/": root}
    for node in walk.nodes[1:]:
        parent, _, name = node.path.rpartition("/")
        branch = branches.get(parent or "/", root).add(_label(node, name))
        if node.kind == "group" and node.target is None:
            branches[node.path] = branch
    console.print(root)
    if walk.not_shown:
        count = f"{walk.not_shown}" if walk.count_complete else f"more than {walk.not_shown}"
        console.print(Text(f"{count} more objects not shown ({len(walk.nodes)} shown; {more_hint} shows more)"))


def tree_json(walk: TreeWalk) -> dict[str, Any]:
    """The tree as JSON-able dicts: ``path``, ``objects`` (each node's fields), ``not_shown``, ``count_complete``.

    Parameters
    ----------
    walk
        What :func:`h5ml.model.tree.walk_tree` returned.
    """
    objects = []
    for node in walk.nodes:
        document = dataclasses.asdict(node)
        document["attributes"] = dict(node.attributes)
        objects.append(document)
    return {
        "path": walk.path,
        "objects": objects,
        "not_shown": walk.not_shown,
        "count_complete": walk.count_complete,
    }
