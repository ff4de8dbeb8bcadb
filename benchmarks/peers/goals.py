"""The issue's "Goals" as rows computed from one run's cells, each met or not, and why (issue 15, "Goals").

Every goal is a ratio of two speeds measured side by side in the same run
(:mod:`peers.raw`, :mod:`peers.loaders`). A goal whose inputs are missing
(a reader not installed, a feature not available yet) is ``"not measured"``
with the reason; it is never counted as met. ``own order`` numbers of stream
readers are left out of the shuffled comparisons (they do not read the
permutation the others read) and named in the "ahead of every peer" row.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["PEERS_NOT_H5ML", "Goal", "compute_goals", "speed"]

Cell = dict[str, Any]
Goal = dict[str, Any]
#: Readers that are not h5ml and not the memmap bound.
PEERS_NOT_H5ML = (
    "h5py",
    "hf-datasets",
    "zarr",
    "h5torch",
    "webdataset",
    "mosaicml-streaming",
    "litdata",
    "tutorial-per-sample",
    "tutorial-keras-seq",
)


def speed(
    cells: Sequence[Cell], workload: str, storage: str, order: str, reader: str, path: str = "raw"
) -> float | None:
    """The median samples/s of one cell with status ``ok``, or None."""
    for c in cells:
        if (c["workload"], c.get("storage"), c.get("order"), c["reader"], c["path"]) == (
            workload,
            storage,
            order,
            reader,
            path,
        ):
            return c["samples_per_s"] if c["status"] == "ok" else None
    return None


def _status(cells: Sequence[Cell], workload: str, storage: str, order: str, reader: str, path: str = "raw") -> str:
    for c in cells:
        if (c["workload"], c.get("storage"), c.get("order"), c["reader"], c["path"]) == (
            workload,
            storage,
            order,
            reader,
            path,
        ):
            return str(c["status"])
    return "not run"


def _ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


def _goal(text: str, value: float | None, target: float, detail: str, missing: str = "") -> Goal:
    if value is None:
        return {"goal": text, "value": None, "target": target, "met": None, "detail": missing or detail}
    return {"goal": text, "value": round(value, 3), "target": target, "met": value >= target, "detail": detail}


def _worst(pairs: Sequence[tuple[str, float | None]]) -> tuple[float | None, str]:
    known = [(r, k) for k, r in pairs if r is not None]
    if not known or len(known) < len(pairs):
        missing = ", ".join(k for k, r in pairs if r is None)
        return None, f"not measured: {missing}"
    r, k = min(known)
    return r, f"worst: {k}"


def _ragged_goal(cells: Sequence[Cell]) -> Goal:
    pairs = [
        (o, _ratio(speed(cells, "speech", "none", o, "h5ml"), speed(cells, "speech", "none", o, "hf-datasets")))
        for o in ("sequential", "chunk", "full")
    ]
    for path in ("DataLoader 0 workers", "DataLoader 2 workers"):
        pairs.append(
            (
                path,
                _ratio(
                    speed(cells, "speech", "none", "full", "h5ml", path),
                    speed(cells, "speech", "none", "full", "hf-datasets", path),
                ),
            )
        )
    value, detail = _worst(pairs)
    return _goal(
        "ragged audio, uncompressed: at least Hugging Face datasets in every order, raw and DataLoader",
        value,
        1.0,
        detail + "; " + ", ".join(f"{k} {r:.2f}x" for k, r in pairs if r is not None),
    )


def _threads_goals(cells: Sequence[Cell], workloads: Sequence[tuple[str, str]]) -> list[Goal]:
    path = "DataLoader h5ml threads=2"
    over_raw: list[tuple[str, float | None]] = []
    over_peers: list[tuple[str, float | None]] = []
    why = ""
    for w, s in workloads:
        threaded = speed(cells, w, s, "full", "h5ml", path)
        if threaded is None:
            why = _status(cells, w, s, "full", "h5ml", path)
        over_raw.append((f"{w}/{s}", _ratio(threaded, speed(cells, w, s, "full", "h5ml"))))
        best = [
            speed(cells, w, s, "full", p, q)
            for p in PEERS_NOT_H5ML
            for q in ("DataLoader 0 workers", "DataLoader 2 workers")
        ]
        known = [b for b in best if b is not None]
        over_peers.append((f"{w}/{s}", _ratio(threaded, max(known)) if known else None))
    v1, d1 = _worst(over_raw)
    v2, d2 = _worst(over_peers)
    return [
        _goal(
            "PyTorch adapter with threads: at least 0.8x h5ml's raw reads (full order)", v1, 0.8, d1, why and f"{why}"
        ),
        _goal(
            "PyTorch adapter with threads: at least 3x every peer's best DataLoader configuration",
            v2,
            3.0,
            d2,
            why and f"{why}",
        ),
    ]


def _behind(cells: Sequence[Cell]) -> Goal:
    trailing: list[str] = []
    for c in cells:
        if c["reader"] != "h5ml" or c["status"] != "ok" or c.get("size_samples"):
            continue
        mine = c["samples_per_s"]
        for p in PEERS_NOT_H5ML:
            theirs = speed(cells, c["workload"], c["storage"], c["order"], p, c["path"])
            if theirs and mine and theirs > mine:
                trailing.append(
                    f"{c['workload']}/{c['storage']}/{c['order']}/{c['path']}: {p} {theirs / mine:.2f}x h5ml"
                )
    return {
        "goal": "ahead of every peer on every workload and order (own-order streams left out)",
        "value": len(trailing),
        "target": 0,
        "met": not trailing,
        "detail": "; ".join(trailing) if trailing else "h5ml leads every cell measured",
    }


def compute_goals(cells: Sequence[Cell]) -> list[Goal]:
    """Return the goal rows of one run (see module)."""
    s = cells
    goals = [
        _goal(
            "gzip images: sequential at least 4x plain h5py",
            _ratio(speed(s, "images", "gzip", "sequential", "h5ml"), speed(s, "images", "gzip", "sequential", "h5py")),
            4.0,
            "h5ml / h5py, sequential",
        ),
        _goal(
            "gzip images: chunk shuffle at least 0.8x h5ml's own sequential",
            _ratio(speed(s, "images", "gzip", "chunk", "h5ml"), speed(s, "images", "gzip", "sequential", "h5ml")),
            0.8,
            "h5ml chunk / h5ml sequential",
        ),
        _goal(
            "gzip images: full shuffle at least 10x plain h5py's fancy indexing",
            _ratio(speed(s, "images", "gzip", "full", "h5ml"), speed(s, "images", "gzip", "full", "h5py")),
            10.0,
            "h5ml / h5py sorted fancy index, full",
        ),
        _ragged_goal(s),
    ]
    dense = [
        (f"{w} {o}", _ratio(speed(s, w, "none", o, "h5ml"), speed(s, w, "none", o, "memmap")))
        for w in ("images", "tabular")
        for o in ("sequential", "chunk", "full")
    ]
    value, detail = _worst(dense)
    goals.append(
        _goal(
            "uncompressed dense: at least 0.9x memmap in every order",
            value,
            0.9,
            detail + "; " + ", ".join(f"{k} {r:.2f}x" for k, r in dense if r is not None),
        )
    )
    goals += _threads_goals(s, [("images", "none"), ("images", "gzip"), ("speech", "none")])
    goals.append(
        {
            "goal": "Keras use_multiprocessing=True: at least 0.9x fitting from in-memory numpy",
            "value": None,
            "target": 0.9,
            "met": None,
            "detail": "not measured here: benchmarks/bench_keras.py measures it",
        }
    )
    zstd = speed(s, "images", "zstd", "sequential", "h5ml")
    sizes = {
        c["storage"]: c.get("size_bytes")
        for c in s
        if c["workload"] == "images" and c["reader"] == "h5ml" and c["order"] == "sequential"
    }
    size_ratio = _ratio(sizes.get("zstd"), sizes.get("none"))
    ratio = _ratio(zstd, speed(s, "images", "none", "sequential", "h5ml"))
    missing = _status(s, "images", "zstd", "sequential", "h5ml")
    g = _goal(
        "zstd images: sequential at least 0.3x h5ml uncompressed, file at most 0.7x its size",
        ratio,
        0.3,
        f"speed {ratio and round(ratio, 3)}x, size {size_ratio and round(size_ratio, 3)}x",
        missing,
    )
    if g["met"] is not None and size_ratio is not None:
        g["met"] = bool(g["met"] and size_ratio <= 0.7)
    goals.append(g)
    goals.append(_behind(s))
    return goals
