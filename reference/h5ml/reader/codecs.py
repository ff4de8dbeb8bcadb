"""Decoding one stored chunk given its HDF5 filter pipeline, without HDF5 (§3.5, §10.4).

HDF5 applies a dataset's filters in pipeline order when it writes a chunk and
undoes them in reverse order when it reads one. :func:`decode_chunk` does the
same for the pipelines this module knows, from the chunk's stored bytes (the
memory map of the file, or ``H5Dread_chunk``), and returns exactly the bytes
HDF5 would: one whole chunk, partial edge chunks included (HDF5 stores those
full-size too). Every decoder here releases Python's lock while it works, so
that several threads decode several chunks at once
(:mod:`h5ml.reader.decode_pool`).

The decoders are one table, :data:`CODECS`, keyed by HDF5 filter id; adding a
codec is one entry:

- deflate (filter 1, §3.5): libdeflate (the ``deflate`` package) where
  installed, else ISA-L (``isal``), else the standard library's zlib. Measured
  here on shuffled gzip-4 chunks of 64x64x3 photo tiles (85 tiles, 1 MiB per
  chunk), single-threaded medians of 7 interleaved repetitions, decoded MB/s:
  libdeflate 313, ISA-L 268, zlib-ng 221, zlib 132; each of the first two
  releases the GIL (``PyEval_SaveThread``). The output size is known from the
  chunk shape, so the output buffer is allocated once at its final size, and a
  stream that inflates to any other size is refused;
- shuffle (filter 2, §3.5): the byte planes put back with numpy (one strided
  copy per plane);
- zstd (filter 32015): ``h5ml.reader.zstd_codec.decompress(data, nbytes)``,
  imported on first use, decoding in every pool thread at once;
  where that module is absent, zstd chunks are not decodable here and the
  caller reads them through h5py.

Any other filter (fletcher32, szip, scale-offset, ...) makes a pipeline not
decodable here: :func:`decodable` says so and the caller reads through h5py,
which decodes it (or refuses it, §3.5-R4) as before.
"""

from __future__ import annotations

import importlib
import zlib
from collections.abc import Callable, Sequence
from typing import Any, Final

import numpy as np

__all__ = [
    "CODECS",
    "DEFLATE",
    "MAX_CHUNK_BYTES",
    "SHUFFLE",
    "ZSTD",
    "ChunkDecodeError",
    "decodable",
    "decode_chunk",
    "unshuffle",
]

#: HDF5's filter ids (H5Zpublic.h; 32015 is the registered zstd plugin).
DEFLATE: Final = 1
SHUFFLE: Final = 2
ZSTD: Final = 32015
#: The largest chunk decoded (§10.4): a larger one is refused rather than allocated.
MAX_CHUNK_BYTES: Final = 1 << 30

#: A decoder: ``(stored bytes, decoded size in bytes, item size in bytes) -> decoded bytes``. ``decoded
#: size`` is the size the output must have once every filter is undone; a decoder that knows its output
#: size differs raises :class:`ChunkDecodeError`.
Decoder = Callable[[Any, int, int], Any]


class ChunkDecodeError(ValueError):
    """The stored bytes of a chunk do not decode to one chunk (damaged data): the caller names the file and chunk."""


def _deflate_decoder() -> Decoder:
    """The fastest installed zlib-stream inflater (see the module docstring for the figures)."""
    try:
        import deflate
    except ImportError:  # not installed: ISA-L or the standard library inflate the same streams
        return _standard_decoder()
    lib_error = deflate.DeflateError

    def libdeflate(data: Any, nbytes: int, itemsize: int) -> Any:
        try:
            # libdeflate fails when the stream inflates to more than nbytes (a longer chunk is refused)
            return deflate.zlib_decompress(data, nbytes)
        except lib_error as exc:
            raise ChunkDecodeError(f"does not inflate to at most {nbytes} bytes ({exc})") from exc

    return libdeflate


def _standard_decoder() -> Decoder:
    """ISA-L's inflate where installed, else the standard library's zlib."""
    inflate: Callable[..., bytes] = zlib.decompress
    errors: tuple[type[Exception], ...] = (zlib.error,)
    try:  # an optional package (not a dependency): imported by name, so that type checks do not need it
        isal_zlib: Any = importlib.import_module("isal.isal_zlib")
    except ImportError:  # the standard library inflates the same streams
        pass
    else:
        inflate = isal_zlib.decompress
        errors = (zlib.error, isal_zlib.error)

    def standard(data: Any, nbytes: int, itemsize: int) -> Any:
        try:
            return inflate(data, 15, max(1, nbytes))
        except errors as exc:
            raise ChunkDecodeError(f"does not inflate ({exc})") from exc

    return standard


def unshuffle(raw: Any, itemsize: int) -> Any:
    """Undo HDF5's shuffle filter: ``itemsize`` planes (byte 0 of every value, then byte 1, ...) back into values.

    One strided copy per plane: about 2.5x faster here than one transposed copy of the whole chunk.
    Bytes past the last whole value (none in a chunk of whole values) stay where they are, as HDF5 leaves them.

    Parameters
    ----------
    raw
        The shuffled bytes (any buffer).
    itemsize
        Bytes per value (1: nothing to undo).

    Returns
    -------
    numpy.ndarray of uint8, or ``raw``
        The values' bytes in storage order.
    """
    if itemsize <= 1:
        return raw
    flat = np.frombuffer(raw, np.uint8)
    count = flat.shape[0] // itemsize
    if count == 0:
        return raw
    planes = flat[: count * itemsize].reshape(itemsize, count)
    out = np.empty(flat.shape[0], np.uint8)
    values = out[: count * itemsize].reshape(count, itemsize)
    for k in range(itemsize):
        values[:, k] = planes[k]
    out[count * itemsize :] = flat[count * itemsize :]
    return out


def _shuffle(data: Any, nbytes: int, itemsize: int) -> Any:
    return unshuffle(data, itemsize)


def _zstd(data: Any, nbytes: int, itemsize: int) -> Any:
    codec = _zstd_module()
    if codec is None:  # decodable() said no: never called then
        raise ChunkDecodeError("zstd is not decodable in this installation")
    try:
        return codec.decompress(data, nbytes)
    except ValueError as exc:  # the codec's word for a corrupt, truncated or wrong-size frame
        raise ChunkDecodeError(f"does not decode ({exc})") from exc


def _zstd_module() -> Any:
    """``h5ml.reader.zstd_codec``, or None where it is not installed (zstd chunks are then read through h5py)."""
    try:
        return importlib.import_module("h5ml.reader.zstd_codec")
    except ImportError:
        return None


#: The decoders by HDF5 filter id; ``available`` (a callable) says whether the codec works in this installation.
CODECS: Final[dict[int, tuple[Decoder, Callable[[], bool]]]] = {
    DEFLATE: (_deflate_decoder(), lambda: True),
    SHUFFLE: (_shuffle, lambda: True),
    ZSTD: (_zstd, lambda: _zstd_module() is not None),
}


def decodable(filters: Sequence[int]) -> bool:
    """Whether :func:`decode_chunk` can undo this pipeline (filter ids in the order HDF5 applies them on write).

    An empty pipeline is not "decodable": unfiltered chunks are read from the
    memory map as they are (:mod:`h5ml.reader.direct`).
    """
    return bool(filters) and all(f in CODECS and CODECS[f][1]() for f in filters)


def decode_chunk(data: Any, filters: Sequence[int], mask: int, nbytes: int, itemsize: int) -> Any:
    """Undo the filters of one chunk's stored bytes, last filter first, as HDF5 does (§3.5).

    Parameters
    ----------
    data
        The stored bytes (bytes, or a uint8 view of the memory map).
    filters
        The pipeline's filter ids, in the order HDF5 applies them on write (each in :data:`CODECS`).
    mask
        The chunk's filter mask: bit ``i`` set means filter ``i`` was not applied to this chunk.
    nbytes
        Bytes of one whole decoded chunk (item size times the chunk's elements).
    itemsize
        Bytes of one value (for shuffle).

    Returns
    -------
    bytes-like
        Exactly ``nbytes`` bytes (``bytes`` or a uint8 numpy array).

    Raises
    ------
    ChunkDecodeError
        If a filter fails on the bytes, or the result is not ``nbytes`` long.
    """
    raw: Any = data
    for position in reversed(range(len(filters))):
        if mask & (1 << position):
            continue  # HDF5 did not apply this filter to this chunk
        raw = CODECS[filters[position]][0](raw, nbytes, itemsize)
    size = raw.nbytes if isinstance(raw, np.ndarray) else len(raw)
    if size != nbytes:
        raise ChunkDecodeError(f"decodes to {size} bytes, not the {nbytes} of one chunk")
    return raw
