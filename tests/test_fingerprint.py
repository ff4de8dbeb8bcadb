"""Content fingerprints of SPEC.md §8 (h5ml.model.fingerprint).

Expected values are computed here with hashlib over bytes built by hand from
the canonical-bytes rule of §8.2, not with the module under test.
"""

from __future__ import annotations

import hashlib
import itertools
import struct
import tracemalloc
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import pytest

from h5ml.errors import EncodingError
from h5ml.model.fingerprint import FeatureHasher, canonical_dtype, file_fingerprint, fingerprint_feature


def sha(data: bytes) -> bytes:
    return hashlib.sha256(data).digest()


def expected(header: str, *components: bytes) -> str:
    """§8.2: sha256(header + "\\n" + digests of the components)."""
    return "sha256:" + hashlib.sha256(header.encode() + b"\n" + b"".join(sha(c) for c in components)).hexdigest()


def strings_bytes(values: Sequence[str]) -> bytes:
    return b"".join(struct.pack("<Q", len(v.encode())) + v.encode() for v in values)


def i64(values: Sequence[int]) -> bytes:
    return struct.pack(f"<{len(values)}q", *values)


# -- known values, one per encoding -----------------------------------------


def test_dense_known_value() -> None:
    """§8.2 dense: header with dtype and sample shape, then the values little-endian in C order."""
    x = np.array([[1.5, -2.0], [0.0, 3.25], [7.0, 8.0]], dtype="<f4")
    header = '{"dtype":"<f4","encoding":"dense","num_samples":3,"sample_shape":[2]}'
    raw = struct.pack("<6f", 1.5, -2.0, 0.0, 3.25, 7.0, 8.0)
    assert fingerprint_feature("dense", x) == expected(header, raw)


def test_bool_known_value_and_uint8_storage() -> None:
    """§3.3/§8.2: booleans hash as one byte 0/1 with dtype "|b1", whether given as bool or as their uint8 storage."""
    header = '{"dtype":"|b1","encoding":"dense","num_samples":4,"sample_shape":[]}'
    want = expected(header, bytes([1, 0, 0, 1]))
    assert fingerprint_feature("dense", np.array([True, False, False, True])) == want
    assert fingerprint_feature("dense", np.array([1, 0, 0, 1], dtype=np.uint8), dtype=bool) == want


def test_string_known_value() -> None:
    """§8.2 string: each value as uint64 LE byte length then its UTF-8 bytes."""
    values = ["a", "héllo", "", "日本"]
    header = '{"dtype":"str","encoding":"string","num_samples":4,"sample_shape":[]}'
    assert fingerprint_feature("string", values) == expected(header, strings_bytes(values))
    # h5py returns variable-length strings as UTF-8 bytes: the same content
    assert fingerprint_feature("string", [v.encode() for v in values]) == expected(header, strings_bytes(values))


def test_categorical_known_value() -> None:
    """§8.2 categorical: codes as int64 LE (whatever their stored width), then the class names as strings."""
    names = ["cat", "dog", "émeu"]
    header = '{"dtype":"<i8","encoding":"categorical","num_samples":4,"sample_shape":[]}'
    want = expected(header, i64([0, -1, 2, 2]), strings_bytes(names))
    assert fingerprint_feature("categorical", np.array([0, -1, 2, 2], dtype=np.int8), class_names=names) == want
    assert fingerprint_feature("categorical", np.array([0, -1, 2, 2], dtype=">i4"), class_names=names) == want


def test_ragged_known_value() -> None:
    """§8.2 ragged: absolute int64 offsets from 0, values LE in C order, and the digest of b"" without shapes."""
    values = np.array([[1, 2], [3, 4], [5, 6]], dtype="<i2")
    header = '{"dtype":"<i2","encoding":"ragged","num_samples":3,"sample_shape":[]}'
    raw = struct.pack("<6h", 1, 2, 3, 4, 5, 6)
    want = expected(header, i64([0, 2, 2, 3]), raw, b"")
    assert fingerprint_feature("ragged", values, lengths=[2, 0, 1]) == want


def test_ragged_with_shapes_known_value() -> None:
    """§8.2 ragged: samples varying in several axes also hash their shapes as int64."""
    values = np.arange(8, dtype="<f8")
    shapes = np.array([[1, 2], [3, 2]])
    header = '{"dtype":"<f8","encoding":"ragged","num_samples":2,"sample_shape":[]}'
    want = expected(header, i64([0, 2, 8]), values.tobytes(), i64([1, 2, 3, 2]))
    assert fingerprint_feature("ragged", values, lengths=[2, 6], shapes=shapes) == want


def test_bytes_known_value() -> None:
    """§8.2 bytes: offsets as int64 LE, then the concatenated bytes."""
    blobs = [b"\x89PNG", b"", b"ab"]
    header = '{"dtype":"|u1","encoding":"bytes","num_samples":3,"sample_shape":[]}'
    want = expected(header, i64([0, 4, 4, 6]), b"\x89PNGab")
    assert fingerprint_feature("bytes", blobs) == want
    flat = np.frombuffer(b"\x89PNGab", dtype=np.uint8)
    assert fingerprint_feature("bytes", flat, lengths=[4, 0, 2]) == want


def test_empty_features_known_values() -> None:
    """§8.2 with N = 0: ragged offsets are the single 0."""
    header = '{"dtype":"<f4","encoding":"ragged","num_samples":0,"sample_shape":[]}'
    assert fingerprint_feature("ragged", np.zeros(0, "<f4"), lengths=[]) == expected(header, i64([0]), b"", b"")
    header = '{"dtype":"<u2","encoding":"dense","num_samples":0,"sample_shape":[5]}'
    assert fingerprint_feature("dense", np.zeros((0, 5), "<u2")) == expected(header, b"")


def test_file_fingerprint_known_value() -> None:
    """§8.3: sha256 over "<split>/<feature> <fp>" lines sorted by split, then feature (code point order)."""
    fp1, fp2, fp3, fp4 = ("sha256:" + c * 64 for c in "1234")
    mapping = {("train", "y"): fp1, ("a b", "z"): fp2, ("train", "x"): fp3, ("a", "z"): fp4}
    # ("a", ...) < ("a b", ...) although "a/z" > "a b/z" as plain strings
    lines = f"a/z {fp4}\na b/z {fp2}\ntrain/x {fp3}\ntrain/y {fp1}\n"
    assert file_fingerprint(mapping) == "sha256:" + hashlib.sha256(lines.encode()).hexdigest()
    assert file_fingerprint({}) == "sha256:" + hashlib.sha256(b"").hexdigest()


def test_file_fingerprint_rejects_malformed() -> None:
    """§8.1: a fingerprint is "sha256:" + 64 lowercase hex digits."""
    with pytest.raises(EncodingError, match="/train/x"):
        file_fingerprint({("train", "x"): "sha256:" + "A" * 64})
    with pytest.raises(EncodingError, match="/train/x"):
        file_fingerprint({("train", "x"): "md5:" + "0" * 32})


# -- streaming, storage independence --------------------------------------------

RNG_SEED = 20240611


def _ragged_parts(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    lengths = rng.integers(0, 6, n)
    values = rng.standard_normal((int(lengths.sum()), 3)).astype("<f4")
    return lengths, values


@pytest.mark.parametrize("cuts", [[0, 17], [5, 5, 11], [1, 2, 3, 4, 5, 6, 7, 8, 9], [16, 17]], ids=str)
def test_streaming_equals_one_shot(cuts: list[int]) -> None:
    """§8.2: feeding samples in batches (empty ones included) gives the one-shot fingerprint for every encoding."""
    rng = np.random.default_rng(RNG_SEED)
    n = 17
    dense = rng.integers(-100, 100, (n, 2, 3)).astype("<i4")
    strings = [f"s{i}" * int(i % 4) for i in range(n)]
    codes = rng.integers(-1, 4, n)
    names = ["a", "b", "c", "d"]
    lengths, values = _ragged_parts(rng, n)
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    shapes = np.stack([lengths, np.ones(n, dtype=np.int64)], axis=1)
    blobs = [bytes(rng.integers(0, 256, i % 5, dtype=np.uint8)) for i in range(n)]
    bounds = [0, *cuts, n]
    hashers = {
        "dense": FeatureHasher("dense", "<i4", (2, 3)),
        "string": FeatureHasher("string"),
        "categorical": FeatureHasher("categorical", class_names=names),
        "ragged": FeatureHasher("ragged", "<f4"),
        "shapes": FeatureHasher("ragged", "<f4"),
        "bytes": FeatureHasher("bytes"),
    }
    for a, b in itertools.pairwise(bounds):
        hashers["dense"].update_dense(dense[a:b])
        hashers["string"].update_strings(strings[a:b])
        hashers["categorical"].update_codes(codes[a:b])
        hashers["ragged"].update_ragged(lengths[a:b], values[offsets[a] : offsets[b]])
        hashers["shapes"].update_ragged(lengths[a:b], values[offsets[a] : offsets[b]].reshape(-1, 3), shapes[a:b])
        blob_lengths = [len(x) for x in blobs[a:b]]
        hashers["bytes"].update_ragged(blob_lengths, np.frombuffer(b"".join(blobs[a:b]), dtype=np.uint8))
    assert hashers["dense"].fingerprint() == fingerprint_feature("dense", dense)
    assert hashers["string"].fingerprint() == fingerprint_feature("string", strings)
    assert hashers["categorical"].fingerprint() == fingerprint_feature("categorical", codes, class_names=names)
    assert hashers["ragged"].fingerprint() == fingerprint_feature("ragged", values, lengths=lengths)
    assert hashers["shapes"].fingerprint() == fingerprint_feature("ragged", values, lengths=lengths, shapes=shapes)
    assert hashers["bytes"].fingerprint() == fingerprint_feature("bytes", blobs)
    assert all(h.num_samples == n for h in hashers.values())


def test_fingerprint_can_be_taken_midway() -> None:
    """§8.2: asking for the fingerprint does not end the stream."""
    h = FeatureHasher("dense", "<f8", ())
    h.update_dense(np.array([1.0, 2.0]))
    first = h.fingerprint()
    assert first == fingerprint_feature("dense", np.array([1.0, 2.0]))
    assert h.fingerprint() == first
    h.update_dense(np.array([3.0]))
    assert h.fingerprint() == fingerprint_feature("dense", np.array([1.0, 2.0, 3.0]))


STORAGE = [
    {"chunks": None},
    {"chunks": (7, 3)},
    {"chunks": (32, 3), "compression": "gzip", "compression_opts": 9, "shuffle": True},
    {"chunks": (1, 1), "compression": "gzip", "fletcher32": True},
    {"chunks": (5, 3), "dtype": ">f8"},
]


@pytest.mark.parametrize("storage", STORAGE, ids=lambda s: ",".join(f"{k}={v}" for k, v in s.items()))
def test_storage_does_not_change_the_fingerprint(tmp_path: Path, storage: dict[str, Any]) -> None:
    """§8.2: rechunking, recompressing or changing byte order keeps the fingerprint of data read back."""
    rng = np.random.default_rng(RNG_SEED + 1)
    x = rng.standard_normal((50, 3))
    lengths, values = _ragged_parts(rng, 50)
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    options = dict(storage)
    dtype = options.pop("dtype", "<f8")
    with h5py.File(tmp_path / "s.h5", "w") as f:
        f.create_dataset("x", data=x, dtype=dtype, **options)
        vchunks = options.pop("chunks")
        f.create_dataset("values", data=values, chunks=vchunks, **options)
        f.create_dataset("offsets", data=offsets, chunks=None if vchunks is None else (vchunks[0],), **options)
    with h5py.File(tmp_path / "s.h5", "r") as f:
        assert f["x"].chunks == storage["chunks"]
        stored_x = f["x"][:]
        h = FeatureHasher("ragged", f["values"].dtype)
        for a in range(0, 50, 8):  # read back in batches, as a deep validator does
            off = f["offsets"][a : min(50, a + 8) + 1]
            h.update_ragged(np.diff(off), f["values"][off[0] : off[-1]])
    assert stored_x.dtype == np.dtype(dtype)
    assert fingerprint_feature("dense", stored_x) == fingerprint_feature("dense", x)
    assert h.fingerprint() == fingerprint_feature("ragged", values, lengths=lengths)


def test_byte_order_independence() -> None:
    """§8.2: big-endian arrays give the fingerprint of their little-endian twins."""
    rng = np.random.default_rng(RNG_SEED + 2)
    for dtype in ("f2", "f4", "f8", "i2", "i4", "i8", "u2", "u4", "u8"):
        le = rng.integers(0, 100, (6, 2)).astype("<" + dtype)
        assert fingerprint_feature("dense", le.astype(">" + dtype)) == fingerprint_feature("dense", le)
        be_values = le.reshape(-1).astype(">" + dtype)
        assert fingerprint_feature("ragged", be_values, lengths=[4, 8]) == fingerprint_feature(
            "ragged", le.reshape(-1), lengths=[4, 8]
        )
    assert canonical_dtype(">f4") == "<f4" and canonical_dtype("u1") == "|u1" and canonical_dtype(bool) == "|b1"


def test_any_memory_layout_gives_the_fingerprint_of_the_c_order_bytes() -> None:
    """§8.2.2: strided, Fortran-ordered, big-endian and read-only arrays hash as their C-order little-endian bytes."""
    rng = np.random.default_rng(RNG_SEED + 4)
    x = rng.standard_normal((12, 5, 3)).astype("<f4")
    header = '{"dtype":"<f4","encoding":"dense","num_samples":6,"sample_shape":[5,3]}'
    want = expected(header, x[::2].tobytes())
    strided, fortran, big = x[::2], np.asfortranarray(x[::2]), x[::2].astype(">f4")
    frozen = np.ascontiguousarray(x[::2])
    frozen.flags.writeable = False
    for values in (strided, fortran, big, frozen):
        assert fingerprint_feature("dense", values) == want
    codes = np.arange(10, dtype=">i2")[::3]
    assert fingerprint_feature("categorical", codes, class_names=["a"]) == expected(
        '{"dtype":"<i8","encoding":"categorical","num_samples":4,"sample_shape":[]}',
        i64([0, 3, 6, 9]),
        strings_bytes(["a"]),
    )


def test_contiguous_little_endian_values_are_hashed_without_a_copy() -> None:
    """§8.2: values already in C order and little-endian are read in place (no copy of the batch is made)."""
    x = np.ones((1 << 22,), dtype="<f8")  # 32 MiB
    h = FeatureHasher("dense", "<f8")
    tracemalloc.start()
    try:
        h.update_dense(x)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < x.nbytes // 8
    assert h.fingerprint() == fingerprint_feature("dense", x.astype(">f8"))


@pytest.mark.parametrize(
    ("a", "b"),
    [
        (("dense", np.zeros((4, 2), "<f4")), ("dense", np.zeros((2, 4), "<f4"))),  # same bytes, other shape
        (("dense", np.zeros(4, "<i4")), ("dense", np.zeros(4, "<u4"))),  # other dtype
        (("string", ["ab", "c"]), ("string", ["a", "bc"])),  # lengths delimit values
        (("bytes", [b"ab", b"c"]), ("bytes", [b"a", b"bc"])),
        (("dense", np.array([1.0, 2.0])), ("dense", np.array([2.0, 1.0]))),  # order matters
    ],
)
def test_different_content_different_fingerprint(a: tuple[str, Any], b: tuple[str, Any]) -> None:
    """§8.2: the header and length prefixes keep differently shaped content apart."""
    assert fingerprint_feature(*a) != fingerprint_feature(*b)


def test_ragged_boundaries_and_class_names_matter() -> None:
    """§8.2: moving a sample boundary, or renaming a class, changes the fingerprint."""
    v = np.arange(6, dtype="<i8")
    assert fingerprint_feature("ragged", v, lengths=[3, 3]) != fingerprint_feature("ragged", v, lengths=[2, 4])
    codes = np.array([0, 1])
    assert fingerprint_feature("categorical", codes, class_names=["a", "b"]) != fingerprint_feature(
        "categorical", codes, class_names=["a", "c"]
    )


def test_errors() -> None:
    """Misuse raises EncodingError with what was wrong."""
    with pytest.raises(EncodingError, match="unknown encoding"):
        FeatureHasher("tensor", "<f4")
    with pytest.raises(EncodingError, match="needs the values' dtype"):
        FeatureHasher("dense")
    with pytest.raises(EncodingError, match="class names"):
        FeatureHasher("categorical")
    with pytest.raises(EncodingError, match="storage profile"):
        FeatureHasher("dense", "c8")
    h = FeatureHasher("dense", "<f4", (2,))
    with pytest.raises(EncodingError, match="sample shape"):
        h.update_dense(np.zeros((3, 3), "<f4"))
    with pytest.raises(EncodingError, match="dtype"):
        h.update_dense(np.zeros((3, 2), "<f8"))
    with pytest.raises(EncodingError, match="cannot take string"):
        h.update_strings(["a"])
    r = FeatureHasher("ragged", "<f4")
    with pytest.raises(EncodingError, match="add up to 3"):
        r.update_ragged([1, 2], np.zeros(4, "<f4"))
    with pytest.raises(EncodingError, match=">= 0"):
        r.update_ragged([-1, 1], np.zeros(0, "<f4"))
    with pytest.raises(EncodingError, match="shapes"):
        FeatureHasher("bytes").update_ragged([1], np.zeros(1, np.uint8), [[1]])
    with pytest.raises(EncodingError, match="str"):
        FeatureHasher("string").update_strings([3])  # type: ignore[list-item]
    with pytest.raises(EncodingError, match="integer"):
        FeatureHasher("categorical", class_names=["a"]).update_codes(np.array([0.5]))
