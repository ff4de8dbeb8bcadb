"""The run's outputs: ``results.json``, ``results.md`` (the tables the README shows) and ``results.png``.

The Markdown holds the goals table (met / not met / not measured, with the
ratios), then one table per path (raw reads, each DataLoader configuration):
a row per workload, storage and order, a column per reader, each cell the
reader's speed as a ratio to the numpy memmap reader of the same workload
and order in the same run (uncompressed memmap: the bound), or its status
(``not installed``, ``n/a``, ``own order`` with its own-order ratio in
brackets, ``wrong data``, ``error``); then the cost-growth table in seconds.
The plot shows samples/s (log scale) of each reader per workload and order,
raw reads; matplotlib is optional (the plot is skipped with a note when it
is missing).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .goals import PEERS_NOT_H5ML

__all__ = ["write_json", "write_markdown", "write_plot"]

Cell = dict[str, Any]


def _bound(cells: Sequence[Cell], c: Cell) -> float | None:
    for m in cells:
        if (m["reader"], m["storage"], m["workload"], m["order"], m["path"]) == (
            "memmap",
            "none",
            c["workload"],
            c["order"],
            c["path"],
        ):
            return m["samples_per_s"] if m["status"] == "ok" else None
    for m in cells:  # DataLoader paths: the memmap of the same configuration, else the raw one
        if (m["reader"], m["storage"], m["workload"], m["order"], m["path"]) == (
            "memmap",
            "none",
            c["workload"],
            c["order"],
            "raw",
        ):
            return m["samples_per_s"] if m["status"] == "ok" else None
    return None


def _fmt(cells: Sequence[Cell], c: Cell | None) -> str:
    if c is None:
        return ""
    value, bound = c.get("samples_per_s"), _bound(cells, c)
    ratio = f"{value / bound:.2f}x" if value and bound else (f"{value:,.0f}/s" if value else "")
    if c["status"] == "ok":
        return ratio
    if c["status"] == "own order":
        return f"own order ({ratio})" if ratio else "own order"
    return _short(c["status"])


def _short(status: str) -> str:
    """The first words of a status (``"not available yet"``, ``"n/a"``, ``"error"``), for a table cell."""
    return str(status).split(":")[0].split(" (")[0].replace("|", "/")


def _rank(reader: str) -> int:
    """The tables' column order: memmap (the bound), h5ml, then the peers as :data:`peers.goals.PEERS_NOT_H5ML`."""
    order = ("memmap", "h5ml", *PEERS_NOT_H5ML)
    return order.index(reader) if reader in order else len(order)


def _table(cells: Sequence[Cell], path: str) -> list[str]:
    chosen = [c for c in cells if c.get("path") == path and not c.get("size_samples")]
    readers = sorted(dict.fromkeys(c["reader"] for c in chosen), key=_rank)
    keys = list(dict.fromkeys((c["workload"], c["storage"], c["order"]) for c in chosen))
    index = {(c["workload"], c["storage"], c["order"], c["reader"]): c for c in chosen}
    lines = [
        "| workload | storage | order | h5ml samples/s | " + " | ".join(readers) + " |",
        "|---|---|---|---:|" + "---:|" * len(readers),
    ]
    for key in keys:
        mine = index.get((*key, "h5ml"))
        absolute = f"{mine['samples_per_s']:,.0f}" if mine and mine.get("samples_per_s") else ""
        row = [_fmt(cells, index.get((*key, r))) for r in readers]
        lines.append(f"| {key[0]} | {key[1]} | {key[2]} | {absolute} | " + " | ".join(row) + " |")
    return lines


def _growth(cells: Sequence[Cell]) -> list[str]:
    chosen = [c for c in cells if c.get("size_samples")]
    if not chosen:
        return []
    sizes = sorted({c["size_samples"] for c in chosen})
    rows = list(dict.fromkeys((c["reader"], c["path"], c.get("order", "")) for c in chosen))
    lines = [
        "| reader | path | order | " + " | ".join(f"{n:,} tiles ({_mb(chosen, n)} MB)" for n in sizes) + " |",
        "|---|---|---|" + "---:|" * len(sizes),
    ]
    for reader, path, order in rows:
        vals = []
        for n in sizes:
            c = next(
                (
                    c
                    for c in chosen
                    if (c["reader"], c["path"], c.get("order", ""), c["size_samples"]) == (reader, path, order, n)
                ),
                None,
            )
            if c is None:
                vals.append("")
            elif "seconds" in c and c.get("samples_per_s") is None:
                vals.append(f"{c['seconds']:.2f} s" if c["status"] == "ok" else c["status"])
            else:
                vals.append(f"{c['samples_per_s']:,.0f}/s" if c["status"] == "ok" else _short(c["status"]))
        lines.append(f"| {reader} | {path} | {order} | " + " | ".join(vals) + " |")
    return lines


def _mb(cells: Sequence[Cell], n: int) -> str:
    return f"{next(c['data_bytes'] for c in cells if c['size_samples'] == n) / 1e6:,.0f}"


def write_markdown(path: Path, meta: dict[str, Any], cells: Sequence[Cell], goals: Sequence[dict[str, Any]]) -> None:
    """Write the goals, the per-path tables and the growth table to ``path``."""
    mark = {True: "met", False: "not met", None: "not measured"}
    out = [
        f"Measured {meta['finished']} on {meta['cpus']} CPUs, load average {meta['load_before']} before and "
        f"{meta['load_after']} after ({meta['mode']}; batch 64; median of {meta['repetitions']} interleaved "
        f"repetitions, {meta['cell_seconds']} s cap per cell; every batch validated against the source). "
        "The machine was shared: ratios are noisy.",
        "",
        "| goal | value | target | verdict | detail |",
        "|---|---:|---:|---|---|",
    ]
    for g in goals:
        value = "" if g["value"] is None else f"{g['value']}"
        out.append(f"| {g['goal']} | {value} | {g['target']} | {mark[g['met']]} | {g['detail'].replace('|', '/')} |")
    paths = list(dict.fromkeys(c["path"] for c in cells if not c.get("size_samples")))
    for p in paths:
        out += ["", f"**{p}** (ratio to the uncompressed numpy memmap reader of the same workload and order)", ""]
        out += _table(cells, p)
    growth = _growth(cells)
    if growth:
        out += ["", "**Cost growth** (images, uncompressed)", "", *growth]
    path.write_text("\n".join(out) + "\n", encoding="utf-8")


def write_json(path: Path, meta: dict[str, Any], cells: Sequence[Cell], goals: Sequence[dict[str, Any]]) -> None:
    """Write everything measured, with the run's metadata (versions, load, settings), to ``path``."""
    path.write_text(
        json.dumps({"meta": meta, "goals": list(goals), "cells": list(cells)}, indent=1, default=str) + "\n"
    )


def write_plot(path: Path, cells: Sequence[Cell]) -> str | None:
    """Draw raw samples/s per reader, workload/storage and order (log scale) to ``path``; return a note if skipped."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "matplotlib is not installed: no plot"
    raw = [c for c in cells if c["path"] == "raw" and c["status"] == "ok" and not c.get("size_samples")]
    groups = list(dict.fromkeys((c["workload"], c["storage"]) for c in raw))
    if not groups:
        return "nothing measured: no plot"
    readers = list(dict.fromkeys(c["reader"] for c in raw))
    orders = ("sequential", "chunk", "full")
    cols = min(4, len(groups))
    rows = -(-len(groups) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(3.0 * cols + 1.6, 2.6 * rows), sharey=True, squeeze=False)
    width = 0.8 / max(1, len(readers))
    palette = plt.get_cmap("tab10")
    fixed = {"memmap": "black", "h5ml": "crimson"}
    others = [r for r in readers if r not in fixed]
    hues = (0, 1, 2, 4, 5, 6, 7, 8, 9)  # no red beside h5ml's crimson
    colour = fixed | {r: palette(hues[k % len(hues)]) for k, r in enumerate(others)}
    flat = [ax for row in axes for ax in row]
    for ax, (w, s) in zip(flat, groups, strict=False):
        for k, r in enumerate(readers):
            ys = [
                next(
                    (
                        c["samples_per_s"]
                        for c in raw
                        if (c["workload"], c["storage"], c["reader"], c["order"]) == (w, s, r, o)
                    ),
                    0,
                )
                for o in orders
            ]
            ax.bar([i + k * width for i in range(len(orders))], ys, width, label=r, color=colour[r])
        ax.set_yscale("log")
        ax.set_title(f"{w}, {s}", fontsize=9)
        ax.set_xticks([i + 0.4 - width / 2 for i in range(len(orders))], orders, fontsize=8)
    for ax in flat[len(groups) :]:
        ax.axis("off")
    for row in axes:
        row[0].set_ylabel("samples/s (raw)", fontsize=8)
    handles, labels = flat[0].get_legend_handles_labels()
    fig.legend(handles, labels, fontsize=7, loc="center right")
    fig.tight_layout(rect=(0, 0, 1 - 1.5 / (3.0 * cols + 1.6), 1))
    fig.savefig(path, dpi=80)
    plt.close(fig)
    return None
