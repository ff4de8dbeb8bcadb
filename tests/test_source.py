"""Tests of h5ml.reader.source.SplitSource: one split opened lazily per process, pickled by path (§5, case C02)."""

from __future__ import annotations

import multiprocessing
import pickle
from pathlib import Path

import numpy as np
import pytest

import h5ml
from h5ml.reader.source import SplitSource


@pytest.fixture
def path(tmp_path: Path) -> Path:
    out = tmp_path / "s.h5"
    h5ml.write(
        out,
        {
            "train": {
                "x": np.arange(20, dtype=np.float32).reshape(10, 2),
                "label": h5ml.Categorical(np.arange(10) % 3, ["a", "b", "c"]),
                "clip": [np.arange(i + 1, dtype=np.int16) for i in range(10)],
            }
        },
        features={"x": {"role": "input"}, "label": {"role": "target"}},
    )
    return out


def _read_in_child(source: SplitSource) -> list[float]:
    return [float(v) for v in source.read([7, 2, 7])["x"][:, 0]]


def test_opens_lazily_and_pickles_without_a_handle(path: Path) -> None:
    """Nothing is opened at construction; a pickle holds path, split and features only and reads the same."""
    source = SplitSource(path, "train", ["x", "clip"])
    assert source._split is None  # lazily opened
    assert source.num_samples == 10 and source.feature_names == ("x", "clip")
    copy = pickle.loads(pickle.dumps(source))
    assert copy._split is None and copy.path == str(path.resolve())
    assert np.array_equal(copy.read([3, 1])["x"], [[6, 7], [2, 3]])
    assert source.encodings == {"x": "dense", "clip": "ragged"}
    source.close()
    copy.close()


@pytest.mark.parametrize("context", ["fork", "spawn"])
def test_a_child_process_opens_its_own_reader(path: Path, context: str) -> None:
    """C02: after the parent read (fork inherits its open file), a child reads the same values through its own reader."""
    source = SplitSource(path, "train")
    parent = _read_in_child(source)
    with multiprocessing.get_context(context).Pool(1) as pool:
        child = pool.apply(_read_in_child, (source,))
    assert child == parent == [14.0, 4.0, 14.0]
    source.close()


def test_about_the_data(path: Path) -> None:
    """Roles (§6.1), class names (§6.5), lengths from offsets (§6.3), chunk rows (§7.1), fingerprint (§8.3)."""
    source = SplitSource(path, "train")
    assert source.roles() == {"x": "input", "label": "target", "clip": None}
    assert source.class_names("label") == ["a", "b", "c"]
    assert source.lengths("clip").tolist() == list(range(1, 11))
    assert source.chunk_rows() is not None and source.chunk_rows() >= 10
    with h5ml.open(path) as ds:
        assert source.fingerprint == ds.fingerprint
    with pytest.raises(ValueError, match="not categorical"):
        source.class_names("x")
    with pytest.raises(TypeError, match="not ragged or bytes"):
        source.lengths("label")
    with pytest.raises(KeyError, match="available splits: 'train'"):
        SplitSource(path, "test").reader()
    source.close()


def _png(array: np.ndarray) -> bytes:
    from io import BytesIO

    from PIL import Image

    buffer = BytesIO()
    Image.fromarray(array).save(buffer, format="PNG")
    return buffer.getvalue()


def test_decode_images_of_a_bytes_feature(tmp_path: Path) -> None:
    """§6.6: PNG files stored as bytes come back as their uint8 pixels; other features and single samples too."""
    pytest.importorskip("PIL")
    rng = np.random.default_rng(5)
    pixels = [rng.integers(0, 256, size=(4, 3 + i % 2, 3), dtype=np.uint8) for i in range(6)]
    out = tmp_path / "photos.h5"
    h5ml.write(
        out,
        {"train": {"photo": [_png(p) for p in pixels], "blob": [b"x" * i for i in range(6)]}},
        features={"photo": {"media_type": "image/png"}},
    )
    source = SplitSource(out, "train", decode_images=True)
    assert source.encodings == {"photo": "image", "blob": "bytes"}
    batch = source.read([5, 0, 5])
    assert [a.tolist() for a in batch["photo"]] == [pixels[5].tolist(), pixels[0].tolist(), pixels[5].tolist()]
    assert batch["blob"] == [b"xxxxx", b"", b"xxxxx"]
    assert np.array_equal(source.read(2)["photo"], pixels[2])
    gray = pickle.loads(pickle.dumps(SplitSource(out, "train", decode_images=["photo"], color="L")))
    assert gray.read([1])["photo"][0].shape == (4, 4, 1)
    with pytest.raises(ValueError, match="not bytes features"):
        SplitSource(out, "train", ["photo", "blob"], decode_images=["blob", "photo", "nope"]).reader()
    source.close()
    gray.close()
