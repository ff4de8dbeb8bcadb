"""Completing a proposed plan's labels and ids: squeeze, one-hot, class names, record ids (§6.5).

:func:`complete_labels` goes over every target feature (role ``target``, or
the feature ``label`` names) of a proposed plan:

- a label of shape ``(N, 1, ...)`` (one value per sample) is squeezed;
- rows ``(N, K)`` that are all one-hot become codes (``one_hot``); rows that
  are not (multi-label, soft labels) stay as they are;
- class names come, in this order, from the caller (``--class-names``,
  ``--class-names-file``), from a 1-D string dataset of the source named
  like ``list_classes``/``category_names`` whose length fits, from a root
  attribute giving the number of classes (``nb_classes``: names ``"0"`` ..
  ``"K-1"``), or from ``shape_names.txt`` beside a shard list. A code outside
  ``[-1, K)`` is refused when converting (or skipped with ``on_error="skip"``), never stored.

Records splits get the string feature ``id_feature`` (each record's id).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from h5ml.errors import IngestError
from h5ml.ingest.hdf5.draft import Draft
from h5ml.ingest.hdf5.handles import checked_object
from h5ml.ingest.hdf5.inventory import Inventory
from h5ml.ingest.hdf5.labels import class_names_file, is_class_names_name, one_hot_codes
from h5ml.ingest.hdf5.matlab import cell_values, char_strings, matlab_order
from h5ml.ingest.hdf5.names import CLASS_NAME_FILES
from h5ml.ingest.hdf5.plan import Feature, LeftOut, Part, Plan, Split
from h5ml.ingest.hdf5.records import record_ids
from h5ml.ingest.hdf5.values import part_rows, read_rows
from h5ml.ingest.naming import CLASS_COUNT_NAMES
from h5ml.ingest.options import parameter_error
from h5ml.model.locking import open_foreign

__all__ = ["MAX_LABEL_VALUES", "LabelOptions", "complete_labels"]

#: Label values read at most to look at them (one-hot, code range); larger labels are shown as they are.
MAX_LABEL_VALUES = 1 << 24


@dataclass(frozen=True)
class LabelOptions:
    """What the user said of the label: its feature (``label``), class names given or in a text file."""

    label: str | None = None
    class_names: tuple[str, ...] | None = None
    class_names_file: str | None = None


def _values(feature: Feature, inventories: dict[str, Inventory]) -> np.ndarray | None:
    """Every value of a numeric label (rows or record attributes), or None when too large or not numeric."""
    chunks: list[np.ndarray] = []
    for part in feature.parts:
        inv = inventories[part.source]
        if part.kind == "records" and part.attribute is not None and part.member is None:
            values = [inv.nodes[p].attrs.get(part.attribute) for p in record_ids(inv, part.path).values()]
            if not all(isinstance(v, (int, float)) for v in values):
                return None
            chunks.append(np.asarray(values))
            continue
        if part.kind != "rows":
            return None
        node = inv.nodes[part.path]
        if node.dtype is None or node.dtype.kind not in "biuf" or node.shape is None:
            return None
        if int(np.prod(node.shape)) > MAX_LABEL_VALUES:
            return None
        a, b = part_rows(part, node.shape)
        with open_foreign(part.source, "convert it again") as f:
            where = f"{part.source}:{part.path}"
            chunks.append(np.asarray(read_rows(f, part, a, b, where, allow_external=inv.allow_external)))
    return np.concatenate(chunks) if chunks else None


def _string_vector(source: str, path: str, matlab: bool, allow_external: bool) -> list[str]:
    """The class names a 1-D dataset holds: its strings, its integers as text (SIGNS' ``list_classes``), MATLAB cells."""
    with open_foreign(source, "convert it again") as f:
        dataset = checked_object(f, source, path, allow_external)
        if h5py.check_string_dtype(dataset.dtype) is not None:
            try:
                return [str(v) for v in np.asarray(dataset.asstr()[()]).ravel()]
            except UnicodeDecodeError as exc:
                raise IngestError(
                    f"{source}:{path}: the class names are not UTF-8 (or ASCII) text ({exc.reason} at byte "
                    f"{exc.start}); give them with class_names=[...] (--class-names) or fix the file",
                    path=source,
                    hdf5_path=path,
                ) from None
        values = np.asarray(dataset[()])
        cls = _matlab_class(dataset) if matlab else None
        if cls == "cell":
            cells = cell_values(f, matlab_order(values), f"{source}:{path}", allow_external=allow_external)
            return [str(v) for v in cells]
        if cls == "char":
            return char_strings(matlab_order(values))
        return [str(v) for v in values.ravel().tolist()]


def _matlab_class(dataset: h5py.Dataset) -> str | None:
    value = dataset.attrs.get("MATLAB_class")
    return value.decode() if isinstance(value, bytes) else value


def _inventory(inventories: list[Inventory], source: str) -> Inventory:
    return next(inv for inv in inventories if inv.source == source)


def _candidates(split: str, by_split: dict[str, list[Draft]]) -> dict[tuple[str, str], int]:
    """Class-name datasets that the drafts of ``split`` found: (source, path) -> length."""
    out: dict[tuple[str, str], int] = {}
    for draft in by_split.get(split, []):
        for path, n in draft.names_candidates.items():
            if is_class_names_name(path.rsplit("/", 1)[-1]):
                out[(draft.source, path)] = n
    return out


def _class_count(inventories: list[Inventory]) -> tuple[str, int] | None:
    for inv in inventories:
        for name in CLASS_COUNT_NAMES:
            value = inv.nodes["/"].attrs.get(name)
            if isinstance(value, int) and value > 0:
                return f"{inv.source}:/@{name}", value
    return None


def _names_beside_lists(plan: Plan) -> tuple[str, list[str]] | None:
    for src in plan.sources:
        if src.listed_in:
            for name in CLASS_NAME_FILES:
                file = Path(src.listed_in).parent / name
                if file.is_file():
                    return str(file), class_names_file(file)
    return None


def _code_questions(name: str, split: str, codes: np.ndarray, count: int, origin: str | None) -> list[str]:
    """What a label's values leave open about its codes: -1 present (missing, or a class?), 0 never used (from 1?).

    Code 0 is asked about only when the split has at least 4 samples per
    class: with fewer, a class may go unused by chance.
    """
    out = []
    if (codes == -1).any():
        out.append(
            f"split {split!r}: {name!r} holds -1, which h5ml reads as a missing label (§6.5), beside the {count} class "
            f"names from {origin}: confirm that -1 means missing (labels of -1 and +1 must be remapped first: h5ml "
            "does not change label values)"
        )
    if codes.min() >= 1 and codes.max() < count and len(codes) >= 4 * count:  # 0 unused by chance is unlikely
        out.append(
            f"split {split!r}: {name!r} never holds code 0 (its values run from {codes.min()!r} to {codes.max()!r}) "
            f"with {count} class names from {origin}: confirm that the codes count from 0 (labels counted from 1 must "
            "be shifted first)"
        )
    return out


def _label(
    feature: Feature,
    split: Split,
    plan: Plan,
    inventories: list[Inventory],
    by_split: dict[str, list[Draft]],
    options: LabelOptions,
    confirm: list[str],
    used: set[tuple[str, str]],
) -> Feature:
    """One target feature completed: squeeze, one-hot, class names."""
    shape = feature.sample_shape or []
    update: dict[str, Any] = {"role": "target"}
    if feature.encoding != "dense" or None in shape:
        return feature.model_copy(update=update)
    if shape and all(s == 1 for s in shape):
        update.update(squeeze=True, sample_shape=[])
        shape = []
    values = _values(feature, {inv.source: inv for inv in inventories})
    width = shape[0] if len(shape) == 1 else None
    if width is not None and width > 1 and values is not None:
        codes, rows = one_hot_codes(values.reshape(len(values), -1))
        if rows:
            return feature.model_copy(update=update)  # multi-label or soft labels: stored as they are
        update.update(one_hot=True, sample_shape=[], dtype="<i8")
        values, shape = codes, []
    if shape:
        return feature.model_copy(update=update)
    names: list[str] | None = None
    origin: str | None = None
    if options.class_names is not None:
        names, origin = list(options.class_names), "--class-names"
    elif options.class_names_file is not None:
        names, origin = class_names_file(options.class_names_file), options.class_names_file
    else:
        found = _candidates(split.name, by_split)
        width = None if not update.get("one_hot") else (feature.sample_shape or [0])[0]
        fitting = {k: n for k, n in found.items() if width is None or n == width}
        if len(fitting) == 1:
            (source, path), _ = next(iter(fitting.items()))
            inv = _inventory(inventories, source)
            names = _string_vector(source, path, inv.kind == "matlab", inv.allow_external)
            origin = f"{source}:{path}"
            used.add((source, path))
        elif len(fitting) > 1:
            confirm.append(
                f"split {split.name!r}: {feature.name!r} could take its class names from {sorted(fitting)}: pick one"
            )
        else:
            count = _class_count(inventories)
            beside = _names_beside_lists(plan)
            if count is not None:
                names, origin = [str(k) for k in range(count[1])], count[0]
            elif beside is not None:
                origin, names = beside
    if names is None:
        return feature.model_copy(update=update)
    if values is not None and values.size and values.dtype.kind in "biuf":
        confirm += _code_questions(feature.name, split.name, np.asarray(values).reshape(-1), len(names), origin)
    update.update(encoding="categorical", class_names=names, class_names_from=origin)
    if update.get("dtype") is None or feature.dtype is None or np.dtype(feature.dtype).kind not in "iu":
        update["dtype"] = "<i8"
    return feature.model_copy(update=update)


def complete_labels(
    plan: Plan,
    inventories: list[Inventory],
    by_split: dict[str, list[Draft]],
    options: LabelOptions,
    id_feature: str | None,
) -> Plan:
    """The plan with its labels completed and record ids added (see the module docstring).

    Parameters
    ----------
    plan
        The joined plan.
    inventories
        Its walked sources.
    by_split
        Split name -> the drafts it was joined from (their class-name candidates).
    options
        The user's label, class names or class-names file.
    id_feature
        The string feature of record ids, or None.

    Returns
    -------
    Plan
        With squeeze, one-hot and class names set, ids added, questions in ``confirm``.

    Raises
    ------
    h5ml.errors.ParameterError
        If ``options.label`` names no feature, or class names are given and
        no single label feature takes them.
    """
    targets = {f.name for s in plan.splits for f in s.features if f.role == "target"}
    if options.label is not None:
        every = {f.name for s in plan.splits for f in s.features}
        if options.label not in every:
            raise parameter_error("label", f"label {options.label!r} names no feature; the features: {sorted(every)}")
        targets = {options.label}
    if (options.class_names is not None or options.class_names_file is not None) and len(targets) != 1:
        which = "no feature has role target" if not targets else f"the targets are {sorted(targets)}"
        raise parameter_error("label", f"class names apply to one label feature and {which}: name it with label")
    confirm = list(plan.confirm)
    used: set[tuple[str, str]] = set()
    splits: list[Split] = []
    for split in plan.splits:
        features = [
            _label(f, split, plan, inventories, by_split, options, confirm, used) if f.name in targets else f
            for f in split.features
        ]
        records = [p for f in features for p in f.parts if p.kind == "records"]
        if records and id_feature is not None and id_feature not in {f.name for f in features}:
            ids = Part(source=records[0].source, kind="ids", path=records[0].path)
            features.append(Feature(name=id_feature, parts=[ids], role="metadata", encoding="string"))
        splits.append(split.model_copy(update={"features": features}))
    left_out = list(plan.left_out)
    for split in plan.splits:
        for draft in by_split.get(split.name, []):
            for path, n in draft.names_candidates.items():
                if (draft.source, path) not in used and not any(
                    x.path == path and x.source == draft.source for x in left_out
                ):
                    left_out.append(
                        LeftOut(
                            source=draft.source,
                            path=path,
                            reason=f"{n} strings, not one per sample, and no label's class names",
                        )
                    )
    return plan.model_copy(update={"splits": splits, "confirm": confirm, "left_out": left_out})
