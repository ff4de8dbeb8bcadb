"""Lazy epoch orders (issue 14, item 4): the Feistel permutation of "full" above the array limit, batches one at a time.

``h5ml.sampling.permutation.FeistelPermutation`` must be a bijection of [0, N) for every N and seed (property test),
the same in every process; a Sampler above ``PERMUTATION_ARRAY_LIMIT`` uses it and builds no array of N entries;
resume states record which order they were taken with.
"""

from __future__ import annotations

import pickle
import tracemalloc

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from _figures import Figures
from h5ml.sampling import Sampler
from h5ml.sampling.epoch_batches import ArrayOrder, EpochBatches, IdentityOrder
from h5ml.sampling.permutation import PERMUTATION_ARRAY_LIMIT, FeistelPermutation
from h5ml.sampling.seeds import epoch_rng

FP = "sha256:" + "ab" * 32
BIG = PERMUTATION_ARRAY_LIMIT + 12_345  # above the limit: the "full" order is a Feistel permutation


@given(n=st.integers(0, 3000), seed=st.integers(0, 2**63 - 1), epoch=st.integers(0, 1000))
def test_feistel_is_a_permutation_of_every_size(n: int, seed: int, epoch: int) -> None:
    """Every index of [0, N) exactly once, for any N, seed and epoch; take() agrees with span()."""
    perm = FeistelPermutation(n, epoch_rng(seed, epoch))
    order = perm.span(0, n)
    assert order.dtype == np.int64 and order.shape == (n,)
    assert np.array_equal(np.sort(order), np.arange(n))
    if n:
        positions = np.array([n - 1, 0, n // 2, 0])
        assert perm.take(positions).tolist() == order[positions].tolist()


def test_feistel_is_deterministic_and_differs_by_seed_and_epoch() -> None:
    """The order depends only on (seed, epoch, N): equal for equal triples (also after pickling), else different."""
    n = 100_003
    a = FeistelPermutation(n, epoch_rng(7, 3)).span(0, n)
    again = pickle.loads(pickle.dumps(FeistelPermutation(n, epoch_rng(7, 3)))).span(0, n)
    assert np.array_equal(a, again)
    assert not np.array_equal(a, FeistelPermutation(n, epoch_rng(8, 3)).span(0, n))
    assert not np.array_equal(a, FeistelPermutation(n, epoch_rng(7, 4)).span(0, n))
    assert not np.array_equal(a, np.arange(n))
    # a uniform shuffle moves samples far: the mean displacement of a random permutation is about n / 3
    assert abs(float(np.mean(np.abs(a - np.arange(n)))) - n / 3) < n / 30
    with pytest.raises(IndexError, match=r"positions must lie in \[0, 100003\)"):
        FeistelPermutation(n, epoch_rng(7, 3)).take([n])


def test_full_order_above_the_limit_builds_no_array_of_n_entries() -> None:
    """Sampler(N > 2**26, shuffle="full"): batches are pieces of the Feistel order, computed in kilobytes of memory."""
    s = Sampler(BIG, 32, shuffle="full", seed=5, fingerprint=FP)
    assert s.full_order == "feistel"
    assert Sampler(PERMUTATION_ARRAY_LIMIT, 32, shuffle="full").full_order is None
    expected = FeistelPermutation(BIG, epoch_rng(5, 2))
    tracemalloc.start()
    try:
        batches = s.epoch_batches(2)
        first = [batches[k] for k in range(3)]
        last = batches[len(batches) - 1]
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20  # an array of N int64 would take 512 MiB
    assert [b.tolist() for b in first] == [expected.span(32 * k, 32 * (k + 1)).tolist() for k in range(3)]
    assert last.tolist() == expected.span(32 * (len(batches) - 1), BIG).tolist()
    assert len(batches) == -(-BIG // 32) and len(last) == BIG % 32


def test_padded_last_step_above_the_limit_repeats_the_first_samples() -> None:
    """With world_size 4, the last global step is padded with the first samples of the Feistel order, as below it."""
    ranks = [Sampler(BIG, 8, shuffle="full", seed=1, rank=r, world_size=4) for r in range(4)]
    order = FeistelPermutation(BIG, epoch_rng(1, 0))
    tails = [s.epoch_batches(0)[-1] for s in ranks]
    start = (ranks[0].num_batches - 1) * 32
    tail = BIG - start
    padded = np.concatenate([order.span(start, BIG), order.span(0, 4 * len(tails[0]) - tail)])
    assert np.array_equal(np.concatenate(tails), padded)
    assert ranks[0].padding == 4 * len(tails[0]) - tail


@pytest.mark.parametrize("mode", ["none", "chunk", "full"])
def test_epoch_batches_equal_the_batch_lists_below_the_limit(mode: str) -> None:
    """Below the limit, the lazy batches are the arrays of Sampler.batches, element for element (orders unchanged)."""
    for world, drop_last in ((1, False), (3, False), (3, True)):
        for rank in range(world):
            s = Sampler(1001, 16, shuffle=mode, seed=3, chunk_rows=64, rank=rank, world_size=world, drop_last=drop_last)  # type: ignore[arg-type]
            lazy = s.epoch_batches(4)
            eager = s.batches(4)
            assert len(lazy) == len(eager) == s.num_batches
            assert all(np.array_equal(x, y) for x, y in zip(lazy, eager, strict=True))
            order = s.epoch_order(4)
            assert np.array_equal(np.concatenate(eager[:-1]), np.concatenate(
                [order[k * 16 * world + rank * 16 : k * 16 * world + (rank + 1) * 16] for k in range(len(eager) - 1)]
            ))  # fmt: skip
    assert isinstance(Sampler(10, 3).order(0), IdentityOrder)
    assert isinstance(Sampler(10, 3, shuffle="full").order(0), ArrayOrder)


def test_epoch_batches_index_like_a_sequence() -> None:
    """Negative indices, slices and out-of-range indices behave as for a list of the batches."""
    s = Sampler(10, 3, shuffle="none")
    batches: EpochBatches = s.epoch_batches(0)
    assert batches[-1].tolist() == [9] and [b.tolist() for b in batches[1:3]] == [[3, 4, 5], [6, 7, 8]]
    with pytest.raises(IndexError, match="batch 4 is outside the 4 batches"):
        batches[4]


def test_resume_above_the_limit_is_exact_and_refuses_the_other_order() -> None:
    """A state of a Feistel order records full_order; a fresh sampler resumes exactly the rest; an array-order
    state (or one of the layout before full_order) is refused, naming the setting."""
    s = Sampler(BIG, 1 << 16, shuffle="full", seed=9, world_size=2, rank=1, fingerprint=FP)
    state = s.state_dict(3, 510)
    assert state["full_order"] == "feistel"
    fresh = Sampler(BIG, 1 << 16, shuffle="full", seed=0, world_size=2, rank=1, fingerprint=FP)
    rest = fresh.remaining_batches(state)
    whole = s.epoch_batches(3)
    assert fresh.seed == 9 and len(rest) == len(whole) - 510
    assert all(np.array_equal(rest[k], whole[510 + k]) for k in range(len(rest)))
    earlier = {key: value for key, value in state.items() if key != "full_order"}
    with pytest.raises(ValueError, match=r"full_order: state None, sampler 'feistel'"):
        fresh.load_state_dict(earlier)
    small = Sampler(1000, 10, shuffle="full", fingerprint=FP).state_dict(0, 3)
    assert small["full_order"] is None
    assert (
        Sampler(1000, 10, shuffle="full", fingerprint=FP)
        .load_state_dict({key: value for key, value in small.items() if key != "full_order"})
        .batches_done
        == 3
    )


def test_torch_batch_sampler_iterates_lazily_above_the_limit(figures: Figures) -> None:
    """H5MLBatchSampler over 2**28 samples: iter() builds no list of every batch; a few batches cost kilobytes."""
    torch_sampler = pytest.importorskip("h5ml_torch.sampler")
    sampler = torch_sampler.H5MLBatchSampler(1 << 28, 32, shuffle="full", seed=2)
    expected = FeistelPermutation(1 << 28, epoch_rng(2, 0))
    tracemalloc.start()
    try:
        it = iter(sampler)
        got = [next(it) for _ in range(3)]
        none = iter(torch_sampler.H5MLBatchSampler(1 << 28, 32))
        first = next(none)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20
    figures.record(
        "lying files",
        "H5MLBatchSampler, 2**28 samples, 3 batches (none and full): traced peak (KiB)",
        round(peak / 1024, 1),
    )
    assert got == [expected.span(32 * k, 32 * (k + 1)).tolist() for k in range(3)]
    assert first == list(range(32)) and len(sampler) == (1 << 28) // 32


def _whole_epoch_chunk_order(n: int, rows: int, windows: int, rng: np.random.Generator) -> np.ndarray:
    """The "chunk" order as computed before issue 14, all N samples at once (the oracle of the next test)."""
    num_chunks = -(-n // rows)
    starts = rng.permutation(num_chunks).astype(np.int64) * rows
    sizes = np.minimum(rows, n - starts)
    first = np.cumsum(sizes) - sizes
    by_chunk = np.repeat(starts - first, sizes) + np.arange(n, dtype=np.int64)
    window = np.repeat(np.arange(num_chunks, dtype=np.int64) // windows, sizes)
    return by_chunk[np.lexsort((rng.random(n), window))]


@pytest.mark.parametrize(("n", "rows", "windows"), [(2_200_001, 1000, 8), (1_500_000, 1, 3), (1_100_000, 4096, 300)])
def test_chunk_order_by_blocks_equals_the_whole_epoch_computation(n: int, rows: int, windows: int) -> None:
    """ "chunk" orders are computed by blocks of whole windows (about 2**20 samples): the same order, element for
    element, as the computation over all N samples at once, and the generator ends in the same state (so length
    buckets drawn after it are unchanged); memory is one array of N entries, the chunk permutation and the block's
    temporaries."""
    s = Sampler(n, 32, shuffle="chunk", chunk_rows=rows, window_chunks=windows, seed=4)
    old_rng, new_rng = epoch_rng(4, 1), epoch_rng(4, 1)
    expected = _whole_epoch_chunk_order(n, rows, windows, old_rng)
    tracemalloc.start()
    try:
        order = s._chunk_order(new_rng)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert np.array_equal(order, expected)
    assert old_rng.random() == new_rng.random()
    chunk_permutation = 8 * -(-n // rows)
    assert peak < 8 * n + chunk_permutation + (80 << 20)  # the whole-epoch computation takes about 6 arrays of N
