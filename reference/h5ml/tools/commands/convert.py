"""``h5ml convert``: arrays, audio and image folders, HDF5 files, tables, Hugging Face and Croissant datasets to h5ml.

The options of every kind of source are here; :func:`h5ml.ingest.dispatch.convert`
checks that the given ones apply to the source's kind and calls its
converter. The options every kind takes (``--compression``, ``--level``,
``--shuffle``, ``--seed``, ``--workers``, ``--processes``, ``--on-error``,
``--progress``, ``--overwrite`` and the metadata) are those of
:class:`h5ml.ingest.ConvertOptions`; a wrong value is an h5ml error whose
message names the option.
"""

from __future__ import annotations

import functools
from typing import Any

import click
from rich.text import Text

from h5ml.tools.commands.shard import shard_options
from h5ml.tools.console import EXIT_OK, Streams
from h5ml.tools.input_paths import require_inputs

#: The exit status of ``--plan`` when the plan lists decisions to make before it can run.
EXIT_DECIDE = 1

#: How a missing source names the argument (every path of it but OUTPUT is an input).
_SOURCES_HINT = "'SOURCES...'"

__all__ = ["convert_command"]


@click.command("convert")
@click.argument("paths", nargs=-1, metavar="SOURCES... OUTPUT")
@click.option(
    "--from",
    "kind",
    type=click.Choice(["auto", "arrays", "audio", "images", "hdf5", "table", "hf", "croissant"]),
    default="auto",
    show_default=True,
    help="What SOURCE is; auto: a folder of audio or image files, a saved Hugging Face dataset, a Croissant "
    "JSON-LD file (its conformsTo), or by the file suffix.",
)
@click.option(
    "--compression",
    type=click.Choice(["gzip", "zstd", "none"]),
    default="none",
    show_default=True,
    help="gzip: deflate, every HDF5 tool reads it. zstd: decodes 2-4 times faster, but needs hdf5plugin "
    '(pip install "h5ml[zstd]") in every reader; h5dump and h5wasm cannot read it (SPEC §3.5).',
)
@click.option(
    "--level",
    type=click.IntRange(0, 22),
    default=None,
    help="The compression level: gzip 0-9 (default 4), zstd 1-22 (default 3); needs --compression (an error "
    "without it), for every kind of SOURCE.",
)
@click.option(
    "--shuffle/--no-shuffle",
    default=None,
    help="Shuffle on write: store samples in a seeded random order, the seed recorded (SPEC §7.6). "
    "Default: off (the source order), on when --seed is given.",
)
@click.option(
    "--seed", type=int, default=None, help="Shuffle seed (recorded as shuffle_seed); also cuts --split-ratios."
)
@click.option("--name", default=None, help="Dataset name (default: the output's stem).")
@click.option("--description", default=None, help="Dataset description.")
@click.option("--license", "license_", default=None, help="SPDX license expression, e.g. CC-BY-4.0.")
@click.option(
    "--split-ratios",
    default=None,
    help="Split ratios for a source without splits, e.g. train=0.8,test=0.2 (stratified on the label, cut with --seed).",
)
@click.option(
    "--split",
    "split",
    default=None,
    help=".npy: the split to write (default train). Croissant: the split of every record of a record set without a "
    "cr:Split field (required then).",
)
@click.option(
    "--record-set", default=None, help="Croissant: the @id or name of the record set to convert (when several)."
)
@click.option(
    "--workers",
    type=click.IntRange(1),
    default=None,
    help="Decoding workers (default 1): threads, or processes with --processes. Tables, .npz/.npy files and "
    "HDF5 arrays are read in one thread.",
)
@click.option(
    "--processes",
    is_flag=True,
    default=None,
    help="Make the --workers processes instead of threads (HDF5 sources want them: h5py admits one thread).",
)
@click.option(
    "--on-error",
    type=click.Choice(["stop", "skip"]),
    default=None,
    help="A source file that fails: stop with an error (default; OUTPUT is not written) or skip it and record why.",
)
@click.option(
    "--dask",
    "dask",
    default=None,
    metavar="ADDRESS",
    help="Audio and image folders, CSV/TSV/Parquet tables, HDF5 files (one or several, or --plan-file): write "
    "OUTPUT as a sharded dataset (a folder: index.json and shards of 1000 samples, 100000 rows of a table, "
    "--samples-per-shard) in parallel on Dask: tcp://HOST:PORT of a running scheduler, or local:N for N worker "
    "processes on this machine (needs h5ml[dask]). The workers read HDF5 files at the paths this machine sees.",
)
@click.option("--progress/--no-progress", default=None, help="Progress bar (default: when stderr is a terminal).")
@click.option("--quiet", is_flag=True, help="No progress bar and no summary.")
@click.option("--overwrite", is_flag=True, help="Replace OUTPUT if it exists.")
@shard_options
@click.option(
    "--label",
    default=None,
    help="The label feature or column (role target): categorical for tables and hf, and for arrays and hdf5 when "
    "the source gives the number of classes.",
)
@click.option("--class-names", default=None, help="Comma-separated class names of --label (.npz/.npy, HDF5).")
@click.option("--feature", "feature", default=None, help=".npy only: the feature name (default: the file stem).")
@click.option(
    "--sample-rate",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    help="Audio: resample to this rate in Hz (soxr); stored float32.",
)
@click.option("--mono", is_flag=True, default=None, help="Audio: average the channels; stored float32 (frames,).")
@click.option(
    "--mode",
    type=click.Choice(["dense", "ragged", "bytes"]),
    default=None,
    help="Images: dense uint8 (N, H, W, C) at --size (default), ragged at each image's size, or bytes (files unchanged).",
)
@click.option("--size", default=None, help="Images: WIDTHxHEIGHT in pixels, e.g. 224x224 (dense mode).")
@click.option(
    "--resize",
    type=click.Choice(["stretch", "crop", "pad"]),
    default=None,
    help="Images: how dense mode fits other sizes.",
)
@click.option(
    "--color",
    type=click.Choice(["RGB", "RGBA", "L", "LA", "keep"]),
    default=None,
    help="Images: channels (default RGB).",
)
@click.option(
    "--resample",
    type=click.Choice(["nearest", "bilinear", "bicubic", "lanczos"]),
    default=None,
    help="Images: resampling filter.",
)
@click.option(
    "--folder-layout",
    type=click.Choice(["auto", "splits", "classes", "features", "split-files"]),
    default=None,
    help="Folders: splits (ROOT/<split>/<class or feature>/<file>), classes (images: ROOT/<class>/<file>), features "
    "(audio: ROOT/<feature>/<id>.wav) or split-files (ROOT/<split>/<file>, no labels); auto tells from the tree.",
)
@click.option(
    "--allow-empty-splits",
    is_flag=True,
    default=None,
    help="Folders, HDF5: write a split of which --on-error skip left out every file (default: an error).",
)
@click.option(
    "--plan",
    "show_plan",
    is_flag=True,
    help="HDF5: print the plan (which HDF5 path becomes which split and feature, what is left out) and write nothing; "
    "exit 0 when it can run, 1 when it lists decisions to make first.",
)
@click.option(
    "--format",
    "plan_format",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="With --plan: print the plan as text or as JSON.",
)
@click.option(
    "-o",
    "--plan-output",
    type=click.Path(dir_okay=False),
    default=None,
    help="With --plan: also write the plan as JSON to this file, to edit and pass back with --plan-file.",
)
@click.option(
    "--plan-file",
    type=click.Path(dir_okay=False),
    default=None,
    help="HDF5: convert exactly as this plan (JSON, from --plan -o) says; SOURCES may then be left out.",
)
@click.option(
    "--split-name",
    default=None,
    help="HDF5: the split of a source without splits of its own (default: its file name's split word, else train).",
)
@click.option(
    "--class-names-file",
    type=click.Path(dir_okay=False),
    default=None,
    help="HDF5: the label's class names, one per line.",
)
@click.option("--categorical", multiple=True, help="Table: a column to store categorical (repeatable).")
@click.option("--strings", multiple=True, help="Table: a column to store as text (repeatable).")
@click.option("--split-column", default=None, help="Table: the column naming each row's split.")
@click.option("--columns", default=None, help="Table, hf: comma-separated columns to convert (default all).")
@click.option(
    "--delimiter",
    default=None,
    help="Table (CSV): the field delimiter, one character, e.g. ';' or '|'; tab or '\\t' for a tab, space for a "
    "space (default ',', tab for .tsv).",
)
@click.option(
    "--header/--no-header",
    default=None,
    help="Table (CSV): whether the first line names the columns (default yes); --no-header names them c0, c1, ...",
)
@click.option(
    "--images",
    type=click.Choice(["bytes", "pixels"]),
    default=None,
    help="hf: keep Image columns encoded (bytes) or decode them.",
)
@click.pass_obj
def convert_command(streams: Streams, /, paths: tuple[str, ...], kind: str, **opts: Any) -> int:
    """Convert SOURCES to the h5ml file OUTPUT: arrays, audio or image folders, HDF5 files, tables, Hugging Face datasets.

    \b
    A SOURCE may be:
      a .npz/.npy file       arrays named <feature>_<split> (x_train, y_valid, ...)
      an audio folder        ROOT/<split>/<feature>/<id>.wav (or ROOT/<feature>/<id>.wav)
      an image folder        ROOT/<split>/<class>/<file> (or ROOT/<class>/<file>)
      HDF5 / .mat v7.3 files arrays, groups of splits, one group per sample, ... (see --plan);
                             several files, or a .txt list of shards, are joined
      a .csv/.parquet file   one feature per column
      a saved HF dataset     a folder written by datasets' save_to_disk
      a Croissant JSON-LD    its records, read by mlcroissant from local files
    OUTPUT is written in one pass, streaming, and appears only when complete.
    With --shard-size or --samples-per-shard (every kind but .npz/.npy
    arrays), OUTPUT is a folder: shards <split>/<split>-NNNNN.h5 and
    index.json, written last; with both, a shard closes at whichever limit
    it reaches first.
    For HDF5 sources, --plan shows what would be written; a plan edited and
    passed back with --plan-file converts exactly as written.
    """
    from h5ml.ingest import dispatch
    from h5ml.ingest.images.settings import parse_size
    from h5ml.ingest.splitting import parse_ratios

    show_plan, plan_format, plan_output = opts.pop("show_plan"), opts.pop("plan_format"), opts.pop("plan_output")
    if show_plan:
        return _print_plan(streams, paths, kind, opts, plan_format, plan_output)
    if len(paths) < (1 if opts["plan_file"] else 2):
        raise click.UsageError("give SOURCES... and OUTPUT (or --plan to see the plan of SOURCES)")
    *given, output = paths
    sources = require_inputs(given, _SOURCES_HINT)
    if opts["plan_file"] is not None:
        opts["plan"] = opts.pop("plan_file")
        kind = "hdf5" if kind == "auto" else kind
    else:
        opts.pop("plan_file")
    chosen = (dispatch.detect_kinds(sources) if sources else "hdf5") if kind == "auto" else kind
    source: Any = sources if chosen == "hdf5" else (sources[0] if len(sources) == 1 else sources)
    quiet = opts.pop("quiet")
    metadata = {
        key: value
        for key, value in (
            ("name", opts.pop("name")),
            ("description", opts.pop("description")),
            ("license", opts.pop("license_")),
        )
        if value is not None
    }
    if quiet:
        opts["progress"] = False
    if opts["split"] is not None and "=" in opts["split"]:
        raise click.BadParameter(
            f"{opts['split']!r} looks like split ratios; --split names the split of a .npy source: give ratios "
            "with --split-ratios train=0.8,test=0.2",
            param_hint="'--split'",
        )
    if opts["split_ratios"] is not None:
        opts["split_ratios"] = parse_ratios(opts["split_ratios"])
    for key in ("categorical", "strings"):
        opts[key] = list(opts[key]) or None
    if opts["columns"] is not None:
        opts["columns"] = [c.strip() for c in opts["columns"].split(",") if c.strip()]
    if opts["delimiter"] is not None:  # the characters a shell makes awkward, by name
        opts["delimiter"] = {"tab": "\t", "\\t": "\t", "space": " "}.get(opts["delimiter"], opts["delimiter"])
    if opts["class_names"] is not None:
        opts["class_names"] = [c.strip() for c in opts["class_names"].split(",")]
    if opts["size"] is not None:
        opts["size"] = parse_size(opts["size"])
    seed, shuffle, compression = opts["seed"], opts.pop("shuffle"), opts.pop("compression")
    dask = opts.pop("dask")
    if dask is None:
        run = dispatch.convert
    else:  # a sharded dataset, one shard per partition, on Dask (h5ml.ingest.dask)
        from h5ml.ingest.dask import convert_on_dask

        run = functools.partial(convert_on_dask, dask=dask)
    report = run(
        chosen,  # type: ignore[arg-type]
        source,
        output,
        metadata=metadata or None,
        compression=None if compression == "none" else compression,
        shuffle=(seed is not None) if shuffle is None else shuffle,
        overwrite=opts.pop("overwrite"),
        **opts,
    )
    if not quiet:
        streams.console().print(Text(report.summary()), soft_wrap=True)
    return EXIT_OK


def _print_plan(
    streams: Streams, paths: tuple[str, ...], kind: str, opts: dict[str, Any], plan_format: str, plan_output: str | None
) -> int:
    """``--plan``: propose the plan of HDF5 SOURCES, print it (text or JSON), and write it with ``-o``."""
    from h5ml.ingest import dispatch
    from h5ml.ingest.hdf5 import load_plan, plan_hdf5
    from h5ml.ingest.options import cli_option
    from h5ml.tools.plan_text import render_plan

    if kind not in ("auto", "hdf5"):
        raise click.UsageError(f"--plan applies to HDF5 sources; --from {kind} has no plan")
    others = set().union(*dispatch.OPTIONS.values()) - dispatch.OPTIONS["hdf5"]
    foreign = sorted(k for k in others if opts.get(k) not in (None, False, (), []))
    if foreign:
        shown = ", ".join(cli_option(k) or k for k in foreign)
        raise click.UsageError(f"{shown} do(es) not apply to HDF5 sources, whose plan --plan shows")
    if opts["plan_file"] is not None:
        plan = load_plan(opts["plan_file"])
    else:
        if not paths:
            raise click.UsageError("give the SOURCES to plan (HDF5 files, .mat v7.3 files or .txt shard lists)")
        paths = tuple(require_inputs(paths, _SOURCES_HINT))
        class_names = None if opts["class_names"] is None else [c.strip() for c in opts["class_names"].split(",")]
        plan = plan_hdf5(
            list(paths),
            split_name=opts["split_name"],
            label=opts["label"],
            class_names=class_names,
            class_names_file=opts["class_names_file"],
        )
    if plan_output is not None:
        from pathlib import Path

        Path(plan_output).write_text(plan.to_json(), encoding="utf-8")
    if plan_format == "json":
        streams.stdout.write(plan.to_json())
    else:
        streams.console().print(Text(render_plan(plan, plan_output)), soft_wrap=True)
    return EXIT_OK if not plan.confirm else EXIT_DECIDE
