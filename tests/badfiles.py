"""Builders of conforming and broken h5ml files, with plain h5py and numpy (test helper).

:func:`minimal_valid` writes a small file that follows SPEC.md in every point
(every encoding: dense, dense bool, string, categorical, ragged with and
without shapes, bytes; chunks per §7; fingerprints per §8 computed with
:mod:`h5ml.model.fingerprint`). Each entry of :data:`CASES` builds a file with one
defect and names the issue code it must give, the HDF5 path the issue must
carry, and the other codes the same defect brings along.

The files are written without the h5ml writer on purpose: the validator is
checked against files whose every byte the test controls.
"""

from __future__ import annotations

import os
import signal
import zlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from h5ml import spec
from h5ml.model.fingerprint import file_fingerprint, fingerprint_feature
from h5ml.spec.attrs import write_attr
from h5ml.spec.chunks import VLEN_ELEMENT_BYTES, chunk_shape

__all__ = [
    "CASES",
    "Case",
    "FeatureData",
    "add_large_split",
    "add_slow_split",
    "build_content",
    "corrupt_chunk",
    "default_splits",
    "minimal_valid",
    "not_h5ml",
    "overwrite_raw_data",
    "replace_dataset",
    "write_h5ml",
    "write_then_die",
]

_STR = h5py.string_dtype("utf-8")
_SPLITS = {"train": 6, "test": 3}


@dataclass
class FeatureData:
    """One feature to write: its encoding, its arrays and its attributes.

    ``arrays`` maps member names to data; a dataset encoding (dense, string)
    uses the key ``""``. Strings are lists of ``str`` (or of ``bytes`` to write
    bytes that are not UTF-8).
    """

    encoding: str
    arrays: dict[str, Any]
    attrs: dict[str, Any] = field(default_factory=dict)
    dtypes: dict[str, Any] = field(default_factory=dict)

    def fingerprint(self) -> str:
        """The §8.2 fingerprint of this content, from :func:`h5ml.model.fingerprint.fingerprint_feature`."""
        a = self.arrays
        logical = bool if self.attrs.get("logical_dtype") == "bool" else None
        if self.encoding == "dense":
            return fingerprint_feature("dense", np.asarray(a[""]), dtype=logical)
        if self.encoding == "string":
            return fingerprint_feature("string", list(a[""]))
        if self.encoding == "categorical":
            return fingerprint_feature("categorical", a["codes"], class_names=list(a["class_names"]))
        lengths = np.diff(np.asarray(a["offsets"]))
        if self.encoding == "ragged":
            return fingerprint_feature("ragged", a["values"], lengths=lengths, shapes=a.get("shapes"), dtype=logical)
        return fingerprint_feature("bytes", a["values"], lengths=lengths)


def build_content(n: int, seed: int) -> dict[str, FeatureData]:
    """The features of one split of ``n`` samples, one per encoding, from a seeded generator."""
    rng = np.random.default_rng(seed)
    clip_lengths = rng.integers(0, 5, size=n)
    volume_shapes = rng.integers(0, 4, size=(n, 2)).astype(np.int64)
    volume_sizes = volume_shapes.prod(axis=1)
    blobs = [rng.integers(0, 256, size=int(k), dtype=np.uint8).tobytes() for k in rng.integers(0, 9, size=n)]
    words = ["héllo", "", "日本語", "plain", "naïve café", "x" * 40, "z"]
    image = rng.normal(size=(n, 4, 3)).astype(np.float32)
    return {
        "image": FeatureData(
            "dense",
            {"": image},
            {
                "role": "input",
                "units": "arbitrary",
                "stats_count": int(image.size),
                "stats_min": float(image.min()),
                "stats_max": float(image.max()),
                "stats_mean": float(image.mean()),
                "stats_std": float(image.std()),
            },
        ),
        "flag": FeatureData("dense", {"": rng.integers(0, 2, size=n).astype(np.uint8)}, {"logical_dtype": "bool"}),
        "text": FeatureData("string", {"": [words[i % len(words)] for i in range(n)]}, {"role": "metadata"}),
        "label": FeatureData(
            "categorical",
            {"codes": rng.integers(-1, 3, size=n).astype(np.int16), "class_names": ["cat", "dog", "bird"]},
            {"role": "target"},
        ),
        "clip": FeatureData(
            "ragged",
            {
                "values": rng.integers(-100, 100, size=(int(clip_lengths.sum()), 2)).astype(np.int16),
                "offsets": np.concatenate(([0], np.cumsum(clip_lengths))).astype(np.int64),
            },
            {"sample_rate": 16000.0},
        ),
        "volume": FeatureData(
            "ragged",
            {
                "values": rng.normal(size=int(volume_sizes.sum())).astype(np.float32),
                "offsets": np.concatenate(([0], np.cumsum(volume_sizes))).astype(np.int64),
                "shapes": volume_shapes,
            },
        ),
        "blob": FeatureData(
            "bytes",
            {
                "values": np.frombuffer(b"".join(blobs), dtype=np.uint8).copy(),
                "offsets": np.concatenate(([0], np.cumsum([len(b) for b in blobs]))).astype(np.int64),
            },
            {"media_type": "application/octet-stream"},
        ),
    }


def _write_array(parent: h5py.Group, name: str, data: Any, dtype: Any, compression: str | None) -> h5py.Dataset:
    """Write one array chunked as §7 says (rows a power of two, whole rows), resizable along axis 0."""
    if isinstance(data, list):
        arr = np.array(data, dtype=object)
        dtype = _STR if dtype is None else dtype
        itemsize = VLEN_ELEMENT_BYTES
    else:
        arr = np.asarray(data)
        dtype = arr.dtype if dtype is None else dtype
        itemsize = np.dtype(dtype).itemsize
    return parent.create_dataset(
        name,
        data=arr,
        dtype=dtype,
        maxshape=(None, *arr.shape[1:]),
        chunks=chunk_shape(arr.shape[1:], itemsize, arr.shape[0]),
        compression=compression,
    )


def write_h5ml(
    path: str | os.PathLike[str],
    splits: dict[str, dict[str, FeatureData]],
    *,
    root: dict[str, Any] | None = None,
    compression: str | None = None,
    complete: bool = True,
) -> Path:
    """Write an h5ml file with plain h5py: root attributes, splits, features, fingerprints, ``complete`` last.

    Parameters
    ----------
    path
        Target file.
    splits
        ``{split: {feature: FeatureData}}``.
    root
        Root attributes to add or override (a value of None removes one).
    compression
        Compression of the sample datasets (class names stay uncompressed).
    complete
        Write the completion marker (§4.4).

    Returns
    -------
    pathlib.Path
        ``path``.
    """
    attrs: dict[str, Any] = {
        "format": spec.FORMAT_NAME,
        "format_version": spec.FORMAT_VERSION_STRING,
        "name": "badfiles-minimal",
        "created": "2026-01-02T03:04:05Z",
        "writer": "badfiles 1.0",
        "must_understand": [],
        "license": "CC0-1.0",
        "description": "A small file with every encoding, written by tests/badfiles.py.",
    }
    fingerprints: dict[tuple[str, str], str] = {}
    with h5py.File(path, "w", libver=spec.LIBVER_BOUNDS) as f:
        for split_name, features in splits.items():
            group = f.create_group(split_name)
            n = 0
            for feature_name, feature in features.items():
                if feature.encoding in ("dense", "string"):
                    obj: Any = _write_array(
                        group, feature_name, feature.arrays[""], feature.dtypes.get(""), compression
                    )
                    n = obj.shape[0]
                else:
                    obj = group.create_group(feature_name)
                    for member, data in feature.arrays.items():
                        if member == "class_names":
                            obj.create_dataset(member, data=np.array(data, dtype=object), dtype=_STR)
                        else:
                            _write_array(obj, member, data, feature.dtypes.get(member), compression)
                    n = (
                        len(feature.arrays["codes"])
                        if "codes" in feature.arrays
                        else len(feature.arrays["offsets"]) - 1
                    )
                fp = feature.fingerprint()
                fingerprints[(split_name, feature_name)] = fp
                write_attr(obj, "encoding", feature.encoding)
                write_attr(obj, "encoding_version", spec.ENCODING_VERSION)
                for key, value in {"fingerprint": fp, **feature.attrs}.items():
                    write_attr(obj, key, value)
            write_attr(group, "num_samples", n)
            write_attr(group, "shuffle_seed", 1234)
        attrs["fingerprint"] = file_fingerprint(fingerprints)
        for key, value in {**attrs, **(root or {})}.items():
            if value is not None:
                write_attr(f, key, value)
        if complete:
            write_attr(f, "complete", 1)  # last (§4.4)
    return Path(path)


def default_splits() -> dict[str, dict[str, FeatureData]]:
    """The content of :func:`minimal_valid`: a train split of 6 samples and a test split of 3."""
    return {name: build_content(n, seed=i) for i, (name, n) in enumerate(_SPLITS.items())}


def minimal_valid(path: str | os.PathLike[str], *, compression: str | None = None) -> Path:
    """Write a file that conforms to SPEC.md in every point (no error, no warning, no info).

    Parameters
    ----------
    path
        Target file.
    compression
        ``None`` (uncompressed chunks) or ``"gzip"``.

    Returns
    -------
    pathlib.Path
        ``path``.
    """
    return write_h5ml(path, default_splits(), compression=compression)


def not_h5ml(path: str | os.PathLike[str]) -> Path:
    """The tutorial-style HDF5 file: plain datasets ``x_train``/``y_train`` and no h5ml attributes."""
    rng = np.random.default_rng(7)
    with h5py.File(path, "w") as f:
        f["x_train"] = rng.normal(size=(10, 4)).astype(np.float32)
        f["y_train"] = rng.integers(0, 2, size=10)
    return Path(path)


def overwrite_raw_data(path: str | os.PathLike[str], hdf5_path: str, data: bytes) -> int:
    """Overwrite, in place, the stored bytes of every chunk (or the contiguous block) of a dataset.

    Returns the number of bytes written. The HDF5 metadata is untouched: only a
    reader of the sample data can notice.
    """
    with h5py.File(path, "r") as f:
        dset = f[hdf5_path]
        if dset.chunks is None:
            spans = [(dset.id.get_offset(), dset.id.get_storage_size())]
        else:
            spans = [
                (info.byte_offset, info.size)
                for info in (dset.id.get_chunk_info(i) for i in range(dset.id.get_num_chunks()))
            ]
    written = 0
    with open(path, "r+b") as fh:
        for offset, size in spans:
            fh.seek(offset)
            fh.write((data * (size // max(1, len(data)) + 1))[:size])
            written += size
    return written


def corrupt_chunk(path: str | os.PathLike[str], hdf5_path: str) -> None:
    """Fill the stored bytes of every chunk of a dataset with a byte pattern no decoder accepts."""
    overwrite_raw_data(path, hdf5_path, b"\xff\x00\xfe")


def write_then_die(path: str) -> None:
    """Write a whole file but the completion marker, flush, and die by SIGKILL (case C08; run in a child)."""
    splits = default_splits()
    write_h5ml(path + ".ref", splits)  # the same content, finished, for comparison
    f = h5py.File(path, "w", libver=spec.LIBVER_BOUNDS)
    with h5py.File(path + ".ref", "r") as ref:
        for key in ref:
            ref.copy(ref[key], f, name=key)
        for key, value in ref.attrs.items():
            if key != "complete":
                f.attrs[key] = value
    f.flush()
    os.kill(os.getpid(), signal.SIGKILL)


def add_slow_split(f: h5py.File, name: str = "big") -> str:
    """Add a split whose one dense feature takes far longer than a few seconds to read (§10.3, §10.4).

    The feature ``x`` is uint8 of shape (16384, 1024, 1024): 16 GiB of zeros in 4096 gzip chunks of 4 MiB,
    each written directly as the same 4 kB of compressed bytes, so the file grows by about 17 MB and the
    metadata checks stay quick, while reading the data means inflating and hashing 16 GiB. The feature
    carries no fingerprint (W202), so its metadata gives one warning. Returns the feature's HDF5 path.
    """
    rows, side, per_chunk = 16384, 1024, 4
    group = f.create_group(name)
    write_attr(group, "num_samples", rows)
    write_attr(group, "shuffle_seed", 1)
    dset = group.create_dataset(
        "x", shape=(rows, side, side), dtype=np.uint8, chunks=(per_chunk, side, side), compression="gzip"
    )
    _zero_chunks(dset)
    write_attr(dset, "encoding", "dense")
    write_attr(dset, "encoding_version", spec.ENCODING_VERSION)
    return dset.name


def _zero_chunks(dset: h5py.Dataset) -> None:
    """Write every chunk of a gzip dataset as the same compressed zeros, directly (no data passes through numpy)."""
    chunks = dset.chunks
    packed = zlib.compress(bytes(dset.dtype.itemsize * int(np.prod(chunks))), 9)
    starts = np.stack(
        np.meshgrid(*(range(0, s, c) for s, c in zip(dset.shape, chunks, strict=True)), indexing="ij"), -1
    )
    for start in starts.reshape(-1, len(chunks)):
        dset.id.write_direct_chunk(tuple(int(v) for v in start), packed)


def add_large_split(f: h5py.File, name: str = "large") -> tuple[str, str]:
    """Add a split of 2 samples, each feature holding one sample over 1 GiB of zeros, in a few MB of file.

    ``dense`` is float32 (2, 2^28 + 2^20) in one-row slabs of 4 MiB (§7.1.1); ``blob`` is a bytes feature
    whose second sample holds 2^30 + 2^22 bytes in chunks of 4 MiB. Both carry the fingerprint of other
    data ("sha256:" + 64 zeros). Returns the two features' HDF5 paths.
    """
    group = f.create_group(name)
    write_attr(group, "num_samples", 2)
    write_attr(group, "shuffle_seed", 1)
    wrong = "sha256:" + "0" * 64
    width = (1 << 28) + (1 << 20)
    dense = group.create_dataset("dense", shape=(2, width), dtype=np.float32, chunks=(1, 1 << 20), compression="gzip")
    _zero_chunks(dense)
    blob = group.create_group("blob")
    size = (1 << 30) + (1 << 22)
    values = blob.create_dataset("values", shape=(size,), dtype=np.uint8, chunks=(1 << 22,), compression="gzip")
    _zero_chunks(values)
    blob.create_dataset("offsets", data=np.array([0, 0, size], np.int64))
    write_attr(blob, "media_type", "application/octet-stream")
    for obj, encoding in ((dense, "dense"), (blob, "bytes")):
        write_attr(obj, "encoding", encoding)
        write_attr(obj, "encoding_version", spec.ENCODING_VERSION)
        write_attr(obj, "fingerprint", wrong)
    return dense.name, blob.name


# --------------------------------------------------------------------------- defects


@dataclass(frozen=True)
class Case:
    """A file with one defect and the issue it must give.

    Attributes
    ----------
    code
        The registry code the file must give.
    hdf5_path
        The HDF5 path the issue must carry.
    build
        Writes the file at the given path.
    deep
        True for codes only a deep validation finds.
    also
        Other codes this defect gives along with ``code`` (every other code is a test failure).
    """

    code: str
    hdf5_path: str
    build: Callable[[Path], None]
    deep: bool = False
    also: frozenset[str] = frozenset()

    @property
    def id(self) -> str:
        return self.code


def _edit(mutate: Callable[[h5py.File], None], *, compression: str | None = None) -> Callable[[Path], None]:
    """A builder: write the minimal valid file, then change it with ``mutate`` (opened r+)."""

    def build(path: Path) -> None:
        minimal_valid(path, compression=compression)
        with h5py.File(path, "r+") as f:
            mutate(f)

    return build


def _content(change: Callable[[dict[str, dict[str, FeatureData]]], None]) -> Callable[[Path], None]:
    """A builder: change the content before writing, so that fingerprints match the (bad) data."""

    def build(path: Path) -> None:
        splits = default_splits()
        change(splits)
        write_h5ml(path, splits)

    return build


def _set(obj_path: str, name: str, value: Any) -> Callable[[h5py.File], None]:
    def mutate(f: h5py.File) -> None:
        write_attr(f[obj_path], name, value)

    return mutate


def _set_raw(obj_path: str, name: str, value: Any) -> Callable[[h5py.File], None]:
    def mutate(f: h5py.File) -> None:
        f[obj_path].attrs[name] = value

    return mutate


def _delete(obj_path: str, name: str) -> Callable[[h5py.File], None]:
    def mutate(f: h5py.File) -> None:
        del f[obj_path].attrs[name]

    return mutate


def replace_dataset(f: h5py.File, hdf5_path: str, **create: Any) -> h5py.Dataset:
    """Replace a dataset by ``create_dataset(**create)``, keeping its attributes."""
    old = f[hdf5_path]
    attrs = {k: old.attrs[k] for k in old.attrs}
    parent, name = hdf5_path.rsplit("/", 1)
    del f[hdf5_path]
    new = f[parent or "/"].create_dataset(name, **create)
    for key, value in attrs.items():
        new.attrs[key] = value
    return new


def _replace(hdf5_path: str, **create: Any) -> Callable[[h5py.File], None]:
    def mutate(f: h5py.File) -> None:
        replace_dataset(f, hdf5_path, **create)

    return mutate


def _empty_file(path: Path) -> None:
    path.write_bytes(b"")


def _tutorial_file(path: Path) -> None:
    not_h5ml(path)


def _superblock_v4(path: Path) -> None:
    minimal_valid(path)
    with open(path, "r+b") as fh:
        fh.seek(8)
        fh.write(bytes([4]))


def _external_link(f: h5py.File) -> None:
    other = Path(f.filename).with_suffix(".other.h5")
    with h5py.File(other, "w") as g:
        g["x"] = np.arange(6, dtype=np.float32)
    f["train/ext"] = h5py.ExternalLink(other.name, "/x")


def _external_storage(f: h5py.File) -> None:
    raw = Path(f.filename).with_suffix(".raw")
    raw.write_bytes(np.zeros((6, 4, 3), dtype=np.float32).tobytes())
    replace_dataset(f, "train/image", shape=(6, 4, 3), dtype=np.float32, external=[(raw.name, 0, 6 * 4 * 3 * 4)])


def _virtual(f: h5py.File) -> None:
    source = Path(f.filename).with_suffix(".src.h5")
    with h5py.File(source, "w") as g:
        g["x"] = np.zeros((6, 4, 3), dtype=np.float32)
    layout = h5py.VirtualLayout(shape=(6, 4, 3), dtype=np.float32)
    layout[:] = h5py.VirtualSource(source.name, "x", shape=(6, 4, 3))
    attrs = {k: f["train/image"].attrs[k] for k in f["train/image"].attrs}
    del f["train/image"]
    vds = f["train"].create_virtual_dataset("image", layout)
    for key, value in attrs.items():
        vds.attrs[key] = value


def _view_virtual(source: str, target: str) -> Callable[[h5py.File], None]:
    """Mark the file as a view of a sharded dataset (§12.6) and make /train/image virtual over ``source:target``."""

    def mutate(f: h5py.File) -> None:
        f.attrs["view_of"] = "index.json"  # no index lies beside the file
        f.attrs["view_index_fingerprint"] = "sha256:" + "0" * 64
        layout = h5py.VirtualLayout(shape=(6, 4, 3), dtype=np.float32)
        layout[:] = h5py.VirtualSource(source, target, shape=(6, 4, 3))
        attrs = {k: f["train/image"].attrs[k] for k in f["train/image"].attrs}
        del f["train/image"]
        vds = f["train"].create_virtual_dataset("image", layout)
        for key, value in attrs.items():
            vds.attrs[key] = value

    return mutate


def _compound(f: h5py.File) -> None:
    data = np.zeros(6, dtype=[("a", "<i4"), ("b", "<f8")])
    replace_dataset(f, "train/image", data=data, maxshape=(None,), chunks=(8,))


def _soft_link(f: h5py.File) -> None:
    f["train/alias"] = h5py.SoftLink("/train/image")


def _copy_split(new_name: str) -> Callable[[h5py.File], None]:
    def mutate(f: h5py.File) -> None:
        f.copy(f["test"], f, name=new_name)
        del f["test"]

    return mutate


def _root_dataset(f: h5py.File) -> None:
    f["stray"] = np.arange(3)


def _drop_class_names(f: h5py.File) -> None:
    del f["train/label/class_names"]


def _duplicate_class_names(splits: dict[str, dict[str, FeatureData]]) -> None:
    splits["train"]["label"].arrays["class_names"] = ["cat", "cat", "bird"]


def _decreasing_offsets(f: h5py.File) -> None:
    offsets = f["train/clip/offsets"]
    values = offsets[...]
    values[1], values[2] = values[2] + 1, values[1]
    offsets[...] = values


def _code_out_of_range(splits: dict[str, dict[str, FeatureData]]) -> None:
    splits["train"]["label"].arrays["codes"][2] = 3  # K = 3 class names


def _bool_two(splits: dict[str, dict[str, FeatureData]]) -> None:
    splits["train"]["flag"].arrays[""][4] = 2


def _shapes_mismatch(splits: dict[str, dict[str, FeatureData]]) -> None:
    volume = splits["train"]["volume"].arrays
    shapes = volume["shapes"]
    row = int(np.flatnonzero(shapes.prod(axis=1) > 0)[0])
    shapes[row] = [shapes[row][0] * shapes[row][1] + 1, 1]


def _bad_utf8(splits: dict[str, dict[str, FeatureData]]) -> None:
    text = splits["train"]["text"].arrays[""]
    text[3] = b"caf\xe9"  # Latin-1, not UTF-8


def _gzip_garbage(path: Path) -> None:
    minimal_valid(path, compression="gzip")
    corrupt_chunk(path, "train/image")


def _changed_value(f: h5py.File) -> None:
    dset = f["train/image"]
    dset[1, 2, 0] = dset[1, 2, 0] + 1.0


def _checksums(dtype: str = "<u4", damage: int = 0) -> Callable[[h5py.File], None]:
    """Add the checksum dataset of /train/image (SPEC §8.4): the right CRC32C of each chunk, XOR ``damage``."""

    def mutate(f: h5py.File) -> None:
        from h5ml.model.checksums import compute_checksums, fd_reader, stored_layout

        f.flush()
        layout = stored_layout(f["train/image"])
        assert not isinstance(layout, str)
        fd = os.open(f.filename, os.O_RDONLY)
        try:
            values = compute_checksums(layout, fd_reader(fd)) ^ np.uint32(damage)
        finally:
            os.close(fd)
        f.create_dataset("train/_crc32c.image", data=values.astype(dtype))

    return mutate


def _rechunk(chunks: tuple[int, ...], shape: tuple[int, ...] = (6, 4, 3)) -> Callable[[h5py.File], None]:
    def mutate(f: h5py.File) -> None:
        # another shape: zeros, written, since storage never written is E146 (§3.5.1)
        data = f["train/image"][...] if f["train/image"].shape == shape else np.zeros(shape, np.float32)
        replace_dataset(
            f, "train/image", shape=shape, dtype=np.float32, data=data, chunks=chunks, maxshape=(None, *shape[1:])
        )

    return mutate


def _rechunk_with(**options: Any) -> Callable[[h5py.File], None]:
    def mutate(f: h5py.File) -> None:
        data = f["train/image"][...]
        replace_dataset(f, "train/image", data=data, chunks=(8, 4, 3), maxshape=(None, 4, 3), **options)

    return mutate


def _unwritten_chunk(f: h5py.File) -> None:
    """§3.5.1: the train image again in chunks of 4 rows, of which only the first was written."""
    data = f["train/image"][...]
    dset = replace_dataset(f, "train/image", shape=data.shape, dtype=data.dtype, chunks=(4, *data.shape[1:]))
    dset[:4] = data[:4]


def _big_contiguous(f: h5py.File) -> None:
    replace_dataset(f, "train/image", shape=(6, 8192, 8192), dtype=np.float32)  # 1.5 GiB, never written


def _strings(dtype: Any) -> Callable[[h5py.File], None]:
    """Store the train text again with another string type (fixed-length: numpy ``S`` data)."""

    def mutate(f: h5py.File) -> None:
        encoded = [v.encode() for v in f["train/text"].asstr()[...]]
        fixed = h5py.check_string_dtype(dtype).length
        if fixed is None:
            replace_dataset(
                f, "train/text", data=np.array(encoded, dtype=object), dtype=dtype, chunks=(8,), maxshape=(None,)
            )
            return
        dset = replace_dataset(f, "train/text", shape=(len(encoded),), dtype=dtype, chunks=(8,), maxshape=(None,))
        # h5py has no conversion from numpy bytes to fixed-length UTF-8: write the bytes as they are.
        dset.id.write(h5py.h5s.ALL, h5py.h5s.ALL, np.array(encoded, dtype=f"S{fixed}"), mtype=dset.id.get_type())

    return mutate


def _bool_enum(f: h5py.File) -> None:
    data = f["train/flag"][...].astype(bool)
    replace_dataset(f, "train/flag", data=data, maxshape=(None,), chunks=(8,))
    del f["train/flag"].attrs["logical_dtype"]  # §3.3: logical_dtype marks uint8 storage only


def _reserved_group(f: h5py.File) -> None:
    f.create_group("_h5ml")


def _cases() -> Iterable[Case]:
    e = frozenset
    yield Case("E100", "/", _empty_file)
    yield Case("E102", "/", _tutorial_file)
    yield Case("E103", "/", _edit(_set("/", "format_version", "1")))
    yield Case("E104", "/", _edit(_set("/", "format_version", "2.0")))
    yield Case("E105", "/", _edit(_set("/", "must_understand", ["zstd-chunks"])))
    yield Case("E106", "/", _edit(_delete("/", "complete")))
    yield Case("E107", "/", _edit(_set("/", "created", "yesterday")))
    yield Case("E108", "/", _edit(_delete("/", "name")))
    yield Case("E109", "/", _superblock_v4, also=e({"E100"}))  # HDF5 2.0 cannot open it either
    yield Case("E110", "/train/ext", _edit(_external_link))
    yield Case("E111", "/train/image", _edit(_external_storage))
    yield Case("E112", "/train/image", _edit(_virtual))
    yield Case("E113", "/train/image", _edit(_compound))
    yield Case("E114", "/train/image", _edit(_rechunk_with(compression="lzf")))
    yield Case("E115", "/train/alias", _edit(_soft_link))
    yield Case("E116", "/", _edit(_set_raw("/", "name", np.array(["two", "names"], dtype=_STR))))
    yield Case("E117", "/train/image", _edit(_set("/train/image", "role", "label")))
    yield Case("E118", "/train/image", _edit(_view_virtual("/etc/h5ml-absent.h5", "/train/image")))
    yield Case("E119", "/", _edit(_view_virtual("train/train-00000.h5", "/train/image")))
    yield Case("E120", "/.test", _edit(_copy_split(".test")))
    yield Case("E121", "/train", _edit(_delete("/train", "num_samples")))
    yield Case("E122", "/train/image", _edit(_set("/train", "num_samples", 7)))
    yield Case("E123", "/stray", _edit(_root_dataset))
    yield Case("E130", "/train/image", _edit(_delete("/train/image", "encoding")))
    yield Case("E131", "/train/image", _edit(_set("/train/image", "encoding", "sparse")))
    yield Case("E132", "/train/image", _edit(_set("/train/image", "encoding_version", "2.0")))
    yield Case("E133", "/train/label", _edit(_drop_class_names))
    yield Case("E134", "/train/label/class_names", _content(_duplicate_class_names))
    yield Case("E140", "/train/clip/offsets", _edit(_decreasing_offsets), deep=True)
    yield Case("E141", "/train/label/codes", _content(_code_out_of_range), deep=True)
    yield Case("E142", "/train/flag", _content(_bool_two), deep=True)
    yield Case("E143", "/train/volume/shapes", _content(_shapes_mismatch), deep=True)
    yield Case("E144", "/train/text", _content(_bad_utf8), deep=True)
    yield Case("E145", "/train/image", _gzip_garbage, deep=True)
    yield Case("E146", "/train/image", _edit(_unwritten_chunk))
    yield Case("E150", "/train/image", _edit(_rechunk((8, 2, 3))))
    yield Case("E160", "/train/image", _edit(_changed_value), deep=True)
    yield Case("E161", "/train/image", _edit(_set("/train/image", "fingerprint", "md5:0123")))
    yield Case("E162", "/train/image", _edit(_checksums(damage=1)), deep=True)  # SPEC §8.4-R2
    yield Case("E163", "/train/_crc32c.image", _edit(_checksums(dtype="<i4")))  # SPEC §8.4-R1
    yield Case("W200", "/train/image", _edit(_rechunk((3, 4, 3))))  # 6 samples in 2 chunks (§7.2: c0 < n)
    yield Case("W201", "/train/image", _edit(_rechunk((8, 512, 512), shape=(6, 512, 512))))
    yield Case("W202", "/train/image", _edit(_delete("/train/image", "fingerprint")))
    yield Case("W203", "/", _edit(_delete("/", "license")))
    yield Case("W204", "/", _edit(_delete("/", "description")))
    yield Case("W205", "/train/text", _edit(_strings(h5py.string_dtype("utf-8", 64))))
    yield Case("W206", "/train/text", _edit(_strings(h5py.string_dtype("ascii"))))
    yield Case("W207", "/valid", _edit(_copy_split("valid")))
    yield Case("W208", "/train/flag", _edit(_bool_enum))
    yield Case("W209", "/train/image", _edit(_big_contiguous), also=e({"E146"}))  # never written: E146 (§3.5.1)
    yield Case("I300", "/", _edit(_set("/", "my_note", "made by hand")))
    yield Case("I301", "/_h5ml", _edit(_reserved_group))
    yield Case("I302", "/", _edit(_set("/", "format_version", "1.3")))
    yield Case("I303", "/train", _edit(_delete("/train", "shuffle_seed")))
    yield Case("I304", "/train/image", _edit(_set("/train/image", "encoding_version", "1.4")))


#: One case per registry code except E101 (a time limit or a crash, tested with the sandbox).
CASES: tuple[Case, ...] = tuple(_cases())
