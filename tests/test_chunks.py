"""Chunk shapes and chunk-cache sizes of SPEC.md §7 (h5ml.spec.chunks)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from h5ml import spec
from h5ml.spec.chunks import (
    READER_CACHE_CHUNKS,
    READER_CACHE_MIN_BYTES,
    SPLIT_SAMPLE_BYTES,
    cache_bytes_for,
    chunk_rows,
    chunk_shape,
)

MiB = 1 << 20
HDF5_DEFAULT_CACHE_BYTES = 1 << 20  # HDF5's default chunk cache per dataset


@pytest.mark.parametrize(
    ("sample_nbytes", "num_samples", "expected"),
    [
        (512, None, 2048),  # (128,) float32: 1 MiB / 512 B
        (4096, None, 256),  # (1024,) float32
        (3, None, 262144),  # 1 MiB / 3 = 349525.3 -> largest power of two below
        (0, None, MiB),  # an empty sample counts as one byte
        (2 * MiB, None, 1),  # larger than the target: one sample per chunk
        (512, 10, 16),  # capped at the next power of two >= 10
        (512, 0, 1),
        (512, 1, 1),
        (512, 2048, 2048),
        (512, 2049, 2048),  # the cap (4096) is above the target rows
        (8, 100_000, 131072),
    ],
)
def test_chunk_rows_values(sample_nbytes: int, num_samples: int | None, expected: int) -> None:
    """§7.2/§7.3: the largest power of two of samples within the target, capped by the dataset length."""
    assert chunk_rows(sample_nbytes, num_samples) == expected


@given(st.integers(0, 64 * MiB), st.one_of(st.none(), st.integers(0, 10**9)))
def test_chunk_rows_rule(sample_nbytes: int, num_samples: int | None) -> None:
    """§7.2/§7.3: r is a power of two, r samples fit the target unless r = 1, and 2r would not fit or pass the cap."""
    r = chunk_rows(sample_nbytes, num_samples)
    size = max(1, sample_nbytes)
    assert r >= 1 and r & (r - 1) == 0
    assert r == 1 or r * size <= spec.TARGET_CHUNK_BYTES
    cap = None if num_samples is None else 1 << max(0, num_samples - 1).bit_length()
    if cap is not None:
        assert r <= cap
    assert 2 * r * size > spec.TARGET_CHUNK_BYTES or (cap is not None and 2 * r > cap)


def test_chunk_rows_rejects_negative() -> None:
    with pytest.raises(ValueError, match="sample_nbytes"):
        chunk_rows(-1)
    with pytest.raises(ValueError, match="num_samples"):
        chunk_rows(8, -2)


def test_c09_chunks_span_whole_samples() -> None:
    """Case C09, §7.1: a (0, 128) float32 dataset gets chunks of whole samples, rows a power of two."""
    shape = chunk_shape((128,), 4)
    assert shape == (2048, 128)
    assert shape[1:] == (128,)
    assert chunk_shape((128,), 4, num_samples=100) == (128, 128)


def test_c11_chunks_fit_the_default_cache() -> None:
    """Case C11, §7.3: an (N, 1024) float32 dataset gets chunks <= 1 MiB (HDF5's default cache) and a reader cache
    that holds several of them."""
    shape = chunk_shape((1024,), 4)
    chunk_nbytes = 4 * math.prod(shape)
    assert shape == (256, 1024)
    assert chunk_nbytes <= HDF5_DEFAULT_CACHE_BYTES
    assert cache_bytes_for(chunk_nbytes) >= READER_CACHE_CHUNKS * chunk_nbytes
    assert cache_bytes_for(chunk_nbytes) >= READER_CACHE_MIN_BYTES


@pytest.mark.parametrize(
    ("sample_shape", "itemsize", "expected"),
    [
        ((64, 64, 3), 1, (64, 64, 64, 3)),  # 12 KiB images: 85 fit, 64 is the power of two
        ((), 8, (131072,)),  # int64 labels
        ((4096, 1024), 4, (1, 4096, 1024)),  # exactly 16 MiB: still whole
        ((5000, 5000), 4, (1, 52, 5000)),  # 100 MB: split along the first sample axis
        ((2, 3_000_000), 8, (1, 1, 131072)),  # 48 MB whose rows exceed the target: the next axis is split
        ((6_000_000,), 4, (1, 262144)),  # a 24 MB 1-D sample
        ((0, 3), 4, (65536, 1, 3)),  # zero-length axes count as 1
    ],
)
def test_chunk_shape_values(sample_shape: tuple[int, ...], itemsize: int, expected: tuple[int, ...]) -> None:
    """§7.1: (r, *sample_shape); samples over 16 MiB split the first axis whose tail fits the target."""
    assert chunk_shape(sample_shape, itemsize) == expected


@given(st.lists(st.integers(1, 5000), min_size=0, max_size=4), st.sampled_from([1, 2, 4, 8]))
def test_chunk_shape_rule(sample_shape: list[int], itemsize: int) -> None:
    """§7.1: whole samples up to 16 MiB; above, r = 1, later axes whole and the chunk within the target."""
    shape = chunk_shape(sample_shape, itemsize)
    sample_nbytes = itemsize * math.prod(sample_shape)
    assert len(shape) == len(sample_shape) + 1
    if sample_nbytes <= SPLIT_SAMPLE_BYTES:
        assert list(shape[1:]) == sample_shape
        assert shape[0] == chunk_rows(sample_nbytes)
    else:
        assert shape[0] == 1
        assert itemsize * math.prod(shape) <= spec.TARGET_CHUNK_BYTES

        def is_split_at(k: int) -> bool:
            tail = itemsize * math.prod(sample_shape[k + 1 :])
            rows = shape[k + 1]
            return (
                all(c == 1 for c in shape[1 : k + 1])
                and list(shape[k + 2 :]) == sample_shape[k + 1 :]
                and 1 <= rows <= sample_shape[k]
                and (rows == sample_shape[k] or (rows + 1) * tail > spec.TARGET_CHUNK_BYTES)
            )

        assert any(is_split_at(k) for k in range(len(sample_shape)))


def test_chunk_shape_rejects_bad_arguments() -> None:
    with pytest.raises(ValueError, match="itemsize"):
        chunk_shape((3,), 0)
    with pytest.raises(ValueError, match="non-negative"):
        chunk_shape((-1,), 4)


def test_cache_bytes_for() -> None:
    """§7.3: at least 64 MiB, and at least 8 chunks of large-chunk datasets."""
    assert cache_bytes_for(0) == 64 * MiB
    assert cache_bytes_for(MiB) == 64 * MiB
    assert cache_bytes_for(10 * MiB) == 80 * MiB
    with pytest.raises(ValueError, match="chunk_nbytes"):
        cache_bytes_for(-1)
