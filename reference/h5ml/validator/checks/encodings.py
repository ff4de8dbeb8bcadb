"""The structure of each encoding: E117, E122, E133, E134, E146, I300, I301 and its datasets' chunk rules (§6).

:func:`check_encoding` runs the checks of a feature's encoding: the type and
rank of each dataset, the members of a group encoding, the number of entries
along the first axis (``num_samples``, §5.3), the chunk rules of every
dataset (:mod:`~h5ml.validator.checks.chunking`) and, for a categorical feature, its
class names. Each check yields issues and returns whether the feature is
sound enough for its data to be read (deep checks, §8); the datasets found
are recorded in :attr:`CheckedFeature.members <h5ml.validator.checks.state.CheckedFeature.members>`.
A feature with a wrong number of samples, or whose components disagree on it,
is not sound: its data is not read. Only the ``class_names`` of categorical
features are read (E134), in bounded blocks and only when every declared name
was written (§10.4); no sample data is. Every dataset of the feature must have
all its storage written (E146, §3.5), which the chunk index shows without
reading data.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Collection, Generator, Iterator
from typing import Final

import h5py

from h5ml import spec
from h5ml.model.allocation import NeverWritten, unallocated_storage
from h5ml.model.failures import LIBRARY_ERRORS, is_library_failure
from h5ml.validator.checks.attributes import check_attributes
from h5ml.validator.checks.checksums import check_checksum_member, is_checksum_member
from h5ml.validator.checks.chunking import check_chunks, check_contiguous
from h5ml.validator.checks.issue import Issue
from h5ml.validator.checks.state import CheckedFeature, FileState
from h5ml.validator.checks.storage import NUMERIC, classify, unwritten_storage

__all__ = ["check_encoding"]

#: Class names read at once (a memory bound, not a spec rule, §10.4).
_NAMES_BLOCK: Final = 1 << 16

#: The structural checks of one encoding: (state, feature, the split's num_samples or None) -> sound.
_Check = Callable[[FileState, CheckedFeature, int | None], Generator[Issue, None, bool]]


def check_encoding(state: FileState, feature: CheckedFeature, n: int | None) -> Generator[Issue, None, bool]:
    """Check the structure of a feature stored as the HDF5 object kind its encoding needs (§6.2-§6.6).

    Parameters
    ----------
    state
        The file's state.
    feature
        The feature; its ``encoding`` is one of :data:`h5ml.spec.ENCODINGS`
        and ``obj`` a dataset or a group as the encoding needs. Gets ``members``
        and, for a categorical feature, ``class_names``.
    n
        The split's ``num_samples``, or None when it is missing or wrong (E121).

    Yields
    ------
    Issue
        E133 (wrong type, rank or members), E122 (wrong number of samples),
        E117 (``logical_dtype`` on values that are not uint8), E134 (class
        names), I301 (extra members), the chunk issues of each dataset.

    Returns
    -------
    bool
        True when the feature's data can be read by the deep checks.

    Notes
    -----
    The checks of each encoding enforce SPEC §6.1-R8 (members, object kinds,
    ranks, datatypes and lengths, E133) and SPEC §5.3-R2 (exactly
    ``num_samples`` samples, E122).
    """
    checks: dict[str, _Check] = {
        "dense": _check_dense,
        "string": _check_string,
        "categorical": _check_categorical,
        "ragged": _check_ragged,
        "bytes": _check_bytes,
    }
    ok = yield from checks[feature.encoding](state, feature, n)
    written = yield from _check_written(state, feature)
    return ok and written


def _check_written(state: FileState, feature: CheckedFeature) -> Generator[Issue, None, bool]:
    """E146 for each dataset of the feature whose storage was never written (§3.5); returns whether none is.

    Shallow and deep validation report it alike: only the chunk index and the storage size are consulted
    (:func:`~h5ml.validator.checks.storage.unallocated_storage`), and a feature with such a dataset is never
    read, so deep validation adds no E145 for the same cause.
    """
    ok = True
    for member, dset in feature.members.items():
        # SPEC §3.5.1-R2: from the chunk index and the storage size only, the same in shallow and deep validation
        # SPEC §10.4-R2: a dataset the reader refuses for its storage size (never written) is E146 here too
        missing = unallocated_storage(dset)
        if missing is None:
            continue
        ok = False
        yield Issue.of(
            "E146",
            dset.name,
            f"{state.path}: {missing.what}; HDF5 would return fill values in their place, so the file was not "
            f"written completely: {_rewrite_advice(feature, member, missing)}",
        )
    return ok


def _rewrite_advice(feature: CheckedFeature, member: str, missing: NeverWritten) -> str:
    """What to do about a never-written dataset (E146): write it again, or keep the rows that were written.

    Keeping the first rows is offered only where it makes the feature whole: a feature stored in one dataset
    (dense or string encoding) whose missing chunks all lie after the written ones along the first axis.
    A chunk missing in the middle, a contiguous block, class names or one component of a group encoding
    can only be written again.
    """
    if member == "" and feature.encoding in ("dense", "string") and missing.rows_written is not None:
        return (
            f"write the feature {feature.path} again, or, if the writer stopped early, keep only the first "
            f"{missing.rows_written} samples, which were written (shrink every feature of the split and its "
            "num_samples to them)"
        )
    return f"write the feature {feature.path} again"


# --------------------------------------------------------------------------- shared checks of one dataset


def _check_samples(dset: h5py.Dataset, path: str, n: int | None, extra: int = 0) -> Generator[Issue, None, bool]:
    """E122 when the first axis of ``dset`` is not ``n + extra`` long (SPEC §5.3-R2); returns whether it is.

    SPEC §9.2.1-R1: called only for a dataset with a first axis its encoding allows: a wrong length is E122,
    never E133, and a dataset without one is E133 alone.
    """
    if n is not None and dset.shape[0] != n + extra:
        what = f"{n} + {extra} = {n + extra} entries" if extra else f"{n} samples"
        yield Issue.of(
            "E122",
            path,
            f"{path} has {dset.shape[0]} entries along its first axis but its split's "
            f"num_samples asks for {what}; write every feature with the same number of samples",
        )
        return False
    return True


def _check_dtype(
    dset: h5py.Dataset, path: str, allowed: Collection[str], expected: str
) -> Generator[Issue, None, bool]:
    """E133 when the dataset's type is in the profile but not one the encoding allows (SPEC §6.1-R8)."""
    kind, detail = classify(dset.id.get_type())
    if kind == "forbidden":
        return False  # E113 already reported
    if kind not in allowed:
        yield Issue.of("E133", path, f"{path} holds {detail} but its encoding needs {expected}")
        return False
    return True


def _check_ndim(
    dset: h5py.Dataset, path: str, ndims: Collection[int] | None, expected: str
) -> Generator[Issue, None, bool]:
    """E133 when the dataset's rank is not in ``ndims`` (None: any rank >= 1) (SPEC §6.1-R8)."""
    ndim = -1 if dset.shape is None else len(dset.shape)
    if (ndim >= 1) if ndims is None else (ndim in ndims):
        return True
    shape = "a null dataspace" if dset.shape is None else f"shape {dset.shape}"
    yield Issue.of("E133", path, f"{path} has {shape} but its encoding needs {expected}")
    return False


def _check_logical_bool(feature: CheckedFeature, dset: h5py.Dataset) -> Iterator[Issue]:
    """E117 when ``logical_dtype = "bool"`` is on values that are not uint8 (§3.3)."""
    if not feature.logical_bool:
        return
    kind, detail = classify(dset.id.get_type())
    # SPEC §3.3-R3: logical_dtype 'bool' only on uint8 values (E117); on other encodings: splits.py
    if not (kind == "uint" and dset.id.get_type().get_size() == 1):
        yield Issue.of(
            "E117",
            feature.path,
            f"feature {feature.path} has logical_dtype 'bool' but {dset.name} holds {detail}; logical_dtype "
            "'bool' marks uint8 values 0/1 only (§3.3)",
        )


# --------------------------------------------------------------------------- dataset encodings


def _check_dense(state: FileState, feature: CheckedFeature, n: int | None) -> Generator[Issue, None, bool]:
    """A dense feature: a numeric dataset of shape (N, ...) (§6.2, §7.4)."""
    dset, path = feature.obj, feature.path
    ok = yield from _check_dtype(dset, path, NUMERIC, "a numeric type (use 'string' for text)")
    ok = (yield from _check_ndim(dset, path, None, "shape (N, ...) with N samples")) and ok
    if dset.shape:
        ok = (yield from _check_samples(dset, path, n)) and ok
        yield from check_chunks(dset, path, rows_are_samples=True)
        yield from check_contiguous(dset, path)
    issues = list(_check_logical_bool(feature, dset))
    yield from issues
    feature.members[""] = dset
    return ok and not issues


def _check_string(state: FileState, feature: CheckedFeature, n: int | None) -> Generator[Issue, None, bool]:
    """A string feature: a string dataset of shape (N,) (§6.4)."""
    dset, path = feature.obj, feature.path
    ok = yield from _check_dtype(dset, path, ("string",), "strings (use 'dense' for numbers)")
    ok = (yield from _check_ndim(dset, path, (1,), "shape (N,)")) and ok
    if dset.shape and len(dset.shape) == 1:
        ok = (yield from _check_samples(dset, path, n)) and ok
        yield from check_chunks(dset, path, rows_are_samples=True)
    feature.members[""] = dset
    return ok


# --------------------------------------------------------------------------- group encodings


def _components(state: FileState, feature: CheckedFeature) -> Generator[Issue, None, bool]:
    """Collect the members of a group encoding: E133 for missing ones, I301 for extra ones (§6, §5.5).

    SPEC §6.1-R8 (the members the encoding requires) and SPEC §5.5-R2 (I301 for
    every member the encoding does not define).
    """
    group, path = feature.obj, feature.path
    required, optional = spec.ENCODING_COMPONENTS[feature.encoding]
    ok = True
    for name in group:
        member_path, obj = state.member(group, path, name)
        if is_checksum_member(name):  # SPEC §8.4-R1: a component's checksum dataset, not an unknown member
            if obj is not None:
                yield from check_checksum_member(group, member_path, name, in_feature=True)
        elif name not in required and name not in optional:
            yield Issue.of(
                "I301",
                member_path,
                f"{member_path} is not a member of the {feature.encoding!r} encoding; readers ignore it",
            )
        elif obj is None:
            ok = False  # an external or soft link: E110/E115 already reported
        elif not isinstance(obj, h5py.Dataset):
            ok = False
            yield Issue.of("E133", member_path, f"{member_path} must be a dataset, not a {type(obj).__name__}")
        else:
            feature.members[name] = obj
            yield from check_attributes(obj, member_path, (), ())  # §5.2: components carry none
    for name in required:
        if name not in group:
            ok = False
            yield Issue.of(
                "E133",
                path,
                f"{feature.encoding} feature {path} lacks its required member {name!r} "
                f"(it needs {', '.join(required)})",
            )
    return ok


def _check_int64(dset: h5py.Dataset, path: str, what: str) -> Generator[Issue, None, bool]:
    """A component that must hold int64 values: ``offsets`` or ``shapes`` (§6.3, §6.6); E133 otherwise."""
    ok = yield from _check_dtype(dset, path, ("int",), f"int64 {what}")
    if ok and dset.id.get_type().get_size() != 8:
        ok = False
        yield Issue.of("E133", path, f"{path} holds {classify(dset.id.get_type())[1]}; {what} must be int64")
    return ok


def _check_offsets(feature: CheckedFeature, n: int | None) -> Generator[Issue, None, bool]:
    """The ``offsets`` of a ragged or bytes feature: int64 of shape (N + 1,) (§6.3, §6.6)."""
    offsets = feature.members["offsets"]
    path = offsets.name
    ok = yield from _check_int64(offsets, path, "offsets")
    ok = (yield from _check_ndim(offsets, path, (1,), "shape (N + 1,)")) and ok
    if offsets.shape and len(offsets.shape) == 1:
        if offsets.shape[0] == 0:
            ok = False
            yield Issue.of("E133", path, f"{path} is empty; offsets hold N + 1 entries, starting with 0")
        else:
            ok = (yield from _check_samples(offsets, path, n, extra=1)) and ok
            yield from check_chunks(offsets, path, rows_are_samples=False)
    return ok


def _check_categorical(state: FileState, feature: CheckedFeature, n: int | None) -> Generator[Issue, None, bool]:
    """A categorical feature: ``codes`` (N,) of signed integers and ``class_names`` (K,) strings (§6.5)."""
    ok = yield from _components(state, feature)
    if not ok:
        return False
    codes, names = feature.members["codes"], feature.members["class_names"]
    ok = yield from _check_dtype(codes, codes.name, ("int",), "signed integer codes (-1 = missing)")
    ok = (yield from _check_ndim(codes, codes.name, (1,), "shape (N,)")) and ok
    if codes.shape and len(codes.shape) == 1:
        ok = (yield from _check_samples(codes, codes.name, n)) and ok
        yield from check_chunks(codes, codes.name, rows_are_samples=True)
    names_ok = yield from _check_dtype(names, names.name, ("string",), "variable-length UTF-8 strings")
    names_ok = (yield from _check_ndim(names, names.name, (1,), "shape (K,)")) and names_ok
    if names.shape and len(names.shape) == 1:
        yield from check_chunks(names, names.name, rows_are_samples=False)
    if names_ok:
        names_ok = yield from _check_class_names(state, feature, names)
    return ok and names_ok


def _check_class_names(state: FileState, feature: CheckedFeature, dset: h5py.Dataset) -> Generator[Issue, None, bool]:
    """E134: class names are unique, non-empty UTF-8 strings (SPEC §6.5-R1); returns whether all were read.

    Reads the K names in blocks of :data:`_NAMES_BLOCK`, and only when every declared name was written (§10.4).
    """
    path = dset.name
    if unwritten_storage(dset, state.file_size) is not None:
        return False  # never written: E146 (§3.5), not E134; or larger than the file: not read (§10.4)
    names: list[str] = []
    for start in range(0, dset.shape[0], _NAMES_BLOCK):
        try:
            block = dset[start : start + _NAMES_BLOCK]
        except LIBRARY_ERRORS as exc:
            if not is_library_failure(exc):
                raise
            yield Issue.of("E134", path, f"the class names {path} cannot be read: {exc}")
            return False
        for i, value in enumerate(block.tolist(), start):
            try:
                # SPEC §3.4-R2: class names are valid UTF-8 (E134)
                names.append(value if isinstance(value, str) else bytes(value).decode("utf-8"))
            except UnicodeDecodeError:
                yield Issue.of("E134", path, f"class name {i} of {path} is not valid UTF-8: {value!r}")
                return False
    empty = [i for i, s in enumerate(names) if not s]
    if empty:
        yield Issue.of("E134", path, f"class names of {path} at positions {empty[:10]} are empty; name every class")
    duplicates = sorted(s for s, count in Counter(names).items() if count > 1)
    if duplicates:
        yield Issue.of("E134", path, f"class names of {path} repeat {duplicates[:10]}; each class needs a unique name")
    feature.class_names = names
    return True


def _check_values(
    feature: CheckedFeature,
    allowed: Collection[str],
    expected: str,
    ndims: Collection[int] | None,
    shape_text: str,
) -> Generator[Issue, None, bool]:
    """Type, rank, chunks and logical_dtype of the ``values`` of a ragged or bytes feature (§6.3, §6.6)."""
    values = feature.members["values"]
    ok = yield from _check_dtype(values, values.name, allowed, expected)
    ok = (yield from _check_ndim(values, values.name, ndims, shape_text)) and ok
    if values.shape:
        yield from check_chunks(values, values.name, rows_are_samples=False)
    issues = list(_check_logical_bool(feature, values))
    yield from issues
    return ok and not issues


def _check_ragged(state: FileState, feature: CheckedFeature, n: int | None) -> Generator[Issue, None, bool]:
    """A ragged feature: ``values``, ``offsets`` and optional int64 ``shapes`` (N, D) (§6.3)."""
    ok = yield from _components(state, feature)
    if not ok:
        return False
    shapes = feature.members.get("shapes")
    ok = yield from _check_offsets(feature, n)
    if shapes is None:
        values_ok = yield from _check_values(feature, NUMERIC, "a numeric type", None, "shape (M, ...)")
        return ok and values_ok
    values_ok = yield from _check_values(
        feature, NUMERIC, "a numeric type", (1,), "shape (M,) (a feature with 'shapes' stores flat values)"
    )
    path = shapes.name
    shapes_ok = yield from _check_int64(shapes, path, "shapes")
    shapes_ok = (yield from _check_ndim(shapes, path, (2,), "shape (N, D)")) and shapes_ok
    if shapes.shape and len(shapes.shape) == 2:
        if shapes.shape[1] == 0:
            shapes_ok = False
            yield Issue.of("E133", path, f"{path} has shape {shapes.shape}; samples need D >= 1 axes, (N, D)")
        shapes_ok = (yield from _check_samples(shapes, path, n)) and shapes_ok
        offsets = feature.members["offsets"]
        if n is None and ok and offsets.shape[0] - 1 != shapes.shape[0]:
            shapes_ok = False
            yield Issue.of(
                "E133",
                path,
                f"{path} has {shapes.shape[0]} rows but {offsets.name} has {offsets.shape[0]} entries, so "
                f"{offsets.shape[0] - 1} samples; give shapes one row per sample",
            )
        yield from check_chunks(shapes, path, rows_are_samples=True)
    return ok and values_ok and shapes_ok


def _check_bytes(state: FileState, feature: CheckedFeature, n: int | None) -> Generator[Issue, None, bool]:
    """A bytes feature: uint8 ``values`` (M,) and ``offsets`` (§6.6)."""
    ok = yield from _components(state, feature)
    if not ok:
        return False
    ok = yield from _check_offsets(feature, n)
    values = feature.members["values"]
    values_ok = yield from _check_values(feature, ("uint",), "uint8 bytes", (1,), "shape (M,)")
    if values_ok and values.id.get_type().get_size() != 1:
        values_ok = False
        yield Issue.of("E133", values.name, f"{values.name} holds {classify(values.id.get_type())[1]}; bytes are uint8")
    return ok and values_ok
