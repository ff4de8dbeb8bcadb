"""Shared pytest configuration: a deterministic hypothesis profile for CI, and the reliability figures."""

from __future__ import annotations

import os
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

from _figures import FIGURES, Figures

settings.register_profile(
    "ci",
    deadline=None,
    derandomize=True,
    max_examples=60,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    print_blob=True,
)
settings.register_profile("dev", deadline=None, max_examples=30)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture
def figures() -> Figures:
    """The run's reliability figures (tests/_figures.py): ``figures.record(area, figure, value)``."""
    return FIGURES


def pytest_sessionfinish(session: pytest.Session) -> None:
    """In a pytest-xdist worker, hand this process's figures to the controller (``workeroutput``)."""
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:
        workeroutput["h5ml_figures"] = FIGURES.export()


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    """In the pytest-xdist controller, merge the figures of a worker that finished (tests/_figures.py)."""
    exported = getattr(node, "workeroutput", {}).get("h5ml_figures")
    if exported:
        FIGURES.merge(exported)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Print the reliability figures the tests recorded, and write them to ``$H5ML_FIGURES``."""
    if hasattr(terminalreporter.config, "workeroutput"):
        return  # an xdist worker: the controller prints and writes the merged figures
    if FIGURES.values:
        terminalreporter.section("h5ml reliability figures")
        for line in FIGURES.lines():
            terminalreporter.write_line(line)
        FIGURES.write()
