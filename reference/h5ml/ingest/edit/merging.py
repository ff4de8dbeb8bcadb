"""``h5ml merge``: :func:`merge` joins h5ml files with equal features into one file (§4-§8).

A split present in several files gets their samples in file order; the
files' features must agree (:func:`h5ml.ingest.edit.copying.feature_signature`),
hold no sample id twice in one split (:mod:`h5ml.ingest.edit.ids`), and come
from source splits of one name (:mod:`h5ml.ingest.edit.source_splits`, §4.7).
What the new file keeps is described in :mod:`h5ml.ingest.edit`.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from h5ml.errors import IngestError
from h5ml.ingest.docstrings import shared_doc
from h5ml.ingest.edit.copying import (
    Compression,
    FeatureSignature,
    check_compression,
    copy_rows,
    declaration,
    feature_signature,
    root_metadata,
)
from h5ml.ingest.edit.ids import check_ids
from h5ml.ingest.edit.source_splits import merged_from
from h5ml.ingest.options import parameter_error
from h5ml.ingest.output import check_output
from h5ml.ingest.progress import ProgressBars
from h5ml.ingest.provenance import SOURCE_SPLITS_ATTR, read, record, union
from h5ml.ingest.report import ID_FEATURE, IngestReport
from h5ml.model.paths import require_regular_file
from h5ml.reader import Dataset
from h5ml.reader import open_file as open_dataset
from h5ml.writer import Writer

__all__ = ["merge"]


@shared_doc(names=("progress", "overwrite", "allow_external"))
def merge(
    sources: Sequence[str | os.PathLike[str]],
    output: str | os.PathLike[str],
    *,
    metadata: Mapping[str, Any] | None = None,
    compression: Compression = "keep",
    progress: bool | None = None,
    overwrite: bool = False,
    allow_external: bool = False,
    id_feature: str | None = ID_FEATURE,
    allow_duplicate_ids: bool = False,
    allow_mixed_splits: bool = False,
) -> IngestReport:
    """Join h5ml files with equal features into one file (§4-§8).

    A split present in several files gets their samples concatenated in file
    order; its features must be equal in those files: the same names, and
    each the same encoding, dtype, sample shape, class names, media type,
    sample rate and units (:func:`h5ml.ingest.edit.feature_signature`). Splits appear in the
    order they are first met. Root metadata is the
    first file's, with ``source`` set to the JSON list of the inputs as given;
    feature attributes (role, description) are the first file's. Two files
    whose splits of the same name share a sample id (the feature
    ``id_feature``) are refused unless ``allow_duplicate_ids`` (see
    :mod:`h5ml.ingest.edit`); this is checked before anything is written.

    Each converted input records where its splits came from (the root
    attribute ``h5ml-ingest:source-splits``, :mod:`h5ml.ingest.provenance`):
    a split is refused when two inputs recorded different source split names
    for it (``x_test`` arrays converted into ``train``, merged with real
    training data), unless ``allow_mixed_splits``; an input without a record
    is merged as before. The new file records, per split, the union of the
    inputs' entries, and the report states per split which input splits
    went in (:attr:`IngestReport.merged_from`, printed by its summary).

    Parameters
    ----------
    sources
        The files to join, at least one, each once.
    output
        The new file (see :func:`h5ml.ingest.check_output`; none of the sources).
    metadata
        Root attributes (§4.2) over the first file's.
    compression
        ``"keep"`` (each feature as in the first file that has it), ``"gzip"`` or None.
    {shared_parameters}
    id_feature
        The feature that holds each sample's id: checked in every split that
        several files hold and that has it as a ``string`` feature or a
        ``dense`` feature of integer scalars. Default ``"id"``, the name the
        converters use, checked where such a feature exists; any other name
        must be such a feature in every split merged (else ParameterError). None
        checks nothing.
    allow_duplicate_ids
        Merge files whose splits share sample ids (the merged split then
        holds each such id more than once).
    allow_mixed_splits
        Merge a split whose inputs recorded different source split names
        (the merged split then mixes them; its record lists every one).

    Returns
    -------
    IngestReport
        The output, the samples written per split, the input splits that
        went into each (``merged_from``: ``"a.h5:train (source split
        train)"``, ``"(no record)"`` for an input without one) and the time taken.

    Raises
    ------
    h5ml.errors.ParameterError
        If no source is given, a source is given twice, ``compression`` is
        invalid, or ``id_feature`` is not the default and cannot be checked.
    h5ml.IngestError
        If the files' features differ (the message names both files,
        the split and the feature, and what differs), or two files hold the
        same sample id in one split and ``allow_duplicate_ids`` is False (the
        message names both files, the split, the id feature, an example id
        and its rows); or two files recorded different source split names for
        one split and ``allow_mixed_splits`` is False (the message names the
        split, both files and the names each recorded); or an input's record
        is malformed (the message names the file and the attribute).
    FileNotFoundError
        If a source does not exist.
    FileExistsError, IsADirectoryError
        As :func:`h5ml.ingest.check_output` (also when ``output`` is a source).
    h5ml.H5MLError
        If a source cannot be read (as :func:`h5ml.open`); the output is unchanged.
    """
    check_compression(compression)
    start = time.perf_counter()
    paths = [Path(s) for s in sources] if not isinstance(sources, (str, os.PathLike)) else []
    if not paths:
        raise parameter_error(
            "sources", "merge needs a list of at least one h5ml file (sources=[a, b, ...])", option="SOURCES"
        )
    for path in paths:
        require_regular_file(path)
    seen: dict[Path, Path] = {}
    for path in paths:
        key = path.resolve()
        if key in seen:
            raise parameter_error(
                "sources", f"{path} is given twice (also as {seen[key]}); each file is merged once", option="SOURCES"
            )
        seen[key] = path
    out = check_output(output, overwrite, paths)
    datasets = [open_dataset(path, allow_external=allow_external) for path in paths]
    try:
        order = _merge_plan(paths, datasets)
        records = {path: read(ds, where=path) for path, ds in zip(paths, datasets, strict=True)}
        inputs = merged_from(order, records, allow_mixed_splits=allow_mixed_splits)
        if id_feature is not None and not allow_duplicate_ids:
            for name, members in order.items():
                check_ids(name, members, id_feature)
        root = root_metadata(datasets[0], {"source": json.dumps([os.fspath(s) for s in sources])})
        root.pop(SOURCE_SPLITS_ATTR, None)  # the first file's; the merged file records the union
        record(root, {name: union([records[path] for path, _ in members], name) for name, members in order.items()})
        root.update(metadata or {})
        report = IngestReport(out, merged_from=inputs)
        declared = {  # before the output exists, so that a value that cannot be copied names the source (§1.4.1)
            (name, feature): declaration(
                members[0][1][name].feature(feature), compression, members[0][1].format_version, report.notes
            )
            for name, members in order.items()
            for feature in members[0][1][name].features
        }
        total = sum(ds[name].num_samples for name, members in order.items() for _, ds in members)
        with ProgressBars(progress, total) as bars, Writer(out, root) as writer:
            for name, members in order.items():
                first = members[0][1][name]
                count = sum(ds[name].num_samples for _, ds in members)
                seed = first.shuffle_seed if len(members) == 1 else None
                writer.add_split(name, first.description, shuffle_seed=seed, expected_samples=count)
                names = list(first.features)
                for feature in names:
                    writer.add_feature(name, feature, **declared[name, feature])
                task = bars.add(f"{out.name}: {name}", count)
                report.samples[name] = 0
                for _, ds in members:
                    split = ds[name]
                    report.samples[name] += copy_rows(writer, name, split, names, range(split.num_samples), bars, task)
    finally:
        for ds in datasets:
            ds.close()
    report.seconds = time.perf_counter() - start
    return report


def _merge_plan(paths: Sequence[Path], datasets: Sequence[Dataset]) -> dict[str, list[tuple[Path, Dataset]]]:
    """Split -> the files (path as given, open file) that hold it, in file order, after checking that their
    features agree split by split.

    The first file that holds a split is the reference of that split: every
    other file's split of that name must have the same feature names, each
    with the same :func:`feature_signature`.
    """
    reference: dict[str, tuple[Path, dict[str, FeatureSignature]]] = {}
    order: dict[str, list[tuple[Path, Dataset]]] = {}
    for path, ds in zip(paths, datasets, strict=True):
        for split in (ds[name] for name in ds.every_split()):
            split.every_feature()  # SPEC §6.1-R7: a feature this reader cannot read is refused, not left out
            found = {name: feature_signature(feature) for name, feature in split.features.items()}
            if split.name not in reference:
                reference[split.name] = (path, found)
                order[split.name] = [(path, ds)]
                continue
            where, expected = reference[split.name]
            missing = [name for name in expected if name not in found]
            extra = [name for name in found if name not in expected]
            if missing or extra:
                name, holder, other = (missing[0], where, path) if missing else (extra[0], path, where)
                raise IngestError(
                    f"cannot merge {where} and {path}: feature {name!r} of split {split.name!r} is in {holder} but "
                    f"not in {other} (only in {where}: {missing}; only in {path}: {extra}); merge joins files whose "
                    "splits have the same features: drop features first (h5ml subset --feature)",
                    path=str(path),
                )
            for name, signature in found.items():
                if signature != expected[name]:
                    raise IngestError(
                        f"cannot merge {where} and {path}: feature {name!r} of split {split.name!r} is "
                        f"{expected[name].describe()} in {where} but {signature.describe()} in {path}; merge joins "
                        "files whose features have the same encoding, dtype, sample shape, class names, media type, "
                        "sample rate and units: convert one of them first",
                        path=str(path),
                        hdf5_path=f"/{split.name}/{name}",
                    )
            order[split.name].append((path, ds))
    return order
