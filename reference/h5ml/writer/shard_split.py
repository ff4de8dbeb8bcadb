"""One split of a sharded dataset while it is written: its shards, the open one, and when to roll over (SPEC §12.4).

:class:`SplitShards` holds what a :class:`h5ml.writer.sharded.ShardedWriter`
knows of one split: the :class:`~h5ml.writer.streaming.Writer` of its open
shard, the paths of its shards so far, the samples and counted bytes of the
open shard, and the declarations every later shard repeats so that all agree
(§12.2). :func:`feature_declarations` reads those declarations from the
first shard's writer: the encoding, stored dtype, sample shape, class names,
attributes and compression of each feature, as
:meth:`~h5ml.writer.streaming.Writer.add_feature` takes them.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from h5ml.errors import WriterError
from h5ml.model.layout import Layout
from h5ml.writer.streaming import Writer

__all__ = ["SplitShards", "check_batch", "feature_declarations", "feature_layouts"]

#: The §6.1 attributes a later shard's feature is declared with, as the first shard's feature has them.
_DECLARED_ATTRS = ("role", "description", "units", "sample_rate", "media_type")


def _sinks(writer: Writer, split: str) -> dict[str, Any]:
    """The features of ``split`` in ``writer`` (the writer package's own view of the file being written)."""
    for sink in writer._splits.splits():
        if sink.name == split:
            return dict(sink.features)
    return {}


def check_batch(writer: Writer, split: str, batch: Mapping[str, Any]) -> None:
    """Check a whole batch against ``split`` in ``writer`` without storing or declaring anything.

    Raises
    ------
    WriterError, EncodingError
        As :meth:`~h5ml.writer.streaming.Writer.append` would for this batch.
    """
    writer._splits.admit(split, batch)


def feature_layouts(writer: Writer, split: str) -> dict[str, Layout]:
    """The stored form of every feature of ``split`` declared or inferred so far in ``writer``."""
    return {name: sink.layout for name, sink in _sinks(writer, split).items()}


def feature_declarations(writer: Writer, split: str) -> dict[str, dict[str, Any]]:
    """The :meth:`~h5ml.writer.streaming.Writer.add_feature` arguments that recreate the features of ``split``.

    Parameters
    ----------
    writer
        The writer of the split's first shard, its features fixed (after its first batch).
    split
        The split.

    Returns
    -------
    dict
        Feature name -> keyword arguments (``encoding``, ``dtype``, ``sample_shape``, ``sample_ndim``,
        ``class_names``, the §6.1 attributes it has, ``compression``: the codec or ``False``), so that
        a later shard stores every feature exactly as the first does (§12.2).
    """
    out: dict[str, dict[str, Any]] = {}
    for name, sink in _sinks(writer, split).items():
        layout: Layout = sink.layout
        kwargs: dict[str, Any] = {"encoding": layout.encoding}
        if layout.encoding in ("dense", "ragged"):
            kwargs["dtype"] = np.dtype(bool) if layout.logical_bool else layout.dtype
        elif layout.encoding == "categorical":
            kwargs["dtype"] = layout.dtype
            kwargs["class_names"] = list(layout.class_names or ())
        if layout.encoding == "dense" or (layout.encoding == "ragged" and layout.shapes_ndim is None):
            kwargs["sample_shape"] = tuple(layout.sample_shape)
        if layout.shapes_ndim is not None:
            kwargs["sample_ndim"] = layout.shapes_ndim
        for key in _DECLARED_ATTRS:
            if key in sink.attrs:
                value = sink.attrs[key]
                kwargs[key] = float(value) if key == "sample_rate" else str(value)
        kwargs["compression"] = sink.compression or False
        out[name] = kwargs
    return out


@dataclass
class SplitShards:
    """What a sharded writer knows of one split (see the module docstring).

    Attributes
    ----------
    name
        The split's name.
    description, expected_samples
        As given to ``add_split``; every shard's split gets the description.
    writer
        The writer of the open shard, or None once the split is finished.
    paths
        The final paths (relative to the dataset's folder) of its shards so far, the open one last.
    in_shard
        Samples in the open shard.
    counted
        Bytes the open shard counts (:mod:`h5ml.writer.shard_sizes`, scaled by ``ratio``).
    stored
        Uncompressed stored bytes of the samples in the open shard.
    since_measured
        Uncompressed stored bytes appended since the open shard's file was last measured.
    ratio
        The compressed/uncompressed ratio last measured, at most 1 (1.0 until then, and for uncompressed splits).
    total
        Samples of the split written so far, every shard together.
    declarations
        The features every shard after the first declares (:func:`feature_declarations`), once known.
    layouts
        The stored form of each feature, once known.
    compressed
        Whether a feature of the split is compressed (its bytes are then measured on the file).
    stale_metadata
        The indexes in ``paths`` of finished shards written before the latest ``update_metadata``.
    calls
        The ``add_feature`` and ``infer_features`` calls of the first shard, ``(method, args, kwargs)``, to
        repeat if it is reopened before its first samples.
    """

    name: str
    description: str | None = None
    expected_samples: int | None = None
    writer: Writer | None = None
    paths: list[str] = field(default_factory=list)
    in_shard: int = 0
    counted: float = 0.0
    stored: int = 0
    since_measured: int = 0
    ratio: float = 1.0
    total: int = 0
    declarations: dict[str, dict[str, Any]] | None = None
    layouts: dict[str, Layout] | None = None
    compressed: bool = False
    stale_metadata: set[int] = field(default_factory=set)
    calls: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = field(default_factory=list)

    def open_writer(self) -> Writer:
        """The writer of the open shard.

        Raises
        ------
        WriterError
            If the split is finished (its last shard closed).
        """
        if self.writer is None:
            raise WriterError(f"split {self.name!r} is finished: its last shard is closed")
        return self.writer

    def shard_expected(self, samples_per_shard: int | None) -> int | None:
        """The ``expected_samples`` of the next shard: what remains of the split's, capped by ``samples_per_shard``."""
        if self.expected_samples is None or self.expected_samples <= self.total:
            return None
        remaining = self.expected_samples - self.total
        return remaining if samples_per_shard is None else min(remaining, samples_per_shard)

    def learn_features(self, writer: Writer) -> None:
        """Record the split's features from the writer of its first shard, once its first batch fixed them."""
        self.layouts = feature_layouts(writer, self.name)
        self.declarations = feature_declarations(writer, self.name)
        self.compressed = any(kwargs["compression"] for kwargs in self.declarations.values())

    def measure(self, temp_path: str | os.PathLike[str]) -> None:
        """Count the open shard as its file's size (after a flush or close), and learn the compression ratio."""
        size = os.path.getsize(temp_path)
        if self.stored:
            # capped at 1: the file's own metadata (a few KiB) would make a small shard look expanded
            self.ratio = min(1.0, size / self.stored)
        self.counted = float(size)
        self.since_measured = 0
