"""The reader (h5ml.reader: dataset, split, the feature readers) on files written with plain h5py (tests/_files.py)."""

from __future__ import annotations

import itertools
import json
import multiprocessing
import os
import pickle
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import pytest

import h5ml
from _files import Bytes, Categorical, Dense, Ragged, String, apply_keys, read_after_fork, write_file
from h5ml import spec
from h5ml.errors import (
    EncodingError,
    FeatureNotFoundError,
    ForbiddenStorageError,
    IncompleteFileError,
    NotH5MLError,
    SplitNotFoundError,
    UnknownExtensionError,
    UnsupportedFilterError,
    UnsupportedVersionError,
)
from h5ml.reader import (
    DEFAULT_CACHE_BYTES,
    BytesFeature,
    CategoricalFeature,
    Dataset,
    DenseFeature,
    RaggedFeature,
    ReadEvent,
    ReadStats,
    Split,
    StringFeature,
)
from h5ml.reader import column as column_module
from h5ml.reader import offsets as offsets_module
from h5ml.reader.file_map import FileMap
from h5ml.reader.opening import open as reader_open
from h5ml.spec.chunks import cache_bytes_for
from h5ml.validator.sandbox import run_with_timeout

N = 100
C01_REQUESTS = [[5, 2, 9], [2, 5, 5, 9], np.array([3, 1])]
C01_IDS = ["unsorted", "duplicates", "numpy-array"]


def _source() -> dict[str, Any]:
    """Deterministic content of every encoding, N samples each."""
    rng = np.random.default_rng(20240501)
    lengths = rng.integers(0, 6, size=N)
    lengths[[3, 9]] = 0
    return {
        "x": rng.standard_normal((N, 4)).astype(np.float32),
        "text": [f"sample {i} ✓ {'𝄞' * (i % 3)}" if i % 7 else "" for i in range(N)],
        "codes": rng.integers(-1, 3, size=N).astype(np.int16),
        "names": ["cat", "dog", "émeu"],
        "ragged": [rng.integers(-50, 50, size=(int(k), 2)).astype(np.int32) for k in lengths],
        "images": [rng.integers(0, 255, size=(int(k % 3) + 1, int(k) + 1)).astype(np.uint8) for k in lengths],
        "blobs": [bytes(rng.integers(0, 256, size=int(k) * 3, dtype=np.uint8)) for k in lengths],
    }


def _write_all(path: Path, compression: str | None = None) -> dict[str, Any]:
    src = _source()
    write_file(
        path,
        {
            "train": {
                "x": Dense(src["x"], chunks=(10, 4), compression=compression, attrs={"role": "input", "units": "m"}),
                "text": String(src["text"], chunks=(16,), compression=compression),
                "label": Categorical(src["codes"], src["names"], attrs={"role": "target"}),
                "ragged": Ragged(src["ragged"], chunk_rows=8, compression=compression, attrs={"sample_rate": 16000.0}),
                "image": Ragged(src["images"], with_shapes=True, chunk_rows=32, compression=compression),
                "blob": Bytes(src["blobs"], media_type="image/png", chunk_rows=64, compression=compression),
            },
            "test": {"x": Dense(src["x"][:10])},
        },
        split_attrs={"train": {"shuffle_seed": 7, "description": "training part"}},
    )
    return src


@pytest.fixture(params=[None, "gzip"], ids=["plain", "gzip"])
def written(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Dataset, dict[str, Any]]]:
    src = _write_all(tmp_path / "all.h5", compression=request.param)
    with h5ml.open(tmp_path / "all.h5") as ds:
        yield ds, src


def _expected(src: dict[str, Any], feature: str, indices: Any) -> Any:
    idx = np.asarray(indices)
    if feature == "x":
        return src["x"][idx]
    if feature == "text":
        return [src["text"][i] for i in idx.tolist()]
    if feature == "label":
        return src["codes"][idx].astype(np.int64)
    if feature == "ragged":
        return [src["ragged"][i] for i in idx.tolist()]
    if feature == "image":
        return [src["images"][i] for i in idx.tolist()]
    return [src["blobs"][i] for i in idx.tolist()]


def _assert_same(got: Any, want: Any) -> None:
    if isinstance(want, np.ndarray):
        assert isinstance(got, np.ndarray)
        assert got.dtype == want.dtype and got.shape == want.shape
        assert np.array_equal(got, want)
    else:
        assert len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            if isinstance(w, np.ndarray):
                assert g.dtype == w.dtype and g.shape == w.shape and np.array_equal(g, w)
            else:
                assert type(g) is type(w) and g == w


# -- C01: any order, duplicates, numpy indices --------------------------------------------------


@pytest.mark.parametrize("indices", C01_REQUESTS, ids=C01_IDS)
def test_c01_dense_rows_come_back_in_the_order_asked(tmp_path: Path, indices: Any) -> None:
    """Case C01 (§6.2): a chunked float32 (100, 4) dataset with chunks (10, 4) read in any order, with duplicates."""
    x = np.arange(400, dtype=np.float32).reshape(100, 4) / 3
    write_file(tmp_path / "c01.h5", {"train": {"x": Dense(x, chunks=(10, 4))}})
    with h5ml.open(tmp_path / "c01.h5") as ds:
        got = ds["train"]["x"][indices]
        assert got.dtype == np.float32 and got.shape == (len(indices), 4)
        assert np.array_equal(got, x[indices])
        assert np.array_equal(ds["train"][indices]["x"], x[indices])


@pytest.mark.parametrize("feature", ["x", "text", "label", "ragged", "image", "blob"])
@pytest.mark.parametrize(
    "indices",
    [*C01_REQUESTS, [99, -100, 3, 3, 3, 0], np.array([7], dtype=np.uint16)],
    ids=[*C01_IDS, "negative", "uint"],
)
def test_c01_every_encoding(written: tuple[Dataset, dict[str, Any]], feature: str, indices: Any) -> None:
    """Case C01 (§6): every encoding returns the rows asked, in order, duplicates repeated, equal to the source."""
    ds, src = written
    got = ds["train"][feature][indices]
    _assert_same(got if feature != "text" else list(got), _expected(src, feature, np.asarray(indices) % N))


@pytest.mark.parametrize("feature", ["x", "text", "label", "ragged", "image", "blob"])
def test_slices_masks_and_single_samples(written: tuple[Dataset, dict[str, Any]], feature: str) -> None:
    """Slices (any step), boolean masks and single indices; one index returns one sample of the encoding's type."""
    ds, src = written
    feat = ds["train"][feature]
    for sl in (slice(None), slice(10, 40, 3), slice(None, None, -7), slice(50, 50)):
        got = feat[sl]
        _assert_same(got if feature != "text" else list(got), _expected(src, feature, np.arange(N)[sl]))
    mask = np.arange(N) % 9 == 4
    got = feat[mask]
    _assert_same(got if feature != "text" else list(got), _expected(src, feature, np.flatnonzero(mask)))
    one = feat[-4]
    want = _expected(src, feature, [N - 4])[0]
    if feature == "label":
        assert type(one) is int and one == int(want)
    elif isinstance(want, np.ndarray):
        assert isinstance(one, np.ndarray) and one.dtype == want.dtype and np.array_equal(one, want)
    else:
        assert type(one) is type(want) and one == want


def test_duplicates_do_not_alias_each_other(written: tuple[Dataset, dict[str, Any]]) -> None:
    """A duplicated ragged sample is one read-only view twice: an edit in place is refused, so it changes no other.

    (Issue 15: batches of ragged samples are views into their span's buffer; ``.copy()`` gives an array of its own.)
    """
    ds, src = written
    first, second, other = ds["train"]["ragged"][[1, 1, 2]]
    assert not first.flags.writeable and not other.flags.writeable
    with pytest.raises(ValueError, match="read-only"):
        first[...] = 0
    assert np.array_equal(second, src["ragged"][1]) and np.array_equal(other, src["ragged"][2])
    mine = first.copy()
    mine[...] = 0
    assert np.array_equal(second, src["ragged"][1]) and not mine.any()


def test_out_of_range_raises_index_error_naming_index_and_length(written: tuple[Dataset, dict[str, Any]]) -> None:
    """An index outside [-N, N) raises IndexError naming it and N, for a feature and for a split."""
    ds, _ = written
    with pytest.raises(IndexError, match="index 100 is out of range for 100 samples"):
        ds["train"]["blob"][[1, 100]]
    with pytest.raises(IndexError, match="index -101 is out of range for 100 samples"):
        ds["train"][-101]


# -- C06 and strings ------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["vlen", "ascii", "fixed"])
def test_c06_strings_of_any_storage_read_as_str(tmp_path: Path, kind: str) -> None:
    """Case C06 (§3.4): vlen UTF-8, vlen ASCII and fixed-length strings come back as str, never bytes."""
    # SPEC §3.4-R3
    write_file(tmp_path / "s.h5", {"train": {"animal": String(["cat", "dog"], kind=kind)}})  # type: ignore[arg-type]
    with h5ml.open(tmp_path / "s.h5") as ds:
        feat = ds["train"]["animal"]
        got = feat[[1, 0, 1]]
        assert got.dtype == object and got.tolist() == ["dog", "cat", "dog"]
        assert all(type(v) is str for v in got)
        assert type(feat[0]) is str and feat[0] == "cat"


def test_c06_h5py_vlen_dataset_and_fixed_length_attribute(tmp_path: Path) -> None:
    """Case C06: a vlen string dataset ["cat", "dog"] and fixed-length ASCII attributes (plain h5py) read as str."""

    def other_tool(f: h5py.File) -> None:
        dset = f["train"].create_dataset("animal", data=["cat", "dog"], dtype=h5py.string_dtype())
        dset.attrs["encoding"] = np.bytes_(b"string")  # fixed-length ASCII, as other tools write
        dset.attrs["encoding_version"] = np.bytes_(b"1.0")
        dset.attrs["description"] = np.bytes_(b"an animal")
        f["train"].attrs["description"] = np.bytes_(b"fixed")

    write_file(
        tmp_path / "c06.h5", {"train": {"n": Dense(np.arange(2))}}, root={"license": "CC0-1.0"}, extra=other_tool
    )
    with h5ml.open(tmp_path / "c06.h5") as ds:
        feat = ds["train"]["animal"]
        assert isinstance(feat, StringFeature)
        assert feat[:].tolist() == ["cat", "dog"] and all(type(v) is str for v in feat[:])
        assert feat.description == "an animal" and type(feat.attrs["encoding"]) is str
        assert ds["train"].description == "fixed"
        assert ds.attrs["license"] == "CC0-1.0"


def test_fixed_length_class_names_read_as_str(tmp_path: Path) -> None:
    """§3.4: class names stored as fixed-length bytes come back as a list of str."""
    write_file(tmp_path / "c.h5", {"train": {"y": Categorical(np.array([1, 0, -1]), ["no", "yes"], fixed_names=True)}})
    with h5ml.open(tmp_path / "c.h5") as ds:
        feat = ds["train"]["y"]
        assert feat.class_names == ["no", "yes"] and all(type(n) is str for n in feat.class_names)
        assert feat[[2, 1]].tolist() == [-1, 0]


def test_invalid_utf8_string_raises_encoding_error(tmp_path: Path) -> None:
    """§3.4: a stored string that is not UTF-8 raises EncodingError naming the dataset."""

    def bad(f: h5py.File) -> None:
        dset = f["train"].create_dataset("s", data=np.array([b"ok", b"\xff\xfe"], dtype="S2"))
        dset.attrs["encoding"] = "string"

    write_file(tmp_path / "u.h5", {"train": {"n": Dense(np.arange(2))}}, extra=bad)
    with h5ml.open(tmp_path / "u.h5") as ds, pytest.raises(EncodingError, match="/train/s"):
        ds["train"]["s"][:]


# -- numeric storage variants -----------------------------------------------------------------------


def test_booleans_big_endian_and_float16(tmp_path: Path) -> None:
    """§3.2/§3.3: uint8 with logical_dtype bool and h5py enum bools read as bool; big-endian values come back native.

    SPEC §3.2-R2: the reference implements binary16 and reads it in both byte orders.
    """
    # SPEC §3.3-R4: h5py's enumeration (enum_flag) reads as booleans
    flags = np.array([True, False, True, True])
    write_file(
        tmp_path / "b.h5",
        {
            "train": {
                "flag": Dense(flags.astype(np.uint8), logical_bool=True),
                "enum_flag": Dense(flags),
                "big": Dense(np.arange(4, dtype=">i4") * 1000),
                "half": Dense(np.array([0.5, -np.inf, np.nan, 65504], dtype=np.float16)),
                "mask": Ragged(
                    [
                        flags[:3].astype(np.uint8),
                        flags[:0].astype(np.uint8),
                        flags[3:].astype(np.uint8),
                        flags[:1].astype(np.uint8),
                    ],
                    attrs={"logical_dtype": "bool"},
                ),
            }
        },
    )
    with h5ml.open(tmp_path / "b.h5") as ds:
        tr = ds["train"]
        for name in ("flag", "enum_flag"):
            assert tr[name].dtype == np.dtype(bool)
            got = tr[name][[3, 1, 0]]
            assert got.dtype == bool and got.tolist() == [True, False, True]
        big = tr["big"][[2, 0]]
        assert big.dtype == np.dtype("=i4") and big.dtype.isnative and big.tolist() == [2000, 0]
        assert tr["big"].dtype.isnative
        half = tr["half"][:]
        assert half.dtype == np.float16 and np.array_equal(
            half, np.array([0.5, -np.inf, np.nan, 65504], dtype=np.float16), equal_nan=True
        )
        masks = tr["mask"][[0, 1]]
        assert masks[0].dtype == bool and masks[0].tolist() == [True, False, True] and masks[1].dtype == bool
        assert tr["mask"].dtype == np.dtype(bool)


# -- feature and split properties ---------------------------------------------------------------------


def test_feature_properties(written: tuple[Dataset, dict[str, Any]]) -> None:
    """§6.1: encoding, attributes, dtype, sample shape, sample count, chunking and compression of each feature."""
    ds, src = written
    tr = ds["train"]
    x, text, label, ragged, image, blob = (tr[n] for n in ("x", "text", "label", "ragged", "image", "blob"))
    assert (type(x), type(text), type(label), type(ragged), type(image), type(blob)) == (
        DenseFeature,
        StringFeature,
        CategoricalFeature,
        RaggedFeature,
        RaggedFeature,
        BytesFeature,
    )
    assert [f.encoding for f in (x, text, label, ragged, blob)] == ["dense", "string", "categorical", "ragged", "bytes"]
    assert x.name == "x" and x.split == "train" and x.hdf5_path == "/train/x" and x.encoding_version == "1.0"
    assert x.role == "input" and x.units == "m" and x.description is None and label.role == "target"
    assert ragged.sample_rate == 16000.0 and blob.media_type == "image/png" and x.media_type is None
    assert x.attrs == {"encoding": "dense", "encoding_version": "1.0", "role": "input", "units": "m"}
    assert x.dtype == np.float32 and x.sample_shape == (4,) and len(x) == N and x.num_samples == N
    assert text.dtype == object and label.dtype == np.int64 and blob.dtype == np.uint8 and ragged.dtype == np.int32
    assert ragged.sample_shape == (None, 2) and image.sample_shape == (None, None) and blob.sample_shape == (None,)
    assert label.class_names == src["names"] and x.class_names is None
    assert len(text) == len(label) == len(ragged) == len(image) == len(blob) == N
    assert x.chunk_rows == 10 and ragged.chunk_rows == 8 and blob.chunk_rows == 64
    compressed = x.compression is not None
    assert all((f.compression == "gzip") == compressed for f in (x, text, ragged, blob))


def test_ragged_lengths_read_offsets_only(written: tuple[Dataset, dict[str, Any]]) -> None:
    """§6.3: lengths() comes from offsets alone; the values dataset is never read (Dataset.read_stats)."""
    ds, src = written
    feat = ds["train"]["ragged"]
    want = np.array([len(s) for s in src["ragged"]])
    with ds.read_stats.record() as reads:
        assert np.array_equal(feat.lengths(), want)
        assert np.array_equal(feat.lengths([9, 0, 9]), want[[9, 0, 9]])
        assert feat.lengths(3) == 0
        assert np.array_equal(ds["train"]["image"].lengths(), [a.size for a in src["images"]])
    # Each feature's offsets were read once, whole (N + 1 rows), and kept: no values were read.
    assert [(r.hdf5_path, r.start, r.stop) for r in reads] == [
        ("/train/ragged/offsets", 0, N + 1),
        ("/train/image/offsets", 0, N + 1),
    ]


def test_read_stats_count_and_record_reads(written: tuple[Dataset, dict[str, Any]]) -> None:
    """§7.3: Dataset.read_stats counts every read of feature data; record() lists them, nested blocks apart."""
    ds, src = written
    assert ds["train"]["label"][4] == int(src["codes"][4])
    stats = ds.read_stats
    assert isinstance(stats, ReadStats) and ds.read_stats is stats
    stats.reset()
    assert (stats.hdf5_reads, stats.direct_copies, stats.reads) == (0, 0, 0)
    with stats.record() as outer:
        ds["train"]["label"][4]
        with stats.record() as inner:
            ds["train"]["text"][[7, 2]]
        ds["train"]["label"][5]
    assert [r.hdf5_path for r in outer] == ["/train/label/codes", "/train/label/codes"]
    assert {r.hdf5_path for r in inner} == {"/train/text"}
    assert stats.reads == stats.hdf5_reads + stats.direct_copies == len(outer) + len(inner)
    ds["train"]["x"][3]
    assert stats.reads == len(outer) + len(inner) + 1 and stats.events is None  # counted, no longer recorded
    assert "HDF5 reads" in repr(stats)
    stats.reset()
    assert stats.reads == 0
    copy = pickle.loads(pickle.dumps(ds))
    assert copy.read_stats.reads == 0 and copy.read_stats is not stats


def test_split_api(written: tuple[Dataset, dict[str, Any]]) -> None:
    """§5: splits in file order, num_samples, features mapping, reading several features, attributes."""
    ds, src = written
    assert list(ds) == list(ds.splits) == ["test", "train"] and len(ds) == 2
    assert "train" in ds and "valid" not in ds
    tr = ds["train"]
    assert isinstance(tr, Split) and tr.name == "train" and tr.num_samples == N and len(tr) == N
    assert set(tr.features) == {"x", "text", "label", "ragged", "image", "blob"} and "x" in tr
    assert tr.shuffle_seed == 7 and tr.description == "training part" and ds["test"].shuffle_seed is None
    assert tr.attrs == {"num_samples": N, "shuffle_seed": 7, "description": "training part"}
    batch = tr.read([4, 1, 4], features=["label", "x"])
    assert list(batch) == ["label", "x"]
    assert np.array_equal(batch["x"], src["x"][[4, 1, 4]])
    assert tr.read(2, features="text") == {"text": src["text"][2]}
    whole = tr[[0, 2]]
    assert set(whole) == set(tr.features)
    samples = list(ds["test"])
    assert len(samples) == 10 and np.array_equal(samples[3]["x"], src["x"][3])
    assert "train" in repr(ds) and "test" in repr(ds) and "x (dense)" in repr(tr) and "/train/x" in repr(tr["x"])


def test_missing_split_and_feature_list_what_exists(written: tuple[Dataset, dict[str, Any]]) -> None:
    """§5.1/§5.2: unknown names raise SplitNotFoundError / FeatureNotFoundError (KeyError) listing what exists."""
    ds, _ = written
    with pytest.raises(SplitNotFoundError, match=r"no split 'valid'; available splits: 'test', 'train'") as err:
        ds["valid"]
    assert isinstance(err.value, KeyError)
    with pytest.raises(FeatureNotFoundError, match=r"no feature 'y'; available features: .*'x'") as ferr:
        ds["train"]["y"]
    assert isinstance(ferr.value, KeyError)
    with pytest.raises(FeatureNotFoundError):
        ds["train"].read([0], features=["x", "nope"])


def test_close_and_context_manager(tmp_path: Path) -> None:
    """A closed dataset refuses further use with ValueError; the with block closes the HDF5 file."""
    write_file(tmp_path / "a.h5", {"train": {"x": Dense(np.arange(3))}})
    with h5ml.open(tmp_path / "a.h5") as ds:
        handle = ds.h5file
        feat = ds["train"]["x"]
    assert ds.closed and not handle.id.valid
    with pytest.raises(ValueError, match="closed"):
        feat[0]
    assert "closed" in repr(ds)


def test_fingerprint_and_metadata(tmp_path: Path) -> None:
    """§4/§8.3: the root metadata is parsed; the file fingerprint is returned when present."""
    fp = "sha256:" + "ab" * 32
    write_file(tmp_path / "f.h5", {"train": {"x": Dense(np.arange(3))}}, root={"fingerprint": fp, "description": "d"})
    with h5ml.open(tmp_path / "f.h5") as ds:
        assert ds.fingerprint == fp
        assert ds.metadata.name == "test" and ds.metadata.description == "d"
        assert ds.format_version == (1, 2)
    write_file(tmp_path / "g.h5", {"train": {"x": Dense(np.arange(3))}})
    with h5ml.open(tmp_path / "g.h5") as ds:
        assert ds.fingerprint is None


# -- C11: chunk cache and chunk reads ------------------------------------------------------------------


def _chunk_nbytes(dset: h5py.Dataset) -> int:
    return int(np.prod(dset.chunks)) * int(dset.dtype.itemsize)


def test_c11_chunk_cache_holds_the_largest_chunk(tmp_path: Path) -> None:
    """Case C11, §7.3: the file access property list reports the reader's cache, >= the largest chunk of the file."""
    x = np.zeros((2000, 1024), dtype=np.float32)
    write_file(tmp_path / "c11.h5", {"train": {"x": Dense(x, chunks=(1000, 1024), compression="gzip")}})
    with h5ml.open(tmp_path / "c11.h5") as ds:
        _, nslots, nbytes, _ = ds.h5file.id.get_access_plist().get_cache()
        largest = _chunk_nbytes(ds.h5file["train/x"])
        assert largest == 4_096_000
        assert nbytes == DEFAULT_CACHE_BYTES == 64 << 20 and nbytes >= largest
        assert nslots > 100 * (nbytes // spec.TARGET_CHUNK_BYTES) - 1
        assert all(nslots % d for d in range(2, int(nslots**0.5) + 1))  # prime
        assert np.array_equal(ds["train"]["x"][[1999, 3]], x[[1999, 3]])


def test_c11_small_cache_is_raised_to_hold_a_chunk(tmp_path: Path) -> None:
    """C11, §7.3: with cache_bytes below a chunk, the dataset still gets a cache that holds its chunks."""
    x = np.arange(2000 * 1024, dtype=np.float32).reshape(2000, 1024)
    write_file(tmp_path / "c.h5", {"train": {"x": Dense(x, chunks=(1000, 1024), compression="gzip")}})
    with h5ml.open(tmp_path / "c.h5", cache_bytes=1 << 20) as ds:
        assert ds.h5file.id.get_access_plist().get_cache()[2] == 1 << 20
        dset = ds.h5_node("/train/x")
        assert dset.id.get_access_plist().get_chunk_cache()[1] >= _chunk_nbytes(dset)
        assert np.array_equal(ds["train"]["x"][[1500, 2]], x[[1500, 2]])
    big = np.zeros((4, 1 << 22), dtype=np.float32)  # one chunk of 4 rows is 64 MiB
    write_file(tmp_path / "big.h5", {"train": {"x": Dense(big, chunks=(4, 1 << 22), compression="gzip")}})
    with h5ml.open(tmp_path / "big.h5") as ds:
        dset = ds.h5_node("/train/x")
        assert dset.id.get_access_plist().get_chunk_cache()[1] == cache_bytes_for(_chunk_nbytes(dset))


def test_unfiltered_chunked_datasets_are_read_without_a_chunk_cache(tmp_path: Path) -> None:
    """§7.3: unfiltered chunked datasets get a 0-byte chunk cache; filtered ones (gzip, fletcher32 only) keep one.

    Without a cache HDF5 reads the requested rows straight from the file (a cache smaller than the data
    made random 12 KiB rows about 13x slower); a filtered chunk must stay cached to be decoded once.
    """
    x = np.arange(256 * 64, dtype=np.float32).reshape(256, 64)
    samples = [np.arange(k, dtype=np.int16) for k in range(40)]

    def fletcher_only(f: h5py.File) -> None:
        dset = f["train"].create_dataset("sum", data=x, chunks=(16, 64), fletcher32=True)
        dset.attrs["encoding"] = "dense"

    write_file(
        tmp_path / "cache.h5",
        {
            "train": {
                "plain": Dense(x, chunks=(16, 64)),
                "gzip": Dense(x, chunks=(16, 64), compression="gzip"),
                "contiguous": Dense(x),
                "ragged": Ragged(samples * 6 + samples[:16], chunk_rows=64),
            }
        },
        extra=fletcher_only,
    )
    with h5ml.open(tmp_path / "cache.h5") as ds:
        split = ds["train"]
        caches = {}
        for name in ("plain", "gzip", "sum", "contiguous", "ragged/values"):
            dset = ds.h5_node(f"/train/{name}")
            caches[name] = dset.id.get_access_plist().get_chunk_cache()[1]
        assert caches["plain"] == 0 and caches["ragged/values"] == 0
        assert caches["gzip"] == caches["sum"] == DEFAULT_CACHE_BYTES
        order = [200, 3, 3, 77, 15, 16]
        for name in ("plain", "gzip", "sum", "contiguous"):
            assert np.array_equal(split[name][order], x[order])
            assert np.array_equal(split[name][100], x[100])
            assert np.array_equal(split[name][10:40], x[10:40])
        everything = samples * 6 + samples[:16]
        assert all(np.array_equal(a, everything[i]) for a, i in zip(split["ragged"][order], order, strict=True))


def _rss_bytes() -> int:
    """The resident memory of this process now (Linux /proc)."""
    pages = int(Path("/proc/self/statm").read_text().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE")


def test_c11_chunk_cache_stays_within_its_size(tmp_path: Path) -> None:
    """§7.3: random single-row reads over more decoded chunks than the cache holds do not grow it past its size.

    HDF5 2.0 never evicts a partly read chunk from a cache whose preemption weight w0 is 1.0: such a cache
    grew to every chunk touched. 160 gzip chunks of 256 KiB (40 MiB decoded) through a 1 MiB cache must
    not add tens of MiB to the process.
    """
    zeros = np.zeros((2560, 4096), dtype=np.float32)
    write_file(tmp_path / "z.h5", {"train": {"x": Dense(zeros, chunks=(16, 4096), compression="gzip")}})
    with h5ml.open(tmp_path / "z.h5", cache_bytes=1 << 20) as ds:
        feat = ds["train"]["x"]
        feat[0]
        before = _rss_bytes()
        for row in range(0, 2560, 16):
            assert not feat[row].any()
        grown = _rss_bytes() - before
        assert ds.h5_node("/train/x").id.get_access_plist().get_chunk_cache()[2] < 1.0
    assert grown < 8 << 20, f"the chunk cache grew the process by {grown >> 20} MiB"


class _SmallCacheSource:
    """A NodeSource over a plain h5py file whose chunk cache is smaller than one chunk (reads through h5py only)."""

    def __init__(self, path: Path) -> None:
        self.path = str(path)
        self.file = h5py.File(path, "r", rdcc_nbytes=16, rdcc_nslots=7)
        self.read_stats = ReadStats()

    def h5_node(self, hdf5_path: str) -> Any:
        return self.file[hdf5_path]

    def file_map(self) -> FileMap | None:
        return None

    def check_file_size(self, where: str, rows: str) -> None:
        return None


def _runs(reads: list[ReadEvent], suffix: str = "") -> list[tuple[int, int]]:
    """The row ranges of the HDF5 reads recorded, of datasets whose path ends with ``suffix``."""
    assert all(r.via == "hdf5" for r in reads if r.hdf5_path.endswith(suffix))
    return [(r.start, r.stop) for r in reads if r.hdf5_path.endswith(suffix)]


@pytest.mark.parametrize("cache", ["holds-a-chunk", "smaller-than-a-chunk"])
def test_gzip_chunks_are_each_decoded_once(tmp_path: Path, cache: str) -> None:
    """§7.3/C01: a gzip batch touches only the chunks it needs, each in one read, by slices (no fancy indexing).

    When the chunk cache holds a chunk (h5ml.open sizes it so), reads are the runs of requested rows (gaps
    shorter than a chunk merged): HDF5 decodes each chunk once into its cache. When it does not, reads are
    whole chunks.
    """
    x = np.arange(200 * 3, dtype=np.float64).reshape(200, 3)
    write_file(tmp_path / "g.h5", {"train": {"x": Dense(x, chunks=(16, 3), compression="gzip")}})
    indices = [150, 3, 40, 3, 47, 199, 33, 64, 17]
    if cache == "holds-a-chunk":
        with h5ml.open(tmp_path / "g.h5") as ds, ds.read_stats.record() as recorded:
            got = ds["train"]["x"][indices]
        reads = _runs(recorded)
        assert reads == [(3, 48), (64, 65), (150, 151), (199, 200)]  # 3..47 merged: gaps of at most 15 rows
    else:
        source = _SmallCacheSource(tmp_path / "g.h5")
        try:
            with source.read_stats.record() as recorded:
                got = DenseFeature(source, "train", "x")[indices]
        finally:
            source.file.close()
        reads = _runs(recorded)
        assert reads == [(0, 48), (64, 80), (144, 160), (192, 200)]  # whole chunks, touching ones merged
    assert np.array_equal(got, x[indices])
    chunks_read = [c for a, b in reads for c in range(a // 16, -(-b // 16))]
    assert chunks_read == sorted({i // 16 for i in indices})  # [0, 1, 2, 4, 9, 12]: each once, no other


def test_ragged_values_follow_the_same_chunk_rule(tmp_path: Path) -> None:
    """§6.3/§7.3: gzip ragged values are read in whole chunks when a chunk does not fit the cache, else by runs."""
    samples = [np.arange(k, dtype=np.int32) + 100 * k for k in [3, 0, 5, 2, 7, 1, 4, 6] * 3]
    write_file(tmp_path / "r.h5", {"train": {"r": Ragged(samples, chunk_rows=8, compression="gzip")}})
    total = sum(len(a) for a in samples)
    order = [20, 2, 9, 2]
    source = _SmallCacheSource(tmp_path / "r.h5")
    try:
        with source.read_stats.record() as recorded:
            got = RaggedFeature(source, "train", "r")[order]
    finally:
        source.file.close()
    assert all(np.array_equal(g, samples[i]) for g, i in zip(got, order, strict=True))
    values = _runs(recorded, "/values")
    assert values and all(a % 8 == 0 and (b % 8 == 0 or b == total) for a, b in values)
    with h5ml.open(tmp_path / "r.h5") as ds, ds.read_stats.record() as recorded:
        again = ds["train"]["r"][order]
    assert all(np.array_equal(g, samples[i]) for g, i in zip(again, order, strict=True))
    offsets = np.concatenate([[0], np.cumsum([len(a) for a in samples])])
    wanted = sorted({(int(offsets[i]), int(offsets[i + 1])) for i in order if len(samples[i])})
    assert len(wanted) == 2  # sample 9 is empty: nothing to read
    assert _runs(recorded, "/values") == wanted  # gap > 7 rows: 2 runs


def test_a_batch_reads_each_span_once(written: tuple[Dataset, dict[str, Any]]) -> None:
    """C01/§7.3: a batch in any order with duplicates reads every dataset by runs of rows, each row at most once.

    (The reader never hands h5py an index list: h5py refuses unsorted or repeated indices and is slow on
    sorted ones.) Unfiltered numbers (x) are one copy out of the file's memory map, in the order asked.
    """
    ds, src = written
    order = [77, 2, 2, 50, 13]
    with ds.read_stats.record() as reads:
        batch = ds["train"][order]
    for name, values in batch.items():
        _assert_same(values if name != "text" else list(values), _expected(src, name, order))
    by_path: dict[str, list[ReadEvent]] = {}
    for r in reads:
        by_path.setdefault(r.hdf5_path, []).append(r)
    assert {"/train/x", "/train/text", "/train/label/codes", "/train/ragged/values", "/train/blob/values"} <= set(
        by_path
    )
    for path, events in by_path.items():
        runs = [(r.start, r.stop) for r in events if not r.gather]
        assert all(r.rows == r.stop - r.start > 0 for r in events if not r.gather), path
        assert runs == sorted(runs) and all(b <= c for (_, b), (c, _) in itertools.pairwise(runs)), path  # disjoint
        assert sum(r.via == "hdf5" for r in events) <= 4, path  # 4 distinct rows: at most one HDF5 read each
    if ds["train"]["x"].compression is None:  # x (float32) is mapped; the codes (int16, read as int64) are not
        assert by_path["/train/x"] == [ReadEvent("/train/x", "map", 2, 78, 5, gather=True)]
    else:
        assert all(r.via == "hdf5" for r in by_path["/train/x"])
    assert all(r.via == "hdf5" for r in by_path["/train/text"] + by_path["/train/label/codes"])


@pytest.mark.parametrize("budget", ["uncached-offsets", "tiny-spans", "wide-gaps"])
def test_reads_under_other_memory_budgets(
    written: tuple[Dataset, dict[str, Any]], monkeypatch: pytest.MonkeyPatch, budget: str
) -> None:
    """Offsets read per request (large files), spans cut to one chunk, and wide gap merging all give the same values."""
    ds, src = written
    if budget == "uncached-offsets":
        monkeypatch.setattr(offsets_module, "OFFSETS_CACHE_BYTES", 0)
    elif budget == "tiny-spans":
        monkeypatch.setattr(column_module, "_SPAN_BYTES", 1)
    else:
        monkeypatch.setattr(column_module, "_GAP_BYTES", 1 << 30)
    fresh = h5ml.open(ds.path)
    order = [61, 3, 3, 98, 0, 47, 48, 12]
    with fresh:
        batch = fresh["train"][order]
        for name, values in batch.items():
            _assert_same(values if name != "text" else list(values), _expected(src, name, order))
        assert np.array_equal(fresh["train"]["ragged"].lengths(order), [len(src["ragged"][i]) for i in order])


# -- pickling and processes (C02) -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("what", "keys"),
    [("dataset", ["train", "x", [5, 2, 5]]), ("split", [[5, 2, 5]]), ("feature", [[5, 2, 5]])],
)
def test_pickle_reopens_in_a_spawned_process(
    written: tuple[Dataset, dict[str, Any]], what: str, keys: list[Any]
) -> None:
    """Case C02: Dataset, Split and Feature pickle by path; a spawned child reopens the file and reads the same data."""
    ds, src = written
    obj = {"dataset": ds, "split": ds["train"], "feature": ds["train"]["ragged"]}[what]
    blob = pickle.dumps(obj)
    assert len(blob) < 2000  # path and options, no data or handle
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        got = pool.submit(apply_keys, blob, keys).result(timeout=120)
    if what == "dataset":
        assert np.array_equal(got, src["x"][[5, 2, 5]])
    elif what == "split":
        assert np.array_equal(got["x"], src["x"][[5, 2, 5]]) and got["text"].tolist() == [
            src["text"][i] for i in (5, 2, 5)
        ]
        _assert_same(got["blob"], _expected(src, "blob", [5, 2, 5]))
    else:
        _assert_same(got, _expected(src, "ragged", [5, 2, 5]))
    copy = pickle.loads(blob)
    assert type(copy) is type(obj)


def test_fork_child_reopens_and_reads_the_same_values(written: tuple[Dataset, dict[str, Any]]) -> None:
    """Case C02: a dataset opened and read in the parent is read in a forked child, which opens its own handle."""
    ds, src = written
    handle = ds.h5file
    assert np.array_equal(ds["train"]["x"][[8, 1]], src["x"][[8, 1]])
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    child = ctx.Process(target=read_after_fork, args=(ds, handle, ["train", "x", [8, 1, 8]], queue))
    child.start()
    values, replaced = queue.get(timeout=120)
    child.join(timeout=120)
    assert child.exitcode == 0
    assert replaced
    assert np.array_equal(values, src["x"][[8, 1, 8]])
    assert ds.h5file is handle and np.array_equal(ds["train"]["label"][[0, 1]], src["codes"][[0, 1]])


# -- options ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("locking", "flag"), [(False, 0), (True, 1)])
def test_locking_option_reaches_hdf5(tmp_path: Path, locking: bool, flag: int) -> None:
    """C03: locking=False (read-only media, NFS) and locking=True are passed to HDF5's file access property list."""
    write_file(tmp_path / "l.h5", {"train": {"x": Dense(np.arange(3))}})
    with h5ml.open(tmp_path / "l.h5", locking=locking) as ds:
        assert ds.h5file.id.get_access_plist().get_file_locking()[0] == flag
        assert ds["train"]["x"][2] == 2


# -- checks at open (§1.3-§1.5, §3.5, §3.6, §4.1, §4.4) -----------------------------------------------


def test_higher_major_is_refused_naming_both_versions(tmp_path: Path) -> None:
    """§1.3: a file of a higher MAJOR version is refused; the message names both versions."""
    # SPEC §1.3-R2
    write_file(tmp_path / "v2.h5", {"train": {"x": Dense(np.arange(3))}}, root={"format_version": "2.0"})
    with pytest.raises(UnsupportedVersionError, match=r"file is h5ml 2\.0; this reader implements 1\.2; upgrade h5ml"):
        h5ml.open(tmp_path / "v2.h5")


def test_higher_minor_with_unknown_objects_reads(tmp_path: Path) -> None:
    """§1.4/§5.5: a newer MINOR with unknown attributes, groups, datasets and encodings is read, ignoring them.

    SPEC §4.7-R1 (user attributes), SPEC §5.4-R2 (reserved objects), SPEC §5.5-R1 (unknown objects)."""
    # SPEC §1.4-R1, §1.4.1-R1: unknown objects and an unknown encoding are ignored

    def newer(f: h5py.File) -> None:
        f.attrs["future_attribute"] = 3
        f.create_group("_h5ml").attrs["x"] = 1
        f.create_dataset("stray", data=np.arange(3))  # not a group: not a split
        f["train"].attrs["future_split_attr"] = "x"
        f["train"]["x"].attrs["future_feature_attr"] = 1.5
        f["train"].create_group("_index").create_dataset("order", data=np.arange(4))
        f["train"].create_group("notes")  # no encoding: unknown object
        sparse = f["train"].create_group("sparse")
        sparse.attrs["encoding"] = "sparse"
        sparse.attrs["encoding_version"] = "1.0"

    x = np.arange(8).reshape(4, 2)
    write_file(tmp_path / "v17.h5", {"train": {"x": Dense(x)}}, root={"format_version": "1.7"}, extra=newer)
    with h5ml.open(tmp_path / "v17.h5") as ds:
        assert ds.format_version == (1, 7)
        assert list(ds.splits) == ["train"]
        assert list(ds["train"].features) == ["x"]
        assert np.array_equal(ds["train"]["x"][[3, 0]], x[[3, 0]])
        assert ds.metadata.format_version == "1.7"
        with pytest.raises(EncodingError, match=r"encoding 'sparse'.*upgrade h5ml"):
            ds["train"]["sparse"]


def test_unknown_must_understand_is_refused(tmp_path: Path) -> None:
    """§1.5: an extension listed in must_understand that this reader does not know is refused by name."""
    # SPEC §1.5-R1
    write_file(tmp_path / "m.h5", {"train": {"x": Dense(np.arange(3))}}, root={"must_understand": ["h5ml-sparse"]})
    with pytest.raises(UnknownExtensionError, match="'h5ml-sparse'"):
        h5ml.open(tmp_path / "m.h5")


@pytest.mark.parametrize("marker", [None, 0])
def test_missing_completion_marker_is_refused(tmp_path: Path, marker: int | None) -> None:
    """§4.4, SPEC §4.4-R4: without complete = 1 the writer did not finish: IncompleteFileError."""

    def mark(f: h5py.File) -> None:
        if marker is not None:
            f.attrs["complete"] = np.int64(marker)

    write_file(tmp_path / "i.h5", {"train": {"x": Dense(np.arange(3))}}, complete=False, extra=mark)
    with pytest.raises(IncompleteFileError, match="did not finish"):
        h5ml.open(tmp_path / "i.h5")


def test_not_h5ml_files_are_refused(tmp_path: Path) -> None:
    """§4.1: non-HDF5 files and HDF5 files without format = "h5ml" raise NotH5MLError; a missing path FileNotFound.

    SPEC §4.1-R2: the message says the file is not an h5ml file."""
    (tmp_path / "text.h5").write_text("not hdf5")
    with pytest.raises(NotH5MLError, match="not an HDF5 file"):
        h5ml.open(tmp_path / "text.h5")
    with h5py.File(tmp_path / "plain.h5", "w") as f:
        f["x"] = np.arange(3)
    with pytest.raises(NotH5MLError, match="'format' is missing"):
        h5ml.open(tmp_path / "plain.h5")
    write_file(tmp_path / "other.h5", {"train": {"x": Dense(np.arange(3))}}, root={"format": "zarr"})
    with pytest.raises(NotH5MLError, match="'zarr'"):
        h5ml.open(tmp_path / "other.h5")
    with pytest.raises(FileNotFoundError):
        h5ml.open(tmp_path / "absent.h5")


@pytest.mark.parametrize("size", [40, 200])
def test_truncated_file_is_not_h5ml(tmp_path: Path, size: int) -> None:
    """§4.1/§10.3: a truncated file is refused as not h5ml (HDF5's "sblock" message is no lock error), in a child."""
    write_file(tmp_path / "full.h5", {"train": {"x": Dense(np.arange(1000))}})
    (tmp_path / "cut.h5").write_bytes((tmp_path / "full.h5").read_bytes()[:size])
    with pytest.raises(NotH5MLError, match="cannot be opened as HDF5") as err:
        run_with_timeout(reader_open, (str(tmp_path / "cut.h5"),), timeout=120)
    assert "could not lock" not in str(err.value)


def test_c10_external_link_refused_unless_allowed(tmp_path: Path) -> None:
    """Case C10 (§3.6, §10.1): an external link is refused; allow_external=True follows it (SPEC §10.1-R1)."""
    with h5py.File(tmp_path / "other.h5", "w") as f:
        f["secret"] = np.arange(4)

    def link(f: h5py.File) -> None:
        f["train"]["leak"] = h5py.ExternalLink(str(tmp_path / "other.h5"), "/secret")

    write_file(tmp_path / "l.h5", {"train": {"x": Dense(np.arange(4))}}, extra=link)
    with pytest.raises(ForbiddenStorageError, match=r"/train/leak is an external link") as err:
        h5ml.open(tmp_path / "l.h5")
    assert isinstance(err.value, PermissionError)
    with h5ml.open(tmp_path / "l.h5", allow_external=True) as ds:
        assert ds["train"]["x"][3] == 3


def test_c10_external_storage_refused_unless_allowed(tmp_path: Path) -> None:
    """Case C10 (§3.6, §10.1): raw data in an external file is refused; allow_external=True reads it (SPEC §10.1-R1)."""
    outside = tmp_path / "outside.bin"
    outside.write_bytes(np.arange(4, dtype="<i8").tobytes())

    def external(f: h5py.File) -> None:
        dset = f["train"].create_dataset("ext", shape=(4,), dtype="<i8", external=[(str(outside), 0, 32)])
        dset.attrs["encoding"] = "dense"
        dset.attrs["encoding_version"] = "1.0"

    write_file(tmp_path / "e.h5", {"train": {"x": Dense(np.arange(4))}}, extra=external)
    with pytest.raises(ForbiddenStorageError, match=r"/train/ext stores its data in the external file"):
        h5ml.open(tmp_path / "e.h5")
    with h5ml.open(tmp_path / "e.h5", allow_external=True) as ds:
        assert ds["train"]["ext"][[3, 0]].tolist() == [3, 0]


def test_virtual_dataset_refused_unless_allowed(tmp_path: Path) -> None:
    """§3.6: a virtual dataset is refused; allow_external=True reads it (SPEC §10.1-R1)."""

    def virtual(f: h5py.File) -> None:
        layout = h5py.VirtualLayout(shape=(4,), dtype="i8")
        layout[:] = h5py.VirtualSource(".", "/train/x", shape=(4,))
        dset = f["train"].create_virtual_dataset("v", layout)
        dset.attrs["encoding"] = "dense"

    write_file(tmp_path / "v.h5", {"train": {"x": Dense(np.arange(4, dtype="i8"))}}, extra=virtual)
    with pytest.raises(ForbiddenStorageError, match="/train/v is a virtual dataset"):
        h5ml.open(tmp_path / "v.h5")
    with h5ml.open(tmp_path / "v.h5", allow_external=True) as ds:
        assert ds["train"]["v"][[2, 1]].tolist() == [2, 1]


def test_unavailable_filter_refused_on_first_read(tmp_path: Path) -> None:
    """§3.5: a dataset using a filter this HDF5 build lacks raises UnsupportedFilterError naming filter and dataset.

    SPEC §3.5-R4. The filter is not declared in ``required_filters`` (the file
    is invalid, E114): a declared one makes the reader refuse the whole file at
    open (SPEC §3.5-R3, :func:`test_declared_unavailable_filter_refused_at_open`).
    """

    def filtered(f: h5py.File) -> None:
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_chunk((4,))
        dcpl.set_filter(40000, h5py.h5z.FLAG_OPTIONAL, ())
        space = h5py.h5s.create_simple((8,))
        dset = h5py.Dataset(h5py.h5d.create(f["train"].id, b"odd", h5py.h5t.STD_I32LE, space, dcpl=dcpl))
        dset[:] = np.arange(8)
        dset.attrs["encoding"] = "dense"

    assert not h5py.h5z.filter_avail(40000)
    write_file(tmp_path / "f.h5", {"train": {"x": Dense(np.arange(8))}}, extra=filtered)
    with h5ml.open(tmp_path / "f.h5") as ds:
        assert ds["train"]["x"][7] == 7  # other features read
        feat = ds["train"]["odd"]
        assert feat.compression == "filter 40000"
        with pytest.raises(UnsupportedFilterError, match=r"/train/odd uses HDF5 filter 40000") as err:
            feat[[0, 1]]
    assert err.value.hdf5_path == "/train/odd"


_REFUSED_AT_OPEN = """
import json, sys
sys.modules["hdf5plugin"] = None  # a process with only the filters this h5py build registers
import h5py, h5ml
from h5ml.errors import UnsupportedFilterError
out = {"available": {str(fid): bool(h5py.h5z.filter_avail(fid)) for fid in (32000, 32001, 40000)}, "refused": {}}
for path in sys.argv[1:-1]:
    try:
        h5ml.open(path).close()
    except UnsupportedFilterError as err:
        out["refused"][path] = [str(err), err.hdf5_path]
with h5ml.open(sys.argv[-1]) as ds:
    out["ok"] = ds["train"]["x"][:].tolist()
print(json.dumps(out))
"""


def test_declared_unavailable_filter_refused_at_open(tmp_path: Path) -> None:
    """SPEC §3.5-R3: a file whose ``required_filters`` lists a filter this HDF5 build lacks is refused at open.

    The error names every such filter (id, and name when known) and none that
    the build decodes (the core filter 1); the file's data is never read. The
    conformance fixture ``valid-declared-unavailable-filter`` (filter 32001,
    declared, on an empty dataset) is valid, and still refused by a reader
    that lacks the filter. Checked in a child process that never imports
    hdf5plugin (which registers 32001 for the rest of a process's life), so
    the answer does not depend on which tests ran before.
    """
    cases = {"one.h5": ([40000], "40000"), "three.h5": ([1, 32001, 40000], "32001 ('blosc'), 40000")}
    for name, (listed, _) in cases.items():
        write_file(tmp_path / name, {"train": {"x": Dense(np.arange(8))}}, root={"required_filters": listed})
    # a declared filter the build has (LZF, bundled with h5py; gzip is core) opens and reads
    write_file(tmp_path / "ok.h5", {"train": {"x": Dense(np.arange(8))}}, root={"required_filters": [2, 32000]})
    fixture = Path(__file__).parent.parent / "conformance_tests" / "fixtures" / "valid-declared-unavailable-filter.h5"
    paths = [str(tmp_path / name) for name in cases] + [str(fixture), str(tmp_path / "ok.h5")]
    env = {k: v for k, v in os.environ.items() if k != "HDF5_PLUGIN_PATH"}
    env["PYTHONPATH"] = os.pathsep.join(sys.path)
    done = subprocess.run(
        [sys.executable, "-c", _REFUSED_AT_OPEN, *paths],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["available"] == {"32000": True, "32001": False, "40000": False}
    for name, (_, named) in cases.items():
        message, hdf5_path = out["refused"][str(tmp_path / name)]
        assert f"filter(s) {named}, which this HDF5 build cannot decode" in message
        assert "required_filters" in message and str(tmp_path / name) in message
        assert hdf5_path == "/"
    fixture_message, _ = out["refused"][str(fixture)]
    assert "32001 ('blosc')" in fixture_message
    assert str(tmp_path / "ok.h5") not in out["refused"]
    assert out["ok"] == list(range(8))


def test_broken_offsets_raise_invalid_file_error(tmp_path: Path) -> None:
    """§6.3: offsets that point outside the values make the read fail with a message naming the dataset."""
    write_file(tmp_path / "o.h5", {"train": {"r": Ragged([np.arange(3), np.arange(2)])}})
    with h5py.File(tmp_path / "o.h5", "r+") as f:
        f["train/r/offsets"][2] = 9
    with h5ml.open(tmp_path / "o.h5") as ds:
        assert ds["train"]["r"][0].tolist() == [0, 1, 2]
        with pytest.raises(h5ml.InvalidFileError, match="/train/r/offsets"):
            ds["train"]["r"][1]
