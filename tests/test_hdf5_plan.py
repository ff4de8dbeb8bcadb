"""The conversion plan of HDF5 sources: shown, written, edited, passed back, checked (h5ml convert --plan / --plan-file).

The property test builds random HDF5 sources (arrays and records layouts)
and random edits of their plans, and checks that the output's samples per
split equal the source rows that the plan maps, and that no source object
is missing from a plan.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import h5py
import jsonschema
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import h5ml
import hdf5_replicas as replicas
from h5ml.ingest.hdf5 import LeftOut, Plan, convert_hdf5, load_plan, plan_hdf5, plan_json_schema, take_inventory
from h5ml.ingest.hdf5.coverage import objects, unaccounted
from h5ml.spec import schemas
from h5ml.tools import cli


def _cli(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = cli.run(list(args), out, err)
    return code, out.getvalue(), err.getvalue()


def test_schema_file_is_the_plan_models_schema_and_accepts_proposed_plans(tmp_path: Path) -> None:
    stored = schemas.load_schema("convert-plan")
    assert stored == plan_json_schema(), "regenerate schema/h5ml-convert-plan-1.0.schema.json from plan_json_schema()"
    replicas.catvnoncat(tmp_path)
    replicas.mnist3d_points(tmp_path / "train_points.h5")
    for sources in (
        [tmp_path / "train_catvnoncat.h5", tmp_path / "test_catvnoncat.h5"],
        [tmp_path / "train_points.h5"],
    ):
        document = json.loads(plan_hdf5(sources).to_json())
        jsonschema.Draft202012Validator(stored).validate(document)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft202012Validator(stored).validate({**document, "splits": [{"name": "x"}]})


def test_plan_text_and_json_on_the_command_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    replicas.catvnoncat(tmp_path)
    monkeypatch.chdir(tmp_path)
    code, out, err = _cli("convert", "train_catvnoncat.h5", "test_catvnoncat.h5", "--plan")
    assert code == 0, err
    assert "split train: 9 samples (named by array name, source split 'train')" in out
    assert "y: categorical, int64, 2 classes ['non-cat', 'cat'] from train_catvnoncat.h5:/list_classes" in out
    assert "<- test_catvnoncat.h5:/test_set_x" in out and "nothing to confirm" in out
    assert not list(tmp_path.glob("*.h5ml")) and len(list(tmp_path.glob("*.h5"))) == 2  # nothing written
    code, out, err = _cli("convert", "train_catvnoncat.h5", "test_catvnoncat.h5", "--plan", "--format", "json")
    assert code == 0, err
    plan = Plan.model_validate_json(out)
    assert [s.name for s in plan.splits] == ["train", "test"]
    code, out, err = _cli("convert", "train_catvnoncat.h5", "test_catvnoncat.h5", "--plan", "-o", "plan.json")
    assert code == 0 and "--plan-file plan.json OUTPUT.h5" in out
    assert load_plan("plan.json") == plan


def test_an_edited_plan_converts_exactly_as_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Rename a split and a feature, drop a split, restrict rows: the output is what the plan says, nothing else."""
    source = replicas.catvnoncat(tmp_path)
    monkeypatch.chdir(tmp_path)
    assert _cli("convert", "train_catvnoncat.h5", "test_catvnoncat.h5", "--plan", "-o", "plan.json")[0] == 0
    document = json.loads(Path("plan.json").read_text())
    train, _test = document["splits"]
    train["name"], train["named_by"] = "training-part", "plan"
    train["features"][0]["name"] = "image"
    for feature in train["features"]:
        feature["parts"][0]["stop"] = 4
    train["num_samples"] = 4
    document["splits"] = [train]
    for path in ("/test_set_x", "/test_set_y", "/list_classes"):
        document["left_out"].append({"source": "test_catvnoncat.h5", "path": path, "reason": "not wanted"})
    Path("plan.json").write_text(json.dumps(document))
    code, _, err = _cli("convert", "--plan-file", "plan.json", "out.h5")
    assert code == 0, err
    with h5ml.open("out.h5") as ds:
        assert list(ds) == ["training-part"]
        np.testing.assert_array_equal(ds["training-part"]["image"][:], source["train"]["x"][:4])
        np.testing.assert_array_equal(ds["training-part"]["y"][:], source["train"]["y"][:4])


def test_a_plan_that_forgets_a_source_object_is_refused(tmp_path: Path) -> None:
    replicas.catvnoncat(tmp_path)
    sources = [tmp_path / "train_catvnoncat.h5", tmp_path / "test_catvnoncat.h5"]
    plan = plan_hdf5(sources)
    test = plan.splits[1]
    smaller = plan.model_copy(
        update={"splits": [plan.splits[0], test.model_copy(update={"features": test.features[:1]})]}
    )
    # Dropping test's label also drops what it read its class names from: both must be said.
    with pytest.raises(
        h5ml.IngestError, match=r"with 2 source object\(s\): .*:/list_classes, .*:/test_set_y\. Map each"
    ):
        convert_hdf5([], tmp_path / "o.h5", plan=smaller)
    more = [LeftOut(source=str(sources[1]), path=p, reason="unlabeled") for p in ("/test_set_y", "/list_classes")]
    kept = smaller.model_copy(update={"left_out": [*smaller.left_out, *more]})
    assert convert_hdf5([], tmp_path / "o.h5", plan=kept).samples == {"train": 9, "test": 5}
    with h5ml.open(tmp_path / "o.h5") as ds:
        assert list(ds["test"].features) == ["x"]


def test_a_plan_with_wrong_counts_paths_or_confirmations_is_refused(tmp_path: Path) -> None:
    replicas.catvnoncat(tmp_path)
    plan = plan_hdf5([tmp_path / "train_catvnoncat.h5", tmp_path / "test_catvnoncat.h5"])
    train = plan.splits[0]
    cases = {
        r"its parts give 9 samples but the split has num_samples 8": train.model_copy(update={"num_samples": 8}),
        r"holds no dataset /nope; fix the part's path": train.model_copy(
            update={
                "features": [
                    train.features[0].model_copy(
                        update={"parts": [train.features[0].parts[0].model_copy(update={"path": "/nope"})]}
                    ),
                    train.features[1],
                ]
            }
        ),
    }
    for message, split in cases.items():
        with pytest.raises(h5ml.IngestError, match=message):
            convert_hdf5([], tmp_path / "o.h5", plan=plan.model_copy(update={"splits": [split, plan.splits[1]]}))
    with pytest.raises(
        h5ml.IngestError, match=r"needs 1 decision\(s\) before converting: \(1\) is this right\? Write the plan"
    ):
        convert_hdf5([], tmp_path / "o.h5", plan=plan.model_copy(update={"confirm": ["is this right?"]}))
    assert not (tmp_path / "o.h5").exists()


def test_plan_file_errors_speak_the_flags(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    Path("bad.json").write_text('{"format": "h5ml-convert-plan", "version": 1, "sources": []}')
    code, _, err = _cli("convert", "--plan-file", "bad.json", "o.h5")
    assert code != 0 and "bad.json: not a valid h5ml conversion plan: sources:" in err and "Traceback" not in err
    replicas.catvnoncat(tmp_path)
    Path("p.json").write_text(plan_hdf5(["train_catvnoncat.h5"]).to_json())
    code, _, err = _cli("convert", "test_catvnoncat.h5", "--plan-file", "p.json", "o.h5")
    assert code != 0 and "not sources of the plan" in err and "SOURCES" in err
    code, _, err = _cli("convert", "train_catvnoncat.h5", "--plan-file", "p.json", "o.h5", "--label", "x")
    assert code != 0 and "--label" in err and "edit the plan" in err


def test_every_object_of_a_proposed_plan_is_accounted_for(tmp_path: Path) -> None:
    replicas.modelnet(tmp_path)
    replicas.matlab(tmp_path / "toy.mat")
    replicas.ani(tmp_path / "ani.h5")
    for sources in ([tmp_path / "train_files.txt"], [tmp_path / "toy.mat"], [tmp_path / "ani.h5"]):
        plan = plan_hdf5(sources)
        inventories = [take_inventory(s.path) for s in plan.sources]
        assert unaccounted(plan, inventories) == []
        assert sum(len(objects(inv)) for inv in inventories) > 0


# --------------------------------------------------------------------------
# property: output samples per split == source rows the plan maps; every object in the plan

_names = st.sampled_from(["x", "y", "image", "label", "extra"])


@st.composite
def _sources(draw: st.DrawFn) -> tuple[str, dict[str, dict[str, tuple[int, ...]]]]:
    """A layout (arrays, split groups, records) and, per split, its features' shapes."""
    layout = draw(st.sampled_from(["arrays", "groups", "records"]))
    splits = draw(st.lists(st.sampled_from(["train", "valid", "test"]), min_size=1, max_size=3, unique=True))
    out = {}
    for split in splits:
        n = draw(st.integers(1, 6))
        names = draw(st.lists(_names, min_size=1, max_size=3, unique=True))
        out[split] = {name: (n, *draw(st.lists(st.integers(1, 3), max_size=2))) for name in names}
    return layout, out


def _write(path: Path, layout: str, splits: dict[str, dict[str, tuple[int, ...]]]) -> None:
    rng = np.random.default_rng(0)
    with h5py.File(path, "w") as f:
        for split, features in splits.items():
            for name, shape in features.items():
                values = rng.random(shape)
                if layout == "arrays":
                    f[f"{name}_{split}"] = values
                elif layout == "groups":
                    f[f"{split}/{name}"] = values
                else:
                    for i in range(shape[0]):
                        f[f"{split}/{i}/{name}"] = values[i]


@settings(max_examples=25)
@given(source=_sources(), data=st.data())
def test_property_samples_per_split_equal_the_rows_the_plan_maps(
    tmp_path_factory: pytest.TempPathFactory,
    source: tuple[str, dict[str, dict[str, tuple[int, ...]]]],
    data: st.DataObject,
) -> None:
    layout, splits = source
    folder = tmp_path_factory.mktemp("prop")
    path = folder / "data.h5"
    _write(path, layout, splits)
    plan = plan_hdf5(path)
    inventories = [take_inventory(path)]
    assert unaccounted(plan, inventories) == []
    assert not plan.confirm, plan.confirm
    expected: dict[str, int] = {}
    edited = []
    for split in plan.splits:
        stop = data.draw(st.integers(0, split.num_samples), label=f"{split.name} rows") if layout != "records" else None
        features = []
        for feature in split.features:
            if stop is not None:
                feature = feature.model_copy(update={"parts": [feature.parts[0].model_copy(update={"stop": stop})]})
            features.append(feature)
        count = split.num_samples if stop is None else stop
        expected[split.name] = count
        edited.append(split.model_copy(update={"num_samples": count, "features": features}))
    plan = plan.model_copy(update={"splits": edited})
    out = folder / "out.h5"
    report = convert_hdf5([], out, plan=plan, overwrite=True, allow_empty_splits=True)
    assert report.samples == expected
    with h5ml.open(out) as ds:
        assert {s: len(ds[s]) for s in ds} == expected


def test_inspect_of_a_foreign_file_shows_the_plan_h5ml_would_propose(tmp_path: Path) -> None:
    replicas.catvnoncat(tmp_path)
    path = str(tmp_path / "train_catvnoncat.h5")
    code, out, err = _cli("inspect", path)
    assert code == 0, err
    tree, plan = out.split("what `h5ml convert` would do with it:")
    assert "train_set_x  dataset  (9, 8, 8, 3)  uint8" in tree
    assert "split train: 9 samples" in plan and f"<- {path}:/train_set_y" in plan
    code, out, err = _cli("inspect", "--format", "json", path)
    document = json.loads(out)
    assert Plan.model_validate(document["plan"]) == plan_hdf5(path)
    with h5py.File(tmp_path / "linked.h5", "w") as f:
        f["x"] = np.zeros(3)
        f["y"] = h5py.SoftLink("/x")
    code, out, err = _cli("inspect", str(tmp_path / "linked.h5"))
    assert code == 0 and "it would refuse it: " in out and "/y is a SoftLink to '/x'; links are not followed" in out
