"""``h5ml dump``: the decoded content of an h5ml file, as JSON (SPEC Appendix B) or one line per sample.

The JSON form (:func:`h5ml.tools.dump.to_json_document`) lists every value
unless ``--head N`` (``--samples N``) keeps the first N samples of each
split. The text form is for reading: each sample on one line, long arrays
cut as numpy prints them (the first and last :data:`EDGE_ITEMS` items
around ``...``, then the full shape) and long strings cut with their length,
so that one audio file prints a few lines, not megabytes.
"""

from __future__ import annotations

import json
from typing import Any, Final

import click

from h5ml.tools.console import EXIT_OK, Streams, print_json, require_file, safe_text, tuple_text
from h5ml.tools.input_paths import INPUT_PATH

__all__ = ["EDGE_ITEMS", "TEXT_CHARS", "dump_command", "short_value"]

#: Items shown at each end of a long list in text output (numpy's ``edgeitems``).
EDGE_ITEMS: Final = 3
#: Characters of a string shown in text output before it is cut.
TEXT_CHARS: Final = 200
#: Class names listed in a feature's header line in text output.
_NAMES_SHOWN: Final = 20


def _shape(value: Any) -> list[int]:
    """The shape of nested lists, as far as every level is a list of equal lengths."""
    shape: list[int] = []
    while isinstance(value, list):
        shape.append(len(value))
        if not value:
            break
        value = value[0]
    return shape


def _cut(value: Any) -> tuple[Any, bool]:
    """``value`` with long lists and strings cut; whether anything was cut."""
    if isinstance(value, str):
        if len(value) <= TEXT_CHARS:
            return value, False
        return f"{value[:TEXT_CHARS]}... ({len(value)} characters)", True
    if not isinstance(value, list):
        return value, False
    if len(value) <= 2 * EDGE_ITEMS:
        items = [_cut(v) for v in value]
        return [v for v, _ in items], any(c for _, c in items)
    head = [_cut(v)[0] for v in value[:EDGE_ITEMS]]
    tail = [_cut(v)[0] for v in value[-EDGE_ITEMS:]]
    return [*head, Ellipsis, *tail], True


def _text(value: Any) -> str:
    if value is Ellipsis:
        return "..."
    if isinstance(value, list):
        return "[" + ", ".join(_text(v) for v in value) + "]"
    return json.dumps(value, ensure_ascii=False, allow_nan=False)


def short_value(value: Any) -> str:
    """One JSON value of a sample as a line of text, long lists and strings cut (the full shape noted).

    Parameters
    ----------
    value
        A value of the Appendix B mapping (nested lists, numbers, strings).

    Returns
    -------
    str
        ``[0.1, 0.2, 0.3, ..., 0.7, 0.8, 0.9] (shape (16000,))`` for a long
        list; the JSON text of ``value`` when nothing needs cutting.
    """
    cut, changed = _cut(value)
    text = _text(cut)
    if changed and isinstance(value, list):
        text += f" (shape {tuple_text(_shape(value))})"
    return text


def _dump_text(streams: Streams, document: dict[str, Any]) -> None:
    out = streams.stdout
    for split_name, split in document["splits"].items():
        shown = split.get("samples_shown")
        count = f"{split['num_samples']} samples" + ("" if shown is None else f", the first {shown} shown")
        for feature_name, feature in split["features"].items():
            header = f"{split_name}/{feature_name}: {feature['encoding']} {feature['dtype']}"
            if "sample_shape" in feature:
                header += f" sample_shape {tuple(feature['sample_shape'])}"
            if "class_names" in feature:
                names = feature["class_names"]
                more = f" and {len(names) - _NAMES_SHOWN} more" if len(names) > _NAMES_SHOWN else ""
                header += f" class_names {names[:_NAMES_SHOWN]}{more}"
            if "media_type" in feature:
                header += f" media_type {feature['media_type']}"
            out.write(safe_text(header) + f" ({count})\n")  # §10.2: names read from the file never drive the terminal
            for index, value in enumerate(feature["values"]):
                out.write(f"  [{index}] {safe_text(short_value(value))}\n")  # C1 controls too (§10.2)


@click.command("dump")
@click.argument("file", type=INPUT_PATH)
@click.option("--split", "split", default=None, help="Only this split.")
@click.option("--feature", "feature", default=None, help="Only this feature.")
@click.option(
    "--head",
    "--samples",
    "head",
    type=click.IntRange(min=0),
    default=None,
    help="Only the first N samples of each split (default: all; JSON lists every value unless this is given).",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["json", "text"]),
    default="json",
    show_default=True,
    help="json: every value (Appendix B); text: one line per sample, long arrays cut with '...' and their shape.",
)
@click.pass_obj
def dump_command(
    streams: Streams, file: str, split: str | None, feature: str | None, head: int | None, fmt: str
) -> int:
    """Print the decoded content of FILE (JSON mapping of SPEC Appendix B)."""
    from h5ml.tools.dump import to_json_document

    require_file(file)
    document = to_json_document(file, split=split, feature=feature, samples=head)
    if fmt == "json":
        print_json(streams, document, indent=None)
    else:
        _dump_text(streams, document)
    return EXIT_OK
