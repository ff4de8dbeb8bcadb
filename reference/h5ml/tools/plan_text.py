"""The text form of a conversion plan, as ``h5ml convert --plan`` and ``h5ml inspect`` print it.

One block per split (its samples, where its name came from, one line per
feature: name, encoding, dtype, sample shape, class names, and the parts it
reads with their transposes, sample axes and row ranges), then what is left
out with the reasons, then what to confirm, then how to run the plan.
"""

from __future__ import annotations

import numpy as np

from h5ml.ingest.hdf5.plan import Feature, Part, Plan

__all__ = ["render_plan"]

#: Left-out entries listed at most; the rest are counted.
MAX_LEFT_OUT = 40


def _part(part: Part) -> str:
    where = f"{part.source}:{part.path}"
    if part.kind == "ids":
        return f"the ids of the records {where}"
    if part.kind == "records":
        if part.member is not None:
            where += f"/{part.member}"
        if part.attribute is not None:
            where += f"@{part.attribute}"
        return f"{where} of each record"
    notes = []
    if part.start is not None or part.stop is not None:
        notes.append(f"rows {part.start or 0}:{'' if part.stop is None else part.stop}")
    if part.transpose:
        notes.append(f"MATLAB axis order (HDF5 axes reversed), sample axis {part.sample_axis}")
    elif part.sample_axis:
        notes.append(f"sample axis {part.sample_axis}")
    if part.matlab_class in ("cell", "char"):
        notes.append(f"MATLAB {part.matlab_class} decoded to strings")
    if part.shapes:
        notes.append(f"shapes from {part.shapes}")
    return where + (f" ({', '.join(notes)})" if notes else "")


def _feature(feature: Feature) -> str:
    shape = (
        ""
        if feature.sample_shape is None
        else "("
        + ", ".join("*" if s is None else str(s) for s in feature.sample_shape)
        + (",)" if len(feature.sample_shape) == 1 else ")")
    )
    what: list[str] = [feature.encoding]
    if feature.dtype and feature.encoding != "string":
        what.append(np.dtype(feature.dtype).name)
    if shape and feature.encoding in ("dense", "ragged"):
        what.append(shape)
    if feature.class_names is not None:
        shown = feature.class_names[:8] + (["..."] if len(feature.class_names) > 8 else [])
        what.append(f"{len(feature.class_names)} classes {shown} from {feature.class_names_from}")
    if feature.one_hot:
        what.append("one-hot rows -> codes")
    if feature.squeeze:
        what.append("length-1 axes squeezed")
    if feature.role:
        what.append(f"role {feature.role}")
    if feature.attrs:
        what.append(f"keeps attributes {sorted(feature.attrs)}")
    reads = "; ".join(_part(p) for p in feature.parts)
    return f"    {feature.name}: {', '.join(what)}\n        <- {reads}"


def render_plan(plan: Plan, written_to: str | None = None) -> str:
    """The plan as text (see the module docstring).

    Parameters
    ----------
    plan
        The plan.
    written_to
        The JSON file it was also written to (``-o``), named in the last line.

    Returns
    -------
    str
        Lines without a final newline.
    """
    lines = [f"plan of {len(plan.sources)} source(s):"]
    for src in plan.sources:
        notes: list[str] = [src.kind]
        if src.listed_in:
            notes.append(f"listed in {src.listed_in}")
        if src.split:
            notes.append(f"its name says split {src.split}")
        lines.append(f"  {src.path} ({', '.join(notes)})")
    for split in plan.splits:
        origin = f"named by {split.named_by}" + (f", source split {split.source_split!r}" if split.source_split else "")
        lines.append(f"split {split.name}: {split.num_samples} samples ({origin})")
        lines += [_feature(f) for f in split.features]
    if plan.metadata:
        lines.append(f"root metadata kept: {sorted(plan.metadata)}")
    if plan.left_out:
        lines.append(f"left out ({len(plan.left_out)}):")
        lines += [f"  {x.source}:{x.path}: {x.reason}" for x in plan.left_out[:MAX_LEFT_OUT]]
        if len(plan.left_out) > MAX_LEFT_OUT:
            lines.append(f"  ... and {len(plan.left_out) - MAX_LEFT_OUT} more (see the JSON plan)")
    if plan.confirm:
        lines.append(f"to confirm before converting ({len(plan.confirm)}):")
        lines += [f"  - {c}" for c in plan.confirm]
        target = written_to or "plan.json"
        lines.append(
            f"Edit the JSON plan ({'written to ' + written_to if written_to else 'write it with -o plan.json'}), settle each "
            f'point, empty its "confirm" list, and convert with --plan-file {target} OUTPUT.h5'
        )
    else:
        run = f"--plan-file {written_to} OUTPUT.h5" if written_to else "SOURCES... OUTPUT.h5"
        lines.append(f"nothing to confirm: convert with `h5ml convert {run}`")
    return "\n".join(lines)
