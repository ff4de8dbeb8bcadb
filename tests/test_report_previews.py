"""How ``h5ml report`` draws its previews: image pixels exact or scaled from one range, waveforms on one axis.

Images: the demo's digits (uint8 values 0..16, scikit-learn's real data) and
the README's float32 (28, 28, 1) images are written with h5ml's writer, the
page is written by the real command line, and the PNG of each preview is
decoded and compared pixel by pixel with the values written, scaled from the
range of the feature's stored statistics (§6.7). Waveforms: the figure that
draws them is built for two clips of different loudness and its axis read
back (the limits, not pixels). A ``sample_rate`` no WAV file holds gets waveforms and no player.
"""

from __future__ import annotations

import base64
import io
import re
from pathlib import Path

import numpy as np
import pytest

import h5ml
from h5ml.tools.report import plots
from h5ml.tools.report.image_scale import UINT8_EXACT_FROM, display_pixels, display_range, image_like
from test_report import PREVIEW_SAMPLES, Page, run_cli


def _previews(page: Page) -> list[np.ndarray]:
    """The decoded preview images of the page (of its one image feature), in order, as RGB."""
    from PIL import Image

    sources = [a["src"] for a in page.all("img") if a.get("alt", "").startswith("#")]
    return [np.asarray(Image.open(io.BytesIO(base64.b64decode(s.split(",", 1)[1]))).convert("RGB")) for s in sources]


def _report(path: Path) -> tuple[Page, str]:
    code, _, err = run_cli("report", str(path))
    assert (code, err) == (0, "")
    text = path.with_name(f"{path.stem}.report.html").read_text(encoding="utf-8")
    return Page(text), text


def test_digits_0_to_16_are_scaled_to_0_255(tmp_path: Path) -> None:
    """The demo's digits (uint8, 0..16): each preview pixel is round(v * 255 / 16), and the heading says so."""
    from h5ml.tools.demo import build_digits

    pytest.importorskip("sklearn")
    path = build_digits(tmp_path / "digits.h5")
    page, _ = _report(path)
    first = page.all("section")[0]["data-split"]  # the first split's previews come first on the page
    with h5ml.open(path) as ds:
        images = ds[first]["image"][0:PREVIEW_SAMPLES]
        stats = ds[first].features["image"].statistics.attributes()
    assert (stats["stats_min"], stats["stats_max"]) == (0.0, 16.0)
    shown = _previews(page)[:PREVIEW_SAMPLES]
    assert len(shown) == PREVIEW_SAMPLES
    for drawn, stored in zip(shown, images, strict=True):
        expected = np.rint(stored.astype(np.float64) * 255 / 16).astype(np.uint8)
        for channel in range(3):
            np.testing.assert_array_equal(drawn[:, :, channel], expected)
    assert int(shown[0].max()) > 200  # not the near-black of 0..16 drawn on 0..255
    assert "shown scaled from 0..16 to 0..255 (one range for the whole feature: its stored statistics, §6.7)" in (
        page.text
    )


def test_float_images_get_previews_scaled_from_the_feature_range(tmp_path: Path) -> None:
    """The README's float32 (28, 28, 1) images: previews exist, scaled from the stored stats_min..stats_max."""
    rng = np.random.default_rng(0)
    x = (rng.random((40, 28, 28, 1), dtype=np.float32) * 3.0 - 1.0).astype(np.float32)
    h5ml.write(tmp_path / "mnist-like.h5", {"train": {"image": x}}, {"name": "m", "license": "CC0-1.0"})
    low, high = float(x.min()), float(x.max())
    page, _ = _report(tmp_path / "mnist-like.h5")
    shown = _previews(page)
    assert len(shown) == PREVIEW_SAMPLES
    for i, drawn in enumerate(shown):
        expected = np.rint((x[i, :, :, 0].astype(np.float64) - low) * 255 / (high - low)).astype(np.uint8)
        np.testing.assert_array_equal(drawn[:, :, 0], expected)
    (heading,) = [a for a in page.all("h4") if "data-scale" in a]
    assert heading["data-scale"] == f"{low:.17g}..{high:.17g}"  # one range, that of the whole feature
    assert f"shown scaled from {low:.6g}..{high:.6g} to 0..255" in page.text


def test_without_stored_statistics_the_range_is_the_sampled_rows(tmp_path: Path) -> None:
    """No stats_min/stats_max stored: the range is that of the sampled rows and previews, and the page says so."""
    import h5py

    x = np.arange(10 * 6 * 5, dtype=np.float32).reshape(10, 6, 5) / 7.0
    h5ml.write(tmp_path / "f.h5", {"train": {"image": x}}, {"name": "f", "license": "MIT"})
    with h5py.File(tmp_path / "f.h5", "r+") as f:
        for key in ("stats_min", "stats_max", "stats_mean", "stats_std", "stats_count"):
            del f["train/image"].attrs[key]
    page, _ = _report(tmp_path / "f.h5")
    shown = _previews(page)
    low, high = float(x.min()), float(x.max())  # every row is sampled in a split this small
    expected = np.rint((x[3].astype(np.float64) - low) * 255 / (high - low)).astype(np.uint8)
    np.testing.assert_array_equal(shown[3][:, :, 0], expected)
    assert "the values of the sampled rows and of these previews" in page.text


def test_uint8_rule_exact_from_128() -> None:
    """uint8 reaching UINT8_EXACT_FROM (128) is drawn as stored; below it, scaled from its [min, max]."""
    assert UINT8_EXACT_FROM == 128
    exact = display_range("uint8", {"stats_min": 0.0, "stats_max": 128.0}, None, [])
    assert not exact.scaled and exact.describe() == ""
    image = np.array([[0, 64], [128, 3]], dtype=np.uint8)
    np.testing.assert_array_equal(display_pixels(image, exact)[0], image)
    dim = display_range("uint8", {"stats_min": 10.0, "stats_max": 127.0}, None, [])
    assert (dim.low, dim.high, dim.scaled) == (10.0, 127.0, True)
    pixels, bad = display_pixels(np.array([[10, 127]], dtype=np.uint8), dim)
    assert pixels.tolist() == [[0, 255]] and bad == 0


def test_constant_and_non_finite_images_are_said() -> None:
    """All one value: drawn black and said; NaN and -inf black, +inf white, and counted."""
    flat = display_range("float32", {"stats_min": 0.5, "stats_max": 0.5}, None, [])
    assert flat.describe().startswith("shown black: every value is 0.5")
    assert display_pixels(np.full((4, 4), 0.5), flat)[0].max() == 0
    shown = display_range("float64", {"stats_min": 0.0, "stats_max": 2.0}, None, [])
    pixels, bad = display_pixels(np.array([[np.nan, np.inf], [-np.inf, 1.0]]), shown)
    assert pixels.tolist() == [[0, 255], [0, 128]] and bad == 3


def test_image_like_shapes() -> None:
    """(H, W), (H, W, 1), (H, W, 3), (H, W, 4) of any numeric dtype; small non-uint8 matrices and (H, W, 2) are not."""
    assert image_like("dense", "float32", (28, 28, 1))
    assert image_like("dense", "int16", (8, 8))
    assert image_like("dense", "float64", (16, 16, 4))
    assert not image_like("dense", "float32", (28, 28, 2))
    assert not image_like("dense", "float32", (100, 3))  # a table of 3 columns, not an image
    assert image_like("dense", "uint8", (2, 3))  # uint8 as before
    assert not image_like("string", "str", (4, 4))


def test_waveforms_share_one_amplitude_axis() -> None:
    """Two clips of different loudness are drawn on the same axis, -1..1 for float audio, with labelled ticks."""
    t = np.arange(800) / 8000.0
    loud = np.sin(2 * np.pi * 440 * t)
    quiet = 0.05 * loud
    limits = plots.amplitude_range("float32", float(quiet.min()), float(quiet.max()))
    assert limits == (-1.0, 1.0)
    axes = [plots.waveform_figure(clip, 8000.0, limits).axes[0] for clip in (loud, quiet)]
    assert axes[0].get_ylim() == axes[1].get_ylim() == (-1.0, 1.0)
    for ax in axes:
        assert [tick.get_text() for tick in ax.get_yticklabels()] == ["-1", "0", "1"]
    assert plots.amplitude_range("int16") == (-32768.0, 32767.0)  # integers: the dtype's range, full scale
    assert plots.amplitude_range("float32", -0.5, 2.5) == (-1.0, 2.5)  # widened to values beyond full scale


def test_page_states_the_amplitude_axis(tmp_path: Path) -> None:
    """The page's audio heading names the one axis of the feature's waveforms."""
    clips = [(a * np.sin(np.arange(400) / 5.0)).astype(np.float32) for a in (0.9, 0.1, 0.5)]
    h5ml.write(
        tmp_path / "a.h5",
        {"train": {"clip": clips}},
        {"name": "a", "license": "MIT"},
        features={"clip": {"sample_rate": 8000.0}},
    )
    page, _ = _report(tmp_path / "a.h5")
    assert re.search(r"clip: the first 3 samples at 8000 Hz \(waveforms on one amplitude axis, -1 to 1\)", page.text)


@pytest.mark.parametrize(
    ("rate", "why", "status"),
    [
        (
            2.0**32,
            "its sample_rate 4294967296 Hz is above the 2147483647 Hz a 16-bit WAV file of 1 channel can hold (its "
            "byte rate, Hz x channels x 2 bytes, is stored in 32 bits: at most 4294967295)",
            0,
        ),
        (0.3, "its sample_rate 0.3 Hz rounds to 0, and a WAV file holds a whole number of Hz", 0),
        (0.0, "its sample_rate 0 is not a positive finite number of Hz (§6.1)", 1),
        (-8000.0, "its sample_rate -8000 is not a positive finite number of Hz (§6.1)", 1),
        (float("nan"), "its sample_rate nan is not a positive finite number of Hz (§6.1)", 1),
        (float("inf"), "its sample_rate inf is not a positive finite number of Hz (§6.1)", 1),
    ],
    ids=["above-2**32-1", "rounds-to-0", "zero", "negative", "nan", "inf"],
)
def test_sample_rate_no_wav_holds_gets_waveforms_and_no_player(
    tmp_path: Path, rate: float, why: str, status: int
) -> None:
    """A sample_rate above 2**32 - 1 Hz, rounding to 0, 0, negative or NaN: no player, a note saying why, and
    every waveform still drawn (against frames when the rate gives no time); the validator's verdict as ever."""
    import h5py

    clips = [(a * np.sin(np.arange(400) / 5.0)).astype(np.float32) for a in (0.9, 0.1, 0.5)]
    path = tmp_path / "a.h5"
    h5ml.write(
        path, {"train": {"clip": clips}}, {"name": "a", "license": "MIT"}, features={"clip": {"sample_rate": 8000.0}}
    )
    with h5py.File(path, "r+") as f:  # the writer refuses the invalid ones: set as a damaged file holds them
        f["train/clip"].attrs["sample_rate"] = rate
    code, _, err = run_cli("report", str(path))
    assert code == status and "Traceback" not in err and "internal error" not in err
    page = Page((tmp_path / "a.report.html").read_text(encoding="utf-8"))
    assert page.all("audio") == []
    waves = [a for a in page.all("img") if a.get("alt", "").startswith("waveform")]
    assert len(waves) == len(page.all("div", class_="preview-audio")) == 3
    assert f"No audio player: {why}; the waveforms are shown." in page.text
    timed = 0 < rate < float("inf")
    assert waves[1]["alt"] == ("waveform #1, " + (f"{400 / rate:.2f} s" if timed else "400 frames"))
    svg = base64.b64decode(waves[0]["src"].split(",", 1)[1]).decode("utf-8")
    assert ("<!-- s -->" if timed else "<!-- frames -->") in svg  # the x axis: seconds, else frames


def test_large_images_are_shown_as_thumbnails_of_256_px(tmp_path: Path) -> None:
    """Images of 1024 x 512 px: each preview is a 256 x 128 thumbnail, the mean of each 4 x 4 block, and the
    page says they were reduced; the page stays small."""
    rng = np.random.default_rng(5)
    blocks = rng.integers(0, 256, (10, 256, 128, 3), dtype=np.uint8)
    blocks[:, 0, 0] = 255  # values reaching 128: drawn as stored
    images = np.repeat(np.repeat(blocks, 4, axis=1), 4, axis=2)  # 1024 x 512, constant 4 x 4 blocks
    h5ml.write(tmp_path / "big.h5", {"train": {"image": images}}, {"name": "big", "license": "MIT"})
    page, text = _report(tmp_path / "big.h5")
    shown = _previews(page)
    assert len(shown) == PREVIEW_SAMPLES
    for drawn, expected in zip(shown, blocks, strict=False):
        np.testing.assert_array_equal(drawn, expected)  # the box filter's mean of equal pixels is exact
    assert (
        f"{PREVIEW_SAMPLES} of these images are shown reduced to 256 px on their longest side "
        "(the largest is 1024 x 512 px as stored)."
    ) in page.text
    assert len(text) < 2_000_000  # 8 thumbnails of 96 kB; the images as stored would be 8 x 1.5 MB


def test_previews_stop_at_the_page_budget(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One budget of preview bytes for the whole page: the previews are embedded in page order while they fit,
    the ones after are left out, and each section says how many and why; waveforms stay."""
    from h5ml.tools.console import size_text
    from h5ml.tools.report import previews

    rng = np.random.default_rng(11)
    split = {
        "image": rng.integers(0, 256, (10, 16, 16, 3), dtype=np.uint8),
        "clip": [np.sin(np.arange(800) / 3.0).astype(np.float32)] * 10,
    }
    h5ml.write(
        tmp_path / "b.h5",
        {"train": split, "test": split},
        {"name": "b", "license": "MIT"},
        features={"clip": {"sample_rate": 8000.0}},
    )
    whole, _ = _report(tmp_path / "b.h5")
    images = [a["src"] for a in whole.all("img") if a.get("alt", "").startswith("#")]
    players = [a["src"] for a in whole.all("audio")]
    assert (len(images), len(players)) == (2 * PREVIEW_SAMPLES, 2 * PREVIEW_SAMPLES)
    # page order: the first split's images, then its players, then the second split's
    order = images[:PREVIEW_SAMPLES] + players[:PREVIEW_SAMPLES] + images[PREVIEW_SAMPLES:] + players[PREVIEW_SAMPLES:]
    limit = sum(len(u) for u in order[: PREVIEW_SAMPLES + 3]) + 10  # 8 images and 3 players fit
    assert limit < sum(len(u) for u in order[: PREVIEW_SAMPLES + 4])
    monkeypatch.setattr(previews, "MAX_PREVIEW_BYTES", limit)
    code, _, err = run_cli("report", str(tmp_path / "b.h5"), "-o", str(tmp_path / "cut.html"))
    assert (code, err) == (0, "")
    cut = Page((tmp_path / "cut.html").read_text(encoding="utf-8"))
    kept_images = [a["src"] for a in cut.all("img") if a.get("alt", "").startswith("#")]
    kept_players = [a["src"] for a in cut.all("audio")]
    assert kept_images == images[:PREVIEW_SAMPLES] and kept_players == players[:3]
    assert len([a for a in cut.all("img") if a.get("alt", "").startswith("waveform")]) == 2 * PREVIEW_SAMPLES
    bound = f"the previews of this page are bounded to {size_text(limit)} in all, and the earlier ones used it."
    assert f"5 audio players are left out: {bound} Their waveforms are shown." in cut.text  # first split
    assert f"8 images are left out: {bound}" in cut.text  # second split
    assert f"8 audio players are left out: {bound} Their waveforms are shown." in cut.text
