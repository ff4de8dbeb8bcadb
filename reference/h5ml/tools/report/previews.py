"""The previews of ``h5ml report``: images, audio players and waveforms, and table cells, as embeddable values.

Images become PNG data URIs drawn with Pillow (:func:`image_uri`), reduced
to at most :data:`MAX_THUMBNAIL_SIDE` pixels on their longest side; a bytes
feature of a raster ``media_type`` is embedded as stored
(:func:`encoded_image_uri`); an audio-like sample (a feature with
``sample_rate``, §6.1) becomes a 16-bit PCM WAV data URI (:func:`wav_uri`,
the standard library's :mod:`wave`) for an ``<audio>`` player, when a WAV
file can hold its rate (:func:`wav_rate_problem`); a string or a number
becomes the short text of a table cell (:func:`cell_text`). Every preview is
bounded: :data:`MAX_AUDIO_SECONDS` of audio, :data:`MAX_THUMBNAIL_SIDE`
pixels of a drawn image, :data:`MAX_IMAGE_BYTES` of a stored image,
:data:`MAX_CELL_CHARS` of text, and all of a page's images and sounds
together :data:`MAX_PREVIEW_BYTES` (:class:`PreviewBudget`); each function
says what it cut or left out (the page shows it).

It implements no SPEC clause: it renders samples the reader returned (§6).
"""

from __future__ import annotations

import base64
import io
import math
import wave
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from h5ml.tools.console import size_text

__all__ = [
    "MAX_AUDIO_SECONDS",
    "MAX_CELL_CHARS",
    "MAX_IMAGE_BYTES",
    "MAX_PREVIEW_BYTES",
    "MAX_THUMBNAIL_SIDE",
    "MAX_WAV_BYTE_RATE",
    "MAX_WAV_CHANNELS",
    "WAV_SAMPLE_BYTES",
    "PreviewBudget",
    "cell_text",
    "encoded_image_uri",
    "image_uri",
    "pcm16",
    "wav_rate_problem",
    "wav_uri",
]

#: Seconds of each audio sample put in the page (a longer one is cut, and the page says so).
MAX_AUDIO_SECONDS: Final = 5.0
#: Bytes of a stored image (a bytes feature) put in the page; a larger one is not embedded.
MAX_IMAGE_BYTES: Final = 1 << 20
#: The largest byte rate (frames per second x channels x bytes per sample) a WAV header holds: a 32-bit field.
MAX_WAV_BYTE_RATE: Final = 2**32 - 1
#: The largest channel count of a WAV the page embeds: its block (channels x bytes per sample) is a 16-bit field.
MAX_WAV_CHANNELS: Final = (2**16 - 1) // 2
#: Bytes per sample of the WAV the page embeds (16-bit PCM, :func:`pcm16`).
WAV_SAMPLE_BYTES: Final = 2
#: The longest side of an image preview, in pixels: a larger image is shown reduced to it.
MAX_THUMBNAIL_SIDE: Final = 256
#: Bytes of all the previews (image and WAV data URIs) of one page (:class:`PreviewBudget`).
MAX_PREVIEW_BYTES: Final = 16_000_000
#: Characters of a string shown in a table cell.
MAX_CELL_CHARS: Final = 200


def _uri(media_type: str, data: bytes) -> str:
    return f"data:{media_type};base64," + base64.b64encode(data).decode("ascii")


def image_uri(sample: npt.NDArray[Any]) -> tuple[str, bool]:
    """One uint8 image, (H, W) grey or (H, W, C) with C 1, 3 or 4, as a PNG data URI, reduced when large.

    Parameters
    ----------
    sample
        The pixels drawn (uint8, :func:`h5ml.tools.report.image_scale.display_pixels`).

    Returns
    -------
    (str, bool)
        ``data:image/png;base64,...`` of the pixels as they are (grey exactly, one channel) when the longest
        side is at most :data:`MAX_THUMBNAIL_SIDE`; else of a thumbnail reduced with Pillow (box filter: each
        pixel the mean of those it covers) to that longest side, the aspect ratio kept. And whether it was
        reduced.
    """
    from PIL import Image

    image = np.ascontiguousarray(sample, dtype=np.uint8)
    if image.ndim == 3 and image.shape[2] == 1:
        image = image[:, :, 0]
    mode = {2: "L", 3: "RGB", 4: "RGBA"}[image.shape[2] if image.ndim == 3 else 2]
    picture = Image.fromarray(image, mode=mode)
    height, width = image.shape[:2]
    reduced = max(height, width) > MAX_THUMBNAIL_SIDE
    if reduced:
        scale = MAX_THUMBNAIL_SIDE / max(height, width)
        size = (max(1, round(width * scale)), max(1, round(height * scale)))
        picture = picture.resize(size, Image.Resampling.BOX)
    buffer = io.BytesIO()
    picture.save(buffer, format="PNG")
    return _uri("image/png", buffer.getvalue()), reduced


class PreviewBudget:
    """The bytes of embedded previews (images and sounds, as data URIs) the page may still hold.

    One budget serves the whole page: the previews are taken in page order (split by split; in each, the
    image features, then the audio ones) until it is spent, and the ones after are left out, which each section
    says. Waveforms and plots are figures of bounded size and are not counted.

    Parameters
    ----------
    limit
        The bytes of data URIs in all (:data:`MAX_PREVIEW_BYTES`).
    """

    def __init__(self, limit: int = MAX_PREVIEW_BYTES) -> None:
        self.limit = limit
        self.left = limit

    def take(self, uri: str) -> bool:
        """Count ``uri`` against the budget if it fits; return whether it does (else it must be left out).

        Parameters
        ----------
        uri
            A preview's data URI.

        Returns
        -------
        bool
            True when it fits in what is left (then taken from it).
        """
        if len(uri) > self.left:
            return False
        self.left -= len(uri)
        return True

    def spent_text(self, count: int, what: str) -> str:
        """The note of ``count`` previews left out for the budget (``"3 images are left out: ..."``).

        Parameters
        ----------
        count
            How many were left out (> 0).
        what
            What they are, plural (``"images"``, ``"audio players"``).

        Returns
        -------
        str
            The sentence for the page.
        """
        return (
            f"{count} {what} left out: the previews of this page are bounded to {size_text(self.limit)} in all, "
            "and the earlier ones used it."
        )


def encoded_image_uri(data: bytes, media_type: str) -> str | None:
    """A stored image (a bytes feature's sample, §6.6) as a data URI of its ``media_type``, unchanged.

    Parameters
    ----------
    data
        The stored bytes.
    media_type
        The feature's ``media_type`` (one of :data:`h5ml.tools.report.collect.IMAGE_MEDIA_TYPES`).

    Returns
    -------
    str or None
        The URI; None when ``data`` is larger than :data:`MAX_IMAGE_BYTES` (not embedded).
    """
    if len(data) > MAX_IMAGE_BYTES:
        return None
    return _uri(media_type, bytes(data))


def pcm16(sample: npt.NDArray[Any], sample_rate: float) -> tuple[npt.NDArray[np.int16], bool, bool]:
    """An audio sample as 16-bit PCM frames, at most :data:`MAX_AUDIO_SECONDS` long.

    Parameters
    ----------
    sample
        (frames,) or (frames, channels), any numeric dtype: int16 is kept; other
        integers are scaled by their type's range; floats are taken as full scale
        1.0, and a signal that exceeds it is scaled down to its peak.
    sample_rate
        Frames per second (§6.1).

    Returns
    -------
    (numpy.ndarray, bool, bool)
        The frames (frames, channels) int16; whether the sample was cut to
        :data:`MAX_AUDIO_SECONDS`; whether it was scaled to its peak.
    """
    frames = np.asarray(sample)
    if frames.ndim == 1:
        frames = frames[:, None]
    limit = max(1, int(MAX_AUDIO_SECONDS * sample_rate))
    cut = frames.shape[0] > limit
    frames = frames[:limit]
    scaled = False
    if frames.dtype == np.int16:
        return np.ascontiguousarray(frames), cut, scaled
    if frames.dtype.kind in "iu":
        info = np.iinfo(frames.dtype)
        middle = (int(info.max) + int(info.min) + 1) / 2
        values = (frames.astype(np.float64) - middle) / (int(info.max) - middle)
    else:
        values = frames.astype(np.float64)
        values[~np.isfinite(values)] = 0.0
        peak = float(np.abs(values).max()) if values.size else 0.0
        if peak > 1.0:
            values, scaled = values / peak, True
    return (np.clip(values, -1.0, 1.0) * 32767).round().astype(np.int16), cut, scaled


def wav_rate_problem(sample_rate: float, channels: int = 1) -> str:
    """Why no WAV of ``channels`` channels can be played at ``sample_rate``; ``""`` when one can.

    The WAV the page embeds is 16-bit PCM (:data:`WAV_SAMPLE_BYTES` per sample): its header holds the rate,
    rounded to a whole number of Hz, and the byte rate ``rate x channels x 2`` in 32 bits
    (:data:`MAX_WAV_BYTE_RATE`), and the block ``channels x 2`` in 16 bits (:data:`MAX_WAV_CHANNELS`). A mono
    clip is therefore played up to 2147483647 Hz, a stereo one up to 1073741823 Hz.

    Parameters
    ----------
    sample_rate
        The feature's ``sample_rate`` (Hz, §6.1) as stored: a file the validator fails may hold 0, a negative
        number or NaN; a valid one may hold a rate no WAV header holds.
    channels
        The channels of the clip (1 for a sample of shape (frames,), else its second axis).

    Returns
    -------
    str
        ``""`` when the rounded rate is at least 1 and the WAV's byte rate and block fit its header;
        else why not, in words for the page.
    """
    if not (math.isfinite(sample_rate) and sample_rate > 0):
        return f"its sample_rate {sample_rate:.12g} is not a positive finite number of Hz (§6.1)"
    rate = round(sample_rate)
    if rate < 1:
        return f"its sample_rate {sample_rate:.12g} Hz rounds to 0, and a WAV file holds a whole number of Hz"
    if channels < 1:
        return "its samples have no channel (a second axis of length 0)"
    if channels > MAX_WAV_CHANNELS:
        return (
            f"its {channels} channels are more than the {MAX_WAV_CHANNELS} a 16-bit WAV file can hold (its block, "
            f"channels x {WAV_SAMPLE_BYTES} bytes, is stored in 16 bits)"
        )
    most = MAX_WAV_BYTE_RATE // (channels * WAV_SAMPLE_BYTES)
    if rate > most:
        plural = "channel" if channels == 1 else "channels"
        return (
            f"its sample_rate {sample_rate:.12g} Hz is above the {most} Hz a 16-bit WAV file of {channels} {plural} "
            f"can hold (its byte rate, Hz x channels x {WAV_SAMPLE_BYTES} bytes, is stored in 32 bits: at most "
            f"{MAX_WAV_BYTE_RATE})"
        )
    return ""


def wav_uri(frames: npt.NDArray[np.int16], sample_rate: float) -> str:
    """16-bit PCM frames as a WAV data URI for an ``<audio>`` element.

    Parameters
    ----------
    frames
        (frames, channels) int16 (:func:`pcm16`).
    sample_rate
        Frames per second; a WAV header holds an integer, so it is rounded.

    Returns
    -------
    str
        ``data:audio/wav;base64,...``.

    Raises
    ------
    ValueError
        If no WAV holds ``sample_rate`` for these channels (:func:`wav_rate_problem` says why).
    """
    problem = wav_rate_problem(sample_rate, int(frames.shape[1]))
    if problem:
        raise ValueError(f"no WAV player for this sample: {problem}")
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as out:
        out.setnchannels(int(frames.shape[1]))
        out.setsampwidth(WAV_SAMPLE_BYTES)
        out.setframerate(round(sample_rate))
        out.writeframes(frames.astype("<i2").tobytes())
    return _uri("audio/wav", buffer.getvalue())


def cell_text(value: Any, class_names: list[str] | None = None) -> str:
    """A sample as the short text of a table cell (not yet HTML-escaped).

    Parameters
    ----------
    value
        What the reader returned for one sample: a str, a number, a numpy scalar or array, bytes.
    class_names
        For a categorical code: its class names (code -1 is ``"(missing)"``).

    Returns
    -------
    str
        At most :data:`MAX_CELL_CHARS` characters (a longer text ends with an ellipsis).
    """
    if class_names is not None:
        code = int(value)
        text = class_names[code] if 0 <= code < len(class_names) else "(missing)"
    elif isinstance(value, (bytes, bytearray)):
        text = f"{len(value)} bytes"
    elif isinstance(value, np.ndarray) and value.ndim:
        text = np.array2string(value, threshold=8, edgeitems=3, precision=4)
    elif isinstance(value, (float, np.floating)):
        text = f"{float(value):.6g}"
    else:
        text = str(value.item() if isinstance(value, np.generic) else value)
    return text if len(text) <= MAX_CELL_CHARS else text[: MAX_CELL_CHARS - 1] + "\u2026"
