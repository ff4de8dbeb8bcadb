"""The sharded writer (SPEC §12.4): ``h5ml.Writer(OUTDIR, shard_size=... | samples_per_shard=...)``.

Real files in tmp_path, real HDF5: shards roll over by samples (exactly, a
batch split across shards) and by stored bytes; every shard agrees with its
index (``parse_index`` + ``describe_shard``/``disagreements``); the index is
written last, so an exception, an abort or a SIGKILL leaves no index that
lists an incomplete shard; ``overwrite=True`` replaces a dataset and removes
its stale shards.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import pytest

import h5ml
from h5ml.errors import EncodingError, ParameterError, WriterError
from h5ml.model.shard_files import describe_shard, disagreements
from h5ml.model.shard_index import ShardIndex, parse_index, shard_location
from h5ml.writer.shard_folder import STAGING_PREFIX

ROOT = Path(__file__).resolve().parents[1]


def checked_index(outdir: Path) -> ShardIndex:
    """The dataset's index, checked on its own and against every shard (no problem allowed)."""
    index_file = outdir / "index.json"
    index = parse_index(json.loads(index_file.read_text(encoding="utf-8")), str(index_file))
    for split, entry in index.splits.items():
        for shard in entry.shards:
            found = describe_shard(shard_location(str(index_file), shard.path))
            assert disagreements(split, entry, shard, found) == []
            assert dict(found.card) == index.metadata
    return index


def read_split(outdir: Path, split: str, feature: str) -> list[Any]:
    """Every sample of ``split``/``feature``, the shards concatenated in index order."""
    index = checked_index(outdir)
    values: list[Any] = []
    for shard in index.splits[split].shards:
        with h5ml.open(outdir / shard.path) as ds:
            values.extend(list(ds[split][feature][:]))
    return values


def leftovers(outdir: Path) -> list[str]:
    return sorted(str(p.relative_to(outdir)) for p in outdir.rglob("*"))


def test_writer_factory_and_isinstance(tmp_path: Path) -> None:
    """A plain Writer stays a Writer; a shard option gives a ShardedWriter, which is not one (it writes a folder)."""
    with h5ml.Writer(tmp_path / "plain.h5", {"name": "p"}) as plain:
        assert isinstance(plain, h5ml.Writer)
        plain.append("train", {"x": np.zeros((2, 1), "f4")})
    with h5ml.Writer(tmp_path / "ds", {"name": "d"}, samples_per_shard=1) as sharded:
        assert isinstance(sharded, h5ml.ShardedWriter) and not isinstance(sharded, h5ml.Writer)
        sharded.append("train", {"x": np.zeros((2, 1), "f4")})
    assert [s.num_samples for s in checked_index(tmp_path / "ds").splits["train"].shards] == [1, 1]


def test_samples_per_shard_splits_batches_exactly(tmp_path: Path) -> None:
    """SPEC §12.4: 33 samples in batches of 7 with samples_per_shard=10: shards of 10, 10, 10, 3, in order."""
    out = tmp_path / "ds"
    x = np.arange(33 * 4, dtype="f4").reshape(33, 4)
    labels = [f"s{i}" for i in range(33)]
    with h5ml.Writer(out, {"name": "ds", "license": "MIT"}, samples_per_shard=10) as w:
        for start in range(0, 33, 7):
            w.append("train", {"x": x[start : start + 7], "label": labels[start : start + 7]})
        w.append("test", {"x": x[:3], "label": labels[:3]})
    index = checked_index(out)
    assert [s.path for s in index.splits["train"].shards] == [f"train/train-0000{i}.h5" for i in range(4)]
    assert [s.num_samples for s in index.splits["train"].shards] == [10, 10, 10, 3]
    assert [s.num_samples for s in index.splits["test"].shards] == [3]
    assert index.metadata["name"] == "ds" and index.metadata["license"] == "MIT"
    np.testing.assert_array_equal(np.stack(read_split(out, "train", "x")), x)
    assert read_split(out, "train", "label") == labels
    assert leftovers(out) == [
        "index.json", "test", "test/test-00000.h5", "train", *(f"train/train-0000{i}.h5" for i in range(4))
    ]  # fmt: skip
    for shard in index.splits["train"].shards:
        assert h5ml.validate(out / shard.path).valid


def test_shard_size_counts_stored_bytes(tmp_path: Path) -> None:
    """By bytes: float32 (16,) samples are 64 stored bytes; shard_size=1000 holds 15 (960), a 16th would exceed."""
    out = tmp_path / "ds"
    x = np.arange(100 * 16, dtype="f4").reshape(100, 16)
    with h5ml.Writer(out, {"name": "ds"}, shard_size=1000) as w:
        for start in range(0, 100, 40):
            w.append("train", {"x": x[start : start + 40]})
    counts = [s.num_samples for s in checked_index(out).splits["train"].shards]
    assert counts == [15] * 6 + [10]
    np.testing.assert_array_equal(np.stack(read_split(out, "train", "x")), x)


def test_shard_size_with_strings_and_units(tmp_path: Path) -> None:
    """Strings count their UTF-8 bytes + 16; "1KiB" is 1024 bytes; each shard stops before the next would exceed."""
    out = tmp_path / "ds"
    texts = [("é" * (i % 13)) + str(i) for i in range(200)]  # 2-byte characters: bytes, not code points, count
    with h5ml.Writer(out, {"name": "ds"}, shard_size="1KiB") as w:
        w.append("train", {"t": texts})
    counts = [s.num_samples for s in checked_index(out).splits["train"].shards]
    sizes = [len(t.encode()) + 16 for t in texts]
    start = 0
    for count in counts[:-1]:
        assert sum(sizes[start : start + count]) <= 1024 < sum(sizes[start : start + count + 1])
        start += count
    assert sum(counts) == 200 and read_split(out, "train", "t") == texts


def test_a_sample_larger_than_shard_size_gets_its_own_shard(tmp_path: Path) -> None:
    """A sample larger than shard_size is not dropped: it is alone in its shard."""
    out = tmp_path / "ds"
    with h5ml.Writer(out, {"name": "ds"}, shard_size=100) as w:
        w.append("train", {"x": np.ones((3, 64), "f8")})  # 512 bytes each
    assert [s.num_samples for s in checked_index(out).splits["train"].shards] == [1, 1, 1]


def test_compressed_shards_end_near_shard_size(tmp_path: Path) -> None:
    """gzip on real photographs: the file size after flush is what is counted, so shards end near shard_size."""
    import skimage.data

    photo = skimage.data.astronaut()  # 512x512x3, uint8
    tiles = np.stack([photo[r : r + 64, c : c + 64] for r in range(0, 512, 64) for c in range(0, 512, 64)])
    out = tmp_path / "ds"
    limit = 200_000
    with h5ml.Writer(out, {"name": "ds"}, shard_size=limit, compression="gzip") as w:
        for start in range(0, 64, 8):
            w.append("train", {"image": tiles[start : start + 8]})
    index = checked_index(out)
    shards = index.splits["train"].shards
    assert sum(s.num_samples for s in shards) == 64
    # uncompressed, a shard would hold 16 tiles of 12288 bytes (196608); gzipped, each holds more, and every
    # shard but the last ends within a few percent of the limit (HDF5's metadata, written at close, is extra)
    assert all(s.num_samples > 16 for s in shards[:-1])
    assert all(limit * 0.8 <= s.size_bytes <= limit * 1.05 for s in shards[:-1]), [s.size_bytes for s in shards]
    np.testing.assert_array_equal(np.stack(read_split(out, "train", "image")), tiles)


def test_later_shards_keep_the_first_shards_features(tmp_path: Path) -> None:
    """Features inferred from the first batch (ragged, categorical, bool, bytes) are declared alike in every shard."""
    out = tmp_path / "ds"
    rng = np.random.default_rng(1)
    ragged = [rng.normal(size=(n, 2)).astype("f4") for n in (3, 1, 4, 2, 5, 1)]
    with h5ml.Writer(out, {"name": "ds"}, samples_per_shard=2, features={"label": {"role": "target"}}) as w:
        w.append(
            "train",
            {
                "r": ragged[:3],
                "label": h5ml.Categorical([0, 2, 1], ["cat", "dog", "eel"]),
                "flag": np.array([True, False, True]),
                "blob": [b"a", b"bb", b""],
            },
        )
        w.append(
            "train",
            {
                "r": ragged[3:],
                "label": h5ml.Categorical([0, 0, 0], ["cat", "dog", "eel"]),
                "flag": np.array([False, False, True]),
                "blob": [b"c", b"dd", b"eee"],
            },
        )
        w.append("test", {"r": ragged[:1]})  # a split without the general key's feature
    index = checked_index(out)
    assert [s.num_samples for s in index.splits["train"].shards] == [2, 2, 2]
    features = index.splits["train"].features
    assert features["label"].class_names == ("cat", "dog", "eel") and features["flag"].dtype == "|b1"
    for shard in index.splits["train"].shards:
        with h5py.File(out / shard.path, "r") as f:
            assert f["train/label"].attrs["role"] == "target"
    assert [a.tolist() for a in read_split(out, "train", "r")] == [a.tolist() for a in ragged]
    assert read_split(out, "train", "blob") == [b"a", b"bb", b"", b"c", b"dd", b"eee"]


def test_update_metadata_reaches_shards_already_closed(tmp_path: Path) -> None:
    """Metadata set at the end (a converter's skipped files) is in every shard, so they share one card (§12.2)."""
    out = tmp_path / "ds"
    with h5ml.Writer(out, {"name": "ds"}, samples_per_shard=2) as w:
        w.append("train", {"x": np.zeros((5, 2), "f4")})
        w.update_metadata({"description": "five zeros", "note": "set last"})
    index = checked_index(out)
    assert index.metadata["description"] == "five zeros" and index.metadata["note"] == "set last"
    assert len(index.splits["train"].shards) == 3


def test_exception_inside_with_writes_no_index(tmp_path: Path) -> None:
    """An exception inside ``with``: no index, no shard, and the folder the writer made is gone."""
    out = tmp_path / "ds"
    with pytest.raises(RuntimeError, match="boom"), h5ml.Writer(out, {"name": "ds"}, samples_per_shard=2) as w:
        w.append("train", {"x": np.zeros((7, 2), "f4")})
        raise RuntimeError("boom")
    assert not out.exists()


def test_abort_and_exceptions_leave_a_previous_dataset_untouched(tmp_path: Path) -> None:
    """With overwrite=True, an aborted or failed rewrite leaves the old index and shards exactly as they were."""
    out = tmp_path / "ds"
    with h5ml.Writer(out, {"name": "ds"}, samples_per_shard=2) as w:
        w.append("train", {"x": np.arange(6, dtype="f4").reshape(3, 2)})
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    w2 = h5ml.Writer(out, {"name": "ds"}, samples_per_shard=1, overwrite=True)
    w2.append("train", {"x": np.zeros((4, 2), "f4")})
    w2.close(abort=True)
    with (
        pytest.raises(KeyboardInterrupt),
        h5ml.Writer(out, {"name": "ds"}, samples_per_shard=1, overwrite=True) as w3,
    ):
        w3.append("train", {"x": np.zeros((4, 2), "f4")})
        raise KeyboardInterrupt
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
    assert not [p for p in out.iterdir() if p.name.startswith(STAGING_PREFIX)]


def test_a_failed_index_write_leaves_no_shard_behind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The index's rename fails (a fault injected in os.replace): the shards moved into place are removed again."""
    out = tmp_path / "ds"
    real_replace = os.replace

    def failing_replace(src: Any, dst: Any) -> None:
        if str(dst).endswith("index.json"):
            raise OSError(28, "No space left on device", str(dst))
        real_replace(src, dst)

    w = h5ml.Writer(out, {"name": "ds"}, samples_per_shard=2)
    w.append("train", {"x": np.zeros((5, 2), "f4")})
    monkeypatch.setattr(os, "replace", failing_replace)
    with pytest.raises(OSError, match="No space left"):
        w.close()
    monkeypatch.undo()
    assert not out.exists()  # the writer made the folder; nothing of this dataset is left in it


_CHILD = """
import sys, numpy as np, h5ml
w = h5ml.Writer(sys.argv[1], {"name": "ds"}, samples_per_shard=50)
i = 0
while True:
    w.append("train", {"x": np.full((25, 256), i, "f4")})
    w.flush()
    i += 1
"""


def test_sigkill_mid_write_leaves_no_index(tmp_path: Path) -> None:
    """A writer killed with SIGKILL while shards roll over leaves no index, and no file at a shard's final path."""
    out = tmp_path / "ds"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "reference"), os.environ.get("PYTHONPATH", "")])}
    with subprocess.Popen([sys.executable, "-c", _CHILD, str(out)], env=env, stderr=subprocess.PIPE) as child:
        try:
            deadline = time.monotonic() + 60
            while len(list(out.glob(f"{STAGING_PREFIX}*/train/train-*.h5"))) < 3:
                assert child.poll() is None, child.communicate()[1].decode()
                assert time.monotonic() < deadline, "the child wrote no three shards in 60 s"
                time.sleep(0.05)
        finally:
            child.send_signal(signal.SIGKILL)
            child.communicate(timeout=30)
    assert child.returncode == -signal.SIGKILL
    assert not (out / "index.json").exists()
    # everything left is inside the hidden staging folder, which no index lists
    assert [p.name for p in out.iterdir()] and all(p.name.startswith(STAGING_PREFIX) for p in out.iterdir())
    # writing the folder again works: the leftover is not a dataset's content
    with h5ml.Writer(out, {"name": "ds"}, samples_per_shard=50) as w:
        w.append("train", {"x": np.zeros((60, 2), "f4")})
    assert [s.num_samples for s in checked_index(out).splits["train"].shards] == [50, 10]


def test_overwrite_is_needed_and_removes_stale_shards(tmp_path: Path) -> None:
    """An existing index is refused without overwrite=True; with it, the old shards the new index lacks go."""
    out = tmp_path / "ds"
    with h5ml.Writer(out, {"name": "ds"}, samples_per_shard=2) as w:
        w.append("train", {"x": np.zeros((9, 2), "f4")})
        w.append("validation", {"x": np.zeros((1, 2), "f4")})
    old = checked_index(out)
    with pytest.raises(FileExistsError, match=r"pass overwrite=True \(--overwrite\)"):
        h5ml.Writer(out, {"name": "ds"}, samples_per_shard=2)
    with h5ml.Writer(out, {"name": "ds"}, samples_per_shard=4, overwrite=True) as w:
        w.append("train", {"x": np.ones((6, 2), "f4")})
    new = checked_index(out)
    assert new.fingerprint != old.fingerprint and list(new.splits) == ["train"]
    assert leftovers(out) == ["index.json", "train", "train/train-00000.h5", "train/train-00001.h5"]


def test_folders_that_are_not_datasets_are_refused(tmp_path: Path) -> None:
    """A non-empty folder without index, a file, a missing parent: refused before anything is written."""
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "notes.txt").write_text("mine")
    with pytest.raises(FileExistsError, match="not empty"):
        h5ml.Writer(busy, {"name": "b"}, samples_per_shard=2, overwrite=True)
    assert leftovers(busy) == ["notes.txt"]
    (tmp_path / "file").write_text("x")
    with pytest.raises(NotADirectoryError):
        h5ml.Writer(tmp_path / "file", {"name": "b"}, samples_per_shard=2)
    with pytest.raises(FileNotFoundError):
        h5ml.Writer(tmp_path / "no" / "ds", {"name": "b"}, samples_per_shard=2)


@pytest.mark.parametrize(
    ("options", "words"),
    [
        ({"shard_size": "1G"}, "shard_size must be"),
        ({"shard_size": 0}, "shard_size must be at least 1 byte"),
        ({"samples_per_shard": 0}, "samples_per_shard must be a whole number"),
        ({"samples_per_shard": 2, "mode": "a"}, "mode='a'"),
    ],
)
def test_bad_shard_options_name_the_parameter(tmp_path: Path, options: dict[str, Any], words: str) -> None:
    """Python messages name Python parameters; nothing is created."""
    with pytest.raises(ParameterError, match=words):
        h5ml.Writer(tmp_path / "ds", {"name": "d"}, **options)
    assert not (tmp_path / "ds").exists()


def test_bad_metadata_is_refused_before_the_folder_is_made(tmp_path: Path) -> None:
    """Metadata the schema refuses raises at construction, as for a plain Writer, and creates nothing."""
    with pytest.raises(h5ml.MetadataError):
        h5ml.Writer(tmp_path / "ds", {"name": "d", "format": "x"}, samples_per_shard=2)
    assert not (tmp_path / "ds").exists()


def test_a_failed_append_changes_nothing(tmp_path: Path) -> None:
    """A batch refused whole (lengths) or in a part past a shard's limit (a bad code) stores no sample."""
    out = tmp_path / "ds"
    names = ["a", "b"]
    with h5ml.Writer(out, {"name": "ds"}, shard_size=64) as w:
        with pytest.raises(WriterError):
            w.append("train", {"x": np.zeros((3, 2), "f4"), "y": np.zeros(2, "i8")})
        w.append("train", {"x": np.zeros((3, 2), "f4"), "c": h5ml.Categorical([0, 1, 0], names)})
        bad = h5ml.Categorical([0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 7], names)  # its last code is out of range
        with pytest.raises(EncodingError):
            w.append("train", {"x": np.zeros((11, 2), "f4"), "c": bad})
        w.append("train", {"x": np.ones((2, 2), "f4"), "c": h5ml.Categorical([1, 1], names)})
    index = checked_index(out)
    assert index.splits["train"].num_samples == 5
    assert read_split(out, "train", "c") == [0, 1, 0, 1, 1]


def test_both_limits_close_a_shard_at_whichever_comes_first(tmp_path: Path) -> None:
    """samples_per_shard with shard_size: float32 (16,) samples are 64 bytes; each limit closes shards in turn.

    shard_size=1000 holds 15 samples (960 bytes); with samples_per_shard=10 the count closes first (10, 10, 5),
    with samples_per_shard=20 the bytes close first (15, 10): whichever limit a shard reaches first.
    """
    x = np.arange(25 * 16, dtype="f4").reshape(25, 16)
    for per_shard, expected in ((10, [10, 10, 5]), (20, [15, 10])):
        out = tmp_path / f"ds{per_shard}"
        with h5ml.Writer(out, {"name": "ds"}, shard_size=1000, samples_per_shard=per_shard) as w:
            w.append("train", {"x": x})
        assert [s.num_samples for s in checked_index(out).splits["train"].shards] == expected
        np.testing.assert_array_equal(np.stack(read_split(out, "train", "x")), x)


def test_both_limits_on_the_command_line(tmp_path: Path) -> None:
    """h5ml shard with --shard-size and --samples-per-shard: the same whichever-first shards as in Python."""
    import io

    from h5ml.tools import cli

    source = tmp_path / "one.h5"
    with h5ml.Writer(source, {"name": "one"}) as w:
        w.append("train", {"x": np.arange(25 * 16, dtype="f4").reshape(25, 16)})
    out = tmp_path / "ds"
    err = io.StringIO()
    code = cli.run(
        ["shard", str(source), str(out), "--shard-size", "1000", "--samples-per-shard", "20"], io.StringIO(), err
    )
    assert code == 0, err.getvalue()
    assert [s.num_samples for s in checked_index(out).splits["train"].shards] == [15, 10]


@pytest.mark.parametrize("name", ["x.h5", "x.HDF5", "x.h5ml"])
def test_a_file_name_is_refused_as_a_sharded_folder(tmp_path: Path, name: str) -> None:
    """Writer("x.h5", samples_per_shard=3) is refused in Python's words (parameter path); nothing is created."""
    with pytest.raises(ParameterError, match=r"names a file .*a sharded dataset is a folder.*\(parameter path\)"):
        h5ml.Writer(tmp_path / name, {"name": "ds"}, samples_per_shard=3)
    assert list(tmp_path.iterdir()) == []
    (tmp_path / name).mkdir()  # an existing folder is a folder, whatever its name
    with h5ml.Writer(tmp_path / name, {"name": "ds"}, samples_per_shard=3) as w:
        w.append("train", {"x": np.zeros((4, 2), "f4")})
    assert [s.num_samples for s in checked_index(tmp_path / name).splits["train"].shards] == [3, 1]
