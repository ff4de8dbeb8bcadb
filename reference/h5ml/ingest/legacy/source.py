"""The HDF5 source file: checks, its layout, its root attributes, and the handles the workers read it through (§3.6, §4.7).

:func:`check_source` and :func:`open_source` refuse what is not a readable
HDF5 file; :func:`hard_members` never follows a soft or external link;
:func:`detect_layout` tells the per-sample layout from the arrays layout
(:mod:`h5ml.ingest.legacy`); :func:`root_metadata` keeps the file's root
attributes. Each worker opens the file by path once (:func:`source_file`)
and keeps blocks of rows it read (:data:`BLOCKS`); :func:`close_sources`
closes them when a conversion ends.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final, Literal

import h5py
import numpy as np

from h5ml import spec
from h5ml.errors import IngestError
from h5ml.ingest.output import conversion_metadata

__all__ = [
    "BLOCKS",
    "METADATA_NOTE",
    "PROCESSES_NOTE",
    "SOURCE_LAYOUTS",
    "SourceLayout",
    "check_source",
    "close_sources",
    "detect_layout",
    "hard_members",
    "open_source",
    "root_metadata",
    "source_file",
    "value_kind",
]

#: The layouts of an HDF5 source that :func:`detect_layout` recognises (``source_layout``, ``--source-layout``).
SourceLayout = Literal["per-sample", "arrays"]
#: The values of :data:`SourceLayout`.
SOURCE_LAYOUTS: Final = ("per-sample", "arrays")
#: What the HDF5 converters add to the shared paragraphs of ``metadata`` and ``processes`` (:mod:`h5ml.ingest.docstrings`).
METADATA_NOTE: Final = "It goes over the source's root attributes (:mod:`h5ml.ingest.legacy`)."
PROCESSES_NOTE: Final = (
    "HDF5 sources want processes: h5py lets one thread at a time into HDF5, so threads read no faster than one."
)


def check_source(source: str | os.PathLike[str]) -> Path:
    """The source's path, after refusing a missing file, a folder, or a file without the HDF5 signature.

    Raises
    ------
    FileNotFoundError
        If ``source`` does not exist.
    h5ml.IngestError
        If it is not a regular file or not an HDF5 file.
    """
    path = Path(source)
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file")
    if not path.is_file():
        raise IngestError(f"{path}: not a regular file; give the path of an HDF5 file", path=str(path))
    if not h5py.is_hdf5(path):
        raise IngestError(
            f"{path}: not an HDF5 file (it has no HDF5 signature); give an .h5/.hdf5 file written by h5py or HDF5",
            path=str(path),
        )
    return path


def hard_members(group: h5py.Group, source: Path) -> list[tuple[str, Any]]:
    """The members of ``group`` as ``(name, object)``, refusing soft and external links (never followed, §3.6).

    Raises
    ------
    h5ml.IngestError
        Naming the first link and what to do.
    """
    out: list[tuple[str, Any]] = []
    for name in group:
        link = group.get(name, getlink=True)
        if not isinstance(link, h5py.HardLink):
            where = f"{group.name.rstrip('/')}/{name}"
            raise IngestError(
                f"{source}:{where} is a {type(link).__name__}; links are not followed (they may point outside the "
                "file, §3.6): replace it by the object it points to",
                path=str(source),
                hdf5_path=where,
            )
        out.append((name, group[name]))
    return out


def open_source(source: Path) -> h5py.File:
    """The source opened read-only.

    Raises
    ------
    h5ml.IngestError
        If HDF5 cannot open it.
    """
    try:
        return h5py.File(source, "r")
    except OSError as exc:
        raise IngestError(f"{source}: the HDF5 file cannot be opened ({exc})", path=str(source)) from None


def value_kind(dtype: np.dtype[Any]) -> str | None:
    """``"string"``, ``"numeric"`` (booleans, integers, floats), or None for HDF5 types h5ml does not store (§3.2)."""
    if h5py.check_string_dtype(dtype) is not None:
        return "string"
    if dtype.kind in "biuf":
        return "numeric"
    return None


def detect_layout(source: str | os.PathLike[str]) -> SourceLayout:
    """Tell which layout an HDF5 file has: ``"per-sample"`` (groups of datasets) or ``"arrays"`` (root datasets).

    Parameters
    ----------
    source
        The HDF5 file.

    Returns
    -------
    str
        ``"per-sample"`` or ``"arrays"`` (:data:`SourceLayout`).

    Raises
    ------
    FileNotFoundError
        If ``source`` does not exist.
    IngestError
        If it is not an HDF5 file, is already an h5ml file, is empty, or mixes
        root groups and datasets: the message says what the root holds and
        what each layout looks like.
    """
    path = check_source(source)
    with open_source(path) as f:
        if f.attrs.get("format") in ("h5ml", b"h5ml"):
            raise IngestError(
                f"{path}: already an h5ml file (root attribute format = 'h5ml'); nothing to convert: "
                "check it with `h5ml validate`",
                path=str(path),
            )
        members = hard_members(f, path)
        groups = sorted(n for n, obj in members if isinstance(obj, h5py.Group))
        datasets = sorted(n for n, obj in members if isinstance(obj, h5py.Dataset))
    if groups and not datasets:
        return "per-sample"
    if datasets and not groups:
        return "arrays"
    found = f"groups {groups[:8]} and datasets {datasets[:8]}" if members else "nothing"
    raise IngestError(
        f"{path}: no known layout: the root holds {found}. Recognised are the per-sample layout (root groups such "
        "as /train_data and /train_label holding one dataset per sample, named by its id) and the arrays layout "
        "(root datasets such as /x_train, /y_train, /x_valid, /y_valid with the samples along the first axis); "
        "rearrange the file into one of them, or read it with h5py and use h5ml.ingest.convert_arrays",
        path=str(path),
    )


def _plain(value: Any) -> Any:
    """An HDF5 attribute value -> str, int, float, list of str or int, or JSON text (§4.7)."""
    if isinstance(value, (bytes, np.bytes_)):
        return bytes(value).decode("utf-8", "replace")
    if isinstance(value, (bool, np.bool_)):
        return int(value)
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, (str, int, float)):
        return value
    if isinstance(value, np.ndarray):
        items = [_plain(v) for v in value.ravel().tolist()] if value.ndim <= 1 else None
        if items is not None and (all(isinstance(v, str) for v in items) or all(type(v) is int for v in items)):
            return items
        return json.dumps(value.tolist(), default=str)
    return json.dumps(value, default=str)


def root_metadata(f: h5py.File, source: Path, given: Mapping[str, Any] | None, output: Path) -> dict[str, Any]:
    """Root metadata of the output: the source's attributes (see :mod:`h5ml.ingest.legacy`), then ``given``.

    Parameters
    ----------
    f
        The open source.
    source
        Its path.
    given
        The user's ``metadata``.
    output
        The file written (its stem is the default ``name``).

    Returns
    -------
    dict
        The root metadata, as :func:`h5ml.ingest.conversion_metadata` completes it.
    """
    carried: dict[str, Any] = {}
    for key in f.attrs:
        try:
            value = _plain(f.attrs[key])
        except (OSError, TypeError, ValueError):  # an attribute h5py cannot read: keep a note, not the value
            value = "(unreadable HDF5 attribute)"
        if key == "description" and isinstance(value, str):
            carried[key] = value
        elif key in spec.ROOT_ATTRS or key.startswith(spec.RESERVED_PREFIX) or not key.strip():
            carried[f"source:{key}"] = value
        else:
            carried[key] = value
    return conversion_metadata("HDF5 file", source, {**carried, **(given or {})}, output)


# --------------------------------------------------------------------------
# a per-process cache of open source files (each worker opens the file by path)

_HANDLES: dict[tuple[str, int], h5py.File] = {}
_HANDLES_PID: list[int] = [os.getpid()]
#: Guards the caches when the workers are threads.
_LOCK = threading.Lock()
#: (source, dataset path) -> (first row, stop row, the rows) of the block last read (arrays layout).
BLOCKS: dict[tuple[str, str], tuple[int, int, np.ndarray]] = {}


def source_file(path: str, cache_bytes: int = 0) -> h5py.File:
    """The source opened read-only in this process (opened on first use, kept for the next samples).

    Parameters
    ----------
    path
        The source file.
    cache_bytes
        The HDF5 chunk cache (``rdcc_nbytes``); 0: h5py's default.

    Returns
    -------
    h5py.File
        The open file, shared by this process's threads.
    """
    with _LOCK:
        if _HANDLES_PID[0] != os.getpid():  # a forked child: the parent's handles are not ours to use
            _HANDLES.clear()
            _HANDLES_PID[0] = os.getpid()
        key = (path, cache_bytes)
        f = _HANDLES.get(key)
        if f is None or not f.id.valid:
            f = h5py.File(path, "r", **({"rdcc_nbytes": cache_bytes} if cache_bytes else {}))
            _HANDLES[key] = f
        return f


def close_sources() -> None:
    """Close the files this process opened (called when a conversion ends; workers exit with theirs)."""
    with _LOCK:
        for f in _HANDLES.values():
            if f.id.valid:
                f.close()
        _HANDLES.clear()
        BLOCKS.clear()
