"""Building the suite: the fixtures of some recipes, then the manifest, expected documents and sums of all.

Each fixture is written in a scratch folder beside ``fixtures/`` and moved
into place only when it is complete, so a failed build leaves the previous
fixture as it was. Foreign fixtures are never rebuilt: they must be there.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

import h5py

from conformance_tests.generator.errors import RecipeError
from conformance_tests.generator.filters import filter_mask_problems
from conformance_tests.generator.foreign import FOREIGN_HINT, foreign_spec, is_foreign
from conformance_tests.generator.paths import EXPECTED_DIR, FIXTURES_DIR, MANIFEST_PATH, SUMS_PATH
from conformance_tests.generator.plans import FilePlan
from conformance_tests.generator.raw import raw_bytes
from conformance_tests.generator.recipes import fixture_name
from conformance_tests.generator.sharded import build_sharded, is_sharded
from conformance_tests.generator.suite import Suite, describe, sums_text
from conformance_tests.generator.write import write_plan

__all__ = ["build"]


def build(recipes: list[dict[str, Any]], all_recipes: list[dict[str, Any]]) -> None:
    """Build the fixtures of ``recipes``, then rewrite the manifest, expectations and sums for ``all_recipes``."""
    FIXTURES_DIR.mkdir(exist_ok=True)
    EXPECTED_DIR.mkdir(exist_ok=True)
    by_id = {r["id"]: r for r in all_recipes}
    suite = Suite(all_recipes)
    built: set[str] = set()

    def build_one(recipe: dict[str, Any]) -> Path:
        target = FIXTURES_DIR / fixture_name(recipe)
        if recipe["id"] in built:
            return target
        if is_sharded(recipe):  # a folder: index.json and its shards (SPEC §12)
            built.add(recipe["id"])
            return build_sharded(recipe)
        if is_foreign(recipe):  # made once by its own library; never rebuilt here
            foreign_spec(recipe)
            if not target.is_file():
                raise RecipeError(f"{recipe['id']}: fixtures/{target.name} is missing; {FOREIGN_HINT}")
            built.add(recipe["id"])
            return target
        with tempfile.TemporaryDirectory(dir=FIXTURES_DIR) as tmp:
            scratch = Path(tmp) / fixture_name(recipe)
            if "raw" in recipe:
                scratch.write_bytes(raw_bytes(recipe, lambda rid: build_one(by_id[rid])))
            else:
                try:
                    plan = suite.plan(recipe)
                    assert plan is not None
                    write_plan(plan, scratch)
                    _require_filtered(plan, scratch)
                except RecipeError as exc:
                    raise RecipeError(f"{recipe['id']}: {exc}") from exc
            os.replace(scratch, target)
        built.add(recipe["id"])
        return target

    def source(rid: str) -> Path:
        return build_one(by_id[rid]) if by_id[rid] in recipes else FIXTURES_DIR / fixture_name(by_id[rid])

    for recipe in recipes:
        if "raw" in recipe and "from" in recipe["raw"]:
            source(recipe["raw"]["from"])
        build_one(recipe)
    manifest, documents = describe(suite)
    wanted = set(documents)
    for stale in EXPECTED_DIR.glob("*.json"):
        if stale.name not in wanted:
            stale.unlink()
    for name, text in documents.items():
        (EXPECTED_DIR / name).write_text(text, encoding="utf-8")
    MANIFEST_PATH.write_text(json.dumps(manifest, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    SUMS_PATH.write_text(sums_text(all_recipes), encoding="utf-8")


def _require_filtered(plan: FilePlan, path: Path) -> None:
    """Refuse a built file in which a dataset whose storage says ``expect_filtered`` has a chunk stored unfiltered."""
    nodes = [n for n in plan.nodes if n.kind == "dataset" and n.storage.get("expect_filtered")]
    if not nodes or plan.driver:
        return
    with h5py.File(path, "r") as f:
        problems = [p for node in nodes for p in filter_mask_problems(f, node)]
    if problems:
        raise RecipeError("; ".join(problems))
