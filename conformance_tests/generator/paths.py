"""Where the suite's files lie: the folder of ``generate.py`` and what it builds there.

The suite folder is the parent of this package, so a copy of the folder
(``generate.py``, ``generator/``, recipes and fixtures) works on its own
files; SPEC.md and the manifest schema lie beside that folder.
"""

from __future__ import annotations

from pathlib import Path

__all__ = [
    "EXPECTED_DIR",
    "FIXTURES_DIR",
    "MANIFEST_PATH",
    "MANIFEST_SCHEMA_PATH",
    "RECIPES_DIR",
    "SPEC_PATH",
    "SUITE_DIR",
    "SUMS_PATH",
]

#: The suite folder: conformance_tests/, which holds generate.py and this package.
SUITE_DIR = Path(__file__).resolve().parent.parent
RECIPES_DIR = SUITE_DIR / "recipes"
FIXTURES_DIR = SUITE_DIR / "fixtures"
EXPECTED_DIR = SUITE_DIR / "expected"
MANIFEST_PATH = SUITE_DIR / "manifest.json"
SUMS_PATH = SUITE_DIR / "SHA256SUMS"
#: The specification, whose §9.2 table is the manifest's issue registry.
SPEC_PATH = SUITE_DIR.parent / "SPEC.md"
#: The JSON Schema the manifest follows.
MANIFEST_SCHEMA_PATH = SUITE_DIR.parent / "schema" / "h5ml-manifest-1.0.schema.json"
