"""Shard-aware sampling of a sharded split (SPEC §12.5; h5ml.sampling.shard_orders; issue 16).

``"chunk"`` shuffle mixes ``shards_in_flight`` shards at a time, and a real
reader with that many shards open opens each shard once per epoch; DDP ranks
get contiguous pieces with the batch counts and padding of the file sampler;
resume states bind to the index fingerprint.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pytest

import h5ml
from _shards import columns, write_sharded
from h5ml.reader import ShardedDataset
from h5ml.reader.source import SplitSource
from h5ml.sampling import Sampler

SIZES = (50, 1, 37, 64, 13, 40, 0, 28)  # uneven, a one-sample shard and an empty one
N = sum(SIZES)
STARTS = np.cumsum((0, *SIZES))


def _shard_of(samples: np.ndarray) -> np.ndarray:
    return np.searchsorted(STARTS, samples, side="right") - 1


def _sampler(**settings: object) -> Sampler:
    options: dict[str, object] = {"shuffle": "chunk", "seed": 3, "chunk_rows": 8, "shard_sizes": SIZES, **settings}
    return Sampler(N, int(options.pop("batch_size", 16)), **options)  # type: ignore[arg-type]


@pytest.mark.parametrize("in_flight", [1, 2, 3])
def test_chunk_order_mixes_at_most_shards_in_flight_shards(in_flight: int) -> None:
    """Every sample once per epoch; at every position of the order at most shards_in_flight shards are under way."""
    sampler = _sampler(shards_in_flight=in_flight)
    orders = [sampler.epoch_order(epoch) for epoch in range(3)]
    for order in orders:
        assert sorted(order.tolist()) == list(range(N))
        shards = _shard_of(order)
        first = {s: int(np.flatnonzero(shards == s)[0]) for s in set(shards.tolist())}
        last = {s: int(np.flatnonzero(shards == s)[-1]) for s in first}
        under_way = [sum(first[s] <= p <= last[s] for s in first) for p in range(N)]
        assert max(under_way) <= in_flight
        if in_flight == 1:  # shard after shard, each shuffled inside
            assert all(np.all(np.diff(shards[first[s] : last[s] + 1]) == 0) for s in first)
    assert not np.array_equal(orders[0], orders[1])  # set_epoch reshuffles
    assert np.array_equal(orders[1], _sampler(shards_in_flight=in_flight).epoch_order(1))  # from seed and epoch alone
    assert not np.array_equal(orders[1], _sampler(shards_in_flight=in_flight, seed=4).epoch_order(1))


def test_full_is_a_global_permutation_and_none_is_listed_order() -> None:
    full = _sampler(shuffle="full").epoch_order(0)
    assert sorted(full.tolist()) == list(range(N)) and len(set(_shard_of(full[:40]).tolist())) > 3
    assert _sampler(shuffle="none").epoch_order(0).tolist() == list(range(N))
    with pytest.raises(ValueError, match=f"shard_sizes add up to {N} samples, not num_samples={N + 1}"):
        Sampler(N + 1, 4, shard_sizes=SIZES)


@pytest.mark.parametrize("world_size", [2, 3])
@pytest.mark.parametrize("drop_last", [False, True])
@pytest.mark.parametrize("mode", ["none", "chunk", "full"])
def test_ranks_get_contiguous_pieces_with_equal_batch_counts(world_size: int, drop_last: bool, mode: str) -> None:
    """DDP: the batch counts and sizes of the file sampler; shares cover the split, overlapping only in padding."""
    batch_size = 16
    samplers = [
        _sampler(shuffle=mode, rank=r, world_size=world_size, drop_last=drop_last, batch_size=batch_size)
        for r in range(world_size)
    ]
    plain = Sampler(N, batch_size, world_size=world_size, drop_last=drop_last)  # a file's sampler: the same counts
    order = samplers[0].epoch_order(1)
    shares = [[b.tolist() for b in s.epoch_batches(1)] for s in samplers]
    assert [len(s) for s in shares] == [plain.num_batches] * world_size
    assert [[len(b) for b in s] for s in shares] == [[len(b) for b in plain.batches(1)]] * world_size
    taken = [i for share in shares for batch in share for i in batch]
    if drop_last:
        kept = plain.num_batches * batch_size * world_size
        assert taken == order[:kept].tolist()  # the last N mod S of the order left out, nothing repeated
    else:
        padding = plain.padding
        assert 0 < padding < world_size and samplers[0].padding == padding
        assert taken == order.tolist() + order[:padding].tolist()  # padded by the first samples of the order
        assert sorted(Counter(taken).values()) == [1] * (N - padding) + [2] * padding
    for share in shares:  # each rank: one contiguous piece of the order, so few shards are shared with neighbours
        flat = [i for batch in share for i in batch]
        start = taken.index(flat[0])
        assert taken[start : start + len(flat)] == flat


def test_one_reader_opens_each_shard_once_per_epoch(tmp_path: Path) -> None:
    """With max_open_shards == shards_in_flight, reading an epoch's batches in turn opens each shard once."""
    index = write_sharded(tmp_path / "ds", columns(N), SIZES)
    for in_flight in (1, 2, 3):
        with h5ml.open(index, max_open_shards=in_flight) as ds:
            assert isinstance(ds, ShardedDataset)
            split = ds["train"]
            shards = split.shard_sizes
            sampler = Sampler(
                N, 16, shuffle="chunk", seed=1, chunk_rows=8, shard_sizes=shards, shards_in_flight=in_flight
            )
            seen: list[int] = []
            for batch in sampler.epoch_batches(0):
                x = split.read(batch, ["x"])["x"]
                seen += x[:, 0].astype(int).tolist()
                assert len(ds.open_shards) <= in_flight
            assert sorted(seen) == list(range(N))
            assert ds.shard_opens == sum(1 for size in SIZES if size)  # no shard opened twice


def test_split_source_passes_the_shards_and_binds_states_to_the_index(tmp_path: Path) -> None:
    """The adapters' path: SplitSource.sampler gets the shard sizes and chunk rows; states bind to the index."""
    cols = columns(N)
    index = write_sharded(tmp_path / "ds", cols, SIZES)
    other = write_sharded(tmp_path / "other", cols, (N,))  # the same samples in one shard: another index
    source = SplitSource(index, "train", ["x"])
    sampler = source.sampler(16, shuffle="chunk", seed=2, world_size=2, rank=1)
    assert sampler.shard_sizes == SIZES and sampler.shards_in_flight == 2 and sampler.chunk_rows == source.chunk_rows()
    assert source.fingerprint == h5ml.open(index).fingerprint and source.identity.endswith(" /train")
    state = sampler.state_dict(0, 3)
    assert state["shard_count"] == len(SIZES) and state["shards_in_flight"] == 2
    again = SplitSource(index, "train", ["x"]).sampler(16, shuffle="chunk", seed=0, world_size=2, rank=1)
    rest = again.remaining_batches(state)
    assert [b.tolist() for b in rest] == [b.tolist() for b in sampler.batches(0)[3:]]
    assert again.seed == 2
    elsewhere = SplitSource(other, "train", ["x"]).sampler(16, shuffle="chunk", world_size=2, rank=1)
    with pytest.raises(ValueError, match="the resume state was taken on other data"):
        elsewhere.load_state_dict(state)
    wider = SplitSource(index, "train", ["x"]).sampler(16, shuffle="chunk", world_size=2, rank=1, shards_in_flight=3)
    with pytest.raises(ValueError, match="shards_in_flight: state 2, sampler 3"):
        wider.load_state_dict(state)
    values = source.read_arrays(rest[0])["x"]
    assert values[:, 0].astype(int).tolist() == rest[0].tolist()
