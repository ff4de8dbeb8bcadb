"""Which reader a split member gets, after checking its structure (§5.3, §5.5, §6, §6.1-§6.6).

:func:`open_feature` reads only metadata (attributes, shapes, datatypes): the
``encoding`` and its ``encoding_version`` (§6.1), the members a group
encoding requires, the ranks and datatypes of each dataset (§6.2-§6.6) and
the number of samples against the split's ``num_samples`` (§5.3), once, so
that reads never meet a dataset of the wrong rank or type. It returns the
reader of :data:`FEATURE_CLASSES`, the one map from encoding to class.
"""

from __future__ import annotations

from typing import Any, Final

import h5py
import numpy as np

from h5ml import spec
from h5ml.errors import H5MLError, InvalidFileError
from h5ml.model.booleans import is_enum, is_uint8
from h5ml.model.failures import LIBRARY_ERRORS, damaged_file, is_library_failure, validate_advice
from h5ml.model.hdf5 import read_attribute
from h5ml.model.header import declared_encoding
from h5ml.reader.bytes import BytesFeature
from h5ml.reader.categorical import CategoricalFeature
from h5ml.reader.column import numeric_dtype
from h5ml.reader.dense import DenseFeature
from h5ml.reader.feature import Feature, NodeSource
from h5ml.reader.ragged import RaggedFeature
from h5ml.reader.strings import StringFeature

__all__ = ["FEATURE_CLASSES", "open_feature"]

#: Reader class of each encoding (§6).
FEATURE_CLASSES: Final[dict[str, type[Feature]]] = {
    cls.encoding: cls for cls in (DenseFeature, StringFeature, CategoricalFeature, RaggedFeature, BytesFeature)
}


def open_feature(
    source: NodeSource, split: str, name: str, node: Any, num_samples: int | None = None
) -> Feature | None:
    """Check a split member and return the reader of its encoding (§5.3, §6).

    Only metadata is read (attributes, shapes, datatypes): the structure the
    encoding requires is checked here, once, so that reads never meet a
    dataset of the wrong rank or type.

    Parameters
    ----------
    source
        The open dataset (see :class:`NodeSource`).
    split, name
        The split and the member name.
    node
        The h5py object at ``/split/name``.
    num_samples
        The split's ``num_samples`` (§5.3): the feature must hold exactly that
        many samples. None skips that check.

    Returns
    -------
    Feature or None
        The reader, or None when the member is neither a group nor a dataset
        (a committed datatype: an unknown object, ignored by readers, §5.5).

    Raises
    ------
    EncodingError
        If the encoding is not one this version defines, or its
        ``encoding_version`` has a MAJOR this reader does not implement (§6.1);
        if ``encoding`` is not UTF-8 (§3.4); if a dense or ragged feature's
        values are not numeric (§3.2).
    InvalidFileError
        If the member is a group or dataset without an ``encoding`` attribute
        (a feature without encoding, SPEC §5.2-R2, E130); if
        ``logical_dtype = "bool"`` is on values that are not uint8 (§3.3-R3,
        E117); if the HDF5 objects do not have the structure the encoding requires
        (members, ranks, datatypes, §6), the feature does not hold
        ``num_samples`` samples (§5.3), or the HDF5 library fails on them (a
        damaged file).
    """
    where = f"/{split}/{name}"
    try:
        return _open_feature(source, split, name, node, num_samples)
    except H5MLError:
        raise
    except LIBRARY_ERRORS as exc:
        if not is_library_failure(exc):
            raise
        raise damaged_file(source.path, where, "reading the structure of this feature", exc) from exc


class _Structure:
    """Checks of one feature's HDF5 objects (§6), each failure an InvalidFileError naming the object."""

    def __init__(self, source: NodeSource, where: str, encoding: str) -> None:
        self.source = source
        self.where = where
        self.encoding = encoding

    def invalid(self, what: str, member: str = "") -> InvalidFileError:
        filename = self.source.path
        where = f"{self.where}/{member}" if member else self.where
        return InvalidFileError(
            f"{filename}: {where}: {what}; the reader cannot read this {self.encoding} feature; "
            f"{validate_advice(filename)}",
            path=filename,
            hdf5_path=where,
        )

    def dataset(self, member: str, ranks: tuple[int, ...] | None = None) -> h5py.Dataset:
        """The member dataset ("" for the feature itself), of one of ``ranks`` (any rank >= 1 when None).

        Members are opened by name, so a member the encoding does not define is
        never opened (SPEC §5.5-R1, SPEC §6.1-R6).
        """
        if member:
            # SPEC §3.6-R2 (E115): a component reached through a soft link is refused, never followed: it would
            # read another dataset of the file (issue 14, item 5)
            link = self.source.h5_node(self.where).get(member, getlink=True)
            if not isinstance(link, h5py.HardLink | h5py.ExternalLink):
                kind = "a soft link" if isinstance(link, h5py.SoftLink) else "not a hard link"
                raise self.invalid(f"is {kind}; a feature's components are datasets of its group (§3.6, E115)", member)
        node = self.source.h5_node(f"{self.where}/{member}" if member else self.where)
        if not isinstance(node, h5py.Dataset):
            raise self.invalid("is not a dataset", member)
        shape = node.shape
        if shape is None:
            raise self.invalid("has a null dataspace (no shape); it must hold one entry per sample", member)
        if ranks is None and len(shape) < 1:
            raise self.invalid("is a scalar dataset; a feature has a first (sample) axis (§5.3)", member)
        if ranks is not None and len(shape) not in ranks:
            want = " or ".join(f"{r}-D" for r in ranks)
            raise self.invalid(f"has shape {shape}; it must be {want} (§6)", member)
        return node

    def dtype(self, node: h5py.Dataset, member: str) -> np.dtype[Any]:
        try:
            dtype: np.dtype[Any] = node.dtype
        except (TypeError, ValueError) as exc:
            raise self.invalid(f"has an HDF5 datatype outside the storage profile ({exc}) (§3.2)", member) from exc
        return dtype

    def integers(self, node: h5py.Dataset, member: str) -> None:
        if self.dtype(node, member).kind not in "iu":
            raise self.invalid(f"has dtype {node.dtype}; it must hold integers (§6)", member)

    def strings(self, node: h5py.Dataset, member: str) -> None:
        if h5py.check_string_dtype(self.dtype(node, member)) is None:
            raise self.invalid(f"has dtype {node.dtype}; it must hold strings (§3.4)", member)

    def numbers(self, node: h5py.Dataset, member: str) -> None:
        numeric_dtype(node, self.source.path, self.dtype(node, member))

    def booleans(self, feature: Any, values: h5py.Dataset, member: str) -> None:
        """Refuse ``logical_dtype = "bool"`` on values that are not uint8 (E117): never cast to booleans."""
        if read_attribute(feature, "logical_dtype", self.source.path, self.where) != "bool":
            return
        tid = values.id.get_type()
        # SPEC §3.3-R3: logical_dtype 'bool' marks uint8 values only; other numbers are never cast to booleans
        if not is_uint8(tid):
            stored = "an HDF5 enumeration" if is_enum(tid) else str(values.dtype)
            raise self.invalid(
                f"has logical_dtype 'bool' on values of type {stored}, but logical_dtype 'bool' marks uint8 values "
                "0/1 only (§3.3, E117), so the reader does not turn these numbers into booleans; store the values "
                "as uint8 0/1, or remove the attribute logical_dtype to read them as numbers",
                member,
            )


def _open_feature(source: NodeSource, split: str, name: str, node: Any, num_samples: int | None) -> Feature | None:
    """:func:`open_feature` without the mapping of library errors."""
    where = f"/{split}/{name}"
    filename = source.path
    encoding = declared_encoding(node, filename, where)
    if encoding is None:
        if not isinstance(node, h5py.Group | h5py.Dataset):
            return None  # SPEC §5.5-R1: neither a group nor a dataset (a committed datatype): an unknown object
        # SPEC §5.2-R2: a split member that does not start with "_" is a feature; without encoding it is E130
        raise InvalidFileError(
            f"{filename}: {where}: this {'group' if isinstance(node, h5py.Group) else 'dataset'} is a feature of "
            f"split /{split} (§5.2) but has no 'encoding' attribute (§6.1, E130), so the reader cannot tell how to "
            f"decode it; add the attributes encoding and encoding_version, or rename it to start with '_' if it is "
            f"not a feature; {validate_advice(filename)}",
            path=filename,
            hdf5_path=where,
        )
    cls = FEATURE_CLASSES[encoding]
    kind = spec.ENCODINGS[encoding]
    if (kind == "dataset") != isinstance(node, h5py.Dataset):
        raise InvalidFileError(
            f"{filename}: {where} has encoding {encoding!r}, which is stored as a {kind}, but it is not one (§6); "
            f"{validate_advice(filename)}",
            path=filename,
            hdf5_path=where,
        )
    check = _Structure(source, where, encoding)
    if kind == "group":
        required, _optional = spec.ENCODING_COMPONENTS[encoding]
        missing = [m for m in required if m not in node]
        if missing:
            raise check.invalid(f"lacks the dataset(s) {', '.join(missing)} (§6)")
    count = _sample_count(check, encoding, node)
    if num_samples is not None and count != num_samples:
        raise check.invalid(
            f"holds {count} samples but split /{split} has num_samples = {num_samples}; every feature of a split "
            "holds exactly num_samples samples (§5.3)"
        )
    return cls(source, split, name)


def _sample_count(check: _Structure, encoding: str, node: Any) -> int:
    """Check the ranks and datatypes of the feature's datasets (§6.2-§6.6) and return its number of samples."""
    if encoding == "dense":
        dset = check.dataset("")
        check.numbers(dset, "")
        check.booleans(node, dset, "")
        return int(dset.shape[0])
    if encoding == "string":
        dset = check.dataset("", (1,))
        check.strings(dset, "")
        return int(dset.shape[0])
    if encoding == "categorical":
        codes = check.dataset("codes", (1,))
        check.integers(codes, "codes")
        check.strings(check.dataset("class_names", (1,)), "class_names")
        return int(codes.shape[0])
    offsets = check.dataset("offsets", (1,))
    check.integers(offsets, "offsets")
    if offsets.shape[0] < 1:
        raise check.invalid("is empty; offsets hold num_samples + 1 entries, starting at 0 (§6.3)", "offsets")
    count = int(offsets.shape[0]) - 1
    if encoding == "bytes":
        values = check.dataset("values", (1,))
        if check.dtype(values, "values") != np.dtype(np.uint8):
            raise check.invalid(f"has dtype {values.dtype}; bytes values are uint8 (§6.6)", "values")
        return count
    values = check.dataset("values")
    check.numbers(values, "values")
    check.booleans(node, values, "values")
    if "shapes" in node:
        shapes = check.dataset("shapes", (2,))
        check.integers(shapes, "shapes")
        if int(shapes.shape[0]) != count or len(values.shape) != 1:
            raise check.invalid(
                f"has shape {shapes.shape} beside values of shape {values.shape} and {count + 1} offsets; with "
                "shapes, values are 1-D and shapes is (num_samples, D) (§6.3)",
                "shapes",
            )
    return count
