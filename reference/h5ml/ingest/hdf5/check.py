"""Checking a plan against its sources before a byte is written: :func:`check_plan` (§5.1.1, §5.3).

A plan runs only when nothing is left to confirm, every part names an
object its source holds, every feature of a split has the split's number
of samples (rows parts: the rows they cover; records parts: the records
their patterns match), names follow §5.1.1, and every dataset and
attribute of every source is used or left out (:func:`h5ml.ingest.hdf5.coverage.unaccounted`).
The messages name the plan's split, feature and part, and what to edit.
"""

from __future__ import annotations

import numpy as np

from h5ml.errors import IngestError
from h5ml.ingest.hdf5.coverage import matches, unaccounted
from h5ml.ingest.hdf5.inventory import Inventory, take_inventory, value_kind
from h5ml.ingest.hdf5.plan import Feature, Plan, Split
from h5ml.ingest.hdf5.records import record_ids
from h5ml.ingest.hdf5.values import part_rows
from h5ml.ingest.naming import name_problem

__all__ = ["check_plan", "feature_count", "split_disagreements"]


def feature_count(feature: Feature, inventories: dict[str, Inventory], where: str) -> int:
    """The samples a feature's parts give: rows for rows parts, matched records for records and ids parts.

    Parameters
    ----------
    feature
        A plan feature.
    inventories
        The walked sources, by path.
    where
        ``plan split ..., feature ...``, for messages.

    Returns
    -------
    int
        The samples (§5.3): the rows its rows parts cover, or the record ids its records parts match.

    Raises
    ------
    h5ml.IngestError
        If a part names a source the plan lacks, an object its source does
        not hold, a sample axis the dataset lacks, or rows past its end.
    """
    total = 0
    record_sets: list[set[str]] = []
    for number, part in enumerate(feature.parts):
        at = f"{where}, part {number} ({part.source}:{part.path})"
        inv = inventories.get(part.source)
        if inv is None:
            raise IngestError(f"{at}: the source is not in the plan's sources; add it there")
        if part.kind == "rows":
            node = inv.nodes.get(part.path)
            if node is None or node.kind != "dataset" or node.shape is None:
                raise IngestError(f"{at}: {part.source} holds no dataset {part.path}; fix the part's path")
            if part.sample_axis >= max(1, len(node.shape)) or not node.shape:
                raise IngestError(f"{at}: sample_axis {part.sample_axis} but the dataset has shape {node.shape}")
            a, b = part_rows(part, node.shape)
            n = node.shape[::-1][part.sample_axis] if part.transpose else node.shape[part.sample_axis]
            if not 0 <= a <= b <= n:
                raise IngestError(f"{at}: rows [{a}, {b}) but the dataset has {n} along its sample axis")
            if part.shapes is not None and part.shapes not in inv.nodes:
                raise IngestError(f"{at}: shapes {part.shapes} is not in {part.source}")
            total += b - a
        else:
            ids = record_ids(inv, part.path)
            if not ids:
                raise IngestError(f"{at}: the pattern {part.path} matches no group or dataset of {part.source}")
            record_sets.append(set(ids))
    if record_sets:
        return len(set().union(*record_sets))
    return total


def _check_kind(feature: Feature, inventories: dict[str, Inventory], where: str) -> None:
    """The datasets a feature reads hold what its encoding stores: one string per sample, or numbers."""
    for part in feature.parts:
        if part.kind == "ids" or part.attribute is not None:
            continue
        inv = inventories[part.source]
        if part.kind == "rows":
            nodes = [inv.nodes[part.path]] if part.path in inv.nodes else []  # a missing one: feature_count says
        else:
            target = part.path if part.member is None else f"{part.path}/{part.member}"
            nodes = [n for n in inv.nodes.values() if n.kind == "dataset" and matches(target, n.path)]
        for node in nodes:
            if node.dtype is None:
                continue
            if part.matlab_class != (node.matlab_class if inv.kind == "matlab" else None) and part.kind == "rows":
                raise IngestError(
                    f"{where}: the part says matlab_class {part.matlab_class!r}, but {part.source}:{node.path} is "
                    f"{node.matlab_class!r}; give the variable's own class (or none for a plain HDF5 dataset)"
                )
            kind = value_kind(node.dtype)
            if feature.encoding == "string":
                if part.matlab_class in ("cell", "char"):
                    continue
                rank = len(node.shape or ())
                scalar = rank == 1 if part.kind == "rows" else rank == 0
                if kind != "string" or not scalar:
                    raise IngestError(
                        f"{where}: {part.source}:{node.path} holds {node.dtype} of shape {node.shape}, not one string "
                        "per sample; a string feature takes one string per sample (§6.4): leave it out, or give it "
                        "another encoding"
                    )
            elif kind not in ("numeric", "vlen") and part.matlab_class not in ("char", "logical"):
                raise IngestError(
                    f"{where}: {part.source}:{node.path} holds {node.dtype}, not numbers; a {feature.encoding} feature "
                    "stores numbers (§3.2): leave it out, or make it a string feature if it holds one string per sample"
                )


def _check_split(split: Split, inventories: dict[str, Inventory]) -> None:
    problem = name_problem("split", split.name)
    if problem is not None:
        raise IngestError(f"plan split {split.name!r}: {problem}; rename it in the plan")
    seen: set[str] = set()
    kinds_of_split = {p.kind for f in split.features for p in f.parts if p.kind != "ids"}
    if len(kinds_of_split) > 1:
        raise IngestError(
            f"plan split {split.name!r} mixes rows parts and records parts: its samples are either rows or records; "
            "put them in two splits, or read both the same way"
        )
    for feature in split.features:
        where = f"plan split {split.name!r}, feature {feature.name!r}"
        if any(p.kind == "ids" for p in feature.parts) and kinds_of_split != {"records"}:
            raise IngestError(f"{where}: an ids part gives record ids, and this split reads no records; remove it")
        if feature.dtype is not None:
            try:
                dtype = np.dtype(feature.dtype)
            except TypeError:
                raise IngestError(
                    f"{where}: dtype {feature.dtype!r} is not a numpy dtype (such as '<f4', '|u1')"
                ) from None
            if dtype.kind not in "biuf":
                raise IngestError(
                    f"{where}: dtype {feature.dtype!r} holds no numbers; give an integer, float or bool dtype"
                )
        problem = name_problem("feature", feature.name)
        if problem is not None:
            raise IngestError(f"{where}: {problem}; rename it in the plan")
        if feature.name in seen:
            raise IngestError(f"{where}: the split has two features of this name; rename one")
        seen.add(feature.name)
        if (feature.encoding == "categorical") != (feature.class_names is not None):
            raise IngestError(
                f"{where}: a categorical feature needs class_names, and class_names need encoding categorical"
            )
        kinds = {p.kind == "rows" for p in feature.parts}
        if len(kinds) > 1:
            raise IngestError(f"{where}: mixes rows parts and records parts; one feature reads one kind")
        _check_kind(feature, inventories, where)
        n = feature_count(feature, inventories, where)
        if n != split.num_samples and feature.parts[0].kind == "rows":
            raise IngestError(
                f"{where}: its parts give {n} samples but the split has num_samples {split.num_samples}; every feature "
                "of a split has one value per sample (§5.3): fix the parts or num_samples"
            )


def _check_records(split: Split, inventories: dict[str, Inventory]) -> None:
    """A records split: its samples are the ids any of its records features matches (a missing one is per sample)."""
    ids: set[str] = set()
    for feature in split.features:
        for part in feature.parts:
            if part.kind == "records":
                ids |= set(record_ids(inventories[part.source], part.path))
    if ids and len(ids) != split.num_samples:
        raise IngestError(
            f"plan split {split.name!r}: its records patterns match {len(ids)} records but num_samples is "
            f"{split.num_samples}; fix the patterns or num_samples"
        )


def split_disagreements(plan: Plan) -> list[str]:
    """Features of one name that splits store differently (encoding, class names, one-hot), in words.

    A feature means one thing in every split: ``y`` categorical with class
    names ``["non-cat", "cat"]`` in train and ``["cat", "non-cat"]`` in test
    would give code 0 two meanings in one file (§5.2).

    Parameters
    ----------
    plan
        A proposed or edited plan.

    Returns
    -------
    list of str
        One sentence per disagreement, in split order; empty when every feature agrees.
    """
    seen: dict[str, tuple[str, Feature]] = {}
    out: list[str] = []
    for split in plan.splits:
        for feature in split.features:
            if feature.name not in seen:
                seen[feature.name] = (split.name, feature)
                continue
            first_split, first = seen[feature.name]
            for field in ("encoding", "class_names", "one_hot"):
                a, b = getattr(first, field), getattr(feature, field)
                if a != b:
                    out.append(
                        f"feature {feature.name!r} has {field} {a!r} in split {first_split!r} but {b!r} in split "
                        f"{split.name!r}: one feature means one thing in every split; make them agree (or rename one)"
                    )
    return out


def check_plan(
    plan: Plan, walked: dict[str, Inventory] | None = None, *, allow_external: bool = False
) -> dict[str, Inventory]:
    """Check a plan against its sources; return the walked sources by path.

    Parameters
    ----------
    plan
        A plan, proposed or read from ``--plan-file``.
    walked
        The sources already walked (by the proposal), by path; the others are walked now.
    allow_external
        Read external raw storage and virtual datasets of the sources walked
        now (§10.1), as :func:`~h5ml.ingest.hdf5.inventory.take_inventory`.

    Returns
    -------
    dict
        Source path -> :class:`~h5ml.ingest.hdf5.inventory.Inventory`.

    Raises
    ------
    h5ml.IngestError
        If the plan has anything to confirm, or breaks a rule above; the
        message says what to edit.
    FileNotFoundError
        If a source does not exist.
    h5ml.ForbiddenStorageError
        If a source walked now holds an external link, or (without
        ``allow_external``) external raw storage or a virtual dataset (§3.6, §10.1).
    """
    if plan.confirm:
        listed = " ".join(f"({n}) {c}" + ("" if c.endswith(("?", ".")) else ".") for n, c in enumerate(plan.confirm, 1))
        raise IngestError(
            f"the plan needs {len(plan.confirm)} decision(s) before converting: {listed} Write the plan with "
            '`h5ml convert SOURCES... --plan --format json -o plan.json`, edit it, empty its "confirm" list, and '
            "convert with --plan-file plan.json"
        )
    inventories = {
        src.path: (walked or {}).get(src.path) or take_inventory(src.path, allow_external=allow_external)
        for src in plan.sources
    }
    if not plan.splits:
        raise IngestError("the plan has no split; nothing to convert")
    names = [s.name for s in plan.splits]
    if len(set(names)) != len(names):
        raise IngestError(f"the plan names a split twice ({names}); give each split once")
    for split in plan.splits:
        _check_split(split, inventories)
        _check_records(split, inventories)
    disagreements = split_disagreements(plan)
    if disagreements:
        raise IngestError(f"the plan's splits disagree: {disagreements[0]}")
    missing = unaccounted(plan, inventories.values())
    if missing:
        listed = ", ".join(f"{s}:{k}" for s, k in missing[:6]) + (
            f" and {len(missing) - 6} more" if len(missing) > 6 else ""
        )
        raise IngestError(
            f"the plan does not say what to do with {len(missing)} source object(s): {listed}. Map each in a feature, "
            "or add it to left_out with the reason"
        )
    return inventories
