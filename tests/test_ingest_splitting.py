"""Tests of h5ml.ingest.splitting: --split ratios, stratified on the label (§5.1)."""

from __future__ import annotations

from collections import Counter

import pytest

from h5ml.ingest.splitting import assign_splits, parse_ratios


def test_parse_ratios() -> None:
    assert parse_ratios("train=0.8, test=0.2") == {"train": 0.8, "test": 0.2}
    for bad, needle in [("train=0.8", "add up"), ("train", "name=number"), ("a=0.5,a=0.5", "twice"), ("", "no split")]:
        with pytest.raises(ValueError, match=needle):
            parse_ratios(bad)


def test_stratified_counts_per_class_and_determinism() -> None:
    """Each class of 10 splits 8/2; of 5, 4/1; the same seed gives the same assignment, another seed another."""
    labels = ["cat"] * 10 + ["dog"] * 5
    got = assign_splits(15, {"train": 0.8, "test": 0.2}, seed=3, labels=labels)
    per = Counter(zip(labels, got, strict=True))
    assert per == {("cat", "train"): 8, ("cat", "test"): 2, ("dog", "train"): 4, ("dog", "test"): 1}
    assert got == assign_splits(15, {"train": 0.8, "test": 0.2}, seed=3, labels=labels)
    assert got != assign_splits(15, {"train": 0.8, "test": 0.2}, seed=4, labels=labels)


def test_without_labels_three_way() -> None:
    """7 samples at 0.5/0.25/0.25 give 4/2/1 or 3/2/2 by largest remainder: the counts add up to 7."""
    got = Counter(assign_splits(7, {"train": 0.5, "validation": 0.25, "test": 0.25}, seed=0))
    assert sum(got.values()) == 7 and got["train"] in (3, 4) and min(got.values()) >= 1
    with pytest.raises(ValueError, match="entries"):
        assign_splits(3, {"train": 1.0}, seed=0, labels=[1, 2])
