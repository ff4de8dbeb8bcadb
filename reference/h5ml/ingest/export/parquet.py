"""Export to Parquet, one row per sample: :func:`export_parquet` (§6).

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
written in batches, one Parquet row group per batch. ``h5ml convert`` reads
such a file back (:mod:`h5ml.ingest.tables`) with the same split, encodings,
dtypes, sample shapes, class names, roles and other attributes.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from h5ml.ingest.attributes import descriptive_attributes
from h5ml.ingest.docstrings import shared_doc
from h5ml.ingest.edit.batches import SampleBatches
from h5ml.ingest.export.common import has_shapes, selected
from h5ml.ingest.options import parameter_error
from h5ml.ingest.output import check_output, temp_beside
from h5ml.model.paths import require_regular_file
from h5ml.reader import Feature, Split
from h5ml.reader import open_file as open_dataset

__all__ = ["export_parquet"]


def _feature_info(feature: Feature) -> dict[str, Any]:
    """The h5ml attributes of a feature as JSON (§6.1), for the Parquet field metadata."""
    info: dict[str, Any] = {
        "encoding": feature.encoding,
        "dtype": "str" if feature.encoding == "string" else np.dtype(feature.dtype).name,
        "sample_shape": list(feature.sample_shape),
    }
    info.update(descriptive_attributes(feature))
    if feature.media_type is not None:
        info["media_type"] = feature.media_type
    if feature.class_names is not None:
        info["class_names"] = list(feature.class_names)
    return info


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
    if has_shapes(feature):
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
    if has_shapes(feature):
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
    temp = temp_beside(path, "export")
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


@shared_doc(names=("allow_external",))
def export_parquet(
    source: str | os.PathLike[str],
    output: str | os.PathLike[str],
    *,
    split: str | None = None,
    features: Sequence[str] | None = None,
    compression: str | None = "snappy",
    overwrite: bool = False,
    allow_external: bool = False,
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
    {shared_parameters}

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
    h5ml.errors.ParameterError
        If ``compression`` is not a codec this pyarrow build writes.
    h5ml.H5MLError
        If the source cannot be read (as :func:`h5ml.open`); output files are unchanged.

    Notes
    -----
    Column types and metadata: see the module docstring. Read the result
    with ``pyarrow.parquet.read_table`` or ``pandas.read_parquet``.
    """
    pa = _pa()
    _check_codec(pa, compression)
    source_path = require_regular_file(source)
    out = Path(output)
    with open_dataset(source_path, allow_external=allow_external) as dataset:
        chosen = selected(dataset, None if split is None else [split], features)
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


def _check_codec(pa: Any, compression: str | None) -> None:
    """Refuse a Parquet codec this pyarrow build cannot write, before anything is read or written."""
    if compression is None:
        return
    try:
        available = isinstance(compression, str) and bool(pa.Codec.is_available(compression))
    except ValueError:
        available = False
    if not available:
        codecs = [c for c in ("snappy", "gzip", "zstd", "brotli", "lz4") if pa.Codec.is_available(c)]
        raise parameter_error(
            "compression",
            f"compression {compression!r} is not a Parquet codec this pyarrow writes; use one of "
            f"{', '.join(codecs)}, or none",
            option="--parquet-compression",
        )
