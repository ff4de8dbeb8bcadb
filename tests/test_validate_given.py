"""``h5ml validate`` of the FILEs CI and hooks give it: names that are not UTF-8, a file twice, a shard with its index.

Every file is real (written by ``h5ml.write``, damaged with h5py: the files of
``tests/test_validate_formats.py``, whose fixtures and helpers this module
takes), every run is the real command line (``h5ml.tools.cli.run``, with its
child processes). Standard output is a strict UTF-8 stream over bytes, as a
UTF-8 terminal or pipe is: a string UTF-8 cannot encode fails there, as it
fails in CI. Every SARIF report is checked against the SARIF 2.1.0 schema,
every JSON report against ``schema/h5ml-report-1.0.schema.json``.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from junitparser import JUnitXml

from _shards import columns, write_sharded
from h5ml.spec import schemas
from h5ml.tools import cli
from test_validate_formats import files, here, run_cli, sarif_schema

__all__ = ["files", "here", "sarif_schema"]  # the fixtures taken from test_validate_formats

FORMATS = ("text", "json", "sarif", "junit")


def run_utf8(*args: str) -> tuple[int, bytes, str]:
    """Run the command line with a strict UTF-8 standard output; return (exit code, its bytes, stderr)."""
    raw = io.BytesIO()
    out = io.TextIOWrapper(raw, encoding="utf-8", errors="strict", newline="")
    err = io.StringIO()
    code = cli.run(list(args), out, err)
    out.flush()
    return code, raw.getvalue(), err.getvalue()


def _document(fmt: str, data: bytes, schema: jsonschema.protocols.Validator) -> Any:
    """The report parsed from its bytes (strict UTF-8), checked against its schema (SARIF, JSON) or XML parser."""
    text = data.decode("utf-8")  # strict: a lone surrogate or a raw byte 0xff fails here
    if fmt == "text":
        return text
    if fmt == "junit":
        ET.fromstring(data)  # well-formed XML
        return JUnitXml.fromstring(data)
    document = json.loads(text)
    validator = schema if fmt == "sarif" else schemas.validator_for("report")
    assert [e.message for e in validator.iter_errors(document)] == []
    return document


def _name_shown(fmt: str, document: Any) -> str:
    """The name the report gives the one file it checked."""
    if fmt == "text":
        return str(document.splitlines()[-1].split(": INVALID")[0])
    if fmt == "json":
        return str(document["files"][0]["path"])
    if fmt == "sarif":
        return str(document["runs"][0]["artifacts"][0]["properties"]["path"])
    return str(next(iter(document)).name)


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_name_that_is_not_utf8_is_written_escaped_to_stdout_and_to_output(
    files: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sarif_schema: jsonschema.protocols.Validator, fmt: str
) -> None:
    """bad<0xff>.h5 (a Linux name that is not UTF-8): valid UTF-8, JSON, XML; the byte shown as \\xff; exit 1."""
    name = os.fsdecode(b"bad\xff.h5")  # "bad\udcff.h5": the lone surrogate Python holds the byte as
    shutil.copy(files / "bad.h5", tmp_path / name)
    assert os.fsencode(os.listdir(tmp_path)[0]) == b"bad\xff.h5"
    monkeypatch.chdir(tmp_path)
    code, data, err = run_utf8("validate", "--format", fmt, name)
    assert (code, err) == (1, "")
    document = _document(fmt, data, sarif_schema)
    assert _name_shown(fmt, document) == "bad\\xff.h5"
    if fmt == "sarif":
        assert document["runs"][0]["artifacts"][0]["location"]["uri"] == "bad%FF.h5"  # the byte, percent-encoded
        assert document["runs"][0]["results"][0]["message"]["text"].startswith("bad\\xff.h5 has no completion marker")
    report = tmp_path / "reports" / f"report.{fmt}"
    report.parent.mkdir()
    code, written, err = run_utf8("validate", "--format", fmt, "--output", str(report), name)
    assert (code, written, err) == (1, b"", "")
    assert report.read_bytes() == data  # the same report, in a file


def test_a_file_given_twice_is_checked_once(
    here: Path, tmp_path: Path, sarif_schema: jsonschema.protocols.Validator
) -> None:
    """bad.h5, ./bad.h5 and a symbolic link to it: one artifact, results not doubled, one JSON entry, one suite."""
    link = tmp_path / "link.h5"
    link.symlink_to(here / "bad.h5")
    once = json.loads(run_cli("validate", "--format", "sarif", "bad.h5")[1])["runs"][0]
    code, data, err = run_utf8("validate", "--format", "sarif", "bad.h5", "./bad.h5", str(link))
    assert code == 1
    assert err == (
        "h5ml: note: ./bad.h5 is the file bad.h5 given before: it is checked once\n"
        f"h5ml: note: {link} is the file bad.h5 given before: it is checked once\n"
    )
    run = _document("sarif", data, sarif_schema)["runs"][0]
    assert [a["location"]["uri"] for a in run["artifacts"]] == ["bad.h5"]
    assert run["results"] == once["results"] and len(run["results"]) == 4
    code, data, _ = run_utf8("validate", "--format", "json", "bad.h5", "./bad.h5", str(link))
    report = _document("json", data, sarif_schema)
    assert code == 1 and [f["path"] for f in report["files"]] == ["bad.h5"] and report["summary"]["files"] == 1
    code, data, _ = run_utf8("validate", "--format", "junit", "good.h5", "bad.h5", "./bad.h5", "good.h5")
    assert code == 1 and [s.name for s in _document("junit", data, sarif_schema)] == ["good.h5", "bad.h5"]
    code, out, _ = run_cli("validate", "bad.h5", "./bad.h5")
    assert code == 1 and out.count("bad.h5: INVALID") == 1 and "files checked" not in out
    hard = tmp_path / "hard.h5"
    os.link(here / "bad.h5", hard)  # a hard link: another name of the same file (one inode)
    code, out, err = run_cli("validate", "bad.h5", str(hard))
    assert code == 1 and out.count(": INVALID") == 1 and "is the file bad.h5 given before" in err


def test_a_shard_given_with_its_index_is_checked_once_as_its_shard(
    here: Path, sarif_schema: jsonschema.protocols.Validator
) -> None:
    """A shard before and one after their index: each checked once, under the index; JSON records them."""
    first, second = "./sharded/train/train-00000.h5", "sharded/train/train-00001.h5"
    args = (first, "sharded/index.json", second)
    code, data, err = run_utf8("validate", "--format", "json", *args)
    assert (code, err) == (1, "")
    (index,) = _document("json", data, sarif_schema)["files"]
    shard_paths = [s["path"] for s in index["shards"]]
    assert [Path(p).name for p in shard_paths] == ["train-00000.h5", "train-00001.h5"]
    assert index["given_shards"] == [
        {"path": first, "shard": shard_paths[0]},
        {"path": second, "shard": shard_paths[1]},
    ]
    code, data, _ = run_utf8("validate", "--format", "sarif", *args)
    run = _document("sarif", data, sarif_schema)["runs"][0]
    uris = [a["location"]["uri"] for a in run["artifacts"]]
    assert code == 1 and uris == ["sharded/index.json", "sharded/train/train-00000.h5", second]
    assert run["artifacts"][0]["properties"]["givenShards"] == [first, second]
    assert [r["ruleId"] for r in run["results"]].count("E106") == 1  # the invalid shard's issue, once
    code, data, _ = run_utf8("validate", "--format", "junit", *args)
    names = [s.name for s in _document("junit", data, sarif_schema)]
    assert code == 1 and names == ["sharded/index.json", "sharded/train/train-00000.h5", second]
    code, out, _ = run_cli("validate", *args)
    assert code == 1
    assert out.count(f"{second}: INVALID") == 1 and out.count("sharded/train/train-00000.h5: VALID") == 1
    assert f"{first}: checked above, as the shard sharded/train/train-00000.h5 of sharded/index.json" in out
    # the shards are named below the index as given, not by their absolute paths (their messages may name those)
    assert [line for line in out.splitlines() if line.startswith(str(here))] == []


def test_shards_are_named_below_the_index_as_given_and_shallow_shards_checks_a_given_shard(here: Path) -> None:
    """The folder sharded: its shards shown as sharded/train/...; --shallow-shards checks a given shard alone."""
    code, data, _ = run_utf8("validate", "--format", "junit", "sharded")
    assert code == 1
    assert [s.name for s in JUnitXml.fromstring(data)] == [
        "sharded",
        "sharded/train/train-00000.h5",
        "sharded/train/train-00001.h5",
    ]
    code, out, _ = run_cli(
        "validate", "--format", "json", "--shallow-shards", "sharded", "sharded/train/train-00001.h5"
    )
    entries = json.loads(out)["files"]
    assert code == 1 and [e["path"] for e in entries] == ["sharded", "sharded/train/train-00001.h5"]
    assert entries[0]["shards"] == [] and "given_shards" not in entries[0]
    assert [i["code"] for i in entries[1]["issues"]].count("E106") == 1


def test_a_given_shard_its_index_refuses_to_check_is_checked_on_its_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A shard that is a link out of the dataset's folder: the index says E170 and skips it; given, it is checked."""
    write_sharded(tmp_path / "ds", columns(6), (4, 2))
    shard = tmp_path / "ds" / "train" / "train-00001.h5"
    shard.rename(tmp_path / "outside.h5")
    shard.symlink_to(tmp_path / "outside.h5")
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli("validate", "--format", "json", "outside.h5", "ds/index.json")
    index, outside = json.loads(out)["files"]
    assert (code, err) == (1, "")
    assert index["path"] == "ds/index.json" and "E170" in [i["code"] for i in index["issues"]]
    assert [Path(s["path"]).name for s in index["shards"]] == ["train-00000.h5"] and "given_shards" not in index
    assert outside["path"] == "outside.h5" and outside["valid"] is True  # checked last, on its own, not dropped
