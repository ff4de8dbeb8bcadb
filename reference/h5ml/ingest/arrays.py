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

Companion arrays (as ``h5ml export`` writes them)
--------------------------------------------------
Some arrays describe another array ``<base>`` of the archive rather than
being features of their own (:func:`h5ml.ingest.export.export_npz` writes
them; the names are :data:`OFFSETS_SUFFIX`, :data:`SHAPES_SUFFIX`,
:data:`MEDIA_TYPE_SUFFIX` and :data:`CLASS_NAMES_SUFFIX`):

=================================  =====================================================================
array                              meaning
=================================  =====================================================================
``<base>_offsets``                 int (N+1,), from 0 up to the rows of ``<base>``: ``<base>`` holds the
                                   values of a ragged feature, sample i being
                                   ``<base>[offsets[i]:offsets[i+1]]`` (§6.3)
``<base>_shapes``                  int (N, D), beside ``_offsets``: ``<base>`` is 1-D and sample i is
                                   reshaped (C order) to ``shapes[i]``; stored with ``shapes`` (§6.3)
``<base>_media_type``              one string, beside ``_offsets``: ``<base>`` is uint8 and the feature
                                   is ``bytes`` with that media type (§6.6), sample i the byte string
``<feature>_class_names``          str (K,): the class names of categorical feature ``<feature>`` in
                                   every split; its ``<feature>_<split>`` arrays are the codes (§6.5)
``<feature>_<split>_class_names``  str (K,): the same, for that split only (over the one above)
=================================  =====================================================================

A companion is recognised only beside its ``<base>`` (and ``_shapes`` and
``_media_type`` only beside ``_offsets``); otherwise it is an ordinary
array. The ``label`` and ``class_names`` options override stored class names.

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
from h5ml.model.values import Categorical, FeatureSpec

__all__ = [
    "CLASS_COUNT_NAMES",
    "CLASS_NAMES_SUFFIX",
    "MEDIA_TYPE_SUFFIX",
    "OFFSETS_SUFFIX",
    "SHAPES_SUFFIX",
    "SPLIT_SUFFIXES",
    "convert_npy",
    "convert_npz",
    "split_array_name",
]

#: Array-name suffixes recognised by :func:`split_array_name`, and the standard split each maps to (§5.1).
#: The converters of every source kind map split names with it.
SPLIT_SUFFIXES: Final[Mapping[str, str]] = {
    **{name: name for name in spec.STANDARD_SPLITS},
    **spec.SPLIT_ALIASES,
    "training": "train",
    "testing": "test",
}

#: Split of arrays whose name has no recognised suffix.
DEFAULT_SPLIT: Final = "train"

#: Names under which the tutorials store a number of classes: a scalar array of an .npz, a root attribute of
#: an HDF5 file. With a number K, ``y`` becomes categorical with class names "0" .. "K-1" (§6.5).
CLASS_COUNT_NAMES: Final = ("nb_classes", "num_classes", "n_classes")
#: The scalar array of an .npz that holds the dataset's description (§4.2), as the tutorials store it.
DESCRIPTION_NAME: Final = "description"

#: Suffix of the array holding the class names of categorical feature ``<feature>`` (§6.5), as ``h5ml export`` writes it.
CLASS_NAMES_SUFFIX: Final = "_class_names"
#: Suffix of the offsets (N+1,) of the ragged or bytes values ``<base>`` (§6.3, §6.6), as ``h5ml export`` writes them.
OFFSETS_SUFFIX: Final = "_offsets"
#: Suffix of the per-sample shapes (N, D) of the ragged values ``<base>`` (§6.3), beside their offsets.
SHAPES_SUFFIX: Final = "_shapes"
#: Suffix of the media type of the bytes values ``<base>`` (§6.6), beside their offsets: it marks them bytes.
MEDIA_TYPE_SUFFIX: Final = "_media_type"

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
            f"{source}: array {array_name!r} is a scalar; every feature needs a first (sample) axis (§5.3). Scalars "
            f"named {DESCRIPTION_NAME!r} or {' / '.join(CLASS_COUNT_NAMES)} are read as the description and the "
            "number of classes; give other metadata with --description, --class-names or h5ml.Writer.update_metadata",
            path=str(source),
        )


def _archive_metadata(source: Path, arrays: dict[str, np.ndarray]) -> tuple[str | None, int | None]:
    """Take the tutorials' scalar metadata out of ``arrays``: the description and a number of classes (§4.2, §6.5).

    Returns
    -------
    tuple
        The description (a 0-d string array named ``description``) and the
        number of classes (a 0-d whole number >= 1 named one of
        :data:`CLASS_COUNT_NAMES`), each None when absent.

    Raises
    ------
    EncodingError
        If such a scalar has another type, or two class counts disagree.
    """
    description: str | None = None
    value = arrays.get(DESCRIPTION_NAME)
    if value is not None and value.ndim == 0:
        if value.dtype.kind not in "US":
            raise EncodingError(
                f"{source}: the scalar {DESCRIPTION_NAME!r} is a {value.dtype} number, not text; store a string",
                path=str(source),
            )
        item = value.item()
        description = item.decode("utf-8", "replace") if isinstance(item, bytes) else str(item)
        del arrays[DESCRIPTION_NAME]
    counts: dict[str, int] = {}
    for name in CLASS_COUNT_NAMES:
        value = arrays.get(name)
        if value is None or value.ndim != 0:
            continue
        number = value.item() if value.dtype.kind in "iuf" else None
        if not isinstance(number, (int, float)) or number != math.floor(number) or number < 1:
            raise EncodingError(
                f"{source}: the scalar {name!r} = {value.item()!r} is not a whole number of classes >= 1; fix it "
                "or remove it",
                path=str(source),
            )
        counts[name] = int(number)
        del arrays[name]
    if len(set(counts.values())) > 1:
        raise EncodingError(
            f"{source}: the scalars {counts} disagree on the number of classes; keep one", path=str(source)
        )
    return description, next(iter(counts.values()), None)


#: One split's features: feature -> (the array it came from, its samples: an array, or a list for ragged and bytes).
_Split = dict[str, tuple[str, Any]]
#: Class names read from the archive: feature -> split -> (the array they came from, the names).
_StoredNames = dict[str, dict[str, tuple[str, list[str]]]]


def _companions(source: Path, names: Sequence[str]) -> dict[str, dict[str, str]]:
    """The companion arrays of every ragged or bytes values array (see the module docstring).

    Parameters
    ----------
    source
        The archive, for messages.
    names
        Every array name of the archive.

    Returns
    -------
    dict
        ``<base>`` -> ``{"offsets": name, "shapes": name, "media_type": name}``
        (the last two when present) for every ``<base>`` that has
        ``<base>_offsets``.

    Raises
    ------
    EncodingError
        If a values array is also the companion of another (``x``,
        ``x_offsets`` and ``x_offsets_offsets``): which is meant is unclear.
    """
    present = set(names)
    found: dict[str, dict[str, str]] = {}
    for name in names:
        base = name[: -len(OFFSETS_SUFFIX)]
        if name.endswith(OFFSETS_SUFFIX) and base in present:
            group = {"offsets": name}
            for role, suffix in (("shapes", SHAPES_SUFFIX), ("media_type", MEDIA_TYPE_SUFFIX)):
                if base + suffix in present:
                    group[role] = base + suffix
            found[base] = group
    for base, group in found.items():
        for other, other_group in found.items():
            if base in other_group.values():
                raise EncodingError(
                    f"{source}: array {base!r} is both the values of a ragged or bytes feature (beside "
                    f"{group['offsets']!r}) and a companion of {other!r}; rename one of them",
                    path=str(source),
                )
    return found


def _offset_samples(
    source: Path, base: str, arrays: Mapping[str, np.ndarray], group: Mapping[str, str]
) -> tuple[list[Any], FeatureSpec]:
    """The samples of the ragged or bytes feature whose values are array ``base`` (§6.3, §6.6).

    Parameters
    ----------
    source
        The archive, for messages.
    base
        The values array: (M, ...) rows, or (M,) elements beside shapes, or
        uint8 (M,) bytes beside a media type.
    arrays
        Every array of the archive, by name.
    group
        Its companions, as :func:`_companions` gives them.

    Returns
    -------
    tuple
        The samples (views of ``base``: arrays, reshaped when shapes are
        given; ``bytes`` for a bytes feature) and the options that declare the
        feature: encoding, dtype, ``sample_ndim`` (shapes of D > 1 axes),
        media type.

    Raises
    ------
    EncodingError
        If the offsets are not 1-D integers from 0, never decreasing, to the
        rows of ``base``; the shapes are not (N, D) integers that hold each
        sample's values exactly; a bytes feature's values are not 1-D uint8 or
        its media type not one string; or ragged values are not numbers or
        booleans. The message names the archive and the arrays.
    """
    values = arrays[base]
    _check_array(source, base, values)
    offsets_name = group["offsets"]
    offsets = arrays[offsets_name]
    if offsets.ndim != 1 or offsets.dtype.kind not in "iu" or offsets.shape[0] == 0:
        raise EncodingError(
            f"{source}: array {offsets_name!r} should hold the offsets of {base!r}, a 1-D integer array of N+1 "
            f"values (§6.3), got dtype {offsets.dtype} shape {offsets.shape}; rename it if it is a feature",
            path=str(source),
        )
    bounds = offsets.astype(np.int64)
    rows = int(values.shape[0])
    if bounds[0] != 0 or bounds[-1] != rows or bool(np.any(bounds[1:] < bounds[:-1])):
        raise EncodingError(
            f"{source}: array {offsets_name!r} does not hold offsets into {base!r}: they must start at 0, never "
            f"decrease and end at its {rows} rows (§6.3), got {int(bounds[0])} .. {int(bounds[-1])}",
            path=str(source),
        )
    spans = list(zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True))
    media_name = group.get("media_type")
    shapes_name = group.get("shapes")
    if media_name is not None:
        media = arrays[media_name]
        if media.dtype.kind != "U" or media.size != 1 or shapes_name is not None:
            raise EncodingError(
                f"{source}: array {media_name!r} should hold the media type of the bytes feature {base!r}, one "
                f"string (§6.6), got dtype {media.dtype} shape {media.shape}"
                + (f", beside {shapes_name!r} (bytes samples have no shapes)" if shapes_name is not None else ""),
                path=str(source),
            )
        if values.dtype != np.uint8 or values.ndim != 1:
            raise EncodingError(
                f"{source}: array {base!r} holds the bytes of a bytes feature (beside {media_name!r}) and must be "
                f"uint8 of shape (M,) (§6.6), got dtype {values.dtype} shape {values.shape}",
                path=str(source),
            )
        samples: list[Any] = [values[a:b].tobytes() for a, b in spans]
        return samples, FeatureSpec(encoding="bytes", media_type=str(media.reshape(-1)[0]))
    if values.dtype.kind not in "biuf":
        raise EncodingError(
            f"{source}: array {base!r} holds the values of a ragged feature (beside {offsets_name!r}) but has "
            f"dtype {values.dtype}; ragged values are numbers or booleans (§6.3)",
            path=str(source),
        )
    if shapes_name is None:
        return [values[a:b] for a, b in spans], FeatureSpec(encoding="ragged", dtype=values.dtype)
    shapes = arrays[shapes_name]
    if shapes.ndim != 2 or shapes.dtype.kind not in "iu" or shapes.shape[0] != len(spans) or shapes.shape[1] == 0:
        raise EncodingError(
            f"{source}: array {shapes_name!r} should hold the shape of each of the {len(spans)} samples of "
            f"{base!r}, an integer array (N, D) with D >= 1 (§6.3), got dtype {shapes.dtype} shape {shapes.shape}",
            path=str(source),
        )
    if values.ndim != 1:
        raise EncodingError(
            f"{source}: array {base!r} has shape {values.shape}; beside {shapes_name!r} it must be 1-D, every "
            "sample's values in C order (§6.3)",
            path=str(source),
        )
    dims = shapes.astype(np.int64)
    lengths = bounds[1:] - bounds[:-1]
    wrong = np.flatnonzero((dims < 0).any(axis=1) | (np.prod(dims, axis=1) != lengths))
    if wrong.size:
        i = int(wrong[0])
        raise EncodingError(
            f"{source}: sample {i} of {base!r} has {int(lengths[i])} values but {shapes_name!r} gives it the shape "
            f"{tuple(dims[i].tolist())}; each shape must hold exactly its sample's values (§6.3)",
            path=str(source),
        )
    ndim = int(dims.shape[1])
    samples = [values[a:b].reshape(shape) for (a, b), shape in zip(spans, dims.tolist(), strict=True)]
    return samples, FeatureSpec(encoding="ragged", dtype=values.dtype, sample_ndim=ndim if ndim > 1 else None)


def _stored_class_names(source: Path, splits: dict[str, _Split]) -> _StoredNames:
    """Take the class names arrays out of the features (§6.5; see the module docstring).

    :func:`split_array_name` puts ``<feature>_class_names`` and
    ``<feature>_<split>_class_names`` in split ``train``, as features of their
    own. Those whose ``<feature>`` is a feature of the archive (of that split,
    for the second form) are removed from ``splits`` (and ``train`` with them
    when nothing else is left in it) and returned.

    Returns
    -------
    dict
        feature -> split -> (array name, class names), for every split that
        holds the feature and has class names (the per-split array over the
        shared one).

    Raises
    ------
    EncodingError
        If such an array is not a 1-D string array.
    """
    train = splits.get(DEFAULT_SPLIT, {})
    shared: dict[str, tuple[str, list[str]]] = {}
    per_split: dict[tuple[str, str], tuple[str, list[str]]] = {}
    for name in list(train):
        if not name.endswith(CLASS_NAMES_SUFFIX):
            continue
        prefix = name[: -len(CLASS_NAMES_SUFFIX)]
        match = _NAME_RE.match(prefix)
        split = SPLIT_SUFFIXES[match.group("split")] if match else ""
        if match and match.group("feature") in splits.get(split, {}):
            key: tuple[str, str] | None = (split, match.group("feature"))
        elif any(prefix in features for features in splits.values()):
            key = None
        else:
            continue
        array_name, array = train.pop(name)
        if array.ndim != 1 or array.dtype.kind not in "US":
            raise EncodingError(
                f"{source}: array {array_name!r} should hold the class names of {prefix!r} as a 1-D string array "
                f"(§6.5), got dtype {array.dtype} shape {array.shape}",
                path=str(source),
            )
        names = [n.decode("utf-8", "replace") if isinstance(n, bytes) else str(n) for n in array.tolist()]
        if key is None:
            shared[prefix] = (array_name, names)
        else:
            per_split[key] = (array_name, names)
    if not train:
        splits.pop(DEFAULT_SPLIT, None)
    stored: _StoredNames = {}
    for split, features in splits.items():
        for feature in features:
            found = per_split.get((split, feature), shared.get(feature))
            if found is not None:
                stored.setdefault(feature, {})[split] = found
    return stored


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
    feature: str,
    arrays: Mapping[str, tuple[str, Any]],
    class_names: Sequence[str] | Mapping[str, tuple[str, list[str]]] | None,
    why: str,
) -> dict[str, Categorical]:
    """Check the codes of a categorical feature (one array per split) and pair them with class names (§6.5).

    Parameters
    ----------
    source
        The archive, for messages.
    feature
        The feature.
    arrays
        split -> (array name, codes).
    class_names
        The names for every split, or split -> (array name, names) as
        :func:`_stored_class_names` gives them, or None: ``"0" .. "K-1"``
        where ``K - 1`` is the largest code of any split (also for a split the
        mapping lacks).
    why
        Why the feature is categorical (``"--label y"``), for messages.

    Returns
    -------
    dict
        split -> the feature's values.

    Raises
    ------
    EncodingError
        If codes are not integers of shape (N,), a code is below -1 or has no
        class name, or class names are repeated or empty.
    """
    codes: dict[str, np.ndarray] = {}
    for split, (array_name, array) in arrays.items():
        if not isinstance(array, np.ndarray) or array.dtype.kind not in "iub":
            kind = f"dtype {array.dtype}" if isinstance(array, np.ndarray) else "ragged or bytes samples"
            raise EncodingError(
                f"{source}: array {array_name!r} has {kind}; a categorical feature ({why}) needs integer class "
                "codes (§6.5); omit the class names to store it as it is",
                path=str(source),
            )
        if array.ndim != 1:
            raise EncodingError(
                f"{source}: array {array_name!r} has shape {array.shape}; a categorical feature ({why}) needs one "
                "code per sample, shape (N,) (§6.5)",
                path=str(source),
            )
        values = np.asarray(array).astype(np.int64)
        if values.size and values.min() < -1:
            raise EncodingError(
                f"{source}: array {array_name!r} holds the code {int(values.min())}; categorical codes are "
                ">= 0, with -1 meaning missing (§6.5)",
                path=str(source),
            )
        codes[split] = values
    top = max((int(v.max()) for v in codes.values() if v.size), default=-1)
    out: dict[str, Categorical] = {}
    for split, values in codes.items():
        given: Sequence[str] | None
        if isinstance(class_names, Mapping):
            given = class_names[split][1] if split in class_names else None
        else:
            given = class_names
        if given is None:
            out[split] = Categorical(values, [str(k) for k in range(top + 1)])
            continue
        names = list(given)
        split_top = int(values.max()) if values.size else -1
        if split_top >= len(names):
            raise EncodingError(
                f"{source}: feature {feature!r} of split {split!r} holds the code {split_top} but only {len(names)} "
                f"class names were given; give at least {split_top + 1} (§6.5)",
                path=str(source),
            )
        if len(set(names)) != len(names) or any(not n for n in names):
            raise EncodingError(
                f"{source}: the class names {names!r} of feature {feature!r} must be unique and non-empty (§6.5)",
                path=str(source),
            )
        out[split] = Categorical(values, names)
    return out


def _write(
    source: Path,
    output: Path,
    splits: dict[str, _Split],
    *,
    specs: Mapping[str, FeatureSpec],
    stored: _StoredNames,
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
    """Check every split and write the file through the reference writer.

    ``specs`` declares features by ``"split/feature"`` (ragged and bytes);
    ``stored`` gives the class names read from the archive. ``label`` (with
    ``class_names``) and every feature of ``stored`` become categorical; the
    label is the one feature of ``stored`` when ``label`` is None.
    """
    from h5ml.writer import writer

    for split, features in splits.items():
        lengths = {array_name: len(values) for array_name, values in features.values()}
        if len(set(lengths.values())) > 1:
            listed = ", ".join(f"{k!r} has {v}" for k, v in lengths.items())
            raise EncodingError(
                f"{source}: the arrays of split {split!r} have different numbers of samples along their first "
                f"axis ({listed}); every feature of a split has num_samples samples (§5.3)",
                path=str(source),
            )
    payload: dict[str, dict[str, Any]] = {
        split: {f: values for f, (_, values) in feats.items()} for split, feats in splits.items()
    }
    if label is None and len(stored) == 1:
        label = next(iter(stored))
    if label is None and class_names is not None:
        raise EncodingError(
            f"{source}: class names were given without a label feature (--label FEATURE)", path=str(source)
        )
    categorical: dict[str, tuple[Sequence[str] | Mapping[str, tuple[str, list[str]]] | None, str]] = {
        feature: (per_split, f"class names in {sorted({a for a, _ in per_split.values()})}")
        for feature, per_split in stored.items()
    }
    if label is not None:
        given = class_names if class_names is not None else stored.get(label)
        categorical[label] = (given, f"--label {label}")
    for feature, (names, why) in categorical.items():
        found = {split: feats[feature] for split, feats in splits.items() if feature in feats}
        if not found:
            raise EncodingError(
                f"{source}: --label {feature!r} names no feature; the features are "
                f"{sorted({f for feats in splits.values() for f in feats})}",
                path=str(source),
            )
        for split, values in _categorical(source, feature, found, names, why).items():
            payload[split][feature] = values
    features_meta: dict[str, FeatureSpec | dict[str, Any]] = dict(specs)
    all_features = {f for feats in splits.values() for f in feats}
    for feature in sorted(all_features):
        role = "target" if feature == label else _DEFAULT_ROLES.get(feature)
        if role is not None:
            features_meta[feature] = {"role": role}
    from h5ml.ingest.pipeline import conversion_metadata

    root: dict[str, Any] = {"name": Path(output).stem if name is None else name}
    if description is not None:
        root["description"] = description
    if license is not None:
        root["license"] = license
    metadata = conversion_metadata("NumPy arrays", source.name, root)  # license NOASSERTION unless given (§4.2)
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
        split must have the same first-axis length (the samples, §5.3), and
        companion arrays (``_offsets``, ``_shapes``, ``_media_type``,
        ``_class_names``, as ``h5ml export`` writes them) give ragged, bytes
        and categorical features. The tutorials' scalars are metadata: a
        string ``description`` is the description (unless ``description`` is
        given), and a whole number ``nb_classes`` (or ``num_classes``,
        ``n_classes``) K makes ``y`` (or ``label``) categorical with class
        names ``"0" .. "K-1"`` (unless ``class_names`` is given). Arrays are
        loaded without pickle support.
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
        Root metadata (§4.2). ``name`` defaults to the output's stem (as for
        every converter); ``description`` to one naming the source, and
        ``license`` to ``"NOASSERTION"`` (none stated), so that the file
        passes ``validate --strict``; the root attribute ``source`` records
        the source file name.
    label
        A feature name to store as categorical (§6.5) with role ``target``;
        its arrays must hold integer codes in ``[-1, K)``. Default: the
        feature whose class names the archive holds (as ``h5ml export``
        writes them), when there is exactly one. Every feature whose class
        names the archive holds is stored categorical whatever ``label``.
    class_names
        The class names of ``label`` in every split; default the archive's
        ``<label>_<split>_class_names`` or ``<label>_class_names``, else
        ``"0" .. "K-1"``.
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
        their number of samples, the label codes are invalid, or companion
        arrays do not fit their values (offsets out of range, shapes that do
        not hold a sample's values, bytes that are not uint8). The message
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
    arrays: dict[str, np.ndarray] = {}
    try:
        with np.load(source, allow_pickle=False) as archive:
            _check_declared_sizes(source)
            for array_name in archive.files:
                try:
                    arrays[array_name] = archive[array_name]
                except ValueError as exc:
                    raise EncodingError(
                        f"{source}: array {array_name!r} cannot be loaded without pickle ({exc}); "
                        "object arrays are not converted (§10.2): save it as a numeric or string array",
                        path=str(source),
                    ) from None
    except (zipfile.BadZipFile, OSError, EOFError) as exc:
        if isinstance(exc, FileNotFoundError):
            raise
        raise EncodingError(f"{source}: the .npz archive cannot be read ({exc})", path=str(source)) from None
    found_description, class_count = _archive_metadata(source, arrays)  # removes those scalars from arrays
    if description is None:
        description = found_description
    if class_count is not None and class_names is None:
        if label is None and not any(split_array_name(a)[1] == "y" for a in arrays):
            raise EncodingError(
                f"{source}: the archive gives {class_count} classes but has no array y_<split> to label; name the "
                "label feature (label=, --label FEATURE)",
                path=str(source),
            )
        label = "y" if label is None else label
        class_names = [str(code) for code in range(class_count)]
    if not arrays:
        raise EncodingError(f"{source}: the archive holds no arrays; nothing to convert", path=str(source))
    companions = _companions(source, list(arrays))
    consumed = {member for group in companions.values() for member in group.values()}
    splits: dict[str, _Split] = {}
    specs: dict[str, FeatureSpec] = {}
    for array_name, array in arrays.items():
        if array_name in consumed:
            continue
        split, feature = split_array_name(array_name)
        _check_names(source, array_name, split, feature)
        values: Any = array
        if array_name in companions:
            values, specs[f"{split}/{feature}"] = _offset_samples(source, array_name, arrays, companions[array_name])
        else:
            _check_array(source, array_name, array)
        if feature in splits.setdefault(split, {}):
            other = splits[split][feature][0]
            raise EncodingError(
                f"{source}: arrays {other!r} and {array_name!r} both map to feature {feature!r} of split "
                f"{split!r}; rename one of them",
                path=str(source),
            )
        splits[split][feature] = (array_name, values)
    stored = _stored_class_names(source, splits)
    return _write(
        source,
        output,
        splits,
        specs=specs,
        stored=stored,
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
        specs={},
        stored={},
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
