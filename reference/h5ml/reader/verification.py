"""``h5ml.verify``: recompute every fingerprint of a file from its data, in parallel, in bounded memory (§8).

:func:`verify` opens the file with :func:`h5ml.open`, so it refuses what the
reader refuses (not an h5ml file, an incomplete one, external links, external
storage, virtual datasets, a required filter this build cannot decode: §3.5,
§3.6, §10.1), then feeds each feature's datasets, chunk by chunk and in file
order, to a :class:`~h5ml.model.fingerprint.FeatureHasher` (§8.2) and
compares the result with the stored ``fingerprint`` attribute (§8.1); last,
it combines the features' fingerprints into the file's (§8.3).

Parallel: features are hashed in ``jobs`` threads at once, and the chunks of
each are read and decoded ahead in another ``jobs`` threads
(:class:`~h5ml.reader.chunk_stream.RowStream`): SHA-256 (``hashlib``),
inflating (zlib) and un-shuffling (numpy) release Python's lock. Every
hasher takes its feature's content in file order, so the fingerprints do not
depend on ``jobs`` (byte-identical to the serial computation of the writer and
the deep validator). Memory: at most ``2 * jobs + 2`` decoded chunks (and one
batch of a dataset that is not chunked per feature thread, and one stored chunk
or block per feature thread in the checksum step) are held at once, however
large the features are.

Chunk checksums (§8.4): unless ``checksums=False``, each feature thread
first compares the CRC32C of every stored chunk (or block) of the feature's
datasets with its checksum dataset, through
:func:`h5ml.model.checksums.verify_checksums` (the one place that compares
them; stored bytes are read with ``os.pread``, outside Python's lock), and
then hashes the feature: a chunk that no longer inflates still has its
checksum compared. A mismatch makes the feature ``differs``; a malformed
checksum dataset (E163) ``unverified``; a feature without checksum datasets
(``checksums=False`` on write, a 1.0 file) is not an error. The comparison is
per feature, so it does not depend on ``jobs``.

Other per-chunk checks: ``check_chunk`` is called with the stored bytes of every
chunk (:class:`~h5ml.reader.chunk_stream.StoredChunk`) before it is decoded;
a per-chunk checksum is one function passed there. A check that raises an
:class:`h5ml.H5MLError` makes that feature unverified, with the message.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import h5py
import numpy as np

from h5ml.errors import EncodingError, H5MLError
from h5ml.model.booleans import bool_enum_base
from h5ml.model.checksums import ChecksumMismatch, protected_name, verify_checksums
from h5ml.model.failures import LIBRARY_ERRORS, damaged_file, is_library_failure, validate_advice
from h5ml.model.fingerprint import FeatureHasher, file_fingerprint
from h5ml.reader.chunk_stream import ChunkCheck, RowStream, chunk_slots
from h5ml.reader.dataset import Dataset
from h5ml.reader.feature import Feature
from h5ml.reader.opening import open_file as open_dataset
from h5ml.reader.unwritten import refuse_unwritten
from h5ml.reader.verify_report import FeatureCheck, VerifyReport

__all__ = ["Progress", "verify"]

#: ``progress(done, total)``: stored bytes verified so far and in all; called from worker threads, one at a time.
Progress = Callable[[int, int], None]

#: The datasets of each encoding, in the order of its fingerprint's components (§8.2).
_MEMBERS = {
    "dense": ("",),
    "string": ("",),
    "categorical": ("codes",),
    "ragged": ("offsets", "values", "shapes"),
    "bytes": ("offsets", "values"),
}


class _Run:
    """What the features of one verification share: the file, the chunk pool and slots, the progress count."""

    def __init__(
        self,
        ds: Dataset,
        jobs: int,
        progress: Progress | None,
        check_chunk: ChunkCheck | None,
        total: int,
        checksums: bool,
    ) -> None:
        self.ds = ds
        self.checksums = checksums
        self.pool = ThreadPoolExecutor(jobs, thread_name_prefix="h5ml-verify-chunk")
        self.slots = chunk_slots(jobs)
        self.check_chunk = check_chunk
        self._progress = progress
        self._lock = threading.Lock()
        self._done = 0
        self.total = total
        #: Set when the caller was interrupted (Ctrl-C, SIGTERM): every feature thread stops at its next rows.
        self.cancelled = threading.Event()

    def advance(self, nbytes: int) -> None:
        with self._lock:
            self._done += nbytes
            if self._progress is not None:
                self._progress(min(self._done, self.total), self.total)

    def rows(self, dset: h5py.Dataset) -> Iterator[np.ndarray]:
        base = bool_enum_base(dset.id.get_type())  # the boolean enumeration: its raw integers are hashed
        stream = RowStream(
            dset, self.ds.path, self.pool, self.slots, check_chunk=self.check_chunk, on_bytes=self.advance, as_type=base
        )
        for rows in stream:
            if self.cancelled.is_set():
                raise KeyboardInterrupt("verification interrupted")
            yield rows.view(np.uint8) if base is not None else rows


def _members(ds: Dataset, feature: Feature) -> dict[str, h5py.Dataset]:
    """The feature's HDF5 datasets by member name ("" for a dense or string feature's own dataset)."""
    found = {}
    for member in _MEMBERS[feature.encoding]:
        path = f"{feature.hdf5_path}/{member}" if member else feature.hdf5_path
        if member == "shapes" and member not in ds.h5_node(feature.hdf5_path):
            continue
        found[member] = ds.h5_node(path)
    return found


def _hasher(feature: Feature) -> FeatureHasher:
    """A hasher for the feature's header (§8.2): its values' dtype (bool for booleans), sample shape, class names."""
    if feature.encoding in ("dense", "ragged"):
        shape = tuple(int(d) for d in feature.sample_shape if d is not None) if feature.encoding == "dense" else ()
        return FeatureHasher(feature.encoding, feature.dtype, shape)
    return FeatureHasher(feature.encoding, class_names=feature.class_names)


def _compute(run: _Run, feature: Feature, members: dict[str, h5py.Dataset]) -> str:
    """The fingerprint of one feature's data, fed one dataset at a time in file order (§8.2)."""
    hasher = _hasher(feature)
    for dset in members.values():
        # SPEC §10.4-R1, §3.5.1: data declared but not stored is refused before any row is hashed, as the reader
        # refuses it; fill values are never fingerprinted, and a lying extent never makes verify run for hours
        refuse_unwritten(dset, run.ds.path, dset.name)
    for member, dset in members.items():
        for rows in run.rows(dset):
            if feature.encoding == "dense":
                hasher.update_dense(rows)
            elif feature.encoding == "string":
                hasher.update_strings(rows.tolist())
            elif feature.encoding == "categorical":
                hasher.update_codes(rows)
            elif member == "offsets":
                hasher.update_offsets(rows)
            elif member == "values":
                hasher.update_values(rows)
            else:
                hasher.update_shapes(rows)
    if feature.encoding in ("ragged", "bytes"):
        hasher.check_complete()
    return hasher.fingerprint()


@dataclass
class _Checksums:
    """What the checksum step found for one feature (§8.4): see :class:`~h5ml.reader.verify_report.FeatureCheck`."""

    step: str = "skipped"
    checksummed: tuple[str, ...] = ()
    unprotected: tuple[str, ...] = ()
    mismatches: tuple[ChecksumMismatch, ...] = ()
    malformed: tuple[tuple[str, str], ...] = ()
    contiguous: tuple[str, ...] = ()
    problem: str | None = None  # why the feature is unverified by this step, in words


def _protected_path(checksum_path: str) -> str:
    """The HDF5 path of the dataset that the checksum dataset at ``checksum_path`` protects (§8.4)."""
    parent, member = checksum_path.rsplit("/", 1)
    return f"{parent}/{protected_name(member)}"


def _compare_checksums(run: _Run, members: dict[str, h5py.Dataset]) -> _Checksums:
    """Compare every chunk checksum of the feature's datasets with their stored bytes (§8.4-R2, E162, E163)."""
    datasets = list(members.values())
    try:
        mismatches, unprotected, malformed = verify_checksums(run.ds.h5file, datasets=datasets)
    except LIBRARY_ERRORS as exc:  # OSError: a chunk lies beyond the end of the file
        if not is_library_failure(exc):
            raise
        where = ", ".join(str(d.name) for d in datasets)
        error = damaged_file(run.ds.path, where, "reading the stored chunks to compare their checksums", exc)
        return _Checksums(step="unchecked", problem=error.message)
    skipped = set(unprotected) | {_protected_path(path) for path, _ in malformed}
    problem: str | None = None
    if malformed:
        problem = "; ".join(
            f"{run.ds.path}: checksum dataset {path} {what}: its chunks were not checked (E163, §8.4-R1); "
            f"{validate_advice(run.ds.path)}"
            for path, what in malformed
        )
    checked = [d for d in datasets if str(d.name) not in skipped]
    return _Checksums(
        step="done",
        checksummed=tuple(str(d.name) for d in checked),
        contiguous=tuple(str(d.name) for d in checked if d.chunks is None),
        unprotected=tuple(unprotected),
        mismatches=tuple(mismatches),
        malformed=tuple(malformed),
        problem=problem,
    )


def _check_feature(run: _Run, split: str, feature: Feature) -> FeatureCheck:
    """Verify one feature; a feature whose data cannot be read is unverified, with the reader's message."""
    expected: str | None = None
    actual: str | None = None
    reason: str | None = None
    stored = 0
    sums = _Checksums()
    try:
        expected = feature.fingerprint
        members = _members(run.ds, feature)
        stored = sum(int(d.id.get_storage_size()) for d in members.values())
        if run.checksums:
            sums = _compare_checksums(run, members)
        if expected is None:
            reason = "no fingerprint stored (§8.1): the data cannot be compared with anything"
            run.advance(stored)
        else:
            actual = _compute(run, feature, members)
    except EncodingError as exc:
        reason = f"{run.ds.path}: {feature.hdf5_path}: {exc.message}; {validate_advice(run.ds.path)}"
    except H5MLError as exc:
        reason = exc.message
    except LIBRARY_ERRORS as exc:
        if not is_library_failure(exc):
            raise
        reason = damaged_file(run.ds.path, feature.hdf5_path, "reading this feature", exc).message
    if run.checksums and sums.step == "skipped":  # the feature's datasets could not be opened
        sums = _Checksums(step="unchecked")
    reason = "; ".join(r for r in (reason, sums.problem) if r) or None
    return FeatureCheck(
        split,
        feature.name,
        feature.hdf5_path,
        feature.encoding,
        expected,
        actual,
        reason,
        stored,
        checksummed=sums.checksummed,
        unprotected=sums.unprotected,
        mismatches=sums.mismatches,
        malformed=sums.malformed,
        contiguous=sums.contiguous,
        checksum_step=sums.step,
    )


def _storage(ds: Dataset, feature: Feature) -> int:
    """The stored bytes of a feature's datasets; 0 when they cannot be opened (:func:`_check_feature` says why)."""
    try:
        return sum(int(d.id.get_storage_size()) for d in _members(ds, feature).values())
    except (H5MLError, *LIBRARY_ERRORS):
        return 0


def verify(
    path: str | os.PathLike[str],
    jobs: int | None = None,
    progress: Progress | None = None,
    *,
    check_chunk: ChunkCheck | None = None,
    checksums: bool = True,
) -> VerifyReport:
    """Recompute every fingerprint of an h5ml file from its data and compare it with the stored one (§8).

    Parameters
    ----------
    path
        An h5ml file (a sharded index is not supported yet).
    jobs
        Threads that hash features and, as many again, that read and decode
        chunks; default: the number of CPUs (``os.cpu_count()``). The result
        does not depend on it.
    progress
        Called as ``progress(done, total)`` with the stored bytes verified so
        far and in all, from worker threads, one call at a time.
    check_chunk
        Called with every chunk's stored bytes
        (:class:`~h5ml.reader.chunk_stream.StoredChunk`) before it is decoded:
        the step for a per-chunk checksum; it raises an
        :class:`h5ml.H5MLError` naming the chunk when the chunk is wrong.
    checksums
        Compare every chunk checksum (SPEC §8.4) of every feature dataset
        with its stored bytes (default); False skips the step. A feature with
        no checksum dataset is not an error (``checksum_status`` ``"absent"``).

    Returns
    -------
    VerifyReport
        Every feature's expected and computed fingerprint and the file's;
        ``report.ok`` is True when all agree, ``report.differing`` names the
        features whose data changed (a fingerprint or a chunk checksum
        differs: each mismatching chunk is in ``FeatureCheck.mismatches``),
        ``report.unverified`` those that could not be compared (no stored
        fingerprint, unreadable data, a malformed checksum dataset);
        ``report.checksummed`` the features checked by chunk checksums.

    Raises
    ------
    ValueError
        If ``jobs`` is less than 1.
    H5MLError
        If the file is not an h5ml file or the reader refuses it (incomplete,
        external links or storage, virtual datasets, a required filter that
        cannot be decoded: §3.5, §3.6, §10.1); the message names the file.
    OSError
        If the file cannot be opened.
    """
    if jobs is None:
        jobs = os.cpu_count() or 1
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise ValueError(f"jobs={jobs!r}: give a whole number of threads, 1 or more (or None for the CPU count)")
    began = time.perf_counter()
    with open_dataset(path) as ds:
        file_expected = ds.fingerprint
        work: list[tuple[str, Feature]] = []
        refused: dict[tuple[str, str], FeatureCheck] = {}
        order: list[tuple[str, str]] = []  # every feature, by split then in the file's order
        for split_name, split in ((name, ds[name]) for name in ds.every_split()):
            work.extend((split_name, f) for f in split.features.values())
            order.extend((split_name, name) for name in split.features)
            for name, error in split.unreadable.items():
                where = f"/{split_name}/{name}"
                step = "unchecked" if checksums else "skipped"
                refused[split_name, name] = FeatureCheck(
                    split_name, name, where, "", None, None, error.message, 0, checksum_step=step
                )
                order.append((split_name, name))
        run = _Run(ds, jobs, progress, check_chunk, sum(_storage(ds, f) for _, f in work), checksums)
        try:
            with ThreadPoolExecutor(jobs, thread_name_prefix="h5ml-verify-feature") as features:
                try:
                    checks = {
                        (c.split, c.feature): c for c in features.map(lambda item: _check_feature(run, *item), work)
                    }
                except BaseException:  # an interrupt: the threads stop at their next rows, so the pool can close
                    run.cancelled.set()
                    raise
        finally:
            run.pool.shutdown(wait=True, cancel_futures=True)
    every = tuple({**checks, **refused}[key] for key in order)
    computed = {(c.split, c.feature): c.actual for c in every if c.actual is not None}
    # SPEC §8.3: the file fingerprint combines every feature's; without one of them it is not computed (no guess)
    file_actual = file_fingerprint(computed) if len(computed) == len(every) else None
    seconds = time.perf_counter() - began
    return VerifyReport(str(path), every, file_expected, file_actual, jobs, seconds, checksums)
