"""Files that declare more than they store (SPEC §10.4-R1, §10.4-R2; issue 14, item 4): memory follows the file.

A file of a few kilobytes declaring 2**28 samples (nothing written), and a dense feature declared (2**40, 1024)
with two chunks written, are opened, sampled and read in child processes under a memory limit (RLIMIT_AS: the
address space after the imports plus 1.5 GiB) and a CPU-time limit: samplers hand out batches, every read raises
DeclaredSizeError naming the file, the dataset, the declared and the stored bytes; the child's peak resident memory
(VmHWM, which starts afresh at exec, unlike getrusage's ru_maxrss) and its growth after the imports are recorded as
figures. In this process: the storage-size test on honest files (compressed zeros at deflate's largest ratio are
read), on a filter whose ratio is unbounded, and the validator's shallow E146.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import h5py
import numpy as np
import pytest

import h5ml
from _figures import Figures
from _files import run_cli
from h5ml.errors import DeclaredSizeError, InvalidFileError
from h5ml.model.allocation import DEFLATE_RATIO_LIMIT, storage_shortfall, storage_verdict, unallocated_storage
from h5ml.validator.runner import validate

META = {"name": "t", "license": "CC0-1.0", "description": "d"}
ROOT = Path(__file__).resolve().parents[1]
#: Memory a child may take beyond what its imports took (the issue: 1.5 GiB), and its CPU seconds.
LIMIT_BYTES = 3 << 29
CPU_SECONDS = 60


def _declare(path: Path, rows: int, columns: dict[str, tuple[tuple[int, ...], str, tuple[int, ...]]]) -> Path:
    """Write a real h5ml file, then replace its features by datasets of ``rows`` declared rows, nothing written."""
    data = {name: np.zeros((4, *shape), dtype=dtype) for name, (shape, dtype, _) in columns.items()}
    h5ml.write(path, {"train": data}, metadata=META, checksums=False)  # the datasets are replaced below
    with h5py.File(path, "r+") as f:
        f.visititems(lambda _name, obj: obj.attrs.__delitem__("fingerprint") if "fingerprint" in obj.attrs else None)
        del f.attrs["fingerprint"]
        for name, (shape, dtype, chunks) in columns.items():
            attrs = dict(f["train"][name].attrs)
            del f["train"][name]
            dset = f["train"].create_dataset(name, shape=(rows, *shape), dtype=dtype, chunks=chunks)
            for key, value in attrs.items():
                dset.attrs[key] = value
        f["train"].attrs["num_samples"] = np.int64(rows)
    return path


def _lying(tmp_path: Path) -> Path:
    """2**28 samples: x float32 (2**28, 3) and label int64 (2**28,), in chunks of 65536 rows, none written."""
    columns = {"x": ((3,), "<f4", (1 << 16, 3)), "label": ((), "<i8", (1 << 16,))}
    return _declare(tmp_path / "lying.h5", 1 << 28, columns)


def _huge_dense(tmp_path: Path) -> Path:
    """x uint8 declared (2**40, 1024) in chunks of (1024, 1024): 1 PiB declared, two chunks (2 MiB) written."""
    path = _declare(tmp_path / "huge.h5", 1 << 40, {"x": ((1024,), "|u1", (1024, 1024))})
    with h5py.File(path, "r+") as f:
        f["train/x"][:2048] = 1
    return path


_CHILD = """
import json, os, resource, sys, time
os.environ.setdefault("KERAS_BACKEND", "torch")
{imports}
from h5ml.errors import H5MLError

def status_bytes(key):
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) * 1024 for line in status if line.startswith(key + ":"))

def vm_bytes():
    return status_bytes("VmSize")

# Peak resident memory of this process image: VmHWM (getrusage's ru_maxrss survives exec, so it would start at
# the peak of the pytest process that started this child)
base_rss = status_bytes("VmHWM")
resource.setrlimit(resource.RLIMIT_AS, (vm_bytes() + {limit}, vm_bytes() + {limit}))
resource.setrlimit(resource.RLIMIT_CPU, ({cpu}, {cpu}))
outcomes = {{}}

def attempt(name, step):
    try:
        outcomes[name] = {{"result": step()}}
    except (H5MLError, MemoryError) as exc:
        outcomes[name] = {{"error": type(exc).__name__, "message": str(exc),
                          "hdf5_path": getattr(exc, "hdf5_path", None)}}

{steps}
rss = status_bytes("VmHWM")
print(json.dumps({{"outcomes": outcomes, "peak_mib": rss / 2**20, "growth_mib": (rss - base_rss) / 2**20}}))
"""


def _run_child(imports: str, steps: str, **paths: Path) -> dict[str, object]:
    code = _CHILD.format(imports=imports, steps=textwrap.dedent(steps), limit=LIMIT_BYTES, cpu=CPU_SECONDS).replace(
        "PATHS", repr({key: str(value) for key, value in paths.items()})
    )
    env = {"PYTHONPATH": f"{ROOT / 'reference'}:{ROOT / 'adapters'}", "PATH": "/usr/bin:/bin"}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=240, env=env, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _assert_refused(outcome: object, path: Path, hdf5_path: str) -> str:
    assert isinstance(outcome, dict) and outcome.get("error") == "DeclaredSizeError", outcome
    message = str(outcome["message"])
    assert str(path) in message and hdf5_path in message and outcome["hdf5_path"] == hdf5_path
    assert "declares shape" in message and "stores only" in message and "§10.4-R1" in message
    return message


def test_torch_sampler_and_reader_on_a_lying_file_use_bounded_memory(tmp_path: Path, figures: Figures) -> None:
    """SPEC §10.4-R1: 2**28 declared samples in a file of kilobytes, under a 1.5 GiB memory limit: H5MLBatchSampler
    hands out batches ("none" and "full"), and every read (the adapter's dataset, ``h5ml.open(...)["train"].read``)
    raises DeclaredSizeError; the (2**40, 1024) dense feature is refused the same way. Never MemoryError."""
    lying, huge = _lying(tmp_path), _huge_dense(tmp_path)
    assert lying.stat().st_size < 64 << 10
    steps = """
    paths = PATHS
    from h5ml_torch import H5MLBatchSampler, H5MLDataset
    dataset = H5MLDataset(paths["lying"], "train")
    for mode in ("none", "full"):
        batches = iter(H5MLBatchSampler(dataset, 32, shuffle=mode, seed=3))
        attempt("sampler " + mode, lambda: [next(batches) for _ in range(3)])
    attempt("torch dataset", lambda: dataset[outcomes["sampler full"]["result"][0][0]])
    def split_read():
        with h5ml.open(paths["lying"]) as ds:
            return ds["train"].read([0, 5, 1 << 27])
    attempt("split read", split_read)
    def huge_read():
        with h5ml.open(paths["huge"]) as ds:
            return ds["train"]["x"][[7, 1 << 39]].shape
    attempt("huge read", huge_read)
    attempt("huge torch", lambda: H5MLDataset(paths["huge"], "train")[5])
    """
    result = _run_child("import h5ml, h5ml_torch", steps, lying=lying, huge=huge)
    outcomes = result["outcomes"]
    assert isinstance(outcomes, dict)
    none, full = outcomes["sampler none"]["result"], outcomes["sampler full"]["result"]
    assert none == [list(range(32 * k, 32 * (k + 1))) for k in range(3)]
    assert all(len(b) == 32 and len(set(b)) == 32 and all(0 <= i < 1 << 28 for i in b) for b in full)
    for step in ("torch dataset", "split read"):  # label is the first feature of the file
        message = _assert_refused(outcomes[step], lying, "/train/label")
        assert "declares shape (268435456,)" in message and "stores only 0 bytes of the 2147483648 bytes" in message
    for step in ("huge read", "huge torch"):
        message = _assert_refused(outcomes[step], huge, "/train/x")
        assert "(1099511627776, 1024)" in message and "stores only 2097152 bytes" in message
        assert "but only 2 were ever written" in message
    growth = float(result["growth_mib"])  # type: ignore[arg-type]
    assert growth < 256, result
    figures.record(
        "lying files",
        "torch sampler + reader, 2**28 declared samples: peak RSS (MiB)",
        round(float(result["peak_mib"]), 1),
    )  # type: ignore[arg-type]
    figures.record("lying files", "torch sampler + reader: memory beyond the imports (MiB)", round(growth, 1))


def test_keras_dataset_on_a_lying_file_uses_bounded_memory(tmp_path: Path, figures: Figures) -> None:
    """SPEC §10.4-R1: the Keras dataset over 2**28 declared samples, under a 1.5 GiB memory limit: it builds its
    epoch order without a list of batches (``len`` is 2**23) and its first batch raises DeclaredSizeError, where
    it used 3.2 GB and served zeros."""
    lying = _lying(tmp_path)
    steps = """
    paths = PATHS
    from h5ml_keras import H5MLPyDataset
    for mode in ("none", "full"):
        dataset = H5MLPyDataset(paths["lying"], "train", 32, inputs="x", targets="label", shuffle=mode)
        attempt("keras len " + mode, lambda: len(dataset))
        attempt("keras batch " + mode, lambda: dataset[1])
        dataset.close()
    """
    result = _run_child("import h5ml, h5ml_keras", steps, lying=lying)
    outcomes = result["outcomes"]
    assert isinstance(outcomes, dict)
    for mode in ("none", "full"):
        assert outcomes[f"keras len {mode}"] == {"result": 1 << 23}
        _assert_refused(outcomes[f"keras batch {mode}"], lying, "/train/x")  # the inputs are read first
    growth = float(result["growth_mib"])  # type: ignore[arg-type]
    assert growth < 256, result
    figures.record(
        "lying files", "Keras dataset, 2**28 declared samples: peak RSS (MiB)", round(float(result["peak_mib"]), 1)
    )  # type: ignore[arg-type]
    figures.record("lying files", "Keras dataset: memory beyond the imports (MiB)", round(growth, 1))


def test_storage_size_refuses_before_the_chunk_walk_and_names_the_sizes(tmp_path: Path) -> None:
    """SPEC §10.4-R1: 70,000 of 140,000 one-row chunks written: the storage size proves data missing, so the chunk
    index (more than 65,536 chunks) is not walked, and the first read raises DeclaredSizeError with the sizes."""
    path = tmp_path / "half.h5"
    h5ml.write(path, {"train": {"x": np.zeros(4, np.uint8)}}, metadata=META)
    with h5py.File(path, "r+") as f:
        attrs = dict(f["train/x"].attrs)
        del f["train/x"]
        x = f["train"].create_dataset("x", shape=(140_000,), dtype="u1", chunks=(1,))
        x[:70_000] = 3
        for key, value in attrs.items():
            x.attrs[key] = value
        f["train"].attrs["num_samples"] = np.int64(140_000)
        short, missing = storage_verdict(x)
        assert short is not None and missing is None  # decided from the storage size alone
        assert (short.declared, short.least, short.stored, short.chunks_at_most) == (140_000, 140_000, 70_000, 70_000)
        started = time.perf_counter()
        walked = unallocated_storage(x)
        walk = time.perf_counter() - started
        assert walked is not None and "only 70000 were ever written" in walked.what
    with h5ml.open(path) as ds:
        started = time.perf_counter()
        with pytest.raises(DeclaredSizeError) as err:
            ds["train"]["x"][5]
        elapsed = time.perf_counter() - started
    message = str(err.value)
    assert (
        f"{path}: /train/x declares shape (140000,) in 140000 chunks of (1,), of which its storage holds 70000 at "
        in message
    )
    assert (
        "most; it stores only 70000 bytes of the 140000 bytes it declares (a complete dataset of that shape takes at least 140000)"
        in message
    )
    assert "write it again" in message and err.value.hdf5_path == "/train/x" and isinstance(err.value, InvalidFileError)
    assert elapsed < walk  # the refusal costs less than the chunk walk alone (about 0.3 s here, 0.05 s for the size)


def test_honest_compressed_data_is_not_refused_by_its_storage_size(tmp_path: Path) -> None:
    """SPEC §10.4-R1: 16 MiB of zeros deflated (near the best ratio deflate reaches) is complete and reads back;
    half of it written is provable from the storage size for zeros, not for random bytes (or with LZF, whose ratio
    is not bounded here): there the chunk walk finds the missing chunks (E146)."""
    path = tmp_path / "zeros.h5"
    h5ml.write(path, {"train": {"x": np.zeros((1 << 24,), np.uint8)}}, metadata=META, compression="gzip")
    with h5py.File(path, "r") as f:
        x = f["train/x"]
        stored = x.id.get_storage_size()
        assert x.compression == "gzip" and stored * DEFLATE_RATIO_LIMIT >= 1 << 24 and stored * 900 < 1 << 24
        assert storage_shortfall(x) is None
    with h5ml.open(path) as ds:
        assert int(ds["train"]["x"][: 1 << 24].sum()) == 0
    half = tmp_path / "half.h5"
    with h5py.File(half, "w") as f:
        x = f.create_dataset("x", shape=(1 << 24,), dtype="u1", chunks=(1 << 20,), compression="gzip")
        x[: 1 << 23] = np.random.default_rng(0).integers(0, 256, 1 << 23, dtype=np.uint8)
        z = f.create_dataset("z", shape=(1 << 24,), dtype="u1", chunks=(1 << 20,), compression="gzip")
        z[: 1 << 23] = 0
        y = f.create_dataset("y", shape=(1 << 24,), dtype="u1", chunks=(1 << 20,), compression="lzf")
        y[: 1 << 23] = 0
        assert storage_shortfall(x) is None and storage_shortfall(y) is None
        assert storage_shortfall(z) is not None
        short, missing = storage_verdict(x)
        assert short is None and missing is not None and "only 8 were ever written" in missing.what


def test_validator_reports_lying_files_shallow_without_reading(tmp_path: Path) -> None:
    """SPEC §10.4-R2: both lying files are E146 in shallow validation (and deep alike), never E145, in well
    under a second each: from the storage size and the chunk index only."""
    for path, where in ((_lying(tmp_path), {"/train/x", "/train/label"}), (_huge_dense(tmp_path), {"/train/x"})):
        for deep in (False, True):
            started = time.perf_counter()
            report = validate(path, deep=deep)
            assert time.perf_counter() - started < 10
            errors = {(i.code, i.path) for i in report.issues if i.severity == "error"}
            assert errors == {("E146", p) for p in where}, report.issues


def test_cli_dump_of_a_lying_file_says_what_is_missing_without_a_traceback(tmp_path: Path) -> None:
    """SPEC §10.4-R1 on the command line: ``h5ml dump`` of the (2**40, 1024) feature exits non-zero with the
    reader's message (file, dataset, declared and stored bytes) and no traceback; ``h5ml validate`` says E146."""
    huge = _huge_dense(tmp_path)
    code, out, err = run_cli("dump", str(huge))
    assert code != 0 and "Traceback" not in out + err
    assert f"{huge}: /train/x declares shape (1099511627776, 1024)" in err and "stores only 2097152 bytes" in err
    assert "write it again" in err
    code, out, err = run_cli("validate", "--format", "json", str(huge))
    assert code != 0 and "Traceback" not in out + err
    assert {(i["code"], i["path"]) for i in json.loads(out)["files"][0]["issues"] if i["severity"] == "error"} == {
        ("E146", "/train/x")
    }
