"""MLCommons Croissant: ``h5ml croissant`` writes JSON-LD that mlcroissant validates; ``h5ml convert`` reads Croissant.

Real files in tmp_path, real HDF5, the real CLI (``h5ml.tools.cli.run``) and
the real ``mlcroissant`` library (its validator, its record reader).
"""

from __future__ import annotations

import hashlib
import io
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import h5ml
from h5ml.ingest.croissant.vocabulary import CONTEXT
from h5ml.ingest.dispatch import detect_kind
from h5ml.tools.cli import run

mlc = pytest.importorskip("mlcroissant")

#: Deprecations inside mlcroissant 1.1.1, not in our code: rdflib 7's ConjunctiveGraph, and pandas' inplace keyword
#: (mlcroissant's Parquet reader); under the test suite's filterwarnings=error they would stop its reads.
pytestmark = [
    pytest.mark.filterwarnings("ignore:ConjunctiveGraph is deprecated:DeprecationWarning"),
    pytest.mark.filterwarnings("ignore:The inplace keyword in DataFrame.reset_index is deprecated"),
]

#: The Croissant 1.0 context: 1.1's without the terms 1.1 added.
CONTEXT_1_0 = {
    k: v for k, v in CONTEXT.items() if k not in ("arrayShape", "containedIn", "isArray", "description", "name")
}


def cli(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = run(list(args), out, err)
    return code, out.getvalue(), err.getvalue()


def h5ml_file(path: Path, **card: Any) -> Path:
    """Two splits: a dense uint8 image, a categorical label, text, booleans, a float vector, a ragged clip, PNG bytes."""
    rng = np.random.default_rng(0)

    def split(n: int) -> dict[str, Any]:
        return {
            "image": rng.integers(0, 255, (n, 8, 8, 3), dtype=np.uint8),
            "label": h5ml.Categorical(np.arange(n) % 2, ["cat", "dog"]),
            "text": [f"sample {i}" for i in range(n)],
            "flag": np.arange(n) % 2 == 0,
            "x": rng.random((n, 3)).astype(np.float32),
            "clip": [np.zeros(k + 1, np.float32) for k in range(n)],
            "photo": [b"\x89PNG fake " + bytes([i]) for i in range(n)],
        }

    metadata = {
        "name": "toy",
        "description": "A toy.",
        "license": "CC-BY-4.0",
        "citation": "Ann 2026",
        "version": "1.0.0",
    }
    metadata.update(card)
    h5ml.write(
        path,
        {"train": split(4), "test": split(2)},
        metadata,
        features={"photo": {"media_type": "image/png"}, "clip": {"sample_rate": 16000.0}},
    )
    return path


def validate(path: Path) -> list[str]:
    """mlcroissant's validation of a JSON-LD file: raises on an error, returns the warnings."""
    dataset = mlc.Dataset(jsonld=str(path))
    return sorted(dataset.metadata.issues.warnings)


def by_id(nodes: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {node["@id"]: node for node in nodes}


def test_croissant_of_a_file_validates_with_its_sha256_splits_fields_and_classes(tmp_path: Path) -> None:
    """`h5ml croissant FILE -o` writes JSON-LD that mlcroissant validates, with real values (SPEC §4.2, §5, §6)."""
    (tmp_path / "data").mkdir()
    (tmp_path / "meta").mkdir()
    data = h5ml_file(tmp_path / "data" / "d.h5")
    output = tmp_path / "meta" / "metadata.json"
    code, _out, err = cli("croissant", str(data), "-o", str(output), "--date-published", "2026-02-01")
    assert code == 0, err
    assert validate(output) == []  # no error, and with datePublished given, no warning
    doc = json.loads(output.read_text(encoding="utf-8"))
    assert doc["conformsTo"] == "http://mlcommons.org/croissant/1.1"
    assert (doc["name"], doc["description"], doc["license"], doc["citeAs"]) == (
        "toy",
        "A toy.",
        "CC-BY-4.0",
        "Ann 2026",
    )
    with h5ml.open(data) as dataset:
        assert doc["dateCreated"] == dataset.metadata.created
    files = by_id(doc["distribution"])
    assert list(files) == ["files/d.h5"]
    assert files["files/d.h5"]["sha256"] == hashlib.sha256(data.read_bytes()).hexdigest()
    assert files["files/d.h5"]["contentUrl"] == "../data/d.h5"  # relative to the JSON-LD's folder
    assert files["files/d.h5"]["encodingFormat"] == "application/x-hdf5"
    sets = by_id(doc["recordSet"])
    assert sorted(sets) == ["classes/test/label", "classes/train/label", "splits/test", "splits/train"]
    fields = {f["name"]: f for f in sets["splits/train"]["field"]}
    types = {name: f["dataType"] for name, f in fields.items()}
    assert types == {
        "clip": "sc:Float",
        "flag": "sc:Boolean",
        "image": "sc:Integer",
        "label": "sc:Integer",
        "photo": "sc:ImageObject",
        "text": "sc:Text",
        "x": "sc:Float",
    }
    assert (fields["image"]["isArray"], fields["image"]["arrayShape"]) == (True, "8,8,3")
    assert (fields["clip"]["isArray"], fields["clip"]["arrayShape"]) == (True, "-1")
    assert "sample rate 16000.0 Hz" in fields["clip"]["description"]
    assert fields["photo"]["encodingFormat"] == "image/png"
    assert fields["text"]["source"] == {"fileObject": {"@id": "files/d.h5"}, "extract": {"column": "/train/text"}}
    assert fields["label"]["references"] == {"field": {"@id": "classes/train/label/index"}}
    classes = sets["classes/train/label"]
    assert classes["dataType"] == "sc:Enumeration"
    assert classes["data"] == [
        {"classes/train/label/index": 0, "classes/train/label/name": "cat"},
        {"classes/train/label/index": 1, "classes/train/label/name": "dog"},
    ]
    # the enumeration's records are what mlcroissant reads back: the class names
    records = list(mlc.Dataset(jsonld=str(output)).records(record_set="classes/train/label"))
    assert [r["classes/train/label/name"] for r in records] == ["cat", "dog"]


def test_croissant_names_the_warning_of_a_missing_date_published_and_is_deterministic(tmp_path: Path) -> None:
    """Without --date-published mlcroissant warns of that one property; two runs write the same bytes (§4.2)."""
    data = h5ml_file(tmp_path / "d.h5")
    first, second = tmp_path / "a.json", tmp_path / "b.json"
    assert cli("croissant", str(data), "-o", str(first))[0] == 0
    assert cli("croissant", str(data), "-o", str(second))[0] == 0
    assert first.read_bytes() == second.read_bytes()
    warnings = validate(first)
    assert len(warnings) == 1 and "datePublished" in warnings[0]
    code, _, err = cli("croissant", str(data), "-o", str(first))
    assert code == 2 and "--overwrite" in err and "Traceback" not in err
    assert cli("croissant", str(data), "-o", str(first), "--overwrite")[0] == 0
    code, out, _ = cli("croissant", str(data))  # standard output, contentUrl relative to the current directory
    assert code == 0 and json.loads(out)["distribution"][0]["sha256"] == hashlib.sha256(data.read_bytes()).hexdigest()


def test_croissant_asks_whether_the_creator_is_a_person_or_an_organisation(tmp_path: Path) -> None:
    """A free-text creator is not guessed to be a Person or an Organization: --creator-type says (§4.2)."""
    data = h5ml_file(tmp_path / "d.h5", creator="Ann Smith")
    output = tmp_path / "m.json"
    code, _, err = cli("croissant", str(data), "-o", str(output))
    assert code == 2 and "--creator-type Person" in err and "creator_type=" not in err
    assert not output.exists()
    assert cli("croissant", str(data), "-o", str(output), "--creator-type", "Organization")[0] == 0
    assert json.loads(output.read_text())["creator"] == {"@type": "sc:Organization", "name": "Ann Smith"}
    validate(output)
    code, _, err = cli("croissant", str(data), "--creator-type", "Person", "--date-published", "last week")
    assert code == 2 and "--date-published" in err and "ISO 8601" in err


def test_croissant_refuses_opaque_bytes_and_names_with_whitespace(tmp_path: Path) -> None:
    """Bytes that are no image or audio have no Croissant data type; an @id cannot hold whitespace (§5.1.1, §6.6)."""
    blob = tmp_path / "blob.h5"
    h5ml.write(blob, {"train": {"blob": [b"ab", b"c"]}}, {"name": "b"})
    code, _, err = cli("croissant", str(blob), "-o", str(tmp_path / "b.json"))
    assert code == 2 and "/train/blob" in err and "application/octet-stream" in err and "h5ml subset" in err
    spaced = tmp_path / "spaced.h5"
    h5ml.write(spaced, {"my train": {"x": np.arange(3)}}, {"name": "s"})
    code, _, err = cli("croissant", str(spaced), "-o", str(tmp_path / "s.json"))
    assert code == 2 and "'my train'" in err and "whitespace" in err
    assert not (tmp_path / "b.json").exists() and not (tmp_path / "s.json").exists()
    odd = tmp_path / "odd.h5"
    h5ml.write(odd, {"q#1": {'a"b%': np.arange(3)}}, {"name": "o"})
    assert cli("croissant", str(odd), "-o", str(tmp_path / "o.json"))[0] == 0
    doc = json.loads((tmp_path / "o.json").read_text())
    (split,) = doc["recordSet"]
    assert (split["@id"], split["name"]) == ("splits/q%231", "q#1")  # an IRI's fragment sign, percent-encoded
    assert [(f["@id"], f["name"]) for f in split["field"]] == [("splits/q%231/a%22b%25", 'a"b%')]
    validate(tmp_path / "o.json")


def test_croissant_of_a_sharded_index_lists_every_shard_with_its_sha256(tmp_path: Path) -> None:
    """A sharded index (§12): a FileObject per shard with its sha256 and a FileSet per split, which validates."""
    data = h5ml_file(tmp_path / "d.h5")
    assert cli("shard", str(data), str(tmp_path / "sharded"), "--samples-per-shard", "2")[0] == 0
    output = tmp_path / "m.json"
    code, _, err = cli("croissant", str(tmp_path / "sharded" / "index.json"), "-o", str(output))
    assert code == 0, err
    validate(output)
    doc = json.loads(output.read_text())
    files = by_id(doc["distribution"])
    shards = sorted(p.relative_to(tmp_path / "sharded").as_posix() for p in (tmp_path / "sharded").rglob("*.h5"))
    assert len(shards) == 3  # train: 2 + 2, test: 2
    for shard in shards:
        assert (
            files[f"files/{shard}"]["sha256"] == hashlib.sha256((tmp_path / "sharded" / shard).read_bytes()).hexdigest()
        )
    assert files["files/index.json"]["contentUrl"] == "sharded/index.json"
    assert files["files/index.json"]["encodingFormat"] == "application/json"
    assert files["shards/train"]["includes"] == [f"sharded/{s}" for s in shards if s.startswith("train/")]
    train = by_id(doc["recordSet"])["splits/train"]
    assert all(f["source"]["fileSet"] == {"@id": "shards/train"} for f in train["field"])
    # converting it back says where the data already is: the index
    code, _, err = cli("convert", str(output), str(tmp_path / "again.h5"))
    assert (
        code == 2 and "the index of a sharded h5ml dataset" in err and str(tmp_path / "sharded" / "index.json") in err
    )


def csv_croissant(folder: Path, *, split_field: bool = True, version: str = "1.0") -> Path:
    """A CSV and a hand-written Croissant JSON-LD of it: an enumeration of labels and a cr:Split record set."""
    csv = folder / "rows.csv"
    csv.write_text("x,y,label,text,split\n1,2.5,cat,hello,train\n3,4.5,dog,world,train\n5,6.5,dog,again,test\n")

    def column(name: str) -> dict[str, Any]:
        return {"fileObject": {"@id": "rows.csv"}, "extract": {"column": name}}

    fields = [
        {"@type": "cr:Field", "@id": "rows/x", "name": "x", "dataType": "sc:Integer", "source": column("x")},
        {"@type": "cr:Field", "@id": "rows/y", "name": "y", "dataType": "sc:Float", "source": column("y")},
        {
            "@type": "cr:Field",
            "@id": "rows/label",
            "name": "label",
            "dataType": "sc:Text",
            "references": {"field": {"@id": "labels/name"}},
            "source": column("label"),
        },
        {"@type": "cr:Field", "@id": "rows/text", "name": "text", "dataType": "sc:Text", "source": column("text")},
    ]
    if split_field:
        fields.append(
            {
                "@type": "cr:Field",
                "@id": "rows/split",
                "name": "split",
                "dataType": "sc:Text",
                "references": {"field": {"@id": "splits/name"}},
                "source": column("split"),
            }
        )

    def enumeration(set_id: str, kind: str, names: list[str]) -> dict[str, Any]:
        return {
            "@type": "cr:RecordSet",
            "@id": set_id,
            "name": set_id,
            "dataType": kind,
            "key": {"@id": f"{set_id}/name"},
            "field": [{"@type": "cr:Field", "@id": f"{set_id}/name", "name": "name", "dataType": "sc:Text"}],
            "data": [{f"{set_id}/name": n} for n in names],
        }

    doc = {
        "@context": CONTEXT_1_0 if version == "1.0" else dict(CONTEXT),
        "@type": "sc:Dataset",
        "conformsTo": f"http://mlcommons.org/croissant/{version}",
        "name": "rows",
        "description": "Three rows.",
        "license": "CC-BY-4.0",
        "citeAs": "Rows 2026",
        "creator": {"@type": "sc:Person", "name": "Ann"},
        "datePublished": "2026-01-01",
        "version": "1.0.0",
        "url": "https://example.org/rows",
        "distribution": [
            {
                "@type": "cr:FileObject",
                "@id": "rows.csv",
                "name": "rows.csv",
                "contentUrl": "rows.csv",
                "encodingFormat": "text/csv",
                "sha256": hashlib.sha256(csv.read_bytes()).hexdigest(),
            }
        ],
        "recordSet": [
            enumeration("labels", "sc:Enumeration", ["cat", "dog", "bird"]),
            enumeration("splits", "cr:Split", ["train", "test"]),
            {"@type": "cr:RecordSet", "@id": "rows", "name": "rows", "field": fields},
        ],
    }
    path = folder / "rows.json"
    path.write_text(json.dumps(doc, indent=1))
    return path


def test_convert_of_a_csv_croissant_round_trips_through_h5ml_croissant(tmp_path: Path) -> None:
    """A CSV-backed Croissant converts with its splits, values and class names; its h5ml's Croissant validates."""
    source = csv_croissant(tmp_path)
    validate(source)  # the hand-written JSON-LD is valid Croissant 1.0
    assert detect_kind(source) == "croissant"
    output = tmp_path / "rows.h5"
    code, _out, err = cli("convert", str(source), str(output))
    assert code == 0, err
    with h5ml.open(output) as dataset:
        assert sorted(dataset.every_split()) == ["test", "train"]
        train, test = dataset["train"].read(slice(None)), dataset["test"].read(slice(None))
        assert train["x"].tolist() == [1, 3] and test["x"].tolist() == [5]
        assert train["y"].tolist() == [2.5, 4.5] and test["y"].tolist() == [6.5]
        assert list(train["text"]) == ["hello", "world"] and list(test["text"]) == ["again"]
        label = dataset["train"].feature("label")
        assert label.encoding == "categorical" and list(label.class_names or []) == ["cat", "dog", "bird"]
        assert train["label"].tolist() == [0, 1] and test["label"].tolist() == [1]
        assert "split" not in dataset["train"].every_feature()
        meta = dataset.metadata
        assert (meta.name, meta.description, meta.license, meta.citation, meta.creator, meta.version) == (
            "rows",
            "Three rows.",
            "CC-BY-4.0",
            "Rows 2026",
            "Ann",
            "1.0.0",
        )
        assert meta.homepage == "https://example.org/rows"
    back = tmp_path / "back.json"
    code, _, err = cli("croissant", str(output), "-o", str(back), "--creator-type", "Person")
    assert code == 0, err
    validate(back)
    fields = {
        f["name"]: f["dataType"] for f in by_id(json.loads(back.read_text())["recordSet"])["splits/train"]["field"]
    }
    assert fields == {"label": "sc:Integer", "text": "sc:Text", "x": "sc:Integer", "y": "sc:Float"}
    # mlcroissant reads no HDF5: converting h5ml's own Croissant says the data already is h5ml, and where
    code, _, err = cli("convert", str(back), str(tmp_path / "again.h5"))
    assert code == 2 and "an h5ml file already" in err and str(output) in err and "Traceback" not in err
    assert not (tmp_path / "again.h5").exists()


def test_convert_asks_for_the_split_and_the_record_set_when_croissant_does_not_say(tmp_path: Path) -> None:
    """Without a cr:Split field the split is confirmed with --split; several record sets need --record-set."""
    source = csv_croissant(tmp_path, split_field=False, version="1.1")
    output = tmp_path / "o.h5"
    code, _, err = cli("convert", str(source), str(output))
    assert code == 2 and "--split train" in err and "cr:Split" in err and not output.exists()
    assert cli("convert", str(source), str(output), "--split", "train")[0] == 0
    with h5ml.open(output) as dataset:
        assert list(dataset.every_split()) == ["train"] and dataset["train"].read(slice(None))["x"].tolist() == [
            1,
            3,
            5,
        ]
    doc = json.loads(source.read_text())
    doc["recordSet"].append({**doc["recordSet"][2], "@id": "more", "name": "more"})
    doc["recordSet"][3]["field"] = [
        {**f, "@id": f["@id"].replace("rows/", "more/")} for f in doc["recordSet"][3]["field"]
    ]
    source.write_text(json.dumps(doc))
    code, _, err = cli("convert", str(source), str(tmp_path / "p.h5"), "--split", "train")
    assert code == 2 and "'rows', 'more'" in err and "--record-set" in err
    assert cli("convert", str(source), str(tmp_path / "p.h5"), "--split", "test", "--record-set", "more")[0] == 0
    code, _, err = cli("convert", str(csv_croissant(tmp_path)), str(tmp_path / "q.h5"), "--split", "train")
    assert code == 2 and "'rows/split'" in err and "--split" in err


def test_convert_refuses_remote_files_before_any_work(tmp_path: Path) -> None:
    """A FileObject with an http contentUrl is refused by name before mlcroissant downloads anything."""
    source = csv_croissant(tmp_path)
    doc = json.loads(source.read_text())
    doc["distribution"][0]["contentUrl"] = "https://example.org/rows.csv"
    source.write_text(json.dumps(doc))
    code, _, err = cli("convert", str(source), str(tmp_path / "o.h5"))
    assert code == 2 and "'rows.csv'" in err and "https://example.org/rows.csv" in err and "local files" in err
    doc["distribution"][0]["contentUrl"] = "missing.csv"
    source.write_text(json.dumps(doc))
    code, _, err = cli("convert", str(source), str(tmp_path / "o.h5"))
    assert code == 2 and "missing.csv" in err and "does not exist" in err
    assert not (tmp_path / "o.h5").exists()


def test_convert_refuses_data_types_it_cannot_store_naming_the_field(tmp_path: Path) -> None:
    """An sc:Date field is refused before any record is read; a plain JSON file is no Croissant."""
    source = csv_croissant(tmp_path)
    doc = json.loads(source.read_text())
    doc["recordSet"][2]["field"][3]["dataType"] = "sc:Date"
    source.write_text(json.dumps(doc))
    code, _, err = cli("convert", str(source), str(tmp_path / "o.h5"))
    assert code == 2 and "'rows/text' (sc:Date)" in err and "no encoding" in err
    doc["recordSet"][2]["field"][3]["dataType"] = "sc:Text"
    doc["recordSet"][2]["field"][1]["references"] = {"field": {"@id": "labels/name"}}  # codes without class names
    source.write_text(json.dumps(doc))
    code, _, err = cli("convert", str(source), str(tmp_path / "o.h5"))
    assert code == 2 and "'rows/y' (sc:Float): references the enumeration 'labels'" in err
    del doc["recordSet"][2]["field"][1]["references"]
    doc["recordSet"][2]["field"][0]["isArray"] = True
    doc["@context"], doc["conformsTo"] = dict(CONTEXT), "http://mlcommons.org/croissant/1.1"
    source.write_text(json.dumps(doc))
    code, _, err = cli("convert", str(source), str(tmp_path / "o.h5"))
    assert code == 2 and "'rows/x' (sc:Integer): isArray/repeated" in err
    plain = tmp_path / "plain.json"
    plain.write_text('{"a": 1}')
    code, _, err = cli("convert", str(plain), str(tmp_path / "o.h5"))
    assert code == 2 and "--from" in err
    code, _, err = cli("convert", "--from", "croissant", str(plain), str(tmp_path / "o.h5"))
    assert code == 2 and "not a Croissant 1.0 or 1.1" in err


def test_convert_of_image_files_needs_one_shape(tmp_path: Path) -> None:
    """sc:ImageObject files of a FileSet become dense uint8 (H, W, C); an image of another shape is refused."""
    from PIL import Image

    (tmp_path / "img").mkdir()
    for i in range(3):
        Image.fromarray(np.full((3, 4, 3), i * 40, np.uint8)).save(tmp_path / "img" / f"{i}.png")

    def images(field: str, prop: str, kind: str) -> dict[str, Any]:
        return {
            "@type": "cr:Field",
            "@id": f"images/{field}",
            "name": field,
            "dataType": kind,
            "source": {"fileSet": {"@id": "pngs"}, "extract": {"fileProperty": prop}},
        }

    doc = {
        "@context": CONTEXT_1_0,
        "@type": "sc:Dataset",
        "conformsTo": "http://mlcommons.org/croissant/1.0",
        "name": "images",
        "description": "Three images.",
        "license": "CC0-1.0",
        "citeAs": "Images",
        "datePublished": "2026-01-01",
        "url": "https://example.org/images",
        "distribution": [
            {
                "@type": "cr:FileSet",
                "@id": "pngs",
                "name": "pngs",
                "encodingFormat": "image/png",
                "includes": "img/*.png",
            }
        ],
        "recordSet": [
            {
                "@type": "cr:RecordSet",
                "@id": "images",
                "name": "images",
                "field": [images("image", "content", "sc:ImageObject"), images("file", "filename", "sc:Text")],
            }
        ],
    }
    source = tmp_path / "images.json"
    source.write_text(json.dumps(doc))
    code, _, err = cli("convert", str(source), str(tmp_path / "o.h5"), "--split", "train")
    assert code == 0, err
    with h5ml.open(tmp_path / "o.h5") as dataset:
        values = dataset["train"].read(slice(None))
        assert values["image"].shape == (3, 3, 4, 3) and values["image"].dtype == np.uint8
        assert values["image"][:, 0, 0, 0].tolist() == [0, 40, 80] and list(values["file"]) == [
            "0.png",
            "1.png",
            "2.png",
        ]
    Image.fromarray(np.zeros((5, 4, 3), np.uint8)).save(tmp_path / "img" / "3.png")
    code, _, err = cli("convert", str(source), str(tmp_path / "p.h5"), "--split", "train")
    assert code == 2 and "(5, 4, 3)" in err and "(3, 4, 3)" in err and "record 3" in err
    assert not (tmp_path / "p.h5").exists()


def test_convert_of_a_parquet_croissant_and_a_missing_value(tmp_path: Path) -> None:
    """Parquet-backed records convert; a CSV cell left empty is refused with its record and field, nothing written."""
    import pandas as pd

    source = csv_croissant(tmp_path)
    frame = pd.DataFrame(
        {"x": [1, 3, 5], "y": [2.5, 4.5, 6.5], "label": ["cat", "dog", "dog"], "text": ["a", "b", "c"]}
        | {"split": ["train", "train", "test"]}
    )
    frame.to_parquet(tmp_path / "rows.parquet")
    doc = json.loads(source.read_text())
    doc["distribution"][0].update(
        {
            "@id": "rows.parquet",
            "name": "rows.parquet",
            "contentUrl": "rows.parquet",
            "encodingFormat": "application/x-parquet",
            "sha256": hashlib.sha256((tmp_path / "rows.parquet").read_bytes()).hexdigest(),
        }
    )
    for field in doc["recordSet"][2]["field"]:
        field["source"]["fileObject"]["@id"] = "rows.parquet"
    parquet = tmp_path / "parquet.json"
    parquet.write_text(json.dumps(doc))
    code, _, err = cli("convert", str(parquet), str(tmp_path / "p.h5"))
    assert code == 0, err
    with h5ml.open(tmp_path / "p.h5") as dataset:
        assert dataset["train"].read(slice(None))["y"].tolist() == [2.5, 4.5]
        assert list(dataset["test"].read(slice(None))["text"]) == ["c"]
    csv = tmp_path / "rows.csv"
    csv.write_text("x,y,label,text,split\n1,2.5,cat,hello,train\n3,,dog,world,train\n")
    doc = json.loads(source.read_text())
    doc["distribution"][0]["sha256"] = hashlib.sha256(csv.read_bytes()).hexdigest()
    source.write_text(json.dumps(doc))
    code, _, err = cli("convert", str(source), str(tmp_path / "o.h5"))
    assert code == 2 and "record 1" in err and "'rows/y' has no value" in err
    assert not (tmp_path / "o.h5").exists()


def test_convert_takes_the_card_and_asks_which_license_or_language(tmp_path: Path) -> None:
    """Several licenses, or a description in several languages but not English, are not chosen for the user (§4.2)."""
    source = csv_croissant(tmp_path, version="1.1")
    doc = json.loads(source.read_text())
    doc["license"] = ["CC-BY-4.0", "MIT"]
    source.write_text(json.dumps(doc))
    code, _, err = cli("convert", str(source), str(tmp_path / "o.h5"))
    assert code == 2 and "2 licenses" in err and "--license" in err
    assert cli("convert", str(source), str(tmp_path / "o.h5"), "--license", "MIT")[0] == 0
    with h5ml.open(tmp_path / "o.h5") as dataset:
        assert (dataset.metadata.license, dataset.metadata.source) == ("MIT", str(source))
    del doc["license"]
    doc["description"] = {"fr": "Trois lignes.", "de": "Drei Zeilen."}
    source.write_text(json.dumps(doc))
    code, _, err = cli("convert", str(source), str(tmp_path / "p.h5"))
    assert code == 2 and "['de', 'fr']" in err and "--description" in err
    doc["description"] = {"fr": "Trois lignes.", "en": "Three rows."}
    source.write_text(json.dumps(doc))
    assert cli("convert", str(source), str(tmp_path / "p.h5"))[0] == 0
    with h5ml.open(tmp_path / "p.h5") as dataset:
        assert (dataset.metadata.description, dataset.metadata.license) == ("Three rows.", "NOASSERTION")


def test_convert_of_audio_says_that_mlcroissant_needs_librosa(tmp_path: Path) -> None:
    """sc:AudioObject records need librosa inside mlcroissant; without it the refusal comes before any record."""
    import importlib.util

    if importlib.util.find_spec("librosa") is not None:
        pytest.skip("librosa is installed: mlcroissant can decode audio here")
    (tmp_path / "wav").mkdir()
    (tmp_path / "wav" / "a.wav").write_bytes(b"RIFF")
    doc = {
        "@context": CONTEXT_1_0,
        "@type": "sc:Dataset",
        "conformsTo": "http://mlcommons.org/croissant/1.0",
        "name": "clips",
        "description": "Clips.",
        "license": "CC0-1.0",
        "citeAs": "Clips",
        "datePublished": "2026-01-01",
        "url": "https://example.org/clips",
        "distribution": [
            {
                "@type": "cr:FileSet",
                "@id": "wavs",
                "name": "wavs",
                "encodingFormat": "audio/wav",
                "includes": "wav/*.wav",
            }
        ],
        "recordSet": [
            {
                "@type": "cr:RecordSet",
                "@id": "clips",
                "name": "clips",
                "field": [
                    {
                        "@type": "cr:Field",
                        "@id": "clips/audio",
                        "name": "audio",
                        "dataType": "sc:AudioObject",
                        "source": {"fileSet": {"@id": "wavs"}, "extract": {"fileProperty": "content"}},
                    }
                ],
            }
        ],
    }
    source = tmp_path / "clips.json"
    source.write_text(json.dumps(doc))
    code, _, err = cli("convert", str(source), str(tmp_path / "o.h5"), "--split", "train")
    assert code == 2 and "librosa" in err and "sc:AudioObject" in err and "h5ml convert AUDIO_FOLDER" in err
    assert not (tmp_path / "o.h5").exists()
