"""The sharded writer: a dataset written as shards that roll over by size or count, and its index last (SPEC §12.4).

``h5ml.Writer(OUTDIR, metadata, shard_size=...)`` (or ``samples_per_shard=``)
returns a :class:`ShardedWriter` (see :meth:`h5ml.writer.streaming.Writer.__new__`):
the same methods as :class:`~h5ml.writer.streaming.Writer`, but ``OUTDIR`` is the
dataset's folder. Each shard is a plain :class:`~h5ml.writer.streaming.Writer`
on one file holding one split, ``<split>/<split>-NNNNN.h5``
(:mod:`h5ml.writer.shard_naming`), with the same card, features, compression
and checksums; the shards live in a staging folder until the writer closes,
then move into place and ``OUTDIR/index.json`` is written last, atomically
(:mod:`h5ml.writer.shard_folder`). The per-split state, the opening of shards and
the bytes counted are in :mod:`h5ml.writer.shard_split`,
:mod:`h5ml.writer.shard_opening` and :mod:`h5ml.writer.shard_sizes`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from h5ml.errors import ParameterError, WriterError
from h5ml.model.values import FeatureSpec, SpecTable, column_length, take
from h5ml.writer.arguments import check_name, check_options, check_seed
from h5ml.writer.root import _checked_root, check_metadata
from h5ml.writer.shard_folder import ShardFolder, file_name_problem
from h5ml.writer.shard_naming import check_shard_split_name, parse_samples_per_shard, parse_shard_size
from h5ml.writer.shard_opening import ShardOpener
from h5ml.writer.shard_sizes import batch_bytes, fitting
from h5ml.writer.shard_split import SplitShards, check_batch, feature_layouts
from h5ml.writer.streaming import Writer, one_sample_batch

__all__ = ["ShardedWriter"]


class ShardedWriter:
    """Write a sharded h5ml dataset: shards that roll over by bytes or samples, the index last (SPEC §12.4).

    Made by ``h5ml.Writer(OUTDIR, metadata, shard_size=..., samples_per_shard=...)`` (or directly); it has
    the methods of :class:`h5ml.Writer` (``add_split``, ``add_feature``, ``infer_features``, ``append``,
    ``append_sample``, ``update_metadata``, ``drop_shuffle_seed``, ``flush``, ``close(abort=)``, the context
    manager). ``isinstance(w, h5ml.Writer)`` is false for it: it writes a folder, not a file.

    Parameters
    ----------
    path
        The dataset's folder (OUTDIR): new (its parent must exist), empty, or holding a sharded dataset to
        replace with ``overwrite=True``.
    metadata
        The root metadata every shard gets (§4.2); ``name`` defaults to the folder's name.
    shard_size
        Roll over to a new shard when the next samples would make the open one exceed this size: an int of
        bytes, or ``"512MiB"``, ``"1GiB"``, ``"100MB"`` (:func:`~h5ml.writer.shard_naming.parse_shard_size`).
        What is counted: the stored bytes of the samples appended (the uncompressed size; see
        :mod:`h5ml.writer.shard_sizes`), not HDF5's own metadata; for a split with compressed features,
        the size of the shard's file after a flush: samples are counted with the compression ratio last
        measured (1 at first), and when the estimate says the next samples would not fit, the file is
        flushed and measured before the writer rolls over (a flush per overflowing batch at most, not one
        per batch: HDF5 does not reclaim the space of partial chunks rewritten after a flush), so that a
        compressed shard's file ends near ``shard_size``.
        A batch is split across shards; a single sample larger than ``shard_size`` gets a shard of its own.
    samples_per_shard
        Roll over after exactly this many samples (a batch is split across shards). With both options a
        shard closes at whichever limit it reaches first: after ``samples_per_shard`` samples, or before the
        next samples would make it exceed ``shard_size`` bytes, so that every shard but a split's last has at
        most ``samples_per_shard`` samples and (but for a single larger sample) at most ``shard_size`` bytes
        counted as above (as webdataset's ``ShardWriter(maxcount=, maxsize=)``).
    overwrite
        Replace the sharded dataset the folder holds: the new index replaces the old one atomically, and
        the old dataset's shards that the new index does not list are removed after it.
    mode
        Only ``"w"``: a sharded dataset is written whole (appending to one is not supported).
    compression, compression_opts, features, checksums
        As :class:`h5ml.Writer`, for every shard.
    page_size
        As :class:`h5ml.Writer`, for every shard: each shard is written with paged file-space aggregation
        and pages of this many bytes (``1 << 20`` suits object stores: a reader at a URL then fetches a
        shard's metadata in a few requests); None: HDF5's default strategy.

    Raises
    ------
    ParameterError
        If neither shard option is given, one is invalid, ``path`` is named like an HDF5 file (``x.h5``,
        not an existing folder: a sharded dataset is a folder), or ``mode`` is not ``"w"``.
    FileExistsError
        If the folder holds an index and ``overwrite`` is false, or holds other files and no index.
    NotADirectoryError, FileNotFoundError
        If ``path`` is a file, or its parent folder does not exist.
    WriterError, MetadataError
        As :class:`h5ml.Writer`.

    Notes
    -----
    Until :meth:`close` the shards live in ``OUTDIR/.h5ml-shards-<pid>-<machine>-<random>/``; ``close`` checks that
    every shard agrees with the first of its split (§12.2), moves them to ``<split>/<split>-NNNNN.h5`` and
    writes ``index.json`` last. ``close(abort=True)``, an exception inside ``with`` and Ctrl-C remove the
    staging folder and write no index: a dataset already in the folder stays as it was. A process killed
    outright leaves the hidden staging folder, which no index lists (so does a writer never closed): the
    validator warns of it (W211), ``h5ml temporaries OUTDIR --clean`` and the next writer of the folder
    remove it once its process is gone. No shard
    records a ``shuffle_seed``: the seed orders the whole split, not the samples of one shard (§7.6). Metadata updated after
    a shard closed (:meth:`update_metadata`) is written into it at close by rewriting it (mode ``"a"``).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        metadata: Mapping[str, Any] | None = None,
        *,
        shard_size: int | str | None = None,
        samples_per_shard: int | None = None,
        overwrite: bool = False,
        mode: Literal["w", "a"] = "w",
        compression: str | None = None,
        compression_opts: int | None = None,
        features: Mapping[str, FeatureSpec | Mapping[str, Any]] | None = None,
        checksums: bool = True,
        page_size: int | None = None,
    ) -> None:
        self.path = Path(path)
        where = str(self.path)
        if shard_size is None and samples_per_shard is None:
            raise ParameterError(f"{where}: a sharded dataset needs shard_size= or samples_per_shard=")
        named_as_file = file_name_problem(self.path)
        if named_as_file is not None:  # a file name given with a shard option by mistake: no folder is made
            raise ParameterError(f"{named_as_file} (parameter path)")
        if mode != "w":
            raise ParameterError(
                f"{where}: mode={mode!r}: a sharded dataset is written whole (mode='w'); appending to one is not "
                "supported: write a new dataset, or unshard it first"
            )
        self.shard_size = None if shard_size is None else parse_shard_size(shard_size, "shard_size")
        self.samples_per_shard = (
            None if samples_per_shard is None else parse_samples_per_shard(samples_per_shard, "samples_per_shard")
        )
        if not isinstance(overwrite, bool):
            raise ParameterError(f"{where}: overwrite must be True or False, not {overwrite!r}")
        check_options(mode, compression, compression_opts, where, page_size)
        check_metadata(metadata, where)
        self._specs = SpecTable(features)
        self._features = dict(features or {})
        self._options: dict[str, Any] = {
            "compression": compression,
            "compression_opts": compression_opts,
            "checksums": checksums,
            "page_size": page_size,
        }
        self._metadata: dict[str, Any] = {"name": self.path.name, **(metadata or {})}
        _checked_root(self._metadata, self.path.name, where)  # a bad card is refused before the folder is made
        self._overwrite = overwrite
        self._splits: dict[str, SplitShards] = {}
        self._closed = False
        self._folder = ShardFolder(self.path, overwrite)
        self._opener = ShardOpener(self._folder, self._metadata, self._options, self._features, self.samples_per_shard)

    # -- the shards ------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise WriterError(f"{self.path}: the sharded writer is closed", path=str(self.path))

    def _state(self, split: str) -> SplitShards:
        """The split, created (with its first shard) if needed, as :class:`h5ml.Writer` creates it."""
        self._check_open()
        state = self._splits.get(split)
        if state is None:
            self.add_split(split)
            state = self._splits[split]
        return state

    # -- the Writer's methods ----------------------------------------------------

    def add_split(
        self,
        name: str,
        description: str | None = None,
        *,
        shuffle_seed: int | None = None,
        expected_samples: int | None = None,
    ) -> None:
        """Create a split, and its first shard (§5.1, §5.3, §12.4); as :meth:`h5ml.Writer.add_split`.

        ``shuffle_seed`` is checked but recorded in no shard (see the class's notes).

        Raises
        ------
        WriterError, ParameterError
            As :meth:`h5ml.Writer.add_split`; ParameterError if the name cannot name a shard file.
        """
        self._check_open()
        where = str(self.path)
        check_name(name, "split", where, "/")
        if name in self._splits:
            raise WriterError(f"{where}: split /{name} already exists", path=where, hdf5_path=f"/{name}")
        check_shard_split_name(name)
        if shuffle_seed is not None:  # checked as a plain writer checks it, then recorded in no shard
            check_seed(shuffle_seed, "shuffle_seed", where, f"/{name}")
        state = SplitShards(name, description, expected_samples)
        self._opener.open(state)
        self._splits[name] = state

    def drop_shuffle_seed(self, split: str) -> None:
        """Record no ``shuffle_seed`` for ``split``: shards never record one, so this only checks the split."""
        self._check_open()
        if split not in self._splits:
            raise WriterError(f"{self.path}: no split /{split}", path=str(self.path), hdf5_path=f"/{split}")

    def update_metadata(self, metadata: Mapping[str, Any]) -> None:
        """Set or replace root attributes of every shard (§4.2, §4.7); as :meth:`h5ml.Writer.update_metadata`.

        Open shards get them at once; shards already finished get them at :meth:`close` (rewritten).

        Raises
        ------
        WriterError, MetadataError
            As :meth:`h5ml.Writer.update_metadata`; nothing is changed then.
        """
        self._check_open()
        for state in self._splits.values():
            state.open_writer().update_metadata(metadata)
            state.stale_metadata.update(range(len(state.paths) - 1))
        self._metadata.update(metadata)

    def add_feature(
        self,
        split: str,
        name: str,
        *,
        encoding: str,
        dtype: npt.DTypeLike | None = None,
        sample_shape: Sequence[int] = (),
        sample_ndim: int | None = None,
        class_names: Sequence[str] | None = None,
        role: str | None = None,
        description: str | None = None,
        units: str | None = None,
        sample_rate: float | None = None,
        media_type: str | None = None,
        compression: str | Literal[False] | None = None,
    ) -> None:
        """Declare a feature before its split's first batch (§6); as :meth:`h5ml.Writer.add_feature`.

        Raises
        ------
        WriterError, EncodingError
            As :meth:`h5ml.Writer.add_feature`.
        """
        state = self._state(split)
        kwargs: dict[str, Any] = {
            "encoding": encoding, "dtype": dtype, "sample_shape": sample_shape, "sample_ndim": sample_ndim,
            "class_names": class_names, "role": role, "description": description, "units": units,
            "sample_rate": sample_rate, "media_type": media_type, "compression": compression,
        }  # fmt: skip
        state.open_writer().add_feature(split, name, **kwargs)
        state.calls.append(("add_feature", (split, name), kwargs))

    def infer_features(self, split: str, columns: Mapping[str, Any]) -> None:
        """Declare a split's features from whole columns (§6); as :meth:`h5ml.Writer.infer_features`.

        Raises
        ------
        WriterError, EncodingError
            As :meth:`h5ml.Writer.infer_features`.
        """
        state = self._state(split)
        state.open_writer().infer_features(split, columns)
        state.calls.append(("infer_features", (split, columns), {}))

    def append(self, split: str, batch: Mapping[str, Any]) -> None:
        """Append samples to a split, rolling over to new shards as they fill (§5.3, §12.4).

        As :meth:`h5ml.Writer.append`; a batch that crosses a shard's limit is split across shards (checked
        whole first, so that a failed append changes nothing).

        Raises
        ------
        WriterError, EncodingError
            As :meth:`h5ml.Writer.append`.
        """
        state = self._state(split)
        if not isinstance(batch, Mapping):
            state.open_writer().append(split, batch)  # the writer's own message
            return
        lengths = {column_length(values) for values in batch.values()}
        n = lengths.pop() if len(lengths) == 1 else None
        if n is None or not batch:
            state.open_writer().append(split, batch)  # ragged counts or no feature: the writer's own message
            return
        first = state.declarations is None and not state.total
        if first:
            self._opener.settle(state, sorted({*batch, *self._declared(state)}))
        try:
            if first and self.shard_size is not None:  # the sizes of samples need their stored form
                undeclared = {k: v for k, v in batch.items() if k not in self._declared(state)}
                if undeclared:
                    state.open_writer().infer_features(split, undeclared)
                state.learn_features(state.open_writer())
            sizes = None if self.shard_size is None else batch_bytes(state.layouts or {}, batch, n)
            self._append_parts(state, batch, n, sizes)
        except BaseException:
            if first and not state.total and len(state.paths) == 1:
                self._opener.reopen(state, None)  # a failed first append declares nothing, as with a plain writer
            raise

    def _declared(self, state: SplitShards) -> list[str]:
        return list(feature_layouts(state.open_writer(), state.name))

    def _append_parts(self, state: SplitShards, batch: Mapping[str, Any], n: int, sizes: np.ndarray | None) -> None:
        """Append ``batch`` to the open shard, or in parts across shards at their limits."""
        start = 0
        checked = False
        while start < n:
            writer = state.open_writer()
            k = n - start
            if self.samples_per_shard is not None:
                k = min(k, self.samples_per_shard - state.in_shard)
            if sizes is not None and self.shard_size is not None:
                fits = fitting(
                    sizes[start : start + k] * state.ratio, state.counted, self.shard_size, not state.in_shard
                )
                if fits < k and state.compressed and state.since_measured:
                    writer.flush()  # the estimate says full: measure the file itself before rolling over
                    state.measure(writer.temp_path)
                    continue
                k = fits
            if k <= 0:
                self._opener.roll(state)
                continue
            part = batch if k == n else {key: take(values, slice(start, start + k)) for key, values in batch.items()}
            if k < n and not checked:
                check_batch(writer, state.name, batch)  # the whole batch is valid before any part is stored
                checked = True
            writer.append(state.name, part)
            state.in_shard += k
            state.total += k
            if sizes is not None:
                stored = int(sizes[start : start + k].sum())
                state.stored += stored
                state.counted += stored * state.ratio
                state.since_measured += stored
            start += k

    def append_sample(self, split: str, sample: Mapping[str, Any]) -> None:
        """Append one sample; as :meth:`h5ml.Writer.append_sample`.

        Raises
        ------
        WriterError, EncodingError
            As :meth:`h5ml.Writer.append`.
        """
        self.append(split, one_sample_batch(sample))

    def flush(self) -> None:
        """Write every buffered sample of the open shards to their files (in the staging folder).

        Raises
        ------
        WriterError, OSError
            As :meth:`h5ml.Writer.flush`.
        """
        self._check_open()
        for state in self._splits.values():
            state.open_writer().flush()

    # -- finishing -----------------------------------------------------------------

    def _finish(self) -> None:
        self._specs.check_used({s: dict.fromkeys(self._declared(st)) for s, st in self._splits.items()})
        for state in self._splits.values():
            self._opener.settle(state, self._declared(state))
        for state in self._splits.values():
            writer = state.open_writer()
            writer.close()
            state.writer = None
        for state in self._splits.values():
            for position in sorted(state.stale_metadata):
                staged = self._folder.staged(state.paths[position])
                Writer(staged, self._metadata, mode="a", checksums=bool(self._options["checksums"])).close()
        self._folder.finish({name: state.paths for name, state in self._splits.items()}, self._overwrite)

    def close(self, abort: bool = False) -> None:
        """Finish every shard, move them into place and write the index last, or abort (§12.4).

        Parameters
        ----------
        abort
            Discard every shard written so far (the staging folder is removed) and write no index.

        Raises
        ------
        WriterError, OSError, EncodingError
            If finishing fails: every shard is discarded, no index is written, and the error propagates.
            Closing twice does nothing.
        """
        if self._closed:
            return
        self._closed = True
        if abort:
            self._abort()
            return
        try:
            self._finish()
        except BaseException:
            self._abort()
            raise

    def _abort(self) -> None:
        try:
            for state in self._splits.values():
                if state.writer is not None:
                    state.writer.close(abort=True)
                    state.writer = None
        finally:
            self._folder.abort()

    def __enter__(self) -> ShardedWriter:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close(abort=exc_type is not None)
