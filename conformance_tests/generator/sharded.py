"""Sharded fixtures (SPEC §12): a folder per recipe holding ``index.json`` and the shard files it lists.

A sharded recipe has a member ``sharded`` instead of ``splits``::

    {"id": "valid-sharded-two-splits", "description": "...",
     "sharded": {
       "card": {"name": "...", "description": "..."},      # root attributes of every shard, = index metadata
       "features": {"x": {"encoding": "dense", "dtype": "<f4", "sample_shape": [3]}},   # what the index says
       "shards": [{"path": "train/train-00000.h5", "split": "train", "values": [[...], ...],
                   "dtype": "<f8"?, "root": {...}?, "present": true?, "listed": true?,
                   "features": {...}?, "file": {...}?}, ...],  # feature recipes instead of x; file options
       "view": {"name": "view.h5", "sources": {...}?}?,      # a view file (SPEC §12.6), see views.py
       "format_version": "1.2"?,                             # the index's
       "edits": [{"pointer": "/splits/test/num_samples", "value": 5}, ...]?,
       "refingerprint": false?,                              # recompute the index fingerprint after the edits
       "twice": ["format"]?},                                # top-level members written twice (§12.1-R8)
     "cases": [...]}

Each shard is an ordinary recipe (one split holding one dense feature ``x``
of the shard's values, or the shard's ``features`` as ordinary feature
recipes, ``format_version`` "1.2", the card as root
attributes) planned and written by the planner and writer of the other
fixtures. The index lists the shards with ``listed`` true (the default), in
the recipe's order, each entry read back from the written shard with h5py
(``num_samples``, the ``fingerprint`` attribute, the file's size); a shard
with ``present`` false is written, listed, then left out of the fixture (a
missing shard). The index fingerprint (§12.3) is computed here, from its
definition; then ``edits`` replace members at JSON pointers, and each member
named in ``twice`` (a top-level member with a number, string, boolean or null
value) is written twice in the index's text, the copy just before it, with
the same value: a duplicate member name that JSON parsers keeping the last
(or the first) member read as a valid index. A recipe with a
``view`` gets its view file last (:mod:`~conformance_tests.generator.views`):
its cases are given the view (the manifest's ``file``), not the index.

The fixture folder's digest (the manifest's ``sha256`` of such a case) is
the SHA-256 of the text of one line ``<hex sha256>  <relative path>\\n`` per
file of the folder, in code-point order of the '/'-separated paths
(CONTRACT.md §2).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from conformance_tests.generator.errors import RecipeError
from conformance_tests.generator.paths import FIXTURES_DIR
from conformance_tests.generator.planner import plan_recipe
from conformance_tests.generator.plans import FilePlan
from conformance_tests.generator.views import view_document, view_name, write_view
from conformance_tests.generator.write import write_plan

__all__ = [
    "INDEX_NAME",
    "build_sharded",
    "check_sharded",
    "index_fingerprint",
    "is_sharded",
    "shard_plans",
    "sharded_document",
    "sharded_entry_file",
    "sharded_files",
    "tree_digest",
]

#: The index's file name inside the fixture folder.
INDEX_NAME = "index.json"


def is_sharded(recipe: dict[str, Any]) -> bool:
    """Whether the recipe describes a sharded dataset (a fixture folder, not one file)."""
    return "sharded" in recipe


def _spec(recipe: dict[str, Any]) -> dict[str, Any]:
    spec = recipe["sharded"]
    for key in ("card", "features", "shards"):
        if key not in spec:
            raise RecipeError(f"{recipe['id']}: a sharded recipe needs sharded.{key}")
    return dict(spec)


def _shard_recipe(recipe: dict[str, Any], position: int, shard: dict[str, Any]) -> dict[str, Any]:
    """The ordinary recipe of one shard: its split with the one dense feature ``x``, the card at the root."""
    spec = _spec(recipe)
    attrs = {"format_version": "1.2", **spec["card"], **shard.get("root", {})}
    features = shard.get("features")
    if features is None:
        feature = dict(spec["features"]["x"])
        features = {
            "x": {
                "encoding": "dense",
                "dtype": shard.get("dtype", feature["dtype"]),
                "values": shard["values"],
                "storage": {"layout": "contiguous"},
            }
        }
    return {
        "id": f"{recipe['id']}-shard-{position}",
        "description": spec["card"].get("description", ""),
        "root": {"attrs": attrs},
        "splits": {shard["split"]: {"features": features}},
        **({"file": shard["file"]} if "file" in shard else {}),  # HDF5 file options (libver), as any recipe's
    }


def shard_plans(recipe: dict[str, Any]) -> list[tuple[dict[str, Any], FilePlan]]:
    """Each shard of the recipe with the plan of its file, in the recipe's order."""
    out = []
    for position, shard in enumerate(_spec(recipe)["shards"]):
        if "/" not in shard.get("path", "") or shard["path"].startswith("/") or ".." in shard["path"].split("/"):
            raise RecipeError(f"{recipe['id']}: shard {position} needs a relative path inside the folder")
        out.append((shard, plan_recipe(_shard_recipe(recipe, position, shard))))
    return out


def sharded_files(recipe: dict[str, Any]) -> list[str]:
    """The files of the fixture folder, relative and '/'-separated, in code-point order (index included)."""
    spec = _spec(recipe)
    present = [s["path"] for s in spec["shards"] if s.get("present", True)]
    view = view_name(spec)
    return sorted([INDEX_NAME, *present, *([view] if view else [])])


def sharded_entry_file(recipe: dict[str, Any]) -> str:
    """The file a case of the recipe hands the validator and reader: the view if there is one, else the index."""
    view = view_name(_spec(recipe))
    return f"fixtures/{recipe['id']}/{view or INDEX_NAME}"


def sharded_document(recipe: dict[str, Any]) -> dict[str, Any] | None:
    """The reader document of the recipe's view (SPEC §12.6), from its committed index; None without a view."""
    spec = _spec(recipe)
    if view_name(spec) is None:
        return None
    document = json.loads((FIXTURES_DIR / recipe["id"] / INDEX_NAME).read_text(encoding="utf-8"))
    shards = []
    for shard, plan in shard_plans(recipe):
        if shard.get("listed", True):
            if plan.document is None:
                raise RecipeError(f"{recipe['id']}: shard {shard['path']} has no reader document")
            shards.append((shard["split"], plan.document))
    return view_document(spec, document, shards, INDEX_NAME)


def index_fingerprint(splits: dict[str, Any]) -> str:
    """SPEC §12.3: SHA-256 of one line '<split>/<position> <shard fingerprint>\\n' per shard, splits sorted."""
    lines = [
        f"{name}/{position} {shard['fingerprint']}\n"
        for name in sorted(splits)
        for position, shard in enumerate(splits[name]["shards"])
    ]
    return "sha256:" + hashlib.sha256("".join(lines).encode("utf-8")).hexdigest()


def _entry(path: Path, relative: str, split: str) -> dict[str, Any]:
    """A shard's index entry, read back from its file with h5py."""
    with h5py.File(path, "r") as f:
        fingerprint = f.attrs["fingerprint"]
        num_samples = int(np.asarray(f[split].attrs["num_samples"]))
    text = fingerprint.decode() if isinstance(fingerprint, bytes) else str(fingerprint)
    return {"path": relative, "num_samples": num_samples, "fingerprint": text, "size_bytes": path.stat().st_size}


def _set(document: Any, pointer: str, value: Any) -> None:
    """Replace the member at a JSON pointer (RFC 6901, without escapes) of ``document``."""
    parts = pointer.split("/")[1:]
    target = document
    for part in parts[:-1]:
        target = target[int(part)] if isinstance(target, list) else target[part]
    if isinstance(target, list):
        target[int(parts[-1])] = value
    else:
        target[parts[-1]] = value


def index_document(recipe: dict[str, Any], entry_of: Callable[[int, dict[str, Any]], dict[str, Any]]) -> dict[str, Any]:
    """The index of the recipe, each listed shard's entry given by ``entry_of(position, shard)``."""
    spec = _spec(recipe)
    splits: dict[str, Any] = {}
    for position, shard in enumerate(spec["shards"]):
        if not shard.get("listed", True):
            continue
        split = splits.setdefault(shard["split"], {"num_samples": 0, "features": spec["features"], "shards": []})
        entry = entry_of(position, shard)
        split["num_samples"] += entry["num_samples"]
        split["shards"].append(entry)
    document = {
        "format": "h5ml-index",
        "format_version": spec.get("format_version", "1.2"),
        "metadata": {"license": "CC0-1.0", **spec["card"]},
        "splits": splits,
        "fingerprint": index_fingerprint(splits),
    }
    document = json.loads(json.dumps(document))  # a copy: the edits never reach the recipe
    for edit in spec.get("edits", []):
        _set(document, edit["pointer"], edit["value"])
    if spec.get("refingerprint"):
        document["fingerprint"] = index_fingerprint(document["splits"])
    return document


def _index_text(document: dict[str, Any], recipe: dict[str, Any]) -> str:
    """The index's text (2-space indents); the members in the recipe's ``twice`` written twice (SPEC §12.1-R8)."""
    lines = (json.dumps(document, indent=2, ensure_ascii=False) + "\n").splitlines(keepends=True)
    for name in _spec(recipe).get("twice", []):
        if isinstance(document.get(name), (dict, list)) or name not in document:
            raise RecipeError(f"{recipe['id']}: twice names {name!r}, which is no top-level member of one line")
        key = "  " + json.dumps(name, ensure_ascii=False) + ": "
        at = next(i for i, line in enumerate(lines) if line.startswith(key))
        lines.insert(at, lines[at] if lines[at].endswith(",\n") else lines[at][:-1] + ",\n")
    return "".join(lines)


def build_sharded(recipe: dict[str, Any]) -> Path:
    """Write the fixture folder of a sharded recipe (in a scratch folder first, moved into place when complete)."""
    target = FIXTURES_DIR / recipe["id"]
    with tempfile.TemporaryDirectory(dir=FIXTURES_DIR) as tmp:
        scratch = Path(tmp) / recipe["id"]
        paths: dict[int, Path] = {}
        for position, (shard, plan) in enumerate(shard_plans(recipe)):
            path = scratch.joinpath(*shard["path"].split("/"))
            path.parent.mkdir(parents=True, exist_ok=True)
            try:
                write_plan(plan, path)
            except RecipeError as exc:
                raise RecipeError(f"{recipe['id']}: shard {shard['path']}: {exc}") from exc
            paths[position] = path
        document = index_document(recipe, lambda i, s: _entry(paths[i], s["path"], s["split"]))
        (scratch / INDEX_NAME).write_text(_index_text(document, recipe), encoding="utf-8")
        if view_name(_spec(recipe)) is not None:  # SPEC §12.6: the view last, from the shards and the index
            write_view(scratch, _spec(recipe), document, INDEX_NAME)
        for position, shard in enumerate(_spec(recipe)["shards"]):
            if not shard.get("present", True):
                paths[position].unlink()
        if target.exists():
            shutil.rmtree(target)
        os.replace(scratch, target)
    return target


def tree_digest(folder: Path) -> str:
    """The digest of a fixture folder: SHA-256 of '<sha256>  <relative path>\\n' per file, paths sorted."""
    files = sorted((p.relative_to(folder).as_posix(), p) for p in folder.rglob("*") if p.is_file())
    text = "".join(f"{hashlib.sha256(p.read_bytes()).hexdigest()}  {rel}\n" for rel, p in files)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def check_sharded(recipe: dict[str, Any], check_plan: Callable[[str, FilePlan, Path], None]) -> list[str]:
    """The problems of a committed sharded fixture: its files, each present shard's content, its index."""
    folder = FIXTURES_DIR / recipe["id"]
    rid = recipe["id"]
    found = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())
    if found != sharded_files(recipe):
        return [f"{rid}: the folder holds {found}, the recipe gives {sharded_files(recipe)}"]
    for position, (shard, plan) in enumerate(shard_plans(recipe)):
        if shard.get("present", True):
            check_plan(f"{rid}-shard-{position}", plan, folder.joinpath(*shard["path"].split("/")))
    committed = json.loads((folder / INDEX_NAME).read_text(encoding="utf-8"))
    listed = {e["path"]: e for split in committed.get("splits", {}).values() for e in split.get("shards", [])}

    def entry_of(position: int, shard: dict[str, Any]) -> dict[str, Any]:
        if shard.get("present", True):
            return _entry(folder.joinpath(*shard["path"].split("/")), shard["path"], shard["split"])
        # a missing shard cannot be read back: its entry is the committed one (which the index must hold)
        listed_entry: dict[str, Any] = listed.get(shard["path"], {})
        return listed_entry

    try:
        want = _index_text(index_document(recipe, entry_of), recipe)
    except (KeyError, TypeError) as exc:
        return [f"{rid}: cannot rebuild the index from the committed shards: {exc}"]
    if (folder / INDEX_NAME).read_text(encoding="utf-8") != want:
        return [f"{rid}: {INDEX_NAME} differs from the index its recipe and shards give (run generate.py)"]
    return _check_view(recipe, folder)


def _check_view(recipe: dict[str, Any], folder: Path) -> list[str]:
    """The committed view must be the bytes the committed shards and index give (written again aside)."""
    spec = _spec(recipe)
    name = view_name(spec)
    if name is None:
        return []
    document = json.loads((folder / INDEX_NAME).read_text(encoding="utf-8"))
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / recipe["id"]
        shutil.copytree(folder, copy)
        (copy / name).unlink()
        write_view(copy, spec, document, INDEX_NAME)
        if (copy / name).read_bytes() != (folder / name).read_bytes():
            return [f"{recipe['id']}: {name} differs from the view its shards and index give (run generate.py)"]
    return []
