"""Concurrent readers, a replacing writer, and training workers started while a Writer is open (issue 14, items 2 and 9).

1. Sixteen reader processes read random batches of a file while a writer
   process replaces it again and again with ``h5ml.write`` (a temporary file
   renamed over the target, §4.4): with HDF5's default locking, with
   ``HDF5_USE_FILE_LOCKING=FALSE`` and with ``locking=False``. Every version
   of the file holds content derived from its version number, so a batch
   mixing two versions (a torn read) or a wrong row is seen; no read may fail.
2. A ``torch.utils.data.DataLoader`` with two fork workers and a Keras fit
   with two worker processes, started while an ``h5ml.Writer`` on another
   target is open in the parent (item 2: fork safety) and while another
   process holds a write lock on the file they read (item 9, SPEC
   §10.4.1-S3): their batches hold the file's values, and the writers' files
   are complete afterwards, one of them read while the forked workers still
   hold its lock.

Everything is seeded and runs in child processes with time limits; the
figures the issue asks for ("concurrent readers and errors") are recorded
with the ``figures`` fixture from the values asserted.
"""

from __future__ import annotations

import importlib.util
import itertools
import json
import multiprocessing
import os
import subprocess
import sys
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import h5ml
from _figures import Figures
from test_locks import holding

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="fork workers and flock locks are POSIX only")

#: Rows and columns of ``train/x`` in every version of the replaced file.
ROWS, COLS = 256, 8
#: Reader processes, and how each reads: (start method, HDF5_USE_FILE_LOCKING, the locking parameter).
READERS: list[tuple[str, str | None, bool | None]] = (
    [("forkserver", None, None)] * 6 + [("spawn", "FALSE", None)] * 5 + [("forkserver", None, False)] * 5
)
#: Seconds the readers read while the writer replaces the file; the limit for each child process.
READ_S, CHILD_LIMIT_S = 3.0, 90.0
SEED = 14


def version_content(version: int) -> dict[str, Any]:
    """The splits of version ``version`` of the replaced file: every value derived from the version number."""
    x = (np.arange(ROWS * COLS, dtype=np.float32).reshape(ROWS, COLS) + version * 10_000).astype(np.float32)
    return {"train": {"x": x, "v": np.full(ROWS, version, dtype=np.int64)}}


def _write_versions(path: str, stop: Any, started: Any, written: Any) -> None:
    """The writer process: replace ``path`` with version 2, 3, ... until ``stop`` is set; report the count."""
    version = 1
    while not stop.is_set():
        version += 1
        h5ml.write(path, version_content(version), metadata={"name": f"version {version}"})
        if version == 2:
            started.put(version)
    written.put(version - 1)


def _read_batches(
    path: str, index: int, variable: str | None, locking: bool | None, ready: Any, go: Any, results: Any
) -> None:
    """A reader process: open the file again and again, read random batches, check each against its version."""
    if variable is not None:
        assert os.environ.get("HDF5_USE_FILE_LOCKING") == variable  # spawned: set before HDF5 started
    rng = np.random.default_rng(SEED + index)
    reads = torn = 0
    errors: list[str] = []
    versions: list[int] = []
    ready.put(index)
    go.wait(CHILD_LIMIT_S)
    deadline = time.monotonic() + READ_S
    while time.monotonic() < deadline:
        try:
            with h5ml.open(path, locking=locking) as dataset:
                train = dataset["train"]
                version = int(train["v"][0])
                versions.append(version)
                want = version_content(version)["train"]["x"]
                for _ in range(4):
                    rows = np.sort(rng.choice(ROWS, size=16, replace=False))
                    batch, marks = train["x"][rows], train["v"][rows]
                    reads += 1
                    if not (np.array_equal(batch, want[rows]) and np.all(marks == version)):
                        torn += 1
        except Exception as exc:  # every failure is counted and reported, never hidden
            errors.append(f"{type(exc).__name__}: {exc}")
    backwards = sum(1 for a, b in itertools.pairwise(versions) if b < a)
    results.put({"index": index, "reads": reads, "torn": torn, "errors": errors[:5], "backwards": backwards})


def _stop_all(processes: list[Any]) -> None:
    for process in processes:
        if process.is_alive():
            process.kill()
        process.join(5)


def test_sixteen_readers_while_a_writer_replaces_the_file(tmp_path: Path, figures: Figures) -> None:
    """§4.4, SPEC §10.4.1-S3: 16 reader processes (forkserver and spawn; default locking, HDF5_USE_FILE_LOCKING=FALSE,
    locking=False) read random batches while another process replaces the file with h5ml.write: no error, no torn
    read, no version going back, and the writer replaced the file many times meanwhile."""
    path = str(tmp_path / "replaced.h5")
    h5ml.write(path, version_content(1), metadata={"name": "version 1"})
    spawn, forkserver = multiprocessing.get_context("spawn"), multiprocessing.get_context("forkserver")
    forkserver.set_forkserver_preload(["h5ml", "h5ml.reader.dataset", "numpy", "h5py"])
    ready, results, started, written = spawn.Queue(), spawn.Queue(), spawn.Queue(), spawn.Queue()
    go, stop = spawn.Event(), spawn.Event()
    processes: list[Any] = []
    try:
        for index, (method, variable, locking) in enumerate(READERS):
            context = spawn if method == "spawn" else forkserver
            before = os.environ.get("HDF5_USE_FILE_LOCKING")
            if variable is not None:
                os.environ["HDF5_USE_FILE_LOCKING"] = variable  # a spawned child starts HDF5 with it
            try:
                process = context.Process(
                    target=_read_batches, args=(path, index, variable, locking, ready, go, results)
                )
                process.start()
            finally:
                if before is None:
                    os.environ.pop("HDF5_USE_FILE_LOCKING", None)
                else:
                    os.environ["HDF5_USE_FILE_LOCKING"] = before
            processes.append(process)
        writer = spawn.Process(target=_write_versions, args=(path, stop, started, written))
        writer.start()
        processes.append(writer)
        for _ in READERS:
            ready.get(timeout=CHILD_LIMIT_S)
        started.get(timeout=CHILD_LIMIT_S)  # the writer replaces the file from now on
        go.set()
        reports = [results.get(timeout=CHILD_LIMIT_S) for _ in READERS]
        stop.set()
        versions_written = written.get(timeout=CHILD_LIMIT_S)
        for process in processes:
            process.join(CHILD_LIMIT_S)
            assert process.exitcode == 0, f"a child process ended with {process.exitcode}"
    finally:
        stop.set()
        _stop_all(processes)
    reads = sum(r["reads"] for r in reports)
    errors = [e for r in reports for e in r["errors"]]
    torn = sum(r["torn"] for r in reports)
    figures.record("concurrency", "reader processes", len(reports))
    figures.record("concurrency", "file replacements during the reads", versions_written)
    figures.record("concurrency", "batch reads", reads)
    figures.record("concurrency", "read errors", len(errors))
    figures.record("concurrency", "torn reads", torn)
    assert errors == []
    assert torn == 0 and sum(r["backwards"] for r in reports) == 0
    assert all(r["reads"] > 0 for r in reports) and versions_written >= 5
    with h5ml.open(path) as dataset:  # the last version is complete
        version = int(dataset["train"]["v"][0])
        assert version == versions_written + 1
        np.testing.assert_array_equal(dataset["train"]["x"][:], version_content(version)["train"]["x"])


# -- training workers started while a Writer is open, reading a file another process holds locked --------------

N = 48


def training_file(path: Path) -> Path:
    """``train/x`` (N, 4) float32 with ``x[i] == [i, i, i, i]``, ``train/y`` (N,) float32 ``i % 5 + 1``."""
    x = np.repeat(np.arange(N, dtype=np.float32)[:, None], 4, axis=1)
    h5ml.write(path, {"train": {"x": x, "y": (np.arange(N) % 5 + 1).astype(np.float32)}}, metadata={"name": "t"})
    return path


def _writer_part(writer: h5ml.Writer, start: int) -> None:
    writer.append("train", {"z": np.arange(start, start + 8, dtype=np.int64)})


def _lock_held(path: str) -> bool:
    """Whether HDF5's own default open of ``path`` fails on a lock that another process holds."""
    import h5py

    try:
        h5py.File(path, "r").close()
    except BlockingIOError:
        return True
    return False


def _child_training(read_path: str, out_dir: str) -> dict[str, Any]:
    """In a spawned child: a DataLoader (2 fork workers) and a Keras fit (2 worker processes), both started while
    an h5ml.Writer is open, read ``read_path``, which another process holds open for writing (its lock)."""
    os.environ.setdefault("KERAS_BACKEND", "torch")
    warnings.filterwarnings("ignore", r"This process \(pid=\d+\) is multi-threaded", DeprecationWarning)
    import keras
    from torch.utils.data import DataLoader

    from h5ml_keras import H5MLPyDataset
    from h5ml_torch import H5MLBatchSampler, H5MLDataset, collate

    result: dict[str, Any] = {}
    with holding(Path(read_path)):
        result["read_locked"] = _lock_held(read_path)
        # 1. A DataLoader with 2 fork workers, forked while writer `first` is open; `first` is finished while
        #    the workers (which inherited its lock) still run, and read back at once.
        first_path = os.path.join(out_dir, "first.h5")
        first = h5ml.Writer(first_path, metadata={"name": "first"})
        _writer_part(first, 0)
        data = H5MLDataset(read_path, "train", features=["x", "y"])
        sampler = H5MLBatchSampler(data, 8, shuffle="full", seed=SEED)
        loader = DataLoader(
            data, batch_sampler=sampler, collate_fn=collate, num_workers=2, multiprocessing_context="fork"
        )
        ids: list[int] = []
        bad = 0
        for number, batch in enumerate(loader):
            x, y = batch["x"].numpy(), batch["y"].numpy()
            rows = x[:, 0].astype(np.int64)
            bad += int(not (np.all(x == rows[:, None]) and np.array_equal(y, (rows % 5 + 1).astype(np.float32))))
            ids += rows.tolist()
            if number == 1:  # the workers are alive and hold the lock of first's temporary, soon its file
                _writer_part(first, 8)
                first.close()
                result["first_locked"] = _lock_held(first_path)
                with h5ml.open(first_path) as written:
                    result["first_during_workers"] = written["train"]["z"][:].tolist()
        result["loader_ids"], result["loader_bad"] = sorted(ids), bad
        # 2. A Keras fit with 2 worker processes, forked while writer `second` is open. The model predicts 0 and
        #    learns nothing (learning rate 0): the epoch's loss is the mean of y**2 over the samples it was fed.
        second_path = os.path.join(out_dir, "second.h5")
        second = h5ml.Writer(second_path, metadata={"name": "second"})
        _writer_part(second, 100)
        train = H5MLPyDataset(read_path, "train", 8, inputs="x", targets="y", workers=2, use_multiprocessing=True)
        model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1, kernel_initializer="zeros")])
        model.compile(optimizer=keras.optimizers.SGD(learning_rate=0.0), loss="mse", jit_compile=False)
        history = model.fit(train, epochs=1, shuffle=False, verbose=0)
        result["keras_loss"] = float(history.history["loss"][-1])
        _writer_part(second, 108)
        second.close()
    for name, path in (("first", first_path), ("second", second_path)):
        with h5ml.open(path) as written:
            result[f"{name}_rows"] = written["train"]["z"][:].tolist()
        result[f"{name}_errors"] = [c for c in h5ml.validate(path).codes if c.startswith("E")]
    return result


def _child_entry(read_path: str, out_dir: str, out: str) -> None:
    multiprocessing.set_start_method("fork", force=True)  # Keras's worker pool forks here
    Path(out).write_text(json.dumps(_child_training(read_path, out_dir)), encoding="utf-8")


@pytest.fixture
def training_paths(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    yield training_file(tmp_path / "train.h5"), out_dir


def test_workers_forked_while_a_writer_is_open_read_a_locked_file(
    training_paths: tuple[Path, Path], tmp_path: Path, figures: Figures
) -> None:
    """Issue 14 items 2 and 9, SPEC §10.4.1-S3: DataLoader fork workers and a Keras fit with worker processes,
    started while an h5ml.Writer is open and while another process holds a write lock on the file they read: real
    batches (every sample once, with its values; the Keras loss is that of the real targets), and each writer's
    file is complete afterwards, one of them opened while the forked workers still held its lock."""
    if not os.environ.get("CI"):  # CI installs torch and keras: this test must run there, never skip
        for package in ("torch", "keras"):
            if importlib.util.find_spec(package) is None:
                pytest.skip(f"{package} is not installed")
    read_path, out_dir = training_paths
    out = tmp_path / "result.json"
    env = dict(os.environ, KERAS_BACKEND="torch")
    code = (
        "import sys; sys.path[:0] = sys.argv[4].split(':'); import test_concurrency as t; "
        "t._child_entry(sys.argv[1], sys.argv[2], sys.argv[3])"
    )
    here = str(Path(__file__).resolve().parent)
    done = subprocess.run(
        [sys.executable, "-c", code, str(read_path), str(out_dir), str(out), here],
        capture_output=True,
        text=True,
        timeout=CHILD_LIMIT_S * 2,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(out.read_text(encoding="utf-8"))
    assert result["read_locked"] is True and result["first_locked"] is True  # the locks were real
    assert result["loader_ids"] == list(range(N)) and result["loader_bad"] == 0
    assert result["keras_loss"] == pytest.approx(float(np.mean((np.arange(N) % 5 + 1.0) ** 2)), rel=1e-5)
    assert result["first_during_workers"] == list(range(16)) and result["first_rows"] == list(range(16))
    assert result["second_rows"] == list(range(100, 116))
    assert result["first_errors"] == [] and result["second_errors"] == []
    figures.record("concurrency", "training batches read past another process's lock", N // 8 * 2)
