"""Verified reads (SPEC §8.4): ``verify=True`` finds a flipped byte in any chunk on every read path.

Real files written by ``h5ml.write``, damaged in place in ``tmp_path``, read
through the real reader (memory map, h5py, chunk cache), the batch and
prefetch paths, and both adapters. The seeded random-damage test records the
figures of issue 14 with the ``figures`` fixture.
"""

from __future__ import annotations

import os
import pickle
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import pytest

os.environ.setdefault("KERAS_BACKEND", "torch")  # before keras is imported (as tests/test_keras_adapter.py)

import h5ml
from _figures import Figures
from _files import chunk_spans, flip_byte
from h5ml.reader.prefetch import Prefetcher
from h5ml.reader.source import SplitSource

#: Every chunked dataset of the file :func:`write_file` writes.
DATASETS = ["/train/x", "/train/r/values", "/train/r/offsets", "/train/s", "/train/c/codes", "/train/b/values"]


def write_file(path: Path, compression: str | None, n: int = 2000, checksums: bool = True) -> Path:
    """Dense, ragged, string, categorical and bytes features, several chunks each for the dense one."""
    rng = np.random.default_rng(3)
    h5ml.write(
        path,
        {
            "train": {
                "x": rng.normal(size=(n, 300)).astype("f4"),  # 1200 B rows: chunks of 512 rows, 4 chunks
                "r": [rng.integers(0, 99, size=i % 13).astype("i4") for i in range(n)],
                "s": [f"sample {i}" for i in range(n)],
                "c": h5ml.Categorical(rng.integers(0, 4, n), ["a", "b", "c", "d"]),
                "b": [bytes(rng.integers(0, 255, size=i % 7, dtype=np.uint8)) for i in range(n)],
            }
        },
        compression=compression,
        checksums=checksums,
    )
    return path


def read_all(path: Path, verify: bool, direct: bool = True) -> dict[str, Any]:
    """Every sample of every feature, in one read per feature (raises what the reader raises)."""
    with h5ml.open(path, verify=verify, direct=direct) as d:
        split = d["train"]
        return {name: split.read(slice(0, split.num_samples), name)[name] for name in split.every_feature()}


@pytest.mark.parametrize("compression", [None, "gzip"])
def test_verified_reads_return_the_same_values(tmp_path: Path, compression: str | None) -> None:
    """SPEC §8.4-R4: on an undamaged file, verify=True returns exactly what verify=False does, on every path."""
    path = write_file(tmp_path / "d.h5", compression)
    plain = read_all(path, verify=False)
    for direct in (True, False):
        checked = read_all(path, verify=True, direct=direct)
        np.testing.assert_array_equal(checked["x"], plain["x"])
        assert [a.tolist() for a in checked["r"]] == [a.tolist() for a in plain["r"]]
        assert list(checked["s"]) == list(plain["s"]) and list(checked["b"]) == list(plain["b"])
        np.testing.assert_array_equal(checked["c"], plain["c"])


@pytest.mark.parametrize("compression", [None, "gzip"])
@pytest.mark.parametrize("direct", [True, False], ids=["memory-map", "h5py"])
@pytest.mark.parametrize("how", ["row", "slice", "indices"])
def test_a_flipped_byte_in_a_chunk_is_an_error_on_every_read_path(
    tmp_path: Path, compression: str | None, direct: bool, how: str
) -> None:
    """SPEC §8.4-R4: one flipped byte in chunk 2 of /train/x raises ChecksumError naming file, path, chunk, CRCs.

    Uncompressed chunks are read through the memory map (``direct=True``) or
    h5py; gzip chunks through HDF5's chunk cache; one row, a slice, and
    indices in any order (the read-plan path). Rows of other chunks still read.
    """
    path = write_file(tmp_path / "d.h5", compression)
    offset, size = chunk_spans(path, "/train/x")[2]
    flip_byte(path, offset + size // 3)
    with h5ml.open(path, verify=True, direct=direct) as d:
        x = d["train"]["x"]
        good = x[0:512]  # chunk 0 is intact
        assert good.shape == (512, 300)
        with pytest.raises(h5ml.ChecksumError) as caught:
            if how == "row":
                x[1100]
            elif how == "slice":
                x[1000:1030]
            else:
                d["train"].read([1500, 3, 1100, 1024], "x")
        err = caught.value
    assert (err.path, err.hdf5_path, err.chunk) == (str(path), "/train/x", 2)
    assert err.expected != err.actual and f"0x{err.expected:08x}" in str(err) and "chunk 2" in str(err)
    assert "rows [1024, 1536)" in str(err)


def test_uncompressed_damage_is_silent_without_verify(tmp_path: Path) -> None:
    """The case verify=True exists for: a flipped byte in an uncompressed chunk is returned by a plain read."""
    path = write_file(tmp_path / "d.h5", None)
    before = read_all(path, verify=False)["x"]
    offset, _ = chunk_spans(path, "/train/x")[1]
    flip_byte(path, offset + 8)
    after = read_all(path, verify=False)["x"]
    assert not np.array_equal(before, after)  # a wrong value, and no error
    with pytest.raises(h5ml.ChecksumError):
        read_all(path, verify=True)


def test_a_file_without_checksums_is_refused_by_a_verified_read(tmp_path: Path) -> None:
    """SPEC §8.4-R4: verify=True never returns unchecked data; the message says how to get checksums."""
    path = write_file(tmp_path / "d.h5", None, n=50, checksums=False)
    with h5ml.open(path, verify=True) as d, pytest.raises(h5ml.ChecksumsMissingError) as caught:
        d["train"]["x"][0]
    assert caught.value.hdf5_path == "/train/x" and "checksums=True" in str(caught.value)
    assert "verify=False" in str(caught.value)
    assert read_all(path, verify=False)["x"].shape == (50, 300)


def test_verify_survives_pickling_and_the_prefetch_workers(tmp_path: Path) -> None:
    """SPEC §8.4-R4: a pickled reader and the batch prefetch paths (threads and processes) verify too."""
    path = write_file(tmp_path / "d.h5", "gzip")
    offset, size = chunk_spans(path, "/train/x")[3]
    flip_byte(path, offset + size - 1)
    with h5ml.open(path, verify=True) as d:
        again = pickle.loads(pickle.dumps(d))
        assert again.verify
        with pytest.raises(h5ml.ChecksumError):
            again["train"]["x"][1999]
        again.close()
    source = SplitSource(path, "train", ["x"], verify=True)
    assert pickle.loads(pickle.dumps(source)).verify
    for processes in (False, True):
        prefetcher = Prefetcher(2, processes, depth=1)
        try:
            assert prefetcher.get("ok", [("ok", lambda: (source, list(range(64)), 0, None))])["x"].shape == (64, 300)
            with pytest.raises(h5ml.ChecksumError, match="chunk 3"):
                prefetcher.get("bad", [("bad", lambda: (source, [1990, 5], 0, None))])
        finally:
            prefetcher.close()
    source.close()


def test_random_damage_in_chunks_is_always_found_by_verified_reads(tmp_path: Path, figures: Figures) -> None:
    """SPEC §8.4-R4: seeded random byte flips inside stored chunks (uncompressed and gzip): every verified read raises.

    Issue 14 measured 109 of 150 damaged files read silently; here each file
    gets 1-3 flipped bytes inside the chunk data of random datasets, is read
    whole with verify=False (counted: silent, error) and with verify=True
    (must raise ChecksumError for every file).
    """
    rng = np.random.default_rng(14)
    bases = {c: write_file(tmp_path / f"base-{c}.h5", c, n=1200) for c in (None, "gzip")}
    base_spans = {(c, p): chunk_spans(path, p) for c, path in bases.items() for p in DATASETS}
    tried = silent = refused = 0
    for k in range(60):
        compression = None if k % 2 == 0 else "gzip"
        path = tmp_path / f"damaged-{k}.h5"
        path.write_bytes(bases[compression].read_bytes())
        for _ in range(int(rng.integers(1, 4))):
            chunks = base_spans[(compression, DATASETS[int(rng.integers(len(DATASETS)))])]
            offset, size = chunks[int(rng.integers(len(chunks)))]
            flip_byte(path, offset + int(rng.integers(size)), int(1 << int(rng.integers(8))))
        tried += 1
        try:
            read_all(path, verify=False)
            silent += 1
        except h5ml.H5MLError:
            pass
        with pytest.raises(h5ml.ChecksumError):
            read_all(path, verify=True)
        refused += 1
    assert tried == refused == 60
    assert silent > 0  # without verify, damage is returned as data
    figures.record("verified reads", "damaged files (random byte flips in chunks)", tried)
    figures.record("verified reads", "read silently with verify=False", silent)
    figures.record("verified reads", "refused by verify=True (ChecksumError)", refused)


def test_the_torch_adapter_verifies_in_its_workers(tmp_path: Path) -> None:
    """SPEC §8.4-R4: H5MLDataset(verify=True) raises in the main process and in DataLoader workers."""
    torch = pytest.importorskip("torch")
    from h5ml_torch import H5MLBatchSampler, H5MLDataset, H5MLLoader

    path = write_file(tmp_path / "d.h5", None, n=600)
    offset, _ = chunk_spans(path, "/train/x")[1]
    flip_byte(path, offset)
    data = H5MLDataset(path, "train", ["x"], verify=True)
    assert data[0]["x"].shape == (300,)
    with pytest.raises(h5ml.ChecksumError):
        data[520]
    loader = H5MLLoader(data, H5MLBatchSampler(data, 100), num_workers=1)
    with pytest.raises(h5ml.ChecksumError):
        for _batch in loader:
            pass
    plain = H5MLDataset(path, "train", ["x"])
    assert isinstance(plain[520]["x"], torch.Tensor)  # without verify the damaged row is returned


def test_the_keras_adapter_verifies(tmp_path: Path) -> None:
    """SPEC §8.4-R4: H5MLPyDataset(verify=True) raises on a batch of a damaged chunk."""
    pytest.importorskip("keras")
    from h5ml_keras import H5MLPyDataset

    path = write_file(tmp_path / "d.h5", "gzip", n=600)
    offset, size = chunk_spans(path, "/train/x")[1]
    flip_byte(path, offset + size // 2)
    ds = H5MLPyDataset(path, "train", 100, inputs="x", targets="c", verify=True)
    assert ds[0][0].shape == (100, 300)
    with pytest.raises(h5ml.ChecksumError):
        ds[5]


def test_a_checksum_dataset_behind_a_soft_link_is_not_followed(tmp_path: Path) -> None:
    """SPEC §3.6-R2, §8.4-R4: a verified read refuses checksums reached through a soft link (E115), not following it."""
    path = write_file(tmp_path / "d.h5", None, n=50)
    with h5py.File(path, "r+") as f:
        f["/train/_hidden"] = f["/train/_crc32c.x"][()]
        del f["/train/_crc32c.x"]
        f["/train/_crc32c.x"] = h5py.SoftLink("/train/_hidden")
    with h5ml.open(path, verify=True) as d, pytest.raises(h5ml.InvalidFileError, match="SoftLink"):
        d["train"]["x"][0]
