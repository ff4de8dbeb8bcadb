"""View files of a sharded dataset (SPEC §12.6): their marker, and the one check of a virtual dataset's mapping.

A view file presents the shards of a sharded dataset (§12.1) as one HDF5
file for tools that know no index (h5dump, HDFView): each feature dataset
is an HDF5 virtual dataset (VDS) that concatenates the same dataset of every
shard of its split along axis 0. It is the only file in which §3.6 allows
virtual datasets, and only under the rules checked here, so that following
its mapping reads the listed shards and nothing else (§10.1):

- the root attributes :data:`VIEW_OF` (the file name of the index, which lies
  in the view's folder) and :data:`VIEW_INDEX_FINGERPRINT` (the index
  fingerprint, §12.3, of the index the view was made from) mark the file;
- every source file name is relative, inside the view's folder (no
  absolute path, no ``..``, no scheme, no ``%`` pattern), a shard the index
  lists for the dataset's split, and present;
- the mapping is exactly the concatenation: the shards in index order (those
  whose dataset has no rows left out), each selected whole, placed one after
  the other from row 0 to the last row of the virtual dataset; each source
  dataset has the virtual dataset's datatype and row shape, and is itself
  stored in its shard (not virtual, not external).

:func:`view_context` reads the marker and the index once per file;
:func:`mapping_problems` checks one virtual dataset, :func:`stored_problem`
one dataset the view stores (its copied offsets and class names). The reader
(:func:`h5ml.model.storage.check_storage`) and the validator
(:mod:`h5ml.validator.checks.storage`) both call them: E118 for a source
outside the dataset, E119 for a marker or a mapping that is not the view's.

Measured on this machine (HDF5 2.0.0 in h5py 3.16, h5dump 1.10.8): a
relative source name is looked up in the folder of the view file, whatever
the working directory; but a source missing there is then looked up in the
current working directory, and the environment variable ``HDF5_VDS_PREFIX``
is tried first. That is why every source must be present, and why the
reference reader refuses a view while ``HDF5_VDS_PREFIX`` is set.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import h5py
import numpy as np

from h5ml.errors import H5MLError
from h5ml.model.failures import LIBRARY_ERRORS
from h5ml.model.remote import is_url
from h5ml.spec.attrs import read_attr

if TYPE_CHECKING:  # the index module (pydantic, JSON Schema) is imported only for a file marked as a view
    from h5ml.model.shard_index import ShardIndex, SplitEntry

__all__ = [
    "COMPONENTS",
    "VDS_PREFIX_ENV",
    "VIEW_INDEX_FINGERPRINT",
    "VIEW_OF",
    "ViewContext",
    "escape_source",
    "mapping_problems",
    "source_name_problem",
    "stored_problem",
    "view_context",
]

#: Root attribute of a view file: the file name of its index, in the view's folder (§12.6).
VIEW_OF: Final = "view_of"
#: Root attribute of a view file: the index fingerprint (§12.3) of the index the view presents (§12.6).
VIEW_INDEX_FINGERPRINT: Final = "view_index_fingerprint"
#: The environment variable HDF5 reads to look for virtual-dataset sources elsewhere first.
VDS_PREFIX_ENV: Final = "HDF5_VDS_PREFIX"

#: The datasets of a feature, by encoding, that a view stores as virtual datasets ("" the feature's own dataset).
COMPONENTS: Final = {
    "dense": ("",),
    "string": ("",),
    "categorical": ("codes",),
    "ragged": ("values", "shapes"),
    "bytes": ("values",),
}

_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


@dataclass
class ViewContext:
    """What the checks of a view file's virtual datasets need, read once per file (§12.6).

    Attributes
    ----------
    path
        The view file, for messages.
    folder
        The view's folder: the dataset's folder, where the index and the shards lie.
    index
        The index the view names, or None when it could not be read.
    problem
        Why the file is not a valid view as a whole (the marker, the index, a stale fingerprint), or None.
    """

    path: str
    folder: Path
    index: ShardIndex | None
    problem: str | None
    #: (shard file, dataset path) -> (shape, datatype, (code, problem) or None), each source opened once.
    sources: dict[tuple[str, str], tuple[tuple[int, ...], Any, tuple[str, str] | None]] = field(default_factory=dict)


def view_context(f: h5py.File, path: str) -> ViewContext | None:
    """Read a file's view marker and its index (§12.6); None when the file is not marked as a view.

    Parameters
    ----------
    f
        The file, open read-only.
    path
        Its path (its folder is the dataset's folder).

    Returns
    -------
    ViewContext or None
        None when the root has no :data:`VIEW_OF` attribute (an ordinary file:
        a virtual dataset there is E112). Otherwise the context, whose
        ``problem`` says what makes the marker invalid.
    """
    if VIEW_OF not in f.attrs:
        return None
    if is_url(path):  # a file object: HDF5 has no folder to find the sources in (h5ml.model.remote.local_file_path)
        problem = (
            "it is read through a URL, and HDF5 follows a view's virtual datasets in local files only: open the "
            "dataset's index at its URL instead (its folder with a final '/'), or the view from a local folder"
        )
        return ViewContext(path, Path(), None, problem)
    folder = Path(os.path.abspath(path)).parent
    name = read_attr(f, VIEW_OF, None)
    recorded = read_attr(f, VIEW_INDEX_FINGERPRINT, None)
    if not isinstance(name, str) or not name or "/" in name or "\\" in name or name in (".", ".."):
        problem = f"root attribute {VIEW_OF!r} is {name!r}: it must be the file name of the index in the view's folder"
        return ViewContext(path, folder, None, problem + " (§12.6); write the view again with h5ml view INDEX OUT.h5")
    if not (folder / name).is_file():
        problem = (
            f"its index {name!r} (root attribute {VIEW_OF!r}) is not in the view's folder {str(folder)!r}: a view "
            "lies beside the index and shards it presents"
        )
        return ViewContext(path, folder, None, problem)
    from h5ml.model.shard_index import load_index

    try:
        index, _ = load_index(folder / name, check_links=False)  # links out of the folder: E118 per source
    except (OSError, H5MLError) as exc:
        problem = f"its index {name!r} (root attribute {VIEW_OF!r}) cannot be read: {exc}"
        return ViewContext(path, folder, None, problem)
    if recorded != index.fingerprint:
        problem = (
            f"root attribute {VIEW_INDEX_FINGERPRINT!r} is {recorded!r} but the index {name!r} has fingerprint "
            f"{index.fingerprint}: the view was made from other shards (§12.6); write it again with h5ml view"
        )
        return ViewContext(path, folder, index, problem)
    return ViewContext(path, folder, index, None)


def escape_source(shard_path: str) -> str:
    """A shard's path as an HDF5 virtual-dataset source name: ``%`` doubled, as HDF5 reads ``%%`` as ``%``."""
    return shard_path.replace("%", "%%")


def source_name_problem(name: str) -> str | None:
    """Why a virtual dataset's source file name may lead outside the dataset's folder (§12.6); None if it stays.

    The name must be relative, '/'-separated, without ``.``, ``..`` or empty
    components, without a scheme (``s3:``, ``C:``) or a backslash, and
    without a ``%`` pattern other than ``%%`` (HDF5 replaces ``%b`` by the
    view's own name).
    """
    if not name:
        return "is empty"
    if name.startswith("/"):
        return "is an absolute path"
    if "\\" in name:
        return "contains a backslash"
    if _SCHEME.match(name):
        return "starts with a scheme or drive"
    if re.search(r"%(?!%)", name.replace("%%", "")):
        return "contains a % pattern, which HDF5 expands"
    parts = name.split("/")
    if ".." in parts:
        return "goes up with '..'"
    if any(part in ("", ".") for part in parts):
        return "has an empty or '.' component"
    return None


def _component_of(where: str, index: ShardIndex) -> tuple[str, SplitEntry, str] | str:
    """The split, its entry and the component name of a virtual dataset at ``where``, or why it has none."""
    parts = where.strip("/").split("/")
    if len(parts) not in (2, 3) or parts[0] not in index.splits:
        return f"{where} is not a feature dataset of a split that the index lists"
    split = index.splits[parts[0]]
    feature = split.features.get(parts[1])
    component = parts[2] if len(parts) == 3 else ""
    if feature is None or component not in COMPONENTS[feature.encoding]:
        return f"{where} is not a dataset that a view stores virtually (§12.6: the index lists no such component)"
    return parts[0], split, component


def _outside(context: ViewContext, file: Path) -> str | None:
    """Why a listed shard file cannot be opened as a source: missing, or a symbolic link out of the folder."""
    if not file.is_file():
        return f"is missing: no file {str(file)!r}"
    if not file.resolve().is_relative_to(context.folder.resolve()):
        return f"leads outside the dataset's folder, to {str(file.resolve())!r} (a symbolic link)"
    return None


def _changed(context: ViewContext, shard: str, file: Path, g: h5py.File) -> tuple[str, str] | None:
    """E119 when a source shard is not the file its index lists: another size or fingerprint (§12.6-R3, §12.5-R1).

    A shard replaced after the view was written would otherwise be read through the view as if it were the
    dataset's (a file of the same size and shapes holding other samples).
    """
    if context.index is None:
        return None
    for split in context.index.splits.values():
        for entry in split.shards:
            if entry.path != shard:
                continue
            size = file.stat().st_size
            fingerprint = g.attrs.get("fingerprint")
            fingerprint = fingerprint.decode() if isinstance(fingerprint, bytes) else fingerprint
            if size != entry.size_bytes or fingerprint != entry.fingerprint:
                return (
                    "E119",
                    f"is not the shard its index lists: {size} bytes and fingerprint {fingerprint} where the index "
                    f"records {entry.size_bytes} bytes and {entry.fingerprint} (changed or replaced since the index "
                    "was written); restore the shard, or write the index and the view again",
                )
            return None
    return None


def _source(context: ViewContext, shard: str, where: str) -> tuple[tuple[int, ...], Any, tuple[str, str] | None]:
    """The shape and datatype of dataset ``where`` in a shard file, or the code and reason it cannot be a source."""
    key = (shard, where)
    if key not in context.sources:
        # imported here: h5ml.model.storage imports this module for check_storage
        from h5ml.model.storage import check_path

        file = context.folder / shard
        found: tuple[tuple[int, ...], Any, tuple[str, str] | None] = ((), None, None)
        outside = _outside(context, file)
        if outside is not None:
            found = ((), None, ("E118", outside))
        else:
            try:
                with h5py.File(file, "r") as g:
                    check_path(g, str(file), where)
                    dset = g[where]
                    found = (tuple(dset.shape), dset.id.get_type(), _changed(context, shard, file, g))
            except KeyError:
                found = ((), None, ("E119", f"has no dataset {where}"))
            except H5MLError as exc:
                found = ((), None, ("E118", f"cannot be a source: {exc}"))
            except (OSError, *LIBRARY_ERRORS) as exc:
                found = ((), None, ("E119", f"cannot be opened: {exc}"))
        context.sources[key] = found
    return context.sources[key]


def mapping_problems(
    dcpl: Any, tid: Any, shape: tuple[int, ...], where: str, context: ViewContext
) -> list[tuple[str, str, str]]:
    """Check the mapping of one virtual dataset of a view file (§12.6); an empty list when it is the view's.

    Checked in this order, each step only when the steps before found nothing:
    the source file names (:func:`source_name_problem`, E118); the layout,
    which needs no index (each source selected whole at the dataset's own
    path, placed one after the other from row 0 over every row, E119); the
    view's marker and index (``context.problem``, E119 at ``/``); then the
    sources against the index (each a listed, present shard, stored in it,
    in the index's order with shards without rows left out, of the dataset's
    datatype and row shape: E118 for a source outside, E119 otherwise).

    Parameters
    ----------
    dcpl
        The dataset's creation property list (``dataset.id.get_create_plist()``), of virtual layout.
    tid
        The dataset's datatype (``dataset.id.get_type()``).
    shape
        The dataset's shape.
    where
        Its HDF5 path (``/train/x``, ``/train/audio/values``).
    context
        The file's :func:`view_context`.

    Returns
    -------
    list of (code, HDF5 path, message)
        ``"E118"`` or ``"E119"``, the path the issue is at (``where``, or
        ``/`` for the marker), and a message naming the dataset and the source.
    """
    count = dcpl.get_virtual_count()
    names = [dcpl.get_virtual_filename(j) for j in range(count)]
    found: list[tuple[str, str, str]] = []
    for j, name in enumerate(names):
        problem = source_name_problem(name)
        if problem is not None:
            found.append(("E118", where, f"dataset {where} maps rows to source {j} in file {name!r}, which {problem}"))
    if found:
        return found
    layout = _layout_problem(dcpl, names, shape, where)
    if layout is not None:
        return [("E119", where, layout)]
    if context.problem is not None or context.index is None:
        return [("E119", "/", f"{context.path} is marked as a view file but {context.problem}")]
    return [(code, where, message) for code, message in _index_problems(dcpl, tid, names, shape, where, context)]


def _placement(dcpl: Any, j: int, shape: tuple[int, ...]) -> tuple[Any, Any, Any] | None:
    """Mapping ``j``'s (start, count, block) in the virtual dataset; the whole dataset for ``H5S_ALL``; None if irregular."""
    vspace = dcpl.get_virtual_vspace(j)
    kind = vspace.get_select_type()
    if kind == h5py.h5s.SEL_ALL:
        return (0,) * len(shape), (1,) * len(shape), shape
    if kind != h5py.h5s.SEL_HYPERSLABS or not vspace.is_regular_hyperslab():
        return None
    first, _stride, count, block = vspace.get_regular_hyperslab()
    return first, count, block


def _layout_problem(dcpl: Any, names: list[str], shape: tuple[int, ...], where: str) -> str | None:
    """Why the mapping does not place whole sources one after the other over every row (§12.6), or None."""
    rows = shape[0] if shape else 0
    start = 0
    for j, name in enumerate(names):
        if dcpl.get_virtual_dsetname(j) != where:
            return f"dataset {where} maps rows to dataset {dcpl.get_virtual_dsetname(j)!r} of {name!r}; a view maps the same path"
        if dcpl.get_virtual_srcspace(j).get_select_type() != h5py.h5s.SEL_ALL:
            return f"dataset {where} selects part of {name}:{where}; a view maps each source whole"
        placed = _placement(dcpl, j, shape)
        if placed is None:
            return (
                f"dataset {where} places the rows of {name!r} in an irregular selection; a view places whole row ranges"
            )
        first, count, block = placed
        if (
            tuple(first) != (start, *(0,) * (len(shape) - 1))
            or tuple(count) != (1,) * len(shape)
            or tuple(block[1:]) != shape[1:]
        ):
            return f"dataset {where} places the rows of {name!r} elsewhere than right after row {start} of the concatenation"
        start += int(block[0])
    if start != rows:
        return f"dataset {where} has {rows} rows but its mapping covers {start}: rows without a source read as zeros"
    return None


def _index_problems(
    dcpl: Any, tid: Any, names: list[str], shape: tuple[int, ...], where: str, context: ViewContext
) -> list[tuple[str, str]]:
    """E118/E119 for sources that are not the split's shards in the index's order, stored as the view says."""
    assert context.index is not None
    found = _component_of(where, context.index)
    if isinstance(found, str):
        return [("E119", found)]
    split_name, split, component = found
    listed = [shard.path for shard in split.shards]
    got = [name.replace("%%", "%") for name in names]
    outside = [
        (
            "E118",
            f"dataset {where} maps rows to file {name!r}, which the index lists for no shard of split {split_name!r}",
        )
        for name in got
        if name not in listed
    ]
    if outside:
        return outside
    expected = []
    for position, shard in enumerate(split.shards):
        src_shape, src_type, problem = _source(context, shard.path, where)
        if problem is not None:
            code, why = problem
            return [
                (code, f"dataset {where}: its source, shard {position} {shard.path!r} of split {split_name!r}, {why}")
            ]
        if component != "values" and src_shape[:1] != (shard.num_samples,):
            return [
                (
                    "E119",
                    f"dataset {where}: shard {shard.path!r} holds {src_shape} where the index says {shard.num_samples} samples",
                )
            ]
        if src_shape[1:] != shape[1:] or src_type != tid:
            return [
                (
                    "E119",
                    f"dataset {where}: the dataset in shard {shard.path!r} (shape {src_shape}) has another datatype or row shape than the view's {shape}",
                )
            ]
        if src_shape[0] > 0:
            expected.append(shard.path)
    if got != expected:
        return [
            (
                "E119",
                f"dataset {where} maps the files {got}, but the concatenation of its split is {expected} (the index's order, shards without rows left out)",
            )
        ]
    for j, path in enumerate(expected):
        rows = _source(context, path, where)[0][0]
        placed = _placement(dcpl, j, shape)
        if placed is None or int(placed[2][0]) != rows:
            return [("E119", f"dataset {where} maps {path!r} onto another number of rows than its {rows}")]
    return []


def stored_problem(dset: h5py.Dataset, where: str, context: ViewContext) -> str | None:
    """Why a dataset stored in a view file (not virtual) is not what the view must hold there (§12.6), or None.

    A view stores only copies: a feature's ``class_names`` (the index's) and
    ``offsets`` (every shard's offsets shifted by the values before it). A
    component that a view maps virtually (:data:`COMPONENTS`) must not be
    stored. Reads the shards' offsets (8 bytes per sample): the validator
    runs it; the reader does not, at open.

    Parameters
    ----------
    dset
        A dataset of the view file that is not virtual.
    where
        Its HDF5 path.
    context
        The file's :func:`view_context`, without ``problem``.

    Returns
    -------
    str or None
        The problem (E119), naming the dataset and the shard it differs from.
    """
    assert context.index is not None
    parts = where.strip("/").split("/")
    split = context.index.splits.get(parts[0]) if len(parts) in (2, 3) else None
    feature = split.features.get(parts[1]) if split is not None else None
    if split is None or feature is None:
        return None  # not a feature of the index: checked as in any file
    component = parts[2] if len(parts) == 3 else ""
    if component in COMPONENTS[feature.encoding]:
        return f"dataset {where} is stored in the view; a view maps it from the shards as a virtual dataset"
    if component == "class_names" and feature.encoding == "categorical":
        if dset.shape != (len(feature.class_names or ()),) or dset.dtype.kind != "O":
            return f"dataset {where} has shape {dset.shape}; a view holds the index's {len(feature.class_names or ())} class names"
        names = [value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value) for value in dset[()]]
        if tuple(names) != tuple(feature.class_names or ()):
            return f"dataset {where} holds the class names {names}, the index {list(feature.class_names or ())}"
    if component == "offsets" and feature.encoding in ("ragged", "bytes"):
        return _offsets_problem(dset, where, split, context)
    return None


def _offsets_problem(dset: h5py.Dataset, where: str, split: SplitEntry, context: ViewContext) -> str | None:
    """Why a view's offsets are not the shards' offsets shifted by the values before each shard, or None."""
    if dset.shape != (split.num_samples + 1,) or dset.dtype.kind not in "iu":
        return f"dataset {where} has shape {dset.shape} and dtype {dset.dtype}; a view's offsets are int64, one per sample and one more"
    offsets = np.asarray(dset[()], dtype=np.int64)
    base = 0
    for shard, start in zip(split.shards, split.starts(), strict=False):
        file = context.folder / shard.path
        if _outside(context, file) is not None:
            return None  # E118 at the feature's virtual datasets; nothing outside the folder is opened
        try:
            with h5py.File(file, "r") as g:
                own = np.asarray(g[where][()], dtype=np.int64)
        except (KeyError, OSError, *LIBRARY_ERRORS) as exc:
            return f"dataset {where}: the offsets of shard {shard.path!r} cannot be read ({exc})"
        if own.shape != (shard.num_samples + 1,) or not np.array_equal(offsets[start : start + len(own)], own + base):
            return f"dataset {where} holds other offsets than those of shard {shard.path!r} shifted by {base} values"
        base += int(own[-1])
    return None
