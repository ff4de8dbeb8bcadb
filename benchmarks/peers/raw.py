"""Raw batch reads: every reader on every workload, storage and order, side by side (issue 15, "Orders").

The batch lists come from h5ml's own sampler on the h5ml file of the cell
(:meth:`h5ml.reader.source.SplitSource.sampler`, batch 64, seeded): orders
``sequential`` (h5ml ``shuffle="none"``), ``chunk`` and ``full``. Every
map-style reader reads the *same* lists. Stream readers run their own
sequential stream and their own shuffle, which is reported in both shuffled
columns with the status ``"own order"``.

A reader whose package is missing is reported ``"not installed"``; one that
has no native storage for a workload or compression, ``"n/a: ..."``; one
that fails, ``"error: ..."``; one that returns a wrong batch,
``"wrong data: ..."``. None of these stops the run.
"""

from __future__ import annotations

import shutil
import time
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .base import NotInstalled, Reader, Unsupported
from .loaders import LOADER_CONFIGS, run_loader, summarize
from .timing import interleaved, median_or_none, time_map, time_stream
from .validate import BatchMismatch
from .workloads import Workload

__all__ = ["ORDERS", "Cell", "batch_lists", "build_readers", "measure", "run_raw"]

ORDERS = ("sequential", "chunk", "full")
BATCH = 64
Cell = dict[str, Any]


def batch_lists(h5ml_path: Path | None, n: int, seed: int) -> dict[str, list[np.ndarray]]:
    """Return the batches of each order: those of h5ml's sampler of the file, as every h5ml adapter builds it.

    :meth:`h5ml.reader.source.SplitSource.sampler` (what ``H5MLBatchSampler``
    uses, so the DataLoader path reads the same lists); without an h5ml
    file, :class:`h5ml.sampling.Sampler` over ``n`` samples with windows of
    1024 samples for ``chunk``.
    """
    modes = {"sequential": "none", "chunk": "chunk", "full": "full"}
    if h5ml_path is not None:
        from h5ml.reader.source import SplitSource

        source = SplitSource(h5ml_path, "train")
        return {order: source.sampler(BATCH, shuffle=mode, seed=seed).batches(0) for order, mode in modes.items()}  # type: ignore[arg-type]
    from h5ml.sampling import Sampler

    return {
        order: Sampler(n, BATCH, shuffle=mode, seed=seed, chunk_rows=1024).batches(0)  # type: ignore[arg-type]
        for order, mode in modes.items()
    }


def _short(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}".replace("\n", " ")
    return text[:300]


def build_readers(
    factories: Sequence[Callable[[], Reader]], folder: Path, workload: Workload, storage: str | None
) -> tuple[list[Reader], dict[str, str]]:
    """Build every reader's native copy of ``workload``; return the built readers and the others' statuses."""
    built: list[Reader] = []
    statuses: dict[str, str] = {}
    for make in factories:
        reader = make()
        try:
            reader.available()
        except NotInstalled as exc:
            statuses[reader.name] = "not installed" if "is not installed" in str(exc) else f"not installed: {exc}"
            continue
        reason = reader.supports(workload, storage)
        if reason is not None:
            statuses[reader.name] = f"n/a: {reason}"
            continue
        sub = folder / reader.name
        sub.mkdir(parents=True, exist_ok=True)
        try:
            start = time.perf_counter()
            reader.build(sub, workload, storage)
            reader.build_seconds = time.perf_counter() - start  # type: ignore[attr-defined]
            reader.folder_size = reader.size_bytes(sub)  # type: ignore[attr-defined]
            reader.mark_built()
            built.append(reader)
        except Unsupported as exc:
            statuses[reader.name] = str(exc)[:300]
        except Exception as exc:  # a peer's failure is reported, never fatal
            statuses[reader.name] = f"error: {_short(exc)}"
            traceback.print_exc()
    return built, statuses


def measure(reader: Reader, order: str, batches: list[np.ndarray], workload: Workload, cap_s: float, seed: int) -> Any:
    """One timed run of ``reader`` in ``order``: a timing dict, or a status string on failure."""
    try:
        reader.open()
        try:
            if reader.own_order:
                return time_stream(reader.stream(order != "sequential", seed), workload, cap_s, seed)
            return time_map(reader.read, batches, workload, cap_s, seed)
        finally:
            reader.close()
    except BatchMismatch as exc:
        return f"wrong data: {exc}"
    except Exception as exc:
        traceback.print_exc()
        return f"error: {_short(exc)}"


def _loader_cells(
    readers: Sequence[Reader],
    batches: list[np.ndarray],
    workload: Workload,
    base: dict[str, Any],
    repetitions: int,
    cap_s: float,
    seed: int,
    configs: Sequence[tuple[str, int, int | None]] = LOADER_CONFIGS,
) -> list[Cell]:
    """The DataLoader cells (:mod:`peers.loaders`) of the built readers, interleaved as the raw ones."""
    plan = [(c, r) for r in readers if r.name != "tutorial-keras-seq" for c in configs]
    plan = [(c, r) for c, r in plan if c[2] is None or r.name == "h5ml"]
    runs: dict[tuple[str, str], list[Any]] = {}
    for rep, (config, reader) in interleaved(plan, repetitions, seed + 1):
        runs.setdefault((reader.name, config[0]), []).append(
            run_loader(reader, config, batches, workload, cap_s, seed, check_seed=seed + rep)
        )
    cells: list[Cell] = []
    for (name, label), got in runs.items():
        status, speed, speeds = summarize(got)
        own = next(r.own_order for r in readers if r.name == name)
        status = "own order" if own and status == "ok" else status
        cells.append(
            base
            | {"path": f"DataLoader {label}", "reader": name, "order": "full"}
            | {"status": status, "samples_per_s": speed, "runs": speeds}
        )
    return cells


def run_raw(
    factories: Sequence[Callable[[], Reader]],
    workload: Workload,
    storage: str | None,
    folder: Path,
    repetitions: int,
    cap_s: float,
    seed: int,
    loaders: Sequence[tuple[str, int, int | None]] = (),
    after_build: Callable[[Reader], None] | None = None,
) -> list[Cell]:
    """Measure every reader in every order on one workload and storage; return one cell per reader and order.

    With ``loaders`` (some of :data:`peers.loaders.LOADER_CONFIGS`), also each
    reader's DataLoader runs in those configurations, ``full`` order. The
    stored copies are deleted at the end. ``after_build`` is called with the
    built h5ml reader before any read (the growth table times validation there).
    """
    folder.mkdir(parents=True, exist_ok=True)
    label = storage or "none"
    try:
        readers, statuses = build_readers(factories, folder, workload, storage)
        h5 = next((r for r in readers if r.name == "h5ml"), None)
        if after_build is not None and h5 is not None:
            after_build(h5)
        batches = batch_lists(getattr(h5, "path", None), len(workload), seed)
        runs: dict[tuple[str, str], list[Any]] = {}
        plan = [(o, r) for r in readers for o in (("sequential", "full") if r.own_order else ORDERS)]
        for rep, (order, reader) in interleaved(plan, repetitions, seed):
            runs.setdefault((reader.name, order), []).append(
                measure(reader, order, batches[order], workload, cap_s, seed + rep)
            )
        cells: list[Cell] = []
        base = {"workload": workload.name, "storage": label, "path": "raw"}
        for reader in readers:
            for order in ORDERS:
                got = runs[(reader.name, "full" if reader.own_order and order == "chunk" else order)]
                failed = [g for g in got if isinstance(g, str)]
                speeds = [g["samples_per_s"] for g in got if not isinstance(g, str)]
                status = failed[0] if failed else ("own order" if reader.own_order and order != "sequential" else "ok")
                cells.append(
                    base
                    | {
                        "reader": reader.name,
                        "order": order,
                        "status": status,
                        "samples_per_s": None if failed else median_or_none(speeds),
                        "runs": speeds,
                        "size_bytes": getattr(reader, "folder_size", None),
                        "build_seconds": round(getattr(reader, "build_seconds", 0.0), 2),
                    }
                )
        for name, status in statuses.items():
            cells.extend(base | {"reader": name, "order": o, "status": status, "samples_per_s": None} for o in ORDERS)
        if loaders:
            cells.extend(_loader_cells(readers, batches["full"], workload, base, repetitions, cap_s, seed, loaders))
        return cells
    finally:
        shutil.rmtree(folder, ignore_errors=True)
