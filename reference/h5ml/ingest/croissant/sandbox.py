"""How mlcroissant runs for one conversion: a cache folder of its own, CSV cells read as text: :func:`private_reading`.

mlcroissant keeps what it downloads and extracts under one cache folder,
``$CROISSANT_CACHE`` (``~/.cache/croissant``), read once when mlcroissant is
imported (``mlcroissant._src.core.constants``): an archive is extracted to
``extract/<sha256 of its contentUrl>``, a name made of the *relative*
``contentUrl`` and not of the archive's content, and reused whenever that
folder exists. Two datasets that both have an ``imgs.zip`` would share one
extraction (the second conversion would store the first one's images), and a
failed extraction would leave a folder that is reused. So every conversion
gets a temporary cache folder of its own, removed afterwards, and nothing is
shared between conversions or with the user's cache.

mlcroissant reads CSV and TSV files with pandas' ``read_csv``, which parses
the cells of numeric-looking columns as numbers before mlcroissant turns them
back into text: ``9007199254740993.0`` would become ``9007199254740992.0``,
``1e400`` ``inf``, ``007`` ``7``. During a conversion every cell is read as
the text it is (``dtype=str``); pandas still takes an empty cell, ``NA``,
``NULL``, ... for a missing value, which h5ml refuses
(:mod:`h5ml.ingest.croissant.records`).

Both are module-level settings of mlcroissant, so they are changed for the
duration of :func:`private_reading` under a lock: conversions of Croissant in
several threads of one process run one after the other.
"""

from __future__ import annotations

import importlib
import shutil
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from h5ml.errors import IngestError

__all__ = ["private_reading"]

_LOCK = threading.Lock()


class _TextCells:
    """pandas as mlcroissant's reader sees it: ``read_csv`` reads every cell as text; the rest is pandas itself."""

    def __init__(self, pandas: Any) -> None:
        self._pandas = pandas

    def __getattr__(self, name: str) -> Any:
        return getattr(self._pandas, name)

    def read_csv(self, *args: Any, **kwargs: Any) -> Any:
        kwargs.setdefault("dtype", str)
        return self._pandas.read_csv(*args, **kwargs)


@contextmanager
def private_reading() -> Iterator[Path]:
    """Run mlcroissant, inside the block, with a temporary cache folder of its own and CSV cells as text.

    Yields
    ------
    pathlib.Path
        The cache folder (``download/`` and ``extract/`` in it); it is removed when the block ends.

    Raises
    ------
    h5ml.IngestError
        If the installed mlcroissant keeps its cache folder or its CSV reader
        elsewhere than this module knows (a version h5ml was not written for):
        reading with the shared cache could store another dataset's files.
    """
    from etils import epath  # type: ignore[import-untyped]  # mlcroissant's own path type (a dependency of it)

    constants = importlib.import_module("mlcroissant._src.core.constants")
    extract = importlib.import_module("mlcroissant._src.operation_graph.operations.extract")
    read = importlib.import_module("mlcroissant._src.operation_graph.operations.read")

    settings = [(constants, "CROISSANT_CACHE"), (constants, "DOWNLOAD_PATH"), (constants, "EXTRACT_PATH")]
    settings += [(extract, "EXTRACT_PATH"), (read, "pd")]
    missing = [f"{module.__name__}.{name}" for module, name in settings if not hasattr(module, name)]
    if missing:
        raise IngestError(
            f"this mlcroissant has no {', '.join(missing)}, where h5ml sets its cache folder and its CSV reader for "
            "each conversion; install the mlcroissant version h5ml supports (pip install 'h5ml[croissant]')"
        )
    with _LOCK:
        folder = Path(tempfile.mkdtemp(prefix="h5ml-croissant-"))
        cache = epath.Path(folder)
        saved = [(module, name, getattr(module, name)) for module, name in settings]
        ours = [cache, cache / "download", cache / "extract", cache / "extract", _TextCells(read.pd)]
        try:
            for (module, name), value in zip(settings, ours, strict=True):
                setattr(module, name, value)
            yield folder
        finally:
            for module, name, value in saved:
                setattr(module, name, value)
            shutil.rmtree(folder, ignore_errors=True)
