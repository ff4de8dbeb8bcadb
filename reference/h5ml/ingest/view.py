"""``h5ml view INDEX OUT.h5``: one HDF5 file of virtual datasets over the shards of a sharded dataset (SPEC §12.6).

:func:`write_view` writes a view file in the dataset's folder, next to the
index: the groups, features and attributes of one conforming file, whose
sample data stays in the shards. What a view holds, by encoding:

- ``dense`` and ``string``: the feature dataset is a virtual dataset that
  concatenates the feature's dataset of every shard of the split along
  axis 0, in the index's order (HDF5 virtual datasets hold variable-length
  strings too: h5py and h5dump 1.10.8 read them);
- ``categorical``: ``codes`` virtual likewise; ``class_names`` a real copy
  (the index guarantees that every shard has the same ones, §12.2);
- ``ragged`` and ``bytes``: ``values`` (and ``shapes``) virtual likewise;
  ``offsets`` cannot be virtual, since each shard's offsets start at 0: the
  view stores them as a real int64 dataset holding every shard's offsets
  shifted by the values before it (8 bytes per sample, gzip-compressed).

A view carries no fingerprint and no statistics (they would have to be
computed from every sample; the shards carry theirs, and
``view_index_fingerprint`` binds the view to the index that lists them:
validators report W202), no checksum datasets (§8.4: the shards' chunks are
the stored bytes), and no ``shuffle_seed`` (the concatenation of shards
shuffled each with its own seed is not that seed's permutation). Split and
feature attributes are those every shard has with the same value.

Every source path is the shard's path relative to the index, which is why
the view must lie in the index's folder: HDF5 resolves a relative source
against the folder of the view file (checked with h5py and h5dump from
another working directory). The file is written atomically
(:class:`~h5ml.writer.atomic.AtomicFile`: a temporary file beside it,
renamed once complete).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from h5ml import spec
from h5ml.errors import ParameterError, ShardIndexError
from h5ml.ingest.output import check_output
from h5ml.model.shard_files import describe_shard, disagreements
from h5ml.model.shard_index import ShardIndex, SplitEntry, load_index
from h5ml.model.view_files import COMPONENTS, VIEW_INDEX_FINGERPRINT, VIEW_OF, escape_source
from h5ml.spec.attrs import decode_str, read_attr, write_attr
from h5ml.writer.atomic import AtomicFile
from h5ml.writer.root import write_root

__all__ = ["write_view"]

#: Attributes a view never copies from its shards: they describe one shard's samples, not the concatenation.
_PER_SHARD_ATTRS = frozenset({"num_samples", "shuffle_seed", "fingerprint", *spec.STATS_ATTRS})
#: Rows of int64 offsets per chunk of a view's real offsets dataset (1 MiB chunks, §7.2, §7.3).
_OFFSET_CHUNK_ROWS = 1 << 17


def _index_file(index: str | os.PathLike[str]) -> tuple[ShardIndex, Path]:
    found, index_file = load_index(Path(index))  # a missing index is refused there, in the same words
    return found, Path(index_file).resolve()  # a local index: load_index returns its Path


def _check_place(out: Path, folder: Path) -> None:
    """Refuse a view outside the index's folder: its relative sources would not lead to the shards (§12.6)."""
    if out.resolve().parent != folder:  # resolved: a symbolic link at OUT to a file elsewhere is outside too
        raise ParameterError(
            f"{out}: a view file must be written in the dataset's folder {str(folder)!r}, next to its index: its "
            "virtual datasets name the shards by paths relative to the view's own folder, and readers refuse "
            f"sources that leave it (SPEC §12.6); give an output such as {str(folder / 'view.h5')!r}"
        )


def _check_shards(index: ShardIndex, folder: Path) -> None:
    """Refuse a view of shards that are missing or disagree with the index (§12.2): the view would lie."""
    problems = []
    for name, split in index.splits.items():
        if not split.shards:
            problems.append(f"split {name!r} lists no shard, so a view has nothing to present its features from")
        for shard in split.shards:
            file = folder / shard.path
            if not file.is_file():
                problems.append(f"shard {shard.path!r} of split {name!r} is missing ({file})")
                continue
            found = disagreements(name, split, shard, describe_shard(file))
            problems.extend(f"shard {shard.path!r} of split {name!r} {problem}" for problem in found)
    if problems:
        raise ShardIndexError(
            f"{folder}: cannot make a view of this sharded dataset (SPEC §12.2): "
            + "; ".join(problems)
            + ". Validate it with h5ml validate INDEX and write the missing or changed shards again"
        )


def _shared_attrs(objects: Sequence[Any]) -> dict[str, Any]:
    """The attributes that every object has with the same value, less the per-shard ones."""
    first = objects[0]
    shared = {}
    for name in first.attrs:
        if name in _PER_SHARD_ATTRS or name.startswith(spec.RESERVED_PREFIX):
            continue
        value = read_attr(first, name)
        if all(name in o.attrs and np.array_equal(read_attr(o, name), value) for o in objects[1:]):
            shared[name] = value
    return shared


def _virtual(h5: h5py.File, where: str, shards: Sequence[tuple[str, h5py.File]], path: str) -> None:
    """One virtual dataset at ``where``: the datasets at ``where`` of ``shards``, concatenated along axis 0."""
    sources = [(shard, g[where]) for shard, g in shards]
    first = sources[0][1]
    rows = sum(dset.shape[0] for _, dset in sources)
    layout = h5py.VirtualLayout((rows, *first.shape[1:]), first.dtype)
    start = 0
    for shard, dset in sources:
        if dset.shape[1:] != first.shape[1:]:
            raise ShardIndexError(
                f"{path}: {where} has rows of shape {dset.shape[1:]} in shard {shard!r} and {first.shape[1:]} in "
                f"{sources[0][0]!r}; a view concatenates rows of one shape (SPEC §12.6)"
            )
        if dset.shape[0]:  # a source without rows has no place in the mapping (§12.6)
            layout[start : start + dset.shape[0]] = h5py.VirtualSource(
                escape_source(shard), where, shape=dset.shape, dtype=dset.dtype
            )
            start += dset.shape[0]
    vds = h5.create_virtual_dataset(where, layout)
    for shard, dset in sources:
        if dset.id.get_type() != vds.id.get_type():
            raise ShardIndexError(
                f"{path}: {where} of shard {shard!r} has another HDF5 datatype ({dset.dtype}) than the view's "
                f"({vds.dtype}, from {sources[0][0]!r}); HDF5 would convert it on read: a view maps datasets of one "
                "datatype only (SPEC §12.6); write the shards with one dtype, or use h5ml unshard"
            )


def _offsets(h5: h5py.File, where: str, shards: Sequence[tuple[str, h5py.File]]) -> None:
    """The real offsets of a view: each shard's offsets shifted by the values before it (§6.3, §12.6)."""
    parts = [np.zeros(1, dtype=np.int64)]
    base = 0
    for _, g in shards:
        offsets = np.asarray(g[where][:], dtype=np.int64)
        parts.append(offsets[1:] + base)
        base += int(offsets[-1])
    total = np.concatenate(parts)
    chunks = (min(len(total), _OFFSET_CHUNK_ROWS),)
    h5.create_dataset(where, data=total, chunks=chunks, compression="gzip", compression_opts=4)


def _feature(
    h5: h5py.File, split: str, name: str, encoding: str, shards: Sequence[tuple[str, h5py.File]], path: str
) -> None:
    """Write one feature of a view: its virtual datasets, real offsets or class names, shared attributes."""
    where = f"/{split}/{name}"
    nodes = [g[where] for _, g in shards]
    if encoding in ("dense", "string"):
        _virtual(h5, where, shards, path)
        node = h5[where]
    else:
        node = h5.create_group(where)
        for component in COMPONENTS[encoding]:
            if component in nodes[0]:
                _virtual(h5, f"{where}/{component}", shards, path)
        if encoding == "categorical":
            names = [decode_str(x) for x in nodes[0]["class_names"][:]]
            node.create_dataset("class_names", data=np.array(names, dtype=object), dtype=h5py.string_dtype())
        else:
            _offsets(h5, f"{where}/offsets", shards)
    for key, value in _shared_attrs(nodes).items():
        write_attr(node, key, value)


def _split(h5: h5py.File, name: str, split: SplitEntry, folder: Path, path: str) -> None:
    files = [(shard.path, h5py.File(folder / shard.path, "r")) for shard in split.shards]
    try:
        group = h5.create_group(name)
        write_attr(group, "num_samples", split.num_samples)
        for key, value in _shared_attrs([g[name] for _, g in files]).items():
            write_attr(group, key, value)
        for feature, entry in split.features.items():
            _feature(h5, name, feature, entry.encoding, files, path)
    finally:
        for _, g in files:
            g.close()


def _required_filters(index: ShardIndex, folder: Path) -> list[int]:
    """The union of the shards' ``required_filters``: reading the view decodes their chunks (§3.5)."""
    found: set[int] = set()
    for split in index.splits.values():
        for shard in split.shards:
            with h5py.File(folder / shard.path, "r") as g:
                found.update(int(x) for x in np.atleast_1d(read_attr(g, "required_filters", [])))
    return sorted(found)


def write_view(index: str | os.PathLike[str], output: str | os.PathLike[str], *, overwrite: bool = False) -> Path:
    """Write a view file of a sharded dataset: its shards presented as one HDF5 file (SPEC §12.6).

    Parameters
    ----------
    index
        The dataset's ``index.json``, or its folder.
    output
        The view file to write, in the index's folder (``ds/view.h5``).
    overwrite
        Replace an existing ``output``.

    Returns
    -------
    pathlib.Path
        The view file written.

    Raises
    ------
    FileNotFoundError
        If there is no index at ``index``.
    ShardIndexError
        If the index is invalid, a shard is missing or disagrees with it (§12.2), or shards store a dataset in
        different HDF5 datatypes or row shapes.
    ParameterError
        If ``output`` is not in the index's folder (relative sources would not reach the shards).
    FileExistsError
        If ``output`` exists and ``overwrite`` is False, or is the index or a shard.

    Notes
    -----
    The view is written atomically: on any error ``output`` is left as it was.
    """
    found, index_file = _index_file(index)
    folder = index_file.parent
    out = Path(output)
    _check_place(out, folder)
    shards = [folder / shard.path for split in found.splits.values() for shard in split.shards]
    out = check_output(out, overwrite, sources=[index_file, *shards])
    _check_shards(found, folder)
    atomic = AtomicFile(out)
    h5 = atomic.open(atomic, append=False, stop=lambda: None)
    with atomic.storing():
        write_root(h5, dict(found.metadata), folder.name, str(out))
        write_attr(h5, VIEW_OF, index_file.name)
        write_attr(h5, VIEW_INDEX_FINGERPRINT, found.fingerprint)
        filters = _required_filters(found, folder)
        if filters:
            write_attr(h5, "required_filters", np.array(filters, dtype=np.int64))
        for name, split in found.splits.items():
            _split(h5, name, split, folder, str(out))

    def finish() -> None:
        write_attr(h5, "complete", 1)  # last (SPEC §4.4-R2)
        h5.close()

    atomic.close(finish)
    return out
