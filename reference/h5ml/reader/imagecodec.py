"""Encoded images (PNG, JPEG, GIF, BMP, TIFF, WebP) as uint8 pixel arrays, and their media types (§6.2, §6.3, §6.6).

A ``bytes`` feature (§6.6) can hold encoded image files as they were, with a
``media_type`` such as ``image/png``; :func:`decode_image` turns one sample
of it into the array a model takes. A split source read by the framework
adapters (``decode_images=``, :class:`h5ml.reader.source.SplitSource`)
decodes what it reads with :func:`decode_column`, the features that
:func:`images_to_decode` chooses. The image-folder converter
(:mod:`h5ml.ingest.images`) decodes files with the same function
(:func:`image_to_array`), so an image stored as bytes and decoded later gives
the same pixels as the one decoded at conversion time.

Each sample's format is told from its own bytes (:func:`sniff_image_format`,
then Pillow), not from the feature's ``media_type``: a feature mixing PNG and
JPEG files, which §6.6 leaves without a media type (read as
``application/octet-stream``), decodes sample by sample. ``decode_images=True``
takes such a feature when its first sample is an image of the six formats; a
later sample that is none is an :class:`h5ml.errors.EncodingError` naming
the file, split, feature and sample index.

Pixel convention: a ``numpy.uint8`` array of shape ``(H, W, C)``, rows top
to bottom, columns left to right, channels in the order of the colour mode:

=========  ===  ===================================================
color      C    channels
=========  ===  ===================================================
``"RGB"``  3    red, green, blue (an alpha channel is dropped)
``"RGBA"`` 4    red, green, blue, alpha (opaque images get alpha 255)
``"L"``    1    luma (ITU-R 601-2: L = R * 299/1000 + G * 587/1000 + B * 114/1000)
``"LA"``   2    luma, alpha
``"keep"`` 1-4  the file's own channels: grayscale -> L, grayscale with
                alpha -> LA, colour -> RGB, colour with alpha (or a
                palette with a transparent entry) -> RGBA; 1-bit images
                become L (0 and 255); CMYK, YCbCr, LAB and HSV become RGB
=========  ===  ===================================================

Only 8-bit images decode: Pillow would clip 16-bit or float pixels to
[0, 255], so those are refused (store such files with ``mode="bytes"`` and
decode them with Pillow yourself). Multi-frame files (animated GIF or WebP,
multi-page TIFF) give their first frame. The EXIF orientation tag is not
applied (as Pillow and torchvision's ``ImageFolder`` do not). Only the six
formats above are tried, so bytes of other formats (PostScript, which Pillow
hands to Ghostscript, among them) are never decoded (§10).

Pillow is imported inside the functions that need it, so ``import h5ml``
does not need Pillow.
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

import numpy as np
import numpy.typing as npt

from h5ml.errors import EncodingError

if TYPE_CHECKING:
    from PIL import Image

__all__ = [
    "COLORS",
    "IMAGE_FORMATS",
    "IMAGE_MEDIA_TYPES",
    "OCTET_STREAM",
    "SNIFF_BYTES",
    "convert_image",
    "decode_column",
    "decode_image",
    "image_to_array",
    "images_to_decode",
    "pillow_reason",
    "sniff_image_format",
    "untyped_features",
]

#: The ``color`` values :func:`image_to_array` and :func:`decode_image` take.
COLORS: Final = ("RGB", "RGBA", "L", "LA", "keep")
#: Pillow format name -> IANA media type (§6.6) of the formats this module decodes.
IMAGE_MEDIA_TYPES: Final[Mapping[str, str]] = {
    "PNG": "image/png",
    "JPEG": "image/jpeg",
    "GIF": "image/gif",
    "BMP": "image/bmp",
    "TIFF": "image/tiff",
    "WEBP": "image/webp",
}
#: The Pillow formats that :func:`decode_image` tries, in this order.
IMAGE_FORMATS: Final = tuple(IMAGE_MEDIA_TYPES)
#: Bytes needed by :func:`sniff_image_format`.
SNIFF_BYTES: Final = 12
#: The media type of bytes that say nothing of their format, and of a ``bytes`` feature without one (§6.6).
OCTET_STREAM: Final = "application/octet-stream"

#: Pillow modes of 8-bit images -> the mode ``color="keep"`` converts them to.
_KEEP: Final[Mapping[str, str]] = {
    "1": "L",
    "L": "L",
    "LA": "LA",
    "La": "LA",
    "P": "RGB",  # "RGBA" when the palette has a transparent entry (see _target_mode)
    "PA": "RGBA",
    "RGB": "RGB",
    "RGBX": "RGB",
    "RGBA": "RGBA",
    "RGBa": "RGBA",
    "CMYK": "RGB",
    "YCbCr": "RGB",
    "LAB": "RGB",
    "HSV": "RGB",
}
_CHANNELS: Final[Mapping[str, int]] = {"L": 1, "LA": 2, "RGB": 3, "RGBA": 4}


def sniff_image_format(head: bytes) -> str | None:
    """Name the image format of a file from its first bytes (its signature), without Pillow.

    Parameters
    ----------
    head
        The first bytes of the file; :data:`SNIFF_BYTES` (12) are enough.

    Returns
    -------
    str or None
        One of :data:`IMAGE_FORMATS` (``"PNG"``, ``"JPEG"``, ``"GIF"``,
        ``"BMP"``, ``"TIFF"``, ``"WEBP"``), or None when the bytes start no
        file of those formats. Map it to a media type with
        :data:`IMAGE_MEDIA_TYPES`.
    """
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "PNG"
    if head.startswith(b"\xff\xd8\xff"):
        return "JPEG"
    if head[:6] in (b"GIF87a", b"GIF89a"):
        return "GIF"
    if head.startswith(b"BM"):
        return "BMP"
    if head[:4] in (b"II*\x00", b"MM\x00*", b"II+\x00", b"MM\x00+"):  # TIFF and BigTIFF, either byte order
        return "TIFF"
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "WEBP"
    return None


def _target_mode(image: Image.Image, color: str) -> str:
    """The Pillow mode an image is converted to for ``color``; EncodingError for images that are not 8-bit."""
    if image.mode not in _KEEP:
        raise EncodingError(
            f"the image has Pillow mode {image.mode!r} (16-bit, 32-bit or floating-point pixels), which does not fit "
            "uint8 without losing values; convert the file to 8 bits, or keep it encoded (mode='bytes') and decode "
            "it with Pillow yourself"
        )
    if color != "keep":
        return color
    if image.mode == "P" and "transparency" in image.info:
        return "RGBA"
    return _KEEP[image.mode]


def convert_image(image: Image.Image, color: str = "RGB") -> Image.Image:
    """Return a loaded Pillow image in the 8-bit Pillow mode of ``color`` (``L``, ``LA``, ``RGB`` or ``RGBA``).

    Parameters
    ----------
    image
        A ``PIL.Image.Image`` of an 8-bit mode, already loaded.
    color
        One of :data:`COLORS` (see the module's table).

    Returns
    -------
    PIL.Image.Image
        ``image`` itself when it already has that mode, else a converted copy.

    Raises
    ------
    ValueError
        If ``color`` is not one of :data:`COLORS`.
    EncodingError
        If the image is not 8-bit (Pillow modes ``I``, ``I;16``, ``F``, ...),
        whose values uint8 cannot hold.
    """
    if color not in COLORS:
        raise ValueError(f"color must be one of {list(COLORS)}, got {color!r}")
    mode = _target_mode(image, color)
    if image.mode == "P" and "transparency" in image.info:
        image = image.convert("RGBA")  # Pillow wants palette transparency resolved through RGBA first
    elif image.mode in ("La", "LAB"):
        image = image.convert(_KEEP[image.mode])  # Pillow converts these to LA and RGB only
    return image if image.mode == mode else image.convert(mode)


def image_to_array(image: Image.Image, color: str = "RGB") -> npt.NDArray[np.uint8]:
    """Convert a loaded Pillow image to a uint8 ``(H, W, C)`` array in the colour mode ``color``.

    Parameters
    ----------
    image
        A ``PIL.Image.Image`` of an 8-bit mode, already loaded.
    color
        One of :data:`COLORS` (see the module's table): ``"RGB"`` (C = 3),
        ``"RGBA"`` (4), ``"L"`` (1), ``"LA"`` (2) or ``"keep"`` (the
        image's own channels).

    Returns
    -------
    numpy.ndarray
        uint8, shape ``(H, W, C)``, C-contiguous, owning its memory.

    Raises
    ------
    ValueError, EncodingError
        As :func:`convert_image`.
    """
    converted = convert_image(image, color)
    array = np.array(converted, dtype=np.uint8)
    return array.reshape(converted.height, converted.width, _CHANNELS[converted.mode])


def decode_image(
    data: bytes | bytearray | memoryview | npt.NDArray[np.uint8], color: str = "RGB", *, where: str | None = None
) -> npt.NDArray[np.uint8]:
    """Decode one encoded image (a sample of a ``bytes`` feature, §6.6) to a uint8 ``(H, W, C)`` array.

    Parameters
    ----------
    data
        The encoded file: PNG, JPEG, GIF, BMP, TIFF or WebP, as ``bytes`` (what
        the reader returns for a bytes feature) or a 1-D uint8 array.
    color
        The colour mode of the result, one of :data:`COLORS` (default
        ``"RGB"``; see the module's table).
    where
        Where the bytes come from (``"data.h5:/train/image sample 7"``),
        named in the error message.

    Returns
    -------
    numpy.ndarray
        uint8, shape ``(H, W, C)`` with C = 3 for ``"RGB"``, 4 for ``"RGBA"``,
        1 for ``"L"``, 2 for ``"LA"``; the first frame of a multi-frame file.
        The pixels are Pillow's decoding of the file, converted to ``color``.

    Raises
    ------
    ValueError
        If ``color`` is not one of :data:`COLORS`.
    EncodingError
        If the bytes are not a complete image of the six formats (empty,
        truncated, corrupt, another format), or the image is not 8-bit. The
        message names ``where``, the size and first bytes of the data and
        Pillow's reason.
    """
    from PIL import Image

    if color not in COLORS:
        raise ValueError(f"color must be one of {list(COLORS)}, got {color!r}")
    raw = data.tobytes() if isinstance(data, np.ndarray) else bytes(data)
    label = f"{where}: " if where else ""
    try:
        with Image.open(io.BytesIO(raw), formats=IMAGE_FORMATS) as image:
            image.load()
            return image_to_array(image, color)
    except EncodingError as exc:
        raise EncodingError(f"{label}{exc}") from exc
    except Exception as exc:  # Pillow's plugins raise OSError, SyntaxError, ValueError, EOFError, ... for bad data
        fmt = sniff_image_format(raw[:SNIFF_BYTES])
        kind = (
            f"a {fmt} file that Pillow cannot decode"
            if fmt
            else f"not an image file of the formats h5ml decodes ({', '.join(IMAGE_FORMATS)})"
        )
        raise EncodingError(
            f"{label}the {len(raw)} bytes starting {raw[:SNIFF_BYTES]!r} are {kind}: "
            f"{pillow_reason(exc)}. Check that the feature holds images (its media_type) and that the file was "
            "stored whole"
        ) from exc


def _untyped(media_type: str | None) -> bool:
    """Whether a media type says nothing of the samples' format: absent, ``application/octet-stream`` (§6.6)."""
    return media_type is None or media_type.split(";")[0].strip().lower() == OCTET_STREAM


def images_to_decode(
    decode: bool | Sequence[str],
    encodings: Mapping[str, str],
    media_types: Mapping[str, str | None],
    where: str,
    first_samples: Mapping[str, bytes] | None = None,
) -> frozenset[str]:
    """Return the features whose samples a reader decodes as images: the ``decode_images`` setting (§6.6).

    Parameters
    ----------
    decode
        True for every ``bytes`` feature whose media type is ``image/...``,
        and for every one whose media type says nothing of the format
        (absent or ``application/octet-stream``, as for a feature mixing PNG
        and JPEG files) whose first sample starts with the signature of an
        image format :func:`decode_image` decodes (:func:`sniff_image_format`);
        False for none; or the names to decode.
    encodings
        Feature name -> encoding (§6) of the features read.
    media_types
        Feature name -> ``media_type`` (None when unset) of the ``bytes`` features read.
    where
        The file and split (``"data.h5: split 'train'"``), named in the error message.
    first_samples
        Feature name -> its sample 0 (or its first :data:`SNIFF_BYTES` bytes),
        for the ``bytes`` features of :func:`untyped_features`; a feature
        missing here (an empty split) is not decoded.

    Returns
    -------
    frozenset of str
        The features to decode.

    Raises
    ------
    ValueError
        If ``decode`` names a feature that is not a ``bytes`` feature read.
    """
    if decode is True:
        heads = first_samples or {}
        return frozenset(
            name
            for name, kind in media_types.items()
            if (kind or "").startswith("image/")
            or (_untyped(kind) and name in heads and sniff_image_format(heads[name][:SNIFF_BYTES]) is not None)
        )
    if decode is False:
        return frozenset()
    wrong = [name for name in decode if encodings.get(name) != "bytes"]
    if wrong:
        raise ValueError(
            f"{where}: decode_images names {wrong}, which are not bytes features (§6.6) (read features: "
            f"{', '.join(encodings)}); only encoded files can be decoded"
        )
    return frozenset(decode)


def untyped_features(decode: bool | Sequence[str], media_types: Mapping[str, str | None]) -> list[str]:
    """The ``bytes`` features whose first sample :func:`images_to_decode` needs: True, and no format in the media type.

    Parameters
    ----------
    decode
        The ``decode_images`` setting.
    media_types
        Feature name -> ``media_type`` of the ``bytes`` features read.

    Returns
    -------
    list of str
        With ``decode=True``, the features whose media type is absent or
        ``application/octet-stream``; otherwise none.
    """
    return [name for name, kind in media_types.items() if decode is True and _untyped(kind)]


def decode_column(
    value: bytes | Sequence[bytes], color: str, where: str, samples: int | Sequence[int] | None = None
) -> Any:
    """Decode a reader's value of a ``bytes`` feature: one sample, or a batch (a list of them) (§6.6).

    Each sample's format is told from its own first bytes (its signature),
    whatever the feature's ``media_type``, so a feature mixing PNG, JPEG,
    GIF, BMP, TIFF and WebP files decodes every sample.

    Parameters
    ----------
    value
        One sample's ``bytes``, or the samples of a batch.
    color
        The colour mode, one of :data:`COLORS`.
    where
        The file, split and feature (``"data.h5: split 'train', feature 'photo'"``), named in error messages.
    samples
        The sample index of ``value`` (an int), or of each item of the batch;
        None: the items are named by their place in the batch.

    Returns
    -------
    numpy.ndarray or list of numpy.ndarray
        :func:`decode_image` of the sample, or of each sample of the batch.

    Raises
    ------
    EncodingError
        As :func:`decode_image`, naming ``where`` and the sample index (or the item of the batch).
    """
    if isinstance(value, bytes):
        at = "" if samples is None else f", sample {samples}"
        return decode_image(value, color, where=f"{where}{at}")
    if samples is None or isinstance(samples, int):
        names = [f"item {i} of the batch" for i in range(len(value))]
    else:
        names = [f"sample {k}" for k in samples]
    return [decode_image(v, color, where=f"{where}, {name}") for v, name in zip(value, names, strict=True)]


def pillow_reason(exc: BaseException) -> str:
    """Pillow's reason for refusing an image, as one line without the file object's address.

    Parameters
    ----------
    exc
        The exception ``PIL.Image.open`` or ``Image.load`` raised.

    Returns
    -------
    str
        ``"<exception type>: <message>"``; for ``UnidentifiedImageError``, a
        fixed sentence (Pillow's message names an in-memory object).
    """
    from PIL import UnidentifiedImageError

    if isinstance(exc, UnidentifiedImageError):
        return "Pillow recognises no image format in it"
    return f"{type(exc).__name__}: {exc}"
