"""Feature and split sinks (h5ml.writer.sinks): creating HDF5 objects, appending batches, reading them back (§5, §6, §7, §8).

Files are built with the sinks alone and read back with plain h5py.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import pytest

from h5ml.errors import WriterError
from h5ml.model.fingerprint import fingerprint_feature
from h5ml.model.layout import Layout, feature_attrs, infer_layout
from h5ml.model.values import Categorical, FeatureSpec
from h5ml.writer.batches import Batch, normalize
from h5ml.writer.compress import ChunkPool
from h5ml.writer.sinks import FeatureSink, SplitSink

SEED = 99
N = 50


def columns() -> dict[str, Any]:
    """One column of each encoding, N samples."""
    rng = np.random.default_rng(SEED)
    return {
        "image": rng.integers(0, 256, (N, 3, 2), dtype=np.uint8),
        "score": np.where(rng.random(N) < 0.2, np.nan, rng.standard_normal(N)),
        "text": [f"t{i}é" for i in range(N)],
        "label": Categorical(rng.integers(-1, 4, N), ["a", "b", "c", "d"]),
        "audio": [rng.integers(-9, 9, (int(k), 2), dtype=np.int16) for k in rng.integers(0, 5, N)],
        "mask": [rng.standard_normal((int(a), int(b))).astype(np.float32) for a, b in rng.integers(1, 4, (N, 2))],
        "blob": [bytes(rng.integers(0, 256, int(k), dtype=np.uint8)) for k in rng.integers(0, 6, N)],
    }


def part(value: Any, a: int, b: int) -> Any:
    if isinstance(value, Categorical):
        return Categorical(value.codes[a:b], value.class_names)
    return value[a:b]


def build(path: Path, cols: dict[str, Any], compression: str | None = None) -> SplitSink:
    """Write the columns through a SplitSink in three batches, flushing after the first and at the end."""
    f = h5py.File(path, "w")
    split = SplitSink("train", f.create_group("train"), expected_samples=N)
    for name, value in cols.items():
        layout = infer_layout(value, FeatureSpec(), name)
        sink = FeatureSink("train", name, layout, feature_attrs(layout, FeatureSpec(), name), compression)
        sink.reset_fingerprint_and_stats()
        split.features[name] = sink
    for a, b in [(0, 17), (17, 17), (17, N)]:
        for name, value in cols.items():
            batch = normalize(split.features[name].layout, part(value, a, b), name)
            split.features[name].feed(batch)
            split.features[name].pending.append(batch.owned())
        split.num_samples += b - a
        if a == 0:
            split.flush(final=False, compression_opts=5)  # created before the length is known
    split.flush(final=True, compression_opts=5)
    f.flush()
    return split


def test_sinks_write_what_they_were_fed(tmp_path: Path) -> None:
    """§6: values, offsets and shapes on disk equal the source; the fed fingerprints equal fingerprint_feature's."""
    cols = columns()
    split = build(tmp_path / "s.h5", cols, compression="gzip")
    g = split.group
    np.testing.assert_array_equal(g["image"][()], cols["image"])
    assert g["image"].compression == "gzip" and g["image"].compression_opts == 5 and g["image"].maxshape == (None, 3, 2)
    np.testing.assert_array_equal(g["score"][()], cols["score"])
    assert g["text"].asstr()[()].tolist() == cols["text"] and g["text"].compression is None
    np.testing.assert_array_equal(g["label/codes"][()], cols["label"].codes)
    assert g["label/class_names"].asstr()[()].tolist() == ["a", "b", "c", "d"]
    off = g["audio/offsets"][()]
    assert off[0] == 0 and off.shape == (N + 1,)
    for i, sample in enumerate(cols["audio"]):
        np.testing.assert_array_equal(g["audio/values"][off[i] : off[i + 1]], sample)
    off, shapes = g["mask/offsets"][()], g["mask/shapes"][()]
    for i, sample in enumerate(cols["mask"]):
        np.testing.assert_array_equal(g["mask/values"][off[i] : off[i + 1]].reshape(shapes[i]), sample)
    off = g["blob/offsets"][()]
    assert [g["blob/values"][off[i] : off[i + 1]].tobytes() for i in range(N)] == cols["blob"]
    assert g["blob"].attrs["media_type"] == "application/octet-stream" and g["image"].attrs["encoding"] == "dense"
    fp = {name: sink.hasher.fingerprint() for name, sink in split.features.items() if sink.hasher is not None}
    assert fp["image"] == fingerprint_feature("dense", cols["image"])
    assert fp["text"] == fingerprint_feature("string", cols["text"])
    assert fp["blob"] == fingerprint_feature("bytes", cols["blob"])
    assert fp["label"] == fingerprint_feature("categorical", cols["label"].codes, class_names=["a", "b", "c", "d"])
    assert {n for n, s in split.features.items() if s.stats is not None} == {"image", "score", "audio", "mask"}
    assert all(s.written == N and not s.pending for s in split.features.values())
    split.group.file.close()


def test_rehash_of_stored_features_continues_fingerprints_and_stats(tmp_path: Path) -> None:
    """§8.2/§6.7: a feature loaded from the file and re-read has the fingerprint and statistics of the one fed."""
    split = build(tmp_path / "r.h5", columns())
    for name, fed in split.features.items():
        assert fed.obj is not None and fed.hasher is not None
        loaded = FeatureSink.from_stored("train", name, fed.obj, N, str(tmp_path / "r.h5"))
        assert (loaded.layout, loaded.written, loaded.written_rows) == (fed.layout, fed.written, fed.written_rows)
        assert all(d.maxshape[0] is None for d in loaded.growing_datasets())
        loaded.rehash()
        assert loaded.hasher is not None and loaded.hasher.fingerprint() == fed.hasher.fingerprint(), name
        if fed.stats is None:
            assert loaded.stats is None
        else:
            assert loaded.stats is not None
            assert loaded.stats.attrs() == pytest.approx(fed.stats.attrs(), rel=1e-12), name
    split.group.file.close()


def test_final_flush_sizes_chunks_to_the_samples(tmp_path: Path) -> None:
    """§7.3: created on the final flush, a feature's chunks hold no more rows than the split has (power of two)."""
    with h5py.File(tmp_path / "c.h5", "w") as f:
        split = SplitSink("train", f.create_group("train"))
        layout = Layout("dense", np.dtype("<f4"), (128,))
        sink = FeatureSink("train", "x", layout, {"encoding": "dense"}, None)
        sink.reset_fingerprint_and_stats()
        split.features["x"] = sink
        sink.pending.append(normalize(layout, np.zeros((100, 128), np.float32), "x"))
        split.pending_bytes = 1
        split.flush(final=True, compression_opts=None)
        assert f["train/x"].chunks == (128, 128) and f["train/x"].shape == (100, 128)
        assert split.pending_bytes == 0 and f["train/x"].attrs["encoding"] == "dense"


def test_zero_length_axes_get_unit_chunks_and_unlimited_maxshape(tmp_path: Path) -> None:
    """§6.2/§7.1: a sample axis of length 0 gets chunk length 1 and an unlimited maximum (HDF5 needs chunk
    dimensions >= 1 and no larger than a fixed maximum); the dataset grows and reads back."""
    with h5py.File(tmp_path / "z.h5", "w") as f:
        split = SplitSink("train", f.create_group("train"))
        layout = Layout("dense", np.dtype("<f4"), (3, 0))
        sink = FeatureSink("train", "x", layout, {"encoding": "dense"}, "gzip")
        sink.reset_fingerprint_and_stats()
        split.features["x"] = sink
        for n in (4, 2):
            batch = normalize(layout, np.zeros((n, 3, 0), np.float32), "x")
            sink.feed(batch)
            sink.pending.append(batch)
            split.flush(final=False, compression_opts=None)
        ds = f["train/x"]
        assert ds.shape == (6, 3, 0) and ds.maxshape == (None, 3, None) and ds.chunks[1:] == (3, 1)
        assert ds[()].shape == (6, 3, 0) and ds.compression == "gzip"
        assert sink.hasher is not None
        assert sink.hasher.fingerprint() == fingerprint_feature("dense", np.zeros((6, 3, 0), np.float32))


def test_load_stored_rereads_features_and_drop_shuffle_seed(tmp_path: Path) -> None:
    """§7.6: loading a stored split re-reads its features and keeps shuffle_seed; drop_shuffle_seed removes it."""
    build(tmp_path / "l.h5", {"x": np.arange(N)}).group.file.close()
    with h5py.File(tmp_path / "l.h5", "r+") as f:
        f["train"].attrs["shuffle_seed"] = 3
        split = SplitSink("train", f["train"], num_samples=N, frozen=True, stored={"x": f["train/x"]}, from_file=True)
        assert split.feature_names == ["x"]
        split.load_stored(str(tmp_path / "l.h5"))
        assert split.stored == {} and split.feature_names == ["x"]
        assert int(f["train"].attrs["shuffle_seed"]) == 3
        hasher = split.features["x"].hasher
        assert hasher is not None and hasher.fingerprint() == fingerprint_feature("dense", np.arange(N))
        split.drop_shuffle_seed()
        assert "shuffle_seed" not in f["train"].attrs
        f["train"].attrs["shuffle_seed"] = 4
        SplitSink("train", f["train"]).drop_shuffle_seed()  # a split this writer created keeps its seed
        assert int(f["train"].attrs["shuffle_seed"]) == 4


def test_failed_load_stored_changes_nothing(tmp_path: Path) -> None:
    """§5.3: if one stored feature cannot be loaded, the split keeps every feature stored and loads none."""
    build(tmp_path / "f.h5", {"x": np.arange(N), "y": np.arange(N)}).group.file.close()
    with h5py.File(tmp_path / "f.h5", "r+") as f:
        del f["train/y"].attrs["encoding"]
        stored = {"x": f["train/x"], "y": f["train/y"]}
        split = SplitSink("train", f["train"], num_samples=N, frozen=True, stored=dict(stored), from_file=True)
        with pytest.raises(WriterError, match="unknown or missing encoding"):
            split.load_stored(str(tmp_path / "f.h5"))
        assert split.features == {} and split.stored == stored and split.feature_names == ["x", "y"]


def test_from_stored_refuses_features_it_cannot_extend(tmp_path: Path) -> None:
    """§5.3/§6: unknown encodings, wrong object kinds, malformed groups and wrong lengths are refused."""
    path = str(tmp_path / "b.h5")
    with h5py.File(path, "w") as f:
        f["x"] = np.arange(3)
        f["x"].attrs["encoding"] = "dense"
        f["u"] = np.arange(3)
        f["g"] = np.arange(3)
        f["g"].attrs["encoding"] = "ragged"
        f.create_group("r").attrs["encoding"] = "ragged"
        cases = [
            ("u", 3, "unknown or missing encoding None"),
            ("g", 3, "a ragged feature must be a group"),
            ("r", 3, "the ragged feature is malformed"),
            ("x", 4, "it has 3 samples but /train has num_samples = 4"),
        ]
        for name, n, match in cases:
            with pytest.raises(WriterError, match=match) as err:
                FeatureSink.from_stored("train", name, f[name], n, path)
            assert (err.value.path, err.value.hdf5_path) == (path, f"/train/{name}")
            assert str(err.value).startswith(f"{path}:/train/{name}: ")


def test_write_pending_writes_large_batches_as_they_are(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """§7: dense batches of a chunk of rows or more are written without a copy, the small ones between them joined."""
    written: list[Batch] = []
    original = FeatureSink.write

    def recorded(self: FeatureSink, batch: Batch, pool: ChunkPool | None = None) -> None:
        written.append(batch)
        original(self, batch, pool)

    monkeypatch.setattr(FeatureSink, "write", recorded)
    x = np.arange(40 * 3, dtype=np.float32).reshape(40, 3)
    layout = Layout("dense", np.dtype("<f4"), (3,))
    with h5py.File(tmp_path / "w.h5", "w") as f:
        split = SplitSink("train", f.create_group("train"))
        sink = FeatureSink("train", "x", layout, {"encoding": "dense"}, "gzip")
        sink.reset_fingerprint_and_stats()
        split.features["x"] = sink
        sink.create(split.group, final=False, expected_samples=8, compression_opts=None)
        assert f["train/x"].chunks == (8, 3)
        cuts = [0, 9, 10, 12, 20, 28, 29, 40]
        pending = [normalize(layout, x[a:b], "x") for a, b in itertools.pairwise(cuts)]
        sink.pending = list(pending)
        split.flush(final=False, compression_opts=None)
        assert [b.n for b in written] == [9, 3, 8, 8, 1, 11]  # [9] [1+2] [8] [8] [1] [11]
        assert all(written[i] is pending[j] for i, j in [(0, 0), (2, 3), (3, 4), (4, 5), (5, 6)])
        assert sink.pending == [] and sink.written == 40
        np.testing.assert_array_equal(f["train/x"][()], x)
