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

#: Deprecations inside mlcroissant 1.1.1 (rdflib 7's ConjunctiveGraph), not in our code.
pytestmark = [pytest.mark.filterwarnings("ignore:ConjunctiveGraph is deprecated:DeprecationWarning")]


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
