"""``h5ml inspect``: the tree of an HDF5 file that is not an h5ml file (:mod:`h5ml.model.tree`), and what
it shows of an h5ml file (statistics §6.7, classes and their counts §6.5, descriptions, skipped files §4.7,
and the storage ratio only where it means compression)."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import h5py
import numpy as np
import pytest

import h5ml
from h5ml.ingest import SKIPPED_ATTR
from h5ml.model.tree import foreign_reason, walk_tree
from h5ml.tools import cli
from h5ml.tools.summary import summarize


def run_cli(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = cli.run(list(args), out, err)
    return code, out.getvalue(), err.getvalue()


def write_foreign(path: Path) -> Path:
    """A file as people publish them: groups, a compressed chunked dataset, links, attributes, no h5ml header."""
    with h5py.File(path, "w") as f:
        f.attrs["title"] = "survey 2024"
        f.attrs["channels"] = np.arange(20)
        data = f.create_group("data")
        x = data.create_dataset(
            "images", data=np.zeros((50, 8, 8), np.uint8), chunks=(10, 8, 8), compression="gzip",
            compression_opts=6, shuffle=True,
        )  # fmt: skip
        x.attrs["units"] = "counts"
        data.create_dataset("labels", data=np.arange(50))
        f["alias"] = h5py.SoftLink("/data/images")
        f["elsewhere"] = h5py.ExternalLink("other.h5", "/x")
        f["same"] = data  # a second hard link to the group
        data["loop"] = data  # a group linked into itself
    return path


def test_walk_lists_every_path_without_following_links(tmp_path: Path) -> None:
    walk = walk_tree(write_foreign(tmp_path / "f.h5"))
    nodes = {n.path: n for n in walk.nodes}
    assert [n.path for n in walk.nodes] == [
        "/", "/alias", "/data", "/data/images", "/data/labels", "/data/loop", "/elsewhere", "/same",
    ]  # fmt: skip
    assert walk.not_shown == 0 and walk.count_complete
    assert dict(nodes["/"].attributes) == {
        "channels": "[0, 1, 2, 3, 4, 5, ...] shape (20,) int64",
        "title": "'survey 2024'",
    }
    images = nodes["/data/images"]
    assert (images.kind, images.shape, images.dtype, images.chunks, images.layout) == (
        "dataset", [50, 8, 8], "uint8", [10, 8, 8], "chunked",
    )  # fmt: skip
    assert [f.label() for f in images.filters] == ["shuffle", "deflate(6)"]
    assert images.attributes == [("units", "'counts'")]
    labels = nodes["/data/labels"]
    assert (labels.shape, labels.dtype, labels.chunks, labels.layout, labels.filters) == (
        [50], "int64", None, "contiguous", [],
    )  # fmt: skip
    assert (nodes["/alias"].kind, nodes["/alias"].target) == ("soft link", "/data/images")
    assert (nodes["/elsewhere"].kind, nodes["/elsewhere"].target) == ("external link", "other.h5:/x")
    assert (nodes["/data/loop"].kind, nodes["/data/loop"].target) == ("group", "/data")  # not walked again
    assert (nodes["/same"].kind, nodes["/same"].target) == ("group", "/data")


def test_walk_is_bounded_and_counts_what_it_does_not_list(tmp_path: Path) -> None:
    path = tmp_path / "many.h5"
    with h5py.File(path, "w") as f:
        for i in range(30):
            f.create_group(f"g{i:02d}").create_dataset("v", data=np.arange(3))
    walk = walk_tree(path, max_objects=5)
    assert [n.path for n in walk.nodes] == ["/", "/g00", "/g00/v", "/g01", "/g01/v"]
    assert walk.not_shown == 60 - 4 and walk.count_complete
    with pytest.raises(ValueError, match="max_objects"):
        walk_tree(path, max_objects=0)


def test_foreign_reason(tmp_path: Path) -> None:
    assert foreign_reason(write_foreign(tmp_path / "f.h5")) == "the root attribute 'format' is missing"
    other = tmp_path / "o.h5"
    with h5py.File(other, "w") as f:
        f.attrs["format"] = "netcdf"
    assert foreign_reason(other) == "the root attribute 'format' is 'netcdf', not 'h5ml'"
    valid = tmp_path / "v.h5"
    h5ml.write(valid, {"train": {"x": np.zeros((3, 2), np.float32)}})
    assert foreign_reason(valid) is None
    text = tmp_path / "t.h5"
    text.write_text("not hdf5")
    assert foreign_reason(text) is None


def test_inspect_of_a_foreign_file_says_so_and_shows_its_tree(tmp_path: Path) -> None:
    path = write_foreign(tmp_path / "f.h5")
    code, out, err = run_cli("inspect", str(path))
    assert code == 0 and err == ""
    first, *rest = out.splitlines()
    assert first.startswith(f"{path} is an HDF5 file but not an h5ml file (the root attribute 'format' is missing)")
    assert f"convert it with 'h5ml convert {path} OUTPUT.h5'" in first
    assert "None" not in first and "validate --deep" not in out
    text = "\n".join(rest)
    for piece in (
        "images  dataset  (50, 8, 8)  uint8  chunks (10, 8, 8)  filters shuffle + deflate(6)",
        "@units = 'counts'",
        "labels  dataset  (50,)  int64  contiguous (not chunked)",
        "alias  soft link -> /data/images (not followed)",
        "elsewhere  external link -> other.h5:/x (not followed)",
        "loop  group, the same object as /data (listed there)",
        "@title = 'survey 2024'",
    ):
        assert piece in text, piece
    code, out, _ = run_cli("inspect", "--max-objects", "3", str(path))
    assert code == 0 and "5 more objects not shown (3 shown; --max-objects N shows more)" in out
    code, out, _ = run_cli("inspect", "--format", "json", "--max-objects", "3", str(path))
    document = json.loads(out)
    assert document["h5ml"] is False and "not an h5ml file" in document["note"]
    assert [o["path"] for o in document["tree"]["objects"]] == ["/", "/alias", "/data"]
    assert document["tree"]["not_shown"] == 5 and document["tree"]["objects"][1]["target"] == "/data/images"
    code, out, err = run_cli("dump", str(path))
    assert code == 2 and "not an h5ml file" in err and "h5ml convert" in err


def test_inspect_shows_stats_classes_descriptions_and_skipped_files(tmp_path: Path) -> None:
    path = tmp_path / "d.h5"
    skipped = [{"path": "img/bad.png", "reason": "truncated PNG"}, {"path": "img/x.txt", "reason": "not an image"}]
    h5ml.write(
        path,
        {
            "train": {
                "x": np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], np.float32),
                "label": h5ml.writer.writer.Categorical(np.array([0, 1, 1]), ["cat", "dog"]),
            }
        },
        metadata={"name": "d", SKIPPED_ATTR: json.dumps(skipped)},
        features={"x": {"description": "two measurements per sample"}},
    )
    summary = summarize(path)
    (split,) = summary.splits
    x, label = sorted(split.features, key=lambda f: f.name != "x")
    assert x.stats == {"stats_count": 6, "stats_min": 1.0, "stats_max": 6.0, "stats_mean": 3.5,
                       "stats_std": pytest.approx(np.std(np.arange(1.0, 7.0)))}  # fmt: skip
    assert (label.class_names, label.class_counts, label.missing_count) == (["cat", "dog"], [1, 2], 0)
    assert summary.skipped == skipped
    code, out, err = run_cli("inspect", str(path))
    assert code == 0 and err == ""
    for piece in (
        "two measurements per sample",
        "stats min 1, max 6, mean 3.5, std 1.70783, over 6 values",
        "classes (samples each) cat 1, dog 2",
        "the conversion skipped 2 source files:",
        "img/bad.png: truncated PNG",
        "img/x.txt: not an image",
    ):
        assert piece in out, piece
    assert "ratio" not in out  # uncompressed: no ratio (below 1 it would only be chunk padding)
    assert "raw 24 B in " in out and "of chunks (the last chunk is whole)" in out  # x: a chunk of more rows


def test_inspect_ratio_of_a_compressed_feature_says_what_it_is(tmp_path: Path) -> None:
    path = tmp_path / "z.h5"
    h5ml.write(path, {"train": {"x": np.zeros((4096, 16), np.float32)}}, compression="gzip")
    code, out, _ = run_cli("inspect", str(path))
    text = " ".join(out.split())
    found = re.search(r"raw 262\.1 kB \(compressed: ratio stored / raw (\d+)%\)", text)
    assert code == 0 and found is not None, text
    assert 0 <= int(found.group(1)) < 10  # zeros compress well: a few percent of the raw bytes


def test_an_h5ml_file_without_its_version_is_said_to_lack_it(tmp_path: Path) -> None:
    """A missing attribute is "missing", never "None" (the words of validate, §1.2)."""
    path = tmp_path / "f.h5"
    with h5py.File(path, "w") as f:
        f.attrs["format"] = "h5ml"
    code, out, err = run_cli("inspect", str(path))
    assert code == 2 and out == ""
    assert "the root attribute 'format_version' is missing" in err and "None" not in err


def test_the_default_bound_is_the_one_the_help_states() -> None:
    from h5ml.model.tree import DEFAULT_MAX_OBJECTS

    code, out, _ = run_cli("inspect", "--help")
    assert code == 0 and f"(default {DEFAULT_MAX_OBJECTS})" in " ".join(out.split())


def test_the_count_of_what_is_not_listed_is_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A file of very many objects is not walked whole to count them: the count stops and says "more than"."""
    from h5ml.model import tree

    path = tmp_path / "many.h5"
    with h5py.File(path, "w") as f:
        for i in range(40):
            f.create_dataset(f"d{i:02d}", data=np.arange(2))
    monkeypatch.setattr(tree, "_COUNT_LIMIT", 10)
    walk = tree.walk_tree(path, max_objects=5)
    assert (len(walk.nodes), walk.not_shown, walk.count_complete) == (5, 10, False)
    code, out, _ = run_cli("inspect", str(path), "--max-objects", "5")
    assert code == 0 and "more than 10 more objects not shown (5 shown; --max-objects N shows more)" in out


def test_inspect_padding_counts_only_the_fixed_size_components(tmp_path: Path) -> None:
    """A categorical's padding is its codes' chunk (5 codes in 8 bytes), never its class names (48 B of strings)."""
    path = tmp_path / "labels.h5"
    codes = np.array([0, 1, 2, 1, 0], dtype=np.int8)
    h5ml.write(path, {"train": {"label": codes}}, {"name": "t"}, features={"label": {"class_names": ["a", "b", "c"]}})
    with h5py.File(path, "r") as f:
        chunks = f["train/label/codes"].chunks
    code, out, _ = run_cli("inspect", str(path))
    assert code == 0
    assert chunks == (8,)  # the writer's rows per chunk are a power of two (§7.2)
    assert "stored 56 B, raw 5 B in 8 B of chunks (the last chunk is whole)" in out
