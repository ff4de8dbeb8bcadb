"""``h5ml shard`` and ``h5ml unshard``: an h5ml file into a sharded dataset and back (SPEC §12.4).

The work is :mod:`h5ml.ingest.shards`'s. The shard options (``--shard-size``,
``--samples-per-shard``) are read here and by ``h5ml convert`` with the same
callbacks (:func:`shard_size_option`, :func:`samples_per_shard_option`), so
that a bad value is one line naming the flag (:mod:`h5ml.tools.cli`).
"""

from __future__ import annotations

from typing import Any

import click
from rich.text import Text

from h5ml.tools.console import EXIT_OK, Streams
from h5ml.tools.input_paths import INPUT_PATH

__all__ = ["samples_per_shard_option", "shard_command", "shard_options", "shard_size_option", "unshard_command"]


def shard_size_option(ctx: click.Context, param: click.Parameter, value: str | None) -> int | None:
    """The ``--shard-size`` of a command in bytes (:func:`h5ml.writer.shard_naming.parse_shard_size`)."""
    if value is None:
        return None
    from h5ml.writer.shard_naming import parse_shard_size

    return parse_shard_size(value, "--shard-size")


def samples_per_shard_option(ctx: click.Context, param: click.Parameter, value: int | None) -> int | None:
    """The ``--samples-per-shard`` of a command, at least 1."""
    if value is None:
        return None
    from h5ml.writer.shard_naming import parse_samples_per_shard

    return parse_samples_per_shard(value, "--samples-per-shard")


def shard_options(function: Any) -> Any:
    """Decorator: the options ``--shard-size SIZE`` and ``--samples-per-shard N`` of a command."""
    function = click.option(
        "--samples-per-shard",
        type=int,
        default=None,
        callback=samples_per_shard_option,
        help="Roll over to a new shard after N samples. With --shard-size too, a shard closes at whichever limit "
        "it reaches first (N samples, or SIZE bytes).",
    )(function)
    return click.option(
        "--shard-size",
        default=None,
        metavar="SIZE",
        callback=shard_size_option,
        help="Roll over to a new shard before the stored bytes of its samples exceed SIZE (HDF5's own metadata, "
        "some kB per file, comes on top): bytes, or 512MiB, 1GiB, 100MB (KB/MB/GB: powers of 1000; KiB/MiB/GiB: "
        "of 1024). The output is then a folder: shards and index.json.",
    )(function)


@click.command("shard")
@click.argument("source", type=INPUT_PATH)
@click.argument("outdir")
@shard_options
@click.option("--overwrite", is_flag=True, help="Replace the sharded dataset OUTDIR holds.")
@click.option("--progress/--no-progress", default=None, help="Progress bar (default: when stderr is a terminal).")
@click.pass_obj
def shard_command(
    streams: Streams,
    /,
    source: str,
    outdir: str,
    shard_size: int | None,
    samples_per_shard: int | None,
    overwrite: bool,
    progress: bool | None,
) -> int:
    """Write every split of the h5ml file SOURCE as a sharded dataset in the folder OUTDIR (shards, index.json)."""
    if shard_size is None and samples_per_shard is None:
        raise click.UsageError("give --shard-size SIZE or --samples-per-shard N")
    from h5ml.ingest.shards import shard

    report = shard(
        source,
        outdir,
        shard_size=shard_size,
        samples_per_shard=samples_per_shard,
        progress=progress,
        overwrite=overwrite,
    )
    streams.console().print(Text(report.summary()), soft_wrap=True)
    return EXIT_OK


@click.command("unshard")
@click.argument("index", type=INPUT_PATH)
@click.argument("output")
@click.option("--overwrite", is_flag=True, help="Replace OUTPUT if it exists.")
@click.option("--progress/--no-progress", default=None, help="Progress bar (default: when stderr is a terminal).")
@click.pass_obj
def unshard_command(streams: Streams, /, index: str, output: str, overwrite: bool, progress: bool | None) -> int:
    """Concatenate the shards of the sharded dataset INDEX (its index.json or folder) into one h5ml file OUTPUT."""
    from h5ml.ingest.shards import unshard

    report = unshard(index, output, progress=progress, overwrite=overwrite)
    streams.console().print(Text(report.summary()), soft_wrap=True)
    return EXIT_OK
