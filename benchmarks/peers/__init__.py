"""The peers of ``benchmarks/bench_peers.py``: workloads, readers, the method and the report (issue 15).

One module per concern: :mod:`peers.workloads` (the arrays),
:mod:`peers.validate` (every batch checked), :mod:`peers.base` (the reader
interface), one module per family of readers (:mod:`peers.hdf5_readers`,
:mod:`peers.array_readers`, :mod:`peers.stream_readers`),
:mod:`peers.timing` (caps, interleaving, medians), :mod:`peers.raw` (raw
batch reads), :mod:`peers.loaders` (DataLoader paths), :mod:`peers.growth`
(cost growth), :mod:`peers.goals` and :mod:`peers.report` (the goals
table, Markdown and plot).
"""

from __future__ import annotations

from collections.abc import Callable

from .array_readers import HFDatasetsReader, MemmapReader, ZarrReader
from .base import Reader
from .hdf5_readers import H5MLReader, H5pyReader, H5torchReader, KerasSequenceTutorial, PerSampleTutorial
from .stream_readers import LitDataReader, MDSReader, WebDatasetReader

__all__ = ["READERS"]

#: Every reader of the raw-read table, in the tables' order (memmap first: the bound).
READERS: tuple[Callable[[], Reader], ...] = (
    MemmapReader,
    H5MLReader,
    H5pyReader,
    HFDatasetsReader,
    ZarrReader,
    H5torchReader,
    WebDatasetReader,
    MDSReader,
    LitDataReader,
    PerSampleTutorial,
    KerasSequenceTutorial,
)
