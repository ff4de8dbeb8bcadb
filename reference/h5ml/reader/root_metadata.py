"""The root metadata of a file being read, with the reader's errors (§3.2, §4.2, §8.3, §9).

:func:`read_root_metadata` (``h5ml.Dataset.metadata``) parses the root attributes once with
:class:`h5ml.model.metadata.RootMetadata`; this module turns what can go
wrong on a damaged or hostile file into the reader's errors: the library
failing (:func:`h5ml.model.failures.damaged_file`), and an attribute whose
value the storage profile does not allow (§3.2), which the attribute
conversion reports as a bare ``TypeError`` (found by the reader fuzzing of
issue 14: an opaque root attribute). :func:`read_root_fingerprint`
(``h5ml.Dataset.fingerprint``) reads the file fingerprint (§8.3).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import h5py

from h5ml.errors import H5MLError, InvalidFileError
from h5ml.model.failures import LIBRARY_ERRORS, damaged_file, is_library_failure, validate_advice
from h5ml.model.hdf5 import read_attribute
from h5ml.spec.attrs import to_json_value

if TYPE_CHECKING:  # pragma: no cover
    from h5ml.model.metadata import RootMetadata

__all__ = ["read_root_fingerprint", "read_root_metadata"]


def read_root_metadata(f: h5py.File, path: str) -> RootMetadata:
    """The root attributes of an open h5ml file, parsed and checked (§4.2), for ``Dataset.metadata``.

    Parameters
    ----------
    f
        The file, open for reading.
    path
        Its path, as the messages name it.

    Returns
    -------
    RootMetadata
        As :meth:`RootMetadata.from_file` returns it.

    Raises
    ------
    MetadataError
        If the document of the root attributes breaks the schema (§4.2).
    InvalidFileError
        If the HDF5 library cannot read them (a damaged file), or one holds a
        value outside the storage profile (opaque, compound, complex, a
        reference: §3.2), named in the message.
    """
    from h5ml.model.metadata import RootMetadata

    try:
        return RootMetadata.from_file(f)
    except H5MLError:
        raise
    except LIBRARY_ERRORS as exc:
        if isinstance(exc, TypeError) and not is_library_failure(exc):
            raise _outside_profile(f, path, exc) from exc
        if not is_library_failure(exc):
            raise
        raise damaged_file(path, "/", "reading the root attributes", exc) from exc


def _outside_profile(f: h5py.File, path: str, exc: TypeError) -> InvalidFileError:
    """The error for root attributes whose values the storage profile does not allow (§3.2; issue 14 fuzzing)."""
    names = []
    for name in f.attrs:
        try:
            to_json_value(f.attrs[name])
        except TypeError:
            names.append(name)
    return InvalidFileError(
        f"{path}: the root attribute(s) {', '.join(map(repr, names))} hold a value outside the storage profile "
        f"({exc}), so the root metadata cannot be read; the splits still read: {validate_advice(path)}",
        path=path,
        hdf5_path="/",
    )


def read_root_fingerprint(f: h5py.File, path: str) -> str | None:
    """The file fingerprint ``sha256:...`` of an open h5ml file (§8.3), or None when it has none.

    Parameters
    ----------
    f
        The file, open for reading.
    path
        Its path, as the messages name it.

    Raises
    ------
    EncodingError, InvalidFileError
        If the attribute is not a UTF-8 string (§3.4, §8.3).
    """
    value = read_attribute(f, "fingerprint", path, "/")
    if value is None or isinstance(value, str):
        return value
    raise InvalidFileError(
        f"{path}: the root attribute 'fingerprint' is {value!r:.80}, not a string (§8.3); {validate_advice(path)}",
        path=path,
        hdf5_path="/",
    )
