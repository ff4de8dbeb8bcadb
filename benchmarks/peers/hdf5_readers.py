"""The HDF5 readers: h5ml, plain h5py, h5torch and the two tutorials' approaches (issue 15, "Peers").

- ``h5ml``: :func:`h5ml.write` (``compression=None``, ``"gzip"`` = gzip level 4
  with shuffle, h5ml's default, or ``"zstd"`` where this h5ml writes it),
  read by ``split.read(indices, features=["x", "y"])``.
- ``h5py``: what a careful h5py user writes: ``create_dataset(data=...)``,
  contiguous when uncompressed (h5py's default), else chunks of whole samples
  of about 1 MiB (``chunks=True`` would cut each tile over many chunks) with
  gzip level 4 and ``shuffle=True`` or zstd through ``hdf5plugin``; ragged
  clips as a ``vlen`` float32 dataset, uncompressed only (a filter on a vlen
  dataset compresses its heap references, not the clips: measured, 486.5 MB
  "gzip" for 486.4 MB of clips);
  read by one fancy index with the indices sorted and made unique (h5py
  refuses unsorted and repeated ones) and the sort undone.
- ``h5torch``: ``h5torch.File.register`` (``N-D`` or ``vlen``; h5torch passes no
  compression to HDF5, so uncompressed only), read by ``h5torch.Dataset[i]``,
  one sample per call, as its DataLoader path does.
- ``tutorial-per-sample`` (the Japanese PyTorch tutorial in shared/seeds): one
  HDF5 dataset per sample (``x/0`` .. ``x/N-1``, gzip as the tutorial writes
  when compressed), read one ``__getitem__`` per sample.
- ``tutorial-keras-seq`` (the French Keras tutorial): ``x_train``/``y_train``
  chunked by 1000 samples, a ``keras.utils.Sequence`` that opens the file and
  reads one batch slice per ``__getitem__``: its own order (batch slices; with
  ``shuffle=True`` Keras only shuffles the order of the slices).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from .base import Reader, Unsupported, require
from .workloads import Workload

__all__ = ["H5MLReader", "H5pyReader", "H5torchReader", "KerasSequenceTutorial", "PerSampleTutorial"]

BATCH = 64


def _unsort(out: Any, order: np.ndarray) -> Any:
    """Put rows read in sorted order back in the asked order (``order`` = argsort of the asked indices)."""
    back = np.empty_like(out)
    back[order] = out
    return back


def _vlen_list(clips: Any) -> list[np.ndarray]:
    return [np.asarray(c) for c in clips]


class H5MLReader(Reader):
    """h5ml's writer and ``Split.read`` (see module)."""

    name = "h5ml"
    module = "h5ml"
    distribution = "h5ml"
    compressions = (None, "gzip", "zstd")

    def build(self, folder: Path, workload: Workload, compression: str | None) -> None:
        import h5ml

        self.path = folder / "data.h5ml"
        try:
            h5ml.write(
                self.path, {"train": {"x": workload.x, "y": workload.y}}, {"name": "bench"}, compression=compression
            )
        except Exception as exc:  # zstd before the writer knows it: reported, not fatal
            if compression == "zstd":
                raise Unsupported(f"not available yet (h5ml.write(compression='zstd'): {exc})") from exc
            raise

    def open(self) -> None:
        import h5ml

        self.ds = h5ml.open(self.path)
        self.split = self.ds["train"]

    def close(self) -> None:
        self.ds.close()

    def read(self, indices: np.ndarray) -> tuple[Any, Any]:
        got = self.split.read(indices, features=["x", "y"])
        return got["x"], got["y"]


class H5pyReader(Reader):
    """Plain h5py with sorted fancy indexing (see module)."""

    name = "h5py"
    module = "h5py"
    distribution = "h5py"
    compressions = (None, "gzip", "zstd")

    def supports(self, workload: Workload, compression: str | None) -> str | None:
        """As :meth:`Reader.supports`; compressed ragged data is refused (see the message)."""
        if workload.ragged and compression is not None:
            # Measured: 3000 clips, vlen + gzip: 486.5 MB for 486.4 MB of samples.
            return "h5py vlen data lives in the global heap, which HDF5 filters do not compress"
        return super().supports(workload, compression)

    def build(self, folder: Path, workload: Workload, compression: str | None) -> None:
        import h5py

        opts: dict[str, Any] = {}
        if compression == "gzip":
            opts = {"compression": "gzip", "compression_opts": 4, "shuffle": True}
        elif compression == "zstd":
            require("hdf5plugin")
            import hdf5plugin

            opts = dict(hdf5plugin.Zstd())
        self.path = folder / "plain.h5"
        self.zstd = compression == "zstd"
        with h5py.File(self.path, "w") as f:
            if isinstance(workload.x, list):
                ds = f.create_dataset("x", (len(workload),), dtype=h5py.vlen_dtype(np.float32))
                for start in range(0, len(workload), 1000):
                    block = np.empty(min(1000, len(workload) - start), dtype=object)
                    block[:] = workload.x[start : start + 1000]
                    ds[start : start + len(block)] = block
            else:
                # Compressed: sample-aligned chunks of about 1 MiB (h5py's chunks=True cuts
                # each 64x64x3 tile over many chunks); uncompressed: h5py's default, contiguous.
                rows = max(1, min(len(workload), (1 << 20) // max(1, workload.x[0].nbytes)))
                chunked = {"chunks": (rows, *workload.x.shape[1:])} if opts else {}
                f.create_dataset("x", data=workload.x, **chunked, **opts)
            f.create_dataset("y", data=workload.y)

    def open(self) -> None:
        import h5py

        if getattr(self, "zstd", False):  # only then: importing hdf5plugin registers a dozen filters process-wide
            import hdf5plugin  # noqa: F401 - registers the zstd filter with HDF5
        self.f = h5py.File(self.path, "r")
        self.x, self.y = self.f["x"], self.f["y"]

    def close(self) -> None:
        self.f.close()

    def read(self, indices: np.ndarray) -> tuple[Any, Any]:
        order = np.argsort(indices, kind="stable")
        ordered = indices[order]
        if len(ordered) and np.all(np.diff(ordered) == 1):  # one run: a slice
            x = self.x[int(ordered[0]) : int(ordered[-1]) + 1]
            y = self.y[int(ordered[0]) : int(ordered[-1]) + 1]
        else:
            unique, inverse = np.unique(ordered, return_inverse=True)  # h5py refuses repeated indices
            x = self.x[unique][inverse]
            y = self.y[unique][inverse]
        x, y = _unsort(x, order), _unsort(y, order)
        return (_vlen_list(x) if x.dtype == object else x), y


class H5torchReader(Reader):
    """h5torch's File and Dataset, one sample per ``__getitem__`` (see module)."""

    name = "h5torch"
    module = "h5torch"
    distribution = "h5torch"

    def build(self, folder: Path, workload: Workload, compression: str | None) -> None:
        import h5torch

        self.path = folder / "h5torch.h5t"
        f = h5torch.File(str(self.path), "w")
        if isinstance(workload.x, list):
            f.register(workload.x, "central", mode="vlen", dtype_save="float32", dtype_load="float32")
        else:
            f.register(workload.x, "central", mode="N-D")
        f.register(workload.y, 0, name="y", mode="N-D")
        f.close()

    def open(self) -> None:
        import h5torch

        self.dataset = h5torch.Dataset(str(self.path))

    def close(self) -> None:
        self.dataset.close()

    def read(self, indices: np.ndarray) -> tuple[Any, Any]:
        samples = [self.dataset[int(i)] for i in indices]
        xs = [s["central"] for s in samples]
        y = np.array([s["0/y"] for s in samples])
        return (xs if xs and xs[0].ndim == 1 and self.dataset.f["central"].attrs["mode"] == "vlen" else np.stack(xs)), y


class PerSampleTutorial(Reader):
    """One HDF5 dataset per sample, read one by one (the PyTorch tutorial in shared/seeds)."""

    name = "tutorial-per-sample"
    module = "h5py"
    distribution = "h5py"
    compressions = (None, "gzip")

    def build(self, folder: Path, workload: Workload, compression: str | None) -> None:
        import h5py

        self.path = folder / "per_sample.h5"
        opts: dict[str, Any] = {"compression": "gzip", "chunks": True} if compression == "gzip" else {}
        with h5py.File(self.path, "w") as f:
            group = f.create_group("x")
            for i in range(len(workload)):
                group.create_dataset(str(i), data=workload.x[i], **opts)
            f.create_dataset("y", data=workload.y)

    def open(self) -> None:
        import h5py

        self.f = h5py.File(self.path, "r")
        self.group = self.f["x"]
        self.labels = self.f["y"][()]

    def close(self) -> None:
        self.f.close()

    def read(self, indices: np.ndarray) -> tuple[Any, Any]:
        xs = [self.group[str(int(i))][()] for i in indices]
        return (xs if xs and xs[0].ndim == 1 else np.stack(xs)), self.labels[indices]


class KerasSequenceTutorial(Reader):
    """``x_train``/``y_train`` read by batch slices in a ``keras.utils.Sequence`` (the Keras tutorial)."""

    name = "tutorial-keras-seq"
    module = "h5py"
    distribution = "h5py"
    own_order = True
    compressions = (None, "gzip")
    ragged = False

    def build(self, folder: Path, workload: Workload, compression: str | None) -> None:
        import h5py

        assert isinstance(workload.x, np.ndarray)
        self.path = folder / "keras_seq.h5"
        self.n = len(workload)
        chunks = (min(1000, self.n), *workload.x.shape[1:])
        opts: dict[str, Any] = {"compression": "gzip"} if compression == "gzip" else {}
        with h5py.File(self.path, "w") as f:
            f.create_dataset("x_train", data=workload.x, chunks=chunks, **opts)
            f.create_dataset("y_train", data=workload.y, chunks=(chunks[0],))

    def __getitem__(self, idx: int) -> tuple[np.ndarray, np.ndarray]:
        import h5py

        start, end = idx * BATCH, min((idx + 1) * BATCH, self.n)
        with h5py.File(self.path, "r") as f:  # the tutorial opens the file in every __getitem__
            return f["x_train"][start:end], f["y_train"][start:end]

    def stream(self, shuffle: bool, seed: int) -> Iterator[tuple[np.ndarray, Any, Any]]:
        batches = np.arange(-(-self.n // BATCH))
        if shuffle:  # what model.fit(sequence, shuffle=True) does: the order of the slices
            np.random.default_rng(seed).shuffle(batches)
        for b in batches:
            x, y = self[int(b)]
            yield np.arange(b * BATCH, b * BATCH + len(y)), x, y
