"""What an HDF5 source holds, walked once: every group, dataset and attribute, checked (§3.6, §4.7, §10.1).

:func:`take_inventory` opens a source read-only and lists every object
under the root (:class:`Node`: path, kind, shape, dtype, chunks, filters,
attributes as plain values), never following a link. It refuses what h5ml
never reads from a file it did not write: external links, datasets with
external raw storage and virtual datasets (their bytes live in other files,
§3.6, §10.1), through the one check of :mod:`h5ml.model.storage` (the same
:class:`~h5ml.errors.ForbiddenStorageError` as :func:`h5ml.open`, and the
same opt-in ``allow_external=True``); soft links (a source's structure is
read as it is written, never through a link); and an h5ml file (nothing to
convert). It also tells a
MATLAB v7.3 MAT-file (its 512-byte user block starts with ``MATLAB 7.3
MAT-file``) and a Fuel ``H5PYDataset`` (its root attribute ``split``) from
a plain HDF5 file. The proposal (:mod:`h5ml.ingest.hdf5.propose`), the plan
check (:mod:`h5ml.ingest.hdf5.check`) and ``h5ml inspect`` read the
inventory; only the conversion itself reads sample values.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal

import h5py
import numpy as np

from h5ml.errors import FileLockedError, ForbiddenStorageError, IngestError
from h5ml.model.failures import LIBRARY_ERRORS
from h5ml.model.locking import open_foreign
from h5ml.model.storage import check_dataset_storage, check_link
from h5ml.model.tree import dataset_filters

__all__ = [
    "MATLAB_MAGIC",
    "MAX_NODES",
    "Inventory",
    "Node",
    "Unstorable",
    "check_source",
    "open_source",
    "plain_value",
    "take_inventory",
    "value_kind",
]

#: The first bytes of a MATLAB v7.3 MAT-file's user block.
MATLAB_MAGIC: Final = b"MATLAB 7.3 MAT-file"
#: Objects walked at most; a source with more is refused (say so rather than walk for hours).
MAX_NODES: Final = 2_000_000
#: The fields of Fuel's root ``split`` attribute.
_FUEL_FIELDS: Final = frozenset({"split", "source", "start", "stop"})


@dataclass(frozen=True)
class Node:
    """One group or dataset of a source.

    Attributes
    ----------
    path
        Its HDF5 path (``/train/x``).
    kind
        ``"group"`` or ``"dataset"``.
    shape, dtype, chunks
        The dataset's shape (None for a group and for a null dataspace),
        numpy dtype and chunk shape (None for a group, or a contiguous dataset's chunks).
    filters
        The dataset's filter names (``gzip``, ``shuffle``, ...).
    attrs
        Attribute name -> plain value (:func:`plain_value`).
    unwritten
        Some of the dataset's chunks (or its whole storage) were never
        written: those rows read as the fill value.
    """

    path: str
    kind: Literal["group", "dataset"]
    shape: tuple[int, ...] | None = None
    dtype: np.dtype[Any] | None = None
    chunks: tuple[int, ...] | None = None
    filters: tuple[str, ...] = ()
    attrs: dict[str, Any] = field(default_factory=dict)
    unwritten: bool = False

    @property
    def name(self) -> str:
        """The last component of the path."""
        return self.path.rsplit("/", 1)[-1]

    @property
    def matlab_class(self) -> str | None:
        """The MATLAB_class attribute (``double``, ``char``, ``cell``, ``struct``, ...), if any."""
        value = self.attrs.get("MATLAB_class")
        return value if isinstance(value, str) else None


@dataclass
class Inventory:
    """Every object of one source (:func:`take_inventory`).

    Attributes
    ----------
    source
        The file's path as given.
    kind
        ``"hdf5"``, ``"matlab"`` (MAT-file v7.3) or ``"fuel"`` (H5PYDataset).
    nodes
        HDF5 path -> :class:`Node`, the root ``"/"`` first, then in walk order.
    fuel_splits
        Fuel: ``(split, source dataset, start, stop)`` rows of the root ``split`` attribute.
    allow_external
        The source was walked with ``allow_external=True``: its external raw
        storage and virtual datasets are read (§10.1); later reads of it check nothing.
    """

    source: str
    kind: Literal["hdf5", "matlab", "fuel"]
    nodes: dict[str, Node]
    fuel_splits: list[tuple[str, str, int, int]] = field(default_factory=list)
    allow_external: bool = False

    _index: dict[str, list[Node]] | None = field(default=None, repr=False)

    def children(self, path: str) -> list[Node]:
        """The direct members of the group ``path``, in walk order."""
        if self._index is None:
            index: dict[str, list[Node]] = {}
            for p, node in self.nodes.items():
                if p != "/":
                    index.setdefault(p.rsplit("/", 1)[0] or "/", []).append(node)
            self._index = index
        return list(self._index.get(path if path == "/" else path.rstrip("/"), []))

    def datasets(self) -> list[Node]:
        """Every dataset."""
        return [n for n in self.nodes.values() if n.kind == "dataset"]


def check_source(source: str | os.PathLike[str]) -> Path:
    """The source's path, after refusing a missing file, a folder, or a file without the HDF5 signature.

    Parameters
    ----------
    source
        The path given.

    Returns
    -------
    pathlib.Path

    Raises
    ------
    FileNotFoundError
        If ``source`` does not exist.
    h5ml.IngestError
        If it is a directory or not an HDF5 file.
    """
    path = Path(source)
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file")
    if not path.is_file():
        raise IngestError(f"{path}: a directory, not an HDF5 file; give the path of an .h5/.mat file", path=str(path))
    if not h5py.is_hdf5(path):
        raise IngestError(
            f"{path}: not an HDF5 file (it has no HDF5 signature); give an .h5/.hdf5 file written by h5py or HDF5, "
            "or a MATLAB v7.3 .mat file",
            path=str(path),
        )
    return path


def open_source(source: Path) -> h5py.File:
    """The source opened read-only.

    Parameters
    ----------
    source
        A checked source (:func:`check_source`).

    Returns
    -------
    h5py.File
        Open read-only; the caller closes it.

    Raises
    ------
    h5ml.IngestError
        If HDF5 cannot open it.
    """
    try:
        return open_foreign(source, "convert it again")
    except FileLockedError:
        raise  # another process writes it: an H5MLError that says so
    except OSError as exc:
        raise IngestError(f"{source}: the HDF5 file cannot be opened ({exc})", path=str(source)) from None


def value_kind(dtype: np.dtype[Any]) -> str | None:
    """``"string"``, ``"numeric"`` (booleans, integers, floats), ``"vlen"`` (variable-length numbers), ``"reference"``, or None.

    Parameters
    ----------
    dtype
        A dataset's numpy dtype.

    Returns
    -------
    str or None
        None for types h5ml does not store (compound, enum of other bases, opaque, ...; §3.2).
    """
    if h5py.check_string_dtype(dtype) is not None:
        return "string"
    if dtype.kind in "biuf":
        return "numeric"
    base = h5py.check_vlen_dtype(dtype)
    if base is not None and np.dtype(base).kind in "biuf":
        return "vlen"
    if h5py.check_ref_dtype(dtype) is not None:
        return "reference"
    return None


@dataclass(frozen=True)
class Unstorable:
    """An attribute value h5ml cannot keep as it is (a null dataspace, bytes that are not UTF-8), and why."""

    reason: str


def plain_value(value: Any) -> Any:
    """An HDF5 attribute value -> str, int, float, list of str or int, or JSON text (what §4.7 can store).

    Object references become the text ``"<HDF5 object reference>"`` (they
    mean nothing outside their file). A null dataspace (``h5py.Empty``) and
    bytes that are not UTF-8 become :class:`Unstorable`: they are left out
    with that reason, never stored as something else.

    Parameters
    ----------
    value
        What h5py returns for an attribute.

    Returns
    -------
    str, int, float, list, or Unstorable
    """
    if isinstance(value, h5py.Empty):
        return Unstorable("a null dataspace (no value)")
    if isinstance(value, h5py.Reference):
        return "<HDF5 object reference>"
    if isinstance(value, (bytes, np.bytes_)):
        try:
            return bytes(value).decode("utf-8")
        except UnicodeDecodeError:
            return Unstorable("bytes that are not UTF-8 text")
    if isinstance(value, (bool, np.bool_)):
        return int(value)
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, (str, int, float)):
        return value
    if isinstance(value, np.ndarray):
        if value.dtype.names is not None:
            return json.dumps([[plain_value(v) for v in row] for row in value.ravel().tolist()], default=str)
        items = [plain_value(v) for v in value.ravel().tolist()] if value.ndim <= 1 else None
        if items is not None and any(isinstance(v, Unstorable) for v in items):
            return next(v for v in items if isinstance(v, Unstorable))
        if items is not None and (all(isinstance(v, str) for v in items) or all(type(v) is int for v in items)):
            return items
        if items is not None and len(items) == 1 and isinstance(items[0], float):
            return items[0]
        return json.dumps([plain_value(v) for v in value.tolist()] if value.ndim <= 1 else value.tolist(), default=str)
    return json.dumps(value, default=str)


def _attrs(obj: h5py.HLObject) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in obj.attrs:
        try:
            out[key] = plain_value(obj.attrs[key])
        except LIBRARY_ERRORS:  # an attribute h5py cannot read: say so, never drop it
            out[key] = Unstorable("an attribute HDF5 cannot read")
    return out


def _unwritten(dataset: h5py.Dataset) -> bool:
    """Whether some of a dataset's storage was never written (its rows there are the fill value, §3.5)."""
    if dataset.shape is None or not dataset.size:
        return False
    if dataset.chunks is None:
        return bool(dataset.id.get_storage_size() == 0)
    chunks = 1
    for n, c in zip(dataset.shape, dataset.chunks, strict=True):
        chunks *= -(-n // c)
    return int(dataset.id.get_num_chunks()) < chunks


def _filters(dataset: h5py.Dataset) -> tuple[str, ...]:
    """The dataset's filter pipeline as labels (``deflate(4)``, ``shuffle``), as ``h5ml inspect`` shows it."""
    return tuple(f.label() for f in dataset_filters(dataset))


def take_inventory(source: str | os.PathLike[str], *, allow_external: bool = False) -> Inventory:
    """Walk a source: every group and dataset, with shapes, dtypes, chunks, filters and attributes.

    Parameters
    ----------
    source
        An HDF5 file, a MATLAB v7.3 ``.mat`` file, or a Fuel H5PYDataset file.
    allow_external
        Read datasets with external raw storage and virtual datasets (their
        bytes come from other files, §10.1) instead of refusing them, as
        ``h5ml.open(..., allow_external=True)``; only for a trusted source.
        Links are refused either way.

    Returns
    -------
    Inventory

    Raises
    ------
    FileNotFoundError
        If ``source`` does not exist.
    h5ml.ForbiddenStorageError
        If it holds an external link, or (without ``allow_external``) external
        raw storage or a virtual dataset (§3.6, §10.1): the message of
        :func:`h5ml.open`, naming the file and HDF5 path.
    h5ml.IngestError
        If it is not HDF5, is an h5ml file already, holds a soft link, or more
        than :data:`MAX_NODES` objects. The message names the file and HDF5 path.
    """
    path = check_source(source)
    with path.open("rb") as raw:
        head = raw.read(len(MATLAB_MAGIC))
    nodes: dict[str, Node] = {}
    with open_source(path) as f:
        if f.attrs.get("format") in ("h5ml", b"h5ml"):
            raise IngestError(
                f"{path}: already an h5ml file (root attribute format = 'h5ml'); nothing to convert: "
                "check it with `h5ml validate`",
                path=str(path),
            )
        nodes["/"] = Node("/", "group", attrs=_attrs(f))
        try:
            _walk(f, path, nodes, allow_external)
        except LIBRARY_ERRORS as exc:
            if isinstance(exc, (IngestError, ForbiddenStorageError)):
                raise
            raise IngestError(
                f"{path}: HDF5 cannot read the file's structure ({exc}); the file is damaged: get a good copy",
                path=str(path),
            ) from None
        fuel = _fuel_splits(f)
    kind: Literal["hdf5", "matlab", "fuel"] = "hdf5"
    if head == MATLAB_MAGIC:
        kind = "matlab"
    elif fuel:
        kind = "fuel"
    return Inventory(os.fspath(source), kind, nodes, fuel, allow_external)


def _walk(f: h5py.File, path: Path, nodes: dict[str, Node], allow_external: bool) -> None:
    """Every object under the root into ``nodes``, breadth first, refusing links and a group reached twice."""
    pending: list[tuple[str, h5py.Group]] = [("/", f)]
    seen = {f.id}
    while pending:
        base, group = pending.pop(0)
        for name in group:
            where = f"{base.rstrip('/')}/{name}"
            link = group.get(name, getlink=True)
            if isinstance(link, h5py.ExternalLink) and not allow_external:  # SPEC §10.1-R1: as h5ml.open refuses it
                raw = name.encode("utf-8")
                check_link(group.id, raw, group.id.links.get_info(raw).type, str(path), where)
            if not isinstance(link, h5py.HardLink):
                target = getattr(link, "path", "")
                raise IngestError(
                    f"{path}:{where} is a {type(link).__name__} to {target!r}; links are not followed (they may "
                    "point outside the file, §3.6): replace it by the object it points to",
                    path=str(path),
                    hdf5_path=where,
                )
            if len(nodes) >= MAX_NODES:
                raise IngestError(
                    f"{path}: more than {MAX_NODES} HDF5 objects; convert parts of it, or write a plan by hand "
                    "with records patterns",
                    path=str(path),
                )
            obj = group[name]
            if isinstance(obj, h5py.Group):
                if obj.id in seen:
                    raise IngestError(
                        f"{path}:{where} is a second hard link to a group already met (a group linked into the file "
                        "twice, or into itself); h5ml does not walk a group twice: remove the extra link",
                        path=str(path),
                        hdf5_path=where,
                    )
                seen.add(obj.id)
                nodes[where] = Node(where, "group", attrs=_attrs(obj))
                pending.append((where, obj))
            elif isinstance(obj, h5py.Dataset):
                if not allow_external:  # SPEC §10.1-R1: as h5ml.open refuses it
                    check_dataset_storage(obj.id, str(path), where)
                nodes[where] = Node(
                    where,
                    "dataset",
                    shape=None if obj.shape is None else tuple(int(n) for n in obj.shape),
                    dtype=obj.dtype,
                    chunks=None if obj.chunks is None else tuple(int(n) for n in obj.chunks),
                    filters=_filters(obj),
                    attrs=_attrs(obj),
                    unwritten=_unwritten(obj),
                )
            # committed datatypes hold no samples: they are not listed (nothing to convert)


def _fuel_splits(f: h5py.File) -> list[tuple[str, str, int, int]]:
    """Fuel's root attribute ``split``: a table of (split, source, start, stop, ...) rows; empty when absent."""
    raw = f.attrs.get("split")
    if not isinstance(raw, np.ndarray) or raw.dtype.names is None or not _FUEL_FIELDS <= set(raw.dtype.names):
        return []
    rows = []
    for row in raw.ravel():
        ref = row["indices"] if "indices" in raw.dtype.names else None
        if (
            isinstance(ref, h5py.Reference)
            and ref
            and bool(row["available"] if "available" in raw.dtype.names else True)
        ):
            raise IngestError(
                f"{f.filename}: Fuel's split table gives split {row['split']!r} of source {row['source']!r} as a list "
                "of row indices (the 'indices' column), which h5ml does not read: save the split as a range of rows "
                "(start, stop), or convert with a hand-written plan whose parts give each split's rows",
                path=f.filename,
                hdf5_path="/",
            )
        name, src = (
            bytes(row[k]).decode("utf-8") if isinstance(row[k], bytes) else str(row[k]) for k in ("split", "source")
        )
        available = bool(row["available"]) if "available" in raw.dtype.names else True
        if available:
            rows.append((name, src, int(row["start"]), int(row["stop"])))
    return rows
