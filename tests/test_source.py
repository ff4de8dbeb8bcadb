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
        assert source.fingerprint == ds.fingerprint and source.identity == f"{ds.fingerprint} /train"
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


def add_ten(arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """A picklable batch transform."""
    return {**arrays, "x": arrays["x"] + 10}


def test_batch_arrays_keys_and_transform(path: Path) -> None:
    """§6, C05: read_arrays gives one array per key (ragged padded with _lengths and _mask), then the transform;
    sampling.features_of maps those keys back to features; read_batch gives the columns, or transformed samples."""
    source = SplitSource(path, "train")
    arrays = source.read_arrays([9, 0], pad_value=-1, transform=add_ten)
    assert list(arrays) == [
        "clip",
        "clip_lengths",
        "clip_mask",
        "label",
        "x",
    ]  # each feature, then its lengths and mask
    assert arrays["x"].tolist() == [[28.0, 29.0], [10.0, 11.0]] and arrays["label"].tolist() == [0, 0]
    assert (
        arrays["clip"].dtype == np.int16
        and arrays["clip"].shape == (2, 10)
        and arrays["clip"][1, 1:].tolist() == [-1] * 9
    )
    assert arrays["clip_lengths"].tolist() == [10, 1] and arrays["clip_mask"].sum(axis=1).tolist() == [10, 1]
    from h5ml.sampling import ColumnBatch, features_of

    assert features_of(["clip_mask", "x", "clip", "label"], source.encodings, "s.h5") == ["clip", "x", "label"]
    with pytest.raises(ValueError, match=r"s\.h5 has no feature 'x_mask'"):
        features_of(["x_mask"], source.encodings, "s.h5")  # only ragged features and decoded images have a mask

    batch = source.read_batch([3, 3], ColumnBatch)
    assert len(batch) == 2 and batch.encodings["clip"] == "ragged" and batch[1]["clip"].tolist() == [0, 1, 2, 3]
    assert batch.arrays()["clip_lengths"].tolist() == [4, 4]
    shifted = source.read_batch([3], ColumnBatch, lambda s: {**s, "x": s["x"] * 2})
    assert shifted.columns is None and shifted[0]["x"].tolist() == [12.0, 14.0]
    source.close()


def test_sampler_from_the_file(path: Path) -> None:
    """§5.3, §7.1, §8.3, §6.3: the split's sampler takes N, the fingerprint, the chunk rows ("chunk" mode only) and
    the lengths to bucket by from the file; rank and world size None are 0 and 1."""
    source = SplitSource(path, "train")
    chunked = source.sampler(3, shuffle="chunk", seed=4)
    assert (chunked.num_samples, chunked.chunk_rows, chunked.fingerprint) == (
        10,
        source.chunk_rows(),
        source.identity,
    )
    assert (chunked.rank, chunked.world_size) == (0, 1)
    full = source.sampler(3, shuffle="full", rank=1, world_size=2, bucket_by="clip", pool_batches=2)
    assert full.chunk_rows is None and (full.rank, full.world_size, full.pool_batches) == (1, 2, 2)
    assert full.lengths is not None and full.lengths.tolist() == list(range(1, 11))
    assert source.sampler(3, shuffle="full").state_dict(0, 1)["chunk_rows"] is None
    source.close()


def test_a_wrong_split_names_the_file_the_split_and_the_splits(path: Path) -> None:
    """An unknown split is h5ml.SplitNotFoundError (a KeyError, not quoted by it) naming file, split and splits."""
    source = SplitSource(path, "validation")
    with pytest.raises(h5ml.SplitNotFoundError) as info:
        source.num_samples  # noqa: B018 - the file is opened on first use
    assert isinstance(info.value, KeyError)
    assert str(info.value) == f"{path.resolve()}: no split 'validation'; available splits: 'train'"
    assert info.value.path == str(path.resolve())
    assert source._file is None  # the file opened to look was closed again


def test_open_names_a_missing_path_and_a_directory(tmp_path: Path) -> None:
    """h5ml.open on a missing path is FileNotFoundError "no such file" naming it; a directory is named a directory."""
    missing = tmp_path / "nope.h5"
    with pytest.raises(FileNotFoundError) as info:
        h5ml.open(missing)
    assert str(info.value) == f"[Errno 2] {missing}: no such file" and info.value.errno == 2
    with pytest.raises(IsADirectoryError) as folder:
        h5ml.open(tmp_path)
    assert str(folder.value).startswith(
        f"[Errno 21] {tmp_path} is a directory, not a file; give the path of an h5ml file"
    )
    assert isinstance(folder.value, OSError) and not isinstance(folder.value, FileNotFoundError)


def test_a_forked_child_opens_its_own_reader_and_threads_open_one(path: Path) -> None:
    """After os.fork the child's reader() is a new split of a new file handle (the parent's is never used there),
    reading the same values; the parent keeps its own. Eight threads asking a fresh source at once open it once."""
    import os
    import threading

    source = SplitSource(path, "train")
    parent_split = source.reader()
    parent_file = parent_split.dataset.h5file
    expected = _read_in_child(source)
    pid = os.fork()
    if pid == 0:
        split = source.reader()
        ok = split is not parent_split and split.dataset.h5file is not parent_file and source.reader() is split
        os._exit(0 if ok and _read_in_child(source) == expected else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert source.reader() is parent_split and _read_in_child(source) == expected
    source.close()

    fresh = SplitSource(path, "train")
    barrier = threading.Barrier(8)
    seen: list[object] = []

    def ask() -> None:
        barrier.wait()
        seen.append(fresh.reader())

    threads = [threading.Thread(target=ask) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(seen) == 8 and all(split is seen[0] for split in seen)
    fresh.close()
