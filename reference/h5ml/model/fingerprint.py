"""Content fingerprints of features and files (SPEC.md §8).

A feature's fingerprint hashes its decoded content, not its HDF5 storage, so
that rechunking, recompressing or changing the byte order of a dataset keeps
it (§8.2)::

    fingerprint = "sha256:" + sha256(header + b"\\n" + digest_1 + digest_2 + ...)

``header`` is the compact JSON (sorted keys) of ``encoding``, ``dtype`` (numpy
little-endian dtype string: ``"<f4"``, ``"|u1"``, ``"|b1"`` for booleans,
``"str"`` for strings), ``sample_shape`` (the axes after the first of a dense
feature, ``[]`` for every other encoding) and ``num_samples``. Each
``digest_i`` is the raw 32-byte SHA-256 of one component, in this order:

=============  ==================================================================
dense          values, little-endian, C order (booleans as one byte 0/1)
string         each value as its UTF-8 byte length (uint64 LE) then its bytes
categorical    codes as int64 LE; class names hashed like string values
ragged         offsets (int64 LE, from 0, N+1 entries); values LE C order;
               shapes as int64 LE (the digest of no bytes when absent)
bytes          offsets (int64 LE, from 0, N+1 entries); values
=============  ==================================================================

:class:`FeatureHasher` takes the content batch by batch (the writer feeds it as
samples arrive; the deep validator feeds what it reads back; ``h5ml verify``
feeds a ragged feature's offsets, values and shapes one dataset at a time,
chunk by chunk) and all get the same fingerprint. :func:`file_fingerprint` combines feature fingerprints (§8.3).
"""

from __future__ import annotations

import hashlib
import json
import re
import struct
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from h5ml import spec
from h5ml.errors import EncodingError

__all__ = [
    "FINGERPRINT_PATTERN",
    "FeatureHasher",
    "canonical_dtype",
    "file_fingerprint",
    "fingerprint_feature",
]

#: §8.1 the form of a fingerprint attribute (SPEC §8.1-R1): ``\Z``, not ``$``, so that a final newline is refused.
FINGERPRINT_PATTERN: Final = re.compile(r"^sha256:[0-9a-f]{64}\Z")

_PREFIX: Final = spec.FINGERPRINT_ALGORITHM + ":"
_STR: Final = "str"
_INT64_LE: Final = np.dtype("<i8")
_U64: Final = struct.Struct("<Q")
# The dtype recorded in the header of encodings whose dtype is fixed (§8.2).
_FIXED_DTYPES: Final = {"string": _STR, "categorical": "<i8", "bytes": "|u1"}
_NUMERIC_KINDS: Final = "biuf"


def canonical_dtype(dtype: npt.DTypeLike) -> str:
    """Return the dtype string a fingerprint header records (§8.2).

    Parameters
    ----------
    dtype
        A numeric numpy dtype (bool, signed or unsigned integer, float) in any
        byte order.

    Returns
    -------
    str
        The little-endian ``numpy.dtype.str``: ``"<f4"``, ``"|u1"``, ``"|b1"``.

    Raises
    ------
    EncodingError
        If the dtype is not in the storage profile's numeric types (§3.2).
    """
    dt = np.dtype(dtype)
    if dt.kind not in _NUMERIC_KINDS or dt.itemsize not in (1, 2, 4, 8) or (dt.kind == "f" and dt.itemsize == 1):
        raise EncodingError(
            f"dtype {dt} is not a numeric type of the storage profile (§3.2): use bool, int, uint or float"
        )
    return dt.newbyteorder("<").str


def _le_bytes(values: np.ndarray, dtype: np.dtype[Any]) -> memoryview:
    """The C-order little-endian bytes of ``values`` as ``dtype`` (no value change), for ``hash.update``.

    A C-contiguous little-endian array of ``dtype`` is viewed, not copied;
    any other array is copied once into that form (§8.2.2).
    """
    arr = np.ascontiguousarray(values, dtype=dtype.newbyteorder("<"))
    return arr.reshape(-1).view(np.uint8).data


def _string_bytes(values: Iterable[str | bytes]) -> bytes:
    parts: list[bytes] = []
    for v in values:
        if isinstance(v, str):
            b = v.encode("utf-8")
        elif isinstance(v, (bytes, np.bytes_)):
            b = bytes(v)
        else:
            raise EncodingError(f"a string value must be str (or UTF-8 bytes), got {type(v).__name__}: {v!r}")
        parts.append(_U64.pack(len(b)))
        parts.append(b)
    return b"".join(parts)


class FeatureHasher:
    """Streaming fingerprint of one feature (§8.2).

    Feed the feature's samples in file order with the ``update_*`` method of its
    encoding, in as many batches as convenient, then call :meth:`fingerprint`.
    The result depends only on the decoded content: batch boundaries, chunking,
    compression and byte order do not change it.

    Parameters
    ----------
    encoding
        One of ``spec.ENCODINGS``: ``"dense"``, ``"string"``, ``"categorical"``,
        ``"ragged"``, ``"bytes"``.
    dtype
        dense and ragged: the values' numeric dtype (``bool`` for a feature
        whose ``logical_dtype`` is ``"bool"``, even though it is stored as
        uint8). Ignored by the other encodings, whose header dtype is fixed
        (``"str"``, ``"<i8"`` for categorical codes, ``"|u1"`` for bytes).
    sample_shape
        dense only: the shape of one sample (axes after the first).
    class_names
        categorical only: the K class names, in code order.

    Raises
    ------
    EncodingError
        If the encoding is unknown, a dense/ragged dtype is missing or not
        numeric, or categorical class names are missing.

    Examples
    --------
    >>> h = FeatureHasher("dense", "<f4", (2,))
    >>> h.update_dense(np.zeros((3, 2), "f4"))
    >>> h.fingerprint() == fingerprint_feature("dense", np.zeros((3, 2), "f4"))
    True
    """

    def __init__(
        self,
        encoding: str,
        dtype: npt.DTypeLike | None = None,
        sample_shape: Sequence[int] = (),
        *,
        class_names: Sequence[str] | None = None,
    ) -> None:
        if encoding not in spec.ENCODINGS:
            raise EncodingError(f"unknown encoding {encoding!r}; expected one of {sorted(spec.ENCODINGS)} (§6)")
        self.encoding: Final = encoding
        self._dtype: np.dtype[Any] | None = None
        if encoding in ("dense", "ragged"):
            if dtype is None:
                raise EncodingError(f"a {encoding} fingerprint needs the values' dtype (§8.2)")
            self.dtype_str = canonical_dtype(dtype)
            self._dtype = np.dtype(self.dtype_str)
        else:
            self.dtype_str = _FIXED_DTYPES[encoding]
            if encoding == "bytes":
                self._dtype = np.dtype(np.uint8)
        self.sample_shape: Final = tuple(int(d) for d in sample_shape) if encoding == "dense" else ()
        self.num_samples = 0
        self._components = [hashlib.sha256() for _ in range(self._n_components())]
        self._total = 0  # ragged/bytes: offset of the next value
        self._offsets_started = False  # update_offsets: the leading 0 was seen
        self._value_rows = 0  # update_values: value rows fed
        self._shape_rows = 0  # update_shapes: shape rows fed
        if encoding in ("ragged", "bytes"):
            self._components[0].update(_INT64_LE.type(0).tobytes())
        if encoding == "categorical":
            if class_names is None:
                raise EncodingError("a categorical fingerprint needs the class names (§8.2)")
            self._components[1].update(_string_bytes(class_names))

    def _n_components(self) -> int:
        return {"dense": 1, "string": 1, "categorical": 2, "ragged": 3, "bytes": 2}[self.encoding]

    def _expect(self, *encodings: str) -> None:
        if self.encoding not in encodings:
            raise EncodingError(
                f"this hasher is for a {self.encoding!r} feature; it cannot take {'/'.join(encodings)} data"
            )

    def _values_bytes(self, values: npt.ArrayLike) -> memoryview:
        assert self._dtype is not None
        arr = np.asarray(values)
        if self._dtype.kind == "b" and arr.dtype.kind == "u" and arr.dtype.itemsize == 1:
            return _le_bytes(arr, arr.dtype)  # a bool feature read back as its uint8 storage (§3.3)
        if arr.dtype.newbyteorder("<") != self._dtype and arr.size:
            raise EncodingError(f"values have dtype {arr.dtype}, this feature's fingerprint is over {self.dtype_str}")
        return _le_bytes(arr, self._dtype)

    def update_dense(self, values: npt.ArrayLike) -> None:
        """Add samples of a dense feature (§6.2).

        Parameters
        ----------
        values
            Array of shape ``(n, *sample_shape)`` and the hasher's dtype (any
            byte order; a bool feature also takes its uint8 0/1 storage).

        Raises
        ------
        EncodingError
            If the hasher is not dense, or the shape or dtype differ.
        """
        self._expect("dense")
        arr = np.asarray(values)
        if arr.ndim < 1 or arr.shape[1:] != self.sample_shape:
            raise EncodingError(f"dense values of shape {arr.shape} do not match sample shape {self.sample_shape}")
        self._components[0].update(self._values_bytes(arr))
        self.num_samples += arr.shape[0]

    def update_strings(self, values: Iterable[str | bytes]) -> None:
        """Add samples of a string feature (§6.4).

        Parameters
        ----------
        values
            ``str`` values (or their UTF-8 encoded ``bytes``, as h5py returns
            them without ``.asstr()``), one per sample.

        Raises
        ------
        EncodingError
            If the hasher is not for strings, or a value is not a string.
        """
        self._expect("string")
        items = list(values)
        self._components[0].update(_string_bytes(items))
        self.num_samples += len(items)

    def update_codes(self, codes: npt.ArrayLike) -> None:
        """Add samples of a categorical feature (§6.5).

        Parameters
        ----------
        codes
            Integer array of shape ``(n,)`` (any integer dtype and byte order).

        Raises
        ------
        EncodingError
            If the hasher is not categorical or the codes are not 1-D integers.
        """
        self._expect("categorical")
        arr = np.asarray(codes)
        if arr.ndim != 1 or (arr.dtype.kind not in "iu" and arr.size):
            raise EncodingError(
                f"categorical codes must be a 1-D integer array, got shape {arr.shape} dtype {arr.dtype}"
            )
        self._components[0].update(_le_bytes(arr, _INT64_LE))
        self.num_samples += arr.shape[0]

    def update_ragged(
        self,
        lengths: npt.ArrayLike,
        values: npt.ArrayLike,
        shapes: npt.ArrayLike | None = None,
    ) -> None:
        """Add samples of a ragged or bytes feature (§6.3, §6.6).

        Parameters
        ----------
        lengths
            Integer array ``(n,)``: the number of value rows of each sample
            (``numpy.diff`` of a slice of stored offsets). The hasher turns them
            into absolute offsets continuing from the previous batch.
        values
            The ``sum(lengths)`` value rows of these samples, shape
            ``(sum(lengths), ...)``; uint8 for bytes.
        shapes
            ragged only: int array ``(n, D)`` of each sample's shape when the
            feature stores ``shapes``; ``None`` otherwise.

        Raises
        ------
        EncodingError
            If the hasher is not ragged/bytes, lengths are negative or do not
            add up to the number of value rows, or shapes are given to a bytes
            feature or have the wrong number of rows.
        """
        self._expect("ragged", "bytes")
        lens = np.asarray(lengths)
        if lens.ndim != 1 or (lens.dtype.kind not in "iu" and lens.size):
            raise EncodingError(f"lengths must be a 1-D integer array, got shape {lens.shape} dtype {lens.dtype}")
        lens = lens.astype(np.int64)
        if lens.size and int(lens.min()) < 0:
            raise EncodingError("ragged lengths must be >= 0 (offsets must not decrease, §6.3)")
        vals = np.asarray(values)
        rows = vals.shape[0] if vals.ndim else -1
        if rows != int(lens.sum()):
            raise EncodingError(f"lengths add up to {int(lens.sum())} value rows but {rows} were given (§6.3)")
        offsets = self._total + np.cumsum(lens, dtype=np.int64)
        self._components[0].update(_le_bytes(offsets, _INT64_LE))
        self._components[1].update(self._values_bytes(vals))
        if shapes is not None:
            if self.encoding == "bytes":
                raise EncodingError("a bytes feature has no shapes (§6.6)")
            shp = np.asarray(shapes)
            if shp.ndim != 2 or shp.shape[0] != lens.shape[0]:
                raise EncodingError(f"shapes must have shape (n, D) with n = {lens.shape[0]}, got {shp.shape} (§6.3)")
            self._components[2].update(_le_bytes(shp, _INT64_LE))
        self._total += rows
        self.num_samples += lens.shape[0]

    # -- ragged and bytes, one component at a time ------------------------------------------------
    # A reader that streams each dataset of a feature chunk by chunk (h5ml verify) feeds the stored offsets,
    # the value rows and the shapes separately; the digests are those :meth:`update_ragged` makes from the
    # same content, because stored offsets that start at 0 and never decrease are the offsets it computes.

    def update_offsets(self, offsets: npt.ArrayLike) -> None:
        """Add the next stored offsets of a ragged or bytes feature, in file order (§6.3, §6.6).

        The first call's first entry is the leading 0 (hashed once, already);
        every later entry ends one more sample. Use with :meth:`update_values`
        (and :meth:`update_shapes`), never with :meth:`update_ragged`, then
        call :meth:`check_complete`.

        Parameters
        ----------
        offsets
            1-D integer array: the next entries of the stored ``offsets``
            dataset (any integer dtype and byte order).

        Raises
        ------
        EncodingError
            If the hasher is not ragged/bytes, the offsets are not 1-D
            integers, the first entry is not 0, or an entry is smaller than
            the one before it (SPEC §6.3-R1).
        """
        self._expect("ragged", "bytes")
        arr = np.asarray(offsets)
        if arr.ndim != 1 or (arr.dtype.kind not in "iu" and arr.size):
            raise EncodingError(f"offsets must be a 1-D integer array, got shape {arr.shape} dtype {arr.dtype}")
        arr = arr.astype(np.int64)
        if not self._offsets_started and arr.size:
            if int(arr[0]) != 0:
                raise EncodingError(f"offsets start at {int(arr[0])}, not 0 (§6.3)")
            self._offsets_started = True
            arr = arr[1:]
        if arr.size and (int(arr[0]) < self._total or bool((np.diff(arr) < 0).any())):
            raise EncodingError("offsets decrease; they never decrease (§6.3)")
        self._components[0].update(_le_bytes(arr, _INT64_LE))
        if arr.size:
            self._total = int(arr[-1])
        self.num_samples += arr.shape[0]

    def update_values(self, values: npt.ArrayLike) -> None:
        """Add the next value rows of a ragged or bytes feature, in file order (§6.3, §6.6).

        Parameters
        ----------
        values
            Array ``(m, ...)`` of the hasher's dtype (uint8 for bytes).

        Raises
        ------
        EncodingError
            If the hasher is not ragged/bytes or the dtype differs.
        """
        self._expect("ragged", "bytes")
        arr = np.asarray(values)
        self._components[1].update(self._values_bytes(arr))
        self._value_rows += arr.shape[0] if arr.ndim else 1

    def update_shapes(self, shapes: npt.ArrayLike) -> None:
        """Add the next rows of a ragged feature's ``shapes``, in file order (§6.3).

        Parameters
        ----------
        shapes
            Integer array ``(n, D)``.

        Raises
        ------
        EncodingError
            If the hasher is not ragged or ``shapes`` is not 2-D.
        """
        self._expect("ragged")
        shp = np.asarray(shapes)
        if shp.ndim != 2:
            raise EncodingError(f"shapes must have shape (n, D), got {shp.shape} (§6.3)")
        self._components[2].update(_le_bytes(shp, _INT64_LE))
        self._shape_rows += shp.shape[0]

    def check_complete(self) -> None:
        """Check that the components fed one at a time describe one feature (§6.3, §6.6).

        Raises
        ------
        EncodingError
            If no offsets were fed, the last offset is not the number of value
            rows fed, or shapes were fed for another number of samples.
        """
        if not self._offsets_started:
            raise EncodingError("offsets hold no entry; they hold num_samples + 1 entries, from 0 (§6.3)")
        if self._total != self._value_rows:
            raise EncodingError(f"offsets end at {self._total}, but the values hold {self._value_rows} rows (§6.3)")
        if self._shape_rows not in (0, self.num_samples):
            raise EncodingError(f"shapes hold {self._shape_rows} rows for {self.num_samples} samples (§6.3)")

    def header(self) -> bytes:
        """Return the canonical JSON header of the content fed so far (§8.2).

        Returns
        -------
        bytes
            UTF-8 of ``json.dumps({...}, sort_keys=True, separators=(",", ":"))``.
        """
        doc = {
            "encoding": self.encoding,
            "dtype": self.dtype_str,
            "sample_shape": list(self.sample_shape),
            "num_samples": self.num_samples,
        }
        return json.dumps(doc, sort_keys=True, separators=(",", ":")).encode("utf-8")

    def fingerprint(self) -> str:
        """Return the fingerprint of the content fed so far (§8.1, §8.2).

        May be called at any time; feeding more data afterwards continues.

        Returns
        -------
        str
            ``"sha256:"`` followed by 64 lowercase hex digits.
        """
        outer = hashlib.sha256(self.header() + b"\n")
        for component in self._components:
            outer.update(component.copy().digest())
        return _PREFIX + outer.hexdigest()


def fingerprint_feature(
    encoding: str,
    values: Any,
    *,
    lengths: npt.ArrayLike | None = None,
    shapes: npt.ArrayLike | None = None,
    class_names: Sequence[str] | None = None,
    dtype: npt.DTypeLike | None = None,
) -> str:
    """Fingerprint a feature held in memory, in one call (§8.2).

    Parameters
    ----------
    encoding
        The feature's encoding.
    values
        dense: array ``(N, ...)``. string: sequence of ``str``. categorical:
        integer codes ``(N,)``. ragged: the concatenated value rows ``(M, ...)``
        (with ``lengths``). bytes: a sequence of ``bytes`` objects, or the
        concatenated uint8 values ``(M,)`` with ``lengths``.
    lengths
        ragged and bytes: value rows per sample, ``(N,)``.
    shapes
        ragged only: per-sample shapes ``(N, D)`` when the feature stores them.
    class_names
        categorical only: the class names in code order.
    dtype
        dense and ragged: the dtype to record (``bool`` for a boolean feature
        stored as uint8); defaults to the dtype of ``values``.

    Returns
    -------
    str
        ``"sha256:<64 hex digits>"``.

    Raises
    ------
    EncodingError
        If the arguments do not fit the encoding.
    """
    if encoding in ("dense", "ragged"):
        arr = np.asarray(values)
        hasher = FeatureHasher(encoding, arr.dtype if dtype is None else dtype, arr.shape[1:])
        if encoding == "dense":
            hasher.update_dense(arr)
        else:
            if lengths is None:
                raise EncodingError("a ragged fingerprint needs lengths (value rows per sample)")
            hasher.update_ragged(lengths, arr, shapes)
    elif encoding == "string":
        hasher = FeatureHasher(encoding)
        hasher.update_strings(values)
    elif encoding == "categorical":
        hasher = FeatureHasher(encoding, class_names=class_names)
        hasher.update_codes(values)
    elif encoding == "bytes":
        hasher = FeatureHasher(encoding)
        if lengths is None:
            items = [bytes(v) for v in values]
            lengths = np.array([len(v) for v in items], dtype=np.int64)
            values = np.frombuffer(b"".join(items), dtype=np.uint8)
        hasher.update_ragged(lengths, values)
    else:
        raise EncodingError(f"unknown encoding {encoding!r}; expected one of {sorted(spec.ENCODINGS)} (§6)")
    return hasher.fingerprint()


def file_fingerprint(features: Mapping[tuple[str, str], str]) -> str:
    """Combine feature fingerprints into the file fingerprint (§8.3).

    Parameters
    ----------
    features
        ``{(split, feature): "sha256:..."}`` for every feature of the file.

    Returns
    -------
    str
        ``"sha256:"`` + the hex SHA-256 of the UTF-8 lines
        ``"<split>/<feature> <fingerprint>\\n"`` sorted by split name, then by
        feature name (code point order).

    Raises
    ------
    EncodingError
        If a fingerprint is not of the form ``sha256:<64 lowercase hex>``.
    """
    outer = hashlib.sha256()
    for (split, feature), fp in sorted(features.items()):
        if not isinstance(fp, str) or not FINGERPRINT_PATTERN.match(fp):
            raise EncodingError(f"fingerprint of /{split}/{feature} is {fp!r}, not 'sha256:' + 64 lowercase hex (§8.1)")
        outer.update(f"{split}/{feature} {fp}\n".encode())
    return _PREFIX + outer.hexdigest()
