"""Security considerations (SPEC §10.1, §10.2) on real files: content is data, and external data is refused
wherever it hides, before any sample is read."""

from __future__ import annotations

import base64
import io
import json
import pickle
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import pytest

import h5ml
from _files import Bytes, Dense, String, write_file
from h5ml.errors import ForbiddenStorageError
from h5ml.tools import cli
from h5ml.validator.runner import validate

SUITE = Path(__file__).resolve().parent.parent / "conformance_tests"


class _TouchOnUnpickle:
    """An object whose unpickling creates the file ``marker``: proof that someone unpickled it."""

    def __init__(self, marker: str) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, tuple[str, str]]:
        return (open, (self.marker, "w"))


def _dump(path: Path) -> tuple[int, dict[str, Any], str]:
    out, err = io.StringIO(), io.StringIO()
    code = cli.run(["dump", "--format", "json", str(path)], out, err)
    return code, json.loads(out.getvalue()), err.getvalue()


def test_content_is_data_fixture_decodes_as_stored(capsys: pytest.CaptureFixture[str]) -> None:
    """SPEC §10.2-R1: the pickle stream of valid-content-is-data comes back as its bytes and the YAML and
    Python strings as their text; nothing is printed (the stream's print never ran); dump gives the expected
    document."""
    fixture = SUITE / "fixtures" / "valid-content-is-data.h5"
    expected = json.loads((SUITE / "expected" / "valid-content-is-data.json").read_text(encoding="utf-8"))
    with h5ml.open(fixture) as ds:
        blob = ds["train"]["blob"][0]
        texts = list(ds["train"]["text"][:])
    assert blob == b"cbuiltins\nprint\n(S'h5ml: a reader unpickled this sample'\ntR."
    assert texts == expected["splits"]["train"]["features"]["text"]["values"]
    assert texts[0].startswith("!!python/object/apply:")
    code, document, err = _dump(fixture)
    assert (code, err) == (0, "")
    assert document == expected
    assert base64.b64decode(document["splits"]["train"]["features"]["blob"]["values"][0]) == blob
    assert "a reader" not in capsys.readouterr().out


def test_a_pickle_sample_is_never_unpickled(tmp_path: Path) -> None:
    """SPEC §10.2-R1: a bytes sample holding a pickle whose loading would create a file is returned as those
    bytes by the reader, dumped as them, and validated deep, and the file is never created."""
    marker = tmp_path / "unpickled"
    stream = pickle.dumps(_TouchOnUnpickle(str(marker)), protocol=2)
    path = write_file(
        tmp_path / "p.h5",
        {"train": {"blob": Bytes([stream, b""]), "text": String([repr(stream), "x"]), "x": Dense(np.arange(2))}},
    )
    with h5ml.open(path) as ds:
        assert ds["train"]["blob"][0] == stream
        assert ds["train"]["blob"][:] == [stream, b""]
    code, document, _ = _dump(path)
    assert code == 0
    assert base64.b64decode(document["splits"]["train"]["features"]["blob"]["values"][0]) == stream
    assert [c for c in validate(path, deep=True).codes if c.startswith("E")] == []
    assert not marker.exists()


def _external_link_deep_inside(f: h5py.File) -> None:
    f.create_group("_extra/a/b")
    f["_extra/a/b/leak"] = h5py.ExternalLink("secret.h5", "/key")


def _external_storage_in_an_unknown_group(f: h5py.File) -> None:
    f.create_group("_extra/raw").create_dataset("data", shape=(4,), dtype="<i8", external=[("secret.bin", 0, 32)])


@pytest.mark.parametrize(
    ("extra", "where"),
    [(_external_link_deep_inside, "/_extra/a/b/leak"), (_external_storage_in_an_unknown_group, "/_extra/raw/data")],
    ids=["external-link-in-a-nested-unknown-group", "external-storage-in-an-unknown-group"],
)
def test_external_data_anywhere_is_refused_at_open(tmp_path: Path, extra: Any, where: str) -> None:
    """SPEC §10.1-R2: the reader examines every link of every group and every dataset's layout at open, not
    only the splits and features asked for: external data in an object no split reaches is refused before any
    sample is read (SPEC §10.1-R1), and the command line refuses it too (exit 2, no traceback)."""
    (tmp_path / "secret.bin").write_bytes(np.arange(4, dtype="<i8").tobytes())
    with h5py.File(tmp_path / "secret.h5", "w") as f:
        f["key"] = np.arange(4)
    path = write_file(tmp_path / "f.h5", {"train": {"x": Dense(np.arange(4))}}, extra=extra)
    with pytest.raises(ForbiddenStorageError) as err:
        h5ml.open(path)
    assert where in str(err.value) and "allow_external=True" in str(err.value)
    out, errs = io.StringIO(), io.StringIO()
    code = cli.run(["dump", "--format", "json", str(path)], out, errs)
    assert code == 2 and out.getvalue() == "" and where in errs.getvalue() and "Traceback" not in errs.getvalue()
