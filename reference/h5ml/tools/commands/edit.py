"""``h5ml export`` (to .npz or Parquet), ``h5ml subset`` and ``h5ml merge``: h5ml files out and recombined.

The work is :mod:`h5ml.ingest.export` and :mod:`h5ml.ingest.edit`'s; their
refusals of bad input are h5ml errors, which the command line reports as one
line (:mod:`h5ml.tools.cli`).
"""

from __future__ import annotations

from typing import Any

import click
from rich.text import Text

from h5ml.tools.console import EXIT_OK, Streams
from h5ml.tools.input_paths import INPUT_PATH

__all__ = ["export_command", "merge_command", "subset_command"]


@click.command("export")
@click.argument("source", type=INPUT_PATH)
@click.argument("output")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["npz", "parquet"]),
    default=None,
    help="Default: npz for OUTPUT ending in .npz, else parquet (a .parquet file with one --split, else a folder).",
)
@click.option("--split", "splits", multiple=True, help="A split to export (repeatable; parquet files: one).")
@click.option("--feature", "features", multiple=True, help="A feature to export (repeatable; default all).")
@click.option("--compress", is_flag=True, help="npz: deflate the members.")
@click.option("--parquet-compression", default="snappy", show_default=True, help="parquet: codec, or none.")
@click.option("--overwrite", is_flag=True, help="Replace OUTPUT if it exists.")
@click.pass_obj
def export_command(
    streams: Streams,
    /,
    source: str,
    output: str,
    fmt: str | None,
    splits: tuple[str, ...],
    features: tuple[str, ...],
    compress: bool,
    parquet_compression: str,
    overwrite: bool,
) -> int:
    """Export the h5ml file SOURCE to .npz (small data) or Parquet (one row per sample)."""
    from h5ml.ingest import export

    chosen = fmt or ("npz" if output.lower().endswith(".npz") else "parquet")
    if chosen == "npz":
        written = [
            export.export_npz(
                source,
                output,
                splits=list(splits) or None,
                features=list(features) or None,
                compress=compress,
                overwrite=overwrite,
            )
        ]
    else:
        if len(splits) > 1:
            raise click.UsageError(
                "parquet export takes at most one --split (a file); without it, every split to a folder"
            )
        paths = export.export_parquet(
            source,
            output,
            split=splits[0] if splits else None,
            features=list(features) or None,
            compression=None if parquet_compression == "none" else parquet_compression,
            overwrite=overwrite,
        )
        written = list(paths.values())
    for path in written:
        streams.console().print(Text(f"wrote {path}"))
    return EXIT_OK


def _sample_selection(values: tuple[str, ...]) -> Any:
    """``--samples 0:100`` (every split) or ``--samples train=0:100`` (one split) as subset() takes them."""
    if not values:
        return None
    per_split = {v.partition("=")[0]: v.partition("=")[2] for v in values if "=" in v}
    plain = [v for v in values if "=" not in v]
    if plain and (per_split or len(plain) > 1):
        raise click.UsageError("--samples takes START:STOP for every split, or SPLIT=START:STOP per split, not both")
    return plain[0] if plain else per_split


@click.command("subset")
@click.argument("source", type=INPUT_PATH)
@click.argument("output")
@click.option("--split", "splits", multiple=True, help="A split to keep (repeatable; default all).")
@click.option("--feature", "features", multiple=True, help="A feature to keep (repeatable; default all).")
@click.option("--samples", multiple=True, help="START:STOP[:STEP] for every split, or SPLIT=START:STOP (repeatable).")
@click.option("--compression", type=click.Choice(["keep", "gzip", "none"]), default="keep", show_default=True)
@click.option("--progress/--no-progress", default=None, help="Progress bar (default: when stderr is a terminal).")
@click.option("--overwrite", is_flag=True, help="Replace OUTPUT if it exists.")
@click.pass_obj
def subset_command(
    streams: Streams,
    /,
    source: str,
    output: str,
    splits: tuple[str, ...],
    features: tuple[str, ...],
    samples: tuple[str, ...],
    compression: str,
    progress: bool | None,
    overwrite: bool,
) -> int:
    """Write the chosen splits, features and samples of SOURCE to the h5ml file OUTPUT."""
    from h5ml.ingest import edit

    report = edit.subset(
        source,
        output,
        splits=list(splits) or None,
        features=list(features) or None,
        samples=_sample_selection(samples),
        compression=None if compression == "none" else compression,  # type: ignore[arg-type]
        progress=progress,
        overwrite=overwrite,
    )
    streams.console().print(Text(report.summary()), soft_wrap=True)
    return EXIT_OK


@click.command("merge")
@click.argument("sources", nargs=-1, required=True, type=INPUT_PATH)
@click.option("-o", "--output", required=True, help="The h5ml file to write (never one of SOURCES).")
@click.option("--compression", type=click.Choice(["keep", "gzip", "none"]), default="keep", show_default=True)
@click.option("--progress/--no-progress", default=None, help="Progress bar (default: when stderr is a terminal).")
@click.option("--overwrite", is_flag=True, help="Replace OUTPUT if it exists.")
@click.option(
    "--id-feature",
    default="id",
    show_default=True,
    help="The feature holding each sample's id, checked for ids that two files share in one split.",
)
@click.option(
    "--allow-duplicate-ids", is_flag=True, help="Merge files even when they hold the same sample id in one split."
)
@click.option(
    "--allow-mixed-splits",
    is_flag=True,
    help="Merge a split even when the files recorded different source split names for it (e.g. test and train).",
)
@click.pass_obj
def merge_command(
    streams: Streams,
    /,
    sources: tuple[str, ...],
    output: str,
    compression: str,
    progress: bool | None,
    overwrite: bool,
    id_feature: str,
    allow_duplicate_ids: bool,
    allow_mixed_splits: bool,
) -> int:
    """Join h5ml files with equal features into OUTPUT: a split's samples from each file, in order.

    Files that hold the same sample id (the --id-feature) in one split are refused unless --allow-duplicate-ids.
    A split whose files recorded different source split names (a file's train converted from test data) is
    refused unless --allow-mixed-splits. The output says which input splits went into each split.
    """
    from h5ml.ingest import edit

    report = edit.merge(
        list(sources),
        output,
        compression=None if compression == "none" else compression,  # type: ignore[arg-type]
        progress=progress,
        overwrite=overwrite,
        id_feature=id_feature,
        allow_duplicate_ids=allow_duplicate_ids,
        allow_mixed_splits=allow_mixed_splits,
    )
    streams.console().print(Text(report.summary()), soft_wrap=True)
    return EXIT_OK
