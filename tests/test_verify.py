"""``h5ml verify`` and ``h5ml.verify``: every fingerprint recomputed from the data, in threads (§8.1-§8.3).

Real files written by ``h5ml.write``, damaged in place with ``open(..., "r+b")``
at the byte addresses HDF5 reports for a chunk, and the real command line
(``h5ml.tools.cli.run``).
"""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
import textwrap
import zlib
from pathlib import Path
from typing import Any

import crc32c
import h5py
import numpy as np
import pytest

import h5ml
from _files import run_cli
from badfiles import not_h5ml, replace_dataset
from h5ml.errors import H5MLError, InvalidFileError
from h5ml.model.fingerprint import fingerprint_feature
from h5ml.reader.chunk_stream import StoredChunk
from h5ml.spec import schemas

N = 6000  # image: 6000 x 784 bytes, several chunks of about 1 MiB


def _content() -> dict[str, Any]:
    rng = np.random.default_rng(14)
    return {
        "train": {
            "image": rng.integers(0, 255, (N, 28, 28), dtype=np.uint8),
            "x": rng.normal(size=(N, 16)).astype(">f4"),
            "label": h5ml.Categorical(rng.integers(0, 10, N), [f"c{i}" for i in range(10)]),
            "text": [f"sample {i}" for i in range(N)],
            "wave": [rng.normal(size=(int(rng.integers(1, 40)), 2)).astype("f4") for _ in range(N)],
            "blob": [bytes(rng.integers(0, 255, int(rng.integers(0, 30)), dtype=np.uint8)) for _ in range(N)],
            "flag": rng.integers(0, 2, N).astype(bool),
        },
        "test": {"x": rng.normal(size=(50, 16)).astype("f4")},
    }


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One uncompressed and one gzip file of the same content (written once; tests copy them)."""
    root = tmp_path_factory.mktemp("verify")
    out = {"none": root / "plain.h5", "gzip": root / "gzip.h5"}
    h5ml.write(out["none"], _content())
    h5ml.write(out["gzip"], _content(), compression="gzip")
    return out


def _copy(src: Path, tmp_path: Path) -> Path:
    dst = tmp_path / src.name
    dst.write_bytes(src.read_bytes())
    return dst


def _chunk_span(path: Path, hdf5_path: str, index: int) -> tuple[int, int]:
    with h5py.File(path, "r") as f:
        info = f[hdf5_path].id.get_chunk_info(index)
        return int(info.byte_offset), int(info.size)


def _flip(path: Path, hdf5_path: str, index: int = 1, at: int = 7) -> None:
    """Flip every bit of one stored byte of chunk ``index`` of a dataset, in place."""
    offset, size = _chunk_span(path, hdf5_path, index)
    with open(path, "r+b") as fh:
        fh.seek(offset + at % size)
        byte = fh.read(1)[0]
        fh.seek(offset + at % size)
        fh.write(bytes([byte ^ 0xFF]))


def _statuses(report: h5ml.VerifyReport) -> dict[str, str]:
    return {c.hdf5_path: c.status for c in report.features}


def _stored_crc(path: Path, hdf5_path: str, index: int) -> int:
    """The CRC32C of chunk ``index``'s stored bytes, read straight from the file (not through h5ml)."""
    offset, size = _chunk_span(path, hdf5_path, index)
    with open(path, "rb") as fh:
        fh.seek(offset)
        return int(crc32c.crc32c(fh.read(size)))


@pytest.mark.parametrize("compression", ["none", "gzip"])
def test_a_written_file_verifies_with_the_writers_fingerprints(files: dict[str, Path], compression: str) -> None:
    """§8.1-R2, §8.1-R3: every recomputed fingerprint equals the one the writer stored; exit 0; the JSON fits its schema."""
    path = files[compression]
    report = h5ml.verify(path, jobs=2)
    assert report.ok
    assert len(report.features) == 8
    with h5py.File(path, "r") as f:
        for check in report.features:
            assert check.actual == f[check.hdf5_path].attrs["fingerprint"] == check.expected
        assert report.file_actual == report.file_expected == f.attrs["fingerprint"]
    # §8.4: the writer protects every feature dataset; verify compared every one of them
    assert len(report.checksummed) == 8
    assert [c.checksum_status for c in report.features] == ["ok"] * 8
    wave = next(c for c in report.features if c.hdf5_path == "/train/wave")
    assert wave.checksummed == ("/train/wave/offsets", "/train/wave/values")
    code, out, err = run_cli("verify", str(path), "--jobs", "2")
    assert (code, err) == (0, "")
    assert f"{path}: VERIFIED; 8 features" in out
    assert out.rstrip().endswith("; 8 features checked by chunk checksums")
    code, out, _ = run_cli("verify", "--json", str(path))
    document = json.loads(out)
    schemas.validator_for("verify").validate(document)
    assert code == 0 and document["ok"] is True
    assert [f["status"] for f in document["features"]] == ["ok"] * 8
    assert document["checksums"] == {"compared": True, "features_checked": 8}
    assert [f["checksums"]["status"] for f in document["features"]] == ["ok"] * 8


@pytest.mark.parametrize("hdf5_path", ["/train/image", "/train/x", "/train/wave/values", "/train/blob/values"])
def test_one_flipped_byte_of_uncompressed_data_names_exactly_that_feature(
    files: dict[str, Path], tmp_path: Path, hdf5_path: str
) -> None:
    """§8.1-R2, §8.4-R2: one flipped byte in one chunk is that feature's DIFFERS, naming the dataset and the chunk.

    Both CRC32C values (the writer's, and the one of the damaged bytes read straight from the file) and both
    fingerprints are given; every other feature is ok.
    """
    path = _copy(files["none"], tmp_path)
    index = 1 if hdf5_path == "/train/image" else 0
    written = _stored_crc(path, hdf5_path, index)
    _flip(path, hdf5_path, index=index)
    damaged = _stored_crc(path, hdf5_path, index)
    feature = "/".join(hdf5_path.split("/")[:3])
    report = h5ml.verify(path, jobs=2)
    assert [c.hdf5_path for c in report.differing] == [feature]
    assert {p for p, s in _statuses(report).items() if s != "ok"} == {feature}
    assert report.file_status == "differs"  # the file fingerprint combines the changed feature's
    (bad,) = report.differing
    assert bad.checksum_status == "differs"
    assert [(m.path, m.entry, m.expected, m.actual) for m in bad.mismatches] == [(hdf5_path, index, written, damaged)]
    assert written != damaged and bad.expected != bad.actual and bad.actual is not None
    code, out, _ = run_cli("verify", str(path))
    assert code == 1
    line = next(line for line in out.splitlines() if line.startswith("DIFFERS train/"))
    (mismatch,) = bad.mismatches
    assert line == (
        f"DIFFERS {feature[1:]} ({feature}): chunk {index} of {hdf5_path}: CRC32C expected 0x{written:08x}, "
        f"computed 0x{damaged:08x} (rows {mismatch.rows[0]}..{mismatch.rows[1]}); "
        f"fingerprint expected {bad.expected}, computed {bad.actual}"
    )
    assert sum(line.startswith("DIFFERS train/") for line in out.splitlines()) == 1


def test_one_flipped_byte_of_gzip_data_names_that_feature_and_its_chunk(files: dict[str, Path], tmp_path: Path) -> None:
    """§8.4-R2: a flipped byte of a deflate stream: the chunk's CRC32C differs, so the feature DIFFERS (exit 1).

    Its fingerprint cannot be computed (the chunk does not inflate): the report says both. With
    ``--no-checksums`` the feature is only unverified (exit 2), as before checksums.
    """
    path = _copy(files["gzip"], tmp_path)
    written = _stored_crc(path, "/train/image", 1)
    _flip(path, "/train/image", index=1, at=200)
    damaged = _stored_crc(path, "/train/image", 1)
    report = h5ml.verify(path, jobs=2)
    assert {p for p, s in _statuses(report).items() if s != "ok"} == {"/train/image"}
    (bad,) = report.differing
    assert not report.unverified
    assert [(m.path, m.entry, m.expected, m.actual, m.rows) for m in bad.mismatches] == [
        ("/train/image", 1, written, damaged, (1024, 2048))
    ]
    assert bad.actual is None  # the fingerprint was not computed ...
    assert bad.reason is not None and "/train/image" in bad.reason and "chunk 1" in bad.reason  # ... and why
    assert report.file_status == "unverified"  # no guess at the file fingerprint without every feature's
    code, out, err = run_cli("verify", str(path))
    assert code == 1 and err == ""
    first = out.splitlines()[0]
    assert first.startswith(
        f"DIFFERS train/image (/train/image): chunk 1 of /train/image: CRC32C expected 0x{written:08x}, "
        f"computed 0x{damaged:08x} (rows 1024..2048); fingerprint not verified: "
    )
    assert "chunk 1 does not inflate" in first
    code, out, _ = run_cli("verify", "--json", str(path))
    document = json.loads(out)
    schemas.validator_for("verify").validate(document)
    entry = next(e for e in document["features"] if e["hdf5_path"] == "/train/image")
    assert (entry["status"], entry["actual"], entry["checksums"]["status"]) == ("differs", None, "differs")
    assert entry["checksums"]["mismatches"] == [
        {"dataset": "/train/image", "entry": 1, "expected": written, "actual": damaged, "rows": [1024, 2048]}
    ]
    code, out, _ = run_cli("verify", "--no-checksums", str(path))
    assert code == 2
    assert out.splitlines()[0].startswith("UNVERIFIED train/image (/train/image): ")
    assert out.rstrip().endswith("; chunk checksums not compared (--no-checksums)")


def test_a_changed_value_in_a_recompressed_gzip_chunk_names_that_feature(
    files: dict[str, Path], tmp_path: Path
) -> None:
    """A chunk that inflates to other values (one byte changed, then deflated again) is DIFFERS; exit 1."""
    path = _copy(files["gzip"], tmp_path)
    with h5py.File(path, "r+") as f:
        dsid = f["train/image"].id
        mask, stored = dsid.read_direct_chunk((1024, 0, 0))
        raw = bytearray(zlib.decompress(stored))
        raw[5] ^= 0x01
        dsid.write_direct_chunk((1024, 0, 0), zlib.compress(bytes(raw), 4), mask)
    report = h5ml.verify(path, jobs=1)
    assert [c.hdf5_path for c in report.differing] == ["/train/image"]
    assert {p for p, s in _statuses(report).items() if s != "ok"} == {"/train/image"}
    assert run_cli("verify", str(path))[0] == 1


def test_an_edited_fingerprint_attribute_is_named_and_the_data_still_agrees_with_the_file(
    files: dict[str, Path], tmp_path: Path
) -> None:
    """§8.1-R2: an edited attribute is DIFFERS with the edited value expected; the data still gives the file's (§8.3)."""
    path = _copy(files["none"], tmp_path)
    with h5py.File(path, "r") as f:
        original = f["train/label"].attrs["fingerprint"]
    edited = "sha256:" + "0" * 64
    with h5py.File(path, "r+") as f:
        f["train/label"].attrs["fingerprint"] = edited
    report = h5ml.verify(path)
    (bad,) = report.differing
    assert (bad.split, bad.feature, bad.expected, bad.actual) == ("train", "label", edited, original)
    assert report.file_status == "ok"
    code, out, _ = run_cli("verify", "--json", str(path))
    assert code == 1
    entry = next(e for e in json.loads(out)["features"] if e["hdf5_path"] == "/train/label")
    assert (entry["status"], entry["expected"], entry["actual"]) == ("differs", edited, original)


def test_jobs_1_and_2_give_identical_reports(files: dict[str, Path], tmp_path: Path) -> None:
    """The fingerprints do not depend on the threads: --jobs 1 and --jobs 2 print the same document (but jobs, time)."""
    path = _copy(files["gzip"], tmp_path)
    _flip(path, "/train/x", index=0, at=50)  # a damaged feature too: the same reason either way
    documents = []
    for jobs in ("1", "2"):
        code, out, _ = run_cli("verify", "--json", "--jobs", jobs, str(path))
        document = json.loads(out)
        assert document.pop("jobs") == int(jobs)
        document.pop("seconds")
        documents.append((code, document))
    assert documents[0] == documents[1]
    assert documents[0][0] == 1  # the damaged chunk's CRC32C differs (§8.4): DIFFERS, not only unverified
    entry = next(e for e in documents[0][1]["features"] if e["hdf5_path"] == "/train/x")
    assert [(m["dataset"], m["entry"]) for m in entry["checksums"]["mismatches"]] == [("/train/x", 0)]
    assert documents[0][1]["checksums"] == {"compared": True, "features_checked": 8}


def test_refused_files_get_one_error_line_and_no_traceback(tmp_path: Path, files: dict[str, Path]) -> None:
    """§3.6, §10.1: not an h5ml file, external storage, a missing file: ``h5ml: error: ...`` naming the file, exit 2."""
    tutorial = not_h5ml(tmp_path / "tutorial.h5")
    external = _copy(files["none"], tmp_path)
    raw = tmp_path / "outside.raw"
    raw.write_bytes(bytes(50 * 16 * 4))
    with h5py.File(external, "r+") as f:
        replace_dataset(f, "test/x", shape=(50, 16), dtype=np.float32, external=[(raw.name, 0, 50 * 16 * 4)])
    for path in (tutorial, external, tmp_path / "missing.h5"):
        code, out, err = run_cli("verify", str(path))
        assert code == 2 and out == ""
        assert err.startswith("h5ml: error: ") and str(path) in err and len(err.splitlines()) == 1
        assert "Traceback" not in err
    with pytest.raises(H5MLError, match="external"):
        h5ml.verify(external)


def test_a_feature_without_a_fingerprint_is_unverified_not_ok(files: dict[str, Path], tmp_path: Path) -> None:
    """§8.1: a fingerprint is SHOULD; without one nothing is compared, so the feature is unverified (exit 2), never ok."""
    path = _copy(files["none"], tmp_path)
    with h5py.File(path, "r+") as f:
        del f["train/text"].attrs["fingerprint"]
    report = h5ml.verify(path)
    assert [c.hdf5_path for c in report.unverified] == ["/train/text"]
    assert not report.ok and not report.differing
    code, out, _ = run_cli("verify", str(path))
    assert code == 2 and "UNVERIFIED train/text (/train/text): no fingerprint stored" in out


def test_decreasing_offsets_are_unverified_rather_than_hashed(files: dict[str, Path], tmp_path: Path) -> None:
    """SPEC §6.3-R1: offsets that decrease make no fingerprint (no guess); the reason says so.

    The offsets were rewritten in place, so their chunk's CRC32C differs too (§8.4-R2): DIFFERS with the
    reason; without the checksum step the feature is unverified.
    """
    path = _copy(files["none"], tmp_path)
    with h5py.File(path, "r+") as f:
        offsets = f["train/blob/offsets"]
        offsets[10] = offsets[11] + 5
    report = h5ml.verify(path, checksums=False)
    assert {p for p, s in _statuses(report).items() if s != "ok"} == {"/train/blob"}
    (bad,) = report.unverified
    assert bad.reason is not None and "decrease" in bad.reason
    assert bad.checksum_status == "skipped" and not report.checksummed
    report = h5ml.verify(path)
    (bad,) = report.differing
    assert [(m.path, m.entry) for m in bad.mismatches] == [("/train/blob/offsets", 0)]
    assert bad.actual is None and bad.reason is not None and "decrease" in bad.reason


def test_the_chunk_check_sees_every_stored_chunk_once_and_its_failure_names_the_feature(
    files: dict[str, Path],
) -> None:
    """The per-chunk step: ``check_chunk`` gets each chunk's stored bytes once; an error there makes it unverified."""
    path = files["gzip"]
    seen: list[tuple[str, int, int]] = []

    def record(chunk: StoredChunk) -> None:
        seen.append((chunk.dataset, chunk.index, len(chunk.data)))

    assert h5ml.verify(path, jobs=2, check_chunk=record).ok
    with h5py.File(path, "r") as f:
        expected = []
        for name in ("train/image", "train/x", "train/blob/values", "test/x"):
            dsid = f[name].id
            expected += [(f"/{name}", i, dsid.get_chunk_info(i).size) for i in range(dsid.get_num_chunks())]
    assert len(seen) == len(set(seen))
    assert set(expected) <= set(seen)

    def refuse(chunk: StoredChunk) -> None:
        if chunk.dataset == "/train/x" and chunk.index == 0:
            raise InvalidFileError(f"{chunk.file}: {chunk.dataset}: chunk {chunk.index}: checksum differs")

    report = h5ml.verify(path, jobs=2, check_chunk=refuse)
    assert {p for p, s in _statuses(report).items() if s != "ok"} == {"/train/x"}
    assert "chunk 0: checksum differs" in (report.unverified[0].reason or "")


@pytest.mark.parametrize("create", [{"fletcher32": True}, {"compression": "lzf"}, {"chunks": (7, 4)}])
def test_chunks_that_verify_does_not_decode_itself_are_read_through_hdf5(
    files: dict[str, Path], tmp_path: Path, create: dict[str, Any]
) -> None:
    """Other filters (Fletcher-32, LZF) and chunks that split rows go through h5py: the same fingerprints."""
    path = _copy(files["none"], tmp_path)
    with h5py.File(path, "r+") as f:
        values = f["test/x"][()]
        create = {"chunks": (16, 16), **create}
        replace_dataset(f, "test/x", data=values, **create)
        del f["test/_crc32c.x"]  # §8.4-R3: a rewritten dataset keeps no checksums that do not match
    seen: list[tuple[str, int]] = []
    report = h5ml.verify(path, jobs=2, check_chunk=lambda chunk: seen.append((chunk.dataset, chunk.index)))
    assert report.ok, [c.reason for c in report.features]
    test_x = next(c for c in report.features if c.hdf5_path == "/test/x")
    assert (test_x.checksum_status, test_x.unprotected) == ("absent", ("/test/x",))
    assert len(set(seen)) == len(seen)  # each chunk once
    whole_rows = create["chunks"][1:] == (16,)
    assert sorted(i for name, i in seen if name == "/test/x") == (list(range(4)) if whole_rows else [])


def test_progress_reaches_the_stored_bytes_and_never_goes_back(files: dict[str, Path]) -> None:
    """``progress(done, total)``: done never decreases and ends at total, the stored bytes of every feature."""
    calls: list[tuple[int, int]] = []
    report = h5ml.verify(files["gzip"], jobs=2, progress=lambda done, total: calls.append((done, total)))
    assert calls and calls[-1] == (report.stored_bytes, report.stored_bytes)
    assert all(a[0] <= b[0] for a, b in itertools.pairwise(calls))
    code, _, err = run_cli("verify", "--progress", str(files["gzip"]))
    assert code == 0 and "verify" in err


def test_jobs_must_be_one_or_more_and_the_help_says_indexes_are_not_supported_yet(files: dict[str, Path]) -> None:
    """``jobs=0`` is a ValueError in Python's words; ``--jobs 0`` a usage error; the help names the FILE form."""
    with pytest.raises(ValueError, match="jobs=0"):
        h5ml.verify(files["none"], jobs=0)
    code, _, err = run_cli("verify", "--jobs", "0", str(files["none"]))
    assert code == 2 and "--jobs" in err
    code, out, _ = run_cli("verify", "--help")
    assert code == 0 and "sharded" in out and "not supported yet" in out


def test_memory_stays_bounded_on_a_feature_larger_than_the_budget(tmp_path: Path, figures: Any) -> None:
    """A 128 MiB feature is verified with a peak RSS growth far below its size (chunks are streamed, §10.4).

    The growth is the child's peak RSS (``VmHWM``, reset just before the run) less its RSS then;
    ``getrusage``'s ``ru_maxrss`` is not used: Linux keeps the parent's peak in it across ``exec``.
    """
    path = tmp_path / "big.h5"
    size = 128 << 20
    rows = np.arange(size // 4096, dtype=np.uint32)[:, None] * np.ones(1024, dtype=np.uint32)
    h5ml.write(path, {"train": {"x": rows}}, compression="gzip")
    del rows
    script = textwrap.dedent(
        f"""
        import h5ml
        def status(key):
            with open("/proc/self/status") as fh:
                return int(fh.read().split(key + ":")[1].split()[0]) * 1024
        assert h5ml.verify({str(tmp_path / "small.h5")!r}, jobs=2).ok  # modules, threads and pools warmed up
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")  # the peak RSS (VmHWM) starts again from the RSS now
        before = status("VmRSS")
        report = h5ml.verify({str(path)!r}, jobs=2)
        print(report.ok, status("VmHWM") - before)
        """
    )
    h5ml.write(tmp_path / "small.h5", {"train": {"x": np.arange(4096, dtype=np.uint32).reshape(4, 1024)}})
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True)
    ok, growth = done.stdout.split()
    assert ok == "True"
    figures.record("verify", "peak RSS growth verifying a 128 MiB gzip feature, 2 jobs (MiB)", int(growth) >> 20)
    assert int(growth) < 32 << 20


@pytest.mark.parametrize("encoding", ["ragged", "bytes"])
def test_a_ragged_feature_fed_one_dataset_at_a_time_gets_the_fingerprint_of_update_ragged(encoding: str) -> None:
    """§8.2: offsets, values and shapes fed separately, in uneven batches, give the one-call fingerprint."""
    from h5ml.errors import EncodingError
    from h5ml.model.fingerprint import FeatureHasher, fingerprint_feature

    rng = np.random.default_rng(3)
    lengths = rng.integers(0, 9, 500)
    offsets = np.concatenate(([0], np.cumsum(lengths)))
    if encoding == "ragged":
        values = rng.normal(size=int(offsets[-1])).astype(">f8")
        shapes = lengths[:, None].astype(np.int64)
        expected = fingerprint_feature("ragged", values, lengths=lengths, shapes=shapes)
        hasher = FeatureHasher("ragged", values.dtype)
    else:
        values = rng.integers(0, 255, int(offsets[-1]), dtype=np.uint8)
        shapes = None
        expected = fingerprint_feature("bytes", values, lengths=lengths)
        hasher = FeatureHasher("bytes")
    for start, stop in ((0, 1), (1, 77), (77, 501)):
        hasher.update_offsets(offsets[start:stop])
    for start, stop in ((0, 5), (5, 1000), (1000, len(values))):
        hasher.update_values(values[start:stop])
    if shapes is not None:
        hasher.update_shapes(shapes[:250])
        hasher.update_shapes(shapes[250:])
    hasher.check_complete()
    assert hasher.fingerprint() == expected
    short = FeatureHasher("bytes")
    short.update_offsets(offsets)
    short.update_values(np.zeros(3, np.uint8))
    with pytest.raises(EncodingError, match="offsets end at"):
        short.check_complete()
    with pytest.raises(EncodingError, match="not 0"):
        FeatureHasher("bytes").update_offsets(offsets[1:])


def test_an_empty_split_verifies(tmp_path: Path) -> None:
    """A split of 0 samples: every feature has no chunk and the fingerprint of no samples (§5.3, §8.2)."""
    path = tmp_path / "empty.h5"
    h5ml.write(path, {"train": {"x": np.zeros((0, 3), "f4"), "s": np.array([], dtype=object).astype(str)}})
    report = h5ml.verify(path, jobs=2)
    assert report.ok and [c.status for c in report.features] == ["ok", "ok"]


def test_a_file_written_without_checksums_verifies_with_none_checked(tmp_path: Path) -> None:
    """§8.4: checksum datasets are optional: a file written with ``checksums=False`` verifies, 0 checked by them."""
    path = tmp_path / "plain.h5"
    h5ml.write(path, _small(), checksums=False)
    with h5py.File(path, "r") as f:
        assert not [name for name in f["train"] if name.startswith("_crc32c.")]
    report = h5ml.verify(path, jobs=2)
    assert report.ok and not report.checksummed
    assert [c.checksum_status for c in report.features] == ["absent"] * 3
    wave = next(c for c in report.features if c.hdf5_path == "/train/wave")
    assert wave.unprotected == ("/train/wave/offsets", "/train/wave/values")
    code, out, err = run_cli("verify", str(path))
    assert (code, err) == (0, "")
    assert out.rstrip().endswith("; 0 features checked by chunk checksums")
    code, out, _ = run_cli("verify", "--json", str(path))
    document = json.loads(out)
    schemas.validator_for("verify").validate(document)
    assert code == 0 and document["checksums"] == {"compared": True, "features_checked": 0}


def _small() -> dict[str, Any]:
    rng = np.random.default_rng(5)
    return {
        "train": {
            "x": rng.normal(size=(3000, 8)).astype("f4"),
            "label": h5ml.Categorical(rng.integers(0, 3, 3000), ["a", "b", "c"]),
            "wave": [rng.normal(size=int(rng.integers(1, 9))).astype("f4") for _ in range(3000)],
        }
    }


@pytest.mark.parametrize(
    ("mutate", "problem"),
    [
        (lambda f: replace_dataset(f, "train/_crc32c.x", data=np.zeros(99, np.uint32)), "has 99 entries, but there"),
        (lambda f: replace_dataset(f, "train/_crc32c.x", data=np.zeros(1, np.int64)), "has dtype int64, not uint32"),
        (lambda f: (f.__delitem__("train/_crc32c.x"), f.create_group("train/_crc32c.x")), "is not a dataset"),
    ],
    ids=["entries", "dtype", "group"],
)
def test_a_malformed_checksum_dataset_is_named_and_the_feature_is_unverified(
    tmp_path: Path, mutate: Any, problem: str
) -> None:
    """§8.4-R1 (E163): a malformed checksum dataset is named with what is wrong; its feature is unverified, exit 2.

    The data itself is intact (its fingerprint agrees), but its chunks could not be checked: never "verified".
    """
    path = tmp_path / "malformed.h5"
    h5ml.write(path, _small())
    with h5py.File(path, "r+") as f:
        mutate(f)
    report = h5ml.verify(path, jobs=2)
    assert {p for p, s in _statuses(report).items() if s != "ok"} == {"/train/x"}
    (bad,) = report.unverified
    assert bad.expected == bad.actual and bad.expected is not None
    assert bad.checksum_status == "malformed" and bad.checksummed == ()
    ((where, what),) = bad.malformed
    assert where == "/train/_crc32c.x" and what.startswith(problem)
    assert bad.reason is not None and "checksum dataset /train/_crc32c.x " + problem in bad.reason
    assert len(report.checksummed) == 2  # the other features are still checked
    code, out, _ = run_cli("verify", str(path))
    assert code == 2
    line = out.splitlines()[0]
    assert line.startswith("UNVERIFIED train/x (/train/x): ") and "/train/_crc32c.x" in line and "E163" in line
    code, out, _ = run_cli("verify", "--json", str(path))
    document = json.loads(out)
    schemas.validator_for("verify").validate(document)
    entry = next(e for e in document["features"] if e["hdf5_path"] == "/train/x")
    assert entry["status"] == "unverified" and entry["checksums"]["malformed"][0]["dataset"] == "/train/_crc32c.x"
    # --no-checksums does not look at checksum datasets: the fingerprint alone agrees
    assert run_cli("verify", "--no-checksums", str(path))[0] == 0


def test_an_edited_checksum_entry_differs_though_the_data_agrees(tmp_path: Path) -> None:
    """§8.4-R2: an entry that no longer matches its chunk is DIFFERS (exit 1), and the line says the data agrees."""
    path = tmp_path / "entry.h5"
    h5ml.write(path, _small())
    with h5py.File(path, "r+") as f:
        sums = f["train/wave/_crc32c.values"]
        written = int(sums[0])
        sums[0] = written ^ 1
    report = h5ml.verify(path, jobs=1)
    (bad,) = report.differing
    assert bad.hdf5_path == "/train/wave" and bad.expected == bad.actual
    assert [(m.path, m.entry, m.expected, m.actual) for m in bad.mismatches] == [
        ("/train/wave/values", 0, written ^ 1, written)
    ]
    code, out, _ = run_cli("verify", str(path))
    assert code == 1
    assert out.splitlines()[0] == (
        f"DIFFERS train/wave (/train/wave): chunk 0 of /train/wave/values: CRC32C expected 0x{written ^ 1:08x}, "
        f"computed 0x{written:08x} (rows {bad.mismatches[0].rows[0]}..{bad.mismatches[0].rows[1]}); "
        f"fingerprint agrees ({bad.expected}): the checksum dataset may be what changed"
    )
    code, out, _ = run_cli("verify", "--json", str(path))
    document = json.loads(out)
    validator = schemas.validator_for("verify")
    validator.validate(document)
    entry = next(e for e in document["features"] if e["hdf5_path"] == "/train/wave")
    assert (entry["status"], entry["checksums"]["status"]) == ("differs", "differs")
    entry["status"] = "ok"  # the schema does not let a document call a feature with a damaged chunk ok
    assert not validator.is_valid(document)


def test_a_partly_protected_feature_and_no_checksums_are_reported(tmp_path: Path) -> None:
    """§8.4: a feature with checksums on some datasets only is "partial", naming the others; --no-checksums skips."""
    path = tmp_path / "partial.h5"
    h5ml.write(path, _small())
    with h5py.File(path, "r+") as f:
        del f["train/wave/_crc32c.offsets"]
    report = h5ml.verify(path, jobs=2)
    assert report.ok
    wave = next(c for c in report.features if c.hdf5_path == "/train/wave")
    assert (wave.checksum_status, wave.checksummed, wave.unprotected) == (
        "partial",
        ("/train/wave/values",),
        ("/train/wave/offsets",),
    )
    assert len(report.checksummed) == 3
    code, out, _ = run_cli("verify", "--json", "--no-checksums", str(path))
    document = json.loads(out)
    schemas.validator_for("verify").validate(document)
    assert code == 0 and document["checksums"] == {"compared": False, "features_checked": 0}
    assert [e["checksums"]["status"] for e in document["features"]] == ["skipped"] * 3
    assert h5ml.verify(path, checksums=False).checksummed == ()


def test_a_flipped_byte_of_a_contiguous_dataset_names_its_block(tmp_path: Path) -> None:
    """§8.4-R1, §8.4-R2: a contiguous dataset's entries are blocks of 2**20 bytes: the damaged one is named a block."""
    path = tmp_path / "contiguous.h5"
    h5ml.write(path, _small())
    rows = np.random.default_rng(9).normal(size=(3000, 200)).astype("f4")  # 2.4 MB: three blocks
    with h5py.File(path, "r+") as f:
        del f["train/_crc32c.x"]
        replace_dataset(f, "train/x", data=rows)  # contiguous (no chunks), with the feature's attributes
        f["train/x"].attrs["sample_shape"] = [200]
        f["train/x"].attrs["fingerprint"] = fingerprint_feature("dense", rows)
        offset = int(f["train/x"].id.get_offset())
    stored = path.read_bytes()[offset : offset + rows.nbytes]
    blocks = [stored[k : k + (1 << 20)] for k in range(0, rows.nbytes, 1 << 20)]
    assert len(blocks) == 3
    with h5py.File(path, "r+") as f:
        f["train"].create_dataset("_crc32c.x", data=np.array([crc32c.crc32c(b) for b in blocks], np.uint32))
        del f.attrs["fingerprint"]  # the file fingerprint changed with x's; not the subject here
    assert h5ml.verify(path, jobs=2).ok
    with open(path, "r+b") as fh:
        fh.seek(offset + (1 << 20) + 11)
        byte = fh.read(1)[0]
        fh.seek(offset + (1 << 20) + 11)
        fh.write(bytes([byte ^ 0x10]))
    report = h5ml.verify(path, jobs=2)
    (bad,) = report.differing
    (mismatch,) = bad.mismatches
    assert (bad.hdf5_path, mismatch.path, mismatch.entry, mismatch.expected) == (
        "/train/x",
        "/train/x",
        1,
        crc32c.crc32c(blocks[1]),
    )
    code, out, _ = run_cli("verify", str(path))
    assert code == 1
    assert out.splitlines()[0].startswith("DIFFERS train/x (/train/x): block 1 of /train/x: CRC32C expected ")


def _declared_but_unwritten(path: Path, shape: tuple[int, ...], chunks: tuple[int, ...] | None, rows: int) -> Path:
    """A valid file whose feature x is replaced by a dataset of ``shape`` of which only ``rows`` rows (column 0) are written."""
    h5ml.write(path, {"train": {"x": np.ones((4, *shape[1:]), np.uint8)}}, {"name": "h"}, checksums=False)
    with h5py.File(path, "r+") as f:
        group = f["train"]
        attrs = dict(group["x"].attrs)
        del group["x"]
        x = group.create_dataset("x", shape=shape, chunks=chunks, dtype=np.uint8)
        if rows:
            x[:rows, 0] = 1
        for key, value in attrs.items():
            if not key.startswith("stats"):
                x.attrs[key] = value
        group.attrs["num_samples"] = np.int64(shape[0])
    return path


@pytest.mark.parametrize(
    ("shape", "chunks", "rows", "words"),
    [
        ((1 << 40, 2), (1, 1), 4, "declares shape (1099511627776, 2)"),  # chunks that split rows (read by bands)
        ((1 << 40,), None, 0, "/train/x"),  # contiguous, never allocated
        ((4, 2), (1, 1), 4, "/train/x"),  # column 1 never written: fill values, small file
    ],
    ids=["huge-split-rows", "huge-contiguous", "small-fill-values"],
)
def test_data_declared_but_not_stored_is_unverified_at_once(
    tmp_path: Path, shape: tuple[int, ...], chunks: tuple[int, ...] | None, rows: int, words: str
) -> None:
    """SPEC §10.4-R1, §3.5.1: verify refuses a feature the reader refuses (never hashes fill values; no hour-long run).

    Before: the first two ran for more than 11 minutes (and ignored SIGTERM); the third said VERIFIED, exit 0.
    """
    path = _declared_but_unwritten(tmp_path / "lying.h5", shape, chunks, rows)
    report = h5ml.verify(path, jobs=2)
    (check,) = report.features
    assert check.status == "unverified" and check.actual is None, check
    assert (words in (check.reason or "") and "SPEC §10.4-R1" in (check.reason or "")) or "E146" in (check.reason or "")
    code, out, _ = run_cli("verify", str(path))
    assert code == 2 and "UNVERIFIED train/x" in out and "NOT VERIFIED" in out


def test_an_interrupt_stops_every_thread_at_its_next_rows(tmp_path: Path) -> None:
    """Ctrl-C or SIGTERM (a KeyboardInterrupt in the main thread) stops verify promptly, not after every feature."""
    import os
    import signal
    import threading

    path = tmp_path / "big.h5"
    rng = np.random.default_rng(7)
    x = rng.integers(0, 4, (8192, 4096), dtype=np.uint8)
    h5ml.write(path, {"train": {"x": x}}, {"name": "b"}, compression="gzip")  # inflating is slow enough to interrupt
    calls: list[int] = []
    interrupted = threading.Event()

    def progress(done: int, total: int) -> None:
        calls.append(done)
        if not interrupted.is_set():
            interrupted.set()
            os.kill(os.getpid(), signal.SIGINT)  # as Ctrl-C: wakes the main thread waiting for the features

    with pytest.raises(KeyboardInterrupt):
        h5ml.verify(path, jobs=2, progress=progress, checksums=False)
    with h5ml.open(path) as ds:
        chunks = ds["train"]["x"].chunk_rows
    total_chunks = 8192 // chunks
    assert total_chunks >= 16
    assert len(calls) < total_chunks // 2, (len(calls), total_chunks)  # stopped: in-flight chunks only
    assert not [t for t in threading.enumerate() if t.name.startswith("h5ml-verify")]
