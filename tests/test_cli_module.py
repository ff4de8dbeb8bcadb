"""``python -m h5ml.tools.cli``: the same command line as the ``h5ml`` console script, in a real process.

Without the ``__main__`` guard that form printed nothing and exited 0 for every file, so a CI script
using it "passed" invalid files.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np

import h5ml

META = {"name": "t", "license": "CC0-1.0", "description": "d"}


def _run_module(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    return subprocess.run(
        [sys.executable, "-m", "h5ml.tools.cli", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )


def test_python_m_cli_validates_and_exits_1_for_an_invalid_file(tmp_path: Path) -> None:
    """An invalid file (num_samples that the feature does not have, E122): exit 1 and the verdict printed."""
    bad = tmp_path / "bad.h5"
    h5ml.write(bad, {"train": {"x": np.arange(4.0)}}, metadata=META)
    with h5py.File(bad, "r+") as f:
        f["train"].attrs["num_samples"] = np.int64(5)
    done = _run_module("validate", str(bad))
    assert done.returncode == 1, done.stderr
    assert "E122" in done.stdout and "INVALID" in done.stdout
    assert "Traceback" not in done.stdout + done.stderr


def test_python_m_cli_exits_0_for_a_valid_file_and_2_for_a_missing_one(tmp_path: Path) -> None:
    """The other exit codes of the console script: 0 valid, 2 a file that cannot be read, in one error line."""
    good = tmp_path / "good.h5"
    h5ml.write(good, {"train": {"x": np.arange(4.0)}}, metadata=META)
    done = _run_module("validate", str(good))
    assert done.returncode == 0, done.stderr
    assert "VALID" in done.stdout
    done = _run_module("validate", str(tmp_path / "missing.h5"))
    assert done.returncode == 2
    assert "Traceback" not in done.stdout + done.stderr
