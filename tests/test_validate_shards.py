"""``h5ml validate INDEX``: the index of a sharded dataset, every shard and their agreement (SPEC §12.1-§12.4).

Every dataset here is real: each shard written by ``h5ml.write`` (one split
per file), the index built from the shards with
:func:`h5ml.model.shard_files.describe_shard` and written with
:func:`h5ml.model.shard_index.write_index`, then damaged the way a real
dataset is (a shard deleted, rewritten, edited with h5py, a chunk's bytes
flipped, the JSON edited). The command line is the real one
(``h5ml.tools.cli.run``), with its child processes.
"""

from __future__ import annotations

import io
import json
import os
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import pytest

import h5ml
from h5ml.errors import ShardIndexError
from h5ml.model.shard_files import describe_shard
from h5ml.model.shard_index import ShardIndex, index_fingerprint, load_index, write_index
from h5ml.spec.constants import FORMAT_VERSION_STRING
from h5ml.spec.schemas import validator_for
from h5ml.tools import cli

_META = {"name": "toy", "license": "CC0-1.0", "description": "a sharded toy dataset"}
#: split -> samples of each shard: two splits, three shards.
_SIZES = {"train": (5, 3), "test": (4,)}


def run_cli(*args: str) -> tuple[int, str, str]:
    """Run the command line in this process; return (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    code = cli.run(list(args), out, err)
    return code, out.getvalue(), err.getvalue()


def _write_shard(path: Path, split: str, start: int, n: int, dtype: str = "float32", **meta: Any) -> None:
    """One shard: ``n`` samples of a dense feature ``x`` (rows of 3) and a label ``y``, from sample ``start``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    x = (np.arange(start, start + n, dtype=np.float64)[:, None] * np.ones((1, 3))).astype(dtype)
    y = np.arange(start, start + n, dtype=np.int64) % 2
    h5ml.write(path, {split: {"x": x, "y": y}}, metadata={**_META, **meta})


def _dataset(root: Path, overrides: Mapping[str, Mapping[str, Any]] | None = None) -> Path:
    """A sharded dataset in ``root``; ``overrides`` maps a shard path to keyword arguments of :func:`_write_shard`.

    The index takes its features and card from the first shard of each split, and each shard's entry from the
    shard itself, so that an overridden shard disagrees with the index only in what it overrides.
    """
    overrides = overrides or {}
    splits = {}
    card: Mapping[str, Any] = {}
    for split, sizes in _SIZES.items():
        entries, first, start = [], None, 0
        for position, n in enumerate(sizes):
            rel = f"{split}/{split}-{position:05d}.h5"
            _write_shard(root / rel, split, start, n, **overrides.get(rel, {}))
            description = describe_shard(root / rel)
            first = first or description
            entries.append(description.entry(rel))
            start += n
        assert first is not None
        card = card or first.card
        splits[split] = first.split_entry(tuple(entries))
    index = ShardIndex(
        format_version=FORMAT_VERSION_STRING, metadata=dict(card), splits=splits, fingerprint=index_fingerprint(splits)
    )
    return write_index(index, root)


def _edit_index(index: Path, edit: Any) -> None:
    """Apply ``edit(document)`` to the index's JSON text, keeping the fingerprint unless the edit changes it."""
    document = json.loads(index.read_text(encoding="utf-8"))
    edit(document)
    index.write_text(json.dumps(document), encoding="utf-8")


def _refingerprint(document: dict[str, Any]) -> None:
    splits = ShardIndex.model_validate({**document, "fingerprint": "sha256:" + "0" * 64}).splits
    document["fingerprint"] = index_fingerprint(splits)


def _json_report(*args: str) -> tuple[int, dict[str, Any]]:
    code, out, err = run_cli("validate", "--format", "json", *args)
    assert "Traceback" not in err
    report = json.loads(out)
    assert not list(validator_for("report").iter_errors(report))
    return code, report


def _issues(entry: Mapping[str, Any] | h5ml.FileReport) -> set[tuple[str, str]]:
    if isinstance(entry, h5ml.FileReport):
        return {(i.code, i.path) for i in entry.issues}
    return {(i["code"], i["path"]) for i in entry["issues"]}


def test_a_valid_sharded_dataset_is_valid_with_every_shard_checked(tmp_path: Path) -> None:
    """SPEC §12.1-R7, §12.1-R1: the index and every shard are checked; each shard's report sits under the index's."""
    index = _dataset(tmp_path / "ds")
    for given in (str(index), str(tmp_path / "ds")):
        code, report = _json_report(given)
        assert code == 0
        (entry,) = report["files"]
        assert (entry["kind"], entry["valid"], entry["readable"], entry["format_version"]) == (
            "index",
            True,
            True,
            "1.2",
        )
        assert [i["code"] for i in entry["issues"]] == []
        shards = entry["shards"]
        assert [Path(s["path"]).relative_to(tmp_path / "ds").as_posix() for s in shards] == [
            "test/test-00000.h5",
            "train/train-00000.h5",
            "train/train-00001.h5",
        ]
        assert all(s["kind"] == "shard" and s["valid"] and s["format_version"] == "1.2" for s in shards)
    python = h5ml.validate(index)
    assert (python.kind, python.valid, len(python.shards)) == ("index", True, 3)
    code, out, _ = run_cli("validate", str(index))
    assert (
        code == 0
        and f"{index} (the index itself): VALID" in out
        and "the sharded dataset is VALID" in out
        and "train-00001.h5: VALID" in out
    )


def test_a_missing_shard_is_e171_at_its_entry(tmp_path: Path) -> None:
    """SPEC §12.1-R4: a listed shard that is not there is E171 at its entry's pointer, naming its path."""
    index = _dataset(tmp_path / "ds")
    (tmp_path / "ds/train/train-00001.h5").unlink()
    code, report = _json_report(str(index))
    assert code == 1
    (entry,) = report["files"]
    assert _issues(entry) == {("E171", "/splits/train/shards/1")}
    assert "train/train-00001.h5" in entry["issues"][0]["message"]
    assert len(entry["shards"]) == 2 and entry["valid"] is False


def test_a_changed_shard_is_e172(tmp_path: Path) -> None:
    """SPEC §12.1-R6: a shard rewritten after the index (other samples, same features) is E172, not E173."""
    index = _dataset(tmp_path / "ds")
    _write_shard(tmp_path / "ds/train/train-00000.h5", "train", 100, 5)
    code, report = _json_report(str(index))
    assert code == 1
    (entry,) = report["files"]
    assert _issues(entry) == {("E172", "/splits/train/shards/0")}
    message = entry["issues"][0]["message"]
    assert "train/train-00000.h5" in message and "has fingerprint" in message


def test_the_reader_refuses_the_shard_the_validator_reports_changed(tmp_path: Path) -> None:
    """SPEC §12.5-R1: the shard that is E172 is refused by h5ml.open(INDEX) before its samples; the others read."""
    index = _dataset(tmp_path / "ds")
    _write_shard(tmp_path / "ds/train/train-00001.h5", "train", 100, 3)
    assert _issues(h5ml.validate(index)) == {("E172", "/splits/train/shards/1")}
    with h5ml.open(index) as ds:
        assert ds["train"]["x"][4].tolist() == [4.0, 4.0, 4.0]  # shard 0: samples 0-4
        with pytest.raises(ShardIndexError, match=r"train-00001\.h5") as refused:
            ds["train"]["x"][5]
        assert "has fingerprint" in str(refused.value)


def test_a_shard_of_another_dtype_disagrees_e173(tmp_path: Path) -> None:
    """SPEC §12.2-R1: a shard whose feature has another dtype than the index says is E173, naming the dtypes."""
    index = _dataset(tmp_path / "ds", {"train/train-00001.h5": {"dtype": "float64"}})
    code, report = _json_report(str(index))
    assert code == 1
    (entry,) = report["files"]
    assert _issues(entry) == {("E173", "/splits/train/shards/1")}
    message = entry["issues"][0]["message"]
    assert "feature 'x' differs in dtype" in message and "'<f8'" in message and "'<f4'" in message


def test_a_shard_with_another_card_disagrees_e173(tmp_path: Path) -> None:
    """SPEC §12.2-R2: a shard whose license differs from the index's metadata is E173, naming the attribute."""
    index = _dataset(tmp_path / "ds", {"test/test-00000.h5": {"license": "MIT"}})
    _edit_index(index, lambda d: d["metadata"].update(license="CC0-1.0"))
    code, report = _json_report(str(index))
    assert code == 1
    (entry,) = report["files"]
    assert _issues(entry) == {("E173", "/splits/test/shards/0")}
    assert "root attribute 'license' is 'MIT'" in entry["issues"][0]["message"]


def test_a_shard_entry_with_another_sample_count_disagrees_e173(tmp_path: Path) -> None:
    """SPEC §12.2-R1: the index says 6 samples (and a split of 9), the shard holds 5: E173, not E170."""
    index = _dataset(tmp_path / "ds")

    def edit(d: dict[str, Any]) -> None:
        d["splits"]["train"]["shards"][0]["num_samples"] = 6
        d["splits"]["train"]["num_samples"] = 9

    _edit_index(index, edit)
    code, report = _json_report(str(index))
    assert code == 1
    (entry,) = report["files"]
    assert _issues(entry) == {("E173", "/splits/train/shards/0")}
    assert "holds 5 samples, the index says 6" in entry["issues"][0]["message"]


def test_an_invalid_shard_is_e174_with_its_own_report(tmp_path: Path) -> None:
    """SPEC §12.1-R5: an incomplete shard is E174 in the index's report; its own report holds its E106."""
    index = _dataset(tmp_path / "ds")
    with h5py.File(tmp_path / "ds/train/train-00000.h5", "r+") as f:
        f.attrs["complete"] = np.int8(0)
    code, report = _json_report(str(index))
    assert code == 1
    (entry,) = report["files"]
    assert ("E174", "/splits/train/shards/0") in _issues(entry)
    assert "E106" in entry["issues"][0]["message"]
    own = [s for s in entry["shards"] if s["path"].endswith("train-00000.h5")]
    assert [i["code"] for i in own[0]["issues"] if i["severity"] == "error"] == ["E106"]


@pytest.mark.parametrize(
    ("edit", "words"),
    [
        (lambda d: d["splits"]["train"]["shards"][1].update(path="../train-00001.h5"), "/splits/train/shards/1/path"),
        (lambda d: d.update(fingerprint="sha256:" + "1" * 64), "/fingerprint is sha256:1111"),
        (lambda d: d["splits"]["test"].update(num_samples=5), "/splits/test/num_samples is 5"),
        (lambda d: d.update(format_version="1.1"), "sharded datasets are defined from 1.2 on"),
    ],
    ids=["parent-path", "fingerprint", "num-samples", "version-1.1"],
)
def test_an_index_that_fails_its_own_checks_is_e170_and_no_shard_is_opened(
    tmp_path: Path, edit: Any, words: str
) -> None:
    """SPEC §12.1-R2, §12.1-R3, §12.3-R1, §12.1-R1: E170 at '/', naming the member; the shards are not checked."""
    index = _dataset(tmp_path / "ds")
    shutil.copy(tmp_path / "ds/train/train-00001.h5", tmp_path / "train-00001.h5")  # what '../' would reach
    _edit_index(index, edit)
    code, report = _json_report(str(index))
    assert code == 1
    (entry,) = report["files"]
    assert _issues(entry) == {("E170", "/")}
    assert words in entry["issues"][0]["message"] and "shards were not checked" in entry["issues"][0]["message"]
    assert entry["shards"] == []


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ('{"pages": [1, 2]}', 'it has no "format" member'),
        ('{"format": "mkdocs-index", "docs": []}', 'it has "format": "mkdocs-index"'),
        ("[1, 2]", "it is a JSON array, not an object"),
    ],
    ids=["no-format", "another-format", "an-array"],
)
def test_json_that_is_no_index_says_so_first(tmp_path: Path, text: str, words: str) -> None:
    """SPEC §12.1: another project's index.json is E170 saying it is no h5ml index, not a schema dump."""
    (tmp_path / "docs").mkdir()
    index = tmp_path / "docs" / "index.json"
    index.write_text(text, encoding="utf-8")
    code, report = _json_report(str(index))
    (entry,) = report["files"]
    assert code == 1 and _issues(entry) == {("E170", "/")}
    message = entry["issues"][0]["message"]
    assert message.startswith(f"{index} is JSON but not an h5ml shard index: {words}, ")
    assert '"format": "h5ml-index"' in message and "--skip-other-json" in message


def test_a_shard_that_links_outside_the_folder_is_e170(tmp_path: Path) -> None:
    """SPEC §12.1-R2: a listed shard that is a symbolic link to a file outside the dataset's folder is not opened."""
    index = _dataset(tmp_path / "ds")
    outside = tmp_path / "elsewhere.h5"
    shutil.move(tmp_path / "ds/test/test-00000.h5", outside)
    os.symlink(outside, tmp_path / "ds/test/test-00000.h5")
    code, report = _json_report(str(index))
    assert code == 1
    (entry,) = report["files"]
    assert _issues(entry) == {("E170", "/splits/test/shards/0")}
    assert "outside the dataset's folder" in entry["issues"][0]["message"]
    assert len(entry["shards"]) == 2


def test_an_unlisted_file_in_a_split_folder_is_w210(tmp_path: Path) -> None:
    """SPEC §12.1-S1: an HDF5 file in a split's folder that no split lists is W210: valid, not in strict mode."""
    index = _dataset(tmp_path / "ds")
    shutil.copy(tmp_path / "ds/train/train-00001.h5", tmp_path / "ds/train/train-00002.h5")
    (tmp_path / "ds/train/notes.txt").write_text("not a shard", encoding="utf-8")
    code, report = _json_report(str(index))
    assert code == 0
    (entry,) = report["files"]
    assert _issues(entry) == {("W210", "/splits/train")}
    assert "train/train-00002.h5" in entry["issues"][0]["message"]
    assert run_cli("validate", "--strict", "-q", str(index))[0] == 1


def test_jobs_2_gives_the_report_of_jobs_1(tmp_path: Path) -> None:
    """SPEC §12.1-R7: shards validated two at a time give the same report, in index order."""
    index = _dataset(tmp_path / "ds", {"train/train-00001.h5": {"dtype": "float64"}})
    (tmp_path / "ds/test/test-00000.h5").unlink()
    one = _json_report("--jobs", "1", str(index))
    two = _json_report("--jobs", "2", str(index))
    assert one == two
    assert _issues(one[1]["files"][0]) == {("E171", "/splits/test/shards/0"), ("E173", "/splits/train/shards/1")}


def test_shallow_shards_reads_no_data(tmp_path: Path) -> None:
    """SPEC §12.1-R7: --shallow-shards reads the shards' metadata only: a flipped chunk byte passes it, not --deep."""
    index = _dataset(tmp_path / "ds")
    shard = tmp_path / "ds/train/train-00000.h5"
    with h5py.File(shard, "r") as f:
        info = f["train/x"].id.get_chunk_info(0)
    with open(shard, "r+b") as handle:
        handle.seek(info.byte_offset)
        byte = handle.read(1)
        handle.seek(info.byte_offset)
        handle.write(bytes([byte[0] ^ 0xFF]))
    code, report = _json_report("--deep", str(index))
    assert code == 1
    (entry,) = report["files"]
    assert _issues(entry) == {("E174", "/splits/train/shards/0")}
    own = next(s for s in entry["shards"] if s["path"] == str(shard))
    assert {i["code"] for i in own["issues"]} & {"E145", "E160", "E162"}
    code, report = _json_report("--deep", "--shallow-shards", str(index))
    assert code == 0
    assert report["files"][0]["issues"] == [] and report["files"][0]["shards"] == []


def test_index_errors_speak_the_interface_used(tmp_path: Path) -> None:
    """SPEC §12.1-R1: a missing index is unreadable (exit 2); text that is not JSON is E170; no traceback."""
    code, report = _json_report(str(tmp_path / "absent.json"))
    assert code == 2 and _issues(report["files"][0]) == {("E100", "/")}
    (tmp_path / "bad.json").write_text("{not json", encoding="utf-8")
    code, report = _json_report(str(tmp_path / "bad.json"))
    assert code == 1 and _issues(report["files"][0]) == {("E170", "/")}
    code, _, err = run_cli("validate", "--shallow-shards", str(tmp_path / "f.h5"))
    assert code == 2 and "--shallow-shards applies to the index" in err and "Traceback" not in err
    h5ml.write(tmp_path / "f.h5", {"train": {"x": np.arange(4)}}, metadata=_META)
    with pytest.raises(ValueError, match="shallow_shards=True"):
        h5ml.validate(tmp_path / "f.h5", shallow_shards=True)


def test_write_index_is_atomic_and_refuses_a_wrong_index(tmp_path: Path) -> None:
    """SPEC §12.4-R1: a wrong index is refused before anything is written; the index in place and no temporary stay."""
    index_file = _dataset(tmp_path / "ds")
    before = index_file.read_bytes()
    index, _ = load_index(index_file)
    wrong = index.model_copy(update={"fingerprint": "sha256:" + "2" * 64})
    with pytest.raises(ShardIndexError, match="fingerprint"):
        write_index(wrong, tmp_path / "ds")
    assert index_file.read_bytes() == before
    assert sorted(p.name for p in (tmp_path / "ds").iterdir()) == ["index.json", "test", "train"]


def test_files_and_indexes_in_one_call_keep_their_order(tmp_path: Path) -> None:
    """SPEC §12.1-R7, §9.3: files and an index in one call: one report entry each, in the order given."""
    index = _dataset(tmp_path / "ds")
    h5ml.write(tmp_path / "a.h5", {"train": {"x": np.arange(4)}}, metadata=_META)
    (tmp_path / "empty").mkdir()  # a folder without index.json is no index: a file that cannot be opened
    code, report = _json_report("--jobs", "2", str(tmp_path / "a.h5"), str(index), str(tmp_path / "empty"))
    assert code == 2
    kinds = [(Path(f["path"]).name, f.get("kind", "file"), f["readable"]) for f in report["files"]]
    assert kinds == [("a.h5", "file", True), ("index.json", "index", True), ("empty", "file", False)]
    assert report["summary"]["files"] == 3


def test_validating_a_file_does_not_import_the_index_module(tmp_path: Path) -> None:
    """SPEC §12.1: only a .json path or a folder can be an index; a file's validation never imports its module."""
    import subprocess
    import sys

    path = h5ml.write(tmp_path / "a.h5", {"train": {"x": np.arange(4)}}, metadata=_META)
    code = (
        "import sys; from h5ml.validator.runner import validate; "
        f"assert validate({str(path)!r}).valid; print('h5ml.model.shard_index' in sys.modules)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "False"


def test_one_file_listed_twice_through_a_link_is_e170(tmp_path: Path) -> None:
    """SPEC §12.1-R3: two entries that reach one file (a symbolic link in the folder) are E170, never read twice."""
    index = _dataset(tmp_path / "ds")
    link = tmp_path / "ds/train/train-00001.h5"
    link.unlink()
    os.symlink("train-00000.h5", link)
    code, report = _json_report(str(index))
    assert code == 1
    (entry,) = report["files"]
    assert ("E170", "/splits/train/shards/1") in _issues(entry)
    assert "/splits/train/shards/0 lists too" in next(i["message"] for i in entry["issues"] if i["code"] == "E170")


def test_a_duplicate_member_name_is_e170_on_the_command_line(tmp_path: Path) -> None:
    """SPEC §12.1-R8: h5ml validate reports an index with a duplicate member name as E170, naming its pointer."""
    index = _dataset(tmp_path / "ds")
    text = index.read_text(encoding="utf-8")
    assert text.count('"format": "h5ml-index",') == 1
    index.write_text(
        text.replace('"format": "h5ml-index",', '"format": "h5ml-index", "format": "h5ml-index",'), "utf-8"
    )
    code, report = _json_report(str(index))
    assert code == 1 and _issues(report["files"][0]) == {("E170", "/")}
    assert "has the member 'format' twice (JSON pointer /format)" in report["files"][0]["issues"][0]["message"]
    code, out, err = run_cli("validate", str(index))
    assert code == 1 and "E170" in out and "Traceback" not in out + err
