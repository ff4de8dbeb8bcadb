"""The reference writer (h5ml.writer): layout §5, encodings §6, chunks §7, integrity §8, atomic finish §4.4.

Files are read back with plain h5py (and Debian's h5dump), never with the
h5ml reader, so these tests check the bytes on disk against SPEC.md.
"""

from __future__ import annotations

import json
import math
import multiprocessing
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from h5ml import spec
from h5ml.chunks import cache_bytes_for
from h5ml.errors import EncodingError, MetadataError, WriterError
from h5ml.fingerprint import file_fingerprint, fingerprint_feature
from h5ml.writer import Categorical, FeatureSpec, Writer, write

SEED = 1234
H5DUMP = Path("/usr/bin/h5dump")
CHILD_TIMEOUT_S = 120


def temp_files(target: Path) -> list[Path]:
    """The writer's temporary files for ``target`` (``.<name>.h5ml-tmp-*`` beside it)."""
    return sorted(target.parent.glob(f".{target.name}.h5ml-tmp-*"))


def root_attrs_in_child(path: Path) -> dict[str, Any]:
    """Read the root attribute names of a possibly damaged file in a child process with a time limit (§10.3)."""
    code = "import h5py, json, sys\nwith h5py.File(sys.argv[1], 'r') as f: print(json.dumps(sorted(f.attrs)))"
    out = subprocess.run(
        [sys.executable, "-c", code, str(path)], capture_output=True, text=True, timeout=CHILD_TIMEOUT_S, check=True
    )
    return {"attrs": json.loads(out.stdout)}


def lengths_of(samples: list[np.ndarray]) -> np.ndarray:
    return np.array([s.shape[0] for s in samples], dtype=np.int64)


def example_splits(n: int = 40, seed: int = SEED) -> dict[str, dict[str, Any]]:
    """One feature of every encoding, and a boolean."""
    rng = np.random.default_rng(seed)
    return {
        "train": {
            "image": rng.integers(0, 256, (n, 4, 5), dtype=np.uint8),
            "score": rng.standard_normal(n).astype(np.float32),
            "flag": rng.random(n) > 0.5,
            "text": [f"sample {i} é" for i in range(n)],
            "label": Categorical(rng.integers(-1, 3, n), ["cat", "dog", "bird"]),
            "audio": [rng.integers(-5, 5, int(k), dtype=np.int16) for k in rng.integers(0, 7, n)],
            "mask": [np.ones((int(a), int(b)), dtype=np.float64) for a, b in rng.integers(1, 4, (n, 2))],
            "blob": [bytes(rng.integers(0, 256, int(k), dtype=np.uint8)) for k in rng.integers(0, 9, n)],
        }
    }


# -- round trips -----------------------------------------------------------------


def test_round_trip_every_encoding(tmp_path: Path) -> None:
    """§5/§6: each Python value lands in its encoding's HDF5 layout with the values and attributes of SPEC.md."""
    splits = example_splits()
    src = splits["train"]
    target = write(
        tmp_path / "all.h5",
        splits,
        {"name": "all", "description": "every encoding", "license": "CC0-1.0"},
        features={"label": {"role": "target"}, "blob": FeatureSpec(media_type="image/png", role="input")},
    )
    assert target == tmp_path / "all.h5"
    assert temp_files(target) == []
    with h5py.File(target, "r") as f:
        assert f.attrs["format"] == spec.FORMAT_NAME and f.attrs["complete"] == 1
        assert f.attrs["name"] == "all" and f.attrs["description"] == "every encoding"
        assert f.id.get_create_plist().get_version()[0] <= spec.MAX_SUPERBLOCK_VERSION  # §3.1
        g = f["train"]
        assert g.attrs["num_samples"] == 40
        for name in src:
            assert g[name].attrs["encoding_version"] == spec.ENCODING_VERSION
        # dense
        assert g["image"].attrs["encoding"] == "dense" and g["image"].dtype == np.uint8
        np.testing.assert_array_equal(g["image"][:], src["image"])
        np.testing.assert_array_equal(g["score"][:], src["score"])
        # bool: uint8 0/1 with logical_dtype (§3.3)
        assert g["flag"].dtype == np.uint8 and g["flag"].attrs["logical_dtype"] == "bool"
        np.testing.assert_array_equal(g["flag"][:], src["flag"].astype(np.uint8))
        # string: variable-length UTF-8 (§3.4, §6.4)
        info = h5py.check_string_dtype(g["text"].dtype)
        assert info is not None and info.encoding == "utf-8" and info.length is None
        assert g["text"].asstr()[:].tolist() == src["text"]
        # categorical (§6.5)
        lab = g["label"]
        assert isinstance(lab, h5py.Group) and lab.attrs["encoding"] == "categorical" and lab.attrs["role"] == "target"
        assert lab["class_names"].asstr()[:].tolist() == ["cat", "dog", "bird"]
        assert lab["codes"].dtype.kind == "i"
        np.testing.assert_array_equal(lab["codes"][:], src["label"].codes)
        # ragged varying in the first axis only (§6.3)
        audio = g["audio"]
        assert set(audio) == {"values", "offsets"} and audio["values"].dtype == np.int16
        offsets = audio["offsets"][:]
        assert offsets.dtype == np.int64 and offsets[0] == 0 and offsets[-1] == audio["values"].shape[0]
        for i, sample in enumerate(src["audio"]):
            np.testing.assert_array_equal(audio["values"][offsets[i] : offsets[i + 1]], sample)
        # ragged varying in two axes: 1-D values and shapes (§6.3)
        mask = g["mask"]
        assert set(mask) == {"values", "offsets", "shapes"} and mask["values"].ndim == 1
        off, shapes = mask["offsets"][:], mask["shapes"][:]
        for i, sample in enumerate(src["mask"]):
            assert tuple(shapes[i]) == sample.shape
            np.testing.assert_array_equal(mask["values"][off[i] : off[i + 1]].reshape(shapes[i]), sample)
        # bytes (§6.6)
        blob = g["blob"]
        assert blob.attrs["media_type"] == "image/png" and blob["values"].dtype == np.uint8
        off = blob["offsets"][:]
        assert [blob["values"][off[i] : off[i + 1]].tobytes() for i in range(40)] == src["blob"]


def test_h5dump_110_reads_the_file(tmp_path: Path) -> None:
    """§3.1: a written file opens with Debian's h5dump 1.10 and shows the root attributes."""
    if not H5DUMP.exists():
        pytest.skip("Debian's h5dump is not installed here (CI installs hdf5-tools)")
    target = write(tmp_path / "d.h5", example_splits(10), {"name": "dumped", "description": "x" * 110_000})
    out = subprocess.run([str(H5DUMP), "-H", str(target)], capture_output=True, text=True, timeout=CHILD_TIMEOUT_S)
    assert out.returncode == 0, out.stderr
    for attr in ("format", "format_version", "name", "created", "writer", "must_understand", "complete", "fingerprint"):
        assert f'ATTRIBUTE "{attr}"' in out.stdout
    assert 'GROUP "train"' in out.stdout and 'DATASET "image"' in out.stdout


def test_c07_large_metadata_round_trips(tmp_path: Path) -> None:
    """Case C07, §4.5: a 110 kB description and a class list of about 110 kB are stored and read back equal."""
    description = "".join(chr(0x41 + i % 26) for i in range(110_000))
    names = [f"class-{i:06d}-" + "é" * 4 for i in range(7_000)]
    assert sum(len(n.encode()) for n in names) > 110_000
    rng = np.random.default_rng(SEED)
    codes = rng.integers(0, len(names), 50)
    target = write(
        tmp_path / "c07.h5",
        {"train": {"y": Categorical(codes, names)}},
        {"name": "c07", "description": description},
        features={"y": {"description": description}},
    )
    with h5py.File(target, "r") as f:
        assert f.attrs["description"] == description
        assert f["train/y"].attrs["description"] == description
        assert f["train/y/class_names"].asstr()[:].tolist() == names
        np.testing.assert_array_equal(f["train/y/codes"][:], codes)


def test_c09_chunks_span_whole_samples(tmp_path: Path) -> None:
    """Case C09, §7.1/§7.2: a resizable (0, 128) float32 feature gets chunks of whole samples, rows a power of two."""
    rng = np.random.default_rng(SEED)
    target = tmp_path / "c09.h5"
    with Writer(target, {"name": "c09"}) as w:
        w.add_feature("train", "x", encoding="dense", dtype=np.float32, sample_shape=(128,))
        w.append("train", {"x": rng.random((10, 128), dtype=np.float32)})
        w.flush()  # created before the length is known: the full target size
        w.append("train", {"x": rng.random((5, 128), dtype=np.float32)})
    write(tmp_path / "small.h5", {"train": {"x": np.zeros((100, 128), np.float32)}})
    with h5py.File(target, "r") as f, h5py.File(tmp_path / "small.h5", "r") as g:
        ds = f["train/x"]
        assert ds.maxshape == (None, 128) and ds.shape == (15, 128)
        assert ds.chunks == (2048, 128)
        small = g["train/x"].chunks
        assert small == (128, 128)  # capped at the next power of two >= 100
        for chunks in (ds.chunks, small):
            assert chunks[1:] == (128,) and chunks[0] & (chunks[0] - 1) == 0


def test_c11_chunk_bytes_fit_the_default_cache(tmp_path: Path) -> None:
    """Case C11, §7.3: an (N, 1024) float32 gzip feature has chunks <= 1 MiB, and the reader's cache holds them."""
    x = np.random.default_rng(SEED).random((3000, 1024), dtype=np.float32)
    target = write(tmp_path / "c11.h5", {"train": {"x": x}}, compression="gzip")
    with h5py.File(target, "r") as f:
        ds = f["train/x"]
        assert ds.compression == "gzip"
        chunk_nbytes = ds.dtype.itemsize * math.prod(ds.chunks)
        assert ds.chunks == (256, 1024)
        assert chunk_nbytes <= 1 << 20
        assert cache_bytes_for(chunk_nbytes) >= chunk_nbytes
        np.testing.assert_array_equal(ds[1234], x[1234])


def test_samples_over_16_mib_are_split_along_the_next_axis(tmp_path: Path) -> None:
    """§7.1: one chunk per slab of a sample larger than 16 MiB; the later axis stays whole."""
    x = np.ones((1, 4100, 1024), dtype=np.float32)  # 16.4 MB per sample
    target = write(tmp_path / "big.h5", {"train": {"x": x}})
    with h5py.File(target, "r") as f:
        assert f["train/x"].chunks == (1, 256, 1024)
        assert float(f["train/x"][0, 4099, 1023]) == 1.0


def test_ragged_and_index_datasets_are_chunked_by_bytes(tmp_path: Path) -> None:
    """§7.5: ragged values, offsets, shapes and codes are chunked along axis 0 with the byte rule, other axes whole."""
    rng = np.random.default_rng(SEED)
    samples = [rng.random((int(k), 3)) for k in rng.integers(1, 10, 500)]
    target = write(tmp_path / "r.h5", {"train": {"r": samples, "y": Categorical(np.zeros(500, int), ["a"])}})
    with h5py.File(target, "r") as f:
        assert f["train/r/values"].chunks[1:] == (3,)
        assert f["train/r/offsets"].chunks == (512,)  # 501 offsets -> next power of two
        assert f["train/y/codes"].chunks == (512,)
        assert f["train/r/values"].maxshape == (None, 3) and f["train/r/offsets"].maxshape == (None,)


# -- options ---------------------------------------------------------------------


def test_feature_options_general_and_per_split(tmp_path: Path) -> None:
    """§6.1: role, description, units, sample_rate; "split/feature" keys override "feature" keys field by field."""
    x = np.zeros((3, 2), np.float32)
    target = write(
        tmp_path / "o.h5",
        {"train": {"wave": x}, "test": {"wave": x}},
        features={
            "wave": {"role": "input", "units": "V", "sample_rate": 16000},
            "test/wave": FeatureSpec(description="held out", units="mV"),
        },
    )
    with h5py.File(target, "r") as f:
        train, test = f["train/wave"].attrs, f["test/wave"].attrs
        assert (train["role"], train["units"], float(train["sample_rate"])) == ("input", "V", 16000.0)
        assert "description" not in train
        assert (test["role"], test["units"], test["description"]) == ("input", "mV", "held out")
        assert test["sample_rate"].dtype == np.float64 and test["sample_rate"].shape == ()


def test_spec_encodings_and_dtype(tmp_path: Path) -> None:
    """§6: FeatureSpec forces encodings (strings as categorical, ints as codes) and casts dtypes."""
    target = write(
        tmp_path / "s.h5",
        {"train": {"animal": ["dog", "cat", None, "dog"], "coarse": np.arange(4.0), "k": np.array([1, 0, 1, 1])}},
        features={
            "animal": {"encoding": "categorical"},
            "coarse": {"dtype": "float16"},
            "k": {"class_names": ["no", "yes"]},
        },
    )
    with h5py.File(target, "r") as f:
        assert f["train/animal/class_names"].asstr()[:].tolist() == ["cat", "dog"]  # sorted unique
        assert f["train/animal/codes"][:].tolist() == [1, 0, -1, 1]
        assert f["train/coarse"].dtype == np.float16
        assert f["train/k"].attrs["encoding"] == "categorical"
        assert f["train/k/codes"][:].tolist() == [1, 0, 1, 1]


class _PandasLikeCategorical:
    """The two attributes of pandas.Categorical the writer relies on."""

    def __init__(self, codes: list[int], categories: list[str]) -> None:
        self.codes = np.array(codes, dtype=np.int8)
        self.categories = categories

    def __len__(self) -> int:
        return len(self.codes)


def test_pandas_like_categorical(tmp_path: Path) -> None:
    """§6.5: an object with .codes and .categories is written as categorical."""
    target = write(tmp_path / "p.h5", {"train": {"c": _PandasLikeCategorical([0, 1, -1], ["lo", "hi"])}})
    with h5py.File(target, "r") as f:
        assert f["train/c/codes"][:].tolist() == [0, 1, -1]
        assert f["train/c/class_names"].asstr()[:].tolist() == ["lo", "hi"]


def test_gzip_compression_and_level(tmp_path: Path) -> None:
    """§3.5: gzip (deflate, a core filter) with byte shuffle for multi-byte types; strings are not compressed."""
    target = write(
        tmp_path / "z.h5",
        {"train": {"x": np.zeros((100, 8), np.float32), "u": np.zeros(100, np.uint8), "s": ["a"] * 100}},
        compression="gzip",
        compression_opts=7,
        features={"u": {"compression": False}},
    )
    with h5py.File(target, "r") as f:
        assert (f["train/x"].compression, f["train/x"].compression_opts, f["train/x"].shuffle) == ("gzip", 7, True)
        assert f["train/u"].compression is None
        assert f["train/s"].compression is None


# -- shuffle on write ----------------------------------------------------------------


def test_shuffle_is_one_permutation_per_split(tmp_path: Path) -> None:
    """§7.6: stored sample i is source sample p[i], p = default_rng(shuffle_seed).permutation(N), in every feature."""
    n = 30
    rng = np.random.default_rng(SEED)
    x = rng.random((n, 2))
    names = [str(i) for i in range(n)]
    rag = [np.full(i % 4, i, dtype=np.int32) for i in range(n)]
    splits = {"train": {"x": x, "name": names, "rag": rag}}
    target = write(tmp_path / "s.h5", splits, shuffle=True, seed=7)
    p = np.random.default_rng(7).permutation(n)
    with h5py.File(target, "r") as f:
        g = f["train"]
        assert g.attrs["shuffle_seed"] == 7
        np.testing.assert_array_equal(g["x"][:], x[p])
        assert g["name"].asstr()[:].tolist() == [names[i] for i in p]
        off = g["rag/offsets"][:]
        for i in range(n):
            np.testing.assert_array_equal(g["rag/values"][off[i] : off[i + 1]], rag[p[i]])
    assert sorted(p.tolist()) == list(range(n)) and p.tolist() != list(range(n))
    again = write(tmp_path / "again.h5", splits, shuffle=True, seed=7)
    with h5py.File(target, "r") as f, h5py.File(again, "r") as g:
        assert f.attrs["fingerprint"] == g.attrs["fingerprint"]


def test_shuffle_without_seed_records_the_drawn_seed(tmp_path: Path) -> None:
    """§7.6: a drawn seed is recorded and reproduces the stored order."""
    x = np.arange(50)
    target = write(tmp_path / "s.h5", {"train": {"x": x}, "test": {"x": x[:10]}}, shuffle=True)
    with h5py.File(target, "r") as f:
        seed = int(f["train"].attrs["shuffle_seed"])
        assert seed >= 0 and int(f["test"].attrs["shuffle_seed"]) == seed
        np.testing.assert_array_equal(f["train/x"][:], x[np.random.default_rng(seed).permutation(50)])


def test_no_shuffle_records_no_seed(tmp_path: Path) -> None:
    """§7.6: without shuffle the order is the source's and no shuffle_seed is written."""
    target = write(tmp_path / "n.h5", {"train": {"x": np.arange(5)}})
    with h5py.File(target, "r") as f:
        assert "shuffle_seed" not in f["train"].attrs
        assert f["train/x"][:].tolist() == [0, 1, 2, 3, 4]
    with pytest.raises(WriterError, match="shuffle is False"):
        write(tmp_path / "m.h5", {"train": {"x": np.arange(5)}}, seed=3)


# -- fingerprints ------------------------------------------------------------------------


def test_fingerprints_equal_fingerprint_of_source(tmp_path: Path) -> None:
    """§8.1-§8.3: each feature's fingerprint is that of its source values; the file's combines them."""
    src = example_splits()["train"]
    target = write(tmp_path / "f.h5", {"train": src})
    mask_values = np.concatenate([m.reshape(-1) for m in src["mask"]])
    mask_shapes = np.array([m.shape for m in src["mask"]])
    wanted = {
        "image": fingerprint_feature("dense", src["image"]),
        "score": fingerprint_feature("dense", src["score"]),
        "flag": fingerprint_feature("dense", src["flag"]),
        "text": fingerprint_feature("string", src["text"]),
        "label": fingerprint_feature("categorical", src["label"].codes, class_names=["cat", "dog", "bird"]),
        "audio": fingerprint_feature("ragged", np.concatenate(src["audio"]), lengths=lengths_of(src["audio"])),
        "mask": fingerprint_feature("ragged", mask_values, lengths=mask_shapes.prod(axis=1), shapes=mask_shapes),
        "blob": fingerprint_feature("bytes", src["blob"]),
    }
    with h5py.File(target, "r") as f:
        got = {name: f["train"][name].attrs["fingerprint"] for name in wanted}
        assert got == wanted
        assert f.attrs["fingerprint"] == file_fingerprint({("train", k): v for k, v in wanted.items()})


# -- streaming ---------------------------------------------------------------------------


def _attr_value(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.floating):  # statistics merged in another order differ in the last bits
        return float(f"{float(value):.12g}")
    return value


def _datasets(path: Path) -> dict[str, Any]:
    """Every dataset's values and every object's attributes (floats to 12 digits), except the creation time."""
    out: dict[str, Any] = {}

    def visit(name: str, obj: Any) -> None:
        attrs = {k: _attr_value(v) for k, v in obj.attrs.items()}
        out[name + "@attrs"] = attrs
        if isinstance(obj, h5py.Dataset):
            out[name] = obj.asstr()[()].tolist() if h5py.check_string_dtype(obj.dtype) else obj[()].tolist()

    with h5py.File(path, "r") as f:
        visit("", f)
        f.visititems(visit)
    del out["@attrs"]["created"]
    return out


def test_streaming_writer_equals_write(tmp_path: Path) -> None:
    """§5/§8: appending batches (and single samples) produces the same values and fingerprints as write()."""
    src = example_splits(25)["train"]
    names = ["cat", "dog", "bird"]
    write(tmp_path / "one.h5", {"train": src}, {"name": "same"})
    with Writer(tmp_path / "many.h5", {"name": "same"}) as w:
        w.add_feature("train", "mask", encoding="ragged", dtype=np.float64, sample_ndim=2)
        for a, b in [(0, 7), (7, 7), (7, 20)]:
            batch = {k: v[a:b] for k, v in src.items() if k != "label"}
            batch["label"] = src["label"].codes[a:b]
            if a == 0:
                w.add_feature("train", "label", encoding="categorical", class_names=names)
            w.append("train", batch)
        for i in range(20, 25):
            sample = {k: v[i] for k, v in src.items() if k != "label"}
            sample["label"] = names[src["label"].codes[i]] if src["label"].codes[i] >= 0 else None
            w.append_sample("train", sample)
    assert _datasets(tmp_path / "one.h5") == _datasets(tmp_path / "many.h5")


def test_appended_arrays_may_be_reused(tmp_path: Path) -> None:
    """Buffered batches are copies: overwriting the caller's array after append does not change the file."""
    buf = np.zeros((4, 3), np.float32)
    with Writer(tmp_path / "b.h5") as w:
        for i in range(3):
            buf[:] = i
            w.append("train", {"x": buf})
    with h5py.File(tmp_path / "b.h5", "r") as f:
        assert f["train/x"][:, 0].tolist() == [0] * 4 + [1] * 4 + [2] * 4


def test_empty_split_and_declared_features(tmp_path: Path) -> None:
    """§5.3: a split with declared features and no samples has num_samples 0 and empty features."""
    with Writer(tmp_path / "e.h5") as w:
        w.add_split("test", "no samples yet")
        w.add_feature("test", "x", encoding="dense", dtype=np.int16, sample_shape=(3,))
        w.add_feature("test", "r", encoding="ragged", dtype=np.float32)
        w.add_feature("test", "s", encoding="string")
    with h5py.File(tmp_path / "e.h5", "r") as f:
        assert f["test"].attrs["num_samples"] == 0 and f["test"].attrs["description"] == "no samples yet"
        assert f["test/x"].shape == (0, 3) and f["test/x"].dtype == np.int16
        assert f["test/r/offsets"][:].tolist() == [0]
        assert f["test/s"].shape == (0,)
        assert f["test/x"].attrs["fingerprint"] == fingerprint_feature("dense", np.zeros((0, 3), np.int16))


# -- errors ----------------------------------------------------------------------------


@pytest.mark.parametrize("bad", ["", "a/b", ".hidden", "_hidden", " lead", "trail ", "x" * 256, "é" * 128])
def test_invalid_names_are_refused(tmp_path: Path, bad: str) -> None:
    """§5.1/§5.2: split and feature names must match the naming rule; the error names the offender."""
    with pytest.raises(WriterError, match="is invalid") as split_err:
        write(tmp_path / "n.h5", {bad: {"x": np.zeros(2)}})
    assert repr(bad)[:40] in str(split_err.value)
    with pytest.raises(WriterError, match="is invalid"):
        write(tmp_path / "n.h5", {"train": {bad: np.zeros(2)}})
    assert not (tmp_path / "n.h5").exists() and temp_files(tmp_path / "n.h5") == []


def test_features_of_different_lengths_are_refused(tmp_path: Path) -> None:
    """§5.3: every feature of a split has num_samples samples; the error lists the features and lengths."""
    with pytest.raises(WriterError, match=r"x: 3, y: 2"):
        write(tmp_path / "l.h5", {"train": {"x": np.zeros(3), "y": np.zeros(2)}})
    with pytest.raises(WriterError, match=r"a: 2, b: 1"), Writer(tmp_path / "l.h5") as w:
        w.append("train", {"a": np.zeros(2), "b": ["x"]})
    assert not (tmp_path / "l.h5").exists() and temp_files(tmp_path / "l.h5") == []


@pytest.mark.parametrize(
    ("value", "options", "error", "match"),
    [
        (Categorical([0, 3], ["a", "b"]), {}, EncodingError, r"code 3 at sample 1 is outside \[-1, 2\)"),
        (Categorical([0, -2], ["a", "b"]), {}, EncodingError, "code -2"),
        (Categorical([0], ["a", "a"]), {}, EncodingError, "unique"),
        (Categorical([0], ["a", ""]), {}, EncodingError, "non-empty"),
        (["cat", "emu"], {"class_names": ["cat"]}, EncodingError, "not among the class names"),
        (np.zeros(2, np.complex64), {}, EncodingError, "encoding"),
        (["a\x00b"], {}, EncodingError, "NUL"),
        ([np.zeros(2), np.zeros((2, 2))], {}, EncodingError, "same number of axes"),
        (np.array([1.5]), {"dtype": "int8"}, EncodingError, "float values"),
        (np.array([300]), {"dtype": "int8"}, EncodingError, "do not fit"),
        (np.zeros(2), {"role": "label"}, WriterError, "role"),
        (np.zeros(2), {"sample_rate": -1}, WriterError, "sample_rate"),
        ([b"a"], {"media_type": "png"}, WriterError, "media_type"),
        (np.zeros(2), {"media_type": "image/png"}, WriterError, "bytes features only"),
        ([], {}, EncodingError, "empty list"),
        (np.float32(3.0), {}, EncodingError, "expected an array or a list of samples"),
    ],
)
def test_invalid_values_are_refused(
    tmp_path: Path, value: Any, options: dict[str, Any], error: type[Exception], match: str
) -> None:
    """§6: values that break their encoding's rules raise an error naming the file and the HDF5 path."""
    target = tmp_path / "v.h5"
    with pytest.raises(error, match=match) as err:
        write(target, {"train": {"f": value}}, features={"f": options} if options else None)
    assert "/train/f" in str(err.value) and str(target) in str(err.value)
    assert (err.value.path, err.value.hdf5_path) == (str(target), "/train/f")  # type: ignore[attr-defined]
    assert not target.exists() and temp_files(target) == []


def test_writer_misuse(tmp_path: Path) -> None:
    """§5.3: batches hold exactly the split's features; features cannot be added once samples exist."""
    target = tmp_path / "m.h5"
    with Writer(target) as w:
        w.append("train", {"x": np.zeros(2), "y": np.zeros(2)})
        with pytest.raises(WriterError, match=r"missing \['y'\], unexpected \['z'\]"):
            w.append("train", {"x": np.zeros(1), "z": np.zeros(1)})
        with pytest.raises(WriterError, match="already has its features"):
            w.add_feature("train", "z", encoding="string")
        with pytest.raises(WriterError, match="already exists"):
            w.add_split("train")
        with pytest.raises(EncodingError, match="sample shape"):
            w.append("train", {"x": np.zeros((1, 2)), "y": np.zeros(1)})
        w.add_feature("test", "s", encoding="string")
        with pytest.raises(WriterError, match=r"lacks declared features \['s'\]"):
            w.append("test", {"t": ["a"]})
        w.append("test", {"s": ["a"]})
    with pytest.raises(WriterError, match="closed"):
        w.append("train", {"x": np.zeros(1), "y": np.zeros(1)})
    with h5py.File(target, "r") as f:
        assert f["train"].attrs["num_samples"] == 2 and f["test"].attrs["num_samples"] == 1


def test_bad_writer_options(tmp_path: Path) -> None:
    """§3.5: only deflate is offered; the target's directory must exist; metadata is checked."""
    with pytest.raises(WriterError, match="compression"):
        Writer(tmp_path / "c.h5", compression="lzf")
    with pytest.raises(WriterError, match="gzip level"):
        Writer(tmp_path / "c.h5", compression="gzip", compression_opts=12)
    with pytest.raises(WriterError, match="does not exist"):
        Writer(tmp_path / "missing" / "c.h5")
    with pytest.raises(WriterError, match="unknown option"):
        write(tmp_path / "c.h5", {"train": {"x": np.zeros(1)}}, features={"x": {"colour": "red"}})
    with pytest.raises(WriterError, match="match no feature"):
        write(tmp_path / "c.h5", {"train": {"x": np.zeros(1)}}, features={"train/y": {"role": "target"}})
    with pytest.raises(MetadataError):
        write(tmp_path / "c.h5", {"train": {"x": np.zeros(1)}}, {"name": "c", "complete": 1})
    assert list(tmp_path.iterdir()) == []


# -- atomicity: C08 and aborts -------------------------------------------------------------


def test_exception_in_with_block_leaves_nothing(tmp_path: Path) -> None:
    """§4.4: an exception escaping the with block deletes the temporary file; the target is never created."""
    target = tmp_path / "x.h5"
    with pytest.raises(RuntimeError, match="boom"), Writer(target) as w:
        w.append("train", {"x": np.zeros((5, 2))})
        w.flush()
        assert len(temp_files(target)) == 1
        raise RuntimeError("boom")
    assert not target.exists()
    assert list(tmp_path.iterdir()) == []


def test_abort_keeps_the_previous_file(tmp_path: Path) -> None:
    """§4.4: close(abort=True) and failed writes leave a previous complete file byte-identical."""
    target = write(tmp_path / "k.h5", {"train": {"x": np.arange(3)}})
    before = target.read_bytes()
    w = Writer(target)
    w.append("train", {"x": np.arange(10)})
    w.close(abort=True)
    with pytest.raises(EncodingError):
        write(target, {"train": {"x": np.arange(3), "c": Categorical([0, 0, 5], ["a"])}})
    assert target.read_bytes() == before
    assert temp_files(target) == []


def _write_then_die(target: str, mode: str) -> None:
    """Child of the C08 test: append and flush, buffer more, then die without any cleanup."""
    rng = np.random.default_rng(SEED)
    w = Writer(target, None if mode == "a" else {"name": "killed"}, mode=mode)  # type: ignore[arg-type]
    for _ in range(3):
        w.append("train", {"x": rng.random((64, 256), dtype=np.float32)})
    w.flush()
    w.append("train", {"x": rng.random((64, 256), dtype=np.float32)})
    os.kill(os.getpid(), signal.SIGKILL)


def _run_child(target_fn: Any, *args: Any) -> int | None:
    ctx = multiprocessing.get_context("spawn")
    proc = ctx.Process(target=target_fn, args=args)
    proc.start()
    proc.join(CHILD_TIMEOUT_S)
    if proc.is_alive():
        proc.kill()
        proc.join()
    return proc.exitcode


@pytest.mark.parametrize("previous", [False, True], ids=["no-previous-file", "previous-file"])
def test_c08_sigkill_mid_write(tmp_path: Path, previous: bool) -> None:
    """Case C08, §4.4: a writer killed after a flush leaves the target absent or byte-identical to the previous
    complete file; the leftover temporary file lacks the completion marker (the validator reports E106)."""
    target = tmp_path / "c08.h5"
    before = None
    if previous:
        write(target, {"train": {"x": np.zeros((10, 256), np.float32)}}, {"name": "before"})
        before = target.read_bytes()
    code = _run_child(_write_then_die, str(target), "a" if previous else "w")
    assert code == -signal.SIGKILL
    if previous:
        assert target.read_bytes() == before
    else:
        assert not target.exists()
    leftovers = temp_files(target)
    assert len(leftovers) == 1
    attrs = root_attrs_in_child(leftovers[0])["attrs"]
    assert "complete" not in attrs
    assert "format" in attrs  # it is an h5ml file in the making, not garbage


# -- append mode and C03 -------------------------------------------------------------------


def test_append_mode_extends_a_split_and_adds_one(tmp_path: Path) -> None:
    """§4.4/§8: mode "a" adds samples and splits; extended fingerprints and statistics cover old and new data."""
    src = example_splits(30)["train"]
    first = {
        k: (v[:20] if not isinstance(v, Categorical) else Categorical(v.codes[:20], v.class_names))
        for k, v in src.items()
    }
    target = write(tmp_path / "a.h5", {"train": first, "test": {"z": np.arange(4)}}, {"name": "grow"})
    shuffled = write(tmp_path / "sh.h5", {"train": {"x": np.arange(5)}, "test": {"x": np.arange(2)}}, shuffle=True)
    with h5py.File(target, "r") as f:
        test_fp = f["test/z"].attrs["fingerprint"]
        image_chunks = f["train/image"].chunks
    with Writer(target, mode="a") as w:
        batch = {k: v[20:] for k, v in src.items() if k != "label"}
        batch["label"] = src["label"].codes[20:]
        w.append("train", batch)
        w.append("valid", {"y": ["p", "q"]})
    write(
        tmp_path / "whole.h5", {"train": src, "test": {"z": np.arange(4)}, "valid": {"y": ["p", "q"]}}, {"name": "grow"}
    )
    got, want = _datasets(target), _datasets(tmp_path / "whole.h5")
    assert got.pop("@attrs").pop("writer") == want.pop("@attrs").pop("writer")
    for key in want:
        if key.endswith("@attrs") or key.count("/") == 0:
            continue
        assert got[key] == want[key], key
    for name in src:
        assert got[f"train/{name}@attrs"] == want[f"train/{name}@attrs"], name
    with h5py.File(target, "r") as f, h5py.File(tmp_path / "whole.h5", "r") as g:
        assert f.attrs["fingerprint"] == g.attrs["fingerprint"] and f.attrs["complete"] == 1
        assert f["train"].attrs["num_samples"] == 30
        assert f["test/z"].attrs["fingerprint"] == test_fp
        assert f["train/image"].chunks == image_chunks
    with Writer(shuffled, mode="a") as w:
        w.append("train", {"x": np.arange(5, 8)})
    with h5py.File(shuffled, "r") as f:  # §7.6: the seed no longer describes the extended split's order
        assert "shuffle_seed" not in f["train"].attrs and "shuffle_seed" in f["test"].attrs
        assert sorted(f["train/x"][:].tolist()) == list(range(8))


def test_append_mode_refuses_incomplete_and_foreign_files(tmp_path: Path) -> None:
    """§4.4: append mode extends only complete h5ml files, and leaves them untouched when it refuses."""
    target = write(tmp_path / "i.h5", {"train": {"x": np.arange(3)}})
    with h5py.File(target, "r+") as f:
        del f.attrs["complete"]
    before = target.read_bytes()
    with pytest.raises(WriterError, match="incomplete"):
        Writer(target, mode="a")
    assert target.read_bytes() == before and temp_files(target) == []
    foreign = tmp_path / "plain.h5"
    with h5py.File(foreign, "w") as f:
        f["x"] = np.arange(3)
    with pytest.raises(WriterError, match="not an h5ml file"):
        Writer(foreign, mode="a")
    fixed = tmp_path / "fixed.h5"
    write(fixed, {"train": {"x": np.arange(3)}})
    with h5py.File(fixed, "r+") as f:
        del f["train/x"]
        f.create_dataset("train/x", data=np.arange(3))  # contiguous: cannot grow
        f["train/x"].attrs["encoding"] = "dense"
        f["train/x"].attrs["encoding_version"] = "1.0"
    with Writer(fixed, mode="a") as w, pytest.raises(WriterError, match="cannot grow"):
        w.append("train", {"x": np.arange(2)})


def test_append_mode_updates_metadata(tmp_path: Path) -> None:
    """§4.2: metadata given in append mode replaces those fields and keeps the others."""
    target = write(
        tmp_path / "u.h5", {"train": {"x": np.arange(3)}}, {"name": "u", "description": "old", "license": "MIT"}
    )
    with Writer(target, {"description": "new"}, mode="a"):
        pass
    with h5py.File(target, "r") as f:
        assert (f.attrs["name"], f.attrs["description"], f.attrs["license"]) == ("u", "new", "MIT")


def test_append_mode_fills_in_missing_fingerprints(tmp_path: Path) -> None:
    """§8.1/§8.3: features another writer left without a fingerprint get one, so the file fingerprint covers all."""
    x = np.arange(12, dtype=np.int16).reshape(6, 2)
    target = write(tmp_path / "m.h5", {"train": {"x": x}}, features={"x": {"role": "input", "units": "m"}})
    with h5py.File(target, "r+") as f:
        del f["train/x"].attrs["fingerprint"]
    with Writer(target, mode="a") as w:
        w.append("test", {"y": ["a"]})
    with h5py.File(target, "r") as f:
        fp = fingerprint_feature("dense", x)
        assert f["train/x"].attrs["fingerprint"] == fp
        assert (f["train/x"].attrs["role"], f["train/x"].attrs["units"]) == ("input", "m")
        expected = file_fingerprint({("train", "x"): fp, ("test", "y"): fingerprint_feature("string", ["a"])})
        assert f.attrs["fingerprint"] == expected


def test_append_mode_keeps_feature_attributes_when_extending(tmp_path: Path) -> None:
    """§6.1: extending a feature keeps its role, description and logical dtype."""
    target = write(
        tmp_path / "k.h5",
        {"train": {"flag": np.array([True, False])}},
        features={"flag": {"role": "target", "description": "is it"}},
    )
    with Writer(target, mode="a") as w:
        w.append("train", {"flag": np.array([True])})
    with h5py.File(target, "r") as f:
        a = f["train/flag"].attrs
        assert (a["role"], a["description"], a["logical_dtype"]) == ("target", "is it", "bool")
        assert f["train/flag"][:].tolist() == [1, 0, 1]
        assert a["fingerprint"] == fingerprint_feature("dense", np.array([True, False, True]))


def _hold_open(path: str, ready: Any, go: Any, out: Any) -> None:
    """Child of the C03 test: keep the file open (locking on) while another process rewrites it."""
    with h5py.File(path, "r", locking=True) as f:
        ready.set()
        go.wait(CHILD_TIMEOUT_S)
        out.put({"splits": sorted(f), "x": f["train/x"][:].tolist(), "fp": f.attrs["fingerprint"]})


def test_c03_append_while_a_reader_holds_the_file(tmp_path: Path) -> None:
    """Case C03, §4.4: a reader holding the target open (with HDF5 locking) never blocks the writer, keeps reading
    its old file, and a fresh open sees the new split."""
    target = write(tmp_path / "c03.h5", {"train": {"x": np.arange(6)}}, {"name": "c03"})
    with h5py.File(target, "r") as f:
        old_fp = f.attrs["fingerprint"]
    ctx = multiprocessing.get_context("spawn")
    ready, go, out = ctx.Event(), ctx.Event(), ctx.Queue()
    reader = ctx.Process(target=_hold_open, args=(str(target), ready, go, out))
    reader.start()
    try:
        assert ready.wait(CHILD_TIMEOUT_S)
        with Writer(target, mode="a") as w:
            w.append("test", {"x": np.arange(3)})
        go.set()
        seen = out.get(timeout=CHILD_TIMEOUT_S)
    finally:
        go.set()
        reader.join(CHILD_TIMEOUT_S)
    assert reader.exitcode == 0
    assert seen == {"splits": ["train"], "x": [0, 1, 2, 3, 4, 5], "fp": old_fp}
    with h5py.File(target, "r") as f:
        assert sorted(f) == ["test", "train"] and f["test/x"][:].tolist() == [0, 1, 2]
        assert f.attrs["fingerprint"] != old_fp


# -- property-based round trip ------------------------------------------------------------------

DTYPES = ["i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8", "f2", "f4", "f8", "?"]
TEXT = st.text(st.characters(codec="utf-8", exclude_characters="\x00"), max_size=8)


@st.composite
def columns(draw: st.DrawFn) -> tuple[dict[str, Any], dict[str, Any]]:
    n = draw(st.integers(0, 12))
    dtype = np.dtype(draw(st.sampled_from(DTYPES)))
    sample_shape = tuple(draw(st.lists(st.integers(1, 3), max_size=2)))
    dense = draw(hnp.arrays(dtype, (n, *sample_shape)))
    ragged = [draw(hnp.arrays(dtype, (draw(st.integers(0, 4)),))) for _ in range(n)]
    k = draw(st.integers(1, 4))
    codes = np.array([draw(st.integers(-1, k - 1)) for _ in range(n)], dtype=np.int64)
    data = {
        "dense": dense,
        "ragged": ragged,
        "text": [draw(TEXT) for _ in range(n)],
        "blob": [draw(st.binary(max_size=6)) for _ in range(n)],
        "cat": Categorical(codes, [f"c{i}" for i in range(k)]),
    }
    options = {
        "ragged": {"encoding": "ragged", "dtype": dtype},
        "text": {"encoding": "string"},
        "blob": {"encoding": "bytes"},
    }
    return data, options


@given(columns(), st.booleans())
def test_round_trip_property(case: tuple[dict[str, Any], dict[str, Any]], gzip: bool) -> None:
    """§3.2/§6: every profile dtype and every encoding reads back bit-exact with plain h5py, fingerprints included."""
    data, options = case
    n = len(data["text"])
    with tempfile.TemporaryDirectory() as tmp:
        target = write(Path(tmp) / "h.h5", {"train": data}, features=options, compression="gzip" if gzip else None)
        with h5py.File(target, "r") as f:
            g = f["train"]
            assert g.attrs["num_samples"] == n
            stored_dtype = np.dtype(np.uint8) if data["dense"].dtype == np.bool_ else data["dense"].dtype
            assert g["dense"].dtype == stored_dtype
            assert g["dense"][()].tobytes() == data["dense"].astype(stored_dtype).tobytes()
            off = g["ragged/offsets"][:]
            assert off.tolist() == [0, *np.cumsum([len(r) for r in data["ragged"]]).tolist()]
            values = g["ragged/values"][:]
            for i, r in enumerate(data["ragged"]):
                assert values[off[i] : off[i + 1]].tobytes() == r.astype(stored_dtype).tobytes()
            assert g["text"].asstr()[()].tolist() == data["text"]
            boff = g["blob/offsets"][:]
            assert [g["blob/values"][boff[i] : boff[i + 1]].tobytes() for i in range(n)] == data["blob"]
            assert g["cat/codes"][()].tolist() == data["cat"].codes.tolist()
            assert g["dense"].attrs["fingerprint"] == fingerprint_feature("dense", data["dense"])
            assert g["text"].attrs["fingerprint"] == fingerprint_feature("string", data["text"])
