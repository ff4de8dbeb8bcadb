"""Where each split came from, and merges that would mix source splits: :mod:`h5ml.ingest.provenance` (§4.7, §5.1).

Every converter that knows where its split names come from records them in
the root attribute ``h5ml-ingest:source-splits``; ``h5ml merge`` states per
split which input splits went in and refuses to join inputs whose splits came
from differently named source splits (test data converted into ``train``,
merged with real training data) unless ``--allow-mixed-splits``. Real files,
converted through the real command line and the Python API.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import pytest
from jsonschema import Draft202012Validator

import h5ml
from h5ml import IngestError
from h5ml.ingest import convert_npy, convert_npz, convert_table, merge, subset
from h5ml.ingest import provenance as prov
from h5ml.spec import schemas
from h5ml.tools import cli

ATTR = "h5ml-ingest:source-splits"


def run_cli(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = cli.run(list(args), out, err)
    return code, out.getvalue(), err.getvalue()


def stored(path: Path) -> Any:
    """The record as stored: the attribute's JSON text parsed, or None."""
    with h5py.File(path, "r") as f:
        value = f.attrs.get(ATTR)
    return None if value is None else json.loads(value)


def assert_clean(path: Path) -> None:
    """validate --strict accepts the file: no errors, no warnings (the record is a user attribute, info I300)."""
    report = h5ml.validate(path, deep=True)
    assert report.valid and [c for c in report.codes if not c.startswith("I")] == [], report.codes


def entry(source: Path | str, split: str | None, named_by: str) -> dict[str, Any]:
    return {"source": str(source), "split": split, "named_by": named_by}


def npz(path: Path, offset: int, **names: int) -> Path:
    """An .npz archive with arrays x_<suffix>/y_<suffix> (or x/y for the suffix ""), n rows each, values from offset."""
    arrays: dict[str, np.ndarray] = {}
    for suffix, n in names.items():
        tail = f"_{suffix}" if suffix != "plain" else ""
        arrays[f"x{tail}"] = np.arange(offset, offset + 3 * n, dtype=np.float32).reshape(n, 3)
        arrays[f"y{tail}"] = np.arange(n, dtype=np.int64) % 2
        offset += 3 * n
    np.savez(path, **arrays)
    return path


@pytest.fixture
def leak(tmp_path: Path) -> tuple[Path, Path]:
    """a.h5: the real training arrays x_train/y_train; b.h5: test arrays saved without a split name, so in train."""
    real = npz(tmp_path / "real.npz", 0, train=4)
    test = npz(tmp_path / "ply_data_test0.npz", 1000, plain=2)
    a, b = tmp_path / "a.h5", tmp_path / "b.h5"
    assert run_cli("convert", str(real), str(a))[0] == 0
    assert run_cli("convert", str(test), str(b))[0] == 0
    return a, b


# -- the record each converter writes --------------------------------------------------------------------------------


def test_npz_records_array_suffixes_as_the_source_had_them(tmp_path: Path) -> None:
    """An array x_valid goes to validation and records its own suffix 'valid', named by the array name."""
    source = npz(tmp_path / "d.npz", 0, train=3, valid=2, test=1)
    convert_npz(source, tmp_path / "d.h5")
    assert stored(tmp_path / "d.h5") == {
        "train": [entry(source, "train", "array name")],
        "validation": [entry(source, "valid", "array name")],
        "test": [entry(source, "test", "array name")],
    }
    with h5ml.open(tmp_path / "d.h5") as ds:
        assert prov.read(ds) == stored(tmp_path / "d.h5")
    assert_clean(tmp_path / "d.h5")


def test_npz_without_split_names_records_the_default(tmp_path: Path) -> None:
    source = npz(tmp_path / "ply_data_test0.npz", 0, plain=2)
    convert_npz(source, tmp_path / "d.h5")
    assert stored(tmp_path / "d.h5") == {"train": [entry(source, None, "default")]}


def test_npy_records_the_split_option_or_the_default(tmp_path: Path) -> None:
    """A .npy names no split: --split NAME records named_by 'option', no --split records 'default'."""
    source = tmp_path / "x_test.npy"
    np.save(source, np.arange(6, dtype=np.float32).reshape(3, 2))
    assert run_cli("convert", str(source), str(tmp_path / "opt.h5"), "--split", "validation")[0] == 0
    assert stored(tmp_path / "opt.h5") == {"validation": [entry(source, None, "option")]}
    convert_npy(source, tmp_path / "default.h5")
    assert stored(tmp_path / "default.h5") == {"train": [entry(source, None, "default")]}
    with h5ml.open(tmp_path / "default.h5") as ds:
        assert list(ds.splits) == ["train"]


def test_table_records_the_split_column_values_ratios_or_the_default(tmp_path: Path) -> None:
    """A split column's values as written ('valid', ' dev ' stripped) both go to validation, named by the column."""
    table = tmp_path / "t.csv"
    rows = ["a,split", "1,train", "2,valid", "3, dev ", "4,test", "5,train"]
    table.write_text("\n".join(rows) + "\n", encoding="utf-8")
    code, _, err = run_cli("convert", str(table), str(tmp_path / "col.h5"), "--split-column", "split")
    assert code == 0, err
    assert stored(tmp_path / "col.h5") == {
        "train": [entry(table, "train", "column")],
        "validation": [entry(table, "valid", "column"), entry(table, "dev", "column")],
        "test": [entry(table, "test", "column")],
    }
    with h5ml.open(tmp_path / "col.h5") as ds:
        assert {name: ds[name].num_samples for name in ds.splits} == {"train": 2, "validation": 2, "test": 1}
    code, _, err = run_cli(
        "convert", str(table), str(tmp_path / "ratios.h5"), "--split-ratios", "train=0.6,test=0.4", "--seed", "3"
    )
    assert code == 0, err
    assert stored(tmp_path / "ratios.h5") == {
        "train": [entry(table, None, "option")],
        "test": [entry(table, None, "option")],
    }
    convert_table(table, tmp_path / "plain.h5", shuffle=True, seed=1)  # through the shuffling stage
    assert stored(tmp_path / "plain.h5") == {"train": [entry(table, None, "default")]}


def test_image_folder_records_its_split_folders(tmp_path: Path) -> None:
    image = pytest.importorskip("PIL.Image")
    for split, cls in (("training", "cat"), ("val", "dog"), ("training", "dog")):
        folder = tmp_path / "pics" / split / cls
        folder.mkdir(parents=True, exist_ok=True)
        image.new("RGB", (4, 4), (10, 20, 30)).save(folder / f"{cls}1.png")
    flat = tmp_path / "flat" / "cat"
    flat.mkdir(parents=True)
    for i in range(4):
        image.new("RGB", (4, 4), (i, 0, 0)).save(flat / f"{i}.png")
    assert run_cli("convert", str(tmp_path / "pics"), str(tmp_path / "p.h5"), "--size", "4x4", "--quiet")[0] == 0
    pics = str(tmp_path / "pics")
    assert stored(tmp_path / "p.h5") == {
        "train": [entry(pics, "training", "folder")],
        "validation": [entry(pics, "val", "folder")],
    }
    code, _, err = run_cli(
        "convert",
        str(tmp_path / "flat"),
        str(tmp_path / "f.h5"),
        "--size",
        "4x4",
        "--split-ratios",
        "train=0.5,test=0.5",
        "--quiet",
    )
    assert code == 0, err
    flat_text = str(tmp_path / "flat")
    assert stored(tmp_path / "f.h5") == {
        "train": [entry(flat_text, None, "option")],
        "test": [entry(flat_text, None, "option")],
    }


def test_audio_folder_records_its_split_folders_or_the_default(tmp_path: Path) -> None:
    sf = pytest.importorskip("soundfile")
    for root, parts in ((tmp_path / "split", ("test", "clean")), (tmp_path / "flat", ("clean",))):
        folder = root.joinpath(*parts)
        folder.mkdir(parents=True)
        sf.write(folder / "1.wav", np.zeros(80, dtype=np.int16), 8000, subtype="PCM_16")
    assert run_cli("convert", str(tmp_path / "split"), str(tmp_path / "s.h5"), "--quiet")[0] == 0
    assert stored(tmp_path / "s.h5") == {"test": [entry(tmp_path / "split", "test", "folder")]}
    assert run_cli("convert", str(tmp_path / "flat"), str(tmp_path / "f.h5"), "--quiet")[0] == 0
    assert stored(tmp_path / "f.h5") == {"train": [entry(tmp_path / "flat", None, "default")]}


def test_hugging_face_records_the_dataset_split_even_when_renamed(tmp_path: Path) -> None:
    """splits={"test": "train"} stores the dataset's test split as train: the record keeps 'test'."""
    datasets = pytest.importorskip("datasets")
    from h5ml.ingest import convert_huggingface

    def part(n: int) -> Any:
        return datasets.Dataset.from_dict({"x": [float(i) for i in range(n)]})

    loaded = datasets.DatasetDict({"train": part(3), "validation": part(2), "test": part(2)})
    label = "in-memory datasets.DatasetDict"
    convert_huggingface(loaded, tmp_path / "all.h5")
    assert stored(tmp_path / "all.h5") == {
        name: [entry(label, name, "group")] for name in ("train", "validation", "test")
    }
    convert_huggingface(loaded, tmp_path / "hf.h5", splits={"test": "train"})
    assert stored(tmp_path / "hf.h5") == {"train": [entry(label, "test", "group")]}
    with h5ml.open(tmp_path / "hf.h5") as ds:
        assert ds["train"].num_samples == 2
    label = "in-memory datasets.Dataset"
    convert_huggingface(part(10), tmp_path / "cut.h5", split_ratios={"train": 0.5, "test": 0.5})
    assert stored(tmp_path / "cut.h5") == {
        "train": [entry(label, None, "option")],
        "test": [entry(label, None, "option")],
    }
    convert_huggingface(part(10), tmp_path / "default.h5")  # the default ratios
    assert {e["named_by"] for entries in stored(tmp_path / "default.h5").values() for e in entries} == {"default"}


# -- the record itself ---------------------------------------------------------------------------------------------


def test_schema_lists_the_named_by_values_and_accepts_the_records_written(tmp_path: Path) -> None:
    schema = schemas.load_schema("source-splits")
    assert schema["$defs"]["entry"]["properties"]["named_by"]["enum"] == list(prov.NAMED_BY)
    source = npz(tmp_path / "d.npz", 0, train=2, val=1)
    convert_npz(source, tmp_path / "d.h5")
    assert list(Draft202012Validator(schema).iter_errors(stored(tmp_path / "d.h5"))) == []
    assert not Draft202012Validator(schema).is_valid({"train": []})
    assert not Draft202012Validator(schema).is_valid({"train": [{"source": "s", "split": "", "named_by": "folder"}]})
    assert not Draft202012Validator(schema).is_valid({"a/b": [entry("s", None, "default")]})


def test_the_validator_calls_the_record_provenance_and_says_nothing_is_lost(tmp_path: Path) -> None:
    """I300 of the record says what it is (the converter's provenance, for information), not that data is dropped."""
    source = npz(tmp_path / "d.npz", 0, train=2, test=1)
    assert run_cli("convert", str(source), str(tmp_path / "d.h5"))[0] == 0
    with h5py.File(tmp_path / "d.h5", "a") as f:
        f.attrs["acme:note"] = "a user attribute of another writer"
    report = h5ml.validate(tmp_path / "d.h5")
    assert report.valid
    messages = {issue.message.split("'")[1]: issue.message for issue in report.issues if issue.code == "I300"}
    assert sorted(messages) == ["acme:note", ATTR]
    record = messages[ATTR]
    assert "provenance" in record and "where each split's samples came from" in record
    assert "informational only" in record and "nothing is lost" in record
    assert "readers ignore it" not in record
    # any other user attribute keeps the general wording of §4.7
    assert messages["acme:note"].endswith("is not defined by h5ml 1.2; readers ignore it")
    code, out, err = run_cli("validate", str(tmp_path / "d.h5"))
    assert code == 0 and err == ""
    assert "nothing is lost" in " ".join(out.split())  # the text table wraps the message


def test_record_and_read_round_trip_and_refuse_bad_entries() -> None:
    meta: dict[str, Any] = {"name": "x"}
    same = prov.source_split("f.h5", "test", "file name")
    assert prov.record(meta, {"train": [same, dict(same)], "test": []}) is meta
    assert json.loads(meta[ATTR]) == {"train": [entry("f.h5", "test", "file name")]}  # once; empty split left out
    assert prov.read(meta) == {"train": [entry("f.h5", "test", "file name")]}
    assert prov.read({"name": "x"}) is None
    assert prov.record({}, {}) == {}
    with pytest.raises(ValueError, match="named_by must be one of"):
        prov.source_split("f.h5", "test", "guess")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="split must be None or a non-empty string"):
        prov.source_split("f.h5", "", "folder")
    with pytest.raises(ValueError, match=f"{ATTR}: train/0"):
        prov.record({}, {"train": [{"source": "f.h5", "split": None, "named_by": "wish"}]})


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("not json", "it is not JSON"),
        ('{"train": [{"source": "x.npz", "split": "test", "named_by": "guess"}]}', "at train/0/named_by: 'guess'"),
        ('["train"]', "is not of type 'object'"),
        (7, "it holds the int64 7, not JSON text"),
    ],
)
def test_a_malformed_record_is_an_error_naming_the_file_and_attribute(tmp_path: Path, value: Any, problem: str) -> None:
    """read(), merge and subset refuse it (Python: IngestError; the command line: one line, exit 2)."""
    good = tmp_path / "good.h5"
    convert_npz(npz(tmp_path / "g.npz", 0, train=2), good)
    bad = tmp_path / "bad.h5"
    convert_npz(npz(tmp_path / "b.npz", 100, train=2), bad)
    with h5py.File(bad, "r+") as f:
        f.attrs[ATTR] = value
    with h5py.File(bad, "r") as f, pytest.raises(IngestError, match="malformed") as info:
        prov.read(f)
    assert str(bad) in str(info.value) and ATTR in str(info.value) and problem in str(info.value)
    assert "del f.attrs" in str(info.value)
    with pytest.raises(IngestError, match=f"{bad}: the root attribute '{ATTR}' is malformed"):
        merge([good, bad], tmp_path / "m.h5")
    with pytest.raises(IngestError, match=f"{bad}: the root attribute '{ATTR}' is malformed"):
        subset(bad, tmp_path / "s.h5")
    code, out, err = run_cli("merge", str(good), str(bad), "-o", str(tmp_path / "m.h5"))
    assert code == 2 and out == "" and "Traceback" not in err
    assert f"{bad}: the root attribute '{ATTR}' is malformed" in err
    assert not (tmp_path / "m.h5").exists() and not (tmp_path / "s.h5").exists()


# -- merge: the leak, the statement, the union ---------------------------------------------------------------------


def test_merge_refuses_train_made_of_test_data_on_the_command_line(leak: tuple[Path, Path], tmp_path: Path) -> None:
    a, b = leak
    out = tmp_path / "m.h5"
    code, stdout, err = run_cli("merge", str(a), str(b), "-o", str(out))
    assert code == 2 and stdout == "" and "Traceback" not in err
    assert err.count("\n") == 1  # one line
    assert f"cannot merge split 'train' of {a} and {b}" in err
    assert f"{a} recorded source split train, from split 'train' of {tmp_path / 'real.npz'} (by array name)" in err
    assert f"{b} recorded source split none, from {tmp_path / 'ply_data_test0.npz'}, which names no split" in err
    assert "--allow-mixed-splits" in err
    assert not out.exists()


def test_merge_refuses_it_in_python_with_the_parameter(leak: tuple[Path, Path], tmp_path: Path) -> None:
    a, b = leak
    with pytest.raises(IngestError, match=r"allow_mixed_splits=True") as info:
        merge([b, a], tmp_path / "m.h5")
    assert info.value.path == str(a) and info.value.hdf5_path == "/train"
    assert f"{b} recorded source split none" in str(info.value)
    assert not (tmp_path / "m.h5").exists()


def test_merge_allows_it_with_the_flag_and_records_the_union(leak: tuple[Path, Path], tmp_path: Path) -> None:
    a, b = leak
    out = tmp_path / "m.h5"
    code, stdout, err = run_cli("merge", str(a), str(b), "-o", str(out), "--allow-mixed-splits")
    assert code == 0, err
    assert f"train <- {a}:train (source split train), {b}:train (source split none, named by default)" in stdout
    assert stored(out) == {
        "train": [
            entry(tmp_path / "real.npz", "train", "array name"),
            entry(tmp_path / "ply_data_test0.npz", None, "default"),
        ]
    }
    with h5ml.open(out) as ds:
        np.testing.assert_array_equal(ds["train"][:]["x"][:, 0], [0, 3, 6, 9, 1000, 1003])
    assert_clean(out)
    # merged again with its own kind, the union is refused as long as it mixes: train + none != train
    again = tmp_path / "again.h5"
    with pytest.raises(IngestError, match="differently named source splits"):
        merge([a, out], again)
    report = merge([a, out], again, allow_mixed_splits=True)
    assert report.merged_from["train"][1] == f"{out}:train (source splits train, none, named by default)"
    assert len(stored(again)["train"]) == 2  # the same two entries, each once


def test_merge_states_the_inputs_and_accepts_splits_of_one_name(tmp_path: Path) -> None:
    """Two conversions of training data merge; each split's inputs are stated; the record lists both sources."""
    one = npz(tmp_path / "one.npz", 0, train=2, test=1)
    two = npz(tmp_path / "two.npz", 500, train=3)
    convert_npz(one, tmp_path / "one.h5")
    convert_npz(two, tmp_path / "two.h5")
    report = merge([tmp_path / "one.h5", tmp_path / "two.h5"], tmp_path / "m.h5")
    assert report.samples == {"train": 5, "test": 1}
    assert report.merged_from == {
        "train": [
            f"{tmp_path / 'one.h5'}:train (source split train)",
            f"{tmp_path / 'two.h5'}:train (source split train)",
        ],
        "test": [f"{tmp_path / 'one.h5'}:test (source split test)"],
    }
    assert f"train <- {tmp_path / 'one.h5'}:train (source split train), {tmp_path / 'two.h5'}:train" in report.summary()
    assert stored(tmp_path / "m.h5") == {
        "train": [entry(one, "train", "array name"), entry(two, "train", "array name")],
        "test": [entry(one, "test", "array name")],
    }


def test_merge_of_a_split_whose_train_came_from_a_split_option(tmp_path: Path) -> None:
    """x_test.npy converted with --split train names no source split: merged with x_train arrays, refused."""
    arrays = tmp_path / "x_test.npy"
    np.save(arrays, np.ones((2, 3), dtype=np.float32))
    real = tmp_path / "real.npz"
    np.savez(real, x_train=np.zeros((4, 3), dtype=np.float32))
    assert run_cli("convert", str(arrays), str(tmp_path / "t.h5"), "--split", "train", "--feature", "x")[0] == 0
    assert run_cli("convert", str(real), str(tmp_path / "r.h5"))[0] == 0
    code, _, err = run_cli("merge", str(tmp_path / "r.h5"), str(tmp_path / "t.h5"), "-o", str(tmp_path / "m.h5"))
    assert code == 2 and f"from {arrays}, which names no split (by option)" in err


def test_inputs_without_a_record_merge_as_before(tmp_path: Path) -> None:
    """A file written by h5ml.write has no record: merged, it is stated as 'no record' and adds no entry."""
    plain = tmp_path / "plain.h5"
    h5ml.write(plain, {"train": {"x": np.full((2, 3), 7, dtype=np.float32), "y": np.zeros(2, dtype=np.int64)}})
    assert stored(plain) is None
    with h5ml.open(plain) as ds:
        assert prov.read(ds) is None
    source = npz(tmp_path / "ply_data_test0.npz", 0, plain=2)
    convert_npz(source, tmp_path / "conv.h5")
    code, stdout, err = run_cli("merge", str(plain), str(tmp_path / "conv.h5"), "-o", str(tmp_path / "m.h5"))
    assert code == 0, err
    assert f"train <- {plain}:train (no record), {tmp_path / 'conv.h5'}:train (source split none" in stdout
    assert stored(tmp_path / "m.h5") == {"train": [entry(source, None, "default")]}
    report = merge([plain], tmp_path / "only.h5")
    assert report.merged_from == {"train": [f"{plain}:train (no record)"]}
    assert stored(tmp_path / "only.h5") is None  # nothing recorded, nothing written


def test_subset_keeps_the_entries_of_the_kept_splits(tmp_path: Path) -> None:
    source = npz(tmp_path / "d.npz", 0, train=3, val=2, test=1)
    convert_npz(source, tmp_path / "d.h5")
    subset(tmp_path / "d.h5", tmp_path / "s.h5", splits=["test", "validation"], samples="0:1")
    assert stored(tmp_path / "s.h5") == {
        "test": [entry(source, "test", "array name")],
        "validation": [entry(source, "val", "array name")],
    }
    code, _, err = run_cli("subset", str(tmp_path / "d.h5"), str(tmp_path / "all.h5"))
    assert code == 0, err
    assert stored(tmp_path / "all.h5") == stored(tmp_path / "d.h5")
    plain = tmp_path / "plain.h5"
    h5ml.write(plain, {"train": {"x": np.zeros((2, 1), dtype=np.float32)}})
    subset(plain, tmp_path / "p.h5")
    assert stored(tmp_path / "p.h5") is None
