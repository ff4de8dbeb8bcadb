"""Requirements of SPEC §4-§6 that no other test names by id: what the reference writer stores (§4.3, §4.4,
§6.7) and how the reader treats encoding versions and real-number attributes (§6.1, §6.7)."""

from __future__ import annotations

from pathlib import Path

import h5py
import numpy as np
import pytest

import h5ml
from h5ml.errors import EncodingError
from h5ml.writer.existing import load_existing


def _written(path: Path) -> Path:
    h5ml.write(
        path,
        {"train": {"x": np.arange(12, dtype=np.float32).reshape(4, 3), "y": np.array([1, 2, 3, 4], dtype=np.int16)}},
        {"name": "typed", "description": "attribute types", "license": "CC0-1.0"},
    )
    return path


def test_writer_stores_strings_integers_and_reals_in_the_types_of_4_3(tmp_path: Path) -> None:
    """SPEC §4.3-R1 and SPEC §6.7-R3: single strings are scalar variable-length UTF-8, single integers scalar
    int64, single real numbers (the statistics) scalar float64, in the file h5ml.write produces."""
    path = _written(tmp_path / "typed.h5")
    with h5py.File(path, "r") as f:
        for obj, name in [(f, "name"), (f, "description"), (f, "created"), (f, "writer"), (f["train/x"], "encoding")]:
            aid = obj.attrs.get_id(name)
            info = h5py.check_string_dtype(aid.dtype)
            assert aid.shape == () and info is not None and info.length is None and info.encoding == "utf-8", name
        for obj, name in [(f, "complete"), (f["train"], "num_samples"), (f["train/x"], "stats_count")]:
            aid = obj.attrs.get_id(name)
            assert aid.shape == () and aid.dtype == np.dtype("int64"), name
        assert int(f.attrs["complete"]) == 1 and int(f["train"].attrs["num_samples"]) == 4
        for stat in ("stats_min", "stats_max", "stats_mean", "stats_std"):
            aid = f["train/x"].attrs.get_id(stat)
            assert aid.shape == () and aid.dtype == np.dtype("float64"), stat
        assert float(f["train/x"].attrs["stats_max"]) == 11.0 and float(f["train/y"].attrs["stats_min"]) == 1.0


def test_append_mode_removes_the_marker_before_its_first_change(tmp_path: Path) -> None:
    """SPEC §4.4-R3: a writer that modifies a file in place deletes complete (and flushes) before any other
    change, so a copy being extended is incomplete until it is finished again."""
    path = _written(tmp_path / "a.h5")
    with h5py.File(path, "r+") as f:
        load_existing(f, {"description": "changed"}, "typed", str(path))
        assert "complete" not in f.attrs and "fingerprint" not in f.attrs
        assert f.attrs["description"] == "changed"
    with pytest.raises(h5ml.errors.IncompleteFileError, match="did not finish"):
        h5ml.open(path)


def _with_encoding_version(tmp_path: Path, version: str) -> Path:
    path = _written(tmp_path / f"v{version}.h5")
    with h5py.File(path, "r+") as f:
        f["train/x"].attrs["encoding_version"] = version
        f["train/x"].attrs["window"] = "hann"  # an attribute encoding 1.0 does not define
    return path


def test_higher_encoding_minor_is_read_ignoring_what_it_adds(tmp_path: Path) -> None:
    """SPEC §6.1-R6: a feature of encoding_version 1.4 is read by the rules of 1.0, its unknown attribute
    ignored; the conformance fixture valid-encoding-newer-minor (an unknown member too) decodes as well."""
    path = _with_encoding_version(tmp_path, "1.4")
    with h5ml.open(path) as ds:
        x = ds["train"]["x"]
        assert x.encoding_version == "1.4"
        np.testing.assert_array_equal(x[:], np.arange(12, dtype=np.float32).reshape(4, 3))
    fixture = Path(__file__).parent.parent / "conformance_tests" / "fixtures" / "valid-encoding-newer-minor.h5"
    with h5ml.open(fixture) as ds:
        clip = ds["train"]["clip"]
        assert [s.tolist() for s in clip[:]] == [[1, 2], [], [3]]


def test_other_encoding_major_is_refused_naming_both_versions(tmp_path: Path) -> None:
    """SPEC §6.1-R7: a feature of encoding_version 2.0 is refused when asked for, and the message names both
    the feature's version and the one this reader implements; the other features stay readable."""
    path = _with_encoding_version(tmp_path, "2.0")
    with h5ml.open(path) as ds:
        with pytest.raises(EncodingError, match=r"/train/x is dense encoding 2\.0; .* implements dense 1\.0"):
            ds["train"].feature("x")
        np.testing.assert_array_equal(ds["train"]["y"][:], [1, 2, 3, 4])


@pytest.mark.parametrize(
    ("stored", "expected"),
    [(np.float32(22050.5), 22050.5), (np.dtype(">f4").type(0.1), float(np.float32(0.1))), (np.int64(16000), 16000.0)],
)
def test_sample_rate_is_returned_as_binary64(tmp_path: Path, stored: np.generic, expected: float) -> None:
    """SPEC §6.7-R4: a real number stored as binary32 (either byte order) or as an integer comes back as a
    binary64 float, binary32 widened exactly."""
    path = _written(tmp_path / "rate.h5")
    with h5py.File(path, "r+") as f:
        f["train/x"].attrs["sample_rate"] = stored
    with h5ml.open(path) as ds:
        rate = ds["train"]["x"].sample_rate
        assert type(rate) is float and rate == expected
