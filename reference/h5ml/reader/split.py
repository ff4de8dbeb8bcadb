"""One split of an open dataset: :class:`Split`, its attributes, its features and multi-feature reads (§5).

A split is a root group whose features hold the same number of samples
(``num_samples``, §5.3). It lists its readable features in the file's order
(§5.2; members starting with ``"_"`` are reserved, §5.4; committed
datatypes are unknown objects, ignored, §5.5), keeps the reason for each
feature it cannot read (:attr:`Split.unreadable`), and reads several features
at once (``split[idx]``, :meth:`Split.read`). A group or dataset without an
``encoding`` attribute is a feature that cannot be read (E130, SPEC §5.2-R2),
not an unknown object, in a file of any MINOR, as the validator says.

Taking "every feature" (:meth:`Split.every_feature`, ``read(features=None)``)
never leaves out silently a feature that the file holds and this reader cannot
read: a damaged one or one without ``encoding`` (an
:class:`~h5ml.errors.InvalidFileError`), one of an
encoding MAJOR it does not implement (SPEC §6.1-R7, an
:class:`~h5ml.errors.UnsupportedEncodingVersionError`), one whose values it
cannot decode, or one of an unknown encoding in a file whose MINOR is not newer
(E131, an :class:`~h5ml.errors.UnknownEncodingError`). Only a feature of an
unknown encoding in a newer-MINOR file is left out (an unknown object,
SPEC §1.4.1-R1). The root's splits, and the root members that cannot be read
as splits, are listed by :func:`list_splits` (§5.1, §3.6-R2).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import h5py
import numpy as np

from h5ml import spec
from h5ml.errors import FeatureNotFoundError, H5MLError, InvalidFileError, UnknownEncodingError
from h5ml.model.failures import LIBRARY_ERRORS, damaged_file, is_library_failure, unfollowed_link, validate_advice
from h5ml.model.hdf5 import member_links, read_attribute, read_attributes
from h5ml.model.header import declared_num_samples
from h5ml.reader.feature import Feature
from h5ml.reader.plan import Indices, check_index, normalize_indices
from h5ml.reader.structure import open_feature

if TYPE_CHECKING:  # pragma: no cover
    from h5ml.reader.dataset import Dataset

__all__ = ["ITER_BLOCK_ROWS", "Split", "list_splits"]

#: Samples read at once by ``iter(split)``: one read per feature per block, then one dict per sample.
ITER_BLOCK_ROWS = 64


def _refused(error: H5MLError, newer_minor: bool) -> bool:
    """Whether a feature that failed to open with ``error`` must stop a read of every feature.

    Every feature this reader cannot read does, since leaving it out would
    drop data silently: a damaged one, one without ``encoding`` (E130,
    SPEC §5.2-R2, in every MINOR), one with ``logical_dtype = "bool"`` on
    values that are not uint8 (E117), one of a forbidden enumeration (E113),
    one of an encoding MAJOR this reader
    does not implement (SPEC §6.1-R7), one whose values it cannot decode (a
    dense feature of a compound type), one of an unknown encoding in a file
    whose MINOR is not newer (E131). The one exception is an unknown encoding
    in a file of a newer MINOR: an unknown object, ignored (SPEC §1.4.1-R1).
    """
    return not (newer_minor and isinstance(error, UnknownEncodingError))


class Split:
    """One split of a dataset: features with the same number of samples (§5).

    Obtain it as ``dataset["train"]``. ``split["image"]`` returns a
    :class:`h5ml.reader.feature.Feature`; ``split[idx]`` and :meth:`read` return a
    dict feature name -> values (see :mod:`h5ml.reader.feature` for value types).
    Iterating yields one dict per sample. Pickles by path (C02).
    """

    def __init__(self, dataset: Dataset, name: str) -> None:
        self._dataset = dataset
        self._name = name
        self._reset()

    def _reset(self) -> None:
        self._features: dict[str, Feature] | None = None
        self._all: tuple[tuple[str, Feature], ...] | None = None
        self._skipped: dict[str, H5MLError] = {}
        #: The first feature that failed to open and must not be left out (see _refused), or None.
        self._refusing: str | None = None
        self._attrs: dict[str, Any] | None = None
        self._attr_values: dict[str, Any] = {}
        self._num_samples: int | None = None
        #: The ``(name, Feature)`` pairs of the feature selections read so far, by their names (a read names
        #: the same features each time: the adapters' path looks them up once, not on every call).
        self._chosen: dict[tuple[str, ...], tuple[tuple[str, Feature], ...]] = {}

    def __getstate__(self) -> dict[str, Any]:
        return {"dataset": self._dataset, "name": self._name}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._dataset = state["dataset"]
        self._name = state["name"]
        self._reset()

    @property
    def name(self) -> str:
        """The split name (§5.1)."""
        return self._name

    @property
    def dataset(self) -> Dataset:
        """The dataset that holds the split."""
        return self._dataset

    def _group(self) -> h5py.Group:
        return self._dataset.h5_node("/" + self._name)

    @property
    def attrs(self) -> dict[str, Any]:
        """Every split attribute as Python values (§5.3), read once.

        Raises
        ------
        EncodingError
            If an attribute holds a string that is not UTF-8 (§3.4).
        InvalidFileError
            If the HDF5 library cannot read an attribute (a damaged file).
        """
        if self._attrs is None:
            self._attrs = read_attributes(self._group(), self._dataset.path, "/" + self._name)
        return dict(self._attrs)

    def _attr(self, name: str, types: tuple[type, ...], kind: str) -> Any:
        """Attribute ``name`` if it is one of ``types`` (never bool), None when absent; read when first asked for.

        Raises
        ------
        EncodingError
            If it is a string that is not UTF-8 (§3.4).
        InvalidFileError
            If it has another type (§5.3), or the HDF5 library cannot read it.
        """
        if name in self._attr_values:
            value = self._attr_values[name]
        else:
            path = self._dataset.path
            value = self._attr_values[name] = read_attribute(self._group(), name, path, "/" + self._name)
        if value is None or (isinstance(value, types) and not isinstance(value, bool)):
            return value
        path = self._dataset.path
        raise InvalidFileError(
            f"{path}: attribute {name!r} of split /{self._name} is {value!r:.80}, not {kind} (§5.3); "
            f"{validate_advice(path)}",
            path=path,
            hdf5_path="/" + self._name,
        )

    @property
    def num_samples(self) -> int:
        """The split's ``num_samples`` attribute (§5.3): every feature holds that many samples.

        Raises
        ------
        InvalidFileError
            If the attribute is missing or not a non-negative integer.
        """
        if self._num_samples is None:
            self._num_samples = declared_num_samples(self._group(), self._dataset.path, "/" + self._name)
        return self._num_samples

    @property
    def description(self) -> str | None:
        """The split description (§5.3), or None.

        Raises
        ------
        EncodingError
            If it is not valid UTF-8 (§3.4): raised here only, the samples stay readable.
        InvalidFileError
            If it is not a string (§5.3).
        """
        value: str | None = self._attr("description", (str,), "a string")
        return value

    @property
    def shuffle_seed(self) -> int | None:
        """The seed the writer shuffled the samples with (§5.3, §7.6), or None.

        Raises
        ------
        InvalidFileError
            If it is not an integer (§5.3).
        """
        value = self._attr("shuffle_seed", (int,), "an integer")
        return None if value is None else int(value)

    def __len__(self) -> int:
        return self.num_samples

    @property
    def features(self) -> Mapping[str, Feature]:
        """The readable features, in the file's order (§5.2): name -> :class:`Feature`.

        Members whose names start with ``"_"`` or are not UTF-8, and
        committed datatypes, are ignored (§5.1, §5.4, §5.5); a member that is
        a soft or user-defined link is not followed but listed in
        :attr:`unreadable` (§3.6, E115). A
        group or dataset without an ``encoding`` attribute (E130,
        SPEC §5.2-R2), a feature of an encoding this reader does not
        implement or of an encoding MAJOR it does not implement (§6.1), with
        a broken structure, with a number of samples other than
        :attr:`num_samples` (§5.3), or whose HDF5 objects the library cannot
        open is not listed here but in :attr:`unreadable`; asking for it by
        name raises the reason, and so does :meth:`every_feature` for each
        but an unknown encoding (SPEC §6.1-R7).

        Raises
        ------
        InvalidFileError
            If :attr:`num_samples` is invalid (no feature can be checked
            against it), or the HDF5 library cannot list the split's members.
        """
        if self._features is None:
            path = self._dataset.path
            count = self.num_samples
            group = self._group()
            found: dict[str, Feature] = {}
            skipped: dict[str, H5MLError] = {}
            links = member_links(group, path, "/" + self._name, external=self._dataset.allow_external)
            for name, followed in links:
                if name.startswith(spec.RESERVED_PREFIX):  # SPEC §5.4-R2: reserved objects are ignored
                    continue
                where = f"/{self._name}/{name}"
                if not followed:
                    # SPEC §3.6-R2 (E115): a member reached through a soft or user-defined link is never followed,
                    # and a read of every feature refuses it rather than leave it out (SPEC §5.2-R2)
                    skipped[name] = unfollowed_link(path, where)
                    continue
                try:
                    # SPEC §1.4.1-R1: an unknown encoding of a newer MINOR is left out; SPEC §5.2-R2: no encoding is E130
                    feature = open_feature(self._dataset, self._name, name, self._dataset.h5_node(where), count)
                except H5MLError as exc:
                    skipped[name] = exc
                    continue
                except LIBRARY_ERRORS as exc:
                    if not is_library_failure(exc):
                        raise
                    skipped[name] = damaged_file(path, where, "opening this object", exc)
                    continue
                if feature is not None:  # None: a committed datatype, an unknown object (SPEC §5.5-R1: ignored)
                    found[name] = feature
            self._features, self._skipped = found, skipped
            newer_minor = self._dataset.format_version[1] > spec.FORMAT_VERSION[1]
            self._refusing = next((n for n, e in skipped.items() if _refused(e, newer_minor)), None)
            self._all = tuple(found.items())
        return MappingProxyType(self._features)

    @property
    def unreadable(self) -> Mapping[str, H5MLError]:
        """The split's features that this reader cannot read, in the file's order: name -> the reason.

        The features :attr:`features` leaves out (see there): a damaged one
        (:class:`~h5ml.errors.InvalidFileError`), one of an encoding MAJOR
        this reader does not implement
        (:class:`~h5ml.errors.UnsupportedEncodingVersionError`, §6.1), one of
        an encoding it does not know (:class:`~h5ml.errors.EncodingError`),
        a group or dataset without ``encoding`` (E130, SPEC §5.2-R2), one
        with ``logical_dtype = "bool"`` on values that are not uint8 (E117),
        one of a forbidden enumeration (E113, an
        :class:`~h5ml.errors.EncodingError`).

        Raises
        ------
        InvalidFileError
            As :attr:`features`.
        """
        self.features  # noqa: B018 - finds the features and fills self._skipped
        return MappingProxyType(self._skipped)

    def every_feature(self) -> tuple[str, ...]:
        """The names of every feature, for a caller that takes them all: refused if one cannot be read.

        SPEC §6.1-R7: a feature of an encoding MAJOR this reader does not
        implement is refused, never silently left out; so is a damaged one,
        one whose values this reader cannot decode, and one of an unknown
        encoding in a file whose MINOR is not newer (E131). Only a feature of
        an unknown encoding in a newer-MINOR file (an unknown object,
        SPEC §1.4.1-R1) is left out.

        Returns
        -------
        tuple of str
            The names of :attr:`features`, in the file's order.

        Raises
        ------
        UnsupportedEncodingVersionError
            If a feature has an ``encoding_version`` of another MAJOR (§6.1):
            the message names the feature, the file, both versions, and the
            other features to read by name.
        UnknownEncodingError
            If a feature's ``encoding`` is unknown and the file's MINOR is not
            newer than this reader's (E131); the message is as above.
        EncodingError
            If this reader cannot decode a feature's values (a dense feature of
            a compound type, §3.2); the message is as above.
        InvalidFileError
            If a feature is damaged (broken structure, wrong number of
            samples), has no ``encoding`` (E130, SPEC §5.2-R2) or has
            ``logical_dtype = "bool"`` on values that are not uint8 (E117);
            the message is as above. Or as :attr:`features`.
        """
        features = self.features
        if self._refusing is None:
            return tuple(features)
        name = self._refusing
        error = self._skipped[name]
        others = list(features)
        choice = (
            f"or read the other features by name: features={others!r} ({' '.join(f'--feature {n}' for n in others)})"
            if others
            else "the split has no other feature to read"
        )
        raise type(error)(
            f"{error.message}; the split {self._name!r} cannot be read whole while feature {name!r} is there; {choice}",
            path=error.path,
            hdf5_path=error.hdf5_path,
        ) from error

    def feature(self, name: str) -> Feature:
        """Return the feature ``name`` (§5.2).

        Raises
        ------
        FeatureNotFoundError
            If the split has no such feature (the message lists the available ones).
        EncodingError, InvalidFileError
            If the feature exists but this reader cannot read it.
        """
        features = self.features
        if name in features:
            return features[name]
        if name in self._skipped:
            raise self._skipped[name]
        path = self._dataset.path
        available = ", ".join(repr(n) for n in features) or "none"
        raise FeatureNotFoundError(
            f"{path}: split {self._name!r} has no feature {name!r}; available features: {available}",
            path=path,
            hdf5_path=f"/{self._name}/{name}",
        )

    def __getitem__(self, key: str | Indices) -> Any:
        """``split["name"]`` -> :class:`Feature`; ``split[idx]`` -> :meth:`read` of every feature."""
        if type(key) is int and self._all is not None and self._num_samples is not None and self._refusing is None:
            check_index(key, self._num_samples)  # the per-sample path of a DataLoader, as read(key)
            return {name: feature.read(key) for name, feature in self._all}
        if isinstance(key, str):
            return self.feature(key)
        return self.read(key)

    def __contains__(self, name: object) -> bool:
        return name in self.features

    def __iter__(self) -> Iterator[dict[str, Any]]:
        """Yield every sample as ``{feature: value}``, the values of ``split[i]``, read in blocks of rows.

        Each block of :data:`ITER_BLOCK_ROWS` samples is one read per feature
        (not one HDF5 call per sample); dense values are views of the block's
        array (writeable, one per sample row), categorical codes Python ints
        as ``read(i)`` gives them.
        """
        count = self.num_samples
        if not count:
            return
        categorical = [name for name, feature in self.features.items() if feature.encoding == "categorical"]
        for start in range(0, count, ITER_BLOCK_ROWS):
            block = self.read(slice(start, min(count, start + ITER_BLOCK_ROWS)))
            for name in categorical:
                block[name] = block[name].tolist()  # read(i) gives a Python int
            for j in range(min(count, start + ITER_BLOCK_ROWS) - start):
                yield {name: values[j] for name, values in block.items()}

    def read(self, indices: Indices, features: Iterable[str] | str | None = None) -> dict[str, Any]:
        """Read samples of several features (§5, §6).

        Parameters
        ----------
        indices
            An int (one sample per feature), a slice, a sequence or 1-D integer
            array in any order with duplicates and negative indices, or a mask.
        features
            Feature names to read; None for every readable feature.

        Returns
        -------
        dict
            Feature name -> values, in the order of ``features`` (see
            :mod:`h5ml.reader.feature` for the value types).

        Raises
        ------
        IndexError
            If an index is outside ``[-num_samples, num_samples)``.
        FeatureNotFoundError
            If a requested feature does not exist.
        InvalidFileError
            If ``features`` is None and a feature of the split is damaged
            (broken structure, wrong number of samples): name the readable
            features explicitly to read them anyway. Features of an encoding
            this reader does not know (a newer MINOR, §1.4) are left out.
        UnsupportedEncodingVersionError
            If ``features`` is None and a feature of the split has an
            ``encoding_version`` of another MAJOR (SPEC §6.1-R7): never left
            out silently; name the other features to read them.

        Notes
        -----
        An int (the per-sample path of a PyTorch ``DataLoader``) costs about
        the sum of one single-sample read per feature: no read plan is made.
        """
        if features is None:
            chosen = self._all
            if chosen is None:
                self.features  # noqa: B018 - finds the features and fills self._all
                chosen = self._all or ()
        else:
            key = (features,) if isinstance(features, str) else tuple(features)
            found = self._chosen.get(key)
            if found is None:
                found = tuple((n, self.feature(n)) for n in key)  # raises for an unknown or unreadable one
                self._chosen[key] = found
            chosen = found
        # One clear IndexError, against the split's num_samples, before any read.
        count = self._num_samples if self._num_samples is not None else self.num_samples
        rows = None
        if type(indices) is int or isinstance(indices, np.integer):  # not bool: type(True) is bool
            check_index(indices, count)
        elif not isinstance(indices, slice):
            rows, scalar = normalize_indices(indices, count)
            if scalar:
                rows = None
        if features is None and self._refusing is not None:
            self.every_feature()  # raises: a refused feature is never silently left out (SPEC §6.1-R7)
        if rows is not None:  # each feature gets the checked int64 rows, and checks them no more (§5.3: N rows each)
            return {name: feature.read_checked(rows) for name, feature in chosen}
        return {name: feature.read(indices) for name, feature in chosen}

    def __repr__(self) -> str:
        try:
            feats = ", ".join(f"{n} ({f.encoding})" for n, f in self.features.items())
            return f"<h5ml.Split {self._name!r} of {self._dataset.path!r}: {self.num_samples} samples; {feats}>"
        except H5MLError as exc:
            return f"<h5ml.Split {self._name!r} of {self._dataset.path!r} (invalid: {exc})>"


def list_splits(dataset: Dataset) -> tuple[dict[str, Split], dict[str, H5MLError]]:
    """The root's splits, and the root members that cannot be read as splits with the reason (§5.1, §3.6-R2).

    Parameters
    ----------
    dataset
        The open dataset (:attr:`h5ml.reader.dataset.Dataset.splits` calls this once).

    Returns
    -------
    splits : dict of str to Split
        The root groups that are splits (names not starting with ``"_"``, §5.4), in the file's order.
    broken : dict of str to H5MLError
        The root members that cannot be read as splits (a soft link, E115; a damaged object, E145), with the reason.
    """
    path = dataset.path
    found: dict[str, Split] = {}
    broken: dict[str, H5MLError] = {}
    for name, followed in member_links(dataset.h5file, path, "/", external=dataset.allow_external):
        if name.startswith(spec.RESERVED_PREFIX):  # SPEC §5.4-R2: reserved objects are ignored
            continue
        if not followed:
            # SPEC §3.6-R2 (E115): a split reached through a soft link is never followed, and a caller
            # of every split (every_split) refuses it rather than leave it out
            broken[name] = unfollowed_link(path, "/" + name)
            continue
        try:
            node = dataset.h5_node("/" + name)
        except LIBRARY_ERRORS as exc:
            if not is_library_failure(exc):
                raise
            broken[name] = damaged_file(path, "/" + name, "opening this root object", exc)
            continue
        if isinstance(node, h5py.Group):
            found[name] = Split(dataset, name)
    return found, broken
