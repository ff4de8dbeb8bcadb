"""``h5ml report`` on names and values a tester found crashing or misdrawn (issue 17), through the real CLI.

Files are written with h5ml's writer into tmp_path; the page is read back and
its SVG plots decoded (text is drawn as glyph paths whose ids name the characters).
"""

from __future__ import annotations

import base64
import io
import re
from pathlib import Path

import numpy as np
import pytest

import h5ml
from h5ml.tools import cli
from h5ml.tools.report.plots import class_histogram, histogram_edges, value_histogram
from test_report import Page


def run_cli(*args: str) -> tuple[int, str, str]:
    """Run the real command line in this process; return (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    code = cli.run(list(args), out, err)
    return code, out.getvalue(), err.getvalue()


def test_names_with_dollars_render(tmp_path: Path) -> None:
    """Class, feature and split names holding ``$`` (unparseable as mathtext) give a page, exit 0."""
    names = ["$\\frac{$", "cost $5 to $"]
    h5ml.write(
        tmp_path / "d.h5",
        {"price $x^$": {"a$^$": np.arange(6.0), "label": h5ml.Categorical(np.array([0, 1, 1, 0, 1, 0]), names)}},
        {"name": "dollars", "license": "MIT"},
    )
    code, _, err = run_cli("report", str(tmp_path / "d.h5"))
    assert (code, err) == (0, "")
    assert "cost $5 to $" in (tmp_path / "d.report.html").read_text(encoding="utf-8")


def test_class_name_with_dollars_is_drawn_literally() -> None:
    """The glyphs drawn for class ``cost $5 to $`` are its characters, upright: no mathtext, ``$`` kept.

    Before the fix the same name was drawn as mathtext: "5 to" in italic and both ``$`` gone.
    """
    uri = class_histogram(["cost $5 to $"], [3], "t")
    svg = base64.b64decode(uri.split(",", 1)[1]).decode("utf-8")
    block = svg.split("<!-- cost $5 to $ -->", 1)[1].split("</g>", 1)[0]
    glyphs = re.findall(r'xlink:href="#([A-Za-z-]+)-([0-9a-f]+)"', block)
    # the ids are DejaVu Sans glyph indices, which for printable ASCII are the character's code minus 29
    assert "".join(chr(int(code, 16) + 29) for _, code in glyphs) == "cost $5 to $"
    assert {font for font, _ in glyphs} == {"DejaVuSans"}  # upright, not the mathtext italic


def _svg_texts(uri: str) -> list[str]:
    """The texts of an SVG plot of the page (matplotlib names each text drawn as paths in a comment)."""
    return re.findall(r"<!-- (.*?) -->", base64.b64decode(uri.split(",", 1)[1]).decode("utf-8"))


def _page(path: Path) -> str:
    code, _, err = run_cli("report", str(path))
    assert (code, err) == (0, "")
    return path.with_name(f"{path.stem}.report.html").read_text(encoding="utf-8")


def test_infinities_are_counted_apart_on_the_page(tmp_path: Path) -> None:
    """A float feature holding NaN, +inf and -inf: the sampled statistics are over its finite values, and the
    page counts each kind of value left out."""
    x = np.array([1.0, np.nan, np.inf, -np.inf, np.inf, 3.0, 5.0])
    h5ml.write(tmp_path / "inf.h5", {"train": {"x": x}}, {"name": "inf", "license": "MIT"})
    text = _page(tmp_path / "inf.h5")
    page = Page(text)
    assert "min 1, max 5, mean 3, std 1.63299, over 3 finite values, not counted: 1 NaN, 2 +inf, 1 -inf" in page.text
    assert page.plot("value-histogram", "x") == {"count": 3, "min": 1.0, "max": 5.0}


def test_histograms_of_values_at_the_float_limits(tmp_path: Path) -> None:
    """float64 values near +-1.7e308 and float16 values at +-65504 give a page with their value histograms;
    the float64 one is drawn on an axis in units of 1e308, as its label says."""
    wide = np.array([1.7e308, -1.7e308, 0.0, 1.0, 1.7e308])
    half = np.array([65504, -65504, 0, 65504, 1], dtype=np.float16)
    h5ml.write(tmp_path / "far.h5", {"train": {"wide": wide, "half": half}}, {"name": "far", "license": "MIT"})
    page = Page(_page(tmp_path / "far.h5"))
    assert page.plot("value-histogram", "wide") == {"count": 5, "min": -1.7e308, "max": 1.7e308}
    assert page.plot("value-histogram", "half") == {"count": 5, "min": -65504.0, "max": 65504.0}
    sources = {a["data-feature"]: a for a in page.all("figure") if a.get("data-plot") == "value-histogram"}
    assert set(sources) == {"wide", "half"}
    (wide_img,) = [a for a in page.all("img") if a.get("alt") == "value-histogram of wide"]
    assert "value (\u00d7 1e308)" in _svg_texts(wide_img["src"])
    (half_img,) = [a for a in page.all("img") if a.get("alt") == "value-histogram of half"]
    assert "value" in _svg_texts(half_img["src"])  # drawn in its own units


@pytest.mark.parametrize(
    ("values", "first", "last", "bins"),
    [
        (
            np.array([1.7976931348623157e308, -1.7976931348623157e308]),
            -1.7976931348623157e308,
            1.7976931348623157e308,
            40,
        ),
        (np.array([65504, -65504, 2], dtype=np.float16), -65504.0, 65504.0, 40),
        (np.array([2.5, 2.5]), 2.5 - 2.5 / 1024, 2.5 + 2.5 / 1024, 1),  # one value: one bin around it
        (np.array([1.0, np.nextafter(1.0, 2.0)]), 1.0 - 2.0**-10, np.nextafter(1.0, 2.0) + 2.0**-10, 1),
        (np.array([0.0, 0.0]), -0.5, 0.5, 1),
    ],
)
def test_histogram_edges_are_finite_and_increasing(values: np.ndarray, first: float, last: float, bins: int) -> None:
    """Edges in float64 over the values' range, never overflowing; one bin when the range cannot be split."""
    edges = histogram_edges(values)
    assert edges.dtype == np.float64 and np.all(np.isfinite(edges)) and np.all(np.diff(edges) > 0)
    assert (float(edges[0]), float(edges[-1]), edges.size - 1) == (first, last, bins)
    counts, _ = np.histogram(values.astype(np.float64), edges)
    assert int(counts.sum()) == values.size  # every value in a bin, the extremes too


def test_value_histogram_of_float16_values_at_their_limits() -> None:
    """float16 values at +-65504 (their range overflows float16) are binned in float64."""
    texts = _svg_texts(value_histogram(np.array([65504, -65504], dtype=np.float16), "t"))
    ticks = texts[: texts.index("value")]  # the x axis spans the values: -60000 .. 60000
    assert ticks == [f"{v:d}".replace("-", "\u2212") for v in range(-60000, 60001, 20000)]


def test_a_million_class_names_give_a_small_page(tmp_path: Path) -> None:
    """A categorical feature of 1,000,000 class names: the class histogram and its data show the 40 most
    frequent classes, its caption says how many there are in all, and the page stays small."""
    names = [f"class {i}" for i in range(1_000_000)]
    codes = np.repeat(np.arange(0, 1_000_000, 20_000), np.arange(1, 51))  # class 20000 k: k + 1 samples
    h5ml.write(
        tmp_path / "many.h5",
        {"train": {"label": h5ml.Categorical(codes, names)}},
        {"name": "many", "license": "MIT"},
    )
    text = _page(tmp_path / "many.h5")
    page = Page(text)
    expected = {f"class {20_000 * k}": k + 1 for k in range(10, 50)}  # the 40 most frequent, in code order
    assert page.plot("class-histogram", "label") == expected
    assert "1000000 classes in all; the plot and its data show the 40 most frequent." in page.text
    assert len(text) < 500_000  # the names and counts of every class would be tens of MB


def test_images_spanning_the_whole_float64_range_are_scaled(tmp_path: Path) -> None:
    """float64 images from -1.6e308 to 1.6e308: each pixel is its place in that range (the range's width
    overflows float64: every pixel was drawn black)."""
    from PIL import Image

    top = 0.9 * float(np.finfo(np.float64).max)  # about 1.6e308
    images = np.zeros((4, 8, 8))
    images[0, 0, :5] = [-top, top, top / 2, -top / 2, 0.0]  # one of each: the writer's sums stay finite
    h5ml.write(tmp_path / "wide.h5", {"train": {"image": images}}, {"name": "wide", "license": "MIT"})
    page = Page(_page(tmp_path / "wide.h5"))
    sources = [a["src"] for a in page.all("img") if a.get("alt", "").startswith("#")]
    drawn = np.asarray(Image.open(io.BytesIO(base64.b64decode(sources[0].split(",", 1)[1]))).convert("L"))
    assert drawn[0, :5].tolist() == [0, 255, 191, 64, 128]  # round(255 * place): 0, 1, 0.75, 0.25, 0.5
    assert np.all(drawn[1:] == 128)


def test_audio_with_infinities_and_huge_values(tmp_path: Path) -> None:
    """Audio clips holding +inf and NaN (the stored statistics then name no finite range) and values near
    1.7e308: waveforms on an axis of the sampled range, players scaled to their peak, no crash."""
    top = 1.7e308
    loud = np.sin(np.arange(400) / 5.0)
    loud[:2] = [top, -top]  # one of each: the writer's sums stay finite
    clips = [loud, np.array([np.nan, np.inf, 0.5] * 100)]
    h5ml.write(
        tmp_path / "loud.h5",
        {"train": {"clip": clips}},
        {"name": "loud", "license": "MIT"},
        features={"clip": {"sample_rate": 8000.0}},
    )
    page = Page(_page(tmp_path / "loud.h5"))
    assert len(page.all("audio")) == 2
    assert "waveforms on one amplitude axis, -1.7e+308 to 1.7e+308" in page.text
    (first, _) = [a for a in page.all("img") if a.get("alt", "").startswith("waveform")]
    assert first["alt"] == "waveform #0, 0.05 s, scaled to its peak"
    assert "1.7e+308" in _svg_texts(first["src"])  # the axis labelled with the amplitudes as they are


def test_long_class_names_are_cut_in_captions(tmp_path: Path) -> None:
    """A class name of 100,000 characters labels its previews cut to MAX_CELL_CHARS, with an ellipsis."""
    from h5ml.tools.report.previews import MAX_CELL_CHARS

    names = ["x" * 100_000, "short"]
    images = np.random.default_rng(2).integers(0, 256, (4, 8, 8), dtype=np.uint8)
    h5ml.write(
        tmp_path / "long.h5",
        {"train": {"image": images, "label": h5ml.Categorical(np.array([0, 1, 0, 1]), names)}},
        {"name": "long", "license": "MIT"},
    )
    page = Page(_page(tmp_path / "long.h5"))
    alts = [a["alt"] for a in page.all("img") if a.get("alt", "").startswith("#")]
    cut = "x" * (MAX_CELL_CHARS - 1) + "\u2026"
    assert alts == [f"#0 {cut}", "#1 short", f"#2 {cut}", "#3 short"]
