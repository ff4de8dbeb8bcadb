"""Ragged audio read throughput: h5ml beside a numpy memmap, plain h5py and Hugging Face datasets (issue 15).

Workload: 3000 float32 speech clips of 16000-64000 samples (about 480 MB),
real speech made by espeak-ng (a dozen sentences, 22050 Hz, scaled to
[-1, 1]) and cut, seeded, into clips of varied lengths from the utterances
laid end to end. Each reader gets the same arrays in its own format,
uncompressed:

- ``h5ml``: ``h5ml.write`` of the clips (a ragged feature, §6.3), read with
  ``split.read(indices)``: one read per contiguous run, read-only views out;
- ``memmap copy``: ``values.npy`` + ``offsets.npy`` opened with
  ``numpy.load(mmap_mode="r")``, each sample copied out
  (``numpy.array(values[a:b])``): the bound the issue's ratios are taken to;
- ``memmap views``: the same, each sample a view of the map (no copy, the
  pages touched only when used: lower than any reader that reads);
- ``h5py``: the h5ml file's ``values`` and ``offsets`` with plain h5py, what
  a careful user writes: the offsets read once, one ``values[a:b]`` per sample;
- ``h5ml zero_copy``: the same h5ml file opened with
  ``h5ml.open(path, zero_copy=True)``: the clips are read-only views straight
  into the file's memory map (no copy at all, as Arrow's), where the values
  are native, aligned and contiguous in the file (else copies). The default
  (``h5ml``) copies each span once, because a view of the map outlives the
  file-size check that keeps a file truncated while open from crashing the
  process (§10.3): ``zero_copy=True`` is that trade, opted into;
- ``hf datasets``: ``Dataset.from_dict`` of a ``Sequence(Value("float32"))``
  column, ``save_to_disk``, ``load_from_disk(...).with_format("numpy")`` (its
  documented zero-copy numpy path), batches ``ds[indices]``.

Orders, batches of 64: ``sequential`` (runs of consecutive clips),
``chunk`` (h5ml's ``"chunk"`` shuffle, the order every adapter gives:
``SplitSource.sampler``) and ``full`` (a seeded permutation). Two uses of
each batch: ``raw`` (the reader's batch as returned) and ``padded`` (the
batch then padded into one array with :func:`h5ml.sampling.pad_ragged`, as
a collate does: every value touched once, which a lazy view defers).

Repetitions are interleaved: in each, every order and use runs every reader
once, readers in a seeded random order; the figures are medians of samples/s
and ratios to ``memmap copy`` of the same run. Every batch is checked against
the source after its timing (length, dtype, and the values of two of its
clips). The 1-minute load average is printed before and after: this machine's
cores are shared, so treat ratios as noisy. Run::

    python benchmarks/bench_ragged.py            # 3000 clips, about 480 MB per format
    python benchmarks/bench_ragged.py --smoke    # tiny, for CI: it runs, it measures nothing
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import shutil
import subprocess
import tempfile
import time
import wave
from collections.abc import Callable
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import numpy.typing as npt

import h5ml
from h5ml.reader.source import SplitSource
from h5ml.sampling import pad_ragged

BATCH = 64
SENTENCES = (
    "The quick brown fox jumps over the lazy dog near the river bank.",
    "A versioned format for machine learning data stores every sample once.",
    "Speech clips of different lengths are kept as values sliced by offsets.",
    "Please read the batch again and compare every value with the source.",
    "Twelve thousand samples per second is not enough for a hungry trainer.",
    "The memory map of the file is read without a call into the library.",
    "Hugging Face datasets returns views into its Arrow buffers.",
    "Padding copies each clip once into the batch tensor.",
    "Chunks of one mebibyte fit the default cache of every reader.",
    "She sells sea shells by the sea shore on a windy afternoon.",
    "Numbers, dates and names: seventeen, March the third, and Alice.",
    "Shuffled reads ask for clips in an order nobody can predict.",
)

Reader = Callable[[npt.NDArray[np.int64]], Any]


def speech_pool(folder: Path, count: int) -> npt.NDArray[np.float32]:
    """Real speech: ``count`` sentences spoken by espeak-ng, float32 in [-1, 1], laid end to end."""
    if shutil.which("espeak-ng") is None:
        raise SystemExit("bench_ragged: espeak-ng is not installed (Debian package espeak-ng); it makes the speech")
    pieces = []
    for i, text in enumerate(SENTENCES[:count]):
        wav = folder / f"s{i}.wav"
        subprocess.run(["espeak-ng", "-w", str(wav), text], check=True, capture_output=True)
        with wave.open(str(wav), "rb") as f:
            raw = np.frombuffer(f.readframes(f.getnframes()), dtype="<i2")
        pieces.append(raw.astype(np.float32) / 32768.0)
    return np.concatenate(pieces)


def make_clips(
    pool: npt.NDArray[np.float32], n: int, low: int, high: int, seed: int
) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.int64]]:
    """``n`` clips of ``low``..``high`` samples cut from the speech repeated end to end: (values, offsets (n + 1,))."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(low, high + 1, size=n)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    total = int(offsets[-1])
    starts = rng.integers(0, pool.shape[0], size=n)
    reps = -(-(high + pool.shape[0]) // pool.shape[0])
    loop = np.tile(pool, reps)
    values = np.empty(total, dtype=np.float32)
    for i in range(n):
        a, b = int(offsets[i]), int(offsets[i + 1])
        values[a:b] = loop[int(starts[i]) : int(starts[i]) + (b - a)]
    return values, offsets


def build(folder: Path, values: npt.NDArray[np.float32], offsets: npt.NDArray[np.int64]) -> dict[str, Path]:
    """Write the clips in every reader's format; return their paths."""
    import pyarrow as pa
    from datasets import Dataset, Features, Sequence, Value

    clips = [values[a:b] for a, b in itertools.pairwise(offsets.tolist())]
    paths = {"h5": folder / "audio.h5", "values": folder / "values.npy", "offsets": folder / "offsets.npy"}
    h5ml.write(paths["h5"], {"train": {"audio": clips}}, metadata={"name": "bench-ragged"})
    np.save(paths["values"], values)
    np.save(paths["offsets"], offsets)
    column = pa.ListArray.from_arrays(pa.array(offsets.astype(np.int32)), pa.array(values))
    features = Features({"audio": Sequence(Value("float32"))})
    paths["hf"] = folder / "hf"
    Dataset.from_dict({"audio": column}, features=features).save_to_disk(str(paths["hf"]))
    return paths


def readers(paths: dict[str, Path], stack: list[Any]) -> dict[str, Reader]:
    """Each reader as ``indices -> list (or object array) of clips``; what they opened is put in ``stack``."""
    from datasets import load_from_disk

    ds = h5ml.open(paths["h5"])
    stack.append(ds)
    split = ds["train"]
    mm_values = np.load(paths["values"], mmap_mode="r")
    mm_offsets = np.load(paths["offsets"])
    f = h5py.File(paths["h5"], "r")
    stack.append(f)
    h5_values = f["train/audio/values"]
    h5_offsets = f["train/audio/offsets"][...]
    hf = load_from_disk(str(paths["hf"])).with_format("numpy")
    zero = h5ml.open(paths["h5"], zero_copy=True)
    stack.append(zero)
    zero_split = zero["train"]

    def read_h5ml(idx: npt.NDArray[np.int64]) -> Any:
        return split.read(idx, features=["audio"])["audio"]

    def read_memmap_copy(idx: npt.NDArray[np.int64]) -> Any:
        return [np.array(mm_values[mm_offsets[i] : mm_offsets[i + 1]]) for i in idx.tolist()]

    def read_memmap_views(idx: npt.NDArray[np.int64]) -> Any:
        return [mm_values[mm_offsets[i] : mm_offsets[i + 1]] for i in idx.tolist()]

    def read_h5py(idx: npt.NDArray[np.int64]) -> Any:
        return [h5_values[h5_offsets[i] : h5_offsets[i + 1]] for i in idx.tolist()]

    def read_hf(idx: npt.NDArray[np.int64]) -> Any:
        return hf[idx.tolist()]["audio"]

    def read_zero_copy(idx: npt.NDArray[np.int64]) -> Any:
        return zero_split.read(idx, features=["audio"])["audio"]

    return {
        "h5ml": read_h5ml,
        "memmap copy": read_memmap_copy,
        "memmap views": read_memmap_views,
        "h5py": read_h5py,
        "hf datasets": read_hf,
        "h5ml zero_copy": read_zero_copy,
    }


def check(
    name: str, batch: Any, idx: npt.NDArray[np.int64], values: npt.NDArray[np.float32], offsets: npt.NDArray[np.int64]
) -> None:
    """Refuse a wrong batch: its length, the dtype, and the values of its first and middle clips."""
    if len(batch) != len(idx):
        raise AssertionError(f"{name}: a batch of {len(idx)} clips gave {len(batch)}")
    for k in {0, len(idx) // 2}:
        row = int(idx[k])
        got = np.asarray(batch[k])
        want = values[int(offsets[row]) : int(offsets[row + 1])]
        if got.dtype != np.float32 or not np.array_equal(got, want):
            raise AssertionError(f"{name}: clip {row} differs from the source ({got.dtype}, {got.shape})")


def orders(path: Path, n: int, seed: int, batches: int) -> dict[str, list[npt.NDArray[np.int64]]]:
    """The first ``batches`` batches of each order: sequential, h5ml's ``chunk`` shuffle, a full permutation."""
    perm = np.random.default_rng(seed).permutation(n).astype(np.int64)
    chunk = SplitSource(path, "train").sampler(BATCH, shuffle="chunk", seed=seed).batches(0)
    return {
        "sequential": [np.arange(i, min(i + BATCH, n), dtype=np.int64) for i in range(0, n, BATCH)][:batches],
        "chunk": [np.asarray(b, dtype=np.int64) for b in chunk][:batches],
        "full": [perm[i : i + BATCH] for i in range(0, n, BATCH)][:batches],
    }


def run(n: int, low: int, high: int, reps: int, batches: int, seed: int) -> dict[str, Any]:
    """Build the files, run every reader in every order and use, interleaved; return medians and ratios."""
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        pool = speech_pool(folder, len(SENTENCES))
        values, offsets = make_clips(pool, n, low, high, seed)
        paths = build(folder, values, offsets)
        batch_sets = orders(paths["h5"], n, seed, batches)
        per_chunk = SplitSource(paths["h5"], "train").chunk_rows()
        stack: list[Any] = []
        try:
            fns = readers(paths, stack)
            rates: dict[str, dict[str, list[float]]] = {}
            rng = np.random.default_rng(seed)
            for name, fn in fns.items():  # one untimed batch each: files opened, offsets and maps made
                check(name, fn(batch_sets["full"][0]), batch_sets["full"][0], values, offsets)
            for _ in range(reps):
                for order, todo in batch_sets.items():
                    for use in ("raw", "padded"):
                        cell = rates.setdefault(f"{order} {use}", {})
                        for name in rng.permutation(list(fns)).tolist():
                            cell.setdefault(name, []).append(_measure(name, fns[name], todo, use, values, offsets))
        finally:
            for opened in reversed(stack):
                opened.close()
    medians = {cell: {name: float(np.median(row[name])) for name in fns} for cell, row in rates.items()}
    return {
        "workload": {
            "clips": n,
            "samples_per_clip": [low, high],
            "values_mb": round(values.nbytes / 1e6, 1),
            "dtype": "float32",
            "batch": BATCH,
            "batches_per_pass": batches,
            "repetitions": reps,
            "chunk_mode_samples_per_chunk": per_chunk,
            "speech": f"espeak-ng, {len(SENTENCES)} sentences, {pool.shape[0]} samples at 22050 Hz",
        },
        "load_average_before_after": [round(load_before, 2), round(os.getloadavg()[0], 2)],
        "versions": _versions(),
        "samples_per_s": {cell: {k: round(v) for k, v in row.items()} for cell, row in medians.items()},
        "ratio_to_memmap_copy": {
            cell: {k: round(v / row["memmap copy"], 2) for k, v in row.items()} for cell, row in medians.items()
        },
        "h5ml_over_hf_datasets": {cell: round(row["h5ml"] / row["hf datasets"], 2) for cell, row in medians.items()},
        "h5ml_zero_copy_over_hf_datasets": {
            cell: round(row["h5ml zero_copy"] / row["hf datasets"], 2) for cell, row in medians.items()
        },
    }


def _measure(
    name: str,
    fn: Reader,
    todo: list[npt.NDArray[np.int64]],
    use: str,
    values: npt.NDArray[np.float32],
    offsets: npt.NDArray[np.int64],
) -> float:
    """Samples/s of ``fn`` over ``todo`` (the reads, and the padding when ``use`` is ``padded``); checks every batch."""
    spent, done = 0.0, 0
    for idx in todo:
        start = time.perf_counter()
        batch = fn(idx)
        if use == "padded":
            padded, _, _ = pad_ragged(batch)
        spent += time.perf_counter() - start
        done += len(idx)
        check(name, batch, idx, values, offsets)
        if use == "padded" and padded.shape[0] != len(idx):
            raise AssertionError(f"{name}: padded batch of {padded.shape[0]} rows for {len(idx)} clips")
    return done / spent


def _versions() -> dict[str, str]:
    import datasets
    import pyarrow

    return {
        "h5ml": h5ml.__version__,
        "h5py": h5py.version.version,
        "hdf5": h5py.version.hdf5_version,
        "numpy": np.__version__,
        "datasets": datasets.__version__,
        "pyarrow": pyarrow.__version__,
    }


def main() -> None:
    """Parse the options, run, print JSON."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clips", type=int, default=3000)
    parser.add_argument("--reps", type=int, default=7, help="interleaved repetitions (medians are taken)")
    parser.add_argument("--batches", type=int, default=30, help="batches of each order per reader and repetition")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--smoke", action="store_true", help="tiny sizes: checks the benchmark runs, measures nothing")
    args = parser.parse_args()
    if args.smoke:
        results = run(160, 1600, 6400, 1, 2, args.seed)
    else:
        results = run(args.clips, 16000, 64000, args.reps, args.batches, args.seed)
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
