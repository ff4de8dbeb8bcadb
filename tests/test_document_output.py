"""``-o/--output`` of validate, report and croissant: one check, which never lets a document replace data.

Real files in tmp_path, a sharded dataset written by the project's sharded
writer, the real command line (``h5ml.tools.cli.run``, and a subprocess
where a FIFO could block it) and the Python functions behind it
(:mod:`h5ml.ingest.document_output`).
"""

from __future__ import annotations

import hashlib
import io
import os
import stat
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import h5ml
from h5ml.ingest.document_output import check_document_output, output_problem
from h5ml.ingest.export.croissant import export_croissant
from h5ml.tools.cli import run
from h5ml.tools.report import write_report

#: Each command that writes a document with -o, and how its arguments are given (the source first or last).
COMMANDS = ["validate", "report", "croissant"]


def run_cli(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = run(list(args), out, err)
    return code, out.getvalue(), err.getvalue()


def command_line(command: str, source: str, output: str, *extra: str) -> list[str]:
    """The arguments of ``command`` writing the document of ``source`` to ``output``."""
    return [command, source, "-o", output, *extra]


def digests(folder: Path) -> dict[str, str]:
    """Every path under ``folder`` and the sha256 of each file's bytes (a FIFO or folder as its kind)."""
    found = {}
    for path in sorted(folder.rglob("*")):
        mode = path.lstat().st_mode
        if stat.S_ISREG(mode):
            found[path.relative_to(folder).as_posix()] = hashlib.sha256(path.read_bytes()).hexdigest()
        else:
            found[path.relative_to(folder).as_posix()] = stat.filemode(mode)[0]
    return found


@pytest.fixture
def data(tmp_path: Path) -> Path:
    """A folder with an h5ml file ``good.h5`` and a sharded dataset ``ds`` (train: 3 shards of 2, test: 1)."""
    rng = np.random.default_rng(7)
    x = rng.random((6, 3)).astype(np.float32)
    meta = {"name": "toy", "description": "A toy.", "license": "MIT"}
    h5ml.write(tmp_path / "good.h5", {"train": {"x": x}}, meta)
    with h5ml.Writer(tmp_path / "ds", meta, samples_per_shard=2) as writer:
        writer.append("train", {"x": x})
        writer.append("test", {"x": x[:2]})
    return tmp_path


def assert_refused(code: int, out: str, err: str, *words: str) -> None:
    """Exit 2 with one ``h5ml: error: --output ...`` line naming each of ``words``, no traceback."""
    assert (code, out) == (2, ""), err
    assert err.startswith("h5ml: error: --output ") and err.count("\n") == 1 and "Traceback" not in err, err
    for word in words:
        assert word in err, err


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("given", ["folder", "index"])
@pytest.mark.parametrize(
    "target", ["index.json", "train/train-00001.h5", "test/test-00000.h5", "train/new.h5", "x.HDF5"]
)
def test_files_of_a_sharded_source_are_never_replaced(
    data: Path, monkeypatch: pytest.MonkeyPatch, command: str, given: str, target: str
) -> None:
    """The index, each shard, a shard's name in the dataset's folder: refused with --overwrite, every byte unchanged."""
    monkeypatch.chdir(data)
    (data / "ds" / "notes.txt").write_text("the curator's notes\n", encoding="utf-8")
    before = digests(data)
    source = "ds" if given == "folder" else "ds/index.json"
    output = str(data / "ds" / target)
    code, out, err = run_cli(*command_line(command, source, output, "--overwrite"))
    if target == "index.json" and given == "index":
        expected = "one of the FILEs checked" if command == "validate" else "the source itself"
    elif target.endswith("0.h5") or target.endswith("1.h5"):
        expected = "is an HDF5 file (a dataset?)"
    elif target == "index.json":
        expected = "is the index of the sharded dataset ds"
    else:
        expected = f"a shard's name inside the folder {os.path.realpath(data / 'ds')} of the sharded dataset {source}"
    assert_refused(code, out, err, expected, "--overwrite or not")
    assert digests(data) == before  # nothing replaced, nothing written, no temporary file left


@pytest.mark.parametrize("command", COMMANDS)
def test_a_shard_through_a_symbolic_link_is_refused(data: Path, command: str) -> None:
    """An output that is a link to a shard, or to the input itself: refused with --overwrite, the link kept."""
    (data / "to_shard.txt").symlink_to(data / "ds" / "train" / "train-00000.h5")
    (data / "to_index.json").symlink_to(data / "ds" / "index.json")
    (data / "to_good.txt").symlink_to(data / "good.h5")
    before = digests(data)
    code, out, err = run_cli(*command_line(command, str(data / "ds"), str(data / "to_shard.txt"), "--overwrite"))
    assert_refused(code, out, err, "is an HDF5 file (a dataset?)")
    code, out, err = run_cli(*command_line(command, str(data / "ds"), str(data / "to_index.json"), "--overwrite"))
    assert_refused(code, out, err, f"is the index of the sharded dataset {data / 'ds'}")
    code, out, err = run_cli(*command_line(command, str(data / "good.h5"), str(data / "to_good.txt"), "--overwrite"))
    assert_refused(code, out, err, f"({data / 'good.h5'}, through a symbolic link)")
    assert digests(data) == before


@pytest.mark.parametrize("command", COMMANDS)
def test_an_output_linked_to_a_device_is_refused(data: Path, command: str) -> None:
    """A symbolic link to /dev/full: a character device, not a file, refused with --overwrite; the link stays."""
    link = data / "full.txt"
    link.symlink_to("/dev/full")
    code, out, err = run_cli(*command_line(command, str(data / "good.h5"), str(link), "--overwrite"))
    assert_refused(code, out, err, f"--output {link} is a character device, not a regular file")
    assert link.is_symlink() and os.readlink(link) == "/dev/full"
    assert sorted(p.name for p in data.iterdir()) == ["ds", "full.txt", "good.h5"]


@pytest.mark.parametrize("command", COMMANDS)
def test_dev_null_is_refused_and_untouched(data: Path, command: str) -> None:
    """-o /dev/null --overwrite: refused before any work (a run as root would otherwise replace the device)."""
    before = os.stat("/dev/null")
    code, out, err = run_cli(*command_line(command, str(data / "good.h5"), "/dev/null", "--overwrite"))
    assert_refused(code, out, err, "--output /dev/null is a character device, not a regular file")
    after = os.stat("/dev/null")
    assert stat.S_ISCHR(after.st_mode) and (after.st_ino, after.st_rdev) == (before.st_ino, before.st_rdev)


@pytest.mark.parametrize("command", COMMANDS)
def test_a_fifo_is_refused_without_blocking(data: Path, command: str) -> None:
    """-o FIFO --overwrite: refused at once (a FIFO is never opened: that would wait for a writer); it stays a FIFO."""
    fifo = data / "pipe"
    os.mkfifo(fifo)
    done = subprocess.run(
        [sys.executable, "-m", "h5ml", *command_line(command, str(data / "good.h5"), str(fifo), "--overwrite")],
        capture_output=True,
        text=True,
        timeout=300,  # a guard against a blocked open, not a measure of speed
        check=False,
    )
    assert_refused(done.returncode, done.stdout, done.stderr, f"--output {fifo} is a FIFO (named pipe)")
    assert stat.S_ISFIFO(fifo.lstat().st_mode)


def test_the_python_functions_name_their_parameters(data: Path) -> None:
    """write_report and export_croissant refuse the same paths in Python's words (overwrite=True, not --overwrite)."""
    index = data / "ds" / "index.json"
    before = digests(data)
    with pytest.raises(FileExistsError, match=r"^output .* is the index of the sharded dataset .*overwrite=True"):
        write_report(data / "ds", index, overwrite=True)
    with pytest.raises(
        FileExistsError, match=r"^output .* is a shard's name inside the folder .* of the sharded dataset"
    ):
        check_document_output(data / "ds" / "train" / "new.h5", True, [data / "ds"])
    with pytest.raises(FileExistsError, match=r"^output .* is an HDF5 file \(a dataset\?\).*overwrite=True"):
        export_croissant(index, data / "ds" / "test" / "test-00000.h5", overwrite=True)
    os.mkfifo(data / "pipe")
    with pytest.raises(OSError, match=r"is a FIFO \(named pipe\), not a regular file"):
        export_croissant(data / "good.h5", data / "pipe", overwrite=True)
    os.unlink(data / "pipe")
    assert digests(data) == before


def test_a_missing_shard_and_an_unreadable_index_keep_their_folder(data: Path) -> None:
    """A shard the index lists but that is gone, and a folder whose index is no JSON: still the dataset's paths."""
    os.unlink(data / "ds" / "train" / "train-00001.h5")
    problem = output_problem(data / "ds" / "train" / "train-00001.h5", True, [data / "ds" / "index.json"])
    assert problem is not None and problem.kind == "dataset"
    assert problem.detail == f"the shard train/train-00001.h5 of the sharded dataset {data / 'ds' / 'index.json'}"
    (data / "ds" / "index.json").write_text("{not json", encoding="utf-8")
    problem = output_problem(data / "ds" / "extra.h5", True, [data / "ds"])
    assert problem is not None and problem.kind == "dataset" and problem.detail.startswith("a shard's name inside")
    assert output_problem(data / "report.html", True, [data / "ds"]) is None  # beside the folder: fine


def test_a_hard_link_is_the_file_it_links_and_a_url_is_no_local_file(data: Path) -> None:
    """A hard link elsewhere to the index is the index; a URL source is never in the way of a local output."""
    os.link(data / "ds" / "index.json", data / "copy.json")
    problem = output_problem(data / "copy.json", True, [data / "ds"])
    assert problem is not None and (problem.kind, problem.detail) == (
        "dataset",
        f"the index of the sharded dataset {data / 'ds'}",
    )
    problem = output_problem(data / "copy.json", True, [data / "ds" / "index.json"])
    assert problem is not None and problem.kind == "input"
    assert output_problem(data / "report.sarif", False, ["s3://bucket/ds/", "https://host/data.h5"]) is None


def test_documents_beside_the_data_are_still_written(data: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A new path beside the dataset's folder is written; an earlier document is replaced with --overwrite only."""
    monkeypatch.chdir(data)
    code, _, err = run_cli("validate", "--format", "json", "-o", "ds.json", "ds")
    assert (code, err) == (0, "")
    code, out, err = run_cli("validate", "--format", "json", "-o", "ds.json", "ds")
    assert_refused(code, out, err, "--output ds.json exists: give another path, or pass --overwrite")
    code, _, err = run_cli("validate", "--format", "json", "-o", "ds.json", "--overwrite", "ds/index.json")
    assert (code, err) == (0, "")
    assert '"valid": true' in (data / "ds.json").read_text(encoding="utf-8")


@pytest.mark.parametrize("command", COMMANDS)
def test_documents_beside_the_index_are_written(data: Path, monkeypatch: pytest.MonkeyPatch, command: str) -> None:
    """metadata.json or report.html beside index.json: written; replaced with --overwrite only; the data unchanged."""
    monkeypatch.chdir(data)
    (data / "ds" / "notes.txt").write_text("the curator's notes\n", encoding="utf-8")
    data_files = {k: v for k, v in digests(data).items() if not k.endswith("notes.txt")}
    code, _, err = run_cli(*command_line(command, "ds", "ds/notes.txt"))
    assert_refused(code, "", err, "--output ds/notes.txt exists")
    assert (data / "ds" / "notes.txt").read_text(encoding="utf-8") == "the curator's notes\n"
    code, _, err = run_cli(*command_line(command, "ds", "ds/notes.txt", "--overwrite"))
    assert code in (0, 1) and "error" not in err, err  # 1: validate found issues in the toy data (none expected)
    code, _, err = run_cli(*command_line(command, "ds/index.json", "ds/train/notes.txt"))
    assert code in (0, 1) and "error" not in err, err
    written = (data / "ds" / "notes.txt").read_text(encoding="utf-8")
    marker = {"validate": "the sharded dataset is VALID", "report": "<html", "croissant": '"@context"'}[command]
    assert marker in written and marker in (data / "ds" / "train" / "notes.txt").read_text(encoding="utf-8")
    after = {k: v for k, v in digests(data).items() if not k.endswith("notes.txt")}
    assert after == data_files
    code, _, err = run_cli("validate", "ds")
    assert (code, err) == (0, "")  # the documents beside the index are no unlisted shards


@pytest.mark.parametrize(
    "args",
    [
        ["unshard", "ds", "ds/index.json"],
        ["unshard", "ds/index.json", "ds/train/train-00001.h5"],
        ["view", "ds", "ds/index.json"],
        ["subset", "ds/index.json", "ds/train/train-00000.h5"],
        ["export", "ds/index.json", "ds/train/train-00002.h5"],
    ],
)
def test_commands_that_write_hdf5_from_a_sharded_source_never_write_onto_its_files(
    data: Path, monkeypatch: pytest.MonkeyPatch, args: list[str]
) -> None:
    """unshard, view, subset, export given a sharded dataset and one of its files as output, with --overwrite: refused."""
    monkeypatch.chdir(data)
    before = digests(data)
    code, out, err = run_cli(*args, "--overwrite")
    assert (code, out) == (2, "") and err.startswith("h5ml: error: ") and "Traceback" not in err, err
    assert digests(data) == before


def test_croissant_to_standard_output_with_a_dash(data: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``h5ml croissant FILE -o -`` writes the JSON-LD to standard output, as without -o: no file named '-'."""
    monkeypatch.chdir(data)
    code, out, err = run_cli("croissant", "good.h5", "-o", "-")
    assert (code, err) == (0, "")
    assert out == run_cli("croissant", "good.h5")[1] and '"@context"' in out
    assert not (data / "-").exists()


@pytest.mark.parametrize("command", COMMANDS)
def test_an_index_is_never_replaced_whoever_reads_it(data: Path, monkeypatch: pytest.MonkeyPatch, command: str) -> None:
    """Another dataset's index, a hard link to it, the index of a file:// input: refused with --overwrite."""
    monkeypatch.chdir(data)
    os.link(data / "ds" / "index.json", data / "hard.json")
    before = digests(data)
    url = (data / "ds").as_uri()
    cases = [
        ("good.h5", "ds/index.json"),  # the index of a dataset that is not the input
        ("good.h5", "hard.json"),  # a hard link to it, elsewhere
        (f"{url}/index.json", "ds/index.json"),  # the input given as a file:// URL
        (url + "/", "ds/index.json"),
    ]
    if command == "croissant":
        cases = cases[:2]  # croissant reads local files only
    for source, output in cases:
        code, out, err = run_cli(*command_line(command, source, output, "--overwrite"))
        assert_refused(code, out, err)
        if source.startswith("file:"):  # the URL is read as the local path it names: the input, or its index
            named = "one of the FILEs checked" if command == "validate" else "the source itself"
            assert named in err or f"is the index of the sharded dataset {data / 'ds'}/" in err, err
        else:
            assert "is the index of a sharded h5ml dataset" in err, err
    assert digests(data) == before


@pytest.mark.parametrize("command", COMMANDS)
def test_a_path_with_a_final_slash_is_no_file(data: Path, monkeypatch: pytest.MonkeyPatch, command: str) -> None:
    """``-o notes.txt/`` names a folder: refused, the file of that name (or none) left as it was."""
    monkeypatch.chdir(data)
    (data / "notes.txt").write_text("mine\n", encoding="utf-8")
    for output in ("notes.txt/", "new.txt/"):
        code, out, err = run_cli(*command_line(command, "good.h5", output, "--overwrite"))
        assert_refused(code, out, err, "it ends with a slash")
    assert (data / "notes.txt").read_text(encoding="utf-8") == "mine\n" and not (data / "new.txt").exists()


def test_a_report_that_quotes_the_index_format_is_replaced(data: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A JSON validation report that names "h5ml-index" in a message is no index: --overwrite replaces it."""
    monkeypatch.chdir(data)
    (data / "other.json").write_text('{"pages": []}', encoding="utf-8")
    code, _, err = run_cli("validate", "--format", "json", "-o", "report.json", "other.json")
    assert code == 1 and err == "" and '\\"format\\": \\"h5ml-index\\"' in (data / "report.json").read_text()
    code, _, err = run_cli("validate", "--format", "json", "-o", "report.json", "--overwrite", "good.h5")
    assert (code, err) == (0, "") and '"valid": true' in (data / "report.json").read_text(encoding="utf-8")


def test_a_text_report_quoting_the_format_is_replaced_and_a_damaged_index_is_not(data: Path) -> None:
    """Not JSON: a text report naming "h5ml-index" may be replaced; a cut index that starts as one may not."""
    quoting = data / "report.txt"
    quoting.write_text('E170: it has no "format" member, and an index says "format": "h5ml-index"\n', encoding="utf-8")
    assert output_problem(quoting, True, [data / "good.h5"]) is None
    damaged = data / "cut.json"
    damaged.write_bytes((data / "ds" / "index.json").read_bytes()[:50])  # an index cut short: no longer JSON
    problem = output_problem(damaged, True, [data / "good.h5"])
    assert problem is not None and (problem.kind, problem.detail) == ("dataset", "the index of a sharded h5ml dataset")
