"""Tests of h5ml.ingest.audio: folders of real speech (espeak-ng, sox) into ragged audio features (§6.3, §6.1, §7.6).

The speech is produced at test time by espeak-ng (22050 Hz mono 16-bit WAV)
and turned into input/target pairs, other rates, stereo, FLAC and Ogg Vorbis
by sox; every stored value is compared with soundfile's own decoding of the
file it came from.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path

import h5py
import numpy as np
import numpy.typing as npt
import pytest
import soundfile
import soxr

import h5ml
from h5ml.errors import IngestError
from h5ml.ingest import SKIPPED_ATTR
from h5ml.ingest.audio import common_dtype, convert_audio_folder, pair_roles, subtype_dtype
from h5ml.ingest.splitting import assign_splits

_MISSING = [tool for tool in ("espeak-ng", "sox") if shutil.which(tool) is None]
needs_tools = pytest.mark.skipif(
    bool(_MISSING) and not os.environ.get("CI"),
    reason=f"{' and '.join(_MISSING)} not installed (Debian packages espeak-ng, sox): they make the real speech these "
    "tests convert; under CI (CI set) the tests run and fail instead",
)

#: Sentence per sample id: lengths differ, so the samples are ragged.
SENTENCES = {
    "1": "Hello there.",
    "2": "The quick brown fox jumps over the lazy dog.",
    "3": "One, two, three.",
    "10": "Speech enhancement removes the noise and keeps the voice.",
    "11": "Short.",
}


def _run(*args: str | Path) -> None:
    subprocess.run([str(a) for a in args], check=True, capture_output=True)


@pytest.fixture(scope="module")
def speech(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Path]]:
    """``{id: {"clean": espeak-ng speech, "noisy": the same with sox's reverb}}``: real 22050 Hz 16-bit pairs."""
    base = tmp_path_factory.mktemp("speech")
    out: dict[str, dict[str, Path]] = {}
    for sample_id, text in SENTENCES.items():
        clean, noisy = base / f"clean-{sample_id}.wav", base / f"noisy-{sample_id}.wav"
        _run("espeak-ng", "-w", clean, text)
        _run("sox", "-R", clean, noisy, "reverb", "50")
        out[sample_id] = {"clean": clean, "noisy": noisy}
    return out


def _tree(root: Path, files: Mapping[str, Path]) -> Path:
    """Copy ``{relative path: source file}`` under ``root``; return ``root``."""
    for rel, source in files.items():
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
    return root


def _pairs(root: Path, speech: Mapping[str, Mapping[str, Path]], splits: Mapping[str, list[str]]) -> Path:
    """ROOT/<split>/{noisy,clean}/<id>.wav for the given ids of each split."""
    return _tree(
        root,
        {
            f"{split}/{kind}/{i}.wav": speech[i][kind]
            for split, ids in splits.items()
            for i in ids
            for kind in speech[i]
        },
    )


PAIR_SPLITS = {"train": ["10", "2", "1"], "test": ["11", "3"]}


def _ids(ds: h5ml.Dataset, split: str) -> list[str]:
    return list(ds[split]["id"][:].tolist())


def _assert_strictly_valid(path: Path) -> None:
    report = h5ml.validate(path, deep=True)
    assert [(i.code, i.message) for i in report.issues if i.severity.value != "info"] == []


def _decoded(path: Path, dtype: str) -> npt.NDArray[np.generic]:
    return np.asarray(soundfile.read(path, dtype=dtype)[0])


# --------------------------------------------------------------------------
# rules (no audio needed)


def test_subtype_and_common_dtype_rules() -> None:
    assert [subtype_dtype(s) for s in ("PCM_U8", "PCM_16", "ULAW", "PCM_24", "PCM_32", "FLOAT", "DOUBLE")] == [
        "int16",
        "int16",
        "int16",
        "int32",
        "int32",
        "float32",
        "float64",
    ]
    assert subtype_dtype("VORBIS") == subtype_dtype("OPUS") == "float32"
    assert common_dtype(["int16", "int16"]) == "int16"
    assert common_dtype(["int16", "int32"]) == "int32"
    assert common_dtype(["int16", "float32"]) == "float32"
    assert common_dtype(["int32", "float32"]) == common_dtype(["float32", "float64"]) == "float64"
    with pytest.raises(ValueError, match="at least one"):
        common_dtype([])


def test_pair_roles_rule() -> None:
    assert pair_roles(["clean", "noisy"]) == {"noisy": "input", "clean": "target"}
    assert pair_roles(["Data", "Label"]) == {"Data": "input", "Label": "target"}
    assert pair_roles(["data", "speech"]) == {"data": "input", "speech": "target"}
    assert pair_roles(["mixture", "y"]) == {"mixture": "input", "y": "target"}
    assert pair_roles(["x", "data"]) == {}  # two inputs
    assert pair_roles(["left", "right"]) == {}  # neither recognised
    assert pair_roles(["noisy", "clean", "mix"]) == {}  # not a pair
    assert pair_roles(["input"]) == {"input": "input"}  # one signal named as an input
    assert pair_roles(["Noisy"]) == {"Noisy": "input"}
    assert pair_roles(["clean"]) == {}  # the target of nothing
    assert pair_roles(["speech"]) == {}


# --------------------------------------------------------------------------
# conversions of real speech


@needs_tools
def test_pairs_round_trip_bit_exact(speech: dict[str, dict[str, Path]], tmp_path: Path) -> None:
    """ROOT/<split>/<feature>/<id>.wav: int16 values equal soundfile's, ids natural, rate and roles recorded."""
    root = _pairs(tmp_path / "speech", speech, PAIR_SPLITS)
    out = tmp_path / "speech.h5"
    report = convert_audio_folder(root, out)
    assert report.samples == {"train": 3, "test": 2} and report.skipped == []
    with h5ml.open(out) as ds:
        assert _ids(ds, "train") == ["1", "2", "10"] and _ids(ds, "test") == ["3", "11"]
        lengths = set()
        for split, ids in (("train", ["1", "2", "10"]), ("test", ["3", "11"])):
            for row, sample_id in enumerate(ids):
                for kind in ("noisy", "clean"):
                    stored = ds[split][kind][row]
                    expected = _decoded(root / split / kind / f"{sample_id}.wav", "int16")
                    assert stored.dtype == np.int16 and stored.shape == expected.shape
                    np.testing.assert_array_equal(stored, expected)
                    lengths.add((kind, stored.shape[0]))
        assert len(lengths) == 10  # ragged: every sentence has its own length
        for kind, role in (("noisy", "input"), ("clean", "target")):
            feature = ds["train"][kind]
            assert (feature.encoding, feature.role, feature.sample_rate) == ("ragged", role, 22050.0)
        assert ds["test"]["id"].role == "metadata" and ds["test"]["id"].encoding == "string"
        assert ds.attrs["license"] == "NOASSERTION" and ds.attrs["source"] == str(root)
    with h5py.File(out, "r") as f:
        # no per-sample datasets: the two components and their chunk checksums (SPEC §8.4)
        assert sorted(f["train/clean"].keys()) == ["_crc32c.offsets", "_crc32c.values", "offsets", "values"]
        assert f["train/clean/offsets"][-1] == f["train/clean/values"].shape[0]
    _assert_strictly_valid(out)


@needs_tools
def test_workers_two_writes_the_same_content(speech: dict[str, dict[str, Path]], tmp_path: Path) -> None:
    """Decoding in two processes gives the same values, attributes and fingerprints as in this process."""
    root = _pairs(tmp_path / "speech", speech, PAIR_SPLITS)
    one, two = tmp_path / "one.h5", tmp_path / "two.h5"
    convert_audio_folder(root, one, workers=1, compression="gzip")
    convert_audio_folder(root, two, workers=2, compression="gzip")
    with h5ml.open(one) as a, h5ml.open(two) as b:
        assert a.fingerprint is not None and a.fingerprint == b.fingerprint
        for split in ("train", "test"):
            assert a[split].features.keys() == b[split].features.keys() == {"id", "noisy", "clean"}
            for name in ("noisy", "clean"):
                fa, fb = a[split][name], b[split][name]
                assert fa.attrs == fb.attrs and fa.compression == fb.compression == "gzip"
                for row in range(len(fa)):
                    np.testing.assert_array_equal(fa[row], fb[row])
            assert _ids(a, split) == _ids(b, split)
    _assert_strictly_valid(two)


@needs_tools
def test_shuffle_with_seed_follows_the_permutation(speech: dict[str, dict[str, Path]], tmp_path: Path) -> None:
    root = _pairs(tmp_path / "speech", speech, {"train": list(SENTENCES)})
    out = tmp_path / "shuffled.h5"
    convert_audio_folder(root, out, shuffle=True, seed=7)
    natural = ["1", "2", "3", "10", "11"]
    with h5ml.open(out) as ds:
        assert ds["train"].shuffle_seed == 7
        ids = _ids(ds, "train")
        assert ids == [natural[i] for i in np.random.default_rng(7).permutation(5)]
        assert ids != natural
        for row, sample_id in enumerate(ids):
            np.testing.assert_array_equal(
                ds["train"]["clean"][row], _decoded(root / "train" / "clean" / f"{sample_id}.wav", "int16")
            )
    _assert_strictly_valid(out)


@needs_tools
def test_two_rates_need_sample_rate(speech: dict[str, dict[str, Path]], tmp_path: Path) -> None:
    """A 16000 Hz file among 22050 Hz ones: refused naming both, skipped on request, or resampled with soxr."""
    root = _pairs(tmp_path / "speech", speech, PAIR_SPLITS)
    for rel in ("train/clean/2.wav", "test/noisy/11.wav"):
        resampled = tmp_path / "resampled.wav"
        _run("sox", root / rel, "-r", "16000", resampled)
        shutil.move(resampled, root / rel)
    assert soundfile.info(root / "train/clean/2.wav").samplerate == 16000
    out = tmp_path / "rates.h5"

    with pytest.raises(IngestError) as caught:
        convert_audio_folder(root, out)
    message = str(caught.value)
    assert caught.value.path == str(root / "train/clean/2.wav")
    assert str(root / "train/clean/2.wav") in message and str(root / "test/clean/3.wav") in message
    assert "16000 Hz" in message and "22050 Hz" in message and "--sample-rate" in message
    assert not out.exists()

    report = convert_audio_folder(root, out, on_error="skip")
    assert {s.path for s in report.skipped} == {str(root / "train/clean/2.wav"), str(root / "test/noisy/11.wav")}
    with h5ml.open(out) as ds:
        assert _ids(ds, "train") == ["1", "10"] and _ids(ds, "test") == ["3"]
        assert ds["train"]["clean"].sample_rate == 22050.0
    _assert_strictly_valid(out)

    report = convert_audio_folder(root, out, sample_rate=16000, overwrite=True)
    assert report.samples == {"train": 3, "test": 2} and report.skipped == []
    with h5ml.open(out) as ds:
        for split, ids in (("train", ["1", "2", "10"]), ("test", ["3", "11"])):
            for row, sample_id in enumerate(ids):
                for kind in ("noisy", "clean"):
                    path = root / split / kind / f"{sample_id}.wav"
                    decoded = _decoded(path, "float32")
                    rate = soundfile.info(path).samplerate
                    expected = decoded if rate == 16000 else soxr.resample(decoded, rate, 16000)
                    stored = ds[split][kind][row]
                    assert stored.dtype == np.float32
                    np.testing.assert_array_equal(stored, expected)
        assert ds["train"]["noisy"].sample_rate == ds["test"]["clean"].sample_rate == 16000.0
    _assert_strictly_valid(out)

    before = out.read_bytes()
    for absurd in (1e-9, 22050 * 300):  # the files are at 22050 and 16000 Hz
        # soxr never finishes raising 1 Hz to 1 MHz, and takes seconds per clip lowering 768 kHz to 1 Hz
        with pytest.raises(
            ValueError, match=re.escape("more than 256x; choose a rate between 86.1328 and 4.096e+06 Hz")
        ):
            convert_audio_folder(root, out, sample_rate=absurd, overwrite=True)
    assert out.read_bytes() == before


@needs_tools
def test_a_lone_input_folder_gets_the_input_role(speech: dict[str, dict[str, Path]], tmp_path: Path) -> None:
    """ROOT/<split>/input/<id>.wav alone: the feature has role input (as the docs say), so the adapters find it."""
    root = _tree(tmp_path / "words", {f"train/input/{i}.wav": speech[i]["noisy"] for i in ("1", "2", "3")})
    out = tmp_path / "words.h5"
    assert convert_audio_folder(root, out).samples == {"train": 3}
    with h5ml.open(out) as ds:
        assert ds["train"]["input"].role == "input" and ds["train"]["id"].role == "metadata"
        np.testing.assert_array_equal(ds["train"]["input"][1], _decoded(root / "train/input/2.wav", "int16"))
    _assert_strictly_valid(out)


@needs_tools
def test_stereo_channels_and_mono_downmix(speech: dict[str, dict[str, Path]], tmp_path: Path) -> None:
    """ROOT/<feature>/<id>.wav with stereo files: kept as (frames, 2), refused among mono, averaged with mono=True."""
    stereo = tmp_path / "stereo-sources"
    stereo.mkdir()
    _run("sox", "-M", speech["2"]["clean"], speech["2"]["noisy"], stereo / "2.wav")  # two different channels
    _run("sox", speech["10"]["clean"], "-c", "2", stereo / "10.wav")
    sources = {i: speech[i]["clean"] for i in ("1", "3", "11")} | {i: stereo / f"{i}.wav" for i in ("2", "10")}
    root = _tree(tmp_path / "voices", {f"speech/{i}.wav": path for i, path in sources.items()})

    only_stereo = _tree(tmp_path / "only-stereo", {f"speech/{i}.wav": stereo / f"{i}.wav" for i in ("2", "10")})
    out = tmp_path / "stereo.h5"
    assert convert_audio_folder(only_stereo, out).samples == {"train": 2}
    with h5ml.open(out) as ds:
        assert _ids(ds, "train") == ["2", "10"] and ds["train"]["speech"].role is None
        for row, sample_id in enumerate(["2", "10"]):
            stored = ds["train"]["speech"][row]
            assert stored.dtype == np.int16 and stored.ndim == 2 and stored.shape[1] == 2
            np.testing.assert_array_equal(stored, _decoded(only_stereo / "speech" / f"{sample_id}.wav", "int16"))
    _assert_strictly_valid(out)

    out = tmp_path / "mono.h5"
    with pytest.raises(IngestError) as caught:
        convert_audio_folder(root, out)
    message = str(caught.value)
    assert str(root / "speech/2.wav") in message and str(root / "speech/1.wav") in message
    assert "2 channel(s)" in message and "1 channel(s)" in message and "--mono" in message
    assert not out.exists()

    ratios = {"train": 0.6, "test": 0.4}
    report = convert_audio_folder(root, out, mono=True, split_ratios=ratios, seed=3)
    natural = ["1", "2", "3", "10", "11"]
    assigned = assign_splits(5, ratios, 3)
    expected_ids = {split: [i for i, s in zip(natural, assigned, strict=True) if s == split] for split in ratios}
    assert report.samples == {split: len(ids) for split, ids in expected_ids.items()} == {"train": 3, "test": 2}
    with h5ml.open(out) as ds:
        for split, ids in expected_ids.items():
            assert _ids(ds, split) == ids
            for row, sample_id in enumerate(ids):
                frames = soundfile.read(root / "speech" / f"{sample_id}.wav", dtype="float32", always_2d=True)[0]
                stored = ds[split]["speech"][row]
                assert stored.dtype == np.float32 and stored.ndim == 1
                np.testing.assert_array_equal(stored, np.mean(frames, axis=1, dtype=np.float32))
        assert ds["train"]["speech"].sample_rate == 22050.0
    _assert_strictly_valid(out)


@needs_tools
def test_flac_ogg_and_mixed_subtypes(speech: dict[str, dict[str, Path]], tmp_path: Path) -> None:
    """FLAC (int16), Ogg Vorbis (float32) and a folder mixing 16-bit and float WAV (float32) equal soundfile's."""
    root = tmp_path / "formats"
    for folder in ("flac", "ogg", "mixed"):
        (root / folder).mkdir(parents=True)
    for sample_id in ("1", "2"):
        source = speech[sample_id]["clean"]
        _run("sox", source, root / "flac" / f"{sample_id}.flac")
        _run("sox", source, "-t", "ogg", root / "ogg" / f"{sample_id}.OGG")  # extensions are case-insensitive
    shutil.copyfile(speech["1"]["clean"], root / "mixed" / "1.wav")
    _run("sox", speech["2"]["clean"], "-e", "floating-point", "-b", "32", root / "mixed" / "2.wav")
    assert soundfile.info(root / "ogg" / "1.OGG").subtype == "VORBIS"
    assert soundfile.info(root / "mixed" / "2.wav").subtype == "FLOAT"
    out = tmp_path / "formats.h5"
    assert convert_audio_folder(root, out).samples == {"train": 2}
    files = {"flac": ("{}.flac", "int16"), "ogg": ("{}.OGG", "float32"), "mixed": ("{}.wav", "float32")}
    with h5ml.open(out) as ds:
        assert _ids(ds, "train") == ["1", "2"]
        for name, (pattern, dtype) in files.items():
            feature = ds["train"][name]
            assert feature.dtype == np.dtype(dtype) and feature.role is None and feature.sample_rate == 22050.0
            for row, sample_id in enumerate(["1", "2"]):
                np.testing.assert_array_equal(feature[row], _decoded(root / name / pattern.format(sample_id), dtype))
    _assert_strictly_valid(out)


@needs_tools
def test_bad_files_stop_or_skip(speech: dict[str, dict[str, Path]], tmp_path: Path) -> None:
    """A .wav of random bytes and a file without counterpart: stop names them and writes nothing; skip records them."""
    root = _pairs(tmp_path / "speech", speech, {"train": ["1", "2", "3", "10"]})
    garbage = root / "train" / "noisy" / "5.wav"
    garbage.write_bytes(np.random.default_rng(0).bytes(4000))
    shutil.copyfile(speech["11"]["clean"], root / "train" / "clean" / "5.wav")
    lonely = root / "train" / "clean" / "7.wav"
    shutil.copyfile(speech["11"]["clean"], lonely)
    out = tmp_path / "bad.h5"

    report = convert_audio_folder(root, out, on_error="skip")
    assert report.samples == {"train": 4}
    assert [s.path for s in report.skipped] == [str(lonely), str(garbage)]
    assert str(root / "train" / "noisy" / "7.wav") in report.skipped[0].reason
    assert "soundfile cannot read it" in report.skipped[1].reason
    with h5ml.open(out) as ds:
        assert _ids(ds, "train") == ["1", "2", "3", "10"]
        assert json.loads(ds.attrs[SKIPPED_ATTR]) == [s.to_json() for s in report.skipped]
    _assert_strictly_valid(out)

    before = out.read_bytes()
    with pytest.raises(IngestError) as caught:
        convert_audio_folder(root, out, overwrite=True)
    assert caught.value.path == str(lonely)
    assert str(lonely) in str(caught.value) and str(root / "train" / "noisy" / "7.wav") in str(caught.value)
    assert "on_error='skip'" in str(caught.value)
    assert out.read_bytes() == before

    lonely.unlink()
    with pytest.raises(IngestError) as caught:
        convert_audio_folder(root, out, overwrite=True)
    assert caught.value.path == str(garbage) and str(garbage) in str(caught.value)
    assert out.read_bytes() == before

    second = root / "train" / "noisy" / "3.wav"
    second.write_bytes(np.random.default_rng(1).bytes(4000))
    with pytest.raises(IngestError) as caught:  # the first bad file, and the others by name
        convert_audio_folder(root, out, overwrite=True)
    assert caught.value.path == str(second)
    assert f"(1 other file(s) have problems of this kind: {garbage})" in str(caught.value)
    assert out.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.h5", "speech"]  # no temporary file left behind


@needs_tools
def test_layouts_that_are_refused(speech: dict[str, dict[str, Path]], tmp_path: Path) -> None:
    wav = speech["1"]["clean"]
    out = tmp_path / "out.h5"
    cases = {
        "loose": ({"1.wav": wav, "data/1.wav": wav}, "directly in"),
        "mixed": ({"train/data/1.wav": wav, "clean/1.wav": wav}, "use one layout"),
        "nested": ({"train/data/deeper/1.wav": wav, "train/data/2.wav": wav}, "not folders"),
        "both": ({"data/deeper/1.wav": wav, "data/2.wav": wav}, "holds both folders and audio files"),
        "id": ({"id/1.wav": wav, "data/1.wav": wav}, "may not be named 'id'"),
        "reserved": ({"_data/1.wav": wav}, "rename the folder"),
        "duplicate": ({"data/1.wav": wav, "data/1.flac": wav}, "have the same id '1'"),
        "empty": ({"data/notes.txt": wav}, "no audio files found"),
    }
    for name, (files, needle) in cases.items():
        root = _tree(tmp_path / name, files)
        with pytest.raises(IngestError, match=needle):
            convert_audio_folder(root, out)
        assert not out.exists()
    root = _tree(tmp_path / "splits", {"train/data/1.wav": wav})
    with pytest.raises(ValueError, match="already has splits"):
        convert_audio_folder(root, out, split_ratios={"train": 0.5, "test": 0.5})
    with pytest.raises(ValueError, match="sample_rate"):
        convert_audio_folder(root, out, sample_rate=0)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        convert_audio_folder(tmp_path / "nowhere", out)
    out.write_bytes(b"keep")
    with pytest.raises(FileExistsError, match="overwrite"):
        convert_audio_folder(root, out)
    assert out.read_bytes() == b"keep"


def test_truncated_wav_is_refused_not_stored_short(tmp_path: Path) -> None:
    """A WAV cut off after its header (an interrupted copy) is an error naming it, or skipped; never a short clip."""
    rng = np.random.default_rng(4)
    for feature in ("noisy", "clean"):
        for i in (1, 2):
            folder = tmp_path / "wavs" / "train" / feature
            folder.mkdir(parents=True, exist_ok=True)
            soundfile.write(
                folder / f"{i}.wav", rng.integers(-999, 999, 6400).astype(np.int16), 16000, subtype="PCM_16"
            )
    cut = tmp_path / "wavs" / "train" / "noisy" / "2.wav"
    cut.write_bytes(cut.read_bytes()[:100])
    with pytest.raises(h5ml.IngestError, match=r"2\.wav.*truncated: its header declares 12800 bytes .* only 56"):
        convert_audio_folder(tmp_path / "wavs", tmp_path / "out.h5")
    assert not (tmp_path / "out.h5").exists()
    report = convert_audio_folder(tmp_path / "wavs", tmp_path / "out.h5", on_error="skip")
    assert report.samples == {"train": 1} and [Path(s.path).name for s in report.skipped] == ["2.wav"]


def test_every_kind_of_problem_is_in_the_first_message(tmp_path: Path) -> None:
    """One run names every kind found before decoding, each with its count and examples: a missing counterpart,
    an unreadable file, sample rates and channel counts (the user used to learn of them one run at a time)."""
    rng = np.random.default_rng(6)
    root = tmp_path / "wavs"
    for feature in ("noisy", "clean"):
        (root / "train" / feature).mkdir(parents=True)
        for i in range(1, 7):
            rate = 16000 if (feature, i) in (("clean", 2), ("clean", 3)) else 8000
            frames = rng.integers(-999, 999, (400, 2) if (feature, i) == ("noisy", 4) else 400).astype(np.int16)
            soundfile.write(root / "train" / feature / f"{i}.wav", frames, rate, subtype="PCM_16")
    (root / "train" / "noisy" / "5.wav").write_bytes(rng.bytes(3000))
    (root / "train" / "clean" / "6.wav").unlink()
    out = tmp_path / "out.h5"
    with pytest.raises(IngestError) as caught:
        convert_audio_folder(root, out)
    message = str(caught.value)
    assert message.startswith("4 kinds of problem: missing counterpart, 1 file(s): ")
    assert f"unreadable file, 1 file(s): {root / 'train' / 'noisy' / '5.wav'}: soundfile cannot read it" in message
    assert f"sample rate, 2 file(s): {root / 'train' / 'clean' / '2.wav'}: it has 16000 Hz" in message
    assert f"(1 other file(s) have problems of this kind: {root / 'train' / 'clean' / '3.wav'})" in message
    assert f"channel count, 1 file(s): {root / 'train' / 'noisy' / '4.wav'}: it has 2 channel(s)" in message
    assert "--sample-rate" in message and "--mono" in message and "--on-error skip" in message
    assert caught.value.path == str(root / "train" / "noisy" / "6.wav") and not out.exists()
    report = convert_audio_folder(root, out, on_error="skip")
    assert report.samples == {"train": 1}
    assert sorted(Path(s.path).name for s in report.skipped) == ["2.wav", "3.wav", "4.wav", "5.wav", "6.wav"]
