"""h5ml.open(INDEX): a sharded dataset read as one file, by global indices, its shards checked (SPEC §12.5; issue 16).

Every read is compared with the same read of one file holding the
concatenation of the shards (written by h5ml.write), on real files.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import pickle
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import h5ml
from _shards import CLASSES, columns, write_file, write_sharded
from h5ml.errors import ShardIndexError
from h5ml.reader import ShardedDataset, ShardedSplit

SIZES = (10, 1, 9, 3, 14)  # uneven, with a one-sample shard
N = sum(SIZES)


def _pair(folder: Path) -> tuple[Path, Path]:
    cols = columns(N)
    return write_sharded(folder / "ds", cols, SIZES), write_file(folder / "whole.h5", cols)


@pytest.fixture
def pair(tmp_path: Path) -> tuple[Path, Path]:
    """(index, file): the same 37 samples as 5 shards and as one file (the test may change them)."""
    return _pair(tmp_path)


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """As ``pair``, written once for the tests that only read."""
    return _pair(tmp_path_factory.mktemp("shared"))


def _same(a: Any, b: Any) -> None:
    """Equal values of the same kinds: arrays (dtype kind and shape too), lists of arrays or bytes, scalars."""
    if isinstance(b, np.ndarray):
        assert isinstance(a, np.ndarray) and a.shape == b.shape and a.dtype.kind == b.dtype.kind
        assert a.tolist() == b.tolist()
    elif isinstance(b, list):
        assert isinstance(a, list) and len(a) == len(b)
        for x, y in zip(a, b, strict=True):
            _same(x, y)
    else:
        assert type(a) is type(b) and a == b


REQUESTS: list[Any] = [
    0,
    10,  # the one-sample shard
    N - 1,
    -1,
    -N,
    np.int64(11),
    slice(None),
    slice(3, 25),  # across four shards
    slice(10, 11),
    slice(12, 15),  # inside one shard
    slice(5, 5),
    slice(None, None, 3),
    slice(30, 2, -4),
    [],
    [36, 0, 10, 10, 5, 11, 0, 20, -2],
    np.array([19, 9, 10, 11, 24, 23], dtype=np.int32),
    np.arange(N)[::-1],
    np.arange(N) % 3 == 0,  # a mask
]


@pytest.mark.parametrize("request_", REQUESTS, ids=repr)
def test_global_reads_equal_one_file(shared: tuple[Path, Path], request_: Any) -> None:
    """SPEC §12.5: split.read, split[idx] and feature[idx] of the index equal those of one file, for every index form."""
    index, whole = shared
    with h5ml.open(index) as ds, h5ml.open(whole) as f:
        assert isinstance(ds, ShardedDataset)
        got, want = ds["train"].read(request_), f["train"].read(request_)
        assert list(got) == list(want)
        for name in want:
            _same(got[name], want[name])
        _same(ds["train"]["clip"][request_], f["train"]["clip"][request_])
        _same(ds["train"].read(request_, ["name", "x"])["name"], want["name"])


def test_iteration_metadata_and_features_as_one_file(shared: tuple[Path, Path]) -> None:
    index, whole = shared
    with h5ml.open(index.parent) as ds, h5ml.open(whole) as f:  # the folder means its index.json
        split, single = ds["train"], f["train"]
        assert isinstance(split, ShardedSplit) and ds.path == str(index)
        assert list(ds) == ["train"] and len(ds) == 1 and "train" in ds and ds.splits["train"] is split
        assert len(split) == split.num_samples == N and split.shard_sizes == SIZES
        assert split.starts.tolist() == [0, 10, 11, 20, 23, 37]
        for a, b in zip(split, single, strict=True):
            assert list(a) == list(b)
            for name in b:
                _same(a[name], b[name])
        assert list(split.features) == list(single.features)
        for name, feature in single.features.items():
            sharded = split[name]
            assert (sharded.encoding, sharded.dtype, sharded.sample_shape) == (
                feature.encoding,
                feature.dtype,
                feature.sample_shape,
            )
            assert sharded.class_names == feature.class_names and sharded.role == feature.role
            assert sharded.num_samples == len(sharded) == N and sharded.hdf5_path == f"/train/{name}"
        assert split["label"].class_names == CLASSES and split["x"].chunk_rows is not None
        assert split["clip"].lengths().tolist() == single["clip"].lengths().tolist()
        with pytest.raises(TypeError, match="not ragged or bytes"):
            split["x"].lengths()
        index_doc = json.loads(index.read_text(encoding="utf-8"))
        assert ds.fingerprint == index_doc["fingerprint"] != f.fingerprint
        assert ds.format_version == (1, 2)
        meta = ds.metadata
        assert meta.name == "shards" and meta.fingerprint == ds.fingerprint and meta.format_version == "1.2"
        assert meta.writer == f.metadata.writer and ds.attrs["name"] == "shards"
        with pytest.raises(h5ml.FeatureNotFoundError, match="available features: 'blob', 'clip'"):
            split.feature("nope")
        with pytest.raises(h5ml.SplitNotFoundError, match="available splits: 'train'"):
            ds["test"]
        with pytest.raises(IndexError):
            split.read(N)
    assert ds.closed and ds.open_shards == ()
    with pytest.raises(ValueError, match="closed"):
        ds["train"]


def test_a_replaced_shard_is_refused_before_its_samples_are_returned(pair: tuple[Path, Path], tmp_path: Path) -> None:
    """SPEC §12.5: a shard changed after the index was written (another fingerprint) is refused, the shard named."""
    index, _ = pair
    other = tmp_path / "other"
    write_sharded(other, columns(N, seed=5), SIZES)  # the same shapes, other values: other fingerprints
    victim = index.parent / "train" / "train-00002.h5"
    shutil.copyfile(other / "train" / "train-00002.h5", victim)
    with h5ml.open(index) as ds:
        split = ds["train"]
        assert split.read([0, 9, 10, 20])["x"][:, 0].tolist() == [0, 9, 10, 20]  # the other shards still read
        for request_ in (11, [3, 12], slice(5, 15)):
            with pytest.raises(ShardIndexError) as caught:
                split.read(request_)
            message = str(caught.value)
            assert str(index) in message and "shard 2 of split 'train' (train/train-00002.h5)" in message
            assert "has fingerprint" in message and "the index says" in message and "write the dataset again" in message
        assert ("train", 2) not in ds.open_shards


def test_a_missing_shard_and_a_shard_of_other_features_are_refused(pair: tuple[Path, Path], tmp_path: Path) -> None:
    index, _ = pair
    os.remove(index.parent / "train" / "train-00004.h5")
    cols = columns(SIZES[0])
    cols["extra"] = np.zeros(SIZES[0], dtype=np.float32)
    write_sharded(tmp_path / "wider", cols, SIZES[:1])
    shutil.copyfile(tmp_path / "wider" / "train" / "train-00000.h5", index.parent / "train" / "train-00000.h5")
    with h5ml.open(index) as ds:
        with pytest.raises(ShardIndexError, match=r"shard 4 of split 'train' \(train/train-00004.h5\) is missing"):
            ds["train"][N - 1]
        with pytest.raises(ShardIndexError, match="has feature 'extra', which the index does not list"):
            ds["train"]["x"][0]


def test_bad_indexes_are_refused_at_open(tmp_path: Path) -> None:
    (tmp_path / "broken.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(ShardIndexError, match="is not JSON"):
        h5ml.open(tmp_path / "broken.json")
    (tmp_path / "wrong.json").write_text(json.dumps({"format": "h5ml-index"}), encoding="utf-8")
    with pytest.raises(ShardIndexError, match="not a valid h5ml shard index"):
        h5ml.open(tmp_path / "wrong.json")
    with pytest.raises(FileNotFoundError):
        h5ml.open(tmp_path / "absent.json")


def test_at_most_max_open_shards_stay_open(shared: tuple[Path, Path]) -> None:
    """The shard cache is an LRU of max_open_shards; each shard opens with the options of h5ml.open."""
    index, _ = shared
    with pytest.raises(ValueError, match="max_open_shards must be an integer >= 1"):
        h5ml.open(index, max_open_shards=0)
    with h5ml.open(index, max_open_shards=2, verify=True) as ds:
        assert isinstance(ds, ShardedDataset) and ds.shard_opens == 0 and ds.verify
        split = ds["train"]
        for i in range(N):
            assert split[i]["x"][0] == i
            assert len(ds.open_shards) <= 2
        assert ds.shard_opens == len(SIZES) and ds.open_shards == (("train", 3), ("train", 4))
        assert ds.shard("train", 4).verify
        split.read(np.arange(N))  # all five shards in one read: none is closed while it is read
        assert ds.shard_opens == 2 * len(SIZES) and len(ds.open_shards) == 2  # in order of first appearance


def test_pickled_copies_reopen_and_refuse_a_changed_index(pair: tuple[Path, Path], tmp_path: Path) -> None:
    """A dataset and its split pickle by path and options; the copy re-reads the index and checks its fingerprint."""
    index, whole = pair
    with h5ml.open(index, max_open_shards=3) as ds:
        split = ds["train"]
        split[0]
        copy = pickle.loads(pickle.dumps(split))
        assert copy.dataset.shard_opens == 0 and copy.dataset.max_open_shards == 3
        with h5ml.open(whole) as f:
            _same(copy.read([36, 1, 10])["clip"], f["train"].read([36, 1, 10])["clip"])
        stale = pickle.dumps(ds)
    write_sharded(tmp_path / "moved", columns(N), (37,))
    shutil.copyfile(tmp_path / "moved" / "index.json", index)  # another list of shards: another fingerprint
    with pytest.raises(ShardIndexError, match="the index changed since the dataset was opened"):
        pickle.loads(stale)["train"]


#: The dataset a forked child finds in its copy of the parent's memory (never pickled).
_INHERITED: list[Any] = []


def _read_inherited(queue: Any) -> None:
    ds = _INHERITED[0]
    before = ds.shard_opens
    queue.put((before, ds["train"].read([0, 36])["x"][:, 0].tolist(), ds.shard_opens, len(ds.open_shards)))


def test_a_forked_child_opens_and_checks_its_own_shards(shared: tuple[Path, Path]) -> None:
    """After fork the child drops the parent's open shards unused (FORK_GENERATION) and opens its own."""
    index, _ = shared
    with h5ml.open(index) as ds:
        assert isinstance(ds, ShardedDataset)
        assert ds["train"][0]["x"][0] == 0 and ds.shard_opens == 1
        _INHERITED[:] = [ds]
        context = multiprocessing.get_context("fork")
        queue = context.Queue()
        child = context.Process(target=_read_inherited, args=(queue,))
        child.start()
        try:
            assert queue.get(timeout=60) == (0, [0, 36], 2, 2)
        finally:
            child.join(60)
            _INHERITED.clear()
        assert child.exitcode == 0
        assert ds.shard_opens == 1 and ds["train"][0]["x"][0] == 0  # the parent's shard is still open and read


def test_threads_reading_at_once_never_lose_a_shard_under_a_read(shared: tuple[Path, Path]) -> None:
    """Four threads read random batches with one shard allowed open: a shard being read is held, never closed."""
    from concurrent.futures import ThreadPoolExecutor

    index, whole = shared
    rng = np.random.default_rng(7)
    requests = [rng.integers(0, N, size=int(rng.integers(1, 12))) for _ in range(30)]
    with h5ml.open(index, max_open_shards=1) as ds, h5ml.open(whole) as f, ThreadPoolExecutor(4) as pool:
        got = list(pool.map(lambda rows: ds["train"].read(rows, ["x", "clip"]), requests))
        for rows, values in zip(requests, got, strict=True):
            want = f["train"].read(rows, ["x", "clip"])
            _same(values["x"], want["x"])
            _same(values["clip"], want["clip"])
        assert len(ds.open_shards) == 1
