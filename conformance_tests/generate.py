#!/usr/bin/env python3
"""Build the h5ml conformance fixtures from their JSON recipes, with plain h5py and numpy.

Usage::

    python conformance_tests/generate.py                 # build every recipe of recipes/*.json
    python conformance_tests/generate.py recipes/root.json   # only the recipes of one file
    python conformance_tests/generate.py --check         # verify the committed suite, build nothing
    python conformance_tests/generate.py --check recipes/foreign.json   # only the fixtures of one file

A *recipe* (see README.md, "Recipes") describes one fixture: its root
attributes, splits and features with their values, extra HDF5 objects, edits
made after the file was finished, and byte-level damage. This script turns it
into an HDF5 file with h5py's low-level API, so that every datatype, dataspace,
layout and filter is exactly the one the recipe names. It never imports the
reference package ``h5ml``: fingerprints (SPEC §8) and the expected decoded
content (SPEC Appendix B) are computed here, independently, from the recipe.
This file is the command line; the work is done by the package
``conformance_tests.generator`` beside it (one module per step, listed in
README.md, "Recipes and the generator").

Building writes ``fixtures/<id>.h5`` (a foreign file must already be there;
a sharded recipe, SPEC §12, writes the folder ``fixtures/<id>/`` of its index
and shards),
``expected/<case>.json`` (the decoded content a reader must produce for each
valid fixture), ``manifest.json`` (what a validator must report for each case)
and ``SHA256SUMS``.

``--check`` verifies the committed suite without writing anything:

- every fixture's SHA-256 matches ``SHA256SUMS``, which lists exactly the fixtures;
- every fixture holds what its recipe says (objects, datatypes, dataspaces,
  layouts, filters, values and attributes), compared by content rather than byte
  for byte, since HDF5 builds lay files out differently; raw and damaged
  fixtures are compared byte for byte with the bytes their recipe derives;
  foreign files (HDF5 files of other formats, made once by their own libraries
  with ``foreign/make_foreign.py`` and never rebuilt here) are compared with
  the user block, objects, datatypes, values and attributes their recipe lists;
- every chunk of a dataset whose storage says ``expect_filtered`` is stored
  with filter mask 0: HDF5 applied every filter of its pipeline (it skips an
  optional filter, such as LZF, for a chunk the filter does not shrink);
- ``manifest.json`` and ``expected/*.json`` equal what the recipes produce;
- the generator's own fingerprint code reproduces the worked examples of
  SPEC §8.2.3 and Appendix A.

Given recipe files, ``--check`` checks only their fixtures (SHA-256 and
content) and the self-test, not the manifest or the expected documents.

Exit status: 0 on success, 1 when a check fails, 2 for a usage or recipe error.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

# The work is done by the package conformance_tests.generator beside this script. Run as a program, the script
# puts the folder above the suite first on the module search path: the repository root, or the parent of a copy
# of the suite (a folder named conformance_tests holding __init__.py, generate.py and generator/).
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from conformance_tests.generator.build import build
from conformance_tests.generator.check import check
from conformance_tests.generator.errors import RecipeError
from conformance_tests.generator.fingerprints import self_test
from conformance_tests.generator.paths import RECIPES_DIR
from conformance_tests.generator.recipes import cases_of, load_recipes


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point (see the module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("recipes", nargs="*", type=Path, help="recipe files to build (default: recipes/*.json)")
    parser.add_argument(
        "--check",
        action="store_true",
        help="verify the committed suite, build nothing; with recipe files, only their fixtures (content and sums)",
    )
    args = parser.parse_args(argv)
    try:
        all_recipes = load_recipes()
        chosen_files = {p.resolve().name for p in args.recipes}
        unknown = sorted(chosen_files - {r["_source"] for r in all_recipes})
        if unknown:
            parser.error(f"no recipe of {RECIPES_DIR} comes from {unknown}; give files of that folder")
        if args.check:
            only = {r["id"] for r in all_recipes if r["_source"] in chosen_files} if chosen_files else None
            problems = check(all_recipes, only)
            for problem in problems:
                print(f"FAIL {problem}")
            if only is None:
                fixtures = len(all_recipes)
                cases = sum(len(cases_of(r)) for r in all_recipes)
                scope = f"{fixtures} fixtures, {cases} cases"
            else:
                scope = (
                    f"{len(only)} fixtures of {', '.join(sorted(chosen_files))} "
                    "(manifest.json and expected/ not checked: run --check without recipe files for those)"
                )
            print(f"{'FAILED' if problems else 'OK'}: {scope}, {len(problems)} problem(s)")
            return 1 if problems else 0
        problems = self_test()
        if problems:
            for problem in problems:
                print(f"FAIL generator self-test: {problem}")
            return 1
        chosen = [r for r in all_recipes if not chosen_files or r["_source"] in chosen_files]
        build(chosen, all_recipes)
        print(f"built {len(chosen)} fixture(s); manifest has {sum(len(cases_of(r)) for r in all_recipes)} cases")
        return 0
    except RecipeError as exc:
        print(f"recipe error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
