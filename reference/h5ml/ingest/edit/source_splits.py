"""The source splits of merged inputs: what ``h5ml merge`` states and refuses (§4.7, §5.1).

Each input's record :data:`h5ml.ingest.provenance.SOURCE_SPLITS_ATTR` says
where its splits came from. :func:`merged_from` words, per output split, the
input splits that go in, after refusing a split whose inputs recorded
different source split names (test data converted into ``train``, merged
with real training data), unless ``allow_mixed_splits``.
An input without a record (a file of :class:`h5ml.Writer`, or converted
before the record existed) is merged as before and stated as "no record".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from h5ml.errors import IngestError
from h5ml.ingest.provenance import SOURCE_SPLITS_ATTR, Entry, Record

__all__ = ["merged_from"]


def _names(entries: Sequence[Entry]) -> tuple[str, ...]:
    """The recorded source split names, each once, in order; a null (the source had none) is ``"none"``."""
    return tuple(dict.fromkeys(e["split"] if e["split"] is not None else "none" for e in entries))


def _entries(found: Record | None, split: str) -> list[Entry] | None:
    """The entries of ``split`` in an input's record, or None when the input recorded nothing for it."""
    if found is None or split not in found:
        return None
    return found[split]


def _stated(entries: Sequence[Entry]) -> str:
    """``"source split train"``; ``"source splits val, valid"``; ``"source split none, named by default"``."""
    names = _names(entries)
    text = f"source split{'s' if len(names) > 1 else ''} {', '.join(names)}"
    unnamed = list(dict.fromkeys(e["named_by"] for e in entries if e["split"] is None))
    return text + (f", named by {' and '.join(unnamed)}" if unnamed else "")


def _origin(entries: Sequence[Entry]) -> str:
    """Where the entries came from, for messages: ``"split 'train' of data.npz (by array name)"``."""
    return ", ".join(
        f"{e['source']}, which names no split (by {e['named_by']})"
        if e["split"] is None
        else f"split {e['split']!r} of {e['source']} (by {e['named_by']})"
        for e in entries
    )


def _refusal(name: str, earlier: tuple[Path, list[Entry]], path: Path, entries: list[Entry]) -> IngestError:
    """The error for split ``name``, recorded as ``earlier``'s entries in one file and ``entries`` in ``path``."""
    where, expected = earlier
    return IngestError(
        f"cannot merge split {name!r} of {where} and {path}: their samples come from differently named "
        f"source splits. {where} recorded source split {', '.join(_names(expected))}, from "
        f"{_origin(expected)}; {path} recorded source split {', '.join(_names(entries))}, from "
        f"{_origin(entries)}; both in the root attribute {SOURCE_SPLITS_ATTR!r}. Merged, split {name!r} would mix "
        "them, such as test data converted into train with real training data. Check where each file's split "
        "came from and convert the wrong one again into the split its samples belong to, or, if they do "
        "belong together, merge anyway with --allow-mixed-splits (allow_mixed_splits=True)",
        path=str(path),
        hdf5_path=f"/{name}",
    )


def merged_from(
    order: Mapping[str, Sequence[tuple[Path, Any]]],
    records: Mapping[Path, Record | None],
    *,
    allow_mixed_splits: bool = False,
) -> dict[str, list[str]]:
    """Output split -> the input splits that go in, as text, after refusing inputs of mixed source splits (§5.1).

    Two inputs differ when the sets of source split names they recorded for
    a split differ (a null, a source without split, counts as its own name
    ``"none"``); inputs without a record for the split are not compared.

    Parameters
    ----------
    order
        Split -> the inputs that hold it (path as given, open file), in file order.
    records
        Each input's record (:func:`h5ml.ingest.provenance.read`), None when it has none.
    allow_mixed_splits
        State inputs that differ instead of refusing them.

    Returns
    -------
    dict
        Split -> one text per input: ``"<file>:<split> (source split <name>)"``,
        ``"(source split none, named by default)"`` when the source had no
        split, ``"(no record)"`` when the input recorded nothing for the split.

    Raises
    ------
    h5ml.IngestError
        Unless ``allow_mixed_splits``, for inputs that differ: naming the
        split, both files, the names each recorded and where they came from,
        and what to do (convert the wrong file again, or merge anyway with
        ``allow_mixed_splits=True``, ``--allow-mixed-splits``).
    """
    out: dict[str, list[str]] = {}
    for name, members in order.items():
        texts = []
        first: tuple[Path, list[Entry]] | None = None
        for path, _ in members:
            entries = _entries(records[path], name)
            texts.append(f"{path}:{name} ({'no record' if entries is None else _stated(entries)})")
            if entries is None:
                continue
            if first is None:
                first = (path, entries)
            elif not allow_mixed_splits and set(_names(entries)) != set(_names(first[1])):
                raise _refusal(name, first, path, entries)
        out[name] = texts
    return out
