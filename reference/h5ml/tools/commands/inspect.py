"""``h5ml inspect`` (splits, features, storage and metadata as a tree) and ``h5ml dump`` (decoded content).

``inspect`` renders :func:`h5ml.tools.summary.summarize`; ``dump`` writes the
JSON mapping of SPEC Appendix B (:func:`h5ml.tools.dump.to_json_document`), or
one line per sample with ``--format text``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final

import click
from rich.console import Console
from rich.table import Table
from rich.text import Text
from rich.tree import Tree

from h5ml.tools.console import EXIT_OK, Streams, plural, print_json, require_file

if TYPE_CHECKING:  # pragma: no cover
    from h5ml.tools.summary import FeatureSummary, FileSummary

__all__ = ["dump_command", "inspect_command", "render_summary"]

#: Characters of the root description shown by ``inspect``.
_DESCRIPTION_CHARS: Final = 200


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


def render_summary(console: Console, summary: FileSummary) -> None:
    """Print a file's summary: a tree of splits and features with their storage, then a table of its metadata.

    Parameters
    ----------
    console
        Where to print.
    summary
        What :func:`h5ml.tools.summary.summarize` returned for the file.
    """
    root = Tree(Text(f"{summary.path}  (h5ml {summary.format_version}, {_size(summary.file_bytes)})", style="bold"))
    for split in summary.splits:
        shuffled = "" if split.shuffle_seed is None else f"  shuffled on write, seed {split.shuffle_seed}"
        count = plural(split.num_samples, "sample")
        branch = root.add(Text(f"{split.name}  {count}{shuffled}", style="bold"))
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


@click.command("inspect")
@click.argument("file")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.pass_obj
def inspect_command(streams: Streams, file: str, fmt: str) -> int:
    """Show the splits, features, storage and metadata of FILE."""
    from h5ml.tools.summary import summarize

    require_file(file)
    summary = summarize(file)
    if fmt == "json":
        print_json(streams, summary.to_json())
    else:
        render_summary(streams.console(), summary)
    return EXIT_OK


# -- dump --------------------------------------------------------------------


def _dump_text(streams: Streams, document: dict[str, Any]) -> None:
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


@click.command("dump")
@click.argument("file")
@click.option("--split", "split", default=None, help="Only this split.")
@click.option("--feature", "feature", default=None, help="Only this feature.")
@click.option("--format", "fmt", type=click.Choice(["json", "text"]), default="json", show_default=True)
@click.pass_obj
def dump_command(streams: Streams, file: str, split: str | None, feature: str | None, fmt: str) -> int:
    """Print the decoded content of FILE (JSON mapping of SPEC Appendix B)."""
    from h5ml.tools.dump import to_json_document

    require_file(file)
    document = to_json_document(file, split=split, feature=feature)
    if fmt == "json":
        print_json(streams, document, indent=None)
    else:
        _dump_text(streams, document)
    return EXIT_OK
