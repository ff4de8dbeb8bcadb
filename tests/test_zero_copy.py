"""``h5ml.open(..., zero_copy=True)``: uncompressed ragged values and dense slices as read-only views of the map.

Issue 15, "Ragged without copies" (§6.3, §7.3): with ``zero_copy=True`` the
values of a ragged batch (and a dense slice of step 1) are views straight
into the file's read-only memory map (:meth:`h5ml.reader.direct.DirectRows.view`)
where the stored bytes are native-order, aligned and contiguous in the file;
everything else (big-endian values, gzip, ``direct=False``) falls back to the
copy with the same values. A view keeps the map alive after the dataset is
closed. Real files written with h5py (tests/_files.py), read with the reader.
"""

from __future__ import annotations

import mmap
import pickle
from pathlib import Path

import h5py
import numpy as np
import pytest

import h5ml
from _files import Dense, Ragged, write_file
from h5ml.reader.direct import DirectRows
from h5ml.reader.file_map import FileMap
from h5ml.reader.read_stats import ReadStats
from h5ml.reader.source import SplitSource


def _clips(count: int = 12, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal(int(n)) * 1000).astype(np.float32) for n in rng.integers(0, 40, size=count)]


def _write(path: Path, dtype: str = "float32", compression: str | None = None, chunk_rows: int | None = 16) -> None:
    clips = _clips()
    dense = (
        np.arange(40 * 3, dtype=np.int32)
        .reshape(40, 3)
        .astype(np.dtype(np.int32).newbyteorder(dtype[0]) if dtype[0] in "<>" else np.int32)
    )
    feats = {
        "clip": Ragged(clips, chunk_rows=chunk_rows, compression=compression, dtype=np.dtype(dtype)),
    }
    write_file(path, {"train": feats, "table": {"x": Dense(dense, chunks=(8, 3) if chunk_rows else None)}})


def _file_data(ds: h5ml.Dataset) -> np.ndarray:
    file_map = ds.file_map()
    assert file_map is not None and file_map.data is not None
    return file_map.data


def test_ragged_batches_are_read_only_views_of_the_map_with_the_stored_values(tmp_path: Path) -> None:
    """zero_copy=True: every non-empty sample of a batch, a slice and an int is a view of the map; values equal."""
    path = tmp_path / "a.h5"
    _write(path)
    clips = _clips()
    with h5ml.open(path, zero_copy=True) as ds:
        feature = ds["train"]["clip"]
        data = _file_data(ds)
        picks = [5, 2, 2, 11, 0, 7]
        for got, row in zip(feature[picks], picks, strict=True):
            np.testing.assert_array_equal(got, clips[row])
            assert got.dtype == np.float32 and not got.flags.writeable
            assert got.size == 0 or np.shares_memory(got, data)
        for j, got in enumerate(feature[2:9]):
            np.testing.assert_array_equal(got, clips[2 + j])
            assert got.size == 0 or np.shares_memory(got, data)
        one = feature[3]
        np.testing.assert_array_equal(one, clips[3])
        assert one.size == 0 or (np.shares_memory(one, data) and not one.flags.writeable)
        assert ds.read_stats.direct_views > 0
    with h5ml.open(path) as ds:  # the default stays the copy
        got = ds["train"]["clip"][picks]
        assert not any(np.shares_memory(g, _file_data(ds)) for g in got)
        assert ds.read_stats.direct_views == 0


def test_a_view_survives_close_of_its_dataset(tmp_path: Path) -> None:
    """Closing the dataset does not unmap the pages a held view uses: the view still reads the stored values."""
    path = tmp_path / "a.h5"
    _write(path)
    clips = _clips()
    row = next(i for i, c in enumerate(clips) if c.size)
    ds = h5ml.open(path, zero_copy=True)
    view = ds["train"]["clip"][[row]][0]
    assert np.shares_memory(view, _file_data(ds))
    ds.close()
    assert ds.closed
    np.testing.assert_array_equal(view, clips[row])
    assert float(view.sum()) == pytest.approx(float(clips[row].sum()))


def test_dense_slice_is_a_view_and_an_index_array_is_a_copy(tmp_path: Path) -> None:
    """A dense slice of step 1 is a read-only view with zero_copy=True; a fancy index stays a writable copy."""
    path = tmp_path / "a.h5"
    _write(path)
    want = np.arange(120, dtype=np.int32).reshape(40, 3)
    with h5ml.open(path, zero_copy=True) as ds:
        x = ds["table"]["x"]
        block = x[3:30]  # spans 4 chunks stored one after the other (h5py writes them in order)
        np.testing.assert_array_equal(block, want[3:30])
        assert not block.flags.writeable
        assert np.shares_memory(block, _file_data(ds))
        rows = x[[3, 4, 5]]
        np.testing.assert_array_equal(rows, want[3:6])
        assert rows.flags.writeable and not np.shares_memory(rows, _file_data(ds))


@pytest.mark.parametrize(("dtype", "compression"), [(">f4", None), ("<f4", "gzip")])
def test_byte_swapped_or_compressed_values_fall_back_to_copies(
    tmp_path: Path, dtype: str, compression: str | None
) -> None:
    """Big-endian values (byte-swapped on read) and gzip values come back as copies, the same values."""
    path = tmp_path / "a.h5"
    _write(path, dtype=dtype, compression=compression)
    clips = _clips()
    with h5ml.open(path, zero_copy=True) as ds:
        got = ds["train"]["clip"][list(range(len(clips)))]
        data = _file_data(ds)
        for row, sample in enumerate(got):
            np.testing.assert_array_equal(sample, clips[row])
            assert sample.dtype == np.dtype("float32") and not np.shares_memory(sample, data)
        assert ds.read_stats.direct_views == 0


def test_zero_copy_with_direct_false_is_refused(tmp_path: Path) -> None:
    """zero_copy=True needs the memory map: direct=False with it is a contradiction, refused with both names."""
    path = tmp_path / "a.h5"
    _write(path)
    with pytest.raises(ValueError, match=r"zero_copy=True.*direct=False"):
        h5ml.open(path, zero_copy=True, direct=False)


def test_truncated_file_refuses_the_view(tmp_path: Path) -> None:
    """§10.3 at view time: a file truncated below the values' end raises InvalidFileError, never hands out a view."""
    path = tmp_path / "a.h5"
    _write(path, chunk_rows=None)
    with h5ml.open(path, zero_copy=True) as ds:
        feature = ds["train"]["clip"]
        feature[[1]]  # opened, offsets cached
        node = ds.h5file["/train/clip/values"]
        end = int(node.id.get_offset()) + int(node.nbytes)
        with open(path, "r+b") as f:
            f.truncate(end - 4)
        with pytest.raises(h5ml.InvalidFileError, match="truncated"):
            feature[list(range(12))]


def test_split_source_passes_zero_copy_and_pickles_it(tmp_path: Path) -> None:
    """SplitSource(zero_copy=True) opens its reader with it, and a pickled copy keeps it."""
    path = tmp_path / "a.h5"
    _write(path)
    source = SplitSource(path, "train", zero_copy=True)
    copy = pickle.loads(pickle.dumps(source))
    row = next(i for i, c in enumerate(_clips()) if c.size)
    for each in (source, copy):
        got = each.reader().read([row])["clip"][0]
        np.testing.assert_array_equal(got, _clips()[row])
        assert each._file is not None and np.shares_memory(got, _file_data(each._file))
    plain = SplitSource(path, "train")
    assert not np.shares_memory(plain.reader().read([row])["clip"][0], _file_data(plain._file))


def test_a_batch_of_spans_is_viewed_exactly_where_the_bytes_allow_it(tmp_path: Path) -> None:
    """DirectRows.view_spans (one check for a batch; view() is it for one span): a span is a view of its own bytes
    when its blocks lie back to back and its first row is aligned, else None (the caller copies it)."""
    raw = np.arange(96, dtype=np.float32).tobytes()
    path = tmp_path / "raw.bin"
    path.write_bytes(raw)
    with open(path, "rb") as handle:
        region = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
    # 7 blocks of 4 rows of 2 float32 (32 bytes): 0-2 back to back, 3-4 back to back elsewhere, 5-6 at odd offsets
    blocks = [0, 32, 64, 160, 192, 225, 257]
    group = [0, 0, 0, 1, 1, 2, 2]
    spans = sorted((a, b) for a in range(28) for b in range(a + 1, 29))
    stats = ReadStats()
    file_map = FileMap(region, str(path), zero_copy=True)
    fast = DirectRows(file_map, "/values", blocks, 4, 28, (2,), np.dtype("<f4"), stats)
    batch = fast.view_spans(spans)
    assert batch is not None and len(batch) == len(spans) == 406
    viewed = 0
    for (a, b), got in zip(spans, batch, strict=True):
        first, last = a // 4, (b - 1) // 4
        begin = blocks[first] + (a - 4 * first) * 8
        if group[first] != group[last] or begin % 4:
            assert got is None and fast.view(a, b) is None, (a, b)
            continue
        want = np.frombuffer(raw, dtype="<f4", count=(b - a) * 2, offset=begin).reshape(b - a, 2)
        assert got is not None and got.shape == (b - a, 2) and not got.flags.writeable
        np.testing.assert_array_equal(got, want)
        assert np.shares_memory(got, file_map.data)
        alone = fast.view(a, b)
        assert alone is not None and alone.__array_interface__["data"] == got.__array_interface__["data"]
        viewed += 1
    assert viewed == 78 + 36  # the spans within rows [0, 12) (blocks 0-2) and within rows [12, 20) (blocks 3-4)
    assert stats.direct_views == 2 * viewed  # once by the batch, once by view() alone
    assert fast.view_spans([(11, 13), (21, 23)]) is None  # across blocks 2|3 and in an unaligned block
    assert fast.view_spans([]) is None
    file_map.close()
    copies = FileMap(mmap.mmap(-1, 400), "anon", zero_copy=False)
    assert DirectRows(copies, "/values", [0], 28, 28, (2,), np.dtype("<f4")).view_spans([(0, 4)]) is None
    copies.close()


def test_ragged_values_whose_chunks_are_out_of_order_read_the_stored_values(tmp_path: Path) -> None:
    """A file whose values chunks were written last to first (no two back to back): a shuffled batch of every
    sample reads the stored values; a sample read alone (one span) is a view of the map when it lies within one
    chunk, else a copy (the samples of a batch share spans, which merge neighbours across chunks)."""
    path = tmp_path / "a.h5"
    _write(path)
    clips = _clips()
    with h5py.File(path, "r+") as f:
        group = f["train/clip"]
        old = group["values"]
        stored, attrs = old[...], dict(old.attrs)
        del group["values"]
        new = group.create_dataset("values", shape=stored.shape, dtype=stored.dtype, chunks=(16,))
        for start in reversed(range(0, stored.shape[0], 16)):
            new[start : start + 16] = stored[start : start + 16]
        new.attrs.update(attrs)
        bounds = group["offsets"][...]
    picks = np.random.default_rng(3).permutation(len(clips))
    with h5ml.open(path, zero_copy=True) as ds:
        feature = ds["train"]["clip"]
        for row, sample in zip(picks.tolist(), feature[picks.tolist()], strict=True):
            np.testing.assert_array_equal(sample, clips[row])
        data = _file_data(ds)
        crossing = 0
        for row in picks.tolist():
            sample = feature[[row]][0]
            np.testing.assert_array_equal(sample, clips[row])
            a, b = int(bounds[row]), int(bounds[row + 1])
            within = b > a and a // 16 == (b - 1) // 16
            crossing += b > a and not within
            assert np.shares_memory(sample, data) == within, row
        assert crossing > 0 and ds.read_stats.direct_views > 0
