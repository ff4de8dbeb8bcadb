"""Where ``h5ml report`` writes its page: ``-o -`` (standard output), and the default name of a sharded dataset.

``-o -`` writes the page to standard output, as ``h5ml validate -o -`` and
``h5ml croissant -o -`` do, never a file named ``-``. Without ``-o``, a
sharded dataset's page goes beside its folder, named after it, the folder
found on the resolved path: ``.`` inside the folder, ``..`` below it, and an
index that is a symbolic link all name the real folder, never a hidden
``.report.html`` or the current directory's parent.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np
import pytest

import h5ml
from h5ml.tools.report import default_output
from test_report import Page, run_cli, write_media


def test_dash_writes_the_page_to_standard_output(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``-o -``: the whole page on standard output, no "wrote" line, and no file named "-" (nor any other)."""
    write_media(tmp_path / "m.h5", n=6)
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli("report", "m.h5", "-o", "-")
    assert (code, err) == (0, "")
    assert out.startswith("<!DOCTYPE html>") and out.rstrip().endswith("</html>")
    page = Page(out)
    assert "media <set>" in page.text and len(page.all("audio")) == 6
    assert sorted(os.listdir(tmp_path)) == ["m.h5"]


def test_dash_keeps_the_exit_status_of_an_invalid_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An invalid file the reader reads (sample_rate 0, §6.1): the page on standard output, the verdict on
    standard error, exit status 1, as with a file."""
    clips = [np.sin(np.arange(200) / 4.0).astype(np.float32)] * 2
    h5ml.write(
        tmp_path / "a.h5",
        {"train": {"clip": clips}},
        {"name": "a", "license": "MIT"},
        features={"clip": {"sample_rate": 8.0}},
    )
    with h5py.File(tmp_path / "a.h5", "r+") as f:
        f["train/clip"].attrs["sample_rate"] = 0.0
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli("report", "a.h5", "-o", "-")
    assert code == 1
    assert err.startswith("h5ml: the dataset is INVALID: the validator found errors")
    assert "No audio player: its sample_rate 0 is not a positive finite number of Hz" in Page(out).text
    assert sorted(os.listdir(tmp_path)) == ["a.h5"]


def test_dash_writes_utf8_bytes_whatever_the_terminal_encoding(tmp_path: Path) -> None:
    """The real command line, its standard output an ASCII pipe: the page's bytes are UTF-8, as its
    ``<meta charset="utf-8">`` says (a "§" of the page would not encode in ASCII)."""
    write_media(tmp_path / "m.h5", n=4)
    env = {**os.environ, "PYTHONIOENCODING": "ascii"}
    done = subprocess.run(
        [sys.executable, "-m", "h5ml", "report", "m.h5", "-o", "-"], cwd=tmp_path, capture_output=True, env=env
    )
    assert (done.returncode, done.stderr) == (0, b"")
    text = done.stdout.decode("utf-8")
    assert text.startswith("<!DOCTYPE html>") and '<meta charset="utf-8">' in text and "§" in text
    assert sorted(os.listdir(tmp_path)) == ["m.h5"]


def test_help_says_dash_is_standard_output() -> None:
    code, out, _ = run_cli("report", "--help")
    assert code == 0 and "- is standard output" in " ".join(out.split())


@pytest.fixture
def sharded(tmp_path: Path) -> Path:
    """A sharded dataset in ``tmp_path/sh`` (two shards of one split), written by ``h5ml shard``."""
    h5ml.write(tmp_path / "m.h5", {"train": {"x": np.arange(20, dtype=np.int64)}}, {"name": "m", "license": "MIT"})
    code, _, err = run_cli("shard", str(tmp_path / "m.h5"), str(tmp_path / "sh"), "--samples-per-shard", "10")
    assert (code, err) == (0, "")
    (tmp_path / "m.h5").unlink()
    return tmp_path / "sh"


def test_dot_inside_a_sharded_folder_names_the_folder(sharded: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``cd sh && h5ml report .`` writes ``sh.report.html`` beside ``sh`` (it wrote the hidden ``sh/.report.html``)."""
    monkeypatch.chdir(sharded)
    code, out, err = run_cli("report", ".")
    assert (code, err) == (0, "")
    assert out.strip() == "wrote ../sh.report.html"
    assert sorted(os.listdir(sharded.parent)) == ["sh", "sh.report.html"]
    assert sorted(os.listdir(sharded)) == ["index.json", "train"]  # nothing written inside the dataset
    assert "m: h5ml report" in Page((sharded.parent / "sh.report.html").read_text(encoding="utf-8")).text


def test_dot_dot_and_index_paths_name_the_real_folder(sharded: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``..`` from inside the dataset and ``index.json`` given from inside it name ``sh`` too, relative to the
    current directory as they were given; an absolute path gives an absolute page."""
    monkeypatch.chdir(sharded / "train")
    assert default_output("..") == Path("../../sh.report.html")
    monkeypatch.chdir(sharded)
    assert default_output("index.json") == Path("../sh.report.html")
    assert default_output(sharded / "index.json") == sharded.parent.resolve() / "sh.report.html"


def test_symlinked_index_names_the_folder_it_links_to(sharded: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``link.json -> sh/index.json`` in the current directory: the page is ``sh.report.html`` beside ``sh``,
    not ``../<current directory>.report.html`` outside it."""
    work = sharded.parent
    (work / "link.json").symlink_to(Path("sh") / "index.json")
    monkeypatch.chdir(work)
    assert default_output("link.json") == Path("sh.report.html")
    code, out, _ = run_cli("report", "link.json")
    assert code in (0, 1)  # the verdict is the validator's (it looks for the shards beside the link)
    assert out.strip() == "wrote sh.report.html"
    assert sorted(os.listdir(work)) == ["link.json", "sh", "sh.report.html"]
    assert not (work.parent / f"{work.name}.report.html").exists()


def test_a_dataset_at_the_root_gets_report_html_inside_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """The file system's root has no name to take: its page would be the hidden ``/.report.html``; it is
    ``/report.html``, a name the rules allow beside ``index.json``."""
    import h5ml.model.shard_index as shard_index

    monkeypatch.setattr(shard_index, "is_index_path", lambda path: True)  # as if / held an index.json
    assert default_output("/") == Path("/report.html")
