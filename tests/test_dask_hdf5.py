"""Tests of ``h5ml convert A.h5 B.h5 ... OUTDIR --dask`` (h5ml.ingest.dask.hdf5): HDF5 files to shards on Dask (§12.4).

Real HDF5 files (the layout of the French h5py tutorial in ../shared/seeds:
``x_train``, ``y_train``, ``x_valid``, ``y_valid`` in each file, two files
joined; ModelNet's shards listed in text files), converted on a real
``LocalCluster`` (worker processes, one thread each, no dashboard, closed
after) and compared with the one-process conversions (one file, and the
sharded one of ``--samples-per-shard``): the same samples, the same shard and
index fingerprints with one worker and with two. The refusals are those of
the one-process conversion, word for word; failures are real (a compressed
chunk overwritten, a file a worker does not see as the client did).
"""

from __future__ import annotations

import os
from pathlib import Path

import h5py
import numpy as np
import pytest
from distributed import Client

import h5ml.dask
import hdf5_replicas as replicas
import test_dask
from _files import chunk_spans, run_cli
from h5ml.errors import IngestError, ParameterError
from h5ml.ingest.dask.hdf5 import SourceStamp
from h5ml.model.shard_index import load_index
from test_dask import _assert_same, _cluster, _read, _read_sharded, _shard_names, _without_sizes
from test_ingest_hdf5 import _japanese_layout

#: test_dask's time limit (autouse): a hung cluster fails the test instead of the CI job.
time_limit = test_dask.time_limit

#: Rows of (train, valid) of the tutorial's two files: 13 + 9 train rows, so shard 3 of 4 rows straddles them.
ROWS = ((13, 5), (9, 4))


#: test_dask's module fixture: a real cluster of 2 worker processes, one thread each, no dashboard; this
#: module gets its own, closed after the module.
client = test_dask.client


def _tutorial(folder: Path, shift: int = 0) -> list[Path]:
    """Two files as the French tutorial writes them: 64x64 RGB tiles of a photograph (gzip, chunks of 4 rows),
    int32 labels, the attributes ``description`` and ``nb_classes``; ``shift`` moves the tiles (other values)."""
    from sklearn.datasets import load_sample_images

    photo = load_sample_images().images[0]
    folder.mkdir(parents=True, exist_ok=True)
    paths, tile = [], shift
    for k, (train, valid) in enumerate(ROWS):
        arrays = {}
        for split, n in (("train", train), ("valid", valid)):
            tiles = [
                photo[8 * (tile + i) : 8 * (tile + i) + 64, 5 * (tile + i) : 5 * (tile + i) + 64] for i in range(n)
            ]
            tile += n
            arrays[f"x_{split}"] = np.stack(tiles)
            arrays[f"y_{split}"] = ((np.arange(n) + k + shift) % 10).astype(np.int32)
        path = folder / f"dataset{k}.h5"
        temporary = folder / f".{path.name}.new"
        with h5py.File(temporary, "w") as f:
            for name, value in arrays.items():
                chunks = (4, 64, 64, 3) if name.startswith("x") else None
                f.create_dataset(name, data=value, chunks=chunks, compression="gzip" if chunks else None)
            f.attrs["description"] = "Jeu de données de démonstration pour Keras"
            f.attrs["nb_classes"] = 10
        os.replace(temporary, path)  # a new file at the path (another inode), as a download replaces one
        paths.append(path)
    return paths


def _one_process(sources: list[str], out: Path, *args: str) -> None:
    code, _, err = run_cli("convert", *sources, str(out), *args, "--quiet")
    assert code == 0, err


def test_hdf5_files_on_dask_equal_the_one_process_sharded_conversion(
    client: Client, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """§12.4: partition k = rows k*N .. (k+1)*N - 1 of the split across the files, as one process shards them:
    the same samples, shard fingerprints and index fingerprint with 2 workers and with 1, from relative paths
    given in a folder other than the workers' (whose own folder holds other files of the same names)."""
    data = tmp_path / "data"
    sources = [p.name for p in _tutorial(data)]
    decoys = tmp_path / "workers"
    _tutorial(decoys, shift=3)  # the same names, other values: what a worker would read from its own folder
    monkeypatch.chdir(decoys)
    cluster, single = _cluster(1)  # its worker process starts in `decoys`
    try:
        monkeypatch.chdir(data)
        _one_process(sources, tmp_path / "single.h5")
        _one_process(sources, tmp_path / "one", "--samples-per-shard", "4")
        code, out, err = run_cli(
            "convert", *sources, str(tmp_path / "two"), "--dask", client.scheduler.address, "--samples-per-shard", "4"
        )
        assert code == 0 and "index.json" in out, err
        report = h5ml.dask.convert_on_dask("hdf5", sources, tmp_path / "w1", client=single, samples_per_shard=4)
    finally:
        single.close()
        cluster.close()
    assert report.samples == {"train": 22, "validation": 9}
    one, two, w1 = (load_index(tmp_path / name)[0] for name in ("one", "two", "w1"))
    assert one.fingerprint == two.fingerprint == w1.fingerprint
    assert _without_sizes(two) == _without_sizes(one) == _without_sizes(w1)
    assert (
        two.metadata == {**one.metadata, "name": "two"} and one.metadata["source"] == '["dataset0.h5", "dataset1.h5"]'
    )
    assert [s.num_samples for s in two.splits["train"].shards] == [4, 4, 4, 4, 4, 2]
    assert [s.num_samples for s in two.splits["validation"].shards] == [4, 4, 1]
    assert _shard_names(tmp_path / "two") == _shard_names(tmp_path / "one")
    want = _read(tmp_path / "single.h5")
    for name in ("one", "two", "w1"):
        _assert_same(_read_sharded(tmp_path / name), want)
    with h5py.File(data / "dataset0.h5") as first, h5py.File(data / "dataset1.h5") as second:
        straddling = _read(tmp_path / "two" / "train" / "train-00003.h5")["train"]["x"]  # rows 12-15 of the split
        np.testing.assert_array_equal(
            np.stack(straddling), np.concatenate([first["x_train"][12:], second["x_train"][:3]])
        )
    code, text, err = run_cli("validate", "--strict", "--deep", str(tmp_path / "two"))
    assert code == 0, text + err


def test_shard_lists_records_and_a_plan_file_on_dask(
    client: Client, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ModelNet's shards listed in .txt files (3 files, class names from shape_names.txt), the plan written with
    --plan -o and passed back with --plan-file (no SOURCES), and one group per sample (ragged waves, record ids,
    gzip): the shards of the one-process sharded conversion."""
    replicas.modelnet(tmp_path)
    _japanese_layout(tmp_path / "waves.hdf5", {"train": 12, "test": 5})
    monkeypatch.chdir(tmp_path)
    lists = ["train_files.txt", "test_files.txt"]
    address = client.scheduler.address
    assert run_cli("convert", *lists, "--plan", "-o", "plan.json")[0] == 0
    cases = [
        (lists, "lists", ("--samples-per-shard", "2")),
        (["--plan-file", "plan.json"], "lists", ("--samples-per-shard", "2")),
        (["waves.hdf5"], "waves", ("--samples-per-shard", "5", "--compression", "gzip")),
    ]
    for number, (sources, name, args) in enumerate(cases):
        if not (tmp_path / f"one-{name}").exists():
            _one_process(sources, tmp_path / f"one-{name}", *args)
        code, _, err = run_cli("convert", *sources, str(tmp_path / f"dask{number}"), "--dask", address, *args)
        assert code == 0, err
        want, got = load_index(tmp_path / f"one-{name}")[0], load_index(tmp_path / f"dask{number}")[0]
        assert got.fingerprint == want.fingerprint and _without_sizes(got) == _without_sizes(want), number
        _assert_same(_read_sharded(tmp_path / f"dask{number}"), _read_sharded(tmp_path / f"one-{name}"))
    lists_index, waves_index = load_index(tmp_path / "dask0")[0], load_index(tmp_path / "dask2")[0]
    assert lists_index.splits["train"].features["label"].class_names == tuple(replicas.SHAPE_NAMES)
    assert [s.num_samples for s in lists_index.splits["train"].shards] == [2, 2, 2, 2, 1]
    assert waves_index.splits["train"].features["data"].encoding == "ragged"
    assert [s.num_samples for s in waves_index.splits["train"].shards] == [5, 5, 2]
    ids = _read_sharded(tmp_path / "dask2")["train"]["id"]
    assert ids == [str(i) for i in range(12)]  # natural order of the record ids (2 before 10), across shards


def test_a_long_lived_worker_reads_a_replaced_file_anew(client: Client, tmp_path: Path) -> None:
    """The same cluster converts files, then files replaced at the same paths: the second dataset holds the new
    values (no handle or cached block of the first job is reused)."""
    sources = [str(p) for p in _tutorial(tmp_path / "data")]
    h5ml.dask.convert_on_dask("hdf5", sources, tmp_path / "before", client=client, samples_per_shard=8)
    _tutorial(tmp_path / "data", shift=5)
    h5ml.dask.convert_on_dask("hdf5", sources, tmp_path / "after", client=client, samples_per_shard=8)
    _one_process(sources, tmp_path / "single.h5")
    _assert_same(_read_sharded(tmp_path / "after"), _read(tmp_path / "single.h5"))
    assert load_index(tmp_path / "after")[0].fingerprint != load_index(tmp_path / "before")[0].fingerprint


def test_refusals_on_dask_are_those_of_one_process(client: Client, tmp_path: Path) -> None:
    """Files that disagree (x and y files of other lengths) and a plan with decisions to make (two splits giving
        code 0 two meanings) stop before any task, with the one-process message; --dask options refused in words, and
    allow_external=True (Python only) in Python's."""
    replicas.pcam(tmp_path, {"train": 8})
    with h5py.File(tmp_path / "camelyonpatch_level_2_split_train_y.h5", "w") as f:
        f["y"] = np.zeros((7, 1, 1, 1), np.uint8)
    pcam = [str(tmp_path / f"camelyonpatch_level_2_split_train_{s}.h5") for s in ("x", "y")]
    replicas.catvnoncat(tmp_path)
    with h5py.File(tmp_path / "test_catvnoncat.h5", "a") as f:
        del f["list_classes"]
        f["list_classes"] = np.array([b"cat", b"non-cat"])
    cats = [str(tmp_path / "train_catvnoncat.h5"), str(tmp_path / "test_catvnoncat.h5")]
    address = client.scheduler.address
    for sources, words in [
        (pcam, "_train_x.h5 has 8 samples but"),
        (cats, "has class_names ['non-cat', 'cat'] in split 'train' but ['cat', 'non-cat'] in split 'test'"),
    ]:
        code, _, alone = run_cli("convert", *sources, str(tmp_path / "out"), "--samples-per-shard", "4")
        assert code == 2 and words in alone, alone
        code, _, err = run_cli(
            "convert", *sources, str(tmp_path / "out"), "--dask", address, "--samples-per-shard", "4"
        )
        assert code == 2 and err == alone and "Traceback" not in err, err
    files = [str(p) for p in _tutorial(tmp_path / "data")]
    for args, message in [
        (("--shuffle",), "shuffle on write (--shuffle, --seed) is not done on Dask"),
        (("--on-error", "skip"), "--on-error skip is not done on Dask"),
        (("--workers", "2", "--processes"), "--processes does not apply with --dask ...: the Dask workers are the"),
        (("--shard-size", "1MiB"), "--shard-size ... does not apply with --dask ..."),
    ]:
        code, _, err = run_cli("convert", *files, str(tmp_path / "out"), "--dask", address, *args)
        assert code == 2 and message in err and "Traceback" not in err, (args, err)
    with pytest.raises(
        ParameterError, match=r"allow_external=True is not done on Dask: .* \(parameter allow_external\)"
    ):
        h5ml.dask.convert_on_dask("hdf5", files, tmp_path / "out", client=client, allow_external=True)
    assert not (tmp_path / "out").exists()
    # A source inside the output folder would be replaced by a shard (--overwrite or not): refused with the
    # one-process message, and the source keeps its bytes.
    _one_process(files, tmp_path / "held", "--samples-per-shard", "4")
    inside = [tmp_path / "held" / "train" / Path(source).name for source in files]
    for path, source in zip(inside, files, strict=True):
        path.write_bytes(Path(source).read_bytes())
    before = [path.read_bytes() for path in inside]
    for extra in ((), ("--dask", address)):
        code, _, err = run_cli(
            "convert", *map(str, inside), str(tmp_path / "held"), "--samples-per-shard", "4", "--overwrite", *extra
        )
        assert code == 2 and "the output folder holds the source" in err and "Traceback" not in err, (extra, err)
    assert [path.read_bytes() for path in inside] == before


def test_a_chunk_that_does_not_read_names_partition_file_and_path(client: Client, tmp_path: Path) -> None:
    """A compressed chunk of the second file overwritten (its metadata intact, so the plan is made): the first
    partition reading it fails on its worker; the error names it, the file and the HDF5 path; no index is left."""
    sources = [str(p) for p in _tutorial(tmp_path / "data")]
    offset, size = chunk_spans(sources[1], "/x_train")[0]
    with open(sources[1], "r+b") as f:
        f.seek(offset)
        f.write(b"\0" * size)
    code, _, alone = run_cli("convert", *sources, str(tmp_path / "one"), "--samples-per-shard", "4")
    assert code == 2 and f"{sources[1]}:/x_train: rows 0:" in alone, alone
    code, _, err = run_cli(
        "convert", *sources, str(tmp_path / "out"), "--dask", client.scheduler.address, "--samples-per-shard", "4"
    )
    assert code == 2 and "Traceback" not in err, err
    assert "partition 3 of split 'train' (shard train/train-00003.h5) failed" in err  # rows 12-15: file 2's first
    assert f"{sources[1]}:/x_train: rows 0:" in err and "cannot be read" in err and "fix the cause and run again" in err
    assert not (tmp_path / "out").exists() and not (tmp_path / "one").exists()


def test_a_worker_that_does_not_see_the_clients_file_refuses_it(client: Client, tmp_path: Path) -> None:
    """SourceStamp.check on a real worker: the file the client stamped is accepted; another file at the path (other
    size and time), or no file, is refused, naming the file and the worker's host."""
    path = tmp_path / "data" / "dataset0.h5"
    _tutorial(tmp_path / "data")
    stamp = SourceStamp.of(str(path))
    assert stamp.path == str(path) and stamp.size == path.stat().st_size
    client.submit(stamp.check, pure=False).result()  # the same file: accepted
    with h5py.File(path, "a") as f:
        f["extra"] = np.arange(1000)
    with pytest.raises(IngestError, match=r"dataset0\.h5: the Dask worker on host .* sees \d+ bytes modified .*"
                       r"where the client planned from \d+ bytes .* or this worker sees another copy"):  # fmt: skip
        client.submit(stamp.check, pure=False).result()
    path.unlink()
    with pytest.raises(IngestError, match=r"dataset0\.h5: the Dask worker on host .* cannot open this source"):
        client.submit(stamp.check, pure=False).result()
