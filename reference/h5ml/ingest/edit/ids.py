"""Sample ids of merged files: refusing two files that hold the same id in one split (§5, §6.4).

The converters keep each sample's source id in the feature ``id``;
:func:`check_ids` compares the ids of the files merged into one split by
64-bit keys (an integer id itself, a string's hash), kept in memory with
their file and row, and confirms a match by reading both ids back.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from h5ml.errors import IngestError
from h5ml.ingest.edit.batches import WINDOW
from h5ml.ingest.options import parameter_error
from h5ml.ingest.report import ID_FEATURE
from h5ml.reader import Dataset, Feature

__all__ = ["check_ids"]


def _id_keys(feature: Feature) -> npt.NDArray[np.int64]:
    """A 64-bit key of every sample id of ``feature``, in row order, read :data:`h5ml.ingest.edit.batches.WINDOW` rows at a time.

    Integer ids are their own key (unsigned ones reinterpreted, so that keys
    are equal only when ids are); a string's key is its ``hash``, equal for
    different strings only by a 64-bit accident, which :func:`_check_ids`
    rules out by comparing the ids themselves.
    """
    count = feature.num_samples
    keys = np.empty(count, dtype=np.int64)
    for start in range(0, count, WINDOW):
        stop = min(count, start + WINDOW)
        values = feature[start:stop]
        if feature.encoding == "string":
            keys[start:stop] = np.fromiter(map(hash, values.tolist()), dtype=np.int64, count=stop - start)
        else:
            wide = np.uint64 if np.dtype(feature.dtype).kind == "u" else np.int64
            keys[start:stop] = np.asarray(values, dtype=wide).view(np.int64)
    return keys


def _id_at(feature: Feature, row: int) -> Any:
    """The id of one row as a Python ``str`` or ``int`` (for comparing, and for messages)."""
    return feature[row : row + 1].tolist()[0]


def _is_id_feature(feature: Feature) -> bool:
    """Whether ``feature`` can hold sample ids: ``string``, or ``dense`` integer scalars (§6.2, §6.4)."""
    if feature.encoding == "string":
        return True
    return (
        feature.encoding == "dense" and tuple(feature.sample_shape) == () and np.issubdtype(feature.dtype, np.integer)
    )


def check_ids(name: str, members: Sequence[tuple[Path, Dataset]], id_feature: str) -> None:
    """Refuse files that hold the same sample id in split ``name`` (see the module docstring).

    Parameters
    ----------
    name
        The split.
    members
        The files (path as given, open file) that hold it, in merge order;
        their features agree.
    id_feature
        The feature holding the ids. A split without it, or where it is not
        an id feature (:func:`_is_id_feature`), is not checked when it is the
        default :data:`h5ml.ingest.report.ID_FEATURE`, and refused for any other name.

    Raises
    ------
    h5ml.IngestError
        At the first row (in merge order) whose id an earlier file holds: the
        message names both files, the split, the feature, the id and both rows.
    h5ml.errors.ParameterError
        If ``id_feature`` is not :data:`h5ml.ingest.report.ID_FEATURE` and cannot be checked.
    """
    first = members[0][1][name]
    usable = id_feature in first.features and _is_id_feature(first.feature(id_feature))
    if not usable and id_feature != ID_FEATURE:  # a name given on purpose must be checkable
        what = "has no feature" if id_feature not in first.features else "has no string or integer-scalar feature"
        raise parameter_error(
            "id_feature",
            f"{members[0][0]}: split {name!r} {what} {id_feature!r} to check sample ids with; name a string or "
            "integer id feature, or allow duplicates (allow_duplicate_ids=True, --allow-duplicate-ids)",
        )
    if len(members) < 2 or not usable:
        return
    # Every id met so far, sorted by key (stable: equal keys keep merge order): key, file, row.
    known = np.zeros(0, dtype=np.int64)
    known_file = np.zeros(0, dtype=np.int32)
    known_row = np.zeros(0, dtype=np.int64)
    for index, (path, ds) in enumerate(members):
        feature = ds[name].feature(id_feature)
        keys = _id_keys(feature)
        if known.size:
            pos = np.searchsorted(known, keys)
            hit = known[np.minimum(pos, known.size - 1)] == keys
            for row in np.flatnonzero(hit).tolist():
                value = _id_at(feature, row)
                p = int(pos[row])
                while p < known.size and known[p] == keys[row]:
                    earlier_path, earlier = members[int(known_file[p])]
                    earlier_row = int(known_row[p])
                    if _id_at(earlier[name].feature(id_feature), earlier_row) == value:
                        raise IngestError(
                            f"cannot merge {earlier_path} and {path}: split {name!r} holds the sample id {value!r} "
                            f"(feature {id_feature!r}) in both, at row {earlier_row} of {earlier_path} and row {row} "
                            f"of {path}; {int(hit.sum())} sample(s) of {path} have ids that earlier files hold. "
                            "Merged, the split would hold two samples with one id: drop the repeated samples from "
                            "one file first (h5ml subset --samples), or merge anyway with --allow-duplicate-ids "
                            "(allow_duplicate_ids=True)",
                            path=str(path),
                        )
                    p += 1
        known = np.concatenate([known, keys])
        known_file = np.concatenate([known_file, np.full(keys.size, index, dtype=np.int32)])
        known_row = np.concatenate([known_row, np.arange(keys.size, dtype=np.int64)])
        ordered = np.argsort(known, kind="stable")
        known, known_file, known_row = known[ordered], known_file[ordered], known_row[ordered]
