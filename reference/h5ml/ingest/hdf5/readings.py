"""How one HDF5 source reads as splits and features: the layouts people publish, told apart (§5, §6).

:func:`read_source` turns one walked source (:class:`~h5ml.ingest.hdf5.inventory.Inventory`)
into :class:`Draft` splits, and says what it leaves out and what needs
confirming. The layouts:

- **arrays**: datasets whose first axis is the sample axis, all of one
  length N per split: ``/x``, ``/y`` in a file whose name names the split,
  ``/X_train``, ``/y_test``, ``/train_set_x`` (a split word in the name), or
  ``/train/data``, ``/train/target`` (groups named by splits). Datasets of
  another length are not samples: a 1-D string dataset is a candidate for
  class names, a scalar becomes root metadata, and any other array is left
  out *and* must be confirmed (two different sample counts in one split is
  never guessed);
- **records**: one group per sample holding datasets and attributes
  (``/<id>/points``, ``/<id>@label``), nested groups per record
  (``/<group>/<record>/coordinates``), or one dataset per sample (``/<split>_<feature>/<id>``,
  ``/<split>/<feature>/<id>``, ``/<split>/<id>``); the records of one split
  are matched by id;
- **MATLAB v7.3**: variables read in MATLAB's axis order (``transpose``),
  the sample axis the one length all variables of a split share;
- **Fuel**: the root attribute ``split`` gives each split's rows of each dataset.

A reading that is not certain still proposes its best plan, and adds what
to confirm (:attr:`Reading.confirm`); the caller refuses to run such a plan.
"""

from __future__ import annotations

from collections import Counter
from typing import Literal

import h5py
import numpy as np

from h5ml.ingest.hdf5.draft import Draft, Reading, feature_role, kept_attrs
from h5ml.ingest.hdf5.fuel import fuel_drafts
from h5ml.ingest.hdf5.inventory import Inventory, Node, value_kind
from h5ml.ingest.hdf5.labels import is_class_names_name
from h5ml.ingest.hdf5.matlab import MATLAB_GROUPS, cell_classes
from h5ml.ingest.hdf5.names import array_split, id_like, is_split_name
from h5ml.ingest.hdf5.plan import Feature, NamedBy, Part
from h5ml.ingest.hdf5.records import SINGLE_FEATURE, member_feature, record_features
from h5ml.ingest.naming import SPLIT_SUFFIXES, standard_split_name

__all__ = ["read_source"]


def _rows_feature(inv: Inventory, node: Node, name: str, reading: Reading, axis: int = 0) -> tuple[Feature, int] | None:
    """A feature of the rows of ``node`` (sample axis ``axis``, in MATLAB order for a MAT-file), or None (left out)."""
    assert node.shape is not None and node.dtype is not None
    matlab = inv.kind == "matlab"
    shape = tuple(reversed(node.shape)) if matlab else node.shape
    kind = value_kind(node.dtype)
    cls = node.matlab_class
    if not shape or (matlab and node.attrs.get("MATLAB_empty")):
        return None
    n = shape[axis]
    sample_shape: list[int | None] = [s for i, s in enumerate(shape) if i != axis]
    part = Part(source=inv.source, path=node.path, transpose=matlab, sample_axis=axis, matlab_class=cls)
    encoding: Literal["dense", "ragged", "string", "categorical"] = "dense"
    dtype: str | None = node.dtype.str
    if matlab and cls == "char":
        if len(sample_shape) != 1:
            reading.leave(node.path, f"a char array of {len(shape)} axes (h5ml strings hold one string per sample)")
            return None
        encoding, dtype, sample_shape = "string", None, []
    elif kind == "reference" and matlab and cls == "cell":
        if sample_shape and any(s != 1 for s in sample_shape):
            reading.leave(
                node.path, f"a cell array of shape {shape}: only a vector of cells holds one value per sample"
            )
            return None
        held = cell_classes(inv.source, node.path, allow_external=inv.allow_external)
        if held != {"char"}:
            shown = sorted(str(c) for c in held)
            reading.leave(node.path, f"a cell array whose cells hold {shown}: h5ml reads cells of strings")
            return None
        encoding, dtype, sample_shape = "string", None, []
    elif kind == "string":
        if sample_shape:
            reading.leave(
                node.path, f"strings of shape {shape}: an h5ml string feature holds one string per sample (§6.4)"
            )
            return None
        encoding, dtype = "string", None
    elif kind == "vlen":
        if sample_shape:
            reading.leave(node.path, f"variable-length values of shape {shape}: one vlen value per row is expected")
            return None
        encoding, dtype = "ragged", np.dtype(h5py.check_vlen_dtype(node.dtype)).str
        sample_shape = [None]
    elif kind != "numeric":
        reading.leave(node.path, f"the HDF5 type {node.dtype} holds no numbers or strings h5ml stores (§3.2)")
        return None
    if matlab and cls == "logical":
        dtype = "|b1"
    feature = Feature(
        name=name,
        parts=[part],
        role=feature_role(name),
        encoding=encoding,
        dtype=dtype,
        sample_shape=sample_shape,
        attrs=kept_attrs(node),
    )
    return feature, n


def _sample_axis(inv: Inventory, nodes: list[Node], reading: Reading, split: str) -> dict[str, int]:
    """Each array's sample axis: 0 in HDF5 files; in a MAT-file the axis of the one length all arrays share."""
    if inv.kind != "matlab":
        return {n.path: 0 for n in nodes}
    shapes = {n.path: tuple(reversed(n.shape or ())) for n in nodes if n.shape and not n.attrs.get("MATLAB_empty")}
    numeric = [s for p, s in shapes.items() if inv.nodes[p].matlab_class not in ("char", "cell")] or list(
        shapes.values()
    )
    common = set(numeric[0]) if numeric else set()
    for s in numeric[1:]:
        common &= set(s)
    if len(numeric) == 1:
        long = [s for s in numeric[0] if s != 1]
        if len(long) > 1:
            reading.confirm.append(
                f"{inv.source}: the one MATLAB variable of split {split!r} has shape {numeric[0]} (MATLAB order): "
                "which axis indexes the samples? The plan takes the first; set sample_axis in the plan"
            )
        common = {numeric[0][0]} if numeric[0] else set()
    candidates = sorted(common - {1}) or sorted(common)
    axes: dict[str, int] = {}
    if len(candidates) != 1:
        reading.confirm.append(
            f"{inv.source}: which axis of the MATLAB variables of split {split!r} indexes the samples? Their shapes "
            f"(MATLAB order) are {dict(shapes)}; set sample_axis of each part in the plan"
        )
        return {p: 0 for p in shapes}
    length = candidates[0]
    for path, shape in shapes.items():
        hits = [i for i, s in enumerate(shape) if s == length]
        if len(hits) != 1:
            if hits:
                reading.confirm.append(
                    f"{inv.source}:{path} has {len(hits)} axes of length {length} (shape {shape}, MATLAB order); set "
                    "the part's sample_axis in the plan"
                )
            axes[path] = hits[0] if hits else 0
        else:
            axes[path] = hits[0]
    return axes


def _one_matlab_string(inv: Inventory, node: Node) -> bool:
    """A MATLAB char row (``1 x L``): one string, root metadata rather than a feature."""
    return (
        inv.kind == "matlab"
        and node.matlab_class == "char"
        and node.shape is not None
        and len(node.shape) == 2
        and node.shape[-1] == 1
    )


def _matlab_vector(inv: Inventory, node: Node, axes: dict[str, int]) -> int | None:
    """The length of a MATLAB cell vector whose length is not the samples' (a class-names candidate), else None."""
    if inv.kind != "matlab" or node.matlab_class != "cell" or not node.shape:
        return None
    shape = tuple(reversed(node.shape))
    long = [s for s in shape if s != 1]
    if len(long) > 1:
        return None
    axis = axes.get(node.path, 0)
    lengths = {
        tuple(reversed(n.shape))[axes[p]]
        for p, n in inv.nodes.items()
        if p in axes and n.shape and n.matlab_class not in ("cell", "char")
    }
    if shape[axis] in lengths and len(lengths) == 1 and shape[axis] != 1:
        return None
    return int(long[0]) if long else 1


def _rows_draft(inv: Inventory, nodes: list[Node], draft: Draft, reading: Reading, names: dict[str, str]) -> None:
    """Fill ``draft`` with the rows of ``nodes`` (feature names ``names``); arrays of another length are not samples."""
    axes = _sample_axis(inv, nodes, reading, draft.name)
    built: dict[str, tuple[Feature, int, Node]] = {}
    for node in nodes:
        if node.shape is None:
            reading.leave(node.path, "a null dataspace: it holds no value")
            continue
        if node.unwritten:
            reading.confirm.append(
                f"{inv.source}:{node.path} has storage that was never written (its rows there read as the fill "
                "value): is the file complete? Confirm to convert the fill values as data"
            )
        if not node.shape or _one_matlab_string(inv, node):
            reading.scalars[node.path] = node
            continue
        vector = _matlab_vector(inv, node, axes)
        if vector is not None:
            draft.names_candidates[node.path] = vector
            continue
        got = _rows_feature(inv, node, names[node.path], reading, axes.get(node.path, 0))
        if got is not None:
            built[node.path] = (got[0], got[1], node)
    lengths = Counter(n for _, n, _ in built.values())
    if not lengths:
        return
    top = lengths.most_common()
    if len(top) > 1 and top[0][1] == top[1][1]:
        listed = ", ".join(f"{p} has {n}" for p, (_, n, _) in built.items())
        reading.confirm.append(
            f"{inv.source}: the arrays of split {draft.name!r} have different numbers of rows ({listed}), and no "
            "length is the majority: which are the samples? Keep the features of one length in the plan"
        )
    n_rows = top[0][0]
    draft.num_samples = n_rows
    for path, (feature, n, node) in built.items():
        if n == n_rows:
            draft.features[feature.name] = feature
            if is_class_names_name(node.name) and len(built) > 1:
                reading.confirm.append(
                    f"{inv.source}:{path} is named like class names and has {n} values, as many as the samples of "
                    f"split {draft.name!r}: is it one value per sample (as planned) or the label's class names (move "
                    "it to the label's class_names and to left_out)?"
                )
            continue
        kind = value_kind(node.dtype) if node.dtype is not None else None
        strings = kind == "string" or node.matlab_class in ("cell", "char")
        if feature.sample_shape == [] and (strings or is_class_names_name(node.name)):
            draft.names_candidates[path] = n
            continue
        reading.leave(path, f"{n} rows, not the {n_rows} samples of split {draft.name!r}")
        reading.confirm.append(
            f"{inv.source}:{path} has {n} rows but the other arrays of split {draft.name!r} have {n_rows}: confirm "
            "it is not per-sample data (leave it in left_out) or fix the plan"
        )


def _leaf_depth(inv: Inventory, group: str) -> int | None:
    """The depth below ``group`` at which every group holds only datasets (1: its children), or None if uneven."""
    depths = set()
    for path, node in inv.nodes.items():
        if node.kind == "group" and path.startswith(group.rstrip("/") + "/") and path != group:
            if not any(c.kind == "group" for c in inv.children(path)):
                depths.add(path[len(group.rstrip("/")) :].count("/"))
    return depths.pop() if len(depths) == 1 else None


def _dataset_records(
    inv: Inventory, pattern: str, nodes: list[Node], name: str, draft: Draft, reading: Reading
) -> None:
    """One feature whose samples are the datasets ``nodes`` (one per sample, matched by name)."""
    feature = member_feature(inv, pattern, None, nodes, name, reading)
    if feature is not None:
        draft.features[name] = feature
    draft.ids = draft.ids | {n.name for n in nodes}
    draft.num_samples = len(draft.ids)


def _container(inv: Inventory, path: str, draft: Draft, reading: Reading, prefix_names: bool = False) -> None:
    """Read the members of a split's group (or the root) as arrays or records (see the module docstring)."""
    members = [c for c in inv.children(path) if c.path not in MATLAB_GROUPS]
    groups = [c for c in members if c.kind == "group"]
    datasets = [c for c in members if c.kind == "dataset"]
    base = path.rstrip("/")
    if datasets and not groups:
        names = [d.name for d in datasets]
        if id_like(names) and len(datasets) > 1 and inv.kind != "matlab":
            draft.kind = "records"
            _dataset_records(inv, f"{base}/*", datasets, SINGLE_FEATURE, draft, reading)
            shapes = {d.shape for d in datasets}
            if len(shapes) == 1 and next(iter(shapes)):
                reading.confirm.append(
                    f"{inv.source}: the datasets of {path} are named like ids ({names[:3]}...) but all have shape "
                    f"{next(iter(shapes))}: are they one sample each (as planned) or arrays of rows?"
                )
            return
        _rows_draft(inv, datasets, draft, reading, {d.path: d.name for d in datasets})
        return
    if groups and not datasets:
        leafy = [g for g in groups if not any(c.kind == "group" for c in inv.children(g.path))]
        member_names = [[c.name for c in inv.children(g.path)] for g in groups]
        if (
            len(leafy) == len(groups)
            and not id_like(g.name for g in groups)
            and all(id_like(m) for m in member_names if m)
        ):
            draft.kind = "records"  # one group per feature, one dataset per sample: /<split>/<feature>/<id>
            for g in groups:
                _dataset_records(inv, f"{g.path}/*", inv.children(g.path), g.name, draft, reading)
            return
        depth = _leaf_depth(inv, path)
        if depth is None:
            reading.confirm.append(
                f"{inv.source}:{path} holds groups nested to different depths; write the plan's records pattern by hand"
            )
            return
        pattern = base + "/*" * depth
        records = [
            n
            for p, n in inv.nodes.items()
            if n.kind == "group" and p != "/" and p.startswith(base + "/") and p[len(base) :].count("/") == depth
        ]
        if not id_like(g.name for g in groups) and depth == 1:
            reading.confirm.append(
                f"{inv.source}: the groups of {path} ({[g.name for g in groups[:4]]}) are not named like ids nor "
                "like splits: are they one sample each (as planned), classes, or splits?"
            )
        draft.kind = "records"
        record_features(inv, pattern, records, draft, reading)
        return
    if groups and datasets:
        _rows_draft(inv, datasets, draft, reading, {d.path: d.name for d in datasets})
        for g in groups:
            reading.leave(g.path + "/**", "a group beside arrays of rows")
            reading.leave(g.path + "/**@*", "a group beside arrays of rows")
        reading.confirm.append(
            f"{inv.source}:{path} holds both arrays ({[d.name for d in datasets[:4]]}) and groups "
            f"({[g.name for g in groups[:4]]}): the plan reads the arrays and leaves the groups out; confirm"
        )


def read_source(inv: Inventory, split: str | None, named_by: NamedBy) -> Reading:
    """The splits of one source.

    Parameters
    ----------
    inv
        The walked source.
    split
        The split the source's file name (or ``--split-name``) gives; None when neither names one.
    named_by
        Where ``split`` came from.

    Returns
    -------
    Reading
        Drafts (one per split), left out, to confirm, scalar datasets.
    """
    reading = Reading(inv.source)
    if inv.kind == "fuel":
        fuel_drafts(inv, reading)
        return reading
    for group in MATLAB_GROUPS:
        if group in inv.nodes:
            reading.leave(group + "/**", "MATLAB's storage of cell and struct contents (read through references)")
            reading.leave(group + "/**@*", "MATLAB's storage of cell and struct contents")
            reading.leave(group + "@*", "MATLAB's storage of cell and struct contents")
    members = [c for c in inv.children("/") if c.path not in MATLAB_GROUPS]
    split_groups = [c for c in members if c.kind == "group" and is_split_name(c.name)]
    if split_groups:
        for g in split_groups:
            name = standard_split_name(g.name.lower())
            draft = Draft(name, g.name, "group", "rows", inv.source)
            _container(inv, g.path, draft, reading)
            reading.drafts.append(draft)
        for c in members:
            if c not in split_groups:
                reading.leave(c.path if c.kind == "dataset" else c.path + "/**", "beside the split groups")
                reading.confirm.append(
                    f"{inv.source}:{c.path} is not in a split group ({[g.name for g in split_groups]}): confirm it "
                    "is left out, or map it in the plan"
                )
        _inner_splits(inv, reading, split)
        return reading
    named = {c.path: array_split(c.name) for c in members}
    if any(v is not None for v in named.values()):
        _prefixed(inv, members, named, reading)
        _inner_splits(inv, reading, split)
        return reading
    default = split or "train"
    draft = Draft(default, split, named_by if split else "default", "rows", inv.source)
    _container(inv, "/", draft, reading)
    reading.drafts.append(draft)
    return reading


def _inner_splits(inv: Inventory, reading: Reading, split: str | None) -> None:
    """Ask when the splits named inside a file collide (``/valid`` and ``/validation``) or contradict its name."""
    by_name: dict[str, list[str]] = {}
    for draft in reading.drafts:
        by_name.setdefault(draft.name, []).append(draft.source_split or draft.name)
    for name, given in by_name.items():
        if len(given) > 1:
            reading.confirm.append(
                f"{inv.source}: {sorted(given)} all name split {name!r}; the plan joins them: confirm they are one split"
            )
    inner = sorted(by_name)
    if split is not None and inner != [split]:
        reading.confirm.append(
            f"{inv.source}: the file's name says split {split!r}, but inside it names {inner}: which is right? The "
            "plan follows the names inside; rename the splits in the plan if the file's name is right"
        )


def _prefixed(inv: Inventory, members: list[Node], named: dict[str, tuple[str, str] | None], reading: Reading) -> None:
    """Root members named ``x_train``, ``train_set_x`` (datasets) or ``train_data`` (groups of samples)."""
    drafts: dict[str, Draft] = {}
    unnamed = [c for c in members if named[c.path] is None]
    by_split: dict[str, list[tuple[Node, str]]] = {}
    for c in members:
        got = named[c.path]
        if got is not None:
            by_split.setdefault(got[0], []).append((c, got[1]))
    for name, items in by_split.items():
        token = items[0][0].name
        raw = next((w for w in token.split("_") if w.lower() in SPLIT_SUFFIXES), name)
        draft = drafts[name] = Draft(name, raw.lower(), "array name", "rows", inv.source)
        groups = [(c, f) for c, f in items if c.kind == "group"]
        datasets = [(c, f) for c, f in items if c.kind == "dataset"]
        if groups and not datasets:
            draft.kind = "records"
            for g, feature in groups:
                _dataset_records(inv, f"{g.path}/*", inv.children(g.path), feature, draft, reading)
        elif datasets and not groups:
            _rows_draft(inv, [c for c, _ in datasets], draft, reading, {c.path: f for c, f in datasets})
        else:
            reading.confirm.append(
                f"{inv.source}: split {name!r} (from {token}) has both groups and arrays; map it by hand"
            )
        reading.drafts.append(draft)
    for c in unnamed:
        strings = c.dtype is not None and value_kind(c.dtype) == "string"
        if c.kind == "dataset" and c.shape and len(c.shape) == 1 and (strings or is_class_names_name(c.name)):
            for draft in drafts.values():
                draft.names_candidates[c.path] = c.shape[0]
            continue
        if c.kind == "dataset" and not c.shape:
            reading.scalars[c.path] = c
            continue
        reading.leave(c.path if c.kind == "dataset" else c.path + "/**", "its name names no split, unlike the others")
        reading.confirm.append(
            f"{inv.source}:{c.path} names no split while {sorted(by_split)} do: which split is it in? Map it in the plan"
        )
