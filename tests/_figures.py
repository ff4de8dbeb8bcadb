"""Reliability figures recorded by the tests that measure them (issue 14: "figures from the same tests").

A test that measures a reliability figure (kill points tried, half files found,
bytes of a secret file leaked, fuzzed files and crashes, concurrent reads and
errors, peak memory on a lying file) records it with the ``figures`` fixture::

    def test_kills(figures):
        ...
        figures.record("crash kills", "kill points tried", 240)

The values are the ones the test asserts on, never separate numbers. At the end
of a run pytest prints them in a table, and writes them as JSON to the file
named by the ``H5ML_FIGURES`` environment variable when it is set;
``benchmarks/reliability_figures.py`` runs the tests that record figures and
prints that table for the README.

Under pytest-xdist (``scripts/test.sh`` runs ``-n 2``) each worker process
records its own figures; ``tests/conftest.py`` sends them to the controller at
the end of the worker's session, which merges them with :meth:`Figures.merge`:
a figure counted with ``add`` is summed over the workers, one set with
``record`` keeps the value recorded.
"""

from __future__ import annotations

import json
import os
import threading
from dataclasses import dataclass, field
from typing import Any

__all__ = ["FIGURES", "Figures"]


@dataclass
class Figures:
    """The figures of one pytest run: ``{area: {figure: value}}``, in recording order."""

    values: dict[str, dict[str, Any]] = field(default_factory=dict)
    summed: set[tuple[str, str]] = field(default_factory=set)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def record(self, area: str, figure: str, value: Any) -> None:
        """Record ``value`` (a number or short text) of ``figure`` in ``area``; a later record replaces it."""
        with self._lock:
            self.values.setdefault(area, {})[figure] = value

    def add(self, area: str, figure: str, amount: int | float) -> None:
        """Add ``amount`` to the figure (0 when not yet recorded): for counts summed over several tests."""
        with self._lock:
            area_values = self.values.setdefault(area, {})
            area_values[figure] = area_values.get(figure, 0) + amount
            self.summed.add((area, figure))

    def export(self) -> dict[str, Any]:
        """The figures as plain lists and dicts, to send from an xdist worker to the controller."""
        with self._lock:
            return {"values": self.values, "summed": sorted([area, figure] for area, figure in self.summed)}

    def merge(self, exported: dict[str, Any]) -> None:
        """Merge the :meth:`export` of another process: ``add`` figures summed, ``record`` figures replaced."""
        summed = {(area, figure) for area, figure in exported["summed"]}
        for area, figures in exported["values"].items():
            for figure, value in figures.items():
                if (area, figure) in summed:
                    self.add(area, figure, value)
                else:
                    self.record(area, figure, value)

    def lines(self) -> list[str]:
        """The figures as text lines, one per figure, grouped by area."""
        out: list[str] = []
        for area, figures in self.values.items():
            out.append(f"{area}:")
            out.extend(f"  {name}: {value}" for name, value in figures.items())
        return out

    def write(self) -> None:
        """Write the figures as JSON to ``$H5ML_FIGURES`` when that variable is set."""
        target = os.environ.get("H5ML_FIGURES")
        if target:
            with open(target, "w", encoding="utf-8") as out:
                json.dump(self.values, out, indent=2, sort_keys=False)
                out.write("\n")


#: The figures of this pytest process.
FIGURES = Figures()
