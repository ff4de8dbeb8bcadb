"""Convert a Croissant dataset to h5ml, its records read by mlcroissant offline: :func:`convert_croissant` (§4, §5, §6).

``h5ml convert metadata.json OUT.h5``: the JSON-LD is checked before any
record is read, and refused, with what and why, when

- it is not Croissant 1.0 or 1.1 (``conformsTo``), or mlcroissant finds it
  invalid or cannot read it (malformed JSON-LD, circular references: whatever
  mlcroissant raises becomes an :class:`~h5ml.errors.IngestError`);
- its files are remote (a ``contentUrl``, an ``includes`` or the
  ``@context`` is a URL), ``file://`` URLs, outside the JSON-LD's folder,
  missing, or HDF5, or local archives with links, special files or paths
  that leave them (:mod:`h5ml.ingest.croissant.files`, checked on what
  mlcroissant parsed, before any download or extraction);
- a field has a data type h5ml does not convert (the table of
  :mod:`h5ml.ingest.croissant.records`), or audio needs librosa, which
  mlcroissant uses to decode it and which is not installed;
- which record set to convert, or which split its records go to, is not
  said (below).

Record set: the one record set that is neither an ``sc:Enumeration`` (class
names) nor a ``cr:Split`` (split names) one, or the one ``record_set=``
names (by ``@id`` or ``name``). Splits: Croissant's convention is a field
of data type ``cr:Split``, or one referencing a ``cr:Split`` record set:
each record goes to the split that field names. Without such a field every
record goes to the split ``split=`` names, and without ``split=`` the
conversion is refused (a record set without splits may be anything: train
data, test data, everything). The card (``name``, ``description``,
``license``, ``citeAs``, ``creator``, ``version``, ``url``, ``keywords``)
becomes the root metadata (§4.2); ``metadata=`` wins.

mlcroissant reads the records with a temporary cache folder of this
conversion alone and CSV cells as text (:mod:`h5ml.ingest.croissant.sandbox`).
The records stream through :func:`h5ml.ingest.samples.convert_samples`, so
memory stays bounded and a failed conversion leaves ``output`` as it was.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from h5ml.errors import IngestError, ParameterError
from h5ml.ingest.croissant.files import check_context, check_files
from h5ml.ingest.croissant.records import FieldPlan, data_type_names, plan_fields, read_numbers_as_text, split_plan
from h5ml.ingest.croissant.sandbox import private_reading
from h5ml.ingest.croissant.vocabulary import READ_VERSIONS, croissant_version, load_jsonld
from h5ml.ingest.docstrings import shared_doc
from h5ml.ingest.options import SHARD_OPTIONS, SHARED_OPTIONS, OnError
from h5ml.ingest.output import check_output, conversion_metadata
from h5ml.ingest.report import IngestReport
from h5ml.ingest.samples import convert_samples
from h5ml.model.values import FeatureSpec

__all__ = ["convert_croissant"]

#: The key of each sample that carries its split to :func:`convert_samples` (never a feature name: §5.1.1).
_SPLIT_KEY: Final = "_croissant_split"
_NOT_DATA: Final = ("https://schema.org/Enumeration", "http://mlcommons.org/croissant/Split")


def _mlcroissant() -> Any:
    try:
        import mlcroissant  # type: ignore[import-untyped]  # mlcroissant ships no type information
    except ImportError as exc:
        raise ModuleNotFoundError(
            "converting a Croissant JSON-LD file needs mlcroissant, which is not installed: pip install 'h5ml[croissant]'",
            name="mlcroissant",
        ) from exc
    return mlcroissant


def _refusal(exc: Exception, where: str, step: str) -> IngestError:
    """mlcroissant's exception ``exc`` during ``step`` as an IngestError naming the file.

    mlcroissant raises whatever its code meets: its ValidationError, but also
    KeyError on nodes that refer to each other in a circle, TypeError on a
    malformed node, AssertionError, ValueError, rdflib's errors.
    """
    import mlcroissant

    if isinstance(exc, mlcroissant.ValidationError):
        said = f"mlcroissant finds this Croissant invalid: {' '.join(str(exc).split())}"
        if "croissant/Split')]" in said and "does not specify a valid" in said:
            # A split field of data type cr:Split alone: mlcroissant wants the type of its values too.
            said += ' (a split field takes "dataType": ["cr:Split", "sc:Text"]: its role and its values\' type)'
    else:
        said = f"mlcroissant could not {step}: {type(exc).__name__}: {_causes(exc) or 'no message'}"
    return IngestError(f"{where}: {said}; fix the JSON-LD (nothing was written)", path=where)


def _parse(document: dict[str, Any], folder: Path, where: str) -> Any:
    """mlcroissant's Metadata of ``document`` (read by h5ml: a UTF-8 BOM is fine), its files in ``folder``."""
    mlcroissant = _mlcroissant()
    from etils import epath  # type: ignore[import-untyped]  # mlcroissant's own path type (a dependency of it)

    context = mlcroissant.Context(folder=epath.Path(folder.resolve()))  # absolute, as mlcroissant matches paths
    try:
        metadata = mlcroissant.Metadata.from_json(ctx=context, json_=document)
    except Exception as exc:  # mlcroissant's parser raises anything on a malformed document (see _refusal)
        raise _refusal(exc, where, "read the JSON-LD") from exc
    if context.issues.errors:
        raise _refusal(mlcroissant.ValidationError(context.issues.report()), where, "read the JSON-LD")
    return metadata


def _dataset(metadata: Any, where: str) -> Any:
    """The mlcroissant Dataset of checked ``metadata`` (its operations: nothing is read yet)."""
    mlcroissant = _mlcroissant()
    try:
        return mlcroissant.Dataset.from_metadata(metadata)
    except Exception as exc:
        raise _refusal(exc, where, "plan the reading of the records") from exc


def _choose(metadata: Any, record_set: str | None, where: str) -> Any:
    """The record set to convert (the module docstring)."""
    every = list(metadata.record_sets)
    if record_set is not None:
        chosen = [r for r in every if record_set in (r.id, r.name)]
        if not chosen:
            raise ParameterError(
                f"{where}: no record set {record_set!r}; it has {', '.join(repr(r.id) for r in every) or 'none'} "
                "(parameter record_set, option --record-set)"
            )
        return chosen[0]
    data = [r for r in every if not set(data_type_names(r)) & set(_NOT_DATA)]
    if len(data) == 1:
        return data[0]
    listed = ", ".join(repr(r.id) for r in data) or "none"
    raise ParameterError(
        f"{where}: {len(data)} record sets of data ({listed}); say which to convert with "
        "record_set='ID' (--record-set ID)"
    )


def _text(value: Any, what: str, where: str) -> str | None:
    """A Croissant text value: a string, or a 1.1 language map (its ``en`` text, or its one language's).

    Raises
    ------
    h5ml.IngestError
        If a language map has several languages and no ``en``: which to keep is the user's to say.
    """
    if isinstance(value, Mapping):
        if "en" in value or len(value) == 1:
            value = value.get("en", next(iter(value.values())))
        else:
            option = f" (--{what})" if what in ("name", "description") else ""
            raise IngestError(
                f"{where}: the card's {what} is given in {sorted(value)} and not in English; an h5ml file has one "
                f"{what}: give it with metadata={{{what!r}: ...}}{option}",
                path=where,
            )
    return value if isinstance(value, str) and value else None


def card(document: Mapping[str, Any], where: str, given: Mapping[str, Any], parsed: Any = None) -> dict[str, Any]:
    """The h5ml root metadata (§4.2) of a Croissant card, under the user's ``given`` metadata (which wins).

    Each field is read from the document's compact key (``name``, ``license``, ...); one spelled otherwise
    (a ``@context`` alias, a full schema.org IRI) is taken from mlcroissant's ``parsed`` Metadata, which has
    expanded the JSON-LD, so that no field of the card is lost for its spelling.

    Raises
    ------
    h5ml.IngestError
        If the card has several licenses (which one, or what SPDX expression,
        applies is the user's to say), or a name, description or citation in
        several languages but not English.
    """

    def read(key: str, attribute: str) -> Any:
        value = document.get(key)
        return getattr(parsed, attribute, None) if value is None and parsed is not None else value

    out: dict[str, Any] = {}
    for h5ml, croissant, attribute in (
        ("name", "name", "name"),
        ("description", "description", "description"),
        ("citation", "citeAs", "cite_as"),
    ):
        value = None if h5ml in given else _text(read(croissant, attribute), h5ml, where)
        if value is not None:
            out[h5ml] = value
    version = read("version", "version")
    if isinstance(version, (str, int, float)) and not isinstance(version, bool) and str(version):
        out["version"] = str(version)
    url = read("url", "url")
    if isinstance(url, str) and url.startswith(("http://", "https://")):
        out["homepage"] = url
    licenses = None if "license" in given else read("license", "license")
    licenses = licenses if isinstance(licenses, list) else [licenses] if licenses is not None else []
    licenses = [x.get("url", x.get("name")) if isinstance(x, Mapping) else x for x in licenses]
    if len(licenses) > 1:
        raise IngestError(
            f"{where}: the card has {len(licenses)} licenses ({licenses!r:.200}); an h5ml file has one license "
            "expression: give it with metadata={'license': ...} (--license)",
            path=where,
        )
    if licenses and isinstance(licenses[0], str) and licenses[0]:
        out["license"] = licenses[0]
    creators = None if "creator" in given else read("creator", "creators")
    creators = creators if isinstance(creators, list) else [creators] if creators is not None else []
    # a creator node of the document, its name, or mlcroissant's Person/Organization (its name attribute)
    names = [
        _text(c.get("name") if isinstance(c, Mapping) else getattr(c, "name", c), "creator", where) for c in creators
    ]
    if any(names):
        out["creator"] = "; ".join(n for n in names if n)
    keywords = read("keywords", "keywords")
    if isinstance(keywords, list) and keywords and all(isinstance(k, str) and k for k in keywords):
        out["keywords"] = list(keywords)
    return {**out, **given}


def _causes(exc: BaseException) -> str:
    """What ``exc`` and the exceptions it was raised from say, on one line (mlcroissant's own names only the step)."""
    said: list[str] = []
    current: BaseException | None = exc
    while current is not None and len(said) < 4:
        text = " ".join(str(current).split())
        if text and text not in said:
            said.append(text)
        current = current.__cause__ or current.__context__
    return ": ".join(said)


def _samples(
    dataset: Any, record_set: Any, plans: Sequence[FieldPlan], split: str | None, where: str
) -> Iterator[dict[str, Any]]:
    """The records of ``record_set`` as samples ``{feature: value, _SPLIT_KEY: split}``."""
    records: Iterator[Any] | None = None
    index = 0
    while True:
        try:
            records = iter(dataset.records(record_set=record_set.id)) if records is None else records
            record = next(records)
        except StopIteration:
            return
        except Exception as exc:  # mlcroissant raises anything (see _refusal)
            raise IngestError(
                f"{where}: mlcroissant could not produce record {index} of record set {record_set.id!r}: "
                f"{type(exc).__name__}: {_causes(exc) or 'no message'}; nothing was written",
                path=where,
            ) from exc
        at = f"{where}: record {index} of record set {record_set.id!r}"
        sample = {_SPLIT_KEY if p.kind == "split" else p.name: p.value(record.get(p.field_id), at) for p in plans}
        if split is not None:
            sample[_SPLIT_KEY] = split
        yield sample
        index += 1


@shared_doc(
    (*SHARED_OPTIONS, *SHARD_OPTIONS),
    notes={
        "features": "A feature given here takes these options instead of its field's own (the table of "
        ":mod:`h5ml.ingest.croissant.records`).",
        "workers": "Not used: mlcroissant yields the records one at a time, in this thread.",
        "processes": "Not used (see ``workers``).",
        "on_error": "A record that does not convert (a missing value, an image of another shape) always stops.",
    },
)
def convert_croissant(
    source: str | os.PathLike[str],
    output: str | os.PathLike[str],
    *,
    record_set: str | None = None,
    split: str | None = None,
    metadata: Mapping[str, Any] | None = None,
    features: Mapping[str, FeatureSpec | Mapping[str, Any]] | None = None,
    compression: str | None = None,
    level: int | None = None,
    shuffle: bool = False,
    seed: int | None = None,
    workers: int = 1,
    processes: bool = False,
    on_error: OnError = "stop",
    progress: bool | None = None,
    overwrite: bool = False,
    shard_size: int | str | None = None,
    samples_per_shard: int | None = None,
) -> IngestReport:
    """Convert the records of a Croissant JSON-LD dataset to an h5ml file (see the module docstring).

    Parameters
    ----------
    source
        The Croissant JSON-LD file (1.0 or 1.1); its local files are read by mlcroissant.
    output
        The h5ml file to write.
    record_set
        The ``@id`` or ``name`` of the record set to convert; needed when the
        dataset has several record sets of data.
    split
        The split of every record when the record set has no ``cr:Split``
        field; refused when it has one.
    {shared_parameters}

    Returns
    -------
    IngestReport
        Samples written per split.

    Raises
    ------
    h5ml.IngestError
        If the file is not Croissant, or mlcroissant cannot read it, or it
        refers to remote, ``file://``, outside (of its folder), missing or
        HDF5 files, has a field h5ml does not convert, a record that does not
        convert, or mlcroissant cannot produce the records; ``output`` is left as it was.
    h5ml.errors.ParameterError
        If the record set or the split is not said where it must be.
    ModuleNotFoundError
        If mlcroissant (``pip install 'h5ml[croissant]'``) is not installed.
    {shared_raises}
    """
    path = Path(source)
    where = os.fspath(path)
    sharded = shard_size is not None or samples_per_shard is not None
    check_output(output, overwrite, [path], sharded=sharded)  # before mlcroissant reads anything
    document = load_jsonld(path)
    version = croissant_version(document)
    if version not in READ_VERSIONS:
        raise IngestError(
            f"{where}: not a Croissant 1.0 or 1.1 JSON-LD file (conformsTo is {document.get('conformsTo')!r}); "
            f"h5ml reads conformsTo {' or '.join(READ_VERSIONS)}",
            path=where,
        )
    check_context(document, where)
    parsed = _parse(document, path.parent, where)
    check_files(parsed, where)
    meta = conversion_metadata("Croissant dataset", where, card(document, where, dict(metadata or {}), parsed), output)
    by_id = {r.id: r for r in parsed.record_sets}
    chosen = _choose(parsed, record_set, where)
    plans = plan_fields(chosen, by_id, where)
    split_field = split_plan(plans)
    if split_field is not None and split is not None:
        raise ParameterError(
            f"{where}: record set {chosen.id!r} names each record's split in field {split_field.field_id!r}; "
            "split= (--split) does not apply: leave it out"
        )
    if split_field is None and split is None:
        raise ParameterError(
            f"{where}: record set {chosen.id!r} has no cr:Split field, so nothing says which split its records "
            "belong to; confirm one with split='train' (--split train), or another split name"
        )
    if any(p.kind == "audio" for p in plans) and importlib.util.find_spec("librosa") is None:
        raise IngestError(
            f"{where}: record set {chosen.id!r} has sc:AudioObject fields, which mlcroissant decodes with librosa, "
            "which is not installed (pip install librosa); or convert the audio files themselves: "
            "`h5ml convert AUDIO_FOLDER OUT.h5`",
            path=where,
        )
    read_numbers_as_text(chosen, plans)
    with private_reading():  # mlcroissant's cache folder and CSV reader of this conversion alone
        samples = _samples(_dataset(parsed, where), chosen, plans, split, where)
        first = next(samples, None)
        if first is None:
            raise IngestError(f"{where}: record set {chosen.id!r} has no records; nothing to write", path=where)
        table: dict[str, FeatureSpec | Mapping[str, Any]] = {}
        for plan in plans:
            if plan.kind != "split":
                own = plan.spec()
                rate = plan.audio_rate()
                table[plan.name] = (
                    own if rate is None else FeatureSpec(encoding="ragged", dtype="float32", sample_rate=rate)
                )
        for name, given in (features or {}).items():
            table[name] = given
        return convert_samples(
            _chain(first, samples),
            output,
            split_key=_SPLIT_KEY,
            metadata=meta,
            features=table,
            compression=compression,
            level=level,
            shuffle=shuffle,
            seed=seed,
            workers=workers,
            processes=processes,
            on_error=on_error,
            progress=progress,
            overwrite=overwrite,
            shard_size=shard_size,
            samples_per_shard=samples_per_shard,
        )


def _chain(first: dict[str, Any], rest: Iterator[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    yield first
    yield from rest
