"""Subsets and merges of h5ml files: :mod:`h5ml.ingest.edit` (§4.2 metadata, §5.3 splits, §6 encodings, §7.6)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import h5ml
from h5ml.ingest.edit import SampleBatches, batches, ids, merge, parse_samples, subset

CLASSES = ["a", "b", "c"]


def columns(n: int, seed: int) -> dict[str, Any]:
    """One split of every encoding: dense (scalar, 2-D, bool), categorical with -1, string, ragged, bytes."""
    rng = np.random.default_rng(seed)
    return {
        "x": rng.random((n, 2, 3), dtype=np.float32),
        "score": rng.integers(-50, 50, n).astype(np.int16),
        "flag": rng.random(n) > 0.5,
        "label": h5ml.Categorical(rng.integers(-1, 3, n), CLASSES),
        "text": [f"sample {seed}-{i} é" for i in range(n)],
        "seq": [rng.random((i % 4, 2)).astype(np.float32) for i in range(n)],
        "grid": [rng.integers(0, 9, (i % 2 + 1, i % 3 + 1)).astype(np.int64) for i in range(n)],
        "blob": [bytes([i % 256]) * (i % 5) for i in range(n)],
    }


FEATURES: dict[str, dict[str, Any]] = {
    "blob": {"media_type": "image/png", "role": "input"},
    "label": {"role": "target", "description": "the class"},
    "seq": {"sample_rate": 100.0, "units": "V"},
}


def make(path: Path, sizes: dict[str, int], seed: int = 0, **metadata: Any) -> Path:
    splits = {name: columns(n, seed + i) for i, (name, n) in enumerate(sizes.items())}
    meta = {"description": "test data", "license": "CC0-1.0", "project:tag": "t1", **metadata}
    return h5ml.write(path, splits, metadata=meta, compression="gzip", shuffle=True, seed=7, features=FEATURES)


def read_all(path: Path) -> dict[str, dict[str, Any]]:
    with h5ml.open(path) as ds:
        return {name: ds[name][:] for name in ds.splits}


def assert_same(got: Any, expected: Any) -> None:
    """Values of one feature equal exactly (arrays, lists of arrays, lists of bytes or str)."""
    if isinstance(expected, np.ndarray):
        assert isinstance(got, np.ndarray) and got.dtype == expected.dtype
        np.testing.assert_array_equal(got, expected)
        return
    assert len(got) == len(expected)
    for a, b in zip(got, expected, strict=True):
        if isinstance(b, np.ndarray):
            assert a.dtype == b.dtype and a.shape == b.shape
            np.testing.assert_array_equal(a, b)
        else:
            assert a == b


def take(values: Any, rows: list[int]) -> Any:
    return values[rows] if isinstance(values, np.ndarray) else [values[r] for r in rows]


def assert_clean(path: Path) -> None:
    report = h5ml.validate(path, deep=True)
    assert [c for c in report.codes if not c.startswith("I")] == [], report.codes


@pytest.fixture
def source(tmp_path: Path) -> Path:
    return make(tmp_path / "source.h5", {"train": 40, "test": 9})


def test_subset_samples_features_and_metadata(source: Path, tmp_path: Path) -> None:
    """A slice of train and indices of test, two features; values, attributes and root metadata are kept."""
    out = tmp_path / "sub.h5"
    report = subset(source, out, features=["label", "seq", "grid"], samples={"train": "5:25:2", "test": [8, 0, 0, -1]})
    assert report.samples == {"test": 4, "train": 10}
    assert_clean(out)
    full = read_all(source)
    got = read_all(out)
    for name in ("label", "seq", "grid"):
        assert_same(got["train"][name], take(full["train"][name], list(range(5, 25, 2))))
        assert_same(got["test"][name], take(full["test"][name], [8, 0, 0, 8]))
    with h5ml.open(source) as src, h5ml.open(out) as ds:
        assert list(ds["train"].features) == ["grid", "label", "seq"]
        old, new = src.metadata.to_json(), ds.metadata.to_json()
        for key in ("name", "description", "license", "project:tag"):
            assert new[key] == old[key]
        assert new["fingerprint"] != old["fingerprint"]
        label, seq = ds["train"]["label"], ds["train"]["seq"]
        assert (label.class_names, label.role, label.description) == (CLASSES, "target", "the class")
        assert (seq.sample_rate, seq.units, seq.compression) == (100.0, "V", "gzip")
        assert ds["train"].shuffle_seed is None and ds["test"].shuffle_seed is None  # the order changed (§7.6)


def test_subset_whole_splits_keep_seed_and_every_encoding(source: Path, tmp_path: Path) -> None:
    """Kept whole, a split keeps its shuffle_seed and every feature its values; compression can change."""
    out = tmp_path / "whole.h5"
    subset(source, out, splits=["test"], compression=None, metadata={"description": "the test split"})
    assert_clean(out)
    full, got = read_all(source), read_all(out)
    assert list(got) == ["test"]
    for name, values in full["test"].items():
        assert_same(got["test"][name], values)
    with h5ml.open(out) as ds:
        assert ds["test"].shuffle_seed == 7 and ds.metadata.description == "the test split"
        assert {f.compression for f in ds["test"].features.values()} == {None}
        assert ds["test"]["flag"].dtype == np.bool_ and ds["test"]["blob"].media_type == "image/png"
    masked = tmp_path / "masked.h5"
    mask = np.zeros(9, dtype=bool)
    mask[[1, 4]] = True
    subset(source, masked, splits=["test"], samples=mask, compression="gzip")
    assert_same(read_all(masked)["test"]["text"], take(full["test"]["text"], [1, 4]))


def test_subset_in_many_small_batches(source: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With 200-byte batches the copy takes many batches and the values are the same."""
    monkeypatch.setattr(batches, "BATCH_BYTES", 200)
    with h5ml.open(source) as ds:
        assert len(list(SampleBatches(list(ds["train"].features.values()), range(3, 40)))) >= 10
    out = tmp_path / "batched.h5"
    subset(source, out, samples=slice(3, None))
    assert_clean(out)
    full, got = read_all(source), read_all(out)
    for split, rows in (("train", list(range(3, 40))), ("test", list(range(3, 9)))):
        for name, values in full[split].items():
            assert_same(got[split][name], take(values, rows))


def test_subset_errors_leave_the_output_alone(source: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.h5"
    out.write_bytes(b"keep me")
    with pytest.raises(FileExistsError, match="overwrite"):
        subset(source, out)
    with pytest.raises(FileExistsError, match="the output is the source itself"):
        subset(source, source, overwrite=True)
    with pytest.raises(h5ml.SplitNotFoundError, match="validation"):
        subset(source, out, splits=["validation"], overwrite=True)
    with pytest.raises(h5ml.FeatureNotFoundError, match="'nope'"):
        subset(source, out, features=["x", "nope"], overwrite=True)
    with pytest.raises(ValueError, match="is not a slice 'start:stop'"):
        subset(source, out, samples="10-20", overwrite=True)
    with pytest.raises(IndexError, match="split 'test'"):
        subset(source, out, samples={"test": [9]}, overwrite=True)
    with pytest.raises(ValueError, match=r"samples= names split\(s\) \['valid'\]"):
        subset(source, out, samples={"valid": "0:1"}, overwrite=True)
    with pytest.raises(ValueError, match="compression"):
        subset(source, out, compression="lzf", overwrite=True)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"features=\[\] keeps nothing"):
        subset(source, out, features=[], overwrite=True)
    assert out.read_bytes() == b"keep me"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.h5", "source.h5"]


def test_parse_samples() -> None:
    assert parse_samples(None, 5) == range(5)
    assert parse_samples("1:3", 5) == range(1, 3)
    assert parse_samples(":-2", 5) == range(0, 3)
    assert parse_samples(slice(10, 20), 5) == range(5, 5)
    np.testing.assert_array_equal(parse_samples("::2", 5), [0, 2, 4])
    np.testing.assert_array_equal(parse_samples([4, -5, 4], 5), [4, 0, 4])
    with pytest.raises(ValueError, match="step 0"):
        parse_samples(slice(None, None, 0), 5)
    with pytest.raises(TypeError, match="got an int"):
        parse_samples(3, 5)  # type: ignore[arg-type]


def test_merge_concatenates_splits_in_file_order(tmp_path: Path) -> None:
    """train of a then b; validation only from b (its seed kept); metadata of a with source listing the inputs."""
    a = make(tmp_path / "a.h5", {"train": 12, "test": 4}, seed=0, version="1")
    b = make(tmp_path / "b.h5", {"train": 5, "validation": 3}, seed=10, description="second")
    out = tmp_path / "merged.h5"
    report = merge([a, b], out)
    assert report.samples == {"test": 4, "train": 17, "validation": 3}
    assert_clean(out)
    first, second, got = read_all(a), read_all(b), read_all(out)
    for name, values in first["train"].items():
        other = second["train"][name]
        if isinstance(values, np.ndarray):
            assert_same(got["train"][name], np.concatenate([values, other]))
        else:
            assert_same(got["train"][name], list(values) + list(other))
        assert_same(got["test"][name], first["test"][name])
        assert_same(got["validation"][name], second["validation"][name])
    with h5ml.open(out) as ds:
        assert list(ds.splits) == ["test", "train", "validation"]
        assert json.loads(ds.metadata.source or "") == [str(a), str(b)]
        assert (ds.metadata.description, ds.metadata.version) == ("test data", "1")
        assert ds["train"].shuffle_seed is None  # two files: the order is no single permutation
        assert ds["validation"].shuffle_seed == 7 and ds["test"].shuffle_seed == 7


def test_merge_refuses_features_that_differ(tmp_path: Path) -> None:
    """A dtype, class names or a missing feature: the error names both files and the feature; nothing is written."""
    a = make(tmp_path / "a.h5", {"train": 4})
    x64 = {"train": {"x": np.zeros((2, 2, 3)), "label": h5ml.Categorical([0, 1], CLASSES)}}
    x32 = {"train": {"x": np.zeros((2, 2, 3), np.float32), "label": h5ml.Categorical([0, 1], CLASSES)}}
    other_names = {"train": {"x": np.zeros((2, 2, 3), np.float32), "label": h5ml.Categorical([0, 1], ["a", "z"])}}
    b = h5ml.write(tmp_path / "b.h5", x32)
    c = h5ml.write(tmp_path / "c.h5", x64)
    d = h5ml.write(tmp_path / "d.h5", other_names)
    out = tmp_path / "m.h5"
    ea, eb, ec, ed = (re.escape(str(path)) for path in (a, b, c, d))
    with pytest.raises(
        ValueError,
        match=rf"cannot merge {ea} and {eb}: feature 'blob' of split 'train' is in {ea}",
    ):
        merge([a, b], out)
    with pytest.raises(
        ValueError,
        match=rf"{eb} and {ec}: feature 'x' of split 'train' is dense float32 .* float64",
    ):
        merge([b, c], out)
    with pytest.raises(
        ValueError,
        match=rf"{eb} and {ed}: feature 'label' .*class names \['a', 'b', 'c'\].*\['a', 'z'\]",
    ):
        merge([b, d], out)
    with pytest.raises(ValueError, match="given twice"):
        merge([b, tmp_path / "." / "b.h5"], out)
    with pytest.raises(ValueError, match="at least one"):
        merge([], out)
    with pytest.raises(FileExistsError, match="the output is the source itself"):
        merge([b, c], c, overwrite=True)
    assert not out.exists()


def test_merge_refuses_sample_ids_two_files_share(tmp_path: Path) -> None:
    """Sample ids (the converters' string feature ``id``): an id that two files hold in one split stops the merge
    with both files, the split, the feature, the id and both rows named; nothing is written.
    allow_duplicate_ids=True merges anyway; ids repeated within one file, or in different splits, are not refused."""
    a = h5ml.write(
        tmp_path / "a.h5",
        {
            "train": {"id": ["cat/1.png", "cat/2.png", "dog/1.png", "dog/1.png"], "x": np.arange(4.0)},
            "test": {"id": ["cat/9.png"], "x": np.zeros(1)},
        },
        metadata={"description": "pets", "license": "CC0-1.0"},
    )
    b = h5ml.write(
        tmp_path / "b.h5",
        {
            "train": {"id": ["dog/7.png", "cat/2.png", "dog/1.png"], "x": np.arange(3.0)},
            "validation": {"id": ["cat/9.png"], "x": np.zeros(1)},  # same id as a's test: another split
        },
    )
    out = tmp_path / "m.h5"
    with pytest.raises(ValueError) as err:
        merge([a, b], out)
    assert str(err.value).startswith(
        f"cannot merge {a} and {b}: split 'train' holds the sample id 'cat/2.png' (feature 'id') in both, "
        f"at row 1 of {a} and row 1 of {b}; 2 sample(s) of {b} have ids that earlier files hold. "
    )
    assert "--allow-duplicate-ids (allow_duplicate_ids=True)" in str(err.value)
    assert not out.exists()
    report = merge([a, b], out, allow_duplicate_ids=True)
    assert report.samples == {"train": 7, "test": 1, "validation": 1}
    got = read_all(out)
    assert got["train"]["id"].tolist() == ["cat/1.png", "cat/2.png", "dog/1.png", "dog/1.png", "dog/7.png", "cat/2.png",
                                           "dog/1.png"]  # fmt: skip
    assert got["train"]["x"].tolist() == [0.0, 1.0, 2.0, 3.0, 0.0, 1.0, 2.0]
    assert_clean(out)
    # a third file: the first row (in merge order) whose id is already held names the file that holds it
    c = h5ml.write(tmp_path / "c.h5", {"train": {"id": ["new", "dog/7.png"], "x": np.zeros(2)}})
    ec, eb = re.escape(str(c)), re.escape(str(b))
    with pytest.raises(
        ValueError, match=rf"^cannot merge {ec} and {eb}: .*'dog/7.png'.* row 1 of {ec} and row 0 of {eb}; 3 "
    ):
        merge([a, c, b], tmp_path / "m3.h5")
    assert merge([a, c], tmp_path / "ac.h5").samples["train"] == 6  # 'dog/1.png' twice in a alone is a's own affair


def test_merge_id_feature_option(tmp_path: Path) -> None:
    """id_feature names the id feature (strings or integer scalars, uint64 beyond 2**63 included); None checks
    nothing, and so does the default 'id' where it is missing or cannot hold ids (float); another name must."""
    a = h5ml.write(tmp_path / "a.h5", {"train": {"key": np.array([-1, 5, 7], np.int64), "name": ["p", "q", "r"]}})
    b = h5ml.write(tmp_path / "b.h5", {"train": {"key": np.array([-2, 8, 7], np.int64), "name": ["s", "q", "t"]}})
    with pytest.raises(ValueError, match=r"the sample id 7 \(feature 'key'\) in both, at row 2 of .* and row 2 of"):
        merge([a, b], tmp_path / "k.h5", id_feature="key")
    with pytest.raises(
        ValueError, match=r"the sample id 'q' \(feature 'name'\) in both, at row 1 of .* and row 1 .* 1 s"
    ):
        merge([a, b], tmp_path / "n.h5", id_feature="name")
    assert merge([a, b], tmp_path / "none.h5", id_feature=None).samples == {"train": 6}
    assert merge([a, b], tmp_path / "id.h5").samples == {"train": 6}  # no feature 'id'
    big = 2**63 + 5
    u1 = h5ml.write(tmp_path / "u1.h5", {"train": {"id": np.array([1, big], np.uint64)}})
    u2 = h5ml.write(tmp_path / "u2.h5", {"train": {"id": np.array([big, 2], np.uint64)}})
    with pytest.raises(ValueError, match=rf"the sample id {big} \(feature 'id'\) in both, at row 1 of .* and row 0 of"):
        merge([u1, u2], tmp_path / "u.h5")
    f1 = h5ml.write(tmp_path / "f1.h5", {"train": {"id": np.array([1.0, 2.0])}})
    f2 = h5ml.write(tmp_path / "f2.h5", {"train": {"id": np.array([1.0, 2.0])}})
    assert merge([f1, f2], tmp_path / "f.h5").samples == {"train": 4}
    # another name than the default must be checkable: missing, or not an id feature, is an error
    with pytest.raises(ValueError, match=r"split 'train' has no feature 'nosuch' to check sample ids with"):
        merge([a, b], tmp_path / "x.h5", id_feature="nosuch")
    g1 = h5ml.write(tmp_path / "g1.h5", {"train": {"score": np.array([1.0, 2.0])}})
    g2 = h5ml.write(tmp_path / "g2.h5", {"train": {"score": np.array([1.0, 2.0])}})
    with pytest.raises(ValueError, match=r"has no string or integer-scalar feature 'score'"):
        merge([g1, g2], tmp_path / "g.h5", id_feature="score")
    assert not (tmp_path / "x.h5").exists() and not (tmp_path / "g.h5").exists()


def test_merge_confirms_equal_id_keys(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Ids whose keys are equal (here every key, as if every hash collided) are duplicates only when the ids are."""
    monkeypatch.setattr(ids, "_id_keys", lambda feature: np.zeros(feature.num_samples, dtype=np.int64))
    a = h5ml.write(tmp_path / "a.h5", {"train": {"id": ["p", "q", "r"]}})
    b = h5ml.write(tmp_path / "b.h5", {"train": {"id": ["s", "t", "q"]}})
    c = h5ml.write(tmp_path / "c.h5", {"train": {"id": ["u", "v"]}})
    with pytest.raises(ValueError, match=r"the sample id 'q' \(feature 'id'\) in both, at row 1 of .* and row 2 of"):
        merge([a, b], tmp_path / "ab.h5")
    assert merge([a, c], tmp_path / "ac.h5").samples == {"train": 5}


def test_sample_batches_follow_sizes(source: Path) -> None:
    """Batches cover the rows in order; ragged sizes come from offsets; strings are learnt from what is read."""
    with h5ml.open(source) as ds:
        split = ds["train"]
        seq = split["seq"]
        lengths = seq.lengths()  # rows of 2 float32: 8 bytes each
        batches = SampleBatches([seq], range(40), target_bytes=40)
        spans: list[slice] = []
        for span in batches:
            assert isinstance(span, slice)
            spans.append(span)
        assert [i for s in spans for i in range(s.start, s.stop)] == list(range(40))
        for s in spans:
            size = int(lengths[s].sum()) * 8
            assert size <= 40 or s.stop - s.start == 1
            if s.stop < 40:  # the next sample would not have fitted
                assert size + int(lengths[s.stop]) * 8 > 40
        rows = np.array([39, 0, 5, 5], dtype=np.int64)
        picked = list(SampleBatches([seq], rows, target_bytes=10**9))
        assert len(picked) == 1 and isinstance(picked[0], np.ndarray) and picked[0].tolist() == rows.tolist()
        text = SampleBatches([split["text"]], range(40), target_bytes=1000)
        first = next(iter(text))
        assert first == slice(0, 3)  # 256 bytes guessed per string
        text.observe({"text": ["x" * 10] * 4})
        assert next(iter(text)) == slice(0, 40)  # 10 bytes each: every row fits
        with pytest.raises(ValueError, match="target_bytes"):
            SampleBatches([seq], range(4), target_bytes=0)


@pytest.mark.parametrize("text", ["5:2", "-1:-5", "2:5:-1"], ids=["forward", "negative", "backward-step"])
def test_a_reversed_sample_range_is_refused(tmp_path: Path, text: str) -> None:
    """A selection whose start comes after its stop for its step selects nothing in Python: surely a mistake, so
    it is refused (a ParameterError naming --samples) instead of writing an empty split."""
    from h5ml.errors import ParameterError
    from h5ml.ingest.edit.selection import parse_samples

    with pytest.raises(ParameterError, match=r"selects no sample.*option --samples"):
        parse_samples(text, 10)
    assert list(parse_samples("2:5", 10)) == [2, 3, 4] and list(parse_samples("5:2:-1", 10)) == [5, 4, 3]
    assert list(parse_samples("-3:", 10)) == [7, 8, 9] and list(parse_samples("8:20", 10)) == [8, 9]
