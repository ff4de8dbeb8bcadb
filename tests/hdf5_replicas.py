"""Small replicas of HDF5 files that public datasets ship, written by us from their published layouts.

Each builder writes the same dataset names, dtypes, per-sample shapes,
attributes, string types and split-across-files arrangement as the
original, with only N small and seeded random content, and returns the
arrays it wrote so that tests compare converted values with the source.
The layouts (as the public code that reads them expects):

- ``catvnoncat``: deeplearning.ai's ``train_catvnoncat.h5`` / ``test_catvnoncat.h5``
  (``train_set_x`` uint8 (N, 64, 64, 3), ``train_set_y`` int64 (N,),
  ``list_classes`` |S7 [b"non-cat", b"cat"]); ``signs`` and ``happy`` are the
  same with ``list_classes`` int64 ``[0..K-1]``.
- ``pcam``: PatchCamelyon, one file per split and side:
  ``camelyonpatch_level_2_split_<split>_x.h5`` (``x`` uint8 (N, 96, 96, 3),
  here 8x8) and ``..._y.h5`` (``y`` uint8 (N, 1, 1, 1)).
- ``modelnet``: PointNet's ``ply_data_train0.h5``... (``data`` float32 (N,
  2048, 3), here 16 points; ``label`` uint8 (N, 1); ``normal``; ``faceId``),
  listed in ``train_files.txt`` as ``data/modelnet40_ply_hdf5_2048/<file>``,
  class names in ``shape_names.txt``.
- ``mnist3d_vectors``: 3D MNIST's ``full_dataset_vectors.h5`` (``X_train``
  float64 (N, 4096), here 64; ``y_train`` int64; ``X_test``, ``y_test``).
- ``usps``: ``usps.h5`` (``/train/data`` float64 (N, 256), ``/train/target``
  int64 (N,), ``/test/...``).
- ``mnist3d_points``: 3D MNIST's ``train_point_clouds.h5`` (groups ``/<i>``
  with ``points`` float64 (n_i, 3), ``normals`` (n_i, 3), ``img`` (30, 30) and
  the attribute ``label``).
- ``ani``: ANI-1's ``ani_gdb_s01.h5`` (``/gdb11_s01/gdb11_s01-<k>/`` with
  ``coordinates`` float32 (C, A, 3), ``energies`` float64 (C,), ``species``
  |S1 (A,), ``smiles`` |S1 (L,)).
- ``matlab``: a MATLAB v7.3 MAT-file (512-byte user block) with ``X``
  (MATLAB 100x20 double, HDF5 (20, 100)), ``y`` (100x1), ``classes`` (a 1x3
  cell of char arrays under ``#refs#``), ``name`` (a char row).
- ``fuel``: Fuel's H5PYDataset (``features`` uint8 (N, 4), ``targets`` uint8
  (N, 1), root attribute ``split``).
- ``onehot``: ``X`` float32 (N, 5), ``Y`` float32 one-hot (N, 3), ``label_names``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import h5py
import numpy as np

__all__ = [
    "FUEL_SPLIT_DTYPE",
    "ani",
    "catvnoncat",
    "fuel",
    "fuel_split_table",
    "matlab",
    "mnist3d_points",
    "mnist3d_vectors",
    "modelnet",
    "onehot",
    "pcam",
    "usps",
]

STR = h5py.string_dtype("utf-8")


def _rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


def catvnoncat(
    folder: Path, names: Any = (b"non-cat", b"cat"), counts: tuple[int, int] = (9, 5), stem: str = "catvnoncat"
) -> dict[str, dict[str, np.ndarray]]:
    """``train_<stem>.h5`` and ``test_<stem>.h5``; ``names`` bytes (|S7) or ints (SIGNS, happy house)."""
    rng = _rng(1)
    out: dict[str, dict[str, np.ndarray]] = {}
    for split, n in zip(("train", "test"), counts, strict=True):
        x = rng.integers(0, 256, (n, 8, 8, 3), dtype=np.uint8)
        y = rng.integers(0, len(names), n).astype(np.int64)
        with h5py.File(folder / f"{split}_{stem}.h5", "w") as f:
            f[f"{split}_set_x"] = x
            f[f"{split}_set_y"] = y
            f["list_classes"] = np.array(names)
        out[split] = {"x": x, "y": y}
    return out


def pcam(folder: Path, counts: dict[str, int] | None = None) -> dict[str, dict[str, np.ndarray]]:
    """PatchCamelyon's six files: ``camelyonpatch_level_2_split_<split>_<x|y>.h5``."""
    rng = _rng(2)
    out = {}
    for split, n in (counts or {"train": 12, "valid": 6, "test": 6}).items():
        x = rng.integers(0, 256, (n, 8, 8, 3), dtype=np.uint8)
        y = rng.integers(0, 2, (n, 1, 1, 1)).astype(np.uint8)
        with h5py.File(folder / f"camelyonpatch_level_2_split_{split}_x.h5", "w") as f:
            f.create_dataset("x", data=x, chunks=(4, 8, 8, 3), compression="gzip")
        with h5py.File(folder / f"camelyonpatch_level_2_split_{split}_y.h5", "w") as f:
            f.create_dataset("y", data=y, chunks=(4, 1, 1, 1))
        out[split] = {"x": x, "y": y}
    return out


SHAPE_NAMES = ["airplane", "bathtub", "bed", "bench"]


def modelnet(folder: Path, shards: dict[str, list[int]] | None = None) -> dict[str, dict[str, np.ndarray]]:
    """``ply_data_<split><k>.h5`` shards, ``<split>_files.txt`` lists (repository-relative lines), ``shape_names.txt``."""
    rng = _rng(3)
    out: dict[str, dict[str, np.ndarray]] = {}
    for split, sizes in (shards or {"train": [5, 4], "test": [3]}).items():
        lines = []
        xs, ys, ns = [], [], []
        for k, n in enumerate(sizes):
            data = rng.standard_normal((n, 16, 3)).astype(np.float32)
            label = rng.integers(0, len(SHAPE_NAMES), (n, 1)).astype(np.uint8)
            normal = rng.standard_normal((n, 16, 3)).astype(np.float32)
            name = f"ply_data_{split}{k}.h5"
            with h5py.File(folder / name, "w") as f:
                f["data"] = data
                f["label"] = label
                f["normal"] = normal
                f["faceId"] = rng.integers(0, 100, (n, 16)).astype(np.int32)
            lines.append(f"data/modelnet40_ply_hdf5_2048/{name}")
            xs.append(data)
            ys.append(label[:, 0])
            ns.append(normal)
        (folder / f"{split}_files.txt").write_text("\n".join(lines) + "\n")
        out[split] = {"data": np.concatenate(xs), "label": np.concatenate(ys), "normal": np.concatenate(ns)}
    (folder / "shape_names.txt").write_text("\n".join(SHAPE_NAMES) + "\n")
    return out


def mnist3d_vectors(path: Path) -> dict[str, dict[str, np.ndarray]]:
    """``full_dataset_vectors.h5``: ``X_train``, ``y_train``, ``X_test``, ``y_test`` at the root."""
    rng = _rng(4)
    out = {}
    with h5py.File(path, "w") as f:
        for split, n in (("train", 10), ("test", 4)):
            x, y = rng.random((n, 64)), rng.integers(0, 10, n).astype(np.int64)
            f[f"X_{split}"], f[f"y_{split}"] = x, y
            out[split] = {"X": x, "y": y}
    return out


def usps(path: Path) -> dict[str, dict[str, np.ndarray]]:
    """``usps.h5``: ``/train/data``, ``/train/target``, ``/test/data``, ``/test/target``."""
    rng = _rng(5)
    out = {}
    with h5py.File(path, "w") as f:
        for split, n in (("train", 11), ("test", 5)):
            data, target = rng.random((n, 16)), rng.integers(0, 10, n).astype(np.int64)
            g = f.create_group(split)
            g.create_dataset("data", data=data, compression="gzip")
            g.create_dataset("target", data=target, compression="gzip")
            out[split] = {"data": data, "target": target}
    return out


def mnist3d_points(path: Path, n: int = 7) -> list[dict[str, Any]]:
    """``train_point_clouds.h5``: one group per sample ``/<i>`` with ``points``, ``normals``, ``img`` and ``@label``."""
    rng = _rng(6)
    samples = []
    with h5py.File(path, "w") as f:
        for i in range(n):
            k = int(rng.integers(5, 12))
            s = {
                "points": rng.random((k, 3)),
                "normals": rng.random((k, 3)),
                "img": rng.random((30, 30)),
                "label": int(rng.integers(0, 10)),
            }
            g = f.create_group(str(i))
            for key in ("points", "normals", "img"):
                g[key] = s[key]
            g.attrs["label"] = s["label"]
            samples.append(s)
    return samples


def ani(path: Path) -> dict[str, dict[str, Any]]:
    """``ani_gdb_s01.h5``: ``/gdb11_s01/gdb11_s01-<k>/{coordinates, energies, species, smiles}``."""
    rng = _rng(7)
    records = {}
    with h5py.File(path, "w") as f:
        for group in ("gdb11_s01", "gdb11_s02"):
            for k in range(3):
                atoms, conformers = int(rng.integers(3, 6)), int(rng.integers(2, 5))
                r = {
                    "coordinates": rng.standard_normal((conformers, atoms, 3)).astype(np.float32),
                    "energies": rng.standard_normal(conformers),
                    "species": np.array([b"C", b"H", b"O", b"N", b"H", b"H"][:atoms], dtype="S1"),
                    "smiles": np.array(list(b"CCO"), dtype=np.uint8).view("S1"),
                }
                g = f.create_group(f"{group}/{group}-{k}")
                for key, value in r.items():
                    g[key] = value
                records[f"{group}/{group}-{k}"] = r
    return records


def _matlab_char(f: h5py.File, name: str, text: str) -> h5py.Dataset:
    codes = np.frombuffer(text.encode("utf-16-le"), dtype="<u2").reshape(-1, 1)  # MATLAB 1xL -> HDF5 (L, 1)
    ds = f.create_dataset(name, data=codes)
    ds.attrs["MATLAB_class"] = np.bytes_("char")
    ds.attrs["MATLAB_int_decode"] = np.int32(2)
    return ds


def matlab(path: Path, n: int = 10, classes: tuple[str, ...] = ("cat", "dog", "bird")) -> dict[str, Any]:
    """A MATLAB v7.3 MAT-file: ``X`` (MATLAB n x 6 double), ``y`` (n x 1 double, 0-based), ``classes`` (1x3 cell), ``name``."""
    rng = _rng(8)
    x = rng.random((n, 6))
    y = rng.integers(0, len(classes), (n, 1)).astype(np.float64)
    with h5py.File(path, "w", userblock_size=512) as f:
        dx = f.create_dataset("X", data=x.T)  # MATLAB n x 6 is HDF5 (6, n)
        dx.attrs["MATLAB_class"] = np.bytes_("double")
        dy = f.create_dataset("y", data=y.T)
        dy.attrs["MATLAB_class"] = np.bytes_("double")
        refs = f.create_group("#refs#")
        cell = f.create_dataset("classes", (len(classes), 1), dtype=h5py.ref_dtype)  # MATLAB 1x3 -> HDF5 (3, 1)
        for i, name in enumerate(classes):
            cell[i, 0] = _matlab_char(refs, chr(ord("a") + i), name).ref
        cell.attrs["MATLAB_class"] = np.bytes_("cell")
        _matlab_char(f, "name", "toy")
    with path.open("r+b") as raw:
        raw.write(b"MATLAB 7.3 MAT-file, Platform: GLNXA64, Created on: Tue Dec  1 00:00:00 2026 HDF5 schema 1.00 .")
    return {"X": x, "y": y[:, 0].astype(np.int64), "classes": list(classes)}


#: The columns of Fuel's root attribute ``split`` (``H5PYDataset.create_split_array``).
FUEL_SPLIT_DTYPE = np.dtype(
    [
        ("split", "S10"),
        ("source", "S10"),
        ("start", "<i8"),
        ("stop", "<i8"),
        ("indices", h5py.ref_dtype),
        ("available", "?"),
        ("comment", "S1"),
    ]
)


def fuel_split_table(rows: list[tuple[str, str, int, int]], indices: Any = None) -> np.ndarray:
    """Fuel's ``split`` attribute for ``(split, source, start, stop)`` rows; ``indices`` a reference for every row."""
    ref = h5py.Reference() if indices is None else indices
    table = [(s.encode(), src.encode(), a, b, ref, True, b".") for s, src, a, b in rows]
    return np.array(table, dtype=FUEL_SPLIT_DTYPE)


def fuel(path: Path, counts: tuple[int, int] = (8, 4)) -> dict[str, dict[str, np.ndarray]]:
    """Fuel's H5PYDataset: ``features`` and ``targets`` over all splits, the root attribute ``split``."""
    rng = _rng(9)
    n = sum(counts)
    features = rng.integers(0, 256, (n, 4), dtype=np.uint8)
    targets = rng.integers(0, 3, (n, 1)).astype(np.uint8)
    edges = {"train": (0, counts[0]), "test": (counts[0], n)}
    rows = [(split, source, a, b) for split, (a, b) in edges.items() for source in ("features", "targets")]
    with h5py.File(path, "w") as f:
        f["features"] = features
        f["targets"] = targets
        f.attrs["split"] = fuel_split_table(rows)
    return {s: {"features": features[a:b], "targets": targets[a:b, 0]} for s, (a, b) in edges.items()}


def onehot(path: Path, n: int = 9) -> dict[str, Any]:
    """``X`` float32 (n, 5), ``Y`` one-hot float32 (n, 3), ``label_names`` (3,) strings; the file name names no split."""
    rng = _rng(10)
    codes = rng.integers(0, 3, n)
    with h5py.File(path, "w") as f:
        f["X"] = rng.random((n, 5)).astype(np.float32)
        f["Y"] = np.eye(3, dtype=np.float32)[codes]
        f.create_dataset("label_names", data=["rock", "paper", "scissors"], dtype=STR)
        x = f["X"][()]
    return {"X": x, "codes": codes, "names": ["rock", "paper", "scissors"]}
