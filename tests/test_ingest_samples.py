"""Tests of h5ml.ingest.samples: Python generators and in-memory arrays to h5ml, in bounded memory."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import h5ml
from h5ml.ingest import SKIPPED_ATTR
from h5ml.ingest.features import ROLE_NAMES
from h5ml.ingest.in_memory import convert_arrays
from h5ml.ingest.samples import convert_samples
from h5ml.ingest.shuffling import copy_shuffled


def _assert_strictly_valid(path: Path) -> None:
    report = h5ml.validate(path, deep=True)
    assert report.valid_strict, [(i.code, i.message) for i in report.issues]


def _samples(n: int) -> Iterator[dict[str, Any]]:
    for i in range(n):
        yield {
            "x": np.arange(6, dtype=np.float32).reshape(2, 3) + i,
            "label": i % 3,
            "name": f"sample-{i}",
            "wave": np.arange(i + 1, dtype=np.int16),
            "split": "test" if i % 4 == 3 else "train",
        }


def test_generator_round_trip_with_split_key(tmp_path: Path) -> None:
    out = tmp_path / "gen.h5"
    report = convert_samples(
        _samples(20),
        out,
        split_key="split",
        features={"wave": {"encoding": "ragged", "sample_rate": 8000.0}},
        metadata={"license": "CC0-1.0", "source": "unit test"},
    )
    assert report.samples == {"train": 15, "test": 5} and report.skipped == []
    with h5ml.open(out) as ds:
        assert ds.attrs["license"] == "CC0-1.0" and ds.attrs["source"] == "unit test"
        assert ds.attrs["description"].startswith("Converted from Python samples by h5ml")
        train, test = ds["train"], ds["test"]
        assert set(train.features) == {"x", "label", "name", "wave"}
        assert train["x"].role == "input" and train["label"].role == "target" and train["name"].role is None
        assert train["wave"].encoding == "ragged" and train["wave"].sample_rate == 8000.0
        ids = [i for i in range(20) if i % 4 != 3]
        np.testing.assert_array_equal(
            train["x"][:], np.stack([np.arange(6, dtype=np.float32).reshape(2, 3) + i for i in ids])
        )
        assert train["x"].dtype == np.float32
        np.testing.assert_array_equal(train["label"][:], [i % 3 for i in ids])
        assert list(test["name"][:]) == ["sample-3", "sample-7", "sample-11", "sample-15", "sample-19"]
        waves = test["wave"][:]
        assert [len(w) for w in waves] == [4, 8, 12, 16, 20]
        np.testing.assert_array_equal(waves[2], np.arange(12, dtype=np.int16))
    _assert_strictly_valid(out)


def test_generator_may_reuse_its_buffer(tmp_path: Path) -> None:
    def reusing() -> Iterator[dict[str, Any]]:
        buffer = np.zeros(4, dtype=np.float32)
        for i in range(10):
            buffer[:] = i
            yield {"x": buffer}

    convert_samples(reusing(), tmp_path / "reuse.h5")
    with h5ml.open(tmp_path / "reuse.h5") as ds:
        np.testing.assert_array_equal(ds["train"]["x"][:], np.repeat(np.arange(10, dtype=np.float32), 4).reshape(10, 4))


def _with_bad_samples() -> Iterator[Any]:
    yield {"x": np.zeros(3), "y": 0}
    yield {"x": np.ones(3)}  # no y
    yield [1, 2, 3]  # not a dict
    yield {"x": np.ones(5), "y": 1}  # another shape
    yield {"x": np.full(3, 4.0), "y": 4}


def test_bad_samples_stop_then_skip(tmp_path: Path) -> None:
    out = tmp_path / "bad.h5"
    with pytest.raises(h5ml.IngestError, match=r"sample 1 \(split 'train'\).*missing \['y'\]"):
        convert_samples(_with_bad_samples(), out)
    assert not out.exists() and list(tmp_path.iterdir()) == []

    report = convert_samples(_with_bad_samples(), out, on_error="skip")
    assert report.samples == {"train": 2}
    assert [s.path for s in report.skipped] == ["sample 1", "sample 2", "sample 3"]
    assert "not a dict" in report.skipped[1].reason and "(5,)" in report.skipped[2].reason
    with h5ml.open(out) as ds:
        np.testing.assert_array_equal(ds["train"]["x"][:], [np.zeros(3), np.full(3, 4.0)])
        np.testing.assert_array_equal(ds["train"]["y"][:], [0, 4])
        recorded = json.loads(ds.attrs[SKIPPED_ATTR])
    assert recorded == [s.to_json() for s in report.skipped]
    _assert_strictly_valid(out)


def test_source_that_raises_leaves_no_output(tmp_path: Path) -> None:
    def broken() -> Iterator[dict[str, Any]]:
        yield {"x": np.zeros(2)}
        raise RuntimeError("disk on fire")

    out = tmp_path / "broken.h5"
    out.write_bytes(b"previous content")
    with pytest.raises(h5ml.IngestError, match="RuntimeError: disk on fire after 1 sample") as info:
        convert_samples(broken(), out, overwrite=True)
    assert isinstance(info.value.__cause__, RuntimeError)
    assert out.read_bytes() == b"previous content"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["broken.h5"]
    with pytest.raises(FileExistsError, match="overwrite"):
        convert_samples([{"x": np.zeros(2)}], out)


def test_shuffle_stores_the_seeded_permutation(tmp_path: Path) -> None:
    out = tmp_path / "shuffled.h5"
    samples = [{"x": np.full(2, i, dtype=np.int32), "id": str(i)} for i in range(50)]
    report = convert_samples(samples, out, shuffle=True, seed=7, compression="gzip")
    assert report.samples == {"train": 50}
    order = np.random.default_rng(7).permutation(50)
    with h5ml.open(out) as ds:
        assert ds["train"].shuffle_seed == 7
        np.testing.assert_array_equal(ds["train"]["x"][:][:, 0], order)
        assert list(ds["train"]["id"][:]) == [str(i) for i in order]
        assert ds["train"]["id"].role == ROLE_NAMES["id"] == "metadata"
        assert ds["train"]["x"].compression == "gzip"
        assert ds.attrs["name"] == "shuffled"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["shuffled.h5"]  # the staging file is gone
    report = h5ml.validate(out, deep=True)
    assert report.valid_strict and "I303" not in report.codes


def test_copy_shuffled_keeps_encodings(tmp_path: Path) -> None:
    src = tmp_path / "src.h5"
    h5ml.write(
        src,
        {"train": {"c": h5ml.Categorical(np.array([0, 1, -1, 1]), ["a", "b"]), "r": [np.arange(k) for k in range(4)]}},
        metadata={"license": "MIT", "keywords": ["k1"]},
    )
    counts = copy_shuffled(src, tmp_path / "out.h5", seed=1)
    assert counts == {"train": 4}
    order = np.random.default_rng(1).permutation(4)
    with h5ml.open(tmp_path / "out.h5") as ds:
        assert ds.attrs["license"] == "MIT" and ds.attrs["keywords"] == ["k1"]
        assert ds["train"]["c"].class_names == ["a", "b"]
        np.testing.assert_array_equal(ds["train"]["c"][:], np.array([0, 1, -1, 1])[order])
        assert [len(r) for r in ds["train"]["r"][:]] == order.tolist()


def test_copy_shuffled_declares_features_as_stored(tmp_path: Path) -> None:
    """§6.3, §7.6: a ragged feature with shapes stays one with shapes even when the first block's samples share
    their inner shape (block_bytes=1: one sample a block), bytes keep their media type, a dense feature its shape
    and units; the declaration is the one subset and merge use."""
    src = tmp_path / "src.h5"
    grids = [np.zeros((2, 5), "f4"), np.ones((2, 3), "f4"), np.full((3, 3), 2, "f4"), np.full((1, 5), 3, "f4")]
    h5ml.write(
        src,
        {"train": {"g": grids, "b": [b"a", b"bb", b"", b"dddd"], "x": np.arange(8.0).reshape(4, 2)}},
        metadata={"license": "MIT", "description": "grids"},
        features={"b": {"media_type": "application/octet-stream"}, "x": {"units": "m"}},
    )
    counts = copy_shuffled(src, tmp_path / "out.h5", seed=5, block_bytes=1)
    order = np.random.default_rng(5).permutation(4)
    with h5ml.open(tmp_path / "out.h5") as ds, h5ml.open(src) as before:
        split = ds["train"]
        assert counts == {"train": 4} and split.shuffle_seed == 5
        assert split["g"].sample_shape == before["train"]["g"].sample_shape == (None, None)
        assert [g.shape for g in split["g"][:]] == [grids[i].shape for i in order]
        assert all(np.array_equal(a, grids[i]) for a, i in zip(split["g"][:], order, strict=True))
        assert split["b"].media_type == "application/octet-stream" and split["x"].units == "m"
        assert split["b"][:] == [[b"a", b"bb", b"", b"dddd"][i] for i in order]
    _assert_strictly_valid(tmp_path / "out.h5")


def test_convert_arrays_nested_flat_and_mismatch(tmp_path: Path) -> None:
    x = np.arange(24, dtype=np.float64).reshape(6, 4)
    mm_path = tmp_path / "x.npy"
    np.save(mm_path, x)
    mapped = np.load(mm_path, mmap_mode="r")
    report = convert_arrays(
        {"train": {"x": mapped[:4], "y": np.array([1, 0, 1, 0])}, "test": {"x": mapped[4:], "y": np.array([0, 1])}},
        tmp_path / "nested.h5",
        metadata={"license": "CC-BY-4.0"},
    )
    assert report.samples == {"train": 4, "test": 2}
    with h5ml.open(tmp_path / "nested.h5") as ds:
        np.testing.assert_array_equal(ds["test"]["x"][:], x[4:])
        assert ds["train"]["y"].role == "target" and ds["train"]["x"].role == "input"
    _assert_strictly_valid(tmp_path / "nested.h5")

    flat = {"image": x, "caption": [f"c{i}" for i in range(6)]}
    convert_arrays(flat, tmp_path / "flat.h5", split="validation", shuffle=True, seed=3)
    with h5ml.open(tmp_path / "flat.h5") as ds:
        assert list(ds) == ["validation"] and ds["validation"].shuffle_seed == 3
        order = np.random.default_rng(3).permutation(6)
        np.testing.assert_array_equal(ds["validation"]["image"][:], x[order])
        assert list(ds["validation"]["caption"][:]) == [f"c{i}" for i in order]

    with pytest.raises(h5ml.IngestError, match=r"split 'train'.*x: 6, y: 5"):
        convert_arrays({"x": x, "y": np.zeros(5)}, tmp_path / "mismatch.h5")
    with pytest.raises(h5ml.IngestError, match="mixes splits"):
        convert_arrays({"train": {"x": x}, "y": np.zeros(6)}, tmp_path / "mixed.h5")
    assert not (tmp_path / "mismatch.h5").exists() and not (tmp_path / "mixed.h5").exists()


_MEMORY_CHILD = textwrap.dedent(
    """
    import json, sys
    import numpy as np
    from h5ml.ingest.samples import convert_samples

    def samples():
        for i in range(256):  # 256 samples of 4 MiB: 1 GiB in all
            x = np.arange(1 << 20, dtype=np.float32)
            x += i
            yield {"x": x, "index": i}

    report = convert_samples(samples(), sys.argv[1], progress=False)
    # VmHWM is the peak of this process image only; ru_maxrss also keeps the peak of the forked parent
    # before exec (a large pytest process), so it is not used.
    with open("/proc/self/status") as status:
        peak_kib = next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
    print(json.dumps({"samples": report.total, "peak_bytes": peak_kib * 1024}))
    """
)


@pytest.mark.slow
@pytest.mark.skipif(sys.platform != "linux", reason="reads the peak RSS (VmHWM) from /proc/self/status")
def test_generator_of_one_gib_stays_under_300_mb(tmp_path: Path) -> None:
    """A 1 GiB stream is written by a child whose peak RSS stays below 300 MB (memory bounded by batches)."""
    out = tmp_path / "big.h5"
    done = subprocess.run(
        [sys.executable, "-c", _MEMORY_CHILD, str(out)], capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["samples"] == 256
    assert result["peak_bytes"] < 300_000_000, f"peak RSS {result['peak_bytes'] / 1e6:.0f} MB"
    assert out.stat().st_size > 1 << 30
    base = np.arange(1 << 20, dtype=np.float32)
    with h5ml.open(out) as ds:
        train = ds["train"]
        assert train.num_samples == 256 and train["x"].sample_shape == (1 << 20,)
        for i in (0, 1, 127, 255):
            np.testing.assert_array_equal(train["x"][i], base + i)
        np.testing.assert_array_equal(train["index"][:], np.arange(256))
