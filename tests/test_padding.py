"""Tests of h5ml.sampling.padding: ragged samples padded to one batch array with lengths and a mask (§6.3, C05)."""

from __future__ import annotations

import numpy as np
import pytest

from h5ml.sampling.padding import pad_ragged


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
