"""The HDF5 filters a reader can decode: the file's declaration and each dataset's pipeline (§3.5).

- :func:`check_required_filters`: at open, a file whose root attribute
  ``required_filters`` lists a filter this HDF5 build cannot decode is refused,
  naming each such filter (SPEC §3.5-R3);
- :func:`check_filters`: before a dataset's first read, a dataset whose
  pipeline holds such a filter is refused, naming it (SPEC §3.5-R4).

The core filters (deflate, shuffle, fletcher32) are always decodable. A
filter HDF5 lacks (zstd, 32015, say) is looked for once more after importing
``hdf5plugin``, lazily, and only then (:func:`h5ml.model.filters.filter_available`):
so ``h5ml.open`` of a zstd file works wherever ``hdf5plugin`` is installed, and
the error names the package (``pip install "h5ml[zstd]"``) where it is not.
"""

from __future__ import annotations

from typing import Final

import h5py

from h5ml.errors import UnsupportedFilterError
from h5ml.model.filters import filter_available, install_hint
from h5ml.model.hdf5 import read_attribute

__all__ = ["check_filters", "check_required_filters"]

#: Names of registered HDF5 filters that are not core, by id, for messages about a filter this build lacks
#: (HDF5 knows the name of a filter only once its plugin is loaded).
_FILTER_NAMES: Final = {
    4: "szip",
    5: "nbit",
    6: "scaleoffset",
    307: "bzip2",
    32000: "lzf",
    32001: "blosc",
    32004: "lz4",
    32008: "bitshuffle",
    32015: "zstd",
}


def check_required_filters(f: h5py.File, filename: str) -> None:
    """Refuse a file that declares a filter this HDF5 build cannot decode, before any sample data is read.

    SPEC §3.5-R3: every filter id listed in the root attribute
    ``required_filters`` is checked when the file is opened, and the error
    names each one this build lacks (id, and name when known). Core filters
    (§3.5) are always decodable. Entries that are not integers are left to
    the validator (E107); a dataset's own filters are still checked on its
    first read (:func:`check_filters`).

    Parameters
    ----------
    f
        The open file.
    filename
        The file path, for messages.

    Raises
    ------
    UnsupportedFilterError
        If ``required_filters`` lists a filter this HDF5 build cannot decode.
    """
    listed = read_attribute(f, "required_filters", filename, "/")
    if not isinstance(listed, list):
        return
    missing = [
        int(fid)
        for fid in listed
        if isinstance(fid, int) and not isinstance(fid, bool) and 0 <= fid < 1 << 16 and not filter_available(int(fid))
    ]
    if missing:
        named = ", ".join(f"{fid} ({_FILTER_NAMES[fid]!r})" if fid in _FILTER_NAMES else str(fid) for fid in missing)
        hints = list(dict.fromkeys(install_hint(fid) for fid in missing))
        raise UnsupportedFilterError(
            f"{filename}: the root attribute 'required_filters' declares HDF5 filter(s) {named}, which this HDF5 "
            f"build cannot decode (§3.5), so the file is refused before any data is read; {'; '.join(hints)}",
            path=filename,
            hdf5_path="/",
        )


def check_filters(dset: h5py.Dataset, filename: str) -> None:
    """Refuse a dataset whose non-core filter this HDF5 build cannot decode, even with hdf5plugin (SPEC §3.5-R4)."""
    if dset.chunks is None:
        return
    dcpl = dset.id.get_create_plist()
    for i in range(dcpl.get_nfilters()):
        filter_id, _flags, _values, raw_name = dcpl.get_filter(i)
        if filter_available(filter_id):
            continue
        label = raw_name.decode("utf-8", "replace") if isinstance(raw_name, bytes) else str(raw_name)
        named = f" ({label!r})" if label else ""
        raise UnsupportedFilterError(
            f"{filename}: dataset {dset.name} uses HDF5 filter {filter_id}{named}, which this HDF5 build cannot "
            f"decode (§3.5); {install_hint(filter_id)}",
            path=filename,
            hdf5_path=dset.name,
        )
