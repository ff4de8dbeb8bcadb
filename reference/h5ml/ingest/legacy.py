"""Convert HDF5 files in the layouts tutorials teach to h5ml files (``h5ml convert``).

Two layouts are recognised; :func:`convert_hdf5` tells them apart (and says
so when a file has neither), :func:`convert_hdf5_per_sample` and
:func:`convert_hdf5_arrays` convert one each.

Per-sample layout
-----------------
One dataset per sample, named by the sample's id, in groups::

    /train_data/1, /train_data/2, ...     /train_label/1, /train_label/2, ...
    /test_data/1, ...                     /test_label/1, ...

A root group's name is parsed as ``<split>_<feature>`` (``train_data``), or
``<feature>_<split>`` (``data_train``, :func:`h5ml.ingest.arrays.split_array_name`),
with the split names and aliases of :data:`h5ml.ingest.arrays.SPLIT_SUFFIXES`
(``valid`` -> ``validation``, ...); a name without a split goes to split
``train`` as a feature of its whole name, as :mod:`h5ml.ingest.arrays` does. Two
nestings are read as well: ``<split>/<feature>/<id>``, and ``<split>/<id>``
(a group named by a split holding the samples of its one feature,
:data:`SINGLE_FEATURE`). The features of one split are matched by id; the
ids are sorted naturally (``"2"`` before ``"10"``) and stored as the string
feature ``id`` (role ``metadata``). A feature whose samples all have one
shape is stored dense ``(N, *shape)`` (§6.2); when the shapes vary it is
stored ragged (§6.3), with per-sample ``shapes`` when they vary in more than
their first axis. Scalar string datasets make a string feature (§6.4).
Roles come from the names (:data:`h5ml.ingest.samples.ROLE_NAMES`:
``data``/``x``/``input`` -> input, ``label``/``y``/``target`` -> target).
Samples are read one dataset at a time through :func:`h5ml.ingest.ingest`
(each worker process opens the file by path): the file is never loaded whole.

Arrays layout
-------------
Top-level datasets ``x_train, y_train, x_valid, y_valid, x_test, y_test``
(any names :func:`h5ml.ingest.arrays.split_array_name` maps), first axis the
samples, with optional root attributes ``description`` and a number of
classes (:data:`CLASS_COUNT_ATTRS`). With a number of classes K, ``y``
(shape ``(N,)`` or ``(N, 1)``, integers, or floats holding whole numbers) is
stored categorical with class names ``"0" .. "K-1"`` (§6.5); a value outside
``[0, K)`` is an error naming the dataset and the row (``-1`` is taken as
"missing", §6.5). A ``y`` of any other shape (one-hot ``(N, K)``) is stored
dense. The arrays are read in blocks of whole HDF5 chunks of about
:data:`BLOCK_BYTES`, never whole.

Metadata (both layouts)
-----------------------
The root attribute ``description`` becomes the h5ml ``description``; every
other root attribute is kept as a user attribute (§4.7) of the same name,
or ``source:<name>`` when the name is one §4.2 defines (``name``,
``license``, ...): their values in a tutorial's file rarely follow §4.2.
Values are kept as str, int, float, or lists of str or int; other arrays
are stored as their JSON text.
"""

from __future__ import annotations

import functools
import json
import math
import os
import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal

import h5py
import numpy as np

from h5ml import spec
from h5ml.errors import IngestError
from h5ml.ingest.arrays import CLASS_COUNT_NAMES, SPLIT_SUFFIXES, split_array_name
from h5ml.ingest.pipeline import (
    ID_FEATURE,
    DecodeError,
    IngestReport,
    OnError,
    Skipped,
    SourceItem,
    check_output,
    conversion_metadata,
    ingest,
    natural_key,
)
from h5ml.ingest.samples import ROLE_NAMES
from h5ml.model.values import FeatureSpec

__all__ = [
    "BLOCK_BYTES",
    "CLASS_COUNT_ATTRS",
    "ID_FEATURE",
    "SINGLE_FEATURE",
    "Layout",
    "convert_hdf5",
    "convert_hdf5_arrays",
    "convert_hdf5_per_sample",
    "detect_layout",
    "parse_group_name",
]

#: The layouts :func:`detect_layout` recognises.
Layout = Literal["per-sample", "arrays"]
#: Root attributes that may give the number of classes of ``y`` (arrays layout); all given must agree.
CLASS_COUNT_ATTRS: Final = CLASS_COUNT_NAMES
#: Feature name of the samples of a ``<split>/<id>`` group (one feature per split).
SINGLE_FEATURE: Final = "data"
#: Bytes of one array read at once (arrays layout), rounded to whole HDF5 chunks.
BLOCK_BYTES: Final = 8 << 20
#: The HDF5 chunk cache of the source when rows are read in random order (``shuffle=True``).
_SHUFFLE_CACHE_BYTES: Final = 64 << 20

_PREFIX_RE: Final = re.compile(r"^(?P<split>" + "|".join(SPLIT_SUFFIXES) + r")_(?P<feature>.+)$")


# --------------------------------------------------------------------------
# names and layout


def parse_group_name(name: str) -> tuple[str, str]:
    """Map the name of a root group of the per-sample layout to ``(split, feature)``.

    Parameters
    ----------
    name
        The group name, e.g. ``"train_data"``.

    Returns
    -------
    tuple of str
        ``<split>_<feature>`` -> ``(split, feature)`` with the split's standard
        name (``"valid_label"`` -> ``("validation", "label")``); a split name
        alone -> ``(split, SINGLE_FEATURE)``; otherwise as
        :func:`h5ml.ingest.arrays.split_array_name` (``"data_test"`` ->
        ``("test", "data")``, ``"images"`` -> ``("train", "images")``).
    """
    if name in SPLIT_SUFFIXES:
        return SPLIT_SUFFIXES[name], SINGLE_FEATURE
    match = _PREFIX_RE.match(name)
    if match is not None:
        return SPLIT_SUFFIXES[match.group("split")], match.group("feature")
    return split_array_name(name)


def _check_source(source: str | os.PathLike[str]) -> Path:
    path = Path(source)
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file")
    if not path.is_file():
        raise IngestError(f"{path}: not a regular file; give the path of an HDF5 file", path=str(path))
    if not h5py.is_hdf5(path):
        raise IngestError(
            f"{path}: not an HDF5 file (it has no HDF5 signature); give an .h5/.hdf5 file written by h5py or HDF5",
            path=str(path),
        )
    return path


def _hard_members(group: h5py.Group, source: Path) -> list[tuple[str, Any]]:
    """The members of ``group`` as ``(name, object)``, refusing soft and external links (never followed)."""
    out: list[tuple[str, Any]] = []
    for name in group:
        link = group.get(name, getlink=True)
        if not isinstance(link, h5py.HardLink):
            where = f"{group.name.rstrip('/')}/{name}"
            raise IngestError(
                f"{source}:{where} is a {type(link).__name__}; links are not followed (they may point outside the "
                "file, §3.6): replace it by the object it points to",
                path=str(source),
                hdf5_path=where,
            )
        out.append((name, group[name]))
    return out


def _open(source: Path) -> h5py.File:
    try:
        return h5py.File(source, "r")
    except OSError as exc:
        raise IngestError(f"{source}: the HDF5 file cannot be opened ({exc})", path=str(source)) from None


def detect_layout(source: str | os.PathLike[str]) -> Layout:
    """Tell which layout an HDF5 file has: ``"per-sample"`` (groups of datasets) or ``"arrays"`` (root datasets).

    Raises
    ------
    FileNotFoundError
        If ``source`` does not exist.
    IngestError
        If it is not an HDF5 file, is already an h5ml file, is empty, or mixes
        root groups and datasets: the message says what the root holds and
        what each layout looks like.
    """
    path = _check_source(source)
    with _open(path) as f:
        if f.attrs.get("format") in ("h5ml", b"h5ml"):
            raise IngestError(
                f"{path}: already an h5ml file (root attribute format = 'h5ml'); nothing to convert: "
                "check it with `h5ml validate`",
                path=str(path),
            )
        members = _hard_members(f, path)
        groups = sorted(n for n, obj in members if isinstance(obj, h5py.Group))
        datasets = sorted(n for n, obj in members if isinstance(obj, h5py.Dataset))
    if groups and not datasets:
        return "per-sample"
    if datasets and not groups:
        return "arrays"
    found = f"groups {groups[:8]} and datasets {datasets[:8]}" if members else "nothing"
    raise IngestError(
        f"{path}: no known layout: the root holds {found}. Recognised are the per-sample layout (root groups such "
        "as /train_data and /train_label holding one dataset per sample, named by its id) and the arrays layout "
        "(root datasets such as /x_train, /y_train, /x_valid, /y_valid with the samples along the first axis); "
        "rearrange the file into one of them, or read it with h5py and use h5ml.ingest.samples.convert_arrays",
        path=str(path),
    )


# --------------------------------------------------------------------------
# root attributes


def _plain(value: Any) -> Any:
    """An HDF5 attribute value -> str, int, float, list of str or int, or JSON text (§4.7)."""
    if isinstance(value, (bytes, np.bytes_)):
        return bytes(value).decode("utf-8", "replace")
    if isinstance(value, (bool, np.bool_)):
        return int(value)
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, (str, int, float)):
        return value
    if isinstance(value, np.ndarray):
        items = [_plain(v) for v in value.ravel().tolist()] if value.ndim <= 1 else None
        if items is not None and (all(isinstance(v, str) for v in items) or all(type(v) is int for v in items)):
            return items
        return json.dumps(value.tolist(), default=str)
    return json.dumps(value, default=str)


def _root_metadata(f: h5py.File, source: Path, given: Mapping[str, Any] | None) -> dict[str, Any]:
    """Root metadata of the output: the source's attributes (see the module docstring), then ``given``."""
    carried: dict[str, Any] = {}
    for key in f.attrs:
        try:
            value = _plain(f.attrs[key])
        except (OSError, TypeError, ValueError):  # an attribute h5py cannot read: keep a note, not the value
            value = "(unreadable HDF5 attribute)"
        if key == "description" and isinstance(value, str):
            carried[key] = value
        elif key in spec.ROOT_ATTRS or key.startswith(spec.RESERVED_PREFIX) or not key.strip():
            carried[f"source:{key}"] = value
        else:
            carried[key] = value
    return conversion_metadata("HDF5 file", source, {**carried, **(given or {})})


# --------------------------------------------------------------------------
# a per-process cache of open source files (each worker opens the file by path)

_HANDLES: dict[tuple[str, int], h5py.File] = {}
_HANDLES_PID: list[int] = [os.getpid()]


def _source_file(path: str, cache_bytes: int = 0) -> h5py.File:
    """The source opened read-only in this process (opened on first use, kept for the next samples)."""
    if _HANDLES_PID[0] != os.getpid():  # a forked child: the parent's handles are not ours to use
        _HANDLES.clear()
        _HANDLES_PID[0] = os.getpid()
    key = (path, cache_bytes)
    f = _HANDLES.get(key)
    if f is None or not f.id.valid:
        f = h5py.File(path, "r", **({"rdcc_nbytes": cache_bytes} if cache_bytes else {}))
        _HANDLES[key] = f
    return f


def _close_sources() -> None:
    """Close the files this process opened (called when a conversion ends; workers exit with theirs)."""
    for f in _HANDLES.values():
        if f.id.valid:
            f.close()
    _HANDLES.clear()
    _BLOCKS.clear()


# --------------------------------------------------------------------------
# per-sample layout


@dataclass
class _FeatureScan:
    """What the scan found for one feature (all splits): each sample's HDF5 path, shape and dtype."""

    samples: dict[str, dict[str, tuple[str, tuple[int, ...], np.dtype[Any]]]] = field(default_factory=dict)
    groups: dict[str, str] = field(default_factory=dict)  # split -> the group holding its samples


def _kind(dtype: np.dtype[Any]) -> str | None:
    if h5py.check_string_dtype(dtype) is not None:
        return "string"
    if dtype.kind in "biuf":
        return "numeric"
    return None


def _scan_per_sample(f: h5py.File, source: Path) -> dict[str, _FeatureScan]:
    """Feature -> its samples by split and id, from the group structure (metadata only, no sample is read)."""
    leaves: list[tuple[str, str, h5py.Group]] = []  # (split, feature, group of samples)
    for name, obj in _hard_members(f, source):
        if not isinstance(obj, h5py.Group):
            raise IngestError(
                f"{source}:/{name} is a dataset at the root; the per-sample layout has only groups there "
                "(/train_data/1, ...). Use convert_hdf5_arrays for root datasets",
                path=str(source),
                hdf5_path=f"/{name}",
            )
        members = _hard_members(obj, source)
        if not members:
            raise IngestError(
                f"{source}:/{name} is an empty group; remove it or put the samples in it",
                path=str(source),
                hdf5_path=f"/{name}",
            )
        subgroups = [(n, o) for n, o in members if isinstance(o, h5py.Group)]
        if subgroups and len(subgroups) != len(members):
            raise IngestError(
                f"{source}:/{name} holds both groups and datasets; the per-sample layout has either "
                "/<split>_<feature>/<id> datasets or /<split>/<feature>/<id> groups of datasets",
                path=str(source),
                hdf5_path=f"/{name}",
            )
        if subgroups:  # /<split>/<feature>/<id>
            split = SPLIT_SUFFIXES.get(name, name)
            leaves += [(split, feature, group) for feature, group in subgroups]
        else:
            split, feature = parse_group_name(name)
            leaves.append((split, feature, obj))
    scans: dict[str, _FeatureScan] = {}
    for split, feature, group in leaves:
        for kind, value in (("split", split), ("feature", feature)):
            if not spec.is_valid_name(value):
                raise IngestError(
                    f"{source}:{group.name} gives the {kind} name {value!r}, which breaks the naming rule (§5.1.1: "
                    "no '/', no leading '.', '_' or whitespace); rename the group",
                    path=str(source),
                    hdf5_path=group.name,
                )
        scan = scans.setdefault(feature, _FeatureScan())
        if split in scan.groups:
            raise IngestError(
                f"{source}: {scan.groups[split]} and {group.name} both hold feature {feature!r} of split {split!r}; "
                "rename one of them",
                path=str(source),
                hdf5_path=group.name,
            )
        scan.groups[split] = group.name
        found = scan.samples.setdefault(split, {})
        for sample_id, obj in _hard_members(group, source):
            if not isinstance(obj, h5py.Dataset):
                raise IngestError(
                    f"{source}:{obj.name} is a group inside a group of samples; each sample is one dataset named "
                    "by its id",
                    path=str(source),
                    hdf5_path=obj.name,
                )
            found[sample_id] = (obj.name, tuple(obj.shape), obj.dtype)
    return scans


def _feature_spec(
    feature: str, scan: _FeatureScan, bad: dict[tuple[str, str], tuple[str, str]]
) -> tuple[FeatureSpec, bool]:
    """The encoding of one feature over all its samples; samples that do not fit go to ``bad``.

    Returns the spec and whether the feature is a string feature. The most
    common (kind, number of axes) is the feature's; a sample of another kind,
    another number of axes or an unsupported dtype goes to ``bad`` as
    ``(split, id) -> (HDF5 path, reason)`` (the first problem of a sample is kept).
    """
    found: dict[tuple[str, str], tuple[str, tuple[int, ...], np.dtype[Any]]] = {}
    norms: Counter[tuple[str, int]] = Counter()
    for split, samples in scan.samples.items():
        for sample_id, (path, shape, dtype) in samples.items():
            kind = _kind(dtype)
            if kind is None:
                reason = (
                    f"has the HDF5 type {dtype}, which h5ml does not store (§3.2: integers, floats, booleans, strings)"
                )
                bad.setdefault((split, sample_id), (path, reason))
            elif kind == "string" and shape != ():
                reason = f"is a string array of shape {shape}; a string feature holds one string per sample (§6.4)"
                bad.setdefault((split, sample_id), (path, reason))
            else:
                found[(split, sample_id)] = (kind, shape, dtype)
                norms[(kind, len(shape))] += 1
    if not norms:
        return FeatureSpec(encoding="string", role=ROLE_NAMES.get(feature)), True
    kind, ndim = norms.most_common(1)[0][0]
    for key, (other, shape, _) in list(found.items()):
        if (other, len(shape)) != (kind, ndim):
            reason = (
                f"is a {other} sample with {len(shape)} axes but most samples of feature {feature!r} are {kind} with "
                f"{ndim}; the samples of a feature share their kind and number of axes"
            )
            bad.setdefault(key, (scan.samples[key[0]][key[1]][0], reason))
            del found[key]
    if kind == "string":
        return FeatureSpec(encoding="string", role=ROLE_NAMES.get(feature)), True
    dtype = np.result_type(*{d for _, _, d in found.values()})
    encoding = "dense" if len({shape for _, shape, _ in found.values()}) == 1 else "ragged"
    return FeatureSpec(encoding=encoding, dtype=dtype, role=ROLE_NAMES.get(feature)), False


def _decode_sample(source: str, strings: frozenset[str], id_feature: str | None, item: SourceItem) -> dict[str, Any]:
    """Read one sample's datasets (module level: it pickles for worker processes)."""
    f = _source_file(source)
    out: dict[str, Any] = {}
    for feature, hdf5_path in item.parts:
        try:
            dataset = f[hdf5_path]
            value = dataset.asstr()[()] if feature in strings else np.asarray(dataset[()])
        except (OSError, KeyError, ValueError, TypeError, UnicodeDecodeError) as exc:
            raise DecodeError(f"{source}:{hdf5_path}", f"cannot be read ({exc})") from None
        out[feature] = value
    if id_feature is not None:
        out[id_feature] = item.sample_id
    return out


def convert_hdf5_per_sample(
    source: str | os.PathLike[str],
    output: str | os.PathLike[str],
    *,
    id_feature: str | None = ID_FEATURE,
    metadata: Mapping[str, Any] | None = None,
    compression: str | None = None,
    shuffle: bool = False,
    seed: int | None = None,
    workers: int = 1,
    on_error: OnError = "stop",
    progress: bool | None = None,
    overwrite: bool = False,
) -> IngestReport:
    """Convert an HDF5 file of the per-sample layout (one dataset per sample) to h5ml (§5, §6).

    See the module docstring for the layout, the names, the encodings chosen
    and the metadata kept.

    Parameters
    ----------
    source
        The HDF5 file.
    output
        The h5ml file to write.
    id_feature
        Name of the string feature holding each sample's id (role
        ``metadata``), or None to store no ids.
    metadata
        Root metadata (§4.2) over the source's attributes and the defaults of
        :func:`h5ml.ingest.conversion_metadata`.
    compression
        ``"gzip"`` or None.
    shuffle, seed
        Store each split in a seeded random order (§7.6), as :func:`h5ml.ingest.ingest`.
    workers
        Worker processes reading samples (:mod:`concurrent.futures`); each
        opens the file by path. Processes, not threads: h5py lets one thread
        at a time into HDF5. ``<= 1`` reads in this process.
    on_error
        ``"stop"``: a sample missing one of its split's features, of a type
        h5ml cannot store, or unreadable raises :class:`h5ml.IngestError`
        naming the file and the HDF5 paths; nothing is written. ``"skip"``:
        that sample (all its features) is left out and recorded.
    progress
        Show a progress bar on stderr (None: when stderr is a terminal).
    overwrite
        Replace an existing ``output``.

    Returns
    -------
    IngestReport
        Samples per split, skipped samples, time taken.

    Raises
    ------
    FileNotFoundError
        If ``source`` does not exist.
    IngestError
        If ``source`` is not HDF5, does not have the per-sample layout (a root
        dataset, a group mixing groups and datasets, a link, a name breaking
        §5.1.1, two groups for one feature), ``id_feature`` is also a feature
        of the file, or (``on_error="stop"``) a sample is bad as above.
    FileExistsError, IsADirectoryError
        As :func:`h5ml.ingest.check_output`.
    """
    path = _check_source(source)
    check_output(output, overwrite, [path])
    with _open(path) as f:
        meta = _root_metadata(f, path, metadata)
        scans = _scan_per_sample(f, path)
    if id_feature is not None and id_feature in scans:
        raise IngestError(
            f"{path}: the file has a feature named {id_feature!r}, the name of the id feature; pass another "
            "id_feature (--id-feature) or id_feature=None",
            path=str(path),
        )
    bad: dict[tuple[str, str], tuple[str, str]] = {}
    features: dict[str, FeatureSpec | Mapping[str, Any]] = {}
    strings: set[str] = set()
    for feature, scan in scans.items():
        features[feature], is_string = _feature_spec(feature, scan, bad)
        if is_string:
            strings.add(feature)
    if id_feature is not None:
        features[id_feature] = FeatureSpec(encoding="string", role="metadata")
    splits: dict[str, list[SourceItem]] = {}
    skipped: list[Skipped] = []
    names = sorted({s for scan in scans.values() for s in scan.samples}, key=_split_order)
    for split in names:
        owners = {feature: scan.samples[split] for feature, scan in scans.items() if split in scan.samples}
        missing_features = sorted(set(scans) - set(owners))
        if missing_features:
            present = sorted(owners)
            raise IngestError(
                f"{path}: split {split!r} has features {present} but not {missing_features}, which other splits "
                f"have ({', '.join(scans[m].groups[next(iter(scans[m].groups))] for m in missing_features)}); "
                "every split needs the same features: add the missing groups or remove the extra ones",
                path=str(path),
            )
        ids = sorted({i for samples in owners.values() for i in samples}, key=natural_key)
        items: list[SourceItem] = []
        for sample_id in ids:
            problem = _sample_problem(split, sample_id, owners, scans, bad)
            if problem is not None:
                where, reason = problem
                if on_error == "stop":
                    raise IngestError(
                        f"{path}:{where}: {reason}; nothing was written to {output}. Fix the file, or skip such "
                        "samples with on_error='skip' (--on-error skip)",
                        path=str(path),
                        hdf5_path=where,
                    )
                skipped.append(Skipped(f"{path}:{where}", reason))
                continue
            parts = tuple((feature, samples[sample_id][0]) for feature, samples in sorted(owners.items()))
            items.append(SourceItem(split, sample_id, parts))
        splits[split] = items
    decode = functools.partial(_decode_sample, str(path), frozenset(strings), id_feature)
    try:
        return ingest(
            output,
            splits,
            decode,
            metadata=meta,
            features=features,
            compression=compression,
            shuffle=shuffle,
            seed=seed,
            workers=workers,
            processes=workers > 1,
            on_error=on_error,
            progress=progress,
            skipped=skipped,
            overwrite=overwrite,
        )
    finally:
        _close_sources()


def _split_order(name: str) -> tuple[int, str]:
    """Standard splits first, in train/validation/test order, then the others by name."""
    standard = spec.STANDARD_SPLITS
    return (standard.index(name), "") if name in standard else (len(standard), name)


def _sample_problem(
    split: str,
    sample_id: str,
    owners: Mapping[str, Mapping[str, tuple[str, tuple[int, ...], np.dtype[Any]]]],
    scans: Mapping[str, _FeatureScan],
    bad: Mapping[tuple[str, str], tuple[str, str]],
) -> tuple[str, str] | None:
    """``(HDF5 path, reason)`` when the sample cannot be converted, else None."""
    present = {feature: samples[sample_id][0] for feature, samples in owners.items() if sample_id in samples}
    for feature in sorted(owners):
        if feature not in present:
            expected = f"{scans[feature].groups[split]}/{sample_id}"
            return next(iter(present.values())), (
                f"sample {sample_id!r} of split {split!r} has no {feature!r}: {expected} does not exist (the "
                f"features are matched by id across {sorted(scans[f].groups[split] for f in owners)})"
            )
    return bad.get((split, sample_id))


# --------------------------------------------------------------------------
# arrays layout

_BLOCKS: dict[tuple[str, str], tuple[int, int, np.ndarray]] = {}


@dataclass(frozen=True)
class _ArrayOptions:
    """What the row decoder needs to know (pickled to worker processes)."""

    source: str
    block_rows: Mapping[str, int]  # dataset path -> rows read at once
    strings: frozenset[str]  # dataset paths of string arrays
    categorical: frozenset[str]  # dataset paths of categorical labels (flattened to codes)
    cache_bytes: int


def _decode_row(options: _ArrayOptions, item: SourceItem) -> dict[str, Any]:
    """Row ``int(item.sample_id)`` of each array, read through a per-process block cache (module level: pickles)."""
    row = int(item.sample_id)
    f = _source_file(options.source, options.cache_bytes)
    out: dict[str, Any] = {}
    for feature, hdf5_path in item.parts:
        key = (options.source, hdf5_path)
        cached = _BLOCKS.get(key)
        if cached is None or not cached[0] <= row < cached[1]:
            step = options.block_rows[hdf5_path]
            start = row - row % step
            try:
                dataset = f[hdf5_path]
                stop = min(start + step, int(dataset.shape[0]))
                block = dataset.asstr()[start:stop] if hdf5_path in options.strings else dataset[start:stop]
            except (OSError, KeyError, ValueError, TypeError, UnicodeDecodeError) as exc:
                raise DecodeError(
                    f"{options.source}:{hdf5_path}", f"rows {start}:{start + step} cannot be read ({exc})"
                ) from None
            cached = _BLOCKS[key] = (start, stop, np.asarray(block))
        value = cached[2][row - cached[0]]
        if hdf5_path in options.categorical:
            value = np.asarray(value).reshape(()).astype(np.int64)
        elif hdf5_path in options.strings:
            value = str(value)
        out[feature] = value
    return out


def _block_rows(dataset: h5py.Dataset, shuffle: bool) -> int:
    """Rows read at once: whole chunks, about :data:`BLOCK_BYTES` (one row when reading in random order)."""
    if shuffle:
        return 1
    row_bytes = max(1, math.prod(int(n) for n in dataset.shape[1:]) * int(dataset.dtype.itemsize))
    rows = max(1, BLOCK_BYTES // row_bytes)
    if dataset.chunks is not None:
        chunk = int(dataset.chunks[0])
        rows = max(chunk, rows - rows % chunk)
    return rows


def _class_count(f: h5py.File, source: Path) -> int | None:
    """The number of classes from :data:`CLASS_COUNT_ATTRS`, or None when none is given."""
    found: dict[str, int] = {}
    for name in CLASS_COUNT_ATTRS:
        if name not in f.attrs:
            continue
        value = f.attrs[name]
        number = np.asarray(value)
        if number.shape != () or number.dtype.kind not in "iuf" or number != np.floor(number) or number < 1:
            raise IngestError(
                f"{source}: the root attribute {name} = {value!r} is not a whole number of classes >= 1; fix it or "
                "remove it (y is then stored as numbers)",
                path=str(source),
                hdf5_path="/",
            )
        found[name] = int(number)
    if len(set(found.values())) > 1:
        raise IngestError(
            f"{source}: the root attributes {found} disagree on the number of classes; keep one",
            path=str(source),
            hdf5_path="/",
        )
    return next(iter(found.values()), None)


def _check_labels(
    dataset: h5py.Dataset, classes: int, count_attr: str, source: Path, on_error: OnError
) -> tuple[set[int], list[Skipped]]:
    """Read ``y`` in blocks; return the rows outside ``[-1, classes)`` or not whole numbers (stop: raise)."""
    bad: set[int] = set()
    skipped: list[Skipped] = []
    step = _block_rows(dataset, shuffle=False)
    n = int(dataset.shape[0])
    for start in range(0, n, step):
        try:
            block = np.asarray(dataset[start : start + step]).reshape(-1)
        except OSError as exc:
            raise IngestError(
                f"{source}:{dataset.name} rows {start}:{start + step} cannot be read ({exc})",
                path=str(source),
                hdf5_path=dataset.name,
            ) from None
        with np.errstate(invalid="ignore"):
            whole = block == np.floor(block) if block.dtype.kind == "f" else np.ones(block.shape, bool)
            wrong = ~whole | (block < -1) | (block >= classes)
        for offset in np.flatnonzero(wrong).tolist():
            row, value = start + offset, block[offset].item()
            reason = (
                f"row {row} holds {value!r}, not a class code in [0, {classes}) given by the root attribute "
                f"{count_attr} (-1 marks a missing label, §6.5)"
            )
            if on_error == "stop":
                raise IngestError(
                    f"{source}:{dataset.name}: {reason}; nothing was written. Fix the label or the number of classes, "
                    "or skip such rows with on_error='skip' (--on-error skip)",
                    path=str(source),
                    hdf5_path=dataset.name,
                )
            bad.add(row)
            skipped.append(Skipped(f"{source}:{dataset.name}[{row}]", reason))
    return bad, skipped


def convert_hdf5_arrays(
    source: str | os.PathLike[str],
    output: str | os.PathLike[str],
    *,
    label: str = "y",
    metadata: Mapping[str, Any] | None = None,
    compression: str | None = None,
    shuffle: bool = False,
    seed: int | None = None,
    workers: int = 1,
    on_error: OnError = "stop",
    progress: bool | None = None,
    overwrite: bool = False,
) -> IngestReport:
    """Convert an HDF5 file of the arrays layout (``x_train``, ``y_train``, ...) to h5ml (§5, §6).

    See the module docstring for the names, the categorical label and the
    metadata kept.

    Parameters
    ----------
    source
        The HDF5 file: root datasets ``(N, ...)``, numeric or strings.
    output
        The h5ml file to write.
    label
        The feature stored categorical when the file gives a number of
        classes (:data:`CLASS_COUNT_ATTRS`); default ``"y"``.
    metadata
        Root metadata (§4.2) over the source's attributes and the defaults.
    compression
        ``"gzip"`` or None.
    shuffle, seed
        Store each split in a seeded random order (§7.6). Rows are then read
        one at a time (with a 64 MiB chunk cache): slower on compressed sources.
    workers
        Not used: the rows are read in this process, in blocks of whole
        chunks (several processes would each read every block). Accepted so
        that every converter takes the same options.
    on_error
        ``"stop"``: a label outside ``[-1, K)`` or not a whole number, or an
        unreadable block, raises :class:`h5ml.IngestError` naming the file,
        the dataset and the row; nothing is written. ``"skip"``: bad label rows
        (all features of that row) are left out and recorded as
        ``<file>:/y_train[<row>]``; an unreadable block still stops.
    progress
        Show a progress bar on stderr (None: when stderr is a terminal).
    overwrite
        Replace an existing ``output``.

    Returns
    -------
    IngestReport
        Samples per split, skipped rows, time taken.

    Raises
    ------
    FileNotFoundError
        If ``source`` does not exist.
    IngestError
        If ``source`` is not HDF5, does not have the arrays layout (a root
        group, a scalar dataset, an unsupported dtype, two arrays for one
        feature, arrays of a split with different lengths, names breaking
        §5.1.1), the class-count attributes are invalid or disagree, or
        (``on_error="stop"``) a label is out of range.
    FileExistsError, IsADirectoryError
        As :func:`h5ml.ingest.check_output`.
    """
    del workers  # see the docstring
    path = _check_source(source)
    check_output(output, overwrite, [path])
    arrays: dict[str, dict[str, h5py.Dataset]] = {}
    features: dict[str, FeatureSpec | Mapping[str, Any]] = {}
    block_rows: dict[str, int] = {}
    strings: set[str] = set()
    categorical: set[str] = set()
    bad_rows: dict[str, set[int]] = {}
    skipped: list[Skipped] = []
    with _open(path) as f:
        meta = _root_metadata(f, path, metadata)
        classes = _class_count(f, path)
        count_attr = next((name for name in CLASS_COUNT_ATTRS if name in f.attrs), "")
        for name, obj in _hard_members(f, path):
            where = f"/{name}"
            if not isinstance(obj, h5py.Dataset):
                raise IngestError(
                    f"{path}:{where} is a group; the arrays layout has only datasets at the root (/x_train, "
                    "/y_train, ...). Use convert_hdf5_per_sample for groups of samples",
                    path=str(path),
                    hdf5_path=where,
                )
            kind = _kind(obj.dtype)
            if kind is None or obj.ndim == 0:
                what = f"the HDF5 type {obj.dtype}" if kind is None else "no sample axis (a scalar dataset)"
                raise IngestError(
                    f"{path}:{where} has {what}; the arrays layout needs numeric or string arrays of shape (N, ...) "
                    "(§3.2, §5.3): remove or convert it",
                    path=str(path),
                    hdf5_path=where,
                )
            if kind == "string" and obj.ndim != 1:
                raise IngestError(
                    f"{path}:{where} is a string array of shape {obj.shape}; string features hold one string per "
                    "sample, shape (N,) (§6.4)",
                    path=str(path),
                    hdf5_path=where,
                )
            split, feature = split_array_name(name)
            for what, value in (("split", split), ("feature", feature)):
                if not spec.is_valid_name(value):
                    raise IngestError(
                        f"{path}:{where} gives the {what} name {value!r}, which breaks the naming rule (§5.1.1); "
                        "rename the dataset",
                        path=str(path),
                        hdf5_path=where,
                    )
            if feature in arrays.setdefault(split, {}):
                raise IngestError(
                    f"{path}: {arrays[split][feature].name} and {where} both map to feature {feature!r} of split "
                    f"{split!r}; rename one of them",
                    path=str(path),
                    hdf5_path=where,
                )
            arrays[split][feature] = obj
            block_rows[where] = _block_rows(obj, shuffle)
            if kind == "string":
                strings.add(where)
        for split, feats in arrays.items():
            lengths = {ds.name: int(ds.shape[0]) for ds in feats.values()}
            if len(set(lengths.values())) > 1:
                listed = ", ".join(f"{k} has {v}" for k, v in lengths.items())
                raise IngestError(
                    f"{path}: the arrays of split {split!r} have different numbers of samples ({listed}); every "
                    "feature of a split has one sample per row (§5.3)",
                    path=str(path),
                )
        all_features = {feat for feats in arrays.values() for feat in feats}
        for feat in all_features:
            features[feat] = FeatureSpec(role="target" if feat == label else ROLE_NAMES.get(feat))
        labelled = [feats[label] for feats in arrays.values() if label in feats]
        if classes is not None and labelled and all(_is_code_shaped(ds) for ds in labelled):
            for ds in labelled:
                if ds.name in strings:
                    raise IngestError(
                        f"{path}:{ds.name} holds strings but the root attribute {count_attr} gives {classes} classes; "
                        "a categorical label needs integer codes (§6.5)",
                        path=str(path),
                        hdf5_path=ds.name,
                    )
                rows, problems = _check_labels(ds, classes, count_attr, path, on_error)
                bad_rows[ds.name] = rows
                skipped += problems
                categorical.add(ds.name)
            features[label] = FeatureSpec(
                encoding="categorical", role="target", class_names=[str(k) for k in range(classes)]
            )
        splits: dict[str, list[SourceItem]] = {}
        for split in sorted(arrays, key=_split_order):
            feats = arrays[split]
            n = int(next(iter(feats.values())).shape[0])
            drop = set().union(*(bad_rows.get(ds.name, set()) for ds in feats.values()))
            parts = tuple((feat, ds.name) for feat, ds in sorted(feats.items()))
            splits[split] = [SourceItem(split, str(row), parts) for row in range(n) if row not in drop]
    options = _ArrayOptions(
        str(path),
        block_rows,
        frozenset(strings),
        frozenset(categorical),
        _SHUFFLE_CACHE_BYTES if shuffle else 0,
    )
    try:
        return ingest(
            output,
            splits,
            functools.partial(_decode_row, options),
            metadata=meta,
            features=features,
            compression=compression,
            shuffle=shuffle,
            seed=seed,
            workers=1,
            on_error=on_error,
            progress=progress,
            skipped=skipped,
            overwrite=overwrite,
        )
    finally:
        _close_sources()


def _is_code_shaped(dataset: h5py.Dataset) -> bool:
    """Whether a label array holds one value per sample: shape (N,) or (N, 1)."""
    shape = tuple(int(n) for n in dataset.shape)
    return len(shape) == 1 or (len(shape) == 2 and shape[1] == 1)


# --------------------------------------------------------------------------
# either layout


def convert_hdf5(
    source: str | os.PathLike[str],
    output: str | os.PathLike[str],
    *,
    layout: Layout | None = None,
    id_feature: str | None = ID_FEATURE,
    label: str | None = None,
    metadata: Mapping[str, Any] | None = None,
    compression: str | None = None,
    shuffle: bool = False,
    seed: int | None = None,
    workers: int = 1,
    on_error: OnError = "stop",
    progress: bool | None = None,
    overwrite: bool = False,
) -> IngestReport:
    """Convert an HDF5 file of either tutorial layout to h5ml, detecting the layout (:func:`detect_layout`).

    Parameters
    ----------
    source, output
        The HDF5 file and the h5ml file to write.
    layout
        ``"per-sample"`` or ``"arrays"`` to skip detection; None detects it.
    id_feature
        As :func:`convert_hdf5_per_sample` (per-sample layout only).
    label
        As :func:`convert_hdf5_arrays` (arrays layout only; None means ``"y"``).
        Given with the per-sample layout, it is refused: that layout stores
        each feature as its datasets hold it.
    metadata, compression, shuffle, seed, workers, on_error, progress, overwrite
        As :func:`convert_hdf5_per_sample` and :func:`convert_hdf5_arrays`.

    Returns
    -------
    IngestReport
        Samples per split, skipped samples, time taken.

    Raises
    ------
    FileNotFoundError
        If ``source`` does not exist.
    IngestError
        If ``source`` is not HDF5 or has neither layout (the message describes
        both), or as the converter of its layout.
    ValueError
        If ``layout`` is not one of the two.
    FileExistsError, IsADirectoryError
        As :func:`h5ml.ingest.check_output`.
    """
    if layout not in (None, "per-sample", "arrays"):
        raise ValueError(f"layout must be 'per-sample', 'arrays' or None (detect), got {layout!r}")
    chosen = detect_layout(source) if layout is None else layout
    common: dict[str, Any] = {
        "metadata": metadata,
        "compression": compression,
        "shuffle": shuffle,
        "seed": seed,
        "workers": workers,
        "on_error": on_error,
        "progress": progress,
        "overwrite": overwrite,
    }
    if chosen == "per-sample":
        if label is not None:
            raise IngestError(
                f"{source}: label={label!r} (--label) applies to the x_<split>/y_<split> arrays layout; this file "
                "holds one dataset per sample, whose features are stored as their datasets hold them. Leave out "
                "--label (store class codes as categorical after converting, or convert the arrays layout)",
                path=os.fspath(source),
            )
        return convert_hdf5_per_sample(source, output, id_feature=id_feature, **common)
    return convert_hdf5_arrays(source, output, label="y" if label is None else label, **common)
