"""The documentation site's MkDocs hooks (``docs/hooks/``), on the real README, SPEC.md and CLI.

The site build itself is tested in ``tests/test_docs_site.py``; these tests
pin the hooks' refusals, which a passing build never exercises.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

import click
import pytest
from mkdocs.exceptions import PluginError

ROOT = Path(__file__).resolve().parents[1]


def _hook(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"docs_hook_{name}", ROOT / "docs" / "hooks" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_readme_section_that_does_not_exist_fails_the_build() -> None:
    hook = _hook("readme_sections")
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "bash scripts/test.sh" in hook.readme_section("Try it", readme)
    assert "## Quick start" not in hook.readme_section("Try it", readme)
    with pytest.raises(PluginError, match=r"README.md has no section headed 'Install'.*<!-- readme: Install -->"):
        hook.on_page_markdown("# Page\n\n<!-- readme: Install -->\n")


def test_a_missing_benchmark_results_file_fails_the_build() -> None:
    hook = _hook("benchmark_results")
    with pytest.raises(PluginError, match=r"nothing\.md does not exist: run the benchmark that writes it"):
        hook.on_page_markdown("<!-- benchmark: nothing.md -->\n")
    included = hook.on_page_markdown("<!-- benchmark: dask.md -->\n")
    assert included.startswith("### bench_dask")  # its '#' heading moved below the page's '##' sections


def test_two_space_nested_lists_get_four_spaces_and_code_stays() -> None:
    hook = _hook("nested_lists")
    text = "- a\n  continued\n  - b\n    - c\n\n```\n  - not a list\n```\n\n  - after a paragraph? no list above\n"
    assert hook.four_space_lists(text) == (
        "- a\n  continued\n    - b\n        - c\n\n```\n  - not a list\n```\n\n  - after a paragraph? no list above\n"
    )


def test_the_api_members_are_the_modules_all() -> None:
    hook = _hook("api_members")
    import h5ml

    assert hook.public_names("h5ml") == [name for name in h5ml.__all__ if name != "__version__"]
    assert "H5MLLoader" in hook.public_names("h5ml_torch")
    markdown = "::: h5ml.dask.to_h5ml\n\n<!-- api-members: h5ml.dask -->\n"
    assert hook.on_page_markdown(markdown).count("::: h5ml.dask.to_h5ml") == 1


def test_the_cli_defaults_shown_are_those_the_command_receives() -> None:
    hook = _hook("cli_commands")

    @click.command()
    @click.option("--flag", is_flag=True)
    @click.option("--many", multiple=True)
    @click.option("--text")
    @click.option("--level", default=3)
    def command(flag: bool, many: tuple[str, ...], text: str | None, level: int) -> None:
        received.update(flag=flag, many=many, text=text, level=level)

    received: dict[str, object] = {}
    command.main([], standalone_mode=False)
    ctx = click.Context(command)
    shown = {param.name: hook.shown_default(param, ctx) for param in command.params}
    assert shown == received == {"flag": False, "many": (), "text": None, "level": 3}


def test_help_texts_become_markdown_that_shows_them_as_is() -> None:
    hook = _hook("cli_commands")
    assert hook.markdown_text("arrays named <feature>_<split> & more | e.g. '\\t' *x* [a](b)") == (
        "arrays named &lt;feature&gt;\\_&lt;split&gt; &amp; more \\| e.g. '\\\\t' \\*x\\* \\[a\\](b)"
    )
    assert hook.markdown_text("- a\n  list?") == "\\- a list?"  # a paragraph never starts a list
    assert hook.markdown_text("1. first") == "1\\. first"
    help_text = (
        "First line.\n\n    \b\n    A SOURCE may be:\n      a folder   ROOT/<split>/<id>.wav\n\n    Last <x>.\n    "
    )
    assert hook.command_markdown(help_text) == (
        "First line.\n\n```text\nA SOURCE may be:\n  a folder   ROOT/<split>/<id>.wav\n```\n\nLast &lt;x&gt;."
    )
    assert hook.option_markdown("One\n  <two>.\n\n\b\nkept a\nkept b") == "One &lt;two&gt;. <br>kept a <br>kept b"
    assert hook.command_markdown("Shown.\f\nNot shown: click cuts at a form feed.") == "Shown."


def test_help_is_rewritten_from_its_original_on_every_build() -> None:
    """``mkdocs serve`` loads the hooks again for each rebuild, on the same click objects: no double escaping."""
    hook = _hook("cli_commands")

    @click.command(help="Reads <FILE>.")
    @click.option("--sep", help="e.g. ';' or '|'")
    def command(sep: str | None) -> None: ...

    for _ in range(2):
        hook._rewrite_help(command, hook.command_markdown)
        hook._rewrite_help(command.params[0], hook.option_markdown)
    assert command.help == "Reads &lt;FILE&gt;."
    assert command.params[0].help == "e.g. ';' or '\\|'"


def _results(folder: Path, name: str, goals: list[dict[str, object]]) -> None:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"meta": {}, "goals": goals, "cells": []}), encoding="utf-8")


def _goal(title: str, value: float | None, detail: str, met: bool | None = None) -> dict[str, object]:
    return {"goal": title, "value": value, "target": 0.8, "met": met, "detail": detail}


def test_the_goals_table_takes_each_goal_from_the_run_that_measured_it(tmp_path: Path) -> None:
    hook = _hook("benchmark_results")
    crash = "error: ValueError: threads=2, num_workers=...: threads must be >= 0"
    _results(
        tmp_path,
        "results.json",
        [_goal("speed", 1.5, "h5ml / h5py", True), _goal("threads", None, crash), _goal("keras", None, crash)],
    )
    _results(
        tmp_path,
        "loaders/results.json",
        [_goal("speed", 0.5, "second run", False), _goal("threads", 0.273, "worst: speech/none", False)],
    )
    table = hook.goals_table(tmp_path, ["results.json", "loaders/results.json"])
    rows = {line.split(" | ")[0].lstrip("| "): line for line in table.splitlines() if line.startswith("| ")}
    assert rows["speed"] == "| speed | 1.5 | 0.8 | met | `results.json` | h5ml / h5py |"
    assert rows["threads"] == "| threads | 0.273 | 0.8 | not met | `loaders/results.json` | worst: speech/none |"
    # measured by no run: said plainly, the crash kept only as the reason
    assert rows["keras"] == f"| keras |  | 0.8 | not measured in the latest run |  | {crash} |"
    assert "- *threads*: from `loaders/results.json`; `results.json` did not measure it (its benchmark failed" in table
    assert table.count("error:") == 1
    with pytest.raises(PluginError, match=r"nothing\.json does not exist: run the benchmark that writes it"):
        hook.goals_table(tmp_path, ["results.json", "nothing.json"])


def test_an_included_results_file_leaves_its_goals_and_crashes_to_the_goals_table() -> None:
    hook = _hook("benchmark_results")
    included = hook.on_page_markdown("<!-- benchmark: results.md -->\n")
    assert "| goal | value |" not in included and "error" not in included
    assert "**raw**" in included
