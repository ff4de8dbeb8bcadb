"""Append mode: the splits and features of the file a writer extends, and the options they pass on (§4.4, §5, §6.1).

:func:`load_existing` opens the copy of an existing file for writing: it
checks its header, its storage and its features' declarations as the reader
does (:mod:`h5ml.model.header`, :mod:`h5ml.model.storage`),
removes the attributes only a finished file carries (``complete``,
``fingerprint``, §4.4, §8.3), applies the caller's metadata, and reads its
splits (:class:`~h5ml.writer.sinks.SplitSink` with their features still only
stored) and the options of its features (:func:`inherited_spec` gives them
to the feature of that name of a new split).
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

import h5py

from h5ml import spec
from h5ml.errors import EncodingError
from h5ml.model.hdf5 import member_names
from h5ml.model.header import check_header, declared_encoding, declared_num_samples
from h5ml.model.layout import stored_spec
from h5ml.model.storage import check_storage
from h5ml.model.values import FeatureSpec
from h5ml.writer.root import update_root, write_root
from h5ml.writer.sinks import SplitSink

__all__ = ["FINISH_ATTRS", "Existing", "inherited_spec", "load_existing", "start_file"]

#: Root attributes that only a finished file carries (§4.4, §8.3).
FINISH_ATTRS: Final = ("complete", "fingerprint")


@dataclass
class Existing:
    """What an existing file holds for the writer that extends it.

    Attributes
    ----------
    splits
        Its splits by name, their features not loaded yet
        (:meth:`~h5ml.writer.sinks.SplitSink.load_stored` loads them when the
        split grows).
    inherited
        The options of its features by name (the first split's that has
        it), for the feature of that name of a new split (see
        :func:`inherited_spec`).
    """

    splits: dict[str, SplitSink]
    inherited: dict[str, FeatureSpec]


def load_existing(h5file: h5py.File, metadata: Mapping[str, Any] | None, default_name: str, path: str) -> Existing:
    """Prepare the copy of an existing file for appending: header, unfinished state, metadata, splits (§4.4, §5).

    Parameters
    ----------
    h5file
        The copy of the existing file, open ``"r+"``.
    metadata
        Root attributes to set (see :func:`h5ml.writer.root.update_root`), or ``None``.
    default_name
        The name used to check ``metadata`` when the file has none (the target's stem).
    path
        The target, for error messages.

    Returns
    -------
    Existing
        The file's splits and the options of its features.

    Raises
    ------
    NotH5MLError, InvalidFileError, UnsupportedVersionError, UnknownExtensionError, IncompleteFileError
        If the header is refused as :func:`h5ml.open` refuses it.
    MetadataError
        If ``metadata`` is invalid.
    ForbiddenStorageError
        If the file holds an external link, external raw storage or a virtual dataset (§3.6, §10.1).
    InvalidFileError
        If a split has no valid ``num_samples`` (§5.3), or a feature's ``encoding`` attributes are malformed.
    EncodingError
        If a feature has an encoding, or a MAJOR version of one, that this writer does not implement (§6.1).
    """
    check_header(h5file, path, "append to")  # the reader's checks and errors (§1.3, §1.5, §4.1, §4.4)
    check_storage(h5file, path)  # no external link, external storage or virtual dataset is read or copied (§3.6)
    # From here on the copy is unfinished: it must not look complete (SPEC §4.4-R3: complete is deleted and
    # flushed before any other change; finish_file writes it again last).
    for key in FINISH_ATTRS:
        if key in h5file.attrs:
            del h5file.attrs[key]
    h5file.flush()
    if metadata:
        update_root(h5file, metadata, default_name, path)
    existing = Existing({}, {})
    for split_name in member_names(h5file, path, "/"):
        group = h5file[split_name]
        if split_name.startswith(spec.RESERVED_PREFIX) or not isinstance(group, h5py.Group):
            continue
        num = declared_num_samples(group, path, f"/{split_name}")
        names = member_names(group, path, f"/{split_name}")
        stored = {k: group[k] for k in names if not k.startswith(spec.RESERVED_PREFIX)}
        existing.splits[split_name] = SplitSink(
            split_name, group, num_samples=num, frozen=bool(stored), stored=stored, from_file=True
        )
        for name, obj in stored.items():
            # as the reader decides: not a feature, or an encoding (version) this writer cannot extend (§6.1)
            encoding = declared_encoding(obj, path, f"/{split_name}/{name}", "append to")
            if name in existing.inherited or encoding is None:
                continue
            with contextlib.suppress(EncodingError, KeyError, TypeError, ValueError):
                existing.inherited[name] = stored_spec(encoding, obj)
    return existing


def start_file(
    h5file: h5py.File, append: bool, metadata: Mapping[str, Any] | None, default_name: str, path: str
) -> Existing:
    """The root of the file a writer starts: the existing file's splits and features (append), or a new root.

    Parameters are those of :func:`load_existing`; ``append`` is false for a new file, whose root
    attributes are written (:func:`h5ml.writer.root.write_root`) and which has nothing to extend.
    """
    if append:
        return load_existing(h5file, metadata, default_name, path)
    write_root(h5file, metadata, default_name, path)
    return Existing({}, {})


def inherited_spec(inherited: Mapping[str, FeatureSpec], name: str, given: FeatureSpec) -> FeatureSpec:
    """``given`` over the options of the file's feature ``name`` (append mode; the first split's that has it).

    A new split's feature gets the encoding, dtype, class names and
    attributes of the feature of that name the file already has (§6.1),
    whatever its first batch looks like; ``features=`` and
    :meth:`~h5ml.writer.streaming.Writer.add_feature` (``given``) override
    them field by field. When ``given`` names another encoding, only the
    descriptive attributes (role, description, units, sample rate) are taken
    from the file.

    Parameters
    ----------
    inherited
        The options of the file's features by name (:attr:`Existing.inherited`;
        empty for a new file).
    name
        The feature name.
    given
        The options given for the feature in this writer.

    Returns
    -------
    FeatureSpec
        The options the feature is created with.
    """
    base = inherited.get(name)
    if base is None:
        return given
    if given.encoding is not None and given.encoding != base.encoding:
        base = FeatureSpec(
            role=base.role,
            description=base.description,
            units=base.units,
            sample_rate=base.sample_rate,
        )
    return base.merged(given)
