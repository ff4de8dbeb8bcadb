"""Running a checked plan: every sample read where the plan says, decoded, and written in one pass (§4-§7).

:func:`run_plan` turns each split of a :class:`~h5ml.ingest.hdf5.plan.Plan`
into :class:`~h5ml.ingest.report.SourceItem` values (one per row, or one
per record id, in natural id order) and hands them to
:func:`h5ml.ingest.pipeline.ingest` with :func:`decode_sample`, which reads
each feature's value through a per-process block cache
(:mod:`~h5ml.ingest.hdf5.handles`): rows are read in blocks of whole HDF5
chunks of about :data:`BLOCK_BYTES`, never a whole dataset. A value the
plan cannot use (a record without the member, a label that is not one-hot,
a code outside ``[-1, K)``) is a :class:`~h5ml.ingest.report.DecodeError`
naming the file, the HDF5 path and the sample: the conversion stops, or
with ``on_error="skip"`` leaves the sample out and records why.
"""

from __future__ import annotations

import bisect
import functools
import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Final

import numpy as np

from h5ml.errors import ForbiddenStorageError, IngestError
from h5ml.ingest.hdf5.handles import BLOCKS, close_sources, source_file
from h5ml.ingest.hdf5.inventory import Inventory
from h5ml.ingest.hdf5.labels import code_problems
from h5ml.ingest.hdf5.plan import Feature, Part, Plan
from h5ml.ingest.hdf5.records import record_ids
from h5ml.ingest.hdf5.values import finish_value, part_rows, read_record, read_rows
from h5ml.ingest.naming import natural_key
from h5ml.ingest.options import ConvertOptions
from h5ml.ingest.pipeline import ingest
from h5ml.ingest.report import DecodeError, IngestReport, Skipped, SourceItem
from h5ml.model.values import FeatureSpec

__all__ = ["BLOCK_BYTES", "RunSpec", "decode_sample", "run_plan"]

#: Bytes of one part read at once, rounded to whole HDF5 chunks.
BLOCK_BYTES: Final = 8 << 20
#: The HDF5 chunk cache of a source read in random order (shuffled on write).
_SHUFFLE_CACHE_BYTES: Final = 64 << 20


@dataclass(frozen=True)
class _PartRun:
    part: Part
    offset: int  # the feature's sample index of the part's first row
    start: int  # the dataset row of the part's first row
    stop: int
    block: int  # rows read at once


@dataclass(frozen=True)
class _FeatureRun:
    feature: Feature
    parts: tuple[_PartRun, ...]
    offsets: tuple[int, ...]


@dataclass(frozen=True)
class RunSpec:
    """What :func:`decode_sample` needs (pickled to worker processes, and to Dask workers).

    Attributes
    ----------
    features
        ``(split, feature)`` -> where its samples are read: the plan's parts, their rows and block sizes.
    cache_bytes
        The HDF5 chunk cache of each source opened (0: h5py's default).
    allow_external
        The sources were walked with ``allow_external=True`` (§10.1).
    """

    features: Mapping[tuple[str, str], _FeatureRun]
    cache_bytes: int
    allow_external: bool = False  # the sources were walked with allow_external=True (§10.1)

    def sources(self, split: str | None = None) -> tuple[str, ...]:
        """The source files the features of ``split`` (None: of every split) read, each once, in the plan's order."""
        return tuple(
            dict.fromkeys(
                p.part.source for (name, _), run in self.features.items() if split in (None, name) for p in run.parts
            )
        )

    def reading_from(self, paths: Mapping[str, str]) -> RunSpec:
        """This spec with every part reading its source from ``paths[source]`` (the same rows, the same checks).

        A Dask worker opens the sources itself, in its own working folder, so the driver gives it the paths as
        the driver resolved them (absolute: :mod:`h5ml.ingest.dask.hdf5`). Messages then name those paths.
        """

        def moved(part: Part) -> Part:
            return part.model_copy(update={"source": paths.get(part.source, part.source)})

        features = {
            key: replace(
                run,
                feature=run.feature.model_copy(update={"parts": [moved(p) for p in run.feature.parts]}),
                parts=tuple(replace(p, part=moved(p.part)) for p in run.parts),
            )
            for key, run in self.features.items()
        }
        return replace(self, features=features)


def _block_rows(inv: Inventory, part: Part, shuffle: bool) -> int:
    node = inv.nodes[part.path]
    if shuffle or node.shape is None or node.dtype is None:
        return 1
    shape = tuple(reversed(node.shape)) if part.transpose else node.shape
    row = [s for i, s in enumerate(shape) if i != part.sample_axis]
    rows = max(1, BLOCK_BYTES // max(1, math.prod(row) * max(1, node.dtype.itemsize)))
    if node.chunks is not None:
        axis = len(shape) - 1 - part.sample_axis if part.transpose else part.sample_axis
        chunk = node.chunks[axis]
        rows = max(chunk, rows - rows % chunk)
    return rows


def _feature_run(feature: Feature, inventories: Mapping[str, Inventory], shuffle: bool) -> _FeatureRun:
    runs: list[_PartRun] = []
    offset = 0
    for part in feature.parts:
        if part.kind != "rows":
            runs.append(_PartRun(part, 0, 0, 0, 1))
            continue
        inv = inventories[part.source]
        node = inv.nodes[part.path]
        assert node.shape is not None
        a, b = part_rows(part, node.shape)
        runs.append(_PartRun(part, offset, a, b, _block_rows(inv, part, shuffle)))
        offset += b - a
    return _FeatureRun(feature, tuple(runs), tuple(r.offset for r in runs))


def _expected(part: Part, record_id: str) -> str:
    pieces = iter(record_id.split("/"))
    path = "/".join(next(pieces, "*") if p == "*" else p for p in part.path.split("/"))
    return path if part.member is None else f"{path}/{part.member}"


def _rows_value(run: _FeatureRun, row: int, cache_bytes: int, allow_external: bool) -> tuple[Any, str]:
    index = bisect.bisect_right(run.offsets, row) - 1
    part_run = run.parts[index]
    part = part_run.part
    dataset_row = part_run.start + row - part_run.offset
    where = f"{part.source}:{part.path}[{dataset_row}]"
    key = (part.source, part.path, part_run.start)
    cached = BLOCKS.get(key)
    if cached is None or not cached[0] <= dataset_row < cached[1]:
        a = part_run.start + ((dataset_row - part_run.start) // part_run.block) * part_run.block
        b = min(a + part_run.block, part_run.stop)
        f = source_file(part.source, cache_bytes)
        try:
            block = read_rows(f, part, a, b, f"{part.source}:{part.path}", allow_external=allow_external)
        except ForbiddenStorageError:
            raise  # a refusal of the whole source (§10.1), never a sample to skip
        except (OSError, KeyError, ValueError, TypeError, UnicodeDecodeError) as exc:
            raise DecodeError(f"{part.source}:{part.path}", f"rows {a}:{b} cannot be read ({exc})") from None
        cached = BLOCKS[key] = (a, b, block)
    return cached[2][dataset_row - cached[0]], where


def decode_sample(spec: RunSpec, item: SourceItem) -> dict[str, Any]:
    """The values of one sample: each feature read where its parts say, finished (squeeze, one-hot), checked.

    Parameters
    ----------
    spec
        The run's parts, per split and feature.
    item
        One sample: its split, id (row number or record id) and the location of each feature.

    Returns
    -------
    dict
        Feature -> value as :meth:`h5ml.Writer.append_sample` takes it.

    Raises
    ------
    h5ml.ingest.DecodeError
        Naming the file, HDF5 path and sample, for a value the plan cannot use.
    """
    out: dict[str, Any] = {}
    for name, location in item.parts:
        run = spec.features[(item.split, name)]
        feature = run.feature
        part = run.parts[0].part
        if part.kind == "ids":
            out[name] = item.sample_id
            continue
        if part.kind == "records":
            where = f"{part.source}:{location or _expected(part, item.sample_id)}"
            if not location:
                first = next((loc for _, loc in item.parts if loc and not loc.isdigit()), "")
                raise DecodeError(
                    f"{part.source}:{first}" if first else where,
                    f"sample {item.sample_id!r} of split {item.split!r} has no {name!r}: "
                    f"{_expected(part, item.sample_id)} does not exist",
                )
            try:
                f = source_file(part.source, spec.cache_bytes)
                value = read_record(f, part, location, allow_external=spec.allow_external)
            except KeyError as exc:
                missing = exc.args[0] if str(exc.args[0]).startswith("/") else _expected(part, item.sample_id)
                raise DecodeError(
                    where,
                    f"sample {item.sample_id!r} of split {item.split!r} has no {name!r}: {missing} does not exist",
                ) from None
            except (UnicodeDecodeError, ValueError) as exc:
                raise DecodeError(where, f"the value of {name!r} cannot be read ({exc})") from None
        else:
            value, where = _rows_value(run, int(location), spec.cache_bytes, spec.allow_external)
        try:
            value = finish_value(feature, value, where)
        except ValueError as exc:
            raise DecodeError(where, str(exc).removeprefix(f"{where}: ")) from None
        if feature.class_names is not None:
            bad = code_problems(np.asarray([value]), len(feature.class_names))
            if bad:
                count = len(feature.class_names)
                hint = ""
                if part.transpose and bad[0][1] == count:
                    hint = "; MATLAB labels often count from 1: subtract 1 in MATLAB, or put a placeholder first"
                raise DecodeError(
                    where,
                    f"{bad[0][1]!r} is not a code of the {count} class names of {name!r} (codes 0 to {count - 1}, -1 "
                    f"marks a missing label, §6.5){hint}",
                )
            value = np.int64(value)
        out[name] = value
    return out


def _items(
    split: str, features: list[Feature], inventories: Mapping[str, Inventory], n: int, on_error: str
) -> tuple[list[SourceItem], list[Skipped]]:
    """The split's samples: rows ``0..n-1``, or the records' ids (naturally sorted); records lacking a feature.

    A record id that one feature's pattern matches and another's does not
    is a sample without that feature: with ``on_error="stop"`` an
    :class:`~h5ml.errors.IngestError` naming the file, the HDF5 path and
    the missing object, before anything is written; with ``"skip"`` it is
    left out and recorded.
    """
    records = [f for f in features if f.parts[0].kind == "records"]
    if not records:
        return [SourceItem(split, str(i), tuple((f.name, str(i)) for f in features)) for i in range(n)], []
    maps = {f.name: record_ids(inventories[f.parts[0].source], f.parts[0].path) for f in records}
    ids = sorted(set().union(*(set(m) for m in maps.values())), key=natural_key)
    items: list[SourceItem] = []
    skipped: list[Skipped] = []
    for record in ids:
        parts = tuple((f.name, maps[f.name].get(record, "") if f.name in maps else "") for f in features)
        missing = [f for f in records if record not in maps[f.name]]
        if not missing:
            items.append(SourceItem(split, record, parts))
            continue
        part = missing[0].parts[0]
        first = next(loc for _, loc in parts if loc)
        reason = (
            f"sample {record!r} of split {split!r} has no {missing[0].name!r}: {_expected(part, record)} does not exist"
        )
        if on_error == "stop":
            raise IngestError(
                f"{part.source}:{first}: {reason}; nothing was written. Add it, leave the feature out of the plan, or "
                "skip such samples with on_error='skip' (--on-error skip)",
                path=part.source,
                hdf5_path=first,
            )
        skipped.append(Skipped(f"{part.source}:{first}", reason))
    return items, skipped


def _spec(feature: Feature) -> FeatureSpec:
    ragged_ndim = len(feature.sample_shape or []) if feature.encoding == "ragged" else None
    return FeatureSpec(
        encoding=feature.encoding,
        dtype=feature.dtype if feature.encoding in ("dense", "ragged") and feature.dtype else None,
        role=feature.role,
        class_names=feature.class_names,
        sample_ndim=ragged_ndim if ragged_ndim and ragged_ndim > 1 else None,
        attrs=feature.attrs or None,
    )


def run_plan(
    plan: Plan, inventories: Mapping[str, Inventory], output: Path, options: ConvertOptions, metadata: Mapping[str, Any]
) -> IngestReport:
    """Write the output of a checked plan (:func:`h5ml.ingest.hdf5.check.check_plan`).

    Parameters
    ----------
    plan
        The plan.
    inventories
        Its walked sources.
    output
        The h5ml file to write (checked by the caller).
    options
        The shared options.
    metadata
        The root metadata.

    Returns
    -------
    IngestReport
        Samples per split, skipped samples, time taken.
    """
    runs: dict[tuple[str, str], _FeatureRun] = {}
    declared: dict[str, FeatureSpec] = {}
    splits: dict[str, list[SourceItem]] = {}
    skipped: list[Skipped] = []
    for split in plan.splits:
        for feature in split.features:
            runs[(split.name, feature.name)] = _feature_run(feature, inventories, options.shuffle)
            if split.num_samples:  # an empty split has no batch to create its features from
                declared[f"{split.name}/{feature.name}"] = _spec(feature)
        splits[split.name], missing = _items(
            split.name, split.features, inventories, split.num_samples, options.on_error
        )
        skipped += missing
    allow_external = any(inv.allow_external for inv in inventories.values())
    spec = RunSpec(runs, _SHUFFLE_CACHE_BYTES if options.shuffle else 0, allow_external)
    try:
        return ingest(
            output,
            splits,
            functools.partial(decode_sample, spec),
            options,
            metadata=metadata,
            features=declared,
            skipped=skipped,
        )
    finally:
        close_sources()
