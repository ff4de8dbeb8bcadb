"""h5ml on Dask: write a Dask collection as a sharded h5ml dataset in parallel (SPEC §12.4).

::

    import dask.bag as db
    import h5ml.dask
    from distributed import Client

    client = Client("tcp://scheduler:8786")
    samples = db.from_sequence(paths, npartitions=64).map(load)  # {feature: value} dicts
    index = h5ml.dask.to_h5ml(samples, "ds/", split="train", compression="gzip")
    print(index.fingerprint)

Each partition becomes one shard ``ds/<split>/<split>-NNNNN.h5`` written by
one task with h5ml's writer, and ``ds/index.json`` is written last, once
every shard is complete (:func:`to_h5ml`). Audio and image folders, tables
and HDF5 files convert the same way with ``h5ml convert SOURCE... OUTDIR
--dask tcp://scheduler:8786`` (or ``--dask local:4``; :func:`convert_on_dask`
in Python); the workers read HDF5 files at the paths the client sees.

This module is a thin facade over :mod:`h5ml.ingest.dask`; it needs the
``dask`` extra (``pip install "h5ml[dask]"``: ``dask[dataframe]`` and
``distributed``).
"""

from __future__ import annotations

try:
    import dask as _dask  # noqa: F401
    import distributed as _distributed  # noqa: F401
except ModuleNotFoundError as exc:  # pragma: no cover - the extra is installed wherever the tests run
    raise ModuleNotFoundError(
        f"h5ml.dask needs the package {exc.name!r}, which is not installed: pip install 'h5ml[dask]'",
        name=exc.name,
    ) from exc

from h5ml.ingest.dask import SAMPLES_PER_SHARD, convert_on_dask, to_h5ml

__all__ = ["SAMPLES_PER_SHARD", "convert_on_dask", "to_h5ml"]
