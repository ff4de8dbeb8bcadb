"""The columns of a Hugging Face dataset: how each is read (:class:`Column`) and the feature it becomes (§6).

:func:`plan_columns` refuses, before any row is read, every feature type h5ml
cannot store (the table is in :mod:`h5ml.ingest.hf`); :func:`declare` gives
the :meth:`h5ml.Writer.add_feature` arguments of a planned column, and
:func:`apply_user_specs` puts the caller's ``features=`` over them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Final, Literal

import numpy as np

from h5ml.errors import IngestError
from h5ml.ingest.features import check_fixed_fields
from h5ml.ingest.naming import NAMING_RULE, name_list, name_problem
from h5ml.ingest.options import parameter_error
from h5ml.model.values import FeatureSpec, SpecTable

__all__ = [
    "NULL_REASON",
    "OCTET_STREAM",
    "AudioColumns",
    "Column",
    "ColumnKind",
    "Declaration",
    "ImageColumns",
    "Problems",
    "RowProblem",
    "apply_user_specs",
    "declare",
    "feature_kwargs",
    "import_datasets",
    "numpy_dtype",
    "plan_columns",
]

#: How Image columns are stored: the encoded bytes as stored, or decoded pixels.
ImageColumns = Literal["bytes", "pixels"]
#: How Audio columns are stored: decoded samples (ragged, with sample_rate), or the encoded bytes.
AudioColumns = Literal["samples", "bytes"]
#: How a column's values are converted.
ColumnKind = Literal["categorical", "numeric", "string", "binary", "nested", "media_bytes", "pixels", "audio"]
#: The media type of files whose type nothing tells (§6.6).
OCTET_STREAM: Final = "application/octet-stream"
#: Why a null value is a bad row.
NULL_REASON: Final = "is null (missing); h5ml has no missing values except categorical -1: fill them (Dataset.map)"


def import_datasets() -> Any:
    """The ``datasets`` package.

    Raises
    ------
    ImportError
        If it is not installed, saying what to install.
    """
    try:
        import datasets
    except ImportError as exc:
        raise ImportError(
            'converting Hugging Face datasets needs the `datasets` package, which is not installed: pip install "h5ml[hf]"'
        ) from exc
    return datasets


@dataclass(frozen=True)
class Column:
    """How one source column is read (picklable: it travels to the worker processes).

    Attributes
    ----------
    name
        The column, and the h5ml feature it becomes.
    kind
        How its values are converted.
    dtype
        numeric, nested, pixels: the numpy dtype of the values.
    dims
        nested: the length of each list level (None where it varies).
    class_names
        categorical: the ClassLabel names.
    image_mode
        pixels: the Pillow mode images are converted to (None: their own, palettes to RGB/RGBA).
    media_type
        media_bytes: the IANA type of every file, or ``application/octet-stream``.
    sample_rate
        audio: the rate every file must have, in Hz (None until the first file fixes it).
    channels
        audio: channels of every file; pixels: the length of the channel axis (None: no channel axis).
    pixel_shape
        pixels: the shape of every image when all have one, else None (ragged).
    """

    name: str
    kind: ColumnKind
    dtype: str | None = None
    dims: tuple[int | None, ...] = ()
    class_names: tuple[str, ...] | None = None
    image_mode: str | None = None
    media_type: str = OCTET_STREAM
    sample_rate: float | None = None
    channels: int | None = None
    pixel_shape: tuple[int, ...] | None = None


@dataclass(frozen=True)
class Declaration:
    """The arguments of :meth:`h5ml.Writer.add_feature` for one converted column."""

    encoding: str
    dtype: str | None = None
    sample_shape: tuple[int, ...] = ()
    sample_ndim: int | None = None
    class_names: tuple[str, ...] | None = None
    role: str | None = None
    sample_rate: float | None = None
    media_type: str | None = None
    description: str | None = None
    units: str | None = None
    compression: str | Literal[False] | None = None


class RowProblem(Exception):
    """A row that cannot be converted, and why (a sentence)."""

    def __init__(self, reason: str, media_path: str | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.media_path = media_path


#: Row (position in its batch) -> why it cannot be converted.
Problems = dict[int, RowProblem]


def plan_columns(
    dataset: Any,
    columns: Sequence[str] | None,
    images: ImageColumns,
    audio: AudioColumns,
    label_text: str,
    split: str | None,
) -> tuple[Column, ...]:
    """How each selected column is read; every unsupported feature type is refused before any row is read."""
    features = dataset.features
    listed = name_list("columns", columns)
    names = list(features) if listed is None else listed
    unknown = [n for n in names if n not in features]
    if unknown:
        raise parameter_error("columns", f"{label_text}: no column(s) {unknown}; the columns are {list(features)}")
    where = label_text if split is None else f"{label_text} split {split!r}"
    bad_names = [n for n in names if name_problem("feature", n) is not None]
    if bad_names:
        raise IngestError(
            f"{where}: column name(s) {bad_names} are not valid h5ml feature names ({NAMING_RULE}); rename them "
            "with Dataset.rename_column, or leave them out with columns=",
            path=label_text,
        )
    planned: list[Column] = []
    problems: list[str] = []
    for name in names:
        try:
            planned.append(_plan_column(name, features[name], images, audio))
        except RowProblem as exc:
            problems.append(f"{name!r}: {exc.reason}")
    if problems:
        raise IngestError(
            f"{where}: h5ml cannot store column(s) {'; '.join(problems)}. Leave them out with columns=[...] "
            "(--columns), or turn them into supported columns first (Dataset.flatten, Dataset.map, cast_column)",
            path=label_text,
        )
    return tuple(planned)


def _plan_column(name: str, feature: Any, images: ImageColumns, audio: AudioColumns) -> Column:
    hf = import_datasets()
    if isinstance(feature, hf.ClassLabel):
        return Column(name, "categorical", class_names=tuple(str(n) for n in feature.names))
    if isinstance(feature, hf.Value):
        kind = _value_kind(feature.dtype)
        if kind is None:
            raise RowProblem(f"Value({feature.dtype!r}) has no h5ml encoding (numbers, strings and binary do)")
        return Column(name, kind, dtype=feature.dtype if kind == "numeric" else None)
    if isinstance(feature, hf.Image):
        if images == "pixels":
            return Column(name, "pixels", image_mode=feature.mode)
        return Column(name, "media_bytes")
    if isinstance(feature, hf.Audio):
        if audio == "bytes":
            return Column(name, "media_bytes")
        rate = None if feature.sampling_rate is None else float(feature.sampling_rate)
        return Column(name, "audio", sample_rate=rate, channels=getattr(feature, "num_channels", None))
    arrays = tuple(getattr(hf, f"Array{d}D") for d in range(2, 6))
    if isinstance(feature, arrays):
        if _value_kind(feature.dtype) != "numeric":
            raise RowProblem(f"{type(feature).__name__} of dtype {feature.dtype!r} is not numeric")
        dims = tuple(None if d is None else int(d) for d in feature.shape)
        if any(d is None for d in dims[1:]):
            raise RowProblem(f"{type(feature).__name__} shape {feature.shape}: only the first axis may be None")
        return Column(name, "nested", dtype=feature.dtype, dims=dims)
    lists = tuple(getattr(hf, n) for n in ("List", "LargeList", "Sequence") if isinstance(getattr(hf, n, None), type))
    if isinstance(feature, lists):
        dims_list: list[int | None] = []
        inner = feature
        while isinstance(inner, lists):
            length = getattr(inner, "length", -1)
            dims_list.append(None if length is None or length < 0 else int(length))
            inner = inner.feature
        if isinstance(inner, hf.Value) and _value_kind(inner.dtype) == "numeric":
            return Column(name, "nested", dtype=inner.dtype, dims=tuple(dims_list))
        what = type(inner).__name__ + (f"({inner.dtype!r})" if isinstance(inner, hf.Value) else "")
        raise RowProblem(f"a list of {what}; h5ml stores lists of numbers only (ragged, §6.3)")
    if isinstance(feature, dict):
        raise RowProblem("a dict of features; split it into columns with Dataset.flatten()")
    raise RowProblem(f"feature type {type(feature).__name__} has no h5ml encoding")


def _value_kind(dtype: str) -> ColumnKind | None:
    if dtype in ("string", "large_string"):
        return "string"
    if dtype in ("binary", "large_binary"):
        return "binary"
    try:
        kind = np.dtype(numpy_dtype(dtype)).kind
    except (TypeError, ValueError):  # timestamps, dates, decimals, null: no numpy dtype
        return None
    return "numeric" if kind in "biuf" else None


def numpy_dtype(dtype: str) -> str:
    """The numpy dtype name of a Hugging Face ``Value`` dtype (``"float"`` is float32, ``"double"`` float64, ...)."""
    return {"float": "float32", "double": "float64", "halffloat": "float16"}.get(dtype, dtype)


def declare(column: Column) -> Declaration:
    """The feature one planned column becomes (§6; the table is in :mod:`h5ml.ingest.hf`)."""
    kind = column.kind
    if kind == "categorical":
        return Declaration("categorical", class_names=column.class_names, role="target")
    if kind == "numeric":
        return Declaration("dense", dtype=numpy_dtype(column.dtype or "float64"))
    if kind == "string":
        return Declaration("string")
    if kind == "binary":
        return Declaration("bytes", media_type=OCTET_STREAM)
    if kind == "nested":
        dtype = numpy_dtype(column.dtype or "float64")
        fixed = [d for d in column.dims if d is not None]
        if len(fixed) == len(column.dims):
            return Declaration("dense", dtype=dtype, sample_shape=tuple(fixed))
        if column.dims[0] is None and len(fixed) == len(column.dims) - 1:
            return Declaration("ragged", dtype=dtype, sample_shape=tuple(fixed))
        return Declaration("ragged", dtype=dtype, sample_ndim=len(column.dims))
    if kind == "media_bytes":
        return Declaration("bytes", role="input", media_type=column.media_type)
    if kind == "pixels":
        if column.pixel_shape is not None:
            return Declaration("dense", dtype=column.dtype, sample_shape=column.pixel_shape, role="input")
        return Declaration("ragged", dtype=column.dtype, sample_ndim=2 if column.channels is None else 3, role="input")
    shape = () if (column.channels or 1) == 1 else (int(column.channels or 1),)
    return Declaration("ragged", dtype="float32", sample_shape=shape, role="input", sample_rate=column.sample_rate)


def apply_user_specs(
    declarations: dict[str, dict[str, Declaration]], features: Mapping[str, FeatureSpec | Mapping[str, Any]] | None
) -> dict[str, dict[str, Declaration]]:
    """Merge the caller's ``features=`` over the declarations; refuse keys that match nothing or change encodings.

    Raises
    ------
    h5ml.errors.ParameterError
        If an entry changes an encoding or class names (they come from the
        source's feature types), or names no converted column.
    """
    table = SpecTable(features)
    out: dict[str, dict[str, Declaration]] = {}
    for split, columns in declarations.items():
        out[split] = {}
        for name, decl in columns.items():
            user = table.get(split, name)
            table.mark_used(split, name)
            check_fixed_fields(
                f"{split}/{name}",
                decl.encoding,
                decl.class_names,
                user,
                "the converter chooses them from the source's feature types (see h5ml.ingest.hf): change the "
                "column's type in datasets first (cast_column, datasets.ClassLabel(names=[...]))",
            )
            out[split][name] = replace(
                decl,
                dtype=decl.dtype if user.dtype is None else np.dtype(user.dtype).name,
                role=user.role or decl.role,
                sample_rate=decl.sample_rate if user.sample_rate is None else user.sample_rate,
                media_type=user.media_type or decl.media_type,
                description=user.description,
                units=user.units,
                compression=user.compression,
            )
    unused = table.unused()
    if unused:
        known = sorted({n for cols in declarations.values() for n in cols})
        raise parameter_error(
            "features", f"features= names {unused}, which match no converted column; the columns are {known}"
        )
    return out


def feature_kwargs(decl: Declaration) -> dict[str, Any]:
    """Keyword arguments of :meth:`h5ml.Writer.add_feature` for a declaration."""
    return {
        "encoding": decl.encoding,
        "dtype": decl.dtype,
        "sample_shape": decl.sample_shape,
        "sample_ndim": decl.sample_ndim,
        "class_names": decl.class_names,
        "role": decl.role,
        "description": decl.description,
        "units": decl.units,
        "sample_rate": decl.sample_rate,
        "media_type": decl.media_type,
        "compression": decl.compression,
    }
