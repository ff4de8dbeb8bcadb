"""``h5ml shard``, ``h5ml unshard`` and ``h5ml convert --shard-size/--samples-per-shard`` (SPEC §12.4), on the CLI.

Each runs ``h5ml.tools.cli.run`` in this process on real files: an h5ml file
of every encoding, a folder of real speech (espeak-ng), a folder of PNG tiles
of real photographs (scikit-image). Sharded then unsharded, every feature
fingerprint equals the original's; an index whose shards changed is refused;
bad options give one error line naming the flag (exit 2, no traceback).
"""

from __future__ import annotations

import io
import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import h5ml
from h5ml.model.shard_files import describe_shard, disagreements
from h5ml.model.shard_index import ShardIndex, parse_index, shard_location
from h5ml.tools import cli


def run_cli(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = cli.run(list(args), out, err)
    return code, out.getvalue(), err.getvalue()


def checked_index(outdir: Path) -> ShardIndex:
    """The dataset's index, checked on its own and against every shard (no problem allowed)."""
    index_file = outdir / "index.json"
    index = parse_index(json.loads(index_file.read_text(encoding="utf-8")), str(index_file))
    for split, entry in index.splits.items():
        for shard in entry.shards:
            found = describe_shard(shard_location(str(index_file), shard.path))
            assert disagreements(split, entry, shard, found) == []
    return index


def fingerprints(path: Path) -> dict[str, dict[str, str | None]]:
    with h5ml.open(path) as ds:
        return {s: {f: ds[s].feature(f).fingerprint for f in ds[s].every_feature()} for s in ds.every_split()}


@pytest.fixture
def source(tmp_path: Path) -> Path:
    """An h5ml file with every encoding, gzip-compressed: dense, categorical, string, ragged, bytes."""
    rng = np.random.default_rng(7)
    path = tmp_path / "source.h5"
    n = 50
    h5ml.write(
        path,
        {
            "train": {
                "x": rng.normal(size=(n, 3)).astype("f4"),
                "label": h5ml.Categorical(rng.integers(0, 3, n), ["a", "b", "c"]),
                "text": [f"sample {i}" for i in range(n)],
                "wave": [np.arange(i % 7 + 1, dtype="i2") for i in range(n)],
                "blob": [bytes([i]) * (i % 4) for i in range(n)],
            },
            "test": {
                "x": np.zeros((4, 3), "f4"),
                "label": h5ml.Categorical([0, 1, 2, 0], ["a", "b", "c"]),
                "text": ["t"] * 4,
                "wave": [np.arange(2, dtype="i2")] * 4,
                "blob": [b"z"] * 4,
            },
        },
        metadata={"name": "every", "license": "MIT", "description": "every encoding"},
        compression="gzip",
    )
    return path


def test_shard_then_unshard_keeps_every_fingerprint(source: Path, tmp_path: Path) -> None:
    """SPEC §12.4: shard by samples and by bytes, unshard: every feature fingerprint equals the original's."""
    for option, value in (("--samples-per-shard", "12"), ("--shard-size", "2KiB")):
        out, back = tmp_path / f"ds{option}", tmp_path / f"back{option}.h5"
        code, stdout, err = run_cli("shard", str(source), str(out), option, value)
        assert code == 0 and err == "" and "train 50" in stdout
        index = checked_index(out)
        assert index.metadata["name"] == "every" and index.metadata["description"] == "every encoding"
        if option == "--samples-per-shard":
            assert [s.num_samples for s in index.splits["train"].shards] == [12, 12, 12, 12, 2]
        else:
            assert len(index.splits["train"].shards) > 1
        with h5ml.open(out / index.splits["train"].shards[0].path) as first:
            assert first["train"].feature("x").compression == "gzip"
        code, stdout, err = run_cli("unshard", str(out), str(back))
        assert code == 0 and err == "", err
        assert fingerprints(back) == fingerprints(source)
        assert h5ml.validate(back).valid


def test_unshard_refuses_shards_that_disagree_with_the_index(source: Path, tmp_path: Path) -> None:
    """A changed shard (another file in its place) and a missing one are named; no output is written."""
    out = tmp_path / "ds"
    assert run_cli("shard", str(source), str(out), "--samples-per-shard", "20")[0] == 0
    shutil.copyfile(out / "train" / "train-00001.h5", out / "train" / "train-00000.h5")
    (out / "test" / "test-00000.h5").unlink()
    code, _, err = run_cli("unshard", str(out / "index.json"), str(tmp_path / "back.h5"))
    assert code == 2 and "Traceback" not in err
    assert "train-00000.h5: has fingerprint" in err and "(changed?)" in err
    assert "test-00000.h5: missing" in err and not (tmp_path / "back.h5").exists()


def test_overwrite_on_the_command_line(source: Path, tmp_path: Path) -> None:
    """An existing dataset needs --overwrite (the message says --overwrite, not overwrite=True); stale shards go."""
    out = tmp_path / "ds"
    assert run_cli("shard", str(source), str(out), "--samples-per-shard", "10")[0] == 0
    code, _, err = run_cli("shard", str(source), str(out), "--samples-per-shard", "25")
    assert code == 2 and "pass --overwrite to replace it" in err and "overwrite=True" not in err
    assert len(checked_index(out).splits["train"].shards) == 5
    assert run_cli("shard", str(source), str(out), "--samples-per-shard", "25", "--overwrite")[0] == 0
    assert [s.num_samples for s in checked_index(out).splits["train"].shards] == [25, 25]
    assert sorted(p.name for p in (out / "train").iterdir()) == ["train-00000.h5", "train-00001.h5"]


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (("--shard-size", "1G"), "--shard-size must be"),
        (("--shard-size", "10 parsecs"), "--shard-size must be"),
        (("--shard-size", "0"), "--shard-size must be at least 1 byte"),
        (("--samples-per-shard", "0"), "--samples-per-shard must be a whole number of samples"),
        ((), "give --shard-size SIZE or --samples-per-shard N"),
    ],
)
def test_bad_shard_options_name_the_flag(source: Path, tmp_path: Path, args: tuple[str, ...], words: str) -> None:
    """One error line naming the flag, exit 2, nothing written."""
    code, _, err = run_cli("shard", str(source), str(tmp_path / "ds"), *args)
    assert code == 2 and words in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "ds").exists()
    if args:  # convert reads the same options with the same callbacks
        code, _, err = run_cli("convert", str(source), str(tmp_path / "ds"), *args)
        assert code == 2 and words in err and "Traceback" not in err


@pytest.mark.parametrize("shuffle", [(), ("--seed", "5")])
def test_convert_a_table_into_shards(tmp_path: Path, shuffle: tuple[str, ...]) -> None:
    """A CSV table, in source order and shuffled on write: the shards hold the one-file conversion's rows."""
    table = tmp_path / "t.csv"
    table.write_text("a,b,c\n" + "".join(f"{i},{i * 0.5},w{i % 3}\n" for i in range(23)))
    single, sharded, back = tmp_path / "one.h5", tmp_path / "shards", tmp_path / "back.h5"
    assert run_cli("convert", str(table), str(single), *shuffle, "--no-progress")[0] == 0
    code, _, err = run_cli("convert", str(table), str(sharded), "--samples-per-shard", "10", *shuffle, "--no-progress")
    assert code == 0 and err == "", err
    assert [s.num_samples for s in checked_index(sharded).splits["train"].shards] == [10, 10, 3]
    assert run_cli("unshard", str(sharded), str(back))[0] == 0
    assert fingerprints(back) == fingerprints(single)
    assert not [p for p in tmp_path.iterdir() if "h5ml-stage" in p.name]


def test_convert_npz_with_shards_is_refused_by_name(tmp_path: Path) -> None:
    """The converters that do not write shards yet (.npz/.npy arrays) refuse the option by its flag."""
    arrays = tmp_path / "a.npz"
    np.savez(arrays, x_train=np.zeros((4, 2), "f4"))
    code, _, err = run_cli("convert", str(arrays), str(tmp_path / "ds"), "--samples-per-shard", "1")
    assert code == 2 and "--samples-per-shard" in err and "Traceback" not in err
    assert not (tmp_path / "ds").exists()


needs_speech = pytest.mark.skipif(shutil.which("espeak-ng") is None, reason="espeak-ng makes the real speech")


@needs_speech
def test_convert_an_audio_folder_into_shards(tmp_path: Path) -> None:
    """A folder of real speech: --samples-per-shard 2 gives shards whose concatenation is the one-file conversion."""
    root = tmp_path / "speech"
    sentences = ["Hello there.", "One, two, three.", "Short.", "The quick brown fox.", "Speech is sound."]
    for split, ids in (("train", range(5)), ("test", range(2))):
        (root / split / "speech").mkdir(parents=True)
        for i in ids:
            subprocess.run(
                ["espeak-ng", "-w", str(root / split / "speech" / f"{i}.wav"), sentences[i]],
                check=True,
                capture_output=True,
            )
    single, sharded, back = tmp_path / "one.h5", tmp_path / "shards", tmp_path / "back.h5"
    assert run_cli("convert", str(root), str(single), "--no-progress")[0] == 0
    code, _, err = run_cli("convert", str(root), str(sharded), "--samples-per-shard", "2", "--no-progress")
    assert code == 0 and err == "", err
    index = checked_index(sharded)
    assert [s.num_samples for s in index.splits["train"].shards] == [2, 2, 1]
    assert [s.num_samples for s in index.splits["test"].shards] == [2]
    assert run_cli("unshard", str(sharded), str(back))[0] == 0
    assert fingerprints(back) == fingerprints(single)


def test_convert_an_image_folder_into_shards(tmp_path: Path) -> None:
    """PNG tiles of real photographs: --samples-per-shard 5 and --shard-size give the one-file conversion's samples."""
    import skimage.data
    from PIL import Image

    root = tmp_path / "images"
    for name in ("astronaut", "coffee", "chelsea"):
        photo = getattr(skimage.data, name)()
        (root / "train" / name).mkdir(parents=True)
        for k in range(4):
            Image.fromarray(photo[64 * k : 64 * k + 64, :64]).save(root / "train" / name / f"{name}_{k}.png")
    single = tmp_path / "one.h5"
    assert run_cli("convert", str(root), str(single), "--size", "64x64", "--no-progress")[0] == 0
    for option, value, counts in (("--samples-per-shard", "5", [5, 5, 2]), ("--shard-size", "40KiB", [3, 3, 3, 3])):
        sharded, back = tmp_path / f"shards{option}", tmp_path / f"back{option}.h5"
        code, _, err = run_cli("convert", str(root), str(sharded), "--size", "64x64", option, value, "--no-progress")
        assert code == 0 and err == "", err
        # a 64x64x3 uint8 tile is 12288 stored bytes: three fit in 40 KiB (40960), a fourth does not
        assert [s.num_samples for s in checked_index(sharded).splits["train"].shards] == counts
        assert run_cli("unshard", str(sharded), str(back))[0] == 0
        assert fingerprints(back) == fingerprints(single)


def test_convert_hdf5_arrays_into_shards(tmp_path: Path) -> None:
    """A plain HDF5 file of arrays: --samples-per-shard 15 gives 15, 15, 10, and the one-file conversion's samples."""
    import h5py

    source = tmp_path / "arrays.h5"
    with h5py.File(source, "w") as f:
        f["train/x"] = np.arange(40 * 3, dtype="f4").reshape(40, 3)
        f["train/y"] = np.arange(40) % 3
    single, sharded, back = tmp_path / "one.h5", tmp_path / "shards", tmp_path / "back.h5"
    assert run_cli("convert", str(source), str(single), "--no-progress")[0] == 0
    code, _, err = run_cli("convert", str(source), str(sharded), "--samples-per-shard", "15", "--no-progress")
    assert code == 0 and err == "", err
    assert [s.num_samples for s in checked_index(sharded).splits["train"].shards] == [15, 15, 10]
    assert run_cli("unshard", str(sharded), str(back))[0] == 0
    assert fingerprints(back) == fingerprints(single)


def test_python_converter_options_name_both_spellings(tmp_path: Path) -> None:
    """In Python a bad shard option names the parameter and its flag, before anything is read or written."""
    from h5ml.errors import ParameterError
    from h5ml.ingest.images import convert_image_folder

    with pytest.raises(ParameterError, match=r"shard_size must be .*\(parameter shard_size, option --shard-size\)"):
        convert_image_folder(tmp_path / "nowhere", tmp_path / "ds", shard_size="1G")
    assert not (tmp_path / "ds").exists()


def test_convert_a_hugging_face_dataset_into_shards(tmp_path: Path) -> None:
    """A saved Hugging Face dataset, shuffled on write: the shards hold the one-file conversion's samples in order."""
    datasets = pytest.importorskip("datasets")
    features = datasets.Features(
        {"x": datasets.Sequence(datasets.Value("float32"), length=3), "label": datasets.ClassLabel(names=["a", "b"])}
    )
    rows = {"x": [[float(i)] * 3 for i in range(25)], "label": [i % 2 for i in range(25)]}
    source = tmp_path / "saved"
    datasets.DatasetDict({"train": datasets.Dataset.from_dict(rows, features=features)}).save_to_disk(str(source))
    single, sharded, back = tmp_path / "one.h5", tmp_path / "shards", tmp_path / "back.h5"
    common = ("--from", "hf", "--seed", "3", "--no-progress")
    assert run_cli("convert", str(source), str(single), *common)[0] == 0
    code, _, err = run_cli("convert", str(source), str(sharded), "--samples-per-shard", "10", *common)
    assert code == 0 and err == "", err
    assert [s.num_samples for s in checked_index(sharded).splits["train"].shards] == [10, 10, 5]
    assert run_cli("unshard", str(sharded), str(back))[0] == 0
    assert fingerprints(back) == fingerprints(single)


def test_python_samples_into_shards(tmp_path: Path) -> None:
    """Samples of a Python generator, split by a key and shuffled on write: shards of 6 per split, nothing lost."""
    from h5ml.ingest.samples import convert_samples

    samples = ({"x": np.full(3, i, "f4"), "split": "train" if i % 4 else "test"} for i in range(20))
    report = convert_samples(samples, tmp_path / "ds", split_key="split", samples_per_shard=6, shuffle=True, seed=1)
    index = checked_index(tmp_path / "ds")
    assert report.samples == {"train": 15, "test": 5}
    assert {s: [x.num_samples for x in e.shards] for s, e in index.splits.items()} == {"train": [6, 6, 3], "test": [5]}
    values = []
    for shard in index.splits["train"].shards:
        with h5ml.open(tmp_path / "ds" / shard.path) as ds:
            values.extend(int(v[0]) for v in ds["train"]["x"][:])
    assert sorted(values) == [i for i in range(20) if i % 4]


def test_an_output_named_like_a_file_is_refused_in_the_commands_words(tmp_path: Path) -> None:
    """h5ml shard IN out.h5 and h5ml convert t.csv out.h5 --samples-per-shard: refused naming OUTDIR/OUTPUT."""
    source = tmp_path / "in.h5"
    h5ml.write(source, {"train": {"x": np.zeros((5, 2), "f4")}}, metadata={"name": "n", "license": "MIT"})
    (tmp_path / "t.csv").write_text("a,b\n1,2\n3,4\n", encoding="utf-8")
    for args, words in (
        (["shard", str(source), str(tmp_path / "out.h5"), "--samples-per-shard", "2"], "(argument OUTDIR)"),
        (
            ["convert", str(tmp_path / "t.csv"), str(tmp_path / "out.h5"), "--samples-per-shard", "1"],
            "(argument OUTPUT)",
        ),
    ):
        code, out, err = run_cli(*args)
        assert code == 2 and "out.h5 names a file (.h5), but a sharded dataset is a folder" in err, out + err
        assert words in err and "parameter" not in err and "Traceback" not in out + err
        assert sorted(p.name for p in tmp_path.iterdir()) == ["in.h5", "t.csv"]  # no folder was made
