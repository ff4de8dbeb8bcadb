"""The root attributes a writer stores: checked metadata written to the file's root group (§4.2, §4.3, §4.5, §4.7).

The metadata a caller gives (to :class:`~h5ml.writer.streaming.Writer`, to
:func:`~h5ml.writer.inmemory.write`, or later with
:meth:`~h5ml.writer.streaming.Writer.update_metadata`) is checked as a whole
by :func:`h5ml.model.new_root.new_root_metadata` before any of it is stored
(:func:`check_metadata` checks its type when the writer is created):

- :func:`write_root`: a new file gets every checked attribute, the defaults
  (``format``, ``format_version``, ``created``, ``writer``,
  ``must_understand``) included;
- :func:`update_root`: an existing or unfinished file gets only the keys the
  caller gave; the others keep their values.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import h5py

from h5ml.errors import MetadataError
from h5ml.model.new_root import new_root_metadata
from h5ml.spec.attrs import read_attr, write_attr

__all__ = ["check_metadata", "update_root", "write_root"]


def check_metadata(metadata: Any, path: str) -> None:
    """Refuse root metadata that is neither ``None`` nor a mapping of root attributes (§4.2).

    Raises
    ------
    MetadataError
        If ``metadata`` is another type.
    """
    if metadata is not None and not isinstance(metadata, Mapping):
        raise MetadataError(
            f"{path}: metadata must be a dict of root attributes (§4.2), got a {type(metadata).__name__}",
            path=path,
            hdf5_path="/",
        )


def _checked_root(metadata: Mapping[str, Any], default_name: str, path: str) -> tuple[dict[str, Any], list[str]]:
    """Check root metadata with :func:`new_root_metadata`; return it and the keys the caller gave (§4.2)."""
    bad = [key for key in metadata if not isinstance(key, str)]
    if bad:
        raise MetadataError(
            f"{path}: root attribute names must be str, got {bad[:5]!r}",
            problems=[f"attribute name {key!r} is not a str" for key in bad],
            path=path,
            hdf5_path="/",
        )
    fields = dict(metadata)
    name = fields.pop("name", default_name)
    checked = new_root_metadata(name, **fields)
    return checked, ["name", *fields]


def _store_root_attr(h5file: h5py.File, key: str, value: Any, path: str) -> None:
    """Write one checked root attribute; an error HDF5 still raises becomes a MetadataError (§4.3, §4.5)."""
    try:
        write_attr(h5file, key, value)
    except (OSError, ValueError, TypeError, OverflowError) as exc:
        raise MetadataError(
            f"{path}: root attribute {key!r} cannot be stored in HDF5 ({exc}); change or remove it",
            problems=[f"/{key}: {exc}"],
            path=path,
            hdf5_path="/",
        ) from None


def write_root(h5file: h5py.File, metadata: Mapping[str, Any] | None, default_name: str, path: str) -> None:
    """Write the root attributes of a new file: the checked ``metadata`` with the defaults (§4.2).

    Parameters
    ----------
    h5file
        The new file, open for writing.
    metadata
        Root metadata (``name`` and optional fields, see
        :func:`h5ml.model.new_root.new_root_metadata`), or ``None``.
    default_name
        The ``name`` when ``metadata`` has none (the target's stem).
    path
        The file, for error messages.

    Raises
    ------
    MetadataError
        If a key is not a ``str``, the metadata breaks the root schema, or an
        attribute cannot be stored in HDF5.
    """
    checked, _ = _checked_root(metadata or {}, default_name, path)
    for key, value in checked.items():
        if value is not None:
            _store_root_attr(h5file, key, value, path)


def update_root(h5file: h5py.File, metadata: Mapping[str, Any], default_name: str, path: str) -> None:
    """Set or replace the root attributes that ``metadata`` gives; the others keep their values (§4.2, §4.7).

    Parameters
    ----------
    h5file
        The file being written (new, or a copy of an existing one).
    metadata
        The attributes to set, checked as :func:`write_root` checks them
        (defined attributes by the root schema; other keys become user
        attributes).
    default_name
        The ``name`` to check the metadata with when it gives none (the
        file's current ``name``, else the target's stem).
    path
        The file, for error messages.

    Raises
    ------
    MetadataError
        If the metadata is invalid (nothing is changed then) or an attribute
        cannot be stored.
    """
    checked, given = _checked_root(metadata, read_attr(h5file, "name", default_name), path)
    for key in given:
        if key in checked and checked[key] is not None:
            _store_root_attr(h5file, key, checked[key], path)
