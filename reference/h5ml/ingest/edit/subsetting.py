"""``h5ml subset``: :func:`subset` writes some splits, features and samples of an h5ml file to a new one (§4-§8).

What the new file keeps (metadata, split attributes, features, compression)
is described in :mod:`h5ml.ingest.edit`.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from h5ml.errors import ParameterError
from h5ml.ingest.docstrings import shared_doc
from h5ml.ingest.edit.copying import Compression, check_compression, copy_rows, declaration, root_metadata
from h5ml.ingest.edit.selection import SampleSelection, parse_samples
from h5ml.ingest.naming import name_list
from h5ml.ingest.options import parameter_error
from h5ml.ingest.output import check_output
from h5ml.ingest.progress import ProgressBars
from h5ml.ingest.provenance import SOURCE_SPLITS_ATTR, kept, read, record
from h5ml.ingest.report import IngestReport
from h5ml.model.paths import require_regular_file
from h5ml.reader import Split
from h5ml.reader import open_file as open_dataset
from h5ml.writer import Writer

__all__ = ["subset"]

#: The command-line options of the parameters whose names differ (``h5ml subset``).
_OPTIONS = {"splits": "--split", "features": "--feature"}


def _check_names(label: str, value: Sequence[str] | None) -> list[str] | None:
    names = name_list(label, value, option=_OPTIONS[label])
    if names is not None and not names:
        raise parameter_error(
            label, f"{label}=[] keeps nothing; give at least one name, or None for all", option=_OPTIONS[label]
        )
    return names


@shared_doc(names=("progress", "overwrite", "allow_external"))
def subset(
    source: str | os.PathLike[str],
    output: str | os.PathLike[str],
    *,
    splits: Sequence[str] | None = None,
    features: Sequence[str] | None = None,
    samples: SampleSelection | Mapping[str, SampleSelection] | None = None,
    metadata: Mapping[str, Any] | None = None,
    compression: Compression = "keep",
    progress: bool | None = None,
    overwrite: bool = False,
    allow_external: bool = False,
) -> IngestReport:
    """Write some splits, features and samples of an h5ml file to a new file (§4-§8).

    Parameters
    ----------
    source
        The h5ml file to read.
    output
        The new file (see :func:`h5ml.ingest.check_output`; never the source).
    splits
        The splits to keep, in this order; default every split.
    features
        The names of the features to keep, in every kept split; default every feature.
    samples
        The samples to keep: one selection for every split, or a mapping
        split -> selection (splits it does not name are kept whole). A
        selection is a slice, ``"start:stop[:step]"``, integer indices (any
        order, duplicates allowed, negative from the end) or a boolean mask
        (see :func:`h5ml.ingest.edit.parse_samples`); the samples are written in that order.
    metadata
        Root attributes (§4.2) over the source's (see :mod:`h5ml.ingest.edit`).
    compression
        ``"keep"`` (each feature as in the source), ``"gzip"`` or None.
    {shared_parameters}

    Returns
    -------
    IngestReport
        The output, the samples written per split and the time taken (no skipped files).

    Raises
    ------
    FileNotFoundError, IsADirectoryError
        If the source does not exist, or is a directory.
    FileExistsError, IsADirectoryError
        As :func:`h5ml.ingest.check_output` (also when ``output`` is ``source``).
    h5ml.SplitNotFoundError, h5ml.FeatureNotFoundError
        If a split or a feature to keep does not exist (in a kept split).
    h5ml.errors.ParameterError
        If ``samples`` is invalid for a split (the message names it), selects
        no sample of a split that has some (``"5:5"``, ``"10:5"``, an empty
        list: an empty split would be written without a word), or names a
        split not kept, ``splits`` or ``features`` is empty or not a list
        of names, or ``compression`` is not one of the values above.
    IndexError, TypeError
        If an index of ``samples`` is out of range, or ``samples`` is of a type it does not take.
    h5ml.IngestError
        If the source's record of its source splits (the root attribute
        ``h5ml-ingest:source-splits``, :mod:`h5ml.ingest.provenance`) is
        malformed; the message names the file and the attribute. The new file
        keeps the entries of the kept splits.
    h5ml.H5MLError
        If the source cannot be read (as :func:`h5ml.open`); the output is unchanged.
    """
    check_compression(compression)
    splits, features = _check_names("splits", splits), _check_names("features", features)
    start = time.perf_counter()
    source_path = require_regular_file(source)
    out = check_output(output, overwrite, [source_path])
    with open_dataset(source_path, allow_external=allow_external) as dataset:
        names = list(dataset.every_split()) if splits is None else list(splits)
        if isinstance(samples, Mapping):
            unknown = sorted(set(samples) - set(names))
            if unknown:
                raise parameter_error(
                    "samples", f"{source_path}: samples= names split(s) {unknown}, which are not kept ({names})"
                )
        plan: list[tuple[Split, list[str], range | npt.NDArray[np.int64]]] = []
        report = IngestReport(out)
        declared: dict[tuple[str, str], dict[str, Any]] = {}
        for name in names:
            split = dataset[name]
            chosen = list(split.every_feature() if features is None else features)  # SPEC §6.1-R7: none left out
            for feature in chosen:
                # raises FeatureNotFoundError naming the split and the available features; the declaration is
                # made before the output exists, so that a value that cannot be copied names the source (§1.4.1)
                declared[name, feature] = declaration(
                    split.feature(feature), compression, dataset.format_version, report.notes
                )
            selection = samples.get(name) if isinstance(samples, Mapping) else samples
            where = f"{source_path}: split {name!r}"
            rows = parse_samples(selection, split.num_samples, where)
            if selection is not None and split.num_samples and not len(rows):
                raise _selects_nothing(where, selection, split.num_samples)
            plan.append((split, chosen, rows))
        root = root_metadata(dataset, None)
        root.pop(SOURCE_SPLITS_ATTR, None)  # the entries of the kept splits only (§4.7)
        record(root, kept(read(dataset, where=source_path), names) or {})
        root.update(metadata or {})
        with ProgressBars(progress, sum(len(rows) for _, _, rows in plan)) as bars, Writer(out, root) as writer:
            for split, chosen, rows in plan:
                whole = isinstance(rows, range) and rows == range(split.num_samples)
                seed = split.shuffle_seed if whole else None
                writer.add_split(split.name, split.description, shuffle_seed=seed, expected_samples=len(rows))
                for feature in chosen:
                    writer.add_feature(split.name, feature, **declared[split.name, feature])
                task = bars.add(f"{out.name}: {split.name}", len(rows))
                report.samples[split.name] = copy_rows(writer, split.name, split, chosen, rows, bars, task)
    report.seconds = time.perf_counter() - start
    return report


def _selects_nothing(where: str, selection: SampleSelection, count: int) -> ParameterError:
    """The refusal of a selection that keeps no sample of a split that has some: an empty split is no subset."""
    shown = repr(selection) if isinstance(selection, str) else "the selection"
    return parameter_error(
        "samples",
        f"{where}: samples {shown} selects no sample of the {count} the split holds (rows 0 to {count - 1}); give "
        f"a range that holds at least one row, e.g. '0:{min(count, 10)}', or leave the split out with splits=[...] "
        "(--split)",
    )
