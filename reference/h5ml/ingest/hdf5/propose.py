"""The plan h5ml proposes for HDF5 sources: :func:`propose_plan` (``h5ml convert SRC... --plan``).

The sources are HDF5 files, MATLAB v7.3 ``.mat`` files, and text files
listing shards (``train_files.txt``: one file per line, the list's name
naming their split). Each file is walked (:func:`~h5ml.ingest.hdf5.inventory.take_inventory`)
and read by its layout (:func:`~h5ml.ingest.hdf5.readings.read_source`);
the split of a file without splits inside comes from its name
(:func:`~h5ml.ingest.hdf5.names.file_split`), from ``split_name``, or is
``train`` (recorded as a default). The files' splits are then joined:

- files giving one split the *same* features are shards: their rows are
  concatenated in the order given (``ply_data_train0.h5``, ``..._train1.h5``);
- files giving one split *different* features are joined by row (x in one
  file, y in another, PatchCamelyon's ``_x``/``_y`` pairs), after checking
  that their sample counts are equal; a mismatch is an error naming both
  files and counts;
- anything else is asked about.

Labels are then completed (:mod:`h5ml.ingest.hdf5.labeling`), root
attributes kept as metadata, and whatever no feature reads is put in
``left_out``: the plan accounts for every object of every source.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from h5ml.errors import IngestError
from h5ml.ingest.hdf5.check import split_disagreements
from h5ml.ingest.hdf5.coverage import BOOKKEEPING_ATTRS, objects, unaccounted
from h5ml.ingest.hdf5.draft import Draft, Reading, user_attr_name
from h5ml.ingest.hdf5.handles import checked_object
from h5ml.ingest.hdf5.inventory import Inventory, Unstorable, plain_value, take_inventory
from h5ml.ingest.hdf5.labeling import LabelOptions, complete_labels
from h5ml.ingest.hdf5.matlab import char_strings, matlab_order
from h5ml.ingest.hdf5.names import file_split, read_list_file
from h5ml.ingest.hdf5.plan import Feature, LeftOut, NamedBy, Part, Plan, SourceFile, Split
from h5ml.ingest.hdf5.readings import read_source
from h5ml.ingest.naming import split_order
from h5ml.ingest.options import parameter_error
from h5ml.model.locking import open_foreign

__all__ = ["expand_sources", "propose_plan"]

#: Suffixes of shard lists.
_LIST_SUFFIXES = (".txt", ".lst")


def expand_sources(sources: Sequence[str | os.PathLike[str]]) -> list[SourceFile]:
    """The source files: HDF5 files as given, the files that shard lists name (each with the list's split).

    Parameters
    ----------
    sources
        HDF5 files and ``.txt``/``.lst`` shard lists, in order.

    Returns
    -------
    list of SourceFile
        In order, each with the split its name (or its list's) gives.

    Raises
    ------
    h5ml.errors.ParameterError
        If no source is given or a file is given twice.
    FileNotFoundError, h5ml.IngestError
        As :func:`~h5ml.ingest.hdf5.names.read_list_file`.
    """
    if not sources:
        raise parameter_error("sources", "give at least one HDF5 file", "SOURCES")
    out: list[SourceFile] = []
    for given in sources:
        path = Path(given)
        if path.suffix.lower() in _LIST_SUFFIXES and path.is_file():
            split, _, _ = file_split(path)
            out += [SourceFile(path=os.fspath(p), split=split, listed_in=os.fspath(path)) for p in read_list_file(path)]
        else:
            out.append(SourceFile(path=os.fspath(path), split=file_split(path)[0]))
    seen: dict[tuple[int, int], str] = {}
    for item in out:
        try:
            stat = os.stat(item.path)
        except OSError:
            continue  # a missing file: the walk says so
        key = (stat.st_dev, stat.st_ino)  # the same file by any path: symbolic or hard link
        if key in seen:
            raise parameter_error(
                "sources",
                f"{item.path} is given twice (it is the file {seen[key]!r}, by a link or the same path); give each "
                "file once",
                "SOURCES",
            )
        seen[key] = item.path
    return out


def _join(split: str, drafts: list[Draft], confirm: list[str]) -> Split:
    """One output split from the drafts of several sources (shards, or features joined by row)."""
    first = drafts[0]
    if len(drafts) == 1:
        return Split(
            name=split,
            source_split=first.source_split,
            named_by=first.named_by,
            num_samples=first.num_samples,
            features=list(first.features.values()),
        )
    names = [set(d.features) for d in drafts]
    sources = ", ".join(f"{d.source} ({d.num_samples})" for d in drafts)
    features: dict[str, Feature] = {}
    if all(n == names[0] for n in names) and all(d.kind == "rows" for d in drafts):
        for name in first.features:
            parts: list[Part] = []
            for d in drafts:
                f = d.features[name]
                if (f.encoding, f.dtype, f.sample_shape) != (
                    first.features[name].encoding,
                    first.features[name].dtype,
                    first.features[name].sample_shape,
                ):
                    confirm.append(
                        f"split {split!r}: feature {name!r} is {f.encoding} {f.dtype} {f.sample_shape} in {d.source} but "
                        f"{first.features[name].encoding} {first.features[name].dtype} {first.features[name].sample_shape} "
                        f"in {first.source}: the shards disagree"
                    )
                parts += f.parts
            features[name] = first.features[name].model_copy(update={"parts": parts})
        total = sum(d.num_samples for d in drafts)
    elif all(not (a & b) for i, a in enumerate(names) for b in names[i + 1 :]):
        counts = {d.source: d.num_samples for d in drafts}
        if len(set(counts.values())) > 1:
            listed = " but ".join(f"{s} has {n} samples" for s, n in counts.items())
            raise IngestError(
                f"split {split!r} joins features from several files by row, and {listed}: the rows of both files must "
                "be the same samples. Check that these files belong together, or convert them separately"
            )
        if any(d.kind == "records" for d in drafts):
            confirm.append(f"split {split!r}: records of several files ({sources}) are joined by position; confirm")
        for d in drafts:
            features.update(d.features)
        total = first.num_samples
    else:
        confirm.append(
            f"split {split!r}: the files {sources} share some features but not all ({[sorted(n) for n in names]}): "
            "are they shards or parts of one sample? Edit the plan"
        )
        for d in drafts:
            for name, f in d.features.items():
                features.setdefault(name, f)
        total = first.num_samples
    named_by = {d.named_by for d in drafts}
    source_split = {d.source_split for d in drafts}
    return Split(
        name=split,
        source_split=source_split.pop() if len(source_split) == 1 else None,
        named_by=named_by.pop() if len(named_by) == 1 else "file name",
        num_samples=total,
        features=list(features.values()),
    )


def _metadata(inventories: list[Inventory], left_out: list[LeftOut]) -> dict[str, Any]:
    """Root metadata: the first source's root attributes; another source's that differ, prefixed by its stem."""
    out: dict[str, Any] = {}
    for inv in inventories:
        stem = Path(inv.source).name.split(".", 1)[0]
        for key, value in inv.nodes["/"].attrs.items():
            if (inv.kind == "fuel" and key == "split") or isinstance(value, Unstorable):
                continue
            if not key.strip():
                left_out.append(LeftOut(source=inv.source, path=f"/@{key}", reason="an attribute without a name"))
                continue
            name = "description" if key == "description" and isinstance(value, str) else user_attr_name(key, "root")
            if name in out and out[name] != value:
                name = f"{stem}:{key}"
            out[name] = value
    return out


def _scalars(reading: Reading, metadata: dict[str, Any], left_out: list[LeftOut], allow_external: bool) -> None:
    """Scalar datasets (and MATLAB char rows) of a source: root metadata, not samples."""
    if not reading.scalars:
        return
    with open_foreign(reading.source, "convert it again") as f:
        for path, node in reading.scalars.items():
            value = checked_object(f, reading.source, path, allow_external)[()]
            if node.matlab_class == "char":
                value = char_strings(matlab_order(value))[0]
            value = plain_value(value)
            key = user_attr_name(node.name, "root")
            if key in metadata and metadata[key] != value:
                key = f"{Path(reading.source).name.split('.', 1)[0]}:{node.name}"
            metadata[key] = value
            left_out.append(
                LeftOut(
                    source=reading.source,
                    path=path,
                    reason=f"one value, not per sample: kept as the root attribute {key!r}",
                )
            )


def propose_plan(
    sources: Sequence[str | os.PathLike[str]],
    *,
    split_name: str | None = None,
    labels: LabelOptions | None = None,
    id_feature: str | None = "id",
    allow_external: bool = False,
) -> tuple[Plan, list[Inventory]]:
    """Propose how HDF5 sources convert: splits, features, labels, what is left out, what to confirm.

    Parameters
    ----------
    sources
        HDF5 / MATLAB v7.3 files and shard lists (``.txt``), in order.
    split_name
        The split of every source that has no split inside (``--split-name``),
        over what the file names say.
    labels
        The label feature and its class names, when given (``--label``,
        ``--class-names``, ``--class-names-file``).
    id_feature
        The string feature that keeps each record's id (records layouts); None: none.
    allow_external
        Read external raw storage and virtual datasets of the sources (§10.1),
        as :func:`~h5ml.ingest.hdf5.inventory.take_inventory`.

    Returns
    -------
    tuple
        The :class:`~h5ml.ingest.hdf5.plan.Plan` and the walked sources.
        ``plan.confirm`` lists what must be decided before it can run.

    Raises
    ------
    FileNotFoundError
        If a source does not exist.
    h5ml.ForbiddenStorageError
        If a source holds an external link, or (without ``allow_external``)
        external raw storage or a virtual dataset (§3.6, §10.1).
    h5ml.IngestError
        If a source is not HDF5, is h5ml already, holds soft links, or two
        files joined by row have different sample counts.
    """
    files = expand_sources(sources)
    inventories: list[Inventory] = []
    readings: list[Reading] = []
    for item in files:
        inv = take_inventory(item.path, allow_external=allow_external)
        inventories.append(inv)
        named_by: NamedBy = "list file" if item.listed_in else "file name"
        split = item.split
        if split_name is not None:
            split, named_by = split_name, "option"
        reading = read_source(inv, split, named_by)
        if split_name is not None and any(d.named_by not in ("option", "default") for d in reading.drafts):
            found = sorted({d.source_split or d.name for d in reading.drafts})
            raise parameter_error(
                "split_name",
                f"{item.path} has splits of its own ({found}); split_name names the split of a file without any: "
                "leave it out",
                "--split-name",
            )
        if split_name is not None:
            for d in reading.drafts:
                d.source_split = item.split
        readings.append(reading)
    confirm = [c for r in readings for c in r.confirm]
    left_out = [x for r in readings for x in r.left_out]
    by_split: dict[str, list[Draft]] = {}
    for reading in readings:
        for draft in reading.drafts:
            if draft.features:
                by_split.setdefault(draft.name, []).append(draft)
            else:
                where = "the file" if draft.named_by == "default" else f"split {draft.name!r} ({draft.named_by})"
                confirm.append(f"{draft.source}: nothing in {where} reads as per-sample features; map it by hand")
    splits = [_join(name, by_split[name], confirm) for name in sorted(by_split, key=split_order)]
    kinds = [
        SourceFile(path=f.path, kind=inv.kind, split=f.split, listed_in=f.listed_in)
        for f, inv in zip(files, inventories, strict=True)
    ]
    metadata = _metadata(inventories, left_out)
    for reading in readings:
        _scalars(reading, metadata, left_out, allow_external)
    plan = Plan(sources=kinds, splits=splits, metadata=metadata, left_out=left_out, confirm=confirm)
    plan = complete_labels(plan, inventories, by_split, labels or LabelOptions(), id_feature)
    unstorable = [
        LeftOut(source=inv.source, path=f"{p}@{k}", reason=v.reason)
        for inv in inventories
        for p, node in inv.nodes.items()
        for k, v in node.attrs.items()
        if isinstance(v, Unstorable)
    ]
    bookkeeping = unstorable + [
        LeftOut(source=inv.source, path=f"**@{name}", reason=BOOKKEEPING_ATTRS[name])
        for inv in inventories
        for name in dict.fromkeys(k.rsplit("@", 1)[1] for k in objects(inv) if "@" in k)
        if name in BOOKKEEPING_ATTRS
    ]
    plan = plan.model_copy(
        update={"confirm": plan.confirm + split_disagreements(plan), "left_out": plan.left_out + bookkeeping}
    )
    rest = unaccounted(plan, inventories)
    if rest:
        extra = [LeftOut(source=s, path=k, reason="no feature reads it") for s, k in rest]
        more = [
            f"{s}:{k} is read by no feature: map it in the plan, or confirm it is left out"
            for s, k in rest
            if "@" not in k
        ]
        plan = plan.model_copy(update={"left_out": plan.left_out + extra, "confirm": plan.confirm + more})
    if not plan.splits and not plan.confirm:
        plan = plan.model_copy(update={"confirm": ["no split was found in the sources: write the plan by hand"]})
    return plan, inventories
