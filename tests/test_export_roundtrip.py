"""Round trips through the exports and back: ``h5ml export`` then ``h5ml convert`` gives the same features (§6).

Every feature attribute (encoding, dtype, sample shape, role, description,
units, sample rate, media type, class names, the fingerprint and statistics
that follow from the values) and every value comes back, for ``.npz`` and for
Parquet, run through the real command line.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import h5ml
from h5ml.tools import cli

CLASSES = ["cat", "dog", "emu"]
#: What the reader tells of a feature, besides its HDF5 attributes.
PROPERTIES = ("encoding", "dtype", "sample_shape", "role", "description", "units", "sample_rate", "media_type")


def run_cli(*args: str) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    code = cli.run(list(args), out, err)
    return code, out.getvalue() + err.getvalue()


def _split(n: int, seed: int) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    return {
        "image": rng.random((n, 2, 3), dtype=np.float32),  # a name with no conventional role
        "x": rng.integers(0, 9, n).astype(np.int16),  # a conventional name, stored without a role
        "flag": rng.random(n) > 0.5,
        "label": h5ml.Categorical(rng.integers(-1, 3, n), CLASSES),  # -1: missing
        "note": [f"row {seed}.{i} é" for i in range(n)],
        "signal": [rng.random((i % 4 + 1, 2)).astype(np.float32) for i in range(n)],
        "grid": [rng.integers(0, 9, (i % 2 + 1, i % 3 + 1)).astype(np.int16) for i in range(n)],
        "blob": [bytes([i % 256]) * (i % 5) for i in range(n)],
    }


@pytest.fixture
def source(tmp_path: Path) -> Path:
    return h5ml.write(
        tmp_path / "source.h5",
        {"train": _split(12, 0), "test": _split(5, 1)},
        metadata={"description": "round trip", "license": "CC0-1.0"},
        features={
            "image": {"role": "input", "units": "m", "description": "a 2x3 patch"},
            "flag": {"role": "metadata"},
            "label": {"role": "target", "description": "the animal"},
            "note": {"role": "metadata", "description": "free text"},
            "signal": {"role": "input", "units": "V", "sample_rate": 50.0},
            "grid": {"role": "input"},
            "blob": {"media_type": "image/png", "role": "input"},
        },
    )


def _same_features(original: Path, back: Path) -> None:
    """Every split, feature, reader property, HDF5 attribute and value of ``back`` is that of ``original``."""
    with h5ml.open(original) as before, h5ml.open(back) as after:
        assert sorted(after.splits) == sorted(before.splits)
        for split in before.splits:
            assert list(after[split].features) == list(before[split].features)
            for name, feature in before[split].features.items():
                got = after[split][name]
                for prop in PROPERTIES:
                    assert getattr(got, prop) == getattr(feature, prop), (split, name, prop)
                assert got.class_names == feature.class_names
                assert dict(got.attrs) == dict(feature.attrs), (split, name)  # roles, units, ..., fingerprints
                expected, values = feature[:], got[:]
                if feature.encoding in ("ragged", "bytes", "string"):
                    assert len(values) == len(expected)
                    for a, b in zip(values, expected, strict=True):
                        assert np.array_equal(a, b) if feature.encoding == "ragged" else a == b
                        if feature.encoding == "ragged":
                            assert a.dtype == b.dtype and a.shape == b.shape
                else:
                    assert values.dtype == expected.dtype and np.array_equal(values, expected)
    report = h5ml.validate(back, deep=True)
    assert report.valid_strict, [(i.code, i.message) for i in report.issues]


def test_npz_export_and_convert_round_trip_every_feature_attribute(source: Path, tmp_path: Path) -> None:
    """h5ml export --format npz, then h5ml convert x.npz: the roles (input, target, metadata, none), descriptions,
    units, sample rates, media types and class names come back with the values; x, stored without a role, gets
    none from its conventional name (it had none)."""
    npz, back = tmp_path / "x.npz", tmp_path / "back.h5"
    code, said = run_cli("export", str(source), str(npz), "--format", "npz")
    assert code == 0, said
    with np.load(npz) as archive:
        assert archive["image_train_attrs"].item() == '{"role": "input", "description": "a 2x3 patch", "units": "m"}'
        assert archive["x_test_attrs"].item() == "{}"
    code, said = run_cli("convert", str(npz), str(back), "--license", "CC0-1.0")
    assert code == 0, said
    _same_features(source, back)
    with h5ml.open(back) as ds:
        assert ds["train"]["image"].role == "input" and ds["train"]["x"].role is None


def test_npz_attrs_are_checked_and_label_wins(tmp_path: Path) -> None:
    """An _attrs array beside its values that is not a JSON object of valid attributes is refused, naming it;
    --label makes its feature the target whatever role the archive records."""
    npz = tmp_path / "a.npz"
    np.savez(npz, x_train=np.zeros((3, 2)), x_train_attrs=np.asarray('{"role": "output"}'))
    code, said = run_cli("convert", str(npz), str(tmp_path / "a.h5"))
    assert code != 0 and "array 'x_train_attrs' (the attributes of 'x_train'): role 'output' is not one of" in said
    np.savez(npz, x_train=np.zeros((3, 2)), x_train_attrs=np.asarray("not json"))
    code, said = run_cli("convert", str(npz), str(tmp_path / "a.h5"))
    assert code != 0 and "array 'x_train_attrs' (the attributes of 'x_train') is not JSON" in said
    np.savez(npz, x_train=np.zeros((3, 2)), y_train=np.array([0, 1, 0]), y_train_attrs=np.asarray('{"role": "input"}'))
    code, said = run_cli("convert", str(npz), str(tmp_path / "a.h5"), "--label", "y")
    assert code == 0, said
    with h5ml.open(tmp_path / "a.h5") as ds:
        assert ds["train"]["y"].role == "target" and ds["train"]["x"].role == "input"
