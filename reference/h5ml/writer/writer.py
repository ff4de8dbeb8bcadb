"""The reference writer: in-memory :func:`write` and streaming :class:`Writer` (§4, §5, §6, §7, §8).

This module is the writer's public API (``h5ml.writer`` re-exports it):
:func:`write`, :class:`Writer`, :class:`ShardedWriter` (what ``Writer(OUTDIR,
..., shard_size=...)`` returns, SPEC §12.4), :data:`WRITE_BUFFER_BYTES`, and
the value types :class:`Categorical` and :class:`FeatureSpec`.

Files are built in a temporary file beside the target and moved over it with
``os.replace`` only once they are complete (§4.4), so the target path always
holds either nothing, the previous complete file, or the new complete file:

1. the temporary file ``.<name>.h5ml-tmp-<pid>-<machine>-<random>`` is created in the target's
   directory with libver bounds ``spec.LIBVER_BOUNDS`` (§3.1);
2. samples are appended batch by batch; fingerprints (§8) and statistics
   (§6.7) are computed from each batch as it arrives;
3. on close: ``num_samples`` (§5.3), feature fingerprints and statistics, the
   file fingerprint (§8.3), then ``complete = 1`` last (§4.4); flush, fsync,
   close, ``os.replace(temp, target)`` and fsync of the directory.

If anything fails (or the ``with`` block raises, or :meth:`Writer.close` is
called with ``abort=True``), the temporary file is deleted and the target is
untouched. The target must be a regular file or not exist; a symbolic link to
a regular file is written through (the file it resolves to is replaced, the
link is kept); anything else (a FIFO, a device, a directory, a dangling link)
is refused, when the writer starts and again just before ``os.replace``. The
writer never opens the target for writing, so readers that have it open never
meet a lock (they keep reading the file they opened).

Encodings (§6) are inferred from the Python values unless given:

================================================  ===========================
value                                             encoding
================================================  ===========================
numeric numpy array ``(N, ...)``                  dense (bool: uint8 + ``logical_dtype="bool"``)
numpy str array, list of ``str``                  string
:class:`Categorical`, pandas-like categorical     categorical
list of arrays differing in their first axis      ragged (``values`` + ``offsets``)
list of arrays differing in more than one axis    ragged with ``shapes``
list of ``bytes``                                 bytes
================================================  ===========================

The parts of the writer each have their own module:

- :mod:`h5ml.writer.inmemory`: :func:`write`, whole in-memory columns
  checked and written through a :class:`Writer`;
- :mod:`h5ml.writer.streaming`: the :class:`Writer` class, the public face
  of the parts below;
- :mod:`h5ml.writer.atomic`: the target, the temporary file's life cycle
  (created, discarded on failure, fsynced and moved over the target, §4.4);
- :mod:`h5ml.writer.arguments`: checks of names (§5.1.1), descriptions,
  seeds, sizes and compression given to the writer;
- :mod:`h5ml.writer.root`: the root attributes (§4.2);
- :mod:`h5ml.writer.existing`: append mode, the splits and features of the
  file being extended and the options they pass on;
- :mod:`h5ml.writer.registry`: the splits and features, declared or
  inferred, and every batch checked against them (§5, §6);
- :mod:`h5ml.writer.feeder`: batches fed to fingerprints (§8.2) and
  statistics (§6.7), buffered and flushed to HDF5;
- :mod:`h5ml.writer.finish`: ``num_samples``, fingerprints, statistics, the
  file fingerprint (§8.3) and ``complete`` (§4.4);
- :mod:`h5ml.writer.sinks`: per feature and per split, the HDF5 objects, buffers,
  fingerprint and statistics while the file is written;
- :mod:`h5ml.writer.compress`: whole gzip chunks compressed in threads and
  stored with ``H5Dwrite_chunk`` (§3.5, §7);
- :mod:`h5ml.writer.batches`: a batch of values checked and cast to its stored form;
- :mod:`h5ml.writer.sharded`: :class:`ShardedWriter`, a sharded dataset (SPEC §12.4)
  written as shards that roll over, with :mod:`h5ml.writer.shard_split` (one
  split's shards), :mod:`h5ml.writer.shard_opening` (each shard's writer),
  :mod:`h5ml.writer.shard_sizes` (the bytes counted),
  :mod:`h5ml.writer.shard_folder` (staging, moves, the index last) and
  :mod:`h5ml.writer.shard_naming` (shard names and the shard-size parser);
- :mod:`h5ml.model.values`: the value types :class:`Categorical` and
  :class:`FeatureSpec` (re-exported here) and the ``features=`` table;
- :mod:`h5ml.model.layout`: a feature's stored form, declared, inferred from values
  (the table above) or read from a file, and its §6.1 attributes;
- :mod:`h5ml.model.stats`: the streaming statistics (§6.7).
"""

from __future__ import annotations

from h5ml.model.values import Categorical, FeatureSpec
from h5ml.writer.feeder import WRITE_BUFFER_BYTES
from h5ml.writer.inmemory import write
from h5ml.writer.sharded import ShardedWriter
from h5ml.writer.streaming import Writer

__all__ = ["WRITE_BUFFER_BYTES", "Categorical", "FeatureSpec", "ShardedWriter", "Writer", "write"]
