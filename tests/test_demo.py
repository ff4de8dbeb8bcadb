"""The scikit-learn digits demo: :mod:`h5ml.tools.demo` and ``h5ml demo``."""

from __future__ import annotations

import importlib.util
import io
import re
import sys
from pathlib import Path

import numpy as np
import pytest

import h5ml
from h5ml.tools import cli, demo
from h5ml.validator.runner import validate


def test_demo_command_writes_validates_and_shows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With no arguments the demo writes ./digits.h5, prints the verdict and the inspect tree (§4-§7)."""
    pytest.importorskip("sklearn")
    monkeypatch.chdir(tmp_path)
    out, err = io.StringIO(), io.StringIO()
    assert cli.run(["demo"], out, err) == 0, err.getvalue()
    path = tmp_path / "digits.h5"
    text = out.getvalue()
    assert "wrote digits.h5" in text
    assert "digits.h5: VALID (0 errors, 0 warnings, 0 info)" in text
    for piece in ("train  1437 samples", "test  360 samples", "image  dense  uint8  (1437, 8, 8)", "10 classes"):
        assert piece in text
    assert "CC-BY-4.0" in text
    assert err.getvalue() == ""
    report = validate(path, timeout=120)
    assert report.valid_strict and report.codes == []


def test_build_digits_content(tmp_path: Path) -> None:
    """Stratified 80/20 split with seed 0, shuffled on write with seed 0 (§7.6), metadata as documented."""
    sklearn_datasets = pytest.importorskip("sklearn.datasets")
    model_selection = pytest.importorskip("sklearn.model_selection")
    path = demo.build_digits(tmp_path / "d.h5")
    digits = sklearn_datasets.load_digits()
    x_train, x_test, y_train, y_test = model_selection.train_test_split(
        digits.images.astype(np.uint8), digits.target, test_size=0.2, stratify=digits.target, random_state=0
    )
    with h5ml.open(path) as ds:
        meta = ds.metadata
        assert (meta.name, meta.license) == ("digits", "CC-BY-4.0")
        assert meta.description is not None
        assert "scikit-learn" in meta.description and "UCI" in meta.description
        assert meta.citation == demo.CITATION and meta.homepage == demo.HOMEPAGE
        assert meta.keywords == list(demo.KEYWORDS)
        assert sorted(ds.splits) == ["test", "train"]
        for split, images, labels in (("train", x_train, y_train), ("test", x_test, y_test)):
            s = ds[split]
            assert s.num_samples == len(labels)
            assert s.shuffle_seed == demo.SEED
            order = np.random.default_rng(s.shuffle_seed).permutation(len(labels))
            image, label = s["image"], s["label"]
            assert (image.dtype, image.sample_shape, image.role, image.units) == (
                np.uint8,
                (8, 8),
                "input",
                "intensity 0-16",
            )
            assert image.description
            assert (label.encoding, label.role) == ("categorical", "target")
            assert label.class_names == [str(d) for d in range(10)]
            np.testing.assert_array_equal(image[:], images[order])
            np.testing.assert_array_equal(label[:], labels[order])
            assert int(image[:].max()) == 16
    assert (len(y_train), len(y_test)) == (1437, 360)


def test_missing_scikit_learn_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without scikit-learn: one line naming the extra to install, exit 2, nothing written."""
    for name in ("sklearn", "sklearn.datasets", "sklearn.model_selection"):
        monkeypatch.setitem(sys.modules, name, None)
    with pytest.raises(ModuleNotFoundError, match=r'pip install "h5ml\[demo\]"'):
        demo.load_sklearn()
    out, err = io.StringIO(), io.StringIO()
    assert cli.run(["demo", "--output", str(tmp_path / "x.h5")], out, err) == 2
    assert out.getvalue() == ""
    message = err.getvalue()
    assert message.startswith("h5ml: error: ") and message.count("\n") == 1
    assert 'pip install "h5ml[demo]"' in message
    assert list(tmp_path.iterdir()) == []


ACCURACY_LINE = re.compile(r"^torch: test accuracy (\d\.\d{3}) after (\d+) epochs \((\d+\.\d) s\)$", re.MULTILINE)
KERAS_LINE = re.compile(r"keras \((\w+) backend\): test accuracy (\d\.\d{3}) after \d+ epochs \(\d+\.\d s\)")


def test_train_digits_through_the_torch_adapter(tmp_path: Path) -> None:
    """Issue 3 demo: a seeded MLP trained through the adapter on the demo file beats 0.9 test accuracy (§6.5 labels)."""
    pytest.importorskip("sklearn")
    pytest.importorskip("torch")
    from h5ml_demo import torch_digits as train

    path = demo.build_digits(tmp_path / "d.h5")
    first = train.train_digits(path)
    assert first.accuracy > 0.9
    assert (first.epochs, first.train_samples, first.test_samples) == (train.EPOCHS, 1437, 360)
    assert len(first.losses) == train.EPOCHS and first.losses[-1] < first.losses[0] / 5
    # the accuracy counts whole samples of the 360 test samples
    assert round(first.accuracy * 360) == pytest.approx(first.accuracy * 360)
    again = train.train_digits(path)
    assert (again.accuracy, again.losses) == (first.accuracy, first.losses)
    match = ACCURACY_LINE.fullmatch(first.summary())
    assert match is not None and float(match.group(1)) == round(first.accuracy, 3)
    with pytest.raises(ValueError, match="epochs must be >= 1"):
        train.train_digits(path, epochs=0)


def test_demo_command_prints_the_accuracy(tmp_path: Path) -> None:
    """``h5ml demo`` ends with the torch accuracy line; ``--no-train`` leaves it out."""
    pytest.importorskip("sklearn")
    pytest.importorskip("torch")
    out, err = io.StringIO(), io.StringIO()
    assert cli.run(["demo", "--output", str(tmp_path / "d.h5")], out, err) == 0, err.getvalue()
    match = ACCURACY_LINE.search(out.getvalue())
    assert match is not None, out.getvalue()[-500:]
    assert float(match.group(1)) > 0.9 and int(match.group(2)) == 15
    last = out.getvalue().rstrip().splitlines()[-2:]
    assert last[0] == match.group(0)
    keras_line = KERAS_LINE.fullmatch(last[1])  # then the Keras step, on the backend the demo chose
    assert keras_line is not None, last[1]
    assert keras_line.group(1) == demo.keras_backend() and float(keras_line.group(2)) > 0.9
    assert err.getvalue() == ""
    out = io.StringIO()
    assert cli.run(["demo", "--no-train", "--output", str(tmp_path / "e.h5")], out, err) == 0, err.getvalue()
    assert "torch:" not in out.getvalue() and "keras" not in out.getvalue() and "VALID" in out.getvalue()


def test_demo_without_torch_skips_training(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the PyTorch adapter the demo prints one line naming h5ml[torch] and still succeeds."""
    pytest.importorskip("sklearn")
    monkeypatch.setitem(sys.modules, demo.TORCH_TRAIN_MODULE, None)
    line = demo.train_torch(tmp_path / "never-read.h5")
    assert line.startswith("torch: training skipped") and line.endswith('pip install "h5ml[torch]"')
    assert "\n" not in line
    out, err = io.StringIO(), io.StringIO()
    assert cli.run(["demo", "--output", str(tmp_path / "d.h5")], out, err) == 0, err.getvalue()
    text = out.getvalue()
    skipped = [ln for ln in text.splitlines() if ln.startswith("torch:")]
    assert skipped == [line]  # printed whole on one line, even past the console width
    assert ACCURACY_LINE.search(text) is None
    assert err.getvalue() == ""


def test_keras_backend_choice(monkeypatch: pytest.MonkeyPatch) -> None:
    """The demo keeps a KERAS_BACKEND the user set, else picks the first installed of torch, jax, tensorflow."""
    monkeypatch.setenv("KERAS_BACKEND", "jax")
    assert demo.keras_backend() == "jax"
    monkeypatch.delenv("KERAS_BACKEND")
    installed = [name for name in demo.KERAS_BACKENDS if importlib.util.find_spec(name) is not None]
    assert demo.keras_backend() == (installed[0] if installed else None)
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None)
    assert demo.keras_backend() is None
    line = demo.train_keras("never-read.h5")
    assert line.startswith("keras: training skipped") and line.endswith('pip install "h5ml[keras,torch]"')
