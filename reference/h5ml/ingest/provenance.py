"""Where each split's samples came from: the root user attribute :data:`SOURCE_SPLITS_ATTR` (§4.7, §5.1).

A converter knows where its split names come from: an array suffix
(``x_test``), a folder, a table column, a Hugging Face split, an option, or
the default split ``train`` of a source that names none. It records that in
the output's root attribute ``h5ml-ingest:source-splits``, JSON text that
maps each output split to its sources::

    {"train": [{"source": "data.npz", "split": "train", "named_by": "array name"}]}

``split`` is the split name as the source had it (``"valid"`` for an array
``x_valid`` stored in ``validation``), null when the source had none (a
``.npy`` file, a table without a split column, a source cut by split
ratios); ``named_by`` says what gave the output split its name (one of
:data:`NAMED_BY`). ``h5ml merge`` reads the record of every input and
refuses to join inputs whose samples came from differently named source
splits (test data converted into ``train`` and merged with real training
data), and stores the union of the inputs' entries; ``h5ml subset`` keeps
the entries of the splits it keeps. The JSON Schema
``schema/h5ml-source-splits-1.0.schema.json`` (:func:`h5ml.spec.schemas.validator_for`,
short name ``"source-splits"``) defines the record; :func:`read` checks it.
The attribute's name lives in :mod:`h5ml.spec` (the validator names the
record in its I300 issue) and is re-exported here.

Functions: :func:`source_split` builds one entry, :func:`record` adds the
attribute to a converter's root metadata, :func:`read` parses it back (None
for files written without one, such as those of :class:`h5ml.Writer`),
:func:`kept` keeps the entries of some splits, :func:`union` joins the
entries of several files, and :func:`folder_splits` builds the record of a
folder tree (images, audio).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping, MutableMapping, Sequence
from pathlib import Path
from typing import Any, Final, Literal, TypeVar, get_args

from h5ml.errors import IngestError
from h5ml.ingest.report import SourceItem
from h5ml.reader import Dataset
from h5ml.spec import SOURCE_SPLITS_ATTR
from h5ml.spec.schemas import validator_for

__all__ = [
    "NAMED_BY",
    "SOURCE_SPLITS_ATTR",
    "Entry",
    "NamedBy",
    "Record",
    "folder_splits",
    "kept",
    "read",
    "record",
    "source_split",
    "union",
]

#: What gave an output split its name.
NamedBy = Literal[
    "file name", "list file", "folder", "group", "array name", "attribute", "column", "option", "plan", "default"
]
#: The values of ``named_by``, in the schema's order.
NAMED_BY: Final[tuple[str, ...]] = get_args(NamedBy)
#: One entry: ``{"source": str, "split": str | None, "named_by": str}``.
Entry = dict[str, Any]
#: A parsed record: output split -> its entries, in the order recorded.
Record = dict[str, list[Entry]]
#: The schema's short name (:data:`h5ml.spec.schemas.SCHEMA_FILES`).
_SCHEMA: Final = "source-splits"

_Metadata = TypeVar("_Metadata", bound=MutableMapping[str, Any])


def source_split(source: str | os.PathLike[str], split: str | None, named_by: NamedBy) -> Entry:
    """One entry of the record: a source of a split's samples and how the split was named (§4.7).

    Parameters
    ----------
    source
        The source file or folder as the converter was given it (a path, a
        Hugging Face dataset name), stored as text.
    split
        The split name as the source had it: the array suffix (``"valid"``
        of ``x_valid``), the folder, the column value, the Hugging Face
        split; None when the source had none (the split came from an option,
        split ratios or the default ``train``).
    named_by
        What gave the output split its name: one of :data:`NAMED_BY`
        (``"file name"``, ``"folder"``, ``"group"``, ``"array name"``,
        ``"column"``, ``"option"``, ``"plan"``, ``"default"``).

    Returns
    -------
    dict
        ``{"source": str, "split": str or None, "named_by": str}``.

    Raises
    ------
    ValueError
        If ``named_by`` is not one of :data:`NAMED_BY`, ``source`` is empty,
        or ``split`` is neither None nor a non-empty string (a defect of the
        converter, not of the user's input).
    """
    text = os.fspath(source)
    if named_by not in NAMED_BY:
        raise ValueError(f"named_by must be one of {list(NAMED_BY)}, got {named_by!r}")
    if not isinstance(text, str) or not text:
        raise ValueError(f"source must be a non-empty path or name, got {source!r}")
    if split is not None and (not isinstance(split, str) or not split):
        raise ValueError(f"split must be None or a non-empty string, got {split!r}")
    return {"source": text, "split": split, "named_by": named_by}


def _unique(entries: Iterable[Mapping[str, Any]]) -> list[Entry]:
    """The entries, each once, in the order first met."""
    out: list[Entry] = []
    for entry in entries:
        as_dict = dict(entry)
        if as_dict not in out:
            out.append(as_dict)
    return out


def record(metadata: _Metadata, splits: Mapping[str, Iterable[Mapping[str, Any]]]) -> _Metadata:
    """Add the record :data:`SOURCE_SPLITS_ATTR` of ``splits`` to a converter's root metadata (§4.7).

    Parameters
    ----------
    metadata
        The root metadata dict of the output (as
        :func:`h5ml.ingest.conversion_metadata` makes it), changed in place;
        the record replaces any value the attribute had.
    splits
        Output split -> its entries (:func:`source_split`); an entry met
        twice in one split is stored once, a split without entries is left
        out; when no split has entries, nothing is added.

    Returns
    -------
    MutableMapping
        ``metadata`` itself, so that the call can wrap the metadata's constructor.

    Raises
    ------
    ValueError
        If the record does not follow ``schema/h5ml-source-splits-1.0.schema.json``
        (an entry not built by :func:`source_split`, a split name with ``/``).
    """
    doc = {name: _unique(entries) for name, entries in splits.items()}
    doc = {name: entries for name, entries in doc.items() if entries}
    problem = next(iter(validator_for(_SCHEMA).iter_errors(doc)), None)
    if problem is not None:
        where = "/".join(str(p) for p in problem.absolute_path) or "the record"
        raise ValueError(f"{SOURCE_SPLITS_ATTR}: {where}: {problem.message}")
    if doc:
        metadata[SOURCE_SPLITS_ATTR] = json.dumps(doc, ensure_ascii=False)
    return metadata


def _attribute(source: Any) -> tuple[Any, str]:
    """The attribute's value (None when absent) and the file's name, of a Dataset, an h5py object or a mapping."""
    if isinstance(source, Dataset):
        return source.metadata.extra.get(SOURCE_SPLITS_ATTR), source.path
    attrs = getattr(source, "attrs", None)
    if attrs is not None:  # an h5py File or Group
        return attrs.get(SOURCE_SPLITS_ATTR), str(getattr(getattr(source, "file", None), "filename", "") or "")
    if isinstance(source, Mapping):
        return source.get(SOURCE_SPLITS_ATTR), ""
    raise TypeError(f"read() takes an h5ml Dataset, an h5py File or Group, or a mapping of attributes, not {source!r}")


def read(source: Any, *, where: str | os.PathLike[str] | None = None) -> Record | None:
    """The record :data:`SOURCE_SPLITS_ATTR` of a file, parsed and checked against its schema (§4.7).

    Parameters
    ----------
    source
        An open :class:`h5ml.reader.Dataset`, an h5py ``File`` or ``Group``
        (its ``attrs``), or a mapping of root attributes (name -> value).
    where
        The file to name in messages; default the Dataset's or h5py file's
        path (a mapping has none).

    Returns
    -------
    dict or None
        Output split -> its entries (``{"source", "split", "named_by"}``
        dicts, in the order recorded); None when the file has no record
        (files written by :class:`h5ml.Writer` directly, or before this
        attribute existed).

    Raises
    ------
    h5ml.IngestError
        If the attribute is not a string, not JSON, or does not follow
        ``schema/h5ml-source-splits-1.0.schema.json``; the message names the
        file and the attribute, and says what to do.
    TypeError
        If ``source`` is none of the kinds above.
    """
    value, path = _attribute(source)
    if value is None:
        return None
    name = os.fspath(where) if where is not None else path
    label = f"{name}: " if name else ""
    advice = (
        f"it is written by h5ml's converters; convert the file again, or delete the attribute "
        f"(h5py: del f.attrs[{SOURCE_SPLITS_ATTR!r}]) to treat the file as one without a record"
    )

    def malformed(problem: str) -> IngestError:
        return IngestError(
            f"{label}the root attribute {SOURCE_SPLITS_ATTR!r} is malformed: {problem}; {advice}",
            path=name or None,
            hdf5_path="/",
        )

    if isinstance(value, bytes):
        try:
            value = value.decode("utf-8")
        except UnicodeDecodeError:
            raise malformed("its bytes are not UTF-8 text") from None
    if not isinstance(value, str):
        raise malformed(f"it holds the {type(value).__name__} {str(value)[:80]}, not JSON text")
    try:
        doc = json.loads(value)
    except json.JSONDecodeError as exc:
        raise malformed(f"it is not JSON ({exc})") from None
    problem = next(iter(validator_for(_SCHEMA).iter_errors(doc)), None)
    if problem is not None:
        at = "/".join(str(p) for p in problem.absolute_path)
        raise malformed(f"{'at ' + at + ': ' if at else ''}{problem.message}")
    return {str(split): [dict(e) for e in entries] for split, entries in doc.items()}


def kept(found: Record | None, splits: Iterable[str]) -> Record | None:
    """The entries of the splits kept (``h5ml subset``), in the order of ``splits``; None stays None.

    Parameters
    ----------
    found
        A record (:func:`read`), or None.
    splits
        The splits kept.

    Returns
    -------
    dict or None
        The record of the kept splits that have entries.
    """
    if found is None:
        return None
    return {name: found[name] for name in splits if name in found}


def union(records: Sequence[Record | None], split: str) -> list[Entry]:
    """The entries of ``split`` in several records, each once, in file order (``h5ml merge``).

    Parameters
    ----------
    records
        The inputs' records (None for an input without one, which adds nothing).
    split
        The split merged.

    Returns
    -------
    list of dict
        The entries; empty when no record has the split.
    """
    return _unique(entry for found in records if found is not None for entry in found.get(split, []))


def folder_splits(
    source: str | os.PathLike[str],
    root: str | os.PathLike[str],
    splits: Mapping[str, Sequence[SourceItem]],
    *,
    split_folders: bool,
    ratios: bool,
) -> dict[str, list[Entry]]:
    """The record of a folder tree (``ROOT/<split>/...`` or a tree without split folders).

    Parameters
    ----------
    source
        The folder as the converter was given it (recorded as ``source``).
    root
        The folder the items' paths start with.
    splits
        Output split -> its items; the first part of the first item of each
        split is a file under ``root``.
    split_folders
        Whether the folders under ``root`` are splits: the split's source
        name is the folder its first item is in, ``named_by="folder"``.
        Otherwise the source had no split: ``named_by="option"`` (split
        ratios) or ``"default"`` (every file in ``train``).
    ratios
        Whether split ratios cut the tree.

    Returns
    -------
    dict
        Output split -> its one entry, for :func:`record`.
    """
    out: dict[str, list[Entry]] = {}
    for name, items in splits.items():
        if not items:
            continue
        if split_folders:
            folder = Path(os.path.relpath(items[0].first_path, root)).parts[0]
            out[name] = [source_split(source, folder, "folder")]
        else:
            out[name] = [source_split(source, None, "option" if ratios else "default")]
    return out
