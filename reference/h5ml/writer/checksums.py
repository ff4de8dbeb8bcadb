"""Writing the per-chunk checksums of a finished file's feature datasets (SPEC §8.4).

:func:`write_checksums` runs when every sample is stored (after the last
chunk was written, before fingerprints and ``complete``): the file is flushed,
and each chunk's stored bytes are read back with ``os.pread`` on HDF5's own
descriptor of the temporary file (:func:`h5ml.model.checksums.fd_reader`) and
hashed with CRC32C. Not through a memory map: the pages of a map stay in the
writer's resident set until it is closed, so hashing a 1 GiB file through one
raised the writer's peak RSS from under 300 MB to 1.25 GB
(``tests/test_ingest_samples.py``), for 0.03 s saved. Each checksum dataset is written whole
(contiguous, ``<u4``), replacing the one before.

Append mode (``Writer(mode="a")``): a dataset this writer extended keeps the
entries of its chunk rows that were whole before it grew and that it did not
touch (every chunk row but the last of the old checksum dataset); the last old
chunk row, which may have been filled since, and every new one are computed.
A feature the writer did not touch keeps a well-formed checksum dataset as it
is and gets one computed when it has none or a malformed one. With
``checksums=False`` every checksum dataset of the file is removed: none is
left stale (SPEC §8.4-R3).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import h5py
import numpy as np

from h5ml import spec
from h5ml.model.checksums import (
    CHECKSUM_PREFIX,
    checksum_name,
    checksum_problem,
    compute_checksums,
    fd_reader,
    stored_layout,
)
from h5ml.writer.sinks import SplitSink

__all__ = ["write_checksums"]


def _datasets(obj: Any) -> Iterator[h5py.Dataset]:
    """The feature datasets of a feature object: itself, or the datasets of its group (not reserved ones)."""
    if isinstance(obj, h5py.Dataset):
        yield obj
    elif isinstance(obj, h5py.Group):
        for name in sorted(obj):
            node = obj.get(name)
            if not name.startswith(spec.RESERVED_PREFIX) and isinstance(node, h5py.Dataset):
                yield node


def _remove_all(group: h5py.Group) -> None:
    """Remove every checksum dataset of a split and of its group features."""
    for name in list(group):
        if name.startswith(CHECKSUM_PREFIX):
            del group[name]
        elif not name.startswith(spec.RESERVED_PREFIX) and isinstance(group.get(name), h5py.Group):
            _remove_all(group[name])


def _write_one(dset: h5py.Dataset, read: Any, extended: bool) -> None:
    """Write (or keep) the checksum dataset of one feature dataset (SPEC §8.4-R1, §8.4-R3)."""
    parent = dset.parent
    name = checksum_name(dset.name.rsplit("/", 1)[-1])
    layout = stored_layout(dset)
    old = parent.get(name)
    if isinstance(layout, str):  # compact: no chunks to hash; nothing may claim to protect it
        if old is not None:
            del parent[name]
        return
    keep = 0
    if old is not None and isinstance(old, h5py.Dataset) and old.ndim == 1 and old.dtype.kind == "u":
        if not extended and checksum_problem(old, layout) is None:
            return  # an untouched feature keeps its checksums
        if extended and layout.chunked and layout.per_row and old.dtype.itemsize == 4:
            # SPEC §8.4-R3: chunk rows wholly before the last old one were not rewritten by the append
            keep = max(0, min(old.shape[0] // layout.per_row - 1, layout.count // layout.per_row)) * layout.per_row
    values = np.empty(layout.count, dtype=np.uint32)
    if keep:
        values[:keep] = np.asarray(old[:keep], dtype=np.uint32)
    values[keep:] = compute_checksums(layout, read, range(keep, layout.count))
    if old is not None:
        del parent[name]
    # SPEC §8.4-R1: one uint32 entry per chunk (row-major over the chunk grid) or per block of contiguous storage
    parent.create_dataset(name, data=values, dtype="<u4")


def write_checksums(h5file: h5py.File, splits: Sequence[SplitSink], enabled: bool) -> None:
    """Write the checksum dataset of every feature dataset of the file, or remove them all (SPEC §8.4).

    Parameters
    ----------
    h5file
        The temporary file, every sample stored (opened with the ``sec2`` driver).
    splits
        Every split of the file: the features this writer created or extended
        (``features``) and the untouched ones of an existing file (``stored``).
    enabled
        ``checksums=True`` of :class:`~h5ml.writer.streaming.Writer`; False
        removes every checksum dataset instead.

    Raises
    ------
    OSError
        If the stored bytes cannot be read back.
    """
    if not enabled:
        for split in splits:
            _remove_all(split.group)
        return
    h5file.flush()  # every chunk in the file, so that its stored bytes can be read back
    read = fd_reader(h5file.id.get_vfd_handle())
    for split in splits:
        for feature in split.features.values():
            for dset in _datasets(feature.obj):
                _write_one(dset, read, extended=True)
        for obj in split.stored.values():
            for dset in _datasets(obj):
                _write_one(dset, read, extended=False)
