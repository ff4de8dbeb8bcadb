"""MLCommons Croissant JSON-LD to h5ml and back: :func:`convert_croissant`, :func:`is_croissant`.

:func:`convert_croissant` (:mod:`~h5ml.ingest.croissant.convert`) reads the
records of a Croissant dataset with ``mlcroissant`` (the ``croissant`` extra),
offline from local files, and writes them to an h5ml file (§4, §5, §6);
:mod:`~h5ml.ingest.croissant.vocabulary` holds the Croissant terms, and
:func:`h5ml.ingest.export.export_croissant` writes the JSON-LD of an h5ml file.
"""

from h5ml.ingest.croissant.convert import convert_croissant
from h5ml.ingest.croissant.vocabulary import CONFORMS_TO, is_croissant

__all__ = ["CONFORMS_TO", "convert_croissant", "is_croissant"]
