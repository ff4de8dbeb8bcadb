"""Which FILEs of ``h5ml validate`` are checked: each file once, a shard with its index, other projects' JSON skipped.

A command line, or a pre-commit hook that passes every file a commit
touches, can name one file several ways, and a dataset's shards beside its
index. :func:`sort_out` decides, before any file is checked:

- a file given twice (``a.h5 ./a.h5``, or through a symbolic link; for an
  index, its folder and its ``index.json``) is checked once, under the
  spelling given first: every report has one entry for it, never two;
- a file that an index given too lists as a shard (SPEC §12.1) is checked
  once, as that shard, with its index (not with ``--shallow-shards``, which
  does not check shards as files): the index's report records it
  (:attr:`h5ml.validator.report.FileReport.given_shards`);
- with ``skip_other_json`` (the hook's ``--skip-other-json``), a ``.json``
  file that does not say it is an h5ml index
  (:func:`h5ml.model.shard_index.declares_index`) is not checked.

Files are compared by their resolved path (``os.path.realpath``), URLs by
their text (a prefix ``s3://b/ds/`` is its ``index.json``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from h5ml.model.remote import is_url

if TYPE_CHECKING:  # pragma: no cover
    from h5ml.validator.report import FileReport

__all__ = ["GivenFiles", "same_file_key", "sort_out"]


def same_file_key(path: str) -> str:
    """What two spellings of one file have in common: the resolved path; a URL's text; an index folder's index.json.

    Parameters
    ----------
    path
        A FILE as given, or the path of a shard as its index's report names it.

    Returns
    -------
    str
        Equal for ``a.h5``, ``./a.h5``, a symbolic link to it and a hard link (one device and inode); for
        ``data/ds`` and ``data/ds/index.json``.
    """
    from h5ml.model.shard_index import INDEX_FILE_NAME

    if is_url(path):
        return path + INDEX_FILE_NAME if path.endswith("/") else path
    if os.path.isdir(path) and os.path.isfile(os.path.join(path, INDEX_FILE_NAME)):
        path = os.path.join(path, INDEX_FILE_NAME)
    try:
        found = os.stat(path)
    except OSError:  # not there (reported as E100 where it is checked): its resolved path
        return os.path.realpath(path)
    return f"inode:{found.st_dev}:{found.st_ino}" if os.path.isfile(path) else os.path.realpath(path)


@dataclass(frozen=True)
class GivenFiles:
    """The FILEs of a validation, sorted out before any is checked (:func:`sort_out`).

    Attributes
    ----------
    checked
        The FILEs to check, each once, in the order given.
    repeated
        (FILE, the FILE given before that names the same file) for each FILE given again: not checked again.
    covered
        FILE -> the index FILE that lists it as a shard: it is checked once, as that shard, with the index.
    skipped
        The FILEs that are JSON files of other projects (``skip_other_json``): not checked.
    """

    checked: tuple[str, ...]
    repeated: tuple[tuple[str, str], ...] = ()
    covered: Mapping[str, str] = field(default_factory=dict)
    skipped: tuple[str, ...] = ()

    def with_given_shards(self, index_report: FileReport) -> tuple[FileReport, list[str]]:
        """The index's report, recording the FILEs it covered, and the FILEs it was to cover and did not check.

        Parameters
        ----------
        index_report
            The report of an index of :attr:`checked`.

        Returns
        -------
        (FileReport, list of str)
            The report with :attr:`~h5ml.validator.report.FileReport.given_shards` (FILE, the path of its
            shard's report); and the FILEs of :attr:`covered` under this index that are not among its shards'
            reports (the index refused them: a link outside its folder, a shard listed twice, an index whose
            version this validator does not check), which must be checked on their own.
        """
        mine = [given for given, index in self.covered.items() if index == index_report.path]
        if not mine:
            return index_report, []
        shards = {same_file_key(shard.path): shard.path for shard in index_report.shards}
        keys = {path: same_file_key(path) for path in mine}  # one stat a FILE
        given = tuple((path, shards[keys[path]]) for path in mine if keys[path] in shards)
        left = [path for path in mine if keys[path] not in shards]
        return replace(index_report, given_shards=index_report.given_shards + given), left


def sort_out(
    files: Sequence[str],
    *,
    skip_other_json: bool = False,
    shallow_shards: bool = False,
    storage_options: Mapping[str, Any] | None = None,
) -> GivenFiles:
    """Sort the FILEs of ``h5ml validate`` out: which to check, which were given twice, covered or skipped.

    Parameters
    ----------
    files
        The FILEs, as given.
    skip_other_json
        Leave out the ``.json`` FILEs (and index folders) that do not say they are h5ml indexes.
    shallow_shards
        ``--shallow-shards``: an index does not check its shards as files, so it covers none.
    storage_options
        For the indexes at a URL: the options their listing is read with.

    Returns
    -------
    GivenFiles
        What :func:`h5ml.tools.commands.validate.validate_command` checks and says.
    """
    from h5ml.validator.runner import is_index

    first: dict[str, str] = {}  # same_file_key -> the FILE given first, in the order given
    repeated: list[tuple[str, str]] = []
    skipped: list[str] = []
    indexes: list[str] = []
    for path in files:
        key = same_file_key(path)
        if key in first:
            repeated.append((path, first[key]))
            continue
        first[key] = path
        if not is_index(path):
            continue
        if skip_other_json and not is_url(path):
            from h5ml.model.shard_index import declares_index

            if not declares_index(path):
                skipped.append(path)
                continue
        indexes.append(path)
    left_out = set(skipped)
    covered: dict[str, str] = {}
    if not shallow_shards and indexes and len(indexes) + len(skipped) < len(first):
        from h5ml.validator.shards import listed_shards

        others = {key: path for key, path in first.items() if path not in left_out and path not in indexes}
        for index in indexes:
            for location in listed_shards(index, storage_options):
                shard = others.get(same_file_key(location))
                if shard is not None and shard not in covered:
                    covered[shard] = index
    checked = tuple(path for path in first.values() if path not in left_out and path not in covered)
    return GivenFiles(checked, tuple(repeated), covered, tuple(skipped))
