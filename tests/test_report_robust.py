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

import h5ml
from h5ml.tools import cli
from h5ml.tools.report.plots import class_histogram


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
