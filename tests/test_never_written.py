"""Storage never written (§3.5.1, E146) on real files: chunks outside the extent, the advice, inspect, append.

Each test writes a file with the reference writer, then rebuilds one dataset with h5py so that part of it
is never written (and, for §3.5.1-R2, patches the dataspace so that a chunk lies outside the extent), and
checks the validator (shallow and deep), the reader, ``h5ml inspect`` and the writer's append mode on it.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import pytest

import h5ml
from _files import run_cli
from h5ml.errors import InvalidFileError, WriterError
from h5ml.model.allocation import unallocated_storage
from h5ml.validator.runner import validate

META = {"name": "t", "license": "CC0-1.0", "description": "d"}


def _replace(f: h5py.File, hdf5_path: str, **create: Any) -> h5py.Dataset:
    """Replace a dataset by ``create_dataset(**create)``, keeping its attributes but its fingerprint."""
    old = f[hdf5_path]
    attrs = {k: old.attrs[k] for k in old.attrs if k != "fingerprint"}
    del f[hdf5_path]
    new = f.create_dataset(hdf5_path, **create)
    for key, value in attrs.items():
        new.attrs[key] = value
    return new


def _without_fingerprints(f: h5py.File) -> None:
    """The fingerprints describe the data as written by h5ml; the tests change the data."""
    f.visititems(lambda _name, obj: obj.attrs.__delitem__("fingerprint") if "fingerprint" in obj.attrs else None)
    del f.attrs["fingerprint"]


def _chunk_outside_extent(path: Path) -> Path:
    """train/y: extent 8 in chunks of 2; chunks at rows 0, 4, 6 and 8 written, row 2 never; row 8 outside.

    The chunk index holds 4 chunks, as many as cover the extent, so counting every chunk in the index
    would hide the missing one (the breaker's finding 1).
    """
    # without checksums (SPEC §8.4): the replaced dataset's would no longer fit it (E163), which is not the point here
    h5ml.write(path, {"train": {"x": np.arange(16.0).reshape(8, 2), "y": np.arange(8)}}, metadata=META, checksums=False)
    with h5py.File(path, "r+") as f:
        _without_fingerprints(f)
        y = _replace(f, "train/y", shape=(10,), maxshape=(None,), dtype="<i8", chunks=(2,))
        for row in (0, 4, 6, 8):
            y[row : row + 2] = [row + 100, row + 101]
    data = bytearray(path.read_bytes())
    # the dataspace message: current extent 10, then the maximum (unlimited: all ones)
    pattern = (10).to_bytes(8, "little") + b"\xff" * 8
    assert data.count(pattern) == 1
    at = data.index(pattern)
    data[at : at + 8] = (8).to_bytes(8, "little")  # the extent shrinks to 8; the chunk index keeps row 8
    path.write_bytes(bytes(data))
    with h5py.File(path, "r") as f:
        assert f["train/y"].shape == (8,) and f["train/y"].id.get_num_chunks() == 4
    return path


def _partly_written(path: Path, rows: tuple[int, ...], *, n: int = 8) -> Path:
    """train/x of ``n`` rows in chunks of 2 rows; only the chunks starting at ``rows`` are written."""
    h5ml.write(path, {"train": {"x": np.arange(2.0 * n).reshape(n, 2), "y": np.arange(n)}}, metadata=META)
    with h5py.File(path, "r+") as f:
        _without_fingerprints(f)
        x = _replace(f, "train/x", shape=(n, 2), maxshape=(None, 2), dtype="<f8", chunks=(2, 2))
        for row in rows:
            x[row : row + 2] = 1.0
    return path


def _e146(path: Path, *, deep: bool) -> list[str]:
    return [i.message for i in validate(path, deep=deep).issues if i.code == "E146"]


# --------------------------------------------------------------------------- §3.5.1-R2: chunks outside the extent


@pytest.mark.parametrize("deep", [False, True])
def test_a_chunk_outside_the_extent_does_not_count(tmp_path: Path, deep: bool) -> None:
    """SPEC §3.5.1-R1, §3.5.1-R2: 3 of the 4 chunks within the extent written, 1 beyond it: E146, shallow and deep.

    The validator of main said VALID here, counting the chunk beyond the extent in place of the missing one.
    """
    path = _chunk_outside_extent(tmp_path / "f1.h5")
    report = validate(path, deep=deep)
    assert not report.valid
    errors = [(i.code, i.path) for i in report.issues if i.severity == "error"]
    assert errors == [("E146", "/train/y")]
    (message,) = _e146(path, deep=deep)
    assert "in 4 chunks of (2,) but only 3 were ever written" in message
    assert "the first missing one starts at element (2,)" in message
    assert "1 more chunk(s) of its index lie outside the current extent and do not count" in message
    assert "E145" not in report.codes


def test_the_reader_refuses_a_chunk_hidden_by_one_outside_the_extent(tmp_path: Path) -> None:
    """SPEC §3.5.1-S1: the reader returned [100, 101, 0, 0, 104, ...] (fill values for row 2); now it refuses."""
    path = _chunk_outside_extent(tmp_path / "f1.h5")
    with h5ml.open(path) as ds:
        np.testing.assert_array_equal(ds["train"]["x"][:2], [[0.0, 1.0], [2.0, 3.0]])  # x is whole
        with pytest.raises(InvalidFileError, match=r"/train/y declares shape \(8,\).*E146") as caught:
            ds["train"]["y"][:]
    assert str(path) in str(caught.value)


def test_the_command_line_says_invalid_for_a_chunk_outside_the_extent(tmp_path: Path) -> None:
    """SPEC §3.5.1-R2 through ``h5ml validate`` and ``--deep``: exit 1, E146 in the JSON report."""
    path = _chunk_outside_extent(tmp_path / "f1.h5")
    for flags in ([], ["--deep"]):
        code, out, err = run_cli("validate", "--format", "json", *flags, str(path))
        assert code == 1, err
        (entry,) = json.loads(out)["files"]
        assert [(i["code"], i["path"]) for i in entry["issues"] if i["severity"] == "error"] == [("E146", "/train/y")]


def test_chunks_within_the_extent_are_counted_alone(tmp_path: Path) -> None:
    """A dataset whose every chunk within the extent is written stays valid with chunks beyond it (rows 8, 9)."""
    path = tmp_path / "beyond.h5"
    h5ml.write(path, {"train": {"y": np.arange(8)}}, metadata=META)
    with h5py.File(path, "r+") as f:
        _without_fingerprints(f)
        y = _replace(f, "train/y", shape=(10,), maxshape=(None,), dtype="<i8", chunks=(2,))
        y[:] = np.arange(10)
    data = bytearray(path.read_bytes())
    at = data.index((10).to_bytes(8, "little") + b"\xff" * 8)
    data[at : at + 8] = (8).to_bytes(8, "little")
    path.write_bytes(bytes(data))
    with h5py.File(path, "r") as f:
        assert f["train/y"].id.get_num_chunks() == 5 and unallocated_storage(f["train/y"]) is None
    assert "E146" not in validate(path, deep=True).codes
    with h5ml.open(path) as ds:
        np.testing.assert_array_equal(ds["train"]["y"][:], np.arange(8))


def _chunk_listed_twice(path: Path, compression: str | None) -> Path:
    """train/x: 8 rows in chunks of 2, all written; then the chunk index (a version 1 B-tree) is patched so the
    entry of the chunk at row 2 names row 0: the index lists 4 chunks, one of them twice, and rows 2-3 are lost
    (HDF5 returns fill values for them and the values of chunk 2 for rows 0-1). Found by a breaker helper."""
    x = np.arange(16.0).reshape(8, 2) + 100
    h5ml.write(path, {"train": {"x": x, "y": np.arange(8)}}, metadata=META, checksums=False)
    with h5py.File(path, "r+") as f:
        _without_fingerprints(f)
        d = _replace(
            f, "train/x", shape=(8, 2), maxshape=(None, 2), dtype="<f8", chunks=(2, 2), compression=compression
        )
        d[...] = x
        size = d.id.get_chunk_info_by_coord((2, 0)).size
    data = bytearray(path.read_bytes())
    key = struct.pack("<II3Q", size, 0, 2, 0, 0)  # B-tree key: chunk bytes, filter mask, offset (2, 0) + element axis
    assert data.count(key) == 1
    at = data.index(key)
    data[at : at + len(key)] = struct.pack("<II3Q", size, 0, 0, 0, 0)
    path.write_bytes(bytes(data))
    with h5py.File(path, "r") as f:
        listed: list[tuple[int, ...]] = []
        f["train/x"].id.chunk_iter(lambda info: listed.append(info.chunk_offset))
        assert sorted(listed) == [(0, 0), (0, 0), (4, 0), (6, 0)]
        assert f["train/x"][2, 0] == 0.0  # what plain h5py returns: the fill value
    return path


@pytest.mark.parametrize("compression", [None, "gzip"])
def test_a_chunk_listed_twice_in_the_index_does_not_count_twice(tmp_path: Path, compression: str | None) -> None:
    """SPEC §3.5.1-R2: 4 index entries for 4 chunks, but one offset twice: E146, shallow and deep; the reader
    refuses every read instead of returning fill values and another chunk's values (main returned both)."""
    path = _chunk_listed_twice(tmp_path / "twice.h5", compression)
    for deep in (False, True):
        report = validate(path, deep=deep)
        assert [(i.code, i.path) for i in report.issues if i.severity == "error"] == [("E146", "/train/x")]
        (message,) = _e146(path, deep=deep)
        assert (
            "in 4 chunks of (2, 2) but only 3 were ever written (the first missing one starts at element (2, 0))"
            in message
        )
        assert (
            "; 1 more entry of its index repeats the offset of a chunk listed before (a damaged chunk index)" in message
        )
    with h5ml.open(path) as ds:
        split = ds["train"]
        for read in READS.values():
            with pytest.raises(InvalidFileError, match=r"/train/x declares shape \(8, 2\).*only 3 were ever written"):
                read(split)
    code, _out, err = run_cli("validate", str(path))
    assert code == 1, err


# --------------------------------------------------------------------------- the E146 advice


def test_missing_chunks_at_the_end_advise_keeping_the_rows_written(tmp_path: Path) -> None:
    """Rows 0-3 of 8 written (the writer stopped early): shrinking to 4 samples makes the feature whole."""
    path = _partly_written(tmp_path / "end.h5", (0, 2))
    with h5py.File(path, "r") as f:
        missing = unallocated_storage(f["train/x"])
    assert missing is not None and missing.rows_written == 4
    (message,) = _e146(path, deep=False)
    assert "keep only the first 4 samples, which were written" in message
    assert "num_samples" in message


@pytest.mark.parametrize("rows", [(0, 4, 6), (2, 4, 6), (0, 2, 6)], ids=["middle", "first", "before-last"])
def test_a_chunk_missing_before_written_ones_advises_writing_again(tmp_path: Path, rows: tuple[int, ...]) -> None:
    """A chunk missing before a written one: shrinking would not make the feature whole, so it is not offered."""
    path = _partly_written(tmp_path / "middle.h5", rows)
    with h5py.File(path, "r") as f:
        missing = unallocated_storage(f["train/x"])
    assert missing is not None and missing.rows_written is None
    (message,) = _e146(path, deep=True)
    assert message.endswith("write the feature /train/x again")
    assert "shrink" not in message and "keep only" not in message


def test_a_contiguous_dataset_never_allocated_advises_writing_again(tmp_path: Path) -> None:
    """A contiguous dataset has no rows written at all: no shrinking advice."""
    path = tmp_path / "contiguous.h5"
    h5ml.write(path, {"train": {"x": np.arange(8.0)}}, metadata=META)
    with h5py.File(path, "r+") as f:
        _without_fingerprints(f)
        _replace(f, "train/x", shape=(8,), dtype="<f8")
    (message,) = _e146(path, deep=False)
    assert "no storage allocated" in message and message.endswith("write the feature /train/x again")


def test_class_names_never_written_advise_writing_again(tmp_path: Path) -> None:
    """Class names are not rows of samples: a categorical feature is written again, never shrunk."""
    path = tmp_path / "names.h5"
    h5ml.write(path, {"train": {"c": h5ml.Categorical([0, 1, 0], ["a", "b"])}}, metadata=META)
    with h5py.File(path, "r+") as f:
        _without_fingerprints(f)
        _replace(f, "train/c/class_names", shape=(2,), dtype=h5py.string_dtype())
    (message,) = _e146(path, deep=True)
    assert "/train/c/class_names" in message and message.endswith("write the feature /train/c again")


def test_a_component_missing_at_the_end_is_not_shrunk_alone(tmp_path: Path) -> None:
    """Ragged values missing at the end: the offsets still point there, so only writing again helps."""
    path = tmp_path / "ragged.h5"
    h5ml.write(path, {"train": {"r": [np.arange(3.0), np.arange(5.0)]}}, metadata=META)
    with h5py.File(path, "r+") as f:
        _without_fingerprints(f)
        values = _replace(f, "train/r/values", shape=(8,), maxshape=(None,), dtype="<f8", chunks=(2,))
        values[:4] = 1.0
    with h5py.File(path, "r") as f:
        missing = unallocated_storage(f["train/r/values"])
    assert missing is not None and missing.rows_written == 4
    (message,) = _e146(path, deep=False)
    assert message.endswith("write the feature /train/r again")


# --------------------------------------------------------------------------- the reader's one walk of the chunk index


def _rows_missing_a_chunk(path: Path, compression: str | None) -> Path:
    """train/x of 8 rows in chunks of 2 rows, plain or gzip; the chunk of rows 2-3 never written."""
    h5ml.write(path, {"train": {"x": np.arange(16.0).reshape(8, 2), "y": np.arange(8)}}, metadata=META)
    with h5py.File(path, "r+") as f:
        _without_fingerprints(f)
        x = _replace(f, "train/x", shape=(8, 2), dtype="<f8", chunks=(2, 2), compression=compression)
        for row in (0, 4, 6):
            x[row : row + 2] = np.arange(row * 2.0, row * 2.0 + 4).reshape(2, 2)
    return path


READS = {
    "slice": lambda split: split["x"][0:2],
    "sample": lambda split: split["x"][0],
    "batch": lambda split: split.read(np.array([0, 1], dtype=np.int64), features=["x"]),
    "shuffled batch": lambda split: split.read(np.array([5, 0], dtype=np.int64), features=["x"]),
}


@pytest.mark.parametrize("compression", [None, "gzip"])
@pytest.mark.parametrize("read", list(READS))
def test_a_chunk_never_written_is_refused_by_every_read(tmp_path: Path, compression: str | None, read: str) -> None:
    """SPEC §3.5.1-S1: with a chunk missing, the memory-map and decode paths are not built, so the index is walked
    again for the refusal: a read of written rows (0 and 1) is refused too, before any value is returned."""
    path = _rows_missing_a_chunk(tmp_path / "gap.h5", compression)
    with h5ml.open(path) as ds:
        split = ds["train"]
        with pytest.raises(InvalidFileError, match=r"/train/x declares shape \(8, 2\) in 4 chunks .* only 3 were"):
            READS[read](split)


@pytest.mark.parametrize("compression", [None, "gzip"])
def test_a_whole_file_walks_its_chunk_index_once(
    tmp_path: Path, compression: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first read of a complete chunked dataset walks its chunk index once: the walk of the memory-map (or
    decode) path shows every chunk written, so the check before the read compares the storage size alone."""
    path = tmp_path / "whole.h5"
    x = np.arange(40000 * 16.0).reshape(40000, 16)  # 5 MB: several chunks of whole rows
    h5ml.write(path, {"train": {"x": x}}, metadata=META, compression=compression)
    walks: list[str] = []
    with h5ml.open(path) as ds:
        node = ds.h5file["train/x"]
        assert node.chunks is not None and node.chunks[1:] == (16,) and node.id.get_num_chunks() > 1
        monkeypatch.setattr(
            "h5ml.reader.unwritten.storage_verdict", lambda *a: walks.append("second walk") or (None, None)
        )
        np.testing.assert_array_equal(ds["train"].read(np.arange(8, 24), features=["x"])["x"], x[8:24])
        np.testing.assert_array_equal(ds["train"]["x"][30000], x[30000])
        np.testing.assert_array_equal(ds["train"]["x"][100:300], x[100:300])
    assert walks == []


# --------------------------------------------------------------------------- h5ml inspect: no fill values as data


def _rich(path: Path, component: str) -> Path:
    """The breaker's f6 files: a ragged feature with shapes and a categorical; ``component`` recreated unwritten."""
    splits = {
        "train": {
            "rs": [np.zeros((2, 3)), np.zeros((1, 3)), np.ones((2, 2))],
            "c": h5ml.Categorical([0, 1, 0], ["a", "b"]),
        }
    }
    h5ml.write(path, splits, metadata=META)
    with h5py.File(path, "r+") as f:
        old = f[f"train/{component}"]
        shape, dtype, chunks = old.shape, old.dtype, old.chunks
        _replace(f, f"train/{component}", shape=shape, dtype=dtype, chunks=chunks, maxshape=(None, *shape[1:]))
    return path


def _inspect_json(path: Path) -> dict[str, Any]:
    code, out, err = run_cli("inspect", "--format", "json", str(path))
    assert code == 0, err
    document: dict[str, Any] = json.loads(out)
    return {f["name"]: f for f in document["splits"][0]["features"]}


def test_inspect_does_not_count_classes_from_codes_never_written(tmp_path: Path) -> None:
    """SPEC §3.5.1-S1: main printed "classes (samples each) a 3, b 0" from the fill value 0 of the codes."""
    path = _rich(tmp_path / "f6_codes.h5", "c/codes")
    features = _inspect_json(path)
    c = features["c"]
    assert set(c["never_written"]) == {"codes"} and "/train/c/codes" in c["never_written"]["codes"]
    assert c["class_counts"] is None and c["missing_count"] is None
    assert c["class_names"] == ["a", "b"] and c["num_classes"] == 2
    assert features["rs"]["never_written"] == {} and features["rs"]["shape_min"] == [1, 2]
    code, out, _err = run_cli("inspect", str(path))
    assert code == 0
    text = " ".join(out.split())
    assert "never written (E146): /train/c/codes" in text
    assert "a 3" not in text and "samples each" not in text.split("rs ragged")[0]


def test_inspect_does_not_show_sample_shapes_never_written(tmp_path: Path) -> None:
    """SPEC §3.5.1-S1: main printed the shape "(3, 0, 0)" from the fill values of ``shapes``."""
    path = _rich(tmp_path / "f6_shapes.h5", "rs/shapes")
    features = _inspect_json(path)
    rs = features["rs"]
    assert set(rs["never_written"]) == {"shapes"}
    assert rs["shape_min"] is None and rs["shape_max"] is None and rs["length_min"] is None
    assert features["c"]["class_counts"] == [2, 1]  # the categorical is whole and counted
    code, out, _err = run_cli("inspect", str(path))
    assert code == 0
    text = " ".join(out.split())
    assert "(3, 0, 0)" not in text and "rs ragged float64 (3, ?)" in text
    assert "never written (E146): /train/rs/shapes" in text


def test_inspect_shows_a_feature_whose_offsets_were_never_written(tmp_path: Path) -> None:
    """Offsets never written: main refused the whole file; now the feature is marked and the others shown."""
    path = tmp_path / "offsets.h5"
    h5ml.write(path, {"train": {"r": [np.arange(3.0), np.arange(5.0)], "x": np.arange(2.0)}}, metadata=META)
    with h5py.File(path, "r+") as f:
        _replace(f, "train/r/offsets", shape=(3,), maxshape=(None,), dtype="<i8", chunks=(4,))
    features = _inspect_json(path)
    assert set(features["r"]["never_written"]) == {"offsets"}
    assert features["r"]["length_min"] is None and features["r"]["length_max"] is None
    assert features["x"]["never_written"] == {} and features["x"]["shape"] == [2]


# --------------------------------------------------------------------------- append mode


def test_append_refuses_class_names_never_written(tmp_path: Path) -> None:
    """SPEC §3.5.1-R1: append mode read empty class names (fill values) raw; now it refuses, naming the dataset."""
    path = tmp_path / "append.h5"
    h5ml.write(path, {"train": {"c": h5ml.Categorical([0, 1, 0], ["a", "b"])}}, metadata=META)
    with h5py.File(path, "r+") as f:
        _replace(f, "train/c/class_names", shape=(2,), dtype=h5py.string_dtype())
    with pytest.raises(WriterError, match=r"/train/c/class_names .*never written.*E146.*cannot append") as caught:
        with h5ml.Writer(path, mode="a") as writer:
            writer.append("train", {"c": h5ml.Categorical([1], ["a", "b"])})
    assert str(path) in str(caught.value)
    with h5py.File(path, "r") as f:
        assert f["train/c/codes"].shape == (3,)  # nothing was appended
