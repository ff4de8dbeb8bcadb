"""The index of a sharded dataset (SPEC §12): its document, its fingerprint, and how it is read and written.

A sharded dataset is a folder (or URL prefix) of conforming h5ml files, the
shards, each holding one split, plus one small JSON document, the index
(``schema/h5ml-index-1.0.schema.json``), which names the shards of every
split in sample order with their sample counts, fingerprints and sizes, and
says what every shard stores for each feature. This module holds the one
typed form of that document (:class:`ShardIndex`), the index fingerprint
(:func:`index_fingerprint`, §12.3), the checks that need no shard
(:func:`parse_index`), and the atomic write of an index (:func:`write_index`,
§12.4: an index is written last, so it never lists an incomplete shard).

The reader (:mod:`h5ml.reader.sharded`), the validator, the sharded writer
and the Dask writer all go through here.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import re
from collections.abc import Mapping
from pathlib import Path, PurePosixPath
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from h5ml.errors import ShardIndexError
from h5ml.model.remote import is_url, read_remote_text
from h5ml.model.strict_json import DuplicateMemberError, loads_strict
from h5ml.model.text_files import atomic_text_file
from h5ml.spec.schemas import validator_for

__all__ = [
    "INDEX_FILE_NAME",
    "INDEX_FORMAT",
    "INDEX_SCHEMA",
    "PER_FILE_ATTRIBUTES",
    "FeatureEntry",
    "ShardEntry",
    "ShardIndex",
    "SplitEntry",
    "declares_index",
    "dump_index",
    "index_fingerprint",
    "is_index_path",
    "load_index",
    "parse_index",
    "parse_index_text",
    "shard_location",
    "write_index",
]

#: The value of the index's ``format`` member (§12.1).
INDEX_FORMAT: Final = "h5ml-index"
#: The name a writer gives the index inside the dataset's folder (§12.1); a reader given a folder opens it.
INDEX_FILE_NAME: Final = "index.json"
#: The JSON Schema of the index document (``schema/``).
INDEX_SCHEMA: Final = "index"
#: Root attributes that differ from shard to shard and so never appear in the index's ``metadata`` (§12.2).
PER_FILE_ATTRIBUTES: Final = frozenset(
    {"format", "format_version", "created", "writer", "fingerprint", "complete", "must_understand", "required_filters"}
)

Encoding = Literal["dense", "ragged", "string", "categorical", "bytes"]


class ShardEntry(BaseModel):
    """One shard of a split: a conforming h5ml file holding that split only (§12.1).

    Attributes
    ----------
    path
        The shard's path relative to the folder of the index, '/'-separated.
    num_samples
        The samples of the split in this shard.
    fingerprint
        The shard's file fingerprint (§8.3), ``"sha256:<64 hex>"``.
    size_bytes
        The size of the shard file in bytes.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    path: str
    num_samples: int = Field(ge=0)
    fingerprint: str
    size_bytes: int = Field(ge=0)


class FeatureEntry(BaseModel):
    """What every shard of a split stores for one feature (§12.2).

    Attributes
    ----------
    encoding
        ``dense``, ``ragged``, ``string``, ``categorical`` or ``bytes`` (§6).
    dtype
        The values' dtype as a fingerprint header records it (§8.2): ``"<f4"``, ``"|u1"``, ``"|b1"``;
        ``"<i8"`` for categorical codes, ``"|u1"`` for bytes, ``"utf-8"`` for strings.
    sample_shape
        The shape of one sample; None marks an axis whose length varies.
    class_names
        The class names of a categorical feature; None for the other encodings.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    encoding: Encoding
    dtype: str
    sample_shape: tuple[int | None, ...]
    class_names: tuple[str, ...] | None = None


class SplitEntry(BaseModel):
    """One split of a sharded dataset: its features and its shards in sample order (§12.1).

    Attributes
    ----------
    num_samples
        The sum of the shards' ``num_samples``.
    features
        Feature name -> :class:`FeatureEntry`.
    shards
        The shards, in sample order: sample ``i`` of the split is sample
        ``i - start`` of the shard whose samples start at ``start``.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    num_samples: int = Field(ge=0)
    features: dict[str, FeatureEntry]
    shards: tuple[ShardEntry, ...]

    def starts(self) -> list[int]:
        """The global index of each shard's first sample, and the split's length last (``len(shards) + 1`` ints)."""
        starts = [0]
        for shard in self.shards:
            starts.append(starts[-1] + shard.num_samples)
        return starts


class ShardIndex(BaseModel):
    """The index of a sharded dataset (SPEC §12, ``schema/h5ml-index-1.0.schema.json``).

    Attributes
    ----------
    format
        Always ``"h5ml-index"``.
    format_version
        The version of SPEC.md the index follows, ``"MAJOR.MINOR"``.
    metadata
        The dataset's card: the root attributes every shard shares, as JSON (§4.6).
    splits
        Split name -> :class:`SplitEntry`.
    fingerprint
        The index fingerprint (§12.3); :func:`index_fingerprint` of ``splits``.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    format: Literal["h5ml-index"] = INDEX_FORMAT
    format_version: str
    metadata: dict[str, Any]
    splits: dict[str, SplitEntry]
    fingerprint: str

    def to_json(self) -> dict[str, Any]:
        """The index as the JSON document of the schema (sample shapes as lists, no absent class names)."""
        document: dict[str, Any] = self.model_dump(mode="json", exclude_none=True)
        return document


def index_fingerprint(splits: Mapping[str, SplitEntry]) -> str:
    """Return the index fingerprint of SPEC §12.3.

    It is ``"sha256:"`` and the lowercase hexadecimal SHA-256 of the UTF-8 text
    made of one line ``<split>/<position> <shard fingerprint>\\n`` per shard,
    splits in code-point order of their names, shards in their listed order
    (position 0 first, in decimal). Two indexes have the same fingerprint
    exactly when they list the same shard contents in the same order.

    Parameters
    ----------
    splits
        Split name -> :class:`SplitEntry`.

    Returns
    -------
    str
        ``"sha256:<64 hex digits>"``.
    """
    digest = hashlib.sha256()
    for name in sorted(splits):
        for position, shard in enumerate(splits[name].shards):
            digest.update(f"{name}/{position} {shard.fingerprint}\n".encode())
    return "sha256:" + digest.hexdigest()


def _schema_problems(document: Any) -> list[str]:
    problems = []
    for error in sorted(validator_for(INDEX_SCHEMA).iter_errors(document), key=lambda e: [str(p) for p in e.path]):
        where = "/" + "/".join(str(part) for part in error.path)
        problems.append(f"{where}: {error.message}")
    return problems


def parse_index(document: Any, where: str) -> ShardIndex:
    """Check an index document on its own (no shard opened) and return it typed (SPEC §12.1-§12.3).

    Checked: the JSON Schema; every split's ``num_samples`` is the sum of its
    shards'; no shard path is listed twice; the ``fingerprint`` is the index
    fingerprint of the listed shards.

    Parameters
    ----------
    document
        The parsed JSON document.
    where
        The index's path or URL, for messages.

    Returns
    -------
    ShardIndex

    Raises
    ------
    ShardIndexError
        Listing every problem found, each with its JSON pointer.
    """
    problems = _schema_problems(document)
    if problems:
        raise ShardIndexError(f"{where} is not a valid h5ml shard index (SPEC §12.1): " + "; ".join(problems))
    try:
        index = ShardIndex.model_validate(document)
    except ValidationError as exc:  # the schema admits it, so this is a defect of one of the two
        raise ShardIndexError(f"{where} is not a valid h5ml shard index (SPEC §12.1): {exc}") from exc
    seen: dict[str, str] = {}
    for name, split in index.splits.items():
        total = sum(shard.num_samples for shard in split.shards)
        if total != split.num_samples:
            problems.append(
                f"/splits/{name}/num_samples is {split.num_samples} but its shards hold {total} samples (§12.1)"
            )
        for position, shard in enumerate(split.shards):
            key = PurePosixPath(shard.path).as_posix()
            if key in seen:
                problems.append(f"/splits/{name}/shards/{position}: {shard.path!r} is listed twice (also {seen[key]})")
            seen[key] = f"/splits/{name}/shards/{position}"
    expected = index_fingerprint(index.splits)
    if index.fingerprint != expected:
        problems.append(f"/fingerprint is {index.fingerprint} but the listed shards give {expected} (§12.3)")
    if problems:
        raise ShardIndexError(f"{where} is not a valid h5ml shard index: " + "; ".join(problems))
    return index


def is_index_path(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` names a shard index (§12.1): a ``.json`` file or URL, a local folder holding ``index.json``,
    or a URL ending in ``/`` (a prefix: its ``index.json``; no request is made to find out).
    """
    text = os.fspath(path)
    if text.lower().endswith(".json"):
        return True
    if is_url(text):
        return text.endswith("/")
    return os.path.isdir(text) and os.path.isfile(os.path.join(text, INDEX_FILE_NAME))


#: The start of every index h5ml writes (its "format" member comes first), after any whitespace or BOM.
_INDEX_START: Final = re.compile(rb'^(?:\xef\xbb\xbf)?\s*\{\s*"format"\s*:\s*"h5ml-index"')


def declares_index(path: str | os.PathLike[str], *, in_doubt: bool = True) -> bool:
    """Whether a local JSON file says it is an h5ml shard index (§12.1: the member ``"format": "h5ml-index"``).

    Two tools ask. A pre-commit hook is given every ``index.json`` of a repository, most of them other
    projects' (a search index, a site's table of contents), and checks only those that say they are h5ml
    indexes (``h5ml validate --skip-other-json``): there a file in doubt is checked (``in_doubt=True``). The
    ``-o`` of a text document never replaces an index (:mod:`h5ml.ingest.document_output`): there a file in
    doubt that does not look like an index is replaced, so that a report quoting the name (``"format":
    "h5ml-index"`` in an E170 message) can be written again (``in_doubt=False``). The rules:

    - a JSON object says so when its ``format`` is ``"h5ml-index"``; an index that lost that member no
      longer says it is one;
    - a file that is not JSON (or not UTF-8, or has a member name twice) says so when it starts as h5ml
      writes an index (``{"format": "h5ml-index"``); with ``in_doubt``, also when its bytes hold
      ``h5ml-index`` anywhere: an index damaged by an edit is still checked (and fails, E170);
    - a file that cannot be read: ``in_doubt`` (its validation says why, E100).

    Parameters
    ----------
    path
        A ``.json`` file, or a folder (its ``index.json``), on the local file system.
    in_doubt
        The answer for a file that cannot be read, and whether any mention of ``h5ml-index`` in a file that
        is not JSON counts.

    Returns
    -------
    bool
        Whether the file is (or, in doubt, may be) an h5ml shard index by the rules above.
    """
    where = Path(path)
    if where.is_dir():
        where = where / INDEX_FILE_NAME
    try:
        data = where.read_bytes()
    except OSError:
        return in_doubt
    try:
        document = loads_strict(data.decode("utf-8-sig"))
    except (ValueError, RecursionError):  # not UTF-8, not JSON, a member twice
        return bool(_INDEX_START.match(data)) or (in_doubt and INDEX_FORMAT.encode("ascii") in data)
    return isinstance(document, dict) and document.get("format") == INDEX_FORMAT


def load_index(
    path: str | os.PathLike[str], storage_options: Mapping[str, Any] | None = None, *, check_links: bool = True
) -> tuple[ShardIndex, Path | str]:
    """Read and check an index (:func:`parse_index`), local or at a URL; a folder (or ``prefix/``) means its ``index.json``.

    Parameters
    ----------
    path
        The index file, or the dataset's folder; or their URL (``s3://bucket/ds/index.json``, ``s3://bucket/ds/``),
        read through fsspec (:func:`h5ml.model.remote.read_remote_text`).
    storage_options
        For a URL: the fsspec file system's options (credentials, endpoint); None: its defaults.
    check_links
        For a local index: refuse shard paths that resolve through symbolic links outside the folder or to one
        file twice (:func:`check_local_shards`). False only for a caller that reports them itself (the view
        checks of :mod:`h5ml.model.view_files`, E118).

    Returns
    -------
    (ShardIndex, pathlib.Path or str)
        The index and where the index file is: a path, or the URL as a str (shard paths are relative to its
        folder: :func:`shard_location`).

    Raises
    ------
    FileNotFoundError
        If there is no index at ``path``.
    PermissionError
        If the store refused the credentials (URLs).
    ShardIndexError
        If the file is not JSON (UTF-8), or not a valid index, or (``check_links``) a shard path leads through a
        symbolic link outside the folder or to a file listed twice.
    ValueError
        If ``storage_options`` are given with a local path.
    """
    text = os.fspath(path)
    if is_url(text):
        url = text + INDEX_FILE_NAME if text.endswith("/") else text
        try:
            body = read_remote_text(url, storage_options)
        except UnicodeDecodeError as exc:
            raise ShardIndexError(
                f"{url} is not UTF-8 text ({exc}); give the index.json of a sharded h5ml dataset"
            ) from exc
        return parse_index(parse_index_text(body, url), url), url
    if storage_options:
        raise ValueError(f"{text}: storage_options are for URLs, and this is a local path; drop storage_options")
    where = Path(path)
    if where.is_dir():
        where = where / INDEX_FILE_NAME
    if not where.exists():  # a folder without an index too: one message, not the system's "No such file"
        raise FileNotFoundError(
            errno.ENOENT,
            f"{where}: no shard index here; give the {INDEX_FILE_NAME} of a sharded h5ml dataset, or its folder",
        )
    try:
        local = where.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ShardIndexError(
            f"{where} is not UTF-8 text ({exc}); give the index.json of a sharded h5ml dataset"
        ) from exc
    index = parse_index(parse_index_text(local, str(where)), str(where))
    if check_links:
        check_local_shards(index, where)
    return index, where


def check_local_shards(index: ShardIndex, index_file: str | os.PathLike[str]) -> None:
    """Refuse a local index whose shard paths lead, through symbolic links, outside its folder or to one file twice.

    The schema keeps every path textually inside the folder (§12.1-R2); a symbolic link inside the folder can
    still point elsewhere, and two paths can name one file (§12.1-R3). The validator reports both as E170; a
    reader, ``unshard`` and ``view`` refuse them here, before any shard is opened (one ``realpath`` per shard).
    Missing shards are not refused here: they are refused when read (E171).

    Raises
    ------
    ShardIndexError
        Naming every such shard and the file it resolves to.
    """
    folder = os.path.realpath(os.path.dirname(os.path.abspath(index_file)))
    seen: dict[str, str] = {}
    problems = []
    for name in sorted(index.splits):
        for position, shard in enumerate(index.splits[name].shards):
            real = os.path.realpath(shard_location(index_file, shard.path))
            pointer = f"/splits/{name}/shards/{position}"
            if os.path.commonpath([folder, real]) != folder:
                problems.append(f"{pointer} ({shard.path}) resolves to {real}, outside the dataset's folder {folder}")
            elif real in seen:
                problems.append(f"{pointer} ({shard.path}) is the file {seen[real]} lists too ({real})")
            seen.setdefault(real, pointer)
    if problems:
        raise ShardIndexError(
            f"{index_file}: shards reached through symbolic links (SPEC §12.1): "
            + "; ".join(problems)
            + ". An index lists each file of its folder once; copy the shards into the folder, or list each once"
        )


def parse_index_text(text: str, where: str) -> Any:
    """The JSON document of an index's text, read strictly (:func:`h5ml.model.strict_json.loads_strict`, §12.1).

    Parameters
    ----------
    text
        The index file's text (decoded from UTF-8).
    where
        The index's path or URL, for messages.

    Returns
    -------
    Any
        The parsed document, for :func:`parse_index`.

    Raises
    ------
    ShardIndexError
        If the text is not JSON, is nested too deeply, or has an object with a duplicate member name (SPEC
        §12.1-R8), naming the member's JSON pointer.
    """
    try:
        return loads_strict(text)
    except DuplicateMemberError as exc:
        # SPEC §12.1-R8: a duplicate member name makes the index invalid, whichever member a parser would keep
        raise ShardIndexError(
            f"{where} is not a valid h5ml shard index (SPEC §12.1): {exc}; keep one member of each name"
        ) from exc
    except (ValueError, RecursionError) as exc:
        why = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
        raise ShardIndexError(f"{where} is not JSON ({why}); give the index.json of a sharded h5ml dataset") from exc


def shard_location(index_file: str | os.PathLike[str], shard_path: str) -> str:
    """The location of a shard: its relative path joined to the folder of the index (a path or URL, §12.1).

    The schema already refused absolute paths, schemes, ``..`` and backslashes, so the result stays inside the
    dataset's folder or URL prefix.
    """
    text = os.fspath(index_file)
    if is_url(text):
        return text.rsplit("/", 1)[0] + "/" + shard_path
    return os.path.join(os.path.dirname(os.path.abspath(text)), *shard_path.split("/"))


def dump_index(index: ShardIndex) -> str:
    """The index as JSON text: two-space indentation, members in schema order, a final newline."""
    return json.dumps(index.to_json(), indent=2, ensure_ascii=False) + "\n"


def write_index(index: ShardIndex, path: str | os.PathLike[str]) -> Path:
    """Write an index atomically: a temporary file in the same folder, fsync, rename, fsync of the folder (§12.4).

    A crash at any moment leaves either the previous index (or none) or the new one, never a partial one. Call
    it after every shard it lists is complete and closed.

    Parameters
    ----------
    index
        The index; checked again (:func:`parse_index`) before anything is written.
    path
        The index file to write, or the dataset's folder (then ``index.json`` inside it).

    Returns
    -------
    pathlib.Path
        The path written.

    Raises
    ------
    ShardIndexError
        If ``index`` is not a valid index.
    """
    target = Path(path)
    if target.is_dir():
        target = target / INDEX_FILE_NAME
    parse_index(index.to_json(), str(target))
    # SPEC §12.4-R1: written last (the caller has closed every shard) and atomically: temporary, fsync, rename;
    # as readable as the shards beside it
    with atomic_text_file(target) as handle:
        handle.write(dump_index(index))
    return target
