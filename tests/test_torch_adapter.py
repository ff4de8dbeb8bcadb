"""Tests of the PyTorch adapter ``h5ml_torch`` with real files and real ``DataLoader`` workers (issue 3)."""

from __future__ import annotations

import json
import os
import pickle
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest

if os.environ.get("CI"):  # CI installs torch: these tests must run there, never skip
    import torch
else:
    torch = pytest.importorskip("torch")

from torch.utils.data import DataLoader

import h5ml
from h5ml.sampling import Sampler
from h5ml_torch import (
    Collate,
    H5MLBatchSampler,
    H5MLDataset,
    H5MLLoader,
    collate,
    distributed_rank,
    pad_ragged,
)

N = 37
CLASSES = ["cat", "dog", "emu"]


def _clips(n: int, low: int, high: int, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.integers(-3000, 3000, size=int(k), dtype=np.int16) for k in rng.integers(low, high + 1, size=n)]


def _write(path: Path, n: int = N, seed: int = 0) -> Path:
    """A split of n samples; sample i has x = [i, 2i, 3i] + seed, so x[:, 0] identifies it."""
    rng = np.random.default_rng(seed)
    x = (np.arange(n, dtype=np.float32)[:, None] * np.array([1, 2, 3], dtype=np.float32)) + seed
    h5ml.write(
        path,
        {
            "train": {
                "x": x,
                "label": h5ml.Categorical(rng.integers(0, len(CLASSES), size=n), CLASSES),
                "name": [f"sample-{i}" for i in range(n)],
                "clip": _clips(n, 3, 9, seed),
                "blob": [bytes([i % 256]) * (i % 4) for i in range(n)],
            }
        },
    )
    return path


@pytest.fixture
def small(tmp_path: Path) -> Path:
    return _write(tmp_path / "small.h5ml")


def _ids(batch: dict[str, Any]) -> list[int]:
    return [int(v) for v in batch["x"][:, 0]]


def _epoch_ids(loader: Any) -> list[list[int]]:
    return [_ids(b) for b in loader]


def add_one_to_x(sample: dict[str, Any]) -> dict[str, Any]:
    """A picklable per-sample transform."""
    return {**sample, "x": sample["x"] + 1}


def double_x(batch: dict[str, Any]) -> dict[str, Any]:
    """A picklable per-batch transform."""
    return {**batch, "x": batch["x"] * 2}


# -- the dataset ------------------------------------------------------------------------------


def test_getitem_gives_tensors_per_encoding(small: Path) -> None:
    """§6.2-§6.6: one sample as a dict: dense/categorical/ragged tensors, str, bytes; class names."""
    data = H5MLDataset(small, "train")
    with h5ml.open(small) as f:
        expect = f["train"].read(5)
        names = f["train"].feature("label").class_names
    sample = data[5]
    assert len(data) == N
    assert sample["x"].dtype == torch.float32 and sample["x"].tolist() == [5.0, 10.0, 15.0]
    assert sample["label"].dtype == torch.int64 and sample["label"].shape == ()
    assert int(sample["label"]) == expect["label"]
    assert sample["name"] == "sample-5"
    assert sample["clip"].dtype == torch.int16 and sample["clip"].tolist() == expect["clip"].tolist()
    assert sample["blob"] == bytes([5])
    assert data.class_names("label") == names == CLASSES
    with pytest.raises(ValueError, match="not categorical"):
        data.class_names("x")
    assert data.encodings == {"x": "dense", "label": "categorical", "name": "string", "clip": "ragged", "blob": "bytes"}


def test_getitems_any_order_and_duplicates(small: Path) -> None:
    """§5: indices in any order, with duplicates and negatives, give the right rows in one read."""
    data = H5MLDataset(small, "train", features=["x", "name", "clip"])
    indices = [30, 2, 30, 0, N - 1, 7, 2, -1]
    batch = collate(data.__getitems__(indices))
    expected = [i % N for i in indices]
    assert _ids(batch) == expected
    assert batch["name"] == [f"sample-{i}" for i in expected]
    assert set(batch) == {"x", "name", "clip", "clip_lengths", "clip_mask"}
    for row, i in enumerate(expected):
        clip = data[i]["clip"]
        assert batch["clip_lengths"][row] == len(clip)
        assert torch.equal(batch["clip"][row, : len(clip)], clip)
    with pytest.raises(IndexError):
        data.__getitems__([0, N])


def test_getitems_reads_once(small: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The batched path makes exactly one Split.read call per batch."""
    data = H5MLDataset(small, "train")
    split = data.reader()
    calls: list[Any] = []
    original = split.read

    def counting(indices: Any, features: Any = None) -> Any:
        calls.append(indices)
        return original(indices, features)

    monkeypatch.setattr(split, "read", counting)
    loader = DataLoader(data, batch_sampler=H5MLBatchSampler(data, 10), collate_fn=collate)
    assert sum(len(b["name"]) for b in loader) == N
    assert len(calls) == 4 and [len(c) for c in calls] == [10, 10, 10, 7]


def test_dataset_pickles_by_path(small: Path) -> None:
    """C02: the dataset pickles as its path and settings, not an open handle, even after reading."""
    data = H5MLDataset(small, "train", features=["x"], transform=add_one_to_x)
    assert data[0]["x"].tolist() == [1.0, 1.0, 1.0]
    clone = pickle.loads(pickle.dumps(data))
    assert clone.__getstate__() == {
        "path": str(small.resolve()),
        "split": "train",
        "features": ("x",),
        "decode_images": False,
        "color": "RGB",
        "verify": False,
        "zero_copy": True,  # a local file: read as views, every tensor handed out is copied once (issue 15)
        "storage_options": None,  # a URL's fsspec options travel to the workers with the dataset (issue 16)
        "transform": add_one_to_x,
    }
    assert clone[3]["x"].tolist() == [4.0, 7.0, 10.0]


def test_unknown_split_names_the_available_ones(small: Path) -> None:
    """A wrong split name fails with the file path and the available splits."""
    with pytest.raises(KeyError, match="'train'"):
        len(H5MLDataset(small, "test"))
    with pytest.raises(h5ml.SplitNotFoundError) as info:
        H5MLDataset(small, "tset")[0]
    assert str(info.value) == f"{small.resolve()}: no split 'tset'; available splits: 'train'"


def test_default_dataloader_and_collate_compatibility(small: Path) -> None:
    """A plain DataLoader(batch_size=...) with torch's default collate also works (dense + categorical)."""
    data = H5MLDataset(small, "train", features=["x", "label"])
    batches = list(DataLoader(data, batch_size=8))
    assert [len(b["label"]) for b in batches] == [8, 8, 8, 8, 5]
    assert sorted(i for b in batches for i in _ids(b)) == list(range(N))
    assert batches[0]["label"].dtype == torch.int64


@pytest.mark.parametrize(("context", "workers"), [("fork", 1), ("fork", 2), ("spawn", 2), ("forkserver", 2)])
def test_c02_workers_return_the_same_samples(small: Path, context: str, workers: int) -> None:
    """C02: 1 and 2 workers under fork, spawn and forkserver give the same multiset as 0 workers."""
    data = H5MLDataset(small, "train")
    len(data)  # open a reader in the parent first: the workers must not inherit it
    sampler = H5MLBatchSampler(data, 5, shuffle="full", seed=3)
    base = DataLoader(data, batch_sampler=sampler, collate_fn=collate)
    multi = DataLoader(
        data, batch_sampler=sampler, collate_fn=collate, num_workers=workers, multiprocessing_context=context
    )
    want = [(i, n) for b in base for i, n in zip(_ids(b), b["name"], strict=True)]
    got = [(i, n) for b in multi for i, n in zip(_ids(b), b["name"], strict=True)]
    assert Counter(got) == Counter(want)
    assert sorted(i for i, _ in want) == list(range(N))


def test_persistent_workers_follow_epochs(small: Path) -> None:
    """Persistent workers (forkserver) give every sample once in each epoch's own order."""
    data = H5MLDataset(small, "train", features=["x"])
    sampler = H5MLBatchSampler(data, 6, shuffle="full", seed=1)
    loader = DataLoader(
        data,
        batch_sampler=sampler,
        collate_fn=collate,
        num_workers=2,
        multiprocessing_context="forkserver",
        persistent_workers=True,
    )
    for epoch in (0, 1):
        sampler.set_epoch(epoch)
        got = [i for b in loader for i in _ids(b)]
        assert got == [i for b in sampler.sampler.batches(epoch) for i in b.tolist()]
        assert sorted(got) == list(range(N))


@pytest.mark.filterwarnings("ignore:'pin_memory' argument is set as true but no accelerator:UserWarning")
def test_pin_memory_gives_the_same_batches(small: Path) -> None:
    """pin_memory=True (2 workers): the same batches; tensors pinned exactly when an accelerator exists."""
    data = H5MLDataset(small, "train", features=["x", "label", "name", "clip"])
    pinned = H5MLLoader(data, H5MLBatchSampler(data, 5, shuffle="full", seed=3), pin_memory=True, num_workers=2)
    plain = H5MLLoader(data, H5MLBatchSampler(data, 5, shuffle="full", seed=3))
    accelerator = torch.accelerator.is_available()
    count = 0
    for a, b in zip(pinned, plain, strict=True):
        assert a.keys() == b.keys() and a["name"] == b["name"]
        for key in ("x", "label", "clip", "clip_lengths", "clip_mask"):
            assert torch.equal(a[key], b[key]) and a[key].is_pinned() == accelerator
        count += 1
    assert count == 8


# -- collate ----------------------------------------------------------------------------------


def test_c05_ragged_clips_collate_padded(tmp_path: Path) -> None:
    """C05, §6.3: int16 clips of 4k-16k samples collate to padded int16 tensors with lengths and mask."""
    clips = _clips(24, 4000, 16000, seed=5)
    path = tmp_path / "audio.h5ml"
    h5ml.write(path, {"train": {"clip": clips, "id": np.arange(24)}}, compression="gzip")
    data = H5MLDataset(path, "train")
    loader = DataLoader(data, batch_sampler=H5MLBatchSampler(data, 8, shuffle="full", seed=2), collate_fn=collate)
    seen = []
    for batch in loader:
        padded, lengths, mask = batch["clip"], batch["clip_lengths"], batch["clip_mask"]
        assert torch.as_tensor(padded) is padded
        assert padded.dtype == torch.int16 and lengths.dtype == torch.int64 and mask.dtype == torch.bool
        ids = batch["id"].tolist()
        true_lengths = [len(clips[i]) for i in ids]
        assert lengths.tolist() == true_lengths
        assert padded.shape == (8, max(true_lengths)) and mask.shape == padded.shape
        assert mask.sum(dim=1).tolist() == true_lengths
        for row, i in enumerate(ids):
            assert padded[row, : len(clips[i])].numpy().tolist() == clips[i].tolist()
            assert not padded[row, len(clips[i]) :].any()
        seen += ids
    assert sorted(seen) == list(range(24))
    with h5ml.open(path) as f:  # the lengths agree with the offsets alone
        assert f["train"].feature("clip").lengths().tolist() == [len(c) for c in clips]


def test_bucket_by_length_from_offsets_pads_less(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """§6.3: bucket_by reads only the offsets; two ranks, equal batch counts, each clip once, far less padding."""
    clips = _clips(200, 100, 4000, seed=8)
    path = tmp_path / "audio.h5ml"
    h5ml.write(path, {"train": {"clip": clips, "id": np.arange(200)}})
    data = H5MLDataset(path, "train")
    stats = data.reader().dataset.read_stats
    with stats.record() as reads:
        samplers = [
            H5MLBatchSampler(data, 8, shuffle="full", seed=1, rank=r, world_size=2, bucket_by="clip") for r in (0, 1)
        ]
    read_paths = {event.hdf5_path for event in reads}
    assert "/train/clip/offsets" in read_paths and "/train/clip/values" not in read_paths  # from the offsets alone
    plain = H5MLBatchSampler(data, 8, shuffle="full", seed=1, rank=0, world_size=2)
    assert len(samplers[0]) == len(samplers[1]) == len(plain) == 13

    def padding(sampler: H5MLBatchSampler) -> int:
        total = 0
        for batch in DataLoader(data, batch_sampler=sampler, collate_fn=collate):
            assert batch["clip_lengths"].tolist() == [len(clips[i]) for i in batch["id"].tolist()]
            total += int((~batch["clip_mask"]).sum())
        return total

    assert padding(samplers[0]) * 5 < padding(plain)
    seen = Counter(int(i) for s in samplers for b in s for i in b)
    assert set(seen) == set(range(200)) and sum(seen.values()) == 200  # 12 steps of 16, then 4 + 4: no padding
    state = samplers[0].state_dict(batches_done=3)
    assert state["pool_batches"] == 32
    with pytest.raises(TypeError, match="not ragged or bytes"):
        H5MLBatchSampler(data, 8, bucket_by="id")
    with pytest.raises(TypeError, match="H5MLDataset"):
        H5MLBatchSampler(200, 8, bucket_by="clip")


def test_collate_sample_lists_pads_ragged_even_when_lengths_match(small: Path) -> None:
    """A per-sample transform path collates like the column path, ragged keys included."""
    data = H5MLDataset(small, "train", transform=add_one_to_x)
    indices = [4, 4, 9]
    batch = collate(data.__getitems__(indices))
    assert batch["x"][:, 0].tolist() == [5.0, 5.0, 10.0]
    plain = collate(H5MLDataset(small, "train").__getitems__(indices))
    assert set(batch) == set(plain) == {"x", "label", "name", "clip", "clip_lengths", "clip_mask", "blob"}
    assert torch.equal(batch["clip"], plain["clip"]) and torch.equal(batch["clip_mask"], plain["clip_mask"])
    assert batch["label"].dtype == torch.int64 and torch.equal(batch["label"], plain["label"])
    assert batch["blob"] == plain["blob"] == [bytes([4]) * 0, bytes([4]) * 0, bytes([9])]
    same = collate(H5MLDataset(small, "train").__getitems__([4, 4]))
    assert same["clip_mask"].all() and same["clip_lengths"].tolist() == [len(data[4]["clip"])] * 2


def test_pad_ragged_on_several_axes() -> None:
    """§6.3 with shapes: samples differing in two axes pad on both; lengths are their shapes."""
    a = torch.ones((2, 3), dtype=torch.float32)
    b = torch.full((4, 1), 2.0)
    padded, lengths, mask = pad_ragged([a, b], pad_value=-1)
    assert padded.shape == (2, 4, 3)
    assert lengths.tolist() == [[2, 3], [4, 1]]
    assert mask.sum().item() == 6 + 4
    assert padded[1, :, 1:].eq(-1).all() and padded[0, 2:].eq(-1).all()
    with pytest.raises(ValueError, match="same number of dimensions"):
        pad_ragged([torch.ones(2), torch.ones((2, 2))])


def test_local_file_read_as_views_hands_out_tensors_of_their_own(tmp_path: Path) -> None:
    """Issue 15: a local file is read with zero_copy (views of the map), yet every tensor handed out is a copy.

    The ragged clips come out of the reader as views (counted as such), the collated batch equals the one read
    with zero_copy=False, and writing into its tensors changes neither the file nor the next read.
    """
    clips = _clips(30, 50, 400, seed=3)
    path = tmp_path / "audio.h5ml"
    h5ml.write(path, {"train": {"clip": clips, "x": np.arange(60, dtype=np.float32).reshape(30, 2)}})
    viewed, copied = H5MLDataset(path, "train"), H5MLDataset(path, "train", zero_copy=False)
    assert viewed.zero_copy and not copied.zero_copy
    assert not H5MLDataset("s3://bucket/data.h5ml", "train").zero_copy  # a URL has no memory map to view
    stats = viewed.reader().dataset.read_stats
    stats.reset()
    rows = [7, 2, 3, 4, 29, 7]
    batch = collate(viewed.__getitems__(rows))
    assert stats.direct_views == 1  # one view over the runs [2, 5), [7], [29] (a gap costs nothing in a view)
    plain = collate(copied.__getitems__(rows))
    assert copied.reader().dataset.read_stats.direct_views == 0
    assert batch.keys() == plain.keys()
    for key in batch:
        assert torch.equal(batch[key], plain[key]), key
    for key in ("clip", "x"):
        assert batch[key].numpy().flags.writeable
        batch[key].fill_(0)  # would crash (a read-only map) or corrupt the next read if it shared the map
    again = collate(viewed.__getitems__(rows))
    assert again["clip"][0, : len(clips[7])].tolist() == clips[7].tolist()
    assert again["x"][:, 0].tolist() == [14.0, 4.0, 6.0, 8.0, 58.0, 14.0]
    one = viewed[7]["clip"]
    assert one.numpy().flags.writeable and one.tolist() == clips[7].tolist()


def test_collate_pad_false_gives_each_clip_its_own_tensor(tmp_path: Path) -> None:
    """pad=False: a ragged feature is a list of R tensors of their own lengths, through real DataLoader workers.

    Each tensor has the clip's dtype and values, is writable, and writing into one changes no other; no
    _lengths or _mask keys; a feature with shapes keeps each sample's shape; mixed dtypes are refused.
    """
    clips = _clips(40, 10, 300, seed=4)
    grids = [np.arange(i % 5 * (i % 3 + 1), dtype=np.float32).reshape(i % 5, i % 3 + 1) + i for i in range(40)]
    path = tmp_path / "audio.h5ml"
    h5ml.write(path, {"train": {"clip": clips, "grid": grids, "id": np.arange(40)}})  # grid: with shapes (§6.3)
    data = H5MLDataset(path, "train")
    sampler = H5MLBatchSampler(data, 8, shuffle="full", seed=1)
    loader = H5MLLoader(data, sampler, Collate(pad=False), num_workers=2, multiprocessing_context="fork")
    seen = []
    for batch in loader:
        assert set(batch) == {"clip", "grid", "id"}
        ids = batch["id"].tolist()
        assert isinstance(batch["clip"], list) and len(batch["clip"]) == len(ids)
        for tensor, grid, i in zip(batch["clip"], batch["grid"], ids, strict=True):
            assert tensor.dtype == torch.int16 and tensor.tolist() == clips[i].tolist()
            assert grid.shape == grids[i].shape and grid.numpy().tolist() == grids[i].tolist()
        # one storage for the batch's clips, sent once from the worker (not one shared-memory file per clip)
        assert len({t.untyped_storage().data_ptr() for t in batch["clip"]}) == 1
        batch["clip"][0].fill_(7)
        assert batch["clip"][1].tolist() == clips[ids[1]].tolist()  # one buffer, disjoint views
        seen += ids
    assert sorted(seen) == list(range(40))
    padded = collate(data.__getitems__([0, 1]))
    assert "clip_lengths" in padded and collate(data.__getitems__([0, 1]), pad=False)["clip"][1].shape == (
        len(clips[1]),
    )
    plain = collate([{"c": np.arange(2, dtype=np.int16)}, {"c": np.arange(3, dtype=np.int16)}], pad=False)
    assert [t.tolist() for t in plain["c"]] == [[0, 1], [0, 1, 2]] and set(plain) == {"c"}
    with pytest.raises(ValueError, match=r"dtypes \['float32', 'int16'\]"):
        collate([{"c": np.ones(2, np.int16)}, {"c": np.ones(3, np.float32)}], pad=False)


def test_collate_class_applies_batch_transform(small: Path) -> None:
    """A per-batch transform runs after collation (and pickles for workers)."""
    data = H5MLDataset(small, "train", features=["x"])
    fn = pickle.loads(pickle.dumps(Collate(transform=double_x)))
    batch = fn(data.__getitems__([1, 2]))
    assert batch["x"][:, 0].tolist() == [2.0, 4.0]


# -- shuffle modes ----------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["none", "chunk", "full"])
def test_shuffle_modes_each_sample_once(small: Path, mode: str) -> None:
    """Every shuffle mode gives each sample once per epoch through the DataLoader; same seed, same order."""
    data = H5MLDataset(small, "train", features=["x"])

    def epoch(seed: int, number: int) -> list[int]:
        sampler = H5MLBatchSampler(data, 4, shuffle=mode, seed=seed, chunk_rows=4, window_chunks=2)  # type: ignore[arg-type]
        sampler.set_epoch(number)
        return [i for b in DataLoader(data, batch_sampler=sampler, collate_fn=collate) for i in _ids(b)]

    first = epoch(7, 0)
    assert sorted(first) == list(range(N))
    assert first == epoch(7, 0)
    if mode == "none":
        assert first == list(range(N)) == epoch(7, 1)
    else:
        assert first != epoch(7, 1) and first != epoch(8, 0) and first != list(range(N))
        expect = Sampler(N, 4, shuffle=mode, seed=7, chunk_rows=4, window_chunks=2).epoch_order(0)  # type: ignore[arg-type]
        assert first == expect.tolist()


def test_chunk_rows_come_from_the_first_dense_feature(small: Path) -> None:
    """§7.1: chunk mode takes chunk_rows from the file when not given."""
    data = H5MLDataset(small, "train")
    with h5ml.open(small) as f:
        rows = f["train"].feature("x").chunk_rows
    sampler = H5MLBatchSampler(data, 4, shuffle="chunk")
    assert rows is not None and sampler.sampler.chunk_rows == rows
    assert data.fingerprint is not None and sampler.sampler.fingerprint == f"{data.fingerprint} /train"


# -- resume -----------------------------------------------------------------------------------


@pytest.mark.parametrize(("workers_before", "workers_after"), [(2, 0), (0, 2)])
def test_resume_gives_the_rest_of_the_epoch(small: Path, workers_before: int, workers_after: int) -> None:
    """Resume: k batches handed out, state saved (JSON), a new loader gives exactly the remaining batches."""
    data = H5MLDataset(small, "train", features=["x"])
    options: dict[str, Any] = {"multiprocessing_context": "fork"}

    def loader(workers: int) -> H5MLLoader:
        sampler = H5MLBatchSampler(data, 4, shuffle="full", seed=11)
        return H5MLLoader(data, sampler, num_workers=workers, **(options if workers else {}))

    full = loader(0)
    full.set_epoch(1)
    uninterrupted = _epoch_ids(full)
    assert len(uninterrupted) == 10

    first = loader(workers_before)
    first.set_epoch(1)
    head = []
    for batch in first:
        head.append(_ids(batch))
        if len(head) == 3:
            break
    state = json.loads(json.dumps(first.state_dict()))
    assert state["batches_done"] == 3 and state["epoch"] == 1

    second = loader(workers_after)
    second.load_state_dict(state)
    assert len(second) == 7
    tail = []
    for batch in second:
        tail.append(_ids(batch))
        if len(tail) == 2:  # a resume of a resume counts from the epoch start
            assert second.state_dict()["batches_done"] == 5
    assert head + tail == uninterrupted

    second.set_epoch(2)  # the next epoch is whole again
    assert len(_epoch_ids(second)) == 10


def test_sampler_state_dict_with_own_count(small: Path) -> None:
    """Without H5MLLoader: sampler.state_dict(batches_done=k) and load_state_dict resume the epoch."""
    data = H5MLDataset(small, "train", features=["x"])
    sampler = H5MLBatchSampler(data, 5, shuffle="chunk", chunk_rows=8, seed=4)
    sampler.set_epoch(3)
    everything = list(sampler)
    state = sampler.state_dict(batches_done=2)
    again = H5MLBatchSampler(data, 5, shuffle="chunk", chunk_rows=8, seed=0)
    again.load_state_dict(state)
    assert again.epoch == 3 and len(again) == len(everything) - 2
    assert list(again) == everything[2:]
    assert list(again) == everything[2:]  # the resume point holds until set_epoch
    again.set_epoch(4)
    assert len(again) == len(everything) and [i for b in again for i in b] != [i for b in everything for i in b]


def test_resume_refuses_another_file(small: Path, tmp_path: Path) -> None:
    """§8.3: a state taken on another file (other fingerprint) is refused."""
    other = _write(tmp_path / "other.h5ml", seed=1)
    state = H5MLBatchSampler(H5MLDataset(small, "train"), 4).state_dict(batches_done=1)
    sampler = H5MLBatchSampler(H5MLDataset(other, "train"), 4)
    with pytest.raises(ValueError, match="another file or split"):
        sampler.load_state_dict(state)


# -- ranks ------------------------------------------------------------------------------------


@pytest.mark.parametrize("drop_last", [False, True])
def test_two_ranks_share_the_samples(small: Path, drop_last: bool) -> None:
    """Two ranks: disjoint shares covering the set, the same number of batches, N = 37 not divisible."""
    data = H5MLDataset(small, "train", features=["x"])
    shares = []
    for rank in (0, 1):
        sampler = H5MLBatchSampler(data, 4, shuffle="full", seed=9, drop_last=drop_last, rank=rank, world_size=2)
        sampler.set_epoch(1)
        shares.append(_epoch_ids(DataLoader(data, batch_sampler=sampler, collate_fn=collate)))
    assert len(shares[0]) == len(shares[1]) == (N // 8 if drop_last else -(-N // 8))
    ids = [[i for b in share for i in b] for share in shares]
    if drop_last:
        assert not set(ids[0]) & set(ids[1])
        assert len(ids[0]) + len(ids[1]) == 32 and len(set(ids[0] + ids[1])) == 32
    else:
        assert set(ids[0]) | set(ids[1]) == set(range(N))
        assert len(ids[0]) + len(ids[1]) == N + 1  # one padding sample repeated (fewer than world_size)
        assert len(set(ids[0]) & set(ids[1])) <= 1


def test_rank_defaults_without_torch_distributed() -> None:
    """Without an initialised process group the sampler is rank 0 of 1; explicit values win."""
    assert distributed_rank(None, None) == (0, 1)
    assert distributed_rank(1, 3) == (1, 3)
    with pytest.raises(ValueError, match="rank"):
        H5MLBatchSampler(10, 2, rank=2, world_size=2)


def _gloo_rank(rank: int, store: str, path: str, out: str) -> None:
    """One rank of a two-process gloo group: record the sample ids its sampler reads in epoch 1."""
    import torch.distributed as dist

    dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=2)
    try:
        data = H5MLDataset(path, "train", features=["x"])
        sampler = H5MLBatchSampler(data, 4, shuffle="chunk", chunk_rows=8, seed=5)
        sampler.set_epoch(1)
        batches = _epoch_ids(DataLoader(data, batch_sampler=sampler, collate_fn=collate))
        seen = torch.tensor([len(batches)])
        dist.all_reduce(seen)  # both ranks reach every collective: neither hangs at the epoch's end
        Path(out, f"rank{rank}.json").write_text(
            json.dumps({"rank": sampler.sampler.rank, "world": sampler.sampler.world_size, "batches": batches})
        )
    finally:
        dist.destroy_process_group()


def test_two_gloo_processes_share_the_samples(small: Path, tmp_path: Path) -> None:
    """Distributed: two gloo processes read rank and world size from torch.distributed and share N = 37."""
    import torch.multiprocessing as tmp

    tmp.start_processes(
        _gloo_rank,
        args=(str(tmp_path / "store"), str(small), str(tmp_path)),
        nprocs=2,
        start_method="spawn",
    )
    results = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in (0, 1)]
    assert [(r["rank"], r["world"]) for r in results] == [(0, 2), (1, 2)]
    assert len(results[0]["batches"]) == len(results[1]["batches"]) == 5
    ids = [[i for b in r["batches"] for i in b] for r in results]
    assert set(ids[0]) | set(ids[1]) == set(range(N)) and len(ids[0]) + len(ids[1]) == N + 1


_RESUME_CHILD = """
import json, sys
from h5ml_torch import H5MLBatchSampler, H5MLDataset, H5MLLoader
path, mode, workers, state_file = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
data = H5MLDataset(path, "train", features=["x"])
options = {"multiprocessing_context": "spawn"} if workers else {}
loader = H5MLLoader(data, H5MLBatchSampler(data, 4, shuffle="chunk", seed=5, chunk_rows=8), num_workers=workers, **options)
loader.set_epoch(3)
seen = []
if mode == "head":
    for batch in loader:
        seen.append([int(v) for v in batch["x"][:, 0]])
        if len(seen) == 4:
            break
    with open(state_file, "w") as f:
        json.dump(loader.state_dict(), f)
else:
    with open(state_file) as f:
        loader.load_state_dict(json.load(f))
    seen = [[int(v) for v in batch["x"][:, 0]] for batch in loader]
print(json.dumps(seen))
"""


def test_resume_in_a_new_process_with_other_workers(small: Path, tmp_path: Path) -> None:
    """Resume: a process stops after 4 batches and saves its state; a new process with another
    num_workers (spawned workers) gives exactly the remaining batches of the uninterrupted epoch."""
    import subprocess
    import sys

    data = H5MLDataset(small, "train", features=["x"])
    whole = H5MLLoader(data, H5MLBatchSampler(data, 4, shuffle="chunk", seed=5, chunk_rows=8))
    whole.set_epoch(3)
    uninterrupted = _epoch_ids(whole)
    state_file = tmp_path / "state.json"

    def child(mode: str, workers: int) -> list[list[int]]:
        args = [sys.executable, "-c", _RESUME_CHILD, str(small), mode, str(workers), str(state_file)]
        out = subprocess.run(args, capture_output=True, text=True, timeout=300, check=True)
        result: list[list[int]] = json.loads(out.stdout.strip().splitlines()[-1])
        return result

    head = child("head", 0)
    tail = child("tail", 2)
    assert len(head) == 4 and json.loads(state_file.read_text())["batches_done"] == 4
    assert head + tail == uninterrupted


# -- the adapter guide --------------------------------------------------------------------------


def test_adapters_readme_example_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any) -> None:
    """adapters/README.md's example runs as written: buckets, 2 workers, 2 epochs, class names, a resume state."""
    import re

    readme = Path(__file__).resolve().parents[1] / "adapters" / "README.md"
    blocks = re.findall(r"```python\n(.*?)```", readme.read_text(encoding="utf-8"), flags=re.DOTALL)
    assert len(blocks) == 1
    monkeypatch.chdir(tmp_path)
    scope: dict[str, Any] = {}
    exec(compile(blocks[0], str(readme), "exec"), scope)
    assert capsys.readouterr().out.strip() == "['yes', 'no'] 16 batches per epoch"
    state = scope["state"]
    assert (state["epoch"], state["batches_done"], state["pool_batches"]) == (1, 16, 32)
    with h5ml.open(tmp_path / "speech.h5") as f:
        assert state["fingerprint"] == f"{f.fingerprint} /train"


def test_decoded_images_collate_stacked_or_padded(tmp_path: Path) -> None:
    """Issue 5: bytes features of PNG files are decoded in 2 workers; one size stacks, two sizes pad with a mask."""
    from io import BytesIO

    Image = pytest.importorskip("PIL.Image")
    rng = np.random.default_rng(9)
    pixels = [rng.integers(0, 256, size=(5, 4 if i < 8 else 6, 3), dtype=np.uint8) for i in range(10)]

    def png(array: np.ndarray) -> bytes:
        buffer = BytesIO()
        Image.fromarray(array).save(buffer, format="PNG")
        return buffer.getvalue()

    path = tmp_path / "photos.h5"
    h5ml.write(path, {"train": {"photo": [png(p) for p in pixels], "id": np.arange(10)}})
    data = H5MLDataset(path, "train", decode_images=["photo"])
    loader = DataLoader(data, batch_sampler=H5MLBatchSampler(data, 4), collate_fn=collate, num_workers=2)
    batches = list(loader)
    first, last = batches[0], batches[-1]
    assert first["photo"].dtype == torch.uint8 and first["photo"].shape == (4, 5, 4, 3) and "photo_mask" not in first
    assert all(torch.equal(first["photo"][k], torch.from_numpy(pixels[k])) for k in range(4))
    assert last["id"].tolist() == [8, 9] and last["photo"].shape == (2, 5, 6, 3)
    middle = batches[1]  # samples 4..7 are 5x4, fine; then build a mixed batch directly
    assert middle["photo"].shape == (4, 5, 4, 3)
    mixed = collate(data.__getitems__([7, 8]))
    assert mixed["photo"].shape == (2, 5, 6, 3) and mixed["photo_lengths"].tolist() == [[5, 4, 3], [5, 6, 3]]
    assert mixed["photo_mask"][0, :, 4:].any().item() is False and torch.equal(
        mixed["photo"][1], torch.from_numpy(pixels[8])
    )


# -- sharded datasets (SPEC §12.5, issue 16) ----------------------------------------------------


@pytest.mark.parametrize("context", ["fork", "spawn"])
def test_an_index_is_read_like_a_file_by_two_workers(tmp_path: Path, context: str) -> None:
    """H5MLDataset takes a shard index: a real DataLoader with 2 workers reads one chunk-shuffled epoch, each sample
    once, every value equal to the same samples of one file holding the shards' concatenation."""
    from _shards import columns, write_file, write_sharded

    n = 41
    cols = columns(n)
    index = write_sharded(tmp_path / "ds", cols, (17, 1, 9, 14))
    data, single = H5MLDataset(index, "train"), H5MLDataset(write_file(tmp_path / "whole.h5", cols), "train")
    assert len(data) == n  # a reader open in the parent: the workers must open their own
    sampler = H5MLBatchSampler(data, 5, shuffle="chunk", seed=4)
    assert sampler.sampler.shard_sizes == (17, 1, 9, 14)
    loader = DataLoader(data, batch_sampler=sampler, collate_fn=collate, num_workers=2, multiprocessing_context=context)
    seen: list[int] = []
    for batch in loader:
        ids = _ids(batch)
        seen += ids
        want = collate(single.__getitems__(ids))
        assert list(batch) == list(want)
        for key, value in want.items():
            assert torch.equal(batch[key], value) if isinstance(value, torch.Tensor) else batch[key] == value
    assert sorted(seen) == list(range(n))
    assert seen == [int(i) for b in sampler.sampler.batches(0) for i in b]


def test_a_float_or_boolean_index_is_refused_never_read_as_another_sample(small: Path) -> None:
    """int(2.7) would read sample 2 and a mask [T, F, T] samples 1, 0, 1: the dataset refuses both, as the reader
    does; integer indices of every kind (numpy, 0-d tensor, an int64 array, an empty batch) still read."""
    data = H5MLDataset(small, "train")
    for bad in (2.7, True, np.float64(1.0), np.bool_(False)):
        with pytest.raises(TypeError, match=r"sample index|boolean"):
            data[bad]  # type: ignore[index]
    for batch in ([1.9, 2.2], np.array([0.0, 1.0]), [True, False, True], np.ones(N, dtype=bool)):
        with pytest.raises(TypeError, match=r"integers|boolean mask"):
            data.__getitems__(batch)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="1-D"):
        data.__getitems__(np.array([[0, 1]]))
    with pytest.raises(IndexError, match="out of range"):
        data.__getitems__(np.array([2**64 - 1], dtype=np.uint64))  # would wrap to -1: the last sample
    assert data[np.int64(3)]["x"].tolist() == data[torch.tensor(3)]["x"].tolist() == [3.0, 6.0, 9.0]
    assert _ids(collate(data.__getitems__(np.array([4, 1, 1], dtype=np.uint8)))) == [4, 1, 1]
    assert len(data.__getitems__([])) == 0
