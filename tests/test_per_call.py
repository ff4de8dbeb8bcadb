"""The adapters' per-call path without repeated work: Split.__iter__ in blocks, Split.read's selections, len(feature).

Each test reads real files and compares with the per-sample reads (``split[i]``), which stay the reference.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import h5ml
from _files import Bytes, Categorical, Dense, Ragged, String, write_file
from h5ml.reader.split import ITER_BLOCK_ROWS

N = 2 * ITER_BLOCK_ROWS + 13  # three blocks, the last one partial


@pytest.fixture(scope="module")
def every_encoding(tmp_path_factory: pytest.TempPathFactory) -> Path:
    rng = np.random.default_rng(5)
    path = tmp_path_factory.mktemp("per_call") / "all.h5"
    features = {
        "d": Dense(np.arange(N * 2, dtype=np.float32).reshape(N, 2), chunks=(16, 2)),
        "s0": Dense(np.arange(N, dtype=np.int16)),
        "b": Dense((np.arange(N) % 3 == 0).astype(np.uint8), logical_bool=True),
        "st": String([f"é{i}" for i in range(N)]),
        "sf": String([f"f{i}" for i in range(N)], kind="fixed"),
        "c": Categorical(rng.integers(-1, 3, size=N), ["x", "y", "z"]),
        "r": Ragged([np.arange(k % 7, dtype=np.int32) for k in range(N)], chunk_rows=32),
        "rs": Ragged([np.ones((1 + k % 3, 2)) * k for k in range(N)], with_shapes=True),
        "by": Bytes([bytes([k % 256]) * (k % 5) for k in range(N)]),
    }
    return write_file(path, {"train": features, "empty": {"x": Dense(np.zeros((0, 2), np.float32))}})


def _same(a: Any, b: Any) -> None:
    assert type(a) is type(b)
    if isinstance(a, np.ndarray) or isinstance(a, np.generic):
        assert a.dtype == b.dtype and np.shape(a) == np.shape(b) and np.array_equal(a, b)
    else:
        assert a == b


def test_iteration_reads_in_blocks_and_gives_the_per_sample_values(every_encoding: Path) -> None:
    """iter(split) yields split[i] for every i, every encoding (types, dtypes, shapes, values), in ceil(N/64)
    reads per feature instead of N."""
    with h5ml.open(every_encoding) as f:
        split = f["train"]
        stats = f.read_stats
        with stats.record() as events:
            got = list(split)
        assert len(got) == N
        reads_of_s0 = [e for e in events if e.hdf5_path == "/train/s0"]  # contiguous: one read per block
        assert len(reads_of_s0) == -(-N // ITER_BLOCK_ROWS)
        for i in (0, 1, ITER_BLOCK_ROWS - 1, ITER_BLOCK_ROWS, N - 1, *range(0, N, 17)):
            expected = split[i]
            assert list(got[i]) == list(expected)
            for name in expected:
                _same(got[i][name], expected[name])
        assert all(type(sample["c"]) is int for sample in got)  # categorical codes as read(i) gives them
        assert list(f["empty"]) == []


def test_read_keeps_each_selection_and_its_order(every_encoding: Path) -> None:
    """read(idx, features) gives the features asked, in their order, call after call; an unknown one still raises."""
    with h5ml.open(every_encoding) as f:
        split = f["train"]
        for _ in range(2):
            assert list(split.read([3, 1], ("r", "d"))) == ["r", "d"]
            assert list(split.read([3, 1], ["d", "r"])) == ["d", "r"]
            assert split.read(2, "s0") == {"s0": np.int16(2)}
            np.testing.assert_array_equal(split.read([5], ["d"])["d"], [[10.0, 11.0]])
        with pytest.raises(h5ml.FeatureNotFoundError, match="no feature 'nope'"):
            split.read([1], ("d", "nope"))
        with pytest.raises(h5ml.FeatureNotFoundError, match="no feature 'nope'"):
            split.read([1], ("d", "nope"))


def test_len_of_every_feature_is_its_number_of_samples(every_encoding: Path) -> None:
    """len(feature) == feature.num_samples == the split's num_samples, for every encoding, also in a forked child
    (which opens its own file)."""
    with h5ml.open(every_encoding) as f:
        split = f["train"]
        lengths = {name: len(feature) for name, feature in split.features.items()}
        assert lengths == {name: N for name in split.features}
        assert all(feature.num_samples == N for feature in split.features.values())
        assert len(f["empty"]["x"]) == 0
        pid = os.fork()
        if pid == 0:  # the child: its own file, the same lengths
            ok = all(len(feature) == N for feature in split.features.values())
            ok = ok and np.array_equal(split["d"][[N - 1]], [[2 * N - 2, 2 * N - 1]])
            os._exit(0 if ok else 1)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
