"""Listing an audio folder: its splits, features and files, matched by id (§5.1, §5.2).

Reads the folder layouts of :mod:`h5ml.ingest.audio` (``ROOT/<split>/<feature>/<id>.<ext>``,
``ROOT/<feature>/<id>.<ext>`` or ``ROOT/<split>/<id>.<ext>``, told apart from
the tree or by ``folder_layout``), refuses trees that fit none, and
matches the files of each split's features by id; a missing counterpart or
two files of one id is a :class:`Problem` of that sample (stop or skip).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal

from h5ml.errors import IngestError
from h5ml.ingest.folders import AUDIO_EXTENSIONS, SPLIT_FILES, reads_as_split_files, what_was_found
from h5ml.ingest.naming import name_problem, natural_key
from h5ml.ingest.options import parameter_error
from h5ml.ingest.report import ID_FEATURE, SourceItem
from h5ml.ingest.splitting import assign_splits, split_seed

__all__ = ["AUDIO_EXTENSIONS", "AUDIO_FEATURE", "AUDIO_LAYOUTS", "AudioLayout", "Problem", "Tree", "match_ids", "scan"]

#: How the folder is read: ``ROOT/<split>/<feature>/<id>``, ``ROOT/<feature>/<id>``, ``ROOT/<split>/<id>``, or
#: decided from the tree.
AudioLayout = Literal["auto", "splits", "features", "split-files"]
#: The values of :data:`AudioLayout` (``--folder-layout``).
AUDIO_LAYOUTS: Final = ("auto", "splits", "features", "split-files")
#: The feature of the files of ``ROOT/<split>/<id>.<ext>`` (layout "split-files").
AUDIO_FEATURE: Final = "audio"
#: The other readings of a tree that is half ``ROOT/<split>/<id>.wav`` (:func:`h5ml.ingest.folders.reads_as_split_files`).
_READINGS: Final = (
    f"each split holding one feature {AUDIO_FEATURE!r}; folder_layout='features' (--folder-layout features) reads "
    "ROOT/<feature>/<id>.wav, each folder a feature matched by id; folder_layout='splits' (--folder-layout "
    "splits) reads ROOT/<split>/<feature>/<id>.wav"
)

#: ``{split: {feature: {id: [files]}}}`` (several files for one id are reported by :func:`match_ids`).
Tree = dict[str, dict[str, dict[str, list[Path]]]]


@dataclass(frozen=True)
class Problem:
    """A sample that cannot be converted as it is: ``path`` is at fault for ``reason``, a problem of ``kind``.

    ``kind`` names the problem in the message that lists them all
    (``"missing counterpart"``, ``"sample rate"``, ...).
    """

    split: str
    sample_id: str
    path: str
    reason: str
    kind: str = "unreadable file"


def _visible(folder: Path) -> list[Path]:
    return sorted((p for p in folder.iterdir() if not p.name.startswith(".")), key=lambda p: natural_key(p.name))


def _is_audio(path: Path) -> bool:
    return path.suffix.lower() in AUDIO_EXTENSIONS and path.is_file()


def _check_name(name: str, kind: str, folder: Path) -> None:
    problem = name_problem(kind, name)
    if problem is not None:
        raise IngestError(f"{folder}: the folder name cannot be used: {problem}; rename the folder", path=str(folder))


def _feature_files(folder: Path) -> dict[str, list[Path]]:
    """``{id: [files]}`` of one feature folder (several files for one id are reported later)."""
    files: dict[str, list[Path]] = {}
    for entry in _visible(folder):
        if entry.is_dir():
            raise IngestError(
                f"{entry}: a feature folder holds audio files, not folders (layout ROOT/<split>/<feature>/<id>.wav "
                "or ROOT/<feature>/<id>.wav); move or remove this folder",
                path=str(entry),
            )
        if _is_audio(entry):
            files.setdefault(entry.stem, []).append(entry)
    return files


def _split_level(root: Path, folder_layout: str) -> tuple[str, list[Path]]:
    """The layout of ROOT and the folders directly under it (:mod:`h5ml.ingest.audio`, "Folder layout")."""
    if not root.is_dir():
        raise FileNotFoundError(f"{root}: the audio folder does not exist or is not a directory")
    entries = _visible(root)
    loose = [p for p in entries if _is_audio(p)]
    if loose:
        raise IngestError(
            f"{loose[0]}: audio files lie directly in {root}; put each feature's files in its own folder, "
            "ROOT/<feature>/<id>.wav or ROOT/<split>/<feature>/<id>.wav",
            path=str(loose[0]),
        )
    folders = [p for p in entries if p.is_dir()]
    holds_folders = [f for f in folders if any(p.is_dir() for p in _visible(f))]
    holds_audio = [f for f in folders if any(_is_audio(p) for p in _visible(f))]
    if not any(_is_audio(p) for folder in folders for p in folder.rglob("*") if not p.name.startswith(".")):
        raise IngestError(
            f"{root}: no audio files found ({', '.join(AUDIO_EXTENSIONS)}, at ROOT/<split>/<feature>/<id>.wav, "
            f"ROOT/<feature>/<id>.wav or ROOT/<split>/<id>.wav); {what_was_found(root, 'audio')}",
            path=str(root),
        )
    if folder_layout != "auto":
        return folder_layout, folders
    shape = {f.name: (f in holds_folders, f in holds_audio) for f in folders}
    if reads_as_split_files(root, shape, "audio files", _READINGS):
        return SPLIT_FILES, folders
    both = [f for f in holds_folders if f in holds_audio]
    if both:
        raise IngestError(
            f"{both[0]}: holds both folders and audio files; a folder under {root} is either a split "
            "(holding feature folders) or a feature (holding audio files)",
            path=str(both[0]),
        )
    if holds_folders and holds_audio:
        raise IngestError(
            f"{root}: {holds_folders[0].name!r} holds folders (a split) but {holds_audio[0].name!r} holds audio "
            "files (a feature); use one layout, ROOT/<split>/<feature>/<id>.wav or ROOT/<feature>/<id>.wav",
            path=str(root),
        )
    return ("splits" if holds_folders else "features"), holds_folders or holds_audio


def _feature_folders(folders: Sequence[Path]) -> dict[str, dict[str, list[Path]]]:
    out: dict[str, dict[str, list[Path]]] = {}
    for folder in folders:
        _check_name(folder.name, "feature", folder)
        if folder.name == ID_FEATURE:
            raise IngestError(
                f"{folder}: a feature folder may not be named {ID_FEATURE!r}, the name of the feature holding the "
                "sample ids; rename the folder",
                path=str(folder),
            )
        files = _feature_files(folder)
        if files:
            out[folder.name] = files
    return out


def scan(
    root: Path, split_ratios: Mapping[str, float] | None, seed: int | None, folder_layout: str = "auto"
) -> tuple[Tree, dict[tuple[str, str], Path], str]:
    """List the tree: ``{split: {feature: {id: [files]}}}``, each (split, feature)'s folder, the layout read.

    Parameters
    ----------
    root
        The folder.
    split_ratios
        Checked ratios for a tree without split level (:func:`h5ml.ingest.splitting.check_ratios`), or None.
    seed
        The user's seed (the split seed is :func:`h5ml.ingest.splitting.split_seed` of it).
    folder_layout
        One of :data:`AUDIO_LAYOUTS`: ``"auto"`` tells the layout from the tree.

    Returns
    -------
    tuple
        The tree, the folder of each (split, feature), and the layout read
        (``"splits"``, ``"features"`` or ``"split-files"``).

    Raises
    ------
    FileNotFoundError
        If ``root`` is not a directory.
    h5ml.IngestError
        If the tree holds no audio file (the message says what it holds), fits
        no layout, is half ``ROOT/<split>/<id>.wav`` (``"auto"``: the message
        says which ``folder_layout`` gives which reading), or a folder name
        cannot name a split or feature.
    h5ml.errors.ParameterError
        If ``split_ratios`` is given for a tree that has splits.
    """
    layout, folders = _split_level(root, folder_layout)
    tree: Tree = {}
    where: dict[tuple[str, str], Path] = {}
    if layout == SPLIT_FILES and split_ratios is None:
        for split_folder in folders:
            _check_name(split_folder.name, "split", split_folder)
            files = _feature_files(split_folder)
            if files:
                tree[split_folder.name] = {AUDIO_FEATURE: files}
                where[split_folder.name, AUDIO_FEATURE] = split_folder
        return tree, where, layout
    if layout != "features":
        if split_ratios is not None:
            raise parameter_error(
                "split_ratios",
                f"{root}: the folder already has splits ({', '.join(f.name for f in folders)}); split_ratios "
                "applies to ROOT/<feature>/<id>.wav folders only, drop it",
            )
        for split_folder in folders:
            _check_name(split_folder.name, "split", split_folder)
            loose = [p for p in _visible(split_folder) if _is_audio(p)]
            if loose:
                raise IngestError(
                    f"{loose[0]}: an audio file directly in the split folder {split_folder}; put it in a feature "
                    "folder, ROOT/<split>/<feature>/<id>.wav",
                    path=str(loose[0]),
                )
            features = _feature_folders([p for p in _visible(split_folder) if p.is_dir()])
            if features:
                tree[split_folder.name] = features
                where.update({(split_folder.name, f): split_folder / f for f in features})
        return tree, where, layout
    features = _feature_folders(folders)
    ids = sorted({i for files in features.values() for i in files}, key=lambda i: (natural_key(i), i))
    if split_ratios is None:
        assigned = ["train"] * len(ids)
    else:
        assigned = assign_splits(len(ids), split_ratios, split_seed(seed))
    split_of = dict(zip(ids, assigned, strict=True))
    for name in split_ratios or {"train": 1.0}:
        tree[name] = {
            feature: {i: paths for i, paths in files.items() if split_of[i] == name}
            for feature, files in features.items()
        }
        where.update({(name, f): root / f for f in features})
    return tree, where, layout


def match_ids(tree: Tree, where: Mapping[tuple[str, str], Path]) -> tuple[dict[str, list[SourceItem]], list[Problem]]:
    """The items of each split, in natural id order, and the samples with a missing or doubled file.

    Parameters
    ----------
    tree
        As :func:`scan` lists it.
    where
        The folder of each (split, feature), for messages.

    Returns
    -------
    tuple
        Split -> its items (one part per feature: ``(feature, file)``), and the problems found.
    """
    splits: dict[str, list[SourceItem]] = {}
    problems: list[Problem] = []
    for split, features in tree.items():
        names = sorted(features, key=natural_key)
        ids = sorted({i for files in features.values() for i in files}, key=lambda i: (natural_key(i), i))
        items: list[SourceItem] = []
        for sample_id in ids:
            found = [(name, features[name].get(sample_id, [])) for name in names]
            present = [paths[0] for _, paths in found if paths]
            bad = False
            for name, paths in found:
                if len(paths) > 1:
                    bad = True
                    problems += [
                        Problem(
                            split,
                            sample_id,
                            str(p),
                            f"files {', '.join(q.name for q in paths)} in {where[split, name]} have the same id "
                            f"{sample_id!r}; keep one file per id and feature",
                            "id given to two files",
                        )
                        for p in paths
                    ]
                elif not paths:
                    bad = True
                    expected = where[split, name] / f"{sample_id}{present[0].suffix}"
                    problems.append(
                        Problem(
                            split,
                            sample_id,
                            str(present[0]),
                            f"its counterpart {expected} (feature {name!r}, any of {', '.join(AUDIO_EXTENSIONS)}) "
                            "is missing; add it or remove this file",
                            "missing counterpart",
                        )
                    )
            if not bad:
                items.append(SourceItem(split, sample_id, tuple((name, str(paths[0])) for name, paths in found)))
        splits[split] = items
    return splits, problems
