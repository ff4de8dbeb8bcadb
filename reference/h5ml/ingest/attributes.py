"""The descriptive attributes of a feature that the exports write and the converters read back (§6.1).

``role``, ``description``, ``units`` and ``sample_rate`` say what a feature
is, not how it is stored: ``h5ml export`` writes them beside the values
(a ``<feature>_<split>_attrs`` JSON string in ``.npz``, the field metadata
in Parquet) and ``h5ml convert`` gives them back to the feature, so that a
round trip keeps them. :func:`descriptive_attributes` reads them off a
feature; :func:`descriptive_spec` checks what a source holds and makes the
writer's options of it.
"""

from __future__ import annotations

import math
from typing import Any, Final

from h5ml import spec
from h5ml.errors import IngestError
from h5ml.model.values import FeatureSpec

__all__ = ["DESCRIPTIVE_ATTRIBUTES", "descriptive_attributes", "descriptive_spec"]

#: The attributes (§6.1) that say what a feature is, carried through exports and back.
DESCRIPTIVE_ATTRIBUTES: Final = ("role", "description", "units", "sample_rate")


def descriptive_attributes(feature: Any) -> dict[str, Any]:
    """The descriptive attributes a feature has (a :class:`h5ml.reader.Feature`): name -> value, unset ones left out."""
    found = {name: getattr(feature, name, None) for name in DESCRIPTIVE_ATTRIBUTES}
    return {name: value for name, value in found.items() if value is not None}


def descriptive_spec(values: Any, source: str, where: str) -> FeatureSpec:
    """The writer's options for the descriptive attributes a source records of one feature, checked (§6.1).

    Parameters
    ----------
    values
        What the source records: a mapping; keys other than
        :data:`DESCRIPTIVE_ATTRIBUTES` are not looked at here.
    source
        The source file, for messages.
    where
        What holds them in the source (``"array 'x_train_attrs'"``), for messages.

    Returns
    -------
    FeatureSpec
        ``role``, ``description``, ``units`` and ``sample_rate`` as recorded (None where not).

    Raises
    ------
    h5ml.IngestError
        If ``values`` is not a mapping, the role is not one of ``input``,
        ``target``, ``metadata``, a description or units is not text, or the
        sample rate is not a number > 0.
    """
    if not isinstance(values, dict):
        raise IngestError(f"{source}: {where} should hold a JSON object of attributes, got {values!r}", path=source)
    role, rate = values.get("role"), values.get("sample_rate")
    problems = []
    if role is not None and role not in spec.ROLES:
        problems.append(f"role {role!r} is not one of {list(spec.ROLES)}")
    for name in ("description", "units"):
        if values.get(name) is not None and not isinstance(values[name], str):
            problems.append(f"{name} {values[name]!r} is not text")
    if rate is not None and (isinstance(rate, bool) or not isinstance(rate, (int, float)) or not rate > 0):
        problems.append(f"sample_rate {rate!r} is not a number > 0")
    elif rate is not None and not math.isfinite(rate):
        problems.append(f"sample_rate {rate!r} is not finite")
    if problems:
        raise IngestError(
            f"{source}: {where}: {'; '.join(problems)} (§6.1); fix or remove the attribute in the source", path=source
        )
    return FeatureSpec(
        role=role,
        description=values.get("description"),
        units=values.get("units"),
        sample_rate=None if rate is None else float(rate),
    )
