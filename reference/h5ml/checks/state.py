"""What the checks of one file share: :class:`FileState`, :class:`Feature` and HDF5 path helpers (§9).

The checks run in one pass over the file. What an early check learns and a
later one needs (the file's version, the declared filters, the kind of every
link, the datasets whose data lives elsewhere, the fingerprints recomputed so
far) is kept on a :class:`FileState`. What the structural checks of a feature
learn for its deep checks is kept on a :class:`Feature`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final

import h5py

__all__ = ["LIBRARY_ERRORS", "Feature", "FileState", "hdf5_path", "text"]

#: Errors the HDF5 library raises through h5py on a damaged file.
LIBRARY_ERRORS: Final = (OSError, RuntimeError)


def text(name: str | bytes) -> str:
    """Return a link or attribute name as text; h5py gives bytes for names that are not UTF-8 (§3.4).

    Parameters
    ----------
    name
        The name as h5py gives it.

    Returns
    -------
    str
        The name; bytes that are not UTF-8 become U+FFFD.
    """
    return name if isinstance(name, str) else name.decode("utf-8", "replace")


def hdf5_path(parent: str, name: str) -> str:
    """Return the HDF5 path of member ``name`` of the group at ``parent`` (``"/"`` for the root).

    Parameters
    ----------
    parent
        The group's HDF5 path.
    name
        The member's name.

    Returns
    -------
    str
        ``parent/name`` without a doubled slash.
    """
    return f"{parent.rstrip('/')}/{name}"


@dataclass
class FileState:
    """The state of the checks of one file (§9).

    Attributes
    ----------
    path
        The file's path as the validator was given it.
    deep
        Whether sample data is read (deep validation).
    format_version
        The file's ``format_version`` once the root checks have read it as ``MAJOR.MINOR``.
    newer_minor
        The file's MINOR is newer than this implementation's: unknown encodings and
        roles are info, not errors (§1.4.1).
    required_filters
        The filter ids the root attribute ``required_filters`` declares (§3.5).
    link_kind
        HDF5 path -> ``"hard"`` or ``"other"`` (external, soft, user-defined) for every link (§3.6).
    raw_paths
        HDF5 path -> the path's bytes, to open names that are not UTF-8.
    external
        The datasets whose data lives outside the file (E111, E112): never read (§10.1).
    computed
        ``(split, feature)`` -> the fingerprint recomputed from the feature's data (§8.2).
    all_fingerprints_computed
        False once a feature's fingerprint could not be recomputed: the file
        fingerprint is then not checked (§8.3).
    """

    path: str
    deep: bool
    format_version: str | None = None
    newer_minor: bool = False
    required_filters: frozenset[int] = frozenset()
    link_kind: dict[str, str] = field(default_factory=dict)
    raw_paths: dict[str, bytes] = field(default_factory=dict)
    external: set[str] = field(default_factory=set)
    computed: dict[tuple[str, str], str] = field(default_factory=dict)
    all_fingerprints_computed: bool = True

    def member(self, group: Any, parent: str, name: str | bytes) -> tuple[str, Any]:
        """Return the path and object of a hard-linked member, or ``(path, None)`` for another link kind (§3.6).

        Parameters
        ----------
        group
            The open h5py group.
        parent
            The group's HDF5 path.
        name
            The member's name as h5py gives it (bytes when it is not UTF-8).

        Returns
        -------
        tuple
            The member's HDF5 path and its h5py object, or None when the link is
            not a hard link (it is never followed).

        Raises
        ------
        OSError
            If HDF5 cannot open the member's object header.
        """
        path = hdf5_path(parent, text(name))
        if self.link_kind.get(path) != "hard":
            return path, None
        try:
            return path, group[name]
        except KeyError as exc:  # h5py's error for an object header it cannot read
            raise OSError(f"cannot open {path}: {exc}") from exc


@dataclass
class Feature:
    """What the structural checks learned about a feature, for the deep checks (§6, §8).

    Attributes
    ----------
    split, name
        The feature's split and name.
    path
        The feature's HDF5 path.
    encoding
        Its encoding, one of :data:`h5ml.spec.ENCODINGS`.
    obj
        The feature's h5py dataset or group.
    logical_bool
        Whether it carries ``logical_dtype = "bool"`` (§3.3).
    fingerprint
        Its stored fingerprint when well formed, else None.
    members
        The datasets of the encoding by member name (``""`` for a dataset encoding).
    class_names
        The class names of a categorical feature, once read and decoded.
    """

    split: str
    name: str
    path: str
    encoding: str
    obj: Any
    logical_bool: bool
    fingerprint: str | None
    members: dict[str, h5py.Dataset] = field(default_factory=dict)
    class_names: list[str] | None = None
