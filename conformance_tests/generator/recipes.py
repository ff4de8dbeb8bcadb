"""Recipe files: loading them, laying recipes over their templates, and the cases of each recipe.

A recipe file (``recipes/*.json``) holds ``{"description", "templates"?,
"recipes": [...]}``; README.md ("Recipes") describes a recipe's members.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from conformance_tests.generator.errors import RecipeError
from conformance_tests.generator.paths import RECIPES_DIR

__all__ = ["cases_of", "fixture_name", "load_recipes", "merge"]

_ID = re.compile(r"^[a-z0-9][a-z0-9-]*$")


def merge(base: Any, override: Any) -> Any:
    """``override`` laid over ``base``: objects merge member by member, anything else replaces (null included)."""
    if not (isinstance(base, dict) and isinstance(override, dict)):
        return override
    out = dict(base)
    for key, value in override.items():
        out[key] = merge(base[key], value) if key in base else value
    return out


def load_recipes(paths: Sequence[Path] | None = None) -> list[dict[str, Any]]:
    """Every recipe of ``recipes/*.json`` (or of the given files), with templates applied.

    A recipe file holds ``{"description", "templates"?, "recipes": [...]}``; a
    recipe with ``"base": name`` is the template of that name (from any recipe
    file) with the recipe laid over it (:func:`merge`). Recipe and case ids
    must be unique and well formed.
    """
    files = sorted(RECIPES_DIR.glob("*.json")) if not paths else list(paths)
    docs = [(path, json.loads(Path(path).read_text(encoding="utf-8"))) for path in files]
    templates: dict[str, Any] = {}
    for path in sorted(RECIPES_DIR.glob("*.json")):
        for name, template in json.loads(path.read_text(encoding="utf-8")).get("templates", {}).items():
            if name in templates:
                raise RecipeError(f"{path}: template {name!r} is defined twice")
            templates[name] = template
    recipes: list[dict[str, Any]] = []
    seen: set[str] = set()
    case_ids: set[str] = set()
    for path, doc in docs:
        for raw_recipe in doc.get("recipes", []):
            recipe = raw_recipe
            if "base" in raw_recipe:
                if raw_recipe["base"] not in templates:
                    raise RecipeError(f"{path}: {raw_recipe.get('id')}: unknown template {raw_recipe['base']!r}")
                recipe = merge(templates[raw_recipe["base"]], {k: v for k, v in raw_recipe.items() if k != "base"})
            rid = recipe.get("id", "")
            if not _ID.match(rid) or rid in seen:
                raise RecipeError(f"{path}: recipe id {rid!r} is malformed or repeated")
            seen.add(rid)
            recipe["_source"] = Path(path).name
            for case in cases_of(recipe):
                if case["id"] in case_ids:
                    raise RecipeError(f"{path}: case id {case['id']!r} is repeated")
                case_ids.add(case["id"])
            recipes.append(recipe)
    return recipes


def cases_of(recipe: dict[str, Any]) -> list[dict[str, Any]]:
    """The cases of a recipe, each with its id (the first defaults to the recipe's); raises for none or a bad id."""
    cases = recipe.get("cases")
    if not cases:
        raise RecipeError(f"{recipe['id']}: a recipe needs at least one case")
    out = []
    for i, case in enumerate(cases):
        cid = case.get("id", recipe["id"] if i == 0 else "")
        if not _ID.match(cid):
            raise RecipeError(f"{recipe['id']}: case {i} needs an id")
        out.append({**case, "id": cid})
    return out


def fixture_name(recipe: dict[str, Any]) -> str:
    """The fixture file of a recipe."""
    return f"{recipe['id']}.h5"
