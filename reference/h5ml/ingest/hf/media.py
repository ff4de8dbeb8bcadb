"""Reading a Hugging Face dataset's rows, and its media files: media types, pixel shapes, sample rates (§6.6).

Rows are read through the Arrow format in batches (:func:`iter_tables`), so
images and audio are never decoded by ``datasets``; an Image or Audio value
is its encoded file (:func:`media_data`). Before the features are declared,
:func:`settle_media` reads what each media column needs: the one media type
of its files (:func:`media_type_of`), the pixel shape of its images, the
sample rate of its audio.
"""

from __future__ import annotations

import functools
import io
import mimetypes
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from h5ml.errors import IngestError
from h5ml.ingest.hf.columns import OCTET_STREAM, Column, RowProblem
from h5ml.ingest.hf.source import Part
from h5ml.reader.imagecodec import IMAGE_MEDIA_TYPES, sniff_image_format

__all__ = [
    "DEFAULT_BATCH_SIZE",
    "MEDIA_BATCH_SIZE",
    "iter_tables",
    "media_blobs",
    "media_data",
    "media_type_of",
    "mode_signature",
    "natural_mode",
    "plain_arrays",
    "pyarrow_module",
    "settle_media",
]

#: Rows per batch of a dataset without Image or Audio columns.
DEFAULT_BATCH_SIZE: Final = 1024
#: Rows per batch of a dataset with Image or Audio columns (their rows are large).
MEDIA_BATCH_SIZE: Final = 64
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


def pyarrow_module() -> Any:
    """The ``pyarrow`` package (imported on first use: ``datasets`` needs it)."""
    import pyarrow

    return pyarrow


def iter_tables(
    part: Part, size: int, names: Sequence[str] | None = None
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


def plain_arrays(table: Any) -> dict[str, Any]:
    """Column name -> one pyarrow array (chunks combined, extension arrays as their storage)."""
    pa = pyarrow_module()
    out: dict[str, Any] = {}
    for name in table.column_names:
        array = table.column(name).combine_chunks()
        if isinstance(array, pa.ExtensionArray):
            array = array.storage
        out[name] = array
    return out


def media_fields(array: Any) -> tuple[Any, Any]:
    """The ``bytes`` and ``path`` arrays of an Image/Audio struct array (null where the struct is null)."""
    fields = dict(zip([f.name for f in array.type], array.flatten(), strict=True))
    return fields["bytes"], fields["path"]


def media_blobs(array: Any) -> tuple[list[bytes | None], list[str | None]]:
    """The ``bytes`` and ``path`` fields of an Image/Audio struct array, as Python lists."""
    blobs, paths = media_fields(array)
    return blobs.to_pylist(), paths.to_pylist()


def media_data(blob: bytes | None, path: str | None) -> bytes:
    """The encoded file of one Image/Audio value: its bytes, or the file at its path.

    Raises
    ------
    RowProblem
        If the value is null, or only names a file that cannot be read.
    """
    if blob is not None:
        return blob
    if path is None:
        raise RowProblem("is null (no file): h5ml features have no missing values")
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise RowProblem(f"holds no bytes and its file cannot be read ({exc.strerror or exc})", path) from None


def settle_media(parts: Mapping[str, Part], label_text: str) -> None:
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


def _scan_media_types(parts: Sequence[Part], name: str) -> str:
    """The one media type of every file of a column, or ``application/octet-stream`` when they differ or none tells."""
    pc = pyarrow_module().compute
    found: set[str | None] = set()
    for part in parts:
        for _, table in iter_tables(part, _SCAN_ROWS, [name]):
            blobs, path_array = media_fields(plain_arrays(table)[name])
            heads = pc.binary_slice(blobs, 0, _SIGNATURE_BYTES).to_pylist()
            paths = path_array.to_pylist()
            for head, path in zip(heads, paths, strict=True):
                if head is not None or path is not None:
                    found.add(media_type_of(head, path))
            if len(found) > 1:
                return OCTET_STREAM
    media = next(iter(found), None)
    return media or OCTET_STREAM


def _scan_pixels(parts: Sequence[Part], column: Column) -> dict[str, Any]:
    """Read every image's header: the dtype and channels of the first, and the shape when all share one."""
    from PIL import Image

    signature: tuple[str, int | None] | None = mode_signature(column.image_mode) if column.image_mode else None
    shape: tuple[int, int] | None = None
    same = True
    for part in parts:
        for _, table in iter_tables(part, MEDIA_BATCH_SIZE, [column.name]):
            blobs, paths = media_blobs(plain_arrays(table)[column.name])
            for blob, path in zip(blobs, paths, strict=True):
                try:
                    data = media_data(blob, path)
                    with Image.open(io.BytesIO(data)) as image:
                        mode = column.image_mode or natural_mode(image)
                        size = (int(image.height), int(image.width))
                    this = mode_signature(mode)
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


def natural_mode(image: Any) -> str:
    """The mode pixels are stored in when none is asked for: the image's own; palettes become RGB or RGBA."""
    mode = str(image.mode)
    if mode == "P":
        return "RGBA" if "transparency" in image.info else "RGB"
    if mode == "PA":
        return "RGBA"
    return mode


@functools.cache
def mode_signature(mode: str) -> tuple[str, int | None]:
    """``(numpy dtype name, channels or None)`` of the arrays Pillow gives for images of ``mode``."""
    from PIL import Image

    sample = np.asarray(Image.new(mode, (1, 1)))
    return sample.dtype.newbyteorder("=").name, (int(sample.shape[2]) if sample.ndim == 3 else None)


def _scan_audio(parts: Sequence[Part], column: Column, label_text: str) -> dict[str, Any]:
    """The sample rate and channels of the first readable file, unless the Audio feature declares them."""
    import soundfile

    rate, channels = column.sample_rate, column.channels
    if rate is not None and channels is not None:
        return {}
    for part in parts:
        for _, table in iter_tables(part, MEDIA_BATCH_SIZE, [column.name]):
            blobs, paths = media_blobs(plain_arrays(table)[column.name])
            for blob, path in zip(blobs, paths, strict=True):
                try:
                    info = soundfile.info(io.BytesIO(media_data(blob, path)))
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
