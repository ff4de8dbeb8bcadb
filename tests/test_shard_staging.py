"""A sharded writer killed with SIGKILL leaves its staging folder: listed, cleaned, and warned of (SPEC §12.1-S2, §12.4).

A real child process writes a sharded dataset over an existing one
(``overwrite=True``) and is killed mid-write: the old index stays valid, and
its hidden ``.h5ml-shards-<pid>-<machine>-<random>`` folder holds the shards
of the unfinished write. ``h5ml temporaries FOLDER`` lists it as stale,
``--clean`` removes it, the validator reports it as W211 until then, and the
next writer of the folder removes it too. A live writer's staging folder is
never removed.
"""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

import h5ml
from h5ml.model.staging_names import STAGING_PREFIX, parse_staging_name
from h5ml.tools import cli
from h5ml.writer.temporaries import machine_tag, remove_stale, temporaries

ROOT = Path(__file__).resolve().parents[1]

_CHILD = """
import sys, numpy as np, h5ml
w = h5ml.Writer(sys.argv[1], {"name": "ds"}, samples_per_shard=50, overwrite=True)
i = 0
while True:
    w.append("train", {"x": np.full((25, 256), i, "f4")})
    w.flush()
    i += 1
"""


def _run(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = cli.run(list(args), out, err)
    return code, out.getvalue(), err.getvalue()


def _killed_over_a_dataset(out: Path) -> tuple[int, Path]:
    """A valid dataset in ``out``, then a child writing over it, SIGKILLed after 2 shards: (its pid, its staging)."""
    with h5ml.Writer(out, {"name": "ds"}, samples_per_shard=4) as w:
        w.append("train", {"x": np.zeros((6, 2), "f4")})
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "reference"), os.environ.get("PYTHONPATH", "")])}
    with subprocess.Popen([sys.executable, "-c", _CHILD, str(out)], env=env, stderr=subprocess.PIPE) as child:
        try:
            deadline = time.monotonic() + 60
            while len(list(out.glob(f"{STAGING_PREFIX}*/train/train-*.h5"))) < 2:
                assert child.poll() is None, child.communicate()[1].decode()
                assert time.monotonic() < deadline, "the child wrote no two shards in 60 s"
                time.sleep(0.05)
        finally:
            child.send_signal(signal.SIGKILL)
            child.communicate(timeout=30)
    assert child.returncode == -signal.SIGKILL
    (staging,) = [p for p in out.iterdir() if p.name.startswith(STAGING_PREFIX)]
    return child.pid, staging


def test_a_killed_writers_staging_folder_is_listed_warned_of_and_cleaned(tmp_path: Path) -> None:
    """SPEC §12.1-S2: W211 for the staging folder; h5ml temporaries lists it as stale and --clean removes it."""
    out = tmp_path / "ds"
    pid, staging = _killed_over_a_dataset(out)
    assert parse_staging_name(staging.name) is not None and parse_staging_name(staging.name).pid == pid  # type: ignore[union-attr]
    assert parse_staging_name(staging.name).machine == machine_tag()  # type: ignore[union-attr]
    size = sum(p.stat().st_size for p in staging.rglob("*") if p.is_file())

    (found,) = temporaries(out)
    assert (found.kind, found.state, found.pid, found.path, found.target, found.size) == (
        "staging", "stale", pid, staging, out, size
    )  # fmt: skip
    code, text, err = _run("temporaries", str(out))
    assert code == 0, err
    assert "stale" in text and f"{staging.name}/  (a sharded writer's staging folder, process {pid}" in text
    assert f"remove them with `h5ml temporaries {out} --clean`" in text

    report = h5ml.validate(out)
    assert report.valid and [(i.code, i.path) for i in report.issues] == [("W211", "/")]
    assert f"{staging.name}/ in the dataset's folder" in report.issues[0].message
    assert f"process {pid}" in report.issues[0].message
    code, text, _ = _run("validate", "--format", "json", str(out))
    assert code == 0 and [i["code"] for i in json.loads(text)["files"][0]["issues"]] == ["W211"]

    code, text, err = _run("temporaries", str(out), "--clean")
    assert code == 0 and f"removed 1 stale temporary file(s) in {out}" in text, text + err
    assert not staging.exists() and sorted(p.name for p in out.iterdir()) == ["index.json", "train"]
    assert h5ml.validate(out).issues == ()
    with h5ml.open(out) as ds:  # the dataset the killed writer would have replaced is intact
        assert len(ds["train"]) == 6


def test_the_next_writer_removes_a_killed_writers_staging_folder(tmp_path: Path) -> None:
    """The next sharded writer of the folder removes the stale staging folder before it stages its own."""
    out = tmp_path / "ds"
    _, staging = _killed_over_a_dataset(out)
    with h5ml.Writer(out, {"name": "ds"}, samples_per_shard=50, overwrite=True) as w:
        w.append("train", {"x": np.zeros((60, 2), "f4")})
    assert not staging.exists()
    assert sorted(str(p.relative_to(out)) for p in out.rglob("*")) == [
        "index.json", "train", "train/train-00000.h5", "train/train-00001.h5"
    ]  # fmt: skip
    assert h5ml.validate(out).issues == ()


def test_a_live_or_unknown_staging_folder_is_kept(tmp_path: Path) -> None:
    """This process's staging folder (live), an older name without a machine, another machine's: never removed."""
    out = tmp_path / "ds"
    with h5ml.Writer(out, {"name": "ds"}, samples_per_shard=4) as w:
        w.append("train", {"x": np.zeros((2, 2), "f4")})
    live = out / f"{STAGING_PREFIX}{os.getpid()}-{machine_tag()}-{'a' * 12}"
    older = out / f"{STAGING_PREFIX}999999999-{'b' * 12}"  # the name writers used before machine tags
    elsewhere = out / f"{STAGING_PREFIX}999999999-{'0' * 12}-{'c' * 12}"
    for folder in (live, older, elsewhere):
        (folder / "train").mkdir(parents=True)
        (folder / "train" / "train-00000.h5").write_bytes(b"\0" * 10)
    found = {t.path.name: (t.kind, t.state) for t in temporaries(out)}
    assert found == {p.name: ("staging", "live") for p in (live, older, elsewhere)}
    assert remove_stale(out) == [] and live.exists() and older.exists() and elsewhere.exists()
    assert [i.code for i in h5ml.validate(out).issues] == ["W211"] * 3
    assert temporaries(out, "index.json") == []  # a target file's temporaries: the staging folders are not its
