"""Ragged batches as read-only views into one span per run of values, padding that copies once, and ``chunk`` shuffle.

Issue 15, "Ragged without copies" (§6.3, §7.1): a batch of a ragged feature is
read as one span of ``values`` per contiguous run of the requested samples and
returned as read-only views into it (:class:`h5ml.reader.ragged.RaggedFeature`);
:func:`h5ml.sampling.pad_ragged` (and through it both adapters' collate)
copies each sample once into the padded array; ``chunk`` shuffle of a split
with only ragged features takes the samples that fill one chunk of ``values``
(:func:`h5ml.reader.offsets.sample_chunk_rows`). Real files written with h5py
(tests/_files.py), read back with the reader; copies are counted with
:attr:`h5ml.Dataset.read_stats` and with :mod:`tracemalloc` (numpy reports its
buffers to it).
"""

from __future__ import annotations

import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import h5ml
from _files import Dense, Ragged, write_file
from h5ml.reader.offsets import _decode_ahead, sample_chunk_rows
from h5ml.reader.source import SplitSource
from h5ml.sampling import pad_ragged

_DTYPES = ("int16", "float32", "float64", "bool")


def _samples(lengths: list[int], dtype: str, form: str, seed: int) -> list[np.ndarray]:
    """Samples of ``lengths`` rows: 1-D, (k, 2) (``inner``) or reshaped 2-D (``shapes``)."""
    rng = np.random.default_rng(seed)
    out = []
    for k in lengths:
        shape: tuple[int, ...] = {"flat": (k,), "inner": (k, 2), "shapes": (k % 3 + 1, k)}[form]
        if dtype == "bool":
            out.append(rng.integers(0, 2, size=shape).astype(np.uint8))
        else:
            out.append((rng.standard_normal(shape) * 100).astype(dtype))
    return out


def _write_ragged(path: Path, samples: list[np.ndarray], dtype: str, form: str, compression: str | None) -> None:
    attrs = {"logical_dtype": "bool"} if dtype == "bool" else {}
    total = sum(int(s.size if form == "shapes" else s.shape[0]) for s in samples)
    if total == 0:  # no values at all: an empty dataset cannot be chunked
        compression = None
    chunk_rows = min(7, total) or None
    feature = Ragged(samples, with_shapes=form == "shapes", chunk_rows=chunk_rows, compression=compression, attrs=attrs)
    write_file(path, {"train": {"clip": feature}})


def _want(samples: list[np.ndarray], dtype: str, row: int) -> np.ndarray:
    return samples[row].astype(bool) if dtype == "bool" else samples[row]


@given(
    lengths=st.lists(st.integers(0, 12), min_size=1, max_size=20),
    dtype=st.sampled_from(_DTYPES),
    form=st.sampled_from(("flat", "inner", "shapes")),
    compression=st.sampled_from((None, "gzip")),
    picks=st.lists(st.integers(-1000, 1000), max_size=24),
    seed=st.integers(0, 2**16),
)
def test_batches_equal_the_stored_samples_for_every_index_pattern(
    lengths: list[int], dtype: str, form: str, compression: str | None, picks: list[int], seed: int
) -> None:
    """Property: lengths with 0, dtypes (bool too), shapes columns, duplicates, negative and unsorted indices.

    Every sample of a batch equals the stored one (values, dtype, shape) and is a read-only view; a step-1
    slice and a single int agree with it; a single int is a writable array of its own.
    """
    n = len(lengths)
    samples = _samples(lengths, dtype, form, seed)
    indices = [p % (2 * n) - n for p in picks]  # in [-n, n): negative, duplicated, unsorted
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "r.h5"
        _write_ragged(path, samples, dtype, form, compression)
        with h5ml.open(path) as ds:
            feat = ds["train"]["clip"]
            got = feat[indices]
            assert isinstance(got, list) and len(got) == len(indices)
            for index, sample in zip(indices, got, strict=True):
                want = _want(samples, dtype, index % n)
                assert sample.dtype == want.dtype and sample.shape == want.shape
                assert np.array_equal(sample, want) and not sample.flags.writeable
            for row, sample in enumerate(feat[1 : n - 1]):
                assert np.array_equal(sample, _want(samples, dtype, row + 1)) and not sample.flags.writeable
            one = feat[-1]
            assert np.array_equal(one, _want(samples, dtype, n - 1)) and one.flags.writeable
            through_split = ds["train"].read(indices, ["clip"])["clip"]
            assert all(np.array_equal(a, b) for a, b in zip(through_split, got, strict=True))


def _clips(count: int, seed: int = 3) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(int(k)).astype(np.float32) for k in rng.integers(1000, 3000, size=count)]


def test_a_run_of_samples_is_one_copy_out_of_the_map_and_its_samples_share_one_read_only_buffer(
    tmp_path: Path,
) -> None:
    """A contiguous run (any order, duplicates) is one read of ``values``; its samples are views into one buffer.

    Out of the memory map, a gap of at most 4 KiB of values is copied through (one span instead of two); a larger
    one makes a second span, copied into the same buffer (one per batch). An edit in place is refused (the buffer is
    shared); a duplicate is the same view twice.
    """
    clips = _clips(200)
    clips[4], clips[6] = clips[4][:10], np.resize(clips[6], 2000)  # gaps of 40 and 8000 bytes
    offsets = np.concatenate([[0], np.cumsum([c.shape[0] for c in clips])])
    write_file(tmp_path / "a.h5", {"train": {"clip": Ragged(clips)}})
    with h5ml.open(tmp_path / "a.h5") as ds:
        feat = ds["train"]["clip"]
        feat.lengths()  # the offsets, read once and kept
        with ds.read_stats.record() as reads:
            got = feat[[12, 10, 11, 10, 14, 13]]
        assert [(r.hdf5_path, r.via, r.start, r.stop) for r in reads] == [
            ("/train/clip/values", "map", int(offsets[10]), int(offsets[15]))
        ]
        assert got[1] is got[3]
        bases = {id(sample.base) for sample in got}
        assert len(bases) == 1 and not got[0].base.flags.writeable
        for sample, row in zip(got, [12, 10, 11, 10, 14, 13], strict=True):
            assert np.array_equal(sample, clips[row])
        with pytest.raises(ValueError, match="read-only"):
            got[0][0] = 1.0
        with ds.read_stats.record() as reads:
            apart = feat[[3, 5, 7]]  # 3 and 5: a gap of 40 bytes, copied through; 7: 8000 bytes on
        assert [(r.start, r.stop) for r in reads] == [
            (int(offsets[3]), int(offsets[6])),
            (int(offsets[7]), int(offsets[8])),
        ]
        # two reads into one buffer for the batch (copy_spans), read-only as each sample
        assert apart[0].base is apart[1].base is apart[2].base and not apart[2].base.flags.writeable
        assert all(np.array_equal(s, clips[r]) for s, r in zip(apart, [3, 5, 7], strict=True))


def test_a_batch_allocates_its_values_once(tmp_path: Path) -> None:
    """Measured with tracemalloc: a batch allocates the bytes of its spans of values once (a copy per sample: twice).

    Spans hold the requested samples' values and the gaps (at most 4 KiB out of the map) that were read through.
    """
    clips = _clips(300)
    write_file(tmp_path / "a.h5", {"train": {"clip": Ragged(clips)}})
    rows = np.random.default_rng(0).permutation(300)[:64]
    with h5ml.open(tmp_path / "a.h5") as ds:
        feat = ds["train"]["clip"]
        feat[[0, 1]]  # columns, offsets and the memory map made before the count
        tracemalloc.start()
        try:
            with ds.read_stats.record() as reads:
                got = feat[rows]
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        need = sum(clips[r].nbytes for r in rows)
        spans = 4 * sum(r.stop - r.start for r in reads)  # float32 values read, small gaps included
        assert need <= spans <= peak < 1.1 * spans + 100_000
        assert all(np.array_equal(s, clips[r]) for s, r in zip(got, rows, strict=True))


def test_padding_views_copies_each_sample_once(tmp_path: Path) -> None:
    """pad_ragged of a batch of views: values, lengths, mask and pad value right; only the padded array allocated.

    The padded array shares memory with no sample (each sample copied into it); tracemalloc's peak during the
    padding is the padded array and its mask, no intermediate copy of the samples.
    """
    clips = _clips(40)
    write_file(tmp_path / "a.h5", {"train": {"clip": Ragged(clips)}})
    with h5ml.open(tmp_path / "a.h5") as ds:
        views = ds["train"]["clip"][list(range(5, 37))]
    tracemalloc.start()
    try:
        padded, lengths, mask = pad_ragged(views, pad_value=-7.5)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < padded.nbytes + mask.nbytes + lengths.nbytes + 100_000
    longest = max(c.shape[0] for c in clips[5:37])
    assert padded.shape == (32, longest) and padded.dtype == np.float32 and padded.flags.writeable
    assert lengths.tolist() == [c.shape[0] for c in clips[5:37]]
    for r, clip in enumerate(clips[5:37]):
        n = clip.shape[0]
        assert np.array_equal(padded[r, :n], clip) and (padded[r, n:] == -7.5).all()
        assert mask[r, :n].all() and not mask[r, n:].any()
        assert not np.shares_memory(padded, views[r])


def test_torch_collate_pads_views_into_one_tensor(tmp_path: Path) -> None:
    """Through the PyTorch adapter: one batch read, padded once; the tensors hold the stored values."""
    torch = pytest.importorskip("torch")
    from h5ml_torch import H5MLDataset, collate

    clips = _clips(30)
    write_file(tmp_path / "a.h5", {"train": {"clip": Ragged(clips)}})
    data = H5MLDataset(tmp_path / "a.h5", "train")
    rows = [7, 3, 29, 3]
    out = collate(data.__getitems__(rows), pad_value=0.0)
    assert out["clip"].dtype == torch.float32 and out["clip_lengths"].tolist() == [clips[r].shape[0] for r in rows]
    for i, r in enumerate(rows):
        n = clips[r].shape[0]
        assert np.array_equal(out["clip"][i, :n].numpy(), clips[r]) and not out["clip"][i, n:].any()
        assert out["clip_mask"][i, :n].all() and not out["clip_mask"][i, n:].any()
    sample = data[3]["clip"]  # one sample: a writable tensor of its own
    sample[0] = 0
    assert data[3]["clip"][0].item() == clips[3][0]


def _touched_chunks(offsets: np.ndarray, rows: np.ndarray, chunk: int) -> int:
    """How many chunks of ``values`` (``chunk`` rows each) the samples ``rows`` have values in."""
    chunks: set[int] = set()
    for r in rows.tolist():
        a, b = int(offsets[r]), int(offsets[r + 1])
        if b > a:
            chunks.update(range(a // chunk, (b - 1) // chunk + 1))
    return len(chunks)


def test_chunk_shuffle_of_a_ragged_only_split_reads_few_values_chunks(tmp_path: Path) -> None:
    """``chunk`` mode of a split with only ragged features: samples per chunk fill one chunk of ``values``.

    Before, the values' rows per chunk (1024 here) were taken as samples: one "chunk" of 1024 samples, so
    ``chunk`` mode was a full shuffle of them. Now each batch's samples come from a bounded number of values
    chunks, computed from the real offsets, far fewer than a full shuffle's; the order is still a seeded,
    reproducible permutation.
    """
    rng = np.random.default_rng(11)
    lengths = rng.integers(0, 200, size=3000)
    clips = [np.full(int(k), i % 100, dtype=np.int16) for i, k in enumerate(lengths)]
    write_file(tmp_path / "r.h5", {"train": {"clip": Ragged(clips, chunk_rows=1024)}})
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    source = SplitSource(tmp_path / "r.h5", "train")
    per = source.chunk_rows()
    assert per == round(1024 * 3000 / int(offsets[-1]))  # about 10 samples per chunk of 1024 values
    assert per == sample_chunk_rows(source.reader().feature("clip"))
    batch, windows = 32, 2
    sampler = source.sampler(batch, shuffle="chunk", seed=5, window_chunks=windows)
    order = np.concatenate(sampler.batches(0))
    assert sorted(order.tolist()) == list(range(3000))
    again = source.sampler(batch, shuffle="chunk", seed=5, window_chunks=windows)
    assert all(np.array_equal(a, b) for a, b in zip(sampler.batches(0), again.batches(0), strict=True))
    assert not np.array_equal(order, np.concatenate(source.sampler(batch, shuffle="chunk", seed=6).batches(0)))
    # Bound from the offsets: a batch lies in at most ceil(batch / window) + 1 windows of `windows` groups of
    # `per` consecutive samples; each group touches at most `worst` chunks of values.
    groups = [np.arange(g, min(g + per, 3000)) for g in range(0, 3000, per)]
    worst = max(_touched_chunks(offsets, g, 1024) for g in groups)
    bound = (-(-batch // (windows * per)) + 1) * windows * worst
    chunked = [_touched_chunks(offsets, b, 1024) for b in sampler.batches(0)]
    full = [_touched_chunks(offsets, b, 1024) for b in source.sampler(batch, shuffle="full", seed=5).batches(0)]
    assert max(chunked) <= bound < batch
    assert float(np.median(chunked)) * 2 < float(np.median(full))
    for b in sampler.batches(0)[:5]:  # the values are the stored ones
        got = source.read(b)["clip"]
        assert all(np.array_equal(g, clips[r]) for g, r in zip(got, b.tolist(), strict=True))


def test_chunk_rows_prefers_a_chunked_dense_feature_and_counts_samples_for_ragged(tmp_path: Path) -> None:
    """A dense feature's chunk rows win (as before); contiguous dense falls to the ragged's samples per chunk."""
    clips = [np.zeros(k, dtype=np.float32) for k in range(1, 101)]  # 5050 values
    x = np.zeros((100, 3), dtype=np.float32)
    write_file(tmp_path / "d.h5", {"train": {"x": Dense(x, chunks=(16, 3)), "clip": Ragged(clips, chunk_rows=505)}})
    write_file(tmp_path / "c.h5", {"train": {"x": Dense(x), "clip": Ragged(clips, chunk_rows=505)}})
    write_file(tmp_path / "e.h5", {"train": {"clip": Ragged([np.zeros(0, np.float32)] * 9)}})
    assert SplitSource(tmp_path / "d.h5", "train").chunk_rows() == 16
    assert SplitSource(tmp_path / "c.h5", "train").chunk_rows() == 10  # 505 values of 5050 for 100 samples
    empty: Any = SplitSource(tmp_path / "e.h5", "train").chunk_rows()
    assert empty is None  # contiguous offsets, no values: nothing chunked


def test_a_shuffled_ragged_batch_on_gzip_decodes_each_chunk_it_touches_once(tmp_path: Path) -> None:
    """§7.3: the spans of a shuffled batch of ragged samples on compressed values have their chunks decoded ahead,
    in the pool, each exactly once (every chunk the samples touch, and any that a merged gap between two spans
    covers), and the samples are the stored ones."""
    rng = np.random.default_rng(5)
    clips = [rng.standard_normal(int(n)).astype(np.float32) for n in rng.integers(20_000, 60_000, size=120)]
    h5ml.write(
        tmp_path / "g.h5", {"train": {"clip": clips}}, features={"clip": {"encoding": "ragged"}}, compression="gzip"
    )
    batch = rng.permutation(len(clips))[:40]
    with h5ml.open(tmp_path / "g.h5") as ds:
        feature = ds["train"]["clip"]
        offsets = np.concatenate([[0], np.cumsum([len(c) for c in clips])])
        per = feature._column("values").decoded_rows().chunk_rows
        touched = {
            k
            for i in batch.tolist()
            if offsets[i + 1] > offsets[i]
            for k in range(offsets[i] // per, (offsets[i + 1] - 1) // per + 1)
        }
        cache = ds.file_map().decoded
        values = feature._column("values")
        spans = [(0, 10), (5 * per + 3, 7 * per + 1)]  # two spans of a batch: chunks 0, 5, 6 and 7
        _decode_ahead(values, spans)  # started in the pool, not waited for
        for _ in range(200):  # the pool's threads finish the decodes they started
            if cache.decodes == 4:
                break
            time.sleep(0.05)
        assert cache.decodes == 4 and all(cache.cached(("/train/clip/values", k)) for k in (0, 5, 6, 7))
        cache.clear()
        cache.decodes = 0
        got = feature[batch]
        assert all(np.array_equal(g, clips[i]) for g, i in zip(got, batch.tolist(), strict=True))
        assert cache.decodes == len(cache) >= len(touched) > 1  # no chunk decoded twice
        assert all(cache.cached(("/train/clip/values", k)) for k in touched)
