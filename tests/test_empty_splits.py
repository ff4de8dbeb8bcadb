"""A split that on_error='skip' empties is refused unless allow_empty_splits (h5ml.ingest.pipeline).

Every converter writing through :func:`h5ml.ingest.pipeline.ingest` (image
and audio folders, HDF5 files) refuses a split of which every file was
skipped, naming the split, the number of files skipped and the first
reasons; ``allow_empty_splits=True`` (``--allow-empty-splits``) writes it with
no samples. The sources are real PNG and WAV files, some of them broken.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pytest

import h5ml
from h5ml.errors import IngestError, ParameterError
from h5ml.ingest import SKIPPED_ATTR
from h5ml.tools import cli

Image = pytest.importorskip("PIL.Image")
sf = pytest.importorskip("soundfile")


def run_cli(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = cli.run(list(args), out, err)
    return code, out.getvalue(), err.getvalue()


def _image_tree(root: Path) -> Path:
    """ROOT/train/cat/{0,1,2}.png (whole) and ROOT/test/cat/{0..4}.png (text files named .png)."""
    rng = np.random.default_rng(0)
    (root / "train" / "cat").mkdir(parents=True)
    (root / "test" / "cat").mkdir(parents=True)
    for k in range(3):
        Image.fromarray(rng.integers(0, 256, size=(4, 5, 3), dtype=np.uint8)).save(root / "train" / "cat" / f"{k}.png")
    for k in range(5):
        (root / "test" / "cat" / f"{k}.png").write_text(f"not a picture {k}\n")
    return root


@pytest.mark.parametrize("mode", ["dense", "bytes"])
def test_an_image_split_whose_every_file_is_skipped_is_refused(tmp_path: Path, mode: str) -> None:
    """Dense (the files fail while decoding) and bytes (they fail before): the same refusal, then the same
    empty split with allow_empty_splits=True."""
    root = _image_tree(tmp_path / "src")
    size = (5, 4) if mode == "dense" else None
    out = tmp_path / "out.h5"
    with pytest.raises(IngestError) as caught:
        h5ml.ingest.convert_image_folder(root, out, mode=mode, size=size, on_error="skip")
    message = str(caught.value)
    assert message.startswith("split 'test' would be empty: all 5 of its file(s) were skipped (")
    assert f"{root / 'test' / 'cat' / '0.png'}: not a PNG" in message and "; and 2 more)" in message
    assert "allow_empty_splits=True (--allow-empty-splits)" in message
    assert caught.value.path == str(root / "test" / "cat" / "0.png") and not out.exists()

    report = h5ml.ingest.convert_image_folder(root, out, mode=mode, size=size, on_error="skip", allow_empty_splits=True)
    assert report.samples == {"train": 3, "test": 0} and len(report.skipped) == 5
    with h5ml.open(out) as ds:
        assert ds["train"].num_samples == 3 and ds["test"].num_samples == 0
        assert len(json.loads(ds.attrs[SKIPPED_ATTR])) == 5
    assert h5ml.validate(out, deep=True).valid


def test_the_command_line_refuses_then_allows_an_empty_split(tmp_path: Path) -> None:
    """h5ml convert --on-error skip: exit 2 with one line naming the split and --allow-empty-splits; with the
    flag, exit 0 and the summary shows the split with 0 samples."""
    root = _image_tree(tmp_path / "src")
    out = tmp_path / "out.h5"
    code, stdout, err = run_cli("convert", str(root), str(out), "--size", "5x4", "--on-error", "skip")
    assert (code, stdout) == (2, "") and err.count("\n") == 1
    assert "split 'test' would be empty" in err and "--allow-empty-splits" in err and not out.exists()
    code, stdout, err = run_cli(
        "convert", str(root), str(out), "--size", "5x4", "--on-error", "skip", "--allow-empty-splits"
    )
    assert code == 0, err
    assert stdout.startswith(f"wrote {out}: train 3, test 0")
    table = tmp_path / "t.csv"
    table.write_text("a,b\n1,2\n", encoding="utf-8")
    code, _, err = run_cli("convert", str(table), str(tmp_path / "t.h5"), "--allow-empty-splits")
    assert code == 2 and "allow_empty_splits (--allow-empty-splits) do(es) not apply to a source of kind 'table'" in err


def test_an_audio_split_whose_every_file_is_unreadable_is_refused(tmp_path: Path) -> None:
    """ROOT/<split>/<feature>/<id>.wav whose test files are random bytes: refused, or written empty on request."""
    rng = np.random.default_rng(1)
    root = tmp_path / "wavs"
    for sample_id in ("1", "2"):
        (root / "train" / "speech").mkdir(parents=True, exist_ok=True)
        sf.write(root / "train" / "speech" / f"{sample_id}.wav", rng.integers(-999, 999, 400).astype(np.int16), 8000)
    (root / "test" / "speech").mkdir(parents=True)
    for sample_id in ("3", "4", "5"):
        (root / "test" / "speech" / f"{sample_id}.wav").write_bytes(rng.bytes(3000))
    out = tmp_path / "a.h5"
    with pytest.raises(IngestError) as caught:
        h5ml.ingest.convert_audio_folder(root, out, on_error="skip")
    message = str(caught.value)
    assert message.startswith("split 'test' would be empty: all 3 of its file(s) were skipped (")
    assert "soundfile cannot read it" in message and not out.exists()
    report = h5ml.ingest.convert_audio_folder(root, out, on_error="skip", allow_empty_splits=True)
    assert report.samples == {"train": 2, "test": 0}
    with h5ml.open(out) as ds:
        assert ds["test"].num_samples == 0 and ds["train"]["speech"].sample_rate == 8000.0
    assert h5ml.validate(out, deep=True).valid


def test_allow_empty_splits_is_checked_and_offered_where_it_applies(tmp_path: Path) -> None:
    """A value that is not a bool is a ParameterError naming --allow-empty-splits; kinds that do not write through
    the pipeline (tables) refuse the option by name."""
    from h5ml.ingest import dispatch
    from h5ml.ingest.options import ConvertOptions

    with pytest.raises(ParameterError, match=r"allow_empty_splits must be True or False, got 'yes' .*--allow-empty"):
        ConvertOptions(allow_empty_splits="yes")  # type: ignore[arg-type]
    table = tmp_path / "t.csv"
    table.write_text("a,b\n1,2\n", encoding="utf-8")
    with pytest.raises(ParameterError, match=r"allow_empty_splits \(--allow-empty-splits\) do\(es\) not apply"):
        dispatch.convert("table", table, tmp_path / "t.h5", allow_empty_splits=True)
