"""The MLCommons Croissant 1.1 JSON-LD of an h5ml file or sharded index: :func:`croissant_metadata`, :func:`export_croissant`.

``h5ml croissant FILE`` writes what catalogues that speak Croissant read: the
card (§4.2), the files, and one ``cr:RecordSet`` per split (§5.1) with one
``cr:Field`` per feature (§5.2, §6). It passes ``mlcroissant validate``.

=====================  ======================================================================
Croissant              from
=====================  ======================================================================
``name``               ``name`` (§4.2)
``description``        ``description``; left out when the file has none
``license``            ``license`` (an SPDX expression, as written)
``citeAs``             ``citation``
``creator``            ``creator``, as an ``sc:Person`` or an ``sc:Organization``: the
                       file's free text cannot tell which, so ``creator_type`` must say
``dateCreated``        ``created``
``datePublished``      ``date_published`` when given (the file does not record it)
``version``            ``version``
``url``                ``homepage``
``keywords``           ``keywords``
``conformsTo``         ``http://mlcommons.org/croissant/1.1``
``distribution``       the file as a ``cr:FileObject`` ``files/<file name>`` (``contentUrl``
                       relative to the JSON-LD's folder, ``encodingFormat``
                       ``application/x-hdf5``, ``sha256`` of its bytes); for a sharded index
                       (§12): the index (``application/json``) and every shard
                       (``files/<path in the index>``) as a FileObject with its sha256, and per
                       split a ``cr:FileSet`` ``shards/<split>`` whose ``includes`` lists that
                       split's shards
``recordSet``          per split a record set ``splits/<split>`` (named ``<split>``) with a
                       Field ``splits/<split>/<feature>`` per feature
                       (:mod:`h5ml.ingest.croissant.vocabulary` gives the data types), and
                       per categorical feature an ``sc:Enumeration`` record set
                       ``classes/<split>/<feature>`` of ``index`` (the code) and ``name``
=====================  ======================================================================

Where each field's values are: Croissant has no way to extract values from
HDF5, so each field's ``source`` names the file (``fileObject``, or the
split's ``fileSet``) and records the feature's HDF5 path, ``/<split>/<feature>``
(a dataset, or the group of a ragged, categorical or bytes feature, §6), in
``extract.column``; the field's ``description`` says so, with the encoding,
dtype and sample shape. mlcroissant therefore validates the document but
cannot read its records; ``h5ml convert`` of it says that the data already is
h5ml and names the file.

The ``@id`` prefixes (``files/``, ``shards/``, ``splits/``, ``classes/``) keep
the ids of files, splits, features and class lists apart whatever the names
(a split may be named ``d.h5``). The JSON is deterministic: keys sorted,
files, record sets and fields in ``@id`` order, and written atomically (a
temporary file beside it, renamed).
"""

from __future__ import annotations

import datetime
import hashlib
import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Final, Literal

import numpy as np

from h5ml.errors import IngestError, ParameterError
from h5ml.ingest.croissant.vocabulary import CONFORMS_TO, CONTEXT, HDF5_ENCODING_FORMAT, field_data_type
from h5ml.ingest.document_output import check_document_output
from h5ml.model.paths import require_regular_file
from h5ml.model.text_files import atomic_text_file
from h5ml.reader import ShardedDataset
from h5ml.reader import open as open_any

__all__ = ["CREATOR_TYPES", "croissant_metadata", "croissant_text", "export_croissant", "file_sha256"]

#: The schema.org types a Croissant ``creator`` takes (``creator_type``).
CREATOR_TYPES: Final = ("Person", "Organization")
#: Characters an IRI cannot hold as they are (RFC 3987), or that would start its query or fragment; and ``%``.
_IRI_UNSAFE: Final = frozenset('"<>\\^`{|}#%?[]')
#: Bytes hashed at a time.
_HASH_BLOCK: Final = 8 << 20


def file_sha256(path: str | os.PathLike[str]) -> str:
    """The SHA-256 of a file's bytes, 64 lowercase hex digits (read in blocks of 8 MiB)."""
    digest = hashlib.sha256()
    with Path(path).open("rb") as handle:
        while block := handle.read(_HASH_BLOCK):
            digest.update(block)
    return digest.hexdigest()


def _check_id(name: str, what: str, where: str) -> str:
    """A split, feature or file name as a piece of an ``@id``: the characters an IRI cannot hold percent-encoded.

    ``%`` itself is encoded, so different names give different ids; a name
    with whitespace is refused, as mlcroissant refuses it in an ``@id`` even
    percent-encoded.
    """
    if any(ch.isspace() for ch in name):
        raise IngestError(
            f"{where}: the {what} name {name!r} holds whitespace, which Croissant's @id does not take (mlcroissant "
            f"refuses it even URL-escaped); {'rename the file' if what == 'file' else 'write the file with another name'}"
            " before writing its Croissant metadata",
            path=where,
        )
    return "".join(
        "".join(f"%{byte:02X}" for byte in ch.encode("utf-8"))
        if ch in _IRI_UNSAFE or ord(ch) < 0x20 or 0x7F <= ord(ch) < 0xA0
        else ch
        for ch in name
    )


def _relative(path: Path, folder: Path) -> str:
    """``path`` relative to ``folder``, '/'-separated (a FileObject's ``contentUrl``)."""
    return Path(os.path.relpath(path.resolve(), folder.resolve())).as_posix()


def _file_object(
    file_id: str, path: Path, folder: Path, where: str, encoding_format: str = HDF5_ENCODING_FORMAT
) -> dict[str, Any]:
    return {
        "@type": "cr:FileObject",
        "@id": f"files/{_check_id(file_id, 'file', where)}",
        "name": path.name,
        "contentUrl": _relative(path, folder),
        "encodingFormat": encoding_format,
        "sha256": file_sha256(path),
        "contentSize": f"{path.stat().st_size} B",
    }


def _shape_text(shape: Iterable[int | None]) -> str:
    return ",".join("-1" if d is None else str(int(d)) for d in shape)


def _field(feature: Any, split_id: str, source: dict[str, Any], where: str) -> tuple[dict[str, Any], Any]:
    """The Field of one feature and, for a categorical one, its enumeration record set (else None)."""
    name = _check_id(feature.name, "feature", where)
    encoding, shape = feature.encoding, tuple(feature.sample_shape)
    dtype = "str" if encoding == "string" else np.dtype(feature.dtype).name
    hdf5_path = f"/{feature.split}/{feature.name}"
    field_id = f"splits/{split_id}/{name}"
    attrs = feature.first_shard_feature() if hasattr(feature, "first_shard_feature") else feature
    media_type = getattr(attrs, "media_type", None)
    data_type = field_data_type(encoding, feature.dtype, media_type, f"{where}:{hdf5_path}")
    text = (
        f"h5ml feature {feature.name!r} at HDF5 path {hdf5_path} (source.extract.column): encoding {encoding}, "
        f"dtype {dtype}, sample shape {shape}"
    )
    if getattr(attrs, "sample_rate", None) is not None:
        text += f", sample rate {attrs.sample_rate} Hz"
    if getattr(attrs, "units", None) is not None:
        text += f", units {attrs.units}"
    if getattr(attrs, "description", None):
        text += f". {attrs.description}"
    field: dict[str, Any] = {
        "@type": "cr:Field",
        "@id": field_id,
        "name": feature.name,
        "description": text,
        "dataType": data_type,
        "source": {**source, "extract": {"column": hdf5_path}},
    }
    if encoding in ("dense", "ragged") and shape:
        field["isArray"] = True
        field["arrayShape"] = _shape_text(shape)
    if encoding == "bytes" and media_type is not None:
        field["encodingFormat"] = media_type
    if encoding != "categorical":
        return field, None
    enum_id = f"classes/{split_id}/{name}"
    field["references"] = {"field": {"@id": f"{enum_id}/index"}}
    names = list(feature.class_names or [])
    enumeration = {
        "@type": "cr:RecordSet",
        "@id": enum_id,
        "name": f"{feature.name} classes ({feature.split})",
        "description": f"The class names of feature {feature.name!r} of split {feature.split!r}: code -> name "
        "(code -1, a missing value, has no class).",
        "dataType": "sc:Enumeration",
        "key": {"@id": f"{enum_id}/index"},
        "field": [
            {"@type": "cr:Field", "@id": f"{enum_id}/index", "name": "index", "dataType": "sc:Integer"},
            {"@type": "cr:Field", "@id": f"{enum_id}/name", "name": "name", "dataType": "sc:Text"},
        ],
        "data": [{f"{enum_id}/index": code, f"{enum_id}/name": label} for code, label in enumerate(names)],
    }
    return field, enumeration


def _shard_nodes(
    dataset: ShardedDataset, split: str, base: Path, distribution: list[dict[str, Any]], where: str
) -> dict[str, Any]:
    """Add a split's shards (a FileObject each, with its sha256) and their FileSet; return the fields' ``source``."""
    shards = [shard.path for shard in dataset.index.splits[split].shards]
    folder = Path(dataset.folder)
    distribution.extend(_file_object(shard, folder / shard, base, where) for shard in shards)
    set_id = f"shards/{_check_id(split, 'split', where)}"
    distribution.append(
        {
            "@type": "cr:FileSet",
            "@id": set_id,
            "name": set_id,
            "description": f"The shards of split {split!r}, in sample order.",
            "encodingFormat": HDF5_ENCODING_FORMAT,
            "includes": [_relative(folder / shard, base) for shard in shards],
        }
    )
    return {"fileSet": {"@id": set_id}}


def _card(metadata: Any, creator_type: str | None, date_published: str | None, where: str) -> dict[str, Any]:
    """The Dataset properties of the card (the module table)."""
    card: dict[str, Any] = {"name": metadata.name, "dateCreated": metadata.created}
    for croissant, h5ml in (
        ("description", "description"),
        ("license", "license"),
        ("citeAs", "citation"),
        ("version", "version"),
        ("url", "homepage"),
        ("keywords", "keywords"),
    ):
        value = getattr(metadata, h5ml)
        if value is not None and value != "":
            card[croissant] = value
    if metadata.creator:
        if creator_type is None:
            raise ParameterError(
                f"{where}: the file's creator {metadata.creator!r} is free text, and Croissant needs to know whether it "
                "is a person or an organisation: pass creator_type='Person' (--creator-type Person) or "
                "creator_type='Organization' (--creator-type Organization)"
            )
        card["creator"] = {"@type": f"sc:{creator_type}", "name": metadata.creator}
    if date_published is not None:
        card["datePublished"] = date_published
    return card


def _check_options(creator_type: str | None, date_published: str | None) -> None:
    if creator_type is not None and creator_type not in CREATOR_TYPES:
        raise ParameterError(
            f"creator_type must be one of {list(CREATOR_TYPES)}, got {creator_type!r} "
            "(parameter creator_type, option --creator-type)"
        )
    if date_published is not None:
        try:
            datetime.date.fromisoformat(date_published) if len(
                date_published
            ) == 10 else datetime.datetime.fromisoformat(date_published.replace("Z", "+00:00"))
        except (TypeError, ValueError):
            raise ParameterError(
                f"date_published must be an ISO 8601 date (2026-01-31) or date and time (2026-01-31T12:00:00Z), got "
                f"{date_published!r} (parameter date_published, option --date-published)"
            ) from None


def croissant_metadata(
    source: str | os.PathLike[str],
    *,
    folder: str | os.PathLike[str] | None = None,
    creator_type: Literal["Person", "Organization"] | None = None,
    date_published: str | None = None,
    allow_external: bool = False,
) -> dict[str, Any]:
    """The Croissant 1.1 JSON-LD document of an h5ml file or sharded index (see the module docstring).

    Parameters
    ----------
    source
        An h5ml file, or the ``index.json`` (or folder) of a sharded dataset (§12).
    folder
        The folder the JSON-LD will be written to: ``contentUrl`` values are
        relative to it. Default: the current directory.
    creator_type
        ``"Person"`` or ``"Organization"``: the schema.org type of the file's
        ``creator``. Required when the file has a creator (its free text does
        not say), unused otherwise.
    date_published
        ``datePublished``, an ISO 8601 date or date and time; default none
        (mlcroissant then warns that the recommended property is missing).
    allow_external
        As :func:`h5ml.open` (§10.1).

    Returns
    -------
    dict
        The JSON-LD document.

    Raises
    ------
    h5ml.errors.ParameterError
        If ``creator_type`` is missing for a file with a creator, or not one of
        :data:`CREATOR_TYPES`, or ``date_published`` is not ISO 8601.
    h5ml.IngestError
        If a split, feature or file name holds whitespace (Croissant's ``@id`` cannot),
        or a bytes feature is neither ``image/*`` nor ``audio/*``.
    h5ml.H5MLError, OSError
        If the source cannot be read (as :func:`h5ml.open`).
    """
    _check_options(creator_type, date_published)
    base = Path.cwd() if folder is None else Path(folder)
    with open_any(source, allow_external=allow_external) as dataset:
        where = dataset.path if isinstance(dataset, ShardedDataset) else os.fspath(source)
        main = Path(dataset.path)
        main_kind = "application/json" if isinstance(dataset, ShardedDataset) else HDF5_ENCODING_FORMAT
        distribution = [_file_object(main.name, main, base, where, main_kind)]
        main_id = distribution[0]["@id"]
        record_sets: list[dict[str, Any]] = []
        for split_name in dataset.every_split():
            split = dataset[split_name]
            split_id = _check_id(split_name, "split", where)
            source_node: dict[str, Any] = {"fileObject": {"@id": main_id}}
            if isinstance(dataset, ShardedDataset):
                source_node = _shard_nodes(dataset, split_name, base, distribution, where)
            fields, enumerations = [], []
            for feature_name in sorted(split.every_feature()):
                field, enumeration = _field(split.feature(feature_name), split_id, source_node, where)
                fields.append(field)
                if enumeration is not None:
                    enumerations.append(enumeration)
            record_sets.append(
                {
                    "@type": "cr:RecordSet",
                    "@id": f"splits/{split_id}",
                    "name": split_name,
                    "description": f"Split {split_name!r} of the h5ml dataset: {split.num_samples} samples, one "
                    "record per sample.",
                    "field": fields,
                }
            )
            record_sets.extend(enumerations)
        card = _card(dataset.metadata, creator_type, date_published, where)
    return {
        "@context": dict(CONTEXT),
        "@type": "sc:Dataset",
        "conformsTo": CONFORMS_TO,
        **card,
        "distribution": sorted(distribution, key=lambda node: str(node["@id"])),
        "recordSet": sorted(record_sets, key=lambda node: str(node["@id"])),
    }


def croissant_text(document: dict[str, Any]) -> str:
    """A JSON-LD document as the deterministic text h5ml writes: keys sorted, indented by 2, UTF-8, a final newline."""
    return json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def export_croissant(
    source: str | os.PathLike[str],
    output: str | os.PathLike[str],
    *,
    overwrite: bool = False,
    creator_type: Literal["Person", "Organization"] | None = None,
    date_published: str | None = None,
    allow_external: bool = False,
) -> Path:
    """Write the Croissant 1.1 JSON-LD of an h5ml file or sharded index to ``output`` (see :func:`croissant_metadata`).

    Parameters
    ----------
    source
        An h5ml file, or the ``index.json`` of a sharded dataset (§12).
    output
        The JSON-LD file to write (``metadata.json``); ``contentUrl`` values
        are relative to its folder.
    overwrite
        Replace ``output`` if it exists.
    creator_type, date_published, allow_external
        As :func:`croissant_metadata`.

    Returns
    -------
    pathlib.Path
        ``output``.

    Raises
    ------
    FileExistsError
        If ``output`` exists and ``overwrite`` is false; or, ``overwrite`` or not, is the source, a file or path
        of a sharded source (its index, a shard, its folder) or an HDF5 file
        (:func:`h5ml.ingest.document_output.check_document_output`).
    IsADirectoryError, OSError
        If ``output`` is a directory, or a FIFO, a device or a socket.
    FileNotFoundError
        If the source or the output's folder does not exist.
    h5ml.errors.ParameterError, h5ml.IngestError, h5ml.H5MLError
        As :func:`croissant_metadata`; ``output`` is left as it was.
    """
    given = Path(source)
    sources = [require_regular_file(given)] if not given.is_dir() else [given]
    out = check_document_output(output, overwrite, sources)
    document = croissant_metadata(
        source,
        folder=out.parent,
        creator_type=creator_type,
        date_published=date_published,
        allow_external=allow_external,
    )
    with atomic_text_file(out) as handle:
        handle.write(croissant_text(document))
    return out
