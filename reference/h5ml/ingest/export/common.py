"""What the two exports share: the splits and features chosen, and the sizes of ragged and bytes samples (§6.3, §6.6).

:mod:`~h5ml.ingest.export.npz` and :mod:`~h5ml.ingest.export.parquet` write
each format; how they read and write is in :mod:`h5ml.ingest.export`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Final

import numpy as np
import numpy.typing as npt

from h5ml.ingest.naming import name_list
from h5ml.reader import Dataset, Feature, Split

__all__ = ["OFFSETS_WINDOW", "has_shapes", "sample_lengths", "selected"]

#: Samples whose lengths are read at once when sizing ragged and bytes arrays.
OFFSETS_WINDOW: Final = 1 << 20


def selected(
    dataset: Dataset, splits: Sequence[str] | None, features: Sequence[str] | None
) -> list[tuple[Split, list[str]]]:
    """The splits to export and, for each, its features (checked to exist).

    Raises
    ------
    h5ml.errors.ParameterError
        If ``splits`` or ``features`` is not a list of names (a string alone, say).
    h5ml.SplitNotFoundError, h5ml.FeatureNotFoundError
        If a split or a feature does not exist.
    """
    splits, features = name_list("splits", splits, option="--split"), name_list("features", features, "--feature")
    chosen: list[tuple[Split, list[str]]] = []
    for name in list(dataset.every_split()) if splits is None else list(splits):
        split = dataset[name]  # raises SplitNotFoundError listing the splits
        names = list(split.every_feature() if features is None else features)  # SPEC §6.1-R7: none left out
        for feature in names:
            split.feature(feature)  # raises FeatureNotFoundError naming the split and the available features
        chosen.append((split, names))
    return chosen


def has_shapes(feature: Feature) -> bool:
    """Whether a feature is ragged with per-sample shapes (samples that vary in several axes, §6.3)."""
    shape = feature.sample_shape
    return feature.encoding == "ragged" and len(shape) > 1 and all(d is None for d in shape)


def sample_lengths(feature: Feature, count: int) -> Iterator[npt.NDArray[np.int64]]:
    """The sample lengths of a ragged or bytes feature (from its offsets), a window at a time."""
    for start in range(0, count, OFFSETS_WINDOW):
        stop = min(count, start + OFFSETS_WINDOW)
        yield np.asarray(feature.lengths(slice(start, stop)), dtype=np.int64)  # type: ignore[attr-defined]
