"""Records: one group (or dataset) per sample, its datasets and attributes the features (§6.2-§6.4).

A record pattern (``/*``, ``/train_data/*``, ``/*/*``) matches one HDF5
object per sample; the sample's id is what the wildcards matched, joined by
``/`` (:func:`record_ids`). A feature of records reads, from every record,
the record itself (one dataset per sample), a member dataset
(``/<id>/points``), or an attribute (``/<id>@label``). The encoding comes
from what the records hold, without reading a value: one shape in every
record is ``dense`` ``(N, *shape)``; shapes that vary make it ``ragged``
(with per-sample shapes when more than the first axis varies, §6.3); scalar
strings make a ``string`` feature. Attributes that every record carries
become features; those that only some carry, and members that only some
records hold, are left out *and* asked about: a record without them would
otherwise be an error at conversion.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Final, Literal

import numpy as np

from h5ml.ingest.hdf5.coverage import BOOKKEEPING_ATTRS, matches
from h5ml.ingest.hdf5.draft import Draft, Reading, feature_role, user_attr_name
from h5ml.ingest.hdf5.inventory import Inventory, Node, Unstorable, value_kind
from h5ml.ingest.hdf5.plan import Feature, Part
from h5ml.ingest.naming import natural_key

__all__ = ["SINGLE_FEATURE", "member_feature", "record_features", "record_ids"]

#: Feature name of the samples of a ``<split>/<id>`` group (one dataset per sample, one feature).
SINGLE_FEATURE: Final = "data"


def record_ids(inv: Inventory, pattern: str) -> dict[str, str]:
    """Record id -> HDF5 path of every object ``pattern`` matches, in natural order of the ids (``2`` before ``10``).

    Parameters
    ----------
    inv
        The source.
    pattern
        A record pattern, ``*`` for each level that varies.

    Returns
    -------
    dict
        Record id (the matched levels joined by ``/``) -> HDF5 path.
    """
    fixed = pattern.split("/")
    found: dict[str, str] = {}
    for path in inv.nodes:
        parts = path.split("/")
        if path == "/" or len(parts) != len(fixed) or not matches(pattern, path):
            continue
        found["/".join(p for p, f in zip(parts, fixed, strict=True) if f == "*")] = path
    return {k: found[k] for k in sorted(found, key=natural_key)}


def _attr_kind(values: list[Any]) -> tuple[str, str | None] | None:
    """(encoding, dtype) of an attribute that every record carries, or None when h5ml cannot store it per sample."""
    if all(isinstance(v, bool) or type(v) is int for v in values):
        return "dense", "<i8"
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        return "dense", "<f8"
    if all(isinstance(v, str) for v in values):
        return "string", None
    return None


def member_feature(
    inv: Inventory, pattern: str, member: str | None, nodes: list[Node], name: str, reading: Reading
) -> Feature | None:
    """A feature whose sample ``i`` is the dataset ``nodes[i]`` (the records' member ``member``), or None (left out).

    Parameters
    ----------
    inv
        The source.
    pattern
        The record pattern.
    member
        The dataset in each record; None: the record is the dataset.
    nodes
        That dataset of every record.
    name
        The feature name.
    reading
        Gets the reason when the datasets cannot make a feature.
    """
    target = pattern if member is None else f"{pattern}/{member}"
    if any(n.shape is None for n in nodes):
        reading.leave(target, "null dataspaces (no value) in some records")
        return None
    dtypes = {n.dtype for n in nodes if n.dtype is not None}
    kinds = {value_kind(d) for d in dtypes}
    shapes = [tuple(n.shape or ()) for n in nodes]
    if kinds == {"string"}:
        if any(shapes):
            reading.leave(
                target, "arrays of strings per sample: an h5ml string feature holds one string per sample (§6.4)"
            )
            return None
        encoding: Literal["dense", "ragged", "string", "categorical"] = "string"
        dtype = None
        sample_shape: list[int | None] = []
    elif kinds == {"numeric"}:
        if len(dtypes) > 1:
            common = np.result_type(*dtypes)
            reading.confirm.append(
                f"{inv.source}:{target}: the records hold dtypes {sorted(str(d) for d in dtypes)}; the plan stores "
                f"{common}: confirm"
            )
            dtype = common.str
        else:
            dtype = next(iter(dtypes)).str
        ndims = {len(s) for s in shapes}
        if len(ndims) > 1:
            reading.leave(target, f"the records' values have different numbers of axes ({sorted(ndims)})")
            reading.confirm.append(
                f"{inv.source}:{target}: values of {sorted(ndims)} axes; h5ml needs one number per feature"
            )
            return None
        ndim = ndims.pop()
        sample_shape = [shapes[0][i] if len({x[i] for x in shapes}) == 1 else None for i in range(ndim)]
        encoding = "dense" if None not in sample_shape else "ragged"
    else:
        reading.leave(target, f"the HDF5 types {sorted(str(d) for d in dtypes)} hold no numbers or strings h5ml stores")
        return None
    attrs: dict[str, Any] = {}
    keys = Counter(k for n in nodes for k in n.attrs if k not in BOOKKEEPING_ATTRS)
    for key, count in keys.items():
        values = [n.attrs.get(key) for n in nodes]
        kept = not isinstance(values[0], Unstorable) and key.strip()
        if count == len(nodes) and kept and all(v == values[0] for v in values):
            attrs[user_attr_name(key)] = values[0]
        else:
            reading.leave(
                f"{target}@{key}", "differs between records (or some lack it): not one attribute of the feature"
            )
    return Feature(
        name=name,
        parts=[Part(source=inv.source, kind="records", path=pattern, member=member)],
        role=feature_role(name),
        encoding=encoding,
        dtype=dtype,
        sample_shape=sample_shape,
        attrs=attrs,
    )


def record_features(inv: Inventory, pattern: str, records: list[Node], draft: Draft, reading: Reading) -> None:
    """Fill ``draft`` with the features of groups-per-sample records: member datasets, then record attributes.

    Parameters
    ----------
    inv
        The source.
    pattern
        The record pattern (``/*``, ``/*/*``).
    records
        The groups it matches.
    draft
        Gets the features and the sample count.
    reading
        Gets what is left out and what to confirm.
    """
    n = len(records)
    draft.kind, draft.num_samples = "records", n
    members = Counter(c.name for r in records for c in inv.children(r.path) if c.kind == "dataset")
    for name, count in members.items():
        target = f"{pattern}/{name}"
        if count < n:
            reading.leave(target, f"only {count} of the {n} records hold it")
            reading.confirm.append(
                f"{inv.source}:{target} is in {count} of {n} records: map it (records without it are then errors, "
                "or skipped with --on-error skip), or confirm it is left out"
            )
            continue
        nodes = [inv.nodes[f"{r.path}/{name}"] for r in records]
        feature = member_feature(inv, pattern, name, nodes, name, reading)
        if feature is not None:
            draft.features[name] = feature
    attrs = Counter(k for r in records for k in r.attrs if k not in BOOKKEEPING_ATTRS)
    for key, count in attrs.items():
        where = f"{pattern}@{key}"
        values = [r.attrs.get(key) for r in records]
        kind = _attr_kind(values) if count == n else None
        name = key if key not in draft.features else f"{key}_attribute"
        if kind is None:
            why = (
                f"only {count} of the {n} records carry it"
                if count < n
                else "its values are not one kind of number or string"
            )
            reading.leave(where, why)
            if count < n:
                reading.confirm.append(f"{inv.source}:{where} is on {count} of {n} records: confirm it is left out")
            continue
        draft.features[name] = Feature(
            name=name,
            parts=[Part(source=inv.source, kind="records", path=pattern, attribute=key)],
            role=feature_role(name),
            encoding=kind[0],  # type: ignore[arg-type]
            dtype=kind[1],
            sample_shape=[],
        )
