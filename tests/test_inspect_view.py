"""``h5ml inspect`` and :func:`h5ml.tools.summary.summarize` on a view file (SPEC §12.6).

A view's feature datasets are HDF5 virtual datasets: they store 0 bytes in
the view, so the summary counts the bytes of their source datasets in the
shards and the number of mappings, and the command line shows them as
virtual instead of "chunks contiguous, stored 0 B".
"""

from __future__ import annotations

import io
from pathlib import Path

import h5py

from h5ml.ingest.view import write_view
from h5ml.tools import cli
from h5ml.tools.summary import summarize
from test_view import SIZES, make_sharded


def _stored(path: Path, hdf5_path: str) -> int:
    with h5py.File(path, "r") as f:
        return int(f[hdf5_path].id.get_storage_size())


def test_summary_of_a_view_counts_the_sources(tmp_path: Path) -> None:
    """Virtual components count their shards' stored bytes and their mappings (SPEC §12.6-R3)."""
    index, _ = make_sharded(tmp_path / "ds")
    view = write_view(index, index.parent / "view.h5")
    shards = [index.parent / f"train/train-{i:05d}.h5" for i, n in enumerate(SIZES["train"]) if n]
    features = {f.name: f for f in next(s for s in summarize(view).splits if s.name == "train").features}

    x = features["x"]  # dense: the feature dataset is virtual, one mapping per shard with rows (2 of 3)
    assert x.virtual_sources == 2
    assert x.stored_bytes == sum(_stored(p, "/train/x") for p in shards)
    assert x.stored_bytes > 0

    clip = features["clip"]  # ragged: values virtual, offsets a real dataset of the view
    assert clip.virtual_sources == 2
    want = _stored(view, "/train/clip/offsets") + sum(_stored(p, "/train/clip/values") for p in shards)
    assert clip.stored_bytes == want

    mask = features["mask"]  # ragged with shapes: values and shapes both virtual
    assert mask.virtual_sources == 4

    label = features["label"]  # categorical: codes virtual, class_names copied
    assert label.virtual_sources == 2
    assert label.class_counts is not None and sum(label.class_counts) + (label.missing_count or 0) == 7


def test_summary_of_a_plain_file_has_no_virtual_sources(tmp_path: Path) -> None:
    """A shard (an ordinary file) keeps its own stored bytes and no mappings."""
    index, _ = make_sharded(tmp_path / "ds")
    shard = index.parent / "train/train-00000.h5"
    x = next(f for f in summarize(shard).splits[0].features if f.name == "x")
    assert x.name == "x" and x.virtual_sources == 0
    assert x.stored_bytes == _stored(shard, "/train/x")


def test_inspect_shows_a_view_as_virtual(tmp_path: Path) -> None:
    """The command line says "virtual: N sources" and the shards' size, never "contiguous, stored 0 B"."""
    index, _ = make_sharded(tmp_path / "ds")
    view = write_view(index, index.parent / "view.h5")
    out, err = io.StringIO(), io.StringIO()
    assert cli.run(["inspect", str(view)], out, err) == 0, err.getvalue()
    text = out.getvalue()
    assert "virtual: 2 sources" in text
    assert "virtual: 4 sources" in text
    assert "stored 0 B" not in text
    assert "contiguous" not in text
    shard = index.parent / "train/train-00000.h5"
    out = io.StringIO()
    assert cli.run(["inspect", str(shard)], out, err) == 0
    assert "virtual" not in out.getvalue() and "chunks" in out.getvalue()


def test_inspect_and_validate_a_view_by_its_file_url(tmp_path: Path) -> None:
    """A file:// URL names the local file: the view's folder is the URL's path, its sources resolve, it reads."""
    index, _ = make_sharded(tmp_path / "my ds")  # a space: the URL spells it %20
    view = write_view(index, index.parent / "view.h5")
    url = view.as_uri()
    assert "%20" in url
    out, err = io.StringIO(), io.StringIO()
    assert cli.run(["inspect", url], out, err) == 0, err.getvalue()
    assert "virtual: 2 sources" in out.getvalue() and "Traceback" not in err.getvalue()
    out = io.StringIO()
    assert cli.run(["validate", url], out, err) == 0, out.getvalue() + err.getvalue()
    assert "VALID" in out.getvalue()
    import h5ml

    with h5ml.open(url) as by_url, h5ml.open(view) as by_path:
        assert by_url["train"]["x"][:].tolist() == by_path["train"]["x"][:].tolist()


def test_a_view_at_another_url_is_refused_with_the_way_out(tmp_path: Path) -> None:
    """memory:// (any fsspec file object): HDF5 cannot follow a view's sources there; refused, naming the URL."""
    import fsspec
    import pytest

    import h5ml

    index, _ = make_sharded(tmp_path / "ds")
    view = write_view(index, index.parent / "view.h5")
    url = "memory://h5ml-view-test/view.h5"
    with fsspec.open(url, "wb") as stream:
        stream.write(view.read_bytes())
    with pytest.raises(h5ml.ForbiddenStorageError, match=r"read through a URL.*open the dataset's index at its URL"):
        h5ml.open(url)
    issues = h5ml.validate(url).issues
    assert [i.code for i in issues if i.severity == "error"] == ["E119"]
    assert url in next(i.message for i in issues if i.code == "E119")
