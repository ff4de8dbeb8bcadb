"""Constants of spec.py, the issue-code registry, and their agreement with SPEC.md."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from h5ml import spec
from h5ml.spec import codes

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(("text", "expected"), [("1.0", (1, 0)), ("2.13", (2, 13)), ("0.0", (0, 0))])
def test_parse_version_accepts_major_minor(text: str, expected: tuple[int, int]) -> None:
    """§1.2: format_version is MAJOR.MINOR."""
    assert spec.parse_version(text) == expected


@pytest.mark.parametrize("text", ["1", "1.0.0", "1.0\n", "01.0", "1.01", "v1.0", "", " 1.0", "1.a"])
def test_parse_version_rejects_other_forms(text: str) -> None:
    """§1.2: anything but two integers without leading zeros is refused."""
    with pytest.raises(ValueError, match=r"MAJOR\.MINOR"):
        spec.parse_version(text)


@pytest.mark.parametrize("name", ["train", "validation", "x", "image_0", "音声", "a b", "Test-1", "image.v2"])
def test_valid_names(name: str) -> None:
    """§5.1/§5.2: unicode names without '/', '.', leading '_' or surrounding whitespace."""
    assert spec.is_valid_name(name)


@pytest.mark.parametrize(
    "name", ["", "_h5ml", "a/b", "..", " train", "train ", ".hidden", "x" * 256, "x\x00y", "a\ud800"]
)
def test_invalid_names(name: str) -> None:
    """§5.1/§5.4: reserved prefix, separators, whitespace and over-long names are refused."""
    assert not spec.is_valid_name(name)


def test_registry_codes_are_unique_and_well_formed() -> None:
    """§9.2: stable codes, the letter giving the severity."""
    letters = {codes.Severity.ERROR: "E", codes.Severity.WARNING: "W", codes.Severity.INFO: "I"}
    for key, entry in codes.CODES.items():
        assert key == entry.code
        assert re.fullmatch(r"[EWI][0-9]{3}", entry.code)
        assert entry.code[0] == letters[entry.severity]
        assert re.fullmatch(r"§[0-9]+(\.[0-9]+)*", entry.clause)
        assert codes.by_name(entry.name) is entry


def test_spec_md_lists_every_code_with_its_clause() -> None:
    """§9.2: SPEC.md's registry table and codes.py are the same table."""
    text = (ROOT / "SPEC.md").read_text(encoding="utf-8")
    for entry in codes.CODES.values():
        row = re.search(rf"^\|\s*`?{entry.code}`?\s*\|.*$", text, flags=re.MULTILINE)
        assert row is not None, f"{entry.code} is missing from SPEC.md §9.2"
        assert entry.name in row.group(0)
        assert entry.clause in row.group(0)


def test_every_clause_cited_by_a_code_exists_in_spec_md() -> None:
    """Codes cite clauses that SPEC.md defines as headings."""
    text = (ROOT / "SPEC.md").read_text(encoding="utf-8")
    headings = set(re.findall(r"^#+\s+(§?[0-9]+(?:\.[0-9]+)*)", text, flags=re.MULTILINE))
    headings = {h.lstrip("§") for h in headings}
    for entry in codes.CODES.values():
        assert entry.clause.lstrip("§") in headings, f"{entry.code} cites {entry.clause}, not a heading in SPEC.md"


def test_one_rule_for_seeds_and_gzip_levels(tmp_path: Path) -> None:
    """§3.5, §5.3, §7.6: the writer, every converter and the validator accept the same seeds (numpy integers too)
    and gzip levels, and refuse the same values (a bool is not an integer here)."""
    import numpy as np

    import h5ml
    from h5ml.ingest import ConvertOptions

    good_seeds, bad_seeds = [0, np.int64(2**62), 2**63 - 1], [-1, 2**63, True, 1.0, "3"]
    assert all(spec.is_shuffle_seed(s) for s in good_seeds) and not any(spec.is_shuffle_seed(s) for s in bad_seeds)
    assert all(spec.is_gzip_level(v) for v in (0, np.uint8(9))) and not any(spec.is_gzip_level(v) for v in (10, True))
    x = {"train": {"x": np.arange(4)}}
    for seed in good_seeds:
        h5ml.write(tmp_path / "w.h5", x, shuffle=True, seed=seed)
        ConvertOptions(shuffle=True, seed=seed)
    for seed in bad_seeds:
        with pytest.raises(h5ml.WriterError):
            h5ml.write(tmp_path / "w.h5", x, shuffle=True, seed=seed)
        with pytest.raises(h5ml.ParameterError):
            ConvertOptions(shuffle=True, seed=seed)
    with pytest.raises(h5ml.WriterError, match="compression_opts"):
        h5ml.Writer(tmp_path / "l.h5", compression="gzip", compression_opts=True)
    with pytest.raises(h5ml.ParameterError, match="level"):
        ConvertOptions(compression="gzip", level=True)


@pytest.mark.parametrize("char", sorted(spec.WHITESPACE))
def test_every_listed_whitespace_is_refused_at_either_end_of_a_name(char: str) -> None:
    """§5.1.1 (1.1): the 25 White_Space code points of the text, no more, no fewer, at the start and the end."""
    assert not spec.is_valid_name(f"{char}x") and not spec.is_valid_name(f"x{char}")
    assert spec.is_valid_name(f"a{char}b")  # inside a name, whitespace is an ordinary character


@pytest.mark.parametrize("char", ["\x1c", "\x1d", "\x1e", "\x1f", "\u180e", "\u200b", "\ufeff"])
def test_code_points_that_are_not_white_space_are_ordinary_in_names(char: str) -> None:
    """§5.1.1 (1.1): Python's str.isspace counts U+001C-U+001F; the spec's list does not, nor U+180E, U+200B, U+FEFF."""
    assert spec.is_valid_name(f"{char}x") and spec.is_valid_name(f"x{char}")
    assert len(spec.WHITESPACE) == 25 and all(ord(c) < 0x3001 for c in spec.WHITESPACE)


@pytest.mark.parametrize("names", [["org.example:sparse-coo"], ["sparse"], ["a", "b"]])
def test_writer_lists_no_extension_it_does_not_implement(tmp_path: Path, names: list[str]) -> None:
    """§1.5.1: a writer lists no extension name, of either form, that it does not implement (this one implements none)."""
    # SPEC §1.5-R4, §1.5.1-R1
    import h5ml

    with pytest.raises(h5ml.MetadataError, match=r"extension\(s\) this writer does not implement"):
        h5ml.write(tmp_path / "x.h5", {"train": {"x": np.zeros((2, 2))}}, metadata={"must_understand": names})
    assert not (tmp_path / "x.h5").exists()
