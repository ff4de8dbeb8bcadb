"""Many files in one ``h5ml validate``: warm child processes that check file after file (issue 15, SPEC §9.3, §10.3).

The command line checks its files in one warm child process (``--jobs N``:
N of them), not one child per file; a child that crashed or passed a file's
time limit is stopped and the next file gets a fresh one. These tests run the
real command line (``h5ml.tools.cli.run``), real files and real child
processes: the reports of many files in one call are those of one call per
file, and a file that hangs or crashes its child among good files is reported
while the others are still checked.
"""

from __future__ import annotations

import io
import json
import os
import signal
import threading
import time
from pathlib import Path

import h5py
import pytest

from badfiles import add_slow_split, minimal_valid, not_h5ml
from h5ml.errors import ValidationTimeoutError
from h5ml.tools import cli
from h5ml.validator.runner import validate, validate_each
from h5ml.validator.sandbox import ChildDiedError, WarmChild


def run_cli(*args: str) -> tuple[int, str, str]:
    """Run the command line in this process; return (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    code = cli.run(list(args), out, err)
    return code, out.getvalue(), err.getvalue()


# Top-level functions: the child imports them by module and name.
def _pid() -> int:
    return os.getpid()


def _die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def _sleep(seconds: float) -> None:
    time.sleep(seconds)


def _files(tmp_path: Path) -> list[str]:
    """A valid file, an invalid one (a split without num_samples: E), a file that is not h5ml, a missing one."""
    good = minimal_valid(tmp_path / "good.h5")
    bad = minimal_valid(tmp_path / "bad.h5")
    with h5py.File(bad, "r+") as f:
        del f["train"].attrs["num_samples"]
    other = not_h5ml(tmp_path / "plain.h5")
    return [str(good), str(bad), str(other), str(tmp_path / "missing.h5")]


def _entries(out: str) -> list[dict[str, object]]:
    files = json.loads(out)["files"]
    assert isinstance(files, list)
    return files


def test_many_files_in_one_call_give_the_reports_and_exit_status_of_one_call_each(tmp_path: Path) -> None:
    """SPEC §9.3: one call over good, invalid, foreign and missing files reports each as a call of its own does.

    With one warm child and with two (``--jobs 2``): the JSON entries are equal one by one, the text report
    is the single reports in order followed by the summary line, and the exit status is the worst (2: the
    missing file cannot be read; 1 without it).
    """
    paths = _files(tmp_path)
    alone = [run_cli("validate", "--format", "json", p) for p in paths]
    assert [code for code, _, _ in alone] == [0, 1, 1, 2]
    texts = [run_cli("validate", p)[1] for p in paths]
    for jobs in ("1", "2"):
        code, out, err = run_cli("validate", "--jobs", jobs, "--format", "json", *paths)
        assert code == 2
        assert _entries(out) == [_entries(o)[0] for _, o, _ in alone]
        assert "Traceback" not in err
        code, out, _ = run_cli("validate", "--jobs", jobs, *paths)
        assert code == 2
        assert out == "".join(texts) + "4 files checked, 3 failed\n"
    assert run_cli("validate", "--quiet", *paths[:3])[0] == 1


def test_a_file_past_its_time_limit_among_good_files_is_reported_and_the_next_gets_a_fresh_child(
    tmp_path: Path,
) -> None:
    """SPEC §10.3-R1: a deep check stopped at --timeout is E101 for that file alone; the files after it are checked.

    The slow file (16 GiB of zeros behind 17 MB of gzip chunks, badfiles.add_slow_split) holds its child past
    the limit; the child is stopped, and the good file after it gets the report it gets alone.
    """
    good = minimal_valid(tmp_path / "good.h5")
    after = minimal_valid(tmp_path / "after.h5")  # another file: one given twice is checked once
    slow = tmp_path / "slow.h5"
    minimal_valid(slow)
    with h5py.File(slow, "r+") as f:
        add_slow_split(f)
    limit = "6"
    alone = run_cli("validate", "--deep", "--timeout", limit, "--format", "json", str(good))
    code, out, err = run_cli(
        "validate", "--deep", "--timeout", limit, "--format", "json", str(good), str(slow), str(after)
    )
    assert code == 2
    first, stopped, last = _entries(out)
    assert first == _entries(alone[1])[0]
    assert last == {**first, "path": str(after)}  # the file after the stopped child: the same report as alone
    assert last["valid"] is True
    issues = stopped["issues"]
    assert isinstance(issues, list)
    assert issues[-1]["code"] == "E101"
    assert f"did not finish within {float(limit)} s" in issues[-1]["message"]
    assert stopped["readable"] is False
    assert "Traceback" not in err


def _children() -> set[int]:
    """The process ids of this process's children (Linux: /proc/self/task/*/children)."""
    pids: set[int] = set()
    for task in Path("/proc/self/task").iterdir():
        try:
            pids.update(int(p) for p in (task / "children").read_text().split())
        except OSError:
            continue
    return pids


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="needs Linux /proc to find the child process")
def test_a_child_that_crashes_among_good_files_is_reported_and_replaced(tmp_path: Path) -> None:
    """SPEC §10.3-R1: a child that dies in the middle of a file (as when HDF5 crashes) gives that file E101.

    The child is killed with SIGKILL (what a segmentation fault of the HDF5 library looks like to the
    parent) while it reads the slow file's data; the report of that file ends with E101 saying so, and the
    good file after it is checked by a fresh child, with the report it gets alone.
    """
    good = str(minimal_valid(tmp_path / "good.h5"))
    slow = tmp_path / "slow.h5"
    minimal_valid(slow)
    with h5py.File(slow, "r+") as f:
        add_slow_split(f)
    before = _children()
    reports = validate_each([good, str(slow), good], deep=True, timeout=120)
    first, _ = next(reports)
    assert first.valid
    (child,) = _children() - before  # the warm child, now reading the slow file

    def kill() -> None:
        time.sleep(1.0)
        os.kill(child, signal.SIGKILL)

    killer = threading.Thread(target=kill)
    killer.start()
    crashed, _ = next(reports)
    killer.join()
    last, _ = next(reports)
    assert crashed.codes[-1] == "E101"
    assert "crashed" in crashed.issues[-1].message and "SIGKILL" in crashed.issues[-1].message
    assert not crashed.readable
    assert last.issues == validate(good, deep=True, timeout=120).issues
    assert last.valid
    assert child not in _children()  # reaped


def test_warm_child_serves_call_after_call_in_one_process() -> None:
    """§10.3: one child interpreter answers every call; started once."""
    with WarmChild() as child:
        pids = {child.run(_pid, (), 60) for _ in range(3)}
        assert len(pids) == 1
        assert child.starts == 1
        assert child.pid in pids
    assert child.pid is None


def test_warm_child_is_replaced_after_a_crash_and_after_a_time_limit() -> None:
    """§10.3: a crash is ChildDiedError and a time limit ValidationTimeoutError; each next call gets a new child."""
    with WarmChild() as child:
        first = child.run(_pid, (), 60)
        with pytest.raises(ChildDiedError, match="SIGKILL"):
            child.run(_die, (), 60)
        second = child.run(_pid, (), 60)
        with pytest.raises(ValidationTimeoutError, match=r"did not finish within 1\.0 s"):
            child.run(_sleep, (30.0,), 1.0)
        third = child.run(_pid, (), 60)
        assert len({first, second, third}) == 3
        assert child.starts == 3


def test_warm_child_raises_the_exception_of_a_call_and_keeps_serving() -> None:
    """An exception raised in the child comes back to the caller; the child is kept (it did not crash)."""
    with WarmChild() as child:
        pid = child.run(_pid, (), 60)
        with pytest.raises(ValueError, match=r"timeout must be >= 0"):
            child.run(_pid, (), -1.0)
        with pytest.raises(TypeError):
            child.run(_sleep, (), 60)  # missing argument: raised in the child
        assert child.run(_pid, (), 60) == pid
        assert child.starts == 1


def test_one_warm_child_over_every_bad_file_reports_each_as_alone(tmp_path: Path) -> None:
    """§9.3, §10.3: one child checks every defect of the registry's bad files in a row; no file changes another's report.

    Every file of ``badfiles.CASES`` (one per issue code), then a valid one: the reports from one warm
    child (deep for the cases that need it) equal those of each file checked alone in this process.
    """
    from badfiles import CASES

    for deep in (False, True):
        paths: list[str] = []
        for i, case in enumerate(c for c in CASES if c.deep == deep):
            path = tmp_path / f"{deep}_{i:03d}_{case.code}.h5"
            case.build(path)
            paths.append(str(path))
        paths.append(str(minimal_valid(tmp_path / f"good_{deep}.h5")))
        warm = [report for report, _ in validate_each(paths, deep=deep, timeout=120)]
        assert len(warm) == len(paths) > 5
        for path, report in zip(paths, warm, strict=True):
            assert report.issues == validate(path, deep=deep).issues, path
        assert warm[-1].valid and not warm[-1].issues
