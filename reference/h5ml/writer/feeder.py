"""From checked batches to the file: :class:`Feeder` (fingerprints §8.2, statistics §6.7, buffers and chunks §7).

A batch the writer has checked (:meth:`~h5ml.writer.registry.SplitRegistry.admit`)
is fed to its features' streaming fingerprints and statistics, in two
threads when it is large (hashlib and numpy release the GIL), and buffered;
a split whose buffers are full is flushed to HDF5, whole gzip chunks
compressed in the background by the feeder's
:class:`~h5ml.writer.compress.ChunkPool` (§3.5).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor, wait
from typing import Final

import numpy as np

from h5ml.writer.batches import Batch
from h5ml.writer.compress import ChunkPool
from h5ml.writer.sinks import SplitSink

__all__ = ["STREAM_BUFFER_BYTES", "WRITE_BUFFER_BYTES", "Feeder"]

#: Bytes of samples a split buffers in memory before they are written to HDF5.
#: Buffering makes ``append_sample`` cheap and lets small splits get chunks sized
#: to their final length (§7.3).
WRITE_BUFFER_BYTES: Final = 32 << 20
#: Bytes a split buffers once its chunk shapes are settled (its datasets exist,
#: or ``expected_samples`` was given): smaller writes keep the compression
#: threads busy while the caller prepares the next samples.
STREAM_BUFFER_BYTES: Final = 4 << 20
#: A batch of a feature at least this large has its fingerprint and statistics
#: computed in two threads while the writer stores samples (hashlib and numpy
#: release the GIL); smaller ones are computed in the caller's thread.
_FEED_THREAD_BYTES: Final = 1 << 20


class Feeder:
    """Feeds checked batches to their features and stores them, buffered, in the file (§6.7, §7, §8.2).

    The feeder owns the writer's threads: two that compute the fingerprints
    and statistics of large batches, and the :class:`~h5ml.writer.compress.ChunkPool`
    that compresses whole gzip chunks. :meth:`close` (the file is finished)
    or :meth:`abort` (it is discarded) stops them.

    Parameters
    ----------
    compression_opts
        The gzip level of compressed features (``None``: h5py's default).

    Attributes
    ----------
    pool
        The threads that compress whole chunks of gzip datasets.
    """

    def __init__(self, compression_opts: int | None) -> None:
        self._compression_opts = compression_opts
        self.pool = ChunkPool()
        self._threads = ThreadPoolExecutor(2, thread_name_prefix="h5ml-feed")

    def add(self, state: SplitSink, parts: Mapping[str, Batch], n: int) -> None:
        """Feed ``n`` samples of a split to its features' fingerprints and statistics, and buffer or store them.

        Parameters
        ----------
        state
            The split, its features registered.
        parts
            Every feature's values in stored form, by name.
        n
            The number of samples of the batch.

        Notes
        -----
        When the split's buffers reach :data:`WRITE_BUFFER_BYTES`
        (:data:`STREAM_BUFFER_BYTES` once its chunk shapes are settled), or
        once they are settled and a feature's values of at least 1 MiB are
        the caller's own array (so that buffering them would copy them), they
        are written to HDF5; otherwise the last buffered batch of each feature
        is copied, so the caller may change its arrays once this returns. An
        error leaves the samples half stored: the caller must discard the file.
        """
        feeds: list[Future[None]] = []
        try:
            for name, part in parts.items():
                feature = state.features[name]
                if isinstance(part.data, np.ndarray) and part.data.nbytes >= _FEED_THREAD_BYTES:
                    feeds.append(self._threads.submit(feature.feed_fingerprint, part))
                    feeds.append(self._threads.submit(feature.feed_stats, part))
                else:
                    feature.feed(part)
                feature.pending.append(part)
                state.pending_bytes += part.nbytes
            state.num_samples += n
            settled = state.expected_samples is not None or state.created
            # A large batch that is the caller's own memory is stored at once once the chunks are settled:
            # buffering it would copy it first (issue 15: the streaming writer copied half of its samples).
            direct = settled and any(p.borrowed and p.nbytes >= _FEED_THREAD_BYTES for p in parts.values())
            if direct or state.pending_bytes >= (STREAM_BUFFER_BYTES if settled else WRITE_BUFFER_BYTES):
                state.flush(final=False, compression_opts=self._compression_opts, pool=self.pool)
            else:
                for feature in state.features.values():
                    if feature.pending:
                        feature.pending[-1] = feature.pending[-1].owned()
            wait(feeds)  # the caller may change its arrays once append returns
            for feed in feeds:
                feed.result()
        except BaseException:
            wait(feeds)
            raise

    def flush(self, splits: Iterable[SplitSink]) -> None:
        """Write every buffered sample of ``splits`` to HDF5 and store every chunk the pool holds."""
        for split in splits:
            if any(f.pending for f in split.features.values()):
                split.flush(final=False, compression_opts=self._compression_opts, pool=self.pool)
        self.pool.finish()

    def flush_final(self, split: SplitSink) -> None:
        """Write a split's last buffered samples; features still without objects get their final chunks (§7.3)."""
        split.flush(final=True, compression_opts=self._compression_opts, pool=self.pool)

    def close(self) -> None:
        """Store every chunk the pool holds, then stop the threads (the file is being finished)."""
        self.pool.close()
        self._threads.shutdown()

    def abort(self) -> None:
        """Stop the threads, dropping the chunks not stored and the feeds not run (the file is discarded)."""
        try:
            self.pool.close(abort=True)
        finally:
            self._threads.shutdown(wait=True, cancel_futures=True)
