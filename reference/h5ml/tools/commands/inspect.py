"""``h5ml inspect``: an h5ml file's splits, features, storage and metadata; any other HDF5 file's tree.

For an h5ml file it renders :func:`h5ml.tools.summary.summarize`: each
feature with its type and shape, its description, the statistics the file
stores (§6.7), its classes with the samples of each (§6.5), its storage, and
for a compressed feature how much smaller it is stored (raw bytes / stored
bytes); then the root metadata, and the source files a conversion skipped.
For a sharded dataset (an ``index.json``, its folder or its URL, §12) it shows
what the index says (:mod:`h5ml.tools.index_view`), opening no shard.
For an HDF5 file that is not an h5ml file it says so, and how to convert it,
then prints the file's tree (:func:`h5ml.model.tree.walk_tree`, rendered by
:func:`h5ml.tools.tree_view.render_tree`).
"""

from __future__ import annotations

import dataclasses
import json
from typing import TYPE_CHECKING, Any, Final

import click
from rich.console import Console
from rich.table import Table
from rich.text import Text
from rich.tree import Tree

from h5ml.model.remote import is_url
from h5ml.tools.console import (
    EXIT_OK,
    Streams,
    plural,
    print_json,
    require_file,
    safe_copy,
    safe_text,
    size_text,
    tuple_text,
)
from h5ml.tools.input_paths import INPUT_OR_URL
from h5ml.tools.storage_options import parse_storage_options, storage_option_flag

if TYPE_CHECKING:  # pragma: no cover
    from h5ml.model.tree import TreeWalk
    from h5ml.tools.summary import FeatureSummary, FileSummary

__all__ = ["inspect_command", "render_summary"]

#: Classes listed with their counts; the others are counted in one "... N more".
_CLASSES_SHOWN: Final = 20
#: Skipped source files listed; the others are counted.
_SKIPPED_SHOWN: Final = 10


def _shape_text(feature: FeatureSummary) -> str:
    if feature.shape is not None:
        return tuple_text(feature.shape)
    parts: list[str] = [str(feature.num_samples)]
    if feature.shape_min is not None and feature.shape_max is not None:
        pairs = zip(feature.shape_min, feature.shape_max, strict=True)
        parts += [f"{lo}..{hi}" if lo != hi else str(lo) for lo, hi in pairs]
    else:
        parts.append("?" if feature.length_min is None else f"{feature.length_min}..{feature.length_max}")
        parts += [str(d) for d in feature.inner_shape]
    return tuple_text(parts)


def _storage_texts(feature: FeatureSummary) -> list[str]:
    """How the feature is stored: its chunks, filters and bytes; a view's virtual datasets (§12.6) as such."""
    if feature.virtual_sources:
        # A view file stores no samples: its virtual datasets read the shards (0 B in the view itself).
        where = (
            "virtual"
            if feature.stored_bytes is None
            else f"stored {size_text(feature.stored_bytes)} (sources included)"
        )
        return [f"virtual: {plural(feature.virtual_sources, 'source')}", where]
    return [
        "chunks " + ("contiguous" if feature.chunks is None else tuple_text(feature.chunks)),
        "compression " + (feature.compression or "none"),
        f"stored {size_text(feature.stored_bytes or 0)}",
    ]


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
    storage = _storage_texts(feature)
    # a view's virtual datasets (§12.6): the chunks, filters and ratio are the sources', not shown as the view's
    real = not feature.virtual_sources
    from h5ml.tools.summary import RATIO_WORDS, share_text

    share = feature.stored_share  # over the fixed-size components, as the ratio is; None when not compressed
    if share is not None and feature.logical_bytes is not None:
        # Only for a compressed feature: on uncompressed data, raw/stored below 1 is chunk padding, not compression.
        storage.append(f"raw {size_text(feature.logical_bytes)} (compressed: {RATIO_WORDS} {share_text(share)})")
    elif real and feature.logical_bytes is not None and feature.compression_ratio and feature.compression_ratio < 1:
        # The fixed-size components store more than their elements: the last chunk is whole. The ratio is over
        # those components only (a categorical's class_names, variable-length strings, are not among them).
        fixed = round(feature.logical_bytes / feature.compression_ratio)
        storage.append(
            f"raw {size_text(feature.logical_bytes)} in {size_text(fixed)} of chunks (the last chunk is whole)"
        )
    label = Text(feature.name, style="bold")
    label.append("  " + "  ".join(what))
    if feature.description:
        label.append("\n" + feature.description)
    for line in _content_lines(feature):
        label.append("\n" + line)
    label.append("\n" + ", ".join(storage), style="dim")
    return label


def _number(value: Any) -> str:
    return f"{value:.6g}" if isinstance(value, float) else str(value)


def _content_lines(feature: FeatureSummary) -> list[str]:
    """The statistics the file stores (§6.7) and the classes with their counts (§6.5), as lines."""
    lines = []
    for what in feature.never_written.values():
        # SPEC §3.5.1-S1: fill values are never shown as data; the figures of such a component are left out
        lines.append(f"never written (E146): {what}; HDF5 would return fill values, so they are not summarised")
    if feature.stats:
        names = {"stats_min": "min", "stats_max": "max", "stats_mean": "mean", "stats_std": "std"}
        parts = [f"{word} {_number(feature.stats[key])}" for key, word in names.items() if key in feature.stats]
        if "stats_count" in feature.stats:
            parts.append(f"over {feature.stats['stats_count']} values")
        lines.append("stats " + ", ".join(parts))
    if feature.class_names is not None:
        counts = feature.class_counts
        pairs = (
            list(feature.class_names)
            if counts is None
            else [f"{name} {count}" for name, count in zip(feature.class_names, counts, strict=True)]
        )
        text = ", ".join(pairs[:_CLASSES_SHOWN])
        if len(pairs) > _CLASSES_SHOWN:
            text += f", ... {len(pairs) - _CLASSES_SHOWN} more"
        if feature.missing_count:
            text += f"; missing (code -1) {feature.missing_count}"
        lines.append(("classes " if counts is None else "classes (samples each) ") + text)
    return lines


def render_summary(console: Console, summary: FileSummary) -> None:
    """Print a file's summary: a tree of splits and features with their storage, then a table of its metadata.

    Parameters
    ----------
    console
        Where to print.
    summary
        What :func:`h5ml.tools.summary.summarize` returned for the file.
    """
    root = Tree(Text(f"{summary.path}  (h5ml {summary.format_version}, {size_text(summary.file_bytes)})", style="bold"))
    for split in summary.splits:
        shuffled = "" if split.shuffle_seed is None else f"  shuffled on write, seed {split.shuffle_seed}"
        count = plural(split.num_samples, "sample")
        branch = root.add(Text(f"{split.name}  {count}{shuffled}", style="bold"))
        for feature in split.features:
            branch.add(_feature_label(feature))
        for name, reason in split.unreadable.items():  # SPEC §6.1-R7: named, never left out silently
            branch.add(Text(f"{name}  cannot be read: {reason}", style="red"))
    for name, reason in summary.unreadable_splits.items():  # SPEC §3.6-R2: named, never left out silently
        root.add(Text(f"{name}  split cannot be read: {reason}", style="red"))
    console.print(root)
    from h5ml.tools.summary import CARD_FIELDS, card_text

    table = Table("metadata", "value", show_header=True)
    for key in CARD_FIELDS:  # the card as h5ml report shows it, every field whole (a description is never cut)
        value = summary.metadata.get(key)
        if value is None:
            continue
        table.add_row(Text(key), Text(card_text(value)))
    from h5ml.spec.constants import ROOT_ATTRS

    for key in sorted(set(summary.metadata) - set(ROOT_ATTRS)):  # user attributes (§4.7-S1: shown with the rest)
        table.add_row(Text(key, style="italic"), Text(card_text(summary.metadata[key])))
    console.print(table)
    if summary.skipped:
        console.print(Text(f"the conversion skipped {plural(len(summary.skipped), 'source file')}:", style="bold"))
        for entry in summary.skipped[:_SKIPPED_SHOWN]:
            console.print(Text(f"  {entry.get('path', '?')}: {entry.get('reason', '?')}"), soft_wrap=True)
        if len(summary.skipped) > _SKIPPED_SHOWN:
            console.print(Text(f"  ... {len(summary.skipped) - _SKIPPED_SHOWN} more (h5ml inspect --format json)"))


@click.command("inspect")
@click.argument("file", type=INPUT_OR_URL)
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option(
    "--max-objects",
    type=click.IntRange(min=1),
    default=None,
    help="An HDF5 file that is not an h5ml file: the most paths of its tree shown, the others counted (default 200).",
)
@storage_option_flag
@click.pass_obj
def inspect_command(
    streams: Streams, file: str, fmt: str, max_objects: int | None, storage_options: tuple[str, ...] = ()
) -> int:
    """Show the splits, features, storage and metadata of FILE (a path or a URL); for another HDF5 file, its tree."""
    from h5ml.errors import NotH5MLError
    from h5ml.model.tree import DEFAULT_MAX_OBJECTS, foreign_reason, walk_tree
    from h5ml.tools.summary import summarize

    options = parse_storage_options(storage_options, [file])
    remote = is_url(file)
    from h5ml.model.shard_index import is_index_path

    if is_index_path(file):
        return _inspect_index(streams, fmt, file, options)
    if not remote:
        require_file(file)
    try:
        summary = summarize(file) if options is None else summarize(file, options)
    except NotH5MLError:
        if remote:  # the tree of a foreign HDF5 file is walked locally only
            raise
        reason = foreign_reason(file)
        if reason is None:
            raise
        _show_foreign(streams, fmt, file, reason, walk_tree(file, max_objects or DEFAULT_MAX_OBJECTS))
        return EXIT_OK
    if fmt == "json":
        print_json(streams, summary.to_json())
    else:
        shown = safe_copy(summary)  # §10.2: a file's text never drives the terminal
        # The card's texts (a BibTeX citation, a description) keep their line feeds and tabs, however short.
        card = {k: safe_text(v, lines=True) for k, v in summary.metadata.items() if isinstance(v, str)}
        render_summary(streams.console(), dataclasses.replace(shown, metadata={**shown.metadata, **card}))
    return EXIT_OK


def _inspect_index(streams: Streams, fmt: str, file: str, options: dict[str, Any] | None) -> int:
    """``h5ml inspect INDEX``: the sharded dataset as its index describes it (§12.1), no shard opened."""
    from h5ml.model.shard_index import load_index
    from h5ml.tools.index_view import index_json, render_index

    index, where = load_index(file, options)
    if fmt == "json":
        print_json(streams, index_json(index, str(where)))
    else:
        render_index(streams.console(), index, str(where))
    return EXIT_OK


def _show_foreign(streams: Streams, fmt: str, file: str, reason: str, walk: TreeWalk) -> None:
    """Print the tree of an HDF5 file that is not an h5ml file, after the line that says so."""
    from h5ml.tools.tree_view import foreign_note, render_tree, tree_json

    note = foreign_note(file, reason)
    plan, refusal = _proposed_plan(file)
    if fmt == "json":
        document: dict[str, Any] = {"h5ml": False, "note": note, "tree": tree_json(walk)}
        document.update({"plan": json.loads(plan.to_json())} if plan is not None else {"plan_refused": refusal})
        print_json(streams, document)
        return
    console = streams.console()
    console.print(Text(safe_text(note, lines=True)), soft_wrap=True)
    render_tree(console, safe_copy(walk), "--max-objects N")  # §10.2: names of the file never drive the terminal
    console.print(Text("\nwhat `h5ml convert` would do with it:"))
    if plan is None:
        console.print(Text(safe_text(f"  it would refuse it: {refusal}", lines=True)), soft_wrap=True)
    else:
        from h5ml.tools.plan_text import render_plan

        console.print(Text(safe_text(render_plan(plan), lines=True)), soft_wrap=True)


def _proposed_plan(file: str) -> tuple[Any, str | None]:
    """The plan ``h5ml convert FILE --plan`` proposes, or None and why it would refuse the file."""
    from h5ml.errors import H5MLError
    from h5ml.ingest.hdf5 import plan_hdf5

    try:
        return plan_hdf5(file), None
    except (H5MLError, OSError) as exc:
        return None, str(exc)
