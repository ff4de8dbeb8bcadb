"""Decoding one audio sample, in the workers: soundfile, then down-mix and soxr resampling when asked (§6.3).

:func:`decode_sample` is module-level so that it pickles to worker
processes; :class:`DecodeOptions` carries what it needs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import soundfile
import soxr

from h5ml.ingest.report import ID_FEATURE, DecodeError, SourceItem

__all__ = ["DecodeOptions", "decode_file", "decode_sample"]


@dataclass(frozen=True)
class DecodeOptions:
    """What :func:`decode_sample` needs: the dtype, rate and channel count expected of each feature."""

    dtypes: Mapping[str, str]
    rates: Mapping[str, int]
    channels: Mapping[str, int]
    sample_rate: float | None
    mono: bool

    @property
    def converts(self) -> bool:
        """Whether files are decoded to float32 and changed (down-mixed, resampled)."""
        return self.sample_rate is not None or self.mono


def decode_file(path: str, feature: str, options: DecodeOptions) -> npt.NDArray[Any]:
    """One file as stored: ``(frames,)`` or ``(frames, channels)`` (:mod:`h5ml.ingest.audio`, "Stored dtype").

    Raises
    ------
    h5ml.ingest.DecodeError
        If soundfile cannot decode it, or its rate or channels changed since it was checked.
    """
    dtype = "float32" if options.converts else options.dtypes[feature]
    try:
        with soundfile.SoundFile(path) as handle:
            rate, channels = int(handle.samplerate), int(handle.channels)
            data = handle.read(dtype=dtype, always_2d=True)
    except soundfile.LibsndfileError as exc:
        raise DecodeError(path, f"soundfile cannot decode it: {exc.error_string.strip() or exc}") from None
    except (RuntimeError, OSError, ValueError) as exc:
        raise DecodeError(path, f"soundfile cannot decode it: {exc}") from None
    if options.sample_rate is None and rate != options.rates[feature]:
        raise DecodeError(path, f"its rate changed to {rate} Hz since it was checked ({options.rates[feature]} Hz)")
    if not options.mono and channels != options.channels[feature]:
        raise DecodeError(
            path, f"its channel count changed to {channels} since it was checked ({options.channels[feature]})"
        )
    samples: npt.NDArray[Any]
    if options.mono:
        samples = np.asarray(np.mean(data, axis=1, dtype=np.float32))
    elif channels == 1:
        samples = data.reshape(-1)
    else:
        samples = data
    if options.sample_rate is not None and rate != options.sample_rate and samples.shape[0] > 0:
        samples = np.asarray(soxr.resample(samples, rate, options.sample_rate), dtype=np.float32)
    return samples


def decode_sample(item: SourceItem, options: DecodeOptions) -> dict[str, Any]:
    """``{feature: samples, "id": sample id}`` of one item (a module-level function: it runs in workers)."""
    out: dict[str, Any] = {ID_FEATURE: item.sample_id}
    for feature, path in item.parts:
        out[feature] = decode_file(path, feature, options)
    return out
