"""What reading costs: the count of data reads of one open dataset (:attr:`h5ml.Dataset.read_stats`, §7.3).

The reader promises a cost as well as values: a batch of rows of one chunk
is one read, an integer index one read per dataset of the feature, a gzip
chunk decoded once however its rows are asked for (§7.3, case C01/C11). This
module holds the public measure of that cost, so that it can be checked and
benchmarked from outside: :class:`ReadStats` counts every read of feature data
a :class:`h5ml.reader.dataset.Dataset` makes in this process, and
:meth:`ReadStats.record` lists them.

Three kinds of read are counted:

- ``hdf5``: one call into the HDF5 library that reads feature data (one
  hyperslab of whole rows: ``H5Dread``, or h5py's compiled ``dataset[i]`` for
  one sample of a native number type);
- ``map``: one copy out of the read-only memory map of the file
  (:mod:`h5ml.reader.direct`; unfiltered numeric data only): a run of rows
  within one stored block (a chunk, or the whole contiguous dataset), or one
  gather of any rows in request order;
- ``view``: with ``zero_copy=True`` of :func:`h5ml.open`, a read-only view
  of the map handed out instead of a copy (:meth:`h5ml.reader.direct.DirectRows.view`).

Reads of metadata (attributes, shapes, datatypes, the chunk index) are not
counted: they do not move samples.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Literal, NamedTuple

__all__ = ["ReadEvent", "ReadStats"]


class ReadEvent(NamedTuple):
    """One counted read of feature data (see :meth:`ReadStats.record`).

    Attributes
    ----------
    hdf5_path : str
        The HDF5 dataset read, for example ``/train/image/values``.
    via : {"hdf5", "map", "view"}
        A call into the HDF5 library, a copy out of the memory map of the file, or a view of the map.
    start, stop : int
        The rows read: ``[start, stop)`` along the first axis. For a gather,
        the smallest row and one past the largest.
    rows : int
        The number of rows delivered: ``stop - start`` for a run, the number
        of rows asked (duplicates included) for a gather.
    gather : bool
        True for one copy of rows in any order out of the map (a batch of
        unfiltered numbers, :meth:`h5ml.reader.direct.DirectRows.take`);
        False for a run of consecutive rows.
    """

    hdf5_path: str
    via: Literal["hdf5", "map", "view"]
    start: int
    stop: int
    rows: int
    gather: bool = False


class ReadStats:
    """Counts of the reads of feature data of one open dataset, in this process (§7.3).

    Obtain it as :attr:`h5ml.reader.dataset.Dataset.read_stats`. The counts
    start at zero when the dataset is created, unpickled, or first used in a
    forked child, and only grow; :meth:`reset` sets them back to zero.

    Attributes
    ----------
    hdf5_reads : int
        Calls into the HDF5 library that read feature data (one hyperslab
        each, or one sample through h5py's ``dataset[i]``).
    direct_copies : int
        Copies out of the memory map of the file (:mod:`h5ml.reader.direct`):
        one per run of rows within one stored block, one per gather.
    direct_views : int
        Read-only views of the memory map handed out instead of copies
        (``zero_copy=True`` of :func:`h5ml.open`); not counted in :attr:`reads`.

    Notes
    -----
    Counting costs one integer addition per read. The counts are exact when
    one thread reads at a time; threads that read the same dataset at once
    may, rarely, lose an increment (no lock is taken on the read path).
    """

    __slots__ = ("direct_copies", "direct_views", "events", "hdf5_reads")

    def __init__(self) -> None:
        self.hdf5_reads = 0
        self.direct_copies = 0
        self.direct_views = 0
        #: The list :meth:`record` fills, or None when nothing is recorded (the reader checks it on every read).
        self.events: list[ReadEvent] | None = None

    @property
    def reads(self) -> int:
        """Every counted read: ``hdf5_reads + direct_copies``."""
        return self.hdf5_reads + self.direct_copies

    def reset(self) -> None:
        """Set the counts back to zero (a :meth:`record` in progress keeps its list)."""
        self.hdf5_reads = 0
        self.direct_copies = 0
        self.direct_views = 0

    @contextmanager
    def record(self) -> Iterator[list[ReadEvent]]:
        """List every read made inside the ``with`` block, in the order made.

        Yields
        ------
        list of ReadEvent
            Filled while the block runs (and left as it is after). Nested
            blocks each get their own list; the reads of an inner block are
            not in the outer one's.

        Examples
        --------
        >>> with ds.read_stats.record() as reads:  # doctest: +SKIP
        ...     ds["train"][[5, 2, 9]]
        >>> [(r.hdf5_path, r.via) for r in reads]  # doctest: +SKIP
        """
        outer = self.events
        events: list[ReadEvent] = []
        self.events = events
        try:
            yield events
        finally:
            self.events = outer

    def __repr__(self) -> str:
        return f"<h5ml ReadStats: {self.hdf5_reads} HDF5 reads, {self.direct_copies} direct copies>"
