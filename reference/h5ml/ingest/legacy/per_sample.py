"""HDF5 files of the per-sample layout (one dataset per sample, in groups): :func:`convert_hdf5_per_sample` (§5, §6).

The layout, its names and the encodings chosen are described in
:mod:`h5ml.ingest.legacy`. The groups are scanned without reading a
sample; the samples are then read one dataset at a time through
:func:`h5ml.ingest.pipeline.ingest` (:func:`decode_sample`, in the workers).
"""

from __future__ import annotations

import functools
import os
import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import h5py
import numpy as np

from h5ml.errors import IngestError
from h5ml.ingest.docstrings import shared_doc
from h5ml.ingest.features import ROLE_NAMES
from h5ml.ingest.legacy.source import (
    METADATA_NOTE,
    PROCESSES_NOTE,
    check_source,
    close_sources,
    hard_members,
    open_source,
    root_metadata,
    source_file,
    value_kind,
)
from h5ml.ingest.naming import SPLIT_SUFFIXES, name_problem, natural_key, split_array_name, split_order
from h5ml.ingest.options import ConvertOptions, OnError
from h5ml.ingest.output import check_output
from h5ml.ingest.pipeline import ingest
from h5ml.ingest.report import ID_FEATURE, DecodeError, IngestReport, Skipped, SourceItem
from h5ml.model.values import FeatureSpec

__all__ = ["SINGLE_FEATURE", "convert_hdf5_per_sample", "decode_sample", "parse_group_name"]

#: Feature name of the samples of a ``<split>/<id>`` group (one feature per split).
SINGLE_FEATURE: Final = "data"

_PREFIX_RE: Final = re.compile(r"^(?P<split>" + "|".join(SPLIT_SUFFIXES) + r")_(?P<feature>.+)$")
#: One sample found by the scan: its HDF5 path, shape and dtype.
_Sample = tuple[str, tuple[int, ...], np.dtype[Any]]


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
        :func:`h5ml.ingest.naming.split_array_name` (``"data_test"`` ->
        ``("test", "data")``, ``"images"`` -> ``("train", "images")``).
    """
    if name in SPLIT_SUFFIXES:
        return SPLIT_SUFFIXES[name], SINGLE_FEATURE
    match = _PREFIX_RE.match(name)
    if match is not None:
        return SPLIT_SUFFIXES[match.group("split")], match.group("feature")
    return split_array_name(name)


@dataclass
class _FeatureScan:
    """What the scan found for one feature (all splits): each sample's HDF5 path, shape and dtype."""

    samples: dict[str, dict[str, _Sample]] = field(default_factory=dict)
    groups: dict[str, str] = field(default_factory=dict)  # split -> the group holding its samples


def _leaves(f: h5py.File, source: Path) -> list[tuple[str, str, h5py.Group]]:
    """``(split, feature, group of samples)`` for every group of samples, from the root's structure."""
    leaves: list[tuple[str, str, h5py.Group]] = []
    for name, obj in hard_members(f, source):
        if not isinstance(obj, h5py.Group):
            raise IngestError(
                f"{source}:/{name} is a dataset at the root; the per-sample layout has only groups there "
                "(/train_data/1, ...). Use convert_hdf5_arrays for root datasets",
                path=str(source),
                hdf5_path=f"/{name}",
            )
        members = hard_members(obj, source)
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
    return leaves


def _scan(f: h5py.File, source: Path) -> dict[str, _FeatureScan]:
    """Feature -> its samples by split and id, from the group structure (metadata only, no sample is read)."""
    scans: dict[str, _FeatureScan] = {}
    for split, feature, group in _leaves(f, source):
        for kind, value in (("split", split), ("feature", feature)):
            problem = name_problem(kind, value)
            if problem is not None:
                raise IngestError(
                    f"{source}:{group.name}: {problem}; rename the group",
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
        for sample_id, obj in hard_members(group, source):
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
            kind = value_kind(dtype)
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


def decode_sample(source: str, strings: frozenset[str], id_feature: str | None, item: SourceItem) -> dict[str, Any]:
    """Read one sample's datasets (module level: it pickles for worker processes).

    Raises
    ------
    h5ml.ingest.DecodeError
        If a dataset cannot be read.
    """
    f = source_file(source)
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


def _sample_problem(
    split: str,
    sample_id: str,
    owners: Mapping[str, Mapping[str, _Sample]],
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


def _items(
    path: Path,
    out: Path,
    scans: Mapping[str, _FeatureScan],
    bad: Mapping[tuple[str, str], tuple[str, str]],
    on_error: OnError,
) -> tuple[dict[str, list[SourceItem]], list[Skipped]]:
    """The items of every split, matched by id in natural order; bad samples stop or are skipped."""
    splits: dict[str, list[SourceItem]] = {}
    skipped: list[Skipped] = []
    names = sorted({s for scan in scans.values() for s in scan.samples}, key=split_order)
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
                        f"{path}:{where}: {reason}; nothing was written to {out}. Fix the file, or skip such "
                        "samples with on_error='skip' (--on-error skip)",
                        path=str(path),
                        hdf5_path=where,
                    )
                skipped.append(Skipped(f"{path}:{where}", reason))
                continue
            parts = tuple((feature, samples[sample_id][0]) for feature, samples in sorted(owners.items()))
            items.append(SourceItem(split, sample_id, parts))
        splits[split] = items
    return splits, skipped


@shared_doc(
    notes={
        "metadata": METADATA_NOTE,
        "workers": "Each opens the file by path.",
        "processes": PROCESSES_NOTE,
        "on_error": (
            "A bad sample is one missing one of its split's features, of a type h5ml cannot store, or "
            "unreadable; all its features are left out."
        ),
    }
)
def convert_hdf5_per_sample(
    source: str | os.PathLike[str],
    output: str | os.PathLike[str],
    *,
    id_feature: str | None = ID_FEATURE,
    metadata: Mapping[str, Any] | None = None,
    features: Mapping[str, FeatureSpec | Mapping[str, Any]] | None = None,
    compression: str | None = None,
    level: int | None = None,
    shuffle: bool = False,
    seed: int | None = None,
    workers: int = 1,
    processes: bool = False,
    on_error: OnError = "stop",
    progress: bool | None = None,
    overwrite: bool = False,
) -> IngestReport:
    """Convert an HDF5 file of the per-sample layout (one dataset per sample) to h5ml (§5, §6).

    See :mod:`h5ml.ingest.legacy` for the layout, the names, the encodings
    chosen and the metadata kept.

    Parameters
    ----------
    source
        The HDF5 file.
    output
        The h5ml file to write.
    id_feature
        Name of the string feature holding each sample's id (role
        ``metadata``), or None to store no ids.
    {shared_parameters}

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
    {shared_raises}
    """
    options = ConvertOptions.pick(locals())
    path = check_source(source)
    out = check_output(output, options.overwrite, [path])
    with open_source(path) as f:
        meta = root_metadata(f, path, options.metadata, out)
        scans = _scan(f, path)
    if id_feature is not None and id_feature in scans:
        raise IngestError(
            f"{path}: the file has a feature named {id_feature!r}, the name of the id feature; pass another "
            "id_feature or id_feature=None",
            path=str(path),
        )
    bad: dict[tuple[str, str], tuple[str, str]] = {}
    declared: dict[str, FeatureSpec] = {}
    strings: set[str] = set()
    for feature, scan in scans.items():
        declared[feature], is_string = _feature_spec(feature, scan, bad)
        if is_string:
            strings.add(feature)
    if id_feature is not None:
        declared[id_feature] = FeatureSpec(encoding="string", role="metadata")
    splits, skipped = _items(path, out, scans, bad, options.on_error)
    decode = functools.partial(decode_sample, str(path), frozenset(strings), id_feature)
    try:
        return ingest(out, splits, decode, options, metadata=meta, features=declared, skipped=skipped)
    finally:
        close_sources()
