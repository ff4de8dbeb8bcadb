"""benchmarks/reliability_figures.py: which test files it runs, and the Markdown table it prints (issue 14)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("reliability_figures", ROOT / "benchmarks" / "reliability_figures.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_it_runs_every_test_file_that_records_figures_and_no_other(tmp_path: Path) -> None:
    """A file calling ``figures.record`` or ``figures.add`` is run; one that only names the word is not."""
    script = _script()
    found = {p.name for p in script.figure_files()}
    assert {"test_crash_kills.py", "test_reader_fuzz.py"} <= found
    assert "test_writer.py" not in found and "test_reliability_figures.py" not in found
    call = "figures" + ".add('x', 'y', 1)"  # spelled in two parts: this file records no figure (nor runs itself)
    (tmp_path / "test_a.py").write_text(f"def test_a(figures):\n    {call}\n", encoding="utf-8")
    (tmp_path / "test_b.py").write_text("# figures are recorded elsewhere\n", encoding="utf-8")
    (tmp_path / "helper.py").write_text(call + "\n", encoding="utf-8")
    assert [p.name for p in script.figure_files(tmp_path)] == ["test_a.py"]


def test_the_table_lists_each_figure_in_recording_order() -> None:
    """One row per figure, areas in the order recorded; thousands separated; a pipe in text escaped."""
    script = _script()
    figures = json.loads('{"crash kills": {"kill points tried": 2200, "half files": 0}, "fuzz": {"note": "a|b"}}')
    assert script.markdown(figures).splitlines() == [
        "| area | figure | value |",
        "|---|---|---|",
        "| crash kills | kill points tried | 2,200 |",
        "| crash kills | half files | 0 |",
        "| fuzz | note | a\\|b |",
    ]


@pytest.mark.skipif(sys.platform == "win32", reason="the figure tests are POSIX")
def test_smoke_mode_prints_the_figures_of_one_quick_test(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``--smoke`` collects every figure test, runs one, prints its figures and writes them with ``-o``."""
    out = tmp_path / "figures.md"
    assert _script().main(["--smoke", "-o", str(out)]) == 0
    table = out.read_text(encoding="utf-8")
    assert table.startswith("| area | figure | value |\n|---|---|---|\n")
    assert "| crash kills | kill points tried | 22 |" in table and "| crash kills | half files | 0 |" in table
    assert table in capsys.readouterr().out
