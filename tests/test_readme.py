"""The README's Python examples run as written and do what the text says."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

import h5ml

README = Path(__file__).resolve().parents[1] / "README.md"


def _python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.DOTALL)


def _pairs() -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Noisy/clean int16 clip pairs of different lengths, as the streaming example expects."""
    rng = np.random.default_rng(0)
    for _ in range(6):
        clean = rng.integers(-3000, 3000, size=int(rng.integers(4000, 16000))).astype(np.int16)
        noise = rng.integers(-50, 50, size=clean.shape).astype(np.int16)
        yield clean + noise, clean


def test_readme_has_the_examples() -> None:
    assert len(_python_blocks()) == 3


def test_quick_start_runs_and_reads_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    exec(compile(_python_blocks()[0], "README.md", "exec"), {})
    out = capsys.readouterr().out
    assert "(4, 28, 28, 1)" in out
    assert "True ['I300']" in out
    with h5ml.open(tmp_path / "mnist-like.h5") as ds:
        assert ds.metadata.name == "mnist-like"
        assert ds["train"]["label"].class_names == [str(i) for i in range(10)]
        assert (len(ds["train"]), len(ds["test"])) == (800, 200)


def test_streaming_example_runs_and_round_trips(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    exec(compile(_python_blocks()[1], "README.md", "exec"), {"h5ml": h5ml, "pairs": _pairs})
    expected = list(_pairs())
    with h5ml.open(tmp_path / "speech.h5") as ds:
        train = ds["train"]
        assert len(train) == len(expected)
        assert train["noisy"].encoding == "ragged" and train["noisy"].sample_rate == 16000
        for i, (noisy, clean) in enumerate(expected):
            np.testing.assert_array_equal(train["noisy"][i], noisy)
            np.testing.assert_array_equal(train["clean"][i], clean)
    report = h5ml.validate(tmp_path / "speech.h5", deep=True)
    assert report.valid and [i.code for i in report.issues] == ["I303"]


def _batches() -> Iterator[dict[str, np.ndarray]]:
    """Three batches of 10,000 small samples, as the sharded example expects."""
    for b in range(3):
        rows = np.arange(b * 10_000, (b + 1) * 10_000)
        yield {"x": np.stack([rows, rows * 2], axis=1).astype(np.float32), "label": (rows % 7).astype(np.int64)}


def test_sharded_example_writes_shards_and_reads_global_indices(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SPEC §12: the README's sharded example writes 3 shards of 10,000 samples and reads across them."""
    monkeypatch.chdir(tmp_path)
    scope = {"h5ml": h5ml, "batches": _batches}
    exec(compile(_python_blocks()[2], "README.md", "exec"), scope)
    np.testing.assert_array_equal(scope["batch"]["x"][:, 0], [5, 20_017, 3])
    np.testing.assert_array_equal(scope["batch"]["label"], [5 % 7, 20_017 % 7, 3 % 7])
    assert sorted(p.name for p in (tmp_path / "pets" / "train").iterdir()) == [
        "train-00000.h5",
        "train-00001.h5",
        "train-00002.h5",
    ]
    report = h5ml.validate(tmp_path / "pets", deep=True)
    assert report.valid
