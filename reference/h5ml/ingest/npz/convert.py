"""The ``.npz`` and ``.npy`` converters: :func:`convert_npz` and :func:`convert_npy` (§4.2, §5, §6, §7.6).

Both read the arrays (:mod:`h5ml.ingest.npz.archive`), map their names to
splits and features (:mod:`h5ml.ingest.npz`), check every split before
anything is written, and write the file through :func:`h5ml.write`.
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from h5ml.errors import EncodingError
from h5ml.ingest.docstrings import shared_doc
from h5ml.ingest.features import ROLE_NAMES, with_user_features
from h5ml.ingest.naming import DEFAULT_SPLIT, split_array_name, split_feature_suffix
from h5ml.ingest.npz.archive import archive_metadata, check_array, check_names, load_npy, load_npz
from h5ml.ingest.npz.companions import ATTRS_SUFFIX, find_attributes, find_companions, offset_samples
from h5ml.ingest.npz.labels import SplitArrays, StoredNames, categorical, stored_class_names
from h5ml.ingest.options import ConvertOptions, OnError
from h5ml.ingest.output import check_output, conversion_metadata
from h5ml.ingest.provenance import Entry, record, source_split
from h5ml.ingest.report import IngestReport
from h5ml.model.values import FeatureSpec, column_length
from h5ml.writer import write

__all__ = ["convert_npy", "convert_npz"]

_ONE_PASS = "Not used: the arrays are checked whole, then written in one pass, in this thread."
#: How the two converters use the shared options, added to their paragraphs.
_NOTES = {
    "metadata": "The archive's scalar ``description`` is the default description.",
    "workers": _ONE_PASS,
    "processes": _ONE_PASS,
    "on_error": "Not used: a file converts whole or not at all (nothing is skipped).",
    "progress": "Not used: there is no bar for one pass over arrays.",
}


def _check_lengths(source: Path, splits: Mapping[str, SplitArrays]) -> None:
    for split, features in splits.items():
        lengths = {array_name: len(values) for array_name, values in features.values()}
        if len(set(lengths.values())) > 1:
            listed = ", ".join(f"{k!r} has {v}" for k, v in lengths.items())
            raise EncodingError(
                f"{source}: the arrays of split {split!r} have different numbers of samples along their first "
                f"axis ({listed}); every feature of a split has num_samples samples (§5.3)",
                path=str(source),
            )


def _write(
    source: Path,
    output: Path,
    splits: dict[str, SplitArrays],
    options: ConvertOptions,
    *,
    specs: Mapping[str, FeatureSpec],
    stored: StoredNames,
    label: str | None,
    class_names: Sequence[str] | None,
    description: str | None,
    origins: Mapping[str, list[Entry]],
    described: frozenset[str] = frozenset(),
) -> IngestReport:
    """Check every split and write the file through the reference writer.

    ``specs`` declares features by ``"split/feature"`` (ragged and bytes);
    ``origins`` is each split's record of source splits (:mod:`h5ml.ingest.provenance`);
    ``stored`` gives the class names read from the archive. ``label`` (with
    ``class_names``) and every feature of ``stored`` become categorical; the
    label is the one feature of ``stored`` when ``label`` is None. The
    features of ``described`` have their attributes in ``specs`` (``_attrs``
    arrays): they get no role from their names.
    """
    start = time.perf_counter()
    _check_lengths(source, splits)
    payload: dict[str, dict[str, Any]] = {
        split: {f: values for f, (_, values) in feats.items()} for split, feats in splits.items()
    }
    if label is None and len(stored) == 1:
        label = next(iter(stored))
    if label is None and class_names is not None:
        raise EncodingError(
            f"{source}: class names were given without a label feature (--label FEATURE)", path=str(source)
        )
    wanted: dict[str, tuple[Sequence[str] | Mapping[str, tuple[str, list[str]]] | None, str]] = {
        feature: (per_split, f"class names in {sorted({a for a, _ in per_split.values()})}")
        for feature, per_split in stored.items()
    }
    if label is not None:
        wanted[label] = (class_names if class_names is not None else stored.get(label), f"--label {label}")
    for feature, (names, why) in wanted.items():
        found = {split: feats[feature] for split, feats in splits.items() if feature in feats}
        if not found:
            raise EncodingError(
                f"{source}: --label {feature!r} names no feature; the features are "
                f"{sorted({f for feats in splits.values() for f in feats})}",
                path=str(source),
            )
        for split, values in categorical(source, feature, found, names, why).items():
            payload[split][feature] = values
    declared: dict[str, FeatureSpec] = {  # the label is the target, whatever role the archive records
        key: dataclasses.replace(fspec, role="target") if key.rpartition("/")[2] == label and fspec.role else fspec
        for key, fspec in specs.items()
    }
    for feature in sorted({f for feats in splits.values() for f in feats}):
        # a feature whose attributes the archive records (h5ml export) keeps them: no role from its name
        role = "target" if feature == label else None if feature in described else ROLE_NAMES.get(feature)
        if role is not None:
            declared[feature] = FeatureSpec(role=role)
    table = with_user_features(declared, options.features)
    given = {**({} if description is None else {"description": description}), **(options.metadata or {})}
    metadata = record(conversion_metadata("NumPy arrays", source.name, given, output), origins)  # license NOASSERTION
    out = check_output(output, options.overwrite, [source])
    write(
        out,
        payload,
        metadata,
        shuffle=options.shuffle,
        seed=options.shuffle_seed,
        features=table,
        **options.writer_options(),
    )
    samples = {split: column_length(next(iter(feats.values()))) or 0 for split, feats in payload.items()}
    return IngestReport(out, samples=samples, seconds=time.perf_counter() - start)


def _existing(source: str | os.PathLike[str]) -> Path:
    path = Path(source)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file")
    return path


@shared_doc(notes=_NOTES)
def convert_npz(
    source: str | os.PathLike[str],
    output: str | os.PathLike[str],
    *,
    label: str | None = None,
    class_names: Sequence[str] | None = None,
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
) -> IngestReport:
    """Convert a NumPy ``.npz`` archive to an h5ml file.

    Parameters
    ----------
    source
        The ``.npz`` file. Arrays map to splits and features by name (see
        :mod:`h5ml.ingest.npz` and :func:`h5ml.ingest.naming.split_array_name`);
        every array of one split must have the same first-axis length (the
        samples, §5.3), and companion arrays (``_offsets``, ``_shapes``,
        ``_media_type``, ``_class_names``, as ``h5ml export`` writes them)
        give ragged, bytes and categorical features, and ``<array>_attrs``
        (a JSON string) the role, description, units and sample rate of the
        feature of ``<array>`` (over the roles of the conventional names). The tutorials' scalars
        are metadata: a string ``description`` is the description (unless
        ``metadata`` gives one), and a whole number ``nb_classes`` (or
        ``num_classes``, ``n_classes``) K makes ``y`` (or ``label``)
        categorical with class names ``"0" .. "K-1"`` (unless ``class_names``
        is given). Arrays are loaded without pickle support.
    output
        The h5ml file to create.
    label
        A feature name to store as categorical (§6.5) with role ``target``;
        its arrays must hold integer codes in ``[-1, K)``. Default (None): the
        feature whose class names the archive holds (as ``h5ml export``
        writes them), when there is exactly one. Every feature whose class
        names the archive holds is stored categorical whatever ``label``.
    class_names
        The class names of ``label`` in every split; default the archive's
        ``<label>_<split>_class_names`` or ``<label>_class_names``, else
        ``"0" .. "K-1"``.
    {shared_parameters}

    Returns
    -------
    IngestReport
        The file written, the samples per split, the time taken.

    Raises
    ------
    FileNotFoundError
        If ``source`` does not exist.
    EncodingError
        If the source is not an ``.npz`` archive, an array holds Python objects
        (a pickle) or a dtype outside §3.2, the arrays of one split disagree on
        their number of samples, the label codes are invalid, or companion
        arrays do not fit their values (offsets out of range, shapes that do
        not hold a sample's values, bytes that are not uint8). The message
        names the file and the array. ``output`` is left untouched.
    h5ml.IngestError
        If a class-count scalar is not a whole number >= 1 or two disagree, or
        an ``_attrs`` array is not one JSON string of valid attributes.
    {shared_raises}
    """
    options = ConvertOptions.pick(locals()).seeded()
    path = _existing(source)
    check_output(output, options.overwrite, [path])
    arrays = load_npz(path)
    description, class_count = archive_metadata(path, arrays)  # removes those scalars from arrays
    if class_count is not None and class_names is None:
        if label is None and not any(split_array_name(a)[1] == "y" for a in arrays):
            raise EncodingError(
                f"{path}: the archive gives {class_count} classes but has no array y_<split> to label; name the "
                "label feature (label=, --label FEATURE)",
                path=str(path),
            )
        label = "y" if label is None else label
        class_names = [str(code) for code in range(class_count)]
    if not arrays:
        raise EncodingError(f"{path}: the archive holds no arrays; nothing to convert", path=str(path))
    companions = find_companions(path, list(arrays))
    attributes = find_attributes(path, arrays)
    consumed = {member for group in companions.values() for member in group.values()}
    consumed |= {base + ATTRS_SUFFIX for base in attributes}
    splits: dict[str, SplitArrays] = {}
    specs: dict[str, FeatureSpec] = {}
    origins: dict[str, list[Entry]] = {}
    for array_name, array in arrays.items():
        if array_name in consumed:
            continue
        split, feature = split_array_name(array_name)
        suffix = array_name[len(feature) + 1 :] if split_feature_suffix(array_name) else None
        origins.setdefault(split, []).append(source_split(path, suffix, "array name" if suffix else "default"))
        check_names(path, array_name, split, feature)
        values: Any = array
        if array_name in companions:
            values, specs[f"{split}/{feature}"] = offset_samples(path, array_name, arrays, companions[array_name])
        else:
            check_array(path, array_name, array)
        if array_name in attributes:  # over the encoding, dtype and media type the values gave
            key = f"{split}/{feature}"
            specs[key] = specs.get(key, FeatureSpec()).merged(attributes[array_name])
        if feature in splits.setdefault(split, {}):
            other = splits[split][feature][0]
            raise EncodingError(
                f"{path}: arrays {other!r} and {array_name!r} both map to feature {feature!r} of split "
                f"{split!r}; rename one of them",
                path=str(path),
            )
        splits[split][feature] = (array_name, values)
    stored = stored_class_names(path, splits)
    return _write(
        path,
        Path(output),
        splits,
        options,
        specs=specs,
        stored=stored,
        label=label,
        class_names=class_names,
        description=description,
        origins=origins,
        described=frozenset(split_array_name(base)[1] for base in attributes),
    )


@shared_doc(notes=_NOTES)
def convert_npy(
    source: str | os.PathLike[str],
    output: str | os.PathLike[str],
    *,
    split: str | None = None,
    feature: str | None = None,
    label: str | None = None,
    class_names: Sequence[str] | None = None,
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
) -> IngestReport:
    """Convert a NumPy ``.npy`` array to a one-feature h5ml file.

    Parameters
    ----------
    source
        The ``.npy`` file; it is memory-mapped (``mmap_mode="r"``), never
        unpickled. Its first axis is the sample axis (§5.3).
    output
        The h5ml file to create.
    split
        The split to write (``--split NAME``); default (None) ``"train"``.
        The output records that the split was named by this option, or by
        the default (:mod:`h5ml.ingest.provenance`): an ``.npy`` file names no split.
    feature
        The feature name (default: the source's stem).
    label, class_names
        As for :func:`convert_npz`; ``label`` may only name ``feature``.
    {shared_parameters}

    Returns
    -------
    IngestReport
        The file written, the samples of its one split, the time taken.

    Raises
    ------
    FileNotFoundError
        If ``source`` does not exist.
    EncodingError
        If the source is not an ``.npy`` file, holds Python objects, has a
        dtype outside §3.2, is a scalar, or the names break §5.1. ``output``
        is left untouched.
    {shared_raises}
    """
    options = ConvertOptions.pick(locals()).seeded()
    path = _existing(source)
    check_output(output, options.overwrite, [path])
    name = path.stem if feature is None else feature
    target = DEFAULT_SPLIT if split is None else split
    check_names(path, path.name, target, name)
    array = load_npy(path)
    check_array(path, path.name, array)
    splits = {target: {name: (path.name, array)}}
    origins = {target: [source_split(path, None, "default" if split is None else "option")]}
    return _write(
        path,
        Path(output),
        splits,
        options,
        specs={},
        stored={},
        label=label,
        class_names=class_names,
        description=None,
        origins=origins,
    )
