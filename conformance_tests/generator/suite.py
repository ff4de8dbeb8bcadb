"""What the recipes produce for the suite as a whole: the manifest, the expected documents and SHA256SUMS.

:class:`Suite` holds the recipes and their plans; :func:`describe` gives the
manifest (one entry per case, schema/h5ml-manifest-1.0.schema.json, manifest
format 1.1, with the issue registry of SPEC §9.2 and the validator conformance
level of each expected issue, CONTRACT.md §8) and the expected documents of the reader cases
(SPEC Appendix B); :func:`sums_text` gives SHA256SUMS.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from conformance_tests.generator.errors import RecipeError
from conformance_tests.generator.json_mapping import Unmappable
from conformance_tests.generator.paths import FIXTURES_DIR, SPEC_PATH
from conformance_tests.generator.planner import plan_recipe
from conformance_tests.generator.plans import FilePlan, attr_json, attrs_after_edits
from conformance_tests.generator.recipes import cases_of, fixture_name
from conformance_tests.generator.sharded import (
    is_sharded,
    sharded_document,
    sharded_entry_file,
    sharded_files,
    tree_digest,
)

__all__ = [
    "DEEP_CODES",
    "LEVELS",
    "MANIFEST_VERSION",
    "UNREADABLE_CODES",
    "VALIDATOR_LEVELS",
    "Suite",
    "describe",
    "document_text",
    "file_digest",
    "format_version_of",
    "manifest_case",
    "reader_expectation",
    "registry",
    "sum_names",
    "sums_text",
]

#: Codes only a deep validation finds (SPEC §9.2).
DEEP_CODES = frozenset({"E140", "E141", "E142", "E143", "E144", "E145", "E160", "E162"})
#: Codes after which a file counts as unreadable (SPEC §9.3).
UNREADABLE_CODES = frozenset({"E100", "E101"})
#: The version of the manifest format written (1.1 added the validator levels: ``validator_levels`` and each
#: expected issue's ``level``; 1.2 the cases of sharded datasets, whose fixture is a folder: ``dataset``).
MANIFEST_VERSION = "1.2"
#: The validator conformance levels (CONTRACT.md §8), in order: each holds the one before it.
VALIDATOR_LEVELS = [
    {
        "name": "errors",
        "severity": "error",
        "description": "Required of every validator: every error the file has is reported (every MUST of SPEC.md), "
        "no other error, and the report's valid, readable and format_version and the exit status are right.",
    },
    {
        "name": "warnings",
        "severity": "warning",
        "description": "The errors level, and every expected warning is reported (the SHOULDs of SPEC.md).",
    },
    {
        "name": "info",
        "severity": "info",
        "description": "The warnings level, and every expected info is reported: the whole case.",
    },
]
_LEVEL_OF_SEVERITY = {level["severity"]: level["name"] for level in VALIDATOR_LEVELS}
_SEVERITY_OF_LETTER = {"E": "error", "W": "warning", "I": "info"}
_CLAUSE = re.compile(r"^§(?:[1-9][0-9]*|[A-Z])(?:\.[1-9][0-9]*)*$")
_REQUIREMENT_ID = re.compile(r"^§[1-9][0-9]*(?:\.[1-9][0-9]*)*-[RS][1-9][0-9]*$")


def manifest_case(recipe: dict[str, Any], case: dict[str, Any], sha256: str) -> dict[str, Any]:
    """The manifest entry of one case (see schema/h5ml-manifest-1.0.schema.json)."""
    issues = case.get("issues", [])
    codes = {i["code"] for i in issues}
    mode = case.get("mode", "any")
    if codes & DEEP_CODES and mode != "deep":
        raise RecipeError(f"{case['id']}: expects deep codes {sorted(codes & DEEP_CODES)} but its mode is {mode!r}")
    if not _CLAUSE.match(case.get("clause", "")):
        raise RecipeError(f"{case['id']}: clause {case.get('clause')!r} is malformed")
    valid = case["valid"]
    has_error = any(c.startswith("E") for c in codes)
    if valid == has_error:
        raise RecipeError(f"{case['id']}: valid={valid} but expected errors {sorted(codes)}")
    entry: dict[str, Any] = {"id": case["id"], "file": f"fixtures/{fixture_name(recipe)}"}
    if is_sharded(recipe):  # SPEC §12: a fixture folder; the validator is given its index
        # or its view file inside the folder (§12.6)
        entry.update(file=sharded_entry_file(recipe), dataset=f"fixtures/{recipe['id']}")
    entry |= {
        "sha256": sha256,
        "valid": valid,
        "readable": not codes & UNREADABLE_CODES,
        "mode": mode,
        "level": case.get("level", "core"),
        "clause": case["clause"],
    }
    if case.get("check_format_version", True):
        entry["format_version"] = case["format_version"]
    if case.get("related"):
        entry["related"] = case["related"]
    if case.get("requirements"):
        bad = [rid for rid in case["requirements"] if not _REQUIREMENT_ID.match(rid)]
        if bad:
            raise RecipeError(f"{case['id']}: requirement ids {bad} are malformed (SPEC §1.7: §<clause>-R<n>)")
        entry["requirements"] = case["requirements"]
    entry["issues"] = [
        {**issue, "level": _LEVEL_OF_SEVERITY[_SEVERITY_OF_LETTER[issue["code"][0]]]} for issue in issues
    ]
    for key in ("allowed", "absent"):
        if case.get(key):
            entry[key] = case[key]
    if case.get("exclusive"):
        entry["exclusive"] = True
    entry["description"] = case["description"]
    reader = case.get("reader")
    if reader is not None:
        entry["reader"] = reader
    return entry


def reader_expectation(
    recipe: dict[str, Any], case: dict[str, Any], document: dict[str, Any] | None
) -> dict[str, Any] | None:
    """The ``reader`` member of a case: decode (with the expected ``document``), refuse, or nothing."""
    reader = case.get("reader", "auto")
    if reader == "auto":
        if not case["valid"] or case.get("mode", "any") == "deep":
            return None
        reader = "decode"
    if reader is None or reader == "none":
        return None
    if reader == "decode":
        if document is None:
            raise RecipeError(f"{case['id']}: a reader case needs a decodable h5ml recipe")
        return {"expect": "decode", "expected": f"expected/{case['id']}.json"}
    if isinstance(reader, dict) and reader.get("expect") == "refuse":
        return reader
    raise RecipeError(f"{case['id']}: unknown reader expectation {reader!r}")


def document_text(document: dict[str, Any]) -> str:
    """The text of an expected/<case>.json file."""
    return json.dumps(document, ensure_ascii=False, indent=1, sort_keys=True, allow_nan=False) + "\n"


@dataclass
class Suite:
    """What the recipes produce: plans, raw bytes, manifest and expected documents."""

    recipes: list[dict[str, Any]]
    plans: dict[str, FilePlan | None] = field(default_factory=dict)

    def plan(self, recipe: dict[str, Any]) -> FilePlan | None:
        """The plan of an HDF5 recipe (None for a raw one)."""
        if recipe["id"] not in self.plans:
            self.plans[recipe["id"]] = None if "raw" in recipe or is_sharded(recipe) else plan_recipe(recipe)
        return self.plans[recipe["id"]]


def file_digest(path: Path) -> str:
    """The hex SHA-256 of a file."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def sum_names(recipes: list[dict[str, Any]]) -> list[str]:
    """The files SHA256SUMS lists, relative to fixtures/: each fixture, and each file of a sharded fixture's folder."""
    names = []
    for recipe in recipes:
        if is_sharded(recipe):
            names += [f"{recipe['id']}/{rel}" for rel in sharded_files(recipe)]
        else:
            names.append(fixture_name(recipe))
    return sorted(names)


def sums_text(recipes: list[dict[str, Any]]) -> str:
    """SHA256SUMS: one ``<hex>  fixtures/<file>`` line per fixture file, sorted by name (``sha256sum -c`` reads it)."""
    lines = []
    for name in sum_names(recipes):
        lines.append(f"{file_digest(FIXTURES_DIR / name)}  fixtures/{name}\n")
    return "".join(lines)


def registry() -> dict[str, dict[str, str]]:
    """The issue-code registry of SPEC §9.2 (code -> name, severity, clause), read from SPEC.md's table."""
    spec = SPEC_PATH
    text = spec.read_text(encoding="utf-8")
    begin, end = text.find("<!-- registry:begin"), text.find("<!-- registry:end")
    if begin < 0 or end < 0:
        raise RecipeError(f"{spec} has no registry table")
    table: dict[str, dict[str, str]] = {}
    row = re.compile(
        r"^\|\s*([EWI][0-9]{3})\s*\|\s*`([a-z0-9_]+)`\s*\|\s*(error|warning|info)\s*\|\s*(§[0-9A-Z.]+)\s*\|"
    )
    for line in text[begin:end].splitlines():
        m = row.match(line)
        if m:
            table[m.group(1)] = {"name": m.group(2), "severity": m.group(3), "clause": m.group(4)}
    return table


def format_version_of(plan: FilePlan | None) -> str | None:
    """The report's ``format_version`` for a file (§9.3): its root attribute when that is a string, else null."""
    if plan is None or plan.driver:
        return None  # raw bytes, or a member of a multi-file set: nothing can be opened
    attr = attrs_after_edits([*plan.root_attrs, *plan.final_attrs], plan.edits).get("format_version")
    if attr is None or not attr.htype.is_string or attr.shape != ():
        return None
    try:
        value = attr_json(attr)
    except Unmappable:
        return None
    return value if isinstance(value, str) else None


def describe(suite: Suite) -> tuple[dict[str, Any], dict[str, str]]:
    """The manifest and the expected documents (file name -> text) of the suite, from its recipes and fixtures."""
    cases = []
    documents: dict[str, str] = {}
    for recipe in suite.recipes:
        sharded = is_sharded(recipe)
        sha = tree_digest(FIXTURES_DIR / recipe["id"]) if sharded else file_digest(FIXTURES_DIR / fixture_name(recipe))
        plan = suite.plan(recipe)
        # a sharded dataset's view (§12.6) is one file a reader decodes: its shards concatenated
        document = sharded_document(recipe) if sharded else None if plan is None else plan.document
        for case in cases_of(recipe):
            default = None if sharded and document is None else "auto"
            reader = reader_expectation(recipe, {**case, "reader": case.get("reader", default)}, document)
            version = case["format_version"] if "format_version" in case else format_version_of(plan)
            if sharded and "format_version" not in case:
                version = recipe["sharded"].get("format_version", "1.2")
            entry = manifest_case(recipe, {**case, "reader": reader, "format_version": version}, sha)
            if reader is not None and reader["expect"] == "decode":
                assert document is not None
                documents[f"{case['id']}.json"] = document_text(document)
            cases.append(entry)
    manifest = {
        "$schema": "../schema/h5ml-manifest-1.0.schema.json",
        "manifest_version": MANIFEST_VERSION,
        "spec_version": "1.2",
        "description": (
            "Conformance cases for h5ml 1.0 validators and readers: one entry per case, with its fixture, "
            "what a validator must report and, for reader cases, the decoded content or a refusal. "
            "Generated by generate.py from recipes/*.json; do not edit by hand."
        ),
        "levels": LEVELS,
        "validator_levels": VALIDATOR_LEVELS,
        "registry": registry(),
        "cases": cases,
    }
    return manifest, documents


#: The conformance levels a case may belong to: core, or an optional feature an implementation declares.
LEVELS = {
    "core": "Every conforming implementation.",
    "filter-32000": "Implementations that decode the LZF filter (HDF5 filter id 32000), an optional filter a file "
    "may declare in required_filters (SPEC §3.5).",
    "float16": "Implementations that read IEEE binary16 (float16) values, which the storage profile allows "
    "(SPEC §3.2-R2: an implementation without it refuses such a feature instead of returning other values).",
}
