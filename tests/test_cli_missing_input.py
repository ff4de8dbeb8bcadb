"""An input path that does not exist, given to each command of ``h5ml``: one usage error, in one pattern.

Every command that reads a file or folder the user names checks its input
arguments with one click parameter type (:data:`h5ml.tools.input_paths.INPUT_PATH`):
a path that does not exist ends as the line ``h5ml: error: Invalid value for
'ARGUMENT': 'PATH' does not exist; check the path (see 'h5ml COMMAND
--help')``, exit code 2 as click gives any usage error, nothing on stdout,
nothing written. ``h5ml validate`` reports the missing file in its report
instead (E100, exit 2, SPEC §3.1), so that ``--format json`` and the other
formats still give a document; ``h5ml temporaries PATH`` lists the temporary
files of a PATH that need not exist (a writer that was killed never made it).
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest

import h5ml
from h5ml.tools import cli


def run_cli(*args: str) -> tuple[int, str, str]:
    """Run the command line in this process; return (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    code = cli.run(list(args), out, err)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """A folder with one real h5ml file (good.h5) and one real .npz source (good.npz), beside the missing paths."""
    rng = np.random.default_rng(23)
    h5ml.write(
        tmp_path / "good.h5",
        {"train": {"x": rng.normal(size=(4, 2)).astype(np.float32)}},
        metadata={"name": "good", "license": "CC0-1.0", "description": "a real file"},
    )
    np.savez(tmp_path / "good.npz", x_train=rng.normal(size=(3, 2)), y_train=np.arange(3))
    return tmp_path


#: command, its arguments ({missing}: a path that does not exist, {good}/{npz}: real files, {out}/{outdir}: an
#: output that must not appear), and the argument the message names.
CASES = [
    ("inspect", ["{missing}"], "FILE"),
    ("inspect", ["{missing}/index.json"], "FILE"),
    ("dump", ["{missing}"], "FILE"),
    ("verify", ["{missing}"], "FILE"),
    ("croissant", ["{missing}"], "SOURCE"),
    ("croissant", ["{missing}", "-o", "{out}"], "SOURCE"),
    ("report", ["{missing}", "-o", "{out}"], "FILE"),
    ("report", ["{missing}/index.json", "-o", "{out}"], "FILE"),
    ("export", ["{missing}", "{out}"], "SOURCE"),
    ("subset", ["{missing}", "{out}"], "SOURCE"),
    ("merge", ["{good}", "{missing}", "-o", "{out}"], "SOURCES..."),
    ("shard", ["{missing}", "{outdir}", "--samples-per-shard", "2"], "SOURCE"),
    ("unshard", ["{missing}", "{out}"], "INDEX"),
    ("view", ["{missing}/index.json", "{out}"], "INDEX"),
    ("convert", ["{missing}", "{out}"], "SOURCES..."),
    ("convert", ["{npz}", "{missing}", "{out}"], "SOURCES..."),
    ("convert", ["--plan", "{missing}"], "SOURCES..."),
]


@pytest.mark.parametrize(("command", "args", "argument"), CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_a_missing_input_is_one_usage_error_naming_the_argument(
    folder: Path, command: str, args: list[str], argument: str
) -> None:
    missing = folder / "nope" / "data.h5"
    values = {
        "missing": str(missing),
        "good": str(folder / "good.h5"),
        "npz": str(folder / "good.npz"),
        "out": str(folder / "out.h5"),
        "outdir": str(folder / "outdir"),
    }
    argv = [a.format(**values) for a in args]
    path = next(a for a in argv if a.startswith(str(missing)))
    code, stdout, stderr = run_cli(command, *argv)
    assert code == 2
    assert stdout == ""
    assert stderr == (
        f"h5ml: error: Invalid value for '{argument}': '{path}' does not exist; check the path "
        f"(see 'h5ml {command} --help')\n"
    )
    assert sorted(p.name for p in folder.iterdir()) == ["good.h5", "good.npz"]  # nothing written


def test_a_symbolic_link_to_nothing_is_named_as_such(folder: Path) -> None:
    link = folder / "link.h5"
    link.symlink_to(folder / "gone.h5")
    code, stdout, stderr = run_cli("inspect", str(link))
    assert (code, stdout) == (2, "")
    assert stderr == (
        f"h5ml: error: Invalid value for 'FILE': '{link}' is a symbolic link to nothing; check the path "
        "(see 'h5ml inspect --help')\n"
    )


@pytest.mark.parametrize("command", ["unshard", "view"])
def test_a_folder_without_an_index_names_the_missing_index(folder: Path, command: str) -> None:
    """An existing folder that holds no index.json: the index is named, not the system's 'No such file'."""
    empty = folder / "empty"
    empty.mkdir()
    code, stdout, stderr = run_cli(command, str(empty), str(empty / "out.h5"))
    assert (code, stdout) == (2, "")
    assert stderr == (
        f"h5ml: error: {empty / 'index.json'}: no shard index here; give the index.json of a sharded h5ml "
        "dataset, or its folder\n"
    )
    assert list(empty.iterdir()) == []


def test_validate_reports_a_missing_file_in_the_same_words(folder: Path) -> None:
    """validate keeps the missing file in its report (E100, readable false, exit 2): a document in every format."""
    missing = folder / "nope" / "data.h5"
    code, stdout, stderr = run_cli("validate", "--format", "json", str(folder / "good.h5"), str(missing))
    assert code == 2 and stderr == ""
    import json

    reports = json.loads(stdout)["files"]
    assert [r["readable"] for r in reports] == [True, False]
    (issue,) = reports[1]["issues"]
    assert issue["code"] == "E100"
    assert f"{missing} does not exist" in issue["message"] and "check the path" in issue["message"]


def test_an_existing_input_still_runs(folder: Path) -> None:
    """The check lets real paths and URLs through: the command runs as before."""
    code, stdout, stderr = run_cli("inspect", str(folder / "good.h5"))
    assert code == 0 and stderr == "" and "train  4 samples" in stdout
    code, _, stderr = run_cli("convert", str(folder / "good.npz"), str(folder / "c.h5"))
    assert code == 0, stderr
    with h5ml.open(folder / "c.h5") as ds:
        assert ds["train"].num_samples == 3


@pytest.mark.parametrize("command", ["dump", "verify", "report", "croissant", "convert"])
def test_a_url_is_refused_as_a_url_and_a_file_url_read_as_its_path(tmp_path: Path, command: str) -> None:
    """Commands of local paths: http:// is refused saying which commands read URLs; file:// is its local path."""
    source = h5ml.write(tmp_path / "d.h5", {"train": {"x": np.arange(4.0)}}, metadata={"license": "MIT"})
    out = [str(tmp_path / "o.h5")] if command == "convert" else []
    code, stdout, err = run_cli(command, "http://127.0.0.1:9/d.h5", *out)
    assert (code, stdout) == (2, "") and "Traceback" not in err, err
    assert "'http://127.0.0.1:9/d.h5' is a URL, and h5ml " in err and "h5ml inspect and h5ml validate read" in err
    extra = ["--output", str(tmp_path / "r.html")] if command == "report" else []
    code, _, err = run_cli(command, Path(source).as_uri(), *out, *extra)
    if command == "convert":  # read as the local file: an h5ml file already, which convert says
        assert code == 2 and f"{source}: already an h5ml file" in err, err
    else:
        assert code == 0, err
