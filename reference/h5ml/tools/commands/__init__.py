"""The commands of the ``h5ml`` command line, one module per command or family of commands.

Each module defines click commands that :mod:`h5ml.tools.cli` adds to its
group; they write through :class:`h5ml.tools.console.Streams` and return an
exit code of :mod:`h5ml.tools.console`.
"""

__all__: list[str] = []
