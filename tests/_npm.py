"""``npm ci`` for the tests that install a pinned npm package once (tests/test_h5wasm.py, tests/test_validate_formats.py)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

__all__ = ["NPM", "npm_ci"]

#: The npm on PATH, or None (the tests that need it are skipped, or fail in CI).
NPM = shutil.which("npm")


def npm_ci(folder: Path, *flags: str, timeout: float, what: str) -> None:
    """Run ``npm ci --no-audit --no-fund <flags>`` in ``folder`` with a time limit; fail the test when it fails.

    ``what`` names the install in the failure (``"npm ci in <folder>"``), with the end of npm's stderr.
    """
    assert NPM is not None
    proc = subprocess.run(
        [NPM, "ci", *flags, "--no-audit", "--no-fund"],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if proc.returncode != 0:
        pytest.fail(f"{what} failed with exit {proc.returncode}:\n{proc.stderr[-3000:]}")
