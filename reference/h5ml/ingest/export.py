"""Export h5ml files to NumPy ``.npz`` archives and Parquet files (``h5ml export``).

Both read the source in batches of samples (:class:`h5ml.ingest.edit.SampleBatches`)
and write as they read, so memory stays bounded by a batch (about 64 MiB;
in ``.npz``, string batches are sized by the longest string, and ragged
features with ``shapes`` keep their shapes, 8 bytes per axis and sample,
until they are written). Each output
file is written beside its target under a temporary name and renamed when
complete: a failed export leaves the output path as it was.

``.npz``: array names
---------------------
One archive holds every exported split. Array names follow the convention
that :func:`h5ml.ingest.arrays.convert_npz` reads back (``<feature>_<split>``, the
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
=============  =========================================  ======================================

The suffixes are those of :mod:`h5ml.ingest.arrays` (``OFFSETS_SUFFIX``,
``SHAPES_SUFFIX``, ``MEDIA_TYPE_SUFFIX``, ``CLASS_NAMES_SUFFIX``), and
:func:`h5ml.ingest.arrays.convert_npz` reads the companion arrays back: a file
whose splits are ``train``, ``validation`` and ``test`` (the split names
``convert_npz`` recognises) round-trips with the same splits, features,
encodings, dtypes, sample shapes, values, class names and media types.
Other attributes (role, description, units, sample rate) are not exported;
``convert_npz`` gives ``x`` role input and a categorical feature that is the
only one role target. Strings are stored as fixed-width numpy strings, so
this format suits small data.

Parquet: one row per sample
---------------------------
=============  =======================================================================
encoding       Arrow column type
=============  =======================================================================
dense          scalar samples: the numeric type (bool for ``logical_dtype="bool"``);
               samples of shape (d1, ..., dk): nested ``fixed_size_list`` (d1 outer)
string         ``string``
categorical    ``dictionary<int32, string>`` over the class names; -1 is null
ragged         ``list`` of the value rows (each row a nested ``fixed_size_list`` when
               rows have a shape); with ``shapes``: D nested ``list`` levels
bytes          ``binary``
=============  =======================================================================

Each field carries its h5ml attributes as JSON in its Arrow metadata under
``b"h5ml"`` (encoding, dtype, sample shape, role, units, sample_rate,
media_type, description, class names); the schema carries the split, its
sample count and the root metadata (§4.6) under ``b"h5ml"``. Rows are
written in batches, one Parquet row group per batch.
"""

from __future__ import annotations

import json
import math
import os
import secrets
import zipfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, Any, Final

import numpy as np
import numpy.typing as npt

from h5ml.ingest import edit
from h5ml.ingest.arrays import CLASS_NAMES_SUFFIX, MEDIA_TYPE_SUFFIX, OFFSETS_SUFFIX, SHAPES_SUFFIX
from h5ml.ingest.edit import SampleBatches
from h5ml.ingest.pipeline import check_output
from h5ml.model.layout import DEFAULT_MEDIA_TYPE
from h5ml.reader.dataset import Dataset, Split
from h5ml.reader.dataset import open as open_dataset
from h5ml.reader.features import Feature

__all__ = ["OFFSETS_WINDOW", "export_npz", "export_parquet", "npz_array_names"]

#: Samples whose lengths are read at once when sizing ragged and bytes arrays.
OFFSETS_WINDOW: Final = 1 << 20


# --------------------------------------------------------------------------
# shared


def _temp_beside(path: Path) -> Path:
    return path.parent / f".{path.name}.h5ml-export-{secrets.token_hex(8)}"


def _selected(
    dataset: Dataset, splits: Sequence[str] | None, features: Sequence[str] | None
) -> list[tuple[Split, list[str]]]:
    """The splits to export and, for each, its features (checked to exist)."""
    for name, value in (("splits", splits), ("features", features)):
        if isinstance(value, str):
            raise TypeError(f"{name} must be a list of names, got the string {value!r}; write [{value!r}]")
    chosen: list[tuple[Split, list[str]]] = []
    for name in list(dataset.splits) if splits is None else list(splits):
        split = dataset[name]  # raises SplitNotFoundError listing the splits
        names = list(split.features) if features is None else list(features)
        for feature in names:
            split.feature(feature)  # raises FeatureNotFoundError naming the split and the available features
        chosen.append((split, names))
    return chosen


def _has_shapes(feature: Feature) -> bool:
    shape = feature.sample_shape
    return feature.encoding == "ragged" and len(shape) > 1 and all(d is None for d in shape)


def _lengths(feature: Feature, count: int) -> Iterator[npt.NDArray[np.int64]]:
    """The sample lengths of a ragged or bytes feature (from its offsets), a window at a time."""
    for start in range(0, count, OFFSETS_WINDOW):
        stop = min(count, start + OFFSETS_WINDOW)
        yield np.asarray(feature.lengths(slice(start, stop)), dtype=np.int64)  # type: ignore[attr-defined]


def _feature_info(feature: Feature) -> dict[str, Any]:
    """The h5ml attributes of a feature as JSON (§6.1), for the Parquet field metadata."""
    info: dict[str, Any] = {
        "encoding": feature.encoding,
        "dtype": "str" if feature.encoding == "string" else np.dtype(feature.dtype).name,
        "sample_shape": list(feature.sample_shape),
    }
    for key in ("role", "description", "units", "sample_rate", "media_type"):
        value = getattr(feature, key)
        if value is not None:
            info[key] = value
    if feature.class_names is not None:
        info["class_names"] = list(feature.class_names)
    return info


# --------------------------------------------------------------------------
# .npz


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
        ``media_type``, ``class_names``.
    """
    base = f"{feature.name}_{split}"
    names = {"values": base}
    if feature.encoding in ("ragged", "bytes"):
        names["offsets"] = base + OFFSETS_SUFFIX
    if _has_shapes(feature):
        names["shapes"] = base + SHAPES_SUFFIX
    if feature.encoding == "bytes":
        names["media_type"] = base + MEDIA_TYPE_SUFFIX
    if feature.encoding == "categorical":
        names["class_names"] = (base if class_names_by_split else feature.name) + CLASS_NAMES_SUFFIX
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
    """The feature's samples read in slices of about :data:`h5ml.ingest.edit.BATCH_BYTES`."""
    step = max(1, edit.BATCH_BYTES // max(1, row_bytes))
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
    total = sum(int(w.sum()) for w in _lengths(feature, count))
    with_shapes = _has_shapes(feature)
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
        for window in _lengths(feature, count):
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


def export_npz(
    source: str | os.PathLike[str],
    output: str | os.PathLike[str],
    *,
    splits: Sequence[str] | None = None,
    features: Sequence[str] | None = None,
    compress: bool = False,
    overwrite: bool = False,
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
    ValueError
        If two arrays would get the same name (feature names such as
        ``x`` and ``x_train_offsets`` can collide); rename a feature first.
    h5ml.H5MLError
        If the source cannot be read (as :func:`h5ml.open`); the output is unchanged.

    Notes
    -----
    Array names and dtypes: see the module docstring. Load the result with
    ``numpy.load(path)`` (no pickles are stored).
    """
    source_path = Path(source)
    if not source_path.is_file():
        raise FileNotFoundError(f"{source_path}: no such file")
    out = check_output(output, overwrite, [source_path])
    with open_dataset(source_path) as dataset:
        chosen = _selected(dataset, splits, features)
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
                        raise ValueError(
                            f"{source_path}: the arrays of {owners[array]} and {owner} would both be named {array!r} "
                            "in the .npz archive; export the features separately (features=[...]) or rename one"
                        )
        temp = _temp_beside(out)
        try:
            method = zipfile.ZIP_DEFLATED if compress else zipfile.ZIP_STORED
            with zipfile.ZipFile(temp, "w", compression=method, allowZip64=True) as archive:
                writer = _NpzWriter(archive)
                for split, names in chosen:
                    for name in names:
                        feature = split.feature(name)
                        arrays = names_by_split[(split.name, name)]
                        _export_feature(writer, split, feature, arrays)
                        class_array = arrays.get("class_names")
                        if class_array is not None and class_array not in writer.written:
                            labels = feature.class_names or []
                            dtype = np.dtype(f"<U{max(1, max((len(n) for n in labels), default=1))}")
                            writer.write(class_array, dtype, (len(labels),), [np.asarray(labels, dtype=dtype)])
            os.replace(temp, out)
        finally:
            temp.unlink(missing_ok=True)
    return out


# --------------------------------------------------------------------------
# Parquet


def _pa() -> Any:
    try:
        import pyarrow
        import pyarrow.parquet
    except ImportError as exc:
        raise ImportError("exporting to Parquet needs pyarrow, which is not installed: pip install pyarrow") from exc
    return pyarrow


def _nested_fixed(pa: Any, values: Any, dims: Sequence[int]) -> Any:
    """Wrap a flat Arrow array in fixed-size lists, innermost axis first (C order)."""
    for size in reversed(dims):
        values = pa.FixedSizeListArray.from_arrays(values, size)
    return values


def _fixed_type(pa: Any, value_type: Any, dims: Sequence[int]) -> Any:
    for size in reversed(dims):
        value_type = pa.list_(value_type, size)
    return value_type


def _value_type(pa: Any, feature: Feature) -> Any:
    dtype = np.dtype(feature.dtype)
    return pa.bool_() if dtype.kind == "b" else pa.from_numpy_dtype(dtype.newbyteorder("="))


def _arrow_type(pa: Any, feature: Feature) -> Any:
    """The Arrow type of a feature's column (see the module docstring)."""
    encoding = feature.encoding
    if encoding == "string":
        return pa.string()
    if encoding == "bytes":
        return pa.binary()
    if encoding == "categorical":
        return pa.dictionary(pa.int32(), pa.string())
    shape = feature.sample_shape
    if encoding == "dense":
        return _fixed_type(pa, _value_type(pa, feature), [int(d or 0) for d in shape])
    if _has_shapes(feature):
        value_type = _value_type(pa, feature)
        for _ in shape:
            value_type = pa.list_(value_type)
        return value_type
    return pa.list_(_fixed_type(pa, _value_type(pa, feature), [int(d or 0) for d in shape[1:]]))


def _arrow_array(pa: Any, feature: Feature, values: Any, arrow_type: Any) -> Any:
    """One batch of a feature's values (as ``Split.read`` returns them) as an Arrow array of ``arrow_type``."""
    encoding = feature.encoding
    if encoding == "string":
        return pa.array(list(values), type=pa.string())
    if encoding == "bytes":
        return pa.array(list(values), type=pa.binary())
    if encoding == "categorical":
        codes = np.asarray(values, dtype=np.int64)
        indices = pa.array(np.where(codes < 0, 0, codes).astype(np.int32), mask=codes < 0)
        return pa.DictionaryArray.from_arrays(indices, pa.array(feature.class_names or [], type=pa.string()))
    value_type = _value_type(pa, feature)
    if encoding == "dense":
        array = np.asarray(values)
        flat = pa.array(array.reshape(-1), type=value_type)
        return _nested_fixed(pa, flat, array.shape[1:])
    samples = [np.asarray(s) for s in values]
    if _has_shapes(feature):
        return _nested_lists(pa, samples, len(feature.sample_shape), value_type)
    dims = [int(d or 0) for d in feature.sample_shape[1:]]
    rows = np.concatenate(samples) if samples else np.empty((0, *dims), dtype=np.dtype(feature.dtype))
    flat = pa.array(rows.reshape(-1), type=value_type)
    lengths = np.fromiter((s.shape[0] for s in samples), dtype=np.int64, count=len(samples))
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    return pa.ListArray.from_arrays(pa.array(offsets, type=pa.int32()), _nested_fixed(pa, flat, dims), type=arrow_type)


def _nested_lists(pa: Any, samples: Sequence[npt.NDArray[Any]], ndim: int, value_type: Any) -> Any:
    """Samples of ``ndim`` axes each as ``ndim`` nested variable-length lists (C order)."""
    shapes = np.asarray([s.shape for s in samples], dtype=np.int64).reshape(len(samples), ndim)
    flat = np.concatenate([s.reshape(-1) for s in samples]) if samples else np.empty(0)
    array = pa.array(flat, type=value_type)
    level_offsets = []
    for k in range(ndim):
        lists_per_sample = np.prod(shapes[:, :k], axis=1, dtype=np.int64)
        lengths = np.repeat(shapes[:, k], lists_per_sample)
        level_offsets.append(np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32))
    for offsets in reversed(level_offsets):
        array = pa.ListArray.from_arrays(pa.array(offsets, type=pa.int32()), array)
    return array


def _write_parquet(
    pa: Any, split: Split, names: Sequence[str], path: Path, root: Mapping[str, Any], options: Mapping[str, Any]
) -> None:
    """Write one split to ``path`` (via a temporary file), batch by batch."""
    features = [split.feature(n) for n in names]
    types = [_arrow_type(pa, f) for f in features]
    fields = [
        pa.field(f.name, t, nullable=f.encoding == "categorical", metadata={"h5ml": json.dumps(_feature_info(f))})
        for f, t in zip(features, types, strict=True)
    ]
    info = {"split": split.name, "num_samples": split.num_samples, "metadata": dict(root)}
    schema = pa.schema(fields, metadata={"h5ml": json.dumps(info)})
    temp = _temp_beside(path)
    try:
        with pa.parquet.ParquetWriter(temp, schema, **options) as writer:
            batches = SampleBatches(features, range(split.num_samples))
            for index in batches:
                values = split.read(index, features=names)
                batches.observe(values)
                arrays = [_arrow_array(pa, f, values[f.name], t) for f, t in zip(features, types, strict=True)]
                writer.write_table(pa.Table.from_arrays(arrays, schema=schema))
        os.replace(temp, path)
    finally:
        temp.unlink(missing_ok=True)


def export_parquet(
    source: str | os.PathLike[str],
    output: str | os.PathLike[str],
    *,
    split: str | None = None,
    features: Sequence[str] | None = None,
    compression: str | None = "snappy",
    overwrite: bool = False,
) -> dict[str, Path]:
    """Export an h5ml file to Parquet: one row per sample, one column per feature.

    Parameters
    ----------
    source
        The h5ml file.
    output
        With ``split``: the Parquet file to write. Without: a directory
        (created when missing; its parent must exist) that receives
        ``<split>.parquet`` for every split.
    split
        The one split to export; default every split (one file each).
    features
        The features to export; default every feature of each split.
    compression
        Parquet compression (``"snappy"``, ``"zstd"``, ``"gzip"``, ... as
        ``pyarrow.parquet.ParquetWriter`` takes it) or None.
    overwrite
        Replace existing output files.

    Returns
    -------
    dict
        Split name -> the Parquet file written.

    Raises
    ------
    ImportError
        If pyarrow is not installed.
    FileNotFoundError
        If the source, or the output's parent directory, does not exist.
    FileExistsError
        If an output file exists and ``overwrite`` is false (checked for every
        split before anything is written), or the output is the source.
    IsADirectoryError, NotADirectoryError
        If ``output`` is a directory while ``split`` is given, or a file while it is not.
    h5ml.SplitNotFoundError, h5ml.FeatureNotFoundError
        If the split or a feature does not exist.
    h5ml.H5MLError
        If the source cannot be read (as :func:`h5ml.open`); output files are unchanged.

    Notes
    -----
    Column types and metadata: see the module docstring. Read the result
    with ``pyarrow.parquet.read_table`` or ``pandas.read_parquet``.
    """
    pa = _pa()
    source_path = Path(source)
    if not source_path.is_file():
        raise FileNotFoundError(f"{source_path}: no such file")
    out = Path(output)
    with open_dataset(source_path) as dataset:
        chosen = _selected(dataset, None if split is None else [split], features)
        if split is not None:
            targets = {split: check_output(out, overwrite, [source_path])}
        else:
            if out.exists() and not out.is_dir():
                raise NotADirectoryError(
                    f"{out} is a file; without split= the output is a directory that receives <split>.parquet for "
                    "each split (pass split=... to write one split to a file)"
                )
            if not out.parent.is_dir():
                raise FileNotFoundError(f"{out}: the directory {str(out.parent)!r} does not exist; create it first")
            targets = {s.name: out / f"{s.name}.parquet" for s, _ in chosen}
            for path in targets.values():
                if path.exists() and not overwrite:
                    raise FileExistsError(
                        f"{path}: the output file exists; choose another directory or pass overwrite=True (--overwrite)"
                    )
            out.mkdir(exist_ok=True)
        root = dataset.metadata.to_json()
        options = {"compression": compression or "none"}
        for chosen_split, names in chosen:
            _write_parquet(pa, chosen_split, names, targets[chosen_split.name], root, options)
    return targets
