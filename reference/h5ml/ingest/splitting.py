"""Split ratios for sources without splits: ``--split train=0.8,test=0.2``, stratified on the label (§5.1).

:func:`parse_ratios` reads the command-line form; :func:`assign_splits`
gives each sample a split so that every split gets its share of every class
(stratified), deterministically for a seed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = ["assign_splits", "parse_ratios"]


def parse_ratios(text: str) -> dict[str, float]:
    """Parse ``"train=0.8,test=0.2"`` into ``{"train": 0.8, "test": 0.2}``.

    Raises
    ------
    ValueError
        If an entry is not ``name=number``, a name repeats, a ratio is not in
        (0, 1], or the ratios do not add up to 1 (within 1e-6).
    """
    ratios: dict[str, float] = {}
    for entry in (e.strip() for e in text.split(",") if e.strip()):
        name, sep, value = entry.partition("=")
        name = name.strip()
        try:
            ratio = float(value)
        except ValueError:
            ratio = float("nan")
        if not sep or not name or not 0 < ratio <= 1:
            raise ValueError(f"split ratio {entry!r} is not name=number with 0 < number <= 1, e.g. train=0.8,test=0.2")
        if name in ratios:
            raise ValueError(f"split {name!r} is given twice in {text!r}")
        ratios[name] = ratio
    return _checked(ratios, text)


def _checked(ratios: Mapping[str, float], text: Any) -> dict[str, float]:
    if not ratios:
        raise ValueError(f"no split ratios in {text!r}; give e.g. train=0.8,test=0.2")
    if abs(sum(ratios.values()) - 1.0) > 1e-6:
        raise ValueError(f"split ratios {dict(ratios)} add up to {sum(ratios.values()):g}, not 1")
    return dict(ratios)


def assign_splits(
    count: int, ratios: Mapping[str, float], seed: int, labels: Sequence[Any] | npt.NDArray[Any] | None = None
) -> list[str]:
    """Give each of ``count`` samples a split, stratified on ``labels`` when given.

    Within each class (or over all samples without labels) the samples are
    permuted with ``numpy.random.default_rng(seed)`` and cut by the ratios,
    the counts rounded by largest remainder so that they add up to the
    class size: a class of 10 with train=0.8,test=0.2 gives 8 and 2.

    Parameters
    ----------
    count
        The number of samples N.
    ratios
        Split name -> fraction; the fractions add up to 1.
    seed
        Seed of the permutation, >= 0.
    labels
        Optional label of each sample (N,), any hashable values.

    Returns
    -------
    list of str
        The split of each sample, in sample order.

    Raises
    ------
    ValueError
        If the ratios are invalid or ``labels`` does not have ``count`` entries.
    """
    ratios = _checked(ratios, ratios)
    names = list(ratios)
    fractions = np.array([ratios[n] for n in names], dtype=np.float64)
    keys = np.zeros(count, dtype=np.int64) if labels is None else np.unique(np.asarray(labels), return_inverse=True)[1]
    if keys.shape[0] != count:
        raise ValueError(f"labels has {keys.shape[0]} entries for {count} samples")
    rng = np.random.default_rng(seed)
    out = np.empty(count, dtype=np.int64)
    for key in np.unique(keys):
        members = np.flatnonzero(keys == key)
        members = members[rng.permutation(members.shape[0])]
        exact = fractions * members.shape[0]
        sizes = np.floor(exact).astype(np.int64)
        short = members.shape[0] - int(sizes.sum())
        sizes[np.argsort(-(exact - sizes), kind="stable")[:short]] += 1
        out[members] = np.repeat(np.arange(len(names)), sizes)
    return [names[i] for i in out.tolist()]
