"""Tests of h5ml.dask (h5ml.ingest.dask): sharded datasets written on a real Dask cluster (SPEC §12.4).

A real ``distributed.LocalCluster`` of two worker processes (one thread
each, no dashboard) runs every job; the shards it writes are read back with
h5ml's reader and compared, value for value, with the input (a dict of dask
arrays, a bag of sample dicts, a dataframe) or with the single-process
conversion of the same folder (real speech made by espeak-ng and sox, real
photographs cut into tiles). Failures are real too: a task that raises on
its first attempt (a flag file in tmp_path says which attempt it is), a
partition whose values the writer refuses half-way through.
"""

from __future__ import annotations

import json
import signal
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import dask
import dask.array as da
import dask.bag as db
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest
from distributed import Client, LocalCluster

import h5ml
import h5ml.dask
import test_ingest_audio
from _files import run_cli
from h5ml.errors import IngestError, ParameterError
from h5ml.ingest.dask.clusters import local_cluster
from h5ml.ingest.images import convert_image_folder
from h5ml.model.shard_index import load_index, shard_location
from test_ingest_audio import PAIR_SPLITS, _pairs, needs_tools

#: The module's real-speech fixture (espeak-ng, sox), shared with test_ingest_audio.
speech = test_ingest_audio.speech
#: No test may take longer than this: a hung cluster fails the test instead of the CI job.
LIMIT_S = 90


@pytest.fixture(autouse=True)
def time_limit() -> Iterator[None]:
    """Fail a test that runs past :data:`LIMIT_S` (SIGALRM interrupts a wait on the cluster)."""

    def expire(_signum: int, _frame: Any) -> None:
        raise TimeoutError(f"test ran past {LIMIT_S} s: the Dask cluster hangs?")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(LIMIT_S)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def _cluster(workers: int) -> tuple[LocalCluster, Client]:
    """LocalCluster(n_workers=workers, processes=True, threads_per_worker=1, dashboard_address=None), as --dask local:N."""
    cluster = local_cluster(workers)
    return cluster, Client(cluster, timeout=30)


@pytest.fixture(scope="module")
def client() -> Iterator[Client]:
    """A real cluster of 2 worker processes, one thread each, no dashboard; closed after the module."""
    cluster, client = _cluster(2)
    try:
        yield client
    finally:
        client.close()
        cluster.close()


def _read(path: Path) -> dict[str, dict[str, list[Any]]]:
    """Every sample of every feature of an h5ml file: split -> feature -> values in order."""
    out: dict[str, dict[str, list[Any]]] = {}
    with h5ml.open(path) as ds:
        for split in ds.splits:
            out[split] = {name: [ds[split][name][i] for i in range(len(ds[split]))] for name in ds[split].features}
    return out


def _read_sharded(outdir: Path) -> dict[str, dict[str, list[Any]]]:
    """The same for a sharded dataset: each split's shards read in the index's order, concatenated (§12.1)."""
    index, where = load_index(outdir)
    out: dict[str, dict[str, list[Any]]] = {}
    for split, entry in index.splits.items():
        for shard in entry.shards:
            for name, values in _read(Path(shard_location(str(where), shard.path)))[split].items():
                out.setdefault(split, {}).setdefault(name, []).extend(values)
    return out


def _assert_same(got: Mapping[str, Mapping[str, list[Any]]], want: Mapping[str, Mapping[str, list[Any]]]) -> None:
    assert {s: sorted(f) for s, f in got.items()} == {s: sorted(f) for s, f in want.items()}
    for split, features in want.items():
        for name, values in features.items():
            assert len(got[split][name]) == len(values), (split, name)
            for row, (a, b) in enumerate(zip(got[split][name], values, strict=True)):
                assert np.asarray(a).dtype == np.asarray(b).dtype, (split, name, row)
                np.testing.assert_array_equal(a, b, err_msg=f"{split}/{name}[{row}]")


def _shard_names(outdir: Path) -> list[str]:
    return sorted(str(p.relative_to(outdir)) for p in outdir.rglob("*") if p.is_file())


# --------------------------------------------------------------------------
# collections


def test_array_dict_one_shard_per_row_block_in_order(client: Client, tmp_path: Path) -> None:
    """§12.4: arrays rechunked to the first one's row chunks; shard i = rows of block i; index written last."""
    x = np.arange(100 * 3, dtype=np.float32).reshape(100, 3)
    y = (np.arange(100) % 4).astype(np.int64)
    out = tmp_path / "arrays"
    index = h5ml.dask.to_h5ml(
        {"x": da.from_array(x, chunks=(30, 3)), "y": da.from_array(y, chunks=25)},
        out,
        metadata={"license": "CC0-1.0", "description": "Rows of two aligned arrays."},
        compression="gzip",
        client=client,
    )
    shards = index.splits["train"].shards
    assert [s.path for s in shards] == [f"train/train-0000{i}.h5" for i in range(4)]
    assert [s.num_samples for s in shards] == [30, 30, 30, 10] and index.splits["train"].starts()[-1] == 100
    assert _shard_names(out) == ["index.json", *(s.path for s in shards)]  # no temporary file left
    assert load_index(out)[0] == index
    got = _read_sharded(out)["train"]
    np.testing.assert_array_equal(np.stack(got["x"]), x)
    np.testing.assert_array_equal(np.stack(got["y"]), y)
    assert index.metadata["name"] == "arrays" and index.metadata["license"] == "CC0-1.0"
    with h5ml.open(out / shards[3].path) as ds:
        assert ds.attrs["name"] == "arrays" and ds["train"]["x"].compression == "gzip"
    code, text, err = run_cli("validate", "--strict", "--deep", str(out))  # SPEC §12.1-§12.3 on the index and shards
    assert code == 0, text + err


def test_same_dataset_and_fingerprints_with_one_and_two_workers(client: Client, tmp_path: Path) -> None:
    """Shard order = partition order: 1 worker and 2 workers give the same shards and index fingerprint (§12.3)."""
    values = np.linspace(0, 1, 64 * 8, dtype=np.float32).reshape(64, 8)
    arrays = {"v": da.from_array(values, chunks=(10, 8)), "k": da.arange(64, chunks=10)}
    two = h5ml.dask.to_h5ml(arrays, tmp_path / "two", client=client, metadata={"name": "same"})
    cluster, single = _cluster(1)
    try:
        one = h5ml.dask.to_h5ml(arrays, tmp_path / "one", client=single, metadata={"name": "same"})
    finally:
        single.close()
        cluster.close()
    assert len(one.splits["train"].shards) == 7
    assert one.fingerprint == two.fingerprint
    assert [s.fingerprint for s in one.splits["train"].shards] == [s.fingerprint for s in two.splits["train"].shards]
    _assert_same(_read_sharded(tmp_path / "one"), _read_sharded(tmp_path / "two"))


def _sample(i: int) -> dict[str, Any]:
    return {"audio": np.full(i % 7 + 1, i, dtype=np.int16), "text": f"sample {i}", "label": np.int64(i % 3)}


def test_bag_of_samples_empty_partitions_skipped(client: Client, tmp_path: Path) -> None:
    """A bag of dicts: ragged, string and dense features; a partition left empty by a filter writes no shard."""
    bag = db.from_sequence(range(40), npartitions=4).filter(lambda i: not 10 <= i < 20).map(_sample)
    out = tmp_path / "bag"
    index = h5ml.dask.to_h5ml(bag, out, split="valid", client=client)
    shards = index.splits["valid"].shards
    assert [s.path for s in shards] == ["valid/valid-00000.h5", "valid/valid-00002.h5", "valid/valid-00003.h5"]
    assert [s.num_samples for s in shards] == [10, 10, 10]
    features = index.splits["valid"].features
    assert (features["audio"].encoding, features["audio"].dtype, features["audio"].sample_shape) == (
        "ragged",
        "<i2",
        (None,),
    )
    assert features["text"].encoding == "string" and features["label"].dtype == "<i8"
    kept = [i for i in range(40) if not 10 <= i < 20]
    want = {"valid": {k: [_sample(i)[k] for i in kept] for k in ("audio", "text", "label")}}
    _assert_same(_read_sharded(out), want)


def test_every_partition_empty_is_refused(client: Client, tmp_path: Path) -> None:
    bag = db.from_sequence(range(6), npartitions=2).filter(lambda i: i > 10).map(_sample)
    with pytest.raises(IngestError, match=r"every one of the 2 partition\(s\) of split 'train' is empty"):
        h5ml.dask.to_h5ml(bag, tmp_path / "empty", client=client)
    assert not (tmp_path / "empty" / "index.json").exists()


def test_dataframe_columns_become_features(client: Client, tmp_path: Path) -> None:
    """Numeric, string, categorical (known categories) and object columns of arrays (ragged)."""
    frame = pd.DataFrame(
        {
            "value": np.arange(12, dtype=np.float64) / 4,
            "count": np.arange(12, dtype=np.int32),
            "name": [f"row {i}" for i in range(12)],
            "kind": pd.Categorical(["cat", "dog", "bird"] * 4, categories=["bird", "cat", "dog"]),
            "signal": [np.arange(i + 1, dtype=np.float32) for i in range(12)],
        }
    )
    out = tmp_path / "frame"
    with dask.config.set({"dataframe.convert-string": False}):  # else dask makes the arrays their str() (documented)
        collection = dd.from_pandas(frame, npartitions=3)
    index = h5ml.dask.to_h5ml(collection, out, client=client)
    features = index.splits["train"].features
    assert features["kind"].encoding == "categorical" and features["kind"].class_names == ("bird", "cat", "dog")
    assert features["signal"].encoding == "ragged" and features["name"].encoding == "string"
    assert features["count"].dtype == "<i4" and features["value"].dtype == "<f8"
    got = _read_sharded(out)["train"]
    assert sum(s.num_samples for s in index.splits["train"].shards) == 12
    np.testing.assert_array_equal(got["value"], frame["value"].to_numpy())
    np.testing.assert_array_equal(got["count"], frame["count"].to_numpy())
    assert [str(v) for v in got["name"]] == list(frame["name"])
    assert [int(v) for v in got["kind"]] == list(frame["kind"].cat.codes)
    for a, b in zip(got["signal"], frame["signal"], strict=True):
        np.testing.assert_array_equal(a, b)


def test_dataframe_that_would_lose_data_is_refused(client: Client, tmp_path: Path) -> None:
    """A missing value, a named index, unknown (per-partition) categories: refused, naming column and partition."""
    missing = pd.DataFrame({"name": ["a", None, "c", "d"]})
    with pytest.raises(IngestError, match=r"column 'name' of partition 0 has a missing value at row 1"):
        h5ml.dask.to_h5ml(dd.from_pandas(missing, npartitions=2), tmp_path / "missing", client=client)
    named = pd.DataFrame({"v": [1.0, 2.0]}, index=pd.Index([7, 8], name="id"))
    with pytest.raises(IngestError, match=r"index \['id'\] would not be stored; make it a column with reset_index"):
        h5ml.dask.to_h5ml(dd.from_pandas(named, npartitions=1), tmp_path / "named", client=client)
    labels = dd.from_pandas(pd.DataFrame({"c": ["x", "x", "y", "z"]}), npartitions=2)
    labels = labels.assign(c=labels["c"].astype("category"))  # categories unknown: each partition has its own
    with pytest.raises(IngestError, match=r"partition 1 of split 'train' stores other features than partition 0"):
        h5ml.dask.to_h5ml(labels, tmp_path / "categories", client=client)
    for name in ("missing", "named", "categories"):
        assert not (tmp_path / name / "index.json").exists()


def test_partition_with_other_dtype_is_refused_not_cast(client: Client, tmp_path: Path) -> None:
    """Features are inferred from the first partition; a later one whose dtype differs is refused by number."""
    bag = db.from_sequence(range(30), npartitions=3).map(
        lambda i: {"x": np.float64(i) if i >= 20 else np.int64(i), "y": np.zeros(2, np.float32)}
    )
    with pytest.raises(IngestError, match=r"partition 2 of split 'train' stores other features than partition 0") as e:
        h5ml.dask.to_h5ml(bag, tmp_path / "mixed", client=client)
    assert "'x'" in str(e.value) and "'<f8'" in str(e.value) and "'<i8'" in str(e.value)
    assert not (tmp_path / "mixed" / "index.json").exists()
    declared = h5ml.dask.to_h5ml(bag, tmp_path / "declared", client=client, features={"x": {"dtype": "float64"}})
    assert declared.splits["train"].features["x"].dtype == "<f8"  # declared: the writer stores every value so


def test_unaligned_arrays_and_other_collections_are_refused(client: Client, tmp_path: Path) -> None:
    with pytest.raises(ParameterError, match=r"same length; got a: 10, b: 9 \(parameter collection\)"):
        h5ml.dask.to_h5ml({"a": da.zeros(10, chunks=5), "b": da.zeros(9, chunks=5)}, tmp_path / "a", client=client)
    with pytest.raises(ParameterError, match=r"wrap it with dask.array.from_array"):
        h5ml.dask.to_h5ml({"a": np.zeros(3)}, tmp_path / "b", client=client)
    with pytest.raises(ParameterError, match=r"got builtins.list"):
        h5ml.dask.to_h5ml([{"a": 1}], tmp_path / "c", client=client)
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


# --------------------------------------------------------------------------
# failures and retries


def _flaky(flag: str) -> Any:
    """A bag mapping that raises on its first call for sample 15 (in partition 1), and works after."""

    def value(i: int) -> dict[str, Any]:
        if i == 15 and not Path(flag).exists():
            Path(flag).write_text("failed once")
            raise OSError("worker lost its input (first attempt)")
        return _sample(i)

    return value


def test_task_failing_once_is_retried_and_the_result_is_whole(client: Client, tmp_path: Path) -> None:
    """retries=1: partition 1 fails on its first attempt, its rerun writes the shard; the same as without failure."""
    reference = h5ml.dask.to_h5ml(
        db.from_sequence(range(40), npartitions=4).map(_sample), tmp_path / "ref", client=client
    )
    flag = tmp_path / "attempted"
    bag = db.from_sequence(range(40), npartitions=4).map(_flaky(str(flag)))
    index = h5ml.dask.to_h5ml(bag, tmp_path / "retried", client=client, retries=1, metadata={"name": "ref"})
    assert flag.read_text() == "failed once"
    assert index.fingerprint == reference.fingerprint
    assert _shard_names(tmp_path / "retried") == _shard_names(tmp_path / "ref")
    _assert_same(_read_sharded(tmp_path / "retried"), _read_sharded(tmp_path / "ref"))


def test_partition_failing_for_good_writes_no_index(client: Client, tmp_path: Path) -> None:
    """Without retries the same failure, and a shape the writer refuses half-way: named; nothing is left."""
    flag = tmp_path / "attempted"
    bag = db.from_sequence(range(40), npartitions=4).map(_flaky(str(flag)))
    with pytest.raises(IngestError, match=r"partition 1 of split 'train' \(shard train/train-00001.h5\) failed: "):
        h5ml.dask.to_h5ml(bag, tmp_path / "failed", client=client)
    assert not (tmp_path / "failed").exists()

    def late_change(i: int) -> dict[str, Any]:  # row 90 of partition 1 (after a batch was appended) has 3 values
        return {"x": np.zeros(3 if i == 290 else 2, np.float32)}

    bag = db.from_sequence(range(400), npartitions=2).map(late_change)
    with pytest.raises(IngestError, match=r"partition 1 of split 'train' \(shard train/train-00001.h5\) failed") as e:
        h5ml.dask.to_h5ml(bag, tmp_path / "late", client=client)
    assert "Nothing was written to" in str(e.value)
    assert not (tmp_path / "late").exists()  # the folder it made, its staging folder and shard 0 are removed


def test_output_folder_rules(client: Client, tmp_path: Path) -> None:
    """A dataset is replaced only with overwrite=True, and stays as it was when the job fails; other folders refused."""
    out = tmp_path / "ds"
    first = h5ml.dask.to_h5ml({"a": da.arange(30, chunks=10)}, out, client=client)
    with pytest.raises(FileExistsError, match=r"holds a sharded dataset \(index.json\).* pass overwrite=True"):
        h5ml.dask.to_h5ml({"a": da.arange(30, chunks=10)}, out, client=client)
    flag = tmp_path / "attempted"
    failing = db.from_sequence(range(40), npartitions=4).map(_flaky(str(flag)))
    with pytest.raises(IngestError, match=r"partition 1 .* Nothing was written to .* \(a dataset it held is unchanged"):
        h5ml.dask.to_h5ml(failing, out, client=client, overwrite=True)
    assert load_index(out)[0] == first and _shard_names(out) == [
        "index.json",
        *(s.path for s in first.splits["train"].shards),
    ]
    (out / "notes.txt").write_text("mine")
    index = h5ml.dask.to_h5ml({"a": da.arange(10, chunks=10)}, out, client=client, overwrite=True)
    assert index.splits["train"].num_samples == 10
    assert _shard_names(out) == ["index.json", "notes.txt", "train/train-00000.h5"]  # old shards 1, 2 removed
    assert (out / "notes.txt").read_text() == "mine"
    other = tmp_path / "other"
    other.mkdir()
    (other / "photo.jpg").write_bytes(b"x")
    with pytest.raises(FileExistsError, match=r"holds no index.json, so it is not a sharded h5ml dataset"):
        h5ml.dask.to_h5ml({"a": da.arange(10, chunks=10)}, other, client=client, overwrite=True)
    assert sorted(p.name for p in other.iterdir()) == ["photo.jpg"]
    (tmp_path / "file").write_text("x")
    with pytest.raises(NotADirectoryError, match="the output of a sharded dataset is a folder"):
        h5ml.dask.to_h5ml({"a": da.arange(10, chunks=10)}, tmp_path / "file", client=client)


# --------------------------------------------------------------------------
# h5ml convert --dask


@needs_tools
def test_audio_folder_on_dask_equals_the_single_process_conversion(
    client: Client, speech: dict[str, dict[str, Path]], tmp_path: Path
) -> None:
    """The plan's samples, cut into shards of samples_per_shard, equal `h5ml convert` without --dask (every value)."""
    root = _pairs(tmp_path / "speech", speech, PAIR_SPLITS)
    single = tmp_path / "single.h5"
    assert run_cli("convert", str(root), str(single), "--quiet")[0] == 0
    report = h5ml.dask.convert_on_dask("audio", root, tmp_path / "shards", client=client, samples_per_shard=2)
    assert report.samples == {"train": 3, "test": 2} and report.output == tmp_path / "shards" / "index.json"
    index, _ = load_index(tmp_path / "shards")
    assert [s.path for s in index.splits["train"].shards] == ["train/train-00000.h5", "train/train-00001.h5"]
    assert [s.num_samples for s in index.splits["train"].shards] == [2, 1]
    assert [s.path for s in index.splits["test"].shards] == ["test/test-00000.h5"]
    want = _read(single)
    _assert_same(_read_sharded(tmp_path / "shards"), want)
    assert index.splits["train"].features["clean"].dtype == "<i2"
    with h5ml.open(single) as ds:
        card = {k: v for k, v in json.loads(json.dumps(ds.attrs, default=str)).items() if k in index.metadata}
    assert index.metadata["source"] == card["source"] == str(root)

    code, out, err = run_cli(
        "convert", str(root), str(tmp_path / "cli"), "--dask", "local:2", "--samples-per-shard", "2"
    )
    assert code == 0, err
    assert "index.json" in out
    cli_index, _ = load_index(tmp_path / "cli")
    _assert_same(_read_sharded(tmp_path / "cli"), want)
    # the one-process sharded writer (--samples-per-shard without --dask) writes the same shards: same fingerprints
    assert run_cli("convert", str(root), str(tmp_path / "one"), "--samples-per-shard", "2", "--quiet")[0] == 0
    one, _ = load_index(tmp_path / "one")
    assert cli_index.fingerprint == one.fingerprint == index.fingerprint
    # equal but for each shard file's size: HDF5's metadata (the `created` time among it) may differ by a few bytes
    assert _without_sizes(cli_index) == _without_sizes(one) and cli_index.metadata == {**one.metadata, "name": "cli"}
    code, out, err = run_cli("validate", "--strict", "--deep", str(tmp_path / "cli"))  # index, shards, agreement
    assert code == 0, out + err


def _without_sizes(index: Any) -> dict[str, Any]:
    """An index's splits as JSON, each shard's size_bytes left out."""
    splits: dict[str, Any] = index.to_json()["splits"]
    for split in splits.values():
        for shard in split["shards"]:
            del shard["size_bytes"]
    return splits


def _tiles(root: Path) -> Path:
    """ROOT/<split>/<class>/<n>.png: 64x64 tiles of scikit-learn's two sample photographs, one class each."""
    from PIL import Image
    from sklearn.datasets import load_sample_images

    for cls, photo in zip(("china", "flower"), load_sample_images().images, strict=True):
        for n in range(5):
            split = "train" if n < 4 else "test"
            (root / split / cls).mkdir(parents=True, exist_ok=True)
            Image.fromarray(photo[64 * n : 64 * (n + 1), 64 * n : 64 * (n + 1)]).save(root / split / cls / f"{n}.png")
    return root


def test_image_folder_on_dask_equals_the_single_process_conversion(client: Client, tmp_path: Path) -> None:
    root = _tiles(tmp_path / "photos")
    convert_image_folder(root, tmp_path / "single.h5", size=(64, 64))
    report = h5ml.dask.convert_on_dask(
        "images", root, tmp_path / "shards", client=client, samples_per_shard=3, size=(64, 64)
    )
    assert report.samples == {"train": 8, "test": 2}
    index, _ = load_index(tmp_path / "shards")
    assert [s.num_samples for s in index.splits["train"].shards] == [3, 3, 2]
    assert index.splits["train"].features["label"].class_names == ("china", "flower")
    want = _read(tmp_path / "single.h5")
    _assert_same(_read_sharded(tmp_path / "shards"), want)
    address = client.scheduler.address  # a running scheduler, as --dask tcp://HOST:PORT names it
    code, _, err = run_cli("convert", str(root), str(tmp_path / "cli"), "--dask", address, "--size", "64x64")
    assert code == 0, err
    _assert_same(_read_sharded(tmp_path / "cli"), want)


def test_convert_dask_refusals_speak_the_command_line(tmp_path: Path) -> None:
    """What --dask does not do is refused before any work, in the command line's words, without a traceback."""
    root = _tiles(tmp_path / "photos")
    cases = [
        (("--dask", "local:2", "--shuffle"), "shuffle on write (--shuffle, --seed) is not done on Dask"),
        (("--dask", "local:2", "--on-error", "skip"), "--on-error skip is not done on Dask"),
        (("--dask", "local:2", "--workers", "2", "--processes"), "--processes does not apply with --dask ..."),
        (
            ("--dask", "local:2", "--shard-size", "1MiB"),
            "--shard-size ... does not apply with --dask ...: each task writes one shard of --samples-per-shard N",
        ),
        (("--dask", "scheduler"), "got 'scheduler' (option --dask)"),
        (("--dask", "local:0"), "'local:N' for N >= 1"),
    ]
    for args, message in cases:
        code, _, err = run_cli("convert", str(root), str(tmp_path / "out"), *args)
        assert code == 2 and message in err and "Traceback" not in err, (args, err)
    code, _, err = run_cli("convert", str(root), str(tmp_path / "out.h5"), "--dask", "local:2")
    assert code == 2 and "out.h5 names a file (.h5), but a sharded dataset is a folder" in err
    assert "(argument OUTPUT)" in err and not (tmp_path / "out.h5").exists()
    arrays = tmp_path / "a.npz"
    np.savez(arrays, x_train=np.zeros((3, 2)))
    code, _, err = run_cli("convert", str(arrays), str(tmp_path / "out2"), "--dask", "local:2")
    assert (
        code == 2
        and "converts audio and images folders, CSV, TSV and Parquet tables, and HDF5 files; a source of kind 'arrays'"
        in err
    )
    assert not (tmp_path / "out").exists() and not (tmp_path / "out2").exists()


def test_file_that_fails_to_decode_names_file_and_partition(client: Client, tmp_path: Path) -> None:
    """A PNG cut short decodes in its task: the error names the partition and the file, and no index is written."""
    root = _tiles(tmp_path / "photos")
    cut = root / "train" / "flower" / "2.png"
    cut.write_bytes(cut.read_bytes()[:200])
    with pytest.raises(IngestError) as e:
        h5ml.dask.convert_on_dask(
            "images", root, tmp_path / "shards", client=client, samples_per_shard=3, size=(64, 64)
        )
    message = str(e.value)
    assert "2.png" in message and "Nothing was written to" in message
    assert not (tmp_path / "shards" / "index.json").exists()
    code, _, err = run_cli(
        "convert", str(root), str(tmp_path / "cli"), "--dask", client.scheduler.address, "--size", "64x64"
    )
    assert code == 2 and "partition 0 of split 'train' (shard train/train-00000.h5) failed" in err
    assert "2.png: a PNG file that does not decode" in err and "fix the cause and run again" in err
    assert "--on-error skip" not in err and "Traceback" not in err  # refused on Dask: not offered
    assert not (tmp_path / "cli" / "index.json").exists()


def test_without_dask_the_facade_says_which_extra_to_install() -> None:
    """``import h5ml.dask`` where dask is not installed (hidden from this child process) names the extra."""
    import subprocess
    import sys

    code = "import sys; sys.modules['distributed'] = None\ntry:\n    import h5ml.dask\nexcept ImportError as e:\n    print(e)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert "h5ml.dask needs the package 'distributed', which is not installed: pip install 'h5ml[dask]'" in done.stdout


def test_convert_dask_local_runs_as_the_command_line_does(tmp_path: Path) -> None:
    """`h5ml convert FOLDER OUT --dask local:2` in a fresh process, where no dask client exists yet.

    In this module the fixture's client is every test's default client, which hid a failure of the command line's
    own cluster (distributed.wait looked for a default client and found none): so run the real command.
    """
    import subprocess
    import sys

    root = _tiles(tmp_path / "photos")
    out = tmp_path / "cli"
    done = subprocess.run(
        [sys.executable, "-m", "h5ml", "convert", str(root), str(out), "--dask", "local:2", "--size", "64x64"],
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    convert_image_folder(root, tmp_path / "single.h5", size=(64, 64))
    _assert_same(_read_sharded(out), _read(tmp_path / "single.h5"))


# --------------------------------------------------------------------------
# h5ml convert TABLE OUTDIR --dask


def _table() -> pd.DataFrame:
    """Columns whose storage only the whole table decides: ints that turn float late, a label whose classes
    appear late, text that looks numeric at first, a boolean column, and a split column naming every split."""
    n = 23
    return pd.DataFrame(
        {
            "x": [float(i) if i != 19 else 2.5 for i in range(n)],  # a fraction only in row 19: float64 everywhere
            "count": list(range(n)),
            "code": [str(i) if i < 8 else f"c{i}" for i in range(n)],  # numbers at first, text in most rows
            "flag": [i % 3 == 0 for i in range(n)],
            "animal": ["cat", "dog"] * 10 + ["ant", "bee", "cat"],  # 'ant' and 'bee' only in the last rows
            "part": ["train", "valid", "train", "test"] * 5 + ["valid", "train", "train"],
        }
    )


def test_table_on_dask_equals_the_one_process_sharded_conversion(client: Client, tmp_path: Path) -> None:
    """§12.4: a CSV, TSV or Parquet table on Dask writes the shards `convert --samples-per-shard N` writes in one
    process (every value, the decided dtypes and class names, the index fingerprint), with a split column,
    split ratios (stratified on the label) or neither."""
    frame = _table()
    frame.to_csv(tmp_path / "t.csv", index=False)
    frame.to_csv(tmp_path / "t.tsv", index=False, sep="\t")
    frame.to_parquet(tmp_path / "t.parquet", index=False)
    cases = [
        ("t.csv", ("--label", "animal", "--split-column", "part")),
        ("t.tsv", ("--label", "animal", "--split-ratios", "train=0.6,test=0.4", "--seed", "7", "--no-shuffle")),
        ("t.parquet", ("--label", "animal", "--compression", "gzip")),
    ]
    for number, (name, args) in enumerate(cases):
        one, many = tmp_path / f"one{number}", tmp_path / f"dask{number}"
        code, _, err = run_cli("convert", str(tmp_path / name), str(one), *args, "--samples-per-shard", "4", "--quiet")
        assert code == 0, err
        dask_args = ("--dask", client.scheduler.address, "--samples-per-shard", "4")
        code, _, err = run_cli("convert", str(tmp_path / name), str(many), *args, *dask_args)
        assert code == 0, (name, err)
        want, got = load_index(one)[0], load_index(many)[0]
        assert got.fingerprint == want.fingerprint, name
        assert got.splits == want.splits and got.metadata == {**want.metadata, "name": many.name}, name
        _assert_same(_read_sharded(many), _read_sharded(one))
        assert _shard_names(many) == _shard_names(one)
    index, _ = load_index(tmp_path / "dask0")
    assert {s: e.num_samples for s, e in index.splits.items()} == {"train": 12, "validation": 6, "test": 5}
    assert [s.num_samples for s in index.splits["train"].shards] == [4, 4, 4]
    train = index.splits["train"].features
    assert train["x"].dtype == "<f8" and train["count"].dtype == "<i8" and train["flag"].dtype == "|b1"
    assert train["code"].encoding == "string"
    assert train["animal"].class_names == ("ant", "bee", "cat", "dog")  # the classes of the last rows, in every shard
    values = _read_sharded(tmp_path / "dask0")
    assert values["validation"]["count"] == [1, 5, 9, 13, 17, 20]
    assert values["train"]["x"][-2:] == [21.0, 22.0] and values["validation"]["code"][-1] == "c20"
    code, out, err = run_cli("validate", "--strict", "--deep", str(tmp_path / "dask1"))
    assert code == 0, out + err
    report = h5ml.dask.convert_on_dask("table", tmp_path / "t.csv", tmp_path / "default", client=client)
    assert report.samples == {"train": 23}  # without samples_per_shard a table gets shards of 100000 rows: one
    assert [s.path for s in load_index(tmp_path / "default")[0].splits["train"].shards] == ["train/train-00000.h5"]


def test_table_on_dask_bad_row_and_refusals(client: Client, tmp_path: Path) -> None:
    """A bad row anywhere stops the job as it stops one process (named, no index); shuffle and skip are refused."""
    frame = _table()
    frame["count"] = frame["count"].astype(object)
    frame.loc[18, "count"] = "many"
    frame.loc[22, "part"] = None  # the last row, of no split: only the task that reads the table to its end sees it
    cases = [
        ("count.csv", frame, "count.csv:row 19", "column 'count' holds 'many', which is not a number"),
        (
            "split.csv",
            _table().assign(part=frame["part"]),
            "split.csv:row 23",
            "the split column 'part' holds no value",
        ),
    ]
    for name, table, where, why in cases:
        table.to_csv(tmp_path / name, index=False)
        address = client.scheduler.address
        code, _, err = run_cli(
            "convert", str(tmp_path / name), str(tmp_path / "out"), "--dask", address, "--split-column", "part",
            "--samples-per-shard", "4",
        )  # fmt: skip
        assert code == 2 and "Traceback" not in err, err
        assert where in err and why in err and "fix the cause and run again" in err, err
        assert not (tmp_path / "out" / "index.json").exists()
    with pytest.raises(IngestError, match=r"split\.csv:row 23 .*the split column 'part' holds no value"):
        h5ml.dask.convert_on_dask(  # chunks of 2 rows: no task but the last reads row 23 (of no split)
            "table", tmp_path / "split.csv", tmp_path / "out", client=client, samples_per_shard=4,
            split_column="part", rows_per_read=2,
        )  # fmt: skip
    assert not (tmp_path / "out" / "index.json").exists()
    _table().to_csv(tmp_path / "t.csv", index=False)
    for args, message in [
        (("--shuffle", "--seed", "1"), "shuffle on write (--shuffle, --seed) is not done on Dask"),
        (("--on-error", "skip"), "--on-error skip is not done on Dask"),
        (("--split-ratios", "train=0.5,test=0.5", "--seed", "1"), "take --seed N with --no-shuffle"),
    ]:
        code, _, err = run_cli("convert", str(tmp_path / "t.csv"), str(tmp_path / "out2"), "--dask", "local:1", *args)
        assert code == 2 and message in err and "Traceback" not in err, (args, err)
    assert not (tmp_path / "out2").exists()
