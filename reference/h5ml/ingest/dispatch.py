"""Which converter a source needs (``h5ml convert SOURCE OUTPUT``), and the call to it.

:func:`detect_kind` looks at the source; :func:`convert` calls the matching
``convert_*`` function with the shared options (:class:`h5ml.ingest.ConvertOptions`,
which every kind takes) and the kind's own (:data:`OPTIONS`), and refuses,
with a clear message, options that the kind does not take. Each converter's
package is imported only when it is used, and the third-party packages it
needs (soundfile, Pillow, pandas, datasets) are checked first, so that a
missing one says which extra to install.

=================  ==========================================================
kind               source
=================  ==========================================================
``arrays``         a ``.npz`` or ``.npy`` file (:mod:`h5ml.ingest.npz`)
``audio``          a folder of ``.wav``/``.flac``/``.ogg`` files (:mod:`h5ml.ingest.audio`)
``images``         an ImageFolder tree of images (:mod:`h5ml.ingest.images`)
``hdf5``           HDF5 and MATLAB v7.3 files, shard lists (:mod:`h5ml.ingest.hdf5`), through a plan
``table``          a ``.csv``, ``.tsv`` or ``.parquet`` file (:mod:`h5ml.ingest.tables`)
``hf``             a Hugging Face dataset saved with ``save_to_disk`` (:mod:`h5ml.ingest.hf`)
``croissant``      a Croissant JSON-LD file (``.json``/``.jsonld`` whose ``conformsTo`` is Croissant),
                   its records read by mlcroissant from local files (:mod:`h5ml.ingest.croissant`)
=================  ==========================================================
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final, Literal

from h5ml import spec
from h5ml.errors import IngestError, ParameterError
from h5ml.ingest.croissant.vocabulary import is_croissant
from h5ml.ingest.options import PIPELINE_OPTIONS, SHARD_OPTIONS, SHARED_OPTIONS, cli_option
from h5ml.ingest.report import IngestReport

__all__ = ["KINDS", "OPTIONS", "SourceKind", "convert", "detect_kind", "detect_kinds"]

SourceKind = Literal["arrays", "audio", "images", "hdf5", "table", "hf", "croissant"]
KINDS: Final[tuple[SourceKind, ...]] = ("arrays", "audio", "images", "hdf5", "table", "hf", "croissant")

_AUDIO: Final = frozenset({".wav", ".flac", ".ogg"})
_IMAGES: Final = frozenset({".png", ".jpg", ".jpeg", ".bmp", ".gif", ".tif", ".tiff", ".webp"})
_TABLES: Final = frozenset({".csv", ".tsv", ".parquet", ".pq"})
_HDF5: Final = frozenset({".h5", ".hdf5", ".he5", ".hdf", ".mat"})
#: Suffixes of text files listing HDF5 shards (PointNet's ``train_files.txt``).
_LISTS: Final = frozenset({".txt", ".lst"})
_HF_MARKERS: Final = ("dataset_dict.json", "dataset_info.json", "state.json")
#: Files looked at to tell an audio folder from an image folder.
_SCAN_LIMIT: Final = 2000

#: Options each kind takes besides the shared ones (:data:`h5ml.ingest.options.SHARED_OPTIONS`).
OPTIONS: Final[Mapping[SourceKind, frozenset[str]]] = {
    "arrays": frozenset({"label", "class_names", "split", "feature"}),
    "audio": frozenset({"sample_rate", "mono", "folder_layout", "split_ratios", *PIPELINE_OPTIONS}),
    "images": frozenset(
        {"mode", "size", "resize", "color", "resample", "folder_layout", "split_ratios", *PIPELINE_OPTIONS}
    ),
    "hdf5": frozenset(
        {
            "label",
            "id_feature",
            "plan",
            "split_name",
            "class_names",
            "class_names_file",
            "allow_external",
            *PIPELINE_OPTIONS,
        }
    ),
    "table": frozenset(
        {
            "label",
            "categorical",
            "strings",
            "split_column",
            "split_ratios",
            "columns",
            "format",
            "delimiter",
            "header",
            "sep",
            "text_encoding",
            "rows_per_read",
            *SHARD_OPTIONS,
        }
    ),
    "hf": frozenset({"images", "audio", "label", "split_ratios", "columns", "splits", "batch_size", *SHARD_OPTIONS}),
    "croissant": frozenset({"record_set", "split", *SHARD_OPTIONS}),
}
#: The pyproject extra that installs what each kind of source needs, and the packages it needs whatever the source.
_EXTRAS: Final[Mapping[SourceKind, tuple[str, tuple[str, ...]]]] = {
    "audio": ("audio", ("soundfile", "soxr")),
    "images": ("images", ("PIL",)),
    "table": ("tables", ("pandas",)),
    "hf": ("hf", ("datasets",)),
    "croissant": ("croissant", ("mlcroissant",)),
}
#: The options ``.npy`` sources take and ``.npz`` ones do not.
_NPY_ONLY: Final = ("split", "feature")


def detect_kind(source: str | os.PathLike[str]) -> SourceKind:
    """Return the kind of ``source`` (see the module table).

    A folder is a Hugging Face dataset when it holds ``dataset_dict.json``,
    ``dataset_info.json`` or ``state.json``; otherwise an audio or an image
    folder by the extensions of the files it holds (the first 2000 met,
    hidden ones skipped), whichever are more numerous. A file goes by its
    suffix, and a file with another suffix that starts with the HDF5
    signature is ``hdf5``; a ``.json``/``.jsonld`` file whose ``conformsTo``
    names Croissant is ``croissant``.

    Parameters
    ----------
    source
        The file or folder to convert.

    Returns
    -------
    str
        One of :data:`KINDS`.

    Raises
    ------
    FileNotFoundError
        If ``source`` does not exist.
    h5ml.IngestError
        If its kind cannot be told: the message lists the kinds and says to
        pass ``--from``.
    """
    path = Path(source)
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file or folder")
    if path.is_dir():
        if any((path / marker).is_file() for marker in _HF_MARKERS):
            return "hf"
        audio = images = seen = 0
        for _folder, dirs, files in os.walk(path):
            dirs[:] = sorted(d for d in dirs if not d.startswith("."))
            for name in files:
                suffix = Path(name).suffix.lower()
                audio += suffix in _AUDIO
                images += suffix in _IMAGES
                seen += 1
            if seen >= _SCAN_LIMIT:
                break
        if audio or images:
            return "audio" if audio >= images else "images"
        raise IngestError(
            f"{path}: the folder holds no audio (.wav, .flac, .ogg) or image files, and no Hugging Face dataset; "
            f"pass --from with one of {', '.join(KINDS)}",
            path=str(path),
        )
    suffix = path.suffix.lower()
    if suffix in (".npz", ".npy"):
        return "arrays"
    if suffix in _TABLES:
        return "table"
    if suffix in _LISTS and _lists_hdf5(path):
        return "hdf5"
    if suffix in (".json", ".jsonld") and is_croissant(path):
        return "croissant"
    with path.open("rb") as handle:
        if spec.superblock_version(handle) is not None:
            return "hdf5"
    if suffix == ".mat":
        raise IngestError(
            f"{path}: a MATLAB file older than v7.3 (not HDF5); save it in MATLAB with save(..., '-v7.3'), "
            "or read it with scipy.io.loadmat and convert the arrays",
            path=str(path),
        )
    if suffix in _HDF5:
        return "hdf5"
    raise IngestError(
        f"{path}: cannot tell what {suffix or 'this file'} holds; pass --from with one of {', '.join(KINDS)}",
        path=str(path),
    )


def _lists_hdf5(path: Path) -> bool:
    """Whether a text file's first entry names an HDF5 file (beside the list, or as written): a shard list."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (UnicodeDecodeError, OSError):
        return False
    entry = next((line.strip() for line in lines if line.strip() and not line.strip().startswith("#")), None)
    if entry is None:
        return False
    given = Path(entry)
    for candidate in [given] if given.is_absolute() else [path.parent / given, path.parent / given.name]:
        if candidate.is_file():
            with candidate.open("rb") as handle:
                return spec.superblock_version(handle) is not None
    return False


def _not_applicable(kind: str, source: Any, names: list[str]) -> ParameterError:
    shown = ", ".join(f"{name} ({cli_option(name) or 'Python only'})" for name in names)
    where = ", ".join(os.fspath(s) for s in source) if isinstance(source, list) else os.fspath(source)
    hint = ""
    if kind == "hdf5" and "split_ratios" in names:
        hint = (
            "; an HDF5 source's splits come from its plan: name a split with split_name=NAME (--split-name NAME), or give "
            "each split its rows (start, stop) in the plan (--plan -o plan.json, then --plan-file)"
        )
    return ParameterError(f"{shown} do(es) not apply to a source of kind {kind!r} ({where}){hint}")


def _missing_extra(kind: SourceKind, exc: ModuleNotFoundError) -> ModuleNotFoundError | None:
    """The error that says which extra installs the package ``exc`` misses, or None when it is not an extra's."""
    extra = _EXTRAS.get(kind)
    if extra is None or exc.name is None or exc.name.startswith("h5ml"):
        return None
    return ModuleNotFoundError(
        f"converting a source of kind {kind!r} needs the package {exc.name!r}, which is not installed: "
        f"pip install 'h5ml[{extra[0]}]'",
        name=exc.name,
    )


def _converter(kind: SourceKind, source: str | os.PathLike[str], given: Mapping[str, Any]) -> Callable[..., Any]:
    """The converter of ``kind`` (its package imported now, after its third-party packages)."""
    for package in _EXTRAS.get(kind, ("", ()))[1]:
        importlib.import_module(package)
    if kind == "arrays":
        npz = importlib.import_module("h5ml.ingest.npz")
        if Path(source).suffix.lower() == ".npy":
            return npz.convert_npy  # type: ignore[no-any-return]
        extra = [name for name in _NPY_ONLY if name in given]
        if extra:
            raise ParameterError(
                f"{' and '.join(f'{name} ({cli_option(name)})' for name in extra)} apply to .npy sources only "
                f"(the split and the feature of its one array); {os.fspath(source)} is an .npz archive, whose "
                "array names give them"
            )
        return npz.convert_npz  # type: ignore[no-any-return]
    module, name = {
        "audio": ("h5ml.ingest.audio", "convert_audio_folder"),
        "images": ("h5ml.ingest.images", "convert_image_folder"),
        "hdf5": ("h5ml.ingest.hdf5", "convert_hdf5"),
        "table": ("h5ml.ingest.tables", "convert_table"),
        "hf": ("h5ml.ingest.hf", "convert_huggingface"),
        "croissant": ("h5ml.ingest.croissant", "convert_croissant"),
    }[kind]
    return getattr(importlib.import_module(module), name)  # type: ignore[no-any-return]


def detect_kinds(sources: Sequence[str | os.PathLike[str]]) -> SourceKind:
    """The kind of several sources together: ``hdf5`` when every one is HDF5 (or a shard list), else the one source's.

    Raises
    ------
    FileNotFoundError
        If a source does not exist.
    h5ml.IngestError
        If several sources are not all HDF5 files: only HDF5 files are joined.
    """
    kinds = [detect_kind(s) for s in sources]
    if len(kinds) == 1:
        return kinds[0]
    if set(kinds) != {"hdf5"}:
        listed = ", ".join(f"{os.fspath(s)} ({k})" for s, k in zip(sources, kinds, strict=True))
        raise IngestError(
            f"several sources are joined into one file for HDF5 files only; got {listed}: convert the others one "
            "at a time and join the h5ml files with `h5ml merge`"
        )
    return "hdf5"


def convert(
    kind: SourceKind,
    source: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    output: str | os.PathLike[str],
    **options: Any,
) -> IngestReport:
    """Convert ``source`` of ``kind`` to the h5ml file ``output`` (§4, §5, §6, §7.6).

    Parameters
    ----------
    kind
        One of :data:`KINDS` (see :func:`detect_kind`).
    source, output
        The source (several, for ``hdf5``) and the h5ml file to write.
    **options
        The shared options (:data:`h5ml.ingest.options.SHARED_OPTIONS`:
        ``metadata``, ``compression``, ``level``, ``shuffle``, ``seed``,
        ``workers``, ``processes``, ``on_error``, ``progress``,
        ``overwrite``, ...) and the kind's own (:data:`OPTIONS`); None values
        are left out (the converter's defaults apply).

    Returns
    -------
    IngestReport
        The converter's report.

    Raises
    ------
    h5ml.errors.ParameterError
        If an option does not apply to ``kind`` (the message names it and its
        command-line option), or has a value the converter does not take.
    ModuleNotFoundError
        If a package the kind needs is not installed (the message names the extra to install).
    h5ml.IngestError, h5ml.H5MLError, OSError
        As the converter (the output is left as it was).
    """
    if kind not in KINDS:
        raise ParameterError(f"kind must be one of {list(KINDS)}, got {kind!r} (parameter kind, option --from)")
    given = {key: value for key, value in options.items() if value is not None}
    extra = sorted(set(given) - OPTIONS[kind] - set(SHARED_OPTIONS))
    if extra:
        raise _not_applicable(kind, source, extra)
    if not isinstance(source, (str, os.PathLike)):
        sources = list(source)
        if kind != "hdf5" and len(sources) != 1:
            raise ParameterError(
                f"several sources are joined for HDF5 files only; a source of kind {kind!r} is converted alone "
                "(argument SOURCES)"
            )
        source = sources if kind == "hdf5" else sources[0]
    try:
        first = source if not isinstance(source, list) else (source[0] if source else "")
        converter = _converter(kind, first, given)
        target = os.fspath(source) if kind == "hf" and not isinstance(source, list) else source
        return converter(target, output, **given)  # type: ignore[no-any-return]
    except ModuleNotFoundError as exc:  # an optional dependency of this kind of source
        missing = _missing_extra(kind, exc)
        if missing is None:
            raise
        raise missing from exc
