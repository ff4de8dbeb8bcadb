"""JSON text read strictly: an object with two members of one name is refused, never read as its last (SPEC §12.1).

RFC 8259 §4 says only that the names within an object SHOULD be unique, and
leaves the meaning of a document with duplicate names to the parser: Python's
``json`` keeps the last member, other parsers keep the first or refuse the
document. An index read two ways could list two different sets of shards, so
SPEC §12.1-R8 makes a duplicate member name invalid, and :func:`loads_strict`
is the one reader of index text (:mod:`h5ml.model.shard_index`, the validator
of sharded datasets).

The objects are built by ``json.loads`` with an ``object_pairs_hook`` that
records, on the object itself, the names it met twice; once the whole
document is parsed, a walk (without recursion, as deep as ``json`` nests)
finds the first such object (an object before its members, then in
document order), so that the error names its
JSON pointer (RFC 6901), which a hook, called bottom-up without its
position, cannot know.
"""

from __future__ import annotations

import json
from typing import Any

from h5ml.model.problems import pointer

__all__ = ["DuplicateMemberError", "loads_strict"]


class DuplicateMemberError(ValueError):
    """A JSON object has two members of one name (SPEC §12.1-R8).

    Parameters
    ----------
    name
        The member name given twice.
    path
        The member names and array positions that lead to the object holding it (``[]`` for the document).

    Attributes
    ----------
    name
        As given.
    pointer
        The JSON pointer (RFC 6901) of the duplicated member: ``/splits/train/num_samples``.
    """

    def __init__(self, name: str, path: list[str]) -> None:
        self.name = name
        self.pointer = pointer([*path, name])
        super().__init__(
            f"the object at {pointer(path) or '/'} has the member {name!r} twice (JSON pointer {self.pointer}): "
            "JSON parsers disagree on which one counts, so neither is read"
        )


class _Members(dict[str, Any]):
    """A parsed JSON object that remembers the names it was given more than once."""

    duplicates: tuple[str, ...] = ()


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    members = _Members()
    twice = []
    for name, value in pairs:
        if name in members and name not in twice:
            twice.append(name)
        members[name] = value
    if twice:
        members.duplicates = tuple(twice)
    return members


def loads_strict(text: str) -> Any:
    """Parse JSON text as ``json.loads`` does, refusing any object that has a member name twice.

    Parameters
    ----------
    text
        The JSON text (RFC 8259).

    Returns
    -------
    Any
        The document: dicts, lists, str, int, float, bool, None.

    Raises
    ------
    DuplicateMemberError
        For the first object with a duplicate member name, an object before its members, then in document
        order (a ``ValueError``).
    ValueError
        If the text is not JSON (``json.JSONDecodeError``).
    RecursionError
        If it is nested too deeply for ``json``.
    """
    document = json.loads(text, object_pairs_hook=_pairs)
    stack: list[tuple[Any, list[str]]] = [(document, [])]
    while stack:
        value, path = stack.pop()
        if isinstance(value, _Members):
            if value.duplicates:
                raise DuplicateMemberError(value.duplicates[0], path)
            stack.extend((member, [*path, key]) for key, member in reversed(value.items()))
        elif isinstance(value, list):
            stack.extend((item, [*path, str(i)]) for i, item in reversed(list(enumerate(value))))
    return document
