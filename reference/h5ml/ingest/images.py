"""Image folders (torchvision ``ImageFolder`` trees) to h5ml files, for ``h5ml convert`` (§6.2, §6.3, §6.5, §6.6).

The folder
----------
Two layouts, as torchvision's ``ImageFolder`` reads them::

    ROOT/<split>/<class>/<file>      splits given by the folders (layout "splits")
    ROOT/<class>/<file>              no split level (layout "classes")

With ``layout="auto"`` (the default) the tree is read as "splits" when ROOT
has at least one folder, no folder of ROOT holds an image file directly, and
every folder of ROOT holds sub-folders; otherwise as "classes". (A
class-only tree whose class folders hold nothing but sub-folders, such as
``cat/indoor/1.png``, therefore reads as splits: pass ``layout="classes"``
for it.) Split folders ``val``, ``valid``, ``dev``, ``eval``, ``training``
and ``testing`` are stored under the standard name
:data:`h5ml.ingest.arrays.SPLIT_SUFFIXES` gives them (``validation``; ``test`` for
``eval`` and ``testing``; ``train``), so the file passes ``validate
--strict`` (W207); other split folders keep their names (two folders for one
split are refused). Without a split level,
``split_ratios`` cuts the samples into splits, stratified on the class (the
same seed gives the same cut); without it every sample goes to ``train``.

A class folder's files are found at any depth below it (as ``ImageFolder``
does; symbolic links are followed, a link loop is walked once). Image files
are those whose extension is ``.png``, ``.jpg``, ``.jpeg``, ``.bmp``,
``.gif``, ``.tif``, ``.tiff`` or ``.webp``, in any case. Everything else is
ignored without a word: other files (``README.txt``, ``labels.csv``,
``Thumbs.db``), and hidden files and folders (names starting with ``.``,
such as ``.DS_Store`` and ``.ipynb_checkpoints``). A class folder holding no
image file is not a class. An image file that has no class folder (directly
in ROOT, or directly in a split folder) is bad input, as is a file whose path
is not valid UTF-8 (stop, or skip with ``on_error="skip"``).

What is stored
--------------
Each split gets three features:

- ``image`` (role ``input``): see ``mode`` below;
- ``label`` (role ``target``): categorical (§6.5), the class names being the
  class folder names sorted as Python sorts strings (so code k is
  torchvision's ``class_to_idx`` of the same tree), the same list in every split;
- ``id`` (role ``metadata``): string (§6.4), the file's path relative to ROOT
  with ``/`` separators (``train/cat/001.png``), so each sample traces back to
  its file.

Samples are in the natural order of their ids (``img2`` before ``img10``),
or shuffled with a recorded seed (``shuffle``, §7.6).

``mode``:

- ``"dense"`` (§6.2): every image decoded, converted to ``color`` and
  resized to ``size = (W, H)``, stored as uint8 ``(N, H, W, C)``. An image
  already of that size is not resampled (its pixels are stored exactly).
  ``resize`` says how other sizes fit: ``"stretch"`` (both axes scaled, the
  aspect ratio changes), ``"crop"`` (scaled so that the image covers the
  size, then the centre cut out) or ``"pad"`` (scaled so that it fits inside,
  then centred on zeros: black, and transparent with an alpha channel).
- ``"ragged"`` (§6.3): every image decoded and converted to ``color`` at its
  own size, stored ragged with per-sample shapes ``(H, W, C)``. The
  ``shapes`` dataset is always written, even when only heights vary (where
  §6.3 would prefer rows), so that every split and every image file has one
  layout and the sizes are known without reading the pixels.
- ``"bytes"`` (§6.6): every file stored byte for byte as it is (no decoding
  into the file, no re-encoding). Each file is still decoded once to check
  that it is a whole image. ``media_type`` is ``image/png``,
  ``image/jpeg``, ``image/gif``, ``image/bmp``, ``image/tiff`` or
  ``image/webp`` when every file has that format (told by the file's
  signature, not its extension); when formats are mixed no media type is
  given and the writer records the SPEC default ``application/octet-stream``
  (§6.6). Decode samples with :func:`h5ml.reader.imagecodec.decode_image`.

Decoding uses Pillow (:mod:`h5ml.reader.imagecodec`: 8-bit images only, the first
frame of a multi-frame file, EXIF orientation not applied). A file that does
not decode whole (truncated, corrupt, not an image at all despite its
extension, 16-bit pixels in dense or ragged mode) stops the conversion with
:class:`h5ml.IngestError` naming it, or is skipped and recorded with
``on_error="skip"`` (:data:`h5ml.ingest.SKIPPED_ATTR`).
"""

from __future__ import annotations

import functools
import io
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal

import numpy as np
import numpy.typing as npt

from h5ml import spec
from h5ml.errors import EncodingError, IngestError
from h5ml.ingest.arrays import SPLIT_SUFFIXES
from h5ml.ingest.pipeline import (
    ID_FEATURE,
    DecodeError,
    IngestReport,
    OnError,
    Skipped,
    SourceItem,
    check_output,
    conversion_metadata,
    ingest,
    natural_key,
)
from h5ml.ingest.splitting import assign_splits
from h5ml.model.values import FeatureSpec, text_problem
from h5ml.reader.imagecodec import (
    COLORS,
    IMAGE_FORMATS,
    IMAGE_MEDIA_TYPES,
    SNIFF_BYTES,
    convert_image,
    image_to_array,
    pillow_reason,
    sniff_image_format,
)

if TYPE_CHECKING:
    from PIL import Image

__all__ = [
    "IMAGE_EXTENSIONS",
    "FolderLayout",
    "ImageMode",
    "Resample",
    "ResizeMode",
    "convert_image_folder",
    "parse_size",
]

#: How images are stored: decoded at one size, decoded at their own sizes, or as the files' bytes.
ImageMode = Literal["dense", "ragged", "bytes"]
#: How ``mode="dense"`` fits an image to ``size``.
ResizeMode = Literal["stretch", "crop", "pad"]
#: Pillow's resampling filter used when an image is resized.
Resample = Literal["nearest", "bilinear", "bicubic", "lanczos"]
#: How the folder is read: ``ROOT/<split>/<class>/<file>``, ``ROOT/<class>/<file>``, or decided from the tree.
FolderLayout = Literal["auto", "splits", "classes"]

#: File extensions (lower case) read as images; other files are ignored.
IMAGE_EXTENSIONS: Final = frozenset({".png", ".jpg", ".jpeg", ".bmp", ".gif", ".tif", ".tiff", ".webp"})
_MODES: Final = ("dense", "ragged", "bytes")
_RESIZES: Final = ("stretch", "crop", "pad")
_RESAMPLES: Final = ("nearest", "bilinear", "bicubic", "lanczos")
_LAYOUTS: Final = ("auto", "splits", "classes")
_CHANNELS: Final = {"RGB": 3, "RGBA": 4, "L": 1, "LA": 2}
#: Problems listed in one IngestError message.
_LISTED: Final = 5


@dataclass(frozen=True)
class _Found:
    """An image file of the tree: the split it goes to ("" before split_ratios), its class, path and id."""

    split: str
    class_name: str
    path: Path
    sample_id: str


# --------------------------------------------------------------------------
# public entry point


def convert_image_folder(
    root: str | os.PathLike[str],
    output: str | os.PathLike[str],
    *,
    mode: ImageMode = "dense",
    size: Sequence[int] | None = None,
    resize: ResizeMode = "stretch",
    color: str = "RGB",
    resample: Resample = "bilinear",
    layout: FolderLayout = "auto",
    split_ratios: Mapping[str, float] | None = None,
    metadata: Mapping[str, Any] | None = None,
    compression: str | None = None,
    shuffle: bool = False,
    seed: int | None = None,
    workers: int = 1,
    processes: bool = False,
    on_error: OnError = "stop",
    progress: bool | None = None,
    overwrite: bool = False,
) -> IngestReport:
    """Convert an image folder (torchvision ``ImageFolder`` layout) to an h5ml file (§6.2, §6.3, §6.5, §6.6).

    See the module documentation for the folder layouts, the files read and
    ignored, and the features written (``image``, ``label``, ``id``).

    Parameters
    ----------
    root
        The folder: ``ROOT/<split>/<class>/<file>`` or ``ROOT/<class>/<file>``.
    output
        The h5ml file to write (refused if it exists, unless ``overwrite``).
    mode
        ``"dense"``: uint8 ``(N, H, W, C)`` at ``size`` (§6.2); ``"ragged"``:
        uint8 ``(H, W, C)`` at each image's own size, with ``shapes`` (§6.3);
        ``"bytes"``: the files' bytes unchanged, with ``media_type`` when all
        share one format (§6.6).
    size
        ``(W, H)`` in pixels, both >= 1, as Pillow gives sizes: required by
        ``"dense"``, refused by the other modes (which keep sizes).
    resize
        ``"dense"``: ``"stretch"``, ``"crop"`` (scale to cover, cut the
        centre) or ``"pad"`` (scale to fit, centre on zeros).
    color
        ``"RGB"`` (C = 3, the default), ``"RGBA"`` (4), ``"L"`` (1), ``"LA"``
        (2), or ``"keep"`` (each file's own channels; ragged only, as dense
        samples share one C). Not used by ``"bytes"``: give it to
        :func:`h5ml.reader.imagecodec.decode_image` when reading.
    resample
        Pillow's filter for resizing: ``"nearest"``, ``"bilinear"`` (the
        default), ``"bicubic"`` or ``"lanczos"``.
    layout
        ``"auto"`` (decided from the tree, see the module documentation),
        ``"splits"`` or ``"classes"``.
    split_ratios
        Without a split level: split name -> fraction, adding up to 1, such as
        ``{"train": 0.8, "test": 0.2}``; every class is cut by these
        fractions (stratified). ``None``: every sample goes to ``train``.
    metadata
        Root metadata (§4.2) over the defaults of
        :func:`h5ml.ingest.conversion_metadata` (source, description,
        ``license="NOASSERTION"``).
    compression
        ``"gzip"`` or ``None``, as :class:`h5ml.Writer`.
    shuffle, seed
        Store each split in a seeded random order, the seed recorded (§7.6).
        ``seed`` (default 0) also seeds ``split_ratios``.
    workers
        Threads (or processes, with ``processes``) that decode files;
        ``<= 1`` decodes in this thread. Pillow releases the GIL while it
        decodes, so threads use every core without pickling samples.
    processes
        Decode in a pool of worker processes (:mod:`concurrent.futures`,
        ``forkserver`` where available) instead of threads.
    on_error
        ``"stop"`` (default): the first bad file raises
        :class:`h5ml.IngestError` and the output is left as it was.
        ``"skip"``: bad files are left out and recorded in the report and
        the root attribute :data:`h5ml.ingest.SKIPPED_ATTR`.
    progress
        Progress bar on stderr: True, False, or None for "when stderr is a terminal".
    overwrite
        Replace an existing output file.

    Returns
    -------
    IngestReport
        Samples written per split, skipped files with their reasons, time taken.

    Raises
    ------
    ValueError
        If an option is invalid: an unknown ``mode``, ``resize``, ``color``,
        ``resample`` or ``layout``; ``size`` missing in dense mode, given in
        another mode, or not two integers >= 1; ``color="keep"`` in dense
        mode; invalid ``split_ratios``, or ``split_ratios`` for a tree that
        has split folders.
    NotADirectoryError
        If ``root`` is not a folder.
    IngestError
        If the tree holds no image file, a class or split folder name cannot
        be stored (not valid UTF-8, not a valid split name, two folders for
        one split), or (``on_error="stop"``) a file is bad: outside a class
        folder, with a path that is not UTF-8, unreadable, not an image of
        its kind, truncated or corrupt. The message names the file(s) and
        says what to do; the output is left as it was.
    FileExistsError, IsADirectoryError, FileNotFoundError
        If the output path exists (without ``overwrite``), is a folder, or its
        folder does not exist.
    """
    fit = _checked_options(mode, size, resize, color, resample, layout, on_error)
    source = Path(root)
    if not source.is_dir():
        raise NotADirectoryError(
            f"{_shown(source)}: not a folder; give the root of an image folder tree (ROOT/<class>/<file>)"
        )
    check_output(output, overwrite)
    if split_ratios is not None:
        assign_splits(0, split_ratios, 0)  # checks the ratios before the folder is listed
        for name in split_ratios:
            if not isinstance(name, str) or not spec.is_valid_name(name):
                raise ValueError(f"split_ratios: {name!r} is not a valid split name (§5.1), such as 'train'")
    found, problems, classes, has_splits = _scan(source, layout)
    if split_ratios is not None and has_splits:
        raise ValueError(
            f"{_shown(source)}: the folder already has split folders ({sorted({f.split for f in found})}); drop "
            "split_ratios (--split), or pass layout='classes' if its folders are classes"
        )
    media_type: str | None = None
    if mode == "bytes":
        formats, bad = _sniff_all(found)
        problems += bad
        found = [f for f in found if f.path in formats]
        kinds = {formats[f.path] for f in found}
        media_type = IMAGE_MEDIA_TYPES[kinds.pop()] if len(kinds) == 1 else None
    skipped = _settle(problems, on_error, output)
    if not found:
        raise IngestError(
            f"{_shown(source)}: no image file to convert ({', '.join(sorted(IMAGE_EXTENSIONS))}, at "
            "ROOT/<class>/<file> or ROOT/<split>/<class>/<file>)"
            + (f"; {len(skipped)} bad file(s) were skipped" if skipped else ""),
            path=_shown(source),
        )
    splits = _items(found, split_ratios, 0 if seed is None else seed, classes)
    decode = functools.partial(_decode_item, mode=mode, size=fit, resize=resize, color=color, resample=resample)
    return ingest(
        output,
        splits,
        decode,
        metadata=conversion_metadata("image folder", _shown(source), metadata),
        features=_features(mode, classes, fit, resize, color, resample, media_type),
        compression=compression,
        shuffle=shuffle,
        seed=seed,
        workers=workers,
        processes=processes,
        on_error=on_error,
        progress=progress,
        skipped=skipped,
        overwrite=overwrite,
    )


# --------------------------------------------------------------------------
# options


def parse_size(text: str) -> tuple[int, int]:
    """Parse the command-line form of ``size``: ``"224x160"`` (width x height) or ``"224"`` (a square).

    Parameters
    ----------
    text
        ``"<W>x<H>"`` (``x`` or ``X``, spaces allowed around the numbers) or ``"<N>"``, in pixels.

    Returns
    -------
    tuple of int
        ``(W, H)``, both >= 1.

    Raises
    ------
    ValueError
        If the text is not of that form or a number is < 1.
    """
    parts = text.lower().split("x")
    try:
        numbers = [int(p.strip()) for p in parts]
    except ValueError:
        numbers = []
    if len(numbers) not in (1, 2) or min(numbers) < 1:
        raise ValueError(f"size {text!r} is not WIDTHxHEIGHT in pixels (such as 224x224) or one number for a square")
    return (numbers[0], numbers[-1])


def _checked_options(
    mode: str, size: Sequence[int] | None, resize: str, color: str, resample: str, layout: str, on_error: str
) -> tuple[int, int] | None:
    """Check the options; return ``size`` as ``(W, H)`` ints (None outside dense mode)."""
    for name, value, choices in (
        ("mode", mode, _MODES),
        ("resize", resize, _RESIZES),
        ("color", color, COLORS),
        ("resample", resample, _RESAMPLES),
        ("layout", layout, _LAYOUTS),
        ("on_error", on_error, ("stop", "skip")),
    ):
        if value not in choices:
            raise ValueError(f"{name} must be one of {list(choices)}, got {value!r}")
    if mode != "dense":
        if size is not None:
            raise ValueError(f"size={size!r} applies to mode='dense' only: mode={mode!r} keeps each image's own size")
        return None
    if size is None:
        raise ValueError(
            "mode='dense' stores every image at one size: pass size=(W, H) (--size WxH), or use mode='ragged' to "
            "keep each image's own size"
        )
    if color == "keep":
        raise ValueError(
            "color='keep' gives images different channel counts, which dense samples cannot have: choose "
            "color='RGB', 'RGBA', 'L' or 'LA', or use mode='ragged'"
        )
    values = tuple(size)
    if len(values) != 2 or not all(
        isinstance(v, (int, np.integer)) and not isinstance(v, bool) and v >= 1 for v in values
    ):
        raise ValueError(f"size must be (W, H), two integers >= 1, got {size!r}")
    return int(values[0]), int(values[1])


# --------------------------------------------------------------------------
# the tree


def _listing(folder: Path) -> tuple[list[Path], list[Path]]:
    """The visible sub-folders and image files of a folder, sorted by name."""
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError as exc:
        raise IngestError(
            f"{_shown(folder)}: cannot list the folder ({exc.strerror or exc}); check its permissions",
            path=_shown(folder),
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


def _shown(path: Path | str) -> str:
    """A path as text that any terminal and UTF-8 can hold: bytes that are not UTF-8 are shown as ``\\xe9``."""
    return os.fsencode(path).decode("utf-8", "backslashreplace")


def _unusable_name(name: str, kind: str, folder: Path, advice: str) -> None:
    """Refuse a class or split folder name that cannot be stored (§3.4, §5.1)."""
    problem = text_problem(name)
    if problem:
        problem += " (the folder name's bytes are not valid UTF-8)" if "surrogate" in problem else ""
    elif kind == "split" and not spec.is_valid_name(name):
        problem = "is not a valid split name (§5.1: no leading '_' or whitespace, at most 255 bytes)"
    if problem:
        raise IngestError(f"{_shown(folder)}: the {kind} folder name {problem}; {advice}", path=_shown(folder))


def _scan(root: Path, layout: str) -> tuple[list[_Found], list[Skipped], list[str], bool]:
    """List the tree: image files with their split and class, bad files, sorted class names, whether it has splits."""
    top_dirs, top_files = _listing(root)
    listings = {d: _listing(d) for d in top_dirs}
    if layout == "auto":
        shaped = all(dirs and not files for dirs, files in listings.values())
        layout = "splits" if top_dirs and shaped else "classes"
    problems = [Skipped(_shown(p), "the image is not in a class folder (ROOT/<class>/<file>)") for p in top_files]
    class_dirs: list[tuple[str, Path]] = []
    if layout == "splits":
        names: dict[str, Path] = {}
        for folder in top_dirs:
            name = SPLIT_SUFFIXES.get(folder.name, folder.name)
            _unusable_name(name, "split", folder, "rename the folder, or pass layout='classes' if it is a class")
            if name in names:
                raise IngestError(
                    f"{_shown(root)}: the folders {names[name].name!r} and {folder.name!r} are both the split "
                    f"{name!r}; merge or rename one",
                    path=_shown(folder),
                )
            names[name] = folder
            dirs, files = listings[folder]
            problems += [
                Skipped(_shown(p), "the image is not in a class folder (ROOT/<split>/<class>/<file>)") for p in files
            ]
            class_dirs += [(name, d) for d in dirs]
    else:
        class_dirs = [("", d) for d in top_dirs]
    found: list[_Found] = []
    for split, folder in class_dirs:
        files = _class_files(folder)
        if files:
            _unusable_name(folder.name, "class", folder, "rename the folder")
        for path in files:
            sample_id = path.relative_to(root).as_posix()
            problem = text_problem(sample_id)
            if problem:
                problem += " (the file name's bytes are not valid UTF-8)" if "surrogate" in problem else ""
                problems.append(Skipped(_shown(path), f"its path {problem}; rename the file"))
                continue
            found.append(_Found(split, folder.name, path, sample_id))
    classes = sorted({f.class_name for f in found})
    return found, problems, classes, layout == "splits"


def _sniff_all(found: Sequence[_Found]) -> tuple[dict[Path, str], list[Skipped]]:
    """The format of each file from its signature (bytes mode's media type); unreadable or unknown ones are bad."""
    formats: dict[Path, str] = {}
    bad: list[Skipped] = []
    for item in found:
        try:
            with open(item.path, "rb") as stream:
                head = stream.read(SNIFF_BYTES)
        except OSError as exc:
            bad.append(Skipped(_shown(item.path), f"cannot read it: {exc.strerror or exc}"))
            continue
        fmt = sniff_image_format(head)
        if fmt is None:
            bad.append(Skipped(_shown(item.path), _not_an_image(head)))
        else:
            formats[item.path] = fmt
    return formats, bad


def _not_an_image(head: bytes) -> str:
    return f"not a {', '.join(IMAGE_FORMATS)} file: it starts with {head!r}"


def _settle(problems: list[Skipped], on_error: str, output: str | os.PathLike[str]) -> list[Skipped]:
    """Stop on problems found while listing (``on_error="stop"``), or return them to be recorded as skipped."""
    if not problems or on_error == "skip":
        return problems
    listed = "; ".join(f"{p.path}: {p.reason}" for p in problems[:_LISTED])
    more = f"; and {len(problems) - _LISTED} more" if len(problems) > _LISTED else ""
    raise IngestError(
        f"{listed}{more}. Nothing was written to {os.fspath(output)}. Fix, move or remove "
        f"{'that file' if len(problems) == 1 else 'those files'}, or skip bad files with on_error='skip' "
        "(--on-error skip)",
        path=problems[0].path,
    )


def _items(
    found: Sequence[_Found], ratios: Mapping[str, float] | None, seed: int, classes: Sequence[str]
) -> dict[str, list[SourceItem]]:
    """Split -> its items in the natural order of their ids; ``ratios`` cut a tree without splits, by class."""
    ordered = sorted(found, key=lambda f: natural_key(f.sample_id))
    if ratios is not None:
        index = {name: k for k, name in enumerate(classes)}
        codes = [index[f.class_name] for f in ordered]
        names: list[str] = assign_splits(len(ordered), ratios, seed, labels=codes)
        order = list(ratios)
    else:
        names = [f.split or "train" for f in ordered]
        present = set(names)
        order = [n for n in spec.STANDARD_SPLITS if n in present] + sorted(present - set(spec.STANDARD_SPLITS))
    splits: dict[str, list[SourceItem]] = {name: [] for name in order}
    for name, f in zip(names, ordered, strict=True):
        splits[name].append(SourceItem(name, f.sample_id, (("image", str(f.path)), ("label", f.class_name))))
    return {name: items for name, items in splits.items() if items}


def _features(
    mode: str,
    classes: Sequence[str],
    size: tuple[int, int] | None,
    resize: str,
    color: str,
    resample: str,
    media_type: str | None,
) -> dict[str, FeatureSpec]:
    """The §6.1 options of ``image``, ``label`` and ``id``."""
    if mode == "dense":
        assert size is not None
        width, height = size
        image = FeatureSpec(
            encoding="dense",
            dtype=np.uint8,
            role="input",
            description=(
                f"Image pixels, uint8 (H, W, C) = ({height}, {width}, {_CHANNELS[color]}), colour {color}, "
                f"resized to {width}x{height} by {resize} ({resample})."
            ),
        )
    elif mode == "ragged":
        image = FeatureSpec(
            encoding="ragged",
            dtype=np.uint8,
            sample_ndim=3,
            role="input",
            description=f"Image pixels at each file's size, uint8 (H, W, C), colour {color}; shapes gives (H, W, C).",
        )
    else:
        image = FeatureSpec(
            encoding="bytes",
            role="input",
            media_type=media_type,
            description="The image files as they were; decode a sample with h5ml.reader.imagecodec.decode_image.",
        )
    return {
        "image": image,
        "label": FeatureSpec(
            encoding="categorical",
            class_names=list(classes),
            role="target",
            description="The class: the name of the image's class folder.",
        ),
        ID_FEATURE: FeatureSpec(
            encoding="string", role="metadata", description="The image file's path relative to the source folder."
        ),
    }


# --------------------------------------------------------------------------
# decoding (in worker processes)


def _decode_item(
    item: SourceItem, *, mode: str, size: tuple[int, int] | None, resize: str, color: str, resample: str
) -> dict[str, Any]:
    """One sample's values: ``image`` (array or the file's bytes), ``label`` (class name), ``id``.

    Raises
    ------
    DecodeError
        If the file cannot be read or is not a whole image of its format.
    """
    parts = dict(item.parts)
    path = parts["image"]
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise DecodeError(_shown(path), f"cannot read it: {exc.strerror or exc}") from exc
    image: bytes | npt.NDArray[np.uint8]
    if mode == "bytes":
        _check_whole(data, path)
        image = data
    else:
        image = _pixels(data, path, size, resize, color, resample)
    return {"image": image, "label": parts["label"], ID_FEATURE: item.sample_id}


def _check_whole(data: bytes, path: str) -> None:
    """Decode the file's bytes once (bytes mode) so that a truncated or corrupt file is refused now."""
    from PIL import Image

    fmt = sniff_image_format(data[:SNIFF_BYTES])
    if fmt is None:
        raise DecodeError(_shown(path), _not_an_image(data[:SNIFF_BYTES]))
    try:
        with Image.open(io.BytesIO(data), formats=(fmt,)) as image:
            image.load()
    except Exception as exc:  # Pillow raises many types (OSError, SyntaxError, ValueError, ...) for bad data
        raise DecodeError(_shown(path), f"a {fmt} file that does not decode: {pillow_reason(exc)}") from exc


def _pixels(
    data: bytes, path: str, size: tuple[int, int] | None, resize: str, color: str, resample: str
) -> npt.NDArray[np.uint8]:
    """Decode, convert to ``color`` and (dense) fit to ``size``: uint8 ``(H, W, C)``."""
    from PIL import Image

    try:
        with Image.open(io.BytesIO(data), formats=IMAGE_FORMATS) as image:
            image.load()
            converted = convert_image(image, color)
            if size is not None:
                converted = _fit(converted, size, resize, resample)
            return image_to_array(converted, color)
    except EncodingError as exc:
        raise DecodeError(_shown(path), str(exc)) from exc
    except Exception as exc:  # Pillow raises many types (OSError, SyntaxError, ValueError, ...) for bad data
        fmt = sniff_image_format(data[:SNIFF_BYTES])
        reason = _not_an_image(data[:SNIFF_BYTES]) if fmt is None else f"a {fmt} file that does not decode"
        raise DecodeError(_shown(path), f"{reason}: {pillow_reason(exc)}") from exc


def _fit(image: Image.Image, size: tuple[int, int], resize: str, resample: str) -> Image.Image:
    """Fit a Pillow image to ``size = (W, H)``: stretch, crop (cover, then centre cut) or pad (fit, then centre)."""
    from PIL import Image

    width, height = size
    w, h = image.size
    if (w, h) == (width, height):
        return image
    filt = {
        "nearest": Image.Resampling.NEAREST,
        "bilinear": Image.Resampling.BILINEAR,
        "bicubic": Image.Resampling.BICUBIC,
        "lanczos": Image.Resampling.LANCZOS,
    }[resample]
    if resize == "stretch":
        return image.resize((width, height), filt)
    if resize == "crop":
        scale = max(width / w, height / h)
        sw, sh = max(width, round(w * scale)), max(height, round(h * scale))
        scaled = image if (sw, sh) == (w, h) else image.resize((sw, sh), filt)
        left, top = (sw - width) // 2, (sh - height) // 2
        return scaled.crop((left, top, left + width, top + height))
    scale = min(width / w, height / h)
    sw, sh = min(width, max(1, round(w * scale))), min(height, max(1, round(h * scale)))
    scaled = image if (sw, sh) == (w, h) else image.resize((sw, sh), filt)
    canvas = Image.new(scaled.mode, (width, height))
    canvas.paste(scaled, ((width - sw) // 2, (height - sh) // 2))
    return canvas
