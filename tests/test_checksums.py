"""Per-chunk checksums (SPEC §8.4): what the writer writes, append mode, and the validator's E162 and E163.

Real files written by ``h5ml.write`` and ``h5ml.Writer``, damaged byte by byte
in ``tmp_path``, checked with the real validator and command line.
"""

from __future__ import annotations

import os
from pathlib import Path

import crc32c
import h5py
import numpy as np
import pytest

import h5ml
from _files import chunk_spans, codes_at, flip_byte, run_cli
from h5ml.model.checksums import BLOCK_BYTES, fd_reader, stored_layout, verify_checksums
from h5ml.validator.runner import validate


def write_mixed(path: Path, compression: str | None = None, n: int = 3000, checksums: bool = True) -> None:
    """A file with a dense, a ragged, a string, a categorical and a bytes feature (every chunked dataset kind)."""
    rng = np.random.default_rng(7)
    h5ml.write(
        path,
        {
            "train": {
                "x": rng.normal(size=(n, 96)).astype("f4"),
                "r": [np.arange(i % 11, dtype="i2") for i in range(n)],
                "s": [f"text {i}" for i in range(n)],
                "c": h5ml.Categorical(rng.integers(0, 3, n), ["a", "b", "c"]),
                "b": [bytes(i % 5) for i in range(n)],
            }
        },
        compression=compression,
        checksums=checksums,
    )


@pytest.mark.parametrize("compression", [None, "gzip"])
def test_the_writer_records_the_crc32c_of_every_stored_chunk(tmp_path: Path, compression: str | None) -> None:
    """SPEC §8.4-S1, §8.4-R1, §8.4-R2: one uint32 per chunk, the CRC32C of its bytes as stored (after the filters)."""
    path = tmp_path / "d.h5"
    write_mixed(path, compression)
    with h5py.File(path, "r") as f:
        for dset_path in [
            "/train/x",
            "/train/r/values",
            "/train/r/offsets",
            "/train/s",
            "/train/c/codes",
            "/train/b/values",
        ]:
            dset = f[dset_path]
            parent, name = dset_path.rsplit("/", 1)
            stored = f[f"{parent}/_crc32c.{name}"]
            assert stored.dtype == np.dtype("<u4") and stored.ndim == 1
            spans = chunk_spans(path, dset_path)
            assert stored.shape == (len(spans),) == (-(-dset.shape[0] // dset.chunks[0]),)
            raw = path.read_bytes()
            for k, (offset, size) in enumerate(spans):  # chunks in row order: one-axis chunk grids here
                assert int(stored[k]) == crc32c.crc32c(raw[offset : offset + size])
        assert f["/train/x"].compression == compression
        assert verify_checksums(f) == ([], [], [])
    assert not {c for c, _ in codes_at(validate(path, deep=True)) if c.startswith("E") or c == "I301"}


def test_a_contiguous_dataset_has_one_entry_per_mebibyte_block(tmp_path: Path) -> None:
    """SPEC §8.4-R1: contiguous storage is checked in blocks of 1 MiB, the last one shorter."""
    path = tmp_path / "d.h5"
    write_mixed(path)
    with h5py.File(path, "r+") as f:  # class_names are contiguous; so is a 2.5 MiB dense dataset added by hand
        layout = stored_layout(f["/train/c/class_names"])
        assert not isinstance(layout, str) and not layout.chunked and layout.count == 1
        data = np.arange(5 * BLOCK_BYTES // 8, dtype="<f4").reshape(-1, 16)
        f.create_dataset("/train/big", data=data)
        big = stored_layout(f["/train/big"])
        assert not isinstance(big, str)
        assert big.count == 3 and [big.pieces[k][1] for k in range(3)] == [BLOCK_BYTES, BLOCK_BYTES, BLOCK_BYTES // 2]
        assert list(big.entries_for_rows(0, 1)) == [0]
        assert list(big.entries_for_rows(data.shape[0] - 1, data.shape[0])) == [2]


def test_checksums_false_writes_none(tmp_path: Path) -> None:
    """SPEC §8.4-S1: the writer's opt-out leaves no checksum dataset, and the file is still valid."""
    path = tmp_path / "d.h5"
    write_mixed(path, checksums=False)
    with h5py.File(path, "r") as f:
        names: list[str] = []
        f.visit(names.append)
        assert not [n for n in names if "_crc32c." in n]
        assert len(verify_checksums(f)[1]) == 8  # every feature dataset unprotected
    assert validate(path, deep=True).valid


def test_append_mode_keeps_checksums_valid_and_reuses_untouched_chunks(tmp_path: Path) -> None:
    """SPEC §8.4-R3: Writer(mode="a") recomputes the chunk rows it changed and keeps the others."""
    path = tmp_path / "d.h5"
    rng = np.random.default_rng(1)
    first = rng.normal(size=(5000, 64)).astype("f4")  # chunks of 4096 rows: one whole, one partial
    h5ml.write(path, {"train": {"x": first, "r": [np.arange(i % 5) for i in range(5000)]}}, compression="gzip")
    with h5py.File(path, "r") as f:
        before = f["/train/_crc32c.x"][()]
    with h5ml.Writer(path, mode="a") as w:
        w.append("train", {"x": rng.normal(size=(4000, 64)).astype("f4"), "r": [np.arange(3)] * 4000})
        w.add_split("test")
        w.append("test", {"x": first[:10], "r": [np.arange(2)] * 10})
    with h5py.File(path, "r") as f:
        after = f["/train/_crc32c.x"][()]
        assert f["/train/x"].shape == (9000, 64) and after.shape == (3,)
        assert after[0] == before[0] and after[1] != before[1]  # the partial chunk was filled and rehashed
        assert "_crc32c.x" in f["test"] and "_crc32c.values" in f["test/r"]
        assert verify_checksums(f) == ([], [], [])
    with h5ml.Writer(path, mode="a", checksums=False) as w:
        w.append("test", {"x": first[:3], "r": [np.arange(2)] * 3})
    with h5py.File(path, "r") as f:
        names: list[str] = []
        f.visit(names.append)
        assert not [n for n in names if "_crc32c." in n]  # none left stale
    assert validate(path, deep=True).valid


@pytest.mark.parametrize("compression", [None, "gzip"])
def test_deep_validation_finds_a_flipped_byte_by_its_checksum(tmp_path: Path, compression: str | None) -> None:
    """SPEC §8.4-R2, §8.4-R5: a flipped byte in a chunk is E162 at its dataset in deep validation only."""
    path = tmp_path / "d.h5"
    write_mixed(path, compression)
    offset, size = chunk_spans(path, "/train/r/values")[0]
    flip_byte(path, offset + size // 2, 0x01)
    assert ("E162", "/train/r/values") not in codes_at(validate(path))
    deep = validate(path, deep=True)
    assert ("E162", "/train/r/values") in codes_at(deep) and not deep.valid
    message = next(i.message for i in deep.issues if i.code == "E162")
    assert "chunk 0" in message and "recorded 0x" in message
    code, out, _err = run_cli("validate", "--deep", str(path))
    assert code != 0 and "E162" in out


def test_shallow_validation_reports_malformed_checksum_datasets(tmp_path: Path) -> None:
    """SPEC §8.4-R1, §8.4-R5: a wrong dtype, a wrong length and an orphan are E163 without reading data."""
    path = tmp_path / "d.h5"
    write_mixed(path)
    with h5py.File(path, "r+") as f:
        del f["/train/_crc32c.x"]
        f.create_dataset("/train/_crc32c.x", data=np.zeros(1, dtype="<i4"))  # int32, and one entry short
        old = f["/train/r/_crc32c.values"][()]
        del f["/train/r/_crc32c.values"]
        f.create_dataset("/train/r/_crc32c.values", data=np.concatenate([old, old]))  # too many entries
        f.create_dataset("/train/_crc32c.gone", data=np.zeros(1, dtype="<u4"))  # protects nothing
    report = validate(path)
    assert {("E163", "/train/_crc32c.x"), ("E163", "/train/r/_crc32c.values"), ("E163", "/train/_crc32c.gone")} <= (
        codes_at(report)
    )
    assert not [i for i in report.issues if i.code == "I301"]
    with h5ml.open(path, verify=True) as d, pytest.raises(h5ml.InvalidFileError, match="E163"):
        d["train"]["x"][0]


def test_a_checksum_dataset_of_a_1_0_reader_is_only_information(tmp_path: Path) -> None:
    """SPEC §5.4-R2: readers that do not implement checksums ignore them; values read are the same either way."""
    with_path, without_path = tmp_path / "with.h5", tmp_path / "without.h5"
    write_mixed(with_path)
    write_mixed(without_path, checksums=False)
    with h5ml.open(with_path) as a, h5ml.open(without_path) as b:
        assert list(a["train"].features) == list(b["train"].features)
        np.testing.assert_array_equal(a["train"]["x"][:], b["train"]["x"][:])
        assert a.fingerprint == b.fingerprint


@pytest.mark.parametrize("case", ["e120-feature-not-utf8", "e120-several-names"])
def test_names_that_are_not_utf8_are_not_taken_for_checksum_datasets(case: str) -> None:
    """SPEC §8.4-R5, §5.1.1: a member name that is not UTF-8 (bytes in h5py) is checked as a name (E120), no crash."""
    fixture = Path(__file__).resolve().parents[1] / "conformance_tests" / "fixtures" / f"{case}.h5"
    for deep in (False, True):
        report = validate(fixture, deep=deep)
        assert "E120" in report.codes and "E163" not in report.codes


def test_a_stored_chunk_beyond_the_end_of_the_file_allocates_nothing(tmp_path: Path) -> None:
    """SPEC §10.4-S1: the byte reader refuses a range past the file's end before it allocates a buffer for it."""
    path = tmp_path / "small.bin"
    path.write_bytes(b"0123456789")
    fd = os.open(path, os.O_RDONLY)
    try:
        read = fd_reader(fd)
        assert read(2, 5) == b"23456"
        with pytest.raises(OSError, match=r"beyond the file's end at 10"):
            read(0, 1 << 50)  # a buffer of 1 PiB would be a MemoryError, not this message
        with pytest.raises(OSError, match=r"beyond the file's end"):
            read(8, 3)
    finally:
        os.close(fd)
