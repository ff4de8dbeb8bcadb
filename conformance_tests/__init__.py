"""The h5ml conformance suite: fixtures, expected results and the scripts that make and run them.

The scripts are run as programs (``python conformance_tests/run.py``), never
imported as a library. They never import h5ml: the suite holds any
implementation, the reference one included, to the same files. This file
makes the folder a package, so that import-linter can check that rule
(``pyproject.toml``, ``[tool.importlinter]``) and so that ``generate.py``
imports its work from the package ``conformance_tests.generator`` beside it.
"""
