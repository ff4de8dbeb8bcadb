"""``h5ml view``: a view file of virtual datasets over the shards of a sharded dataset (SPEC §12.6, §3.6, §10.1).

Real shards written with ``h5ml.write``, a real index (``describe_shard`` +
``write_index``), the view read through h5py, through the Debian ``h5dump``
from another working directory, through ``h5ml.open``, and judged by the
validator; the bad views are real files whose virtual datasets point
outside the folder, at unlisted files, or at missing shards.
"""

from __future__ import annotations

import io
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import pytest

import h5ml
from h5ml import spec
from h5ml.ingest.view import write_view
from h5ml.model.shard_files import describe_shard
from h5ml.model.shard_index import ShardIndex, index_fingerprint, write_index
from h5ml.model.values import Categorical
from h5ml.model.view_files import VIEW_INDEX_FINGERPRINT, VIEW_OF
from h5ml.tools import cli

SIZES = {"train": (3, 0, 4), "test": (2,)}
#: What an empty shard cannot tell the writer: every feature's encoding and dtype.
SPECS: dict[str, Any] = {
    "x": {"encoding": "dense", "dtype": "float32"},
    "label": {"encoding": "categorical", "class_names": ["cat", "dog", "owl"]},
    "clip": {"encoding": "ragged", "dtype": "int16"},
    "mask": {"encoding": "ragged", "dtype": "float32", "sample_ndim": 2},
    "caption": {"encoding": "string"},
    "blob": {"encoding": "bytes"},
}


def _split(name: str, position: int, n: int) -> dict[str, Any]:
    base = 100 * position + (0 if name == "train" else 50)
    return {
        "x": (np.arange(n * 6, dtype=np.float32).reshape(n, 2, 3) + base),
        "label": Categorical(np.array([k % 3 - (k == 1) for k in range(n)], dtype=np.int64), ["cat", "dog", "owl"]),
        "clip": [np.arange(k + position, dtype=np.int16) + base for k in range(n)],
        "mask": [np.ones((k + 1, 2), dtype=np.float32) * (base + k) for k in range(n)],
        "caption": [f"{name} {position} {k} ü" for k in range(n)],
        "blob": [bytes([position, k]) * k for k in range(n)],
    }


def make_sharded(folder: Path) -> tuple[Path, dict[str, dict[str, Any]]]:
    """A sharded dataset with every encoding (an empty shard in train); returns the index and the whole splits."""
    entries = {}
    whole: dict[str, dict[str, list[Any]]] = {}
    for split, sizes in SIZES.items():
        (folder / split).mkdir(parents=True)
        shards = []
        description = None
        for position, n in enumerate(sizes):
            rel = f"{split}/{split}-{position:05d}.h5"
            values = _split(split, position, n)
            h5ml.write(
                folder / rel,
                {split: values},
                {"name": "demo", "license": "CC0-1.0", "description": "d"},
                features=SPECS,
            )
            description = describe_shard(folder / rel)
            shards.append(description.entry(rel))
            for key, value in values.items():
                seq = list(value.codes) if isinstance(value, Categorical) else list(value)
                whole.setdefault(split, {}).setdefault(key, []).extend(seq)
        assert description is not None
        entries[split] = description.split_entry(tuple(shards))
    index = ShardIndex(
        format_version=spec.FORMAT_VERSION_STRING,
        metadata=dict(description.card),
        splits=entries,
        fingerprint=index_fingerprint(entries),
    )
    return write_index(index, folder), whole


@pytest.fixture
def sharded(tmp_path: Path) -> tuple[Path, dict[str, dict[str, Any]]]:
    return make_sharded(tmp_path / "ds")


def run_cli(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = cli.run(list(args), out, err)
    return code, out.getvalue(), err.getvalue()


def codes(path: Path, deep: bool = True) -> set[tuple[str, str]]:
    return {(i.code, i.path) for i in h5ml.validate(path, deep=deep).issues if i.code[0] == "E"}


def _equal(got: Any, want: list[Any]) -> None:
    assert len(got) == len(want)
    for a, b in zip(got, want, strict=True):
        assert np.array_equal(np.asarray(a), np.asarray(b))


def test_view_reads_as_the_sharded_dataset(sharded: tuple[Path, dict[str, dict[str, Any]]], tmp_path: Path) -> None:
    """A view read by h5ml.open from another folder equals the shards concatenated (SPEC §12.6-R3, §10.1-R4)."""
    index, whole = sharded
    view = write_view(index, index.parent / "view.h5")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    cwd = os.getcwd()
    os.chdir(elsewhere)
    try:
        with h5ml.open(view) as ds:
            for split, features in whole.items():
                assert len(ds[split]) == len(features["x"])
                got = ds[split].read(np.arange(len(features["x"])))
                for name, want in features.items():
                    _equal(got[name], want)
            assert list(ds["train"]["label"].class_names) == ["cat", "dog", "owl"]
        with h5py.File(view, "r") as f:
            assert f["train/x"].is_virtual and not f["train/clip/offsets"].is_virtual
            assert np.array_equal(f["train/x"][:], np.concatenate(whole["train"]["x"]).reshape(-1, 2, 3))
            lengths = [len(c) for c in whole["train"]["clip"]]
            assert list(f["train/clip/offsets"][:]) == [0, *np.cumsum(lengths)]
            assert f.attrs[VIEW_OF] == "index.json"
            assert f.attrs[VIEW_INDEX_FINGERPRINT] == h5ml.model.shard_index.load_index(index)[0].fingerprint
            plist = f["train/x"].id.get_create_plist()
            # the empty shard train-00001 has no mapping; the sources are relative
            assert [plist.get_virtual_filename(j) for j in range(plist.get_virtual_count())] == [
                "train/train-00000.h5",
                "train/train-00002.h5",
            ]
    finally:
        os.chdir(cwd)


@pytest.mark.skipif(shutil.which("h5dump") is None, reason="needs h5dump (Debian hdf5-tools)")
def test_h5dump_reads_the_view_from_another_folder(
    sharded: tuple[Path, dict[str, dict[str, Any]]], tmp_path: Path
) -> None:
    """h5dump (HDF5 1.10) resolves the relative sources against the view's folder (SPEC §12.6-R2)."""
    index, whole = sharded
    view = write_view(index, index.parent / "view.h5")
    out = subprocess.run(
        ["h5dump", "-w", "0", "-d", "/test/x", "-d", "/train/caption", str(view)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout
    values = [
        float(v)
        for line in out.split("DATA {")[1].split("}")[0].splitlines()
        for v in line.split(":")[-1].split(",")
        if v.strip()
    ]
    assert values == [float(v) for v in np.asarray(whole["test"]["x"]).ravel()]
    for caption in whole["train"]["caption"]:  # h5dump prints the ü as octal escapes of its UTF-8 bytes
        assert f'"{caption[:-1]}' in out


def test_valid_view_has_no_error(sharded: tuple[Path, dict[str, dict[str, Any]]]) -> None:
    """A view is the only file whose virtual datasets are valid (SPEC §3.6-R4, §12.6-R1); deep validation reads them."""
    index, _ = sharded
    view = write_view(index, index.parent / "view.h5")
    assert codes(view) == set()
    report = h5ml.validate(view, deep=True)
    assert report.valid
    # the view beside the index does not disturb the index's validation (no W210: it is not in a split's folder)
    index_report = h5ml.validate(index)
    assert index_report.valid and not [i for i in index_report.issues if i.code[0] in "EW"]


def test_view_of_zstd_shards_declares_their_filter(tmp_path: Path) -> None:
    """A view of zstd shards lists zstd in required_filters (§3.5) and reads as the shards do (SPEC §12.6-R3)."""
    folder = tmp_path / "z"
    (folder / "train").mkdir(parents=True)
    rows = [np.tile(np.arange(64, dtype=np.uint8), (n, 4)) for n in (5, 3)]
    entries = []
    for position, x in enumerate(rows):
        rel = f"train/train-{position:05d}.h5"
        h5ml.write(folder / rel, {"train": {"x": x}}, {"name": "z"}, compression="zstd")
        entries.append(describe_shard(folder / rel).entry(rel))
    split = describe_shard(folder / "train/train-00000.h5").split_entry(tuple(entries))
    index = ShardIndex(
        format_version=spec.FORMAT_VERSION_STRING,
        metadata={"name": "z"},
        splits={"train": split},
        fingerprint=index_fingerprint({"train": split}),
    )
    view = write_view(write_index(index, folder), folder / "view.h5")
    with h5py.File(view, "r") as f:
        assert list(f.attrs["required_filters"]) == [32015]
    with h5ml.open(view) as ds:
        assert np.array_equal(ds["train"].read(np.arange(8))["x"], np.concatenate(rows))
    assert codes(view) == set()


def test_cli_writes_the_view_and_refuses_without_traceback(
    sharded: tuple[Path, dict[str, dict[str, Any]]], tmp_path: Path
) -> None:
    """The command writes the view; an output outside the folder, an existing output and a missing index are one line."""
    index, _ = sharded
    code, out, err = run_cli("view", str(index), str(index.parent / "view.h5"))
    assert code == 0 and "view.h5" in out and err == ""
    code, _, err = run_cli("view", str(index), str(index.parent / "view.h5"))
    assert code == 2 and "--overwrite" in err and "overwrite=True" not in err and "Traceback" not in err
    assert run_cli("view", str(index), str(index.parent / "view.h5"), "--overwrite")[0] == 0
    code, _, err = run_cli("view", str(index), str(tmp_path / "outside.h5"))
    assert code == 2 and "dataset's folder" in err and "relative" in err and "Traceback" not in err
    assert not (tmp_path / "outside.h5").exists()
    code, _, err = run_cli("view", str(tmp_path / "nothing"), str(tmp_path / "v.h5"))
    assert code == 2 and f"Invalid value for 'INDEX': '{tmp_path / 'nothing'}' does not exist" in err
    (tmp_path / "empty").mkdir()
    code, _, err = run_cli("view", str(tmp_path / "empty"), str(tmp_path / "empty" / "v.h5"))
    assert code == 2 and "no shard index" in err and "Traceback" not in err


def test_view_refused_outside_folder_in_python(sharded: tuple[Path, dict[str, dict[str, Any]]], tmp_path: Path) -> None:
    """write_view refuses an output outside the index's folder, in a subfolder, or linked to elsewhere (SPEC §12.6)."""
    index, _ = sharded
    with pytest.raises(h5ml.ParameterError, match="relative"):
        write_view(index, tmp_path / "v.h5")
    with pytest.raises(h5ml.ParameterError, match="dataset's folder"):
        write_view(index, index.parent / "train" / "v.h5")
    (index.parent / "link.h5").symlink_to(tmp_path / "elsewhere.h5")
    with pytest.raises(h5ml.ParameterError, match="dataset's folder"):
        write_view(index, index.parent / "link.h5")
    assert not (tmp_path / "elsewhere.h5").exists()


def test_view_refused_for_a_changed_shard(sharded: tuple[Path, dict[str, dict[str, Any]]]) -> None:
    """A shard that disagrees with the index gives no view (SPEC §12.2): the view would present other data."""
    index, _ = sharded
    h5ml.write(index.parent / "test/test-00000.h5", {"test": _split("test", 7, 2)}, {"name": "demo"})
    with pytest.raises(h5ml.ShardIndexError, match=r"test-00000\.h5"):
        write_view(index, index.parent / "view.h5")
    assert not (index.parent / "view.h5").exists()


def _replace_virtual(view: Path, where: str, sources: list[tuple[str, int]]) -> None:
    """Make ``where`` of ``view`` a virtual dataset over ``(file, rows)`` sources in that order, its attributes kept."""
    with h5py.File(view, "r+") as f:
        old = f[where]
        layout = h5py.VirtualLayout(old.shape, old.dtype)
        start = 0
        for name, rows in sources:
            layout[start : start + rows] = h5py.VirtualSource(name, where, shape=(rows, *old.shape[1:]))
            start += rows
        attrs = dict(old.attrs)
        del f[where]
        f.create_virtual_dataset(where, layout).attrs.update(attrs)


def _retarget(view: Path, where: str, name: str) -> None:
    """Rewrite the virtual dataset ``where`` of ``view`` so that its first source file is ``name``."""
    with h5py.File(view, "r") as f:
        plist = f[where].id.get_create_plist()
        sources = [
            (plist.get_virtual_filename(j), int(plist.get_virtual_vspace(j).get_regular_hyperslab()[3][0]))
            for j in range(plist.get_virtual_count())
        ]
    _replace_virtual(view, where, [(name, sources[0][1]), *sources[1:]])


@pytest.mark.parametrize(
    ("source", "words"),
    [
        ("/etc/h5ml-absent.h5", "absolute"),
        ("../ds2/test/test-00000.h5", "'..'"),
        ("file:test/test-00000.h5", "scheme"),
        ("test/other.h5", "lists for no shard"),
    ],
)
def test_sources_outside_the_dataset_are_e118(
    sharded: tuple[Path, dict[str, dict[str, Any]]], source: str, words: str
) -> None:
    """A source outside the folder or not listed is E118 at the dataset, never read; h5ml.open refuses (SPEC §12.6-R2, §10.1-R4)."""
    index, _ = sharded
    view = write_view(index, index.parent / "view.h5")
    copy = index.parent.parent / "ds2"
    shutil.copytree(index.parent, copy)  # a real file at ../ds2/...: the source would read if followed
    _retarget(view, "/test/x", source)
    issues = [i for i in h5ml.validate(view, deep=True).issues if i.code[0] == "E"]
    assert [(i.code, i.path) for i in issues] == [("E118", "/test/x")]
    assert words in issues[0].message and source in issues[0].message
    with pytest.raises(h5ml.ForbiddenStorageError, match="this view file is not read"):
        h5ml.open(view)


def test_missing_shard_is_e118(sharded: tuple[Path, dict[str, dict[str, Any]]], tmp_path: Path) -> None:
    """A listed source that is missing is E118: HDF5 would look for it in the working directory (SPEC §12.6-R2)."""
    index, _ = sharded
    view = write_view(index, index.parent / "view.h5")
    (index.parent / "test/test-00000.h5").unlink()
    found = codes(view)
    assert ("E118", "/test/x") in found and all(code == "E118" for code, _ in found)
    with pytest.raises(h5ml.ForbiddenStorageError, match="missing"):
        h5ml.open(view)


def test_shard_linked_from_outside_is_e118(sharded: tuple[Path, dict[str, dict[str, Any]]], tmp_path: Path) -> None:
    """A listed shard that is a symbolic link to a file outside the folder is E118, never read (SPEC §12.6-R2)."""
    index, _ = sharded
    view = write_view(index, index.parent / "view.h5")
    shard = index.parent / "test/test-00000.h5"
    outside = tmp_path / "outside.h5"
    shard.rename(outside)
    shard.symlink_to(outside)
    assert codes(view) == {
        ("E118", "/test/x"),
        ("E118", "/test/label/codes"),
        ("E118", "/test/clip/values"),
        ("E118", "/test/mask/values"),
        ("E118", "/test/mask/shapes"),
        ("E118", "/test/caption"),
        ("E118", "/test/blob/values"),
    }
    with pytest.raises(h5ml.ForbiddenStorageError, match="symbolic link"):
        h5ml.open(view)


def test_view_is_never_appended_to(sharded: tuple[Path, dict[str, dict[str, Any]]]) -> None:
    """Writer(mode="a") refuses a view: it extends only files whose data it holds (SPEC §3.6-R4, §12.6)."""
    index, _ = sharded
    view = write_view(index, index.parent / "view.h5")
    with pytest.raises(h5ml.ForbiddenStorageError, match="virtual dataset"):
        h5ml.Writer(view, mode="a")


def test_stale_view_is_e119(sharded: tuple[Path, dict[str, dict[str, Any]]]) -> None:
    """A view whose index fingerprint is not its index's is E119 at / once (SPEC §12.6-R1)."""
    index, _ = sharded
    view = write_view(index, index.parent / "view.h5")
    with h5py.File(view, "r+") as f:
        f.attrs[VIEW_INDEX_FINGERPRINT] = "sha256:" + "0" * 64
    assert codes(view) == {("E119", "/")}
    with pytest.raises(h5ml.ForbiddenStorageError, match="other shards"):
        h5ml.open(view)


def test_reordered_mapping_is_e119(sharded: tuple[Path, dict[str, dict[str, Any]]]) -> None:
    """Sources listed but in another order than the index's are E119: the rows would be wrong (SPEC §12.6-R3)."""
    index, _ = sharded
    view = write_view(index, index.parent / "view.h5")
    _replace_virtual(view, "/train/x", [("train/train-00002.h5", 4), ("train/train-00000.h5", 3)])
    assert codes(view) == {("E119", "/train/x")}
    with pytest.raises(h5ml.ForbiddenStorageError, match="concatenation"):
        h5ml.open(view)


def test_stored_copies_that_differ_are_e119(sharded: tuple[Path, dict[str, dict[str, Any]]]) -> None:
    """Offsets, class names and a stored component that are not the view's are E119 (SPEC §12.6-R3)."""
    index, whole = sharded
    view = write_view(index, index.parent / "view.h5")
    with h5py.File(view, "r+") as f:
        offsets = f["train/clip/offsets"][:]
        offsets[2] += 1  # still non-decreasing and ending at the values' length: only the view's rule sees it
        f["train/clip/offsets"][:] = offsets
        names = f["train/label/class_names"]
        names[0] = "lion"
        del f["test/x"]
        f["test/x"] = np.asarray(whole["test"]["x"])
        for key, value in {"encoding": "dense", "encoding_version": "1.0"}.items():
            f["test/x"].attrs[key] = value
    found = [i for i in h5ml.validate(view, deep=True).issues if i.code[0] == "E"]
    assert {(i.code, i.path) for i in found} == {
        ("E119", "/train/clip/offsets"),
        ("E119", "/train/label/class_names"),
        ("E119", "/test/x"),
    }
    assert any("train/train-00000.h5" in i.message for i in found if i.path == "/train/clip/offsets")


def test_virtual_dataset_in_an_ordinary_file_stays_e112(sharded: tuple[Path, dict[str, dict[str, Any]]]) -> None:
    """Without the view marker a virtual dataset is E112, even one that maps a shard (SPEC §3.6-R4)."""
    index, _ = sharded
    view = write_view(index, index.parent / "view.h5")
    with h5py.File(view, "r+") as f:
        del f.attrs[VIEW_OF]
    assert ("E112", "/train/x") in codes(view)
    with pytest.raises(h5ml.ForbiddenStorageError, match="virtual dataset"):
        h5ml.open(view)


def test_vds_prefix_environment_refused(
    sharded: tuple[Path, dict[str, dict[str, Any]]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """HDF5_VDS_PREFIX would make HDF5 look for the sources elsewhere first: the reader refuses the view (SPEC §10.1-R4)."""
    index, _ = sharded
    view = write_view(index, index.parent / "view.h5")
    monkeypatch.setenv("HDF5_VDS_PREFIX", str(index.parent.parent))
    with pytest.raises(h5ml.ForbiddenStorageError, match="HDF5_VDS_PREFIX"):
        h5ml.open(view)


def test_a_view_that_leaves_out_a_feature_or_a_split_is_e119(sharded: tuple[Path, dict[str, dict[str, Any]]]) -> None:
    """SPEC §12.6-R4: every split and feature the index lists is in the view; E119 at the split, naming both."""
    index, _ = sharded
    view = write_view(index, index.parent / "view.h5")
    with h5py.File(view, "r+") as f:
        del f["train/caption"]  # a feature: the view is otherwise an ordinary, consistent file
    issues = [i for i in h5ml.validate(view, deep=True).issues if i.code[0] == "E"]
    assert [(i.code, i.path) for i in issues] == [("E119", "/train")]
    assert "leaves out feature 'caption' of split 'train', which its index lists" in issues[0].message
    code, out, err = run_cli("validate", "--format", "json", str(view))
    assert code == 1 and "Traceback" not in out + err and '"E119"' in out
    with h5py.File(view, "r+") as f:
        del f["test"]
    found = {(i.code, i.path): i.message for i in h5ml.validate(view).issues if i.code == "E119"}
    assert set(found) == {("E119", "/train"), ("E119", "/test")}
    assert "leaves out split 'test' (its 6 feature(s))" in found[("E119", "/test")]


def test_a_good_view_passes_strict_validation(sharded: tuple[Path, dict[str, dict[str, Any]]]) -> None:
    """SPEC §12.6: a view carries no fingerprints, which is no W202; --strict passes; its shards keep theirs."""
    index, _ = sharded
    view = write_view(index, index.parent / "view.h5")
    with h5py.File(view, "r") as f:
        assert "fingerprint" not in f.attrs and "fingerprint" not in f["train/x"].attrs
    report = h5ml.validate(view, deep=True)
    assert report.valid_strict and not [i for i in report.issues if i.code[0] in "EW"]
    code, out, err = run_cli("validate", "--strict", "--deep", str(view))
    assert code == 0, out + err
    shard = index.parent / "train" / "train-00000.h5"  # an ordinary file without its fingerprint: still W202
    with h5py.File(shard, "r+") as f:
        del f.attrs["fingerprint"]
    assert ("W202", "/") in {(i.code, i.path) for i in h5ml.validate(shard).issues}
    code, _, _ = run_cli("validate", "--strict", str(shard))
    assert code == 1
