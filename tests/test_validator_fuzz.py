"""Property-based fuzzing of the validator through the real ``h5ml validate`` command (SPEC §9.1, §9.3, §10.3).

Every file here starts as a copy of a valid fixture of the conformance suite
(``conformance_tests/manifest.json``: the cases that are valid in deep
validation at the core level) and is then damaged, in ``tmp_path_factory``
folders only; the committed fixtures are read, never written.

Two kinds of damage:

- byte level: bytes flipped or overwritten at drawn offsets, in the head of the
  file (superblock, root object header), anywhere in its metadata, or in the
  raw data of its datasets (located with HDF5's own storage offsets), and the
  file truncated at a drawn size;
- structure level, with h5py on the copy: root, split and feature attributes
  deleted or replaced by values of another type or form, feature datasets
  replaced by ones of a wrong shape or dtype, offsets out of order or past the
  end, codes out of range, components deleted, names broken, soft links added.

Each batch of damaged files goes to one ``h5ml validate --format json --deep
--timeout T`` subprocess (one CLI start for several files: the CLI checks every
file in a fresh child interpreter, about 0.5 s each on its own). For every file
the test checks the invariants of §9: the process exits 0, 1 or 2, as the
report's entries imply; stdout is one JSON document that satisfies the report
schema; no Python traceback anywhere; ``readable`` is false exactly when E100
or E101 is reported, and ``valid`` is true exactly when the file is readable
and has no error; E100, E102 and E104 come alone (§9.1.2).
The subprocess must finish within a generous wall limit: a hang is a failure.
The per-file limit is what makes that hold, since a corrupt file can make the
HDF5 library loop forever (§10.3).

Where the damage has a consequence the specification names, the test demands
it: a truncated file or a broken signature is E100 alone and unreadable, a
deleted ``format_version`` is E103, a code equal to the number of class names
is E141, a flipped byte in the unfiltered raw data of a fingerprinted feature is
an error at that feature (E160, or E140-E143 for the values concerned), a
flipped byte in a user block changes nothing, and so on (see the mutation
catalogue below; every expectation names its SPEC clause or conformance case).

Time: about 100 damaged files in about 20 CLI calls; roughly a minute on two
busy CPUs. Hypothesis runs with the "ci" profile of conftest.py
(derandomized, no deadline) and the per-test ``max_examples`` below.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import pytest
from hypothesis import Phase, given, settings
from hypothesis import strategies as st

from h5ml.spec.schemas import validator_for

ROOT = Path(__file__).resolve().parent.parent
SUITE = ROOT / "conformance_tests"
MANIFEST: dict[str, Any] = json.loads((SUITE / "manifest.json").read_text(encoding="utf-8"))
REGISTRY: dict[str, dict[str, str]] = MANIFEST["registry"]
H5ML = shutil.which("h5ml", path=str(Path(sys.executable).parent)) or shutil.which("h5ml") or "h5ml"

#: The five encodings of version 1.0 (§6) and the components each group encoding defines.
COMPONENTS: dict[str, tuple[str, ...]] = {
    "dense": (),
    "string": (),
    "ragged": ("values", "offsets", "shapes"),
    "bytes": ("values", "offsets"),
    "categorical": ("codes", "class_names"),
}

#: Seconds ``--timeout`` allows per file: far above the ~1 s a fixture takes, so that only a real
#: HDF5 hang reaches it; the fuzzed files can make the library loop forever (§10.3).
FILE_TIMEOUT_S = 20.0
#: Seconds the CLI is given to stop a child (terminate, then kill) and report, beyond its timeout.
STOP_SLACK_S = 10.0
#: Seconds for the interpreter start and the report, once per CLI call.
CALL_SLACK_S = 60.0

UTF8 = h5py.string_dtype("utf-8")

#: No shrinking: each example costs a CLI run of about a second per file, so shrinking a failure took over five
#: minutes; the failure message already names the one file and mutation at fault, with the issues reported.
NO_SHRINK = (Phase.explicit, Phase.reuse, Phase.generate)


# -- the fixtures ------------------------------------------------------------------------------------------


def _valid_cases() -> dict[str, Path]:
    """The single-file cases valid in deep validation at the core level, by case id (a sharded case is a folder)."""
    cases = {}
    for case in MANIFEST["cases"]:
        if case["valid"] and case["level"] == "core" and case["mode"] in ("any", "deep") and "dataset" not in case:
            cases[case["id"]] = SUITE / case["file"]
    return dict(sorted(cases.items()))


VALID = _valid_cases()
#: The issue codes the manifest expects of each pristine valid fixture, sorted.
BASELINE: dict[str, tuple[str, ...]] = {
    case["id"]: tuple(sorted(issue["code"] for issue in case["issues"]))
    for case in MANIFEST["cases"]
    if case["id"] in VALID
}


def _text(value: Any) -> str | None:
    """An attribute value as text when it is a scalar string, else None."""
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, str):
        return value
    return None


@dataclass(frozen=True)
class Feature:
    """A feature of a known encoding in a fixture, as far as the mutations need it."""

    path: str
    encoding: str
    is_dataset: bool
    n: int
    kind: str  # numpy dtype kind of a dense or string dataset ("" for groups)
    boolean: bool  # dense uint8 with logical_dtype "bool"
    fingerprinted: bool
    members: frozenset[str]  # the group's members (empty for datasets)
    k: int  # categorical: number of class names
    code_max: int  # categorical: the largest code the codes dtype can hold


@dataclass(frozen=True)
class Split:
    path: str
    n: int
    features: tuple[Feature, ...]


@dataclass(frozen=True)
class Region:
    """Bytes of a file that hold raw data of a dataset (a contiguous dataset or one chunk)."""

    dataset: str
    offset: int
    size: int
    #: Bytes at the start of the region that hold elements inside the dataset's extent, when the storage is
    #: unfiltered and holds whole rows (so that every byte counted is a stored value); None otherwise.
    used: int | None
    numeric: bool
    #: The features whose decoded content includes these bytes (several when a dataset has two hard links).
    features: frozenset[str]


@dataclass(frozen=True)
class FixtureInfo:
    case: str
    path: Path
    size: int
    userblock: int
    newer_minor: bool
    root_fingerprint: bool
    splits: tuple[Split, ...]
    regions: tuple[Region, ...]

    @property
    def features(self) -> tuple[Feature, ...]:
        return tuple(feature for split in self.splits for feature in split.features)

    def fingerprint_covers(self, feature_paths: frozenset[str]) -> tuple[str, ...]:
        """Where a change of these features' content must be reported, or () when nothing must catch it.

        A feature's own fingerprint catches it at the feature (§8.1); the root fingerprint covers
        every feature (§8.3), except in a newer-MINOR file, whose validator may skip it (§8.3 note).
        """
        own = tuple(sorted(f.path for f in self.features if f.path in feature_paths and f.fingerprinted))
        if own:
            return own
        if self.root_fingerprint and not self.newer_minor and feature_paths:
            return (*sorted(feature_paths), "/")
        return ()


def _dataset_regions(dset: h5py.Dataset) -> Iterator[tuple[int, int, int | None]]:
    """(file offset, stored bytes, used bytes or None) of each allocated piece of the dataset's raw data."""
    plist = dset.id.get_create_plist()
    layout = plist.get_layout()
    filtered = plist.get_nfilters() > 0
    itemsize = dset.dtype.itemsize
    if layout == h5py.h5d.CONTIGUOUS:
        offset = dset.id.get_offset()
        stored = dset.id.get_storage_size()
        if offset is not None and stored > 0:
            yield offset, stored, stored
    elif layout == h5py.h5d.CHUNKED:
        shape, chunks = dset.shape, dset.chunks
        whole_rows = tuple(chunks[1:]) == tuple(shape[1:])
        row_bytes = int(np.prod(shape[1:], dtype=np.int64)) * itemsize
        for index in range(dset.id.get_num_chunks()):
            info = dset.id.get_chunk_info(index)
            if info.byte_offset is None or info.size == 0:
                continue
            used = None
            if not filtered and whole_rows:
                used = min(chunks[0], shape[0] - info.chunk_offset[0]) * row_bytes
            yield info.byte_offset, info.size, used


def _code_max(obj: Any) -> int:
    """The largest value the codes of a categorical feature group can hold (0 for anything else)."""
    if isinstance(obj, h5py.Group) and isinstance(obj.get("codes"), h5py.Dataset) and obj["codes"].dtype.kind in "iu":
        return int(np.iinfo(obj["codes"].dtype).max)
    return 0


@functools.cache
def fixture_info(case: str) -> FixtureInfo:
    """Read what the mutations need to know about one valid fixture (the file is opened read-only)."""
    path = VALID[case]
    with h5py.File(path, "r") as f:
        version = _text(f.attrs.get("format_version")) or "1.0"
        newer_minor = version != "1.0"
        splits = []
        owner: dict[str, set[str]] = {}  # dataset path -> features whose content it is
        for split_name in sorted(f):
            split = f[split_name]
            if split_name.startswith("_") or not isinstance(split, h5py.Group):
                continue
            features = []
            for name in sorted(split):
                obj = split[name]
                encoding = _text(obj.attrs.get("encoding"))
                if name.startswith("_") or encoding not in COMPONENTS:
                    continue
                fpath = f"/{split_name}/{name}"
                is_dataset = isinstance(obj, h5py.Dataset)
                parts = [fpath] if is_dataset else [f"{fpath}/{c}" for c in COMPONENTS[encoding] if c in obj]
                for part in parts:
                    owner.setdefault(part, set()).add(fpath)
                features.append(
                    Feature(
                        path=fpath,
                        encoding=encoding,
                        is_dataset=is_dataset,
                        n=int(split.attrs["num_samples"]),
                        kind=obj.dtype.kind if is_dataset else "",
                        boolean=_text(obj.attrs.get("logical_dtype")) == "bool",
                        fingerprinted="fingerprint" in obj.attrs,
                        members=frozenset() if is_dataset else frozenset(obj),
                        k=obj["class_names"].shape[0] if not is_dataset and "class_names" in obj else 0,
                        code_max=_code_max(obj),
                    )
                )
            splits.append(Split(f"/{split_name}", int(split.attrs["num_samples"]), tuple(features)))

        pieces: dict[int, Region] = {}

        def visit(name: str, obj: Any) -> None:
            if not isinstance(obj, h5py.Dataset):
                return
            covered = frozenset(fp for p, fs in owner.items() if f[p].id == obj.id for fp in fs)
            for offset, size, used in _dataset_regions(obj):
                pieces[offset] = Region(f"/{name}", offset, size, used, obj.dtype.kind in "iuf", covered)

        f.visititems(visit)
        return FixtureInfo(
            case=case,
            path=path,
            size=path.stat().st_size,
            userblock=f.userblock_size,
            newer_minor=newer_minor,
            root_fingerprint="fingerprint" in f.attrs,
            splits=tuple(splits),
            regions=tuple(sorted(pieces.values(), key=lambda r: r.offset)),
        )


@functools.cache
def fixture_bytes(case: str) -> bytes:
    return VALID[case].read_bytes()


# -- expectations --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Expect:
    """What the report must say of one damaged file, beyond the invariants every file meets."""

    readable: bool | None = True
    valid: bool | None = False
    #: (code, path): an issue with this code on this object or below it (the validator may name a component).
    codes: tuple[tuple[str, str], ...] = ()
    #: The codes above are the only issues reported (§9.1.2).
    alone: bool = False
    #: Codes that must not be reported.
    absent: tuple[str, ...] = ()
    #: At least one error on one of these objects or below them.
    error_at: tuple[str, ...] = ()
    #: The sorted codes reported must be exactly these.
    exact: tuple[str, ...] | None = None
    why: str = ""


UNREADABLE = Expect(readable=False, codes=(("E100", "/"),), alone=True, why="§3.1: cannot be opened as HDF5")


def _at(path: str, target: str) -> bool:
    """True when the report path `path` is the object `target` or lies below it."""
    return path == target or (target != "/" and path.startswith(target + "/"))


# -- running the CLI -----------------------------------------------------------------------------------------


@dataclass
class Outcome:
    returncode: int
    stdout: str
    stderr: str
    report: dict[str, Any] = field(default_factory=dict)


def run_validate(paths: Sequence[Path], timeout: float = FILE_TIMEOUT_S) -> Outcome:
    """Run ``h5ml validate --format json --deep`` on the files in one subprocess; fail on a hang.

    The CLI runs in its own session so that, should it hang, it and the children it started are killed
    together.
    """
    args = [H5ML, "validate", "--format", "json", "--deep", "--timeout", str(timeout), *map(str, paths)]
    wall = len(paths) * (timeout + STOP_SLACK_S) + CALL_SLACK_S
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        stdout, stderr = proc.communicate(timeout=wall)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        stdout, stderr = proc.communicate()
        pytest.fail(f"h5ml validate did not return within {wall:.0f} s (a hang): {args}\nstderr: {stderr[-3000:]}")
    outcome = Outcome(proc.returncode, stdout, stderr)
    assert "Traceback" not in stdout + stderr, f"{args}\nstdout: {stdout[-3000:]}\nstderr: {stderr[-3000:]}"
    assert proc.returncode in (0, 1, 2), f"exit {proc.returncode}: {args}\nstderr: {stderr[-3000:]}"

    def refuse(token: str) -> Any:
        raise AssertionError(f"non-standard JSON token {token} in the report")

    try:
        outcome.report = json.loads(stdout, parse_constant=refuse)  # the whole of stdout is one JSON document
    except json.JSONDecodeError as exc:
        culprits = _files_without_report(paths, timeout) if len(paths) > 1 else list(paths)
        pytest.fail(
            f"no JSON report ({exc}); exit {proc.returncode}: {args}\nstdout: {stdout[:2000]!r}\n"
            f"stderr: {stderr[-3000:]}\nfiles that alone give no report: {culprits}"
        )
    errors = [f"{list(e.absolute_path)}: {e.message}" for e in validator_for("report").iter_errors(outcome.report)]
    assert errors == [], errors
    return outcome


def _files_without_report(paths: Sequence[Path], timeout: float) -> list[str]:
    """The files of a batch on which ``h5ml validate`` prints no JSON report when run on them alone."""
    culprits = []
    for path in paths:
        args = [H5ML, "validate", "--format", "json", "--deep", "--timeout", str(timeout), str(path)]
        try:
            done = subprocess.run(args, capture_output=True, text=True, timeout=timeout + CALL_SLACK_S, check=False)
        except subprocess.TimeoutExpired:
            culprits.append(f"{path} (hangs)")
            continue
        try:
            json.loads(done.stdout)
        except json.JSONDecodeError:
            culprits.append(f"{path} (exit {done.returncode}: {done.stderr.strip()[-300:]})")
    return culprits


def check_report(
    outcome: Outcome, paths: Sequence[Path], expects: Sequence[Expect | None], labels: Sequence[str]
) -> None:
    """Check the invariants of every entry, the exit status they imply, and each file's expectation."""
    report = outcome.report
    entries = report["files"]
    assert [e["path"] for e in entries] == [str(p) for p in paths]
    failures = []
    for entry, expect, label in zip(entries, expects, labels, strict=True):
        problems = entry_problems(entry)
        if expect is not None:
            problems += expectation_problems(entry, expect)
        if problems:
            issues = [(i["code"], i["path"], i["message"][:200]) for i in entry["issues"]]
            failures.append(f"{label}\n  file: {entry['path']}\n  problems: {problems}\n  issues: {issues}")
    assert not failures, "\n".join(failures) + f"\nstderr tail: {outcome.stderr[-2000:]}"
    unreadable = sum(not e["readable"] for e in entries)
    valid = sum(e["valid"] for e in entries)
    expected_exit = 2 if unreadable else 0 if valid == len(entries) else 1
    assert outcome.returncode == expected_exit, (outcome.returncode, expected_exit)  # §9.3.2
    # The summary (beyond §9.3's members) counts unreadable files among the invalid ones.
    assert report["summary"] == {
        "files": len(entries),
        "valid": valid,
        "invalid": len(entries) - valid,
        "unreadable": unreadable,
    }


def entry_problems(entry: dict[str, Any]) -> list[str]:
    """Break of a rule that holds for every file (§9.1, §9.1.2, §9.3)."""
    problems = []
    issues = entry["issues"]
    codes = [i["code"] for i in issues]
    for issue in issues:
        registered = REGISTRY.get(issue["code"])
        if registered is None:
            problems.append(f"unregistered code {issue['code']}")
            continue
        if (issue["name"], issue["severity"], issue["clause"]) != (
            registered["name"],
            registered["severity"],
            registered["clause"],
        ):
            problems.append(f"{issue['code']} reported as {issue['name']}/{issue['severity']}/{issue['clause']}")
        if not issue["message"].strip() or "Traceback" in issue["message"]:
            problems.append(f"{issue['code']} message {issue['message']!r}")
        if not issue["path"].startswith("/"):
            problems.append(f"{issue['code']} path {issue['path']!r} is not absolute")
    has_error = any(i["severity"] == "error" for i in issues)
    readable = not ({"E100", "E101"} & set(codes))
    if entry["readable"] is not readable:
        problems.append(f"readable is {entry['readable']} with codes {codes}")
    if entry["valid"] is not (readable and not has_error):
        problems.append(f"valid is {entry['valid']} with codes {codes}")
    if "E100" in codes and not set(codes) <= {"E100", "E109"}:
        problems.append("E100 is not alone (§9.1.2)")
    for code in ("E102", "E104"):
        if code in codes and codes != [code]:
            problems.append(f"{code} is not alone (§9.1.2)")
    if entry["deep"] is not True:
        problems.append("not a deep validation")
    return problems


def expectation_problems(entry: dict[str, Any], expect: Expect) -> list[str]:
    """Where the report differs from what the damage must produce."""
    problems = []
    issues = entry["issues"]
    codes = [i["code"] for i in issues]
    if expect.readable is not None and entry["readable"] is not expect.readable:
        problems.append(f"expected readable {expect.readable}")
    if expect.valid is not None and entry["valid"] is not expect.valid:
        problems.append(f"expected valid {expect.valid}")
    for code, target in expect.codes:
        if not any(i["code"] == code and _at(i["path"], target) for i in issues):
            problems.append(f"expected {code} at {target}")
    if expect.alone and sorted(codes) != sorted(code for code, _ in expect.codes):
        problems.append(f"expected only {[c for c, _ in expect.codes]}")
    for code in expect.absent:
        if code in codes:
            problems.append(f"{code} must not be reported")
    if expect.error_at and not any(
        i["severity"] == "error" and any(_at(i["path"], t) for t in expect.error_at) for i in issues
    ):
        problems.append(f"expected an error at one of {expect.error_at}")
    if expect.exact is not None and tuple(sorted(codes)) != expect.exact:
        problems.append(f"expected exactly the codes {expect.exact}")
    if problems and expect.why:
        problems.append(f"because: {expect.why}")
    return problems


def _fresh_dir(factory: pytest.TempPathFactory) -> Path:
    return factory.mktemp(f"fuzz-{uuid.uuid4().hex[:8]}", numbered=False)


# -- byte-level damage -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ByteMutation:
    case: str
    kind: str
    #: (offset, mask): the byte at offset is XORed with mask (1..255, so it always changes).
    flips: tuple[tuple[int, int], ...] = ()
    #: (offset, data): bytes written over the file from offset on (within the file).
    writes: tuple[tuple[int, bytes], ...] = ()
    truncate: int | None = None
    expect: Expect | None = None

    def make(self, target: Path) -> None:
        data = bytearray(fixture_bytes(self.case))
        for offset, mask in self.flips:
            data[offset] ^= mask
        for offset, chunk in self.writes:
            data[offset : offset + len(chunk)] = chunk[: len(data) - offset]
        if self.truncate is not None:
            del data[self.truncate :]
        target.write_bytes(bytes(data))


def _metadata_intervals(info: FixtureInfo) -> list[tuple[int, int]]:
    """[start, end) ranges of the file after the user block that hold no raw dataset data."""
    intervals, cursor = [], info.userblock
    for region in info.regions:
        if region.offset > cursor:
            intervals.append((cursor, region.offset))
        cursor = max(cursor, region.offset + region.size)
    if cursor < info.size:
        intervals.append((cursor, info.size))
    return intervals


@st.composite
def byte_mutations(draw: st.DrawFn) -> ByteMutation:
    info = fixture_info(draw(st.sampled_from(sorted(VALID))))
    kinds = ["truncate", "head", "metadata", "overwrite"]
    if info.regions:
        kinds.append("data")
    if info.userblock:
        kinds.append("userblock")
    kind = draw(st.sampled_from(kinds))
    masks = st.integers(1, 255)
    base = info.userblock
    if kind == "truncate":
        size = draw(st.one_of(st.integers(0, min(64, info.size - 1)), st.integers(0, info.size - 1)))
        return ByteMutation(info.case, kind, truncate=size, expect=UNREADABLE)
    if kind == "head":
        # The superblock and what follows it: the root group's object header and, usually, its attributes.
        end = min(info.size, base + 2048)
        offsets = st.integers(base, end - 1)
        flips = tuple(draw(st.lists(st.tuples(offsets, masks), min_size=1, max_size=4, unique_by=lambda t: t[0])))
        signature_hit = any(base <= offset < base + 8 for offset, _ in flips)
        expect = Expect(readable=False, codes=(("E100", "/"),), why="§3.1: the HDF5 signature is broken")
        return ByteMutation(info.case, kind, flips=flips, expect=expect if signature_hit else None)
    if kind == "userblock":
        flips = tuple(draw(st.lists(st.tuples(st.integers(0, base - 1), masks), min_size=1, max_size=8)))
        expect = Expect(valid=True, exact=BASELINE[info.case], why="the user block is not part of the HDF5 data")
        return ByteMutation(info.case, kind, flips=flips, expect=expect)
    if kind == "metadata":
        intervals = _metadata_intervals(info)
        total = sum(end - start for start, end in intervals)

        def locate(index: int) -> int:
            for start, end in intervals:
                if index < end - start:
                    return start + index
                index -= end - start
            raise AssertionError(index)

        flips = tuple(
            (locate(i), mask)
            for i, mask in draw(st.lists(st.tuples(st.integers(0, total - 1), masks), min_size=1, max_size=6))
        )
        return ByteMutation(info.case, kind, flips=flips)
    if kind == "overwrite":
        offset = draw(st.integers(base, info.size - 1))
        length = draw(st.integers(1, 64))
        fill = draw(
            st.one_of(
                st.sampled_from([b"\x00", b"\xff"]).map(lambda b: b * length),
                st.binary(min_size=length, max_size=length),
            )
        )
        return ByteMutation(info.case, kind, writes=((offset, fill),))
    region = draw(st.sampled_from(info.regions))
    span = region.used if region.used else region.size
    flips = tuple(
        (region.offset + i, mask)
        for i, mask in draw(
            st.lists(st.tuples(st.integers(0, span - 1), masks), min_size=1, max_size=3, unique_by=lambda t: t[0])
        )
    )
    caught: Expect | None = None
    if region.used and region.numeric:
        targets = info.fingerprint_covers(region.features)
        if targets:
            why = f"§8.1: raw data of {region.dataset} changed under a fingerprint"
            caught = Expect(readable=True, valid=False, error_at=targets, why=why)
    return ByteMutation(info.case, kind, flips=flips, expect=caught)


@settings(max_examples=10, phases=NO_SHRINK)
@given(batch=st.lists(byte_mutations(), min_size=2, max_size=6))
def test_byte_damage_is_always_a_report(batch: list[ByteMutation], tmp_path_factory: pytest.TempPathFactory) -> None:
    """Flipped, overwritten or cut bytes: a schema-valid report per file, exit 0/1/2, no traceback, no hang."""
    folder = _fresh_dir(tmp_path_factory)
    paths = []
    for index, mutation in enumerate(batch):
        path = folder / f"{index}-{mutation.case}-{mutation.kind}.h5"
        mutation.make(path)
        paths.append(path)
    outcome = run_validate(paths)
    check_report(outcome, paths, [m.expect for m in batch], [repr(m) for m in batch])


# -- structure-level damage (h5py on a copy) ---------------------------------------------------------------------


#: An attribute value to write: (kind, value) with kind one of str, int, float, str_array, int_array, opaque.
AttrValue = tuple[str, Any]


def _write_attr(obj: Any, name: str, value: AttrValue) -> None:
    kind, data = value
    if name in obj.attrs:
        del obj.attrs[name]
    if kind == "str":
        obj.attrs.create(name, data, dtype=UTF8)
    elif kind == "int":
        obj.attrs.create(name, np.int64(data))
    elif kind == "float":
        obj.attrs.create(name, np.float64(data))
    elif kind == "str_array":
        obj.attrs.create(name, np.array(list(data), dtype=object), dtype=UTF8)
    elif kind == "int_array":
        obj.attrs.create(name, np.array(list(data), dtype=np.int64))
    elif kind == "opaque":
        obj.attrs.create(name, np.void(bytes(data)))
    else:
        raise AssertionError(kind)


def _replace(f: h5py.File, path: str, data: Any, dtype: Any = None) -> None:
    """Replace the dataset at path by one holding data, keeping its attributes."""
    old = f[path]
    attrs = {key: old.attrs[key] for key in old.attrs}
    del f[path]
    new = f.create_dataset(path, data=data, dtype=dtype)
    for key, value in attrs.items():
        new.attrs[key] = value


def _extend_rows(f: h5py.File, path: str, extra: int) -> None:
    """Give the dataset `extra` more rows: copies of its last row (so offsets stay monotonic), or zeros."""
    old = f[path]
    data = old[()]
    if data.shape[0]:
        tail = np.repeat(data[-1:], extra, axis=0)
    else:
        tail = np.full((extra, *data.shape[1:]), b"" if data.dtype.kind in "OS" else 0, dtype=data.dtype)
    _replace(f, path, np.concatenate([data, tail]), dtype=old.dtype)


def _retype(f: h5py.File, path: str, to: str) -> None:
    old = f[path]
    n = old.shape[0] if old.shape else 1
    if to == "float64":
        _replace(f, path, old[()].astype(np.float64))
    elif to == "uint8":
        _replace(f, path, np.abs(old[()]).astype(np.uint8))
    elif to == "str":
        _replace(f, path, np.array([str(i) for i in range(n)], dtype=object), dtype=UTF8)
    elif to == "int32":
        _replace(f, path, np.arange(n, dtype=np.int32))
    elif to == "compound":
        _replace(f, path, np.zeros(n, dtype=[("a", "<i4"), ("b", "<f4")]))
    elif to == "2d":
        _replace(f, path, old[()].reshape(-1, 1), dtype=old.dtype)
    elif to == "string_2d":
        _replace(f, path, np.array([[str(i), "x"] for i in range(n)], dtype=object), dtype=UTF8)
    else:
        raise AssertionError(to)


def _offsets(f: h5py.File, group: str, how: str, arg: int) -> None:
    offsets = f[f"{group}/offsets"]
    values = offsets[()]
    if how == "start":
        values[0] = arg
    elif how == "end":
        values[-1] = values[-1] + arg
    elif how == "decrease":  # offsets[arg] above offsets[arg + 1]
        values[arg] = values[arg + 1] + 1
    else:
        raise AssertionError(how)
    offsets[...] = values


def _shapes_row(f: h5py.File, group: str, row: int) -> None:
    offsets = f[f"{group}/offsets"][()]
    shapes = f[f"{group}/shapes"]
    wrong = np.ones(shapes.shape[1], dtype=np.int64)
    wrong[0] = offsets[row + 1] - offsets[row] + 1  # product one more than the sample's number of values
    shapes[row] = wrong


def _codes(f: h5py.File, group: str, row: int, how: str) -> None:
    k = f[f"{group}/class_names"].shape[0]
    codes = f[f"{group}/codes"]
    codes[row] = k if how == "high" else -2


def _class_names(f: h5py.File, group: str, how: str) -> None:
    names = f[f"{group}/class_names"]
    values = [v.decode("utf-8") if isinstance(v, bytes) else str(v) for v in names[()]]
    if how == "repeat":
        values[1] = values[0]
    else:
        values[0] = ""
    _replace(f, f"{group}/class_names", np.array(values, dtype=object), dtype=UTF8)


def _edit(f: h5py.File, op: str, target: str, arg: Any) -> None:
    """Apply one structural edit to the open copy."""
    if op == "del_attr":
        del f[target].attrs[arg]
    elif op == "set_attr":
        _write_attr(f[target], arg[0], arg[1])
    elif op == "delete":
        del f[target]
    elif op == "extend_rows":
        _extend_rows(f, target, arg)
    elif op == "retype":
        _retype(f, target, arg)
    elif op == "offsets":
        _offsets(f, target, arg[0], arg[1])
    elif op == "shapes_row":
        _shapes_row(f, target, arg)
    elif op == "codes":
        _codes(f, target, arg[0], arg[1])
    elif op == "class_names":
        _class_names(f, target, arg)
    elif op == "bool_value":
        dset = f[target]
        dset[(0,) * dset.ndim] = arg
    elif op == "split_to_dataset":
        del f[target]
        f.create_dataset(target, data=np.arange(3, dtype=np.int64))
    elif op == "rename":
        f.move(target, arg)
    elif op == "soft_link":
        f[target] = h5py.SoftLink(arg)
    else:
        raise AssertionError(op)


@dataclass(frozen=True)
class Mutation:
    case: str
    op: str
    target: str
    arg: Any
    expect: Expect

    def make(self, path: Path) -> None:
        shutil.copyfile(VALID[self.case], path)
        with h5py.File(path, "r+") as f:
            _edit(f, self.op, self.target, self.arg)


def _m(info: FixtureInfo, op: str, target: str, arg: Any, *codes: tuple[str, str], **expect: Any) -> Mutation:
    return Mutation(info.case, op, target, arg, Expect(codes=tuple(codes), **expect))


def root_mutations(info: FixtureInfo) -> list[Mutation]:
    """Root attributes deleted, retyped or given wrong values (§1.2-§1.5, §3.7, §4.1-§4.4, §8.1)."""
    r = "/"
    out = [
        _m(info, "del_attr", r, "format", ("E102", r), alone=True, why="§4.1, §9.1.2: not h5ml, reported alone"),
        _m(info, "set_attr", r, ("format", ("str", "hdf5")), ("E102", r), alone=True, why="§4.1"),
        _m(info, "set_attr", r, ("format", ("int", 1)), ("E102", r), alone=True, why="§4.1"),
        _m(info, "del_attr", r, "format_version", ("E103", r), why="§4.2: a missing format_version is E103"),
        _m(info, "set_attr", r, ("format_version", ("int", 1)), ("E103", r), why="§1.2"),
        _m(info, "set_attr", r, ("format_version", ("str", "01.0")), ("E103", r), why="§1.2: no leading zeros"),
        _m(info, "set_attr", r, ("format_version", ("str", "2.0")), ("E104", r), alone=True, why="§1.3, §9.1.2"),
        _m(info, "set_attr", r, ("format_version", ("str_array", ("1.0",))), ("E103", r), why="§1.2, §3.7"),
        _m(info, "del_attr", r, "complete", ("E106", r), why="§4.4"),
        _m(info, "set_attr", r, ("complete", ("int", 0)), ("E106", r), why="§4.4"),
        _m(info, "set_attr", r, ("complete", ("int", 2)), ("E106", r), why="§4.4"),
        _m(info, "set_attr", r, ("must_understand", ("str_array", ("acme:x",))), ("E105", r), why="§1.5"),
        _m(info, "set_attr", r, ("must_understand", ("str", "")), ("E107", r), why="§4.2: a 1-D array"),
        _m(info, "set_attr", r, ("created", ("str", "2026-13-01T00:00:00Z")), ("E107", r), why="§4.2: month 13"),
        _m(info, "set_attr", r, ("writer", ("str", "h5ml")), ("E107", r), why="§4.2: name, space, version"),
        _m(info, "set_attr", r, ("name", ("str", "")), ("E107", r), why="§4.2: non-empty"),
        _m(info, "set_attr", r, ("license", ("int", 4)), ("E107", r), why="§4.2: a string"),
        _m(info, "set_attr", r, ("homepage", ("str", "ftp://example.org")), ("E107", r), why="§4.2"),
        _m(info, "set_attr", r, ("required_filters", ("int_array", (0,))), ("E107", r), why="§4.2: ids in [1, 65535]"),
        _m(info, "set_attr", r, ("keywords", ("str_array", ("",))), ("E107", r), why="§4.2: non-empty keywords"),
        _m(info, "set_attr", r, ("fingerprint", ("str", "sha256:" + "G" * 64)), ("E161", r), why="§8.1"),
        _m(info, "set_attr", r, ("acme:blob", ("opaque", b"\x01\x02\x03\x04")), ("E113", r), why="§3.2, §4.7"),
    ]
    for name in ("name", "created", "writer", "must_understand"):
        why = f"§4.2: required root attribute {name} missing"
        out.append(_m(info, "del_attr", r, name, ("E108", r), why=why))
    retypes: list[tuple[str, AttrValue, str]] = [
        ("name", ("int", 7), "E107"),
        ("created", ("float", 1.5), "E107"),
        ("writer", ("str_array", ("h5ml 1.0",)), "E116"),
        ("name", ("str_array", ("a", "b")), "E116"),
    ]
    for name, value, code in retypes:
        why = f"§4.2, §3.7: {name} is a scalar string"
        out.append(_m(info, "set_attr", r, (name, value), (code, r), why=why))
    return out


def split_mutations(info: FixtureInfo, split: Split) -> list[Mutation]:
    """Split attributes and the split itself (§3.6, §3.7, §5.1, §5.3)."""
    s = split.path
    parent, name = s.rsplit("/", 1)
    out = [
        _m(info, "del_attr", s, "num_samples", ("E121", s), why="§5.3"),
        _m(info, "set_attr", s, ("num_samples", ("int", -1)), ("E121", s), why="§5.3: >= 0"),
        _m(info, "set_attr", s, ("num_samples", ("str", str(split.n))), ("E121", s), why="§5.3: an integer"),
        _m(info, "set_attr", s, ("num_samples", ("float", float(split.n))), ("E121", s), why="§5.3: not a float"),
        _m(info, "set_attr", s, ("num_samples", ("int_array", (split.n,))), ("E116", s), why="§3.7"),
        _m(info, "set_attr", s, ("shuffle_seed", ("float", 1.5)), ("E117", s), why="§5.3: an integer"),
        _m(info, "set_attr", s, ("shuffle_seed", ("int", -1)), ("E117", s), why="§5.3: in [0, 2^63)"),
        _m(info, "set_attr", s, ("description", ("int", 7)), ("E117", s), why="§5.3: a string"),
        _m(info, "split_to_dataset", s, None, ("E123", s), why="§5.1: a split is a group"),
        _m(info, "rename", s, f"{parent}/ {name}", ("E120", f"{parent}/ {name}"), why="§5.1.1: leading space"),
        _m(info, "rename", s, f"{parent}/.{name}", ("E120", f"{parent}/.{name}"), why="§5.1.1: leading '.'"),
    ]
    if split.features:
        first = split.features[0].path
        out.append(_m(info, "soft_link", f"{s}/alias", first, ("E115", f"{s}/alias"), why="§3.6"))
        for extra in (1, 2):
            codes = tuple(("E122", f.path) for f in split.features)
            out.append(
                _m(info, "set_attr", s, ("num_samples", ("int", split.n + extra)), *codes, why="§5.3: every feature")
            )
    return out


def feature_mutations(info: FixtureInfo, feature: Feature) -> list[Mutation]:
    """Feature attributes, datasets and components (§3.2, §5.3, §6, §8.1)."""
    p, enc = feature.path, feature.encoding
    parent, name = p.rsplit("/", 1)
    out = [
        _m(info, "del_attr", p, "encoding", ("E130", p), why="§6.1"),
        _m(info, "del_attr", p, "encoding_version", ("E130", p), why="§6.1"),
        _m(info, "set_attr", p, ("encoding_version", ("str", "2.0")), ("E132", p), why="§6.1: MAJOR 1"),
        _m(info, "set_attr", p, ("encoding_version", ("str", "1")), ("E117", p), why="§6.1: MAJOR.MINOR"),
        _m(info, "set_attr", p, ("units", ("int", 3)), ("E117", p), why="§6.1: a string"),
        _m(info, "set_attr", p, ("description", ("float", 2.5)), ("E117", p), why="§6.1: a string"),
        _m(info, "set_attr", p, ("sample_rate", ("float", -1.0)), ("E117", p), why="§6.1: positive"),
        _m(info, "set_attr", p, ("sample_rate", ("str", "fast")), ("E117", p), why="§6.1: a number"),
        _m(info, "set_attr", p, ("fingerprint", ("str", "sha256:1234")), ("E161", p), why="§8.1"),
        _m(info, "set_attr", p, ("acme:blob", ("opaque", b"\xde\xad")), ("E113", p), why="§3.2, §4.7"),
        _m(info, "rename", p, f"{parent}/ {name}", ("E120", f"{parent}/ {name}"), why="§5.1.1: leading space"),
    ]
    if info.newer_minor:
        # §1.4.1: in a newer-MINOR file an unknown encoding makes an unknown object, and an unknown role I300.
        out.append(_m(info, "set_attr", p, ("encoding", ("str", "sparse")), ("I301", p), absent=("E131",), valid=None))
    else:
        out.append(_m(info, "set_attr", p, ("encoding", ("str", "sparse")), ("E131", p), why="§6.1"))
        out.append(_m(info, "set_attr", p, ("role", ("str", "loss")), ("E117", p), why="§6.1: input/target/metadata"))
    if enc != "bytes":
        out.append(_m(info, "set_attr", p, ("media_type", ("str", "image/png")), ("E117", p), why="§6.6: bytes only"))
    elif info.newer_minor:
        # SPEC §1.4.1-R3: an undefined media_type value of a newer MINOR is I300, never E117
        out.append(_m(info, "set_attr", p, ("media_type", ("str", "png")), ("I300", p), absent=("E117",), valid=None))
    else:
        out.append(_m(info, "set_attr", p, ("media_type", ("str", "png")), ("E117", p), why="§6.6: type/subtype"))
    if enc in ("string", "categorical", "bytes"):
        out.append(_m(info, "set_attr", p, ("stats_count", ("int", 1)), ("E117", p), why="§6.7: numeric only"))
    if enc == "dense":
        out.append(_m(info, "extend_rows", p, 1, ("E122", p), why="§5.3: N rows"))
        out.append(_m(info, "retype", p, "str", ("E133", p), why="§6.2: strings are not dense"))
        out.append(_m(info, "retype", p, "compound", ("E113", p), why="§3.2: no compound"))
        if info.newer_minor:  # SPEC §1.4.1-R3: an undefined logical_dtype of a newer MINOR is I300, never E117
            out.append(
                _m(info, "set_attr", p, ("logical_dtype", ("str", "maybe")), ("I300", p), absent=("E117",), valid=None)
            )
        else:
            out.append(_m(info, "set_attr", p, ("logical_dtype", ("str", "maybe")), ("E117", p), why="§6.1: only bool"))
        if feature.kind == "f":
            out.append(_m(info, "set_attr", p, ("logical_dtype", ("str", "bool")), ("E117", p), why="§3.3: uint8"))
        if feature.boolean and feature.n:
            out.append(_m(info, "bool_value", p, 2, ("E142", p), why="§3.3: 0 or 1"))
    if enc == "string":
        out.append(_m(info, "extend_rows", p, 2, ("E122", p), why="§5.3: N rows"))
        out.append(_m(info, "retype", p, "int32", ("E133", p), why="§6.4: strings"))
        out.append(_m(info, "retype", p, "string_2d", ("E133", p), why="§6.4: shape (N,)"))
    if enc in ("ragged", "bytes"):
        for component in ("values", "offsets"):
            out.append(_m(info, "delete", f"{p}/{component}", None, ("E133", p), why=f"§6.3: {component} required"))
        out.append(_m(info, "offsets", p, ("start", 1), ("E140", p), why="§6.3: offsets[0] is 0"))
        out.append(_m(info, "offsets", p, ("end", 5), ("E140", p), why="§6.3: offsets end at M (past the end)"))
        for row in range(feature.n - 1):
            out.append(_m(info, "offsets", p, ("decrease", row), ("E140", p), why="§6.3: offsets never decrease"))
        out.append(_m(info, "retype", f"{p}/offsets", "float64", ("E133", p), why="§6.3: int64 offsets"))
        out.append(_m(info, "retype", f"{p}/offsets", "int32", ("E133", p), why="§6.3: int64 offsets"))
        out.append(_m(info, "extend_rows", f"{p}/offsets", 1, ("E122", p), why="§5.3: N + 1 offsets"))
    if enc == "bytes":
        out.append(_m(info, "retype", f"{p}/values", "float64", ("E133", p), why="§6.6: uint8 values"))
    if enc == "ragged" and "shapes" in feature.members:
        for row in range(feature.n):
            out.append(_m(info, "shapes_row", p, row, ("E143", p), why="§6.3: product of shapes[i]"))
        out.append(_m(info, "retype", f"{p}/values", "2d", ("E133", p), why="§6.3: 1-D values with shapes"))
        out.append(_m(info, "retype", f"{p}/shapes", "float64", ("E133", p), why="§6.3: int64 shapes"))
    if enc == "categorical":
        for component in ("codes", "class_names"):
            out.append(_m(info, "delete", f"{p}/{component}", None, ("E133", p), why=f"§6.5: {component} required"))
        for row in range(feature.n):
            if feature.k <= feature.code_max:  # else every code the dtype holds is below K
                out.append(_m(info, "codes", p, (row, "high"), ("E141", p), why="§6.5: codes below K"))
            out.append(_m(info, "codes", p, (row, "low"), ("E141", p), why="§6.5: codes from -1"))
        out.append(_m(info, "retype", f"{p}/codes", "float64", ("E133", p), why="§6.5: integer codes"))
        out.append(_m(info, "retype", f"{p}/codes", "uint8", ("E133", p), why="§6.5: signed codes"))
        out.append(_m(info, "extend_rows", f"{p}/codes", 1, ("E122", p), why="§5.3: N codes"))
        if feature.k >= 2:
            out.append(_m(info, "class_names", p, "repeat", ("E134", p), why="§6.5: pairwise different"))
        if feature.k >= 1:
            out.append(_m(info, "class_names", p, "empty", ("E134", p), why="§6.5: non-empty"))
    return out


@functools.cache
def catalogue(case: str) -> tuple[Mutation, ...]:
    """Every structural mutation this fixture allows, each with what the report must say."""
    info = fixture_info(case)
    out = root_mutations(info)
    for split in info.splits:
        out += split_mutations(info, split)
        for feature in split.features:
            out += feature_mutations(info, feature)
    return tuple(out)


@st.composite
def structure_mutations(draw: st.DrawFn) -> Mutation:
    case = draw(st.sampled_from(sorted(VALID)))
    return draw(st.sampled_from(catalogue(case)))


def _run_mutations(batch: Sequence[Mutation], folder: Path, timeout: float = FILE_TIMEOUT_S) -> None:
    paths = []
    for index, mutation in enumerate(batch):
        path = folder / f"{index}-{mutation.case}-{mutation.op}.h5"
        mutation.make(path)
        paths.append(path)
    outcome = run_validate(paths, timeout)
    labels = [f"{m.case}: {m.op} {m.target} {m.arg!r}" for m in batch]
    check_report(outcome, paths, [m.expect for m in batch], labels)


@settings(max_examples=8, phases=NO_SHRINK)
@given(batch=st.lists(structure_mutations(), min_size=2, max_size=6))
def test_structure_damage_is_reported(batch: list[Mutation], tmp_path_factory: pytest.TempPathFactory) -> None:
    """Attributes, datasets and components damaged with h5py: each file gets the issue the spec assigns."""
    _run_mutations(batch, _fresh_dir(tmp_path_factory))


#: The fixture that has every encoding, two splits, statistics and fingerprints everywhere.
EVERY = "valid-every-encoding"


def _pick(case: str, op: str, target: str, arg: Any) -> Mutation:
    """The catalogue's mutation (with its expectation) of this op, target and argument."""
    (found,) = [m for m in catalogue(case) if (m.op, m.target, m.arg) == (op, target, arg)]
    return found


#: Files each damaged in several independent places at once (§9.1.2: every issue is reported, not only the
#: first): one mutation per feature, or root attributes whose codes all differ, or one mutation per split.
COMBINED: list[list[tuple[str, str, Any]]] = [
    [
        ("bool_value", "/train/flag", 2),
        ("codes", "/train/label", (1, "high")),
        ("offsets", "/train/clip", ("decrease", 1)),
        ("shapes_row", "/train/volume", 2),
        ("offsets", "/train/blob", ("end", 5)),
        ("retype", "/train/text", "int32"),
        ("extend_rows", "/train/image", 1),
        ("class_names", "/test/label", "repeat"),
        ("del_attr", "/test/image", "encoding"),
    ],
    [
        ("set_attr", "/train/flag", ("encoding", ("str", "sparse"))),
        ("delete", "/train/label/class_names", None),
        ("set_attr", "/train/clip", ("encoding_version", ("str", "2.0"))),
        ("retype", "/train/volume/values", "2d"),
        ("set_attr", "/train/blob", ("media_type", ("str", "png"))),
        ("set_attr", "/train/text", ("stats_count", ("int", 1))),
        ("rename", "/train/image", "/train/ image"),
        ("codes", "/test/label", (0, "low")),
        ("set_attr", "/test/image", ("fingerprint", ("str", "sha256:1234"))),
    ],
    [
        ("set_attr", "/", ("must_understand", ("str_array", ("acme:x",)))),
        ("del_attr", "/", "complete"),
        ("set_attr", "/", ("created", ("str", "2026-13-01T00:00:00Z"))),
        ("del_attr", "/", "name"),
        ("set_attr", "/", ("writer", ("str_array", ("h5ml 1.0",)))),
        ("set_attr", "/", ("acme:blob", ("opaque", b"\x01\x02\x03\x04"))),
    ],
    [("soft_link", "/train/alias", "/train/blob"), ("del_attr", "/test", "num_samples")],
    [("set_attr", "/train", ("num_samples", ("int", 5))), ("split_to_dataset", "/test", None)],
    [("del_attr", "/", "format")],
    [("set_attr", "/", ("format_version", ("str", "2.0")))],
    [("del_attr", "/", "format_version")],
]


@dataclass(frozen=True)
class Combined:
    """Several catalogue mutations applied to one copy of a fixture; the report must show each one's codes."""

    case: str
    parts: tuple[Mutation, ...]

    @property
    def expect(self) -> Expect:
        if len(self.parts) == 1:
            return self.parts[0].expect
        codes = tuple(code for part in self.parts for code in part.expect.codes)
        return Expect(codes=codes, why="; ".join(part.expect.why for part in self.parts))

    def make(self, path: Path) -> None:
        shutil.copyfile(VALID[self.case], path)
        with h5py.File(path, "r+") as f:
            for part in self.parts:
                _edit(f, part.op, part.target, part.arg)


def test_combined_structural_damage(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Fixed damage on the fixture with every encoding, several mutations per file: every expected code."""
    batch = [Combined(EVERY, tuple(_pick(EVERY, *part) for part in parts)) for parts in COMBINED]
    newer = next(m for m in catalogue("valid-newer-minor") if m.expect.absent)  # unknown encoding in a 1.1 file
    batch.append(Combined(newer.case, (newer,)))
    assert {code for c in batch for code, _ in c.expect.codes} >= {
        *("E102", "E103", "E104", "E105", "E106", "E107", "E108", "E113", "E115", "E116", "E117"),
        *("E120", "E121", "E122", "E123", "E130", "E131", "E132", "E133", "E134"),
        *("E140", "E141", "E142", "E143", "E161", "I301"),
    }
    folder = _fresh_dir(tmp_path_factory)
    paths = []
    for index, combined in enumerate(batch):
        path = folder / f"{index}-{combined.case}.h5"
        combined.make(path)
        paths.append(path)
    outcome = run_validate(paths, timeout=60.0)
    labels = [f"{c.case}: " + ", ".join(f"{m.op} {m.target} {m.arg!r}" for m in c.parts) for c in batch]
    check_report(outcome, paths, [c.expect for c in batch], labels)
    assert outcome.returncode == 1


def test_byte_damage_with_exact_outcomes(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Fixed byte damage whose outcome the spec fixes, on the smallest fixture and the one with a user block."""
    a = fixture_info("valid-appendix-a")
    ub = fixture_info("valid-userblock")
    (x,) = a.regions  # /train/x: contiguous float32, fingerprinted
    assert x.dataset == "/train/x" and x.used == x.size == 24
    batch = [
        ByteMutation(a.case, "truncate", truncate=0, expect=UNREADABLE),
        ByteMutation(a.case, "truncate", truncate=a.size - 1, expect=UNREADABLE),
        ByteMutation(a.case, "truncate", truncate=a.size // 2, expect=UNREADABLE),
        ByteMutation(a.case, "head", flips=((0, 0x01),), expect=UNREADABLE),
        ByteMutation(ub.case, "head", flips=((ub.userblock + 3, 0x40),), expect=UNREADABLE),
        ByteMutation(
            ub.case, "userblock", flips=((0, 0xFF), (ub.userblock - 1, 0x10)), expect=Expect(valid=True, exact=())
        ),
        ByteMutation(
            a.case,
            "data",
            flips=((x.offset + 5, 0x80),),
            expect=Expect(codes=(("E160", "/train/x"), ("E160", "/")), why="§8.1: both fingerprints"),
        ),
    ]
    folder = _fresh_dir(tmp_path_factory)
    paths = []
    for index, mutation in enumerate(batch):
        path = folder / f"{index}-{mutation.case}-{mutation.kind}.h5"
        mutation.make(path)
        paths.append(path)
    outcome = run_validate(paths, timeout=60.0)
    check_report(outcome, paths, [m.expect for m in batch], [repr(m) for m in batch])
    assert outcome.returncode == 2


def test_damaged_root_object_header_is_reported(tmp_path_factory: pytest.TempPathFactory) -> None:
    """One flipped byte (offset 113, XOR 0xD8) in the root object header of a valid fixture: E101, not a crash.

    Found by test_byte_damage_is_always_a_report. HDF5 opens the file, then h5py raises KeyError ("Unable to
    synchronously open object (unable to determine object type)") on the first access to the root group's
    attributes; a library failure while reading the file is E101 (§10.3), and the CLI must still print the
    report of every file it was given (§9.3) with exit 2 (§9.3.2).
    """
    mutation = ByteMutation(
        "valid-fingerprint-pair-order",
        "head",
        flips=((113, 0xD8),),
        expect=Expect(readable=False, codes=(("E101", "/"),), why="§10.3: the HDF5 library fails on the root"),
    )
    folder = _fresh_dir(tmp_path_factory)
    damaged, pristine = folder / "damaged.h5", folder / "pristine.h5"
    mutation.make(damaged)
    shutil.copyfile(VALID[mutation.case], pristine)
    outcome = run_validate([damaged, pristine], timeout=60.0)
    check_report(outcome, [damaged, pristine], [mutation.expect, Expect(valid=True)], ["damaged", "pristine"])
    assert outcome.returncode == 2


def test_fixtures_are_untouched() -> None:
    """The committed fixtures still have the digests the manifest records (nothing here wrote to them)."""
    digests = {case["id"]: case["sha256"] for case in MANIFEST["cases"]}
    for case, path in VALID.items():
        assert hashlib.sha256(path.read_bytes()).hexdigest() == digests[case], case
