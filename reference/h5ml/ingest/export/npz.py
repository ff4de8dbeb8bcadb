"""Export to one NumPy ``.npz`` archive: :func:`export_npz` (the array names that ``convert_npz`` reads back, §6).

``.npz``: array names
---------------------
One archive holds every exported split. Array names follow the convention
that :func:`h5ml.ingest.npz.convert_npz` reads back (``<feature>_<split>``, the
split name as stored):

=============  =========================================  ======================================
encoding       arrays                                     dtype, shape
=============  =========================================  ======================================
dense          ``<feature>_<split>``                      the feature's dtype (bool for
                                                          ``logical_dtype="bool"``), (N, ...)
string         ``<feature>_<split>``                      numpy str ``<U<longest>``, (N,)
categorical    ``<feature>_<split>``                      int64 codes (-1 = missing), (N,)
               ``<feature>_class_names``                  str, (K,); when the splits' class names
                                                          differ: ``<feature>_<split>_class_names``
ragged         ``<feature>_<split>``                      all samples' values concatenated:
                                                          (M, ...) or, with shapes, (M,)
               ``<feature>_<split>_offsets``              int64 (N+1,): sample i is
                                                          ``values[offsets[i]:offsets[i+1]]`` (§6.3)
               ``<feature>_<split>_shapes``               int64 (N, D), only for samples that vary
                                                          in several axes (reshape in C order)
bytes          ``<feature>_<split>``                      uint8 (M,), all samples concatenated
               ``<feature>_<split>_offsets``              int64 (N+1,) as ragged (§6.6)
               ``<feature>_<split>_media_type``           str, (): the media type (§6.6;
                                                          ``application/octet-stream`` when
                                                          the feature has none); it tells
                                                          bytes from ragged uint8
=============  ============================every          ``<feature>_<split>_attrs``                str, (): JSON object of the role,
                                                          description, units and sample rate
                                                          the feature has (``{}`` for none)
=============  =========================================  ======================================

The suffixes are those of :mod:`h5ml.ingest.npz` (``OFFSETS_SUFFIX``,
``SHAPES_SUFFIX``, ``MEDIA_TYPE_SUFFIX``, ``CLASS_NAMES_SUFFIX``, ``ATTRS_SUFFIX``), and
:func:`h5ml.ingest.npz.convert_npz` reads the companion arrays back: a file
whose splits are ``train``, ``validation`` and ``test`` (the split names
``convert_npz`` recognises) round-trips with the same splits, features,
encodings, dtypes, sample shapes, values, class names, media types, roles,
descriptions, units and sample rates (a feature without a role gets none
back: the conventional names' roles, ``x`` input, ..., are for archives
without ``_attrs``). Strings are stored as fixed-width numpy strings, so
this format suits small data.
"""

from __future__ import annotations

import json
import math
import os
import zipfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

import numpy as np
import numpy.typing as npt

from h5ml.errors import IngestError
from h5ml.ingest.attributes import descriptive_attributes
from h5ml.ingest.docstrings import shared_doc
from h5ml.ingest.edit import batches
from h5ml.ingest.edit.batches import SampleBatches
from h5ml.ingest.export.common import has_shapes, sample_lengths, selected
from h5ml.ingest.npz.companions import (
    ATTRS_SUFFIX,
    CLASS_NAMES_SUFFIX,
    MEDIA_TYPE_SUFFIX,
    OFFSETS_SUFFIX,
    SHAPES_SUFFIX,
)
from h5ml.ingest.output import check_output, temp_beside
from h5ml.model.layout import DEFAULT_MEDIA_TYPE
from h5ml.model.paths import require_regular_file
from h5ml.reader import Feature, Split
from h5ml.reader import open_file as open_dataset

__all__ = ["export_npz", "npz_array_names"]


def npz_array_names(split: str, feature: Feature, class_names_by_split: bool = False) -> dict[str, str]:
    """The ``.npz`` arrays of one feature of one split (see the module docstring).

    Parameters
    ----------
    split
        The split name.
    feature
        The feature.
    class_names_by_split
        Name the class names ``<feature>_<split>_class_names`` (when splits
        have different class names) instead of ``<feature>_class_names``.

    Returns
    -------
    dict
        Role -> array name, roles among ``values``, ``offsets``, ``shapes``,
        ``media_type``, ``class_names``, ``attrs``.
    """
    base = f"{feature.name}_{split}"
    names = {"values": base}
    if feature.encoding in ("ragged", "bytes"):
        names["offsets"] = base + OFFSETS_SUFFIX
    if has_shapes(feature):
        names["shapes"] = base + SHAPES_SUFFIX
    if feature.encoding == "bytes":
        names["media_type"] = base + MEDIA_TYPE_SUFFIX
    if feature.encoding == "categorical":
        names["class_names"] = (base if class_names_by_split else feature.name) + CLASS_NAMES_SUFFIX
    names["attrs"] = base + ATTRS_SUFFIX
    return names


class _NpzWriter:
    """Writes ``.npy`` members into a zip archive one at a time, from chunks, without holding an array whole."""

    def __init__(self, archive: zipfile.ZipFile) -> None:
        self._archive = archive
        self.written: list[str] = []

    def write(
        self, name: str, dtype: np.dtype[Any], shape: tuple[int, ...], chunks: Iterable[npt.NDArray[Any]]
    ) -> None:
        """Write array ``name`` of ``dtype`` and ``shape`` (C order) from its chunks, in order."""
        stored = dtype.newbyteorder("<") if dtype.byteorder == ">" else dtype
        header = {"descr": np.lib.format.dtype_to_descr(stored), "fortran_order": False, "shape": shape}
        expected = math.prod(shape)
        written = 0
        with self._archive.open(f"{name}.npy", "w", force_zip64=True) as member:
            self._header(member, header)
            for chunk in chunks:
                data = np.ascontiguousarray(chunk, dtype=stored)
                member.write(data.tobytes())
                written += data.size
        if written != expected:  # pragma: no cover - an internal inconsistency, never a user error
            raise RuntimeError(f"{name}: wrote {written} values for shape {shape}")
        self.written.append(name)

    @staticmethod
    def _header(member: IO[bytes], header: dict[str, Any]) -> None:
        try:
            np.lib.format.write_array_header_1_0(member, header)
        except ValueError:  # a header over 64 KiB (a very long shape or dtype)
            np.lib.format.write_array_header_2_0(member, header)


def _row_chunks(feature: Feature, count: int, row_bytes: int) -> Iterator[Any]:
    """The feature's samples read in slices of about :data:`h5ml.ingest.edit.batches.BATCH_BYTES`."""
    step = max(1, batches.BATCH_BYTES // max(1, row_bytes))
    for start in range(0, count, step):
        yield feature.read(slice(start, min(count, start + step)))


def _export_feature(out: _NpzWriter, split: Split, feature: Feature, names: Mapping[str, str]) -> None:
    """Write the arrays of one feature of one split (see the module docstring)."""
    count = split.num_samples
    encoding = feature.encoding
    if encoding == "dense":
        shape = tuple(int(d or 0) for d in feature.sample_shape)
        row = np.dtype(feature.dtype).itemsize * math.prod(shape)
        out.write(names["values"], np.dtype(feature.dtype), (count, *shape), _row_chunks(feature, count, row))
    elif encoding == "categorical":
        out.write(names["values"], np.dtype(np.int64), (count,), _row_chunks(feature, count, 8))
    elif encoding == "string":
        longest = 0
        batches = SampleBatches([feature], range(count))
        for index in batches:
            chunk = feature.read(index)
            batches.observe({feature.name: chunk})
            longest = max(longest, max((len(s) for s in chunk), default=0))
        dtype = np.dtype(f"<U{max(1, longest)}")
        chunks = (np.asarray(list(chunk), dtype=dtype) for chunk in _row_chunks(feature, count, dtype.itemsize))
        out.write(names["values"], dtype, (count,), chunks)
    else:
        _export_offsets_feature(out, split, feature, names)


def _export_offsets_feature(out: _NpzWriter, split: Split, feature: Feature, names: Mapping[str, str]) -> None:
    """Values, offsets (and shapes) of a ragged or bytes feature (§6.3, §6.6)."""
    count = split.num_samples
    total = sum(int(w.sum()) for w in sample_lengths(feature, count))
    with_shapes = has_shapes(feature)
    inner: tuple[int, ...] = ()
    if feature.encoding == "bytes":
        dtype = np.dtype(np.uint8)
    else:
        dtype = np.dtype(feature.dtype)
        inner = () if with_shapes else tuple(int(d or 0) for d in feature.sample_shape[1:])
    shapes: list[npt.NDArray[np.int64]] = []

    def values() -> Iterator[npt.NDArray[Any]]:
        batches = SampleBatches([feature], range(count))
        for index in batches:
            samples = feature.read(index)
            if feature.encoding == "bytes":
                yield np.frombuffer(b"".join(samples), dtype=np.uint8)
                continue
            if with_shapes:
                shapes.append(np.asarray([s.shape for s in samples], dtype=np.int64).reshape(len(samples), -1))
                samples = [s.reshape(-1) for s in samples]
            if samples:
                yield np.concatenate(samples)

    out.write(names["values"], dtype, (total, *inner), values())

    def offsets() -> Iterator[npt.NDArray[np.int64]]:
        yield np.zeros(1, dtype=np.int64)
        end = 0
        for window in sample_lengths(feature, count):
            cumulative = np.cumsum(window) + end
            if cumulative.size:
                end = int(cumulative[-1])
            yield cumulative

    out.write(names["offsets"], np.dtype(np.int64), (count + 1,), offsets())
    if with_shapes:
        ndim = len(feature.sample_shape)
        out.write(names["shapes"], np.dtype(np.int64), (count, ndim), shapes)
    if feature.encoding == "bytes":
        media = np.asarray(feature.media_type or DEFAULT_MEDIA_TYPE)
        out.write(names["media_type"], media.dtype, (), [media])


@shared_doc(names=("allow_external",))
def export_npz(
    source: str | os.PathLike[str],
    output: str | os.PathLike[str],
    *,
    splits: Sequence[str] | None = None,
    features: Sequence[str] | None = None,
    compress: bool = False,
    overwrite: bool = False,
    allow_external: bool = False,
) -> Path:
    """Export splits and features of an h5ml file to one NumPy ``.npz`` archive.

    Parameters
    ----------
    source
        The h5ml file.
    output
        The archive to write, used as given (no ``.npz`` is appended).
    splits
        The splits to export; default every split.
    features
        The features to export, from every exported split; default every feature.
    compress
        Deflate the members (as ``numpy.savez_compressed``); default stored
        (as ``numpy.savez``).
    overwrite
        Replace an existing output.
    {shared_parameters}

    Returns
    -------
    pathlib.Path
        ``output``.

    Raises
    ------
    FileNotFoundError
        If the source does not exist.
    FileExistsError, IsADirectoryError
        As :func:`h5ml.ingest.check_output` (also when ``output`` is ``source``).
    h5ml.SplitNotFoundError, h5ml.FeatureNotFoundError
        If a requested split or feature does not exist.
    h5ml.IngestError
        If two arrays would get the same name (feature names such as
        ``x`` and ``x_train_offsets`` can collide); rename a feature first.
    h5ml.H5MLError
        If the source cannot be read (as :func:`h5ml.open`); the output is unchanged.

    Notes
    -----
    Array names and dtypes: see the module docstring. Load the result with
    ``numpy.load(path)`` (no pickles are stored).
    """
    source_path = require_regular_file(source)
    out = check_output(output, overwrite, [source_path])
    with open_dataset(source_path, allow_external=allow_external) as dataset:
        chosen = selected(dataset, splits, features)
        names_by_split: dict[tuple[str, str], dict[str, str]] = {}
        shared_names: dict[str, list[str]] = {}
        split_names: set[str] = set()
        for split, names in chosen:
            for name in names:
                feature = split.feature(name)
                if feature.class_names is not None:
                    previous = shared_names.setdefault(name, feature.class_names)
                    if previous != feature.class_names:
                        split_names.add(name)
        owners: dict[str, str] = {}
        for split, names in chosen:
            for name in names:
                arrays = npz_array_names(split.name, split.feature(name), name in split_names)
                names_by_split[(split.name, name)] = arrays
                for role, array in arrays.items():
                    owner = f"{split.name}/{name} ({role})"
                    if role == "class_names" and name not in split_names:
                        owner = f"{name} (class_names)"
                    if owners.setdefault(array, owner) != owner:
                        raise IngestError(
                            f"{source_path}: the arrays of {owners[array]} and {owner} would both be named {array!r} "
                            "in the .npz archive; export the features separately (features=[...]) or rename one",
                            path=str(source_path),
                        )
        temp = temp_beside(out, "export")
        try:
            method = zipfile.ZIP_DEFLATED if compress else zipfile.ZIP_STORED
            with zipfile.ZipFile(temp, "w", compression=method, allowZip64=True) as archive:
                writer = _NpzWriter(archive)
                for split, names in chosen:
                    for name in names:
                        feature = split.feature(name)
                        arrays = names_by_split[(split.name, name)]
                        _export_feature(writer, split, feature, arrays)
                        attrs = np.asarray(json.dumps(descriptive_attributes(feature), ensure_ascii=False))
                        writer.write(arrays["attrs"], attrs.dtype, (), [attrs])
                        class_array = arrays.get("class_names")
                        if class_array is not None and class_array not in writer.written:
                            labels = feature.class_names or []
                            dtype = np.dtype(f"<U{max(1, max((len(n) for n in labels), default=1))}")
                            writer.write(class_array, dtype, (len(labels),), [np.asarray(labels, dtype=dtype)])
            os.replace(temp, out)
        finally:
            temp.unlink(missing_ok=True)
    return out
