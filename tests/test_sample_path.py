"""The per-sample path (``feature[i]``, ``split[i]``: a ``DataLoader``'s default) without an HDF5 call per row.

Issue 15, "Per-call overhead" (§7.3, §10.3): one sample of unfiltered numeric
data is copied out of the file's memory map
(:meth:`h5ml.reader.direct.DirectRows.sample`), one sample of compressed data
h5ml decodes comes from its cache of decoded chunks
(:meth:`h5ml.reader.compressed.CompressedRows.sample`). Values, dtypes, types
(a numpy scalar for a 1-D feature) and writability are those of h5py's
``dataset[i]``; a file truncated while open is still refused. Real files
written with h5py (tests/_files.py).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import h5py
import numpy as np
import pytest

import h5ml
from _files import Dense, write_file


def _source() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(7)
    return {
        "img": rng.integers(0, 256, size=(90, 4, 3)).astype(np.uint8),
        "f": rng.standard_normal((90, 5)).astype(np.float32),
        "be": rng.integers(-1000, 1000, size=(90, 2)).astype(">i4"),
        "label": rng.integers(0, 10, size=90).astype(np.int64),
        "bel": rng.standard_normal(90).astype(">f8"),
    }


def _write(path: Path, compression: str | None, chunks: bool = True) -> dict[str, np.ndarray]:
    src = _source()
    feats = {
        name: Dense(v, chunks=((16, *v.shape[1:]) if chunks or compression else None), compression=compression)
        for name, v in src.items()
    }
    write_file(path, {"train": feats})
    return src


@pytest.mark.parametrize("chunks", [True, False], ids=["chunked", "contiguous"])
def test_one_unfiltered_sample_is_copied_out_of_the_map_like_h5py(tmp_path: Path, chunks: bool) -> None:
    """§7.3: feature[i] of unfiltered data makes no HDF5 read; it equals h5py's dataset[i] in value, dtype and type."""
    path = tmp_path / "u.h5"
    _write(path, None, chunks)
    rows = [0, 89, -1, 17, np.int64(40), 16, 15]
    with h5py.File(path, "r") as f:
        want = {name: [f[f"train/{name}"][int(r)] for r in rows] for name in _source()}
    with h5ml.open(path) as ds:
        file_map = ds.file_map()
        assert file_map is not None and file_map.data is not None
        for name in _source():
            for r, expected in zip(rows, want[name], strict=True):
                got = ds["train"][name][r]
                assert isinstance(got, np.ndarray) == isinstance(expected, np.ndarray)
                assert np.asarray(got).dtype == np.asarray(expected).dtype.newbyteorder("=")
                np.testing.assert_array_equal(got, expected)
                if isinstance(got, np.ndarray):
                    assert got.flags.writeable and not np.shares_memory(got, file_map.data)
                    assert got.shape == expected.shape
                else:
                    assert isinstance(got, np.generic)
        assert ds.read_stats.hdf5_reads == 0
        assert ds.read_stats.direct_copies == len(rows) * len(_source())
        sample = ds["train"][3]
        assert set(sample) == set(_source())
        for name, values in _source().items():
            np.testing.assert_array_equal(sample[name], values[3])


def test_one_compressed_sample_comes_from_the_decoded_cache(tmp_path: Path) -> None:
    """§7.3: feature[i] of gzip data decodes the row's chunk once; later rows of that chunk decode nothing."""
    path = tmp_path / "g.h5"
    src = _write(path, "gzip")
    with h5ml.open(path) as ds:
        feature = ds["train"]["f"]
        file_map = ds.file_map()
        assert file_map is not None
        before = file_map.decoded.decodes
        for r in (20, 17, 31, 16):  # all in chunk 1 (rows 16-31)
            got = feature[r]
            np.testing.assert_array_equal(got, src["f"][r])
            assert got.flags.writeable and got.dtype == np.float32
        assert file_map.decoded.decodes - before == 1
        assert file_map.decoded.cached(("/train/f", 1))
        label = ds["train"]["bel"][5]
        assert isinstance(label, np.generic) and label.dtype == np.dtype("f8")
        assert float(label) == float(src["bel"][5])
        got = feature[20]
        got[:] = 0  # a copy: the cached chunk is not changed
        np.testing.assert_array_equal(feature[20], src["f"][20])


@pytest.mark.parametrize("compression", [None, "gzip"])
def test_one_sample_of_a_file_truncated_while_open_is_refused(tmp_path: Path, compression: str | None) -> None:
    """§10.3: after the file was truncated, feature[i] raises InvalidFileError naming file and dataset, not SIGBUS."""
    path = tmp_path / "t.h5"
    _write(path, compression)
    with h5ml.open(path) as ds:
        feature = ds["train"]["f"]
        feature[0]
        os.truncate(path, 4096)
        with pytest.raises(h5ml.InvalidFileError, match="truncated") as info:
            feature[80]
        assert info.value.path == str(path) and info.value.hdf5_path == "/train/f"


def test_a_decode_after_the_file_shrank_is_refused_not_sigbus(tmp_path: Path) -> None:
    """§10.3: a decode that starts after the size check (the pool's read-ahead runs at any time) reads with pread.

    The size check is bypassed to stand for that race; a decode reading the memory map would die of SIGBUS
    (so the decode runs in a child process, with a time limit).
    """
    path = tmp_path / "t.h5"
    _write(path, "gzip")
    script = textwrap.dedent(
        f"""
        import os
        import h5ml
        from h5ml.reader.compressed import CompressedRows

        with h5ml.open({str(path)!r}) as ds:
            rows = ds["train"]["f"]._column().decoded_rows()
            assert rows is not None
            last = len(rows.stored) - 1
            offset, size, _ = rows.stored[last]
            os.truncate({str(path)!r}, 4096)
            assert offset + size > 4096
            CompressedRows._check_file = lambda self: self.file_map.data  # the check passed before the file shrank
            try:
                rows.decode(last)
            except h5ml.InvalidFileError as exc:
                print("refused:", exc)
        """
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])
    assert "refused:" in done.stdout and "truncated" in done.stdout and "/train/f" in done.stdout


def test_one_sample_with_verify_checks_its_chunk(tmp_path: Path) -> None:
    """§8.4: feature[i] on the map path with verify=True refuses a file without checksums before returning values."""
    path = tmp_path / "v.h5"
    _write(path, None)
    with h5ml.open(path, verify=True) as ds, pytest.raises(h5ml.ChecksumsMissingError):
        ds["train"]["f"][3]
