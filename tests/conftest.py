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


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Print the reliability figures the tests recorded, and write them to ``$H5ML_FIGURES``."""
    if FIGURES.values:
        terminalreporter.section("h5ml reliability figures")
        for line in FIGURES.lines():
            terminalreporter.write_line(line)
        FIGURES.write()
