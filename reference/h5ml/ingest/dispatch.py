"""Which converter a source needs (``h5ml convert SOURCE OUTPUT``), and the call to it.

:func:`detect_kind` looks at the source; :func:`convert` calls the matching
``convert_*`` function with the options that apply to it, and refuses, with
a clear message, options that do not. Each converter's module is imported
only when it is used, so its third-party decoders (soundfile, Pillow, pandas,
datasets) are needed only by the sources that use them.

=================  ==========================================================
kind               source
=================  ==========================================================
``arrays``         a ``.npz`` or ``.npy`` file (:mod:`h5ml.ingest.arrays`)
``audio``          a folder of ``.wav``/``.flac``/``.ogg`` files (:mod:`h5ml.ingest.audio`)
``images``         an ImageFolder tree of images (:mod:`h5ml.ingest.images`)
``hdf5``           an HDF5 file in a tutorial's layout (:mod:`h5ml.ingest.legacy`)
``table``          a ``.csv``, ``.tsv`` or ``.parquet`` file (:mod:`h5ml.ingest.tables`)
``hf``             a Hugging Face dataset saved with ``save_to_disk`` (:mod:`h5ml.ingest.hf`)
=================  ==========================================================
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final, Literal

__all__ = ["KINDS", "OPTIONS", "SourceKind", "convert", "detect_kind"]

SourceKind = Literal["arrays", "audio", "images", "hdf5", "table", "hf"]
KINDS: Final[tuple[SourceKind, ...]] = ("arrays", "audio", "images", "hdf5", "table", "hf")

_AUDIO: Final = frozenset({".wav", ".flac", ".ogg"})
_IMAGES: Final = frozenset({".png", ".jpg", ".jpeg", ".bmp", ".gif", ".tif", ".tiff", ".webp"})
_TABLES: Final = frozenset({".csv", ".tsv", ".parquet", ".pq"})
_HDF5: Final = frozenset({".h5", ".hdf5", ".he5", ".hdf"})
_HF_MARKERS: Final = ("dataset_dict.json", "dataset_info.json", "state.json")
#: Files looked at to tell an audio folder from an image folder.
_SCAN_LIMIT: Final = 2000

#: Options each kind takes besides the shared ones (metadata, compression, shuffle, seed, overwrite).
OPTIONS: Final[Mapping[SourceKind, frozenset[str]]] = {
    "arrays": frozenset({"label", "class_names", "split", "feature", "level"}),
    "audio": frozenset({"sample_rate", "mono", "split_ratios", "workers", "processes", "on_error", "progress"}),
    "images": frozenset(
        {
            "mode",
            "size",
            "resize",
            "color",
            "resample",
            "layout",
            "split_ratios",
            "workers",
            "processes",
            "on_error",
            "progress",
        }
    ),
    "hdf5": frozenset({"layout", "label", "workers", "on_error", "progress"}),
    "table": frozenset(
        {
            "label",
            "categorical",
            "strings",
            "split_column",
            "split_ratios",
            "columns",
            "workers",
            "on_error",
            "progress",
        }
    ),
    "hf": frozenset({"images", "label", "split_ratios", "columns", "workers", "on_error", "progress"}),
}


def detect_kind(source: str | os.PathLike[str]) -> SourceKind:
    """Return the kind of ``source`` (see the module table).

    A folder is a Hugging Face dataset when it holds ``dataset_dict.json``,
    ``dataset_info.json`` or ``state.json``; otherwise an audio or an image
    folder by the extensions of the files it holds (the first 2000 met,
    hidden ones skipped), whichever are more numerous. A file goes by its
    suffix, and a file with another suffix that starts with the HDF5
    signature is ``hdf5``.

    Raises
    ------
    FileNotFoundError
        If ``source`` does not exist.
    ValueError
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
        raise ValueError(
            f"{path}: the folder holds no audio (.wav, .flac, .ogg) or image files, and no Hugging Face dataset; "
            f"pass --from with one of {', '.join(KINDS)}"
        )
    suffix = path.suffix.lower()
    if suffix in (".npz", ".npy"):
        return "arrays"
    if suffix in _TABLES:
        return "table"
    if suffix in _HDF5:
        return "hdf5"
    with path.open("rb") as handle:
        if handle.read(8) == b"\x89HDF\r\n\x1a\n":
            return "hdf5"
    raise ValueError(
        f"{path}: cannot tell what {suffix or 'this file'} holds; pass --from with one of {', '.join(KINDS)}"
    )


def convert(
    kind: SourceKind,
    source: str | os.PathLike[str],
    output: str | os.PathLike[str],
    *,
    metadata: Mapping[str, Any] | None = None,
    compression: str | None = None,
    shuffle: bool = False,
    seed: int | None = None,
    overwrite: bool = False,
    **options: Any,
) -> Any:
    """Convert ``source`` of ``kind`` to the h5ml file ``output`` (§4, §5, §6, §7.6).

    Parameters
    ----------
    kind
        One of :data:`KINDS` (see :func:`detect_kind`).
    source, output
        The source and the h5ml file to write.
    metadata, compression, shuffle, seed, overwrite
        Shared by every kind.
    **options
        The kind's own options (:data:`OPTIONS`); None values are left out.

    Returns
    -------
    h5ml.ingest.IngestReport or pathlib.Path
        The converter's report (the path written, for ``arrays``).

    Raises
    ------
    ValueError
        If an option does not apply to ``kind``.
    h5ml.IngestError, h5ml.H5MLError, OSError
        As the converter (the output is left as it was).
    """
    given = {key: value for key, value in options.items() if value is not None}
    extra = sorted(set(given) - OPTIONS[kind])
    if extra:
        names = ", ".join(f"{key} ({_CLI_NAMES.get(key, '--' + key.replace('_', '-'))})" for key in extra)
        raise ValueError(f"{names} do(es) not apply to a source of kind {kind!r} ({source})")
    try:
        shared = {"compression": compression, "shuffle": shuffle, "seed": seed, "overwrite": overwrite}
        return _convert(kind, source, output, metadata, shared, given)
    except ModuleNotFoundError as exc:  # an optional dependency of this kind of source
        extra_name = _EXTRAS.get(kind)
        if extra_name is None or exc.name is None or exc.name.startswith("h5ml"):
            raise
        raise ModuleNotFoundError(
            f"converting a source of kind {kind!r} needs the package {exc.name!r}, which is not installed: "
            f"pip install 'h5ml[{extra_name}]'",
            name=exc.name,
        ) from exc


#: CLI spellings of the options whose name differs from their keyword.
_CLI_NAMES: Final = {"split_ratios": "--split"}
#: The pyproject extra that installs what each kind of source needs.
_EXTRAS: Final = {"audio": "audio", "images": "images", "table": "tables", "hf": "hf"}


def _convert(
    kind: SourceKind,
    source: str | os.PathLike[str],
    output: str | os.PathLike[str],
    metadata: Mapping[str, Any] | None,
    shared: dict[str, Any],
    given: dict[str, Any],
) -> Any:
    """Call the converter of ``kind`` (imported here: each needs its own optional packages)."""
    if kind == "arrays":
        return _arrays(source, output, metadata or {}, shared, given)
    shared["metadata"] = metadata
    if kind == "audio":
        from h5ml.ingest.audio import convert_audio_folder

        return convert_audio_folder(source, output, **shared, **given)
    if kind == "images":
        from h5ml.ingest.images import convert_image_folder

        return convert_image_folder(source, output, **shared, **given)
    if kind == "hdf5":
        from h5ml.ingest.legacy import convert_hdf5

        return convert_hdf5(source, output, **shared, **given)
    if kind == "table":
        from h5ml.ingest.tables import convert_table

        return convert_table(source, output, **shared, **given)
    from h5ml.ingest.hf import convert_huggingface

    return convert_huggingface(os.fspath(source), output, **shared, **given)


def _arrays(
    source: str | os.PathLike[str],
    output: str | os.PathLike[str],
    metadata: Mapping[str, Any],
    shared: dict[str, Any],
    given: dict[str, Any],
) -> Path:
    from h5ml.ingest import arrays as arrays

    options = {
        **shared,
        "name": metadata.get("name"),
        "description": metadata.get("description"),
        "license": metadata.get("license"),
        "label": given.get("label"),
        "class_names": given.get("class_names"),
        "level": given.get("level"),
    }
    if Path(source).suffix.lower() == ".npy":
        return arrays.convert_npy(
            Path(source),
            Path(output),
            split=given.get("split", arrays.DEFAULT_SPLIT),
            feature=given.get("feature"),
            **options,
        )
    if "split" in given or "feature" in given:
        raise ValueError("--split NAME and --feature apply to .npy sources only")
    return arrays.convert_npz(Path(source), Path(output), **options)
