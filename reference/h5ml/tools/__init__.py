"""The tools on top of everything: the ``h5ml`` command line, ``inspect``'s summary, ``dump`` and the demo.

Nothing below this package imports it (nor click or rich, except the
progress bar of :mod:`h5ml.ingest`).
"""

__all__: list[str] = []
