"""What one shard file holds, as its index records it, and whether it agrees with the index (SPEC §12.2).

:func:`describe_shard` opens a complete h5ml file that holds one split and
returns what an index lists for it: its sample count, file fingerprint and
size (a :class:`~h5ml.model.shard_index.ShardEntry` but for the path), the
split's features as :class:`~h5ml.model.shard_index.FeatureEntry` (encoding,
the dtype a fingerprint header names, sample shape, class names), and the
dataset card (the root attributes that every shard shares). The sharded
writer, the Dask writer and ``h5ml shard`` build their index entries with
it; :func:`disagreements` is the one comparison of a shard with its index,
used by the sharded reader and the validator.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import h5py
import numpy as np

from h5ml import spec
from h5ml.errors import ShardIndexError
from h5ml.model.fingerprint import canonical_dtype
from h5ml.model.hdf5 import member_names
from h5ml.model.layout import Layout, stored_layout
from h5ml.model.shard_index import PER_FILE_ATTRIBUTES, FeatureEntry, ShardEntry, SplitEntry
from h5ml.spec.attrs import attrs_json

__all__ = ["ShardDescription", "describe_shard", "disagreements", "feature_entry"]

# The dtype a fingerprint header records for the encodings whose dtype is fixed (§8.2).
_FIXED_DTYPES = {"string": "utf-8", "categorical": "<i8", "bytes": "|u1"}


@dataclass(frozen=True)
class ShardDescription:
    """One shard file as an index lists it (§12.1, §12.2).

    Attributes
    ----------
    split
        The name of the one split the file holds.
    num_samples
        Its samples (§5.3).
    fingerprint
        The file fingerprint (§8.3), ``"sha256:..."``.
    size_bytes
        The file's size in bytes.
    features
        Feature name -> :class:`~h5ml.model.shard_index.FeatureEntry`.
    card
        The root attributes every shard of a dataset shares (all but
        :data:`~h5ml.model.shard_index.PER_FILE_ATTRIBUTES`), as JSON (§4.6).
    """

    split: str
    num_samples: int
    fingerprint: str
    size_bytes: int
    features: Mapping[str, FeatureEntry]
    card: Mapping[str, Any]

    def entry(self, path: str) -> ShardEntry:
        """The index entry of this shard at ``path`` (relative to the folder of the index)."""
        return ShardEntry(
            path=path, num_samples=self.num_samples, fingerprint=self.fingerprint, size_bytes=self.size_bytes
        )

    def split_entry(self, shards: tuple[ShardEntry, ...]) -> SplitEntry:
        """A split entry with this shard's features and the given shards (their samples summed)."""
        return SplitEntry(num_samples=sum(s.num_samples for s in shards), features=dict(self.features), shards=shards)


def feature_entry(layout: Layout) -> FeatureEntry:
    """The index entry of a feature from its stored :class:`~h5ml.model.layout.Layout` (§12.2).

    Sample shapes: dense ``sample_shape``; ragged ``(None, *row_shape)``, or ``None`` on each of the D axes of a
    ragged feature with ``shapes``; bytes ``(None,)``; string and categorical ``()``.
    """
    if layout.encoding in _FIXED_DTYPES:
        dtype = _FIXED_DTYPES[layout.encoding]
    else:
        assert layout.hash_dtype is not None
        dtype = canonical_dtype(layout.hash_dtype)
    shape: tuple[int | None, ...]
    if layout.encoding == "dense":
        shape = tuple(layout.sample_shape)
    elif layout.encoding == "ragged":
        shape = (None,) * layout.shapes_ndim if layout.shapes_ndim else (None, *layout.sample_shape)
    elif layout.encoding == "bytes":
        shape = (None,)
    else:
        shape = ()
    return FeatureEntry(encoding=layout.encoding, dtype=dtype, sample_shape=shape, class_names=layout.class_names)  # type: ignore[arg-type]


def describe_shard(path: str | os.PathLike[str], h5file: h5py.File | None = None) -> ShardDescription:
    """Describe one shard file for its index (§12.1, §12.2).

    Parameters
    ----------
    path
        The shard file: a complete h5ml file (§4.4) with exactly one split and
        a file fingerprint (§8.3).
    h5file
        The file already open for reading (a remote file object opened through
        fsspec, say); None opens ``path``.

    Returns
    -------
    ShardDescription

    Raises
    ------
    ShardIndexError
        If the file is incomplete, holds no split or several, or carries no
        file fingerprint; the message names the file and what to do.
    """
    where = os.fspath(path)
    own = h5file is None
    f = h5py.File(where, "r") if h5file is None else h5file
    try:
        root = dict(attrs_json(f))
        if root.get("complete") not in (1, True):
            raise ShardIndexError(f"{where} is not complete (§4.4): a shard must be a finished h5ml file")
        fingerprint = root.get("fingerprint")
        if not isinstance(fingerprint, str):
            raise ShardIndexError(
                f"{where} has no file fingerprint (§8.3): an index lists each shard's; write it with h5ml's writer"
            )
        splits = member_names(f, where, "/")
        if len(splits) != 1:
            raise ShardIndexError(
                f"{where} holds {len(splits)} splits ({', '.join(splits)}); a shard holds one (§12.1)"
            )
        split = splits[0]
        group = f[split]
        features: dict[str, FeatureEntry] = {}
        for name in member_names(group, where, f"/{split}"):
            node = group[name]
            encoding = node.attrs.get("encoding")
            encoding = encoding.decode() if isinstance(encoding, bytes) else encoding
            if encoding in spec.ENCODINGS:
                features[name] = feature_entry(stored_layout(str(encoding), node))
        num_samples = int(np.asarray(group.attrs["num_samples"]))
        size = os.path.getsize(where) if own else int(f.id.get_filesize())
    finally:
        if own:
            f.close()
    card = {key: value for key, value in root.items() if key not in PER_FILE_ATTRIBUTES}
    return ShardDescription(split, num_samples, fingerprint, size, features, card)


def disagreements(
    split: str,
    expected: SplitEntry,
    shard: ShardEntry,
    found: ShardDescription,
    card: Mapping[str, Any] | None = None,
) -> list[str]:
    """What a shard file holds that its index entry does not say (§12.2); an empty list when they agree.

    Compared: the split's name, the sample count, the fingerprint, the size,
    for every feature its encoding, dtype, sample shape and class names
    (a feature missing from either side too), and, when ``card`` (the index's
    ``metadata``) is given, every shared root attribute (one missing from
    either side too).
    """
    problems = []
    if found.split != split:
        problems.append(f"holds split {found.split!r}, not {split!r}")
    if found.num_samples != shard.num_samples:
        problems.append(f"holds {found.num_samples} samples, the index says {shard.num_samples}")
    if found.fingerprint != shard.fingerprint:
        problems.append(f"has fingerprint {found.fingerprint}, the index says {shard.fingerprint} (changed?)")
    if found.size_bytes != shard.size_bytes:
        problems.append(f"is {found.size_bytes} bytes, the index says {shard.size_bytes}")
    for name in sorted(set(expected.features) | set(found.features)):
        want, got = expected.features.get(name), found.features.get(name)
        if want is None:
            problems.append(f"has feature {name!r}, which the index does not list")
        elif got is None:
            problems.append(f"lacks feature {name!r}")
        elif want != got:
            fields = [
                f for f in ("encoding", "dtype", "sample_shape", "class_names") if getattr(want, f) != getattr(got, f)
            ]
            problems.append(
                f"feature {name!r} differs in "
                + ", ".join(f"{f} ({getattr(got, f)!r}; the index says {getattr(want, f)!r})" for f in fields)
            )
    if card is not None:
        for key in sorted(set(card) | set(found.card)):
            if key not in found.card:
                problems.append(f"lacks root attribute {key!r}, which the index's metadata has")
            elif key not in card:
                problems.append(f"has root attribute {key!r}, which the index's metadata lacks")
            elif found.card[key] != card[key]:
                problems.append(
                    f"root attribute {key!r} is {found.card[key]!r}, the index's metadata says {card[key]!r}"
                )
    return problems
