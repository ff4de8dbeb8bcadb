"""Sharded datasets for the tests: shards written by h5ml.write, the index by describe_shard and write_index (§12).

Each shard is a complete h5ml file holding one split; the index lists them in
order. The same columns written whole to one file give the file every global
read of the sharded split is compared with.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

import h5ml
from h5ml.model.shard_files import describe_shard
from h5ml.model.shard_index import ShardEntry, ShardIndex, SplitEntry, index_fingerprint, write_index

__all__ = ["CLASSES", "FEATURES", "columns", "write_file", "write_sharded"]

CLASSES = ["cat", "dog", "emu"]
#: Stored encodings forced, so that a one-sample shard stores its ragged feature as ragged and an empty one can be
#: written at all.
FEATURES: Mapping[str, Mapping[str, Any]] = {
    "clip": {"encoding": "ragged", "dtype": "int16"},
    "name": {"encoding": "string"},
    "blob": {"encoding": "bytes"},
    "label": {"role": "target"},
}


def columns(n: int, seed: int = 0) -> dict[str, Any]:
    """n samples: x = [i, 2i, 3i] + seed (x[:, 0] is the id), label, a ragged clip, a string of varying width, bytes."""
    rng = np.random.default_rng(seed)
    x = np.arange(n, dtype=np.float32)[:, None] * np.array([1, 2, 3], dtype=np.float32) + seed
    return {
        "x": x,
        "label": rng.integers(0, len(CLASSES), size=n),
        "clip": [rng.integers(-3000, 3000, size=int(k), dtype=np.int16) for k in rng.integers(0, 7, size=n)],
        "name": [f"s{'-' * (i % 5)}{i}" for i in range(n)],
        "blob": [bytes([i % 256]) * (i % 4) for i in range(n)],
    }


def _piece(cols: Mapping[str, Any], start: int, stop: int) -> dict[str, Any]:
    return {
        name: h5ml.Categorical(values[start:stop], CLASSES) if name == "label" else values[start:stop]
        for name, values in cols.items()
    }


def write_file(path: Path, cols: Mapping[str, Any], split: str = "train") -> Path:
    """One h5ml file holding all of ``cols`` as ``split``."""
    h5ml.write(path, {split: _piece(cols, 0, len(cols["x"]))}, {"name": "shards"}, features=FEATURES)
    return path


def write_sharded(folder: Path, cols: Mapping[str, Any], sizes: Sequence[int], split: str = "train") -> Path:
    """Shards of ``sizes`` samples (in order) holding ``cols`` as ``split``, and the index; returns the index path."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / split).mkdir(exist_ok=True)
    entries: list[ShardEntry] = []
    start = 0
    description = None
    for position, size in enumerate(sizes):
        relative = f"{split}/{split}-{position:05d}.h5"
        h5ml.write(folder / relative, {split: _piece(cols, start, start + size)}, {"name": "shards"}, features=FEATURES)
        description = describe_shard(folder / relative)
        entries.append(description.entry(relative))
        start += size
    assert description is not None
    splits: dict[str, SplitEntry] = {split: description.split_entry(tuple(entries))}
    index = ShardIndex(
        format_version="1.2", metadata=dict(description.card), splits=splits, fingerprint=index_fingerprint(splits)
    )
    return write_index(index, folder)
