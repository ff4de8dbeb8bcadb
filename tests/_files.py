"""Test helper: h5ml files written with plain h5py, laid out exactly as SPEC.md says (not through h5ml.writer).

The reader's tests use these files so that they do not depend on the reference
writer, and so that they can build what the writer never writes (fixed-length
or ASCII strings, enum booleans, big-endian values, unknown objects, newer
versions, missing markers, external storage). The module also holds the
functions that run in child processes (they must be importable by name).
"""

from __future__ import annotations

import contextlib
import pickle
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import h5py
import numpy as np

from h5ml import spec
from h5ml.spec.attrs import write_attr

__all__ = [
    "HOLDER_SCRIPT",
    "Bytes",
    "Categorical",
    "Dense",
    "Feat",
    "Ragged",
    "String",
    "apply_keys",
    "chunk_spans",
    "codes_at",
    "flip_byte",
    "held_open",
    "read_after_fork",
    "run_cli",
    "write_file",
]

_UTF8 = h5py.string_dtype("utf-8")


@dataclass
class Dense:
    """A dense feature (§6.2): ``values`` (N, ...) stored as given (dtype and byte order kept)."""

    values: np.ndarray
    chunks: tuple[int, ...] | None = None
    compression: str | None = None
    logical_bool: bool = False
    attrs: dict[str, Any] = field(default_factory=dict)


@dataclass
class String:
    """A string feature (§6.4) stored as ``kind``: vlen UTF-8, vlen ASCII, or fixed-length bytes."""

    values: Sequence[str]
    kind: Literal["vlen", "ascii", "fixed"] = "vlen"
    chunks: tuple[int, ...] | None = None
    compression: str | None = None
    attrs: dict[str, Any] = field(default_factory=dict)


@dataclass
class Categorical:
    """A categorical feature (§6.5): ``codes`` (N,) and ``class_names`` (K,)."""

    codes: np.ndarray
    class_names: Sequence[str]
    fixed_names: bool = False
    attrs: dict[str, Any] = field(default_factory=dict)


@dataclass
class Ragged:
    """A ragged feature (§6.3): ``values`` + ``offsets`` (+ ``shapes`` when ``with_shapes``)."""

    samples: Sequence[np.ndarray]
    with_shapes: bool = False
    chunk_rows: int | None = None
    compression: str | None = None
    dtype: Any = None
    attrs: dict[str, Any] = field(default_factory=dict)


@dataclass
class Bytes:
    """A bytes feature (§6.6): ``values`` uint8 + ``offsets``, ``media_type`` on the group."""

    samples: Sequence[bytes]
    media_type: str = "application/octet-stream"
    chunk_rows: int | None = None
    compression: str | None = None
    attrs: dict[str, Any] = field(default_factory=dict)


Feat = Dense | String | Categorical | Ragged | Bytes


def _common(obj: h5py.HLObject, encoding: str, attrs: Mapping[str, Any]) -> None:
    write_attr(obj, "encoding", encoding)
    write_attr(obj, "encoding_version", spec.ENCODING_VERSION)
    for key, value in attrs.items():
        write_attr(obj, key, value)


def _offsets(lengths: Sequence[int]) -> np.ndarray:
    return np.concatenate([[0], np.cumsum(np.asarray(lengths, dtype=np.int64))]).astype(np.int64)


def _write_feature(group: h5py.Group, name: str, feat: Feat) -> int:
    if isinstance(feat, Dense):
        dset = group.create_dataset(name, data=feat.values, chunks=feat.chunks, compression=feat.compression)
        _common(dset, "dense", feat.attrs)
        if feat.logical_bool:
            write_attr(dset, "logical_dtype", "bool")
        return int(feat.values.shape[0])
    if isinstance(feat, String):
        if feat.kind == "fixed":
            data = np.array([s.encode("utf-8") for s in feat.values], dtype="S")
            dset = group.create_dataset(name, data=data, chunks=feat.chunks, compression=feat.compression)
        else:
            dtype = h5py.string_dtype("ascii" if feat.kind == "ascii" else "utf-8")
            data = np.array(list(feat.values), dtype=object)
            dset = group.create_dataset(
                name, shape=(len(data),), dtype=dtype, chunks=feat.chunks, compression=feat.compression
            )
            if len(data):
                dset[:] = data
        _common(dset, "string", feat.attrs)
        return len(feat.values)
    sub = group.create_group(name)
    if isinstance(feat, Categorical):
        _common(sub, "categorical", feat.attrs)
        sub.create_dataset("codes", data=np.asarray(feat.codes))
        if feat.fixed_names:
            sub.create_dataset("class_names", data=np.array([n.encode() for n in feat.class_names], dtype="S"))
        else:
            sub.create_dataset("class_names", data=np.array(list(feat.class_names), dtype=object), dtype=_UTF8)
        return int(np.asarray(feat.codes).shape[0])
    if isinstance(feat, Ragged):
        _common(sub, "ragged", feat.attrs)
        samples = [np.asarray(s) for s in feat.samples]
        if feat.with_shapes:
            flat = [s.reshape(-1) for s in samples]
            dims = max((s.ndim for s in samples), default=1)
            shapes = np.array([s.shape for s in samples], dtype=np.int64).reshape(len(samples), dims)
            sub.create_dataset("shapes", data=shapes)
            pieces, lengths = flat, [s.size for s in samples]
        else:
            pieces, lengths = samples, [s.shape[0] for s in samples]
        dtype = feat.dtype if feat.dtype is not None else (samples[0].dtype if samples else np.float32)
        inner = samples[0].shape[1:] if samples and not feat.with_shapes else ()
        values = np.concatenate(pieces).astype(dtype) if pieces else np.empty((0, *inner), dtype=dtype)
        chunks = (feat.chunk_rows, *values.shape[1:]) if feat.chunk_rows else None
        sub.create_dataset("values", data=values, chunks=chunks, compression=feat.compression)
        sub.create_dataset("offsets", data=_offsets(lengths))
        return len(samples)
    _common(sub, "bytes", feat.attrs)
    write_attr(sub, "media_type", feat.media_type)
    values = np.frombuffer(b"".join(feat.samples), dtype=np.uint8)
    chunks = (feat.chunk_rows,) if feat.chunk_rows else None
    sub.create_dataset("values", data=values, chunks=chunks, compression=feat.compression)
    sub.create_dataset("offsets", data=_offsets([len(b) for b in feat.samples]))
    return len(feat.samples)


def write_file(
    path: Path,
    splits: Mapping[str, Mapping[str, Feat]],
    *,
    root: Mapping[str, Any] | None = None,
    omit: Sequence[str] = (),
    split_attrs: Mapping[str, Mapping[str, Any]] | None = None,
    extra: Callable[[h5py.File], None] | None = None,
    complete: bool = True,
    libver: tuple[str, str] = spec.LIBVER_BOUNDS,
) -> Path:
    """Write an h5ml file with plain h5py (§3-§6) and return its path.

    Parameters
    ----------
    path
        The file to create.
    splits
        ``{split: {feature: Dense | String | Categorical | Ragged | Bytes}}``.
    root
        Root attributes that replace or extend the defaults (``format``,
        ``format_version`` "1.0", ``name``, ``created``, ``writer``,
        ``must_understand`` []).
    omit
        Default root attributes to leave out.
    split_attrs
        Extra attributes per split (``num_samples`` is written from the data).
    extra
        Called with the open file before the completion marker, to add
        objects the writer would not (unknown groups, links, ...).
    complete
        Write ``complete = 1`` last (§4.4).
    libver
        HDF5's library version bounds; ``("v110", "v110")`` gives object
        headers that keep many attributes in dense storage, which HDF5 writes
        in linear time (with the default bounds each added attribute scans
        every earlier one).
    """
    attrs: dict[str, Any] = {
        "format": spec.FORMAT_NAME,
        "format_version": spec.FORMAT_VERSION_STRING,
        "name": "test",
        "created": "2024-01-02T03:04:05Z",
        "writer": "tests 0",
        "must_understand": [],
    }
    attrs.update(root or {})
    with h5py.File(path, "w", libver=libver) as f:
        for key, value in attrs.items():
            if key not in omit:
                write_attr(f, key, value)
        for split, features in splits.items():
            group = f.create_group(split)
            counts = {_write_feature(group, name, feat) for name, feat in features.items()}
            write_attr(group, "num_samples", counts.pop() if counts else 0)
            for key, value in (split_attrs or {}).get(split, {}).items():
                write_attr(group, key, value)
        if extra is not None:
            extra(f)
        if complete:
            write_attr(f, "complete", 1)
    return path


def apply_keys(blob: bytes, keys: Sequence[Any]) -> Any:
    """Unpickle ``blob`` and index it with each key in turn (runs in a child process)."""
    obj = pickle.loads(blob)
    for key in keys:
        obj = obj[key]
    return obj


def read_after_fork(dataset: Any, handle: Any, keys: Sequence[Any], queue: Any) -> None:
    """Read through an object inherited by fork; report the values and whether the handle was replaced."""
    obj = dataset
    for key in keys:
        obj = obj[key]
    queue.put((obj, dataset.h5file is not handle))


def run_cli(*args: str) -> tuple[int, str, str]:
    """Run the real command line (``h5ml.tools.cli.run``) in this process; return (exit code, stdout, stderr)."""
    import io

    from h5ml.tools import cli

    out, err = io.StringIO(), io.StringIO()
    code = cli.run(list(args), out, err)
    return code, out.getvalue(), err.getvalue()


def codes_at(report: Any) -> set[tuple[str, str]]:
    """The ``(code, path)`` of every issue of a validator ``FileReport``."""
    return {(i.code, i.path) for i in report.issues}


def chunk_spans(path: str | Path, hdf5_path: str) -> list[tuple[int, int]]:
    """``(file offset, stored size)`` of every chunk of a dataset, in the order of their offsets in the dataset."""
    with h5py.File(path, "r") as f:
        dsid = f[hdf5_path].id
        infos = [dsid.get_chunk_info(k) for k in range(dsid.get_num_chunks())]
        return [(int(i.byte_offset), int(i.size)) for i in sorted(infos, key=lambda i: tuple(i.chunk_offset))]


def flip_byte(path: str | Path, offset: int, mask: int = 0x04) -> None:
    """XOR the byte of the file at ``offset`` with ``mask``, in place (damage that HDF5's metadata does not show)."""
    with open(path, "r+b") as fh:
        fh.seek(offset)
        value = fh.read(1)[0]
        fh.seek(offset)
        fh.write(bytes([value ^ mask]))


#: The child of :func:`held_open`: opens the file with h5py, says "open", waits for its stdin to close.
HOLDER_SCRIPT = (
    "import h5py, sys; f = h5py.File(sys.argv[1], sys.argv[2]); print('open', flush=True); sys.stdin.read(); f.close()"
)


@contextlib.contextmanager
def held_open(path: Path, mode: str = "a", timeout: float = 30) -> Iterator[None]:
    """Another process holds ``path`` open with h5py in ``mode`` (and HDF5's lock) until the block ends."""
    with subprocess.Popen(
        [sys.executable, "-c", HOLDER_SCRIPT, str(path), mode], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    ) as proc:
        assert proc.stdin is not None and proc.stdout is not None
        try:
            assert proc.stdout.readline().strip() == "open"
            yield
        finally:
            proc.stdin.close()
            proc.wait(timeout=timeout)
