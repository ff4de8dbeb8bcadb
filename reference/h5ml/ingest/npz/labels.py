"""Categorical features of an ``.npz`` archive: the class names it stores, and the codes checked against them (§6.5).

An archive written by ``h5ml export`` holds the class names of a categorical
feature in ``<feature>_class_names`` (or ``<feature>_<split>_class_names``);
the ``label`` option (with ``class_names``, or the tutorials' number of
classes) makes one more feature categorical. Either way the feature's arrays
must hold integer codes in ``[-1, K)`` (-1: missing).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from h5ml.errors import EncodingError
from h5ml.ingest.naming import DEFAULT_SPLIT, split_feature_suffix
from h5ml.ingest.npz.companions import CLASS_NAMES_SUFFIX
from h5ml.model.values import Categorical

__all__ = ["SplitArrays", "StoredNames", "categorical", "stored_class_names"]

#: One split's features: feature -> (the array it came from, its samples: an array, or a list for ragged and bytes).
SplitArrays = dict[str, tuple[str, Any]]
#: Class names read from the archive: feature -> split -> (the array they came from, the names).
StoredNames = dict[str, dict[str, tuple[str, list[str]]]]


def stored_class_names(source: Path, splits: dict[str, SplitArrays]) -> StoredNames:
    """Take the class names arrays out of the features (§6.5; see :mod:`h5ml.ingest.npz`).

    :func:`h5ml.ingest.naming.split_array_name` puts ``<feature>_class_names`` and
    ``<feature>_<split>_class_names`` in split ``train``, as features of their
    own. Those whose ``<feature>`` is a feature of the archive (of that split,
    for the second form) are removed from ``splits`` (and ``train`` with them
    when nothing else is left in it) and returned.

    Parameters
    ----------
    source
        The archive, for messages.
    splits
        Split -> its features, as read; modified in place.

    Returns
    -------
    dict
        feature -> split -> (array name, class names), for every split that
        holds the feature and has class names (the per-split array over the
        shared one).

    Raises
    ------
    EncodingError
        If such an array is not a 1-D string array.
    """
    train = splits.get(DEFAULT_SPLIT, {})
    shared: dict[str, tuple[str, list[str]]] = {}
    per_split: dict[tuple[str, str], tuple[str, list[str]]] = {}
    for name in list(train):
        if not name.endswith(CLASS_NAMES_SUFFIX):
            continue
        prefix = name[: -len(CLASS_NAMES_SUFFIX)]
        parsed = split_feature_suffix(prefix)
        if parsed is not None and parsed[1] in splits.get(parsed[0], {}):
            key: tuple[str, str] | None = parsed
        elif any(prefix in features for features in splits.values()):
            key = None
        else:
            continue
        array_name, array = train.pop(name)
        if array.ndim != 1 or array.dtype.kind not in "US":
            raise EncodingError(
                f"{source}: array {array_name!r} should hold the class names of {prefix!r} as a 1-D string array "
                f"(§6.5), got dtype {array.dtype} shape {array.shape}",
                path=str(source),
            )
        names = [n.decode("utf-8", "replace") if isinstance(n, bytes) else str(n) for n in array.tolist()]
        if key is None:
            shared[prefix] = (array_name, names)
        else:
            per_split[key] = (array_name, names)
    if not train:
        splits.pop(DEFAULT_SPLIT, None)
    stored: StoredNames = {}
    for split, features in splits.items():
        for feature in features:
            found = per_split.get((split, feature), shared.get(feature))
            if found is not None:
                stored.setdefault(feature, {})[split] = found
    return stored


def _codes(source: Path, array_name: str, array: Any, why: str) -> np.ndarray:
    """The codes of one array of a categorical feature, checked: integers (N,), none below -1."""
    if not isinstance(array, np.ndarray) or array.dtype.kind not in "iub":
        kind = f"dtype {array.dtype}" if isinstance(array, np.ndarray) else "ragged or bytes samples"
        raise EncodingError(
            f"{source}: array {array_name!r} has {kind}; a categorical feature ({why}) needs integer class "
            "codes (§6.5); omit the class names to store it as it is",
            path=str(source),
        )
    if array.ndim != 1:
        raise EncodingError(
            f"{source}: array {array_name!r} has shape {array.shape}; a categorical feature ({why}) needs one "
            "code per sample, shape (N,) (§6.5)",
            path=str(source),
        )
    values = np.asarray(array).astype(np.int64)
    if values.size and values.min() < -1:
        raise EncodingError(
            f"{source}: array {array_name!r} holds the code {int(values.min())}; categorical codes are "
            ">= 0, with -1 meaning missing (§6.5)",
            path=str(source),
        )
    return values


def categorical(
    source: Path,
    feature: str,
    arrays: Mapping[str, tuple[str, Any]],
    class_names: Sequence[str] | Mapping[str, tuple[str, list[str]]] | None,
    why: str,
) -> dict[str, Categorical]:
    """Check the codes of a categorical feature (one array per split) and pair them with class names (§6.5).

    Parameters
    ----------
    source
        The archive, for messages.
    feature
        The feature.
    arrays
        split -> (array name, codes).
    class_names
        The names for every split, or split -> (array name, names) as
        :func:`stored_class_names` gives them, or None: ``"0" .. "K-1"``
        where ``K - 1`` is the largest code of any split (also for a split the
        mapping lacks).
    why
        Why the feature is categorical (``"--label y"``), for messages.

    Returns
    -------
    dict
        split -> the feature's values.

    Raises
    ------
    EncodingError
        If codes are not integers of shape (N,), a code is below -1 or has no
        class name, or class names are repeated or empty.
    """
    codes = {split: _codes(source, array_name, array, why) for split, (array_name, array) in arrays.items()}
    top = max((int(v.max()) for v in codes.values() if v.size), default=-1)
    out: dict[str, Categorical] = {}
    for split, values in codes.items():
        given: Sequence[str] | None
        if isinstance(class_names, Mapping):
            given = class_names[split][1] if split in class_names else None
        else:
            given = class_names
        if given is None:
            out[split] = Categorical(values, [str(k) for k in range(top + 1)])
            continue
        names = list(given)
        split_top = int(values.max()) if values.size else -1
        if split_top >= len(names):
            raise EncodingError(
                f"{source}: feature {feature!r} of split {split!r} holds the code {split_top} but only {len(names)} "
                f"class names were given; give at least {split_top + 1} (§6.5)",
                path=str(source),
            )
        if len(set(names)) != len(names) or any(not n for n in names):
            raise EncodingError(
                f"{source}: the class names {names!r} of feature {feature!r} must be unique and non-empty (§6.5)",
                path=str(source),
            )
        out[split] = Categorical(values, names)
    return out
