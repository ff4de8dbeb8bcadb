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
from h5ml.ingest import provenance
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


def _same_features(original: Path, back: Path, splits: list[str] | None = None) -> None:
    """The splits of ``back`` are ``splits`` (default: those of ``original``), and their every feature, reader
    property, HDF5 attribute and value is that of ``original``."""
    with h5ml.open(original) as before, h5ml.open(back) as after:
        assert sorted(after.splits) == sorted(before.splits if splits is None else splits)
        for split in after.splits:
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


def test_parquet_export_and_convert_round_trip_every_encoding(source: Path, tmp_path: Path) -> None:
    """h5ml export --format parquet (one file per split), then h5ml convert <split>.parquet: dense samples of shape
    (2, 3) (fixed-size lists), ragged rows of 2 (lists of fixed-size lists), ragged samples that vary in two axes
    (nested lists), bytes (binary), categorical (a dictionary; the class names recorded, codes and missing values
    kept), strings, booleans and integers come back with their dtypes, sample shapes, roles and attributes, in the
    split the file records."""
    folder = tmp_path / "pq"
    code, said = run_cli("export", str(source), str(folder), "--format", "parquet")
    assert code == 0, said
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    schema = pq.read_schema(folder / "train.parquet")
    assert schema.field("image").type == pa.list_(pa.list_(pa.float32(), 3), 2)
    assert schema.field("signal").type == pa.list_(pa.list_(pa.float32(), 2))
    assert schema.field("grid").type == pa.list_(pa.list_(pa.int16()))
    assert schema.field("blob").type == pa.binary()
    for split in ("train", "test"):
        code, said = run_cli("convert", str(folder / f"{split}.parquet"), str(tmp_path / f"{split}.h5"))
        assert code == 0, said
        _same_features(source, tmp_path / f"{split}.h5", [split])
        with h5ml.open(tmp_path / f"{split}.h5") as ds:  # where the split's name came from (§4.7)
            recorded = provenance.read(ds)
        assert recorded == {split: [{"source": str(folder / f"{split}.parquet"), "split": split, "named_by": "group"}]}


def test_parquet_categorical_class_names_come_from_the_recorded_metadata(tmp_path: Path) -> None:
    """The recorded class names keep their order and the classes no row uses (distinct values alone would sort
    them and drop those); a string column recorded categorical becomes categorical; a value outside the recorded
    class names is refused, not read as missing."""
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    info = b'{"encoding": "categorical", "class_names": ["zebra", "ant", "unused"], "role": "target"}'
    fields = [pa.field("kind", pa.string(), metadata={"h5ml": info}), pa.field("x", pa.float64())]
    table = pa.table({"kind": ["ant", None, "zebra"], "x": [1.0, 2.0, 3.0]}, schema=pa.schema(fields))
    pq.write_table(table, tmp_path / "k.parquet")
    code, said = run_cli("convert", str(tmp_path / "k.parquet"), str(tmp_path / "k.h5"))
    assert code == 0, said
    with h5ml.open(tmp_path / "k.h5") as ds:
        kind = ds["train"]["kind"]
        assert kind.encoding == "categorical" and kind.class_names == ["zebra", "ant", "unused"]
        assert kind[:].tolist() == [1, -1, 0] and kind.role == "target" and ds["train"]["x"].role == "input"
    table = pa.table({"kind": ["ant", "bee", "zebra"], "x": [1.0, 2.0, 3.0]}, schema=pa.schema(fields))
    pq.write_table(table, tmp_path / "bad.parquet")
    code, said = run_cli("convert", str(tmp_path / "bad.parquet"), str(tmp_path / "bad.h5"))
    assert code != 0 and "column 'kind' holds ['bee'], which are not among the class names" in said
    assert not (tmp_path / "bad.h5").exists()


def test_parquet_array_columns_without_metadata_and_nulls(tmp_path: Path) -> None:
    """Plain Parquet (no h5ml metadata): a fixed-size list column is dense, a list column ragged, binary bytes; a
    null sample is refused naming the column."""
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    table = pa.table(
        {
            "vec": pa.array([[1, 2], [3, 4], [5, 6]], type=pa.list_(pa.int32(), 2)),
            "seq": pa.array([[0.5], [], [1.5, 2.5]], type=pa.list_(pa.float64())),
            "raw": pa.array([b"a", b"", b"bc"], type=pa.binary()),
        }
    )
    pq.write_table(table, tmp_path / "plain.parquet")
    code, said = run_cli("convert", str(tmp_path / "plain.parquet"), str(tmp_path / "plain.h5"))
    assert code == 0, said
    with h5ml.open(tmp_path / "plain.h5") as ds:
        split = ds["train"]
        assert split["vec"].encoding == "dense" and split["vec"].dtype == np.int32 and split["vec"].sample_shape == (2,)
        assert split["vec"][:].tolist() == [[1, 2], [3, 4], [5, 6]]
        assert split["seq"].encoding == "ragged" and [s.tolist() for s in split["seq"][:]] == [[0.5], [], [1.5, 2.5]]
        assert split["raw"].encoding == "bytes" and list(split["raw"][:]) == [b"a", b"", b"bc"]
    nulls = pa.table({"seq": pa.array([[0.5], None], type=pa.list_(pa.float64()))})
    pq.write_table(nulls, tmp_path / "nulls.parquet")
    code, said = run_cli("convert", str(tmp_path / "nulls.parquet"), str(tmp_path / "nulls.h5"))
    assert code != 0 and "column 'seq' holds 1 null samples" in said and not (tmp_path / "nulls.h5").exists()
