"""A soft link inside a feature (issue 14, item 5; SPEC §3.6-R2, E115).

Before: a ragged feature whose ``values`` was a soft link to a hidden dataset
of the same file was read through the link, and ``subset``/``export`` copied
the hidden data into output that validated. Now the reader refuses the
feature, and so does every command that reads it.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import h5py
import numpy as np
import pytest

import h5ml
from h5ml.errors import InvalidFileError
from h5ml.ingest import export_npz, subset
from h5ml.tools import cli


def _soft_values(path: Path) -> Path:
    """A ragged feature ``a`` whose ``values`` is a soft link to ``/_hidden`` (five 7.0)."""
    samples = [np.arange(3, dtype=np.float32), np.arange(2, dtype=np.float32)]
    h5ml.write(path, {"train": {"a": samples, "b": np.arange(2)}}, {"name": "t"})
    with h5py.File(path, "r+") as f:
        f.create_dataset("_hidden", data=np.full(5, 7, np.float32))
        del f["train/a/values"]
        f["train/a/values"] = h5py.SoftLink("/_hidden")
    return path


def test_the_reader_refuses_a_soft_linked_component(tmp_path: Path) -> None:
    """SPEC §3.6-R2: the feature is refused by name and in a whole-split read, naming the link; b still reads."""
    path = _soft_values(tmp_path / "soft.h5")
    with h5ml.open(path) as ds:
        split = ds["train"]
        with pytest.raises(InvalidFileError, match=r"/train/a/values: is a soft link.*E115") as info:
            split["a"]
        assert info.value.hdf5_path == "/train/a/values"
        with pytest.raises(InvalidFileError, match="soft link"):
            split.read(slice(None))
        assert split.read(slice(None), features=["b"])["b"].tolist() == [0, 1]
    assert "E115" in {i.code for i in h5ml.validate(path).issues}


def test_no_command_copies_what_the_link_points_to(tmp_path: Path) -> None:
    """subset and export write nothing, and dump exits 2 without printing the hidden values."""
    path = _soft_values(tmp_path / "soft.h5")
    with pytest.raises(InvalidFileError):
        subset(path, tmp_path / "s.h5")
    with pytest.raises(InvalidFileError):
        export_npz(path, tmp_path / "e.npz")
    assert not (tmp_path / "s.h5").exists() and not (tmp_path / "e.npz").exists()
    out, err = io.StringIO(), io.StringIO()
    assert cli.run(["dump", str(path)], out, err) == 2
    assert "7.0" not in out.getvalue() and "soft link" in err.getvalue()


def test_a_soft_linked_split_member_is_refused_never_left_out(tmp_path: Path) -> None:
    """SPEC §3.6-R2, §5.2-R2: a split member that is a soft link is unreadable; a whole-split read refuses it."""
    path = tmp_path / "member.h5"
    h5ml.write(path, {"train": {"b": np.arange(3)}}, {"name": "t"})
    with h5py.File(path, "r+") as f:
        f["train/c"] = h5py.SoftLink("/train/b")
    with h5ml.open(path) as ds:
        split = ds["train"]
        assert list(split.features) == ["b"]
        assert "soft, user-defined or external link" in str(split.unreadable["c"])
        with pytest.raises(InvalidFileError, match=r"/train/c: is a soft, user-defined or external link.*E115"):
            split["c"]
        with pytest.raises(InvalidFileError, match=r"features=\['b'\]"):
            split.read(slice(None))
        assert split.read(slice(None), features=["b"])["b"].tolist() == [0, 1, 2]
    assert "E115" in {i.code for i in h5ml.validate(path).issues}


def test_a_soft_linked_split_is_refused_by_every_whole_file_command(tmp_path: Path) -> None:
    """SPEC §3.6-R2: a split reached through a soft link is listed unreadable; copies, exports and dumps refuse it."""
    path = tmp_path / "split.h5"
    h5ml.write(path, {"train": {"b": np.arange(3)}, "test": {"b": np.arange(2) + 7}}, {"name": "t"})
    with h5py.File(path, "r+") as f:
        f.move("test", "_hidden")
        f["test"] = h5py.SoftLink("/_hidden")
    with h5ml.open(path) as ds:
        assert list(ds.splits) == ["train"]
        assert list(ds.unreadable_splits) == ["test"]
        with pytest.raises(InvalidFileError, match=r"/test: is a soft, user-defined or external link.*E115"):
            ds.every_split()
        with pytest.raises(InvalidFileError, match=r"/test: is a soft"):
            ds["test"]
        assert ds["train"]["b"][:].tolist() == [0, 1, 2]
    for words in (
        ["subset", str(path), str(tmp_path / "s.h5")],
        ["export", str(path), str(tmp_path / "e.npz")],
        ["dump", str(path)],
        ["verify", str(path)],
    ):
        out, err = io.StringIO(), io.StringIO()
        assert cli.run(words, out, err) == 2, words
        assert "/test: is a soft" in err.getvalue() and "Traceback" not in err.getvalue(), words
        assert "7" not in out.getvalue(), words
    assert not (tmp_path / "s.h5").exists() and not (tmp_path / "e.npz").exists()
    out, err = io.StringIO(), io.StringIO()
    assert cli.run(["inspect", str(path)], out, err) == 0
    assert "test  split cannot be read" in out.getvalue()
    summary = json.loads(_inspect_json(path))
    assert list(summary["unreadable_splits"]) == ["test"]


def _inspect_json(path: Path) -> str:
    out, err = io.StringIO(), io.StringIO()
    assert cli.run(["inspect", str(path), "--format", "json"], out, err) == 0, err.getvalue()
    return out.getvalue()
