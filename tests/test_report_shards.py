"""``h5ml report`` of a sharded dataset: statistics merged over the shards, one path style, no empty column.

A sharded dataset and the one file of the same samples are written with
h5ml's writers; the statistics the report merges from the shards' stored
statistics (§6.7) are compared with those the writer stored for the one
file; the page is written by the real command line and parsed.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import h5ml
from h5ml.model.shard_index import load_index
from h5ml.tools.report.shards import shard_summaries
from h5ml.tools.report.stored_stats import merge_stored_stats, stored_stats_text
from h5ml.tools.summary import summarize
from test_report import Page, run_cli

N = 25


def _values(i: int) -> tuple[np.float32, np.ndarray]:
    """Sample i: a scalar, and a ragged row whose values differ in mean and spread from shard to shard."""
    return np.float32(i * 1.5 - 7.0), (np.arange(1 + i % 4, dtype=np.float32) * (i + 1) / 3.0).astype(np.float32)


@pytest.fixture(scope="module")
def sharded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("sharded")
    with h5ml.Writer(folder / "ds", {"name": "sharded", "license": "MIT"}, samples_per_shard=10) as w:
        w.add_feature("train", "x", encoding="dense", dtype="float32")
        w.add_feature("train", "r", encoding="ragged", dtype="float32")
        w.add_feature("train", "label", encoding="categorical", class_names=["a", "b"], role="target")
        for i in range(N):
            x, r = _values(i)
            w.append_sample("train", {"x": x, "r": r, "label": i % 2})
    scalars = np.array([_values(i)[0] for i in range(N)], dtype=np.float32)
    rows = [_values(i)[1] for i in range(N)]
    h5ml.write(folder / "one.h5", {"train": {"x": scalars, "r": rows}}, {"name": "one", "license": "MIT"})
    return folder


def test_merged_statistics_equal_those_of_the_one_file(sharded: Path) -> None:
    """count, min, max exactly; mean and std (pooled, population) to 1e-12 of what the writer stores for one file."""
    index, where = load_index(sharded / "ds")
    merged, _ = shard_summaries(index, where)
    whole = {f.name: f.stats for f in summarize(sharded / "one.h5").splits[0].features}
    features = {f.name: f.stats for f in merged["train"].features}
    for name in ("x", "r"):
        got, want = features[name], whole[name]
        assert set(got) == set(want) == {"stats_count", "stats_min", "stats_max", "stats_mean", "stats_std"}
        assert (got["stats_count"], got["stats_min"], got["stats_max"]) == (
            want["stats_count"],
            want["stats_min"],
            want["stats_max"],
        )
        assert got["stats_mean"] == pytest.approx(want["stats_mean"], rel=1e-12, abs=1e-12)
        assert got["stats_std"] == pytest.approx(want["stats_std"], rel=1e-12)
    assert features["label"] == {} and merged["train"].stats_notes == {}  # a categorical stores none


def test_page_fills_the_stored_statistics_of_every_split(sharded: Path) -> None:
    """The "stored statistics (§6.7)" cell of a sharded dataset is filled, merged over its 3 shards."""
    code, _, err = run_cli("report", str(sharded / "ds"))
    assert (code, err) == (0, "")
    page = Page((sharded / "ds.report.html").read_text(encoding="utf-8"))
    whole = {f.name: f.stats for f in summarize(sharded / "one.h5").splits[0].features}
    x = whole["x"]
    assert f"count {N}, min {x['stats_min']:.6g}, max {x['stats_max']:.6g}, mean " in page.text
    assert page.text.count("(merged over 3 shards)") == 2  # x and r; the categorical label has none


def test_paths_are_relative_to_the_dataset_folder_everywhere(sharded: Path) -> None:
    """The Validation table names shards as the index and the Shards table do: train/train-00001.h5."""
    code, _, _ = run_cli("report", str(sharded / "ds"), "-o", str(sharded / "paths.html"))
    assert code == 0
    text = (sharded / "paths.html").read_text(encoding="utf-8")
    page = Page(text)
    absolute = str((sharded / "ds" / "train" / "train-00001.h5").absolute())
    assert absolute not in page.text
    # each shard's own issues (W204, I303) are listed under its relative path, in the issues table
    issues = text[text.index('class="issues"') : text.index("</table>", text.index('class="issues"'))]
    assert "<td>train/train-00001.h5</td>" in issues
    shards = text[text.index('class="shards"') : text.index("</table>", text.index('class="shards"'))]
    assert "<td>train/train-00001.h5</td>" in shards


def test_empty_column_is_dropped_and_tables_scroll_in_their_box(sharded: Path) -> None:
    """Every shard read: no "could not be read" column; every table inside a div.wide (overflow-x: auto)."""
    code, _, _ = run_cli("report", str(sharded / "ds"), "-o", str(sharded / "cols.html"))
    assert code == 0
    text = (sharded / "cols.html").read_text(encoding="utf-8")
    assert "could not be read" not in text
    assert ".wide { overflow-x: auto;" in text
    assert text.count("<table") == text.count('<div class="wide"><table')


def test_a_missing_shard_keeps_the_could_not_be_read_column(tmp_path: Path) -> None:
    """A shard gone: the column is there, with the reason beside that shard only."""
    with h5ml.Writer(tmp_path / "ds", {"name": "s", "license": "MIT"}, samples_per_shard=5) as w:
        w.add_feature("train", "x", encoding="dense", dtype="float32")
        for i in range(12):
            w.append_sample("train", {"x": np.float32(i)})
    (tmp_path / "ds" / "train" / "train-00001.h5").unlink()
    code, _, _ = run_cli("report", str(tmp_path / "ds"))
    assert code == 1
    text = (tmp_path / "ds.report.html").read_text(encoding="utf-8")
    assert "<th>could not be read</th>" in text


def test_statistics_that_do_not_merge_say_why() -> None:
    """A shard without a finite std, or without stats_count: the cell says what was not merged, never empty."""
    a = {"stats_count": 4, "stats_min": 0.0, "stats_max": 3.0, "stats_mean": 1.5, "stats_std": 1.118033988749895}
    b = {"stats_count": 2, "stats_min": 4.0, "stats_max": 5.0, "stats_mean": 4.5}
    merged = merge_stored_stats([a, b])
    assert merged.stats == {"stats_count": 6, "stats_min": 0.0, "stats_max": 5.0, "stats_mean": 2.5}
    assert merged.note == "std not merged: shard 1 stores no finite std"
    text = stored_stats_text(merged.stats, merged.note, 2)
    assert (
        text == "count 6, min 0, max 5, mean 2.5 (merged over 2 shards); std not merged: shard 1 stores no finite std"
    )
    none = merge_stored_stats([a, {}, {}])
    assert none.stats == {} and none.note == "not merged: shards 1, 2 store no stats_count"
    assert stored_stats_text(none.stats, none.note, 3) == none.note
    empty = merge_stored_stats([{"stats_count": 0}, {"stats_count": 0}])  # no value anywhere: count only
    assert (empty.stats, empty.note) == ({"stats_count": 0}, "")
    values = np.array([0.0, 1.0, 2.0, 3.0, 4.0, 5.0])
    pooled = merge_stored_stats(
        [
            {
                "stats_count": 4,
                "stats_min": 0.0,
                "stats_max": 3.0,
                "stats_mean": 1.5,
                "stats_std": float(values[:4].std()),
            },
            {"stats_count": 2, "stats_min": 4.0, "stats_max": 5.0, "stats_mean": 4.5, "stats_std": 0.5},
        ]
    )
    assert pooled.stats["stats_std"] == pytest.approx(float(values.std()), rel=1e-15) and pooled.note == ""
