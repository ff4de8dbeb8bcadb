"""Fuzzing the reader and the PyTorch adapter: damaged files give values or an H5MLError (SPEC §9, §10.3; issue 14).

The damaged files are the validator fuzzer's (tests/test_validator_fuzz.py),
made from valid fixtures of the conformance suite that hold every encoding
(dense, string, categorical, ragged with and without shapes, bytes), gzip
and uncompressed, contiguous, chunked and compact:

- byte level (:class:`ByteMutation`): bits flipped anywhere, in the metadata
  or in the raw data of a dataset (located with HDF5's storage offsets), runs
  of bytes overwritten, the file truncated;
- structure level (:class:`Mutation`, the validator fuzzer's catalogue):
  attributes deleted or given values of another type, datasets retyped,
  offsets out of order or past the end, codes out of range, components
  deleted, objects renamed, soft links added;
- and the edits this file adds (:class:`Edit`): two features or two
  components swapped, offsets shrunk (fewer rows, or ending before the
  values), a dense feature shorter than ``num_samples``, an attribute
  renamed.

Each file is drawn from ``random.Random(f"{seed}-{index}")`` (``seed`` from
``$H5ML_FUZZ_SEED``, default 14; a failure names the seed, the index and the
damage, so ``H5ML_FUZZ_SEED=<seed> pytest tests/test_reader_fuzz.py``
replays it). Every file is read in its own child process with a time limit
(tests/test_reader_robustness.py's ``_in_child``, forked by one of two
worker processes so that two files are read at a time): first every part of
the reading API (that file's ``_read_everything``), then every sample of
every feature with ``h5ml.open`` and every sample and batch of every split
through ``h5ml_torch.H5MLDataset`` with a ``DataLoader``. Allowed: the
stored values, an :class:`h5ml.H5MLError`, or (while reads are not verified
by checksums, issue 14) silently different values, which are counted, not
refused. Never a crash (a signal), a hang (the time limit) or any other
exception (``OSError``, ``KeyError``, ``ValueError``, ``IndexError``,
``MemoryError``...). A file that makes plain h5py hang or crash too (every
attribute and dataset read once, in a child) is counted apart, as a fault of
the HDF5 library that no code can prevent in its own process (§10.3: read
untrusted files in a child process, or validate them there first); with
seed 14 that is one file, whose zeroed global heap collection makes HDF5
2.0's ``H5HG__cache_heap_deserialize`` loop when a string attribute is read.
"""

from __future__ import annotations

import contextlib
import faulthandler
import hashlib
import itertools
import multiprocessing
import os
import pickle
import random
import shutil
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import pytest

import h5ml
from _files import Dense, write_file
from h5ml.errors import H5MLError, InvalidFileError
from test_crash_kills import canonical
from test_reader_robustness import _in_child, _read_everything
from test_validator_fuzz import VALID, ByteMutation, Mutation, _metadata_intervals, catalogue, fixture_info

resource = pytest.importorskip("resource", reason="memory limits of the reading children are POSIX")

SEED = int(os.environ.get("H5ML_FUZZ_SEED", "14"))
#: Damaged files per run.
FILES = 300
#: Seconds a child may read one file before it counts as a hang.
CHILD_SECONDS = 8
#: Files read at a time (each worker forks one child per file).
WORKERS = 2
#: The fixtures damaged: together every encoding, gzip and uncompressed, every storage layout, a user block.
BASES = (
    "valid-every-encoding",
    "independent-writer-1-1",
    "valid-appendix-b",
    "valid-storage-layouts",
    "valid-single-sample",
    "valid-ragged-forms",
    "valid-categorical-forms",
    "valid-fixed-length-strings",
    "valid-userblock",
    "valid-empty-splits",
)
#: Bytes of address space a reading child may use beyond what it inherited: a size the file merely
#: declares makes the reader fail with MemoryError (a bare exception, reported) instead of swapping.
CHILD_MEMORY = 1 << 30


# -- the damage --------------------------------------------------------------------------------------------------


def _swap(f: h5py.File, first: str, second: str) -> None:
    f.move(first, first + "~swap")
    f.move(second, first)
    f.move(first + "~swap", second)


def _shrink_offsets(f: h5py.File, group: str, how: str) -> None:
    offsets = f[f"{group}/offsets"][()]
    del f[f"{group}/offsets"]
    if how == "rows":  # one offset fewer: N samples described by N offsets
        f[f"{group}/offsets"] = offsets[:-1]
    else:  # every offset halved: still from 0 and never decreasing, but ending before the values do
        f[f"{group}/offsets"] = offsets // 2


def _shorten(f: h5py.File, path: str) -> None:
    old = f[path]
    data, attrs = old[()], dict(old.attrs)
    del f[path]
    new = f.create_dataset(path, data=data[:-1])
    for key, value in attrs.items():
        new.attrs[key] = value


def _rename_attr(f: h5py.File, path: str, name: str) -> None:
    obj = f[path]
    value = obj.attrs[name]
    del obj.attrs[name]
    obj.attrs[name + "_"] = value


EDITS: dict[str, Callable[..., None]] = {
    "swap": _swap,
    "shrink_offsets": _shrink_offsets,
    "shorten": _shorten,
    "rename_attr": _rename_attr,
}


@dataclass(frozen=True)
class Edit:
    """A structural edit of a copy of a fixture that the validator fuzzer's catalogue does not make."""

    case: str
    op: str
    args: tuple[Any, ...]

    def make(self, path: Path) -> None:
        shutil.copyfile(VALID[self.case], path)
        with h5py.File(path, "r+") as f:
            EDITS[self.op](f, *self.args)


def _edits(case: str) -> list[Edit]:
    """Every :class:`Edit` the fixture allows."""
    info = fixture_info(case)
    out = []
    for split in info.splits:
        features = [feature.path for feature in split.features]
        out += [Edit(case, "swap", (a, b)) for a, b in itertools.pairwise(features)]
        out += [Edit(case, "rename_attr", (split.path, "num_samples"))]
        for feature in split.features:
            out.append(Edit(case, "rename_attr", (feature.path, "encoding")))
            if feature.encoding == "dense" and feature.n:
                out.append(Edit(case, "shorten", (feature.path,)))
            if feature.encoding in ("ragged", "bytes") and feature.n:
                out += [Edit(case, "shrink_offsets", (feature.path, how)) for how in ("rows", "halve")]
                out.append(Edit(case, "swap", (f"{feature.path}/values", f"{feature.path}/offsets")))
            if feature.encoding == "categorical":
                out.append(Edit(case, "swap", (f"{feature.path}/codes", f"{feature.path}/class_names")))
    for name in ("format_version", "complete", "must_understand"):
        out.append(Edit(case, "rename_attr", ("/", name)))
    return out


Damage = ByteMutation | Mutation | Edit


def _flips(rng: random.Random, start: int, end: int, most: int) -> tuple[tuple[int, int], ...]:
    return tuple((rng.randrange(start, end), rng.randrange(1, 256)) for _ in range(rng.randint(1, most)))


def damage(index: int) -> Damage:
    """The damage of file ``index``: drawn from ``random.Random(f"{SEED}-{index}")`` alone."""
    rng = random.Random(f"{SEED}-{index}")
    case = rng.choice(BASES)
    info = fixture_info(case)
    kind = rng.choice(["flip", "metadata", "data", "overwrite", "truncate", "structure", "structure", "edit"])
    if kind == "flip":
        return ByteMutation(case, kind, flips=_flips(rng, info.userblock, info.size, 8))
    if kind == "metadata":
        start, end = rng.choice(_metadata_intervals(info))
        return ByteMutation(case, kind, flips=_flips(rng, start, end, 4))
    if kind == "data":
        region = rng.choice(info.regions)
        return ByteMutation(case, kind, flips=_flips(rng, region.offset, region.offset + region.size, 3))
    if kind == "overwrite":
        offset, length = rng.randrange(info.userblock, info.size), rng.randint(1, 64)
        fill = rng.choice([b"\x00" * length, b"\xff" * length, rng.randbytes(length)])
        return ByteMutation(case, kind, writes=((offset, fill),))
    if kind == "truncate":
        size = rng.choice([rng.randrange(info.size), info.size - rng.randint(1, 512)])
        return ByteMutation(case, kind, truncate=max(size, 0))
    if kind == "structure":
        return rng.choice(catalogue(case))
    return rng.choice(_edits(case))


# -- reading, in a child process ----------------------------------------------------------------------------------


class _Capture:
    """Stands for the pipe of ``_read_everything``: keeps what it sends."""

    value: Any = None

    def send(self, value: Any) -> None:
        self.value = value


def _digest(value: Any) -> str:
    return hashlib.sha256(pickle.dumps(canonical(value), protocol=5)).hexdigest()


def _torch_read(path: str, split: str, attempt: Callable[[str, Callable[[], Any]], Any]) -> None:
    """Every sample, and every batch through a DataLoader, of one split with the PyTorch adapter."""
    from torch.utils.data import DataLoader

    from h5ml_torch import H5MLBatchSampler, H5MLDataset, collate

    data = attempt(f"torch {split}", lambda: H5MLDataset(path, split))
    if data is None:
        return
    count = attempt(f"torch {split} len", lambda: len(data)) or 0
    attempt(f"torch {split} samples", lambda: [data[i] for i in range(count)])
    sampler = attempt(f"torch {split} sampler", lambda: H5MLBatchSampler(data, batch_size=4, shuffle="full", seed=1))
    if sampler is not None:
        attempt(f"torch {split} loader", lambda: list(DataLoader(data, batch_sampler=sampler, collate_fn=collate)))


def read_everything(path: str) -> tuple[dict[str, str], list[str], list[str]]:
    """Read every part of a file: (the digest of each feature's values read, the H5MLErrors, the other errors).

    First every part of the reading API (tests/test_reader_robustness.py's ``_read_everything``), then every
    feature's values with ``h5ml.open`` (``split[name][:]``), then every split with the PyTorch adapter.
    """
    values: dict[str, str] = {}
    errors: list[str] = []
    bare: list[str] = []

    def attempt(where: str, fn: Callable[[], Any]) -> Any:
        try:
            return fn()
        except H5MLError as exc:
            errors.append(f"{where}: {type(exc).__name__}: {exc}")
        except Exception:
            bare.append(f"{where}: {traceback.format_exc()}")
        return None

    api = _Capture()
    _read_everything(path, api)  # ("ok", the H5MLErrors) or ("raw", the traceback of any other exception)
    if api.value[0] != "ok":
        bare.append(f"reading API: {api.value[1]}")
    splits: list[str] = []
    ds = attempt("open", lambda: h5ml.open(path))
    if ds is not None:
        splits = attempt("splits", lambda: list(ds)) or []
        for name in splits:
            split = attempt(f"split {name}", lambda name=name: ds[name])
            if split is None:
                continue
            for feature in attempt(f"{name} features", lambda split=split: list(split.features)) or []:
                got = attempt(f"{name}/{feature}", lambda split=split, feature=feature: split[feature][:])
                if got is not None:
                    values[f"{name}/{feature}"] = _digest(got)
        ds.close()
    for name in splits:
        _torch_read(path, name, attempt)
    return values, errors, bare


def read_all(path: str, conn: Any) -> None:
    """Child process: :func:`read_everything` with bounded memory; send ``("ok", values, errors, bare)``."""
    faulthandler.disable()  # a crash is reported by the parent, from the exit status
    used = int(Path("/proc/self/statm").read_text().split()[0]) * resource.getpagesize()
    resource.setrlimit(resource.RLIMIT_AS, (used + CHILD_MEMORY, resource.RLIM_INFINITY))
    try:
        conn.send(("ok", *read_everything(path)))
    except BaseException:
        conn.send(("ok", {}, [], [f"outside the reads: {traceback.format_exc()}"]))


def plain_h5py(path: str, conn: Any) -> None:
    """Child process: every attribute and dataset of the file read once with plain h5py, errors ignored.

    Run on a file that made the reader hang or crash: when plain h5py hangs or crashes too, the fault is the
    HDF5 library's (§10.3), which no code calling it can prevent in its own process.
    """
    faulthandler.disable()
    used = int(Path("/proc/self/statm").read_text().split()[0]) * resource.getpagesize()
    resource.setrlimit(resource.RLIMIT_AS, (used + CHILD_MEMORY, resource.RLIM_INFINITY))

    def visit(_: str, obj: Any) -> None:
        for key in list(obj.attrs):
            with contextlib.suppress(Exception):
                obj.attrs[key]
        if isinstance(obj, h5py.Dataset):
            with contextlib.suppress(Exception):
                obj[()]

    with contextlib.suppress(Exception), h5py.File(path, "r") as f:
        visit("/", f)
        f.visititems(visit)
    conn.send("ok")


def _worker(paths: Sequence[str], conn: Any) -> None:
    """Worker process: read each file in a child of its own (``_in_child``); send every outcome.

    A file that made the reader's child hang or die is read again with plain h5py (:func:`plain_h5py`): the
    outcome is then ``("hang" or "died", exit code or None, whether plain h5py hung or died too)``.
    """
    import torch

    import test_reader_robustness

    # the helper's time limit, lowered in this worker only: a fixture reads in a fraction of a second, so a
    # child still busy after CHILD_SECONDS is stuck, and 30 s per hang would double the test's time
    test_reader_robustness.CHILD_SECONDS = CHILD_SECONDS
    torch.set_num_threads(1)  # no thread pool in a process that forks
    read_everything(str(VALID[BASES[0]]))  # the imports and first uses, once here instead of in every child
    outcomes = []
    for path in paths:
        outcome = _in_child(read_all, path)
        if outcome == "hang" or outcome[0] == "died":
            plain = _in_child(plain_h5py, path)
            kind, code = ("hang", None) if outcome == "hang" else outcome
            outcome = (kind, code, plain == "hang" or plain[0] == "died")
        outcomes.append(outcome)
    conn.send(outcomes)
    conn.close()


def read_in_workers(paths: Sequence[Path]) -> list[Any]:
    """The outcome of :func:`read_all` for each path, read by WORKERS workers (one child per file)."""
    context = multiprocessing.get_context("fork")
    shares = [[str(p) for p in paths[w::WORKERS]] for w in range(WORKERS)]
    workers = []
    for share in shares:
        receiver, sender = context.Pipe(duplex=False)
        worker = context.Process(target=_worker, args=(share, sender))
        worker.start()
        sender.close()
        workers.append((worker, receiver))
    outcomes: list[Any] = [None] * len(paths)
    for w, (worker, receiver) in enumerate(workers):
        try:
            for i, outcome in enumerate(receiver.recv()):
                outcomes[w + i * WORKERS] = outcome
        finally:
            worker.join()
            receiver.close()
    return outcomes


# -- the test -------------------------------------------------------------------------------------------------------


def test_damaged_files_give_values_or_h5ml_errors(tmp_path: Path, figures: Any) -> None:
    """§9, §10.3: FILES seeded damaged files, each read whole by h5ml.open and by H5MLDataset in a child process:
    never a crash, a hang or an exception that is not an H5MLError; silently different values are counted."""
    damages = [damage(index) for index in range(FILES)]
    paths = []
    for case in BASES:  # the fixtures as they are: the values every damaged copy is compared with
        paths.append(tmp_path / f"pristine-{case}.h5")
        shutil.copyfile(VALID[case], paths[-1])
    for index, item in enumerate(damages):
        paths.append(tmp_path / f"{index}-{item.case}.h5")
        item.make(paths[-1])
    outcomes = read_in_workers(paths)
    pristine = {}
    for case, outcome in zip(BASES, outcomes, strict=False):
        assert outcome[0] == "ok" and not outcome[2] and not outcome[3], f"the fixture {case} itself: {outcome}"
        pristine[case] = outcome[1]
    crashes, hangs, library, bare, different, refused = [], [], [], [], [], 0
    for index, (item, outcome) in enumerate(zip(damages, outcomes[len(BASES) :], strict=True)):
        where = f"seed {SEED}, file {index} ({item!r})"
        if outcome[0] in ("hang", "died"):
            kind, code, plain_too = outcome
            what = f"{where}: {'hung' if kind == 'hang' else f'died (exit {code})'}"
            (library if plain_too else hangs if kind == "hang" else crashes).append(what)
            continue
        _, values, errors, raw = outcome
        if raw:
            bare.append(f"{where}:\n" + "\n".join(raw))
        refused += bool(errors)
        if any(pristine[item.case].get(feature, digest) != digest for feature, digest in values.items()):
            different.append(where)
    figures.record("reader fuzzing", "fuzzed files", FILES)
    figures.record("reader fuzzing", "crashes", len(crashes))
    figures.record("reader fuzzing", "hangs", len(hangs))
    figures.record("reader fuzzing", "bare exceptions", len(bare))
    figures.record("reader fuzzing", "hangs or crashes inside HDF5 (plain h5py too)", len(library))
    figures.record("reader fuzzing", "files refused with an H5MLError", refused)
    figures.record("reader fuzzing", "silently different reads", len(different))
    if library:
        print("HDF5 itself hangs or crashes on these files (plain h5py too; §10.3):\n" + "\n".join(library))
    problems = crashes + hangs + bare
    assert not problems, f"{len(problems)} of {FILES} files:\n" + "\n\n".join(problems)
    assert refused > FILES // 4  # the damage reached the reader's refusals, not only files that read as before


def test_a_changed_value_is_counted_as_a_different_read(tmp_path: Path) -> None:
    """The comparison has a ground truth: a fixture read in a child gives the same digests twice, and a copy with
    one stored value changed (with h5py, the file otherwise intact) differs in that feature only."""
    case = "valid-appendix-b"
    pristine, changed = tmp_path / "pristine.h5", tmp_path / "changed.h5"
    shutil.copyfile(VALID[case], pristine)
    shutil.copyfile(VALID[case], changed)
    feature = next(f for f in fixture_info(case).features if f.encoding == "dense" and f.kind == "f" and f.n)
    with h5py.File(changed, "r+") as f:
        dset = f[feature.path]
        row = dset[0]
        dset[0] = row + 1
    first, again, other = read_in_workers([pristine, pristine, changed])
    assert first == again and first[0] == "ok" and not first[2] and not first[3]
    assert other[0] == "ok" and not other[3]
    name = feature.path.lstrip("/")
    assert {key for key in first[1] if first[1][key] != other[1].get(key)} == {name}


# -- what the fuzzing found ------------------------------------------------------------------------------------


def test_a_root_attribute_outside_the_storage_profile_is_an_h5ml_error(tmp_path: Path) -> None:
    """§3.2: an opaque root attribute made ``Dataset.metadata`` raise a bare TypeError (fuzzed file, seed 14):
    now InvalidFileError naming the file, the attribute and what to do; the splits still read."""
    path = write_file(
        tmp_path / "opaque.h5",
        {"train": {"x": Dense(np.arange(3, dtype=np.int64))}},
        extra=lambda f: f.attrs.create("acme:blob", np.void(b"\x01\x02\x03\x04")),
    )
    with h5ml.open(path) as ds:
        assert ds["train"]["x"][:].tolist() == [0, 1, 2]
        with pytest.raises(InvalidFileError, match="'acme:blob' hold a value outside the storage profile") as err:
            ds.metadata  # noqa: B018
    assert (err.value.path, err.value.hdf5_path) == (str(path), "/")
    assert f"h5ml validate --deep {path}" in str(err.value)
