"""The companion arrays of an ``.npz`` archive: offsets, shapes, media types (§6.3, §6.6) and attributes (§6.1).

``<base>_offsets`` beside an array ``<base>`` makes ``<base>`` the values of
a ragged feature (with ``<base>_shapes``: of samples that vary in several
axes) or, with ``<base>_media_type``, of a bytes feature, as
:func:`h5ml.ingest.export.export_npz` writes them (the table is in
:mod:`h5ml.ingest.npz`); ``<base>_attrs`` beside any values array gives its
feature's role, description, units and sample rate.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

import numpy as np

from h5ml.errors import EncodingError, IngestError
from h5ml.ingest.attributes import descriptive_spec
from h5ml.ingest.npz.archive import check_array
from h5ml.model.values import FeatureSpec

__all__ = [
    "ATTRS_SUFFIX",
    "CLASS_NAMES_SUFFIX",
    "MEDIA_TYPE_SUFFIX",
    "OFFSETS_SUFFIX",
    "SHAPES_SUFFIX",
    "find_attributes",
    "find_companions",
    "offset_samples",
]

#: Suffix of the array holding the class names of categorical feature ``<feature>`` (§6.5), as ``h5ml export`` writes it.
CLASS_NAMES_SUFFIX: Final = "_class_names"
#: Suffix of the offsets (N+1,) of the ragged or bytes values ``<base>`` (§6.3, §6.6), as ``h5ml export`` writes them.
OFFSETS_SUFFIX: Final = "_offsets"
#: Suffix of the per-sample shapes (N, D) of the ragged values ``<base>`` (§6.3), beside their offsets.
SHAPES_SUFFIX: Final = "_shapes"
#: Suffix of the media type of the bytes values ``<base>`` (§6.6), beside their offsets: it marks them bytes.
MEDIA_TYPE_SUFFIX: Final = "_media_type"
#: Suffix of the descriptive attributes of the feature whose values are ``<base>`` (§6.1: role, description, units,
#: sample rate), a JSON object in one string, as ``h5ml export`` writes them (:mod:`h5ml.ingest.attributes`).
ATTRS_SUFFIX: Final = "_attrs"


def find_companions(source: Path, names: Sequence[str]) -> dict[str, dict[str, str]]:
    """The companion arrays of every ragged or bytes values array (see :mod:`h5ml.ingest.npz`).

    Parameters
    ----------
    source
        The archive, for messages.
    names
        Every array name of the archive.

    Returns
    -------
    dict
        ``<base>`` -> ``{"offsets": name, "shapes": name, "media_type": name}``
        (the last two when present) for every ``<base>`` that has
        ``<base>_offsets``.

    Raises
    ------
    EncodingError
        If a values array is also the companion of another (``x``,
        ``x_offsets`` and ``x_offsets_offsets``): which is meant is unclear.
    """
    present = set(names)
    found: dict[str, dict[str, str]] = {}
    for name in names:
        base = name[: -len(OFFSETS_SUFFIX)]
        if name.endswith(OFFSETS_SUFFIX) and base in present:
            group = {"offsets": name}
            for role, suffix in (("shapes", SHAPES_SUFFIX), ("media_type", MEDIA_TYPE_SUFFIX)):
                if base + suffix in present:
                    group[role] = base + suffix
            found[base] = group
    for base, group in found.items():
        for other, other_group in found.items():
            if base in other_group.values():
                raise EncodingError(
                    f"{source}: array {base!r} is both the values of a ragged or bytes feature (beside "
                    f"{group['offsets']!r}) and a companion of {other!r}; rename one of them",
                    path=str(source),
                )
    return found


def find_attributes(source: Path, arrays: Mapping[str, np.ndarray]) -> dict[str, FeatureSpec]:
    """The descriptive attributes of the features, from the ``<base>_attrs`` arrays beside their values (§6.1).

    Parameters
    ----------
    source
        The archive, for messages.
    arrays
        Every array of the archive, by name.

    Returns
    -------
    dict
        ``<base>`` -> its role, description, units and sample rate, for every
        ``<base>_attrs`` whose ``<base>`` is in the archive (the others are
        ordinary arrays).

    Raises
    ------
    h5ml.IngestError
        If such an array is not one string holding a JSON object of valid
        attributes (:func:`h5ml.ingest.attributes.descriptive_spec`).
    """
    found: dict[str, FeatureSpec] = {}
    for name, array in arrays.items():
        base = name[: -len(ATTRS_SUFFIX)]
        if not name.endswith(ATTRS_SUFFIX) or base not in arrays:
            continue
        where = f"array {name!r} (the attributes of {base!r})"
        try:
            values = json.loads(str(array.reshape(-1)[0])) if array.dtype.kind == "U" and array.size == 1 else None
        except json.JSONDecodeError as exc:
            raise IngestError(f"{source}: {where} is not JSON ({exc})", path=str(source)) from None
        found[base] = descriptive_spec(values, str(source), where)
    return found


def _bounds(source: Path, base: str, rows: int, offsets_name: str, offsets: np.ndarray) -> np.ndarray:
    """The offsets as int64, checked: 1-D integers from 0, never decreasing, to the rows of the values."""
    if offsets.ndim != 1 or offsets.dtype.kind not in "iu" or offsets.shape[0] == 0:
        raise EncodingError(
            f"{source}: array {offsets_name!r} should hold the offsets of {base!r}, a 1-D integer array of N+1 "
            f"values (§6.3), got dtype {offsets.dtype} shape {offsets.shape}; rename it if it is a feature",
            path=str(source),
        )
    bounds = offsets.astype(np.int64)
    if bounds[0] != 0 or bounds[-1] != rows or bool(np.any(bounds[1:] < bounds[:-1])):
        raise EncodingError(
            f"{source}: array {offsets_name!r} does not hold offsets into {base!r}: they must start at 0, never "
            f"decrease and end at its {rows} rows (§6.3), got {int(bounds[0])} .. {int(bounds[-1])}",
            path=str(source),
        )
    return bounds


def _check_bytes(
    source: Path, base: str, values: np.ndarray, media_name: str, media: np.ndarray, shapes_name: str | None
) -> None:
    """Refuse a bytes feature whose values are not uint8 (M,) or whose media type is not one string (§6.6)."""
    if media.dtype.kind != "U" or media.size != 1 or shapes_name is not None:
        raise EncodingError(
            f"{source}: array {media_name!r} should hold the media type of the bytes feature {base!r}, one "
            f"string (§6.6), got dtype {media.dtype} shape {media.shape}"
            + (f", beside {shapes_name!r} (bytes samples have no shapes)" if shapes_name is not None else ""),
            path=str(source),
        )
    if values.dtype != np.uint8 or values.ndim != 1:
        raise EncodingError(
            f"{source}: array {base!r} holds the bytes of a bytes feature (beside {media_name!r}) and must be "
            f"uint8 of shape (M,) (§6.6), got dtype {values.dtype} shape {values.shape}",
            path=str(source),
        )


def offset_samples(
    source: Path, base: str, arrays: Mapping[str, np.ndarray], group: Mapping[str, str]
) -> tuple[list[Any], FeatureSpec]:
    """The samples of the ragged or bytes feature whose values are array ``base`` (§6.3, §6.6).

    Parameters
    ----------
    source
        The archive, for messages.
    base
        The values array: (M, ...) rows, or (M,) elements beside shapes, or
        uint8 (M,) bytes beside a media type.
    arrays
        Every array of the archive, by name.
    group
        Its companions, as :func:`find_companions` gives them.

    Returns
    -------
    tuple
        The samples (views of ``base``: arrays, reshaped when shapes are
        given; ``bytes`` for a bytes feature) and the options that declare the
        feature: encoding, dtype, ``sample_ndim`` (shapes of D > 1 axes),
        media type.

    Raises
    ------
    EncodingError
        If the offsets are not 1-D integers from 0, never decreasing, to the
        rows of ``base``; the shapes are not (N, D) integers that hold each
        sample's values exactly; a bytes feature's values are not 1-D uint8 or
        its media type not one string; or ragged values are not numbers or
        booleans. The message names the archive and the arrays.
    """
    values = arrays[base]
    check_array(source, base, values)
    offsets_name = group["offsets"]
    bounds = _bounds(source, base, int(values.shape[0]), offsets_name, arrays[offsets_name])
    spans = list(zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True))
    media_name = group.get("media_type")
    shapes_name = group.get("shapes")
    if media_name is not None:
        media = arrays[media_name]
        _check_bytes(source, base, values, media_name, media, shapes_name)
        samples: list[Any] = [values[a:b].tobytes() for a, b in spans]
        return samples, FeatureSpec(encoding="bytes", media_type=str(media.reshape(-1)[0]))
    if values.dtype.kind not in "biuf":
        raise EncodingError(
            f"{source}: array {base!r} holds the values of a ragged feature (beside {offsets_name!r}) but has "
            f"dtype {values.dtype}; ragged values are numbers or booleans (§6.3)",
            path=str(source),
        )
    if shapes_name is None:
        return [values[a:b] for a, b in spans], FeatureSpec(encoding="ragged", dtype=values.dtype)
    shapes = arrays[shapes_name]
    if shapes.ndim != 2 or shapes.dtype.kind not in "iu" or shapes.shape[0] != len(spans) or shapes.shape[1] == 0:
        raise EncodingError(
            f"{source}: array {shapes_name!r} should hold the shape of each of the {len(spans)} samples of "
            f"{base!r}, an integer array (N, D) with D >= 1 (§6.3), got dtype {shapes.dtype} shape {shapes.shape}",
            path=str(source),
        )
    if values.ndim != 1:
        raise EncodingError(
            f"{source}: array {base!r} has shape {values.shape}; beside {shapes_name!r} it must be 1-D, every "
            "sample's values in C order (§6.3)",
            path=str(source),
        )
    dims = shapes.astype(np.int64)
    lengths = bounds[1:] - bounds[:-1]
    wrong = np.flatnonzero((dims < 0).any(axis=1) | (np.prod(dims, axis=1) != lengths))
    if wrong.size:
        i = int(wrong[0])
        raise EncodingError(
            f"{source}: sample {i} of {base!r} has {int(lengths[i])} values but {shapes_name!r} gives it the shape "
            f"{tuple(dims[i].tolist())}; each shape must hold exactly its sample's values (§6.3)",
            path=str(source),
        )
    ndim = int(dims.shape[1])
    samples = [values[a:b].reshape(shape) for (a, b), shape in zip(spans, dims.tolist(), strict=True)]
    return samples, FeatureSpec(encoding="ragged", dtype=values.dtype, sample_ndim=ndim if ndim > 1 else None)
