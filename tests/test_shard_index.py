"""The shard index document and the description of a shard file (SPEC §12.1-§12.3; h5ml.model.shard_index, shard_files)."""

from __future__ import annotations

import copy
import hashlib
import json
import os
from pathlib import Path

import numpy as np
import pytest

import h5ml
from h5ml.errors import ShardIndexError
from h5ml.model.shard_files import describe_shard, disagreements
from h5ml.model.shard_index import (
    FeatureEntry,
    ShardEntry,
    ShardIndex,
    SplitEntry,
    dump_index,
    index_fingerprint,
    is_index_path,
    load_index,
    parse_index,
    shard_location,
    write_index,
)

FP_A = "sha256:" + "a" * 64
FP_B = "sha256:" + "b" * 64


def _index(paths: tuple[str, ...] = ("train/train-00000.h5", "train/train-00001.h5")) -> ShardIndex:
    shards = tuple(
        ShardEntry(path=p, num_samples=3 + i, fingerprint=(FP_A, FP_B)[i % 2], size_bytes=100 + i)
        for i, p in enumerate(paths)
    )
    splits = {
        "train": SplitEntry(
            num_samples=sum(s.num_samples for s in shards),
            features={"x": FeatureEntry(encoding="dense", dtype="<f4", sample_shape=(2,))},
            shards=shards,
        )
    }
    return ShardIndex(
        format_version="1.2", metadata={"name": "t"}, splits=splits, fingerprint=index_fingerprint(splits)
    )


def test_index_fingerprint_is_the_sha256_of_one_line_per_shard() -> None:
    """SPEC §12.3: sha256 of '<split>/<position> <shard fingerprint>\\n', splits in code-point order."""
    index = _index()
    text = f"train/0 {FP_A}\ntrain/1 {FP_B}\n"
    assert index.fingerprint == "sha256:" + hashlib.sha256(text.encode()).hexdigest()
    swapped = {"train": index.splits["train"].model_copy(update={"shards": index.splits["train"].shards[::-1]})}
    assert index_fingerprint(swapped) != index.fingerprint  # the order of the shards is part of the dataset


def test_a_written_index_reads_back_equal(tmp_path: Path) -> None:
    index = _index()
    written = write_index(index, tmp_path)
    assert written == tmp_path / "index.json"
    loaded, where = load_index(tmp_path)
    assert loaded == index and where == written
    assert json.loads(written.read_text())["format"] == "h5ml-index"
    assert is_index_path(tmp_path) and is_index_path(written)
    assert not is_index_path(tmp_path / "train")
    assert [p.name for p in tmp_path.iterdir()] == ["index.json"]  # no temporary file left


@pytest.mark.parametrize(
    "path",
    [
        "../outside.h5",
        "/etc/passwd",
        "s3://bucket/x.h5",
        "train\\x.h5",
        "train//x.h5",
        "./x.h5",
        "train/./x.h5",
        "train/",
    ],
)
def test_a_shard_path_that_could_leave_the_folder_is_refused(path: str) -> None:
    """SPEC §12.1: relative, '/'-separated paths with no '..', '.', empty component, scheme or backslash."""
    document = _index().to_json()
    document["splits"]["train"]["shards"][0]["path"] = path
    with pytest.raises(ShardIndexError, match=r"/splits/train/shards/0/path"):
        parse_index(document, "ds/index.json")


def test_sample_counts_fingerprint_and_duplicates_are_checked() -> None:
    good = _index().to_json()
    counts = copy.deepcopy(good)
    counts["splits"]["train"]["num_samples"] = 99
    with pytest.raises(ShardIndexError, match=r"num_samples is 99 but its shards hold 7 samples"):
        parse_index(counts, "i.json")
    wrong = copy.deepcopy(good)
    wrong["fingerprint"] = FP_A
    with pytest.raises(ShardIndexError, match=r"/fingerprint is sha256:a+ but the listed shards give"):
        parse_index(wrong, "i.json")
    twice = _index(("a.h5", "a.h5")).to_json()
    with pytest.raises(ShardIndexError, match=r"'a.h5' is listed twice"):
        parse_index(twice, "i.json")


def test_an_index_that_is_not_json_says_so(tmp_path: Path) -> None:
    (tmp_path / "index.json").write_text("{not json")
    with pytest.raises(ShardIndexError, match=r"index.json is not JSON"):
        load_index(tmp_path / "index.json")


def test_shard_locations_stay_under_the_index() -> None:
    assert shard_location("s3://b/ds/index.json", "train/train-00000.h5") == "s3://b/ds/train/train-00000.h5"
    assert shard_location("/data/ds/index.json", "train/a.h5") == os.path.join("/data/ds", "train", "a.h5")


def test_a_failed_write_leaves_the_previous_index(tmp_path: Path) -> None:
    write_index(_index(), tmp_path)
    before = (tmp_path / "index.json").read_text()
    broken = _index().model_copy(update={"fingerprint": FP_A})
    with pytest.raises(ShardIndexError):
        write_index(broken, tmp_path)
    assert (tmp_path / "index.json").read_text() == before
    assert dump_index(_index()) == before


def _shard(
    path: Path, start: int, n: int, *, dtype: type = np.float32, names: tuple[str, ...] = ("cat", "dog")
) -> None:
    rng = np.random.default_rng(start)
    h5ml.write(
        path,
        {
            "train": {
                "x": rng.random((n, 2)).astype(dtype),
                "y": h5ml.Categorical(np.arange(start, start + n) % 2, list(names)),
                "wave": [np.full(i + 1, i, np.int16) for i in range(n)],
                "text": [f"s{i}" for i in range(start, start + n)],
            }
        },
        metadata={"name": "pets", "license": "CC-BY-4.0"},
    )


def test_describe_shard_lists_what_the_index_records(tmp_path: Path) -> None:
    """SPEC §12.2: encoding, the §8.2 dtype, sample shape (None = varies) and class names per feature."""
    _shard(tmp_path / "a.h5", 0, 4)
    found = describe_shard(tmp_path / "a.h5")
    assert (found.split, found.num_samples, found.size_bytes) == ("train", 4, (tmp_path / "a.h5").stat().st_size)
    with h5ml.open(tmp_path / "a.h5") as ds:
        assert found.fingerprint == ds.fingerprint
    assert found.features == {
        "x": FeatureEntry(encoding="dense", dtype="<f4", sample_shape=(2,)),
        "y": FeatureEntry(encoding="categorical", dtype="<i8", sample_shape=(), class_names=("cat", "dog")),
        "wave": FeatureEntry(encoding="ragged", dtype="<i2", sample_shape=(None,)),
        "text": FeatureEntry(encoding="string", dtype="utf-8", sample_shape=()),
    }
    assert dict(found.card) == {"name": "pets", "license": "CC-BY-4.0"}


def test_disagreements_name_every_difference(tmp_path: Path) -> None:
    _shard(tmp_path / "a.h5", 0, 4)
    _shard(tmp_path / "b.h5", 4, 5, dtype=np.float64, names=("cat", "cow"))
    a, b = describe_shard(tmp_path / "a.h5"), describe_shard(tmp_path / "b.h5")
    entry = a.entry("a.h5")
    split = a.split_entry((entry,))
    assert disagreements("train", split, entry, a) == []
    problems = disagreements("train", split, entry, b)
    assert "holds 5 samples, the index says 4" in problems
    assert any(p.startswith(f"has fingerprint {b.fingerprint}") for p in problems)
    assert any("feature 'x' differs in dtype ('<f8'; the index says '<f4')" in p for p in problems)
    assert any("feature 'y' differs in class_names" in p for p in problems)
    assert disagreements("test", split, entry, a) == ["holds split 'train', not 'test'"]


def test_a_file_with_two_splits_is_not_a_shard(tmp_path: Path) -> None:
    h5ml.write(tmp_path / "two.h5", {"train": {"x": np.zeros(2)}, "test": {"x": np.zeros(1)}})
    with pytest.raises(ShardIndexError, match=r"holds 2 splits .*a shard holds one"):
        describe_shard(tmp_path / "two.h5")


def test_a_shard_whose_card_differs_from_the_index_metadata_is_named(tmp_path: Path) -> None:
    """SPEC §12.2: every shard's shared root attributes equal the index's metadata."""
    _shard(tmp_path / "a.h5", 0, 4)
    a = describe_shard(tmp_path / "a.h5")
    entry = a.entry("a.h5")
    split = a.split_entry((entry,))
    assert disagreements("train", split, entry, a, {"name": "pets", "license": "CC-BY-4.0"}) == []
    assert disagreements("train", split, entry, a, {"name": "cats", "license": "CC-BY-4.0", "version": "2"}) == [
        "root attribute 'name' is 'pets', the index's metadata says 'cats'",
        "lacks root attribute 'version', which the index's metadata has",
    ]


# -- found by trying to break sharded datasets (each once a wrong answer or a crash) ----------------------------


def _dataset(tmp_path: Path) -> Path:
    folder = tmp_path / "ds"
    with h5ml.Writer(folder, {"name": "pets", "description": "d", "license": "MIT"}, samples_per_shard=4) as writer:
        writer.append("train", {"y": np.arange(10)})
    return folder


def test_a_shard_linked_from_outside_the_folder_is_refused_by_the_reader(tmp_path: Path) -> None:
    """SPEC §12.1-R2: a symbolic link in the folder must not make a reader open a file outside it."""
    folder = _dataset(tmp_path)
    outside = tmp_path / "elsewhere.h5"
    shard = folder / "train" / "train-00001.h5"
    shard.rename(outside)
    shard.symlink_to(outside)
    with pytest.raises(ShardIndexError, match=r"/splits/train/shards/1 \(train/train-00001.h5\) resolves to .*outside"):
        h5ml.open(folder)


def test_one_file_listed_twice_through_a_link_is_refused_by_the_reader(tmp_path: Path) -> None:
    """SPEC §12.1-R3: the samples of one file would be read twice."""
    folder = _dataset(tmp_path)
    (folder / "train" / "twice.h5").symlink_to(folder / "train" / "train-00000.h5")
    index = json.loads((folder / "index.json").read_text())
    first = index["splits"]["train"]["shards"][0]
    index["splits"]["train"]["shards"].insert(1, {**first, "path": "train/twice.h5"})
    index["splits"]["train"]["num_samples"] += first["num_samples"]
    parsed = ShardIndex.model_validate(index)
    index["fingerprint"] = index_fingerprint(parsed.splits)
    (folder / "index.json").write_text(json.dumps(index))
    with pytest.raises(ShardIndexError, match=r"is the file /splits/train/shards/0 lists too"):
        h5ml.open(folder)


@pytest.mark.parametrize(
    "path", ["train/%2e%2e/%2e%2e/secret.h5", "train/a.h5?x=1", "train/a.h5#frag", "train/a\nb.h5"]
)
def test_url_syntax_in_a_shard_path_is_refused(path: str) -> None:
    """SPEC §12.1-R2: an HTTP client decodes %2e%2e to '..' and leaves the dataset's prefix."""
    document = _index().to_json()
    document["splits"]["train"]["shards"][0]["path"] = path
    with pytest.raises(ShardIndexError, match=r"/splits/train/shards/0/path"):
        parse_index(document, "https://example.org/ds/index.json")


@pytest.mark.parametrize(
    ("content", "why"),
    [(b"\xff\xfe{}", r"is not UTF-8 text"), (b"[" * 100_000 + b"]" * 100_000, r"is not JSON \(nested too deeply\)")],
)
def test_an_index_that_is_not_utf8_json_is_a_shard_index_error(tmp_path: Path, content: bytes, why: str) -> None:
    (tmp_path / "index.json").write_bytes(content)
    with pytest.raises(ShardIndexError, match=why):
        load_index(tmp_path)


def test_sample_counts_beyond_int64_are_refused_by_the_schema() -> None:
    document = _index().to_json()
    document["splits"]["train"]["shards"][0]["num_samples"] = 10**30
    with pytest.raises(ShardIndexError, match=r"is greater than the maximum"):
        parse_index(document, "i.json")


def test_the_index_is_as_readable_as_its_shards(tmp_path: Path) -> None:
    folder = _dataset(tmp_path)
    index_mode = (folder / "index.json").stat().st_mode & 0o777
    assert index_mode == (folder / "train" / "train-00000.h5").stat().st_mode & 0o777


def test_a_split_named_like_the_index_is_refused(tmp_path: Path) -> None:
    with pytest.raises(h5ml.ParameterError, match=r"would take the place of the dataset's index.json"):
        with h5ml.Writer(tmp_path / "ds", {"name": "x"}, samples_per_shard=4) as writer:
            writer.append("index.json", {"y": np.arange(3)})
    assert not (tmp_path / "ds" / "index.json").exists()


def test_a_view_over_a_replaced_shard_is_refused_and_invalid(tmp_path: Path) -> None:
    """SPEC §12.6-R3, §12.5-R1: a shard replaced after the view was written is not read through the view."""
    from h5ml.ingest.view import write_view

    folder = _dataset(tmp_path)
    other = tmp_path / "other"
    with h5ml.Writer(other, {"name": "pets", "description": "d", "license": "MIT"}, samples_per_shard=4) as writer:
        writer.append("train", {"y": np.arange(10) + 100})
    write_view(folder, folder / "view.h5")
    with h5ml.open(folder / "view.h5") as view:
        np.testing.assert_array_equal(view["train"]["y"][:], np.arange(10))
    (folder / "train" / "train-00001.h5").write_bytes((other / "train" / "train-00001.h5").read_bytes())
    report = h5ml.validate(folder / "view.h5")
    assert not report.valid
    assert any(i.code == "E119" and "is not the shard its index lists" in i.message for i in report.issues)
    with pytest.raises(h5ml.H5MLError, match=r"is not the shard its index lists"):
        with h5ml.open(folder / "view.h5") as view:
            view["train"]["y"][:]


def _duplicated(index_file: Path) -> tuple[str, str]:
    """Two index texts of a real dataset, each with one member name twice (the same value: last-wins would pass)."""
    document = json.loads(index_file.read_text(encoding="utf-8"))
    compact = json.dumps(document)
    top = compact[:-1] + f', "fingerprint": "{document["fingerprint"]}"}}'
    split = next(iter(document["splits"]))
    count = document["splits"][split]["num_samples"]
    nested = compact.replace(f'"num_samples": {count},', f'"num_samples": {count}, "num_samples": {count},', 1)
    assert nested != compact
    return top, nested


def test_a_duplicate_member_name_makes_the_index_invalid(tmp_path: Path) -> None:
    """SPEC §12.1-R8: an index with a member name twice in one object is refused, naming the member's JSON pointer.

    Python's json would keep the last member (and these texts would pass); load_index, h5ml.open and the
    validator (E170 at /) refuse them instead.
    """
    out = tmp_path / "ds"
    with h5ml.Writer(out, {"name": "d"}, samples_per_shard=2) as w:
        w.append("train", {"x": np.zeros((3, 2), "f4")})
    index_file = out / "index.json"
    top, nested = _duplicated(index_file)
    for text, pointer in ((top, "/fingerprint"), (nested, "/splits/train/num_samples")):
        index_file.write_text(text, encoding="utf-8")
        parse_index(json.loads(text), str(index_file))  # what Python's json alone would accept
        with pytest.raises(ShardIndexError, match=rf"has the member '[a-z_]+' twice \(JSON pointer {pointer}\)"):
            load_index(index_file)
        with pytest.raises(ShardIndexError, match=rf"JSON pointer {pointer}"):
            h5ml.open(out)
        report = h5ml.validate(out)
        assert [(i.code, i.path) for i in report.issues] == [("E170", "/")] and not report.valid
        assert f"JSON pointer {pointer}" in report.issues[0].message and report.shards == ()


def test_loads_strict_names_the_pointer_with_rfc6901_escapes() -> None:
    """An object before its members, then document order; '~' and '/' escaped as ~0 and ~1; arrays by position."""
    from h5ml.model.strict_json import DuplicateMemberError, loads_strict

    assert loads_strict('{"a": [1, {"b": 2}], "c": {}}') == {"a": [1, {"b": 2}], "c": {}}
    with pytest.raises(DuplicateMemberError) as raised:
        loads_strict('{"a/b": [0, {"x~y": {"k": 1, "k": 2}}], "z": {"q": 1, "q": 1}}')
    assert raised.value.pointer == "/a~1b/1/x~0y/k" and raised.value.name == "k"
    assert "the object at /a~1b/1/x~0y has the member 'k' twice" in str(raised.value)
    with pytest.raises(DuplicateMemberError, match=r"the object at / has the member 'z' twice \(JSON pointer /z\)"):
        loads_strict('{"a": {"q": 1, "q": 1}, "z": 1, "z": 2}')
