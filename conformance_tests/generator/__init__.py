"""The conformance generator: recipes in, HDF5 fixtures, expected documents, manifest and sums out.

``conformance_tests/generate.py`` is its command line; these modules hold the
work, one responsibility each, in the order data flows through them:

- :mod:`~conformance_tests.generator.errors`: :class:`RecipeError`;
- :mod:`~conformance_tests.generator.paths`: where the suite's files lie;
- :mod:`~conformance_tests.generator.values`: recipe values as numpy arrays, deterministic bytes;
- :mod:`~conformance_tests.generator.datatypes`: the HDF5 datatypes a recipe names (:class:`HType`);
- :mod:`~conformance_tests.generator.json_mapping`: arrays and strings as JSON (SPEC §4.6, Appendix B);
- :mod:`~conformance_tests.generator.fingerprints`: SPEC §8 fingerprints and their self-test;
- :mod:`~conformance_tests.generator.plans`: the plan of one file (attributes, objects, edits);
- :mod:`~conformance_tests.generator.features`: one feature of a recipe as objects, fingerprint and entry (§6);
- :mod:`~conformance_tests.generator.planner`: one recipe as the plan of its whole file (§4, §5, Appendix B);
- :mod:`~conformance_tests.generator.filters`: filter pipelines, and whether HDF5 applied them (§3.5);
- :mod:`~conformance_tests.generator.write`: a plan written as HDF5 with h5py's low-level API;
- :mod:`~conformance_tests.generator.raw`: raw and damaged files, derived byte by byte;
- :mod:`~conformance_tests.generator.foreign`: foreign files (made by other libraries), only checked;
- :mod:`~conformance_tests.generator.recipes`: loading recipe files, templates and cases;
- :mod:`~conformance_tests.generator.sharded`: sharded fixtures (SPEC §12): a folder of shards and its index;
- :mod:`~conformance_tests.generator.views`: the view file of a sharded fixture (SPEC §12.6), and its reader document;
- :mod:`~conformance_tests.generator.suite`: the manifest, the expected documents and SHA256SUMS;
- :mod:`~conformance_tests.generator.build`: building fixtures and rewriting the suite's documents;
- :mod:`~conformance_tests.generator.check`: ``--check``, the committed suite compared with its recipes.

Like every part of the suite, it never imports an h5ml implementation: it
computes fingerprints and expected content itself, from the recipes, with
h5py and numpy only.
"""

__all__: list[str] = []
