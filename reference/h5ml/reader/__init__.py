"""The reader: :func:`open`, :class:`Dataset`, :class:`Split` and the per-encoding features (§1, §3-§7, §10).

Reading never imports the writer or the validator. The modules of this package:

- :mod:`~h5ml.reader.opening`: :func:`open` (and :func:`open_file`, one file only); :mod:`~h5ml.reader.dataset`: :class:`Dataset` (the file
  handle of :mod:`~h5ml.reader.handle`, its life cycle across fork and
  pickle, the chunk caches of :mod:`~h5ml.reader.chunk_cache`, the memory
  map); the storage walk at open, :mod:`h5ml.model.storage` (§3.6, §10.1, shared with the writer's append mode);
- :mod:`~h5ml.reader.split`: :class:`Split` (§5);
- :mod:`~h5ml.reader.sharded`: :class:`ShardedDataset`, a sharded dataset by its
  index, its shards opened lazily and checked (§12.5), with
  :mod:`~h5ml.reader.sharded_split` (:class:`ShardedSplit`, global indices over the
  shards), :mod:`~h5ml.reader.sharded_feature` (:class:`ShardedFeature`) and
  :mod:`~h5ml.reader.sharded_cache` (the shards open in a process, LRU);
- :mod:`~h5ml.reader.structure`: which encoding class a split member gets
  (:data:`FEATURE_CLASSES`), after checking its ranks, datatypes and sample
  count (§6);
- :mod:`~h5ml.reader.feature`: the :class:`Feature` base class; one module per
  encoding: :mod:`~h5ml.reader.dense`, :mod:`~h5ml.reader.strings`,
  :mod:`~h5ml.reader.categorical`, :mod:`~h5ml.reader.ragged` and
  :mod:`~h5ml.reader.bytes` (the last two on :mod:`~h5ml.reader.offsets`);
- :mod:`~h5ml.reader.column`: reads of one HDF5 dataset (filters, the §10.4
  size check), by the read plans of :mod:`~h5ml.reader.plan` or out of the
  file's memory map (:mod:`~h5ml.reader.direct`), each counted in
  :class:`ReadStats` (:mod:`~h5ml.reader.read_stats`); its refusals of data
  declared but not stored (§3.5.1, §10.4-R1) are :mod:`~h5ml.reader.unwritten`;
  its numeric types are :mod:`~h5ml.reader.numeric_types`, the §10.4 stored
  size check :mod:`~h5ml.reader.stored_size`;
- :mod:`~h5ml.reader.compressed`: compressed rows decoded by h5ml out of the
  memory map (§3.5, §7.3), each chunk once, in the threads of
  :mod:`~h5ml.reader.decode_pool`, kept in the byte-budgeted cache of
  :mod:`~h5ml.reader.decoded_cache`; one stored chunk is decoded by
  :mod:`~h5ml.reader.codecs` (zstd frames by :mod:`~h5ml.reader.zstd_codec`);
- :mod:`~h5ml.reader.verification`: :func:`verify`, every fingerprint recomputed
  (§8) from the rows of :mod:`~h5ml.reader.chunk_stream`, reported as a
  :class:`VerifyReport` (:mod:`~h5ml.reader.verify_report`);
- :mod:`~h5ml.reader.source`, :mod:`~h5ml.reader.prefetch`,
  :mod:`~h5ml.reader.readahead` (batches read ahead in threads, in order),
  :mod:`~h5ml.reader.shared_batches` (batches from worker processes in shared
  memory), :mod:`~h5ml.reader.imagecodec`: what the framework adapters build on.
"""

from h5ml.reader.bytes import BytesFeature
from h5ml.reader.categorical import CategoricalFeature
from h5ml.reader.chunk_cache import DEFAULT_CACHE_BYTES
from h5ml.reader.dataset import Dataset
from h5ml.reader.dense import DenseFeature
from h5ml.reader.feature import Feature
from h5ml.reader.opening import open, open_file
from h5ml.reader.ragged import RaggedFeature
from h5ml.reader.read_stats import ReadEvent, ReadStats
from h5ml.reader.sharded import ShardedDataset
from h5ml.reader.sharded_feature import ShardedFeature
from h5ml.reader.sharded_split import ShardedSplit
from h5ml.reader.split import Split
from h5ml.reader.strings import StringFeature
from h5ml.reader.structure import FEATURE_CLASSES
from h5ml.reader.verification import verify
from h5ml.reader.verify_report import FeatureCheck, VerifyReport

__all__ = [
    "DEFAULT_CACHE_BYTES",
    "FEATURE_CLASSES",
    "BytesFeature",
    "CategoricalFeature",
    "Dataset",
    "DenseFeature",
    "Feature",
    "FeatureCheck",
    "RaggedFeature",
    "ReadEvent",
    "ReadStats",
    "ShardedDataset",
    "ShardedFeature",
    "ShardedSplit",
    "Split",
    "StringFeature",
    "VerifyReport",
    "open",
    "open_file",
    "verify",
]
