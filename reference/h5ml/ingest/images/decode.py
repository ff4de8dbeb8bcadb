"""Decoding one image sample, in the workers: the file's bytes, or its pixels converted and fitted (§6.2, §6.3, §6.6).

Decoding uses Pillow through :mod:`h5ml.reader.imagecodec` (8-bit images
only, the first frame of a multi-frame file, EXIF orientation not applied);
Pillow is imported inside the functions, so that importing this module does
not load it. :func:`decode_item` is module-level so that it pickles to
worker processes.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from h5ml.errors import EncodingError
from h5ml.ingest.images.tree import not_an_image, shown
from h5ml.ingest.report import ID_FEATURE, DecodeError, SourceItem
from h5ml.reader.imagecodec import (
    IMAGE_FORMATS,
    SNIFF_BYTES,
    convert_image,
    image_to_array,
    pillow_reason,
    sniff_image_format,
)

if TYPE_CHECKING:
    from PIL import Image

__all__ = ["decode_item", "fit"]


def decode_item(
    item: SourceItem, *, mode: str, size: tuple[int, int] | None, resize: str, color: str, resample: str
) -> dict[str, Any]:
    """One sample's values: ``image`` (array or the file's bytes), ``label`` (class name, when it has one), ``id``.

    Raises
    ------
    h5ml.ingest.DecodeError
        If the file cannot be read or is not a whole image of its format.
    """
    parts = dict(item.parts)
    path = parts["image"]
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise DecodeError(shown(path), f"cannot read it: {exc.strerror or exc}") from exc
    image: bytes | npt.NDArray[np.uint8]
    if mode == "bytes":
        _check_whole(data, path)
        image = data
    else:
        image = _pixels(data, path, size, resize, color, resample)
    label = {"label": parts["label"]} if "label" in parts else {}
    return {"image": image, **label, ID_FEATURE: item.sample_id}


def _check_whole(data: bytes, path: str) -> None:
    """Decode the file's bytes once (bytes mode) so that a truncated or corrupt file is refused now."""
    from PIL import Image

    fmt = sniff_image_format(data[:SNIFF_BYTES])
    if fmt is None:
        raise DecodeError(shown(path), not_an_image(data[:SNIFF_BYTES]))
    try:
        with Image.open(io.BytesIO(data), formats=(fmt,)) as image:
            image.load()
    except Exception as exc:  # Pillow raises many types (OSError, SyntaxError, ValueError, ...) for bad data
        raise DecodeError(shown(path), f"a {fmt} file that does not decode: {pillow_reason(exc)}") from exc


def _pixels(
    data: bytes, path: str, size: tuple[int, int] | None, resize: str, color: str, resample: str
) -> npt.NDArray[np.uint8]:
    """Decode, convert to ``color`` and (dense) fit to ``size``: uint8 ``(H, W, C)``."""
    from PIL import Image

    try:
        with Image.open(io.BytesIO(data), formats=IMAGE_FORMATS) as image:
            image.load()
            converted = convert_image(image, color)
            if size is not None:
                converted = fit(converted, size, resize, resample)
            return image_to_array(converted, color)
    except EncodingError as exc:
        raise DecodeError(shown(path), str(exc)) from exc
    except Exception as exc:  # Pillow raises many types (OSError, SyntaxError, ValueError, ...) for bad data
        fmt = sniff_image_format(data[:SNIFF_BYTES])
        reason = not_an_image(data[:SNIFF_BYTES]) if fmt is None else f"a {fmt} file that does not decode"
        raise DecodeError(shown(path), f"{reason}: {pillow_reason(exc)}") from exc


def fit(image: Image.Image, size: tuple[int, int], resize: str, resample: str) -> Image.Image:
    """Fit a Pillow image to ``size = (W, H)``: stretch, crop (cover, then centre cut) or pad (fit, then centre).

    Parameters
    ----------
    image
        The decoded, converted image.
    size
        ``(W, H)`` in pixels.
    resize
        ``"stretch"``, ``"crop"`` or ``"pad"`` (:mod:`h5ml.ingest.images`).
    resample
        Pillow's filter: ``"nearest"``, ``"bilinear"``, ``"bicubic"`` or ``"lanczos"``.

    Returns
    -------
    PIL.Image.Image
        The image at ``size`` (the same object when it already has that size: its pixels are kept exactly).
    """
    from PIL import Image

    width, height = size
    w, h = image.size
    if (w, h) == (width, height):
        return image
    filt = {
        "nearest": Image.Resampling.NEAREST,
        "bilinear": Image.Resampling.BILINEAR,
        "bicubic": Image.Resampling.BICUBIC,
        "lanczos": Image.Resampling.LANCZOS,
    }[resample]
    if resize == "stretch":
        return image.resize((width, height), filt)
    if resize == "crop":
        scale = max(width / w, height / h)
        sw, sh = max(width, round(w * scale)), max(height, round(h * scale))
        scaled = image if (sw, sh) == (w, h) else image.resize((sw, sh), filt)
        left, top = (sw - width) // 2, (sh - height) // 2
        return scaled.crop((left, top, left + width, top + height))
    scale = min(width / w, height / h)
    sw, sh = min(width, max(1, round(w * scale))), min(height, max(1, round(h * scale)))
    scaled = image if (sw, sh) == (w, h) else image.resize((sw, sh), filt)
    canvas = Image.new(scaled.mode, (width, height))
    canvas.paste(scaled, ((width - sw) // 2, (height - sh) // 2))
    return canvas
