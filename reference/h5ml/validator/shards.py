"""Validation of a sharded dataset: its index, every shard it lists, and their agreement (SPEC §12.1-§12.3, §9).

:func:`validate_index` reads the index (``index.json``, or the dataset's
folder that holds it), checks it on its own with
:func:`h5ml.model.shard_index.parse_index` (the JSON Schema, the sample
counts, paths listed twice, the index fingerprint), then checks every shard
it lists: that it exists (E171), that it is a valid h5ml file, validated
exactly as a file given alone (its report is kept under the index's, E174
when it has errors), that its fingerprint and size are the ones the index
records (E172), and that it agrees with the index (E173: its split, sample
count, features and dataset card, through
:func:`h5ml.model.shard_files.disagreements`, the one comparison of a shard
with its index, which the sharded reader makes too). An HDF5 file in a
split's folder that the index does not list is W210; a sharded writer's
staging folder left in the dataset's folder (a write killed before it
finished, :mod:`h5ml.model.staging_names`) is W211. The index is read
strictly: an object with a duplicate member name is E170 (§12.1-R8).

Where the issues go
-------------------
The index's :class:`~h5ml.validator.report.FileReport` (``kind="index"``)
holds the issues of the index and of each shard's place in it; its path is the
JSON pointer of the index member concerned (``/splits/train/shards/1``,
``/`` for the document as a whole), and the message names the shard's path.
Each shard validated as a file has its own report (``kind="shard"``) in
``FileReport.shards``, with the HDF5 paths of its issues.

Shallow shards
--------------
``shallow_shards=True`` checks the index and reads each shard's metadata only
(:func:`~h5ml.model.shard_files.describe_shard`: root and feature attributes,
shapes, dtypes, class names): no sample data is read, no fingerprint is
recomputed, and the shards are not validated as files (their reports are not
made). A shard whose data was damaged after its fingerprint was recorded then
passes; a full validation with ``deep=True`` finds it.

Isolation
---------
The shards are validated as :func:`h5ml.validator.runner.validate_each`
validates files: with a ``timeout`` or ``jobs > 1`` in warm child processes,
each with its time limit (§10.3). :func:`describe_shard` runs in this
process, after the shard's validation has read the same metadata in its child
without failing (a shard that could not be read is E174 and is not described).
In a shallow validation nothing has read the shard first: give shards from a
source you do not trust a full validation.

At a URL
--------
An index at a URL (``s3://bucket/ds/index.json``, or the prefix
``s3://bucket/ds/``) is validated as a local one, with ``storage_options``
(credentials, endpoint) for every read: the index is read through
:func:`h5ml.model.remote.read_remote_text`, each shard is validated as a
file at its URL (:mod:`h5ml.validator.checks.url`, through the one remote
opener :func:`h5ml.model.remote.open_remote`, in the child processes too)
and described through the same opener. Which shards exist (E171) and which
HDF5 objects no index lists (W210) come from one listing of the dataset's
prefix (:func:`h5ml.model.remote.list_prefix`), not from one request per
shard. The symbolic-link checks of a local folder (§12.1-R2, -R3) have no
object-store counterpart: a key is never a link, and the schema already
refused ``..``, absolute paths and schemes in shard paths.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Final

from h5ml.errors import H5MLError, ShardIndexError
from h5ml.model.failures import LIBRARY_ERRORS, is_library_failure
from h5ml.model.remote import is_url, list_prefix, open_remote, read_remote_text
from h5ml.model.shard_files import ShardDescription, describe_shard, disagreements
from h5ml.model.shard_index import (
    INDEX_FILE_NAME,
    INDEX_FORMAT,
    ShardEntry,
    ShardIndex,
    parse_index,
    parse_index_text,
    shard_location,
)
from h5ml.model.staging_names import parse_staging_name
from h5ml.spec.constants import FORMAT_VERSION, parse_version
from h5ml.validator.checks import Issue
from h5ml.validator.report import DEFAULT_MAX_ISSUES_PER_CODE, FileReport, IssueCollector, check_cap
from h5ml.validator.runner import Timeout, validate_each

__all__ = ["SHARD_SUFFIXES", "listed_shards", "validate_index"]

#: JSON's names of the kinds of value Python's json reader gives (a document that is no object).
_JSON_KINDS: Final = {list: "array", str: "string", int: "number", float: "number", bool: "boolean", type(None): "null"}
#: File names that W210 looks for in a split's folder: the suffixes of HDF5 files (case-insensitive).
SHARD_SUFFIXES: Final = (".h5", ".hdf5", ".he5")
#: The first version of SPEC.md that defines sharded datasets (§12 is new in 1.2).
_FIRST_VERSION: Final = (1, 2)
#: The wording of :func:`h5ml.model.shard_files.disagreements` for a changed shard (E172, not E173).
_CHANGED: Final = re.compile(r"^(has fingerprint |is [0-9]+ bytes, the index says [0-9]+$)")


@dataclass(frozen=True)
class _Listed:
    """One shard as the index lists it: its split, its index entry, its JSON pointer and its location."""

    split: str
    entry: ShardEntry
    pointer: str
    location: str


def _index_file(path: str) -> str:
    """The index file of ``path``: itself, or the ``index.json`` of a folder, or of a URL prefix ending in ``/`` (§12.1)."""
    if is_url(path):
        return path + INDEX_FILE_NAME if path.endswith("/") else path
    return os.path.join(path, INDEX_FILE_NAME) if os.path.isdir(path) else path


def _read(where: str, storage_options: Mapping[str, Any] | None) -> tuple[Any, Issue | None]:
    """The parsed JSON document of the index, or the issue that says why there is none (E100, E170)."""
    try:
        text = read_remote_text(where, storage_options) if is_url(where) else Path(where).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError, H5MLError) as exc:
        if isinstance(exc, UnicodeDecodeError):
            return None, Issue.of("E170", "/", f"{where} is not UTF-8 text ({exc}): an index is a JSON document")
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        return None, Issue.of(
            "E100",
            "/",
            f"cannot read the shard index {where} ({why}): give the index.json of a sharded "
            "h5ml dataset, or the folder (URL prefix) that holds it",
        )
    try:
        # SPEC §12.1-R8: an object with a duplicate member name makes the index invalid (E170)
        return parse_index_text(text, where), None
    except ShardIndexError as exc:
        return None, Issue.of("E170", "/", f"{exc} (§12.1)")


def _version_issue(where: str, version: str) -> Issue | None:
    """E170 for an index of another MAJOR or of a version before sharded datasets existed (§12.1, §1.3)."""
    major, minor = parse_version(version)  # the schema checked its form
    if major != FORMAT_VERSION[0]:
        return Issue.of(
            "E170",
            "/",
            f"{where} declares format_version {version}; this validator implements {FORMAT_VERSION[0]}.x: "
            "use a validator of that version (the shards were not checked)",
        )
    if (major, minor) < _FIRST_VERSION:
        return Issue.of(
            "E170",
            "/",
            f"{where} declares format_version {version}, but sharded datasets are defined from 1.2 on (§12): "
            'write "1.2" or later (the shards were not checked)',
        )
    return None


def _listed(index: ShardIndex, where: str) -> list[_Listed]:
    """Every shard of the index, splits in code-point order of their names, each split's shards in order."""
    return [
        _Listed(name, shard, f"/splits/{name}/shards/{position}", shard_location(where, shard.path))
        for name in sorted(index.splits)
        for position, shard in enumerate(index.splits[name].shards)
    ]


def _escapes(folder: str, location: str) -> bool:
    """Whether ``location`` resolves (through symbolic links) outside ``folder`` (§12.1, §10.1)."""
    root = os.path.realpath(folder)
    return os.path.commonpath([root, os.path.realpath(location)]) != root


def _agreement(index: ShardIndex, shard: _Listed, found: ShardDescription) -> Iterator[Issue]:
    """E172 and E173 for a shard that is not what its index says (§12.1-R6, §12.2)."""
    problems = disagreements(shard.split, index.splits[shard.split], shard.entry, found, index.metadata)
    changed = [p for p in problems if _CHANGED.match(p)]
    others = [p for p in problems if not _CHANGED.match(p)]
    if changed:
        # SPEC §12.1-R6: an entry's fingerprint and size are those of the shard file it names
        yield Issue.of(
            "E172",
            shard.pointer,
            f"shard {shard.entry.path} " + "; ".join(changed) + ": it was changed or replaced after the index "
            "was written; restore it, or write the dataset again",
        )
    if others:
        # SPEC §12.2-R1, §12.2-R2: every shard has the index's features and the index's card
        yield Issue.of(
            "E173",
            shard.pointer,
            f"shard {shard.entry.path} disagrees with the index: " + "; ".join(others) + "; every shard of a "
            "dataset must hold what its index says: write the shard again, or the index from its shards",
        )


def _describe(location: str, storage_options: Mapping[str, Any] | None) -> ShardDescription:
    """:func:`describe_shard` of a local shard, or of one at a URL opened through the one remote opener."""
    if not is_url(location):
        return describe_shard(location)
    import h5py  # only here: the validator's index path imports no HDF5 before it reads a shard

    remote = open_remote(location, storage_options)
    try:
        with h5py.File(remote, "r") as f:
            return describe_shard(location, f)
    finally:
        remote.close()


def _described(
    shard: _Listed, storage_options: Mapping[str, Any] | None = None
) -> tuple[ShardDescription | None, Issue | None]:
    """The shard's description for its index, or the E174 that says why it has none."""
    try:
        return _describe(shard.location, storage_options), None
    except ShardIndexError as exc:
        why = str(exc)
    except LIBRARY_ERRORS as exc:
        if not is_library_failure(exc):
            raise  # a defect of ours is never reported as a bad shard
        why = f"the HDF5 library cannot read it: {exc}"
    except (OSError, H5MLError) as exc:  # a URL: the store refused or failed (model.remote says what, where)
        why = str(exc)
    # SPEC §12.1-R5: every shard is a complete h5ml file holding exactly the one split it is listed under
    return None, Issue.of(
        "E174", shard.pointer, f"shard {shard.entry.path} is not a usable shard ({why}); validate it alone for details"
    )


def _invalid(shard: _Listed, report: FileReport) -> Issue:
    """E174 for a shard whose own validation found errors (§12.1-R5)."""
    errors = sorted({code for code, n in report.totals.items() if code.startswith("E") and n})
    state = "cannot be read" if not report.readable else "is not a valid h5ml file"
    return Issue.of(
        "E174",
        shard.pointer,
        f"shard {shard.entry.path} {state}: {report.counts['error']} error(s) ({', '.join(errors)}); its own "
        f"report ({shard.location}) lists them: write the shard again",
    )


def _extra(index: ShardIndex, folder: str, listed: list[_Listed]) -> Iterator[Issue]:
    """W210 for each HDF5 file in a split's folder that the index does not list (§12.1-S1)."""
    known = {os.path.realpath(s.location) for s in listed}
    for name in sorted(index.splits):
        roots = {os.path.join(folder, name)} | {
            os.path.dirname(s.location) for s in listed if s.split == name and os.path.dirname(s.location) != folder
        }
        found: set[str] = set()
        for root in sorted(roots):
            for parent, dirs, files in os.walk(root):
                dirs.sort()
                found.update(os.path.join(parent, f) for f in files if f.lower().endswith(SHARD_SUFFIXES))
        for path in sorted(found):
            if os.path.realpath(path) not in known:
                yield _unlisted(name, os.path.relpath(path, folder).replace(os.sep, "/"))


def _missing(shard: _Listed) -> Issue:
    """E171 for a listed shard that is not there (§12.1-R4)."""
    return Issue.of(
        "E171",
        shard.pointer,
        f"shard {shard.entry.path} of split {shard.split!r} is missing: there is no file "
        f"{shard.location}; restore it, or write the dataset again",
    )


def _extra_at_url(index: ShardIndex, listed: list[_Listed], stored: set[str]) -> Iterator[Issue]:
    """W210 at a URL: each HDF5 object under a split's prefix that the index does not list (§12.1-S1).

    ``stored`` is the listing of the dataset's prefix (:func:`list_prefix`), relative paths; the same
    folders are searched as in a local folder: ``<split>/`` and the folder of each listed shard of the split.
    """
    known = {s.entry.path for s in listed}
    for name in sorted(index.splits):
        roots = {name + "/"} | {
            s.entry.path.rsplit("/", 1)[0] + "/" for s in listed if s.split == name and "/" in s.entry.path
        }
        for relative in sorted(stored):
            if (
                relative.lower().endswith(SHARD_SUFFIXES)
                and relative not in known
                and relative.startswith(tuple(roots))
            ):
                yield _unlisted(name, relative)


def _staging_left(folder: str, stored: set[str] | None) -> Iterator[Issue]:
    """W211 for each staging folder of a sharded writer in the dataset's folder (``stored``: a URL's listing)."""
    if stored is None:
        try:
            names = sorted(e.name for e in os.scandir(folder) if e.is_dir(follow_symlinks=False))
        except OSError:
            return  # a folder that cannot be listed: its shards were reported one by one
    else:
        names = sorted({relative.split("/", 1)[0] for relative in stored if "/" in relative})
    for name in names:
        staged = parse_staging_name(name)
        if staged is None:
            continue
        files = sum(len(f) for _, _, f in os.walk(os.path.join(folder, name))) if stored is None else None
        held = "" if files is None else f", holding {files} file(s)"
        yield Issue.of(
            "W211",
            "/",
            f"{name}/ in the dataset's folder {folder} is the staging folder of a sharded writer (process "
            f"{staged.pid}){held}: a write that did not finish, which no index lists; remove it with "
            f"`h5ml temporaries {folder} --clean` once its writer is gone, or delete it",
        )


def _unlisted(name: str, relative: str) -> Issue:
    """W210 for the file ``relative`` (to the dataset's folder) in the folder of split ``name``."""
    return Issue.of(
        "W210",
        f"/splits/{name}",
        f"{relative} is in the folder of split {name!r} but the index does not list it: a shard left "
        "by a writer that did not finish, or one the index lost; list it in the index or remove it",
    )


def listed_shards(path: str | os.PathLike[str], storage_options: Mapping[str, Any] | None = None) -> list[str]:
    """Where the shards an index lists are (the paths or URLs :func:`validate_index` validates them at), in index order.

    For a caller that must know, before validating, which files an index covers (``h5ml validate INDEX SHARD``
    checks ``SHARD`` once, with its index). Nothing is validated, and nothing is said of an index that cannot be
    read or is not valid: its validation says why.

    Parameters
    ----------
    path
        The index file, or the dataset's folder (URL prefix) that holds ``index.json``.
    storage_options
        For an index at a URL: the fsspec file system's options; ignored for a local path.

    Returns
    -------
    list of str
        Each listed shard's location (local: an absolute path); empty when the index cannot be read or fails
        its own checks (E100, E170), whose shards :func:`validate_index` does not validate.
    """
    given = os.fspath(path)
    where = _index_file(given)
    document, problem = _read(where, dict(storage_options or {}) if is_url(given) else None)
    if problem is not None:
        return []
    try:
        index = parse_index(document, where)
    except ShardIndexError:
        return []
    return [shard.location for shard in _listed(index, where)]


def validate_index(
    path: str | os.PathLike[str],
    *,
    deep: bool = False,
    timeout: Timeout = None,
    jobs: int = 1,
    max_issues_per_code: int = DEFAULT_MAX_ISSUES_PER_CODE,
    shallow_shards: bool = False,
    storage_options: Mapping[str, Any] | None = None,
) -> FileReport:
    """Validate a sharded dataset: its index, every shard and their agreement (SPEC §12.1-§12.3).

    Parameters
    ----------
    path
        The index file (``index.json``, or any ``.json`` file following
        ``schema/h5ml-index-1.0.schema.json``), or the dataset's folder that
        holds ``index.json``.
    deep
        Validate every shard deeply: read every sample, recompute the
        fingerprints (see :func:`h5ml.validator.runner.iter_issues`).
    timeout
        The time limit of each shard's validation (see :func:`h5ml.validator.runner.validate`).
    jobs
        Shards validated at once, each job in its own child process (see :func:`validate_each`).
    max_issues_per_code
        Issues of one code listed per report, the index's and each shard's; the others are counted.
    shallow_shards
        Check only the index and each shard's metadata: the shards are not
        validated as files, no sample data is read, no fingerprint recomputed.
    storage_options
        For an index at a URL (``s3://bucket/ds/index.json`` or the prefix ``s3://bucket/ds/``): the fsspec
        file system's options (credentials, endpoint), used for the index, the listing and every shard (in
        the child processes too); None: its defaults, which read credentials from the environment. They
        appear in no message.

    Returns
    -------
    FileReport
        ``kind="index"``: the issues of the index, in this order: the index
        itself (E100, E170), then each shard in index order (E171, E174, E172,
        E173), then the files no split lists (W210); ``shards`` holds the
        reports of the shards validated as files, in index order.

    Raises
    ------
    ValueError
        If ``jobs < 1``, ``timeout`` is not valid or ``max_issues_per_code`` is not an integer >= 0, or
        ``storage_options`` are given with a local path (they would be ignored).
    """
    check_cap(max_issues_per_code)
    if jobs < 1:
        raise ValueError(f"jobs must be >= 1, got {jobs}")
    given = os.fspath(path)
    remote = is_url(given)
    if storage_options and not remote:
        raise ValueError(
            f"{given}: storage_options are for an index at a URL (s3://, gs://, https://, ...), and this is a local "
            "path; drop storage_options, or give the index's URL"
        )
    options = dict(storage_options) if remote and storage_options is not None else None
    where = _index_file(given)
    collector = IssueCollector(max_issues_per_code)

    def report(version: str | None, shards: tuple[FileReport, ...] = ()) -> FileReport:
        return FileReport(
            given,
            tuple(collector.issues),
            version,
            deep and not shallow_shards,
            False,
            collector.omitted,
            max_issues_per_code,
            "index",
            shards,
        )

    document, problem = _read(where, options)
    version = document.get("format_version") if isinstance(document, dict) else None
    version = version if isinstance(version, str) else None
    if problem is None and not (isinstance(document, dict) and document.get("format") == INDEX_FORMAT):
        # Not an index at all (another project's index.json): said first, before any schema detail.
        said = document.get("format") if isinstance(document, dict) else None
        has = (
            f'it has "format": {json.dumps(said)[:80]}'
            if said is not None
            else 'it has no "format" member'
            if isinstance(document, dict)
            else f"it is a JSON {_JSON_KINDS.get(type(document), 'value')}, not an object"
        )
        problem = Issue.of(
            "E170",
            "/",
            f'{where} is JSON but not an h5ml shard index: {has}, and an index says "format": '
            f'"{INDEX_FORMAT}" (§12.1); give the index.json of a sharded h5ml dataset (h5ml validate '
            "--skip-other-json passes over other JSON files)",
        )
    if problem is None:
        try:
            # SPEC §12.1-R1, §12.1-R3, §12.3-R1: the schema, the sample counts, no path twice, the fingerprint
            index = parse_index(document, where)
        except ShardIndexError as exc:
            problem = Issue.of("E170", "/", f"{exc}; the shards were not checked: correct the index first")
        else:
            problem = _version_issue(where, index.format_version)
    if problem is not None:
        collector.add(problem)
        return report(version)
    # SPEC §12.1-R7: the index, every shard as a file of its own, their agreement; each shard at its pointer
    folder = where.rsplit("/", 1)[0] if remote else os.path.dirname(os.path.abspath(where))
    listed = _listed(index, where)
    stored: set[str] = set()
    if remote:
        try:
            stored = list_prefix(folder + "/", options)
        except (OSError, H5MLError) as exc:
            collector.add(
                Issue.of(
                    "E100",
                    "/",
                    f"cannot list the dataset's prefix {folder}/ ({exc}); the shards were not checked: give credentials "
                    "that may list it (on S3: s3:ListBucket)",
                )
            )
            return report(version)
    present: list[_Listed] = []
    resolved: dict[str, str] = {}
    for shard in listed:
        if remote:
            if shard.entry.path in stored:
                present.append(shard)
            else:
                # SPEC §12.1-R4: every shard the index lists is under the dataset's prefix
                collector.add(_missing(shard))
            continue
        real = os.path.realpath(shard.location)
        if real in resolved:
            # SPEC §12.1-R3: no shard listed twice, under two spellings (a symbolic link) either
            collector.add(
                Issue.of(
                    "E170",
                    shard.pointer,
                    f"shard {shard.entry.path} is the file {resolved[real]} lists too (through a symbolic link): "
                    "its samples would be read twice; list each shard once",
                )
            )
            continue
        resolved[real] = shard.pointer
        if _escapes(folder, shard.location):
            # SPEC §12.1-R2: an index never makes a reader open a file outside the dataset's folder (§10.1)
            collector.add(
                Issue.of(
                    "E170",
                    shard.pointer,
                    f"shard {shard.entry.path} resolves outside the dataset's folder {folder} (a symbolic link): "
                    "an index names files inside its folder only; copy the shard into the folder",
                )
            )
        elif not os.path.isfile(shard.location):
            # SPEC §12.1-R4: every shard the index lists is in the dataset's folder
            collector.add(_missing(shard))
        else:
            present.append(shard)
    reports: dict[str, FileReport] = {}
    if not shallow_shards and present:
        each = validate_each(
            [s.location for s in present],
            deep=deep,
            timeout=timeout,
            jobs=jobs,
            max_issues_per_code=max_issues_per_code,
            storage_options=options,
        )
        for shard, (shard_report, _) in zip(present, each, strict=True):
            reports[shard.location] = replace(shard_report, kind="shard")
    for shard in present:
        own = reports.get(shard.location)
        if own is not None and not own.valid:
            collector.add(_invalid(shard, own))
            if not own.readable:
                continue
        found, problem = _described(shard, options)
        if problem is not None:
            if own is None or own.valid:
                collector.add(problem)
            continue
        assert found is not None
        for issue in _agreement(index, shard, found):
            collector.add(issue)
    extra = _extra_at_url(index, listed, stored) if remote else _extra(index, folder, listed)
    for issue in extra:
        collector.add(issue)
    # SPEC §12.1-S2: no staging folder of a sharded writer left in the dataset's folder (W211)
    for issue in _staging_left(folder, stored if remote else None):
        collector.add(issue)
    return report(version, tuple(reports[s.location] for s in present if s.location in reports))
