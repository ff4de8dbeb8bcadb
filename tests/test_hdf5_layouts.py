"""The HDF5 layouts public datasets ship (replicas in hdf5_replicas), converted to the right samples, or refused.

Every test converts a replica written from the published layout and
compares the output's values, splits and class names with the arrays the
replica wrote; the cases that used to be silently wrong are rebuilt and
must now be right or refused.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import h5py
import numpy as np
import pytest

import h5ml
import hdf5_replicas as replicas
from h5ml.ingest.hdf5 import LeftOut, convert_hdf5, plan_hdf5
from h5ml.ingest.provenance import SOURCE_SPLITS_ATTR
from h5ml.tools import cli


def _valid(path: Path) -> None:
    report = h5ml.validate(path, deep=True)
    assert report.valid_strict, [(i.code, i.message) for i in report.issues]


def _cli(*args: str) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    code = cli.run(list(args), out, err)
    return code, out.getvalue() + err.getvalue()


def test_catvnoncat_split_per_file_with_class_names(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    source = replicas.catvnoncat(tmp_path)
    code, text = _cli("convert", "train_catvnoncat.h5", "test_catvnoncat.h5", "cat.h5")
    assert code == 0, text
    with h5ml.open("cat.h5") as ds:
        assert sorted(ds) == ["test", "train"]
        for split in ("train", "test"):
            np.testing.assert_array_equal(ds[split]["x"][:], source[split]["x"])
            y = ds[split]["y"]
            assert y.encoding == "categorical" and y.class_names == ["non-cat", "cat"] and y.role == "target"
            np.testing.assert_array_equal(y[:], source[split]["y"])
        record = json.loads(ds.attrs[SOURCE_SPLITS_ATTR])
        assert record["test"] == [{"source": "test_catvnoncat.h5", "split": "test", "named_by": "array name"}]
    _valid(tmp_path / "cat.h5")


@pytest.mark.parametrize("stem, names", [("signs", list(range(6))), ("happy", [0, 1])])
def test_signs_and_happy_house_integer_list_classes(tmp_path: Path, stem: str, names: list[int]) -> None:
    source = replicas.catvnoncat(tmp_path, names=np.array(names, dtype=np.int64), stem=stem)
    out = tmp_path / f"{stem}.h5"
    convert_hdf5([tmp_path / f"train_{stem}.h5", tmp_path / f"test_{stem}.h5"], out)
    with h5ml.open(out) as ds:
        assert ds["train"]["y"].class_names == [str(n) for n in names]
        np.testing.assert_array_equal(ds["test"]["y"][:], source["test"]["y"])
    _valid(out)


def test_patchcamelyon_x_and_y_files_joined_by_row_and_squeezed(tmp_path: Path) -> None:
    source = replicas.pcam(tmp_path)
    files = sorted(tmp_path.glob("camelyonpatch_*.h5"))
    out = tmp_path / "pcam.h5"
    report = convert_hdf5(files, out)
    assert report.samples == {"train": 12, "validation": 6, "test": 6}
    with h5ml.open(out) as ds:
        for split, name in (("train", "train"), ("validation", "valid"), ("test", "test")):
            np.testing.assert_array_equal(ds[split]["x"][:], source[name]["x"])
            assert ds[split]["y"].sample_shape == ()
            np.testing.assert_array_equal(ds[split]["y"][:], source[name]["y"].reshape(-1))
    _valid(out)


def test_patchcamelyon_count_mismatch_names_both_files(tmp_path: Path) -> None:
    replicas.pcam(tmp_path, {"train": 8})
    with h5py.File(tmp_path / "camelyonpatch_level_2_split_train_y.h5", "w") as f:
        f["y"] = np.zeros((7, 1, 1, 1), np.uint8)
    files = [tmp_path / f"camelyonpatch_level_2_split_train_{s}.h5" for s in ("x", "y")]
    with pytest.raises(h5ml.IngestError, match=r"_train_x\.h5 has 8 samples but .*_train_y\.h5 has 7 samples"):
        convert_hdf5(files, tmp_path / "o.h5")
    assert not (tmp_path / "o.h5").exists()


def test_modelnet_shards_listed_in_text_files_with_shape_names(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = replicas.modelnet(tmp_path)
    monkeypatch.chdir(tmp_path)
    code, text = _cli("convert", "train_files.txt", "test_files.txt", "modelnet.h5")
    assert code == 0, text
    with h5ml.open("modelnet.h5") as ds:
        assert {s: len(ds[s]) for s in ds} == {"train": 9, "test": 3}
        for split in ("train", "test"):
            np.testing.assert_array_equal(ds[split]["data"][:], source[split]["data"])
            np.testing.assert_array_equal(ds[split]["normal"][:], source[split]["normal"])
            label = ds[split]["label"]
            assert label.class_names == replicas.SHAPE_NAMES
            np.testing.assert_array_equal(label[:], source[split]["label"])
    _valid(tmp_path / "modelnet.h5")


def test_prefixed_arrays_and_split_groups(tmp_path: Path) -> None:
    vectors = replicas.mnist3d_vectors(tmp_path / "full_dataset_vectors.h5")
    convert_hdf5(tmp_path / "full_dataset_vectors.h5", tmp_path / "v.h5")
    usps = replicas.usps(tmp_path / "usps.h5")
    convert_hdf5(tmp_path / "usps.h5", tmp_path / "u.h5")
    with h5ml.open(tmp_path / "v.h5") as v, h5ml.open(tmp_path / "u.h5") as u:
        for split in ("train", "test"):
            np.testing.assert_array_equal(v[split]["X"][:], vectors[split]["X"])
            np.testing.assert_array_equal(v[split]["y"][:], vectors[split]["y"])
            np.testing.assert_array_equal(u[split]["data"][:], usps[split]["data"])
            np.testing.assert_array_equal(u[split]["target"][:], usps[split]["target"])
            assert u[split]["target"].role == "target"


def test_split_groups_with_on_error_skip_are_rows_not_one_sample(tmp_path: Path) -> None:
    """Was: `--on-error skip` on /train/data, /train/target wrote one "sample" of all images and dropped the targets."""
    usps = replicas.usps(tmp_path / "usps.h5")
    report = convert_hdf5(tmp_path / "usps.h5", tmp_path / "u.h5", on_error="skip")
    assert report.samples == {"train": 11, "test": 5} and report.skipped == []
    with h5ml.open(tmp_path / "u.h5") as u:
        assert set(u["train"].features) == {"data", "target"}
        np.testing.assert_array_equal(u["train"]["target"][:], usps["train"]["target"])


def test_one_group_per_sample_is_records_not_transposed(tmp_path: Path) -> None:
    """Was: 3D MNIST point clouds came out transposed (ids became features, datasets became samples)."""
    samples = replicas.mnist3d_points(tmp_path / "train_point_clouds.h5")
    out = tmp_path / "pc.h5"
    report = convert_hdf5(tmp_path / "train_point_clouds.h5", out)
    assert report.samples == {"train": len(samples)}
    with h5ml.open(out) as ds:
        train = ds["train"]
        assert set(train.features) == {"points", "normals", "img", "label", "id"}
        assert train["points"].encoding == "ragged" and train["img"].encoding == "dense"
        assert list(train["id"][:]) == [str(i) for i in range(len(samples))]
        for i, s in enumerate(samples):
            np.testing.assert_array_equal(train["points"][i], s["points"])
            np.testing.assert_array_equal(train["img"][i], s["img"])
            assert int(train["label"][i]) == s["label"]
        assert train["label"].role == "target"
    _valid(out)


def test_nested_groups_per_record_are_records_not_splits(tmp_path: Path) -> None:
    """Was: nested groups per molecule became a split named after the group."""
    records = replicas.ani(tmp_path / "ani_gdb_s01.h5")
    plan = plan_hdf5(tmp_path / "ani_gdb_s01.h5")
    assert [s.name for s in plan.splits] == ["train"] and plan.splits[0].num_samples == len(records)
    reasons = {x.path: x.reason for x in plan.left_out}
    assert "arrays of strings per sample" in reasons["/*/*/species"]
    out = tmp_path / "ani.h5"
    report = convert_hdf5(tmp_path / "ani_gdb_s01.h5", out)
    assert "left out 2 source object(s)" in report.summary()
    with h5ml.open(out) as ds:
        train = ds["train"]
        ids = list(train["id"][:])
        assert ids == sorted(records, key=lambda k: (k.split("/")[0], int(k.rsplit("-", 1)[1])))
        for i, key in enumerate(ids):
            np.testing.assert_array_equal(train["coordinates"][i], records[key]["coordinates"])
            np.testing.assert_array_equal(train["energies"][i], records[key]["energies"])
    _valid(out)


def test_one_hot_rows_become_codes_with_sibling_class_names(tmp_path: Path) -> None:
    source = replicas.onehot(tmp_path / "rps.h5")
    convert_hdf5(tmp_path / "rps.h5", tmp_path / "o.h5", split_name="test")
    with h5ml.open(tmp_path / "o.h5") as ds:
        y = ds["test"]["Y"]
        assert y.class_names == source["names"]
        np.testing.assert_array_equal(y[:], source["codes"])
        np.testing.assert_array_equal(ds["test"]["X"][:], source["X"])


def test_rows_that_are_not_one_hot_are_refused_with_the_row(tmp_path: Path) -> None:
    replicas.onehot(tmp_path / "rps.h5")
    plan = plan_hdf5(tmp_path / "rps.h5")
    with h5py.File(tmp_path / "rps.h5", "a") as f:
        f["Y"][4] = [1, 1, 0]  # after the plan was made: the plan's one_hot meets a bad row while converting
    with pytest.raises(h5ml.IngestError, match=r"rps\.h5:/Y\[4\]: \[1\.0, 1\.0, 0\.0\] is not one-hot"):
        convert_hdf5([], tmp_path / "o.h5", plan=plan)
    assert plan_hdf5(tmp_path / "rps.h5").splits[0].features[1].one_hot is False  # multi-label: left as it is


def test_matlab_v73_transposed_with_cell_class_names(tmp_path: Path) -> None:
    source = replicas.matlab(tmp_path / "toy.mat")
    plan = plan_hdf5(tmp_path / "toy.mat")
    assert plan.sources[0].kind == "matlab"
    x = plan.splits[0].features[0]
    assert x.parts[0].transpose and x.sample_shape == [6]
    out = tmp_path / "toy.h5"
    convert_hdf5(tmp_path / "toy.mat", out)
    with h5ml.open(out) as ds:
        np.testing.assert_array_equal(ds["train"]["X"][:], source["X"])
        assert ds["train"]["y"].class_names == source["classes"]
        np.testing.assert_array_equal(ds["train"]["y"][:], source["y"])
        assert ds.attrs["source:name"] == "toy"
    _valid(out)


def test_class_names_as_many_as_the_samples_are_asked_about(tmp_path: Path) -> None:
    """A MATLAB cell of 3 class names beside 3 samples reads both ways: the plan asks instead of guessing."""
    replicas.matlab(tmp_path / "toy.mat", n=3, classes=("a", "b", "c"))
    plan = plan_hdf5(tmp_path / "toy.mat")
    assert any("/classes is named like class names and has 3 values" in c for c in plan.confirm)
    with pytest.raises(h5ml.IngestError, match="the plan needs 1 decision"):
        convert_hdf5(tmp_path / "toy.mat", tmp_path / "o.h5")


def test_matlab_reference_to_a_group_is_refused(tmp_path: Path) -> None:
    replicas.matlab(tmp_path / "toy.mat", n=10, classes=("a", "b", "c"))
    with h5py.File(tmp_path / "toy.mat", "a") as f:
        f.create_group("#refs#/g")
        f["classes"][1, 0] = f["#refs#/g"].ref
    with pytest.raises(h5ml.IngestError, match=r"cell 1 points to the group /#refs#/g"):
        plan_hdf5(tmp_path / "toy.mat")


def test_fuel_split_attribute_gives_the_splits(tmp_path: Path) -> None:
    source = replicas.fuel(tmp_path / "mnist.hdf5")
    convert_hdf5(tmp_path / "mnist.hdf5", tmp_path / "f.h5")
    with h5ml.open(tmp_path / "f.h5") as ds:
        for split in ("train", "test"):
            np.testing.assert_array_equal(ds[split]["features"][:], source[split]["features"])
            np.testing.assert_array_equal(ds[split]["targets"][:], source[split]["targets"])


def test_fuel_vlen_features_are_ragged_with_shapes(tmp_path: Path) -> None:
    path = tmp_path / "vlen.hdf5"
    rng = np.random.default_rng(0)
    images = [rng.integers(0, 255, (2, 1 + i, 2 + i % 2), dtype=np.uint8) for i in range(5)]
    with h5py.File(path, "w") as f:
        d = f.create_dataset("features", (5,), dtype=h5py.vlen_dtype(np.uint8))
        for i, im in enumerate(images):
            d[i] = im.ravel()
        f["features_shapes"] = np.array([im.shape for im in images])
        f["features_shape_labels"] = np.array([b"channel", b"height", b"width"])
        f.attrs["split"] = replicas.fuel_split_table([("train", "features", 0, 3), ("test", "features", 3, 5)])
    convert_hdf5(path, tmp_path / "o.h5")
    with h5ml.open(tmp_path / "o.h5") as ds:
        assert ds["train"]["features"].encoding == "ragged"
        for i in range(3):
            np.testing.assert_array_equal(ds["train"]["features"][i], images[i])
        np.testing.assert_array_equal(ds["test"]["features"][1], images[4])
    _valid(tmp_path / "o.h5")


@pytest.mark.parametrize("name, split", [("validation.h5", "validation"), ("ply_data_test0.h5", "test")])
def test_single_file_split_comes_from_its_name_not_train(tmp_path: Path, name: str, split: str) -> None:
    """Was: every single-file source landed in train, so a published test file merged into train."""
    with h5py.File(tmp_path / name, "w") as f:
        f["data"] = np.zeros((3, 4), np.float32)
        f["label"] = np.zeros((3, 1), np.uint8)
    out = tmp_path / "o.h5"
    convert_hdf5(tmp_path / name, out)
    with h5ml.open(out) as ds:
        assert list(ds) == [split]
        record = json.loads(ds.attrs[SOURCE_SPLITS_ATTR])
    assert record == {split: [{"source": str(tmp_path / name), "split": split, "named_by": "file name"}]}


def test_split_name_option_records_the_file_names_split_and_merge_refuses(tmp_path: Path) -> None:
    """--split-name train on ply_data_test0.h5 is allowed, recorded, and merge then refuses to mix it with train."""
    for name in ("ply_data_test0.h5", "ply_data_train0.h5"):
        with h5py.File(tmp_path / name, "w") as f:
            f["data"] = np.zeros((3, 4), np.float32)
    convert_hdf5(tmp_path / "ply_data_test0.h5", tmp_path / "a.h5", split_name="train")
    convert_hdf5(tmp_path / "ply_data_train0.h5", tmp_path / "b.h5")
    code, text = _cli("merge", str(tmp_path / "a.h5"), str(tmp_path / "b.h5"), "-o", str(tmp_path / "m.h5"))
    assert code != 0 and "--allow-mixed-splits" in text
    assert not (tmp_path / "m.h5").exists()


def test_split_name_is_refused_for_a_file_with_splits(tmp_path: Path) -> None:
    from h5ml.errors import ParameterError

    replicas.usps(tmp_path / "usps.h5")
    with pytest.raises(ParameterError, match=r"has splits of its own \(\['test', 'train'\]\).*--split-name"):
        plan_hdf5(tmp_path / "usps.h5", split_name="test")


def test_class_names_from_the_command_line_and_a_text_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    replicas.pcam(tmp_path, {"train": 6})
    with h5py.File(tmp_path / "camelyonpatch_level_2_split_train_y.h5", "a") as f:
        f["y"][...] = np.array([0, 1, 1, 0, 1, 0], np.uint8).reshape(6, 1, 1, 1)
    monkeypatch.chdir(tmp_path)
    files = ["camelyonpatch_level_2_split_train_x.h5", "camelyonpatch_level_2_split_train_y.h5"]
    code, text = _cli("convert", *files, "a.h5", "--class-names", "normal,tumor")
    assert code == 0, text
    Path("names.txt").write_text("normal\ntumor\n")
    code, text = _cli("convert", *files, "b.h5", "--class-names-file", "names.txt")
    assert code == 0, text
    for out in ("a.h5", "b.h5"):
        with h5ml.open(out) as ds:
            assert ds["train"]["y"].class_names == ["normal", "tumor"]
    code, text = _cli("convert", *files, "c.h5", "--class-names", "only")
    assert code != 0 and "1 is not a code of the 1 class names of 'y'" in text and "Traceback" not in text


def test_external_storage_and_virtual_datasets_in_a_source_are_refused(tmp_path: Path) -> None:
    """SPEC §10.1-R1: a convert source's storage in other files is refused with the reader's error and message."""
    raw = tmp_path / "raw.bin"
    raw.write_bytes(np.arange(8, dtype="<i4").tobytes())
    with h5py.File(tmp_path / "ext.h5", "w") as f:
        f.create_dataset("x", shape=(8,), dtype="<i4", external=[(str(raw), 0, 32)])
    with pytest.raises(h5ml.ForbiddenStorageError, match=r"ext\.h5: /x stores its data in the external file .*§3\.6"):
        convert_hdf5(tmp_path / "ext.h5", tmp_path / "o.h5")
    with h5py.File(tmp_path / "src.h5", "w") as f:
        f["a"] = np.arange(4)
    layout = h5py.VirtualLayout(shape=(4,), dtype=np.int64)
    layout[:] = h5py.VirtualSource(str(tmp_path / "src.h5"), "a", shape=(4,))
    with h5py.File(tmp_path / "vds.h5", "w") as f:
        f.create_virtual_dataset("x", layout)
    with pytest.raises(h5ml.ForbiddenStorageError, match=r"vds\.h5: /x is a virtual dataset"):
        convert_hdf5(tmp_path / "vds.h5", tmp_path / "o.h5")
    assert not (tmp_path / "o.h5").exists()


def test_fuel_split_given_by_indices_is_refused_not_read_as_empty(tmp_path: Path) -> None:
    """Was: a Fuel split of row indices (start = stop = 0, indices = a reference) became an empty split, exit 0."""
    path = tmp_path / "idx.hdf5"
    with h5py.File(path, "w") as f:
        f["features"] = np.arange(20, dtype=np.uint8).reshape(10, 2)
        f["train_idx"] = np.arange(0, 10, 2)
        f.attrs["split"] = replicas.fuel_split_table([("train", "features", 0, 0)], indices=f["train_idx"].ref)
    with pytest.raises(
        h5ml.IngestError, match=r"as a list of row indices \(the 'indices' column\), which h5ml does not read"
    ):
        plan_hdf5(path)


def test_a_plan_mapping_arrays_of_strings_to_a_string_feature_is_refused(tmp_path: Path) -> None:
    """Was: an edited plan stored numpy's printout of each |S1 array ("['C' 'H' 'H']") as the sample's string."""
    from h5ml.ingest.hdf5 import Feature, Part

    replicas.ani(tmp_path / "ani.h5")
    plan = plan_hdf5(tmp_path / "ani.h5")
    species = Feature(
        name="species",
        encoding="string",
        parts=[Part(source=str(tmp_path / "ani.h5"), kind="records", path="/*/*", member="species")],
    )
    split = plan.splits[0].model_copy(update={"features": [*plan.splits[0].features, species]})
    edited = plan.model_copy(
        update={"splits": [split], "left_out": [x for x in plan.left_out if "species" not in x.path]}
    )
    with pytest.raises(h5ml.IngestError, match=r"holds \|S1 of shape \(\d+,\), not one string per sample"):
        convert_hdf5([], tmp_path / "o.h5", plan=edited)
    ragged = species.model_copy(update={"encoding": "ragged", "dtype": "|S1"})
    split = plan.splits[0].model_copy(update={"features": [*plan.splits[0].features, ragged]})
    with pytest.raises(h5ml.IngestError, match=r"dtype '\|S1' holds no numbers"):
        convert_hdf5([], tmp_path / "o.h5", plan=edited.model_copy(update={"splits": [split]}))
    assert not (tmp_path / "o.h5").exists()


def test_splits_that_disagree_on_class_names_or_one_hot_are_asked_about(tmp_path: Path) -> None:
    """Was: train's list_classes [non-cat, cat] and test's [cat, non-cat] gave code 0 two meanings, with no word."""
    replicas.catvnoncat(tmp_path)
    with h5py.File(tmp_path / "test_catvnoncat.h5", "a") as f:
        del f["list_classes"]
        f["list_classes"] = np.array([b"cat", b"non-cat"])
    plan = plan_hdf5([tmp_path / "train_catvnoncat.h5", tmp_path / "test_catvnoncat.h5"])
    assert any(
        "has class_names ['non-cat', 'cat'] in split 'train' but ['cat', 'non-cat'] in split 'test'" in c
        for c in plan.confirm
    )
    with h5py.File(tmp_path / "keras.h5", "w") as f:
        f["x_train"], f["x_test"] = np.zeros((4, 2)), np.zeros((3, 2))
        f["y_train"] = np.eye(3)[[0, 1, 2, 0]]
        f["y_test"] = np.array([[1, 1, 0], [0, 1, 0], [0, 0, 1]], float)  # multi-hot: not one-hot
    plan = plan_hdf5(tmp_path / "keras.h5")
    assert any("has one_hot True in split 'train' but False in split 'test'" in c for c in plan.confirm)
    # an edited plan that gives one feature two encodings is refused
    replicas.catvnoncat(tmp_path)
    plan = plan_hdf5([tmp_path / "train_catvnoncat.h5", tmp_path / "test_catvnoncat.h5"])
    test = plan.splits[1]
    dense_y = test.features[1].model_copy(update={"encoding": "dense", "class_names": None, "class_names_from": None})
    edited = plan.model_copy(
        update={"splits": [plan.splits[0], test.model_copy(update={"features": [test.features[0], dense_y]})]}
    )
    edited = edited.model_copy(
        update={
            "left_out": [
                *edited.left_out,
                LeftOut(source=str(tmp_path / "test_catvnoncat.h5"), path="/list_classes", reason="x"),
            ]
        }
    )
    with pytest.raises(
        h5ml.IngestError,
        match=r"the plan's splits disagree: feature 'y' has encoding 'categorical' in split 'train' but 'dense'",
    ):
        convert_hdf5([], tmp_path / "o.h5", plan=edited)


def test_options_of_other_kinds_are_refused_for_hdf5_in_words(tmp_path: Path) -> None:
    """Was: --split-ratios on an HDF5 source was an internal error (and --plan ignored it)."""
    replicas.mnist3d_points(tmp_path / "points.h5")
    code, text = _cli(
        "convert", str(tmp_path / "points.h5"), str(tmp_path / "o.h5"), "--split-ratios", "train=0.5,test=0.5"
    )
    assert code == 2 and "do(es) not apply to a source of kind 'hdf5'" in text and "--split-name NAME" in text
    assert "internal error" not in text and "split_name=" not in text
    code, text = _cli("convert", str(tmp_path / "points.h5"), "--plan", "--split-ratios", "train=0.5,test=0.5")
    assert code == 2 and "--split-ratios do(es) not apply to HDF5 sources" in text


def test_plan_exit_status_says_whether_it_can_run(tmp_path: Path) -> None:
    replicas.matlab(tmp_path / "toy.mat", n=3, classes=("a", "b", "c"))  # classes as many as samples: asked
    assert _cli("convert", str(tmp_path / "toy.mat"), "--plan")[0] == 1
    replicas.matlab(tmp_path / "ok.mat")
    code, text = _cli("convert", str(tmp_path / "ok.mat"), "--plan")
    assert code == 0 and "**@MATLAB_class: MATLAB's type tag" in text  # bookkeeping attributes are listed too


def test_a_text_file_that_lists_no_hdf5_file_is_not_a_shard_list(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("some notes\n")
    code, text = _cli("convert", str(tmp_path / "notes.txt"), str(tmp_path / "o.h5"))
    assert code == 2 and "pass --from" in text


def test_matlab_labels_counted_from_one_get_a_hint(tmp_path: Path) -> None:
    replicas.matlab(tmp_path / "toy.mat", n=10, classes=("a", "b", "c"))
    with h5py.File(tmp_path / "toy.mat", "a") as f:
        f["y"][...] = np.array([[1, 2, 3, 1, 2, 3, 1, 2, 3, 3]], float)  # MATLAB's 1-based labels
    with pytest.raises(
        h5ml.IngestError, match=r"3\.0 is not a code of the 3 class names .*MATLAB labels often count from 1"
    ):
        convert_hdf5(tmp_path / "toy.mat", tmp_path / "o.h5")


def test_bool_one_hot_category_with_category_names(tmp_path: Path) -> None:
    """Kaggle's Food-101 HDF5: ``images`` uint8, ``category`` bool one-hot (N, K), ``category_names`` (K,) bytes."""
    rng = np.random.default_rng(11)
    codes = rng.integers(0, 4, 12)
    names = [b"apple_pie", b"baby_back_ribs", b"baklava", b"beef_carpaccio"]
    with h5py.File(tmp_path / "food_c101_n1000_r32x32x3.h5", "w") as f:
        f["images"] = rng.integers(0, 256, (12, 4, 4, 3), dtype=np.uint8)
        f["category"] = np.eye(4, dtype=bool)[codes]
        f["category_names"] = np.array(names)
    convert_hdf5(tmp_path / "food_c101_n1000_r32x32x3.h5", tmp_path / "food.h5")
    with h5ml.open(tmp_path / "food.h5") as ds:
        category = ds["train"]["category"]
        assert category.class_names == [n.decode() for n in names] and category.role == "target"
        np.testing.assert_array_equal(category[:], codes)
        assert ds["train"]["images"].role == "input"
