"""Feature layouts (h5ml.model.layout, §6): declared, inferred from values, read back from files, and attributes (§6.1)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import h5py
import numpy as np
import pytest

from h5ml import spec
from h5ml.errors import EncodingError, WriterError
from h5ml.model.layout import (
    DEFAULT_MEDIA_TYPE,
    Layout,
    declared_layout,
    feature_attrs,
    infer_layout,
    main_dataset,
    stored_layout,
)
from h5ml.model.values import Categorical, FeatureSpec
from h5ml.writer.writer import write

WHERE = "f.h5:/train/x"
F4, F8, U1, I1, I2 = (np.dtype(t) for t in ("<f4", "<f8", "|u1", "|i1", "<i2"))


class PandasLike:
    """The two attributes of pandas.Categorical the writer relies on."""

    def __init__(self) -> None:
        self.codes = np.array([1, -1, 0], dtype=np.int8)
        self.categories = ["lo", "hi"]

    def __len__(self) -> int:
        return 3


INFERRED: list[tuple[str, Any, FeatureSpec, Layout]] = [
    ("dense", np.zeros((3, 2), np.float32), FeatureSpec(), Layout("dense", F4, (2,))),
    ("dense big-endian", np.zeros(3, ">i2"), FeatureSpec(), Layout("dense", I2)),
    ("dense list", [np.zeros(2), np.ones(2)], FeatureSpec(), Layout("dense", F8, (2,))),
    ("dense cast", np.zeros(3), FeatureSpec(dtype="float32"), Layout("dense", F4)),
    ("bool", np.array([True, False]), FeatureSpec(), Layout("dense", U1, (), logical_bool=True)),
    ("numpy str", np.array(["a", "bc"]), FeatureSpec(), Layout("string", None)),
    ("list of str", ["a", "bc"], FeatureSpec(), Layout("string", None)),
    ("Categorical", Categorical([0, 1], ["x", "y"]), FeatureSpec(), Layout("categorical", I1, class_names=("x", "y"))),
    ("pandas-like", PandasLike(), FeatureSpec(), Layout("categorical", I1, class_names=("lo", "hi"))),
    (
        "names sorted",
        ["b", "a", None],
        FeatureSpec(encoding="categorical"),
        Layout("categorical", I1, class_names=("a", "b")),
    ),
    ("codes", np.array([0, 1]), FeatureSpec(class_names=["n", "y"]), Layout("categorical", I1, class_names=("n", "y"))),
    ("code dtype", ["a"], FeatureSpec(class_names=["a"], dtype="int16"), Layout("categorical", I2, class_names=("a",))),
    ("ragged 1-D", [np.zeros(2, np.uint8), np.zeros(3, np.uint8)], FeatureSpec(), Layout("ragged", U1)),
    ("ragged promoted", [np.zeros(2, np.int8), np.zeros(3, np.float32)], FeatureSpec(), Layout("ragged", F4)),
    ("ragged rows", [np.zeros((2, 3)), np.zeros((4, 3))], FeatureSpec(), Layout("ragged", F8, (3,))),
    ("ragged shapes", [np.zeros((2, 3)), np.zeros((4, 2))], FeatureSpec(), Layout("ragged", F8, shapes_ndim=2)),
    ("ragged empty", [], FeatureSpec(encoding="ragged", dtype="float32"), Layout("ragged", F4)),
    (
        "ragged shapes declared",
        [np.zeros((2, 3), np.uint8), np.zeros((4, 3), np.uint8)],
        FeatureSpec(sample_ndim=2),
        Layout("ragged", U1, shapes_ndim=2),
    ),
    (
        "ragged shapes declared, empty",
        [],
        FeatureSpec(dtype="uint8", sample_ndim=3),
        Layout("ragged", U1, shapes_ndim=3),
    ),
    ("bytes", [b"a", bytearray(b"bc")], FeatureSpec(), Layout("bytes", U1)),
]


@pytest.mark.parametrize(("value", "fspec", "expected"), [c[1:] for c in INFERRED], ids=[c[0] for c in INFERRED])
def test_infer_layout_follows_the_encoding_table(value: Any, fspec: FeatureSpec, expected: Layout) -> None:
    """§6: each kind of Python value gets the encoding and stored (little-endian) layout of the writer's table."""
    assert infer_layout(value, fspec, WHERE) == expected


@pytest.mark.parametrize(
    ("value", "fspec", "match"),
    [
        ([], FeatureSpec(), "empty list"),
        ([], FeatureSpec(encoding="ragged"), "give its dtype"),
        (np.zeros(2, np.complex64), FeatureSpec(), "no h5ml encoding"),
        (["a", 1], FeatureSpec(), r"\['int', 'str'\]"),
        ([1, 2], FeatureSpec(encoding="categorical"), "need class_names"),
        (Categorical([0], ["a"]), FeatureSpec(encoding="string"), "cannot be stored as 'string'"),
        ("abc", FeatureSpec(), "expected an array or a list of samples, got str"),
        (np.float64(1.0), FeatureSpec(), "got float64"),
        (np.zeros(3), FeatureSpec(dtype="complex64"), "storage profile"),
        ([np.zeros((2, 3))], FeatureSpec(encoding="dense", sample_ndim=2), "ragged features only, not 'dense'"),
        (Categorical([0], ["a"]), FeatureSpec(sample_ndim=1), "ragged features only, not 'categorical'"),
        ([np.zeros(2)], FeatureSpec(sample_ndim=0), "sample_ndim must be >= 1"),
    ],
)
def test_infer_layout_refuses_values_without_an_encoding(value: Any, fspec: FeatureSpec, match: str) -> None:
    """§6: values with no encoding, or that contradict the given options, raise EncodingError naming the feature."""
    with pytest.raises(EncodingError, match=match) as err:
        infer_layout(value, fspec, WHERE)
    assert WHERE in str(err.value)


@pytest.mark.parametrize(("k", "dtype"), [(1, I1), (128, I1), (129, I2), (40_000, np.dtype("<i4"))])
def test_codes_get_the_smallest_signed_dtype(k: int, dtype: np.dtype[Any]) -> None:
    """§6.5: without a dtype, codes use the smallest signed integer type that holds K - 1."""
    names = [f"c{i}" for i in range(k)]
    layout = declared_layout(
        "categorical", dtype=None, sample_shape=(), sample_ndim=None, class_names=names, where=WHERE
    )
    assert layout.dtype == dtype and layout.class_names == tuple(names)


@pytest.mark.parametrize(
    ("encoding", "options", "match"),
    [
        ("dense", {}, "needs a dtype"),
        ("dense", {"dtype": "f4", "sample_shape": (2, -1)}, "negative axis"),
        ("dense", {"dtype": "float128"}, "storage profile"),
        ("ragged", {"dtype": "f4", "sample_shape": (2,), "sample_ndim": 2}, "excludes sample_shape"),
        ("ragged", {"dtype": "f4", "sample_ndim": 0}, "sample_ndim must be >= 1"),
        ("string", {"sample_shape": (2,)}, "dense and ragged features only"),
        ("categorical", {}, "needs class_names"),
        ("categorical", {"class_names": ["a", "a"]}, "unique"),
        ("categorical", {"class_names": ["a\x00"]}, "NUL"),
        ("categorical", {"class_names": ["a\udc80"]}, "lone surrogates"),
        ("categorical", {"class_names": ["a", "b"], "dtype": "uint8"}, "signed integer dtype"),
        ("categorical", {"class_names": [f"c{i}" for i in range(129)], "dtype": "int8"}, "holds 128"),
        ("sparse", {}, "unknown encoding"),
    ],
)
def test_declared_layout_checks_its_options(encoding: str, options: dict[str, Any], match: str) -> None:
    """§6: declared options that do not describe a valid feature raise EncodingError."""
    args: dict[str, Any] = {"dtype": None, "sample_shape": (), "sample_ndim": None, "class_names": None, **options}
    with pytest.raises(EncodingError, match=match):
        declared_layout(encoding, where=WHERE, **args)


def test_declared_layouts_allow_zero_length_axes() -> None:
    """§6.2/§6.3: a dense sample shape or a ragged row shape may have an axis of length 0."""
    dense = declared_layout("dense", dtype="f4", sample_shape=(4, 0), sample_ndim=None, class_names=None, where=WHERE)
    assert dense == Layout("dense", F4, (4, 0))
    ragged = declared_layout("ragged", dtype="f8", sample_shape=(0,), sample_ndim=None, class_names=None, where=WHERE)
    assert ragged == Layout("ragged", F8, (0,))
    assert infer_layout(np.zeros((3, 0, 2), np.int16), FeatureSpec(), WHERE) == Layout("dense", I2, (0, 2))


def test_declared_ragged_with_shapes() -> None:
    """§6.3: sample_ndim gives a ragged layout with shapes of that many axes; bool is stored as uint8 (§3.3)."""
    layout = declared_layout("ragged", dtype=bool, sample_shape=(), sample_ndim=3, class_names=None, where=WHERE)
    assert layout == Layout("ragged", U1, (), logical_bool=True, shapes_ndim=3)
    assert layout.hash_dtype == np.dtype(bool) and layout.has_stats


def test_stored_layout_reads_back_what_was_inferred(tmp_path: Path) -> None:
    """§6: the layout read from a written file equals the layout inferred from the values written."""
    rng = np.random.default_rng(7)
    columns: dict[str, Any] = {
        "image": rng.integers(0, 256, (6, 2, 3), dtype=np.uint8),
        "flag": rng.random(6) > 0.5,
        "text": [f"t{i}" for i in range(6)],
        "label": Categorical(rng.integers(-1, 3, 6), ["a", "b", "c"]),
        "audio": [rng.standard_normal((int(k), 2)).astype(np.float32) for k in rng.integers(0, 4, 6)],
        "mask": [np.ones((int(a), int(b)), np.int16) for a, b in rng.integers(1, 4, (6, 2))],
        "blob": [bytes(int(k)) for k in rng.integers(0, 5, 6)],
    }
    target = write(tmp_path / "l.h5", {"train": columns})
    with h5py.File(target, "r") as f:
        for name, value in columns.items():
            obj = f["train"][name]
            expected = infer_layout(value, FeatureSpec(), WHERE)
            assert stored_layout(obj.attrs["encoding"], obj) == expected, name
            member = {"label": "/codes", "audio": "/values", "mask": "/values", "blob": "/values"}.get(name, "")
            assert main_dataset(expected, obj).name == f"/train/{name}{member}"


def test_stored_layout_refuses_what_cannot_be_extended(tmp_path: Path) -> None:
    """§3.4/§6.5: fixed-length strings and unsigned codes cannot be extended by the writer."""
    with h5py.File(tmp_path / "s.h5", "w") as f:
        fixed = f.create_dataset("s", data=np.array([b"ab"], dtype="S2"))
        group = f.create_group("c")
        group["codes"] = np.zeros(2, np.uint8)
        group["class_names"] = np.array(["a"], dtype=h5py.string_dtype())
        with pytest.raises(EncodingError, match="variable-length"):
            stored_layout("string", fixed)
        with pytest.raises(EncodingError, match="signed integer"):
            stored_layout("categorical", group)
        with pytest.raises(KeyError):
            stored_layout("ragged", f.create_group("r"))


def test_feature_attrs_give_the_section_6_1_attributes() -> None:
    """§6.1/§6.6: encoding, version, the options given, logical_dtype for bools, a media type for bytes."""
    dense = Layout("dense", U1, logical_bool=True)
    fspec = FeatureSpec(role="target", description="d", units="V", sample_rate=16000)
    assert feature_attrs(dense, fspec, WHERE) == {
        "encoding": "dense",
        "encoding_version": spec.ENCODING_VERSION,
        "role": "target",
        "description": "d",
        "units": "V",
        "sample_rate": 16000.0,
        "logical_dtype": "bool",
    }
    assert isinstance(feature_attrs(dense, fspec, WHERE)["sample_rate"], float)
    blob = Layout("bytes", U1)
    assert feature_attrs(blob, FeatureSpec(), WHERE)["media_type"] == DEFAULT_MEDIA_TYPE
    assert feature_attrs(blob, FeatureSpec(media_type="image/png"), WHERE)["media_type"] == "image/png"


#: §6.6 media types with RFC 6838 / RFC 9110 parameters, which the writer and the validator both accept.
WELL_FORMED_MEDIA_TYPES = (
    "audio/L16; rate=16000",
    "text/plain; charset=utf-8",
    'text/plain;charset="utf-8"',
    "audio/L16;rate=16000 ;\tchannels=2",
    'application/vnd.h5ml+json; note="a \\"quoted\\" ; value"',
    "image/svg+xml",
)
#: §6.6 strings that are not type/subtype with well-formed parameters, and the problem each names.
MALFORMED_MEDIA_TYPES = (
    ("image", "does not start with a type/subtype"),
    ("image/", "does not start with a type/subtype"),
    ("a b/c", "does not start with a type/subtype"),
    ("image/png;", "malformed parameter at ';'"),
    ("image/png; charset", "malformed parameter at '; charset'"),
    ("image/png; charset = utf-8", "malformed parameter"),
    ('text/plain; charset="utf-8', "malformed parameter"),
    ("image/png ", "ends with whitespace"),
    ("image/png\n", "does not start with a type/subtype"),
    ("x/" + "a" * 128, "does not start with a type/subtype"),
)


@pytest.mark.parametrize("media", WELL_FORMED_MEDIA_TYPES)
def test_feature_attrs_accept_media_type_parameters(media: str) -> None:
    """§6.6: ``type/subtype`` followed by ``; name=value`` parameters (RFC 6838) is stored unchanged."""
    assert spec.media_type_problem(media) is None
    assert feature_attrs(Layout("bytes", U1), FeatureSpec(media_type=media), WHERE)["media_type"] == media


@pytest.mark.parametrize(("media", "problem"), MALFORMED_MEDIA_TYPES)
def test_feature_attrs_refuse_malformed_media_types(media: str, problem: str) -> None:
    """§6.6: a media type without a subtype, with spaces in a name, or with an empty or valueless parameter is
    refused with a message naming the feature, the value, the problem and the clause."""
    found = spec.media_type_problem(media)
    assert found is not None and problem in found
    with pytest.raises(WriterError) as err:
        feature_attrs(Layout("bytes", U1), FeatureSpec(media_type=media), WHERE)
    assert str(err.value).startswith(f"{WHERE}: media_type {media!r} {found}; give an IANA media type")
    assert str(err.value).endswith("(§6.6)")


@pytest.mark.parametrize(
    ("layout", "fspec", "match"),
    [
        (Layout("dense", F4), FeatureSpec(role="label"), "role 'label'"),
        (Layout("dense", F4), FeatureSpec(units=3), "units must be a string"),  # type: ignore[arg-type]
        (Layout("dense", F4), FeatureSpec(sample_rate=float("inf")), "sample_rate"),
        (Layout("dense", F4), FeatureSpec(sample_rate=True), "sample_rate"),
        (Layout("bytes", U1), FeatureSpec(media_type="image / png"), "type/subtype"),
        (Layout("string", None), FeatureSpec(media_type="text/plain"), "bytes features only"),
        (Layout("dense", F4), FeatureSpec(description="a\x00b"), "description .* contains a NUL"),
        (Layout("dense", F4), FeatureSpec(units="\udc80"), "lone surrogate"),
        (Layout("bytes", U1), FeatureSpec(media_type="image/p\x00ng"), "type/subtype"),
    ],
)
def test_feature_attrs_refuse_bad_options(layout: Layout, fspec: FeatureSpec, match: str) -> None:
    """§6.1/§6.6: invalid attribute options raise WriterError naming the feature."""
    with pytest.raises(WriterError, match=match) as err:
        feature_attrs(layout, fspec, WHERE)
    assert WHERE in str(err.value)
