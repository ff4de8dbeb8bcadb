"""Hugging Face ``datasets`` to h5ml: :mod:`h5ml.ingest.hf` (splits §5.1, encodings §6, shuffle §7.6).

Datasets are built here with ``datasets.Dataset.from_dict``: PNG files made
with Pillow, WAV files written by soundfile. An Audio column is built as its
storage struct ``{"bytes", "path"}`` and cast to ``Audio()`` (encoding audio
through ``from_dict`` needs torchcodec, which the converter never uses).
"""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import h5ml
from h5ml.ingest import SKIPPED_ATTR
from h5ml.ingest.splitting import assign_splits

datasets = pytest.importorskip("datasets")
soundfile = pytest.importorskip("soundfile")
PIL_Image = pytest.importorskip("PIL.Image")

from h5ml.ingest.hf import convert_huggingface, media_type_of  # noqa: E402
from h5ml.ingest.naming import standard_split_name  # noqa: E402

CLASSES = ["cat", "dog", "bird"]
RATE = 8000


def png(value: int, size: tuple[int, int] = (4, 5), mode: str = "RGB") -> bytes:
    """A PNG image of ``size`` (H, W) whose pixel (i, j, c) is ``value + i + 2j + 3c`` (mod 256)."""
    h, w = size
    channels = {"RGB": 3, "RGBA": 4, "L": 1}[mode]
    grid = (value + np.arange(h)[:, None, None] + 2 * np.arange(w)[None, :, None] + 3 * np.arange(channels)) % 256
    pixels = grid.astype(np.uint8)
    buffer = io.BytesIO()
    PIL_Image.fromarray(pixels[:, :, 0] if mode == "L" else pixels, mode=mode).save(buffer, format="PNG")
    return buffer.getvalue()


def pixels_of(data: bytes) -> np.ndarray:
    with PIL_Image.open(io.BytesIO(data)) as image:
        return np.asarray(image)


def wav(frames: int, channels: int = 1, rate: int = RATE) -> bytes:
    """A 16-bit WAV file of ``frames`` frames: a ramp, exact in int16."""
    ramp = ((np.arange(frames * channels) % 200) - 100).astype(np.float32) / 128.0
    buffer = io.BytesIO()
    soundfile.write(buffer, ramp.reshape(frames, channels), rate, format="WAV", subtype="PCM_16")
    return buffer.getvalue()


def samples_of(data: bytes) -> np.ndarray:
    values, _ = soundfile.read(io.BytesIO(data), dtype="float32", always_2d=False)
    return np.asarray(values)


FEATURES = {
    "label": datasets.ClassLabel(names=CLASSES),
    "score": datasets.Value("float32"),
    "count": datasets.Value("int64"),
    "flag": datasets.Value("bool"),
    "text": datasets.Value("string"),
    "tokens": datasets.Sequence(datasets.Value("int16")),
    "embedding": datasets.List(datasets.Value("float32"), length=3),
    "matrix": datasets.Array2D(shape=(2, 3), dtype="float32"),
    "frames": datasets.Array2D(shape=(None, 2), dtype="int32"),
    "grid": datasets.List(datasets.List(datasets.Value("float64"))),
    "blob": datasets.Value("binary"),
    "image": datasets.Image(),
    "audio": {"bytes": datasets.Value("binary"), "path": datasets.Value("string")},
}


def columns(n: int, offset: int = 0) -> dict[str, list[Any]]:
    """Column values of n rows: every feature of FEATURES, varied per row."""
    rows = range(offset, offset + n)
    return {
        "label": [i % 3 if i % 7 else -1 for i in rows],
        "score": [i / 4 for i in rows],
        "count": [i * 1000 for i in rows],
        "flag": [i % 2 == 0 for i in rows],
        "text": [f"row {i} é中" if i % 5 else "" for i in rows],
        "tokens": [list(range(i % 4)) for i in rows],
        "embedding": [[i, i + 0.5, -i] for i in rows],
        "matrix": [np.arange(6, dtype=np.float32).reshape(2, 3) + i for i in rows],
        "frames": [np.full((i % 3 + 1, 2), i, dtype=np.int32) for i in rows],
        "grid": [np.arange((i % 2 + 1) * (i % 3 + 1), dtype=np.float64).reshape(i % 2 + 1, i % 3 + 1) for i in rows],
        "blob": [bytes([i % 256]) * (i % 4) for i in rows],
        "image": [{"bytes": png(i), "path": None} for i in rows],
        "audio": [{"bytes": wav(10 + i), "path": f"clip{i}.wav"} for i in rows],
    }


def make_dataset(n: int, offset: int = 0, **kwargs: Any) -> Any:
    dataset = datasets.Dataset.from_dict(columns(n, offset), features=datasets.Features(FEATURES), **kwargs)
    return dataset.cast_column("audio", datasets.Audio())


def assert_clean(path: Path) -> None:
    """validate --strict --deep accepts the file: no errors, no warnings (info such as I303 is fine)."""
    report = h5ml.validate(path, deep=True)
    assert [c for c in report.codes if not c.startswith("I")] == [], report.codes


def assert_rows_equal(split: Any, source: dict[str, list[Any]], rows: list[int], images: str = "bytes") -> None:
    """Every feature of ``split`` holds the source rows ``rows``, in order, exactly."""
    data = split[:]
    np.testing.assert_array_equal(data["label"], [source["label"][r] for r in rows])
    np.testing.assert_array_equal(data["score"], np.asarray([source["score"][r] for r in rows], np.float32))
    np.testing.assert_array_equal(data["count"], [source["count"][r] for r in rows])
    np.testing.assert_array_equal(data["flag"], [source["flag"][r] for r in rows])
    assert data["text"].tolist() == [source["text"][r] for r in rows]
    assert [t.tolist() for t in data["tokens"]] == [source["tokens"][r] for r in rows]
    np.testing.assert_array_equal(data["embedding"], np.asarray([source["embedding"][r] for r in rows], np.float32))
    np.testing.assert_array_equal(data["matrix"], np.asarray([source["matrix"][r] for r in rows]))
    for got, r in zip(data["frames"], rows, strict=True):
        np.testing.assert_array_equal(got, source["frames"][r])
    for got, r in zip(data["grid"], rows, strict=True):
        assert got.shape == source["grid"][r].shape
        np.testing.assert_array_equal(got, source["grid"][r])
    assert data["blob"] == [source["blob"][r] for r in rows]
    if images == "bytes":
        assert data["image"] == [source["image"][r]["bytes"] for r in rows]
    else:
        np.testing.assert_array_equal(data["image"], np.stack([pixels_of(source["image"][r]["bytes"]) for r in rows]))
    for got, r in zip(data["audio"], rows, strict=True):
        np.testing.assert_array_equal(got, samples_of(source["audio"][r]["bytes"]))


def test_dataset_dict_every_feature_type(tmp_path: Path) -> None:
    """ClassLabel, Value, Sequence/List, Array2D, Image (bytes) and Audio map as documented; values round-trip."""
    train_cols, valid_cols = columns(12), columns(5, offset=100)
    source = datasets.DatasetDict({"train": make_dataset(12), "valid": make_dataset(5, offset=100)})
    out = tmp_path / "hf.h5"
    report = convert_huggingface(source, out, metadata={"license": "CC0-1.0"})
    assert report.samples == {"train": 12, "validation": 5} and report.skipped == []
    assert_clean(out)
    with h5ml.open(out) as ds:
        assert list(ds.splits) == ["train", "validation"]  # "valid" -> "validation" (§5.1)
        assert ds.metadata.license == "CC0-1.0" and ds.metadata.source == "in-memory datasets.DatasetDict"
        train = ds["train"]
        kinds = {name: (f.encoding, str(f.dtype), f.sample_shape) for name, f in train.features.items()}
        assert kinds == {
            "label": ("categorical", "int64", ()),
            "score": ("dense", "float32", ()),
            "count": ("dense", "int64", ()),
            "flag": ("dense", "bool", ()),
            "text": ("string", "object", ()),
            "tokens": ("ragged", "int16", (None,)),
            "embedding": ("dense", "float32", (3,)),
            "matrix": ("dense", "float32", (2, 3)),
            "frames": ("ragged", "int32", (None, 2)),
            "grid": ("ragged", "float64", (None, None)),
            "blob": ("bytes", "uint8", (None,)),
            "image": ("bytes", "uint8", (None,)),
            "audio": ("ragged", "float32", (None,)),
        }
        assert train["label"].class_names == CLASSES and train["label"].role == "target"
        assert train["image"].media_type == "image/png" and train["image"].role == "input"
        assert train["blob"].media_type == "application/octet-stream"
        assert train["audio"].sample_rate == RATE and train["audio"].role == "input"
        assert train.shuffle_seed is None
        assert_rows_equal(train, train_cols, list(range(12)))
        assert_rows_equal(ds["validation"], valid_cols, list(range(5)))


def test_pixels_mode_dense_ragged_and_modes_with_workers(tmp_path: Path) -> None:
    """images="pixels": equal sizes -> dense (N, H, W, 3); mixed sizes -> ragged with shapes; two processes."""
    same = make_dataset(6)
    out = tmp_path / "pixels.h5"
    convert_huggingface(same, out, images="pixels", split_ratios={"train": 1.0}, workers=2)
    assert_clean(out)
    with h5ml.open(out) as ds:
        image = ds["train"]["image"]
        assert (image.encoding, str(image.dtype), image.sample_shape) == ("dense", "uint8", (4, 5, 3))
        assert_rows_equal(ds["train"], columns(6), list(range(6)), images="pixels")

    sizes = [(3, 4), (5, 2), (3, 4)]
    images: dict[str, list[dict[str, Any]]] = {
        "image": [{"bytes": png(i, size), "path": None} for i, size in enumerate(sizes)]
    }
    mixed = datasets.Dataset.from_dict(images, features=datasets.Features({"image": datasets.Image()}))
    out = tmp_path / "mixed.h5"
    convert_huggingface(mixed, out, images="pixels", split_ratios={"train": 1.0}, workers=2)
    assert_clean(out)
    with h5ml.open(out) as ds:
        image = ds["train"]["image"]
        assert (image.encoding, image.sample_shape) == ("ragged", (None, None, None))
        for got, item in zip(image[:], images["image"], strict=True):
            np.testing.assert_array_equal(got, pixels_of(item["bytes"]))

    gray: dict[str, list[dict[str, Any]]] = {"image": [{"bytes": png(i, mode="L"), "path": None} for i in range(3)]}
    as_rgb = datasets.Dataset.from_dict(gray, features=datasets.Features({"image": datasets.Image(mode="RGB")}))
    out = tmp_path / "rgb.h5"
    convert_huggingface(as_rgb, out, images="pixels", split_ratios={"train": 1.0})
    with h5ml.open(out) as ds:
        got = ds["train"]["image"][:]
        assert got.shape == (3, 4, 5, 3)  # Image(mode="RGB") converts the grayscale files
        for i, item in enumerate(gray["image"]):
            np.testing.assert_array_equal(got[i], np.repeat(pixels_of(item["bytes"])[:, :, None], 3, axis=2))


def test_saved_to_disk_loaded_by_path_with_card_metadata(tmp_path: Path) -> None:
    """A DatasetDict saved with save_to_disk converts by path; the dataset card fills the root metadata."""
    info = datasets.DatasetInfo(
        description="Pets and their sounds.",
        license="CC-BY-4.0",
        homepage="https://example.org/pets",
        features=datasets.Features(FEATURES),
    )
    saved = tmp_path / "saved"
    source = datasets.DatasetDict({"train": make_dataset(7, info=info), "dev": make_dataset(3, offset=50, info=info)})
    source.save_to_disk(str(saved))
    out = tmp_path / "from_disk.h5"
    report = convert_huggingface(saved, out, splits=["train", "dev"])
    assert report.samples == {"train": 7, "validation": 3}
    assert_clean(out)
    with h5ml.open(out) as ds:
        meta = ds.metadata
        assert (meta.description, meta.license, meta.homepage) == (info.description, "CC-BY-4.0", info.homepage)
        assert meta.source == str(saved)
        assert_rows_equal(ds["train"], columns(7), list(range(7)))
        assert_rows_equal(ds["validation"], columns(3, offset=50), list(range(3)))
    renamed = tmp_path / "renamed.h5"
    assert convert_huggingface(str(saved), renamed, splits={"dev": "heldout"}).samples == {"heldout": 3}


def test_dataset_without_split_is_cut_stratified_and_can_shuffle(tmp_path: Path) -> None:
    """A Dataset without a split gets train 0.8 / test 0.2, stratified on its ClassLabel; shuffle records the seed."""
    labels = [0] * 10 + [1] * 5
    source = datasets.Dataset.from_dict(
        {"label": labels, "x": list(range(15))},
        features=datasets.Features({"label": datasets.ClassLabel(names=["a", "b"]), "x": datasets.Value("int32")}),
    )
    out = tmp_path / "cut.h5"
    report = convert_huggingface(source, out, seed=3)
    expected = assign_splits(15, {"train": 0.8, "test": 0.2}, seed=3, labels=[str(v) for v in labels])
    assert report.samples == {"train": 12, "test": 3}
    assert_clean(out)
    with h5ml.open(out) as ds:
        for name in ("train", "test"):
            rows = [i for i, s in enumerate(expected) if s == name]
            np.testing.assert_array_equal(ds[name]["x"][:], rows)  # in source order
        assert sorted(ds["test"]["label"][:].tolist()) == [0, 0, 1]  # 2 of 10 "a", 1 of 5 "b"

    shuffled = tmp_path / "shuffled.h5"
    convert_huggingface(source, shuffled, split_ratios={"train": 1.0}, shuffle=True, seed=11)
    assert_clean(shuffled)
    with h5ml.open(shuffled) as ds:
        assert ds["train"].shuffle_seed == 11
        order = np.random.default_rng(11).permutation(15)
        np.testing.assert_array_equal(ds["train"]["x"][:], order)
        np.testing.assert_array_equal(ds["train"]["label"][:], np.asarray(labels)[order])


def test_the_split_cut_uses_the_seed_given_not_a_drawn_shuffle_seed(tmp_path: Path) -> None:
    """shuffle=True without a seed draws a shuffle seed per conversion, but the cut of split_ratios uses the seed
    given (0 when None), as every converter does: two conversions hold the same rows in each split."""
    labels = [0] * 10 + [1] * 5
    source = datasets.Dataset.from_dict(
        {"label": labels, "x": list(range(15))},
        features=datasets.Features({"label": datasets.ClassLabel(names=["a", "b"]), "x": datasets.Value("int32")}),
    )
    expected = assign_splits(15, {"train": 0.8, "test": 0.2}, seed=0, labels=[str(v) for v in labels])
    seeds = []
    for name in ("one.h5", "two.h5"):
        convert_huggingface(source, tmp_path / name, shuffle=True)
        with h5ml.open(tmp_path / name) as ds:
            for split in ("train", "test"):
                assert sorted(ds[split]["x"][:].tolist()) == [i for i, s in enumerate(expected) if s == split]
            seeds.append(ds["train"].shuffle_seed)
    assert None not in seeds and seeds[0] != seeds[1]


def bad_rows_dataset() -> Any:
    """Five rows; row 1's audio is not a sound file and row 3's score is null."""
    cols = {
        "score": [0.5, 1.5, 2.5, None, 4.5],
        "audio": [{"bytes": b"not a sound" if i == 1 else wav(5 + i), "path": f"clip{i}.wav"} for i in range(5)],
    }
    feats = datasets.Features(
        {
            "score": datasets.Value("float64"),
            "audio": {"bytes": datasets.Value("binary"), "path": datasets.Value("string")},
        }
    )
    return datasets.Dataset.from_dict(cols, features=feats).cast_column("audio", datasets.Audio()), cols


def test_bad_rows_stop_or_skip(tmp_path: Path) -> None:
    """Default: the first bad row stops with IngestError naming it, the output unchanged; skip records both rows."""
    source, cols = bad_rows_dataset()
    out = tmp_path / "bad.h5"
    out.write_bytes(b"old content")
    with pytest.raises(h5ml.IngestError, match=r"in-memory datasets\.Dataset\[1\]: column 'audio' \(file clip1\.wav\)"):
        convert_huggingface(source, out, split_ratios={"train": 1.0}, overwrite=True)
    assert out.read_bytes() == b"old content"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.h5"]  # no temporary file left

    report = convert_huggingface(source, out, split_ratios={"train": 1.0}, overwrite=True, on_error="skip")
    assert report.samples == {"train": 3}
    assert [s.path for s in report.skipped] == ["in-memory datasets.Dataset[1]", "in-memory datasets.Dataset[3]"]
    assert "soundfile" in report.skipped[0].reason and "null" in report.skipped[1].reason
    assert_clean(out)
    with h5ml.open(out) as ds:
        assert json.loads(ds.attrs[SKIPPED_ATTR]) == [s.to_json() for s in report.skipped]
        np.testing.assert_array_equal(ds["train"]["score"][:], [0.5, 2.5, 4.5])
        for got, row in zip(ds["train"]["audio"][:], (0, 2, 4), strict=True):
            np.testing.assert_array_equal(got, samples_of(cols["audio"][row]["bytes"]))


def test_audio_with_another_rate_or_channels_is_a_bad_row(tmp_path: Path) -> None:
    """The first file fixes the rate and channels; files that differ are bad rows (no resampling)."""
    clips = [wav(8), wav(8, rate=16000), wav(8, channels=2), wav(9)]
    source = datasets.Dataset.from_dict(
        {"audio": [{"bytes": c, "path": None} for c in clips]},
        features=datasets.Features({"audio": {"bytes": datasets.Value("binary"), "path": datasets.Value("string")}}),
    ).cast_column("audio", datasets.Audio())
    report = convert_huggingface(source, tmp_path / "a.h5", split_ratios={"train": 1.0}, on_error="skip")
    assert report.samples == {"train": 2}
    reasons = [s.reason for s in report.skipped]
    assert "16000 Hz" in reasons[0] and "does not resample" in reasons[0]
    assert "2 channel(s)" in reasons[1]
    stereo = datasets.Dataset.from_dict(
        {"audio": [{"bytes": wav(4, channels=2), "path": None}]},
        features=datasets.Features({"audio": {"bytes": datasets.Value("binary"), "path": datasets.Value("string")}}),
    ).cast_column("audio", datasets.Audio())
    convert_huggingface(stereo, tmp_path / "s.h5", split_ratios={"train": 1.0})
    with h5ml.open(tmp_path / "s.h5") as ds:
        assert ds["train"]["audio"].sample_shape == (None, 2)
        np.testing.assert_array_equal(ds["train"]["audio"][0], samples_of(wav(4, channels=2)))


def test_audio_and_images_as_bytes(tmp_path: Path) -> None:
    """audio="bytes" keeps the WAV files (audio/wav); images of two types get application/octet-stream.

    Nothing is decoded, so ``workers`` does not start processes (converting in this process is faster).
    """
    jpeg = io.BytesIO()
    PIL_Image.new("RGB", (3, 3), (10, 20, 30)).save(jpeg, format="JPEG")
    source = datasets.Dataset.from_dict(
        {
            "image": [{"bytes": png(0), "path": None}, {"bytes": jpeg.getvalue(), "path": None}],
            "audio": [{"bytes": wav(3), "path": None}, {"bytes": wav(4), "path": None}],
        },
        features=datasets.Features(
            {"image": datasets.Image(), "audio": {"bytes": datasets.Value("binary"), "path": datasets.Value("string")}}
        ),
    ).cast_column("audio", datasets.Audio())
    out = tmp_path / "bytes.h5"
    convert_huggingface(source, out, audio="bytes", split_ratios={"train": 1.0}, workers=2)
    assert_clean(out)
    with h5ml.open(out) as ds:
        assert ds["train"]["audio"].media_type == "audio/wav"
        assert ds["train"]["image"].media_type == "application/octet-stream"
        assert ds["train"]["audio"][:] == [wav(3), wav(4)]
        assert ds["train"]["image"][1] == jpeg.getvalue()


def test_unsupported_columns_are_refused_before_writing(tmp_path: Path) -> None:
    """A dict column and a list of strings are named in one IngestError; columns= leaves them out."""
    source = datasets.Dataset.from_dict(
        {"x": [1, 2], "meta": [{"a": 1}, {"a": 2}], "words": [["a"], ["b", "c"]]},
        features=datasets.Features(
            {
                "x": datasets.Value("int8"),
                "meta": {"a": datasets.Value("int32")},
                "words": datasets.List(datasets.Value("string")),
            }
        ),
    )
    out = tmp_path / "u.h5"
    with pytest.raises(h5ml.IngestError, match=r"'meta': a dict of features.*'words': a list of Value\('string'\)"):
        convert_huggingface(source, out, split_ratios={"train": 1.0})
    assert not out.exists()
    convert_huggingface(source, out, columns=["x"], split_ratios={"train": 1.0})
    with h5ml.open(out) as ds:
        assert list(ds["train"].features) == ["x"] and ds["train"]["x"][:].tolist() == [1, 2]


def test_nested_nulls_and_ragged_rows_are_bad_rows(tmp_path: Path) -> None:
    """A null inside a list, or a list of lists that is not rectangular, is a bad row; others convert exactly."""
    source = datasets.Dataset.from_dict(
        {"grid": [[[1.0, 2.0]], [[1.0], [2.0, 3.0]], [[None]], [[4.0], [5.0]]]},
        features=datasets.Features({"grid": datasets.List(datasets.List(datasets.Value("float32")))}),
    )
    out = tmp_path / "n.h5"
    with pytest.raises(h5ml.IngestError, match=r"Dataset\[1\]: column 'grid' is not rectangular"):
        convert_huggingface(source, out, split_ratios={"train": 1.0})
    report = convert_huggingface(source, out, split_ratios={"train": 1.0}, on_error="skip")
    assert [s.path for s in report.skipped] == ["in-memory datasets.Dataset[1]", "in-memory datasets.Dataset[2]"]
    with h5ml.open(out) as ds:
        got = ds["train"]["grid"][:]
        assert [g.tolist() for g in got] == [[[1.0, 2.0]], [[4.0], [5.0]]]


def test_options_and_names_are_checked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Split aliases that collide, unknown splits, features= that changes an encoding, bad on_error; user options."""
    small = datasets.Dataset.from_dict({"x": [1.0, 2.0]})
    pair = datasets.DatasetDict({"val": small, "validation": small})
    with pytest.raises(h5ml.IngestError, match="both map to the h5ml split 'validation'"):
        convert_huggingface(pair, tmp_path / "p.h5")
    with pytest.raises(ValueError, match=r"has no split\(s\) \['test'\]"):
        convert_huggingface(pair, tmp_path / "p.h5", splits=["test"])
    with pytest.raises(ValueError, match="split_ratios applies to a Dataset without splits"):
        convert_huggingface(pair, tmp_path / "p.h5", split_ratios={"train": 1.0})
    with pytest.raises(ValueError, match="encoding 'string'"):
        convert_huggingface(small, tmp_path / "p.h5", features={"x": {"encoding": "string"}})
    with pytest.raises(ValueError, match=r"features= names \['y'\]"):
        convert_huggingface(small, tmp_path / "p.h5", features={"y": {"role": "input"}})
    with pytest.raises(ValueError, match="on_error"):
        convert_huggingface(small, tmp_path / "p.h5", on_error="ignore")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"must be a datasets\.Dataset, a datasets\.DatasetDict or the path"):
        convert_huggingface([1, 2], tmp_path / "p.h5")
    with pytest.raises(FileNotFoundError, match="save_to_disk"):
        convert_huggingface(tmp_path / "nowhere", tmp_path / "p.h5")
    (tmp_path / "empty").mkdir()
    with pytest.raises(h5ml.IngestError, match=r"cannot be loaded with datasets\.load_from_disk"):
        convert_huggingface(tmp_path / "empty", tmp_path / "p.h5")
    assert not (tmp_path / "p.h5").exists()
    out = tmp_path / "opts.h5"
    convert_huggingface(
        pair,
        out,
        splits={"val": "validation"},
        features={"x": {"role": "target", "units": "m", "description": "distance"}},
        compression="gzip",
    )
    with h5ml.open(out) as ds:
        x = ds["validation"]["x"]
        assert (x.role, x.units, x.description, x.compression) == ("target", "m", "distance", "gzip")
    monkeypatch.setitem(sys.modules, "datasets", None)
    with pytest.raises(ImportError, match=r'pip install "h5ml\[hf\]"'):
        convert_huggingface(small, tmp_path / "q.h5")


def test_split_names_and_media_types() -> None:
    assert [standard_split_name(n) for n in ("valid", "val", "dev", "eval", "training", "testing", "extra")] == [
        "validation",
        "validation",
        "validation",
        "test",
        "train",
        "test",
        "extra",
    ]
    assert media_type_of(png(0)[:16]) == "image/png"
    assert media_type_of(wav(2)[:16]) == "audio/wav"
    assert media_type_of(b"\xff\xd8\xff\xe0rest") == "image/jpeg"
    assert media_type_of(b"II+\x00\x08\x00\x00\x00") == "image/tiff"  # BigTIFF, as the image converter sniffs it
    assert media_type_of(b"RIFF\x00\x00\x00\x00WEBPVP8 ") == "image/webp"
    assert media_type_of(b"fLaC\x00") == "audio/flac"
    assert media_type_of(None, "x/y/photo.jpg") == "image/jpeg"
    assert media_type_of(b"????????????", None) is None
