"""Split ratios for sources without splits: ``--split-ratios train=0.8,test=0.2``, stratified on the label (§5.1).

:func:`parse_ratios` reads the command-line form and :func:`check_ratios`
checks the Python one (shares that add up to 1, valid split names);
:func:`assign_splits` gives each sample a split so that every split gets its
share of every class (stratified), deterministically for a seed.

The split seed is not the shuffle seed. The cut is drawn with its own
generator, ``numpy.random.default_rng(split_seed)``, where the split seed is
the converter's ``seed`` or 0 when none is given (:func:`split_seed`): a
conversion without a seed cuts the same splits every time, even when it
shuffles on write with a drawn seed. The order in which each split is then
stored is the other, recorded permutation of :mod:`h5ml.sampling.seeds` (§7.6).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from h5ml.ingest.naming import name_problem
from h5ml.ingest.options import parameter_error

__all__ = ["assign_splits", "check_ratios", "parse_ratios", "split_seed"]

#: The parameter that carries ratios, named in errors.
_PARAMETER = "split_ratios"


def parse_ratios(text: str) -> dict[str, float]:
    """Parse ``"train=0.8,test=0.2"`` into ``{"train": 0.8, "test": 0.2}``.

    Parameters
    ----------
    text
        Comma-separated ``name=share`` entries (spaces allowed).

    Returns
    -------
    dict
        Split name -> share, checked as :func:`check_ratios` does.

    Raises
    ------
    h5ml.errors.ParameterError
        If an entry is not ``name=number``, a name repeats, a share is not in
        (0, 1], or the shares do not add up to 1 (within 1e-6); the message
        names ``split_ratios`` and ``--split-ratios``.
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
            raise parameter_error(
                _PARAMETER,
                f"split ratio {entry!r} is not name=number with 0 < number <= 1, e.g. train=0.8,test=0.2",
            )
        if name in ratios:
            raise parameter_error(_PARAMETER, f"split {name!r} is given twice in {text!r}")
        ratios[name] = ratio
    if not ratios:
        raise parameter_error(_PARAMETER, f"no split ratios in {text!r}; give e.g. train=0.8,test=0.2")
    return check_ratios(ratios)


def check_ratios(ratios: Any) -> dict[str, float]:
    """Check split ratios before any source is read (§5.1).

    Parameters
    ----------
    ratios
        Split name -> share, such as ``{"train": 0.8, "test": 0.2}``.

    Returns
    -------
    dict
        A copy, the shares as floats.

    Raises
    ------
    h5ml.errors.ParameterError
        If ``ratios`` is not a non-empty mapping, a name is not a valid split
        name (§5.1.1), a share is not a number in (0, 1], or the shares do not
        add up to 1 (within 1e-6).
    """
    if not isinstance(ratios, Mapping) or not ratios:
        raise parameter_error(_PARAMETER, f"no split ratios in {ratios!r}; give e.g. {{'train': 0.8, 'test': 0.2}}")
    for name, share in ratios.items():
        problem = name_problem("split", name)
        if problem is not None:
            raise parameter_error(_PARAMETER, f"split_ratios: {name!r} is not a valid split name: {problem}")
        if isinstance(share, bool) or not isinstance(share, (int, float)) or not 0 < share <= 1:
            raise parameter_error(_PARAMETER, f"split_ratios gives {name!r} the share {share!r}, not in (0, 1]")
    total = sum(float(share) for share in ratios.values())
    if abs(total - 1.0) > 1e-6:
        raise parameter_error(_PARAMETER, f"split ratios {dict(ratios)} add up to {total:g}, not 1")
    return {str(name): float(share) for name, share in ratios.items()}


def split_seed(seed: int | None) -> int:
    """The seed of the split cut: the converter's ``seed``, or 0 when it has none (see the module docstring).

    Parameters
    ----------
    seed
        The ``seed`` the user gave, or None (never a drawn shuffle seed).

    Returns
    -------
    int
        ``seed``, or 0.
    """
    return 0 if seed is None else seed


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
        The split seed (:func:`split_seed`), >= 0.
    labels
        Optional label of each sample (N,), any hashable values.

    Returns
    -------
    list of str
        The split of each sample, in sample order.

    Raises
    ------
    h5ml.errors.ParameterError
        If the ratios are invalid (:func:`check_ratios`).
    ValueError
        If ``labels`` does not have ``count`` entries (a defect of the caller).
    """
    ratios = check_ratios(ratios)
    names = list(ratios)
    fractions = np.array([ratios[n] for n in names], dtype=np.float64)
    keys = np.zeros(count, dtype=np.int64) if labels is None else np.unique(np.asarray(labels), return_inverse=True)[1]
    if keys.shape[0] != count:
        raise ValueError(f"labels has {keys.shape[0]} entries for {count} samples")
    split_rng = np.random.default_rng(seed)
    out = np.empty(count, dtype=np.int64)
    for key in np.unique(keys):
        members = np.flatnonzero(keys == key)
        members = members[split_rng.permutation(members.shape[0])]
        exact = fractions * members.shape[0]
        sizes = np.floor(exact).astype(np.int64)
        short = members.shape[0] - int(sizes.sum())
        sizes[np.argsort(-(exact - sizes), kind="stable")[:short]] += 1
        out[members] = np.repeat(np.arange(len(names)), sizes)
    return [names[i] for i in out.tolist()]
