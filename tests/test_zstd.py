"""The opt-in zstd compression: HDF5 filter 32015 through hdf5plugin, declared in required_filters (§3.5).

Files are written by the real writer and command line from real content (tiles
of scikit-image's astronaut photograph, a float32 speech-like signal made by
espeak-ng when it is installed, else a decaying chirp), read back by
``h5ml.open``, plain h5py with hdf5plugin and :func:`h5ml.reader.zstd_codec.decompress`,
and validated. The cases without hdf5plugin run a child Python in which
``sys.modules["hdf5plugin"] = None`` hides the package and ``HDF5_PLUGIN_PATH``
is unset, so HDF5 has no zstd filter at all.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import pytest

import h5ml
from _files import codes_at, run_cli
from h5ml.errors import WriterError
from h5ml.model.filters import ZSTD_FILTER, pipeline
from h5ml.reader.zstd_codec import decompress
from h5ml.validator import validate

# Not imported here: importing hdf5plugin registers a dozen filters (Blosc, LZ4, ...) for the whole test
# process, and collection would do it before tests/test_reader.py checks how a missing filter is refused.
pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("hdf5plugin") is None, reason='hdf5plugin is not installed (pip install "h5ml[zstd]")'
)

CHILD_TIMEOUT_S = 120


def _tiles(n: int) -> np.ndarray:
    """``n`` real 64x64x3 uint8 tiles cut from scikit-image's astronaut photograph, row by row."""
    import skimage.data

    photo = skimage.data.astronaut()
    tiles = [photo[y : y + 64, x : x + 64] for y in range(0, 512, 64) for x in range(0, 512, 64)]
    return np.stack([tiles[i % len(tiles)] for i in range(n)])


def _speech(n: int, length: int) -> np.ndarray:
    """``(n, length)`` float32 samples of real speech (espeak-ng) when it is installed, else of a decaying chirp."""
    if shutil.which("espeak-ng"):
        import soundfile

        out = Path(os.environ.get("TMPDIR", "/tmp")) / f"h5ml-zstd-speech-{os.getpid()}.wav"
        subprocess.run(["espeak-ng", "-w", str(out), "Compressed speech is read back exactly."], check=True)
        wave = soundfile.read(out, dtype="float32")[0]
        out.unlink()
    else:  # pragma: no cover - the CI image has espeak-ng
        t = np.arange(n * length) / 16000
        wave = (np.sin(2 * np.pi * (200 + 50 * t) * t) * np.exp(-t % 1)).astype(np.float32)
    wave = np.resize(wave, n * length)
    return wave.reshape(n, length)


def _child(code: str, tmp_path: Path, hide_plugin: bool = True) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a child Python with this checkout on its path, hdf5plugin hidden and HDF5_PLUGIN_PATH unset."""
    env = {k: v for k, v in os.environ.items() if k != "HDF5_PLUGIN_PATH"}
    env["PYTHONPATH"] = os.pathsep.join(sys.path)
    prefix = "import sys\nsys.modules['hdf5plugin'] = None\n" if hide_plugin else ""
    return subprocess.run(
        [sys.executable, "-c", prefix + code],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=CHILD_TIMEOUT_S,
        check=False,
    )


def _filters(path: Path, hdf5_path: str) -> list[tuple[int, tuple[int, ...]]]:
    """The (id, parameters) of a dataset's filters; shuffle's parameter (the item size, set by HDF5) left out."""
    with h5py.File(path, "r") as f:
        dcpl = f[hdf5_path].id.get_create_plist()
        filters = [dcpl.get_filter(i) for i in range(dcpl.get_nfilters())]
        return [(fid, () if fid == 2 else tuple(values)) for fid, _flags, values, _name in filters]


def _required(path: Path) -> list[int]:
    with h5py.File(path, "r") as f:
        return [int(x) for x in f.attrs["required_filters"]]


@pytest.fixture(scope="module")
def zstd_file(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, np.ndarray]]:
    """A file written with ``compression="zstd"``: images (uint8), speech (float32), labels (int64)."""
    data = {"image": _tiles(300), "speech": _speech(300, 400), "label": np.arange(300, dtype=np.int64) % 7}
    path = tmp_path_factory.mktemp("zstd") / "z.h5"
    h5ml.write(path, {"train": data}, metadata={"name": "z"}, compression="zstd")
    return path, data


def test_zstd_file_declares_filter_and_reads_back(zstd_file: tuple[Path, dict[str, np.ndarray]]) -> None:
    """SPEC §3.5-R1: a zstd dataset's filter 32015 is listed in ``required_filters``; the data reads back exactly.

    Multi-byte types get HDF5's byte shuffle before zstd, uint8 none; the
    level is zstd's default 3. The deep validation decodes every chunk (the
    validator loads hdf5plugin for 32015) and finds no error.
    """
    path, data = zstd_file
    assert _required(path) == [ZSTD_FILTER]
    assert _filters(path, "/train/image") == [(ZSTD_FILTER, (3,))]
    assert _filters(path, "/train/speech") == [(2, ()), (ZSTD_FILTER, (3,))]
    assert _filters(path, "/train/label") == [(2, ()), (ZSTD_FILTER, (3,))]
    with h5ml.open(path) as ds:
        split = ds["train"]
        assert split["image"].compression == "zstd"
        for name, values in data.items():
            np.testing.assert_array_equal(split[name][:], values)
        np.testing.assert_array_equal(split["speech"][[299, 3, 150]], data["speech"][[299, 3, 150]])
    with h5py.File(path, "r") as f:  # stored really compressed: real photographs and speech shrink
        assert f["train/image"].id.get_storage_size() < 0.9 * data["image"].nbytes  # zstd-3: 0.81 here
        assert f["train/speech"].id.get_storage_size() < 0.8 * data["speech"].nbytes
    report = validate(path, deep=True)
    assert not [i for i in report.issues if i.code.startswith("E")], report.issues


def test_undeclared_zstd_is_e114(zstd_file: tuple[Path, dict[str, np.ndarray]], tmp_path: Path) -> None:
    """SPEC §3.5-R1: the same file with ``required_filters`` removed is E114 for each zstd dataset."""
    path = tmp_path / "undeclared.h5"
    shutil.copy(zstd_file[0], path)
    with h5py.File(path, "r+") as f:
        del f.attrs["required_filters"]
    found = codes_at(validate(path))
    assert {("E114", "/train/image"), ("E114", "/train/speech"), ("E114", "/train/label")} <= found


def test_levels_and_per_feature_compression(tmp_path: Path) -> None:
    """The level is ``compression_opts`` (zstd 1-22); a feature may choose zstd, gzip or none over the writer's.

    A feature that overrides with another codec keeps the writer's level only
    where it is one of that codec's levels (19 is not a gzip level: gzip's
    default 4). The user's own ``required_filters`` entries are kept beside
    the declared zstd.
    """
    x = _speech(64, 100)
    features = {"g": {"compression": "gzip"}, "n": {"compression": False}}
    path = tmp_path / "levels.h5"
    meta = {"name": "levels", "required_filters": [32000]}
    h5ml.write(
        path, {"t": {"z": x, "g": x, "n": x}}, metadata=meta, compression="zstd", compression_opts=19, features=features
    )
    assert _filters(path, "/t/z") == [(2, ()), (ZSTD_FILTER, (19,))]
    assert _filters(path, "/t/g") == [(2, ()), (1, (4,))]
    assert _filters(path, "/t/n") == []
    assert _required(path) == [32000, ZSTD_FILTER]
    path = tmp_path / "feature.h5"  # the writer gzip-9, one feature zstd: 9 is a zstd level too
    h5ml.write(
        path, {"t": {"z": x, "g": x}}, compression="gzip", compression_opts=9, features={"z": {"compression": "zstd"}}
    )
    assert _filters(path, "/t/z") == [(2, ()), (ZSTD_FILTER, (9,))]
    assert _filters(path, "/t/g") == [(2, ()), (1, (9,))]
    assert _required(path) == [ZSTD_FILTER]
    with h5ml.open(path) as ds:
        np.testing.assert_array_equal(ds["t"]["z"][:], x)


def test_gzip_only_file_declares_nothing(tmp_path: Path) -> None:
    """A file with core filters only gets no ``required_filters`` (SPEC §3.5-S1: core ids are not written)."""
    path = tmp_path / "g.h5"
    h5ml.write(path, {"t": {"x": _speech(8, 50)}}, compression="gzip")
    with h5py.File(path, "r") as f:
        assert "required_filters" not in f.attrs


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"compression": "lz4"}, "compression must be 'gzip', 'zstd' or None, got 'lz4'"),
        (
            {"compression": "zstd", "compression_opts": 0},
            "compression_opts is the zstd level 1-22 with compression='zstd', got 0",
        ),
        ({"compression": "zstd", "compression_opts": 23}, "the zstd level 1-22"),
        ({"compression": "gzip", "compression_opts": 12}, "compression_opts is the gzip level 0-9"),
    ],
)
def test_wrong_compression_refused(tmp_path: Path, kwargs: dict[str, Any], message: str) -> None:
    """A compression or level the writer does not store is refused before anything is written, naming the file."""
    path = tmp_path / "bad.h5"
    with pytest.raises(WriterError, match=message.replace("(", r"\(").replace(")", r"\)")) as err:
        h5ml.write(path, {"t": {"x": np.arange(4)}}, **kwargs)
    assert str(path) in str(err.value) and not path.exists()


def test_append_keeps_zstd(zstd_file: tuple[Path, dict[str, np.ndarray]], tmp_path: Path) -> None:
    """Append mode: a new split's feature of a zstd file is zstd too, and ``required_filters`` stays [32015]."""
    path = tmp_path / "a.h5"
    shutil.copy(zstd_file[0], path)
    label = np.arange(10, dtype=np.int64)
    with h5ml.Writer(path, mode="a") as writer:
        writer.append("test", {"image": _tiles(10), "speech": _speech(10, 400), "label": label})
    assert _filters(path, "/test/image") == [(ZSTD_FILTER, (3,))]
    assert _required(path) == [ZSTD_FILTER]
    with h5ml.open(path) as ds:
        np.testing.assert_array_equal(ds["test"]["label"][:], label)


def test_cli_convert_zstd(tmp_path: Path) -> None:
    """``h5ml convert --compression zstd --level 9`` writes zstd-9; a level outside 1-22 is refused in CLI words."""
    source = tmp_path / "a.npz"
    speech = _speech(50, 200)
    np.savez(source, x=speech, y=np.arange(50))
    code, _out, err = run_cli("convert", str(source), str(tmp_path / "z.h5"), "--compression", "zstd", "--level", "9")
    assert code == 0, err
    assert _filters(tmp_path / "z.h5", "/train/x") == [(2, ()), (ZSTD_FILTER, (9,))]
    assert _required(tmp_path / "z.h5") == [ZSTD_FILTER]
    code, _out, err = run_cli("convert", str(source), str(tmp_path / "bad.h5"), "--compression", "zstd", "--level", "0")
    assert code == 2
    assert "or a zstd level 1-22 with --compression zstd, got 0 (option --level)" in err
    assert "compression=" not in err and "Traceback" not in err


@pytest.mark.parametrize("shuffle", [False, True])
@pytest.mark.parametrize("level", [1, 3, 19])
@pytest.mark.parametrize("dtype", ["u1", "<f4", ">i2", "<f8"])
def test_decompress_is_byte_identical_to_hdf5(tmp_path: Path, dtype: str, level: int, shuffle: bool) -> None:
    """``zstd_codec.decompress`` of each stored chunk gives the bytes HDF5's zstd filter (hdf5plugin) decodes.

    The chunk format is a plain zstd frame: every chunk, the partial edge
    chunk included (HDF5 stores it whole), decodes to exactly the chunk's
    bytes, which equal h5py's decoded chunk (``read_direct_chunk`` of the
    same dataset without the zstd step is not possible, so the comparison is
    with h5py's read of the chunk's rows; shuffled chunks are unshuffled with
    numpy first).
    """
    import hdf5plugin

    values = (_speech(37, 24) * 1000).astype(dtype)  # 37 rows in chunks of 8: a partial last chunk
    path = tmp_path / "c.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("x", data=values, chunks=(8, 24), shuffle=shuffle, **hdf5plugin.Zstd(clevel=level))
    dt = np.dtype(dtype)
    with h5py.File(path, "r") as f:
        dset = f["x"]
        assert pipeline(dset) == ([2] if shuffle else []) + [ZSTD_FILTER]
        for row in range(0, 37, 8):
            mask, stored = dset.id.read_direct_chunk((row, 0))
            assert mask == 0
            raw = decompress(memoryview(stored), 8 * 24 * dt.itemsize)
            array = np.frombuffer(raw, np.uint8)
            if shuffle and dt.itemsize > 1:
                array = array.reshape(dt.itemsize, -1).T
            decoded = np.frombuffer(np.ascontiguousarray(array).tobytes(), dt).reshape(8, 24)
            rows = min(8, 37 - row)
            expected = dset[row : row + rows]
            assert decoded[:rows].tobytes() == expected.tobytes()
            assert decoded[:rows].tobytes() == values[row : row + rows].tobytes()


def test_decompress_refuses_wrong_input() -> None:
    """A frame that is not zstd, truncated, or of another decoded size is a ValueError, never short or long bytes."""
    import zstandard

    frame = zstandard.ZstdCompressor(level=3).compress(bytes(range(256)) * 16)
    assert decompress(frame, 4096) == bytes(range(256)) * 16
    with pytest.raises(ValueError, match="not the zstd frame magic"):
        decompress(b"\x78\x9c" + frame, 4096)
    with pytest.raises(ValueError, match="does not decode"):
        decompress(frame[:-3], 4096)
    with pytest.raises(ValueError, match="declares 4096 decoded bytes, not the 4095 bytes"):
        decompress(frame, 4095)


def test_open_loads_hdf5plugin_lazily(zstd_file: tuple[Path, dict[str, np.ndarray]], tmp_path: Path) -> None:
    """``import h5ml`` does not import hdf5plugin; ``h5ml.open`` of a zstd file does, and reads the data."""
    code = (
        "import sys, h5ml\n"
        "before = 'hdf5plugin' in sys.modules\n"
        f"with h5ml.open({str(zstd_file[0])!r}) as ds:\n"
        "    total = int(ds['train']['label'][:].sum())\n"
        "print(before, 'hdf5plugin' in sys.modules, total)\n"
    )
    result = _child(code, tmp_path, hide_plugin=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["False", "True", str(int(zstd_file[1]["label"].sum()))]


def test_without_hdf5plugin(zstd_file: tuple[Path, dict[str, np.ndarray]], tmp_path: Path) -> None:
    """Without hdf5plugin: open, write and convert refuse zstd with a message naming ``pip install "h5ml[zstd]"``.

    SPEC §3.5-R3: the reader refuses the file at open, naming the filter (id
    and name); the writer and ``h5ml convert`` refuse ``compression="zstd"``
    (``--compression zstd``) before writing anything, in the words of the
    interface used.
    """
    source = tmp_path / "a.npz"
    np.savez(source, x=np.arange(10.0))
    code = (
        "import json\n"
        "import h5ml\n"
        "from h5ml.tools import cli\n"
        "import io\n"
        "out = {}\n"
        "try:\n"
        f"    h5ml.open({str(zstd_file[0])!r})\n"
        "except h5ml.errors.UnsupportedFilterError as exc:\n"
        "    out['open'] = [str(exc), exc.hdf5_path]\n"
        "try:\n"
        "    h5ml.write('w.h5', {'t': {'x': [1, 2]}}, compression='zstd')\n"
        "except h5ml.errors.WriterError as exc:\n"
        "    out['write'] = str(exc)\n"
        "err = io.StringIO()\n"
        f"out['cli'] = [cli.run(['convert', {str(source)!r}, 'c.h5', '--compression', 'zstd'], io.StringIO(), err)]\n"
        "out['cli'].append(err.getvalue())\n"
        "print(json.dumps(out))\n"
    )
    result = _child(code, tmp_path)
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    message, where = out["open"]
    assert "declares HDF5 filter(s) 32015 ('zstd'), which this HDF5 build cannot decode" in message
    assert 'pip install "h5ml[zstd]"' in message and where == "/"
    assert "compression='zstd' needs the HDF5 zstd filter (32015)" in out["write"]
    assert 'pip install "h5ml[zstd]"' in out["write"]
    code, text = out["cli"]
    assert code == 2 and "--compression zstd needs the hdf5plugin package" in text and "Traceback" not in text
    assert 'pip install "h5ml[zstd]"' in text
    assert not (tmp_path / "w.h5").exists() and not (tmp_path / "c.h5").exists()


def test_subset_keeps_zstd(zstd_file: tuple[Path, dict[str, np.ndarray]], tmp_path: Path) -> None:
    """``subset(compression="keep")`` of a zstd file writes zstd (declared again), not gzip; ``"gzip"`` converts."""
    from h5ml import ingest

    kept, converted = tmp_path / "kept.h5", tmp_path / "gzip.h5"
    ingest.subset(zstd_file[0], kept, features=["speech", "label"])
    ingest.subset(zstd_file[0], converted, features=["speech"], compression="gzip")
    assert _filters(kept, "/train/speech") == [(2, ()), (ZSTD_FILTER, (3,))]
    assert _required(kept) == [ZSTD_FILTER]
    assert _filters(converted, "/train/speech") == [(2, ()), (1, (4,))]
    with h5py.File(converted, "r") as f:
        assert "required_filters" not in f.attrs
    with h5ml.open(kept) as ds:
        np.testing.assert_array_equal(ds["train"]["speech"][:], zstd_file[1]["speech"])


def test_deep_validation_without_hdf5plugin_says_what_is_missing(
    zstd_file: tuple[Path, dict[str, np.ndarray]], tmp_path: Path
) -> None:
    """Without hdf5plugin a deep validation cannot decode zstd: E145 says the filter is missing here, not damage.

    The shallow validation needs no decoding and stays valid; the deep one
    reports E145 for each zstd feature (the data could not be checked) with
    the filter id and ``pip install "h5ml[zstd]"``, never "the file is damaged".
    """
    code = (
        "import json\n"
        "from h5ml.validator import validate\n"
        f"shallow = validate({str(zstd_file[0])!r})\n"
        f"deep = validate({str(zstd_file[0])!r}, deep=True)\n"
        "print(json.dumps([shallow.valid, [(i.code, i.path, i.message) for i in deep.issues if i.code == 'E145']]))\n"
    )
    result = _child(code, tmp_path)
    assert result.returncode == 0, result.stderr
    shallow_valid, e145 = json.loads(result.stdout)
    assert shallow_valid is True
    assert {path for _code, path, _message in e145} == {"/train/image", "/train/speech", "/train/label"}
    for _code, _path, message in e145:
        assert "this validator's HDF5 lacks filter(s) 32015" in message and 'pip install "h5ml[zstd]"' in message
        assert "damaged" not in message
