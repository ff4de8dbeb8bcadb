"""What the top of a source folder says: its files' kinds, and whether its folders are splits holding files (§5.1).

The audio and image folder converters (:mod:`h5ml.ingest.audio`,
:mod:`h5ml.ingest.images`) share these rules:

- the file extensions each reads (:data:`AUDIO_EXTENSIONS`,
  :data:`IMAGE_EXTENSIONS`), and, for a folder that holds none of its kind,
  what it holds instead (:func:`what_was_found`: ``"found 12 .png file(s);
  did you mean --from images (convert_image_folder)?"``);
- the layout ``ROOT/<split>/<file>`` (``folder_layout="split-files"``): when
  every folder of ROOT has a split name (:data:`h5ml.ingest.naming.SPLIT_SUFFIXES`:
  ``train``, ``valid``, ``val``, ``validation``, ``test``, ``testing``, ...)
  and holds files directly and no folder, the folders are splits
  (:func:`reads_as_split_files`). A tree that is half that and half
  something else (split-named folders holding files beside folders of other
  names, or beside split folders holding folders) is refused with one line
  saying which ``folder_layout`` gives which reading: a split read as a
  class (or a feature) is a wrong file, not a guess to make.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Final

from h5ml.errors import IngestError
from h5ml.ingest.naming import SPLIT_SUFFIXES

__all__ = [
    "AUDIO_EXTENSIONS",
    "FOLDER_KINDS",
    "FOLDER_LAYOUTS",
    "IMAGE_EXTENSIONS",
    "SPLIT_FILES",
    "reads_as_split_files",
    "what_was_found",
]

#: File extensions read as audio (compared case-insensitively).
AUDIO_EXTENSIONS: Final = (".wav", ".flac", ".ogg")
#: File extensions (lower case) read as images; other files are ignored.
IMAGE_EXTENSIONS: Final = frozenset({".png", ".jpg", ".jpeg", ".bmp", ".gif", ".tif", ".tiff", ".webp"})
#: Folder kind (``--from``) -> the extensions it reads and its converter, for :func:`what_was_found`'s hint.
FOLDER_KINDS: Final[Mapping[str, tuple[frozenset[str], str]]] = {
    "audio": (frozenset(AUDIO_EXTENSIONS), "convert_audio_folder"),
    "images": (IMAGE_EXTENSIONS, "convert_image_folder"),
}
#: The ``folder_layout`` value of ``ROOT/<split>/<file>`` (``--folder-layout split-files``).
SPLIT_FILES: Final = "split-files"
#: The values ``--folder-layout`` takes; each kind of folder takes its own among them (images: ``auto``,
#: ``splits``, ``classes``, ``split-files``; audio: ``auto``, ``splits``, ``features``, ``split-files``).
FOLDER_LAYOUTS: Final = ("auto", "splits", "classes", "features", SPLIT_FILES)
#: Files looked at by :func:`what_was_found`.
_SCAN_LIMIT: Final = 2000
#: Extensions named by :func:`what_was_found`.
_NAMED: Final = 4


def _suffix_counts(root: Path) -> tuple[Counter[str], bool]:
    """Visible files below ``root`` by lower-case extension (the first :data:`_SCAN_LIMIT`), and whether cut."""
    counts: Counter[str] = Counter()
    for _folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(files):
            if name.startswith("."):
                continue
            counts[Path(name).suffix.lower()] += 1
            if sum(counts.values()) >= _SCAN_LIMIT:
                return counts, True
    return counts, False


def what_was_found(root: Path, kind: str) -> str:
    """What a folder without files of ``kind`` holds, and the ``--from`` kind its files suggest.

    Parameters
    ----------
    root
        The folder.
    kind
        The kind looked for: ``"audio"`` or ``"images"`` (:data:`FOLDER_KINDS`).

    Returns
    -------
    str
        ``"found 12 .png file(s), 1 .txt file(s); did you mean --from images
        (convert_image_folder)?"``, or ``"the folder holds no files"``.
    """
    counts, cut = _suffix_counts(root)
    if not counts:
        return "the folder holds no files"
    named = [f"{n} {suffix or '(no extension)'} file(s)" for suffix, n in counts.most_common(_NAMED)]
    others = len(counts) - _NAMED
    text = "found " + ", ".join(named) + (f" and {others} other extension(s)" if others > 0 else "")
    text += f" among its first {_SCAN_LIMIT} files" if cut else ""
    for other, (extensions, function) in FOLDER_KINDS.items():
        if other != kind and any(suffix in extensions for suffix in counts):
            text += f"; did you mean --from {other} ({function})?"
    return text


def reads_as_split_files(root: Path, folders: Mapping[str, tuple[bool, bool]], files: str, readings: str) -> bool:
    """Whether ``folder_layout="auto"`` reads ROOT as ``ROOT/<split>/<file>``; refuse a tree that is half so.

    Parameters
    ----------
    root
        The folder, for the message.
    folders
        Each visible folder of ROOT -> (it holds visible sub-folders, it holds files of the kind directly).
    files
        What the files are, for the message (``"image files"``).
    readings
        The other readings and the ``folder_layout`` of each, a clause for the message.

    Returns
    -------
    bool
        True when every folder has a split name and holds files directly and
        no folder; False when no folder with a split name holds files directly
        (the tree is read as before).

    Raises
    ------
    h5ml.IngestError
        When folders with split names hold files directly but another folder
        has no split name, or one of them holds folders too: one line naming
        them and the ``folder_layout`` of each reading.
    """
    holding = sorted(name for name, (_, has_files) in folders.items() if has_files and name in SPLIT_SUFFIXES)
    if not holding:
        return False
    unnamed = sorted(name for name in folders if name not in SPLIT_SUFFIXES)
    nested = sorted(name for name, (has_dirs, _) in folders.items() if has_dirs and name in SPLIT_SUFFIXES)
    if not unnamed and not nested:
        return True
    but = (
        [f"{', '.join(map(repr, unnamed))} {'is' if len(unnamed) == 1 else 'are'} not a split name"] if unnamed else []
    )
    but += [f"{', '.join(map(repr, nested))} hold(s) folders"] if nested else []
    many = len(holding) > 1
    named = f"{'are' if many else 'is'} named like {'splits' if many else 'a split'} and hold{'' if many else 's'}"
    raise IngestError(
        f"{root}: cannot tell how to read the folder: {', '.join(map(repr, holding))} {named} {files} directly, "
        f"but {' and '.join(but)}; confirm which reading you mean: "
        f"folder_layout='{SPLIT_FILES}' (--folder-layout {SPLIT_FILES}) reads ROOT/<split>/<file>, each folder a "
        f"split; {readings}",
        path=str(root),
    )
