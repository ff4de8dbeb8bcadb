"""Tests of h5ml.sampling: epoch orders, shuffle modes, shards, equal batch counts, resume, length buckets."""

from __future__ import annotations

import itertools
import json
import pickle
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import h5ml
from h5ml.sampling import SHUFFLE_MODES, Sampler, ShuffleMode, bucket_by_length

FP = "sha256:" + "ab" * 32
OTHER_FP = "sha256:" + "cd" * 32


def _ranks(n: int, b: int, mode: ShuffleMode, world: int, drop_last: bool = False, **kw: int) -> list[Sampler]:
    return [
        Sampler(n, b, shuffle=mode, chunk_rows=kw.get("chunk_rows", 4), window_chunks=kw.get("window_chunks", 3),
                seed=kw.get("seed", 7), rank=r, world_size=world, drop_last=drop_last, fingerprint=FP)
        for r in range(world)
    ]  # fmt: skip


def _all_samples(samplers: list[Sampler], epoch: int) -> list[int]:
    return [int(i) for s in samplers for b in s.batches(epoch) for i in b]


@given(
    n=st.integers(0, 200),
    b=st.integers(1, 17),
    world=st.integers(1, 4),
    mode=st.sampled_from(SHUFFLE_MODES),
    chunk_rows=st.integers(1, 20),
    window_chunks=st.integers(1, 5),
    epoch=st.integers(0, 3),
)
def test_every_sample_once_per_epoch_across_ranks(
    n: int, b: int, world: int, mode: ShuffleMode, chunk_rows: int, window_chunks: int, epoch: int
) -> None:
    """Every mode covers each sample exactly once per epoch; padding repeats < world_size first samples."""
    samplers = _ranks(n, b, mode, world, chunk_rows=chunk_rows, window_chunks=window_chunks)
    seen = Counter(_all_samples(samplers, epoch))
    assert set(seen) == set(range(n))
    extra = sum(seen.values()) - n
    assert extra == samplers[0].padding
    assert 0 <= extra < world
    # The repeated samples are the first ones of the epoch order.
    order = samplers[0].epoch_order(epoch)
    repeated = Counter({k: v - 1 for k, v in seen.items() if v > 1})
    assert repeated == Counter(int(i) for i in np.resize(order, extra))


@given(
    n=st.integers(0, 200),
    b=st.integers(1, 17),
    world=st.integers(1, 4),
    mode=st.sampled_from(SHUFFLE_MODES),
    drop_last=st.booleans(),
)
def test_equal_batch_counts_and_disjoint_shares(n: int, b: int, world: int, mode: ShuffleMode, drop_last: bool) -> None:
    """All ranks get num_batches batches; full batches everywhere except the last (equal on every rank)."""
    samplers = _ranks(n, b, mode, world, drop_last)
    per_rank = [s.batches(1) for s in samplers]
    expected = n // (b * world) if drop_last else -(-n // (b * world))
    assert [len(x) for x in per_rank] == [expected] * world
    assert all(s.num_batches == len(s) == expected for s in samplers)
    for k in range(expected):
        sizes = {len(x[k]) for x in per_rank}
        assert len(sizes) == 1
        if k < expected - 1 or drop_last:
            assert sizes == {b}
    if drop_last:
        flat = _all_samples(samplers, 1)
        assert len(flat) == len(set(flat)) == expected * b * world


@pytest.mark.parametrize("world", [1, 2, 3, 4])
@pytest.mark.parametrize("mode", SHUFFLE_MODES)
@pytest.mark.parametrize(("n", "b"), [(103, 8), (5, 4), (64, 16), (1, 3)])
def test_cover_cases(world: int, mode: ShuffleMode, n: int, b: int) -> None:
    """Sample counts not divisible by batch_size*world_size: union over ranks is the whole split."""
    samplers = _ranks(n, b, mode, world)
    flat = _all_samples(samplers, 2)
    assert set(flat) == set(range(n))
    assert len(flat) - n == samplers[0].padding


def test_padding_worked_example() -> None:
    """N=10, B=2, 4 ranks: one full step of 8, then 2 left padded to 4 with the first two samples."""
    samplers = _ranks(10, 2, "none", 4)
    assert samplers[0].batches(0)[0].tolist() == [0, 1]
    assert [s.batches(0)[1].tolist() for s in samplers] == [[8], [9], [0], [1]]
    assert samplers[0].padding == 2


def test_none_is_file_order() -> None:
    """'none' hands out 0..N-1 in file order, independent of seed and epoch."""
    s = Sampler(10, 3, shuffle="none", seed=5)
    assert [b.tolist() for b in s.batches(4)] == [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]]
    assert all(b.dtype == np.int64 for b in s.batches(0))


@pytest.mark.parametrize("mode", ["chunk", "full"])
def test_orders_change_across_epochs_and_repeat_for_same_seed(mode: ShuffleMode) -> None:
    """Shuffled modes: deterministic given (seed, epoch), different across epochs and seeds."""
    a = Sampler(500, 10, shuffle=mode, seed=3, chunk_rows=16, window_chunks=4)
    b = Sampler(500, 10, shuffle=mode, seed=3, chunk_rows=16, window_chunks=4)
    c = Sampler(500, 10, shuffle=mode, seed=4, chunk_rows=16, window_chunks=4)
    e0, e1 = a.epoch_order(0), a.epoch_order(1)
    assert sorted(e0.tolist()) == list(range(500))
    assert not np.array_equal(e0, e1)
    assert np.array_equal(e1, b.epoch_order(1))
    assert not np.array_equal(e1, c.epoch_order(1))
    assert all(np.array_equal(x, y) for x, y in zip(a.batches(2), b.batches(2), strict=True))


def test_full_mode_is_the_seeded_permutation() -> None:
    """'full' is default_rng(SeedSequence((seed, epoch))).permutation(N)."""
    s = Sampler(50, 7, shuffle="full", seed=11)
    expected = np.random.default_rng(np.random.SeedSequence((11, 2))).permutation(50)
    assert np.array_equal(s.epoch_order(2), expected)
    assert np.array_equal(np.concatenate(s.batches(2)), expected)


@given(
    n=st.integers(1, 300),
    chunk_rows=st.integers(1, 25),
    window_chunks=st.integers(1, 6),
    b=st.integers(1, 30),
    world=st.integers(1, 3),
    seed=st.integers(0, 2**32),
)
def test_chunk_mode_locality(n: int, chunk_rows: int, window_chunks: int, b: int, world: int, seed: int) -> None:
    """'chunk': the order is a sequence of windows of window_chunks whole chunks; batches are contiguous pieces of it.

    Hence a batch of B samples reads at most the chunks of the windows it spans.
    """
    samplers = _ranks(n, b, "chunk", world, chunk_rows=chunk_rows, window_chunks=window_chunks, seed=seed)
    order = samplers[0].epoch_order(1).tolist()
    chunk_of = [i // chunk_rows for i in order]
    # Split the order at window boundaries: each window is the full sample set of its chunks,
    # holds window_chunks chunks (the last window may hold fewer), and no chunk is in two windows.
    windows: list[set[int]] = []
    pos = 0
    used: set[int] = set()
    while pos < n:
        chunks: set[int] = set()
        samples: list[int] = []
        while pos < n and (len(chunks) < window_chunks or chunk_of[pos] in chunks):
            chunks.add(chunk_of[pos])
            samples.append(order[pos])
            pos += 1
        expected = {i for c in chunks for i in range(c * chunk_rows, min((c + 1) * chunk_rows, n))}
        assert set(samples) == expected
        assert not (chunks & used)
        used |= chunks
        windows.append(chunks)
    assert all(len(w) == window_chunks for w in windows[:-1])
    # Every batch of every rank is a contiguous piece of the (padded) epoch order.
    padded = order + np.resize(np.array(order), samplers[0].padding).tolist()
    step = b * world
    for s in samplers:
        for k, batch in enumerate(s.batches(1)):
            start = k * step + s.rank * len(batch) if k == s.num_batches - 1 else k * step + s.rank * b
            assert batch.tolist() == padded[start : start + len(batch)]


def test_chunk_mode_batch_reads_few_chunks() -> None:
    """'chunk' with B equal to a window's samples: each batch touches at most 2*window_chunks chunks; 'full' more."""
    n, rows, wc = 4096, 64, 2
    chunk = Sampler(n, rows * wc, shuffle="chunk", chunk_rows=rows, window_chunks=wc, seed=1)
    full = Sampler(n, rows * wc, shuffle="full", seed=1)
    touched = [len(np.unique(batch // rows)) for batch in chunk.batches(0)]
    assert max(touched) <= 2 * wc
    assert min(len(np.unique(batch // rows)) for batch in full.batches(0)) > 2 * wc


@given(
    n=st.integers(0, 150),
    b=st.integers(1, 12),
    world=st.integers(1, 4),
    mode=st.sampled_from(SHUFFLE_MODES),
    epoch=st.integers(0, 5),
    data=st.data(),
)
def test_resume_yields_exactly_the_remaining_batches(
    n: int, b: int, world: int, mode: ShuffleMode, epoch: int, data: st.DataObject
) -> None:
    """Stop after k batches, save, restore in a fresh sampler (any rank): handed + remaining == the whole epoch."""
    samplers = _ranks(n, b, mode, world)
    k = data.draw(st.integers(0, samplers[0].num_batches))
    state = json.loads(json.dumps(samplers[0].state_dict(epoch, k)))  # survives a round trip through JSON
    for r, s in enumerate(samplers):
        full = s.batches(epoch)
        fresh = _ranks(n, b, mode, world, seed=0)[r]  # seed comes from the state
        rest = fresh.remaining_batches(state)
        assert len(rest) == len(full) - k
        assert all(np.array_equal(x, y) for x, y in zip(full[:k] + rest, full, strict=True))
        assert fresh.seed == 7


def test_state_dict_contents_and_pickle() -> None:
    """The state holds seed, epoch, batches handed out, the order's settings and the fingerprint."""
    s = Sampler(100, 8, shuffle="chunk", chunk_rows=16, seed=9, world_size=2, rank=1, fingerprint=FP)
    state = s.state_dict(3, 4)
    assert state["seed"] == 9 and state["epoch"] == 3 and state["batches_done"] == 4
    assert state["shuffle"] == "chunk" and state["batch_size"] == 8 and state["world_size"] == 2
    assert state["fingerprint"] == FP and "rank" not in state
    point = Sampler(100, 8, shuffle="chunk", chunk_rows=16, world_size=2, fingerprint=FP).load_state_dict(
        pickle.loads(pickle.dumps(state))
    )
    assert (point.epoch, point.batches_done) == (3, 4)


@pytest.mark.parametrize(
    ("change", "needle"),
    [
        ({"fingerprint": OTHER_FP}, "another file or split"),
        ({"fingerprint": None}, "another file or split"),
        ({"batch_size": 4}, "batch_size"),
        ({"shuffle": "full"}, "shuffle"),
        ({"world_size": 4}, "world_size"),
        ({"num_samples": 99}, "num_samples"),
        ({"drop_last": True}, "drop_last"),
        ({"window_chunks": 2}, "window_chunks"),
    ],
)
def test_mismatched_state_refused(change: dict[str, object], needle: str) -> None:
    """A state from another file or with other order-deciding settings is refused with a clear message."""
    settings: dict[str, object] = {
        "num_samples": 100,
        "batch_size": 8,
        "shuffle": "chunk",
        "chunk_rows": 16,
        "window_chunks": 3,
        "world_size": 2,
        "drop_last": False,
        "fingerprint": FP,
    }
    state = Sampler(**settings).state_dict(1, 2)  # type: ignore[arg-type]
    other = Sampler(**{**settings, **change})  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=needle):
        other.remaining_batches(state)


def test_bad_states_and_arguments_refused() -> None:
    """Out-of-range batches_done, missing keys, unknown modes and bad ranks raise ValueError."""
    s = Sampler(10, 3, fingerprint=FP)
    with pytest.raises(ValueError, match="exceeds"):
        s.state_dict(0, 5)
    with pytest.raises(ValueError, match="missing"):
        s.load_state_dict({"seed": 0})
    bad = {**s.state_dict(0, 1), "batches_done": 9}
    with pytest.raises(ValueError, match="exceeds"):
        s.load_state_dict(bad)
    with pytest.raises(ValueError, match="version"):
        s.load_state_dict({**s.state_dict(0, 1), "version": 99})
    with pytest.raises(ValueError, match="shuffle"):
        Sampler(10, 3, shuffle="random")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="chunk_rows"):
        Sampler(10, 3, shuffle="chunk")
    with pytest.raises(ValueError, match="rank"):
        Sampler(10, 3, rank=2, world_size=2)
    with pytest.raises(ValueError, match="batch_size"):
        Sampler(10, 0)
    with pytest.raises(ValueError, match="epoch"):
        s.batches(-1)
    with pytest.raises(TypeError, match="batch_size"):
        Sampler(10, 2.5)  # type: ignore[arg-type]


@given(
    lengths=st.lists(st.integers(0, 1000), max_size=200),
    b=st.integers(1, 16),
    pool=st.integers(1, 8),
    epoch=st.integers(0, 3),
)
def test_bucket_by_length_covers_each_sample_once(lengths: list[int], b: int, pool: int, epoch: int) -> None:
    """Length buckets: every sample exactly once, batches at most batch_size, deterministic per (seed, epoch)."""
    out = bucket_by_length(np.array(lengths, dtype=np.int64), b, 5, epoch, pool_batches=pool)
    flat = sorted(int(i) for batch in out for i in batch)
    assert flat == list(range(len(lengths)))
    assert all(1 <= len(batch) <= b for batch in out)
    again = bucket_by_length(lengths, b, 5, epoch, pool_batches=pool)
    assert all(np.array_equal(x, y) for x, y in zip(out, again, strict=True))


@given(lengths=st.lists(st.integers(0, 1000), min_size=1, max_size=200), b=st.integers(1, 16))
def test_bucket_by_length_one_pool_gives_non_overlapping_ranges(lengths: list[int], b: int) -> None:
    """With one pool for the whole epoch, batches hold consecutive lengths: their [min, max] ranges do not overlap."""
    sizes = np.array(lengths, dtype=np.int64)
    out = bucket_by_length(sizes, b, 1, 0, pool_batches=len(lengths))
    ranges = sorted((int(sizes[x].min()), int(sizes[x].max())) for x in out)
    assert all(hi <= lo_next for (_, hi), (lo_next, _) in itertools.pairwise(ranges))


def test_bucket_by_length_reduces_padding() -> None:
    """On audio-like lengths, buckets pad far less than random batches of the same size."""
    rng = np.random.default_rng(0)
    sizes = rng.integers(1_000, 100_000, size=2_000)
    bucketed = bucket_by_length(sizes, 16, 0, 0)
    random = np.array_split(rng.permutation(2_000), 125)

    def waste(batches: list[np.ndarray]) -> int:
        return int(sum(sizes[x].max() * len(x) - sizes[x].sum() for x in batches))

    assert waste(bucketed) * 5 < waste(random)
    assert bucket_by_length(sizes, 16, 0, 1)[0].tolist() != bucketed[0].tolist()


def test_bucket_by_length_rejects_2d() -> None:
    """Lengths must be one per sample."""
    with pytest.raises(ValueError, match="1-D"):
        bucket_by_length(np.zeros((2, 2)), 4, 0, 0)


# -- bucketing inside the sampler: shards, equal counts and resume keep working --------------------------------------


def _waste(sizes: np.ndarray, batches: list[np.ndarray]) -> int:
    """Padding cells: each batch padded to its longest sample."""
    return int(sum(sizes[x].max() * len(x) - sizes[x].sum() for x in batches if len(x)))


@given(
    sizes=st.lists(st.integers(0, 500), max_size=150),
    b=st.integers(1, 9),
    world=st.integers(1, 3),
    mode=st.sampled_from(SHUFFLE_MODES),
    pool=st.integers(1, 6),
    drop_last=st.booleans(),
    epoch=st.integers(0, 2),
)
def test_bucketed_sampler_keeps_every_sampler_guarantee(
    sizes: list[int], b: int, world: int, mode: ShuffleMode, pool: int, drop_last: bool, epoch: int
) -> None:
    """With lengths: each sample once (plus the documented padding), equal batch counts, deterministic order."""
    n = len(sizes)
    samplers = [
        Sampler(n, b, shuffle=mode, chunk_rows=4, seed=3, rank=r, world_size=world, drop_last=drop_last,
                lengths=sizes, pool_batches=pool)
        for r in range(world)
    ]  # fmt: skip
    plain = Sampler(n, b, shuffle=mode, chunk_rows=4, seed=3, world_size=world, drop_last=drop_last)
    order = samplers[0].epoch_order(epoch)
    assert sorted(order.tolist()) == list(range(n))
    counts = {len(s.batches(epoch)) for s in samplers}
    assert counts == {plain.num_batches}
    seen = Counter(_all_samples(samplers, epoch))
    if drop_last:
        assert sum(seen.values()) == plain.num_batches * b * world and max(seen.values(), default=1) == 1
    else:
        assert set(seen) == set(range(n)) and sum(seen.values()) - n == plain.padding
    again = Sampler(n, b, shuffle=mode, chunk_rows=4, seed=3, world_size=world, drop_last=drop_last, lengths=sizes,
                    pool_batches=pool)  # fmt: skip
    assert np.array_equal(again.epoch_order(epoch), order)


def test_bucketed_sampler_pads_less_on_every_rank() -> None:
    """Audio-like lengths over 2 ranks: each rank's batches pad far less than without lengths."""
    sizes = np.random.default_rng(1).integers(1_000, 100_000, size=1_000)
    for rank in (0, 1):
        bucketed = Sampler(1_000, 16, shuffle="full", seed=0, rank=rank, world_size=2, lengths=sizes).batches(0)
        plain = Sampler(1_000, 16, shuffle="full", seed=0, rank=rank, world_size=2).batches(0)
        assert _waste(sizes, bucketed) * 5 < _waste(sizes, plain)
        # Rank 0 and rank 1 take the two halves of one sorted step: their batches hold similar lengths too.
    steps = Sampler(1_000, 16, shuffle="full", seed=0, world_size=2, lengths=sizes).epoch_order(0)[:32]
    assert sizes[steps[:16]].max() <= sizes[steps[16:]].min()


def test_bucketed_sampler_orders_change_with_epoch_and_resume() -> None:
    """Shuffled buckets differ across epochs; a state records pool_batches and resumes the same batches."""
    sizes = np.arange(200) % 37
    s = Sampler(200, 8, shuffle="full", seed=4, fingerprint=FP, lengths=sizes, pool_batches=4)
    assert not np.array_equal(s.epoch_order(0), s.epoch_order(1))
    full = s.batches(2)
    state = s.state_dict(2, 5)
    assert state["pool_batches"] == 4
    fresh = Sampler(200, 8, shuffle="full", fingerprint=FP, lengths=sizes, pool_batches=4)
    assert all(np.array_equal(x, y) for x, y in zip(full[:5] + fresh.remaining_batches(state), full, strict=True))
    with pytest.raises(ValueError, match="pool_batches"):
        Sampler(200, 8, shuffle="full", fingerprint=FP).remaining_batches(state)  # taken with bucketing
    old = {k: v for k, v in Sampler(200, 8, fingerprint=FP).state_dict(0, 1).items() if k != "pool_batches"}
    assert Sampler(200, 8, fingerprint=FP).load_state_dict(old).batches_done == 1  # states without the key still load


def test_bucketed_sampler_rejects_wrong_lengths() -> None:
    """Lengths must hold one integer per sample."""
    with pytest.raises(ValueError, match=r"shape \(10,\)"):
        Sampler(10, 2, lengths=np.arange(9))
    with pytest.raises(ValueError, match="integer"):
        Sampler(3, 2, lengths=[0.5, 1.0, 2.0])


# -- seeds and the shuffle on write (h5ml.sampling.seeds, §7.6) ------------------------------------------------


def test_drawn_seeds_are_63_bit_everywhere(tmp_path: Path) -> None:
    """§5.3, §7.6: a seed the user does not give is a fresh non-negative int64 (63 bits), for h5ml.write and the
    converters alike; the stored order is numpy.random.default_rng(shuffle_seed).permutation(n)."""
    from h5ml.ingest import convert_arrays
    from h5ml.sampling.seeds import SEED_BITS, draw_seed, write_order

    seeds = {draw_seed() for _ in range(64)}
    assert len(seeds) == 64 and all(0 <= s < 2**SEED_BITS for s in seeds) and SEED_BITS == 63
    assert max(seeds) >= 2**40  # not 31 bits wide
    x = np.arange(40, dtype=np.int64)
    written = h5ml.write(tmp_path / "w.h5", {"train": {"x": x}}, shuffle=True)
    convert_arrays({"train": {"x": x}}, tmp_path / "c.h5", shuffle=True)
    for path in (written, tmp_path / "c.h5"):
        with h5ml.open(path) as ds:
            seed = ds["train"].shuffle_seed
            assert seed is not None and 0 <= seed < 2**63
            assert ds["train"]["x"][:].tolist() == x[write_order(40, seed)].tolist()
    assert write_order(5, 3).tolist() == np.random.default_rng(3).permutation(5).tolist()
    assert write_order(0, 1).dtype == np.int64 and write_order(0, 1).shape == (0,)


# -- resume states hold what decides the order; the epoch cursor (h5ml.sampling.resume) ----------------------------


@pytest.mark.parametrize("mode", ["none", "full"])
def test_state_of_none_and_full_ignores_the_chunking(mode: ShuffleMode) -> None:
    """ "none" and "full" orders do not depend on chunk_rows or window_chunks: their states record None there, equal
    settings give equal states, and a state (also one of the earlier layout, which recorded them) resumes a sampler
    of any chunking with exactly the remaining batches."""
    a = Sampler(100, 8, shuffle=mode, seed=5, chunk_rows=16, window_chunks=3, world_size=2, fingerprint=FP)
    b = Sampler(100, 8, shuffle=mode, seed=0, chunk_rows=None, window_chunks=8, world_size=2, rank=1, fingerprint=FP)
    state = a.state_dict(2, 4)
    assert (state["chunk_rows"], state["window_chunks"]) == (None, None)
    assert Sampler(100, 8, shuffle=mode, seed=5, world_size=2, fingerprint=FP).state_dict(2, 4) == state
    rest = b.remaining_batches(state)
    whole = b.batches(2)
    assert b.seed == 5 and len(rest) == len(whole) - 4
    assert all(np.array_equal(x, y) for x, y in zip(rest, whole[4:], strict=True))
    earlier = {**state, "chunk_rows": 1024, "window_chunks": 8}  # what a state of "full" recorded before
    assert b.load_state_dict(earlier).batches_done == 4


def test_state_of_chunk_mode_checks_the_chunking() -> None:
    """ "chunk" orders depend on chunk_rows and window_chunks: a state records them and is refused with other ones."""
    state = Sampler(100, 8, shuffle="chunk", chunk_rows=16, window_chunks=3, fingerprint=FP).state_dict(1, 2)
    assert (state["chunk_rows"], state["window_chunks"]) == (16, 3)
    with pytest.raises(ValueError, match="chunk_rows: state 16, sampler 32"):
        Sampler(100, 8, shuffle="chunk", chunk_rows=32, window_chunks=3, fingerprint=FP).load_state_dict(state)


def test_epoch_cursor_counts_skips_and_advances() -> None:
    """EpochCursor: the batches left after a resume, the batches handed out, the next epoch only after a whole pass."""
    from h5ml.sampling import EpochCursor

    sampler = Sampler(37, 4, shuffle="full", seed=3, fingerprint=FP)
    cursor = EpochCursor(sampler)
    assert (cursor.epoch, cursor.resume_from, len(cursor), cursor.batches_done) == (0, 0, 10, 0)
    cursor.set_epoch(2)
    whole = sampler.batches(2)
    for index in (0, 1, 2):
        assert np.array_equal(cursor.batch(index), whole[index])
        cursor.hand_out(index)
    state = cursor.state_dict()
    assert (state["epoch"], state["batches_done"]) == (2, 3)
    assert not cursor.advance() and cursor.epoch == 2  # 3 of 10 batches: not a whole pass

    fresh = pickle.loads(pickle.dumps(EpochCursor(Sampler(37, 4, shuffle="full", seed=0, fingerprint=FP))))
    fresh.load_state_dict(json.loads(json.dumps(state)))
    assert (fresh.epoch, fresh.resume_from, fresh.num_batches, fresh.sampler.seed) == (2, 3, 7, 3)
    assert all(np.array_equal(x, y) for x, y in zip(fresh.batches(), whole[3:], strict=True))
    with pytest.raises(IndexError, match="outside the 7 batches"):
        fresh.batch(7)
    handed = list(fresh.hand_out_each(fresh.batches()))
    assert len(handed) == 7 and fresh.batches_done == 10 and fresh.state_dict()["batches_done"] == 10
    assert fresh.advance() and (fresh.epoch, fresh.resume_from, len(fresh), fresh.batches_done) == (3, 0, 10, 0)
    with pytest.raises(ValueError, match="epoch must be >= 0"):
        fresh.set_epoch(-1)


def test_a_state_of_another_seed_resumes_its_own_order() -> None:
    """Resume: loading a state taken with another seed, after this cursor already built the batches of that epoch
    with its own seed, gives exactly the rest of the saved run's epoch (the batches are not reused)."""
    from h5ml.sampling import EpochCursor

    saved = EpochCursor(Sampler(200, 8, shuffle="full", seed=9))
    expected = [b.tolist() for b in saved.batches()[3:]]
    state = saved.state_dict(batches_done=3)
    cursor = EpochCursor(Sampler(200, 8, shuffle="full", seed=0))
    assert cursor.batch(0).tolist() != saved.batch(0).tolist()  # this epoch's order with seed 0 is built
    cursor.load_state_dict(state)
    assert [b.tolist() for b in cursor.batches()] == expected
    assert [cursor.batch(i).tolist() for i in range(len(cursor))] == expected
