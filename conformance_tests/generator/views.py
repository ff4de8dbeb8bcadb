"""View files of sharded fixtures (SPEC §12.6), written with h5py only, and the reader document they must give.

A sharded recipe (:mod:`~conformance_tests.generator.sharded`) may name a
view in its ``sharded`` member::

    "view": {"name": "view.h5",                         # in the fixture folder, beside index.json
             "sources": {"train": ["train/train-00000.h5", ...]}?,   # default: the index's shards
             "omit": ["/train/y"]?}                         # features of the index the view leaves out

The view is written after the shards and the index, from their bytes, as
SPEC §12.6 says, and by this module only (the suite never imports h5ml):

- the root attributes of a conforming file (§4.2) with the index's card,
  ``view_of`` (the index's file name) and ``view_index_fingerprint`` (the
  index fingerprint, §12.3), no ``fingerprint``, ``complete`` last (§4.4);
- per split the shared split attributes (not ``num_samples``, which is the
  sum, nor ``shuffle_seed``, ``fingerprint`` or statistics);
- per feature the shared feature attributes (not ``fingerprint`` or
  statistics); ``dense`` and ``string`` datasets, ``codes``, ``values`` and
  ``shapes`` virtual: one mapping per source shard with rows, the whole
  source dataset at the same HDF5 path placed as the next block of rows
  (§12.6-R3); ``class_names`` a copy of the first shard's; ``offsets`` the
  shards' offsets shifted by the values before each shard, signed 64-bit.

``sources`` names the shards the view maps per split, in order (a shard
path, ``%`` doubled as HDF5 reads it, §12.6-R2): a case of a view that maps
an unlisted file gives one the index does not list. ``omit`` names features
(``/<split>/<feature>``) that the view leaves out, for a case of a view that
lacks a feature its index lists (§12.6-R4).

The expected reader document of a valid view (:func:`view_document`) is
built from the shards' documents, not from the view: the root attributes as
JSON (§4.6), and per feature its samples concatenated in the index's order.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import h5py
import numpy as np

__all__ = ["VIEW_ROOT_CREATED", "view_document", "view_name", "view_sources", "write_view"]

#: ``created`` of every view (fixtures are reproducible: no clock).
VIEW_ROOT_CREATED = "2026-01-01T00:00:00Z"
_WRITER = "h5ml-conformance-generator 1.0"
_STATS = frozenset({"stats_count", "stats_min", "stats_max", "stats_mean", "stats_std"})
#: Attributes a view never copies from its shards (§12.6): each shard's own, or per shard.
_PER_SHARD = frozenset({"num_samples", "shuffle_seed", "fingerprint", *_STATS})
_STR = h5py.string_dtype("utf-8")


def view_name(spec: dict[str, Any]) -> str | None:
    """The file name of the recipe's view in its fixture folder, or None without a view."""
    view = spec.get("view")
    return None if view is None else str(view["name"])


def view_sources(spec: dict[str, Any], document: dict[str, Any]) -> dict[str, list[str]]:
    """Split -> the source file names the view maps, in order: the recipe's, else the index's shards."""
    given = spec["view"].get("sources")
    if given is not None:
        return {split: list(paths) for split, paths in given.items()}
    return {
        name: [shard["path"].replace("%", "%%") for shard in split["shards"]]
        for name, split in document["splits"].items()
    }


def _root(document: dict[str, Any], index_name: str) -> dict[str, Any]:
    """The view's root attributes as JSON values (§4.2, §12.6-R1), ``complete`` last."""
    return {
        "format": "h5ml",
        "format_version": "1.2",
        **document["metadata"],
        "created": VIEW_ROOT_CREATED,
        "writer": _WRITER,
        "must_understand": [],
        "view_of": index_name,
        "view_index_fingerprint": document["fingerprint"],
        "complete": 1,
    }


def _write_attr(obj: Any, name: str, value: Any) -> None:
    """A JSON value as the writer of §4.3 writes it: scalar UTF-8 strings, int64, string arrays."""
    if isinstance(value, str):
        obj.attrs.create(name, value, dtype=_STR)
    elif isinstance(value, list):
        obj.attrs.create(name, np.array(value, dtype=object), shape=(len(value),), dtype=_STR)
    else:
        obj.attrs.create(name, np.int64(value))


def _shared(objects: list[Any]) -> list[str]:
    """The attribute names every object has with the same value, but those each shard has of its own."""
    first = objects[0]
    names = []
    for name in first.attrs:
        if name in _PER_SHARD:
            continue
        value = first.attrs[name]
        if all(name in o.attrs and np.array_equal(o.attrs[name], value) for o in objects[1:]):
            names.append(name)
    return names


def _copy_attrs(target: Any, source: Any, names: list[str]) -> None:
    """Copy attributes with their HDF5 datatype and dataspace (§3.4, §3.7)."""
    for name in names:
        attr = source.attrs.get_id(name)
        target.attrs.create(name, source.attrs[name], shape=attr.shape, dtype=attr.dtype)


def _virtual(h5: h5py.File, path: str, sources: list[tuple[str, h5py.File]]) -> None:
    """A virtual dataset at ``path`` concatenating the dataset at ``path`` of each source with rows (§12.6-R3).

    Written with the HDF5 calls themselves (``H5Pset_virtual``) so that no time is stored in its object
    header (``H5Pset_obj_track_times`` off): the fixture's bytes are the same whenever it is generated.
    """
    parts = [(name, f[path]) for name, f in sources if f[path].shape[0] > 0]
    first = sources[0][1][path]
    rows = sum(d.shape[0] for _, d in parts)
    shape = (rows, *first.shape[1:])
    dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
    dcpl.set_obj_track_times(False)
    start = 0
    for name, dset in parts:
        vspace = h5py.h5s.create_simple(shape)
        count = (dset.shape[0], *shape[1:])
        vspace.select_hyperslab((start, *(0 for _ in shape[1:])), count)
        source_space = h5py.h5s.create_simple(dset.shape)
        source_space.select_all()  # the whole source dataset (H5S_ALL's selection)
        dcpl.set_virtual(vspace, name.encode("utf-8"), path.encode("utf-8"), source_space)
        start += dset.shape[0]
    h5py.h5d.create(h5.id, path.encode("utf-8"), first.id.get_type(), h5py.h5s.create_simple(shape), dcpl=dcpl)


def _offsets(h5: h5py.File, path: str, sources: list[tuple[str, h5py.File]]) -> None:
    """The shards' offsets shifted by the values before each shard, one int64 per sample plus one (§12.6)."""
    out = [np.zeros(1, dtype=np.int64)]
    base = 0
    for _, f in sources:
        offsets = np.asarray(f[path][()], dtype=np.int64)
        out.append(offsets[1:] + base)
        base += int(offsets[-1])
    h5.create_dataset(path, data=np.concatenate(out), dtype="<i8", track_times=False)


def _group(h5: h5py.File, path: str) -> h5py.Group:
    """A group without times in its object header (reproducible bytes)."""
    gcpl = h5py.h5p.create(h5py.h5p.GROUP_CREATE)
    gcpl.set_obj_track_times(False)
    h5py.h5g.create(h5.id, path.encode("utf-8"), gcpl=gcpl)
    group: h5py.Group = h5[path]
    return group


def _feature(h5: h5py.File, where: str, sources: list[tuple[str, h5py.File]]) -> None:
    nodes = [f[where] for _, f in sources]
    if isinstance(nodes[0], h5py.Dataset):
        _virtual(h5, where, sources)
    else:
        _group(h5, where)
        for member in nodes[0]:
            path = f"{where}/{member}"
            if member == "class_names":
                h5.create_dataset(path, data=nodes[0][member][()], dtype=nodes[0][member].dtype, track_times=False)
            elif member == "offsets":
                _offsets(h5, path, sources)
            elif not member.startswith("_"):  # reserved members (§5.4, checksums §8.4) are the shards'
                _virtual(h5, path, sources)
    _copy_attrs(h5[where], nodes[0], _shared(nodes))


def write_view(folder: Path, spec: dict[str, Any], document: dict[str, Any], index_name: str) -> Path:
    """Write the view of a fixture folder whose shards and index (``document``) are written; returns its path."""
    name = view_name(spec)
    assert name is not None
    target = folder / name
    sources = view_sources(spec, document)
    omitted = set(spec["view"].get("omit", []))
    root = _root(document, index_name)
    with h5py.File(target, "w", libver=("v110", "v110"), track_order=False) as h5:
        for key, value in root.items():
            if key != "complete":
                _write_attr(h5, key, value)
        for split, paths in sources.items():
            files = [(path, h5py.File(folder / path.replace("%%", "%"), "r")) for path in paths]
            try:
                group = _group(h5, split)
                group.attrs.create("num_samples", np.int64(sum(int(f[split].attrs["num_samples"]) for _, f in files)))
                _copy_attrs(group, files[0][1][split], _shared([f[split] for _, f in files]))
                for feature in files[0][1][split]:
                    if not feature.startswith("_") and f"/{split}/{feature}" not in omitted:
                        _feature(h5, f"/{split}/{feature}", files)
            finally:
                for _, f in files:
                    f.close()
        h5.flush()
        _write_attr(h5, "complete", 1)  # §4.4: last
    return target


def view_document(
    spec: dict[str, Any], document: dict[str, Any], shard_documents: list[tuple[str, dict[str, Any]]], index_name: str
) -> dict[str, Any]:
    """The reader document of a valid view: its root attributes, and every split's shards concatenated (§12.6).

    ``shard_documents`` holds (split, the shard's reader document) in the index's order.
    """
    splits: dict[str, Any] = {}
    for split, shard in shard_documents:
        features = shard["splits"][split]["features"]
        if split not in splits:
            splits[split] = {"num_samples": 0, "features": {k: dict(v, values=[]) for k, v in features.items()}}
            for value in splits[split]["features"].values():
                if "shapes" in value:
                    value["shapes"] = []
        splits[split]["num_samples"] += shard["splits"][split]["num_samples"]
        for name, feature in features.items():
            merged = splits[split]["features"][name]
            merged["values"] += feature["values"]
            if "shapes" in feature:
                merged["shapes"] += feature["shapes"]
    return {"format_version": "1.2", "metadata": _root(document, index_name), "splits": splits}
