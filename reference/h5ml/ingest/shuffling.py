"""Shuffle on write for streamed sources: write a staging file, then copy it in a seeded order (§7.6).

A source read as a stream (a Python iterable, a table read in chunks) cannot
be written in a random order directly. :class:`ShuffleStage` has it written
unshuffled (and uncompressed, for fast random reads) to a staging file beside
the output, then :func:`copy_shuffled` stores every split in the order
``numpy.random.default_rng(seed).permutation(n)`` (:func:`h5ml.sampling.seeds.write_order`),
reading in blocks, and records the seed as the split's ``shuffle_seed``.
"""

from __future__ import annotations

import os
from pathlib import Path
from types import TracebackType
from typing import Any, Final

from h5ml.ingest.edit.copying import declaration, root_metadata
from h5ml.ingest.options import ConvertOptions
from h5ml.ingest.output import check_output, temp_beside
from h5ml.ingest.report import IngestReport
from h5ml.reader import open_file as open_h5ml
from h5ml.sampling.seeds import write_order
from h5ml.writer import Writer

__all__ = ["SHUFFLE_BLOCK_BYTES", "ShuffleStage", "copy_shuffled"]

#: Bytes of samples read at once by :func:`copy_shuffled`.
SHUFFLE_BLOCK_BYTES: Final = 32 << 20


def copy_shuffled(
    source: str | os.PathLike[str],
    output: str | os.PathLike[str],
    *,
    seed: int,
    compression: str | None = None,
    level: int | None = None,
    block_bytes: int = SHUFFLE_BLOCK_BYTES,
    overwrite: bool = False,
    shard_size: int | str | None = None,
    samples_per_shard: int | None = None,
) -> dict[str, int]:
    """Copy an h5ml file with each split stored in a seeded random order (§7.6).

    Stored sample ``i`` of a split of ``n`` samples is source sample ``p[i]``
    with ``p = numpy.random.default_rng(seed).permutation(n)``, for every
    feature; ``seed`` is recorded as the split's ``shuffle_seed``. The source
    is read in blocks of about ``block_bytes``, so memory stays bounded;
    reading in random order is fastest from an uncompressed source.

    Parameters
    ----------
    source
        A complete h5ml file.
    output
        The file to write (atomically, as :class:`h5ml.Writer`).
    seed
        The permutation seed, an integer in [0, 2**63).
    compression, level
        ``"gzip"`` or None, and the gzip level, for the copy.
    block_bytes
        Bytes of samples read and written at once.
    overwrite
        Replace an existing ``output``.
    shard_size, samples_per_shard
        Write the copy as a sharded dataset in the folder ``output`` (SPEC §12.4,
        :class:`h5ml.writer.sharded.ShardedWriter`); None: one file.

    Returns
    -------
    dict
        Split -> samples copied. Splits without samples are left out.

    Raises
    ------
    FileExistsError, IsADirectoryError, FileNotFoundError
        As :func:`h5ml.ingest.check_output`.
    h5ml.H5MLError
        If the source cannot be read (as :func:`h5ml.open`).
    """
    sharded = shard_size is not None or samples_per_shard is not None
    out = check_output(output, overwrite, [Path(source)], sharded=sharded)
    shards: dict[str, Any] = (
        {"shard_size": shard_size, "samples_per_shard": samples_per_shard, "overwrite": overwrite} if sharded else {}
    )
    counts: dict[str, int] = {}
    with open_h5ml(source) as ds:
        meta = root_metadata(ds, None)
        splits = {name: ds[name] for name in ds if ds[name].num_samples > 0}
        total_bytes = max(1, Path(source).stat().st_size)
        total_samples = max(1, sum(split.num_samples for split in splits.values()))
        step = max(1, block_bytes // max(1, total_bytes // total_samples))
        with Writer(out, meta, compression=compression, compression_opts=level, **shards) as writer:
            for name, split in splits.items():
                n = split.num_samples
                writer.add_split(name, split.description, shuffle_seed=seed, expected_samples=n)
                for fname, feature in split.features.items():  # declared as stored, as subset and merge do
                    writer.add_feature(name, fname, **declaration(feature, "gzip" if compression else None))
                order = write_order(n, seed)
                for begin in range(0, n, step):
                    writer.append(name, split.read(order[begin : begin + step]))
                counts[name] = n
    return counts


class ShuffleStage:
    """Where a streamed conversion writes, and the shuffled copy at the end when it shuffles on write (§7.6).

    ``with ShuffleStage(out, options) as stage:`` write the file at
    ``stage.target`` with ``stage.writer_options()``, then call
    :meth:`finish`. Without shuffle the target is the output itself; with
    it, a staging file beside the output (as much disk again), removed when
    the block ends whatever happens.

    Parameters
    ----------
    output
        The output, checked.
    options
        The conversion's options, seeded (:meth:`h5ml.ingest.ConvertOptions.seeded`).
    """

    def __init__(self, output: Path, options: ConvertOptions) -> None:
        self.output = output
        self.options = options
        self.staging = temp_beside(output, "stage") if options.shuffle else None
        self.target = output if self.staging is None else self.staging

    def writer_options(self) -> dict[str, Any]:
        """The compression of the first write: the output's, or none for the staging file (read in random order)."""
        return self.options.writer_options() if self.staging is None else {"compression": None}

    def finish(self, report: IngestReport) -> None:
        """Copy the staging file shuffled to the output (the report's counts are then the copy's)."""
        if self.staging is not None:
            assert self.options.seed is not None, "ShuffleStage needs seeded options"
            report.samples = copy_shuffled(
                self.staging,
                self.output,
                seed=self.options.seed,
                compression=self.options.compression,
                level=self.options.level,
                overwrite=True if not self.options.sharded else self.options.overwrite,
                shard_size=self.options.shard_size,
                samples_per_shard=self.options.samples_per_shard,
            )

    def __enter__(self) -> ShuffleStage:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, traceback: TracebackType | None
    ) -> None:
        if self.staging is not None:
            self.staging.unlink(missing_ok=True)
