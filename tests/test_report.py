"""``h5ml report``: the HTML page of a file or a sharded dataset, through the real command line (issue 17).

Files are written with h5ml's writer (images with labels and class names,
ragged float32 audio with ``sample_rate``, strings, categorical codes, a
sharded dataset); the page is parsed with the standard library's
:class:`html.parser.HTMLParser` and its figures compared with values computed
here from the data written. The browser checks are in ``test_report_browser.py``.
"""

from __future__ import annotations

import base64
import io
import json
import os
import wave
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import h5ml
from h5ml.tools import cli
from h5ml.tools.report import default_output, write_report
from h5ml.tools.report.sample import PREVIEW_SAMPLES, SAMPLE_BYTES, SAMPLE_ROWS, sample_rows, value_stats

CLASSES = ["cat", "dog", "<b>bird</b>"]
RATE = 8000.0
HOSTILE = "A set.\n<script>document.title='pwned'</script> & \"quoted\""


def run_cli(*args: str) -> tuple[int, str, str]:
    """Run the real command line in this process; return (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    code = cli.run(list(args), out, err)
    return code, out.getvalue(), err.getvalue()


class Page(HTMLParser):
    """The elements of a page: every start tag with its attributes, and the text."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str]]] = []
        self.chunks: list[str] = []
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, {k: v or "" for k, v in attrs}))

    def handle_data(self, data: str) -> None:
        self.chunks.append(data)

    @property
    def text(self) -> str:
        """The page's text, markup decoded (what a browser shows), chunks joined by spaces."""
        return " ".join(self.chunks)

    def all(self, tag: str, **wanted: str) -> list[dict[str, str]]:
        """The attributes of every ``tag`` whose attributes include ``wanted`` (``class_`` for ``class``)."""
        found = []
        for name, attrs in self.tags:
            if name != tag:
                continue
            if all(value in attrs.get(key.rstrip("_"), "").split() for key, value in wanted.items()):
                found.append(attrs)
        return found

    def plot(self, kind: str, feature: str) -> Any:
        """The data of the plot ``kind`` of ``feature`` (its ``data-values``, JSON)."""
        (attrs,) = [a for a in self.all("figure") if a.get("data-plot") == kind and a.get("data-feature") == feature]
        return json.loads(attrs["data-values"])


def write_media(path: Path, n: int = 30) -> dict[str, Any]:
    """Images (N, 12, 10, 3) uint8 labelled with CLASSES, ragged float32 audio at RATE, strings and a number."""
    rng = np.random.default_rng(7)
    labels = rng.integers(0, len(CLASSES), n)
    labels[3] = -1  # one missing label
    lengths = rng.integers(400, 1200, n)
    data = {
        "image": rng.integers(0, 256, (n, 12, 10, 3), dtype=np.uint8),
        "label": labels,
        "audio": [(0.5 * np.sin(np.arange(k) / 7.0)).astype(np.float32) for k in lengths],
        "caption": [f"caption <i>{i}</i>" for i in range(n)],
        "score": rng.normal(size=n).astype(np.float32),
    }
    h5ml.write(
        path,
        {"train": {**data, "label": h5ml.Categorical(labels, CLASSES)}},
        {"name": "media <set>", "description": HOSTILE, "license": "CC-BY-4.0", "creator": "h5ml tests"},
        features={"label": {"role": "target"}, "audio": {"sample_rate": RATE}},
    )
    return data


@pytest.fixture(scope="module")
def media(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any], Page, str]:
    folder = tmp_path_factory.mktemp("media")
    data = write_media(folder / "media.h5")
    code, out, err = run_cli("report", str(folder / "media.h5"))
    assert (code, err) == (0, "")
    page = folder / "media.report.html"  # the default output: beside the file, named after it
    assert out.strip() == f"wrote {page}"
    text = page.read_text(encoding="utf-8")
    return folder, data, Page(text), text


def test_class_histogram_counts_every_sample_by_class_name(media: tuple[Path, dict[str, Any], Page, str]) -> None:
    """The class histogram's data are the samples of each class, by name (§6.5), counted over every sample."""
    _, data, page, _ = media
    labels = data["label"]
    expected = {name: int(np.count_nonzero(labels == k)) for k, name in enumerate(CLASSES)}
    assert page.plot("class-histogram", "label") == expected
    assert sum(expected.values()) == len(labels) - 1  # the missing label counts in no class


def test_image_previews_are_the_first_samples_with_their_labels(media: tuple[Path, dict[str, Any], Page, str]) -> None:
    """A grid of the first PREVIEW_SAMPLES images, each a PNG of the stored pixels, captioned with its class name."""
    from PIL import Image

    _, data, page, _ = media
    images = [a for a in page.all("img") if a["src"].startswith("data:image/png")]
    assert len(page.all("figure", class_="preview-image")) == PREVIEW_SAMPLES == len(images)
    first = Image.open(io.BytesIO(base64.b64decode(images[0]["src"].split(",", 1)[1]))).convert("RGB")
    np.testing.assert_array_equal(np.asarray(first), data["image"][0])
    names = [CLASSES[k] if k >= 0 else "(missing)" for k in data["label"][:PREVIEW_SAMPLES]]
    assert [a["alt"] for a in images] == [f"#{i} {name}" for i, name in enumerate(names)]


def test_audio_previews_embed_wav_players_and_waveforms(media: tuple[Path, dict[str, Any], Page, str]) -> None:
    """A feature with sample_rate (§6.1) gets an <audio> player per preview (a WAV in the page) and a waveform."""
    _, data, page, _ = media
    players = page.all("audio")
    assert len(players) == PREVIEW_SAMPLES
    assert len(page.all("div", class_="preview-audio")) == PREVIEW_SAMPLES
    with wave.open(io.BytesIO(base64.b64decode(players[2]["src"].split(",", 1)[1]))) as clip:
        assert (clip.getframerate(), clip.getnchannels(), clip.getsampwidth()) == (int(RATE), 1, 2)
        frames = np.frombuffer(clip.readframes(clip.getnframes()), dtype="<i2")
    expected = np.round(np.clip(data["audio"][2].astype(np.float64), -1, 1) * 32767).astype(np.int16)
    np.testing.assert_array_equal(frames, expected)


def test_ragged_lengths_min_median_max(media: tuple[Path, dict[str, Any], Page, str]) -> None:
    """The length histogram of a ragged feature is over every sample; min/median/max are those of the data."""
    _, data, page, text = media
    lengths = np.array([len(a) for a in data["audio"]])
    figures = page.plot("length-histogram", "audio")
    assert figures == {"min": int(lengths.min()), "median": float(np.median(lengths)), "max": int(lengths.max())}
    assert f"{lengths.min()} / {np.median(lengths):g} / {lengths.max()}" in text


def test_stored_png_and_grey_images_are_previewed(tmp_path: Path) -> None:
    """A bytes feature of media_type image/png is embedded as stored; (H, W) uint8 images as grey PNGs."""
    from PIL import Image

    grey = np.random.default_rng(3).integers(0, 256, (10, 9, 7), dtype=np.uint8)
    encoded = []
    for image in grey:
        buffer = io.BytesIO()
        Image.fromarray(image).save(buffer, format="PNG")
        encoded.append(buffer.getvalue())
    h5ml.write(
        tmp_path / "png.h5",
        {"train": {"png": encoded, "grey": grey}},
        {"name": "png", "license": "MIT"},
        features={"png": {"encoding": "bytes", "media_type": "image/png"}},
    )
    code, _, err = run_cli("report", str(tmp_path / "png.h5"))
    assert (code, err) == (0, "")
    page = Page((tmp_path / "png.report.html").read_text(encoding="utf-8"))
    grids = [a["data-feature"] for a in page.all("div", class_="grid")]  # in page order
    assert sorted(grids) == ["grey", "png"]
    sources = [a["src"] for a in page.all("img") if a.get("alt", "").startswith("#")]
    assert len(sources) == 2 * PREVIEW_SAMPLES and all(s.startswith("data:image/png") for s in sources)
    shown = [base64.b64decode(src.split(",", 1)[1]) for src in sources]
    by_feature = {grids[0]: shown[:PREVIEW_SAMPLES], grids[1]: shown[PREVIEW_SAMPLES:]}
    assert by_feature["png"] == encoded[:PREVIEW_SAMPLES]  # the stored PNGs, unchanged
    for drawn, stored in zip(by_feature["grey"], grey, strict=False):
        np.testing.assert_array_equal(np.asarray(Image.open(io.BytesIO(drawn)).convert("L")), stored)


def test_string_and_table_rows_are_escaped_text(media: tuple[Path, dict[str, Any], Page, str]) -> None:
    """The first rows of string, categorical and scalar features, their markup shown as text."""
    _, data, page, text = media
    assert "caption &lt;i&gt;0&lt;/i&gt;" in text
    assert not page.all("i")  # no <i> element: the strings are data (§10.2)
    assert f"{float(data['score'][1]):.6g}" in page.text
    assert "(missing)" in page.text  # code -1 of the label in row 3


def test_description_with_script_is_shown_not_run(media: tuple[Path, dict[str, Any], Page, str]) -> None:
    """The card shows a description holding <script> as text: the page has no script element at all."""
    _, _, page, text = media
    assert not page.all("script")
    assert "&lt;script&gt;document.title=&#x27;pwned&#x27;&lt;/script&gt; &amp; &quot;quoted&quot;" in text
    assert "<script>document.title='pwned'</script>" in page.text
    assert page.all("meta", **{"http-equiv": "Content-Security-Policy"})[0]["content"].startswith("default-src 'none'")


def test_page_is_self_contained(media: tuple[Path, dict[str, Any], Page, str]) -> None:
    """No URL but data: in any src or href, no stylesheet link, no script (the page views offline)."""
    _, _, page, _ = media
    for _, attrs in page.tags:
        for key in ("src", "href"):
            if key in attrs:
                assert attrs[key].startswith("data:"), attrs[key][:80]
    assert not page.all("link")
    assert not page.all("script")


def test_card_and_validation_are_shown(media: tuple[Path, dict[str, Any], Page, str]) -> None:
    """The card fields (§4.2) and the validator's verdict with its issues (code, severity, path, message, clause)."""
    folder, _, page, text = media
    with h5ml.open(folder / "media.h5") as ds:
        fingerprint, writer = ds.attrs["fingerprint"], ds.attrs["writer"]
    for value in ("media &lt;set&gt;", "CC-BY-4.0", "h5ml tests", fingerprint, writer):
        assert value in text
    assert page.all("span", class_="valid")
    from h5ml.validator import validate

    issues = validate(folder / "media.h5").issues
    assert issues  # I303: no shuffle seed
    for issue in issues:
        assert issue.code in page.text and issue.clause in page.text


def test_invalid_file_the_reader_refuses_gets_its_validation_only(tmp_path: Path) -> None:
    """A feature attribute of the wrong type (E117): the page shows the card, INVALID and the issue, no figures; exit 1."""
    import h5py

    write_media(tmp_path / "bad.h5", n=10)
    with h5py.File(tmp_path / "bad.h5", "r+") as f:
        f["train/score"].attrs["units"] = np.int64(3)
    code, out, err = run_cli("report", str(tmp_path / "bad.h5"), "-o", str(tmp_path / "bad.html"))
    assert code == 1 and out.strip() == f"wrote {tmp_path / 'bad.html'}"
    assert "could not be read" in err and "'units'" in err and "Traceback" not in err
    page = Page((tmp_path / "bad.html").read_text(encoding="utf-8"))
    assert page.all("span", class_="invalid") and page.all("p", class_="invalid")
    issue_rows = page.text
    assert "E117" in issue_rows and "/train/score" in issue_rows and "§6.1" in issue_rows
    assert "media <set>" in issue_rows  # the card, read from the root attributes
    assert not page.all("section") and not page.all("figure")  # no figure of a part of the file


def test_incomplete_file_gets_its_validation_only(tmp_path: Path) -> None:
    """A file without its completion marker (E106, §4.4): the reader refuses it; the page says why, exit 1."""
    import h5py

    write_media(tmp_path / "cut.h5", n=5)
    with h5py.File(tmp_path / "cut.h5", "r+") as f:
        del f.attrs["complete"]
    code, _, err = run_cli("report", str(tmp_path / "cut.h5"))
    assert code == 1 and "could not be read" in err
    page = Page((tmp_path / "cut.report.html").read_text(encoding="utf-8"))
    assert "E106" in page.text and "§4.4" in page.text and page.all("p", class_="invalid")
    assert not page.all("figure")


def test_sharded_dataset_report(tmp_path: Path) -> None:
    """h5ml report INDEX: the card from the index, a row per shard, figures over every shard, the index validated."""
    n = 25
    labels = np.arange(n) % 2
    with h5ml.Writer(tmp_path / "ds", {"name": "sharded", "license": "MIT"}, samples_per_shard=10) as w:
        w.add_feature("train", "label", encoding="categorical", class_names=["even", "odd"], role="target")
        w.add_feature("train", "clip", encoding="ragged", dtype="float32", sample_rate=4000.0)
        for i in range(n):
            w.append_sample("train", {"label": int(labels[i]), "clip": np.zeros(50 + i, dtype=np.float32)})
    code, out, err = run_cli("report", str(tmp_path / "ds"))
    assert (code, err) == (0, "")
    assert out.strip() == f"wrote {tmp_path / 'ds.report.html'}"  # beside the folder, named after it
    text = (tmp_path / "ds.report.html").read_text(encoding="utf-8")
    page = Page(text)
    shards = json.loads((tmp_path / "ds" / "index.json").read_text())["splits"]["train"]["shards"]
    assert len(shards) == 3
    for shard in shards:
        assert shard["path"] in page.text and shard["fingerprint"] in page.text
    assert page.plot("class-histogram", "label") == {"even": 13, "odd": 12}  # over the three shards
    assert page.plot("length-histogram", "clip") == {"min": 50, "median": 62.0, "max": 74}
    assert len(page.all("audio")) == PREVIEW_SAMPLES
    assert page.all("span", class_="valid") and "every shard as a file" in page.text
    assert "sharded" in page.text and "MIT" in page.text


def test_sharded_dataset_with_a_missing_shard(tmp_path: Path) -> None:
    """A shard gone: the page lists it as unread and shows E171 at its entry, no figures of the others; exit 1."""
    with h5ml.Writer(tmp_path / "ds", {"name": "sharded", "license": "MIT"}, samples_per_shard=5) as w:
        w.add_feature("train", "x", encoding="dense", dtype="float32")
        for i in range(12):
            w.append_sample("train", {"x": np.float32(i)})
    (tmp_path / "ds" / "train" / "train-00001.h5").unlink()
    code, out, err = run_cli("report", str(tmp_path / "ds" / "index.json"))
    assert code == 1 and out.strip() == f"wrote {tmp_path / 'ds.report.html'}"
    assert "train/train-00001.h5" in err and "Traceback" not in err
    page = Page((tmp_path / "ds.report.html").read_text(encoding="utf-8"))
    words = page.text
    assert "E171" in words and "/splits/train/shards/1" in words
    assert words.count("train/train-0000") >= 3  # every shard listed, the missing one with its reason
    assert not page.all("section") and not page.all("figure")


@pytest.mark.parametrize("kind", ["missing", "not_hdf5", "not_h5ml", "directory"])
def test_unusable_input_is_one_error_line_and_no_page(tmp_path: Path, kind: str) -> None:
    """A missing file, a file that is not HDF5, an HDF5 file that is not h5ml: exit 2, one line, nothing written."""
    import h5py

    path = tmp_path / "input.h5"
    if kind == "not_hdf5":
        path.write_text("not an HDF5 file\n")
    elif kind == "not_h5ml":
        with h5py.File(path, "w") as f:
            f["data"] = np.arange(3)
    elif kind == "directory":
        path.mkdir()
    code, out, err = run_cli("report", str(path))
    assert (code, out) == (2, "")
    assert err.startswith("h5ml: error: ") and err.count("\n") == 1 and "Traceback" not in err
    expected = {
        "missing": "does not exist; check the path",
        "not_hdf5": "not an HDF5 file",
        "not_h5ml": "not an h5ml file",
    }
    assert expected.get(kind, "directory") in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ([] if kind == "missing" else ["input.h5"])


def test_existing_output_needs_overwrite(tmp_path: Path) -> None:
    """An existing page is kept without --overwrite (the message names the flag), replaced with it; never the input."""
    write_media(tmp_path / "m.h5", n=6)
    out = tmp_path / "page.html"
    out.write_text("keep me")
    code, _, err = run_cli("report", str(tmp_path / "m.h5"), "-o", str(out))
    assert code == 2 and "--overwrite" in err and "overwrite=True" not in err
    assert out.read_text() == "keep me"
    code, _, err = run_cli("report", str(tmp_path / "m.h5"), "-o", str(out), "--overwrite")
    assert (code, err) == (0, "")
    assert out.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    code, _, err = run_cli("report", str(tmp_path / "m.h5"), "-o", str(tmp_path / "m.h5"), "--overwrite")
    assert code == 2 and "the source itself" in err
    assert h5ml.open(tmp_path / "m.h5").splits["train"].num_samples == 6  # the input is intact
    with pytest.raises(FileExistsError, match=r"overwrite=True"):  # Python's words in Python
        write_report(tmp_path / "m.h5", out)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.h5", "page.html"]  # no temporary file left


def test_default_output_paths(tmp_path: Path) -> None:
    """<stem>.report.html beside a file; <folder>.report.html beside a sharded dataset's folder."""
    (tmp_path / "ds").mkdir()
    (tmp_path / "ds" / "index.json").write_text("{}")
    assert default_output(tmp_path / "data.h5") == tmp_path / "data.report.html"
    assert default_output(tmp_path / "ds") == tmp_path / "ds.report.html"
    assert default_output(tmp_path / "ds" / "index.json") == tmp_path / "ds.report.html"


def test_large_split_is_sampled_and_the_page_says_so(tmp_path: Path) -> None:
    """Statistics of a split larger than SAMPLE_ROWS come from SAMPLE_ROWS rows in evenly spread runs, as the page says."""
    n = 5000
    values = np.arange(n, dtype=np.float32)
    h5ml.write(tmp_path / "big.h5", {"train": {"x": values}}, {"name": "big", "license": "MIT"})
    code, _, err = run_cli("report", str(tmp_path / "big.h5"))
    assert (code, err) == (0, "")
    page = Page((tmp_path / "big.report.html").read_text(encoding="utf-8"))
    note = page.text
    assert f"{SAMPLE_ROWS} of {n} samples, in 16 runs" in note
    figures = page.plot("value-histogram", "x")
    rows = sample_rows(n, 4)
    assert figures == {"count": SAMPLE_ROWS, "min": 0.0, "max": float(rows.rows[-1])}
    assert rows.rows[-1] == n - 1  # the last run ends at the split's end


def test_sample_rows_bounds() -> None:
    """Evenly spread runs, increasing and unique; fewer rows when rows are large; every row of a small split."""
    small = sample_rows(100, 8)
    assert small.everything and small.describe() == "all 100 samples"
    rows = sample_rows(10**9, 8)
    assert rows.rows.size == SAMPLE_ROWS and rows.runs == 16
    assert np.all(np.diff(rows.rows) > 0) and rows.rows[0] == 0 and rows.rows[-1] == 10**9 - 1
    runs = np.split(rows.rows, np.nonzero(np.diff(rows.rows) > 1)[0] + 1)
    assert [len(r) for r in runs] == [SAMPLE_ROWS // 16] * 16
    wide = sample_rows(10**6, SAMPLE_BYTES / 4)  # rows of 8 MiB: 4 of them fit the budget
    assert wide.rows.size == 4 and wide.runs == 4


def test_value_stats_counts_nan_apart() -> None:
    """NaN, +inf and -inf are counted apart; count, min, max, mean and std are over the finite values only."""
    stats = value_stats([np.array([1.0, np.nan, 3.0, -np.inf]), np.array([np.inf, 5.0, np.inf])])
    assert (stats.count, stats.nan_count, stats.posinf_count, stats.neginf_count) == (3, 1, 2, 1)
    assert (stats.minimum, stats.maximum, stats.mean) == (1.0, 5.0, 3.0)
    assert stats.std == pytest.approx(np.sqrt(8 / 3), rel=1e-15)
    assert stats.values.tolist() == [1.0, 3.0, 5.0]
    assert stats.not_finite_text() == "1 NaN, 2 +inf, 1 -inf"


def test_value_stats_near_the_largest_float_do_not_overflow() -> None:
    """Values near 1.7e308 give a finite mean and std (a plain float64 sum overflows to inf)."""
    stats = value_stats(np.array([1.7e308, 1.7e308, -1.0e308]))
    assert stats.mean == pytest.approx(0.8e308, rel=1e-15)
    assert stats.std == pytest.approx(np.sqrt(1.62) * 1e308, rel=1e-15)  # deviations 0.9, 0.9, -1.8 (x 1e308)
    assert (stats.minimum, stats.maximum) == (-1.0e308, 1.7e308)


def test_value_stats_of_64_bit_integers_are_exact() -> None:
    """int64 and uint64 means and stds are those of the exact integers, where float64 values would round them."""
    extremes = value_stats(np.array([-(2**63), 2**63 - 1], dtype=np.int64))
    assert extremes.mean == -0.5  # float64 values give 0.0: 2**63 - 1 rounds to 2**63
    assert extremes.std == float(2**63)  # exactly 2**63 - 0.5, rounded to float64
    near = value_stats(np.array([2**63 - 1, 2**63 - 3, 2**63 - 5], dtype=np.int64))
    assert near.mean == float(2**63 - 3)
    assert near.std == pytest.approx(np.sqrt(8 / 3), rel=1e-15)  # float64 values would all be 2**63: std 0
    unsigned = value_stats(np.array([2**64 - 1, 2**64 - 2, 2**64 - 1, 2**64 - 2], dtype=np.uint64))
    assert (unsigned.mean, unsigned.std) == (float(2**64), 0.5)
    assert (unsigned.count, unsigned.minimum, unsigned.maximum) == (4, 2**64 - 2, 2**64 - 1)  # exact, as ints
    assert (extremes.minimum, extremes.maximum) == (-(2**63), 2**63 - 1)


def test_report_imports_no_pyplot(tmp_path: Path) -> None:
    """The plots are drawn on the Agg canvas without pyplot: a report selects no GUI backend (checked in a child)."""
    import subprocess
    import sys

    write_media(tmp_path / "m.h5", n=4)
    script = (
        "import sys; from h5ml.tools.report import write_report; "
        f"write_report({str(tmp_path / 'm.h5')!r}); "
        "print('matplotlib.pyplot' in sys.modules)"
    )
    env = {**os.environ, "DISPLAY": "", "MPLBACKEND": ""}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"


def test_invalid_file_the_reader_reads_exits_1_with_its_whole_page(tmp_path: Path) -> None:
    """E131 (an unknown encoding) on one feature: the reader reads the rest, the page is whole, the exit is 1."""
    import h5py

    write_media(tmp_path / "bad.h5", n=10)
    with h5py.File(tmp_path / "bad.h5", "r+") as f:
        f["train/score"].attrs["encoding"] = "sparse"
    code, out, err = run_cli("report", str(tmp_path / "bad.h5"))
    assert code == 1 and out.strip() == f"wrote {tmp_path / 'bad.report.html'}"
    assert "INVALID" in err and "h5ml validate" in err and "Traceback" not in err
    page = Page((tmp_path / "bad.report.html").read_text(encoding="utf-8"))
    assert page.all("span", class_="invalid") and "E131" in page.text
    assert page.all("section") and page.plot("class-histogram", "label")  # the readable parts are shown
    assert "Feature score cannot be read" in page.text
    code, _, err = run_cli("report", str(tmp_path / "bad.h5"), "-o", str(tmp_path / "again.html"))
    assert code == 1  # the same verdict every time


def test_help_states_the_exit_codes() -> None:
    """The command's help states the exit codes for CI: 0 valid, 1 errors (page written), 2 unusable input."""
    code, out, _ = run_cli("report", "--help")
    assert code == 0
    words = " ".join(out.split())
    assert "Exit status: 0 valid; 1 the validator found errors (the page is still written); 2 unusable input" in words


def test_compression_ratio_is_inspects(tmp_path: Path) -> None:
    """The features table's "ratio stored / raw" is h5ml inspect's figure, in its words and direction."""
    x = np.repeat(np.arange(64, dtype=np.float32), 64).reshape(64, 8, 8)  # compressible content
    h5ml.write(tmp_path / "z.h5", {"train": {"x": x}}, {"name": "z", "license": "MIT"}, compression="gzip")
    code, out, _ = run_cli("inspect", "--format", "json", str(tmp_path / "z.h5"))
    assert code == 0
    (feature,) = json.loads(out)["splits"][0]["features"]
    expected = f"{1 / feature['compression_ratio']:.0%}"
    assert expected != "100%" and feature["compression"]
    code, text, _ = run_cli("inspect", str(tmp_path / "z.h5"))
    assert code == 0 and f"ratio stored / raw {expected}" in " ".join(text.split())
    code, _, _ = run_cli("report", str(tmp_path / "z.h5"))
    assert code == 0
    page = (tmp_path / "z.report.html").read_text(encoding="utf-8")
    assert "<th>ratio stored / raw</th>" in page and "raw / stored" not in page
    assert f"<td>{expected}</td>" in page
