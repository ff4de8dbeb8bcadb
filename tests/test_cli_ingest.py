"""The ingest commands of the command line: convert (every source kind), export, subset, merge (issue 5).

Each runs ``h5ml.tools.cli.run`` in this process on real files made here and checks
the written file, the printed summary, and that bad input gives one error line
(exit 2, no traceback) and leaves the output as it was.
"""

from __future__ import annotations

import io
import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import h5ml
from h5ml.ingest import SKIPPED_ATTR
from h5ml.ingest.dispatch import detect_kind
from h5ml.tools import cli

sf = pytest.importorskip("soundfile")
Image = pytest.importorskip("PIL.Image")


def run_cli(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = cli.run(list(args), out, err)
    return code, out.getvalue(), err.getvalue()


def _no_warnings(path: Path) -> None:
    report = h5ml.validate(path, deep=True)
    assert report.valid and not [i for i in report.issues if i.severity.value in ("error", "warning")], report.issues


def _audio_tree(root: Path) -> dict[str, np.ndarray]:
    """train/{noisy,clean}/{1,2,10}.wav at 8000 Hz, int16, different lengths; returns clean clips by id."""
    rng = np.random.default_rng(0)
    clean = {}
    for i, length in ((1, 800), (2, 1200), (10, 400)):
        clip = rng.integers(-20000, 20000, size=length, dtype=np.int16)
        clean[str(i)] = clip
        for feature, data in (("clean", clip), ("noisy", (clip // 2).astype(np.int16))):
            folder = root / "train" / feature
            folder.mkdir(parents=True, exist_ok=True)
            sf.write(folder / f"{i}.wav", data, 8000, subtype="PCM_16")
    return clean


def test_convert_audio_folder_detected_and_bad_file(tmp_path: Path) -> None:
    """A folder of WAV pairs converts by detection (ids in natural order); a broken WAV stops (exit 2) or is skipped."""
    root = tmp_path / "wavs"
    clean = _audio_tree(root)
    assert detect_kind(root) == "audio"
    out = tmp_path / "speech.h5"
    code, stdout, err = run_cli("convert", str(root), str(out), "--quiet")
    assert (code, stdout, err) == (0, "", "")
    with h5ml.open(out) as ds:
        train = ds["train"]
        assert list(train["id"][:]) == ["1", "2", "10"]
        assert train["clean"].sample_rate == 8000 and train["clean"].role == "target"
        assert all(np.array_equal(train["clean"][k], clean[i]) for k, i in enumerate(["1", "2", "10"]))
    _no_warnings(out)
    (root / "train" / "noisy" / "2.wav").write_bytes(b"RIFF not really a wave file")
    code, stdout, err = run_cli("convert", str(root), str(out), "--overwrite")
    assert code == 2 and err.startswith("h5ml: error: ") and "2.wav" in err and "Traceback" not in err
    with h5ml.open(out) as ds:
        assert len(ds["train"]) == 3  # the previous output is untouched
    code, stdout, err = run_cli("convert", str(root), str(out), "--overwrite", "--on-error", "skip", "--workers", "2")
    assert code == 0 and "skipped 1 source file(s), row(s) or record(s)" in stdout and "2.wav" in stdout
    with h5ml.open(out) as ds:
        assert list(ds["train"]["id"][:]) == ["1", "10"]
        skipped = json.loads(ds.metadata.extra[SKIPPED_ATTR])
        assert [Path(s["path"]).name for s in skipped] == ["2.wav"]


def test_convert_audio_in_worker_processes_writes_the_same_file_content(tmp_path: Path) -> None:
    """--workers 2 --processes decodes in processes; the file holds what threads write (same fingerprint, §8.3)."""
    root = tmp_path / "wavs"
    _audio_tree(root)
    (root / "train" / "clean" / "2.wav").write_bytes(b"RIFF truncated")
    threads, processes = tmp_path / "threads.h5", tmp_path / "processes.h5"
    common = ("--quiet", "--on-error", "skip", "--workers", "2")
    assert run_cli("convert", str(root), str(threads), *common)[0] == 0
    assert run_cli("convert", str(root), str(processes), *common, "--processes")[0] == 0
    with h5ml.open(threads) as a, h5ml.open(processes) as b:
        assert a.fingerprint == b.fingerprint and list(b["train"]["id"][:]) == ["1", "10"]
        assert [Path(s["path"]).name for s in json.loads(b.metadata.extra[SKIPPED_ATTR])] == ["2.wav"]
    # --processes applies to every kind (an HDF5 file here): what stops this one is that it is h5ml already
    code, _, err = run_cli("convert", str(tmp_path / "threads.h5"), str(tmp_path / "x.h5"), "--processes")
    assert code == 2 and "already an h5ml file" in err and "Traceback" not in err


def test_convert_image_folder_with_split_ratios(tmp_path: Path) -> None:
    """ROOT/<class>/<file> with --split-ratios train=0.5,test=0.5 --size: dense images, every class in both splits."""
    rng = np.random.default_rng(1)
    pixels = {}
    for cls in ("cat", "dog"):
        (tmp_path / "img" / cls).mkdir(parents=True)
        for i in range(4):
            array = rng.integers(0, 256, size=(6, 5, 3), dtype=np.uint8)
            Image.fromarray(array).save(tmp_path / "img" / cls / f"{i}.png")
            pixels[f"{cls}/{i}.png"] = array
    out = tmp_path / "pets.h5"
    code, _, err = run_cli(
        "convert", str(tmp_path / "img"), str(out), "--split-ratios", "train=0.5,test=0.5", "--size", "5x6", "--seed", "3",
        "--no-progress",
    )  # fmt: skip
    assert code == 0, err
    with h5ml.open(out) as ds:
        for split in ("train", "test"):
            labels = ds[split]["label"][:]
            assert sorted(labels.tolist()) == [0, 0, 1, 1]
            assert ds[split]["label"].class_names == ["cat", "dog"] and ds[split].shuffle_seed == 3
            for k, ident in enumerate(ds[split]["id"][:]):
                assert np.array_equal(ds[split]["image"][k], pixels[ident])
    _no_warnings(out)


def test_convert_table_export_subset_merge(tmp_path: Path) -> None:
    """A CSV converts with --label; export to npz and parquet; subset and merge write conforming files."""
    csv = tmp_path / "iris.csv"
    csv.write_text("width,length,kind\n1.5,3.0,b\n2.5,1.0,a\n0.5,2.0,b\n3.5,4.0,a\n")
    out = tmp_path / "iris.h5"
    code, _, err = run_cli("convert", str(csv), str(out), "--label", "kind", "--license", "CC0-1.0", "--quiet")
    assert code == 0, err
    with h5ml.open(out) as ds:
        assert ds["train"]["kind"].class_names == ["a", "b"] and ds["train"]["kind"][:].tolist() == [1, 0, 1, 0]
        assert ds["train"]["width"][:].tolist() == [1.5, 2.5, 0.5, 3.5] and ds.metadata.license == "CC0-1.0"
    _no_warnings(out)
    code, stdout, _ = run_cli("export", str(out), str(tmp_path / "iris.npz"))
    assert code == 0 and "iris.npz" in stdout
    with np.load(tmp_path / "iris.npz") as npz:
        assert npz["width_train"].tolist() == [1.5, 2.5, 0.5, 3.5]
    code, _, err = run_cli("export", str(out), str(tmp_path / "iris.parquet"), "--split", "train")
    assert code == 0, err
    pq = pytest.importorskip("pyarrow.parquet")
    assert pq.read_table(tmp_path / "iris.parquet").column("length").to_pylist() == [3.0, 1.0, 2.0, 4.0]
    code, _, err = run_cli("subset", str(out), str(tmp_path / "half.h5"), "--samples", "1:3", "--feature", "width")
    assert code == 0, err
    with h5ml.open(tmp_path / "half.h5") as ds:
        assert list(ds["train"].features) == ["width"] and ds["train"]["width"][:].tolist() == [2.5, 0.5]
    copy = tmp_path / "copy.h5"
    copy.write_bytes(out.read_bytes())
    code, _, err = run_cli("merge", str(out), str(copy), "-o", str(tmp_path / "twice.h5"))
    assert code == 0, err
    with h5ml.open(tmp_path / "twice.h5") as ds:
        assert ds["train"]["length"][:].tolist() == [3.0, 1.0, 2.0, 4.0] * 2
    _no_warnings(tmp_path / "twice.h5")
    code, _, err = run_cli("merge", str(out), str(tmp_path / "half.h5"), "-o", str(tmp_path / "bad.h5"))
    assert code == 2 and "Traceback" not in err and not (tmp_path / "bad.h5").exists()


def test_merge_refuses_shared_sample_ids(tmp_path: Path) -> None:
    """Two conversions of audio folders that hold the same file ids: merge stops (exit 2, one error line naming
    both files, the split, the feature and the id); --allow-duplicate-ids merges; --id-feature picks the feature."""
    _audio_tree(tmp_path / "one")
    _audio_tree(tmp_path / "two")
    (tmp_path / "two" / "train" / "clean" / "1.wav").unlink()
    (tmp_path / "two" / "train" / "noisy" / "1.wav").unlink()
    first, second, out = tmp_path / "one.h5", tmp_path / "two.h5", tmp_path / "both.h5"
    for root, path in ((tmp_path / "one", first), (tmp_path / "two", second)):
        code, _, err = run_cli("convert", str(root), str(path), "--quiet")
        assert code == 0, err
    code, _, err = run_cli("merge", str(first), str(second), "-o", str(out))
    assert code == 2 and "Traceback" not in err and not out.exists()
    assert err.startswith(
        f"h5ml: error: cannot merge {first} and {second}: split 'train' holds the sample id '2' (feature 'id') in both, "
        f"at row 1 of {first} and row 0 of {second}; 2 sample(s) of {second} have ids that earlier files hold."
    )
    code, _, err = run_cli("merge", str(first), str(second), "-o", str(out), "--id-feature", "clean")
    assert code == 2 and "has no string or integer-scalar feature 'clean'" in err  # clips are not ids
    assert not out.exists()
    code, _, err = run_cli("merge", str(first), str(second), "-o", str(out), "--allow-duplicate-ids", "--overwrite")
    assert code == 0, err
    with h5ml.open(out) as ds:
        assert ds["train"]["id"][:].tolist() == ["1", "2", "10", "2", "10"]
    _no_warnings(out)


def test_progress_bars_render(tmp_path: Path) -> None:
    """--progress draws rich bars (samples/s, time left) for convert and merge, from the first sample on."""
    import subprocess
    import sys

    table = tmp_path / "t.csv"
    table.write_text("a,b\n1,x\n2,y\n3,z\n", encoding="utf-8")
    root = tmp_path / "wavs"
    _audio_tree(root)
    h5ml_cli = [sys.executable, "-c", "from h5ml.tools.cli import main; main()"]
    for args in (
        ["convert", str(table), str(tmp_path / "t.h5"), "--progress"],
        ["convert", str(table), str(tmp_path / "t2.h5"), "--progress"],
        ["convert", str(root), str(tmp_path / "a.h5"), "--progress", "--workers", "2"],
        ["merge", str(tmp_path / "t.h5"), str(tmp_path / "t2.h5"), "-o", str(tmp_path / "m.h5"), "--progress"],
    ):
        done = subprocess.run(
            [*h5ml_cli, *args], capture_output=True, text=True, timeout=120, env={**os.environ, "COLUMNS": "120"}
        )
        assert done.returncode == 0, done.stderr
        assert "samples/s" in done.stderr and "Traceback" not in done.stderr, done.stderr


def test_sigterm_stops_a_conversion_as_ctrl_c_does(tmp_path: Path) -> None:
    """SIGTERM to `h5ml convert --processes`: exit 130, no temporary file, no worker process left behind (§4.4)."""
    import signal
    import subprocess
    import sys
    import time

    psutil = pytest.importorskip("psutil")
    rng = np.random.default_rng(3)
    root = tmp_path / "long"
    for feature in ("noisy", "clean"):
        (root / "train" / feature).mkdir(parents=True)
    for i in range(150):
        clip = rng.integers(-9000, 9000, 48000, dtype=np.int16)
        for feature in ("noisy", "clean"):
            sf.write(root / "train" / feature / f"{i}.wav", clip, 16000, subtype="PCM_16")
    out = tmp_path / "out.h5"
    args = ["convert", str(root), str(out), "--workers", "2", "--processes", "--sample-rate", "44100", "--quiet"]
    proc = subprocess.Popen(
        [sys.executable, "-c", "from h5ml.tools.cli import main; main()", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 60
        children: list[Any] = []
        while time.monotonic() < deadline and not (children and list(tmp_path.glob(".out.h5.h5ml-tmp-*"))):
            children = psutil.Process(proc.pid).children(recursive=True)
            time.sleep(0.05)
        assert children and list(tmp_path.glob(".out.h5.h5ml-tmp-*")), "the conversion did not start its workers"
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130 and "h5ml: interrupted" in err and "Traceback" not in err, err
    assert not out.exists() and not list(tmp_path.glob(".out.h5.h5ml-tmp-*"))
    _, alive = psutil.wait_procs(children, timeout=30)
    assert alive == [], [p.cmdline() for p in alive]


def test_compression_none_and_quiet_apply_to_every_command(tmp_path: Path) -> None:
    """subset and merge take --compression none; --quiet works for .npz sources too (no bar to hide)."""
    arrays = tmp_path / "a.npz"
    np.savez(arrays, x_train=np.arange(12.0).reshape(6, 2), y_train=np.arange(6))
    first, second = tmp_path / "1.h5", tmp_path / "2.h5"
    assert run_cli("convert", str(arrays), str(first), "--quiet", "--compression", "gzip") == (0, "", "")
    assert run_cli("convert", str(arrays), str(second), "--quiet", "--no-progress")[0] == 0
    code, _, err = run_cli("subset", str(first), str(tmp_path / "s.h5"), "--compression", "none", "--samples", "0:3")
    assert code == 0, err
    code, _, err = run_cli("merge", str(first), str(second), "-o", str(tmp_path / "m.h5"), "--compression", "none")
    assert code == 0, err
    with h5ml.open(tmp_path / "s.h5") as s, h5ml.open(tmp_path / "m.h5") as m:
        assert s["train"]["x"].compression is None and m["train"]["x"].compression is None
        assert len(s["train"]) == 3 and len(m["train"]) == 12
        assert m["train"]["x"][:].tolist() == np.concatenate([np.arange(12.0).reshape(6, 2)] * 2).tolist()


def test_options_of_another_source_kind_and_missing_extras_are_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An option the source kind does not take is named as the CLI spells it; a missing extra says what to install."""
    import sys

    from h5ml.ingest import dispatch

    arrays = tmp_path / "a.npz"
    np.savez(arrays, x=np.arange(6.0), y=np.arange(6))
    code, _, err = run_cli("convert", str(arrays), str(tmp_path / "a.h5"), "--split-ratios", "train=0.5,test=0.5")
    assert code == 2 and "split_ratios (--split-ratios) do(es) not apply to a source of kind 'arrays'" in err
    root = tmp_path / "wavs"
    _audio_tree(root)
    monkeypatch.setitem(sys.modules, "soundfile", None)  # as if h5ml[audio] were not installed
    monkeypatch.delitem(sys.modules, "h5ml.ingest.audio", raising=False)
    with pytest.raises(ModuleNotFoundError, match=r"needs the package 'soundfile'.*pip install 'h5ml\[audio\]'"):
        dispatch.convert("audio", root, tmp_path / "w.h5")
    assert not (tmp_path / "w.h5").exists()


def test_the_convert_options_offer_the_converters_own_values() -> None:
    """The --from, --mode, --resize, --color, --resample, --folder-layout, --source-layout, --images and --on-error
    choices are written out in h5ml.tools.commands.convert (importing the converters there would slow every h5ml
    command down); they must be exactly the values the converters take."""
    from typing import get_args

    import click

    from h5ml.ingest import dispatch
    from h5ml.ingest.hf.columns import ImageColumns
    from h5ml.ingest.images import settings
    from h5ml.ingest.options import _ON_ERROR
    from h5ml.reader.imagecodec import COLORS
    from h5ml.tools.commands.convert import convert_command

    choices = {p.name: list(p.type.choices) for p in convert_command.params if isinstance(p.type, click.Choice)}
    assert choices["kind"] == ["auto", *dispatch.KINDS]
    assert choices["mode"] == list(get_args(settings.ImageMode))
    assert choices["resize"] == list(get_args(settings.ResizeMode))
    assert choices["color"] == list(COLORS)
    assert sorted(choices["resample"]) == sorted(settings._RESAMPLES)
    assert choices["folder_layout"] == list(settings.FOLDER_LAYOUTS)
    assert "source_layout" not in choices  # the HDF5 plan (--plan, --plan-file) replaced --source-layout
    assert choices["images"] == list(get_args(ImageColumns))
    assert choices["on_error"] == list(_ON_ERROR)
