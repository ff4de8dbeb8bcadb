"""``h5ml croissant FILE [-o metadata.json]``: the MLCommons Croissant 1.1 JSON-LD of an h5ml file or sharded index.

The document is :func:`h5ml.ingest.export.croissant_metadata`'s (its module
docstring has the mapping); this module holds the command's options. Without
``-o`` (or with ``-o -``) the JSON goes to standard output, its ``contentUrl`` values relative
to the current directory; with ``-o`` they are relative to the output's
folder, and the file is written atomically (``--overwrite`` to replace it).
"""

from __future__ import annotations

import click
from rich.text import Text

from h5ml.tools.console import EXIT_OK, Streams
from h5ml.tools.input_paths import INPUT_PATH

__all__ = ["croissant_command"]


@click.command("croissant")
@click.argument("source", type=INPUT_PATH)
@click.option(
    "-o", "--output", default=None, help="The JSON-LD file to write (metadata.json); default, or '-': standard output."
)
@click.option(
    "--creator-type",
    type=click.Choice(["Person", "Organization"]),
    default=None,
    help="Whether the file's creator is a person or an organisation (needed when the file has a creator).",
)
@click.option("--date-published", default=None, help="datePublished, an ISO 8601 date such as 2026-01-31.")
@click.option("--overwrite", is_flag=True, help="Replace OUTPUT if it exists.")
@click.pass_obj
def croissant_command(
    streams: Streams,
    /,
    source: str,
    output: str | None,
    creator_type: str | None,
    date_published: str | None,
    overwrite: bool,
) -> int:
    """Write the Croissant 1.1 JSON-LD of the h5ml file (or sharded index) SOURCE: card, file with sha256, splits."""
    from h5ml.ingest import export
    from h5ml.tools.output_file import check_output_file

    if output is None or output == "-":  # "-": standard output, as with h5ml validate -o -
        document = export.croissant_metadata(
            source,
            creator_type=creator_type,  # type: ignore[arg-type]
            date_published=date_published,
        )
        streams.stdout.write(export.croissant_text(document))
        return EXIT_OK
    check_output_file(
        output, overwrite, [source], inputs_are="the source itself (SOURCE)", document="Croissant document"
    )
    written = export.export_croissant(
        source,
        output,
        overwrite=overwrite,
        creator_type=creator_type,  # type: ignore[arg-type]
        date_published=date_published,
    )
    streams.console().print(Text(f"wrote {written}"))
    return EXIT_OK
