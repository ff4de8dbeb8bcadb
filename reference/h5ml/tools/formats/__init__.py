"""Machine-readable reports of ``h5ml validate`` for CI tools: SARIF 2.1.0 and JUnit XML (§9.2, §9.3).

=====================  ==============================================================
module                 holds
=====================  ==============================================================
``shown``              what every report shares: the issues ``--min-severity`` shows,
                       a file's URI, an issue's message in the command line's words
``sarif``              :func:`~h5ml.tools.formats.sarif.sarif_report`: one SARIF 2.1.0 run
``junit``              :func:`~h5ml.tools.formats.junit.junit_report`: JUnit XML
``spec_links``         the link into SPEC.md of each clause (SARIF ``helpUri``)
=====================  ==============================================================

They live in :mod:`h5ml.tools` (not in :mod:`h5ml.validator`) because their
messages speak the command line's words (:func:`h5ml.ingest.options.cli_words`:
``--overwrite``, never ``overwrite=True``), which the validator's layer cannot
import; they import neither click nor rich. This package imports none of its
modules: ``h5ml validate`` imports the one its ``--format`` needs.
"""

__all__: list[str] = []
