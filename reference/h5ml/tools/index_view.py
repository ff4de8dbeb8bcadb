"""``h5ml inspect INDEX``: a sharded dataset's splits, shards and features, from its index alone (SPEC §12.1).

The index says what every shard holds (§12.2), so this reads one small JSON
document and opens no shard: ``h5ml validate INDEX`` checks the shards
against it, ``h5ml inspect`` on one shard shows that shard's storage.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table
from rich.text import Text

from h5ml.model.shard_index import ShardIndex
from h5ml.tools.console import plural, safe_text, size_text, tuple_text

__all__ = ["index_json", "render_index"]


def index_json(index: ShardIndex, where: str) -> dict[str, Any]:
    """What ``inspect --format json`` prints for an index: the index document and where it is."""
    return {"h5ml": True, "kind": "index", "path": where, "index": index.to_json()}


def render_index(console: Console, index: ShardIndex, where: str) -> None:
    """Print a sharded dataset as its index describes it: each split's samples, shards and features.

    Every text of the index passes through :func:`~h5ml.tools.console.safe_text` (§10.2: content is data).
    """
    name = index.metadata.get("name", "?")
    console.print(
        Text(safe_text(f"{where}: sharded h5ml dataset {name!r} (format {index.format_version})"), style="bold"),
        soft_wrap=True,
    )
    console.print(Text(f"index fingerprint {index.fingerprint}"))
    for split_name in sorted(index.splits):
        split = index.splits[split_name]
        stored = sum(shard.size_bytes for shard in split.shards)
        console.print(
            Text(
                "\n"
                + safe_text(
                    f"{split_name}: {plural(split.num_samples, 'sample')} in {plural(len(split.shards), 'shard')}, "
                )
                + size_text(stored),
                style="bold",
            )
        )
        table = Table(show_edge=False, pad_edge=False)
        for column in ("feature", "encoding", "dtype", "sample shape", "classes"):
            table.add_column(column)
        for feature_name, feature in split.features.items():
            shape = tuple_text(["?" if d is None else d for d in feature.sample_shape])
            classes = "" if feature.class_names is None else str(len(feature.class_names))
            table.add_row(
                Text(safe_text(feature_name)), feature.encoding, Text(safe_text(_dtype_shown(feature))), shape, classes
            )
        console.print(table)
    from h5ml.tools.summary import CARD_FIELDS, card_text

    # The card in the order h5ml inspect FILE shows it (name in the title above), then the other members
    known = [k for k in CARD_FIELDS if k in index.metadata and k != "name"]
    for key in known + sorted(set(index.metadata) - set(CARD_FIELDS)):
        console.print(Text(safe_text(f"{key}: {card_text(index.metadata[key])}", lines=True)), soft_wrap=True)


def _dtype_shown(feature: Any) -> str:
    """The dtype as ``h5ml inspect FILE`` names it: ``uint8`` for the index's ``|u1``, ``str`` for a string."""
    if feature.encoding == "string":
        return "str"
    try:
        return str(np.dtype(feature.dtype).name)
    except TypeError:  # a dtype numpy does not know: shown as the index has it
        return str(feature.dtype)
