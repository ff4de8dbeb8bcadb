"""How the folder converters read the top of a tree: ROOT/<split>/<file> (no labels), trees half so, wrong kinds.

h5ml.ingest.folders decides, for image and audio folders alike, whether the
folders of ROOT are splits holding files (``folder_layout="split-files"``),
refuses a tree that is half that and half another layout with one line
naming the ``--folder-layout`` of each reading, and says what a folder
holds when it holds nothing of the kind asked for. The trees are real PNG
and WAV files written here (Pillow, soundfile); the outputs are read back.
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

import h5ml
from h5ml.errors import IngestError
from h5ml.tools import cli

Image = pytest.importorskip("PIL.Image")
sf = pytest.importorskip("soundfile")


def run_cli(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = cli.run(list(args), out, err)
    return code, out.getvalue(), err.getvalue()


def _pngs(folder: Path, count: int, seed: int) -> dict[str, npt.NDArray[np.uint8]]:
    """``count`` RGB PNG files of 6x5 pixels in ``folder``; file name -> pixels."""
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    out = {}
    for k in range(count):
        pixels = rng.integers(0, 256, size=(5, 6, 3), dtype=np.uint8)
        Image.fromarray(pixels).save(folder / f"{k}.png")
        out[f"{k}.png"] = pixels
    return out


def _wavs(folder: Path, ids: list[str], seed: int, rate: int = 8000) -> dict[str, npt.NDArray[np.int16]]:
    """16-bit mono WAV files ``<id>.wav`` of different lengths in ``folder``; id -> samples."""
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    out = {}
    for k, sample_id in enumerate(ids):
        clip = rng.integers(-20000, 20000, size=300 + 100 * k, dtype=np.int16)
        sf.write(folder / f"{sample_id}.wav", clip, rate, subtype="PCM_16")
        out[sample_id] = clip
    return out


def _strictly_valid(path: Path) -> None:
    report = h5ml.validate(path, deep=True)
    assert report.valid_strict, [(i.code, i.message) for i in report.issues]


def test_image_split_folders_holding_files_are_unlabeled_splits(tmp_path: Path) -> None:
    """ROOT/train/*.png, ROOT/valid/*.png, ROOT/test/*.png: three splits with image and id and no label (they were
    three classes of one split); folder_layout='classes' still gives that reading when it is the one meant."""
    root = tmp_path / "unlabeled"
    expected = {
        split: _pngs(root / folder, count, seed)
        for split, folder, count, seed in (
            ("train", "train", 3, 0),
            ("validation", "valid", 2, 1),
            ("test", "test", 2, 2),
        )
    }
    out = tmp_path / "u.h5"
    report = h5ml.ingest.convert_image_folder(root, out, size=(6, 5))
    assert report.samples == {"train": 3, "validation": 2, "test": 2}
    with h5ml.open(out) as ds:
        for split, files in expected.items():
            assert sorted(ds[split].features) == ["id", "image"]
            folder = "valid" if split == "validation" else split
            assert ds[split]["id"][:].tolist() == [f"{folder}/{name}" for name in files]
            np.testing.assert_array_equal(ds[split]["image"][:], np.stack(list(files.values())))
    _strictly_valid(out)

    code, stdout, err = run_cli("convert", str(root), str(tmp_path / "cli.h5"), "--size", "6x5", "--quiet")
    assert (code, stdout, err) == (0, "", "")
    with h5ml.open(tmp_path / "cli.h5") as ds:
        assert sorted(ds) == ["test", "train", "validation"] and "label" not in ds["test"].features

    classes = h5ml.ingest.convert_image_folder(root, tmp_path / "c.h5", size=(6, 5), folder_layout="classes")
    assert classes.samples == {"train": 7}
    with h5ml.open(tmp_path / "c.h5") as ds:
        assert ds["train"]["label"].class_names == ["test", "train", "valid"]


def test_image_trees_half_split_files_are_refused_naming_each_reading(tmp_path: Path) -> None:
    """Split-named folders holding images beside a class-named folder, or beside split folders holding class
    folders: refused (one line, exit 2) saying which --folder-layout gives which reading; each value then works."""
    mixed_names = tmp_path / "names"
    _pngs(mixed_names / "train", 2, 0)
    _pngs(mixed_names / "test", 1, 1)
    _pngs(mixed_names / "cat", 2, 2)
    mixed_depth = tmp_path / "depth"
    _pngs(mixed_depth / "train" / "cat", 2, 3)
    _pngs(mixed_depth / "test", 2, 4)
    for root, needle in (
        (mixed_names, "'test', 'train' are named like splits and hold image files directly, but 'cat' is not a split"),
        (mixed_depth, "'test' is named like a split and holds image files directly, but 'train' hold(s) folders"),
    ):
        out = tmp_path / "out.h5"
        with pytest.raises(IngestError) as caught:
            h5ml.ingest.convert_image_folder(root, out, size=(6, 5))
        message = str(caught.value)
        assert needle in message and "confirm which reading you mean" in message
        for layout in ("split-files", "classes", "splits"):
            assert f"folder_layout='{layout}' (--folder-layout {layout})" in message
        assert not out.exists()
        code, stdout, err = run_cli("convert", str(root), str(out), "--size", "6x5")
        assert (code, stdout) == (2, "") and err.count("\n") == 1 and needle in err and "Traceback" not in err
    forced = h5ml.ingest.convert_image_folder(mixed_names, tmp_path / "f.h5", size=(6, 5), folder_layout="split-files")
    assert forced.samples == {"train": 2, "test": 1, "cat": 2}
    classes = h5ml.ingest.convert_image_folder(mixed_names, tmp_path / "g.h5", size=(6, 5), folder_layout="classes")
    assert classes.samples == {"train": 5}


def test_audio_split_folders_holding_files_are_splits_of_one_feature(tmp_path: Path) -> None:
    """ROOT/train/*.wav, ROOT/test/*.wav: two splits of one feature 'audio' (they were two features 'train' and
    'test' matched by id); a tree half so is refused naming each reading; --folder-layout features forces one."""
    root = tmp_path / "speech"
    train = _wavs(root / "train", ["1", "2", "10"], 0)
    test = _wavs(root / "test", ["3"], 1)
    out = tmp_path / "a.h5"
    report = h5ml.ingest.convert_audio_folder(root, out)
    assert report.samples == {"train": 3, "test": 1}
    with h5ml.open(out) as ds:
        for split, clips in (("train", train), ("test", test)):
            assert sorted(ds[split].features) == ["audio", "id"]
            assert ds[split]["id"][:].tolist() == list(clips)
            assert ds[split]["audio"].sample_rate == 8000.0
            for row, clip in enumerate(clips.values()):
                np.testing.assert_array_equal(ds[split]["audio"][row], clip)
    _strictly_valid(out)

    half = tmp_path / "half"
    _wavs(half / "train", ["1", "2"], 2)
    _wavs(half / "clean", ["1", "2"], 3)
    with pytest.raises(IngestError) as caught:
        h5ml.ingest.convert_audio_folder(half, tmp_path / "h.h5")
    message = str(caught.value)
    assert "'train' is named like a split and holds audio files directly, but 'clean' is not a split name" in message
    for layout in ("split-files", "features", "splits"):
        assert f"folder_layout='{layout}' (--folder-layout {layout})" in message
    code, _, err = run_cli("convert", str(half), str(tmp_path / "h.h5"))
    assert code == 2 and err.count("\n") == 1 and "--folder-layout features" in err
    code, _, err = run_cli("convert", str(half), str(tmp_path / "h.h5"), "--folder-layout", "features", "--quiet")
    assert code == 0, err
    with h5ml.open(tmp_path / "h.h5") as ds:
        assert sorted(ds["train"].features) == ["clean", "id", "train"]
    with pytest.raises(
        ValueError, match=r"folder_layout must be one of \['auto', 'splits', 'features', 'split-files'\]"
    ):
        h5ml.ingest.convert_audio_folder(half, tmp_path / "x.h5", folder_layout="classes")  # type: ignore[arg-type]


def test_the_wrong_kind_of_folder_says_what_it_holds(tmp_path: Path) -> None:
    """--from audio on an image folder (with split folders: it used to end 'nothing to write to x.h5:' and nothing
    after) says what it found and which --from it suggests; --from images on an audio folder too."""
    images = tmp_path / "pets"
    for split in ("train", "test"):
        _pngs(images / split / "cat", 3, 0)
        _pngs(images / split / "dog", 3, 1)
    code, stdout, err = run_cli("convert", str(images), str(tmp_path / "x.h5"), "--from", "audio")
    assert (code, stdout) == (2, "") and err.count("\n") == 1
    assert "no audio files found" in err
    assert "found 12 .png file(s); did you mean --from images (convert_image_folder)?" in err
    audio = tmp_path / "speech"
    _wavs(audio / "noisy", ["1", "2"], 0)
    _wavs(audio / "clean", ["1", "2"], 1)
    (audio / "README.txt").write_text("pairs\n")
    with pytest.raises(IngestError) as caught:
        h5ml.ingest.convert_image_folder(audio, tmp_path / "y.h5", size=(6, 5))
    message = str(caught.value)
    assert "no image file to convert" in message
    assert "found 4 .wav file(s), 1 .txt file(s); did you mean --from audio (convert_audio_folder)?" in message
    assert not (tmp_path / "x.h5").exists() and not (tmp_path / "y.h5").exists()


def test_the_folder_layout_option_offers_every_folder_kinds_values() -> None:
    """--folder-layout takes exactly the values of the image and the audio converters, together."""
    from typing import get_args

    import click

    from h5ml.ingest.audio import AudioLayout
    from h5ml.ingest.images import FolderLayout
    from h5ml.tools.commands.convert import convert_command

    (option,) = [p for p in convert_command.params if p.name == "folder_layout"]
    assert isinstance(option.type, click.Choice)
    assert set(option.type.choices) == set(get_args(FolderLayout)) | set(get_args(AudioLayout))
