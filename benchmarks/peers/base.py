"""The reader interface every peer implements, and how a missing peer is reported.

A :class:`Reader` writes the workload's arrays in its own native format
(:meth:`Reader.build`, from the same arrays for every peer) and reads them its
recommended way: a *map-style* reader answers :meth:`Reader.read` for any
list of sample numbers (so it runs every order on the same batch lists), a
*stream* reader (:attr:`Reader.own_order`) only yields batches in its own
order, with the sample numbers of their rows (so they can be validated), and
is reported as ``"own order"`` in the shuffled orders instead of being given
a fake shuffled number.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from .workloads import Workload

__all__ = ["NotInstalled", "Reader", "Unsupported", "package_version", "require"]


class NotInstalled(RuntimeError):
    """The peer's package is not installed in this environment (reported, never an error of the run)."""


class Unsupported(RuntimeError):
    """The peer has no native way to store this workload with this compression (reported as such)."""


def require(module: str) -> None:
    """Raise :class:`NotInstalled` when ``module`` is missing or fails to import here (the reason in the message)."""
    if importlib.util.find_spec(module) is None:
        raise NotInstalled(f"{module} is not installed (benchmarks/peers_env.sh installs it)")
    try:
        importlib.import_module(module)
    except Exception as exc:  # installed but broken (a dependency that will not load): reported, not fatal
        raise NotInstalled(f"{module} is installed but fails to import: {type(exc).__name__}: {exc}") from exc


def package_version(distribution: str) -> str | None:
    """Return the installed version of ``distribution``, or None."""
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


class Reader:
    """One way of storing and reading a workload.

    Attributes
    ----------
    name
        The name in the tables (``"h5ml"``, ``"memmap"``, ...).
    module
        The import name of the peer's package (checked by :meth:`available`).
    distribution
        The distribution whose version the JSON records.
    own_order
        True for stream readers: :meth:`stream` only, in the reader's order.
    compressions
        The compressions this reader stores natively (None is uncompressed).
    ragged
        Whether it stores the ragged speech workload.
    """

    name = "?"
    module = "numpy"
    distribution = "numpy"
    own_order = False
    compressions: tuple[str | None, ...] = (None,)
    ragged = True

    def __getstate__(self) -> dict[str, Any]:
        """Pickle what :meth:`build` set (paths, flags), never what :meth:`open` opened (for worker processes)."""
        keep = self.__dict__.get("built_keys")
        return dict(self.__dict__) if keep is None else {k: v for k, v in self.__dict__.items() if k in keep}

    def mark_built(self) -> None:
        """Record the attributes :meth:`build` set: the ones a worker process receives."""
        self.built_keys = frozenset(self.__dict__) | {"built_keys"}

    def available(self) -> None:
        """Raise :class:`NotInstalled` when the peer's package is missing."""
        require(self.module)

    def supports(self, workload: Workload, compression: str | None) -> str | None:
        """Return why this reader cannot run the cell, or None when it can."""
        if compression not in self.compressions:
            return f"no {compression} storage"
        if workload.ragged and not self.ragged:
            return "no ragged storage"
        return None

    def build(self, folder: Path, workload: Workload, compression: str | None) -> None:
        """Write ``workload`` under ``folder`` in the reader's native format."""
        raise NotImplementedError

    def open(self) -> None:
        """Open the stored data (called once before each timed repetition)."""

    def close(self) -> None:
        """Release what :meth:`open` took."""

    def read(self, indices: np.ndarray) -> tuple[Any, Any]:
        """Return ``(x, y)`` of the samples ``indices`` (int64, any order), in that order."""
        raise NotImplementedError

    def stream(self, shuffle: bool, seed: int) -> Iterator[tuple[np.ndarray, Any, Any]]:
        """Yield ``(sample numbers, x, y)`` batches of 64 in the reader's own order (stream readers)."""
        raise NotImplementedError

    def size_bytes(self, folder: Path) -> int:
        """Bytes the stored data takes on disk under ``folder``."""
        return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
