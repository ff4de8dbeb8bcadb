"""Tests of h5ml.sampling.padding and h5ml.sampling.batches: ragged samples padded to one batch array with lengths
and a mask, and one batch's arrays per encoding (§6, C05)."""

from __future__ import annotations

import numpy as np
import pytest

from h5ml.sampling.batches import ColumnBatch, batch_arrays
from h5ml.sampling.padding import pad_ragged, ragged_values


def test_first_axis_varies_gives_lengths_and_a_2d_mask() -> None:
    """int16 clips of lengths 3, 1, 4: padded (3, 4) int16, lengths [3, 1, 4], mask True on real samples."""
    clips = [np.array([1, 2, 3], np.int16), np.array([7], np.int16), np.array([4, 5, 6, 8], np.int16)]
    padded, lengths, mask = pad_ragged(clips, pad_value=-9)
    assert padded.dtype == np.int16 and padded.tolist() == [[1, 2, 3, -9], [7, -9, -9, -9], [4, 5, 6, 8]]
    assert lengths.dtype == np.int64 and lengths.tolist() == [3, 1, 4]
    assert mask.tolist() == [[True, True, True, False], [True, False, False, False], [True] * 4]


def test_frames_with_channels_keep_a_time_mask() -> None:
    """(T, 2) frames: only T varies, so the mask is (R, T) and lengths are the T's."""
    padded, lengths, mask = pad_ragged([np.ones((2, 2)), np.zeros((5, 2))])
    assert padded.shape == (2, 5, 2) and lengths.tolist() == [2, 5] and mask.shape == (2, 5)
    assert padded[0, 2:].sum() == 0 and mask.sum() == 7


def test_several_axes_vary_and_bad_input() -> None:
    """Two varying axes: lengths are shapes, the mask has the padded shape; mixed ndim or 0-d is refused."""
    padded, lengths, mask = pad_ragged([np.ones((2, 3)), np.full((4, 1), 2.0)], pad_value=-1)
    assert padded.shape == (2, 4, 3) and lengths.tolist() == [[2, 3], [4, 1]] and int(mask.sum()) == 10
    assert (padded[1, :, 1:] == -1).all() and (padded[0, 2:] == -1).all()
    with pytest.raises(ValueError, match="same number of dimensions"):
        pad_ragged([np.ones(2), np.ones((2, 2))])
    with pytest.raises(ValueError, match="at least 1"):
        pad_ragged([np.float32(1.0)])
    empty = pad_ragged([])
    assert [a.shape for a in empty] == [(0,), (0,), (0,)]


def test_batch_arrays_per_encoding() -> None:
    """Each encoding's batch arrays: columns as read, strings and bytes 1-D, ragged padded even at one length, images
    stacked at one size and padded at several; values of an unknown encoding by what they are."""
    columns = {
        "x": np.arange(6, dtype=np.float32).reshape(2, 3),
        "name": np.array(["a", "bcd"], dtype=object),
        "blob": [b"xy", b"zw"],
        "clip": [np.ones(2, np.int16), np.ones(2, np.int16)],
        "photo": [np.zeros((2, 3, 3), np.uint8), np.zeros((2, 3, 3), np.uint8)],
        "scan": [np.zeros((2, 3, 1), np.uint8), np.zeros((4, 1, 1), np.uint8)],
        "added": [np.ones(2), np.ones(3)],
        "tag": ["p", "q"],
    }
    encodings = {"x": "dense", "name": "string", "blob": "bytes", "clip": "ragged", "photo": "image", "scan": "image"}
    arrays = batch_arrays(columns, encodings, pad_value=7)
    assert arrays["x"] is columns["x"]
    assert arrays["name"].dtype.kind == "U" and arrays["name"].tolist() == ["a", "bcd"]
    assert arrays["blob"].dtype == object and arrays["blob"].shape == (2,) and arrays["blob"].tolist() == [b"xy", b"zw"]
    assert arrays["clip_lengths"].tolist() == [2, 2] and arrays["clip_mask"].all()
    assert arrays["photo"].shape == (2, 2, 3, 3) and "photo_mask" not in arrays
    assert arrays["scan"].shape == (2, 4, 3, 1) and arrays["scan_lengths"].tolist() == [[2, 3, 1], [4, 1, 1]]
    assert arrays["scan"][0, 2:].tolist() == [[[7]] * 3] * 2
    assert arrays["added"].shape == (2, 3) and arrays["added_lengths"].tolist() == [2, 3]
    assert arrays["tag"].tolist() == ["p", "q"]
    assert batch_arrays({"name": [], "blob": []}, {"name": "string", "blob": "bytes"})["name"].dtype.kind == "U"


def test_column_batch_is_a_sequence_of_samples() -> None:
    """ColumnBatch: per-sample dicts from the columns (any index, slices), or the samples given, gathered by key."""
    batch = ColumnBatch({"x": np.arange(3), "s": ["a", "b", "c"]}, {"x": "dense", "s": "string"}, None, 3)
    assert len(batch) == 3 and batch[-1] == {"x": 2, "s": "c"} and [b["s"] for b in batch[1:]] == ["b", "c"]
    with pytest.raises(IndexError, match="outside this batch of 3"):
        batch[3]
    samples = ColumnBatch(None, {"clip": "ragged"}, [{"clip": np.ones(2)}, {"clip": np.ones(2)}], 2)
    assert list(samples.by_key()) == ["clip"] and samples.arrays()["clip_mask"].shape == (2, 2)
    assert ColumnBatch(None, {}, [], 0).arrays() == {}


def test_ragged_values_are_the_values_and_offsets_of_the_encoding() -> None:
    """§6.3: samples of shapes (3,), (0,), (2, 2) give values [1..7] (flattened, back to back) and offsets [0 3 3 7]."""
    samples = [np.array([1, 2, 3], np.int16), np.array([], np.int16), np.array([[4, 5], [6, 7]], np.int16)]
    values, offsets = ragged_values(samples)
    assert values.dtype == np.int16 and values.tolist() == [1, 2, 3, 4, 5, 6, 7] and values.flags.writeable
    assert offsets.dtype == np.int64 and offsets.tolist() == [0, 3, 3, 7]
    assert not any(np.shares_memory(values, s) for s in samples)
    samples[0].flags.writeable = False  # a reader's read-only view is only read
    again, _ = ragged_values(samples)
    again[:3] = 0
    assert samples[0].tolist() == [1, 2, 3] and values.tolist()[:3] == [1, 2, 3]
    empty_values, empty_offsets = ragged_values([])
    assert empty_values.shape == (0,) and empty_offsets.tolist() == [0]
    with pytest.raises(ValueError, match=r"dtypes \['float32', 'int16'\]"):
        ragged_values([np.ones(2, np.int16), np.ones(3, np.float32)])
