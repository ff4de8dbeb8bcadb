"""HDF5 filters beyond the core ones: which a dataset uses, and whether this process can decode them (§3.5).

- :data:`ZSTD_FILTER`: the registered id of the HDF5 zstd filter, the one
  non-core filter the reference writer stores (opt-in, ``compression="zstd"``);
- :func:`load_hdf5plugin`: imports the ``hdf5plugin`` package once, when a
  file first needs a filter HDF5 does not have built in; importing it
  registers its filters (zstd, Blosc, Blosc2, LZ4, bitshuffle, bzip2, ...)
  with the HDF5 library that h5py uses;
- :func:`filter_available`: whether a filter id decodes here, after loading
  ``hdf5plugin`` if that is what it takes for a filter h5ml writes
  (:data:`PLUGIN_FILTERS`; SPEC §3.5-R3, §3.5-R4);
- :func:`install_hint`: what a message tells the user to install for a filter;
- :func:`pipeline` and :func:`stored_compression`: a dataset's filter ids, and
  the compression the writer would give it again (``"gzip"``, ``"zstd"``).

``hdf5plugin`` is imported only here and only on demand: ``import h5ml`` and
files with core filters alone never pay for it (about 0.1 s).
"""

from __future__ import annotations

import functools
from typing import Final

import h5py

from h5ml import spec

__all__ = [
    "PLUGIN_FILTERS",
    "ZSTD_FILTER",
    "ZSTD_INSTALL",
    "filter_available",
    "install_hint",
    "load_hdf5plugin",
    "pipeline",
    "stored_compression",
]

#: The registered HDF5 filter id of zstd (a plain zstd frame per chunk; its one parameter is the level).
ZSTD_FILTER: Final = 32015
#: What to install so that h5ml writes and reads zstd: the extra that brings ``hdf5plugin`` and ``zstandard``.
ZSTD_INSTALL: Final = 'pip install "h5ml[zstd]"'
#: The filters for which h5ml imports ``hdf5plugin`` when HDF5 lacks them: those the writer stores. Importing
#: it registers a dozen more (Blosc, LZ4, ...) for the whole process, so it is not done for any other filter:
#: whether those decode stays what HDF5 and the user's own imports make it.
PLUGIN_FILTERS: Final = frozenset({ZSTD_FILTER})


@functools.cache
def load_hdf5plugin() -> bool:
    """Import ``hdf5plugin`` once, registering its filters with HDF5; return whether it is installed.

    Returns
    -------
    bool
        False when the package cannot be imported (not installed, or hidden
        with ``sys.modules["hdf5plugin"] = None``); the result is cached for
        the process.
    """
    try:
        import hdf5plugin  # noqa: F401  (importing it registers its filters with HDF5)
    except ImportError:
        return False
    return True


def filter_available(filter_id: int) -> bool:
    """Whether HDF5 filter ``filter_id`` decodes in this process (SPEC §3.5-R3, §3.5-R4).

    A core filter always does; another one does when HDF5 has it (built in,
    or loaded from ``HDF5_PLUGIN_PATH``), or, for a filter of
    :data:`PLUGIN_FILTERS` that HDF5 lacks, once ``hdf5plugin`` is imported
    (:func:`load_hdf5plugin`).

    Parameters
    ----------
    filter_id
        An HDF5 filter id in [0, 65535].
    """
    if filter_id in spec.CORE_FILTERS or h5py.h5z.filter_avail(filter_id):
        return True
    return filter_id in PLUGIN_FILTERS and load_hdf5plugin() and bool(h5py.h5z.filter_avail(filter_id))


def install_hint(filter_id: int) -> str:
    """The end of a message about a filter this process cannot decode: what to install or set."""
    if filter_id == ZSTD_FILTER:
        return (
            f"install h5ml's zstd support ({ZSTD_INSTALL}, which brings the hdf5plugin package) or point "
            "HDF5_PLUGIN_PATH at an HDF5 zstd plugin"
        )
    return "install the plugin that provides it (for example the hdf5plugin package) or point HDF5_PLUGIN_PATH at it"


def pipeline(dset: h5py.Dataset) -> list[int]:
    """The filter ids of ``dset``'s pipeline, in the order they are applied on write (empty when not chunked)."""
    if dset.chunks is None:
        return []
    dcpl = dset.id.get_create_plist()
    return [int(dcpl.get_filter(i)[0]) for i in range(dcpl.get_nfilters())]


def stored_compression(dset: h5py.Dataset) -> str | None:
    """``"gzip"`` or ``"zstd"`` when ``dset`` is compressed so, else None (a feature's compression, §3.5)."""
    ids = pipeline(dset)
    if ZSTD_FILTER in ids:
        return "zstd"
    return "gzip" if 1 in ids else None
