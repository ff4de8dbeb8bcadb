"""The reference writer (h5ml.writer.writer): layout §5, encodings §6, chunks §7, integrity §8, atomic finish §4.4.

Files are read back with plain h5py (and Debian's h5dump), never with the
h5ml reader, so these tests check the bytes on disk against SPEC.md.
"""

from __future__ import annotations

import gc
import json
import math
import multiprocessing
import os
import signal
import stat
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import h5ml
from h5ml import spec
from h5ml.errors import (
    EncodingError,
    IncompleteFileError,
    InvalidFileError,
    MetadataError,
    NotH5MLError,
    UnknownExtensionError,
    UnsupportedVersionError,
    WriterError,
)
from h5ml.model.fingerprint import file_fingerprint, fingerprint_feature
from h5ml.spec.attrs import write_attr
from h5ml.spec.chunks import cache_bytes_for
from h5ml.writer.writer import Categorical, FeatureSpec, Writer, write

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


def test_declared_sample_ndim_keeps_shapes_after_a_uniform_first_batch(tmp_path: Path) -> None:
    """§6.3: features={..: sample_ndim} stores shapes even when the first batch varies in its first axis only."""
    first = [np.full((2, 4, 3), 1, np.uint8), np.full((5, 4, 3), 2, np.uint8)]
    later = [np.full((3, 6, 1), 3, np.uint8)]
    with Writer(tmp_path / "d.h5", features={"img": FeatureSpec(encoding="ragged", dtype="u1", sample_ndim=3)}) as w:
        w.append("train", {"img": first})
        w.append("train", {"img": later})
    with h5py.File(tmp_path / "d.h5", "r") as f:
        assert f["train/img/shapes"][()].tolist() == [[2, 4, 3], [5, 4, 3], [3, 6, 1]]
    with h5ml.open(tmp_path / "d.h5") as ds:
        for i, expected in enumerate(first + later):
            np.testing.assert_array_equal(ds["train"]["img"][i], expected)
    other = Writer(tmp_path / "e.h5", features={"img": {"sample_ndim": 2}})
    with pytest.raises(WriterError, match="disagree"):
        other.add_feature("train", "img", encoding="ragged", dtype="u1", sample_ndim=3)
    other.close(abort=True)
    assert not (tmp_path / "e.h5").exists()


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
        assert _members(audio) == {"values", "offsets"} and audio["values"].dtype == np.int16
        offsets = audio["offsets"][:]
        assert offsets.dtype == np.int64 and offsets[0] == 0 and offsets[-1] == audio["values"].shape[0]
        for i, sample in enumerate(src["audio"]):
            np.testing.assert_array_equal(audio["values"][offsets[i] : offsets[i + 1]], sample)
        # ragged varying in two axes: 1-D values and shapes (§6.3)
        mask = g["mask"]
        assert _members(mask) == {"values", "offsets", "shapes"} and mask["values"].ndim == 1
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
    # SPEC §3.1-R3 (where h5dump 1.10 is installed)
    if not H5DUMP.exists():
        if os.environ.get("CI"):
            pytest.fail("Debian's h5dump is missing in CI: scripts/test.sh installs hdf5-tools")
        pytest.skip("Debian's h5dump is not installed here (scripts/test.sh installs hdf5-tools)")
    target = write(tmp_path / "d.h5", example_splits(10), {"name": "dumped", "description": "x" * 110_000})
    out = subprocess.run([str(H5DUMP), "-H", str(target)], capture_output=True, text=True, timeout=CHILD_TIMEOUT_S)
    assert out.returncode == 0, out.stderr
    for attr in ("format", "format_version", "name", "created", "writer", "must_understand", "complete", "fingerprint"):
        assert f'ATTRIBUTE "{attr}"' in out.stdout
    assert 'GROUP "train"' in out.stdout and 'DATASET "image"' in out.stdout


def test_c07_large_metadata_round_trips(tmp_path: Path) -> None:
    """Case C07, §4.5: a 110 kB description and a class list of about 110 kB are stored and read back equal.

    SPEC §4.5-R2: long text is a variable-length string attribute, a long list a dataset (class_names)."""
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


def _members(group: h5py.Group) -> set[str]:
    """The members of a split or feature group but the checksum datasets beside them (SPEC §8.4)."""
    return {name for name in group if not name.startswith("_crc32c.")}


def _datasets(path: Path) -> dict[str, Any]:
    """Every dataset's values and every object's attributes (floats to 12 digits), except the creation time."""
    out: dict[str, Any] = {}

    def visit(name: str, obj: Any) -> None:
        if "_crc32c." in name:  # checksums of stored bytes (SPEC §8.4): string chunks hold heap addresses
            return
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


@pytest.mark.parametrize(
    ("attribute", "value", "error"),
    [
        ("format", "netcdf", NotH5MLError),
        ("format_version", "one", InvalidFileError),
        ("format_version", "2.0", UnsupportedVersionError),
        ("must_understand", "h5ml-zarr-links", UnknownExtensionError),  # a scalar string: one extension
        ("must_understand", np.array([7, 8]), InvalidFileError),
        ("complete", 0, IncompleteFileError),
    ],
    ids=[
        "format",
        "malformed-version",
        "newer-major",
        "scalar-must-understand",
        "must-understand-numbers",
        "incomplete",
    ],
)
def test_append_mode_refuses_a_header_as_the_reader_does(
    tmp_path: Path, attribute: str, value: Any, error: type[Exception]
) -> None:
    """§1.2-§1.5, §4.1, §4.4: Writer(mode="a") and h5ml.open share one header check: the same error type, the
    same file and HDF5 path. A scalar must_understand string names one extension (it is not split into letters)."""
    target = write(tmp_path / "h.h5", {"train": {"x": np.arange(3)}})
    with h5py.File(target, "r+") as f:
        write_attr(f, attribute, value)
    before = target.read_bytes()
    with pytest.raises(error) as by_reader:
        h5ml.open(target)
    with pytest.raises(error) as by_writer:
        Writer(target, mode="a")
    assert type(by_writer.value) is type(by_reader.value) is error
    assert (by_writer.value.path, by_writer.value.hdf5_path) == (str(target), "/")  # type: ignore[attr-defined]
    if attribute == "must_understand" and isinstance(value, str):
        assert "'h5ml-zarr-links'" in str(by_writer.value) and "'h'" not in str(by_writer.value)
    assert target.read_bytes() == before and temp_files(target) == []


def test_append_mode_refuses_incomplete_and_foreign_files(tmp_path: Path) -> None:
    """§4.4: append mode extends only complete h5ml files, and leaves them untouched when it refuses."""
    target = write(tmp_path / "i.h5", {"train": {"x": np.arange(3)}})
    with h5py.File(target, "r+") as f:
        del f.attrs["complete"]
    before = target.read_bytes()
    with pytest.raises(IncompleteFileError, match="completion marker"):
        Writer(target, mode="a")
    assert target.read_bytes() == before and temp_files(target) == []
    foreign = tmp_path / "plain.h5"
    with h5py.File(foreign, "w") as f:
        f["x"] = np.arange(3)
    with pytest.raises(NotH5MLError, match="not an h5ml file"):
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
    sample_shape = tuple(draw(st.lists(st.integers(0, 3), max_size=2)))  # 0-length axes are allowed (§6.2)
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


# -- targets that are not regular files (QA repro 06) -------------------------------------------


def _small() -> dict[str, dict[str, Any]]:
    return {"train": {"x": np.arange(6, dtype=np.int32).reshape(3, 2)}}


def test_fifo_target_is_refused(tmp_path: Path) -> None:
    """§4.4: the writer replaces only regular files; a FIFO is refused by name and stays a FIFO."""
    fifo = tmp_path / "pipe.h5"
    os.mkfifo(fifo)
    with pytest.raises(WriterError, match=r"pipe\.h5 is a FIFO \(named pipe\), not a regular file") as err:
        write(fifo, _small())
    assert err.value.path == str(fifo)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pipe.h5"]


def test_directory_target_is_refused(tmp_path: Path) -> None:
    """§4.4: a directory at the target path is refused; it is left as it was."""
    target = tmp_path / "dir.h5"
    target.mkdir()
    with pytest.raises(WriterError, match=r"dir\.h5 is a directory, not a regular file"):
        Writer(target)
    assert target.is_dir() and list(target.iterdir()) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dir.h5"]


def test_symlink_to_a_regular_file_is_written_through(tmp_path: Path) -> None:
    """§4.4: a link to a regular file is kept; the file it points to is replaced atomically by the new file."""
    real_dir = tmp_path / "real"
    real_dir.mkdir()
    real = write(real_dir / "data.h5", {"train": {"x": np.arange(2)}})
    old_inode = os.stat(real).st_ino
    link = tmp_path / "link.h5"
    link.symlink_to(real)
    assert write(link, _small()) == link
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert os.stat(real).st_ino != old_inode  # a new file was renamed over it, not rewritten in place
    with h5py.File(real, "r") as f:
        assert f["train/x"][()].tolist() == [[0, 1], [2, 3], [4, 5]] and f.attrs["complete"] == 1
    assert sorted(p.name for p in real_dir.iterdir()) == ["data.h5"]  # no temporary file left
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.h5", "real"]
    with Writer(link, mode="a") as w:  # append mode extends the file the link points to
        w.append("test", {"y": ["a"]})
    assert link.is_symlink()
    with h5py.File(real, "r") as f:
        assert sorted(f) == ["test", "train"] and f["train/x"].shape == (3, 2)


def test_dangling_symlink_target_is_refused(tmp_path: Path) -> None:
    """§4.4: a link to nothing is refused; neither the link nor its missing target changes."""
    link = tmp_path / "dangling.h5"
    link.symlink_to(tmp_path / "missing.h5")
    with pytest.raises(WriterError, match=r"dangling\.h5 is a symbolic link to .*missing\.h5.*cannot be reached"):
        write(link, _small())
    assert link.is_symlink() and not (tmp_path / "missing.h5").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dangling.h5"]


@pytest.mark.parametrize("kind", ["fifo", "directory"])
def test_symlink_to_a_special_file_is_refused(tmp_path: Path, kind: str) -> None:
    """§4.4: a link to a FIFO or a directory is refused, naming what the link points to."""
    special = tmp_path / "special"
    if kind == "fifo":
        os.mkfifo(special)
    else:
        special.mkdir()
    link = tmp_path / "link.h5"
    link.symlink_to(special)
    words = "FIFO \\(named pipe\\)" if kind == "fifo" else "directory"
    with pytest.raises(WriterError, match=f"symbolic link to .*special.*, a {words}, not a regular file"):
        write(link, _small())
    assert link.is_symlink() and os.readlink(link) == str(special)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.h5", "special"]


def test_target_that_becomes_a_fifo_is_refused_at_close(tmp_path: Path) -> None:
    """§4.4: the target is checked again just before os.replace; the FIFO stays and the temporary file goes."""
    target = tmp_path / "late.h5"
    w = Writer(target)
    w.append("train", {"x": np.arange(3)})
    os.mkfifo(target)
    with pytest.raises(WriterError, match="is a FIFO"):
        w.close()
    assert stat.S_ISFIFO(os.lstat(target).st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["late.h5"]


def test_target_relinked_while_writing_is_refused(tmp_path: Path) -> None:
    """§4.4: a link that points elsewhere at close than when the writer started is refused."""
    first, second = write(tmp_path / "a.h5", _small()), write(tmp_path / "b.h5", _small())
    link = tmp_path / "link.h5"
    link.symlink_to(first)
    w = Writer(link)
    w.append("train", {"x": np.arange(3)})
    link.unlink()
    link.symlink_to(second)
    before = (first.read_bytes(), second.read_bytes())
    with pytest.raises(WriterError, match="target changed while the file was written"):
        w.close()
    assert (first.read_bytes(), second.read_bytes()) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.h5", "b.h5", "link.h5"]


# -- bad input raises h5ml errors and leaves nothing (QA repros 05, 11) --------------------------


@pytest.mark.parametrize(
    ("bad", "match"), [("x\x00y", "NUL character"), ("x\udcff", "lone surrogate"), ("\x00", "NUL character")]
)
def test_names_hdf5_cannot_store_are_refused(tmp_path: Path, bad: str, match: str) -> None:
    """§5.1.1/§3.4: HDF5 truncates a name at NUL and cannot encode a lone surrogate: such names are refused."""
    target = tmp_path / "n.h5"
    with pytest.raises(WriterError, match=match) as err:
        write(target, {"train": {bad: np.zeros(2)}})
    assert repr(bad) in str(err.value) and err.value.hdf5_path == "/train"
    str(err.value).encode("utf-8")  # the message itself is printable
    with pytest.raises(WriterError, match=match):
        write(target, {bad: {"x": np.zeros(2)}})
    with Writer(target) as w:
        with pytest.raises(WriterError, match=match):
            w.append("train", {bad: np.zeros(2)})
        with pytest.raises(WriterError, match=match):
            w.add_feature("train", bad, encoding="string")
        with pytest.raises(WriterError, match=match):
            w.add_split(bad)
    with h5py.File(target, "r") as f:
        assert list(f) == []
    target.unlink()
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("metadata", "match"),
    [
        ({"name": "n", "must_understand": ["foo"]}, "does not implement"),
        ({"name": "n", "_private": "a"}, "reserved for the specification"),
        ({"name": "n\x00x"}, "NUL character"),
        ({"name": "n", "description": "a\x00b"}, "NUL character"),
        ({"name": "n", "acme:note": "\udc80"}, "lone surrogate"),
        ({"name": "n", "keywords": ["k" * 10] * 20000}, "at most 4087 items"),
        ({"name": "n", "acme:ids": list(range(9000))}, "at most 8174 items"),
        ({"name": "n", "acme:i": 2**70}, "does not fit a signed 64-bit integer"),
        ({"name": "n", "acme:i": [1, -(2**63) - 1]}, "does not fit a signed 64-bit integer"),
    ],
)
def test_metadata_hdf5_cannot_store_is_refused(tmp_path: Path, metadata: dict[str, Any], match: str) -> None:
    """§1.5/§3.4/§4.3/§4.5/§5.4: metadata the writer cannot store raises MetadataError; nothing is left."""
    target = tmp_path / "m.h5"
    with pytest.raises(MetadataError, match=match):
        write(target, _small(), metadata)
    assert list(tmp_path.iterdir()) == []


def test_metadata_at_the_limits_is_written(tmp_path: Path) -> None:
    """§4.3/§4.5: the longest keyword list the limit allows and int64 extremes round-trip."""
    keywords = [f"k{i}" for i in range(4087)]
    meta = {"name": "n", "keywords": keywords, "acme:max": 2**63 - 1, "acme:min": -(2**63), "acme:ids": [7] * 8174}
    target = write(tmp_path / "l.h5", _small(), meta)
    with h5py.File(target, "r") as f:
        assert [k.decode() if isinstance(k, bytes) else k for k in f.attrs["keywords"]] == keywords
        assert int(f.attrs["acme:max"]) == 2**63 - 1 and int(f.attrs["acme:min"]) == -(2**63)
        assert f.attrs["acme:ids"].shape == (8174,)


def test_bad_metadata_and_split_types_are_refused(tmp_path: Path) -> None:
    """§4.2/§5.1: metadata must be a dict with str keys; splits a dict of dicts (an array is not a split)."""
    x = np.zeros((4, 3), np.float32)
    cases: list[tuple[Any, Any, type[Exception], str]] = [
        ({"train": x}, {"name": "n"}, WriterError, r"split /train must be given as a dict"),
        ([("train", {"x": x})], None, WriterError, "splits must be a dict"),
        ({"train": {"x": x}}, ["name"], MetadataError, "metadata must be a dict"),
        ({"train": {"x": x}}, {"name": "n", 3: "x"}, MetadataError, "root attribute names must be str"),
        ({"train": {3: x}}, None, WriterError, "feature name 3 in /train is a int"),
    ]
    for splits, metadata, error, match in cases:
        with pytest.raises(error, match=match):
            write(tmp_path / "t.h5", splits, metadata)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("seed", [2**70, 2**63, -1, 1.5, True, "3"])
def test_bad_seeds_are_refused(tmp_path: Path, seed: Any) -> None:
    """§5.3/§7.6: a shuffle seed is an integer in [0, 2**63), in write() and in add_split()."""
    with pytest.raises(WriterError, match=r"must be an integer in \[0, 2\*\*63\)"):
        write(tmp_path / "s.h5", _small(), shuffle=True, seed=seed)
    with Writer(tmp_path / "s.h5") as w:
        with pytest.raises(WriterError, match=r"shuffle_seed of /train must be an integer in \[0, 2\*\*63\)"):
            w.add_split("train", shuffle_seed=seed)
        w.add_split("train")  # the refused call created nothing
    with h5py.File(tmp_path / "s.h5", "r") as f:
        assert list(f) == ["train"] and "shuffle_seed" not in f["train"].attrs


def test_largest_seed_is_recorded(tmp_path: Path) -> None:
    """§5.3/§7.6: 2**63 - 1 is a valid seed and is stored exactly."""
    target = write(tmp_path / "s.h5", _small(), shuffle=True, seed=2**63 - 1)
    with h5py.File(target, "r") as f:
        assert int(f["train"].attrs["shuffle_seed"]) == 2**63 - 1
        perm = np.random.default_rng(2**63 - 1).permutation(3)
        assert f["train/x"][:, 0].tolist() == (perm * 2).tolist()


def test_add_split_refuses_bad_options_at_once(tmp_path: Path) -> None:
    """§5.3/§3.4: expected_samples must be an int >= 0 and the description storable; nothing is created."""
    with Writer(tmp_path / "e.h5") as w:
        bad: list[Any] = [-3, 2.5, "4", True]
        for value in bad:
            with pytest.raises(WriterError, match=r"expected_samples of /train must be an integer >= 0"):
                w.add_split("train", expected_samples=value)
        with pytest.raises(WriterError, match="NUL character"):
            w.add_split("train", "a\x00b")
        with pytest.raises(WriterError, match="must be a str"):
            w.add_split("train", 3)  # type: ignore[arg-type]
        w.add_split("train", "ok", expected_samples=0)
    with h5py.File(tmp_path / "e.h5", "r") as f:
        assert list(f) == ["train"] and f["train"].attrs["description"] == "ok"


# -- float narrowing (review 4a) ----------------------------------------------------------------


def test_values_that_overflow_a_float_dtype_are_refused(tmp_path: Path) -> None:
    """§3.2: a finite value that would become infinite in the declared float dtype raises EncodingError."""
    cases: list[tuple[Any, str]] = [
        (np.array([1.0, 1e6]), "float16"),
        (np.array([70000]), "float16"),
        (np.array([1e300]), "float32"),
        ([np.array([1.0, -1e39])], "float32"),  # ragged
    ]
    for value, dtype in cases:
        options = {"dtype": dtype} if not isinstance(value, list) else {"dtype": dtype, "encoding": "ragged"}
        with pytest.raises(EncodingError, match=f"does not fit the feature's dtype {dtype}") as err:
            write(tmp_path / "f.h5", {"train": {"x": value}}, features={"x": options})
        assert err.value.hdf5_path == "/train/x" and "would be stored as infinity" in str(err.value)
    assert list(tmp_path.iterdir()) == []


def test_float_rounding_follows_numpy(tmp_path: Path) -> None:
    """§3.2: rounding into a float dtype is allowed as in numpy (2**53 + 1 -> 2**53, 1e-10 -> 0 in float16);
    infinities and NaN given as such are kept."""
    big = np.array([2**53 + 1], dtype=np.int64)
    mixed = np.array([1e-10, np.inf, -np.inf, np.nan, 65504.0])
    target = write(
        tmp_path / "r.h5",
        {"train": {"big": big}, "test": {"mixed": mixed}},
        features={"big": {"dtype": "float64"}, "mixed": {"dtype": "float16"}},
    )
    with h5py.File(target, "r") as f:
        assert f["train/big"].dtype == np.float64 and f["train/big"][0] == float(2**53)
        got = f["test/mixed"][()]
        assert got.dtype == np.float16
        assert got[0] == 0 and got[1] == np.inf and got[2] == -np.inf and np.isnan(got[3]) and got[4] == 65504


# -- append atomicity and features= (review 4d, 4e, 4f) -----------------------------------------


def test_failed_first_append_changes_nothing(tmp_path: Path) -> None:
    """§5.3: a failed append declares no feature and creates no split; a retry with other features works."""
    target = tmp_path / "a.h5"
    with Writer(target) as w:
        with pytest.raises(EncodingError, match=r"code 5 at sample 1 is outside"):
            w.append("train", {"x": np.zeros(2), "y": Categorical([0, 5], ["a"])})
        with pytest.raises(WriterError, match="different numbers of samples"):
            w.append("train", {"x": np.zeros(2), "z": np.zeros(3)})
        w.append("train", {"z": np.arange(3)})
        with pytest.raises(EncodingError):
            w.append("test", {"s": [1.5, "a"]})
    with h5py.File(target, "r") as f:
        assert list(f) == ["train"] and sorted(_members(f["train"])) == ["z"]
        assert f["train"].attrs["num_samples"] == 3 and f["train/z"][()].tolist() == [0, 1, 2]


def test_unused_feature_options_are_reported(tmp_path: Path) -> None:
    """§6.1: a features= key that applies to no feature is an error: 'split/feature' keys at the split's first
    batch, every key at close (the file is then not written)."""
    target = tmp_path / "u.h5"
    with Writer(target, features={"train/lable": {"role": "target"}}) as w:
        with pytest.raises(WriterError, match=r"features= names \['train/lable'\], but the features of /train"):
            w.append("train", {"label": np.arange(2)})
        w.append("test", {"label": np.arange(2)})  # other splits are not concerned
        with pytest.raises(WriterError, match="match no feature this writer created"):
            w.close()
    assert list(tmp_path.iterdir()) == []
    with Writer(target, features={"nope": {"role": "target"}, "x": {"role": "input"}}) as w:
        w.append("train", {"x": np.arange(2)})
        with pytest.raises(WriterError, match=r"features= names \['nope'\], which match no feature") as err:
            w.close()
    assert "train/x" in str(err.value) and list(tmp_path.iterdir()) == []


def test_feature_options_merge_with_add_feature(tmp_path: Path) -> None:
    """§6.1: features= options fill in add_feature's missing arguments; contradictions are refused."""
    target = tmp_path / "o.h5"
    with Writer(target, features={"x": {"role": "target", "dtype": "float32"}, "train/x": {"units": "m"}}) as w:
        w.add_feature("train", "x", encoding="dense", sample_shape=(2,), description="d")
        with pytest.raises(WriterError, match=r"disagree on \[\"role: 'target' vs 'input'\"\]"):
            w.add_feature("test", "x", encoding="dense", dtype="f4", role="input")
        w.add_feature("test", "x", encoding="dense", dtype=np.float32)  # the same dtype given twice is fine
        w.append("train", {"x": np.ones((2, 2))})
    with h5py.File(target, "r") as f:
        a = f["train/x"].attrs
        assert f["train/x"].dtype == np.float32 and f["train/x"].shape == (2, 2)
        assert (a["role"], a["units"], a["description"]) == ("target", "m", "d")
        assert f["test/x"].attrs["role"] == "target" and "units" not in f["test/x"].attrs


def test_add_feature_to_a_stored_split_names_its_features(tmp_path: Path) -> None:
    """§5.3: in append mode a split of the file has its features; the error lists them before they are loaded."""
    target = write(tmp_path / "s.h5", {"train": {"x": np.arange(3), "y": ["a", "b", "c"]}})
    before = target.read_bytes()
    with Writer(target, mode="a") as w:
        with pytest.raises(WriterError, match=r"split /train already has its features \['x', 'y'\]"):
            w.add_feature("train", "z", encoding="string")
        w.close(abort=True)
    assert target.read_bytes() == before


def test_failed_append_keeps_the_seed_of_a_stored_split(tmp_path: Path) -> None:
    """§7.6: a stored split loses shuffle_seed only when samples are added to it."""
    target = write(tmp_path / "k.h5", {"train": {"x": np.arange(4)}}, shuffle=True, seed=5)
    with Writer(target, mode="a") as w:
        with pytest.raises(EncodingError):
            w.append("train", {"x": np.array([1.5])})
    with h5py.File(target, "r") as f:
        assert int(f["train"].attrs["shuffle_seed"]) == 5 and f["train"].attrs["num_samples"] == 4


# -- zero-length sample axes (review 4h) -------------------------------------------------------


def test_dense_samples_with_a_zero_length_axis_round_trip(tmp_path: Path) -> None:
    """§6.2/§7.1: a dense sample shape such as (4, 0) is allowed; its chunk axis is 1 (HDF5 chunks are >= 1)."""
    x = np.zeros((5, 4, 0), np.float32)
    target = write(tmp_path / "z.h5", {"train": {"x": x, "y": np.arange(5)}})
    with h5py.File(target, "r") as f:
        ds = f["train/x"]
        assert ds.shape == (5, 4, 0) and ds.dtype == np.float32
        assert ds.chunks is not None and ds.chunks[1:] == (4, 1) and ds.chunks[0] >= 1
        assert ds.attrs["fingerprint"] == fingerprint_feature("dense", x)
        assert ds.attrs["stats_count"] == 0
    with Writer(target, mode="a") as w:
        w.append("train", {"x": np.zeros((2, 4, 0), np.float32), "y": np.arange(2)})
    with h5py.File(target, "r") as f:
        assert f["train/x"].shape == (7, 4, 0)
        assert f["train/x"].attrs["fingerprint"] == fingerprint_feature("dense", np.zeros((7, 4, 0), np.float32))
    with h5ml.open(target) as ds:
        assert ds["train"]["x"][6].shape == (4, 0) and ds["train"]["x"][[4, 1]].shape == (2, 4, 0)
    report = h5ml.validate(target, deep=True)
    assert report.valid, report.codes
    with Writer(tmp_path / "d.h5") as w:
        w.add_feature("train", "x", encoding="dense", dtype="u1", sample_shape=(0,))
        w.add_feature("train", "r", encoding="ragged", dtype="f8", sample_shape=(0,))
        w.append("train", {"x": np.zeros((3, 0), np.uint8), "r": [np.zeros((k, 0)) for k in (0, 2, 1)]})
    with h5py.File(tmp_path / "d.h5", "r") as f:
        assert f["train/x"].shape == (3, 0) and f["train/r/values"].shape == (3, 0)
        assert f["train/r/offsets"][()].tolist() == [0, 0, 2, 3]


def test_file_kinds_are_named() -> None:
    """§4.4: the refusal names what sits at the target (modes built here; no system file is touched)."""
    from h5ml.writer.atomic import file_kind

    kinds = {
        stat.S_IFCHR: "character device",
        stat.S_IFBLK: "block device",
        stat.S_IFSOCK: "socket",
        stat.S_IFIFO: "FIFO (named pipe)",
        stat.S_IFDIR: "directory",
        stat.S_IFLNK: "symbolic link",
    }
    assert {mode: file_kind(mode | 0o644) for mode in kinds} == kinds


def test_append_mode_refuses_bad_metadata_and_keeps_the_file(tmp_path: Path) -> None:
    """§5.4/§4.4: metadata refused in append mode leaves the existing file byte-identical and no temporary file."""
    target = write(tmp_path / "k.h5", _small(), {"name": "k"})
    before = target.read_bytes()
    for metadata in ({"_x": 1}, {"description": "a\x00"}, {"must_understand": ["zstd"]}):
        with pytest.raises(MetadataError):
            Writer(target, metadata, mode="a")
    assert target.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == ["k.h5"]


def test_update_metadata_before_close(tmp_path: Path) -> None:
    """§4.2/§4.7: root attributes set late (a description, a user attribute) are in the finished file."""
    target = tmp_path / "late.h5"
    with h5ml.Writer(target, {"name": "late", "license": "CC0-1.0"}) as w:
        w.append("train", {"x": np.arange(4.0)})
        w.update_metadata({"description": "set at the end", "acme:skipped": '[{"path": "a.wav"}]'})
        with pytest.raises(h5ml.MetadataError):
            w.update_metadata({"homepage": "not a url"})
    with h5ml.open(target) as ds:
        assert ds.metadata.description == "set at the end" and ds.metadata.license == "CC0-1.0"
        assert ds.metadata.extra["acme:skipped"] == '[{"path": "a.wav"}]'


def test_a_new_split_in_append_mode_takes_the_file_features_options(tmp_path: Path) -> None:
    """§6.1: a feature of a new split appended to a file is written as the file's feature of that name is."""
    rng = np.random.default_rng(7)
    clips = [rng.integers(-500, 500, int(n)).astype(np.int16) for n in (300, 120, 77)]
    target = write(
        tmp_path / "a.h5",
        {
            "train": {
                "clip": clips,
                "label": Categorical([0, 2, 1], ["cat", "dog", "owl"]),
                "ok": np.array([1, 0, 1], bool),
            }
        },
        features={"clip": {"sample_rate": 16000, "role": "input", "units": "counts"}, "label": {"role": "target"}},
        compression="gzip",
    )
    same_length = [rng.integers(-500, 500, 50).astype(np.int16) for _ in range(2)]  # alone, these would be dense
    with Writer(target, mode="a") as w:
        w.append("test", {"clip": same_length, "label": ["owl", "cat"], "ok": np.array([0, 1], bool)})
    with h5py.File(target, "r") as f:
        clip, label, ok = f["test/clip"], f["test/label"], f["test/ok"]
        assert dict(clip.attrs)["encoding"] == "ragged" and clip["values"].compression == "gzip"
        assert (clip.attrs["sample_rate"], clip.attrs["role"], clip.attrs["units"]) == (16000.0, "input", "counts")
        assert clip["offsets"][...].tolist() == [0, 50, 100]
        assert [n.decode() if isinstance(n, bytes) else n for n in label["class_names"][...]] == ["cat", "dog", "owl"]
        assert label["codes"][...].tolist() == [2, 0] and label.attrs["role"] == "target"
        assert ok.attrs["logical_dtype"] == "bool" and ok[...].tolist() == [0, 1]
    assert h5ml.validate(target, deep=True).valid
    with h5ml.open(target) as f:
        assert [c.tolist() for c in f["test"]["clip"][:2]] == [c.tolist() for c in same_length]


def test_options_given_in_append_mode_override_the_file_features(tmp_path: Path) -> None:
    """§6.1: features= and add_feature override, field by field, what a new split takes from the file."""
    target = write(tmp_path / "b.h5", {"train": {"x": [np.arange(3), np.arange(5)]}}, features={"x": {"role": "input"}})
    with Writer(target, mode="a", features={"x": {"encoding": "dense"}}) as w:
        w.append("test", {"x": np.ones((2, 4), np.int64)})
    with h5py.File(target, "r") as f:
        assert isinstance(f["test/x"], h5py.Dataset) and f["test/x"].attrs["role"] == "input"


def test_append_mode_refuses_a_file_that_is_not_hdf5(tmp_path: Path) -> None:
    """§4.1, §4.4: mode='a' on a file HDF5 cannot open raises what h5ml.open raises for it (NotH5MLError, same
    message); the file is untouched, no temp file."""
    target = tmp_path / "notes.h5"
    target.write_bytes(b"not an HDF5 file at all")
    with pytest.raises(NotH5MLError, match=r"notes\.h5: not an HDF5 file \(no HDF5 signature") as by_writer:
        Writer(target, mode="a")
    with pytest.raises(NotH5MLError) as by_reader:
        h5ml.open(target)
    assert str(by_writer.value) == str(by_reader.value)
    assert target.read_bytes() == b"not an HDF5 file at all" and [p.name for p in tmp_path.iterdir()] == ["notes.h5"]


def test_another_encoding_in_append_mode_keeps_only_the_descriptive_attributes(tmp_path: Path) -> None:
    """§6.1, §6.6: a new split's feature given another encoding than the file's drops its media type and dtype."""
    target = write(
        tmp_path / "e.h5",
        {"train": {"image": [b"\x89PNG a", b"\x89PNG bb"]}},
        features={"image": {"media_type": "image/png", "role": "input"}},
    )
    with Writer(target, mode="a", features={"image": {"encoding": "dense"}}) as w:
        w.append("test", {"image": np.ones((2, 3), np.float32)})
    with h5py.File(target, "r") as f:
        image = f["test/image"]
        assert image.dtype == np.float32 and image.attrs["encoding"] == "dense" and image.attrs["role"] == "input"
        assert "media_type" not in image.attrs


def test_an_empty_media_type_is_refused_as_the_validator_does(tmp_path: Path) -> None:
    """§6.6: media_type '' is not a type/subtype (E117): the writer refuses it instead of storing the default."""
    with pytest.raises(WriterError, match="media_type"):
        write(tmp_path / "m.h5", {"train": {"b": [b"x"]}}, features={"b": {"media_type": ""}})
    assert not (tmp_path / "m.h5").exists()


# --------------------------------------------------------------------------
# Writer.infer_features: a split's features from whole columns (the hook write() uses)


def test_infer_features_takes_the_stored_form_from_the_whole_column(tmp_path: Path) -> None:
    """§6.3, §6.5: inferred from all values, a ragged feature stays ragged and a categorical one keeps every class,
    whatever the batches that follow hold; the features= options apply and count as used."""
    clips = [np.arange(3, dtype=np.int16), np.arange(3, dtype=np.int16) + 10, np.arange(5, dtype=np.int16)]
    label = Categorical(np.array([0, 0, 2]), ["cat", "dog", "owl"])
    target = tmp_path / "i.h5"
    with Writer(target, features={"clip": {"role": "input", "units": "counts"}}) as w:
        w.add_split("train", expected_samples=3)
        w.infer_features("train", {"clip": clips, "label": label})
        w.append("train", {"clip": clips[:2], "label": Categorical(np.array([0, 0]), ["cat", "dog", "owl"])})
        w.append("train", {"clip": clips[2:], "label": ["owl"]})
    with h5py.File(target, "r") as f:
        clip = f["train/clip"]
        assert clip.attrs["encoding"] == "ragged" and (clip.attrs["role"], clip.attrs["units"]) == ("input", "counts")
        assert clip["offsets"][()].tolist() == [0, 3, 6, 11] and clip["values"].dtype == np.int16
        assert clip["values"][()].tolist() == [0, 1, 2, 10, 11, 12, 0, 1, 2, 3, 4]
        codes = f["train/label"]
        assert codes.attrs["encoding"] == "categorical" and codes["codes"][()].tolist() == [0, 0, 2]
        assert [n.decode() for n in codes["class_names"][()]] == ["cat", "dog", "owl"]
        assert f["train"].attrs["num_samples"] == 3
    assert h5ml.validate(target, deep=True).valid
    # Inferred from the first batch alone (two clips of 3 values), the feature is dense: the third clip is refused.
    with Writer(tmp_path / "j.h5") as w:
        w.append("train", {"clip": clips[:2]})
        with pytest.raises(EncodingError):
            w.append("train", {"clip": clips[2:]})
    with h5py.File(tmp_path / "j.h5", "r") as f:
        assert f["train/clip"].attrs["encoding"] == "dense" and f["train/clip"].shape == (2, 3)


def test_infer_features_in_append_mode_takes_the_file_features_options(tmp_path: Path) -> None:
    """§6.1: a new split's features inferred from whole columns are written as the file's features of those names."""
    target = write(
        tmp_path / "a.h5",
        {"train": {"label": Categorical([0, 1], ["cat", "dog"]), "x": np.zeros((2, 2), np.float32)}},
        features={"label": {"role": "target"}},
    )
    with Writer(target, mode="a") as w:
        w.infer_features("test", {"label": ["dog"], "x": np.ones((1, 2))})
        w.append("test", {"label": ["dog"], "x": np.ones((1, 2))})
    with h5py.File(target, "r") as f:
        label = f["test/label"]
        assert label.attrs["role"] == "target" and label["codes"][()].tolist() == [1]
        assert [n.decode() for n in label["class_names"][()]] == ["cat", "dog"]
        assert f["test/x"].dtype == np.float32  # the file's dtype, not the float64 given
    assert h5ml.validate(target, deep=True).valid


def test_infer_features_refuses_and_declares_nothing(tmp_path: Path) -> None:
    """§5.3: infer_features is refused for a split that has its features, a taken or bad name, a value with no
    encoding; a refusal declares nothing (the split is not even created), and the writer goes on."""
    target = tmp_path / "r.h5"
    with Writer(target) as w:
        with pytest.raises(EncodingError, match=r"r\.h5:/train/bad"):
            w.infer_features("train", {"a": np.zeros(2), "bad": [1, "a"]})
        with pytest.raises(WriterError, match="must be a dict"):
            w.infer_features("train", [np.zeros(2)])  # type: ignore[arg-type]
        with pytest.raises(WriterError, match="invalid"):
            w.infer_features("train", {"_x": np.zeros(2)})
        w.append("train", {"b": np.arange(2)})  # "a" was not declared, so this batch needs only "b"
        with pytest.raises(WriterError, match=r"split /train already has its features \['b'\]"):
            w.infer_features("train", {"c": np.zeros(2)})
        w.infer_features("test", {"c": np.zeros(2)})
        with pytest.raises(WriterError, match=r"feature /test/c already exists"):
            w.infer_features("test", {"c": np.zeros(2)})
        w.append("test", {"c": np.zeros(2)})
    with h5py.File(target, "r") as f:
        assert sorted(f) == ["test", "train"] and _members(f["train"]) == {"b"} and _members(f["test"]) == {"c"}
    with pytest.raises(WriterError, match="closed"):
        w.infer_features("valid", {"c": np.zeros(2)})


def test_an_unclosed_writer_that_is_collected_deletes_its_temporary_file(tmp_path: Path) -> None:
    """§4.4: a writer dropped without close (its gzip chunks still compressing) leaves the target as it was."""
    target = write(tmp_path / "g.h5", _small())
    before = target.read_bytes()
    w = Writer(target, compression="gzip")
    w.append("train", {"x": np.arange(400_000, dtype=np.int64).reshape(-1, 4)})
    w.flush()
    temp = w.temp_path
    assert temp_files(target) == [temp] and temp.stat().st_size > 0
    del w
    gc.collect()
    assert temp_files(target) == [] and target.read_bytes() == before
    assert not [t for t in threading.enumerate() if t.name.startswith(("h5ml-deflate", "h5ml-feed"))]


def _external_storage(path: Path, secret: Path) -> None:
    with h5py.File(path, "r+") as f:
        del f["train/x"]
        f.create_dataset("train/x", shape=(3,), dtype="<i8", external=[(str(secret), 0, 24)])
        f["train/x"].attrs["encoding"] = "dense"
        f["train/x"].attrs["encoding_version"] = "1.0"


def _encoding_2(path: Path, secret: Path) -> None:
    with h5py.File(path, "r+") as f:
        f["train/x"].attrs["encoding_version"] = "2.0"


def _encoding_not_utf8(path: Path, secret: Path) -> None:
    with h5py.File(path, "r+") as f:
        f["train/x"].attrs.create("encoding", np.bytes_(b"dens\xff"))


def _num_samples_bool(path: Path, secret: Path) -> None:
    with h5py.File(path, "r+") as f:
        f["train"].attrs["num_samples"] = np.bool_(True)


@pytest.mark.parametrize(
    ("damage", "error"),
    [
        (_external_storage, h5ml.ForbiddenStorageError),
        (_encoding_2, EncodingError),
        (_encoding_not_utf8, EncodingError),
        (_num_samples_bool, InvalidFileError),
    ],
    ids=["external-storage", "encoding-version-2", "encoding-not-utf8", "num-samples-bool"],
)
def test_append_mode_refuses_a_file_as_the_reader_does(tmp_path: Path, damage: Any, error: type[Exception]) -> None:
    """§3.6, §5.3, §6.1, §10.1: append mode reads a file's storage, splits and features as the reader does: it
    never copies external raw storage (it would fingerprint another file's bytes), never extends an encoding
    version it does not implement, and raises the reader's error type, leaving the file as it was."""
    target = write(tmp_path / "r.h5", {"train": {"x": np.arange(3)}})
    secret = tmp_path / "secret.bin"
    secret.write_bytes(np.arange(7, 10, dtype="<i8").tobytes())
    damage(target, secret)
    before = target.read_bytes()
    with pytest.raises(error) as by_reader:
        with h5ml.open(target) as ds:
            ds["train"]["x"][:]
    with pytest.raises(error) as by_writer:
        Writer(target, mode="a")
    assert type(by_writer.value) is type(by_reader.value)
    assert by_writer.value.hdf5_path == by_reader.value.hdf5_path  # type: ignore[attr-defined]
    assert target.read_bytes() == before and temp_files(target) == []


def test_ragged_float32_fingerprint_and_statistics_match_first_principles(tmp_path: Path) -> None:
    """§8.2, §6.7 (issue 15, the writer's faster statistics and checksum pass): values computed from scratch.

    A ragged float32 feature of speech-like clips, with NaN and infinities in some clips and none in
    others: the fingerprint is the SHA-256 construction of §8.2 written out here (header, then the digests
    of the offsets, the values and no shapes), and the statistics are numpy's over the values without NaN
    (one batch of fewer than STATS_BLOCK values: the mean and M2 are those of one float64 pass, exactly).
    Without infinities the mean and std are there too; with them, min/max are infinite and std absent.
    """
    import hashlib

    rng = np.random.default_rng(15)
    clips = [np.sin(np.arange(int(n)) / 7.0).astype(np.float32) * rng.random() for n in rng.integers(100, 900, 40)]
    clips[3][5] = np.nan
    clean = [c.copy() for c in clips]
    clips[7][2] = np.inf
    clips[9][0] = -np.inf
    for name, data in (("clean", clean), ("inf", clips)):
        path = h5ml.write(
            tmp_path / f"{name}.h5", {"train": {"audio": data}}, features={"audio": {"encoding": "ragged"}}
        )
        values = np.concatenate(data)
        offsets = np.concatenate([[0], np.cumsum([c.shape[0] for c in data])]).astype("<i8")
        header = json.dumps(
            {"dtype": "<f4", "encoding": "ragged", "num_samples": len(data), "sample_shape": []},
            sort_keys=True,
            separators=(",", ":"),
        ).encode()
        digests = [hashlib.sha256(b).digest() for b in (offsets.tobytes(), values.astype("<f4").tobytes(), b"")]
        expected = "sha256:" + hashlib.sha256(header + b"\n" + b"".join(digests)).hexdigest()
        with h5py.File(path, "r") as f:
            attrs = dict(f["train/audio"].attrs)
        assert attrs["fingerprint"] == expected
        kept = values[~np.isnan(values)].astype(np.float64)
        assert attrs["stats_count"] == kept.size
        assert attrs["stats_min"] == kept.min() and attrs["stats_max"] == kept.max()
        if name == "clean":
            mean = float(kept.mean())
            assert attrs["stats_mean"] == mean
            assert attrs["stats_std"] == math.sqrt(float(np.dot(kept - mean, kept - mean)) / kept.size)
        else:
            assert math.isinf(attrs["stats_min"]) and math.isinf(attrs["stats_max"])
            assert "stats_std" not in attrs


def test_large_batches_of_the_callers_memory_are_stored_at_once_and_may_be_reused(tmp_path: Path) -> None:
    """§8.2, §7 (issue 15): settled chunks take a large borrowed batch without buffering a copy of it.

    Batches of 96 tiles (1.2 MB, the caller's own array) are appended, and the caller overwrites its array
    after every append: the file holds the values given, and the fingerprint is the one
    ``fingerprint_feature`` computes over the whole array (the existing code path), as for ``h5ml.write``.
    """
    from h5ml.model.fingerprint import fingerprint_feature

    rng = np.random.default_rng(3)
    tiles = rng.integers(0, 256, size=(960, 64, 64, 3), dtype=np.uint8)
    buffer = np.empty((96, 64, 64, 3), dtype=np.uint8)
    path = tmp_path / "stream.h5"
    with h5ml.Writer(path, {"name": "stream"}) as w:
        w.add_split("train", expected_samples=len(tiles))
        for start in range(0, len(tiles), 96):
            buffer[:] = tiles[start : start + 96]
            w.append("train", {"image": buffer})
            buffer[:] = 0  # the caller reuses its array
    with h5py.File(path, "r") as f:
        np.testing.assert_array_equal(f["train/image"][()], tiles)
        assert f["train/image"].attrs["fingerprint"] == fingerprint_feature("dense", tiles)
    whole = h5ml.write(tmp_path / "whole.h5", {"train": {"image": tiles}})
    with h5py.File(whole, "r") as f:
        assert f["train/image"].attrs["fingerprint"] == fingerprint_feature("dense", tiles)
