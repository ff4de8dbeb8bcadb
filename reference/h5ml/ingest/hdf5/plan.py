"""The conversion plan of HDF5 sources: which source object becomes which split and feature (``h5ml convert --plan``).

A :class:`Plan` is a JSON document (schema ``schema/h5ml-convert-plan-1.0.schema.json``,
generated from these models and checked against them by the tests). It
names, for every output split, its features, and for every feature the
*parts* its samples come from, concatenated in order:

- a ``rows`` part: the rows ``[start, stop)`` of an HDF5 dataset along its
  sample axis (``sample_axis``, after reversing the axes when ``transpose``
  is set, as MATLAB's column-major arrays need);
- a ``records`` part: one sample per *record*, the groups (or datasets)
  that the pattern ``path`` matches (``/*`` for one group per sample,
  ``/train_data/*`` for one dataset per sample, ``/*/*`` for nested groups per
  record); the value is the record itself, its member dataset ``member``, or
  its attribute ``attribute``; the features of one split are matched by
  record id (what the wildcards matched, joined by ``/``);
- an ``ids`` part: the record ids themselves, as a string feature.

Labels: ``squeeze`` drops the length-1 axes of a sample (``(N, 1)`` label
columns), ``one_hot`` turns rows of 0/1 into the code of their one 1, and
``class_names`` makes the feature categorical (§6.5).

Everything the sources hold is accounted for: every dataset and attribute
is used by a part, is the source of class names or root metadata, or is in
``left_out`` with the reason (:func:`h5ml.ingest.hdf5.check.check_plan`
refuses a plan that forgets one). A proposed plan that needs a decision
lists it in ``confirm``; such a plan is shown, never run.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from h5ml.errors import IngestError
from h5ml.ingest.provenance import NamedBy

__all__ = [
    "PLAN_FORMAT",
    "PLAN_SCHEMA_ID",
    "PLAN_VERSION",
    "Feature",
    "LeftOut",
    "NamedBy",
    "Part",
    "Plan",
    "SourceFile",
    "Split",
    "load_plan",
    "plan_json_schema",
]

#: The ``format`` member of every plan.
PLAN_FORMAT: Final = "h5ml-convert-plan"
#: The plan version these models read and write.
PLAN_VERSION: Final = 1
#: The ``$id`` of the plan's JSON Schema.
PLAN_SCHEMA_ID: Final = "https://h5ml.org/schema/h5ml-convert-plan-1.0.schema.json"


_STRICT = ConfigDict(extra="forbid", frozen=True)


class SourceFile(BaseModel):
    """One source file: its path as given, and what kind of HDF5 file it is."""

    model_config = _STRICT

    path: str = Field(description="The file, as given (relative paths are relative to the working directory).")
    kind: Literal["hdf5", "matlab", "fuel"] = Field(
        default="hdf5", description="matlab: a MATLAB v7.3 MAT-file (512-byte user block); fuel: Fuel's H5PYDataset."
    )
    split: str | None = Field(
        default=None, description="The split its file name names (train, validation, test), if any."
    )
    listed_in: str | None = Field(default=None, description="The text file that listed it, if any.")


class Part(BaseModel):
    """Where some samples of one feature come from (see the module docstring)."""

    model_config = _STRICT

    source: str = Field(description="The source file (a path of Plan.sources).")
    kind: Literal["rows", "records", "ids"] = "rows"
    path: str = Field(description="rows: an HDF5 dataset; records, ids: a pattern of record paths, * per level.")
    start: int | None = Field(default=None, ge=0, description="rows: the first row (default 0).")
    stop: int | None = Field(default=None, ge=0, description="rows: the row after the last (default: all).")
    transpose: bool = Field(
        default=False, description="rows: reverse the dataset's axes first (MATLAB's column-major order)."
    )
    sample_axis: int = Field(default=0, ge=0, description="rows: the axis, after transpose, that indexes samples.")
    shapes: str | None = Field(
        default=None, description="rows of variable length: the (N, D) dataset of each sample's shape."
    )
    member: str | None = Field(default=None, description="records: the dataset inside each record (None: the record).")
    attribute: str | None = Field(default=None, description="records: the attribute of each record (or of its member).")
    matlab_class: str | None = Field(
        default=None, description="The MATLAB_class of the data (cell, char, ...), decoded."
    )


class Feature(BaseModel):
    """One output feature of a split."""

    model_config = _STRICT

    name: str
    parts: list[Part] = Field(min_length=1)
    role: Literal["input", "target", "metadata"] | None = None
    encoding: Literal["dense", "ragged", "string", "categorical"] = "dense"
    dtype: str | None = Field(
        default=None, description="numpy dtype string of the values (dense, ragged, categorical codes)."
    )
    sample_shape: list[int | None] | None = Field(
        default=None, description="The shape of one sample after squeeze (None: an axis whose length varies)."
    )
    squeeze: bool = Field(default=False, description="Drop the sample's axes of length 1 ((N, 1) labels become (N,)).")
    one_hot: bool = Field(default=False, description="Rows of 0/1 with exactly one 1 become the index of that 1.")
    class_names: list[str] | None = Field(default=None, description="Makes the feature categorical (§6.5).")
    class_names_from: str | None = Field(
        default=None, description="Where class_names were found (shown, not read again)."
    )
    attrs: dict[str, str | int | float | list[str] | list[int]] = Field(
        default_factory=dict, description="User attributes kept from the source (§4.7): text, numbers, lists of them."
    )


class Split(BaseModel):
    """One output split."""

    model_config = _STRICT

    name: str
    source_split: str | None = Field(default=None, description="The split's name in the source, if it had one.")
    named_by: NamedBy = "default"
    num_samples: int = Field(ge=0)
    features: list[Feature] = Field(min_length=1)


class LeftOut(BaseModel):
    """A source object (dataset, group, or ``path@attribute``) the output does not hold, and why."""

    model_config = _STRICT

    source: str
    path: str = Field(description="An HDF5 path, a pattern with * per level, or path@attribute.")
    reason: str


class Plan(BaseModel):
    """What ``h5ml convert`` writes from HDF5 sources: splits, features, what is left out, what to confirm."""

    model_config = _STRICT

    format: Literal["h5ml-convert-plan"] = PLAN_FORMAT
    version: Literal[1] = PLAN_VERSION
    sources: list[SourceFile] = Field(min_length=1)
    splits: list[Split] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict, description="Root attributes carried to the output (§4).")
    left_out: list[LeftOut] = Field(default_factory=list)
    confirm: list[str] = Field(default_factory=list, description="What to decide before converting; empty to run.")

    def source(self, path: str) -> SourceFile:
        """The :class:`SourceFile` of ``path`` (a ``Part.source``).

        Raises
        ------
        h5ml.IngestError
            If the plan lists no such source.
        """
        for item in self.sources:
            if item.path == path:
                return item
        raise IngestError(f"the plan names the source {path!r}, which is not in its sources; add it there")

    def to_json(self) -> str:
        """The plan as indented JSON text (what ``--plan --format json`` prints and ``--plan-file`` reads)."""
        return self.model_dump_json(indent=2, exclude_defaults=False) + "\n"


def plan_json_schema() -> dict[str, Any]:
    """The plan's JSON Schema (draft 2020-12), as ``schema/h5ml-convert-plan-1.0.schema.json`` holds it."""
    body = Plan.model_json_schema()
    body.pop("title", None)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": PLAN_SCHEMA_ID,
        "title": "h5ml conversion plan, version 1",
        **body,
    }


def load_plan(path: str | os.PathLike[str]) -> Plan:
    """Read a plan file (``--plan-file``), checked against the plan's schema.

    Parameters
    ----------
    path
        A JSON file written by ``h5ml convert SOURCE --plan --format json`` and edited.

    Returns
    -------
    Plan

    Raises
    ------
    FileNotFoundError
        If the file does not exist.
    h5ml.IngestError
        If it is not JSON or not a plan; the message names the first wrong members.
    """
    file = Path(path)
    if not file.is_file():
        raise FileNotFoundError(f"{file}: no such plan file" if not file.exists() else f"{file}: not a file")
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise IngestError(
            f"{file}: not a JSON plan ({exc}); write one with `h5ml convert SOURCE --plan --format json`"
        ) from None
    try:
        return Plan.model_validate(data)
    except ValidationError as exc:
        wrong = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or '(top)'}: {err['msg']}" for err in exc.errors()[:5]
        )
        raise IngestError(f"{file}: not a valid h5ml conversion plan: {wrong}") from None
