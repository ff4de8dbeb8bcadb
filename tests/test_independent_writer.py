"""The independent-writer cross-check of issue 13: a file written from SPEC.md alone, with the other allowed choices.

The writing code here imports only h5py, numpy and the standard library, never ``h5ml``: it follows SPEC.md as
an implementer in another language would, and computes the fingerprints of §8 with its own code. At each point
where the text allows two choices it takes the one the reference writer does not:

- fixed-length UTF-8 strings padded with spaces (``H5T_STR_SPACEPAD``) instead of variable-length ones
  (SPEC §3.4-R3, §3.4-R4; W205 is the only consequence, §3.4-S1);
- ``stats_min`` and ``stats_max`` as float32 (binary32) scalars, one of them big-endian, and ``sample_rate`` as a
  float32 scalar, where the reference writes float64 (SPEC §6.7-R2, §6.7-R3, §6.7-R4);
- ``created`` holding the leap second ``2016-12-31T23:59:60Z`` (SPEC §4.2-R2, §4.6-R1);
- feature datasets in compact layout (SPEC §7.4-R1);
- a chunked dataset held by one chunk whose first extent is the number of samples, not a power of two
  (SPEC §7.2-S1, §7.2-R1: no W200);
- categorical codes as int16 instead of the reference's width (SPEC §6.5, §8.1: fingerprints do not depend on it).

The same content is written by the reference :func:`h5ml.write`. The test asserts that ``h5ml validate`` (the real
CLI) gives the independent file the same verdict and the same issues in shallow and deep mode, that the reader
returns equal values for every sample of every feature of both files, that the fingerprints the independent code
stores equal those the reference writer computes, and that the torch and keras adapters yield the same batches.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import pytest
from h5py import h5d, h5p, h5s, h5t

os.environ.setdefault("KERAS_BACKEND", "torch")  # before keras is first imported (the keras test below)

import h5ml
from h5ml.tools import cli

LEAP_SECOND = "2016-12-31T23:59:60Z"
CLASSES = ["cat", "dog", "bird"]
#: HDF5's variable-length UTF-8 string type, as SPEC §3.4-R1 asks for every string attribute.
VLEN_UTF8 = h5py.string_dtype("utf-8")


# -- the content, as plain Python and numpy ---------------------------------------------------------------------


def _content() -> dict[str, dict[str, Any]]:
    """Two splits of 5 and 3 samples: one feature of every encoding (the float32 ``x`` carries the statistics)."""
    return {
        "train": {
            "x": np.array(
                [[0.5, 1.0, 1.5], [2.0, -2.5, 3.0], [0.1, 0.2, 0.3], [7.0, 8.0, 9.0], [-1e-3, 0, 1e3]], "<f4"
            ),
            "text": ["a cat", "ein Hund", "", "héllo wörld", "猫"],
            "label": [2, 0, -1, 1, 0],
            "audio": [np.array(v, "<i2") for v in ([1, 2, 3, 4], [], [5, 6, 7, 8, 9], [-7], [300, -300])],
            "blob": [b"\x89PNG", b"", b"\x00\x01\x02", b"z" * 17, b"\xff"],
        },
        "test": {
            "x": np.array([[1.0, 2.0, 4.0], [-8.0, 16.0, 0.25], [3.0, 3.0, 3.0]], "<f4"),
            "text": ["a dog", "x y", "end"],
            "label": [1, 1, 2],
            "audio": [np.array(v, "<i2") for v in ([], [10, 20], [30])],
            "blob": [b"ab", b"c", b""],
        },
    }


ROOT_TEXT = {"name": "cross-check", "license": "CC0-1.0", "description": "One feature of each encoding, twice."}


def _reference_file(path: Path) -> Path:
    """The content written by the reference writer, with its own choices at every point."""
    splits: dict[str, dict[str, Any]] = {}
    for split, columns in _content().items():
        splits[split] = {
            "x": columns["x"],
            "text": columns["text"],
            "label": h5ml.Categorical(np.array(columns["label"]), CLASSES),
            "audio": columns["audio"],
            "blob": columns["blob"],
        }
    return h5ml.write(
        path,
        splits,
        ROOT_TEXT,
        features={"audio": {"sample_rate": 16000.0}, "blob": {"media_type": "application/octet-stream"}},
    )


# -- the independent writer: h5py and numpy only, following SPEC.md ---------------------------------------------


def _sha256(data: bytes) -> bytes:
    return hashlib.sha256(data).digest()


def _le(array: np.ndarray) -> bytes:
    """The values little-endian in C order (SPEC §8.2.2)."""
    return np.ascontiguousarray(array.astype(array.dtype.newbyteorder("<"))).tobytes()


def _strings(texts: list[str]) -> bytes:
    """A list of strings as SPEC §8.2.2 writes it: per string, its UTF-8 length as a u64 LE, then its bytes."""
    out = bytearray()
    for text in texts:
        raw = text.encode("utf-8")
        out += len(raw).to_bytes(8, "little") + raw
    return bytes(out)


def _fingerprint(encoding: str, dtype: str, n: int, sample_shape: list[int], streams: list[bytes]) -> str:
    """SPEC §8.2: the header text written out by hand (keys in code-point order, no whitespace), then the digests."""
    shape = "[" + ",".join(str(s) for s in sample_shape) + "]"
    header = f'{{"dtype":"{dtype}","encoding":"{encoding}","num_samples":{n},"sample_shape":{shape}}}'
    hashed = header.encode("ascii") + b"\n" + b"".join(_sha256(s) for s in streams)
    return "sha256:" + hashlib.sha256(hashed).hexdigest()


def _file_fingerprint(features: dict[tuple[str, str], str]) -> str:
    """SPEC §8.3: one line per feature, ordered by (split, feature) code point by code point."""
    text = "".join(f"{split}/{name} {features[(split, name)]}\n" for split, name in sorted(features))
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def _put_text(obj: h5py.Group | h5py.Dataset, key: str, value: str) -> None:
    obj.attrs.create(key, value, dtype=VLEN_UTF8)


def _put_scalar(obj: h5py.Group | h5py.Dataset, key: str, value: float | int, dtype: str) -> None:
    obj.attrs.create(key, np.array(value, dtype=dtype), dtype=np.dtype(dtype))


def _encoding(obj: h5py.Group | h5py.Dataset, encoding: str) -> None:
    _put_text(obj, "encoding", encoding)
    _put_text(obj, "encoding_version", "1.0")


def _compact(group: h5py.Group, name: str, data: np.ndarray) -> h5py.Dataset:
    """A dataset in compact layout (HDF5 H5D_COMPACT: the data in the object header), SPEC §7.4."""
    dcpl = h5p.create(h5p.DATASET_CREATE)
    dcpl.set_layout(h5d.COMPACT)
    tid = h5t.py_create(data.dtype)
    dsid = h5d.create(group.id, name.encode("utf-8"), tid, h5s.create_simple(data.shape), dcpl=dcpl)
    dsid.write(h5s.ALL, h5s.ALL, np.ascontiguousarray(data))
    return h5py.Dataset(dsid)


def _spacepad_strings(group: h5py.Group, name: str, texts: list[str]) -> h5py.Dataset:
    """Fixed-length UTF-8 strings padded with U+0020 (HDF5 H5T_STR_SPACEPAD), SPEC §3.4; none ends with a space."""
    raw = [t.encode("utf-8") for t in texts]
    size = max(1, *(len(r) for r in raw))
    tid = h5t.C_S1.copy()
    tid.set_size(size)
    tid.set_cset(h5t.CSET_UTF8)
    tid.set_strpad(h5t.STR_SPACEPAD)
    padded = np.array([r.ljust(size, b" ") for r in raw], dtype=f"S{size}")
    dsid = h5d.create(group.id, name.encode("utf-8"), tid, h5s.create_simple((len(texts),)))
    dsid.write(h5s.ALL, h5s.ALL, padded, mtype=tid)
    return h5py.Dataset(dsid)


def _offsets(lengths: list[int]) -> np.ndarray:
    return np.concatenate([[0], np.cumsum(lengths, dtype=np.int64)]).astype("<i8")


def _write_split(f: h5py.File, split: str, columns: dict[str, Any]) -> dict[tuple[str, str], str]:
    """One split, every feature with its fingerprint; returns the fingerprints by (split, feature)."""
    n = len(columns["text"])
    g = f.create_group(split)
    g.attrs.create("num_samples", np.int64(n))  # SPEC §5.3-R1, §4.3-R1
    prints: dict[tuple[str, str], str] = {}

    # dense float32 in compact layout, with statistics: min and max as binary32 (max big-endian), SPEC §6.7
    x = columns["x"]
    dx = _compact(g, "x", x)
    _encoding(dx, "dense")
    wide = x.astype(np.float64)
    _put_scalar(dx, "stats_count", wide.size, "<i8")
    _put_scalar(dx, "stats_min", x.min(), "<f4")
    _put_scalar(dx, "stats_max", x.max(), ">f4")
    _put_scalar(dx, "stats_mean", wide.mean(), "<f8")
    _put_scalar(dx, "stats_std", wide.std(), "<f8")
    prints[(split, "x")] = _fingerprint("dense", "<f4", n, list(x.shape[1:]), [_le(x)])

    # string: fixed-length, space-padded (SPEC §3.4-R4: the reader removes the trailing 0x20 bytes)
    dt = _spacepad_strings(g, "text", columns["text"])
    _encoding(dt, "string")
    prints[(split, "text")] = _fingerprint("string", "str", n, [], [_strings(columns["text"])])

    # categorical: int16 codes in one chunk of n rows (n not a power of two: SPEC §7.2-R1, no W200)
    lab = g.create_group("label")
    _encoding(lab, "categorical")
    codes = np.array(columns["label"], "<i2")
    lab.create_dataset("codes", data=codes, chunks=(n,), maxshape=(None,))
    lab.create_dataset("class_names", data=CLASSES, dtype=VLEN_UTF8)
    cat_streams = [_le(codes.astype("<i8")), _strings(CLASSES)]
    prints[(split, "label")] = _fingerprint("categorical", "<i8", n, [], cat_streams)

    # ragged int16 with a binary32 sample_rate; values compact, offsets contiguous
    clips = columns["audio"]
    au = g.create_group("audio")
    _encoding(au, "ragged")
    _put_scalar(au, "sample_rate", 16000.0, "<f4")
    values = np.concatenate([np.zeros(0, "<i2"), *clips]).astype("<i2")
    offsets = _offsets([len(c) for c in clips])
    _compact(au, "values", values)
    au.create_dataset("offsets", data=offsets)
    prints[(split, "audio")] = _fingerprint("ragged", "<i2", n, [], [_le(offsets), _le(values), b""])

    # bytes, gzip-compressed in one chunk for the whole values dataset
    blobs = columns["blob"]
    by = g.create_group("blob")
    _encoding(by, "bytes")
    _put_text(by, "media_type", "application/octet-stream")
    raw = np.frombuffer(b"".join(blobs), dtype=np.uint8)
    boffsets = _offsets([len(b) for b in blobs])
    by.create_dataset("values", data=raw, chunks=(max(1, raw.size),), maxshape=(None,), compression="gzip")
    by.create_dataset("offsets", data=boffsets)
    prints[(split, "blob")] = _fingerprint("bytes", "|u1", n, [], [_le(boffsets), raw.tobytes()])

    for (_, name), value in prints.items():
        _put_text(g[name], "fingerprint", value)
    return prints


def _independent_file(path: Path) -> Path:
    """The same content written from SPEC.md with h5py and numpy alone, making the other choice at each point."""
    with h5py.File(path, "w", libver=("earliest", "v110")) as f:  # SPEC §3.1-S1
        for key, value in (
            ("format", "h5ml"),
            ("format_version", "1.1"),
            ("name", ROOT_TEXT["name"]),
            ("created", LEAP_SECOND),
            ("writer", "independent cross-check 1.0"),
            ("license", ROOT_TEXT["license"]),
            ("description", ROOT_TEXT["description"]),
        ):
            _put_text(f, key, value)
        f.attrs.create("must_understand", np.array([], dtype=VLEN_UTF8), dtype=VLEN_UTF8)
        prints: dict[tuple[str, str], str] = {}
        for split, columns in _content().items():
            prints.update(_write_split(f, split, columns))
        _put_text(f, "fingerprint", _file_fingerprint(prints))
        f.flush()
        f.attrs.create("complete", np.int64(1))  # SPEC §4.4-R2: last
    return path


# -- fixtures and helpers -----------------------------------------------------------------------------------------


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    return _reference_file(tmp_path / "reference.h5"), _independent_file(tmp_path / "independent.h5")


def _validate(path: Path, *flags: str) -> tuple[int, dict[str, Any]]:
    out, err = io.StringIO(), io.StringIO()
    code = cli.run(["validate", "--format", "json", *flags, str(path)], out, err)
    assert err.getvalue() == "", err.getvalue()
    (report,) = json.loads(out.getvalue())["files"]
    return code, report


def _issues(report: dict[str, Any]) -> list[tuple[str, str]]:
    return sorted((i["code"], i["path"]) for i in report["issues"])


def _same(a: Any, b: Any) -> bool:
    """Equal values of the same type (arrays: same dtype and shape too; lists element by element)."""
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(p, q) for p, q in zip(a, b, strict=True))
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return bool(np.asarray(a).dtype == np.asarray(b).dtype and np.array_equal(a, b))
    return type(a) is type(b) and bool(a == b)


# -- the checks ---------------------------------------------------------------------------------------------------


def test_the_independent_file_has_the_other_choices(files: tuple[Path, Path]) -> None:
    """The file really makes the choices it claims (else the other tests would prove nothing)."""
    _, independent = files
    with h5py.File(independent, "r") as f:
        text = f["train/text"].id.get_type()
        assert isinstance(text, h5t.TypeStringID) and not text.is_variable_str()
        assert text.get_strpad() == h5t.STR_SPACEPAD
        assert f["train/x"].id.get_create_plist().get_layout() == h5d.COMPACT
        assert f["train/audio/values"].id.get_create_plist().get_layout() == h5d.COMPACT
        assert f["train/label/codes"].chunks == (5,) and f["train/label/codes"].shape == (5,)
        assert f["train/blob/values"].chunks == f["train/blob/values"].shape
        for obj, key, order in (("train/x", "stats_min", h5t.ORDER_LE), ("train/x", "stats_max", h5t.ORDER_BE)):
            stored_type = f[obj].attrs.get_id(key).get_type()
            assert stored_type.get_size() == 4 and stored_type.get_order() == order, (obj, key)
        assert f["train/audio"].attrs.get_id("sample_rate").get_type().get_size() == 4
        assert f.attrs["created"] == LEAP_SECOND
        assert text.get_size() == len("héllo wörld".encode())
        stored = np.zeros(5, dtype=f"S{text.get_size()}")
        f["train/text"].id.read(h5s.ALL, h5s.ALL, stored, mtype=text)
        assert stored[0] == b"a cat".ljust(text.get_size(), b" ")  # the padding is on disk; readers remove it


def test_validate_gives_the_same_verdict_shallow_and_deep(files: tuple[Path, Path]) -> None:
    """SPEC §9.1.1-R1, §9.1.1-R2, §9.1.1-R3: valid in both modes, with the same issues, no error.

    The independent file's only findings beyond the reference file's are W205 (fixed-length strings, §3.4-S1);
    no W200 for the one-chunk codes (§7.2-R1), nothing for compact layout (§7.4-R1), float32 statistics
    (§6.7-R2) or the leap second (§4.2-R2).
    """
    reference, independent = files
    results = {
        (path, mode): _validate(path, *flags) for path in files for mode, flags in (("s", ()), ("d", ("--deep",)))
    }
    for (path, mode), (code, report) in results.items():
        assert code == 0, (path.name, mode, report["issues"])
        assert report["valid"] is True and report["readable"] is True
        assert not [i for i in report["issues"] if i["severity"] == "error"]
    ind_shallow, ind_deep = _issues(results[(independent, "s")][1]), _issues(results[(independent, "d")][1])
    ref_shallow, ref_deep = _issues(results[(reference, "s")][1]), _issues(results[(reference, "d")][1])
    assert ind_shallow == ind_deep
    assert ref_shallow == ref_deep
    w205 = [("W205", "/test/text"), ("W205", "/train/text")]
    assert ind_deep == sorted(ref_deep + w205)
    assert results[(independent, "d")][1]["format_version"] == "1.1"


def test_the_reader_returns_the_same_values(files: tuple[Path, Path]) -> None:
    """SPEC §3.4-R4, §6.2-§6.6, §6.7-R4: every sample of every feature decodes equal, with equal dtypes."""
    reference, independent = files
    with h5ml.open(reference) as ref, h5ml.open(independent) as ind:
        assert sorted(ref.splits) == sorted(ind.splits) == ["test", "train"]
        assert ind.metadata.created == LEAP_SECOND
        for split in ref.splits:
            r, i = ref[split], ind[split]
            assert r.num_samples == i.num_samples and sorted(r.features) == sorted(i.features)
            for name in r.features:
                fr, fi = r.feature(name), i.feature(name)
                assert fr.encoding == fi.encoding and fr.sample_shape == fi.sample_shape, name
                assert fr.class_names == fi.class_names and fr.media_type == fi.media_type, name
                for k in range(r.num_samples):
                    a, b = fr.read(k), fi.read(k)
                    if fr.encoding == "categorical":  # the codes' stored width is free (§6.5); compare the values
                        assert int(a) == int(b), (split, name, k)
                    else:
                        assert _same(a, b), (split, name, k, a, b)
                whole_ref, whole_ind = fr.read(slice(None)), fi.read(slice(None))
                if fr.encoding == "categorical":
                    assert np.array_equal(whole_ref, whole_ind), (split, name)
                else:
                    assert _same(whole_ref, whole_ind), (split, name)
            x_ref, x_ind = r.feature("x"), i.feature("x")
            for stat in ("stats_min", "stats_max"):  # binary32 here, binary64 there: returned as equal float64
                value = x_ind.attrs[stat]
                assert isinstance(value, float) and value == x_ref.attrs[stat], (split, stat)
            for stat in ("stats_mean", "stats_std"):  # float64 both; the summation order is the writer's own
                assert x_ind.attrs[stat] == pytest.approx(x_ref.attrs[stat], rel=1e-12), (split, stat)
            assert r.feature("audio").sample_rate == i.feature("audio").sample_rate == 16000.0


def test_the_fingerprints_are_the_reference_writers(files: tuple[Path, Path]) -> None:
    """SPEC §8.1-R2, §8.1-R3, §8.2, §8.3: the fingerprints computed from the text alone equal the reference's."""
    reference, independent = files
    with h5py.File(reference, "r") as ref, h5py.File(independent, "r") as ind:
        assert ind.attrs["fingerprint"] == ref.attrs["fingerprint"]
        for split in ("train", "test"):
            for name in ("x", "text", "label", "audio", "blob"):
                assert ind[split][name].attrs["fingerprint"] == ref[split][name].attrs["fingerprint"], (split, name)
    code, report = _validate(independent, "--deep")  # deep validation recomputes every fingerprint (E160)
    assert code == 0 and not [i for i in report["issues"] if i["code"] in ("E160", "E161")]


def _torch_batches(path: Path, split: str) -> list[dict[str, Any]]:
    torch = pytest.importorskip("torch")
    from h5ml_torch import H5MLDataset

    data = H5MLDataset(path, split)
    out = []
    for k in range(len(data)):
        sample = data[k]
        out.append({key: v.tolist() if isinstance(v, torch.Tensor) else v for key, v in sample.items()})
    return out


def test_the_torch_adapter_yields_the_same_samples(files: tuple[Path, Path]) -> None:
    """Both files give the same torch samples (values and tensor contents)."""
    reference, independent = files
    for split in ("train", "test"):
        assert _torch_batches(reference, split) == _torch_batches(independent, split)


def test_the_keras_adapter_yields_the_same_batches(files: tuple[Path, Path]) -> None:
    """Both files give the same keras batches of (x, label)."""
    pytest.importorskip("keras")
    from h5ml_keras import H5MLPyDataset

    reference, independent = files
    for split in ("train", "test"):
        a = H5MLPyDataset(reference, split, 2, inputs="x", targets="label")
        b = H5MLPyDataset(independent, split, 2, inputs="x", targets="label")
        assert len(a) == len(b) >= 2
        for k in range(len(a)):
            (xa, ya), (xb, yb) = a[k], b[k]
            np.testing.assert_array_equal(np.asarray(xa), np.asarray(xb))
            np.testing.assert_array_equal(np.asarray(ya), np.asarray(yb))
