"""One batch as arrays, one per key: the assembly per encoding that every framework adapter shares (§6, C05).

A batch read with one ``Split.read`` call holds, per feature, the reader's
batch value (see the reader's features): one array for a dense or
categorical feature, a list of arrays for a ragged feature or decoded
images, a list of ``str`` or of ``bytes``. :func:`batch_arrays` makes one
array per key of it, whose first axis is the batch (R samples):

=============  =============================================================
encoding       batch arrays
=============  =============================================================
dense          the stored dtype, ``(R, *sample_shape)``
categorical    int64 codes ``(R,)`` (-1 = missing)
string         a numpy ``str`` array ``(R,)``
bytes          an object array ``(R,)`` of ``bytes``
ragged         ``(R, L, ...)`` padded with ``pad_value`` to the longest sample
               L (:func:`h5ml.sampling.padding.pad_ragged`), plus
               ``<name>_lengths`` (int64 ``(R,)``) and ``<name>_mask`` (bool
               ``(R, L)``, True on real rows)
image          (``bytes`` decoded by the source's ``decode_images``) uint8
               ``(R, H, W, C)``; images of several sizes are padded, with
               ``<name>_lengths`` (int64 ``(R, 3)`` shapes) and ``<name>_mask``
=============  =============================================================

A ragged feature whose samples differ in more than their first axis (one
with ``shapes``) is padded on every axis; then ``<name>_lengths`` is int64
``(R, ndim)`` (each sample's shape) and ``<name>_mask`` has the padded shape.
Values of an unknown encoding (keys a transform added): strings and bytes as
above, arrays of one shape stacked, of several shapes padded as images.

The Keras adapter hands these arrays to the model; the PyTorch adapter's
collate converts them to tensors. :class:`ColumnBatch` carries one batch's
columns and shows them as per-sample dicts too (what a framework's default
collate takes).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from h5ml.sampling.padding import LENGTHS_SUFFIX, MASK_SUFFIX, pad_ragged, stack_or_pad

__all__ = ["ColumnBatch", "batch_arrays", "column_arrays", "feature_of_key", "features_of"]


def column_arrays(name: str, encoding: str | None, values: Any, pad_value: float = 0) -> dict[str, Any]:
    """Return the batch arrays of one feature (see the module docstring's table).

    Parameters
    ----------
    name
        The feature's name (the key of its array).
    encoding
        Its encoding (§6): ``dense``, ``categorical``, ``string``, ``bytes``,
        ``ragged``, ``image`` for decoded images, or None when unknown.
    values
        The reader's batch value of it, or a sequence of R per-sample values
        (numpy arrays, objects numpy converts, such as CPU tensors, ``str``
        or ``bytes``).
    pad_value
        Value written in the padding of ragged features and of images (or
        unknown values) of several shapes.

    Returns
    -------
    dict
        ``{name: array}``, plus ``<name>_lengths`` and ``<name>_mask`` for a
        ragged feature and for padded images.

    Raises
    ------
    ValueError
        If samples to pad differ in their number of dimensions or are 0-d.
    """
    if encoding == "ragged":
        padded, lengths, mask = pad_ragged(values, pad_value)
        return {name: padded, name + LENGTHS_SUFFIX: lengths, name + MASK_SUFFIX: mask}
    column = isinstance(values, np.ndarray)
    if column and values.dtype != object and encoding not in ("string", "bytes"):
        return {name: values}  # a dense or categorical column, read at once
    items = list(values)
    if all(isinstance(v, str) for v in items) and (items or encoding == "string"):
        return {name: np.array(items, dtype=np.str_)}
    if all(isinstance(v, bytes) for v in items) and (items or encoding == "bytes"):
        return {name: np.array([*items, b""], dtype=object)[:-1]}  # 1-D, even when all have one length
    if column:
        return {name: values}
    batch, shapes, where = stack_or_pad(items, pad_value)
    if shapes is None or where is None:
        return {name: batch}
    return {name: batch, name + LENGTHS_SUFFIX: shapes, name + MASK_SUFFIX: where}


def batch_arrays(columns: Mapping[str, Any], encodings: Mapping[str, str], pad_value: float = 0) -> dict[str, Any]:
    """Return one batch as numpy arrays, one per key, with :func:`column_arrays` for each feature.

    Parameters
    ----------
    columns
        Feature name -> the reader's batch value (or R per-sample values).
    encodings
        Feature name -> encoding (§6); a name missing here has an unknown one.
    pad_value
        Value written in the padding.

    Returns
    -------
    dict
        Key -> array of first axis R, the features in the order of
        ``columns``, each followed by its ``_lengths`` and ``_mask`` when it
        has them.

    Raises
    ------
    ValueError
        As :func:`column_arrays`.
    """
    arrays: dict[str, Any] = {}
    for name, values in columns.items():
        arrays.update(column_arrays(name, encodings.get(name), values, pad_value))
    return arrays


def feature_of_key(key: str, encodings: Mapping[str, str]) -> str | None:
    """Return the feature whose batch arrays hold ``key``, or None.

    Parameters
    ----------
    key
        A key of :func:`batch_arrays`: a feature name, or ``<name>_lengths`` /
        ``<name>_mask`` of a ragged feature or of decoded images.
    encodings
        Feature name -> encoding of the features read.

    Returns
    -------
    str or None
        The feature's name, or None when no feature gives that key.
    """
    if key in encodings:
        return key
    for suffix in (LENGTHS_SUFFIX, MASK_SUFFIX):
        base = key[: -len(suffix)]
        if key.endswith(suffix) and encodings.get(base) in ("ragged", "image"):
            return base
    return None


def features_of(keys: Iterable[str], encodings: Mapping[str, str], where: str) -> list[str]:
    """Return the features whose batch arrays hold ``keys`` (:func:`feature_of_key`), each once, in order of first use.

    Parameters
    ----------
    keys
        Keys of :func:`batch_arrays`: feature names, or ``<name>_lengths`` /
        ``<name>_mask`` of a ragged feature or of decoded images.
    encodings
        Feature name -> encoding of the features that can be read.
    where
        The file and split (``"data.h5: split 'train'"``), named in the error message.

    Returns
    -------
    list of str
        Feature names.

    Raises
    ------
    ValueError
        If a key names no feature (the message lists the features).
    """
    features: list[str] = []
    for key in keys:
        base = feature_of_key(key, encodings)
        if base is None:
            raise ValueError(
                f"{where} has no feature {key!r} (and it is not the _lengths or _mask of a ragged feature); "
                f"features: {', '.join(encodings)}"
            )
        if base not in features:
            features.append(base)
    return features


class ColumnBatch(Sequence[dict[str, Any]]):
    """The samples of one batch read with one call: its columns, also seen as a sequence of per-sample dicts.

    Parameters
    ----------
    columns
        Feature name -> the reader's batch value, or None when ``samples``
        holds the batch.
    encodings
        Feature name -> encoding (§6; ``image`` for decoded images): tells
        :func:`batch_arrays` which features are ragged even when a batch's
        samples happen to share a length.
    samples
        Per-sample dicts already built (when a per-sample transform ran), or
        None to build them from ``columns`` on access.
    size
        Number of samples R.

    Notes
    -----
    ``batch[i]`` is sample ``i`` as ``{feature: convert(value)}``; a
    framework adapter subclasses it to override :meth:`convert` (its
    tensors).
    """

    def __init__(
        self,
        columns: dict[str, Any] | None,
        encodings: dict[str, str],
        samples: list[dict[str, Any]] | None,
        size: int,
    ) -> None:
        self.columns = columns
        self.encodings = encodings
        self._samples = samples
        self._size = size

    def convert(self, value: Any) -> Any:
        """Return one sample's value as the per-sample dicts hold it: here unchanged."""
        return value

    def __len__(self) -> int:
        return self._size

    def _sample(self, i: int) -> dict[str, Any]:
        if self._samples is not None:
            return self._samples[i]
        assert self.columns is not None
        return {name: self.convert(values[i]) for name, values in self.columns.items()}

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return [self._sample(k) for k in range(*i.indices(self._size))]
        k = int(i)
        if not -self._size <= k < self._size:
            raise IndexError(f"sample {k} is outside this batch of {self._size} samples")
        return self._sample(k % self._size)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for i in range(self._size):
            yield self._sample(i)

    def by_key(self) -> dict[str, Sequence[Any]]:
        """Return key -> the batch's values: the columns, or each key's values gathered from the samples.

        Returns
        -------
        dict
            The columns as read; or, when samples were given, the keys of
            the first sample with the R values of each (empty for no samples).
        """
        if self.columns is not None:
            return dict(self.columns)
        samples = self._samples or []
        return {name: [sample[name] for sample in samples] for name in (samples[0] if samples else {})}

    def arrays(self, pad_value: float = 0) -> dict[str, Any]:
        """Return the batch as numpy arrays, one per key (:func:`batch_arrays` of :meth:`by_key`)."""
        return batch_arrays(self.by_key(), self.encodings, pad_value)
