"""Convert NumPy ``.npz`` and ``.npy`` files to h5ml files (``h5ml convert``).

How array names map to splits and features (``.npz``)
-----------------------------------------------------
An array named ``<feature>_<split>`` goes to split ``<split>`` under feature
``<feature>``, where ``<split>`` is one of the suffixes below (case-sensitive)
and is written under its standard name (§5.1):

==========================================  ==============
suffix                                      split
==========================================  ==============
``train``, ``training``                     ``train``
``validation``, ``valid``, ``val``, ``dev`` ``validation``
``test``, ``testing``                       ``test``
==========================================  ==============

So Keras' layout ``x_train, y_train, x_valid, y_valid, x_test, y_test`` gives
splits train/validation/test, each with features ``x`` and ``y``. An array
whose name matches no pattern (``images``, ``x_eval``) goes to split ``train``
under its own, whole name. Feature ``x`` gets role ``input`` and ``y`` role
``target`` (§6.1). With ``label="y"`` the feature ``y`` is stored categorical
(§6.5) with the given class names, or ``"0" .. "K-1"`` where ``K - 1`` is the
largest code found in any split.

A ``.npy`` file holds one array: it becomes one feature (named after the file
stem unless ``feature`` is given) of one split (``train`` unless ``split`` is
given). It is memory-mapped, so the array is not loaded whole before writing.

Every check runs before anything is written, and the writer builds the file
beside the target and renames it at the end: when conversion fails, the
output path is left as it was.
"""

from __future__ import annotations

import math
import re
import zipfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

import numpy as np

from h5ml import spec
from h5ml.errors import EncodingError

__all__ = ["SPLIT_SUFFIXES", "convert_npy", "convert_npz", "split_array_name"]

#: Array-name suffixes recognised by :func:`split_array_name`, and the standard split each maps to (§5.1).
SPLIT_SUFFIXES: Final[Mapping[str, str]] = {
    "train": "train",
    "training": "train",
    "validation": "validation",
    "valid": "validation",
    "val": "validation",
    "dev": "validation",
    "test": "test",
    "testing": "test",
}

#: Split of arrays whose name has no recognised suffix.
DEFAULT_SPLIT: Final = "train"

#: Suffix of the array holding the class names of categorical feature ``<feature>`` (§6.5), as ``h5ml export`` writes it.
CLASS_NAMES_SUFFIX: Final = "_class_names"

#: Roles given to the conventional feature names (§6.1).
_DEFAULT_ROLES: Final[Mapping[str, str]] = {"x": "input", "y": "target"}

_NAME_RE: Final = re.compile(r"^(?P<feature>.+)_(?P<split>" + "|".join(SPLIT_SUFFIXES) + r")$")


def split_array_name(name: str) -> tuple[str, str]:
    """Map an ``.npz`` array name to ``(split, feature)``.

    Parameters
    ----------
    name
        The array name inside the archive, for example ``"x_valid"``.

    Returns
    -------
    tuple of str
        ``(split, feature)``: ``("validation", "x")`` for ``"x_valid"``; names
        without a recognised suffix (see :data:`SPLIT_SUFFIXES`) give
        ``("train", name)``.
    """
    match = _NAME_RE.match(name)
    if match is None:
        return DEFAULT_SPLIT, name
    return SPLIT_SUFFIXES[match.group("split")], match.group("feature")


def _check_output(output: Path, overwrite: bool, source: Path | None = None) -> None:
    if source is not None and output.exists() and output.resolve() == source.resolve():
        raise FileExistsError(
            f"{output}: the output is the source file itself; write to another path (the source would be lost)"
        )
    if output.exists() and not overwrite:
        raise FileExistsError(
            f"{output}: the output file exists; choose another path or pass overwrite=True (--overwrite)"
        )
    if output.is_dir():
        raise IsADirectoryError(
            f"{output}: the output path is a directory; give a file path such as {output / 'data.h5'}"
        )


def _check_declared_sizes(source: Path) -> None:
    """Refuse members whose .npy header declares more data than the member holds (§10.4).

    A crafted header can declare an array of terabytes in a few bytes; numpy
    would try to allocate it before noticing the data is missing.
    """
    with zipfile.ZipFile(source) as zf:
        for info in zf.infolist():
            if not info.filename.endswith(".npy"):
                continue
            with zf.open(info) as member:
                try:
                    version = np.lib.format.read_magic(member)
                    if version == (1, 0):
                        shape, _, dtype = np.lib.format.read_array_header_1_0(member)
                    else:
                        shape, _, dtype = np.lib.format.read_array_header_2_0(member)
                except ValueError as exc:
                    raise EncodingError(
                        f"{source}: member {info.filename!r} is not a valid .npy array ({exc})", path=str(source)
                    ) from None
                header_bytes = member.tell()
            declared = math.prod(shape) * dtype.itemsize
            if not dtype.hasobject and declared > info.file_size - header_bytes:
                raise EncodingError(
                    f"{source}: member {info.filename!r} declares an array of shape {shape} ({declared} bytes) "
                    f"but holds only {info.file_size - header_bytes} bytes of data; the archive is truncated or "
                    "crafted",
                    path=str(source),
                )


def _check_array(source: Path, array_name: str, array: np.ndarray) -> None:
    """Refuse arrays the storage profile cannot hold (§3.2, §10.2)."""
    if array.dtype.kind in "OV" or array.dtype.hasobject:
        raise EncodingError(
            f"{source}: array {array_name!r} has dtype {array.dtype} (Python objects or structured records), "
            "which h5ml does not store (§3.2, §10.2); convert it to a numeric or string array first",
            path=str(source),
        )
    if array.dtype.kind not in "biufUS":
        raise EncodingError(
            f"{source}: array {array_name!r} has dtype {array.dtype}, outside the storage profile (§3.2); "
            "convert it to integers, floats, booleans or strings first",
            path=str(source),
        )
    if array.ndim == 0:
        raise EncodingError(
            f"{source}: array {array_name!r} is a scalar; every feature needs a first (sample) axis (§5.3)",
            path=str(source),
        )


def _stored_class_names(
    source: Path,
    splits: dict[str, dict[str, tuple[str, np.ndarray]]],
    label: str | None,
    class_names: Sequence[str] | None,
) -> tuple[str | None, Sequence[str] | None]:
    """Take the class names of a categorical feature from its ``<feature>_class_names`` array (§6.5).

    ``h5ml export`` (:func:`h5ml.ingest.export.export_npz`) writes categorical
    codes as ``<feature>_<split>`` and their class names as
    ``<feature>_class_names``, which :func:`split_array_name` puts in split
    ``train``. That array is removed from the features and gives the class
    names of ``label`` when none are passed; without ``label``, a single such
    array whose ``<feature>`` is a feature of the archive makes that feature
    the label. The returned pair replaces ``(label, class_names)``.
    """
    train = splits.get(DEFAULT_SPLIT, {})
    stored = {
        feature[: -len(CLASS_NAMES_SUFFIX)]: feature
        for feature in train
        if feature.endswith(CLASS_NAMES_SUFFIX)
        and any(feature[: -len(CLASS_NAMES_SUFFIX)] in feats for feats in splits.values())
    }
    if label is None and len(stored) == 1:
        label = next(iter(stored))
    if label is None or label not in stored:
        return label, class_names
    array_name, array = train.pop(stored[label])
    if not train:
        del splits[DEFAULT_SPLIT]
    if class_names is None:
        if array.ndim != 1 or array.dtype.kind not in "US":
            raise EncodingError(
                f"{source}: array {array_name!r} should hold the class names of {label!r} as a 1-D string array, "
                f"got dtype {array.dtype} shape {array.shape}",
                path=str(source),
            )
        class_names = [str(n) for n in array.tolist()]
    return label, class_names


def _check_names(source: Path, array_name: str, split: str, feature: str) -> None:
    for kind, value in (("split", split), ("feature", feature)):
        if not spec.is_valid_name(value):
            raise EncodingError(
                f"{source}: array {array_name!r} gives the {kind} name {value!r}, which breaks the naming rule "
                "(§5.1.1: no '/', no leading '.', '_' or whitespace, no trailing whitespace, at most 255 UTF-8 bytes); "
                "rename the array",
                path=str(source),
            )


def _categorical(
    source: Path,
    label: str,
    arrays: Mapping[str, tuple[str, np.ndarray]],
    class_names: Sequence[str] | None,
) -> tuple[dict[str, Any], list[str]]:
    """Check the label arrays (one per split) and return their codes and the class names (§6.5)."""
    codes: dict[str, Any] = {}
    top = -1
    for split, (array_name, array) in arrays.items():
        if array.dtype.kind not in "iub":
            raise EncodingError(
                f"{source}: array {array_name!r} has dtype {array.dtype}; a categorical label (--label {label}) "
                "needs integer class codes (§6.5); omit --label to store it dense",
                path=str(source),
            )
        if array.ndim != 1:
            raise EncodingError(
                f"{source}: array {array_name!r} has shape {array.shape}; a categorical label (--label {label}) "
                "needs one code per sample, shape (N,) (§6.5)",
                path=str(source),
            )
        values = np.asarray(array).astype(np.int64)
        if values.size and values.min() < -1:
            raise EncodingError(
                f"{source}: array {array_name!r} holds the code {int(values.min())}; categorical codes are "
                ">= 0, with -1 meaning missing (§6.5)",
                path=str(source),
            )
        if values.size:
            top = max(top, int(values.max()))
        codes[split] = values
    if class_names is None:
        names = [str(k) for k in range(top + 1)]
    else:
        names = list(class_names)
        if top >= len(names):
            raise EncodingError(
                f"{source}: feature {label!r} holds the code {top} but only {len(names)} class names were given; "
                f"give at least {top + 1} (§6.5)",
                path=str(source),
            )
        if len(set(names)) != len(names) or any(not n for n in names):
            raise EncodingError(
                f"{source}: the class names {names!r} must be unique and non-empty (§6.5)", path=str(source)
            )
    return codes, names


def _write(
    source: Path,
    output: Path,
    splits: dict[str, dict[str, tuple[str, np.ndarray]]],
    *,
    label: str | None,
    class_names: Sequence[str] | None,
    compression: str | None,
    level: int | None,
    shuffle: bool,
    seed: int | None,
    name: str | None,
    description: str | None,
    license: str | None,
    overwrite: bool,
) -> Path:
    """Check every split and write the file through the reference writer."""
    from h5ml import writer

    for split, features in splits.items():
        lengths = {array_name: int(array.shape[0]) for array_name, array in features.values()}
        if len(set(lengths.values())) > 1:
            listed = ", ".join(f"{k!r} has {v}" for k, v in lengths.items())
            raise EncodingError(
                f"{source}: the arrays of split {split!r} have different numbers of samples along their first "
                f"axis ({listed}); every feature of a split has num_samples samples (§5.3)",
                path=str(source),
            )
    payload: dict[str, dict[str, Any]] = {
        split: {f: arr for f, (_, arr) in feats.items()} for split, feats in splits.items()
    }
    if label is not None:
        found = {split: feats[label] for split, feats in splits.items() if label in feats}
        if not found:
            raise EncodingError(
                f"{source}: --label {label!r} names no feature; the features are "
                f"{sorted({f for feats in splits.values() for f in feats})}",
                path=str(source),
            )
        codes, names = _categorical(source, label, found, class_names)
        for split, values in codes.items():
            payload[split][label] = writer.Categorical(values, names)
    elif class_names is not None:
        raise EncodingError(
            f"{source}: class names were given without a label feature (--label FEATURE)", path=str(source)
        )
    features_meta: dict[str, dict[str, Any]] = {}
    all_features = {f for feats in splits.values() for f in feats}
    for feature in sorted(all_features):
        role = "target" if feature == label else _DEFAULT_ROLES.get(feature)
        if role is not None:
            features_meta[feature] = {"role": role}
    metadata: dict[str, Any] = {"name": source.stem if name is None else name, "source": source.name}
    if description is not None:
        metadata["description"] = description
    if license is not None:
        metadata["license"] = license
    _check_output(output, overwrite, source)
    options: dict[str, Any] = {"compression": compression, "shuffle": shuffle, "seed": seed, "features": features_meta}
    if level is not None:
        options["compression_opts"] = level
    writer.write(output, payload, metadata=metadata, **options)
    return output


def convert_npz(
    source: str | Path,
    output: str | Path,
    *,
    compression: str | None = None,
    level: int | None = None,
    shuffle: bool = False,
    seed: int | None = None,
    name: str | None = None,
    description: str | None = None,
    license: str | None = None,
    label: str | None = None,
    class_names: Sequence[str] | None = None,
    overwrite: bool = False,
) -> Path:
    """Convert a NumPy ``.npz`` archive to an h5ml file.

    Parameters
    ----------
    source
        The ``.npz`` file. Arrays map to splits and features by name (see the
        module docstring and :func:`split_array_name`); every array of one
        split must have the same first-axis length (the samples, §5.3). Arrays
        are loaded one at a time without pickle support.
    output
        The h5ml file to create.
    compression
        ``"gzip"`` (deflate, §3.5) or ``None`` (the default: uncompressed data
        is the fastest to read).
    level
        The gzip level 0-9, or ``None`` for the writer's default.
    shuffle
        Store each split's samples in a random order and record the seed as
        ``shuffle_seed`` (§7.6). Off by default, so that row ``i`` of the file
        is row ``i`` of the source (ordered data such as time series must keep
        its order).
    seed
        The shuffle seed; ``None`` lets the writer choose (and record) one.
    name, description, license
        Root metadata (§4.2). ``name`` defaults to the source's stem; the
        root attribute ``source`` records the source file name.
    label
        A feature name to store as categorical (§6.5); its arrays must hold
        integer codes in ``[-1, K)``. Default: the feature whose class names
        the archive holds as ``<feature>_class_names`` (as ``h5ml export``
        writes them), when there is exactly one.
    class_names
        The class names of ``label``; default the array
        ``<label>_class_names`` when the archive has it, else ``"0" .. "K-1"``.
    overwrite
        Replace an existing ``output``.

    Returns
    -------
    pathlib.Path
        ``output``.

    Raises
    ------
    FileNotFoundError
        If ``source`` does not exist.
    FileExistsError
        If ``output`` exists and ``overwrite`` is false.
    EncodingError
        If the source is not an ``.npz`` archive, an array holds Python objects
        (a pickle) or a dtype outside §3.2, the arrays of one split disagree on
        their number of samples, or the label codes are invalid. The message
        names the file and the array. ``output`` is left untouched.
    """
    source, output = Path(source), Path(output)
    if not source.is_file():
        raise FileNotFoundError(f"{source}: no such file")
    _check_output(output, overwrite, source)
    if not zipfile.is_zipfile(source):
        raise EncodingError(
            f"{source}: not an .npz archive (a zip file of .npy arrays, as numpy.savez writes)", path=str(source)
        )
    splits: dict[str, dict[str, tuple[str, np.ndarray]]] = {}
    try:
        with np.load(source, allow_pickle=False) as archive:
            _check_declared_sizes(source)
            for array_name in archive.files:
                split, feature = split_array_name(array_name)
                _check_names(source, array_name, split, feature)
                try:
                    array = archive[array_name]
                except ValueError as exc:
                    raise EncodingError(
                        f"{source}: array {array_name!r} cannot be loaded without pickle ({exc}); "
                        "object arrays are not converted (§10.2): save it as a numeric or string array",
                        path=str(source),
                    ) from None
                _check_array(source, array_name, array)
                if feature in splits.setdefault(split, {}):
                    other = splits[split][feature][0]
                    raise EncodingError(
                        f"{source}: arrays {other!r} and {array_name!r} both map to feature {feature!r} of split "
                        f"{split!r}; rename one of them",
                        path=str(source),
                    )
                splits[split][feature] = (array_name, array)
    except (zipfile.BadZipFile, OSError, EOFError) as exc:
        if isinstance(exc, FileNotFoundError):
            raise
        raise EncodingError(f"{source}: the .npz archive cannot be read ({exc})", path=str(source)) from None
    if not splits:
        raise EncodingError(f"{source}: the archive holds no arrays; nothing to convert", path=str(source))
    label, class_names = _stored_class_names(source, splits, label, class_names)
    return _write(
        source,
        output,
        splits,
        label=label,
        class_names=class_names,
        compression=compression,
        level=level,
        shuffle=shuffle,
        seed=seed,
        name=name,
        description=description,
        license=license,
        overwrite=overwrite,
    )


def convert_npy(
    source: str | Path,
    output: str | Path,
    *,
    split: str = DEFAULT_SPLIT,
    feature: str | None = None,
    compression: str | None = None,
    level: int | None = None,
    shuffle: bool = False,
    seed: int | None = None,
    name: str | None = None,
    description: str | None = None,
    license: str | None = None,
    label: str | None = None,
    class_names: Sequence[str] | None = None,
    overwrite: bool = False,
) -> Path:
    """Convert a NumPy ``.npy`` array to a one-feature h5ml file.

    Parameters
    ----------
    source
        The ``.npy`` file; it is memory-mapped (``mmap_mode="r"``), never
        unpickled. Its first axis is the sample axis (§5.3).
    output
        The h5ml file to create.
    split
        The split to write (default ``"train"``).
    feature
        The feature name (default: the source's stem).
    compression, level, shuffle, seed, name, description, license, label, class_names, overwrite
        As for :func:`convert_npz`; ``label`` may only name ``feature``.

    Returns
    -------
    pathlib.Path
        ``output``.

    Raises
    ------
    FileNotFoundError
        If ``source`` does not exist.
    FileExistsError
        If ``output`` exists and ``overwrite`` is false.
    EncodingError
        If the source is not an ``.npy`` file, holds Python objects, has a
        dtype outside §3.2, is a scalar, or the names break §5.1. ``output``
        is left untouched.
    """
    source, output = Path(source), Path(output)
    if not source.is_file():
        raise FileNotFoundError(f"{source}: no such file")
    _check_output(output, overwrite, source)
    feature = source.stem if feature is None else feature
    _check_names(source, source.name, split, feature)
    try:
        array = np.load(source, mmap_mode="r", allow_pickle=False)
    except ValueError as exc:
        raise EncodingError(
            f"{source}: array {source.name!r} cannot be read as a plain .npy array ({exc}); object (pickled) "
            "arrays are not converted (§10.2) and the file must be written by numpy.save",
            path=str(source),
        ) from None
    except (OSError, EOFError) as exc:
        raise EncodingError(f"{source}: the .npy file cannot be read ({exc})", path=str(source)) from None
    if not isinstance(array, np.ndarray):
        array.close()
        raise EncodingError(f"{source}: holds an archive, not one array; use convert_npz", path=str(source))
    _check_array(source, source.name, array)
    return _write(
        source,
        output,
        {split: {feature: (source.name, array)}},
        label=label,
        class_names=class_names,
        compression=compression,
        level=level,
        shuffle=shuffle,
        seed=seed,
        name=name,
        description=description,
        license=license,
        overwrite=overwrite,
    )
