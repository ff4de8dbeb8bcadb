"""The reliability figures of issue 14, measured by the tests that assert them, as a Markdown table for the README.

The figures come from the same tests that CI runs (tests/_figures.py): every
test file under ``tests/`` that records figures with the ``figures`` fixture
(``figures.record(...)`` or ``figures.add(...)``: the crash kills, the reader
fuzzing, the hostile corpus, the locks, the concurrent readers, the lying
files, ...) is run with pytest, with ``H5ML_FIGURES`` naming a temporary JSON
file that the run fills; the script then prints one table row per figure::

    | area | figure | value |
    |---|---|---|
    | crash kills | kill points tried | 220 |

Run::

    python benchmarks/reliability_figures.py               # every test that records figures (minutes)
    python benchmarks/reliability_figures.py --smoke       # collect them all, run one quick one (seconds)
    python benchmarks/reliability_figures.py -o figures.md -- -x   # write the table too; pytest arguments after --

The name does not start with ``bench_``, so the smoke loop of scripts/test.sh
(every ``benchmarks/bench_*.py --smoke``) does not run it; ``--smoke`` is for
running it by hand or in a CI step of its own. The exit status is pytest's: a
table printed beside a failed run says so above the table.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
TESTS = ROOT / "tests"
#: A test file records figures when it calls the fixture's record or add.
_RECORDS = re.compile(r"\bfigures\.(?:record|add)\(")
#: The quick test that ``--smoke`` runs (a few seconds: 22 kills of h5ml.write).
SMOKE_TEST = "tests/test_crash_kills.py::test_a_killed_write_leaves_the_previous_file_or_the_new_one[write]"


def figure_files(tests: Path = TESTS) -> list[Path]:
    """The test files that record figures (``figures.record`` or ``figures.add``), by name."""
    return sorted(p for p in tests.glob("test_*.py") if _RECORDS.search(p.read_text(encoding="utf-8")))


def _cell(value: Any) -> str:
    """A value as a Markdown table cell: numbers as they are, text with its pipes escaped."""
    text = f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) else str(value)
    return text.replace("|", "\\|").replace("\n", " ")


def markdown(figures: Mapping[str, Mapping[str, Any]]) -> str:
    """The figures ``{area: {figure: value}}`` as a Markdown table (area, figure, value), in recording order."""
    lines = ["| area | figure | value |", "|---|---|---|"]
    for area, values in figures.items():
        lines.extend(f"| {_cell(area)} | {_cell(name)} | {_cell(value)} |" for name, value in values.items())
    return "\n".join(lines) + "\n"


def run_pytest(arguments: Sequence[str], figures_path: Path) -> int:
    """Run pytest from the repository root with ``H5ML_FIGURES=figures_path``; return its exit status."""
    env = dict(os.environ, H5ML_FIGURES=str(figures_path))
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *arguments]
    return subprocess.run(command, cwd=ROOT, env=env, check=False).returncode


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="collect every figure test, run one quick test")
    parser.add_argument("-o", "--output", type=Path, help="also write the Markdown table to this file")
    parser.add_argument("pytest_args", nargs="*", help="more pytest arguments (after --)")
    args = parser.parse_args(argv)
    files = [str(p.relative_to(ROOT)) for p in figure_files()]
    if not files:
        print("no test file records figures (figures.record / figures.add under tests/)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as folder:
        target = Path(folder) / "figures.json"
        if args.smoke:
            status = run_pytest(["--collect-only", *files], target) or run_pytest([SMOKE_TEST], target)
        else:
            status = run_pytest([*files, *args.pytest_args], target)
        figures = json.loads(target.read_text(encoding="utf-8")) if target.exists() else {}
    if status != 0:
        print(f"pytest exited {status}: the figures below are those of the tests that ran", file=sys.stderr)
    table = markdown(figures)
    print(table, end="")
    if args.output is not None:
        args.output.write_text(table, encoding="utf-8")
    return status if figures or status else 2


if __name__ == "__main__":
    raise SystemExit(main())
