"""The pre-commit hook ``h5ml-validate`` of ``.pre-commit-hooks.yaml`` (issue 17).

Two ways, both real:

- the hook's definition, loaded from the YAML: its ``files`` pattern picks the
  ``.h5``/``.hdf5`` files and the ``index.json`` of sharded datasets of a
  repository (``git ls-files`` of a real temporary repository), and its
  ``entry`` run on them, as pre-commit runs it (the file names after the
  entry), fails on an invalid file with its issue code and passes a valid one
  (a few seconds);
- ``pre-commit try-repo`` of this checkout on that repository: pre-commit
  builds the hook's own virtual environment (``pip install`` of this
  checkout, its dependencies from PyPI) and runs it: the hook fails, the
  invalid file's E106 in its output and the valid file's verdict VALID.
  Measured here: 33-44 s (most of it pip), so it is marked ``slow``; CI runs
  it (``scripts/test.sh`` runs every test). It needs ``git`` and the network
  (PyPI), and is given 300 s.
"""

from __future__ import annotations

import io
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np
import pytest
import yaml

import h5ml
from _shards import columns, write_sharded
from h5ml.tools import cli

ROOT = Path(__file__).resolve().parent.parent
HOOKS = ROOT / ".pre-commit-hooks.yaml"
GIT = shutil.which("git")
PRE_COMMIT_TIMEOUT = 300  # seconds for try-repo: a virtual environment built with pip, then the hook
HOOK_TIMEOUT = 120  # seconds for one run of the hook's entry


def run_cli(*args: str) -> tuple[int, str, str]:
    """Run the command line in this process; return (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    code = cli.run(list(args), out, err)
    return code, out.getvalue(), err.getvalue()


def _hook() -> dict[str, object]:
    hooks = yaml.safe_load(HOOKS.read_text(encoding="utf-8"))
    (hook,) = [h for h in hooks if h["id"] == "h5ml-validate"]
    return dict(hook)


def _git(repo: Path, *args: str) -> str:
    assert GIT is not None
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org"}
    env |= {"GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.org"}
    proc = subprocess.run([GIT, *args], cwd=repo, env=env, capture_output=True, text=True, timeout=60, check=True)
    return proc.stdout


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A git repository: data/good.h5, data/UPPER.H5, data/bad.h5 (E106), a sharded dataset, a README, JSON files
    not indexes: data/labels.json, and docs/index.json (another project's index, the name an h5ml index has)."""
    if GIT is None:
        pytest.skip("git is not on PATH")
    root = tmp_path_factory.mktemp("hooked")
    (root / "data").mkdir()
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    for name in ("good.h5", "bad.h5", "UPPER.H5"):
        h5ml.write(root / "data" / name, {"train": {"x": x}}, metadata={"name": "toy", "license": "CC0-1.0"})
    with h5py.File(root / "data" / "bad.h5", "r+") as f:
        del f.attrs["complete"]  # E106: its writer did not finish
    write_sharded(root / "data" / "sharded", columns(5), (3, 2))
    (root / "README.md").write_text("data\n", encoding="utf-8")
    (root / "data" / "labels.json").write_text("{}\n", encoding="utf-8")
    (root / "docs").mkdir()
    (root / "docs" / "index.json").write_text('{"format": "search-index", "pages": ["a", "b"]}\n', encoding="utf-8")
    _git(root, "init", "-q")
    _git(root, "add", ".")
    return root


def test_the_hook_is_defined_as_the_guide_says() -> None:
    """entry, language python, pass_filenames, one process; its pattern takes .h5, .hdf5, index.json in any case."""
    hook = _hook()
    assert shlex.split(str(hook["entry"])) == ["h5ml", "validate", "--skip-other-json", "--min-severity", "warning"]
    assert hook["language"] == "python" and hook["pass_filenames"] is True
    assert hook["require_serial"] is True  # one process sees a shard and its index: the shard is checked once
    pattern = re.compile(str(hook["files"]))
    for name in ("a.h5", "data/b.hdf5", "index.json", "ds/index.json", "x/y/index.json", "A.H5", "b.HDF5", "c.Hdf5"):
        assert pattern.search(name), name
    for name in ("ds/INDEX.JSON", "ds/Index.json"):  # what a case-insensitive file system (macOS, Windows) holds
        assert pattern.search(name), name
    for name in ("a.h5.bak", "a.h5py", "myindex.json", "ds/index.json.orig", "labels.json", "a.H5x", "a.H5.BAK"):
        assert not pattern.search(name), name


def _entry(files: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run the hook's entry on ``files`` as pre-commit does: the entry's words, then the file names."""
    words = shlex.split(str(_hook()["entry"]))
    assert words[0] == "h5ml"  # the console script; `python -m h5ml` is the same entry point
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "reference"), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run(
        [sys.executable, "-m", "h5ml", *words[1:], *files],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=HOOK_TIMEOUT,
        check=False,
    )


def test_the_hooks_entry_fails_the_invalid_file_and_passes_the_others(repo: Path) -> None:
    """The files the pattern picks; bad.h5 fails (exit 1, E106); the others pass, another project's index.json too."""
    pattern = re.compile(str(_hook()["files"]))
    picked = sorted(name for name in _git(repo, "ls-files").split("\n") if name and pattern.search(name))
    shards = sorted(name for name in picked if "/sharded/" in name and name.endswith(".h5"))
    assert picked == sorted(
        ["data/UPPER.H5", "data/bad.h5", "data/good.h5", "data/sharded/index.json", "docs/index.json", *shards]
    )
    assert len(shards) == 2
    bad = _entry(["data/bad.h5"], repo)
    assert bad.returncode == 1, bad.stderr
    assert "E106" in bad.stdout and "data/bad.h5: INVALID" in bad.stdout
    others = [name for name in picked if name != "data/bad.h5"]
    good = _entry(others, repo)
    assert good.returncode == 0, good.stdout + good.stderr
    assert "data/good.h5: VALID" in good.stdout and "data/UPPER.H5: VALID" in good.stdout
    assert "the sharded dataset is VALID" in good.stdout
    for shard in shards:  # given beside their index: checked once, as its shards
        assert good.stdout.count(f"{shard}: VALID") == 1, good.stdout
        assert f"{shard}: checked above, as the shard {shard} of data/sharded/index.json" in good.stdout
    assert "docs/index.json" not in good.stdout and "E170" not in good.stdout
    assert 'h5ml: note: docs/index.json is not the index of an h5ml dataset (it has no "format"' in good.stderr
    assert "I303" not in good.stdout  # --min-severity warning: no info notes in the hook's output
    assert _entry(picked, repo).returncode == 1  # one invalid file fails the commit


def test_skip_other_json_skips_only_json_that_does_not_say_it_is_an_h5ml_index(tmp_path: Path) -> None:
    """Another project's index.json: E170 without the flag, skipped with it; an h5ml index damaged by an edit is not."""
    write_sharded(tmp_path / "ds", columns(5), (3, 2))
    index = tmp_path / "ds" / "index.json"
    other = tmp_path / "site" / "index.json"
    other.parent.mkdir()
    other.write_text('[{"title": "Home", "url": "/"}]\n', encoding="utf-8")
    broken = tmp_path / "broken" / "index.json"
    broken.parent.mkdir()
    broken.write_text(index.read_text(encoding="utf-8")[:-20], encoding="utf-8")  # cut: not JSON any more
    code, out, err = run_cli("validate", str(other))
    assert code == 1 and "E170" in out and err == ""
    code, out, err = run_cli("validate", "--skip-other-json", str(other), str(other.parent))
    assert (code, out) == (0, "")
    assert err.count(f"h5ml: note: {other} is not the index of an h5ml dataset") == 1
    assert f"h5ml: note: {other.parent} is the file {other} given before: it is checked once" in err
    code, out, err = run_cli("validate", "--skip-other-json", str(broken))
    assert code == 1 and "E170" in out and err == ""
    code, out, err = run_cli("validate", "--skip-other-json", "--format", "json", str(index))
    assert code == 0 and err == "" and json.loads(out)["files"][0]["kind"] == "index"


@pytest.mark.slow
def test_pre_commit_try_repo_runs_the_hook(repo: Path, tmp_path: Path) -> None:
    """``pre-commit try-repo`` of this checkout: the hook builds its environment, fails on bad.h5 with E106."""
    pre_commit = shutil.which("pre-commit") or shutil.which("pre-commit", path=str(Path(sys.executable).parent))
    if pre_commit is None:
        pytest.fail("pre-commit is not installed: it is in the dev extra of pyproject.toml")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "NO_COLOR", "FORCE_COLOR")}
    env |= {"PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home"), "PRE_COMMIT_COLOR": "never"}
    proc = subprocess.run(
        [pre_commit, "try-repo", str(ROOT), "h5ml-validate", "--files", "data/good.h5", "data/bad.h5", "--verbose"],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=PRE_COMMIT_TIMEOUT,
        check=False,
    )
    output = proc.stdout + proc.stderr
    assert proc.returncode == 1, output[-3000:]
    assert re.search(r"h5ml validate\.+Failed", output), output[-3000:]
    assert "- hook id: h5ml-validate" in output and "- exit code: 1" in output
    assert "E106" in output and "data/bad.h5: INVALID" in output
    assert "data/good.h5: VALID" in output
