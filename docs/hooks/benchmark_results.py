"""MkDocs hook: the performance page shows the latest benchmark results from ``benchmarks/results/latest/``.

The results files stay their one source (``benchmarks/bench_peers.py``,
``bench_remote.py`` and ``bench_dask.py`` write them):

- every ``.png`` under ``benchmarks/results/latest/`` is added to the site as
  ``benchmarks/<same path>``, so a page links ``benchmarks/results.png``;
- a line ``<!-- benchmark: loaders/results.md -->`` is replaced by that
  results file, its headings moved below the page's ``##`` level (a results
  file opens with ``#``). A file that is missing fails the build.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File, Files

__all__ = ["RESULTS", "on_files", "on_page_markdown"]

RESULTS = Path(__file__).resolve().parents[2] / "benchmarks" / "results" / "latest"
_MARKER = re.compile(r"^<!-- benchmark: (?P<name>[\w./-]+) -->$", re.MULTILINE)
_HEADING = re.compile(r"^(#{1,4}) ", re.MULTILINE)


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
    return _HEADING.sub(lambda match: "#" * (len(match.group(1)) + 2) + " ", path.read_text(encoding="utf-8"))


def on_page_markdown(markdown: str, **kwargs: Any) -> str:
    """Replace each ``<!-- benchmark: NAME -->`` marker by that results file."""
    return _MARKER.sub(lambda match: _included(match.group("name")), markdown)
