"""The core package imports no deep-learning framework (static check over the source)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "reference" / "h5ml"
FORBIDDEN = {"torch", "keras", "tensorflow", "jax"}


def _imported_roots(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    roots: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            roots.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            roots.add(node.module.split(".")[0])
    return roots


@pytest.mark.parametrize("module", sorted(PACKAGE.rglob("*.py")), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_core_module_imports_no_framework(module: Path) -> None:
    assert not (_imported_roots(module) & FORBIDDEN)


def test_import_h5ml_loads_no_framework() -> None:
    import subprocess
    import sys

    code = "import sys, h5ml; h5ml.open; h5ml.write; h5ml.validate; print(sorted(m for m in sys.modules if m.split('.')[0] in {'torch','keras','tensorflow','jax'}))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


ADAPTERS = Path(__file__).resolve().parents[1] / "adapters"


@pytest.mark.parametrize("module", sorted(ADAPTERS.glob("h5ml_torch/**/*.py")), ids=lambda p: p.name)
def test_torch_adapter_imports_no_other_framework_and_no_h5py(module: Path) -> None:
    """The adapter is thin: the reference reader's public API only, no HDF5 calls of its own."""
    assert not (_imported_roots(module) & {"keras", "tensorflow", "jax", "h5py"})
