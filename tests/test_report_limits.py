"""``h5ml report`` at the limits of its values: WAV byte rates, large images, 64-bit integers.

- A WAV header holds the byte rate (rate x channels x 2 bytes of 16-bit PCM)
  in 32 bits: a ``sample_rate`` from 2**31 Hz (mono) gets no player and a
  note, never an internal error; the page is still written.
- The figures and previews of large images are taken a block of values at a
  time: the memory the report traces stays a small multiple of the image's
  bytes (tracemalloc, no timing).
- The min and max of int64 and uint64 features are shown with every digit.

Every file is written with h5ml's writer (and, for values it refuses, changed
with h5py afterwards), and every page by the real command line.
"""

from __future__ import annotations

import base64
import io
import tracemalloc
import wave
from pathlib import Path

import numpy as np
import pytest

import h5ml
from h5ml.tools.report import previews
from h5ml.tools.report.sample import value_stats
from test_report import Page, run_cli


def _clips(dtype: str, channels: int = 1) -> list[np.ndarray]:
    """Three clips of different lengths: float32 at full scale 1.0, int16 at full scale 32767."""
    scale = 32767 if dtype == "int16" else 1.0
    clips = [(a * scale * np.sin(np.arange(300 + 50 * i) / 5.0)).astype(dtype) for i, a in enumerate((0.9, 0.1, 0.5))]
    return clips if channels == 1 else [np.stack([c] * channels, axis=1) for c in clips]


def _audio_page(tmp_path: Path, rate: float, dtype: str, channels: int = 1) -> tuple[int, str, Page]:
    """Report a file of three clips whose ``sample_rate`` is set to ``rate`` with h5py; (status, stderr, page)."""
    import h5py

    path = tmp_path / "a.h5"
    h5ml.write(
        path,
        {"train": {"clip": _clips(dtype, channels)}},
        {"name": "a", "license": "MIT"},
        features={"clip": {"sample_rate": 8000.0}},
    )
    with h5py.File(path, "r+") as f:
        f["train/clip"].attrs["sample_rate"] = rate
    code, _, err = run_cli("report", str(path))
    return code, err, Page((tmp_path / "a.report.html").read_text(encoding="utf-8"))


@pytest.mark.parametrize("dtype", ["float32", "int16"])
@pytest.mark.parametrize("rate", [2**31, 2**32 - 1])
def test_byte_rate_above_32_bits_gets_no_player_and_a_note(tmp_path: Path, rate: int, dtype: str) -> None:
    """2**31 and 2**32 - 1 Hz fit a WAV's 32-bit rate but not its byte rate (x 2 bytes): no player, a note saying
    why, the waveforms drawn, exit 0 (the rate is valid); before, an internal error and no page."""
    code, err, page = _audio_page(tmp_path, float(rate), dtype)
    assert (code, err) == (0, "")
    assert page.all("audio") == []
    assert len([a for a in page.all("img") if a.get("alt", "").startswith("waveform")]) == 3
    assert (
        f"No audio player: its sample_rate {rate} Hz is above the 2147483647 Hz a 16-bit WAV file of 1 channel can "
        "hold (its byte rate, Hz x channels x 2 bytes, is stored in 32 bits: at most 4294967295); the waveforms "
        "are shown."
    ) in page.text


@pytest.mark.parametrize("dtype", ["float32", "int16"])
def test_highest_mono_rate_plays_and_stereo_halves_it(tmp_path: Path, dtype: str) -> None:
    """2**31 - 1 Hz mono: a player whose WAV holds that rate (byte rate 2**32 - 2). Stereo clips (4 bytes a
    frame) hold at most 1073741823 Hz: 2**30 Hz gets no player, and the note says so."""
    code, err, page = _audio_page(tmp_path, float(2**31 - 1), dtype)
    assert (code, err) == (0, "")
    players = [a["src"] for a in page.all("audio")]
    assert len(players) == 3
    with wave.open(io.BytesIO(base64.b64decode(players[0].split(",", 1)[1]))) as wav:
        assert (wav.getframerate(), wav.getnchannels(), wav.getsampwidth(), wav.getnframes()) == (2**31 - 1, 1, 2, 300)
    (tmp_path / "a.h5").unlink()
    (tmp_path / "a.report.html").unlink()
    code, err, page = _audio_page(tmp_path, float(2**30), dtype, channels=2)
    assert (code, err) == (0, "")
    assert page.all("audio") == []
    assert (
        "No audio player: its sample_rate 1073741824 Hz is above the 1073741823 Hz a 16-bit WAV file of 2 channels "
        "can hold"
    ) in page.text


def test_wav_limits_of_the_encoder() -> None:
    """wav_rate_problem is the encoder's own limit: where it finds none the WAV is written; where it finds one,
    wav_uri refuses with its words (a ValueError), never the struct error of the header."""
    mono, stereo = np.zeros((4, 1), dtype=np.int16), np.zeros((4, 2), dtype=np.int16)
    assert previews.wav_rate_problem(2**31 - 1, 1) == ""
    assert previews.wav_uri(mono, 2**31 - 1).startswith("data:audio/wav;base64,")
    assert previews.wav_rate_problem(2**30 - 1, 2) == ""
    assert previews.wav_uri(stereo, 2**30 - 1).startswith("data:audio/wav;base64,")
    with pytest.raises(ValueError, match="above the 1073741823 Hz a 16-bit WAV file of 2 channels"):
        previews.wav_uri(stereo, 2**30)
    assert "more than the 32767" in previews.wav_rate_problem(8000.0, 40000)  # a block of 80000 bytes: 16 bits
    assert "no channel" in previews.wav_rate_problem(8000.0, 0)


def _traced_peak(function: object, *args: object) -> int:
    """The peak of the memory traced (tracemalloc) while ``function(*args)`` runs, above what was traced before."""
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        function(*args)  # type: ignore[operator]
        return tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()


def test_statistics_of_a_large_image_take_a_small_multiple_of_its_bytes() -> None:
    """One 3000 x 5000 x 3 uint8 image (45 MB, one row over the sample's 32 MiB) is read whole; its figures
    widened it to float64 and int64 at once (2.2 GB traced); block by block they stay under 3 x its bytes,
    and are those of the whole image."""
    rng = np.random.default_rng(3)
    image = rng.integers(0, 256, (1, 3000, 5000, 3), dtype=np.uint8)
    assert _traced_peak(value_stats, image) < 3 * image.nbytes
    stats = value_stats(image)
    assert (stats.count, stats.minimum, stats.maximum) == (image.size, 0, 255)
    assert stats.mean == pytest.approx(float(image.mean(dtype=np.float64)), rel=1e-12)
    assert stats.std == pytest.approx(float(image.std(dtype=np.float64)), rel=1e-9)


@pytest.mark.parametrize("stored", [True, False], ids=["stored-range", "sampled-range"])
def test_previews_of_a_large_float_image_take_a_small_multiple_of_its_bytes(tmp_path: Path, stored: bool) -> None:
    """A 1500 x 2000 x 3 float32 image (36 MB): drawing its preview (range, pixels, thumbnail) widened it to
    float64 several times over; band by band it stays under 3 x its bytes, with the same thumbnail."""
    import h5py

    from h5ml.tools.report.collect import collect
    from h5ml.tools.report.preview_sections import images_section

    rng = np.random.default_rng(4)
    image = rng.random((1, 1500, 2000, 3), dtype=np.float32)
    image[0, 7, 9, 1] = np.nan
    path = tmp_path / "f.h5"
    h5ml.write(path, {"train": {"image": image}}, {"name": "f", "license": "MIT"})
    if not stored:
        with h5py.File(path, "r+") as f:
            for key in ("stats_min", "stats_max", "stats_mean", "stats_std", "stats_count"):
                del f["train/image"].attrs[key]
    (split,) = collect(path).splits
    (feature,) = split.features
    peak = _traced_peak(images_section, split, feature, previews.PreviewBudget())
    assert peak < 3 * image.nbytes
    html = images_section(split, feature, previews.PreviewBudget())
    assert "1 values of these images are not finite" in html
    values = image[0].astype(np.float64)  # the page's formula on the whole image at once, NaN black
    low, high = float(np.nanmin(values)), float(np.nanmax(values))
    whole = np.rint(np.clip(np.nan_to_num((values - low) * 255 / (high - low), nan=0.0), 0, 255)).astype(np.uint8)
    assert f'src="{previews.image_uri(whole)[0]}"' in html  # the same thumbnail, pixel for pixel


def test_64_bit_integer_min_and_max_are_shown_with_every_digit(tmp_path: Path) -> None:
    """int64 values 2**63 - 2 and 2**63 - 1: the sampled min and max show every digit (6 digits showed
    9.22337e+18 twice); the stored binary64 statistics show the float they are; floats keep 6 digits."""
    n = 8
    split = {
        "big": np.array([2**63 - 2, 2**63 - 1] * (n // 2), dtype=np.int64),
        "huge": np.array([2**64 - 2, 2**64 - 1] * (n // 2), dtype=np.uint64),
        "id": np.arange(123456789, 123456789 + n, dtype=np.int64),
        "third": np.full(n, 1 / 3, dtype=np.float64),
    }
    h5ml.write(tmp_path / "i.h5", {"train": split}, {"name": "i", "license": "MIT"})
    code, _, err = run_cli("report", str(tmp_path / "i.h5"))
    assert (code, err) == (0, "")
    text = Page((tmp_path / "i.report.html").read_text(encoding="utf-8")).text
    assert "min 9223372036854775806, max 9223372036854775807, mean 9.22337e+18, std 0.5, over 8 finite values" in text
    assert "min 18446744073709551614, max 18446744073709551615, mean 1.84467e+19" in text
    # stored as binary64 (§6.7): the float the file holds, not an integer it cannot hold exactly
    assert "count 8, min 9.223372036854776e+18, max 9.223372036854776e+18, mean 9.22337e+18, std 0" in text
    assert "count 8, min 123456789, max 123456796, mean 1.23457e+08" in text  # exact below 2**53
    assert "min 123456789, max 123456796, mean 1.23457e+08, std 2.29129, over 8 finite values" in text
    assert "count 8, min 0.333333, max 0.333333, mean 0.333333, std 0" in text
