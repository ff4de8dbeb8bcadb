"""h5ml.ingest.parallel: ordered_map, the decoding pool every converter uses (issue 5)."""

from __future__ import annotations

import os

import pytest

from h5ml.errors import IngestError
from h5ml.ingest.parallel import ordered_map


@pytest.mark.parametrize("workers,processes", [(1, False), (3, False), (2, True)], ids=["inline", "threads", "procs"])
def test_results_come_in_task_order_and_failures_are_values(workers: int, processes: bool) -> None:
    """Each task's result (or the exception it raised) comes back with it, in the order of the tasks."""
    tasks = ["7", "-3", "x", "12", "", "5"] * 7
    out = list(ordered_map(int, tasks, workers, processes=processes))
    assert [task for task, _ in out] == tasks
    for task, result in out:
        if task.lstrip("-").isdigit():
            assert result == int(task)
        else:
            assert isinstance(result, ValueError) and "invalid literal" in str(result)


def test_a_worker_process_that_dies_stops_the_conversion() -> None:
    """A worker killed (here: it exits at once) is not one bad file to skip: an IngestError names where it was."""
    with pytest.raises(IngestError, match=r"a worker process ended abruptly .* fewer --workers or without --processes"):
        list(ordered_map(os._exit, [0, 0, 0, 0], 2, processes=True))
