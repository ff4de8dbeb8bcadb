"""The method: a time cap per cell, interleaved repetitions in a seeded order, medians (issue 15, "Method").

One *cell* is one reader on one workload, storage and order. A repetition
runs every reader of a group once, in an order drawn from a seeded
generator (:func:`interleaved`), so that the machine's load drifts over all
readers alike; each run stops at the end of the epoch or after
``cell_seconds`` (:func:`time_map`, :func:`time_stream`). Only the reader's
own calls are timed; every batch is then validated against the source
outside the clock (:mod:`peers.validate`). The reported speed is the median
of the repetitions' samples per second.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

import numpy as np

from .validate import check_batch
from .workloads import Workload

__all__ = ["interleaved", "load_average", "median_or_none", "time_map", "time_stream"]

T = TypeVar("T")


def interleaved(items: Sequence[T], repetitions: int, seed: int) -> Iterator[tuple[int, T]]:
    """Yield ``(repetition, item)``: every item once per repetition, each repetition in a seeded random order.

    Parameters
    ----------
    items
        The readers (or cells) of one group.
    repetitions
        How many times each item runs.
    seed
        Seeds the orders: the same seed gives the same schedule.
    """
    rng = np.random.default_rng(seed)
    for rep in range(repetitions):
        for k in rng.permutation(len(items)):
            yield rep, items[int(k)]


def load_average() -> list[float]:
    """Return the 1, 5 and 15 minute load averages (``os.getloadavg``), rounded."""
    return [round(v, 2) for v in os.getloadavg()]


def median_or_none(values: Sequence[float]) -> float | None:
    """Return the median of ``values``, or None when there are none."""
    return float(statistics.median(values)) if values else None


def time_map(
    read: Callable[[np.ndarray], tuple[Any, Any]],
    batches: Sequence[np.ndarray],
    workload: Workload,
    cap_s: float,
    seed: int,
) -> dict[str, float]:
    """Read ``batches`` in order until the end or ``cap_s`` seconds of reading; validate each.

    Returns
    -------
    dict
        ``samples_per_s``, ``samples`` and ``seconds`` (reading time only).

    Raises
    ------
    peers.validate.BatchMismatch
        If a batch differs from the source.
    """
    rng = np.random.default_rng(seed)
    spent = 0.0
    samples = 0
    for idx in batches:
        start = time.perf_counter()
        x, y = read(idx)
        spent += time.perf_counter() - start
        check_batch(workload, idx, x, y, rng)
        samples += len(idx)
        if spent > cap_s:
            break
    return {"samples_per_s": samples / spent if spent else 0.0, "samples": samples, "seconds": spent}


def time_stream(
    batches: Iterator[tuple[np.ndarray, Any, Any]], workload: Workload, cap_s: float, seed: int
) -> dict[str, float]:
    """As :func:`time_map` for a stream of ``(sample numbers, x, y)`` batches in the reader's own order.

    The clock covers producing each batch (the iterator's ``next``),
    including the stream's start-up on the first batch.
    """
    rng = np.random.default_rng(seed)
    spent = 0.0
    samples = 0
    while True:
        start = time.perf_counter()
        try:
            ids, x, y = next(batches)
        except StopIteration:
            spent += time.perf_counter() - start
            break
        spent += time.perf_counter() - start
        check_batch(workload, ids, x, y, rng)
        samples += len(ids)
        if spent > cap_s:
            break
    close = getattr(batches, "close", None)
    if close is not None:
        close()
    return {"samples_per_s": samples / spent if spent else 0.0, "samples": samples, "seconds": spent}
