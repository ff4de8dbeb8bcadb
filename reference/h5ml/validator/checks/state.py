"""What the checks of one file share: :class:`FileState`, :class:`CheckedFeature` and HDF5 path helpers (§9).

The checks run in one pass over the file. What an early check learns and a
later one needs (the file's version and size, the declared filters, every
object reached by hard links, the datasets whose data lives elsewhere, the
features whose data the deep checks read, the fingerprints recomputed so far)
is kept on a :class:`FileState`. What the structural checks of a feature learn
for its deep checks is kept on a :class:`CheckedFeature`.

Objects are found by name: :meth:`FileState.member` asks the parent group for
the kind of one link, so that an object reachable under several names (hard
links are legal, §3.6) is checked under each name the specification defines.
Object addresses (:func:`address`) serve only to recognise an object already
seen (a dataset with external storage, a group already walked).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import h5py
from h5py import h5l, h5o

from h5ml.model.failures import is_library_failure

__all__ = ["CheckedFeature", "FileState", "Member", "address", "hdf5_path", "text"]


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


def address(obj: Any) -> tuple[int, int]:
    """Return the identity of an HDF5 object: its file number and object-header address (§3.6).

    Parameters
    ----------
    obj
        An h5py object (file, group, dataset, committed datatype) or a low-level object id.

    Returns
    -------
    tuple of int
        ``(fileno, addr)``: equal for two names hard-linked to the same object.

    Raises
    ------
    OSError, RuntimeError
        If HDF5 cannot read the object's header.
    """
    info = h5o.get_info(obj.id if isinstance(obj, h5py.HLObject) else obj)
    return int(info.fileno), int(info.addr)


@dataclass(frozen=True, slots=True)
class Member:
    """An object reached by a hard link, as :attr:`FileState.objects` records it (§3.6).

    Its path is not stored: a chain of nested groups of depth d has paths of
    total length d**2, so the checks build each path from its parent's when
    they reach the object, and open it by name from its parent group (opening
    it by its full path would make HDF5 walk every group above it: time d**2
    again).

    Attributes
    ----------
    parent
        The index in :attr:`FileState.objects` of the group that links to it, -1 for the root group.
    name
        The link's name, as bytes (a name that is not UTF-8 is kept as stored).
    """

    parent: int
    name: bytes


@dataclass
class FileState:
    """The state of the checks of one file (§9).

    Attributes
    ----------
    path
        The file's path as the validator was given it.
    deep
        Whether sample data is read (deep validation).
    file_size
        The file's size in bytes, to compare declared data sizes with (§10.4).
    format_version
        The file's ``format_version`` once the root checks have read it as a string (whatever its form, §9.3).
    newer_minor
        The file's MINOR is newer than this implementation's: unknown encodings and
        roles are info, not errors (§1.4.1).
    required_filters
        The filter ids the root attribute ``required_filters`` declares (§3.5).
    objects
        Every object reached by hard links, each object once, under the first
        name the link walk met, parents before their members (§3.2-§3.6).
    external
        The addresses of the datasets whose data lives outside the file (E111,
        E112): never read, under any name (§10.1).
    data_checks
        The features whose structure is sound, in check order: a deep validation
        reads their data once the metadata checks are done (§6, §8).
    computed
        ``(split, feature)`` -> the fingerprint recomputed from the feature's data (§8.2).
    all_fingerprints_computed
        False once a feature's fingerprint could not be recomputed: the file
        fingerprint is then not checked (§8.3).
    storage_options
        For a file at a URL: the fsspec options it is opened with (:mod:`h5ml.validator.checks.url`).
    view
        The file is marked as a view file of a sharded dataset (root attribute ``view_of``, §12.6): it
        carries no fingerprints (its samples are the shards', which the index fingerprint identifies), so
        their absence is no W202.
    """

    path: str
    deep: bool
    file_size: int = 0
    format_version: str | None = None
    newer_minor: bool = False
    required_filters: frozenset[int] = frozenset()
    objects: list[Member] = field(default_factory=list)
    external: set[tuple[int, int]] = field(default_factory=set)
    data_checks: list[CheckedFeature] = field(default_factory=list)
    computed: dict[tuple[str, str], str] = field(default_factory=dict)
    all_fingerprints_computed: bool = True
    storage_options: dict[str, Any] | None = None
    view: bool = False

    def member(self, group: Any, parent: str, name: str | bytes) -> tuple[str, Any]:
        """Return the path and object of a hard-linked member, or ``(path, None)`` for another link kind (§3.6).

        The link's kind is asked of ``group`` itself, by name: a member is found
        under every name it has, whatever other names reach the same object.

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
            not a hard link (it is never followed; :func:`h5ml.validator.checks.storage.check_links`
            reports it).

        Raises
        ------
        OSError
            If HDF5 cannot read the link or open the member's object header.
        """
        path = hdf5_path(parent, text(name))
        raw = name if isinstance(name, bytes) else name.encode("utf-8")
        try:
            if group.id.links.get_info(raw).type != h5l.TYPE_HARD:
                return path, None
            return path, group[name]
        except KeyError as exc:  # h5py's error for a link or an object header it cannot read
            if not is_library_failure(exc):
                raise  # a defect of the validator, not of the file
            raise OSError(f"cannot open {path}: {exc}") from exc


@dataclass
class CheckedFeature:
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
