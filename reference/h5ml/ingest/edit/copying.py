"""Copying features into a new file: what makes two features alike, how to declare one again, and the copy (§4.2, §6).

:func:`feature_signature` is what ``merge`` compares; :func:`declaration` the
:meth:`h5ml.Writer.add_feature` arguments that recreate a feature (with the
compression asked for); :func:`root_metadata` the source's root attributes a
new file keeps; :func:`copy_rows` appends rows of a split batch by batch.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

import numpy as np
import numpy.typing as npt

from h5ml import spec
from h5ml.errors import InvalidFileError
from h5ml.ingest.edit.batches import SampleBatches
from h5ml.ingest.options import parameter_error
from h5ml.ingest.progress import ProgressBars
from h5ml.model.failures import validate_advice
from h5ml.reader import Dataset, Feature, Split
from h5ml.writer import Writer

__all__ = [
    "Compression",
    "FeatureSignature",
    "check_compression",
    "copy_rows",
    "declaration",
    "feature_signature",
    "root_metadata",
]

#: Compression of the new file's features: as in the source, gzip, or none.
Compression = Literal["keep", "gzip"] | None
#: Root attributes the new file gets from its writer, never from the source (§4.2, §4.4, §8.3, §3.5).
_NOT_COPIED: Final = frozenset(
    {"format", "format_version", "created", "writer", "must_understand", "complete", "fingerprint", "required_filters"}
)


@dataclass(frozen=True)
class FeatureSignature:
    """What makes two features interchangeable (merge) and how to declare one (subset, merge)."""

    encoding: str
    dtype: str
    sample_shape: tuple[int | None, ...]
    class_names: tuple[str, ...] | None
    media_type: str | None
    sample_rate: float | None
    units: str | None

    def describe(self) -> str:
        """The signature as text, for messages: ``"dense float32 sample shape (3,)"``."""
        text = f"{self.encoding} {self.dtype}"
        if self.encoding in ("dense", "ragged"):
            text += f" sample shape {self.sample_shape}"
        if self.class_names is not None:
            shown = list(self.class_names[:8])
            text += f" class names {shown}{'...' if len(self.class_names) > 8 else ''}"
        for label, value in (("media_type", self.media_type), ("sample_rate", self.sample_rate), ("units", self.units)):
            if value is not None:
                text += f" {label} {value!r}"
        return text


def feature_signature(feature: Feature) -> FeatureSignature:
    """The properties that must agree for two features to be merged (§6): encoding, dtype, sample shape, ...

    Parameters
    ----------
    feature
        A feature of an open file.

    Returns
    -------
    FeatureSignature
        Encoding, dtype name (``bool`` for ``logical_dtype="bool"``, ``str``
        for strings), sample shape (None for axes that vary), class names,
        media type, sample rate (Hz) and units.
    """
    dtype = "str" if feature.encoding == "string" else np.dtype(feature.dtype).name
    return FeatureSignature(
        encoding=feature.encoding,
        dtype=dtype,
        sample_shape=tuple(feature.sample_shape),
        class_names=tuple(feature.class_names) if feature.class_names is not None else None,
        media_type=feature.media_type if feature.encoding == "bytes" else None,
        sample_rate=feature.sample_rate,
        units=feature.units,
    )


def _undefined(key: str, value: str) -> bool:
    """Whether ``value`` is a string that this version does not define for ``role`` or ``media_type`` (§1.4.1)."""
    return value not in spec.ROLES if key == "role" else spec.media_type_problem(value) is not None


def _defined_values(feature: Feature, source_version: tuple[int, int], notes: list[str] | None) -> dict[str, Any]:
    """``role`` and ``media_type`` of ``feature`` that the new file may carry; unknown values of a newer MINOR dropped.

    SPEC §1.4.1-R3: in a file of a newer MINOR, a ``role`` or ``media_type``
    string this version does not define is an unknown value, which readers
    ignore (they decode the feature as if it were absent). The new file is
    written in this version, where that value would be an error (E117), so it
    is left out, as the reader leaves it out, and a note says so (never
    silently). In a file whose MINOR is not newer the value is an error of the
    source (E117): refused, naming the source file and the HDF5 path.
    """
    kept: dict[str, Any] = {}
    keys = ("role", "media_type") if feature.encoding == "bytes" else ("role",)
    for key in keys:
        value = getattr(feature, key)
        if value is None or not _undefined(key, value):
            if value is not None:
                kept[key] = value
            continue
        shown = ".".join(map(str, source_version))
        if source_version[0] == spec.FORMAT_VERSION[0] and source_version[1] > spec.FORMAT_VERSION[1]:
            if notes is not None:
                notes.append(
                    f"{feature.path}: {feature.hdf5_path}: left out {key} {value!r}, a value that h5ml "
                    f"{spec.FORMAT_VERSION_STRING} does not define (the source is version {shown}; readers of "
                    f"{spec.FORMAT_VERSION_STRING} ignore it, SPEC §1.4.1); the samples are copied unchanged"
                )
            continue
        what = f"one of {list(spec.ROLES)}" if key == "role" else "an IANA media type of the form type/subtype (§6.6)"
        raise InvalidFileError(
            f"{feature.path}: {feature.hdf5_path}: {key} {value!r} is not {what} (§6.1, E117) in a file of "
            f"version {shown}, so it cannot be copied; correct or delete the attribute {key} in the source, then copy "
            f"again; {validate_advice(feature.path)}",
            path=feature.path,
            hdf5_path=feature.hdf5_path,
        )
    return kept


def declaration(
    feature: Feature,
    compression: Compression,
    source_version: tuple[int, int] = spec.FORMAT_VERSION,
    notes: list[str] | None = None,
) -> dict[str, Any]:
    """Keyword arguments of :meth:`h5ml.Writer.add_feature` that recreate ``feature`` (§6).

    Parameters
    ----------
    feature
        A feature of an open file.
    compression
        ``"keep"``, ``"gzip"`` or None (see :func:`check_compression`).
    source_version
        The source file's ``format_version`` as (MAJOR, MINOR) (§1.2).
    notes
        Where to append a note for each attribute value left out (an unknown
        ``role`` or ``media_type`` of a newer-MINOR source, SPEC §1.4.1-R3).

    Returns
    -------
    dict
        The arguments of :meth:`h5ml.Writer.add_feature`.

    Raises
    ------
    h5ml.InvalidFileError
        If ``role`` or ``media_type`` holds a value this version does not
        define in a source whose MINOR is not newer (E117); the message names
        the source file and the HDF5 path.
    """
    encoding = feature.encoding
    shape = tuple(feature.sample_shape)
    args: dict[str, Any] = {"encoding": encoding}
    if encoding in ("dense", "ragged"):
        args["dtype"] = np.dtype(feature.dtype)
    if encoding == "dense":
        args["sample_shape"] = tuple(int(d or 0) for d in shape)
    elif encoding == "ragged":
        if len(shape) > 1 and all(d is None for d in shape):
            args["sample_ndim"] = len(shape)
        else:
            args["sample_shape"] = tuple(int(d or 0) for d in shape[1:])
    elif encoding == "categorical":
        args["class_names"] = feature.class_names
    args.update(_defined_values(feature, source_version, notes))
    for key in ("description", "units", "sample_rate"):
        value = getattr(feature, key)
        if value is not None:
            args[key] = value
    if compression == "keep":
        kept = "zstd" if feature.compression == "zstd" else "gzip"  # zstd stays zstd; any other filter: gzip
        args["compression"] = kept if feature.compression is not None and encoding != "string" else False
    else:
        args["compression"] = compression or False
    return args


def root_metadata(dataset: Dataset, given: Mapping[str, Any] | None) -> dict[str, Any]:
    """The source's root attributes a new file keeps (see :mod:`h5ml.ingest.edit`), under ``given``."""
    kept = {k: v for k, v in dataset.metadata.to_json().items() if k not in _NOT_COPIED}
    kept.update(given or {})
    return kept


def check_compression(compression: Any) -> None:
    """Refuse a ``compression`` that is not ``"keep"``, ``"gzip"`` or None.

    Raises
    ------
    h5ml.errors.ParameterError
        Naming the value.
    """
    if compression not in ("keep", "gzip", None):
        raise parameter_error("compression", f"compression must be 'keep', 'gzip' or None, got {compression!r}")


def copy_rows(
    writer: Writer,
    target: str,
    split: Split,
    names: Sequence[str],
    rows: range | npt.NDArray[np.int64],
    bars: ProgressBars,
    task: Any,
) -> int:
    """Append the samples ``rows`` of ``names`` of ``split`` to split ``target``, batch by batch."""
    features = [split.feature(n) for n in names]
    batches = SampleBatches(features, rows)
    copied = 0
    for index in batches:
        values = split.read(index, features=names)
        batches.observe(values)
        count = (index.stop - index.start) if isinstance(index, slice) else int(index.shape[0])
        if names:
            writer.append(target, values)
        copied += count
        bars.advance(task, count)
    return copied
