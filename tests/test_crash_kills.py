"""SIGKILLed writers: the target holds the previous complete file or the new one, never a half file (SPEC §4.4; issue 14).

Every operation that writes an h5ml file is killed at seeded points of its
run: ``h5ml.write``, a streaming ``Writer`` with many appends, ``Writer(mode="a")``,
``h5ml convert`` of an audio folder, an image folder, a CSV table, a Parquet
table and an HDF5 file in the tutorial layout (``x_train``, ``y_train``, ...),
``h5ml merge`` and ``h5ml subset``. Each run is a child process (forked by a
multiprocessing fork server that has already imported h5ml, numpy, PIL and
soundfile, so a start costs milliseconds) doing the operation on a target
that already holds a previous complete file of known content; the parent
sends SIGKILL at a point drawn uniformly over the operation's duration,
measured once per variant by an unkilled run. Two variants of each
operation alternate (other values or another source), so the new content
always differs from the previous one.

After every kill the parent checks:

- the target exists and reads (every sample of every feature through
  ``h5ml.open``) as exactly the previous content or exactly the new one, and
  deep validation passes: otherwise it is a half file (or, when missing, a
  lost previous file);
- nothing but the target and the writer's temporaries is in its folder;
- a temporary of an earlier killed writer remains only while no later write
  got as far as creating its own temporary (the next writer to a target
  removes the stale ones first, :mod:`h5ml.writer.temporaries`); after the
  unkilled write that ends each operation's series, none remains.

The kill points are ``fraction * duration``, the fractions drawn from
``random.Random(f"{seed}-{operation}")`` with ``seed`` from
``$H5ML_KILL_SEED`` (default 14): a failure prints the seed, the run, the
fraction and the time, and ``H5ML_KILL_SEED=<seed> pytest
tests/test_crash_kills.py -k <operation>`` replays the same fractions.
"""

from __future__ import annotations

import csv
import hashlib
import io
import os
import pickle
import random
import select
import shutil
import signal
import subprocess
import sys
import time
import wave
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import pytest

import h5ml
from h5ml.writer.temporaries import temporaries, temporary_name

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL and fork are POSIX")

SEED = int(os.environ.get("H5ML_KILL_SEED", "14"))
#: Kills per operation; 10 operations give the issue's "at least 200 SIGKILLs".
KILLS = 22
#: Seconds a child may take to start or to finish an unkilled run.
CHILD_SECONDS = 60
N = 24


# -- the inputs: a few KB each -------------------------------------------------------------------------------


def _arrays(variant: int, n: int = N) -> dict[str, Any]:
    rng = np.random.default_rng(100 + variant)
    return {
        "x": rng.standard_normal((n, 6)).astype(np.float32),
        "label": h5ml.Categorical(rng.integers(0, 3, n).astype(np.int64), ["a", "b", "c"]),
        "text": [f"v{variant} row {i}" for i in range(n)],
        "seq": [np.arange(i % 5 + 1, dtype=np.int16) * (variant + 1) for i in range(n)],
    }


def _wav(path: Path, values: np.ndarray, rate: int = 8000) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with wave.open(str(path), "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(rate)
        out.writeframes(values.astype("<i2").tobytes())


def _png(path: Path, pixels: np.ndarray) -> None:
    from PIL import Image

    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(pixels).save(path, format="PNG")


def _build_inputs(root: Path) -> None:
    """Two variants (0, 1) of every source the operations read, under ``root``."""
    for variant in (0, 1):
        rng = np.random.default_rng(200 + variant)
        base = root / f"v{variant}"
        for split, count in (("train", 6), ("test", 3)):
            for i in range(count):
                _wav(base / "audio" / split / "speech" / f"{i}.wav", rng.integers(-9000, 9000, 300 + 40 * i))
                klass = ("cat", "dog")[i % 2]
                _png(base / "images" / split / klass / f"{i}.png", rng.integers(0, 256, (8, 8, 3), dtype=np.uint8))
        rows = [(float(rng.standard_normal()), int(rng.integers(0, 100)), ("red", "green")[i % 2]) for i in range(40)]
        with open(base / "table.csv", "w", newline="", encoding="utf-8") as out:
            writer = csv.writer(out)
            writer.writerow(["value", "count", "colour"])
            writer.writerows(rows)
        import pandas as pd

        pd.DataFrame(rows, columns=["value", "count", "colour"]).to_parquet(base / "table.parquet")
        with h5py.File(base / "tutorial.h5", "w") as f:  # the Keras tutorial's layout, in one HDF5 file
            for split, count in (("train", 30), ("test", 10)):
                f[f"x_{split}"] = rng.standard_normal((count, 4, 4, 1)).astype(np.float32)
                f[f"y_{split}"] = rng.integers(0, 10, count).astype(np.int32)
        h5ml.write(base / "part.h5", {"train": _arrays(variant), "test": _arrays(variant + 2, 8)}, {"name": "part"})
    h5ml.write(root / "source.h5", {"train": _arrays(5, 60)}, {"name": "source"})
    h5ml.write(root / "base.h5", {"train": _arrays(6, 8)}, {"name": "base"})


# -- the operations (each runs in the child) -----------------------------------------------------------------


def _cli(*args: str) -> None:
    from h5ml.tools import cli

    out, err = io.StringIO(), io.StringIO()
    code = cli.run(list(args), out, err)
    if code != 0:
        raise AssertionError(f"h5ml {' '.join(args)} exited {code}: {err.getvalue()}")


def _op_write(root: Path, target: Path, variant: int) -> None:
    h5ml.write(
        target,
        {"train": _arrays(variant), "test": _arrays(variant + 2, 8)},
        {"name": f"write {variant}"},
        compression="gzip" if variant else None,
    )


def _op_appends(root: Path, target: Path, variant: int) -> None:
    with h5ml.Writer(target, {"name": f"appends {variant}"}) as writer:
        for step in range(12):
            batch = _arrays(10 * variant + step, 4)
            writer.append("train", batch)
            if step % 3 == 0:
                writer.append("test", _arrays(50 + step, 2))


def _op_append_mode(root: Path, target: Path, variant: int) -> None:
    with h5ml.Writer(target, mode="a") as writer:
        writer.append("train", _arrays(variant, 3))


def _convert(kind: str, *extra: str) -> Callable[[Path, Path, int], None]:
    def run(root: Path, target: Path, variant: int) -> None:
        _cli("convert", str(root / f"v{variant}" / kind), str(target), "--overwrite", "--quiet", *extra)

    return run


def _op_merge(root: Path, target: Path, variant: int) -> None:
    parts = [str(root / "v0" / "part.h5"), str(root / "v1" / "part.h5")]
    _cli("merge", *(parts if variant == 0 else parts[::-1]), "-o", str(target), "--overwrite")


def _op_subset(root: Path, target: Path, variant: int) -> None:
    _cli("subset", str(root / "source.h5"), str(target), "--samples", ("0:30", "25:60")[variant], "--overwrite")


@dataclass(frozen=True)
class Operation:
    run: Callable[[Path, Path, int], None]
    #: The new content depends on the previous one (append mode): it is computed on a copy of the target.
    extends: bool = False


def _slowly(path: Path, data: bytes, pieces: int = 16) -> None:
    """Write ``data`` to ``path`` in ``pieces`` with a pause between them (a writer that takes its time)."""
    with open(path, "wb") as out:
        for piece in range(pieces):
            out.write(data[piece * len(data) // pieces : (piece + 1) * len(data) // pieces])
            out.flush()
            time.sleep(0.004)


def _op_in_place(root: Path, target: Path, variant: int) -> None:
    """Not atomic, for the checks' own test: the target is overwritten where it is."""
    _slowly(target, (root / f"v{variant}" / "part.h5").read_bytes())


def _op_no_cleanup(root: Path, target: Path, variant: int) -> None:
    """Atomic but never removing a killed writer's temporary, for the checks' own test."""
    temp = temporary_name(target)
    _slowly(temp, (root / f"v{variant}" / "part.h5").read_bytes())
    os.replace(temp, target)


OPERATIONS: dict[str, Operation] = {
    "write": Operation(_op_write),
    "writer-appends": Operation(_op_appends),
    "writer-mode-a": Operation(_op_append_mode, extends=True),
    "convert-audio": Operation(_convert("audio")),
    "convert-images": Operation(_convert("images", "--size", "8x8")),
    "convert-csv": Operation(_convert("table.csv")),
    "convert-parquet": Operation(_convert("table.parquet")),
    "convert-hdf5": Operation(_convert("tutorial.h5")),
    "merge": Operation(_op_merge),
    "subset": Operation(_op_subset),
}
assert KILLS * len(OPERATIONS) >= 200, "issue 14 asks for at least 200 SIGKILLs"
#: Writers that break §4.4 on purpose: the checks must catch them (a check that cannot fail proves nothing).
CONTROLS: dict[str, Operation] = {"in-place": Operation(_op_in_place), "no-cleanup": Operation(_op_no_cleanup)}


# -- the parent ---------------------------------------------------------------------------------------------


def canonical(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        if value.dtype.kind == "O":
            return ("objects", value.shape, tuple(canonical(v) for v in value.tolist()))
        return (value.dtype.str, value.shape, value.tobytes())
    if isinstance(value, (list, tuple)):
        return tuple(canonical(v) for v in value)
    return value


def content(path: Path) -> str:
    """A digest of every sample of every feature of every split (names, dtypes, shapes, values, class names)."""
    parts: list[Any] = []
    with h5ml.open(path) as ds:
        for split_name in sorted(ds):
            split = ds[split_name]
            parts.append((split_name, split.num_samples))
            for name in sorted(split.features):
                feature = split[name]
                parts.append((name, feature.encoding, feature.class_names, canonical(feature[:])))
    return hashlib.sha256(pickle.dumps(parts, protocol=5)).hexdigest()


#: The fork server: imports everything an operation needs once, then forks one child per command
#: (``operation root target variant``). The child writes "go PID" before the operation and "done PID" after
#: it ("fail PID" after a traceback on stderr). The server reaps the child only when told ("reap") and then writes "exit PID STATUS": until then the
#: pid stays the child's (a zombie at worst), so a SIGKILL never reaches another process, and the parent never
#: looks at the target while a killed child could still be running.
SERVER = r"""
import os, sys, traceback
os.environ["OPENBLAS_NUM_THREADS"] = os.environ["OMP_NUM_THREADS"] = "1"
sys.path.insert(0, sys.argv[1])
import test_crash_kills as kills
kills.preload()
from pathlib import Path
for line in sys.stdin:
    if line.strip() == "reap":  # only when the parent says so: until then the child's pid cannot be reused
        _, status = os.waitpid(pid, 0)
        os.write(1, f"exit {pid} {os.waitstatus_to_exitcode(status)}\n".encode())
        continue
    operation, root, target, variant = line.split()
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            os.write(1, f"go {os.getpid()}\n".encode())
            kills.operation(operation).run(Path(root), Path(target), int(variant))
            os.write(1, f"done {os.getpid()}\n".encode())
        except BaseException:
            traceback.print_exc()
            os.write(1, f"fail {os.getpid()}\n".encode())
            code = 3
        finally:
            sys.stderr.flush()
            os._exit(code)
"""


def preload() -> None:
    """Import what the operations import lazily, in the fork server (so a child starts its work at once)."""
    import importlib

    for name in (
        "h5ml.tools.cli",
        "h5ml.reader",
        "h5ml.ingest.pipeline",
        "h5ml.ingest.audio",
        "h5ml.ingest.images",
        "h5ml.ingest.tables",
        "h5ml.ingest.hdf5",
        "h5ml.ingest.edit",
        "PIL.Image",
        "PIL.PngImagePlugin",
        "soundfile",
        "soxr",
        "pandas",
        "pyarrow.parquet",
        "pydantic",
        "rich.progress",
    ):
        importlib.import_module(name)


def operation(name: str) -> Operation:
    """The operation (or control writer) of this name."""
    return OPERATIONS.get(name) or CONTROLS[name]


class Server:
    """The fork server's process, and the children it starts (one at a time)."""

    def __init__(self, root: Path, log: Path) -> None:
        self.root = root
        self.log = log
        with open(log, "wb") as errors:
            self.proc = subprocess.Popen(
                [sys.executable, "-c", SERVER, str(Path(__file__).parent)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=errors,
            )
        self._buffer = b""

    def _line(self) -> list[str]:
        """The next line the server or a child wrote, split into words."""
        assert self.proc.stdout is not None
        deadline = time.monotonic() + CHILD_SECONDS
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            ready, _, _ = select.select([self.proc.stdout], [], [], max(left, 0))
            chunk = os.read(self.proc.stdout.fileno(), 4096) if ready else b""
            if not chunk:
                raise AssertionError(f"the fork server stopped or hung; its errors:\n{self.errors()}")
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        return line.decode().split()

    def errors(self) -> str:
        """The end of what the server and its children wrote to stderr."""
        return self.log.read_text(encoding="utf-8", errors="replace")[-4000:]

    def start(self, operation: str, target: Path, variant: int) -> int:
        """Start the operation in a new child; return its pid once it said "go"."""
        assert self.proc.stdin is not None
        self.proc.stdin.write(f"{operation} {self.root} {target} {variant}\n".encode())
        self.proc.stdin.flush()
        word, pid = self._line()
        assert word == "go", (word, pid)
        return int(pid)

    def wait(self, pid: int, done: bool = False) -> tuple[bool, int]:
        """Have the server reap the child and wait for it: (whether it said "done", its exit code)."""
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"reap\n")
        self.proc.stdin.flush()
        while True:
            words = self._line()
            if words[0] == "done":
                done = True
            elif words[0] == "exit" and int(words[1]) == pid:
                return done, int(words[2])

    def complete(self, operation: str, target: Path, variant: int) -> float:
        """Run the operation unkilled; return its duration in seconds (from "go" to "done")."""
        pid = self.start(operation, target, variant)
        begin = time.perf_counter()
        words = self._line()
        duration = time.perf_counter() - begin
        done, code = self.wait(pid, done=words[0] == "done")
        assert done and code == 0, f"{operation} variant {variant}: the unkilled run failed:\n{self.errors()}"
        return duration

    def killed(self, operation: str, target: Path, variant: int, after: float) -> tuple[int, bool]:
        """Start the operation and SIGKILL it ``after`` seconds past its "go"; return (pid, finished first)."""
        pid = self.start(operation, target, variant)
        deadline = time.perf_counter() + after
        while (left := deadline - time.perf_counter()) > 0:
            if left > 0.002:
                time.sleep(left - 0.001)
        os.kill(pid, signal.SIGKILL)  # the server has not reaped it yet: the pid is still this child's
        done, code = self.wait(pid)
        assert code in (0, -signal.SIGKILL), f"{operation}: the child failed (exit {code}):\n{self.errors()}"
        return pid, done

    def close(self) -> None:
        """Stop the server (end of its input) and wait for it."""
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(CHILD_SECONDS)
        if self.proc.stdout is not None:
            self.proc.stdout.close()


@pytest.fixture(scope="module")
def runner(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    root = tmp_path_factory.mktemp("kill-inputs")
    _build_inputs(root)
    server = Server(root, root / "server-errors.txt")
    try:
        yield server
    finally:
        server.close()


@dataclass
class Series:
    """The kills of one operation on one target, and what each left there."""

    operation: str
    server: Server
    target: Path
    #: Content digest of the target now; the variant it holds (for operations whose variants alternate).
    current: str = ""
    variant: int = 1
    #: Verdicts already reached, by (inode, size, mtime, ctime) of the target: an untouched file is not re-read.
    seen: dict[tuple[int, int, int, int], str] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(TALLIES, 0))
    problems: list[str] = field(default_factory=list)

    def _look(self, where: str) -> str | None:
        """The target's content digest after a kill, or None (and a problem) when it is missing, half or invalid."""
        try:
            stat = self.target.stat()
        except FileNotFoundError:
            self.counts["previous files lost"] += 1
            self.problems.append(f"{where}: the target is gone (the previous file was lost)")
            return None
        key = (stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns)
        if key in self.seen:
            return self.seen[key]
        try:
            now = content(self.target)
        except h5ml.H5MLError as exc:
            self.counts["half files"] += 1
            self.problems.append(f"{where}: the target does not read: {exc}")
            return None
        report = h5ml.validate(self.target, deep=True)
        if not report.valid:
            self.counts["half files"] += 1
            self.problems.append(f"{where}: the target is not valid: {[(i.code, i.path) for i in report.issues]}")
            return None
        self.seen[key] = now
        return now

    def kill(self, run: int, fraction: float, variant: int, new: str, duration: float) -> None:
        """Kill a run at ``fraction`` of ``duration``; check the target, its folder and the temporaries."""
        where = (
            f"seed {SEED}, {self.operation}, run {run}: killed at {fraction:.4f} of {duration:.4f} s "
            f"(replay: H5ML_KILL_SEED={SEED} pytest tests/test_crash_kills.py -k {self.operation})"
        )
        pid, finished = self.server.killed(self.operation, self.target, variant, fraction * duration)
        self.counts["kill points tried"] += 1
        self.counts["runs that finished before the kill"] += finished
        now = self._look(where)
        if now is None:
            return
        if now not in (self.current, new):
            self.counts["half files"] += 1
            self.problems.append(f"{where}: the target holds neither the previous content nor the new one")
            return
        replaced = now == new
        self.counts["kills that left the new file" if replaced else "kills that left the previous file"] += 1
        if replaced:
            self.current, self.variant = now, variant
        folder = self.target.parent
        temps = temporaries(folder, self.target.name)
        own = [t for t in temps if t.pid == pid]
        others = [t.path.name for t in temps if t.pid != pid]
        self.counts["kills that left the killed writer's temporary"] += bool(own)
        if others and (own or replaced):  # this run got past removing the stale ones, and some remain
            self.counts["temporaries left after the next write"] += len(others)
            self.problems.append(f"{where}: temporaries of earlier killed writers remain: {others}")
        strays = sorted({p.name for p in folder.iterdir()} - {self.target.name} - {t.path.name for t in temps})
        if strays:
            self.problems.append(f"{where}: files other than the target and its temporaries: {strays}")


#: The figures each series counts (summed over the operations in the run's figures).
TALLIES = (
    "kill points tried",
    "runs that finished before the kill",
    "kills that left the previous file",
    "kills that left the new file",
    "kills that left the killed writer's temporary",
    "half files",
    "previous files lost",
    "temporaries left after the next write",
)


def run_series(name: str, server: Server, tmp_path: Path, kills: int) -> Series:
    """``kills`` seeded SIGKILLs of the operation ``name`` on one target, then one unkilled write.

    The target holds the previous complete file (its content known) when each run starts; after each kill it
    must hold that file or the run's new one, which reads and validates (deep); the stale temporaries must be
    gone once a later write got as far as its own temporary, and all of them after the unkilled write that
    ends the series. What broke is in the returned series' ``problems`` and ``counts``.
    """
    op = operation(name)
    rng = random.Random(f"{SEED}-{name}")
    folder, scratch = tmp_path / "target", tmp_path / "scratch"
    folder.mkdir()
    scratch.mkdir()
    series = Series(name, server, folder / "out.h5")
    if op.extends:
        h5ml.write(series.target, {"train": _arrays(6, 8)}, {"name": "base"})
    # the content and duration of each variant, from unkilled runs (on a copy of the target when it extends it)
    durations, expected = {}, {}
    for variant in (0, 1):
        ref = scratch / f"ref{variant}.h5"
        if op.extends:
            shutil.copyfile(series.target, ref)
        durations[variant] = server.complete(name, ref, variant)
        expected[variant] = content(ref)
    if not op.extends:
        server.complete(name, series.target, 1)
    series.current = content(series.target)
    for run in range(kills):
        if op.extends:
            variant = run % 2
            ref = scratch / "next.h5"
            shutil.copyfile(series.target, ref)
            server.complete(name, ref, variant)
            new = content(ref)
        else:
            variant = 1 - series.variant
            new = expected[variant]
        series.kill(run, rng.random(), variant, new, durations[variant])
        if series.counts["half files"] or series.counts["previous files lost"]:
            break
    # the next write, unkilled: no temporary remains
    server.complete(name, series.target, 0)
    remaining = [t.path.name for t in temporaries(folder, series.target.name)]
    series.counts["temporaries left after the next write"] += len(remaining)
    if remaining:
        series.problems.append(f"seed {SEED}, {name}: temporaries after an unkilled write: {remaining}")
    return series


@pytest.mark.parametrize("operation", list(OPERATIONS))
def test_a_killed_write_leaves_the_previous_file_or_the_new_one(
    operation: str, runner: Server, tmp_path: Path, figures: Any
) -> None:
    """§4.4: KILLS SIGKILLs at seeded points of the operation; never a half file, a lost file or a leftover."""
    series = run_series(operation, runner, tmp_path, KILLS)
    for name, value in series.counts.items():
        figures.add("crash kills", name, value)
    assert not series.problems, "\n".join(series.problems)
    assert series.counts["kill points tried"] == KILLS
    assert series.counts["kills that left the previous file"] + series.counts["kills that left the new file"] == KILLS


@pytest.mark.parametrize(
    "control, caught", [("in-place", "half files"), ("no-cleanup", "temporaries left after the next write")]
)
def test_the_checks_catch_a_writer_that_breaks_the_rule(
    control: str, caught: str, runner: Server, tmp_path: Path
) -> None:
    """The same series on a writer that overwrites the target in place, and on one that never removes a killed
    writer's temporary: the checks report the half file, and the temporary left after the next write."""
    series = run_series(control, runner, tmp_path, 6)
    assert series.counts[caught] > 0, series.counts
    assert series.problems
