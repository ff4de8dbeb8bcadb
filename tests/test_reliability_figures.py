"""benchmarks/reliability_figures.py: which test files it runs, and the Markdown table it prints (issue 14)."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
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


def test_the_figures_of_xdist_workers_are_merged_in_the_controller(tmp_path: Path) -> None:
    """Under ``pytest -n 2`` (as scripts/test.sh runs) ``add`` figures sum over the workers; ``record`` ones stay."""
    shutil.copy(ROOT / "tests" / "conftest.py", tmp_path / "conftest.py")
    shutil.copy(ROOT / "tests" / "_figures.py", tmp_path / "_figures.py")
    add = "figures" + ".add"  # spelled in two parts: this file records no figure itself
    record = "figures" + ".record"
    # Eight tests, each adding 1 to a count, spread over two workers by --dist load; one records a text figure.
    # Each test also leaves a file named after its worker, to show that both workers ran some.
    body = "import os, pathlib\n"
    body += "".join(
        f"def test_{n}(figures):\n    {add}('area', 'count', 1)\n"
        f"    pathlib.Path(os.environ['PYTEST_XDIST_WORKER'] + '.ran').touch()\n"
        for n in range(8)
    )
    body += f"def test_text(figures):\n    {record}('area', 'note', 'kept')\n"
    (tmp_path / "test_counts.py").write_text(body, encoding="utf-8")
    target = tmp_path / "figures.json"
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "2", "--dist", "load", str(tmp_path)],
        cwd=tmp_path,
        env={**os.environ, "H5ML_FIGURES": str(target)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert sorted(p.name for p in tmp_path.glob("*.ran")) == ["gw0.ran", "gw1.ran"]
    assert json.loads(target.read_text(encoding="utf-8")) == {"area": {"count": 8, "note": "kept"}}
    assert "  count: 8" in proc.stdout
