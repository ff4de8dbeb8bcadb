"""Listing an image folder: its splits, classes and image files, and the files that are bad input (§5.1, §6.5).

Reads the folder layouts of :mod:`h5ml.ingest.images` (``ROOT/<split>/<class>/<file>``,
``ROOT/<class>/<file>`` or ``ROOT/<split>/<file>``, told apart from the tree or by
``folder_layout``), finds each class (or split) folder's image files at any depth,
and gathers the files that cannot be converted (outside a class folder, a
path that is not UTF-8, not an image of a known format) as
:class:`h5ml.ingest.Skipped` values, to stop on or to skip
(:func:`settle`).
"""

from __future__ import annotations

import os
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from h5ml.errors import IngestError
from h5ml.ingest.folders import IMAGE_EXTENSIONS, SPLIT_FILES, reads_as_split_files, what_was_found
from h5ml.ingest.naming import name_problem, natural_key, split_order, standard_split_name
from h5ml.ingest.report import Skipped, SourceItem, quote_skipped
from h5ml.ingest.splitting import assign_splits
from h5ml.model.values import text_problem
from h5ml.reader.imagecodec import IMAGE_FORMATS, SNIFF_BYTES, sniff_image_format

__all__ = [
    "IMAGE_EXTENSIONS",
    "Found",
    "items_by_split",
    "no_image_file",
    "not_an_image",
    "scan",
    "settle",
    "shown",
    "sniff_all",
]

#: Problems listed in one IngestError message.
_LISTED: Final = 5
#: The other readings of a tree that is half ``ROOT/<split>/<file>`` (:func:`h5ml.ingest.folders.reads_as_split_files`).
_READINGS: Final = (
    "folder_layout='classes' (--folder-layout classes) reads ROOT/<class>/<file>, each folder a class; "
    "folder_layout='splits' (--folder-layout splits) reads ROOT/<split>/<class>/<file>"
)


@dataclass(frozen=True)
class Found:
    """An image file of the tree: the split it goes to ("" before split_ratios), its class ("": none), path and id."""

    split: str
    class_name: str
    path: Path
    sample_id: str


def shown(path: Path | str) -> str:
    """A path as text that any terminal and UTF-8 can hold: bytes that are not UTF-8 are shown as ``\\xe9``."""
    return os.fsencode(path).decode("utf-8", "backslashreplace")


def not_an_image(head: bytes) -> str:
    """The reason a file whose first bytes are ``head`` is refused: it is none of the known formats."""
    return f"not a {', '.join(IMAGE_FORMATS)} file: it starts with {head!r}"


def _listing(folder: Path) -> tuple[list[Path], list[Path]]:
    """The visible sub-folders and image files of a folder, sorted by name."""
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError as exc:
        raise IngestError(
            f"{shown(folder)}: cannot list the folder ({exc.strerror or exc}); check its permissions",
            path=shown(folder),
        ) from exc
    dirs: list[Path] = []
    files: list[Path] = []
    for entry in entries:
        if entry.name.startswith("."):
            continue
        if entry.is_dir():
            dirs.append(Path(entry.path))
        elif Path(entry.name).suffix.lower() in IMAGE_EXTENSIONS and entry.is_file():
            files.append(Path(entry.path))
    return dirs, files


def _class_files(folder: Path) -> list[Path]:
    """Every image file below a class folder, at any depth; each real folder is walked once (link loops)."""
    out: list[Path] = []
    seen: set[str] = set()
    stack = [folder]
    while stack:
        current = stack.pop()
        real = os.path.realpath(current)
        if real in seen:
            continue
        seen.add(real)
        dirs, files = _listing(current)
        out += files
        stack += reversed(dirs)
    return out


def _unusable_name(name: str, kind: str, folder: Path, advice: str) -> None:
    """Refuse a class or split folder name that cannot be stored (§3.4, §5.1)."""
    problem = text_problem(name)
    if problem:
        problem += " (the folder name's bytes are not valid UTF-8)" if "surrogate" in problem else ""
        problem = f"the {kind} folder name {problem}"
    elif kind == "split":
        problem = name_problem("split", name)
    if problem:
        raise IngestError(f"{shown(folder)}: {problem}; {advice}", path=shown(folder))


def _layout(root: Path, listings: Mapping[Path, tuple[list[Path], list[Path]]]) -> str:
    """The layout ``folder_layout="auto"`` reads (:mod:`h5ml.ingest.images`), or an IngestError for a tree half of one."""
    shape = {folder.name: (bool(dirs), bool(files)) for folder, (dirs, files) in listings.items()}
    if reads_as_split_files(root, shape, "image files", _READINGS):
        return SPLIT_FILES
    shaped = all(dirs and not files for dirs, files in listings.values())
    return "splits" if listings and shaped else "classes"


def _split_folders(root: Path, top_dirs: Sequence[Path]) -> list[tuple[str, Path]]:
    """Each folder of ROOT with the standard name of its split; refuse names that cannot be splits, and doubles."""
    names: dict[str, Path] = {}
    for folder in top_dirs:
        name = standard_split_name(folder.name)
        advice = "rename the folder, or pass folder_layout='classes' (--folder-layout classes) if it is a class"
        _unusable_name(name, "split", folder, advice)
        if name in names:
            raise IngestError(
                f"{shown(root)}: the folders {names[name].name!r} and {folder.name!r} are both the split "
                f"{name!r}; merge or rename one",
                path=shown(folder),
            )
        names[name] = folder
    return [(name, folder) for name, folder in names.items()]


def scan(root: Path, folder_layout: str) -> tuple[list[Found], list[Skipped], list[str], str]:
    """List the tree: image files with their split and class, bad files, sorted class names, the layout read.

    Parameters
    ----------
    root
        The folder.
    folder_layout
        ``"auto"``, ``"splits"``, ``"classes"`` or ``"split-files"`` (:mod:`h5ml.ingest.images`).

    Returns
    -------
    tuple
        The image files found, the bad files (each with its split when it
        has one), the class names (sorted as Python sorts strings; none for
        ``"split-files"``), and the layout read (``"auto"`` decided).

    Raises
    ------
    h5ml.IngestError
        If a folder cannot be listed, a split or class folder name cannot be
        stored, two folders are one split, or (``"auto"``) the tree is half
        ``ROOT/<split>/<file>`` and half another layout (the message says
        which ``folder_layout`` gives which reading).
    """
    top_dirs, top_files = _listing(root)
    listings = {d: _listing(d) for d in top_dirs}
    if folder_layout == "auto":
        folder_layout = _layout(root, listings)
    outside = "a split folder (ROOT/<split>/<file>)" if folder_layout == SPLIT_FILES else "a class folder"
    problems = [Skipped(shown(p), f"the image is not in {outside}") for p in top_files]
    class_dirs: list[tuple[str, Path]] = []
    if folder_layout == "splits":
        for name, folder in _split_folders(root, top_dirs):
            dirs, files = listings[folder]
            problems += [
                Skipped(shown(p), "the image is not in a class folder (ROOT/<split>/<class>/<file>)", name)
                for p in files
            ]
            class_dirs += [(name, d) for d in dirs]
    elif folder_layout != SPLIT_FILES:
        class_dirs = [("", d) for d in top_dirs]
    if folder_layout == SPLIT_FILES:
        folders = [(split, folder, "") for split, folder in _split_folders(root, top_dirs)]
    else:
        folders = [(split, folder, folder.name) for split, folder in class_dirs]
    found: list[Found] = []
    for split, folder, class_name in folders:
        files = _class_files(folder)
        if files and class_name:
            _unusable_name(folder.name, "class", folder, "rename the folder")
        for path in files:
            sample_id = path.relative_to(root).as_posix()
            problem = text_problem(sample_id)
            if problem:
                problem += " (the file name's bytes are not valid UTF-8)" if "surrogate" in problem else ""
                problems.append(Skipped(shown(path), f"its path {problem}; rename the file", split or None))
                continue
            found.append(Found(split, class_name, path, sample_id))
    classes = sorted({f.class_name for f in found if f.class_name})
    return found, problems, classes, folder_layout


def no_image_file(root: Path, skipped: int) -> IngestError:
    """The error for a tree without any image file to convert: what it holds instead, and the layouts read."""
    return IngestError(
        f"{shown(root)}: no image file to convert ({', '.join(sorted(IMAGE_EXTENSIONS))}, at "
        "ROOT/<class>/<file>, ROOT/<split>/<class>/<file> or ROOT/<split>/<file>)"
        + (f"; {skipped} bad file(s) were skipped" if skipped else f"; {what_was_found(root, 'images')}"),
        path=shown(root),
    )


def sniff_all(found: Sequence[Found]) -> tuple[dict[Path, str], list[Skipped]]:
    """The format of each file from its signature (bytes mode's media type); unreadable or unknown ones are bad."""
    formats: dict[Path, str] = {}
    bad: list[Skipped] = []
    for item in found:
        try:
            with open(item.path, "rb") as stream:
                head = stream.read(SNIFF_BYTES)
        except OSError as exc:
            bad.append(Skipped(shown(item.path), f"cannot read it: {exc.strerror or exc}", item.split or None))
            continue
        fmt = sniff_image_format(head)
        if fmt is None:
            bad.append(Skipped(shown(item.path), not_an_image(head), item.split or None))
        else:
            formats[item.path] = fmt
    return formats, bad


def settle(problems: list[Skipped], on_error: str, output: str | os.PathLike[str]) -> list[Skipped]:
    """Stop on problems found while listing (``on_error="stop"``), or return them to be recorded as skipped.

    Raises
    ------
    h5ml.IngestError
        With ``on_error="stop"`` and problems: the first few files and reasons, and what to do.
    """
    if not problems or on_error == "skip":
        return problems
    raise IngestError(
        f"{quote_skipped(problems, _LISTED)}. Nothing was written to {os.fspath(output)}. Fix, move or remove "
        f"{'that file' if len(problems) == 1 else 'those files'}, or skip bad files with on_error='skip' "
        "(--on-error skip)",
        path=problems[0].path,
    )


def items_by_split(
    found: Sequence[Found],
    ratios: Mapping[str, float] | None,
    seed: int,
    classes: Sequence[str],
    planned: Collection[str] = (),
) -> dict[str, list[SourceItem]]:
    """Split -> its items in the natural order of their ids; ``ratios`` cut a tree without splits, by class.

    Parameters
    ----------
    found
        The image files.
    ratios
        Checked split ratios, or None (the folders' splits, else ``train``).
    seed
        The split seed (:func:`h5ml.ingest.splitting.split_seed`).
    classes
        The class names, for stratifying.
    planned
        The splits of the tree before bad files were left out: kept, with no
        items, when every file of one was (for :func:`h5ml.ingest.pipeline.ingest` to refuse or write).

    Returns
    -------
    dict
        Split -> items with the parts ``("image", path)`` and (when the file
        has a class) ``("label", class name)``; the standard splits first.
    """
    ordered = sorted(found, key=lambda f: natural_key(f.sample_id))
    if ratios is not None:
        index = {name: k for k, name in enumerate(classes)}
        codes = [index[f.class_name] for f in ordered]
        names: list[str] = assign_splits(len(ordered), ratios, seed, labels=codes)
        order = list(ratios)
    else:
        names = [f.split or "train" for f in ordered]
        order = sorted(set(names) | set(planned), key=split_order)
    splits: dict[str, list[SourceItem]] = {name: [] for name in order}
    for name, f in zip(names, ordered, strict=True):
        label = (("label", f.class_name),) if f.class_name else ()
        splits[name].append(SourceItem(name, f.sample_id, (("image", str(f.path)), *label)))
    return {name: items for name, items in splits.items() if items or name in planned}
