"""Where samples go while a file is written: :class:`FeatureSink` and :class:`SplitSink` (§5, §6, §7, §8.2, §6.7).

A feature sink holds one feature of the file being written: its
:class:`~h5ml.model.layout.Layout`, the attributes it is created with, its HDF5
objects once they exist, the batches buffered for it, its streaming
fingerprint (§8.2) and statistics (§6.7), and how many samples and value rows
are already in the file. A split sink holds the feature sinks of one split and
what the split's buffers hold.

HDF5 objects are created on the first flush, with chunk shapes from
:mod:`h5ml.spec.chunks` (§7) sized to the final number of samples when it is known
by then. In append mode a feature that grows is first read back once
(:meth:`FeatureSink.rehash`) so its fingerprint and statistics cover the old
samples too.

Whole chunks of gzip datasets are written through a
:class:`~h5ml.writer.compress.ChunkPool`, which compresses them in threads
(:mod:`h5ml.writer.compress`); every other write goes through HDF5.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import math
from dataclasses import dataclass
from typing import Any, Final

import h5py
import numpy as np

from h5ml import spec
from h5ml.errors import EncodingError, WriterError
from h5ml.model.fingerprint import FeatureHasher
from h5ml.model.layout import Layout, main_dataset, stored_layout
from h5ml.model.stats import StreamingStats
from h5ml.spec.attrs import read_attr, write_attr
from h5ml.spec.chunks import VLEN_ELEMENT_BYTES, chunk_shape
from h5ml.writer.batches import Batch, concat, runs
from h5ml.writer.compress import ChunkPool, dataset_filters, write_rows

__all__ = ["BLOCK_BYTES", "STRING_BLOCK", "FeatureSink", "SplitSink"]

#: Bytes read (or taken from in-memory arrays) at a time when re-reading a
#: feature in append mode or feeding :func:`h5ml.writer.inmemory.write`'s arrays to the writer.
BLOCK_BYTES: Final = 32 << 20
#: Strings read at a time when re-reading a string feature (their length is unknown).
STRING_BLOCK: Final = 1 << 16
# SPEC §3.4-R1: every string dataset (string features, class names) is variable-length UTF-8
_STR_DTYPE: Final = h5py.string_dtype("utf-8")


@dataclass
class FeatureSink:
    """One feature of the file being written.

    Attributes
    ----------
    split, name
        The feature's split and name.
    layout
        Its stored form.
    attrs
        The §6.1 attributes written when its HDF5 object is created (empty
        for a feature of an existing file, which has them already).
    compression
        ``"gzip"`` or ``None``, for its datasets.
    obj
        Its ``h5py.Dataset`` or ``h5py.Group``, once created (or loaded).
    hasher
        Its streaming fingerprint (§8.2).
    stats
        Its streaming statistics (§6.7), for numeric dense and ragged features.
    pending
        Batches not yet written to HDF5, in sample order.
    written
        Samples in the file.
    written_rows
        ragged and bytes: value rows in the file.
    """

    split: str
    name: str
    layout: Layout
    attrs: dict[str, Any]
    compression: str | None
    obj: h5py.Dataset | h5py.Group | None = None
    hasher: FeatureHasher | None = None
    stats: StreamingStats | None = None
    pending: list[Batch] = dataclasses.field(default_factory=list)
    written: int = 0
    written_rows: int = 0

    @property
    def hdf5_path(self) -> str:
        """``/split/name``."""
        return f"/{self.split}/{self.name}"

    @property
    def pending_n(self) -> int:
        """Samples buffered, not yet in the file."""
        return sum(p.n for p in self.pending)

    @classmethod
    def from_stored(cls, split: str, name: str, obj: Any, num_samples: int, path: str) -> FeatureSink:
        """Load a feature of an existing file so that samples can be appended to it (§6).

        Parameters
        ----------
        split, name
            Where the feature is.
        obj
            Its ``h5py.Dataset`` or ``h5py.Group``.
        num_samples
            The split's ``num_samples`` (§5.3), which the feature must have.
        path
            The file, for error messages.

        Returns
        -------
        FeatureSink
            A sink with the stored layout and ``written`` (and
            ``written_rows``) set; no hasher or statistics yet (see
            :meth:`rehash`).

        Raises
        ------
        WriterError
            If the encoding is unknown or missing, the object kind does not
            match it, its datasets are malformed, or its number of samples
            is not ``num_samples``.
        """
        hdf5_path = f"/{split}/{name}"
        where = f"{path}:{hdf5_path}"

        def fail(msg: str) -> WriterError:
            return WriterError(f"{where}: {msg}; cannot append to this file", path=path, hdf5_path=hdf5_path)

        encoding = read_attr(obj, "encoding", None)
        if encoding not in spec.ENCODINGS:
            raise fail(f"unknown or missing encoding {encoding!r}")
        if (spec.ENCODINGS[encoding] == "group") != isinstance(obj, h5py.Group):
            raise fail(f"a {encoding} feature must be a {spec.ENCODINGS[encoding]}")
        try:
            layout = stored_layout(encoding, obj)
        except (KeyError, EncodingError, TypeError, ValueError) as exc:
            raise fail(f"the {encoding} feature is malformed ({exc})") from None
        if encoding in ("ragged", "bytes"):
            offsets = obj["offsets"]
            count = offsets.shape[0] - 1
            rows = int(offsets[-1]) if count >= 0 else 0
        else:
            count, rows = main_dataset(layout, obj).shape[0], 0
        if count != num_samples:
            raise fail(f"it has {count} samples but /{split} has num_samples = {num_samples} (§5.3)")
        return cls(split, name, layout, {}, None, obj=obj, written=count, written_rows=rows)

    def reset_fingerprint_and_stats(self) -> None:
        """Give the feature a fresh fingerprint (§8.2) and, if numeric, statistics (§6.7)."""
        self.hasher = self.layout.new_hasher()
        self.stats = StreamingStats() if self.layout.has_stats else None

    def feed(self, batch: Batch) -> None:
        """Update the fingerprint (§8.2) and statistics (§6.7) with a batch, in sample order."""
        self.feed_fingerprint(batch)
        self.feed_stats(batch)

    def feed_stats(self, batch: Batch) -> None:
        """Update the statistics (§6.7), if the feature has them, with a batch."""
        if self.stats is not None:
            self.stats.update(batch.data)

    def feed_fingerprint(self, batch: Batch) -> None:
        """Update the fingerprint (§8.2) with a batch, in sample order."""
        hasher = self.hasher
        assert hasher is not None
        enc = self.layout.encoding
        if enc == "dense":
            hasher.update_dense(batch.data)
        elif enc == "string":
            hasher.update_strings(batch.data)
        elif enc == "categorical":
            hasher.update_codes(batch.data)
        else:
            assert batch.lengths is not None
            hasher.update_ragged(batch.lengths, batch.data, batch.shapes)

    def rehash(self) -> None:
        """Start a new fingerprint and statistics and feed them the samples already in the file."""
        layout, obj = self.layout, self.obj
        assert obj is not None
        self.reset_fingerprint_and_stats()
        hasher, stats = self.hasher, self.stats
        assert hasher is not None
        n = self.written
        main = main_dataset(layout, obj)
        row_bytes = max(1, main.dtype.itemsize * math.prod(main.shape[1:]))
        if layout.encoding in ("ragged", "bytes"):
            offsets = obj["offsets"]
            step = max(1, BLOCK_BYTES // max(1, self.written_rows * row_bytes // max(1, n)))
            for start in range(0, n, step):
                off = offsets[start : min(n, start + step) + 1].astype(np.int64)
                values = obj["values"][int(off[0]) : int(off[-1])]
                shapes = obj["shapes"][start : start + off.shape[0] - 1] if layout.shapes_ndim else None
                hasher.update_ragged(np.diff(off), values, shapes)
                if stats is not None:
                    stats.update(values)
            return
        step = STRING_BLOCK if layout.encoding == "string" else max(1, BLOCK_BYTES // row_bytes)
        for start in range(0, n, step):
            block = main[start : start + step]
            if layout.encoding == "dense":
                hasher.update_dense(block)
                if stats is not None:
                    stats.update(block)
            elif layout.encoding == "string":
                hasher.update_strings(block.tolist())
            else:
                hasher.update_codes(block)

    def growing_datasets(self) -> list[h5py.Dataset]:
        """The datasets that grow when samples are appended (they need an unlimited first axis)."""
        obj = self.obj
        assert obj is not None
        if isinstance(obj, h5py.Dataset):
            return [obj]
        return [obj[k] for k in ("codes", "values", "offsets", "shapes") if k in obj]

    def create(
        self, group: h5py.Group, *, final: bool, expected_samples: int | None, compression_opts: int | None
    ) -> None:
        """Create the feature's HDF5 objects in ``group`` and write its attributes (§6, §7).

        Parameters
        ----------
        group
            The split's group.
        final
            The file is being finished: chunk rows are sized to the samples
            (and value rows) buffered, which are all there will be.
        expected_samples
            Otherwise, the split's expected number of samples, if known.
        compression_opts
            The gzip level, when the feature is compressed (``None``: h5py's default).
        """
        layout, comp = self.layout, self.compression
        n_hint = self.pending_n if final else expected_samples
        rows_hint = sum(int(p.lengths.sum()) for p in self.pending if p.lengths is not None) if final else None
        enc = layout.encoding
        obj: h5py.Dataset | h5py.Group

        dataset = functools.partial(_new_dataset, compression_opts=compression_opts)
        if enc == "dense":
            assert layout.dtype is not None
            obj = dataset(group, self.name, layout.dtype, layout.sample_shape, layout.dtype.itemsize, n_hint, comp)
        elif enc == "string":
            obj = dataset(group, self.name, _STR_DTYPE, (), VLEN_ELEMENT_BYTES, n_hint, None)
        else:
            obj = group.create_group(self.name)
            assert layout.dtype is not None
            if enc == "categorical":
                assert layout.class_names is not None
                dataset(obj, "codes", layout.dtype, (), layout.dtype.itemsize, n_hint, comp)
                obj.create_dataset("class_names", data=np.array(layout.class_names, dtype=object), dtype=_STR_DTYPE)
            else:
                dataset(obj, "values", layout.dtype, layout.sample_shape, layout.dtype.itemsize, rows_hint, comp)
                offsets_hint = None if n_hint is None else n_hint + 1
                offsets = dataset(obj, "offsets", np.dtype("<i8"), (), 8, offsets_hint, comp)
                offsets.resize((1,))
                offsets[0] = 0
                if layout.shapes_ndim is not None:
                    d = layout.shapes_ndim
                    dataset(obj, "shapes", np.dtype("<i8"), (d,), 8, n_hint, comp)
        for key, value in self.attrs.items():
            write_attr(obj, key, value)
        self.obj = obj

    def write(self, batch: Batch, pool: ChunkPool | None = None) -> None:
        """Append a batch to the feature's HDF5 objects (which must exist), growing them (§6).

        Parameters
        ----------
        batch
            The next samples.
        pool
            Compresses the whole chunks of gzip datasets that the batch fills
            (see :class:`~h5ml.writer.compress.ChunkPool`); ``None``: HDF5 writes everything.
        """
        obj, enc = self.obj, self.layout.encoding
        assert obj is not None
        start, stop = self.written, self.written + batch.n
        if enc == "string":
            assert isinstance(obj, h5py.Dataset)
            obj.resize(stop, axis=0)
            if batch.n:
                obj[start:stop] = np.array(batch.data, dtype=object)
        elif enc in ("dense", "categorical"):
            ds = obj if enc == "dense" else obj["codes"]
            ds.resize(stop, axis=0)
            write_rows(ds, start, batch.data, pool)
        else:
            assert batch.lengths is not None
            rows = int(batch.data.shape[0])
            values = obj["values"]
            values.resize(self.written_rows + rows, axis=0)
            write_rows(values, self.written_rows, batch.data, pool)
            offsets = obj["offsets"]
            offsets.resize(stop + 1, axis=0)
            write_rows(offsets, start + 1, self.written_rows + np.cumsum(batch.lengths, dtype=np.int64), pool)
            if batch.shapes is not None:
                shapes = obj["shapes"]
                shapes.resize(stop, axis=0)
                write_rows(shapes, start, batch.shapes, pool)
            self.written_rows += rows
        self.written = stop

    def write_pending(self, pool: ChunkPool | None = None) -> None:
        """Write the buffered batches to the feature's HDF5 objects (which must exist) and forget them.

        Dense batches of at least one chunk of rows are written as they are,
        without a copy; the small ones between them are joined first
        (:func:`h5ml.writer.batches.runs`). Batches of other encodings are joined
        into one. ``pool`` is passed to :meth:`write`.
        """
        obj = self.obj
        min_n = int(obj.chunks[0]) if self.layout.encoding == "dense" and isinstance(obj, h5py.Dataset) else None
        for run in runs(self.pending, min_n):
            self.write(concat(self.layout, run), pool)
            del self.pending[: len(run)]


def _new_dataset(
    parent: h5py.Group,
    name: str,
    dtype: Any,
    sample_shape: tuple[int, ...],
    itemsize: int,
    hint: int | None,
    compression: str | None,
    compression_opts: int | None,
) -> h5py.Dataset:
    """A resizable dataset ``(0, *sample_shape)`` with §7 chunks, gzip or zstd with byte shuffle for multi-byte types.

    An axis of length 0 gets chunk length 1 (HDF5 chunk dimensions are
    positive) and is unlimited, since HDF5 refuses a chunk longer than a fixed
    maximum; the dataset still has length 0 there.
    """
    options = dataset_filters(compression, compression_opts, itemsize)
    return parent.create_dataset(
        name,
        shape=(0, *sample_shape),
        maxshape=(None, *(d if d else None for d in sample_shape)),
        dtype=dtype,
        chunks=chunk_shape(sample_shape, itemsize, hint),
        **options,
    )


@dataclass
class SplitSink:
    """One split of the file being written (§5.3).

    Attributes
    ----------
    name
        The split's name.
    group
        Its ``h5py.Group``.
    features
        Its feature sinks, by name.
    num_samples
        Samples written plus buffered.
    frozen
        The feature set is fixed (the split has samples, or is an existing one).
    expected_samples
        The number of samples the split will get, when the caller said so.
    pending_bytes
        Bytes its features have buffered.
    stored
        Append mode: the existing features not loaded yet, ``{name: h5py object}``
        (loaded when the split grows, see :meth:`load_stored`).
    from_file
        Append mode: the split was in the file before this writer opened it.
    """

    name: str
    group: h5py.Group
    features: dict[str, FeatureSink] = dataclasses.field(default_factory=dict)
    num_samples: int = 0
    frozen: bool = False
    expected_samples: int | None = None
    pending_bytes: int = 0
    stored: dict[str, Any] = dataclasses.field(default_factory=dict)
    from_file: bool = False

    @property
    def created(self) -> bool:
        """Every feature has its HDF5 objects (their chunk shapes are settled, §7.3)."""
        return bool(self.features) and all(f.obj is not None for f in self.features.values())

    @property
    def feature_names(self) -> list[str]:
        """The names of every feature of the split, loaded or still only stored, sorted."""
        return sorted(set(self.features) | set(self.stored))

    def drop_shuffle_seed(self) -> None:
        """Remove ``shuffle_seed`` from a split of the file that gets new samples: it no longer describes the order (§7.6)."""
        if self.from_file and "shuffle_seed" in self.group.attrs:
            del self.group.attrs["shuffle_seed"]

    def load_stored(self, path: str) -> None:
        """Load and re-read the features of an existing split before it grows (append mode).

        Nothing changes if loading fails. (The caller removes the split's
        ``shuffle_seed`` with :meth:`drop_shuffle_seed` once samples are
        added, §7.6.)

        Parameters
        ----------
        path
            The file, for error messages.

        Raises
        ------
        WriterError
            If a feature cannot be loaded (see :meth:`FeatureSink.from_stored`)
            or one of its datasets cannot grow (not chunked with an unlimited
            first axis).
        """
        loaded: dict[str, FeatureSink] = {}
        for name, obj in self.stored.items():
            feature = FeatureSink.from_stored(self.name, name, obj, self.num_samples, path)
            stuck = [d.name for d in feature.growing_datasets() if d.maxshape[0] is not None]
            if stuck:
                raise WriterError(
                    f"{path}: {stuck} cannot grow (not chunked with an unlimited first axis); rewrite the file "
                    "with the reference writer to extend it",
                    path=path,
                    hdf5_path=feature.hdf5_path,
                )
            feature.rehash()
            loaded[name] = feature
        self.features.update(loaded)
        self.stored = {}

    def flush(self, *, final: bool, compression_opts: int | None, pool: ChunkPool | None = None) -> None:
        """Write the buffered samples of every feature to HDF5, creating the features' objects first.

        Parameters
        ----------
        final
            The file is being finished (see :meth:`FeatureSink.create`).
        compression_opts
            The gzip level of compressed features.
        pool
            The threads that compress whole chunks of gzip datasets (§3.5),
            when the caller keeps one for all its flushes; ``None``: a
            :class:`~h5ml.writer.compress.ChunkPool` is started for this flush (only if a whole
            gzip chunk is written) and stopped before it returns.
        """
        with contextlib.ExitStack() as stack:
            if pool is None:
                pool = stack.enter_context(ChunkPool())
            for feature in self.features.values():
                if feature.obj is None:
                    feature.create(
                        self.group,
                        final=final,
                        expected_samples=self.expected_samples,
                        compression_opts=compression_opts,
                    )
                feature.write_pending(pool)
        self.pending_bytes = 0
