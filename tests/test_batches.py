"""Batches in stored form (h5ml.writer.batches, §6): normalising user values against a layout, and joining batches."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from h5ml.errors import EncodingError
from h5ml.model.layout import Layout
from h5ml.model.values import Categorical
from h5ml.spec.chunks import VLEN_ELEMENT_BYTES
from h5ml.writer.batches import Batch, concat, normalize, runs

WHERE = "f.h5:/train/x"
I2, U1, F2, F4 = (np.dtype(t) for t in ("<i2", "|u1", "<f2", "<f4"))
BOOL = Layout("dense", U1, logical_bool=True)
CAT = Layout("categorical", np.dtype("i1"), class_names=("cat", "dog"))


def test_dense_without_a_cast_is_borrowed_until_owned() -> None:
    """§6.2: values already in the stored dtype are not copied, and owned() detaches them from the caller."""
    x = np.arange(6, dtype=np.int16).reshape(3, 2)
    batch = normalize(Layout("dense", I2, (2,)), x, WHERE)
    assert batch.n == 3 and batch.borrowed and np.shares_memory(batch.data, x)
    kept = batch.owned()
    x[:] = -1
    assert kept.data.tolist() == [[0, 1], [2, 3], [4, 5]] and not kept.borrowed
    assert kept.owned() is kept


def test_dense_casts_are_range_checked() -> None:
    """§3.2: integers are cast when they fit; out-of-range integers and floats into integers are refused."""
    batch = normalize(Layout("dense", I2), np.array([-5, 300], dtype=np.int64), WHERE)
    assert batch.data.dtype == I2 and batch.data.tolist() == [-5, 300] and not batch.borrowed
    with pytest.raises(EncodingError, match=r"values in \[0, 40000\] do not fit .* int16 \[-32768, 32767\]"):
        normalize(Layout("dense", I2), np.array([0, 40000]), WHERE)
    with pytest.raises(EncodingError, match="float values cannot be stored"):
        normalize(Layout("dense", I2), np.array([1.0]), WHERE)
    with pytest.raises(EncodingError, match="cannot be stored as"):
        normalize(Layout("dense", F4), np.array(["1"]), WHERE)
    assert normalize(Layout("dense", F2), np.array([1, 2], np.int64), WHERE).data.dtype == F2


def test_float_casts_refuse_overflow_to_infinity() -> None:
    """§3.2: a finite value beyond the float dtype's range is refused (no warning, no silent inf); rounding is
    allowed as in numpy, and infinities given as such stay infinite."""
    cases = [
        (np.array([1.0, 1e6]), "value 1000000.0 \\(element 1 of the batch"),
        (np.array([0, 70000], np.int64), "value 70000 "),
        (np.array([np.iinfo(np.uint64).max], np.uint64), "value 18446744073709551615 "),
        (np.array([np.float32(-1e5)]), "value -100000.0 "),
    ]
    for value, match in cases:
        with pytest.raises(EncodingError, match=match) as err:
            normalize(Layout("dense", F2), value, WHERE)
        assert str(err.value).startswith(WHERE) and "largest finite value 65504" in str(err.value)
    with pytest.raises(EncodingError, match="float32"):
        normalize(Layout("ragged", F4), [np.array([1.0, 1e39])], WHERE)
    kept = normalize(Layout("dense", F2), np.array([np.inf, -np.inf, np.nan, 65504.0, 1e-10]), WHERE).data
    assert kept.dtype == F2 and kept[:2].tolist() == [np.inf, -np.inf] and np.isnan(kept[2])
    assert kept[3:].tolist() == [65504.0, 0.0]
    rounded = normalize(Layout("dense", np.dtype("<f8")), np.array([2**53 + 1], np.int64), WHERE).data
    assert rounded.tolist() == [float(2**53)]


def test_string_batch_bytes_count_utf8() -> None:
    """§7.5: a string batch's size counts UTF-8 bytes (it sizes the write buffer), not characters."""
    batch = normalize(Layout("string", None), ["日本", "a", ""], WHERE)
    assert batch.nbytes == 6 + 1 + 0 + 3 * VLEN_ELEMENT_BYTES


def test_dense_shape_must_match() -> None:
    """§6.2: every sample has the feature's sample shape."""
    with pytest.raises(
        EncodingError,
        match=r"samples have shape \(3,\), but the feature is dense with sample shape \(2,\).*'encoding': 'ragged'",
    ):
        normalize(Layout("dense", F4, (2,)), np.zeros((1, 3), np.float32), WHERE)
    with pytest.raises(EncodingError, match="different shapes"):
        normalize(Layout("dense", F4, (2,)), [np.zeros(2), np.zeros(3)], WHERE)
    with pytest.raises(EncodingError, match="expected an array or a list of samples"):
        normalize(Layout("dense", F4), 3.0, WHERE)


@pytest.mark.parametrize(
    ("value", "stored"),
    [(np.array([True, False, True]), [1, 0, 1]), (np.array([0, 1, 1], np.int64), [0, 1, 1]), ([True, False], [1, 0])],
)
def test_bools_are_stored_as_uint8(value: Any, stored: list[int]) -> None:
    """§3.3: a bool feature takes bool values or integers 0/1 and stores uint8 0/1."""
    # SPEC §3.3-R1
    batch = normalize(BOOL, value, WHERE)
    assert batch.data.dtype == U1 and batch.data.tolist() == stored


def test_bool_feature_refuses_other_numbers() -> None:
    """§3.3: integers other than 0/1 and floats are not bools."""
    for value in (np.array([0, 2]), np.array([0.0, 1.0])):
        with pytest.raises(EncodingError, match="bool values or integers 0/1"):
            normalize(BOOL, value, WHERE)


def test_strings_are_checked_and_decoded() -> None:
    """§3.4/§6.4: str values pass, UTF-8 bytes are decoded, NUL, bad UTF-8 and non-strings are refused."""
    # SPEC §3.4-R5: a NUL is refused, not stored truncated
    layout = Layout("string", None)
    batch = normalize(layout, ["é", b"caf\xc3\xa9", np.str_("x")], WHERE)
    assert batch.data == ["é", "café", "x"] and batch.n == 3
    assert batch.nbytes == 2 + 5 + 1 + 3 * VLEN_ELEMENT_BYTES  # UTF-8 bytes: "é" takes 2
    assert normalize(layout, np.array([b"ab", b"c"]), WHERE).data == ["ab", "c"]
    for value, match in [(["a\x00"], "NUL"), ([b"\xff"], "not UTF-8"), (["\udc80"], "lone surrogate"), ([1], "int")]:
        with pytest.raises(EncodingError, match=match):
            normalize(layout, value, WHERE)


def test_categorical_values_become_codes() -> None:
    """§6.5: class names (None for missing), integer codes and Categoricals become codes in [-1, K)."""
    assert normalize(CAT, ["dog", None, "cat"], WHERE).data.tolist() == [1, -1, 0]
    assert normalize(CAT, [1, -1], WHERE).data.tolist() == [1, -1]
    codes = normalize(CAT, Categorical(np.array([0, 1], np.int8), ["cat", "dog"]), WHERE).data
    assert codes.dtype == np.dtype("i1") and codes.tolist() == [0, 1]
    with pytest.raises(EncodingError, match="differ from the feature's"):
        normalize(CAT, Categorical([0], ["dog", "cat"]), WHERE)
    with pytest.raises(EncodingError, match=r"\['emu'\] are not among the class names"):
        normalize(CAT, ["cat", "emu"], WHERE)
    with pytest.raises(EncodingError, match=r"code 2 at sample 1 is outside \[-1, 2\)"):
        normalize(CAT, np.array([0, 2]), WHERE)
    with pytest.raises(EncodingError, match="must be 1-D"):
        normalize(CAT, np.zeros((2, 1), np.int64), WHERE)


def test_bytes_are_concatenated_with_lengths() -> None:
    """§6.6: bytes samples become one uint8 array and their lengths."""
    batch = normalize(Layout("bytes", U1), [b"ab", bytearray(b""), np.bytes_(b"xyz")], WHERE)
    assert batch.data.tobytes() == b"abxyz" and batch.lengths is not None and batch.lengths.tolist() == [2, 0, 3]
    with pytest.raises(EncodingError, match=r"takes bytes values, got \['str'\]"):
        normalize(Layout("bytes", U1), ["ab"], WHERE)


def test_ragged_rows_and_shapes() -> None:
    """§6.3: ragged samples become values and lengths (rows), or flat values, element counts and shapes."""
    rows = normalize(Layout("ragged", I2, (2,)), [np.zeros((3, 2), np.int8), np.ones((0, 2), np.int8)], WHERE)
    assert rows.data.shape == (3, 2) and rows.data.dtype == I2 and rows.lengths is not None
    assert rows.lengths.tolist() == [3, 0] and rows.shapes is None
    samples = [np.arange(6).reshape(2, 3), np.arange(2).reshape(2, 1)]
    flat = normalize(Layout("ragged", I2, shapes_ndim=2), samples, WHERE)
    assert flat.data.tolist() == [0, 1, 2, 3, 4, 5, 0, 1] and flat.lengths is not None and flat.shapes is not None
    assert flat.lengths.tolist() == [6, 2] and flat.shapes.tolist() == [[2, 3], [2, 1]]
    with pytest.raises(EncodingError, match="need sample_ndim"):
        normalize(Layout("ragged", I2, (2,)), [np.zeros((1, 3))], WHERE)
    with pytest.raises(EncodingError, match="has 1 axes"):
        normalize(Layout("ragged", I2, shapes_ndim=2), [np.zeros(3)], WHERE)
    empty = normalize(Layout("ragged", I2, (2,)), [], WHERE)
    assert empty.n == 0 and empty.data.shape == (0, 2)


@pytest.mark.parametrize(
    ("layout", "values"),
    [
        (Layout("dense", I2, (2,)), np.arange(20, dtype=np.int16).reshape(10, 2)),
        (Layout("string", None), [f"s{i}" for i in range(10)]),
        (Layout("ragged", I2, shapes_ndim=2), [np.full((i % 3 + 1, 2), i, np.int16) for i in range(10)]),
        (Layout("bytes", U1), [bytes(range(i)) for i in range(10)]),
    ],
    ids=["dense", "string", "ragged-shapes", "bytes"],
)
def test_concat_equals_normalizing_the_whole(layout: Layout, values: Any) -> None:
    """§6: batches joined in order equal the batch of all their samples."""
    parts = [normalize(layout, values[a:b], WHERE) for a, b in [(0, 3), (3, 3), (3, 10)]]
    joined, whole = concat(layout, parts), normalize(layout, values, WHERE)
    assert joined.n == whole.n == 10
    if isinstance(whole.data, list):
        assert joined.data == whole.data
    else:
        np.testing.assert_array_equal(joined.data, whole.data)
    for got, want in [(joined.lengths, whole.lengths), (joined.shapes, whole.shapes)]:
        assert (got is None and want is None) or np.array_equal(got, want)
    single = Batch(1, np.zeros(1))
    assert concat(layout, [single]) is single


@pytest.mark.parametrize(
    ("sizes", "min_n", "expected"),
    [
        ([1, 2, 8, 9, 1, 1], 8, [[1, 2], [8], [9], [1, 1]]),
        ([8, 8], 8, [[8], [8]]),
        ([1, 1, 1], 8, [[1, 1, 1]]),
        ([0, 20, 0], 8, [[0], [20], [0]]),
        ([3, 9, 2], None, [[3, 9, 2]]),
        ([], 8, []),
        ([], None, []),
    ],
)
def test_runs_join_small_batches_and_leave_large_ones_alone(
    sizes: list[int], min_n: int | None, expected: list[list[int]]
) -> None:
    """§7: batches of at least min_n samples form runs of their own; the small ones between them one run each."""
    batches = [Batch(n, np.zeros(n)) for n in sizes]
    got = runs(batches, min_n)
    assert [[p.n for p in run] for run in got] == expected
    flat = [p for run in got for p in run]
    assert len(flat) == len(batches) and all(a is b for a, b in zip(flat, batches, strict=True))
