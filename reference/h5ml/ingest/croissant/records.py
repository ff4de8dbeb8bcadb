"""How each Croissant field of a record set becomes an h5ml feature, and its values samples (§6).

:func:`plan_fields` decides, before any record is read, the encoding of each
field of the chosen record set from its ``dataType`` (mlcroissant's parsed
:class:`mlcroissant.Field`), and refuses the fields it cannot convert;
:class:`FieldPlan` turns each value that ``mlcroissant`` produces into one
sample value for :func:`h5ml.ingest.samples.convert_samples`.

===============================  ===========================  ========================================
Croissant ``dataType``           mlcroissant gives            h5ml feature
===============================  ===========================  ========================================
``sc:Integer``, ``cr:Int*``,     text, parsed by h5ml         dense int64 (the sized types: their
``cr:UInt*``                     exactly (ASCII decimal)      dtype); a fraction or a number outside
                                                              the dtype's range is refused
``sc:Float``, ``cr:Float*``      text, parsed by h5ml         dense float64 (float16/32 when sized);
                                 (ASCII decimal, inf, nan)    a finite number that overflows, or a
                                                              nonzero one that becomes 0, is refused
``sc:Boolean``                   text, parsed by h5ml         dense bool (``true``/``false``, ``yes``/
                                                              ``no``, ``1``/``0``, any case; else refused)
``sc:Text``                      bytes (UTF-8)                string
``sc:Text`` referencing an       bytes                        categorical; class names: the
``sc:Enumeration`` record set                                 referenced field's values, in order
``sc:ImageObject``               PIL image                    dense uint8 (H, W[, C]); every image the
                                                              same shape, else refused
``sc:AudioObject``               (samples, rate) by librosa   ragged float32 with ``sample_rate``;
                                                              every clip the same rate, else refused
another type referencing an      --                           refused: its codes alone would lose
``sc:Enumeration``                                            the class names
a ``cr:Split`` field             bytes                        the record's split (not a feature)
anything else                    --                           refused before any record is read
===============================  ===========================  ========================================

A missing value (None, or NaN in an integer or boolean field) is refused with
the record and the field, in every field (categorical ones too): a guessed
fill would be a wrong answer. mlcroissant reads CSV with pandas, which takes
an empty cell and the texts ``NA``, ``NULL``, ``N/A``, ``nan``, ... for a
missing value.

mlcroissant casts an ``sc:Boolean`` value with Python's ``bool()``, which
makes the text ``"False"`` and ``"0"`` true, an ``sc:Integer`` with ``int()``,
which makes ``1.5`` one, and a ``cr:Int8`` or ``cr:Float32`` with numpy, which
wraps or overflows: :func:`read_numbers_as_text` has it read the numeric and
boolean fields as text, and :class:`FieldPlan` parses the text exactly.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from fractions import Fraction
from typing import Any, Final

import numpy as np

from h5ml.errors import IngestError
from h5ml.model.values import FeatureSpec

__all__ = ["BOOLEAN_TEXTS", "FieldPlan", "data_type_names", "plan_fields", "read_numbers_as_text", "split_plan"]

_SC: Final = "https://schema.org/"
_CR: Final = "http://mlcommons.org/croissant/"
#: Croissant numeric and boolean data types -> the numpy dtype of their dense feature.
_NUMERIC: Final[Mapping[str, str]] = {
    _SC + "Integer": "int64",
    _SC + "Float": "float64",
    _SC + "Boolean": "bool",
    **{_CR + f"Int{bits}": f"int{bits}" for bits in (8, 16, 32, 64)},
    **{_CR + f"UInt{bits}": f"uint{bits}" for bits in (8, 16, 32, 64)},
    **{_CR + f"Float{bits}": f"float{bits}" for bits in (16, 32, 64)},
}
_TEXT: Final = _SC + "Text"
_IMAGE: Final = _SC + "ImageObject"
_AUDIO: Final = _SC + "AudioObject"
_SPLIT: Final = _CR + "Split"
_ENUMERATION: Final = _SC + "Enumeration"
#: The texts of an ``sc:Boolean`` value (compared in lower case, without surrounding spaces) -> its value.
BOOLEAN_TEXTS: Final[Mapping[str, bool]] = {
    "true": True,
    "false": False,
    "yes": True,
    "no": False,
    "1": True,
    "0": False,
}
#: The text of a number: an ASCII decimal number (an optional sign, digits with an optional fraction, or a fraction
#: alone, an optional exponent), around which spaces and tabs are allowed. An integer field takes a whole number
#: written with a fraction or an exponent (``2.0``, ``1e3``); Python's ``1_000`` and non-ASCII digits are refused.
_DECIMAL_TEXT: Final = re.compile(r"[ \t]*([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)[ \t]*")
#: The words a floating-point field takes (compared in lower case, without the spaces and tabs around them).
_FLOAT_WORDS: Final[Mapping[str, str]] = {
    **{f"{sign}{word}": f"{sign}Infinity" for sign in ("", "+", "-") for word in ("inf", "infinity")},
    "nan": "NaN",
}


def _exact(value: Any, *, floating: bool) -> Decimal | None:
    """The exact value of a number's text (:data:`_DECIMAL_TEXT`, :data:`_FLOAT_WORDS`) or JSON value, else None."""
    if isinstance(value, str):
        match = _DECIMAL_TEXT.fullmatch(value)
        if match is not None:
            return Decimal(match.group(1))
        word = _FLOAT_WORDS.get(value.strip(" \t").lower()) if floating else None
        return None if word is None else Decimal(word)
    if isinstance(value, (bool, np.bool_)):
        return None
    if isinstance(value, (int, np.integer)):
        return Decimal(int(value))
    if isinstance(value, (float, np.floating)):
        return Decimal(float(value))  # the float's exact binary value
    return None


def _nearest(exact: Decimal, dtype: np.dtype[Any]) -> np.ndarray:
    """The ``dtype`` float nearest to ``exact`` (ties to even): infinity or 0 when it is beyond the dtype's range.

    ``float(Decimal)`` rounds correctly to float64; rounding that again to
    float32 or float16 can miss the nearest one when the text lies just off
    a halfway point, so the float64's neighbours in ``dtype`` are compared
    with the exact value (as fractions: exact).
    """
    with np.errstate(over="ignore", under="ignore"):
        stored = np.asarray(float(exact), dtype=dtype)
    if dtype.itemsize >= 8 or not exact.is_finite() or not np.isfinite(stored) or stored == 0:
        return stored
    target = Fraction(exact)
    with np.errstate(over="ignore"):  # the neighbour of the largest float is infinity, left out below
        candidates = [np.nextafter(stored, dtype.type(-np.inf)), stored, np.nextafter(stored, dtype.type(np.inf))]
    finite = [np.asarray(c, dtype=dtype) for c in candidates if np.isfinite(c)]
    bits = np.dtype(f"u{dtype.itemsize}")
    return min(finite, key=lambda c: (abs(Fraction(float(c)) - target), int(c.view(bits)) & 1))


def data_type_names(node: Any) -> list[str]:
    """The ``dataType`` IRIs of a mlcroissant node (a Field or a RecordSet), as strings."""
    given = getattr(node, "data_types", None) or []
    return [str(t) for t in (given if isinstance(given, list) else [given])]


def _short(iri: str) -> str:
    return iri.replace(_SC, "sc:").replace(_CR, "cr:")


@dataclass
class FieldPlan:
    """One field of the record set and the h5ml feature it becomes.

    Attributes
    ----------
    field_id
        The field's ``@id`` (the key of its values in mlcroissant's records).
    name
        The feature name (the field's ``name``).
    kind
        ``"numeric"``, ``"text"``, ``"categorical"``, ``"image"``, ``"audio"`` or ``"split"``.
    dtype
        The numpy dtype of a numeric feature.
    class_names
        The class names of a categorical feature.
    """

    field_id: str
    name: str
    kind: str
    dtype: str | None = None
    class_names: list[str] | None = None
    _shape: tuple[int, ...] | None = field(default=None, repr=False)
    _rate: float | None = field(default=None, repr=False)

    def spec(self) -> FeatureSpec:
        """The writer's options of the feature (its encoding, dtype, class names)."""
        if self.kind == "numeric":
            return FeatureSpec(encoding="dense", dtype=self.dtype)
        if self.kind == "text":
            return FeatureSpec(encoding="string")
        if self.kind == "categorical":
            return FeatureSpec(encoding="categorical", class_names=self.class_names)
        if self.kind == "image":
            return FeatureSpec(encoding="dense", dtype="uint8")
        return FeatureSpec(encoding="ragged", dtype="float32")

    def audio_rate(self) -> float | None:
        """The sample rate the clips share (Hz), known after the first clip."""
        return self._rate

    def value(self, value: Any, where: str) -> Any:
        """One sample value of mlcroissant's ``value`` for this field.

        Raises
        ------
        h5ml.IngestError
            If the value is missing, is not UTF-8 text, or an image or a clip
            disagrees with the first in shape or sample rate (``where`` names the record).
        """
        floating = self.dtype is not None and np.dtype(self.dtype).kind == "f"
        if value is None or (isinstance(value, float) and math.isnan(value) and not floating):
            raise IngestError(
                f"{where}: field {self.field_id!r} has no value (an empty cell, or a text such as NA, NULL or N/A, "
                "which mlcroissant's CSV reader takes for a missing value); a missing value is not guessed (no fill, "
                "no missing class): fill or drop those records in the source"
            )
        if self.kind == "numeric" and self.dtype == "bool":
            return np.asarray(self._boolean(value, where))
        if self.kind == "numeric":
            return self._number(value, where)
        if self.kind in ("text", "categorical", "split"):
            if isinstance(value, bytes):
                try:
                    return value.decode("utf-8")
                except UnicodeDecodeError as exc:
                    raise IngestError(f"{where}: field {self.field_id!r} is not UTF-8 text ({exc.reason})") from exc
            return str(value)
        if self.kind == "image":
            return self._image(value, where)
        return self._audio(value, where)

    def _boolean(self, value: Any, where: str) -> bool:
        """An ``sc:Boolean`` value: the text (or JSON value) parsed by :data:`BOOLEAN_TEXTS`, never ``bool(text)``."""
        if isinstance(value, (bool, np.bool_)):
            return bool(value)
        text = value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
        parsed = BOOLEAN_TEXTS.get(text.strip().lower())
        if parsed is None:
            raise IngestError(
                f"{where}: field {self.field_id!r} (sc:Boolean) holds {text!r}, which is no boolean h5ml reads "
                f"({'/'.join(BOOLEAN_TEXTS)}, in any case); fix the value in the source, or declare the field "
                "another dataType"
            )
        return parsed

    def _number(self, value: Any, where: str) -> np.ndarray:
        """A number of the field's dtype from its text (or JSON value), exactly, or refused.

        The text is an ASCII decimal number (:data:`_DECIMAL_TEXT`), or for a
        floating-point field a word of :data:`_FLOAT_WORDS`; it is parsed
        exactly (:class:`decimal.Decimal`), never through Python's lenient
        ``int()``/``float()``. The message quotes the value as written.
        """
        dtype = np.dtype(self.dtype)
        integer = dtype.kind in "iu"
        kind = "integer" if integer else "number"
        shown: Any = value.decode("utf-8", "replace") if isinstance(value, bytes) else value
        shown = shown.item() if isinstance(shown, np.generic) else shown
        exact = _exact(shown, floating=not integer)
        if exact is None:
            allowed = "ASCII digits, with an optional sign, fraction and exponent: 7, -2.5, 1e3"
            raise IngestError(
                f"{where}: field {self.field_id!r} holds {shown!r}, which is no {kind} h5ml reads ({allowed}"
                f"{'' if integer else '; or inf, -inf, nan'}); fix the source"
            )
        if integer:
            if not exact.is_finite() or exact != exact.to_integral_value():
                raise IngestError(
                    f"{where}: field {self.field_id!r} ({self.dtype}) holds {shown!r}, which is no integer; h5ml "
                    "does not round: fix the source, or declare the field sc:Float"
                )
            limits = np.iinfo(dtype)
            if not limits.min <= exact <= limits.max:
                raise IngestError(
                    f"{where}: field {self.field_id!r} holds {shown!r}, outside the range of {self.dtype} "
                    f"({limits.min} to {limits.max}); declare a wider dataType, or fix the source"
                )
            return np.asarray(int(exact), dtype=dtype)
        stored = _nearest(exact, dtype)
        advice = (
            "declare a wider dataType (cr:Float64, sc:Float), or fix the source"
            if dtype.itemsize < 8
            else "h5ml reads no wider float: fix the source, or declare the field sc:Text to keep the text"
        )
        if exact.is_finite() and not np.isfinite(stored):
            raise IngestError(
                f"{where}: field {self.field_id!r} holds {shown!r}, beyond the largest {self.dtype} "
                f"({np.finfo(dtype).max}), which would store it as infinity; {advice}"
            )
        if exact.is_finite() and exact != 0 and stored == 0:
            raise IngestError(
                f"{where}: field {self.field_id!r} holds {shown!r}, a nonzero number that {self.dtype} would store as "
                f"0 (its smallest nonzero value is {np.finfo(dtype).smallest_subnormal}); {advice}"
            )
        return stored

    def _image(self, value: Any, where: str) -> np.ndarray:
        pixels = np.asarray(value)
        if pixels.dtype != np.uint8:
            raise IngestError(
                f"{where}: field {self.field_id!r} decodes to {pixels.dtype} pixels (image mode "
                f"{getattr(value, 'mode', '?')}); h5ml writes 8-bit images only: convert the images to 8 bits first"
            )
        if self._shape is None:
            self._shape = pixels.shape
        elif pixels.shape != self._shape:
            raise IngestError(
                f"{where}: field {self.field_id!r} is an image of shape {pixels.shape}, the first was {self._shape}; "
                "a dense feature holds images of one size and mode: resize them in the source, or convert the image "
                "folder with `h5ml convert FOLDER OUT.h5 --size WxH`"
            )
        return pixels

    def _audio(self, value: Any, where: str) -> np.ndarray:
        if not (isinstance(value, tuple) and len(value) == 2):
            raise IngestError(f"{where}: field {self.field_id!r} gave {type(value).__name__}, not (samples, rate)")
        samples, rate = np.asarray(value[0], dtype=np.float32), float(value[1])
        if self._rate is None:
            self._rate = rate
        elif rate != self._rate:
            raise IngestError(
                f"{where}: field {self.field_id!r} has a clip at {rate} Hz, the first was at {self._rate} Hz; one "
                "feature has one sample_rate: resample the clips in the source"
            )
        return samples.T if samples.ndim > 1 else samples


def _enumeration_values(field: Any, record_sets: Mapping[str, Any], where: str) -> list[str] | None:
    """The class names of a field that references an ``sc:Enumeration`` record set's field (else None)."""
    references = getattr(field, "references", None)
    target = getattr(references, "field", None) if references is not None else None
    if not target:
        return None
    set_id = str(target).rsplit("/", 1)[0]
    record_set = record_sets.get(set_id)
    if record_set is None or _ENUMERATION not in data_type_names(record_set):
        return None
    rows = getattr(record_set, "data", None)
    if not isinstance(rows, list):
        raise IngestError(
            f"{where}: field {field.id!r} references the enumeration {set_id!r}, whose class names are not inline "
            "(`data`); h5ml reads inline class names only: list them in the record set's data"
        )
    names = [row.get(str(target)) for row in rows if isinstance(row, Mapping)]
    if not names or not all(isinstance(n, str) and n for n in names) or len(set(names)) != len(names):
        raise IngestError(
            f"{where}: the enumeration {set_id!r} field {str(target)!r} does not hold unique non-empty class names "
            f"({names!r:.200}); fix its data"
        )
    return names  # type: ignore[return-value]


def plan_fields(record_set: Any, record_sets: Mapping[str, Any], where: str) -> list[FieldPlan]:
    """The plan of every field of ``record_set`` (see the module table), decided before any record is read.

    Parameters
    ----------
    record_set
        The mlcroissant RecordSet to convert.
    record_sets
        Every record set of the dataset by ``@id`` (enumerations are looked up there).
    where
        The JSON-LD file, for messages.

    Returns
    -------
    list of FieldPlan
        One per field, in the record set's order; at most one of kind ``"split"``.

    Raises
    ------
    h5ml.IngestError
        If a field has sub-fields, no or several data types, a data type h5ml
        does not convert, or the record set has two split fields (each is named).
    """
    plans: list[FieldPlan] = []
    refused: list[str] = []
    for item in record_set.fields:
        types = data_type_names(item)
        label = f"{item.id!r} ({', '.join(_short(t) for t in types) or 'no dataType'})"
        if getattr(item, "sub_fields", None):
            refused.append(f"{label}: has subField (nested records); h5ml converts flat records")
            continue
        references = getattr(item, "references", None)
        target = str(getattr(references, "field", "") or "")
        target_set = record_sets.get(target.rsplit("/", 1)[0]) if target else None
        if _SPLIT in types or (target_set is not None and _SPLIT in data_type_names(target_set)):
            plans.append(FieldPlan(item.id, item.name, "split"))
            continue
        if len(types) != 1:
            refused.append(f"{label}: needs exactly one dataType")
            continue
        kind = types[0]
        if target_set is not None and _ENUMERATION in data_type_names(target_set) and kind != _TEXT:
            refused.append(
                f"{label}: references the enumeration {target_set.id!r}; h5ml takes class names from an sc:Text "
                "field whose values are the class names (its codes alone would lose them)"
            )
        elif getattr(item, "is_array", False) or getattr(item, "repeated", False):
            refused.append(f"{label}: isArray/repeated values are not converted yet; convert the array's source")
        elif kind in _NUMERIC:
            plans.append(FieldPlan(item.id, item.name, "numeric", dtype=_NUMERIC[kind]))
        elif kind == _TEXT:
            names = _enumeration_values(item, record_sets, where)
            plans.append(FieldPlan(item.id, item.name, "text" if names is None else "categorical", class_names=names))
        elif kind == _IMAGE:
            plans.append(FieldPlan(item.id, item.name, "image"))
        elif kind == _AUDIO:
            plans.append(FieldPlan(item.id, item.name, "audio"))
        else:
            refused.append(f"{label}: h5ml has no encoding for this data type")
    splits = [p.field_id for p in plans if p.kind == "split"]
    if len(splits) > 1:
        refused.append(f"{', '.join(map(repr, splits))}: several split fields; a record has one split")
    if refused:
        raise IngestError(
            f"{where}: record set {record_set.id!r}: cannot convert " + "; ".join(refused) + ". Nothing was written",
            path=where,
        )
    return plans


def read_numbers_as_text(record_set: Any, plans: Sequence[FieldPlan]) -> None:
    """Have mlcroissant read the numeric and boolean fields of ``record_set`` as text, which :class:`FieldPlan` parses.

    mlcroissant casts with Python's ``bool()`` and ``int()`` and with numpy,
    so the text ``"False"`` would become True, ``1.5`` one and 300 in a
    ``cr:Int8`` 44 (the module docstring). Call it after :func:`plan_fields`
    (the plans keep the field's own type) and before the records are read.

    Parameters
    ----------
    record_set
        The mlcroissant RecordSet being converted; its Field nodes are changed in place.
    plans
        Its plans (:func:`plan_fields`): the fields planned as numeric are read as text.
    """
    numeric = {p.field_id for p in plans if p.kind == "numeric"}
    for item in record_set.fields:
        given = getattr(item, "data_types", None) or []
        given = given if isinstance(given, list) else [given]
        if item.id in numeric:
            # mlcroissant's own IRI type (rdflib's URIRef, which equals only its own type)
            item.data_types = [type(t)(_TEXT) if str(t) in _NUMERIC else t for t in given]


def split_plan(plans: Sequence[FieldPlan]) -> FieldPlan | None:
    """The plan of the record set's split field, or None."""
    return next((p for p in plans if p.kind == "split"), None)
