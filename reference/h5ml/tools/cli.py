"""The ``h5ml`` command line: validate, inspect, dump, convert, demo.

``main()`` (the console script) only calls :func:`run`, which takes the
arguments and the two output streams and returns the exit code, so the whole
command line is tested in-process. Every failure ends as one line
``h5ml: error: ...`` on standard error and exit code 2; ``--debug`` (before the
command) or the environment variable ``H5ML_DEBUG=1`` adds the traceback.

Exit codes: 0 success; 1 ``validate`` found an invalid file (with
``--strict``: a warning too); 2 a file could not be read at all, a usage
error, or any other failure; 130 interrupted.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import signal
import sys
import traceback
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, TextIO

import click
from rich.console import Console
from rich.table import Table
from rich.text import Text
from rich.tree import Tree

from h5ml import spec
from h5ml._version import __version__

if TYPE_CHECKING:  # pragma: no cover
    from h5ml.tools.summary import FeatureSummary, FileSummary
    from h5ml.validator.runner import FileReport, Issue

__all__ = ["DEBUG_ENV", "EXIT_ERROR", "EXIT_INTERRUPTED", "EXIT_INVALID", "EXIT_OK", "app", "main", "run"]

#: Exit code: every file valid, or the command succeeded.
EXIT_OK: Final = 0
#: Exit code: ``validate`` found an invalid file (with ``--strict``: a warning too).
EXIT_INVALID: Final = 1
#: Exit code: a file could not be read at all, a usage error, or another failure.
EXIT_ERROR: Final = 2
#: Exit code: interrupted (Ctrl-C).
EXIT_INTERRUPTED: Final = 130

#: Environment variable that turns on tracebacks for errors (``H5ML_DEBUG=1``).
DEBUG_ENV: Final = "H5ML_DEBUG"
#: Rendering width when the output is not a terminal (files, pipes, tests).
_PLAIN_WIDTH: Final = 120
#: Characters of the root description shown by ``inspect``.
_DESCRIPTION_CHARS: Final = 200


@dataclass
class _Streams:
    """Where a command writes: the caller's stdout and stderr, with rich consoles over them."""

    stdout: TextIO
    stderr: TextIO

    def console(self) -> Console:
        """A rich console over stdout: plain text, 120 columns, when stdout is not a terminal."""
        stream = self.stdout
        is_tty = bool(getattr(stream, "isatty", lambda: False)())
        return Console(
            file=stream,
            highlight=False,
            markup=False,
            emoji=False,
            width=None if is_tty else _PLAIN_WIDTH,
            force_terminal=None if is_tty else False,
        )


def _print_json(streams: _Streams, document: Any, indent: int | None = 2) -> None:
    streams.stdout.write(json.dumps(document, indent=indent, ensure_ascii=False, allow_nan=False))
    streams.stdout.write("\n")


def _require_file(path: str) -> None:
    """Refuse a missing path, a directory or a special file with a one-line message before HDF5 sees it."""
    if not os.path.lexists(path):
        raise FileNotFoundError(f"{path}: no such file")
    if os.path.isdir(path):
        raise IsADirectoryError(f"{path} is a directory; give the path of an h5ml file")
    if not os.path.isfile(path):  # a FIFO or a device would block or stream forever
        raise OSError(f"{path} is not a regular file (a pipe or a device?); give the path of an h5ml file")


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 or word == "info" else f"{count} {word}s"


# ---------------------------------------------------------------------------
# the application
# ---------------------------------------------------------------------------


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(
    __version__,
    "--version",
    "-V",
    prog_name="h5ml",
    message=f"%(prog)s %(version)s (format {spec.FORMAT_VERSION_STRING})",
)
@click.option("--debug", is_flag=True, help=f"Show the traceback of an error (or set {DEBUG_ENV}=1).")
def app(debug: bool) -> None:
    """h5ml: check, inspect, dump and create h5ml files (machine-learning datasets in HDF5)."""


# -- validate ----------------------------------------------------------------


def _severity(issue: Issue) -> str:
    return str(issue.severity.value)


def _verdict(file_report: FileReport, strict: bool) -> tuple[str, str]:
    """Return (verdict word, counts) for one file of a report (§9.1)."""
    counts = {"error": 0, "warning": 0, "info": 0}
    for issue in file_report.issues:
        counts[_severity(issue)] = counts.get(_severity(issue), 0) + 1
    text = ", ".join(_plural(counts[k], k) for k in ("error", "warning", "info"))
    if not file_report.readable:
        return "UNREADABLE", text
    if not file_report.valid:
        return "INVALID", text
    if strict and counts["warning"]:
        return "INVALID (--strict: warnings fail)", text
    return "VALID", text


def _exit_code(files: Sequence[FileReport], strict: bool) -> int:
    if any(not f.readable for f in files):
        return EXIT_ERROR
    if any(not (f.valid_strict if strict else f.valid) for f in files):
        return EXIT_INVALID
    return EXIT_OK


def _issue_table(issues: Sequence[Issue]) -> Table:
    table = Table(show_lines=False, expand=False)
    for column in ("code", "severity", "path", "message", "clause"):
        table.add_column(column, overflow="fold")
    for issue in issues:
        table.add_row(
            Text(issue.code), Text(_severity(issue)), Text(issue.path), Text(issue.message), Text(issue.clause)
        )
    return table


def _render_file_report(console: Console, file_report: FileReport, strict: bool) -> None:
    if file_report.issues:
        console.print(Text(str(file_report.path), style="bold"))
        console.print(_issue_table(file_report.issues))
    verdict, counts = _verdict(file_report, strict)
    console.print(Text(f"{file_report.path}: {verdict} ({counts})"))


@app.command("validate")
@click.argument("files", nargs=-1, required=True)
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--strict", is_flag=True, help="Count warnings as failures (exit 1).")
@click.option("--deep", is_flag=True, help="Also read every sample (offsets, codes, fingerprints).")
@click.option(
    "--timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=60.0,
    show_default=True,
    help="Seconds allowed per file; each file is checked in a child process that is stopped after it (E101).",
)
@click.option("--jobs", type=click.IntRange(min=1), default=1, show_default=True, help="Files checked in parallel.")
@click.pass_obj
def validate_command(
    streams: _Streams, files: tuple[str, ...], fmt: str, strict: bool, deep: bool, timeout: float, jobs: int
) -> int:
    """Check FILE... against the h5ml specification.

    Exit 0 when every file is valid, 1 when one is invalid (with --strict:
    also when one has a warning), 2 when one cannot be read at all (not HDF5,
    a directory, missing, or it did not finish within --timeout).
    """
    from h5ml.validator.runner import validate_many

    report = validate_many(list(files), deep=deep, timeout=timeout, jobs=jobs)
    if fmt == "json":
        _print_json(streams, report.to_json(strict=strict))
    else:
        console = streams.console()
        for file_report in report.files:
            _render_file_report(console, file_report, strict)
        if len(report.files) > 1:
            failed = sum(1 for f in report.files if not f.readable or not (f.valid_strict if strict else f.valid))
            console.print(Text(f"{len(report.files)} files checked, {failed} failed"))
    return _exit_code(report.files, strict)


# -- inspect -----------------------------------------------------------------


def _size(nbytes: int | None) -> str:
    if nbytes is None:
        return "?"
    value = float(nbytes)
    for unit in ("B", "kB", "MB", "GB", "TB"):
        if value < 1000 or unit == "TB":
            return f"{int(value)} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1000
    return f"{nbytes} B"  # pragma: no cover - the loop always returns


def _tuple_text(items: Sequence[object]) -> str:
    return "(" + ", ".join(str(d) for d in items) + ("," if len(items) == 1 else "") + ")"


def _shape_text(feature: FeatureSummary) -> str:
    if feature.shape is not None:
        return _tuple_text(feature.shape)
    parts: list[str] = [str(feature.num_samples)]
    if feature.shape_min is not None and feature.shape_max is not None:
        pairs = zip(feature.shape_min, feature.shape_max, strict=True)
        parts += [f"{lo}..{hi}" if lo != hi else str(lo) for lo, hi in pairs]
    else:
        parts.append("?" if feature.length_min is None else f"{feature.length_min}..{feature.length_max}")
        parts += [str(d) for d in feature.inner_shape]
    return _tuple_text(parts)


def _feature_label(feature: FeatureSummary) -> Text:
    """Two lines: what the feature holds, then how it is stored."""
    what = [feature.encoding, feature.dtype, _shape_text(feature)]
    if feature.num_classes is not None:
        what.append(f"{feature.num_classes} classes")
    if feature.role:
        what.append(f"role {feature.role}")
    if feature.media_type:
        what.append(f"media {feature.media_type}")
    if feature.units:
        what.append(f"units {feature.units}")
    if feature.sample_rate is not None:
        what.append(f"{feature.sample_rate:g} Hz")
    storage = [
        "chunks " + ("contiguous" if feature.chunks is None else _tuple_text(feature.chunks)),
        "compression " + (feature.compression or "none"),
        f"stored {_size(feature.stored_bytes)}",
    ]
    if feature.compression_ratio is not None:
        storage.append(f"ratio {feature.compression_ratio:.2f}x")
    label = Text(feature.name, style="bold")
    label.append("  " + "  ".join(what))
    label.append("\n" + ", ".join(storage), style="dim")
    return label


def _render_summary(console: Console, summary: FileSummary) -> None:
    root = Tree(Text(f"{summary.path}  (h5ml {summary.format_version}, {_size(summary.file_bytes)})", style="bold"))
    for split in summary.splits:
        shuffled = "" if split.shuffle_seed is None else f"  shuffled on write, seed {split.shuffle_seed}"
        branch = root.add(Text(f"{split.name}  {split.num_samples} samples{shuffled}", style="bold"))
        for feature in split.features:
            branch.add(_feature_label(feature))
    console.print(root)
    table = Table("metadata", "value", show_header=True)
    for key in ("name", "version", "description", "license", "created", "writer", "fingerprint"):
        value = summary.metadata.get(key)
        if value is None:
            continue
        text = str(value)
        if key == "description" and len(text) > _DESCRIPTION_CHARS:
            text = text[: _DESCRIPTION_CHARS - 3].rstrip() + "..."
        table.add_row(Text(key), Text(text))
    console.print(table)


@app.command("inspect")
@click.argument("file")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.pass_obj
def inspect_command(streams: _Streams, file: str, fmt: str) -> int:
    """Show the splits, features, storage and metadata of FILE."""
    from h5ml.tools.summary import summarize

    _require_file(file)
    summary = summarize(file)
    if fmt == "json":
        _print_json(streams, summary.to_json())
    else:
        _render_summary(streams.console(), summary)
    return EXIT_OK


# -- dump --------------------------------------------------------------------


def _dump_text(streams: _Streams, document: dict[str, Any]) -> None:
    out = streams.stdout
    for split_name, split in document["splits"].items():
        for feature_name, feature in split["features"].items():
            header = f"{split_name}/{feature_name}: {feature['encoding']} {feature['dtype']}"
            if "sample_shape" in feature:
                header += f" sample_shape {tuple(feature['sample_shape'])}"
            if "class_names" in feature:
                header += f" class_names {feature['class_names']}"
            if "media_type" in feature:
                header += f" media_type {feature['media_type']}"
            out.write(header + f" ({split['num_samples']} samples)\n")
            for index, value in enumerate(feature["values"]):
                out.write(f"  [{index}] {json.dumps(value, ensure_ascii=False, allow_nan=False)}\n")


@app.command("dump")
@click.argument("file")
@click.option("--split", "split", default=None, help="Only this split.")
@click.option("--feature", "feature", default=None, help="Only this feature.")
@click.option("--format", "fmt", type=click.Choice(["json", "text"]), default="json", show_default=True)
@click.pass_obj
def dump_command(streams: _Streams, file: str, split: str | None, feature: str | None, fmt: str) -> int:
    """Print the decoded content of FILE (JSON mapping of SPEC Appendix B)."""
    from h5ml.tools.dump import to_json_document

    _require_file(file)
    document = to_json_document(file, split=split, feature=feature)
    if fmt == "json":
        _print_json(streams, document, indent=None)
    else:
        _dump_text(streams, document)
    return EXIT_OK


# -- convert -----------------------------------------------------------------


@app.command("convert")
@click.argument("source")
@click.argument("output")
@click.option(
    "--from",
    "kind",
    type=click.Choice(["auto", "arrays", "audio", "images", "hdf5", "table", "hf"]),
    default="auto",
    show_default=True,
    help="What SOURCE is; auto: a folder of audio or image files, a saved Hugging Face dataset, or by the file suffix.",
)
@click.option("--compression", type=click.Choice(["gzip", "none"]), default="none", show_default=True)
@click.option("--level", type=click.IntRange(0, 9), default=None, help="gzip level (0-9), .npz/.npy only.")
@click.option(
    "--shuffle/--no-shuffle",
    default=None,
    help="Store samples in a seeded random order (SPEC §7.6). Default: off (the source order), on when --seed is given.",
)
@click.option("--seed", type=int, default=None, help="Shuffle seed (recorded as shuffle_seed) and split seed.")
@click.option("--name", default=None, help="Dataset name (default: the output's stem).")
@click.option("--description", default=None, help="Dataset description.")
@click.option("--license", "license_", default=None, help="SPDX license expression, e.g. CC-BY-4.0.")
@click.option(
    "--split",
    "split",
    default=None,
    help="Split ratios for a source without splits, e.g. train=0.8,test=0.2 (stratified on the label); "
    "for a .npy source, the split to write (default train).",
)
@click.option(
    "--workers",
    type=click.IntRange(1),
    default=None,
    help="Decoding threads (default 1); the decoders release the GIL. HDF5 sources read in processes.",
)
@click.option(
    "--processes",
    is_flag=True,
    default=None,
    help="Audio, images: decode in --workers processes (concurrent.futures) instead of threads.",
)
@click.option(
    "--on-error",
    type=click.Choice(["stop", "skip"]),
    default=None,
    help="A source file that fails: stop with an error (default; OUTPUT is not written) or skip it and record why.",
)
@click.option("--progress/--no-progress", default=None, help="Progress bar (default: when stderr is a terminal).")
@click.option("--quiet", is_flag=True, help="No progress bar and no summary.")
@click.option("--overwrite", is_flag=True, help="Replace OUTPUT if it exists.")
@click.option(
    "--label", default=None, help="The label feature or column, stored categorical (arrays, hdf5, table, hf)."
)
@click.option("--class-names", default=None, help="Comma-separated class names of --label (.npz/.npy).")
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
    "--layout",
    default=None,
    help="Images: auto, splits or classes (whether ROOT's folders are splits); hdf5: per-sample or arrays.",
)
@click.option("--categorical", multiple=True, help="Table: a column to store categorical (repeatable).")
@click.option("--strings", multiple=True, help="Table: a column to store as text (repeatable).")
@click.option("--split-column", default=None, help="Table: the column naming each row's split.")
@click.option("--columns", default=None, help="Table, hf: comma-separated columns to convert (default all).")
@click.option(
    "--images",
    type=click.Choice(["bytes", "pixels"]),
    default=None,
    help="hf: keep Image columns encoded (bytes) or decode them.",
)
@click.pass_obj
def convert_command(streams: _Streams, /, source: str, output: str, kind: str, **opts: Any) -> int:
    """Convert SOURCE to the h5ml file OUTPUT: arrays, audio or image folders, HDF5 files, tables, Hugging Face datasets.

    \b
    SOURCE may be:
      a .npz/.npy file       arrays named <feature>_<split> (x_train, y_valid, ...)
      an audio folder        ROOT/<split>/<feature>/<id>.wav (or ROOT/<feature>/<id>.wav)
      an image folder        ROOT/<split>/<class>/<file> (or ROOT/<class>/<file>)
      an HDF5 file           one dataset per sample, or x_<split>/y_<split> arrays
      a .csv/.parquet file   one feature per column
      a saved HF dataset     a folder written by datasets' save_to_disk
    OUTPUT is written in one pass, streaming, and appears only when complete.
    """
    try:
        return _convert(streams, source, output, kind, opts)
    except ValueError as exc:  # a wrong option or source, said by the converter: one line, no exception name
        raise click.ClickException(str(exc)) from exc


def _convert(streams: _Streams, source: str, output: str, kind: str, opts: dict[str, Any]) -> int:
    from h5ml.ingest import dispatch
    from h5ml.ingest.splitting import parse_ratios

    chosen = dispatch.detect_kind(source) if kind == "auto" else kind
    split = opts.pop("split")
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
    seed = opts.pop("seed")
    shuffle = opts.pop("shuffle")
    compression = opts.pop("compression")
    overwrite = opts.pop("overwrite")
    if quiet:
        opts["progress"] = False
    if chosen == "arrays":  # one pass over arrays in memory: no progress bar to show or hide
        opts["progress"] = None
    if split is not None:
        if "=" in split:
            opts["split_ratios"] = parse_ratios(split)
        else:
            opts["split"] = split
    for key in ("categorical", "strings"):
        opts[key] = list(opts[key]) or None
    if opts["columns"] is not None:
        opts["columns"] = [c.strip() for c in opts["columns"].split(",") if c.strip()]
    if opts["class_names"] is not None:
        opts["class_names"] = [c.strip() for c in opts["class_names"].split(",")]
    if opts["size"] is not None:
        from h5ml.ingest.images import parse_size

        opts["size"] = parse_size(opts["size"])
    result = dispatch.convert(
        chosen,  # type: ignore[arg-type]
        source,
        output,
        metadata=metadata or None,
        compression=None if compression == "none" else compression,
        shuffle=(seed is not None) if shuffle is None else shuffle,
        seed=seed,
        overwrite=overwrite,
        **opts,
    )
    if not quiet:
        text = result.summary() if hasattr(result, "summary") else f"wrote {result}"
        streams.console().print(Text(text), soft_wrap=True)
    return EXIT_OK


@app.command("export")
@click.argument("source")
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
    streams: _Streams,
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


@app.command("subset")
@click.argument("source")
@click.argument("output")
@click.option("--split", "splits", multiple=True, help="A split to keep (repeatable; default all).")
@click.option("--feature", "features", multiple=True, help="A feature to keep (repeatable; default all).")
@click.option("--samples", multiple=True, help="START:STOP[:STEP] for every split, or SPLIT=START:STOP (repeatable).")
@click.option("--compression", type=click.Choice(["keep", "gzip", "none"]), default="keep", show_default=True)
@click.option("--progress/--no-progress", default=None, help="Progress bar (default: when stderr is a terminal).")
@click.option("--overwrite", is_flag=True, help="Replace OUTPUT if it exists.")
@click.pass_obj
def subset_command(
    streams: _Streams,
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


@app.command("merge")
@click.argument("sources", nargs=-1, required=True)
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
@click.pass_obj
def merge_command(
    streams: _Streams,
    /,
    sources: tuple[str, ...],
    output: str,
    compression: str,
    progress: bool | None,
    overwrite: bool,
    id_feature: str,
    allow_duplicate_ids: bool,
) -> int:
    """Join h5ml files with equal features into OUTPUT: a split's samples from each file, in order.

    Files that hold the same sample id (the --id-feature) in one split are refused unless --allow-duplicate-ids.
    """
    from h5ml.ingest import edit

    try:
        report = edit.merge(
            list(sources),
            output,
            compression=None if compression == "none" else compression,  # type: ignore[arg-type]
            progress=progress,
            overwrite=overwrite,
            id_feature=id_feature,
            allow_duplicate_ids=allow_duplicate_ids,
        )
    except ValueError as exc:
        raise click.ClickException(str(exc)) from exc
    streams.console().print(Text(report.summary()), soft_wrap=True)
    return EXIT_OK


# -- demo --------------------------------------------------------------------


@app.command("demo")
@click.option("--output", default="digits.h5", show_default=True, help="Where to write the demo file.")
@click.option(
    "--train/--no-train",
    default=True,
    show_default=True,
    help="Train small PyTorch and Keras models on the file and print their test accuracy (needs h5ml[torch], h5ml[keras]).",
)
@click.pass_obj
def demo_command(streams: _Streams, output: str, train: bool) -> int:
    """Write scikit-learn's digits as an h5ml file, validate it, show it and train PyTorch and Keras models on it."""
    from h5ml.tools import demo
    from h5ml.tools.summary import summarize
    from h5ml.validator.runner import validate

    path = demo.build_digits(output)
    console = streams.console()
    console.print(Text(f"wrote {path}"))
    file_report = validate(str(path), timeout=demo.VALIDATE_TIMEOUT_S)
    _render_file_report(console, file_report, strict=False)
    _render_summary(console, summarize(path))
    code = _exit_code([file_report], strict=False)
    if train and code == 0:
        console.print(Text(demo.train_torch(path)), soft_wrap=True)  # one line, however long
        console.print(Text(demo.train_keras(path)), soft_wrap=True)
    return code


# ---------------------------------------------------------------------------
# entry points
# ---------------------------------------------------------------------------


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _error_line(exc: BaseException) -> str:
    if isinstance(exc, click.ClickException):
        message = exc.format_message().rstrip(".")
        if isinstance(exc, click.UsageError) and exc.ctx is not None:
            message += f" (see '{exc.ctx.command_path} --help')"
        return _one_line(message)
    from h5ml.errors import H5MLError

    if isinstance(exc, (H5MLError, OSError, ImportError)):
        return _one_line(str(exc)) or type(exc).__name__
    return _one_line(f"{type(exc).__name__}: {exc}")


def run(argv: Sequence[str] | None = None, stdout: TextIO | None = None, stderr: TextIO | None = None) -> int:
    """Run the ``h5ml`` command line and return its exit code.

    Parameters
    ----------
    argv
        The arguments after the program name; ``None`` uses ``sys.argv[1:]``.
    stdout, stderr
        Where output and errors go; ``None`` uses ``sys.stdout``/``sys.stderr``.

    Returns
    -------
    int
        0 success; 1 an invalid file (``validate``); 2 an unreadable file, a
        usage error or any other failure (reported as one line
        ``h5ml: error: ...`` on ``stderr``, with the traceback when
        ``--debug`` is given or ``H5ML_DEBUG=1``); 130 interrupted.

    Notes
    -----
    Never raises; implements no SPEC clause itself: it calls the validator
    (§9), the reader and the writer.
    """
    args = list(sys.argv[1:] if argv is None else argv)
    out = sys.stdout if stdout is None else stdout
    err = sys.stderr if stderr is None else stderr
    leading = list(itertools.takewhile(lambda arg: arg.startswith("-"), args))  # options before the command
    debug = os.environ.get(DEBUG_ENV, "") not in ("", "0") or "--debug" in leading
    streams = _Streams(out, err)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            result = app.main(args=args, prog_name="h5ml", standalone_mode=False, obj=streams)
    except click.exceptions.NoArgsIsHelpError as exc:
        out.write(exc.format_message() + "\n")
        return EXIT_ERROR
    except (BrokenPipeError, SystemExit):
        # The reader of our output went away (``h5ml dump f | head``); click turns that into sys.exit(1).
        # Nothing can be reported on a closed pipe: end quietly with the failure code.
        return EXIT_ERROR
    except (click.exceptions.Abort, KeyboardInterrupt):
        err.write("h5ml: interrupted\n")
        return EXIT_INTERRUPTED
    except Exception as exc:
        if debug:
            err.write(traceback.format_exc())
        err.write(f"h5ml: error: {_error_line(exc)}\n")
        return EXIT_ERROR
    return result if isinstance(result, int) else EXIT_OK


def _terminated(signum: int, frame: Any) -> None:
    """SIGTERM: stop as Ctrl-C does, so that a writer discards its temporary file and worker processes end."""
    raise KeyboardInterrupt(f"signal {signum}")


def main() -> None:
    """Console-script entry point ``h5ml``: exit with the code :func:`run` returns (SIGTERM stops it as SIGINT does)."""
    signal.signal(signal.SIGTERM, _terminated)
    code = run(sys.argv[1:], sys.stdout, sys.stderr)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # the work is done: a late SIGTERM just ends the process
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        # Python flushes stdout again at exit; point it at /dev/null so that this does not fail too.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    sys.exit(code)
