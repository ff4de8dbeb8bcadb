"""Sharded datasets written in parallel on Dask (``dask.distributed``): one shard per partition, the index last (§12.4).

Needs the ``dask`` extra (``pip install "h5ml[dask]"``); :mod:`h5ml.dask` is
the public face. The modules, one responsibility each:

=================  ===========================================================
module             holds
=================  ===========================================================
``writing``        :func:`to_h5ml`: a bag, dataframe or dict of arrays to shards
``convert``        :func:`convert_on_dask`: ``h5ml convert ... --dask``
``tables``         a table on Dask: decided whole in the driver, a task a shard
``hdf5``           HDF5 files on Dask: the plan in the driver, sources checked
``partitions``     a collection's partitions as shard-writing tasks
``tasks``          what one task does on a worker: write one shard, describe it
``run``            the driver: run the tasks, check the shards agree, the index
``outdir``         the output folder: its checks, where a task writes its shard
``clusters``       the client: current, ``tcp://...`` or ``local:N``
=================  ===========================================================

Shard order is partition order, so the dataset, its shard fingerprints and its
index fingerprint are the same whatever the number of workers.
"""

from __future__ import annotations

from h5ml.ingest.dask.clusters import dask_client, parse_address
from h5ml.ingest.dask.convert import DASK_KINDS, SAMPLES_PER_SHARD, convert_on_dask
from h5ml.ingest.dask.writing import to_h5ml

__all__ = ["DASK_KINDS", "SAMPLES_PER_SHARD", "convert_on_dask", "dask_client", "parse_address", "to_h5ml"]
