"""``h5ml convert`` of hostile or unusual Croissant input: no network, no file outside the folder, exact values.

Real JSON-LD and CSV files in tmp_path, the real CLI (``h5ml.tools.cli.run``)
and the real ``mlcroissant``. Remote URLs point at a loopback TCP listener of
the test's own, which counts the connections it gets: a refusal must come
before mlcroissant (or the JSON-LD parser under it) opens any.
"""

from __future__ import annotations

import copy
import hashlib
import io
import json
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import h5ml
from h5ml.ingest.croissant.vocabulary import CONTEXT
from h5ml.tools.cli import run

mlc = pytest.importorskip("mlcroissant")

#: Deprecations inside mlcroissant 1.1.1, not in our code: rdflib 7's ConjunctiveGraph, pandas' inplace keyword.
pytestmark = [
    pytest.mark.filterwarnings("ignore:ConjunctiveGraph is deprecated:DeprecationWarning"),
    pytest.mark.filterwarnings("ignore:The inplace keyword in DataFrame.reset_index is deprecated"),
]


def cli(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = run(list(args), out, err)
    return code, out.getvalue(), err.getvalue()


def croissant(folder: Path, csv_text: str, types: dict[str, str], *, name: str = "rows.json") -> dict[str, Any]:
    """A Croissant 1.1 document of one CSV file ``rows.csv`` (written with ``csv_text``), one field per column."""
    csv = folder / "rows.csv"
    csv.write_bytes(csv_text.encode("utf-8"))
    fields = [
        {
            "@type": "cr:Field",
            "@id": f"rows/{column}",
            "name": column,
            "dataType": kind,
            "source": {"fileObject": {"@id": "rows.csv"}, "extract": {"column": column}},
        }
        for column, kind in types.items()
    ]
    return {
        "@context": dict(CONTEXT),
        "@type": "sc:Dataset",
        "conformsTo": "http://mlcommons.org/croissant/1.1",
        "name": "rows",
        "description": "Rows.",
        "license": "CC0-1.0",
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
        "recordSet": [{"@type": "cr:RecordSet", "@id": "rows", "name": "rows", "field": fields}],
    }


def save(folder: Path, doc: dict[str, Any], name: str = "rows.json") -> Path:
    path = folder / name
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


class Listener:
    """A TCP listener on 127.0.0.1 (port 0: any free port), accepting in a thread and counting every connection."""

    def __init__(self) -> None:
        self.server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.server.bind(("127.0.0.1", 0))
        self.server.listen(64)
        self.port = self.server.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.accepted = 0
        self.stopping = False
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self) -> None:
        while True:
            connection, _ = self.server.accept()
            if self.stopping:
                connection.close()
                return
            self.accepted += 1
            connection.close()  # a client that got in fails at once instead of waiting for an answer

    def connections(self) -> int:
        """The connections so far: stops the thread with a connection of its own, not counted."""
        self.stopping = True
        with socket.create_connection(("127.0.0.1", self.port)):
            pass
        self.thread.join()
        self.server.close()
        return self.accepted


@pytest.fixture
def listener() -> Iterator[Listener]:
    server = Listener()
    yield server
    if not server.stopping:
        server.connections()


def _respell(doc: dict[str, Any], url: str, spelling: str) -> dict[str, Any]:
    """``doc`` with the CSV's contentUrl set to ``url``, written the way ``spelling`` says."""
    doc = copy.deepcopy(doc)
    node = doc["distribution"][0]
    del node["contentUrl"]
    if spelling == "contentUrl":
        node["contentUrl"] = url
    elif spelling in ("sc:contentUrl", "https://schema.org/contentUrl", "http://schema.org/contentUrl"):
        node[spelling] = url
    elif spelling == "alias":
        doc["@context"]["link"] = "sc:contentUrl"
        node["link"] = url
    elif spelling == "list":
        node["contentUrl"] = [url]
    elif spelling == "sc:distribution":
        node["contentUrl"] = url
        doc["sc:distribution"] = doc.pop("distribution")
    elif spelling == "fileset-includes":
        node["contentUrl"] = "rows.csv"
        doc["distribution"].append(
            {
                "@type": "cr:FileSet",
                "@id": "more",
                "name": "more",
                "encodingFormat": "text/csv",
                "includes": [f"{url}/*.csv"],
            }
        )
        for field in doc["recordSet"][0]["field"]:
            field["source"] = {"fileSet": {"@id": "more"}, "extract": field["source"]["extract"]}
    elif spelling == "fileset-in-remote-archive":
        node.update({"contentUrl": url + "/rows.zip", "encodingFormat": "application/zip"})
        node["@id"] = node["name"] = "rows.zip"
        doc["distribution"].append(
            {
                "@type": "cr:FileSet",
                "@id": "csvs",
                "name": "csvs",
                "containedIn": {"@id": "rows.zip"},
                "encodingFormat": "text/csv",
                "includes": "*.csv",
            }
        )
        for field in doc["recordSet"][0]["field"]:
            field["source"] = {"fileSet": {"@id": "csvs"}, "extract": field["source"]["extract"]}
    elif spelling == "context-url":
        node["contentUrl"] = "rows.csv"
        doc["@context"] = url + "/context.jsonld"
    elif spelling == "context-import":
        node["contentUrl"] = "rows.csv"
        doc["@context"] = {**doc["@context"], "@import": url + "/context.jsonld"}
    else:
        raise AssertionError(spelling)
    return doc


SPELLINGS = [
    "contentUrl",
    "sc:contentUrl",
    "https://schema.org/contentUrl",
    "http://schema.org/contentUrl",
    "alias",
    "list",
    "sc:distribution",
    "fileset-includes",
    "fileset-in-remote-archive",
    "context-url",
    "context-import",
]


@pytest.mark.parametrize("spelling", SPELLINGS)
def test_a_remote_file_in_any_spelling_is_refused_before_any_connection(
    tmp_path: Path, listener: Listener, spelling: str
) -> None:
    """Every way of writing a remote URL is refused, by name, and the listener behind the URL gets no connection."""
    doc = _respell(croissant(tmp_path, "x\n1\n2\n", {"x": "sc:Integer"}), listener.url, spelling)
    source = save(tmp_path, doc)
    code, _, err = cli("convert", str(source), str(tmp_path / "o.h5"), "--split", "train")
    assert listener.connections() == 0
    assert code == 2 and err.startswith("h5ml: error: ") and "internal error" not in err, err
    if spelling == "http://schema.org/contentUrl":  # not schema.org's IRI (https): mlcroissant finds no contentUrl
        assert 'Property "https://schema.org/contentUrl" is mandatory' in err, err
    else:
        assert f"127.0.0.1:{listener.port}" in err, err
    assert not (tmp_path / "o.h5").exists()


def test_a_file_object_with_several_content_urls_is_refused_before_any_connection(
    tmp_path: Path, listener: Listener
) -> None:
    """contentUrl ["rows.csv", URL]: mlcroissant read the first and dropped the rest; which one is meant is not guessed."""
    doc = croissant(tmp_path, "x\n1\n2\n", {"x": "sc:Integer"})
    doc["distribution"][0]["contentUrl"] = ["rows.csv", f"{listener.url}/x.csv"]
    code, _, err = cli("convert", str(save(tmp_path, doc)), str(tmp_path / "o.h5"), "--split", "train")
    assert listener.connections() == 0
    assert code == 2 and "cr:FileObject 'rows.csv' has 2 contentUrls (['rows.csv', 'http://127.0.0.1:" in err, err
    assert "which one is meant is yours to say" in err and not (tmp_path / "o.h5").exists()


def test_boolean_text_is_parsed_not_cast_with_bool(tmp_path: Path) -> None:
    """'False' and '0' are false (mlcroissant's bool() made every non-empty text true); a non-boolean is refused."""
    texts = ["True", "False", "0", "1", "yes", "NO", " false ", "TRUE"]
    csv = "x,flag\n" + "".join(f"{i},{t}\n" for i, t in enumerate(texts))
    source = save(tmp_path, croissant(tmp_path, csv, {"x": "sc:Integer", "flag": "sc:Boolean"}))
    code, _, err = cli("convert", str(source), str(tmp_path / "o.h5"), "--split", "train")
    assert code == 0, err
    with h5ml.open(tmp_path / "o.h5") as dataset:
        values = dataset["train"].read(slice(None))
        assert values["flag"].dtype == np.bool_
        assert values["flag"].tolist() == [True, False, False, True, True, False, False, True]
        assert values["x"].tolist() == list(range(8))
    source = save(tmp_path, croissant(tmp_path, "x,flag\n0,true\n1,maybe\n", {"x": "sc:Integer", "flag": "sc:Boolean"}))
    code, _, err = cli("convert", str(source), str(tmp_path / "p.h5"), "--split", "train")
    assert code == 2 and "record 1" in err and "'rows/flag' (sc:Boolean) holds 'maybe'" in err, err
    assert not (tmp_path / "p.h5").exists()


def test_booleans_of_a_boolean_column_stay_exact(tmp_path: Path) -> None:
    """A column pandas reads as booleans (True/False only), and one of 0/1, give the same values as their text."""
    source = save(
        tmp_path,
        croissant(tmp_path, "a,b\nFalse,0\nTrue,1\nfalse,0\n", {"a": "sc:Boolean", "b": "sc:Boolean"}),
    )
    code, _, err = cli("convert", str(source), str(tmp_path / "o.h5"), "--split", "train")
    assert code == 0, err
    with h5ml.open(tmp_path / "o.h5") as dataset:
        values = dataset["train"].read(slice(None))
        assert values["a"].tolist() == [False, True, False] and values["b"].tolist() == [False, True, False]
    import pandas as pd

    pd.DataFrame({"a": [True, False, True]}).to_parquet(tmp_path / "rows.parquet")  # booleans as Parquet stores them
    doc = croissant(tmp_path, "a\n", {"a": "sc:Boolean"})
    doc["distribution"][0].update(
        {
            "@id": "rows.parquet",
            "name": "rows.parquet",
            "contentUrl": "rows.parquet",
            "encodingFormat": "application/x-parquet",
            "sha256": hashlib.sha256((tmp_path / "rows.parquet").read_bytes()).hexdigest(),
        }
    )
    doc["recordSet"][0]["field"][0]["source"]["fileObject"]["@id"] = "rows.parquet"
    code, _, err = cli("convert", str(save(tmp_path, doc)), str(tmp_path / "p.h5"), "--split", "train")
    assert code == 0, err
    with h5ml.open(tmp_path / "p.h5") as dataset:
        assert dataset["train"].read(slice(None))["a"].tolist() == [True, False, True]


def test_file_urls_and_paths_outside_the_folder_are_refused(tmp_path: Path) -> None:
    """file:// URLs, '..', absolute paths and links to elsewhere are refused by name; nothing outside is read."""
    folder, elsewhere = tmp_path / "meta", tmp_path / "elsewhere"
    folder.mkdir()
    elsewhere.mkdir()
    doc = croissant(folder, "x\n1\n2\n", {"x": "sc:Integer"})
    (elsewhere / "rows.csv").write_bytes((folder / "rows.csv").read_bytes())
    (folder / "link.csv").symlink_to(elsewhere / "rows.csv")
    for url, said in [
        ((folder / "rows.csv").as_uri(), "a file:// URL"),
        ("../elsewhere/rows.csv", "outside the JSON-LD's folder"),
        (str(elsewhere / "rows.csv"), "outside the JSON-LD's folder"),
        ("link.csv", "outside the JSON-LD's folder"),
    ]:
        doc["distribution"][0]["contentUrl"] = url
        source = save(folder, doc)
        code, _, err = cli("convert", str(source), str(tmp_path / "o.h5"), "--split", "train")
        assert code == 2 and "'rows.csv'" in err and repr(url) in err and said in err, (url, err)
        assert not (tmp_path / "o.h5").exists()
    doc["distribution"][0]["contentUrl"] = "rows.csv"  # inside: converts
    assert cli("convert", str(save(folder, doc)), str(tmp_path / "o.h5"), "--split", "train")[0] == 0
    with h5ml.open(tmp_path / "o.h5") as dataset:
        assert dataset["train"].read(slice(None))["x"].tolist() == [1, 2]


def test_file_sets_that_reach_outside_the_folder_are_refused(tmp_path: Path) -> None:
    """A FileSet's includes with '..' or an absolute path, or matching a link to elsewhere, is refused."""
    folder, elsewhere = tmp_path / "meta", tmp_path / "elsewhere"
    (folder / "csv").mkdir(parents=True)
    elsewhere.mkdir()
    doc = croissant(folder, "x\n1\n", {"x": "sc:Integer"})
    (folder / "rows.csv").rename(folder / "csv" / "a.csv")
    doc["distribution"] = [
        {"@type": "cr:FileSet", "@id": "csvs", "name": "csvs", "encodingFormat": "text/csv", "includes": "csv/*.csv"}
    ]
    for field in doc["recordSet"][0]["field"]:
        field["source"]["fileSet"] = {"@id": "csvs"}
        del field["source"]["fileObject"]
    assert cli("convert", str(save(folder, doc)), str(tmp_path / "o.h5"), "--split", "train")[0] == 0
    (elsewhere / "b.csv").write_text("x\n7\n")
    (folder / "csv" / "b.csv").symlink_to(elsewhere / "b.csv")
    for pattern, named in [("../elsewhere/*.csv", "../elsewhere/*.csv"), ("/etc/*", "/etc/*"), ("csv/*.csv", "b.csv")]:
        doc["distribution"][0]["includes"] = pattern
        code, _, err = cli("convert", str(save(folder, doc)), str(tmp_path / "p.h5"), "--split", "train")
        assert code == 2 and "cr:FileSet 'csvs'" in err and named in err and "outside the JSON-LD's folder" in err, err
        assert not (tmp_path / "p.h5").exists()


def test_a_byte_order_mark_before_the_json_or_the_csv_header_is_no_part_of_a_name(tmp_path: Path) -> None:
    """A UTF-8 BOM (utf-8-sig) at the start of metadata.json and of the CSV: detected, converted, names clean."""
    doc = croissant(tmp_path, "\ufeffx,y\n1,2.5\n3,4.5\n", {"x": "sc:Integer", "y": "sc:Float"})
    assert (tmp_path / "rows.csv").read_bytes().startswith(b"\xef\xbb\xbf")
    source = tmp_path / "rows.json"
    source.write_bytes(b"\xef\xbb\xbf" + json.dumps(doc).encode("utf-8"))
    code, _, err = cli("convert", str(source), str(tmp_path / "o.h5"), "--split", "train")  # detected as Croissant
    assert code == 0, err
    with h5ml.open(tmp_path / "o.h5") as dataset:
        assert sorted(dataset["train"].every_feature()) == ["x", "y"]
        values = dataset["train"].read(slice(None))
        assert values["x"].tolist() == [1, 3] and values["y"].tolist() == [2.5, 4.5]
        assert dataset.metadata.name == "rows"


@pytest.mark.parametrize("cell", ["NA", "NULL", "", "N/A"])
def test_a_missing_number_is_refused_with_its_field_and_record(tmp_path: Path, cell: str) -> None:
    """NA, NULL, N/A or an empty cell in a numeric column: refused as a missing value, never stored as NaN."""
    doc = croissant(tmp_path, f"x,y\n1,2.5\n3,{cell}\n", {"x": "sc:Integer", "y": "sc:Float"})
    code, _, err = cli("convert", str(save(tmp_path, doc)), str(tmp_path / "o.h5"), "--split", "train")
    assert code == 2 and "record 1 of record set 'rows': field 'rows/y' has no value" in err, err
    assert "NA, NULL" in err and "traceback" not in err.lower() and "sample source raised" not in err
    assert not (tmp_path / "o.h5").exists()


def test_a_failing_sample_source_is_reported_without_pointing_at_a_traceback(tmp_path: Path) -> None:
    """convert_samples: a source that raises is named with its exception; no traceback is promised (a CLI has none)."""

    def samples() -> Iterator[dict[str, Any]]:
        yield {"x": 1}
        raise ValueError("disk on fire")

    with pytest.raises(h5ml.IngestError) as caught:
        h5ml.ingest.convert_samples(samples(), tmp_path / "o.h5")
    message = str(caught.value)
    assert "ValueError: disk on fire after 1 sample(s)" in message and "traceback" not in message.lower()
    assert isinstance(caught.value.__cause__, ValueError) and not (tmp_path / "o.h5").exists()


def _cycle(doc: dict[str, Any], kind: str) -> dict[str, Any]:
    doc = copy.deepcopy(doc)
    fields = doc["recordSet"][0]["field"]
    if kind == "fields-reference-each-other":
        fields[0]["references"] = {"field": {"@id": "rows/y"}}
        fields[1]["references"] = {"field": {"@id": "rows/x"}}
    elif kind == "fields-source-each-other":
        fields[0]["source"] = {"field": {"@id": "rows/y"}}
        fields[1]["source"] = {"field": {"@id": "rows/x"}}
    elif kind == "record-sets-source-each-other":
        doc["recordSet"].append(
            {
                "@type": "cr:RecordSet",
                "@id": "other",
                "name": "other",
                "field": [
                    {
                        "@type": "cr:Field",
                        "@id": "other/a",
                        "name": "a",
                        "dataType": "sc:Integer",
                        "source": {"field": {"@id": "rows/x"}},
                    }
                ],
            }
        )
        fields[0]["source"] = {"field": {"@id": "other/a"}}
    elif kind == "file-contained-in-itself":
        doc["distribution"][0]["containedIn"] = {"@id": "rows.csv"}
    elif kind == "id-is-a-number":
        fields[0]["@id"] = 5
    elif kind == "source-is-a-string":
        fields[0]["source"] = "rows.csv"
    else:
        raise AssertionError(kind)
    return doc


@pytest.mark.parametrize(
    "kind",
    [
        "fields-reference-each-other",
        "fields-source-each-other",
        "record-sets-source-each-other",
        "file-contained-in-itself",
        "id-is-a-number",
        "source-is-a-string",
    ],
)
def test_what_mlcroissant_cannot_read_is_an_input_error(tmp_path: Path, kind: str) -> None:
    """Circular references and malformed JSON-LD, on which mlcroissant raises KeyError or TypeError: a clear h5ml error."""
    doc = _cycle(croissant(tmp_path, "x,y\n1,2\n", {"x": "sc:Integer", "y": "sc:Integer"}), kind)
    source = save(tmp_path, doc)
    code, _, err = cli("convert", str(source), str(tmp_path / "o.h5"), "--split", "train")
    assert code == 2 and err.startswith(f"h5ml: error: {source}: mlcroissant ") and "internal error" not in err, err
    assert "fix the JSON-LD" in err and not (tmp_path / "o.h5").exists()
    with pytest.raises(h5ml.IngestError) as caught:
        h5ml.ingest.convert_croissant(source, tmp_path / "o.h5", split="train")
    assert caught.value.path == str(source) and caught.value.__cause__ is not None


def test_file_ids_of_h5ml_croissant_go_through_the_id_check(tmp_path: Path) -> None:
    """`h5ml croissant` of a file named with '#', '%', '?': percent-encoded @id, valid; whitespace: refused (§5.1.1)."""
    odd = tmp_path / "a#b%c?.h5"
    h5ml.write(odd, {"train": {"x": np.arange(3)}}, {"name": "odd"})
    output = tmp_path / "odd.json"
    code, _, err = cli("croissant", str(odd), "-o", str(output))
    assert code == 0, err
    doc = json.loads(output.read_text(encoding="utf-8"))
    (node,) = doc["distribution"]
    assert (node["@id"], node["name"], node["contentUrl"]) == ("files/a%23b%25c%3F.h5", "a#b%c?.h5", "a#b%c?.h5")
    assert doc["recordSet"][0]["field"][0]["source"]["fileObject"] == {"@id": "files/a%23b%25c%3F.h5"}
    assert [n.id for n in mlc.Dataset(jsonld=str(output)).metadata.distribution] == ["files/a%23b%25c%3F.h5"]
    spaced = tmp_path / "my data.h5"
    h5ml.write(spaced, {"train": {"x": np.arange(3)}}, {"name": "spaced"})
    code, _, err = cli("croissant", str(spaced), "-o", str(tmp_path / "spaced.json"))
    assert code == 2 and "the file name 'my data.h5' holds whitespace" in err and "rename the file" in err, err
    assert not (tmp_path / "spaced.json").exists()


def test_a_git_lfs_pointer_is_refused_instead_of_pulled(tmp_path: Path) -> None:
    """A file left as a Git LFS pointer: mlcroissant would run `git lfs pull` (the network); refused, named."""
    pointer = "version https://git-lfs.github.com/spec/v1\noid sha256:" + "0" * 64 + "\nsize 12\n"
    doc = croissant(tmp_path, pointer, {"x": "sc:Text"})
    code, _, err = cli("convert", str(save(tmp_path, doc)), str(tmp_path / "o.h5"), "--split", "train")
    assert code == 2 and "cr:FileObject 'rows.csv'" in err and "Git LFS pointer" in err and "git lfs pull" in err, err
    (tmp_path / "csv").mkdir()
    (tmp_path / "rows.csv").rename(tmp_path / "csv" / "a.csv")
    doc["distribution"] = [
        {"@type": "cr:FileSet", "@id": "csvs", "name": "csvs", "encodingFormat": "text/csv", "includes": "csv/*.csv"}
    ]
    for field in doc["recordSet"][0]["field"]:
        field["source"] = {"fileSet": {"@id": "csvs"}, "extract": field["source"]["extract"]}
    code, _, err = cli("convert", str(save(tmp_path, doc)), str(tmp_path / "o.h5"), "--split", "train")
    assert code == 2 and "cr:FileSet 'csvs'" in err and "a.csv, a Git LFS pointer" in err, err
    assert not (tmp_path / "o.h5").exists()


@pytest.mark.parametrize(
    ("column", "kind", "said"),
    [
        ("1\n1.5\n", "sc:Integer", "'rows/x' (int64) holds '1.5', which is no integer"),
        ("1\n300\n", "cr:Int8", "'rows/x' holds '300', outside the range of int8 (-128 to 127)"),
        ("1\n-1\n", "cr:UInt8", "'rows/x' holds '-1', outside the range of uint8 (0 to 255)"),
        ("1e40\n1\n", "cr:Float32", "beyond the largest float32"),
        ("1\nabc\n", "sc:Integer", "'rows/x' holds 'abc', which is no integer"),
        ("1\n1.0000000000000001\n", "sc:Integer", "(int64) holds '1.0000000000000001', which is no integer"),
        ("1\n0.99999999999999999\n", "sc:Integer", "(int64) holds '0.99999999999999999', which is no integer"),
        ("1\n9007199254740993.5\n", "sc:Integer", "(int64) holds '9007199254740993.5', which is no integer"),
        ("1e400\n1\n", "sc:Float", "'rows/x' holds '1e400', beyond the largest float64"),
        ("1\n1e309\n", "cr:Float64", "'rows/x' holds '1e309', beyond the largest float64"),
        ("1\n1e-50\n", "cr:Float32", "'rows/x' holds '1e-50', a nonzero number that float32 would store as 0"),
        ("1\n1e-9\n", "cr:Float16", "'rows/x' holds '1e-9', a nonzero number that float16 would store as 0"),
        ("1\n1_000\n", "sc:Integer", "'rows/x' holds '1_000', which is no integer h5ml reads (ASCII digits"),
        ("1\n\u0661\u0662\n", "sc:Integer", "'rows/x' holds '\u0661\u0662', which is no integer h5ml reads"),
        ("1\n1_0.5\n", "sc:Float", "'rows/x' holds '1_0.5', which is no number h5ml reads"),
    ],
)
def test_a_number_is_never_rounded_wrapped_or_overflowed(tmp_path: Path, column: str, kind: str, said: str) -> None:
    """Fractions, overflows, underflows to 0 and what only Python's lenient int()/float() read: refused, as written."""
    doc = croissant(tmp_path, "x\n" + column, {"x": kind})
    code, _, err = cli("convert", str(save(tmp_path, doc)), str(tmp_path / "o.h5"), "--split", "train")
    assert code == 2 and said in err and "internal error" not in err, err
    assert not (tmp_path / "o.h5").exists()


def test_numbers_keep_their_exact_values(tmp_path: Path) -> None:
    """Integers beyond 2**53 (also written 9007199254740993.0), the largest uint64, -inf, a subnormal: stored exactly."""
    csv = "a,b,c,d,e,f,g\n9007199254740993,18446744073709551615,0.1,2.0,9007199254740993.0,-inf,0.1\n"
    csv += "-5,0,-2.5e-300,3.0,1e3,1e-320,1.00000005960464477539062500001\n"  # g: just above a float32 halfway point
    types = {"a": "sc:Integer", "b": "cr:UInt64", "c": "sc:Float", "d": "cr:Int16", "e": "sc:Integer", "f": "sc:Float"}
    types["g"] = "cr:Float32"
    doc = croissant(tmp_path, csv, types)
    code, _, err = cli("convert", str(save(tmp_path, doc)), str(tmp_path / "o.h5"), "--split", "train")
    assert code == 0, err
    with h5ml.open(tmp_path / "o.h5") as dataset:
        values = dataset["train"].read(slice(None))
        assert values["a"].tolist() == [9007199254740993, -5] and values["a"].dtype == np.int64
        assert values["b"].tolist() == [18446744073709551615, 0] and values["b"].dtype == np.uint64
        assert values["c"].tolist() == [0.1, -2.5e-300] and values["d"].tolist() == [2, 3]
        assert values["d"].dtype == np.int16
        assert values["e"].tolist() == [9007199254740993, 1000] and values["f"].tolist() == [-np.inf, 1e-320]
        assert values["g"].tolist() == [np.float32(0.1), 1 + 2**-23] and values["g"].dtype == np.float32


def test_text_cells_that_look_like_numbers_keep_their_text(tmp_path: Path) -> None:
    """pandas parsed '007' and '1.50' as numbers before mlcroissant made text of them ('7', '1.5'): kept as written."""
    doc = croissant(tmp_path, "code,x\n007,1\n1.50,2\n", {"code": "sc:Text", "x": "sc:Integer"})
    code, _, err = cli("convert", str(save(tmp_path, doc)), str(tmp_path / "o.h5"), "--split", "train")
    assert code == 0, err
    with h5ml.open(tmp_path / "o.h5") as dataset:
        assert list(dataset["train"].read(slice(None))["code"]) == ["007", "1.50"]


def test_a_relative_json_ld_path_reads_its_file_set(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`h5ml convert rows.json` in the JSON-LD's own folder: its FileSet's files are found as with an absolute path."""
    doc = croissant(tmp_path, "x\n1\n", {"x": "sc:Integer"})
    (tmp_path / "csv").mkdir()
    (tmp_path / "rows.csv").rename(tmp_path / "csv" / "a.1.csv")
    (tmp_path / "csv" / "b.2.csv").write_text("x\n2\n")
    doc["distribution"] = [
        {"@type": "cr:FileSet", "@id": "csvs", "name": "csvs", "encodingFormat": "text/csv", "includes": "csv/*.csv"}
    ]
    for field in doc["recordSet"][0]["field"]:
        field["source"] = {"fileSet": {"@id": "csvs"}, "extract": field["source"]["extract"]}
    save(tmp_path, doc)
    monkeypatch.chdir(tmp_path)
    code, _, err = cli("convert", "rows.json", "o.h5", "--split", "train")
    assert code == 0, err
    with h5ml.open(tmp_path / "o.h5") as dataset:
        assert dataset["train"].read(slice(None))["x"].tolist() == [1, 2]


def test_json_nested_beyond_the_reader_is_an_input_error(tmp_path: Path) -> None:
    """A Croissant whose JSON nests too deeply for Python's reader: a clear error, not an internal one."""
    deep = tmp_path / "deep.json"
    deep.write_text('{"conformsTo": "http://mlcommons.org/croissant/1.1", "x": ' + "[" * 100_000 + "]" * 100_000 + "}")
    code, _, err = cli("convert", "--from", "croissant", str(deep), str(tmp_path / "o.h5"))
    assert code == 2 and err.startswith(f"h5ml: error: {deep}: its JSON nests") and "internal" not in err, err
    assert not (tmp_path / "o.h5").exists()


def test_a_card_spelled_with_aliases_or_full_iris_keeps_every_field(tmp_path: Path) -> None:
    """name, license and description under a @context alias or a full schema.org IRI reach the h5ml card."""
    doc = croissant(tmp_path, "x\n1\n2\n", {"x": "sc:Integer"})
    doc["@context"] = {**doc["@context"], "title": "sc:name", "lic": "sc:license"}
    doc["title"], doc["lic"] = doc.pop("name"), doc.pop("license")
    doc["https://schema.org/description"] = doc.pop("description")
    source = save(tmp_path, doc)
    code, _, err = cli("convert", str(source), str(tmp_path / "o.h5"), "--split", "train")
    assert code == 0, err
    with h5ml.open(tmp_path / "o.h5") as dataset:
        meta = dataset.metadata
        assert (meta.name, meta.license, meta.description, meta.homepage) == (
            "rows",
            "CC0-1.0",
            "Rows.",
            "https://example.org/rows",
        )
        assert dataset["train"].read(slice(None))["x"].tolist() == [1, 2]


def test_the_guides_example_converts_as_it_says(tmp_path: Path) -> None:
    """docs/guides/croissant.md's example: its CSV and JSON-LD give train 2 and test 1, the split field unstored."""
    guide = (Path(__file__).resolve().parents[1] / "docs" / "guides" / "croissant.md").read_text(encoding="utf-8")
    example = guide[guide.index("### An example") : guide.index("### Record set and splits")]
    csv_text = example.split("```text\n", 1)[1].split("```", 1)[0]
    json_text = example.split("```json\n", 1)[1].split("```", 1)[0]
    (tmp_path / "rows.csv").write_text(csv_text, encoding="utf-8")
    assert hashlib.sha256((tmp_path / "rows.csv").read_bytes()).hexdigest() in json_text
    source = tmp_path / "metadata.json"
    source.write_text(json_text, encoding="utf-8")
    code, _, err = cli("convert", str(source), str(tmp_path / "rows.h5"))
    assert code == 0, err
    with h5ml.open(tmp_path / "rows.h5") as dataset:
        assert sorted(dataset.every_split()) == ["test", "train"]
        train, test = dataset["train"].read(slice(None)), dataset["test"].read(slice(None))
        assert sorted(train) == ["score", "text"]
        assert list(train["text"]) == ["hello", "world"] and train["score"].tolist() == [0.5, 1.5]
        assert list(test["text"]) == ["again"] and test["score"].tolist() == [2.5]
    # cr:Split alone, which mlcroissant refuses: the message says what to write
    source.write_text(json_text.replace('["cr:Split", "sc:Text"]', '"cr:Split"'), encoding="utf-8")
    code, _, err = cli("convert", str(source), str(tmp_path / "again.h5"))
    assert code == 2 and '"dataType": ["cr:Split", "sc:Text"]' in err and "Traceback" not in err, err
    assert not (tmp_path / "again.h5").exists()
