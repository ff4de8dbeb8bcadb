"""The hostile corpus of issue 14: every kind of hostile file through every program that reads a file, beside a secret.

Each kind of :mod:`hostile_corpus` (external links, external raw storage and
virtual datasets pointing at the secret file, soft links to hidden data,
a damaged feature, a required filter not installed, control characters, a
huge declared shape; and the same attacks in the foreign layouts ``h5ml
convert`` reads) goes through the validator (shallow and deep), ``h5ml.open``
and a read of every split, both adapters, and every command of the real
command line that reads a file. Whatever each does, no output file, standard
output, standard error or exception message holds a byte of the secret
(checked byte-wise, and as the decimals a text output prints), and each
either produces output or refuses in one line that names the file and the
HDF5 path, with no traceback and a non-zero exit code (SPEC §3.6, §10.1).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import pytest

import h5ml
import hdf5_replicas as replicas
import hostile_corpus as hc
from _files import run_cli
from h5ml.errors import ForbiddenStorageError, H5MLError
from h5ml.ingest import export_npz, merge, subset
from h5ml.ingest.hdf5 import convert_hdf5, plan_hdf5

#: Kind -> the validator code it must get (shallow and deep) and the HDF5 path a refusal names.
_EXPECTED: dict[str, tuple[str | None, str | None]] = {
    "external link as a feature": ("E110", "/train/x"),
    "external link outside the splits": ("E110", "/_extra/leak"),
    "external raw storage as a feature": ("E111", "/train/x"),
    "external raw storage outside the splits": ("E111", "/_extra/leak"),
    "virtual dataset as a feature": ("E112", "/train/x"),
    "soft link as a ragged feature's values": ("E115", "/train/r/values"),
    "soft link to a hidden dataset as a feature": ("E115", "/train/x"),
    "soft-linked split": ("E115", "/test"),
    "damaged feature (E122)": ("E122", "/train/x"),
    "required filter not installed": (None, None),
    "control characters in name and description": (None, None),
    "huge declared shape, nothing written": ("E146", "/test/x"),
}
#: Command -> its arguments for a source, an output folder and a second source (merge).
_CLI: dict[str, Callable[[Path, Path, Path], list[str]]] = {
    "inspect": lambda src, out, clean: ["inspect", str(src)],
    "inspect --format json": lambda src, out, clean: ["inspect", str(src), "--format", "json"],
    "dump": lambda src, out, clean: ["dump", str(src), "--head", "3", "--format", "text"],
    "dump --format json": lambda src, out, clean: ["dump", str(src), "--format", "json"],
    "subset": lambda src, out, clean: ["subset", str(src), str(out / "subset.h5"), "--compression", "none"],
    "merge": lambda src, out, clean: ["merge", str(src), str(clean), "-o", str(out / "merged.h5"), "--compression", "none"],
    "export npz": lambda src, out, clean: ["export", str(src), str(out / "export.npz")],
    "export parquet": lambda src, out, clean: [
        "export", str(src), str(out / "parquet"), "--format", "parquet", "--parquet-compression", "none",
    ],
    "convert": lambda src, out, clean: ["convert", str(src), str(out / "converted.h5")],
    "verify": lambda src, out, clean: ["verify", str(src), "--jobs", "2"],
}  # fmt: skip


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[hc.Secret, dict[str, Path], dict[str, Path], Path]:
    folder = tmp_path_factory.mktemp("hostile")
    secret = hc.make_secret(folder)
    h5ml_files = {kind: build(secret) for kind, build in hc.H5ML_KINDS.items()}
    foreign = {kind: build(secret) for kind, build in hc.FOREIGN_KINDS.items()}
    return secret, h5ml_files, foreign, hc.clean_file(folder / "clean.h5")


def _outputs(folder: Path) -> bytes:
    """Every byte of every file under ``folder``, then the folder emptied."""
    blob = b""
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            blob += path.read_bytes()
            path.unlink()
    return blob


def _check_cli(secret: hc.Secret, kind: str, src: Path, args: list[str], out: Path) -> tuple[int, int]:
    """Run one command; assert no traceback, no control sequence, a refusal in words; return (exit code, leaked)."""
    code, stdout, stderr = run_cli(*args)
    leaked = secret.leaked(stdout) + secret.leaked(stderr) + secret.leaked(_outputs(out))
    said = f"{kind}: h5ml {' '.join(args[:1])}: {stderr[-500:]}"
    assert "Traceback" not in stdout + stderr and "internal error" not in stderr, said
    assert "\x1b" not in stdout + stderr and "\x07" not in stdout + stderr, said
    if code != 0 and args[0] == "verify" and not stderr:
        # a verdict, not a refusal: the report names the feature it could not verify, and where
        where = _EXPECTED.get(kind, (None, None))[1] or ""
        assert "UNVERIFIED" in stdout or "DIFFERS" in stdout, f"{kind}: h5ml verify: {stdout[-500:]}"
        assert where.rsplit("/", 1)[0] in stdout, f"{kind}: h5ml verify: {stdout[-500:]}"
    elif code != 0:
        assert stderr.startswith("h5ml: error: ") and stderr.count("\n") == 1, said
        assert src.name in stderr, said
        where = _EXPECTED.get(kind, (None, None))[1]
        if where is not None and "already an h5ml file" not in stderr:
            assert where in stderr, said
    return code, leaked


def test_every_h5ml_kind_through_every_command_leaks_nothing(corpus: Any, figures: Any, tmp_path: Path) -> None:
    """SPEC §10.1-R1: no command copies or prints a byte of another file; each refusal names the file and path."""
    secret, files, _, _ = corpus
    leaked: dict[str, int] = dict.fromkeys(_CLI, 0)
    tried = 0
    (tmp_path / "out").mkdir()
    for kind, src in files.items():
        second = Path(shutil.copy(src, tmp_path / f"copy_{src.name}"))  # merge: the same splits and features
        for command, make in _CLI.items():
            code, leak = _check_cli(secret, kind, src, make(src, tmp_path / "out", second), tmp_path / "out")
            leaked[command] += leak
            tried += 1
            if _EXPECTED[kind][0] in ("E110", "E111", "E112") or command == "convert":
                assert code != 0, f"{kind}: h5ml {command} did not refuse"
    assert leaked == dict.fromkeys(_CLI, 0)
    figures.record("hostile corpus", "h5ml kinds tried", len(files))
    figures.record("hostile corpus", "commands tried", len(_CLI))
    figures.add("hostile corpus", "command runs", tried)
    for command, value in leaked.items():
        figures.record("hostile corpus", f"bytes leaked by h5ml {command}", value)


def test_every_foreign_kind_through_convert_inspect_and_dump_leaks_nothing(
    corpus: Any, figures: Any, tmp_path: Path
) -> None:
    """SPEC §10.1-R1: convert refuses each attack of a foreign source with the reader's error; inspect lists it safely."""
    secret, _, foreign, clean = corpus
    leaked = 0
    for kind, src in foreign.items():
        for command in ("convert", "inspect", "inspect --format json", "dump"):
            code, leak = _check_cli(secret, kind, src, _CLI[command](src, tmp_path, clean), tmp_path)
            leaked += leak
            if command in ("convert", "dump"):
                assert code != 0, f"{kind}: h5ml {command} did not refuse"
        _, _, stderr = run_cli("convert", str(src), str(tmp_path / "c.h5"))
        where = "/3/x" if kind.startswith("per-sample") else "/x_train"
        assert f"{src}: {where} " in stderr or f"{src}:{where} " in stderr, stderr
        if "soft link" not in kind:  # the reader's refusal, in the command line's words
            assert "the command line never reads other files" in stderr
        with pytest.raises(H5MLError) as err:
            convert_hdf5(src, tmp_path / "c.h5")
        assert secret.leaked(str(err.value)) == 0 and not (tmp_path / "c.h5").exists()
        if "soft link" not in kind:
            assert isinstance(err.value, ForbiddenStorageError) and err.value.hdf5_path == where
            assert "allow_external=True" in str(err.value)
            with pytest.raises(ForbiddenStorageError):
                plan_hdf5(src)
    assert leaked == 0
    figures.record("hostile corpus", "foreign kinds tried", len(foreign))
    figures.record("hostile corpus", "bytes leaked by h5ml convert of foreign sources", leaked)


def _values(value: Any) -> bytes:
    """The bytes of what a reader returned (arrays, lists of arrays or strings, dicts and tuples of them)."""
    if isinstance(value, dict):
        return b"".join(_values(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return b"".join(_values(v) for v in value)
    if isinstance(value, str):
        return value.encode("utf-8", "replace")
    return np.asarray(value.cpu() if hasattr(value, "cpu") else value).tobytes()


def _readers() -> dict[str, Callable[[Path, str], bytes]]:
    """Reader -> a function that reads one split whole and returns the bytes of every value."""
    import h5ml_torch

    os.environ.setdefault("KERAS_BACKEND", "torch")  # as tests/test_keras_adapter.py, before keras is imported
    pytest.importorskip("keras")
    from h5ml_keras import H5MLPyDataset

    def reader(path: Path, split: str) -> bytes:
        with h5ml.open(path) as ds:
            return _values(ds[split].read(slice(None)))

    def torch(path: Path, split: str) -> bytes:
        data = h5ml_torch.H5MLDataset(path, split)
        loader = h5ml_torch.H5MLLoader(data, h5ml_torch.H5MLBatchSampler(data, 64), num_workers=0)
        return b"".join(_values(batch) for batch in loader)

    def keras(path: Path, split: str) -> bytes:
        return b"".join(_values(batch) for batch in H5MLPyDataset(path, split, 64, inputs="x"))

    return {"h5ml.open": reader, "h5ml_torch": torch, "h5ml_keras": keras}


def test_every_h5ml_kind_through_validator_reader_and_adapters_leaks_nothing(corpus: Any, figures: Any) -> None:
    """SPEC §10.1-R1: the validator flags each kind, and the reader and both adapters refuse it or return none of the secret."""
    secret, files, _, _ = corpus
    readers = _readers()
    leaked = dict.fromkeys(["validator", *readers], 0)
    for kind, src in files.items():
        code, where = _EXPECTED[kind]
        for deep in (False, True):
            report = h5ml.validate(src, deep=deep)
            leaked["validator"] += sum(secret.leaked(issue.message) for issue in report.issues)
            if code is not None and (deep or code != "E146"):  # E146 (never written) is a deep check
                assert code in {issue.code for issue in report.issues}, (kind, deep)
        for name, read in readers.items():
            refused = 0
            for split in ("train", "test"):
                try:
                    leaked[name] += secret.leaked(read(src, split))
                except H5MLError as exc:  # a refusal: in words, naming the file and the HDF5 path
                    refused += 1
                    leaked[name] += secret.leaked(str(exc))
                    assert str(src) in str(exc), (kind, name, str(exc))
                    if where is not None:
                        assert where in str(exc), (kind, name, str(exc))
            if code is not None:
                assert refused, f"{kind}: {name} read it without an error"
    assert leaked == dict.fromkeys(leaked, 0)
    for name, value in leaked.items():
        figures.record("hostile corpus", f"bytes leaked by {name}", value)


def test_allow_external_reads_a_trusted_source_in_python_only(corpus: Any, tmp_path: Path) -> None:
    """SPEC §10.1-R1: allow_external=True is the one opt-in, the same for convert, subset, merge and export as for h5ml.open."""
    secret, files, foreign, clean = corpus
    source = foreign["tutorial layout, external raw storage"]
    convert_hdf5(source, tmp_path / "c.h5", allow_external=True, workers=2, processes=True)  # workers reopen it
    with h5ml.open(tmp_path / "c.h5") as ds:
        assert ds["train"]["x"][:].tobytes() == secret.data
    hostile = files["external raw storage as a feature"]
    subset(hostile, tmp_path / "s.h5", allow_external=True, compression=None)
    merge([hostile, clean], tmp_path / "m.h5", allow_external=True, compression=None)
    export_npz(hostile, tmp_path / "e.npz", allow_external=True)
    for name in ("s.h5", "m.h5"):
        with h5ml.open(tmp_path / name) as ds:
            assert ds["train"]["x"][:256].tobytes() == secret.data
    with np.load(tmp_path / "e.npz") as npz:
        assert npz["x_train"].tobytes() == secret.data
    for call in (
        lambda: subset(hostile, tmp_path / "s2.h5"),
        lambda: merge([hostile, clean], tmp_path / "m2.h5"),
        lambda: export_npz(hostile, tmp_path / "e2.npz"),
    ):
        with pytest.raises(ForbiddenStorageError, match=r"/train/x stores its data in the external file"):
            call()
    assert not any((tmp_path / n).exists() for n in ("s2.h5", "m2.h5", "e2.npz"))
    with pytest.raises(h5ml.errors.ParameterError, match="allow_external must be True or False"):
        convert_hdf5(source, tmp_path / "c3.h5", allow_external="yes")  # type: ignore[arg-type]


def test_a_source_read_again_is_checked_where_it_is_read(corpus: Any) -> None:
    """SPEC §10.1-R1: a conversion's later reads (worker processes, a file replaced after its walk) check what they read."""
    from h5ml.ingest.hdf5.plan import Part
    from h5ml.ingest.hdf5.values import read_record, read_rows

    secret, _, foreign, _ = corpus
    rows = foreign["tutorial layout, virtual dataset"]
    with h5py.File(rows, "r") as f:
        part = Part(source=str(rows), path="/x_train")
        with pytest.raises(ForbiddenStorageError, match=r"/x_train is a virtual dataset") as err:
            read_rows(f, part, 0, 4, f"{rows}:/x_train")
        assert secret.leaked(str(err.value)) == 0
        assert np.asarray(read_rows(f, part, 0, 4, "", allow_external=True)).tobytes() == secret.data[:64]
    records = foreign["per-sample layout, external link"]
    with h5py.File(records, "r") as f:
        part = Part(source=str(records), kind="records", path="/*", member="x")
        assert read_record(f, part, "/2").shape == (256, 16)
        with pytest.raises(ForbiddenStorageError, match=r"/3/x is an external link"):
            read_record(f, part, "/3")


def test_a_matlab_cell_pointing_to_an_external_dataset_is_refused_by_the_walk_and_the_read(
    corpus: Any, tmp_path: Path
) -> None:
    """SPEC §10.1-R1: a cell's target in other files is refused by the walk, and again where a cell is read."""
    from h5ml.ingest.hdf5.matlab import cell_values

    secret, _, _, _ = corpus
    path = tmp_path / "cells.mat"
    replicas.matlab(path)  # class names from the cell array ``classes``
    with h5py.File(path, "a") as f:
        target = str(secret.folder / "secret.bin")
        outside = f["#refs#"].create_dataset("s", (8, 1), np.uint16, external=[(target, 0, 16)])
        outside.attrs["MATLAB_class"] = np.bytes_("char")
        f["classes"][1, 0] = outside.ref
    with pytest.raises(ForbiddenStorageError, match=r"/#refs#/s stores its data in the external file") as err:
        convert_hdf5(path, tmp_path / "o.h5")
    assert secret.leaked(str(err.value)) == 0 and not (tmp_path / "o.h5").exists()
    with h5py.File(path, "r") as f:
        refs = f["classes"][()]
        with pytest.raises(ForbiddenStorageError, match=r"/#refs#/s \(cell 1 of .*/classes\) stores its data"):
            cell_values(f, refs, f"{path}:/classes")
        assert len(cell_values(f, refs, f"{path}:/classes", allow_external=True)) == 3
