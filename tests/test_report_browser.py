"""``h5ml report`` pages in a real browser: Debian's chromium, headless, driven by Playwright (issue 17).

The page of a file with images, labels, audio and strings, and that of a
sharded dataset, are opened from disk (``file://``) with no network: the
test collects every console message and page error (there must be none: a
Content-Security-Policy violation, a broken data URI or a script would show
as one), checks that the plots, image previews and audio players are present
and have a size on screen, that each audio player decoded its WAV (a
duration), and takes a screenshot that must not be blank.

Chromium is Debian's (``/usr/bin/chromium``, which ``scripts/test.sh``
installs where missing); Playwright only drives it (never ``playwright
install``). Outside CI the test is skipped when that chromium is absent; in
CI (``CI`` set) it runs and fails loudly instead. Every browser step has a
time limit, so the test cannot hang.
"""

from __future__ import annotations

import io
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import h5ml
from test_report import PREVIEW_SAMPLES, run_cli, write_media

CHROMIUM = "/usr/bin/chromium"
#: The flags chromium runs headless with, as root, with no network and no first-run work.
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
#: Milliseconds any one browser step may take.
STEP_MS = 30_000

pytestmark = pytest.mark.skipif(
    not Path(CHROMIUM).exists() and not os.environ.get("CI"),  # in CI it must be there: the test then fails
    reason=f"{CHROMIUM} is absent; install Debian's chromium (apt-get install chromium) to run the browser checks",
)
if not os.environ.get("CI"):  # the dev extra installs Playwright; in CI its absence fails the import below
    pytest.importorskip("playwright.sync_api", reason='Playwright is not installed (pip install -e ".[dev]")')

from playwright.sync_api import sync_playwright  # noqa: E402  (after the skip above)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """One headless chromium for the module's pages (a launch costs seconds on a shared machine)."""
    assert Path(CHROMIUM).exists(), f"{CHROMIUM} is missing: scripts/test.sh installs Debian's chromium"
    with sync_playwright() as p:
        # Playwright's launch gives chromium a fresh temporary profile (--user-data-dir) itself
        launched = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS, timeout=STEP_MS)
        try:
            yield launched
        finally:
            launched.close()


def _open(browser: Any, page_file: Path, width: int = 1280) -> dict[str, Any]:
    """Open ``page_file`` offline in a window ``width`` px wide; return what the page holds, its messages, its
    widths (``scroll``: the document's scrollWidth, ``client``: its clientWidth) and a full-page screenshot (PNG)."""
    messages: list[str] = []
    context = browser.new_context(viewport={"width": width, "height": 900}, offline=True)
    try:
        page = context.new_page()
        page.set_default_timeout(STEP_MS)
        page.on("console", lambda m: messages.append(f"console {m.type}: {m.text}"))
        page.on("pageerror", lambda e: messages.append(f"page error: {e}"))
        page.on("requestfailed", lambda r: messages.append(f"request failed: {r.url[:80]}"))
        page.goto(page_file.as_uri(), wait_until="load")
        page.wait_for_function(
            "() => [...document.images].every(i => i.complete)"
            " && [...document.querySelectorAll('audio')].every(a => a.readyState >= 1)",
            timeout=STEP_MS,
        )
        found: dict[str, Any] = page.evaluate(
            """() => {
              const size = e => { const r = e.getBoundingClientRect(); return [r.width, r.height]; };
              return {
                plots: [...document.querySelectorAll('figure.plot img')].map(i => [...size(i), i.naturalWidth]),
                images: [...document.querySelectorAll('figure.preview-image img')]
                  .map(i => [...size(i), i.naturalWidth]),
                audio: [...document.querySelectorAll('audio')].map(a => [...size(a), a.duration]),
                scripts: document.scripts.length,
                scroll: document.documentElement.scrollWidth,
                client: document.documentElement.clientWidth,
              };
            }"""
        )
        found["screenshot"] = page.screenshot(full_page=True, timeout=STEP_MS)
        found["title"] = page.title()
    finally:
        context.close()
    found["messages"] = messages
    return found


def _not_blank(png: bytes) -> None:
    """The screenshot has more than one colour and a fair share of pixels that are not the background."""
    from PIL import Image

    pixels = np.asarray(Image.open(io.BytesIO(png)).convert("RGB")).reshape(-1, 3)
    colours, counts = np.unique(pixels, axis=0, return_counts=True)
    assert len(colours) > 50
    background = counts.max() / counts.sum()
    assert background < 0.97, f"{background:.1%} of the screenshot is one colour"


def _sized(boxes: list[list[float]]) -> None:
    assert boxes
    for width, height, natural in boxes:
        assert width > 0 and height > 0 and natural > 0


def test_file_report_in_chromium(browser: Any, tmp_path: Path) -> None:
    """A file's page: no console message or error, plots, images and players shown, a non-blank screenshot."""
    write_media(tmp_path / "media.h5")
    code, _, err = run_cli("report", str(tmp_path / "media.h5"))
    assert (code, err) == (0, "")
    found = _open(browser, tmp_path / "media.report.html")
    assert found["messages"] == []
    assert found["scripts"] == 0
    assert found["title"] == "media <set>: h5ml report"  # the name as text, its markup not parsed
    assert len(found["plots"]) == 5  # classes, audio lengths, audio, image and score values
    _sized(found["plots"])
    assert len(found["images"]) == PREVIEW_SAMPLES
    _sized(found["images"])
    assert len(found["audio"]) == PREVIEW_SAMPLES
    for width, height, duration in found["audio"]:
        assert width > 0 and height > 0 and 0.04 < duration < 0.2  # 400-1200 frames at 8000 Hz
    _not_blank(found["screenshot"])


def test_sharded_report_in_chromium(browser: Any, tmp_path: Path) -> None:
    """A sharded dataset's page loads as cleanly, with its plots and audio players, and at 1200 px wide it does
    not scroll sideways (its wide tables scroll inside their own boxes)."""
    metadata = {"name": "sharded", "license": "MIT"}
    with h5ml.Writer(tmp_path / "ds", metadata, samples_per_shard=4, compression="gzip") as w:
        w.add_feature("train", "label", encoding="categorical", class_names=["a", "b"], role="target")
        w.add_feature("train", "clip", encoding="ragged", dtype="float32", sample_rate=4000.0)
        w.add_feature("train", "a_rather_long_feature_name_for_the_width", encoding="dense", dtype="float32")
        for i in range(10):
            clip = np.sin(np.arange(400 + 10 * i) / 5.0).astype(np.float32)
            w.append_sample(
                "train", {"label": i % 2, "clip": clip, "a_rather_long_feature_name_for_the_width": np.float32(i)}
            )
    code, _, err = run_cli("report", str(tmp_path / "ds"))
    assert (code, err) == (0, "")
    found = _open(browser, tmp_path / "ds.report.html", width=1200)
    assert found["messages"] == []
    assert found["scroll"] <= found["client"], f"the page scrolls sideways: {found['scroll']} > {found['client']} px"
    assert len(found["plots"]) == 4
    _sized(found["plots"])
    assert len(found["audio"]) == PREVIEW_SAMPLES
    _not_blank(found["screenshot"])
