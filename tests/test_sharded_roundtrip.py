"""One sharded dataset through every tool of SPEC §12: the sharded writer, the validator, the reader and unshard."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np

import h5ml
from h5ml.tools import cli


def _columns(n: int, seed: int) -> dict[str, object]:
    rng = np.random.default_rng(seed)
    return {
        "image": rng.integers(0, 256, (n, 4, 4, 3), dtype=np.uint8),
        "label": rng.integers(0, 3, n),
        "wave": [rng.standard_normal(int(k)).astype(np.float32) for k in rng.integers(1, 40, n)],
        "caption": [f"sample {seed}-{i}" for i in range(n)],
    }


def _run(*args: str) -> tuple[int, str]:
    out = io.StringIO()
    code = cli.run(list(args), out, out)
    return code, out.getvalue()


def _batch(columns: dict[str, object], start: int, stop: int) -> dict[str, object]:
    batch = {k: v[start:stop] for k, v in columns.items()}  # type: ignore[index]
    batch["label"] = h5ml.Categorical(batch["label"], NAMES)
    return batch


NAMES = ["cat", "dog", "owl"]


def test_a_dataset_written_in_shards_validates_reads_and_unshards_as_one_file(tmp_path: Path) -> None:
    """SPEC §12.1-§12.5: what the sharded writer writes is a valid index whose splits read as one file."""
    train, test = _columns(53, 1), _columns(9, 2)
    with h5ml.Writer(
        tmp_path / "ds", {"name": "pets", "license": "MIT", "description": "Pets, in shards."}, samples_per_shard=10
    ) as writer:
        for start in range(0, 53, 7):  # batches that straddle shard boundaries
            writer.append("train", _batch(train, start, start + 7))
        writer.append("test", _batch(test, 0, 9))
    h5ml.write(
        tmp_path / "one.h5",
        {"train": _batch(train, 0, 53), "test": _batch(test, 0, 9)},
        metadata={"name": "pets", "license": "MIT", "description": "Pets, in shards."},
    )

    code, output = _run("validate", "--deep", "--strict", str(tmp_path / "ds"))
    assert code == 0, output

    with h5ml.open(tmp_path / "ds") as sharded, h5ml.open(tmp_path / "one.h5") as one:
        assert [len(s.shards) for s in sharded.index.splits.values()] == [6, 1]
        assert {name: len(split) for name, split in sharded.splits.items()} == {"train": 53, "test": 9}
        rows = [*np.random.default_rng(0).permutation(53)[:40].tolist(), 52, 0, 52]
        got, want = sharded["train"].read(rows), one["train"].read(rows)
        np.testing.assert_array_equal(got["image"], want["image"])
        np.testing.assert_array_equal(got["label"], want["label"])
        np.testing.assert_array_equal(got["caption"], want["caption"])
        for a, b in zip(got["wave"], want["wave"], strict=True):
            np.testing.assert_array_equal(a, b)
        assert sharded["train"].features["label"].class_names == ["cat", "dog", "owl"]

    code, output = _run("unshard", str(tmp_path / "ds" / "index.json"), str(tmp_path / "back.h5"))
    assert code == 0, output
    with h5ml.open(tmp_path / "back.h5") as back, h5ml.open(tmp_path / "one.h5") as one:
        for split in ("train", "test"):
            for name, feature in one[split].features.items():
                assert back[split].features[name].fingerprint == feature.fingerprint, (split, name)


def test_inspect_shows_a_sharded_dataset_from_its_index(tmp_path: Path) -> None:
    """``h5ml inspect INDEX`` (SPEC §12.1): splits, sample and shard counts, features; JSON is the index itself."""
    meta = {"name": "pets", "license": "MIT", "keywords": ["cats", "dogs"], "acme:batch": 7}
    with h5ml.Writer(tmp_path / "ds", meta, samples_per_shard=10) as writer:
        writer.append("train", _batch(_columns(23, 3), 0, 23))
    code, output = _run("inspect", str(tmp_path / "ds"))
    assert "keywords: cats, dogs\n" in output and "license: MIT\n" in output and "acme:batch: 7\n" in output
    assert code == 0, output
    assert "sharded h5ml dataset 'pets' (format 1.2)" in output
    assert "train: 23 samples in 3 shards" in output
    assert "categorical" in output and "ragged" in output
    cells = [[c.strip() for c in line.split("│")] for line in output.splitlines() if "│" in line]
    rows = {row[0]: row[1:4] for row in cells}
    # dtypes named as for one file (uint8, not the index's |u1; str, not utf-8)
    assert rows["image"] == ["dense", "uint8", "(4, 4, 3)"] and rows["caption"] == ["string", "str", "()"]
    assert rows["wave"][:2] == ["ragged", "float32"] and "|u1" not in output and "utf-8" not in output
    code, output = _run("inspect", "--format", "json", str(tmp_path / "ds" / "index.json"))
    assert code == 0, output
    document = json.loads(output)
    with h5ml.open(tmp_path / "ds") as ds:
        assert document["index"]["fingerprint"] == ds.fingerprint
    assert [s["num_samples"] for s in document["index"]["splits"]["train"]["shards"]] == [10, 10, 3]


def test_validate_states_the_whole_datasets_verdict(tmp_path: Path) -> None:
    """SPEC §12: the index's own line counts its own issues; the dataset's line counts its shards too."""
    with h5ml.Writer(tmp_path / "ds", {"name": "pets", "license": "MIT"}, samples_per_shard=10) as writer:
        writer.append("train", _batch(_columns(12, 4), 0, 12))  # no description: W204 in every shard
    code, output = _run("validate", "--strict", "--quiet", str(tmp_path / "ds"))
    assert code == 1
    assert "(the index itself): VALID (0 errors, 0 warnings" in output
    assert "the sharded dataset is INVALID (--strict: warnings fail): 2 of 2 shards failed" in output
    code, output = _run("validate", "--quiet", str(tmp_path / "ds"))
    assert code == 0
    assert "the sharded dataset is VALID: 0 of 2 shards failed (0 errors, 2 warnings" in output
