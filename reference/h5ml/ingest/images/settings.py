"""The options of the image folder converter, checked before any file is read (§6.2, §6.3, §6.6).

How images are stored (``mode``), fitted (``size``, ``resize``,
``resample``), converted (``color``) and how the folder is read
(``folder_layout``); :func:`parse_size` reads the command-line form of
``size``. A wrong value is a :class:`h5ml.errors.ParameterError` naming the
parameter and its option.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final, Literal

import numpy as np

from h5ml.ingest.folders import FOLDER_LAYOUTS
from h5ml.ingest.options import check_choice, parameter_error
from h5ml.reader.imagecodec import COLORS

__all__ = [
    "CHANNELS",
    "FOLDER_LAYOUTS",
    "IMAGE_LAYOUTS",
    "FolderLayout",
    "ImageMode",
    "Resample",
    "ResizeMode",
    "checked_settings",
    "parse_size",
]

#: How images are stored: decoded at one size, decoded at their own sizes, or as the files' bytes.
ImageMode = Literal["dense", "ragged", "bytes"]
#: How ``mode="dense"`` fits an image to ``size``.
ResizeMode = Literal["stretch", "crop", "pad"]
#: Pillow's resampling filter used when an image is resized.
Resample = Literal["nearest", "bilinear", "bicubic", "lanczos"]
#: How the folder is read: ``ROOT/<split>/<class>/<file>``, ``ROOT/<class>/<file>``, ``ROOT/<split>/<file>``
#: (no labels), or decided from the tree.
FolderLayout = Literal["auto", "splits", "classes", "split-files"]

#: The values of :data:`FolderLayout`; ``--folder-layout`` takes :data:`h5ml.ingest.folders.FOLDER_LAYOUTS`
#: (those of every kind of folder), re-exported here.
IMAGE_LAYOUTS: Final = ("auto", "splits", "classes", "split-files")
#: Channels of each colour mode (``keep``: each file's own).
CHANNELS: Final = {"RGB": 3, "RGBA": 4, "L": 1, "LA": 2}
_MODES: Final = ("dense", "ragged", "bytes")
_RESIZES: Final = ("stretch", "crop", "pad")
_RESAMPLES: Final = ("nearest", "bilinear", "bicubic", "lanczos")


def parse_size(text: str) -> tuple[int, int]:
    """Parse the command-line form of ``size``: ``"224x160"`` (width x height) or ``"224"`` (a square).

    Parameters
    ----------
    text
        ``"<W>x<H>"`` (``x`` or ``X``, spaces allowed around the numbers) or ``"<N>"``, in pixels.

    Returns
    -------
    tuple of int
        ``(W, H)``, both >= 1.

    Raises
    ------
    h5ml.errors.ParameterError
        If the text is not of that form or a number is < 1 (the message names ``size`` and ``--size``).
    """
    parts = text.lower().split("x")
    try:
        numbers = [int(p.strip()) for p in parts]
    except ValueError:
        numbers = []
    if len(numbers) not in (1, 2) or min(numbers) < 1:
        raise parameter_error(
            "size", f"size {text!r} is not WIDTHxHEIGHT in pixels (such as 224x224) or one number for a square"
        )
    return (numbers[0], numbers[-1])


def checked_settings(
    mode: str, size: Sequence[int] | None, resize: str, color: str, resample: str, folder_layout: str
) -> tuple[int, int] | None:
    """Check the image options; return ``size`` as ``(W, H)`` ints (None outside dense mode).

    Raises
    ------
    h5ml.errors.ParameterError
        If a value is not one of its choices, ``size`` is missing in dense
        mode, given in another mode, or not two integers >= 1, or
        ``color="keep"`` is asked in dense mode.
    """
    for name, value, choices in (
        ("mode", mode, _MODES),
        ("resize", resize, _RESIZES),
        ("color", color, COLORS),
        ("resample", resample, _RESAMPLES),
        ("folder_layout", folder_layout, IMAGE_LAYOUTS),
    ):
        check_choice(name, value, choices)
    if mode != "dense":
        if size is not None:
            raise parameter_error(
                "size",
                f"size={size!r} (--size) applies to mode='dense' (--mode dense) only: mode={mode!r} (--mode {mode}) keeps "
                "each image's own size",
            )
        return None
    if size is None:
        raise parameter_error(
            "size",
            "mode='dense' (--mode dense) stores every image at one size: pass size=(W, H) (--size WxH), or use "
            "mode='ragged' (--mode ragged) to keep each image's own size",
        )
    if color == "keep":
        raise parameter_error(
            "color",
            "color='keep' gives images different channel counts, which dense samples cannot have: choose "
            "color='RGB', 'RGBA', 'L' or 'LA', or use mode='ragged'",
        )
    values = tuple(size) if hasattr(size, "__iter__") and not isinstance(size, str) else ()
    if len(values) != 2 or not all(
        isinstance(v, (int, np.integer)) and not isinstance(v, bool) and v >= 1 for v in values
    ):
        raise parameter_error("size", f"size must be (W, H), two integers >= 1, got {size!r}")
    return int(values[0]), int(values[1])
