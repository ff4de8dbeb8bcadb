"""The typed packages ship a PEP 561 ``py.typed`` marker, and the wheel's configuration carries it."""

from __future__ import annotations

import importlib
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: The packages whose annotations mypy checks strictly (pyproject's [tool.mypy] files), so users may rely on them.
TYPED = ["h5ml", "h5ml_torch", "h5ml_keras"]


def _wheel_config() -> dict[str, object]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    wheel: dict[str, object] = config["tool"]["hatch"]["build"]["targets"]["wheel"]
    return wheel


@pytest.mark.parametrize("package", TYPED)
def test_typed_package_has_its_marker_and_the_wheel_lists_it(package: str) -> None:
    wheel = _wheel_config()
    folders = [p for p in wheel["packages"] if Path(p).name == package]  # type: ignore[attr-defined]
    assert len(folders) == 1, f"{package} is not one of the wheel's packages"
    marker = ROOT / folders[0] / "py.typed"
    assert marker.is_file() and marker.read_bytes() == b""  # an empty marker: the whole package is typed
    assert f"{folders[0]}/py.typed" in wheel["artifacts"]  # type: ignore[operator]
    if package == "h5ml":  # the imported package is this checkout's, so the marker is beside its code
        module = importlib.import_module(package)
        assert (Path(module.__file__ or "").parent / "py.typed").is_file()
