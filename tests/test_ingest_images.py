"""Tests of h5ml.ingest.images (image folders) and h5ml.reader.imagecodec, on real photographs (§6.2, §6.3, §6.5, §6.6).

The images are the photographs bundled with scikit-learn (china.jpg,
flower.jpg) and with scikit-image's wheel (astronaut, camera, coffee,
chelsea, rocket, coins), cut into tiles and saved as PNG (JPEG for the bytes
tests) in ImageFolder trees, one class per source photograph.
"""

from __future__ import annotations

import functools
import io
import json
import os
import shutil
import subprocess
import sys
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import numpy.typing as npt
import pytest
from PIL import Image

import h5ml
from h5ml.errors import EncodingError, IngestError
from h5ml.ingest import SKIPPED_ATTR, natural_key
from h5ml.ingest.images import convert_image_folder, parse_size
from h5ml.reader.imagecodec import decode_image, image_to_array, sniff_image_format

Array = npt.NDArray[np.uint8]
#: The classes: one per source photograph (camera and coins are grayscale, saved as 8-bit L PNGs).
CLASSES = ("astronaut", "camera", "chelsea", "china", "coffee", "coins", "flower", "rocket")


@functools.cache
def photos() -> dict[str, Array]:
    """The eight source photographs: uint8 (H, W, 3), or (H, W) for the two grayscale ones."""
    import skimage.data
    from sklearn.datasets import load_sample_images

    bunch = load_sample_images()
    out = {Path(name).stem: image for name, image in zip(bunch.filenames, bunch.images, strict=True)}
    for name in ("astronaut", "camera", "coffee", "chelsea", "rocket", "coins"):
        out[name] = getattr(skimage.data, name)()
    assert sorted(out) == list(CLASSES) and all(a.dtype == np.uint8 for a in out.values())
    return out


def sklearn_jpegs() -> dict[str, Path]:
    """The JPEG files scikit-learn ships (china, flower)."""
    from sklearn.datasets import load_sample_images

    return {Path(name).stem: Path(name) for name in load_sample_images().filenames}


def tiles(name: str, sizes: Sequence[tuple[int, int]], start: int = 0) -> list[Array]:
    """Non-overlapping tiles of (h, w) ``sizes`` cut from photograph ``name``, left to right then down.

    The first ``start`` places (of the first size) are left out, so tiles
    with another ``start`` are other pixels.
    """
    photo = photos()[name]
    out: list[Array] = []
    top = left = row_h = 0
    for index, (h, w) in enumerate([sizes[0]] * start + list(sizes)):
        if left + w > photo.shape[1]:
            top, left, row_h = top + row_h, 0, 0
        assert top + h <= photo.shape[0], f"{name} is too small for the tiles {sizes}"
        if index >= start:
            out.append(np.ascontiguousarray(photo[top : top + h, left : left + w]))
        left, row_h = left + w, max(row_h, h)
    return out


def rgb(tile: Array) -> Array:
    """What color="RGB" decodes a tile to: grayscale channels repeated."""
    return np.repeat(tile[:, :, None], 3, axis=2) if tile.ndim == 2 else tile


def kept(tile: Array) -> Array:
    """What color="keep" decodes a tile to: (H, W, 1) or (H, W, 3)."""
    return tile[:, :, None] if tile.ndim == 2 else tile


def save(path: Path, tile: Array, fmt: str = "PNG") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(tile).save(path, fmt, **({"quality": 90} if fmt == "JPEG" else {}))
    return path


def build(root: Path, layout: Mapping[str, Mapping[str, Sequence[tuple[str, Array]]]]) -> dict[str, Array]:
    """Write ``{split dir ("" for none): {class: [(file name, tile)]}}`` as PNG files; return id -> tile."""
    out: dict[str, Array] = {}
    for split, classes in layout.items():
        for cls, files in classes.items():
            for file_name, tile in files:
                sample_id = "/".join(p for p in (split, cls, file_name) if p)
                save(root / sample_id, tile)
                out[sample_id] = tile
    return out


def read_split(path: Path, split: str) -> dict[str, Any]:
    """Every value of a split: ids, label codes, class names, images (array or list), split attributes."""
    with h5ml.open(path) as ds:
        part = ds[split]
        return {
            "id": part["id"][:].tolist(),
            "label": part["label"][:].tolist(),
            "class_names": part["label"].class_names,
            "image": part["image"][:],
            "roles": {name: part[name].role for name in ("image", "label", "id")},
            "shuffle_seed": part.shuffle_seed,
        }


def assert_strictly_valid(path: Path) -> None:
    report = h5ml.validate(path, deep=True)
    assert report.valid_strict, [(i.code, i.message) for i in report.issues]


@pytest.fixture(scope="module")
def split_tree(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Array]]:
    """ROOT/{train,test}/<class>/<file>.png: 64x64 tiles, 5 train (names 1, 2, 3, 10, 11) and 2 test per class.

    Files that must be ignored: a README and hidden files at the root, a CSV in
    a class folder, and a hidden .ipynb_checkpoints folder holding a PNG.
    """
    root = tmp_path_factory.mktemp("split_tree")
    layout: dict[str, dict[str, list[tuple[str, Array]]]] = {"train": {}, "test": {}}
    for cls in CLASSES:
        cut = tiles(cls, [(64, 64)] * 7)
        layout["train"][cls] = [(f"{cls}_{k}.png", t) for k, t in zip((1, 2, 3, 10, 11), cut[:5], strict=True)]
        layout["test"][cls] = [(f"{cls}_{k}.png", t) for k, t in zip((1, 2), cut[5:], strict=True)]
    expected = build(root, layout)
    (root / "README.txt").write_text("tiles of the scikit-learn and scikit-image photographs\n")
    (root / ".DS_Store").write_bytes(b"\x00\x00\x00\x01Bud1")
    (root / "train" / "coins" / "notes.csv").write_text("file,comment\n")
    save(root / "train" / ".ipynb_checkpoints" / "x.png", tiles("coins", [(8, 8)])[0])
    return root, expected


# --------------------------------------------------------------------------
# dense


def test_dense_png_round_trip_is_exact(split_tree: tuple[Path, dict[str, Array]], tmp_path: Path) -> None:
    """§6.2/§6.5: 64x64 PNG tiles stored at their own size keep every pixel; labels, ids and classes are right."""
    root, expected = split_tree
    out = tmp_path / "tiles.h5"
    report = convert_image_folder(root, out, mode="dense", size=(64, 64))
    assert report.samples == {"train": 40, "test": 16} and report.skipped == []
    assert_strictly_valid(out)
    for split in ("train", "test"):
        got = read_split(out, split)
        ids = sorted((i for i in expected if i.startswith(f"{split}/")), key=natural_key)
        assert got["id"] == ids
        if split == "train":
            assert ids[:5] == [f"train/astronaut/astronaut_{k}.png" for k in (1, 2, 3, 10, 11)]
        assert got["class_names"] == list(CLASSES)
        assert got["label"] == [CLASSES.index(i.split("/")[1]) for i in ids]
        assert got["roles"] == {"image": "input", "label": "target", "id": "metadata"}
        assert got["image"].shape == (len(ids), 64, 64, 3) and got["image"].dtype == np.uint8
        for i, sample_id in enumerate(ids):
            np.testing.assert_array_equal(got["image"][i], rgb(expected[sample_id]))
    with h5py.File(out, "r") as f:
        assert f["train/image"].attrs["encoding"] == "dense" and f["train/label"].attrs["encoding"] == "categorical"
        assert f.attrs["license"] == "NOASSERTION" and f.attrs["source"] == str(root)


@pytest.mark.parametrize("processes", [False, True], ids=["threads", "processes"])
def test_workers_two_give_the_same_file_content(
    split_tree: tuple[Path, dict[str, Array]], tmp_path: Path, processes: bool
) -> None:
    """Two decoding threads or processes write the same samples, in the same order, as one (same fingerprint, §8.3)."""
    root, _ = split_tree
    one, two = tmp_path / "one.h5", tmp_path / "two.h5"
    convert_image_folder(root, one, mode="dense", size=(48, 40), resize="crop")
    convert_image_folder(root, two, mode="dense", size=(48, 40), resize="crop", workers=2, processes=processes)
    for split in ("train", "test"):
        a, b = read_split(one, split), read_split(two, split)
        assert a["id"] == b["id"] and a["label"] == b["label"]
        np.testing.assert_array_equal(a["image"], b["image"])
    with h5ml.open(one) as da, h5ml.open(two) as db:
        assert da.fingerprint is not None and da.fingerprint == db.fingerprint


def test_resize_modes_give_the_requested_shape_and_pixels(tmp_path: Path) -> None:
    """size=(W, H): stretch resamples both axes; crop covers then cuts the centre; pad fits then centres on zeros."""
    wide, short, tall, square = tiles("chelsea", [(64, 96), (32, 64), (80, 50), (64, 64)])
    expected = build(tmp_path / "root", {"": {"cat": [("a.png", wide), ("b.png", short), ("c.png", tall)]}})
    expected |= build(tmp_path / "root", {"": {"gray": [("d.png", tiles("camera", [(64, 64)])[0])]}})
    expected |= build(tmp_path / "root", {"": {"sq": [("e.png", square)]}})

    def pillow(tile: Array, size: tuple[int, int]) -> Array:
        return np.asarray(Image.fromarray(tile).resize(size, Image.Resampling.BILINEAR))

    images: dict[str, Array] = {}
    for resize in ("stretch", "crop", "pad"):
        out = tmp_path / f"{resize}.h5"
        convert_image_folder(tmp_path / "root", out, size=(64, 64), resize=resize)
        got = read_split(out, "train")
        assert got["id"] == ["cat/a.png", "cat/b.png", "cat/c.png", "gray/d.png", "sq/e.png"]
        assert got["image"].shape == (5, 64, 64, 3)
        images = dict(zip(got["id"], got["image"], strict=True))
        np.testing.assert_array_equal(images["sq/e.png"], square)  # already the size: not resampled
        np.testing.assert_array_equal(images["gray/d.png"], rgb(expected["gray/d.png"]))
        if resize == "stretch":
            for key in ("cat/a.png", "cat/b.png", "cat/c.png"):
                np.testing.assert_array_equal(images[key], pillow(expected[key], (64, 64)))
        elif resize == "crop":
            np.testing.assert_array_equal(images["cat/a.png"], wide[:, 16:80])  # scale 1: the centre 64 columns
            np.testing.assert_array_equal(images["cat/b.png"], pillow(short, (128, 64))[:, 32:96])  # scale 2
            np.testing.assert_array_equal(images["cat/c.png"], pillow(tall, (64, 102))[19:83])  # 64/50 x 80 = 102
        else:
            np.testing.assert_array_equal(images["cat/b.png"][16:48], short)  # scale 1: rows 16..47
            assert not images["cat/b.png"][:16].any() and not images["cat/b.png"][48:].any()
            np.testing.assert_array_equal(images["cat/a.png"][10:53], pillow(wide, (64, 43)))  # 2/3 x 64 = 43
            assert not images["cat/a.png"][:10].any() and not images["cat/a.png"][53:].any()
            np.testing.assert_array_equal(images["cat/c.png"][:, 12:52], pillow(tall, (40, 64)))  # 0.8 x 50 = 40
            assert not images["cat/c.png"][:, :12].any() and not images["cat/c.png"][:, 52:].any()
        assert_strictly_valid(out)
    out = tmp_path / "small_gray.h5"
    convert_image_folder(tmp_path / "root", out, size=(48, 32), color="L", resample="nearest")
    got = read_split(out, "train")
    assert got["image"].shape == (5, 32, 48, 1)  # size is (W, H); samples are (H, W, C)
    gray = np.asarray(Image.fromarray(expected["gray/d.png"]).resize((48, 32), Image.Resampling.NEAREST))
    np.testing.assert_array_equal(got["image"][3][:, :, 0], gray)
    luma = np.asarray(Image.fromarray(square).convert("L").resize((48, 32), Image.Resampling.NEAREST))
    np.testing.assert_array_equal(got["image"][4][:, :, 0], luma)


# --------------------------------------------------------------------------
# ragged


def test_ragged_keeps_original_shapes_past_the_first_batch(tmp_path: Path) -> None:
    """§6.3: 72 images of various sizes keep their pixels and (H, W, C) exactly, with per-sample shapes.

    The first 64 images (one writer batch) are all 64 wide, so with
    color="RGB" the first batch varies in height only; later images vary in
    width too. With color="keep" the grayscale PNGs stay one channel.
    """
    layout: dict[str, list[tuple[str, Array]]] = {}
    for cls in CLASSES:
        if cls == "rocket":
            sizes = [(40, 64), (50, 70), (33, 41), (64, 20), (12, 90), (31, 64), (64, 64), (17, 17), (45, 80)]
        else:
            sizes = [(24 + 4 * k, 64) for k in range(9)]
        layout[cls] = [(f"{k}.png", t) for k, t in enumerate(tiles(cls, sizes))]
    expected = build(tmp_path / "root", {"": layout})
    ids = sorted(expected, key=natural_key)
    assert {expected[i].shape[1] for i in ids[:64]} == {64} and len({expected[i].shape[1] for i in ids}) > 1
    for color, convert in (("RGB", rgb), ("keep", kept)):
        out = tmp_path / f"ragged_{color}.h5"
        report = convert_image_folder(tmp_path / "root", out, mode="ragged", color=color)
        assert report.samples == {"train": 72}
        assert_strictly_valid(out)
        got = read_split(out, "train")
        assert got["id"] == ids
        assert got["label"] == [CLASSES.index(i.split("/")[0]) for i in ids]
        for sample_id, image in zip(ids, got["image"], strict=True):
            assert image.dtype == np.uint8
            np.testing.assert_array_equal(image, convert(expected[sample_id]))
        with h5py.File(out, "r") as f:
            shapes = f["train/image/shapes"][()]
        assert shapes.tolist() == [list(convert(expected[i]).shape) for i in ids]
        assert {s[2] for s in shapes.tolist()} == ({3} if color == "RGB" else {1, 3})


# --------------------------------------------------------------------------
# bytes


def test_bytes_keep_the_files_exactly(tmp_path: Path) -> None:
    """§6.6: the stored bytes are the files' bytes; decode_image of them is Pillow's decoding of the files."""
    root = tmp_path / "root"
    files: dict[str, Path] = {}
    for cls, jpeg in sklearn_jpegs().items():  # the JPEG files scikit-learn ships, as they are
        files[f"{cls}/original.jpg"] = root / cls / "original.jpg"
        files[f"{cls}/original.jpg"].parent.mkdir(parents=True)
        shutil.copyfile(jpeg, files[f"{cls}/original.jpg"])
    for cls in ("coffee", "coins"):
        for k, tile in enumerate(tiles(cls, [(64, 64), (48, 80)])):
            files[f"{cls}/{k}.jpg"] = save(root / cls / f"{k}.jpg", tile, "JPEG")
    out = tmp_path / "jpeg.h5"
    report = convert_image_folder(root, out, mode="bytes")
    assert report.samples == {"train": 6}
    assert_strictly_valid(out)
    with h5ml.open(out) as ds:
        image = ds["train"]["image"]
        assert image.encoding == "bytes" and image.media_type == "image/jpeg"
        stored = dict(zip(ds["train"]["id"][:].tolist(), image[:], strict=True))
    assert sorted(stored) == sorted(files)
    for sample_id, path in files.items():
        data = path.read_bytes()
        assert stored[sample_id] == data
        with Image.open(path) as reference:
            np.testing.assert_array_equal(decode_image(stored[sample_id]), np.asarray(reference.convert("RGB")))
            np.testing.assert_array_equal(
                decode_image(stored[sample_id], "L")[:, :, 0], np.asarray(reference.convert("L"))
            )

    # A PNG named .jpg is a PNG (signatures, not extensions): all PNG gives image/png, PNG and JPEG none.
    png_root = tmp_path / "png"
    build(
        png_root,
        {
            "": {
                "coins": [("a.png", tiles("coins", [(30, 40)])[0])],
                "rocket": [("b.jpg", tiles("rocket", [(20, 20)])[0])],
            }
        },
    )
    convert_image_folder(png_root, tmp_path / "png.h5", mode="bytes")
    save(png_root / "rocket" / "c.jpeg", tiles("rocket", [(20, 20)], start=1)[0], "JPEG")
    convert_image_folder(png_root, tmp_path / "mixed.h5", mode="bytes")
    with h5ml.open(tmp_path / "png.h5") as png, h5ml.open(tmp_path / "mixed.h5") as mixed:
        assert png["train"]["image"].media_type == "image/png"
        assert mixed["train"]["image"].media_type == "application/octet-stream"  # §6.6: the default, as absent
        assert mixed["train"]["image"][2] == (png_root / "rocket" / "c.jpeg").read_bytes()
    assert_strictly_valid(tmp_path / "mixed.h5")


# --------------------------------------------------------------------------
# splits


def test_split_ratios_are_stratified_and_seeded(tmp_path: Path) -> None:
    """§5.1: ROOT/<class>/<file> cut 0.75/0.25 per class; the same seed gives the same cut; default all train."""
    root = tmp_path / "root"
    expected = build(
        root, {"": {cls: [(f"{k}.png", t) for k, t in enumerate(tiles(cls, [(16, 16)] * 8))] for cls in CLASSES}}
    )
    out = tmp_path / "cut.h5"
    ratios = {"train": 0.75, "test": 0.25}
    report = convert_image_folder(root, out, split_ratios=ratios, seed=5, size=(16, 16), shuffle=True)
    assert report.samples == {"train": 48, "test": 16}
    assert_strictly_valid(out)
    got = {split: read_split(out, split) for split in ("train", "test")}
    for split, share in (("train", 6), ("test", 2)):
        assert Counter(i.split("/")[0] for i in got[split]["id"]) == dict.fromkeys(CLASSES, share)
        assert got[split]["shuffle_seed"] == 5
        assert got[split]["label"] == [CLASSES.index(i.split("/")[0]) for i in got[split]["id"]]
        for sample_id, image in zip(got[split]["id"], got[split]["image"], strict=True):
            np.testing.assert_array_equal(image, rgb(expected[sample_id]))
    assert sorted(got["train"]["id"] + got["test"]["id"]) == sorted(expected)

    again, other = tmp_path / "again.h5", tmp_path / "other.h5"
    convert_image_folder(root, again, split_ratios=ratios, seed=5, size=(16, 16))
    convert_image_folder(root, other, split_ratios=ratios, seed=6, size=(16, 16))
    assert sorted(read_split(again, "test")["id"]) == sorted(got["test"]["id"])
    assert read_split(again, "test")["id"] == sorted(got["test"]["id"], key=natural_key)  # unshuffled: natural order
    assert sorted(read_split(other, "test")["id"]) != sorted(got["test"]["id"])

    whole = convert_image_folder(root, tmp_path / "whole.h5", size=(16, 16))
    assert whole.samples == {"train": 64}


def test_split_folders_and_layout_detection(tmp_path: Path) -> None:
    """Folders val/ and eval/ become the standard splits; a class with nested folders is read as classes."""
    root = tmp_path / "splits"
    build(root, {split: {"china": [("a.png", tiles("china", [(8, 8)])[0])]} for split in ("train", "val", "eval")})
    report = convert_image_folder(root, tmp_path / "a.h5", size=(8, 8))
    assert report.samples == {"train": 1, "validation": 1, "test": 1}
    assert read_split(tmp_path / "a.h5", "validation")["id"] == ["val/china/a.png"]
    assert_strictly_valid(tmp_path / "a.h5")
    with pytest.raises(ValueError, match="already has split folders"):
        convert_image_folder(root, tmp_path / "b.h5", size=(8, 8), split_ratios={"train": 1.0})
    build(root, {"validation": {"china": [("b.png", tiles("china", [(8, 8)], start=1)[0])]}})
    with pytest.raises(IngestError, match="'val' and 'validation' are both the split 'validation'"):
        convert_image_folder(root, tmp_path / "b.h5", size=(8, 8))

    nested = tmp_path / "nested"
    build(
        nested,
        {
            "": {
                "cat/indoor": [("1.png", tiles("chelsea", [(8, 8)])[0])],
                "dog": [("2.png", tiles("coffee", [(8, 8)])[0])],
            }
        },
    )
    convert_image_folder(nested, tmp_path / "c.h5", size=(8, 8))
    got = read_split(tmp_path / "c.h5", "train")
    assert got["id"] == ["cat/indoor/1.png", "dog/2.png"] and got["class_names"] == ["cat", "dog"]
    only_nested = tmp_path / "only_nested"
    build(only_nested, {"": {"cat/indoor": [("1.png", tiles("chelsea", [(8, 8)])[0])]}})
    auto = convert_image_folder(only_nested, tmp_path / "d.h5", size=(8, 8))
    assert auto.samples == {"cat": 1}  # read as ROOT/<split>/<class>: layout="classes" says otherwise
    forced = convert_image_folder(only_nested, tmp_path / "e.h5", size=(8, 8), folder_layout="classes")
    assert forced.samples == {"train": 1} and read_split(tmp_path / "e.h5", "train")["class_names"] == ["cat"]


# --------------------------------------------------------------------------
# bad input


@pytest.fixture
def bad_tree(tmp_path: Path) -> tuple[Path, dict[str, Array]]:
    """ROOT/<class>/<file>: 3 good PNGs per class for 2 classes, a truncated PNG and a text file named .png."""
    root = tmp_path / "bad"
    expected = build(
        root,
        {
            "": {
                cls: [(f"{k}.png", t) for k, t in enumerate(tiles(cls, [(32, 32)] * 3))]
                for cls in ("astronaut", "coins")
            }
        },
    )
    whole = save(root / "astronaut" / "9.png", tiles("astronaut", [(32, 32)], start=3)[0]).read_bytes()
    (root / "astronaut" / "9.png").write_bytes(whole[: len(whole) // 2])
    (root / "coins" / "notes.png").write_text("not a picture\n")
    return root, expected


def test_bad_files_stop_and_leave_the_output_unchanged(bad_tree: tuple[Path, dict[str, Array]], tmp_path: Path) -> None:
    """A truncated PNG stops the conversion with IngestError naming it; the old output keeps its content."""
    root, _ = bad_tree
    (root / "coins" / "notes.png").unlink()
    out = tmp_path / "out.h5"
    out.write_bytes(b"old content")
    for mode, size in (("dense", (32, 32)), ("ragged", None), ("bytes", None)):
        with pytest.raises(IngestError, match="truncated") as err:
            convert_image_folder(root, out, mode=mode, size=size, overwrite=True)
        assert str(root / "astronaut" / "9.png") in str(err.value) and err.value.path == str(
            root / "astronaut" / "9.png"
        )
        assert "on_error='skip'" in str(err.value)
        assert out.read_bytes() == b"old content"
    fresh = tmp_path / "fresh.h5"
    with pytest.raises(IngestError, match=r"9\.png"):
        convert_image_folder(root, fresh, size=(32, 32), workers=2)
    assert not fresh.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["bad", "out.h5"]


def test_bad_files_are_skipped_and_recorded(bad_tree: tuple[Path, dict[str, Array]], tmp_path: Path) -> None:
    """on_error="skip": the truncated PNG, the text file and an image outside a class are left out and recorded."""
    root, expected = bad_tree
    save(root / "stray.png", tiles("coins", [(8, 8)])[0])
    for mode, size in (("dense", (32, 32)), ("bytes", None)):
        out = tmp_path / f"{mode}.h5"
        report = convert_image_folder(root, out, mode=mode, size=size, on_error="skip", workers=2)
        assert report.samples == {"train": 6}
        reasons = {Path(s.path).name: s.reason for s in report.skipped}
        assert sorted(reasons) == ["9.png", "notes.png", "stray.png"]
        assert "truncated" in reasons["9.png"] and "not a PNG" in reasons["notes.png"]
        assert "not in a class folder" in reasons["stray.png"]
        with h5py.File(out, "r") as f:
            assert json.loads(f.attrs[SKIPPED_ATTR]) == [s.to_json() for s in report.skipped]
        got = read_split(out, "train")
        assert got["id"] == sorted(expected, key=natural_key)
        for sample_id, image in zip(got["id"], got["image"], strict=True):
            if mode == "bytes":
                assert image == (root / sample_id).read_bytes()
            else:
                np.testing.assert_array_equal(image, rgb(expected[sample_id]))
        assert_strictly_valid(out)
    with pytest.raises(IngestError, match=r"stray\.png: the image is not in a class folder"):
        convert_image_folder(root, tmp_path / "stop.h5", size=(32, 32))


def test_names_that_are_not_utf8(tmp_path: Path) -> None:
    """§3.4: a file name that is not UTF-8 cannot be an id (stop or skip); such a class folder name stops."""
    root = tmp_path / "root"
    first, second = tiles("coins", [(8, 8)] * 2)
    build(root, {"": {"coins": [("a.png", first)]}})
    save(Path(os.fsdecode(os.fsencode(root / "coins") + b"/caf\xe9.png")), second)
    with pytest.raises(IngestError, match=r"caf\\xe9\.png: its path contains a lone surrogate.*not valid UTF-8"):
        convert_image_folder(root, tmp_path / "a.h5", size=(8, 8))
    report = convert_image_folder(root, tmp_path / "a.h5", size=(8, 8), on_error="skip")
    assert report.samples == {"train": 1} and [Path(s.path).name for s in report.skipped] == ["caf\\xe9.png"]
    assert_strictly_valid(tmp_path / "a.h5")
    save(Path(os.fsdecode(os.fsencode(root) + b"/gar\xe7on/b.png")), second)
    with pytest.raises(IngestError, match=r"gar\\xe7on: the class folder name contains a lone surrogate"):
        convert_image_folder(root, tmp_path / "b.h5", size=(8, 8), on_error="skip")


def test_pillow_is_imported_only_when_used() -> None:
    """h5ml.reader.imagecodec and h5ml.ingest.images import Pillow inside their functions, not when imported."""
    code = "import sys, h5ml.reader.imagecodec, h5ml.ingest.images; print('PIL' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


def test_parse_size() -> None:
    """The command-line form of size: WIDTHxHEIGHT or one number for a square."""
    assert parse_size("224x160") == (224, 160) and parse_size(" 32 X 48 ") == (32, 48) and parse_size("64") == (64, 64)
    for bad in ("", "x", "0x5", "5x", "1x2x3", "axb", "-3x4"):
        with pytest.raises(ValueError, match="WIDTHxHEIGHT"):
            parse_size(bad)


def test_invalid_options_and_folders(tmp_path: Path) -> None:
    """Options are checked before any file is read; empty trees and missing folders are refused."""
    root = tmp_path / "root"
    build(root, {"": {"coins": [("a.png", tiles("coins", [(8, 8)])[0])]}})
    out = tmp_path / "o.h5"
    cases: list[tuple[dict[str, Any], str]] = [
        ({}, r"pass size=\(W, H\)"),
        ({"mode": "ragged", "size": (8, 8)}, r"applies to mode='dense' \(--mode dense\) only"),
        ({"size": (8, 8), "color": "keep"}, "color='keep'"),
        ({"size": (0, 8)}, "two integers >= 1"),
        ({"size": (8,)}, "two integers >= 1"),
        ({"size": (True, 8)}, "two integers >= 1"),
        ({"mode": "video"}, "mode must be one of"),
        ({"size": (8, 8), "resize": "zoom"}, "resize must be one of"),
        ({"size": (8, 8), "color": "CMYK"}, "color must be one of"),
        ({"size": (8, 8), "split_ratios": {"train": 0.5}}, "add up"),
        ({"size": (8, 8), "split_ratios": {"_x": 1.0}}, "not a valid split name"),
    ]
    for options, match in cases:
        with pytest.raises(ValueError, match=match):
            convert_image_folder(root, out, **options)
    with pytest.raises(NotADirectoryError, match="not a folder"):
        convert_image_folder(tmp_path / "missing", out, size=(8, 8))
    (tmp_path / "empty" / "cls").mkdir(parents=True)
    (tmp_path / "empty" / "cls" / "README.md").write_text("no images\n")
    with pytest.raises(IngestError, match="no image file"):
        convert_image_folder(tmp_path / "empty", out, size=(8, 8))
    out.write_bytes(b"x")
    with pytest.raises(FileExistsError, match="overwrite"):
        convert_image_folder(root, out, size=(8, 8))
    assert out.read_bytes() == b"x"


# --------------------------------------------------------------------------
# h5ml.reader.imagecodec


def test_decode_image_colours_and_errors() -> None:
    """decode_image gives uint8 (H, W, C) in each colour mode, and a clear EncodingError for bytes not an image."""
    tile = tiles("astronaut", [(24, 40)])[0]
    buffer = io.BytesIO()
    Image.fromarray(tile).save(buffer, "PNG")
    data = buffer.getvalue()
    assert sniff_image_format(data) == "PNG"
    np.testing.assert_array_equal(decode_image(data), tile)
    np.testing.assert_array_equal(decode_image(np.frombuffer(data, np.uint8)), tile)
    np.testing.assert_array_equal(decode_image(data, "keep"), tile)
    rgba = decode_image(data, "RGBA")
    assert rgba.shape == (24, 40, 4) and (rgba[:, :, 3] == 255).all()
    np.testing.assert_array_equal(rgba[:, :, :3], tile)
    np.testing.assert_array_equal(decode_image(data, "L")[:, :, 0], np.asarray(Image.fromarray(tile).convert("L")))
    assert decode_image(data, "LA").shape == (24, 40, 2)

    for mode, keep in (("1", 1), ("P", 3), ("PA", 4), ("La", 2), ("RGBX", 3), ("CMYK", 3), ("YCbCr", 3), ("LAB", 3)):
        for color, channels in (("RGB", 3), ("RGBA", 4), ("L", 1), ("LA", 2), ("keep", keep)):
            assert image_to_array(Image.new(mode, (5, 2)), color).shape == (2, 5, channels), (mode, color)
    gray = io.BytesIO()
    Image.fromarray(tiles("coins", [(10, 12)])[0]).save(gray, "PNG")
    assert decode_image(gray.getvalue(), "keep").shape == (10, 12, 1)
    deep = io.BytesIO()
    Image.fromarray(tiles("coins", [(10, 12)])[0].astype(np.uint16) * 257).save(deep, "PNG")
    with pytest.raises(EncodingError, match="16-bit"):
        decode_image(deep.getvalue())
    with pytest.raises(
        EncodingError, match=r"d\.h5:/train/image sample 3: the 13 bytes starting b'not an image' are not"
    ):
        decode_image(b"not an image!", where="d.h5:/train/image sample 3")
    with pytest.raises(EncodingError, match=r"a PNG file that Pillow cannot decode.*truncated"):
        decode_image(data[: len(data) // 2])
    with pytest.raises(ValueError, match="color must be one of"):
        decode_image(data, "HSV")


def test_mixed_png_and_jpeg_bytes_decode_with_decode_images(tmp_path: Path) -> None:
    """§6.6: a folder mixing PNG and JPEG stored as bytes has no media type (application/octet-stream); the
    reader's decode_images=True still decodes every sample, each by its own signature, to Pillow's pixels."""
    from h5ml.reader.source import SplitSource

    root = tmp_path / "mixed"
    files: dict[str, Path] = {}
    for cls, jpeg in sklearn_jpegs().items():  # the JPEG files scikit-learn ships, as they are
        files[f"{cls}/original.jpg"] = root / cls / "original.jpg"
        files[f"{cls}/original.jpg"].parent.mkdir(parents=True)
        shutil.copyfile(jpeg, files[f"{cls}/original.jpg"])
    for k, tile in enumerate(tiles("coins", [(30, 40), (24, 24)])):  # grayscale PNGs
        files[f"coins/{k}.png"] = save(root / "coins" / f"{k}.png", tile, "PNG")
    files["china/tile.png"] = save(root / "china" / "tile.png", tiles("china", [(20, 28)])[0], "PNG")
    out = tmp_path / "mixed.h5"
    assert convert_image_folder(root, out, mode="bytes").samples == {"train": 5}
    with h5ml.open(out) as ds:
        assert ds["train"]["image"].media_type == "application/octet-stream"
    source = SplitSource(out, "train", decode_images=True)
    assert source.encodings["image"] == "image"
    batch = source.read(list(range(5)))
    ids = [str(i) for i in batch["id"]]
    assert sorted(ids) == sorted(files)
    for sample_id, pixels in zip(ids, batch["image"], strict=True):
        with Image.open(files[sample_id]) as reference:
            np.testing.assert_array_equal(pixels, np.asarray(reference.convert("RGB")))
    first = source.read(0)["image"]
    with Image.open(files[ids[0]]) as reference:
        np.testing.assert_array_equal(first, np.asarray(reference.convert("RGB")))
    source.close()


def test_a_sample_that_is_no_image_names_file_split_feature_and_index(tmp_path: Path) -> None:
    """decode_images=True on a bytes feature without media type whose sample 2 is text: an EncodingError names
    the file, the split, the feature and sample 2; a feature whose first sample is no image stays bytes."""
    from h5ml.reader.source import SplitSource

    good = [save(tmp_path / f"{k}.png", t).read_bytes() for k, t in enumerate(tiles("rocket", [(8, 8)] * 3))]
    jpeg = save(tmp_path / "3.jpg", tiles("rocket", [(8, 8)], start=3)[0], "JPEG").read_bytes()
    out = tmp_path / "photos.h5"
    samples = [good[0], jpeg, b"not a picture\n", good[1]]
    h5ml.write(out, {"test": {"photo": samples, "notes": [b"a", b"b", b"c", b"d"]}})
    source = SplitSource(out, "test", decode_images=True)
    assert source.encodings == {"photo": "image", "notes": "bytes"}
    assert [a.shape for a in source.read([0, 1, 3])["photo"]] == [(8, 8, 3)] * 3
    with pytest.raises(EncodingError) as caught:
        source.read([3, 2])
    message = str(caught.value)
    assert str(out) in message and "split 'test'" in message and "feature 'photo'" in message
    assert "sample 2" in message and "not an image file" in message
    with pytest.raises(EncodingError, match=r"feature 'photo' \(/test/photo\), sample 2: the 14 bytes"):
        source.read(-2)
    source.close()
