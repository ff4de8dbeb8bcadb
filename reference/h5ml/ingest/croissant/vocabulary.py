"""The MLCommons Croissant terms h5ml writes and reads: the JSON-LD context, the data types, telling a Croissant file.

Croissant (https://mlcommons.org/croissant/, versions 1.0 and 1.1) describes a
dataset as JSON-LD: schema.org ``Dataset`` properties, a ``distribution`` of
``cr:FileObject``/``cr:FileSet`` and ``cr:RecordSet`` nodes of ``cr:Field``\\s.
:mod:`h5ml.ingest.export.croissant` writes it for an h5ml file (conforming to
Croissant 1.1) and :mod:`h5ml.ingest.croissant.convert` reads it back into
h5ml (1.0 or 1.1). This module holds what both use, written from the
Croissant specification; it does not import ``mlcroissant``.

Data types (h5ml feature -> Croissant ``dataType``)
---------------------------------------------------
===========  ===============================  ==================  =====================================
encoding     dtype / attributes               ``dataType``        also
===========  ===============================  ==================  =====================================
dense        bool (``logical_dtype="bool"``)  ``sc:Boolean``      ``isArray``/``arrayShape`` when the
                                                                  samples are not scalars
dense        integer                          ``sc:Integer``      as above (a uint8 (H, W, C) image
                                                                  stays an array of pixels)
dense        floating point                   ``sc:Float``        as above
ragged       as dense                         as dense            ``isArray``, ``arrayShape`` ``-1,...``
                                                                  (-1: the axes that vary)
string       str                              ``sc:Text``
categorical  int codes + class names          ``sc:Integer``      ``references`` the ``index`` field of
                                                                  an ``sc:Enumeration`` record set
bytes        ``media_type`` ``image/*``       ``sc:ImageObject``  ``encodingFormat`` the media type
bytes        ``media_type`` ``audio/*``       ``sc:AudioObject``  as above
bytes        any other                        refused             Croissant has no type of opaque bytes
===========  ===============================  ==================  =====================================

``sc:ImageObject`` and ``sc:AudioObject`` mean an encoded image or audio file
in Croissant (mlcroissant decodes them), so a dense array of pixels is an
``sc:Integer`` array with its ``arrayShape``, never an ``sc:ImageObject``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

import numpy as np

from h5ml.errors import IngestError

__all__ = [
    "CONFORMS_TO",
    "CONTEXT",
    "HDF5_ENCODING_FORMAT",
    "READ_VERSIONS",
    "croissant_version",
    "field_data_type",
    "is_croissant",
    "load_jsonld",
]

#: The Croissant version h5ml writes (``conformsTo``).
CONFORMS_TO: Final = "http://mlcommons.org/croissant/1.1"
#: The Croissant versions h5ml reads (``h5ml convert``).
READ_VERSIONS: Final = ("http://mlcommons.org/croissant/1.0", "http://mlcommons.org/croissant/1.1")
#: The media type of an HDF5 file, as the FileObject's ``encodingFormat``.
HDF5_ENCODING_FORMAT: Final = "application/x-hdf5"
#: Bytes read from a ``.json``/``.jsonld`` file to tell whether it is Croissant.
_DETECT_LIMIT: Final = 64 << 20

#: The JSON-LD ``@context`` of Croissant 1.1 (the terms its specification defines, as mlcroissant writes them).
CONTEXT: Final[Mapping[str, Any]] = {
    "@language": "en",
    "@vocab": "https://schema.org/",
    "arrayShape": "cr:arrayShape",
    "citeAs": "cr:citeAs",
    "column": "cr:column",
    "conformsTo": "dct:conformsTo",
    "containedIn": "cr:containedIn",
    "cr": "http://mlcommons.org/croissant/",
    "data": {"@id": "cr:data", "@type": "@json"},
    "dataType": {"@id": "cr:dataType", "@type": "@vocab"},
    "dct": "http://purl.org/dc/terms/",
    "description": {"@container": "@language"},
    "equivalentProperty": "cr:equivalentProperty",
    "examples": {"@id": "cr:examples", "@type": "@json"},
    "extract": "cr:extract",
    "field": "cr:field",
    "fileObject": "cr:fileObject",
    "fileProperty": "cr:fileProperty",
    "fileSet": "cr:fileSet",
    "format": "cr:format",
    "includes": "cr:includes",
    "isArray": "cr:isArray",
    "isLiveDataset": "cr:isLiveDataset",
    "jsonPath": "cr:jsonPath",
    "key": "cr:key",
    "md5": "cr:md5",
    "name": {"@container": "@language"},
    "parentField": "cr:parentField",
    "path": "cr:path",
    "rai": "http://mlcommons.org/croissant/RAI/",
    "recordSet": "cr:recordSet",
    "references": "cr:references",
    "regex": "cr:regex",
    "repeated": "cr:repeated",
    "replace": "cr:replace",
    "samplingRate": "cr:samplingRate",
    "sc": "https://schema.org/",
    "separator": "cr:separator",
    "source": "cr:source",
    "subField": "cr:subField",
    "transform": "cr:transform",
}


def field_data_type(encoding: str, dtype: Any, media_type: str | None, where: str) -> str:
    """The Croissant ``dataType`` of an h5ml feature (the module table).

    Parameters
    ----------
    encoding
        The feature's encoding (§6): ``dense``, ``ragged``, ``string``, ``categorical`` or ``bytes``.
    dtype
        Its numpy dtype (values of dense and ragged features; the codes of categorical ones).
    media_type
        The ``media_type`` of a bytes feature (§6.6), or None.
    where
        The file and HDF5 path of the feature, for the message.

    Returns
    -------
    str
        A compact IRI: ``sc:Boolean``, ``sc:Integer``, ``sc:Float``, ``sc:Text``,
        ``sc:ImageObject`` or ``sc:AudioObject``.

    Raises
    ------
    h5ml.IngestError
        For a bytes feature whose media type is not ``image/*`` or ``audio/*``:
        Croissant has no data type of opaque bytes.
    """
    if encoding == "string":
        return "sc:Text"
    if encoding == "categorical":
        return "sc:Integer"
    if encoding == "bytes":
        kind = (media_type or "").split("/", 1)[0].lower()
        if kind == "image":
            return "sc:ImageObject"
        if kind == "audio":
            return "sc:AudioObject"
        raise IngestError(
            f"{where}: a bytes feature of media type {media_type or 'application/octet-stream'!r}: Croissant has no "
            "data type of opaque bytes (only sc:ImageObject and sc:AudioObject files); leave the feature out with "
            "`h5ml subset --feature ...` before writing its Croissant metadata",
            path=where,
        )
    kind = np.dtype(dtype).kind
    if kind == "b":
        return "sc:Boolean"
    return "sc:Integer" if kind in "iu" else "sc:Float"


def load_jsonld(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read a JSON-LD file as a JSON object.

    Raises
    ------
    h5ml.IngestError
        If the file is not UTF-8 JSON holding an object (the message names the file and the line); a UTF-8
        byte order mark before the JSON is taken out.
    """
    where = os.fspath(path)
    try:
        document = json.loads(Path(path).read_text(encoding="utf-8-sig"))  # a byte order mark is no JSON
    except UnicodeDecodeError as exc:
        raise IngestError(f"{where}: not UTF-8 text ({exc.reason} at byte {exc.start})", path=where) from exc
    except json.JSONDecodeError as exc:
        raise IngestError(f"{where}: not JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}", path=where) from exc
    except RecursionError as exc:
        raise IngestError(
            f"{where}: its JSON nests objects and arrays too deeply for Python's JSON reader; no JSON-LD document needs "
            "that many levels",
            path=where,
        ) from exc
    if not isinstance(document, dict):
        raise IngestError(f"{where}: a JSON-LD file holds a JSON object, got {type(document).__name__}", path=where)
    return document


def croissant_version(document: Mapping[str, Any]) -> str | None:
    """The Croissant version a JSON-LD document conforms to (a ``conformsTo`` IRI), or None when it is not Croissant.

    A document is Croissant when its ``conformsTo`` (a string or a list) names
    ``http://mlcommons.org/croissant/<version>``; the first such value is
    returned, whichever version it names.
    """
    given = document.get("conformsTo", document.get("dct:conformsTo"))
    values = given if isinstance(given, list) else [given]
    for value in values:
        if isinstance(value, str) and value.rstrip("/").startswith("http://mlcommons.org/croissant/"):
            return value.rstrip("/")
    return None


def is_croissant(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a Croissant JSON-LD file: a ``.json``/``.jsonld`` JSON object that :func:`croissant_version` names.

    Files over 64 MiB, and files that are not JSON, are not Croissant here.
    """
    file = Path(path)
    if file.suffix.lower() not in (".json", ".jsonld") or not file.is_file() or file.stat().st_size > _DETECT_LIMIT:
        return False
    try:
        return croissant_version(load_jsonld(file)) is not None
    except (IngestError, OSError):
        return False
