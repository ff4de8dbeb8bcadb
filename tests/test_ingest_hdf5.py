"""Tests of h5ml.ingest.hdf5 on the tutorials' layouts (per-sample groups, x_train/y_train arrays), through the plan."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np
import pytest

import h5ml
from h5ml.ingest import SKIPPED_ATTR
from h5ml.ingest.hdf5 import SINGLE_FEATURE, convert_hdf5, plan_hdf5, take_inventory
from h5ml.ingest.hdf5 import run as hdf5_run
from h5ml.ingest.hdf5.names import array_split


def _assert_strictly_valid(path: Path) -> None:
    report = h5ml.validate(path, deep=True)
    assert report.valid_strict, [(i.code, i.message) for i in report.issues]


def _wave(split: str, i: int) -> np.ndarray:
    """The data sample ``i`` of a split: a float32 signal whose length varies with i."""
    return (np.arange(40 + 3 * i, dtype=np.float32) * 0.01 + (i if split == "train" else 100 + i)).astype(np.float32)


def _label(split: str, i: int) -> np.ndarray:
    return np.full(16, i * 0.5 + (0 if split == "train" else 1000), dtype=np.float32)


def _japanese_layout(path: Path, counts: dict[str, int], skip_label: tuple[str, int] | None = None) -> None:
    """The per-sample layout of the Japanese tutorial: /<split>_data/<i>, /<split>_label/<i>, gzip, chunks=True."""
    with h5py.File(path, "w") as h5:
        for split, n in counts.items():
            data, label = h5.create_group(f"{split}_data"), h5.create_group(f"{split}_label")
            for i in reversed(range(n)):  # created out of order: the ids are sorted, naturally
                data.create_dataset(str(i), data=_wave(split, i), compression="gzip", chunks=True)
                if (split, i) != skip_label:
                    label.create_dataset(str(i), data=_label(split, i), compression="gzip", chunks=True)


def test_array_split_names() -> None:
    assert array_split("train_data") == ("train", "data")
    assert array_split("valid_label") == ("validation", "label")
    assert array_split("testing_x") == ("test", "x")
    assert array_split("data_dev") == ("validation", "data")
    assert array_split("X_TEST") == ("test", "X")
    assert array_split("train_set_x") == ("train", "x")
    assert array_split("test") is None and array_split("images") is None
    assert array_split("train_test") is None  # two split words: not guessed


def test_per_sample_layout_round_trip_with_workers(tmp_path: Path) -> None:
    src, out = tmp_path / "dataset.hdf5", tmp_path / "dataset.h5"
    _japanese_layout(src, {"train": 12, "test": 5})
    with h5py.File(src, "a") as h5:
        h5.attrs["description"] = "waves"
        h5.attrs["sample_rate"] = 32000
    plan = plan_hdf5(src)
    assert [(p.kind, p.path) for f in plan.splits[0].features for p in f.parts] == [
        ("records", "/train_data/*"),
        ("records", "/train_label/*"),
        ("ids", "/train_data/*"),
    ]
    # Two worker processes, each opening the file by path; run in a child with a time limit (a pool could hang).
    child = (
        "import json, sys; from h5ml.ingest.hdf5 import convert_hdf5; "
        "r = convert_hdf5(sys.argv[1], sys.argv[2], workers=2, processes=True, compression='gzip', progress=False); "
        "print(json.dumps({'samples': r.samples, 'skipped': len(r.skipped)}))"
    )
    done = subprocess.run(
        [sys.executable, "-c", child, str(src), str(out)], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"samples": {"train": 12, "test": 5}, "skipped": 0}
    with h5ml.open(out) as ds:
        assert ds.attrs["description"] == "waves" and ds.attrs["sample_rate"] == 32000
        assert ds.attrs["source"] == str(src)
        for split, n in (("train", 12), ("test", 5)):
            part = ds[split]
            assert list(part["id"][:]) == [str(i) for i in range(n)]  # natural order: 2 before 10
            assert part["id"].role == "metadata"
            assert part["data"].encoding == "ragged" and part["data"].role == "input"
            assert part["label"].encoding == "dense" and part["label"].role == "target"
            assert part["data"].dtype == np.float32
            waves = part["data"][:]
            for i in range(n):
                np.testing.assert_array_equal(waves[i], _wave(split, i))
            np.testing.assert_array_equal(part["label"][:], np.stack([_label(split, i) for i in range(n)]))
    _assert_strictly_valid(out)


def test_per_sample_nested_layouts_aliases_and_strings(tmp_path: Path) -> None:
    """``<split>/<feature>/<id>`` and ``<split>/<id>`` nestings, ``valid`` -> validation, scalar strings and labels."""
    src = tmp_path / "nested.h5"
    with h5py.File(src, "w") as h5:
        for i in range(3):
            h5[f"train/image/{i}"] = np.full((2, 2), i, dtype=np.uint8)
            h5[f"train/caption/{i}"] = f"caption {i}"
            h5[f"train/y/{i}"] = np.int64(i % 2)
            h5[f"valid/image/{i + 10}"] = np.full((2, 2), 50 + i, dtype=np.uint8)
            h5[f"valid/caption/{i + 10}"] = f"légende {i}"
            h5[f"valid/y/{i + 10}"] = np.int64(1)
    convert_hdf5(src, tmp_path / "nested_out.h5", id_feature="key")
    with h5ml.open(tmp_path / "nested_out.h5") as ds:
        assert sorted(ds) == ["train", "validation"]
        valid = ds["validation"]
        assert valid["caption"].encoding == "string" and list(valid["caption"][:]) == [f"légende {i}" for i in range(3)]
        assert valid["image"].encoding == "dense" and valid["image"][:].shape == (3, 2, 2)
        np.testing.assert_array_equal(valid["image"][:][:, 0, 0], [50, 51, 52])
        np.testing.assert_array_equal(ds["train"]["y"][:], [0, 1, 0])
        assert ds["train"]["y"].role == "target" and list(valid["key"][:]) == ["10", "11", "12"]
    _assert_strictly_valid(tmp_path / "nested_out.h5")

    single = tmp_path / "single.h5"
    with h5py.File(single, "w") as h5:
        for i in range(4):
            h5[f"test/{i}"] = np.arange(i + 1, dtype=np.float64)
    convert_hdf5(single, tmp_path / "single_out.h5", id_feature=None)
    with h5ml.open(tmp_path / "single_out.h5") as ds:
        assert list(ds["test"].features) == [SINGLE_FEATURE]
        assert [w.tolist() for w in ds["test"]["data"][:]] == [list(map(float, range(k + 1))) for k in range(4)]


def test_sample_missing_its_label_stop_and_skip(tmp_path: Path) -> None:
    src, out = tmp_path / "missing.hdf5", tmp_path / "missing.h5"
    _japanese_layout(src, {"train": 6, "test": 2}, skip_label=("train", 3))
    expected = r"missing\.hdf5:/train_data/3: sample '3' of split 'train' has no 'label': /train_label/3 does not exist"
    with pytest.raises(h5ml.IngestError, match=expected) as info:
        convert_hdf5(src, out)
    assert info.value.path == str(src) and info.value.hdf5_path == "/train_data/3"
    assert not out.exists()

    report = convert_hdf5(src, out, on_error="skip")
    assert report.samples == {"train": 5, "test": 2}
    assert [s.path for s in report.skipped] == [f"{src}:/train_data/3"]
    with h5ml.open(out) as ds:
        assert list(ds["train"]["id"][:]) == ["0", "1", "2", "4", "5"]
        np.testing.assert_array_equal(ds["train"]["data"][3], _wave("train", 4))
        assert json.loads(ds.attrs[SKIPPED_ATTR]) == [s.to_json() for s in report.skipped]
    _assert_strictly_valid(out)


def test_label_names_the_target_of_the_per_sample_layout(tmp_path: Path) -> None:
    """--label names the label feature in every layout; a name that is no feature is refused, not ignored."""
    from h5ml.errors import ParameterError

    src, out = tmp_path / "tut.hdf5", tmp_path / "tut.h5"
    _japanese_layout(src, {"train": 2})
    convert_hdf5(src, out, label="data")
    with h5ml.open(out) as ds:
        assert ds["train"]["data"].role == "target"
    with pytest.raises(ParameterError, match=r"label 'y' names no feature; the features: \['data', 'label'\]"):
        convert_hdf5(src, tmp_path / "o2.h5", label="y")


@pytest.mark.parametrize("on_error", ["stop", "skip"])
def test_not_an_hdf5_file(tmp_path: Path, on_error: str) -> None:
    src, out = tmp_path / "notes.h5", tmp_path / "out.h5"
    src.write_text("x_train,y_train\n1,2\n")
    with pytest.raises(h5ml.IngestError, match=r"notes\.h5: not an HDF5 file"):
        convert_hdf5(src, out, on_error=on_error)  # type: ignore[arg-type]
    assert not out.exists()
    with pytest.raises(FileNotFoundError, match="no such file"):
        convert_hdf5(tmp_path / "absent.h5", out)


def _french_layout(path: Path, y_train: np.ndarray, chunked: bool = False) -> tuple[np.ndarray, ...]:
    """The arrays layout of the French tutorial: x_train, y_train, x_valid, y_valid, description and nb_classes."""
    rng = np.random.default_rng(0)
    x_train = rng.random((len(y_train), 28, 28, 1)).astype("float32")
    x_valid = rng.random((7, 28, 28, 1)).astype("float32")
    y_valid = rng.integers(0, 10, size=(7,), dtype="int32")
    with h5py.File(path, "w") as f:
        options = {"chunks": (8, 28, 28, 1), "compression": "gzip"} if chunked else {"compression": "gzip"}
        f.create_dataset("x_train", data=x_train, **options)
        f.create_dataset("y_train", data=y_train, chunks=(8,) if chunked else None)
        f.create_dataset("x_valid", data=x_valid)
        f.create_dataset("y_valid", data=y_valid)
        f.attrs["description"] = "Jeu de données de démonstration pour Keras"
        f.attrs["nb_classes"] = 10
        f.attrs["name"] = "démo"  # a §4.2 name: kept as source:name
        f.attrs["auteur"] = np.bytes_(b"Marie")
    return x_train, y_train, x_valid, y_valid


def test_arrays_layout_round_trip_in_blocks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    src, out = tmp_path / "dataset.h5", tmp_path / "converted.h5"
    y = np.random.default_rng(1).integers(0, 10, size=(50,)).astype("float32")  # as `shape=(50000)` makes them
    x_train, y_train, x_valid, y_valid = _french_layout(src, y, chunked=True)
    monkeypatch.setattr(hdf5_run, "BLOCK_BYTES", 20_000)  # several blocks of whole chunks
    report = convert_hdf5(src, out)
    assert report.samples == {"train": 50, "validation": 7}
    with h5ml.open(out) as ds:
        assert ds.attrs["description"] == "Jeu de données de démonstration pour Keras"
        assert ds.attrs["nb_classes"] == 10 and ds.attrs["source:name"] == "démo" and ds.attrs["auteur"] == "Marie"
        assert ds.attrs["license"] == "NOASSERTION"
        train, valid = ds["train"], ds["validation"]
        assert train["x"].role == "input" and train["y"].role == "target"
        assert train["y"].encoding == "categorical" and train["y"].class_names == [str(k) for k in range(10)]
        np.testing.assert_array_equal(train["x"][:], x_train)
        np.testing.assert_array_equal(valid["x"][:], x_valid)
        np.testing.assert_array_equal(train["y"][:], y_train.astype(np.int64))
        np.testing.assert_array_equal(valid["y"][:], y_valid)
    _assert_strictly_valid(out)


def test_arrays_layout_block_rows_are_whole_chunks(tmp_path: Path) -> None:
    from h5ml.ingest.hdf5.plan import Part

    with h5py.File(tmp_path / "c.h5", "w") as f:
        f.create_dataset("x", shape=(10_000, 1000), dtype="f4", chunks=(100, 1000))
        f.create_dataset("y", shape=(10_000, 1000), dtype="f4")
    inv = take_inventory(tmp_path / "c.h5")
    chunked, plain = (Part(source=inv.source, path=p) for p in ("/x", "/y"))
    assert hdf5_run._block_rows(inv, chunked, shuffle=False) == 2000  # 8 MiB / 4000 B = 2097 rows -> 20 chunks
    assert hdf5_run._block_rows(inv, plain, shuffle=False) == 2097
    assert hdf5_run._block_rows(inv, chunked, shuffle=True) == 1


def test_arrays_layout_label_out_of_range_stop_and_skip(tmp_path: Path) -> None:
    src, out = tmp_path / "bad_y.h5", tmp_path / "out.h5"
    y = np.array([1, 2, 3, 12, 4, 5, -3, 6], dtype="int32")
    x_train, *_ = _french_layout(src, y)
    expected = r"bad_y\.h5:/y_train\[3\]: 12 is not a code of the 10 class names of 'y' \(codes 0 to 9, -1 marks a missing label"
    with pytest.raises(h5ml.IngestError, match=expected):
        convert_hdf5(src, out)
    assert not out.exists()

    report = convert_hdf5(src, out, on_error="skip", shuffle=True, seed=4)
    assert [s.path for s in report.skipped] == [f"{src}:/y_train[3]", f"{src}:/y_train[6]"]
    assert report.samples == {"train": 6, "validation": 7}
    # Bad rows are found while decoding, after the seeded order of all 8 rows: that order minus the bad rows is
    # stored, and no shuffle_seed is recorded (it would not reproduce the stored order, §7.6).
    order = [int(i) for i in np.random.default_rng(4).permutation(8) if i not in (3, 6)]
    with h5ml.open(out) as ds:
        assert ds["train"].shuffle_seed is None
        np.testing.assert_array_equal(ds["train"]["y"][:], y[order])
        np.testing.assert_array_equal(ds["train"]["x"][:], x_train[order])
        assert json.loads(ds.attrs[SKIPPED_ATTR])[0]["reason"].startswith("12 is not a code")
    _assert_strictly_valid(out)


def test_mixed_layout_is_asked_about_and_h5ml_is_refused(tmp_path: Path) -> None:
    """Arrays beside a group of samples in one split are not guessed: the plan asks, and converting refuses."""
    mixed = tmp_path / "mixed.h5"
    with h5py.File(mixed, "w") as f:
        f["x_train"] = np.zeros((2, 2))
        f.create_group("train_label")["0"] = np.zeros(2)
    plan = plan_hdf5(mixed)
    assert any("split 'train' (from train_label) has both groups and arrays" in c for c in plan.confirm), plan.confirm
    with pytest.raises(h5ml.IngestError, match=r"the plan needs \d decision\(s\) before converting"):
        convert_hdf5(mixed, tmp_path / "out.h5")
    h5ml.write(tmp_path / "done.h5", {"train": {"x": np.zeros((2, 2))}})
    with pytest.raises(h5ml.IngestError, match="already an h5ml file"):
        plan_hdf5(tmp_path / "done.h5")
    assert not (tmp_path / "out.h5").exists()


def test_arrays_layout_refuses_a_label_that_names_no_array(tmp_path: Path) -> None:
    """A label given on purpose that names no array of the file is refused (it used to be ignored, exit 0)."""
    from h5ml.errors import ParameterError

    src, out = tmp_path / "d.h5", tmp_path / "o.h5"
    _french_layout(src, np.arange(8, dtype="int32") % 10)
    with pytest.raises(ParameterError, match=r"label 'nope' names no feature; the features: \['x', 'y'\]"):
        convert_hdf5(src, out, label="nope")
    assert not out.exists()
    assert convert_hdf5(src, out, label="y").samples == {"train": 8, "validation": 7}
