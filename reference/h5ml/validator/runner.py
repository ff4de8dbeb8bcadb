"""The h5ml validator (SPEC.md §9): every rule of the specification, as issues.

Iteration is the primitive: :func:`iter_issues` opens one file and yields one
:class:`Issue` per broken rule (code, severity and clause from the registry in
:mod:`h5ml.spec.codes`, the HDF5 path of the object concerned, and a message saying
what is wrong, where and what to do). :func:`validate` collects them in a
:class:`FileReport`, optionally in a child process with a time limit (§10.3),
:func:`validate_each` yields the reports of many files checked in warm child
processes, and :func:`validate_many` collects those in a :class:`Report` whose JSON form follows
``schema/h5ml-report-1.0.schema.json`` (§9.3).

What a validation reads
-----------------------
By default (``deep=False``) the validator reads no sample data: only
attributes, link kinds, shapes, datatypes, storage layouts, chunk shapes and
filter pipelines, plus the ``class_names`` of categorical features (metadata,
needed for E134). ``deep=True`` also reads every sample, in batches, to check
offsets, codes, booleans, shapes and UTF-8 and to recompute fingerprints
(the codes marked ``deep`` in the registry).

Paths
-----
``Issue.path`` is the HDF5 path of the object concerned (``"/"`` for the file
and its root group). An issue about an attribute has the path of the object
that carries it and names the attribute in its message.

The validator never follows an external or soft link and never reads a
dataset with external raw storage or a virtual dataset: it reports them
(§3.6, §10.1). It finds splits and features by name: an object hard-linked
under several names (which §3.6 allows) is checked under each split and
feature name, whatever other names reach it.

Time limits and partial reports
-------------------------------
With a time limit (§10.3) the checks run in a child process that sends each
issue to the parent as soon as it is found, and runs every metadata check
before it reads any sample data. When the limit passes or the child dies,
the report keeps the issues found until then and ends with E101; the file
then counts as unreadable (``readable`` is False, as the report schema ties
``readable = false`` to E100/E101), and the E101 message says whether the
metadata checks had finished (so that their issues are complete) or not.

Repeated issues
---------------
:func:`validate` and :func:`validate_many` list at most
``max_issues_per_code`` issues of each code (default
:data:`DEFAULT_MAX_ISSUES_PER_CODE`, 100; 0 for no cap) and count the others
(``FileReport.omitted``), so that a file that breaks one rule 100,000 times
gives a report of bounded size; the verdict counts every issue (§9.3). In a
child process the cap is applied in the child: an issue past it is never sent,
only counted, and the counts reach the parent at least every 0.1 s, so that a
report stopped at the time limit keeps them too. :func:`iter_issues` yields
every issue.

Where the checks live
---------------------
This module holds the entry points; the reports are :mod:`h5ml.validator.report`. The checks themselves
are in :mod:`h5ml.validator.checks`, one module per part of the specification (the
file and its root attributes, links and storage, splits and features, each
encoding, chunks, sample data).
"""

from __future__ import annotations

import os
import queue
import stat
import time
from collections import Counter
from collections.abc import Generator, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, Final, Literal

from h5ml.errors import ChildDiedError, ValidationTimeoutError
from h5ml.model.remote import is_url
from h5ml.validator.checks import Issue
from h5ml.validator.report import DEFAULT_MAX_ISSUES_PER_CODE, FileReport, IssueCollector, Report, check_cap
from h5ml.validator.sandbox import WarmChild, stream_with_timeout

if TYPE_CHECKING:  # pragma: no cover - the checks import h5py: only where they run
    from h5ml.validator.checks import FileState

__all__ = [
    "AUTO",
    "BASE_TIMEOUT_S",
    "DEEP_BYTES_PER_S",
    "DEFAULT_MAX_ISSUES_PER_CODE",
    "METADATA_BYTES_PER_S",
    "FileReport",
    "Issue",
    "Report",
    "Timeout",
    "default_timeout",
    "is_index",
    "iter_issues",
    "validate",
    "validate_each",
    "validate_many",
]

#: ``timeout=AUTO``: a time limit per file from its size (:func:`default_timeout`).
AUTO: Final = "auto"
#: What a time limit may be: seconds, :data:`AUTO`, or None (no child process, no limit).
Timeout = float | Literal["auto"] | None
#: The fsspec options of the files at URLs (:mod:`h5ml.validator.checks.url`), or None.
Remote = dict[str, Any] | None
#: Seconds every file gets, whatever its size (starting the child interpreter and opening the file included).
BASE_TIMEOUT_S: Final = 60.0
#: Bytes of file per added second of a metadata validation (1 GB/s: the metadata grows slowly with the data).
METADATA_BYTES_PER_S: Final = 1_000_000_000
#: Bytes of file per added second of a deep validation (10 MB/s: reading, decompressing and hashing every
#: sample on a slow disk; a local SSD reads several times faster).
DEEP_BYTES_PER_S: Final = 10_000_000


def iter_issues(path: str | os.PathLike[str], *, deep: bool = False) -> Iterator[Issue]:
    """Yield every issue of one file, in this process (§9).

    The file is opened read-only with HDF5's default file locking, as
    :func:`h5ml.open` opens it (so a file this process has open can be
    checked), and without locking when another handle of this process holds
    it with other locking settings; a file another process has open for
    writing is E100 (not a finished file, §4.4). External and soft
    links are reported, never followed. An untrusted file can make the HDF5
    library loop (§10.3): use :func:`validate` with a ``timeout`` for those.

    Parameters
    ----------
    path
        The file to check.
    deep
        Also read every sample (offsets, codes, booleans, shapes, UTF-8,
        fingerprints: the registry's deep codes). Without it only metadata is
        read (attributes, shapes, datatypes, storage properties, class names).

    Yields
    ------
    Issue
        One per broken rule, in check order: the file (E100, E109), the root
        attributes (E102-E108, W202-W204), links (E110, E115), the storage
        profile (E111-E114, W205, W206, W208), then each split and feature;
        in a deep validation, then the data of each feature and the file
        fingerprint (E140-E145, E160).

    Raises
    ------
    Nothing on purpose: a file that cannot be read gives E100 or E101.
    """
    from h5ml.validator.checks import FileState, check_path  # the checks import h5py: only where they run

    yield from check_path(FileState(os.fspath(path), deep))


#: Seconds between two messages of a child that counts issues past the cap, so that a stop keeps the counts.
_COUNT_EVERY_S: Final = 0.1


def _check_stream(
    path: str, deep: bool, cap: int = DEFAULT_MAX_ISSUES_PER_CODE, remote: Remote = None
) -> Generator[tuple[Issue | dict[str, int] | None, str | None], None, str | None]:
    """Run every check of one file, yielding ``(item, format_version)`` as found (§9.3, §10.3).

    Top-level so that a child process can run it. ``item`` is an issue to
    list, None for the event that every metadata check is done, or a dict
    ``code -> number`` of issues found past the cap ``cap`` (0: none), which
    are counted here and never sent: their counts come at most every
    :data:`_COUNT_EVERY_S` seconds, before the end of the metadata checks and
    at the end. ``remote``: the fsspec options of a URL. Returns the file's version.
    """
    from h5ml.validator.checks import FileState, check_events  # the checks import h5py: only where they run

    state = _state(FileState, path, deep, remote)
    collector = IssueCollector(cap)
    pending: Counter[str] = Counter()
    sent = time.monotonic()
    for event in check_events(state):
        if isinstance(event, Issue) and collector.add(event):
            yield event, state.format_version
            continue
        if isinstance(event, Issue):
            pending[event.code] += 1
            if time.monotonic() - sent < _COUNT_EVERY_S:
                continue
        if pending:
            yield dict(pending), state.format_version
            pending.clear()
            sent = time.monotonic()
        if not isinstance(event, Issue):
            yield None, state.format_version
    if pending:
        yield dict(pending), state.format_version
    return state.format_version


def _stopped(cause: str, advice: str, deep: bool, metadata_done: bool, found: int) -> Issue:
    """The E101 that ends the report of a check that was stopped or whose child process died (SPEC §10.3-R1)."""
    if metadata_done and deep:
        progress = (
            f"the metadata checks had finished (the {found} issue(s) before this one include all of theirs), "
            "the checks of the sample data had not"
        )
    elif found:
        progress = f"the {found} issue(s) before this one were found before that, but the checks had not finished"
    else:
        progress = "no issue had been found before that, and the checks had not finished"
    return Issue.of("E101", "/", f"{cause}; {progress}: {advice}")


def default_timeout(path: str | os.PathLike[str], deep: bool = False) -> float:
    """The time limit :data:`AUTO` gives one file: :data:`BASE_TIMEOUT_S` plus a share of its size (§10.3).

    Parameters
    ----------
    path
        The file; a path that has no size (missing, a FIFO) gets the base limit.
    deep
        Whether every sample is read: 1 s more per :data:`DEEP_BYTES_PER_S`
        bytes (10 MB), else per :data:`METADATA_BYTES_PER_S` (1 GB).

    Returns
    -------
    float
        Seconds: 60 s for a small file; a 1 GB file gets 61 s, or 160 s deep.
    """
    try:
        st = os.stat(path)
    except OSError:
        return BASE_TIMEOUT_S
    size = st.st_size if stat.S_ISREG(st.st_mode) else 0
    return BASE_TIMEOUT_S + size / (DEEP_BYTES_PER_S if deep else METADATA_BYTES_PER_S)


def _remote(storage_options: Mapping[str, Any] | None) -> Remote:
    """The fsspec options as the child process gets them (a plain dict), or None."""
    return None if storage_options is None else dict(storage_options)


def _check_timeout(timeout: Timeout) -> None:
    if timeout == AUTO:
        return
    if timeout is not None and (isinstance(timeout, str) or timeout < 0):
        raise ValueError(f"timeout must be >= 0 seconds, {AUTO!r} or None, got {timeout!r}")


def _state(kind: type[FileState], path: str, deep: bool, remote: Remote) -> FileState:
    """A fresh :class:`~h5ml.validator.checks.FileState` (``kind``) of ``path``, with a URL's options."""
    return kind(path, deep, storage_options=remote)


def _validate(
    path: str,
    deep: bool,
    timeout: Timeout,
    isolated: bool,
    cap: int,
    child: WarmChild | None = None,
    remote: Remote = None,
) -> FileReport:
    if timeout == AUTO:
        timeout = default_timeout(path, deep)
    collector = IssueCollector(cap)
    if not isolated:
        from h5ml.validator.checks import FileState, check_path

        state = _state(FileState, path, deep, remote)
        for issue in check_path(state):
            collector.add(issue)
        return FileReport(path, tuple(collector.issues), state.format_version, deep, False, collector.omitted, cap)
    version: str | None = None
    metadata_done = timed_out = False
    if child is None:
        stream = stream_with_timeout(_check_stream, (path, deep, cap, remote), timeout)
    else:
        stream = child.stream(_check_stream, (path, deep, cap, remote), timeout)
    try:
        while True:
            item, version = next(stream)
            if item is None:
                metadata_done = True
            elif isinstance(item, Issue):
                collector.add(item)
            else:
                collector.count_omitted(item)
    except StopIteration as stop:
        version = stop.value
    except ValidationTimeoutError:
        timed_out = True
        cause = (
            f"the time limit was reached: validating {path} did not finish within {timeout} s and was stopped, "
            "which says nothing against the file (a large file or a slow disk takes longer)"
        )
        if metadata_done and deep:
            advice = "give a longer time limit, timeout=SECONDS (--timeout SECONDS), or validate it without deep checks"
        else:
            advice = (
                "give a longer time limit, timeout=SECONDS (--timeout SECONDS); if the file comes from a source "
                "you do not trust, keep the limit (a damaged file can make the HDF5 library loop)"
            )
        collector.issues.append(_stopped(cause, advice, deep, metadata_done, _found(collector)))
    except ChildDiedError as exc:
        cause = f"the HDF5 library crashed while reading {path} ({exc})"
        collector.issues.append(
            _stopped(cause, "the file is damaged: do not use it", deep, metadata_done, _found(collector))
        )
    return FileReport(path, tuple(collector.issues), version, deep, timed_out, collector.omitted, cap)


def _found(collector: IssueCollector) -> int:
    """The issues found so far, listed or counted."""
    return len(collector.issues) + sum(collector.omitted.values())


def is_index(path: str) -> bool:
    """Whether ``path`` names the index of a sharded dataset (:func:`h5ml.model.shard_index.is_index_path`, §12.1).

    Only a ``.json`` path or a folder can be one: for any other path, the index module (pydantic and the JSON
    Schemas, about a second to import on a loaded machine) is not imported.
    """
    if not (path.lower().endswith(".json") or (is_url(path) and path.endswith("/")) or os.path.isdir(path)):
        return False
    from h5ml.model.shard_index import is_index_path

    return is_index_path(path)


def validate(
    path: str | os.PathLike[str],
    *,
    deep: bool = False,
    timeout: Timeout = None,
    max_issues_per_code: int = DEFAULT_MAX_ISSUES_PER_CODE,
    jobs: int = 1,
    shallow_shards: bool = False,
    storage_options: Mapping[str, Any] | None = None,
) -> FileReport:
    """Validate one file, or a sharded dataset, and collect its issues (§9, §10.3, §12).

    Parameters
    ----------
    path
        The file to check; or the index of a sharded dataset (a ``.json`` file, or
        a folder holding ``index.json``), then validated by
        :func:`h5ml.validator.shards.validate_index`: the index, every shard and their agreement.
    deep
        Also read every sample (see :func:`iter_issues`).
    timeout
        None: check in this process. A number of seconds: check in a child
        process (:func:`h5ml.validator.sandbox.stream_with_timeout`), metadata first;
        when the limit passes or the child crashes, the report holds the
        issues found until then followed by E101, and ``readable`` is False
        (``timed_out`` True when the limit passed). :data:`AUTO`: the limit
        of :func:`default_timeout`, from the file's size and ``deep``.
    max_issues_per_code
        Issues of one code the report lists (default
        :data:`~h5ml.validator.report.DEFAULT_MAX_ISSUES_PER_CODE`, 100); the
        others are counted in ``FileReport.omitted``, and every count and the
        verdict include them (§9.3). 0 lists every issue.
    jobs
        For an index: shards validated at once, each job in its own child process. Files: 1.
    shallow_shards
        For an index: check only the index and each shard's metadata (no shard validated as a file,
        no sample data read, no fingerprint recomputed).
    storage_options
        For a file at a URL (``s3://bucket/ds.h5``, any fsspec URL), or an index at one (``s3://bucket/ds/``,
        ``.../index.json``: its shards too): the fsspec file system's options (credentials, endpoint), passed to
        the child processes as they are; None: its defaults (the environment).

    Returns
    -------
    FileReport
        The issues, in the order :func:`iter_issues` yields them, at most
        ``max_issues_per_code`` of each code (the E101 of a stop always listed).
        For an index, ``kind="index"`` and the shards' reports in ``shards``.

    Raises
    ------
    ValueError
        If ``timeout`` is negative, or a string other than :data:`AUTO`, or
        ``max_issues_per_code`` is not an integer >= 0, or ``jobs`` or
        ``shallow_shards`` is given for a path that is not an index.
    """
    _check_timeout(timeout)
    check_cap(max_issues_per_code)
    text = os.fspath(path)
    if is_index(text):
        from h5ml.validator.shards import validate_index  # it builds on this module

        return validate_index(
            text,
            deep=deep,
            timeout=timeout,
            jobs=jobs,
            max_issues_per_code=max_issues_per_code,
            shallow_shards=shallow_shards,
            storage_options=storage_options,
        )
    if jobs != 1 or shallow_shards:
        raise ValueError(
            f"jobs={jobs} and shallow_shards={shallow_shards} apply to the index of a sharded dataset (a .json file "
            f"or a folder holding index.json), and {text} is not one: leave them out for a file"
        )
    return _validate(text, deep, timeout, timeout is not None, max_issues_per_code, None, _remote(storage_options))


def validate_many(
    paths: Iterable[str | os.PathLike[str]],
    *,
    deep: bool = False,
    timeout: Timeout = None,
    jobs: int = 1,
    max_issues_per_code: int = DEFAULT_MAX_ISSUES_PER_CODE,
    storage_options: Mapping[str, Any] | None = None,
) -> Report:
    """Validate several files (§9.3).

    Parameters
    ----------
    paths
        The files to check.
    deep
        Also read every sample (see :func:`iter_issues`).
    timeout
        Time limit per file in seconds, :data:`AUTO` (from each file's size), or None (see :func:`validate`).
    jobs
        Files checked at once. With ``jobs > 1`` (or a ``timeout``) the files are
        checked in ``jobs`` child processes, file after file (with ``timeout``
        as each file's limit, possibly None; see :func:`validate_each`).
    max_issues_per_code
        Issues of one code listed per file; the others are counted (see :func:`validate`). 0 lists every issue.
    storage_options
        For files at URLs (see :func:`validate`).

    Returns
    -------
    Report
        One :class:`FileReport` per path, in the order given.

    Raises
    ------
    ValueError
        If ``jobs < 1``, or ``timeout`` is negative or a string other than :data:`AUTO`, or
        ``max_issues_per_code`` is not an integer >= 0.
    """
    each = validate_each(
        paths,
        deep=deep,
        timeout=timeout,
        jobs=jobs,
        max_issues_per_code=max_issues_per_code,
        storage_options=storage_options,
    )
    return Report(tuple(report for report, _ in each))


def validate_each(
    paths: Iterable[str | os.PathLike[str]],
    *,
    deep: bool = False,
    timeout: Timeout = None,
    jobs: int = 1,
    max_issues_per_code: int = DEFAULT_MAX_ISSUES_PER_CODE,
    storage_options: Mapping[str, Any] | None = None,
) -> Iterator[tuple[FileReport, float]]:
    """Validate several files, yielding each report, in the order given, as soon as it and those before it are done.

    With a time limit (or ``jobs > 1``) the files are checked in ``jobs`` warm
    child processes (:class:`~h5ml.validator.sandbox.WarmChild`), each
    checking file after file, so that the interpreter start and the imports
    are paid once per child, not once per file; a child that crashed or passed
    a file's limit is stopped, that file's report ends with E101 exactly as
    :func:`validate` gives it, and the next file gets a fresh child (§10.3).
    The reports are those :func:`validate` gives each file alone.

    Parameters
    ----------
    paths, deep, timeout, jobs, max_issues_per_code, storage_options
        As :func:`validate_many`.

    Yields
    ------
    (FileReport, float)
        A file's report and when its check started (``time.monotonic()``),
        from which a caller counts the file's time limit.

    Raises
    ------
    ValueError
        As :func:`validate_many`.
    """
    if jobs < 1:
        raise ValueError(f"jobs must be >= 1, got {jobs}")
    _check_timeout(timeout)
    check_cap(max_issues_per_code)
    items: Sequence[str] = [os.fspath(p) for p in paths]
    cap = max_issues_per_code
    remote = _remote(storage_options)
    if jobs == 1 and timeout is None:
        for path in items:
            start = time.monotonic()
            yield _validate(path, deep, None, False, cap, None, remote), start
        return
    children: queue.SimpleQueue[WarmChild] = queue.SimpleQueue()
    made: list[WarmChild] = []
    for _ in range(min(jobs, max(1, len(items)))):
        made.append(WarmChild())
        children.put(made[-1])

    def check(path: str) -> tuple[FileReport, float]:
        child = children.get()  # one is free: as many children as threads
        try:
            start = time.monotonic()
            return _validate(path, deep, timeout, True, cap, child, remote), start
        finally:
            children.put(child)

    try:
        if jobs == 1:
            yield from (check(path) for path in items)
        else:
            with ThreadPoolExecutor(max_workers=jobs) as pool:
                yield from pool.map(check, items)
    finally:
        for child in made:
            child.close()
