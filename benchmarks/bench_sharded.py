"""What reading a sharded dataset costs beside one file holding the same samples (SPEC §12.5; issue 16).

Workload: 64x64x3 uint8 tiles of the photographs bundled with scikit-learn
and scikit-image (``bench_loaders.photo_tiles``: real, compressible content)
with int64 labels, stored with gzip 4, once as one file and once as shards
of about ``--shard-samples`` samples (the last one short) with their index.
For each shuffle mode (``none``, ``chunk``, ``full``) one epoch of batches of
64 from :class:`h5ml.sampling.Sampler` (the sharded split's shard sizes
given, ``shards_in_flight=2``) is read through ``h5ml.open`` on each form,
every batch checked against the labels it should hold; the two readers are
interleaved (each once per repetition, in a seeded random order) and the
median taken. Printed: samples/s of each, the ratio sharded / one file, and
the shards opened per epoch in each mode, with ``max_open_shards=2`` (the
``chunk`` mode's bound, ``shards_in_flight``: each shard once) in ``none``
and ``chunk`` modes and every shard in ``full`` mode (a global permutation
reads from every shard in every batch). An epoch's time includes opening the
dataset and its shards (each shard checked against the index, §12.5). The machine's load average is
printed beside the numbers: on a shared machine they are noisy, compare the
ratios of one run only. Run::

    python benchmarks/bench_sharded.py            # 20000 tiles in shards of 2000; about a minute
    python benchmarks/bench_sharded.py --smoke    # 600 tiles, for CI; prints JSON like the full run
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

import h5ml
from bench_loaders import photo_tiles  # the same tiles as the loader benchmark
from h5ml.model.shard_files import describe_shard
from h5ml.model.shard_index import ShardIndex, index_fingerprint, write_index
from h5ml.reader import ShardedDataset
from h5ml.sampling import Sampler

__all__ = ["main", "run"]

BATCH = 64
MODES = ("none", "chunk", "full")


def _write(folder: Path, tiles: npt.NDArray[np.uint8], per_shard: int) -> tuple[Path, Path]:
    """One file and a sharded copy of the same samples; returns (file, index)."""
    labels = np.arange(len(tiles), dtype=np.int64)
    whole = h5ml.write(folder / "whole.h5", {"train": {"image": tiles, "label": labels}}, compression="gzip")
    (folder / "ds" / "train").mkdir(parents=True)
    entries, description = [], None
    for position, start in enumerate(range(0, len(tiles), per_shard)):
        relative = f"train/train-{position:05d}.h5"
        stop = start + per_shard
        columns = {"image": tiles[start:stop], "label": labels[start:stop]}
        h5ml.write(folder / "ds" / relative, {"train": columns}, metadata={"name": "tiles"}, compression="gzip")
        description = describe_shard(folder / "ds" / relative)
        entries.append(description.entry(relative))
    assert description is not None
    splits = {"train": description.split_entry(tuple(entries))}
    index = ShardIndex(
        format_version="1.2", metadata=dict(description.card), splits=splits, fingerprint=index_fingerprint(splits)
    )
    return whole, write_index(index, folder / "ds")


def _epoch(path: Path, batches: list[npt.NDArray[np.int64]], max_open: int) -> tuple[float, int]:
    """Seconds to read every batch (checked, the opening of the dataset included), and the shards opened."""
    start = time.perf_counter()
    with h5ml.open(path, max_open_shards=max_open) as ds:
        split = ds["train"]
        for batch in batches:
            got = split.read(batch, ["image", "label"])
            if not np.array_equal(got["label"], batch) or got["image"].shape != (len(batch), 64, 64, 3):
                raise AssertionError(f"{path}: other samples than asked for")
        seconds = time.perf_counter() - start
        return seconds, ds.shard_opens if isinstance(ds, ShardedDataset) else 0


def run(n: int, per_shard: int, repeats: int) -> dict[str, Any]:
    """The figures of the module docstring, as a JSON-ready dict."""
    tiles = photo_tiles(n)
    result: dict[str, Any] = {"samples": n, "shard_samples": per_shard, "repeats": repeats, "modes": {}}
    with tempfile.TemporaryDirectory() as tmp:
        whole, index = _write(Path(tmp), tiles, per_shard)
        with h5ml.open(index) as ds:
            sizes = ds["train"].shard_sizes
            chunk_rows = ds["train"]["image"].chunk_rows
        result["shards"] = len(sizes)
        load = [os.getloadavg()[0]]
        rng = random.Random(0)
        for mode in MODES:
            sampler = Sampler(n, BATCH, shuffle=mode, seed=1, chunk_rows=chunk_rows, shard_sizes=sizes)
            batches = sampler.batches(0)
            times: dict[str, list[float]] = {"file": [], "sharded": []}
            max_open = len(sizes) if mode == "full" else 2  # a global permutation reads every shard in every batch
            opens = 0
            for _ in range(repeats):
                for name in rng.sample(sorted(times), 2):
                    seconds, opened = _epoch(whole if name == "file" else index, batches, max_open)
                    times[name].append(seconds)
                    opens = max(opens, opened)
            rates = {name: n / statistics.median(values) for name, values in times.items()}
            result["modes"][mode] = {
                "file_samples_per_s": round(rates["file"]),
                "sharded_samples_per_s": round(rates["sharded"]),
                "sharded_vs_file": round(rates["sharded"] / rates["file"], 3),
                "max_open_shards": max_open,
                "shard_opens_per_epoch": opens,
            }
        load.append(os.getloadavg()[0])
        result["load_average"] = load
    return result


def main(argv: list[str] | None = None) -> None:
    """Parse the options and print the result as JSON."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=20000)
    parser.add_argument("--shard-samples", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--smoke", action="store_true", help="600 tiles in shards of 100, one repetition")
    args = parser.parse_args(argv)
    if args.smoke:
        args.samples, args.shard_samples, args.repeats = 600, 100, 1
    print(json.dumps(run(args.samples, args.shard_samples, args.repeats), indent=2))


if __name__ == "__main__":
    main()
