"""benchmarks/peers: the batch validator rejects wrong data, the schedule is seeded, missing peers are reported (issue 15)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

from peers.array_readers import MemmapReader
from peers.base import Reader
from peers.hdf5_readers import H5MLReader, H5pyReader
from peers.raw import run_raw
from peers.timing import interleaved
from peers.validate import BatchMismatch, check_batch
from peers.workloads import Workload, image_tiles


def _images() -> Workload:
    rng = np.random.default_rng(1)
    return Workload("images", rng.integers(0, 256, size=(40, 4, 4, 3), dtype=np.uint8), np.arange(40) % 3)


def test_check_batch_accepts_the_source_and_rejects_wrong_dtype_labels_and_values() -> None:
    w = _images()
    rng = np.random.default_rng(0)
    idx = np.array([5, 1, 30, 7])
    check_batch(w, idx, w.x[idx], w.y[idx], rng)  # the right batch passes
    with pytest.raises(BatchMismatch, match="int64"):
        check_batch(w, idx, w.x[idx].astype(np.int64), w.y[idx], rng)  # what HF's numpy format returns without dtype=
    with pytest.raises(BatchMismatch, match="labels"):
        check_batch(w, idx, w.x[idx], w.y[idx[::-1]], rng)
    with pytest.raises(BatchMismatch, match="differs"):
        check_batch(w, idx, w.x[idx[::-1]], w.y[idx], rng)  # rows in another order: every sampled row is wrong
    with pytest.raises(BatchMismatch, match="samples"):
        check_batch(w, idx, w.x[idx[:3]], w.y[idx[:3]], rng)


def test_check_batch_on_ragged_clips_checks_every_length_and_sampled_values() -> None:
    clips = [np.arange(n, dtype=np.float32) for n in (3, 5, 2, 7)]
    w = Workload("speech", clips, np.array([0, 1, 0, 1]))
    rng = np.random.default_rng(0)
    check_batch(w, [3, 0], [clips[3], clips[0]], [1, 0], rng)
    with pytest.raises(BatchMismatch, match="shape"):
        check_batch(w, [3, 0], [clips[3][:-1], clips[0]], [1, 0], rng)  # one clip cut short
    with pytest.raises(BatchMismatch, match="differs"):
        check_batch(w, [1], [clips[1].astype(np.float64)], [1], rng)


def test_interleaved_runs_every_item_once_per_repetition_in_a_seeded_order() -> None:
    items = ["a", "b", "c", "d", "e"]
    first = list(interleaved(items, 3, seed=7))
    assert first == list(interleaved(items, 3, seed=7))
    assert first != list(interleaved(items, 3, seed=8))
    for rep in range(3):
        assert sorted(item for r, item in first if r == rep) == items
    orders = [[item for r, item in first if r == rep] for rep in range(3)]
    assert len({tuple(o) for o in orders}) > 1  # not the same order every repetition


class _Missing(Reader):
    name = "missing-peer"
    module = "no_such_package_for_h5ml_tests"


class _Wrong(MemmapReader):
    """A memmap reader that returns the right shapes with one wrong byte in every row."""

    name = "wrong-memmap"

    def read(self, indices: np.ndarray) -> tuple[object, object]:
        x, y = super().read(indices)
        bad = np.array(x)
        bad[:, 0, 0, 0] ^= 1
        return bad, y


def test_run_raw_measures_real_readers_and_reports_missing_and_wrong_ones(tmp_path: Path) -> None:
    workload = image_tiles(130, seed=3)
    cells = run_raw(
        [MemmapReader, H5MLReader, H5pyReader, _Missing, _Wrong], workload, "gzip", tmp_path / "w", 1, 0.5, 0
    )
    status = {(c["reader"], c["order"]): c["status"] for c in cells}
    assert status[("missing-peer", "full")] == "not installed"
    assert status[("memmap", "full")].startswith("n/a")  # memmap stores no gzip
    assert status[("wrong-memmap", "full")].startswith("n/a")
    for order in ("sequential", "chunk", "full"):
        for name in ("h5ml", "h5py"):
            cell = next(c for c in cells if (c["reader"], c["order"]) == (name, order))
            assert cell["status"] == "ok" and cell["samples_per_s"] > 0
            assert cell["size_bytes"] < workload.nbytes  # photographs compress
    assert not (tmp_path / "w").exists()  # the stored copies are deleted
    plain = run_raw([_Wrong], workload, None, tmp_path / "u", 1, 0.5, 0)
    assert {c["status"].split(":")[0] for c in plain} == {"wrong data"}
