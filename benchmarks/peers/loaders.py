"""Reads through the PyTorch DataLoader path: 0 and 2 worker processes, and h5ml's threads (issue 15, "Orders").

Every configuration reads the ``full`` order's batch lists of :mod:`peers.raw`
(stream readers: their own shuffle, ``"own order"``), and every batch is
validated. The clock starts at the first batch (worker start-up is not
counted, for any reader) and stops at the end of the epoch or after the cap.

- ``h5ml``: the adapter, ``H5MLLoader(H5MLDataset(path, "train", features=["x",
  "y"]), H5MLBatchSampler(dataset, 64, shuffle="full", seed=seed),
  num_workers=...)``; ``threads=2`` (with ``num_workers=0``) when this
  adapter's ``H5MLLoader`` has a ``threads`` parameter, else the cell says
  ``"not available yet"``. Its collate is ``Collate(pad=False)``: ragged
  clips come as a list of tensors of their own lengths, copied once (the
  peers' pass-through collate pads nothing either; the default padding
  collate costs about a third more per batch, see the issue 15 notes).
  A padded batch (``x_lengths``) is still validated: each clip cut back.
- map-style peers: a ``Dataset`` whose ``__getitems__`` is the reader's batch
  read, behind ``DataLoader(batch_sampler=<the same lists>, collate_fn=<pass
  the batch through>, num_workers=...)``; dense ``x`` becomes a tensor.
- stream peers: their iterable behind ``DataLoader(batch_size=None,
  num_workers=...)``; each library splits its shards between the workers.

Worker processes start by ``fork`` in every configuration (:func:`_fork`).
"""

from __future__ import annotations

import inspect
import os
import time
import traceback
import warnings
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from .base import Reader
from .timing import median_or_none
from .validate import BatchMismatch, check_batch
from .workloads import Workload

__all__ = ["LOADER_CONFIGS", "h5ml_threads_supported", "run_loader"]

#: (label, num_workers, h5ml threads or None).
LOADER_CONFIGS = (("0 workers", 0, None), ("2 workers", 2, None), ("h5ml threads=2", 0, 2))


def h5ml_threads_supported() -> bool:
    """Whether this adapter's ``H5MLLoader`` takes ``threads=`` (another part of issue 15 adds it)."""
    from h5ml_torch import H5MLLoader

    return "threads" in inspect.signature(H5MLLoader).parameters


def _fork(workers: int) -> dict[str, Any]:
    """Worker processes by ``fork`` for every reader alike (Linux's default; LitData's ``optimize`` sets the
    process-wide start method to ``spawn``, which would make every later DataLoader re-import torch per worker)."""
    return {"multiprocessing_context": "fork"} if workers else {}


def _pass(batch: Any) -> Any:
    return batch


def _dense_tensor(x: Any) -> Any:
    import torch

    if isinstance(x, np.ndarray) and x.dtype != object:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # read-only memory maps: torch warns, the data is only read
            return torch.as_tensor(x)
    return x


class MapBatches:
    """A map-style dataset whose ``__getitems__`` is ``reader.read`` (opened once in each process)."""

    def __init__(self, reader: Reader, n: int) -> None:
        self.reader = reader
        self.n = n
        self.pid: int | None = None

    def __getstate__(self) -> dict[str, Any]:
        return {"reader": self.reader, "n": self.n, "pid": None}

    def __len__(self) -> int:
        return self.n

    def __getitems__(self, indices: list[int]) -> tuple[Any, Any]:
        if self.pid != os.getpid():
            self.reader.open()
            self.pid = os.getpid()
        x, y = self.reader.read(np.asarray(indices, dtype=np.int64))
        return _dense_tensor(x), _dense_tensor(np.asarray(y))


def stream_batches(reader: Reader, seed: int) -> Any:
    """Return the reader's own shuffled stream as a ``torch.utils.data.IterableDataset`` (batches of 64)."""
    from torch.utils.data import IterableDataset

    class StreamBatches(IterableDataset):  # type: ignore[type-arg]
        def __iter__(self) -> Iterator[tuple[np.ndarray, Any, Any]]:
            reader.open()
            return reader.stream(True, seed)

    return StreamBatches()


def _h5ml_loader(path: Path, workers: int, threads: int | None, seed: int) -> Iterable[Any]:
    from h5ml_torch import Collate, H5MLBatchSampler, H5MLDataset, H5MLLoader

    dataset = H5MLDataset(path, "train", features=["x", "y"])
    sampler = H5MLBatchSampler(dataset, 64, shuffle="full", seed=seed)
    options: dict[str, Any] = {"num_workers": workers} | _fork(workers)
    if threads is not None:  # threads read in this process, without a DataLoader: no worker options with them
        options = {"threads": threads}
    return H5MLLoader(dataset, sampler, Collate(pad=False), **options)


def _h5ml_batch(batch: dict[str, Any]) -> tuple[Any, Any]:
    x = batch["x"]
    if isinstance(x, list):  # Collate(pad=False): one tensor per clip
        x = [clip.numpy() for clip in x]
    elif "x_lengths" in batch:  # padded ragged clips: cut each back to its length
        lengths = batch["x_lengths"].numpy()
        x = [x[k, : int(n)].numpy() for k, n in enumerate(lengths)]
    return x, batch["y"]


def _one_run(
    loader: Iterable[Any], kind: str, batches: list[np.ndarray], workload: Workload, cap_s: float, seed: int
) -> Any:
    rng = np.random.default_rng(seed)
    samples = 0
    opened = time.perf_counter()
    start: float | None = None
    first = 0
    for k, batch in enumerate(loader):
        if kind == "h5ml":
            ids, (x, y) = batches[k], _h5ml_batch(batch)
        elif kind == "map":
            ids, (x, y) = batches[k], batch
        else:
            ids, x, y = batch
        check_batch(workload, ids, x, y, rng)
        if start is None:
            start = time.perf_counter()  # the clock starts at the first batch
            first = len(ids)
            continue
        samples += len(ids)
        if time.perf_counter() - start > cap_s:
            break
    if start is None:
        return "error: the loader yielded no batch"
    if samples == 0:  # one batch in all (smoke sizes): count it, start-up included
        return first / (start - opened)
    return samples / (time.perf_counter() - start)


def run_loader(
    reader: Reader,
    config: tuple[str, int, int | None],
    batches: list[np.ndarray],
    workload: Workload,
    cap_s: float,
    seed: int,
    check_seed: int | None = None,
) -> Any:
    """One timed DataLoader run: samples/s, or a status string (``"not available yet"``, ``"error: ..."``).

    ``seed`` is the sampler's (h5ml's ``H5MLBatchSampler``, the streams' own
    shuffle): the one ``batches`` were made with. ``check_seed`` picks the
    validated rows (default ``seed``).
    """
    from torch.utils.data import DataLoader

    _label, workers, threads = config
    dataset: MapBatches | None = None
    try:
        if reader.name == "h5ml":
            if threads is not None and not h5ml_threads_supported():
                return "not available yet (H5MLLoader has no threads= parameter)"
            loader: Iterable[Any] = _h5ml_loader(reader.path, workers, threads, seed)  # type: ignore[attr-defined]
            kind = "h5ml"
        elif threads is not None:
            return "n/a: h5ml only"
        elif reader.own_order:
            loader = DataLoader(stream_batches(reader, seed), batch_size=None, num_workers=workers, **_fork(workers))
            kind = "stream"
        else:
            dataset = MapBatches(reader, len(workload))
            loader = DataLoader(
                dataset,  # type: ignore[arg-type]
                batch_sampler=batches,  # type: ignore[arg-type]
                collate_fn=_pass,
                num_workers=workers,
                **_fork(workers),
            )
            kind = "map"
        return _one_run(loader, kind, batches, workload, cap_s, seed if check_seed is None else check_seed)
    except BatchMismatch as exc:
        return f"wrong data: {exc}"
    except Exception as exc:
        traceback.print_exc()
        return f"error: {type(exc).__name__}: {str(exc)[:200]}"
    finally:
        if dataset is not None and dataset.pid == os.getpid():  # opened in this process (0 workers)
            reader.close()


def summarize(runs: list[Any]) -> tuple[str, float | None, list[float]]:
    """Return (status, median samples/s, speeds) of a cell's runs."""
    failed = [r for r in runs if isinstance(r, str)]
    speeds = [float(r) for r in runs if not isinstance(r, str)]
    return (failed[0] if failed else "ok"), (None if failed else median_or_none(speeds)), speeds
