"""Features of an encoding MAJOR the reader does not implement (SPEC §6.1-R7) and statistics as binary64 (§6.7-R4).

Real files written with plain h5py, read by the real reader, the real command
line (:func:`h5ml.tools.cli.run`, click underneath), the real PyTorch
DataLoader and Keras PyDataset.
"""

from __future__ import annotations

import json
from pathlib import Path

import h5py
import numpy as np
import pytest

import h5ml
from _files import Dense, run_cli, write_file
from h5ml.errors import EncodingError, UnknownEncodingError, UnsupportedEncodingVersionError
from h5ml.ingest import export_npz, merge, subset

FIXTURES = Path(__file__).parent.parent / "conformance_tests" / "fixtures"


def _major_2(tmp_path: Path) -> Path:
    """x (encoding 1.0, floats) beside y (encoding_version "2.0"), 4 samples."""
    path = tmp_path / "major2.h5"
    x = np.arange(8, dtype=np.float32).reshape(4, 2)
    write_file(path, {"train": {"x": Dense(x), "y": Dense(np.arange(4, dtype=np.int64))}})
    with h5py.File(path, "r+") as f:
        f["train/y"].attrs["encoding_version"] = "2.0"
    return path


def test_error_class_is_an_encoding_error_and_pickles() -> None:
    """SPEC §6.1-R7: the refusal is an EncodingError subclass, exported from h5ml, that survives pickling."""
    import pickle

    assert issubclass(UnsupportedEncodingVersionError, EncodingError)
    assert h5ml.UnsupportedEncodingVersionError is UnsupportedEncodingVersionError
    err = UnsupportedEncodingVersionError("m", path="f.h5", hdf5_path="/train/y")
    back = pickle.loads(pickle.dumps(err))
    assert type(back) is UnsupportedEncodingVersionError and (back.path, back.hdf5_path) == ("f.h5", "/train/y")


def test_split_refuses_to_read_every_feature_but_reads_the_others_by_name(tmp_path: Path) -> None:
    """SPEC §6.1-R7: y is named in Split.unreadable, refused by name and by read(features=None); x reads by name."""
    path = _major_2(tmp_path)
    with h5ml.open(path) as ds:
        split = ds["train"]
        assert list(split.features) == ["x"]
        assert list(split.unreadable) == ["y"]
        assert isinstance(split.unreadable["y"], UnsupportedEncodingVersionError)
        with pytest.raises(UnsupportedEncodingVersionError, match=r"/train/y is dense encoding 2\.0; .* dense 1\.0"):
            split["y"]
        for read_all in (lambda: split.read([0, 1]), lambda: split[0], lambda: split[:], split.every_feature):
            with pytest.raises(UnsupportedEncodingVersionError) as err:
                read_all()
            message = str(err.value)
            assert str(path) in message and "2.0" in message and "1.0" in message and "'y'" in message
            assert "features=['x']" in message and "upgrade h5ml" in message
            assert err.value.hdf5_path == "/train/y"
        assert split.read([3, 0], features=["x"])["x"].tolist() == [[6.0, 7.0], [0.0, 1.0]]


def test_newer_minor_unknown_encoding_is_still_left_out(tmp_path: Path) -> None:
    """§1.4.1: an unknown *encoding* in a newer-MINOR file is ignored (listed as unreadable); every feature reads."""
    path = tmp_path / "v17.h5"
    write_file(path, {"train": {"x": Dense(np.arange(3))}}, root={"format_version": "1.7"})
    with h5py.File(path, "r+") as f:
        f["train"].create_group("sparse").attrs.update({"encoding": "sparse", "encoding_version": "1.0"})
    with h5ml.open(path) as ds:
        assert ds["train"].every_feature() == ("x",)
        assert ds["train"].read(slice(None))["x"].tolist() == [0, 1, 2]
        assert list(ds["train"].unreadable) == ["sparse"]


def test_unknown_encoding_of_a_file_that_is_not_newer_is_refused_whole(tmp_path: Path) -> None:
    """SPEC §1.4.1-R1: only a newer MINOR makes an unknown encoding ignorable; in a 1.0 file (E131) it is refused.

    Reading every feature raises UnknownEncodingError naming the feature and the others to read by
    name, the feature x still reads by name, and ``h5ml dump`` exits 2 with one line.
    """
    path = tmp_path / "v10.h5"
    write_file(path, {"train": {"x": Dense(np.arange(3))}})
    with h5py.File(path, "r+") as f:
        f["train"].create_group("sparse").attrs.update({"encoding": "sparse", "encoding_version": "1.0"})
    with h5ml.open(path) as ds:
        assert list(ds["train"].features) == ["x"]
        with pytest.raises(UnknownEncodingError, match=r"'sparse'.*features=\['x'\] \(--feature x\)") as info:
            ds["train"].read(slice(None))
        assert info.value.hdf5_path == "/train/sparse"
        assert ds["train"].read(slice(None), features=["x"])["x"].tolist() == [0, 1, 2]
    code, out, err = run_cli("dump", str(path))
    assert (code, out) == (2, "") and "Traceback" not in err and "sparse" in err


def test_a_dense_feature_the_reader_cannot_decode_is_refused_whole(tmp_path: Path) -> None:
    """A dense feature of a compound type (E113) is not left out of a read of every feature: EncodingError."""
    path = tmp_path / "compound.h5"
    write_file(path, {"train": {"x": Dense(np.arange(4))}})
    with h5py.File(path, "r+") as f:
        y = f["train"].create_dataset("y", data=np.zeros(4, dtype=[("a", "<i4"), ("b", "<f8")]))
        y.attrs.update({"encoding": "dense", "encoding_version": "1.0"})
    with h5ml.open(path) as ds:
        with pytest.raises(EncodingError, match=r"/train/y.*not a numeric type.*features=\['x'\]"):
            ds["train"].read(slice(None))
        assert ds["train"]["x"][:].tolist() == [0, 1, 2, 3]


@pytest.mark.parametrize("fixture", ["e132-encoding-major-2", "e132-encoding-major-2-beside-readable"])
def test_dump_exits_non_zero_with_the_reason(fixture: str) -> None:
    """SPEC §6.1-R7: ``h5ml dump`` of the conformance fixtures refuses (exit 2, one line, no traceback)."""
    code, out, err = run_cli("dump", str(FIXTURES / f"{fixture}.h5"))
    assert code == 2 and out == ""
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert "encoding 2.0" in err and "implements dense 1.0" in err and "upgrade h5ml" in err


def test_dump_names_the_cli_option_and_reads_the_other_feature() -> None:
    """SPEC §6.1-R7: the message names ``--feature x``, not Python's features=; ``--feature x`` decodes x alone."""
    fixture = str(FIXTURES / "e132-encoding-major-2-beside-readable.h5")
    code, _, err = run_cli("dump", fixture)
    assert code == 2 and "--feature x" in err and "features=" not in err
    code, out, _ = run_cli("dump", "--feature", "x", fixture)
    assert code == 0
    assert json.loads(out)["splits"]["train"]["features"]["x"]["values"] == [[0.5, 1.0, 1.5], [2.0, 2.5, 3.0]]
    code, _, err = run_cli("dump", "--feature", "y", fixture)  # the reader's own reason, not "no such feature"
    assert code == 2 and "encoding 2.0" in err and "no split has" not in err


def test_inspect_lists_the_feature_it_cannot_read(tmp_path: Path) -> None:
    """SPEC §6.1-R7: ``h5ml inspect`` shows y with its reason rather than leaving it out."""
    path = _major_2(tmp_path)
    code, out, err = run_cli("inspect", "--format", "json", str(path))
    assert code == 0, err
    document = json.loads(out)
    split = document["splits"][0]
    assert [f["name"] for f in split["features"]] == ["x"]
    assert list(split["unreadable"]) == ["y"] and "encoding 2.0" in split["unreadable"]["y"]


def test_subset_export_merge_refuse_rather_than_drop(tmp_path: Path) -> None:
    """SPEC §6.1-R7: subset, export and merge of every feature refuse; nothing is written; naming x works."""
    path = _major_2(tmp_path)
    for make in (
        lambda out: subset(path, out),
        lambda out: export_npz(path, out.with_suffix(".npz")),
        lambda out: merge([path], out, id_feature=None),
    ):
        out = tmp_path / "out.h5"
        with pytest.raises(UnsupportedEncodingVersionError, match="'y'"):
            make(out)
        assert not out.exists() and not out.with_suffix(".npz").exists()
    subset(path, tmp_path / "x.h5", features=["x"])
    with h5ml.open(tmp_path / "x.h5") as ds:
        assert list(ds["train"].features) == ["x"]
    code, _, err = run_cli("subset", str(path), str(tmp_path / "cli.h5"))
    assert code == 2 and "Traceback" not in err and "--feature x" in err


def test_torch_dataloader_refuses_every_feature(tmp_path: Path) -> None:
    """SPEC §6.1-R7: H5MLDataset without ``features`` raises the same error; with features=["x"] a real
    DataLoader reads x."""
    torch = pytest.importorskip("torch")
    from h5ml_torch import H5MLDataset

    path = _major_2(tmp_path)
    with pytest.raises(UnsupportedEncodingVersionError, match="'y'"):
        len(H5MLDataset(path, "train"))
    data = H5MLDataset(path, "train", features=["x"])
    batches = list(torch.utils.data.DataLoader(data, batch_size=4))
    assert batches[0]["x"].tolist() == [[0.0, 1.0], [2.0, 3.0], [4.0, 5.0], [6.0, 7.0]]


def test_keras_pydataset_refuses_every_feature(tmp_path: Path) -> None:
    """SPEC §6.1-R7: H5MLPyDataset over every feature raises the same error."""
    import os

    os.environ.setdefault("KERAS_BACKEND", "torch")
    pytest.importorskip("keras")
    from h5ml_keras import H5MLPyDataset

    with pytest.raises(UnsupportedEncodingVersionError, match="'y'"):
        H5MLPyDataset(_major_2(tmp_path), "train", 2)


# -- statistics as binary64 (SPEC §6.7-R4) -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("stored", "expected"),
    [
        (np.float32(0.1), float(np.float32(0.1))),
        (np.dtype(">f8").type(2.5), 2.5),
        (np.int64(2**53 + 1), float(2**53)),  # nearest binary64, ties to even
        (np.int64(-7), -7.0),
    ],
)
def test_statistics_are_binary64(tmp_path: Path, stored: np.generic, expected: float) -> None:
    """SPEC §6.7-R4: stats stored as float32, big-endian float64 or int64 come back as Python floats."""
    path = tmp_path / "stats.h5"
    write_file(path, {"train": {"x": Dense(np.arange(4, dtype=np.float64))}})
    with h5py.File(path, "r+") as f:
        attrs = f["train/x"].attrs
        for name in ("stats_min", "stats_max", "stats_mean", "stats_std"):
            attrs[name] = stored
        attrs["stats_count"] = np.int32(4)
    with h5ml.open(path) as ds:
        stats = ds["train"]["x"].statistics
        assert stats.count == 4 and type(stats.count) is int
        for value in (stats.min, stats.max, stats.mean, stats.std):
            assert type(value) is float and value == expected
    code, out, _ = run_cli("inspect", "--format", "json", str(path))
    assert code == 0
    document = json.loads(out)
    split = document["splits"][0]
    assert split["features"][0]["stats"]["stats_min"] == expected
    assert isinstance(split["features"][0]["stats"]["stats_min"], float)


def test_statistics_absent_or_of_the_wrong_type(tmp_path: Path) -> None:
    """§6.7: absent statistics are None; a string or a negative count is refused naming the attribute (E117)."""
    path = tmp_path / "stats.h5"
    write_file(path, {"train": {"x": Dense(np.arange(4))}})
    with h5ml.open(path) as ds:
        assert ds["train"]["x"].statistics == h5ml.reader.statistics.Statistics()
    for name, value in (("stats_mean", "high"), ("stats_count", np.int64(-1))):
        with h5py.File(path, "r+") as f:
            f["train/x"].attrs[name] = value
        with h5ml.open(path) as ds, pytest.raises(h5ml.InvalidFileError, match=name):
            ds["train"]["x"].statistics  # noqa: B018
        with h5py.File(path, "r+") as f:
            del f["train/x"].attrs[name]
