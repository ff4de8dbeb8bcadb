"""HDF5 and MATLAB v7.3 sources to h5ml through a plan: :func:`plan_hdf5` and :func:`convert_hdf5` (§4-§7).

:func:`plan_hdf5` proposes the plan (what ``h5ml convert SRC... --plan``
prints); :func:`convert_hdf5` converts by that proposal when it needs no
decision, or exactly by a plan given back (``plan=``, ``--plan-file``).
Either way the plan is checked against the sources first
(:func:`h5ml.ingest.hdf5.check.check_plan`): nothing is transposed, split,
joined or dropped that the plan does not say.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from h5ml.errors import IngestError
from h5ml.ingest.docstrings import shared_doc
from h5ml.ingest.hdf5.check import check_plan
from h5ml.ingest.hdf5.labeling import LabelOptions
from h5ml.ingest.hdf5.plan import Plan, load_plan
from h5ml.ingest.hdf5.propose import propose_plan
from h5ml.ingest.hdf5.run import run_plan
from h5ml.ingest.options import PIPELINE_OPTIONS, SHARED_OPTIONS, ConvertOptions, OnError, parameter_error
from h5ml.ingest.output import check_output, conversion_metadata
from h5ml.ingest.provenance import record, source_split
from h5ml.ingest.report import ID_FEATURE, IngestReport
from h5ml.model.values import FeatureSpec

__all__ = ["convert_hdf5", "plan_hdf5"]

Sources = str | os.PathLike[str] | Sequence[str | os.PathLike[str]]


def _paths(sources: Sources) -> list[str | os.PathLike[str]]:
    """The sources as a list of paths (one path, or a sequence of them); anything else is a ParameterError."""
    items = [sources] if isinstance(sources, (str, os.PathLike)) else sources
    if isinstance(sources, (bytes, Mapping)) or not isinstance(items, (list, tuple)):
        raise parameter_error("sources", f"give a path or a list of paths, got {type(sources).__name__}", "SOURCES")
    if not all(isinstance(p, (str, os.PathLike)) for p in items):
        raise parameter_error(
            "sources", f"every source must be a path (str or os.PathLike), got {list(items)!r}", "SOURCES"
        )
    return list(items)


def _check_names(split_name: Any, label: Any, id_feature: Any, allow_external: Any) -> None:
    for name, value in (("split_name", split_name), ("label", label), ("id_feature", id_feature)):
        if value is not None and not isinstance(value, str):
            raise parameter_error(name, f"{name} must be a str, got {value!r}")
    if not isinstance(allow_external, bool):
        raise parameter_error("allow_external", f"allow_external must be True or False, got {allow_external!r}")


def _given_plan(plan: Any) -> Plan:
    """A plan given to :func:`convert_hdf5`: a Plan, the path of a plan file, or the plan's JSON document as a dict."""
    if isinstance(plan, Plan):
        return plan
    if isinstance(plan, (str, os.PathLike)):
        return load_plan(plan)
    if isinstance(plan, Mapping):
        try:
            return Plan.model_validate(dict(plan))
        except ValidationError as exc:
            wrong = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or '(top)'}: {e['msg']}" for e in exc.errors()[:5])
            raise IngestError(f"plan: not a valid h5ml conversion plan: {wrong}") from None
    raise parameter_error(
        "plan", f"give a Plan, the path of a plan file or its JSON document as a dict, got {type(plan).__name__}"
    )


def _labels(
    label: str | None, class_names: Sequence[str] | None, class_names_file: str | os.PathLike[str] | None
) -> LabelOptions:
    if class_names is not None and class_names_file is not None:
        raise parameter_error("class_names", "give class_names or class_names_file, not both")
    if isinstance(class_names, (str, bytes)):
        raise parameter_error("class_names", f"give class_names as a list of names, not the text {class_names!r}")
    if class_names is not None:
        if not isinstance(class_names, (list, tuple)) or not all(isinstance(n, str) for n in class_names):
            raise parameter_error("class_names", f"class_names must be a list of str, got {class_names!r}")
        names = [n.strip() for n in class_names]
        if not names or "" in names or len(set(names)) != len(names):
            raise parameter_error("class_names", f"class names must be distinct and not empty, got {list(class_names)}")
        class_names = tuple(names)
    return LabelOptions(
        label=label,
        class_names=None if class_names is None else tuple(class_names),
        class_names_file=None if class_names_file is None else os.fspath(class_names_file),
    )


def plan_hdf5(
    sources: Sources,
    *,
    split_name: str | None = None,
    label: str | None = None,
    class_names: Sequence[str] | None = None,
    class_names_file: str | os.PathLike[str] | None = None,
    id_feature: str | None = ID_FEATURE,
    allow_external: bool = False,
) -> Plan:
    """Propose how HDF5 sources convert, without writing anything (``h5ml convert SOURCES... --plan``).

    Parameters
    ----------
    sources
        An HDF5 or MATLAB v7.3 file, or several, or text files listing shards
        (one path per line; the list's name names their split).
    split_name
        The split of a source without splits of its own (``--split-name``);
        by default its file name's split word (``train``, ``valid``/``val``/
        ``validation``, ``test``/``testing``), else ``train``.
    label
        The label feature (``--label``), when its name does not say so
        (``y``, ``label``, ``target`` are labels).
    class_names, class_names_file
        The label's class names (``--class-names``, ``--class-names-file``:
        one per line), when the source does not hold them.
    id_feature
        The string feature keeping each record's id (records layouts); None: none.
    allow_external
        Read datasets of the sources with external raw storage and virtual
        datasets, whose bytes come from other files (§10.1), as
        ``h5ml.open(..., allow_external=True)`` does; only for sources you
        trust. Python only: the command line never reads other files. Links
        are refused either way.

    Returns
    -------
    Plan
        Its ``confirm`` lists what must be decided before it can run.

    Raises
    ------
    FileNotFoundError
        If a source does not exist.
    h5ml.ForbiddenStorageError
        If a source holds an external link, or (without ``allow_external``)
        external raw storage or a virtual dataset (§3.6, §10.1): the error
        and message of :func:`h5ml.open`, naming the file and HDF5 path.
    h5ml.IngestError
        If a source is not HDF5, is h5ml already, or holds soft links; or
        files joined by row disagree in sample counts.
    h5ml.errors.ParameterError
        For a ``label`` that names no feature, class names without one label
        feature, or ``split_name`` for a file with splits of its own.
    """
    _check_names(split_name, label, id_feature, allow_external)
    labels = _labels(label, class_names, class_names_file)
    plan, _ = propose_plan(
        _paths(sources), split_name=split_name, labels=labels, id_feature=id_feature, allow_external=allow_external
    )
    return plan


@shared_doc(
    (*SHARED_OPTIONS, *PIPELINE_OPTIONS),
    notes={
        "metadata": "It goes over the sources' root attributes, which the plan keeps as metadata.",
        "processes": "HDF5 sources want processes: h5py lets one thread at a time into HDF5.",
        "on_error": "A bad sample is a record without a member, a row that is not one-hot, a code outside [-1, K).",
    },
)
def convert_hdf5(
    sources: Sources,
    output: str | os.PathLike[str],
    *,
    plan: Plan | Mapping[str, Any] | str | os.PathLike[str] | None = None,
    split_name: str | None = None,
    label: str | None = None,
    class_names: Sequence[str] | None = None,
    class_names_file: str | os.PathLike[str] | None = None,
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
    allow_empty_splits: bool = False,
    shard_size: int | str | None = None,
    samples_per_shard: int | None = None,
    allow_external: bool = False,
) -> IngestReport:
    """Convert HDF5 / MATLAB v7.3 files to one h5ml file, by the proposed plan or by the plan given.

    Parameters
    ----------
    sources, split_name, label, class_names, class_names_file, id_feature, allow_external
        As :func:`plan_hdf5`. With ``plan`` they are not used (the plan says
        everything) and giving them is an error.
    output
        The h5ml file to write.
    plan
        A :class:`~h5ml.ingest.hdf5.plan.Plan`, the path of a plan file
        (``--plan-file``) or its JSON document as a dict, converted exactly as written. ``sources`` must
        then be the plan's sources, or empty.
    {shared_parameters}

    Returns
    -------
    IngestReport
        Samples per split, skipped samples, what was left out, time taken.

    Raises
    ------
    FileNotFoundError
        If a source or the plan file does not exist.
    h5ml.ForbiddenStorageError
        As :func:`plan_hdf5`, also while samples are read (each dataset read is checked again).
    h5ml.IngestError
        As :func:`plan_hdf5`; if the plan has anything to confirm (the
        message lists each, and how to write and pass the plan), does not
        match the sources, or forgets a source object; or (``on_error="stop"``)
        for the first sample that does not convert.
    {shared_raises}
    """
    options = ConvertOptions.pick(locals())
    given = _paths(sources) if sources not in (None, "") else []
    _check_names(split_name, label, id_feature, allow_external)
    if plan is not None:
        for name, value in (
            ("split_name", split_name),
            ("label", label),
            ("class_names", class_names),
            ("class_names_file", class_names_file),
        ):
            if value is not None:
                raise parameter_error(name, f"{name} is decided by the plan given; edit the plan instead")
        chosen = _given_plan(plan)
        listed = {os.path.realpath(s.path) for s in chosen.sources}
        extra = [os.fspath(p) for p in given if os.path.realpath(os.fspath(p)) not in listed]
        if extra:
            raise parameter_error(
                "sources", f"{extra} are not sources of the plan; give the plan's sources or none", "SOURCES"
            )
        inventories = check_plan(chosen, allow_external=allow_external)
    else:
        labels = _labels(label, class_names, class_names_file)
        chosen, walked = propose_plan(
            given, split_name=split_name, labels=labels, id_feature=id_feature, allow_external=allow_external
        )
        inventories = check_plan(chosen, {inv.source: inv for inv in walked}, allow_external=allow_external)
    out = check_output(output, options.overwrite, [Path(s.path) for s in chosen.sources], sharded=options.sharded)
    names = [s.path for s in chosen.sources]
    where = names[0] if len(names) == 1 else json.dumps(names)
    meta = conversion_metadata(
        "HDF5 file" if len(names) == 1 else "HDF5 files", where, {**chosen.metadata, **(options.metadata or {})}, out
    )
    entries = {
        split.name: [
            source_split(src, split.source_split, split.named_by)
            for src in dict.fromkeys(p.source for f in split.features for p in f.parts)
        ]
        for split in chosen.splits
    }
    report = run_plan(chosen, inventories, out, options, record(meta, entries))
    if chosen.left_out:
        report.notes.append(
            f"left out {len(chosen.left_out)} source object(s) that no feature reads (see them with `h5ml convert "
            "SOURCES... --plan`)"
        )
    return report
