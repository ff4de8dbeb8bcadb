"""User-facing value types and in-memory columns (h5ml.model.values): Categorical, FeatureSpec, the features= table."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import h5ml.writer.writer
from h5ml.errors import EncodingError, WriterError
from h5ml.model.values import (
    Categorical,
    FeatureSpec,
    SpecTable,
    as_categorical,
    column_length,
    column_nbytes,
    dense_array,
    is_bytes,
    is_text,
    take,
    text_problem,
    to_list,
    utf8_nbytes,
)


def test_writer_re_exports_the_value_types() -> None:
    """The documented import path h5ml.writer.writer.Categorical / FeatureSpec names the same classes."""
    assert h5ml.writer.writer.Categorical is Categorical and h5ml.writer.writer.FeatureSpec is FeatureSpec


def test_categorical_holds_codes_and_names() -> None:
    """§6.5: codes are a 1-D integer array; class names become a tuple."""
    c = Categorical([0, -1, 2], ["a", "b", "c"])
    assert c.codes.tolist() == [0, -1, 2] and c.class_names == ("a", "b", "c") and len(c) == 3
    assert repr(c) == "Categorical(<3 codes>, class_names=['a', 'b', 'c'])"
    assert len(Categorical([], ["a"])) == 0  # an empty list has dtype float64: accepted when empty
    for bad in ([0.5], [[0, 1]], np.int64(3)):
        with pytest.raises(EncodingError, match="1-D integer array"):
            Categorical(bad, ["a"])


def test_as_categorical_converts_pandas_like_objects_only() -> None:
    """§6.5: an object with .codes and .categories becomes a Categorical with str names; others pass through."""

    class PandasLike:
        codes = np.array([1, 0], np.int8)
        categories = (10, 20)

    got = as_categorical(PandasLike())
    assert isinstance(got, Categorical) and got.class_names == ("10", "20") and got.codes.tolist() == [1, 0]
    x = np.zeros(2)
    c = Categorical([0], ["a"])
    assert as_categorical(x) is x and as_categorical(c) is c


def test_spec_table_merges_split_specific_options() -> None:
    """§6.1: "split/feature" options override the "feature" options field by field; dicts are accepted."""
    table = SpecTable({"x": {"role": "input", "units": "V"}, "test/x": FeatureSpec(units="mV")})
    assert table.get("train", "x") == FeatureSpec(role="input", units="V")
    assert table.get("test", "x") == FeatureSpec(role="input", units="mV")
    assert table.get("test", "y") == FeatureSpec()
    assert SpecTable(None).specs == {}


def test_spec_table_refuses_unknown_options_and_unused_keys() -> None:
    """Options are FeatureSpec's fields; write() checks that every key names a feature."""
    with pytest.raises(WriterError, match=r"features\['x'\] has unknown option\(s\) \['colour'\]"):
        SpecTable({"x": {"colour": "red"}})
    table = SpecTable({"x": {}, "train/x": {}, "test/y": {}})
    with pytest.raises(WriterError, match=r"names \['test/y'\], which match no feature"):
        table.check_used({"train": {"x": 1}, "test": {"x": 2}})
    table.check_used({"train": {"x": 1}, "test": {"y": 2}})


def test_value_kinds() -> None:
    """§3.4/§6.6: str and numpy.str_ are text; bytes-like values are bytes; arrays list as Python values."""
    assert is_text("a") and is_text(np.str_("a")) and not is_text(b"a")
    assert all(is_bytes(v) for v in (b"a", bytearray(b"a"), memoryview(b"a"), np.bytes_(b"a")))
    assert not is_bytes("a")
    listed = to_list(np.array([1, 2], np.int8))
    assert listed == [1, 2] and type(listed[0]) is int
    assert to_list((1, "a")) == [1, "a"]


def test_dense_array_needs_a_sample_axis_and_one_shape() -> None:
    """§6.2: dense samples stack into (n, *sample_shape)."""
    assert dense_array([[1, 2], [3, 4]], "w").shape == (2, 2)
    with pytest.raises(EncodingError, match="w: dense values need a sample axis"):
        dense_array(np.float32(1), "w")
    with pytest.raises(EncodingError, match="with the ragged encoding"):
        dense_array([np.zeros(2), np.zeros(3)], "w")


@pytest.mark.parametrize(
    ("column", "length", "nbytes"),
    [
        (np.zeros((4, 3), np.float32), 4, 48),
        (Categorical(np.zeros(5, np.int16), ["a"]), 5, 10),
        (["ab", "é"], 2, 4),  # UTF-8 bytes: "é" takes 2
        ([b"abc", bytearray(b"d")], 2, 4),
        ([np.zeros(2), np.zeros(3, np.int8)], 2, 19),
        (np.float32(1), None, None),
        ("abc", None, None),
        (b"abc", None, None),
        (3, None, None),
    ],
)
def test_column_length_and_bytes(column: Any, length: int | None, nbytes: int | None) -> None:
    """§5.3: a column is a sequence of samples; its byte size sizes write()'s blocks."""
    assert column_length(column) == length
    if nbytes is not None:
        assert column_nbytes(column) == nbytes


def test_take_keeps_the_column_kind() -> None:
    """§7.6: take() selects samples by slice or permutation from arrays, Categoricals and lists."""
    order = np.array([2, 0])
    assert take(np.arange(3), order).tolist() == [2, 0]
    cat = take(Categorical([0, 1, -1], ["a", "b"]), order)
    assert isinstance(cat, Categorical) and cat.codes.tolist() == [-1, 0] and cat.class_names == ("a", "b")
    assert take(["x", "y", "z"], order) == ["z", "x"]
    assert take(["x", "y", "z"], slice(1, 3)) == ["y", "z"]


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("plain é 日本", None),
        ("", None),
        ("a\x00b", "contains a NUL character (U+0000), which HDF5 cannot store"),
        ("x\udcff", "contains a lone surrogate (U+D800-U+DFFF), which has no UTF-8 form"),
    ],
)
def test_text_problem(text: str, problem: str | None) -> None:
    """§3.4: HDF5 cannot store NUL, and lone surrogates have no UTF-8 form."""
    assert text_problem(text) == problem


def test_utf8_nbytes() -> None:
    """UTF-8 byte counts: ASCII 1 byte, é 2, 日 3, a lone surrogate 3."""
    assert [utf8_nbytes(t) for t in ("abc", "é", "日本", "\udcff", "")] == [3, 2, 6, 3, 0]


def test_feature_spec_conflicts() -> None:
    """§6.1: fields both specs give with different values conflict; equal dtypes and class names do not."""
    a = FeatureSpec(dtype="f4", role="target", class_names=["x", "y"], sample_rate=8000)
    same = FeatureSpec(dtype=np.float32, class_names=("x", "y"), sample_rate=8000.0, units="m")
    assert a.conflicts(same) == [] and a.merged(same).units == "m"
    other = FeatureSpec(dtype="f8", role="input", compression=False)
    assert a.conflicts(other) == ["dtype: 'f4' vs 'f8'", "role: 'target' vs 'input'"]


def test_spec_table_tracks_used_keys() -> None:
    """§6.1: keys are marked used per feature; unused() lists the rest, optionally for one split."""
    table = SpecTable({"x": {"role": "target"}, "train/x": {"units": "m"}, "test/y": {}, "z": FeatureSpec()})
    assert table.get("train", "x") == FeatureSpec(role="target", units="m") and table.used == set()
    table.mark_used("train", "x")
    assert table.unused() == ["test/y", "z"] and table.unused("test") == ["test/y"] and table.unused("train") == []
    table.mark_used("test", "q")  # names no key: nothing changes
    assert table.unused() == ["test/y", "z"]


@pytest.mark.parametrize(
    ("features", "match"),
    [
        ([("x", {})], "features= must be a dict"),
        ({3: {}}, "keys must be 'feature' or 'split/feature' strings"),
        ({"x": "target"}, "must be a FeatureSpec or a dict of its fields"),
    ],
)
def test_spec_table_refuses_malformed_options(features: Any, match: str) -> None:
    """§6.1: features= is a dict of str keys to FeatureSpec or dicts; anything else is a WriterError."""
    with pytest.raises(WriterError, match=match):
        SpecTable(features)
