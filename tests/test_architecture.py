"""The house rules that import-linter does not check: module and class sizes, docstrings, ``__all__``.

The layering itself (which package may import which, no framework in the
core, no h5py in the adapters, nothing of ours in the conformance suite) is
import-linter's contracts in ``pyproject.toml``, run by ``lint-imports`` in
``scripts/test.sh``. ``docs/architecture.md`` draws the map.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: Where the house rules hold: the package, the demo, the adapters and the conformance scripts.
CHECKED = [ROOT / "reference", ROOT / "adapters", ROOT / "conformance_tests"]
MODULES = sorted(p for top in CHECKED for p in top.rglob("*.py") if "node_modules" not in p.parts)
#: A module must fit in one sitting; a class in less.
MAX_MODULE_LINES = 600
MAX_CLASS_LINES = 400


def _id(path: Path) -> str:
    return str(path.relative_to(ROOT))


def test_the_checked_trees_hold_modules() -> None:
    names = {_id(p) for p in MODULES}
    assert {"reference/h5ml/__init__.py", "adapters/h5ml_torch/__init__.py", "conformance_tests/generate.py"} <= names


@pytest.mark.parametrize("module", MODULES, ids=_id)
def test_module_fits_in_one_sitting(module: Path) -> None:
    lines = len(module.read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_MODULE_LINES, f"{_id(module)} has {lines} lines; split it by responsibility"


@pytest.mark.parametrize("module", MODULES, ids=_id)
def test_classes_are_smaller_than_a_module(module: Path) -> None:
    tree = ast.parse(module.read_text(encoding="utf-8"), filename=str(module))
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            size = (node.end_lineno or node.lineno) - node.lineno + 1
            assert size <= MAX_CLASS_LINES, f"{_id(module)}: class {node.name} has {size} lines"


@pytest.mark.parametrize("module", MODULES, ids=_id)
def test_module_says_what_it_holds(module: Path) -> None:
    """Every module opens with a docstring; every module of the packages declares ``__all__`` (scripts need none)."""
    tree = ast.parse(module.read_text(encoding="utf-8"), filename=str(module))
    assert ast.get_docstring(tree), f"{_id(module)} has no opening docstring"
    if module.name == "__main__.py" or module.parent.name == "conformance_tests" or "foreign" in module.parts:
        return  # programs, not library modules
    names = {
        target.id
        for node in tree.body
        if isinstance(node, (ast.Assign, ast.AnnAssign))
        for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
        if isinstance(target, ast.Name)
    } | {alias.asname or alias.name for node in tree.body if isinstance(node, ast.ImportFrom) for alias in node.names}
    assert "__all__" in names, f"{_id(module)} declares no __all__"


def test_import_h5ml_loads_no_framework() -> None:
    """At run time too (import-linter reads the source): the public API loads no deep-learning framework."""
    code = (
        "import sys, h5ml; h5ml.open; h5ml.write; h5ml.validate; h5ml.ingest; h5ml.sampling; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in {'torch','keras','tensorflow','jax'}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


#: The adapters only wrap the core: their lines in total (docstrings included). torch: 500 -> 520 for
#: ``collate(pad=False)`` and the local ``zero_copy`` default (issue 15), whose logic is the core's (ragged_values).
ADAPTER_LINES = {"h5ml_torch": 520, "h5ml_keras": 400}


@pytest.mark.parametrize(("adapter", "limit"), sorted(ADAPTER_LINES.items()))
def test_adapters_are_thin(adapter: str, limit: int) -> None:
    """What the two adapters share lives in the core once; each adapter stays a thin wrapper of it."""
    lines = sum(len(p.read_text(encoding="utf-8").splitlines()) for p in (ROOT / "adapters" / adapter).glob("*.py"))
    assert 0 < lines < limit, f"adapters/{adapter} has {lines} lines; move logic it shares into h5ml"
