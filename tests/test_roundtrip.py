"""Round trips h5ml.write -> h5ml.open: every encoding and dtype reads back equal (§3.2-§3.4, §6)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import h5ml
from h5ml.writer.writer import Categorical

NUMERIC_DTYPES = [
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "float16",
    "float32",
    "float64",
    "bool",
]
# HDF5 strings end at a NUL character (the writer refuses one), and surrogates are not UTF-8.
TEXT = st.text(st.characters(exclude_categories=["Cs"], exclude_characters="\x00"), max_size=12)
COMPRESSION = st.sampled_from([None, "gzip"])


def _elements(dtype: np.dtype[Any]) -> st.SearchStrategy[Any]:
    if dtype.kind == "f":  # NaN and both infinities drawn often, not only by chance
        special = st.sampled_from([np.nan, np.inf, -np.inf, -0.0])
        return st.one_of(special, hnp.from_dtype(dtype, allow_nan=False, allow_infinity=False))
    return hnp.from_dtype(dtype)


def _write_and_open(path: Path, columns: dict[str, Any], encodings: dict[str, str], compression: str | None) -> Any:
    h5ml.write(
        path,
        {"train": columns},
        metadata={"name": "roundtrip"},
        compression=compression,
        features={name: {"encoding": enc} for name, enc in encodings.items()},
    )
    return h5ml.open(path)


def _same_array(got: np.ndarray, want: np.ndarray) -> None:
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape
    assert np.array_equal(got, want, equal_nan=want.dtype.kind == "f")


@st.composite
def _dense(draw: st.DrawFn, dtypes: list[str]) -> tuple[np.ndarray, list[int]]:
    dtype = np.dtype(draw(st.sampled_from(dtypes)))
    # zero samples allowed; the writer refuses sample axes of length 0
    shape = (draw(st.integers(0, 6)), *draw(hnp.array_shapes(min_dims=0, max_dims=2, min_side=1, max_side=4)))
    values = draw(hnp.arrays(dtype, shape, elements=_elements(dtype)))
    indices = draw(st.lists(st.integers(0, shape[0] - 1), max_size=8)) if shape[0] else []
    return values, indices


def _check_dense(path: Path, values: np.ndarray, indices: list[int], compression: str | None) -> None:
    with _write_and_open(path, {"x": values}, {"x": "dense"}, compression) as ds:
        feat = ds["train"]["x"]
        assert feat.dtype == values.dtype and feat.sample_shape == values.shape[1:]
        _same_array(feat[:], values)
        _same_array(feat[indices], values[indices])
        if len(values):
            _same_array(np.asarray(feat[-1]), values[-1])


@given(_dense([d for d in NUMERIC_DTYPES if not d.startswith("float")]), COMPRESSION)
def test_dense_integers_and_bool(tmp_path: Path, case: tuple[np.ndarray, list[int]], compression: str | None) -> None:
    """§3.2/§3.3/§6.2: int8..uint64 (full ranges) and bool dense values read back equal, with the same dtype."""
    _check_dense(tmp_path / "d.h5", *case, compression)


@given(_dense(["float16", "float32", "float64"]), COMPRESSION)
def test_dense_floats(tmp_path: Path, case: tuple[np.ndarray, list[int]], compression: str | None) -> None:
    """§3.2/§6.2: float16/32/64 dense values, NaN, +inf, -inf and -0.0 included, read back equal."""
    _check_dense(tmp_path / "d.h5", *case, compression)


@given(st.lists(TEXT, max_size=12), COMPRESSION)
def test_strings_unicode(tmp_path: Path, texts: list[str], compression: str | None) -> None:
    """§3.4/§6.4: Unicode strings (empty, non-BMP) read back as the same str values."""
    with _write_and_open(tmp_path / "s.h5", {"s": texts}, {"s": "string"}, compression) as ds:
        got = ds["train"]["s"][:]
        assert got.dtype == object and got.tolist() == texts
        assert all(type(v) is str for v in got)
        order = list(range(len(texts)))[::-1] * 2
        assert ds["train"]["s"][order].tolist() == [texts[i] for i in order]


@st.composite
def _ragged(draw: st.DrawFn) -> tuple[list[np.ndarray], bool]:
    dtype = np.dtype(draw(st.sampled_from(NUMERIC_DTYPES)))
    multi = draw(st.booleans())
    n = draw(st.integers(1, 8))
    inner = draw(st.integers(1, 3))
    shapes = [
        (draw(st.integers(0, 4)), draw(st.integers(0, 3))) if multi else (draw(st.integers(0, 5)), inner)
        for _ in range(n)
    ]
    if all(s[1] == 0 for s in shapes):
        # every sample (k, 0): the writer takes a fixed trailing axis of length 0, which it refuses
        shapes[0] = (shapes[0][0], 1)
    samples = [draw(hnp.arrays(dtype, shape, elements=_elements(dtype))) for shape in shapes]
    return samples, multi


@given(_ragged(), COMPRESSION)
def test_ragged_every_dtype_and_shape(
    tmp_path: Path, case: tuple[list[np.ndarray], bool], compression: str | None
) -> None:
    """§6.3: ragged samples (zero-length ones too, varying in one or several axes) read back with their shapes."""
    samples, _ = case
    with _write_and_open(tmp_path / "r.h5", {"r": samples}, {"r": "ragged"}, compression) as ds:
        feat = ds["train"]["r"]
        got = feat[:]
        assert len(got) == len(samples)
        for g, w in zip(got, samples, strict=True):
            _same_array(g, w)
        # lengths() counts rows of `values`: elements when the writer stored `shapes`, else the first axis
        with_shapes = feat.sample_shape == (None, None)
        assert feat.lengths().tolist() == [s.size if with_shapes else s.shape[0] for s in samples]
        order = [len(samples) - 1, 0, len(samples) - 1]
        for g, i in zip(feat[order], order, strict=True):
            _same_array(g, samples[i])


@given(st.lists(st.binary(max_size=40), min_size=1, max_size=10), COMPRESSION)
def test_bytes(tmp_path: Path, blobs: list[bytes], compression: str | None) -> None:
    """§6.6: byte strings (empty ones too) read back equal, as bytes."""
    with _write_and_open(tmp_path / "b.h5", {"b": blobs}, {"b": "bytes"}, compression) as ds:
        feat = ds["train"]["b"]
        assert feat[:] == blobs and all(type(v) is bytes for v in feat[:])
        assert feat[[0, 0, -1]] == [blobs[0], blobs[0], blobs[-1]]
        assert feat.lengths().tolist() == [len(b) for b in blobs]


@st.composite
def _categorical(draw: st.DrawFn) -> tuple[np.ndarray, list[str]]:
    names = draw(st.lists(TEXT.filter(bool), min_size=1, max_size=6, unique=True))
    codes = draw(st.lists(st.integers(-1, len(names) - 1), min_size=1, max_size=15))
    return np.array(codes, dtype=np.int64), names


@given(_categorical())
def test_categorical_with_missing(tmp_path: Path, case: tuple[np.ndarray, list[str]]) -> None:
    """§6.5: codes (-1 = missing) and class names read back equal."""
    codes, names = case
    h5ml.write(tmp_path / "c.h5", {"train": {"c": Categorical(codes, names)}}, metadata={"name": "roundtrip"})
    with h5ml.open(tmp_path / "c.h5") as ds:
        feat = ds["train"]["c"]
        assert feat.class_names == names
        got = feat[:]
        assert got.dtype == np.int64 and got.tolist() == codes.tolist()
        assert feat[-1] == int(codes[-1]) and type(feat[-1]) is int


def test_all_encodings_in_one_split(tmp_path: Path) -> None:
    """§5/§6: one split holding every encoding reads back per sample and per batch (shuffled order, duplicates)."""
    rng = np.random.default_rng(11)
    n = 40
    lengths = rng.integers(0, 5, size=n)
    columns: dict[str, Any] = {
        "image": rng.integers(0, 255, size=(n, 3, 5), dtype=np.uint8),
        "score": rng.standard_normal(n),
        "flag": rng.integers(0, 2, size=n).astype(bool),
        "text": [f"{'é' * int(k)}𝄞{i}" for i, k in enumerate(lengths)],
        "label": Categorical(rng.integers(-1, 3, size=n), ["a", "b", "c"]),
        "audio": [rng.standard_normal(int(k)).astype(np.float32) for k in lengths],
        "png": [bytes(rng.integers(0, 256, size=int(k) * 2, dtype=np.uint8)) for k in lengths],
    }
    h5ml.write(tmp_path / "all.h5", {"train": columns}, metadata={"name": "all"}, compression="gzip")
    order = [*rng.permutation(n)[:15].tolist(), 3, 3]
    with h5ml.open(tmp_path / "all.h5") as ds:
        batch = ds["train"][order]
        assert np.array_equal(batch["image"], columns["image"][order])
        assert np.array_equal(batch["score"], columns["score"][order])
        assert batch["flag"].dtype == bool and np.array_equal(batch["flag"], columns["flag"][order])
        assert batch["text"].tolist() == [columns["text"][i] for i in order]
        assert batch["label"].tolist() == columns["label"].codes[order].tolist()
        for got, i in zip(batch["audio"], order, strict=True):
            _same_array(got, columns["audio"][i])
        assert batch["png"] == [columns["png"][i] for i in order]
        one = ds["train"][7]
        assert one["text"] == columns["text"][7] and one["png"] == columns["png"][7]


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_nan_and_infinities(tmp_path: Path, dtype: str) -> None:
    """§3.2: NaN, +inf and -inf survive the round trip in every float width."""
    values = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.5], dtype=dtype)
    h5ml.write(tmp_path / "f.h5", {"train": {"x": values}}, metadata={"name": "floats"})
    with h5ml.open(tmp_path / "f.h5") as ds:
        got = ds["train"]["x"][:]
        _same_array(got, values)
        assert np.array_equal(np.signbit(got), np.signbit(values))
