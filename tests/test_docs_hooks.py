"""The documentation site's MkDocs hooks (``docs/hooks/``), on the real README, SPEC.md and CLI.

The site build itself is tested in ``tests/test_docs_site.py``; these tests
pin the hooks' refusals, which a passing build never exercises.
"""

from __future__ import annotations

import importlib.util
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
