"""What ``h5ml inspect`` shows: a JSON-able summary of a file's splits, features and storage.

:func:`summarize` reads the structure through the reader (:func:`h5ml.open`:
encodings, logical dtypes, sample shapes, class names, feature attributes) and
the storage through h5py (chunk shapes, filters, bytes on disk, §3.5, §7),
and returns plain dataclasses; the command line only renders them.

Sizes: ``stored_bytes`` is what the feature's datasets take in the file
(``H5Dget_storage_size``, summed over the components of a group encoding);
``logical_bytes`` is what their fixed-size elements take in memory
(elements x item size). Variable-length strings keep their text in the
file's global heap, which neither figure counts, so a string feature (and the
``class_names`` of a categorical) has no ``logical_bytes`` share and no
compression ratio of its own: ``compression_ratio`` is ``logical / stored``
over the fixed-size components only, None when they store nothing.

Virtual datasets (a view file, SPEC §12.6) store no samples in the file:
their ``H5Dget_storage_size`` is 0. A virtual component counts instead the
bytes its source datasets take in their shards (each source dataset once),
and the feature records how many mappings its virtual components have
(``virtual_sources``). The reader checked the mapping when it opened the
view (§12.6-R2, §12.6-R3): the sources are the present shards the index
lists, in the view's folder. When a source cannot be opened (a remote view),
the stored size is unknown (``stored_bytes`` None), never a wrong 0.

Never-written storage (§3.5.1, E146): HDF5 returns fill values for it, so a
figure read from such a component (class counts from ``codes``, lengths from
``offsets``, sample shapes from ``shapes``, class names) would describe fill
values, not data. Each component is checked with
:func:`h5ml.model.allocation.unallocated_components`, the reader's and the
validator's check; what was never written is listed in
``FeatureSummary.never_written`` and the figures it would give are None.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import h5py
import numpy as np

from h5ml import spec
from h5ml.ingest.report import SKIPPED_ATTR
from h5ml.model.allocation import unallocated_components
from h5ml.model.tree import FilterInfo, dataset_filters
from h5ml.tools.dump import attribute_json, dtype_name

__all__ = [
    "CARD_FIELDS",
    "RATIO_WORDS",
    "FeatureSummary",
    "FileSummary",
    "FilterSummary",
    "SplitSummary",
    "card_text",
    "share_text",
    "summarize",
]

#: Codes of a categorical feature read at a time to count its classes (8 MiB of int64 at most).
_CODES_BLOCK: Final = 1 << 20

#: One HDF5 filter of a dataset's pipeline (§3.5): the class of :mod:`h5ml.model.tree`, under the name
#: this module has always given it.
FilterSummary = FilterInfo


@dataclass(frozen=True)
class FeatureSummary:
    """One feature of one split (§6).

    Attributes
    ----------
    name, encoding
        The feature name (§5.2) and its encoding (§6.1).
    dtype
        The Appendix B type name: numpy name of the values, ``str``, ``bytes``, or the codes' type.
    num_samples
        Samples stored (the first axis, §5.3).
    shape
        ``[num_samples, *sample_shape]`` when every axis has a fixed length
        (dense, string, categorical); None for ragged and bytes.
    inner_shape
        Ragged without ``shapes``: the fixed axes after the varying one; else ``[]``.
    length_min, length_max
        Ragged and bytes: the smallest and largest per-sample length along
        the varying axis (element count for ragged with ``shapes``, bytes for
        bytes); None otherwise or when there are no samples.
    shape_min, shape_max
        Ragged with ``shapes`` (§6.3): per-axis minimum and maximum of the sample shapes.
    chunks
        Chunk shape of the main dataset (values / codes / the dataset itself), None when contiguous (§7).
    filters
        The main dataset's filter pipeline, in order (§3.5).
    stored_bytes
        Bytes on disk of every dataset of the feature; for a virtual one (a
        view file, §12.6) those of its source datasets in the shards; None
        when a source cannot be opened.
    virtual_sources
        Mappings of the feature's virtual datasets (one per shard with rows
        and virtual component, §12.6); 0 in a file without virtual datasets.
    logical_bytes
        In-memory bytes of its fixed-size components (see the module docstring).
    compression_ratio
        ``logical_bytes / stored bytes`` of the fixed-size components, or None.
    role, description, units, media_type
        Feature attributes (§6.1, §6.6), None when absent.
    num_classes
        Number of class names of a categorical feature (§6.5), else None.
    sample_rate
        Samples per second (Hz) of the feature's values (§6.1), None when absent.
    stats
        The statistics the file stores (§6.7): ``stats_count``, ``stats_min``,
        ``stats_max``, ``stats_mean``, ``stats_std`` (those present, as JSON
        values of :attr:`h5ml.reader.feature.Feature.statistics`: the count an
        int, the others binary64 floats whatever their stored type, SPEC
        §6.7-R4); ``{}`` when none.
    class_names
        The class names of a categorical feature (§6.5), else None.
    class_counts
        Samples of each class, in the order of ``class_names`` (counted from
        the codes, read in blocks), else None.
    missing_count
        Samples of a categorical feature with code -1 (missing, §6.5), else None.
    never_written
        Component name (``""`` for a dataset feature) -> what of it was never
        written (E146, §3.5.1); ``{}`` when all was. The figures such a
        component would give (lengths, sample shapes, class names, class
        counts) are None: they would be fill values.
    """

    name: str
    encoding: str
    dtype: str
    num_samples: int
    shape: list[int] | None
    inner_shape: list[int]
    length_min: int | None
    length_max: int | None
    shape_min: list[int] | None
    shape_max: list[int] | None
    chunks: list[int] | None
    filters: list[FilterSummary]
    stored_bytes: int | None
    logical_bytes: int | None
    compression_ratio: float | None
    role: str | None
    description: str | None
    units: str | None
    media_type: str | None
    num_classes: int | None
    sample_rate: float | None = None
    stats: dict[str, Any] = field(default_factory=dict)
    class_names: list[str] | None = None
    class_counts: list[int] | None = None
    missing_count: int | None = None
    never_written: dict[str, str] = field(default_factory=dict)
    virtual_sources: int = 0

    @property
    def compression(self) -> str | None:
        """The filter pipeline as text, such as ``"shuffle + deflate(4)"``; None without filters."""
        return " + ".join(f.label() for f in self.filters) or None

    @property
    def stored_share(self) -> float | None:
        """Stored / raw bytes of a compressed feature's fixed-size components (``0.42``), else None.

        The inverse of :attr:`compression_ratio`, shown by ``h5ml inspect`` and ``h5ml report`` alike as
        ``ratio stored / raw 42%`` (:func:`share_text`). None for an uncompressed feature (its raw / stored
        below 1 is chunk padding, not compression), and for a view's virtual datasets (§12.6: their
        chunks, filters and ratio are the sources').
        """
        if self.virtual_sources or self.logical_bytes is None or self.compression is None:
            return None
        return 1 / self.compression_ratio if self.compression_ratio else None


@dataclass(frozen=True)
class SplitSummary:
    """One split (§5.1, §5.3).

    Attributes
    ----------
    name, num_samples
        The split name and its ``num_samples``.
    description, shuffle_seed
        Optional split attributes (§5.3, §7.6), None when absent.
    features
        Its features, in file order.
    unreadable
        The split's features this reader cannot read, name -> the reason
        (:attr:`h5ml.reader.split.Split.unreadable`: damaged, of an encoding
        MAJOR it does not implement, SPEC §6.1-R7, or of an unknown
        encoding); listed, never left out silently. ``{}`` when none.
    """

    name: str
    num_samples: int
    description: str | None
    shuffle_seed: int | None
    features: list[FeatureSummary] = field(default_factory=list)
    unreadable: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class FileSummary:
    """A whole file: where it is, its format version, root metadata and splits (§4, §5).

    Attributes
    ----------
    path
        The file path as given.
    file_bytes
        Size of the file in bytes.
    format_version
        The root ``format_version`` (``"1.0"``).
    metadata
        Every root attribute as a JSON value (§4.6; non-finite floats as strings).
    splits
        The splits, in file order.
    skipped
        The source files a conversion skipped, as it recorded them in the
        root attribute ``h5ml-ingest:skipped`` (``{"path": ..., "reason":
        ...}`` each, §4.7); ``[]`` when it records none.
    unreadable_splits
        Root members that are not read as splits, name -> the reason
        (:attr:`h5ml.reader.dataset.Dataset.unreadable_splits`: damaged, or
        reached through a soft link, SPEC §3.6-R2).
    """

    path: str
    file_bytes: int
    format_version: str
    metadata: dict[str, Any]
    splits: list[SplitSummary]
    skipped: list[dict[str, Any]] = field(default_factory=list)
    unreadable_splits: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """Return the summary as JSON-able nested dicts and lists (features gain a ``compression`` text)."""
        document = dataclasses.asdict(self)
        for split_doc, split in zip(document["splits"], self.splits, strict=True):
            for feature_doc, feature in zip(split_doc["features"], split.features, strict=True):
                feature_doc["compression"] = feature.compression
        return document


#: The words before a :attr:`FeatureSummary.stored_share` wherever a tool shows it.
RATIO_WORDS: Final = "ratio stored / raw"


def share_text(share: float) -> str:
    """A :attr:`FeatureSummary.stored_share` as the tools show it: ``0.42`` -> ``"42%"``.

    Parameters
    ----------
    share
        Stored / raw bytes (> 0).

    Returns
    -------
    str
        The percentage, rounded to a whole number.
    """
    return f"{share:.0%}"


#: The root attributes of the dataset card (§4.2), in the order ``h5ml inspect`` and ``h5ml report`` show them.
CARD_FIELDS: Final = (
    "name",
    "description",
    "license",
    "citation",
    "creator",
    "created",
    "format_version",
    "writer",
    "fingerprint",
    "version",
    "homepage",
    "source",
    "keywords",
)


def card_text(value: Any) -> str:
    """A card field's JSON value (§4.6) as the tools show it, whole: an array's items joined by ``", "``.

    Parameters
    ----------
    value
        The value of one of :data:`CARD_FIELDS` (a string, or a list for ``keywords``).

    Returns
    -------
    str
        The text to show; nothing is cut, however long (a description, a BibTeX citation).
    """
    return ", ".join(str(v) for v in value) if isinstance(value, list) else str(value)


def _components(node: Any) -> list[h5py.Dataset]:
    if isinstance(node, h5py.Dataset):
        return [node]
    # reserved members (§5.4), such as the checksum datasets of §8.4, are not components
    return [node[k] for k in node if not k.startswith(spec.RESERVED_PREFIX) and isinstance(node.get(k), h5py.Dataset)]


def _source_bytes(dset: h5py.Dataset) -> int | None:
    """Bytes the source datasets of a virtual dataset take in their files (each once); None when one cannot be opened.

    Source file names are relative to the view's folder, with ``%%`` for
    ``%`` (SPEC §12.6-R2); the reader has checked that they are listed,
    present shards before this runs.
    """
    if dset.file.driver == "fileobj":  # a remote view (§11): no local folder, and never the working directory's
        return None
    folder = Path(str(dset.file.filename)).parent
    total = 0
    for source in {(m.file_name, m.dset_name) for m in dset.virtual_sources()}:
        path = folder / source[0].replace("%%", "%")
        try:
            with h5py.File(path, "r") as f:
                total += int(f[source[1]].id.get_storage_size())
        except (OSError, KeyError):  # remote view, or a source gone since open
            return None
    return total


def _sizes(node: Any) -> tuple[int | None, int | None, float | None, int]:
    """Return (stored bytes of all components, logical bytes and ratio of the fixed-size ones, virtual mappings).

    A virtual component (§12.6) counts its sources' stored bytes (:func:`_source_bytes`).
    """
    stored_all: int | None = 0
    logical: int | None = None
    stored_fixed: int | None = 0
    mappings = 0
    for dset in _components(node):
        stored: int | None
        if dset.is_virtual:
            mappings += len(dset.virtual_sources())
            stored = _source_bytes(dset)
        else:
            stored = int(dset.id.get_storage_size())
        stored_all = None if stored is None or stored_all is None else stored_all + stored
        if dset.dtype.kind == "O":  # variable-length strings: the text lives in the global heap
            continue
        logical = (logical or 0) + int(math.prod(dset.shape)) * int(dset.dtype.itemsize)
        stored_fixed = None if stored is None or stored_fixed is None else stored_fixed + stored
    ratio = logical / stored_fixed if logical is not None and stored_fixed else None
    return stored_all, logical, ratio, mappings


def _main_dataset(encoding: str, node: Any) -> h5py.Dataset:
    if isinstance(node, h5py.Dataset):
        return node
    return node["codes"] if encoding == "categorical" else node["values"]


def _feature(ds: Any, split: str, feature: Any) -> FeatureSummary:
    node = ds.h5_node(f"/{split}/{feature.name}")
    main = _main_dataset(feature.encoding, node)
    n = int(feature.num_samples)
    shape: list[int] | None = None
    inner: list[int] = []
    length_min = length_max = None
    shape_min = shape_max = None
    # SPEC §3.5.1-S1: no figure is read from storage that was never written (it would be fill values)
    unwritten = unallocated_components(node)
    has_shapes = feature.encoding == "ragged" and "shapes" in node
    if feature.encoding in ("ragged", "bytes"):
        # lengths come from the offsets; with shapes never written they would be shown as one axis they are not
        if not {"offsets", "shapes"} & unwritten.keys():
            lengths = np.asarray(feature.lengths())
            if lengths.size:
                length_min, length_max = int(lengths.min()), int(lengths.max())
        if has_shapes and "shapes" not in unwritten:
            shapes = np.asarray(node["shapes"][()], dtype=np.int64)
            if shapes.size:
                shape_min = [int(v) for v in shapes.min(axis=0)]
                shape_max = [int(v) for v in shapes.max(axis=0)]
        elif feature.encoding == "ragged" and not has_shapes:
            inner = [int(d) for d in main.shape[1:]]
    else:
        shape = [n, *(int(d) for d in feature.sample_shape)]
    stored, logical, ratio, mappings = _sizes(node)
    class_names = None if "class_names" in unwritten else feature.class_names
    counts = missing = None
    if class_names is not None and "codes" not in unwritten:
        counts, missing = _class_counts(main, len(class_names))
    return FeatureSummary(
        name=feature.name,
        encoding=feature.encoding,
        dtype=dtype_name(ds, feature),
        num_samples=n,
        shape=shape,
        inner_shape=inner,
        length_min=length_min,
        length_max=length_max,
        shape_min=shape_min,
        shape_max=shape_max,
        chunks=None if main.chunks is None else [int(c) for c in main.chunks],
        filters=dataset_filters(main),
        stored_bytes=stored,
        logical_bytes=logical,
        compression_ratio=ratio,
        role=feature.role,
        description=feature.description,
        units=feature.units,
        media_type=feature.media_type,
        num_classes=_num_classes(node, class_names),
        sample_rate=feature.sample_rate,
        stats={key: attribute_json(value) for key, value in feature.statistics.attributes().items()},
        class_names=None if class_names is None else list(class_names),
        class_counts=counts,
        missing_count=missing,
        virtual_sources=mappings,
        never_written={name: what.what for name, what in unwritten.items()},
    )


def _num_classes(node: Any, class_names: list[str] | None) -> int | None:
    """K of a categorical feature (§6.5): its class names, or their declared count when they were never written."""
    if class_names is not None:
        return len(class_names)
    if isinstance(node, h5py.Group) and isinstance(node.get("class_names"), h5py.Dataset):
        return int(node["class_names"].shape[0])
    return None


def _class_counts(codes: h5py.Dataset, num_classes: int) -> tuple[list[int], int]:
    """Samples per class code and with code -1 (missing), reading the codes in blocks (§6.5).

    Codes outside ``[-1, num_classes)`` (an invalid file, E141) are counted nowhere.
    """
    counts = np.zeros(num_classes, dtype=np.int64)
    missing = 0
    for start in range(0, int(codes.shape[0]), _CODES_BLOCK):
        block = np.asarray(codes[start : start + _CODES_BLOCK]).astype(np.int64)
        missing += int(np.count_nonzero(block == -1))
        valid = block[(block >= 0) & (block < num_classes)]
        counts += np.bincount(valid, minlength=num_classes)
    return [int(c) for c in counts], missing


def _skipped(value: Any) -> list[dict[str, Any]]:
    """The list of skipped files a conversion recorded (a JSON text, §4.7); ``[]`` when absent or unreadable."""
    if not isinstance(value, str):
        return []
    try:
        entries = json.loads(value)
    except ValueError:
        return [{"path": "?", "reason": f"the attribute {SKIPPED_ATTR!r} is not JSON: {value[:80]!r}"}]
    return [e for e in entries if isinstance(e, dict)] if isinstance(entries, list) else []


def _optional_int(value: Any) -> int | None:
    return int(value) if isinstance(value, (int, np.integer)) and not isinstance(value, bool) else None


def _file_bytes(ds: Any) -> int:
    """The size of the dataset's file: from the store for a URL, from the file system otherwise."""
    from h5ml.reader.remote import RemoteDataset

    return ds.size_bytes if isinstance(ds, RemoteDataset) else Path(ds.path).stat().st_size


def summarize(path: str | os.PathLike[str], storage_options: Mapping[str, Any] | None = None) -> FileSummary:
    """Summarize an h5ml file for ``h5ml inspect`` (§4-§7).

    Parameters
    ----------
    path
        The file, or its URL; opened with :func:`h5ml.open`, so a file the reader refuses
        is refused here too.
    storage_options
        For a URL: the fsspec file system's options (:func:`h5ml.open`).

    Returns
    -------
    FileSummary
        Splits and features in file order, with storage figures (see the
        module docstring) and every root attribute.

    Raises
    ------
    FileNotFoundError
        If ``path`` does not exist.
    H5MLError
        Whatever :func:`h5ml.open` raises (not h5ml, incomplete, newer MAJOR,
        forbidden storage, ...), or a feature the reader cannot open.
    """
    from h5ml.model.remote import is_url
    from h5ml.reader.opening import open_file
    from h5ml.reader.remote import open_location

    local = storage_options is None and not is_url(os.fspath(path))
    with open_file(path) if local else open_location(path, storage_options) as ds:
        splits = []
        for split_name, split in ds.splits.items():
            split_attrs = split.attrs
            description = split_attrs.get("description")
            splits.append(
                SplitSummary(
                    name=split_name,
                    num_samples=int(split.num_samples),
                    description=None if description is None else str(description),
                    shuffle_seed=_optional_int(split_attrs.get("shuffle_seed")),
                    features=[_feature(ds, split_name, feature) for feature in split.features.values()],
                    unreadable={name: str(error) for name, error in split.unreadable.items()},
                )
            )
        major, minor = ds.format_version
        return FileSummary(
            path=os.fspath(path),
            file_bytes=_file_bytes(ds),
            format_version=f"{major}.{minor}",
            metadata={key: attribute_json(value) for key, value in ds.attrs.items()},
            splits=splits,
            skipped=_skipped(ds.attrs.get(SKIPPED_ATTR)),
            unreadable_splits={name: str(error) for name, error in ds.unreadable_splits.items()},
        )
