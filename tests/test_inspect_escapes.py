"""Every text output escapes terminal control sequences from a file's text (issue 14, item 8; SPEC §10.2).

Before: a root ``name`` or ``description`` holding ESC sequences (set the
window title, clear the screen) was printed raw by ``inspect``, also in a
terminal. Now every string read from the file is printed with its control
characters escaped, in h5ml files and in foreign HDF5 files alike.
"""

from __future__ import annotations

import io
from pathlib import Path

import h5py
import numpy as np

import h5ml
from h5ml.tools import cli
from h5ml.tools.console import safe_text

TITLE = "\x1b]0;owned\x07"  # OSC: set the window title
CLEAR = "\x1b[2J"  # CSI: clear the screen


def _inspect(path: Path) -> str:
    out, err = io.StringIO(), io.StringIO()
    assert cli.run(["inspect", str(path)], out, err) == 0, err.getvalue()
    return out.getvalue()


def test_inspect_prints_no_control_character_of_the_file(tmp_path: Path) -> None:
    """Name, description, split, feature and class names with ESC/BEL/C1 reach the output escaped, never raw."""
    path = tmp_path / "hostile.h5"
    h5ml.write(
        path,
        {"train": {"x": np.arange(4), "label": np.array([0, 1, 0, 1])}},
        {"name": f"data{TITLE}", "description": f"first line\nsecond {CLEAR} line\x9b31m"},
        features={"label": {"class_names": [f"cat{CLEAR}", "dog"]}, "x": {"description": f"x{TITLE}"}},
    )
    out = _inspect(path)
    assert not any(c in out for c in ("\x1b", "\x07", "\x9b"))
    assert "data\\x1b]0;owned\\x07" in out
    assert "second \\x1b[2J line\\x9b31m" in out


def test_foreign_file_names_are_escaped_too(tmp_path: Path) -> None:
    """A plain HDF5 file whose dataset name holds ESC: its tree shows the name escaped."""
    path = tmp_path / "plain.h5"
    with h5py.File(path, "w") as f:
        f[f"x{CLEAR}"] = np.arange(3)
    out = _inspect(path)
    assert "\x1b" not in out and "x\\x1b[2J" in out


def test_safe_text_keeps_printable_text_and_the_lines_of_long_text() -> None:
    """Printable text (non-ASCII included) is unchanged; tabs and line feeds stay only when asked."""
    assert safe_text("café 猫 ✓") == "café 猫 ✓"
    assert safe_text("a\tb\nc") == "a\\tb\\nc"
    assert safe_text("a\tb\nc\x1b", lines=True) == "a\tb\nc\\x1b"
    assert safe_text("\x7f\x85") == "\\x7f\\x85"


def test_every_text_output_escapes_split_and_feature_names(tmp_path: Path) -> None:
    """SPEC §10.2-S2: split and feature names with ESC reach dump, validate and verify output escaped, never raw."""
    path = tmp_path / "names.h5"
    h5ml.write(path, {"train": {"x": np.arange(4)}}, {"name": "t"})
    with h5py.File(path, "r+") as f:
        f.move("train/x", f"train/x{CLEAR}")
        f.move("train", f"train{TITLE}")
    for words in (["dump", "--format", "text"], ["dump"], ["validate", "--deep"], ["verify"], ["inspect"]):
        out, err = io.StringIO(), io.StringIO()
        cli.run([*words, str(path)], out, err)
        text = out.getvalue() + err.getvalue()
        assert "x" in text and not any(c in text for c in ("\x1b", "\x07")), (words, text)
    out, err = io.StringIO(), io.StringIO()
    assert cli.run(["dump", "--split", "absent", str(path)], out, err) == 2  # the error lists the split names
    assert "train\\x1b]0;owned\\x07" in err.getvalue() and "\x1b" not in err.getvalue(), err.getvalue()
