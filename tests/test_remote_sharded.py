"""A sharded dataset in object storage, end to end: written locally, uploaded, validated and trained on from its URL.

The dataset (dense images, categorical labels, a ragged feature) is written
by ``h5ml.Writer(..., samples_per_shard=, page_size=)``, uploaded to moto's
S3 server on loopback (:mod:`s3_server`, behind a counting proxy), validated
through the CLI at its URL (SPEC §12.1-§12.3 through the one remote opener),
and read for one epoch by a PyTorch DataLoader with two workers and by a
Keras fit, each compared with the same reader over the local folder. The
request bounds are counted on the wire by the proxy.
"""

from __future__ import annotations

import io
import os
import pickle
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import pytest

import h5ml
from h5ml.model.remote import BLOCK_BYTES, HEAD_BYTES
from h5ml.tools import cli
from s3_server import S3Server, time_limit

pytest.importorskip("s3fs")
pytest.importorskip("moto.server")
os.environ.setdefault("KERAS_BACKEND", "torch")  # before keras is imported (as tests/test_keras_adapter.py)

#: Samples of the train split, per shard, and the label classes.
TRAIN, PER_SHARD, CLASSES = 120, 32, ("cat", "dog", "eel", "fox")


def _tiles(n: int, seed: int) -> np.ndarray:
    """Smooth, compressible 8x8x3 uint8 tiles (gradients, like photographs; never noise)."""
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:8, 0:8]
    out = np.empty((n, 8, 8, 3), np.uint8)
    for i in range(n):
        a, b, c = rng.integers(0, 16, 3)
        base = (yy * a + xx * b + c * 16) % 256
        out[i] = np.stack([base, (base + 40) % 256, 255 - base], axis=-1).astype(np.uint8)
    return out


def _write(folder: Path) -> Path:
    """The sharded dataset: train in shards of 32, 32, 32, 24 (paged, gzip), test in one shard."""
    rng = np.random.default_rng(5)
    with h5ml.Writer(
        folder,
        {"name": "remote-sharded", "license": "CC0-1.0", "description": "Tiles in shards."},
        samples_per_shard=PER_SHARD,
        compression="gzip",
        page_size=1 << 20,
    ) as writer:
        for split, n, seed in (("train", TRAIN, 1), ("test", 20, 2)):
            images, labels = _tiles(n, seed), rng.integers(0, len(CLASSES), n)
            wave = [np.arange(int(k), dtype=np.float32) + i for i, k in enumerate(rng.integers(0, 9, n))]
            for start in range(0, n, 25):  # batches that straddle the shard boundaries
                stop = min(n, start + 25)
                writer.append(
                    split,
                    {
                        "image": images[start:stop],
                        "label": h5ml.Categorical(labels[start:stop], CLASSES),
                        "wave": wave[start:stop],
                    },
                )
    return folder


@pytest.fixture(autouse=True)
def _bounded() -> Iterator[None]:
    """Every test here ends within 300 s, even if a request to the server never returns."""
    with time_limit(300):
        yield


@pytest.fixture(scope="module")
def server() -> Iterator[S3Server]:
    with S3Server() as running:
        yield running


@pytest.fixture(scope="module")
def dataset(server: S3Server, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """(the local folder, the URL of its copy in a new bucket)."""
    local = _write(tmp_path_factory.mktemp("remote-sharded") / "ds")
    bucket = server.bucket()
    server.filesystem(counted=False).put(str(local), f"{bucket}/ds", recursive=True)
    return local, f"s3://{bucket}/ds/"


def _run(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = cli.run(list(args), out, err)
    return code, out.getvalue(), err.getvalue()


def _flags(server: S3Server) -> list[str]:
    pairs = [f"key={server.KEY}", f"secret={server.SECRET}", f"endpoint_url={server.endpoint}"]
    return [arg for pair in pairs for arg in ("--storage-option", pair)]


def _verdicts(report: Any) -> tuple[Any, ...]:
    """What a report says, without where it was made: validity, issue codes, and each shard's."""
    shards = tuple((s.valid, sorted(i.code for i in s.issues)) for s in report.shards)
    return report.valid, report.valid_strict, sorted(i.code for i in report.issues), shards


def test_shards_written_with_page_size_are_paged_and_valid(dataset: tuple[Path, str]) -> None:
    """ShardedWriter(page_size=) writes every shard with paged aggregation and pages of that size (§12.4)."""
    local, _ = dataset
    shards = sorted(local.glob("*/*.h5"))
    assert [p.relative_to(local).as_posix() for p in shards] == [
        "test/test-00000.h5", *(f"train/train-0000{i}.h5" for i in range(4))
    ]  # fmt: skip
    for shard in shards:
        with h5py.File(shard, "r") as f:
            plist = f.id.get_create_plist()
            assert plist.get_file_space_strategy()[0] == h5py.h5f.FSPACE_STRATEGY_PAGE
            assert plist.get_file_space_page_size() == 1 << 20
    assert h5ml.validate(local, deep=True).valid_strict
    with pytest.raises(h5ml.WriterError, match="page_size must be None or a power of two"):
        h5ml.Writer(local.parent / "bad", {"name": "bad"}, samples_per_shard=4, page_size=1000)
    assert not (local.parent / "bad").exists()


def test_validate_a_sharded_dataset_at_a_url(server: S3Server, dataset: tuple[Path, str]) -> None:
    """SPEC §12.1-R7: an index at a URL is validated as its local copy: the index, every shard, their agreement.

    The CLI (``--storage-option``, ``--jobs 2``, ``--shallow-shards``, the prefix and its ``index.json``) exits 0,
    and the Python API gives the same verdicts, shard by shard, as for the local folder.
    """
    local, url = dataset
    for args in ([url], [url + "index.json", "--jobs", "2", "--deep"], [url, "--shallow-shards"]):
        code, out, err = _run("validate", "--strict", *args, *_flags(server))
        assert code == 0, out + err
    assert server.KEY in _flags(server)[1] and server.SECRET not in out + err
    near = h5ml.validate(local, deep=True)
    far = h5ml.validate(url, deep=True, storage_options=server.storage_options)
    assert far.kind == "index" and len(far.shards) == 5
    assert _verdicts(far) == _verdicts(near) and far.valid_strict
    shallow = h5ml.validate(url, shallow_shards=True, storage_options=server.storage_options)
    assert shallow.valid_strict and shallow.shards == ()


def test_validate_at_a_url_finds_missing_extra_and_changed_shards(
    server: S3Server, dataset: tuple[Path, str], tmp_path: Path
) -> None:
    """E171 (a listed shard is not under the prefix), W210 (an object no index lists, from one listing of the
    prefix), E172 (a shard replaced by another): found at a URL as in a local folder (§12.1-R4, -R6, -S1)."""
    local, _ = dataset
    bucket = server.bucket()
    fs = server.filesystem(counted=False)
    fs.put(str(local), f"{bucket}/ds", recursive=True)
    url = f"s3://{bucket}/ds/"
    fs.rm(f"{bucket}/ds/train/train-00002.h5")
    fs.put_file(str(local / "test" / "test-00000.h5"), f"{bucket}/ds/train/train-00001.h5")  # another shard's bytes
    fs.put_file(str(local / "train" / "train-00003.h5"), f"{bucket}/ds/train/leftover.h5")
    report = h5ml.validate(url, storage_options=server.storage_options)
    assert not report.valid
    by_code = {i.code: i for i in report.issues}
    assert sorted(by_code) == ["E171", "E172", "E173", "W210"]
    assert by_code["E171"].path == "/splits/train/shards/2" and f"{url}train/train-00002.h5" in by_code["E171"].message
    assert by_code["E172"].path == "/splits/train/shards/1"
    assert by_code["W210"].path == "/splits/train" and "train/leftover.h5" in by_code["W210"].message
    code, out, err = _run("validate", url, *_flags(server))
    assert code == 1 and "E171" in out and "W210" in out and "Traceback" not in out + err
    assert server.SECRET not in out + err


def test_validate_at_a_url_says_what_is_wrong(server: S3Server, dataset: tuple[Path, str]) -> None:
    """No index at the URL, or refused credentials: E100 naming the URL, exit 2 (unreadable), never a traceback."""
    bucket = server.bucket()
    report = h5ml.validate(f"s3://{bucket}/none/", storage_options=server.storage_options)
    assert [i.code for i in report.issues] == ["E100"] and f"s3://{bucket}/none/index.json" in report.issues[0].message
    bad = {**server.storage_options, "key": "wrong-key"}
    refused = h5ml.validate(f"s3://{bucket}/none/index.json", storage_options=bad)
    assert [i.code for i in refused.issues] == ["E100"] and "refused access" in refused.issues[0].message
    code, out, err = _run("validate", f"s3://{bucket}/none/", *_flags(server))
    assert code == 2 and "E100" in out and "UNREADABLE" in out and "Traceback" not in out + err  # as a local path
    with pytest.raises(ValueError, match="storage_options are for an index at a URL"):
        h5ml.validate(dataset[0], storage_options={"anon": True})


def test_split_source_pickles_its_storage_options_without_showing_them(
    server: S3Server, dataset: tuple[Path, str]
) -> None:
    """SplitSource(storage_options=) travels to workers by pickling; its repr and its errors never show a secret."""
    from h5ml.reader.source import SplitSource

    _, url = dataset
    source = SplitSource(url, "train", ["label"], storage_options=server.storage_options)
    copy = pickle.loads(pickle.dumps(source))
    assert copy.storage_options == server.storage_options and copy.num_samples == TRAIN
    assert server.SECRET not in repr(copy)
    wrong = SplitSource(url, "nope", storage_options=server.storage_options)
    with pytest.raises(h5ml.SplitNotFoundError) as caught:
        wrong.reader()
    assert server.SECRET not in str(caught.value)


def test_credentials_from_the_environment_reach_every_shard(
    server: S3Server, dataset: tuple[Path, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without storage_options the environment's credentials open the index and every shard, as before."""
    from h5ml.reader.source import SplitSource

    _, url = dataset
    for key, value in server.environment.items():
        monkeypatch.setenv(key, value)
    source = SplitSource(url, "train", ["label"])
    assert source.storage_options is None and source.num_samples == TRAIN
    assert len(source.read(np.arange(TRAIN))["label"]) == TRAIN  # every shard opened
    assert h5ml.validate(url, shallow_shards=True).valid_strict


def _torch_epochs(url: str, local: Path, server: S3Server, shuffle: str) -> tuple[list[Any], list[Any], Any]:
    """One epoch over the URL (2 workers, counted) and over the local folder (0 workers), same seed."""
    import torch

    from h5ml_torch import H5MLBatchSampler, H5MLDataset, H5MLLoader

    features = ["image", "label", "wave"]
    far = H5MLDataset(url, "train", features, storage_options=server.storage_options)
    near = H5MLDataset(local, "train", features)

    def loader(data: Any, workers: int) -> Any:
        sampler = H5MLBatchSampler(data, 16, shuffle=shuffle, seed=7)
        return H5MLLoader(data, sampler, num_workers=workers, **({"timeout": 120} if workers else {}))

    with server.counting() as log:
        remote = list(loader(far, 2))
    local_batches = list(loader(near, 0))
    assert torch.is_tensor(remote[0]["image"])
    return remote, local_batches, log


def _chunk_ranges(path: Path) -> list[tuple[int, int]]:
    """The byte ranges ``(start, end)`` of every stored chunk of a file."""
    found: list[tuple[int, int]] = []

    def visit(_: str, node: Any) -> None:
        if isinstance(node, h5py.Dataset) and node.chunks:
            for k in range(node.id.get_num_chunks()):
                info = node.id.get_chunk_info(k)
                found.append((info.byte_offset, info.byte_offset + info.size))

    with h5py.File(path, "r") as f:
        f.visititems(visit)
    return sorted(found)


def _same_batches(a: list[Any], b: list[Any]) -> None:
    import torch

    assert len(a) == len(b)
    for x, y in zip(a, b, strict=True):
        assert x.keys() == y.keys()
        for key in x:
            assert torch.equal(x[key], y[key]), key


def test_a_torch_epoch_from_a_url_with_two_workers(server: S3Server, dataset: tuple[Path, str]) -> None:
    """A real DataLoader with 2 workers over the URL: every sample once, the batches of the local folder (seed 7).

    Request bounds on the wire (§12.5), measured on the sequential epoch: each worker fetches each range of a
    shard at most once (no range asked more than twice), at most its head, one metadata block and each chunk
    (measured: 10 requests per shard of 4 chunks: head, block and chunks, once in each worker).
    """
    pytest.importorskip("torch")
    local, url = dataset
    for shuffle in ("full", "none"):
        remote, near, log = _torch_epochs(url, local, server, shuffle)
        _same_batches(remote, near)
        ids = np.concatenate([b["image"].numpy().reshape(len(b["image"]), -1) for b in remote])
        with h5ml.open(local) as ds:
            every = ds["train"].read(slice(None), ["image"])["image"].reshape(TRAIN, -1)
        order = np.lexsort(ids.T[::-1])
        np.testing.assert_array_equal(ids[order], every[np.lexsort(every.T[::-1])])  # every sample once
    # the log of the sequential epoch: the parent reads no shard (the index gives the sampler its sizes),
    # each of the 2 workers opens each shard once and fetches each of its chunks at most once
    for shard in sorted((local / "train").glob("*.h5")):
        key = f"train/{shard.name}"
        chunks = _chunk_ranges(shard)
        gets = log.gets(key)
        assert max(Counter(r.range for r in gets).values()) <= 2, key
        assert len(gets) <= 2 * (2 + len(chunks)), (key, [r.range for r in gets])
        data = sum(end - start for start, end in chunks)
        assert log.get_bytes(key) <= 2 * (HEAD_BYTES + BLOCK_BYTES + data), key
    assert {r.path.rsplit("/", 2)[-2] for r in log.gets()} <= {"ds", "train"}  # no shard of another split


# Keras (torch backend) calls np.array() on its variables to give their values, and numpy 2 warns that their
# __array__ takes no copy keyword: a third-party DeprecationWarning (as in tests/test_keras_adapter.py).
@pytest.mark.filterwarnings("ignore:__array__ implementation doesn't accept a copy keyword:DeprecationWarning")
def test_a_keras_fit_from_a_url(server: S3Server, dataset: tuple[Path, str]) -> None:
    """One Keras epoch on H5MLPyDataset from the URL trains the weights the local folder trains (same seed)."""
    keras = pytest.importorskip("keras")
    from h5ml_keras import H5MLPyDataset

    local, url = dataset

    def build() -> Any:
        keras.utils.set_random_seed(0)
        return keras.Sequential(
            [keras.Input((8, 8, 3)), keras.layers.Rescaling(1 / 255), keras.layers.Flatten(), keras.layers.Dense(4)]
        )

    def fit(source: Any, **options: Any) -> list[np.ndarray]:
        model = build()
        model.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        data = H5MLPyDataset(source, "train", 16, inputs="image", targets="label", shuffle="full", seed=3, **options)
        model.fit(data, epochs=1, shuffle=False, verbose=0)
        return [keras.ops.convert_to_numpy(w) for w in model.weights]

    far = fit(url, storage_options=server.storage_options)
    near = fit(local)
    start = [keras.ops.convert_to_numpy(w) for w in build().weights]
    assert len(far) == len(near) == 2
    for a, b in zip(far, near, strict=True):
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(far[0], start[0])  # the epoch trained: the weights moved
    with h5ml.open(url + "train/train-00000.h5", storage_options=server.storage_options) as shard:
        data = H5MLPyDataset(shard, "train", 16, inputs="image", targets="label")  # one file at a URL, open
        assert data.source.storage_options == server.storage_options  # the options it was opened with
        assert len(data) == 2 and data[1][0].shape == (16, 8, 8, 3)


def test_a_prefix_without_its_final_slash_says_to_add_it(server: S3Server, dataset: tuple[Path, str]) -> None:
    """s3://bucket/ds (no final /) names a file: refused with a message that gives s3://bucket/ds/ to use instead."""
    prefix = dataset[1]
    bare = prefix.rstrip("/")
    with pytest.raises(IsADirectoryError) as raised:
        h5ml.open(bare, storage_options=server.storage_options)
    message = str(raised.value)
    assert f"{bare}: is a folder (prefix)" in message and f"prefix with a final '/' ({prefix}," in message
    report = h5ml.validate(bare, storage_options=server.storage_options)
    assert [i.code for i in report.issues] == ["E100"] and f"({prefix}," in report.issues[0].message
    for command in ("inspect", "validate"):
        code, out, err = _run(command, bare, *_flags(server))
        assert code == 2 and f"({prefix}," in (err if command == "inspect" else out) and "Traceback" not in out + err
    with h5ml.open(prefix, storage_options=server.storage_options) as ds:  # the advice works
        assert len(ds["train"]) == TRAIN
