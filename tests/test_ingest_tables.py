"""Tests of h5ml.ingest.tables: CSV and Parquet tables to h5ml, streamed in chunks and row groups."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import h5ml
from h5ml.errors import IngestError, ParameterError
from h5ml.ingest import SKIPPED_ATTR
from h5ml.ingest.tables import convert_table


def _assert_strictly_valid(path: Path) -> None:
    report = h5ml.validate(path, deep=True)
    assert report.valid_strict, [(i.code, i.message) for i in report.issues]


def _passengers() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "age": [22, 38, 26, 35, 35, 54, 2, 27, 14, 4],
            "fare": [7.25, 71.28, np.nan, 53.1, 8.05, 51.86, 21.07, 11.13, 30.07, 16.7],
            "name": [
                "Braund",
                "Cumings",
                None,
                "Futrelle",
                "Allen",
                "McCarthy",
                "Palsson",
                "Johnson",
                "Nasser",
                "Sandström",
            ],
            "embarked": ["S", "C", "S", "S", None, "Q", "S", "S", "C", "S"],
            "adult": [True, True, True, True, True, True, False, True, False, False],
            "class": ["third", "first", "third", "first", "third", "first", "third", "third", "second", "third"],
            "fold": ["train", "train", "valid", "test", "train", "train", "valid", "test", "train", "train"],
        }
    )


def test_csv_round_trip_with_split_column(tmp_path: Path) -> None:
    src, out = tmp_path / "titanic.csv", tmp_path / "titanic.h5"
    frame = _passengers()
    frame.to_csv(src, index=False)
    report = convert_table(
        src,
        out,
        label="class",
        categorical=["embarked"],
        split_column="fold",
        rows_per_read=3,
        metadata={"license": "CC0-1.0"},
    )
    assert report.samples == {"train": 6, "validation": 2, "test": 2} and report.skipped == []
    rows = {"train": [0, 1, 4, 5, 8, 9], "validation": [2, 6], "test": [3, 7]}
    with h5ml.open(out) as ds:
        assert sorted(ds) == ["test", "train", "validation"] and ds.attrs["license"] == "CC0-1.0"
        for split, index in rows.items():
            part, expected = ds[split], frame.iloc[index]
            assert set(part.features) == {"age", "fare", "name", "embarked", "adult", "class"}  # not fold
            assert part["age"].dtype == np.int64 and part["fare"].dtype == np.float64 and part["adult"].dtype == bool
            np.testing.assert_array_equal(part["age"][:], expected["age"].to_numpy())
            np.testing.assert_array_equal(part["fare"][:], expected["fare"].to_numpy())  # NaN where missing
            np.testing.assert_array_equal(part["adult"][:], expected["adult"].to_numpy())
            assert list(part["name"][:]) == [n if isinstance(n, str) else "" for n in expected["name"]]
            assert part["class"].class_names == ["first", "second", "third"] and part["class"].role == "target"
            assert part["embarked"].class_names == ["C", "Q", "S"] and part["embarked"].role == "input"
            names = ["first", "second", "third"]
            np.testing.assert_array_equal(part["class"][:], [names.index(c) for c in expected["class"]])
            codes = [-1 if not isinstance(e, str) else ["C", "Q", "S"].index(e) for e in expected["embarked"]]
            np.testing.assert_array_equal(part["embarked"][:], codes)
        assert np.isnan(ds["validation"]["fare"][0]) and ds["train"]["embarked"][2] == -1
    _assert_strictly_valid(out)


def test_parquet_row_groups_ratios_stratified(tmp_path: Path) -> None:
    src, out = tmp_path / "table.parquet", tmp_path / "table.h5"
    n = 200
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(
        {
            "f32": rng.random(n).astype(np.float32),
            "count": pd.array([None if i % 17 == 0 else i for i in range(n)], dtype="Int64"),  # nulls -> float64
            "small": np.arange(n, dtype=np.int16),
            "colour": pd.Categorical(rng.choice(["red", "green", "blue"], n)),  # dictionary -> categorical
            "label": np.repeat([0, 1, 2, 3], [100, 50, 30, 20]),
        }
    )
    frame.to_parquet(src, row_group_size=32)
    ratios = {"train": 0.8, "test": 0.2}
    report = convert_table(src, out, label="label", split_ratios=ratios, seed=11, rows_per_read=10)
    assert report.samples == {"train": 160, "test": 40}
    with h5ml.open(out) as ds:
        per_class = {s: Counter(ds[s]["label"][:].tolist()) for s in ("train", "test")}
        assert per_class == {"train": {0: 80, 1: 40, 2: 24, 3: 16}, "test": {0: 20, 1: 10, 2: 6, 3: 4}}  # stratified
        assert ds["train"]["label"].class_names == ["0", "1", "2", "3"] and ds["train"]["label"].role == "target"
        assert ds["train"]["f32"].dtype == np.float32 and ds["train"]["small"].dtype == np.int16
        assert ds["train"]["count"].dtype == np.float64 and ds["train"]["colour"].class_names == [
            "blue",
            "green",
            "red",
        ]
        # every source row is in one split, with its values: "small" is the row number
        rows = np.concatenate([ds[s]["small"][:] for s in ("train", "test")])
        assert sorted(rows.tolist()) == list(range(n))
        for split in ("train", "test"):
            index = ds[split]["small"][:]
            np.testing.assert_array_equal(ds[split]["f32"][:], frame["f32"].to_numpy()[index])
            counts = frame["count"].to_numpy(dtype=np.float64, na_value=np.nan)[index]
            np.testing.assert_array_equal(ds[split]["count"][:], counts)
            colours = ds[split]["colour"][:]
            assert [ds[split]["colour"].class_names[c] for c in colours] == list(frame["colour"].to_numpy()[index])
    _assert_strictly_valid(out)
    convert_table(src, tmp_path / "again.h5", label="label", split_ratios=ratios, seed=11)  # deterministic
    with h5ml.open(out) as a, h5ml.open(tmp_path / "again.h5") as b:
        np.testing.assert_array_equal(a["test"]["small"][:], b["test"]["small"][:])


def test_csv_types_agree_across_chunks_and_float_label_stays_dense(tmp_path: Path) -> None:
    """A column typed by the whole file: ints in the first chunk, a fraction later -> float64 for every row."""
    src = tmp_path / "values.csv"
    src.write_text("v,empty,flag,price\n1,,true,1.5\n2,,FALSE,2.5\n3,,,3.25\n4.5,,True,4.0\n")
    report = convert_table(src, tmp_path / "values.h5", label="price", rows_per_read=2, shuffle=True, seed=2)
    assert report.samples == {"train": 4}
    order = np.random.default_rng(2).permutation(4)
    with h5ml.open(tmp_path / "values.h5") as ds:
        part = ds["train"]
        assert part.shuffle_seed == 2
        np.testing.assert_array_equal(part["v"][:], np.array([1.0, 2.0, 3.0, 4.5])[order])
        assert part["empty"].dtype == np.float64 and np.isnan(part["empty"][:]).all()
        np.testing.assert_array_equal(part["flag"][:], np.array([1.0, 0.0, np.nan, 1.0])[order])  # booleans, missing
        assert part["price"].encoding == "dense" and part["price"].role == "target"
        np.testing.assert_array_equal(part["price"][:], np.array([1.5, 2.5, 3.25, 4.0])[order])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["values.csv", "values.h5"]


_BAD_CSV = "a,b,c\n1,2.5,x\n2,oops,y\n3,4.5,z,extra\n4,5.5,w\n5,,v\n"


def test_bad_csv_stops_and_leaves_the_output(tmp_path: Path) -> None:
    src, out = tmp_path / "bad.csv", tmp_path / "bad.h5"
    out.write_bytes(b"old")
    src.write_text(_BAD_CSV)
    with pytest.raises(h5ml.IngestError, match=r"bad\.csv: a row has more fields than the header .*line 4, saw 4"):
        convert_table(src, out, overwrite=True)
    src.write_text(_BAD_CSV.replace(",extra", ""))
    with pytest.raises(h5ml.IngestError, match=r"bad\.csv:row 2 .*column 'b' holds 'oops', which is not a number"):
        convert_table(src, out, overwrite=True)
    assert out.read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.csv", "bad.h5"]


def test_bad_csv_rows_are_skipped_and_recorded(tmp_path: Path) -> None:
    src, out = tmp_path / "bad.csv", tmp_path / "bad.h5"
    src.write_text(_BAD_CSV)
    report = convert_table(src, out, on_error="skip", rows_per_read=2)
    assert report.samples == {"train": 3}
    assert [s.path for s in report.skipped] == [f"{src}:line 4", f"{src}:row 2"]
    with h5ml.open(out) as ds:
        np.testing.assert_array_equal(ds["train"]["a"][:], [1, 4, 5])
        np.testing.assert_array_equal(ds["train"]["b"][:], [2.5, 5.5, np.nan])
        assert list(ds["train"]["c"][:]) == ["x", "w", "v"]
        assert json.loads(ds.attrs[SKIPPED_ATTR]) == [s.to_json() for s in report.skipped]
    _assert_strictly_valid(out)


@pytest.mark.parametrize("on_error", ["stop", "skip"])
def test_unreadable_tables(tmp_path: Path, on_error: str) -> None:
    fake = tmp_path / "fake.parquet"
    fake.write_text("a,b\n1,2\n")
    with pytest.raises(h5ml.IngestError, match=r"fake\.parquet: cannot be read as Parquet"):
        convert_table(fake, tmp_path / "out.h5", on_error=on_error)  # type: ignore[arg-type]
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    with pytest.raises(h5ml.IngestError, match=r"empty\.csv: the file is empty"):
        convert_table(empty, tmp_path / "out.h5", on_error=on_error)  # type: ignore[arg-type]
    wide = tmp_path / "wide.csv"
    wide.write_text("a,b\n1,2,3\n4,5,6\n")  # every row longer than the header
    with pytest.raises(h5ml.IngestError, match=r"wide\.csv: the rows do not match the header"):
        convert_table(wide, tmp_path / "out.h5", on_error=on_error)  # type: ignore[arg-type]
    assert not (tmp_path / "out.h5").exists()


def test_split_column_without_value_and_option_errors(tmp_path: Path) -> None:
    src = tmp_path / "folds.csv"
    src.write_text("x,fold\n1,train\n2,\n3,test\n")
    with pytest.raises(h5ml.IngestError, match=r"folds\.csv:row 2 .*split column 'fold' holds no value"):
        convert_table(src, tmp_path / "out.h5", split_column="fold")
    report = convert_table(src, tmp_path / "out.h5", split_column="fold", on_error="skip")
    assert report.samples == {"train": 1, "test": 1} and report.skipped[0].path == f"{src}:row 2"
    with pytest.raises(h5ml.IngestError, match=r"no column named \['label'\]"):
        convert_table(src, tmp_path / "x.h5", label="label")
    with pytest.raises(ValueError, match="not both"):
        convert_table(src, tmp_path / "x.h5", split_column="fold", split_ratios={"train": 1.0})
    with pytest.raises(ValueError, match="add up"):
        convert_table(src, tmp_path / "x.h5", split_ratios={"train": 0.5})
    with pytest.raises(h5ml.IngestError, match="cannot tell the table format"):
        convert_table(src.rename(tmp_path / "folds.dat"), tmp_path / "x.h5")
    assert not (tmp_path / "x.h5").exists()


def test_strings_option_keeps_codes_as_text_and_parquet_types(tmp_path: Path) -> None:
    src = tmp_path / "codes.csv"
    src.write_text("zip,n\n02134,1\n10001,2\n,3\n")
    convert_table(src, tmp_path / "codes.h5", strings=["zip"])
    with h5ml.open(tmp_path / "codes.h5") as ds:
        assert ds["train"]["zip"].encoding == "string" and list(ds["train"]["zip"][:]) == ["02134", "10001", ""]
        assert ds["train"]["n"].dtype == np.int64

    stamps = tmp_path / "stamps.parquet"
    pd.DataFrame({"t": pd.to_datetime(["2024-01-02", "2024-03-04"]), "v": [1.5, 2.5]}).to_parquet(stamps)
    with pytest.raises(h5ml.IngestError, match=r"column 't' has the Parquet type timestamp.*leave it out"):
        convert_table(stamps, tmp_path / "stamps.h5")
    convert_table(stamps, tmp_path / "stamps.h5", strings=["t"])
    with h5ml.open(tmp_path / "stamps.h5") as ds:
        assert list(ds["train"]["t"][:]) == ["2024-01-02 00:00:00", "2024-03-04 00:00:00"]
    _assert_strictly_valid(tmp_path / "stamps.h5")


# -- delimiters and headers -----------------------------------------------------------------------


def _cli(*args: str) -> tuple[int, str]:
    import io

    from h5ml.tools import cli

    out, err = io.StringIO(), io.StringIO()
    code = cli.run(list(args), out, err)
    return code, out.getvalue() + err.getvalue()


def _columns(path: Path) -> dict[str, list[object]]:
    with h5ml.open(path) as ds:
        return {name: feature[:].tolist() for name, feature in ds["train"].features.items()}


@pytest.mark.parametrize(
    ("delimiter", "name", "option"), [(" ", "space", "space"), ("\t", "tab", "tab"), (";", "semicolon", "';'")]
)
def test_a_table_read_as_one_column_of_delimited_lines_is_refused(
    tmp_path: Path, delimiter: str, name: str, option: str
) -> None:
    """A CSV whose fields are separated by another character parses with ',' as one column of whole lines: refused,
    naming the delimiter to pass (Python and command line), nothing written; passing it gives the real columns."""
    src, out = tmp_path / "points.csv", tmp_path / "points.h5"
    lines = ["x y label", "1 2.5 a", "3 4.5 b", "5 6.5 a"]
    src.write_text("\n".join(line.replace(" ", delimiter) for line in lines) + "\n", encoding="utf-8")
    with pytest.raises(IngestError, match="the fields seem to be separated by") as info:
        convert_table(src, out)
    message = str(info.value)
    assert f"({name})" in message and f"delimiter={delimiter!r}" in message and f"--delimiter {option}" in message
    assert not out.exists()
    code, said = _cli("convert", str(src), str(out))
    assert code != 0 and f"--delimiter {option}" in said and "Traceback" not in said and not out.exists()
    convert_table(src, out, delimiter=delimiter, label="label")
    assert _columns(out) == {"x": [1, 3, 5], "y": [2.5, 4.5, 6.5], "label": [0, 1, 0]}
    code, said = _cli(
        "convert", str(src), str(tmp_path / "cli.h5"), "--delimiter", option.strip("'"), "--label", "label"
    )
    assert code == 0, said
    assert _columns(tmp_path / "cli.h5") == _columns(out)


def test_a_given_delimiter_confirms_one_column_and_text_with_spaces_is_not_refused(tmp_path: Path) -> None:
    """Spaces in free text (not the same number in every value) are no sign of a delimiter; when every value holds
    one space, delimiter=',' says the one column is meant."""
    src, out = tmp_path / "names.csv", tmp_path / "names.h5"
    src.write_text("name\nAda Lovelace\nAlan Mathison Turing\nGrace\n", encoding="utf-8")
    convert_table(src, out)
    assert _columns(out) == {"name": ["Ada Lovelace", "Alan Mathison Turing", "Grace"]}
    src.write_text("full_name\nAda Lovelace\nAlan Turing\n", encoding="utf-8")  # no space in the header
    convert_table(src, out, overwrite=True)
    assert _columns(out) == {"full_name": ["Ada Lovelace", "Alan Turing"]}
    src.write_text("Ada Lovelace\nAlan Turing\n", encoding="utf-8")  # no header, one space each: refused ...
    with pytest.raises(IngestError, match="delimiter=' '"):
        convert_table(src, out, header=False, overwrite=True)
    convert_table(src, out, header=False, delimiter=",", overwrite=True)  # ... unless the one column is confirmed
    assert _columns(out) == {"c0": ["Ada Lovelace", "Alan Turing"]}
    convert_table(src, out, header=False, delimiter=" ", overwrite=True)
    assert _columns(out) == {"c0": ["Ada", "Alan"], "c1": ["Lovelace", "Turing"]}


def test_pipe_delimiter_and_no_header(tmp_path: Path) -> None:
    """delimiter='|' (--delimiter '|') splits on bars; header=False (--no-header) keeps the first line as data and
    names the columns c0, c1, ... which the other options then name."""
    src = tmp_path / "rows.txt"
    src.write_text("1|0.5|cat\n2|1.5|dog\n3|2.5|cat\n", encoding="utf-8")
    convert_table(src, tmp_path / "a.h5", delimiter="|", header=False, label="c2")
    assert _columns(tmp_path / "a.h5") == {"c0": [1, 2, 3], "c1": [0.5, 1.5, 2.5], "c2": [0, 1, 0]}
    with h5ml.open(tmp_path / "a.h5") as ds:
        assert ds["train"]["c2"].class_names == ["cat", "dog"] and ds["train"]["c2"].role == "target"
    args = ["--from", "table", "--delimiter", "|", "--no-header", "--label", "c2"]
    code, said = _cli("convert", str(src), str(tmp_path / "b.h5"), *args)
    assert code == 0, said
    assert _columns(tmp_path / "b.h5") == _columns(tmp_path / "a.h5")


def test_delimiter_and_header_options_are_checked(tmp_path: Path) -> None:
    """A delimiter of several characters, a quote, sep= that contradicts delimiter=, and the CSV options on a
    Parquet file are refused with the parameter's name."""
    src = tmp_path / "t.csv"
    src.write_text("a;b\n1;2\n", encoding="utf-8")
    for bad in (";;", '"', ""):
        with pytest.raises(ParameterError, match="parameter delimiter, option --delimiter"):
            convert_table(src, tmp_path / "o.h5", delimiter=bad)
    with pytest.raises(ParameterError, match="sep is the former name of delimiter"):
        convert_table(src, tmp_path / "o.h5", delimiter=";", sep=",")
    convert_table(src, tmp_path / "o.h5", sep=";")  # the former name still works
    assert _columns(tmp_path / "o.h5") == {"a": [1], "b": [2]}
    pq = tmp_path / "t.parquet"
    pd.DataFrame({"a": [1]}).to_parquet(pq)
    with pytest.raises(ParameterError, match="delimiter applies to CSV files"):
        convert_table(pq, tmp_path / "p.h5", delimiter=";")
    with pytest.raises(ParameterError, match=r"header=False applies to CSV files.*option --header"):
        convert_table(pq, tmp_path / "p.h5", header=False)
