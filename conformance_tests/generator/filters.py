"""The filter pipelines of the recipes: names and ids, set on a dataset, and checked after writing (SPEC §3.5).

A recipe names a dataset's filters (``"shuffle"``, ``{"deflate": 4}``,
``"fletcher32"``, ``"lzf"``, ``{"scaleoffset": n}`` or ``{"filter": {"id",
"values"}}``); :func:`set_filters` puts them on a dataset creation property
list, and :func:`filter_mask_problems` tells whether HDF5 applied every one
of them to every chunk.
"""

from __future__ import annotations

from typing import Any

import h5py
from h5py import h5p, h5z

from conformance_tests.generator.errors import RecipeError
from conformance_tests.generator.plans import NodePlan

__all__ = ["FILTER_IDS", "filter_mask_problems", "filter_name", "set_filters"]

#: The HDF5 filter id of each filter a recipe may name (a ``{"filter": {"id"}}`` gives its own).
FILTER_IDS = {"shuffle": 2, "deflate": 1, "fletcher32": 3, "lzf": 32000, "scaleoffset": 6}


def filter_name(item: Any) -> str:
    """The name of one filter of a recipe's ``filters`` (a bare name, or the key of ``{name: argument}``)."""
    return item if isinstance(item, str) else next(iter(item))


def set_filters(dcpl: h5p.PropDCID, node: NodePlan) -> None:
    """Set the filters of a planned dataset's storage on its dataset creation property list, in order."""
    for item in node.storage.get("filters", []):
        name, arg = (item, None) if isinstance(item, str) else next(iter(item.items()))
        if name == "shuffle":
            dcpl.set_shuffle()
        elif name == "deflate":
            dcpl.set_deflate(int(arg if arg is not None else 4))
        elif name == "fletcher32":
            dcpl.set_fletcher32()
        elif name == "lzf":
            dcpl.set_filter(FILTER_IDS["lzf"], h5z.FLAG_OPTIONAL)
        elif name == "scaleoffset":
            dcpl.set_scaleoffset(h5z.SO_INT, int(arg or 0))
        elif name == "filter":
            options = dict(arg or {})
            dcpl.set_filter(int(options["id"]), h5z.FLAG_OPTIONAL, tuple(options.get("values", ())))
        else:
            raise RecipeError(f"{node.path}: unknown filter {name!r}")


def filter_mask_problems(f: h5py.File, node: NodePlan) -> list[str]:
    """Why a dataset whose storage says ``expect_filtered`` does not have every chunk filtered (empty: it does).

    HDF5 skips an optional filter (LZF and the other non-core filters are set
    with ``H5Z_FLAG_OPTIONAL``) for a chunk the filter does not shrink, stores
    that chunk as it is and records the skip in the chunk's filter mask (bit
    ``i``: filter ``i`` of the pipeline not applied). A reader then decodes the
    chunk without that filter, so a fixture meant to show that a filter is
    decoded must have every chunk stored with filter mask 0.
    """
    if node.storage.get("layout", "chunked") != "chunked" or not node.storage.get("filters"):
        return [f"{node.path}: 'expect_filtered' needs a chunked dataset with filters"]
    dset = f[node.path]
    plist = dset.id.get_create_plist()
    pipeline = [plist.get_filter(i) for i in range(plist.get_nfilters())]
    count = dset.id.get_num_chunks()
    if count == 0:
        return [f"{node.path}: no chunk is stored, so no filter was applied; 'expect_filtered' needs written data"]
    problems = []
    for i in range(count):
        info = dset.id.get_chunk_info(i)
        if info.filter_mask:
            skipped = [
                f"{fid} ({name.decode('ascii', 'replace') or '?'})"
                for bit, (fid, _flags, _values, name) in enumerate(pipeline)
                if info.filter_mask >> bit & 1
            ]
            problems.append(
                f"{node.path}: chunk {i} (at {tuple(info.chunk_offset)}) has filter mask {info.filter_mask:#x}: "
                f"filter {', '.join(skipped) or '?'} was skipped and the chunk is stored as it is, but the storage "
                "says 'expect_filtered'; give the dataset data that every filter shrinks (HDF5 skips an optional "
                'filter that does not), such as a repeating pattern ({"tile": [...], "shape": [...]})'
            )
    return problems
