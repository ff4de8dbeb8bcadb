"""Tests of h5ml.reader.prefetch: batches read ahead by threads or processes, served by key (issue 4)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import h5ml
from h5ml.reader.prefetch import BatchFeed, Prefetcher, read_arrays
from h5ml.reader.source import SplitSource


def tag_pid(arrays: dict[str, Any]) -> dict[str, Any]:
    """A picklable transform: records the reading process."""
    return {**arrays, "pid": np.full(len(arrays["x"]), os.getpid())}


@pytest.fixture
def source(tmp_path: Path) -> SplitSource:
    path = tmp_path / "p.h5"
    h5ml.write(path, {"train": {"x": np.arange(40, dtype=np.int64), "clip": [np.arange(i % 5) for i in range(40)]}})
    return SplitSource(path, "train")


@pytest.mark.parametrize("processes", [False, True], ids=["threads", "processes"])
def test_served_by_key_in_any_order(source: SplitSource, processes: bool) -> None:
    """Batches asked out of order, and after a change of epoch, are each the batch of their own key."""
    batches = [list(range(8 * b, 8 * b + 8))[::-1] for b in range(5)]
    prefetcher = Prefetcher(2, processes, depth=2)
    try:
        for epoch in (0, 1):
            for b in (0, 3, 1, 4, 2):
                ahead = [((epoch, j), lambda j=j: (source, batches[j], -1, tag_pid)) for j in range(b, 5)]
                got = prefetcher.get((epoch, b), ahead)
                assert got["x"].tolist() == batches[b]
                assert got["clip_lengths"].tolist() == [i % 5 for i in batches[b]]
                assert (got["pid"] != os.getpid()).all() == processes
            prefetcher.forget(lambda key, e=epoch: key[0] == e + 1)
            assert not prefetcher._pending
    finally:
        prefetcher.close()


def test_read_arrays_opens_one_reader_per_process_and_file(source: SplitSource, tmp_path: Path) -> None:
    """The first copy of a source is kept: later copies (as a worker receives them) reuse its reader, counted by
    that reader's read_stats; a file replaced at the same path is opened anew, never read through the old one."""
    first = read_arrays(source, [1, 2])
    kept_stats = source.reader().dataset.read_stats
    before = kept_stats.reads
    copy = SplitSource(source.path, "train")
    assert read_arrays(copy, [3])["x"].tolist() == [3]
    assert kept_stats.reads > before  # read through the first copy's reader
    assert first["x"].tolist() == [1, 2]
    replacement = h5ml.write(tmp_path / "new.h5", {"train": {"x": np.arange(100, 112)}})
    os.replace(replacement, source.path)  # another file at the same path, with more samples
    again = SplitSource(source.path, "train")
    assert read_arrays(again, [0, 11])["x"].tolist() == [100, 111]
    with pytest.raises(ValueError, match="depth"):
        Prefetcher(1, False, depth=0)


@pytest.mark.parametrize("workers", [1, 2], ids=["inline", "threads"])
def test_batch_feed_serves_the_cursor_after_a_resume(source: SplitSource, workers: int) -> None:
    """BatchFeed: each batch of an epoch cursor, inline or read ahead by threads, is that cursor's own: after a
    resume in the same epoch (batches of the first pass still pending) and for a cursor of another seed."""
    from h5ml.reader.prefetch import BatchFeed
    from h5ml.sampling import EpochCursor, Sampler

    cursor = EpochCursor(Sampler(40, 4, shuffle="full", seed=1))
    feed = BatchFeed(source, pad_value=-1, transform=tag_pid, workers=workers, depth=3)
    try:
        whole = [b.tolist() for b in cursor.batches()]
        assert [feed.batch(cursor, i)["x"].tolist() for i in (0, 1)] == whole[:2]  # 2..4 pending with threads
        assert cursor.batches_done == 2
        cursor.load_state_dict(cursor.state_dict(batches_done=3))
        resumed = [feed.batch(cursor, i) for i in range(len(cursor))]
        assert [b["x"].tolist() for b in resumed] == whole[3:]
        assert [b["clip_lengths"].tolist() for b in resumed] == [[i % 5 for i in b] for b in whole[3:]]
        assert cursor.batches_done == 10
        cursor.set_epoch(0)
        feed.batch(cursor, 0)  # batches 1..3 of seed 1 pending with threads
        other = EpochCursor(Sampler(40, 4, shuffle="full", seed=2))
        assert [feed.batch(other, i)["x"].tolist() for i in (1, 2)] == [b.tolist() for b in other.batches()[1:3]]
        with pytest.raises(IndexError, match="outside the 10 batches"):
            feed.batch(other, 10)
    finally:
        feed.close()


# -- worker processes (h5ml.reader.pools) --------------------------------------------------------------------


def _sigint_ignored() -> bool:
    import signal

    return signal.getsignal(signal.SIGINT) is signal.SIG_IGN


def test_interrupts_are_held_while_a_worker_may_start() -> None:
    """A SIGINT or SIGTERM raised inside interrupts_deferred reaches its handler when the block ends, in order;
    nothing is lost and nothing interrupts the block (a half-started worker would print a traceback)."""
    import signal

    from h5ml.reader.pools import interrupts_deferred

    seen: list[str] = []

    def on_term(signum: int, frame: object) -> None:
        seen.append("term")

    previous = signal.signal(signal.SIGTERM, on_term)
    try:
        with pytest.raises(KeyboardInterrupt):
            with interrupts_deferred():
                signal.raise_signal(signal.SIGTERM)
                signal.raise_signal(signal.SIGINT)
                seen.append("block ended")
        assert seen == ["block ended", "term"]
        assert (
            signal.getsignal(signal.SIGTERM) is on_term
            and signal.getsignal(signal.SIGINT) is signal.default_int_handler
        )
    finally:
        signal.signal(signal.SIGTERM, previous)


def test_pool_workers_leave_ctrl_c_to_the_parent() -> None:
    """Workers ignore SIGINT (Ctrl-C reaches the whole process group; the parent ends them with stop_pool)."""
    from h5ml.reader.pools import process_pool, stop_pool, submit

    pool = process_pool(1)
    try:
        assert submit(pool, _sigint_ignored).result(timeout=60) is True
    finally:
        stop_pool(pool)


class _SentMarker:
    """Pickled after the big payload: its flag file says that the result is about to go through the pipe."""

    def __init__(self, flag: str) -> None:
        self.flag = flag

    def __reduce__(self) -> tuple[object, ...]:
        Path(self.flag).write_text("sending")
        return (str, ("sent",))


def _big_result(flag: str) -> tuple[bytes, _SentMarker]:
    return bytes(500 << 20), _SentMarker(flag)  # 500 MB: its trip through the result pipe takes about a second


def test_stopping_a_pool_mid_result_lets_its_manager_thread_end(tmp_path: Path) -> None:
    """A worker terminated while it sends a result leaves half a message in the result pipe; stop_pool closes this
    process's write end, so the pool's manager thread reads the end and finishes (else the interpreter's exit waits
    on it forever: seen as a hang after Ctrl-C during h5ml convert --processes)."""
    import time

    from h5ml.reader.pools import process_pool, stop_pool, submit

    pool = process_pool(1)
    flag = tmp_path / "flag"
    future = submit(pool, _big_result, str(flag))
    manager = pool._executor_manager_thread  # type: ignore[attr-defined]
    deadline = time.monotonic() + 60
    while not flag.exists() and time.monotonic() < deadline:
        time.sleep(0.001)
    assert flag.exists(), "the worker never ran"
    time.sleep(0.1)  # pickled: its bytes are on their way through the pipe
    stop_pool(pool)
    assert manager is not None
    manager.join(timeout=30)
    assert not manager.is_alive()
    assert future.done()


# -- thread read-ahead and shared-memory batches (issue 15) -------------------------------------------------


def test_read_ahead_keeps_the_order_and_bounds_what_is_in_flight() -> None:
    """Result i is item i's whatever thread finishes first; at most depth items are taken ahead; an error comes at
    its item's turn."""
    import time

    from h5ml.reader.readahead import read_ahead

    taken: list[int] = []

    def items() -> Any:
        for i in range(30):
            taken.append(i)
            yield i

    def slow_evens(i: int) -> int:
        time.sleep(0.004 if i % 2 == 0 else 0)
        return i * i

    out = []
    for k, value in enumerate(read_ahead(items(), slow_evens, threads=3, depth=5)):
        assert len(taken) <= k + 5
        out.append(value)
    assert out == [i * i for i in range(30)]

    def fail_at_4(i: int) -> int:
        if i == 4:
            raise ValueError("item 4")
        return i

    got: list[int] = []
    with pytest.raises(ValueError, match="item 4"):
        got.extend(read_ahead(range(10), fail_at_4, threads=2))
    assert got == [0, 1, 2, 3]
    with pytest.raises(ValueError, match="threads and depth must be >= 1"):
        next(read_ahead(range(3), fail_at_4, threads=0))


def test_shared_batches_round_trip_and_leave_no_name() -> None:
    """to_shared/from_shared give every array back (dtypes, shapes, values, writeable), object arrays and small
    batches pickled; the segment's name is gone once received."""
    from h5ml.reader.shared_batches import SHARED_MIN_BYTES, SharedBatch, from_shared, segment_prefix, to_shared

    prefix = segment_prefix()
    arrays = {
        "img": np.arange(64 * 64 * 3 * 8, dtype=np.uint32).reshape(8, 64, 64, 3).astype(np.uint8),
        "x": np.linspace(0, 1, 8 * 3, dtype=np.float64).reshape(8, 3),
        "blob": np.array([b"a", b"bc"] * 4, dtype=object),
        "name": np.array(["é", "b"] * 4),
    }
    shared = to_shared(arrays, prefix)
    assert isinstance(shared, SharedBatch) and shared.name.startswith(prefix) and list(shared.others) == ["blob"]
    assert os.path.exists(f"/dev/shm/{shared.name}")
    back = from_shared(shared)
    assert not os.path.exists(f"/dev/shm/{shared.name}")
    assert sorted(back) == sorted(arrays)
    for key, value in arrays.items():
        assert back[key].dtype == value.dtype and back[key].shape == value.shape
        assert back[key].tolist() == value.tolist()
    assert back["img"].flags.writeable and type(back["img"].base).__name__ == "mmap"
    small = {"x": np.zeros(SHARED_MIN_BYTES // 8 - 1)}
    assert to_shared(small, prefix) is small


def test_close_removes_the_segments_a_stopped_worker_left(source: SplitSource) -> None:
    """A segment written under a prefetcher's prefix and never received (its worker stopped) is removed at close."""
    from h5ml.reader.shared_batches import to_shared

    prefetcher = Prefetcher(1, True, depth=1)
    try:
        got = prefetcher.get((0, 0), [((0, 0), lambda: (source, list(range(40)), 0, None))])
        assert got["x"].tolist() == list(range(40))
        prefix = prefetcher._prefix
        assert prefix is not None
        orphan = to_shared({"x": np.zeros(1 << 17, dtype=np.uint8)}, prefix)
        assert not isinstance(orphan, dict) and os.path.exists(f"/dev/shm/{orphan.name}")
    finally:
        prefetcher.close()
    assert not [n for n in os.listdir("/dev/shm") if n.startswith(prefix)]


def test_a_feed_decodes_the_next_chunk_window_ahead_once(tmp_path: Path) -> None:
    """§7.3: reading in the calling thread, BatchFeed starts the chunks of the next batches (the next `chunk`
    window) in the decode pool before the caller asks: when a batch is asked, its chunks are already cached or
    in flight (counted by the real counters, not by time); each chunk is decoded once in the epoch, and the
    cache never holds more than its budget."""
    from _files import Dense, write_file
    from h5ml.sampling import EpochCursor, Sampler

    path = tmp_path / "w.h5"
    x = np.arange(800 * 6, dtype=np.float32).reshape(800, 6) % 97
    write_file(path, {"train": {"x": Dense(x, chunks=(16, 6), compression="gzip")}})
    source = SplitSource(path, "train")
    cursor = EpochCursor(Sampler(800, 20, shuffle="chunk", seed=5, chunk_rows=16, window_chunks=4))
    feed = BatchFeed(source, workers=1, depth=4)
    batches = [cursor.batch(i) for i in range(cursor.num_batches)]
    try:
        split = source.reader()
        column = split["x"]._column()
        cache = split.dataset.file_map().decoded
        started_before_asked = 0
        for i, rows in enumerate(batches):
            if i > 0:
                started_before_asked += column.prefetch(rows)  # 0: the feed started them already
            np.testing.assert_array_equal(feed.batch(cursor, i)["x"], x[rows])
            assert cache.nbytes <= cache.budget
        assert started_before_asked == 0
        assert cache.decodes == 800 // 16  # each chunk once in the epoch, none twice
    finally:
        feed.close()
