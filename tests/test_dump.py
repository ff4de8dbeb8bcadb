"""The JSON mapping of decoded content (SPEC.md Appendix B): :mod:`h5ml.tools.dump`."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import h5ml
from _files import Bytes, Categorical, Dense, Ragged, String, write_file
from h5ml.errors import FeatureNotFoundError, SplitNotFoundError
from h5ml.tools.dump import from_json_values, json_values, to_json_document


def strict_roundtrip(document: Any) -> Any:
    """Write with allow_nan=False (no bare NaN/Infinity) and read back refusing such tokens."""

    def refuse(token: str) -> Any:
        raise AssertionError(f"non-standard JSON token {token}")

    return json.loads(json.dumps(document, allow_nan=False), parse_constant=refuse)


@pytest.fixture
def every_kind(tmp_path: Path) -> Path:
    """A file (written with plain h5py) holding each value kind Appendix B maps."""
    return write_file(
        tmp_path / "kinds.h5",
        {
            "train": {
                "f32": Dense(np.array([[0.1, np.nan], [np.inf, -np.inf], [1.5, -0.0]], dtype=np.float32)),
                "f16": Dense(np.array([0.1, 65504.0, np.nan], dtype=np.float16)),
                "f64": Dense(np.array([1e300, 5e-324, 0.30000000000000004])),
                "i64": Dense(np.array([2**53 + 1, -(2**63), 2**63 - 1], dtype=np.int64)),
                "u64": Dense(np.array([2**64 - 1, 0, 2**53 + 1], dtype=np.uint64)),
                "i16be": Dense(np.array([-300, 0, 300], dtype=">i2")),
                "u8": Dense(np.array([0, 255, 7], dtype=np.uint8)),
                "flag": Dense(np.array([1, 0, 1], dtype=np.uint8), logical_bool=True),
                "text": String(["a cat", "猫", "ünïcode 🙂"]),
                "blob": Bytes([b"\x89PNG", b"", b"\x00\xff\x10"], media_type="image/png"),
                "label": Categorical(np.array([1, -1, 0], dtype=np.int8), ["cat", "dog"]),
                "audio": Ragged([np.array([1, 2, 3], np.int16), np.array([], np.int16), np.array([4], np.int16)]),
                "mask": Ragged(
                    [
                        np.arange(6, dtype=np.float32).reshape(2, 3),
                        np.ones((1, 2), np.float32),
                        np.zeros((0, 4), np.float32),
                    ],
                    with_shapes=True,
                ),
            },
            "test": {"u8": Dense(np.array([9], dtype=np.uint8))},
        },
    )


def test_document_maps_every_kind(every_kind: Path) -> None:
    """Appendix B: each value kind has its exact JSON form."""
    doc = strict_roundtrip(to_json_document(every_kind))
    assert doc["format_version"] == "1.2"
    assert doc["metadata"]["name"] == "test" and doc["metadata"]["complete"] == 1
    assert list(doc["splits"]) == ["test", "train"]  # ascending code points
    train = doc["splits"]["train"]
    assert train["num_samples"] == 3
    assert list(train["features"]) == sorted(train["features"])
    f = train["features"]
    assert f["f32"] == {
        "encoding": "dense",
        "dtype": "float32",
        "sample_shape": [2],
        "values": [[0.10000000149011612, "NaN"], ["Infinity", "-Infinity"], [1.5, -0.0]],
    }
    assert f["f16"]["dtype"] == "float16"
    assert f["f16"]["values"] == [0.0999755859375, 65504.0, "NaN"]
    assert f["f64"]["values"] == [1e300, 5e-324, 0.30000000000000004]
    assert f["i64"]["values"] == ["9007199254740993", "-9223372036854775808", "9223372036854775807"]
    assert f["u64"]["values"] == ["18446744073709551615", "0", "9007199254740993"]
    assert f["i16be"] == {"encoding": "dense", "dtype": "int16", "sample_shape": [], "values": [-300, 0, 300]}
    assert f["u8"]["values"] == [0, 255, 7]
    assert f["flag"] == {"encoding": "dense", "dtype": "bool", "sample_shape": [], "values": [True, False, True]}
    assert f["text"] == {"encoding": "string", "dtype": "str", "values": ["a cat", "猫", "ünïcode 🙂"]}
    assert f["blob"] == {
        "encoding": "bytes",
        "dtype": "bytes",
        "media_type": "image/png",
        "values": ["iVBORw==", "", "AP8Q"],
    }
    assert f["label"] == {
        "encoding": "categorical",
        "dtype": "int8",
        "class_names": ["cat", "dog"],
        "values": [1, -1, 0],
    }
    assert f["audio"] == {"encoding": "ragged", "dtype": "int16", "values": [[1, 2, 3], [], [4]]}
    assert f["mask"] == {
        "encoding": "ragged",
        "dtype": "float32",
        "shapes": [[2, 3], [1, 2], [0, 4]],
        "values": [[[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]], [[1.0, 1.0]], []],
    }


def test_text_is_utf8_json(every_kind: Path) -> None:
    """Strings stay themselves in the JSON text written with ensure_ascii=False."""
    text = json.dumps(to_json_document(every_kind, feature="text"), ensure_ascii=False, allow_nan=False)
    assert "猫" in text and "🙂" in text


def test_selection_by_split_and_feature(every_kind: Path) -> None:
    doc = to_json_document(every_kind, feature="u8")
    assert {s: list(v["features"]) for s, v in doc["splits"].items()} == {"test": ["u8"], "train": ["u8"]}
    doc = to_json_document(every_kind, split="test")
    assert doc["splits"] == {
        "test": {
            "num_samples": 1,
            "features": {"u8": {"encoding": "dense", "dtype": "uint8", "sample_shape": [], "values": [9]}},
        }
    }
    doc = to_json_document(every_kind, feature="audio")
    assert list(doc["splits"]) == ["train"]
    with pytest.raises(SplitNotFoundError, match="'nope'"):
        to_json_document(every_kind, split="nope")
    with pytest.raises(FeatureNotFoundError, match="'nope'"):
        to_json_document(every_kind, feature="nope")
    with pytest.raises(FeatureNotFoundError, match="'audio'"):
        to_json_document(every_kind, split="test", feature="audio")


def test_from_json_values_inverts_the_mapping(every_kind: Path) -> None:
    """Decoding the dump gives back what the reader returns, bit for bit."""
    doc = strict_roundtrip(to_json_document(every_kind))
    with h5ml.open(every_kind) as ds:
        for name, entry in doc["splits"]["train"]["features"].items():
            stored = ds["train"][name][:]
            decoded = from_json_values(entry)
            if entry["encoding"] in ("dense",):
                assert isinstance(decoded, np.ndarray)
                assert decoded.dtype == stored.dtype and decoded.shape == stored.shape
                assert decoded.tobytes() == stored.tobytes(), name
            elif entry["encoding"] == "ragged":
                assert len(decoded) == len(stored)
                for a, b in zip(decoded, stored, strict=True):
                    assert a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
            elif entry["encoding"] == "bytes":
                assert decoded == stored
            else:
                assert list(decoded) == list(stored)


def test_writer_file_dumps_like_its_source(tmp_path: Path) -> None:
    """A file written by the reference writer dumps to the values it was given."""
    rng = np.random.default_rng(1)
    x = rng.normal(size=(12, 2, 3)).astype(np.float32)
    ids = rng.integers(-(2**62), 2**62, 12, dtype=np.int64)
    words = [f"w{i}é" for i in range(12)]
    clips = [rng.integers(-5, 5, n).astype(np.int32) for n in rng.integers(0, 6, 12)]
    h5ml.write(tmp_path / "w.h5", {"train": {"x": x, "id": ids, "word": words, "clip": clips}}, metadata={"name": "w"})
    f = to_json_document(tmp_path / "w.h5")["splits"]["train"]["features"]
    assert f["x"]["values"] == x.astype(np.float64).tolist()
    assert f["x"]["sample_shape"] == [2, 3]
    assert f["id"]["values"] == [str(int(v)) for v in ids]
    assert f["word"]["values"] == words
    assert f["clip"]["values"] == [c.tolist() for c in clips]


def test_bytes_values_are_padded_base64(every_kind: Path) -> None:
    values = to_json_document(every_kind, feature="blob")["splits"]["train"]["features"]["blob"]["values"]
    assert [base64.b64decode(v, validate=True) for v in values] == [b"\x89PNG", b"", b"\x00\xff\x10"]
    assert all(len(v) % 4 == 0 for v in values)


def test_json_values_scalars_and_refusals() -> None:
    assert json_values(np.array(np.float32(0.1))) == 0.10000000149011612
    assert json_values(np.array([True, False])) == [True, False]
    assert json_values(np.array([1, 2], dtype=np.uint32)) == [1, 2]
    assert json_values(np.array([b"ab", b"\xc3\xa9"])) == ["ab", "é"]
    with pytest.raises(TypeError, match="complex128"):
        json_values(np.array([1 + 2j]))


@given(
    hnp.arrays(
        dtype=st.sampled_from([np.float16, np.float32, np.float64]),
        shape=hnp.array_shapes(min_dims=1, max_dims=3, max_side=4),
        elements={"allow_nan": True, "allow_infinity": True},
    )
)
def test_float_mapping_round_trips(array: np.ndarray) -> None:
    """Appendix B: a float written then read back is the same value (NaN stays NaN, signs of zero kept)."""
    entry = {"encoding": "dense", "dtype": array.dtype.name, "sample_shape": list(array.shape[1:])}
    entry["values"] = strict_roundtrip(json_values(array))
    decoded = from_json_values(entry)
    assert isinstance(decoded, np.ndarray)
    nan = np.isnan(array)
    assert np.array_equal(np.isnan(decoded), nan)
    assert decoded[~nan].tobytes() == array[~nan].tobytes()


@given(hnp.arrays(dtype=st.sampled_from([np.int64, np.uint64, np.int8, np.uint32]), shape=st.integers(0, 6)))
def test_integer_mapping_round_trips(array: np.ndarray) -> None:
    """Appendix B: 64-bit integers as decimal strings, others as numbers; both read back exactly."""
    values = strict_roundtrip(json_values(array))
    wide = array.dtype.itemsize == 8
    assert all(isinstance(v, str) if wide else isinstance(v, int) for v in values)
    decoded = from_json_values({"encoding": "dense", "dtype": array.dtype.name, "sample_shape": [], "values": values})
    assert isinstance(decoded, np.ndarray)
    assert decoded.dtype == array.dtype and np.array_equal(decoded, array)
