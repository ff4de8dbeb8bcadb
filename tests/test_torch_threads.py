"""H5MLLoader(threads=N): batches read and collated in threads of this process, as the DataLoader gives them.

Each test compares real iterations over a real file with those of ``threads=0`` (a ``DataLoader``): the same
batches in the same order, the same epochs, ranks and resume states.
"""

from __future__ import annotations

import os
import threading
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

if os.environ.get("CI"):  # CI installs torch: these tests must run there, never skip
    import torch
else:
    torch = pytest.importorskip("torch")

import h5ml
from h5ml_torch import H5MLBatchSampler, H5MLDataset, H5MLLoader

N = 100
CLASSES = ["cat", "dog"]


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Sample i: x = [i, 2i, 3i], a label, a name, a ragged clip of 3 to 9 int16 values, i % 4 bytes."""
    path = tmp_path_factory.mktemp("threads") / "small.h5ml"
    rng = np.random.default_rng(0)
    x = np.arange(N, dtype=np.float32)[:, None] * np.array([1, 2, 3], dtype=np.float32)
    clips = [rng.integers(-3000, 3000, size=int(k), dtype=np.int16) for k in rng.integers(3, 10, size=N)]
    data = {"x": x, "label": h5ml.Categorical(rng.integers(0, 2, size=N), CLASSES), "clip": clips}
    h5ml.write(path, {"train": {**data, "name": [f"sample-{i}" for i in range(N)]}})
    return path


def _same(a: dict[str, Any], b: dict[str, Any]) -> None:
    assert a.keys() == b.keys()
    for key in a:
        if isinstance(a[key], torch.Tensor):
            assert a[key].dtype == b[key].dtype and torch.equal(a[key], b[key]), key
        else:
            assert a[key] == b[key], key


def _loader(path: Path, threads: int, **options: Any) -> H5MLLoader:
    data = H5MLDataset(path, "train", features=["x", "label", "name", "clip"])
    sampler = H5MLBatchSampler(data, 7, shuffle=options.pop("shuffle", "full"), seed=3, **options)
    return H5MLLoader(data, sampler, threads=threads)


@pytest.mark.parametrize("threads", [1, 2, 4])
def test_threads_give_the_dataloaders_batches_in_order(small: Path, threads: int) -> None:
    """Batch i with threads is batch i of threads=0, every key, dtype and value, for two epochs."""
    with_threads, plain = _loader(small, threads), _loader(small, 0)
    assert plain.dataloader is not None and with_threads.dataloader is None
    for epoch in (0, 1):
        with_threads.set_epoch(epoch)
        plain.set_epoch(epoch)
        pairs = list(zip(with_threads, plain, strict=True))
        assert len(pairs) == len(with_threads) == 15
        for a, b in pairs:
            _same(a, b)
        seen = sorted(int(v) for a, _ in pairs for v in a["x"][:, 0])
        assert seen == list(range(N)) and with_threads.batches_done == 15


def test_threads_read_in_threads_of_this_process(small: Path) -> None:
    """The reads run in the read-ahead threads, not in the caller's thread, and never in another process."""
    seen: set[str] = set()

    def note_thread(sample: dict[str, Any]) -> dict[str, Any]:
        seen.add(threading.current_thread().name)
        return sample

    data = H5MLDataset(small, "train", features=["x"], transform=note_thread)
    loader = H5MLLoader(data, H5MLBatchSampler(data, 10), threads=2)
    assert [int(b["x"][0, 0]) for b in loader] == list(range(0, N, 10))
    assert seen and all(name.startswith("h5ml-read-ahead") for name in seen)


@pytest.mark.parametrize("mode", ["none", "chunk"])
def test_threads_resume_as_the_dataloader(small: Path, mode: str) -> None:
    """A state taken after 4 batches with threads resumes with threads=0 on the rest, and the reverse."""
    first = _loader(small, 2, shuffle=mode, chunk_rows=8)
    first.set_epoch(2)
    whole = [b["x"][:, 0].tolist() for b in _loader_at(small, 0, mode, 2)]
    it = iter(first)
    got = [next(it)["x"][:, 0].tolist() for _ in range(4)]
    state = first.state_dict()
    assert got == whole[:4] and state["batches_done"] == 4
    for threads in (0, 3):
        again = _loader(small, threads, shuffle=mode, chunk_rows=8)
        again.load_state_dict(state)
        assert [b["x"][:, 0].tolist() for b in again] == whole[4:]


def _loader_at(path: Path, threads: int, mode: str, epoch: int) -> H5MLLoader:
    loader = _loader(path, threads, shuffle=mode, chunk_rows=8)
    loader.set_epoch(epoch)
    return loader


@pytest.mark.parametrize("drop_last", [False, True])
def test_threads_split_the_ranks_as_the_dataloader(small: Path, drop_last: bool) -> None:
    """Two ranks with threads get the batches of threads=0 of their rank, disjoint, covering the split."""
    got = {}
    for rank in (0, 1):
        a = _loader(small, 2, rank=rank, world_size=2, drop_last=drop_last)
        b = _loader(small, 0, rank=rank, world_size=2, drop_last=drop_last)
        for x, y in zip(a, b, strict=True):
            _same(x, y)
        got[rank] = {int(v) for x in a for v in x["x"][:, 0]}
    assert not got[0] & got[1]
    assert len(got[0] | got[1]) == (N if not drop_last else 2 * 7 * (N // 2 // 7))


def test_an_error_reaches_the_loop_at_its_batch(small: Path) -> None:
    """A read that fails in a thread raises in the loop when its batch comes, after the batches before it."""

    def fail_on_50(sample: dict[str, Any]) -> dict[str, Any]:
        if int(sample["x"][0]) == 50:
            raise RuntimeError("sample 50 is broken")
        return sample

    data = H5MLDataset(small, "train", features=["x"], transform=fail_on_50)
    loader = H5MLLoader(data, H5MLBatchSampler(data, 10), threads=3)
    got = []
    with pytest.raises(RuntimeError, match="sample 50 is broken"):
        for batch in loader:
            got.append(int(batch["x"][0, 0]))
    assert got == [0, 10, 20, 30, 40] and loader.batches_done == 5


def test_breaking_off_an_epoch_then_a_new_one(small: Path) -> None:
    """Leaving the loop early drops what was read ahead; the next epoch starts from its first batch."""
    loader = _loader(small, 2, shuffle="none")
    for i, _ in enumerate(loader):
        if i == 2:
            break
    assert loader.batches_done == 3
    loader.set_epoch(1)
    assert [b["x"][0, 0].item() for b in loader][:2] == [0.0, 7.0]


def test_pin_memory_with_threads_behaves_as_the_dataloader(small: Path) -> None:
    """pin_memory=True: DataLoader's warning and unpinned tensors without an accelerator; the same batches."""
    data = H5MLDataset(small, "train", features=["x", "clip"])
    accelerator = torch.accelerator.is_available()
    loaders = [H5MLLoader(data, H5MLBatchSampler(data, 9), pin_memory=True, threads=t) for t in (0, 2)]
    batches = []
    for loader in loaders:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            batches.append(list(loader))
        said = [str(w.message) for w in caught if "pin_memory" in str(w.message)]
        assert bool(said) == (not accelerator)
    for a, b in zip(*batches, strict=True):
        _same(a, b)
        assert all(a[k].is_pinned() == accelerator for k in ("x", "clip", "clip_lengths", "clip_mask"))


@pytest.mark.parametrize(("threads", "options"), [(-1, {}), (2, {"num_workers": 2}), (1, {"persistent_workers": True})])
def test_threads_refuse_dataloader_options(small: Path, threads: int, options: dict[str, Any]) -> None:
    """threads with a worker option is refused, naming both and saying what to pass instead."""
    data = H5MLDataset(small, "train", features=["x"])
    with pytest.raises(ValueError, match=rf"threads={threads}.*pass threads=0.*num_workers"):
        H5MLLoader(data, H5MLBatchSampler(data, 5), threads=threads, **options)
