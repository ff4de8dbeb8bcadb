"""Fuel's ``H5PYDataset`` files: one dataset per source, split into rows by the root attribute ``split`` (§5, §6.3).

Fuel (the data pipeline of Blocks) stores every split of a dataset in the
same arrays (``features``, ``targets``, ...) and a root attribute ``split``:
a table of rows ``(split, source, start, stop, indices, available,
comment)``. Split ``train`` of source ``features`` is then the rows
``[start, stop)`` of ``/features``. Variable-length sources are 1-D
variable-length datasets, each sample flattened, with a companion
``<source>_shapes`` dataset ``(N, D)`` of each sample's shape (and
``<source>_shape_labels``, the axis names): they become ragged features
with per-sample shapes (§6.3). A split given by ``indices`` (a region
reference instead of a range) is refused by the inventory.
"""

from __future__ import annotations

import h5py
import numpy as np

from h5ml.ingest.hdf5.draft import Draft, Reading, feature_role, kept_attrs
from h5ml.ingest.hdf5.inventory import Inventory, value_kind
from h5ml.ingest.hdf5.plan import Feature, Part
from h5ml.ingest.naming import standard_split_name

__all__ = ["fuel_drafts"]


def fuel_drafts(inv: Inventory, reading: Reading) -> None:
    """Fill ``reading`` with one draft per split of a Fuel file's ``split`` table.

    Parameters
    ----------
    inv
        A walked Fuel file (``inv.fuel_splits`` holds its table).
    reading
        Gets the drafts, what is left out and what to confirm.
    """
    reading.leave("/@split", "Fuel's split table: read to make the splits")
    drafts: dict[str, Draft] = {}
    counts: dict[str, dict[str, int]] = {}
    used: set[str] = set()
    for split, source, start, stop in inv.fuel_splits:
        path = f"/{source}"
        node = inv.nodes.get(path)
        name = standard_split_name(split.lower())
        draft = drafts.setdefault(name, Draft(name, split, "attribute", "rows", inv.source))
        rows = counts.setdefault(name, {})
        if node is None or node.kind != "dataset" or not node.shape or node.dtype is None:
            reading.confirm.append(f"{inv.source}: the split table names source {source!r}, which is no dataset {path}")
            continue
        if not 0 <= start <= stop <= node.shape[0]:
            reading.confirm.append(
                f"{inv.source}: split {split!r} of {source!r} is rows [{start}, {stop}) of {path}, which has "
                f"{node.shape[0]} rows: fix the file's split table"
            )
            continue
        used.add(path)
        kind = value_kind(node.dtype)
        shapes = inv.nodes.get(f"{path}_shapes")
        part = Part(source=inv.source, path=path, start=start, stop=stop)
        if kind == "vlen":
            base = np.dtype(h5py.check_vlen_dtype(node.dtype)).str
            ndim = 1
            if shapes is not None and shapes.shape and len(shapes.shape) == 2:
                part = part.model_copy(update={"shapes": shapes.path})
                ndim = shapes.shape[1]
                used.add(shapes.path)
            feature = Feature(
                name=source,
                parts=[part],
                role=feature_role(source),
                encoding="ragged",
                dtype=base,
                sample_shape=[None] * ndim,
                attrs=kept_attrs(node),
            )
        elif kind == "string" and len(node.shape) == 1:
            feature = Feature(
                name=source, parts=[part], role=feature_role(source), encoding="string", attrs=kept_attrs(node)
            )
        elif kind == "numeric":
            feature = Feature(
                name=source,
                parts=[part],
                role=feature_role(source),
                dtype=node.dtype.str,
                sample_shape=list(node.shape[1:]),
                attrs=kept_attrs(node),
            )
        else:
            reading.leave(path, f"the HDF5 type {node.dtype} of shape {node.shape} is not one h5ml stores")
            continue
        earlier = draft.features.get(source)
        if earlier is not None:
            reading.confirm.append(
                f"{inv.source}: the split table gives split {name!r} of source {source!r} twice (rows "
                f"{earlier.parts[-1].start}:{earlier.parts[-1].stop} and {start}:{stop}, split names "
                f"{sorted({draft.source_split or '', split})}): the plan joins both ranges; confirm, or fix the table"
            )
            feature = earlier.model_copy(update={"parts": [*earlier.parts, *feature.parts]})
        draft.features[source] = feature
        rows[source] = rows.get(source, 0) + stop - start
        if len(set(rows.values())) > 1:
            reading.confirm.append(
                f"{inv.source}: split {split!r} gives its sources different numbers of rows ({rows}); "
                "fix the file's split table"
            )
        draft.num_samples = max(rows.values())
    reading.drafts.extend(d for d in drafts.values() if d.features)
    for node in inv.datasets():
        if node.path not in used:
            why = (
                "axis names of the shapes" if node.path.endswith("_shape_labels") else "in no split of the split table"
            )
            reading.leave(node.path, why)
