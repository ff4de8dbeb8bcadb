"""The scikit-learn digits demo: :mod:`h5ml.demo` and ``h5ml demo``."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import numpy as np
import pytest

import h5ml
from h5ml import cli, demo
from h5ml.validator import validate


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
