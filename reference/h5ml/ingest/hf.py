"""Convert Hugging Face ``datasets`` to h5ml files (``h5ml convert --from hf``).

The source is a ``datasets.Dataset``, a ``datasets.DatasetDict`` (its splits),
or the directory of one saved with ``save_to_disk`` (opened with
``datasets.load_from_disk``, memory-mapped). ``datasets`` is an optional extra:
``pip install "h5ml[hf]"``.

How features map to encodings (§6)
----------------------------------
=================================================  =====================================================
Hugging Face feature                               h5ml feature
=================================================  =====================================================
``ClassLabel(names=...)``                          categorical with those class names (-1 = no label,
                                                   null = -1), role ``target``
``Value`` bool, int8-64, uint8-64, float16-64      dense ``(N,)`` of that dtype
``Value("string")`` / ``"large_string"``           string
``Value("binary")`` / ``"large_binary"``           bytes (``application/octet-stream``)
``List``/``Sequence``/``LargeList`` of numbers     dense ``(N, *lengths)`` when every level has a fixed
(nested to any depth)                              ``length``; ragged when the first level varies
                                                   (rows of the fixed inner shape); ragged with
                                                   ``shapes`` when an inner level varies
``Array2D``..``Array5D(shape, dtype)``             dense ``(N, *shape)``; ragged when the first axis is
                                                   ``None``
``Image()``, ``images="bytes"`` (default)          bytes: the encoded file as stored, ``media_type`` from
                                                   its signature when every image has the same type
                                                   (else ``application/octet-stream``), role ``input``
``Image()``, ``images="pixels"``                   dense ``(N, H, W[, C])`` when every image has the same
                                                   size, else ragged with ``shapes``; ``Image(mode=...)``
                                                   converts; palette images become RGB/RGBA
``Audio()``, ``audio="samples"`` (default)         ragged float32 ``(frames,)`` (mono) or
                                                   ``(frames, channels)``, ``sample_rate`` in Hz,
                                                   role ``input``
``Audio()``, ``audio="bytes"``                     bytes: the encoded file, ``media_type`` as images
=================================================  =====================================================

Other features (dicts, ``Translation``, ``Video``, lists of strings,
timestamps, ...) are refused before anything is written, naming the column:
leave them out with ``columns=`` or turn them into supported columns first
(``Dataset.flatten``, ``Dataset.map``).

Rows are read through the Arrow format in batches (``Dataset.iter``), so
images and audio are never decoded by ``datasets`` (no ``torchcodec``), and
memory stays bounded by the batch size whatever the dataset's size. Audio is
decoded with ``soundfile`` at the files' own sample rate (no resampling: a
column cast with ``Audio(sampling_rate=...)`` whose files have another rate
is refused); pixels are decoded with Pillow. The first readable sample of a
column fixes its sample rate and channels (audio) or pixel mode (images); a
row that differs, does not decode, or holds a null where h5ml has no missing
value (every encoding except categorical) is a bad row: by default the
conversion stops with :class:`h5ml.IngestError` naming the row and the reason
(the output is left as it was); with ``on_error="skip"`` the row is left out
and recorded (:data:`h5ml.ingest.SKIPPED_ATTR`).

Splits: the names of a ``DatasetDict`` (or the ``split`` of a ``Dataset``)
are mapped to the standard ones (``valid``/``val``/``dev`` -> ``validation``,
``eval``/``testing`` -> ``test``, ``training`` -> ``train``, §5.1). A
``Dataset`` without a split is cut by ``split_ratios`` (default train 0.8,
test 0.2), stratified on its first ``ClassLabel`` column (or ``label``);
``split_ratios={"train": 1.0}`` keeps every row in one split.

Root metadata: the dataset card fields of ``DatasetInfo`` (description,
license, citation, homepage) when set, over the defaults of
:func:`h5ml.ingest.conversion_metadata`, under what ``metadata`` gives.
"""

from __future__ import annotations

import functools
import io
import json
import mimetypes
import os
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal, TypeVar

import numpy as np
import numpy.typing as npt

from h5ml import spec
from h5ml.errors import IngestError
from h5ml.ingest.arrays import SPLIT_SUFFIXES
from h5ml.ingest.pipeline import (
    SKIPPED_ATTR,
    IngestReport,
    OnError,
    Skipped,
    check_output,
    conversion_metadata,
    ordered_map,
    progress_bar,
)
from h5ml.ingest.splitting import assign_splits
from h5ml.model.values import FeatureSpec, SpecTable, text_problem
from h5ml.reader.imagecodec import IMAGE_MEDIA_TYPES, sniff_image_format
from h5ml.sampling.seeds import draw_seed, write_order
from h5ml.writer.writer import Writer

if TYPE_CHECKING:  # pragma: no cover
    import datasets

__all__ = [
    "DEFAULT_BATCH_SIZE",
    "DEFAULT_SPLIT_RATIOS",
    "MEDIA_BATCH_SIZE",
    "AudioMode",
    "ImageMode",
    "convert_huggingface",
    "media_type_of",
    "standard_split_name",
]

#: How Image columns are stored: the encoded bytes as stored, or decoded pixels.
ImageMode = Literal["bytes", "pixels"]
#: How Audio columns are stored: decoded samples (ragged, with sample_rate), or the encoded bytes.
AudioMode = Literal["samples", "bytes"]

#: Rows per batch of a dataset without Image or Audio columns.
DEFAULT_BATCH_SIZE: Final = 1024
#: Rows per batch of a dataset with Image or Audio columns (their rows are large).
MEDIA_BATCH_SIZE: Final = 64
#: Splits of a ``Dataset`` that has none (§5.1).
DEFAULT_SPLIT_RATIOS: Final[Mapping[str, float]] = {"train": 0.8, "test": 0.2}
#: Batches in flight per worker process (bounds memory).
_IN_FLIGHT_PER_WORKER: Final = 2
#: Source split names mapped to the standard ones (§5.1; the aliases of ``spec.SPLIT_ALIASES`` and more).
_SPLIT_NAMES: Final[Mapping[str, str]] = SPLIT_SUFFIXES
#: Audio file signatures (offset, magic bytes, media type), checked in order (images: h5ml.reader.imagecodec).
_SIGNATURES: Final[tuple[tuple[int, bytes, str], ...]] = (
    (8, b"WAVE", "audio/wav"),
    (8, b"AIFF", "audio/aiff"),
    (0, b"fLaC", "audio/flac"),
    (0, b"OggS", "audio/ogg"),
    (0, b"ID3", "audio/mpeg"),
    (0, b"\xff\xfb", "audio/mpeg"),
    (0, b"\xff\xf3", "audio/mpeg"),
    (0, b"\xff\xf2", "audio/mpeg"),
)
_SIGNATURE_BYTES: Final = 16
#: Rows per batch when reading the first bytes of every media file (only their signatures are kept).
_SCAN_ROWS: Final = 1024
_OCTET_STREAM: Final = "application/octet-stream"

_T = TypeVar("_T")
_R = TypeVar("_R")

_ColumnKind = Literal["categorical", "numeric", "string", "binary", "nested", "media_bytes", "pixels", "audio"]


# --------------------------------------------------------------------------
# small public helpers


def standard_split_name(name: str) -> str:
    """The standard name of a source split (§5.1): ``valid``/``val``/``dev`` -> ``validation``, ...

    Parameters
    ----------
    name
        A split name of the source.

    Returns
    -------
    str
        ``train``, ``validation`` or ``test`` for their aliases (``training``,
        ``valid``, ``val``, ``dev``, ``eval``, ``testing``); ``name`` otherwise.
    """
    return _SPLIT_NAMES.get(name, name)


def media_type_of(head: bytes | None, path: str | None = None) -> str | None:
    """The IANA media type of an encoded image or audio file, from its first bytes or else its name (§6.6).

    Parameters
    ----------
    head
        The file's first bytes (16 are enough), or None.
    path
        The file's name, used when ``head`` matches no known signature.

    Returns
    -------
    str or None
        ``image/png``, ``image/jpeg``, ``image/gif``, ``image/webp``,
        ``image/bmp``, ``image/tiff``, ``audio/wav``, ``audio/flac``,
        ``audio/ogg``, ``audio/mpeg``, ``audio/aiff``, the type
        :mod:`mimetypes` gives the name, or None when neither tells.
    """
    if head:
        image = sniff_image_format(head)
        if image is not None:
            return IMAGE_MEDIA_TYPES[image]
        for offset, magic, media in _SIGNATURES:
            if head[offset : offset + len(magic)] == magic and (offset == 0 or head[:4] in (b"RIFF", b"FORM")):
                return media
    if path:
        guessed, _ = mimetypes.guess_type(path)
        if guessed is not None and guessed.count("/") == 1:
            return guessed
    return None


# --------------------------------------------------------------------------
# the plan of a column


@dataclass(frozen=True)
class _Column:
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
    kind: _ColumnKind
    dtype: str | None = None
    dims: tuple[int | None, ...] = ()
    class_names: tuple[str, ...] | None = None
    image_mode: str | None = None
    media_type: str = _OCTET_STREAM
    sample_rate: float | None = None
    channels: int | None = None
    pixel_shape: tuple[int, ...] | None = None


@dataclass(frozen=True)
class _Declaration:
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


@dataclass
class _Part:
    """The rows of one target split: a source split's dataset (arrow format) and which of its rows, in order."""

    source_split: str | None
    dataset: Any
    rows: npt.NDArray[np.int64] | None  # None: every row in order
    columns: tuple[_Column, ...] = ()

    @property
    def count(self) -> int:
        return len(self.dataset) if self.rows is None else int(self.rows.shape[0])


@dataclass
class _Converted:
    """One converted batch: the values of its good rows, and the rows left out."""

    values: dict[str, Any]
    count: int
    problems: list[tuple[int, Skipped]] = field(default_factory=list)


class _RowProblem(Exception):
    """A row that cannot be converted, and why (a sentence)."""

    def __init__(self, reason: str, media_path: str | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.media_path = media_path


# --------------------------------------------------------------------------
# entry point


def _import_datasets() -> Any:
    try:
        import datasets
    except ImportError as exc:
        raise ImportError(
            'converting Hugging Face datasets needs the `datasets` package, which is not installed: pip install "h5ml[hf]"'
        ) from exc
    return datasets


def convert_huggingface(
    source: datasets.Dataset | datasets.DatasetDict | str | os.PathLike[str],
    output: str | os.PathLike[str],
    *,
    splits: Sequence[str] | Mapping[str, str] | None = None,
    columns: Sequence[str] | None = None,
    images: ImageMode = "bytes",
    audio: AudioMode = "samples",
    split_ratios: Mapping[str, float] | None = None,
    label: str | None = None,
    batch_size: int | None = None,
    features: Mapping[str, FeatureSpec | Mapping[str, Any]] | None = None,
    metadata: Mapping[str, Any] | None = None,
    compression: str | None = None,
    shuffle: bool = False,
    seed: int | None = None,
    workers: int = 1,
    on_error: OnError = "stop",
    progress: bool | None = None,
    overwrite: bool = False,
) -> IngestReport:
    """Convert a Hugging Face dataset to an h5ml file (§4, §5, §6, §7.6).

    Parameters
    ----------
    source
        A ``datasets.Dataset``, a ``datasets.DatasetDict``, or the directory
        of one saved with ``save_to_disk``. Streaming (``IterableDataset``)
        sources are refused.
    output
        The h5ml file to write (see :func:`h5ml.ingest.check_output`).
    splits
        Which source splits to convert: a list of their names, or a mapping
        source name -> h5ml split name (renaming). Default: every split, each
        under its standard name (:func:`standard_split_name`).
    columns
        The columns to convert, in this order; default every column.
    images
        ``"bytes"``: store Image columns as the encoded files (bytes, §6.6);
        ``"pixels"``: decode them to uint8 (etc.) arrays ``(H, W[, C])``:
        dense when every image has the same size, else ragged with shapes.
        Pixels mode reads every image's header once before converting.
    audio
        ``"samples"``: decode Audio columns with soundfile to float32 ragged
        samples ``(frames[, channels])`` in [-1, 1] with ``sample_rate`` (Hz);
        ``"bytes"``: store the encoded files.
    split_ratios
        For a ``Dataset`` without a split: split name -> fraction (default
        :data:`DEFAULT_SPLIT_RATIOS`), stratified on ``label``; the rows are
        assigned with seed ``seed`` (0 when None). Refused for a
        ``DatasetDict``.
    label
        The column ``split_ratios`` stratifies on; default the first
        ``ClassLabel`` column (no stratification when there is none).
    batch_size
        Rows read, converted and written at once; default
        :data:`MEDIA_BATCH_SIZE` when the dataset has Image or Audio columns,
        else :data:`DEFAULT_BATCH_SIZE`. Memory is about ``batch_size`` rows
        per batch in flight (``2 * workers`` batches with workers).
    features
        Options per h5ml feature, as :class:`h5ml.Writer` takes them
        (``{"label": {"role": "target", "description": ...}}``, keys
        ``"feature"`` or ``"split/feature"``), over the defaults above. The
        encoding and the class names follow from the source and cannot be
        changed here.
    metadata
        Root metadata (§4.2), over the dataset card's and the defaults of
        :func:`h5ml.ingest.conversion_metadata`.
    compression
        ``"gzip"`` or None, as :class:`h5ml.Writer`.
    shuffle, seed
        Store each split in the order ``numpy.random.default_rng(seed).permutation(n)``
        and record ``seed`` as its ``shuffle_seed`` (§7.6); a seed is drawn
        when ``shuffle`` is set without one.
    workers
        Processes that convert batches when a column must be decoded
        (``images="pixels"``, ``audio="samples"``); other datasets are
        converted in this process, which is faster than sending them.
    on_error
        ``"stop"``: the first bad row raises :class:`h5ml.IngestError`;
        ``"skip"``: bad rows are left out and recorded.
    progress
        Show a progress bar on stderr: True, False, or None for "when stderr is a terminal".
    overwrite
        Replace an existing output.

    Returns
    -------
    IngestReport
        Samples written per split, rows skipped (``path`` is
        ``"<source>:<split>[<row>]"``), time taken.

    Raises
    ------
    ImportError
        If ``datasets`` is not installed (``pip install "h5ml[hf]"``).
    FileNotFoundError
        If ``source`` is a path that does not exist.
    TypeError
        If ``source`` is not one of the kinds above.
    ValueError
        If an option is invalid (unknown split or column, ``split_ratios``
        with a ``DatasetDict``, ``features=`` that changes an encoding, ...).
    IngestError
        If a column has a feature type h5ml cannot store, names do not fit
        §5.1, two splits map to one name, a saved dataset cannot be loaded, or
        (``on_error="stop"``) a row cannot be converted. The output is unchanged.
    FileExistsError, IsADirectoryError
        As :func:`h5ml.ingest.check_output`.
    h5ml.WriterError, h5ml.EncodingError, h5ml.MetadataError
        If the values or the metadata cannot be written; the output is unchanged.
    """
    hf = _import_datasets()
    if on_error not in ("stop", "skip"):
        raise ValueError(f"on_error must be 'stop' or 'skip', got {on_error!r}")
    if images not in ("bytes", "pixels"):
        raise ValueError(f"images must be 'bytes' or 'pixels', got {images!r}")
    if audio not in ("samples", "bytes"):
        raise ValueError(f"audio must be 'samples' or 'bytes', got {audio!r}")
    if batch_size is not None and (isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1):
        raise ValueError(f"batch_size must be an integer >= 1, got {batch_size!r}")
    start = time.perf_counter()
    loaded, label_text, source_path = _load(hf, source)
    out = check_output(output, overwrite, [source_path] if source_path is not None else [])
    if shuffle and seed is None:
        seed = draw_seed()
    parts = _target_splits(hf, loaded, label_text, splits, split_ratios, label, seed)
    for part in parts.values():
        part.columns = _plan_columns(part.dataset, columns, images, audio, label_text, part.source_split)
    _settle_media(parts, label_text)
    if shuffle and seed is not None:  # a seed was drawn above when none was given
        for part in parts.values():
            order = write_order(part.count, seed)
            part.rows = order.astype(np.int64) if part.rows is None else part.rows[order]
    declarations = {name: {c.name: _declare(c) for c in part.columns} for name, part in parts.items()}
    declarations = _apply_user_specs(declarations, features)
    info = _first_info(loaded)
    root = conversion_metadata("Hugging Face dataset", label_text, {**_card_metadata(info), **(metadata or {})})
    has_media = any(c.kind in ("media_bytes", "pixels", "audio") for p in parts.values() for c in p.columns)
    size = batch_size or (MEDIA_BATCH_SIZE if has_media else DEFAULT_BATCH_SIZE)
    decoding = any(c.kind in ("pixels", "audio") for p in parts.values() for c in p.columns)
    report = IngestReport(out)
    bar = progress_bar(progress, sum(p.count for p in parts.values()))
    try:
        with Writer(out, root, compression=compression) as writer:
            for name, part in parts.items():
                writer.add_split(name, shuffle_seed=seed if shuffle else None, expected_samples=part.count)
                for column in part.columns:
                    writer.add_feature(name, column.name, **_feature_kwargs(declarations[name][column.name]))
                task = None if bar is None else bar.add_task(f"{out.name}: {name}", total=part.count)
                report.samples[name] = _write_split(
                    writer, name, part, label_text, size, workers if decoding else 1, on_error, report, bar, task
                )
            if report.skipped:
                writer.update_metadata({SKIPPED_ATTR: json.dumps([s.to_json() for s in report.skipped])})
    finally:
        if bar is not None:
            bar.stop()
    report.seconds = time.perf_counter() - start
    return report


# --------------------------------------------------------------------------
# the source


def _load(hf: Any, source: Any) -> tuple[Any, str, Path | None]:
    """The loaded dataset(s), the label naming the source in messages, and the source path when it is one."""
    if isinstance(source, (hf.Dataset, hf.DatasetDict)):
        if isinstance(source, hf.DatasetDict):
            streaming = [k for k, v in source.items() if not isinstance(v, hf.Dataset)]
            if streaming:
                raise TypeError(
                    f"the DatasetDict's splits {streaming} are not Dataset objects (streaming datasets "
                    "are not converted); load them without streaming=True"
                )
        return source, _dataset_label(source), None
    if isinstance(source, (str, os.PathLike)):
        path = Path(source)
        if not path.exists():
            raise FileNotFoundError(f"{path}: no such directory (a dataset saved with save_to_disk was expected)")
        try:
            loaded = hf.load_from_disk(os.fspath(path))
        except (FileNotFoundError, ValueError, OSError) as exc:
            raise IngestError(
                f"{path}: cannot be loaded with datasets.load_from_disk ({type(exc).__name__}: {exc}); give the "
                "directory written by Dataset.save_to_disk or DatasetDict.save_to_disk",
                path=str(path),
            ) from exc
        return loaded, str(path), path
    kind = type(source).__name__
    raise TypeError(
        f"source must be a datasets.Dataset, a datasets.DatasetDict or the path of a dataset saved with "
        f"save_to_disk, got a {kind}" + (" (streaming datasets are not converted)" if "Iterable" in kind else "")
    )


def _dataset_label(source: Any) -> str:
    """How an in-memory dataset is named in messages and in the root attribute ``source``."""
    first = next(iter(source.values()), None) if isinstance(source, dict) else source
    name = getattr(getattr(first, "info", None), "dataset_name", None)
    return f"Hugging Face dataset {name!r}" if name else f"in-memory datasets.{type(source).__name__}"


def _first_info(loaded: Any) -> Any:
    if hasattr(loaded, "info"):
        return loaded.info
    first = next(iter(loaded.values()), None)
    return None if first is None else first.info


def _card_metadata(info: Any) -> dict[str, Any]:
    """Root attributes from a ``DatasetInfo`` (§4.2): the fields it sets, in the forms the schema takes."""
    out: dict[str, Any] = {}
    if info is None:
        return out
    for key in ("description", "license", "citation"):
        value = getattr(info, key, None)
        if isinstance(value, str) and value.strip() and text_problem(value) is None:
            out[key] = value.strip()
    homepage = getattr(info, "homepage", None)
    if (
        isinstance(homepage, str)
        and homepage.startswith(("http://", "https://"))
        and not any(c.isspace() for c in homepage)
    ):
        out["homepage"] = homepage
    name = getattr(info, "dataset_name", None)
    if isinstance(name, str) and name.strip():
        out["name"] = name.strip()
    return out


def _target_splits(
    hf: Any,
    loaded: Any,
    label_text: str,
    splits: Sequence[str] | Mapping[str, str] | None,
    ratios: Mapping[str, float] | None,
    label: str | None,
    seed: int | None,
) -> dict[str, _Part]:
    """Target split name -> its rows, after renaming, selection and (for a Dataset without a split) assignment."""
    if isinstance(loaded, hf.DatasetDict):
        if ratios is not None:
            raise ValueError(
                f"{label_text} has splits {list(loaded)}; split_ratios applies to a Dataset without splits only"
            )
        sources: dict[str, Any] = dict(loaded.items())
    else:
        own = getattr(loaded, "split", None)
        if own is None or ratios is not None:
            return _assigned(loaded, label_text, splits, ratios, label, seed)
        sources = {str(own): loaded}
    names = _rename(list(sources), splits, label_text)
    return {target: _Part(src, sources[src].with_format("arrow"), None) for src, target in names.items()}


def _rename(available: list[str], splits: Sequence[str] | Mapping[str, str] | None, label_text: str) -> dict[str, str]:
    """Source split -> target name, checked (§5.1)."""
    if splits is None:
        chosen = {name: standard_split_name(name) for name in available}
    elif isinstance(splits, Mapping):
        chosen = dict(splits)
    else:
        if isinstance(splits, str):
            raise ValueError(f"splits must be a list of split names, got the string {splits!r}; write [{splits!r}]")
        chosen = {name: standard_split_name(name) for name in splits}
    unknown = [name for name in chosen if name not in available]
    if unknown:
        raise ValueError(f"{label_text} has no split(s) {unknown}; its splits are {available}")
    targets: dict[str, str] = {}
    for src, target in chosen.items():
        if not isinstance(target, str) or not spec.is_valid_name(target):
            raise IngestError(
                f"{label_text}: split {src!r} would be named {target!r}, which is not a valid h5ml split name "
                "(§5.1: no '/', no leading '.', '_' or whitespace); rename it with splits={source: name}",
                path=label_text,
            )
        if target in targets:
            raise IngestError(
                f"{label_text}: splits {targets[target]!r} and {src!r} both map to the h5ml split {target!r}; "
                "choose one with splits=[...] or rename one with splits={source: name}",
                path=label_text,
            )
        targets[target] = src
    return {src: target for target, src in targets.items()}


def _assigned(
    dataset: Any,
    label_text: str,
    splits: Sequence[str] | Mapping[str, str] | None,
    ratios: Mapping[str, float] | None,
    label: str | None,
    seed: int | None,
) -> dict[str, _Part]:
    """A Dataset without a split, cut by ratios (stratified on the label column), each part in row order."""
    if splits is not None:
        raise ValueError(
            f"{label_text} has no splits to choose from; splits= applies to a DatasetDict (use split_ratios=)"
        )
    ratios = dict(DEFAULT_SPLIT_RATIOS if ratios is None else ratios)
    for name in ratios:
        if not spec.is_valid_name(name):
            raise ValueError(f"split_ratios names the split {name!r}, which is not a valid h5ml split name (§5.1)")
    arrow = dataset.with_format("arrow")
    count = len(dataset)
    labels: list[str] | None = None
    column = label if label is not None else _first_classlabel(dataset)
    if column is not None:
        if column not in dataset.column_names:
            raise ValueError(
                f"label {column!r} is not a column of {label_text}; its columns are {dataset.column_names}"
            )
        labels = [str(v) for v in arrow[column].to_pylist()]
    chosen = np.asarray(assign_splits(count, ratios, 0 if seed is None else seed, labels), dtype=object)
    return {name: _Part(None, arrow, np.flatnonzero(chosen == name).astype(np.int64)) for name in ratios}


def _first_classlabel(dataset: Any) -> str | None:
    hf = _import_datasets()
    return next((name for name, f in dataset.features.items() if isinstance(f, hf.ClassLabel)), None)


# --------------------------------------------------------------------------
# columns


def _plan_columns(
    dataset: Any,
    columns: Sequence[str] | None,
    images: ImageMode,
    audio: AudioMode,
    label_text: str,
    split: str | None,
) -> tuple[_Column, ...]:
    """How each selected column is read; every unsupported feature type is refused before any row is read."""
    features = dataset.features
    names = list(features) if columns is None else list(columns)
    unknown = [n for n in names if n not in features]
    if unknown:
        raise ValueError(f"{label_text}: no column(s) {unknown}; the columns are {list(features)}")
    where = label_text if split is None else f"{label_text} split {split!r}"
    bad_names = [n for n in names if not spec.is_valid_name(n)]
    if bad_names:
        raise IngestError(
            f"{where}: column name(s) {bad_names} are not valid h5ml feature names (§5.2: no '/', no leading '.', "
            "'_' or whitespace); rename them with Dataset.rename_column, or leave them out with columns=",
            path=label_text,
        )
    planned: list[_Column] = []
    problems: list[str] = []
    for name in names:
        try:
            planned.append(_plan_column(name, features[name], images, audio))
        except _RowProblem as exc:
            problems.append(f"{name!r}: {exc.reason}")
    if problems:
        raise IngestError(
            f"{where}: h5ml cannot store column(s) {'; '.join(problems)}. Leave them out with columns=[...] "
            "(--columns), or turn them into supported columns first (Dataset.flatten, Dataset.map, cast_column)",
            path=label_text,
        )
    return tuple(planned)


def _plan_column(name: str, feature: Any, images: ImageMode, audio: AudioMode) -> _Column:
    hf = _import_datasets()
    if isinstance(feature, hf.ClassLabel):
        return _Column(name, "categorical", class_names=tuple(str(n) for n in feature.names))
    if isinstance(feature, hf.Value):
        kind = _value_kind(feature.dtype)
        if kind is None:
            raise _RowProblem(f"Value({feature.dtype!r}) has no h5ml encoding (numbers, strings and binary do)")
        return _Column(name, kind, dtype=feature.dtype if kind == "numeric" else None)
    if isinstance(feature, hf.Image):
        if images == "pixels":
            return _Column(name, "pixels", image_mode=feature.mode)
        return _Column(name, "media_bytes")
    if isinstance(feature, hf.Audio):
        if audio == "bytes":
            return _Column(name, "media_bytes")
        rate = None if feature.sampling_rate is None else float(feature.sampling_rate)
        return _Column(name, "audio", sample_rate=rate, channels=getattr(feature, "num_channels", None))
    arrays = tuple(getattr(hf, f"Array{d}D") for d in range(2, 6))
    if isinstance(feature, arrays):
        if _value_kind(feature.dtype) != "numeric":
            raise _RowProblem(f"{type(feature).__name__} of dtype {feature.dtype!r} is not numeric")
        dims = tuple(None if d is None else int(d) for d in feature.shape)
        if any(d is None for d in dims[1:]):
            raise _RowProblem(f"{type(feature).__name__} shape {feature.shape}: only the first axis may be None")
        return _Column(name, "nested", dtype=feature.dtype, dims=dims)
    lists = tuple(getattr(hf, n) for n in ("List", "LargeList", "Sequence") if isinstance(getattr(hf, n, None), type))
    if isinstance(feature, lists):
        dims_list: list[int | None] = []
        inner = feature
        while isinstance(inner, lists):
            length = getattr(inner, "length", -1)
            dims_list.append(None if length is None or length < 0 else int(length))
            inner = inner.feature
        if isinstance(inner, hf.Value) and _value_kind(inner.dtype) == "numeric":
            return _Column(name, "nested", dtype=inner.dtype, dims=tuple(dims_list))
        what = type(inner).__name__ + (f"({inner.dtype!r})" if isinstance(inner, hf.Value) else "")
        raise _RowProblem(f"a list of {what}; h5ml stores lists of numbers only (ragged, §6.3)")
    if isinstance(feature, dict):
        raise _RowProblem("a dict of features; split it into columns with Dataset.flatten()")
    raise _RowProblem(f"feature type {type(feature).__name__} has no h5ml encoding")


def _value_kind(dtype: str) -> _ColumnKind | None:
    if dtype in ("string", "large_string"):
        return "string"
    if dtype in ("binary", "large_binary"):
        return "binary"
    try:
        kind = np.dtype(_numpy_dtype(dtype)).kind
    except (TypeError, ValueError):  # timestamps, dates, decimals, null: no numpy dtype
        return None
    return "numeric" if kind in "biuf" else None


def _numpy_dtype(dtype: str) -> str:
    return {"float": "float32", "double": "float64", "halffloat": "float16"}.get(dtype, dtype)


def _declare(column: _Column) -> _Declaration:
    """The feature one planned column becomes (§6; see the module docstring)."""
    kind = column.kind
    if kind == "categorical":
        return _Declaration("categorical", class_names=column.class_names, role="target")
    if kind == "numeric":
        return _Declaration("dense", dtype=_numpy_dtype(column.dtype or "float64"))
    if kind == "string":
        return _Declaration("string")
    if kind == "binary":
        return _Declaration("bytes", media_type=_OCTET_STREAM)
    if kind == "nested":
        dtype = _numpy_dtype(column.dtype or "float64")
        fixed = [d for d in column.dims if d is not None]
        if len(fixed) == len(column.dims):
            return _Declaration("dense", dtype=dtype, sample_shape=tuple(fixed))
        if column.dims[0] is None and len(fixed) == len(column.dims) - 1:
            return _Declaration("ragged", dtype=dtype, sample_shape=tuple(fixed))
        return _Declaration("ragged", dtype=dtype, sample_ndim=len(column.dims))
    if kind == "media_bytes":
        return _Declaration("bytes", role="input", media_type=column.media_type)
    if kind == "pixels":
        if column.pixel_shape is not None:
            return _Declaration("dense", dtype=column.dtype, sample_shape=column.pixel_shape, role="input")
        return _Declaration("ragged", dtype=column.dtype, sample_ndim=2 if column.channels is None else 3, role="input")
    shape = () if (column.channels or 1) == 1 else (int(column.channels or 1),)
    return _Declaration("ragged", dtype="float32", sample_shape=shape, role="input", sample_rate=column.sample_rate)


def _apply_user_specs(
    declarations: dict[str, dict[str, _Declaration]], features: Mapping[str, FeatureSpec | Mapping[str, Any]] | None
) -> dict[str, dict[str, _Declaration]]:
    """Merge the caller's ``features=`` over the declarations; refuse keys that match nothing or change encodings."""
    table = SpecTable(features)
    out: dict[str, dict[str, _Declaration]] = {}
    for split, columns in declarations.items():
        out[split] = {}
        for name, decl in columns.items():
            user = table.get(split, name)
            table.mark_used(split, name)
            if user.encoding is not None and user.encoding != decl.encoding:
                raise ValueError(
                    f"features= gives {split}/{name} the encoding {user.encoding!r}, but the source column is stored "
                    f"as {decl.encoding!r}: the converter chooses encodings from the feature types (see "
                    "h5ml.ingest.hf); change the column's type in datasets first"
                )
            if user.class_names is not None and tuple(user.class_names) != decl.class_names:
                raise ValueError(
                    f"features= gives {split}/{name} class names; they come from the source's ClassLabel feature: "
                    "cast the column with datasets.ClassLabel(names=[...]) instead"
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
        raise ValueError(f"features= names {unused}, which match no converted column; the columns are {known}")
    return out


def _feature_kwargs(decl: _Declaration) -> dict[str, Any]:
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


# --------------------------------------------------------------------------
# reading rows


def _pa() -> Any:
    import pyarrow

    return pyarrow


def _iter_tables(
    part: _Part, size: int, names: Sequence[str] | None = None
) -> Iterator[tuple[npt.NDArray[np.int64], Any]]:
    """``(row numbers, pyarrow.Table)`` batches of a target split, in its order (only ``names`` when given)."""
    dataset = part.dataset if names is None else part.dataset.select_columns(list(names)).with_format("arrow")
    if part.rows is None:
        start = 0
        for table in dataset.iter(batch_size=size):
            yield np.arange(start, start + table.num_rows, dtype=np.int64), table
            start += table.num_rows
        return
    for i in range(0, part.rows.shape[0], size):
        chunk = part.rows[i : i + size]
        yield chunk, dataset[chunk.tolist()]


def _plain(table: Any) -> dict[str, Any]:
    """Column name -> one pyarrow array (chunks combined, extension arrays as their storage)."""
    pa = _pa()
    out: dict[str, Any] = {}
    for name in table.column_names:
        array = table.column(name).combine_chunks()
        if isinstance(array, pa.ExtensionArray):
            array = array.storage
        out[name] = array
    return out


def _media_fields(array: Any) -> tuple[Any, Any]:
    """The ``bytes`` and ``path`` arrays of an Image/Audio struct array (null where the struct is null)."""
    fields = dict(zip([f.name for f in array.type], array.flatten(), strict=True))
    return fields["bytes"], fields["path"]


def _media_blobs(array: Any) -> tuple[list[bytes | None], list[str | None]]:
    """The ``bytes`` and ``path`` fields of an Image/Audio struct array, as Python lists."""
    blobs, paths = _media_fields(array)
    return blobs.to_pylist(), paths.to_pylist()


def _media_data(blob: bytes | None, path: str | None) -> bytes:
    """The encoded file of one Image/Audio value: its bytes, or the file at its path.

    Raises
    ------
    _RowProblem
        If the value is null, or only names a file that cannot be read.
    """
    if blob is not None:
        return blob
    if path is None:
        raise _RowProblem("is null (no file): h5ml features have no missing values")
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise _RowProblem(f"holds no bytes and its file cannot be read ({exc.strerror or exc})", path) from None


# --------------------------------------------------------------------------
# looking at media before converting


def _settle_media(parts: Mapping[str, _Part], label_text: str) -> None:
    """Fix what media columns need before the features are declared: media types, pixel shapes, sample rates.

    Every target split gets the same answer for a column (its feature looks
    the same in every split). Unreadable files are passed over here: they are
    reported when their rows are converted.
    """
    kinds = {c.name: c.kind for p in parts.values() for c in p.columns}
    settled: dict[str, dict[str, Any]] = {}
    for name, kind in kinds.items():
        holders = [p for p in parts.values() if any(c.name == name for c in p.columns)]
        first = next(c for c in holders[0].columns if c.name == name)
        if kind == "media_bytes":
            settled[name] = {"media_type": _scan_media_types(holders, name)}
        elif kind == "pixels":
            settled[name] = _scan_pixels(holders, first)
        elif kind == "audio":
            settled[name] = _scan_audio(holders, first, label_text)
    for part in parts.values():
        part.columns = tuple(replace(c, **settled[c.name]) if c.name in settled else c for c in part.columns)


def _scan_media_types(parts: Sequence[_Part], name: str) -> str:
    """The one media type of every file of a column, or ``application/octet-stream`` when they differ or none tells."""
    pc = _pa().compute
    found: set[str | None] = set()
    for part in parts:
        for _, table in _iter_tables(part, _SCAN_ROWS, [name]):
            blobs, path_array = _media_fields(_plain(table)[name])
            heads = pc.binary_slice(blobs, 0, _SIGNATURE_BYTES).to_pylist()
            paths = path_array.to_pylist()
            for head, path in zip(heads, paths, strict=True):
                if head is not None or path is not None:
                    found.add(media_type_of(head, path))
            if len(found) > 1:
                return _OCTET_STREAM
    media = next(iter(found), None)
    return media or _OCTET_STREAM


def _scan_pixels(parts: Sequence[_Part], column: _Column) -> dict[str, Any]:
    """Read every image's header: the dtype and channels of the first, and the shape when all share one."""
    from PIL import Image

    signature: tuple[str, int | None] | None = _mode_signature(column.image_mode) if column.image_mode else None
    shape: tuple[int, int] | None = None
    same = True
    for part in parts:
        for _, table in _iter_tables(part, MEDIA_BATCH_SIZE, [column.name]):
            blobs, paths = _media_blobs(_plain(table)[column.name])
            for blob, path in zip(blobs, paths, strict=True):
                try:
                    data = _media_data(blob, path)
                    with Image.open(io.BytesIO(data)) as image:
                        mode = column.image_mode or _natural_mode(image)
                        size = (int(image.height), int(image.width))
                    this = _mode_signature(mode)
                except Exception:
                    continue
                if signature is None:
                    signature = this
                if this != signature:
                    continue
                if shape is None:
                    shape = size
                same = same and size == shape
    dtype, channels = signature if signature is not None else ("uint8", 3)
    pixel_shape = None if shape is None or not same else (*shape, *(() if channels is None else (channels,)))
    return {"dtype": dtype, "channels": channels, "pixel_shape": pixel_shape}


def _natural_mode(image: Any) -> str:
    """The mode pixels are stored in when none is asked for: the image's own; palettes become RGB or RGBA."""
    mode = str(image.mode)
    if mode == "P":
        return "RGBA" if "transparency" in image.info else "RGB"
    if mode == "PA":
        return "RGBA"
    return mode


@functools.cache
def _mode_signature(mode: str) -> tuple[str, int | None]:
    """``(numpy dtype name, channels or None)`` of the arrays Pillow gives for images of ``mode``."""
    from PIL import Image

    sample = np.asarray(Image.new(mode, (1, 1)))
    return sample.dtype.newbyteorder("=").name, (int(sample.shape[2]) if sample.ndim == 3 else None)


def _scan_audio(parts: Sequence[_Part], column: _Column, label_text: str) -> dict[str, Any]:
    """The sample rate and channels of the first readable file, unless the Audio feature declares them."""
    import soundfile

    rate, channels = column.sample_rate, column.channels
    if rate is not None and channels is not None:
        return {}
    for part in parts:
        for _, table in _iter_tables(part, MEDIA_BATCH_SIZE, [column.name]):
            blobs, paths = _media_blobs(_plain(table)[column.name])
            for blob, path in zip(blobs, paths, strict=True):
                try:
                    info = soundfile.info(io.BytesIO(_media_data(blob, path)))
                except Exception:
                    continue
                return {
                    "sample_rate": float(info.samplerate) if rate is None else rate,
                    "channels": int(info.channels) if channels is None else channels,
                }
    if rate is None and any(p.count for p in parts):
        raise IngestError(
            f"{label_text}: no file of the Audio column {column.name!r} can be read by soundfile, so its sample "
            "rate is unknown; check the files (or leave the column out with columns=, or keep the encoded files "
            "with audio='bytes')",
            path=label_text,
        )
    return {"sample_rate": rate or 1.0, "channels": channels or 1}


# --------------------------------------------------------------------------
# converting a batch (module level: runs in worker processes)


def _convert_task(
    columns: tuple[_Column, ...], label: str, split: str | None, task: tuple[npt.NDArray[np.int64], Any]
) -> _Converted:
    """Convert one batch; ``task`` is ``(row numbers, arrays or their packed bytes)``."""
    rows, payload = task
    arrays = payload
    n = int(rows.shape[0])
    values: dict[str, Any] = {}
    bad: dict[int, tuple[str, _RowProblem]] = {}
    for column in columns:
        converted, problems = _CONVERTERS[column.kind](column, arrays[column.name])
        values[column.name] = converted
        for pos, problem in problems.items():
            bad.setdefault(pos, (column.name, problem))
    where = label if split is None else f"{label}:{split}"
    result = _Converted(values, n - len(bad))
    for pos in sorted(bad):
        name, problem = bad[pos]
        media = f" (file {problem.media_path})" if problem.media_path else ""
        result.problems.append(
            (int(rows[pos]), Skipped(f"{where}[{int(rows[pos])}]", f"column {name!r}{media} {problem.reason}"))
        )
    if bad:
        keep = np.ones(n, dtype=bool)
        keep[list(bad)] = False
        result.values = {
            name: v[keep] if isinstance(v, np.ndarray) else [x for x, k in zip(v, keep.tolist(), strict=True) if k]
            for name, v in values.items()
        }
    return result


_Problems = dict[int, _RowProblem]


def _null_rows(array: Any) -> list[int]:
    if not array.null_count:
        return []
    return np.flatnonzero(array.is_null().to_numpy(zero_copy_only=False)).tolist()


def _categorical(column: _Column, array: Any) -> tuple[Any, _Problems]:
    codes = np.array(array.fill_null(-1).to_numpy(zero_copy_only=False), dtype=np.int64)
    count = len(column.class_names or ())
    problems = {
        int(i): _RowProblem(f"holds the code {int(codes[i])}, outside [-1, {count}) of its {count} class names")
        for i in np.flatnonzero((codes < -1) | (codes >= count))
    }
    codes[list(problems)] = -1
    return codes, problems


def _numeric(column: _Column, array: Any) -> tuple[Any, _Problems]:
    problems = {i: _RowProblem(_NULL_REASON) for i in _null_rows(array)}
    if problems:
        array = array.fill_null(False if _pa().types.is_boolean(array.type) else 0)
    return np.asarray(array.to_numpy(zero_copy_only=False), dtype=_numpy_dtype(column.dtype or "float64")), problems


_NULL_REASON: Final = "is null (missing); h5ml has no missing values except categorical -1: fill them (Dataset.map)"


def _string(column: _Column, array: Any) -> tuple[Any, _Problems]:
    items = array.to_pylist()
    problems: _Problems = {}
    for i, item in enumerate(items):
        problem = _NULL_REASON if item is None else text_problem(item)
        if problem:
            problems[i] = _RowProblem(problem)
            items[i] = ""
    return items, problems


def _binary(column: _Column, array: Any) -> tuple[Any, _Problems]:
    items = array.to_pylist()
    problems = {i: _RowProblem(_NULL_REASON) for i, item in enumerate(items) if item is None}
    return [b"" if item is None else item for item in items], problems


def _has_nested_nulls(array: Any, levels: int) -> bool:
    current = array
    for _ in range(levels):
        if current.null_count:
            return True
        current = current.flatten()
    return bool(current.null_count)


def _levels(array: Any, levels: int) -> tuple[list[npt.NDArray[np.int64]], npt.NDArray[Any]]:
    """Offsets of each list level (each starting at 0) and the leaf values of a null-free nested list array."""
    pa = _pa()
    offsets: list[npt.NDArray[np.int64]] = []
    current = array
    for _ in range(levels):
        if pa.types.is_fixed_size_list(current.type):
            offsets.append(np.arange(len(current) + 1, dtype=np.int64) * int(current.type.list_size))
        else:
            raw = np.asarray(current.offsets, dtype=np.int64)
            offsets.append(raw - raw[0])
        current = current.flatten()
    return offsets, current.to_numpy(zero_copy_only=False)


def _row_shape(offsets: Sequence[npt.NDArray[np.int64]], row: int) -> tuple[list[int], int, int] | None:
    """Shape of row ``row`` and its span of leaf values; None when a level is not rectangular."""
    lo, hi = row, row + 1
    shape: list[int] = []
    for level in offsets:
        lengths = level[lo + 1 : hi + 1] - level[lo:hi]
        if lengths.size and (lengths != lengths[0]).any():
            return None
        shape.append(int(lengths[0]) if lengths.size else 0)
        lo, hi = int(level[lo]), int(level[hi])
    return shape, lo, hi


def _nested(column: _Column, array: Any) -> tuple[Any, _Problems]:
    """Lists of numbers -> dense ``(n, *dims)`` or a list of ragged samples (§6.2, §6.3)."""
    dims = column.dims
    dtype = np.dtype(_numpy_dtype(column.dtype or "float64"))
    n = len(array)
    problems: _Problems = {}
    if _has_nested_nulls(array, len(dims)):
        return _nested_slow(column, array.to_pylist(), dtype)
    offsets, leaf = _levels(array, len(dims))
    leaf = leaf.astype(dtype, copy=False)
    ragged_rows = dims[0] is None and all(d is not None for d in dims[1:])
    if ragged_rows or all(d is not None for d in dims):
        inner = [int(d) for d in dims[1:] if d is not None]
        uniform = all((np.diff(level) == d).all() for level, d in zip(offsets[1:], inner, strict=True))
        if uniform:
            rows = leaf.reshape(-1, *inner)
            first = offsets[0]
            if dims[0] is not None:
                wrong = np.flatnonzero(np.diff(first) != dims[0])
                if wrong.size == 0:
                    return rows.reshape(n, *[int(d) for d in dims if d is not None]), problems
            else:
                return [rows[int(first[i]) : int(first[i + 1])] for i in range(n)], problems
    samples: list[npt.NDArray[Any]] = []
    for i in range(n):
        found = _row_shape(offsets, i)
        problem = _shape_problem(found[0] if found else None, dims)
        if problem or found is None:
            problems[i] = _RowProblem(problem or "is not rectangular: its inner lists differ in length")
            samples.append(np.zeros([d or 0 for d in dims], dtype=dtype))
            continue
        shape, lo, hi = found
        samples.append(leaf[lo:hi].reshape(shape))
    return _nested_result(samples, dims), problems


def _shape_problem(shape: list[int] | None, dims: tuple[int | None, ...]) -> str | None:
    if shape is None:
        return "is not rectangular: its inner lists differ in length"
    wrong = [(k, s, d) for k, (s, d) in enumerate(zip(shape, dims, strict=True)) if d is not None and s != d and s]
    if wrong:
        k, s, d = wrong[0]
        return f"has {s} values along axis {k}, where the feature declares {d}"
    return None


def _nested_slow(column: _Column, items: list[Any], dtype: np.dtype[Any]) -> tuple[Any, _Problems]:
    """The rows of a nested list column with nulls, one by one."""
    dims = column.dims
    problems: _Problems = {}
    samples: list[npt.NDArray[Any]] = []
    for i, item in enumerate(items):
        array: npt.NDArray[Any] | None = None
        if item is None or _holds_none(item):
            problems[i] = _RowProblem(_NULL_REASON)
        else:
            try:
                array = np.asarray(item, dtype=dtype)
            except ValueError:
                problems[i] = _RowProblem("is not rectangular: its inner lists differ in length")
        if array is not None and array.ndim != len(dims):
            array = None if array.size else np.zeros([d or 0 for d in dims], dtype=dtype)
            if array is None:
                problems[i] = _RowProblem("is not rectangular: its inner lists differ in length")
        if array is not None:
            problem = _shape_problem(list(array.shape), dims)
            if problem:
                problems[i] = _RowProblem(problem)
                array = None
        samples.append(np.zeros([d or 0 for d in dims], dtype=dtype) if array is None else array)
    return _nested_result(samples, dims), problems


def _holds_none(item: Any) -> bool:
    if item is None:
        return True
    return isinstance(item, list) and any(_holds_none(x) for x in item)


def _nested_result(samples: list[npt.NDArray[Any]], dims: tuple[int | None, ...]) -> Any:
    if all(d is not None for d in dims):
        shape = tuple(int(d or 0) for d in dims)
        return np.stack(samples) if samples else np.empty((0, *shape))
    return samples


def _media_bytes(column: _Column, array: Any) -> tuple[Any, _Problems]:
    blobs, paths = _media_blobs(array)
    out: list[bytes] = []
    problems: _Problems = {}
    for i, (blob, path) in enumerate(zip(blobs, paths, strict=True)):
        try:
            out.append(_media_data(blob, path))
        except _RowProblem as exc:
            problems[i] = exc
            out.append(b"")
    return out, problems


def _pixels(column: _Column, array: Any) -> tuple[Any, _Problems]:
    from PIL import Image

    blobs, paths = _media_blobs(array)
    out: list[npt.NDArray[Any]] = []
    problems: _Problems = {}
    channels = () if column.channels is None else (column.channels,)
    for i, (blob, path) in enumerate(zip(blobs, paths, strict=True)):
        pixels: npt.NDArray[Any] | None = None
        try:
            data = _media_data(blob, path)
            try:
                with Image.open(io.BytesIO(data)) as image:
                    mode = column.image_mode or _natural_mode(image)
                    pixels = np.asarray(image if image.mode == mode else image.convert(mode))
            except Exception as exc:
                raise _RowProblem(f"cannot be decoded by Pillow ({type(exc).__name__}: {exc})", path) from None
            if pixels.dtype.newbyteorder("=").name != column.dtype or pixels.shape[2:] != channels:
                raise _RowProblem(
                    f"decodes to {pixels.dtype} pixels of shape {pixels.shape}, but the column's first image gave "
                    f"{column.dtype} (H, W{', ' + str(column.channels) if channels else ''}); give every image one "
                    "mode with cast_column(name, Image(mode='RGB')) or keep the files with images='bytes'",
                    path,
                )
            if column.pixel_shape is not None and pixels.shape != column.pixel_shape:
                raise _RowProblem(f"has shape {pixels.shape}, not {column.pixel_shape}", path)
        except _RowProblem as exc:
            problems[i] = exc
            pixels = None
        out.append(pixels if pixels is not None else np.zeros(column.pixel_shape or (0, 0, *channels), column.dtype))
    if column.pixel_shape is not None:
        return (np.stack(out) if out else np.empty((0, *column.pixel_shape), column.dtype)), problems
    return out, problems


def _audio(column: _Column, array: Any) -> tuple[Any, _Problems]:
    import soundfile

    blobs, paths = _media_blobs(array)
    out: list[npt.NDArray[np.float32]] = []
    problems: _Problems = {}
    channels = column.channels or 1
    empty = np.zeros((0,) if channels == 1 else (0, channels), dtype=np.float32)
    for i, (blob, path) in enumerate(zip(blobs, paths, strict=True)):
        try:
            data = _media_data(blob, path)
            try:
                samples, rate = soundfile.read(io.BytesIO(data), dtype="float32", always_2d=False)
            except Exception as exc:
                raise _RowProblem(f"cannot be decoded by soundfile ({type(exc).__name__}: {exc})", path) from None
            found = 1 if samples.ndim == 1 else int(samples.shape[1])
            if column.sample_rate is not None and float(rate) != column.sample_rate:
                raise _RowProblem(
                    f"is recorded at {rate} Hz but the column's sample rate is {column.sample_rate:g} Hz (from the "
                    "Audio feature or its first file); h5ml does not resample: resample the files first",
                    path,
                )
            if found != channels:
                raise _RowProblem(f"has {found} channel(s) but the column's first file has {channels}", path)
            out.append(np.ascontiguousarray(samples))
        except _RowProblem as exc:
            problems[i] = exc
            out.append(empty)
    return out, problems


_CONVERTERS: Final[dict[str, Callable[[_Column, Any], tuple[Any, _Problems]]]] = {
    "categorical": _categorical,
    "numeric": _numeric,
    "string": _string,
    "binary": _binary,
    "nested": _nested,
    "media_bytes": _media_bytes,
    "pixels": _pixels,
    "audio": _audio,
}


# --------------------------------------------------------------------------
# writing


def _write_split(
    writer: Writer,
    name: str,
    part: _Part,
    label: str,
    size: int,
    workers: int,
    on_error: OnError,
    report: IngestReport,
    bar: Any,
    task: Any,
) -> int:
    """Convert and append one target split's rows in order; return the samples written."""
    convert = functools.partial(_convert_task, part.columns, label, part.source_split)
    names = [c.name for c in part.columns]
    tasks = ((rows, arrays) for rows, table in _iter_tables(part, size, names) for arrays in (_plain(table),))
    count = 0
    for _, outcome in ordered_map(convert, tasks, workers):
        if isinstance(outcome, Exception):
            raise outcome
        result = outcome
        for row, problem in result.problems:
            if on_error == "stop":
                raise IngestError(
                    f"{problem.path}: {problem.reason} (row {row}, going to split {name!r}); nothing was written to "
                    f"{writer.path}. Fix or drop that row (Dataset.filter, Dataset.map), or skip bad rows with "
                    "on_error='skip' (--on-error skip)",
                    path=problem.path,
                )
            report.skipped.append(problem)
        if result.count:
            writer.append(name, result.values)
            count += result.count
        if bar is not None:
            bar.advance(task, result.count + len(result.problems))
    return count
