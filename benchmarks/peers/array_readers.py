"""The array-store readers: numpy memmap (the bound), zarr v3 and Hugging Face datasets (issue 15, "Peers").

- ``memmap``: ``np.save`` then ``np.load(mmap_mode="r")``; a batch is one fancy
  index (one copy; a slice for one ascending run); ragged clips are a values
  and an offsets ``.npy``, each clip a view of the map (no copy). The bound
  every ratio is taken against.
- ``zarr``: zarr v3 arrays (``zarr.create_array``) chunked by about 1 MiB of
  samples, with no compressor, ``GzipCodec(level=4)`` or ``ZstdCodec(level=3)``;
  read by ``get_orthogonal_selection`` with the indices sorted (and unique),
  the sort undone. zarr has no variable-length numeric type: ragged clips are
  a values and an offsets array, one slice read per clip.
- ``hf-datasets``: ``Dataset.from_dict(...).save_to_disk`` (Arrow files,
  uncompressed), ``load_from_disk(...).with_format("numpy")`` (the documented
  numpy format with its ``dtype=`` option set to the stored dtype of ``x``:
  without it, the formatter returns uint8 images as int64, measured),
  read by ``ds[indices]``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from .base import Reader
from .workloads import Workload

__all__ = ["HFDatasetsReader", "MemmapReader", "ZarrReader", "flatten"]

CHUNK_BYTES = 1 << 20


def flatten(clips: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Return the values (concatenated clips) and the int64 offsets (N+1,) of ragged clips."""
    offsets = np.zeros(len(clips) + 1, dtype=np.int64)
    np.cumsum([len(c) for c in clips], out=offsets[1:])
    return np.concatenate(clips), offsets


def _sorted_unique(indices: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Return the sorted unique indices and, for each asked index, its position among them."""
    return np.unique(indices, return_inverse=True)


class MemmapReader(Reader):
    """``np.load(mmap_mode="r")`` (see module): the bound."""

    name = "memmap"

    def build(self, folder: Path, workload: Workload, compression: str | None) -> None:
        self.folder = folder
        if isinstance(workload.x, list):
            values, offsets = flatten(workload.x)
            np.save(folder / "values.npy", values)
            np.save(folder / "offsets.npy", offsets)
        else:
            np.save(folder / "x.npy", workload.x)
        np.save(folder / "y.npy", workload.y)
        self.is_ragged = workload.ragged

    def open(self) -> None:
        self.y = np.load(self.folder / "y.npy", mmap_mode="r")
        if self.is_ragged:
            self.values = np.load(self.folder / "values.npy", mmap_mode="r")
            self.offsets = np.load(self.folder / "offsets.npy")
        else:
            self.x = np.load(self.folder / "x.npy", mmap_mode="r")

    def read(self, indices: np.ndarray) -> tuple[Any, Any]:
        if self.is_ragged:
            o = self.offsets
            return [self.values[o[i] : o[i + 1]] for i in indices], self.y[indices]
        if len(indices) and np.all(np.diff(indices) == 1):
            pick = slice(int(indices[0]), int(indices[0]) + len(indices))
            return np.array(self.x[pick]), np.array(self.y[pick])
        return self.x[indices], self.y[indices]


class ZarrReader(Reader):
    """zarr v3 arrays (see module)."""

    name = "zarr"
    module = "zarr"
    distribution = "zarr"
    compressions = (None, "gzip", "zstd")

    def build(self, folder: Path, workload: Workload, compression: str | None) -> None:
        import zarr
        from zarr.codecs import GzipCodec, ZstdCodec

        codecs: Any = {None: None, "gzip": GzipCodec(level=4), "zstd": ZstdCodec(level=3)}[compression]
        self.store = folder / "data.zarr"
        root = zarr.open_group(str(self.store), mode="w")

        def put(name: str, arr: np.ndarray) -> None:
            row = max(1, int(arr[0].nbytes)) if arr.ndim > 1 else arr.itemsize
            rows = max(1, min(len(arr), CHUNK_BYTES // row))
            a = root.create_array(
                name, shape=arr.shape, chunks=(rows, *arr.shape[1:]), dtype=arr.dtype, compressors=codecs
            )
            a[...] = arr

        if isinstance(workload.x, list):
            values, offsets = flatten(workload.x)
            put("values", values)
            put("offsets", offsets)
        else:
            put("x", workload.x)
        put("y", workload.y)
        self.is_ragged = workload.ragged

    def open(self) -> None:
        import zarr

        self.root = zarr.open_group(str(self.store), mode="r")
        self.y = self.root["y"]
        if self.is_ragged:
            self.values = self.root["values"]
            self.offsets = self.root["offsets"][...]
        else:
            self.x = self.root["x"]

    def read(self, indices: np.ndarray) -> tuple[Any, Any]:
        unique, inverse = _sorted_unique(indices)
        y = self.y.get_orthogonal_selection((unique,))[inverse]
        if self.is_ragged:
            o = self.offsets
            return [self.values[int(o[i]) : int(o[i + 1])] for i in indices], y
        return self.x.get_orthogonal_selection((unique,))[inverse], y


class HFDatasetsReader(Reader):
    """Hugging Face datasets in its numpy format (see module)."""

    name = "hf-datasets"
    module = "datasets"
    distribution = "datasets"

    def build(self, folder: Path, workload: Workload, compression: str | None) -> None:
        import datasets

        self.path = folder / "hf"
        x = workload.x
        self.dtype = np.float32 if isinstance(x, list) else x.dtype
        if isinstance(x, list):
            features = datasets.Features({"x": datasets.List(datasets.Value("float32")), "y": datasets.Value("int64")})
        elif x.ndim == 4:
            features = datasets.Features(
                {"x": datasets.Array3D(shape=x.shape[1:], dtype=str(x.dtype)), "y": datasets.Value("int64")}
            )
        else:
            features = datasets.Features(
                {"x": datasets.List(datasets.Value(str(x.dtype)), length=x.shape[1]), "y": datasets.Value("int64")}
            )
        datasets.disable_progress_bars()
        ds = datasets.Dataset.from_dict({"x": x, "y": workload.y}, features=features)
        ds.save_to_disk(str(self.path))

    def open(self) -> None:
        import datasets

        # The numpy formatter casts integers to int64 and floats to float32
        # unless given a dtype (its documented option): the stored dtype of x.
        self.ds = datasets.load_from_disk(str(self.path)).with_format("numpy", dtype=self.dtype)

    def read(self, indices: np.ndarray) -> tuple[Any, Any]:
        got = self.ds[indices]
        return got["x"], got["y"]
