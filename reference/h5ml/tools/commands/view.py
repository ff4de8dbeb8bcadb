"""``h5ml view INDEX OUT.h5 [--overwrite]``: one HDF5 file of virtual datasets over a sharded dataset (SPEC §12.6).

The command line of :func:`h5ml.ingest.view.write_view`: OUT.h5 must lie in
the folder of INDEX (its virtual datasets name the shards by relative paths),
and is written atomically. Errors end as one line (:mod:`h5ml.tools.cli`).
"""

from __future__ import annotations

import click
from rich.text import Text

from h5ml.ingest.view import write_view
from h5ml.tools.console import EXIT_OK, Streams
from h5ml.tools.input_paths import INPUT_PATH

__all__ = ["view_command"]


@click.command("view")
@click.argument("index", type=INPUT_PATH)
@click.argument("out", type=click.Path())
@click.option("--overwrite", is_flag=True, help="Replace OUT if it exists.")
@click.pass_obj
def view_command(streams: Streams, index: str, out: str, overwrite: bool) -> int:
    """Write OUT, a view file that presents the shards of INDEX as one HDF5 file (h5dump, HDFView).

    INDEX is the index.json of a sharded dataset, or its folder. OUT must be
    in the same folder: its virtual datasets name the shards by paths
    relative to it. Sample data stays in the shards; ragged and bytes
    offsets and class names are copied.
    """
    written = write_view(index, out, overwrite=overwrite)
    streams.console().print(Text(f"wrote the view {written} of {index}"), soft_wrap=True)
    return EXIT_OK
