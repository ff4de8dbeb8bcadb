"""The documentation site builds strictly (a warning fails it) and shows what its sources hold.

``mkdocs build --strict`` runs once per session in a subprocess with a time
limit; the tests then read the built HTML: SPEC.md's headings on the
specification page, every command of ``h5ml.tools.cli`` (and each of its
options) on the command-line page, every exported name on the API pages with
``h5ml.open``'s parameters, the README's commands on the getting-started
page, the latest benchmark results on the performance page, and nothing that
needs the network. A second build of a copy with one broken page shows that a
warning fails the build.
"""

from __future__ import annotations

import ast
import html
import inspect
import json
import os
import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import click
import pytest

import h5ml
from h5ml.tools.cli import app

ROOT = Path(__file__).resolve().parents[1]
#: A build takes about 4 s on an idle 2-core machine and 10 s on a busy one.
BUILD_TIMEOUT_S = 180


def _build(project: Path, site: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    env["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT / "reference"), str(ROOT / "adapters"), *filter(None, [os.environ.get("PYTHONPATH")])]
    )
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=BUILD_TIMEOUT_S,
        check=False,
    )


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    result = _build(ROOT, out)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "WARNING" not in result.stderr, result.stderr
    return out


class _Text(HTMLParser):
    """The headings (level, id, text) and the whole text of a page."""

    def __init__(self) -> None:
        super().__init__()
        self.headings: list[tuple[int, str, str]] = []
        self.text: list[str] = []
        self._heading: tuple[int, str] | None = None
        self._parts: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if re.fullmatch(r"h[1-6]", tag):
            self._heading = (int(tag[1]), dict(attrs).get("id") or "")
            self._parts = []

    def handle_endtag(self, tag: str) -> None:
        if self._heading is not None and tag == f"h{self._heading[0]}":
            text = " ".join("".join(self._parts).replace("¶", "").split())
            self.headings.append((*self._heading, text))
            self._heading = None

    def handle_data(self, data: str) -> None:
        self.text.append(data)
        if self._heading is not None:
            self._parts.append(data)


def _html(site: Path, name: str) -> Path:
    """The built file of page ``name`` (``use_directory_urls: false``: ``guides/pytorch.html``; ``.``: the home)."""
    return site / ("index.html" if name == "." else f"{name}.html")


def _page(site: Path, name: str) -> _Text:
    parser = _Text()
    parser.feed(_html(site, name).read_text(encoding="utf-8"))
    return parser


def _plain(page: _Text) -> str:
    return " ".join(html.unescape("".join(page.text)).split())


def test_a_warning_fails_the_build(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    for name in ("reference", "adapters", "benchmarks", "README.md", "SPEC.md"):
        (project / name).symlink_to(ROOT / name)
    shutil.copy(ROOT / "mkdocs.yml", project / "mkdocs.yml")
    shutil.copytree(ROOT / "docs", project / "docs", ignore=shutil.ignore_patterns("__pycache__"))
    (project / "docs" / "broken.md").write_text("# Broken\n\nSee [a page that is not there](nowhere.md).\n")
    result = _build(project, tmp_path / "site")
    output = result.stdout + result.stderr
    assert result.returncode != 0, output
    assert "WARNING" in output and "nowhere.md" in output and "in strict mode" in output


def test_the_spec_page_holds_every_heading_of_spec_md(site: Path) -> None:
    spec = (ROOT / "SPEC.md").read_text(encoding="utf-8")
    expected = [" ".join(line[3:].replace("`", "").split()) for line in spec.splitlines() if line.startswith("## ")]
    assert len(expected) >= 14
    shown = [text for level, _, text in _page(site, "spec").headings if level == 2]
    assert shown == expected


class _NestedItems(HTMLParser):
    """The number of list items inside another list item."""

    def __init__(self) -> None:
        super().__init__()
        self.depth = 0
        self.nested = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "li":
            self.depth += 1
            self.nested += self.depth >= 2

    def handle_endtag(self, tag: str) -> None:
        if tag == "li":
            self.depth -= 1


def test_the_spec_page_nests_the_lists_spec_md_nests(site: Path) -> None:
    """SPEC.md nests list items by two spaces (GitHub's way); docs/hooks/nested_lists.py keeps them nested."""
    spec = (ROOT / "SPEC.md").read_text(encoding="utf-8")
    nested_in_source = len(re.findall(r"^  (?:- |\* |\d+\. )", spec, flags=re.MULTILINE))
    assert nested_in_source >= 20
    page = _html(site, "spec").read_text(encoding="utf-8")
    parser = _NestedItems()
    parser.feed(page[page.index("<article") : page.index("</article>")])  # the page, not the theme's menus
    assert parser.nested == nested_in_source


def test_the_cli_page_lists_every_command_and_its_options(site: Path) -> None:
    page = _page(site, "cli")
    ctx = click.Context(app, info_name="h5ml")
    names = app.list_commands(ctx)
    assert {"validate", "convert", "shard", "view"} <= set(names)
    shown = {text for level, _, text in page.headings if level == 3}
    assert shown == {f"h5ml {name}" for name in names}
    text = _plain(page)
    assert "Sentinel" not in text  # click 8.3's marker of "no default", shown as what the command receives
    for name in names:
        command = app.get_command(ctx, name)
        assert command is not None
        for param in command.params:
            if isinstance(param, click.Option) and not param.hidden:
                assert any(opt in text for opt in param.opts), f"h5ml {name}: {param.opts} not on the page"


def _default_cell(option: click.Option, ctx: click.Context) -> str:
    """What the Default column must say: what the command receives when the option is not given."""
    unset = getattr(click.core, "UNSET", object())
    value = option.default if option.default is not unset else option.get_default(ctx)
    if value is unset:
        value = () if option.multiple else None
    if value is None:
        return "required" if option.required else "None"
    return str(value)


def test_the_cli_page_shows_each_option_default(site: Path) -> None:
    page = _html(site, "cli").read_text(encoding="utf-8")
    # The group's own context settings (help_option_names -h/--help), as the command line makes them: click
    # caches a command's help option, so a context without them would see what an earlier test's run made.
    ctx = click.Context(app, info_name="h5ml", **app.context_settings)
    checked = 0
    for name in app.list_commands(ctx):
        command = app.get_command(ctx, name)
        assert command is not None
        start = page.index(f'id="h5ml-{name}"')
        following = page.find("<h3 ", start + 1)
        section = page[start : following if following != -1 else len(page)]
        rows = {
            cells[0]: cells[-1]
            for cells in (
                re.findall(r"<td>(.*?)</td>", row, re.DOTALL) for row in re.findall(r"<tr>.*?</tr>", section, re.DOTALL)
            )
            if cells
        }
        for param in command.get_params(ctx):
            if not isinstance(param, click.Option) or param.hidden:
                continue
            row = next(cell for first, cell in rows.items() if any(f"<code>{o}</code>" in first for o in param.opts))
            assert _plain_html(row) == _default_cell(param, ctx), f"h5ml {name} {param.opts[0]}"
            checked += 1
    assert checked > 50


def _exported(module: str) -> list[str]:
    """``module.__all__`` from the source (the adapters' packages import torch and keras)."""
    path = ROOT / "adapters" / module / "__init__.py"
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__all__" for t in node.targets):
            return list(ast.literal_eval(node.value))
    raise AssertionError(f"{path} declares no literal __all__")


@pytest.mark.parametrize(
    ("page", "module", "names"),
    [
        ("api/h5ml", "h5ml", [name for name in h5ml.__all__ if not name.startswith("__")]),
        ("api/dask", "h5ml.dask", ["SAMPLES_PER_SHARD", "convert_on_dask", "to_h5ml"]),
        ("api/h5ml_torch", "h5ml_torch", _exported("h5ml_torch")),
        ("api/h5ml_keras", "h5ml_keras", _exported("h5ml_keras")),
    ],
)
def test_the_api_pages_document_every_exported_name(site: Path, page: str, module: str, names: list[str]) -> None:
    ids = {anchor for _, anchor, _ in _page(site, page).headings}
    assert len(names) >= 3
    missing = [name for name in names if f"{module}.{name}" not in ids]
    assert not missing, f"{page}: not documented: {missing}"


def test_the_api_pages_show_inherited_methods(site: Path) -> None:
    """``H5MLLoader``'s resume methods come from its base class in ``h5ml.reader``; the PyTorch guide uses them."""
    ids = {anchor for _, anchor, _ in _page(site, "api/h5ml_torch").headings}
    for method in ("set_epoch", "state_dict", "load_state_dict"):
        assert f"h5ml_torch.H5MLLoader.{method}" in ids


def test_the_api_page_shows_the_parameters_of_open(site: Path) -> None:
    page = _html(site, "api/h5ml").read_text(encoding="utf-8")
    start = page.index('id="h5ml.open"')
    section = _plain_html(page[start : page.index('id="h5ml.Dataset"')])
    parameters = list(inspect.signature(h5ml.open).parameters)
    assert {"path", "verify", "storage_options"} <= set(parameters)
    for name in parameters:
        assert re.search(rf"\b{name}\b", section), f"h5ml.open's parameter {name} is not on the API page"
    assert "Open an h5ml file" in section


def _plain_html(fragment: str) -> str:
    parser = _Text()
    parser.feed(fragment)
    return _plain(parser)


def test_getting_started_shows_the_readme_commands(site: Path) -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    try_it = readme[readme.index("## Try it") : readme.index("## Quick start")]
    commands = re.findall(r"```bash\n(.*?)```", try_it, flags=re.DOTALL)
    assert len(commands) == 2
    text = _plain(_page(site, "."))
    for command in commands:
        assert " ".join(command.split()) in text
    assert "h5ml.write(" in text and "h5ml.validate(" in text  # the quick start


def test_the_performance_page_shows_the_latest_results(site: Path) -> None:
    latest = ROOT / "benchmarks" / "results" / "latest"
    assert (site / "benchmarks" / "results.png").read_bytes() == (latest / "results.png").read_bytes()
    page = _html(site, "performance").read_text(encoding="utf-8")
    assert 'src="benchmarks/results.png"' in page
    text = _plain_html(page)
    goals = json.loads((latest / "results.json").read_text(encoding="utf-8"))["goals"]
    assert goals
    for goal in goals:
        assert goal["goal"] in text
    assert "Reads from object storage" in text and "h5ml convert --dask" in text


def test_the_site_needs_no_network_and_has_every_page(site: Path) -> None:
    for page in site.rglob("*.html"):
        content = page.read_text(encoding="utf-8")
        assert "fonts.googleapis" not in content and "fonts.gstatic" not in content, page
    assert json.loads((site / "search" / "search_index.json").read_text(encoding="utf-8"))["docs"]
    for name in ("guides/validation-in-ci", "guides/report", "guides/croissant", "architecture", "implementers"):
        assert _html(site, name).is_file(), name
    assert "Where each SPEC clause is implemented" in _plain(_page(site, "architecture"))


def _shown_help(text: str) -> str:
    """A help text as ``--help`` shows it, whitespace-normalised: nothing after a form feed, no ``\\b`` marks."""
    return " ".join(text.split("\f", 1)[0].replace("\b", " ").split())


def test_the_cli_page_shows_every_help_text_as_click_has_it(site: Path) -> None:
    """Every command's and option's help is in the page's visible text: a ``<split>`` taken for a tag fails it.

    The text nodes are the browser's (html.parser, entities decoded once); ``h5ml convert``'s help holds
    ``<feature>_<split>``, ``ROOT/<split>/<feature>/<id>.wav`` and ``<split>/<split>-NNNNN.h5``, and
    ``--delimiter``'s a ``|``, which a raw copy into the Markdown lost.
    """
    page = (_html(site, "cli")).read_text(encoding="utf-8")
    parser = _Text()
    parser.feed(page[page.index("<article") : page.index("</article>")])
    text = " ".join("".join(parser.text).split())
    ctx = click.Context(app, info_name="h5ml", **app.context_settings)
    commands: list[click.Command] = [app]
    for name in app.list_commands(ctx):
        command = app.get_command(ctx, name)
        assert command is not None
        commands.append(command)
    helps = []
    for command in commands:
        original = getattr(command, "_h5ml_docs_original_help", command.help)  # this process: never rewritten
        helps.append((command.name, original))
        for param in command.get_params(ctx):
            if isinstance(param, click.Option) and not param.hidden and param.help:
                helps.append((f"{command.name} {param.opts[0]}", param.help))
    assert len(helps) > 60
    missing = [where for where, help_text in helps if help_text and _shown_help(help_text) not in text]
    assert not missing, f"help not shown as click has it: {missing}"
    assert "arrays named <feature>_<split> (x_train, y_valid, ...)" in text
    assert "shards <split>/<split>-NNNNN.h5" in text


def test_the_cli_page_keeps_the_aligned_lines_of_a_b_paragraph(site: Path) -> None:
    """``h5ml convert``'s ``\\b`` list of sources is a preformatted block, its columns aligned as in ``--help``."""
    page = _html(site, "cli").read_text(encoding="utf-8")
    blocks = [html.unescape(re.sub(r"<[^>]+>", "", b)) for b in re.findall(r"<pre.*?</pre>", page, re.DOTALL)]
    block = next(b for b in blocks if "A SOURCE may be:" in b)
    assert "\n  a .npz/.npy file       arrays named <feature>_<split> (x_train, y_valid, ...)\n" in block
    assert "\n  an audio folder        ROOT/<split>/<feature>/<id>.wav (or ROOT/<feature>/<id>.wav)\n" in block


def test_the_performance_page_shows_each_goal_from_the_run_that_measured_it(site: Path) -> None:
    """No crash of the benchmark shown as a result: each goal's row is the first run with a value, named.

    A goal the first run did not measure comes from the second, ``loaders/results.json`` (the 2026-12-02 run's
    threads goals had failed on a bug of the benchmark, detail ``error: ValueError ...``); the latest full run
    measures them itself.
    """
    latest = ROOT / "benchmarks" / "results" / "latest"
    runs = {name: json.loads((latest / name).read_text(encoding="utf-8"))["goals"] for name in RUNS}
    page = _html(site, "performance").read_text(encoding="utf-8")
    section = page[page.index('id="goals"') : page.index('id="h5ml-beside-its-peers"')]
    rows = {
        _plain_html(cells[0]): [_plain_html(cell) for cell in cells]
        for cells in (
            re.findall(r"<td[^>]*>(.*?)</td>", row, re.DOTALL)
            for row in re.findall(r"<tr>.*?</tr>", section, re.DOTALL)
        )
        if cells
    }
    assert len(rows) == len(runs["results.json"])
    taken_later = 0
    for goal in runs["results.json"]:
        _, value, target, verdict, measured_in, detail = rows[goal["goal"]]
        measured = [
            (name, g) for name in RUNS for g in runs[name] if g["goal"] == goal["goal"] and g["value"] is not None
        ]
        if not measured:
            assert (value, verdict, measured_in) == ("", "not measured in the latest run", "")
            continue
        name, shown = measured[0]
        taken_later += name != "results.json"
        assert (value, target, measured_in) == (str(shown["value"]), str(shown["target"]), name), goal["goal"]
        assert not detail.startswith("error:"), goal["goal"]
    assert taken_later == 0  # the latest full run measured the threads goals itself (2026-12-03)
    threads = rows["PyTorch adapter with threads: at least 0.8x h5ml's raw reads (full order)"]
    first = next(g for g in runs["results.json"] if g["goal"] == threads[0])
    assert threads[1:5] == [str(first["value"]), "0.8", "not met", "results.json"]
    assert "error:" not in _plain_html(page[page.index("<article") : page.index("</article>")])


#: The benchmark runs the performance page's goals come from, the first run first.
RUNS = ("results.json", "loaders/results.json")


class _Links(HTMLParser):
    """The ``href`` and ``src`` of a page."""

    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.links += [value for name, value in attrs if name in ("href", "src") and value]


def test_every_link_of_the_site_opens_from_disk(site: Path) -> None:
    """``use_directory_urls: false``: every relative link names a file of the site, so ``file://`` opens it."""
    checked = 0
    for page in site.rglob("*.html"):
        if page.name == "404.html":  # a server's answer to a missing page: its links are absolute, from the root
            continue
        parser = _Links()
        parser.feed(page.read_text(encoding="utf-8"))
        for link in parser.links:
            target = link.split("#", 1)[0].split("?", 1)[0]
            if not target or re.match(r"[a-z]+:", target):
                continue
            resolved = (page.parent / target).resolve()
            assert resolved.is_file(), f"{page.relative_to(site)}: {link} is not a file of the site"
            checked += 1
    assert checked > 200  # each page links every other through the navigation
    home = _Links()
    home.feed(_html(site, ".").read_text(encoding="utf-8"))
    assert {"guides/pytorch.html", "cli.html", "performance.html"} <= set(home.links)
    assert (site / "guides" / "pytorch.html").is_file() and not (site / "guides" / "pytorch").exists()
