"""The streaming readers: WebDataset, MosaicML Streaming (MDS) and LitData (issue 15, "Peers").

Each writes its own shards from the same arrays, with the sample number
stored beside each sample (``i``) so that every batch can be validated, and
is read the way its documentation recommends: iterating a streaming dataset,
in its own order (sequential, or its own shuffle), batched by 64. They are
reported as ``"own order"`` in the shuffled orders: their shuffles are
shard- or buffer-local, not the permutations the map-style readers read.

- ``webdataset``: ``ShardWriter`` tar shards of 2000 samples (``x.npy``,
  ``y.cls``, ``i.cls``); ``WebDataset(urls, shardshuffle=...).decode()``,
  with ``.shuffle(1000)`` for its shuffled order.
- ``mosaicml-streaming``: ``MDSWriter`` (``ndarray`` columns, uncompressed
  or ``zstd``), ``StreamingDataset(local=..., shuffle=...)``.
- ``litdata``: ``litdata.optimize`` (one worker), ``StreamingDataset(input_dir,
  shuffle=...)``.
"""

from __future__ import annotations

import multiprocessing
import random
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from .base import Reader
from .workloads import Workload

__all__ = ["LitDataReader", "MDSReader", "WebDatasetReader", "batched"]

BATCH = 64


def batched(samples: Iterable[tuple[int, Any, int]], ragged: bool) -> Iterator[tuple[np.ndarray, Any, Any]]:
    """Group ``(i, x, y)`` samples into batches of 64: ``(sample numbers, x, y)``; x stacked unless ragged."""
    ids: list[int] = []
    xs: list[Any] = []
    ys: list[int] = []
    for i, x, y in samples:
        ids.append(int(i))
        xs.append(x)
        ys.append(int(y))
        if len(ids) == BATCH:
            yield np.array(ids), (xs if ragged else np.stack(xs)), np.array(ys)
            ids, xs, ys = [], [], []
    if ids:
        yield np.array(ids), (xs if ragged else np.stack(xs)), np.array(ys)


def _sample_rows(workload: Workload) -> Iterator[dict[str, Any]]:
    for i in range(len(workload)):
        yield {"x": np.ascontiguousarray(workload.x[i]), "y": int(workload.y[i]), "i": i}


class WebDatasetReader(Reader):
    """WebDataset tar shards (see module)."""

    name = "webdataset"
    module = "webdataset"
    distribution = "webdataset"
    own_order = True

    def build(self, folder: Path, workload: Workload, compression: str | None) -> None:
        import webdataset as wds

        pattern = str(folder / "shard-%05d.tar")
        with wds.ShardWriter(pattern, maxcount=2000, verbose=0) as sink:
            for row in _sample_rows(workload):
                sink.write({"__key__": f"{row['i']:08d}", "x.npy": row["x"], "y.cls": row["y"], "i.cls": row["i"]})
        self.urls = sorted(str(p) for p in folder.glob("shard-*.tar"))
        self.is_ragged = workload.ragged

    def stream(self, shuffle: bool, seed: int) -> Iterator[tuple[np.ndarray, Any, Any]]:
        import webdataset as wds

        ds = wds.WebDataset(self.urls, shardshuffle=len(self.urls) if shuffle else False, seed=seed, empty_check=False)
        if shuffle:
            ds = ds.shuffle(1000, rng=random.Random(seed))
        ds = ds.decode().to_tuple("i.cls", "x.npy", "y.cls")
        return batched(ds, self.is_ragged)


class MDSReader(Reader):
    """MosaicML Streaming MDS shards (see module)."""

    name = "mosaicml-streaming"
    module = "streaming"
    distribution = "mosaicml-streaming"
    own_order = True
    compressions = (None, "zstd")

    def build(self, folder: Path, workload: Workload, compression: str | None) -> None:
        from streaming import MDSWriter

        self.local = folder / "mds"
        dtype = "float32" if workload.ragged else str(np.asarray(workload.x).dtype)
        shape = "" if workload.ragged else ":" + ",".join(str(s) for s in np.asarray(workload.x).shape[1:])
        columns = {"x": f"ndarray:{dtype}{shape}", "y": "int64", "i": "int64"}
        with MDSWriter(out=str(self.local), columns=columns, compression=compression, size_limit=1 << 26) as out:
            for row in _sample_rows(workload):
                out.write(row)
        self.is_ragged = workload.ragged

    def stream(self, shuffle: bool, seed: int) -> Iterator[tuple[np.ndarray, Any, Any]]:
        from streaming import StreamingDataset
        from streaming.base.util import clean_stale_shared_memory

        clean_stale_shared_memory()
        ds = StreamingDataset(local=str(self.local), shuffle=shuffle, shuffle_seed=seed, batch_size=BATCH)
        return batched(((s["i"], s["x"], s["y"]) for s in ds), self.is_ragged)


def _identity(row: dict[str, Any]) -> dict[str, Any]:
    return row


class LitDataReader(Reader):
    """LitData optimized chunks (see module)."""

    name = "litdata"
    module = "litdata"
    distribution = "litdata"
    own_order = True

    def build(self, folder: Path, workload: Workload, compression: str | None) -> None:
        import litdata

        self.input_dir = folder / "litdata"
        method = multiprocessing.get_start_method(allow_none=True)
        litdata.optimize(
            fn=_identity,
            inputs=list(_sample_rows(workload)),
            output_dir=str(self.input_dir),
            chunk_bytes="64MB",
            num_workers=1,
            mode="overwrite",
        )
        # optimize() sets the process-wide start method to spawn (force=True): put it back.
        multiprocessing.set_start_method(method or "fork", force=True)
        self.is_ragged = workload.ragged

    def stream(self, shuffle: bool, seed: int) -> Iterator[tuple[np.ndarray, Any, Any]]:
        import litdata

        ds = litdata.StreamingDataset(str(self.input_dir), shuffle=shuffle, seed=seed)
        return batched(((s["i"], s["x"], s["y"]) for s in ds), self.is_ragged)
