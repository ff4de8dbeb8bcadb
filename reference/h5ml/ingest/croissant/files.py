"""Where the files of a Croissant dataset are, checked before anything is read: :func:`check_context`, :func:`check_files`.

``h5ml convert`` reads Croissant offline and only from the JSON-LD file's own
folder. The checks run on what mlcroissant *parsed* (its
:class:`mlcroissant.Metadata`: the ``cr:FileObject`` and ``cr:FileSet`` nodes,
their ``contentUrl``, ``containedIn`` and ``includes``), so that every
spelling of a property (``contentUrl``, ``sc:contentUrl``, the full
schema.org IRI, an alias of the ``@context``, a list of values) is checked as
mlcroissant will use it; and they run before mlcroissant's operations, which
download a remote ``contentUrl``. Refused, with the node and what to do:

- a ``@context`` that is a URL, or that ``@import``\\s one: the JSON-LD
  parser would download it (:func:`check_context`, on the JSON text, before
  mlcroissant parses it);
- a ``contentUrl`` or an ``includes`` pattern with a URL scheme (``http://``,
  ``https://``, ``gs://``, ...): nothing is downloaded;
- a ``file://`` URL: mlcroissant reads a ``contentUrl`` as a path relative to
  the JSON-LD's folder, and h5ml does not guess which folder a ``file://`` URL
  would fall in;
- a path outside the JSON-LD's folder: absolute, with ``..``, or a symbolic
  link (followed) to a file elsewhere;
- a FileObject without a ``contentUrl``, or several, or one that does not exist;
- a local zip or tar archive that a FileObject or FileSet is ``containedIn``
  with a member that could land outside the folder mlcroissant extracts it
  to: a symbolic or hard link (a zip entry whose attributes mark a link
  too), a device or FIFO, an absolute path, a path with ``..``. The members
  are read (:mod:`zipfile`, :mod:`tarfile`) before mlcroissant extracts
  anything; an archive inside an archive is refused, since its members
  cannot be read before the outer one is extracted;
- a Git LFS pointer (a file that was not fetched): mlcroissant would run
  ``git lfs pull``, which goes to the network;
- HDF5 files (``application/x-hdf5``, as ``h5ml croissant`` writes): mlcroissant
  reads no HDF5; the message says where the data already is and how to open it.
"""

from __future__ import annotations

import fnmatch
import os
import re
import stat
import tarfile
import zipfile
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path, PurePosixPath
from typing import Any, Final
from urllib.parse import urlparse

import h5py

from h5ml.errors import IngestError
from h5ml.ingest.croissant.vocabulary import HDF5_ENCODING_FORMAT
from h5ml.model.shard_index import declares_index

__all__ = ["check_context", "check_files"]

#: How a Git LFS pointer file begins (the first line of the spec's pointer format).
_LFS_POINTER: Final = b"version https://git-lfs.github.com/spec"
#: The expanded IRI of ``contentUrl``, as mlcroissant's parsed nodes keep their JSON-LD.
_CONTENT_URL: Final = "https://schema.org/contentUrl"


def _contexts(document: Any) -> Iterator[Any]:
    """Every ``@context`` value of a JSON document, at any depth (JSON-LD allows scoped contexts); no recursion."""
    pending = [document]
    while pending:
        value = pending.pop()
        if isinstance(value, Mapping):
            if "@context" in value:
                yield value["@context"]
            pending.extend(value.values())
        elif isinstance(value, list):
            pending.extend(value)


def check_context(document: Mapping[str, Any], where: str) -> None:
    """Refuse a JSON-LD ``@context`` that the JSON-LD parser would download (a URL, or an ``@import``).

    Parameters
    ----------
    document
        The JSON-LD document, as read from ``where``.
    where
        The JSON-LD file, for the message.

    Raises
    ------
    h5ml.IngestError
        Naming the remote context: offline conversion needs the context inline.
    """
    for context in _contexts(document):
        for entry in context if isinstance(context, list) else [context]:
            remote = entry if isinstance(entry, str) else None
            if isinstance(entry, Mapping) and "@import" in entry:
                remote = str(entry["@import"])
            if remote is not None:
                raise IngestError(
                    f"{where}: the JSON-LD @context refers to {remote!r}, which the JSON-LD parser would download; "
                    "offline conversion needs the context inline: replace it with the Croissant context object "
                    "(as `h5ml croissant` writes it)",
                    path=where,
                )


def _values(value: Any) -> list[str]:
    if value is None:
        return []
    return [str(v) for v in (value if isinstance(value, (list, tuple)) else [value])]


def _content_urls(node: Any) -> list[str]:
    """Every ``contentUrl`` of a FileObject, as the document gives them.

    mlcroissant's ``content_url`` holds one value: of a list it keeps the
    first and drops the others (with a warning), so the list is read from the
    node's expanded JSON-LD, where every spelling of the property has become
    the schema.org IRI.
    """
    jsonld = getattr(node, "jsonld", None)
    for key, value in jsonld.items() if isinstance(jsonld, Mapping) else []:
        if str(key) == _CONTENT_URL:  # rdflib's IRIs equal only their own type: compare the text
            given = value if isinstance(value, list) else [value]
            return [str(v.get("@value", v.get("@id"))) if isinstance(v, Mapping) else str(v) for v in given]
    return _values(node.content_url)


def _url_count_refusal(where: str, node_id: str, urls: Sequence[str]) -> IngestError:
    return IngestError(
        f"{where}: the cr:FileObject {node_id!r} has {len(urls)} contentUrls ({list(urls)!r:.300}); a FileObject is "
        "one file, and which one is meant is yours to say: give it one contentUrl, relative to the JSON-LD's folder "
        "(nothing was read or downloaded)",
        path=where,
    )


def _scheme(text: str) -> str:
    """The URL scheme of ``text`` in lower case, '' for a path (a one-letter scheme is a Windows drive)."""
    scheme = urlparse(text).scheme
    return scheme.lower() if len(scheme) > 1 else ""


def _leaves(relative: str) -> bool:
    """Whether a relative path or pattern is absolute or climbs out with ``..``."""
    pure = PurePosixPath(relative.replace("\\", "/"))
    return pure.is_absolute() or Path(relative).is_absolute() or ".." in pure.parts


def _inside(path: Path, folder: Path) -> bool:
    try:
        path.resolve().relative_to(folder.resolve())
    except ValueError:
        return False
    return True


def _is_h5ml(path: Path) -> bool:
    try:
        with h5py.File(path, "r") as handle:
            return bool(handle.attrs.get("format") in ("h5ml", b"h5ml"))
    except OSError:
        return False


def _hdf5_refusal(where: str, kind: str, node_id: Any, local: Path | None, index: Path | None) -> IngestError:
    """The refusal of a Croissant that describes HDF5 files: where the data already is, and how to open it."""
    found: Path | None
    if index is not None:
        found, what = index, "the index of a sharded h5ml dataset"
    elif local is not None and local.is_file() and _is_h5ml(local):
        found, what = local, "an h5ml file already"
    else:
        found, what = local, "an HDF5 file"
    if found is None:
        return IngestError(
            f"{where}: the {kind} {node_id!r} holds HDF5 files, which mlcroissant does not read; open them with "
            "h5ml.open instead of converting their metadata",
            path=where,
        )
    advice = f"open it with h5ml.open({str(found)!r}) (`h5ml inspect {found}`) instead of converting its metadata"
    if what == "an HDF5 file":
        advice += f", or convert the file itself: `h5ml convert {found} OUT.h5`"
    return IngestError(
        f"{where}: this Croissant describes HDF5 data ({kind} {node_id!r}), and mlcroissant reads no HDF5; the data "
        f"already is HDF5: {found} is {what}: {advice}",
        path=where,
    )


def _file_nodes(metadata: Any) -> list[Any]:
    """The FileObjects and FileSets mlcroissant parsed: the distribution, and any other in its structure graph."""
    import mlcroissant  # type: ignore[import-untyped]  # mlcroissant ships no type information

    nodes = list(getattr(metadata, "distribution", None) or [])
    graph = getattr(getattr(metadata, "ctx", None), "graph", None)
    for node in list(graph.nodes) if graph is not None else []:
        if isinstance(node, (mlcroissant.FileObject, mlcroissant.FileSet)) and all(node is not n for n in nodes):
            nodes.append(node)
    return nodes


def _refuse_remote(where: str, kind: str, node_id: str, what: str, url: str) -> None:
    scheme = _scheme(url)
    if scheme == "file":
        raise IngestError(
            f"{where}: the {kind} {node_id!r} has the {what} {url!r}, a file:// URL; h5ml reads local files by their "
            "path relative to the JSON-LD's folder (as mlcroissant does): write that path instead",
            path=where,
        )
    if scheme:
        raise IngestError(
            f"{where}: the {kind} {node_id!r} has the remote {what} {url!r}; offline conversion needs local files "
            "and downloads nothing: download it into the JSON-LD's folder, set contentUrl to its path there "
            "(relative to the JSON-LD's folder), and convert again",
            path=where,
        )


def _outside_refusal(where: str, kind: str, node_id: str, what: str, url: str, folder: Path) -> IngestError:
    return IngestError(
        f"{where}: the {kind} {node_id!r} has the {what} {url!r}, outside the JSON-LD's folder {folder.resolve()} "
        "(an absolute path, a '..', or a symbolic link to elsewhere); h5ml reads only the files in that folder: "
        "copy the files into it (or write the JSON-LD beside them) and give their path relative to it",
        path=where,
    )


def _is_lfs_pointer(path: Path) -> bool:
    try:
        with path.open("rb") as handle:
            return handle.readline().startswith(_LFS_POINTER)
    except OSError:
        return False


def _lfs_refusal(where: str, kind: str, node_id: str, path: Path) -> IngestError:
    return IngestError(
        f"{where}: the {kind} {node_id!r} names {path}, a Git LFS pointer, not the file's content; mlcroissant "
        "would fetch it with `git lfs pull`, and offline conversion downloads nothing: run `git lfs pull` in its "
        "repository yourself, then convert again",
        path=where,
    )


def _set_files(folder: Path, patterns: Sequence[str]) -> Iterator[Path]:
    """The files of a local FileSet: those whose path relative to ``folder`` matches a pattern, as mlcroissant matches."""
    regexes = [re.compile(fnmatch.translate(p)) for p in patterns]
    for base, _dirs, names in os.walk(folder):
        for name in names:
            path = Path(base) / name
            if any(r.match(path.relative_to(folder).as_posix()) for r in regexes):
                yield path


def check_files(metadata: Any, where: str) -> None:
    """Refuse remote, outside, missing and HDF5 files before anything is read (the module docstring).

    Parameters
    ----------
    metadata
        The :class:`mlcroissant.Metadata` of the JSON-LD file, as mlcroissant parsed it.
    where
        The JSON-LD file; its folder holds the files.

    Raises
    ------
    h5ml.IngestError
        Naming the FileObject or FileSet, its ``contentUrl`` or ``includes`` and what to do.
    """
    import mlcroissant

    folder = Path(where).parent
    nodes = _file_nodes(metadata)
    described: list[tuple[str, str, Any, list[str]]] = []
    for node in nodes:  # first every remote URL, before any local file is looked at
        is_set = isinstance(node, mlcroissant.FileSet)
        kind, node_id = ("cr:FileSet" if is_set else "cr:FileObject"), str(getattr(node, "id", "?"))
        what = "includes pattern" if is_set else "contentUrl"
        urls = _values(node.includes) if is_set else _content_urls(node)
        if not is_set and len(urls) > 1:  # mlcroissant would read the first one and drop the others
            raise _url_count_refusal(where, node_id, urls)
        for url in urls:
            _refuse_remote(where, kind, node_id, what, url)
        described.append((kind, node_id, node, urls))
    for kind, node_id, node, urls in described:
        if HDF5_ENCODING_FORMAT in _values(node.encoding_formats):
            # the index of a sharded dataset, as `h5ml croissant` describes it: a JSON FileObject (only those are read)
            jsons = [
                folder / u
                for _, _, n, us in described
                if not n.contained_in and "application/json" in _values(n.encoding_formats)
                for u in us[:1]
            ]
            index = next((p for p in jsons if p.is_file() and declares_index(p, in_doubt=False)), None)
            local = folder / urls[0] if urls and not node.contained_in and kind == "cr:FileObject" else None
            raise _hdf5_refusal(where, kind, node_id, local, index)
    for kind, node_id, node, urls in described:
        what = "includes pattern" if kind == "cr:FileSet" else "contentUrl"
        for url in urls:
            if _leaves(url) or (
                kind == "cr:FileObject" and not node.contained_in and not _inside(folder / url, folder)
            ):
                raise _outside_refusal(where, kind, node_id, what, url, folder)
        if kind == "cr:FileSet":
            for path in [] if node.contained_in else _set_files(folder, urls):
                if not _inside(path, folder):
                    raise _outside_refusal(where, kind, node_id, what, path.relative_to(folder).as_posix(), folder)
                if _is_lfs_pointer(path):
                    raise _lfs_refusal(where, kind, node_id, path)
            continue
        if len(urls) != 1:
            raise _url_count_refusal(where, node_id, urls)
        local = folder / urls[0]
        if not node.contained_in and not local.exists():
            raise IngestError(
                f"{where}: the {kind} {node_id!r} names {urls[0]!r}, and {local} does not exist; put the file there "
                "or fix its contentUrl (relative to the JSON-LD's folder)",
                path=where,
            )
        if not node.contained_in and _is_lfs_pointer(local):
            raise _lfs_refusal(where, kind, node_id, local)
    _check_archives(described, folder, where)


def _container_ids(node: Any) -> list[str]:
    """The uuids of the FileObjects and FileSets that ``node`` is ``containedIn`` (a uuid, or a Source naming one)."""
    ids = []
    for container in node.contained_in or []:
        found = container if isinstance(container, str) else getattr(container, "file_object", None)
        found = found or getattr(container, "file_set", None)
        if found:
            ids.append(str(found))
    return ids


def _check_archives(described: Sequence[tuple[str, str, Any, list[str]]], folder: Path, where: str) -> None:
    """Refuse the members of local archives that extraction could put outside its folder (the module docstring)."""
    containers = {c for _, _, node, _ in described for c in _container_ids(node)}
    for kind, node_id, node, urls in described:
        if str(getattr(node, "uuid", node_id)) not in containers and node_id not in containers:
            continue
        if node.contained_in:
            raise IngestError(
                f"{where}: the {kind} {node_id!r} holds other files and is itself contained in an archive; h5ml "
                "checks an archive's members before anything is extracted, which it cannot do for an archive inside "
                "an archive: extract the outer archive into the JSON-LD's folder and describe the inner one there",
                path=where,
            )
        archives = _set_files(folder, urls) if kind == "cr:FileSet" else [folder / u for u in urls]
        for archive in archives:
            _check_members(archive, kind, node_id, where)


def _member_danger(name: str, mode: int, link: str | None) -> str | None:
    """Why an archive member could land outside the extraction folder, or None."""
    if link is not None:
        return link
    if _leaves(name):
        return "an absolute path or a path with '..'"
    if stat.S_IFMT(mode) not in (0, stat.S_IFREG, stat.S_IFDIR):
        return "neither a file nor a folder (a device, a FIFO or a socket)"
    return None


def _check_members(archive: Path, kind: str, node_id: str, where: str) -> None:
    """Refuse a zip or tar ``archive`` with a link, an absolute path, a '..' or a special file among its members."""
    members: list[tuple[str, str | None]] = []
    try:
        if zipfile.is_zipfile(archive):  # mlcroissant's order: zip first, then tar
            with zipfile.ZipFile(archive) as opened:
                for info in opened.infolist():
                    mode = info.external_attr >> 16  # the Unix mode, where the archiver wrote one
                    link = "a symbolic link" if stat.S_ISLNK(mode) else None
                    members.append((info.filename, _member_danger(info.filename, mode, link)))
        elif tarfile.is_tarfile(archive):
            with tarfile.open(archive) as opened:
                for member in opened:
                    link = "a symbolic link" if member.issym() else "a hard link" if member.islnk() else None
                    mode = 0 if member.isfile() or member.isdir() else stat.S_IFIFO
                    members.append((member.name, _member_danger(member.name, mode, link)))
    except (OSError, EOFError, zipfile.BadZipFile, tarfile.TarError) as exc:
        raise IngestError(
            f"{where}: the {kind} {node_id!r} names the archive {archive}, which cannot be read ({exc}); fix or "
            "replace the archive",
            path=where,
        ) from exc
    for name, danger in members:
        if danger is not None:
            raise IngestError(
                f"{where}: the {kind} {node_id!r} names the archive {archive}, whose member {name!r} is {danger}; "
                "h5ml extracts only files and folders at relative paths inside the archive, since a link or such a "
                "path could reach a file outside the JSON-LD's folder: take the member out of the archive, or "
                "extract the archive yourself and describe its files",
                path=where,
            )
