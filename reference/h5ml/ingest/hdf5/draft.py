"""What one source gives before the sources are joined: :class:`Draft` splits and a :class:`Reading` (§5, §6.1, §4.7).

The readers of the layouts (:mod:`h5ml.ingest.hdf5.readings`,
:mod:`~h5ml.ingest.hdf5.records`, :mod:`~h5ml.ingest.hdf5.fuel`) fill a
:class:`Reading` per source; :mod:`h5ml.ingest.hdf5.propose` joins them into
one :class:`~h5ml.ingest.hdf5.plan.Plan`. :func:`feature_role` and
:func:`kept_attrs` give a feature its role (from the conventional names,
§6.1) and its user attributes (the source dataset's, §4.7).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from h5ml import spec
from h5ml.ingest.features import ROLE_NAMES
from h5ml.ingest.hdf5.coverage import BOOKKEEPING_ATTRS
from h5ml.ingest.hdf5.inventory import Node, Unstorable
from h5ml.ingest.hdf5.plan import Feature, LeftOut, NamedBy

__all__ = ["Draft", "Reading", "feature_role", "kept_attrs", "user_attr_name"]


@dataclass
class Draft:
    """One split as one source gives it."""

    name: str
    source_split: str | None
    named_by: NamedBy
    kind: Literal["rows", "records"]
    source: str
    features: dict[str, Feature] = field(default_factory=dict)
    num_samples: int = 0
    #: 1-D string datasets of another length than the samples: class-name candidates (path -> length).
    names_candidates: dict[str, int] = field(default_factory=dict)
    #: records of one dataset per sample: the ids the features' patterns matched.
    ids: set[str] = field(default_factory=set)


@dataclass
class Reading:
    """What one source gives: its splits, what is left out, what to confirm, its scalar datasets."""

    source: str
    drafts: list[Draft] = field(default_factory=list)
    left_out: list[LeftOut] = field(default_factory=list)
    confirm: list[str] = field(default_factory=list)
    scalars: dict[str, Node] = field(default_factory=dict)

    def leave(self, path: str, reason: str) -> None:
        """Record ``path`` (a dataset, a pattern or ``path@attr``) as left out, with the reason."""
        self.left_out.append(LeftOut(source=self.source, path=path, reason=reason))


def feature_role(name: str) -> Literal["input", "target", "metadata"] | None:
    """The role of a conventional feature name (``x`` input, ``label`` target, ...; :data:`h5ml.ingest.features.ROLE_NAMES`).

    Parameters
    ----------
    name
        A feature name, compared without case.

    Returns
    -------
    str or None
        ``"input"``, ``"target"``, ``"metadata"`` (§6.1), or None for other names.
    """
    role = ROLE_NAMES.get(name.lower())
    return role  # type: ignore[return-value]


def user_attr_name(name: str, level: str = "feature") -> str:
    """The user-attribute name (§4.7) of a source attribute: as it is, or ``source:<name>`` when h5ml defines or reserves it.

    Parameters
    ----------
    name
        The source attribute's name.
    level
        ``"feature"`` (the §6.1 names are h5ml's) or ``"root"`` (the §4.2 names are).
    """
    defined = spec.FEATURE_COMMON_ATTRS if level == "feature" else spec.ROOT_ATTRS
    if name in defined or name.startswith(spec.RESERVED_PREFIX):
        return f"source:{name}"
    return name


def kept_attrs(node: Node) -> dict[str, Any]:
    """A dataset's attributes as its feature's user attributes: bookkeeping left out, h5ml's names prefixed.

    Parameters
    ----------
    node
        A source dataset.

    Returns
    -------
    dict
        User attribute name (§4.7; ``source:<name>`` for a name §6.1 defines) -> plain value.
    """
    return {
        user_attr_name(k): v
        for k, v in node.attrs.items()
        if k not in BOOKKEEPING_ATTRS and k.strip() and not isinstance(v, Unstorable)
    }
