"""``h5ml validate``: a file another process holds open, time limits, what the text report shows (§4.4, §9, §10.3).

Also the command line's words in its error messages (``--overwrite``, never
``overwrite=True``; no ``[Errno N]``), and the refusals of ``demo``,
``export``, ``subset`` and ``merge`` that used to pass or mislead.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path

import h5py
import numpy as np
import pytest

import h5ml
from _files import held_open as another_process_holds
from badfiles import add_slow_split
from h5ml.ingest import edit
from h5ml.ingest.options import cli_words
from h5ml.tools import cli
from h5ml.validator.runner import AUTO, BASE_TIMEOUT_S, default_timeout, validate


#: The writer process: open the file for appending with h5py (HDF5 holds its lock), say so, wait for stdin to close.
def run_cli(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = cli.run(list(args), out, err)
    return code, out.getvalue(), err.getvalue()


def write_small(path: Path, *, shuffle: bool = True) -> Path:
    rng = np.random.default_rng(1)
    h5ml.write(
        path,
        {"train": {"x": rng.normal(size=(30, 4)).astype(np.float32)}, "test": {"x": np.ones((6, 4), np.float32)}},
        metadata={"name": "small", "license": "CC0-1.0", "description": "test"},
        shuffle=shuffle,
        seed=5 if shuffle else None,
    )
    return path


@pytest.fixture
def held_open(tmp_path: Path) -> Iterator[Path]:
    """A valid file that a second process holds open for writing until the test ends."""
    path = write_small(tmp_path / "busy.h5")
    with another_process_holds(path):
        yield path


# -- a file being written ---------------------------------------------------------


def test_validate_reads_a_complete_file_another_process_holds(held_open: Path) -> None:
    """SPEC §10.4.1-S3: a complete file that another process holds open for writing is validated past the lock
    (issue 14, item 9; it was E100), and inspect and dump read it, with the values written."""
    code, out, err = run_cli("validate", "--format", "json", str(held_open))
    assert code == 0, out + err
    (entry,) = json.loads(out)["files"]
    assert entry["readable"] is True and entry["valid"] is True
    assert [issue["code"] for issue in entry["issues"]] == []
    code, out, _ = run_cli("validate", str(held_open))
    assert code == 0 and f"{held_open}: VALID (" in out
    code, out, err = run_cli("inspect", str(held_open))
    assert code == 0 and err == "" and "train" in out and "30" in out
    code, out, err = run_cli("dump", "--split", "test", str(held_open))
    assert code == 0 and err == "" and out.count("1.0") >= 24  # test/x is (6, 4) ones


def test_validate_in_python_reads_it_too_and_so_does_the_reader(tmp_path: Path) -> None:
    """SPEC §10.4.1-S3: validate() and h5ml.open() read a complete file another process holds, before and after."""
    path = write_small(tmp_path / "f.h5")
    with another_process_holds(path):
        assert validate(path).valid_strict
        with h5ml.open(path) as dataset:
            np.testing.assert_array_equal(dataset["test"]["x"][:], np.ones((6, 4), np.float32))
    assert validate(path).valid_strict
    assert run_cli("validate", str(path))[0] == 0


def test_a_handle_of_this_process_with_other_locking_settings_still_validates(tmp_path: Path) -> None:
    """Another handle of this process (locking=False) is no writer: the file is checked without locking."""
    path = write_small(tmp_path / "f.h5")
    with h5py.File(path, "r", locking=False):
        assert validate(path).valid_strict


# -- time limits -------------------------------------------------------------------


def test_default_timeout_scales_with_size_and_deep(tmp_path: Path) -> None:
    small = write_small(tmp_path / "s.h5")
    size = small.stat().st_size
    assert default_timeout(small) == pytest.approx(BASE_TIMEOUT_S + size / 1e9)
    assert default_timeout(small, deep=True) == pytest.approx(BASE_TIMEOUT_S + size / 1e7)
    big = tmp_path / "big.h5"
    with open(big, "wb") as fh:
        fh.truncate(2_000_000_000)  # a sparse 2 GB file: its size is what counts
    assert default_timeout(big) == pytest.approx(62.0)
    assert default_timeout(big, deep=True) == pytest.approx(260.0)
    assert default_timeout(tmp_path / "missing.h5") == BASE_TIMEOUT_S
    assert validate(small, timeout=AUTO).valid_strict
    with pytest.raises(ValueError, match="'auto'"):
        validate(small, timeout="soon")  # type: ignore[arg-type]


def test_a_slow_file_is_told_the_limit_was_reached_not_that_it_is_bad(tmp_path: Path) -> None:
    """§10.3: stopping at --timeout says so and how to raise it, in the command line's words."""
    path = write_small(tmp_path / "slow.h5")
    with h5py.File(path, "r+") as f:
        add_slow_split(f)
    code, out, err = run_cli("validate", "--deep", "--timeout", "3", str(path))
    assert code == 2, err
    text = " ".join(out.split())
    assert "time limit was reached" in text and "--timeout SECONDS" in text
    assert "says nothing against the file" in text
    assert "do not use it" not in text and "timeout=SECONDS" not in text
    assert "NOT FINISHED (the --timeout limit was reached" in text
    report = validate(path, deep=True, timeout=3)
    assert report.timed_out and not report.readable
    assert "timeout=SECONDS (--timeout SECONDS)" in report.issues[-1].message  # Python reads both forms


def test_help_documents_the_timeout_rule() -> None:
    code, out, _ = run_cli("validate", "--help")
    text = " ".join(out.split())
    assert code == 0 and "60 s plus 1 s per GB" in text and "--deep plus 1 s per 10 MB" in text


# -- what the text report shows ------------------------------------------------------


def test_min_severity_and_quiet_hide_info_notes(tmp_path: Path) -> None:
    """I303 (info) is listed by default, hidden by --min-severity warning and --quiet; the verdict counts it."""
    path = write_small(tmp_path / "unshuffled.h5", shuffle=False)
    code, out, _ = run_cli("validate", str(path))
    assert code == 0 and "I303" in out
    messages = [
        i["message"] for i in json.loads(run_cli("validate", "--format", "json", str(path))[1])["files"][0]["issues"]
    ]
    assert all("'h5ml convert SOURCE OUTPUT --shuffle --seed N'" in m and "shuffle=True" in m for m in messages)
    for flags in (["--min-severity", "warning"], ["--quiet"], ["--min-severity", "error"]):
        code, out, _ = run_cli("validate", *flags, str(path))
        assert code == 0 and "I303" not in out
        assert f"{path}: VALID (0 errors, 0 warnings, 2 info)" in out
    code, out, _ = run_cli("validate", "--min-severity", "warning", "--format", "json", str(path))
    assert [i["code"] for i in json.loads(out)["files"][0]["issues"]] == ["I303", "I303"]  # JSON is complete
    code, _, err = run_cli("validate", "--min-severity", "debug", str(path))
    assert code == 2 and "--min-severity" in err


def test_the_verdict_of_a_long_path_stays_on_one_line(tmp_path: Path) -> None:
    """A path longer than the 120 columns of plain output does not break the verdict line (a CI log is grepped)."""
    deep = tmp_path / ("d" * 60) / ("e" * 60) / ("f" * 60)
    deep.mkdir(parents=True)
    path = write_small(deep / "unshuffled.h5", shuffle=False)
    assert len(str(path)) > 200
    code, out, _ = run_cli("validate", str(path))
    assert code == 0
    verdict = (
        f"{path}: VALID (0 errors, 0 warnings, 2 info); the samples were not read: --deep reads and checks every one"
    )
    assert verdict in out.splitlines()
    assert str(path) in out.splitlines()  # the heading of the issue table, whole


# -- the command line's words ---------------------------------------------------------


def test_cli_words_keeps_the_command_line_form() -> None:
    assert (
        cli_words("choose another path or pass overwrite=True (--overwrite)")
        == "choose another path or pass --overwrite"
    )
    assert cli_words("pass size=(W, H) (--size WxH) now") == "pass --size WxH now"
    assert cli_words("resample with sample_rate=R (--sample-rate R)") == "resample with --sample-rate R"
    assert cli_words("leave them out with columns=[...] (--columns)") == "leave them out with --columns"
    assert cli_words("or locking=False (HDF5_USE_FILE_LOCKING=FALSE)") == "or HDF5_USE_FILE_LOCKING=FALSE"
    assert cli_words("bad (parameter samples, option --samples)") == "bad (option --samples)"
    assert cli_words("bad (parameter sources, argument SOURCES)") == "bad (argument SOURCES)"
    assert cli_words("x = 3 (a note) and f(a=1)") == "x = 3 (a note) and f(a=1)"


def test_cli_errors_name_flags_python_errors_name_parameters(tmp_path: Path) -> None:
    source = write_small(tmp_path / "s.h5")
    taken = write_small(tmp_path / "taken.h5")
    for args in (
        ["subset", str(source), str(taken)],
        ["merge", str(source), "-o", str(taken)],
        ["export", str(source), str(taken.with_suffix(".npz"))],
    ):
        if args[0] == "export":
            taken.with_suffix(".npz").write_bytes(b"x")
        code, out, err = run_cli(*args)
        assert code == 2 and out == "", args
        assert "--overwrite" in err and "overwrite=True" not in err, err
    code, _, err = run_cli("subset", str(source), str(tmp_path / "o.h5"), "--samples", "5:5")
    assert code == 2 and "(option --samples)" in err and "parameter samples" not in err
    with pytest.raises(FileExistsError, match=r"overwrite=True \(--overwrite\)"):
        edit.subset(source, taken)  # Python: both forms


# -- refusals that used to pass or mislead -------------------------------------------------


def test_demo_refuses_an_existing_output_without_overwrite(tmp_path: Path) -> None:
    text_file = tmp_path / "notes.txt"
    text_file.write_text("my notes\n")
    code, out, err = run_cli("demo", "--no-train", "--output", str(text_file))
    assert code == 2 and out == ""
    assert err == f"h5ml: error: {text_file} exists; give --output another path, or pass --overwrite to replace it\n"
    assert text_file.read_text() == "my notes\n"
    code, _, err = run_cli("demo", "--no-train", "--output", str(tmp_path))
    assert code == 2 and "is a directory" in err
    pytest.importorskip("sklearn")
    code, out, err = run_cli("demo", "--no-train", "--overwrite", "--output", str(text_file))
    assert code == 0, err
    assert validate(text_file).valid


@pytest.mark.parametrize("command", ["export", "subset", "merge", "inspect", "dump"])
def test_a_directory_is_said_to_be_one(command: str, tmp_path: Path) -> None:
    folder = tmp_path / "data"
    folder.mkdir()
    args = {
        "export": ["export", str(folder), str(tmp_path / "o.npz")],
        "subset": ["subset", str(folder), str(tmp_path / "o.h5")],
        "merge": ["merge", str(folder), "-o", str(tmp_path / "o.h5")],
        "inspect": ["inspect", str(folder)],
        "dump": ["dump", str(folder)],
    }[command]
    code, out, err = run_cli(*args)
    assert code == 2 and out == ""
    assert (
        err == f"h5ml: error: {folder} is a directory, not a file; give the path of an h5ml file (a file inside it)\n"
    )
    assert "no such file" not in err


@pytest.mark.parametrize("samples", ["10:5", "5:5", "100:200", "train=3:3"])
def test_subset_refuses_a_range_that_selects_nothing(samples: str, tmp_path: Path) -> None:
    source = write_small(tmp_path / "s.h5")
    out_path = tmp_path / "o.h5"
    code, out, err = run_cli("subset", str(source), str(out_path), "--samples", samples)
    assert code == 2 and out == ""
    assert "selects no sample" in err and "--samples" in err
    assert not out_path.exists()
    code, _, err = run_cli("subset", str(source), str(out_path), "--samples", "train=0:4")
    assert code == 0, err
    with h5ml.open(out_path) as ds:
        assert (ds["train"].num_samples, ds["test"].num_samples) == (4, 6)


def test_an_external_link_is_refused_without_a_python_only_remedy(tmp_path: Path) -> None:
    """§3.6: the command line never reads other files; the remedy it names is Python's, and says so."""
    path = write_small(tmp_path / "s.h5")
    with h5py.File(path, "r+") as f:
        f["train/elsewhere"] = h5py.ExternalLink("other.h5", "/x")
    code, out, err = run_cli("dump", str(path))
    assert code == 2 and out == ""
    assert "external link to other.h5:/x" in err
    assert "in Python with h5ml.open(..., allow_external=True)" in err
    assert "the command line never reads other files" in err


def test_an_image_folder_without_size_is_refused_in_the_interfaces_words(tmp_path: Path) -> None:
    """Dense images need --size: the command line names --mode and --size, Python mode= and size=."""
    from PIL import Image

    from h5ml.ingest import convert_image_folder

    folder = tmp_path / "photos" / "train" / "cat"
    folder.mkdir(parents=True)
    for k in range(2):
        Image.fromarray(np.full((8, 8, 3), 40 * k, np.uint8)).save(folder / f"{k}.png")
    code, _, err = run_cli("convert", str(tmp_path / "photos"), str(tmp_path / "o.h5"))
    assert code == 2 and "mode=" not in err and "size=" not in err
    assert "--mode dense stores every image at one size: pass --size WxH, or use --mode ragged" in err
    with pytest.raises(h5ml.ParameterError, match=r"mode='dense' \(--mode dense\) stores every image") as e:
        convert_image_folder(tmp_path / "photos", tmp_path / "o.h5")
    assert "(parameter size, option --size)" in str(e.value) and not (tmp_path / "o.h5").exists()
