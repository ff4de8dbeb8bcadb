"""Cost growth: the image workload at three sizes; reads stay flat, ``h5ml validate`` stays flat (issue 15).

At each size (tiles; about 12.3 kB each: 2,000 ~ 25 MB, 20,000 ~ 250 MB,
200,000 ~ 2.5 GB) the uncompressed image workload is written for the
readers given (h5ml, memmap, h5py), read in the ``sequential`` and ``full``
orders (interleaved repetitions, capped, validated, as :mod:`peers.raw`),
and ``h5ml validate`` and ``h5ml validate --deep`` are timed on the h5ml
file, each in its own ``python -m h5ml`` process (the command a user runs:
interpreter start-up included), best of the repetitions. The files are
deleted after each size.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from .base import Reader
from .raw import Cell, run_raw
from .workloads import image_tiles

__all__ = ["run_growth", "time_validate"]


def time_validate(path: Path, deep: bool, repetitions: int) -> dict[str, Any]:
    """Seconds of ``python -m h5ml validate [--deep] PATH`` (best of ``repetitions``), and its exit status."""
    command = [sys.executable, "-m", "h5ml", "validate", "--quiet", *(["--deep"] if deep else []), str(path)]
    best: float | None = None
    code = None
    for _ in range(max(1, repetitions)):
        start = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True, timeout=1800)
        spent = time.perf_counter() - start
        code = done.returncode
        best = spent if best is None else min(best, spent)
    return {"seconds": best, "exit_code": code}


def run_growth(
    factories: Sequence[Callable[[], Reader]],
    sizes: Sequence[int],
    folder: Path,
    repetitions: int,
    cap_s: float,
    seed: int,
) -> list[Cell]:
    """Measure the readers and ``h5ml validate`` at each size; return cells with ``size_samples`` set."""
    cells: list[Cell] = []
    for n in sizes:
        workload = image_tiles(n, seed)
        sub = folder / f"growth-{n}"
        keep: dict[str, Any] = {}

        def validate_then(reader: Reader, keep: dict[str, Any] = keep) -> None:
            keep["shallow"] = time_validate(reader.path, False, repetitions)  # type: ignore[attr-defined]
            keep["deep"] = time_validate(reader.path, True, repetitions)  # type: ignore[attr-defined]

        got = run_raw(factories, workload, None, sub, repetitions, cap_s, seed, after_build=validate_then)
        for cell in got:
            if cell["order"] != "chunk":
                cells.append(cell | {"workload": "images-growth", "size_samples": n, "data_bytes": workload.nbytes})
        for kind in ("shallow", "deep"):
            if kind in keep:
                cells.append(
                    {
                        "workload": "images-growth",
                        "size_samples": n,
                        "data_bytes": workload.nbytes,
                        "storage": "none",
                        "order": "-",
                        "path": f"h5ml validate{' --deep' if kind == 'deep' else ''}",
                        "reader": "h5ml",
                        "status": "ok" if keep[kind]["exit_code"] == 0 else f"exit {keep[kind]['exit_code']}",
                        "seconds": keep[kind]["seconds"],
                    }
                )
        del workload
    return cells
