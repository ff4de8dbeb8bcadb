"""Shard names and shard sizes as every writer of sharded datasets reads and writes them (SPEC §12.4)."""

from __future__ import annotations

import pytest

from h5ml.errors import ParameterError
from h5ml.writer.shard_naming import (
    check_shard_split_name,
    parse_samples_per_shard,
    parse_shard_path,
    parse_shard_size,
    shard_path,
)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (1, 1),
        (4096, 4096),
        ("1000", 1000),
        ("512MiB", 512 * 1024**2),
        ("1GiB", 1024**3),
        ("100MB", 100_000_000),
        ("1.5KB", 1500),
        ("1.5KiB", 1536),
        (" 2 MiB ", 2 * 1024**2),
        ("3kB", 3000),
    ],
)
def test_shard_sizes_read_as_bytes(value: object, expected: int) -> None:
    """Bytes, decimal and binary units, decimals giving whole bytes (§12.4)."""
    assert parse_shard_size(value) == expected


@pytest.mark.parametrize(
    ("value", "words"),
    [
        (0, "at least 1 byte"),
        (-5, "at least 1 byte"),
        ("0B", "at least 1 byte"),
        ("1G", "GB (powers of 1000) or GiB (powers of 1024)"),
        ("1Gb", "GB (powers of 1000) or GiB (powers of 1024)"),
        ("1gib", "GB (powers of 1000) or GiB (powers of 1024)"),
        ("0.5B", "not a whole number of bytes"),
        ("1.0001KB", "not a whole number of bytes"),
        ("abc", "a number and a unit"),
        ("-1MB", "a number and a unit"),
        ("", "a number and a unit"),
        (True, "a number and a unit"),
        (1.5, "a number and a unit"),
        (None, "a number and a unit"),
    ],
)
def test_bad_shard_sizes_are_refused_naming_the_parameter(value: object, words: str) -> None:
    """An ambiguous unit (``1G``: 1000**3 or 1024**3?) is refused rather than guessed; the message names the flag."""
    with pytest.raises(ParameterError) as caught:
        parse_shard_size(value, "--shard-size")
    assert str(caught.value).startswith("--shard-size")
    assert words in str(caught.value)


@pytest.mark.parametrize("value", [0, -1, True, 2.0, "3"])
def test_bad_samples_per_shard_are_refused(value: object) -> None:
    """A number of samples per shard is an int of at least 1."""
    with pytest.raises(ParameterError, match=r"^--samples-per-shard must be a whole number"):
        parse_samples_per_shard(value, "--samples-per-shard")
    assert parse_samples_per_shard(7) == 7


def test_shard_paths_round_trip() -> None:
    """``<split>/<split>-NNNNN.h5``, five digits from 00000, more past 99999; other paths are not shard names."""
    assert shard_path("train", 0) == "train/train-00000.h5"
    assert shard_path("validation", 42) == "validation/validation-00042.h5"
    assert shard_path("train", 123456) == "train/train-123456.h5"
    for split, number in [("train", 0), ("a-b", 7), ("train", 123456), ("échantillon", 3)]:
        assert parse_shard_path(shard_path(split, number)) == (split, number)
    for path in [
        "train/train-1.h5",
        "train/test-00001.h5",
        "train/train-00001.hdf5",
        "train-00001.h5",
        "a/b/a-00001.h5",
    ]:
        assert parse_shard_path(path) is None
    with pytest.raises(ParameterError):
        shard_path("train", -1)


@pytest.mark.parametrize("split", ["a:b", "back\\slash", "tab\tname", "why?", "x" * 250])
def test_split_names_that_cannot_name_a_file_are_refused(split: str) -> None:
    """A split name that a file system or the index schema refuses in a path is refused before anything is written."""
    with pytest.raises(ParameterError, match="rename"):
        check_shard_split_name(split)
