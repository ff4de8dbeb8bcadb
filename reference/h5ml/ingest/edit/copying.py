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

from h5ml.ingest.edit.batches import SampleBatches
from h5ml.ingest.options import parameter_error
from h5ml.ingest.progress import ProgressBars
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


def declaration(feature: Feature, compression: Compression) -> dict[str, Any]:
    """Keyword arguments of :meth:`h5ml.Writer.add_feature` that recreate ``feature`` (§6)."""
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
    elif encoding == "bytes":
        args["media_type"] = feature.media_type
    for key in ("role", "description", "units", "sample_rate"):
        value = getattr(feature, key)
        if value is not None:
            args[key] = value
    if compression == "keep":
        args["compression"] = "gzip" if feature.compression is not None and encoding != "string" else False
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
