"""Export to .npz and Parquet: :mod:`h5ml.ingest.export` (array names of h5ml.ingest.npz, encodings §6)."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import h5ml
from h5ml.ingest.edit import batches
from h5ml.ingest.export import export_npz, export_parquet
from h5ml.ingest.npz import convert_npz

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

CLASSES = ["cat", "dog", "bird"]


def columns(n: int, seed: int) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    return {
        "x": rng.random((n, 2, 3), dtype=np.float32),
        "y": rng.integers(0, 10, n).astype(np.int32),
        "flag": rng.random(n) > 0.5,
        "label": h5ml.Categorical(rng.integers(-1, 3, n), CLASSES),
        "text": [f"row {seed}.{i} é中" if i % 4 else "" for i in range(n)],
        "seq": [rng.random((i % 4, 2)).astype(np.float32) for i in range(n)],
        "grid": [rng.integers(0, 9, (i % 2 + 1, i % 3 + 1)).astype(np.int16) for i in range(n)],
        "blob": [bytes([i % 256]) * (i % 5) for i in range(n)],
    }


@pytest.fixture
def source(tmp_path: Path) -> Path:
    splits = {"train": columns(30, 0), "validation": columns(7, 1), "test": columns(5, 2)}
    return h5ml.write(
        tmp_path / "source.h5",
        splits,
        metadata={"description": "export test", "license": "CC0-1.0"},
        features={"blob": {"media_type": "image/png"}, "seq": {"units": "V", "sample_rate": 50.0}},
    )


def read_all(path: Path) -> dict[str, dict[str, Any]]:
    with h5ml.open(path) as ds:
        return {name: ds[name][:] for name in ds.splits}


def test_npz_arrays_follow_the_documented_names(source: Path, tmp_path: Path) -> None:
    """dense/str arrays, categorical codes + class names, ragged and bytes as values + offsets (+ shapes)."""
    out = export_npz(source, tmp_path / "all.npz")
    data = read_all(source)
    with np.load(out) as archive:
        names = set(archive.files)
        for split, values in data.items():
            np.testing.assert_array_equal(archive[f"x_{split}"], values["x"])
            assert archive[f"x_{split}"].dtype == np.float32 and archive[f"flag_{split}"].dtype == np.bool_
            np.testing.assert_array_equal(archive[f"flag_{split}"], values["flag"])
            np.testing.assert_array_equal(archive[f"label_{split}"], values["label"])
            assert archive[f"label_{split}"].dtype == np.int64
            assert archive[f"text_{split}"].tolist() == values["text"].tolist()
            offsets = archive[f"seq_{split}_offsets"]
            assert offsets[0] == 0 and offsets.shape == (len(values["seq"]) + 1,)
            seq = archive[f"seq_{split}"]
            assert seq.shape == (offsets[-1], 2)
            for i, sample in enumerate(values["seq"]):
                np.testing.assert_array_equal(seq[offsets[i] : offsets[i + 1]], sample)
            grid, grid_offsets, shapes = (archive[f"grid_{split}{s}"] for s in ("", "_offsets", "_shapes"))
            assert grid.ndim == 1 and shapes.shape == (len(values["grid"]), 2)
            for i, sample in enumerate(values["grid"]):
                np.testing.assert_array_equal(grid[grid_offsets[i] : grid_offsets[i + 1]].reshape(shapes[i]), sample)
            blob, blob_offsets = archive[f"blob_{split}"], archive[f"blob_{split}_offsets"]
            assert [blob[blob_offsets[i] : blob_offsets[i + 1]].tobytes() for i in range(len(values["blob"]))] == (
                values["blob"]
            )
        assert archive["label_class_names"].tolist() == CLASSES
        assert "label_train_class_names" not in names


def test_npz_round_trips_through_convert_npz(source: Path, tmp_path: Path) -> None:
    """Dense and string features of train/validation/test come back from convert_npz unchanged."""
    npz = export_npz(source, tmp_path / "dense.npz", features=["x", "y", "flag", "text"], compress=True)
    back = convert_npz(npz, tmp_path / "back.h5", metadata={"description": "round trip", "license": "CC0-1.0"}).output
    original, got = read_all(source), read_all(back)
    assert sorted(got) == sorted(original)
    for split, values in got.items():
        assert sorted(values) == ["flag", "text", "x", "y"]
        for name in ("x", "y", "flag"):
            assert values[name].dtype == original[split][name].dtype
            np.testing.assert_array_equal(values[name], original[split][name])
        assert values["text"].tolist() == original[split]["text"].tolist()
    report = h5ml.validate(back, deep=True)
    assert [c for c in report.codes if not c.startswith("I")] == []


def test_npz_round_trips_every_encoding(tmp_path: Path) -> None:
    """Every encoding comes back from convert_npz: ragged (rows of 2, per-sample shapes, all of one length, bool),
    bytes with their media types (one with parameters, §6.6), categorical with shared and per-split class names;
    same encodings, dtypes, sample shapes, class names, media types and values, split by split."""
    rng = np.random.default_rng(5)

    def split(n: int, seed: int, kinds: list[str]) -> dict[str, Any]:
        values = columns(n, seed)
        values["kind"] = h5ml.Categorical(rng.integers(-1, len(kinds), n), kinds)
        values["same"] = [np.arange(3, dtype=np.uint16) + i for i in range(n)]
        values["mask"] = [rng.random(i % 3) > 0.5 for i in range(n)]
        values["clip"] = [rng.integers(0, 256, i % 7, dtype=np.uint8).tobytes() for i in range(n)]
        return values

    source = h5ml.write(
        tmp_path / "every.h5",
        {"train": split(30, 0, ["a", "b"]), "validation": split(7, 1, ["z"]), "test": split(5, 2, ["a", "b"])},
        features={
            "blob": {"media_type": "image/png"},
            "clip": {"media_type": "audio/L16; rate=16000"},
            "same": {"encoding": "ragged"},
        },
    )
    npz = export_npz(source, tmp_path / "every.npz")
    with np.load(npz) as archive:
        assert archive["clip_train_media_type"].item() == "audio/L16; rate=16000"
        assert archive["kind_validation_class_names"].tolist() == ["z"] and "kind_class_names" not in archive.files
        assert archive["label_class_names"].tolist() == CLASSES
    back = convert_npz(npz, tmp_path / "back.h5", metadata={"description": "round trip", "license": "CC0-1.0"}).output
    with h5ml.open(source) as original, h5ml.open(back) as got:
        assert list(got.splits) == list(original.splits)
        for name in original.splits:
            assert sorted(got[name].features) == sorted(original[name].features)
            for feature, before in original[name].features.items():
                after = got[name][feature]
                assert (after.encoding, after.dtype, tuple(after.sample_shape)) == (
                    before.encoding,
                    before.dtype,
                    tuple(before.sample_shape),
                ), f"{name}/{feature}"
                assert (after.class_names, after.media_type) == (before.class_names, before.media_type)
                expected, found = before[:], after[:]
                if isinstance(expected, np.ndarray) and expected.dtype != object:
                    assert found.dtype == expected.dtype
                    np.testing.assert_array_equal(found, expected)
                else:
                    assert len(found) == len(expected)
                    for a, b in zip(found, expected, strict=True):
                        if isinstance(b, np.ndarray):
                            assert (a.dtype, a.shape) == (b.dtype, b.shape)
                            np.testing.assert_array_equal(a, b)
                        else:
                            assert a == b
        train = got["train"]
        assert [train[f].encoding for f in ("same", "mask", "seq", "grid", "blob", "label")] == [
            "ragged", "ragged", "ragged", "ragged", "bytes", "categorical",
        ]  # fmt: skip
        assert tuple(train["grid"].sample_shape) == (None, None) and tuple(train["seq"].sample_shape) == (None, 2)
        assert train["mask"].dtype == np.bool_ and train["kind"].class_names == ["a", "b"]
        assert (
            got["validation"]["kind"].class_names == ["z"] and got["test"]["clip"].media_type == "audio/L16; rate=16000"
        )
    report = h5ml.validate(back, deep=True)
    assert [c for c in report.codes if not c.startswith("I")] == []


@pytest.mark.parametrize(
    ("arrays", "message"),
    [
        (
            {"seq_train": np.zeros((5, 2)), "seq_train_offsets": np.array([0, 2, 4])},
            r"array 'seq_train_offsets' does not hold offsets into 'seq_train': .* end at its 5 rows .* got 0 \.\. 4",
        ),
        (
            {"seq_train": np.zeros(5), "seq_train_offsets": np.array([0.0, 5.0])},
            r"array 'seq_train_offsets' should hold the offsets of 'seq_train', a 1-D integer array",
        ),
        (
            {
                "g_train": np.zeros(6),
                "g_train_offsets": np.array([0, 2, 6]),
                "g_train_shapes": np.array([[1, 2], [2, 2]]),
            },
            None,
        ),
        (
            {
                "g_train": np.zeros(6),
                "g_train_offsets": np.array([0, 2, 6]),
                "g_train_shapes": np.array([[1, 2], [2, 3]]),
            },
            r"sample 1 of 'g_train' has 4 values but 'g_train_shapes' gives it the shape \(2, 3\)",
        ),
        (
            {
                "b_train": np.zeros(3, np.int16),
                "b_train_offsets": np.array([0, 3]),
                "b_train_media_type": np.array("x/y"),
            },
            r"array 'b_train' holds the bytes of a bytes feature \(beside 'b_train_media_type'\) and must be uint8",
        ),
        (
            {"b_train": np.zeros(3, np.uint8), "b_train_offsets": np.array([0, 3]), "b_train_media_type": np.array(3)},
            r"array 'b_train_media_type' should hold the media type of the bytes feature 'b_train', one string",
        ),
    ],
    ids=["offsets-short", "offsets-float", "shapes-ok", "shapes-wrong", "bytes-int16", "media-type-number"],
)
def test_npz_companion_arrays_are_checked(tmp_path: Path, arrays: dict[str, Any], message: str | None) -> None:
    """Offsets, shapes and media types that do not fit their values are refused naming the archive and the arrays;
    nothing is written."""
    source, target = tmp_path / "c.npz", tmp_path / "c.h5"
    np.savez(source, **arrays)
    if message is None:
        convert_npz(source, target)
        with h5ml.open(target) as ds:
            grid = ds["train"]["g"]
            assert (grid.encoding, tuple(grid.sample_shape)) == ("ragged", (None, None))
            assert [s.shape for s in grid[:]] == [(1, 2), (2, 2)]
        return
    with pytest.raises(h5ml.EncodingError, match=message) as err:
        convert_npz(source, target)
    assert str(err.value).startswith(f"{source}: ") and not target.exists()


def test_npz_companion_names_without_their_values_are_features(tmp_path: Path) -> None:
    """``x_offsets`` without ``x`` and ``y_media_type`` without ``y_offsets`` are ordinary arrays, as before."""
    source = tmp_path / "plain.npz"
    np.savez(source, x_offsets=np.arange(3), y=np.arange(3.0), y_media_type=np.array(["a", "b", "c"]))
    with h5ml.open(convert_npz(source, tmp_path / "plain.h5").output) as ds:
        assert sorted(ds["train"].features) == ["x_offsets", "y", "y_media_type"]
        assert ds["train"]["y_media_type"].encoding == "string" and ds["train"]["x_offsets"][:].tolist() == [0, 1, 2]


def test_npz_categorical_codes_with_their_class_names(source: Path, tmp_path: Path) -> None:
    """Codes exported as label_<split> come back categorical with label= and the exported class names."""
    npz = export_npz(source, tmp_path / "labels.npz", splits=["train", "test"], features=["label"])
    with np.load(npz) as archive:
        class_names = archive["label_class_names"].tolist()
        np.savez(tmp_path / "codes.npz", label_train=archive["label_train"], label_test=archive["label_test"])
    back = convert_npz(tmp_path / "codes.npz", tmp_path / "labels.h5", label="label", class_names=class_names).output
    with h5ml.open(back) as ds, h5ml.open(source) as src:
        assert ds["train"]["label"].class_names == CLASSES
        for split in ("train", "test"):
            np.testing.assert_array_equal(ds[split]["label"][:], src[split]["label"][:])


def test_npz_class_names_per_split_and_name_collisions(tmp_path: Path) -> None:
    """Splits with different class names get <feature>_<split>_class_names; colliding array names are refused."""
    path = h5ml.write(
        tmp_path / "c.h5",
        {
            "train": {"label": h5ml.Categorical([0, 1], ["a", "b"])},
            "test": {"label": h5ml.Categorical([0], ["z"])},
        },
    )
    with np.load(export_npz(path, tmp_path / "c.npz")) as archive:
        assert archive["label_train_class_names"].tolist() == ["a", "b"]
        assert archive["label_test_class_names"].tolist() == ["z"]
    clash = h5ml.write(tmp_path / "clash.h5", {"train": {"x_test": np.zeros(2)}, "test_train": {"x": np.ones(1)}})
    out = tmp_path / "clash.npz"
    with pytest.raises(
        ValueError, match=r"test_train/x \(values\) and train/x_test \(values\) would both be named 'x_test_train'"
    ):
        export_npz(clash, out)
    with pytest.raises(h5ml.FeatureNotFoundError, match="'nope'"):
        export_npz(clash, out, features=["nope"])
    assert not out.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.h5", "c.npz", "clash.h5"]


def decoded(column: Any) -> list[Any]:
    return [None if v is None else v for v in column.to_pylist()]


def assert_parquet_equals(table: Any, values: dict[str, Any]) -> None:
    """Each Parquet column holds the reader's values (see the mapping in h5ml.ingest.export)."""
    np.testing.assert_array_equal(np.asarray(table["x"].to_pylist(), dtype=np.float32), values["x"])
    np.testing.assert_array_equal(table["y"].to_numpy(), values["y"])
    assert table["flag"].to_pylist() == values["flag"].tolist()
    assert table["label"].to_pylist() == [None if c < 0 else CLASSES[c] for c in values["label"]]
    assert table["text"].to_pylist() == values["text"].tolist()
    for got, expected in zip(table["seq"].to_pylist(), values["seq"], strict=True):
        np.testing.assert_array_equal(np.asarray(got, dtype=np.float32).reshape(-1, 2), expected)
    for got, expected in zip(table["grid"].to_pylist(), values["grid"], strict=True):
        np.testing.assert_array_equal(np.asarray(got, dtype=np.int16), expected)
    assert table["blob"].to_pylist() == values["blob"]


def test_parquet_directory_of_splits(source: Path, tmp_path: Path) -> None:
    """One file per split; columns, types and metadata as documented."""
    files = export_parquet(source, tmp_path / "pq")
    assert files == {s: tmp_path / "pq" / f"{s}.parquet" for s in ("test", "train", "validation")}
    data = read_all(source)
    for split, path in files.items():
        table = pq.read_table(path)
        assert table.num_rows == len(data[split]["y"])
        assert_parquet_equals(table, data[split])
    schema = pq.read_schema(files["train"])
    assert schema.field("x").type == pa.list_(pa.list_(pa.float32(), 3), 2)  # (2, 3) samples, C order
    assert schema.field("label").type == pa.dictionary(pa.int32(), pa.string())
    assert str(schema.field("grid").type) == "list<element: list<element: int16>>"
    info = json.loads(schema.metadata[b"h5ml"])
    assert (info["split"], info["num_samples"], info["metadata"]["description"]) == ("train", 30, "export test")
    seq = json.loads(schema.field("seq").metadata[b"h5ml"])
    assert seq == {
        "encoding": "ragged",
        "dtype": "float32",
        "sample_shape": [None, 2],
        "units": "V",
        "sample_rate": 50.0,
    }
    assert json.loads(schema.field("blob").metadata[b"h5ml"])["media_type"] == "image/png"


def test_parquet_one_split_in_row_groups(source: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With small batches the file has several row groups and the same values; pandas reads it too."""
    monkeypatch.setattr(batches, "BATCH_BYTES", 300)
    path = tmp_path / "train.parquet"
    assert export_parquet(source, path, split="train", compression="zstd") == {"train": path}
    parquet = pq.ParquetFile(path)
    assert parquet.num_row_groups > 3
    assert_parquet_equals(parquet.read(), read_all(source)["train"])
    pandas = pytest.importorskip("pandas")
    frame = pandas.read_parquet(path, columns=["y", "label"])
    assert frame["y"].tolist() == read_all(source)["train"]["y"].tolist()
    assert list(frame["label"].cat.categories) == CLASSES


def test_parquet_output_checks(source: Path, tmp_path: Path) -> None:
    target = tmp_path / "one.parquet"
    target.write_bytes(b"old")
    with pytest.raises(FileExistsError, match="overwrite"):
        export_parquet(source, target, split="train")
    with pytest.raises(NotADirectoryError, match="pass split="):
        export_parquet(source, target)
    with pytest.raises(h5ml.SplitNotFoundError, match="extra"):
        export_parquet(source, tmp_path / "x.parquet", split="extra")
    (tmp_path / "dir").mkdir()
    (tmp_path / "dir" / "test.parquet").write_bytes(b"old")
    with pytest.raises(FileExistsError, match=r"test\.parquet"):
        export_parquet(source, tmp_path / "dir")
    assert sorted(p.name for p in (tmp_path / "dir").iterdir()) == ["test.parquet"]  # checked before writing
    assert target.read_bytes() == b"old"
    export_parquet(source, target, split="test", features=["y"], overwrite=True)
    assert pq.read_table(target).column_names == ["y"]


def test_an_unknown_parquet_codec_is_the_users_mistake(tmp_path: Path) -> None:
    """A codec pyarrow does not write is a ParameterError naming the option, before anything is written; on the
    command line one line of the user's input, not an internal error."""
    from h5ml.errors import ParameterError
    from h5ml.ingest import export_parquet
    from h5ml.tools.cli import run

    source = h5ml.write(tmp_path / "s.h5", {"train": {"x": np.arange(4)}})
    with pytest.raises(ParameterError, match="--parquet-compression"):
        export_parquet(source, tmp_path / "o.parquet", split="train", compression="bogus")
    assert not (tmp_path / "o.parquet").exists()
    out, err = io.StringIO(), io.StringIO()
    code = run(
        ["export", str(source), str(tmp_path / "o.parquet"), "--split", "train", "--parquet-compression", "x"], out, err
    )
    assert code == 2 and err.getvalue().startswith("h5ml: error: compression 'x' is not a Parquet codec")
