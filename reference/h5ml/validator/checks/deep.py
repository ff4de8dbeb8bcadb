"""Checks that read sample data (deep validation): E140-E145, E160, E162 (§3.3, §3.4, §6, §8, §10.4).

:func:`check_data` runs once every metadata check is done: it reads every
sample of every feature whose structure is sound (the features that
:mod:`~h5ml.validator.checks.splits` queued; a feature with a structural error, such as
a wrong number of samples, is never read), to check what the structure cannot
show (offsets, codes, booleans, shapes, UTF-8) and to recompute each feature's
fingerprint (§8.2) and then the file's (§8.3).

Resource limits (§10.4): a feature with data that was never written (HDF5
would return fill values for it, however large the declared shape) is E146,
found by the metadata checks (:mod:`~h5ml.validator.checks.encodings`), and is
never queued here, so deep and shallow validation agree on it; uncompressed
data declared larger than the file is reported as E145 before anything is
read; data is read in batches of about :data:`_BATCH_BYTES`
aligned on chunks, and a single row, sample or chunk larger than
:data:`_MAX_READ_BYTES` is not read at all (the feature's fingerprint is then
not recomputed). A read the HDF5 library fails gives E145 for that feature;
its fingerprint is then not recomputed, and neither is the file's.
"""

from __future__ import annotations

import math
from collections.abc import Generator, Iterator
from typing import Any, Final

import h5py
import numpy as np
import numpy.typing as npt

from h5ml.errors import EncodingError
from h5ml.model.booleans import bool_enum_base, first_non_boolean
from h5ml.model.failures import LIBRARY_ERRORS, is_library_failure
from h5ml.model.filters import filter_available, install_hint, pipeline
from h5ml.model.fingerprint import FINGERPRINT_PATTERN, FeatureHasher, file_fingerprint
from h5ml.validator.checks.attributes import read_value
from h5ml.validator.checks.checksums import check_feature_checksums
from h5ml.validator.checks.chunking import row_bytes
from h5ml.validator.checks.issue import Issue, damaged
from h5ml.validator.checks.state import CheckedFeature, FileState
from h5ml.validator.checks.storage import unwritten_storage

__all__ = ["check_data", "check_file_fingerprint", "deep_feature"]

#: Bytes of sample data a deep validation reads at once (memory bound, not a spec rule).
_BATCH_BYTES: Final = 16 << 20
#: Offsets entries a deep validation reads at once.
_OFFSETS_BATCH: Final = 1 << 20
#: The most bytes one read may take: a row, a sample or a chunk larger than this is not read (§10.4).
_MAX_READ_BYTES: Final = 1 << 30


class _ReadError(Exception):
    """Sample data of ``path`` could not be read (E145)."""

    def __init__(self, path: str, cause: BaseException) -> None:
        super().__init__(path, cause)
        self.path = path
        self.cause = cause


def _read(dset: h5py.Dataset, sel: slice, as_type: np.dtype[Any] | None = None) -> Any:
    """Read ``dset[sel]`` (converted to ``as_type`` when given), turning a library failure into :class:`_ReadError`."""
    # SPEC §9.2.1-R1: a library failure while reading a feature dataset's elements is E145, never E101
    try:
        return (dset if as_type is None else dset.astype(as_type))[sel]
    except LIBRARY_ERRORS as exc:
        if not is_library_failure(exc):
            raise
        raise _ReadError(dset.name, exc) from exc


def _unreadable(feature: CheckedFeature, exc: _ReadError) -> str:
    """The E145 message for a read that failed: a filter this validator lacks (named, with what to install), or damage."""
    lacking = sorted({fid for dset in feature.members.values() for fid in pipeline(dset) if not filter_available(fid)})
    if lacking:
        return (
            f"sample data of {exc.path} cannot be decoded here: this validator's HDF5 lacks filter(s) "
            f"{', '.join(map(str, lacking))} ({exc.cause}), so the data was not checked; "
            f"{install_hint(lacking[0])}, and validate again"
        )
    return (
        f"sample data of {exc.path} cannot be read or decoded ({exc.cause}); the file is damaged: restore it from "
        "a good copy"
    )


def _rows_per_batch(dset: h5py.Dataset) -> int:
    """Rows of ``dset`` read at once: about :data:`_BATCH_BYTES`, a whole number of chunks."""
    rows = max(1, _BATCH_BYTES // max(1, row_bytes(dset)))
    if dset.chunks is not None:
        step = dset.chunks[0]
        rows = max(step, rows // step * step)
    return rows


def _chunk_bytes(dset: h5py.Dataset) -> int:
    """Bytes of one chunk of ``dset`` as HDF5 decodes it (0 when not chunked)."""
    return 0 if dset.chunks is None else int(dset.id.get_type().get_size()) * math.prod(dset.chunks)


def check_data(state: FileState, f: h5py.File) -> Iterator[Issue]:
    """Read the data of every queued feature, then check the file fingerprint (§6, §8, §10.4).

    Parameters
    ----------
    state
        The file's state after every metadata check; its ``data_checks`` lists
        the features to read, in check order.
    f
        The open file.

    Yields
    ------
    Issue
        The issues of :func:`deep_feature` for each feature, E101 for a
        feature the library fails on outside a data read, E162 for its
        chunks whose stored bytes differ from their checksums
        (:func:`h5ml.validator.checks.checksums.check_feature_checksums`), then E160 for the
        file fingerprint (:func:`check_file_fingerprint`).
    """
    for feature in state.data_checks:
        try:
            yield from deep_feature(state, feature)
        except LIBRARY_ERRORS as exc:
            state.all_fingerprints_computed = False
            yield damaged(exc, feature.path, "reading")
        try:
            yield from check_feature_checksums(feature)  # SPEC §8.4-R5: E162, every chunk of every dataset
        except LIBRARY_ERRORS as exc:
            yield damaged(exc, feature.path, "reading the stored chunks of")
    yield from check_file_fingerprint(state, f)


def deep_feature(state: FileState, feature: CheckedFeature) -> Iterator[Issue]:
    """Read a feature's samples: E140-E145, E160 (§3.3, §3.4, §6, §8, §10.4).

    Parameters
    ----------
    state
        The file's state; gets the recomputed fingerprint in ``computed``, or
        ``all_fingerprints_computed = False`` when there is none.
    feature
        A feature whose structural checks passed (its ``members`` are set).

    Yields
    ------
    Issue
        E145 when uncompressed data of the feature is declared larger than
        the file (nothing is read then), the data issues of its encoding, E145 when the library cannot
        read or decode its data, E160 when its stored fingerprint differs from
        its data's.
    """
    deep = {
        "dense": _deep_dense,
        "string": _deep_string,
        "categorical": _deep_categorical,
        "ragged": _deep_ragged,
        "bytes": _deep_ragged,
    }[feature.encoding]
    missing = [
        (dset.name, text)
        for name, dset in feature.members.items()
        if name != "class_names" and (text := unwritten_storage(dset, state.file_size)) is not None
    ]
    # A chunk larger than the read bound would be decoded whole by HDF5 (§10.4): such a feature is not read.
    readable = all(_chunk_bytes(dset) <= _MAX_READ_BYTES for dset in feature.members.values())
    computed: str | None = None
    # SPEC §3.5-R2: data never written (fill values) or that does not decode is E145
    for path, text in missing:
        yield Issue.of(
            "E145",
            path,
            f"sample data cannot be read: {text}; restore the file from a good copy",
        )
    if readable and not missing:
        try:
            computed = yield from deep(feature)
        except _ReadError as exc:
            yield Issue.of("E145", exc.path, _unreadable(feature, exc))
    if computed is None:
        state.all_fingerprints_computed = False
        return
    state.computed[(feature.split, feature.name)] = computed
    # SPEC §8.1-R2: a feature's fingerprint equals the one computed from its decoded content (§8.2)
    if feature.fingerprint is not None and computed != feature.fingerprint:
        yield Issue.of(
            "E160",
            feature.path,
            f"feature {feature.path} has fingerprint {feature.fingerprint} but its data gives "
            f"{computed}: the data changed after the file was written; restore it from a good copy",
        )


def _check_bool(
    feature: CheckedFeature, values: npt.NDArray[Any], first: int, what: str, enum: bool = False
) -> Iterator[Issue]:
    """E142 for the first value of a boolean batch that is neither 0 nor 1 (§3.3).

    A batch is boolean when the feature has ``logical_dtype = "bool"``, or when
    ``enum`` says its dataset is the boolean enumeration; then ``values`` are
    the enumeration's raw base integers (int8 or uint8), never h5py's numpy
    ``bool`` view, in which a stored 5 or -3 reads as an arbitrary true byte.
    """
    if not (feature.logical_bool or enum):
        return
    # SPEC §3.3-R2: a logical bool, and a value of the boolean enumeration, is 0 or 1 (E142)
    bad = first_non_boolean(values)
    if bad is not None:
        kind = "boolean enumeration (members FALSE = 0, TRUE = 1)" if enum else "boolean feature"
        yield Issue.of(
            "E142",
            feature.path,
            f"{kind} {feature.path} holds {values.reshape(-1)[bad].item()!r} in "
            f"{what} {first + bad // max(1, math.prod(values.shape[1:]))}; booleans are 0 or 1",
        )


def _deep_dense(feature: CheckedFeature) -> Generator[Issue, None, str | None]:
    """E142 for a boolean dense feature; its fingerprint (§6.2, §8.2)."""
    dset: h5py.Dataset = feature.members[""]
    if row_bytes(dset) > _MAX_READ_BYTES:
        return None  # one sample is too large to read at once (§10.4)
    hasher = FeatureHasher("dense", bool if feature.logical_bool else dset.dtype, dset.shape[1:])
    base = bool_enum_base(dset.id.get_type())  # the boolean enumeration: its raw base integers are checked
    step = _rows_per_batch(dset)
    bad_bool = False
    for start in range(0, dset.shape[0], step):
        batch = _read(dset, slice(start, start + step), base)
        if not bad_bool:
            issues = list(_check_bool(feature, batch, start, "sample", base is not None))
            bad_bool = bool(issues)
            yield from issues
        hasher.update_dense(batch if base is None else batch != 0)
    return hasher.fingerprint()


def _deep_string(feature: CheckedFeature) -> Generator[Issue, None, str | None]:
    """E144 for the first sample that is not UTF-8; the fingerprint when every sample is (§3.4, §6.4, §8.2)."""
    dset: h5py.Dataset = feature.members[""]
    hasher = FeatureHasher("string")
    step = _rows_per_batch(dset)
    for start in range(0, dset.shape[0], step):
        items = [v.encode("utf-8") if isinstance(v, str) else bytes(v) for v in _read(dset, slice(start, start + step))]
        for i, raw in enumerate(items):
            try:
                # SPEC §3.4-R2: sample strings are valid UTF-8, whatever the declared character set (E144)
                raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                yield Issue.of(
                    "E144",
                    feature.path,
                    f"sample {start + i} of string feature {feature.path} is not valid "
                    f"UTF-8 ({exc.reason} at byte {exc.start}): {raw[:40]!r}; write text as UTF-8",
                )
                return None
        hasher.update_strings(items)
    return hasher.fingerprint()


def _deep_categorical(feature: CheckedFeature) -> Generator[Issue, None, str | None]:
    """E141 for the first code outside [-1, K) (SPEC §6.5-R2); the fingerprint when the class names were read (§8.2)."""
    codes: h5py.Dataset = feature.members["codes"]
    if feature.class_names is None:
        return None
    k = len(feature.class_names)
    hasher = FeatureHasher("categorical", class_names=feature.class_names)
    step = _rows_per_batch(codes)
    reported = False
    for start in range(0, codes.shape[0], step):
        batch = _read(codes, slice(start, start + step))
        bad = np.flatnonzero((batch < -1) | (batch >= k))
        if bad.size and not reported:
            reported = True
            yield Issue.of(
                "E141",
                codes.name,
                f"sample {start + int(bad[0])} of {codes.name} has code {int(batch[bad[0]])}, "
                f"outside [-1, {k}) for {k} class names; fix the codes or the class names",
            )
        hasher.update_codes(batch)
    return hasher.fingerprint()


def _check_offsets_values(offsets: h5py.Dataset, m: int) -> Iterator[Issue]:
    """E140: offsets start at 0, never decrease and end at the number of value rows (SPEC §6.3-R1, §6.6)."""
    path = offsets.name
    total = offsets.shape[0]
    previous: int | None = None
    for start in range(0, total, _OFFSETS_BATCH):
        batch = _read(offsets, slice(start, start + _OFFSETS_BATCH)).astype(np.int64)
        if previous is None and batch[0] != 0:
            yield Issue.of("E140", path, f"{path} starts at {int(batch[0])}, not 0; offsets start at 0")
            return
        joined = batch if previous is None else np.concatenate(([previous], batch))
        drops = np.flatnonzero(np.diff(joined) < 0)
        if drops.size:
            at = start + int(drops[0]) - (0 if previous is None else 1)
            yield Issue.of(
                "E140",
                path,
                f"{path} decreases after entry {at} ({int(joined[drops[0]])} then "
                f"{int(joined[drops[0] + 1])}); offsets never decrease",
            )
            return
        previous = int(batch[-1])
    if previous != m:
        yield Issue.of(
            "E140",
            path,
            f"{path} ends at {previous}, but the values hold {m} rows; the last offset is the number of value rows",
        )


def _deep_ragged(feature: CheckedFeature) -> Generator[Issue, None, str | None]:
    """E140, E142, E143 for a ragged or bytes feature; its fingerprint when the offsets are sound (§6.3, §6.6, §8.2)."""
    offsets: h5py.Dataset = feature.members["offsets"]
    values: h5py.Dataset = feature.members["values"]
    shapes: h5py.Dataset | None = feature.members.get("shapes")
    broken = list(_check_offsets_values(offsets, values.shape[0]))
    if broken:
        yield from broken
        return None
    if feature.encoding == "bytes":
        hasher = FeatureHasher("bytes")
    else:
        hasher = FeatureHasher("ragged", bool if feature.logical_bool else values.dtype)
    base = bool_enum_base(values.id.get_type())  # the boolean enumeration: its raw base integers are checked
    one_row = max(1, row_bytes(values))
    budget = max(1, _BATCH_BYTES // one_row)
    n = offsets.shape[0] - 1
    bad_bool = bad_shape = False
    for block in range(0, n, _OFFSETS_BATCH):
        offs = _read(offsets, slice(block, min(n, block + _OFFSETS_BATCH) + 1)).astype(np.int64)
        i = 0
        while i < len(offs) - 1:
            j = int(np.searchsorted(offs, offs[i] + budget, side="right")) - 1
            j = min(max(j, i + 1), len(offs) - 1)
            if (int(offs[j]) - int(offs[i])) * one_row > _MAX_READ_BYTES:
                return None  # one sample is too large to read at once (§10.4)
            lengths = np.diff(offs[i : j + 1])
            batch = _read(values, slice(int(offs[i]), int(offs[j])), base)
            if not bad_bool:
                issues = list(_check_bool(feature, batch, int(offs[i]), "value row", base is not None))
                bad_bool = bool(issues)
                yield from issues
            if base is not None:
                batch = batch != 0
            shp = None
            if shapes is not None:
                shp = _read(shapes, slice(block + i, block + j)).astype(np.int64)
                # SPEC §6.3-R2: every entry is >= 0 and each row's product is the sample's number of values (E143)
                wrong = np.flatnonzero((shp < 0).any(axis=1) | (np.prod(shp, axis=1) != lengths))
                if wrong.size and not bad_shape:
                    bad_shape = True
                    k = int(wrong[0])
                    yield Issue.of(
                        "E143",
                        shapes.name,
                        f"sample {block + i + k} of {feature.path} has shape "
                        f"{shp[k].tolist()} but {int(lengths[k])} values; the product of a sample's shape is "
                        "its number of values",
                    )
            try:
                hasher.update_ragged(lengths, batch, shp)
            except EncodingError:
                return None
            i = j
    return hasher.fingerprint()


def check_file_fingerprint(state: FileState, f: h5py.File) -> Iterator[Issue]:
    """E160 for the file fingerprint, recomputed from the features' data (§8.3).

    Parameters
    ----------
    state
        The file's state after the deep checks of every feature.
    f
        The open file.

    Yields
    ------
    Issue
        E160 when the stored fingerprint is well formed, every feature's
        fingerprint was recomputed, and their combination differs from it.
    """
    stored = read_value(f, "fingerprint") if "fingerprint" in f.attrs else None
    # SPEC §9.1.1-R3: without every feature's fingerprint (a feature unread, or of an unknown encoding) the
    # file's cannot be computed, and no E160 is reported on a guess
    if not (isinstance(stored, str) and FINGERPRINT_PATTERN.match(stored)) or not state.all_fingerprints_computed:
        return
    computed = file_fingerprint(state.computed)
    # SPEC §8.1-R3: the root fingerprint equals the one computed from every feature's (§8.3)
    if computed != stored:
        yield Issue.of(
            "E160",
            "/",
            f"the file fingerprint is {stored} but the features' data gives {computed}: the data or "
            "the set of features changed after the file was written; restore it from a good copy",
        )
