"""The data behind ``h5ml inspect``: :func:`h5ml.tools.summary.summarize` (§4-§7 as stored)."""

from __future__ import annotations

import json
from pathlib import Path

import h5py
import numpy as np
import pytest

import h5ml
from _files import Bytes, Categorical, Dense, Ragged, String, write_file
from h5ml.errors import IncompleteFileError, NotH5MLError
from h5ml.tools.summary import FilterSummary, summarize


def storage(path: Path, hdf5_path: str) -> tuple[int, int, int]:
    """(stored bytes of all datasets, logical and stored bytes of the fixed-size ones) under ``hdf5_path``."""
    with h5py.File(path, "r") as f:
        node = f[hdf5_path]
        # the components: not the checksum datasets beside them (reserved names, SPEC §5.4, §8.4)
        dsets = [node] if isinstance(node, h5py.Dataset) else [node[k] for k in node if not k.startswith("_")]
        stored = sum(d.id.get_storage_size() for d in dsets)
        fixed = [d for d in dsets if d.dtype.kind != "O"]
        logical = sum(d.size * d.dtype.itemsize for d in fixed)
        return stored, logical, sum(d.id.get_storage_size() for d in fixed)


@pytest.fixture
def written(tmp_path: Path) -> Path:
    rng = np.random.default_rng(2)
    images = (rng.random((300, 16, 16)) < 0.1).astype(np.uint8) * 200
    clips = [rng.integers(-9, 9, n).astype(np.int16) for n in rng.integers(2, 40, 300)]
    h5ml.write(
        tmp_path / "s.h5",
        {
            "train": {
                "image": images,
                "label": h5ml.writer.writer.Categorical(rng.integers(0, 4, 300), ["w", "x", "y", "z"]),
                "clip": clips,
                "caption": [f"caption {i}" for i in range(300)],
            }
        },
        metadata={"name": "s", "description": "d" * 500, "license": "MIT"},
        compression="gzip",
        compression_opts=6,
        shuffle=True,
        seed=9,
        features={"image": {"role": "input", "units": "counts"}, "label": {"role": "target"}},
    )
    return tmp_path / "s.h5"


def test_summary_of_a_writer_file(written: Path) -> None:
    """Shapes (§5.3, §6), chunks (§7), filters with the deflate level (§3.5), sizes and ratio."""
    summary = summarize(written)
    assert summary.format_version == "1.2"
    assert summary.file_bytes == written.stat().st_size
    assert summary.metadata["name"] == "s" and summary.metadata["license"] == "MIT"
    (split,) = summary.splits
    assert (split.name, split.num_samples, split.shuffle_seed) == ("train", 300, 9)
    features = {f.name: f for f in split.features}
    assert sorted(features) == ["caption", "clip", "image", "label"]

    image = features["image"]
    assert (image.encoding, image.dtype, image.shape, image.num_samples) == ("dense", "uint8", [300, 16, 16], 300)
    assert (image.role, image.units, image.num_classes) == ("input", "counts", None)
    with h5py.File(written, "r") as f:
        dset = f["train/image"]
        assert image.chunks == list(dset.chunks)
    assert FilterSummary(1, "deflate", 6) in image.filters
    assert image.compression is not None and "deflate(6)" in image.compression
    stored, logical, fixed_stored = storage(written, "/train/image")
    assert image.stored_bytes == stored
    assert image.logical_bytes == logical == 300 * 16 * 16
    assert image.compression_ratio == pytest.approx(logical / fixed_stored)
    assert image.compression_ratio is not None and image.compression_ratio > 2  # sparse images compress

    label = features["label"]
    assert (label.encoding, label.shape, label.num_classes, label.role) == ("categorical", [300], 4, "target")
    stored, logical, fixed_stored = storage(written, "/train/label")
    assert label.stored_bytes == stored  # codes and class names
    assert label.logical_bytes == logical  # codes only: class names are variable-length strings
    assert label.compression_ratio == pytest.approx(logical / fixed_stored)

    clip = features["clip"]
    with h5ml.open(written) as ds:
        lengths = [len(c) for c in ds["train"]["clip"][:]]
    assert (clip.encoding, clip.dtype, clip.shape) == ("ragged", "int16", None)
    assert (clip.length_min, clip.length_max) == (min(lengths), max(lengths))
    assert clip.inner_shape == [] and clip.shape_min is None

    caption = features["caption"]
    assert (caption.encoding, caption.dtype, caption.shape) == ("string", "str", [300])
    assert caption.logical_bytes is None and caption.compression_ratio is None
    assert caption.stored_bytes == storage(written, "/train/caption")[0]


def test_to_json_is_plain_json(written: Path) -> None:
    document = summarize(written).to_json()
    again = json.loads(json.dumps(document, allow_nan=False))
    assert again == document
    image = next(f for f in document["splits"][0]["features"] if f["name"] == "image")
    expected = next(f for f in summarize(written).splits[0].features if f.name == "image").compression
    assert image["compression"] == expected
    assert {"id": 1, "name": "deflate", "level": 6} in image["filters"]


def test_uncompressed_ragged_shapes_and_bytes(tmp_path: Path) -> None:
    """Ragged with shapes gives per-axis ranges; bytes give byte-length ranges; no filters -> no compression."""
    path = write_file(
        tmp_path / "r.h5",
        {
            "train": {
                "mask": Ragged([np.zeros((2, 3), np.float32), np.zeros((5, 1), np.float32)], with_shapes=True),
                "seq": Ragged([np.zeros((4, 2), np.float32), np.zeros((1, 2), np.float32)]),
                "blob": Bytes([b"abc", b"defghij"], media_type="image/png"),
                "name": String(["a", "b"]),
                "cls": Categorical(np.array([0, 1], dtype=np.int16), ["p", "q"]),
                "v": Dense(np.zeros((2, 3), np.float64)),
            }
        },
    )
    features = {f.name: f for f in summarize(path).splits[0].features}
    mask = features["mask"]
    assert (mask.shape_min, mask.shape_max, mask.length_min, mask.length_max) == ([2, 1], [5, 3], 5, 6)
    seq = features["seq"]
    assert (seq.inner_shape, seq.length_min, seq.length_max) == ([2], 1, 4)
    blob = features["blob"]
    assert (blob.dtype, blob.media_type, blob.length_min, blob.length_max) == ("bytes", "image/png", 3, 7)
    assert features["cls"].dtype == "int16"
    v = features["v"]
    assert v.chunks is None and v.filters == [] and v.compression is None
    assert v.compression_ratio == pytest.approx(1.0)
    assert v.logical_bytes == v.stored_bytes == 2 * 3 * 8


def test_refuses_what_the_reader_refuses(tmp_path: Path) -> None:
    plain = tmp_path / "plain.h5"
    with h5py.File(plain, "w") as f:
        f["x"] = np.arange(3)
    with pytest.raises(NotH5MLError):
        summarize(plain)
    path = write_file(tmp_path / "inc.h5", {"train": {"v": Dense(np.zeros(2))}}, complete=False)
    with pytest.raises(IncompleteFileError):
        summarize(path)
    with pytest.raises(FileNotFoundError):
        summarize(tmp_path / "missing.h5")


def test_empty_split(tmp_path: Path) -> None:
    path = write_file(tmp_path / "e.h5", {"train": {"seq": Ragged([]), "v": Dense(np.zeros((0, 4), np.float32))}})
    features = {f.name: f for f in summarize(path).splits[0].features}
    assert features["seq"].length_min is None and features["seq"].num_samples == 0
    assert features["v"].shape == [0, 4]
    assert features["v"].stored_bytes == 0 and features["v"].compression_ratio is None  # nothing stored
