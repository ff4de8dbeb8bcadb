"""The feature options of a conversion: roles from conventional names, the user's ``features=`` over the converter's (§6.1).

One table of conventional names (:data:`ROLE_NAMES`: ``x`` is an input,
``label`` a target, ``id`` metadata) gives roles in every converter
(:func:`default_roles`); :func:`pair_roles` tells input from target in a
pair of signals (``noisy``/``clean``). :func:`with_user_features` puts the
user's ``features=`` option over what a converter declares, refusing a
value that contradicts the source (its encoding, its class names).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from h5ml.ingest.options import parameter_error
from h5ml.model.values import FeatureSpec, SpecTable

__all__ = [
    "INPUT_NAMES",
    "ROLE_NAMES",
    "TARGET_NAMES",
    "check_fixed_fields",
    "default_roles",
    "pair_roles",
    "with_user_features",
]

#: Roles of the conventional feature names (§6.1), given by every converter where no role is set.
ROLE_NAMES: Final[Mapping[str, str]] = {
    "x": "input",
    "data": "input",
    "input": "input",
    "inputs": "input",
    "features": "input",
    "image": "input",
    "images": "input",
    "img": "input",
    "y": "target",
    "label": "target",
    "labels": "target",
    "target": "target",
    "targets": "target",
    "category": "target",
    "class": "target",
    "id": "metadata",
}
#: Feature names (lower case) recognised as the input of an input/target pair of signals (:func:`pair_roles`).
INPUT_NAMES: Final = frozenset({name for name, role in ROLE_NAMES.items() if role == "input"} | {"noisy", "mix"})
#: Feature names (lower case) recognised as the target of an input/target pair of signals (:func:`pair_roles`).
TARGET_NAMES: Final = frozenset({name for name, role in ROLE_NAMES.items() if role == "target"} | {"clean"})
#: What a converter reads from the source and ``features=`` may not change.
_FIXED_FIELDS: Final = ("encoding", "class_names")


def default_roles(
    names: Iterable[str], features: Mapping[str, FeatureSpec | Mapping[str, Any]] | None
) -> dict[str, FeatureSpec | Mapping[str, Any]]:
    """Add the roles of :data:`ROLE_NAMES` to a ``features=`` table for the features that have none.

    Parameters
    ----------
    names
        The feature names met (each at most once is enough).
    features
        A ``features=`` table (``{"feature" or "split/feature": FeatureSpec or dict}``), or None.

    Returns
    -------
    dict
        A new table: the given entries, with ``role`` filled in for the
        conventional names whose general entry gives none.
    """
    table: dict[str, FeatureSpec | Mapping[str, Any]] = dict(features or {})
    for name in names:
        role = ROLE_NAMES.get(name)
        if role is None:
            continue
        given = table.get(name)
        if given is None:
            table[name] = FeatureSpec(role=role)
        elif isinstance(given, FeatureSpec) and given.role is None:
            table[name] = given.merged(FeatureSpec(role=role))
        elif isinstance(given, Mapping) and given.get("role") is None:
            table[name] = {**given, "role": role}
    return table


def pair_roles(features: Sequence[str]) -> dict[str, str]:
    """Roles of a pair of signal features: input/target for a recognised pair, none otherwise (§6.1).

    Parameters
    ----------
    features
        The signal feature names (the ``id`` feature excluded).

    Returns
    -------
    dict of str to str
        ``{input_feature: "input", target_feature: "target"}`` when there are
        exactly two features and their names, compared in lower case, name
        one of :data:`INPUT_NAMES` and/or one of :data:`TARGET_NAMES` without
        naming two inputs or two targets (``["noisy", "clean"]``,
        ``["data", "speech"]``, ``["mixture", "y"]``); ``{feature: "input"}``
        for one feature named as an input (``["input"]``, ``["noisy"]``: a
        dataset of signals alone); else ``{}`` (a lone ``clean`` is the
        target of nothing).
    """
    if len(features) == 1:
        return {features[0]: "input"} if features[0].lower() in INPUT_NAMES else {}
    if len(features) != 2:
        return {}
    inputs = [f for f in features if f.lower() in INPUT_NAMES]
    targets = [f for f in features if f.lower() in TARGET_NAMES]
    if len(inputs) == 1 and len(targets) <= 1:
        other = next(f for f in features if f != inputs[0])
        if not targets or targets[0] == other:
            return {inputs[0]: "input", other: "target"}
    if len(targets) == 1 and not inputs:
        other = next(f for f in features if f != targets[0])
        return {other: "input", targets[0]: "target"}
    return {}


def check_fixed_fields(
    key: str, encoding: str | None, class_names: Sequence[str] | None, given: FeatureSpec, advice: str
) -> None:
    """Refuse a ``features=`` entry that changes what the source fixes: the encoding, the class names (§6).

    Parameters
    ----------
    key
        The entry's key (``"label"``, ``"train/label"``).
    encoding, class_names
        What the converter stores, read from the source (None: not fixed).
    given
        The user's options for that feature.
    advice
        What to do instead, for the message.

    Raises
    ------
    h5ml.errors.ParameterError
        Naming the key, the field, both values and the advice.
    """
    stored = {"encoding": encoding, "class_names": None if class_names is None else tuple(class_names)}
    for field in _FIXED_FIELDS:
        value = getattr(given, field)
        if value is None or stored[field] is None:
            continue
        wanted = tuple(value) if field == "class_names" else value
        if wanted != stored[field]:
            raise parameter_error(
                "features",
                f"features= gives {key} the {field.replace('_', ' ')} {value!r}, but the source's is stored as "
                f"{stored[field]!r}: {advice}",
            )


def with_user_features(
    declared: Mapping[str, FeatureSpec], given: Mapping[str, FeatureSpec | Mapping[str, Any]] | None
) -> dict[str, FeatureSpec | Mapping[str, Any]]:
    """The user's ``features=`` over a converter's declared features, for :class:`h5ml.Writer` (§6.1).

    Parameters
    ----------
    declared
        Key (``"feature"`` or ``"split/feature"``) -> what the converter declares.
    given
        The user's ``features=`` option, or None.

    Returns
    -------
    dict
        ``declared`` with each user entry merged over the declared entry of
        its key (the user's fields win); a ``"split/feature"`` entry over a
        general declaration is kept as its own key (the writer merges it
        field by field), and entries for undeclared features pass as they are
        (the writer refuses those that match no feature).

    Raises
    ------
    h5ml.errors.ParameterError
        If an entry changes an encoding or class names the converter read from the source.
    h5ml.WriterError
        If ``given`` is not a valid ``features=`` table (keys not strings, values not options).
    """
    out: dict[str, FeatureSpec | Mapping[str, Any]] = dict(declared)
    for key, spec in SpecTable(given).specs.items():
        base = declared.get(key) or declared.get(key.rpartition("/")[2])
        if base is not None:
            advice = "the converter chooses them from the source; change the source, or convert and edit the file"
            check_fixed_fields(key, base.encoding, base.class_names, spec, advice)
        current = declared.get(key)
        out[key] = spec if current is None else current.merged(spec)
    return out
