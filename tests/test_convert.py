"""NumPy .npz/.npy to h5ml: :mod:`h5ml.ingest.npz` (names §5.1, roles §6.1, categorical §6.5, shuffle §7.6)."""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import h5ml
from h5ml.errors import EncodingError
from h5ml.ingest.naming import split_array_name
from h5ml.ingest.npz import convert_npy, convert_npz
from h5ml.tools import cli
from h5ml.validator.runner import validate


def tutorial_npz(path: Path, *, n_train: int = 1000, n_valid: int = 200) -> dict[str, np.ndarray]:
    """The layout of the French Keras tutorial: x_train (N, 28, 28, 1) float32, y_train int32, x_valid, y_valid."""
    rng = np.random.default_rng(42)
    arrays = {
        "x_train": rng.random((n_train, 28, 28, 1), dtype=np.float32),
        "y_train": rng.integers(0, 10, n_train).astype(np.int32),
        "x_valid": rng.random((n_valid, 28, 28, 1), dtype=np.float32),
        "y_valid": rng.integers(0, 10, n_valid).astype(np.int32),
    }
    np.savez(path, **arrays)  # type: ignore[arg-type]
    return arrays


def issue_codes(path: Path) -> list[str]:
    return validate(path, timeout=120).codes


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("x_train", ("train", "x")),
        ("y_valid", ("validation", "y")),
        ("x_val", ("validation", "x")),
        ("image_dev", ("validation", "image")),
        ("label_test", ("test", "label")),
        ("my_feature_training", ("train", "my_feature")),
        ("images", ("train", "images")),
        ("x_eval", ("test", "x")),  # eval: the alias SPEC §5.1 gives test
        ("_test", ("train", "_test")),
    ],
)
def test_split_array_name(name: str, expected: tuple[str, str]) -> None:
    """Array names map to (split, feature); unknown suffixes keep the whole name in split train (§5.1)."""
    assert split_array_name(name) == expected


def test_tutorial_layout_without_shuffle(tmp_path: Path) -> None:
    """x/y become splits train and validation with roles input/target; values equal exactly."""
    arrays = tutorial_npz(tmp_path / "mnist.npz")
    report = convert_npz(
        tmp_path / "mnist.npz",
        tmp_path / "mnist.h5",
        shuffle=False,
        metadata={"description": "tutorial digits", "license": "CC0-1.0"},
    )
    out = report.output
    assert out == tmp_path / "mnist.h5" and report.samples == {"train": 1000, "validation": 200}
    codes = issue_codes(out)
    assert [c for c in codes if not c.startswith("I")] == []
    assert set(codes) <= {"I303", "I300"}  # not shuffled; the record of source splits (a user attribute, §4.7)
    with h5ml.open(out) as ds:
        assert sorted(ds.splits) == ["train", "validation"]
        assert ds.metadata.name == "mnist" and ds.metadata.source == "mnist.npz"
        for split, suffix in (("train", "train"), ("validation", "valid")):
            x, y = ds[split]["x"], ds[split]["y"]
            assert (x.encoding, x.role, y.encoding, y.role) == ("dense", "input", "dense", "target")
            assert x.dtype == np.float32 and y.dtype == np.int32
            np.testing.assert_array_equal(x[:], arrays[f"x_{suffix}"])
            np.testing.assert_array_equal(y[:], arrays[f"y_{suffix}"])


def test_tutorial_layout_shuffled_through_cli(tmp_path: Path) -> None:
    """§7.6: with shuffle the stored order is default_rng(shuffle_seed).permutation(N) of the source."""
    arrays = tutorial_npz(tmp_path / "mnist.npz")
    out, err = io.StringIO(), io.StringIO()
    args = [
        "convert",
        str(tmp_path / "mnist.npz"),
        str(tmp_path / "mnist.h5"),
        "--shuffle",
        "--seed",
        "17",
        "--compression",
        "gzip",
        "--label",
        "y",
        "--name",
        "mnist-small",
        "--description",
        "random digits",
        "--license",
        "CC-BY-4.0",
        "--level",
        "1",
    ]
    assert cli.run(args, out, err) == 0, err.getvalue()
    path = tmp_path / "mnist.h5"
    assert issue_codes(path) == ["I300"]  # the record of source splits, h5ml-ingest:source-splits (§4.7)
    with h5ml.open(path) as ds:
        assert ds.metadata.name == "mnist-small" and ds.metadata.license == "CC-BY-4.0"
        assert list(ds.metadata.extra) == ["h5ml-ingest:source-splits"]
        for split, suffix in (("train", "train"), ("validation", "valid")):
            seed = ds[split].shuffle_seed
            assert seed == 17
            order = np.random.default_rng(seed).permutation(len(arrays[f"y_{suffix}"]))
            np.testing.assert_array_equal(ds[split]["x"][:], arrays[f"x_{suffix}"][order])
            label = ds[split]["y"]
            assert label.encoding == "categorical" and label.role == "target"
            assert label.class_names == [str(k) for k in range(10)]
            np.testing.assert_array_equal(label[:], arrays[f"y_{suffix}"][order])
        assert ds["train"]["x"].compression == "gzip"


def test_class_names_and_label_checks(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    source = tmp_path / "d.npz"
    np.savez(source, x_test=rng.random((6, 2)), y_test=np.array([0, 1, 2, -1, 1, 0]))
    out = convert_npz(source, tmp_path / "d.h5", label="y", class_names=["a", "b", "c"], shuffle=True, seed=1).output
    with h5ml.open(out) as ds:
        assert list(ds.splits) == ["test"]
        assert ds["test"]["y"].class_names == ["a", "b", "c"]
        assert sorted(ds["test"]["y"][:].tolist()) == [-1, 0, 0, 1, 1, 2]
    bad: list[tuple[dict[str, Any], str]] = [
        ({"label": "y", "class_names": ["a", "b"]}, "code 2 but only 2 class names"),
        ({"label": "y", "class_names": ["a", "a", "b"]}, "unique"),
        ({"label": "x"}, "integer class codes"),
        ({"label": "z"}, "names no feature"),
        ({"class_names": ["a"]}, "without a label"),
    ]
    for options, message in bad:
        target = tmp_path / "bad.h5"
        with pytest.raises(EncodingError, match=message):
            convert_npz(source, target, **options)
        assert not target.exists()


def write_pickled(path: Path) -> None:
    np.savez(path, x_train=np.zeros((3, 2)), meta_train=np.array([{"a": 1}, None, 3], dtype=object))


def write_mismatched(path: Path) -> None:
    np.savez(path, x_train=np.zeros((5, 2)), y_train=np.zeros(4))


def write_not_npz(path: Path) -> None:
    path.write_bytes(b"these bytes are not a zip archive")


def write_complex(path: Path) -> None:
    np.savez(path, x_train=np.zeros(3, dtype=np.complex64))


def write_scalar(path: Path) -> None:
    np.savez(path, x_train=np.float32(1.0))


def write_clash(path: Path) -> None:
    np.savez(path, x_train=np.zeros(2), x_training=np.zeros(2))


def write_bad_name(path: Path) -> None:
    arrays: dict[str, Any] = {".hidden": np.zeros(2)}
    np.savez(path, **arrays)


@pytest.mark.parametrize(
    ("builder", "message"),
    [
        (write_pickled, r"array 'meta_train'.*pickle"),
        (write_mismatched, r"'x_train' has 5, 'y_train' has 4"),
        (write_not_npz, r"not an \.npz archive"),
        (write_complex, r"array 'x_train' has dtype complex64"),
        (write_scalar, r"array 'x_train' is a scalar"),
        (write_clash, r"'x_train' and 'x_training' both map to feature 'x'"),
        (write_bad_name, r"array '\.hidden'.*naming rule"),
    ],
    ids=lambda v: getattr(v, "__name__", ""),
)
def test_bad_npz_names_file_and_array_and_leaves_no_output(builder: Any, message: str, tmp_path: Path) -> None:
    source = tmp_path / "bad.npz"
    builder(source)
    target = tmp_path / "out.h5"
    with pytest.raises(EncodingError, match=message) as info:
        convert_npz(source, target)
    assert str(source) in str(info.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.npz"]  # no output, no temporary file
    out, err = io.StringIO(), io.StringIO()
    assert cli.run(["convert", str(source), str(target)], out, err) == 2
    assert err.getvalue().startswith("h5ml: error: ") and err.getvalue().count("\n") == 1
    assert "Traceback" not in err.getvalue()
    assert not target.exists()


def test_existing_output_is_kept_unless_overwrite(tmp_path: Path) -> None:
    source = tmp_path / "d.npz"
    np.savez(source, x_train=np.arange(4.0))
    target = tmp_path / "d.h5"
    target.write_bytes(b"previous content")
    with pytest.raises(FileExistsError, match="overwrite"):
        convert_npz(source, target)
    assert target.read_bytes() == b"previous content"
    convert_npz(source, target, overwrite=True, shuffle=False)
    with h5ml.open(target) as ds:
        np.testing.assert_array_equal(ds["train"]["x"][:], np.arange(4.0))


def test_missing_source(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="no such file"):
        convert_npz(tmp_path / "none.npz", tmp_path / "o.h5")
    with pytest.raises(FileNotFoundError, match="no such file"):
        convert_npy(tmp_path / "none.npy", tmp_path / "o.h5")


@pytest.fixture
def npy(tmp_path: Path) -> Iterator[tuple[Path, np.ndarray]]:
    array = np.random.default_rng(8).integers(0, 255, (50, 6, 3), dtype=np.uint8)
    np.save(tmp_path / "pixels.npy", array)
    yield tmp_path / "pixels.npy", array


def test_npy_defaults_and_names(npy: tuple[Path, np.ndarray], tmp_path: Path) -> None:
    """One array: split train, feature named after the stem; or the split/feature given."""
    source, array = npy
    out = convert_npy(source, tmp_path / "a.h5", shuffle=False, compression=None).output
    with h5ml.open(out) as ds:
        assert list(ds.splits) == ["train"]
        feature = ds["train"]["pixels"]
        assert feature.compression is None
        np.testing.assert_array_equal(feature[:], array)
    err = io.StringIO()
    args = ["convert", str(source), str(tmp_path / "b.h5"), "--split", "test", "--feature", "img", "--no-shuffle"]
    assert cli.run([*args, "--compression", "none"], io.StringIO(), err) == 0, err.getvalue()
    with h5ml.open(tmp_path / "b.h5") as ds:
        np.testing.assert_array_equal(ds["test"]["img"][:], array)


def test_npy_refusals(tmp_path: Path) -> None:
    np.save(tmp_path / "obj.npy", np.array([{"a": 1}, 2], dtype=object), allow_pickle=True)
    with pytest.raises(EncodingError, match=r"'obj.npy'.*pickled"):
        convert_npy(tmp_path / "obj.npy", tmp_path / "o.h5")
    (tmp_path / "junk.npy").write_bytes(b"not numpy")
    with pytest.raises(EncodingError, match=r"junk\.npy"):
        convert_npy(tmp_path / "junk.npy", tmp_path / "o.h5")
    np.savez(tmp_path / "arch.npz", a=np.zeros(2))
    (tmp_path / "arch.npz").rename(tmp_path / "arch.npy")
    with pytest.raises(EncodingError, match="archive"):
        convert_npy(tmp_path / "arch.npy", tmp_path / "o.h5")
    np.save(tmp_path / "ok.npy", np.zeros(3))
    with pytest.raises(EncodingError, match="naming rule"):
        convert_npy(tmp_path / "ok.npy", tmp_path / "o.h5", feature="a/b")
    assert not (tmp_path / "o.h5").exists()


def test_string_and_bool_arrays(tmp_path: Path) -> None:
    source = tmp_path / "mixed.npz"
    np.savez(source, word_train=np.array(["é", "b", "c"]), flag_train=np.array([True, False, True]))
    out = convert_npz(source, tmp_path / "m.h5", shuffle=False).output
    with h5ml.open(out) as ds:
        assert ds["train"]["word"].encoding == "string"
        assert ds["train"]["word"][:].tolist() == ["é", "b", "c"]
        assert ds["train"]["flag"].dtype == np.bool_
        assert ds["train"]["flag"][:].tolist() == [True, False, True]


def test_output_equal_to_source_is_refused_even_with_overwrite(tmp_path: Path) -> None:
    """The source is never destroyed: converting a file onto itself is refused."""
    source = tmp_path / "data.npz"
    tutorial_npz(source, n_train=20, n_valid=5)
    before = source.read_bytes()
    with pytest.raises(FileExistsError, match="the output is the source itself"):
        convert_npz(source, source, overwrite=True)
    err = io.StringIO()
    assert cli.run(["convert", str(source), str(source), "--overwrite"], io.StringIO(), err) == 2
    assert "the output is the source itself" in err.getvalue()
    assert source.read_bytes() == before


def test_npz_member_declaring_more_data_than_it_holds_is_refused(tmp_path: Path) -> None:
    """§10.4: a crafted .npy header declaring terabytes gives a clear error, not a MemoryError."""
    import zipfile

    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(header, {"descr": "<f8", "fortran_order": False, "shape": (10**12,)})
    source = tmp_path / "bomb.npz"
    with zipfile.ZipFile(source, "w") as zf:
        zf.writestr("x_train.npy", header.getvalue() + b"\x00" * 64)
    target = tmp_path / "bomb.h5"
    with pytest.raises(EncodingError, match=r"declares an array of shape \(1000000000000,\)"):
        convert_npz(source, target)
    assert not target.exists()


def test_empty_name_is_refused_not_replaced(tmp_path: Path) -> None:
    """§4.2: name is a non-empty string; an empty --name is an error, not silently the file stem."""
    source = tmp_path / "data.npz"
    tutorial_npz(source, n_train=10, n_valid=5)
    err = io.StringIO()
    assert cli.run(["convert", str(source), str(tmp_path / "o.h5"), "--name", ""], io.StringIO(), err) == 2
    assert "name" in err.getvalue()
    assert not (tmp_path / "o.h5").exists()


def test_seed_alone_turns_shuffle_on(tmp_path: Path) -> None:
    """§7.6: --seed N without --shuffle shuffles with that seed and records it."""
    source = tmp_path / "data.npz"
    arrays = tutorial_npz(source, n_train=30, n_valid=10)
    err = io.StringIO()
    assert cli.run(["convert", str(source), str(tmp_path / "s.h5"), "--seed", "5"], io.StringIO(), err) == 0
    with h5ml.open(tmp_path / "s.h5") as ds:
        assert ds["train"].shuffle_seed == 5
        order = np.random.default_rng(5).permutation(30)
        np.testing.assert_array_equal(ds["train"]["x"][:], arrays["x_train"][order])


def test_converted_arrays_pass_strict_validation(tmp_path: Path) -> None:
    """§4.2: an .npz conversion states a license (NOASSERTION unless given) and a description: no W203/W204."""
    source = tmp_path / "arrays.npz"
    np.savez(source, x_train=np.arange(12.0).reshape(6, 2), y_train=np.array([0, 1, 2, 0, 1, 2]))
    out = convert_npz(source, tmp_path / "a.h5", label="y").output
    report = h5ml.validate(out, deep=True)
    assert report.valid_strict, [(i.code, i.message) for i in report.issues]
    with h5ml.open(out) as ds:
        assert ds.metadata.license == "NOASSERTION" and ds.metadata.description.startswith("Converted from NumPy")
    metadata = {"license": "CC-BY-4.0", "description": "Six samples."}
    given = convert_npz(source, tmp_path / "b.h5", metadata=metadata, overwrite=True).output
    with h5ml.open(given) as ds:
        assert (ds.metadata.license, ds.metadata.description) == ("CC-BY-4.0", "Six samples.")


def test_the_tutorials_scalar_metadata_becomes_description_and_classes(tmp_path: Path) -> None:
    """§4.2, §6.5: an .npz with the scalars description and nb_classes, as the tutorial stores them beside
    x_train/y_train/x_valid/y_valid: the description is kept and y is categorical with classes "0".."K-1"."""
    rng = np.random.default_rng(5)
    source = tmp_path / "tutorial.npz"
    arrays = {
        "x_train": rng.random((8, 4)).astype(np.float32),
        "y_train": np.array([0, 1, 2, 1, 0, 2, 2, 1]),
        "x_valid": rng.random((3, 4)).astype(np.float32),
        "y_valid": np.array([2, 0, 1]),
    }
    np.savez(source, description=np.array("Eight toy samples."), nb_classes=np.array(3), **arrays)  # type: ignore[arg-type]
    out = convert_npz(source, tmp_path / "t.h5").output
    with h5ml.open(out) as ds:
        assert ds.metadata.description == "Eight toy samples."
        assert sorted(ds.splits) == ["train", "validation"]
        y = ds["train"]["y"]
        assert y.encoding == "categorical" and list(y.class_names) == ["0", "1", "2"]
        assert ds["validation"]["y"][:].tolist() == [2, 0, 1]
        np.testing.assert_array_equal(ds["train"]["x"][:], arrays["x_train"])
    assert h5ml.validate(out, deep=True).valid_strict

    bad = {
        "no label": ({"nb_classes": np.array(3), "x_train": np.zeros((2, 2))}, "gives 3 classes but has no array y"),
        "not whole": ({"num_classes": np.array(2.5), **arrays}, "is not a whole number of classes"),
        "disagree": ({"nb_classes": np.array(3), "n_classes": np.array(4), **arrays}, "disagree on the number"),
        "number": ({"description": np.array(7), **arrays}, "'description' is a int64 number, not text"),
        "other": ({"version": np.array(2), **arrays}, "Scalars named 'description' or nb_classes"),
    }
    for case, (content, message) in bad.items():
        path = tmp_path / f"{case}.npz"
        np.savez(path, **content)  # type: ignore[arg-type]
        with pytest.raises(h5ml.H5MLError, match=message):
            convert_npz(path, tmp_path / f"{case}.h5")
        assert not (tmp_path / f"{case}.h5").exists()
