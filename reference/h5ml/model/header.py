"""What a file and its features must declare before anything else is read (§1.2-§1.5, §4.1, §4.4, §6.1).

At the root: format, version, extensions, completion (:func:`check_header`);
on each split: its number of samples (:func:`declared_num_samples`); on each
feature: its encoding and the version of that encoding
(:func:`declared_encoding`).

One check for every program that opens an existing h5ml file: the reader
(:func:`h5ml.open`) and the writer in append mode (``Writer(mode="a")``).
Both raise the same errors for the same file:

==========================================  ==================================
the root says                               error
==========================================  ==================================
``format`` unreadable or not ``"h5ml"``     :class:`~h5ml.errors.NotH5MLError` (§4.1)
``format_version`` not ``MAJOR.MINOR``      :class:`~h5ml.errors.InvalidFileError` (§1.2)
another MAJOR version                       :class:`~h5ml.errors.UnsupportedVersionError` (§1.3)
``must_understand`` not a list of strings   :class:`~h5ml.errors.InvalidFileError` (§1.5)
an extension this package does not know     :class:`~h5ml.errors.UnknownExtensionError` (§1.5)
``complete`` is not 1                       :class:`~h5ml.errors.IncompleteFileError` (§4.4)
==========================================  ==================================

A feature declares ``encoding`` and ``encoding_version`` (§6.1): an encoding
this package does not implement is an :class:`~h5ml.errors.EncodingError`
(the reader leaves such a feature out of a split, §1.4.1); another MAJOR of
an encoding it does implement is an
:class:`~h5ml.errors.UnsupportedEncodingVersionError` (SPEC §6.1-R7: the
reader refuses to read every feature of the split while it is there, never
leaving it out silently); the writer does not extend a file that has either.
Attributes of the wrong type are an :class:`~h5ml.errors.InvalidFileError`.

A newer MINOR version is accepted (§1.4). ``must_understand`` is read as the
reader reads every attribute (:func:`h5ml.model.hdf5.read_attribute`): a
1-D array of strings, or one scalar string naming a single extension.
"""

from __future__ import annotations

from typing import Any, Final, Literal

from h5ml import spec
from h5ml.errors import (
    H5MLError,
    IncompleteFileError,
    InvalidFileError,
    NotH5MLError,
    UnknownEncodingError,
    UnknownExtensionError,
    UnsupportedEncodingVersionError,
    UnsupportedVersionError,
)
from h5ml.model.failures import validate_advice
from h5ml.model.hdf5 import read_attribute

__all__ = ["Purpose", "check_header", "declared_encoding", "declared_num_samples"]

#: What the caller will do with the file, for the messages: read it, or append to it.
Purpose = Literal["read", "append to"]
#: Who speaks in the messages, by purpose.
_IMPLEMENTER: Final = {"read": "this reader", "append to": "this writer"}


def check_header(f: Any, path: str, purpose: Purpose = "read") -> tuple[int, int]:
    """Check the root attributes that decide whether a file can be used at all (§1.2-§1.5, §4.1, §4.4).

    Parameters
    ----------
    f
        The open ``h5py.File``.
    path
        The file's path, for messages.
    purpose
        ``"read"`` (the reader) or ``"append to"`` (the writer in mode ``"a"``).

    Returns
    -------
    tuple of int
        The file's ``format_version`` as ``(major, minor)``.

    Raises
    ------
    NotH5MLError
        If ``format`` cannot be read or is not ``"h5ml"`` (§4.1).
    InvalidFileError
        If ``format_version`` is missing or not ``MAJOR.MINOR`` (§1.2), or
        ``must_understand`` is not a list of extension names (§1.5); also when
        the HDF5 library fails on an attribute (a damaged file).
    UnsupportedVersionError
        If the MAJOR version is not this package's (§1.3).
    UnknownExtensionError
        If ``must_understand`` names an extension this package does not implement (§1.5).
    IncompleteFileError
        If the completion marker ``complete = 1`` is missing (§4.4).
    EncodingError
        If one of these attributes holds a string that is not UTF-8 (§3.4).
    """
    try:
        fmt = read_attribute(f, "format", path, "/")
    except H5MLError as exc:
        raise NotH5MLError(
            f"{path}: the root attribute 'format' cannot be read ({exc}); this is not a readable h5ml file (§4.1)",
            path=path,
            hdf5_path="/",
        ) from exc
    if fmt != spec.FORMAT_NAME:  # SPEC §4.1-R2: refuse a file without format = "h5ml", saying it is not h5ml
        said = "is missing" if fmt is None else f"is {fmt!r}, not {spec.FORMAT_NAME!r}"
        raise NotH5MLError(
            f"{path}: the root attribute 'format' {said}: this HDF5 file is not an h5ml file (§4.1); convert it "
            f"with 'h5ml convert' to {purpose} it as one",
            path=path,
            hdf5_path="/",
        )
    version = _version(f, path)
    # SPEC §1.3-R2: another MAJOR is refused, naming the file's version and the one implemented; SPEC §1.4-R1: a newer MINOR is read
    if version[0] != spec.FORMAT_VERSION[0]:
        advice = "upgrade h5ml" if version[0] > spec.FORMAT_VERSION[0] else "convert the file with its own tools"
        raise UnsupportedVersionError(
            f"{path}: file is h5ml {version[0]}.{version[1]}; {_IMPLEMENTER[purpose]} implements "
            f"{spec.FORMAT_VERSION_STRING}; {advice} (§1.3)",
            path=path,
            hdf5_path="/",
        )
    # SPEC §1.5-R1: refuse a file that requires an extension this package does not implement, naming it
    unknown = [name for name in _extensions(f, path) if name not in spec.KNOWN_EXTENSIONS]
    if unknown:
        raise UnknownExtensionError(
            f"{path}: the file requires the extension(s) {', '.join(map(repr, unknown))} (root attribute "
            f"'must_understand', §1.5), which {_IMPLEMENTER[purpose]} (h5ml {spec.FORMAT_VERSION_STRING}) does "
            f"not understand; use an implementation that does to {purpose} it",
            path=path,
            hdf5_path="/",
        )
    if read_attribute(f, "complete", path, "/") != 1:  # SPEC §4.4-R4: refuse an incomplete file
        raise IncompleteFileError(
            f"{path}: the completion marker (root attribute 'complete' = 1, §4.4) is missing: the writer did not "
            f"finish this file (it stopped or is still writing), so it cannot be used to {purpose}; write the "
            "file again",
            path=path,
            hdf5_path="/",
        )
    return version


def _version(f: Any, path: str) -> tuple[int, int]:
    """``format_version`` as ``(major, minor)`` (§1.2)."""
    text = read_attribute(f, "format_version", path, "/")
    try:
        return spec.parse_version(text) if isinstance(text, str) else _no_version(text, path)
    except ValueError:
        return _no_version(text, path)


def _no_version(text: Any, path: str) -> tuple[int, int]:
    said = "is missing" if text is None else f"is {text!r:.80}"
    raise InvalidFileError(
        f"{path}: the root attribute 'format_version' {said}; it must be a MAJOR.MINOR string such as "
        f"'1.0' (§1.2); {validate_advice(path)}",
        path=path,
        hdf5_path="/",
    )


def _extensions(f: Any, path: str) -> list[str]:
    """The names of ``must_understand`` (§1.5): a 1-D array of strings, or one scalar string; none when absent."""
    value = read_attribute(f, "must_understand", path, "/")
    names = [] if value is None else [value] if isinstance(value, str) else value
    if not isinstance(names, list) or not all(isinstance(name, str) for name in names):
        raise InvalidFileError(
            f"{path}: the root attribute 'must_understand' is {value!r:.80}; it must be a 1-D array of extension "
            f"names (strings) (§1.5); {validate_advice(path)}",
            path=path,
            hdf5_path="/",
        )
    return names


def declared_encoding(node: Any, filename: str, where: str, purpose: Purpose = "read") -> str | None:
    """The encoding a split member declares, once its version is one this package implements (§6.1).

    Parameters
    ----------
    node
        The h5py group or dataset of the member.
    filename, where
        The file and the member's HDF5 path, for messages.
    purpose
        ``"read"`` (the reader) or ``"append to"`` (the writer in mode ``"a"``), for messages.

    Returns
    -------
    str or None
        The ``encoding`` attribute, one of ``spec.ENCODINGS``; None when the
        member has none (it is not a feature, §5.5).

    Raises
    ------
    InvalidFileError
        If ``encoding`` or ``encoding_version`` is not a string, or the version is not ``MAJOR.MINOR``.
    UnknownEncodingError
        If the encoding is not one this package implements (§6.1); an
        :class:`~h5ml.errors.EncodingError`.
    UnsupportedEncodingVersionError
        If its ``encoding_version`` has a MAJOR this package does not implement
        (SPEC §6.1-R7); the message names both versions.
    """
    encoding = read_attribute(node, "encoding", filename, where)
    if encoding is None:
        return None
    if isinstance(encoding, str) and encoding not in spec.ENCODINGS:
        # SPEC §1.4.1-R1, §1.4.1-R4: an unknown encoding is told before any other attribute is looked at: in a
        # newer-MINOR file the feature is an unknown object (the caller ignores it), whatever its encoding_version
        raise UnknownEncodingError(
            f"{filename}: {where} uses encoding {encoding!r}, which {_IMPLEMENTER[purpose]} (h5ml "
            f"{spec.FORMAT_VERSION_STRING}) does not implement; known encodings: {', '.join(spec.ENCODINGS)}; "
            f"upgrade h5ml to {purpose} it",
            path=filename,
            hdf5_path=where,
        )
    version_text = read_attribute(node, "encoding_version", filename, where)
    if not isinstance(encoding, str) or not isinstance(version_text, str | None):
        raise InvalidFileError(
            f"{filename}: {where}: 'encoding' and 'encoding_version' must be strings (§6.1); "
            f"{validate_advice(filename)}",
            path=filename,
            hdf5_path=where,
        )
    if version_text is not None:
        try:
            major, _minor = spec.parse_version(version_text)
        except ValueError as exc:
            raise InvalidFileError(
                f"{filename}: {where}: encoding_version {version_text!r} is not MAJOR.MINOR (§6.1); "
                f"{validate_advice(filename)}",
                path=filename,
                hdf5_path=where,
            ) from exc
        # SPEC §6.1-R6: a higher MINOR of MAJOR 1 is read, what it adds ignored; SPEC §6.1-R7: another
        # MAJOR is refused, naming both versions (a subclass of EncodingError, so that a split never
        # leaves the feature out silently, see h5ml.reader.split)
        if major != spec.parse_version(spec.ENCODING_VERSION)[0]:
            raise UnsupportedEncodingVersionError(
                f"{filename}: {where} is {encoding} encoding {version_text}; {_IMPLEMENTER[purpose]} implements "
                f"{encoding} {spec.ENCODING_VERSION} (§6.1); upgrade h5ml to {purpose} this feature",
                path=filename,
                hdf5_path=where,
            )
    return encoding


def declared_num_samples(group: Any, filename: str, where: str) -> int:
    """A split's ``num_samples`` attribute (§5.3): every feature of the split holds that many samples.

    Parameters
    ----------
    group
        The split's h5py group.
    filename, where
        The file and the split's HDF5 path, for messages.

    Returns
    -------
    int
        The number of samples, >= 0.

    Raises
    ------
    InvalidFileError
        If the attribute is missing or not an integer >= 0 (a bool is not one).
    """
    value = read_attribute(group, "num_samples", filename, where)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise InvalidFileError(
            f"{filename}: split {where} has num_samples = {value!r:.80}; it must be an integer >= 0 (§5.3); "
            f"{validate_advice(filename)}",
            path=filename,
            hdf5_path=where,
        )
    return value
