"""MkDocs hook: the performance page shows the latest benchmark results from ``benchmarks/results/latest/``.

The results files stay their one source (``benchmarks/bench_peers.py``,
``bench_remote.py`` and ``bench_dask.py`` write them):

- every ``.png`` under ``benchmarks/results/latest/`` is added to the site as
  ``benchmarks/<same path>``, so a page links ``benchmarks/results.png``;
- a line ``<!-- benchmark: loaders/results.md -->`` is replaced by that
  results file, its headings moved below the page's ``##`` level (a results
  file opens with ``#``), its goals table left out (the goals marker shows
  the goals), a cell whose benchmark crashed (``error``) said to be not
  measured. A file that is missing fails the build;
- a line ``<!-- benchmark-goals: results.json loaders/results.json -->`` is
  replaced by one goals table of those runs: each goal as the first of them
  that measured it (a value), with the file it comes from. A goal a later run
  measured, or none did, is said so in words: a benchmark's crash on a cell
  (its detail ``error: ...``) is never shown as that goal's result while
  another run has its figure (:func:`goals_table`).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File, Files

__all__ = ["RESULTS", "goals_table", "on_files", "on_page_markdown"]

RESULTS = Path(__file__).resolve().parents[2] / "benchmarks" / "results" / "latest"
_MARKER = re.compile(r"^<!-- benchmark: (?P<name>[\w./-]+) -->$", re.MULTILINE)
_HEADING = re.compile(r"^(#{1,4}) ", re.MULTILINE)
_GOALS_MARKER = re.compile(r"^<!-- benchmark-goals: (?P<names>[\w./ -]+?) -->$", re.MULTILINE)
#: The goals table a results Markdown file holds (``benchmarks/peers/report.py``): its header and rows.
_GOALS_TABLE = re.compile(r"^\| goal \| value \| target \| verdict \| detail \|\n(?:\|.*\|\n?)*", re.MULTILINE)
_VERDICT = {True: "met", False: "not met"}
NOT_MEASURED = "not measured in the latest run"
#: A cell of a results table whose benchmark crashed (``report.py``'s short status ``error``).
_ERROR_CELL = re.compile(r"(?<=\| )error(?= \|)")


def on_files(files: Files, config: Any, **kwargs: Any) -> Files:
    """Add each plot of the latest results to the site, under ``benchmarks/``."""
    for plot in sorted(RESULTS.rglob("*.png")):
        uri = "benchmarks/" + plot.relative_to(RESULTS).as_posix()
        files.append(File.generated(config, uri, abs_src_path=str(plot)))
    return files


def _included(name: str) -> str:
    path = RESULTS / name
    if not path.is_file():
        raise PluginError(f"{path} does not exist: run the benchmark that writes it, or fix the marker")
    text = _ERROR_CELL.sub(
        "not measured (the benchmark failed)", _GOALS_TABLE.sub("", path.read_text(encoding="utf-8"))
    )
    return _HEADING.sub(lambda match: "#" * (len(match.group(1)) + 2) + " ", text)


def _cell(text: object) -> str:
    return str(text).replace("|", "/").replace("\n", " ")


def goals_table(results: Path, names: list[str]) -> str:
    """One Markdown goals table of the runs ``names`` (results.json files under ``results``), first run first.

    Parameters
    ----------
    results
        The folder of the results (``benchmarks/results/latest``).
    names
        Its ``results.json`` files, the run the page shows first first (``["results.json",
        "loaders/results.json"]``); each holds ``goals``: ``goal``, ``value`` (None: not measured),
        ``target``, ``met``, ``detail``.

    Returns
    -------
    str
        A table (goal, value, target, verdict, measured in, detail), the goals in the first run's order
        (then any only a later run has); each row from the first run with a value. A goal no run measured
        says ``not measured in the latest run`` as its verdict. Below it, a line for each goal taken from a
        later run, naming the run that did not measure it and why (its benchmark failed on that cell, or not).

    Raises
    ------
    PluginError
        If a results file is missing or holds no ``goals`` list.
    """
    runs: list[tuple[str, dict[str, dict[str, object]]]] = []
    order: list[str] = []
    for name in names:
        path = results / name
        if not path.is_file():
            raise PluginError(f"{path} does not exist: run the benchmark that writes it, or fix the goals marker")
        goals = json.loads(path.read_text(encoding="utf-8")).get("goals")
        if not isinstance(goals, list):
            raise PluginError(f"{path} holds no 'goals' list: write it with benchmarks/bench_peers.py")
        runs.append((name, {str(goal["goal"]): goal for goal in goals}))
        order += [str(goal["goal"]) for goal in goals if str(goal["goal"]) not in order]
    rows = ["| goal | value | target | verdict | measured in | detail |", "|---|---:|---:|---|---|---|"]
    notes = []
    for title in order:
        held = [(name, goals[title]) for name, goals in runs if title in goals]
        measured = [(name, goal) for name, goal in held if goal.get("value") is not None]
        if not measured:
            name, goal = held[0]
            rows.append(f"| {_cell(title)} |  | {goal['target']} | {NOT_MEASURED} |  | {_cell(goal['detail'])} |")
            continue
        name, goal = measured[0]
        verdict = _VERDICT.get(goal.get("met"), "not measured")  # type: ignore[call-overload]
        rows.append(
            f"| {_cell(title)} | {goal['value']} | {goal['target']} | {verdict} | `{name}` | {_cell(goal['detail'])} |"
        )
        for earlier, missed in held[: [n for n, _ in held].index(name)]:
            why = (
                "its benchmark failed on that cell" if str(missed["detail"]).startswith("error:") else missed["detail"]
            )
            notes.append(f"- *{_cell(title)}*: from `{name}`; `{earlier}` did not measure it ({_cell(why)}).")
    return "\n".join(rows + (["", *notes] if notes else [])) + "\n"


def on_page_markdown(markdown: str, **kwargs: Any) -> str:
    """Replace each ``<!-- benchmark: NAME -->`` marker by that results file, each goals marker by its table."""
    markdown = _GOALS_MARKER.sub(lambda match: goals_table(RESULTS, match.group("names").split()), markdown)
    return _MARKER.sub(lambda match: _included(match.group("name")), markdown)
