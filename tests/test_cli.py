"""The ``h5ml`` command line, run in-process through ``h5ml.tools.cli.run`` (exit codes, output, errors).

Clauses: §9.1 (valid = no error; strict = no warning), §9.3 (the JSON report
and its schema), §10.3 (files checked in a child process with a time limit).
"""

from __future__ import annotations

import io
import json
import multiprocessing
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import pytest

import h5ml
from badfiles import add_slow_split
from h5ml.spec.attrs import write_attr
from h5ml.spec.schemas import validator_for
from h5ml.tools import cli

# -- helpers -------------------------------------------------------------------


def run_cli(*args: str) -> tuple[int, str, str]:
    """Run the command line in this process; return (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    code = cli.run(list(args), out, err)
    return code, out.getvalue(), err.getvalue()


def write_valid(path: Path, *, license: str | None = "CC0-1.0", description: str | None = "a test set") -> Path:
    rng = np.random.default_rng(7)
    metadata: dict[str, Any] = {"name": "small"}
    if license is not None:
        metadata["license"] = license
    if description is not None:
        metadata["description"] = description
    h5ml.write(
        path,
        {
            "train": {
                "x": rng.normal(size=(40, 5)).astype(np.float32),
                "label": h5ml.writer.writer.Categorical(rng.integers(0, 3, 40), ["a", "b", "c"]),
            },
            "test": {
                "x": rng.normal(size=(10, 5)).astype(np.float32),
                "label": h5ml.writer.writer.Categorical(rng.integers(0, 3, 10), ["a", "b", "c"]),
            },
        },
        metadata=metadata,
        compression="gzip",
        shuffle=True,
        seed=3,
    )
    return path


def write_incomplete(path: Path) -> Path:
    """A conforming file whose completion marker was removed (§4.4, E106)."""
    write_valid(path)
    with h5py.File(path, "r+") as f:
        del f.attrs["complete"]
    return path


def write_plain_hdf5(path: Path) -> Path:
    """An HDF5 file that is not an h5ml file (§4.1, E102)."""
    with h5py.File(path, "w") as f:
        f.create_dataset("data", data=np.arange(10))
    return path


def write_truncated(path: Path, source: Path) -> Path:
    data = source.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    return path


def write_random(path: Path) -> Path:
    path.write_bytes(np.random.default_rng(11).integers(0, 256, 4096, dtype=np.uint8).tobytes())
    return path


def make_case(kind: str, tmp_path: Path) -> Path:
    if kind == "valid":
        return write_valid(tmp_path / "valid.h5")
    if kind == "incomplete":
        return write_incomplete(tmp_path / "incomplete.h5")
    if kind == "plain_hdf5":
        return write_plain_hdf5(tmp_path / "plain.h5")
    if kind == "random":
        return write_random(tmp_path / "random.h5")
    if kind == "empty":
        (tmp_path / "empty.h5").write_bytes(b"")
        return tmp_path / "empty.h5"
    if kind == "truncated":
        return write_truncated(tmp_path / "truncated.h5", write_valid(tmp_path / "whole.h5"))
    if kind == "directory":
        (tmp_path / "folder.h5").mkdir()
        return tmp_path / "folder.h5"
    if kind == "missing":
        return tmp_path / "missing.h5"
    raise AssertionError(kind)


#: kind of file -> (exit code, a code the report must hold or None for none, readable)
CASES = {
    "valid": (0, None, True),
    "incomplete": (1, "E106", True),
    "plain_hdf5": (1, "E102", True),
    "random": (2, "E100", False),
    "empty": (2, "E100", False),
    "truncated": (2, None, False),
    "directory": (2, "E100", False),
    "missing": (2, "E100", False),
}


def strict_json(text: str) -> Any:
    """Parse JSON refusing the non-standard NaN/Infinity tokens."""

    def refuse(token: str) -> Any:
        raise AssertionError(f"non-standard JSON token {token}")

    return json.loads(text, parse_constant=refuse)


# -- validate --------------------------------------------------------------------


@pytest.mark.parametrize("kind", list(CASES))
def test_validate_exit_codes_and_text(kind: str, tmp_path: Path) -> None:
    """§9.1: exit 0 valid, 1 invalid, 2 unreadable; a one-line verdict per file and no traceback (SPEC §9.3.2-R1)."""
    path = make_case(kind, tmp_path)
    expected_exit, code, _ = CASES[kind]
    exit_code, out, err = run_cli("validate", "--timeout", "60", str(path))
    assert exit_code == expected_exit
    assert "Traceback" not in out + err
    assert err == ""
    verdict = {0: "VALID", 1: "INVALID", 2: "UNREADABLE"}[expected_exit]
    assert f"{path}: {verdict} (" in out
    if code is not None:
        assert code in out


@pytest.mark.parametrize("kind", list(CASES))
def test_validate_json_report_matches_schema(kind: str, tmp_path: Path) -> None:
    """§9.3: --format json prints only the report, valid against schema 'report' (SPEC §9.3-R1)."""
    path = make_case(kind, tmp_path)
    expected_exit, code, readable = CASES[kind]
    exit_code, out, err = run_cli("validate", "--format", "json", str(path))
    assert exit_code == expected_exit
    document = strict_json(out)
    errors = [e.message for e in validator_for("report").iter_errors(document)]
    assert errors == []
    (entry,) = document["files"]
    assert entry["path"] == str(path)
    assert entry["readable"] is readable
    assert entry["valid"] is (expected_exit == 0)
    codes = [i["code"] for i in entry["issues"]]
    if code is not None:
        assert code in codes
    if not readable:
        assert set(codes) & {"E100", "E101"}
    assert "Traceback" not in out + err


def test_validate_several_files_two_wins_over_one(tmp_path: Path) -> None:
    """§9.1: with one invalid and one unreadable file the exit code is 2, and both are reported (SPEC §9.3.2-R1)."""
    invalid = write_incomplete(tmp_path / "a.h5")
    unreadable = write_random(tmp_path / "b.h5")
    valid = write_valid(tmp_path / "c.h5")
    exit_code, out, _ = run_cli("validate", "--jobs", "2", str(invalid), str(unreadable), str(valid))
    assert exit_code == 2
    assert f"{invalid}: INVALID" in out
    assert f"{unreadable}: UNREADABLE" in out
    assert f"{valid}: VALID" in out
    assert "3 files checked, 2 failed" in out
    exit_code, out, _ = run_cli("validate", "--format", "json", str(invalid), str(valid))
    assert exit_code == 1
    assert strict_json(out)["summary"] == {"files": 2, "valid": 1, "invalid": 1, "unreadable": 0}


def test_a_shallow_valid_verdict_says_the_samples_were_not_read(tmp_path: Path) -> None:
    """§9.1: a shallow VALID found no error without reading sample data; its verdict line says so and names
    --deep; a deep one says every sample was read; an invalid one says neither."""
    valid = write_valid(tmp_path / "v.h5")
    invalid = write_incomplete(tmp_path / "i.h5")
    hint = "; the samples were not read: --deep reads and checks every one"
    exit_code, out, _ = run_cli("validate", str(valid))
    assert exit_code == 0 and f"{valid}: VALID (0 errors, 0 warnings, 0 info){hint}" in out
    exit_code, out, _ = run_cli("validate", "--deep", str(valid))
    assert exit_code == 0 and f"{valid}: VALID (0 errors, 0 warnings, 0 info); every sample was read and checked" in out
    assert "were not read" not in out
    exit_code, out, _ = run_cli("validate", str(invalid))
    assert exit_code == 1 and "INVALID" in out and hint not in out and "every sample" not in out


def test_validate_strict_turns_warnings_into_failure(tmp_path: Path) -> None:
    """§9.1: a file with warnings only (no license W203, no description W204) is valid, but not with --strict."""
    path = write_valid(tmp_path / "warn.h5", license=None, description=None)
    exit_code, out, _ = run_cli("validate", str(path))
    assert exit_code == 0
    assert "W203" in out and "W204" in out
    assert f"{path}: VALID (0 errors, 2 warnings" in out
    exit_code, out, _ = run_cli("validate", "--strict", str(path))
    assert exit_code == 1
    assert f"{path}: INVALID (--strict: warnings fail)" in out
    exit_code, out, _ = run_cli("validate", "--strict", "--format", "json", str(path))
    assert exit_code == 1
    document = strict_json(out)
    assert not list(validator_for("report").iter_errors(document))
    assert document["files"][0]["valid"] is False
    assert document["summary"] == {"files": 1, "valid": 0, "invalid": 1, "unreadable": 0}
    exit_code, _, _ = run_cli("validate", "--strict", str(write_valid(tmp_path / "clean.h5")))
    assert exit_code == 0


def _open_with_hdf5(path: str) -> None:
    h5py.File(path, "r").close()


def test_validate_refuses_a_fifo_at_once(tmp_path: Path) -> None:
    """§10.3: a FIFO would make HDF5's open block forever; it is not a regular file, so it is E100 at once.

    The test first shows that opening the FIFO with HDF5 does block (a child
    process opening it is still alive after 3 s), then that validate answers
    without waiting for its time limit.
    """
    fifo = tmp_path / "pipe.h5"
    os.mkfifo(fifo)
    ctx = multiprocessing.get_context("spawn")
    probe = ctx.Process(target=_open_with_hdf5, args=(str(fifo),))
    probe.start()
    probe.join(3)
    blocked = probe.is_alive()
    probe.kill()
    probe.join()
    assert blocked, "opening a FIFO with HDF5 returned: it no longer makes the child hang"

    exit_code, out, err = _run_guarded("validate", "--timeout", "600", "--format", "json", str(fifo))
    assert exit_code == 2
    document = strict_json(out)
    (entry,) = document["files"]
    assert [i["code"] for i in entry["issues"]] == ["E100"]
    assert "not a regular file" in entry["issues"][0]["message"]
    assert entry["readable"] is False
    assert validator_for("report").is_valid(document)
    assert "Traceback" not in out + err


def test_validate_timeout_keeps_what_was_found(tmp_path: Path) -> None:
    """§10.3: deep validation of a file too slow to read stops at --timeout: the issues found so far, then E101, exit 2."""
    path = write_valid(tmp_path / "slow.h5")
    with h5py.File(path, "r+") as f:
        add_slow_split(f)
    exit_code, out, err = _run_guarded("validate", "--deep", "--timeout", "5", "--format", "json", str(path))
    assert exit_code == 2
    document = strict_json(out)
    (entry,) = document["files"]
    codes = [(i["code"], i["path"]) for i in entry["issues"]]
    assert ("W202", "/big/x") in codes
    assert codes[-1] == ("E101", "/")
    assert "did not finish within 5.0 s" in entry["issues"][-1]["message"]
    assert entry["readable"] is False
    assert validator_for("report").is_valid(document)
    assert "Traceback" not in out + err


def _run_guarded(*args: str) -> tuple[int, str, str]:
    """Run the CLI in a thread with a generous guard against a hang (not a speed check)."""
    result: dict[str, Any] = {}

    def target() -> None:
        result["outcome"] = run_cli(*args)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(300)
    assert not thread.is_alive(), f"h5ml {' '.join(args)} did not return"
    outcome: tuple[int, str, str] = result["outcome"]
    return outcome


def test_validate_rejects_bad_options(tmp_path: Path) -> None:
    path = write_valid(tmp_path / "v.h5")
    for args in (["validate"], ["validate", "--timeout", "0", str(path)], ["validate", "--jobs", "0", str(path)]):
        exit_code, out, err = run_cli(*args)
        assert exit_code == 2
        assert err.startswith("h5ml: error: ")
        assert err.count("\n") == 1
        assert "Traceback" not in out + err


# -- inspect ---------------------------------------------------------------------


def test_inspect_text_lists_splits_features_and_storage(tmp_path: Path) -> None:
    path = write_valid(tmp_path / "v.h5")
    exit_code, out, err = run_cli("inspect", str(path))
    assert exit_code == 0 and err == ""
    for text in (
        "train  40 samples",
        "test  10 samples",
        "x  dense  float32  (40, 5)",
        "label  categorical",
        "3 classes",
        "compression shuffle + deflate(4)",
        "ratio ",
        "name",
        "small",
        "license",
        "CC0-1.0",
    ):
        assert text in out


def metadata_rows(out: str) -> dict[str, str]:
    """The rows of inspect's metadata table: key -> its value, the lines a wrapped cell takes joined by spaces."""
    rows: dict[str, list[str]] = {}
    lines = out[out.index("metadata") :].splitlines()
    key = ""
    for line in lines:
        cells = line.split("│")
        if len(cells) != 4:  # the table's borders and its header rule
            continue
        name, value = cells[1].strip(), cells[2].strip()
        if name == "metadata":
            continue
        key = name or key  # a wrapped cell continues on lines whose key cell is empty
        rows.setdefault(key, []).append(value)
    return {k: " ".join(" ".join(v).split()) for k, v in rows.items()}


def test_inspect_shows_the_whole_card(tmp_path: Path) -> None:
    """Citation, homepage, keywords, creator and source are shown, and the description whole, however long."""
    paragraph = "Handwritten digits scanned at 300 dpi, one per 8x8 image, labelled by two annotators who agreed. "
    description = paragraph * 4 + "\n\nKnown limits: writers are adults from one country; the end of this text is kept."
    citation = "@misc{digits,\n  title = {Digits},\n  year = {2026}\n}"  # under 80 characters, several lines
    rng = np.random.default_rng(5)
    path = tmp_path / "card.h5"
    h5ml.write(
        path,
        {"train": {"x": rng.normal(size=(6, 2)).astype(np.float32)}},
        metadata={
            "name": "digits",
            "description": description,
            "license": "CC-BY-4.0",
            "citation": citation,
            "creator": "Jane Doe",
            "homepage": "https://example.org/digits",
            "keywords": ["digits", "handwriting", "ocr"],
            "source": "scanned forms",
            "acme:project": "digits-2026",
            "acme:batch": 7,
        },
    )
    assert len(description) > 400
    exit_code, out, err = run_cli("inspect", str(path))
    assert exit_code == 0 and err == ""
    rows = metadata_rows(out)
    assert rows["description"] == " ".join(description.split())  # all of it, not cut at 200 characters
    assert rows["citation"] == " ".join(citation.split())
    assert rows["homepage"] == "https://example.org/digits"
    assert rows["keywords"] == "digits, handwriting, ocr"
    assert rows["creator"] == "Jane Doe"
    assert rows["source"] == "scanned forms"
    assert rows["name"] == "digits" and rows["license"] == "CC-BY-4.0"
    assert (rows["acme:project"], rows["acme:batch"]) == ("digits-2026", "7")  # user attributes, §4.7-S1
    assert list(rows)[-2:] == ["acme:batch", "acme:project"]  # after the card, sorted
    assert "..." not in out
    assert "\\n" not in out  # a short multi-line citation keeps its line feeds (they were shown as \n)


def test_inspect_json_is_the_summary(tmp_path: Path) -> None:
    from h5ml.tools.summary import summarize

    path = write_valid(tmp_path / "v.h5")
    exit_code, out, _ = run_cli("inspect", "--format", "json", str(path))
    assert exit_code == 0
    document = strict_json(out)
    assert document == json.loads(json.dumps(summarize(path).to_json()))
    names = {s["name"]: [f["name"] for f in s["features"]] for s in document["splits"]}
    assert names == {"train": ["label", "x"], "test": ["label", "x"]}


@pytest.mark.parametrize("kind", ["random", "empty", "directory", "missing", "incomplete", "plain_hdf5"])
def test_inspect_and_dump_refuse_bad_files_in_one_line(kind: str, tmp_path: Path) -> None:
    path = make_case(kind, tmp_path)
    # An HDF5 file that is not an h5ml file is shown as a tree by inspect (test_inspect_tree.py); dump refuses it.
    for command in ("dump",) if kind == "plain_hdf5" else ("inspect", "dump"):
        exit_code, out, err = run_cli(command, str(path))
        assert exit_code == 2
        assert out == ""
        assert err.startswith("h5ml: error: ") and err.count("\n") == 1
        assert str(path.name) in err
        assert "Traceback" not in err


def test_inspect_and_dump_refuse_a_fifo_without_opening_it(tmp_path: Path) -> None:
    """A FIFO is refused up front: opening it would block (see test_validate_timeout_on_a_fifo)."""
    fifo = tmp_path / "pipe.h5"
    os.mkfifo(fifo)
    outcomes: list[tuple[int, str, str]] = []

    def target() -> None:
        outcomes.extend(run_cli(command, str(fifo)) for command in ("inspect", "dump"))

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(120)  # a guard against a hang; not a speed check
    assert not thread.is_alive(), "inspect or dump opened the FIFO"
    for exit_code, out, err in outcomes:
        assert (exit_code, out) == (2, "")
        assert (
            err == f"h5ml: error: {fifo} is not a regular file (a pipe or a device?); give the path of an h5ml file\n"
        )


# -- dump ------------------------------------------------------------------------


def test_dump_json_and_text(tmp_path: Path) -> None:
    """Appendix B through the command line: one JSON document, or one line per sample."""
    path = write_valid(tmp_path / "v.h5")
    exit_code, out, _ = run_cli("dump", str(path), "--split", "test", "--feature", "label")
    assert exit_code == 0
    document = strict_json(out)
    assert list(document["splits"]) == ["test"]
    label = document["splits"]["test"]["features"]["label"]
    with h5ml.open(path) as ds:
        assert label["values"] == ds["test"]["label"][:].tolist()
    assert label["class_names"] == ["a", "b", "c"]
    exit_code, out, _ = run_cli("dump", str(path), "--split", "test", "--feature", "label", "--format", "text")
    assert exit_code == 0
    lines = out.splitlines()
    assert lines[0] == "test/label: categorical int8 class_names ['a', 'b', 'c'] (10 samples)"
    assert lines[1:] == [f"  [{i}] {v}" for i, v in enumerate(label["values"])]


def test_dump_unknown_split_is_one_line(tmp_path: Path) -> None:
    path = write_valid(tmp_path / "v.h5")
    exit_code, out, err = run_cli("dump", str(path), "--split", "nope")
    assert exit_code == 2 and out == ""
    assert "nope" in err and err.startswith("h5ml: error: ") and err.count("\n") == 1


# -- convert and demo (details in test_convert.py and test_demo.py) --------------


def test_convert_command_writes_a_valid_file(tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    source = tmp_path / "data.npz"
    np.savez(source, x_train=rng.normal(size=(30, 4)).astype(np.float32), y_train=rng.integers(0, 2, 30))
    output = tmp_path / "data.h5"
    exit_code, out, err = run_cli(
        "convert", str(source), str(output), "--label", "y", "--class-names", "no,yes", "--description", "d"
    )
    assert (exit_code, err) == (0, "")
    assert f"wrote {output}" in out
    with h5ml.open(output) as ds:
        assert ds["train"]["y"].class_names == ["no", "yes"]
    exit_code, out, err = run_cli("convert", str(source), str(output))
    assert exit_code == 2 and "exists" in err and "--overwrite" in err
    exit_code, _, err = run_cli("convert", str(source), str(tmp_path / "o.h5"), "--split", "test")
    assert exit_code == 2 and ".npy" in err
    exit_code, _, err = run_cli("convert", str(tmp_path / "data.csv"), str(tmp_path / "o.h5"))
    assert exit_code == 2 and f"Invalid value for 'SOURCES...': '{tmp_path / 'data.csv'}' does not exist" in err
    (tmp_path / "notes.txt").write_text("not data")
    exit_code, _, err = run_cli("convert", str(tmp_path / "notes.txt"), str(tmp_path / "o.h5"))
    assert exit_code == 2 and "pass --from" in err and not (tmp_path / "o.h5").exists()
    exit_code, _, err = run_cli("convert", str(source), str(tmp_path / "o.h5"), "--sample-rate", "16000")
    assert exit_code == 2 and "--sample-rate" in err and "'arrays'" in err
    assert not (tmp_path / "o.h5").exists()


# -- errors, debug, version -------------------------------------------------------


def test_unexpected_exception_is_an_internal_error_unless_debug(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An exception that is not h5ml's own (nor the file system's) is a defect of h5ml: 'h5ml: internal error:
    ...' with a pointer to --debug (exit 2); --debug or H5ML_DEBUG=1 adds the traceback. A ValueError is one
    too: only h5ml's errors, OSError, ImportError and usage errors are the user's input."""
    import h5ml.tools.summary

    raised: list[BaseException] = []

    def boom(path: Any) -> Any:
        raise raised[-1]

    monkeypatch.setattr(h5ml.tools.summary, "summarize", boom)
    path = write_valid(tmp_path / "v.h5")
    monkeypatch.delenv(cli.DEBUG_ENV, raising=False)
    hint = "; run it again with --debug before the command to see the traceback, and report it"
    for exc in (RuntimeError("boom\nsecond line"), ValueError("boom\nsecond line")):
        raised.append(exc)
        name = type(exc).__name__
        exit_code, out, err = run_cli("inspect", str(path))
        assert (exit_code, out) == (2, "")
        assert err == f"h5ml: internal error: {name}: boom second line (a defect of h5ml, not of your input{hint})\n"
        exit_code, _, err = run_cli("--debug", "inspect", str(path))
        assert exit_code == 2 and "Traceback" in err
        assert err.endswith(f"h5ml: internal error: {name}: boom second line (a defect of h5ml, not of your input)\n")
    raised.append(h5ml.InvalidFileError("v.h5: /train is broken\nrun validate"))  # h5ml's own: the input's fault
    exit_code, _, err = run_cli("inspect", str(path))
    assert (exit_code, err) == (2, "h5ml: error: v.h5: /train is broken run validate\n")
    exit_code, _, err = run_cli("inspect", "--debug", str(path))  # after the command it is not h5ml's option
    assert (exit_code, err) == (2, "h5ml: error: No such option '--debug' (see 'h5ml inspect --help')\n")
    monkeypatch.setenv(cli.DEBUG_ENV, "1")
    exit_code, _, err = run_cli("inspect", str(path))
    assert exit_code == 2 and "Traceback" in err


def test_usage_errors_exit_two() -> None:
    exit_code, out, err = run_cli("frobnicate")
    assert exit_code == 2 and out == ""
    assert err == "h5ml: error: No such command 'frobnicate' (see 'h5ml --help')\n"
    exit_code, out, _ = run_cli()
    assert exit_code == 2 and "Commands:" in out
    exit_code, out, err = run_cli("--help")
    assert exit_code == 0 and "validate" in out and err == ""


def test_version_in_process() -> None:
    exit_code, out, err = run_cli("--version")
    assert (exit_code, err) == (0, "")
    assert out == f"h5ml {h5ml.__version__} (format {h5ml.spec.FORMAT_VERSION_STRING})\n"


def test_installed_console_script_and_python_m() -> None:
    """The console script and ``python -m h5ml`` reach the same ``run``."""
    script = Path(sys.executable).with_name("h5ml")
    expected = f"h5ml {h5ml.__version__} (format {h5ml.spec.FORMAT_VERSION_STRING})\n"
    for command in ([str(script), "--version"], [sys.executable, "-m", "h5ml", "--version"]):
        done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
        assert (done.returncode, done.stdout, done.stderr) == (0, expected, "")


def test_non_h5ml_hdf5_file_attributes_are_not_needed_for_exit_one(tmp_path: Path) -> None:
    """A readable HDF5 file with h5ml-looking attributes but a wrong format name is invalid (E102), exit 1."""
    path = tmp_path / "other.h5"
    with h5py.File(path, "w") as f:
        write_attr(f, "format", "not-h5ml")
    exit_code, out, _ = run_cli("validate", str(path))
    assert exit_code == 1 and "E102" in out


def test_inspect_shows_sample_rate_and_shuffle_seed(tmp_path: Path) -> None:
    """§6.1 sample_rate and §7.6 shuffle_seed appear in the inspect tree."""
    rng = np.random.default_rng(11)
    clips = [rng.integers(-100, 100, size=n).astype(np.int16) for n in (5, 9, 7)]
    path = tmp_path / "audio.h5"
    h5ml.write(
        path,
        {"train": {"audio": clips}},
        metadata={"name": "audio"},
        features={"audio": {"sample_rate": 16000, "encoding": "ragged"}},
        shuffle=True,
        seed=3,
    )
    exit_code, out, err = run_cli("inspect", str(path))
    assert exit_code == 0, err
    assert "train  3 samples  shuffled on write, seed 3" in out
    assert "16000 Hz" in out


def test_an_interrupt_while_the_command_line_loads_is_one_line() -> None:
    """The console script installs its SIGTERM handler before it imports the command line (click, rich, every
    command): an interrupt while that import runs ends as 'h5ml: interrupted', exit 130, no traceback."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "class Interrupting:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'h5ml.tools.cli':\n"
        "            raise KeyboardInterrupt\n"
        "sys.meta_path.insert(0, Interrupting())\n"
        "from h5ml.tools.entry import main\n"
        "main()\n"
    )
    proc = subprocess.run([sys.executable, "-c", code, "--help"], capture_output=True, text=True, timeout=120)
    assert (proc.returncode, proc.stdout, proc.stderr) == (130, "", "h5ml: interrupted\n")
    version = subprocess.run([sys.executable, "-m", "h5ml", "--version"], capture_output=True, text=True, timeout=120)
    assert version.returncode == 0 and version.stdout.startswith("h5ml ")
