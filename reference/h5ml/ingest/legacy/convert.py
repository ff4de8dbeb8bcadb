"""The HDF5 converter of either source layout: :func:`convert_hdf5` (§5, §6).

It detects the layout (:func:`h5ml.ingest.legacy.source.detect_layout`)
unless ``source_layout`` names one, and calls the converter of that layout
with the same options.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from h5ml.errors import IngestError
from h5ml.ingest.docstrings import shared_doc
from h5ml.ingest.legacy.arrays import convert_hdf5_arrays
from h5ml.ingest.legacy.per_sample import convert_hdf5_per_sample
from h5ml.ingest.legacy.source import METADATA_NOTE, PROCESSES_NOTE, SOURCE_LAYOUTS, SourceLayout, detect_layout
from h5ml.ingest.options import SHARED_OPTIONS, ConvertOptions, OnError, check_choice
from h5ml.ingest.report import ID_FEATURE, IngestReport
from h5ml.model.values import FeatureSpec

__all__ = ["convert_hdf5"]


@shared_doc(
    notes={
        "metadata": METADATA_NOTE,
        "workers": "Used by the per-sample layout (each worker opens the file by path); the arrays layout reads "
        "in this process.",
        "processes": PROCESSES_NOTE,
    }
)
def convert_hdf5(
    source: str | os.PathLike[str],
    output: str | os.PathLike[str],
    *,
    source_layout: SourceLayout | None = None,
    id_feature: str | None = ID_FEATURE,
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
    """Convert an HDF5 file of either tutorial layout to h5ml, detecting the layout (:func:`detect_layout`).

    Parameters
    ----------
    source, output
        The HDF5 file and the h5ml file to write.
    source_layout
        ``"per-sample"`` or ``"arrays"`` to skip detection (``--source-layout``); None detects it.
    id_feature
        As :func:`h5ml.ingest.legacy.convert_hdf5_per_sample` (per-sample layout only).
    label
        As :func:`h5ml.ingest.legacy.convert_hdf5_arrays` (arrays layout only;
        None means ``"y"``). Given with the per-sample layout, it is refused:
        that layout stores each feature as its datasets hold it.
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
        If ``source`` is not HDF5 or has neither layout (the message describes
        both), or as the converter of its layout.
    {shared_raises}
    h5ml.errors.ParameterError
        Also if ``source_layout`` is not one of the two.
    """
    options = ConvertOptions.pick(locals())
    if source_layout is not None:
        check_choice("source_layout", source_layout, SOURCE_LAYOUTS)
    chosen = detect_layout(source) if source_layout is None else source_layout
    shared = {name: getattr(options, name) for name in SHARED_OPTIONS}
    if chosen == "per-sample":
        if label is not None:
            raise IngestError(
                f"{source}: label={label!r} (--label) applies to the x_<split>/y_<split> arrays layout; this file "
                "holds one dataset per sample, whose features are stored as their datasets hold them. Leave out "
                "--label (store class codes as categorical after converting, or convert the arrays layout)",
                path=os.fspath(source),
            )
        return convert_hdf5_per_sample(source, output, id_feature=id_feature, **shared)
    return convert_hdf5_arrays(source, output, label=label, **shared)
