"""``h5ml dump`` with a bound: ``--head N`` / ``--samples N``, and long values cut in text output (Appendix B)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np

import h5ml
from h5ml.tools import cli
from h5ml.tools.commands.dump import short_value


def run_cli(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = cli.run(list(args), out, err)
    return code, out.getvalue(), err.getvalue()


def write_audio_like(path: Path) -> Path:
    """Five 'clips' of 16000 float32 values each, and a long caption: what made dump print megabytes."""
    clips = np.arange(5 * 16000, dtype=np.float32).reshape(5, 16000) / 16000
    h5ml.write(path, {"train": {"clip": clips, "caption": np.array(["x" * 500] * 5, dtype=object)}})
    return path


def test_text_output_cuts_long_arrays_and_strings(tmp_path: Path) -> None:
    path = write_audio_like(tmp_path / "a.h5")
    code, out, err = run_cli("dump", str(path), "--format", "text", "--feature", "clip")
    assert code == 0 and err == ""
    lines = out.splitlines()
    assert lines[0] == "train/clip: dense float32 sample_shape (16000,) (5 samples)"
    assert len(lines) == 6 and len(out) < 1000
    first = (np.arange(16000, dtype=np.float32) / 16000).astype(np.float64)  # floats as the float64 they widen to
    edges = [repr(float(v)) for v in (*first[:3], *first[-3:])]
    assert lines[1] == f"  [0] [{', '.join(edges[:3])}, ..., {', '.join(edges[3:])}] (shape (16000,))"
    code, out, _ = run_cli("dump", str(path), "--format", "text", "--feature", "caption")
    assert out.splitlines()[1] == f'  [0] "{"x" * 200}... (500 characters)"'


def test_head_limits_json_and_text_and_json_stays_complete_without_it(tmp_path: Path) -> None:
    path = write_audio_like(tmp_path / "a.h5")
    code, out, _ = run_cli("dump", str(path), "--feature", "clip")
    full = json.loads(out)["splits"]["train"]
    assert code == 0 and "samples_shown" not in full
    values = full["features"]["clip"]["values"]
    assert len(values) == 5 and len(values[4]) == 16000  # JSON: every value, uncut
    for flag in ("--head", "--samples"):
        code, out, _ = run_cli("dump", str(path), "--feature", "clip", flag, "2")
        split = json.loads(out)["splits"]["train"]
        assert code == 0 and (split["num_samples"], split["samples_shown"]) == (5, 2)
        assert split["features"]["clip"]["values"] == values[:2]
    code, out, _ = run_cli("dump", str(path), "--format", "text", "--head", "1")
    assert "(5 samples, the first 1 shown)" in out and "  [1]" not in out
    code, _, err = run_cli("dump", str(path), "--head", "-1")
    assert code == 2 and "--head" in err


def test_short_value_leaves_short_values_alone() -> None:
    assert short_value([1, 2, 3]) == "[1, 2, 3]"
    assert short_value("abc") == '"abc"'
    assert short_value([[1] * 10] * 2) == "[[1, 1, 1, ..., 1, 1, 1], [1, 1, 1, ..., 1, 1, 1]] (shape (2, 10))"
    assert short_value(list(range(8))) == "[0, 1, 2, ..., 5, 6, 7] (shape (8,))"
