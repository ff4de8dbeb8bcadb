"""Hostile and odd HDF5 sources and plans: each converts right, is asked about, or is refused in words.

Every case here once wrote a wrong file that passed ``validate --strict``
or failed with an internal error (a tester's attacks on issue 12's
converter); each now has its right answer.
"""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import h5py
import numpy as np
import pytest

import h5ml
import hdf5_replicas as replicas
from h5ml.errors import ParameterError
from h5ml.ingest.hdf5 import convert_hdf5, plan_hdf5
from h5ml.tools import cli


def _cli(*args: str) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    code = cli.run(list(args), out, err)
    return code, out.getvalue() + err.getvalue()


def _xy(path: Path, n: int = 4, **more: np.ndarray) -> Path:
    with h5py.File(path, "w") as f:
        f["x"] = np.arange(n * 2, dtype=np.float32).reshape(n, 2)
        f["y"] = np.arange(n) % 2
        for name, value in more.items():
            f[name] = value
    return path


def _confirms(plan: object, text: str) -> bool:
    return any(text in c for c in plan.confirm)  # type: ignore[attr-defined]


def test_matlab_cell_of_numbers_is_not_stored_as_text(tmp_path: Path) -> None:
    path = tmp_path / "cells.mat"
    replicas.matlab(path, n=5)
    with h5py.File(path, "a") as f:
        cell = f.create_dataset("feat", (1, 5), dtype=h5py.ref_dtype)  # MATLAB 5x1 cell of double arrays
        for i in range(5):
            d = f["#refs#"].create_dataset(f"n{i}", data=np.arange(3.0)[:, None] * (i + 0.5))
            d.attrs["MATLAB_class"] = np.bytes_("double")
            cell[0, i] = d.ref
        cell.attrs["MATLAB_class"] = np.bytes_("cell")
    plan = plan_hdf5(path)
    assert "feat" not in {f.name for f in plan.splits[0].features}
    assert any(x.path == "/feat" and "cells hold ['double']" in x.reason for x in plan.left_out)


def test_fuel_split_given_twice_is_asked_about(tmp_path: Path) -> None:
    path = tmp_path / "dup.hdf5"
    with h5py.File(path, "w") as f:
        f["features"] = np.arange(10, dtype=np.uint8)
        f.attrs["split"] = replicas.fuel_split_table([("train", "features", 0, 5), ("train", "features", 5, 10)])
    plan = plan_hdf5(path)
    assert _confirms(plan, "gives split 'train' of source 'features' twice (rows 0:5 and 5:10")
    assert [(p.start, p.stop) for p in plan.splits[0].features[0].parts] == [(0, 5), (5, 10)]
    assert plan.splits[0].num_samples == 10


def test_minus_one_and_no_code_zero_beside_class_names_are_asked_about(tmp_path: Path) -> None:
    plan = plan_hdf5(_pm(tmp_path))
    assert _confirms(plan, "holds -1, which h5ml reads as a missing label")
    path = tmp_path / "onebased.h5"
    with h5py.File(path, "w") as f:
        f["x"] = np.zeros((24, 2))
        f["y"] = np.tile([1, 2], 12)
        f["list_classes"] = np.array([b"a", b"b", b"c"])
    assert _confirms(plan_hdf5(path), "never holds code 0")


def _pm(folder: Path) -> Path:
    path = folder / "neg.h5"
    with h5py.File(path, "w") as f:
        f["x"] = np.zeros((4, 2))
        f["y"] = np.array([-1, 1, -1, 1])
        f["list_classes"] = np.array([b"neg", b"pos"])
    return path


def test_sample_axis_is_honoured_without_transpose(tmp_path: Path) -> None:
    path = _xy(tmp_path / "sq.h5", n=3)
    with h5py.File(path, "a") as f:
        del f["x"]
        f["x"] = np.arange(9).reshape(3, 3)
    plan = plan_hdf5(path)
    split = plan.splits[0]
    x = next(f for f in split.features if f.name == "x")
    turned = x.model_copy(update={"parts": [x.parts[0].model_copy(update={"sample_axis": 1})]})
    edited = plan.model_copy(
        update={
            "splits": [split.model_copy(update={"features": [turned, *(f for f in split.features if f.name != "x")]})]
        }
    )
    convert_hdf5([], tmp_path / "o.h5", plan=edited)
    with h5ml.open(tmp_path / "o.h5") as ds:
        np.testing.assert_array_equal(ds["train"]["x"][:], np.arange(9).reshape(3, 3).T)


def test_two_dimensional_strings_and_ids_of_rows_are_refused_in_a_plan(tmp_path: Path) -> None:
    from h5ml.ingest.hdf5 import Feature, Part

    path = _xy(tmp_path / "s.h5", n=3)
    with h5py.File(path, "a") as f:
        f.create_dataset("s2", data=np.array([["a", "b"]] * 3, dtype=object), dtype=h5py.string_dtype())
        f.create_group("rec/a7")
    plan = plan_hdf5(path).model_copy(update={"confirm": []})  # the user confirmed the groups are left out
    split = plan.splits[0]
    s2 = Feature(name="s2", encoding="string", parts=[Part(source=str(path), path="/s2")])
    edited = plan.model_copy(update={"splits": [split.model_copy(update={"features": [*split.features, s2]})]})
    with pytest.raises(h5ml.IngestError, match=r"/s2 holds object of shape \(3, 2\), not one string per sample"):
        convert_hdf5([], tmp_path / "o.h5", plan=edited)
    ids = Feature(name="id", encoding="string", parts=[Part(source=str(path), kind="ids", path="/rec/*")])
    edited = plan.model_copy(update={"splits": [split.model_copy(update={"features": [*split.features, ids]})]})
    with pytest.raises(h5ml.IngestError, match=r"an ids part gives record ids, and this split reads no records"):
        convert_hdf5([], tmp_path / "o.h5", plan=edited)


def test_split_groups_that_collide_or_contradict_the_file_name_are_asked_about(tmp_path: Path) -> None:
    path = tmp_path / "vv.h5"
    with h5py.File(path, "w") as f:
        for group, n in (("valid", 3), ("validation", 2), ("train", 4)):
            f[f"{group}/x"] = np.zeros((n, 2))
    assert _confirms(plan_hdf5(path), "['valid', 'validation'] all name split 'validation'")
    path = tmp_path / "test_data.h5"
    with h5py.File(path, "w") as f:
        f["train/x"] = np.zeros((3, 2))
    assert _confirms(plan_hdf5(path), "the file's name says split 'test', but inside it names ['train']")
    arrays = tmp_path / "test_arrays.h5"
    with h5py.File(arrays, "w") as f:
        f["X_train"], f["y_train"] = np.zeros((3, 2)), np.zeros(3)
    assert _confirms(plan_hdf5(arrays), "the file's name says split 'test', but inside it names ['train']")


def test_one_file_by_two_names_is_refused(tmp_path: Path) -> None:
    path = _xy(tmp_path / "base.h5")
    os.link(path, tmp_path / "base_hard.h5")
    with pytest.raises(ParameterError, match=r"base_hard\.h5 is given twice \(it is the file .*base\.h5"):
        plan_hdf5([path, tmp_path / "base_hard.h5"])


def test_empty_and_non_utf8_attributes_are_left_out_not_stored_as_text(tmp_path: Path) -> None:
    path = _xy(tmp_path / "attrs.h5")
    with h5py.File(path, "a") as f:
        f.attrs["nothing"] = h5py.Empty("f8")
        f.attrs["latin"] = np.bytes_(b"caf\xe9")
        f["x"].attrs["void"] = h5py.Empty("i4")
        f.create_dataset("null", data=h5py.Empty("f8"))
    plan = plan_hdf5(path)
    reasons = {x.path: x.reason for x in plan.left_out}
    assert reasons["/@nothing"] == "a null dataspace (no value)" and reasons["/x@void"] == "a null dataspace (no value)"
    assert reasons["/@latin"] == "bytes that are not UTF-8 text"
    assert reasons["/null"] == "a null dataspace: it holds no value"
    convert_hdf5(path, tmp_path / "o.h5")
    with h5ml.open(tmp_path / "o.h5") as ds:
        assert "nothing" not in ds.attrs and "latin" not in ds.attrs and "void" not in ds["train"]["x"].attrs


def test_one_matlab_variable_with_two_long_axes_is_asked_about(tmp_path: Path) -> None:
    path = tmp_path / "one.mat"
    with h5py.File(path, "w", userblock_size=512) as f:
        d = f.create_dataset("X", data=np.zeros((1000, 3)))  # MATLAB 3 x 1000
        d.attrs["MATLAB_class"] = np.bytes_("double")
    with path.open("r+b") as raw:
        raw.write(b"MATLAB 7.3 MAT-file")
    assert _confirms(plan_hdf5(path), "the one MATLAB variable of split 'train' has shape (3, 1000)")


def test_storage_never_written_is_asked_about(tmp_path: Path) -> None:
    path = tmp_path / "huge.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("x", shape=(2**34, 4), dtype="f8", chunks=(1024, 4))
        f.create_dataset("y", shape=(2**34,), dtype="i8", chunks=(1024,))
    plan = plan_hdf5(path)
    assert _confirms(plan, "/x has storage that was never written")
    with pytest.raises(h5ml.IngestError, match="decision"):
        convert_hdf5(path, tmp_path / "o.h5")


def test_a_group_linked_into_itself_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "loop.h5"
    with h5py.File(path, "w") as f:
        g = f.create_group("g")
        g["x"] = np.zeros(3)
        g["self"] = g
    with pytest.raises(h5ml.IngestError, match=r"loop\.h5:/g/self is a second hard link to a group already met"):
        plan_hdf5(path)


def test_plan_files_with_bad_values_are_refused_in_words(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    _xy(tmp_path / "d.h5")
    document = json.loads(plan_hdf5("d.h5").to_json())

    def attempt(edit: dict[str, object]) -> str:
        changed = json.loads(json.dumps(document))
        changed["splits"][0]["features"][0].update(edit)
        Path("p.json").write_text(json.dumps(changed))
        code, text = _cli("convert", "--plan-file", "p.json", "o.h5")
        assert code == 2 and "internal error" not in text and "Traceback" not in text, text
        return text

    assert "not a valid h5ml conversion plan: splits.0.features.0.attrs" in attempt({"attrs": {"deep": {"a": 1}}})
    assert "dtype 'notadtype' is not a numpy dtype" in attempt({"dtype": "notadtype"})
    assert "says matlab_class 'char', but d.h5:/x is None" in attempt(
        {"parts": [{**document["splits"][0]["features"][0]["parts"][0], "matlab_class": "char"}]}
    )
    assert not Path("o.h5").exists()


def test_a_list_naming_a_folder_says_so(tmp_path: Path) -> None:
    (tmp_path / "adir").mkdir()
    (tmp_path / "train_files.txt").write_text("adir\n")
    with pytest.raises(h5ml.IngestError, match=r"line 1 names 'adir': the directory .*adir, not a file"):
        plan_hdf5(tmp_path / "train_files.txt")


def test_python_arguments_of_the_wrong_type_are_refused_naming_the_parameter(tmp_path: Path) -> None:
    path = _xy(tmp_path / "d.h5")
    with pytest.raises(ParameterError, match=r"split_name must be a str, got 3 \(parameter split_name"):
        plan_hdf5(path, split_name=3)  # type: ignore[arg-type]
    with pytest.raises(ParameterError, match=r"give class_names as a list of names, not the text 'cat,dog'"):
        convert_hdf5(path, tmp_path / "o.h5", class_names="cat,dog")
    with pytest.raises(ParameterError, match=r"give a path or a list of paths, got bytes"):
        plan_hdf5(b"d.h5")  # type: ignore[arg-type]
    with pytest.raises(
        ParameterError, match=r"give a Plan, the path of a plan file or its JSON document as a dict, got int"
    ):
        convert_hdf5([], tmp_path / "o.h5", plan=5)  # type: ignore[arg-type]
    document = json.loads(plan_hdf5(path).to_json())
    assert convert_hdf5([], tmp_path / "o.h5", plan=document).samples == {"train": 4}
