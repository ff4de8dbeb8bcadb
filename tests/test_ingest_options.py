"""The options every converter shares (h5ml.ingest.options, h5ml.ingest.docstrings) and the words of ``h5ml convert``.

One :class:`ConvertOptions` checks the shared options of every converter,
one set of numpydoc paragraphs documents them, and each refusal is a
:class:`ParameterError` that names the parameter and its command-line
option. These tests convert real sources (CSV tables, PNG folders, HDF5
files, .npz archives) and read the written files back.
"""

from __future__ import annotations

import inspect
import io
from collections.abc import Callable
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import pytest

import h5ml
from h5ml import ingest
from h5ml.errors import IngestError, ParameterError
from h5ml.ingest.docstrings import SHARED_PARAMETERS
from h5ml.ingest.options import SHARED_OPTIONS, ConvertOptions
from h5ml.tools import cli

Image = pytest.importorskip("PIL.Image")


def run_cli(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = cli.run(list(args), out, err)
    return code, out.getvalue(), err.getvalue()


def _converters() -> dict[str, Callable[..., Any]]:
    names = [
        "convert_npz",
        "convert_npy",
        "convert_audio_folder",
        "convert_image_folder",
        "convert_hdf5",
        "convert_table",
        "convert_huggingface",
        "convert_croissant",
        "convert_samples",
        "convert_arrays",
    ]
    found = {name: getattr(ingest, name) for name in names}
    return found


def _csv(path: Path) -> Path:
    path.write_text("width,length,kind\n1.5,3.0,b\n2.5,1.0,a\n0.5,2.0,b\n3.5,4.0,a\n", encoding="utf-8")
    return path


def _pets(root: Path) -> Path:
    rng = np.random.default_rng(2)
    for cls in ("cat", "dog"):
        (root / cls).mkdir(parents=True)
        for i in range(3):
            Image.fromarray(rng.integers(0, 256, size=(4, 5, 3), dtype=np.uint8)).save(root / cls / f"{i}.png")
    return root


def _gzip_levels(path: Path) -> set[int]:
    levels: set[int] = set()

    def visit(name: str, obj: Any) -> None:
        if isinstance(obj, h5py.Dataset) and obj.compression == "gzip":
            levels.add(int(obj.compression_opts))

    with h5py.File(path, "r") as f:
        f.visititems(visit)
    return levels


def test_every_converter_takes_the_shared_options_with_one_default_and_one_doc() -> None:
    """Parallel signatures: every shared option is keyword-only with ConvertOptions' default; each rendered
    docstring lists it once, with the shared paragraph, and no placeholder is left."""
    defaults = ConvertOptions()
    for name, function in _converters().items():
        parameters = inspect.signature(function).parameters
        for option in SHARED_OPTIONS:
            assert option in parameters, (name, option)
            assert parameters[option].kind is inspect.Parameter.KEYWORD_ONLY, (name, option)
            assert parameters[option].default == getattr(defaults, option), (name, option)
        assert inspect.signature(function).return_annotation in ("IngestReport", ingest.IngestReport), name
        doc = function.__doc__ or ""
        assert "{shared_parameters}" not in doc and "{shared_raises}" not in doc, name
        lines = doc.split("\n")
        for option in SHARED_OPTIONS:
            assert lines.count(f"    {option}") == 1, (name, option)
            start = " ".join(SHARED_PARAMETERS[option].split()[:6])
            assert start in " ".join(doc.split()), (name, option)
        assert "h5ml.errors.ParameterError" in doc, name


def test_wrong_shared_values_are_one_parameter_error_naming_each_option(tmp_path: Path) -> None:
    """Checked once, before the source is read: one ParameterError names every wrong value and its option."""
    source, out = _csv(tmp_path / "t.csv"), tmp_path / "t.h5"
    with pytest.raises(ParameterError) as info:
        ingest.convert_table(source, out, workers=0, on_error="ignore", level=3)  # type: ignore[arg-type]
    message = str(info.value)
    assert "workers must be an integer >= 1, got 0 (parameter workers, option --workers)" in message
    assert "on_error must be 'stop' or 'skip', got 'ignore' (parameter on_error, option --on-error)" in message
    assert "level must be None or a gzip level 0-9 with compression='gzip'" in message and "option --level" in message
    assert isinstance(info.value, ValueError) and not out.exists()
    for bad, needle in (
        ({"seed": -1}, "seed must be None or an integer in [0, 2**63), got -1 (parameter seed, option --seed)"),
        ({"compression": "lzf"}, "compression must be 'gzip' or None, got 'lzf'"),
        ({"shuffle": "yes"}, "shuffle must be True or False, got 'yes'"),
        ({"features": ["x"]}, "features must be a dict or None, got ['x'] (parameter features)"),
    ):
        with pytest.raises(ParameterError) as info:
            ingest.convert_arrays({"x": np.arange(3)}, out, **bad)
        assert needle in str(info.value)
    code, stdout, err = run_cli("convert", str(source), str(out), "--level", "3")
    assert (code, stdout) == (2, "") and err.count("\n") == 1 and "internal error" not in err
    assert err.startswith("h5ml: error: level must be None or a gzip level 0-9") and "option --level" in err


def test_level_is_a_shared_option(tmp_path: Path) -> None:
    """--level (compression_opts) reaches the writer from every converter: gzip level 1, default 4."""
    table = _csv(tmp_path / "t.csv")
    ingest.convert_table(table, tmp_path / "one.h5", compression="gzip", level=1)
    ingest.convert_table(table, tmp_path / "four.h5", compression="gzip")
    assert _gzip_levels(tmp_path / "one.h5") == {1} and _gzip_levels(tmp_path / "four.h5") == {4}
    pets = _pets(tmp_path / "pets")
    code, _, err = run_cli(
        "convert", str(pets), str(tmp_path / "pets.h5"), "--size", "5x4", "--compression", "gzip", "--level", "2"
    )
    assert code == 0, err
    assert _gzip_levels(tmp_path / "pets.h5") == {2}
    np.savez(tmp_path / "a.npz", x_train=np.arange(40.0).reshape(20, 2))
    report = ingest.convert_npz(tmp_path / "a.npz", tmp_path / "a.h5", compression="gzip", level=9)
    assert _gzip_levels(report.output) == {9}


def test_features_go_over_a_converters_own_and_may_not_change_the_source(tmp_path: Path) -> None:
    """features= is shared: descriptions and units over the image converter's; an encoding the source fixes is not."""
    pets = _pets(tmp_path / "pets")
    out = tmp_path / "pets.h5"
    ingest.convert_image_folder(
        pets, out, size=(5, 4), features={"label": {"description": "The pet."}, "train/image": {"units": "px"}}
    )
    with h5ml.open(out) as ds:
        label, image = ds["train"]["label"], ds["train"]["image"]
        assert label.description == "The pet." and label.class_names == ["cat", "dog"] and label.role == "target"
        assert image.units == "px" and image.encoding == "dense" and image.role == "input"
    with pytest.raises(ParameterError, match=r"features= gives label the encoding 'dense', but the source's is"):
        ingest.convert_image_folder(pets, tmp_path / "x.h5", size=(5, 4), features={"label": {"encoding": "dense"}})
    with pytest.raises(ParameterError, match=r"features= gives kind the class names \['x', 'y'\]"):
        ingest.convert_table(
            _csv(tmp_path / "t.csv"), tmp_path / "x.h5", label="kind", features={"kind": {"class_names": ["x", "y"]}}
        )
    assert not (tmp_path / "x.h5").exists()


def test_npz_converters_report_like_the_others_and_give_the_conventional_roles(tmp_path: Path) -> None:
    """convert_npz/convert_npy take metadata= and return an IngestReport; roles come from the one ROLE_NAMES."""
    source = tmp_path / "d.npz"
    np.savez(
        source,
        x_train=np.arange(8.0).reshape(4, 2),
        label_train=np.array([0, 1, 1, 0]),
        id_train=np.array(["a", "b", "c", "d"]),
        x_test=np.zeros((2, 2)),
        label_test=np.array([1, 0]),
        id_test=np.array(["e", "f"]),
    )
    report = ingest.convert_npz(source, tmp_path / "d.h5", metadata={"name": "toy", "license": "CC0-1.0"})
    assert isinstance(report, ingest.IngestReport)
    assert (report.output, report.samples, report.skipped) == (tmp_path / "d.h5", {"train": 4, "test": 2}, [])
    with h5ml.open(report.output) as ds:
        assert (ds.metadata.name, ds.metadata.license) == ("toy", "CC0-1.0")
        roles = {name: feature.role for name, feature in ds["train"].features.items()}
        assert roles == {"x": "input", "label": "target", "id": "metadata"}
    np.save(tmp_path / "v.npy", np.arange(6, dtype=np.int16))
    one = ingest.convert_npy(tmp_path / "v.npy", tmp_path / "v.h5", split="test", shuffle=True, seed=4)
    assert one.samples == {"test": 6} and "wrote" in one.summary()
    with h5ml.open(one.output) as ds:
        assert ds["test"].shuffle_seed == 4
        np.testing.assert_array_equal(ds["test"]["v"][:], np.arange(6)[np.random.default_rng(4).permutation(6)])


def _per_sample_hdf5(path: Path) -> None:
    rng = np.random.default_rng(7)
    with h5py.File(path, "w") as f:
        data, label = f.create_group("train_data"), f.create_group("train_label")
        for i in range(12):
            data.create_dataset(str(i), data=rng.random((3, 2)).astype(np.float32))
            label.create_dataset(str(i), data=np.int64(i % 3))


def test_workers_and_processes_mean_the_same_for_hdf5_as_for_every_kind(tmp_path: Path) -> None:
    """--workers N is the count and --processes the switch for HDF5 sources too (threads by default, as every
    kind); threads and processes write the same content (fingerprint, §8.3); --source-layout is gone (the plan)."""
    src = tmp_path / "src.h5"
    _per_sample_hdf5(src)
    threads, procs = tmp_path / "threads.h5", tmp_path / "procs.h5"
    assert run_cli("convert", str(src), str(threads), "--workers", "2", "--quiet") == (0, "", "")
    code, _, err = run_cli("convert", str(src), str(procs), "--workers", "2", "--processes", "--quiet")
    assert code == 0, err
    with h5ml.open(threads) as a, h5ml.open(procs) as b:
        assert a.fingerprint == b.fingerprint
        assert b["train"]["id"][:].tolist() == [str(i) for i in range(12)]
        assert b["train"]["label"][:].tolist() == [i % 3 for i in range(12)]
    code, _, err = run_cli("convert", str(src), str(tmp_path / "x.h5"), "--source-layout", "arrays")
    assert code == 2 and "No such option '--source-layout'" in err


def test_split_ratios_and_split_name_are_two_options(tmp_path: Path) -> None:
    """--split-ratios cuts splits, --split names the split of a .npy; --layout is gone (--folder-layout)."""
    pets = _pets(tmp_path / "pets")
    out = tmp_path / "pets.h5"
    code, _, err = run_cli("convert", str(pets), str(out), "--split", "train=0.5,test=0.5", "--size", "5x4")
    assert code == 2 and "--split names the split of a .npy source" in err and "--split-ratios" in err
    code, _, err = run_cli("convert", str(pets), str(out), "--split-ratios", "train=0.7", "--size", "5x4")
    assert code == 2 and "add up to 0.7, not 1 (option --split-ratios)" in err  # the CLI's words (cli_words)
    assert "parameter split_ratios" not in err
    code, _, err = run_cli("convert", str(pets), str(out), "--split-ratios", "train=0.5,test=0.5", "--size", "5x4")
    assert code == 0, err
    with h5ml.open(out) as ds:
        assert sorted(ds.splits) == ["test", "train"]  # 3 per class cut 0.5/0.5 by largest remainder: 2 and 1
        assert (len(ds["train"]), len(ds["test"])) == (4, 2)
        assert sorted(ds["test"]["label"][:].tolist()) == [0, 1]
    code, _, err = run_cli("convert", str(pets), str(out), "--layout", "classes", "--overwrite")
    assert code == 2 and "No such option '--layout'" in err and "--folder-layout" in err
    nested = tmp_path / "nested"
    for cls in ("cat", "dog"):
        (nested / cls / "indoor").mkdir(parents=True)
        Image.fromarray(np.zeros((4, 5, 3), np.uint8)).save(nested / cls / "indoor" / "1.png")
    code, _, err = run_cli(
        "convert", str(nested), str(tmp_path / "n.h5"), "--folder-layout", "classes", "--size", "5x4"
    )
    assert code == 0, err
    with h5ml.open(tmp_path / "n.h5") as ds:
        assert list(ds.splits) == ["train"] and ds["train"]["label"].class_names == ["cat", "dog"]
    np.save(tmp_path / "v.npy", np.arange(3.0))
    assert run_cli("convert", str(tmp_path / "v.npy"), str(tmp_path / "v.h5"), "--split", "test")[0] == 0
    with h5ml.open(tmp_path / "v.h5") as ds:
        assert list(ds.splits) == ["test"]


def test_table_text_encoding_and_rows_per_read(tmp_path: Path) -> None:
    """text_encoding is the CSV codec (not an h5ml encoding), rows_per_read the CSV rows read at a time."""
    source = tmp_path / "latin.csv"
    source.write_bytes("name,n\ncafé,1\nthé,2\nbière,3\n".encode("latin-1"))
    with pytest.raises(IngestError, match=r"cannot be read as utf-8 CSV .* pass the file's text_encoding"):
        ingest.convert_table(source, tmp_path / "x.h5")
    report = ingest.convert_table(source, tmp_path / "ok.h5", text_encoding="latin-1", rows_per_read=1)
    assert report.samples == {"train": 3}
    with h5ml.open(report.output) as ds:
        assert ds["train"]["name"][:].tolist() == ["café", "thé", "bière"] and ds["train"]["name"].encoding == "string"
    with pytest.raises(ParameterError, match=r"text_encoding 'klingon' is not a codec Python knows \(parameter"):
        ingest.convert_table(source, tmp_path / "x.h5", text_encoding="klingon")
    with pytest.raises(ParameterError, match=r"rows_per_read must be an integer >= 1, got 0"):
        ingest.convert_table(source, tmp_path / "x.h5", rows_per_read=0)
    with pytest.raises(ParameterError, match=r"categorical must be a list of names, got 'name'; write \['name'\]"):
        ingest.convert_table(source, tmp_path / "x.h5", categorical="name")  # type: ignore[arg-type]
    assert not (tmp_path / "x.h5").exists()


def test_refusals_of_input_are_h5ml_errors_in_the_cli_words(tmp_path: Path) -> None:
    """Merge and subset refusals, bad ratios and sizes: h5ml errors (one CLI line), naming the option."""
    a = h5ml.write(tmp_path / "a.h5", {"train": {"x": np.zeros((3, 2), np.float32)}})
    b = h5ml.write(tmp_path / "b.h5", {"train": {"x": np.zeros((3, 4), np.float32)}})
    with pytest.raises(IngestError, match=r"cannot merge .* feature 'x' of split 'train' is dense float32 sample"):
        ingest.merge([a, b], tmp_path / "m.h5")
    with pytest.raises(ParameterError, match=r"is given twice .*\(parameter sources, argument SOURCES\)"):
        ingest.merge([a, tmp_path / "." / "a.h5"], tmp_path / "m.h5")
    with pytest.raises(ParameterError, match=r"samples '10-20' is not a slice .*option --samples"):
        ingest.subset(a, tmp_path / "s.h5", samples="10-20")
    with pytest.raises(ParameterError, match=r"splits=\[\] keeps nothing.*option --split\)"):
        ingest.subset(a, tmp_path / "s.h5", splits=[])
    code, _, err = run_cli("subset", str(a), str(tmp_path / "s.h5"), "--samples", "1-2")
    assert code == 2 and err.startswith("h5ml: error: ") and "option --samples" in err and "internal" not in err
    code, _, err = run_cli("convert", str(_pets(tmp_path / "p")), str(tmp_path / "p.h5"), "--size", "0x4")
    assert code == 2 and "size '0x4' is not WIDTHxHEIGHT" in err and "option --size" in err
    from h5ml.ingest.splitting import parse_ratios

    with pytest.raises(ParameterError, match=r"twice in 'a=0.5,a=0.5' \(parameter split_ratios, option --split-ratios"):
        parse_ratios("a=0.5,a=0.5")
    not_a_table = tmp_path / "notes.txt"
    not_a_table.write_text("just words\n")
    code, _, err = run_cli("convert", str(not_a_table), str(tmp_path / "n.h5"), "--from", "hf")
    assert code == 2 and "internal error" not in err


def test_every_kind_takes_compression_and_level_the_same_way(tmp_path: Path) -> None:
    """--level without --compression gzip is one error naming both flags for every kind of source (arrays,
    table, HDF5, image folder, audio folder); with --compression gzip, every kind stores that level."""
    sf = pytest.importorskip("soundfile")
    np.savez(tmp_path / "a.npz", x_train=np.arange(40.0).reshape(20, 2))
    hdf5 = tmp_path / "src.h5"
    _per_sample_hdf5(hdf5)
    wavs = tmp_path / "wavs" / "speech"
    wavs.mkdir(parents=True)
    for i in range(3):
        sf.write(wavs / f"{i}.wav", np.arange(100 * (i + 1), dtype=np.int16), 8000, subtype="PCM_16")
    sources = {
        "arrays": (tmp_path / "a.npz", ()),
        "table": (_csv(tmp_path / "t.csv"), ()),
        "hdf5": (hdf5, ()),
        "images": (_pets(tmp_path / "pets"), ("--size", "5x4")),
        "audio": (tmp_path / "wavs", ()),
    }
    for kind, (source, extra) in sources.items():
        out = tmp_path / f"{kind}.h5"
        for without in ((), ("--compression", "none")):
            code, stdout, err = run_cli("convert", str(source), str(out), *extra, *without, "--level", "3")
            assert (code, stdout) == (2, ""), (kind, err)
            assert err.count("\n") == 1 and "--compression gzip" in err and "option --level" in err, (kind, err)
            assert not out.exists()
        code, _, err = run_cli("convert", str(source), str(out), *extra, "--compression", "gzip", "--level", "3")
        assert code == 0, (kind, err)
        assert _gzip_levels(out) == {3}, kind
