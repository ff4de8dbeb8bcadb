"""HDF5 files of the arrays layout (``x_train``, ``y_train``, ...): :func:`convert_hdf5_arrays` (§5, §6.5).

The names, the categorical label and the metadata kept are described in
:mod:`h5ml.ingest.legacy`. Rows are read in blocks of whole HDF5 chunks of
about :data:`BLOCK_BYTES` through a per-process block cache
(:func:`decode_row`), never whole.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import h5py
import numpy as np

from h5ml.errors import IngestError
from h5ml.ingest.docstrings import shared_doc
from h5ml.ingest.features import ROLE_NAMES
from h5ml.ingest.legacy.source import (
    BLOCKS,
    METADATA_NOTE,
    check_source,
    close_sources,
    hard_members,
    open_source,
    root_metadata,
    source_file,
    value_kind,
)
from h5ml.ingest.naming import CLASS_COUNT_NAMES, class_count, name_problem, split_array_name, split_order
from h5ml.ingest.options import ConvertOptions, OnError, parameter_error
from h5ml.ingest.output import check_output
from h5ml.ingest.pipeline import ingest
from h5ml.ingest.report import DecodeError, IngestReport, Skipped, SourceItem
from h5ml.model.values import FeatureSpec

__all__ = ["BLOCK_BYTES", "CLASS_COUNT_ATTRS", "convert_hdf5_arrays", "decode_row"]

#: Root attributes that may give the number of classes of ``y`` (arrays layout); all given must agree.
CLASS_COUNT_ATTRS: Final = CLASS_COUNT_NAMES
#: Bytes of one array read at once (arrays layout), rounded to whole HDF5 chunks.
BLOCK_BYTES: Final = 8 << 20
#: The HDF5 chunk cache of the source when rows are read in random order (shuffled on write).
_SHUFFLE_CACHE_BYTES: Final = 64 << 20
#: The label of the tutorials' arrays layout.
_DEFAULT_LABEL: Final = "y"


@dataclass(frozen=True)
class _ArrayOptions:
    """What the row decoder needs to know (pickled to worker processes)."""

    source: str
    block_rows: Mapping[str, int]  # dataset path -> rows read at once
    strings: frozenset[str]  # dataset paths of string arrays
    categorical: frozenset[str]  # dataset paths of categorical labels (flattened to codes)
    cache_bytes: int


def decode_row(options: _ArrayOptions, item: SourceItem) -> dict[str, Any]:
    """Row ``int(item.sample_id)`` of each array, read through a per-process block cache (module level: pickles).

    Raises
    ------
    h5ml.ingest.DecodeError
        If a block cannot be read.
    """
    row = int(item.sample_id)
    f = source_file(options.source, options.cache_bytes)
    out: dict[str, Any] = {}
    for feature, hdf5_path in item.parts:
        key = (options.source, hdf5_path)
        cached = BLOCKS.get(key)
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
            cached = BLOCKS[key] = (start, stop, np.asarray(block))
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


def _is_code_shaped(dataset: h5py.Dataset) -> bool:
    """Whether a label array holds one value per sample: shape (N,) or (N, 1)."""
    shape = tuple(int(n) for n in dataset.shape)
    return len(shape) == 1 or (len(shape) == 2 and shape[1] == 1)


def _root_arrays(f: h5py.File, path: Path) -> dict[str, dict[str, h5py.Dataset]]:
    """Split -> feature -> its root dataset, checked: numeric or string arrays (N, ...) with valid names."""
    arrays: dict[str, dict[str, h5py.Dataset]] = {}
    for name, obj in hard_members(f, path):
        where = f"/{name}"
        if not isinstance(obj, h5py.Dataset):
            raise IngestError(
                f"{path}:{where} is a group; the arrays layout has only datasets at the root (/x_train, "
                "/y_train, ...). Use convert_hdf5_per_sample for groups of samples",
                path=str(path),
                hdf5_path=where,
            )
        kind = value_kind(obj.dtype)
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
            problem = name_problem(what, value)
            if problem is not None:
                raise IngestError(f"{path}:{where}: {problem}; rename the dataset", path=str(path), hdf5_path=where)
        if feature in arrays.setdefault(split, {}):
            raise IngestError(
                f"{path}: {arrays[split][feature].name} and {where} both map to feature {feature!r} of split "
                f"{split!r}; rename one of them",
                path=str(path),
                hdf5_path=where,
            )
        arrays[split][feature] = obj
    for split, feats in arrays.items():
        lengths = {ds.name: int(ds.shape[0]) for ds in feats.values()}
        if len(set(lengths.values())) > 1:
            listed = ", ".join(f"{k} has {v}" for k, v in lengths.items())
            raise IngestError(
                f"{path}: the arrays of split {split!r} have different numbers of samples ({listed}); every "
                "feature of a split has one sample per row (§5.3)",
                path=str(path),
            )
    return arrays


_NOT_USED = (
    "Not used: the rows are read in this process, in blocks of whole chunks (several workers would each read "
    "every block)."
)


@shared_doc(
    notes={
        "metadata": METADATA_NOTE,
        "shuffle": "Rows are then read one at a time (with a 64 MiB chunk cache): slower on compressed sources.",
        "workers": _NOT_USED,
        "processes": _NOT_USED,
        "on_error": (
            "A bad row is one whose label is outside ``[-1, K)`` or not a whole number (all features of that "
            "row are left out, recorded as ``<file>:/y_train[<row>]``); an unreadable block always stops."
        ),
    }
)
def convert_hdf5_arrays(
    source: str | os.PathLike[str],
    output: str | os.PathLike[str],
    *,
    label: str | None = None,
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
    """Convert an HDF5 file of the arrays layout (``x_train``, ``y_train``, ...) to h5ml (§5, §6).

    See :mod:`h5ml.ingest.legacy` for the names, the categorical label and
    the metadata kept.

    Parameters
    ----------
    source
        The HDF5 file: root datasets ``(N, ...)``, numeric or strings.
    output
        The h5ml file to write.
    label
        The feature with role ``target``, stored categorical when the file
        gives a number of classes (:data:`CLASS_COUNT_ATTRS`); None (the
        default) means ``"y"``, the tutorials' name.
    {shared_parameters}

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
    h5ml.errors.ParameterError
        If ``label`` is given and names no array of the file.
    {shared_raises}
    """
    options = ConvertOptions.pick(locals())
    given_label, label = label, _DEFAULT_LABEL if label is None else label
    path = check_source(source)
    out = check_output(output, options.overwrite, [path])
    declared: dict[str, FeatureSpec] = {}
    categorical: set[str] = set()
    bad_rows: dict[str, set[int]] = {}
    skipped: list[Skipped] = []
    with open_source(path) as f:
        meta = root_metadata(f, path, options.metadata, out)
        counts = {name: f.attrs[name] for name in CLASS_COUNT_ATTRS if name in f.attrs}
        found = class_count(counts, str(path), "the root attribute", "y is then stored as numbers", hdf5_path="/")
        count_attr, classes = found if found is not None else ("", None)
        arrays = _root_arrays(f, path)
        block_rows = {ds.name: _block_rows(ds, options.shuffle) for feats in arrays.values() for ds in feats.values()}
        strings = {ds.name for feats in arrays.values() for ds in feats.values() if value_kind(ds.dtype) == "string"}
        for feat in {feat for feats in arrays.values() for feat in feats}:
            declared[feat] = FeatureSpec(role="target" if feat == label else ROLE_NAMES.get(feat))
        labelled = [feats[label] for feats in arrays.values() if label in feats]
        if given_label is not None and not labelled:
            names = sorted({feat for feats in arrays.values() for feat in feats})
            raise parameter_error("label", f"{path}: label {label!r} names no array of the file; its features: {names}")
        if classes is not None and labelled and all(_is_code_shaped(ds) for ds in labelled):
            for ds in labelled:
                if ds.name in strings:
                    raise IngestError(
                        f"{path}:{ds.name} holds strings but the root attribute {count_attr} gives {classes} classes; "
                        "a categorical label needs integer codes (§6.5)",
                        path=str(path),
                        hdf5_path=ds.name,
                    )
                rows, problems = _check_labels(ds, classes, count_attr, path, options.on_error)
                bad_rows[ds.name] = rows
                skipped += problems
                categorical.add(ds.name)
            declared[label] = FeatureSpec(
                encoding="categorical", role="target", class_names=[str(k) for k in range(classes)]
            )
        splits: dict[str, list[SourceItem]] = {}
        for split in sorted(arrays, key=split_order):
            feats = arrays[split]
            n = int(next(iter(feats.values())).shape[0])
            drop = set().union(*(bad_rows.get(ds.name, set()) for ds in feats.values()))
            parts = tuple((feat, ds.name) for feat, ds in sorted(feats.items()))
            splits[split] = [SourceItem(split, str(row), parts) for row in range(n) if row not in drop]
    decoding = _ArrayOptions(
        str(path),
        block_rows,
        frozenset(strings),
        frozenset(categorical),
        _SHUFFLE_CACHE_BYTES if options.shuffle else 0,
    )
    in_this_process = dataclasses.replace(options, workers=1, processes=False)
    try:
        return ingest(
            out,
            splits,
            functools.partial(decode_row, decoding),
            in_this_process,
            metadata=meta,
            features=declared,
            skipped=skipped,
        )
    finally:
        close_sources()
