"""The HDF5 objects of any h5ml file, read as the specification says: attributes, member names and links.

A file may come from any writer, in any state. Attributes are read one at a
time, as :func:`h5ml.spec.attrs.read_attr` returns them (§4.6), with strings
checked to be UTF-8 (§3.4): one that is not raises
:class:`~h5ml.errors.EncodingError` for that attribute only. Members are
listed with HDF5's own link iteration, which keeps names as bytes, so a name
that is not UTF-8 cannot stop a listing (§5.1). A failure of the HDF5 library
becomes :class:`~h5ml.errors.InvalidFileError` through the one contract of
:func:`h5ml.model.failures.damaged_file`. The reader and the writer's append
mode both read files this way (through :mod:`h5ml.model.header` too).
"""

from __future__ import annotations

import builtins
from typing import Any, BinaryIO

import h5py

from h5ml import spec
from h5ml.errors import EncodingError, H5MLError, NotH5MLError
from h5ml.model.failures import LIBRARY_ERRORS, damaged_file, is_library_failure, validate_advice
from h5ml.spec.attrs import read_attr

__all__ = [
    "group_links",
    "member_links",
    "member_names",
    "read_attribute",
    "read_attributes",
    "unopenable_file",
]


def _check_text(value: Any, name: str, filename: str, where: str) -> Any:
    """Refuse strings h5py decoded with ``surrogateescape``: their bytes were not UTF-8 (§3.4)."""
    for item in value if isinstance(value, list) else (value,):
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError as exc:
                raise _not_utf8(name, filename, where, "the bytes are not valid UTF-8") from exc
    return value


def _not_utf8(name: str, filename: str, where: str, reason: str) -> EncodingError:
    return EncodingError(
        f"{filename}: attribute {name!r} of {where} is not a valid UTF-8 string ({reason}); strings must be UTF-8 "
        f"(§3.4). Only this attribute is unreadable (the samples are not affected): rewrite it, and "
        f"{validate_advice(filename)}",
        path=filename,
        hdf5_path=where,
    )


def read_attribute(obj: Any, name: str, filename: str, where: str) -> Any:
    """Read one attribute of a file being read, as :func:`h5ml.spec.attrs.read_attr` returns it (§4.6).

    Parameters
    ----------
    obj
        The h5py file, group or dataset.
    name
        The attribute name.
    filename, where
        The file path and the object's HDF5 path, for messages.

    Returns
    -------
    Any
        ``str``, ``int``, ``float``, ``bool``, a list, or None when the attribute is absent: the value as
        data, never deserialised (no ``pickle``, ``eval``, JSON or YAML loader runs on it) (SPEC §10.2-R1).

    Raises
    ------
    EncodingError
        If the attribute holds a string that is not UTF-8 (§3.4).
    InvalidFileError
        If the HDF5 library cannot read the attribute (a damaged file, or a type h5py cannot map).
    """
    try:
        return _check_text(read_attr(obj, name, None), name, filename, where)
    except UnicodeDecodeError as exc:
        raise _not_utf8(name, filename, where, exc.reason) from exc
    except H5MLError:
        raise
    except LIBRARY_ERRORS as exc:
        if not is_library_failure(exc) and not isinstance(exc, (TypeError, ValueError)):
            raise
        # TypeError, ValueError of our own decoding: a value that is no attribute type of the profile (§3.2)
        raise damaged_file(
            filename,
            where,
            f"reading its attribute {name!r}",
            exc,
            "the file is damaged or the attribute has a type outside the storage profile (§3.2)",
        ) from exc


def read_attributes(obj: Any, filename: str, where: str) -> dict[str, Any]:
    """Read every attribute of ``obj`` with :func:`read_attribute`, in the order HDF5 lists them (§4.6).

    Attribute names that are not UTF-8 are left out: no attribute of the
    specification has such a name, and readers ignore user attributes (§4.7).
    An attribute with a null dataspace, which holds no value, is None (JSON
    null, §4.6): a user attribute may have one (§3.7), and reading it never
    fails (SPEC §4.7-R2).

    Raises
    ------
    EncodingError, InvalidFileError
        As :func:`read_attribute`, for the first attribute that cannot be read;
        InvalidFileError also when the attribute names cannot be listed.
    """
    raw: list[bytes] = []
    try:
        h5py.h5a.iterate(obj.id, lambda attr_name, *_: raw.append(attr_name))
    except LIBRARY_ERRORS as exc:
        if not is_library_failure(exc):
            raise
        raise damaged_file(filename, where, "listing its attributes", exc) from exc
    names = [text for text in (_utf8_name(n) for n in raw) if text is not None]
    return {name: None if _is_null(obj, name) else read_attribute(obj, name, filename, where) for name in names}


def _is_null(obj: Any, name: str) -> bool:
    """Whether attribute ``name`` has a null dataspace (HDF5 ``H5S_NULL``): no value, exposed as None (§4.6, §4.7)."""
    try:
        return obj.attrs.get_id(name).shape is None
    except LIBRARY_ERRORS:  # read_attribute then reports the damage in words
        return False


def _utf8_name(raw: bytes | str) -> str | None:
    """An HDF5 name as ``str``; None when its bytes are not UTF-8 (such a name breaks §5.1)."""
    if isinstance(raw, str):
        return raw
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return None


def member_names(group: Any, filename: str, where: str, *, external: bool = False) -> list[str]:
    """The names of a group's members that can be splits or features, in HDF5's name order (§5.1, §5.2).

    Uses HDF5's own link iteration, which keeps names as bytes, so a name that
    is not UTF-8 cannot break the listing: such members are left out (their
    names break §5.1, E120; no ``str`` key could ask for them). Soft and
    user-defined links are left out too (§3.6, E115); external links only when
    ``external`` (the file was opened with ``allow_external=True``, §10.1).
    Reserved names (``_...``, §5.4) are kept: the caller skips them.

    Parameters
    ----------
    group
        An h5py group (or file).
    filename, where
        The file path and the group's HDF5 path, for messages.
    external
        Keep external links.

    Returns
    -------
    list of str
        Member names.

    Raises
    ------
    InvalidFileError
        If the HDF5 library cannot list the group's links (a damaged file).
    """
    return [name for name, followed in member_links(group, filename, where, external=external) if followed]


def member_links(group: Any, filename: str, where: str, *, external: bool = False) -> list[tuple[str, bool]]:
    """Every UTF-8-named member of a group, in HDF5's name order, with whether a reader follows its link.

    A reader follows hard links, and external links only when ``external``
    (§10.1); a soft or user-defined link (E115), or an external link
    otherwise (E110), is never followed (§3.6), but a reader that takes every
    member of a split refuses it rather than leave it out silently. The
    group's links are listed once (:func:`group_links`); names that are not
    UTF-8 are left out as in :func:`member_names`.

    Returns
    -------
    list of (str, bool)
        ``(name, followed)`` for each member.

    Raises
    ------
    InvalidFileError
        If the HDF5 library cannot list the group's links (a damaged file).
    """
    kinds = (h5py.h5l.TYPE_HARD, h5py.h5l.TYPE_EXTERNAL) if external else (h5py.h5l.TYPE_HARD,)
    named = ((_utf8_name(raw), kind in kinds) for raw, kind in group_links(group.id, filename, where))
    return [(name, followed) for name, followed in named if name is not None]


def group_links(gid: Any, filename: str, where: str) -> list[tuple[bytes, int]]:
    """Every link of a group as ``(name as bytes, h5py.h5l link type)``, in HDF5's name order; none followed.

    Parameters
    ----------
    gid
        The group's low-level id (``group.id``).
    filename, where
        The file path and the group's HDF5 path, for messages.

    Raises
    ------
    InvalidFileError
        If the HDF5 library cannot list the links (a damaged file).
    """
    links: list[tuple[bytes, int]] = []
    try:
        gid.links.iterate(lambda name, info: links.append((name, info.type)), info=True)
    except LIBRARY_ERRORS as exc:
        if not is_library_failure(exc):
            raise
        raise damaged_file(filename, where, "listing its members", exc) from exc
    return links


def unopenable_file(path: str, exc: BaseException, stream: BinaryIO | None = None) -> NotH5MLError:
    """The error for a file HDF5 cannot open at all: not HDF5, or HDF5 but damaged (§3.1, §4.1).

    One message for every program that opens a file it did not write (the
    reader, the writer in append mode).

    Parameters
    ----------
    path
        The file.
    exc
        What h5py raised when opening it.
    stream
        The file's bytes when it is not a local path (a file at a URL, :mod:`h5ml.model.remote`); None opens ``path``.

    Returns
    -------
    NotH5MLError
        Raise it ``from exc``.
    """
    try:
        if stream is not None:
            signed = spec.superblock_version(stream) is not None
        else:
            with builtins.open(path, "rb") as local:
                signed = spec.superblock_version(local) is not None
    except OSError:
        signed = True  # unreadable here too: say what HDF5 said
    if not signed:
        return NotH5MLError(
            f"{path}: not an HDF5 file (no HDF5 signature at offset 0, 512, 1024, ...); this is not an h5ml file: "
            "convert it with 'h5ml convert' (h5ml.ingest)",
            path=path,
        )
    reason = " ".join(str(exc).split())  # HDF5's message, on one line
    return NotH5MLError(
        f"{path}: cannot be opened as HDF5 ({reason}); it is damaged or cut short; {validate_advice(path)}",
        path=path,
    )
